//! The connection task's inner loop: one task, one socket, no locks.
//!
//! [`Driver::run`] polls three things in turn until none can make progress:
//!
//! 1. **intake** — takes every request waiting in the queue, copies its bytes into the
//!    output buffer and appends its reply slot to the FIFO of pending slots (requests
//!    whose caller already gave up are skipped: they were never sent);
//! 2. **write** — writes the output buffer; everything queued while the previous write
//!    was in flight goes out in one `write` syscall;
//! 3. **read** — reads what the socket has, decodes every complete frame and completes
//!    pending slots front to back. RESP3 push frames go to the push handler and never
//!    consume a slot, so server-initiated messages cannot shift replies onto the wrong
//!    callers. Client-side cache invalidations are applied right there, in stream order
//!    with the replies around them (see `crate::cache`). Under load it completes one
//!    *wave* of slots (about a quarter of those in flight, see [`wave_size`]), lets those
//!    callers run, writes what they sent, and only then hands out the next wave, so
//!    redis-server works on one batch while the callers prepare the next.
//!
//! 4. **timer** — one timer per connection enforces every command's deadline: when it
//!    fires, expired slots at the front of the FIFO are answered with a timeout and left
//!    as tombstones that swallow their late replies. It is re-armed lazily (only when it
//!    fires, or when the FIFO was empty), so under load it costs one timer update per
//!    timeout period instead of a timer registration per command.
//!
//! 5. **watchdog** — once the oldest slot is a timed-out tombstone, the connection must
//!    show a sign of life (any byte read) within `unresponsive_after`, or it is failed
//!    like a broken socket: a peer that stopped answering without closing (frozen host,
//!    dropped route) is replaced instead of timing out every command until keepalive
//!    notices. It rides on the same timer.
//!
//! 6. **retire** — a connection to a master found through Sentinel closes when Sentinel
//!    moves the master (see [`crate::sentinel`]); one poll per wake-up, none otherwise.
//!
//! Reads and writes are polled from the same task, so a server that stops reading until
//! its replies are read (a full socket buffer in both directions) cannot deadlock us.

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use redline_resp::scan::{Scanner, Side};
use redline_resp::{Frame, Limits};
use tokio::io::AsyncWrite;
use tokio::sync::mpsc;
use tokio::time::{Instant, Sleep};

use super::request::{Encoded, Pending, Reply, Request};
use super::turns::{TurnMark, Turns, Waiting};
use crate::cache::Cache;
use crate::config::PushHandler;
use crate::error::{Error, IoOp};
use crate::net::{Connection, READ_CHUNK};

/// The current instant, read from the clock once, and only when something asks for it.
#[derive(Default)]
pub(crate) struct LazyNow(Option<Instant>);

impl LazyNow {
    pub(crate) fn get(&mut self) -> Instant {
        *self.0.get_or_insert_with(Instant::now)
    }
}

/// Stop taking requests while this many bytes wait to be written: the socket is the
/// bottleneck then, and the bounded queue (not this buffer) should absorb the burst.
const WRITE_HIGH_WATER: usize = 256 * 1024;

/// Below this much free space the read buffer is grown before reading.
const READ_MIN_SPARE: usize = 4 * 1024;

/// The connection settings the driver reads from [`Config`](crate::Config).
#[derive(Clone, Debug)]
pub(crate) struct DriverOptions {
    /// See `Config::unresponsive_after`.
    pub(crate) unresponsive_after: Option<Duration>,
    /// How many times in a row the driver re-polls itself, instead of waiting for the
    /// socket, while replies are due (`Config::busy_polls`). Parking the worker between
    /// batches and being woken by the I/O driver cost redline 3.6x redis-rs' context
    /// switches per command; with 32, GET at 64 callers went from 235-270k to 286-327k
    /// ops/s on an idle machine (bench/NOTES.md, "client"). Bounded, and only while
    /// commands are in flight: an idle connection never spins.
    pub(crate) busy_polls: u32,
    /// See `Config::reply_waves` and [`wave_size`].
    pub(crate) waves: bool,
    /// Shared by every connection of one client (see [`Turns`]).
    pub(crate) turns: Arc<Turns>,
    /// `Config::limits`, which the decoder also applies.
    pub(crate) limits: Limits,
}

