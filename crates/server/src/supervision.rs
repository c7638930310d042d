//! How the server tells whoever started it where it stands, as redis-server does:
//! `daemonize` (fork into the background), `pidfile`, and `supervised` (systemd's notify
//! socket, upstart's SIGSTOP). Init systems and service units written for redis-server
//! (Debian's `Type=notify` unit, sysvinit scripts that wait for a pid file) then run
//! redline-server unchanged.
//!
//! Unsafe code: `fork`, `setsid`, `dup2` and `raise` are system calls std has no
//! wrapper for; each block says why it is sound.
#![allow(unsafe_code)]

use std::io;
use std::sync::OnceLock;

use crate::Config;

/// Who supervises the process, once [`detect`] has confirmed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Supervisor {
    /// `supervised upstart`: the process stops itself once to say it is up.
    Upstart,
    /// `supervised systemd`: state changes go to `$NOTIFY_SOCKET` (`sd_notify`).
    Systemd,
}

impl Supervisor {
    fn name(self) -> &'static str {
        match self {
            Self::Upstart => "upstart",
            Self::Systemd => "systemd",
        }
    }
}

/// The supervisor [`detect`] confirmed: one per process, like the process itself.
static SUPERVISOR: OnceLock<Supervisor> = OnceLock::new();

/// Where a daemonized server writes its pid when no `pidfile` is set, as in Redis.
pub const DEFAULT_PID_FILE: &str = "/var/run/redis.pid";

/// Resolves `supervised` (`auto` looks at `UPSTART_JOB`, then `NOTIFY_SOCKET`) and sets
/// the supervision up; on success the parameter names the supervisor found, as Redis's
/// CONFIG GET does. Upstart's readiness is a SIGSTOP here, before anything is served,
/// as in Redis. Returns whether the process is supervised.
pub fn detect(config: &mut Config) -> bool {
    let supervisor = match config.param("supervised") {
        "upstart" => Supervisor::Upstart,
        "systemd" => Supervisor::Systemd,
        "auto" if std::env::var_os("UPSTART_JOB").is_some() => Supervisor::Upstart,
        "auto" if std::env::var_os("NOTIFY_SOCKET").is_some() => Supervisor::Systemd,
        _ => return false,
    };
    let confirmed = match supervisor {
        Supervisor::Upstart => {
            if std::env::var_os("UPSTART_JOB").is_none() {
                tracing::warn!("upstart supervision requested, but UPSTART_JOB not found!");
                false
            } else {
                tracing::info!("supervised by upstart, will stop to signal readiness.");
                // SAFETY: raise only sends a signal to this process.
                unsafe { libc::raise(libc::SIGSTOP) };
                std::env::remove_var("UPSTART_JOB");
                true
            }
        }
        Supervisor::Systemd => {
            let sent = send_to_systemd("STATUS=Redis is loading...\n");
            if sent {
                tracing::info!(
                    "Supervised by systemd. Please make sure you set appropriate values for TimeoutStartSec and TimeoutStopSec in your service unit."
                );
            }
            sent
        }
    };
    if confirmed {
        let _ = SUPERVISOR.set(supervisor);
        config
            .params
            .insert("supervised", supervisor.name().to_string());
    }
    confirmed
}

/// The supervisor confirmed at start, if any (INFO's `process_supervised`).
pub fn supervisor() -> Option<Supervisor> {
    SUPERVISOR.get().copied()
}

/// INFO's `process_supervised`: the supervisor's name, or `no`.
pub fn supervised_name() -> &'static str {
    supervisor().map_or("no", Supervisor::name)
}

/// Tells systemd `message` (`KEY=value` lines), when it supervises this process.
pub fn notify(message: &str) {
    if supervisor() == Some(Supervisor::Systemd) {
        send_to_systemd(message);
    }
}

/// Redis's `sd_notify`: one datagram to the socket `$NOTIFY_SOCKET` names (a path, or
/// an abstract name after `@`). Failures are logged, never fatal.
fn send_to_systemd(message: &str) -> bool {
    use std::os::unix::net::UnixDatagram;
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        tracing::warn!("systemd supervision error: NOTIFY_SOCKET not found!");
        return false;
    };
    let sent = UnixDatagram::unbound().and_then(|socket| {
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
        match bytes.strip_prefix(b"@") {
            Some(name) => {
                use std::os::linux::net::SocketAddrExt;
                let address = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
                socket.send_to_addr(message.as_bytes(), &address)
            }
            None => socket.send_to(message.as_bytes(), &path),
        }
    });
    match sent {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!("systemd supervision error: sd_notify: {e}");
            false
        }
    }
}

/// Ignores SIGHUP as redis-server does: a server started from a terminal (or an ssh
/// session) outlives it, and a HUP sent to reopen logs, as to other daemons, does not
/// stop it.
pub fn ignore_hangup() {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code.
    unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
}

/// Forks into the background as redis-server's `daemonize yes` does: the parent exits
/// at once with status 0, the child leaves the terminal's session and reads and writes
/// `/dev/null` instead of the terminal (so with no `logfile`, nothing is logged).
///
/// Must run before any thread starts: only the calling thread survives a fork.
pub fn daemonize() -> io::Result<()> {
    // SAFETY: called from the launcher before the runtime or any other thread exists,
    // so the child is a whole copy of a single-threaded process.
    match unsafe { libc::fork() } {
        -1 => return Err(io::Error::last_os_error()),
        0 => {}
        // SAFETY: the parent leaves without running destructors or atexit handlers
        // that belong to the child now.
        _ => unsafe { libc::_exit(0) },
    }
    // SAFETY: plain system calls on this process's own descriptors.
    unsafe {
        libc::setsid();
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR, 0);
        if fd != -1 {
            libc::dup2(fd, libc::STDIN_FILENO);
            libc::dup2(fd, libc::STDOUT_FILENO);
            libc::dup2(fd, libc::STDERR_FILENO);
            if fd > libc::STDERR_FILENO {
                libc::close(fd);
            }
        }
    }
    Ok(())
}

/// Writes this process's pid to `pidfile` when the server runs in the background or a
/// `pidfile` is set, as Redis does (best effort: a failure is logged). A daemonized
/// server with no `pidfile` uses [`DEFAULT_PID_FILE`], and CONFIG GET shows it.
pub fn write_pid_file(config: &mut Config, background: bool) {
    if config.param("pidfile").is_empty() {
        if !background {
            return;
        }
        config
            .params
            .insert("pidfile", DEFAULT_PID_FILE.to_string());
    }
    let path = config.param("pidfile");
    if let Err(e) = std::fs::write(path, format!("{}\n", std::process::id())) {
        tracing::warn!("Failed to write PID file: {e}");
    }
}

/// On the way out: removes the pid file [`write_pid_file`] wrote (`path`, the
/// `pidfile` parameter), as Redis does.
pub fn remove_pid_file(path: &str) {
    if path.is_empty() {
        return;
    }
    tracing::info!("Removing the pid file.");
    let _ = std::fs::remove_file(path);
}
