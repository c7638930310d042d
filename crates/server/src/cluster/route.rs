//! Whether this node may run a command in cluster mode, as Redis's `getNodeByQuery`
//! decides it: all the command's keys (and shard channels) in one slot, that slot served
//! here (or imported here after ASKING, or served by our master to a READONLY client),
//! and the cluster up. Otherwise the client gets Redis's redirection or error.

use bytes::Bytes;
use parking_lot::{RwLockReadGuard, RwLockWriteGuard};
use redline_resp::command::{self, CommandFlags, CommandSpec};

use super::node::NodeId;
use super::state::ClusterState;
use super::{Endpoint, Settings};
use crate::cmd::reply::CmdError;
use crate::cmd::Ctx;

/// Keys of a request in different slots.
pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
/// Several keys of a slot being migrated, not all of them here.
const TRYAGAIN: &str = "TRYAGAIN Multiple keys request during rehashing of slot";
/// The cluster is down.
const DOWN: &str = "CLUSTERDOWN The cluster is down";
/// The cluster is down and the command writes.
const DOWN_RO: &str = "CLUSTERDOWN The cluster is down and only accepts read commands";
/// Nobody serves the slot.
const UNBOUND: &str = "CLUSTERDOWN Hash slot not served";

/// The commands whose channels hash to slots (Redis's `is_pubsubshard`).
fn is_pubsubshard(spec: &CommandSpec) -> bool {
    matches!(spec.name, "spublish" | "ssubscribe" | "sunsubscribe")
}

/// Appends the keys (and shard channels) of one command to `keys` (`pos`: scratch).
fn add_keys<'a>(
    spec: &'static CommandSpec,
    args: &'a [Bytes],
    pos: &mut Vec<usize>,
    keys: &mut Vec<&'a Bytes>,
) {
    pos.clear();
    command::routing_keys_into(spec, args, pos);
    if is_pubsubshard(spec) {
        if let Ok(channels) = command::shard_channels(args) {
            pos.extend(channels);
        }
    }
    keys.extend(pos.iter().filter_map(|&p| args.get(p)));
}

/// Why a command does not run here.
#[derive(Debug)]
pub struct Refusal {
    /// What kind of refusal (scripts word their errors by it).
    pub kind: RefusalKind,
    /// The error the client gets.
    pub error: CmdError,
}

/// Redis's `CLUSTER_REDIR_*` codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// Keys in different slots.
    CrossSlot,
    /// Several keys of a slot being migrated.
    Unstable,
    /// The cluster is down.
    Down,
    /// The cluster is down and the command writes.
    DownReadOnly,
    /// Nobody serves the slot.
    Unbound,
    /// Another node serves the slot.
    Moved,
    /// The key is migrating to another node.
    Ask,
}

fn refuse(kind: RefusalKind, error: CmdError) -> Refusal {
    Refusal { kind, error }
}

/// Held from the route's look at a migrating (or importing) slot's keys until the
/// command has run, so that what the look found is what the command meets: commands on
/// such slots share it, and MIGRATE, which moves keys out from under them, holds it
/// alone for its transfer. Redis gets this order from its single thread.
///
/// Taken before any shard or the replication journal and never by a command inside a
/// script or transaction (those hold their shards already, so nothing moves under them).
pub enum SlotGate<'a> {
    /// A command on a slot being migrated or imported.
    Shared(RwLockReadGuard<'a, ()>),
    /// MIGRATE.
    Exclusive(RwLockWriteGuard<'a, ()>),
}

/// Where a command that runs here runs.
pub struct Routed<'a> {
    /// The slot of its keys, if it has keys.
    pub slot: Option<usize>,
    /// Held until it has run, on a slot being migrated or imported.
    pub gate: Option<SlotGate<'a>>,
}

impl Routed<'_> {
    fn keyless() -> Self {
        Routed {
            slot: None,
            gate: None,
        }
    }
}

