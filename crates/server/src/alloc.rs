//! The process allocator, counted: INFO `used_memory` and `maxmemory` read what the
//! process really holds on the heap (Redis reads its allocator's counter the same way),
//! not an estimate of the dataset.
//!
//! Each thread keeps its running total in a slot of its own (one cache line, written
//! only by that thread), so the hot path never shares a cache line between cores.
//! [`used`] sums the slots: exact at any moment, whichever thread asks, which
//! `maxmemory` needs (a connection moves between worker threads, and its INFO must see
//! what eviction saw). Summing costs a load per slot, so the check before every command
//! ([`exceeds`]) first reads an approximate total that each thread brings up to date
//! once its own change passes [`FLUSH_BYTES`], and sums only near the limit.
//!
//! This is the one module allowed `unsafe`: a global allocator cannot be written
//! without it. Every call is forwarded unchanged to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicUsize, Ordering};

/// How far a thread's share of the approximate total may lag behind its slot.
pub const FLUSH_BYTES: isize = 32 * 1024;

/// Threads that get a slot; later ones (after this many threads ever allocated) count
/// straight into a shared counter, exact but contended. Slots are never reused: a
/// thread that exits leaves its total, which still counts what it allocated.
const SLOTS: usize = 128;

/// One thread's running total, alone on its cache line.
#[repr(align(128))]
struct Slot {
    claimed: AtomicBool,
    total: AtomicIsize,
}

static SLOT_TABLE: [Slot; SLOTS] = [const {
    Slot {
        claimed: AtomicBool::new(false),
        total: AtomicIsize::new(0),
    }
}; SLOTS];

/// Slots handed out so far (the sum reads these).
static CLAIMED: AtomicUsize = AtomicUsize::new(0);

/// What threads without a slot allocated.
static UNSLOTTED: AtomicIsize = AtomicIsize::new(0);

/// The sum of every thread's total, each to within `FLUSH_BYTES`.
static APPROX: AtomicIsize = AtomicIsize::new(0);

/// The most `APPROX` read since the server started: Redis's `stat_peak_memory`,
/// which it records after each command. Here it moves when a thread brings its share
/// up to date (once per `FLUSH_BYTES` of change), so a peak is missed by at most that
/// much per thread, and the hot path pays nothing more.
static PEAK: AtomicIsize = AtomicIsize::new(0);

/// What was allocated once the server had started, before it loaded data (Redis's
/// `used_memory_startup`).
static STARTUP: AtomicU64 = AtomicU64::new(0);

const UNCLAIMED: usize = usize::MAX;
const NO_SLOT: usize = usize::MAX - 1;

/// This thread's counters, in one thread-local so each allocation looks it up once.
struct Local {
    /// Its slot index (or `UNCLAIMED` / `NO_SLOT`).
    slot: Cell<usize>,
    /// Its change not yet added to `APPROX`.
    lag: Cell<isize>,
    /// What it allocated less what it freed (see [`thread_net`]).
    net: Cell<isize>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            slot: Cell::new(UNCLAIMED),
            lag: Cell::new(0),
            net: Cell::new(0),
        }
    };
}

/// The first free slot, claimed for the calling thread.
fn claim() -> usize {
    for (index, slot) in SLOT_TABLE.iter().enumerate() {
        if slot
            .claimed
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            CLAIMED.fetch_max(index + 1, Ordering::AcqRel);
            return index;
        }
    }
    NO_SLOT
}

fn count_unslotted(delta: isize) {
    UNSLOTTED.fetch_add(delta, Ordering::Relaxed);
    add_to_approx(delta);
}

fn add_to_approx(delta: isize) {
    let total = APPROX.fetch_add(delta, Ordering::Relaxed) + delta;
    if delta > 0 {
        PEAK.fetch_max(total, Ordering::Relaxed);
    }
}

