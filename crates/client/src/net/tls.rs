//! rustls client configuration from [`TlsConfig`]: trusted CAs, client certificate, and the
//! test-only verifier that accepts any certificate.
//!
//! The configuration is built once per client (it parses PEM and sets up the root store)
//! and shared by every connection and reconnection.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::config::{CaCerts, TlsConfig};
use crate::error::{Error, TlsError};

/// What a connection needs to start TLS: the shared rustls config and the name to verify.
#[derive(Debug, Clone)]
pub(crate) struct TlsSetup {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) server_name: ServerName<'static>,
}

/// Builds the rustls configuration and the server name (the SNI override, or the host).
pub(crate) fn setup(tls: &TlsConfig, host: &str) -> Result<TlsSetup, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?;

    let builder = if tls.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert { provider }))
    } else {
        builder.with_root_certificates(root_store(tls.ca.as_ref())?)
    };

    let config = match &tls.client_cert {
        Some(cert) => {
            let chain = CertificateDer::pem_slice_iter(&cert.cert_pem)
                .collect::<Result<Vec<_>, _>>()
                .ok()
                .filter(|c| !c.is_empty())
                .ok_or(TlsError::InvalidPem {
                    what: "client certificate",
                })?;
            let key = PrivateKeyDer::from_pem_slice(&cert.key_pem)
                .map_err(|_| TlsError::InvalidPem { what: "client key" })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(TlsError::Config)?
        }
        None => builder.with_no_client_auth(),
    };

    let name = tls.server_name.as_deref().unwrap_or(host);
    let server_name = ServerName::try_from(name.to_owned())
        .map_err(|_| TlsError::InvalidServerName(Arc::from(name)))?;
    Ok(TlsSetup {
        config: Arc::new(config),
        server_name,
    })
}

fn root_store(ca: Option<&CaCerts>) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    let pem = match ca {
        None => {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            return Ok(roots);
        }
        Some(CaCerts::Pem(pem)) => pem.clone(),
        Some(CaCerts::File(path)) => std::fs::read(path).map_err(|e| TlsError::CaFile {
            path: Arc::from(path.display().to_string()),
            source: Arc::new(e),
        })?,
    };
    let invalid = TlsError::InvalidPem {
        what: "CA certificates",
    };
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|_| invalid.clone())?;
        roots.add(cert).map_err(|_| invalid.clone())?;
    }
    if roots.is_empty() {
        return Err(invalid);
    }
    Ok(roots)
}

/// Accepts any server certificate, but still checks that the handshake is signed by the
/// key in it, so the connection is at least not trivially broken. Tests only.
#[derive(Debug)]
struct AcceptAnyCert {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
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
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
