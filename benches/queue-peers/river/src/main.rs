//! River drain benchmark for `benches/queue-peers.sh`:
//! `river-bench DATABASE_URL JOBS [CONCURRENCY]`.
//!
//! Migrates River's schema in the (fresh) database, inserts JOBS no-op jobs with one
//! `insert_many`, then starts one client with one queue of `max_workers` CONCURRENCY and the
//! fetch timings of River's own benchmark (cooldown 2 ms, poll 20 ms), and times from just
//! before `start()` until JOBS `JobCompleted` events (a lagged receiver's dropped events
//! count too). Prints one JSON line.

use std::error::Error;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use riverqueue::sqlx::postgres::PgPoolOptions;
use riverqueue::{
    BoxError, Client, EventKind, EventRecvError, Job, JobArgs, QueueConfig, SubscribeConfig,
    WorkContext, WorkOutcome, Workers, migrate::PostgresMigrator,
};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, JobArgs, Serialize)]
#[river(kind = "noop")]
struct Noop {
    i: u64,
}

async fn noop(_: WorkContext, _: Job<Noop>) -> Result<WorkOutcome, BoxError> {
    Ok(WorkOutcome::Complete)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: river-bench DATABASE_URL JOBS [CONCURRENCY]")?;
    let jobs: u64 = args.next().ok_or("JOBS missing")?.parse()?;
    let concurrency: usize = args.next().map_or(Ok(10), |a| a.parse())?;
    let pool = PgPoolOptions::new().max_connections(10).connect(&url).await?;
    PostgresMigrator::new(pool.clone()).migrate_up().await?;
    let mut workers = Workers::new();
    workers.add_fn(noop)?;
    let client = Client::builder(pool.clone())
        .workers(workers)
        .fetch_cooldown(Duration::from_millis(2))
        .queue(
            "default",
            QueueConfig::new(concurrency).with_fetch_poll_interval(Duration::from_millis(20)),
        )
        .build()?;

    let t0 = Instant::now();
    for chunk in (0..jobs).collect::<Vec<_>>().chunks(10_000) {
        client.insert_many(chunk.iter().map(|&i| Noop { i })).await?;
    }
    let enqueue = t0.elapsed();

    let mut events = client.subscribe_config(
        SubscribeConfig::new([EventKind::JobCompleted])?
            .with_buffer_capacity(NonZeroUsize::new(100_000).ok_or("capacity")?),
    )?;
    let t1 = Instant::now();
    let mut run = client.start()?;
    let mut done = 0u64;
    while done < jobs {
        match events.recv().await {
            Ok(_) => done += 1,
            Err(EventRecvError::Lagged(n)) => done += n,
            Err(e) => return Err(e.into()),
        }
    }
    let drain = t1.elapsed();
    run.stop().await?;
    let left: i64 = riverqueue::sqlx::query_scalar(
        "SELECT count(*) FROM river_job WHERE state <> 'completed'",
    )
    .fetch_one(&pool)
    .await?;
    println!(
        "{{\"peer\":\"river\",\"version\":\"riverqueue 0.5.0\",\"jobs\":{jobs},\"concurrency\":{concurrency},\"enqueue_ms\":{},\"drain_ms\":{},\"jobs_per_sec\":{},\"left_in_queue\":{left}}}",
        enqueue.as_millis(),
        drain.as_millis(),
        (jobs as f64 / drain.as_secs_f64()) as u64
    );
    Ok(())
}
