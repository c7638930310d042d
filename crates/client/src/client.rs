//! [`Client`]: the handle applications hold. Cheap to clone; every clone shares the same
//! connections.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use redline_resp::Frame;

use crate::cmd::{Cmd, Restriction, ToArg};
use crate::config::{Backoff, Config};
use crate::dedicated::{DedicatedConnection, DedicatedPool};
use crate::error::Error;
use crate::net::Endpoint;
use crate::pipeline::Pipeline;
use crate::pool::Pool;
use crate::pubsub::Subscriber;
use crate::reply::FromReply;

/// A client for one Redis server.
///
/// Commands from any number of tasks share the pool's multiplexed connections and are
/// pipelined automatically. Cloning is cheap (an `Arc`).
///
/// ```no_run
/// # async fn demo() -> redline::Result<()> {
/// use redline::Client;
///
/// let client = Client::connect("redis://127.0.0.1:6379").await?;
/// client.set("greeting", "hello").await?;
/// let value: Option<String> = client.query(redline::Cmd::new("GET").arg("greeting")).await?;
/// assert_eq!(value.as_deref(), Some("hello"));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: Pool,
    dedicated: Arc<DedicatedPool>,
    endpoint: Arc<Endpoint>,
    backoff: Backoff,
    command_timeout: Option<Duration>,
}

impl Client {
    /// Connects with a `redis://` or `rediss://` URL (see [`Config::from_url`]).
    pub async fn connect(url: &str) -> Result<Client, Error> {
        Client::from_config(Config::from_url(url)?).await
    }

    /// Connects with a full configuration. The pool's connections are opened (and
    /// authenticated) before this returns; later losses reconnect on demand.
    pub async fn from_config(cfg: Config) -> Result<Client, Error> {
        let endpoint = Arc::new(Endpoint::new(&cfg)?);
        let pool = Pool::connect(endpoint.clone(), &cfg).await?;
        Ok(Client {
            inner: Arc::new(Inner {
                pool,
                dedicated: DedicatedPool::new(endpoint.clone(), cfg.command_timeout),
                endpoint,
                backoff: cfg.backoff,
                command_timeout: cfg.command_timeout,
            }),
        })
    }

    pub(crate) fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// Sends any command, given as its arguments, and returns the reply as sent. An error
    /// reply is `Err(Error::Server { .. })`.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let reply = client.cmd(["OBJECT", "ENCODING", "mykey"]).await?;
    /// println!("{reply:?}");
    /// # Ok(()) }
    /// ```
    pub fn cmd<I>(&self, args: I) -> impl Future<Output = Result<Frame, Error>> + Send + '_
    where
        I: IntoIterator,
        I::Item: ToArg,
    {
        let cmd = Cmd::from_args(args).ok_or(Error::EmptyCommand);
        let prepared = cmd.and_then(prepare);
        self.send_prepared(prepared, <Frame as FromReply>::from_reply)
    }

    /// Sends a command built with [`Cmd`] and converts the reply to `T`.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use redline::Cmd;
    ///
    /// let n: i64 = client.query(Cmd::new("INCRBY").arg("visits").arg(5)).await?;
    /// # let _ = n;
    /// # Ok(()) }
    /// ```
    pub fn query<'a, T: FromReply + 'a>(
        &'a self,
        cmd: Cmd,
    ) -> impl Future<Output = Result<T, Error>> + Send + 'a {
        self.send_prepared(prepare(cmd), T::from_reply)
    }

    /// Like [`query`](Self::query) with a custom conversion (used by typed commands whose
    /// reply shape differs between RESP2 and RESP3).
    pub(crate) fn query_with<'a, T: 'a>(
        &'a self,
        cmd: Cmd,
        convert: fn(Frame) -> Result<T, Error>,
    ) -> impl Future<Output = Result<T, Error>> + Send + 'a {
        self.send_prepared(prepare(cmd), convert)
    }

    /// The hot path: one encoded command to the next multiplexer and back.
    async fn send_prepared<T>(
        &self,
        prepared: Result<Bytes, Error>,
        convert: fn(Frame) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let frame = self.pool().pick().send(prepared?).await?;
        convert(frame)
    }

    /// Leases a connection of its own, for commands that must not share the multiplexed
    /// one. It returns to a small idle list when dropped, if its state is known to be
    /// clean (no command cancelled or timed out mid-flight, no SELECT, no open WATCH or
    /// MULTI).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use redline::Cmd;
    ///
    /// let mut conn = client.dedicated().await?;
    /// let info: String = conn.query(Cmd::new("CLIENT").arg("INFO")).await?;
    /// # let _ = info;
    /// # Ok(()) }
    /// ```
    pub async fn dedicated(&self) -> Result<DedicatedConnection, Error> {
        self.inner.dedicated.lease().await
    }

    /// Opens a pub/sub connection. It resubscribes by itself after a reconnect; see
    /// [`Subscriber`].
    pub async fn subscriber(&self) -> Result<Subscriber, Error> {
        Subscriber::connect(
            self.inner.endpoint.clone(),
            self.inner.backoff,
            self.inner.command_timeout,
        )
        .await
    }

    /// `PUBLISH channel message`: how many subscribers received it.
    pub async fn publish(&self, channel: impl ToArg, message: impl ToArg) -> Result<u64, Error> {
        self.query(Cmd::new("PUBLISH").arg(channel).arg(message))
            .await
    }

    /// `SPUBLISH shardchannel message` (Redis 7): how many subscribers received it.
    pub async fn spublish(&self, channel: impl ToArg, message: impl ToArg) -> Result<u64, Error> {
        self.query(Cmd::new("SPUBLISH").arg(channel).arg(message))
            .await
    }

    /// How long a blocking command may wait in total: its own timeout (0 = forever) plus
    /// the command timeout as a margin for the round trip.
    pub(crate) fn blocking_limit(&self, block: Duration) -> Option<Duration> {
        if block.is_zero() {
            return None;
        }
        Some(block + self.inner.command_timeout.unwrap_or(Duration::from_secs(5)))
    }

    /// Starts an explicit pipeline on this client.
    pub fn pipeline(&self) -> Pipeline {
        Pipeline::new(self.clone())
    }
}

/// Finishes a command for a shared connection, refusing those that would take it over.
fn prepare(cmd: Cmd) -> Result<Bytes, Error> {
    match cmd.restriction() {
        Restriction::None | Restriction::ClientSubcommand | Restriction::StreamRead => {
            Ok(cmd.into_bytes())
        }
        Restriction::Dedicated(name) | Restriction::PipelineOnly(name) => {
            Err(Error::NotMultiplexable {
                command: name.into(),
            })
        }
    }
}
