//! The one error type of the client.
//!
//! Every failure is a variant with typed context, never a bare string. [`Error`] is
//! `Clone` (sources are behind `Arc`) because one dead connection hands the same cause to
//! every command that was waiting on it.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use redline_resp::ProtocolError;

/// Shorthand for `Result<T, redline::Error>`.
///
/// ```
/// fn parse_port(s: &str) -> redline::Result<u16> {
///     s.parse().map_err(|_| redline::Error::Config("bad port"))
/// }
/// assert!(parse_port("x").is_err());
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between a caller and Redis.
///
/// ```
/// use redline::{Error, ServerErrorKind};
///
/// let err = Error::from_server_reply(b"WRONGTYPE Operation against a key holding the wrong kind of value");
/// assert!(matches!(err, Error::Server { kind: ServerErrorKind::WrongType, .. }));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A socket operation failed (connect refused, reset, broken pipe...).
    #[error("{op} {addr}: {source}")]
    Io {
        /// What the client was doing.
        op: IoOp,
        /// The server address as configured (`host:port`).
        addr: Arc<str>,
        /// The operating system's error.
        #[source]
        source: Arc<io::Error>,
    },
    /// The server closed the connection (end of stream) while commands were pending or
    /// during the handshake.
    #[error("connection to {addr} closed by the server")]
    ConnectionClosed {
        /// The server address.
        addr: Arc<str>,
    },
    /// Establishing the connection (TCP, TLS and handshake) took longer than the
    /// configured connect timeout.
    #[error("connecting to {addr} timed out after {timeout:?}")]
    ConnectTimeout {
        /// The server address.
        addr: Arc<str>,
        /// The configured limit.
        timeout: Duration,
    },
    /// The command's reply did not arrive within the command timeout. The command may or
    /// may not have been executed by the server.
    #[error("command timed out after {0:?}")]
    Timeout(Duration),
    /// The server sent bytes that are not valid RESP; the connection is dropped.
    #[error("protocol error: {0}")]
    Protocol(#[from] ProtocolError),
    /// The server sent a reply when no command was waiting for one: the connection is out
    /// of step and is dropped.
    #[error("unexpected reply from {addr} with no command pending")]
    UnexpectedReply {
        /// The server address.
        addr: Arc<str>,
    },
    /// An error reply (`-ERR ...`, `-WRONGTYPE ...`, `!...`).
    #[error("{kind}{}{message}", sep(.message))]
    Server {
        /// The first word of the reply.
        kind: ServerErrorKind,
        /// The rest of the reply after the first word.
        message: Arc<str>,
    },
    /// The server refused the credentials (`WRONGPASS`) or demands them (`NOAUTH`).
    #[error("authentication failed: {kind}{}{message}", sep(.message))]
    Auth {
        /// `WrongPass` or `NoAuth` (or `NoPerm` when the user may not run HELLO/AUTH).
        kind: ServerErrorKind,
        /// The server's message.
        message: Arc<str>,
    },
    /// TLS configuration or handshake failure (unknown CA, bad name, bad PEM...).
    #[error(transparent)]
    Tls(Arc<TlsError>),
    /// The command queue is full and the client is configured to fail rather than wait
    /// ([`crate::FullQueue::Error`]).
    #[error("command queue full ({bound} queued)")]
    Backpressure {
        /// The configured queue bound.
        bound: usize,
    },
    /// A reply could not be converted to the requested Rust type.
    #[error("reply type mismatch: expected {expected}, got {got}")]
    Type {
        /// The Rust-side expectation, e.g. `"integer"`.
        expected: &'static str,
        /// What the server sent, e.g. `"bulk string \"abc\""`.
        got: Arc<str>,
    },
    /// A `redis://` / `rediss://` URL could not be parsed.
    #[error("invalid URL: {0}")]
    Url(#[from] UrlError),
    /// A configuration value is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    Config(&'static str),
    /// `EXEC` returned nil because a watched key changed.
    #[error("transaction aborted: a watched key was modified")]
    TransactionAborted,
    /// The command cannot run on a shared, multiplexed connection (it would take the
    /// connection over: SUBSCRIBE, MONITOR, CLIENT REPLY, blocking commands...).
    #[error("{command} cannot be sent on a multiplexed connection")]
    NotMultiplexable {
        /// The command name as given.
        command: Arc<str>,
    },
    /// A command with no arguments at all.
    #[error("empty command")]
    EmptyCommand,
    /// Redis Sentinel moved the master elsewhere: a connection to the old one was closed
    /// under the commands it carried (they may or may not have run). The next command
    /// goes to the new master.
    #[error("master {name} moved to {addr}")]
    MasterSwitched {
        /// The master's name in Sentinel.
        name: Arc<str>,
        /// The new master's `host:port`.
        addr: Arc<str>,
    },
    /// No sentinel knows the master, or none could be reached, or the address they
    /// gave did not answer as a master.
    #[error("master {name} not found through Sentinel: {reason}")]
    MasterNotFound {
        /// The master's name in Sentinel.
        name: Arc<str>,
        /// What the last attempt found.
        reason: Arc<str>,
    },
    /// The client's connection task has stopped (the client was dropped or shut down).
    #[error("client is closed")]
    Closed,

    /// Client-side caching was configured but the server only speaks RESP2 (it refused
    /// `HELLO 3`): invalidations need RESP3 push frames on the same connection.
    #[error("client-side caching needs RESP3, but {addr} refused HELLO 3")]
    CacheNeedsResp3 {
        /// The server.
        addr: Arc<str>,
    },

    /// A command given to a cached read that cannot be cached: it may write, or it reads
    /// no key (so no invalidation would ever reach it).
    #[error(
        "{command} cannot be served from the client-side cache (only read-only commands with keys)"
    )]
    NotCacheable {
        /// The command's name.
        command: Arc<str>,
    },
}

