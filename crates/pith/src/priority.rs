//! Lowering the CPU priority of the engine's own background threads.
//!
//! Flushes and merges encode values for seconds at a time, on as many
//! cores as [`crate::Options::background_threads`] allows. On a machine
//! whose cores are also serving requests, the scheduler then shares those
//! cores evenly between the encoders and the threads answering clients,
//! and a request that waits behind an encoder's time slice shows up in the
//! tail latency. A positive `background_nice` makes the background threads
//! yield: the request threads run first, and the encoders use what is
//! left (RocksDB's `LowerThreadPoolCPUPriority` does the same for its
//! compaction pool).
//!
//! Invariant: only the calling thread changes. On Linux a thread's nice
//! value is its own, and threads it starts (the encoders of one build)
//! inherit it. Other systems set the nice value per process, so there
//! this does nothing rather than slow the whole process.

/// Raises the calling thread's nice value by `by` (at most to 19, the
/// lowest priority); 0 leaves it alone. Returns whether the priority
/// changed. Lowering one's own priority needs no privilege, so a failure
/// can only mean an unusual sandbox; the thread then runs as it was.
pub(crate) fn lower_this_thread(by: u8) -> bool {
    if by == 0 {
        return false;
    }
    lower(by)
}

#[cfg(target_os = "linux")]
fn lower(by: u8) -> bool {
    // SAFETY: gettid, getpriority and setpriority take plain integers and
    // touch no memory of ours; errno is thread-local.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if now == -1 && *libc::__errno_location() != 0 {
            return false;
        }
        let target = (now + i32::from(by)).min(19);
        libc::setpriority(libc::PRIO_PROCESS, tid, target) == 0
    }
}

#[cfg(not(target_os = "linux"))]
fn lower(_by: u8) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_changes_nothing() {
        assert!(!lower_this_thread(0));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn lowers_only_the_calling_thread() {
        fn nice() -> i32 {
            // SAFETY: as above.
            unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
        }
        let before = nice();
        let (changed, inside, child) = std::thread::spawn(|| {
            let changed = lower_this_thread(5);
            let inside = nice();
            let child = std::thread::spawn(nice).join().unwrap();
            (changed, inside, child)
        })
        .join()
        .unwrap();
        assert!(changed);
        assert_eq!(inside, (before + 5).min(19));
        assert_eq!(
            child, inside,
            "threads a lowered thread starts inherit its priority"
        );
        assert_eq!(nice(), before, "the caller's priority is untouched");
    }
}
