//! The shared core of an open database: what every part of the engine
//! reads and changes, and the one path that changes the set of segments.
//!
//! Shared state, and who may change it:
//!
//! * `state` (`RwLock<Arc<State>>`): one [`Tree`] per column family: its
//!   live memtable, frozen memtables (oldest first) and segments (oldest
//!   first). Readers clone the `Arc` and then read the published sequence
//!   number, so they see every version up to it in that `State` (a
//!   memtable switch after the clone only adds newer versions). Replaced,
//!   never mutated in place.
//!
//! Column families share the log, the sequence numbers and the manifest,
//! and their memtables switch together (RocksDB's `atomic_flush`): the
//! memtables frozen by one switch form a *generation*, which shares its
//! logs and is flushed as one edit, a segment per family that has
//! entries. So a log is removed once, when its generation is built, and
//! recovery never needs per-family log numbers. Invariants: `trees` is
//! ascending by id and starts with the default family (id 0, never
//! dropped), whose frozen list holds every generation (a family created
//! later joins the live generation, so its frozen list is a suffix).
//! * `last_seq`: the highest published sequence number, stored by the
//!   write leader after a group's versions are all in the memtable, and by
//!   a bulk load together with its segment (under the state lock).
//! * `manifest`: the on-disk truth. Changed only by [`Inner::apply`], which
//!   writes a changed copy, installs it only once it is durable, and only
//!   then publishes the new `state`; a failed write leaves the old one
//!   installed and stops writes ([`Inner::poison`]), since the disk may
//!   hold either version.
//! * `bg`: background bookkeeping and the failure that stopped writes.
//!
//! Lock order: writer role (`queue.busy`) -> manifest -> state -> bg.
//! Higher modules (write path, background thread, recovery, the `DB`
//! handle) import this one; it imports none of them.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};

use crate::batch::WriteBatch;
use crate::env::{FileLock, Fs};
use crate::error::{Error, Result};
use crate::family::ColumnFamily;
use crate::filename::{self, FileKind};
use crate::manifest::{FamilyEntry, Manifest, SegmentEntry};
use crate::memtable::Memtable;
use crate::model_file::ModelFile;
use crate::options::{FamilyOptions, Options};
use crate::segment::writer::{write_segment, GroupSource, ValueCoding};
use crate::segment::Segment;
use crate::value_cache::ValueCache;
use crate::wal::WalWriter;

/// One column family's part of what a read sees: its memtables and
/// segments, and the model its new segments are encoded with.
#[derive(Clone)]
pub(crate) struct Tree {
    /// The family's id (0: the default family); never reused.
    pub id: u32,
    pub name: Arc<str>,
    pub mem: Arc<Memtable>,
    /// Frozen memtables waiting to be built, oldest first.
    pub frozen: Vec<Arc<Memtable>>,
    /// Live segments, oldest first.
    pub segments: Vec<Arc<Segment>>,
    /// The shared model new segments are encoded with, if one was trained.
    pub model: Option<Arc<ModelFile>>,
}

impl Tree {
    /// The model files in use: those of the segments and the current one,
    /// each once, by number.
    pub(crate) fn models(&self) -> Vec<&Arc<ModelFile>> {
        dedup_models(
            self.segments
                .iter()
                .filter_map(|s| s.model())
                .chain(self.model.iter())
                .collect(),
        )
    }

    /// The live memtable, then the frozen ones.
    pub(crate) fn memtables(&self) -> impl Iterator<Item = &Arc<Memtable>> + '_ {
        std::iter::once(&self.mem).chain(self.frozen.iter())
    }
}

/// `models`, each once, by number.
pub(crate) fn dedup_models(mut models: Vec<&Arc<ModelFile>>) -> Vec<&Arc<ModelFile>> {
    models.sort_by_key(|m| m.number);
    models.dedup_by_key(|m| m.number);
    models
}

/// What a read sees: every column family's tree.
pub(crate) struct State {
    /// Ascending by id; the default family first (see the module doc).
    pub trees: Vec<Tree>,
}

