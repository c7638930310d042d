//! What the server knows about one connection: its id, selected database, protocol,
//! name, authentication, and the flags commands set for the connection loop.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use redline_resp::Protocol;

/// Per-connection state, owned by the connection task (no locking).
#[derive(Debug)]
pub struct ClientState {
    /// Unique, increasing id (CLIENT ID).
    pub id: u64,
    /// Selected database.
    pub db: usize,
    /// RESP2 until HELLO 3.
    pub protocol: Protocol,
    /// CLIENT SETNAME / HELLO SETNAME.
    pub name: Option<Vec<u8>>,
    /// True when no password is required or AUTH succeeded.
    pub authenticated: bool,
    /// CLIENT SETINFO LIB-NAME.
    pub lib_name: Option<Vec<u8>>,
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: Option<Vec<u8>>,
    /// The peer's address.
    pub peer: SocketAddr,
    /// When the connection was accepted.
    pub created: Instant,
    /// Close the connection once the replies so far are written (QUIT, protocol errors).
    pub close_after_reply: bool,
    /// Commands run since the last flush of the counters to the server's stats.
    pub commands_since_flush: u64,
    /// Commands queued since MULTI; `None` outside a transaction.
    pub multi: Option<Vec<Vec<Bytes>>>,
    /// A command was refused while queueing: EXEC will answer EXECABORT.
    pub multi_failed: bool,
    /// Keys under WATCH, with their versions at WATCH time.
    pub watched: Vec<WatchedKey>,
}

/// One WATCHed key.
#[derive(Debug, Clone)]
pub struct WatchedKey {
    /// Database of the key.
    pub db: usize,
    /// The key.
    pub key: Vec<u8>,
    /// The shard's version of the key when WATCH ran.
    pub version: u64,
    /// The key was already expired (not yet reclaimed) when WATCH ran.
    pub expired_at_watch: bool,
}

impl ClientState {
    /// State of a freshly accepted connection.
    pub fn new(id: u64, peer: SocketAddr, authenticated: bool) -> Self {
        ClientState {
            id,
            db: 0,
            protocol: Protocol::Resp2,
            name: None,
            authenticated,
            lib_name: None,
            lib_ver: None,
            peer,
            created: Instant::now(),
            close_after_reply: false,
            commands_since_flush: 0,
            multi: None,
            multi_failed: false,
            watched: Vec::new(),
        }
    }
}
