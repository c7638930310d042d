//! Pub/sub channels, patterns and shard channels: who listens to what.
//!
//! PUBLISH encodes each message once per protocol and appends it to every listener's
//! [`Mailbox`]; listeners' connection tasks write it out. A listener whose mailbox passes
//! the `client-output-buffer-limit pubsub` limits is reported back so the publisher can
//! disconnect it, which keeps memory bounded however slow a subscriber is.
//!
//! The tables' hash indexes grow a few entries at a time, as Redis's dicts rehash
//! ([`IncrementalMap`]): rebuilt whole under the write lock, the index of a million
//! channels stopped every PUBLISH for up to a quarter of a second while a client
//! subscribed them.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::RwLock;
use redline_resp::{encode, Protocol};

use crate::config::OutputBufferLimit;
use crate::glob::glob_match;
use crate::net::input_turns::{unsettled_before, Due, InputTurns};
use crate::net::mailbox::Mailbox;
use crate::store::incremental_map::IncrementalMap;
use crate::store::Hasher;

/// Which namespace a subscription lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE.
    Channel,
    /// PSUBSCRIBE.
    Pattern,
    /// SSUBSCRIBE.
    Shard,
}

/// One listener of a channel or pattern.
#[derive(Debug, Clone)]
struct Listener {
    id: u64,
    mailbox: Arc<Mailbox>,
}

type Table = IncrementalMap<Bytes, Vec<Listener>, Hasher>;

/// Every subscription on the server.
#[derive(Debug, Default)]
pub struct PubSub {
    channels: RwLock<Table>,
    patterns: RwLock<Table>,
    shard_channels: RwLock<Table>,
}

/// What a publish did.
#[derive(Debug, Default)]
pub struct Published {
    /// Listeners that got the message (PUBLISH's reply).
    pub receivers: i64,
    /// Listeners over their output-buffer limit, to disconnect.
    pub overflowed: Vec<u64>,
}

/// A message encoded lazily, once per protocol.
struct Encoded {
    forms: [Option<BytesMut>; 2],
}

impl Encoded {
    fn get(&mut self, proto: Protocol, parts: &[&[u8]]) -> &[u8] {
        let slot = &mut self.forms[usize::from(proto == Protocol::Resp3)];
        slot.get_or_insert_with(|| {
            let mut out = BytesMut::new();
            encode::write_push_len(&mut out, proto, parts.len());
            for p in parts {
                encode::write_bulk(&mut out, p);
            }
            out
        })
    }
}

