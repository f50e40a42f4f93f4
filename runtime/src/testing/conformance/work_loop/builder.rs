//! Conformance: what `WorkLoop::builder` refuses (unknown kinds, missing handlers,
//! permissions not granted, zero concurrency) and the lanes it serves.

use std::future::Future;

use serde_json::Value;

use super::super::{TestBackend, fresh, ok};
use super::{FlakyHandler, JobHandler, REGISTRY, hang};
use crate::context::WorkContext;
use crate::error::{BuildError, WorkError};
use crate::handler::WorkHandler;
use crate::item::Item;
use crate::work_loop::WorkLoop;

struct WrongPermission;
impl WorkHandler for WrongPermission {
    type Payload = Value;
    const KIND: &'static str = "JOB";
    const REQUIRES: &'static [&'static str] = &["something.else"];
    async fn handle(&self, _: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        Ok(())
    }
}

struct Unregistered;
impl WorkHandler for Unregistered {
    type Payload = Value;
    const KIND: &'static str = "NOT_REGISTERED";
    const REQUIRES: &'static [&'static str] = &[];
    async fn handle(&self, _: &WorkContext, _: &Item<Value>) -> Result<(), WorkError> {
        Ok(())
    }
}

pub async fn loop_build_refusals<F: Fn() -> Fut, Fut: Future<Output = TestBackend>>(make: F) {
    let b = fresh(make).await;
    let s = || b.store.clone();
    let r = WorkLoop::builder(s(), REGISTRY)
        .handler(JobHandler::default())
        .handler(FlakyHandler)
        .handler(Unregistered)
        .build();
    assert!(matches!(r, Err(BuildError::UnknownKind { kind }) if kind == "NOT_REGISTERED"));
    let r = WorkLoop::builder(s(), REGISTRY)
        .handler(JobHandler::default())
        .build();
    assert!(matches!(r, Err(BuildError::MissingHandler { kind, .. }) if kind == "FLAKY"));
    let r = WorkLoop::builder(s(), REGISTRY)
        .handler(WrongPermission)
        .handler(FlakyHandler)
        .build();
    assert!(
        matches!(r, Err(BuildError::PermissionNotGranted { permission, .. }) if permission == "jobs.run")
    );
    let r = WorkLoop::builder(s(), REGISTRY)
        .handler(JobHandler::default())
        .handler(FlakyHandler)
        .concurrency(0)
        .build();
    assert!(matches!(r, Err(BuildError::ZeroConcurrency)));
    let built = WorkLoop::builder(s(), REGISTRY)
        .handler(JobHandler::default())
        .handler(FlakyHandler)
        .lane("default")
        .build();
    assert!(
        built.is_ok(),
        "HANG rides lane `slow`, which this loop does not serve"
    );
    let by_spec = ok(
        WorkLoop::builder(s(), REGISTRY).handler(hang()).build(),
        "build",
    );
    assert_eq!(
        by_spec.lanes(),
        ["slow".to_owned()],
        "with no lane given, the specs' lanes"
    );
    let slow = WorkLoop::builder(s(), REGISTRY).lane("slow").build();
    assert!(matches!(slow, Err(BuildError::MissingHandler { kind, .. }) if kind == "HANG"));
}
