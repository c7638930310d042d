//! Server-assisted client-side caching (opt-in): replies of read commands kept in the
//! client and dropped when the server says their keys changed.
//!
//! # How it works
//!
//! With [`Config::cache`](crate::Config::cache) set, every *multiplexed* connection of the
//! client (each node's, on a cluster) speaks RESP3 and sends `CLIENT TRACKING ON` (default
//! mode: the server remembers which keys this connection read; or `BCAST` with prefixes)
//! right after its handshake. The server then sends `["invalidate", [keys]]` push frames
//! on that same connection whenever a key it read changes, or `["invalidate", nil]` to
//! mean "everything" (FLUSHALL, a full tracking table). The connection task applies each
//! push to the cache *as it decodes it*, between the replies around it, so invalidations
//! and replies are processed in exactly the order the server sent them. RESP2 servers are
//! refused ([`Error::CacheNeedsResp3`]): without push frames there is no in-order
//! invalidation.
//!
//! Cached reads ([`Client::cached_get`](crate::Client::cached_get), `cached_mget`,
//! `cached_hget`, `cached_hgetall`, `cached_smembers`, and `cached_cmd` for any read-only
//! command with keys) look the encoded command up in a bounded LRU ([`store`]); a miss
//! leaves a *placeholder* before the command is sent, and the reply is stored only into
//! that same placeholder. Any invalidation of one of its keys, any flush, or an eviction
//! removes the placeholder, so a reply that raced an invalidation (the push came before
//! or after the reply, but before the reply was stored) is returned to its caller and
//! never cached. Entries also expire after the configured TTL cap.
//!
//! The whole cache is flushed when a multiplexed connection is lost (its tracking state
//! is gone with it, and invalidations may have been missed) and again when one is
//! re-established, before it carries a command. Writes sent through the same client
//! (`set`, `incr`, `cmd(["DEL", ..])`...) also drop their keys' entries when their reply
//! arrives, before the caller sees it. On a cluster, a slot that changes owner (a
//! `MOVED`, or a topology refresh) drops the entries of its keys, since the new owner
//! never saw the reads; cached reads always go to the slot's master (a replica may lag),
//! whatever `read_from` says.
//!
//! # Consistency guarantee
//!
//! The server's tracking, the in-order push processing and the placeholders give:
//!
//! 1. **Nothing older than a completed round trip.** If a write to key `k` (by anyone)
//!    completed before this client sent some command `C` on a multiplexed connection, then
//!    once `C`'s reply has been received, no cached read issued afterwards returns a value
//!    of `k` older than that write. (The server queued the invalidation for the
//!    connection before `C`'s reply, and the client applied it before delivering that
//!    reply.) With `pool_size > 1` this holds per connection: a round trip on each.
//! 2. **Read your writes.** A cached read issued after a write through the same client
//!    (its typed write methods, `cmd`, `query`, or a [`Pipeline`](crate::Pipeline) of
//!    the standalone client) returned, sees that write or a newer value, on any
//!    connection of the pool. Writes in WATCH transactions, cluster pipelines, scripts
//!    touching undeclared keys and dedicated connections count as writes by another
//!    client (guarantee 1).
//! 3. **Never stale forever.** An entry lives at most the TTL cap, and until the first of:
//!    an invalidation of one of its keys, a flush, eviction.
//! 4. **Monotonic per key between invalidations.** A stored reply was current when the
//!    server produced it and no invalidation of its keys has been processed since.
//!
//! What it does not give: a cached read may return a value that another client changed
//! a moment ago, if the invalidation is still on the wire (exactly as a read sent to the
//! server a moment earlier would have). When a connection dies silently, entries are
//! served until the loss is detected (a failed read or write, TCP keepalive, or the
//! `unresponsive_after` watchdog). On a cluster, after a failover or resharding that did
//! not delete the keys on the old owner (MIGRATE does, which invalidates them), entries
//! of the moved slots are served until the client learns the new topology. In `BCAST`
//! mode only keys under the configured prefixes are cached; other reads go to the server.

mod read;
pub(crate) mod store;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use redline_resp::command::{self, CommandFlags};
use redline_resp::{encode, Frame, Protocol};
use tokio::time::Instant;

use crate::error::Error;
use crate::net::Connection;
use store::{Lookup, Store};

