//! The software watchdog (`watchdog-period`, Redis's `DEBUG`-grade latency tool): when a
//! thread runs one batch of commands for longer than the period (a slow command, a
//! script, `DEBUG SLEEP`), the log gets `--- WATCHDOG TIMER EXPIRED ---` and that
//! thread's stack, taken by the thread itself in a SIGALRM handler, as redis-server's
//! timer signal does for its one thread.
//!
//! Each thread that runs commands marks when its batch began (one relaxed load when the
//! watchdog is off); a monitor thread, running while the period is set, looks at the
//! marks and signals a thread stuck past the period, once per batch. Redis's minimum
//! applies: twice the cron's period (`1000 / hz` ms).
// Signal handling and `pthread_kill` are system calls; each block says why it is sound.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The period in milliseconds; 0 when off.
static PERIOD_MS: AtomicU64 = AtomicU64::new(0);
/// The monitor thread is running.
static MONITORING: AtomicBool = AtomicBool::new(false);

/// A thread that runs commands, as the monitor sees it.
struct Slot {
    thread: libc::pthread_t,
    /// When its batch began, in [`clock`] milliseconds plus one; 0 when idle.
    busy_since: AtomicU64,
}

/// Every thread that ran a batch while the watchdog was on.
fn slots() -> &'static Mutex<Vec<Arc<Slot>>> {
    static SLOTS: OnceLock<Mutex<Vec<Arc<Slot>>>> = OnceLock::new();
    SLOTS.get_or_init(|| Mutex::new(Vec::new()))
}

thread_local! {
    static OWN: OnceLock<Arc<Slot>> = const { OnceLock::new() };
}

/// Milliseconds of the process-wide monotonic clock.
fn clock() -> u64 {
    crate::uptime_clock::elapsed().as_millis() as u64
}

/// A batch in progress on this thread; its end clears the mark.
#[must_use = "the batch ends when the guard is dropped"]
pub struct Batch(Option<Arc<Slot>>);

impl Drop for Batch {
    fn drop(&mut self) {
        if let Some(slot) = &self.0 {
            slot.busy_since.store(0, Ordering::Release);
        }
    }
}

/// Marks the start of a batch of commands on this thread (nothing when the watchdog is
/// off).
pub fn batch() -> Batch {
    if PERIOD_MS.load(Ordering::Relaxed) == 0 {
        return Batch(None);
    }
    let slot = OWN.with(|own| {
        own.get_or_init(|| {
            // SAFETY: `pthread_self` has no preconditions.
            let slot = Arc::new(Slot {
                thread: unsafe { libc::pthread_self() },
                busy_since: AtomicU64::new(0),
            });
            if let Ok(mut all) = slots().lock() {
                all.push(slot.clone());
            }
            slot
        })
        .clone()
    });
    slot.busy_since.store(clock() + 1, Ordering::Release);
    Batch(Some(slot))
}

/// Applies `watchdog-period` (milliseconds, 0: off) under `hz`: installs the handler and
/// starts the monitor, or stops both.
pub fn configure(period_ms: i64, hz: u32) {
    let min = i64::from(1000 / hz.clamp(1, 500)) * 2;
    let period = if period_ms <= 0 {
        0
    } else {
        period_ms.max(min) as u64
    };
    let was = PERIOD_MS.swap(period, Ordering::AcqRel);
    if period == 0 {
        if was != 0 {
            set_handler(false);
        }
        return;
    }
    if was == 0 {
        crate::crash::warm_up_stack_trace();
        set_handler(true);
    }
    if !MONITORING.swap(true, Ordering::AcqRel) {
        let started = std::thread::Builder::new()
            .name("redline-watchdog".into())
            .spawn(monitor);
        if let Err(e) = started {
            tracing::warn!("The software watchdog cannot start: {e}");
            MONITORING.store(false, Ordering::Release);
        }
    }
}

/// Looks at every thread's batch a few times per period until the watchdog is off.
fn monitor() {
    // The batch start already reported, per thread.
    let mut reported: Vec<(libc::pthread_t, u64)> = Vec::new();
    loop {
        let period = PERIOD_MS.load(Ordering::Acquire);
        if period == 0 {
            MONITORING.store(false, Ordering::Release);
            // Turned on again meanwhile: that call saw this thread still running.
            if PERIOD_MS.load(Ordering::Acquire) == 0 || MONITORING.swap(true, Ordering::AcqRel) {
                return;
            }
            continue;
        }
        std::thread::sleep(Duration::from_millis((period / 4).clamp(5, 100)));
        let now = clock();
        let stuck: Vec<(libc::pthread_t, u64)> = match slots().lock() {
            Ok(all) => all
                .iter()
                .filter_map(|slot| {
                    let since = slot.busy_since.load(Ordering::Acquire);
                    (since != 0 && now + 1 >= since + period).then_some((slot.thread, since))
                })
                .collect(),
            Err(_) => return,
        };
        for (thread, since) in stuck {
            if reported.contains(&(thread, since)) {
                continue;
            }
            reported.retain(|(t, _)| *t != thread);
            reported.push((thread, since));
            // SAFETY: the thread registered itself, and it clears its mark before it
            // leaves a batch (even unwinding), so it can only have ended in the moment
            // between the read above and this call; glibc answers ESRCH for a thread
            // that ended and was joined, and worker threads live as long as the runtime.
            unsafe {
                libc::pthread_kill(thread, libc::SIGALRM);
            }
        }
    }
}

/// Installs (or removes, ignoring the signal as Redis does) the SIGALRM handler.
fn set_handler(on: bool) {
    // SAFETY: a zeroed `sigaction` is a valid starting point; the handler has the
    // SA_SIGINFO signature and only makes async-signal-safe calls.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        libc::sigemptyset(&mut action.sa_mask);
        if on {
            action.sa_sigaction = report as extern "C" fn(_, _, _) as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        } else {
            action.sa_sigaction = libc::SIG_IGN;
        }
        libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut());
    }
}

extern "C" fn report(
    _signal: libc::c_int,
    _info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    let fd = crate::crash::log_fd();
    crate::crash::write_all(fd, b"\n--- WATCHDOG TIMER EXPIRED ---\n");
    crate::crash::write_stack_trace(fd);
    crate::crash::write_all(fd, b"--------\n\n");
}
