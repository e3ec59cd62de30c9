//! The background threads: one builds frozen memtables into segments
//! (flushes), the other merges segments, so a flush never waits behind a
//! long merge (writers stall on frozen memtables only while flushing is
//! behind, not while a merge runs).
//!
//! Both change the segment lists only through `Inner::apply`, which
//! serializes edits under the manifest lock. A flush builds the oldest
//! frozen generation, one segment per column family that has entries in
//! it, and installs them in one edit, each after every other segment of
//! its family; a merge replaces a window of adjacent segments of one
//! family,
//! which stays adjacent while flushes (and bulk loads) append behind it,
//! so the window a merge picked is still the one it replaces. Only the
//! merge thread merges, so windows never overlap. Bulk loads exclude
//! flushes by waiting for them while holding the writer role.
//!
//! # Merge policy
//!
//! Each family is merged on its own, by the same policy; a full
//! compaction merges each family in turn. While a family has more than
//! `merge_trigger` segments, merge the window of
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

use crate::core::{lock, Edit, Inner, State, Tree};
use crate::error::{Error, Result};
use crate::memtable::Memtable;
use crate::merge::{MemSource, MergeSource};
use crate::options::Options;
use crate::training;

enum Job {
    /// The oldest frozen generation: each family's memtable of it.
    Flush(Vec<(u32, Arc<Memtable>)>),
    /// Train a family's first model from its live memtable.
    TrainEarly(u32, Arc<Memtable>),
    /// A window of a family's segments.
    Merge(u32, Range<usize>),
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

/// The window the merge policy would merge now in `t`, if any.
pub(crate) fn merge_due(t: &Tree, o: &Options) -> Option<Range<usize>> {
    let sizes: Vec<u64> = t.segments.iter().map(|s| s.file_bytes()).collect();
    pick_merge(&sizes, o.merge_trigger, o.max_merge_width)
}

/// The first family with a merge due, and the window.
pub(crate) fn any_merge_due(st: &State, o: &Options) -> Option<(u32, Range<usize>)> {
    st.trees
        .iter()
        .find_map(|t| merge_due(t, o).map(|w| (t.id, w)))
}

/// True when a full compaction would only rewrite what is there: one
/// segment, nothing in it to drop, its values in the current shared model
/// (so a merge would copy them), or stored plain while the current model
/// does not pay (a merge would store them plain again). RocksDB's
/// `CompactRange` leaves its bottommost level alone in the same way by
/// default. Without shared models a merge may re-encode with the merge
/// codec, so it runs.
fn is_compacted(t: &Tree, o: &Options) -> bool {
    let Some(current) = t.model.as_ref() else {
        return false;
    };
    match t.segments.as_slice() {
        [only] => {
            let settled = match only.model() {
                Some(m) => m.number == current.number,
                None => !current.pays(),
            };
            o.shared_models && only.has_nothing_to_drop() && settled
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
            let o = &inner.options;
            let job = inner.with_state(|st| match role {
                Role::Flush => st.oldest_generation().map(Job::Flush).or_else(|| {
                    st.trees.iter().find_map(|t| {
                        training::early_training_due(t, &bg, o)
                            .then(|| Job::TrainEarly(t.id, t.mem.clone()))
                    })
                }),
                Role::Merge if bg.compactions_requested > bg.compactions_done => {
                    let request = bg.compactions_requested;
                    let (_, left) = bg.compaction.get_or_insert_with(|| {
                        let ids = st.trees.iter().map(|t| t.id).collect();
                        (request, ids)
                    });
                    // The next family that a merge would change (a family
                    // dropped meanwhile is skipped).
                    let mut job = None;
                    while let Some(id) = left.pop_front() {
                        match st.tree(id) {
                            Some(t) if !t.segments.is_empty() && !is_compacted(t, o) => {
                                job = Some(Job::Merge(id, 0..t.segments.len()));
                                break;
                            }
                            _ => {}
                        }
                    }
                    job
                }
                Role::Merge => any_merge_due(st, o).map(|(id, w)| Job::Merge(id, w)),
            });
            if let Some(Job::TrainEarly(id, mem)) = &job {
                bg.trained_early_from.insert(*id, mem.oldest_log());
            }
            if job.is_some() {
                return job;
            }
            if role == Role::Merge && bg.compactions_requested > bg.compactions_done {
                // Every family is merged: the requests made before the
                // compaction started are done.
                if let Some((request, _)) = bg.compaction.take() {
                    bg.compactions_done = bg.compactions_done.max(request);
                }
                inner.bg_cv.notify_all();
                continue;
            }
        }
        bg = inner.bg_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
    }
}

/// A background thread's body; returns at shutdown.
pub(crate) fn run(inner: &Inner, role: Role) {
    crate::priority::lower_this_thread(inner.options.background_nice);
    while let Some(job) = next_job(inner, role) {
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| match job {
            Job::Flush(generation) => flush(inner, &generation),
            Job::TrainEarly(id, mem) => training::train_early(inner, id, &mem),
            Job::Merge(id, window) => merge(inner, id, window),
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

/// Builds the oldest frozen generation, a segment per family with
/// entries, and installs them in one edit (which removes the logs it no
/// longer needs).
fn flush(inner: &Inner, generation: &[(u32, Arc<Memtable>)]) -> Result<()> {
    #[cfg(test)]
    if tests::PANIC_IN_FLUSH_OF
        .lock()
        .is_ok_and(|d| d.as_deref() == Some(inner.dir.as_path()))
    {
        panic!("test hook: a flush that panics");
    }
    let snapshots = inner.snapshot_list();
    let mut edit = Edit::default();
    for (id, mem) in generation {
        edit.flushed.push(mem.clone());
        edit.last_seq = edit.last_seq.max(mem.max_seq());
        if mem.is_empty() {
            continue;
        }
        let bottommost = inner.with_state(|st| st.tree(*id).is_none_or(|t| t.segments.is_empty()));
        let source = MemSource::new(mem, &snapshots, bottommost, inner.now());
        let coding = training::coding_for(inner, *id, &source, 1)?;
        // Without a model, a small memtable gets a proportionally small
        // training sample: dictionary training needs several times its
        // sample in memory, which must not dwarf the memtable it builds.
        let mut zip = inner.options.flush_zip.clone();
        zip.sample_bytes = zip
            .sample_bytes
            .min(inner.options.memtable_bytes / 4)
            .max(64 << 10);
        let segment = inner.build_segment(*id, &source, &zip, coding.model.as_ref(), 1)?;
        edit.added.extend(segment.map(|s| (*id, s)));
        if coding.trained {
            edit.models.extend(coding.model.map(|m| (*id, m)));
        }
    }
    inner.apply(edit)
}

/// Merges the segments in `window` (indexes into family `id`'s current
/// list).
fn merge(inner: &Inner, id: u32, window: Range<usize>) -> Result<()> {
    let st = inner.current();
    let Some(t) = st.tree(id) else {
        return Ok(()); // dropped meanwhile
    };
    let Some(inputs) = t.segments.get(window.clone()).map(<[_]>::to_vec) else {
        return Err(Error::Internal(format!(
            "merge window {window:?} is past family {id}'s segments"
        )));
    };
    let bottommost = window.start == 0;
    let replaces = inputs.iter().map(|s| s.number).collect();
    let source = MergeSource::new(inputs, inner.snapshot_list(), bottommost, inner.now());
    let model = t.model.clone();
    drop(st);
    let output = inner.build_segment(id, &source, &inner.options.merge_zip, model.as_ref(), 1)?;
    // The inputs are let go before the edit, so the edit's end (where the
    // last reference to them usually goes) removes their files.
    drop(source);
    inner.apply(Edit {
        added: output.map(|s| (id, s)).into_iter().collect(),
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
