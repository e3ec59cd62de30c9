//! The background threads: one builds frozen memtables into segments
//! (flushes), the other merges segments, so a flush never waits behind a
//! long merge (writers stall on frozen memtables only while flushing is
//! behind, not while a merge runs).
//!
//! Both change the segment list only through `Inner::apply`, which
//! serializes edits under the manifest lock. A flush appends its segment
//! after every other; a merge replaces a window of adjacent segments,
//! which stays adjacent while flushes (and bulk loads) append behind it,
//! so the window a merge picked is still the one it replaces. Only the
//! merge thread merges, so windows never overlap. Bulk loads exclude
//! flushes by waiting for them while holding the writer role.
//!
//! # Merge policy
//!
//! While there are more than `merge_trigger` segments, merge the window of
//! `min(count - merge_trigger + 1, max_merge_width)` adjacent segments
//! whose total size is smallest. Adjacent, so the merged segment takes its
//! inputs' place and sequence ranges stay ordered (a point read stops at
//! the newest segment holding the key). Smallest window, so fresh small
//! flushes merge with each other before they are merged into the big old
//! segment: a byte is rewritten about log2(data / memtable) times, as in
//! size-tiered compaction, while a point read consults at most
//! `merge_trigger` segments (plus a few while merges catch up) and each
//! miss costs one Bloom probe. A merge whose window starts at the oldest
//! segment drops tombstones nobody needs. `compact()` merges everything.
//!
//! Reads never wait for merges: a merge builds its output from `Arc`s of
//! its inputs and swaps the segment list at the end; readers holding the
//! old list keep reading the old files, which are deleted when the last
//! reader lets go.
//!
//! Failures: a job that fails stops writes with its error (reads go on);
//! a job that panics is caught and does the same, with the panic's
//! message, so nobody waits forever for a thread that is gone.

use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use crate::core::{lock, Edit, Inner, State};
use crate::error::{Error, Result};
use crate::memtable::Memtable;
use crate::merge::{MemSource, MergeSource};
use crate::options::Options;
use crate::segment::Segment;
use crate::training;

enum Job {
    Flush(Arc<Memtable>),
    /// Train the first model from the live memtable.
    TrainEarly(Arc<Memtable>),
    /// A window; for a full compaction, the request count it satisfies.
    Merge(Range<usize>, Option<u64>),
}

/// Picks the window to merge, if any.
pub(crate) fn pick_merge(sizes: &[u64], trigger: usize, width: usize) -> Option<Range<usize>> {
    if sizes.len() <= trigger {
        return None;
    }
    let m = (sizes.len() - trigger + 1)
        .clamp(2, width.max(2))
        .min(sizes.len());
    (0..=sizes.len() - m)
        .min_by_key(|&i| sizes[i..i + m].iter().sum::<u64>())
        .map(|i| i..i + m)
}

/// The window the merge policy would merge now in `st`, if any.
pub(crate) fn merge_due(st: &State, o: &Options) -> Option<Range<usize>> {
    let sizes: Vec<u64> = st.segments.iter().map(|s| s.file_bytes()).collect();
    pick_merge(&sizes, o.merge_trigger, o.max_merge_width)
}

/// True when a full compaction would only rewrite what is there: one
/// segment, nothing in it to drop, its values in the current shared model
/// (so a merge would copy them). RocksDB's `CompactRange` leaves its
/// bottommost level alone in the same way by default. Without shared
/// models a merge may re-encode with the merge codec, so it runs.
fn is_compacted(st: &State, o: &Options) -> bool {
    let current = st.model.as_ref().map(|m| m.number);
    match st.segments.as_slice() {
        [only] => {
            o.shared_models
                && only.has_nothing_to_drop()
                && only.model().map(|m| m.number) == current
                && current.is_some()
        }
        _ => false,
    }
}

/// Which jobs a background thread takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Frozen memtables, oldest first.
    Flush,
    /// Merges and full compactions.
    Merge,
}

fn next_job(inner: &Inner, role: Role) -> Option<Job> {
    let mut bg = lock(&inner.bg);
    loop {
        if bg.shutdown {
            return None;
        }
        if bg.error.is_none() {
            let job = inner.with_state(|st| match role {
                Role::Flush => st
                    .frozen
                    .first()
                    .map(|m| Job::Flush(m.clone()))
                    .or_else(|| {
                        training::early_training_due(st, &bg, &inner.options)
                            .then(|| Job::TrainEarly(st.mem.clone()))
                    }),
                Role::Merge if bg.compactions_requested > bg.compactions_done => {
                    if st.segments.is_empty() || is_compacted(st, &inner.options) {
                        None
                    } else {
                        Some(Job::Merge(
                            0..st.segments.len(),
                            Some(bg.compactions_requested),
                        ))
                    }
                }
                Role::Merge => merge_due(st, &inner.options).map(|w| Job::Merge(w, None)),
            });
            if let Some(Job::TrainEarly(mem)) = &job {
                bg.trained_early_from = Some(mem.oldest_log());
            }
            if job.is_some() {
                return job;
            }
            if role == Role::Merge && bg.compactions_requested > bg.compactions_done {
                // Nothing to compact: the request is done.
                bg.compactions_done = bg.compactions_requested;
                inner.bg_cv.notify_all();
            }
        }
        bg = inner.bg_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
    }
}

