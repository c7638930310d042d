//! What a message received on the bus does to this node's state (Redis's
//! `clusterProcessPacket`), as a pure function of the state: the effects outside it
//! (replies, messages to other nodes, replication, keys to drop, pub/sub) are returned
//! for the link task to carry out once the state's lock is released.

use super::super::node::{Flags, Node, NodeId};
use super::super::state::{ClusterState, SLOTS};
use super::super::Settings;
use super::build::{self, Context};
use super::failure;
use super::message::{self, Body, Gossip, Message};

/// Gossip does not re-add a node forgotten with CLUSTER FORGET for this long.
pub const FORGET_TTL_MS: u64 = 60_000;

/// The link a message came on.
#[derive(Clone, Debug)]
pub struct LinkInfo {
    /// Accepted from a peer (its replies to our pings come on our own link to it).
    pub inbound: bool,
    /// The node at the other end: for an outbound link the one it was opened to; for an
    /// inbound one, the sender once known.
    pub node: Option<NodeId>,
    /// This end's address (a node learns its own IP from the MEET it receives).
    pub local_ip: String,
    /// The peer's address.
    pub peer_ip: String,
}

/// Effects of a message beyond the state.
#[derive(Debug, Default)]
pub struct Outcome {
    /// To write on the link the message came on.
    pub reply: Vec<Vec<u8>>,
    /// Close that link.
    pub close: bool,
    /// To send to a node over this node's link to it.
    pub to_nodes: Vec<(NodeId, Vec<u8>)>,
    /// To send to every linked node.
    pub broadcast: Vec<Vec<u8>>,
    /// Links to close (a node forgotten, or its address changed).
    pub drop_links: Vec<NodeId>,
    /// The outbound link's node was renamed (handshake done): from, to.
    pub renamed: Option<(NodeId, NodeId)>,
    /// Replicate this master (a new one, or its address changed).
    pub follow: Option<NodeId>,
    /// Deliver a PUBLISH (shard or not) to local subscribers.
    pub publish: Option<(bool, Vec<u8>, Vec<u8>)>,
    /// Slots whose keys this node must drop (it lost them to a newer configuration).
    pub drop_slots: Vec<usize>,
    /// Our replica asked for a manual failover.
    pub mfstart: Option<NodeId>,
    /// The configuration changed: save it.
    pub save: bool,
}

/// The address a message's sender is reached at: the one it announces, else the
/// connection's.
fn sender_ip(announced: &str, link: &LinkInfo) -> String {
    if announced.is_empty() {
        link.peer_ip.clone()
    } else {
        announced.to_string()
    }
}

