//! TLS with rustls: on the client port (`tls-port`), on the cluster bus (`tls-cluster`)
//! and on the connections this server opens (`tls-replication`, and with `tls-cluster`
//! its bus links and MIGRATE).
//!
//! [`build`] turns the `tls-*` directives into [`Contexts`]: a rustls [`ServerConfig`]
//! and, when a CA is configured, a [`ClientConfig`] (Redis's two SSL contexts), checking
//! them the way redis-server's `tlsConfigure` does (same log lines). The server keeps the
//! current ones in [`Tls`]; every TLS connection takes the ones current when it starts,
//! so CONFIG SET of a certificate swaps them for new connections while established ones
//! keep theirs, and a configuration that fails to build never replaces a working one.
//!
//! The client side presents `tls-client-cert-file` (else `tls-cert-file`) and checks the
//! peer's chain against the CA but not its name, as Redis does: nodes and masters are
//! reached by the address they announce, which their certificates need not name. Peers'
//! certificates are checked by webpki, and X.509 v1 ones (which webpki does not read) as
//! OpenSSL checks them (`net::tls_v1`).
//!
//! The handshake runs in the connection's own task ([`handshake`]), bounded by
//! `tls-handshake-timeout` (ours: Redis has no such directive), so a peer that never
//! finishes it costs one idle task and no other client waits for it. After the handshake
//! the connection loop is the plain one, generic over the stream.
//!
//! An encrypted key (`tls-key-file-pass`) is opened with the `pkcs8` crate (PBES2:
//! PBKDF2 or scrypt with AES-CBC, what OpenSSL 3 writes). A server certificate webpki
//! cannot parse (X.509 v1, as Redis's `utils/gen-test-certs.sh` makes) is still served,
//! as OpenSSL serves it.
//!
//! What rustls cannot do is refused or left out, never faked:
//! - TLSv1 and TLSv1.1 are not offered (a `tls-protocols` naming only those is an error);
//! - cipher names outside rustls's suites (the CBC and non-ECDHE ones) are skipped as
//!   OpenSSL skips unknown names, and a list with none left is an error;
//! - `tls-dh-params-file` is accepted and unused (rustls offers ECDHE only), and
//!   `tls-session-cache-timeout` is accepted and unused (rustls's cache evicts by size).

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{
    CertificateError, CipherSuite, ClientConfig, DigitallySignedStruct, DistinguishedName,
    InconsistentKeys, RootCertStore, ServerConfig, SignatureScheme, SupportedCipherSuite,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::tls_v1::{self, Authorities};
use crate::config::Config;

/// The parameters whose CONFIG SET rebuilds the TLS configuration (Redis's
/// `applyTlsCfg`), even when set to the value they have: a certificate replaced at the
/// same path is loaded again.
pub const RELOADING: &[&str] = &[
    "tls-cert-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-client-key-file-pass",
    "tls-dh-params-file",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-protocols",
    "tls-ciphers",
    "tls-ciphersuites",
    "tls-prefer-server-ciphers",
    "tls-session-caching",
    "tls-session-cache-size",
    "tls-session-cache-timeout",
    "tls-cluster",
    "tls-replication",
    "tls-auth-clients",
];

/// CONFIG SET's reason when a TLS parameter leaves a configuration that does not load.
pub const UPDATE_FAILED: &str = "Unable to update TLS configuration. Check server logs.";

/// The start-up failure line (the details are logged before it).
pub const CONFIGURE_FAILED: &str = "Failed to configure TLS. Check logs for more info.";

/// What the `tls-*` directives build: both sides of every TLS connection this server
/// takes part in.
#[derive(Clone, Debug)]
pub struct Contexts {
    /// For connections accepted on the TLS port.
    pub server: Arc<ServerConfig>,
    /// For connections accepted on the bus port with `tls-cluster`: a certificate the CA
    /// signed is required whatever `tls-auth-clients` says (Redis's
    /// `TLS_CLIENT_AUTH_YES` there). `None` without a CA.
    pub bus: Option<Arc<ServerConfig>>,
    /// For connections this server opens; `None` without a CA to check peers against
    /// (then neither `tls-replication` nor `tls-cluster` is on: both require one).
    pub client: Option<Arc<ClientConfig>>,
}

/// The server's TLS state: the configurations new connections get, the accept loops of
/// the TLS port and the port they listen on.
#[derive(Default)]
pub struct Tls {
    current: RwLock<Option<Contexts>>,
    /// The TLS accept loops, replaced when CONFIG SET changes `tls-port` or `bind`.
    pub accepting: Mutex<super::listener::Accepting>,
    port: AtomicU16,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("configured", &self.current.read().is_some())
            .field("port", &self.port())
            .finish()
    }
}

