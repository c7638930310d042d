//! [`Client`]: the handle applications hold. Cheap to clone; every clone shares the same
//! connections.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use redline_resp::Frame;

use crate::cache::Cache;
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
    retries: u32,
    /// Through Sentinel: the task following `+switch-master`, stopped with the client.
    _sentinel_watch: Option<crate::sentinel::watch::WatcherGuard>,
    /// The client-side cache, when configured (`Config::cache`).
    cache: Option<Arc<Cache>>,
}

impl Client {
    /// Connects with a `redis://`, `rediss://` or `redis+sentinel://` URL (see
    /// [`Config::from_url`]; through Sentinel, see [`crate::sentinel`]).
    ///
    /// ```no_run
    /// # async fn demo() -> redline::Result<()> {
    /// let client = redline::Client::connect("redis://:secret@127.0.0.1:6379/0?timeout=2s").await?;
    /// # let _ = client;
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Client, Error> {
        Client::from_config(Config::from_url(url)?).await
    }

    /// Connects with a full configuration. The pool's connections are opened (and
    /// authenticated) before this returns; later losses reconnect on demand.
    ///
    /// ```no_run
    /// # async fn demo() -> redline::Result<()> {
    /// use std::time::Duration;
    /// use redline::{Client, Config, FullQueue};
    ///
    /// let mut cfg = Config::from_url("redis://127.0.0.1:6379")?;
    /// cfg.pool_size = 2;
    /// cfg.on_full = FullQueue::Error;
    /// cfg.command_timeout = Some(Duration::from_millis(500));
    /// cfg.retries = 1; // re-send read-only commands once after a lost connection
    /// let client = Client::from_config(cfg).await?;
    /// # let _ = client;
    /// # Ok(()) }
    /// ```
    pub async fn from_config(mut cfg: Config) -> Result<Client, Error> {
        let endpoint = Arc::new(Endpoint::new(&cfg)?);
        let cache = cfg.attach_cache();
        cfg.attach_turns();
        let pool = Pool::connect(endpoint.clone(), &cfg).await?;
        let sentinel_watch = endpoint
            .discovery
            .clone()
            .map(crate::sentinel::watch::spawn);
        Ok(Client {
            inner: Arc::new(Inner {
                _sentinel_watch: sentinel_watch,
                pool,
                dedicated: DedicatedPool::new(endpoint.clone(), cfg.command_timeout),
                endpoint,
                backoff: cfg.backoff,
                command_timeout: cfg.command_timeout,
                retries: cfg.retries,
                cache,
            }),
        })
    }

    pub(crate) fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    pub(crate) fn client_cache(&self) -> Option<&Arc<Cache>> {
        self.inner.cache.as_ref()
    }

