//! [`ClusterClient`]: one handle to a whole Redis Cluster.
//!
//! The path of one `GET` on a cluster: `ClusterClient::get` → `Cmd` (encoded once) →
//! [`route`](super::route::route) (command table: key positions → slot) →
//! [`send_to_slot`](super::exec::send_to_slot): one atomic load of the current
//! [`SlotTable`], the slot's master, its next multiplexer → the standalone client's
//! `Multiplexer::send`. Redirects and retries happen there too; nothing on this path
//! takes a lock.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use bytes::{Bytes, BytesMut};
use redline_resp::slot::{key_slot, SLOTS};
use redline_resp::Frame;
use tokio::sync::Notify;

use crate::cache::Cache;
use crate::cmd::{cmd, Cmd, Restriction, ToArg};
use crate::error::{Error, ServerErrorKind};
use crate::reply::FromReply;

use super::config::{ClusterConfig, ReadFrom};
use super::exec::{send_buffer_to_slot, send_to_slot, SlotCommand};
use super::fanout::{self, Nodes};
use super::learned::LearnedKeys;
use super::metrics::{bump, ClusterMetrics, Metrics};
use super::node::{Node, Registry};
use super::pipeline::ClusterPipeline;
use super::refresh;
use super::route::{common_slot, route, route_with, Fanout, Route, Target};
use super::split;
use super::table::SlotTable;

/// A client for a Redis Cluster: commands go to the node that owns their keys' slot,
/// multi-key commands are split by slot, and redirects, failovers and resharding are
/// followed without the caller noticing. Cheap to clone (an `Arc`).
///
/// Typed commands are the same as on [`Client`](crate::Client).
///
/// ```no_run
/// # async fn demo() -> redline::Result<()> {
/// use redline::ClusterClient;
///
/// let cluster = ClusterClient::connect(["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"]).await?;
/// cluster.set("user:{42}:name", "Ada").await?;
/// cluster.mset([("a", "1"), ("b", "2")]).await?; // different slots: split, sent in parallel
/// let values = cluster.mget(["a", "b", "user:{42}:name"]).await?;
/// assert_eq!(values.len(), 3);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ClusterClient {
    inner: Arc<Shared>,
}

/// State shared by every clone and by the refresh task.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The routing snapshot; replaced whole, read without a lock.
    pub(crate) table: ArcSwap<SlotTable>,
    pub(crate) registry: Registry,
    pub(crate) cfg: ClusterConfig,
    pub(crate) metrics: Metrics,
    /// Wakes the refresh task (a stored permit coalesces many requests into one refresh).
    pub(crate) refresh: Arc<Notify>,
    /// Key positions of commands missing from the table, by lower-case name.
    learned: Mutex<HashMap<Vec<u8>, LearnedKeys>>,
    /// The client-side cache shared by every node's connections, when configured.
    pub(crate) cache: Option<Arc<Cache>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Lets the refresh task see that the client is gone.
        self.refresh.notify_one();
    }
}

impl Shared {
    /// Asks the refresh task for a topology refresh (coalesced and rate-limited there).
    #[inline]
    pub(crate) fn request_refresh(&self) {
        self.refresh.notify_one();
    }

    /// `MOVED`: points `slot` at `node` at once.
    pub(crate) fn patch(&self, slot: u16, node: &Arc<Node>) {
        let old = self.table.rcu(|table| {
            if table.serves(slot, &node.addr) {
                Arc::clone(table)
            } else {
                Arc::new(table.with_moved(slot, node))
            }
        });
        if let Some(cache) = &self.cache {
            if !old.serves(slot, &node.addr) {
                // The new owner never saw this client's reads of the slot's keys.
                cache.remove_where(|key| key_slot(key) == slot);
            }
        }
    }

