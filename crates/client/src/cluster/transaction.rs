//! Transactions on a cluster: an [atomic](super::ClusterPipeline::atomic) cluster
//! pipeline is sent as `MULTI`, the commands, `EXEC` in one unit to the master of the
//! one slot all its keys share (Redis Cluster cannot run a transaction across slots).
//!
//! A redirect while queuing (`MOVED`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN`) makes Redis
//! refuse the whole transaction at `EXEC` (`EXECABORT`) without running any of it, so the
//! unit is safely re-sent: to the new owner after `MOVED` (map patched), after a pause
//! otherwise (a migrating slot settles into a `MOVED`).

use bytes::{Bytes, BytesMut};
use redline_resp::Frame;

use crate::error::Error;

use super::client::Shared;
use super::exec::{known_unsent, unserved, Retry};
use super::redirect::{classify, Redirect};

const MULTI: &[u8] = b"*1\r\n$5\r\nMULTI\r\n";
const EXEC: &[u8] = b"*1\r\n$4\r\nEXEC\r\n";

/// Runs `commands` (each one encoded command) as one transaction on `slot`'s master;
/// returns EXEC's replies.
pub(crate) async fn run(
    shared: &Shared,
    slot: u16,
    commands: &[Bytes],
) -> Result<Vec<Frame>, Error> {
    let mut unit = BytesMut::with_capacity(
        MULTI.len() + EXEC.len() + commands.iter().map(Bytes::len).sum::<usize>(),
    );
    unit.extend_from_slice(MULTI);
    for cmd in commands {
        unit.extend_from_slice(cmd);
    }
    unit.extend_from_slice(EXEC);
    let unit = unit.freeze();
    let count = commands.len() + 2;
    let mut retry = Retry::new(shared);
    loop {
        let node = shared
            .table
            .load()
            .master(slot)
            .cloned()
            .ok_or_else(|| unserved(slot))?;
        let mut frames = match node.pick().send_many(unit.clone(), count).await {
            Ok(frames) => frames,
            Err(err) if err.is_connection_error() => {
                shared.request_refresh();
                // The transaction may have run unless the connection never opened.
                if (known_unsent(&err) || shared.cfg.retry_writes) && retry.pause().await {
                    continue;
                }
                return Err(err);
            }
            Err(err) => return Err(err),
        };
        let exec = frames.pop().unwrap_or(Frame::Null);
        let redirect = frames.iter().find_map(classify);
        match (exec, redirect) {
            (Frame::Array(replies), _) => return Ok(replies),
            (Frame::Null | Frame::NullArray, _) => return Err(Error::TransactionAborted),
            (
                _,
                Some(Redirect::Moved {
                    slot: s,
                    host,
                    port,
                }),
            ) if !host.is_empty() && retry.redirect() => {
                let target = shared.registry.get(&host, port)?;
                shared.patch(s, &target);
                shared.request_refresh();
            }
            (_, Some(_)) if retry.pause().await => {}
            (Frame::Error(e) | Frame::BulkError(e), redirect) => {
                // Report the command's own refusal (e.g. the MOVED) rather than EXECABORT.
                let cause = redirect
                    .and_then(|_| frames.iter().find(|f| classify(f).is_some()))
                    .and_then(|f| match f {
                        Frame::Error(e) | Frame::BulkError(e) => Some(e.clone()),
                        _ => None,
                    });
                return Err(Error::from_server_reply(&cause.unwrap_or(e)));
            }
            (other, _) => {
                return Err(Error::type_mismatch(
                    "EXEC reply",
                    crate::error::describe(&other),
                ))
            }
        }
    }
}
