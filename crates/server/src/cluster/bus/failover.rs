//! Replica promotion (Redis's `clusterHandleSlaveFailover` and its manual form): when a
//! master is FAIL, its replicas wait a delay by rank (the most up to date first), ask the
//! masters for votes with a new epoch, and the one that gets a majority takes the slots
//! with that epoch. CLUSTER FAILOVER does it on request: the master pauses its writes
//! (MFSTART), the replica catches up to the master's offset, then asks for votes that
//! masters grant even though its master is not failed (FORCEACK); TAKEOVER skips the
//! votes.

use super::super::node::NodeId;
use super::super::state::ClusterState;
use super::build::{self, Context};
use super::message::{self, Header};
use crate::cmd::reply::CmdError;
use crate::shared::Shared;

/// How long a manual failover may take (Redis's `CLUSTER_MF_TIMEOUT`).
const MF_TIMEOUT_MS: u64 = 5000;
/// The master's pause lasts twice that (`CLUSTER_MF_PAUSE_MULT`).
const MF_PAUSE_MULT: u64 = 2;

/// Election and manual failover state.
#[derive(Debug, Default, Clone)]
pub struct Election {
    /// When this replica asks (or asked) for votes.
    pub auth_time: u64,
    /// Votes received for the current election.
    pub auth_count: usize,
    /// Whether the request went out.
    pub auth_sent: bool,
    /// This replica's rank among its master's replicas.
    pub auth_rank: u64,
    /// The epoch the votes are asked for.
    pub auth_epoch: u64,
    /// A manual failover's deadline (0: none).
    pub mf_end: u64,
    /// On a master: the replica doing the manual failover.
    pub mf_replica: Option<NodeId>,
    /// On a replica: the master's offset to reach (from its paused PING).
    pub mf_master_offset: Option<u64>,
    /// On a replica: caught up, votes may be asked.
    pub mf_can_start: bool,
}

impl Election {
    /// Ends a manual failover; true if this node, a master, had paused for one.
    pub fn reset_manual(&mut self) -> bool {
        let paused = self.mf_replica.take().is_some();
        self.mf_end = 0;
        self.mf_can_start = false;
        self.mf_master_offset = None;
        paused
    }
}

/// A replica asks for this master's vote (Redis's `clusterSendFailoverAuthIfNeeded`):
/// the ACK to send, if the vote is granted.
pub fn on_auth_request(
    state: &mut ClusterState,
    requester: &NodeId,
    request: &Header,
    now: u64,
    node_timeout: u64,
    ctx: Context,
) -> Option<Vec<u8>> {
    let myself = state.myself;
    if state.me().is_replica() || state.slot_count(&myself) == 0 {
        return None;
    }
    if request.current_epoch < state.current_epoch || state.last_vote_epoch == state.current_epoch {
        return None;
    }
    let node = state.nodes.get(requester)?;
    let force = request.mflags[0] & message::FLAG0_FORCEACK != 0;
    let master_id = node.master?;
    if node.is_master() {
        return None;
    }
    let master = state.nodes.get(&master_id)?;
    if !master.failed() && !force {
        return None;
    }
    if now.saturating_sub(master.voted_time) < node_timeout * 2 {
        return None;
    }
    // No vote for a replica whose view of a claimed slot is older than ours.
    for slot in 0..super::super::state::SLOTS {
        if request.slots[slot / 8] & (1 << (slot % 8)) == 0 {
            continue;
        }
        let Some(owner) = state.slots[slot].and_then(|o| state.nodes.get(&o)) else {
            continue;
        };
        if owner.config_epoch > request.config_epoch {
            return None;
        }
    }
    state.last_vote_epoch = state.current_epoch;
    if let Some(master) = state.nodes.get_mut(&master_id) {
        master.voted_time = now;
    }
    tracing::info!(
        "Failover auth granted to {requester} for epoch {}",
        state.current_epoch
    );
    Some(build::bare(state, message::FAILOVER_AUTH_ACK, ctx, 0))
}

