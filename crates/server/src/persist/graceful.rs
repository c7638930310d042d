//! A shutdown that first lets the replicas catch up, as Redis 7.0's: SHUTDOWN (without
//! NOW) or SIGTERM/SIGINT while a replica has not acknowledged the master's offset
//! pauses writes, asks the replicas for an ACK, and waits up to `shutdown-timeout`
//! seconds; the cron then finishes the shutdown once every replica is in sync or the
//! time is up. SHUTDOWN clients wait meanwhile (counted as blocked); SHUTDOWN ABORT, or
//! a final save that fails, cancels it: writes resume and the waiting clients get an
//! error. INFO shows `shutdown_in_milliseconds` while it waits.
//!
//! A signal only schedules the shutdown (Redis's `shutdown_asap`): the cron starts it,
//! so DEBUG PAUSE-CRON holds it and SHUTDOWN ABORT can cancel it first. A second SIGINT
//! while a signal's shutdown is scheduled or under way exits at once.

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::shutdown::{final_save, ShutdownFlags};
use crate::pause::PauseMode;
use crate::repl::journal::LinkState;
use crate::shared::Shared;

/// A shutdown waiting for replicas, if one is.
#[derive(Debug, Default)]
pub struct Graceful {
    pending: Mutex<Option<Pending>>,
    signalled: Mutex<Option<Signalled>>,
}

/// A shutdown a signal asked for.
#[derive(Debug, Clone, Copy)]
struct Signalled {
    /// The parameter naming what it saves (`shutdown-on-sigterm`, `shutdown-on-sigint`).
    param: &'static str,
    /// The cron has started it.
    started: bool,
}

#[derive(Debug)]
struct Pending {
    deadline: Instant,
    flags: ShutdownFlags,
    /// SHUTDOWN clients waiting; each is told (a send) if the shutdown is cancelled.
    waiters: Vec<oneshot::Sender<()>>,
    /// The CLIENT PAUSE in effect before, restored on cancel.
    paused_before: Option<(PauseMode, tokio::time::Instant)>,
}

/// What a shutdown request came to.
#[derive(Debug)]
pub enum Requested {
    /// The server is exiting.
    Exiting,
    /// Waiting for replicas: the receiver gets a message if the shutdown is cancelled
    /// (it is dropped when the server exits).
    Waiting(oneshot::Receiver<()>),
    /// The final save failed: the server keeps running.
    Failed,
}

impl Graceful {
    /// Milliseconds left before a waiting shutdown proceeds anyway (INFO).
    pub fn remaining_ms(&self) -> Option<u128> {
        let pending = self.pending.lock();
        let deadline = pending.as_ref()?.deadline;
        Some(
            deadline
                .saturating_duration_since(Instant::now())
                .as_millis(),
        )
    }

    /// SHUTDOWN clients waiting for it (INFO `blocked_clients`).
    pub fn waiting_clients(&self) -> usize {
        self.pending.lock().as_ref().map_or(0, |p| p.waiters.len())
    }
}

/// SIGTERM or SIGINT, whose parameter `param` says what to save: the cron starts the
/// shutdown (a signal's shutdown already scheduled or under way goes on as it is).
pub fn schedule_for_signal(shared: &Shared, param: &'static str) {
    let mut signalled = shared.graceful.signalled.lock();
    if signalled.is_none() {
        *signalled = Some(Signalled {
            param,
            started: false,
        });
    }
}

/// Whether a signal's shutdown is scheduled or under way (a SIGINT then exits at once,
/// as in Redis).
pub fn signal_scheduled(shared: &Shared) -> bool {
    shared.graceful.signalled.lock().is_some()
}

/// SHUTDOWN (or a signal, with the flags its parameter names): exits now when no
/// replica lags (or `now`, or `shutdown-timeout 0`), else starts waiting for them. A
/// request while one waits joins it.
pub fn request(shared: &Shared, flags: ShutdownFlags, now: bool) -> Requested {
    crate::supervision::notify("STOPPING=1\n");
    let mut pending = shared.graceful.pending.lock();
    if let Some(waiting) = pending.as_mut() {
        let (tx, rx) = oneshot::channel();
        waiting.waiters.push(tx);
        return Requested::Waiting(rx);
    }
    let timeout = shared.config.read().param_int("shutdown-timeout");
    if !now && timeout > 0 && !replicas_in_sync(shared) {
        let paused_before = shared.pause.current();
        // Writes stop, so the offset the replicas must reach stops moving.
        shared
            .pause
            .pause(tokio::time::Instant::now() + FOREVER, PauseMode::Write);
        // A replica's stream is its master's: it adds nothing of its own.
        if !shared.repl.is_replica() {
            shared.repl.journal.request_acks();
        }
        let (tx, rx) = oneshot::channel();
        *pending = Some(Pending {
            deadline: Instant::now() + Duration::from_secs(timeout.unsigned_abs()),
            flags,
            waiters: vec![tx],
            paused_before,
        });
        tracing::info!("Waiting for replicas before shutting down.");
        return Requested::Waiting(rx);
    }
    drop(pending);
    if finish(shared, flags) {
        Requested::Exiting
    } else {
        shared.graceful.signalled.lock().take();
        Requested::Failed
    }
}