impl DriverOptions {
    pub(crate) fn of(cfg: &crate::Config) -> DriverOptions {
        DriverOptions {
            unresponsive_after: cfg.unresponsive_after,
            busy_polls: cfg.busy_polls,
            waves: cfg.reply_waves.unwrap_or(true),
            turns: cfg.turns.clone().unwrap_or_default(),
            limits: cfg.limits,
        }
    }
}

/// How the driver stopped.
pub(crate) enum Stop {
    /// Every handle was dropped and every pending reply delivered.
    Closed,
    /// The connection failed; pending slots are still in the driver for the caller to fail.
    Failed(Error),
}

pub(crate) struct Driver<'a> {
    conn: Connection,
    addr: &'a Arc<str>,
    push: Option<&'a PushHandler>,
    cache: Option<&'a Arc<Cache>>,
    wbuf: BytesMut,
    needs_flush: bool,
    /// Whether the task already yielded once since its last write (see `poll_run`).
    yielded: bool,
    /// Callers woken and commands taken, over every connection of the client.
    turns: Arc<Turns>,
    /// Where `turns` stood at the last write.
    turn_mark: TurnMark,
    /// Reply slots completed (callers woken) and requests taken, not yet added to
    /// `turns` (it is updated once per batch, not once per command).
    completed: usize,
    taken: usize,
    /// Sent requests awaiting replies, oldest first.
    pending: VecDeque<Pending>,
    /// How many slots at the front of `pending` are timed-out tombstones. Deadlines are
    /// in queue order, so tombstones always form a prefix.
    expired_prefix: usize,
    /// One request taken from the queue while the output buffer is full, so its deadline
    /// is known and enforced although it cannot be written yet.
    staged: Option<Request>,
    timer: Pin<Box<Sleep>>,
    timer_armed: bool,
    queue_closed: bool,
    /// Polls in a row that made no progress while replies were due (see
    /// [`DriverOptions::busy_polls`]).
    spins: u32,
    busy_polls: u32,
    /// Counts this connection among the client's with replies due (see `spin_budget`).
    waiting: Waiting,
    /// Successful reads so far (the watchdog's sign of life).
    reads: u64,
    /// While the oldest slot is a tombstone: when the connection is declared dead unless
    /// `reads` moved past the recorded count.
    watchdog: Option<(Instant, u64)>,
    unresponsive_after: Option<Duration>,
    /// Through Sentinel: resolves when the master moved and this connection must close.
    retire: Option<crate::sentinel::Retire>,
    /// Complete replies may be left in the read buffer after a wave (see [`wave_size`]).
    backlog: bool,
    waves: bool,
    /// Finds where replies end without decoding them, for raw slots.
    scanner: Scanner,
    /// Callers' command buffers copied this intake, handed back at its end.
    copied: Vec<BytesMut>,
}

/// One reply read from the connection.
enum Incoming {
    Frame(Frame),
    /// For a raw slot: the reply as the server encoded it.
    Raw(Bytes),
}

/// Up to this many commands in flight, a spin reads the socket itself instead of only
/// looking at tokio's readiness flag.
///
/// That flag is set by the I/O driver, which a busy worker polls only now and then (and
/// an idle one only after its park is woken), so a spin that only looks at it rarely
/// sees a reply land: the worker parks anyway and the reply waits for a wake-up. A
/// `recv` per spin sees it at once. With few commands in flight the round trip is the
/// limit and a core is idle, so the syscalls are cheap: GET at 1 caller 18k → 40k ops/s,
/// at 16 callers 300k → 390k, at 64 callers 1.0M → 1.3M (one redis-server, quiet
/// machine). With many in flight every core is busy and an empty `recv` takes CPU from
/// the callers and the servers: on a 3-master cluster sharing the client's two cores,
/// 256 callers lost about 5% when their connections (about 85 in flight each) took
/// direct reads (bench/NOTES.md).
const DIRECT_READS_UP_TO: usize = 64;

