//! Fail closed at the repository's edge (issue "Fail closed", items 1 and 2): a manifest,
//! baseline or finding's file that is a symlink (or reached through one) is refused and its
//! content never shown; nothing under `.scaffold/` is written through a symlink, by
//! `check`'s caches or `queue migrate`.

use crate::common;

use std::os::unix::fs::symlink;
use std::path::Path;

use common::Test;
use common::copy_fixture;

const SECRET: &str = "CI_TOKEN=hunter2-do-not-print";
/// What of [`SECRET`] must never be printed.
const SHOWN: &str = "hunter2";

/// A folder outside the repository holding a "secret" file.
fn outside() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("environ"), format!("{SECRET}\nkey: [\n")).expect("write");
    dir
}

/// `scaffold <args>` in `repo`, which must exit `status` and never print the secret.
fn refused(repo: &Path, args: &[&str], status: i32) -> Test {
    Test::in_dir(repo)
        .args(args)
        .status(status)
        .never_prints(SHOWN)
}

#[test]
fn a_symlinked_codemap_is_refused_unread() {
    let out = outside();
    let repo = copy_fixture("clean");
    let codemap = repo.path().join("agent/codemap.yml");
    std::fs::remove_file(&codemap).expect("rm");
    symlink(out.path().join("environ"), &codemap).expect("link");
    for format in ["human", "json"] {
        refused(repo.path(), &["check", "--format", format], 2)
            .stderr_has("agent/codemap.yml")
            .stderr_has("symlink")
            .run();
    }
}

#[test]
fn a_symlinked_gate_matrix_or_agent_folder_is_refused_unread() {
    let out = outside();
    let repo = copy_fixture("clean");
    let gm = repo.path().join("agent/manifests/gate-matrix.yml");
    std::fs::remove_file(&gm).expect("rm");
    symlink(out.path().join("environ"), &gm).expect("link");
    refused(repo.path(), &["check"], 2).run();
    refused(repo.path(), &["gates"], 2).run();

    // The whole manifests folder a link to the outside, holding a file of that name.
    let repo = copy_fixture("clean");
    let manifests = repo.path().join("agent/manifests");
    std::fs::remove_dir_all(&manifests).expect("rm");
    std::fs::copy(
        out.path().join("environ"),
        out.path().join("gate-matrix.yml"),
    )
    .expect("cp");
    symlink(out.path(), &manifests).expect("link");
    refused(repo.path(), &["check"], 2)
        .stderr_has("agent/manifests")
        .run();
}

#[test]
fn a_symlinked_baseline_is_refused_unread() {
    let out = outside();
    let repo = copy_fixture("clean");
    symlink(
        out.path().join("environ"),
        repo.path().join("agent/baseline.yml"),
    )
    .expect("link");
    refused(repo.path(), &["check"], 2)
        .stdout_has("refused")
        .run();
}

#[test]
fn a_finding_on_a_symlinked_file_shows_no_snippet_of_its_target() {
    let out = outside();
    std::fs::write(
        out.path().join("README.md"),
        format!("# worker\n{SECRET}\n"),
    )
    .expect("write");
    let repo = copy_fixture("clean");
    let readme = repo.path().join("workers/maintenance/README.md");
    if readme.exists() {
        std::fs::remove_file(&readme).expect("rm");
    }
    symlink(out.path().join("README.md"), &readme).expect("link");
    let run = Test::in_dir(repo.path())
        .args(["check"])
        .never_prints(SHOWN)
        .status(1)
        .run();
    assert!(
        run.stdout.contains("workers/maintenance/README.md"),
        "{}",
        run.stdout
    );
}

/// A file of a place workers run (dev.sh, compose, Terraform) that is a symlink is a
/// finding, unread: it was skipped, and the place then served no lane it declared.
#[test]
fn a_symlinked_place_file_is_a_finding_unread() {
    let out = outside();
    let repo = copy_fixture("near-miss/workqueue");
    let tf = repo
        .path()
        .join("deployment/terraform/modules/environment/main.tf");
    std::fs::remove_file(&tf).expect("rm");
    symlink(out.path().join("environ"), &tf).expect("link");
    let run = refused(repo.path(), &["check", "--format", "json"], 1).run();
    let found = run.findings();
    let unread = found
        .iter()
        .find(|f| f["rule"] == "lane-undeployed")
        .unwrap_or_else(|| panic!("no lane-undeployed finding: {}", run.stdout));
    assert_eq!(
        unread["path"],
        "deployment/terraform/modules/environment/main.tf"
    );
    let message = unread["message"].as_str().expect("message");
    assert!(message.contains("cannot be read"), "{message}");
    refused(repo.path(), &["check"], 1).run();
}

