//! `scripts/dev.sh`, the local launch script: which worker processes it starts, and the lane
//! each serves. A command with the word `serve` runs a worker; its lane is `--lane <l>` (or
//! `--lane=<l>`) after it, else a `<NAME>_WORKER_LANE=<l>` assignment (or any upper-case
//! `…_LANE`, such as a worker's own `<NAME>_<WORKER>_LANE`) on the command or exported
//! earlier in the script, else the default lane.

/// Where it lives.
pub const PATH: &str = "scripts/dev.sh";

/// A worker process `scripts/dev.sh` starts: a command with the word `serve`.
#[derive(Debug)]
pub struct DevProcess {
    /// The command's words, quotes removed.
    pub words: Vec<String>,
    /// Its lane: `--lane L` after `serve`, else a `…_LANE=L` assignment on the command,
    /// else the last one the script exported before it; `None` when there is none.
    pub lane: Option<String>,
}

/// The worker processes dev.sh starts, in order, each with the lane it serves.
pub fn dev_sh_processes(text: &str) -> Vec<DevProcess> {
    let mut processes = Vec::new();
    let mut exported: Option<String> = None;
    for cmd in shell_commands(text) {
        let words: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let skip = usize::from(words.first() == Some(&"export"));
        let assignments: Vec<&str> = words[skip..]
            .iter()
            .take_while(|w| is_assignment(w))
            .copied()
            .collect();
        if assignments.len() + skip == words.len() {
            // Only assignments (`export ACME_WORKER_LANE=fast`): later commands inherit them.
            if let Some(l) = assignments.iter().find_map(|a| lane_assignment(a)) {
                exported = Some(l);
            }
            continue;
        }
        if let Some(lane) = serve_lane(&words) {
            let lane = lane
                .or_else(|| words.iter().find_map(|a| lane_assignment(a)))
                .or_else(|| exported.clone());
            processes.push(DevProcess { words: cmd, lane });
        }
    }
    processes
}

pub(crate) fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `X_WORKER_LANE=v` (or any `…_LANE=v`, such as a worker's own `ACME_MAINTENANCE_LANE`)
/// → v.
pub fn lane_assignment(w: &str) -> Option<String> {
    let (k, v) = w.split_once('=')?;
    is_lane_var(k).then(|| v.to_owned())
}

/// `<NAME>_WORKER_LANE`, or a worker's own `<NAME>_<WORKER>_LANE` setting.
pub fn is_lane_var(k: &str) -> bool {
    k.ends_with("_LANE")
        && k.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `Some(lane)` when the words run `serve`: the `--lane` given after it, if any.
pub fn serve_lane(words: &[&str]) -> Option<Option<String>> {
    let at = words.iter().position(|w| *w == "serve")?;
    let rest = &words[at + 1..];
    for (i, w) in rest.iter().enumerate() {
        if *w == "--lane" {
            return Some(Some(
                rest.get(i + 1).map_or(String::new(), |s| (*s).to_owned()),
            ));
        }
        if let Some(v) = w.strip_prefix("--lane=") {
            return Some(Some(v.to_owned()));
        }
    }
    Some(None)
}

/// Splits a shell script into simple commands (words, quotes removed), joining
/// continuation lines and dropping comments. Good enough for launch scripts; not a shell.
pub fn shell_commands(text: &str) -> Vec<Vec<String>> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let mut cmd: Vec<String> = Vec::new();
        let mut word = String::new();
        let mut in_word = false;
        let mut chars = line.chars().peekable();
        let flush = |cmd: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
            if *in_word {
                cmd.push(std::mem::take(word));
                *in_word = false;
            }
        };
        while let Some(c) = chars.next() {
            match c {
                '#' if !in_word => break,
                '\'' => {
                    in_word = true;
                    for d in chars.by_ref() {
                        if d == '\'' {
                            break;
                        }
                        word.push(d);
                    }
                }
                '"' => {
                    in_word = true;
                    while let Some(d) = chars.next() {
                        match d {
                            '"' => break,
                            '\\' => word.extend(chars.next()),
                            _ => word.push(d),
                        }
                    }
                }
                ';' | '&' | '|' | '(' | ')' => {
                    flush(&mut cmd, &mut word, &mut in_word);
                    if !cmd.is_empty() {
                        out.push(std::mem::take(&mut cmd));
                    }
                }
                c if c.is_whitespace() => flush(&mut cmd, &mut word, &mut in_word),
                c => {
                    in_word = true;
                    word.push(c);
                }
            }
        }
        flush(&mut cmd, &mut word, &mut in_word);
        if !cmd.is_empty() {
            out.push(cmd);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_serves_its_own_lane_else_the_one_exported_before_it() {
        let lanes: Vec<Option<String>> = dev_sh_processes(
            "cargo run -p a -- serve &\nexport ACME_WORKER_LANE=fast\n\
             cargo run -p b -- serve &\nACME_WORKER_LANE=bulk cargo run -p c -- serve &\n\
             export ACME_WORKER_LANE=slow\ncargo run -p d -- serve --lane=x &\n\
             cargo run -p e -- serve &\ncargo run -p f -- health\n",
        )
        .into_iter()
        .map(|p| p.lane)
        .collect();
        let want = [None, Some("fast"), Some("bulk"), Some("x"), Some("slow")];
        assert_eq!(lanes, want.map(|l| l.map(str::to_owned)));
    }

    #[test]
    fn shell_commands_split_words_quotes_and_separators() {
        let cmds = shell_commands(
            "# dev\nexport ACME_WORKER_LANE=default\ncargo run -p m -- serve --lane 'fast' & # bg\n\
             ACME_WORKER_LANE=bulk \\\n  cargo run -- serve; echo \"a # b\"\n",
        );
        assert_eq!(cmds[0], ["export", "ACME_WORKER_LANE=default"]);
        assert_eq!(
            cmds[1],
            ["cargo", "run", "-p", "m", "--", "serve", "--lane", "fast"]
        );
        assert_eq!(
            cmds[2],
            ["ACME_WORKER_LANE=bulk", "cargo", "run", "--", "serve"]
        );
        assert_eq!(cmds[3], ["echo", "a # b"]);
    }
}