/// How many replies the driver hands out before it lets the woken callers run
/// (`None`: all it has).
///
/// Waking every caller of a batch at once and writing again only when all of them have
/// queued their next command serialises the two sides: redis-server idles while the
/// callers run, the callers idle while it answers, and a server left idle that long
/// also wakes slower. Handing out about a quarter of the commands in flight per turn,
/// then writing what those callers sent before handing out the next quarter, keeps
/// several smaller batches in flight, so both sides work at the same time
/// (`Config::reply_waves` has the figures). From 8 commands in flight, waves of at least
/// 4: at 16 callers GET went from about 290k to 420-440k ops/s on one redis-server, at 8
/// from 170-190k to 210-240k. Below 8 there are no waves: a wave of under 4 costs a
/// write and a task turn for too few commands, and one caller pays no extra turn.
fn wave_size(in_flight: usize) -> Option<usize> {
    const FROM: usize = 8;
    const SHARE: usize = 4;
    const MIN: usize = 4;
    const MAX: usize = 32;
    (in_flight >= FROM).then(|| (in_flight / SHARE).clamp(MIN, MAX))
}

impl<'a> Driver<'a> {
    pub(crate) fn new(
        mut conn: Connection,
        addr: &'a Arc<str>,
        push: Option<&'a PushHandler>,
        cache: Option<&'a Arc<Cache>>,
        options: &DriverOptions,
    ) -> Self {
        Driver {
            retire: conn.retire.take(),
            conn,
            addr,
            push,
            cache,
            wbuf: BytesMut::with_capacity(16 * 1024),
            needs_flush: false,
            yielded: false,
            turn_mark: options.turns.mark(),
            turns: options.turns.clone(),
            completed: 0,
            taken: 0,
            pending: VecDeque::with_capacity(1024),
            expired_prefix: 0,
            staged: None,
            timer: Box::pin(tokio::time::sleep_until(Instant::now())),
            timer_armed: false,
            queue_closed: false,
            spins: 0,
            busy_polls: options.busy_polls,
            waiting: Waiting::new(options.turns.clone()),
            reads: 0,
            watchdog: None,
            unresponsive_after: options.unresponsive_after,
            backlog: false,
            waves: options.waves,
            scanner: Scanner::with_limits(Side::Reply, options.limits),
            copied: Vec::new(),
        }
    }

    /// Runs the connection until the queue closes or the connection fails.
    pub(crate) async fn run(&mut self, rx: &mut mpsc::Receiver<Request>) -> Stop {
        poll_fn(|cx| self.poll_run(cx, rx)).await
    }

    /// Fails every request the driver holds: sent but unanswered, or staged. Replies
    /// already read are delivered first.
    pub(crate) fn fail_all(&mut self, err: &Error) {
        if self.backlog {
            // Replies already read (the rest of a wave) are answers, not failures.
            while let Ok(Some(frame)) = self.conn.decoder.decode(&mut self.conn.rbuf) {
                if self.dispatch(frame).is_err() {
                    break;
                }
            }
            self.backlog = false;
        }
        for slot in self.pending.drain(..) {
            slot.fail(err.clone());
        }
        self.expired_prefix = 0;
        if let Some(req) = self.staged.take() {
            req.fail(err.clone());
        }
    }