/// Checks `spec` (with `args`) from the calling client. `Ok` with the keys' slot (if the
/// command has keys) when it runs here.
pub fn check<'a>(
    ctx: &Ctx<'a>,
    spec: &'static CommandSpec,
    args: &[Bytes],
) -> Result<Routed<'a>, Refusal> {
    let exec = spec.name == "exec";
    if exec && ctx.client.multi.is_none() {
        // EXEC without MULTI fails on its own.
        return Ok(Routed::keyless());
    }
    // The keys (and shard channels) of the command, or of every command EXEC queued:
    // borrowed, as they are only read.
    let mut keys: Vec<&Bytes> = Vec::new();
    let mut pos = Vec::new();
    let mut pubsubshard = is_pubsubshard(spec);
    if exec {
        for queued in ctx.client.multi.iter().flatten() {
            if let Some(queued_spec) = command::resolve(queued) {
                pubsubshard |= is_pubsubshard(queued_spec);
                add_keys(queued_spec, queued, &mut pos, &mut keys);
            }
        }
    } else {
        add_keys(spec, args, &mut pos, &mut keys);
    }
    let Some(&first_key) = keys.first() else {
        return Ok(Routed::keyless());
    };
    let slot = usize::from(redline_resp::slot::key_slot(first_key));
    // Commands without keys (most of those a cluster node answers to tools) never wait
    // for the slot table.
    let mut state = ctx.shared.cluster.state.read();
    // An unserved first slot is reported before the other keys are looked at, as Redis
    // does: `MGET a b` on a node that serves neither is CLUSTERDOWN, not CROSSSLOT.
    let Some(owner) = state.slots[slot] else {
        return Err(refuse(RefusalKind::Unbound, CmdError::Static(UNBOUND)));
    };
    let mut multiple_keys = false;
    for &key in &keys[1..] {
        if key != first_key {
            if usize::from(redline_resp::slot::key_slot(key)) != slot {
                return Err(refuse(RefusalKind::CrossSlot, CmdError::Static(CROSSSLOT)));
            }
            multiple_keys = true;
        }
    }
    let myself = state.myself;
    let migrating = owner == myself && state.migrating[slot].is_some();
    let importing = !migrating && state.importing[slot].is_some();
    let (mut missing, mut existing) = (0usize, 0usize);
    let is_migrate = spec.name == "migrate";
    let mut gate = None;
    if (migrating || importing) && !pubsubshard {
        // The gate and the keys are taken with the state's lock released: shards are
        // never locked under it (a script holds its shards, then reads the state here).
        drop(state);
        let lock = &ctx.shared.cluster.migration_gate;
        if !ctx.nested {
            gate = Some(if is_migrate {
                SlotGate::Exclusive(lock.write())
            } else {
                SlotGate::Shared(lock.read())
            });
        }
        // Expired keys count as missing, as Redis's lookup sees them; nothing is touched.
        // Read through the caller's shards when a script or transaction holds them.
        let db = ctx.shared.store.db(0);
        // MIGRATE is let through whatever its keys (below): no need to look.
        if !is_migrate {
            for key in &keys {
                if ctx.lock_in(0, db.shard_index(key)).peek_live(key) {
                    existing += 1;
                } else {
                    missing += 1;
                }
            }
        }
        state = ctx.shared.cluster.state.read();
    }
    let runs_here = |slot| Ok(Routed { slot, gate });
    // Whether it writes matters only when the cluster is down or for a READONLY client
    // (for a script it is worked out from what it declared, for EXEC from its queue).
    let writes = || crate::cmd::writes(ctx, spec, args);
    if !state.ok {
        let settings = Settings::from_config(&ctx.shared.config.read());
        if pubsubshard {
            if !settings.pubsubshard_when_down {
                return Err(refuse(RefusalKind::Down, CmdError::Static(DOWN)));
            }
        } else if !settings.reads_when_down {
            return Err(refuse(RefusalKind::Down, CmdError::Static(DOWN)));
        } else if !exec && writes() {
            // EXEC is judged by its own flags here, not its queue's (Redis's
            // `getCommandFlags`): each queued write was refused as it came.
            return Err(refuse(RefusalKind::DownReadOnly, CmdError::Static(DOWN_RO)));
        }
    }
    if (migrating || importing) && is_migrate {
        return runs_here(Some(slot));
    }
    if migrating && missing > 0 {
        if existing > 0 {
            return Err(refuse(RefusalKind::Unstable, CmdError::Static(TRYAGAIN)));
        }
        let to = state.migrating[slot].unwrap_or(owner);
        return Err(refuse(
            RefusalKind::Ask,
            redirect(ctx, &state, "ASK", slot, &to),
        ));
    }
    if importing && (ctx.client.asking || spec.flags.contains(CommandFlags::ASKING)) {
        if multiple_keys && missing > 0 {
            return Err(refuse(RefusalKind::Unstable, CmdError::Static(TRYAGAIN)));
        }
        return runs_here(Some(slot));
    }
    let me = state.me();
    if (ctx.client.readonly || pubsubshard)
        && me.is_replica()
        && me.master == Some(owner)
        && !writes()
    {
        return runs_here(Some(slot));
    }
    if owner != myself {
        return Err(refuse(
            RefusalKind::Moved,
            redirect(ctx, &state, "MOVED", slot, &owner),
        ));
    }
    runs_here(Some(slot))
}

