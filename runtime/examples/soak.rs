//! `cargo run --release -p scaffold-runtime --example soak -- URL [ROUNDS] [JOBS]`: the
//! retention soak. Each round enqueues JOBS no-op items and drains them with the benchmark's
//! loop (concurrency 10, fencing on), then deletes the completed items as retention does;
//! prints one JSON line per round, so throughput over ROUNDS × JOBS items can be compared
//! with its start. `--keep` skips the deletion (to see the table grow instead). `purge_ms`
//! is the deletion's time (on PostgreSQL including the vacuum retention runs every 25,000
//! purged rows); it is not part of `drain_ms`.

// An example program reports what it measured.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let keep = args.iter().any(|a| a == "--keep");
    args.retain(|a| a != "--keep");
    let mut args = args.into_iter();
    let url = args
        .next()
        .ok_or("usage: soak URL [ROUNDS] [JOBS] [--keep]")?;
    let rounds: u32 = args.next().map_or(Ok(25), |a| a.parse())?;
    let jobs: u64 = args.next().map_or(Ok(20_000), |a| a.parse())?;
    let store = scaffold_runtime::Store::open(&url).await?;
    store.migrate().await?;
    for round in 1..=rounds {
        let report = scaffold_runtime::bench::run(&store, jobs, 10).await?;
        let mut purged = 0;
        let t = std::time::Instant::now();
        if !keep {
            loop {
                let n = store.purge_completed(Duration::ZERO, 5_000).await?;
                purged += n;
                if n < 5_000 {
                    break;
                }
            }
        }
        println!(
            "{{\"round\":{round},\"items_so_far\":{},\"jobs_per_sec\":{},\"drain_ms\":{},\"enqueue_ms\":{},\"purged\":{purged},\"purge_ms\":{}}}",
            u64::from(round) * jobs,
            report.jobs_per_sec,
            report.drain_ms,
            report.enqueue_ms,
            t.elapsed().as_millis()
        );
    }
    Ok(())
}
