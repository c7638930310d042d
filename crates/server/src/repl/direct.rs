//! The stream written to a replica by the task that changed the data.
//!
//! A link's own task writes the stream to its replica. Woken for every change, that
//! costs two wake-ups of another worker a command at light load: the append wakes the
//! link, and the link's write wakes the client whose reply waits for it
//! ([`super::journal::Journal::hand_off`]). With tokio's LIFO slot off (`runtime.rs`)
//! each goes through the run queue and unparks the idle worker, so a command ping-pongs
//! between cores (`bench/NOTES.md`, stop 82). Redis writes a replica's output in the
//! same event-loop turn as the client's reply.
//!
//! So on a plain TCP link that keeps up, the task that appended a change writes it to
//! the replica's socket itself before its replies leave ([`write_deferred`]), through a
//! duplicate of the socket's descriptor (it shares the socket's non-blocking mode).
//! When other tasks wait to run on the same worker, it leaves the write to the link's
//! task instead, which then runs after them and sends all their changes at once, as
//! Redis writes a replica once for the clients one event-loop turn served. The link's
//! task also writes whatever the socket did not take, what another writer was busy
//! with, what came during DEBUG SLEEP, TLS and Unix links, and changes made by tasks
//! that do not write them (the cron's expiries, the keep-alive PING). Whoever writes holds
//! the link's write token ([`link_busy`]), so the stream goes out once and in order.
//!
//! The link's wake-up is deferred only inside a task polled by the server's runtime
//! (its task-poll hooks call [`task_started`] and [`task_ended`]); what the task did not
//! write itself is woken when its poll ends, so no change is left unannounced. On
//! another runtime (without `--cfg tokio_unstable`) every change wakes the link.

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::journal::{LinkState, ReplicaLink};
use crate::net::counted::Traffic;
use crate::shared::Shared;

thread_local! {
    /// A task of the server's runtime is being polled on this thread.
    static IN_TASK: Cell<bool> = const { Cell::new(false) };
    /// Links whose wake-up this thread's task deferred.
    static DEFERRED: RefCell<Vec<Arc<ReplicaLink>>> = const { RefCell::new(Vec::new()) };
}

/// A replica's socket, for writes from other tasks than its link's.
#[derive(Debug, Default)]
pub struct Direct {
    /// Who writes to the replica now ([`FREE`], [`BUSY`], [`WANTED`]): the link's task
    /// or a direct writer, so pieces of the stream go out once and in order.
    busy: AtomicU8,
    /// The duplicate descriptor, while the link is online over plain TCP.
    socket: Mutex<Option<std::net::TcpStream>>,
    /// Whether `socket` is set: read on every append, without taking its lock.
    open: AtomicBool,
    /// Bytes and write calls that went through it (counted in INFO's stats when the
    /// link ends, as its own socket's are).
    written: AtomicU64,
    writes: AtomicU64,
}

/// A link's write token: nobody writes to the replica.
const FREE: u8 = 0;
/// Somebody writes.
const BUSY: u8 = 1;
/// Somebody writes, and the link's task waits for its turn.
const WANTED: u8 = 2;

/// A link's write token, held by a direct writer or the link's task ([`link_busy`]) and
/// given back when dropped (waking the link's task if it asked for a turn meanwhile).
#[derive(Debug)]
pub struct Busy<'a>(&'a ReplicaLink);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if self.0.direct.busy.swap(FREE, Ordering::AcqRel) == WANTED {
            self.0.outbox.wake();
        }
    }
}

impl Direct {
    /// Lets other tasks write to the replica through `socket` (a duplicate of the link's
    /// own), from now until [`Direct::close`].
    pub fn open(&self, socket: std::net::TcpStream) {
        *self.socket.lock() = Some(socket);
        self.open.store(true, Ordering::Release);
    }

    /// Closes the duplicate: the link ended, and its connection must close with it.
    pub fn close(&self) {
        self.open.store(false, Ordering::Release);
        drop(self.socket.lock().take());
    }

