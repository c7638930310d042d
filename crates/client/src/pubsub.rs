//! Pub/sub: a [`Subscriber`] owns one connection in subscribed mode and survives
//! reconnects.
//!
//! A task owns the connection. It writes (P|S)SUBSCRIBE/UNSUBSCRIBE requests from the
//! handle, matches the server's confirmations to them in order, and forwards messages
//! into a bounded channel the handle reads with [`Subscriber::next`]. When the connection
//! is lost it reconnects with backoff and subscribes again to everything the handle had
//! asked for. Messages published while disconnected are lost: that is pub/sub's contract.
//! A slow reader makes the task wait, which leaves messages in the socket; Redis then
//! applies its pub/sub output-buffer limit and closes the connection, which the task
//! survives by reconnecting.

use std::collections::{HashSet, VecDeque};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use redline_resp::Frame;
use tokio::sync::{mpsc, oneshot};

use crate::cmd::{Cmd, ToArg};
use crate::config::Backoff;
use crate::error::Error;
use crate::net::{self, Connection, Endpoint};

/// Messages buffered between the connection task and the reader.
const MESSAGE_BUFFER: usize = 1024;

/// One message received on a subscribed channel.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// let mut sub = client.subscriber().await?;
/// sub.psubscribe(["orders:*"]).await?;
/// if let Some(msg) = sub.next().await {
///     // For a pattern subscription, `pattern` says which one matched.
///     println!("{:?} via {:?}: {:?}", msg.channel, msg.pattern, msg.payload);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The channel it was published to.
    pub channel: Bytes,
    /// The pattern that matched, for PSUBSCRIBE subscriptions.
    pub pattern: Option<Bytes>,
    /// The payload.
    pub payload: Bytes,
    /// True for sharded pub/sub (SSUBSCRIBE / SPUBLISH).
    pub sharded: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Kind {
    fn subscribe(self) -> &'static str {
        match self {
            Kind::Channel => "SUBSCRIBE",
            Kind::Pattern => "PSUBSCRIBE",
            Kind::Shard => "SSUBSCRIBE",
        }
    }

    fn unsubscribe(self) -> &'static str {
        match self {
            Kind::Channel => "UNSUBSCRIBE",
            Kind::Pattern => "PUNSUBSCRIBE",
            Kind::Shard => "SUNSUBSCRIBE",
        }
    }
}

struct Request {
    kind: Kind,
    subscribe: bool,
    names: Vec<Bytes>,
    ack: oneshot::Sender<Result<(), Error>>,
}

/// A pub/sub connection of its own. Get one with
/// [`Client::subscriber`](crate::Client::subscriber).
///
/// It is a [`Stream`](futures_core::Stream) of [`Message`]s (use any stream combinator
/// library, or [`next`](Self::next)); the stream ends only when the subscriber's task
/// stops, never on a reconnect.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// let mut sub = client.subscriber().await?;
/// sub.subscribe(["news"]).await?;
/// sub.psubscribe(["alerts:*"]).await?;
/// while let Some(msg) = sub.next().await {
///     println!("{:?}: {:?}", msg.channel, msg.payload);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Subscriber {
    requests: mpsc::Sender<Request>,
    messages: mpsc::Receiver<Message>,
    timeout: Option<Duration>,
}

impl Subscriber {
    pub(crate) async fn connect(
        endpoint: Arc<Endpoint>,
        backoff: Backoff,
        timeout: Option<Duration>,
    ) -> Result<Subscriber, Error> {
        let conn = net::connect(&endpoint).await?;
        let (req_tx, req_rx) = mpsc::channel(16);
        let (msg_tx, msg_rx) = mpsc::channel(MESSAGE_BUFFER);
        let task = Task {
            endpoint,
            backoff,
            requests: req_rx,
            messages: msg_tx,
            subscribed: Default::default(),
            acks: VecDeque::new(),
        };
        tokio::spawn(task.run(conn));
        Ok(Subscriber {
            requests: req_tx,
            messages: msg_rx,
            timeout,
        })
    }

