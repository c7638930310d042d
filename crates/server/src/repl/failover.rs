//! FAILOVER: a master hands its role to one of its replicas without losing a write, as
//! Redis 6.2+ does. Writes pause; once the target (named, or the first replica that has
//! acknowledged everything) is in sync, this server connects to it as a replica with
//! `PSYNC <id> <offset> FAILOVER`, which makes the target a master that continues the
//! same history; `+CONTINUE` completes the hand-off and writes resume (here they go to
//! the new master). A timeout aborts the wait, or with FORCE hands over anyway; FAILOVER
//! ABORT, or a refused PSYNC, makes this server a master again.

use std::time::{Duration, Instant};

use crate::pause::PauseMode;
use crate::repl::journal::LinkState;
use crate::shared::Shared;

/// A failover under way.
#[derive(Debug)]
pub struct Failover {
    /// Connecting to the target as its replica (else waiting for it to sync).
    in_progress: bool,
    target: Option<(String, u16)>,
    deadline: Option<Instant>,
    force: bool,
    /// The target refused the hand-off: the cron makes this server a master again.
    rejected: bool,
}

/// What FAILOVER asks for.
#[derive(Debug, Default)]
pub struct Request {
    /// TO host port (a port out of range names no replica: Redis reads it as a long).
    pub target: Option<(String, i64)>,
    /// TIMEOUT, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// FORCE.
    pub force: bool,
}

/// INFO replication `master_failover_state`.
pub fn state_name(shared: &Shared) -> &'static str {
    match shared.repl.failover.lock().as_ref() {
        None => "no-failover",
        Some(f) if f.in_progress => "failover-in-progress",
        Some(_) => "waiting-for-sync",
    }
}

/// FAILOVER [TO host port [FORCE]] [TIMEOUT ms]: checks it as Redis does, then pauses
/// writes and starts waiting for the target.
pub fn start(shared: &Shared, request: Request) -> Result<(), &'static str> {
    // Redis's order of checks: the state first, the FORCE rule last.
    let mut failover = shared.repl.failover.lock();
    if failover.is_some() {
        return Err("ERR FAILOVER already in progress.");
    }
    if shared.repl.is_replica() {
        return Err("ERR FAILOVER is not valid when server is a replica.");
    }
    let journal = &shared.repl.journal;
    {
        let stream = journal.stream();
        if stream.replicas().is_empty() {
            return Err("ERR FAILOVER requires connected replicas.");
        }
        if request.force && (request.timeout_ms.is_none() || request.target.is_none()) {
            return Err(
                "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
            );
        }
        if let Some((host, port)) = &request.target {
            let replica = stream.replicas().iter().find(|r| {
                r.ip.to_string() == *host
                    && i64::from(r.listening_port.load(std::sync::atomic::Ordering::Relaxed))
                        == *port
            });
            match replica {
                None => return Err("ERR FAILOVER target HOST and PORT is not a replica."),
                Some(r) if r.state() != LinkState::Online => {
                    return Err("ERR FAILOVER target replica is not online.")
                }
                Some(_) => {}
            }
        }
    }
    match &request.target {
        Some((host, port)) => tracing::info!("FAILOVER requested to {host}:{port}."),
        None => tracing::info!("FAILOVER requested to any replica."),
    }
    shared
        .pause
        .pause(tokio::time::Instant::now() + FOREVER, PauseMode::Write);
    journal.request_acks();
    *failover = Some(Failover {
        in_progress: false,
        // Checked above: the port is a replica's.
        target: request
            .target
            .and_then(|(host, port)| Some((host, u16::try_from(port).ok()?))),
        deadline: request
            .timeout_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms)),
        force: request.force,
        rejected: false,
    });
    Ok(())
}

/// A pause that outlasts any failover (ended when it completes or is aborted).
const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// FAILOVER ABORT: false when none is under way.
pub fn abort(shared: &Shared) -> bool {
    if shared.repl.failover.lock().is_none() {
        return false;
    }
    end_aborted(shared, "Failover manually aborted");
    true
}

/// Gives up: a master again (if the hand-off had begun) with writes resumed.
fn end_aborted(shared: &Shared, why: &str) {
    let Some(failover) = shared.repl.failover.lock().take() else {
        return;
    };
    tracing::info!("FAILOVER aborted: {why}");
    if failover.in_progress {
        super::promote(shared);
    }
    shared.pause.unpause();
}

/// Whether this server's PSYNC is the hand-off (`PSYNC ... FAILOVER`).
pub fn in_progress(shared: &Shared) -> bool {
    shared
        .repl
        .failover
        .lock()
        .as_ref()
        .is_some_and(|f| f.in_progress)
}

/// The target continued our history: the hand-off is done, writes resume.
pub fn completed(shared: &Shared) {
    if shared.repl.failover.lock().take().is_some() {
        tracing::info!("Failover target accepted the PSYNC request: failover complete.");
        shared.pause.unpause();
    }
}

/// The target refused the hand-off; the cron makes this server a master again.
pub fn rejected(shared: &Shared) {
    if let Some(f) = shared.repl.failover.lock().as_mut() {
        f.rejected = true;
    }
}

/// From the cron: picks the target once it has acknowledged every byte and begins the
/// hand-off; ends a wait past its timeout; undoes a refused hand-off.
pub fn cron(shared: &Shared) {
    let (target, rejected) = {
        let mut guard = shared.repl.failover.lock();
        let Some(failover) = guard.as_mut() else {
            return;
        };
        if failover.in_progress {
            (None, failover.rejected)
        } else {
            let synced = synced_target(shared, failover.target.as_ref());
            let timed_out = failover.deadline.is_some_and(|d| Instant::now() >= d);
            match (synced, failover.target.clone()) {
                (Some(target), _) => (Some(target), false),
                (None, Some(target)) if timed_out && failover.force => {
                    tracing::info!(
                        "FAILOVER to {}:{} time out exceeded, failing over.",
                        target.0,
                        target.1
                    );
                    (Some(target), false)
                }
                _ if timed_out => {
                    drop(guard);
                    end_aborted(shared, "Replica never caught up before timeout");
                    return;
                }
                _ => return,
            }
        }
    };
    if rejected {
        end_aborted(shared, "Failover target rejected psync request");
        return;
    }
    let Some((host, port)) = target else {
        return;
    };
    let Some(this) = shared.arc() else {
        return;
    };
    if let Some(f) = shared.repl.failover.lock().as_mut() {
        f.in_progress = true;
        f.target = Some((host.clone(), port));
    }
    tracing::info!("Failover target {host}:{port} is synced, failing over.");
    *shared.repl.master.lock() = Some(super::follow(this, host.clone(), port));
    shared.config.write().set_replicaof(Some((&host, port)));
}

/// The target (or, without one, any online replica) if it acknowledged the whole stream.
fn synced_target(shared: &Shared, target: Option<&(String, u16)>) -> Option<(String, u16)> {
    let journal = &shared.repl.journal;
    let offset = journal.offset();
    let stream = journal.stream();
    stream
        .replicas()
        .iter()
        .filter(|r| r.state() == LinkState::Online)
        .map(|r| {
            let port = r.listening_port.load(std::sync::atomic::Ordering::Relaxed);
            (r, (r.ip.to_string(), port))
        })
        .find(|(r, address)| target.is_none_or(|t| t == address) && r.acked() == offset)
        .map(|(_, address)| address)
}
