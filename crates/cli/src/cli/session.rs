//! The cli's connection: one dedicated connection, so that every command redis-cli
//! accepts (SELECT, MULTI, blocking pops with no timeout...) runs as typed.

use std::fmt;

use bytes::Bytes;
use redline::{Client, ClusterClient, ClusterConfig, Cmd, DedicatedConnection, Error, Frame};

use super::listen::{Kind, Listener};

use super::CliArgs;

/// A connected cli session.
pub(crate) struct Session {
    conn: Conn,
    /// `host:port`, for the prompt and messages.
    addr: String,
    /// The selected database, shown in the prompt as redis-cli does.
    db: u32,
}

/// Where commands go.
enum Conn {
    /// One server: a dedicated connection (it reconnects by itself after a loss), and the
    /// client it came from (for subscribers).
    Single(Client, DedicatedConnection),
    /// `-c`: the cluster client, which follows MOVED/ASK itself.
    Cluster(ClusterClient),
}

/// Failures that end the session (not error replies: those are printed as replies).
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    /// Bad flags.
    #[error(transparent)]
    Flags(#[from] crate::conn::ConnError),
    /// The server could not be reached or refused the handshake.
    #[error("Could not connect to Redis at {addr}: {reason}")]
    Connect {
        /// `host:port`.
        addr: String,
        /// Why, in words close to redis-cli's.
        reason: Reason,
    },
    /// The connection broke during a command.
    #[error("Error: {0}")]
    Lost(Reason),
}

/// A client error worded as redis-cli words it (no "(os error 111)").
#[derive(Debug)]
pub(crate) struct Reason(pub(crate) Error);

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Error::Io { source, .. } => {
                let text = source.to_string();
                let text = match text.find(" (os error") {
                    Some(cut) => &text[..cut],
                    None => &text,
                };
                f.write_str(text)
            }
            Error::Auth { kind, message } => write!(f, "{kind} {message}"),
            other => write!(f, "{other}"),
        }
    }
}

impl Session {
    /// Connects as the flags say. The command timeout is off: a blocking command typed
    /// in the cli waits as long as it asks to.
    pub(crate) async fn connect(args: &CliArgs) -> Result<Session, SessionError> {
        let mut cfg = args.conn.config()?;
        if let Some(db) = args.db {
            cfg.db = db;
        }
        cfg.command_timeout = None;
        let addr = cfg.addr();
        let db = cfg.db;
        let fail = |e: Error| SessionError::Connect {
            addr: addr.clone(),
            reason: Reason(e),
        };
        let conn = if args.cluster {
            let mut cluster = ClusterConfig::default();
            cluster.seeds = vec![(cfg.host.clone(), cfg.port)];
            cluster.node = cfg;
            Conn::Cluster(ClusterClient::from_config(cluster).await.map_err(fail)?)
        } else {
            let client = Client::from_config(cfg).await.map_err(fail)?;
            let conn = client.dedicated().await.map_err(fail)?;
            Conn::Single(client, conn)
        };
        Ok(Session { conn, addr, db })
    }

    /// `host:port` or `host:port[db]`, as in redis-cli's prompt.
    pub(crate) fn prompt(&self) -> String {
        if self.db == 0 {
            format!("{}> ", self.addr)
        } else {
            format!("{}[{}]> ", self.addr, self.db)
        }
    }

    /// Runs one command. Error replies come back as `Ok(Frame::Error)` so they print
    /// like any reply; only a lost connection is `Err`.
    pub(crate) async fn run(&mut self, argv: Vec<Bytes>) -> Result<Frame, SessionError> {
        let select = match argv.first() {
            Some(name) if name.eq_ignore_ascii_case(b"SELECT") => argv
                .get(1)
                .and_then(|db| std::str::from_utf8(db).ok())
                .and_then(|db| db.parse::<u32>().ok()),
            _ => None,
        };
        let Some(cmd) = Cmd::from_args(argv) else {
            return Ok(Frame::Error(Bytes::from_static(b"ERR empty command")));
        };
        let result = match &mut self.conn {
            Conn::Single(_, conn) => conn.query::<Frame>(cmd).await,
            Conn::Cluster(cluster) => cluster.query::<Frame>(cmd).await,
        };
        match result {
            Ok(frame) => {
                if let Some(db) = select {
                    self.db = db;
                }
                Ok(frame)
            }
            Err(e @ (Error::Server { .. } | Error::Auth { .. })) => {
                let text = match &e {
                    Error::Server { kind, message } | Error::Auth { kind, message }
                        if message.is_empty() =>
                    {
                        kind.to_string()
                    }
                    Error::Server { kind, message } | Error::Auth { kind, message } => {
                        format!("{kind} {message}")
                    }
                    _ => e.to_string(),
                };
                Ok(Frame::Error(Bytes::from(text)))
            }
            Err(e @ Error::NotMultiplexable { .. }) => {
                Ok(Frame::Error(Bytes::from(format!("ERR redline cli: {e}"))))
            }
            Err(e) => Err(SessionError::Lost(Reason(e))),
        }
    }
}

impl Session {
    /// A subscriber for `kind` on this session's server or cluster.
    pub(crate) async fn listener(&self, kind: Kind) -> Result<Listener, SessionError> {
        let lost = |e| SessionError::Lost(Reason(e));
        match (&self.conn, kind) {
            (Conn::Single(client, _), _) => {
                Ok(Listener::One(client.subscriber().await.map_err(lost)?))
            }
            (Conn::Cluster(cluster), Kind::Shard) => {
                Ok(Listener::Shards(cluster.shard_subscriber()))
            }
            (Conn::Cluster(cluster), _) => {
                Ok(Listener::One(cluster.subscriber().await.map_err(lost)?))
            }
        }
    }
}