impl State {
    /// The tree of family `id`, if it is live.
    pub(crate) fn tree(&self, id: u32) -> Option<&Tree> {
        let at = self.trees.binary_search_by_key(&id, |t| t.id).ok()?;
        self.trees.get(at)
    }

    /// Family `cf`'s tree, or [`Error::NoSuchFamily`] when it was dropped.
    pub(crate) fn tree_of(&self, cf: &ColumnFamily) -> Result<&Tree> {
        self.tree(cf.id).ok_or_else(|| Error::NoSuchFamily {
            name: cf.name.to_string(),
        })
    }

    /// The default family's tree.
    pub(crate) fn default_tree(&self) -> &Tree {
        &self.trees[0]
    }

    /// The model files in use by any family, each once, by number.
    pub(crate) fn models(&self) -> Vec<&Arc<ModelFile>> {
        dedup_models(self.trees.iter().flat_map(Tree::models).collect())
    }

    /// Every memtable of every family.
    pub(crate) fn memtables(&self) -> impl Iterator<Item = &Arc<Memtable>> + '_ {
        self.trees.iter().flat_map(Tree::memtables)
    }

    /// Generations frozen and waiting to be built.
    pub(crate) fn frozen_generations(&self) -> usize {
        self.default_tree().frozen.len()
    }

    /// The oldest frozen generation: each family's memtable of it.
    pub(crate) fn oldest_generation(&self) -> Option<Vec<(u32, Arc<Memtable>)>> {
        let first = self.default_tree().frozen.first()?.oldest_log();
        Some(
            self.trees
                .iter()
                .filter_map(|t| {
                    let m = t.frozen.first().filter(|m| m.oldest_log() == first)?;
                    Some((t.id, m.clone()))
                })
                .collect(),
        )
    }

    /// Live segments of every family.
    pub(crate) fn segments(&self) -> impl Iterator<Item = &Arc<Segment>> + '_ {
        self.trees.iter().flat_map(|t| t.segments.iter())
    }
}

/// Background bookkeeping, guarded by `Inner::bg`.
#[derive(Default)]
pub(crate) struct Bg {
    pub shutdown: bool,
    pub compactions_requested: u64,
    pub compactions_done: u64,
    /// Records segment builds copied as stored (a merge with one model).
    pub records_copied: u64,
    /// Records segment builds encoded.
    pub records_encoded: u64,
    /// The first failure that stopped writes.
    pub error: Option<Arc<Error>>,
    /// Per family, the live memtable (by its log) its first model was
    /// last trained from early, so it is tried once per memtable.
    pub trained_early_from: BTreeMap<u32, u64>,
    /// A full compaction under way: the request it answers and the
    /// families still to merge.
    pub compaction: Option<(u64, VecDeque<u32>)>,
}

/// One queued write.
pub(crate) struct Slot {
    pub batch: Mutex<WriteBatch>,
    pub sync: bool,
    /// The log record may stay buffered (`WriteOptions::defer_log`).
    pub defer_log: bool,
    /// Set by the leader that committed it.
    pub done: Mutex<Option<Result<()>>>,
}

/// The writers' queue.
#[derive(Default)]
pub(crate) struct Queue {
    pub pending: VecDeque<Arc<Slot>>,
    /// Some writer holds the writer role.
    pub busy: bool,
    /// Threads waiting on `Inner::queue_cv`; the role's release wakes
    /// them only when there are some (a condvar's notify is a system call
    /// even with no one waiting, once per commit).
    pub waiting: usize,
}

