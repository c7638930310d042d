//! Keyspace notifications (`notify-keyspace-events`), as Redis 7.0 sends them: an event
//! on key `k` of database `n` is published as message `<event>` on channel
//! `__keyspace@<n>__:<k>` (class `K`) and as message `<k>` on `__keyevent@<n>__:<event>`
//! (class `E`), through the ordinary pub/sub machinery.
//!
//! The API for command code is one call, placed where Redis calls
//! `notifyKeyspaceEvent`, after the change is made:
//!
//! ```ignore
//! crate::notify::keyspace_event(ctx, NotifyClass::Generic, "del", db, key);
//! ```
//!
//! It costs one relaxed load when the class is off. Events go through the store's event
//! queue ([`crate::store::KeyEvents`]), where shards also put `expired` (lazy and active
//! expiry) and `new` events, so subscribers see every event in the order it happened;
//! the connection publishes the queue after each command ([`publish_pending`]), the
//! active expiry thread after each cycle.

use bytes::{Bytes, BytesMut};

use crate::cmd::Ctx;
use crate::pubsub::Kind;
use crate::shared::Shared;
use crate::store::KeyEvent;

/// A notification class (one letter of `notify-keyspace-events`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum NotifyClass {
    /// `g`: DEL, EXPIRE, RENAME... (type-independent commands).
    Generic = 1 << 2,
    /// `$`: string commands.
    String = 1 << 3,
    /// `l`: list commands.
    List = 1 << 4,
    /// `s`: set commands.
    Set = 1 << 5,
    /// `h`: hash commands.
    Hash = 1 << 6,
    /// `z`: sorted set commands.
    Zset = 1 << 7,
    /// `x`: a key expired.
    Expired = 1 << 8,
    /// `e`: a key was evicted (maxmemory).
    Evicted = 1 << 9,
    /// `t`: stream commands.
    Stream = 1 << 10,
    /// `m`: a key was looked up and missing (excluded from `A`).
    KeyMiss = 1 << 11,
    /// `d`: module events.
    Module = 1 << 13,
    /// `n`: a key was created (excluded from `A`).
    New = 1 << 14,
}

/// `K`: publish on `__keyspace@<db>__:<key>`.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: publish on `__keyevent@<db>__:<event>`.
pub const KEYEVENT: u32 = 1 << 1;
/// `A`: every class but `m` and `n`.
pub const ALL: u32 = (1 << 2)
    | (1 << 3)
    | (1 << 4)
    | (1 << 5)
    | (1 << 6)
    | (1 << 7)
    | (1 << 8)
    | (1 << 9)
    | (1 << 10)
    | (1 << 13);

impl NotifyClass {
    /// The class's flag bit.
    #[inline]
    pub const fn bit(self) -> u32 {
        self as u32
    }
}

/// The error CONFIG SET gives for a character that names no class.
pub const INVALID_CLASS: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// Parses a `notify-keyspace-events` value into flag bits; `None` on an unknown letter.
pub fn parse_flags(classes: &[u8]) -> Option<u32> {
    classes.iter().try_fold(0, |flags, c| {
        let bit = match c {
            b'A' => ALL,
            b'g' => NotifyClass::Generic.bit(),
            b'$' => NotifyClass::String.bit(),
            b'l' => NotifyClass::List.bit(),
            b's' => NotifyClass::Set.bit(),
            b'h' => NotifyClass::Hash.bit(),
            b'z' => NotifyClass::Zset.bit(),
            b'x' => NotifyClass::Expired.bit(),
            b'e' => NotifyClass::Evicted.bit(),
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b't' => NotifyClass::Stream.bit(),
            b'm' => NotifyClass::KeyMiss.bit(),
            b'd' => NotifyClass::Module.bit(),
            b'n' => NotifyClass::New.bit(),
            _ => return None,
        };
        Some(flags | bit)
    })
}

