//! CLUSTER, ASKING, READONLY and READWRITE. With `cluster-enabled no` every one answers
//! Redis's "cluster support disabled"; in cluster mode they read and change
//! [`crate::cluster`]'s state, save it to nodes.conf before answering, and let the bus
//! tell the other nodes.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use redline_resp::command;
use redline_resp::encode;

use super::args::{int, is};
use super::reply::{help, ok, CmdError, CmdResult};
use super::{Ctx, Handler};
use crate::cluster::node::{Node, NodeId};
use crate::cluster::state::{ClusterState, SLOTS};
use crate::cluster::{route, Settings};
use crate::shared::Shared;
use crate::store::Shard;

/// Redis's reply to every cluster command when cluster support is disabled.
const DISABLED: CmdError = CmdError::Static("ERR This instance has cluster support disabled");
const BAD_SLOT: CmdError = CmdError::Static("ERR Invalid or out of range slot");

/// This family's handlers.
pub fn registrations() -> Vec<(&'static str, Handler)> {
    let mut all: Vec<(&'static str, Handler)> = vec![
        ("asking", asking),
        ("readonly", readonly),
        ("readwrite", readwrite),
    ];
    if let Some(cluster) = command::lookup(b"cluster") {
        all.extend(
            cluster
                .subcommands
                .iter()
                .map(|s| (s.name, cluster_command as Handler)),
        );
    }
    all
}

fn asking(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    set_flag(ctx, |client| client.asking = true)
}

fn readonly(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    set_flag(ctx, |client| client.readonly = true)
}

fn readwrite(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    set_flag(ctx, |client| client.readonly = false)
}

/// ASKING, READONLY, READWRITE: a connection flag, in cluster mode only.
fn set_flag(
    ctx: &mut Ctx<'_>,
    set: impl FnOnce(&mut crate::net::client::ClientState),
) -> CmdResult {
    if !ctx.shared.cluster.enabled() {
        return Err(DISABLED);
    }
    set(ctx.client);
    ok(ctx.out);
    Ok(())
}

const HELP: &[&str] = &[
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "HELP",
    "    Prints this help.",
];

