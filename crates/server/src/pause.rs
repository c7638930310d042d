//! CLIENT PAUSE: while a pause is in effect, the commands it covers (every command for
//! `ALL`; for `WRITE`, those that write or may replicate, and EXEC of a transaction
//! holding one) wait until CLIENT UNPAUSE or the deadline, then run in order.
//!
//! The dispatcher reads one atomic per command ([`Pause::active`]); only when a pause
//! is on does it look at the mode and deadline under a lock. A held command is kept by
//! its connection, which waits on [`Pause::subscribe`] (bumped by every change) or the
//! deadline, whichever comes first, and then runs it again through the dispatcher.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;

/// What a pause holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseMode {
    /// Writes and commands that may replicate.
    Write,
    /// Every command.
    All,
}

#[derive(Debug, Default)]
struct State {
    mode: Option<PauseMode>,
    until: Option<Instant>,
}

/// The server's pause state.
#[derive(Debug)]
pub struct Pause {
    active: AtomicBool,
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    /// Clients whose command is held back right now (INFO counts them as blocked, as
    /// Redis does).
    held_back: std::sync::atomic::AtomicUsize,
}

/// Counts one client as held back by the pause while it lives.
#[derive(Debug)]
pub struct HeldBack<'a>(&'a Pause);

impl Drop for HeldBack<'_> {
    fn drop(&mut self) {
        self.0
            .held_back
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Default for Pause {
    fn default() -> Self {
        Pause {
            active: AtomicBool::new(false),
            state: Mutex::default(),
            changed: watch::channel(0).0,
            held_back: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

impl Pause {
    /// Marks a client as held back until the returned guard drops.
    pub fn hold_back(&self) -> HeldBack<'_> {
        self.held_back
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        HeldBack(self)
    }

    /// Clients held back right now.
    pub fn held_back(&self) -> usize {
        self.held_back.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// True when a pause may be in effect (it may also have just expired).
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Pauses until `until` in `mode`; as in Redis, a pause already in effect is only
    /// lengthened or made stricter, never shortened or relaxed.
    pub fn pause(&self, until: Instant, mode: PauseMode) {
        let mut state = self.state.lock();
        state.mode = state.mode.max(Some(mode));
        state.until = state.until.max(Some(until));
        self.active.store(true, Ordering::Release);
        drop(state);
        self.changed.send_modify(|g| *g += 1);
    }

    /// Ends the pause; held commands run.
    pub fn unpause(&self) {
        *self.state.lock() = State::default();
        self.active.store(false, Ordering::Release);
        self.changed.send_modify(|g| *g += 1);
    }

    /// The pause in effect now, if any (an expired one is cleared).
    pub fn current(&self) -> Option<(PauseMode, Instant)> {
        let mut state = self.state.lock();
        match (state.mode, state.until) {
            (Some(mode), Some(until)) if Instant::now() < until => Some((mode, until)),
            _ => {
                *state = State::default();
                self.active.store(false, Ordering::Release);
                None
            }
        }
    }

    /// A receiver that wakes on every pause or unpause.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn pauses_only_grow_until_unpaused() {
        let pause = Pause::default();
        assert!(!pause.active() && pause.current().is_none());
        let later = Instant::now() + Duration::from_secs(60);
        pause.pause(later, PauseMode::All);
        pause.pause(Instant::now(), PauseMode::Write);
        assert_eq!(pause.current(), Some((PauseMode::All, later)));
        pause.unpause();
        assert!(!pause.active() && pause.current().is_none());
        pause.pause(Instant::now(), PauseMode::All);
        assert!(pause.current().is_none() && !pause.active());
    }
}
