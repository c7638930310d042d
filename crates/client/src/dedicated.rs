//! Dedicated connections: one caller, one connection, for commands that must not share
//! the multiplexed pipe (blocking pops, and later WATCH/MULTI/EXEC).
//!
//! A [`DedicatedConnection`] is leased from a small per-client idle list and goes back to
//! it when dropped, but only in a known-good state: a lease whose command timed out, was
//! cancelled mid-flight, failed on the socket, or ran a state-changing command is closed
//! instead, so the next lease never inherits a half-read reply or a changed database.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redline_resp::Frame;

use crate::cmd::{cmd, Cmd, Restriction, ToArg};
use crate::error::{not_multiplexable, Error};
use crate::net::{self, Connection, Endpoint};
use crate::pipeline::{self, Pipeline};
use crate::reply::FromReply;

/// Idle dedicated connections kept per client; more are closed when returned.
const MAX_IDLE: usize = 4;

/// The idle list shared by a client's leases.
#[derive(Debug)]
pub(crate) struct DedicatedPool {
    endpoint: Arc<Endpoint>,
    idle: Mutex<Vec<Connection>>,
    command_timeout: Option<Duration>,
}

impl DedicatedPool {
    pub(crate) fn new(endpoint: Arc<Endpoint>, command_timeout: Option<Duration>) -> Arc<Self> {
        Arc::new(DedicatedPool {
            endpoint,
            idle: Mutex::new(Vec::new()),
            command_timeout,
        })
    }

    /// An idle connection, or a new one. Idle connections to a master that Sentinel
    /// has moved since are closed instead of being handed out.
    pub(crate) async fn lease(self: &Arc<Self>) -> Result<DedicatedConnection, Error> {
        let mut reused = None;
        while let Some(mut conn) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            if !moved(&mut conn).await {
                reused = Some(conn);
                break;
            }
        }
        let conn = match reused {
            Some(conn) => conn,
            None => net::connect(&self.endpoint).await?,
        };
        Ok(DedicatedConnection {
            conn: Some(conn),
            pool: self.clone(),
            reusable: true,
            in_transaction: false,
        })
    }

    fn give_back(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < MAX_IDLE {
                idle.push(conn);
            }
        }
    }
}

/// Whether the connection's master was moved by Sentinel (never, without Sentinel).
async fn moved(conn: &mut Connection) -> bool {
    match conn.retire.as_mut() {
        None => false,
        Some(retire) => {
            std::future::poll_fn(|cx| std::task::Poll::Ready(retire.as_mut().poll(cx).is_ready()))
                .await
        }
    }
}

/// A connection used by one caller at a time.
///
/// Get one with [`Client::dedicated`](crate::Client::dedicated). Commands run one after
/// another, each with the client's command timeout unless given its own.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// use redline::Cmd;
///
/// let mut conn = client.dedicated().await?;
/// conn.query::<()>(Cmd::new("SELECT").arg(2)).await?; // this connection only
/// let size: u64 = conn.query(Cmd::new("DBSIZE")).await?;
/// # let _ = size;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DedicatedConnection {
    /// `None` once the connection was found unusable.
    conn: Option<Connection>,
    pool: Arc<DedicatedPool>,
    /// False after a command that changes connection state for good.
    reusable: bool,
    /// WATCH or MULTI without the EXEC/DISCARD/UNWATCH that ends it: the next lease
    /// must not inherit a transaction in progress.
    in_transaction: bool,
}

impl DedicatedConnection {
    /// Sends any command and converts its reply, waiting at most the client's command
    /// timeout.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use redline::Cmd;
    ///
    /// let mut conn = client.dedicated().await?;
    /// let id: i64 = conn.query(Cmd::new("CLIENT").arg("ID")).await?;
    /// # let _ = id;
    /// # Ok(()) }
    /// ```
    pub async fn query<T: FromReply>(&mut self, cmd: Cmd) -> Result<T, Error> {
        let timeout = self.pool.command_timeout;
        self.query_within(cmd, timeout).await
    }

    /// Sends any command and converts its reply, waiting at most `timeout` (`None`: no
    /// limit). On timeout the connection is closed, since its state is unknown.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use std::time::Duration;
    /// use redline::Cmd;
    ///
    /// let mut conn = client.dedicated().await?;
    /// let popped: Option<(String, String)> = conn
    ///     .query_within(Cmd::new("BLPOP").arg("jobs").arg(0), None) // waits for ever
    ///     .await?;
    /// # let _ = (popped, Duration::ZERO);
    /// # Ok(()) }
    /// ```
    pub async fn query_within<T: FromReply>(
        &mut self,
        cmd: Cmd,
        timeout: Option<Duration>,
    ) -> Result<T, Error> {
        match cmd.restriction() {
            Restriction::Dedicated(
                name @ ("subscribe" | "psubscribe" | "ssubscribe" | "unsubscribe" | "punsubscribe"
                | "sunsubscribe" | "monitor" | "sync" | "psync"),
            ) => return Err(not_multiplexable(name)),
            // Connection state the next lease must not inherit.
            Restriction::Dedicated(
                "select" | "hello" | "auth" | "reset" | "quit" | "client reply",
            ) => self.reusable = false,
            Restriction::Dedicated("watch") | Restriction::PipelineOnly("multi") => {
                self.in_transaction = true
            }
            Restriction::Dedicated("unwatch") | Restriction::PipelineOnly("exec" | "discard") => {
                self.in_transaction = false
            }
            _ => {}
        }
        let frame = match timeout {
            Some(limit) => match tokio::time::timeout(limit, self.round_trip(cmd)).await {
                Ok(result) => result?,
                Err(_) => {
                    self.conn = None;
                    return Err(Error::Timeout(limit));
                }
            },
            None => self.round_trip(cmd).await?,
        };
        T::from_reply(frame)
    }