impl PubSub {
    fn table(&self, kind: Kind) -> &RwLock<Table> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard_channels,
        }
    }

    /// Adds client `id` as a listener of `name`.
    pub fn subscribe(&self, kind: Kind, name: &Bytes, id: u64, mailbox: &Arc<Mailbox>) {
        let mut table = self.table(kind).write();
        let at = match table.find_or_hash(name.as_ref()) {
            Ok(at) => at,
            Err(hash) => table.add_new(hash, name.clone(), Vec::new()),
        };
        let listeners = &mut table[at];
        if !listeners.iter().any(|l| l.id == id) {
            listeners.push(Listener {
                id,
                mailbox: mailbox.clone(),
            });
        }
    }

    /// The subscriptions of the clients in `ids` (ACL SETUSER checks them when a user's
    /// channels shrink); a scan of every table, so only for rare administrative paths.
    pub fn subscriptions_of(&self, ids: &[u64]) -> Vec<(u64, Kind, Bytes)> {
        let mut out = Vec::new();
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for (name, listeners) in self.table(kind).read().iter() {
                for l in listeners.iter().filter(|l| ids.contains(&l.id)) {
                    out.push((l.id, kind, name.clone()));
                }
            }
        }
        out
    }

    /// Removes client `id` from `name`.
    pub fn unsubscribe(&self, kind: Kind, name: &[u8], id: u64) {
        let mut table = self.table(kind).write();
        let Some(at) = table.get_index_of(name) else {
            return;
        };
        table[at].retain(|l| l.id != id);
        if table[at].is_empty() {
            table.swap_remove_index(at);
            table.shrink_if_sparse();
        }
    }

    /// The background cycle's share of the indexes' moves (see [`IncrementalMap::tidy`]),
    /// so a move ends even when no one subscribes or unsubscribes.
    pub fn tidy(&self) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            let table = self.table(kind);
            if table.read().is_moving() {
                table.write().tidy();
            }
        }
    }

    /// Sends `message` to the listeners of `channel` (and, unless `kind` is
    /// [`Kind::Shard`], of every matching pattern).
    ///
    /// A listener that is the publishing client itself (`me`) gets the message straight
    /// into `own_output`, ahead of PUBLISH's own reply, exactly where Redis puts it.
    pub fn publish(
        &self,
        kind: Kind,
        channel: &[u8],
        message: &[u8],
        limit: &OutputBufferLimit,
        me: u64,
        own_output: &mut BytesMut,
    ) -> Published {
        let mut result = Published::default();
        let word: &[u8] = if kind == Kind::Shard {
            b"smessage"
        } else {
            b"message"
        };
        self.for_each_reached(kind, channel, |pattern, listeners| {
            let mut form = Encoded {
                forms: [None, None],
            };
            for l in listeners {
                let bytes = match pattern {
                    None => form.get(l.mailbox.protocol(), &[word, channel, message]),
                    Some(p) => {
                        let parts: [&[u8]; 4] = [b"pmessage", p, channel, message];
                        form.get(l.mailbox.protocol(), &parts)
                    }
                };
                deliver(l, bytes, limit, &mut result, me, own_output);
            }
        });
        result
    }

    /// Calls `reach` with the listeners a message to `channel` reaches: the channel's
    /// own (pattern `None`), then, unless `kind` is [`Kind::Shard`], those of each
    /// matching pattern, each under its table's read lock.
    fn for_each_reached(
        &self,
        kind: Kind,
        channel: &[u8],
        mut reach: impl FnMut(Option<&[u8]>, &[Listener]),
    ) {
        if let Some(listeners) = self.table(kind).read().get(channel) {
            reach(None, listeners);
        }
        if kind == Kind::Channel {
            for (pattern, listeners) in self.patterns.read().iter() {
                if glob_match(pattern, channel, false) {
                    reach(Some(pattern), listeners);
                }
            }
        }
    }

    /// The listeners a message to `channel` would reach, other than `me`, that have
    /// input they have not run yet, which came before arrival number `before`, each
    /// with the input turn to wait for (see [`crate::net::input_turns`]). Looked at
    /// under the tables' locks, so no listener leaves (and closes its socket) meanwhile.
    pub fn unsettled_listeners(
        &self,
        kind: Kind,
        channel: &[u8],
        me: u64,
        before: u64,
    ) -> Vec<(Arc<InputTurns>, Due)> {
        let mut unsettled = Vec::new();
        self.for_each_reached(kind, channel, |_, listeners| {
            let others = listeners.iter().filter(|l| l.id != me);
            let turns = others.map(|l| l.mailbox.input_turns());
            unsettled.extend(unsettled_before(turns, before));
        });
        unsettled
    }

    /// Channels (or shard channels) with at least one listener, matching `pattern`.
    pub fn active(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.table(kind)
            .read()
            .keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// Listeners of `name`.
    pub fn listeners(&self, kind: Kind, name: &[u8]) -> usize {
        self.table(kind).read().get(name).map_or(0, |l| l.len())
    }

    /// Unsubscribes every listener of the shard channels in `slots` (cluster mode: this
    /// node's shard no longer serves them). Each listener gets a `sunsubscribe` message
    /// with the shard channels it has left, and drops the channel from its own list
    /// before its next command.
    pub fn drop_shard_slots(&self, slots: &[usize]) {
        if slots.is_empty() || self.shard_channels.read().is_empty() {
            return;
        }
        let mut lost = vec![false; usize::from(redline_resp::slot::SLOTS)];
        for &slot in slots {
            if let Some(l) = lost.get_mut(slot) {
                *l = true;
            }
        }
        let dropped: Vec<(Bytes, Vec<Listener>)> = {
            let mut table = self.shard_channels.write();
            let names: Vec<Bytes> = table
                .keys()
                .filter(|c| lost[usize::from(redline_resp::slot::key_slot(c))])
                .cloned()
                .collect();
            names
                .into_iter()
                .filter_map(|name| table.swap_remove(name.as_ref()))
                .collect()
        };
        for (channel, listeners) in dropped {
            for l in listeners {
                // The count is of shard channels only, as in SUNSUBSCRIBE's replies.
                let left = self
                    .shard_channels
                    .read()
                    .iter()
                    .filter(|(_, others)| others.iter().any(|o| o.id == l.id))
                    .count();
                let mut notice = BytesMut::new();
                encode::write_push_len(&mut notice, l.mailbox.protocol(), 3);
                encode::write_bulk(&mut notice, b"sunsubscribe");
                encode::write_bulk(&mut notice, &channel);
                encode::write_integer(&mut notice, left as i64);
                l.mailbox.drop_shard_channel(channel.clone(), &notice);
            }
        }
    }

    /// Number of distinct channels, patterns or shard channels listened to (INFO's
    /// `pubsub_*` fields, PUBSUB NUMPAT).
    pub fn count(&self, kind: Kind) -> usize {
        self.table(kind).read().len()
    }
}