/// A background thread's body; returns at shutdown.
pub(crate) fn run(inner: &Inner, role: Role) {
    while let Some(job) = next_job(inner, role) {
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| match job {
            Job::Flush(mem) => flush(inner, &mem),
            Job::TrainEarly(mem) => training::train_early(inner, &mem),
            Job::Merge(window, full) => merge(inner, window).map(|()| {
                // Only the requests made before this merge started are done.
                if let Some(requested) = full {
                    let mut bg = lock(&inner.bg);
                    bg.compactions_done = bg.compactions_done.max(requested);
                }
            }),
        }));
        let result = result.unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string payload".into());
            Err(Error::Internal(format!(
                "the background thread panicked: {what}"
            )))
        });
        if let Err(e) = result {
            inner.poison(&e);
        }
        inner.notify_bg();
    }
}

/// Builds the oldest frozen memtable and installs the segment (which
/// removes the logs it no longer needs).
fn flush(inner: &Inner, mem: &Arc<Memtable>) -> Result<()> {
    #[cfg(test)]
    if tests::PANIC_IN_FLUSH_OF
        .lock()
        .is_ok_and(|d| d.as_deref() == Some(inner.dir.as_path()))
    {
        panic!("test hook: a flush that panics");
    }
    let bottommost = inner.current().segments.is_empty();
    let snapshots = inner.snapshot_list();
    let source = MemSource::new(mem, &snapshots, bottommost, inner.now());
    let coding = training::coding_for(inner, &source)?;
    // Without a model, a small memtable gets a proportionally small
    // training sample: dictionary training needs several times its sample
    // in memory, which must not dwarf the memtable it builds.
    let mut zip = inner.options.flush_zip.clone();
    zip.sample_bytes = zip
        .sample_bytes
        .min(inner.options.memtable_bytes / 4)
        .max(64 << 10);
    let segment = inner.build_segment(&source, &zip, coding.model.as_ref())?;
    inner.apply(Edit {
        added: segment,
        flushed: Some(mem.clone()),
        last_seq: mem.max_seq(),
        model: coding.model.filter(|_| coding.trained),
        ..Edit::default()
    })
}

/// Merges the segments in `window` (indexes into the current list).
fn merge(inner: &Inner, window: Range<usize>) -> Result<()> {
    let st = inner.current();
    let inputs: Vec<Arc<Segment>> = st.segments[window.clone()].to_vec();
    let bottommost = window.start == 0;
    let replaces = inputs.iter().map(|s| s.number).collect();
    let source = MergeSource::new(inputs, inner.snapshot_list(), bottommost, inner.now());
    let model = st.model.clone();
    drop(st);
    let output = inner.build_segment(&source, &inner.options.merge_zip, model.as_ref())?;
    // The inputs are let go before the edit, so the edit's end (where the
    // last reference to them usually goes) removes their files.
    drop(source);
    inner.apply(Edit {
        added: output,
        replaces,
        ..Edit::default()
    })
}

#[cfg(test)]
mod tests {
    use super::pick_merge;
    use crate::{Error, Options, DB};
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    /// Flushes of the database in this directory panic.
    pub(super) static PANIC_IN_FLUSH_OF: Mutex<Option<PathBuf>> = Mutex::new(None);

    /// A panic in the background thread stops writes with its message and
    /// wakes everyone waiting, instead of leaving them waiting forever.
    #[test]
    fn a_background_panic_stops_writes_and_wakes_every_waiter() {
        let mem = crate::env::MemFs::new();
        let dir = PathBuf::from("/panics");
        let options = Options {
            fs: Arc::new(mem),
            ..Options::default()
        };
        let db = DB::open(&dir, options).expect("open");
        db.put("k", "v").expect("put");
        *PANIC_IN_FLUSH_OF.lock().expect("hook") = Some(dir.clone());
        let e = db.flush().expect_err("the flush panicked");
        *PANIC_IN_FLUSH_OF.lock().expect("hook") = None;
        assert!(
            matches!(e.root(), Error::Internal(m) if m.contains("panicked")),
            "{e:?}"
        );
        assert!(matches!(db.put("k2", "v"), Err(Error::Poisoned(_))));
        assert!(matches!(db.compact(), Err(Error::Poisoned(_))));
        assert_eq!(
            db.get("k").expect("reads go on").as_deref(),
            Some(&b"v"[..])
        );
    }

    #[test]
    fn policy_merges_the_smallest_adjacent_window() {
        assert_eq!(pick_merge(&[100, 10, 10, 10], 4, 8), None);
        assert_eq!(pick_merge(&[100, 50, 10, 10, 10], 4, 8), Some(2..4));
        assert_eq!(pick_merge(&[100, 1, 1, 50, 2, 2], 4, 8), Some(1..4));
        assert_eq!(pick_merge(&[5; 20], 4, 8).map(|r| r.len()), Some(8));
    }
}
