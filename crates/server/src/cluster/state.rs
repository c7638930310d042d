//! What this node knows of the cluster (Redis's `clusterState`): the nodes, who owns each
//! of the 16384 slots, the slots being migrated or imported, the epochs, and whether the
//! cluster is up from here.

use std::collections::BTreeMap;

use super::node::{Flags, Node, NodeId};

/// Hash slots in a Redis Cluster.
pub const SLOTS: usize = 16384;

/// A master waits this long after start before it calls the cluster up, so a restarted
/// node hears the others' configuration first (Redis's `CLUSTER_WRITABLE_DELAY`).
const WRITABLE_DELAY_MS: u64 = 2000;

/// What [`ClusterState::me`] would answer if this node were missing from its own table.
static ABSENT: Node = Node::unknown(NodeId::ZERO, Flags::MYSELF | Flags::MASTER);

/// One node's slots.
#[derive(Debug, Clone)]
struct Owned {
    bitmap: Box<[u8; SLOTS / 8]>,
    count: usize,
}

/// The cluster from this node's point of view.
#[derive(Debug, Clone)]
pub struct ClusterState {
    /// This node's name.
    pub myself: NodeId,
    /// The highest epoch seen.
    pub current_epoch: u64,
    /// The epoch of the last failover vote this node granted.
    pub last_vote_epoch: u64,
    /// Every known node, this one included.
    pub nodes: BTreeMap<NodeId, Node>,
    /// Who serves each slot (changed only through [`Self::add_slot`] and
    /// [`Self::del_slot`], which keep `owned` in step).
    pub slots: Box<[Option<NodeId>]>,
    /// Each serving node's slots as the bus's bitmap, and their count.
    owned: BTreeMap<NodeId, Owned>,
    /// Slots this node is handing to another (CLUSTER SETSLOT MIGRATING).
    pub migrating: Box<[Option<NodeId>]>,
    /// Slots this node is taking from another (CLUSTER SETSLOT IMPORTING).
    pub importing: Box<[Option<NodeId>]>,
    /// Whether the cluster is up from here (`cluster_state:ok`).
    pub ok: bool,
    /// Masters serving at least one slot.
    pub size: usize,
    /// When this state was created (the writable delay counts from it).
    started: u64,
    /// When this node last found itself among a minority of masters.
    among_minority: u64,
    /// Nodes forgotten with CLUSTER FORGET, not re-added from gossip until the time given.
    pub forgotten: BTreeMap<NodeId, u64>,
    /// Bus messages received, by type (CLUSTER INFO; those sent are the bus's).
    pub messages_received: [u64; super::bus::message::TYPES],
    /// Elections and manual failovers.
    pub election: super::bus::failover::Election,
    /// Slots this node's shard stopped serving since they were last taken: their shard
    /// channels' subscribers are to be unsubscribed (taken by CLUSTER commands and the
    /// cron, for [`crate::pubsub::PubSub::drop_shard_slots`]).
    pub lost_slots: Vec<usize>,
}

impl ClusterState {
    /// A cluster of one: `myself`, a master without slots.
    pub fn new(myself: Node, now: u64) -> ClusterState {
        let id = myself.id;
        let mut nodes = BTreeMap::new();
        nodes.insert(id, myself);
        ClusterState {
            myself: id,
            current_epoch: 0,
            last_vote_epoch: 0,
            nodes,
            slots: vec![None; SLOTS].into_boxed_slice(),
            owned: BTreeMap::new(),
            migrating: vec![None; SLOTS].into_boxed_slice(),
            importing: vec![None; SLOTS].into_boxed_slice(),
            ok: false,
            size: 0,
            started: now,
            among_minority: 0,
            forgotten: BTreeMap::new(),
            messages_received: [0; super::bus::message::TYPES],
            election: super::bus::failover::Election::default(),
            lost_slots: Vec::new(),
        }
    }

    /// The state of a server not in cluster mode: no slot tables at all (3 × 16384
    /// entries would count in `used_memory`, which redis-server does not spend either).
    /// Nothing reads it: every cluster path first checks that cluster mode is on.
    pub fn unused() -> ClusterState {
        let mut state = ClusterState::new(Node::unknown(NodeId::ZERO, Flags::MYSELF), 0);
        state.slots = Box::default();
        state.migrating = Box::default();
        state.importing = Box::default();
        state
    }

    /// This node (always in the table: nothing removes it).
    pub fn me(&self) -> &Node {
        self.nodes.get(&self.myself).unwrap_or(&ABSENT)
    }

