//! The dashboard, tried over HTTP against the real server on `127.0.0.1:0` with an
//! independent client: every page, the headers every answer carries, escaping, the Host
//! check, finding and paging, read-only without a session, sign-in, every action refused
//! without the session, without the CSRF token and cross-origin, then done and recorded
//! under the operator's name, the live stream, and shutdown with a stream open.

use std::time::Duration;

use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};
use reqwest::{Client, StatusCode, redirect};
use scaffold_runtime::dashboard::{self, Config};
use scaffold_runtime::item::{ItemState, NewItem, Outcome, WorkerRecord, WorkerState};
use scaffold_runtime::store::Store;
use serde_json::json;

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

struct Running {
    base: String,
    client: Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

async fn start(store: Store, show_payloads: bool) -> Running {
    let mut config = Config::new("127.0.0.1:0".parse().expect("addr"));
    config.poll = Duration::from_millis(50);
    config.show_payloads = show_payloads;
    config.shutdown_grace = Duration::from_secs(2);
    let bound = dashboard::bind(store.clone(), config).await.expect("bind");
    let base = format!("http://{}", bound.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        bound
            .run(async {
                let _ = stopped.await;
            })
            .await
            .expect("dashboard ran");
    });
    let client = Client::builder()
        .redirect(redirect::Policy::none())
        .build()
        .expect("client");
    Running {
        base,
        client,
        stop: Some(stop),
        task,
    }
}

impl Running {
    async fn get(&self, path: &str, cookie: Option<&str>) -> (StatusCode, HeaderMap, String) {
        let mut req = self.client.get(format!("{}{path}", self.base));
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        let r = req.send().await.expect("GET");
        let (status, headers) = (r.status(), r.headers().clone());
        (status, headers, r.text().await.expect("body"))
    }

    async fn post(
        &self,
        path: &str,
        cookie: Option<&str>,
        origin: Option<&str>,
        form: &[(&str, &str)],
    ) -> (StatusCode, HeaderMap, String) {
        let body: String = form
            .iter()
            .map(|(k, v)| {
                format!(
                    "{k}={}",
                    v.bytes()
                        .map(|b| if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                            (b as char).to_string()
                        } else {
                            format!("%{b:02X}")
                        })
                        .collect::<String>()
                )
            })
            .collect::<Vec<_>>()
            .join("&");
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        let r = req.send().await.expect("POST");
        let (status, headers) = (r.status(), r.headers().clone());
        (status, headers, r.text().await.expect("body"))
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .expect("the dashboard stops within its grace")
            .expect("joined");
    }
}

/// The CSRF token a page's forms carry.
fn csrf(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    html[at..at + 64].to_owned()
}

