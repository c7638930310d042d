//! Failure detection: a node that does not answer for `cluster-node-timeout` is PFAIL
//! here; masters tell each other in gossip; once a majority of the masters that serve
//! slots report it, it is FAIL and every node is told (Redis's failure reports).

use super::super::node::{Flags, Node, NodeId};
use super::super::state::ClusterState;

/// A report counts for twice the node timeout (Redis's `CLUSTER_FAIL_REPORT_VALIDITY_MULT`).
const REPORT_VALIDITY_MULT: u64 = 2;
/// A failed master that comes back is cleared after this many node timeouts
/// (`CLUSTER_FAIL_UNDO_TIME_MULT`), if no replica replaced it meanwhile.
const FAIL_UNDO_TIME_MULT: u64 = 2;

/// The failure reports about `node` still valid at `now`.
pub fn valid_reports(node: &Node, now: u64, node_timeout: u64) -> usize {
    let max_age = node_timeout * REPORT_VALIDITY_MULT;
    node.fail_reports
        .iter()
        .filter(|(_, at)| now.saturating_sub(*at) <= max_age)
        .count()
}

/// `reporter` (a master) says `failing` is failing or timed out.
pub fn add_report(state: &mut ClusterState, failing: &NodeId, reporter: NodeId, now: u64) {
    if let Some(node) = state.nodes.get_mut(failing) {
        match node.fail_reports.iter_mut().find(|(r, _)| *r == reporter) {
            Some(report) => report.1 = now,
            None => node.fail_reports.push((reporter, now)),
        }
    }
}

/// `reporter` says `node` is fine again.
pub fn del_report(state: &mut ClusterState, node: &NodeId, reporter: &NodeId) {
    if let Some(node) = state.nodes.get_mut(node) {
        node.fail_reports.retain(|(r, _)| r != reporter);
    }
}

/// Marks `id` FAIL once enough masters agree (this node counts if it is a master).
/// True when it was marked and this node, a master, should tell everyone.
pub fn mark_failing_if_needed(
    state: &mut ClusterState,
    id: &NodeId,
    now: u64,
    node_timeout: u64,
) -> bool {
    let quorum = state.size / 2 + 1;
    let me_master = state.me().is_master();
    let Some(node) = state.nodes.get_mut(id) else {
        return false;
    };
    if !node.timed_out() || node.failed() {
        return false;
    }
    let max_age = node_timeout * REPORT_VALIDITY_MULT;
    node.fail_reports
        .retain(|(_, at)| now.saturating_sub(*at) <= max_age);
    let failures = node.fail_reports.len() + usize::from(me_master);
    if failures < quorum {
        return false;
    }
    tracing::info!("Marking node {id} as failing (quorum reached).");
    node.flags.clear(Flags::PFAIL);
    node.flags.set(Flags::FAIL);
    node.fail_time = now;
    me_master
}

/// A FAIL node was heard from again: clear it if it is a replica or a master without
/// slots, or a master whose slots nobody took over for a while.
pub fn clear_failure_if_needed(state: &mut ClusterState, id: &NodeId, now: u64, node_timeout: u64) {
    let serves = state.slot_count(id) != 0;
    let Some(node) = state.nodes.get_mut(id) else {
        return;
    };
    if !node.failed() {
        return;
    }
    if node.is_replica() || !serves {
        tracing::info!("Clear FAIL state for node {id}: it is reachable again.");
        node.flags.clear(Flags::FAIL);
    } else if now.saturating_sub(node.fail_time) > node_timeout * FAIL_UNDO_TIME_MULT {
        tracing::info!(
            "Clear FAIL state for node {id}: is reachable again and nobody is serving its slots after some time."
        );
        node.flags.clear(Flags::FAIL);
    }
}
