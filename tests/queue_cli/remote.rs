//! `scaffold queue serve`, `enroll`, `revoke`, `put-artifact`, `get-artifact`: the CLI of
//! the coordinator, driven end to end by an independent client (Python, `cryptography`).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Stdio};

use super::{json_error, json_out, queue};

/// `scaffold queue serve` on 127.0.0.1:0; returns the process and the origin it said.
fn serve(dir: &Path) -> (Child, String) {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("scaffold"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .args([
            "queue",
            "serve",
            "--insecure-loopback",
            "--listen",
            "127.0.0.1:0",
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("the serving line");
    let doc: serde_json::Value = serde_json::from_str(&first).expect("JSON");
    (child, doc["origin"].as_str().expect("origin").to_owned())
}

fn stop(mut child: Child) -> (i32, String) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().expect("exit");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    (status.code().unwrap_or(-1), err)
}

fn get(origin: &str, path: &str) -> String {
    let addr = origin.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    out
}

#[test]
fn enroll_prints_once_or_writes_a_private_file_never_over_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    let doc = json_out(queue(dir.path()).args([
        "queue",
        "enroll",
        "--worker",
        "render",
        "--kinds",
        "RENDER_PDF",
        "--format",
        "json",
    ]));
    let token = doc["token"].as_str().expect("token");
    assert!(token.starts_with("scf_enr_"), "{doc}");
    assert_eq!(doc["kinds"], serde_json::json!(["RENDER_PDF"]));
    let doc = json_out(queue(dir.path()).args([
        "queue", "enroll", "--worker", "render", "--out", "token", "--format", "json",
    ]));
    assert!(
        doc.get("token").is_none(),
        "printed although written: {doc}"
    );
    let written = std::fs::read_to_string(dir.path().join("token")).expect("token file");
    assert!(written.starts_with("scf_enr_"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("token"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // An existing file is never written over, and no token is made for it.
    queue(dir.path())
        .args(["queue", "enroll", "--worker", "render", "--out", "token"])
        .status(2)
        .run();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("token")).expect("token"),
        written
    );
    for bad in [["--worker", "a b"], ["--account", "x/y"]] {
        let mut args = vec!["queue", "enroll", "--worker", "ok"];
        args.extend(bad);
        queue(dir.path()).args(&args).status(2).run();
    }
    queue(dir.path())
        .args(["queue", "enroll", "--worker", "ok", "--kinds", "lower"])
        .status(2)
        .run();
    // Revoking a name nobody enrolled under yet kills its tokens; an unknown one is an error.
    let doc = json_error(
        dir.path(),
        &["queue", "revoke", "nobody", "--format", "json"],
    );
    assert_eq!(
        doc["error"]["code"],
        "scaffold::queue::unknown_remote_worker"
    );
}

#[test]
fn artifacts_go_in_and_out_and_show_lists_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    std::fs::write(dir.path().join("in.txt"), b"hello").expect("file");
    let doc = json_out(queue(dir.path()).args([
        "queue",
        "put-artifact",
        "in.txt",
        "--account",
        "acme",
        "--format",
        "json",
    ]));
    let digest = doc["sha256"].as_str().expect("sha256").to_owned();
    assert_eq!(digest.len(), 64);
    assert_eq!(
        (doc["size"].as_u64(), doc["name"].as_str()),
        (Some(5), Some("in.txt"))
    );
    queue(dir.path())
        .args([
            "queue",
            "get-artifact",
            &digest,
            "--account",
            "acme",
            "--out",
            "back.txt",
        ])
        .run();
    assert_eq!(
        std::fs::read(dir.path().join("back.txt")).expect("back"),
        b"hello"
    );
    // Another account's, a bad digest, a FIFO or a folder are errors; nothing is written.
    let doc = json_error(
        dir.path(),
        &[
            "queue",
            "get-artifact",
            &digest,
            "--out",
            "other.txt",
            "--format",
            "json",
        ],
    );
    assert_eq!(doc["error"]["code"], "scaffold::queue::no_artifact");
    assert!(!dir.path().join("other.txt").exists());
    queue(dir.path())
        .args(["queue", "get-artifact", "abc", "--out", "x"])
        .status(2)
        .run();
    queue(dir.path())
        .args(["queue", "put-artifact", "."])
        .status(2)
        .run();
}

#[test]
fn serve_refuses_plain_http_off_loopback_and_needs_a_transport() {
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    queue(dir.path())
        .args(["queue", "serve", "--listen", "127.0.0.1:0"])
        .status(2)
        .run();
    let doc = json_error(
        dir.path(),
        &[
            "queue",
            "serve",
            "--insecure-loopback",
            "--listen",
            "0.0.0.0:0",
            "--format",
            "json",
        ],
    );
    assert_eq!(doc["error"]["code"], "scaffold::queue::serve");
    assert!(
        doc["error"]["causes"][0]
            .as_str()
            .is_some_and(|c| c.contains("loopback")),
        "{doc}"
    );
}

#[test]
fn an_independent_python_worker_runs_a_job_through_serve() {
    let python = std::process::Command::new("python3")
        .args(["-c", "import cryptography"])
        .status();
    if !python.is_ok_and(|s| s.success()) {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: python3 with `cryptography` is not installed; .ci/run installs it"
        );
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    queue(dir.path()).args(["queue", "migrate"]).run();
    let doc = json_out(queue(dir.path()).args([
        "queue",
        "enqueue",
        "RENDER_PDF",
        "--payload",
        "{\"doc\": 7}",
        "--lane",
        "pdf",
        "--format",
        "json",
    ]));
    let id = doc["id"].as_i64().expect("id");
    let token = json_out(queue(dir.path()).args([
        "queue",
        "enroll",
        "--worker",
        "py",
        "--kinds",
        "RENDER_PDF",
        "--format",
        "json",
    ]))["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let (server, origin) = serve(dir.path());
    assert!(
        get(&origin, "/health").starts_with("HTTP/1.1 200"),
        "health"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/queue_cli/remote_client.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .args([&origin, &token, "py", "pdf"])
        .output()
        .expect("python runs");
    let metrics = get(&origin, "/metrics");
    let (code, logs) = stop(server);
    assert!(
        out.status.success(),
        "the Python worker failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(code, 0, "serve exited {code}:\n{logs}");
    assert!(
        !logs.contains(&token) && !logs.contains("scf_ses_"),
        "a secret in the logs:\n{logs}"
    );
    assert!(
        metrics.contains("scaffold_coordinator_claimed_jobs_total 1"),
        "{metrics}"
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the client's line");
    let show =
        json_out(queue(dir.path()).args(["queue", "show", &id.to_string(), "--format", "json"]));
    assert_eq!(show["state"], "completed");
    assert_eq!(show["artifacts"][0]["sha256"], seen["output"]);
    assert_eq!(show["artifacts"][0]["role"], "output");
    assert_eq!(show["attempts"][0]["holder"], seen["worker_id"]);
}
