//! A standalone `redis-server` (plain or TLS) for one test.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::control::{Reply, TlsClient};
use crate::error::Result;
use crate::process::{ServerProcess, Spec};
use crate::tls::TlsCerts;

/// Default time a server gets to answer `PING` after it was spawned.
pub(crate) const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// What to do when `redis-server` or `redis-cli` is missing.
pub(crate) const MISSING_REDIS: &str =
    "`make deps` installs redis-server and redis-tools (or set REDIS_SERVER_BIN / REDIS_CLI_BIN)";

/// The `redis-server` program: `$REDIS_SERVER_BIN`, else `redis-server` from `PATH`.
pub(crate) fn redis_server_bin() -> PathBuf {
    std::env::var_os("REDIS_SERVER_BIN").map_or_else(|| "redis-server".into(), PathBuf::from)
}

/// The `redis-cli` program: `$REDIS_CLI_BIN`, else `redis-cli` from `PATH`.
pub(crate) fn redis_cli_bin() -> PathBuf {
    std::env::var_os("REDIS_CLI_BIN").map_or_else(|| "redis-cli".into(), PathBuf::from)
}

/// Arguments every test `redis-server` gets: loopback only, no persistence, its own dir,
/// no delay before a replica's first sync.
pub(crate) fn base_args(port: u16, dir: &Path, tls: Option<&TlsCerts>) -> Vec<String> {
    let mut args: Vec<String> = match tls {
        None => vec!["--port".into(), port.to_string()],
        Some(certs) => {
            let mut a = vec![
                "--port".into(),
                "0".into(),
                "--tls-port".into(),
                port.to_string(),
            ];
            a.extend(certs.redis_server_args());
            a
        }
    };
    args.extend(
        [
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            // A replica would otherwise wait 5 s for company before its first full sync,
            // which is most of a cluster's start-up and of every rejoin after a restart.
            "--repl-diskless-sync-delay",
            "0",
            "--dir",
        ]
        .map(String::from),
    );
    args.push(dir.display().to_string());
    args
}

/// The configuration file `config_file` options write.
const CONFIG_FILE: &str = "redis.conf";

/// Writes `text` to `dir/name` unless the file exists (a restarted server reads what it
/// rewrote) and returns its path. A failed write shows as the server exiting with "can't
/// open config file", which the launch reports with its log.
pub(crate) fn write_config_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    if !path.exists() {
        let _ = std::fs::write(&path, text);
    }
    path.display().to_string()
}

/// The password a `--requirepass` among raw arguments sets (the last one wins, as in Redis).
pub(crate) fn requirepass(args: &[String]) -> Option<String> {
    args.windows(2)
        .rev()
        .find(|w| w[0] == "--requirepass")
        .map(|w| w[1].clone())
        .filter(|p| !p.is_empty())
}

/// A `redis-server` process on a free loopback port, stopped (SIGKILL) and its directory
/// removed when dropped — also when the test panics.
///
/// ```no_run
/// use redline_testkit::{RedisServer, Reply};
///
/// let server = RedisServer::start()?;
/// assert_eq!(server.cmd(&["PING"])?, Reply::Simple("PONG".into()));
/// println!("connect to {}", server.url());
/// # Ok::<(), redline_testkit::Error>(())
/// ```
pub struct RedisServer {
    process: ServerProcess,
    tls: Option<TlsCerts>,
    password: Option<String>,
}

impl std::fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisServer")
            .field("addr", &self.addr())
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Options for [`RedisServer`]; see [`RedisServer::builder`].
#[derive(Debug, Clone)]
pub struct RedisServerBuilder {
    args: Vec<String>,
    config_file: Option<String>,
    tls: Option<TlsCerts>,
    startup_timeout: Duration,
}

impl RedisServerBuilder {
    /// Adds one `redis-server` option with its value, e.g. `.arg("--maxmemory", "10mb")`.
    /// They come after the kit's defaults, so they override them.
    pub fn arg(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.args.push(name.into());
        self.args.push(value.into());
        self
    }

    /// Adds raw `redis-server` arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Starts the server with a configuration file holding `text` (in its private
    /// directory, `redis.conf`), so CONFIG REWRITE has a file to write. The file is
    /// written once: a [`restart`](RedisServer::restart) reads what the server rewrote.
    /// The kit's arguments still follow it on the command line.
    pub fn config_file(mut self, text: impl Into<String>) -> Self {
        self.config_file = Some(text.into());
        self
    }

    /// Requires this password (`--requirepass`); the kit authenticates its own checks.
    pub fn password(self, password: impl Into<String>) -> Self {
        self.arg("--requirepass", password)
    }