/// A change to the set of families, segments and logs, applied by
/// [`Inner::apply`].
#[derive(Default)]
pub(crate) struct Edit {
    /// New segments, each with its family: in place of `replaces` when
    /// that is not empty (a merge: one segment), else after every other
    /// segment of its family. A segment of a family dropped meanwhile is
    /// left out (and its file removed).
    pub added: Vec<(u32, Arc<Segment>)>,
    /// File numbers of adjacent segments of one family the new one
    /// replaces.
    pub replaces: Vec<u64>,
    /// A flushed generation's memtables, now held by `added`: they leave
    /// the state, and their logs are removed once the manifest no longer
    /// needs them (before the new state is published, so whoever waits for
    /// the flush finds them gone).
    pub flushed: Vec<Arc<Memtable>>,
    /// Raise the manifest's last sequence number to this.
    pub last_seq: u64,
    /// Publish this sequence number with the state (a bulk load).
    pub publish_seq: Option<u64>,
    /// Newly trained models (their files durable already), each the
    /// current one of its family.
    pub models: Vec<(u32, Arc<ModelFile>)>,
    /// A family to create: its id (the manifest's next) and name.
    pub create: Option<(u32, Arc<str>)>,
    /// A family to drop, with its segments.
    pub drop: Option<u32>,
}

/// Everything an open database shares among its threads.
pub(crate) struct Inner {
    pub dir: PathBuf,
    pub options: Options,
    pub fs: Arc<dyn Fs>,
    /// Opened read-only: no writes, no background threads.
    pub read_only: bool,
    pub state: RwLock<Arc<State>>,
    pub last_seq: AtomicU64,
    pub queue: Mutex<Queue>,
    pub queue_cv: Condvar,
    /// The live memtable's log; `None` when read-only.
    pub wal: Mutex<Option<WalWriter>>,
    pub manifest: Mutex<Manifest>,
    pub snapshots: Arc<Mutex<BTreeMap<u64, usize>>>,
    pub bg: Mutex<Bg>,
    pub bg_cv: Condvar,
    /// Options of families that differ from `options`, by family id
    /// (`DB::set_family_options`).
    pub family_options: Mutex<HashMap<u32, FamilyOptions>>,
    /// Decoded segment values kept for reads (`Options::value_cache_bytes`),
    /// set on every segment this database opens.
    pub value_cache: Option<Arc<ValueCache>>,
    pub _lock: Option<Box<dyn FileLock>>,
}

/// Locks a mutex, recovering the guard if a panicking thread poisoned it
/// (the data it guards is replaced whole, never left half-changed).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The manifest entry describing `s`, a segment of family `family`.
pub(crate) fn entry_of(family: u32, s: &Segment) -> SegmentEntry {
    SegmentEntry {
        family,
        number: s.number,
        keys: s.keys(),
        records: s.records(),
        min_seq: s.min_seq(),
        max_seq: s.max_seq(),
        file_bytes: s.file_bytes(),
        model: s.model().map_or(0, |m| m.number),
    }
}

impl Inner {
    /// The time by the database's clock, in milliseconds since the Unix
    /// epoch: what deadlines are judged against.
    pub(crate) fn now(&self) -> u64 {
        self.options.clock.now_ms()
    }