/// The error a script's `redis.call` gets instead of a redirection (Redis's
/// `scriptVerifyClusterState`).
pub fn script_error(kind: RefusalKind) -> CmdError {
    match kind {
        RefusalKind::DownReadOnly => CmdError::Static(
            "ERR Script attempted to execute a write command while the cluster is down and readonly",
        ),
        RefusalKind::Down => {
            CmdError::Static("ERR Script attempted to execute a command while the cluster is down")
        }
        // The script's name and line are added when the error ends the script.
        _ => CmdError::Static("ERR Script attempted to access a non local key in a cluster node"),
    }
}

/// A script's command reached a slot other than the one its keys (or first command)
/// used, and the script did not declare `allow-cross-slot-keys`.
pub const SCRIPT_CROSSSLOT: &str =
    "ERR Script attempted to access keys that do not hash to the same slot";

/// `-MOVED slot endpoint:port` or `-ASK ...` to `to`.
fn redirect(ctx: &Ctx<'_>, state: &ClusterState, kind: &str, slot: usize, to: &NodeId) -> CmdError {
    let endpoint = Endpoint::from_config(&ctx.shared.config.read());
    let Some(node) = state.nodes.get(to) else {
        return CmdError::Static(UNBOUND);
    };
    CmdError::Owned(format!(
        "{kind} {slot} {}:{}",
        endpoint_of(node, endpoint),
        node.client_port(plain_client(ctx))
    ))
}

/// Whether this client is a plain one of a `tls-cluster`, which replies name nodes'
/// plain ports to (their announced port is their TLS one).
pub fn plain_client(ctx: &Ctx<'_>) -> bool {
    !ctx.client.tls && ctx.shared.config.read().param_bool("tls-cluster")
}

/// What a node is named by in redirections, CLUSTER SLOTS' first field and CLUSTER
/// SHARDS' `endpoint`: `?` for a hostname it did not announce, empty for
/// `unknown-endpoint` (Redis's `getPreferredEndpoint`).
pub fn endpoint_of(node: &super::node::Node, endpoint: Endpoint) -> &str {
    match endpoint {
        Endpoint::Ip => &node.ip,
        Endpoint::Hostname if !node.hostname.is_empty() => &node.hostname,
        Endpoint::Hostname => "?",
        Endpoint::Unknown => "",
    }
}

/// Clients blocked on keys of a slot this node no longer serves (and does not import)
/// get the redirection, and clients blocked while the cluster is down get CLUSTERDOWN,
/// so none waits for a push that can never come here (Redis's
/// `clusterRedirectBlockedClientIfNeeded`).
pub fn redirect_blocked(shared: &crate::shared::Shared) {
    if !shared.blocking.any() {
        return;
    }
    let endpoint = super::settings(shared).endpoint;
    let tls_cluster = shared.config.read().param_bool("tls-cluster");
    let mut registry = shared.blocking.lock();
    let waiters = registry.waiters();
    if waiters.is_empty() {
        return;
    }
    let state = shared.cluster.state.read();
    let me = state.me();
    let mut counted = crate::cmdstats::Local::default();
    for waiter in waiters {
        let error = if !state.ok {
            Some(DOWN.to_string())
        } else {
            let Some(key) = waiter.keys.first() else {
                continue;
            };
            let slot = usize::from(redline_resp::slot::key_slot(key));
            let owner = state.slots[slot];
            // A READONLY client of a replica may wait on its master's slots.
            let served_here = owner == Some(state.myself)
                || state.importing[slot].is_some()
                || (me.is_replica() && owner.is_some() && owner == me.master);
            match owner.and_then(|o| state.nodes.get(&o)) {
                _ if served_here => None,
                None => Some(UNBOUND.to_string()),
                Some(node) => Some(format!(
                    "MOVED {slot} {}:{}",
                    endpoint_of(node, endpoint),
                    node.client_port(tls_cluster && !waiter.tls)
                )),
            }
        };
        if let Some(error) = error {
            let mut reply = bytes::BytesMut::new();
            redline_resp::encode::write_error(&mut reply, error.as_bytes());
            counted.error(error.as_bytes());
            registry.serve(&waiter, &reply);
        }
    }
    drop(registry);
    shared.cmdstats.absorb(&mut counted);
}