impl Error {
    /// Turns the text of an error reply (`-KIND message`) into [`Error::Server`], or
    /// [`Error::Auth`] for `WRONGPASS`/`NOAUTH`.
    ///
    /// ```
    /// use redline::{Error, ServerErrorKind};
    ///
    /// let err = Error::from_server_reply(b"WRONGPASS invalid username-password pair");
    /// assert!(matches!(err, Error::Auth { kind: ServerErrorKind::WrongPass, .. }));
    /// ```
    pub fn from_server_reply(line: &[u8]) -> Error {
        let text = String::from_utf8_lossy(line);
        let (word, rest) = match text.split_once(' ') {
            Some((w, r)) => (w, r),
            None => (&*text, ""),
        };
        let kind = ServerErrorKind::parse(word);
        let message: Arc<str> = Arc::from(rest);
        match kind {
            ServerErrorKind::WrongPass | ServerErrorKind::NoAuth => Error::Auth { kind, message },
            _ => Error::Server { kind, message },
        }
    }

    /// True when the failure is about the connection rather than the command: the
    /// command may be retried on a new connection if it is idempotent.
    ///
    /// ```
    /// use redline::Error;
    ///
    /// assert!(Error::Closed.is_connection_error());
    /// assert!(!Error::from_server_reply(b"ERR no such key").is_connection_error());
    /// ```
    pub fn is_connection_error(&self) -> bool {
        matches!(
            self,
            Error::Io { .. }
                | Error::ConnectionClosed { .. }
                | Error::ConnectTimeout { .. }
                | Error::Protocol(_)
                | Error::UnexpectedReply { .. }
                | Error::MasterSwitched { .. }
                | Error::MasterNotFound { .. }
                | Error::Closed
        )
    }