    pub(crate) fn current(&self) -> Arc<State> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Runs `f` on the current state under the read lock, without taking a
    /// reference to it: whoever holds the last reference to an old state
    /// drops it (and removes the files it made obsolete), and a thread
    /// that only looks must not be the one, or when files go would depend
    /// on thread timing.
    pub(crate) fn with_state<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        let guard = self.state.read().unwrap_or_else(|p| p.into_inner());
        f(&guard)
    }

    /// The state and the published sequence number, read under one lock so
    /// a bulk load (which changes both under the write lock) is seen whole.
    pub(crate) fn view(&self) -> (Arc<State>, u64) {
        let guard = self.state.read().unwrap_or_else(|p| p.into_inner());
        (guard.clone(), self.last_seq.load(Ordering::Acquire))
    }

    pub(crate) fn set_state(&self, f: impl FnOnce(&State) -> State) {
        let mut guard = self.state.write().unwrap_or_else(|p| p.into_inner());
        let next = f(&guard);
        *guard = Arc::new(next);
    }

    pub(crate) fn file(&self, number: u64, kind: FileKind) -> PathBuf {
        filename::path(&self.dir, number, kind)
    }

    pub(crate) fn new_file_number(&self) -> u64 {
        let mut m = lock(&self.manifest);
        let n = m.next_file;
        m.next_file += 1;
        n
    }

    /// Live snapshot sequence numbers, ascending.
    pub(crate) fn snapshot_list(&self) -> Vec<u64> {
        lock(&self.snapshots).keys().copied().collect()
    }

    /// Fails when writes are not possible: read-only, or stopped by an
    /// earlier failure.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly {
                path: self.dir.clone(),
            });
        }
        match &lock(&self.bg).error {
            Some(e) => Err(Error::Poisoned(e.clone())),
            None => Ok(()),
        }
    }

    /// Stops writes because of `e` (the first cause is kept) and wakes
    /// everyone waiting on the background thread.
    pub(crate) fn poison(&self, e: &Error) {
        let mut bg = lock(&self.bg);
        if bg.error.is_none() {
            let cause = match e {
                Error::Poisoned(cause) => cause.clone(),
                other => Arc::new(other.clone()),
            };
            bg.error = Some(cause);
        }
        self.bg_cv.notify_all();
    }

    /// Wakes everyone waiting on the background thread.
    pub(crate) fn notify_bg(&self) {
        let _bg = lock(&self.bg);
        self.bg_cv.notify_all();
    }

    /// Waits until `done(state, bg)` holds, or writes stop, or the
    /// database closes.
    pub(crate) fn wait_for(&self, done: impl Fn(&State, &Bg) -> bool) -> Result<()> {
        let mut bg = lock(&self.bg);
        loop {
            if self.with_state(|st| done(st, &bg)) {
                return Ok(());
            }
            if let Some(e) = &bg.error {
                return Err(Error::Poisoned(e.clone()));
            }
            if bg.shutdown {
                return Err(Error::Closing);
            }
            bg = self.bg_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Bloom bits per key of family `family`'s segments.
    pub(crate) fn bloom_bits_per_key(&self, family: u32) -> u32 {
        lock(&self.family_options)
            .get(&family)
            .and_then(|o| o.bloom_bits_per_key)
            .unwrap_or(self.options.bloom_bits_per_key)
    }

    /// Writes a new segment file from `source`, makes its name durable and
    /// opens it; `None` (and no file) when the source yields nothing. The
    /// caller installs it with [`Inner::apply`].
    ///
    /// Values are encoded with `model` when there is one that pays (see
    /// `segment::writer`, `model_file::PAYING_RATIO`), stored plain when
    /// there is one that does not, else with a store of their own as
    /// `zip` says.
    ///
    /// `builds` is how many builds run at once with this one (a bulk load
    /// of several families): each takes its share of the threads and of
    /// the memory budget.
    pub(crate) fn build_segment(
        &self,
        family: u32,
        source: &dyn GroupSource,
        zip: &pith_zip::Options,
        model: Option<&Arc<ModelFile>>,
        builds: usize,
    ) -> Result<Option<Arc<Segment>>> {
        let mut zip = self.options.within_share_of_budget(zip, builds);
        if model.is_some_and(|m| !m.pays()) {
            zip.codec = pith_zip::CodecChoice::Force(pith_zip::Codec::Plain);
        }
        let model = model.filter(|m| m.pays());
        let number = self.new_file_number();
        let fs = &*self.fs;
        let coding = ValueCoding {
            zip: &zip,
            model: model.map(|m| &m.model),
            threads: zip.threads,
        };
        let Some(built) = write_segment(
            fs,
            &self.dir,
            number,
            source,
            coding,
            self.bloom_bits_per_key(family),
        )?
        else {
            return Ok(None);
        };
        {
            let mut bg = lock(&self.bg);
            bg.records_copied += built.copied;
            bg.records_encoded += built.records - built.copied;
        }
        let path = self.file(number, FileKind::Segment);
        let lookup = |n: u64| model.filter(|m| m.number == n).cloned();
        let opened = fs
            .sync_dir(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))
            .and_then(|()| {
                Segment::open(
                    &self.fs,
                    &path,
                    number,
                    &lookup,
                    self.options.resident_index,
                    self.options.value_reads,
                    self.value_cache.clone(),
                )
            });
        match opened {
            Ok(s) => Ok(Some(Arc::new(s))),
            Err(e) => {
                // Not in any manifest: garbage, whatever happens next.
                let _ = fs.remove(&path);
                Err(e)
            }
        }
    }

    /// Applies `edit`: writes the changed manifest, installs it once it is
    /// durable, then publishes the new state. The one place the set of
    /// families and segments changes. On failure nothing is installed or
    /// published and writes stop.
    pub(crate) fn apply(&self, mut edit: Edit) -> Result<()> {
        let mut m = lock(&self.manifest);
        let st = self.current();
        // A build that finished after its family was dropped: its output
        // is left out, and its files go with their last reference.
        let live =
            |f: u32| m.family(f).is_some() || edit.create.as_ref().is_some_and(|(id, _)| *id == f);
        let (added, orphans): (Vec<_>, Vec<_>) = std::mem::take(&mut edit.added)
            .into_iter()
            .partition(|(f, _)| live(*f));
        let (models, orphan_models): (Vec<_>, Vec<_>) = std::mem::take(&mut edit.models)
            .into_iter()
            .partition(|(f, _)| live(*f));
        edit.added = added;
        edit.models = models;
        for (_, s) in &orphans {
            s.mark_obsolete();
        }
        for (_, model) in &orphan_models {
            model.set_obsolete(true);
        }
        let merged_away = edit
            .replaces
            .first()
            .is_some_and(|n| !m.segments.iter().any(|e| e.number == *n));
        if merged_away {
            // A merge of a family dropped meanwhile (only the merge thread
            // replaces segments, so only a drop removes its inputs).
            return Ok(());
        }
        let written = self
            .next_manifest(&m, &edit, &st)
            .and_then(|next| next.write(&*self.fs, &self.dir).map(|()| next));
        let next = match written {
            Ok(next) => next,
            Err(e) => {
                self.poison(&e);
                return Err(e);
            }
        };
        *m = next;
        // A generation's memtables share their logs.
        if let Some(f) = edit.flushed.first() {
            for &n in &f.logs {
                // Best effort: a log left behind is below the manifest's
                // log number and the next open removes it. A torn log was
                // renamed at open and stays for inspection.
                let _ = self.fs.remove(&self.file(n, FileKind::Wal));
            }
        }
        self.set_state(|st| {
            if let Some(seq) = edit.publish_seq {
                self.last_seq.store(seq, Ordering::Release);
            }
            let mut trees: Vec<Tree> = st
                .trees
                .iter()
                .filter(|t| edit.drop != Some(t.id))
                .map(|t| Tree {
                    segments: placed(&t.segments, t.id, &edit),
                    frozen: t
                        .frozen
                        .iter()
                        .filter(|f| !edit.flushed.iter().any(|x| Arc::ptr_eq(f, x)))
                        .cloned()
                        .collect(),
                    model: edit
                        .models
                        .iter()
                        .find(|(f, _)| *f == t.id)
                        .map(|(_, model)| model.clone())
                        .or_else(|| t.model.clone()),
                    ..t.clone()
                })
                .collect();
            if let Some((id, name)) = &edit.create {
                // It joins the live generation: same logs.
                let logs = st.default_tree().mem.logs.clone();
                trees.push(Tree {
                    id: *id,
                    name: name.clone(),
                    mem: Arc::new(Memtable::with_logs(logs)),
                    frozen: Vec::new(),
                    segments: Vec::new(),
                    model: None,
                });
            }
            State { trees }
        });
        let live_models = m.models.clone();
        drop(m);
        for t in &st.trees {
            let dropped = edit.drop == Some(t.id);
            for s in &t.segments {
                if dropped || edit.replaces.contains(&s.number) {
                    s.mark_obsolete();
                }
            }
        }
        // Every model this edit may have stopped (or started again) using:
        // a model file goes when it is unlisted and its last user lets go.
        let known = st
            .models()
            .into_iter()
            .chain(edit.added.iter().filter_map(|(_, s)| s.model()))
            .chain(edit.models.iter().map(|(_, model)| model));
        for model in known {
            model.set_obsolete(live_models.binary_search(&model.number).is_err());
        }
        // These may be the last references to the old state and to the
        // segments it replaced: then their obsolete files go now, before
        // anyone waiting is told, so when they go does not depend on which
        // thread runs first.
        drop(orphans);
        drop(edit);
        drop(st);
        self.notify_bg();
        Ok(())
    }

    /// The manifest `m` with `edit` applied (not yet written); `st` is the
    /// current state, for the oldest log still needed after a flush.
    fn next_manifest(&self, m: &Manifest, edit: &Edit, st: &State) -> Result<Manifest> {
        let mut next = m.clone();
        next.last_seq = next.last_seq.max(edit.last_seq);
        if let Some((id, name)) = &edit.create {
            next.families.push(FamilyEntry {
                id: *id,
                name: name.to_string(),
                current_model: 0,
            });
            next.next_family = next.next_family.max(id + 1);
        }
        if let Some(id) = edit.drop {
            next.families.retain(|f| f.id != id);
            next.segments.retain(|s| s.family != id);
        }
        let mut entries = edit.added.iter().map(|(f, s)| entry_of(*f, s));
        if edit.replaces.is_empty() {
            next.segments.extend(entries);
        } else {
            let at = replaced_window(&next.segments, &edit.replaces).ok_or_else(|| {
                Error::Internal(format!(
                    "merge inputs {:?} are no longer adjacent in their family",
                    edit.replaces
                ))
            })?;
            for &i in at.iter().rev() {
                next.segments.remove(i);
            }
            if let (Some(entry), Some(&first)) = (entries.next(), at.first()) {
                next.segments.insert(first, entry);
            }
        }
        for (f, model) in &edit.models {
            if let Some(entry) = next.families.iter_mut().find(|e| e.id == *f) {
                entry.current_model = model.number;
            }
        }
        let mut models: Vec<u64> = next
            .segments
            .iter()
            .map(|s| s.model)
            .chain(next.families.iter().map(|f| f.current_model))
            .filter(|&n| n != 0)
            .collect();
        models.sort_unstable();
        models.dedup();
        next.models = models;
        if !edit.flushed.is_empty() {
            // The oldest log still needed is that of the oldest memtable
            // left.
            next.log_number = st
                .memtables()
                .filter(|x| !edit.flushed.iter().any(|f| Arc::ptr_eq(x, f)))
                .map(|x| x.oldest_log())
                .min()
                .unwrap_or(u64::MAX)
                .min(next.next_file);
        }
        Ok(next)
    }
}