impl Tls {
    /// The configurations in use now.
    pub fn current(&self) -> Option<Contexts> {
        self.current.read().clone()
    }

    /// The configuration a connection accepted now handshakes with.
    pub fn server(&self) -> Option<Arc<ServerConfig>> {
        self.current.read().as_ref().map(|c| c.server.clone())
    }

    /// The configuration a connection accepted on the bus port now handshakes with.
    pub fn bus(&self) -> Option<Arc<ServerConfig>> {
        self.current.read().as_ref().and_then(|c| c.bus.clone())
    }

    /// The configuration a connection opened now handshakes with when `wanted` (the
    /// directive of its kind: `tls-replication`, `tls-cluster`), `None` for plain TCP,
    /// or why TLS is wanted and not configured.
    pub fn client_for(&self, wanted: bool) -> io::Result<Option<Arc<ClientConfig>>> {
        if !wanted {
            return Ok(None);
        }
        self.current
            .read()
            .as_ref()
            .and_then(|c| c.client.clone())
            .map(Some)
            .ok_or_else(|| io::Error::other("TLS is not configured for outgoing connections"))
    }

    /// Replaces the configurations for connections started from now on.
    pub fn install(&self, contexts: Contexts) {
        *self.current.write() = Some(contexts);
    }

    /// The TLS port listened on (0: none).
    pub fn port(&self) -> u16 {
        self.port.load(Ordering::Relaxed)
    }

    /// Records the TLS port after binding it.
    pub fn set_port(&self, port: u16) {
        self.port.store(port, Ordering::Relaxed);
    }
}

/// Whether the configuration asks for TLS at all (Redis's condition for configuring it):
/// a TLS port, or TLS for replication or the cluster bus.
pub fn wanted(config: &Config) -> bool {
    tls_port(config) != 0
        || config.param_bool("tls-replication")
        || config.param_bool("tls-cluster")
}

/// The configured `tls-port`.
pub fn tls_port(config: &Config) -> u16 {
    u16::try_from(config.param_int("tls-port")).unwrap_or(0)
}

/// `tls-handshake-timeout` (milliseconds, ours).
pub fn handshake_timeout(config: &Config) -> Duration {
    Duration::from_millis(u64::try_from(config.param_int("tls-handshake-timeout")).unwrap_or(0))
}

