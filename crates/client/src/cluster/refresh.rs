//! Keeping the slot table current.
//!
//! One background task per client does every refresh, so refreshes are single-flight
//! without a lock: `MOVED`, `CLUSTERDOWN` and connection errors only wake it
//! (`Notify` keeps one permit, so a storm of wake-ups is one refresh). After each refresh
//! it rests `refresh_min_interval` plus jitter (rate limit), and it also wakes every
//! `refresh_interval`. A refresh asks several known nodes at once (not only the seed),
//! chosen at random, and keeps the view in which the most slots have a healthy master:
//! right after a failover the promoted replica and the nodes that noticed already say
//! so, while a node that has not caught up still names the dead master.

use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use redline_resp::Frame;
use tokio::sync::Notify;

use crate::error::Error;

use super::client::Shared;
use super::join::join_all;
use super::layout::{self, Layout, Source};
use super::metrics::bump;
use super::node::Node;
use super::table::SlotTable;

const CLUSTER_SHARDS: &[u8] = b"*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n";
/// Longest wait for one node's view during a refresh.
const ASK_LIMIT: Duration = Duration::from_secs(1);
const CLUSTER_SLOTS: &[u8] = b"*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";

/// At start: the seeds in order until one gives a topology.
pub(crate) async fn initial(shared: &Shared) -> Result<(), Error> {
    let mut last_err = Error::Config("no seed answered");
    for (host, port) in &shared.cfg.seeds {
        let node = match shared.registry.get(host, *port) {
            Ok(node) => node,
            Err(err) => {
                last_err = err;
                continue;
            }
        };
        match ask(shared, &node).await {
            Ok(layout) if layout.score() > 0 => {
                install(shared, &layout)?;
                bump(&shared.metrics.refreshes);
                return Ok(());
            }
            Ok(_) => last_err = Error::Config("seed reports no slots (is cluster mode on?)"),
            Err(err) => last_err = err,
        }
    }
    Err(last_err)
}

/// Starts the refresh task; it ends when the client is dropped.
pub(crate) fn spawn(shared: &Arc<Shared>) {
    let weak = Arc::downgrade(shared);
    let notify = shared.refresh.clone();
    tokio::spawn(run(weak, notify));
}

async fn run(weak: Weak<Shared>, notify: Arc<Notify>) {
    loop {
        let Some((periodic, rest)) = weak
            .upgrade()
            .map(|s| (s.cfg.refresh_interval, s.cfg.refresh_min_interval))
        else {
            return;
        };
        match periodic {
            Some(every) => {
                let _ = tokio::time::timeout(every, notify.notified()).await;
            }
            None => notify.notified().await,
        }
        let Some(shared) = weak.upgrade() else {
            return;
        };
        let _ = refresh_now(&shared).await;
        drop(shared);
        let nanos = u64::try_from(rest.as_nanos()).unwrap_or(u64::MAX);
        tokio::time::sleep(rest + Duration::from_nanos(fastrand::u64(0..=nanos))).await;
    }
}

/// One refresh: ask up to `refresh_fanout` known nodes at random, then the others, then
/// the seeds, until some answer; install the best view.
pub(crate) async fn refresh_now(shared: &Shared) -> Result<(), Error> {
    let mut candidates = shared.table.load().nodes();
    fastrand::shuffle(&mut candidates);
    for (host, port) in &shared.cfg.seeds {
        if let Ok(seed) = shared.registry.get(host, *port) {
            if !candidates.iter().any(|n| n.addr == seed.addr) {
                candidates.push(seed);
            }
        }
    }
    let mut last_err = Error::Config("no node to ask for the topology");
    for round in candidates.chunks(shared.cfg.refresh_fanout) {
        // A node that hangs must not hold the refresh up: each answer gets a short limit.
        let limit = shared.cfg.node.connect_timeout.min(ASK_LIMIT);
        let answers = join_all(round.iter().map(|node| async move {
            match tokio::time::timeout(limit, ask(shared, node)).await {
                Ok(answer) => answer,
                Err(_) => Err(Error::Timeout(limit)),
            }
        }))
        .await;
        let mut views = Vec::new();
        let mut unreachable = Vec::new();
        for (node, answer) in round.iter().zip(answers) {
            match answer {
                Ok(layout) => views.push(layout),
                Err(err) => {
                    if err.is_connection_error() || err.is_timeout() {
                        unreachable.push(node.addr.to_string());
                    }
                    last_err = err;
                }
            }
        }
        let best = views
            .into_iter()
            .max_by_key(|layout| layout.score_without(&unreachable));
        if let Some(layout) = best.filter(|l| l.score() > 0) {
            install(shared, &layout)?;
            bump(&shared.metrics.refreshes);
            return Ok(());
        }
    }
    bump(&shared.metrics.refresh_failures);
    Err(last_err)
}

/// Builds and swaps in the table of `layout`; forgets nodes no longer listed.
fn install(shared: &Shared, layout: &Layout) -> Result<(), Error> {
    let table = SlotTable::build(layout, &shared.registry)?;
    let keep: Vec<Arc<str>> = table.nodes().iter().map(|n| n.addr.clone()).collect();
    shared.install_table(table);
    shared
        .registry
        .retain(|addr| keep.iter().any(|k| &**k == addr));
    Ok(())
}

/// One node's view: `CLUSTER SHARDS`, or `CLUSTER SLOTS` where that is unknown.
async fn ask(shared: &Shared, node: &Arc<Node>) -> Result<Layout, Error> {
    let src = Source {
        host: &node.host,
        tls: shared.cfg.node.tls.is_some(),
    };
    let reply = node.pick().send(Bytes::from_static(CLUSTER_SHARDS)).await?;
    if let Some(layout) = layout::from_shards(&reply, src) {
        return Ok(layout);
    }
    if let Frame::Error(e) | Frame::BulkError(e) = &reply {
        if !String::from_utf8_lossy(e)
            .to_ascii_lowercase()
            .contains("unknown")
        {
            return Err(Error::from_server_reply(e));
        }
    }
    let reply = node.pick().send(Bytes::from_static(CLUSTER_SLOTS)).await?;
    match layout::from_slots(&reply, src) {
        Some(layout) => Ok(layout),
        None => match reply {
            Frame::Error(e) | Frame::BulkError(e) => Err(Error::from_server_reply(&e)),
            _ => Err(Error::type_mismatch("CLUSTER SLOTS reply", "another shape")),
        },
    }
}
