//! Explicit pipelines: many commands, one queue entry, one write, replies in order.

use bytes::BytesMut;
use redline_resp::Frame;

use crate::client::Client;
use crate::cmd::{Cmd, Restriction, Shape};
use crate::commands::{load_missing, Script};
use crate::error::Error;
use crate::reply::FromReply;

/// Commands collected to be sent together.
///
/// The commands go to the connection as one unit: they are written back to back, nothing
/// from other callers lands between them, and the replies come back together. Typed
/// methods (`set`, `get`, `incr`, ...) are the same as on [`Client`] but queue instead of
/// sending (the blocking ones, `blpop`, `wait`..., are not offered: they would stall the
/// shared connection).
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
    atomic: bool,
    /// Replies to reshape before conversion, by command index (typed methods whose reply
    /// differs between RESP2 and RESP3); empty for most pipelines.
    shapes: Vec<(usize, Shape)>,
    /// The distinct scripts queued with [`run_script`](Self::run_script): loaded on the
    /// server before the pipeline is sent.
    scripts: Vec<Script>,
}

/// A pipeline taken apart for sending: bytes, reply count, and whether it is wrapped in
/// MULTI/EXEC.
pub(crate) struct Encoded {
    pub(crate) bytes: bytes::Bytes,
    pub(crate) count: usize,
    pub(crate) atomic: bool,
    pub(crate) shapes: Vec<(usize, Shape)>,
}

impl Pipeline {
    pub(crate) fn new(client: Client) -> Pipeline {
        Pipeline {
            client,
            buf: BytesMut::new(),
            count: 0,
            invalid: None,
            atomic: false,
            shapes: Vec::new(),
            scripts: Vec::new(),
        }
    }

    /// Makes the pipeline a transaction: it is sent as `MULTI`, the commands, `EXEC`, and
    /// the replies are those of the commands as EXEC returns them. Redis runs them with
    /// nothing from other connections in between. If EXEC returns nil (a key watched on
    /// a [`DedicatedConnection`](crate::DedicatedConnection) changed), the result is
    /// [`Error::TransactionAborted`]; if a command was refused while queuing, EXEC's
    /// `EXECABORT` error.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let (balance, _): (i64, i64) = client
    ///     .pipeline()
    ///     .atomic()
    ///     .decr_by("account:a", 10)
    ///     .incr_by("account:b", 10)
    ///     .query()
    ///     .await?;
    /// # let _ = balance;
    /// # Ok(()) }
    /// ```
    pub fn atomic(&mut self) -> &mut Self {
        self.atomic = true;
        self
    }

