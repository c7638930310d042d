//! Subscribe mode: `SUBSCRIBE`, `PSUBSCRIBE` and `SSUBSCRIBE` print their confirmations and
//! then every message as redis-cli does (`1) "message"  2) "ch"  3) "payload"`), until
//! Ctrl-C. The client's subscriber resubscribes by itself after a reconnect.

use std::collections::HashSet;

use bytes::Bytes;
use redline::{ClusterSubscriber, Frame, Message, Subscriber};

use super::print;
use super::session::{Reason, SessionError};
use super::Output;

/// Which subscribe command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// SUBSCRIBE.
    Channel,
    /// PSUBSCRIBE.
    Pattern,
    /// SSUBSCRIBE.
    Shard,
}

impl Kind {
    /// The subscribe command `name` names, if it is one.
    pub(crate) fn of(name: &[u8]) -> Option<Kind> {
        match name.to_ascii_lowercase().as_slice() {
            b"subscribe" => Some(Kind::Channel),
            b"psubscribe" => Some(Kind::Pattern),
            b"ssubscribe" => Some(Kind::Shard),
            _ => None,
        }
    }

    fn confirmation(self) -> &'static str {
        match self {
            Kind::Channel => "subscribe",
            Kind::Pattern => "psubscribe",
            Kind::Shard => "ssubscribe",
        }
    }
}

/// A subscriber on one server, or on the shards of a cluster.
pub(crate) enum Listener {
    /// One connection (standalone, or classic channels on a cluster).
    One(Subscriber),
    /// Shard channels on a cluster, one connection per owning node.
    Shards(ClusterSubscriber),
}

impl Listener {
    async fn next(&mut self) -> Option<Message> {
        match self {
            Listener::One(sub) => sub.next().await,
            Listener::Shards(sub) => sub.next().await,
        }
    }
}

fn bulk(b: &[u8]) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(b))
}

/// Subscribes to `names` and prints until Ctrl-C or the end of the subscription.
pub(crate) async fn run(
    mut listener: Listener,
    kind: Kind,
    names: Vec<Bytes>,
    output: Output,
) -> Result<(), SessionError> {
    let lost = |e| SessionError::Lost(Reason(e));
    match (&mut listener, kind) {
        (Listener::One(sub), Kind::Channel) => sub.subscribe(names.clone()).await.map_err(lost)?,
        (Listener::One(sub), Kind::Pattern) => sub.psubscribe(names.clone()).await.map_err(lost)?,
        (Listener::One(sub), Kind::Shard) => sub.ssubscribe(names.clone()).await.map_err(lost)?,
        (Listener::Shards(sub), _) => sub.ssubscribe(names.clone()).await.map_err(lost)?,
    }
    if output == Output::Standard {
        print(b"Reading messages... (press Ctrl-C to quit)\n".to_vec());
    }
    // The server's confirmations carry the running subscription count.
    let mut seen = HashSet::new();
    for name in &names {
        seen.insert(name.clone());
        let confirmation = Frame::Array(vec![
            bulk(kind.confirmation().as_bytes()),
            Frame::Bulk(name.clone()),
            Frame::Integer(seen.len() as i64),
        ]);
        print(output.render(&confirmation));
    }
    loop {
        let message = tokio::select! {
            message = listener.next() => message,
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        let Some(message) = message else {
            return Ok(());
        };
        let frame = match (&message.pattern, message.sharded) {
            (Some(pattern), _) => Frame::Array(vec![
                bulk(b"pmessage"),
                Frame::Bulk(pattern.clone()),
                Frame::Bulk(message.channel),
                Frame::Bulk(message.payload),
            ]),
            (None, true) => Frame::Array(vec![
                bulk(b"smessage"),
                Frame::Bulk(message.channel),
                Frame::Bulk(message.payload),
            ]),
            (None, false) => Frame::Array(vec![
                bulk(b"message"),
                Frame::Bulk(message.channel),
                Frame::Bulk(message.payload),
            ]),
        };
        print(output.render(&frame));
    }
}
