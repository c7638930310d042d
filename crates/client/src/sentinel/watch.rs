//! The task that listens for `+switch-master` on a sentinel, for one client.
//!
//! It subscribes on one sentinel at a time (the first of the list that accepts: the
//! list is ordered by who answered last), and after each subscription asks that
//! sentinel for the current master, so a switch announced while no subscription was
//! open is not missed. A lost sentinel connection moves on to the next sentinel; after a
//! round where none accepted, it pauses (capped, jittered) before the next round. The
//! task ends when the client that spawned it is dropped ([`WatcherGuard`]).

use std::sync::Arc;
use std::time::Duration;

use redline_resp::Frame;

use super::{parse_switch, Discovery};
use crate::cmd::cmd;
use crate::config::Backoff;
use crate::error::Error;
use crate::net::{self, Endpoint};

/// The channel Sentinel announces a new master on.
const SWITCH_CHANNEL: &str = "+switch-master";

/// Pauses between rounds in which no sentinel accepted a subscription.
const ROUND_BACKOFF: Backoff = Backoff {
    base: Duration::from_millis(100),
    max: Duration::from_secs(2),
};

/// Stops the watcher when dropped (with the client that owns it).
#[derive(Debug)]
pub(crate) struct WatcherGuard(tokio::task::AbortHandle);

impl Drop for WatcherGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts the watcher for `discovery`.
pub(crate) fn spawn(discovery: Arc<Discovery>) -> WatcherGuard {
    WatcherGuard(tokio::spawn(run(discovery)).abort_handle())
}

async fn run(discovery: Arc<Discovery>) {
    let mut failed_rounds = 0u32;
    loop {
        for ep in discovery.sentinels_snapshot() {
            match follow(&discovery, &ep).await {
                Ok(()) => failed_rounds = 0,
                Err(e) => {
                    tracing::debug!(sentinel = %ep.addr, error = %e, "+switch-master subscription lost")
                }
            }
        }
        failed_rounds = failed_rounds.saturating_add(1);
        tokio::time::sleep(ROUND_BACKOFF.delay(failed_rounds).max(ROUND_BACKOFF.base)).await;
    }
}

/// Subscribes on one sentinel and publishes every switch of our master until the
/// connection fails. `Ok` means the subscription was established before it failed.
async fn follow(discovery: &Discovery, ep: &Arc<Endpoint>) -> Result<(), Error> {
    let mut conn = tokio::time::timeout(
        ep.connect_timeout,
        net::dial(ep, &ep.host, ep.port, &ep.addr),
    )
    .await
    .map_err(|_| Error::ConnectTimeout {
        addr: ep.addr.clone(),
        timeout: ep.connect_timeout,
    })??;
    let subscribe = cmd!("SUBSCRIBE").arg(SWITCH_CHANNEL);
    conn.write_all(&subscribe.to_bytes(), &ep.addr).await?;
    // The confirmation comes before any message on the channel.
    let confirmation = tokio::time::timeout(ep.connect_timeout, conn.read_frame(&ep.addr))
        .await
        .map_err(|_| Error::ConnectTimeout {
            addr: ep.addr.clone(),
            timeout: ep.connect_timeout,
        })??;
    if let Frame::Error(e) | Frame::BulkError(e) = confirmation {
        return Err(Error::from_server_reply(&e));
    }
    // Anything announced before the subscription: ask once, now that none is missed.
    if let Ok(Ok(Some(master))) =
        tokio::time::timeout(ep.connect_timeout, discovery.ask_one(ep)).await
    {
        discovery.publish(master);
    }
    loop {
        let frame = match conn.read_frame(&ep.addr).await {
            Ok(frame) => frame,
            Err(e) => {
                tracing::debug!(sentinel = %ep.addr, error = %e, "sentinel connection lost");
                return Ok(());
            }
        };
        let items = match frame {
            Frame::Array(items) | Frame::Push(items) => items,
            _ => continue,
        };
        if let [Frame::Bulk(kind), Frame::Bulk(_channel), Frame::Bulk(payload)] = items.as_slice() {
            if kind.eq_ignore_ascii_case(b"message") {
                if let Some(master) = parse_switch(payload, &discovery.name) {
                    discovery.publish(master);
                }
            }
        }
    }
}
