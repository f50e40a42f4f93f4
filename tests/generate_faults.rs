//! The generator under faults a unit test cannot play: the real binary SIGKILLed at random
//! points (every tree is then, after `scaffold recover`, byte-identical to before the run
//! or to a full run, with no stray file), and runs started at the same time (each one's
//! work lands; none is lost).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Test;
use common::{copy_dir, init_repo};

/// Every file and folder under `root`, with its bytes and whether it is executable, but
/// `.scaffold/cache` and the `.scaffold/` holding it (the checker's own cache).
fn tree(root: &Path) -> BTreeMap<String, (Vec<u8>, bool)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("readable").flatten() {
            let p = e.path();
            let rel = p
                .strip_prefix(root)
                .expect("inside")
                .to_string_lossy()
                .replace('\\', "/");
            if rel == ".scaffold/cache" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).expect("meta");
            if meta.is_dir() {
                if rel != ".scaffold" {
                    out.insert(format!("{rel}/"), (Vec::new(), false));
                }
                stack.push(p);
            } else {
                out.insert(
                    rel,
                    (std::fs::read(&p).expect("readable"), executable(&meta)),
                );
            }
        }
    }
    out
}

#[cfg(unix)]
fn executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    false
}

/// A count the environment may set (to run more, or fewer, rounds by hand).
fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("scaffold")
}

/// The command killed: a new worker (files created, `members` and the namespace's kinds
/// edited, folders made).
const WORKER: [&str; 5] = ["worker", "billing", "CHARGE", "--namespace", "shipping"];

fn spawn_worker(repo: &Path) -> std::process::Child {
    Command::new(bin())
        .arg("-C")
        .arg(repo)
        .args(WORKER)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("scaffold starts")
}

/// Where a killed run stopped, seen from what it left.
#[derive(Debug, Default)]
struct Phases {
    before_txn: usize,
    staging: usize,
    committed: usize,
    finished: usize,
}

