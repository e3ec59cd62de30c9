//! Giving freed heap memory back to the operating system.
//!
//! For a server whose point is to hold more data than memory, resident
//! size is the figure operators watch (and memory cgroups charge). The
//! engine's memtables live in mappings of their own, unmapped when a
//! flushed memtable drops; what a flush or merge leaves behind on the heap
//! is its build's buffers. glibc's malloc keeps freed memory for reuse, so
//! the server fixes where large blocks come from ([`fix_mmap_threshold`])
//! and, after each flush or merge, asks glibc to return free pages
//! (`malloc_trim`, which releases whole free pages inside every arena,
//! and the main arena's top, but not the top of a thread's arena).
//! Elsewhere this does nothing.
//!
//! Measured after loading the 52 MB of debian-packages and a flush (RSS):
//! 23.1 MB with glibc's moving threshold, 15.8 MB with it fixed, 15.0 MB
//! once the engine stopped counting a segment's index twice (see
//! `FileBytes::forget`); 7.8 MB of that is the binary's and libraries'
//! code. Before memtables had
//! mappings of their own: 19.4 MB with glibc's default arenas, 14.2 MB
//! with one arena (`M_ARENA_MAX` 1), 19.1 MB with jemalloc at a 1 s decay;
//! one arena cost 39% of GET throughput at `-P 16` (166k against 272k
//! requests/s, redis-benchmark, median of three), so the default stays
//! and `pith-malloc-arenas` lets a server under a tight memory limit
//! choose fewer (at 128 MiB, 414 MB of debian-packages loaded with one
//! arena, and with the default the cgroup killed the server; since
//! memtables have mappings of their own, the default loads it too, in
//! 5.6 s with 21.8 MB resident after).

/// Allocations at least this large get a mapping of their own.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 128 << 10;

/// Gives every allocation of [`MMAP_THRESHOLD`] or more a mapping of its
/// own, returned whole when freed (glibc only). glibc starts there too, but
/// raises the threshold each time such a block is freed, up to 32 MiB, so
/// after the first flush a build's large buffers (values, encoded output,
/// trie levels) come from the arenas, and their pages stay resident after
/// they are freed: `malloc_trim` does not release a thread arena's top. Measured
/// after loading debian-packages and a flush: RSS 23.1 MB with the moving
/// threshold, 15.8 MB with it fixed.
pub fn fix_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` sets an allocator parameter; setting
    // M_MMAP_THRESHOLD only decides where later large allocations come
    // from, so it is safe at any time and touches no memory a caller owns.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

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
