//! The write that starts the work (`scaffold worker … [--from <Manager>::<method>]`): the
//! kind's work row joins the namespace's service write, inferred when the service has one
//! write and refused, with the tree byte-identical, when the named write is missing or
//! the choice is not plain.

use std::fs;

use super::{assert_same, repo, tree};
use crate::common::Test;

const MANAGER: &str = "services/shipping/src/manager.rs";

#[test]
fn the_kind_joins_the_services_one_write_with_its_test() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    for f in [
        "services/shipping/Cargo.toml",
        "services/shipping/src/manager.rs",
        "services/shipping/src/records.rs",
        "services/shipping/tests/manager.rs",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "NOTIFY_SHIPMENT",
            "--format",
            "json",
        ])
        .run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let listed = v.to_string();
    for f in [
        MANAGER,
        "workers/maintenance/Cargo.toml",
        "workers/maintenance/tests/notify_shipment_produced.rs",
        "Cargo.lock",
    ] {
        assert!(listed.contains(f), "{f} in {listed}");
    }
    let manager = fs::read_to_string(dir.join(MANAGER)).expect("manager");
    let marker = manager
        .find("// scaffold:work-rows")
        .expect("the marker stays");
    let row = manager
        .find("ShippingKind::NotifyShipment.as_str()")
        .expect("the row");
    assert!(row > marker, "the row is below the marker");
    let lock = fs::read_to_string(dir.join("Cargo.lock")).expect("lock");
    let maintenance = lock
        .split("\n\n")
        .find(|b| b.contains("name = \"acme-maintenance\""))
        .expect("the worker's entry");
    assert!(
        maintenance.contains("\"acme-shipping-service\""),
        "{maintenance}"
    );

    // A second kind joins the same write, named explicitly this time.
    Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "REINDEX_SHIPMENTS",
            "--from",
            "ShippingManager::record",
        ])
        .run();
    let manager = fs::read_to_string(dir.join(MANAGER)).expect("manager");
    assert!(manager.contains("ShippingKind::ReindexShipments.as_str()"));
}

#[test]
fn a_missing_or_unplain_producer_is_refused_with_the_tree_unchanged() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();

    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "NOTIFY_SHIPMENT",
            "--from",
            "ShippingManager::ship",
        ])
        .status(1)
        .run();
    assert!(
        r.stderr.contains("has no write `ShippingManager::ship`"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("ShippingManager::record"),
        "the candidates: {}",
        r.stderr
    );
    assert_same(
        &tree(&dir),
        &before,
        "a missing --from method changed the tree",
    );

    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "NOTIFY_SHIPMENT",
            "--from",
            "record",
        ])
        .status(1)
        .run();
    assert!(
        r.stderr.contains("is not <Manager>::<method>"),
        "{}",
        r.stderr
    );
    assert_same(&tree(&dir), &before, "a malformed --from changed the tree");

    // A second write: which one starts the kind is no longer plain.
    let path = dir.join(MANAGER);
    let text = fs::read_to_string(&path).expect("manager");
    let second = "\n    /// Cancels a shipment.\n    pub async fn cancel(&self, record: Record) -> Result<Started, StoreError> {\n        let rows: [scaffold_runtime::NewItem; 0] = [\n            // scaffold:work-rows\n        ];\n        let _ = (rows, record);\n        Ok(Vec::new())\n    }\n\n    /// Archives everything.\n    pub async fn archive(&self) -> Result<Started, StoreError> {\n        let rows: [scaffold_runtime::NewItem; 0] = [\n            // scaffold:work-rows\n        ];\n        let _ = rows;\n        Ok(Vec::new())\n    }\n}\n\n/// Adds";
    let text = text.replacen("}\n\n/// Adds", second, 1);
    assert!(
        text.contains("pub async fn cancel"),
        "the second write went in"
    );
    fs::write(&path, text).expect("write");
    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .status(1)
        .run();
    assert!(
        r.stderr.contains("which write starts the kind?"),
        "{}",
        r.stderr
    );
    assert!(
        [
            "ShippingManager::record,",
            "ShippingManager::cancel,",
            "ShippingManager::archive"
        ]
        .iter()
        .all(|w| r.stderr.contains(w)),
        "{}",
        r.stderr
    );
    assert_same(
        &tree(&dir),
        &before,
        "an ambiguous producer changed the tree",
    );

    // A write without the `record` its row is filled from: refused, with the way out.
    let r = Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "NOTIFY_SHIPMENT",
            "--from",
            "ShippingManager::archive",
        ])
        .status(1)
        .run();
    assert!(r.stderr.contains("cannot fill a work row"), "{}", r.stderr);
    assert!(r.stderr.contains("--from none"), "{}", r.stderr);
    assert_same(
        &tree(&dir),
        &before,
        "an unfillable producer changed the tree",
    );

    // `--from none`: a kind no write starts; the manager is left alone.
    let manager_before = fs::read_to_string(&path).expect("manager");
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "SCHEDULED_AUDIT", "--from", "none"])
        .run();
    assert_eq!(fs::read_to_string(&path).expect("manager"), manager_before);
    assert!(
        !dir.join("workers/maintenance/tests/scheduled_audit_produced.rs")
            .exists()
    );
    Test::in_dir(&dir)
        .args([
            "worker",
            "maintenance",
            "NOTIFY_SHIPMENT",
            "--from",
            "ShippingManager::cancel",
        ])
        .run();
    let text = fs::read_to_string(&path).expect("manager");
    let cancel = text.find("pub async fn cancel").expect("cancel");
    let row = text.find("ShippingKind::NotifyShipment").expect("the row");
    assert!(row > cancel, "the row went into cancel, not record");
}

#[test]
fn dry_run_shows_the_producer_as_a_diff() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    let before = tree(&dir);
    let r = Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT", "--dry-run"])
        .run();
    assert!(
        r.stdout.contains(&format!("+++ b/{MANAGER}")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("+                    crate::work_row("),
        "{}",
        r.stdout
    );
    assert_same(&tree(&dir), &before, "--dry-run wrote");
}

#[test]
fn manager_enqueues_fires_on_a_generated_manager_edited_to_enqueue_directly() {
    let (_tmp, dir) = repo();
    Test::in_dir(&dir).args(["namespace", "shipping"]).run();
    Test::in_dir(&dir)
        .args(["worker", "maintenance", "NOTIFY_SHIPMENT"])
        .run();
    Test::in_dir(&dir).args(["check", "--format", "json"]).run();
    let path = dir.join(MANAGER);
    let text = fs::read_to_string(&path).expect("manager");
    let edited = text.replacen(
        "        let store = self.store.clone();\n",
        "        let store = self.store.clone();\n        self.store\n            .enqueue(scaffold_runtime::NewItem::new(\"NOTIFY_SHIPMENT\", serde_json::json!({})))\n            .await?;\n",
        1,
    );
    assert_ne!(edited, text, "the edit applied");
    fs::write(&path, edited).expect("write");
    let r = Test::in_dir(&dir)
        .args(["check", "--format", "json"])
        .status(1)
        .run();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let hits: Vec<&serde_json::Value> = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "manager-enqueues")
        .collect();
    assert_eq!(hits.len(), 1, "{v:#}");
    assert_eq!(hits[0]["path"], MANAGER);
}