    /// Sends any command, given as its arguments, and returns the reply as sent. An error
    /// reply is `Err(Error::Server { .. })`.
    ///
    /// Blocking commands (BLPOP, XREAD BLOCK, WAIT... as Redis's command table flags them)
    /// run on a [dedicated connection](Self::dedicated) with their own timeout plus the
    /// command timeout, so they never hold up other callers. Commands that would change
    /// the shared connection for everyone (SUBSCRIBE, SELECT, WATCH, CLIENT REPLY, MULTI
    /// outside a pipeline...) are refused with [`Error::NotMultiplexable`].
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
        self.send_routed(cmd.and_then(route), <Frame as FromReply>::from_reply)
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
        self.send_routed(route(cmd), T::from_reply)
    }

    /// Like [`query`](Self::query) with a custom conversion (used by typed commands whose
    /// reply shape differs between RESP2 and RESP3).
    pub(crate) fn query_with<'a, T: 'a>(
        &'a self,
        cmd: Cmd,
        convert: fn(Frame) -> Result<T, Error>,
    ) -> impl Future<Output = Result<T, Error>> + Send + 'a {
        self.send_routed(route(cmd), convert)
    }

    /// The hot path: one encoded command to the next multiplexer and back.
    async fn send_routed<T>(
        &self,
        route: Result<Route, Error>,
        convert: fn(Frame) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let frame = match route? {
            // With a client-side cache, what may write drops its keys' entries (boxed:
            // a disabled cache costs this branch only).
            Route::Shared {
                bytes,
                readonly: false,
            } if self.inner.cache.is_some() => {
                Box::pin(self.send_invalidating(bytes.freeze())).await?
            }
            Route::Shared { bytes, readonly } if !readonly || self.inner.retries == 0 => {
                self.pool().pick().send(bytes).await?
            }
            Route::Shared { bytes, .. } => Box::pin(self.send_retrying(bytes.freeze())).await?,
            // Boxed, as the retry path: rare paths must not grow every command's future
            // (see `Multiplexer::enqueue`).
            Route::Blocking { cmd, block } => Box::pin(self.send_blocking(*cmd, block)).await?,
        };
        convert(frame)
    }

    /// A command that may write, with a client-side cache: once it is answered (or
    /// failed: it may have run), its keys' entries are dropped before the caller sees
    /// the reply, so the caller's next cached read cannot return what it overwrote.
    async fn send_invalidating(&self, bytes: Bytes) -> Result<Frame, Error> {
        let reply = self.pool().pick().send(bytes.clone()).await;
        if let Some(cache) = &self.inner.cache {
            cache.after_write(&bytes);
        }
        reply
    }

    /// A read-only command, sent again after connection errors, at most `retries` times.
    /// Re-sending cannot change data; it may read a newer value than the first attempt
    /// would have.
    async fn send_retrying(&self, bytes: Bytes) -> Result<Frame, Error> {
        let mut left = self.inner.retries;
        loop {
            match self.pool().pick().send(bytes.clone()).await {
                Err(e) if left > 0 && e.is_connection_error() && !matches!(e, Error::Closed) => {
                    left -= 1;
                    tracing::debug!(error = %e, left, "retrying a read-only command");
                }
                other => return other,
            }
        }
    }

    /// A blocking command on a leased connection, bounded by its own timeout plus the
    /// command timeout (unbounded when it blocks forever).
    async fn send_blocking(&self, cmd: Cmd, block: Option<Duration>) -> Result<Frame, Error> {
        let mut conn = self.dedicated().await?;
        let limit = self.blocking_limit(block.unwrap_or(Duration::ZERO));
        conn.query_within(cmd, limit).await
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
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let mut sub = client.subscriber().await?;
    /// sub.subscribe(["orders"]).await?;
    /// if let Some(msg) = sub.next().await {
    ///     println!("{:?}", msg.payload);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn subscriber(&self) -> Result<Subscriber, Error> {
        Subscriber::connect(
            self.inner.endpoint.clone(),
            self.inner.backoff,
            self.inner.command_timeout,
        )
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

    /// Starts an explicit pipeline on this client: commands queued on it go out in one
    /// write when queried (see [`Pipeline`]).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let (n, ttl): (i64, i64) = client.pipeline().incr("hits").ttl("hits").query().await?;
    /// # let _ = (n, ttl);
    /// # Ok(()) }
    /// ```
    pub fn pipeline(&self) -> Pipeline {
        Pipeline::new(self.clone())
    }
}

/// Where a command goes.
enum Route {
    /// The multiplexed connection, already encoded (frozen only if it may be re-sent).
    Shared { bytes: BytesMut, readonly: bool },
    /// A dedicated connection, for a command that blocks (for `block`, `None`: forever).
    /// Boxed: every command's future holds a `Route`, so it stays small.
    Blocking {
        cmd: Box<Cmd>,
        block: Option<Duration>,
    },
}

/// Picks the connection for a command, refusing those that would take a shared
/// connection over.
fn route(cmd: Cmd) -> Result<Route, Error> {
    match cmd.restriction() {
        Restriction::None | Restriction::ClientSubcommand | Restriction::StreamRead => {
            Ok(Route::Shared {
                readonly: cmd.is_readonly(),
                bytes: cmd.into_encoded(),
            })
        }
        Restriction::Dedicated(_) if cmd.is_blocking() => Ok(Route::Blocking {
            block: cmd.block_time(),
            cmd: Box::new(cmd),
        }),
        Restriction::Dedicated(name) | Restriction::PipelineOnly(name) => {
            Err(crate::error::not_multiplexable(name))
        }
    }
}