#[test]
fn a_kill_at_any_point_leaves_the_tree_as_before_or_as_a_full_run() {
    let runs = count("SCAFFOLD_KILL_RUNS", 500);
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = init_repo(tmp.path(), true);
    let before = tree(&base);

    // A full run, timed, and its two windows: from its first staged file, and from its
    // journal (the commit point), to its exit.
    let full_dir = tmp.path().join("full");
    copy_dir(&base, &full_dir);
    let started = Instant::now();
    let mut child = spawn_worker(&full_dir);
    let staging = full_dir.join(".scaffold/txn/new");
    let journal = full_dir.join(".scaffold/txn/journal.json");
    let (mut staged_at, mut journal_at) = (None, None);
    let status = loop {
        if staged_at.is_none() && staging.exists() {
            staged_at = Some(started.elapsed());
        }
        if journal_at.is_none() && journal.exists() {
            journal_at = Some(started.elapsed());
        }
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        std::thread::sleep(Duration::from_micros(20));
    };
    assert!(status.success(), "the full run fails");
    let total = started.elapsed();
    // A window the poll never saw open is shorter than one poll: aim at its start (taking
    // the whole run as the window sent those kills past the end, and on a loaded host too
    // few landed after the commit point).
    let window = |opened: Option<Duration>| opened.map_or(Duration::ZERO, |at| total - at);
    let (staging_window, rename_window) = (window(staged_at), window(journal_at));
    let full = tree(&full_dir);
    assert_ne!(before, full);

    let seed = std::env::var("SCAFFOLD_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!(
        "kill test: {runs} runs, seed {seed}, run {total:?}, from staging {staging_window:?}, from the journal {rename_window:?}"
    );
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut phases = Phases::default();
    for n in 0..runs {
        let dir = tmp.path().join(format!("run-{n}"));
        copy_dir(&base, &dir);
        let mut child = spawn_worker(&dir);
        let began = Instant::now();
        // A third of the kills land anywhere in the run, a third while it stages, a third
        // after its commit point.
        let wait_for = |path: PathBuf| {
            // Spinning, not sleeping: a sleeping poller on a busy host wakes too late for
            // a commit window of a few hundred microseconds.
            while !path.exists() && began.elapsed() < total * 4 {
                std::thread::yield_now();
            }
        };
        match n % 3 {
            0 => {
                let at = total.mul_f64(rng.f64() * 1.2);
                while began.elapsed() < at {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            1 => {
                wait_for(dir.join(".scaffold/txn/new"));
                std::thread::sleep(staging_window.mul_f64(rng.f64()));
            }
            _ => {
                wait_for(dir.join(".scaffold/txn/journal.json"));
                std::thread::sleep(rename_window.mul_f64(rng.f64()));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let txn = dir.join(".scaffold/txn");
        if txn.join("journal.json").exists() {
            phases.committed += 1;
        } else if txn.exists() {
            phases.staging += 1;
        } else if dir.join("workers/billing/Cargo.toml").exists() {
            phases.finished += 1;
        } else {
            phases.before_txn += 1;
        }
        let pending = txn.exists();
        // `scaffold recover` (or the next generator command) finishes or undoes the run;
        // `check` never writes the tree (tests/hostile.rs holds it to that).
        let next = Test::in_dir(&dir).args(["recover"]).any_status().run();
        if pending {
            assert!(
                next.stdout.contains("was stopped"),
                "run {n}: recovery not said: {}{}",
                next.stdout,
                next.stderr
            );
        }
        let after = tree(&dir);
        if after != before && after != full {
            let differs: Vec<_> = after
                .keys()
                .chain(full.keys())
                .filter(|k| after.get(*k) != full.get(*k) && after.get(*k) != before.get(*k))
                .collect();
            panic!("run {n} (seed {seed}) left a tree that is neither: {differs:?}");
        }
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
    eprintln!("kill test: where the kills landed: {phases:?}");
    // At least 2% of the kills in each writing phase (10 of 500). The journal's window is a
    // few milliseconds now that rustfmt runs once (run ~180 ms, from the journal ~7 ms), and
    // with other test binaries beside it (cargo-nextest) 23 of 500 landed there in one CI run,
    // under the 5% asked before.
    assert!(
        phases.committed >= runs / 50 && phases.staging >= runs / 50,
        "too few kills landed while the run wrote: {phases:?}"
    );
}

#[test]
fn concurrent_runs_each_land_their_work() {
    let rounds = count("SCAFFOLD_CONCURRENT_ROUNDS", 10);
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = init_repo(tmp.path(), true);
    for n in 0..rounds {
        let dir = tmp.path().join(format!("round-{n}"));
        copy_dir(&base, &dir);
        // Two kinds into the existing worker and two new workers, all at once.
        let commands: [&[&str]; 4] = [
            &[
                "worker",
                "maintenance",
                "REINDEX",
                "--namespace",
                "shipping",
            ],
            &["worker", "maintenance", "PURGE", "--namespace", "shipping"],
            &["worker", "billing", "CHARGE", "--namespace", "shipping"],
            &["worker", "mailer", "NOTIFY", "--namespace", "shipping"],
        ];
        let children: Vec<_> = commands
            .iter()
            .map(|args| {
                Command::new(bin())
                    .arg("-C")
                    .arg(&dir)
                    .args(*args)
                    .env("NO_COLOR", "1")
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("scaffold starts")
            })
            .collect();
        for (child, args) in children.into_iter().zip(commands) {
            let out = child.wait_with_output().expect("waits");
            assert!(
                out.status.success(),
                "round {n}: {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let kinds = std::fs::read_to_string(dir.join("om/src/shipping/kinds.rs")).expect("kinds");
        for kind in ["REINDEX", "PURGE", "CHARGE", "NOTIFY"] {
            assert!(
                kinds.contains(&format!("\"{kind}\"")),
                "round {n}: {kind} lost"
            );
        }
        let members = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
        for worker in ["workers/billing", "workers/mailer"] {
            assert!(members.contains(worker), "round {n}: {worker} lost");
        }
        Test::in_dir(&dir).args(["check"]).run();
        assert!(!dir.join(".scaffold/lock").exists(), "round {n}: lock left");
        assert!(!dir.join(".scaffold/txn").exists(), "round {n}: txn left");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
