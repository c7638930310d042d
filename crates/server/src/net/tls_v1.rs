//! Peers presenting X.509 v1 certificates (no extensions), which webpki does not read
//! and OpenSSL, so redis-server, accepts: `openssl x509 -req` without an extensions file
//! makes them (Redis's `utils/gen-test-certs.sh` among others), so a replica, a cluster
//! node or a client may well present one.
//!
//! A certificate webpki refuses is accepted here when it is v1, within its validity
//! period, and signed directly by one of the configured CA certificates with a strong
//! algorithm (RSA with SHA-2, RSA-PSS, ECDSA, Ed25519; not SHA-1 or MD5); its key then
//! checks the handshake's signature. That is what OpenSSL's chain check asks of such a
//! certificate at its default security level (a v1 certificate has no extensions to
//! check). Everything else is webpki's answer, unchanged: v3 certificates never take
//! this path.

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::{CertificateError, DigitallySignedStruct};
use rustls_pki_types::{CertificateDer, SubjectPublicKeyInfoDer, UnixTime};
use x509_parser::oid_registry::{OID_PKCS1_SHA1WITHRSA, OID_SHA1_WITH_RSA};
use x509_parser::prelude::{ASN1Time, FromDer, X509Certificate, X509Version};

/// The configured CA certificates, kept to check v1 certificates against.
#[derive(Debug, Clone, Default)]
pub(crate) struct Authorities(Vec<CertificateDer<'static>>);

impl Authorities {
    pub(crate) fn new(certs: Vec<CertificateDer<'static>>) -> Authorities {
        Authorities(certs)
    }

    /// Accepts `end_entity` if it is a v1 certificate one of the authorities signed,
    /// valid at `now`; otherwise returns `refused`, webpki's verdict.
    pub(crate) fn verify(
        &self,
        end_entity: &CertificateDer<'_>,
        now: UnixTime,
        refused: rustls::Error,
    ) -> Result<(), rustls::Error> {
        let Some(cert) = parse_v1(end_entity) else {
            return Err(refused);
        };
        let now = i64::try_from(now.as_secs())
            .ok()
            .and_then(|secs| ASN1Time::from_timestamp(secs).ok());
        match now {
            Some(now) if now < cert.validity().not_before => {
                return Err(CertificateError::NotValidYet.into())
            }
            Some(now) if now > cert.validity().not_after => {
                return Err(CertificateError::Expired.into())
            }
            Some(_) => {}
            None => return Err(refused),
        }
        let algorithm = &cert.signature_algorithm.algorithm;
        if *algorithm == OID_PKCS1_SHA1WITHRSA || *algorithm == OID_SHA1_WITH_RSA {
            return Err(CertificateError::BadSignature.into());
        }
        let signed = self.0.iter().any(|authority| {
            X509Certificate::from_der(authority).is_ok_and(|(_, authority)| {
                authority.subject().as_raw() == cert.issuer().as_raw()
                    && cert.verify_signature(Some(authority.public_key())).is_ok()
            })
        });
        if signed {
            Ok(())
        } else {
            Err(CertificateError::UnknownIssuer.into())
        }
    }
}

/// The certificate if it is X.509 v1.
fn parse_v1<'a>(der: &'a CertificateDer<'_>) -> Option<X509Certificate<'a>> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    (cert.version() == X509Version::V1).then_some(cert)
}

/// Checks a handshake signature with the key of a v1 certificate that [`Authorities`]
/// accepted; for any other certificate returns `refused`, webpki's verdict.
pub(crate) fn verify_signature(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    algorithms: &WebPkiSupportedAlgorithms,
    tls13: bool,
    refused: rustls::Error,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    let Some(cert) = parse_v1(cert) else {
        return Err(refused);
    };
    let spki = cert.public_key();
    if tls13 {
        return rustls::crypto::verify_tls13_signature_with_raw_key(
            message,
            &SubjectPublicKeyInfoDer::from(spki.raw),
            dss,
            algorithms,
        );
    }
    // TLS 1.2 names a scheme that maps to several algorithms (webpki tries each too).
    let candidates = algorithms
        .mapping
        .iter()
        .find(|(scheme, _)| *scheme == dss.scheme)
        .map(|(_, algs)| *algs)
        .unwrap_or_default();
    let key = &spki.subject_public_key.data;
    if candidates
        .iter()
        .any(|alg| alg.verify_signature(key, message, dss.signature()).is_ok())
    {
        Ok(HandshakeSignatureValid::assertion())
    } else {
        Err(CertificateError::BadSignature.into())
    }
}