/// Client-side cache settings (see [`Config::cache`](crate::Config::cache)).
///
/// ```
/// use std::time::Duration;
/// use redline::{CacheConfig, Config};
///
/// let mut cache = CacheConfig::new(64 << 20, Duration::from_secs(60));
/// cache.max_entries = 100_000;
/// cache.bcast_prefixes = Some(vec!["user:".into()]); // BCAST mode, keys under user: only
/// let mut cfg = Config::default();
/// cfg.cache = Some(cache);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheConfig {
    /// Bound on the bytes held (commands, keys and replies, plus a per-entry overhead).
    pub max_bytes: usize,
    /// Bound on the number of entries.
    pub max_entries: usize,
    /// Longest time an entry is served after it was stored (a cap for peace of mind:
    /// invalidations normally drop entries long before).
    pub ttl: Duration,
    /// `None`: default tracking mode (the server tracks the keys this client read).
    /// `Some(prefixes)`: `BCAST` mode, invalidations for every key under the prefixes
    /// (an empty list: every key), whether read or not; only those keys are cached.
    pub bcast_prefixes: Option<Vec<String>>,
}

impl CacheConfig {
    /// A cache of at most `max_bytes` whose entries live at most `ttl`; at most one
    /// entry per 64 bytes of the bound.
    ///
    /// ```
    /// let cache = redline::CacheConfig::new(1 << 20, std::time::Duration::from_secs(30));
    /// assert_eq!(cache.max_entries, 16384);
    /// ```
    pub fn new(max_bytes: usize, ttl: Duration) -> CacheConfig {
        CacheConfig {
            max_bytes,
            max_entries: (max_bytes / 64).max(1),
            ttl,
            bcast_prefixes: None,
        }
    }
}

impl Default for CacheConfig {
    /// 64 MiB, one minute.
    fn default() -> Self {
        CacheConfig::new(64 << 20, Duration::from_secs(60))
    }
}

/// Counters of a client-side cache since the client was made
/// ([`Client::cache_stats`](crate::Client::cache_stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheStats {
    /// Reads served from the cache.
    pub hits: u64,
    /// Cached reads that went to the server.
    pub misses: u64,
    /// Entries (stored or in flight) dropped because their keys changed: server
    /// invalidations, writes through this client, slots that changed owner.
    pub invalidations: u64,
    /// Entries dropped to keep within the byte and entry bounds.
    pub evictions: u64,
    /// Entries dropped because their TTL cap passed.
    pub expirations: u64,
    /// Whole-cache flushes: lost or new connections, `["invalidate", nil]`.
    pub flushes: u64,
    /// Entries held now (reads in flight included).
    pub entries: usize,
    /// Bytes held now, as charged against the bound.
    pub bytes: usize,
}

/// The cache shared by a client's connections and callers.
#[derive(Debug)]
pub(crate) struct Cache {
    store: Mutex<Store>,
    ttl: Duration,
    /// `CLIENT TRACKING ON ...`, encoded once.
    tracking: Bytes,
    bcast: Option<Box<[Bytes]>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("entries", &self.len())
            .field("bytes", &self.bytes())
            .finish()
    }
}

impl Cache {
    pub(crate) fn new(cfg: &CacheConfig) -> Arc<Cache> {
        let mut args: Vec<&str> = vec!["CLIENT", "TRACKING", "ON"];
        if let Some(prefixes) = &cfg.bcast_prefixes {
            args.push("BCAST");
            for p in prefixes {
                args.extend(["PREFIX", p]);
            }
        }
        let mut tracking = BytesMut::new();
        encode::command(&mut tracking, args.iter());
        Arc::new(Cache {
            store: Mutex::new(Store::new(cfg.max_bytes, cfg.max_entries)),
            ttl: cfg.ttl,
            tracking: tracking.freeze(),
            bcast: cfg.bcast_prefixes.as_ref().map(|p| {
                p.iter()
                    .map(|s| Bytes::copy_from_slice(s.as_bytes()))
                    .collect()
            }),
        })
    }

    fn store(&self) -> MutexGuard<'_, Store> {
        // The store is consistent after every method; a panic elsewhere cannot break it.
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Turns tracking on for a freshly opened multiplexed connection, before it carries
    /// any command.
    pub(crate) async fn enable_tracking(
        &self,
        conn: &mut Connection,
        addr: &Arc<str>,
    ) -> Result<(), Error> {
        if conn.protocol != Protocol::Resp3 {
            return Err(Error::CacheNeedsResp3 { addr: addr.clone() });
        }
        conn.write_all(&self.tracking, addr).await?;
        match conn.read_reply(addr).await? {
            Frame::Error(e) | Frame::BulkError(e) => Err(Error::from_server_reply(&e)),
            _ => Ok(()),
        }
    }