/// The canonical text of `flags`, as CONFIG GET shows it.
pub fn flags_to_string(flags: u32) -> String {
    let mut out = String::new();
    if flags & ALL == ALL {
        out.push('A');
    } else {
        for (class, letter) in [
            (NotifyClass::Generic, 'g'),
            (NotifyClass::String, '$'),
            (NotifyClass::List, 'l'),
            (NotifyClass::Set, 's'),
            (NotifyClass::Hash, 'h'),
            (NotifyClass::Zset, 'z'),
            (NotifyClass::Expired, 'x'),
            (NotifyClass::Evicted, 'e'),
            (NotifyClass::Stream, 't'),
            (NotifyClass::Module, 'd'),
            (NotifyClass::New, 'n'),
        ] {
            if flags & class.bit() != 0 {
                out.push(letter);
            }
        }
    }
    for (bit, letter) in [
        (KEYSPACE, 'K'),
        (KEYEVENT, 'E'),
        (NotifyClass::KeyMiss.bit(), 'm'),
    ] {
        if flags & bit != 0 {
            out.push(letter);
        }
    }
    out
}

/// Notifies `event` of `class` on `key` of database `db` (Redis's
/// `notifyKeyspaceEvent`). Free when the class is off.
#[inline]
pub fn keyspace_event(
    ctx: &Ctx<'_>,
    class: NotifyClass,
    event: &'static str,
    db: usize,
    key: &[u8],
) {
    event_on(ctx.shared, class, event, db, key);
}

/// [`keyspace_event`] on a key of the client's selected database.
#[inline]
pub fn event(ctx: &Ctx<'_>, class: NotifyClass, name: &'static str, key: &[u8]) {
    event_on(ctx.shared, class, name, ctx.client.db, key);
}

/// [`keyspace_event`] for code that has the server but no command context.
#[inline]
pub fn event_on(shared: &Shared, class: NotifyClass, event: &'static str, db: usize, key: &[u8]) {
    let events = shared.store.events();
    if events.wants(class.bit()) {
        events.push(KeyEvent {
            db,
            key: Bytes::copy_from_slice(key),
            class: class.bit(),
            event,
            modified: false,
        });
    }
}

/// Publishes every queued event (and hands expirations to tracking). `me` is the client
/// whose command just ran (0 for none): its own messages go straight to `own_output`.
pub fn publish_pending(shared: &Shared, me: u64, own_output: &mut BytesMut) {
    let events = shared.store.events();
    if !events.pending() {
        return;
    }
    events.drain(|batch| {
        let flags = events.notify_flags();
        let limit = shared.config.read().client_output_buffer_limit[2];
        let mut channel = Vec::new();
        for event in &batch {
            if event.modified {
                shared.tracking.invalidate_key(shared, &event.key, None);
            }
            if event.class == 0 || flags & event.class == 0 {
                continue;
            }
            let db = event.db.to_string();
            let mut send = |channel: &[u8], message: &[u8]| {
                let published =
                    shared
                        .pubsub
                        .publish(Kind::Channel, channel, message, &limit, me, own_output);
                for id in published.overflowed {
                    shared.clients.close_for_output_limit(id);
                }
            };
            if flags & KEYSPACE != 0 {
                channel.clear();
                channel.extend_from_slice(b"__keyspace@");
                channel.extend_from_slice(db.as_bytes());
                channel.extend_from_slice(b"__:");
                channel.extend_from_slice(&event.key);
                send(&channel, event.event.as_bytes());
            }
            if flags & KEYEVENT != 0 {
                channel.clear();
                channel.extend_from_slice(b"__keyevent@");
                channel.extend_from_slice(db.as_bytes());
                channel.extend_from_slice(b"__:");
                channel.extend_from_slice(event.event.as_bytes());
                send(&channel, &event.key);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_as_redis_prints_them() {
        assert_eq!(parse_flags(b""), Some(0));
        assert_eq!(parse_flags(b"Q"), None);
        assert_eq!(flags_to_string(parse_flags(b"KEA").unwrap()), "AKE");
        assert_eq!(flags_to_string(parse_flags(b"Ex").unwrap()), "xE");
        assert_eq!(flags_to_string(parse_flags(b"AKEmn").unwrap()), "AKEm");
        assert_eq!(flags_to_string(parse_flags(b"g$lshzxetdn").unwrap()), "A");
        assert_eq!(flags_to_string(parse_flags(b"gn").unwrap()), "gn");
    }
}