    fn poll_run(&mut self, cx: &mut Context<'_>, rx: &mut mpsc::Receiver<Request>) -> Poll<Stop> {
        if let Some(retire) = self.retire.as_mut() {
            if let Poll::Ready(err) = retire.as_mut().poll(cx) {
                return Poll::Ready(Stop::Failed(err));
            }
        }
        loop {
            let took = self.poll_intake(cx, rx);
            if took && !self.yielded && self.turns.callers_pending(&self.turn_mark) {
                // Replies since our last write, on any of the client's connections, woke
                // more callers than have queued their next command yet: yield once so
                // those already runnable can enqueue, and send one larger write instead
                // of many small ones. Waking ourselves puts this task at the back of the
                // run queue. A lone caller never triggers this (one reply, one command),
                // so it pays no extra hop.
                self.yielded = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let wrote = match self.poll_write(cx) {
                Ok(wrote) => wrote,
                Err(e) => return Poll::Ready(Stop::Failed(e)),
            };
            let read = match self.poll_read(cx) {
                Ok(read) => read,
                Err(e) => return Poll::Ready(Stop::Failed(e)),
            };
            let fired = match self.poll_timer(cx) {
                Ok(fired) => fired,
                Err(e) => return Poll::Ready(Stop::Failed(e)),
            };
            if self.backlog {
                // A wave was handed out: let its callers run and queue their next
                // commands, which the next turn writes before the next wave.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if self.queue_closed && self.pending.is_empty() && self.wbuf.is_empty() {
                return Poll::Ready(Stop::Closed);
            }
            if !took && !wrote && !read && !fired && self.spins < self.spin_budget() {
                // Replies are due: stay runnable (back of the run queue) instead of parking
                // the worker and being woken by the I/O driver for each batch. With few
                // in flight, look at the socket itself (see `DIRECT_READS_UP_TO`).
                self.spins += 1;
                if self.reads_directly() {
                    match self.read_directly() {
                        Ok(true) => {
                            self.spins = 0;
                            if self.backlog {
                                // The read handed out a wave: its callers run before
                                // the next one (looping would hand that out at once).
                                cx.waker().wake_by_ref();
                                return Poll::Pending;
                            }
                            continue;
                        }
                        Ok(false) => {}
                        Err(e) => return Poll::Ready(Stop::Failed(e)),
                    }
                }
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if took || wrote || read {
                self.spins = 0;
            }
            if !took && !wrote && !read && !fired {
                // Every source returned Pending and registered this task's waker (or,
                // for intake, was skipped because the write side is full and will wake
                // us). A write that made progress loops again: intake may have been
                // skipped at the high-water mark and must now poll the queue.
                return Poll::Pending;
            }
        }
    }

    /// Queues one request's bytes for writing and its slot for replies; a request whose
    /// caller is gone or whose deadline passed is answered without being sent.
    #[inline]
    pub(crate) fn accept(&mut self, req: Request, now: &mut LazyNow) {
        if req.is_abandoned() {
            return;
        }
        if req.deadline.is_some() && req.expired(now.get()) {
            req.time_out();
            return;
        }
        self.wbuf.extend_from_slice(&req.bytes);
        let deadline = req.deadline;
        let (bytes, pending) = req.into_parts();
        self.pending.push_back(pending);
        if let Encoded::Owned(buf) = bytes {
            self.copied.push(buf);
        }
        self.taken += 1;
        if self.watchdog.is_some() {
            // The timer may be set for the watchdog, later than this deadline.
            self.rearm_for(deadline);
        }
    }

    /// Re-arms the timer if `deadline` comes before the instant it is set for.
    fn rearm_for(&mut self, deadline: Option<super::request::Deadline>) {
        if !self.timer_armed {
            // Sets it for the earliest of everything, this deadline included.
            self.arm_timer();
        } else if let Some(d) = deadline {
            if d.at < self.timer.deadline() {
                self.timer.as_mut().reset(d.at);
            }
        }
    }

    /// Moves queued requests into the output buffer. Returns whether any was taken.
    fn poll_intake(&mut self, cx: &mut Context<'_>, rx: &mut mpsc::Receiver<Request>) -> bool {
        // The busy poll calls this while the queue is empty: no clock read then.
        let mut now = LazyNow::default();
        let mut took = false;
        if self.wbuf.len() < WRITE_HIGH_WATER {
            if let Some(req) = self.staged.take() {
                took = true;
                self.accept(req, &mut now);
            }
        }
        while !self.queue_closed && self.wbuf.len() < WRITE_HIGH_WATER {
            match rx.poll_recv(cx) {
                Poll::Ready(Some(req)) => {
                    took = true;
                    self.accept(req, &mut now);
                }
                Poll::Ready(None) => self.queue_closed = true,
                Poll::Pending => break,
            }
        }
        if self.wbuf.len() >= WRITE_HIGH_WATER && self.staged.is_none() && !self.queue_closed {
            // The socket is not keeping up. Take one request anyway, without sending it,
            // so the timer knows the next queued deadline: callers behind a stalled
            // server still time out on time.
            while let Poll::Ready(next) = rx.poll_recv(cx) {
                match next {
                    Some(req) if req.expired(now.get()) => req.time_out(),
                    Some(req) => {
                        let deadline = req.deadline;
                        self.staged = Some(req);
                        self.rearm_for(deadline);
                        break;
                    }
                    None => {
                        self.queue_closed = true;
                        break;
                    }
                }
            }
        }
        self.turns.took(std::mem::take(&mut self.taken));
        crate::buffers::give_back(&mut self.copied);
        took
    }

    /// Writes as much of the output buffer as the socket takes, then flushes (TLS keeps
    /// records buffered until flushed). Returns whether bytes were written.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Result<bool, Error> {
        let stream = &mut self.conn.stream;
        let mut wrote = false;
        while !self.wbuf.is_empty() {
            match Pin::new(&mut *stream).poll_write(cx, &self.wbuf) {
                Poll::Ready(Ok(0)) => {
                    return Err(self.io_error(IoOp::Write, io::ErrorKind::WriteZero.into()))
                }
                Poll::Ready(Ok(n)) => {
                    self.wbuf.advance(n);
                    self.needs_flush = true;
                    self.yielded = false;
                    self.turn_mark = self.turns.mark();
                    wrote = true;
                }
                Poll::Ready(Err(e)) => return Err(self.io_error(IoOp::Write, e)),
                Poll::Pending => return Ok(wrote),
            }
        }
        if self.needs_flush {
            match Pin::new(&mut self.conn.stream).poll_flush(cx) {
                Poll::Ready(Ok(())) => self.needs_flush = false,
                Poll::Ready(Err(e)) => return Err(self.io_error(IoOp::Write, e)),
                Poll::Pending => {}
            }
        }
        Ok(wrote)
    }

    /// Hands out the next wave of replies already read, or else reads once and hands out
    /// the first wave of what arrived. Returns whether it made progress.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Result<bool, Error> {
        if self.backlog {
            self.dispatch_frames()?;
            return Ok(true);
        }
        self.make_read_room();
        let conn = &mut self.conn;
        match tokio_util::io::poll_read_buf(Pin::new(&mut conn.stream), cx, &mut conn.rbuf) {
            Poll::Ready(result) => self.took_read(result),
            Poll::Pending => Ok(false),
        }
    }