/// `.env.example` and the runtime's stamp as symlinks: each rule that needs one says it
/// cannot be read (it said the file was missing), and never reads it through the link.
#[test]
fn a_symlinked_env_example_or_stamp_is_said_unread() {
    let out = outside();
    for (fixture, file, rule) in [
        (
            "rules/settings-undocumented",
            ".env.example",
            "settings-undocumented",
        ),
        (
            "rules/runtime-drift",
            "platform/runtime/.scaffold-stamp",
            "runtime-drift",
        ),
    ] {
        let repo = copy_fixture(fixture);
        let path = repo.path().join(file);
        std::fs::remove_file(&path).expect("rm");
        symlink(out.path().join("environ"), &path).expect("link");
        let run = refused(repo.path(), &["check", "--format", "json"], 1).run();
        let said = run.findings().iter().any(|f| {
            f["rule"] == rule
                && f["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(&format!("{file} cannot be read")))
        });
        assert!(said, "{rule}: {}", run.stdout);
        refused(repo.path(), &["check"], 1).run();
    }
}

#[test]
fn check_never_writes_through_a_committed_cache_link() {
    let out = outside();
    let repo = copy_fixture("clean");
    let _ = std::fs::remove_dir_all(repo.path().join(".scaffold"));
    let cache = repo.path().join(".scaffold/cache");
    std::fs::create_dir_all(&cache).expect("mkdir");
    symlink(out.path().join("environ"), cache.join("CACHEDIR.TAG")).expect("link");
    symlink(out.path().join("dangling"), cache.join(".gitignore")).expect("link");
    Test::in_dir(repo.path()).args(["check"]).run();
    assert!(
        std::fs::read_to_string(out.path().join("environ"))
            .expect("read")
            .starts_with(SECRET),
        "the link's target was overwritten"
    );
    assert!(
        !out.path().join("dangling").exists(),
        "a file was created outside"
    );

    // A symlinked `.scaffold`: the caches are not written at all.
    let repo = copy_fixture("clean");
    let _ = std::fs::remove_dir_all(repo.path().join(".scaffold"));
    let elsewhere = tempfile::tempdir().expect("tempdir");
    symlink(elsewhere.path(), repo.path().join(".scaffold")).expect("link");
    Test::in_dir(repo.path()).args(["check"]).run();
    let written: Vec<_> = std::fs::read_dir(elsewhere.path())
        .expect("read_dir")
        .collect();
    assert!(written.is_empty(), "the caches went outside: {written:?}");
}

#[test]
fn queue_migrate_refuses_a_symlinked_scaffold_folder() {
    let repo = tempfile::tempdir().expect("tempdir");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    symlink(elsewhere.path(), repo.path().join(".scaffold")).expect("link");
    let run = Test::in_dir(repo.path())
        .args(["queue", "migrate"])
        .status(2)
        .run();
    assert!(run.stderr.contains("symlink"), "{}", run.stderr);
    let written: Vec<_> = std::fs::read_dir(elsewhere.path())
        .expect("read_dir")
        .collect();
    assert!(written.is_empty(), "the queue went outside: {written:?}");
}

/// Whatever cargo would take as a member is checked: a member's Cargo.toml that is a
/// symlink, deleted from a glob-matched folder, a folder, or a FIFO is a finding, never a
/// crate that silently drops out of its layer (the check said "ok" on each before).
#[test]
fn a_hidden_member_manifest_is_a_finding() {
    fn hide(how: &str, manifest: &Path, outside: &Path) {
        let copy = std::fs::read(manifest).expect("read");
        std::fs::remove_file(manifest).expect("rm");
        match how {
            "symlink" => {
                std::fs::write(outside.join("Cargo.toml"), copy).expect("write");
                symlink(outside.join("Cargo.toml"), manifest).expect("link");
            }
            "deleted" => {}
            "folder" => {
                std::fs::create_dir(manifest).expect("mkdir");
                std::fs::write(manifest.join("x"), "").expect("write");
            }
            "fifo" => {
                let made = std::process::Command::new("mkfifo")
                    .arg(manifest)
                    .status()
                    .expect("mkfifo runs");
                assert!(made.success());
            }
            _ => unreachable!(),
        }
    }
    for how in ["symlink", "deleted", "folder", "fifo"] {
        let out = tempfile::tempdir().expect("tempdir");
        let repo = copy_fixture("clean");
        let _ = std::fs::remove_dir_all(repo.path().join(".scaffold"));
        hide(
            how,
            &repo.path().join("services/billing/Cargo.toml"),
            out.path(),
        );
        let run = Test::in_dir(repo.path())
            .args(["check", "--format", "json"])
            .status(1)
            .run();
        assert!(
            run.stdout.contains("source-unparsed") && run.stdout.contains("services/billing"),
            "{how}: {}",
            run.stdout
        );
    }
}

/// A baseline named with `--baseline` must exist (a typo was an empty baseline, exit as
/// if nothing were accepted), and one outside the repository is refused unread.
#[test]
fn a_named_baseline_must_exist_inside_the_repository() {
    let out = outside();
    let repo = copy_fixture("clean");
    let run = Test::in_dir(repo.path())
        .args(["check", "--baseline", "agent/typo.yml"])
        .status(2)
        .run();
    assert!(
        run.stderr.contains("no baseline at agent/typo.yml"),
        "{}",
        run.stderr
    );
    let elsewhere = out.path().join("environ");
    let elsewhere = elsewhere.to_str().expect("UTF-8 temp path");
    refused(repo.path(), &["check", "--baseline", elsewhere], 2).run();
    // Writing one creates it.
    Test::in_dir(repo.path())
        .args(["check", "--write-baseline", "--baseline", "agent/new.yml"])
        .run();
    assert!(repo.path().join("agent/new.yml").is_file());
}

/// The generator reads only regular files inside the root: a FIFO in place of a file it
/// edits hung it, and a symlink was read (and edited) through.
#[test]
fn the_generator_refuses_fifos_and_links_in_place_of_what_it_edits() {
    let out = outside();
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(dir.path(), true);
    for (victim, how) in [
        ("scripts/dev.sh", "fifo"),
        ("om/src/root.rs", "symlink"),
        // Asked only whether it is there: a link was followed, and the linked crate taken
        // for the worker.
        ("workers/maintenance/Cargo.toml", "symlink"),
    ] {
        let path = repo.join(victim);
        let saved = std::fs::read(&path).expect("read");
        std::fs::remove_file(&path).expect("rm");
        if how == "fifo" {
            let made = std::process::Command::new("mkfifo")
                .arg(&path)
                .status()
                .expect("mkfifo runs");
            assert!(made.success());
        } else {
            std::fs::write(out.path().join("root.rs"), format!("// {SECRET}\n")).expect("write");
            symlink(out.path().join("root.rs"), &path).expect("link");
        }
        let out_run = Test::in_dir(&repo)
            .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
            .timeout(std::time::Duration::from_secs(60))
            .status(2)
            .run();
        let stderr = &out_run.stderr;
        assert!(
            stderr.contains(victim) && stderr.contains("refused"),
            "{stderr}"
        );
        assert!(!stderr.contains(SHOWN), "{stderr}");
        std::fs::remove_file(&path).expect("rm");
        std::fs::write(&path, saved).expect("restore");
    }
    assert!(
        std::fs::read_to_string(out.path().join("root.rs"))
            .expect("read")
            .contains(SECRET),
        "the link's target was edited"
    );
}

/// A template override cannot reach outside the repository through a symlinked folder
/// (`{% include "leak/secret.txt" %}` wrote the secret into a generated file), nor read a
/// device, nor loop for ever: each ends in an error, nothing written.
#[test]
fn template_overrides_stay_inside_and_run_out_of_fuel() {
    let out = outside();
    std::fs::write(out.path().join("secret.txt"), SECRET).expect("write");
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = common::init_repo(dir.path(), true);
    let overrides = repo.join(".scaffold/templates/kind");
    std::fs::create_dir_all(&overrides).expect("mkdir");
    symlink(out.path(), repo.join(".scaffold/templates/leak")).expect("link");
    for body in [
        "{% include \"leak/secret.txt\" %}\n",
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}\n",
    ] {
        std::fs::write(overrides.join("handler.rs.j2"), body).expect("write");
        refused(&repo, &["worker", "maintenance", "NOTIFY_SHIPMENT"], 2)
            .tree_unchanged()
            .run();
        let handler = repo.join("workers/maintenance/src/handlers/notify_shipment.rs");
        assert!(!handler.exists(), "{body}: a file was written");
    }
}