    /// True for [`Error::Timeout`] and [`Error::ConnectTimeout`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// assert!(redline::Error::Timeout(Duration::from_secs(5)).is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout(_) | Error::ConnectTimeout { .. })
    }

    /// The server error kind, for [`Error::Server`] and [`Error::Auth`].
    ///
    /// ```
    /// use redline::{Error, ServerErrorKind};
    ///
    /// let err = Error::from_server_reply(b"NOSCRIPT No matching script");
    /// assert_eq!(err.server_kind(), Some(&ServerErrorKind::NoScript));
    /// ```
    pub fn server_kind(&self) -> Option<&ServerErrorKind> {
        match self {
            Error::Server { kind, .. } | Error::Auth { kind, .. } => Some(kind),
            _ => None,
        }
    }

    pub(crate) fn io(op: IoOp, addr: &Arc<str>, source: io::Error) -> Error {
        // rustls reports certificate and handshake failures through io::Error; surface
        // them as TLS errors so callers can tell "wrong CA" from "connection refused".
        if let Some(tls) = source
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return TlsError::Handshake(tls.clone()).into();
        }
        Error::Io {
            op,
            addr: addr.clone(),
            source: Arc::new(source),
        }
    }

    pub(crate) fn type_mismatch(expected: &'static str, got: impl fmt::Display) -> Error {
        Error::Type {
            expected,
            got: Arc::from(got.to_string()),
        }
    }
}

/// [`Error::NotMultiplexable`] for a command named as in the command table (lower case),
/// shown upper case as users write commands.
pub(crate) fn not_multiplexable(name: &str) -> Error {
    Error::NotMultiplexable {
        command: Arc::from(name.to_ascii_uppercase()),
    }
}

impl From<TlsError> for Error {
    fn from(e: TlsError) -> Self {
        // Boxed: rustls::Error is large and Error travels on the hot path.
        Error::Tls(Arc::new(e))
    }
}

fn sep(message: &str) -> &'static str {
    if message.is_empty() {
        ""
    } else {
        " "
    }
}

/// The socket operation that failed, for [`Error::Io`].
///
/// ```
/// let err = redline::Error::Io {
///     op: redline::IoOp::Connect,
///     addr: "127.0.0.1:6379".into(),
///     source: std::sync::Arc::new(std::io::ErrorKind::ConnectionRefused.into()),
/// };
/// assert!(err.to_string().starts_with("connect"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoOp {
    /// Opening the TCP connection.
    Connect,
    /// Reading replies.
    Read,
    /// Writing commands.
    Write,
    /// The TLS handshake.
    TlsHandshake,
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoOp::Connect => "connecting to",
            IoOp::Read => "reading from",
            IoOp::Write => "writing to",
            IoOp::TlsHandshake => "TLS handshake with",
        })
    }
}

/// The first word of an error reply. Kinds the client acts on are variants; anything
/// else is kept verbatim in [`ServerErrorKind::Other`].
///
/// ```
/// use redline::ServerErrorKind;
///
/// assert_eq!(ServerErrorKind::parse("MOVED"), ServerErrorKind::Moved);
/// assert_eq!(ServerErrorKind::parse("MYERR").as_str(), "MYERR");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerErrorKind {
    /// `ERR`: the generic error.
    Err,
    /// `WRONGTYPE`: the key holds another type.
    WrongType,
    /// `WRONGPASS`: bad user name or password.
    WrongPass,
    /// `NOAUTH`: authentication required.
    NoAuth,
    /// `NOPERM`: the ACL user may not run this command or touch this key.
    NoPerm,
    /// `NOPROTO`: the requested protocol version is not supported (HELLO).
    NoProto,
    /// `MOVED`: cluster redirect, the slot has a new owner.
    Moved,
    /// `ASK`: cluster redirect during a slot migration.
    Ask,
    /// `TRYAGAIN`: multi-key command during resharding.
    TryAgain,
    /// `CLUSTERDOWN`: the cluster cannot serve the slot.
    ClusterDown,
    /// `CROSSSLOT`: keys of one command hash to different slots.
    CrossSlot,
    /// `LOADING`: the server is loading its dataset.
    Loading,
    /// `BUSY`: a script is running.
    Busy,
    /// `NOSCRIPT`: EVALSHA of an unknown script.
    NoScript,
    /// `READONLY`: write against a read-only replica.
    ReadOnly,
    /// `MASTERDOWN`: the replica lost its master.
    MasterDown,
    /// `EXECABORT`: EXEC after a queuing error.
    ExecAbort,
    /// `OOM`: maxmemory reached.
    Oom,
    /// `BUSYGROUP`: consumer group exists.
    BusyGroup,
    /// `NOGROUP`: consumer group missing.
    NoGroup,
    /// Any other first word, as sent.
    Other(Arc<str>),
}

