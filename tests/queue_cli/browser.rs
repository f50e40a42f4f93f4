//! The dashboard in a real headless Chromium (Debian's `chromium` and `chromium-driver`,
//! driven over WebDriver by fantoccini), against `scaffold queue serve --dashboard` on a
//! seeded SQLite queue: every page loads with no console error and no CSP violation,
//! filter and find work, an item that completes shows it without a reload, an operator's
//! retry works and is refused without the session and without the CSRF token; every page
//! is photographed at 1280 and 375 px (`target/dashboard-screenshots/`, the test's
//! artifacts; `docs/dashboard/` holds the copies the README shows).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use scaffold_runtime::store::Store;
use serde_json::{Value, json};

use super::{json_out, queue};

/// `POST /session/{id}/se/log {"type":"browser"}`: ChromeDriver's console log (console
/// errors, CSP violations and failed loads are SEVERE), emptied as it is read.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({"type": "browser"}).to_string()),
        )
    }
}

/// Kills a child process when dropped (a failed assertion leaves nothing running).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn skipped(what: &str) -> bool {
    let found = std::process::Command::new(what)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: `{what}` is not installed (Debian's chromium and chromium-driver; .ci/run installs them): the dashboard's browser tests did not run"
        );
    }
    !found
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Where the screenshots go (a CI artifact).
fn shots() -> PathBuf {
    let dir = std::env::var_os("SCAFFOLD_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dashboard-screenshots")
        });
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    dir
}

async fn severe(c: &Client) -> Vec<String> {
    let log = c.issue_cmd(BrowserLog).await.expect("the browser's log");
    log.as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["level"] == "SEVERE")
        .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Loads `path`, waits for its live stream where it has one, checks the log and takes
/// both screenshots.
async fn visit(c: &Client, base: &str, path: &str, name: &str, live: bool) {
    c.set_window_size(1280, 900).await.expect("size");
    c.goto(&format!("{base}{path}")).await.expect("goto");
    if live {
        c.wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css("#conn[data-state='live']"))
            .await
            .unwrap_or_else(|e| panic!("{path}: the live stream did not open: {e}"));
    }
    let errors = severe(c).await;
    assert!(
        errors.is_empty(),
        "{path}: console errors or CSP violations: {errors:#?}"
    );
    let dir = shots();
    std::fs::write(
        dir.join(format!("{name}-1280.png")),
        c.screenshot().await.expect("shot"),
    )
    .expect("write");
    c.set_window_size(375, 812).await.expect("size");
    // Nothing wider than the phone's screen but the tables' own scrolling boxes.
    let overflow = c
        .execute(
            "return document.documentElement.scrollWidth - window.innerWidth;",
            vec![],
        )
        .await
        .expect("width");
    assert!(
        overflow.as_i64().is_some_and(|o| o <= 0),
        "{path} is wider than 375 px by {overflow}"
    );
    std::fs::write(
        dir.join(format!("{name}-375.png")),
        c.screenshot().await.expect("shot"),
    )
    .expect("write");
    c.set_window_size(1280, 900).await.expect("size");
}

/// An element's text, read in one step (a live region swapped between a find and a read
/// would leave a stale element).
async fn text(c: &Client, css: &str) -> String {
    c.execute(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : null;",
        vec![json!(css)],
    )
    .await
    .expect("text")
    .as_str()
    .unwrap_or_else(|| panic!("no {css}"))
    .to_owned()
}

/// A `fetch` POST from the page itself (its cookie, its origin): the answer's status.
async fn post_from_page(c: &Client, path: &str, body: &str) -> i64 {
    c.execute_async(
        "const done = arguments[arguments.length - 1];
         fetch(arguments[0], {method: 'POST', credentials: 'same-origin',
           headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: arguments[1]})
           .then(r => done(r.status), () => done(-1));",
        vec![json!(path), json!(body)],
    )
    .await
    .expect("fetch")
    .as_i64()
    .expect("a status")
}

