//! [`probe_health`]: whether the coordinator on this host answers `GET /health` over the
//! transport it serves. With TLS the handshake is made and the certificate presented must be
//! the one the coordinator was given (pinned: the probe runs beside it, with the same PEM),
//! so a coordinator that still accepts connections (the kernel does, into its backlog) but no
//! longer answers, or answers with another certificate, is unhealthy.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::ServerCertVerified;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::CoordinatorError;
use crate::cert_check::CertCheck;

/// The most of an answer read (its status line is all that is looked at).
const ANSWER_MAX: u64 = 64 * 1024;

/// Ok when the coordinator listening on `addr` (an unspecified address is asked on
/// loopback) answers `GET /health` with 200 within `timeout`. With `pinned` (PEM text: the
/// certificate it serves, as [`Transport::Tls`](super::Transport::Tls)'s `cert` holds it) the probe makes the TLS
/// handshake and the certificate presented must be the first one of `pinned`, byte for
/// byte; without, it asks in plain HTTP ([`Transport::InsecureLoopback`](super::Transport::InsecureLoopback)). Only the
/// certificate is needed: the key stays where the coordinator keeps it.
pub async fn probe_health(
    addr: SocketAddr,
    pinned: Option<&[u8]>,
    timeout: Duration,
) -> Result<(), CoordinatorError> {
    let mut addr = addr;
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let unhealthy = |why: String| CoordinatorError::Unhealthy { addr, why };
    let connector = pinned.map(pinned_connector).transpose()?;
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        match connector {
            Some(connector) => {
                let name = ServerName::IpAddress(addr.ip().into());
                let tls = connector.connect(name, tcp).await?;
                ask(tls, addr).await
            }
            None => ask(tcp, addr).await,
        }
    };
    let answer = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| unhealthy(format!("no answer within {} s", timeout.as_secs_f32())))?
        .map_err(|e| unhealthy(e.to_string()))?;
    let status = answer.lines().next().unwrap_or_default();
    if status.starts_with("HTTP/1.1 200 ") {
        Ok(())
    } else if status.is_empty() {
        Err(unhealthy(
            "it closed the connection without an answer".to_owned(),
        ))
    } else {
        Err(unhealthy(format!("it answered `{status}`")))
    }
}

/// Sends `GET /health` on `stream` and reads the answer (at most [`ANSWER_MAX`] bytes).
async fn ask(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    addr: SocketAddr,
) -> std::io::Result<String> {
    let request = format!("GET /health HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    let read = (&mut stream)
        .take(ANSWER_MAX)
        .read_to_end(&mut answer)
        .await;
    // A peer that closes TLS without its close_notify ends the read in an error after the
    // answer came: the answer is what is judged, not how the connection ended.
    match read {
        Err(e) if answer.is_empty() => Err(e),
        _ => Ok(String::from_utf8_lossy(&answer).into_owned()),
    }
}

/// A TLS connector that trusts exactly the first certificate of the PEM text `pem`.
fn pinned_connector(pem: &[u8]) -> Result<tokio_rustls::TlsConnector, CoordinatorError> {
    use rustls_pki_types::pem::PemObject;
    let unreadable = CoordinatorError::PinnedCertificate;
    let pinned = CertificateDer::pem_slice_iter(pem)
        .next()
        .ok_or_else(|| unreadable("it holds no certificate".to_owned()))?
        .map_err(|e| unreadable(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // The certificate presented must be byte for byte the pinned one; the handshake's
    // signatures are still verified against it, so only the holder of its key passes.
    let verifier = CertCheck::new(
        Arc::clone(&provider),
        "the coordinator's own certificate",
        move |end_entity, _, _, _, _| {
            if end_entity.as_ref() == pinned.as_ref() {
                Ok(ServerCertVerified::assertion())
            } else {
                Err(rustls::Error::General(
                    "the certificate presented is not the coordinator's".to_owned(),
                ))
            }
        },
    );
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| CoordinatorError::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}
