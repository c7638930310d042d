//! The bus's periodic work, every 100 ms (Redis's `clusterCron`): link every known
//! node, forget handshakes that never completed, ping a random node every second and any
//! node whose PONG is getting old, mark silent nodes PFAIL, follow our master, and run
//! failovers.

use std::sync::Arc;
use std::time::Duration;

use super::super::node::{Flags, NodeId};
use super::{build, failover, failure, links, message};
use crate::shared::Shared;

/// The cron's period.
const PERIOD: Duration = Duration::from_millis(100);

/// Runs until shutdown.
pub async fn run(shared: Arc<Shared>) {
    let mut stop = shared.shutdown.subscribe();
    let mut ticker = tokio::time::interval(PERIOD);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut iteration: u64 = 0;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        iteration += 1;
        tick(&shared, iteration);
    }
}

/// How long the link to our master has been silent or down, in milliseconds.
fn master_data_age(shared: &Shared, now_secs: u64) -> u64 {
    let master = shared.repl.master.lock();
    let Some(link) = master.as_ref() else {
        return u64::MAX;
    };
    let status = &link.status;
    let since = if status.is_up() {
        status.last_io.load(std::sync::atomic::Ordering::Relaxed)
    } else {
        status.down_since.load(std::sync::atomic::Ordering::Relaxed)
    };
    now_secs.saturating_sub(since).saturating_mul(1000)
}