    /// This node, to change.
    pub fn me_mut(&mut self) -> &mut Node {
        let myself = self.myself;
        self.nodes
            .entry(myself)
            .or_insert_with(|| Node::new(myself, "", 0, 0, Flags::MYSELF | Flags::MASTER, 0))
    }

    /// The node named by `name` as a client typed it.
    pub fn lookup(&self, name: &[u8]) -> Option<&Node> {
        NodeId::parse(name).and_then(|id| self.nodes.get(&id))
    }

    /// The number of slots `id` serves.
    pub fn slot_count(&self, id: &NodeId) -> usize {
        self.owned.get(id).map_or(0, |o| o.count)
    }

    /// The slots `id` serves, as a 2048-byte bitmap (the bus's form; slot 0 is bit 0 of
    /// byte 0).
    pub fn slot_bitmap(&self, id: &NodeId) -> [u8; SLOTS / 8] {
        self.owned.get(id).map_or([0u8; SLOTS / 8], |o| *o.bitmap)
    }

    /// The slots `id` serves, as inclusive ranges in ascending order.
    pub fn slot_ranges(&self, id: &NodeId) -> Vec<(usize, usize)> {
        match self.owned.get(id) {
            Some(owned) => ranges(|slot| owned.bitmap[slot / 8] & (1 << (slot % 8)) != 0),
            None => Vec::new(),
        }
    }

    /// The replicas of `master` this node knows, in name order.
    pub fn replicas_of(&self, master: &NodeId) -> Vec<&Node> {
        self.nodes
            .values()
            .filter(|n| n.is_replica() && n.master.as_ref() == Some(master))
            .collect()
    }

    /// The master whose slots this node serves: itself, or the master it replicates.
    pub fn my_master(&self) -> Option<NodeId> {
        let me = self.me();
        if me.is_replica() {
            me.master
        } else {
            Some(me.id)
        }
    }

    /// The epoch this node's slots are claimed with: its own, or its master's.
    pub fn my_epoch(&self) -> u64 {
        let me = self.me();
        match me.master.and_then(|m| self.nodes.get(&m)) {
            Some(master) if me.is_replica() => master.config_epoch,
            _ => me.config_epoch,
        }
    }

    /// Gives `slot` to `owner`.
    pub fn add_slot(&mut self, slot: usize, owner: NodeId) {
        if self.slots[slot] == Some(owner) {
            return;
        }
        self.del_slot(slot);
        self.slots[slot] = Some(owner);
        let owned = self.owned.entry(owner).or_insert_with(|| Owned {
            bitmap: Box::new([0u8; SLOTS / 8]),
            count: 0,
        });
        owned.bitmap[slot / 8] |= 1 << (slot % 8);
        owned.count += 1;
    }

    /// Takes `slot` from whoever serves it (a migration of it stays open, as in Redis).
    pub fn del_slot(&mut self, slot: usize) {
        let Some(owner) = self.slots[slot].take() else {
            return;
        };
        if owner == self.myself || self.me().is_replica() && self.me().master == Some(owner) {
            self.lost_slots.push(slot);
        }
        if let Some(owned) = self.owned.get_mut(&owner) {
            owned.bitmap[slot / 8] &= !(1 << (slot % 8));
            owned.count -= 1;
            if owned.count == 0 {
                self.owned.remove(&owner);
            }
        }
    }

    /// Ends every migration and import (Redis's `clusterCloseAllSlots`).
    pub fn close_all_slots(&mut self) {
        self.migrating.iter_mut().for_each(|s| *s = None);
        self.importing.iter_mut().for_each(|s| *s = None);
    }

    /// Takes every slot from `id`.
    pub fn del_node_slots(&mut self, id: &NodeId) {
        for slot in 0..SLOTS {
            if self.slots[slot].as_ref() == Some(id) {
                self.del_slot(slot);
            }
        }
    }

    /// Forgets `id`: its slots become unassigned, migrations to or from it end, its
    /// failure reports about others go, and its replicas lose their master.
    pub fn del_node(&mut self, id: &NodeId) {
        for slot in 0..SLOTS {
            if self.importing[slot].as_ref() == Some(id) {
                self.importing[slot] = None;
            }
            if self.migrating[slot].as_ref() == Some(id) {
                self.migrating[slot] = None;
            }
            if self.slots[slot].as_ref() == Some(id) {
                self.del_slot(slot);
            }
        }
        for node in self.nodes.values_mut() {
            node.fail_reports.retain(|(reporter, _)| reporter != id);
            if node.master.as_ref() == Some(id) {
                node.master = None;
            }
        }
        self.nodes.remove(id);
    }

