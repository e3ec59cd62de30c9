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
//! The server also keeps glibc to one arena (`M_ARENA_MAX` 1) when it
//! starts. With an arena per thread (glibc's default, eight per core),
//! a memtable filled by the connection threads is spread over several
//! arenas, and the long-lived allocations made meanwhile (segment
//! indexes, buffers) pin pages in each: after a flush of the 52 MB of
//! debian-packages, RSS stayed at 19.4 MB with the default and fell to
//! 14.2 MB with one arena (jemalloc with a 1 s decay: 19.1 MB). Small
//! allocations still go through each thread's cache without a lock; the
//! one arena's lock is taken for larger ones and refills.

/// Keeps glibc's malloc to one arena (glibc only); call before threads
/// start allocating.
pub fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` sets an allocator parameter; M_ARENA_MAX only
    // bounds how many arenas later threads may create, so it is safe at
    // any time, and it touches no memory a caller owns.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
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