    /// Frames handed out share the old buffer; reserve reuses it when they are gone and
    /// allocates a fresh one otherwise, never copying their payloads.
    fn make_read_room(&mut self) {
        let rbuf = &mut self.conn.rbuf;
        if rbuf.capacity() - rbuf.len() < READ_MIN_SPARE {
            rbuf.reserve(READ_CHUNK);
        }
    }

    /// Hands out what a read brought; a read of 0 bytes is the server closing.
    fn took_read(&mut self, result: io::Result<usize>) -> Result<bool, Error> {
        match result {
            Ok(0) => Err(Error::ConnectionClosed {
                addr: self.addr.clone(),
            }),
            Ok(_) => {
                self.reads += 1;
                self.dispatch_frames()?;
                Ok(true)
            }
            Err(e) => Err(self.io_error(IoOp::Read, e)),
        }
    }

    /// How many spins in a row the driver may take now (see `busy_polls`): none with
    /// nothing due, twice `busy_polls` while it reads the socket itself, divided by the
    /// square of how many of the client's connections have replies due. Asked whenever a
    /// turn made no progress, it also records in that count whether this connection has
    /// replies due, so the count follows every connection's pending queue.
    ///
    /// A spin keeps the worker awake until the next reply lands. With K connections
    /// waiting (a cluster's nodes), the worker takes their spins in turn, so each needs a
    /// K-th of the turns to span the same time, and some connection's reply lands about
    /// K times sooner, so that time is a K-th as long. Without the division, three nodes'
    /// spins at 16 callers were mostly empty reads (2.2 `recv`s a command against 0.3 on
    /// one redis-server) taking CPU from the callers: 1.2 µs more client CPU a command and
    /// a third higher p99 (bench/NOTES.md, stop 54). One connection waiting keeps the
    /// whole budget, as a cluster command from a lone caller does.
    fn spin_budget(&mut self) -> u32 {
        let due = !self.pending.is_empty();
        self.waiting.set(due);
        if !due {
            return 0;
        }
        let budget = if self.reads_directly() {
            self.busy_polls.saturating_mul(2)
        } else {
            self.busy_polls
        };
        let waiting = self.waiting.connections().max(1);
        budget / u32::try_from(waiting.saturating_mul(waiting)).unwrap_or(u32::MAX)
    }