/// Builds both configurations from the `tls-*` directives. The error is the line
/// redis-server logs for the same mistake.
pub fn build(config: &Config) -> Result<Contexts, String> {
    let text = |name: &str| Some(config.param(name)).filter(|v| !v.is_empty());
    let Some(cert_file) = text("tls-cert-file") else {
        return Err("No tls-cert-file configured!".into());
    };
    let Some(key_file) = text("tls-key-file") else {
        return Err("No tls-key-file configured!".into());
    };
    let auth_clients = config.param("tls-auth-clients");
    let ca_file = text("tls-ca-cert-file");
    let ca_dir = text("tls-ca-cert-dir");
    let needs_ca = auth_clients != "no"
        || config.param_bool("tls-cluster")
        || config.param_bool("tls-replication");
    if needs_ca && ca_file.is_none() && ca_dir.is_none() {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let versions = protocols(config.param("tls-protocols"))?;
    let provider = Arc::new(provider(text("tls-ciphers"), text("tls-ciphersuites"))?);

    let chain = load_certs(Path::new(cert_file))
        .map_err(|e| format!("Failed to load certificate: {cert_file}: {e}"))?;
    let key = load_key(Path::new(key_file), text("tls-key-file-pass"))
        .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
    let roots =
        match (ca_file, ca_dir) {
            (None, None) => None,
            (file, dir) => Some(load_roots(file, dir).map_err(|e| {
                format!("Failed to configure CA certificate(s) file/directory: {e}")
            })?),
        };

    let client = match &roots {
        Some(roots) => Some(build_client(config, &provider, &versions, roots)?),
        None => None,
    };
    let certified = certified_key(&provider, chain, key, key_file)?;
    let resolver = Arc::new(SingleCertAndKey::from(certified));
    // The server side, asking clients for a certificate as `auth` says.
    let server_with = |auth: &str| -> Result<Arc<ServerConfig>, String> {
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| format!("Failed to configure TLS protocols: {e}"))?;
        let builder = match (auth, &roots) {
            ("no", _) | (_, None) => builder.with_no_client_auth(),
            (mode, Some(roots)) => {
                let verifier = WebPkiClientVerifier::builder_with_provider(
                    roots.anchors.clone(),
                    provider.clone(),
                );
                let verifier = if mode == "optional" {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                let verifier = verifier.build().map_err(|e| {
                    format!("Failed to configure CA certificate(s) file/directory: {e}")
                })?;
                builder.with_client_cert_verifier(Arc::new(OrV1Client {
                    webpki: verifier,
                    v1: V1Fallback::new(roots, &provider),
                }))
            }
        };
        let mut server = builder.with_cert_resolver(resolver.clone());
        server.ignore_client_order = config.param_bool("tls-prefer-server-ciphers");
        if config.param_bool("tls-session-caching") {
            // OpenSSL reads 0 as "no limit"; rustls needs a bound, so 0 is a large one.
            let size = match config.param_int("tls-session-cache-size") {
                0 => 1 << 20,
                n => usize::try_from(n).unwrap_or(1 << 20),
            };
            server.session_storage = ServerSessionMemoryCache::new(size);
        } else {
            server.session_storage = Arc::new(NoServerSessionStorage {});
            server.send_tls13_tickets = 0;
        }
        Ok(Arc::new(server))
    };
    Ok(Contexts {
        server: server_with(auth_clients)?,
        bus: match roots {
            Some(_) => Some(server_with("yes")?),
            None => None,
        },
        client,
    })
}

/// The client side: the same protocols and suites, `tls-client-cert-file` and its key
/// (else the server's own pair) as this server's certificate, peers checked against
/// `roots`.
fn build_client(
    config: &Config,
    provider: &Arc<CryptoProvider>,
    versions: &[&'static rustls::SupportedProtocolVersion],
    roots: &Roots,
) -> Result<Arc<ClientConfig>, String> {
    let text = |name: &str| Some(config.param(name)).filter(|v| !v.is_empty());
    let (cert_file, key_file, pass) = match text("tls-client-cert-file") {
        Some(cert) => (
            cert,
            text("tls-client-key-file").unwrap_or_default(),
            text("tls-client-key-file-pass"),
        ),
        None => (
            text("tls-cert-file").unwrap_or_default(),
            text("tls-key-file").unwrap_or_default(),
            text("tls-key-file-pass"),
        ),
    };
    let chain = load_certs(Path::new(cert_file))
        .map_err(|e| format!("Failed to load certificate: {cert_file}: {e}"))?;
    let key = load_key(Path::new(key_file), pass)
        .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
    let certified = certified_key(provider, chain, key, key_file)?;
    let chain_check =
        WebPkiServerVerifier::builder_with_provider(roots.anchors.clone(), provider.clone())
            .build()
            .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?;
    let mut client = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| format!("Failed to configure TLS protocols: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ChainOnly {
            webpki: chain_check,
            v1: V1Fallback::new(roots, provider),
        }))
        .with_client_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    // Redis's client context keeps no session cache: every link is a full handshake.
    client.resumption = rustls::client::Resumption::disabled();
    Ok(Arc::new(client))
}

/// A certificate chain with its key. A certificate webpki cannot read (X.509 v1, as
/// Redis's gen-test-certs.sh makes them) is presented all the same, as OpenSSL presents
/// it; the peer judges it. Only a key that provably belongs to another certificate is
/// refused.
fn certified_key(
    provider: &CryptoProvider,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    key_file: &str,
) -> Result<CertifiedKey, String> {
    let signing_key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("Failed to load private key: {key_file}: {e}"))?;
    let certified = CertifiedKey::new(chain, signing_key);
    if let Err(rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch)) =
        certified.keys_match()
    {
        // OpenSSL's words for the same mistake.
        return Err(format!(
            "Failed to load private key: {key_file}: key values mismatch"
        ));
    }
    Ok(certified)
}