/// Processes `msg` from `link`.
pub fn process(
    state: &mut ClusterState,
    settings: &Settings,
    link: &mut LinkInfo,
    msg: Message,
    now: u64,
    ctx: Context,
) -> Outcome {
    let mut out = Outcome::default();
    let hdr = msg.header;
    let kind = hdr.kind;
    if let Some(count) = state.messages_received.get_mut(usize::from(kind)) {
        *count += 1;
    }
    // The sender: the link's node once its handshake is done, else looked up by name.
    let known =
        |state: &ClusterState, id: &NodeId| state.nodes.get(id).is_some_and(|n| !n.in_handshake());
    let mut sender = match link.node {
        Some(id) if known(state, &id) => Some(id),
        _ => {
            let found = state.nodes.contains_key(&hdr.sender).then_some(hdr.sender);
            if link.inbound && link.node.is_none() {
                link.node = found;
            }
            found
        }
    };
    let mut sender_config_epoch = 0;
    if let Some(id) = sender {
        let me_replica_of_sender = state.me().is_replica() && state.me().master == Some(id);
        let mut handshake = true;
        if let Some(node) = state.nodes.get_mut(&id) {
            node.data_received = now;
            handshake = node.in_handshake();
            if !handshake {
                if hdr.config_epoch > node.config_epoch {
                    node.config_epoch = hdr.config_epoch;
                    out.save = true;
                }
                node.repl_offset = hdr.offset;
            }
        }
        if !handshake {
            sender_config_epoch = hdr.config_epoch;
            if hdr.current_epoch > state.current_epoch {
                state.current_epoch = hdr.current_epoch;
            }
            // A paused master's offset: the one this replica must reach. Each of its
            // PINGs says it again; the latest counts (a write already running on
            // another thread when the pause began may still have added to it).
            if state.election.mf_end != 0
                && me_replica_of_sender
                && hdr.mflags[0] & message::FLAG0_PAUSED != 0
                && state.election.mf_master_offset != Some(hdr.offset)
            {
                state.election.mf_master_offset = Some(hdr.offset);
                tracing::warn!(
                    "Received replication offset for paused master manual failover: {}",
                    hdr.offset
                );
            }
        }
    }
    let ping_like = matches!(kind, message::PING | message::PONG | message::MEET);
    if kind == message::PING || kind == message::MEET {
        // A node learns the address others reach it at from the first MEET or PING.
        if (kind == message::MEET || state.me().ip.is_empty())
            && settings.announce_ip.is_empty()
            && !link.local_ip.is_empty()
            && state.me().ip != link.local_ip
        {
            state.me_mut().ip = link.local_ip.clone();
            tracing::info!("IP address for this node updated to {}", link.local_ip);
            out.save = true;
        }
        if sender.is_none() && kind == message::MEET {
            let mut node = Node::new(
                NodeId::random(),
                &sender_ip(&hdr.ip, link),
                hdr.port,
                hdr.cport,
                Flags::HANDSHAKE,
                now,
            );
            node.pport = hdr.pport;
            state.nodes.insert(node.id, node);
            out.save = true;
            if let Body::Ping { gossip, .. } = &msg.body {
                process_gossip(state, None, gossip, now, settings, &mut out, ctx);
            }
        }
        out.reply.push(build::ping(
            state,
            message::PONG,
            ctx,
            &settings.announce_ip,
        ));
    }
    if ping_like {
        if !link.inbound {
            let Some(link_node) = link.node else {
                return out;
            };
            let in_handshake = state.nodes.get(&link_node).is_some_and(Node::in_handshake);
            if in_handshake {
                if let Some(id) = state.nodes.contains_key(&hdr.sender).then_some(hdr.sender) {
                    // Met a node already known under its real name: keep that one.
                    if update_address(state, &id, &sender_ip(&hdr.ip, link), &hdr, &mut out) {
                        out.save = true;
                    }
                    state.del_node(&link_node);
                    out.close = true;
                    return out;
                }
                state.rename(&link_node, hdr.sender);
                if let Some(node) = state.nodes.get_mut(&hdr.sender) {
                    node.flags.set(hdr.flags & (Flags::MASTER | Flags::REPLICA));
                }
                tracing::info!("Handshake with node {} completed.", hdr.sender);
                link.node = Some(hdr.sender);
                out.renamed = Some((link_node, hdr.sender));
                sender = Some(hdr.sender);
                sender_config_epoch = hdr.config_epoch;
                out.save = true;
            } else if link_node != hdr.sender {
                // The address now belongs to another node: this one's is unknown.
                if let Some(node) = state.nodes.get_mut(&link_node) {
                    node.flags.set(Flags::NOADDR);
                    node.ip.clear();
                    node.port = 0;
                    node.pport = 0;
                    node.cport = 0;
                }
                out.close = true;
                out.save = true;
                return out;
            }
        }
        if let Some(id) = sender {
            if let Some(node) = state.nodes.get_mut(&id) {
                node.flags.clear(Flags::NOFAILOVER);
                node.flags.set(hdr.flags & Flags::NOFAILOVER);
            }
            if kind == message::PING
                && link.inbound
                && update_address(state, &id, &sender_ip(&hdr.ip, link), &hdr, &mut out)
            {
                out.save = true;
            }
        }
        if !link.inbound && kind == message::PONG {
            if let Some(id) = link.node {
                if let Some(node) = state.nodes.get_mut(&id) {
                    node.pong_received = now;
                    node.ping_sent = 0;
                    if node.timed_out() {
                        node.flags.clear(Flags::PFAIL);
                        out.save = true;
                    }
                }
                failure::clear_failure_if_needed(state, &id, now, settings.node_timeout);
            }
        }
        let Some(id) = sender else {
            return out;
        };
        update_role(state, &id, hdr.master, &mut out);
        let sender_master = match state.nodes.get(&id) {
            Some(n) if n.is_master() => Some(id),
            Some(n) => n.master,
            None => None,
        };
        let dirty = sender_master.is_some_and(|m| state.slot_bitmap(&m) != *hdr.slots);
        let sender_is_master = state.nodes.get(&id).is_some_and(Node::is_master);
        if sender_is_master && dirty {
            update_slots(
                state,
                settings,
                &id,
                sender_config_epoch,
                &hdr.slots,
                &mut out,
            );
        }
        if dirty {
            // The sender claims a slot we know a newer owner of: tell it.
            for slot in 0..SLOTS {
                if hdr.slots[slot / 8] & (1 << (slot % 8)) == 0 {
                    continue;
                }
                let Some(owner) = state.slots[slot] else {
                    continue;
                };
                if owner == id {
                    continue;
                }
                let newer = state
                    .nodes
                    .get(&owner)
                    .is_some_and(|o| o.config_epoch > sender_config_epoch);
                if newer {
                    if let Some(update) = build::update(state, owner, ctx) {
                        out.to_nodes.push((id, update));
                    }
                    break;
                }
            }
        }
        if state.me().is_master()
            && sender_is_master
            && sender_config_epoch == state.me().config_epoch
        {
            // Two masters with one epoch: the one with the greater name takes a new one.
            if id > state.myself {
                state.current_epoch += 1;
                let epoch = state.current_epoch;
                state.me_mut().config_epoch = epoch;
                out.save = true;
                tracing::info!(
                    "WARNING: configEpoch collision with node {id}. configEpoch set to {epoch}"
                );
            }
        }
        if let Body::Ping { gossip, hostname } = &msg.body {
            process_gossip(state, Some(id), gossip, now, settings, &mut out, ctx);
            if let Some(node) = state.nodes.get_mut(&id) {
                let hostname = hostname.clone().unwrap_or_default();
                if node.hostname != hostname {
                    node.hostname = hostname;
                    out.save = true;
                }
            }
        }
        return out;
    }
    match (kind, &msg.body) {
        (message::FAIL, Body::Fail(failing)) if sender.is_some() => {
            if let Some(node) = state.nodes.get_mut(failing) {
                if !node.flags.any(Flags::FAIL | Flags::MYSELF) {
                    tracing::info!("FAIL message received from {} about {failing}", hdr.sender);
                    node.flags.set(Flags::FAIL);
                    node.flags.clear(Flags::PFAIL);
                    node.fail_time = now;
                    out.save = true;
                }
            }
        }
        (message::PUBLISH | message::PUBLISHSHARD, Body::Publish { channel, message })
            if sender.is_some() =>
        {
            out.publish = Some((
                kind == message::PUBLISHSHARD,
                channel.clone(),
                message.clone(),
            ));
        }
        (message::FAILOVER_AUTH_REQUEST, _) => {
            if let Some(id) = sender {
                if let Some(ack) = super::failover::on_auth_request(
                    state,
                    &id,
                    &hdr,
                    now,
                    settings.node_timeout,
                    ctx,
                ) {
                    out.to_nodes.push((id, ack));
                    out.save = true;
                }
            }
        }
        (message::FAILOVER_AUTH_ACK, _) => {
            if let Some(id) = sender {
                super::failover::on_auth_ack(state, &id, hdr.current_epoch);
            }
        }
        (message::MFSTART, _) => {
            if let Some(id) = sender {
                let ours = state.nodes.get(&id).and_then(|n| n.master) == Some(state.myself);
                if ours {
                    out.mfstart = Some(id);
                }
            }
        }
        (
            message::UPDATE,
            Body::Update {
                config_epoch,
                id,
                slots,
            },
        ) => {
            if sender.is_none() {
                return out;
            }
            let Some(node) = state.nodes.get_mut(id) else {
                return out;
            };
            if node.config_epoch >= *config_epoch {
                return out;
            }
            node.config_epoch = *config_epoch;
            let id = *id;
            if node.is_replica() {
                set_as_master(state, &id);
            }
            out.save = true;
            update_slots(state, settings, &id, *config_epoch, slots, &mut out);
        }
        _ => {}
    }
    out
}

