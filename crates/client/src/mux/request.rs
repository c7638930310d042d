//! What travels through a multiplexer's queue, and what waits for replies.
//!
//! A [`Request`] is one queue entry: the caller's already-encoded command bytes (one
//! command, or a whole pipeline) and where its reply goes. The connection task turns it
//! into a [`Pending`] slot at the back of its FIFO when it copies the bytes out; replies
//! complete slots from the front.

use bytes::Bytes;
use redline_resp::Frame;
use tokio::sync::oneshot;

use crate::error::Error;

/// The reply of one command: the raw frame (error replies included, as frames).
pub(crate) type OneReply = oneshot::Sender<Result<Frame, Error>>;
/// The replies of a pipeline, in order.
pub(crate) type ManyReply = oneshot::Sender<Result<Vec<Frame>, Error>>;

/// One queue entry.
pub(crate) struct Request {
    /// Encoded RESP: exactly as many commands as the slot expects replies.
    pub(crate) bytes: Bytes,
    pub(crate) slot: Slot,
}

/// Where the replies of a request go.
pub(crate) enum Slot {
    /// One command, one reply.
    One(OneReply),
    /// `count` commands sent together; their replies are delivered together.
    Many { count: usize, tx: ManyReply },
}

impl Request {
    /// The caller stopped waiting (timed out or was cancelled) before the command was
    /// sent: skipping it is safe, it never reached the server.
    pub(crate) fn is_abandoned(&self) -> bool {
        match &self.slot {
            Slot::One(tx) => tx.is_closed(),
            Slot::Many { tx, .. } => tx.is_closed(),
        }
    }

    /// Fails the request without sending it.
    pub(crate) fn fail(self, err: Error) {
        self.slot.into_pending().fail(err);
    }
}

impl Slot {
    pub(crate) fn into_pending(self) -> Pending {
        match self {
            Slot::One(tx) => Pending::One(tx),
            Slot::Many { count, tx } => Pending::Many(Box::new(ManyPending {
                remaining: count,
                frames: Vec::with_capacity(count),
                tx,
            })),
        }
    }
}

/// A request whose bytes were handed to the socket and whose replies are awaited.
pub(crate) enum Pending {
    One(OneReply),
    // Boxed so the common single-command slot stays one pointer wide in the FIFO.
    Many(Box<ManyPending>),
}

pub(crate) struct ManyPending {
    /// Replies still expected.
    pub(crate) remaining: usize,
    pub(crate) frames: Vec<Frame>,
    pub(crate) tx: ManyReply,
}

impl Pending {
    /// Fails the slot; a caller that stopped waiting is simply not told.
    pub(crate) fn fail(self, err: Error) {
        match self {
            Pending::One(tx) => {
                let _ = tx.send(Err(err));
            }
            Pending::Many(many) => {
                let _ = many.tx.send(Err(err));
            }
        }
    }
}
