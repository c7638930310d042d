//! Sending one command to the node that owns its slot, and following what the cluster
//! answers: `MOVED` (patch the slot map at once, retry on the new owner, schedule a
//! refresh), `ASK` (`ASKING` + the command as one unit to the importing node, map
//! untouched), `TRYAGAIN` / `CLUSTERDOWN` / `LOADING` and connection errors (pause with
//! jittered backoff and retry, all within the command timeout).
//!
//! A write that met a connection error is re-sent only when it is known not to have left
//! the client (the connection could not even be opened), or when the caller opted in
//! with [`ClusterConfig::retry_writes`](crate::ClusterConfig::retry_writes): otherwise
//! the server may have run it, and running it twice is worse than an error.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use redline_resp::Frame;
use tokio::time::Instant;

use crate::error::{Error, IoOp, ServerErrorKind};
use crate::mux::Encoded;

use super::client::Shared;
use super::metrics::bump;
use super::node::Node;
use super::redirect::{classify, Redirect};

/// `ASKING`, encoded once.
const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";

/// How a command to one slot may be served and retried.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotCommand {
    pub(crate) slot: u16,
    /// Read-only (may go to a replica; always safe to re-send).
    pub(crate) readonly: bool,
    /// Send to a replica if the slot has one.
    pub(crate) replica: bool,
}

/// A command's bytes as the first attempt holds them.
///
/// Shared `Bytes` are sent as themselves. A caller's own short buffer (a typed command,
/// not yet frozen) is kept by the caller for retries while a copy goes out: freezing it
/// would allocate a shared header and make two threads count references to it, about
/// 640 instructions a command, 11% of a cluster GET's; the copy costs a `memcpy` into
/// a handed-back buffer (see `crate::buffers`), and the kept buffer serves the caller's
/// next command. Only a redirect or a failure freezes it.
pub(crate) trait Resendable: Sized {
    /// What the first attempt sends.
    fn first(&self) -> Encoded;
    /// The bytes for every later attempt.
    fn freeze(self) -> Bytes;
    /// The command was answered: nothing will be re-sent.
    fn done(self) {}
}

impl Resendable for Bytes {
    fn first(&self) -> Encoded {
        Encoded::Shared(self.clone())
    }

    fn freeze(self) -> Bytes {
        self
    }
}

impl Resendable for BytesMut {
    fn first(&self) -> Encoded {
        Encoded::Owned(crate::buffers::copy_of(self))
    }

    fn freeze(self) -> Bytes {
        BytesMut::freeze(self)
    }

    fn done(self) {
        crate::buffers::keep(self);
    }
}

/// Sends `bytes` (one command) for `cmd.slot`, following redirects; returns the final
/// reply (error replies other than redirects included, as frames).
///
/// The first attempt is inline and small; everything after a redirect or a failure
/// lives in a boxed future, so the common case does not carry (and move around) the
/// state of the rare ones.
pub(crate) async fn send_to_slot<B: Resendable>(
    shared: &Shared,
    bytes: B,
    cmd: SlotCommand,
) -> Result<Frame, Error> {
    let replica = cmd.replica && cmd.readonly;
    let Some((node, on_replica)) = pick(shared, cmd.slot, replica) else {
        return Box::pin(follow(shared, bytes.freeze(), cmd, None)).await;
    };
    let result = if on_replica {
        bump(&shared.metrics.replica_reads);
        node.pick_readonly().send(bytes.first()).await
    } else {
        node.pick().send(bytes.first()).await
    };
    match &result {
        Ok(frame) if classify(frame).is_none() => {}
        Err(err) if !err.is_connection_error() => {}
        _ => return Box::pin(follow(shared, bytes.freeze(), cmd, Some((node, result)))).await,
    }
    bytes.done();
    result
}

/// [`send_to_slot`] for a command in its caller's own buffer: a short one goes out as a
/// copy and the buffer is kept (see [`Resendable`]); a long one is shared rather than
/// copied.
pub(crate) async fn send_buffer_to_slot(
    shared: &Shared,
    buf: BytesMut,
    cmd: SlotCommand,
) -> Result<Frame, Error> {
    if buf.len() <= crate::buffers::SIZE {
        send_to_slot(shared, buf, cmd).await
    } else {
        send_to_slot(shared, buf.freeze(), cmd).await
    }
}

/// The slot's node: a replica when asked for and available, else the master.
#[inline]
fn pick(shared: &Shared, slot: u16, replica: bool) -> Option<(Arc<Node>, bool)> {
    let table = shared.table.load();
    if replica {
        if let Some(node) = table.replica(slot) {
            return Some((node.clone(), true));
        }
    }
    table.master(slot).map(|n| (n.clone(), false))
}

