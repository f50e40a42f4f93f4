//! What `scaffold namespace` and `scaffold worker` refuse (bad, taken or colliding names,
//! a missing marker or namespace), each refusal exiting 1 with the tree byte-identical.

use super::*;
use crate::common::Test;

#[test]
fn namespace_creates_its_files_and_refuses_bad_or_existing_names() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    for f in ["mod.rs", "kinds.rs", "types/work.rs", "README.md"] {
        assert!(dir.join("om/src/shipping").join(f).is_file(), "{f}");
    }
    let lib = fs::read_to_string(dir.join("om/src/lib.rs")).expect("lib.rs");
    assert!(lib.contains("pub mod shipping;"), "{lib}");
    for (ns, code, says) in [
        ("shipping", 1, "exists"),
        ("work", 1, "scaffold uses it"),
        ("fn", 1, "Rust keyword"),
        ("Shipping", 1, "upper-case"),
        ("ship-ping", 1, "not allowed"),
        ("../x", 1, "path"),
    ] {
        Test::in_dir(&dir)
            .args(["namespace", ns])
            .status(code)
            .stderr_has(says)
            .tree_unchanged()
            .run();
    }
    fs::create_dir(dir.join("om/src/billing")).expect("mkdir");
    Test::in_dir(&dir)
        .args(["namespace", "billing"])
        .status(1)
        .stderr_has("without kinds.rs")
        .tree_unchanged()
        .run();
}

#[test]
fn namespace_without_its_marker_is_an_error_and_writes_nothing() {
    let (_tmp, dir) = repo();
    let lib = dir.join("om/src/lib.rs");
    let text = fs::read_to_string(&lib).expect("lib.rs");
    fs::write(
        &lib,
        text.replace("// scaffold:namespaces", "// namespaces"),
    )
    .expect("write");
    Test::in_dir(&dir)
        .args(["namespace", "shipping"])
        .status(2)
        .stderr_has("om/src/lib.rs has no `// scaffold:namespaces` line")
        .tree_unchanged()
        .run();
}

#[test]
fn worker_refuses_bad_names_with_nothing_written() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    let cases: &[(&[&str], &str)] = &[
        (&["maintenance", "notify_shipment"], "invalid kind"),
        (&["maintenance", "Notify"], "invalid kind"),
        (&["maintenance", "_NOTIFY"], "invalid kind"),
        (&["maintenance", "1NOTIFY"], "invalid kind"),
        (&["maintenance", "NOTIFY__SHIPMENT"], "invalid kind"),
        (&["maintenance", "NOTIFY_"], "invalid kind"),
        (&["maintenance", "NOTIFY-SHIPMENT"], "invalid kind"),
        (&["maintenance", "NOTIFY SHIPMENT"], "invalid kind"),
        (&["maintenance", "../NOTIFY"], "invalid kind"),
        (&["maintenance", "SWEEP"], "registered already"),
        (&["maintenance", "ORCHESTRATION"], "registered already"),
        (&["../x", "NOTIFY"], "invalid worker name"),
        (&["Billing", "NOTIFY"], "invalid worker name"),
        (&["billing_", "NOTIFY"], "invalid worker name"),
        (&["bill--ing", "NOTIFY"], "invalid worker name"),
        (&["9lives", "NOTIFY"], "invalid worker name"),
        (&["", "NOTIFY"], "invalid worker name"),
        (&["a/b", "NOTIFY"], "invalid worker name"),
        (
            &["maintenance", "NOTIFY", "--namespace", "Shipping"],
            "invalid namespace",
        ),
        (
            &["maintenance", "NOTIFY", "--namespace", "billing"],
            "scaffold namespace billing",
        ),
        (
            &["maintenance", "NOTIFY", "--namespace", "work"],
            "the scaffold uses it",
        ),
        (
            &["maintenance", "NOTIFY", "--namespace", "../om"],
            "invalid namespace",
        ),
        (&["maintenance", "NOTIFY", "--lane", "Bulk"], "invalid lane"),
        (
            &["maintenance", "NOTIFY", "--lane", "bulk lane"],
            "invalid lane",
        ),
        (&["maintenance", "NOTIFY", "--lane", "../x"], "invalid lane"),
        (
            &["maintenance", "NOTIFY", "--role", "maintenance"],
            "--role applies to a new worker",
        ),
        (&["billing", "NOTIFY", "--role", "janitor"], "unknown role"),
        (&["maintenance", "MOVE"], "Rust keyword"),
        (&["maintenance", "SELF"], "Rust keyword"),
        (&["om", "NOTIFY"], "invalid worker name `om`"),
        (
            &["verification", "NOTIFY"],
            "invalid worker name `verification`",
        ),
        (&["outbox-relay", "NOTIFY"], "has no work loop"),
        (
            &["maintenance", "NOTIFY", "--container"],
            "--container applies to a new worker",
        ),
        (&["fresh", "HEALTH"], "the new worker's own tests/health.rs"),
    ];
    assert!(cases.len() >= 20);
    for (args, says) in cases {
        Test::in_dir(&dir)
            .args(["worker"])
            .args(*args)
            .status(1)
            .stderr_has(says)
            .tree_unchanged()
            .run();
    }
}

