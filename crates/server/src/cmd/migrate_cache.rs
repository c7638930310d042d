//! MIGRATE's connections to its targets, kept between calls as Redis keeps them
//! (`migrateGetSocket`): at most 64, one per `host:port`, each remembering the
//! database it last selected, closed after 10 seconds unused (INFO
//! `migrate_cached_sockets`).
//!
//! A connection is taken out of the cache while a MIGRATE uses it and put back after a
//! clean exchange, so two MIGRATEs to the same target never share one; a connection
//! that failed is dropped.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Most connections kept (Redis's `MIGRATE_SOCKET_CACHE_ITEMS`).
const MAX_CACHED: usize = 64;
/// Unused this long, a connection is closed (Redis's `MIGRATE_SOCKET_CACHE_TTL`).
const TTL: Duration = Duration::from_secs(10);

/// A connection to a target: plain, or TLS with `tls-cluster` (Redis's MIGRATE opens
/// the bus's kind of connection). Blocking, with the socket's timeouts.
#[derive(Debug)]
pub enum TargetStream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS; the handshake runs with the first write.
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for TargetStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            TargetStream::Plain(s) => s.read(buf),
            TargetStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for TargetStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            TargetStream::Plain(s) => s.write(buf),
            TargetStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            TargetStream::Plain(s) => s.flush(),
            TargetStream::Tls(s) => s.flush(),
        }
    }
}

/// A kept connection.
#[derive(Debug)]
pub struct Cached {
    /// The connection.
    pub stream: TargetStream,
    /// The database it last selected (`None`: select before use).
    pub db: Option<i64>,
    last_use: Instant,
}

impl Cached {
    /// A new connection, nothing selected yet.
    pub fn new(stream: TargetStream) -> Cached {
        Cached {
            stream,
            db: None,
            last_use: Instant::now(),
        }
    }
}

/// The cache.
#[derive(Debug, Default)]
pub struct MigrateCache {
    sockets: Mutex<HashMap<String, Cached>>,
}

impl MigrateCache {
    /// Takes the connection to `target` out of the cache, if one is kept.
    pub fn take(&self, target: &str) -> Option<Cached> {
        self.sockets.lock().remove(target)
    }

    /// Keeps `cached` for `target` after a clean exchange. When the cache is full, a
    /// random kept connection is closed to make room, as Redis does.
    pub fn put(&self, target: String, mut cached: Cached) {
        cached.last_use = Instant::now();
        let mut sockets = self.sockets.lock();
        if sockets.len() >= MAX_CACHED && !sockets.contains_key(&target) {
            if let Some(victim) = sockets.keys().next().cloned() {
                sockets.remove(&victim);
            }
        }
        sockets.insert(target, cached);
    }

    /// Closes the connections unused for longer than the TTL (from the server's cron).
    pub fn close_idle(&self) {
        self.sockets
            .lock()
            .retain(|_, cached| cached.last_use.elapsed() <= TTL);
    }

    /// Connections kept now.
    pub fn len(&self) -> usize {
        self.sockets.lock().len()
    }

    /// No connection is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_taken_put_back_and_closed_when_idle() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let cache = MigrateCache::default();
        cache.put("h:1".into(), Cached::new(TargetStream::Plain(stream)));
        assert_eq!(cache.len(), 1);
        let mut taken = cache.take("h:1").unwrap();
        assert!(cache.is_empty() && cache.take("h:1").is_none());
        taken.db = Some(3);
        cache.put("h:1".into(), taken);
        cache.close_idle();
        assert_eq!(cache.take("h:1").unwrap().db, Some(3));
    }
}
