//! Resources: a handler reaches a provider's client through its context, the loop refuses
//! to build without a declared one, a lazily built one reads nothing at build and fails
//! the worker at start (`init_resources`), and `run_twice` hands a twin to the handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use scaffold_runtime::testing::{MemoryContainer, item, run_twice};
use scaffold_runtime::{
    BuildError, Item, ItemState, Needs, NewItem, ResourceError, WorkContext, WorkError,
    WorkHandler, WorkKindSpec, WorkLoop,
};

static KINDS: &[&[WorkKindSpec]] = &[&[WorkKindSpec {
    name: "SEND",
    permission: "mail.send",
    ..WorkKindSpec::DEFAULT
}]];

/// A provider's client, as the handler sees it.
#[derive(Debug, Default)]
struct Mailer {
    sent: AtomicUsize,
}

struct SendMail;

impl WorkHandler for SendMail {
    type Payload = serde_json::Value;
    const KIND: &'static str = "SEND";
    const REQUIRES: &'static [&'static str] = &["mail.send"];

    fn needs(needs: &mut Needs) {
        needs.add::<Mailer>();
    }

    async fn handle(&self, ctx: &WorkContext, _: &Item<Self::Payload>) -> Result<(), WorkError> {
        let mailer = ctx.resource::<Mailer>()?;
        ctx.once("send", |_| async move {
            Ok(mailer.sent.fetch_add(1, Ordering::SeqCst))
        })
        .await?;
        Ok(())
    }
}

#[test]
fn build_refuses_a_handler_whose_resource_is_not_registered() {
    let c = MemoryContainer::new();
    let err = WorkLoop::builder(c.store, KINDS)
        .handler(SendMail)
        .build()
        .expect_err("no Mailer on the loop");
    assert!(
        matches!(&err, BuildError::MissingResource { kind, resource } if kind == "SEND" && resource.ends_with("Mailer")),
        "{err}"
    );
}

#[test]
fn a_lazy_resource_reads_nothing_at_build_and_fails_the_worker_at_start() {
    let c = MemoryContainer::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let work = WorkLoop::builder(c.store, KINDS)
        .handler(SendMail)
        .resource_with(move || -> Result<Mailer, String> {
            seen.fetch_add(1, Ordering::SeqCst);
            Err("ACME_MAILER_IMPL is unset: set it to `http` or `twin`".to_owned())
        })
        .build()
        .expect("declared, so it builds");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "build reads no setting");
    let err = work.init_resources().expect_err("the setting is missing");
    assert!(
        matches!(&err, ResourceError::Failed { reason, .. } if reason.contains("ACME_MAILER_IMPL")),
        "{err}"
    );
}

#[tokio::test]
async fn the_loop_hands_its_resource_to_the_handler() {
    let c = MemoryContainer::new();
    let id = c
        .store
        .enqueue(NewItem::new("SEND", serde_json::json!({})))
        .await
        .expect("enqueue");
    let work = WorkLoop::builder(c.store.clone(), KINDS)
        .handler(SendMail)
        .resource_with(|| Ok(Mailer::default()))
        .relay_outbox(false)
        .poll_interval(Duration::from_millis(5))
        .build()
        .expect("build");
    work.init_resources().expect("built");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = {
        let work = work.clone();
        tokio::spawn(async move {
            work.run(async {
                let _ = stopped.await;
            })
            .await
        })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let done = loop {
        let record = c.store.get(id).await.expect("get").expect("the item");
        if record.state == ItemState::Completed {
            break record;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not completed: {record:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let _ = stop.send(());
    running.await.expect("joined").expect("ran");
    assert_eq!(done.attempt, 1);
    assert_eq!(
        c.store.effect(id, "send").await.expect("effect"),
        Some(serde_json::json!(0)),
        "the handler called the loop's client once"
    );
}

#[tokio::test]
async fn run_twice_gives_the_handler_the_containers_twin_and_a_missing_one_is_permanent() {
    let c = MemoryContainer::new().with_resource(Mailer::default());
    let done = run_twice(&c, &SendMail, item("SEND", serde_json::json!({})))
        .await
        .expect("both runs succeed");
    assert_eq!(done.state, ItemState::Completed);
    let mailer = c.resources.get::<Mailer>().expect("the twin");
    assert_eq!(mailer.sent.load(Ordering::SeqCst), 1, "sent once");

    let bare = MemoryContainer::new();
    let err = run_twice(&bare, &SendMail, item("SEND", serde_json::json!({})))
        .await
        .expect_err("no Mailer");
    assert!(
        matches!(&err, WorkError::Permanent(m) if m.contains("Mailer")),
        "{err}"
    );
}