    /// The next message; `None` once the subscriber's task has stopped.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let mut sub = client.subscriber().await?;
    /// sub.subscribe(["news"]).await?;
    /// while let Some(msg) = sub.next().await {
    ///     println!("{:?}", msg.payload);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn next(&mut self) -> Option<Message> {
        self.messages.recv().await
    }

    /// Polls for the next message (what [`Stream::poll_next`](futures_core::Stream) does).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use std::future::poll_fn;
    ///
    /// let mut sub = client.subscriber().await?;
    /// sub.subscribe(["news"]).await?;
    /// let msg = poll_fn(|cx| sub.poll_next_message(cx)).await;
    /// # let _ = msg;
    /// # Ok(()) }
    /// ```
    pub fn poll_next_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        self.messages.poll_recv(cx)
    }

    /// `SUBSCRIBE channel...`; returns when the server confirmed every channel.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sub = client.subscriber().await?;
    /// sub.subscribe(["news", "sport"]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn subscribe(
        &self,
        channels: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<(), Error> {
        self.request(Kind::Channel, true, channels).await
    }

    /// `PSUBSCRIBE pattern...`.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sub = client.subscriber().await?;
    /// sub.psubscribe(["news:*"]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn psubscribe(
        &self,
        patterns: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<(), Error> {
        self.request(Kind::Pattern, true, patterns).await
    }

    /// `SSUBSCRIBE shardchannel...` (Redis 7).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sub = client.subscriber().await?;
    /// sub.ssubscribe(["orders:{eu}"]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn ssubscribe(
        &self,
        channels: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<(), Error> {
        self.request(Kind::Shard, true, channels).await
    }

    /// `UNSUBSCRIBE channel...`.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sub = client.subscriber().await?;
    /// sub.unsubscribe(["sport"]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn unsubscribe(
        &self,
        channels: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<(), Error> {
        self.request(Kind::Channel, false, channels).await
    }

    /// `PUNSUBSCRIBE pattern...`.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sub = client.subscriber().await?;
    /// sub.punsubscribe(["news:*"]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn punsubscribe(
        &self,
        patterns: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<(), Error> {
        self.request(Kind::Pattern, false, patterns).await
    }

    /// `SUNSUBSCRIBE shardchannel...`.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sub = client.subscriber().await?;
    /// sub.sunsubscribe(["orders:{eu}"]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn sunsubscribe(
        &self,
        channels: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<(), Error> {
        self.request(Kind::Shard, false, channels).await
    }

    async fn request(
        &self,
        kind: Kind,
        subscribe: bool,
        names: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<(), Error> {
        let names: Vec<Bytes> = names.into_iter().map(|n| arg_bytes(&n)).collect();
        if names.is_empty() {
            return Ok(());
        }
        let (ack, done) = oneshot::channel();
        let request = Request {
            kind,
            subscribe,
            names,
            ack,
        };
        let exchange = async {
            self.requests
                .send(request)
                .await
                .map_err(|_| Error::Closed)?;
            done.await.map_err(|_| Error::Closed)?
        };
        match self.timeout {
            Some(limit) => tokio::time::timeout(limit, exchange)
                .await
                .unwrap_or(Err(Error::Timeout(limit))),
            None => exchange.await,
        }
    }
}

/// The raw bytes of one argument (its bulk payload).
/// Messages as they arrive, across reconnects.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// use std::future::poll_fn;
/// use std::pin::Pin;
/// use futures_core::Stream;
///
/// let mut sub = client.subscriber().await?;
/// sub.subscribe(["news"]).await?;
/// // Any stream combinator library works; without one:
/// let first = poll_fn(|cx| Pin::new(&mut sub).poll_next(cx)).await;
/// # let _ = first;
/// # Ok(()) }
/// ```
impl futures_core::Stream for Subscriber {
    type Item = Message;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Message>> {
        self.get_mut().messages.poll_recv(cx)
    }
}

fn arg_bytes(arg: &impl ToArg) -> Bytes {
    let mut buf = bytes::BytesMut::new();
    arg.write_arg(&mut buf);
    // `$<len>\r\n<payload>\r\n`
    let start = buf.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
    let end = buf.len().saturating_sub(2).max(start);
    buf.freeze().slice(start..end)
}

/// A confirmation still expected: how many, and who to tell (nobody for the
/// resubscriptions the task sends by itself after a reconnect).
struct Ack {
    remaining: usize,
    tx: Option<oneshot::Sender<Result<(), Error>>>,
}

struct Task {
    endpoint: Arc<Endpoint>,
    backoff: Backoff,
    requests: mpsc::Receiver<Request>,
    messages: mpsc::Sender<Message>,
    subscribed: [HashSet<Bytes>; 3],
    acks: VecDeque<Ack>,
}

/// Why the connected phase ended.
enum End {
    /// The handle is gone.
    Dropped,
    Lost(Error),
}

impl Task {
    async fn run(mut self, mut conn: Connection) {
        loop {
            match self.connected(&mut conn).await {
                End::Dropped => return,
                End::Lost(err) => {
                    tracing::debug!(addr = %self.endpoint.addr, error = %err, "pub/sub connection lost");
                    for ack in self.acks.drain(..) {
                        if let Some(tx) = ack.tx {
                            let _ = tx.send(Err(err.clone()));
                        }
                    }
                }
            }
            match self.reconnect().await {
                Some(new) => conn = new,
                None => return,
            }
        }
    }