/// What both verifiers fall back on where webpki refuses a certificate: X.509 v1
/// certificates the CA signed (see [`super::tls_v1`]).
#[derive(Debug)]
struct V1Fallback {
    authorities: Authorities,
    algorithms: WebPkiSupportedAlgorithms,
}

impl V1Fallback {
    fn new(roots: &Roots, provider: &CryptoProvider) -> V1Fallback {
        V1Fallback {
            authorities: roots.authorities.clone(),
            algorithms: provider.signature_verification_algorithms,
        }
    }

    /// webpki refused `end_entity` (`refused`): accepted if it is a v1 certificate
    /// the CA signed.
    fn certificate(
        &self,
        end_entity: &CertificateDer<'_>,
        now: UnixTime,
        refused: rustls::Error,
    ) -> Result<(), rustls::Error> {
        self.authorities.verify(end_entity, now, refused)
    }

    /// webpki's check of a handshake signature, or where it refused, the check with a
    /// v1 certificate's key.
    fn signature(
        &self,
        webpki: Result<HandshakeSignatureValid, rustls::Error>,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
        tls13: bool,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        webpki.or_else(|refused| {
            tls_v1::verify_signature(message, cert, dss, &self.algorithms, tls13, refused)
        })
    }
}

/// Checks a peer's certificate chain against the CA and ignores the name it is for, as
/// OpenSSL does for Redis's outgoing connections (`SSL_VERIFY_PEER` with no host set). A
/// v1 certificate the CA signed passes too (see [`super::tls_v1`]).
#[derive(Debug)]
struct ChainOnly {
    webpki: Arc<WebPkiServerVerifier>,
    v1: V1Fallback,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // webpki checks the name only once the chain is good, so this error says the
        // chain is.
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            Err(refused) => self
                .v1
                .certificate(end_entity, now, refused)
                .map(|()| ServerCertVerified::assertion()),
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let webpki = self.webpki.verify_tls12_signature(message, cert, dss);
        self.v1.signature(webpki, message, cert, dss, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let webpki = self.webpki.verify_tls13_signature(message, cert, dss);
        self.v1.signature(webpki, message, cert, dss, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// webpki's check of client certificates, and v1 certificates the CA signed (see
/// [`super::tls_v1`]): a replica or a client presenting one is accepted, as
/// redis-server accepts it.
#[derive(Debug)]
struct OrV1Client {
    webpki: Arc<dyn ClientCertVerifier>,
    v1: V1Fallback,
}

impl ClientCertVerifier for OrV1Client {
    fn offer_client_auth(&self) -> bool {
        self.webpki.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.webpki.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.webpki
            .verify_client_cert(end_entity, intermediates, now)
            .or_else(|refused| {
                self.v1
                    .certificate(end_entity, now, refused)
                    .map(|()| ClientCertVerified::assertion())
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let webpki = self.webpki.verify_tls12_signature(message, cert, dss);
        self.v1.signature(webpki, message, cert, dss, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let webpki = self.webpki.verify_tls13_signature(message, cert, dss);
        self.v1.signature(webpki, message, cert, dss, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// The client side of the TLS handshake on a connected socket to `host`.
pub async fn connect(
    config: Arc<ClientConfig>,
    host: &str,
    stream: TcpStream,
) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    tokio_rustls::TlsConnector::from(config)
        .connect(server_name(host), stream)
        .await
}

/// The name a handshake to `host` carries: the host itself when it is a DNS name or an
/// address; anything else (names are not checked) a placeholder, so it still connects.
pub fn server_name(host: &str) -> ServerName<'static> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .unwrap_or_else(|_| ServerName::from(std::net::Ipv4Addr::LOCALHOST))
}

/// `tls-protocols`: TLSv1.2 and TLSv1.3 by default, as Redis.
fn protocols(text: &str) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    if text.trim().is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut versions = Vec::new();
    let mut old_only = false;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        match word.to_ascii_lowercase().as_str() {
            "tlsv1.3" => versions.push(&rustls::version::TLS13),
            "tlsv1.2" => versions.push(&rustls::version::TLS12),
            // Redis accepts them; rustls has no implementation of either.
            "tlsv1" | "tlsv1.1" => old_only = true,
            _ => {
                return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into())
            }
        }
    }
    if versions.is_empty() && old_only {
        return Err(
            "tls-protocols: TLSv1 and TLSv1.1 are not supported by rustls; add TLSv1.2 or TLSv1.3"
                .into(),
        );
    }
    Ok(versions)
}

/// rustls's cipher suites with their OpenSSL names (what `tls-ciphers` and
/// `tls-ciphersuites` are written in) and IANA names.
const SUITE_NAMES: &[(CipherSuite, &str, &str)] = &[
    (
        CipherSuite::TLS13_AES_256_GCM_SHA384,
        "TLS_AES_256_GCM_SHA384",
        "TLS13_AES_256_GCM_SHA384",
    ),
    (
        CipherSuite::TLS13_AES_128_GCM_SHA256,
        "TLS_AES_128_GCM_SHA256",
        "TLS13_AES_128_GCM_SHA256",
    ),
    (
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS13_CHACHA20_POLY1305_SHA256",
    ),
    (
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
];

/// The ring provider with the suites `tls-ciphers` (TLSv1.2) and `tls-ciphersuites`
/// (TLSv1.3) allow, in the order they name them (the server's preference with
/// `tls-prefer-server-ciphers yes`).
fn provider(ciphers: Option<&str>, ciphersuites: Option<&str>) -> Result<CryptoProvider, String> {
    let mut provider = rustls::crypto::ring::default_provider();
    let all = std::mem::take(&mut provider.cipher_suites);
    let (tls13, tls12): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|s| matches!(s, SupportedCipherSuite::Tls13(_)));
    let tls13 = match ciphersuites {
        None => tls13,
        Some(list) => select(&tls13, list)
            .ok_or_else(|| format!("Failed to configure ciphersuites: {list}"))?,
    };
    let tls12 = match ciphers {
        None => tls12,
        Some(list) => {
            select(&tls12, list).ok_or_else(|| format!("Failed to configure ciphers: {list}"))?
        }
    };
    provider.cipher_suites = tls13.into_iter().chain(tls12).collect();
    Ok(provider)
}

/// The suites of `available` an OpenSSL-style list names, in its order: names separated
/// by `:`, `,` or spaces; `ALL`, `DEFAULT`, `HIGH` and `SECURE` stand for every suite;
/// `!name` or `-name` removes one; names rustls does not implement are skipped, as
/// OpenSSL skips unknown ones. `None` when nothing is left (OpenSSL's failure).
fn select(available: &[SupportedCipherSuite], list: &str) -> Option<Vec<SupportedCipherSuite>> {
    let find = |name: &str| {
        SUITE_NAMES
            .iter()
            .find(|(_, openssl, iana)| {
                openssl.eq_ignore_ascii_case(name) || iana.eq_ignore_ascii_case(name)
            })
            .and_then(|(id, _, _)| available.iter().find(|s| s.suite() == *id))
            .copied()
    };
    let mut chosen: Vec<SupportedCipherSuite> = Vec::new();
    for word in list.split([':', ',', ' ']).filter(|w| !w.is_empty()) {
        if let Some(name) = word.strip_prefix(['!', '-']) {
            if let Some(suite) = find(name) {
                chosen.retain(|s| s.suite() != suite.suite());
            }
            continue;
        }
        let word = word.trim_start_matches('+');
        if ["ALL", "DEFAULT", "HIGH", "SECURE"]
            .iter()
            .any(|k| k.eq_ignore_ascii_case(word))
        {
            for suite in available {
                if !chosen.iter().any(|s| s.suite() == suite.suite()) {
                    chosen.push(*suite);
                }
            }
        } else if let Some(suite) = find(word) {
            if !chosen.iter().any(|s| s.suite() == suite.suite()) {
                chosen.push(suite);
            }
        }
    }
    (!chosen.is_empty()).then_some(chosen)
}

/// Every certificate of a PEM file (the chain, leaf first).
fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, e))?;
    if certs.is_empty() {
        return Err("no certificate found".into());
    }
    Ok(certs)
}

/// The private key of a PEM file: PKCS#8, PKCS#1 or SEC1, or an encrypted PKCS#8 key
/// (`BEGIN ENCRYPTED PRIVATE KEY`, what `openssl` writes when given a pass phrase)
/// opened with `tls-key-file-pass`.
fn load_key(path: &Path, pass: Option<&str>) -> Result<PrivateKeyDer<'static>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    if !text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| pem_error(path, e));
    }
    // OpenSSL's words for a key it cannot open.
    let Some(pass) = pass else {
        return Err("bad decrypt (an encrypted key needs tls-key-file-pass)".into());
    };
    let start = text
        .find("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        .unwrap_or(0);
    let (_, document) = pkcs8::SecretDocument::from_pem(&text[start..])
        .map_err(|e| format!("bad encrypted key: {e}"))?;
    let encrypted = pkcs8::EncryptedPrivateKeyInfo::try_from(document.as_bytes())
        .map_err(|e| format!("bad encrypted key: {e}"))?;
    let key = encrypted
        .decrypt(pass)
        .map_err(|e| format!("bad decrypt: {e}"))?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        key.as_bytes().to_vec(),
    )))
}