    /// A push frame from a tracked connection, applied in stream order.
    pub(crate) fn on_push(&self, frame: &Frame) {
        let Frame::Push(items) = frame else { return };
        let [Frame::Bulk(kind), keys] = items.as_slice() else {
            return;
        };
        if !kind.eq_ignore_ascii_case(b"invalidate") {
            return;
        }
        match keys {
            Frame::Array(keys) | Frame::Set(keys) => {
                let mut store = self.store();
                for key in keys {
                    if let Frame::Bulk(key) | Frame::Simple(key) = key {
                        store.invalidate(key);
                    }
                }
            }
            // nil: FLUSHALL/FLUSHDB, or the server's tracking table overflowed.
            _ => self.flush(),
        }
    }

    /// Drops everything (a connection was lost or opened, or the server said so).
    pub(crate) fn flush(&self) {
        self.store().flush();
    }

    /// Drops the entries of keys for which `affected` is true (cluster slot moves).
    pub(crate) fn remove_where(&self, affected: impl Fn(&[u8]) -> bool) {
        let n = self.store().remove_where(affected);
        if n > 0 {
            tracing::debug!(entries = n, "cache entries of moved slots dropped");
        }
    }

    /// A command sent through the client has been answered: if it may have written,
    /// drop its keys' entries before its caller sees the reply (read your writes).
    pub(crate) fn after_write(&self, bytes: &[u8]) {
        let args: Vec<&[u8]> = match crate::args::Args::new(bytes) {
            Some(args) => args.collect(),
            None => return,
        };
        let Some(spec) = command::resolve(&args) else {
            // Unknown (a module's): anything may have changed.
            self.flush();
            return;
        };
        if spec.flags.contains(CommandFlags::READONLY) {
            return;
        }
        match command::keys(&args) {
            Ok(positions) if !positions.is_empty() => {
                let mut store = self.store();
                for i in positions {
                    if let Some(key) = args.get(i) {
                        store.invalidate(key);
                    }
                }
            }
            // A write without keys (FLUSHALL, FLUSHDB, SWAPDB...).
            _ if spec.flags.contains(CommandFlags::WRITE) => self.flush(),
            _ => {}
        }
    }

    /// [`Cache::after_write`] for each command of an encoded pipeline.
    pub(crate) fn after_writes(&self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let Some(args) = crate::args::Args::new(bytes) else {
                return;
            };
            let Some(end) = args.ranges().last().map(|r| r.end + 2) else {
                return;
            };
            let (one, rest) = bytes.split_at(end.min(bytes.len()));
            self.after_write(one);
            bytes = rest;
        }
    }

    /// Looks a read up; see [`Store::lookup`].
    fn lookup(&self, cmd: &Bytes, keys: &[Bytes]) -> Lookup {
        self.store().lookup(cmd, keys, Instant::now())
    }

    /// Stores a reply if its placeholder survived; error replies are never stored.
    fn fill(&self, cmd: &Bytes, token: u64, frame: &Frame) {
        let mut store = self.store();
        if matches!(frame, Frame::Error(_) | Frame::BulkError(_)) {
            store.abandon(cmd, token);
        } else {
            store.fill(cmd, token, frame, Instant::now() + self.ttl);
        }
    }

    fn abandon(&self, cmd: &Bytes, token: u64) {
        self.store().abandon(cmd, token);
    }

    /// Whether reads of `keys` can be cached: always in default mode; in BCAST mode
    /// only under the prefixes, since the server reports nothing else.
    fn covers(&self, keys: &[Bytes]) -> bool {
        match &self.bcast {
            None => true,
            Some(prefixes) if prefixes.is_empty() => true,
            Some(prefixes) => keys
                .iter()
                .all(|k| prefixes.iter().any(|p| k.starts_with(p))),
        }
    }

    pub(crate) fn stats(&self) -> CacheStats {
        let store = self.store();
        let c = store.counters;
        CacheStats {
            hits: c.hits,
            misses: c.misses,
            invalidations: c.invalidations,
            evictions: c.evictions,
            expirations: c.expirations,
            flushes: c.flushes,
            entries: store.len(),
            bytes: store.bytes(),
        }
    }
}
