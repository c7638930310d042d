//! A `redline-server` process for one test, with the same lifecycle as `RedisServer`.
//!
//! The binary is `$REDLINE_SERVER_BIN` when set, else `redline-server` in the cargo target
//! directory the running test binary was built into (`target/<profile>/`). Build it first
//! (`cargo build -p redline-server`); `cargo test --workspace` builds it as part of the
//! workspace.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use std::process::Command;

use crate::control::{Reply, TlsClient};
use crate::error::{Error, Result};
use crate::process::{ServerProcess, Spec};
use crate::redis::{requirepass, STARTUP_TIMEOUT};
use crate::tls::TlsCerts;

/// The configuration file [`RedlineServerBuilder::config_file`] writes.
const CONFIG_FILE: &str = "redline.conf";

pub(crate) const MISSING_REDLINE: &str =
    "build it with `cargo build -p redline-server`, or set REDLINE_SERVER_BIN";

/// A `redline-server` on a free loopback port, started with `--port <port> --bind
/// 127.0.0.1 --enable-debug-command yes` (with TLS: `--port 0 --tls-port <port>` and the
/// certificate files) plus any extra arguments; SIGKILLed and its directory removed when
/// dropped.
///
/// ```no_run
/// use redline_testkit::{RedlineServer, Reply};
///
/// let server = RedlineServer::start()?;
/// assert_eq!(server.cmd(&["PING"])?, Reply::Simple("PONG".into()));
/// # Ok::<(), redline_testkit::Error>(())
/// ```
pub struct RedlineServer {
    process: ServerProcess,
    tls: Option<TlsCerts>,
    password: Option<String>,
}

impl std::fmt::Debug for RedlineServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedlineServer")
            .field("addr", &self.addr())
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Options for [`RedlineServer`]; see [`RedlineServer::builder`].
#[derive(Debug, Clone)]
pub struct RedlineServerBuilder {
    args: Vec<String>,
    config_file: Option<String>,
    password: Option<String>,
    tls: Option<TlsCerts>,
    startup_timeout: Duration,
}

impl RedlineServerBuilder {
    /// Adds raw arguments after the kit's `--port`, `--bind` and `--enable-debug-command`
    /// (a later one wins).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Starts the server with a configuration file holding `text` (in its private
    /// directory, `redline.conf`), so CONFIG REWRITE has a file to write. The file is
    /// written once: a [`restart`](RedlineServer::restart) reads what the server
    /// rewrote. The kit's `--port` and `--bind` still follow it on the command line.
    pub fn config_file(mut self, text: impl Into<String>) -> Self {
        self.config_file = Some(text.into());
        self
    }

    /// Passes `--requirepass <password>` and authenticates the kit's own checks.
    pub fn password(mut self, password: impl Into<String>) -> Self {
        let password = password.into();
        self.args.push("--requirepass".into());
        self.args.push(password.clone());
        self.password = Some(password);
        self
    }

    /// Serves TLS only, with these certificates (`--port 0 --tls-port <free>`, clients may
    /// but need not present a certificate), as [`crate::RedisServerBuilder::tls`] does.
    ///
    /// ```no_run
    /// use redline_testkit::{RedlineServer, TlsCerts};
    ///
    /// let certs = TlsCerts::generate()?;
    /// let server = RedlineServer::builder().tls(&certs).start()?;
    /// assert!(server.url().starts_with("rediss://"));
    /// # Ok::<(), redline_testkit::Error>(())
    /// ```
    pub fn tls(mut self, certs: &TlsCerts) -> Self {
        self.tls = Some(certs.clone());
        self
    }

