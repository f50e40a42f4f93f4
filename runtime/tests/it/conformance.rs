//! The conformance suite on every backend this crate ships.

use scaffold_runtime::testing::conformance::TestBackend;
use scaffold_runtime::{ManualClock, Store};

mod memory {
    use super::*;

    async fn make() -> TestBackend {
        let clock = ManualClock::starting_now();
        let store = Store::open_with_clock("memory://", clock.clone())
            .await
            .expect("the memory backend opens");
        TestBackend {
            store,
            clock,
            guard: Box::new(()),
            worker: None,
            other_worker: None,
        }
    }

    scaffold_runtime::conformance_suite!(make);
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;

    async fn make() -> TestBackend {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let url = format!("sqlite://{}", dir.path().join("queue.db").display());
        let clock = ManualClock::starting_now();
        let store = Store::open_with_clock(&url, clock.clone() as std::sync::Arc<_>)
            .await
            .expect("the sqlite backend opens");
        TestBackend {
            store,
            clock,
            guard: Box::new(dir),
            worker: None,
            other_worker: None,
        }
    }

    scaffold_runtime::conformance_suite!(make);
}
