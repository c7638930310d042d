//! One server process on a leased loopback port: spawn, wait until it answers `PING`,
//! SIGKILL, restart on the same port, and clean up on drop.
//!
//! Shared by `RedisServer`, the cluster's nodes and `RedlineServer`; they differ only in the
//! program and the arguments (`Spec`).

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::control::{info_field, Conn, Reply, TlsClient};
use crate::error::{Error, Result};
use crate::ports::{self, PortLease};
use crate::reaper;

/// Builds a server's command line from its port and its private directory.
pub(crate) type ArgsFn = Arc<dyn Fn(u16, &Path) -> Vec<String> + Send + Sync>;

/// What to run and how to tell it is ready.
#[derive(Clone)]
pub(crate) struct Spec {
    /// Program to execute.
    pub program: PathBuf,
    /// Short name for messages and temp dir prefixes, e.g. `redis-server`.
    pub name: &'static str,
    /// The command line, given the port and the directory.
    pub args: ArgsFn,
    /// Whether `port + 10000` must be free too (cluster bus).
    pub with_bus: bool,
    /// TLS for the readiness/control connection.
    pub tls: Option<TlsClient>,
    /// Password for `AUTH` on the control connection.
    pub password: Option<String>,
    /// Check `INFO server`'s `process_id`, so a foreign server that grabbed our port in a
    /// race is never mistaken for ours.
    pub check_pid: bool,
    /// How long to wait for `PING` to answer `PONG`.
    pub startup_timeout: Duration,
    /// Told to the user when the program does not exist.
    pub missing_hint: &'static str,
}

/// How many fresh ports to try when the chosen one turns out to be taken.
const PORT_ATTEMPTS: u32 = 10;
const POLL: Duration = Duration::from_millis(20);
const LOG_FILE: &str = "server.log";
const LOG_TAIL_LINES: usize = 30;

/// A running (or deliberately killed) server process that owns its port and directory.
pub(crate) struct ServerProcess {
    spec: Spec,
    lease: PortLease,
    child: Option<Child>,
    dir: TempDir,
}

enum LaunchError {
    /// The port (or its bus port) was taken between our probe and the server's bind.
    PortTaken,
    Other(Error),
}

impl From<Error> for LaunchError {
    fn from(e: Error) -> Self {
        LaunchError::Other(e)
    }
}

impl ServerProcess {
    /// Starts the server on a free port and waits until it is ready.
    pub(crate) fn start(spec: Spec) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("redline-{}-", spec.name))
            .tempdir()
            .map_err(|e| Error::io("create server directory", e))?;
        for _ in 0..PORT_ATTEMPTS {
            let lease = ports::lease(spec.with_bus)?;
            match launch(&spec, lease.port(), dir.path()) {
                Ok(child) => {
                    return Ok(ServerProcess {
                        spec,
                        lease,
                        child: Some(child),
                        dir,
                    })
                }
                Err(LaunchError::PortTaken) => continue,
                Err(LaunchError::Other(e)) => return Err(e),
            }
        }
        Err(Error::NoFreePort {
            attempts: PORT_ATTEMPTS,
        })
    }

    pub(crate) fn port(&self) -> u16 {
        self.lease.port()
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port()))
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub(crate) fn is_running(&mut self) -> bool {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(Ok(Some(_))) | Some(Err(_)) => {
                // It died on its own (or was killed from outside): reap it now.
                self.reap();
                false
            }
            None => false,
        }
    }

    /// SIGKILL, then wait for the process, so no zombie and no half-dead listener remain.
    pub(crate) fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            // Fails only if it already exited, which is what we want anyway.
            let _ = child.kill();
        }
        self.reap();
    }

    fn reap(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
            reaper::untrack(child.id());
        }
    }

    /// Kills the server if it runs, then starts it again on the same port and directory.
    pub(crate) fn restart(&mut self) -> Result<()> {
        self.kill();
        // The port is ours, but another process may grab it while we are down; a killed
        // server's port is normally free again at once (Redis binds with SO_REUSEADDR).
        let deadline = Instant::now() + self.spec.startup_timeout;
        loop {
            match launch(&self.spec, self.port(), self.dir.path()) {
                Ok(child) => {
                    self.child = Some(child);
                    return Ok(());
                }
                Err(LaunchError::PortTaken) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(LaunchError::PortTaken) => {
                    return Err(Error::Invalid(format!(
                        "cannot restart {} on port {}: the port is taken by another process",
                        self.spec.name,
                        self.port()
                    )))
                }
                Err(LaunchError::Other(e)) => return Err(e),
            }
        }
    }

    /// A fresh control connection (authenticated, TLS when the server uses it).
    pub(crate) fn conn(&self) -> Result<Conn> {
        Conn::open(
            self.addr(),
            self.spec.tls.as_ref(),
            self.spec.password.as_deref(),
        )
    }

    /// Sends one command on a fresh control connection.
    pub(crate) fn cmd(&self, args: &[&str]) -> Result<Reply> {
        self.conn()?.cmd(args)
    }

    pub(crate) fn log_tail(&self) -> String {
        log_tail(self.dir.path(), 0)
    }

    pub(crate) fn describe(&self) -> String {
        format!("{} on {}", self.spec.name, self.addr())
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Runs on unwind too, so a failing test still stops its servers; the temp dir is
        // removed after this, when the `dir` field drops.
        self.kill();
    }
}

