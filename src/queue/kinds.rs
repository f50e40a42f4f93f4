//! Which kinds `scaffold queue enqueue` accepts: a name the one kind-name rule allows, and,
//! inside a scaffold repository whose `om/src/root.rs` registers kinds, one of those —
//! read by the checker's own registry reader (`check::workqueue::registry`: the root's
//! `KINDS`, each namespace's slice, consts and `Kind::Variant.as_str()` resolved;
//! docs/reference.md#the-work-queue-scaffold-runtime), so a typo never lands an item no
//! worker will take.

use std::collections::BTreeMap;
use std::path::Path;

use crate::layout::model::{Model, OnDisk};

/// `kind` held to the one kind-name rule, the generator's (`generate::names`): what
/// `scaffold worker` would refuse to make, the queue refuses to take.
pub(super) fn check_name(kind: &str) -> Result<(), super::QueueError> {
    use crate::generate::names::{NameKind, why_invalid};
    match why_invalid(NameKind::Kind, kind) {
        None => Ok(()),
        Some(reason) => Err(super::QueueError::InvalidKind {
            kind: kind.to_owned(),
            reason,
        }),
    }
}

/// One registered kind: the lane its spec names and where the spec is.
pub(super) use crate::layout::model::RegisteredKind as Spec;

/// The kinds registered under `<repo>/om/src` for the repository holding `cwd`, as the
/// repository model reads them (`layout::model`); `None` outside a repository or when it
/// registers none (nothing to check against). A file or folder there that cannot be read
/// as a regular one inside the repository (a symlink, a FIFO, too large, too deep, too
/// many) is an error naming it: the list would be incomplete, and a symlink's target is
/// never read.
pub(super) fn registered(cwd: &Path) -> Result<Option<BTreeMap<String, Spec>>, String> {
    let Ok(root) = crate::repo::discover(cwd) else {
        return Ok(None);
    };
    Model::new(&OnDisk(&root)).kinds()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names() {
        let ok = |k: &str| check_name(k).is_ok();
        assert!(ok("NOTIFY_SHIPMENT"));
        assert!(ok("A1"));
        assert!(ok(&"A".repeat(64)));
        assert!(!ok("notify"));
        assert!(!ok("1A"));
        assert!(!ok(""));
        assert!(!ok(&"A".repeat(65)));
        // The generator's rule, which the queue's own used to let through.
        assert!(!ok("A__B"));
        assert!(!ok("TRAILING_"));
        assert!(!ok("TYPE"), "its handler module would be a keyword");
    }

    /// The kinds are the ones the root registers, read as the checker reads them: a name
    /// written as a const or as `Kind::Variant.as_str()` counts, a spec no `KINDS` element
    /// reaches does not (the substring reader this replaced saw only literals, anywhere).
    #[test]
    fn the_registered_kinds_are_read_as_the_checker_reads_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("agent")).expect("mkdir");
        std::fs::write(root.join("agent/codemap.yml"), "{}\n").expect("write");
        std::fs::create_dir_all(root.join("om/src/shipping")).expect("mkdir");
        std::fs::write(
            root.join("om/src/root.rs"),
            "use crate::shipping::kinds::SHIPPING_KINDS;\n\npub const KINDS: Registry = &[SHIPPING_KINDS];\n",
        )
        .expect("write");
        std::fs::write(
            root.join("om/src/shipping/kinds.rs"),
            r#"const BOOK: &str = "BOOK_PICKUP";
pub const SHIPPING_KINDS: &[WorkKindSpec] = &[
    WorkKindSpec { name: "NOTIFY_SHIPMENT", lane: "notify", ..WorkKindSpec::DEFAULT },
    WorkKindSpec { name: BOOK, ..WorkKindSpec::DEFAULT },
    WorkKindSpec { name: ShippingKind::SendInvoice.as_str(), ..WorkKindSpec::DEFAULT },
];
pub const NOT_REGISTERED: &[WorkKindSpec] = &[
    WorkKindSpec { name: "ORPHAN", ..WorkKindSpec::DEFAULT },
];
"#,
        )
        .expect("write");
        let kinds = registered(root).expect("reads").expect("registers kinds");
        let names: Vec<&str> = kinds.keys().map(String::as_str).collect();
        assert_eq!(names, ["BOOK_PICKUP", "NOTIFY_SHIPMENT", "SEND_INVOICE"]);
        assert_eq!(kinds["NOTIFY_SHIPMENT"].lane.as_deref(), Some("notify"));
        assert_eq!(kinds["NOTIFY_SHIPMENT"].at, "om/src/shipping/kinds.rs:3");
        // `..WorkKindSpec::DEFAULT` with no lane: the default lane, named.
        assert_eq!(kinds["BOOK_PICKUP"].lane.as_deref(), Some("default"));

        // A KINDS element that names no slice: refused, naming it, not guessed around.
        std::fs::write(
            root.join("om/src/root.rs"),
            "pub const KINDS: Registry = &[SHIPPING_KINDS, ELSEWHERE_KINDS];\n",
        )
        .expect("write");
        let err = registered(root).expect_err("refused");
        assert!(err.contains("ELSEWHERE_KINDS"), "{err}");
    }

    /// Only `om/src` is walked (a linked folder beside it, `om/vendor`, is never looked
    /// at), and a tree past the file budget is refused by name rather than held whole.
    #[test]
    fn only_om_src_is_read_and_within_a_budget() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("agent")).expect("mkdir");
        std::fs::write(root.join("agent/codemap.yml"), "{}\n").expect("write");
        std::fs::create_dir_all(root.join("om/src/many")).expect("mkdir");
        std::os::unix::fs::symlink("/usr", root.join("om/vendor")).expect("link");
        std::fs::write(
            root.join("om/src/root.rs"),
            "pub const KINDS: Registry = &[];\n",
        )
        .expect("write");
        assert_eq!(registered(root).expect("om/vendor is not read"), None);
        for i in 0..crate::layout::rust_sources::MAX_FILES {
            std::fs::write(root.join(format!("om/src/many/m{i}.rs")), "").expect("write");
        }
        let err = registered(root).expect_err("past the budget");
        assert!(err.contains("more than 5000 .rs files"), "{err}");
    }
}
