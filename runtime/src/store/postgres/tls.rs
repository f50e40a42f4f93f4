//! TLS to PostgreSQL with rustls, configured as libpq spells it in the URL: `sslmode=`
//! `disable | prefer | require | verify-ca | verify-full` and `sslrootcert=FILE`.
//!
//! | sslmode | encrypted | chain checked | host name checked | plain text if refused |
//! | --- | --- | --- | --- | --- |
//! | `disable` | no | – | – | – |
//! | `prefer` (the default, as in libpq) | if the server offers it | no | no | yes |
//! | `require` | yes | only with `sslrootcert` (libpq: then as `verify-ca`) | no | no |
//! | `verify-ca` | yes | yes | no | no |
//! | `verify-full` | yes | yes | yes | no |
//!
//! `verify-ca` and `verify-full` need `sslrootcert` (a PEM file of the CAs to trust): there
//! is no silent fallback to some default trust store, since a managed database's CA is
//! rarely a public one. Handshake signatures are always checked, whatever the mode.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{CertificateError, ClientConfig, RootCertStore};
use tokio_postgres::config::SslMode as DriverSslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::cert_check::CertCheck;
use crate::error::StoreError;
use crate::store::StoreResult;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// Parses libpq's spelling; `allow` is refused (it prefers plain text, which a queue
    /// holding business intent should never ask for).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    /// What the driver negotiates: whether it asks for TLS and whether it may fall back.
    pub(crate) fn driver(self) -> DriverSslMode {
        match self {
            SslMode::Disable => DriverSslMode::Disable,
            SslMode::Prefer => DriverSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => DriverSslMode::Require,
        }
    }
}

/// The TLS settings of a queue URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    pub mode: SslMode,
    pub root_cert: Option<PathBuf>,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            mode: SslMode::Prefer,
            root_cert: None,
        }
    }
}

fn tls_error(msg: impl Into<String>) -> StoreError {
    StoreError::PostgresTls {
        message: msg.into(),
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn load_roots(path: &Path) -> StoreResult<RootCertStore> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| tls_error(format!("cannot read sslrootcert {}: {e}", path.display())))?;
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(tls_error(format!(
            "sslrootcert {} holds no certificate",
            path.display()
        )));
    }
    Ok(roots)
}

/// The connector for `settings` (also for `disable`, where it is never used: the pool and
/// the listener take one connector type).
pub(crate) fn connector(settings: &TlsSettings) -> StoreResult<MakeRustlsConnect> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error(e.to_string()))?;
    let roots = settings.root_cert.as_deref().map(load_roots).transpose()?;
    let config = match (settings.mode, roots) {
        (SslMode::VerifyFull, Some(roots)) => {
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        (SslMode::VerifyCa | SslMode::Require, Some(roots)) => {
            let chain =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                    .build()
                    .map_err(|e| tls_error(e.to_string()))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(no_host_check(provider, Some(chain))))
                .with_no_client_auth()
        }
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(tls_error(
                "sslmode=verify-ca and verify-full need sslrootcert=FILE (the PEM of the CAs to trust)",
            ));
        }
        (SslMode::Disable | SslMode::Prefer | SslMode::Require, _) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(no_host_check(provider, None)))
            .with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The modes that do not compare the host name: `prefer` and `require` without a root
/// (encrypted, the server not authenticated, as libpq), and `verify-ca` (or `require` with
/// a root: the chain must lead to a trusted CA). Handshake signatures are always checked.
fn no_host_check(
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<WebPkiServerVerifier>>,
) -> CertCheck {
    CertCheck::new(
        provider,
        "the chain, not the host name",
        move |end_entity, intermediates, server_name, ocsp_response, now| {
            let Some(chain) = &chain else {
                return Ok(ServerCertVerified::assertion());
            };
            match chain.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            ) {
                Err(rustls::Error::InvalidCertificate(
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. },
                )) => Ok(ServerCertVerified::assertion()),
                other => other,
            }
        },
    )
}