fn cluster_command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if !ctx.shared.cluster.enabled() {
        return Err(DISABLED);
    }
    let sub = args[1].to_ascii_lowercase();
    match sub.as_slice() {
        b"help" => help(ctx.out, HELP),
        b"myid" => {
            let id = ctx.shared.cluster.state.read().myself;
            encode::write_bulk(ctx.out, id.as_bytes());
        }
        b"nodes" => {
            let plain = route::plain_client(ctx);
            let text = ctx.shared.cluster.state.read().describe_all(0, plain);
            encode::write_verbatim(ctx.out, ctx.client.protocol, b"txt", text.as_bytes());
        }
        b"info" => {
            let cluster = &ctx.shared.cluster;
            let text = info(&cluster.state.read(), &cluster.bus);
            encode::write_verbatim(ctx.out, ctx.client.protocol, b"txt", text.as_bytes());
        }
        b"slots" => slots(ctx),
        b"shards" => shards(ctx),
        b"keyslot" => {
            encode::write_integer(ctx.out, i64::from(redline_resp::slot::key_slot(&args[2])));
        }
        b"countkeysinslot" => {
            let slot = int(&args[2])?;
            let slot = usize::try_from(slot)
                .ok()
                .filter(|&s| s < SLOTS)
                .ok_or(CmdError::Static("ERR Invalid slot"))?;
            encode::write_integer(
                ctx.out,
                count_keys_in_slot(&mut ctx.lock_slot(slot), shard_count(ctx), slot) as i64,
            );
        }
        b"getkeysinslot" => {
            let slot = int(&args[2])?;
            let max = int(&args[3])?;
            let slot = usize::try_from(slot)
                .ok()
                .filter(|&s| s < SLOTS && max >= 0)
                .ok_or(CmdError::Static("ERR Invalid slot or number of keys"))?;
            let keys = keys_in_slot(
                &mut ctx.lock_slot(slot),
                shard_count(ctx),
                slot,
                usize::try_from(max).unwrap_or(0),
            );
            encode::write_array_len(ctx.out, keys.len());
            for key in keys {
                encode::write_bulk(ctx.out, &key);
            }
        }
        b"addslots" | b"delslots" => {
            let del = sub == b"delslots";
            let mut wanted = Vec::with_capacity(args.len() - 2);
            for arg in &args[2..] {
                wanted.push(parse_slot(arg)?);
            }
            change_slots(ctx.shared, del, wanted.iter().map(|&s| (s, s)))?;
            ok(ctx.out);
        }
        b"addslotsrange" | b"delslotsrange" => {
            if args.len() % 2 == 1 {
                return Err(CmdError::Owned(format!(
                    "ERR wrong number of arguments for 'cluster|{}' command",
                    String::from_utf8_lossy(&sub)
                )));
            }
            let del = sub == b"delslotsrange";
            let mut ranges = Vec::new();
            for pair in args[2..].chunks(2) {
                let (start, end) = (parse_slot(&pair[0])?, parse_slot(&pair[1])?);
                if start > end {
                    return Err(CmdError::Owned(format!(
                        "ERR start slot number {start} is greater than end slot number {end}"
                    )));
                }
                ranges.push((start, end));
            }
            change_slots(ctx.shared, del, ranges.into_iter())?;
            ok(ctx.out);
        }
        b"flushslots" => {
            if ctx.db_len(0) != 0 {
                return Err(CmdError::Static(
                    "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.",
                ));
            }
            changed(ctx.shared, |state| {
                let me = state.myself;
                state.del_node_slots(&me);
            });
            ok(ctx.out);
        }
        b"setslot" => {
            setslot(ctx, args)?;
            ok(ctx.out);
        }
        b"bumpepoch" => {
            let (bumped, epoch) = {
                let mut state = ctx.shared.cluster.state.write();
                let bumped = state.bump_epoch_without_consensus();
                (bumped, state.me().config_epoch)
            };
            let _ = ctx.shared.cluster.save_synced();
            let word = if bumped { "BUMPED" } else { "STILL" };
            encode::write_simple(ctx.out, format!("{word} {epoch}").as_bytes());
        }
        b"saveconfig" => {
            ctx.shared.cluster.save_synced().map_err(|e| {
                CmdError::Owned(format!("ERR error saving the cluster node config: {e}"))
            })?;
            ok(ctx.out);
        }
        b"meet" if args.len() == 4 || args.len() == 5 => {
            meet(ctx.shared, args)?;
            ok(ctx.out);
        }
        b"forget" if args.len() == 3 => {
            forget(ctx.shared, &args[2])?;
            ok(ctx.out);
        }
        b"replicate" if args.len() == 3 => {
            replicate(ctx, &args[2])?;
            ok(ctx.out);
        }
        b"replicas" | b"slaves" if args.len() == 3 => {
            let plain = route::plain_client(ctx);
            let state = ctx.shared.cluster.state.read();
            let node = known(&state, &args[2])?;
            if node.is_replica() {
                return Err(CmdError::Static("ERR The specified node is not a master"));
            }
            let replicas = state.replicas_of(&node.id);
            encode::write_array_len(ctx.out, replicas.len());
            for replica in replicas {
                let line = state.describe_to(replica, plain);
                encode::write_bulk(ctx.out, line.as_bytes());
            }
        }
        b"count-failure-reports" if args.len() == 3 => {
            let state = ctx.shared.cluster.state.read();
            let node = known(&state, &args[2])?;
            let valid = crate::cluster::bus::failure::valid_reports(
                node,
                crate::store::now_ms(),
                node_timeout(ctx.shared),
            );
            encode::write_integer(ctx.out, valid as i64);
        }
        b"failover" if args.len() <= 3 => {
            let (force, takeover) = match args.get(2) {
                None => (false, false),
                Some(a) if is(a, "force") => (true, false),
                Some(a) if is(a, "takeover") => (true, true),
                Some(_) => return Err(CmdError::Static("ERR syntax error")),
            };
            crate::cluster::bus::failover::manual(ctx.shared, force, takeover)?;
            ok(ctx.out);
        }
        b"set-config-epoch" if args.len() == 3 => {
            let epoch = int(&args[2])?;
            set_config_epoch(ctx.shared, epoch)?;
            ok(ctx.out);
        }
        b"reset" if args.len() <= 3 => {
            let hard = match args.get(2) {
                None => false,
                Some(a) if is(a, "hard") => true,
                Some(a) if is(a, "soft") => false,
                Some(_) => return Err(CmdError::Static("ERR syntax error")),
            };
            reset(ctx, hard)?;
            ok(ctx.out);
        }
        b"links" => crate::cluster::bus::links::describe(ctx.shared, ctx.out, ctx.client.protocol),
        _ => return Err(super::reply::subcommand_syntax("cluster", &args[1])),
    }
    Ok(())
}