    /// `WATCH key...`: EXEC of a later [atomic](crate::Pipeline::atomic) pipeline run on
    /// this connection returns [`Error::TransactionAborted`] if any of the keys changed.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use redline::{Cmd, Error};
    ///
    /// let mut conn = client.dedicated().await?;
    /// loop {
    ///     conn.watch(["stock"]).await?;
    ///     let stock: i64 = conn.query(Cmd::new("GET").arg("stock")).await?;
    ///     let mut tx = client.pipeline();
    ///     tx.atomic().set("stock", stock - 1).incr("sold");
    ///     match conn.run::<((), i64)>(&mut tx).await {
    ///         Ok(_) => break,
    ///         Err(Error::TransactionAborted) => continue, // someone else changed it: retry
    ///         Err(e) => return Err(e),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn watch(&mut self, keys: impl IntoIterator<Item = impl ToArg>) -> Result<(), Error> {
        self.query(cmd!("WATCH").args(keys)).await
    }

    /// Runs a pipeline (or transaction) on this connection and converts the replies,
    /// as [`Pipeline::query`](crate::Pipeline::query) does.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let mut conn = client.dedicated().await?;
    /// conn.watch(["balance"]).await?;
    /// let mut tx = client.pipeline();
    /// tx.atomic().incr_by("balance", 10);
    /// let (balance,): (i64,) = conn.run(&mut tx).await?;
    /// # let _ = balance;
    /// # Ok(()) }
    /// ```
    pub async fn run<T: FromReply>(&mut self, pipeline: &mut Pipeline) -> Result<T, Error> {
        let frames = self.run_frames(pipeline).await?;
        T::from_reply(Frame::Array(frames))
    }

    /// Runs a pipeline (or transaction) on this connection and returns the replies as
    /// sent.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let mut conn = client.dedicated().await?;
    /// let mut p = client.pipeline();
    /// p.set("a", 1).cmd(["HLEN", "a"]); // the second one fails: WRONGTYPE
    /// let replies = conn.run_frames(&mut p).await?;
    /// assert!(matches!(replies[1], redline::Frame::Error(_)));
    /// # Ok(()) }
    /// ```
    pub async fn run_frames(&mut self, pipeline: &mut Pipeline) -> Result<Vec<Frame>, Error> {
        let encoded = pipeline.take_loaded().await?;
        if encoded.count == 0 {
            return Ok(Vec::new());
        }
        let timeout = self.pool.command_timeout;
        let exchange = self.exchange(&encoded.bytes, encoded.count);
        let frames = match timeout {
            Some(limit) => match tokio::time::timeout(limit, exchange).await {
                Ok(result) => result?,
                Err(_) => {
                    self.conn = None;
                    return Err(Error::Timeout(limit));
                }
            },
            None => exchange.await?,
        };
        if encoded.atomic {
            // EXEC (or its failure) ends any WATCH.
            self.in_transaction = false;
        }
        pipeline::finish(frames, encoded.atomic, &encoded.shapes)
    }

    /// Writes `bytes` and reads `count` replies.
    async fn exchange(&mut self, bytes: &[u8], count: usize) -> Result<Vec<Frame>, Error> {
        let mut conn = match self.conn.take() {
            Some(conn) => conn,
            None => net::connect(&self.pool.endpoint).await?,
        };
        let addr = &self.pool.endpoint.addr;
        conn.write_all(bytes, addr).await?;
        let mut frames = Vec::with_capacity(count);
        for _ in 0..count {
            frames.push(conn.read_reply(addr).await?);
        }
        self.conn = Some(conn);
        Ok(frames)
    }

    /// One command, one reply. The connection is taken out while the command is in
    /// flight, so a cancelled or failed round trip leaves nothing to reuse.
    async fn round_trip(&mut self, cmd: Cmd) -> Result<Frame, Error> {
        let mut conn = match self.conn.take() {
            Some(conn) => conn,
            None => net::connect(&self.pool.endpoint).await?,
        };
        let addr = &self.pool.endpoint.addr;
        conn.write_all(&cmd.into_bytes(), addr).await?;
        let frame = conn.read_reply(addr).await?;
        self.conn = Some(conn);
        Ok(frame)
    }
}

impl Drop for DedicatedConnection {
    fn drop(&mut self) {
        if self.reusable && !self.in_transaction {
            if let Some(conn) = self.conn.take() {
                self.pool.give_back(conn);
            }
        }
    }
}
