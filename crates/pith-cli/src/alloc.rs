//! A global allocator wrapper that counts heap growth while a measurement
//! runs ([`measure_peak`]), so benchmarks can report what a builder needed.
//!
//! Outside a measurement an allocation costs one relaxed load of a flag
//! that never changes under it (a cache line every core shares without
//! contention). Counting on every allocation was two atomic read-modify-
//! writes on one shared cache line: with 8 reader threads those serialized
//! the threads and cost PithDB (whose reads allocate) most of its
//! multi-threaded throughput, while SQLite and RocksDB, which allocate in
//! C, did not pay it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// A measurement is running: allocations are counted.
static COUNTING: AtomicBool = AtomicBool::new(false);
/// Net bytes allocated since the measurement started (negative when it
/// frees more than it allocates).
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

/// The counting allocator, backed by the system allocator.
pub struct CountingAlloc;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the counters have no effect on the memory handed out.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            change(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        change(-(layout.size() as isize));
        // SAFETY: forwarded unchanged; `ptr` came from this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            change(new_size as isize - layout.size() as isize);
        }
        p
    }
}

fn change(n: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        let live = LIVE.fetch_add(n, Ordering::Relaxed) + n;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

/// Runs `f` and returns its result with the peak heap growth during it
/// (one measurement at a time).
pub fn measure_peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::SeqCst);
    let out = f();
    COUNTING.store(false, Ordering::SeqCst);
    (out, PEAK.load(Ordering::Relaxed).max(0) as usize)
}
