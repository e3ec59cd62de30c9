//! Giving freed heap memory back to the operating system.
//!
//! The engine frees a memtable's allocations when a flush has written it
//! to a segment: tens of megabytes in many small blocks, spread over the
//! allocator arenas of the threads that inserted them. glibc's malloc
//! keeps such memory for reuse, so the process's resident size stays at
//! its high-water mark. For a server whose point is to hold more data than
//! memory, that is the figure operators watch (and memory cgroups
//! charge), so after a flush the server asks glibc to return free pages
//! (`malloc_trim`, which releases whole free pages inside every arena, not
//! only at the top). Elsewhere this does nothing.
//!
//! What is left after a trim is mostly fragmentation: long-lived
//! allocations made while a memtable filled pin pages of the arenas it
//! was spread over. Measured after loading the 52 MB of debian-packages
//! and a flush: RSS 19.4 MB with glibc's default arenas, 14.2 MB with one
//! arena (`M_ARENA_MAX` 1), 19.1 MB with jemalloc at a 1 s decay; one
//! arena cost 39% of GET throughput at `-P 16` (166k against 272k
//! requests/s, redis-benchmark, median of three), so the default stays
//! and `pith-malloc-arenas` lets a server under a tight memory limit
//! choose fewer (at 128 MiB, 414 MB of debian-packages loaded with one
//! arena; with the default the cgroup killed the server).

/// Bounds glibc's malloc to `arenas` arenas (glibc only; 0 leaves its
/// default); call before threads start allocating.
pub fn limit_arenas(arenas: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if let Ok(n) = libc::c_int::try_from(arenas) {
        if n > 0 {
            // SAFETY: `mallopt` sets an allocator parameter; M_ARENA_MAX
            // only bounds how many arenas threads may create from now on,
            // so it is safe at any time, and it touches no memory a caller
            // owns.
            unsafe {
                libc::mallopt(libc::M_ARENA_MAX, n);
            }
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = arenas;
}

/// Returns free heap pages to the operating system (glibc only).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes a pad size and only releases memory the
    // allocator holds free; it is thread-safe (it locks each arena) and
    // touches no memory a caller owns.
    unsafe {
        libc::malloc_trim(0);
    }
}
