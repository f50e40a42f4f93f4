//! The conformance suite on PostgreSQL. Each test runs in a fresh schema of the database
//! `SCAFFOLD_TEST_DATABASE_URL` names (tests run in parallel), dropped when the test ends.
//! Without the variable every test prints that it was skipped and returns.

// The PostgreSQL backend: left out of a build without it.
#![cfg(feature = "postgres")]

use std::sync::Arc;

use scaffold_runtime::testing::conformance::TestBackend;
use scaffold_runtime::{ManualClock, Store};

mod postgres {
    use super::*;
    use crate::pg_common::{database_named, fresh_url};

    async fn make() -> TestBackend {
        let (url, guard) = fresh_url("&pool_size=4");
        let clock = ManualClock::starting_now();
        let store = Store::open_with_clock(&url, clock.clone() as Arc<_>)
            .await
            .expect("the postgres backend opens");
        assert_eq!(store.backend_name(), "postgres");
        TestBackend {
            store,
            clock,
            guard: Box::new(guard),
            worker: None,
            other_worker: None,
        }
    }

    scaffold_runtime::conformance_suite!(make, run_if = database_named);
}