#[test]
fn worker_needs_a_namespace_and_asks_when_there_are_several() {
    let (_tmp, dir) = repo();
    let r = Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .status(1)
        .run();
    assert!(r.stderr.contains("scaffold namespace"), "{}", r.stderr);
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    Test::in_dir(&dir).args(["namespace", "billing"]).run();
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .status(1)
        .stderr_has("--namespace")
        .stderr_has("billing, shipping")
        .tree_unchanged()
        .run();
}

#[test]
fn worker_failures_leave_the_tree_byte_identical() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();

    // A missing marker.
    let work_loop = dir.join("workers/maintenance/src/work_loop.rs");
    let original = fs::read_to_string(&work_loop).expect("work_loop.rs");
    fs::write(
        &work_loop,
        original.replace("// scaffold:handlers", "// handlers"),
    )
    .expect("write");
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .status(2)
        .stderr_has("workers/maintenance/src/work_loop.rs has no `// scaffold:handlers`")
        .tree_unchanged()
        .run();
    fs::write(&work_loop, &original).expect("restore");

    // A read-only file the command would change.
    let kinds = dir.join("om/src/shipping/kinds.rs");
    let mut perms = fs::metadata(&kinds).expect("meta").permissions();
    perms.set_readonly(true);
    fs::set_permissions(&kinds, perms.clone()).expect("chmod");
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .status(2)
        .stderr_has("om/src/shipping/kinds.rs is read-only")
        .tree_unchanged()
        .run();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    fs::set_permissions(&kinds, perms).expect("chmod");

    // An override template that renders invalid Rust.
    let over = dir.join(".scaffold/templates/kind");
    fs::create_dir_all(&over).expect("mkdir");
    fs::write(over.join("handler.rs.j2"), "impl {{ Kind }}Handler {\n").expect("write");
    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .status(2)
        .run();
    assert!(
        r.stderr
            .contains("workers/maintenance/src/handlers/notify_shipment.rs"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("override"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "the tree changed");

    // An override that names a variable nobody sets (strict undefined).
    fs::write(over.join("handler.rs.j2"), "// {{ nobody_sets_this }}\n").expect("write");
    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .status(2)
        .run();
    assert!(r.stderr.contains("kind/handler.rs.j2"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "the tree changed");

    // An override that renders valid Rust the checker refuses (a handler running a shell):
    // the generator checks its plan with the checker's rules and writes nothing.
    let embedded =
        fs::read_to_string(crate::common::repo_root().join("templates/kind/handler.rs.j2"))
            .expect("the embedded template");
    let body = ") -> Result<(), WorkError> {\n";
    let at = embedded.find(body).expect("the handler's body") + body.len();
    let planted = format!(
        "{}        let _ = std::process::Command::new(\"sh\").arg(\"-c\").arg(\"true\").status();\n{}",
        &embedded[..at],
        &embedded[at..]
    );
    fs::write(over.join("handler.rs.j2"), planted).expect("write");
    let before = tree(&dir);
    // In a worker the disk holds, and in one only the plan holds (the check reads the
    // plan's crate as a member of the workspace: its folder is on no disk yet).
    for (worker, kind, handler) in [
        (
            "maintenance",
            "NOTIFY_SHIPMENT",
            "workers/maintenance/src/handlers/notify_shipment.rs",
        ),
        (
            "billing",
            "CHARGE_CARD",
            "workers/billing/src/handlers/charge_card.rs",
        ),
    ] {
        Test::in_dir(&dir)
            .args(["worker", worker, kind])
            .status(2)
            .stderr_has("nothing was written")
            .stderr_has("worker-shell-exec")
            .stderr_has(handler)
            .run();
        assert_same(&tree(&dir), &before, "the tree changed");
    }
    assert!(
        !dir.join("workers/billing").exists(),
        "a worker was written"
    );
    fs::remove_file(over.join("handler.rs.j2")).expect("remove the override");
}

/// Names that differ only in case conversion (`A_1` and `A1` are both `A1`) are one kind;
/// a kind added to a worker without `--lane` rides the worker's own lane, not a replica's.
#[test]
fn colliding_names_are_refused_and_lanes_follow_the_worker() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "SEND_2FA_CODE"])
        .run();
    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args(["worker", "maintenance", "SEND2FA_CODE"])
        .status(1)
        .run();
    assert!(
        r.stderr.contains("om/src/shipping/kinds.rs:"),
        "{}",
        r.stderr
    );
    assert_same(&tree(&dir), &before, "a colliding kind changed the tree");

    Test::in_dir(&dir).args(["worker", "billing", "K1"]).run();
    Test::in_dir(&dir)
        .args(["worker", "billing", "K2", "--lane", "bulk"])
        .run();
    Test::in_dir(&dir).args(["worker", "billing", "K3"]).run();
    let kinds = fs::read_to_string(dir.join("om/src/shipping/kinds.rs")).expect("kinds.rs");
    let lane_of = |kind: &str| -> String {
        let at = kinds.find(&format!("name: \"{kind}\"")).expect("the spec");
        let rest = &kinds[at..];
        let lane = rest.find("lane: \"").expect("a lane") + "lane: \"".len();
        rest[lane..].split('"').next().expect("quoted").to_owned()
    };
    assert_eq!(lane_of("K1"), "billing");
    assert_eq!(lane_of("K2"), "bulk");
    assert_eq!(lane_of("K3"), "billing", "{kinds}");
    check_clean(&dir, "billing K1, K2 --lane bulk, K3");

    // A replica of billing on lane `eu` would be `billing-eu`, which is a worker's name.
    Test::in_dir(&dir)
        .args(["worker", "billing-eu", "K4"])
        .run();
    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args(["worker", "billing", "K5", "--lane", "eu"])
        .status(1)
        .run();
    assert!(r.stderr.contains("invalid lane `eu`"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "a refused replica changed the tree");
}

