//! TLS to PostgreSQL, against a real server configured for SSL with certificates this test
//! makes: a throwaway cluster (initdb in a temporary folder, its own port, `hostssl` only),
//! started as the `postgres` user. Where that cannot be had (not root, no `postgres` user,
//! no server binaries) the test prints SKIPPED and why.

// The PostgreSQL backend: left out of a build without it.
#![cfg(feature = "postgres")]

use std::io::Write;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use scaffold_runtime::{NewItem, Store, StoreError};

fn skipped(why: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: the PostgreSQL TLS test did not run: {why}"
    );
}

/// The newest `/usr/lib/postgresql/<v>/bin`.
fn server_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").is_file() && p.join("postgres").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn postgres_uid() -> Option<(u32, u32)> {
    let out = Command::new("id").args(["-u", "postgres"]).output().ok()?;
    let uid = String::from_utf8(out.stdout).ok()?.trim().parse().ok()?;
    let out = Command::new("id").args(["-g", "postgres"]).output().ok()?;
    let gid = String::from_utf8(out.stdout).ok()?.trim().parse().ok()?;
    Some((uid, gid))
}

/// A cluster that stops (and whose folder goes) when dropped.
struct Cluster {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn as_postgres(bin: &Path, program: &str) -> Command {
    let mut cmd = Command::new("runuser");
    cmd.args(["-u", "postgres", "--"]).arg(bin.join(program));
    cmd
}

fn chown_tree(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("read_dir") {
            chown_tree(&entry.expect("entry").path(), uid, gid);
        }
    }
}

struct Certs {
    ca_pem: String,
    other_ca_pem: String,
}

fn start_cluster() -> Option<(Cluster, Certs)> {
    let Some(bin) = server_bin() else {
        skipped("no PostgreSQL server binaries under /usr/lib/postgresql");
        return None;
    };
    // SAFETY-free check of root: only root can run the server as `postgres`.
    let me = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&me.stdout).trim() != "0" {
        skipped("not running as root (the server must run as the postgres user)");
        return None;
    }
    let Some((uid, gid)) = postgres_uid() else {
        skipped("no postgres user");
        return None;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let data = dir.path().join("data");
    chown_tree(dir.path(), uid, gid);
    let init = as_postgres(&bin, "initdb")
        .args(["-A", "trust", "-U", "postgres", "-D"])
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("initdb runs");
    assert!(
        init.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&init.stderr)
    );

    // A CA, a server certificate it signs for localhost and 127.0.0.1, and a CA that
    // signed nothing here.
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "scaffold test CA");
    let ca = ca_params.self_signed(&ca_key).expect("CA");
    let server_key = KeyPair::generate().expect("key");
    let server_params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("params");
    let server = server_params
        .signed_by(&server_key, &ca, &ca_key)
        .expect("server certificate");
    let other_key = KeyPair::generate().expect("key");
    let mut other_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    other_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let other = other_params.self_signed(&other_key).expect("other CA");

    std::fs::write(data.join("server.crt"), server.pem()).expect("write");
    std::fs::write(data.join("server.key"), server_key.serialize_pem()).expect("write");
    std::fs::set_permissions(
        data.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    // TLS only: a plain-text connection is rejected.
    std::fs::write(
        data.join("pg_hba.conf"),
        "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
    )
    .expect("write");
    chown_tree(&data, uid, gid);

    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let child = as_postgres(&bin, "postgres")
        .arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
        .args(["-c", "ssl=on", "-c", "ssl_cert_file=server.crt"])
        .args(["-c", "ssl_key_file=server.key", "-c", "fsync=off"])
        .arg("-k")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server starts");
    let cluster = Cluster {
        child,
        port,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the server did not listen in 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some((
        cluster,
        Certs {
            ca_pem: ca.pem(),
            other_ca_pem: other.pem(),
        },
    ))
}

async fn round_trip(url: &str) -> Result<i64, StoreError> {
    let store = Store::open(url).await?;
    store.migrate().await?;
    store
        .enqueue(NewItem::new("TLS", serde_json::json!({})))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmodes_against_a_server_that_requires_ssl() {
    let Some((cluster, certs)) = start_cluster() else {
        return;
    };
    let files = tempfile::tempdir().expect("tempdir");
    let ca = files.path().join("ca.pem");
    let other = files.path().join("other.pem");
    std::fs::write(&ca, &certs.ca_pem).expect("write");
    std::fs::write(&other, &certs.other_ca_pem).expect("write");
    let base = |host: &str, query: &str| {
        format!(
            "postgres://postgres@{host}:{}/postgres?{query}",
            cluster.port
        )
    };
    // The server is up once a TLS connection is answered.
    let deadline = Instant::now() + Duration::from_secs(30);
    while round_trip(&base("127.0.0.1", "sslmode=require"))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "no TLS connection in 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let ok = [
        "sslmode=require",
        "sslmode=prefer",
        &format!("sslmode=verify-ca&sslrootcert={}", ca.display()),
        &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    ];
    for query in ok {
        round_trip(&base("127.0.0.1", query))
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"));
    }
    round_trip(&base(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    ))
    .await
    .expect("verify-full by host name");

    // Plain text is rejected by the server; a CA that did not sign the certificate, and
    // verify modes without a root, are refused by the client.
    let err = round_trip(&base("127.0.0.1", "sslmode=disable"))
        .await
        .expect_err("plain text is rejected");
    assert!(
        err.to_string().contains("no encryption") || err.to_string().contains("pg_hba"),
        "{err}"
    );
    for query in [
        format!("sslmode=verify-full&sslrootcert={}", other.display()),
        format!("sslmode=verify-ca&sslrootcert={}", other.display()),
        format!("sslmode=require&sslrootcert={}", other.display()),
    ] {
        let err = round_trip(&base("127.0.0.1", &query))
            .await
            .expect_err("an unknown CA is refused");
        assert!(
            matches!(err, StoreError::PostgresConnect { .. }),
            "{query}: {err:?}"
        );
    }
    let err = round_trip(&base("127.0.0.1", "sslmode=verify-full"))
        .await
        .expect_err("verify-full needs a root");
    assert!(err.to_string().contains("sslrootcert"), "{err}");
    let err = round_trip(&base("127.0.0.1", "sslmode=allow"))
        .await
        .expect_err("allow is not offered");
    assert!(
        matches!(&err, StoreError::UrlParameter { parameter, .. } if parameter == "sslmode"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("verify-full"),
        "the allowed values: {err}"
    );
}
