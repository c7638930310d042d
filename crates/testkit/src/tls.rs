//! Test certificates: a CA, a server certificate and a client certificate, made at test
//! time with rcgen and written as PEM files in a temporary directory.
//!
//! The server certificate is valid for `127.0.0.1`, `localhost` and [`TlsCerts::SNI_NAME`]
//! and carries both the serverAuth and clientAuth purposes, because Redis cluster nodes and
//! replicas present their server certificate when they connect to each other over TLS.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tempfile::TempDir;

use crate::error::{Error, Result};

/// A CA with a server and a client certificate, as PEM strings and files.
///
/// Cloning is cheap and shares the files; they are removed when the last clone is dropped.
/// Servers started with these certificates keep a clone, so restarts find the files.
///
/// ```no_run
/// let certs = redline_testkit::TlsCerts::generate()?;
/// assert!(certs.ca_cert_path().exists());
/// assert!(certs.ca_cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
/// # Ok::<(), redline_testkit::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TlsCerts {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: TempDir,
    ca: Pem,
    server: Pem,
    client: Pem,
    ca_der: Vec<u8>,
    /// The CA's name and key, to issue more certificates ([`TlsCerts::issue_server_cert`]).
    issuer: Issuer<'static, KeyPair>,
}

#[derive(Debug)]
struct Pem {
    cert: String,
    key: String,
}

/// File names inside the certificate directory.
const CA_CERT: &str = "ca.crt";
const CA_KEY: &str = "ca.key";
const SERVER_CERT: &str = "server.crt";
const SERVER_KEY: &str = "server.key";
const CLIENT_CERT: &str = "client.crt";
const CLIENT_KEY: &str = "client.key";

impl TlsCerts {
    /// An extra DNS name in the server certificate, for SNI and hostname-verification tests.
    pub const SNI_NAME: &'static str = "redline.test";

    /// Generates a fresh CA, server and client certificate and writes them to a new
    /// temporary directory.
    pub fn generate() -> Result<Self> {
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "redline test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let ca = Pem {
            cert: ca_cert.pem(),
            key: ca_key.serialize_pem(),
        };
        let ca_der = ca_cert.der().to_vec();
        let issuer = Issuer::new(ca_params, ca_key);

        let server = leaf(
            &issuer,
            "redline test server",
            vec![
                "127.0.0.1".into(),
                "localhost".into(),
                Self::SNI_NAME.into(),
            ],
            vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            false,
        )?;
        let client = leaf(
            &issuer,
            "redline test client",
            Vec::new(),
            vec![ExtendedKeyUsagePurpose::ClientAuth],
            false,
        )?;