    /// Swaps in a new table; with a cache, drops the entries of every slot whose master
    /// changed (see [`Shared::patch`]).
    pub(crate) fn install_table(&self, table: SlotTable) {
        let old = self.table.swap(Arc::new(table));
        if let Some(cache) = &self.cache {
            let new = self.table.load();
            let moved: Vec<bool> = (0..SLOTS)
                .map(|s| old.master(s).map(|n| &n.addr) != new.master(s).map(|n| &n.addr))
                .collect();
            if moved.iter().any(|&m| m) {
                cache.remove_where(|key| moved.get(usize::from(key_slot(key))) == Some(&true));
            }
        }
    }
}

impl ClusterClient {
    /// Connects with seed URLs (`redis://` or `rediss://`); options, credentials and TLS
    /// settings come from the first. The first seed that answers gives the topology.
    pub async fn connect<I>(urls: I) -> Result<ClusterClient, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        ClusterClient::from_config(ClusterConfig::from_urls(urls)?).await
    }

    /// Connects with a full configuration: asks the seeds in order for the topology
    /// (`CLUSTER SHARDS`, or `CLUSTER SLOTS` on older servers) and starts the refresh task.
    pub async fn from_config(mut cfg: ClusterConfig) -> Result<ClusterClient, Error> {
        cfg.validate()?;
        // A wave's callers send their next commands to every node, not back to the
        // connection that woke them: waves only add writes here (Config::reply_waves).
        cfg.node.reply_waves.get_or_insert(false);
        let cache = cfg.node.attach_cache();
        cfg.node.attach_turns();
        let shared = Arc::new(Shared {
            table: ArcSwap::from_pointee(SlotTable::empty()),
            registry: Registry::new(cfg.node.clone()),
            cfg,
            metrics: Metrics::default(),
            refresh: Arc::new(Notify::new()),
            learned: Mutex::new(HashMap::new()),
            cache,
        });
        refresh::initial(&shared).await?;
        refresh::spawn(&shared);
        Ok(ClusterClient { inner: shared })
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.inner
    }

    /// Counters of redirects, retries and refreshes so far.
    pub fn metrics(&self) -> ClusterMetrics {
        self.inner.metrics.snapshot()
    }

    /// Refreshes the topology now and waits for it (normally automatic).
    pub async fn refresh(&self) -> Result<(), Error> {
        refresh::refresh_now(&self.inner).await
    }

    /// The addresses (`host:port`) of the masters currently serving slots.
    pub fn masters(&self) -> Vec<String> {
        self.inner
            .table
            .load()
            .masters()
            .iter()
            .map(|n| n.addr.to_string())
            .collect()
    }

    /// Sends any command, given as its arguments; routed by its keys.
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// let reply = cluster.cmd(["OBJECT", "ENCODING", "mykey"]).await?;
    /// # let _ = reply;
    /// # Ok(()) }
    /// ```
    pub fn cmd<I>(&self, args: I) -> impl Future<Output = Result<Frame, Error>> + Send + '_
    where
        I: IntoIterator,
        I::Item: ToArg,
    {
        let cmd = Cmd::from_args(args).ok_or(Error::EmptyCommand);
        async move {
            let frame = self.execute_cmd(cmd?, self.inner.cfg.read_from).await?;
            <Frame as FromReply>::from_reply(frame)
        }
    }

    /// Sends a command built with [`Cmd`] and converts the reply to `T`.
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// use redline::Cmd;
    ///
    /// let n: i64 = cluster.query(Cmd::new("INCRBY").arg("visits").arg(5)).await?;
    /// # let _ = n;
    /// # Ok(()) }
    /// ```
    pub fn query<'a, T: FromReply + 'a>(
        &'a self,
        cmd: Cmd,
    ) -> impl Future<Output = Result<T, Error>> + Send + 'a {
        self.query_with(cmd, T::from_reply)
    }

    /// Like [`query`](Self::query), choosing per command whether a read may be served by
    /// a replica.
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// use redline::{Cmd, ReadFrom};
    ///
    /// let v: Option<String> = cluster.query_from(Cmd::new("GET").arg("k"), ReadFrom::Replica).await?;
    /// # let _ = v;
    /// # Ok(()) }
    /// ```
    pub async fn query_from<T: FromReply>(
        &self,
        cmd: Cmd,
        read_from: ReadFrom,
    ) -> Result<T, Error> {
        T::from_reply(self.execute_cmd(cmd, read_from).await?)
    }

    /// The typed commands' entry point.
    pub(crate) async fn query_with<T>(
        &self,
        cmd: Cmd,
        convert: fn(Frame) -> Result<T, Error>,
    ) -> Result<T, Error> {
        convert(self.execute_cmd(cmd, self.inner.cfg.read_from).await?)
    }

    /// A command as built: blocking ones (`BLPOP`, `XREAD BLOCK`, `WAIT`...) on a
    /// dedicated connection to their slot's master, the rest through the router.
    async fn execute_cmd(&self, cmd: Cmd, read_from: ReadFrom) -> Result<Frame, Error> {
        if cmd.is_blocking() && matches!(cmd.restriction(), Restriction::Dedicated(_)) {
            let block = cmd.block_time();
            return Box::pin(self.blocking_frame(cmd, block)).await;
        }
        let invalidates = self.inner.cache.is_some() && !cmd.is_readonly();
        let (buf, route) = prepare_routed(cmd)?;
        if invalidates {
            return Box::pin(self.execute_invalidating(buf.freeze(), route, read_from)).await;
        }
        let Target::Slot(slot) = route.target else {
            return Box::pin(self.execute_routed(buf.freeze(), route, read_from)).await;
        };
        let cmd = SlotCommand {
            slot,
            readonly: route.readonly,
            replica: read_from == ReadFrom::Replica,
        };
        send_buffer_to_slot(&self.inner, buf, cmd).await
    }

    /// A command that may write, with a client-side cache: its keys' entries are dropped
    /// once it is answered, before the caller sees the reply (read your writes).
    async fn execute_invalidating(
        &self,
        bytes: Bytes,
        route: Route,
        read_from: ReadFrom,
    ) -> Result<Frame, Error> {
        let reply = self.execute_routed(bytes.clone(), route, read_from).await;
        if let Some(cache) = &self.inner.cache {
            cache.after_write(&bytes);
        }
        reply
    }

    /// Routes and sends one encoded command; the reply frame as the cluster gave it
    /// (after redirects), merged for split and fanned-out commands.
    pub(crate) async fn execute(&self, bytes: Bytes, read_from: ReadFrom) -> Result<Frame, Error> {
        let route = route(&bytes);
        self.execute_routed(bytes, route, read_from).await
    }

    pub(crate) async fn execute_routed(
        &self,
        bytes: Bytes,
        route: Route,
        read_from: ReadFrom,
    ) -> Result<Frame, Error> {
        let shared = &*self.inner;
        // Only the single-slot arm is inline: the others are boxed so the common
        // command's future stays small (it is moved on every await up the chain).
        match route.target {
            Target::Slot(slot) => {
                let cmd = SlotCommand {
                    slot,
                    readonly: route.readonly,
                    replica: read_from == ReadFrom::Replica,
                };
                send_to_slot(shared, bytes, cmd).await
            }
            Target::Keyless(Fanout::Any) => {
                Box::pin(fanout::any(shared, bytes, route.readonly)).await
            }
            Target::Keyless(Fanout::Masters(policy)) => {
                Box::pin(fanout::combined(shared, bytes, Nodes::Masters, policy)).await
            }
            Target::Keyless(Fanout::AllNodes(policy)) => {
                Box::pin(fanout::combined(shared, bytes, Nodes::All, policy)).await
            }
            Target::Split(kind) => {
                bump(&shared.metrics.splits);
                Box::pin(split::run(self, &bytes, kind, route.readonly, read_from)).await
            }
            Target::CrossSlot => Err(cross_slot()),
            Target::Unknown => Box::pin(self.execute_unknown(bytes, route.readonly)).await,
        }
    }

    /// A command missing from the table (a module's, or renamed): its key positions are
    /// learned once from a node's `COMMAND INFO` and cached; commands whose keys move
    /// with their arguments ask `COMMAND GETKEYS` on each call.
    async fn execute_unknown(&self, bytes: Bytes, readonly: bool) -> Result<Frame, Error> {
        let shared = &*self.inner;
        let Some(args) = crate::args::Args::new(&bytes) else {
            return Err(Error::EmptyCommand);
        };
        let args: Vec<&[u8]> = args.collect();
        let name = args
            .first()
            .map(|n| n.to_ascii_lowercase())
            .unwrap_or_default();
        let cached = shared
            .learned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&name)
            .copied();
        let learned = match cached {
            Some(learned) => learned,
            None => {
                let info = cmd!("COMMAND").arg("INFO").arg(&name[..]);
                let learned = LearnedKeys::from_command_info(
                    &fanout::any(shared, info.into_bytes(), true).await?,
                );
                bump(&shared.metrics.commands_learned);
                shared
                    .learned
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(name, learned);
                learned
            }
        };
        let slot = match learned {
            // Let a node answer with its own error.
            LearnedKeys::Unknown => Ok(None),
            LearnedKeys::Range { .. } => common_slot(
                learned
                    .key_indexes(args.len())
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|i| args.get(i).copied()),
            ),
            LearnedKeys::PerCall => {
                let getkeys = cmd!("COMMAND").arg("GETKEYS").args(args.iter());
                match fanout::any(shared, getkeys.into_bytes(), true).await? {
                    Frame::Array(keys) => common_slot(keys.iter().filter_map(|k| match k {
                        Frame::Bulk(k) => Some(&k[..]),
                        _ => None,
                    })),
                    _ => Ok(None),
                }
            }
        };
        let Ok(slot) = slot else {
            return Err(cross_slot());
        };
        match slot {
            Some(slot) => {
                let cmd = SlotCommand {
                    slot,
                    readonly,
                    replica: false,
                };
                send_to_slot(shared, bytes, cmd).await
            }
            None => fanout::any(shared, bytes, readonly).await,
        }
    }

    /// Starts a cluster pipeline: commands grouped per node, sent in parallel, replies in
    /// the order queued.
    pub fn pipeline(&self) -> ClusterPipeline {
        ClusterPipeline::new(self.clone())
    }

    /// Runs a command on every master and returns each node's reply, keyed by address.
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// use redline::Cmd;
    ///
    /// for (node, reply) in cluster.on_masters(Cmd::new("INFO").arg("memory")).await? {
    ///     println!("{node}: {reply:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn on_masters(&self, cmd: Cmd) -> Result<Vec<(String, Frame)>, Error> {
        fanout::each(&self.inner, prepare(cmd)?, Nodes::Masters).await
    }

    /// Runs a command on every node, replicas included (over connections that sent
    /// `READONLY`), and returns each node's reply.
    pub async fn on_all_nodes(&self, cmd: Cmd) -> Result<Vec<(String, Frame)>, Error> {
        fanout::each(&self.inner, prepare(cmd)?, Nodes::All).await
    }

    /// Runs a command on the node at `addr` (`host:port`, as [`masters`](Self::masters)
    /// lists them); the node need not be in the current topology.
    pub async fn on_node<T: FromReply>(&self, addr: &str, cmd: Cmd) -> Result<T, Error> {
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| {
                Some((
                    h.trim_start_matches('[').trim_end_matches(']'),
                    p.parse().ok()?,
                ))
            })
            .ok_or(Error::Config("node address must be host:port"))?;
        let node = self.inner.registry.get(host, port)?;
        T::from_reply(node.pick().send(prepare(cmd)?).await?)
    }

    /// Runs a command on one master picked at random.
    pub async fn on_random<T: FromReply>(&self, cmd: Cmd) -> Result<T, Error> {
        T::from_reply(fanout::any(&self.inner, prepare(cmd)?, false).await?)
    }

    /// `KEYS pattern` on every master, results concatenated. Blocks each master while it
    /// scans; prefer `SCAN` on large datasets.
    pub async fn keys_everywhere(&self, pattern: impl ToArg) -> Result<Vec<Bytes>, Error> {
        self.query(cmd!("KEYS").arg(pattern)).await
    }
}

