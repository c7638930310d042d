//! Replica migration: a replica of a master with the most working replicas moves to a
//! master that serves slots and lost all of its own (Redis's orphaned-master check in
//! `clusterCron` and `clusterHandleSlaveMigration`), so that one more failure does not
//! leave slots without a copy.

use std::collections::HashMap;

use super::super::node::{Flags, NodeId};
use super::super::state::ClusterState;
use super::super::Settings;

/// How long a master must stay orphaned before a replica moves to it, so that during a
/// failover its own replicas have time to announce their new master.
pub const MIGRATION_DELAY_MS: u64 = 5000;

/// The orphaned master this node, a replica, should now replicate, if any. Keeps each
/// master's `orphaned_since` up to date.
pub fn target(state: &mut ClusterState, settings: &Settings, now: u64) -> Option<NodeId> {
    let me = state.me();
    let my_master = me.master.filter(|_| me.is_replica())?;
    // Working (not FAIL) replicas per master, in one pass over the nodes.
    let mut working: HashMap<NodeId, usize> = HashMap::new();
    for node in state.nodes.values() {
        if let Some(master) = node.master.filter(|_| node.is_replica() && !node.failed()) {
            *working.entry(master).or_default() += 1;
        }
    }
    let working_of = |id: &NodeId| working.get(id).copied().unwrap_or(0);
    // Orphaned masters, the most working replicas any master has, and my master's.
    let (mut orphaned, mut max_replicas) = (0, 0);
    for node in state
        .nodes
        .values()
        .filter(|n| n.is_master() && !n.failed())
    {
        let count = working_of(&node.id);
        if count == 0 && state.slot_count(&node.id) > 0 && node.flags.any(Flags::MIGRATE_TO) {
            orphaned += 1;
        }
        max_replicas = max_replicas.max(count);
    }
    let mine = working_of(&my_master);
    // Only a replica of one of the best-served masters moves, and only if one has two.
    if orphaned == 0 || max_replicas < 2 || mine != max_replicas || !settings.replica_migration {
        return None;
    }
    if !state.ok || mine as u64 <= settings.migration_barrier {
        return None;
    }
    // The replica with the smallest name among those of the best-served masters is the
    // one that moves (this node unless a smaller one exists).
    let candidate = state
        .nodes
        .values()
        .filter(|r| r.is_replica() && r.master.is_some_and(|m| working_of(&m) == max_replicas))
        .map(|r| r.id)
        .chain(std::iter::once(state.myself))
        .min_by(|a, b| a.as_bytes().cmp(b.as_bytes()))?;
    // The first orphaned master with slots is the target; how long each master has been
    // orphaned is tracked meanwhile.
    let mut target = None;
    let ids: Vec<NodeId> = state.nodes.keys().copied().collect();
    for id in ids {
        let slots = state.slot_count(&id);
        let Some(node) = state.nodes.get_mut(&id) else {
            continue;
        };
        let is_orphaned = node.is_master()
            && !node.failed()
            && node.flags.any(Flags::MIGRATE_TO)
            && working_of(&id) == 0;
        if is_orphaned {
            if target.is_none() && slots > 0 {
                target = Some(id);
            }
            if node.orphaned_since == 0 {
                node.orphaned_since = now;
            }
        } else {
            node.orphaned_since = 0;
        }
    }
    let target = target?;
    let since = state.nodes.get(&target).map_or(now, |n| n.orphaned_since);
    (candidate == state.myself && now.saturating_sub(since) > MIGRATION_DELAY_MS).then_some(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::node::Node;

    fn node(state: &mut ClusterState, name: u8, master: Option<NodeId>) -> NodeId {
        let id = NodeId::from_bytes([name; 40]);
        let mut n = Node::new(id, "127.0.0.1", 7000 + u16::from(name), 0, 0, 0);
        match master {
            Some(m) => {
                n.flags.set(Flags::REPLICA);
                n.master = Some(m);
            }
            None => n.flags.set(Flags::MASTER | Flags::MIGRATE_TO),
        }
        state.nodes.insert(id, n);
        id
    }

    fn settings() -> Settings {
        let mut s = Settings::from_config(&crate::config::Config::default());
        s.replica_migration = true;
        s.migration_barrier = 1;
        s
    }

    /// Masters `a` (replicas `r1` `r2`, `r1` being this node) and `b` (one replica,
    /// failed), each with a slot.
    fn layout(me_name: u8) -> (ClusterState, NodeId) {
        let me = NodeId::from_bytes([me_name; 40]);
        let mut state = ClusterState::new(Node::new(me, "127.0.0.1", 1, 0, 0, 0), 0);
        state.nodes.clear();
        let a = node(&mut state, b'a', None);
        let b = node(&mut state, b'b', None);
        node(&mut state, b'1', Some(a));
        node(&mut state, b'2', Some(a));
        let lost = node(&mut state, b'3', Some(b));
        if let Some(n) = state.nodes.get_mut(&lost) {
            n.flags.set(Flags::FAIL);
        }
        state.myself = me;
        if let Some(n) = state.nodes.get_mut(&me) {
            n.flags.set(Flags::MYSELF);
        }
        state.add_slot(0, a);
        state.add_slot(1, b);
        state.ok = true;
        (state, b)
    }

    #[test]
    fn the_smallest_replica_of_the_best_served_master_moves_after_the_delay() {
        let (mut state, orphan) = layout(b'1');
        let s = settings();
        assert_eq!(target(&mut state, &s, 1000), None, "orphaned just now");
        assert_eq!(target(&mut state, &s, 1000 + MIGRATION_DELAY_MS), None);
        assert_eq!(
            target(&mut state, &s, 1001 + MIGRATION_DELAY_MS),
            Some(orphan)
        );
        // Not the other replica: its name is larger.
        let (mut other, _) = layout(b'2');
        target(&mut other, &s, 1000);
        assert_eq!(target(&mut other, &s, 1001 + MIGRATION_DELAY_MS), None);
    }

    #[test]
    fn the_barrier_and_the_setting_hold_it_back() {
        let (mut state, _) = layout(b'1');
        let mut s = settings();
        s.migration_barrier = 2;
        target(&mut state, &s, 1000);
        assert_eq!(target(&mut state, &s, 10_000), None);
        s.migration_barrier = 1;
        s.replica_migration = false;
        assert_eq!(target(&mut state, &s, 10_000), None);
    }
}