/// A master (or a replica that became one) as the bus tells.
fn set_as_master(state: &mut ClusterState, id: &NodeId) {
    let myself = state.myself;
    if let Some(node) = state.nodes.get_mut(id) {
        if node.is_master() {
            return;
        }
        if node.master.is_some() && *id != myself {
            node.flags.set(Flags::MIGRATE_TO);
        }
        node.flags.clear(Flags::REPLICA);
        node.flags.set(Flags::MASTER);
        node.master = None;
    }
}

/// The sender's role as its header says: a master, or a replica of `master`.
fn update_role(state: &mut ClusterState, id: &NodeId, master: Option<NodeId>, out: &mut Outcome) {
    match master {
        None => {
            if state.nodes.get(id).is_some_and(Node::is_replica) {
                set_as_master(state, id);
                out.save = true;
            }
        }
        Some(master) => {
            if state.nodes.get(id).is_some_and(Node::is_master) {
                // A master turned replica: its slots are its new master's now.
                state.del_node_slots(id);
                if let Some(node) = state.nodes.get_mut(id) {
                    node.flags.clear(Flags::MASTER | Flags::MIGRATE_TO);
                    node.flags.set(Flags::REPLICA);
                }
                out.save = true;
            }
            let known = state.nodes.contains_key(&master);
            if let Some(node) = state.nodes.get_mut(id) {
                if known && node.master != Some(master) {
                    node.master = Some(master);
                    out.save = true;
                }
            }
            if known {
                state.mark_has_had_replicas(&master);
            }
        }
    }
}

