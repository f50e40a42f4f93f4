//! A coordinator on `127.0.0.1:0` over a fresh store, an HTTP client that speaks the
//! protocol, enrolled devices, and the logs of every test in this binary.

#![allow(dead_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ed25519_dalek::{Signer, SigningKey};
use scaffold_runtime::Store;
use scaffold_runtime::coordinator::{
    Bound, Config, Coordinator, CoordinatorError, EnrollOptions, Transport, enroll, tokens,
};
use serde_json::{Value, json};

/// Every line any test of this binary logged.
pub fn logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buf);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || LogWriter(Arc::clone(&sink)))
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
        buf
    })
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A running coordinator.
pub struct Server {
    pub addr: SocketAddr,
    pub origin: String,
    pub store: Store,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), CoordinatorError>>>,
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    /// Over a fresh store: a SQLite file (the memory store in a build without SQLite).
    pub async fn fresh() -> Server {
        Self::fresh_with(|_| {}).await
    }

    /// [`Server::fresh`], its configuration changed by `tune`.
    pub async fn fresh_with(tune: impl FnOnce(&mut Config)) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = if cfg!(feature = "sqlite") {
            format!("sqlite://{}", dir.path().join("q.db").display())
        } else {
            "memory://".to_owned()
        };
        let store = Store::open(&url).await.expect("open");
        store.migrate().await.expect("migrate");
        let mut s = Self::start(store, tune).await;
        s._dir = Some(dir);
        s
    }

    /// Over `store` (migrated).
    pub async fn start(store: Store, tune: impl FnOnce(&mut Config)) -> Server {
        logs();
        let mut config = Config::new(
            "127.0.0.1:0".parse().expect("addr"),
            Transport::InsecureLoopback,
        );
        config.sweep_interval = Duration::from_millis(100);
        tune(&mut config);
        let bound: Bound = Coordinator::new(store.clone(), config)
            .expect("config")
            .bind()
            .await
            .expect("bind");
        let (addr, origin) = (bound.local_addr(), bound.origin().to_owned());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(bound.run(async {
            let _ = rx.await;
        }));
        Server {
            addr,
            origin,
            store,
            stop: Some(tx),
            task: Some(task),
            _dir: None,
        }
    }

    pub fn http(&self) -> Http {
        Http::new(&format!("http://{}", self.addr))
    }

    /// Shuts down gracefully; returns what `run` returned.
    pub async fn stop(mut self) -> Result<(), CoordinatorError> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(t) => t.await.expect("the coordinator's task"),
            None => Ok(()),
        }
    }

    /// A fresh enrollment token.
    pub async fn token(&self, worker: &str, account: &str, kinds: Option<&[&str]>) -> String {
        enroll(
            &self.store,
            &EnrollOptions {
                worker: worker.to_owned(),
                account: account.to_owned(),
                kinds: kinds.map(|k| k.iter().map(|s| (*s).to_owned()).collect()),
                ttl: Duration::from_secs(900),
            },
        )
        .await
        .expect("enroll")
        .token
    }

    /// A device enrolled as `worker` with a live session.
    pub async fn device(&self, worker: &str, account: &str, kinds: Option<&[&str]>) -> Device {
        let token = self.token(worker, account, kinds).await;
        let http = self.http();
        let key = SigningKey::generate(&mut rand_core::OsRng);
        let (status, body) = http
            .post(
                "/v1/enroll",
                json!({
                    "token": token,
                    "worker_name": worker,
                    "public_key": tokens::b64(key.verifying_key().as_bytes()),
                    "protocol": {"min": 1, "max": 1},
                }),
                None,
            )
            .await;
        assert_eq!(status, 200, "enroll: {body}");
        let id = body["worker_id"].as_str().expect("worker_id").to_owned();
        let session = open_session(&http, &self.origin, &id, &key).await;
        Device {
            id,
            key,
            session,
            http,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// A challenge signed with `key` for the coordinator at `origin`: the session token.
pub async fn open_session(http: &Http, origin: &str, id: &str, key: &SigningKey) -> String {
    let (status, challenge) = http
        .post("/v1/session/challenge", json!({"worker_id": id}), None)
        .await;
    assert_eq!(status, 200, "challenge: {challenge}");
    let nonce = challenge["nonce"].as_str().expect("nonce");
    let raw = tokens::unb64(nonce).expect("base64url nonce");
    let signature = key.sign(&tokens::session_message(id, &raw, origin));
    let (status, session) = http
        .post(
            "/v1/session",
            json!({"worker_id": id, "nonce": nonce, "signature": tokens::b64(&signature.to_bytes())}),
            None,
        )
        .await;
    assert_eq!(status, 200, "session: {session}");
    session["token"].as_str().expect("token").to_owned()
}

/// An enrolled device with a session.
pub struct Device {
    pub id: String,
    pub key: SigningKey,
    pub session: String,
    pub http: Http,
}

impl Device {
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.http.post(path, body, Some(&self.session)).await
    }

    /// Claims up to `max` jobs of `lane` without waiting.
    pub async fn claim(&self, lane: &str, max: u32) -> Vec<Value> {
        let (status, body) = self
            .post(
                "/v1/jobs/claim",
                json!({"lane": lane, "max": max, "wait_ms": 0}),
            )
            .await;
        assert_eq!(status, 200, "claim: {body}");
        body["jobs"].as_array().cloned().unwrap_or_default()
    }
}

/// A protocol client: JSON bodies, `Scaffold-Protocol` on every call.
#[derive(Clone)]
pub struct Http {
    pub client: reqwest::Client,
    pub base: String,
    pub version: i64,
}

impl Http {
    pub fn new(base: &str) -> Http {
        Http {
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            base: base.to_owned(),
            version: 1,
        }
    }

    pub fn speaking(mut self, version: i64) -> Http {
        self.version = version;
        self
    }

    pub async fn post(&self, path: &str, body: Value, bearer: Option<&str>) -> (u16, Value) {
        self.send(
            self.client.post(format!("{}{path}", self.base)).json(&body),
            bearer,
        )
        .await
    }

    pub async fn get(&self, path: &str, bearer: Option<&str>) -> (u16, Value) {
        self.send(self.client.get(format!("{}{path}", self.base)), bearer)
            .await
    }

    pub async fn send(&self, req: reqwest::RequestBuilder, bearer: Option<&str>) -> (u16, Value) {
        let mut req = req.header("Scaffold-Protocol", self.version.to_string());
        if let Some(t) = bearer {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.expect("the coordinator answers");
        let status = r.status().as_u16();
        let text = r.text().await.expect("body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, body)
    }
}

/// The `error` code of a refusal.
pub fn code(body: &Value) -> &str {
    body["error"].as_str().unwrap_or("")
}
