//! The check cache (`.scaffold/cache/`): a warm run reports exactly what a cold run does,
//! an edit is seen however its metadata was dressed up, a damaged cache is rebuilt, and a
//! `--staged` run keeps the entries of the files it did not visit.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Test, copy_fixture, git};

/// The cache file whose name starts with `prefix`: `check-` (per-file facts) or
/// `workqueue-` (the work-queue extractors' results).
fn cache_file(repo: &Path, prefix: &str) -> PathBuf {
    let dir = repo.join(".scaffold/cache");
    let mut bins: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "bin")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    assert_eq!(bins.len(), 1, "one {prefix} cache file: {bins:?}");
    bins.remove(0)
}

fn replace_in(repo: &Path, rel: &str, from: &str, to: &str) {
    let path = repo.join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert!(text.contains(from), "{rel} holds {from}");
    std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
}

type Edit<'a> = (&'a str, &'a str, &'a str);

/// Applies `before`, runs check (filling the caches), applies `after` and runs again:
/// the warm run must report exactly what a cold run on a fresh copy with both applied
/// does, and differ from the first run (the edit matters).
fn warm_matches_cold_after(fixture: &str, before: &[Edit<'_>], after: &[Edit<'_>]) {
    let warm = copy_fixture(fixture);
    for (rel, from, to) in before {
        replace_in(warm.path(), rel, from, to);
    }
    let first = check_json(warm.path());
    for (rel, from, to) in after {
        replace_in(warm.path(), rel, from, to);
    }
    let second = check_json(warm.path());
    let cold = copy_fixture(fixture);
    for (rel, from, to) in before.iter().chain(after) {
        replace_in(cold.path(), rel, from, to);
    }
    assert_eq!(
        second,
        check_json(cold.path()),
        "{fixture}: warm differs from cold"
    );
    assert_ne!(first, second, "{fixture}: the edit changes the findings");
}

fn check_json(repo: &Path) -> (i32, String) {
    let r = Test::in_dir(repo)
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    (r.code, r.stdout)
}

/// Rewrites `rel` with `from` replaced by `to` (same length), then sets its modification
/// time back to what it was: only the content and the change time differ.
fn edit_keeping_size_and_mtime(repo: &Path, rel: &str, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let path = repo.join(rel);
    let before = std::fs::metadata(&path).expect("meta");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(from), "{rel} holds {from}");
    std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
    let f = std::fs::File::options()
        .write(true)
        .open(&path)
        .expect("open");
    f.set_modified(before.modified().expect("mtime"))
        .expect("set mtime");
    let after = std::fs::metadata(&path).expect("meta");
    assert_eq!(before.len(), after.len());
    assert_eq!(before.modified().ok(), after.modified().ok());
}

#[test]
fn a_warm_run_reports_what_a_cold_run_does() {
    // Fixtures whose rules read file text lazily (work-queue rules) and by cached facts
    // (imports, suppressions, parse failures).
    for fixture in [
        "rules/import-forbidden",
        "rules/kind-unhandled",
        "rules/handler-builds-context",
        "rules/worker-shell-exec",
        "rules/settings-undocumented",
        "rules/suppression-invalid",
        "rules/source-unparsed",
    ] {
        let repo = copy_fixture(fixture);
        let cold = check_json(repo.path());
        assert!(cache_file(repo.path(), "check-").is_file());
        assert!(cache_file(repo.path(), "workqueue-").is_file());
        let warm = check_json(repo.path());
        assert_eq!(cold, warm, "{fixture}: warm differs from cold");
        assert_eq!(cold.0, 1, "{fixture} has findings");
    }
}

/// Edits a file of the import-forbidden fixture in `repo` keeping its size and mtime, and
/// checks the next run sees it: it differs from `before` and matches a cold run of a fresh
/// copy with the same edit. Returns that run's JSON.
fn assert_edit_seen(repo: &Path, before: &str) -> String {
    let main = "workers/maintenance/src/main.rs";
    edit_keeping_size_and_mtime(repo, main, "::infra::resolve();", "::infrx::resolve();");
    let (_, after) = check_json(repo);
    assert_ne!(before, after, "the edit removed a finding");
    let fresh = copy_fixture("rules/import-forbidden");
    std::fs::copy(repo.join(main), fresh.path().join(main)).expect("copy");
    assert_eq!(
        after,
        check_json(fresh.path()).1,
        "as a cold run of the edited tree"
    );
    after
}

#[test]
fn an_edit_is_seen_though_size_and_mtime_are_restored() {
    let repo = copy_fixture("rules/import-forbidden");
    let (_, cold) = check_json(repo.path());
    assert_edit_seen(repo.path(), &cold);
}

#[test]
fn entries_trusted_by_metadata_still_see_every_edit() {
    let repo = copy_fixture("rules/import-forbidden");
    // Only files that had settled before a run are recorded with their metadata.
    std::thread::sleep(Duration::from_millis(3_500));
    let (_, cold) = check_json(repo.path());
    let (_, warm) = check_json(repo.path());
    assert_eq!(cold, warm);
    // The change time moved, so the file is read again despite its size and mtime.
    let after = assert_edit_seen(repo.path(), &cold);
    // The file that never changed is still reported from its entry.
    assert!(
        after.contains("workers/maintenance/tests/dns.rs"),
        "{after}"
    );
}