    /// Shuts the connection down now (CLIENT KILL): the replica sees it closed before
    /// the killer's reply leaves, as Redis closes a killed client's socket at once,
    /// rather than when the link's aborted task is dropped.
    pub fn shut_down(&self) {
        if let Some(socket) = self.socket.lock().as_ref() {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
        self.close();
    }

    /// The bytes and write calls made through the duplicate so far.
    pub fn traffic(&self) -> Traffic {
        Traffic {
            written: self.written.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            ..Traffic::default()
        }
    }

    /// One non-blocking write: how many bytes the socket took (0 when it took none, is
    /// closed, or failed; the link's task meets a failure on its own socket).
    fn write(&self, bytes: &[u8]) -> usize {
        let socket = self.socket.lock();
        let Some(mut socket) = socket.as_ref() else {
            return 0;
        };
        match socket.write(bytes) {
            Ok(n) => {
                self.written.fetch_add(n as u64, Ordering::Relaxed);
                self.writes.fetch_add(1, Ordering::Relaxed);
                n
            }
            Err(_) => 0,
        }
    }
}

/// The write token for a direct writer, if nobody holds it.
fn try_busy(link: &ReplicaLink) -> Option<Busy<'_>> {
    link.direct
        .busy
        .compare_exchange(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed)
        .ok()
        .map(|_| Busy(link))
}

/// The write token for the link's own task; `None` while a direct writer holds it,
/// which then wakes the link once it is done.
pub fn link_busy(link: &ReplicaLink) -> Option<Busy<'_>> {
    let busy = &link.direct.busy;
    loop {
        match busy.compare_exchange(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return Some(Busy(link)),
            Err(WANTED) => return None,
            Err(_) => {
                if busy
                    .compare_exchange(BUSY, WANTED, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    return None;
                }
                // Given back meanwhile: try again.
            }
        }
    }
}

/// Called by the runtime before it polls a task on this thread.
pub fn task_started() {
    let _ = IN_TASK.try_with(|t| t.set(true));
}

/// Called by the runtime after it polled a task on this thread: the links whose
/// appends the task did not write itself are woken.
pub fn task_ended() {
    let _ = IN_TASK.try_with(|t| t.set(false));
    while let Some(link) = next_deferred() {
        link.outbox.wake();
    }
}

/// Takes one link off this thread's deferred list (its allocation stays for the next
/// appends; no borrow of it is held while the caller writes or wakes).
fn next_deferred() -> Option<Arc<ReplicaLink>> {
    DEFERRED
        .try_with(|deferred| deferred.borrow_mut().pop())
        .ok()
        .flatten()
}

/// Defers waking `link` for new bytes (see [`write_deferred`]); false when it must be
/// woken now (not inside a task of the server's runtime, or no duplicate to write
/// through).
pub fn defer(link: &Arc<ReplicaLink>) -> bool {
    if !link.direct.open.load(Ordering::Acquire) || !IN_TASK.try_with(Cell::get).unwrap_or(false) {
        return false;
    }
    DEFERRED
        .try_with(|deferred| {
            let mut deferred = deferred.borrow_mut();
            if !deferred.iter().any(|l| Arc::ptr_eq(l, link)) {
                deferred.push(link.clone());
            }
        })
        .is_ok()
}

/// Whether other tasks wait to run on this worker. They run before the link's own task
/// (woken at the end of this poll, it queues behind them), so what they append goes
/// out in the same write, as Redis writes a replica once for all the clients one
/// event-loop turn served.
fn others_queued() -> bool {
    #[cfg(tokio_unstable)]
    if let (Ok(handle), Some(worker)) = (
        tokio::runtime::Handle::try_current(),
        tokio::runtime::worker_index(),
    ) {
        return handle.metrics().worker_local_queue_depth(worker) > 0;
    }
    false
}

/// Writes what this task appended to the replicas it deferred, before its replies
/// leave, unless other tasks wait to run on this worker (then the links are woken when
/// this poll ends); a link this cannot finish for is woken to go on.
pub fn write_deferred(shared: &Shared) {
    let pending = DEFERRED
        .try_with(|deferred| !deferred.borrow().is_empty())
        .unwrap_or(false);
    if !pending || others_queued() {
        return;
    }
    while let Some(link) = next_deferred() {
        if shared.freeze.stopped() || !write(shared, &link) {
            link.outbox.wake();
        }
    }
}

/// Writes the stream `link` has not written yet, if nobody else is writing to it;
/// whether all of it went out.
fn write(shared: &Shared, link: &ReplicaLink) -> bool {
    let Some(_busy) = try_busy(link) else {
        return false;
    };
    let journal = &shared.repl.journal;
    let (chunk, head) = {
        let stream = journal.stream();
        if link.state() != LinkState::Online || link.outbox.is_stuck() {
            return false;
        }
        match stream.next_chunk(link) {
            Ok(Some(chunk)) => (chunk, stream.offset),
            Ok(None) => return true,
            Err(_) => return false,
        }
    };
    let end = link.outbox.sent() + chunk.len() as u64;
    let n = link.direct.write(&chunk);
    let caught_up = n == chunk.len() && end >= head;
    chunk.written_part(n);
    journal.link_tried(link, end, caught_up);
    caught_up
}