/// The retry loop, starting from the first attempt's outcome (if one was made).
async fn follow(
    shared: &Shared,
    bytes: Bytes,
    cmd: SlotCommand,
    first: Option<(Arc<Node>, Result<Frame, Error>)>,
) -> Result<Frame, Error> {
    let mut retry = Retry::new(shared);
    let mut ask: Option<Arc<Node>> = None;
    let mut replica = cmd.replica && cmd.readonly;
    let mut first = first.map(|(node, result)| (Some(node), result));
    loop {
        let (node, result) = if let Some(outcome) = first.take() {
            outcome
        } else {
            match ask.take() {
                Some(node) => {
                    let result = send_asking(&node, &bytes).await;
                    (Some(node), result)
                }
                None => match pick(shared, cmd.slot, replica) {
                    Some((node, true)) => {
                        bump(&shared.metrics.replica_reads);
                        let result = node.pick_readonly().send(bytes.clone()).await;
                        (Some(node), result)
                    }
                    Some((node, false)) => {
                        let result = node.pick().send(bytes.clone()).await;
                        (Some(node), result)
                    }
                    None => (None, Err(unserved(cmd.slot))),
                },
            }
        };
        match result {
            Ok(frame) => {
                let Some(redirect) = classify(&frame) else {
                    return Ok(frame);
                };
                match redirect {
                    Redirect::Moved { slot, host, port } => {
                        bump(&shared.metrics.moved);
                        if !retry.redirect() {
                            return Ok(frame);
                        }
                        let host = resolve_host(host, node.as_deref());
                        let target = shared.registry.get(&host, port)?;
                        shared.patch(slot, &target);
                        shared.request_refresh();
                    }
                    Redirect::Ask { host, port } => {
                        bump(&shared.metrics.ask);
                        if !retry.redirect() {
                            return Ok(frame);
                        }
                        let host = resolve_host(host, node.as_deref());
                        ask = Some(shared.registry.get(&host, port)?);
                    }
                    Redirect::TryAgain | Redirect::ClusterDown | Redirect::Loading => {
                        let counter = match redirect {
                            Redirect::TryAgain => &shared.metrics.try_again,
                            Redirect::ClusterDown => &shared.metrics.cluster_down,
                            _ => &shared.metrics.loading,
                        };
                        bump(counter);
                        if redirect != Redirect::TryAgain {
                            shared.request_refresh();
                            // A replica that lost its master: ask the master instead.
                            replica = false;
                        }
                        if !retry.pause().await {
                            return Ok(frame);
                        }
                    }
                }
            }
            Err(err) if err.is_connection_error() || is_unserved(&err) => {
                shared.request_refresh();
                let resend =
                    cmd.readonly || shared.cfg.retry_writes || known_unsent(&err) || node.is_none();
                if !resend {
                    return Err(err);
                }
                replica = false;
                bump(&shared.metrics.connection_retries);
                if !retry.pause().await {
                    return Err(err);
                }
            }
            Err(err) => return Err(err),
        }
    }
}

/// `ASKING` and the command as one unit on one connection: nothing from other callers
/// can land between them, so the importing node accepts the command.
async fn send_asking(node: &Node, bytes: &Bytes) -> Result<Frame, Error> {
    let mut pair = BytesMut::with_capacity(ASKING.len() + bytes.len());
    pair.extend_from_slice(ASKING);
    pair.extend_from_slice(bytes);
    let mut frames = node.pick().send_many(pair.freeze(), 2).await?;
    frames.pop().ok_or(Error::Closed)
}

/// True when the command cannot have reached the server: the connection was never
/// established (refused, timed out, TLS failed) for this attempt.
pub(crate) fn known_unsent(err: &Error) -> bool {
    matches!(
        err,
        Error::Io {
            op: IoOp::Connect | IoOp::TlsHandshake,
            ..
        } | Error::ConnectTimeout { .. }
    )
}

/// The error for a slot no known master serves (what Redis itself answers).
pub(crate) fn unserved(slot: u16) -> Error {
    Error::Server {
        kind: ServerErrorKind::ClusterDown,
        message: Arc::from(format!("Hash slot {slot} not served")),
    }
}

fn is_unserved(err: &Error) -> bool {
    matches!(
        err,
        Error::Server {
            kind: ServerErrorKind::ClusterDown,
            ..
        }
    )
}

/// An empty host in a redirect means the node that sent it.
fn resolve_host(host: String, from: Option<&Node>) -> String {
    match (host.is_empty(), from) {
        (true, Some(node)) => node.host.clone(),
        _ => host,
    }
}

/// The retry budget of one command: redirects counted, pauses within the deadline.
pub(crate) struct Retry<'a> {
    shared: &'a Shared,
    start: Instant,
    redirects: u32,
    pauses: u32,
}

impl<'a> Retry<'a> {
    pub(crate) fn new(shared: &'a Shared) -> Retry<'a> {
        Retry {
            shared,
            start: Instant::now(),
            redirects: 0,
            pauses: 0,
        }
    }

    /// Counts a redirect; false when the limit is reached.
    pub(crate) fn redirect(&mut self) -> bool {
        self.redirects += 1;
        self.redirects <= self.shared.cfg.max_redirects
    }

    /// Sleeps before the next attempt; false (without sleeping) when that would pass the
    /// command's deadline.
    pub(crate) async fn pause(&mut self) -> bool {
        self.pauses += 1;
        let delay = self
            .shared
            .cfg
            .retry_backoff
            .delay(self.pauses)
            .max(Duration::from_millis(1));
        if self.start.elapsed() + delay >= self.shared.cfg.retry_budget() {
            return false;
        }
        tokio::time::sleep(delay).await;
        true
    }
}
