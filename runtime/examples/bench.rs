//! `cargo run --release -p scaffold-runtime --example bench -- [JOBS] [CONCURRENCY]`: the
//! queue benchmark on a fresh SQLite file in a temporary directory.

// An example program reports what it measured.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let jobs: u64 = args.next().map_or(Ok(20_000), |a| a.parse())?;
    let concurrency: usize = args.next().map_or(Ok(10), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let store = scaffold_runtime::Store::open(&url).await?;
    store.migrate().await?;
    let report = scaffold_runtime::bench::run(&store, jobs, concurrency).await?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