/// Spawns the program and waits until it answers. Always leaves no process behind on error.
fn launch(spec: &Spec, port: u16, dir: &Path) -> Result<Child, LaunchError> {
    let log_path = dir.join(LOG_FILE);
    let log = File::options()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| Error::io(format!("open {}", log_path.display()), e))?;
    let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
    let log_err = log
        .try_clone()
        .map_err(|e| Error::io(format!("open {}", log_path.display()), e))?;
    let args = (spec.args)(port, dir);
    let mut child = Command::new(&spec.program)
        .args(&args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound(format!(
                "{} not found: {}",
                spec.program.display(),
                spec.missing_hint
            )),
            _ => Error::Spawn {
                program: spec.program.display().to_string(),
                source,
            },
        })?;
    reaper::track(child.id(), dir);
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let what = format!("{} on {addr}", spec.name);
    match wait_ready(spec, &mut child, addr, &what) {
        Ok(()) => Ok(child),
        Err(err) => {
            let _ = child.kill();
            let status = child.wait();
            reaper::untrack(child.id());
            let fresh_log = log_tail(dir, log_start);
            if fresh_log.contains("Address already in use") {
                return Err(LaunchError::PortTaken);
            }
            Err(LaunchError::Other(match err {
                ReadyError::Exited => Error::Exited {
                    what,
                    status: status.map_or_else(|e| e.to_string(), |s| s.to_string()),
                    log_tail: fresh_log,
                },
                ReadyError::Timeout(last) => Error::Timeout {
                    what,
                    waited: spec.startup_timeout,
                    last,
                    log_tail: fresh_log,
                },
            }))
        }
    }
}

enum ReadyError {
    Exited,
    Timeout(String),
}

fn wait_ready(
    spec: &Spec,
    child: &mut Child,
    addr: SocketAddr,
    what: &str,
) -> Result<(), ReadyError> {
    let deadline = Instant::now() + spec.startup_timeout;
    loop {
        if !matches!(child.try_wait(), Ok(None)) {
            return Err(ReadyError::Exited);
        }
        let last = match probe(spec, addr, child.id()) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Instant::now() >= deadline {
            return Err(ReadyError::Timeout(format!("{what}: {last}")));
        }
        std::thread::sleep(POLL);
    }
}

/// One readiness attempt: connect, (AUTH,) PING → PONG, and the PID check.
fn probe(spec: &Spec, addr: SocketAddr, pid: u32) -> Result<()> {
    let mut conn = Conn::open(addr, spec.tls.as_ref(), spec.password.as_deref())?;
    match conn.cmd(&["PING"])? {
        Reply::Simple(s) if s == "PONG" => {}
        other => return Err(conn.unexpected(&["PING"], &other)),
    }
    if spec.check_pid {
        let info = conn.text(&["INFO", "server"])?;
        let theirs = info_field(&info, "process_id").unwrap_or("?");
        if theirs != pid.to_string() {
            return Err(Error::Invalid(format!(
                "{addr} is served by process {theirs}, not ours ({pid})"
            )));
        }
    }
    Ok(())
}

/// The last lines written to the log since byte `from`.
fn log_tail(dir: &Path, from: u64) -> String {
    let text = match std::fs::read(dir.join(LOG_FILE)) {
        Ok(bytes) => {
            let from = usize::try_from(from).unwrap_or(0).min(bytes.len());
            String::from_utf8_lossy(&bytes[from..]).into_owned()
        }
        Err(e) => return format!("(no log: {e})"),
    };
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}
