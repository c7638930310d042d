//! What travels through a multiplexer's queue, and what waits for replies.
//!
//! A [`Request`] is one queue entry: the caller's already-encoded command bytes (one
//! command, or a whole pipeline), where its reply goes, and its deadline. The connection
//! task turns it into a [`Pending`] slot at the back of its FIFO when it copies the bytes
//! out; replies complete slots from the front. A slot whose deadline passes is answered
//! with [`Error::Timeout`] at once and stays in the FIFO as a tombstone until its late
//! replies arrive and are discarded, so the pipe stays in step.

use std::ops::Deref;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use redline_resp::Frame;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::error::Error;

/// The reply of one command: the raw frame (error replies included, as frames).
pub(crate) type OneReply = oneshot::Sender<Result<Frame, Error>>;
/// The replies of a pipeline, in order.
pub(crate) type ManyReply = oneshot::Sender<Result<Vec<Frame>, Error>>;
/// The replies of a pipeline, in order, each as the server encoded it.
pub(crate) type RawReply = oneshot::Sender<Result<Vec<Bytes>, Error>>;

/// One queue entry.
pub(crate) struct Request {
    /// Encoded RESP: exactly as many commands as the slot expects replies.
    pub(crate) bytes: Encoded,
    pub(crate) slot: Slot,
    /// When the caller stops waiting, with the timeout that set it.
    pub(crate) deadline: Option<Deadline>,
}

/// A request's encoded commands, copied into the connection's write buffer and dropped.
///
/// A command sent once travels as the caller's own buffer, which the connection task
/// hands back for another caller's next command once it is copied (see
/// `crate::buffers`): freezing it into `Bytes` would allocate a shared header for it, and
/// freeing it on the connection task's thread, after another thread allocated it, cost
/// malloc's slow paths on both sides. Bytes that are sent again (retries, redirects,
/// pipelines) are shared.
pub(crate) enum Encoded {
    Owned(BytesMut),
    Shared(Bytes),
}

impl Deref for Encoded {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Encoded::Owned(b) => b,
            Encoded::Shared(b) => b,
        }
    }
}

impl From<Bytes> for Encoded {
    fn from(bytes: Bytes) -> Encoded {
        Encoded::Shared(bytes)
    }
}

impl From<BytesMut> for Encoded {
    fn from(bytes: BytesMut) -> Encoded {
        Encoded::Owned(bytes)
    }
}

/// A point in time after which a command's caller gets [`Error::Timeout`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    pub(crate) at: Instant,
    pub(crate) timeout: Duration,
}

impl Deadline {
    pub(crate) fn after(timeout: Duration) -> Deadline {
        Deadline {
            at: Instant::now() + timeout,
            timeout,
        }
    }
}

/// Where the replies of a request go.
pub(crate) enum Slot {
    /// One command, one reply.
    One(OneReply),
    /// `count` commands sent together; their replies are delivered together.
    Many { count: usize, tx: ManyReply },
    /// As `Many`, but each reply is handed over as its bytes, not decoded.
    Raw { count: usize, tx: RawReply },
}

/// The form the replies of a unit of several commands come back in: decoded frames
/// (pipelines), or each reply's bytes as the server sent them (relays).
pub(crate) trait UnitReply: Sized + Send + 'static {
    /// The queue slot that delivers replies in this form.
    fn slot(count: usize, tx: oneshot::Sender<Result<Vec<Self>, Error>>) -> Slot;
}

impl UnitReply for Frame {
    fn slot(count: usize, tx: ManyReply) -> Slot {
        Slot::Many { count, tx }
    }
}

impl UnitReply for Bytes {
    fn slot(count: usize, tx: RawReply) -> Slot {
        Slot::Raw { count, tx }
    }
}

impl Request {
    /// The caller stopped waiting (its future was dropped) before the command was sent:
    /// skipping it is safe, it never reached the server.
    pub(crate) fn is_abandoned(&self) -> bool {
        match &self.slot {
            Slot::One(tx) => tx.is_closed(),
            Slot::Many { tx, .. } => tx.is_closed(),
            Slot::Raw { tx, .. } => tx.is_closed(),
        }
    }