impl ServerErrorKind {
    /// Maps the first word of an error reply to a kind.
    ///
    /// ```
    /// assert_eq!(redline::ServerErrorKind::parse("WRONGTYPE").as_str(), "WRONGTYPE");
    /// ```
    pub fn parse(word: &str) -> ServerErrorKind {
        match word {
            "ERR" => Self::Err,
            "WRONGTYPE" => Self::WrongType,
            "WRONGPASS" => Self::WrongPass,
            "NOAUTH" => Self::NoAuth,
            "NOPERM" => Self::NoPerm,
            "NOPROTO" => Self::NoProto,
            "MOVED" => Self::Moved,
            "ASK" => Self::Ask,
            "TRYAGAIN" => Self::TryAgain,
            "CLUSTERDOWN" => Self::ClusterDown,
            "CROSSSLOT" => Self::CrossSlot,
            "LOADING" => Self::Loading,
            "BUSY" => Self::Busy,
            "NOSCRIPT" => Self::NoScript,
            "READONLY" => Self::ReadOnly,
            "MASTERDOWN" => Self::MasterDown,
            "EXECABORT" => Self::ExecAbort,
            "OOM" => Self::Oom,
            "BUSYGROUP" => Self::BusyGroup,
            "NOGROUP" => Self::NoGroup,
            other => Self::Other(Arc::from(other)),
        }
    }

    /// The word as Redis writes it.
    ///
    /// ```
    /// assert_eq!(redline::ServerErrorKind::parse("ERR").as_str(), "ERR");
    /// ```
    pub fn as_str(&self) -> &str {
        match self {
            Self::Err => "ERR",
            Self::WrongType => "WRONGTYPE",
            Self::WrongPass => "WRONGPASS",
            Self::NoAuth => "NOAUTH",
            Self::NoPerm => "NOPERM",
            Self::NoProto => "NOPROTO",
            Self::Moved => "MOVED",
            Self::Ask => "ASK",
            Self::TryAgain => "TRYAGAIN",
            Self::ClusterDown => "CLUSTERDOWN",
            Self::CrossSlot => "CROSSSLOT",
            Self::Loading => "LOADING",
            Self::Busy => "BUSY",
            Self::NoScript => "NOSCRIPT",
            Self::ReadOnly => "READONLY",
            Self::MasterDown => "MASTERDOWN",
            Self::ExecAbort => "EXECABORT",
            Self::Oom => "OOM",
            Self::BusyGroup => "BUSYGROUP",
            Self::NoGroup => "NOGROUP",
            Self::Other(word) => word,
        }
    }
}

impl fmt::Display for ServerErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// TLS setup and handshake failures.
///
/// ```
/// # async fn demo() {
/// let err = redline::Client::connect("rediss://127.0.0.1:6380?ca_file=/missing.pem").await;
/// assert!(matches!(err, Err(redline::Error::Tls(_))));
/// # }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The handshake failed: unknown issuer, name mismatch, expired certificate, alert...
    #[error("TLS handshake failed: {0}")]
    Handshake(rustls::Error),
    /// The CA file could not be read.
    #[error("cannot read CA file {path}: {source}")]
    CaFile {
        /// The configured path.
        path: Arc<str>,
        /// The operating system's error.
        #[source]
        source: Arc<io::Error>,
    },
    /// A PEM input (CA, client certificate or key) held nothing usable.
    #[error("invalid PEM for {what}")]
    InvalidPem {
        /// Which input: `"CA certificates"`, `"client certificate"`, `"client key"`.
        what: &'static str,
    },
    /// rustls rejected the configuration (e.g. a key that does not match the certificate).
    #[error("invalid TLS configuration: {0}")]
    Config(rustls::Error),
    /// The name to verify the server certificate against is not a valid DNS name or IP.
    #[error("invalid TLS server name {0:?}")]
    InvalidServerName(Arc<str>),
}

