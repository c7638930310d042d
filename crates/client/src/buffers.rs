//! Command buffers handed back by the connection tasks for the callers' next commands.
//!
//! A caller encodes each command into a buffer of its own ([`Cmd`](crate::Cmd)); the
//! connection task copies it into the socket's write buffer and is done with it. Freed
//! there, on another thread than the one that allocated it, every command's buffer went
//! through malloc's slow paths on both threads: about 290 instructions a command, 7% of
//! the client's, at 16 callers (bench/NOTES.md). Instead the connection task hands the
//! copied buffers back in one batch per intake ([`give_back`]), and a caller takes them a
//! few at a time into a stack of its thread's ([`take`]), so the shared list is locked
//! once per batch on both sides.
//!
//! Both lists are bounded (a few tens of KB in all); what does not fit is freed.

use std::cell::RefCell;
use std::sync::Mutex;

use bytes::BytesMut;

/// A command buffer's capacity: fits a typical command (e.g. SET with a ~80-byte value)
/// without regrowing. Only buffers of this capacity are kept.
pub(crate) const SIZE: usize = 128;

/// Buffers kept between the connection tasks and the callers' threads.
const SHARED_MAX: usize = 256;

/// Buffers a thread takes from the shared list at a time.
const REFILL: usize = 8;

/// The list the connection tasks hand buffers back to and the callers' threads refill
/// from.
struct Shared(Mutex<Vec<BytesMut>>);

static SHARED: Shared = Shared::new();

thread_local! {
    static LOCAL: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer of [`SIZE`] bytes: a handed-back one when there is one.
pub(crate) fn take() -> BytesMut {
    LOCAL
        .with_borrow_mut(|local| {
            if local.is_empty() {
                SHARED.refill(local);
            }
            local.pop()
        })
        .unwrap_or_else(|| BytesMut::with_capacity(SIZE))
}

/// `bytes` in a buffer of their own: a handed-back one when they fit.
pub(crate) fn copy_of(bytes: &[u8]) -> BytesMut {
    if bytes.len() > SIZE {
        return BytesMut::from(bytes);
    }
    let mut buf = take();
    buf.extend_from_slice(bytes);
    buf
}

/// Keeps a buffer this thread is done with for its next [`take`] (or frees it).
pub(crate) fn keep(mut buf: BytesMut) {
    if reclaim(&mut buf) {
        LOCAL.with_borrow_mut(|local| {
            if local.len() < 2 * REFILL {
                local.push(buf);
            }
        });
    }
}

/// Empties `buf` for reuse; false if it is not of the usual size (not worth keeping).
fn reclaim(buf: &mut BytesMut) -> bool {
    buf.clear();
    // Takes back the room in front that the encoder skipped (no copy: it is empty).
    if buf.capacity() < SIZE {
        buf.reserve(SIZE);
    }
    buf.capacity() == SIZE
}

/// Takes buffers whose bytes were copied out, leaving `bufs` empty: those of the usual
/// size are kept for [`take`], up to the bound; the others are freed.
pub(crate) fn give_back(bufs: &mut Vec<BytesMut>) {
    SHARED.give_back(bufs);
}

impl Shared {
    const fn new() -> Shared {
        Shared(Mutex::new(Vec::new()))
    }

    /// Moves up to [`REFILL`] buffers to a thread's own stack.
    fn refill(&self, local: &mut Vec<BytesMut>) {
        // A busy list means another thread is at it: allocating is cheaper than waiting.
        let Ok(mut shared) = self.0.try_lock() else {
            return;
        };
        let from = shared.len().saturating_sub(REFILL);
        local.extend(shared.drain(from..));
    }

    fn give_back(&self, bufs: &mut Vec<BytesMut>) {
        if bufs.is_empty() {
            return;
        }
        bufs.retain_mut(reclaim);
        if let Ok(mut shared) = self.0.lock() {
            let room = SHARED_MAX.saturating_sub(shared.len());
            let keep = bufs.len().min(room);
            shared.extend(bufs.drain(..keep));
        }
        bufs.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{Buf, BufMut};

    #[test]
    fn a_copied_buffer_serves_another_command() {
        let mut buf = take();
        buf.put_slice(b"*1\r\n$4\r\nPING\r\n");
        buf.advance(4);
        let at = buf.as_ptr() as usize - 4;
        // Another thread (the connection task's) hands it back, to a list of this test's
        // own: tests running beside it take from and fill the process's list.
        let shared = std::sync::Arc::new(Shared::new());
        let giver = shared.clone();
        std::thread::spawn(move || giver.give_back(&mut vec![buf]))
            .join()
            .unwrap();
        let mut local = Vec::new();
        shared.refill(&mut local);
        assert_eq!(local.len(), 1);
        assert!(local[0].is_empty() && local[0].capacity() == SIZE);
        assert_eq!(local[0].as_ptr() as usize, at);
    }

    #[test]
    fn copies_and_kept_buffers() {
        let short = copy_of(b"*1\r\n$4\r\nPING\r\n");
        assert_eq!(&short[..], b"*1\r\n$4\r\nPING\r\n");
        assert_eq!(short.capacity(), SIZE);
        let long = copy_of(&[b'x'; SIZE + 1]);
        assert_eq!(long.len(), SIZE + 1);
        // A kept buffer is this thread's next one.
        let at = short.as_ptr() as usize;
        keep(short);
        let next = take();
        assert_eq!(next.as_ptr() as usize, at);
        assert!(next.is_empty());
    }

    #[test]
    fn grown_buffers_are_freed() {
        let mut grown = BytesMut::with_capacity(SIZE);
        grown.put_bytes(b'x', 4 * SIZE);
        let mut bufs = vec![grown, BytesMut::with_capacity(16)];
        give_back(&mut bufs);
        assert!(bufs.is_empty());
    }
}