/// A pause that outlasts any shutdown-timeout (ended by `cancel`, or by the exit).
const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// From the cron: a shutdown a signal scheduled starts; a waiting shutdown proceeds
/// once every replica is in sync or its time is up.
pub fn cron(shared: &Shared) {
    if start_signalled(shared) {
        return;
    }
    let flags = {
        let pending = shared.graceful.pending.lock();
        match pending.as_ref() {
            Some(p) if Instant::now() >= p.deadline || replicas_in_sync(shared) => p.flags,
            _ => return,
        }
    };
    if finish(shared, flags) {
        // Their connections close as the server exits.
        shared.graceful.pending.lock().take();
    } else {
        cancel(shared);
    }
}

/// Starts the shutdown a signal scheduled, if one waits (false otherwise): from the
/// cron, or at once while the dataset loads at start (no cron turns then; nothing is
/// saved, as Redis shuts down from its loading loop).
pub fn start_signalled(shared: &Shared) -> bool {
    let scheduled = {
        let mut signalled = shared.graceful.signalled.lock();
        match signalled.as_mut() {
            Some(s) if !s.started => {
                s.started = true;
                Some(s.param)
            }
            _ => None,
        }
    };
    if let Some(param) = scheduled {
        let flags = ShutdownFlags::for_signal(shared, param);
        tracing::warn!("User requested shutdown...");
        // Waiting, it goes on in the cron's later turns; failed, the signal is
        // forgotten.
        let _ = request(shared, flags, flags.now);
        return true;
    }
    false
}

/// SHUTDOWN ABORT: false when no shutdown is waiting or scheduled by a signal.
pub fn abort(shared: &Shared) -> bool {
    if shared.graceful.pending.lock().is_some() {
        cancel(shared);
    } else if shared.graceful.signalled.lock().take().is_none() {
        return false;
    }
    tracing::info!("Shutdown manually aborted.");
    true
}

/// Writes resume (a CLIENT PAUSE from before goes on) and the waiting clients are told;
/// a signal's request is forgotten.
fn cancel(shared: &Shared) {
    shared.graceful.signalled.lock().take();
    let Some(pending) = shared.graceful.pending.lock().take() else {
        return;
    };
    shared.pause.unpause();
    if let Some((mode, until)) = pending.paused_before {
        if until > tokio::time::Instant::now() {
            shared.pause.pause(until, mode);
        }
    }
    for waiter in pending.waiters {
        let _ = waiter.send(());
    }
}

/// Every replica acknowledged the master's offset (or there is none).
fn replicas_in_sync(shared: &Shared) -> bool {
    let journal = &shared.repl.journal;
    let offset = journal.offset();
    // A replica still waiting for its first image has acknowledged nothing, as Redis's
    // replicas in `wait_bgsave_start` (their ack offset is 0): waiting for it lets its
    // sync run, so it leaves with the data and a link that was up (a cluster replica
    // needs that to take over).
    if offset != 0 && !shared.repl.waiting_for_image().is_empty() {
        return false;
    }
    let stream = journal.stream();
    stream.replicas().iter().all(|r| r.acked() == offset)
}

/// Logs the replicas' state, saves as `flags` say and stops the server; false (and
/// the server keeps running) when the save failed without `force`.
fn finish(shared: &Shared, flags: ShutdownFlags) -> bool {
    let journal = &shared.repl.journal;
    let offset = journal.offset();
    let replicas: Vec<_> = journal.stream().replicas().to_vec();
    let now = crate::persist::snapshot::unix_secs();
    let mut lagging = 0;
    for replica in &replicas {
        let acked = replica.acked();
        if acked != offset {
            lagging += 1;
            let online = replica.state() == LinkState::Online;
            let lag = if online {
                now.saturating_sub(replica.ack_time.load(std::sync::atomic::Ordering::Relaxed))
            } else {
                0
            };
            let port = replica
                .listening_port
                .load(std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(
                "Lagging replica {}:{port} reported offset {} behind master, lag={lag}, state={}.",
                replica.ip,
                offset.saturating_sub(acked),
                replica.state().name()
            );
        }
    }
    if !replicas.is_empty() {
        tracing::info!(
            "{} of {} replicas are in sync when shutting down.",
            replicas.len() - lagging,
            replicas.len()
        );
    }
    if !stop_background_work(shared, flags) || !final_save(shared, flags) {
        tracing::warn!(
            "Errors trying to shut down the server. Check the logs for more information."
        );
        return false;
    }
    crate::supervision::remove_pid_file(shared.config.read().param("pidfile"));
    shared.request_shutdown();
    true
}

/// Before the final save, the background work stops: a rewrite or a BGSAVE still
/// running, and its file goes. Not the rewrite that turns the AOF on, without FORCE: it
/// holds the only copy of what came after its base, so the server does not exit before
/// it is written, as in Redis (false).
fn stop_background_work(shared: &Shared, flags: ShutdownFlags) -> bool {
    if shared
        .aof
        .initial_rewrite
        .load(std::sync::atomic::Ordering::Acquire)
    {
        if !flags.force {
            tracing::warn!("Writing initial AOF, can't exit.");
            return false;
        }
        tracing::warn!("Writing initial AOF. Exit anyway.");
    }
    crate::persist::aof::abort_rewrite(shared);
    if shared.persistence.abort_bgsave() {
        // Its file goes with it, as Redis removes its child's.
        tracing::warn!("There is a background save in progress. Aborting it.");
        crate::persist::snapshot::remove_temp_files(shared);
    }
    true
}