/// The trust anchors of `tls-ca-cert-file` and every certificate file in
/// `tls-ca-cert-dir` (OpenSSL looks those up by hashed name; all are loaded here).
/// The CA certificates: as webpki's trust anchors, and as they are, for the v1
/// certificates they signed (see [`super::tls_v1`]).
fn load_roots(file: Option<&str>, dir: Option<&str>) -> Result<Roots, String> {
    let mut roots = RootCertStore::empty();
    let mut authorities = Vec::new();
    if let Some(file) = file {
        for cert in load_certs(Path::new(file)).map_err(|e| format!("{file}: {e}"))? {
            roots
                .add(cert.clone())
                .map_err(|e| format!("{file}: {e}"))?;
            authorities.push(cert);
        }
    }
    if let Some(dir) = dir {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{dir}: {e}"))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            // Files that hold no certificate (CRLs, notes) are skipped, as OpenSSL's
            // lookup never reads them.
            if let Ok(certs) = load_certs(&path) {
                for cert in certs {
                    if roots.add(cert.clone()).is_ok() {
                        authorities.push(cert);
                    }
                }
            }
        }
    }
    if roots.is_empty() {
        return Err("no CA certificate found".into());
    }
    Ok(Roots {
        anchors: Arc::new(roots),
        authorities: Authorities::new(authorities),
    })
}

