//! The conformance suite's worker-side cases on the remote backend (the list is
//! `remote_conformance_suite!`, in `testing::conformance`): each case's worker is a remote
//! store enrolled with a real coordinator on `127.0.0.1:0`, over SQLite and over
//! PostgreSQL (and over the memory store), and the case's operator side goes through a direct store on the same
//! database. The coordinator and the worker read one manual clock, so a case moves time for
//! both; the coordinator's own sweeper is kept out of the way (the cases sweep when they
//! mean to).

#![cfg(all(feature = "coordinator", feature = "remote"))]

use std::sync::Arc;
use std::time::Duration;

use scaffold_runtime::coordinator::{Config, Coordinator, EnrollOptions, Transport, enroll};
use scaffold_runtime::store::remote::RemoteConfig;
use scaffold_runtime::testing::conformance::TestBackend;
use scaffold_runtime::{ManualClock, Store};

/// What a case's backend keeps alive: the coordinator (stopped when dropped), the state
/// directory, and the database's own guard.
struct Alive {
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: tempfile::TempDir,
    _db: Box<dyn std::any::Any + Send>,
}

/// How a case's coordinator leases and retries.
#[derive(Clone, Copy)]
enum Leases {
    /// The suite's `LEASE` (30 s) and the default back-off: the store-level cases.
    Suite,
    /// 300 ms and no back-off: the loop cases' lease and retry policy.
    Loop,
}

/// A coordinator over `store` (on `clock`) and a remote worker enrolled with it.
async fn over(
    store: Store,
    clock: Arc<ManualClock>,
    db: Box<dyn std::any::Any + Send>,
    leases: Leases,
) -> TestBackend {
    store.migrate().await.expect("migrate");
    let mut config = Config::new(
        "127.0.0.1:0".parse().expect("addr"),
        Transport::InsecureLoopback,
    );
    // The cases' lease, and no sweep of the coordinator's own in a case's way.
    match leases {
        Leases::Suite => config.lease = Duration::from_secs(30),
        Leases::Loop => {
            config.lease = Duration::from_millis(300);
            config.retry = scaffold_runtime::RetryPolicy {
                base: Duration::ZERO,
                cap: Duration::ZERO,
            };
        }
    }
    config.sweep_interval = Duration::from_secs(3600);
    let bound = Coordinator::new(store.clone(), config)
        .expect("config")
        .bind()
        .await
        .expect("bind");
    let origin = bound.origin().to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(bound.run(async {
        let _ = stopped.await;
    }));
    let dir = tempfile::tempdir().expect("tempdir");
    let worker = enrolled(&store, &clock, &origin, dir.path(), "conformance").await;
    // The loop cases with two workers get a second device.
    let other_worker = match leases {
        Leases::Loop => Some(enrolled(&store, &clock, &origin, dir.path(), "other").await),
        Leases::Suite => None,
    };
    TestBackend {
        store,
        clock,
        guard: Box::new(Alive {
            _stop: stop,
            _dir: dir,
            _db: db,
        }),
        worker: Some(worker),
        other_worker,
    }
}

/// A remote store enrolled as `name` with the coordinator at `origin`, its state under `dir`.
async fn enrolled(
    store: &Store,
    clock: &Arc<ManualClock>,
    origin: &str,
    dir: &std::path::Path,
    name: &str,
) -> Store {
    let token = enroll(
        store,
        &EnrollOptions {
            worker: name.to_owned(),
            account: "default".to_owned(),
            kinds: None,
            ttl: Duration::from_secs(900),
        },
    )
    .await
    .expect("enroll");
    let token_file = dir.join(format!("{name}.token"));
    std::fs::write(&token_file, &token.token).expect("token file");
    let remote = Store::open_remote_with_clock(
        RemoteConfig::new(origin, dir.join(name), name).token_file(&token_file),
        clock.clone(),
    )
    .await
    .expect("the remote store opens");
    assert!(!token_file.exists(), "the spent token file is deleted");
    remote
}

/// Over the memory store (the coordinator keeps its tables there too): what a build with no
/// database driver runs.
mod memory {
    use super::*;

    async fn make_with(leases: Leases) -> TestBackend {
        let clock = ManualClock::starting_now();
        let store = Store::open_with_clock("memory://", clock.clone() as Arc<_>)
            .await
            .expect("the memory backend opens");
        over(store, clock, Box::new(()), leases).await
    }

    async fn make() -> TestBackend {
        make_with(Leases::Suite).await
    }

    async fn make_loop() -> TestBackend {
        make_with(Leases::Loop).await
    }

    scaffold_runtime::remote_conformance_suite!(
        make,
        make_loop,
        run_if = scaffold_runtime::testing::conformance::always
    );
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;

    async fn make_with(leases: Leases) -> TestBackend {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let url = format!("sqlite://{}", dir.path().join("queue.db").display());
        let clock = ManualClock::starting_now();
        let store = Store::open_with_clock(&url, clock.clone() as Arc<_>)
            .await
            .expect("the sqlite backend opens");
        over(store, clock, Box::new(dir), leases).await
    }

    async fn make() -> TestBackend {
        make_with(Leases::Suite).await
    }

    async fn make_loop() -> TestBackend {
        make_with(Leases::Loop).await
    }

    scaffold_runtime::remote_conformance_suite!(
        make,
        make_loop,
        run_if = scaffold_runtime::testing::conformance::always
    );
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use crate::pg_common::{database_named, fresh_url};

    async fn make_with(leases: Leases) -> TestBackend {
        let (url, guard) = fresh_url("&pool_size=4");
        let clock = ManualClock::starting_now();
        let store = Store::open_with_clock(&url, clock.clone() as Arc<_>)
            .await
            .expect("the postgres backend opens");
        over(store, clock, Box::new(guard), leases).await
    }

    async fn make() -> TestBackend {
        make_with(Leases::Suite).await
    }

    async fn make_loop() -> TestBackend {
        make_with(Leases::Loop).await
    }

    scaffold_runtime::remote_conformance_suite!(make, make_loop, run_if = database_named);
}
