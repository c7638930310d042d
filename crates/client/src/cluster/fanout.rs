//! Keyless commands: one node, or every master / every node with the replies combined
//! as Redis's `response_policy` tips say (`DBSIZE` sums, `FLUSHALL` needs every node to
//! succeed, `KEYS` concatenates, `SCRIPT EXISTS` ANDs...).

use std::sync::Arc;

use bytes::Bytes;
use redline_resp::Frame;

use crate::error::Error;

use super::client::Shared;
use super::exec::{known_unsent, Retry};
use super::join::join_all;
use super::node::Node;
use super::route::Policy;

/// Which nodes a fan-out reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nodes {
    Masters,
    /// Masters, then replicas (replicas over `READONLY` connections).
    All,
}

/// The nodes of the current table, each with whether it is a replica.
fn targets(shared: &Shared, nodes: Nodes) -> Vec<(Arc<Node>, bool)> {
    let table = shared.table.load();
    let masters = table.masters();
    let mut out: Vec<(Arc<Node>, bool)> = masters.iter().map(|m| (m.clone(), false)).collect();
    if nodes == Nodes::All {
        for node in table.all_nodes() {
            if !masters.iter().any(|m| m.addr == node.addr) {
                out.push((node, true));
            }
        }
    }
    out
}

/// One master at random (seeds when no topology is known); re-sent on another after a
/// connection error when that is safe.
pub(crate) async fn any(shared: &Shared, bytes: Bytes, readonly: bool) -> Result<Frame, Error> {
    let mut retry = Retry::new(shared);
    loop {
        let node = shared.table.load().random_master().cloned();
        let Some(node) = node else {
            shared.request_refresh();
            if retry.pause().await {
                continue;
            }
            return Err(super::exec::unserved(0));
        };
        match node.pick().send(bytes.clone()).await {
            Err(err)
                if err.is_connection_error()
                    && (readonly || shared.cfg.retry_writes || known_unsent(&err)) =>
            {
                shared.request_refresh();
                if !retry.pause().await {
                    return Err(err);
                }
            }
            other => return other,
        }
    }
}

/// Sends to every target; each node's reply by address. A connection error fails the
/// whole call (some nodes may have run the command).
pub(crate) async fn each(
    shared: &Shared,
    bytes: Bytes,
    nodes: Nodes,
) -> Result<Vec<(String, Frame)>, Error> {
    let targets = targets(shared, nodes);
    let replies = join_all(targets.iter().map(|(node, replica)| {
        let bytes = bytes.clone();
        async move {
            if *replica {
                node.pick_readonly().send(bytes).await
            } else {
                node.pick().send(bytes).await
            }
        }
    }))
    .await;
    let mut out = Vec::with_capacity(targets.len());
    for ((node, _), reply) in targets.iter().zip(replies) {
        out.push((node.addr.to_string(), reply?));
    }
    Ok(out)
}

/// Sends to every target and combines the replies by `policy`.
pub(crate) async fn combined(
    shared: &Shared,
    bytes: Bytes,
    nodes: Nodes,
    policy: Policy,
) -> Result<Frame, Error> {
    let replies = each(shared, bytes, nodes).await?;
    Ok(combine(
        replies.into_iter().map(|(_, f)| f).collect(),
        policy,
    ))
}

/// Combines replies; an error reply wins unless one success is enough.
pub(crate) fn combine(replies: Vec<Frame>, policy: Policy) -> Frame {
    if policy == Policy::OneSucceeded {
        let mut first_error = None;
        for reply in replies {
            if is_error(&reply) {
                first_error.get_or_insert(reply);
            } else {
                return reply;
            }
        }
        return first_error.unwrap_or(Frame::Null);
    }
    if let Some(err) = replies.iter().find(|r| is_error(r)) {
        return err.clone();
    }
    match policy {
        Policy::Sum | Policy::Min | Policy::Max => {
            let ints = replies.iter().filter_map(integer);
            let value = match policy {
                Policy::Sum => Some(ints.sum()),
                Policy::Min => ints.min(),
                _ => ints.max(),
            };
            value.map(Frame::Integer).unwrap_or(Frame::Integer(0))
        }
        Policy::And | Policy::Or => {
            let mut acc: Option<Vec<Frame>> = None;
            for reply in replies {
                let Frame::Array(items) = reply else {
                    return reply;
                };
                acc = Some(match acc {
                    None => items,
                    Some(prev) => prev
                        .into_iter()
                        .zip(items)
                        .map(|(a, b)| {
                            let (a, b) =
                                (integer(&a).unwrap_or(0) != 0, integer(&b).unwrap_or(0) != 0);
                            let v = if policy == Policy::And {
                                a && b
                            } else {
                                a || b
                            };
                            Frame::Integer(i64::from(v))
                        })
                        .collect(),
                });
            }
            Frame::Array(acc.unwrap_or_default())
        }
        Policy::Concat => {
            let mut all = Vec::new();
            for reply in replies {
                match reply {
                    Frame::Array(items) | Frame::Set(items) => all.extend(items),
                    other => all.push(other),
                }
            }
            Frame::Array(all)
        }
        Policy::AllSucceeded | Policy::OneSucceeded => {
            replies.into_iter().next().unwrap_or(Frame::Null)
        }
    }
}

fn is_error(frame: &Frame) -> bool {
    matches!(frame, Frame::Error(_) | Frame::BulkError(_))
}

fn integer(frame: &Frame) -> Option<i64> {
    match frame {
        Frame::Integer(n) => Some(*n),
        Frame::Boolean(b) => Some(i64::from(*b)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies() {
        let ints = || vec![Frame::Integer(3), Frame::Integer(1), Frame::Integer(2)];
        assert_eq!(combine(ints(), Policy::Sum), Frame::Integer(6));
        assert_eq!(combine(ints(), Policy::Min), Frame::Integer(1));
        assert_eq!(combine(ints(), Policy::Max), Frame::Integer(3));
        let err = Frame::Error(Bytes::from_static(b"ERR x"));
        assert_eq!(
            combine(vec![Frame::Integer(1), err.clone()], Policy::Sum),
            err
        );
        assert_eq!(
            combine(vec![err.clone(), Frame::Integer(1)], Policy::OneSucceeded),
            Frame::Integer(1)
        );
        let arr = |v: &[i64]| Frame::Array(v.iter().map(|&n| Frame::Integer(n)).collect());
        assert_eq!(
            combine(vec![arr(&[1, 0, 1]), arr(&[1, 1, 0])], Policy::And),
            arr(&[1, 0, 0])
        );
        assert_eq!(
            combine(vec![arr(&[1]), arr(&[2, 3])], Policy::Concat),
            arr(&[1, 2, 3])
        );
    }
}