/// Refuses commands that would take a shared connection over, as the standalone client.
pub(crate) fn prepare(cmd: Cmd) -> Result<Bytes, Error> {
    prepare_unfrozen(cmd).map(BytesMut::freeze)
}

/// [`prepare`] without freezing the bytes: a command sent once need not be (see
/// `Resendable`).
fn prepare_unfrozen(cmd: Cmd) -> Result<BytesMut, Error> {
    multiplexable(cmd.restriction())?;
    Ok(cmd.into_encoded())
}

/// Whether a command with this restriction may go on a shared connection.
pub(crate) fn multiplexable(restriction: Restriction) -> Result<(), Error> {
    match restriction {
        Restriction::None | Restriction::ClientSubcommand | Restriction::StreamRead => Ok(()),
        Restriction::Dedicated(name) | Restriction::PipelineOnly(name) => {
            Err(Error::NotMultiplexable {
                command: name.into(),
            })
        }
    }
}

/// A command's outcome with an error reply Redis itself would give (`CROSSSLOT` refused
/// before sending, say) turned back into that reply, as a pipeline returns it.
pub(crate) fn error_as_reply(result: Result<Frame, Error>) -> Result<Frame, Error> {
    match result {
        Err(Error::Server { kind, message }) => Ok(Frame::Error(Bytes::from(format!(
            "{} {}",
            kind.as_str(),
            message
        )))),
        other => other,
    }
}

