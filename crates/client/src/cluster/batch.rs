//! Many single-slot commands at once: grouped by the node that serves each slot, one
//! queue entry (one write) per node, nodes in parallel, replies back in input order.
//! Replies that are redirects (or connection failures that are safe to retry) are then
//! re-sent one by one through the single-command path, which follows them. Used by
//! cluster pipelines and by split multi-key commands (replies decoded), and by
//! [`ClusterClient::relay`](crate::ClusterClient::relay) (replies as bytes).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use redline_resp::Frame;

use crate::error::Error;
use crate::mux::UnitReply;

use super::client::Shared;
use super::exec::{known_unsent, send_to_slot, SlotCommand};
use super::join::join_all;
use super::metrics::bump;
use super::node::Node;
use super::redirect::{classify, Redirect};

/// The form a batch hands each reply back in: what the multiplexer delivers, and how a
/// redirect is recognised in it.
pub(crate) trait BatchReply: UnitReply {
    /// What the reply asks for, if it is a redirect (`MOVED`, `ASK`, `TRYAGAIN`...).
    fn redirect(&self) -> Option<Redirect>;

    /// The reply of a command re-sent on its own (the single-command path decodes).
    fn from_frame(frame: Frame) -> Self;
}

impl BatchReply for Frame {
    fn redirect(&self) -> Option<Redirect> {
        classify(self)
    }

    fn from_frame(frame: Frame) -> Frame {
        frame
    }
}

/// A reply as the server encoded it.
impl BatchReply for Bytes {
    fn redirect(&self) -> Option<Redirect> {
        // Only an error reply can be one; decoding it is nothing next to its round trip.
        if !matches!(self.first(), Some(b'-' | b'!')) {
            return None;
        }
        let frame = redline_resp::parse(&mut BytesMut::from(&self[..])).ok()??;
        classify(&frame)
    }

    fn from_frame(frame: Frame) -> Bytes {
        // Room for the usual short reply at once.
        let mut bytes = BytesMut::with_capacity(64);
        redline_resp::encode::frame(&mut bytes, &frame);
        bytes.freeze()
    }
}

/// Sends every command and returns each one's final reply, in order.
pub(crate) async fn run<R: BatchReply>(
    shared: &Shared,
    items: Vec<(Bytes, SlotCommand)>,
) -> Vec<Result<R, Error>> {
    // Group by node under one snapshot of the table.
    let mut groups: Vec<(Arc<Node>, bool, Vec<usize>)> = Vec::new();
    let mut unrouted = Vec::new();
    {
        let table = shared.table.load();
        for (i, (_, cmd)) in items.iter().enumerate() {
            let replica = if cmd.replica && cmd.readonly {
                table.replica(cmd.slot)
            } else {
                None
            };
            let (node, is_replica) = match replica {
                Some(n) => (n, true),
                None => match table.master(cmd.slot) {
                    Some(n) => (n, false),
                    None => {
                        unrouted.push(i);
                        continue;
                    }
                },
            };
            match groups
                .iter_mut()
                .find(|(n, r, _)| n.addr == node.addr && *r == is_replica)
            {
                Some((_, _, members)) => members.push(i),
                None => {
                    // Room for every command: a node often gets most of them.
                    let mut members = Vec::with_capacity(items.len() - i);
                    members.push(i);
                    groups.push((node.clone(), is_replica, members));
                }
            }
        }
    }
    let sent = join_all(groups.iter().map(|(node, replica, members)| {
        let bytes = match members.as_slice() {
            &[i] => items[i].0.clone(),
            members => {
                let mut buf =
                    BytesMut::with_capacity(members.iter().map(|&i| items[i].0.len()).sum());
                for &i in members {
                    buf.extend_from_slice(&items[i].0);
                }
                buf.freeze()
            }
        };
        async move {
            if *replica {
                bump(&shared.metrics.replica_reads);
                node.pick_readonly()
                    .send_unit::<R>(bytes, members.len())
                    .await
            } else {
                node.pick().send_unit::<R>(bytes, members.len()).await
            }
        }
    }))
    .await;

    let mut results: Vec<Option<Result<R, Error>>> = items.iter().map(|_| None).collect();
    let mut again: Vec<usize> = unrouted;
    for ((_, _, members), outcome) in groups.iter().zip(sent) {
        match outcome {
            Ok(frames) => {
                for (&i, reply) in members.iter().zip(frames) {
                    match reply.redirect() {
                        None => results[i] = Some(Ok(reply)),
                        Some(redirect) => {
                            if let Redirect::Moved { slot, host, port } = &redirect {
                                // Patch now so the re-sends (and everyone else) go right.
                                if let (false, Ok(node)) =
                                    (host.is_empty(), shared.registry.get(host, *port))
                                {
                                    bump(&shared.metrics.moved);
                                    shared.patch(*slot, &node);
                                    shared.request_refresh();
                                }
                            }
                            again.push(i);
                        }
                    }
                }
            }
            Err(err) => {
                let safe =
                    err.is_connection_error() && (shared.cfg.retry_writes || known_unsent(&err));
                if err.is_connection_error() {
                    shared.request_refresh();
                }
                for &i in members {
                    if safe || (err.is_connection_error() && items[i].1.readonly) {
                        again.push(i);
                    } else {
                        results[i] = Some(Err(err.clone()));
                    }
                }
            }
        }
    }
    // Re-send: slots in parallel, commands of one slot one after another in their
    // original order (a SET and the GET behind it must not swap).
    again.sort_unstable();
    let mut by_slot: Vec<(u16, Vec<usize>)> = Vec::new();
    for &i in &again {
        let slot = items[i].1.slot;
        match by_slot.iter_mut().find(|(s, _)| *s == slot) {
            Some((_, members)) => members.push(i),
            None => by_slot.push((slot, vec![i])),
        }
    }
    let items = &items;
    let resent = join_all(by_slot.iter().map(|(_, members)| async move {
        let mut out = Vec::with_capacity(members.len());
        for &i in members {
            let reply = send_to_slot(shared, items[i].0.clone(), items[i].1).await;
            out.push((i, reply.map(R::from_frame)));
        }
        out
    }))
    .await;
    for (i, result) in resent.into_iter().flatten() {
        results[i] = Some(result);
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or(Err(Error::Closed)))
        .collect()
}