#[test]
fn namespace_refuses_a_module_that_exists_as_a_file() {
    let (_tmp, dir) = repo();
    fs::write(dir.join("om/src/ids.rs"), "//! ids\n").expect("write");
    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args(["namespace", "ids"])
        .status(1)
        .run();
    assert!(r.stderr.contains("om/src/ids.rs"), "{}", r.stderr);
    assert_same(&tree(&dir), &before, "the tree changed");
}

/// A kind the repository has is found as the checker finds it: a spec whose name is a
/// const (which a search for the quoted name on a `name:` line missed) is taken; and an
/// om/src file scaffold cannot read or parse is an error, never a guess that the name is
/// free.
#[test]
fn worker_refuses_a_kind_a_const_names_and_an_unreadable_registry() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    let kinds = dir.join("om/src/shipping/kinds.rs");
    let text = fs::read_to_string(&kinds).expect("kinds.rs");
    fs::write(
        &kinds,
        format!(
            "{text}\nconst BOOK: &str = \"BOOK_PICKUP\";\npub const ELSEWHERE: &[WorkKindSpec] = &[\n    WorkKindSpec {{ name: BOOK, ..WorkKindSpec::DEFAULT }},\n];\n"
        ),
    )
    .expect("write");
    let line = text.lines().count() + 4;
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "BOOK_PICKUP"])
        .status(1)
        .stderr_has("registered already")
        .stderr_has(&format!("om/src/shipping/kinds.rs:{line}"))
        .tree_unchanged()
        .run();
    // A file mid-edit that does not parse may define it through a const: no guess.
    fs::write(
        dir.join("om/src/shipping/draft.rs"),
        "const BOOK: &str = \"BOOK_PICKUP\"\n",
    )
    .expect("write");
    fs::write(&kinds, &text).expect("restore");
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "BOOK_PICKUP"])
        .status(2)
        .stderr_has("om/src/shipping/draft.rs does not parse")
        .tree_unchanged()
        .run();
    fs::remove_file(dir.join("om/src/shipping/draft.rs")).expect("rm");
    std::os::unix::fs::symlink("/etc/hostname", dir.join("om/src/shipping/linked.rs"))
        .expect("link");
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "BOOK_PICKUP"])
        .status(2)
        .stderr_has("the kinds that exist cannot be told")
        .stderr_has("om/src/shipping/linked.rs")
        .tree_unchanged()
        .run();
    // A linked folder among a worker's sources may hold its handlers: refused, not skipped.
    fs::remove_file(dir.join("om/src/shipping/linked.rs")).expect("rm");
    std::os::unix::fs::symlink("/usr", dir.join("workers/maintenance/src/vendored")).expect("link");
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "BOOK_PICKUP"])
        .status(2)
        .stderr_has("workers/maintenance/src/vendored")
        .tree_unchanged()
        .run();
}