/// What [`load_roots`] read.
#[derive(Clone)]
struct Roots {
    anchors: Arc<RootCertStore>,
    authorities: Authorities,
}

fn pem_error(path: &Path, e: rustls_pki_types::pem::Error) -> String {
    match e {
        rustls_pki_types::pem::Error::Io(io) => io.to_string(),
        rustls_pki_types::pem::Error::NoItemsFound => {
            format!("no PEM section found in {}", path.display())
        }
        other => format!("{other:?}"),
    }
}

/// The first byte of every TLS handshake: a record of content type `handshake`.
const HANDSHAKE_RECORD: u8 = 0x16;

/// The server side of the TLS handshake on an accepted socket, given up after `timeout`.
///
/// A failed handshake closes with a reset, as redis-server's does. A peer whose first
/// byte cannot start a TLS record (a client speaking plain RESP to the TLS port) is reset
/// before rustls sees it, without a TLS alert: it reads "Connection reset by peer", as from
/// redis-server, rather than alert bytes to misread as a reply.
pub async fn handshake(
    config: Arc<ServerConfig>,
    stream: TcpStream,
    timeout: Duration,
) -> io::Result<TlsStream<TcpStream>> {
    let deadline = tokio::time::Instant::now() + timeout;
    let timed_out = || io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out");
    let mut first = [0u8; 1];
    match tokio::time::timeout_at(deadline, stream.peek(&mut first)).await {
        Err(_) => return Err(timed_out()),
        Ok(Err(e)) => return Err(e),
        Ok(Ok(0)) => return Err(io::ErrorKind::UnexpectedEof.into()),
        Ok(Ok(_)) if first[0] != HANDSHAKE_RECORD => {
            let _ = stream.set_zero_linger();
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a TLS handshake (plain text on the TLS port?)",
            ));
        }
        Ok(Ok(_)) => {}
    }
    let accept = TlsAcceptor::from(config).accept(stream).into_fallible();
    match tokio::time::timeout_at(deadline, accept).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err((e, socket))) => {
            let _ = socket.set_zero_linger();
            Err(e)
        }
        Err(_) => Err(timed_out()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_lists() {
        assert_eq!(protocols("").map(|v| v.len()), Ok(2));
        assert_eq!(protocols("TLSv1.2").map(|v| v.len()), Ok(1));
        assert_eq!(protocols("tlsv1.1 TLSv1.3").map(|v| v.len()), Ok(1));
        assert!(protocols("TLSv1.1").is_err());
        assert!(protocols("SSLv3")
            .unwrap_err()
            .starts_with("Invalid tls-protocols specified."));
    }

    #[test]
    fn cipher_lists() {
        let p = provider(Some("ECDHE-RSA-AES128-GCM-SHA256:NOPE"), None).unwrap();
        let names: Vec<_> = p.cipher_suites.iter().map(|s| s.suite()).collect();
        assert!(names.contains(&CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256));
        assert!(!names.contains(&CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384));
        assert!(names.contains(&CipherSuite::TLS13_AES_128_GCM_SHA256));
        let p = provider(None, Some("TLS_CHACHA20_POLY1305_SHA256")).unwrap();
        let tls13: Vec<_> = p
            .cipher_suites
            .iter()
            .filter(|s| matches!(s, SupportedCipherSuite::Tls13(_)))
            .map(|s| s.suite())
            .collect();
        assert_eq!(tls13, [CipherSuite::TLS13_CHACHA20_POLY1305_SHA256]);
        assert_eq!(
            provider(Some("RC4-MD5"), None).unwrap_err(),
            "Failed to configure ciphers: RC4-MD5"
        );
        let p = provider(Some("HIGH:!ECDHE-RSA-AES256-GCM-SHA384"), None).unwrap();
        assert!(!p
            .cipher_suites
            .iter()
            .any(|s| s.suite() == CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384));
    }

    #[test]
    fn directives_from_a_configuration_file() {
        let config = Config::from_text(
            "port 0\ntls-port 6380\ntls-auth-clients optional\ntls-handshake-timeout 250\n\
             tls-protocols \"TLSv1.2 TLSv1.3\"\ntls-cert-file /nonexistent/a.crt\n\
             tls-key-file /nonexistent/a.key\ntls-ca-cert-dir /nonexistent\n",
        )
        .unwrap();
        assert!(wanted(&config));
        assert_eq!(tls_port(&config), 6380);
        assert_eq!(handshake_timeout(&config), Duration::from_millis(250));
        assert_eq!(config.param("tls-protocols"), "TLSv1.2 TLSv1.3");
        assert!(build(&config)
            .unwrap_err()
            .starts_with("Failed to load certificate: /nonexistent/a.crt: "));
        let e = Config::from_text("tls-auth-clients sometimes").unwrap_err();
        assert!(
            e.to_string()
                .contains("argument(s) must be one of the following"),
            "{e}"
        );
    }

    #[test]
    fn missing_files_are_named() {
        let config = Config::from_args(["--tls-port", "1"]).unwrap();
        assert_eq!(build(&config).unwrap_err(), "No tls-cert-file configured!");
        let config = Config::from_args([
            "--tls-port",
            "1",
            "--tls-cert-file",
            "/nonexistent/c.crt",
            "--tls-key-file",
            "/nonexistent/c.key",
        ])
        .unwrap();
        assert!(build(&config)
            .unwrap_err()
            .starts_with("Either tls-ca-cert-file"));
        let config = Config::from_args([
            "--tls-port",
            "1",
            "--tls-cert-file",
            "/nonexistent/c.crt",
            "--tls-key-file",
            "/nonexistent/c.key",
            "--tls-auth-clients",
            "no",
        ])
        .unwrap();
        assert!(build(&config)
            .unwrap_err()
            .starts_with("Failed to load certificate: /nonexistent/c.crt: "));
    }
}
