//! `MGET`, `MSET`, `DEL`, `UNLINK`, `EXISTS`, `TOUCH` over keys in several slots: one
//! command per slot (keys in the caller's order within it), all sent at once through the
//! batch path (one write per node), and the replies merged back: MGET's values in the
//! caller's key order, MSET's OK when every part is OK, the counts summed.
//!
//! The parts run independently, as they would on separate calls: a split MSET is not
//! atomic across slots (Redis Cluster cannot make it so).

use bytes::Bytes;
use redline_resp::slot::key_slot;
use redline_resp::Frame;

use crate::cmd::Cmd;
use crate::error::Error;

use super::batch;
use super::client::ClusterClient;
use super::config::ReadFrom;
use super::exec::SlotCommand;
use super::route::Split;
use crate::args::Args;

/// How to put a split command's replies back together.
#[derive(Debug)]
pub(crate) struct Plan {
    kind: Split,
    /// Per part: its slot and the indexes of its key groups in the caller's command.
    parts: Vec<(u16, Vec<usize>)>,
    /// Key groups in the caller's command.
    keys: usize,
}

/// Splits, sends and merges one multi-key command.
pub(crate) async fn run(
    client: &ClusterClient,
    bytes: &Bytes,
    kind: Split,
    readonly: bool,
    read_from: ReadFrom,
) -> Result<Frame, Error> {
    let (items, plan) = plan(bytes, kind, readonly, read_from)?;
    let replies = batch::run(client.shared(), items).await;
    plan.merge(replies)
}

/// One command per slot (keys in the caller's order within it), and the plan to merge.
pub(crate) fn plan(
    bytes: &Bytes,
    kind: Split,
    readonly: bool,
    read_from: ReadFrom,
) -> Result<(Vec<(Bytes, SlotCommand)>, Plan), Error> {
    let Some(args) = Args::new(bytes) else {
        return Err(Error::EmptyCommand);
    };
    let ranges = args.ranges();
    let Some(name) = ranges.first().and_then(|r| bytes.get(r.clone())) else {
        return Err(Error::EmptyCommand);
    };
    let step = kind.step();
    let groups_of_args = &ranges[1..];
    // slot → indexes of key groups (a key and, for MSET, its value), first-seen order.
    let mut parts: Vec<(u16, Vec<usize>)> = Vec::new();
    for (g, group) in groups_of_args.chunks(step).enumerate() {
        let Some(key) = bytes.get(group[0].clone()) else {
            continue;
        };
        let slot = key_slot(key);
        match parts.iter_mut().find(|(s, _)| *s == slot) {
            Some((_, members)) => members.push(g),
            None => parts.push((slot, vec![g])),
        }
    }
    let items = parts
        .iter()
        .map(|(slot, members)| {
            let mut cmd = Cmd::new(name);
            for &g in members {
                for r in &groups_of_args[g * step..(g * step + step).min(groups_of_args.len())] {
                    cmd.push_arg(bytes.slice(r.clone()));
                }
            }
            let sc = SlotCommand {
                slot: *slot,
                readonly,
                replica: read_from == ReadFrom::Replica,
            };
            (cmd.into_bytes(), sc)
        })
        .collect();
    let plan = Plan {
        kind,
        parts,
        keys: groups_of_args.len() / step,
    };
    Ok((items, plan))
}

impl Plan {
    /// Number of per-slot commands.
    pub(crate) fn len(&self) -> usize {
        self.parts.len()
    }

    /// The caller's reply from the parts' replies (in part order).
    pub(crate) fn merge(&self, replies: Vec<Result<Frame, Error>>) -> Result<Frame, Error> {
        merge(self.kind, &self.parts, replies, self.keys)
    }
}

fn merge(
    kind: Split,
    parts: &[(u16, Vec<usize>)],
    replies: Vec<Result<Frame, Error>>,
    keys: usize,
) -> Result<Frame, Error> {
    match kind {
        Split::Mget => {
            let mut values = vec![Frame::Null; keys];
            for ((_, members), reply) in parts.iter().zip(replies) {
                match reply? {
                    Frame::Array(items) => {
                        for (&g, value) in members.iter().zip(items) {
                            if let Some(slot) = values.get_mut(g) {
                                *slot = value;
                            }
                        }
                    }
                    other => return Ok(other),
                }
            }
            Ok(Frame::Array(values))
        }
        Split::Mset => {
            let mut first = None;
            for reply in replies {
                let reply = reply?;
                if matches!(reply, Frame::Error(_) | Frame::BulkError(_)) {
                    return Ok(reply);
                }
                first.get_or_insert(reply);
            }
            Ok(first.unwrap_or(Frame::Null))
        }
        Split::Count => {
            let mut total = 0i64;
            for reply in replies {
                match reply? {
                    Frame::Integer(n) => total += n,
                    other => return Ok(other),
                }
            }
            Ok(Frame::Integer(total))
        }
    }
}