#[inline]
fn account(delta: isize) {
    let counted = LOCAL.try_with(|local| {
        local.net.set(local.net.get() + delta);
        let mut index = local.slot.get();
        if index == UNCLAIMED {
            index = claim();
            local.slot.set(index);
        }
        let Some(own) = SLOT_TABLE.get(index) else {
            count_unslotted(delta);
            return;
        };
        // Only this thread writes its slot: a load and a store, no locked instruction.
        own.total
            .store(own.total.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
        let pending = local.lag.get() + delta;
        if pending.abs() >= FLUSH_BYTES {
            add_to_approx(pending);
            local.lag.set(0);
        } else {
            local.lag.set(pending);
        }
    });
    // A thread being torn down has no thread-locals left: count directly.
    if counted.is_err() {
        count_unslotted(delta);
    }
}

/// The key tables' empty slots went from `from` to `to` bytes (one shard's figure,
/// `crate::store::free_slots`); they are counted as not allocated.
///
/// A key table is one array of slots, grown ahead of the keys that fill it, and a key
/// short enough to live in its slot frees nothing when it goes: its slot waits for the
/// next key. Counted as allocated, empty slots made `maxmemory` evict on while the
/// figure stood still, and left `used_memory` above the limit by the room a table grew
/// by. Counted as free, evicting a key gives its slot back, and `used_memory` is what
/// the keys hold, as Redis's is (its dict entries are allocated one per key); the room
/// shows in RSS and the fragmentation ratio instead.
pub fn empty_key_slots(from: usize, to: usize) {
    let to = isize::try_from(to).unwrap_or(isize::MAX);
    let from = isize::try_from(from).unwrap_or(isize::MAX);
    account(from - to);
}

/// What the calling thread allocated less what it freed, so far: the difference of two
/// readings is what the code between them allocated or freed, whatever other threads
/// did meanwhile (eviction measures what removing a key gave back this way).
pub fn thread_net() -> isize {
    LOCAL.try_with(|local| local.net.get()).unwrap_or(0)
}

/// Bytes allocated and not freed, across the process, exactly.
pub fn used() -> u64 {
    let claimed = CLAIMED.load(Ordering::Acquire).min(SLOTS);
    let slots: isize = SLOT_TABLE[..claimed]
        .iter()
        .map(|slot| slot.total.load(Ordering::Relaxed))
        .sum();
    u64::try_from(slots + UNSLOTTED.load(Ordering::Relaxed)).unwrap_or(0)
}

/// The most bytes allocated at once since the server started (INFO's
/// `used_memory_peak`; CONFIG RESETSTAT leaves it, as Redis's).
pub fn peak() -> u64 {
    let now = isize::try_from(used()).unwrap_or(isize::MAX);
    let peak = PEAK.fetch_max(now, Ordering::Relaxed).max(now);
    u64::try_from(peak).unwrap_or(0)
}

/// Records what is allocated now as the started server's own (see [`startup`]), and
/// starts the peak from there: Redis records its peak from its first event-loop turn,
/// after its setup's passing allocations.
pub fn mark_startup() {
    let now = used();
    STARTUP.store(now, Ordering::Relaxed);
    PEAK.store(
        isize::try_from(now).unwrap_or(isize::MAX),
        Ordering::Relaxed,
    );
}

/// What was allocated when the server had started (INFO's `used_memory_startup`).
pub fn startup() -> u64 {
    STARTUP.load(Ordering::Relaxed)
}

/// Whether more than `limit` bytes are allocated. Cheap while clearly under it: the
/// approximate total is off by at most `FLUSH_BYTES` per thread, and only within that
/// margin of the limit are the slots summed.
#[inline]
pub fn exceeds(limit: u64) -> bool {
    let threads = CLAIMED.load(Ordering::Relaxed) as isize + 1;
    let approx = APPROX.load(Ordering::Relaxed);
    let margin = threads.saturating_mul(FLUSH_BYTES);
    if approx.saturating_add(margin) < isize::try_from(limit).unwrap_or(isize::MAX) {
        return false;
    }
    used() > limit
}

/// A byte figure kept apart from the allocator's, moved by differences as what it
/// measures grows and shrinks (replica buffers for `maxmemory`, client buffers for
/// `maxmemory-clients`).
#[derive(Debug, Default)]
pub struct Gauge(AtomicUsize);

/// Per-thread work tables that Redis keeps on its stack (LZF's match table): heap
/// here, so `used_memory` shows them, but `maxmemory` leaves them out, or the first
/// compression on a thread would evict half a megabyte of keys.
pub static WORK_TABLES: Gauge = Gauge::new();

impl Gauge {
    /// At zero.
    pub const fn new() -> Gauge {
        Gauge(AtomicUsize::new(0))
    }

    /// The figure.
    pub fn bytes(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Something it counts went from `from` to `to` bytes.
    pub fn change(&self, from: usize, to: usize) {
        if to >= from {
            self.0.fetch_add(to - from, Ordering::Relaxed);
        } else {
            self.0.fetch_sub(from - to, Ordering::Relaxed);
        }
    }
}

/// A value whose heap size is kept in a gauge from before it is made until after it is
/// freed, so no check against a limit ever sees those bytes in the allocator's figure
/// without the gauge's.
pub struct Counted<T, G: Deref<Target = Gauge>> {
    value: ManuallyDrop<T>,
    bytes: usize,
    gauge: G,
}

impl<T, G: Deref<Target = Gauge>> Counted<T, G> {
    /// Counts `bytes` in `gauge`, then makes the value.
    pub fn new(gauge: G, bytes: usize, make: impl FnOnce() -> T) -> Self {
        gauge.change(0, bytes);
        Counted {
            value: ManuallyDrop::new(make()),
            bytes,
            gauge,
        }
    }
}

impl<T, G: Deref<Target = Gauge>> Deref for Counted<T, G> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T, G: Deref<Target = Gauge>> DerefMut for Counted<T, G> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T, G: Deref<Target = Gauge>> Drop for Counted<T, G> {
    fn drop(&mut self) {
        // SAFETY: dropped once, here, and never used after.
        unsafe { ManuallyDrop::drop(&mut self.value) };
        self.gauge.change(self.bytes, 0);
    }
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
        let before = used();
        // Other tests allocate meanwhile: look for a change far above their noise.
        let block = vec![1u8; 256 << 20];
        let during = used();
        assert!(during >= before + (200 << 20), "{during} vs {before}");
        assert!(exceeds(before + (100 << 20)));
        drop(block);
        assert!(used() < during - (200 << 20), "{} vs {during}", used());
    }
}
