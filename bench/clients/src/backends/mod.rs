//! Every client the harness can measure, by name.
//!
//! To add one: a file with a type implementing [`Backend`], a `mod` line, and one line in
//! [`BACKENDS`]. Standalone and cluster variants share a name; `--cluster` picks between
//! them, so results compare by name across both modes.

use std::future::Future;
use std::pin::Pin;

use crate::harness::{self, Backend, BoxError, Report, RunConfig};

mod fred;
mod fred_cluster;
mod redis_rs;
mod redis_rs_cluster;
mod redline;
mod redline_cluster;

/// Runs the harness with one backend type.
pub type Runner = fn(RunConfig) -> Pin<Box<dyn Future<Output = Result<Report, BoxError>> + Send>>;

/// One registered backend.
pub struct Entry {
    /// Name given to `--client`.
    pub name: &'static str,
    /// Whether it talks to a cluster (`--cluster`).
    pub cluster: bool,
    /// What `--client name` runs.
    pub run: Runner,
    /// One line for `--list`.
    pub about: &'static str,
}

fn runner<B: Backend>(
    cfg: RunConfig,
) -> Pin<Box<dyn Future<Output = Result<Report, BoxError>> + Send>> {
    Box::pin(async move { harness::run::<B>(&cfg).await })
}

/// The registry: `(name, cluster?, type, description)`.
pub const BACKENDS: &[Entry] = &[
    entry(
        "redline",
        false,
        runner::<self::redline::Redline>,
        "redline::Client (one multiplexed connection)",
    ),
    entry(
        "redline-cached",
        false,
        runner::<self::redline::RedlineCached>,
        "redline::Client with the client-side cache (64 MiB, 60 s): GET is cached_get",
    ),
    entry(
        "redis-rs",
        false,
        runner::<redis_rs::Multiplexed>,
        "redis-rs MultiplexedConnection",
    ),
    entry(
        "redis-rs-manager",
        false,
        runner::<redis_rs::Manager>,
        "redis-rs ConnectionManager (reconnecting MultiplexedConnection)",
    ),
    entry(
        "fred",
        false,
        runner::<self::fred::Fred>,
        "fred Client (one connection)",
    ),
    entry(
        "redline",
        true,
        runner::<redline_cluster::RedlineCluster>,
        "redline::ClusterClient",
    ),
    entry(
        "redis-rs",
        true,
        runner::<redis_rs_cluster::Cluster>,
        "redis-rs cluster_async::ClusterConnection",
    ),
    entry(
        "fred",
        true,
        runner::<fred_cluster::FredCluster>,
        "fred Client, clustered config",
    ),
];

const fn entry(name: &'static str, cluster: bool, run: Runner, about: &'static str) -> Entry {
    Entry {
        name,
        cluster,
        run,
        about,
    }
}

/// The backend called `name` for the given mode.
pub fn find(name: &str, cluster: bool) -> Option<&'static Entry> {
    BACKENDS
        .iter()
        .find(|e| e.name == name && e.cluster == cluster)
}
