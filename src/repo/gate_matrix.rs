//! `agent/manifests/gate-matrix.yml`: verification gates and the changes that require them.

use super::manifest::{PathGlob, Problem, Problems};
use super::yaml::{Node, Pos, Value};

pub const GATE_MATRIX_PATH: &str = "agent/manifests/gate-matrix.yml";

#[derive(Debug, Clone)]
pub struct Gate {
    pub name: String,
    pub pos: Pos,
    pub run: String,
    /// `run` split into program and arguments (never passed to a shell).
    pub argv: Vec<String>,
    pub evidence: Option<String>,
}

#[derive(Debug, Clone)]
pub struct GateRule {
    pub pos: Pos,
    pub paths: Vec<PathGlob>,
    /// Gate names with where each is written.
    pub require: Vec<(String, Pos)>,
}

#[derive(Debug, Clone, Default)]
pub struct GateMatrix {
    pub gates: Vec<Gate>,
    pub rules: Vec<GateRule>,
}

impl GateMatrix {
    pub fn gate(&self, name: &str) -> Option<&Gate> {
        self.gates.iter().find(|g| g.name == name)
    }

    pub fn parse(text: &str) -> Result<GateMatrix, Vec<Problem>> {
        super::manifest::parse_with(GATE_MATRIX_PATH, text, validate)
    }
}

const TOP_KEYS: &[&str] = &["version", "gates", "rules"];
const GATE_KEYS: &[&str] = &["run", "evidence"];
const RULE_KEYS: &[&str] = &["when", "require"];
const WHEN_KEYS: &[&str] = &["paths"];

fn validate(root: &Node, p: &mut Problems) -> GateMatrix {
    let mut m = GateMatrix::default();
    if matches!(root.value, Value::Null) {
        p.push(
            root.pos,
            "the gate matrix is empty",
            "empty file",
            "start with `version: 1`, `gates:` and `rules:`",
        );
        return m;
    }
    let fields = p.fields(root, "the gate matrix", TOP_KEYS);
    let get = |k: &str| fields.iter().find(|(n, _, _)| *n == k).map(|(_, _, v)| *v);
    p.version(get("version"), root);
    if let Some(node) = get("gates") {
        for (k, v) in p.map(node, "`gates`") {
            let Some(name) = k.as_str() else {
                p.push(k.pos, "gate names must be strings", "not a string", "");
                continue;
            };
            if let Some(first) = m.gates.iter().find(|g| g.name == name) {
                p.push(
                    k.pos,
                    format!("duplicate gate `{name}`"),
                    "duplicate gate",
                    format!("gate `{name}` is first defined on line {}", first.pos.line),
                );
                continue;
            }
            let gf = p.fields(v, &format!("gate `{name}`"), GATE_KEYS);
            let gget = |k: &str| gf.iter().find(|(n, _, _)| *n == k).map(|(_, _, v)| *v);
            let Some(run_node) = gget("run") else {
                p.push(
                    k.pos,
                    format!("gate `{name}` has no `run`"),
                    "no command",
                    "add `run: \"cargo test -p {package}\"`",
                );
                continue;
            };
            let Some(run) = p.string(run_node, &format!("`gates.{name}.run`")) else {
                continue;
            };
            let argv = match split_argv(&run) {
                Ok(a) if !a.is_empty() => a,
                Ok(_) => {
                    p.push(
                        run_node.pos,
                        format!("gate `{name}` has an empty command"),
                        "empty command",
                        "write the command to run, e.g. `cargo check -p {package}`",
                    );
                    continue;
                }
                Err(e) => {
                    p.push(run_node.pos, format!("gate `{name}`: {e}"), "cannot split into arguments",
                        "commands run without a shell: quote arguments with \"…\" or '…' and close every quote");
                    continue;
                }
            };
            let evidence =
                gget("evidence").and_then(|n| p.string(n, &format!("`gates.{name}.evidence`")));
            m.gates.push(Gate {
                name: name.to_owned(),
                pos: k.pos,
                run,
                argv,
                evidence,
            });
        }
    }
    if let Some(node) = get("rules") {
        match &node.value {
            Value::Seq(items) => {
                for item in items {
                    let rf = p.fields(item, "a gate rule", RULE_KEYS);
                    let rget = |k: &str| rf.iter().find(|(n, _, _)| *n == k).map(|(_, _, v)| *v);
                    let paths = match rget("when") {
                        Some(w) => {
                            let wf = p.fields(w, "`when`", WHEN_KEYS);
                            match wf.first() {
                                Some((_, _, v)) => p.globs(v, "`when.paths`"),
                                None => {
                                    p.push(
                                        w.pos,
                                        "`when` needs `paths`",
                                        "no paths",
                                        "write `when: {paths: [\"workers/**\"]}`",
                                    );
                                    Vec::new()
                                }
                            }
                        }
                        None => {
                            p.push(
                                item.pos,
                                "a gate rule needs `when`",
                                "no condition",
                                "write `when: {paths: [\"workers/**\"]}`",
                            );
                            Vec::new()
                        }
                    };
                    let require = match rget("require") {
                        Some(r) => p.strings(r, "`require`"),
                        None => {
                            p.push(
                                item.pos,
                                "a gate rule needs `require`",
                                "no gates",
                                "write `require: [worker-build]`",
                            );
                            Vec::new()
                        }
                    };
                    m.rules.push(GateRule {
                        pos: item.pos,
                        paths,
                        require,
                    });
                }
            }
            Value::Null => {}
            other => p.push(
                node.pos,
                format!("`rules` must be a list, found {}", other.type_name()),
                "expected a list",
                "",
            ),
        }
    }
    m
}

/// Splits a command line into arguments as a POSIX shell would for words and quotes
/// (`shlex`: inside double quotes a backslash escapes only `$`, `` ` ``, `"`, `\\` and a
/// newline, so `"a\\b"` stays `a\\b`), without expansions of any kind.
pub fn split_argv(s: &str) -> Result<Vec<String>, String> {
    shlex::split(s).ok_or_else(|| "an unclosed quote or a trailing backslash".to_owned())
}

/// `argv` as one line a POSIX shell would split back into the same words (for listings).
pub fn join_argv(argv: &[String]) -> String {
    shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_without_a_shell() {
        assert_eq!(
            split_argv("cargo check -p {package}").expect("ok"),
            ["cargo", "check", "-p", "{package}"]
        );
        assert_eq!(
            split_argv(r#"a "b c" 'd e' f\ g"#).expect("ok"),
            ["a", "b c", "d e", "f g"]
        );
        assert!(split_argv("a 'b").is_err());
        // POSIX: a backslash in double quotes before an ordinary character stays.
        assert_eq!(split_argv(r#""a\b""#).expect("ok"), [r"a\b"]);
        let argv = split_argv(r#"sh-free "two words" 'it''s'"#).expect("ok");
        assert_eq!(split_argv(&join_argv(&argv)).expect("ok"), argv);
        assert!(split_argv("   ").expect("ok").is_empty());
    }
}
