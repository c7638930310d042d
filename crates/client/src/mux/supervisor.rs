//! The connection task's outer loop: connect on demand, drive, fail, back off.
//!
//! States, in one task that owns the queue's receiver:
//! - **connected**: the [`Driver`] runs until the connection fails or every handle is gone;
//! - **failed**: every pending slot and every request still queued gets the same typed
//!   error at once; nothing is re-sent, because the server may have executed it;
//! - **idle**: wait for the next request; it triggers the reconnect. The first attempt
//!   after a loss is immediate; after failed attempts the next one waits a capped,
//!   jittered exponential delay while new requests gather in the bounded queue (their
//!   callers' timeouts still apply). A failed attempt fails what was queued.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::driver::{Driver, Stop};
use super::request::Request;
use crate::config::{Backoff, PushHandler};
use crate::error::Error;
use crate::net::{self, Connection, Endpoint};

pub(crate) async fn run(
    endpoint: Arc<Endpoint>,
    mut rx: mpsc::Receiver<Request>,
    mut initial: Option<Connection>,
    backoff: Backoff,
    push: Option<PushHandler>,
) {
    let addr = endpoint.addr.clone();
    let mut failures: u32 = 0;
    let mut next_attempt: Option<Instant> = None;
    loop {
        let conn = match initial.take() {
            Some(conn) => conn,
            None => {
                // Idle: no connection until someone needs one.
                let Some(first) = rx.recv().await else {
                    return;
                };
                if let Some(at) = next_attempt {
                    tokio::time::sleep_until(at).await;
                }
                match net::connect(&endpoint).await {
                    Ok(conn) => {
                        failures = 0;
                        next_attempt = None;
                        // Put the trigger back in front: it is sent first.
                        match drive(conn, &addr, push.as_ref(), &mut rx, Some(first)).await {
                            Some(err) => fail_queued(&mut rx, &err),
                            None => return,
                        }
                        continue;
                    }
                    Err(err) => {
                        failures = failures.saturating_add(1);
                        next_attempt = Some(Instant::now() + backoff.delay(failures));
                        tracing::debug!(%addr, error = %err, failures, "reconnect failed");
                        first.fail(err.clone());
                        fail_queued(&mut rx, &err);
                        continue;
                    }
                }
            }
        };
        match drive(conn, &addr, push.as_ref(), &mut rx, None).await {
            Some(err) => fail_queued(&mut rx, &err),
            None => return,
        }
    }
}

/// Drives one connection to its end. Returns the error that ended it, after failing
/// every pending slot with it, or `None` when the multiplexer was dropped.
async fn drive(
    conn: Connection,
    addr: &Arc<str>,
    push: Option<&PushHandler>,
    rx: &mut mpsc::Receiver<Request>,
    first: Option<Request>,
) -> Option<Error> {
    let mut driver = Driver::new(conn, addr, push);
    if let Some(first) = first {
        driver.accept(first);
    }
    match driver.run(rx).await {
        Stop::Closed => None,
        Stop::Failed(err) => {
            tracing::debug!(%addr, error = %err, "connection lost");
            driver.fail_pending(&err);
            Some(err)
        }
    }
}

/// Fails every request waiting in the queue (they were never sent).
fn fail_queued(rx: &mut mpsc::Receiver<Request>, err: &Error) {
    while let Ok(request) = rx.try_recv() {
        request.fail(err.clone());
    }
}