/// [`prepare_unfrozen`], and the command's route, from the table entry [`Cmd::new`]
/// found (the name is not looked up again).
pub(crate) fn prepare_routed(cmd: Cmd) -> Result<(BytesMut, Route), Error> {
    let spec = cmd.spec();
    let buf = prepare_unfrozen(cmd)?;
    let route = route_with(spec, &buf);
    Ok((buf, route))
}

/// Redis's own error for keys in different slots.
pub(crate) fn cross_slot() -> Error {
    Error::Server {
        kind: ServerErrorKind::CrossSlot,
        message: Arc::from("Keys in request don't hash to the same slot"),
    }
}

#[cfg(test)]
mod size_probe {
    /// Prints the size of a typed command's future (not asserted).
    #[tokio::test]
    #[ignore]
    async fn future_sizes() {
        let cfg = super::ClusterConfig::from_urls(["redis://127.0.0.1:1"]).unwrap();
        let shared = std::sync::Arc::new(super::Shared {
            table: arc_swap::ArcSwap::from_pointee(super::SlotTable::empty()),
            registry: super::Registry::new(cfg.node.clone()),
            cfg,
            metrics: Default::default(),
            refresh: Default::default(),
            learned: Default::default(),
            cache: None,
        });
        let cluster = super::ClusterClient { inner: shared };
        let f = cluster.get("k");
        println!(
            "ClusterClient::get future: {} bytes",
            std::mem::size_of_val(&f)
        );
        let g = super::send_to_slot(
            cluster.shared(),
            bytes::Bytes::new(),
            super::SlotCommand {
                slot: 0,
                readonly: true,
                replica: false,
            },
        );
        println!("send_to_slot future: {} bytes", std::mem::size_of_val(&g));
        let node = cluster.shared().registry.get("127.0.0.1", 1).unwrap();
        let m = node.pick().send(bytes::Bytes::new());
        println!(
            "Multiplexer::send future: {} bytes",
            std::mem::size_of_val(&m)
        );
        let e = cluster.execute_cmd(crate::Cmd::new("GET"), super::ReadFrom::Master);
        println!("execute_cmd future: {} bytes", std::mem::size_of_val(&e));
    }
}
