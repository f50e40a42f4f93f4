//! A rustls server-certificate verifier made of one check of the certificate presented,
//! with the handshake's signatures always verified by the provider's algorithms: what the
//! PostgreSQL backend's modes that do not compare host names use, and what the
//! coordinator's health probe uses to pin the coordinator's own certificate.

use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

/// What the certificate presented must pass, given the chain it came with, the name
/// asked for, the OCSP answer and the time.
type Check = dyn Fn(
        &CertificateDer<'_>,
        &[CertificateDer<'_>],
        &ServerName<'_>,
        &[u8],
        UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error>
    + Send
    + Sync;

/// The verifier: `check` on the certificate, the provider on the signatures.
pub(crate) struct CertCheck {
    provider: Arc<CryptoProvider>,
    /// What `check` asks, for `Debug`.
    what: &'static str,
    check: Box<Check>,
}

impl CertCheck {
    pub(crate) fn new(
        provider: Arc<CryptoProvider>,
        what: &'static str,
        check: impl Fn(
            &CertificateDer<'_>,
            &[CertificateDer<'_>],
            &ServerName<'_>,
            &[u8],
            UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error>
        + Send
        + Sync
        + 'static,
    ) -> CertCheck {
        CertCheck {
            provider,
            what,
            check: Box::new(check),
        }
    }
}

impl std::fmt::Debug for CertCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertCheck")
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

impl ServerCertVerifier for CertCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        (self.check)(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
