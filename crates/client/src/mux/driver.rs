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
//!    callers.
//!
//! Reads and writes are polled from the same task, so a server that stops reading until
//! its replies are read (a full socket buffer in both directions) cannot deadlock us.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use redline_resp::Frame;
use tokio::io::AsyncWrite;
use tokio::sync::mpsc;

use super::request::{ManyPending, Pending, Request};
use crate::config::PushHandler;
use crate::error::{Error, IoOp};
use crate::net::{Connection, READ_CHUNK};

/// Stop taking requests while this many bytes wait to be written: the socket is the
/// bottleneck then, and the bounded queue (not this buffer) should absorb the burst.
const WRITE_HIGH_WATER: usize = 256 * 1024;

/// Below this much free space the read buffer is grown before reading.
const READ_MIN_SPARE: usize = 4 * 1024;

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
    wbuf: BytesMut,
    needs_flush: bool,
    /// Whether the task already yielded once since its last write (see `poll_run`).
    yielded: bool,
    /// Requests taken from the queue since the last write.
    taken: usize,
    /// Reply slots completed (callers woken) since the last write.
    completed: usize,
    pending: VecDeque<Pending>,
    queue_closed: bool,
}

impl<'a> Driver<'a> {
    pub(crate) fn new(conn: Connection, addr: &'a Arc<str>, push: Option<&'a PushHandler>) -> Self {
        Driver {
            conn,
            addr,
            push,
            wbuf: BytesMut::with_capacity(16 * 1024),
            needs_flush: false,
            yielded: false,
            taken: 0,
            completed: 0,
            pending: VecDeque::with_capacity(1024),
            queue_closed: false,
        }
    }

    /// Runs the connection until the queue closes or the connection fails.
    pub(crate) async fn run(&mut self, rx: &mut mpsc::Receiver<Request>) -> Stop {
        poll_fn(|cx| self.poll_run(cx, rx)).await
    }

    /// Fails every slot that was sent but not answered.
    pub(crate) fn fail_pending(&mut self, err: &Error) {
        for slot in self.pending.drain(..) {
            slot.fail(err.clone());
        }
    }

    fn poll_run(&mut self, cx: &mut Context<'_>, rx: &mut mpsc::Receiver<Request>) -> Poll<Stop> {
        loop {
            let took = self.poll_intake(cx, rx);
            if took && !self.yielded && self.taken < self.completed {
                // Replies since our last write woke more callers than have queued their
                // next command yet: yield once so those already runnable can enqueue,
                // and send one larger write instead of many small ones. Waking ourselves
                // puts this task at the back of the run queue. A lone caller never
                // triggers this (one reply, one command), so it pays no extra hop.
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
            if self.queue_closed && self.pending.is_empty() && self.wbuf.is_empty() {
                return Poll::Ready(Stop::Closed);
            }
            if !took && !wrote && !read {
                // Every source returned Pending and registered this task's waker (or,
                // for intake, was skipped because the write side is full and will wake
                // us). A write that made progress loops again: intake may have been
                // skipped at the high-water mark and must now poll the queue.
                return Poll::Pending;
            }
        }
    }

    /// Queues one request's bytes for writing and its slot for replies.
    #[inline]
    pub(crate) fn accept(&mut self, req: Request) {
        if req.is_abandoned() {
            return;
        }
        self.wbuf.extend_from_slice(&req.bytes);
        self.pending.push_back(req.slot.into_pending());
        self.taken += 1;
    }

    /// Moves queued requests into the output buffer. Returns whether any was taken.
    fn poll_intake(&mut self, cx: &mut Context<'_>, rx: &mut mpsc::Receiver<Request>) -> bool {
        let mut took = false;
        while !self.queue_closed && self.wbuf.len() < WRITE_HIGH_WATER {
            match rx.poll_recv(cx) {
                Poll::Ready(Some(req)) => {
                    took = true;
                    self.accept(req);
                }
                Poll::Ready(None) => self.queue_closed = true,
                Poll::Pending => break,
            }
        }
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
                    self.taken = 0;
                    self.completed = 0;
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

    /// Reads once and dispatches every complete frame. Returns whether bytes were read.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Result<bool, Error> {
        let conn = &mut self.conn;
        if conn.rbuf.capacity() - conn.rbuf.len() < READ_MIN_SPARE {
            // Frames handed out share the old buffer; reserve reuses it when they are
            // gone and allocates a fresh one otherwise, never copying their payloads.
            conn.rbuf.reserve(READ_CHUNK);
        }
        match tokio_util::io::poll_read_buf(Pin::new(&mut conn.stream), cx, &mut conn.rbuf) {
            Poll::Ready(Ok(0)) => Err(Error::ConnectionClosed {
                addr: self.addr.clone(),
            }),
            Poll::Ready(Ok(_)) => {
                self.dispatch_frames()?;
                Ok(true)
            }
            Poll::Ready(Err(e)) => Err(self.io_error(IoOp::Read, e)),
            Poll::Pending => Ok(false),
        }
    }

    fn dispatch_frames(&mut self) -> Result<(), Error> {
        while let Some(frame) = self.conn.decoder.decode(&mut self.conn.rbuf)? {
            self.dispatch(frame)?;
        }
        Ok(())
    }

    /// Hands one reply to the oldest pending slot, or a push frame to the push handler.
    #[inline]
    fn dispatch(&mut self, frame: Frame) -> Result<(), Error> {
        if let Frame::Push(_) = frame {
            if let Some(handler) = self.push {
                handler.call(frame);
            }
            return Ok(());
        }
        match self.pending.front_mut() {
            Some(Pending::One(_)) => {
                if let Some(Pending::One(tx)) = self.pending.pop_front() {
                    // A caller that timed out has dropped its receiver: the reply is
                    // discarded here, in order, and the pipe stays in step.
                    let _ = tx.send(Ok(frame));
                    self.completed += 1;
                }
            }
            Some(Pending::Many(many)) => {
                many.frames.push(frame);
                many.remaining -= 1;
                if many.remaining == 0 {
                    if let Some(Pending::Many(many)) = self.pending.pop_front() {
                        let ManyPending { frames, tx, .. } = *many;
                        let _ = tx.send(Ok(frames));
                        self.completed += 1;
                    }
                }
            }
            None => {
                return Err(Error::UnexpectedReply {
                    addr: self.addr.clone(),
                })
            }
        }
        Ok(())
    }

    fn io_error(&self, op: IoOp, e: io::Error) -> Error {
        Error::io(op, self.addr, e)
    }
}