    /// Reconnects with backoff and subscribes again; `None` if the handle went away.
    async fn reconnect(&mut self) -> Option<Connection> {
        let mut failures = 0u32;
        loop {
            if self.messages.is_closed() {
                return None;
            }
            tokio::time::sleep(self.backoff.delay(failures)).await;
            let mut conn = match net::connect(&self.endpoint).await {
                Ok(conn) => conn,
                Err(err) => {
                    failures = failures.saturating_add(1);
                    tracing::debug!(addr = %self.endpoint.addr, error = %err, "pub/sub reconnect failed");
                    continue;
                }
            };
            let mut ok = true;
            for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
                let names: Vec<Bytes> = self.subscribed[kind as usize].iter().cloned().collect();
                if names.is_empty() {
                    continue;
                }
                let count = names.len();
                let cmd = Cmd::new(kind.subscribe()).args(names);
                if conn
                    .write_all(&cmd.to_bytes(), &self.endpoint.addr)
                    .await
                    .is_err()
                {
                    ok = false;
                    break;
                }
                self.acks.push_back(Ack {
                    remaining: count,
                    tx: None,
                });
            }
            if ok {
                return Some(conn);
            }
            self.acks.clear();
            failures = failures.saturating_add(1);
        }
    }

    async fn connected(&mut self, conn: &mut Connection) -> End {
        let addr = self.endpoint.addr.clone();
        loop {
            tokio::select! {
                request = self.requests.recv() => {
                    let Some(request) = request else { return End::Dropped };
                    if let Err(err) = self.send(conn, request).await {
                        return End::Lost(err);
                    }
                }
                frame = conn.read_frame(&addr) => {
                    match frame {
                        Ok(frame) => {
                            if !self.handle(frame).await {
                                return End::Dropped;
                            }
                        }
                        Err(err) => return End::Lost(err),
                    }
                }
            }
        }
    }

    async fn send(&mut self, conn: &mut Connection, request: Request) -> Result<(), Error> {
        let Request {
            kind,
            subscribe,
            names,
            ack,
        } = request;
        let set = &mut self.subscribed[kind as usize];
        for name in &names {
            // Recorded before the confirmation: a reconnect in between must resubscribe.
            if subscribe {
                set.insert(name.clone());
            } else {
                set.remove(name);
            }
        }
        let word = if subscribe {
            kind.subscribe()
        } else {
            kind.unsubscribe()
        };
        self.acks.push_back(Ack {
            remaining: names.len(),
            tx: Some(ack),
        });
        let cmd = Cmd::new(word).args(names);
        conn.write_all(&cmd.to_bytes(), &self.endpoint.addr).await
    }

    /// Routes one frame. Returns false when the reader is gone.
    async fn handle(&mut self, frame: Frame) -> bool {
        let items = match frame {
            Frame::Push(items) | Frame::Array(items) => items,
            Frame::Error(e) | Frame::BulkError(e) => {
                // A refused (UN)SUBSCRIBE (e.g. NOPERM) answers with one error.
                if let Some(ack) = self.acks.pop_front() {
                    if let Some(tx) = ack.tx {
                        let _ = tx.send(Err(Error::from_server_reply(&e)));
                    }
                }
                return true;
            }
            _ => return true,
        };
        let mut items = items.into_iter();
        let Some(Frame::Bulk(kind) | Frame::Simple(kind)) = items.next() else {
            return true;
        };
        let text = |f: Option<Frame>| match f {
            Some(Frame::Bulk(b) | Frame::Simple(b)) => Some(b),
            _ => None,
        };
        let message = match &kind.to_ascii_lowercase()[..] {
            b"message" | b"smessage" => {
                let sharded = kind.len() == 8;
                match (text(items.next()), text(items.next())) {
                    (Some(channel), Some(payload)) => Message {
                        channel,
                        pattern: None,
                        payload,
                        sharded,
                    },
                    _ => return true,
                }
            }
            b"pmessage" => match (text(items.next()), text(items.next()), text(items.next())) {
                (Some(pattern), Some(channel), Some(payload)) => Message {
                    channel,
                    pattern: Some(pattern),
                    payload,
                    sharded: false,
                },
                _ => return true,
            },
            b"subscribe" | b"psubscribe" | b"ssubscribe" | b"unsubscribe" | b"punsubscribe"
            | b"sunsubscribe" => {
                self.confirm();
                return true;
            }
            _ => return true,
        };
        self.messages.send(message).await.is_ok()
    }

    fn confirm(&mut self) {
        if let Some(front) = self.acks.front_mut() {
            front.remaining = front.remaining.saturating_sub(1);
            if front.remaining == 0 {
                if let Some(Ack { tx: Some(tx), .. }) = self.acks.pop_front() {
                    let _ = tx.send(Ok(()));
                }
            }
        }
    }
}
