//! Counters of what the cluster client did behind the caller's back: redirects followed,
//! retries, topology refreshes. Relaxed atomics: they are statistics, not synchronisation.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of a [`ClusterClient`](crate::ClusterClient)'s counters since it was created.
///
/// ```no_run
/// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
/// let m = cluster.metrics();
/// println!("MOVED followed: {}, ASK followed: {}", m.moved, m.ask);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClusterMetrics {
    /// `MOVED` replies followed (the slot map was patched and the command re-sent).
    pub moved: u64,
    /// `ASK` replies followed (`ASKING` + the command sent to the importing node).
    pub ask: u64,
    /// `TRYAGAIN` replies retried after a pause.
    pub try_again: u64,
    /// `CLUSTERDOWN` replies retried after a pause.
    pub cluster_down: u64,
    /// `LOADING` / `MASTERDOWN` replies retried after a pause.
    pub loading: u64,
    /// Commands re-sent after a connection error (reads, or writes known not sent).
    pub connection_retries: u64,
    /// Topology refreshes that succeeded.
    pub refreshes: u64,
    /// Topology refreshes where no node answered usefully.
    pub refresh_failures: u64,
    /// Multi-key commands split by slot.
    pub splits: u64,
    /// Commands sent to a replica (read-from-replica).
    pub replica_reads: u64,
    /// Commands missing from the command table whose key positions were asked of a node
    /// (`COMMAND INFO`, once per command name).
    pub commands_learned: u64,
}

/// The live counters.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    pub(crate) moved: AtomicU64,
    pub(crate) ask: AtomicU64,
    pub(crate) try_again: AtomicU64,
    pub(crate) cluster_down: AtomicU64,
    pub(crate) loading: AtomicU64,
    pub(crate) connection_retries: AtomicU64,
    pub(crate) refreshes: AtomicU64,
    pub(crate) refresh_failures: AtomicU64,
    pub(crate) splits: AtomicU64,
    pub(crate) replica_reads: AtomicU64,
    pub(crate) commands_learned: AtomicU64,
}

/// Adds one to a counter.
#[inline]
pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Metrics {
    pub(crate) fn snapshot(&self) -> ClusterMetrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ClusterMetrics {
            moved: get(&self.moved),
            ask: get(&self.ask),
            try_again: get(&self.try_again),
            cluster_down: get(&self.cluster_down),
            loading: get(&self.loading),
            connection_retries: get(&self.connection_retries),
            refreshes: get(&self.refreshes),
            refresh_failures: get(&self.refresh_failures),
            splits: get(&self.splits),
            replica_reads: get(&self.replica_reads),
            commands_learned: get(&self.commands_learned),
        }
    }
}