fn node_timeout(shared: &Shared) -> u64 {
    u64::try_from(shared.config.read().param_int("cluster-node-timeout")).unwrap_or(0)
}

fn parse_slot(arg: &[u8]) -> Result<usize, CmdError> {
    let slot = int(arg).map_err(|_| BAD_SLOT)?;
    usize::try_from(slot)
        .ok()
        .filter(|&s| s < SLOTS)
        .ok_or(BAD_SLOT)
}

/// The node a client named, or Redis's "Unknown node".
fn known<'s>(state: &'s ClusterState, name: &[u8]) -> Result<&'s Node, CmdError> {
    state
        .lookup(name)
        .ok_or_else(|| super::reply::quoting("ERR Unknown node ", name, usize::MAX, ""))
}

/// Applies a change of configuration and recomputes the cluster's state; the change is
/// saved before the client hears back ([`crate::cluster::Cluster::save_changes`]).
pub(crate) fn changed<R>(shared: &Shared, change: impl FnOnce(&mut ClusterState) -> R) -> R {
    let settings = Settings::from_config(&shared.config.read());
    let (result, lost_slots) = {
        let mut state = shared.cluster.state.write();
        let result = change(&mut state);
        state.update_state(
            crate::store::now_ms(),
            settings.full_coverage,
            settings.node_timeout,
        );
        (result, std::mem::take(&mut state.lost_slots))
    };
    shared.cluster.note_change();
    shared.pubsub.drop_shard_slots(&lost_slots);
    result
}

/// ADDSLOTS, DELSLOTS and their RANGE forms: every slot checked first (busy or already
/// unassigned, named twice), then all applied.
fn change_slots(
    shared: &Shared,
    del: bool,
    ranges: impl Iterator<Item = (usize, usize)>,
) -> Result<(), CmdError> {
    let ranges: Vec<(usize, usize)> = ranges.collect();
    {
        let state = shared.cluster.state.read();
        let mut named = vec![false; SLOTS];
        for &(start, end) in &ranges {
            #[allow(clippy::needless_range_loop)] // the slot number goes in the errors
            for slot in start..=end {
                if del && state.slots[slot].is_none() {
                    return Err(CmdError::Owned(format!(
                        "ERR Slot {slot} is already unassigned"
                    )));
                }
                if !del && state.slots[slot].is_some() {
                    return Err(CmdError::Owned(format!("ERR Slot {slot} is already busy")));
                }
                if std::mem::replace(&mut named[slot], true) {
                    return Err(CmdError::Owned(format!(
                        "ERR Slot {slot} specified multiple times"
                    )));
                }
            }
        }
    }
    changed(shared, |state| {
        let me = state.myself;
        for (start, end) in ranges {
            for slot in start..=end {
                if del {
                    state.del_slot(slot);
                } else {
                    // This node owns it now: it is not importing it any more.
                    state.importing[slot] = None;
                    state.add_slot(slot, me);
                }
            }
        }
    });
    Ok(())
}