    /// Whether a spin reads the socket itself now: few commands in flight (see
    /// [`DIRECT_READS_UP_TO`]) on a stream that can be read past tokio.
    fn reads_directly(&self) -> bool {
        self.pending.len() <= DIRECT_READS_UP_TO && self.conn.stream.reads_now()
    }

    /// One spin's read: asks the kernel for what the socket holds, past tokio's readiness
    /// flag (plain TCP only). Returns whether replies were read.
    fn read_directly(&mut self) -> Result<bool, Error> {
        self.make_read_room();
        match self.conn.stream.read_now(&mut self.conn.rbuf) {
            // Nothing yet. Only here: tokio's own reads turn this into `Pending` and
            // register the waker, so it must not be swallowed on their path.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            read => self.took_read(read),
        }
    }

    /// Dispatches complete frames from the read buffer, stopping after one wave of
    /// completed slots (and setting `backlog`) when more may be left.
    fn dispatch_frames(&mut self) -> Result<(), Error> {
        let wave = wave_size(self.pending.len())
            .filter(|_| self.waves)
            .unwrap_or(usize::MAX);
        let mut done = 0;
        self.backlog = false;
        while let Some(reply) = self.next_reply()? {
            let before = self.pending.len();
            match reply {
                Incoming::Frame(frame) => self.dispatch(frame)?,
                Incoming::Raw(bytes) => self.complete_raw(bytes),
            }
            if self.pending.len() < before {
                done += 1;
                if done == wave {
                    self.backlog = true;
                    break;
                }
            }
        }
        self.turns.woke(std::mem::take(&mut self.completed));
        Ok(())
    }

    /// The next complete reply in the read buffer, or `None` until more arrives: as its
    /// bytes when the oldest slot wants them and the buffer stands at a reply that is not
    /// a push, decoded otherwise.
    #[inline]
    fn next_reply(&mut self) -> Result<Option<Incoming>, Error> {
        let conn = &mut self.conn;
        let raw = self.pending.front().is_some_and(Pending::wants_raw)
            && !conn.decoder.in_frame()
            && conn.rbuf.first() != Some(&b'>');
        if raw {
            match self.scanner.next(&conn.rbuf) {
                Ok(Some(end)) => {
                    return Ok(Some(Incoming::Raw(conn.rbuf.split_to(end).freeze())));
                }
                Ok(None) => return Ok(None),
                // Not what the scanner accepts: the decoder reads it from its first byte
                // and answers with the exact protocol error (or a frame, encoded again).
                Err(_) => self.scanner.reset(),
            }
        } else if self.scanner.in_frame() {
            // The slot that wanted bytes timed out mid-reply: decode that reply whole.
            self.scanner.reset();
        }
        Ok(conn.decoder.decode(&mut conn.rbuf)?.map(Incoming::Frame))
    }

    /// Hands one reply's bytes to the oldest slot, a raw one.
    fn complete_raw(&mut self, bytes: Bytes) {
        if let Some(Pending {
            reply: Reply::Raw(raw),
            ..
        }) = self.pending.front_mut()
        {
            if raw.push(bytes) {
                self.deliver_front();
            }
        }
    }

    /// The oldest slot, a unit of several commands, has all its replies: to its caller.
    fn deliver_front(&mut self) {
        match self.pending.pop_front().map(|p| p.reply) {
            Some(Reply::Many(many)) => many.deliver(),
            Some(Reply::Raw(raw)) => raw.deliver(),
            _ => return,
        }
        self.completed += 1;
    }