    /// A node learned its real name (a handshake done, CLUSTER RESET HARD): every
    /// reference follows it.
    pub fn rename(&mut self, from: &NodeId, to: NodeId) {
        if let Some(mut node) = self.nodes.remove(from) {
            node.id = to;
            node.flags.clear(Flags::HANDSHAKE);
            self.nodes.insert(to, node);
        }
        for slot in 0..SLOTS {
            if self.slots[slot].as_ref() == Some(from) {
                self.add_slot(slot, to);
            }
            for table in [&mut self.migrating, &mut self.importing] {
                if table[slot].as_ref() == Some(from) {
                    table[slot] = Some(to);
                }
            }
        }
        for node in self.nodes.values_mut() {
            if node.master.as_ref() == Some(from) {
                node.master = Some(to);
            }
        }
    }

    /// Makes this node a replica of `master` (CLUSTER REPLICATE, or a master whose last
    /// slot went elsewhere): a master's migrations end (Redis's `clusterSetMaster`).
    pub fn set_my_master(&mut self, master: NodeId) {
        if self.me().is_master() {
            self.close_all_slots();
        }
        let me = self.me_mut();
        me.flags.clear(Flags::MASTER | Flags::MIGRATE_TO);
        me.flags.set(Flags::REPLICA);
        me.master = Some(master);
        self.mark_has_had_replicas(&master);
    }

    /// Marks `master` as one that has had a replica: if it loses them all while serving
    /// slots, replicas of other masters may move to it (Redis's `MIGRATE_TO` flag).
    pub fn mark_has_had_replicas(&mut self, master: &NodeId) {
        if let Some(node) = self.nodes.get_mut(master) {
            if node.is_master() {
                node.flags.set(Flags::MIGRATE_TO);
            }
        }
    }

    /// Makes this node a master again (a failover won, CLUSTER RESET).
    pub fn set_me_master(&mut self) {
        let me = self.me_mut();
        me.flags.clear(Flags::REPLICA);
        me.flags.set(Flags::MASTER);
        me.master = None;
    }

    /// Raises this node's config epoch to a new, unique one if it is not already the
    /// greatest (Redis's `clusterBumpConfigEpochWithoutConsensus`). True when it moved.
    pub fn bump_epoch_without_consensus(&mut self) -> bool {
        let max = self
            .nodes
            .values()
            .map(|n| n.config_epoch)
            .max()
            .unwrap_or(0);
        let mine = self.me().config_epoch;
        if mine == 0 || mine != max {
            self.current_epoch += 1;
            let epoch = self.current_epoch;
            self.me_mut().config_epoch = epoch;
            true
        } else {
            false
        }
    }

    /// Recomputes `ok` and `size` (Redis's `clusterUpdateState`): down when a slot is
    /// unserved or its master failed (with `cluster-require-full-coverage`), or when this
    /// node sees fewer than a majority of the masters that serve slots.
    pub fn update_state(&mut self, now: u64, full_coverage: bool, node_timeout: u64) {
        if self.me().is_master() && !self.ok && now.saturating_sub(self.started) < WRITABLE_DELAY_MS
        {
            return;
        }
        let mut ok = true;
        if full_coverage {
            let covered: usize = self
                .owned
                .iter()
                .filter(|(id, _)| self.nodes.get(id).is_some_and(|n| !n.failed()))
                .map(|(_, o)| o.count)
                .sum();
            ok = covered == SLOTS;
        }
        let serving: Vec<&Node> = self
            .owned
            .keys()
            .filter_map(|id| self.nodes.get(id))
            .filter(|n| n.is_master())
            .collect();
        self.size = serving.len();
        let reachable = serving
            .iter()
            .filter(|n| !n.flags.any(Flags::FAIL | Flags::PFAIL))
            .count();
        if reachable < self.size / 2 + 1 {
            ok = false;
            self.among_minority = now;
        }
        if ok != self.ok {
            // A master that was in a minority waits before accepting writes again, so
            // the majority's failover has time to reach it.
            let rejoin = node_timeout.clamp(500, 5000);
            if ok && self.me().is_master() && now.saturating_sub(self.among_minority) < rejoin {
                return;
            }
            if ok {
                tracing::warn!("Cluster state changed: ok");
            } else {
                tracing::warn!("Cluster state changed: fail");
            }
            self.ok = ok;
        }
    }

