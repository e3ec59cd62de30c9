//! Background index builds: the indexes a schema change adds
//! (`Tables::alter`) are filled from the table's rows by a thread, while
//! the table stays open for reads and writes.
//!
//! **Why the result is exact.** From the moment the new schema is written,
//! every write maintains the new indexes as it does the others (a handle
//! opened before the change refuses to write: `Error::StaleTable`). The
//! build walks the rows in primary-key order, a chunk of [`CHUNK_ROWS`] at
//! a time, each chunk under the table's write lock: it reads the chunk's
//! rows as they are then and puts their entries. A row written before its
//! chunk is read gets its entry from the chunk (a put of what the writer
//! already put, if the writer came after the index appeared); a row
//! written after gets it from the writer, which replaces the entry the
//! chunk put. A writer deleting an entry the build has not reached yet
//! deletes nothing: for a unique index, a writer deletes an old value's
//! entry only when it names its own row (another row may hold that value,
//! a duplicate the build will find), and the chunk later reads the row as
//! it is. So when the walk ends, every row has its current entry and no
//! other.
//!
//! **Unique indexes.** A chunk's entry whose value another row already
//! holds (a row of an earlier chunk, or a writer's) means the rows hold a
//! value twice: that index cannot be built. From then on writes leave it
//! alone; when the walk ends it is removed from the schema and its family
//! dropped; the others go on. `Tables::wait_for_builds` returns
//! [`Error::IndexBuildFailed`] with the [`Error::Duplicate`] naming the
//! row.
//!
//! **Durability.** The catalog holds, beside the table's schema, the
//! names of its indexes being built (key `<table>/building`, a JSON
//! array); `alter` writes both in one synced batch, and the build removes
//! the names (and any failed index from the schema) in one synced batch
//! when it ends. A build interrupted by a close or a crash starts again
//! from the first row at the next `Tables::open` (its puts are
//! idempotent). Until an index's build ends, queries and counts on it
//! fail with [`Error::IndexBuilding`] and `verify` skips it.
//!
//! One build runs per table at a time: `alter` and `drop_table` stop the
//! table's running build first (a stopped build's indexes are built again
//! by the next one).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use pith::WriteBatch;

use crate::error::{Error, Result};
use crate::table::Table;

/// Rows a build reads and indexes per hold of the write lock: writers to
/// the table wait at most this long.
pub(crate) const CHUNK_ROWS: usize = 1024;

/// The catalog key listing table `table`'s indexes being built (table
/// names are `[A-Za-z0-9_]`, so it is no table's key).
pub(crate) fn building_key(table: &str) -> String {
    format!("{table}/building")
}

/// What ended a build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildState {
    /// Still walking the rows.
    Running,
    /// Every index built (but those in `failed`).
    Done,
    /// Stopped before the end, by a close, another schema change or an
    /// error (in `BuildStatus::error`); the indexes are built again by the
    /// next build (at the latest, at the next `Tables::open`).
    Stopped,
}

/// A build's progress, from `Tables::builds`.
#[derive(Clone, Debug)]
pub struct BuildStatus {
    /// The table.
    pub table: String,
    /// The indexes it builds.
    pub indexes: Vec<String>,
    /// Rows walked so far.
    pub rows: u64,
    /// Running, done or stopped.
    pub state: BuildState,
    /// Unique indexes that could not be built, with why (each removed from
    /// the schema).
    pub failed: Vec<(String, String)>,
    /// The error that stopped the build, if one did.
    pub error: Option<String>,
}

/// One table's build, shared by its thread and whoever watches it.
#[derive(Debug)]
pub(crate) struct Build {
    pub table: String,
    pub indexes: Vec<String>,
    rows: AtomicU64,
    stop: AtomicBool,
    end: Mutex<End>,
    ended: Condvar,
}

#[derive(Debug)]
struct End {
    state: BuildState,
    /// Failed indexes and their errors.
    failed: Vec<(String, Error)>,
    /// The error that stopped the build.
    error: Option<Error>,
}

