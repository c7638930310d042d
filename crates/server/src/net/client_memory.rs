//! `maxmemory-clients`: the memory all normal clients hold together (query buffers,
//! replies waiting to be written, pub/sub messages not taken yet) and, past the limit,
//! client eviction: the clients holding the most are closed until the total is under it
//! again, as Redis's `evictClients` does. A client with `CLIENT NO-EVICT on` is counted
//! but never closed.
//!
//! Each connection's mailbox keeps the figure it last counted for its client and moves
//! the total by the difference (after each batch of commands, and whenever a message is
//! added for it), so the check after a batch is one comparison; only over the limit are
//! the clients looked at. The total is kept only while the limit is on; each client's
//! own figure always is, so turning the limit on counts every client at once.

use std::mem::size_of;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;

use super::client::{ClientState, WatchedKey};
use super::mailbox::Mailbox;
use crate::alloc::Gauge;
use crate::config::Config;

/// What one entry of a per-client set (a channel, a pattern, a tracked prefix) costs
/// beside its name: the handle, its hash and its index slot.
const SET_ENTRY: usize = size_of::<Bytes>() + 2 * size_of::<usize>();

/// A client's memory as CLIENT LIST shows it and `maxmemory-clients` counts it (Redis's
/// `getClientMemoryUsage`): buffers by their capacity, arguments and queued commands by
/// their length, per-entry overheads for the keys it watches and the channels, patterns
/// and prefixes it follows (whose names other structures share).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientFigures {
    /// Free space in the query buffer (`qbuf-free`).
    pub qbuf_free: usize,
    /// Arguments of a command still arriving (`argv-mem`).
    pub argv: usize,
    /// Commands queued since MULTI (`multi-mem`).
    pub multi: usize,
    /// Capacity of the buffer replies are written from (`rbs`).
    pub reply_buffer: usize,
    /// All of it, the client's own state included: `tot-mem` without the messages
    /// waiting in its mailbox.
    pub held: usize,
}

impl ClientFigures {
    /// The figures of `client`, whose connection has a query buffer of `qbuf_capacity`
    /// bytes (`qbuf_len` of them used), `argv` bytes of arguments already split off it,
    /// and a reply buffer of `reply_buffer` bytes.
    pub fn of(
        client: &ClientState,
        qbuf_capacity: usize,
        qbuf_len: usize,
        argv: usize,
        reply_buffer: usize,
    ) -> ClientFigures {
        let multi = client.multi.as_ref().map_or(0, |queue| {
            client.multi_bytes + queue.len() * size_of::<Vec<Bytes>>()
        });
        let entries = client.channels.len()
            + client.patterns.len()
            + client.shard_channels.len()
            + client.tracking_prefixes;
        let state = size_of::<ClientState>()
            + size_of::<Mailbox>()
            + client.watched.len() * size_of::<WatchedKey>()
            + entries * SET_ENTRY;
        ClientFigures {
            qbuf_free: qbuf_capacity.saturating_sub(qbuf_len),
            argv,
            multi,
            reply_buffer,
            held: qbuf_capacity + argv + multi + reply_buffer + state,
        }
    }
}

/// The reply buffer an idle client keeps (Redis's `PROTO_REPLY_MIN_BYTES`).
pub const IDLE_REPLY_BUFFER: usize = 1024;

/// How long a client stays idle before its empty query buffer is freed (Redis's).
pub const IDLE_QUERY_BUFFER_AFTER: Duration = Duration::from_secs(2);

/// The limit and the total, shared by every connection; and how idle clients' buffers
/// are trimmed.
#[derive(Debug)]
pub struct ClientMemory {
    /// `maxmemory-clients` in bytes (a percentage is applied to `maxmemory`); 0: off.
    limit: AtomicU64,
    /// Bytes every client holds, as last counted.
    total: Gauge,
    /// Clients closed for it (INFO `evicted_clients`).
    pub evicted: AtomicU64,
    /// DEBUG REPLYBUFFER RESIZING: idle clients' reply buffers shrink.
    pub resizing: AtomicBool,
    /// DEBUG REPLYBUFFER PEAK-RESET-TIME, in milliseconds (-1: never): how long a reply
    /// buffer's size is kept after its last use.
    pub peak_reset_ms: AtomicI64,
    /// What clients closed by client eviction hold until their connections have freed
    /// it: `maxmemory` leaves it out, as Redis frees an evicted client at once.
    closing: OnceLock<Arc<Gauge>>,
}