fn tick(shared: &Arc<Shared>, iteration: u64) {
    if shared.freeze.stopped() {
        return;
    }
    let settings = super::super::settings(shared);
    let (node_timeout, now) = (settings.node_timeout, crate::store::now_ms());
    let handshake_timeout = node_timeout.max(1000);
    let ctx = super::context(shared);
    let bus = &shared.cluster.bus;
    let mut to_connect: Vec<(NodeId, String, u16)> = Vec::new();
    let mut pings: Vec<NodeId> = Vec::new();
    let mut drop_links: Vec<NodeId> = Vec::new();
    let mut follow = None;
    let mut save = false;
    bus.close_links_over(settings.link_sendbuf_limit);
    {
        let linked: std::collections::HashMap<NodeId, u64> = bus
            .outbound
            .lock()
            .iter()
            .map(|(id, l)| (*id, l.created))
            .collect();
        let mut state = shared.cluster.state.write();
        let myself = state.myself;
        save |= super::super::update_myself(&mut state, &settings);
        let expired: Vec<NodeId> = state
            .nodes
            .values()
            .filter(|n| n.in_handshake() && now.saturating_sub(n.created) > handshake_timeout)
            .map(|n| n.id)
            .collect();
        for id in expired {
            state.del_node(&id);
            drop_links.push(id);
        }
        state.forgotten.retain(|_, until| *until > now);
        for node in state.nodes.values() {
            if node.id == myself || node.flags.any(Flags::NOADDR) || node.ip.is_empty() {
                continue;
            }
            if !linked.contains_key(&node.id) {
                to_connect.push((node.id, node.ip.clone(), node.cport));
            }
        }
        // Every second, ping one of five random nodes: the one whose PONG is oldest.
        if iteration % 10 == 0 {
            let candidates: Vec<&super::super::node::Node> = state
                .nodes
                .values()
                .filter(|n| n.id != myself && linked.contains_key(&n.id))
                .filter(|n| n.ping_sent == 0 && !n.flags.any(Flags::MYSELF | Flags::HANDSHAKE))
                .collect();
            let oldest = (0..5)
                .filter(|_| !candidates.is_empty())
                .map(|_| candidates[fastrand::usize(..candidates.len())])
                .min_by_key(|n| n.pong_received)
                .map(|n| n.id);
            pings.extend(oldest);
        }
        let mut pfail = false;
        let ids: Vec<NodeId> = state.nodes.keys().copied().collect();
        let mf_replica = state.election.mf_replica;
        for id in ids {
            let Some(node) = state.nodes.get_mut(&id) else {
                continue;
            };
            if id == myself || node.flags.any(Flags::NOADDR | Flags::HANDSHAKE) {
                continue;
            }
            if let Some(created) = linked.get(&id) {
                // A link that gets no answer is replaced.
                if now.saturating_sub(*created) > node_timeout
                    && node.ping_sent != 0
                    && now.saturating_sub(node.ping_sent) > node_timeout / 2
                    && now.saturating_sub(node.data_received) > node_timeout / 2
                {
                    drop_links.push(id);
                }
                if node.ping_sent == 0 && now.saturating_sub(node.pong_received) > node_timeout / 2
                {
                    pings.push(id);
                    continue;
                }
                if mf_replica == Some(id) {
                    pings.push(id);
                    continue;
                }
            }
            if node.ping_sent == 0 {
                continue;
            }
            let delay = now.saturating_sub(node.ping_sent);
            let data_delay = now.saturating_sub(node.data_received);
            if delay > node_timeout
                && data_delay > node_timeout
                && !node.flags.any(Flags::PFAIL | Flags::FAIL)
            {
                tracing::debug!("*** NODE {id} possibly failing");
                node.flags.set(Flags::PFAIL);
                pfail = true;
            }
        }
        if pfail {
            // This node's own view counts toward a FAIL once others agree.
            let suspects: Vec<NodeId> = state
                .nodes
                .values()
                .filter(|n| n.timed_out())
                .map(|n| n.id)
                .collect();
            for id in suspects {
                if failure::mark_failing_if_needed(&mut state, &id, now, node_timeout) {
                    let fail = build::fail(&mut state, id, ctx);
                    bus.broadcast(&fail);
                }
            }
            save = true;
        }
        // A replica follows its master once its address is known.
        let me = state.me();
        if me.is_replica() && shared.repl.master.lock().is_none() {
            follow = me.master;
        }
        state.update_state(now, settings.full_coverage, node_timeout);
    }
    for id in drop_links {
        bus.drop_link(&id);
    }
    for (id, ip, cport) in to_connect {
        links::connect(
            shared,
            id,
            ip,
            cport,
            Duration::from_millis(node_timeout.max(1000)),
        );
    }
    if !pings.is_empty() {
        let announce_ip = settings.announce_ip.clone();
        let mut state = shared.cluster.state.write();
        for id in pings {
            if let Some(node) = state.nodes.get_mut(&id) {
                node.ping_sent = now;
            }
            let ping = build::ping(&mut state, message::PING, ctx, &announce_ip);
            bus.send(&id, ping);
        }
    }
    if let Some(master) = follow {
        super::replicate_master(shared, master);
    }
    super::super::route::redirect_blocked(shared);
    // Failovers: timeouts of a manual one, and a replica's election.
    let now_secs = now / 1000;
    let data_age = master_data_age(shared, now_secs);
    let ping_period = u64::try_from(shared.config.read().param_int("repl-ping-replica-period"))
        .unwrap_or(10)
        * 1000;
    // Failover, then replica migration (Redis's order), and the slots the shard lost
    // since the last turn, under one lock.
    let (step, migrate_to, lost_slots) = {
        let mut state = shared.cluster.state.write();
        let step = failover::cron(
            &mut state,
            &settings,
            now,
            ctx.offset,
            data_age,
            ping_period,
            ctx,
        );
        let target = super::migration::target(&mut state, &settings, now);
        if let Some(target) = target {
            tracing::info!("Migrating to orphaned master {target}");
            state.set_my_master(target);
            state.election.reset_manual();
            state.update_state(now, settings.full_coverage, node_timeout);
        }
        (step, target, std::mem::take(&mut state.lost_slots))
    };
    if step.unpause {
        shared.pause.unpause();
    }
    for bytes in &step.broadcast {
        bus.broadcast(bytes);
    }
    if step.promoted {
        super::promoted(shared);
    } else if step.pong_all {
        super::broadcast_pong(shared);
    }
    if let Some(target) = migrate_to {
        super::replicate_master(shared, target);
        save = true;
    }
    if save || step.save {
        let _ = shared.cluster.save_synced();
    }
    // A command's change whose client left before its reply was written.
    shared.cluster.save_changes();
    // Slots lost by messages since the last turn.
    shared.pubsub.drop_shard_slots(&lost_slots);
}