impl Build {
    pub(crate) fn new(table: &str, indexes: Vec<String>) -> Build {
        Build {
            table: table.into(),
            indexes,
            rows: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            end: Mutex::new(End {
                state: BuildState::Running,
                failed: Vec::new(),
                error: None,
            }),
            ended: Condvar::new(),
        }
    }

    fn end(&self) -> MutexGuard<'_, End> {
        self.end.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks the build to stop after its current chunk.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Records that `index` cannot be built (from then on, writes leave
    /// it alone: its family is about to be dropped).
    pub(crate) fn fail(&self, index: &str, why: Error) {
        self.end().failed.push((index.into(), why));
    }

    /// True when `index` could not be built.
    pub(crate) fn failed(&self, index: &str) -> bool {
        self.end().failed.iter().any(|(i, _)| i == index)
    }

    /// Records how the build ended and wakes the waiters.
    pub(crate) fn finish(&self, state: BuildState, error: Option<Error>) {
        let mut end = self.end();
        end.state = state;
        end.error = error;
        self.ended.notify_all();
    }

    /// Waits for the build to end; the error that stopped it, or the
    /// first index that failed, if any.
    pub(crate) fn wait(&self) -> Result<()> {
        let mut end = self.end();
        while end.state == BuildState::Running {
            end = self.ended.wait(end).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(e) = &end.error {
            return Err(Error::IndexBuildStopped {
                table: self.table.clone(),
                detail: e.to_string(),
            });
        }
        if end.state == BuildState::Stopped {
            return Err(Error::IndexBuildStopped {
                table: self.table.clone(),
                detail: "stopped before the end (a close or another schema change); \
                         it starts again at the next Tables::open"
                    .into(),
            });
        }
        match end.failed.first() {
            Some((index, e)) => Err(Error::IndexBuildFailed {
                table: self.table.clone(),
                index: index.clone(),
                detail: e.to_string(),
            }),
            None => Ok(()),
        }
    }

    /// An error when `index` cannot be queried yet (or any more) because
    /// of this build.
    pub(crate) fn check(&self, index: &str) -> Result<()> {
        if !self.indexes.iter().any(|i| i == index) {
            return Ok(());
        }
        let end = self.end();
        if let Some((_, e)) = end.failed.iter().find(|(i, _)| i == index) {
            return Err(Error::IndexBuildFailed {
                table: self.table.clone(),
                index: index.into(),
                detail: e.to_string(),
            });
        }
        match end.state {
            BuildState::Done => Ok(()),
            BuildState::Running | BuildState::Stopped => Err(Error::IndexBuilding {
                table: self.table.clone(),
                index: index.into(),
                rows: self.rows.load(Ordering::Relaxed),
            }),
        }
    }

    pub(crate) fn status(&self) -> BuildStatus {
        let end = self.end();
        BuildStatus {
            table: self.table.clone(),
            indexes: self.indexes.clone(),
            rows: self.rows.load(Ordering::Relaxed),
            state: end.state.clone(),
            failed: end
                .failed
                .iter()
                .map(|(i, e)| (i.clone(), e.to_string()))
                .collect(),
            error: end.error.as_ref().map(|e| e.to_string()),
        }
    }
}

/// How a walk ended: stopped before the end, or done with these unique
/// indexes failed (positions in the table's schema; their errors are in
/// the build).
pub(crate) enum Walked {
    Stopped,
    Done(Vec<usize>),
}

/// Walks every row of `t` (whose schema has the indexes being built) and
/// puts the entries of indexes `building` (positions in its schema), as
/// the module documentation says.
pub(crate) fn walk(build: &Build, t: &Table, building: &[usize]) -> Result<Walked> {
    let s = t.schema();
    let mut live: Vec<usize> = building.to_vec();
    let mut failed: Vec<usize> = Vec::new();
    let mut from: Option<Vec<u8>> = None;
    loop {
        if build.stop.load(Ordering::Acquire) {
            return Ok(Walked::Stopped);
        }
        let cols: Vec<usize> = live
            .iter()
            .flat_map(|&i| s.indexes[i].columns.iter().copied())
            .collect();
        let groups = t.groups_for(&cols);
        let _w = t.lock();
        let pks: Vec<Vec<u8>> =
            t.db.range_cf(&t.groups[0], from.as_deref(), None)?
                .keys()
                .take(CHUNK_ROWS)
                .collect::<pith::Result<_>>()?;
        let Some(last) = pks.last() else {
            return Ok(Walked::Done(failed));
        };
        // Past the last key of this chunk: the key with a zero byte added.
        from = Some([&last[..], &[0]].concat());
        let mut entries: Vec<(usize, Vec<u8>, Vec<u8>)> = Vec::new();
        // Unique values this chunk puts, not written yet.
        let mut pending: HashSet<(usize, Vec<u8>)> = HashSet::new();
        // Entries of an older form to delete (index, key).
        let mut stale: Vec<(usize, Vec<u8>)> = Vec::new();
        for pk in &pks {
            // Read as it is now: the write lock keeps it so until the
            // batch is written.
            let Some(row) = t.read_row(None, pk, &groups)? else {
                continue;
            };
            let mut n = 0;
            while n < live.len() {
                let i = live[n];
                let (key, value) = t.index_entry(i, &row, pk);
                let taken = s.indexes[i].unique
                    && (!pending.insert((i, key.clone()))
                        || t.db
                            .get_cf(&t.indexes[i], &key)?
                            .is_some_and(|other| other != *pk));
                if taken {
                    // Recorded under the write lock: no write after this
                    // one touches the index.
                    build.fail(
                        &s.indexes[i].name,
                        Error::Duplicate {
                            table: s.name.clone(),
                            row: t.label_of(pk),
                            index: s.indexes[i].name.clone(),
                        },
                    );
                    failed.push(i);
                    live.remove(n);
                    continue;
                }
                // A build an older version began may have written this
                // row's entry in the form it used for a null in a unique
                // index (`Table::legacy_entry`): it goes, or the row would
                // have two.
                if let Some(old) = t.legacy_entry(i, &row, &key, pk) {
                    if t.db.get_cf(&t.indexes[i], old)?.is_some_and(|v| v == *pk) {
                        stale.push((i, old.to_vec()));
                    }
                }
                entries.push((i, key, value));
                n += 1;
            }
        }
        // A failed index's entries of this chunk are not written.
        let mut batch = WriteBatch::new();
        for (i, key) in stale {
            if live.contains(&i) {
                batch.delete_cf(&t.indexes[i], key);
            }
        }
        for (i, key, value) in entries {
            if live.contains(&i) {
                batch.put_cf(&t.indexes[i], key, value);
            }
        }
        t.db.write(t.write_options, batch)?;
        build.rows.fetch_add(pks.len() as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_of_a_build_are_refused_until_it_ends_and_a_failed_one_after() {
        let b = Build::new("t", vec!["a".into(), "u".into()]);
        assert!(b.check("other").is_ok());
        assert!(matches!(b.check("a"), Err(Error::IndexBuilding { .. })));
        b.finish(BuildState::Stopped, None);
        assert!(matches!(b.check("a"), Err(Error::IndexBuilding { .. })));
        assert!(matches!(b.wait(), Err(Error::IndexBuildStopped { .. })));
        let dup = Error::Duplicate {
            table: "t".into(),
            row: "row (id=1)".into(),
            index: "u".into(),
        };
        b.fail("u", dup);
        assert!(b.failed("u") && !b.failed("a"));
        b.finish(BuildState::Done, None);
        assert!(b.check("a").is_ok());
        assert!(matches!(b.check("u"), Err(Error::IndexBuildFailed { .. })));
        assert!(matches!(b.wait(), Err(Error::IndexBuildFailed { index, .. }) if index == "u"));
        let io = Error::Engine(pith::Error::Closing);
        b.finish(BuildState::Stopped, Some(io));
        assert!(matches!(b.wait(), Err(Error::IndexBuildStopped { .. })));
        assert_eq!(b.status().state, BuildState::Stopped);
    }
}