/// CLUSTER SETSLOT slot IMPORTING|MIGRATING|STABLE|NODE.
fn setslot(ctx: &Ctx<'_>, args: &[Bytes]) -> Result<(), CmdError> {
    let shared = ctx.shared;
    if shared.cluster.state.read().me().is_replica() {
        return Err(CmdError::Static(
            "ERR Please use SETSLOT only with masters.",
        ));
    }
    let slot = parse_slot(&args[2])?;
    let action = args[3].to_ascii_lowercase();
    let unknown = |name: &[u8], words: &str| {
        super::reply::quoting(&format!("ERR {words} "), name, usize::MAX, "")
    };
    let master_named = |state: &ClusterState, name: &[u8], words: &str| {
        let node = state.lookup(name).ok_or_else(|| unknown(name, words))?;
        if node.is_replica() {
            return Err(CmdError::Static("ERR Target node is not a master"));
        }
        Ok(node.id)
    };
    match (action.as_slice(), args.len()) {
        (b"migrating", 5) => {
            let target = {
                let state = shared.cluster.state.read();
                if state.slots[slot] != Some(state.myself) {
                    return Err(CmdError::Owned(format!(
                        "ERR I'm not the owner of hash slot {slot}"
                    )));
                }
                master_named(&state, &args[4], "I don't know about node")?
            };
            changed(shared, |state| state.migrating[slot] = Some(target));
        }
        (b"importing", 5) => {
            let source = {
                let state = shared.cluster.state.read();
                if state.slots[slot] == Some(state.myself) {
                    return Err(CmdError::Owned(format!(
                        "ERR I'm already the owner of hash slot {slot}"
                    )));
                }
                master_named(&state, &args[4], "I don't know about node")?
            };
            changed(shared, |state| state.importing[slot] = Some(source));
        }
        (b"stable", 4) => changed(shared, |state| {
            state.migrating[slot] = None;
            state.importing[slot] = None;
        }),
        (b"node", 5) => {
            let (target, mine) = {
                let state = shared.cluster.state.read();
                let target = master_named(&state, &args[4], "Unknown node")?;
                (target, state.slots[slot] == Some(state.myself))
            };
            let keys = count_keys_in_slot(&mut ctx.lock_slot(slot), shard_count(ctx), slot);
            let myself = shared.cluster.state.read().myself;
            if mine && target != myself && keys != 0 {
                return Err(CmdError::Owned(format!("ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot.")));
            }
            let migration = crate::cluster::settings(shared).replica_migration;
            let (follow, closed_import) = changed(shared, |state| {
                if keys == 0 {
                    state.migrating[slot] = None;
                }
                let importing = state.importing[slot].is_some();
                state.add_slot(slot, target);
                let mut follow = None;
                if mine && target != myself && state.slot_count(&myself) == 0 && migration {
                    tracing::warn!(
                        "Configuration change detected. Reconfiguring myself as a replica of {target}"
                    );
                    state.set_my_master(target);
                    follow = Some(target);
                }
                let closed_import = target == myself && importing;
                if closed_import {
                    if state.bump_epoch_without_consensus() {
                        tracing::warn!("configEpoch updated after importing slot {slot}");
                    }
                    state.importing[slot] = None;
                }
                (follow, closed_import)
            });
            if let Some(master) = follow {
                crate::cluster::bus::replicate_master(shared, master);
            }
            // A slot imported here has a new epoch: every node hears of it at once. Other
            // changes travel with the next pings, as in Redis (a pipeline of SETSLOTs
            // would otherwise send a message to every node per command).
            if closed_import {
                crate::cluster::bus::broadcast_pong(shared);
            }
        }
        _ => {
            return Err(CmdError::Static(
                "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP",
            ))
        }
    }
    Ok(())
}

/// CLUSTER MEET ip port [bus-port]: a handshake the bus starts at its next turn.
fn meet(shared: &Shared, args: &[Bytes]) -> Result<(), CmdError> {
    let text = |a: &Bytes| String::from_utf8_lossy(a).into_owned();
    let port = int(&args[3]).map_err(|_| {
        CmdError::Owned(format!(
            "ERR Invalid TCP base port specified: {}",
            text(&args[3])
        ))
    })?;
    let cport = match args.get(4) {
        Some(a) => int(a).map_err(|_| {
            CmdError::Owned(format!("ERR Invalid TCP bus port specified: {}", text(a)))
        })?,
        None => port + i64::from(crate::cluster::BUS_PORT_OFFSET),
    };
    let invalid = || {
        CmdError::Owned(format!(
            "ERR Invalid node address specified: {}:{}",
            text(&args[2]),
            text(&args[3])
        ))
    };
    let ip: std::net::IpAddr = text(&args[2]).parse().map_err(|_| invalid())?;
    let (Ok(port), Ok(cport)) = (u16::try_from(port), u16::try_from(cport)) else {
        return Err(invalid());
    };
    if port == 0 || cport == 0 {
        return Err(invalid());
    }
    crate::cluster::bus::start_handshake(shared, &ip.to_string(), port, cport);
    Ok(())
}

