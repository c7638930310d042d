//! The connection task's outer loop: connect on demand, drive, fail, back off.
//!
//! States, in one task that owns the queue's receiver:
//! - **connected**: the [`Driver`] runs until the connection fails or every handle is gone;
//! - **failed**: every pending slot and every request queued before the failure gets the
//!   same typed error at once; nothing is re-sent, because the server may have executed
//!   it. A request queued after the failure (a caller reacting to it) opens the next
//!   connection instead of inheriting the old error;
//! - **idle**: wait for the next request; it triggers the reconnect (requests queued
//!   behind it wait at most the connect timeout). The first attempt after a loss is
//!   immediate; after a failed attempt, the next may start only after a capped, jittered
//!   exponential delay, and requests arriving before then fail at once with the last
//!   connection error (fast failure instead of callers piling up behind a dead server),
//!   unless Sentinel moved the master meanwhile. A failed attempt fails everything queued.
//!
//! With a client-side cache, a new connection turns tracking on before it carries a
//! command, and the cache is flushed when a connection is lost and again when the next
//! one is up: invalidations for the old connection's reads may have been missed.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::driver::{Driver, DriverOptions, LazyNow, Stop};
use super::request::Request;
use crate::cache::Cache;
use crate::config::{Backoff, PushHandler};
use crate::error::Error;
use crate::net::{self, Connection, Endpoint};

pub(crate) async fn run(
    endpoint: Arc<Endpoint>,
    mut rx: mpsc::Receiver<Request>,
    mut initial: Option<Connection>,
    backoff: Backoff,
    push: Option<PushHandler>,
    cache: Option<Arc<Cache>>,
    options: DriverOptions,
) {
    let addr = endpoint.addr.clone();
    let mut failures: u32 = 0;
    // After a failed attempt: no new attempt before this instant; requests arriving
    // meanwhile fail at once with the error that ended the last attempt.
    // Through Sentinel, a move of the master since the failure lifts the backoff: the
    // next attempt goes to the new master.
    let mut backoff_until: Option<(Instant, Error, u64)> = None;
    // A request queued after the last connection failed: it starts the next one.
    let mut carried: Option<Request> = None;
    loop {
        let (conn, first) = match initial.take() {
            Some(conn) => (conn, None),
            None => {
                // Idle: no connection until someone needs one.
                let first = match carried.take() {
                    Some(first) => first,
                    None => match rx.recv().await {
                        Some(first) => first,
                        None => return,
                    },
                };
                if let Some((until, err, moves)) = &backoff_until {
                    if Instant::now() < *until && endpoint.master_moves() == *moves {
                        first.fail(err.clone());
                        continue;
                    }
                }
                match connect(&endpoint, cache.as_deref()).await {
                    Ok(conn) => {
                        failures = 0;
                        backoff_until = None;
                        (conn, Some(first))
                    }
                    Err(err) => {
                        failures = failures.saturating_add(1);
                        tracing::debug!(%addr, error = %err, failures, "reconnect failed");
                        first.fail(err.clone());
                        fail_queued(&mut rx, &err);
                        let until = Instant::now() + backoff.delay(failures);
                        backoff_until = Some((until, err, endpoint.master_moves()));
                        continue;
                    }
                }
            }
        };
        let cache = cache.as_ref();
        match drive(conn, &addr, push.as_ref(), cache, &options, &mut rx, first).await {
            Some((err, failed_at)) => {
                if let Some(cache) = cache {
                    cache.flush();
                }
                carried = fail_queued_before(&mut rx, &err, failed_at)
            }
            None => return,
        }
    }
}

/// Opens a connection; with a cache, turns tracking on and flushes the cache before
/// the connection carries a command.
async fn connect(endpoint: &Endpoint, cache: Option<&Cache>) -> Result<Connection, Error> {
    let mut conn = net::connect(endpoint).await?;
    if let Some(cache) = cache {
        cache.enable_tracking(&mut conn, &endpoint.addr).await?;
        cache.flush();
    }
    Ok(conn)
}

/// Drives one connection to its end. Returns the error that ended it and when, after
/// failing every request the driver held with it, or `None` when the multiplexer was
/// dropped.
async fn drive(
    conn: Connection,
    addr: &Arc<str>,
    push: Option<&PushHandler>,
    cache: Option<&Arc<Cache>>,
    options: &DriverOptions,
    rx: &mut mpsc::Receiver<Request>,
    first: Option<Request>,
) -> Option<(Error, Instant)> {
    let mut driver = Driver::new(conn, addr, push, cache, options);
    if let Some(first) = first {
        driver.accept(first, &mut LazyNow::default());
    }
    match driver.run(rx).await {
        Stop::Closed => None,
        Stop::Failed(err) => {
            let failed_at = Instant::now();
            tracing::debug!(%addr, error = %err, "connection lost");
            driver.fail_all(&err);
            Some((err, failed_at))
        }
    }
}

/// Fails the requests queued before `failed_at` (never sent, queued for the connection
/// that died) and returns the first one queued after it, if any: callers that saw the
/// failure and issued a new command must get a new connection, not the old error.
/// Requests without a deadline carry no enqueue time and are failed.
fn fail_queued_before(
    rx: &mut mpsc::Receiver<Request>,
    err: &Error,
    failed_at: Instant,
) -> Option<Request> {
    while let Ok(request) = rx.try_recv() {
        match request.deadline {
            Some(d)
                if d.at
                    .checked_sub(d.timeout)
                    .is_some_and(|at| at >= failed_at) =>
            {
                return Some(request)
            }
            _ => request.fail(err.clone()),
        }
    }
    None
}

/// Fails every request waiting in the queue (they were never sent).
fn fail_queued(rx: &mut mpsc::Receiver<Request>, err: &Error) {
    while let Ok(request) = rx.try_recv() {
        request.fail(err.clone());
    }
}
