//! The one error type of the test kit.
//!
//! Messages carry what a person debugging a red test needs: the command that failed, and
//! for a server that did not come up, the tail of its log.

use std::time::Duration;

/// Everything that can go wrong while starting, querying or stopping a test server.
///
/// `Debug` prints the same text as `Display`, so `.unwrap()` in a test shows the server's
/// log tail readably instead of as one escaped string.
#[derive(thiserror::Error)]
pub enum Error {
    /// A program could not be started at all (missing binary, permissions).
    #[error("cannot start {program}: {source}")]
    Spawn {
        /// The program that was executed.
        program: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// Reading or writing a file, a socket or a temporary directory failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A server process exited while it was expected to come up or keep running.
    #[error("{what} exited ({status}) before it was ready; log tail:\n{log_tail}")]
    Exited {
        /// Which server, e.g. `redis-server on 127.0.0.1:12345`.
        what: String,
        /// Its exit status.
        status: String,
        /// The last lines of its log.
        log_tail: String,
    },
    /// A server or cluster did not reach the expected state in time.
    #[error("{what} not ready after {waited:?}: {last}; log tail:\n{log_tail}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long we waited.
        waited: Duration,
        /// The last observation (an error or a state that was not good enough).
        last: String,
        /// The last lines of the relevant log(s), empty if there are none.
        log_tail: String,
    },
    /// No free port could be found after several attempts.
    #[error("no free loopback port found after {attempts} attempts")]
    NoFreePort {
        /// How many candidates were tried.
        attempts: u32,
    },
    /// The server answered something that is not valid RESP.
    #[error("protocol error from {addr}: {detail}")]
    Protocol {
        /// The server's address.
        addr: String,
        /// What was wrong.
        detail: String,
    },
    /// The server answered a control command with an unexpected reply or an error.
    #[error("{command} on {addr}: unexpected reply {reply}")]
    Reply {
        /// The command as sent.
        command: String,
        /// The server's address.
        addr: String,
        /// The reply, as text.
        reply: String,
    },
    /// A helper program (`redis-cli --cluster create`) failed.
    #[error("{command} failed ({status}):\n{output}")]
    Tool {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Its stdout and stderr.
        output: String,
    },
    /// Certificates could not be generated.
    #[error("certificate generation: {0}")]
    Cert(#[from] rcgen::Error),
    /// TLS setup for the control connection failed.
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// A binary the kit needs could not be found.
    #[error("{0}")]
    NotFound(String),
    /// A request the kit cannot honour (unknown node index, a stopped node...).
    #[error("{0}")]
    Invalid(String),
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The test kit's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}