/// Why a connection URL was rejected.
///
/// ```
/// use redline::{Config, Error};
///
/// assert!(matches!(Config::from_url("http://host"), Err(Error::Url(_))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// The scheme is not `redis` or `rediss`.
    #[error("unsupported scheme {0:?} (expected redis://, rediss:// or redis+sentinel://)")]
    Scheme(Arc<str>),
    /// A `redis+sentinel://` URL without a master name (`/name` after the hosts).
    #[error("missing master name (redis+sentinel://host:port/master-name)")]
    MasterName,
    /// No host between `//` and the port or path.
    #[error("missing host")]
    MissingHost,
    /// The port is not a number in 1..=65535.
    #[error("invalid port {0:?}")]
    Port(Arc<str>),
    /// The path is not `/` followed by a database number.
    #[error("invalid database {0:?}")]
    Database(Arc<str>),
    /// A `%xx` escape is malformed or decodes to invalid UTF-8.
    #[error("invalid percent-encoding in {0}")]
    Encoding(&'static str),
    /// A query option is unknown.
    #[error("unknown option {0:?}")]
    UnknownOption(Arc<str>),
    /// A query option's value does not parse.
    #[error("invalid value {value:?} for option {option}")]
    OptionValue {
        /// The option name.
        option: &'static str,
        /// The value as written.
        value: Arc<str>,
    },
}

/// A short, bounded description of a reply for [`Error::Type`] messages.
pub(crate) fn describe(frame: &redline_resp::Frame) -> String {
    use redline_resp::Frame;
    fn snippet(b: &Bytes) -> String {
        let shown = &b[..b.len().min(32)];
        let mut s = String::from_utf8_lossy(shown).into_owned();
        if b.len() > 32 {
            s.push_str("...");
        }
        s
    }
    match frame {
        Frame::Simple(s) => format!("simple string {:?}", snippet(s)),
        Frame::Error(e) | Frame::BulkError(e) => format!("error {:?}", snippet(e)),
        Frame::Integer(n) => format!("integer {n}"),
        Frame::Bulk(b) => format!("bulk string {:?}", snippet(b)),
        Frame::Array(items) => format!("array of {}", items.len()),
        Frame::NullBulk | Frame::NullArray | Frame::Null => "nil".to_owned(),
        Frame::Map(pairs) => format!("map of {}", pairs.len()),
        Frame::Set(items) => format!("set of {}", items.len()),
        Frame::Double(d) => format!("double {d}"),
        Frame::Boolean(b) => format!("boolean {b}"),
        Frame::BigNumber(n) => format!("big number {}", snippet(n)),
        Frame::Verbatim { text, .. } => format!("verbatim string {:?}", snippet(text)),
        Frame::Attribute { value, .. } => describe(value),
        Frame::Push(items) => format!("push of {}", items.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_reply_kinds() {
        match Error::from_server_reply(b"ERR unknown command 'FOO'") {
            Error::Server { kind, message } => {
                assert_eq!(kind, ServerErrorKind::Err);
                assert_eq!(&*message, "unknown command 'FOO'");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Error::from_server_reply(b"WRONGPASS invalid username-password pair"),
            Error::Auth {
                kind: ServerErrorKind::WrongPass,
                ..
            }
        ));
        assert!(matches!(
            Error::from_server_reply(b"NOAUTH Authentication required."),
            Error::Auth { .. }
        ));
        match Error::from_server_reply(b"MOVED 3999 127.0.0.1:6381") {
            Error::Server { kind, message } => {
                assert_eq!(kind, ServerErrorKind::Moved);
                assert_eq!(&*message, "3999 127.0.0.1:6381");
            }
            other => panic!("{other:?}"),
        }
        let custom = Error::from_server_reply(b"MYERR");
        assert_eq!(custom.to_string(), "MYERR");
        assert_eq!(
            custom.server_kind(),
            Some(&ServerErrorKind::Other(Arc::from("MYERR")))
        );
    }

    #[test]
    fn error_is_small() {
        // Result<Frame, Error> is on the hot path: keep the error no larger than a few words.
        assert!(
            std::mem::size_of::<Error>() <= 48,
            "{}",
            std::mem::size_of::<Error>()
        );
    }
}
