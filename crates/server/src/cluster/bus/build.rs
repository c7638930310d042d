//! Messages this node sends, built from its state (Redis's `clusterBuildMessageHdr`,
//! `clusterSendPing` and friends). Each builder counts the message as sent.

use super::super::node::{Flags, Node, NodeId};
use super::super::state::ClusterState;
use super::message::{self, Body, Gossip, Header, Message};

/// What the header says beyond the cluster state: the replication offset.
#[derive(Clone, Copy, Debug, Default)]
pub struct Context {
    /// This node's replication offset.
    pub offset: u64,
}

/// The header of a message of `kind` from this node.
pub fn header(state: &ClusterState, kind: u16, ctx: Context) -> Header {
    let me = state.me();
    // A replica advertises its master's slots and epoch.
    let master = match me.master.and_then(|m| state.nodes.get(&m)) {
        Some(master) if me.is_replica() => master,
        _ => me,
    };
    let mut mflags = [0u8; 3];
    // A master paused for its replica's manual failover says so, with its offset.
    if state.election.mf_replica.is_some() && me.is_master() {
        mflags[0] |= message::FLAG0_PAUSED;
    }
    Header {
        kind,
        port: me.port,
        current_epoch: state.current_epoch,
        config_epoch: master.config_epoch,
        offset: ctx.offset,
        sender: me.id,
        slots: Box::new(state.slot_bitmap(&master.id)),
        master: if me.is_replica() { me.master } else { None },
        // Only an announced address is sent; receivers otherwise use the connection's.
        ip: String::new(),
        pport: me.pport,
        cport: me.cport,
        flags: me.flags.0,
        state_ok: state.ok,
        mflags,
    }
}

fn gossip_entry(node: &Node) -> Gossip {
    Gossip {
        id: node.id,
        ping_sent: (node.ping_sent / 1000) as u32,
        pong_received: (node.pong_received / 1000) as u32,
        ip: node.ip.clone(),
        port: node.port,
        cport: node.cport,
        flags: node.flags.0,
        pport: node.pport,
    }
}

/// A PING, PONG or MEET with gossip about a tenth of the nodes (at least 3), chosen at
/// random among those worth telling about, then every node in PFAIL; `announced_ip`
/// goes in the header when `cluster-announce-ip` is set.
pub fn ping(state: &mut ClusterState, kind: u16, ctx: Context, announced_ip: &str) -> Vec<u8> {
    let myself = state.myself;
    let mut header = header(state, kind, ctx);
    header.ip = announced_ip.to_string();
    let fresh: Vec<&Node> = state
        .nodes
        .values()
        .filter(|n| n.id != myself && !n.timed_out())
        .filter(|n| !n.flags.any(Flags::HANDSHAKE | Flags::NOADDR))
        .filter(|n| n.linked || state.slot_count(&n.id) != 0)
        .collect();
    let wanted = (state.nodes.len() / 10)
        .max(3)
        .min(state.nodes.len().saturating_sub(2));
    let mut gossip: Vec<Gossip> = Vec::new();
    let mut picked: Vec<NodeId> = Vec::new();
    let mut candidates = fresh;
    while gossip.len() < wanted && !candidates.is_empty() {
        let node = candidates.swap_remove(fastrand::usize(..candidates.len()));
        picked.push(node.id);
        gossip.push(gossip_entry(node));
    }
    for node in state.nodes.values() {
        if node.timed_out() && !node.flags.any(Flags::HANDSHAKE | Flags::NOADDR) {
            gossip.push(gossip_entry(node));
        }
    }
    let hostname = Some(state.me().hostname.clone()).filter(|h| !h.is_empty());
    let message = Message {
        header,
        body: Body::Ping { gossip, hostname },
    };
    message::encode(&message)
}

/// FAIL about `failing`.
pub fn fail(state: &mut ClusterState, failing: NodeId, ctx: Context) -> Vec<u8> {
    let message = Message {
        header: header(state, message::FAIL, ctx),
        body: Body::Fail(failing),
    };
    message::encode(&message)
}

/// UPDATE telling a node with a stale view who serves `node`'s slots.
pub fn update(state: &mut ClusterState, node: NodeId, ctx: Context) -> Option<Vec<u8>> {
    let config_epoch = state.nodes.get(&node)?.config_epoch;
    let message = Message {
        header: header(state, message::UPDATE, ctx),
        body: Body::Update {
            config_epoch,
            id: node,
            slots: Box::new(state.slot_bitmap(&node)),
        },
    };
    Some(message::encode(&message))
}

/// PUBLISH or PUBLISHSHARD.
pub fn publish(
    state: &mut ClusterState,
    shard: bool,
    channel: &[u8],
    payload: &[u8],
    ctx: Context,
) -> Vec<u8> {
    let kind = if shard {
        message::PUBLISHSHARD
    } else {
        message::PUBLISH
    };
    let message = Message {
        header: header(state, kind, ctx),
        body: Body::Publish {
            channel: channel.to_vec(),
            message: payload.to_vec(),
        },
    };
    message::encode(&message)
}

/// A message without a body: FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART.
pub fn bare(state: &mut ClusterState, kind: u16, ctx: Context, mflags0: u8) -> Vec<u8> {
    let mut header = header(state, kind, ctx);
    header.mflags[0] |= mflags0;
    let message = Message {
        header,
        body: Body::Empty,
    };
    message::encode(&message)
}
