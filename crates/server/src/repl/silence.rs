//! How a streaming replication link notices that its peer went silent for
//! `repl-timeout` (a replica that stopped acknowledging, a master that stopped sending
//! and pinging): one timer for the link's life, checked at least once a second as Redis's
//! cron does (so a lowered timeout applies within a second) and re-armed only when it
//! fires, so the link's reads and writes never touch the timer wheel.

use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::shared::Shared;

/// A link's silence check (see the module docs).
#[derive(Debug)]
pub struct Silence {
    check: Pin<Box<Sleep>>,
}

impl Silence {
    /// The check of a link last heard from at `last_heard`.
    pub fn new(shared: &Shared, last_heard: Instant) -> Silence {
        Silence {
            check: Box::pin(tokio::time::sleep_until(next_check(shared, last_heard))),
        }
    }

    /// Resolves once nothing has been heard since `last_heard` for `repl-timeout`.
    /// Dropped unfinished (another event came first), it is called again with the
    /// newer `last_heard`, on the same timer.
    pub async fn passed(&mut self, shared: &Shared, last_heard: Instant) {
        loop {
            self.check.as_mut().await;
            if last_heard + super::repl_timeout(shared) <= Instant::now() {
                return;
            }
            self.check.as_mut().reset(next_check(shared, last_heard));
        }
    }
}

/// When the link next looks: when `repl-timeout` from `last_heard` runs out, or in a
/// second if sooner.
fn next_check(shared: &Shared, last_heard: Instant) -> Instant {
    let cron = Instant::now() + Duration::from_secs(1);
    (last_heard + super::repl_timeout(shared)).min(cron)
}