/// A master's vote arrived.
pub fn on_auth_ack(state: &mut ClusterState, voter: &NodeId, voter_epoch: u64) {
    let serves = state.slot_count(voter) != 0;
    let master = state.nodes.get(voter).is_some_and(|n| n.is_master());
    if master && serves && voter_epoch >= state.election.auth_epoch {
        state.election.auth_count += 1;
    }
}

/// Our replica asks for a manual failover: pause writes until it is done.
pub fn on_mfstart(shared: &Shared, state: &mut ClusterState, replica: NodeId, now: u64) {
    state.election.reset_manual();
    state.election.mf_end = now + MF_TIMEOUT_MS;
    state.election.mf_replica = Some(replica);
    let until = tokio::time::Instant::now()
        + std::time::Duration::from_millis(MF_TIMEOUT_MS * MF_PAUSE_MULT);
    shared.pause.pause(until, crate::pause::PauseMode::Write);
    tracing::warn!("Manual failover requested by replica {replica}.");
}

/// This replica's rank: how many of its master's other replicas are further ahead.
fn rank(state: &ClusterState, my_offset: u64) -> u64 {
    let Some(master) = state.me().master else {
        return 0;
    };
    state
        .replicas_of(&master)
        .iter()
        .filter(|r| r.id != state.myself && !r.flags.any(super::super::node::Flags::NOFAILOVER))
        .filter(|r| r.repl_offset > my_offset)
        .count() as u64
}

/// What the failover cron decided.
#[derive(Debug, Default)]
pub struct Step {
    /// Messages to every node.
    pub broadcast: Vec<Vec<u8>>,
    /// This replica won: it is a master now.
    pub promoted: bool,
    /// A PONG to every node now.
    pub pong_all: bool,
    /// The configuration changed.
    pub save: bool,
    /// A manual failover ended on this master: lift its pause.
    pub unpause: bool,
}

/// The failover part of the cron, on this node's state. `link_age_ms` is how long the
/// link to the master has been silent or down.
pub fn cron(
    state: &mut ClusterState,
    settings: &super::super::Settings,
    now: u64,
    my_offset: u64,
    link_age_ms: u64,
    ping_period_ms: u64,
    ctx: Context,
) -> Step {
    let mut step = Step::default();
    // A manual failover that timed out ends.
    if state.election.mf_end != 0 && state.election.mf_end < now {
        tracing::warn!("Manual failover timed out.");
        step.unpause = state.election.reset_manual();
    }
    // A replica doing a manual failover may start once it processed the master's offset.
    if state.election.mf_end != 0
        && !state.election.mf_can_start
        && state
            .election
            .mf_master_offset
            .is_some_and(|o| my_offset >= o)
    {
        state.election.mf_can_start = true;
        tracing::warn!("All master replication stream processed, manual failover can start.");
    }
    let manual = state.election.mf_end != 0 && state.election.mf_can_start;
    let me = state.me();
    let Some(master_id) = me.master.filter(|_| me.is_replica()) else {
        return step;
    };
    let Some(master) = state.nodes.get(&master_id) else {
        return step;
    };
    if (!manual && (!master.failed() || settings.no_failover)) || state.slot_count(&master_id) == 0
    {
        return step;
    }
    let node_timeout = settings.node_timeout;
    let mut data_age = link_age_ms;
    if data_age > node_timeout {
        data_age -= node_timeout;
    }
    if settings.validity_factor != 0
        && data_age > ping_period_ms + node_timeout * settings.validity_factor
        && !manual
    {
        return step;
    }
    let auth_timeout = (node_timeout * 2).max(2000);
    let auth_retry = auth_timeout * 2;
    let auth_age = now.saturating_sub(state.election.auth_time);
    if auth_age > auth_retry {
        let e = &mut state.election;
        e.auth_count = 0;
        e.auth_sent = false;
        let r = rank(state, my_offset);
        let e = &mut state.election;
        e.auth_rank = r;
        e.auth_time = now + 500 + fastrand::u64(..500) + r * 1000;
        if e.mf_end != 0 {
            e.auth_time = now;
            e.auth_rank = 0;
        }
        tracing::warn!(
            "Start of election delayed for {} milliseconds (rank #{}, offset {my_offset}).",
            e.auth_time.saturating_sub(now),
            e.auth_rank
        );
        step.pong_all = true;
        return step;
    }
    if !state.election.auth_sent && state.election.mf_end == 0 {
        let r = rank(state, my_offset);
        let e = &mut state.election;
        if r > e.auth_rank {
            e.auth_time += (r - e.auth_rank) * 1000;
            e.auth_rank = r;
        }
    }
    if now < state.election.auth_time || auth_age > auth_timeout {
        return step;
    }
    if !state.election.auth_sent {
        state.current_epoch += 1;
        state.election.auth_epoch = state.current_epoch;
        tracing::warn!(
            "Starting a failover election for epoch {}.",
            state.current_epoch
        );
        let force = if state.election.mf_end != 0 {
            message::FLAG0_FORCEACK
        } else {
            0
        };
        let request = build::bare(state, message::FAILOVER_AUTH_REQUEST, ctx, force);
        step.broadcast.push(request);
        state.election.auth_sent = true;
        step.save = true;
        return step;
    }
    if state.election.auth_count > state.size / 2 {
        tracing::warn!("Failover election won: I'm the new master.");
        if state.me().config_epoch < state.election.auth_epoch {
            let epoch = state.election.auth_epoch;
            state.me_mut().config_epoch = epoch;
            tracing::warn!("configEpoch set to {epoch} after successful failover");
        }
        replace_my_master(state);
        step.promoted = true;
        step.pong_all = true;
        step.save = true;
    }
    step
}