        let dir = tempfile::Builder::new()
            .prefix("redline-tls-")
            .tempdir()
            .map_err(|e| Error::io("create certificate directory", e))?;
        for (name, text) in [
            (CA_CERT, &ca.cert),
            (CA_KEY, &ca.key),
            (SERVER_CERT, &server.cert),
            (SERVER_KEY, &server.key),
            (CLIENT_CERT, &client.cert),
            (CLIENT_KEY, &client.key),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text)
                .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
        }
        Ok(TlsCerts {
            inner: Arc::new(Inner {
                dir,
                ca,
                server,
                client,
                ca_der,
                issuer,
            }),
        })
    }

    /// Issues one more server certificate from the same CA and writes it as
    /// `<name>.crt` and `<name>.key` in [`dir`](Self::dir): common name `name`, valid
    /// for `hosts` (DNS names or IP addresses), and expired since 2001 when `expired`.
    /// Returns the certificate and key paths. For rotation, wrong-host and expiry tests.
    ///
    /// ```no_run
    /// let certs = redline_testkit::TlsCerts::generate()?;
    /// let (cert, key) = certs.issue_server_cert("other", &["other.example"], false)?;
    /// assert!(cert.exists() && key.exists());
    /// # Ok::<(), redline_testkit::Error>(())
    /// ```
    pub fn issue_server_cert(
        &self,
        name: &str,
        hosts: &[&str],
        expired: bool,
    ) -> Result<(PathBuf, PathBuf)> {
        let pem = leaf(
            &self.inner.issuer,
            name,
            hosts.iter().map(|h| h.to_string()).collect(),
            vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            expired,
        )?;
        let cert = self.dir().join(format!("{name}.crt"));
        let key = self.dir().join(format!("{name}.key"));
        for (path, text) in [(&cert, &pem.cert), (&key, &pem.key)] {
            std::fs::write(path, text)
                .map_err(|e| Error::io(format!("write {}", path.display()), e))?;
        }
        Ok((cert, key))
    }

    /// The directory holding the PEM files.
    pub fn dir(&self) -> &Path {
        self.inner.dir.path()
    }

    /// The CA certificate file.
    pub fn ca_cert_path(&self) -> PathBuf {
        self.dir().join(CA_CERT)
    }
    /// The CA private key file.
    pub fn ca_key_path(&self) -> PathBuf {
        self.dir().join(CA_KEY)
    }
    /// The server certificate file.
    pub fn server_cert_path(&self) -> PathBuf {
        self.dir().join(SERVER_CERT)
    }
    /// The server private key file.
    pub fn server_key_path(&self) -> PathBuf {
        self.dir().join(SERVER_KEY)
    }
    /// The client certificate file.
    pub fn client_cert_path(&self) -> PathBuf {
        self.dir().join(CLIENT_CERT)
    }
    /// The client private key file.
    pub fn client_key_path(&self) -> PathBuf {
        self.dir().join(CLIENT_KEY)
    }

    /// The CA certificate, PEM.
    pub fn ca_cert_pem(&self) -> &str {
        &self.inner.ca.cert
    }
    /// The CA private key, PEM (PKCS#8), for tests that sign more certificates.
    pub fn ca_key_pem(&self) -> &str {
        &self.inner.ca.key
    }
    /// The server certificate, PEM.
    pub fn server_cert_pem(&self) -> &str {
        &self.inner.server.cert
    }
    /// The server private key, PEM (PKCS#8).
    pub fn server_key_pem(&self) -> &str {
        &self.inner.server.key
    }
    /// The client certificate, PEM.
    pub fn client_cert_pem(&self) -> &str {
        &self.inner.client.cert
    }
    /// The client private key, PEM (PKCS#8).
    pub fn client_key_pem(&self) -> &str {
        &self.inner.client.key
    }
    /// The CA certificate, DER.
    pub fn ca_cert_der(&self) -> &[u8] {
        &self.inner.ca_der
    }

    /// The `redis-server` arguments that load these files (without the port flags).
    pub(crate) fn redis_server_args(&self) -> Vec<String> {
        let path = |p: PathBuf| p.display().to_string();
        vec![
            "--tls-cert-file".into(),
            path(self.server_cert_path()),
            "--tls-key-file".into(),
            path(self.server_key_path()),
            "--tls-ca-cert-file".into(),
            path(self.ca_cert_path()),
            "--tls-auth-clients".into(),
            "optional".into(),
        ]
    }

    /// The `redis-cli` arguments that connect with these files (client certificate included).
    pub fn redis_cli_args(&self) -> Vec<String> {
        let path = |p: PathBuf| p.display().to_string();
        vec![
            "--tls".into(),
            "--cacert".into(),
            path(self.ca_cert_path()),
            "--cert".into(),
            path(self.client_cert_path()),
            "--key".into(),
            path(self.client_key_path()),
        ]
    }
}

fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    common_name: &str,
    names: Vec<String>,
    purposes: Vec<ExtendedKeyUsagePurpose>,
    expired: bool,
) -> Result<Pem> {
    let mut params = CertificateParams::new(names)?;
    if expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = purposes;
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer)?;
    Ok(Pem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    })
}
