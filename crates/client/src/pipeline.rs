//! Explicit pipelines: many commands, one queue entry, one write, replies in order.

use bytes::BytesMut;
use redline_resp::Frame;

use crate::client::Client;
use crate::cmd::{Cmd, Restriction};
use crate::error::Error;
use crate::reply::FromReply;

/// Commands collected to be sent together.
///
/// The commands go to the connection as one unit: they are written back to back, nothing
/// from other callers lands between them, and the replies come back together. Typed
/// methods (`set`, `get`, `incr`, ...) are the same as on [`Client`] but queue instead of
/// sending.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// use bytes::Bytes;
///
/// let (_, value, count): ((), Option<Bytes>, i64) = client
///     .pipeline()
///     .set("k", "v")
///     .get("k")
///     .incr("counter")
///     .query()
///     .await?;
/// assert_eq!(value.as_deref(), Some(&b"v"[..]));
/// # let _ = count;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Pipeline {
    client: Client,
    buf: BytesMut,
    count: usize,
    invalid: Option<Error>,
}

impl Pipeline {
    pub(crate) fn new(client: Client) -> Pipeline {
        Pipeline {
            client,
            buf: BytesMut::new(),
            count: 0,
            invalid: None,
        }
    }

    /// Queues any command. `MULTI`/`EXEC` are allowed here (the unit keeps them
    /// together); commands that need a dedicated connection make [`query`](Self::query)
    /// fail with [`Error::NotMultiplexable`].
    pub fn add(&mut self, cmd: Cmd) -> &mut Self {
        if let Restriction::Dedicated(name) = cmd.restriction() {
            self.invalid.get_or_insert(Error::NotMultiplexable {
                command: name.into(),
            });
        }
        let bytes = cmd.into_bytes();
        if self.buf.is_empty() {
            self.buf.reserve(bytes.len() * 4);
        }
        self.buf.extend_from_slice(&bytes);
        self.count += 1;
        self
    }

    /// Queues a command given as a list of arguments.
    pub fn cmd<I>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator,
        I::Item: crate::ToArg,
    {
        match Cmd::from_args(args) {
            Some(cmd) => self.add(cmd),
            None => {
                self.invalid.get_or_insert(Error::EmptyCommand);
                self
            }
        }
    }

    /// Number of queued commands.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Forgets the queued commands.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.count = 0;
        self.invalid = None;
    }

    /// Sends the queued commands and converts the replies, as one array, to `T`: a tuple
    /// with one element per command, or a `Vec`. The first error reply becomes `Err`. The
    /// pipeline is empty afterwards and can be reused.
    pub async fn query<T: FromReply>(&mut self) -> Result<T, Error> {
        let frames = self.query_frames().await?;
        T::from_reply(Frame::Array(frames))
    }

    /// Sends the queued commands and returns every reply as sent, error replies included
    /// as [`Frame::Error`], so one failing command does not hide the others' results.
    pub async fn query_frames(&mut self) -> Result<Vec<Frame>, Error> {
        let count = std::mem::take(&mut self.count);
        let bytes = self.buf.split().freeze();
        if let Some(err) = self.invalid.take() {
            return Err(err);
        }
        self.client.pool().pick().send_many(bytes, count).await
    }
}
