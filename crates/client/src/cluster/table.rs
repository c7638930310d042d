//! The routing snapshot: slot → shard → node.
//!
//! A [`SlotTable`] is immutable once built and is swapped in whole (see `ClusterClient`),
//! so the command path reads it through one atomic load with no lock. It maps each of the
//! 16384 slots to a shard index; a shard holds the master's and the replicas' connections.
//! Changes (a refresh, a `MOVED` patch) build a new table; the 32 KiB slot array is cheap
//! to copy next to a network round trip, and copies happen only on topology changes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::Error;

use super::layout::Layout;
use super::node::{Node, Registry};

/// Number of hash slots in Redis Cluster.
pub(crate) const SLOTS: usize = 16384;
const NONE: u16 = u16::MAX;

/// One master and its replicas.
#[derive(Debug)]
pub(crate) struct Shard {
    pub(crate) master: Arc<Node>,
    /// Replicas reported healthy, for reads.
    pub(crate) replicas: Vec<Arc<Node>>,
    /// Round-robin position among `replicas` (per shard, not shared by the whole client).
    next: AtomicUsize,
}

impl Clone for Shard {
    fn clone(&self) -> Shard {
        Shard {
            master: self.master.clone(),
            replicas: self.replicas.clone(),
            next: AtomicUsize::new(self.next.load(Ordering::Relaxed)),
        }
    }
}

/// Slot → shard, immutable.
#[derive(Debug, Clone)]
pub(crate) struct SlotTable {
    slots: Box<[u16]>,
    shards: Vec<Shard>,
}

impl SlotTable {
    /// A table that routes nothing (before the first topology is known).
    pub(crate) fn empty() -> SlotTable {
        SlotTable {
            slots: vec![NONE; SLOTS].into_boxed_slice(),
            shards: Vec::new(),
        }
    }

    /// Builds the table of `layout`, creating nodes in `registry` as needed.
    pub(crate) fn build(layout: &Layout, registry: &Registry) -> Result<SlotTable, Error> {
        let mut table = SlotTable::empty();
        for info in &layout.shards {
            let index = u16::try_from(table.shards.len()).unwrap_or(NONE - 1);
            let master = registry.get(&info.master.host, info.master.port)?;
            let mut replicas = Vec::new();
            for replica in info.replicas.iter().filter(|r| r.healthy) {
                replicas.push(registry.get(&replica.host, replica.port)?);
            }
            table.shards.push(Shard {
                master,
                replicas,
                next: AtomicUsize::new(0),
            });
            for &(start, end) in &info.ranges {
                for slot in start..=end.min(SLOTS as u16 - 1) {
                    table.slots[usize::from(slot)] = index;
                }
            }
        }
        Ok(table)
    }

    /// The shard serving `slot`, if any.
    #[inline]
    pub(crate) fn shard(&self, slot: u16) -> Option<&Shard> {
        let index = *self.slots.get(usize::from(slot))?;
        self.shards.get(usize::from(index))
    }

    /// The master serving `slot`.
    #[inline]
    pub(crate) fn master(&self, slot: u16) -> Option<&Arc<Node>> {
        self.shard(slot).map(|s| &s.master)
    }

    /// The next replica of `slot`'s shard, round-robin; `None` without replicas.
    pub(crate) fn replica(&self, slot: u16) -> Option<&Arc<Node>> {
        let shard = self.shard(slot)?;
        let n = shard.replicas.len();
        if n == 0 {
            return None;
        }
        let i = shard.next.fetch_add(1, Ordering::Relaxed) % n;
        shard.replicas.get(i)
    }

    /// A master picked at random (keyless commands), without scanning the slots.
    pub(crate) fn random_master(&self) -> Option<&Arc<Node>> {
        match self.shards.len() {
            0 => None,
            n => self.shards.get(fastrand::usize(0..n)).map(|s| &s.master),
        }
    }