/// Redis's default `reply_buffer_peak_reset_time`.
pub const DEFAULT_PEAK_RESET_MS: i64 = 5000;

impl Default for ClientMemory {
    fn default() -> Self {
        ClientMemory {
            limit: AtomicU64::new(0),
            total: Gauge::default(),
            evicted: AtomicU64::new(0),
            resizing: AtomicBool::new(true),
            peak_reset_ms: AtomicI64::new(DEFAULT_PEAK_RESET_MS),
            closing: OnceLock::new(),
        }
    }
}

impl ClientMemory {
    /// Counts evicted clients' memory, until freed, in `gauge` (which `maxmemory`
    /// leaves out).
    pub fn count_closing_in(&self, gauge: Arc<Gauge>) {
        let _ = self.closing.set(gauge);
    }

    /// Where evicted clients' memory is counted until freed.
    pub fn closing(&self) -> Option<&Arc<Gauge>> {
        self.closing.get()
    }

    /// Applies `maxmemory-clients` (and `maxmemory`, for a percentage).
    ///
    /// A limit that is on is never below 128 KiB, as in Redis
    /// (`getClientEvictionLimit`): a tiny one would evict every client, the one that
    /// could set it back included.
    pub fn configure(&self, config: &Config) {
        const FLOOR: u64 = 128 * 1024;
        let setting = config.param("maxmemory-clients");
        let limit = match setting.strip_suffix('%') {
            Some(percent) => {
                let maxmemory = u64::try_from(config.param_int("maxmemory")).unwrap_or(0);
                match percent.parse::<u64>() {
                    Ok(p) if p > 0 && maxmemory > 0 => {
                        (maxmemory.saturating_mul(p) / 100).max(FLOOR)
                    }
                    _ => 0,
                }
            }
            None => match u64::try_from(config.param_int("maxmemory-clients")) {
                Ok(bytes) if bytes > 0 => bytes.max(FLOOR),
                _ => 0,
            },
        };
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// Whether client memory is counted (the limit is on).
    #[inline]
    pub fn enabled(&self) -> bool {
        self.limit.load(Ordering::Relaxed) > 0
    }

    /// One client's figure went from `from` to `to`.
    pub fn change(&self, from: usize, to: usize) {
        self.total.change(from, to);
    }

    /// Whether a client idle this long gives back its (empty) query buffer.
    pub fn query_buffer_due(&self, idle: Duration) -> bool {
        idle >= IDLE_QUERY_BUFFER_AFTER
    }

    /// Whether a client idle this long shrinks its reply buffer: after DEBUG
    /// REPLYBUFFER's peak-reset time, unless resizing is off or the time is `never`.
    pub fn reply_buffer_due(&self, idle: Duration) -> bool {
        self.resizing.load(Ordering::Relaxed)
            && u64::try_from(self.peak_reset_ms.load(Ordering::Relaxed))
                .is_ok_and(|ms| idle >= Duration::from_millis(ms))
    }

    /// Whether a client idle for `idle`, with these figures, has a buffer to trim.
    pub fn should_trim(&self, idle: Duration, qbuf_capacity: usize, reply_buffer: usize) -> bool {
        (qbuf_capacity > 0 && self.query_buffer_due(idle))
            || (reply_buffer > IDLE_REPLY_BUFFER && self.reply_buffer_due(idle))
    }

    /// Whether the total is past the limit.
    #[inline]
    pub fn over(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        limit > 0 && self.total.bytes() as u64 > limit
    }
}