#[test]
fn the_dashboard_in_a_real_browser() {
    if skipped("chromium") || skipped("chromedriver") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    let mut ids = Vec::new();
    for (kind, lane, key) in [
        ("NOTIFY_SHIPMENT", "default", "order-1"),
        ("NOTIFY_SHIPMENT", "default", "order-2"),
        ("REINDEX_SHIPMENTS", "bulk", "reindex-7"),
        ("BOOK_PICKUP", "default", "pickup-3"),
    ] {
        let doc = json_out(queue(dir.path()).args([
            "queue",
            "enqueue",
            kind,
            "--payload",
            "{\"order\": 1, \"card\": \"4242\"}",
            "--lane",
            lane,
            "--dedupe-key",
            key,
            "--format",
            "json",
        ]));
        ids.push(doc["id"].as_i64().expect("id"));
    }
    // One dead (cancelled), the rest available.
    queue(dir.path())
        .args(["queue", "cancel", &ids[3].to_string()])
        .run();
    let token = json_out(
        queue(dir.path()).args(["queue", "operator", "add", "ana", "--format", "json"]),
    )["token"]
        .as_str()
        .expect("token")
        .to_owned();

    let mut serve = std::process::Command::new(assert_cmd::cargo::cargo_bin("scaffold"))
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env_remove("SCAFFOLD_QUEUE_DATABASE")
        .args([
            "queue",
            "serve",
            "--insecure-loopback",
            "--listen",
            "127.0.0.1:0",
            "--dashboard",
            "127.0.0.1:0",
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve starts");
    let mut first = String::new();
    BufReader::new(serve.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("the serving line");
    let _serve = Killed(serve);
    let doc: Value = serde_json::from_str(&first).expect("JSON");
    let base = doc["dashboard"]
        .as_str()
        .expect("the dashboard's URL")
        .trim_end_matches('/')
        .to_owned();

    let port = free_port();
    let driver = std::process::Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let _driver = Killed(driver);

    let db = dir.path().join(".scaffold/queue.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // fantoccini's client is rustls; its provider is ring, as everywhere in this tree.
    let _ = rustls::crypto::ring::default_provider().install_default();
    rt.block_on(async {
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        caps.insert(
            "goog:chromeOptions".into(),
            json!({"args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", "--no-first-run", "--disable-background-networking",
                "--disable-sync", "--disable-component-update", "--disable-default-apps",
                "--disable-features=AutofillServerCommunication,OptimizationHints,Translate,MediaRouter",
            ]}),
        );
        caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
        caps.insert("pageLoadStrategy".into(), json!("eager"));
        let mut client = None;
        for _ in 0..50 {
            match ClientBuilder::rustls()
                .expect("rustls")
                .capabilities(caps.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
            {
                Ok(c) => {
                    client = Some(c);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        let c = client.expect("a WebDriver session");

        // Every page, read-only.
        visit(&c, &base, "/", "lanes", true).await;
        visit(&c, &base, "/items", "items", true).await;
        visit(&c, &base, &format!("/items/{}", ids[3]), "item", true).await;
        visit(&c, &base, "/workers", "workers", true).await;
        visit(&c, &base, "/outbox", "outbox", true).await;
        visit(&c, &base, "/login", "login", false).await;
        assert!(!c.source().await.expect("source").contains("4242"), "a payload shown");

        // Filter by state, then find by dedupe key and by id.
        c.goto(&format!("{base}/items")).await.expect("goto");
        c.wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css("#conn[data-state='live']"))
            .await
            .expect("live");
        c.find(Locator::Css("select[name=state]")).await.expect("select").select_by_value("dead").await.expect("pick");
        c.find(Locator::Css("form.filter button")).await.expect("find").click().await.expect("submit");
        c.wait().for_element(Locator::Css("table.items")).await.expect("list");
        let rows = c.find_all(Locator::Css("tr[data-id]")).await.expect("rows");
        assert_eq!(rows.len(), 1, "one dead item");
        let q = c.find(Locator::Css("input[name=q]")).await.expect("q");
        q.clear().await.expect("clear");
        c.find(Locator::Css("select[name=state]")).await.expect("select").select_by_value("").await.expect("pick");
        q.send_keys("reindex-7").await.expect("type");
        c.find(Locator::Css("form.filter button")).await.expect("find").click().await.expect("submit");
        c.wait().for_element(Locator::Css(&format!("tr[data-id='{}']", ids[2]))).await.expect("found by key");
        assert_eq!(c.find_all(Locator::Css("tr[data-id]")).await.expect("rows").len(), 1);
        let q = c.find(Locator::Css("input[name=q]")).await.expect("q");
        q.clear().await.expect("clear");
        q.send_keys(&ids[1].to_string()).await.expect("type");
        c.find(Locator::Css("form.filter button")).await.expect("find").click().await.expect("submit");
        c.wait().for_element(Locator::Css("#item-state")).await.expect("the item's page");
        assert!(c.current_url().await.expect("url").path().ends_with(&format!("/items/{}", ids[1])));

        // An item going from available to completed, without a reload.
        assert_eq!(text(&c, "#item-state").await, "available");
        c.wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::Css("#conn[data-state='live']"))
            .await
            .expect("live");
        let marker: Value = c.execute("window.notReloaded = 42; return 42;", vec![]).await.expect("mark");
        assert_eq!(marker, json!(42));
        let store = Store::open(&format!("sqlite://{}", db.display())).await.expect("store");
        let claimed = store
            .claim_as("browser-test", "default", 10, Duration::from_secs(30))
            .await
            .expect("claim");
        for item in &claimed {
            store.complete(&item.held()).await.expect("complete");
        }
        assert!(claimed.iter().any(|cl| cl.item.id == ids[1]));
        c.wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::XPath("//span[@id='item-state' and text()='completed']"))
            .await
            .expect("the page showed `completed` by itself");
        let still: Value = c.execute("return window.notReloaded;", vec![]).await.expect("mark");
        assert_eq!(still, json!(42), "the page was reloaded");
        assert!(text(&c, "#why").await.starts_with("Completed at"));

        // Retry of the dead item as an operator: refused without a session, then signed in
        // refused without the CSRF token, then done and recorded.
        let dead = ids[3];
        c.goto(&format!("{base}/items/{dead}")).await.expect("goto");
        assert_eq!(post_from_page(&c, &format!("/items/{dead}/retry"), "csrf=x").await, 401);
        c.goto(&format!("{base}/login?next=/items/{dead}")).await.expect("login page");
        c.find(Locator::Css("input[name=token]")).await.expect("token field").send_keys(&token).await.expect("type");
        c.find(Locator::Css("form.login button")).await.expect("sign in").click().await.expect("submit");
        if c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("#retry")).await.is_err() {
            panic!(
                "no retry button after signing in at {}:\n{}",
                c.current_url().await.expect("url"),
                c.source().await.expect("source")
            );
        }
        assert_eq!(post_from_page(&c, &format!("/items/{dead}/retry"), "").await, 403);
        assert_eq!(post_from_page(&c, &format!("/items/{dead}/retry"), &format!("csrf={}", "0".repeat(64))).await, 403);
        assert_eq!(text(&c, "#item-state").await, "dead");
        // The browser logs the three refusals (and nothing else).
        let refused = severe(&c).await;
        assert_eq!(refused.len(), 3, "{refused:#?}");
        assert!(
            refused.iter().all(|m| m.contains("/retry - Failed to load resource")),
            "{refused:#?}"
        );
        visit(&c, &base, &format!("/items/{dead}"), "item-operator", true).await;
        c.find(Locator::Css("#retry")).await.expect("retry").click().await.expect("click");
        c.wait().for_element(Locator::Css("#done")).await.expect("the answer");
        let done = text(&c, "#done").await;
        assert!(done.contains("dead → available"), "{done}");
        assert_eq!(
            store.get(dead).await.expect("get").expect("item").state,
            scaffold_runtime::item::ItemState::Available
        );
        c.goto(&format!("{base}/items/{dead}")).await.expect("goto");
        let log = text(&c, "ul.log").await;
        assert!(log.contains("ana retry: item"), "{log}");
        visit(&c, &base, "/", "lanes-operator", true).await;
        let errors = severe(&c).await;
        assert!(errors.is_empty(), "{errors:#?}");
        c.close().await.expect("close");
    });
}