/// This replica takes its master's slots (Redis's `clusterFailoverReplaceYourMaster`).
pub fn replace_my_master(state: &mut ClusterState) {
    let me = state.me();
    let Some(old) = me.master.filter(|_| me.is_replica()) else {
        return;
    };
    state.set_me_master();
    let myself = state.myself;
    for slot in 0..super::super::state::SLOTS {
        if state.slots[slot] == Some(old) {
            state.add_slot(slot, myself);
        }
    }
    state.election.reset_manual();
}

/// CLUSTER FAILOVER [FORCE|TAKEOVER] on a replica.
pub fn manual(shared: &Shared, force: bool, takeover: bool) -> Result<(), CmdError> {
    let now = crate::store::now_ms();
    let master = {
        let state = shared.cluster.state.read();
        let me = state.me();
        if me.is_master() {
            return Err(CmdError::Static(
                "ERR You should send CLUSTER FAILOVER to a replica",
            ));
        }
        let Some(master) = me.master.and_then(|m| state.nodes.get(&m)) else {
            return Err(CmdError::Static(
                "ERR I'm a replica but my master is unknown to me",
            ));
        };
        if !force && (master.failed() || !master.linked) {
            return Err(CmdError::Static(
                "ERR Master is down or failed, please use CLUSTER FAILOVER FORCE",
            ));
        }
        master.id
    };
    let ctx = super::context(shared);
    let mut state = shared.cluster.state.write();
    state.election.reset_manual();
    state.election.mf_end = now + MF_TIMEOUT_MS;
    if takeover {
        tracing::warn!("Taking over the master (user request).");
        state.bump_epoch_without_consensus();
        replace_my_master(&mut state);
        drop(state);
        super::promoted(shared);
    } else if force {
        tracing::warn!("Forced failover user request accepted.");
        state.election.mf_can_start = true;
    } else {
        tracing::warn!("Manual failover user request accepted.");
        let start = build::bare(&mut state, message::MFSTART, ctx, 0);
        drop(state);
        shared.cluster.bus.send(&master, start);
    }
    Ok(())
}