/// `segments` (of family `family`) with `edit`'s new segments of that
/// family in place: after them, or in place of the merged ones.
fn placed(segments: &[Arc<Segment>], family: u32, edit: &Edit) -> Vec<Arc<Segment>> {
    let added = edit
        .added
        .iter()
        .filter(|(f, _)| *f == family)
        .map(|(_, s)| s);
    if edit.replaces.is_empty() {
        return segments.iter().chain(added).cloned().collect();
    }
    let mut out = Vec::with_capacity(segments.len());
    let mut added = Some(added);
    for s in segments {
        if !edit.replaces.contains(&s.number) {
            out.push(s.clone());
        } else if let Some(a) = added.take() {
            out.extend(a.cloned());
        }
    }
    out
}

/// The positions in `segments` of the entries numbered `replaces`, in
/// order, if they are adjacent among their family's entries (other
/// families' entries may lie between them).
fn replaced_window(segments: &[SegmentEntry], replaces: &[u64]) -> Option<Vec<usize>> {
    let head = *replaces.first()?;
    let first = segments.iter().position(|e| e.number == head)?;
    let family = segments[first].family;
    let at: Vec<usize> = segments
        .iter()
        .enumerate()
        .skip(first)
        .filter(|(_, e)| e.family == family)
        .take(replaces.len())
        .map(|(i, _)| i)
        .collect();
    let matches = at.len() == replaces.len()
        && at
            .iter()
            .zip(replaces)
            .all(|(&i, &n)| segments[i].number == n);
    matches.then_some(at)
}