    /// Hands one reply to the oldest pending slot, or a push frame to the push handler.
    #[inline]
    fn dispatch(&mut self, frame: Frame) -> Result<(), Error> {
        if let Frame::Push(_) = frame {
            if let Some(cache) = self.cache {
                cache.on_push(&frame);
            }
            if let Some(handler) = self.push {
                handler.call(frame);
            }
            return Ok(());
        }
        let Some(front) = self.pending.front_mut() else {
            return Err(Error::UnexpectedReply {
                addr: self.addr.clone(),
            });
        };
        match &mut front.reply {
            Reply::One(_) => {
                if let Some(Pending {
                    reply: Reply::One(tx),
                    ..
                }) = self.pending.pop_front()
                {
                    // A caller whose future was dropped is simply not told.
                    let _ = tx.send(Ok(frame));
                    self.completed += 1;
                }
            }
            Reply::Many(many) => {
                if many.push(frame) {
                    self.deliver_front();
                }
            }
            // A reply the scanner left to the decoder: encoded again for the raw slot.
            Reply::Raw(raw) => {
                let mut bytes = BytesMut::new();
                redline_resp::encode::frame(&mut bytes, &frame);
                if raw.push(bytes.freeze()) {
                    self.deliver_front();
                }
            }
            Reply::Expired { remaining } => {
                // The caller already got its timeout; the late reply keeps the pipe in step.
                *remaining -= 1;
                if *remaining == 0 {
                    self.pending.pop_front();
                    self.expired_prefix = self.expired_prefix.saturating_sub(1);
                }
            }
        }
        Ok(())
    }

    /// Arms the timer for the earliest deadline still to enforce, or the watchdog.
    fn arm_timer(&mut self) {
        let next = match self.pending.get(self.expired_prefix) {
            Some(p) => p.deadline,
            None => self.staged.as_ref().and_then(|r| r.deadline),
        };
        let next = match (next.map(|d| d.at), self.watchdog.map(|(at, _)| at)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = next {
            self.timer.as_mut().reset(at);
            self.timer_armed = true;
        }
    }

    /// Expires what is due when the timer fires, then re-arms it for the next deadline.
    /// Returns whether it fired: the caller loops again, so intake looks at the queue
    /// (and registers for it) if the staged request was just timed out.
    fn poll_timer(&mut self, cx: &mut Context<'_>) -> Result<bool, Error> {
        let mut fired = false;
        loop {
            if !self.timer_armed {
                self.arm_timer();
                if !self.timer_armed {
                    return Ok(fired);
                }
            }
            if self.timer.as_mut().poll(cx).is_pending() {
                return Ok(fired);
            }
            fired = true;
            self.timer_armed = false;
            let now = Instant::now();
            self.expire_due(now);
            self.check_watchdog(now)?;
        }
    }

    /// Starts, renews, stops or trips the watchdog (see the module docs).
    fn check_watchdog(&mut self, now: Instant) -> Result<(), Error> {
        let Some(after) = self.unresponsive_after else {
            return Ok(());
        };
        if self.expired_prefix == 0 {
            self.watchdog = None;
            return Ok(());
        }
        match self.watchdog {
            Some((at, reads)) if at <= now => {
                if reads == self.reads {
                    return Err(self.io_error(
                        IoOp::Read,
                        io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("no reply for {after:?} after a command timed out"),
                        ),
                    ));
                }
                // Replies are flowing, just slowly: give it another period.
                self.watchdog = Some((now + after, self.reads));
            }
            Some(_) => {}
            None => self.watchdog = Some((now + after, self.reads)),
        }
        Ok(())
    }

    /// Times out every slot, and the staged request, whose deadline is at or before `now`.
    fn expire_due(&mut self, now: Instant) {
        while let Some(p) = self.pending.get_mut(self.expired_prefix) {
            match p.deadline {
                Some(d) if d.at <= now => {
                    p.expire();
                    self.expired_prefix += 1;
                }
                _ => break,
            }
        }
        if self.staged.as_ref().is_some_and(|r| r.expired(now)) {
            if let Some(req) = self.staged.take() {
                req.time_out();
            }
        }
    }

    fn io_error(&self, op: IoOp, e: io::Error) -> Error {
        Error::io(op, self.addr, e)
    }
}