fn forget(shared: &Shared, name: &[u8]) -> Result<(), CmdError> {
    let id = {
        let state = shared.cluster.state.read();
        let node = known(&state, name)?;
        if node.id == state.myself {
            return Err(CmdError::Static(
                "ERR I tried hard but I can't forget myself...",
            ));
        }
        let me = state.me();
        if me.is_replica() && me.master == Some(node.id) {
            return Err(CmdError::Static("ERR Can't forget my master!"));
        }
        node.id
    };
    changed(shared, |state| {
        // Gossip does not bring it back for a minute, as in Redis.
        state.forgotten.insert(
            id,
            crate::store::now_ms() + crate::cluster::bus::FORGET_TTL_MS,
        );
        state.del_node(&id);
    });
    shared.cluster.bus.forget(&id);
    Ok(())
}

fn replicate(ctx: &Ctx<'_>, name: &[u8]) -> Result<(), CmdError> {
    let shared = ctx.shared;
    // Shards are never locked under the cluster state's lock (a script holds its
    // shards and then reads the state).
    let has_keys = ctx.db_len(0) != 0;
    let master = {
        let state = shared.cluster.state.read();
        let node = known(&state, name)?;
        if node.id == state.myself {
            return Err(CmdError::Static("ERR Can't replicate myself"));
        }
        if node.is_replica() {
            return Err(CmdError::Static(
                "ERR I can only replicate a master, not a replica.",
            ));
        }
        let me = state.me();
        if me.is_master() && (state.slot_count(&me.id) != 0 || has_keys) {
            return Err(CmdError::Static(
                "ERR To set a master the node must be empty and without assigned slots.",
            ));
        }
        node.id
    };
    changed(shared, |state| state.set_my_master(master));
    crate::cluster::bus::replicate_master(shared, master);
    Ok(())
}

fn set_config_epoch(shared: &Shared, epoch: i64) -> Result<(), CmdError> {
    let Ok(epoch) = u64::try_from(epoch) else {
        return Err(CmdError::Owned(format!(
            "ERR Invalid config epoch specified: {epoch}"
        )));
    };
    {
        let state = shared.cluster.state.read();
        if state.nodes.len() > 1 {
            return Err(CmdError::Static("ERR The user can assign a config epoch only when the node does not know any other node."));
        }
        if state.me().config_epoch != 0 {
            return Err(CmdError::Static(
                "ERR Node config epoch is already non-zero",
            ));
        }
    }
    changed(shared, |state| {
        state.me_mut().config_epoch = epoch;
        state.current_epoch = state.current_epoch.max(epoch);
    });
    tracing::warn!("configEpoch set to {epoch} via CLUSTER SET-CONFIG-EPOCH");
    Ok(())
}

/// CLUSTER RESET: forget every other node and every slot; a replica becomes an empty
/// master; HARD also zeroes the epochs and takes a new name.
fn reset(ctx: &mut Ctx<'_>, hard: bool) -> Result<(), CmdError> {
    let shared = ctx.shared;
    let replica = shared.cluster.state.read().me().is_replica();
    if !replica && ctx.db_len(0) != 0 {
        return Err(CmdError::Static(
            "ERR CLUSTER RESET can't be called with master nodes containing keys",
        ));
    }
    if replica {
        crate::repl::promote(shared);
        super::connection::clear_db(ctx, 0, false);
        // Emptied as Redis's `emptyData` empties: tracking clients drop every key, and
        // the streams clients wait on are signalled once the command is over.
        shared.tracking.invalidate_all(shared);
        let emptied = crate::store::ready::Replaced::Emptied(Some(0));
        super::blocking::note_replaced(ctx, emptied);
    }
    let others = changed(shared, |state| {
        state.set_me_master();
        state.close_all_slots();
        for slot in 0..SLOTS {
            state.del_slot(slot);
        }
        let others: Vec<NodeId> = state
            .nodes
            .keys()
            .filter(|id| **id != state.myself)
            .copied()
            .collect();
        for id in &others {
            state.del_node(id);
        }
        if hard {
            state.current_epoch = 0;
            state.last_vote_epoch = 0;
            state.me_mut().config_epoch = 0;
            let old = state.myself;
            let new = NodeId::random();
            state.rename(&old, new);
            state.myself = new;
            tracing::warn!("Node hard reset, now I'm {new}");
        }
        others
    });
    for id in others {
        shared.cluster.bus.forget(&id);
    }
    Ok(())
}

