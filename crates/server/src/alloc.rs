//! The process allocator, counted: INFO `used_memory` and `maxmemory` read what the
//! process really holds on the heap (Redis reads its allocator's counter the same way),
//! not an estimate of the dataset.
//!
//! Each thread keeps its own running delta and adds it to the global counter once it
//! passes [`FLUSH_BYTES`], so the hot path never shares a cache line between cores; the
//! global figure is exact to within that much per thread. Code that must see its own
//! frees at once (eviction) calls [`flush_local`].
//!
//! This is the one module allowed `unsafe`: a global allocator cannot be written
//! without it. Every call is forwarded unchanged to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

/// Per-thread slack before the global counter is updated.
pub const FLUSH_BYTES: isize = 32 * 1024;

static USED: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    static LOCAL: Cell<isize> = const { Cell::new(0) };
}

#[inline]
fn account(delta: isize) {
    let flushed = LOCAL.try_with(|local| {
        let pending = local.get() + delta;
        if pending.abs() >= FLUSH_BYTES {
            USED.fetch_add(pending, Ordering::Relaxed);
            local.set(0);
        } else {
            local.set(pending);
        }
    });
    // A thread being torn down has no local counter left: count directly.
    if flushed.is_err() {
        USED.fetch_add(delta, Ordering::Relaxed);
    }
}

/// Bytes allocated and not freed, across the process.
pub fn used() -> u64 {
    u64::try_from(USED.load(Ordering::Relaxed)).unwrap_or(0)
}

/// Adds this thread's pending delta to the global counter now.
pub fn flush_local() {
    let _ = LOCAL.try_with(|local| {
        USED.fetch_add(local.replace(0), Ordering::Relaxed);
    });
}

/// Hands the free pages the system allocator keeps back to the kernel (glibc's
/// `malloc_trim`, which also releases whole free pages inside its heaps).
///
/// glibc gives each thread that contends an arena of its own, and memory freed in one
/// arena only serves allocations from that arena: when keys written from one worker
/// thread are evicted while another worker allocates, the freed pages would stay
/// resident and RSS would climb far past `maxmemory`. Eviction calls this after each
/// few megabytes it frees ([`crate::store::evict`]). A no-op elsewhere.
pub fn release_free_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: malloc_trim takes the allocator's own locks and only releases pages
        // no allocation uses; it is safe to call from any thread at any time.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// The system allocator, counted.
pub struct Counting;

// SAFETY: every call is forwarded unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the counting only reads sizes.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            account(layout.size() as isize);
        }
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            account(layout.size() as isize);
        }
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with this layout.
        unsafe { System.dealloc(ptr, layout) };
        account(-(layout.size() as isize));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; `ptr` came from `System` with `layout`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            account(new_size as isize - layout.size() as isize);
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_allocation_shows_and_goes() {
        flush_local();
        let before = used();
        // Other tests allocate meanwhile: look for a change far above their noise.
        let block = vec![1u8; 256 << 20];
        flush_local();
        let during = used();
        assert!(during >= before + (200 << 20), "{during} vs {before}");
        drop(block);
        flush_local();
        assert!(used() < during - (200 << 20), "{} vs {during}", used());
    }
}
