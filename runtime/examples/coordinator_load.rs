//! `cargo run --release -p scaffold-runtime --example coordinator_load -- URL [JOBS] [CLIENTS]`:
//! the coordinator alone under load. Enqueues JOBS no-op items on a fresh queue at URL,
//! starts a coordinator on 127.0.0.1:0 over it, enrolls CLIENTS remote workers, and has each
//! claim batches of 100 and complete them in one batch call (`POST /v1/jobs/complete`) over
//! loopback until the queue is drained; prints one JSON line (`jobs_per_sec` over the drain).
//! `benches/coordinator-load.sh` runs it beside `scaffold queue bench` on the same database.

// An example program reports what it measured.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::{Duration, Instant};

use ed25519_dalek::{Signer, SigningKey};
use scaffold_runtime::coordinator::{
    Config, Coordinator, EnrollOptions, Transport, enroll, tokens,
};
use scaffold_runtime::{NewItem, Store};
use serde_json::{Value, json};

const BATCH: u64 = 100;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: coordinator_load URL [JOBS] [CLIENTS]")?;
    let jobs: u64 = args.next().map_or(Ok(20_000), |a| a.parse())?;
    let clients: usize = args.next().map_or(Ok(4), |a| a.parse())?;
    let store = Store::open(&url).await?;
    store.migrate().await?;
    let items: Vec<NewItem> = (0..jobs)
        .map(|i| NewItem::new("BENCH_NOOP", json!({ "i": i })).lane("bench"))
        .collect();
    for chunk in items.chunks(50_000) {
        store.enqueue_many(chunk.to_vec()).await?;
    }
    let mut config = Config::new("127.0.0.1:0".parse()?, Transport::InsecureLoopback);
    config.lease = Duration::from_secs(60);
    config.limits.per_address_per_minute = 10_000;
    let bound = Coordinator::new(store.clone(), config)?.bind().await?;
    let base = format!("http://{}", bound.local_addr());
    let origin = bound.origin().to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(bound.run(async {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let mut sessions = Vec::new();
    for n in 0..clients {
        sessions.push(session(&http, &base, &origin, &store, &format!("load-{n}")).await?);
    }
    let t0 = Instant::now();
    let workers: Vec<_> = sessions
        .into_iter()
        .map(|token| {
            let (http, base) = (http.clone(), base.clone());
            tokio::spawn(async move { drain(&http, &base, &token).await })
        })
        .collect();
    let mut completed = 0u64;
    for w in workers {
        completed += w.await??;
    }
    let secs = t0.elapsed().as_secs_f64();
    let _ = stop.send(());
    server.await??;
    println!(
        "{}",
        json!({
            "backend": store.backend_name(),
            "path": "coordinator",
            "jobs": jobs,
            "clients": clients,
            "completed": completed,
            "drain_ms": (secs * 1000.0) as u64,
            "jobs_per_sec": (completed as f64 / secs) as u64,
        })
    );
    Ok(())
}

/// An enrolled device's session token.
async fn session(
    http: &reqwest::Client,
    base: &str,
    origin: &str,
    store: &Store,
    name: &str,
) -> Result<String, Error> {
    let token = enroll(
        store,
        &EnrollOptions {
            worker: name.to_owned(),
            account: scaffold_runtime::DEFAULT_ACCOUNT.to_owned(),
            kinds: None,
            ttl: Duration::from_secs(600),
        },
    )
    .await?
    .token;
    let key = SigningKey::generate(&mut rand_core::OsRng);
    let enrolled: Value = post(
        http,
        base,
        "/v1/enroll",
        None,
        json!({
            "token": token, "worker_name": name,
            "public_key": tokens::b64(key.verifying_key().as_bytes()),
            "protocol": {"min": 1, "max": 1},
        }),
    )
    .await?;
    let id = enrolled["worker_id"]
        .as_str()
        .ok_or("no worker id")?
        .to_owned();
    let challenge = post(
        http,
        base,
        "/v1/session/challenge",
        None,
        json!({"worker_id": id}),
    )
    .await?;
    let nonce = challenge["nonce"].as_str().ok_or("no nonce")?;
    let raw = tokens::unb64(nonce).ok_or("bad nonce")?;
    let signature = key.sign(&tokens::session_message(&id, &raw, origin));
    let session = post(
        http,
        base,
        "/v1/session",
        None,
        json!({
            "worker_id": id, "nonce": nonce, "signature": tokens::b64(&signature.to_bytes()),
        }),
    )
    .await?;
    Ok(session["token"].as_str().ok_or("no session")?.to_owned())
}

async fn post(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    bearer: Option<&str>,
    body: Value,
) -> Result<Value, Error> {
    let mut req = http
        .post(format!("{base}{path}"))
        .header("Scaffold-Protocol", "1")
        .json(&body);
    if let Some(t) = bearer {
        req = req.bearer_auth(t);
    }
    let r = req.send().await?;
    let status = r.status();
    let v: Value = r.json().await?;
    if !status.is_success() {
        return Err(format!("{path}: {status} {v}").into());
    }
    Ok(v)
}

/// Claims batches and completes each in one call until a claim comes back empty.
async fn drain(http: &reqwest::Client, base: &str, token: &str) -> Result<u64, Error> {
    let mut done = 0;
    loop {
        let claimed = post(
            http,
            base,
            "/v1/jobs/claim",
            Some(token),
            json!({"lane": "bench", "max": BATCH, "wait_ms": 0}),
        )
        .await?;
        let jobs: Vec<Value> = claimed["jobs"].as_array().cloned().unwrap_or_default();
        if jobs.is_empty() {
            return Ok(done);
        }
        let batch: Vec<Value> = jobs
            .iter()
            .map(|j| json!({"job": j["job"], "fence": j["fence"]}))
            .collect();
        let answer = post(
            http,
            base,
            "/v1/jobs/complete",
            Some(token),
            json!({"jobs": batch}),
        )
        .await?;
        done += answer["results"].as_array().map_or(0, |r| {
            r.iter().filter(|x| x["status"] == 204).count() as u64
        });
    }
}