    /// True when the deadline has passed at `now`.
    pub(crate) fn expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| d.at <= now)
    }

    /// Fails the request without sending it.
    pub(crate) fn fail(self, err: Error) {
        self.into_pending().fail(err);
    }

    /// Fails the request with a timeout, without sending it.
    pub(crate) fn time_out(self) {
        let timeout = self.deadline.map(|d| d.timeout).unwrap_or_default();
        self.fail(Error::Timeout(timeout));
    }

    pub(crate) fn into_pending(self) -> Pending {
        self.into_parts().1
    }

    /// The request's bytes, and its slot waiting for replies.
    pub(crate) fn into_parts(self) -> (Encoded, Pending) {
        let reply = match self.slot {
            Slot::One(tx) => Reply::One(tx),
            Slot::Many { count, tx } => Reply::Many(Gathering::new(count, tx)),
            Slot::Raw { count, tx } => Reply::Raw(Gathering::new(count, tx)),
        };
        let pending = Pending {
            reply,
            deadline: self.deadline,
        };
        (self.bytes, pending)
    }
}

/// A request whose bytes were handed to the socket and whose replies are awaited.
pub(crate) struct Pending {
    pub(crate) reply: Reply,
    pub(crate) deadline: Option<Deadline>,
}

pub(crate) enum Reply {
    One(OneReply),
    // Boxed so the common single-command slot stays small in the FIFO.
    Many(Box<Gathering<Frame>>),
    Raw(Box<Gathering<Bytes>>),
    /// The caller was already told it timed out; `remaining` late replies are discarded.
    Expired {
        remaining: usize,
    },
}

/// Replies of a unit of several commands, collected until the last one arrives.
pub(crate) struct Gathering<T> {
    /// Replies still expected.
    remaining: usize,
    replies: Vec<T>,
    tx: oneshot::Sender<Result<Vec<T>, Error>>,
}

impl<T> Gathering<T> {
    fn new(count: usize, tx: oneshot::Sender<Result<Vec<T>, Error>>) -> Box<Gathering<T>> {
        Box::new(Gathering {
            remaining: count,
            replies: Vec::with_capacity(count),
            tx,
        })
    }

    /// Adds the next reply; true once every reply is in.
    pub(crate) fn push(&mut self, reply: T) -> bool {
        self.replies.push(reply);
        self.remaining -= 1;
        self.remaining == 0
    }

    /// Hands the replies to the caller (one that stopped waiting is simply not told).
    pub(crate) fn deliver(self) {
        let _ = self.tx.send(Ok(self.replies));
    }

    fn fail(self, err: Error) {
        let _ = self.tx.send(Err(err));
    }
}

impl Pending {
    /// True when the oldest awaited reply should be handed over as bytes.
    pub(crate) fn wants_raw(&self) -> bool {
        matches!(self.reply, Reply::Raw(_))
    }

    /// Answers the caller with a timeout and leaves a tombstone that still consumes the
    /// replies in order. Returns false if it already was one.
    pub(crate) fn expire(&mut self) -> bool {
        let remaining = match &self.reply {
            Reply::One(_) => 1,
            Reply::Many(many) => many.remaining,
            Reply::Raw(raw) => raw.remaining,
            Reply::Expired { .. } => return false,
        };
        let reply = std::mem::replace(&mut self.reply, Reply::Expired { remaining });
        let timeout = self.deadline.map(|d| d.timeout).unwrap_or_default();
        Pending {
            reply,
            deadline: None,
        }
        .fail(Error::Timeout(timeout));
        true
    }

    /// Fails the slot; a caller that stopped waiting is simply not told.
    pub(crate) fn fail(self, err: Error) {
        match self.reply {
            Reply::One(tx) => {
                let _ = tx.send(Err(err));
            }
            Reply::Many(many) => many.fail(err),
            Reply::Raw(raw) => raw.fail(err),
            Reply::Expired { .. } => {}
        }
    }
}