/// CLUSTER INFO.
fn info(state: &ClusterState, bus: &crate::cluster::bus::Bus) -> String {
    use std::fmt::Write;
    let (mut assigned, mut ok, mut pfail, mut fail) = (0, 0, 0, 0);
    for owner in state.slots.iter().flatten() {
        assigned += 1;
        match state.nodes.get(owner) {
            Some(n) if n.failed() => fail += 1,
            Some(n) if n.timed_out() => pfail += 1,
            _ => ok += 1,
        }
    }
    let mut text = format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\ncluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\ncluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\n",
        if state.ok { "ok" } else { "fail" },
        state.nodes.len(),
        state.size,
        state.current_epoch,
        state.my_epoch(),
    );
    let names = crate::cluster::bus::message::TYPE_NAMES;
    let sent = bus
        .sent
        .each_ref()
        .map(|count| count.load(Ordering::Relaxed));
    for (counts, way) in [(&sent, "sent"), (&state.messages_received, "received")] {
        for (name, count) in names.iter().zip(counts.iter()).filter(|(_, c)| **c != 0) {
            let _ = write!(text, "cluster_stats_messages_{name}_{way}:{count}\r\n");
        }
        let _ = write!(
            text,
            "cluster_stats_messages_{way}:{}\r\n",
            counts.iter().sum::<u64>()
        );
    }
    let _ = write!(
        text,
        "total_cluster_links_buffer_limit_exceeded:{}\r\n",
        bus.buffer_limit_exceeded.load(Ordering::Relaxed)
    );
    text
}

/// CLUSTER SLOTS: each range of slots with its master and its available replicas.
fn slots(ctx: &mut Ctx<'_>) {
    let endpoint = crate::cluster::settings(ctx.shared).endpoint;
    let plain = route::plain_client(ctx);
    let state = ctx.shared.cluster.state.read();
    let mut ranges: Vec<(usize, usize, NodeId)> = Vec::new();
    for (slot, owner) in state.slots.iter().enumerate() {
        let Some(owner) = owner else { continue };
        match ranges.last_mut() {
            Some((_, end, id)) if *id == *owner && *end + 1 == slot => *end = slot,
            _ => ranges.push((slot, slot, *owner)),
        }
    }
    let proto = ctx.client.protocol;
    encode::write_array_len(ctx.out, ranges.len());
    for (start, end, owner) in ranges {
        let Some(master) = state.nodes.get(&owner) else {
            encode::write_array_len(ctx.out, 2);
            encode::write_integer(ctx.out, start as i64);
            encode::write_integer(ctx.out, end as i64);
            continue;
        };
        let replicas: Vec<&Node> = state
            .replicas_of(&owner)
            .into_iter()
            .filter(|r| replica_available(&state, r, ctx.shared))
            .collect();
        encode::write_array_len(ctx.out, 3 + replicas.len());
        encode::write_integer(ctx.out, start as i64);
        encode::write_integer(ctx.out, end as i64);
        for node in std::iter::once(master).chain(replicas) {
            node_entry(ctx.out, proto, node, endpoint, plain);
        }
    }
}

/// A replica is listed once it is not failed and has data (a non-zero offset).
fn replica_available(state: &ClusterState, node: &Node, shared: &Shared) -> bool {
    !node.failed() && offset_of(state, node, shared) != 0
}

fn offset_of(state: &ClusterState, node: &Node, shared: &Shared) -> u64 {
    if node.id == state.myself {
        shared.repl.journal.offset()
    } else {
        node.repl_offset
    }
}

/// One node of CLUSTER SLOTS: endpoint, port, name, and the other endpoints.
fn node_entry(
    out: &mut bytes::BytesMut,
    proto: redline_resp::Protocol,
    node: &Node,
    endpoint: crate::cluster::Endpoint,
    plain_client: bool,
) {
    use crate::cluster::Endpoint;
    encode::write_array_len(out, 4);
    match endpoint {
        Endpoint::Unknown => encode::write_null_bulk(out, proto),
        _ => encode::write_bulk(out, route::endpoint_of(node, endpoint).as_bytes()),
    }
    encode::write_integer(out, i64::from(node.client_port(plain_client)));
    encode::write_bulk(out, node.id.as_bytes());
    let mut extra: Vec<(&str, &str)> = Vec::new();
    if endpoint != Endpoint::Ip {
        extra.push(("ip", &node.ip));
    }
    if endpoint != Endpoint::Hostname && !node.hostname.is_empty() {
        extra.push(("hostname", &node.hostname));
    }
    encode::write_map_len(out, proto, extra.len());
    for (name, value) in extra {
        encode::write_bulk(out, name.as_bytes());
        encode::write_bulk(out, value.as_bytes());
    }
}