    /// How long the server may take to answer `PING` (default 20 s).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Starts the server and waits until it answers `PING`.
    pub fn start(self) -> Result<RedlineServer> {
        let password = self.password.or_else(|| requirepass(&self.args));
        let tls = self.tls;
        let control_tls = tls
            .as_ref()
            .map(|c| TlsClient::new(c.ca_cert_der()))
            .transpose()?;
        let certs = tls.clone();
        let extra = self.args;
        let config_file = self.config_file;
        let spec = Spec {
            program: redline_server_bin()?,
            name: "redline-server",
            args: Arc::new(move |port, dir| {
                let mut args: Vec<String> = Vec::new();
                if let Some(text) = &config_file {
                    args.push(crate::redis::write_config_file(dir, CONFIG_FILE, text));
                }
                match &certs {
                    None => args.extend(["--port".into(), port.to_string()]),
                    Some(certs) => {
                        args.extend([
                            "--port".into(),
                            "0".into(),
                            "--tls-port".into(),
                            port.to_string(),
                        ]);
                        args.extend(certs.redis_server_args());
                    }
                }
                // DEBUG is off by default, as in Redis 7; tests use it (as Redis's own
                // test suite turns it on). A test's own arguments come after and win.
                args.extend(
                    ["--bind", "127.0.0.1", "--enable-debug-command", "yes"].map(String::from),
                );
                args.extend(extra.iter().cloned());
                args
            }),
            with_bus: false,
            tls: control_tls,
            password: password.clone(),
            // INFO's process_id may not exist yet in redline-server.
            check_pid: false,
            startup_timeout: self.startup_timeout,
            missing_hint: MISSING_REDLINE,
        };
        Ok(RedlineServer {
            process: ServerProcess::start(spec)?,
            tls,
            password,
        })
    }
}

impl RedlineServer {
    /// Starts a `redline-server` with the defaults.
    pub fn start() -> Result<Self> {
        Self::builder().start()
    }

    /// Options: extra arguments, password.
    pub fn builder() -> RedlineServerBuilder {
        RedlineServerBuilder {
            args: Vec::new(),
            config_file: None,
            password: None,
            tls: None,
            startup_timeout: STARTUP_TIMEOUT,
        }
    }

    /// The port it listens on (the TLS port for a TLS server).
    pub fn port(&self) -> u16 {
        self.process.port()
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.process.addr()
    }

    /// `redis://127.0.0.1:<port>` (`rediss://` with TLS, `:<password>@` when one is set).
    pub fn url(&self) -> String {
        crate::redis::url(self.tls.is_some(), self.password.as_deref(), self.addr())
    }

    /// The certificates of a TLS server.
    pub fn tls(&self) -> Option<&TlsCerts> {
        self.tls.as_ref()
    }

    /// A `redis-cli` command already pointed at this server (host, port, TLS files,
    /// password); add arguments and run it.
    pub fn cli(&self) -> Command {
        crate::redis::cli_command(self.addr(), self.tls.as_ref(), self.password.as_deref())
    }

    /// The process id, or `None` after [`kill`](Self::kill).
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// The server's private working directory (its current directory).
    pub fn dir(&self) -> &Path {
        self.process.dir()
    }

    /// The configuration file given with [`RedlineServerBuilder::config_file`] (it may
    /// not exist otherwise).
    pub fn config_path(&self) -> PathBuf {
        self.process.dir().join(CONFIG_FILE)
    }

    /// Whether the process is still alive.
    pub fn is_running(&mut self) -> bool {
        self.process.is_running()
    }

    /// SIGKILLs the server and reaps it; the port stays reserved for a restart.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Starts the server again on the same port and waits until it answers.
    pub fn restart(&mut self) -> Result<()> {
        self.process.restart()
    }

    /// Sends one command on a fresh control connection.
    pub fn cmd(&self, args: &[&str]) -> Result<Reply> {
        self.process.cmd(args)
    }

    /// The last lines of the server's output.
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }
}

/// `$REDLINE_SERVER_BIN`, else `<target>/<profile>/redline-server` next to the running
/// test binary (which lives in `<target>/<profile>/deps/` or `<target>/<profile>/examples/`).
pub fn redline_server_bin() -> Result<PathBuf> {
    if let Some(bin) = std::env::var_os("REDLINE_SERVER_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("locate the running executable", e))?;
    let candidates = exe
        .ancestors()
        .skip(1)
        .take(3)
        .map(|dir| dir.join("redline-server"))
        .collect::<Vec<_>>();
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| {
            Error::NotFound(format!(
                "redline-server not found (looked in {candidates:?}): {MISSING_REDLINE}"
            ))
        })
}
