//! Free loopback ports for servers started in parallel tests.
//!
//! Ports are drawn at random from 10000..22768, below Linux's ephemeral range (32768+), so
//! outgoing connections never sit on them, and so that `port + 10000` (the cluster bus
//! port) stays below the ephemeral range too. A candidate must bind on 127.0.0.1 (and so
//! must its bus port when asked), and is then held in a process-wide set until released,
//! so two threads of one test binary never pick the same port. Other processes can still
//! take a port between our probe and the server's bind: callers retry on "Address already
//! in use" (see `process.rs`).

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::{Error, Result};

const LOW: u16 = 10_000;
const HIGH: u16 = 22_768;
/// Redis's cluster bus listens on the client port plus this.
pub(crate) const BUS_OFFSET: u16 = 10_000;
const ATTEMPTS: u32 = 500;

static RESERVED: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// A port held for one server; released when dropped.
#[derive(Debug)]
pub(crate) struct PortLease {
    port: u16,
    with_bus: bool,
}

impl PortLease {
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for PortLease {
    fn drop(&mut self) {
        with_reserved(|set| {
            set.remove(&self.port);
            if self.with_bus {
                set.remove(&(self.port + BUS_OFFSET));
            }
        });
    }
}

/// Leases a port that binds now; with `with_bus`, `port + 10000` binds too.
pub(crate) fn lease(with_bus: bool) -> Result<PortLease> {
    for _ in 0..ATTEMPTS {
        let port = LOW + (random() % u64::from(HIGH - LOW)) as u16;
        let bus = port + BUS_OFFSET;
        let taken = with_reserved(|set| {
            if set.contains(&port) || (with_bus && set.contains(&bus)) {
                return true;
            }
            set.insert(port);
            if with_bus {
                set.insert(bus);
            }
            false
        });
        if taken {
            continue;
        }
        // Built first so that a failed probe below releases the reservation.
        let lease = PortLease { port, with_bus };
        if bindable(port) && (!with_bus || bindable(bus)) {
            return Ok(lease);
        }
    }
    Err(Error::NoFreePort { attempts: ATTEMPTS })
}

/// A loopback port for a server a test starts itself: below the ephemeral range (so no
/// outgoing connection, not even a probe connecting to itself, sits on it), free now,
/// and never drawn again by this test binary, which may start servers from many threads.
/// Another process can still take it before the server binds (two test binaries drawing
/// at once; `cargo test` runs them one at a time).
///
/// ```
/// let port = redline_testkit::reserve_port()?;
/// assert!(port < 32768);
/// # Ok::<(), redline_testkit::Error>(())
/// ```
pub fn reserve_port() -> Result<u16> {
    let lease = lease(false)?;
    let port = lease.port;
    // Held for the rest of the process: its server may outlive any scope we could see.
    std::mem::forget(lease);
    Ok(port)
}

fn bindable(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

fn with_reserved<T>(f: impl FnOnce(&mut HashSet<u16>) -> T) -> T {
    // A panic while holding this lock cannot leave the set inconsistent (single inserts
    // and removes), so a poisoned lock is still usable.
    let mut guard = RESERVED.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(HashSet::new))
}

/// A random number without a dependency: std's per-instance random hasher keys, mixed with
/// a counter so successive calls differ.
fn random() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_are_distinct_and_released() {
        let a = lease(true).unwrap();
        let b = lease(true).unwrap();
        assert_ne!(a.port(), b.port());
        assert!((LOW..HIGH).contains(&a.port()));
        let p = a.port();
        drop(a);
        assert!(with_reserved(
            |s| !s.contains(&p) && !s.contains(&(p + BUS_OFFSET))
        ));
    }
}
