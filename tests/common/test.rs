//! One run of the binary with its expectations stated up front, after just's
//! `tests/test.rs`:
//!
//! ```ignore
//! Test::in_dir(&repo)
//!     .args(["worker", "maintenance", "bad-kind"])
//!     .status(1)
//!     .stderr_has("SCREAMING_SNAKE")
//!     .tree_unchanged()
//!     .run();
//! ```

use std::path::{Path, PathBuf};

use super::{Run, assert_same, scaffold, tree};

#[must_use = "a Test does nothing until .run()"]
pub struct Test {
    dir: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    env_removed: Vec<String>,
    /// `None`: any exit code (the caller judges it).
    status: Option<i32>,
    stdout: Option<String>,
    stdout_has: Vec<String>,
    stderr_has: Vec<String>,
    never: Vec<String>,
    tree_unchanged: bool,
    but_cache: bool,
    timeout: Option<std::time::Duration>,
}

impl Test {
    /// `scaffold -C <dir> …`, expected to exit 0 unless [`Test::status`] says otherwise.
    pub fn in_dir(dir: &Path) -> Test {
        Test {
            dir: dir.to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
            env_removed: Vec::new(),
            status: Some(0),
            stdout: None,
            stdout_has: Vec::new(),
            stderr_has: Vec::new(),
            never: Vec::new(),
            tree_unchanged: false,
            but_cache: false,
            timeout: None,
        }
    }

    pub fn args<I, S>(mut self, args: I) -> Test
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Test {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Runs without `key` in the environment.
    pub fn env_remove(mut self, key: &str) -> Test {
        self.env_removed.push(key.to_owned());
        self
    }

    /// The exit code expected.
    pub fn status(mut self, code: i32) -> Test {
        self.status = Some(code);
        self
    }

    /// Any exit code: the caller judges the returned [`Run`] (a check whose findings
    /// decide it, a run a kill may have stopped).
    pub fn any_status(mut self) -> Test {
        self.status = None;
        self
    }

    /// The whole of stdout.
    pub fn stdout(mut self, exact: &str) -> Test {
        self.stdout = Some(exact.to_owned());
        self
    }

    pub fn stdout_has(mut self, part: &str) -> Test {
        self.stdout_has.push(part.to_owned());
        self
    }

    pub fn stderr_has(mut self, part: &str) -> Test {
        self.stderr_has.push(part.to_owned());
        self
    }

    /// Neither stdout nor stderr holds `part` (a secret, a raw control character).
    pub fn never_prints(mut self, part: &str) -> Test {
        self.never.push(part.to_owned());
        self
    }

    /// No file or directory under the test's directory is added, removed or changed.
    pub fn tree_unchanged(mut self) -> Test {
        self.tree_unchanged = true;
        self
    }

    /// Fails the test (instead of hanging it) when the run takes longer: for what could
    /// block (a FIFO where a file is expected).
    pub fn timeout(mut self, limit: std::time::Duration) -> Test {
        self.timeout = Some(limit);
        self
    }

    /// As [`Test::tree_unchanged`], but for the checker's own cache under `.scaffold/`,
    /// which `check` may write.
    pub fn tree_unchanged_but_cache(mut self) -> Test {
        self.tree_unchanged = true;
        self.but_cache = true;
        self
    }

    /// Runs it, asserts every expectation, and returns what it printed.
    #[track_caller]
    pub fn run(self) -> Run {
        let snapshot = |dir: &Path| {
            let t = tree(dir);
            if self.but_cache { t.but_cache() } else { t }
        };
        let before = self.tree_unchanged.then(|| snapshot(&self.dir));
        let mut cmd = scaffold();
        cmd.arg("-C").arg(&self.dir).args(&self.args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        for k in &self.env_removed {
            cmd.env_remove(k);
        }
        if let Some(limit) = self.timeout {
            cmd.timeout(limit);
        }
        let what = format!("`scaffold {}`", self.args.join(" "));
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("{what} did not finish: {e}"));
        let run = Run {
            code: out.status.code().expect("exited normally"),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        };
        if let Some(status) = self.status {
            assert_eq!(
                run.code, status,
                "{what} exited {}:\n{}{}",
                run.code, run.stdout, run.stderr
            );
        }
        if let Some(exact) = &self.stdout {
            assert_eq!(&run.stdout, exact, "{what}: stdout");
        }
        for part in &self.stdout_has {
            assert!(
                run.stdout.contains(part.as_str()),
                "{what}: stdout lacks {part:?}:\n{}",
                run.stdout
            );
        }
        for part in &self.stderr_has {
            assert!(
                run.stderr.contains(part.as_str()),
                "{what}: stderr lacks {part:?}:\n{}",
                run.stderr
            );
        }
        for part in &self.never {
            assert!(
                !run.stdout.contains(part.as_str()) && !run.stderr.contains(part.as_str()),
                "{what} printed {part:?}:\n{}\n{}",
                run.stdout,
                run.stderr
            );
        }
        if let Some(before) = before {
            assert_same(
                &snapshot(&self.dir),
                &before,
                &format!("{what} changed the tree"),
            );
        }
        run
    }
}