/// The node moved (its PING says another address): remember the new one and reconnect;
/// if it is our master, replicate it there (Redis's `nodeUpdateAddressIfNeeded`).
fn update_address(
    state: &mut ClusterState,
    id: &NodeId,
    ip: &str,
    hdr: &message::Header,
    out: &mut Outcome,
) -> bool {
    let myself = state.myself;
    let my_master = state.me().master;
    let Some(node) = state.nodes.get_mut(id) else {
        return false;
    };
    if *id == myself
        || (node.ip == ip
            && node.port == hdr.port
            && node.cport == hdr.cport
            && node.pport == hdr.pport)
    {
        return false;
    }
    node.ip = ip.to_string();
    node.port = hdr.port;
    node.pport = hdr.pport;
    node.cport = hdr.cport;
    node.flags.clear(Flags::NOADDR);
    tracing::warn!("Address updated for node {id}, now {ip}:{}", hdr.port);
    out.drop_links.push(*id);
    if my_master == Some(*id) {
        out.follow = Some(*id);
    }
    true
}

/// Takes the slots `sender` claims with a greater config epoch than their owner's
/// (Redis's `clusterUpdateSlotsConfigWith`). If that leaves this node's master without
/// slots, this node follows the sender; slots this node lost while holding keys have
/// their keys dropped.
fn update_slots(
    state: &mut ClusterState,
    settings: &Settings,
    sender: &NodeId,
    sender_epoch: u64,
    claimed: &[u8; SLOTS / 8],
    out: &mut Outcome,
) {
    let myself = state.myself;
    if *sender == myself {
        return;
    }
    let current_master = if state.me().is_master() {
        Some(myself)
    } else {
        state.me().master
    };
    let (mut sender_slots, mut migrated) = (0, 0);
    let mut new_master = None;
    let mut dirty = Vec::new();
    for slot in 0..SLOTS {
        if claimed[slot / 8] & (1 << (slot % 8)) == 0 {
            continue;
        }
        sender_slots += 1;
        if state.slots[slot] == Some(*sender) || state.importing[slot].is_some() {
            continue;
        }
        let owner_epoch = state.slots[slot]
            .and_then(|o| state.nodes.get(&o))
            .map(|o| o.config_epoch);
        if owner_epoch.is_none_or(|e| e < sender_epoch) {
            if state.slots[slot] == Some(myself) {
                // Its keys, if any, are dropped once the state's lock is released
                // (shards are never locked under it).
                dirty.push(slot);
            }
            if state.slots[slot].is_some() && state.slots[slot] == current_master {
                new_master = Some(*sender);
                migrated += 1;
            }
            state.del_slot(slot);
            state.add_slot(slot, *sender);
            out.save = true;
        }
    }
    let master_empty = current_master.is_some_and(|m| state.slot_count(&m) == 0);
    if new_master.is_some()
        && master_empty
        && (settings.replica_migration || sender_slots == migrated)
    {
        tracing::warn!(
            "Configuration change detected. Reconfiguring myself as a replica of {sender}"
        );
        state.set_my_master(*sender);
        out.follow = Some(*sender);
        out.save = true;
    } else if let Some(grand) = state
        .me()
        .master
        .and_then(|m| state.nodes.get(&m))
        .and_then(|m| m.master)
        .filter(|g| *g != myself)
    {
        // Our master became a replica: follow its master.
        tracing::warn!("I'm a sub-replica! Reconfiguring myself as a replica of {grand}");
        state.set_my_master(grand);
        out.follow = Some(grand);
        out.save = true;
    } else {
        out.drop_slots.extend(dirty);
    }
}