/// A kind a worker's handler already handles is found as the checker finds handlers: a
/// `KIND` named through a const of `om/src/` is taken, one in test code is not, and a
/// worker source that mentions `WorkHandler` and does not parse is an error, never a guess.
#[test]
fn worker_refuses_a_kind_a_handler_names_through_a_const() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    fs::write(
        dir.join("om/src/shipping/names.rs"),
        "pub const BOOK: &str = \"BOOK_PICKUP\";\n",
    )
    .expect("write");
    let handler = dir.join("workers/maintenance/src/booked.rs");
    fs::write(
        &handler,
        "pub struct Booked;\n\nimpl WorkHandler for Booked {\n    const KIND: &'static str = om::shipping::names::BOOK;\n}\n\n#[cfg(test)]\nmod tests {\n    impl WorkHandler for Probe {\n        const KIND: &'static str = \"PROBE\";\n    }\n}\n",
    )
    .expect("write");
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "BOOK_PICKUP"])
        .status(1)
        .stderr_has("registered already")
        .stderr_has("workers/maintenance/src/booked.rs:4")
        .tree_unchanged()
        .run();
    // A handler in test code handles nothing: the name is free.
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "PROBE", "--dry-run"])
        .never_prints("registered already")
        .run();
    // A handler file mid-edit may handle it: no guess.
    fs::write(
        &handler,
        "impl WorkHandler for Booked {\n    const KIND: &'static str = \"BOOK_PICKUP\"\n",
    )
    .expect("write");
    fs::remove_file(dir.join("om/src/shipping/names.rs")).expect("rm");
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "BOOK_PICKUP"])
        .status(2)
        .stderr_has("workers/maintenance/src/booked.rs: does not parse as Rust")
        .tree_unchanged()
        .run();
}
