//! `scripts/dev.sh`, the local launch script: which worker processes it starts, and what each
//! is told about its lane. A command with the word `serve` runs a worker; it is told
//! `--lane <l>` (or `--lane=<l>`) after it, and the upper-case `…_LANE=<l>` variables set on
//! the command or exported earlier in the script ([`super::lane`] says which a worker reads).

/// Where it lives.
pub const PATH: &str = "scripts/dev.sh";

/// A worker process `scripts/dev.sh` starts: a command with the word `serve`.
#[derive(Debug)]
pub struct DevProcess {
    /// The command's words, quotes removed.
    pub words: Vec<String>,
    /// Its `--lane`, and the lane variables exported before it and set on it (which win).
    pub lane: super::lane::LaneSettings,
}

/// The worker processes dev.sh starts, in order, each with the lane settings it runs with.
pub fn dev_sh_processes(text: &str) -> Vec<DevProcess> {
    let mut processes = Vec::new();
    // The lane variables exported so far (`export ACME_WORKER_LANE=fast`).
    let mut exported = super::lane::LaneSettings::default();
    for cmd in shell_commands(text) {
        let words: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let skip = usize::from(words.first() == Some(&"export"));
        let leading = words[skip..]
            .iter()
            .take_while(|w| is_assignment(w))
            .count();
        if leading + skip == words.len() {
            // Only assignments: later commands inherit them.
            for (k, v) in words[skip..].iter().filter_map(|a| lane_var_assignment(a)) {
                exported.set(&k, v);
            }
            continue;
        }
        if let Some(flag) = serve_lane(&words) {
            let mut lane = exported.clone();
            lane.flag = flag;
            // Assignments anywhere on the command (`env X_LANE=l cargo …` too) win.
            for (k, v) in words.iter().filter_map(|w| lane_var_assignment(w)) {
                lane.set(&k, v);
            }
            processes.push(DevProcess { words: cmd, lane });
        }
    }
    processes
}

/// `X_WORKER_LANE=v` (or any `…_LANE=v`, such as a worker's own `ACME_BILLING_LANE`) →
/// (`X_WORKER_LANE`, v).
pub fn lane_var_assignment(w: &str) -> Option<(String, String)> {
    let (k, v) = w.split_once('=')?;
    is_lane_var(k).then(|| (k.to_owned(), v.to_owned()))
}

/// Whether a dev.sh command runs the package `package`: through cargo
/// (`-p`/`--package`/`--bin`, as `-p x`, `-px`, `--package=x`; or `--manifest-path` to
/// its Cargo.toml), or as the built binary itself (`x`, `./target/release/x`).
pub fn runs_package(words: &[String], package: &str, manifest: &str) -> bool {
    let is_manifest = |w: &str| w.strip_prefix("./").unwrap_or(w) == manifest;
    let flagged = words
        .iter()
        .zip(words.iter().skip(1))
        .any(|(flag, value)| match flag.as_str() {
            "-p" | "--package" | "--bin" => value == package,
            "--manifest-path" => is_manifest(value),
            _ => false,
        });
    let joined = words.iter().any(|w| {
        ["-p", "--package=", "--bin="]
            .iter()
            .any(|flag| w.strip_prefix(flag) == Some(package))
            || w.strip_prefix("--manifest-path=").is_some_and(is_manifest)
    });
    // The program: the first word that is not an assignment or a wrapper.
    let program = words
        .iter()
        .find(|w| !matches!(w.as_str(), "exec" | "env" | "nohup") && !is_assignment(w));
    let binary = program.is_some_and(|p| p.rsplit('/').next() == Some(package));
    flagged || joined || binary
}

pub(crate) fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
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
        .map(|p| p.lane.lane())
        .collect();
        let want = [None, Some("fast"), Some("bulk"), Some("x"), Some("slow")];
        assert_eq!(lanes, want.map(|l| l.map(str::to_owned)));
    }

    #[test]
    fn a_worker_reads_only_its_own_lane_variable() {
        let procs = dev_sh_processes(
            "export ACME_WORKER_LANE=default\n\
             cargo run -p acme-maintenance -- serve &\n\
             cargo run -p acme-billing -- serve &\n\
             ACME_BILLING_LANE=bulk cargo run -p acme-billing -- serve &\n\
             ACME_OUTBOX_RELAY_LANE=x cargo run -p acme-outbox-relay -- serve --lane y &\n",
        );
        let got: Vec<Option<String>> = procs
            .iter()
            .zip(["maintenance", "billing", "billing", "outbox-relay"])
            .map(|(p, w)| p.lane.lane_of(w))
            .collect();
        let want = [Some("default"), None, Some("bulk"), Some("y")];
        assert_eq!(got, want.map(|l| l.map(str::to_owned)));
        // Read for no worker in particular, the export reaches every process.
        assert_eq!(procs[1].lane.lane().as_deref(), Some("default"));
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