    /// Queues any command. `MULTI`/`EXEC` are allowed here (the unit keeps them
    /// together); commands that need a dedicated connection make [`query`](Self::query)
    /// fail with [`Error::NotMultiplexable`].
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use redline::Cmd;
    ///
    /// let mut p = client.pipeline();
    /// p.add(Cmd::new("HSET").arg("user:1").arg("name").arg("ann"));
    /// p.add(Cmd::new("HGET").arg("user:1").arg("name"));
    /// let (_, name): (u64, String) = p.query().await?;
    /// # let _ = name;
    /// # Ok(()) }
    /// ```
    pub fn add(&mut self, cmd: Cmd) -> &mut Self {
        if let Restriction::Dedicated(name) = cmd.restriction() {
            self.invalid
                .get_or_insert(crate::error::not_multiplexable(name));
        }
        if let Some(shape) = cmd.shape() {
            self.shapes.push((self.count, shape));
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
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let (n,): (i64,) = client.pipeline().cmd(["INCRBY", "hits", "5"]).query().await?;
    /// # let _ = n;
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let mut p = client.pipeline();
    /// p.get("a").get("b");
    /// assert_eq!(p.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when nothing is queued.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// assert!(client.pipeline().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Forgets the queued commands.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let mut p = client.pipeline();
    /// p.del(["a"]);
    /// p.clear();
    /// assert!(p.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn clear(&mut self) {
        self.buf.clear();
        self.count = 0;
        self.invalid = None;
        self.atomic = false;
        self.shapes.clear();
        self.scripts.clear();
    }

    /// Queues `EVALSHA` for a [`Script`]. Before the pipeline is sent, the server is asked
    /// (`SCRIPT EXISTS`, one round trip) which of its scripts it knows, and the others are
    /// loaded (`SCRIPT LOAD`), so every command still runs in the queued order: a
    /// `NOSCRIPT` cannot be retried afterwards without running the script after commands
    /// queued behind it. (A `SCRIPT FLUSH` from elsewhere in between still gives that
    /// command a `NOSCRIPT` reply.)
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use redline::Script;
    ///
    /// let incr_by = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    /// let (a, b, total): (i64, i64, String) = client
    ///     .pipeline()
    ///     .run_script(&incr_by, ["hits"], [5])
    ///     .run_script(&incr_by, ["hits"], [1])
    ///     .get("hits")
    ///     .query()
    ///     .await?;
    /// # let _ = (a, b, total);
    /// # Ok(()) }
    /// ```
    pub fn run_script(
        &mut self,
        script: &Script,
        keys: impl IntoIterator<Item = impl crate::ToArg>,
        args: impl IntoIterator<Item = impl crate::ToArg>,
    ) -> &mut Self {
        if !self.scripts.iter().any(|s| s.sha() == script.sha()) {
            self.scripts.push(script.clone());
        }
        self.add(script.evalsha_cmd(keys, args))
    }

    /// Takes the queued commands out for sending (the pipeline is empty afterwards).
    /// Takes the queued commands out for sending, after loading the scripts they run on
    /// the server if it does not know them.
    pub(crate) async fn take_loaded(&mut self) -> Result<Encoded, Error> {
        let scripts = std::mem::take(&mut self.scripts);
        let encoded = self.take()?;
        if !scripts.is_empty() {
            load_missing(&self.client, &scripts).await?;
        }
        Ok(encoded)
    }

    fn take(&mut self) -> Result<Encoded, Error> {
        let count = std::mem::take(&mut self.count);
        let atomic = std::mem::take(&mut self.atomic);
        let shapes = std::mem::take(&mut self.shapes);
        let body = self.buf.split();
        if let Some(err) = self.invalid.take() {
            return Err(err);
        }
        if !atomic || count == 0 {
            return Ok(Encoded {
                bytes: body.freeze(),
                count,
                atomic: false,
                shapes,
            });
        }
        let mut bytes = BytesMut::with_capacity(body.len() + 32);
        bytes.extend_from_slice(b"*1\r\n$5\r\nMULTI\r\n");
        bytes.extend_from_slice(&body);
        bytes.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
        Ok(Encoded {
            bytes: bytes.freeze(),
            count: count + 2,
            atomic: true,
            shapes,
        })
    }

    /// Sends the queued commands and converts the replies, as one array, to `T`: a tuple
    /// with one element per command, or a `Vec`. The first error reply becomes `Err`. The
    /// pipeline is empty afterwards and can be reused.
    ///
    /// Each typed method's reply converts to the same type as on [`Client`], in RESP2 and
    /// RESP3 alike (`zrange_withscores` to `Vec<(Bytes, f64)>`, `xread` to
    /// `Vec<(Bytes, Vec<StreamEntry>)>`, `geosearch_with` to `Vec<GeoMatch>`...).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use bytes::Bytes;
    ///
    /// let (added, top): (u64, Vec<(Bytes, f64)>) = client
    ///     .pipeline()
    ///     .zadd_multiple("board", [(3.5, "ann"), (1.0, "bob")])
    ///     .zrange_withscores("board", 0, -1)
    ///     .query()
    ///     .await?;
    /// # let _ = (added, top);
    /// # Ok(()) }
    /// ```
    pub async fn query<T: FromReply>(&mut self) -> Result<T, Error> {
        let frames = self.query_frames().await?;
        T::from_reply(Frame::Array(frames))
    }

    /// Sends the queued commands and returns every reply as sent, error replies included
    /// as [`Frame::Error`], so one failing command does not hide the others' results.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let replies = client.pipeline().incr("n").cmd(["NOPE"]).query_frames().await?;
    /// assert!(matches!(replies[1], redline::Frame::Error(_))); // the INCR still counted
    /// # Ok(()) }
    /// ```
    pub async fn query_frames(&mut self) -> Result<Vec<Frame>, Error> {
        let encoded = self.take_loaded().await?;
        // With a client-side cache, the commands that may write drop their keys' entries
        // once answered (read your writes), as on the client itself.
        let written = self
            .client
            .client_cache()
            .map(|cache| (cache.clone(), encoded.bytes.clone()));
        let frames = self
            .client
            .pool()
            .pick()
            .send_many(encoded.bytes, encoded.count)
            .await;
        if let Some((cache, bytes)) = written {
            cache.after_writes(&bytes);
        }
        finish(frames?, encoded.atomic, &encoded.shapes)
    }
}

/// For a transaction, replaces `[OK, QUEUED..., EXEC reply]` with EXEC's replies; then
/// reshapes the replies of typed commands that need it.
pub(crate) fn finish(
    frames: Vec<Frame>,
    atomic: bool,
    shapes: &[(usize, Shape)],
) -> Result<Vec<Frame>, Error> {
    let mut replies = unwrap_exec(frames, atomic)?;
    for &(i, shape) in shapes {
        if let Some(reply) = replies.get_mut(i) {
            *reply = shape(std::mem::replace(reply, Frame::Null));
        }
    }
    Ok(replies)
}

fn unwrap_exec(mut frames: Vec<Frame>, atomic: bool) -> Result<Vec<Frame>, Error> {
    if !atomic {
        return Ok(frames);
    }
    match frames.pop() {
        Some(Frame::Array(replies)) => Ok(replies),
        Some(Frame::Null | Frame::NullArray) => Err(Error::TransactionAborted),
        Some(Frame::Error(e) | Frame::BulkError(e)) => Err(Error::from_server_reply(&e)),
        Some(other) => Err(Error::type_mismatch(
            "EXEC reply",
            crate::error::describe(&other),
        )),
        None => Ok(frames),
    }
}