/// Gossip about other nodes (Redis's `clusterProcessGossipSection`): failure reports
/// from masters, fresher PONG times, new nodes to meet.
fn process_gossip(
    state: &mut ClusterState,
    sender: Option<NodeId>,
    gossip: &[Gossip],
    now: u64,
    settings: &Settings,
    out: &mut Outcome,
    ctx: Context,
) {
    let sender_is_master = sender
        .and_then(|s| state.nodes.get(&s))
        .is_some_and(Node::is_master);
    for g in gossip {
        let down = g.flags & (Flags::FAIL | Flags::PFAIL) != 0;
        if state.nodes.contains_key(&g.id) {
            if let (Some(reporter), true) = (sender, sender_is_master && g.id != state.myself) {
                if down {
                    failure::add_report(state, &g.id, reporter, now);
                    if failure::mark_failing_if_needed(state, &g.id, now, settings.node_timeout) {
                        out.broadcast.push(build::fail(state, g.id, ctx));
                    }
                    out.save = true;
                } else {
                    failure::del_report(state, &g.id, &reporter);
                }
            }
            let Some(node) = state.nodes.get_mut(&g.id) else {
                continue;
            };
            if !down
                && node.ping_sent == 0
                && failure::valid_reports(node, now, settings.node_timeout) == 0
            {
                let pong = u64::from(g.pong_received) * 1000;
                if pong <= now + 500 && pong > node.pong_received {
                    node.pong_received = pong;
                }
            }
            if node.flags.any(Flags::FAIL | Flags::PFAIL)
                && g.flags & Flags::NOADDR == 0
                && !down
                && (!node.ip.eq_ignore_ascii_case(&g.ip)
                    || node.port != g.port
                    || node.cport != g.cport)
            {
                node.ip = g.ip.clone();
                node.port = g.port;
                node.pport = g.pport;
                node.cport = g.cport;
                node.flags.clear(Flags::NOADDR);
                out.drop_links.push(g.id);
            }
        } else if sender.is_some()
            && g.flags & Flags::NOADDR == 0
            && state.forgotten.get(&g.id).is_none_or(|until| *until <= now)
        {
            let mut node = Node::new(g.id, &g.ip, g.port, g.cport, g.flags & !Flags::MYSELF, now);
            node.pport = g.pport;
            state.nodes.insert(g.id, node);
            out.save = true;
        }
    }
}