    /// Masters that serve at least one slot.
    pub(crate) fn masters(&self) -> Vec<Arc<Node>> {
        let mut used = vec![false; self.shards.len()];
        for &index in self.slots.iter() {
            if let Some(u) = used.get_mut(usize::from(index)) {
                *u = true;
            }
        }
        self.shards
            .iter()
            .zip(used)
            .filter(|(_, used)| *used)
            .map(|(s, _)| s.master.clone())
            .collect()
    }

    /// Masters serving slots, then their replicas.
    pub(crate) fn all_nodes(&self) -> Vec<Arc<Node>> {
        let mut nodes = self.masters();
        for shard in &self.shards {
            for replica in &shard.replicas {
                if !nodes.iter().any(|n| n.addr == replica.addr) {
                    nodes.push(replica.clone());
                }
            }
        }
        nodes
    }

    /// Every node of the table, for refreshes.
    pub(crate) fn nodes(&self) -> Vec<Arc<Node>> {
        let mut nodes: Vec<Arc<Node>> = Vec::new();
        for shard in &self.shards {
            for node in std::iter::once(&shard.master).chain(&shard.replicas) {
                if !nodes.iter().any(|n| n.addr == node.addr) {
                    nodes.push(node.clone());
                }
            }
        }
        nodes
    }

    /// True when `slot` is already served by `addr`.
    pub(crate) fn serves(&self, slot: u16, addr: &str) -> bool {
        self.master(slot).is_some_and(|m| &*m.addr == addr)
    }

    /// This table with `slot` moved to `node` (a `MOVED` reply). A node that is not yet a
    /// master here (a promoted replica, a new node) becomes the master of a new shard;
    /// the next refresh fills in its replicas.
    pub(crate) fn with_moved(&self, slot: u16, node: &Arc<Node>) -> SlotTable {
        let mut table = self.clone();
        let index = match table.shards.iter().position(|s| s.master.addr == node.addr) {
            Some(i) => i,
            None => {
                table.shards.push(Shard {
                    master: node.clone(),
                    replicas: Vec::new(),
                    next: AtomicUsize::new(0),
                });
                table.shards.len() - 1
            }
        };
        if let (Some(entry), Ok(index)) =
            (table.slots.get_mut(usize::from(slot)), u16::try_from(index))
        {
            *entry = index;
        }
        table
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::{NodeInfo, ShardInfo};
    use super::*;
    use crate::config::Config;

    fn info(port: u16) -> NodeInfo {
        NodeInfo {
            host: "127.0.0.1".into(),
            port,
            id: None,
            healthy: true,
        }
    }

    #[tokio::test]
    async fn every_range_and_moved_patches() {
        let registry = Registry::new(Config::default());
        let layout = Layout {
            shards: vec![
                ShardInfo {
                    ranges: vec![(0, 99), (200, 299)],
                    master: info(7000),
                    replicas: vec![info(7003)],
                },
                ShardInfo {
                    ranges: vec![(100, 199)],
                    master: info(7001),
                    replicas: vec![],
                },
            ],
        };
        let table = SlotTable::build(&layout, &registry).unwrap();
        assert!(table.serves(0, "127.0.0.1:7000"));
        assert!(table.serves(250, "127.0.0.1:7000"));
        assert!(table.serves(150, "127.0.0.1:7001"));
        assert!(table.master(300).is_none());
        assert_eq!(&*table.replica(50).unwrap().addr, "127.0.0.1:7003");
        assert!(table.replica(150).is_none());
        assert_eq!(table.masters().len(), 2);
        assert_eq!(table.all_nodes().len(), 3);

        // A promoted replica becomes a master of its own shard for the moved slot.
        let promoted = registry.get("127.0.0.1", 7003).unwrap();
        let patched = table.with_moved(50, &promoted);
        assert!(patched.serves(50, "127.0.0.1:7003"));
        assert!(patched.serves(51, "127.0.0.1:7000"));
        assert!(
            table.serves(50, "127.0.0.1:7000"),
            "the old snapshot is unchanged"
        );
        let moved = patched.with_moved(150, &registry.get("127.0.0.1", 7000).unwrap());
        assert!(moved.serves(150, "127.0.0.1:7000"));
    }
}