/// CLUSTER SHARDS: each master with its slot ranges and its nodes' details.
fn shards(ctx: &mut Ctx<'_>) {
    let endpoint = crate::cluster::settings(ctx.shared).endpoint;
    let tls_cluster = ctx.shared.config.read().param_bool("tls-cluster");
    let state = ctx.shared.cluster.state.read();
    let proto = ctx.client.protocol;
    let masters: Vec<&Node> = state.nodes.values().filter(|n| n.is_master()).collect();
    encode::write_array_len(ctx.out, masters.len());
    for master in masters {
        encode::write_map_len(ctx.out, proto, 2);
        encode::write_bulk(ctx.out, b"slots");
        let ranges = state.slot_ranges(&master.id);
        encode::write_array_len(ctx.out, ranges.len() * 2);
        for (start, end) in ranges {
            encode::write_integer(ctx.out, start as i64);
            encode::write_integer(ctx.out, end as i64);
        }
        encode::write_bulk(ctx.out, b"nodes");
        let nodes: Vec<&Node> = std::iter::once(master)
            .chain(state.replicas_of(&master.id))
            .collect();
        encode::write_array_len(ctx.out, nodes.len());
        for node in nodes {
            let offset = offset_of(&state, node, ctx.shared);
            let mut fields: Vec<(&str, Field)> =
                vec![("id", Field::Text(node.id.as_str().into_owned()))];
            // With `tls-cluster` a node's port is its TLS one and pport its plain one.
            let (plain_port, tls_port) = if tls_cluster {
                (node.pport, node.port)
            } else {
                (node.port, 0)
            };
            if plain_port != 0 {
                fields.push(("port", Field::Int(i64::from(plain_port))));
            }
            if tls_port != 0 {
                fields.push(("tls-port", Field::Int(i64::from(tls_port))));
            }
            fields.extend([
                ("ip", Field::Text(node.ip.clone())),
                (
                    "endpoint",
                    Field::Text(route::endpoint_of(node, endpoint).to_string()),
                ),
            ]);
            if !node.hostname.is_empty() {
                fields.push(("hostname", Field::Text(node.hostname.clone())));
            }
            let health = if node.failed() {
                "fail"
            } else if node.is_replica() && offset == 0 {
                "loading"
            } else {
                "online"
            };
            let role = if node.is_replica() {
                "replica"
            } else {
                "master"
            };
            fields.push(("role", Field::Text(role.into())));
            fields.push((
                "replication-offset",
                Field::Int(i64::try_from(offset).unwrap_or(i64::MAX)),
            ));
            fields.push(("health", Field::Text(health.into())));
            encode::write_map_len(ctx.out, proto, fields.len());
            for (name, value) in fields {
                encode::write_bulk(ctx.out, name.as_bytes());
                match value {
                    Field::Text(text) => encode::write_bulk(ctx.out, text.as_bytes()),
                    Field::Int(n) => encode::write_integer(ctx.out, n),
                }
            }
        }
    }
}

enum Field {
    Text(String),
    Int(i64),
}

/// Keys of database 0 in `slot`, expired ones not yet reclaimed included (Redis's
/// `countKeysInSlot`). The slot lies whole in one shard, `shard`, of `shards`.
pub(crate) fn count_keys_in_slot(shard: &mut Shard, shards: usize, slot: usize) -> usize {
    u16::try_from(slot).map_or(0, |slot| shard.slot_count(shards, slot))
}

/// The shard count of database 0 (the one cluster mode serves).
fn shard_count(ctx: &Ctx<'_>) -> usize {
    ctx.shared.store.db(0).shard_count()
}

/// Up to `max` keys of database 0 in `slot`, held by `shard` of `shards`.
pub(crate) fn keys_in_slot(
    shard: &mut Shard,
    shards: usize,
    slot: usize,
    max: usize,
) -> Vec<Vec<u8>> {
    u16::try_from(slot).map_or_else(|_| Vec::new(), |slot| shard.keys_in_slot(shards, slot, max))
}