    /// One line of CLUSTER NODES (and nodes.conf) for `node`: name, address, flags,
    /// master, ping and pong times, epoch, link state, slots; for this node also the
    /// slots it migrates (`[slot->-id]`) and imports (`[slot-<-id]`).
    pub fn describe(&self, node: &Node) -> String {
        self.describe_to(node, false)
    }

    /// [`ClusterState::describe`] for a client: with `plain_ports` (a plain client of a
    /// `tls-cluster`), the node's plain port where it announced one.
    pub fn describe_to(&self, node: &Node, plain_ports: bool) -> String {
        use std::fmt::Write;
        let mut line = String::with_capacity(128);
        let port = node.client_port(plain_ports);
        let _ = write!(line, "{} {}:{}@{}", node.id, node.ip, port, node.cport);
        if !node.hostname.is_empty() {
            let _ = write!(line, ",{}", node.hostname);
        }
        let master = match node.master {
            Some(m) => m.to_string(),
            None => "-".to_string(),
        };
        let epoch = match node.master.and_then(|m| self.nodes.get(&m)) {
            Some(master) if node.is_replica() => master.config_epoch,
            _ => node.config_epoch,
        };
        let mine = node.id == self.myself;
        let link = if node.linked || mine {
            "connected"
        } else {
            "disconnected"
        };
        let _ = write!(
            line,
            " {} {master} {} {} {epoch} {link}",
            node.flags.describe(),
            node.ping_sent,
            node.pong_received
        );
        for (start, end) in self.slot_ranges(&node.id) {
            if start == end {
                let _ = write!(line, " {start}");
            } else {
                let _ = write!(line, " {start}-{end}");
            }
        }
        if mine {
            for slot in 0..SLOTS {
                if let Some(to) = &self.migrating[slot] {
                    let _ = write!(line, " [{slot}->-{to}]");
                } else if let Some(from) = &self.importing[slot] {
                    let _ = write!(line, " [{slot}-<-{from}]");
                }
            }
        }
        line
    }

    /// CLUSTER NODES: a line per node, each ending in a newline, leaving out nodes with
    /// any of the `skip` flags.
    pub fn describe_all(&self, skip: u16, plain_ports: bool) -> String {
        let mut text = String::new();
        for node in self.nodes.values().filter(|n| !n.flags.any(skip)) {
            text.push_str(&self.describe_to(node, plain_ports));
            text.push('\n');
        }
        text
    }
}

/// Inclusive ranges of the slots for which `member` holds, ascending.
pub fn ranges(member: impl Fn(usize) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for slot in 0..=SLOTS {
        let inside = slot < SLOTS && member(slot);
        match (inside, start) {
            (true, None) => start = Some(slot),
            (false, Some(s)) => {
                out.push((s, slot - 1));
                start = None;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> ClusterState {
        let me = Node::new(
            NodeId::random(),
            "",
            6379,
            16379,
            Flags::MYSELF | Flags::MASTER,
            0,
        );
        ClusterState::new(me, 0)
    }

    #[test]
    fn slots_read_back_as_ranges() {
        let mut s = state();
        let me = s.myself;
        for slot in [0, 1, 2, 5, 16383] {
            s.add_slot(slot, me);
        }
        assert_eq!(s.slot_ranges(&me), vec![(0, 2), (5, 5), (16383, 16383)]);
        assert_eq!(s.slot_count(&me), 5);
        let line = s.describe(s.me());
        assert!(
            line.ends_with(" myself,master - 0 0 0 connected 0-2 5 16383"),
            "{line}"
        );
        assert_eq!(s.slot_bitmap(&me)[0], 0b0010_0111);
    }

    #[test]
    fn the_cluster_is_up_once_every_slot_is_served_and_the_delay_passed() {
        let mut s = state();
        let me = s.myself;
        for slot in 0..SLOTS {
            s.add_slot(slot, me);
        }
        s.update_state(1000, true, 15000);
        assert!(!s.ok, "a master waits the writable delay");
        s.update_state(5000, true, 15000);
        assert!(s.ok);
        assert_eq!(s.size, 1);
        s.del_slot(7);
        s.update_state(6000, true, 15000);
        assert!(!s.ok);
        s.update_state(6000, false, 15000);
        assert!(s.ok, "without full coverage a missing slot does not matter");
    }
}