async fn seeded() -> (Store, i64, i64, i64) {
    let store = Store::open("memory://").await.expect("store");
    store.migrate().await.expect("migrate");
    let mut ids = Vec::new();
    for i in 0..60 {
        let mut item = NewItem::new(
            "NOTIFY_SHIPMENT",
            json!({"order": i, "card": "4242424242424242"}),
        );
        item = item.dedupe_key(format!("order-{i}"));
        ids.push(store.enqueue(item).await.expect("enqueue"));
    }
    let mut hostile = NewItem::new("NOTIFY_SHIPMENT", json!({}));
    hostile.lane = "<b>mail</b>".to_owned();
    store.enqueue(hostile).await.expect("enqueue hostile lane");
    // Two claimed: one goes dead, one stays running under w-1.
    let claimed = store
        .claim_as("w-1", "default", 2, Duration::from_secs(30))
        .await
        .expect("claim");
    let (dead, running) = (claimed[0].item.id, claimed[1].item.id);
    store
        .fail(
            &claimed[0].held(),
            Outcome::Dead {
                error: "carrier said <no>".into(),
            },
        )
        .await
        .expect("dead");
    let now = store.now();
    store
        .put_worker(WorkerRecord {
            id: "w-1".into(),
            lanes: vec!["default".into()],
            state: WorkerState::Online,
            started_at: now,
            last_seen_at: now,
            lease_ms: 30_000,
        })
        .await
        .expect("worker");
    (store, dead, running, ids[59])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_read_only_escaped_and_carry_the_headers() {
    let (store, dead, running, newest) = seeded().await;
    let d = start(store, false).await;
    for path in [
        "/",
        "/items",
        &format!("/items/{dead}"),
        &format!("/items/{running}"),
        "/workers",
        "/outbox",
        "/login",
    ] {
        let (status, headers, html) = d.get(path, None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {html}");
        assert_eq!(headers["content-security-policy"], CSP, "{path}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(headers["referrer-policy"], "same-origin", "{path}");
        // No inline script: the only script is the shipped file.
        assert_eq!(html.matches("<script").count(), 1, "{path}");
        assert!(
            html.contains("<script src=\"/assets/app.js\" defer></script>"),
            "{path}"
        );
        assert!(
            !html.contains(" style="),
            "{path}: an inline style breaks the CSP"
        );
        // Payloads are redacted; a hostile lane name is escaped.
        assert!(!html.contains("4242424242424242"), "{path} shows a payload");
        assert!(
            !html.contains("<b>mail</b>"),
            "{path} did not escape a lane"
        );
        // Read-only without signing in: no action form.
        assert!(
            !html.contains("name=\"csrf\""),
            "{path} offers an action to a stranger"
        );
    }
    let (_, _, lanes) = d.get("/", None).await;
    assert!(
        lanes.contains("&lt;b&gt;mail&lt;&#x2f;b&gt;") || lanes.contains("&lt;b&gt;mail&lt;/b&gt;"),
        "{lanes}"
    );
    let (_, _, item) = d.get(&format!("/items/{running}"), None).await;
    assert!(item.contains("Running on w-1 under fence 1"), "{item}");
    assert!(
        item.contains("keys: <code>card</code>, <code>order</code>"),
        "{item}"
    );
    let (_, _, dead_page) = d.get(&format!("/items/{dead}"), None).await;
    assert!(dead_page.contains("carrier said &lt;no&gt;"), "{dead_page}");
    assert!(dead_page.contains("Dead after 1 of"), "{dead_page}");
    for (path, asset_type) in [
        ("/assets/app.js", "text/javascript"),
        ("/assets/app.css", "text/css"),
        ("/favicon.ico", "image/svg+xml"),
    ] {
        let (status, headers, _) = d.get(path, None).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(
            headers["content-type"]
                .to_str()
                .expect("type")
                .starts_with(asset_type)
        );
    }
    // A page on another site that resolved its name to this address reads nothing.
    let r = d
        .client
        .get(format!("{}/", d.base))
        .header("host", "attacker.example")
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status(), StatusCode::MISDIRECTED_REQUEST);
    // Finding: an id jumps to its item, a dedupe key lists its items, a bad state is a 400.
    let (status, headers, _) = d.get(&format!("/items?q=%23{newest}"), None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[LOCATION], format!("/items/{newest}"));
    let (_, _, found) = d.get("/items?q=order-7", None).await;
    assert_eq!(found.matches("<tr data-id=").count(), 1, "{found}");
    let (status, _, _) = d.get("/items?state=sleeping", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _, _) = d.get("/items/999999", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Keyset pages, newest first: 50, then the rest.
    let (_, _, first) = d.get("/items?lane=default", None).await;
    assert_eq!(first.matches("<tr data-id=").count(), 50);
    assert!(first.contains(&format!("<tr data-id=\"{newest}\"")));
    let at = first.find("&amp;after=").expect("a next page") + 11;
    let after: String = first[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let (_, _, second) = d
        .get(&format!("/items?lane=default&after={after}"), None)
        .await;
    assert_eq!(second.matches("<tr data-id=").count(), 10, "{second}");
    assert!(!second.contains("after="));
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_need_a_session_its_csrf_token_and_the_same_origin_and_are_recorded() {
    let (store, dead, running, _) = seeded().await;
    let token = dashboard::add_operator(&store, "ana")
        .await
        .expect("add")
        .expect("new name");
    assert!(token.starts_with("scf_op_") && token.len() > 40);
    assert_eq!(
        dashboard::add_operator(&store, "ana").await.expect("again"),
        None
    );
    let d = start(store.clone(), false).await;
    let origin = d.base.clone();
    let retry = format!("/items/{dead}/retry");

    // No session: refused, nothing changed.
    let (status, _, _) = d.post(&retry, None, Some(&origin), &[("csrf", "x")]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // A wrong token signs nobody in.
    let (status, headers, _) = d
        .post(
            "/login",
            None,
            Some(&origin),
            &[("token", "scf_op_wrong"), ("next", "/")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(
        headers[LOCATION]
            .to_str()
            .expect("loc")
            .starts_with("/login?failed=true")
    );
    assert!(!headers.contains_key(SET_COOKIE));
    // Sign-in from another origin is refused.
    let (status, _, _) = d
        .post(
            "/login",
            None,
            Some("http://evil.example"),
            &[("token", &token)],
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, headers, _) = d
        .post(
            "/login",
            None,
            Some(&origin),
            &[("token", &token), ("next", "//evil.example/")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(
        headers[LOCATION], "/",
        "a next page on another site is not followed"
    );
    let set = headers[SET_COOKIE].to_str().expect("cookie").to_owned();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(part), "{set}");
    }
    assert!(
        !set.contains(&token),
        "the operator token is never the cookie"
    );
    let cookie = set.split(';').next().expect("pair").to_owned();
    let cookie = Some(cookie.as_str());

    let (_, _, page) = d.get(&format!("/items/{dead}"), cookie).await;
    assert!(page.contains("ana"), "{page}");
    let token_field = csrf(&page);
    // Without the CSRF token, with another session's, and cross-origin: refused.
    let (status, _, _) = d.post(&retry, cookie, Some(&origin), &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = d
        .post(&retry, cookie, Some(&origin), &[("csrf", &"0".repeat(64))])
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = d
        .post(
            &retry,
            cookie,
            Some("http://evil.example"),
            &[("csrf", &token_field)],
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        store.get(dead).await.expect("get").expect("item").state,
        ItemState::Dead
    );

    // With all three: done, said and recorded.
    let (status, _, done) = d
        .post(&retry, cookie, Some(&origin), &[("csrf", &token_field)])
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(
        done.contains(&format!("item {dead} (NOTIFY_SHIPMENT): dead → available")),
        "{done}"
    );
    assert_eq!(
        store.get(dead).await.expect("get").expect("item").state,
        ItemState::Available
    );
    let (status, _, again) = d
        .post(&retry, cookie, Some(&origin), &[("csrf", &token_field)])
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    let (_, _, page) = d.get(&format!("/items/{dead}"), cookie).await;
    assert!(page.contains("<strong>ana</strong> retry: item"), "{page}");

    // Cancel the running item: its holder's fence is named; the item is dead.
    let (status, _, done) = d
        .post(
            &format!("/items/{running}/cancel"),
            cookie,
            Some(&origin),
            &[("csrf", &token_field)],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(done.contains("w-1"), "{done}");
    assert_eq!(
        store.get(running).await.expect("get").expect("item").state,
        ItemState::Dead
    );
    // Retry every dead item of the kind: one (the one just cancelled).
    let (status, _, done) = d
        .post(
            "/kinds/retry-dead",
            cookie,
            Some(&origin),
            &[("csrf", &token_field), ("kind", "NOTIFY_SHIPMENT")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(
        done.contains("1 dead item(s) of NOTIFY_SHIPMENT → available"),
        "{done}"
    );
    // Discard needs a dead item.
    let (status, _, _) = d
        .post(
            &format!("/items/{running}/discard"),
            cookie,
            Some(&origin),
            &[("csrf", &token_field)],
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    // Signal and drain.
    let (status, _, done) = d
        .post(
            "/signal",
            cookie,
            Some(&origin),
            &[("csrf", &token_field), ("signal", "paid:7")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert!(done.contains("signal paid:7: 0 parked item(s)"), "{done}");
    let (status, _, _) = d
        .post(
            "/workers/drain",
            cookie,
            Some(&origin),
            &[("csrf", &token_field), ("worker", "w-1")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let workers = store.workers().await.expect("workers");
    assert_eq!(workers[0].state, WorkerState::Draining);
    let (status, _, _) = d
        .post(
            "/workers/drain",
            cookie,
            Some(&origin),
            &[("csrf", &token_field), ("worker", "x/../../nobody")],
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    // Every action is on the outbox page's log, under ana's name, newest first.
    let (_, _, log) = d.get("/outbox", None).await;
    let order: Vec<&str> = ["drain", "signal", "retry-dead", "cancel", "retry"]
        .into_iter()
        .filter(|a| log.contains(&format!("<strong>ana</strong> {a}:")))
        .collect();
    assert_eq!(order.len(), 5, "{log}");
    assert!(
        log.find("</strong> drain:") < log.find("</strong> retry:"),
        "{log}"
    );

    // Signing out ends the session: the same cookie is refused.
    let (status, headers, _) = d
        .post("/logout", cookie, Some(&origin), &[("csrf", &token_field)])
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(
        headers[SET_COOKIE]
            .to_str()
            .expect("cookie")
            .contains("Max-Age=0")
    );
    let (status, _, _) = d
        .post(
            &format!("/items/{dead}/cancel"),
            cookie,
            Some(&origin),
            &[("csrf", &token_field)],
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_stream_the_status_and_end_at_shutdown() {
    let (store, _, _, _) = seeded().await;
    let d = start(store.clone(), true).await;
    let mut r = d
        .client
        .get(format!("{}/events", d.base))
        .send()
        .await
        .expect("events");
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let mut got = String::new();
    while !got.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), r.chunk())
            .await
            .expect("a status within 5 s")
            .expect("chunk")
            .expect("not ended");
        got.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(got.starts_with("event: status\ndata: "), "{got}");
    let data = got
        .lines()
        .nth(1)
        .expect("data")
        .trim_start_matches("data: ");
    let sent: serde_json::Value = serde_json::from_str(data).expect("JSON");
    let status = serde_json::to_value(store.status().await.expect("status")).expect("JSON");
    // The same numbers as `scaffold queue status --format json` (ages move on).
    assert_eq!(
        sent["lanes"].as_array().map(Vec::len),
        status["lanes"].as_array().map(Vec::len)
    );
    assert_eq!(
        sent["lanes"][0]["available"],
        status["lanes"][0]["available"]
    );
    assert_eq!(sent["lanes"][1]["dead"], status["lanes"][1]["dead"]);
    // A change is pushed: enqueue one more and the next event counts it.
    store
        .enqueue(NewItem::new("NOTIFY_SHIPMENT", json!({})))
        .await
        .expect("enqueue");
    let mut next = String::new();
    while !next.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), r.chunk())
            .await
            .expect("a change within 5 s")
            .expect("chunk")
            .expect("not ended");
        next.push_str(&String::from_utf8_lossy(&chunk));
    }
    let data = next
        .lines()
        .find(|l| l.starts_with("data: "))
        .expect("data");
    let sent: serde_json::Value = serde_json::from_str(&data[6..]).expect("JSON");
    let lane = sent["lanes"]
        .as_array()
        .expect("lanes")
        .iter()
        .find(|l| l["lane"] == "default")
        .expect("default lane");
    assert_eq!(lane["available"], json!(58 + 1 - 2 + 2), "{next}");
    // Payloads shown whole when asked for.
    let (_, _, page) = d.get("/items/1", None).await;
    assert!(page.contains("4242424242424242"));
    // Shutdown ends the open stream rather than waiting on it.
    d.stop().await;
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = r.chunk().await {}
    })
    .await;
    assert!(end.is_ok(), "the stream ended with the dashboard");
}

#[tokio::test]
async fn refuses_plain_http_off_loopback() {
    let store = Store::open("memory://").await.expect("store");
    store.migrate().await.expect("migrate");
    let err = dashboard::bind(store, Config::new("0.0.0.0:0".parse().expect("addr")))
        .await
        .expect_err("off loopback");
    assert!(err.to_string().contains("loopback"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_whose_dedupe_key_a_live_item_holds_is_refused_by_name() {
    let store = Store::open("memory://").await.expect("store");
    store.migrate().await.expect("migrate");
    let dead = store
        .enqueue(NewItem::new("NOTIFY_SHIPMENT", json!({})).dedupe_key("order-9"))
        .await
        .expect("enqueue");
    let claimed = store
        .claim_as("w-1", "default", 1, Duration::from_secs(30))
        .await
        .expect("claim");
    store
        .fail(&claimed[0].held(), Outcome::Dead { error: "x".into() })
        .await
        .expect("dead");
    let live = store
        .enqueue(NewItem::new("NOTIFY_SHIPMENT", json!({})).dedupe_key("order-9"))
        .await
        .expect("a live one takes the key");
    let token = dashboard::add_operator(&store, "ana")
        .await
        .expect("add")
        .expect("new");
    let d = start(store.clone(), false).await;
    let origin = d.base.clone();
    let (_, headers, _) = d
        .post("/login", None, Some(&origin), &[("token", &token)])
        .await;
    let cookie = headers[SET_COOKIE]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_owned();
    let (_, _, page) = d.get(&format!("/items/{dead}"), Some(&cookie)).await;
    let csrf = csrf(&page);
    let (status, _, said) = d
        .post(
            &format!("/items/{dead}/retry"),
            Some(&cookie),
            Some(&origin),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{said}");
    assert!(
        said.contains(&format!(
            "item {live} (NOTIFY_SHIPMENT) holds the dedupe key"
        )),
        "{said}"
    );
    // Retrying the kind's dead leaves it dead and says so.
    let (status, _, said) = d
        .post(
            "/kinds/retry-dead",
            Some(&cookie),
            Some(&origin),
            &[("csrf", &csrf), ("kind", "NOTIFY_SHIPMENT")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{said}");
    assert!(
        said.contains("0 dead item(s) of NOTIFY_SHIPMENT → available")
            && said.contains("; 1 still dead"),
        "{said}"
    );
    assert_eq!(
        store.get(dead).await.expect("get").expect("item").state,
        ItemState::Dead
    );
    d.stop().await;
}