#[test]
fn a_damaged_cache_is_rebuilt_never_trusted() {
    let repo = copy_fixture("rules/kind-requires-mismatch");
    let (_, cold) = check_json(repo.path());
    for prefix in ["check-", "workqueue-"] {
        damage_each_way(repo.path(), prefix, &cold);
    }
}

fn damage_each_way(repo: &Path, prefix: &str, cold: &str) {
    let file = cache_file(repo, prefix);
    let good = std::fs::read(&file).expect("read cache");
    for damage in [b"garbage".to_vec(), good[..good.len() / 2].to_vec(), {
        let mut flipped = good.clone();
        let i = flipped.len() - 3;
        flipped[i] ^= 0x40;
        flipped
    }] {
        std::fs::write(&file, &damage).expect("damage");
        assert_eq!(check_json(repo).1, cold);
        let rebuilt = std::fs::read(&file).expect("read");
        assert!(
            rebuilt.starts_with(&good[..16]) && rebuilt.len() >= good.len(),
            "rebuilt whole"
        );
    }
}

#[test]
fn a_staged_run_keeps_the_entries_of_files_it_did_not_visit() {
    let repo = copy_fixture("rules/import-forbidden");
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "base"]);
    check_json(repo.path());
    let full = std::fs::read(cache_file(repo.path(), "check-")).expect("read cache");
    // A comment at the end: the same facts, a new hash of the same size.
    let dns = repo.path().join("workers/maintenance/src/platform/dns.rs");
    let text = std::fs::read_to_string(&dns).expect("read") + "// touched\n";
    std::fs::write(&dns, text).expect("write");
    git(repo.path(), &["add", "-A"]);
    let r = Test::in_dir(repo.path())
        .args(["check", "--staged", "--format", "json"])
        .status(1)
        .run();
    assert!(r.code == 0 || r.code == 1, "{}", r.stderr);
    let after = std::fs::read(cache_file(repo.path(), "check-")).expect("read cache");
    // The staged file's entry may lose its recorded metadata (it was just written); every
    // other file's entry is kept as it was. A cache of the staged file alone would be a
    // fraction of the size.
    let one_stat = 64;
    assert!(
        after.len() + one_stat >= full.len() && after.len() <= full.len(),
        "every file's entry is still there after the staged run: {} then {} bytes",
        full.len(),
        after.len()
    );
    assert!(full.len() > 3 * one_stat, "{} bytes", full.len());
    assert_ne!(after, full, "the staged file's entry was updated");
}

#[test]
fn work_queue_results_follow_every_file_they_read() {
    let fixture = "rules/kind-requires-mismatch";
    let om = "om/src/work/kinds.rs";
    let sweep = "workers/maintenance/src/handlers/sweep.rs";
    let notify = "workers/maintenance/src/handlers/notify_shipment.rs";
    // The handler's own file changes.
    warm_matches_cold_after(
        fixture,
        &[],
        &[(notify, "\"mail.send\"", "\"shipping.notify\"")],
    );
    // An om const the handler's REQUIRES names changes; the handler's file does not.
    let uses_om = [
        (
            om,
            "pub const",
            "pub const SWEEP_PERM: &str = \"work.sweep\";\npub const",
        ),
        (sweep, "&[SWEEP_PERMISSION]", "&[SWEEP_PERM]"),
    ];
    warm_matches_cold_after(
        fixture,
        &uses_om,
        &[(
            om,
            "SWEEP_PERM: &str = \"work.sweep\"",
            "SWEEP_PERM: &str = \"work.other\"",
        )],
    );
}

/// What identifies a file's content on disk (inode and mtime): unchanged means not
/// rewritten.
fn written(path: &Path) -> (u64, std::time::SystemTime) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).expect("meta");
    (m.ino(), m.modified().expect("mtime"))
}

#[test]
fn a_run_that_changes_nothing_writes_nothing() {
    let repo = copy_fixture("rules/kind-unhandled");
    // A file that is a `#[path]` module of two crates is visited twice per run.
    replace_in(
        repo.path(),
        "workers/billing/src/main.rs",
        "fn main",
        "#[path = \"../../maintenance/src/settings.rs\"]\nmod shared_settings;\n\nfn main",
    );
    std::thread::sleep(Duration::from_millis(3_500));
    let first = check_json(repo.path());
    let check = cache_file(repo.path(), "check-");
    let memo = cache_file(repo.path(), "workqueue-");
    let before = (written(&check), written(&memo));
    let second = check_json(repo.path());
    assert_eq!(first, second);
    assert_eq!(
        (written(&check), written(&memo)),
        before,
        "neither cache was rewritten"
    );
    let leftovers: Vec<_> = std::fs::read_dir(repo.path().join(".scaffold/cache"))
        .expect("cache dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