    /// Serves TLS only, with these certificates (`--port 0 --tls-port <free>`, clients may
    /// but need not present a certificate).
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
    pub fn start(self) -> Result<RedisServer> {
        let password = requirepass(&self.args);
        let tls = self.tls;
        let control_tls = tls
            .as_ref()
            .map(|c| TlsClient::new(c.ca_cert_der()))
            .transpose()?;
        let extra = self.args;
        let certs = tls.clone();
        let config_file = self.config_file;
        let spec = Spec {
            program: redis_server_bin(),
            name: "redis-server",
            args: Arc::new(move |port, dir| {
                let mut args = Vec::new();
                if let Some(text) = &config_file {
                    args.push(write_config_file(dir, CONFIG_FILE, text));
                }
                args.extend(base_args(port, dir, certs.as_ref()));
                args.extend(extra.iter().cloned());
                args
            }),
            with_bus: false,
            tls: control_tls,
            password: password.clone(),
            check_pid: true,
            startup_timeout: self.startup_timeout,
            missing_hint: MISSING_REDIS,
        };
        Ok(RedisServer {
            process: ServerProcess::start(spec)?,
            tls,
            password,
        })
    }
}

impl RedisServer {
    /// Starts a plain `redis-server` with the defaults.
    pub fn start() -> Result<Self> {
        Self::builder().start()
    }

    /// Options: extra arguments, password, TLS.
    ///
    /// ```no_run
    /// use redline_testkit::{RedisServer, TlsCerts};
    ///
    /// let certs = TlsCerts::generate()?;
    /// let server = RedisServer::builder().password("secret").tls(&certs).start()?;
    /// assert!(server.url().starts_with("rediss://"));
    /// # Ok::<(), redline_testkit::Error>(())
    /// ```
    pub fn builder() -> RedisServerBuilder {
        RedisServerBuilder {
            args: Vec::new(),
            config_file: None,
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
        url(self.tls.is_some(), self.password.as_deref(), self.addr())
    }

    /// The certificates of a TLS server.
    pub fn tls(&self) -> Option<&TlsCerts> {
        self.tls.as_ref()
    }

    /// The password set with `--requirepass`, if any.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// The process id, or `None` after [`kill`](Self::kill).
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// The server's private working directory (`--dir`).
    pub fn dir(&self) -> &Path {
        self.process.dir()
    }

    /// The configuration file given with [`RedisServerBuilder::config_file`] (it may
    /// not exist otherwise).
    pub fn config_path(&self) -> PathBuf {
        self.process.dir().join(CONFIG_FILE)
    }

    /// Whether the process is still alive.
    pub fn is_running(&mut self) -> bool {
        self.process.is_running()
    }

    /// SIGKILLs the server (like `kill -9`) and reaps it. The port stays reserved for
    /// [`restart`](Self::restart).
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Starts the server again on the same port and directory (killing it first if it runs)
    /// and waits until it answers.
    pub fn restart(&mut self) -> Result<()> {
        self.process.restart()
    }

    /// Sends one command on a fresh control connection and returns the RESP2 reply.
    /// Error replies are `Ok(Reply::Error(..))`.
    pub fn cmd(&self, args: &[&str]) -> Result<Reply> {
        self.process.cmd(args)
    }

    /// A `redis-cli` command already pointed at this server (host, port, TLS files,
    /// password); add arguments and run it.
    pub fn cli(&self) -> Command {
        cli_command(self.addr(), self.tls.as_ref(), self.password.as_deref())
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }
}

pub(crate) fn url(tls: bool, password: Option<&str>, addr: SocketAddr) -> String {
    let scheme = if tls { "rediss" } else { "redis" };
    match password {
        Some(pw) => format!("{scheme}://:{}@{addr}", percent_encode(pw)),
        None => format!("{scheme}://{addr}"),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn percent_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(crate) fn cli_command(
    addr: SocketAddr,
    tls: Option<&TlsCerts>,
    password: Option<&str>,
) -> Command {
    let mut cmd = Command::new(redis_cli_bin());
    cmd.args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string()]);
    if let Some(certs) = tls {
        cmd.args(certs.redis_cli_args());
    }
    if let Some(pw) = password {
        cmd.args(["-a", pw, "--no-auth-warning"]);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let addr: SocketAddr = ([127, 0, 0, 1], 7000).into();
        assert_eq!(url(false, None, addr), "redis://127.0.0.1:7000");
        assert_eq!(
            url(true, Some("a b@"), addr),
            "rediss://:a%20b%40@127.0.0.1:7000"
        );
    }

    #[test]
    fn requirepass_last_wins() {
        let args: Vec<String> = ["--requirepass", "a", "--x", "y", "--requirepass", "b"]
            .map(String::from)
            .to_vec();
        assert_eq!(requirepass(&args).as_deref(), Some("b"));
        assert_eq!(requirepass(&[]), None);
    }
}