fn deliver(
    l: &Listener,
    bytes: &[u8],
    limit: &OutputBufferLimit,
    result: &mut Published,
    me: u64,
    own_output: &mut BytesMut,
) {
    if l.id == me {
        own_output.extend_from_slice(bytes);
        result.receivers += 1;
    } else if l.mailbox.push(bytes, limit) {
        result.receivers += 1;
    } else {
        result.overflowed.push(l.id);
        // Redis counts the receiver even when the message closes its connection.
        result.receivers += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(i: usize) -> Bytes {
        Bytes::from(format!("channel:{i}"))
    }

    /// Across the index's incremental growth, its moves and its shrinking, every
    /// channel keeps its listeners, and a channel no one listens to is gone.
    #[test]
    fn channels_stay_reachable_while_the_table_grows_and_shrinks() {
        let pubsub = PubSub::default();
        let (a, b) = (Arc::new(Mailbox::default()), Arc::new(Mailbox::default()));
        let n = 20_000;
        for i in 0..n {
            pubsub.subscribe(Kind::Channel, &channel(i), 1, &a);
            if i % 2 == 0 {
                pubsub.subscribe(Kind::Channel, &channel(i), 2, &b);
            }
            // Subscribing twice changes nothing.
            pubsub.subscribe(Kind::Channel, &channel(i), 1, &a);
        }
        assert_eq!(pubsub.count(Kind::Channel), n);
        for i in 0..n {
            let expected = if i % 2 == 0 { 2 } else { 1 };
            assert_eq!(
                pubsub.listeners(Kind::Channel, &channel(i)),
                expected,
                "{i}"
            );
        }
        let grown = pubsub.channels.read().capacity();

        for i in 0..n - 100 {
            pubsub.unsubscribe(Kind::Channel, &channel(i), 1);
            pubsub.unsubscribe(Kind::Channel, &channel(i), 2);
        }
        assert_eq!(pubsub.count(Kind::Channel), 100);
        assert!(pubsub.channels.read().capacity() <= grown / 4);
        for _ in 0..1_000 {
            pubsub.tidy();
        }
        assert!(!pubsub.channels.read().is_moving());
        let mut left = pubsub.active(Kind::Channel, None);
        left.sort();
        let mut expected: Vec<Bytes> = (n - 100..n).map(channel).collect();
        expected.sort();
        assert_eq!(left, expected);
        assert_eq!(pubsub.listeners(Kind::Channel, &channel(0)), 0);
        assert_eq!(pubsub.listeners(Kind::Channel, &channel(n - 1)), 1);
    }
}
