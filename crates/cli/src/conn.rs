//! Connection flags shared by every subcommand, named as redis-cli names them, and their
//! translation into a [`redline::Config`].
//!
//! `-h` is the host (as in redis-cli), so commands that flatten [`ConnArgs`] must set
//! `#[command(disable_help_flag = true)]`; `ConnArgs` brings a long `--help` back.

use std::path::PathBuf;

use clap::{ArgAction, Args};
use redline::{CaCerts, ClientCert, Config, Protocol};

/// redis-cli's connection flags (`-h -p -a --user --pass -u --tls --cacert --cert --key
/// --sni --insecure -3`). The database (`-n` in redis-cli, `--dbnum` in redis-benchmark)
/// is left to each subcommand because the letters clash between the two tools.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct ConnArgs {
    /// Server hostname (default: 127.0.0.1).
    #[arg(short = 'h', long = "host", value_name = "HOSTNAME")]
    pub(crate) host: Option<String>,
    /// Server port (default: 6379).
    #[arg(short = 'p', long = "port", value_name = "PORT")]
    pub(crate) port: Option<u16>,
    /// Password to use when connecting to the server.
    #[arg(short = 'a', long = "pass", value_name = "PASSWORD")]
    pub(crate) password: Option<String>,
    /// Used to send ACL style 'AUTH username pass'. Needs -a.
    #[arg(long = "user", value_name = "USERNAME")]
    pub(crate) user: Option<String>,
    /// Server URI: redis://user:password@host:port/dbnum (rediss:// for TLS).
    #[arg(short = 'u', long = "uri", value_name = "URI")]
    pub(crate) uri: Option<String>,
    /// Establish a secure TLS connection.
    #[arg(long = "tls")]
    pub(crate) tls: bool,
    /// CA certificate file to verify with.
    #[arg(long = "cacert", value_name = "FILE")]
    pub(crate) cacert: Option<PathBuf>,
    /// Client certificate to authenticate with.
    #[arg(long = "cert", value_name = "FILE")]
    pub(crate) cert: Option<PathBuf>,
    /// Private key file to authenticate with.
    #[arg(long = "key", value_name = "FILE")]
    pub(crate) key: Option<PathBuf>,
    /// Server name indication for TLS (and the name the certificate is checked against).
    #[arg(long = "sni", value_name = "HOST")]
    pub(crate) sni: Option<String>,
    /// Allow insecure TLS connection by skipping cert validation.
    #[arg(long = "insecure")]
    pub(crate) insecure: bool,
    /// Start session in RESP3 protocol mode.
    #[arg(short = '3')]
    pub(crate) resp3: bool,
    /// Print help.
    #[arg(long = "help", action = ArgAction::Help)]
    pub(crate) help: Option<bool>,
}

/// Why the flags do not make a usable configuration.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnError {
    /// `-u` could not be parsed.
    #[error("Invalid URI: {0}")]
    Uri(redline::Error),
    /// A certificate or key file could not be read.
    #[error("Could not read {path}: {source}")]
    File {
        /// The file named on the command line.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `--cert` without `--key` or the other way round.
    #[error("--cert and --key must be given together")]
    CertWithoutKey,
}

impl ConnArgs {
    /// True when the user named a server (`-h`, `-p` or `-u`); `bench` starts an embedded
    /// server otherwise.
    pub(crate) fn names_server(&self) -> bool {
        self.host.is_some() || self.port.is_some() || self.uri.is_some()
    }

    /// The client configuration these flags describe. Flags override what the URI says,
    /// as in redis-cli. The protocol is RESP2 unless `-3`, as in redis-cli.
    pub(crate) fn config(&self) -> Result<Config, ConnError> {
        let mut cfg = match &self.uri {
            Some(uri) => Config::from_url(uri).map_err(ConnError::Uri)?,
            None => Config::default(),
        };
        cfg.protocol = if self.resp3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        };
        if let Some(host) = &self.host {
            cfg.host = host.clone();
        }
        if let Some(port) = self.port {
            cfg.port = port;
        }
        if let Some(password) = &self.password {
            cfg.password = Some(password.clone());
        }
        if let Some(user) = &self.user {
            cfg.username = Some(user.clone());
        }
        let wants_tls = self.tls
            || self.cacert.is_some()
            || self.cert.is_some()
            || self.sni.is_some()
            || self.insecure;
        if self.tls || (cfg.tls.is_some() && wants_tls) {
            let mut tls = cfg.tls.take().unwrap_or_default();
            if let Some(ca) = &self.cacert {
                tls.ca = Some(CaCerts::File(ca.clone()));
            }
            match (&self.cert, &self.key) {
                (Some(cert), Some(key)) => {
                    tls.client_cert = Some(ClientCert {
                        cert_pem: read(cert)?,
                        key_pem: read(key)?,
                    });
                }
                (None, None) => {}
                _ => return Err(ConnError::CertWithoutKey),
            }
            if let Some(sni) = &self.sni {
                tls.server_name = Some(sni.clone());
            }
            tls.insecure |= self.insecure;
            cfg.tls = Some(tls);
        }
        Ok(cfg)
    }
}

fn read(path: &PathBuf) -> Result<Vec<u8>, ConnError> {
    std::fs::read(path).map_err(|source| ConnError::File {
        path: path.clone(),
        source,
    })
}
