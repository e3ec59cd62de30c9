//! The database handle: open and recovery, reads, snapshots, iterators,
//! scans, stats and verify. Writes are in `write.rs`, background flushes
//! and merges in `background.rs`.
//!
//! Shared state, and who may change it:
//!
//! * `state` (`RwLock<Arc<State>>`): the live memtable, frozen memtables
//!   (oldest first) and segments (oldest first). Readers clone the `Arc`
//!   and then read the published sequence number, so they see every
//!   version up to it in that `State` (a memtable switch after the clone
//!   only adds newer versions). Replaced, never mutated in place.
//! * `last_seq`: the highest published sequence number, stored by the
//!   write leader after a group's versions are all in the memtable.
//! * `manifest`: the on-disk truth; changed only under its mutex, by the
//!   background thread and bulk loads, and written before `state` changes.
//!
//! Lock order: writer role -> manifest -> state -> bg. A `DB` is
//! `Send + Sync`; share it with `Arc`.

use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;

use crate::background;
use crate::batch::Kind;
use crate::error::{Error, Result};
use crate::iter::{prefix_end, DbIterator, MemCursor, Scan, VersionCursor};
use crate::manifest::{self, Manifest, SegmentEntry};
use crate::memtable::{tag_kind, Memtable};
use crate::merge::MemSource;
use crate::options::Options;
use crate::segment::cursor::SegmentCursor;
use crate::segment::writer::{write_segment, GroupSource};
use crate::segment::{Segment, SegmentInfo};
use crate::wal::{self, WalWriter};
use crate::write::Queue;

/// What a read sees: memtables and segments.
pub(crate) struct State {
    pub mem: Arc<Memtable>,
    /// Frozen memtables waiting to be built, oldest first.
    pub frozen: Vec<Arc<Memtable>>,
    /// Live segments, oldest first.
    pub segments: Vec<Arc<Segment>>,
}

/// Background bookkeeping, guarded by `Inner::bg`.
#[derive(Default)]
pub(crate) struct Bg {
    pub shutdown: bool,
    pub compactions_requested: u64,
    pub compactions_done: u64,
    /// The first background failure; writes stop after it.
    pub error: Option<String>,
}

pub(crate) struct Inner {
    pub dir: PathBuf,
    pub options: Options,
    pub state: RwLock<Arc<State>>,
    pub last_seq: AtomicU64,
    pub queue: Mutex<Queue>,
    pub queue_cv: Condvar,
    pub wal: Mutex<WalWriter>,
    pub manifest: Mutex<Manifest>,
    pub snapshots: Arc<Mutex<BTreeMap<u64, usize>>>,
    pub bg: Mutex<Bg>,
    pub bg_cv: Condvar,
    _lock: File,
}

/// Locks a mutex, recovering the guard if a panicking thread poisoned it
/// (the data it guards is replaced whole, never left half-changed).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    pub(crate) fn current(&self) -> Arc<State> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
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

    pub(crate) fn file(&self, number: u64, ext: &str) -> PathBuf {
        self.dir.join(format!("{number:06}.{ext}"))
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

    /// Fails when an earlier failure stopped writes.
    pub(crate) fn check_poisoned(&self) -> Result<()> {
        match &lock(&self.bg).error {
            Some(e) => Err(Error::Poisoned(e.clone())),
            None => Ok(()),
        }
    }

    pub(crate) fn poison(&self, e: &Error) {
        let mut bg = lock(&self.bg);
        if bg.error.is_none() {
            bg.error = Some(e.to_string());
        }
        self.bg_cv.notify_all();
    }

    fn get_in(&self, st: &State, key: &[u8], snap: u64) -> Result<Option<Vec<u8>>> {
        let found = |tag: u64, value: Vec<u8>| (tag_kind(tag) == Kind::Put).then_some(value);
        if let Some((tag, v)) = st.mem.get(key, snap) {
            return Ok(found(tag, v));
        }
        for m in st.frozen.iter().rev() {
            if let Some((tag, v)) = m.get(key, snap) {
                return Ok(found(tag, v));
            }
        }
        let hash = crate::segment::key_hash(key);
        let mut out = Vec::new();
        for s in st.segments.iter().rev() {
            if let Some(tag) = s.get(key, hash, snap, &mut out)? {
                return Ok(found(tag, out));
            }
        }
        Ok(None)
    }

    fn iter_in(&self, st: &State, snap: u64) -> DbIterator {
        let mut sources: Vec<Box<dyn VersionCursor>> = Vec::new();
        sources.push(Box::new(MemCursor::new(st.mem.clone(), snap)));
        for m in st.frozen.iter().rev() {
            sources.push(Box::new(MemCursor::new(m.clone(), snap)));
        }
        for s in st.segments.iter().rev() {
            sources.push(Box::new(SegmentCursor::new(s.clone(), snap)));
        }
        DbIterator::new(sources)
    }

    /// Builds a segment from a memtable and installs it (flush), used by
    /// recovery and the background thread.
    pub(crate) fn build_from_memtable(
        &self,
        mem: &Memtable,
        bottommost: bool,
    ) -> Result<Option<Arc<Segment>>> {
        let snapshots = self.snapshot_list();
        let source = MemSource::new(mem, &snapshots, bottommost);
        // A small memtable gets a proportionally small training sample:
        // dictionary training needs several times its sample in memory,
        // which must not dwarf the memtable it builds.
        let mut zip = self.options.flush_zip.clone();
        zip.sample_bytes = zip
            .sample_bytes
            .min(self.options.memtable_bytes / 4)
            .max(64 << 10);
        self.build_segment(&source, &zip)
    }

    /// Writes a new segment file from `source` and opens it; `None` (and no
    /// file) when the source yields nothing. The caller installs it.
    pub(crate) fn build_segment(
        &self,
        source: &dyn GroupSource,
        zip: &pith_zip::Options,
    ) -> Result<Option<Arc<Segment>>> {
        let zip = self.options.within_build_budget(zip);
        let number = self.new_file_number();
        let path = self.file(number, "seg");
        if !write_segment(&path, source, &zip, self.options.bloom_bits_per_key)? {
            return Ok(None);
        }
        manifest::sync_dir(&self.dir)?;
        Ok(Some(Arc::new(Segment::open(&path, number)?)))
    }
}

pub(crate) fn entry_of(s: &Segment) -> SegmentEntry {
    SegmentEntry {
        number: s.number,
        keys: s.keys(),
        records: s.records(),
        min_seq: s.min_seq(),
        max_seq: s.max_seq(),
        file_bytes: s.file_bytes(),
    }
}

/// An embedded PithDB database. See the crate documentation.
pub struct DB {
    pub(crate) inner: Arc<Inner>,
    background: Mutex<Option<JoinHandle<()>>>,
}

/// A consistent read view: reads through it see the database as it was
/// when it was taken. Merges keep the versions it needs until it is
/// dropped.
pub struct Snapshot {
    seq: u64,
    registry: Arc<Mutex<BTreeMap<u64, usize>>>,
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> u64 {
        self.seq
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut r = lock(&self.registry);
        if let Some(n) = r.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                r.remove(&self.seq);
            }
        }
    }
}

/// Database-wide sizes and counts, from [`DB::stats`].
#[derive(Clone, Debug)]
pub struct Stats {
    /// Live segments, oldest first.
    pub segments: Vec<SegmentInfo>,
    /// Approximate bytes in the live and frozen memtables.
    pub memtable_bytes: u64,
    /// Frozen memtables waiting to be built.
    pub frozen_memtables: usize,
    /// Bytes of all files in the database directory.
    pub disk_bytes: u64,
    /// Bytes of write-ahead logs.
    pub wal_bytes: u64,
    /// Highest published sequence number.
    pub last_sequence: u64,
}

impl Stats {
    /// Sum of a figure over segments.
    pub fn total(&self, f: impl Fn(&SegmentInfo) -> u64) -> u64 {
        self.segments.iter().map(f).sum()
    }
}

/// What [`DB::verify`] checked.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// Segments checked.
    pub segments: usize,
    /// Records decoded and checked.
    pub records: u64,
    /// Write-ahead logs read.
    pub wals: usize,
    /// Log records read.
    pub wal_records: u64,
}

fn parse_number(name: &str) -> Option<(u64, &str)> {
    let (stem, ext) = name.split_once('.')?;
    (stem.len() >= 6 && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok().map(|n| (n, ext)))
        .flatten()
}

impl DB {
    /// Opens (or creates) the database in directory `path`, replaying its
    /// write-ahead logs. Logs left by a crash are built into a segment
    /// before `open` returns.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<DB> {
        let dir = path.as_ref().to_path_buf();
        if options.memtable_bytes == 0
            || options.max_frozen_memtables == 0
            || options.merge_trigger == 0
            || options.max_merge_width < 2
            || options.stall_segments <= options.merge_trigger
        {
            return Err(Error::InvalidArgument(
                "memtable_bytes, max_frozen_memtables and merge_trigger must be positive, max_merge_width at least 2, stall_segments above merge_trigger".into(),
            ));
        }
        if !dir.join(manifest::FILE).exists() && !options.create_if_missing {
            return Err(Error::NotFound { path: dir });
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let lock_path = dir.join("LOCK");
        let lock_file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io(&lock_path, e))?;
        match lock_file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(Error::Locked { path: dir }),
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&lock_path, e)),
        }
        let mut m = match Manifest::read(&dir)? {
            Some(_) if options.error_if_exists => return Err(Error::AlreadyExists { path: dir }),
            Some(m) => m,
            None => {
                let m = Manifest {
                    next_file: 1,
                    ..Manifest::default()
                };
                m.write(&dir)?;
                m
            }
        };
        // File numbers on disk beyond the manifest's counter (a log created
        // just before a crash) must not be reused.
        let mut wals = Vec::new();
        let mut stray = Vec::new();
        let live: std::collections::HashSet<u64> = m.segments.iter().map(|s| s.number).collect();
        for entry in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))? {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some((n, ext)) = parse_number(&name) else {
                continue;
            };
            m.next_file = m.next_file.max(n + 1);
            match ext {
                "wal" if n >= m.log_number => wals.push(n),
                "seg" if live.contains(&n) => {}
                "wal" | "seg" | "tmp" => stray.push(entry.path()),
                _ => {}
            }
        }
        wals.sort_unstable();
        let mut segments = Vec::with_capacity(m.segments.len());
        for e in &m.segments {
            let path = dir.join(format!("{:06}.seg", e.number));
            let s = Segment::open(&path, e.number)?;
            if entry_of(&s) != *e {
                return Err(Error::corrupt(
                    &path,
                    0,
                    "segment does not match its manifest entry",
                ));
            }
            segments.push(Arc::new(s));
        }

        // Replay the logs into one memtable.
        let recovered = Memtable::new(0);
        let mut last_seq = m.last_seq;
        let mut torn = Vec::new();
        for &n in &wals {
            let path = dir.join(format!("{n:06}.wal"));
            let r = wal::replay(&path, |seq, op| {
                if seq > m.last_seq {
                    recovered.insert(op.key, seq, op.kind, op.value);
                }
            })?;
            last_seq = last_seq.max(r.last_seq);
            if r.torn_bytes > 0 {
                torn.push(n);
            }
        }
        let wal_number = m.next_file;
        m.next_file += 1;
        let inner = Arc::new(Inner {
            dir: dir.clone(),
            options,
            state: RwLock::new(Arc::new(State {
                mem: Arc::new(Memtable::new(wal_number)),
                frozen: Vec::new(),
                segments,
            })),
            last_seq: AtomicU64::new(last_seq),
            queue: Mutex::new(Queue::default()),
            queue_cv: Condvar::new(),
            wal: Mutex::new(WalWriter::create(
                &dir.join(format!("{wal_number:06}.wal")),
            )?),
            manifest: Mutex::new(m),
            snapshots: Arc::new(Mutex::new(BTreeMap::new())),
            bg: Mutex::new(Bg::default()),
            bg_cv: Condvar::new(),
            _lock: lock_file,
        });
        manifest::sync_dir(&dir)?;
        let st = inner.current();
        let built = if recovered.is_empty() {
            None
        } else {
            inner.build_from_memtable(&recovered, st.segments.is_empty())?
        };
        {
            let mut m = lock(&inner.manifest);
            if let Some(s) = &built {
                m.segments.push(entry_of(s));
            }
            m.last_seq = last_seq;
            m.log_number = wal_number;
            m.write(&dir)?;
        }
        if let Some(s) = built {
            inner.set_state(|st| State {
                mem: st.mem.clone(),
                frozen: Vec::new(),
                segments: st.segments.iter().cloned().chain([s]).collect(),
            });
        }
        for n in wals {
            let path = dir.join(format!("{n:06}.wal"));
            if torn.contains(&n) {
                // Keep a log that ended in a torn tail for inspection: a
                // damaged length field reads as a tear too.
                let _ = std::fs::rename(&path, dir.join(format!("{n:06}.wal.torn")));
            } else {
                let _ = std::fs::remove_file(path);
            }
        }
        for p in stray {
            let _ = std::fs::remove_file(p);
        }
        let worker = inner.clone();
        let handle = std::thread::Builder::new()
            .name("pith-background".into())
            .spawn(move || background::run(&worker))
            .map_err(|e| Error::io(&dir, e))?;
        Ok(DB {
            inner,
            background: Mutex::new(Some(handle)),
        })
    }

    /// The value of `key`, or `None`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let (st, snap) = self.inner.view();
        self.inner.get_in(&st, key.as_ref(), snap)
    }

    /// The value of `key` as of `snapshot`.
    pub fn get_at(&self, snapshot: &Snapshot, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let st = self.inner.current();
        self.inner.get_in(&st, key.as_ref(), snapshot.seq)
    }

    /// Takes a snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        let mut r = lock(&self.inner.snapshots);
        let seq = self.inner.last_seq.load(Ordering::Acquire);
        *r.entry(seq).or_insert(0) += 1;
        Snapshot {
            seq,
            registry: self.inner.snapshots.clone(),
        }
    }

    /// A two-way iterator over the current state (unpositioned: call a
    /// seek first).
    pub fn iter(&self) -> DbIterator {
        let (st, snap) = self.inner.view();
        self.inner.iter_in(&st, snap)
    }

    /// A two-way iterator over `snapshot`.
    pub fn iter_at(&self, snapshot: &Snapshot) -> DbIterator {
        let st = self.inner.current();
        self.inner.iter_in(&st, snapshot.seq)
    }

    /// `(key, value)` pairs with keys in `[from, to)`; `None` leaves a side
    /// open.
    pub fn range(&self, from: Option<&[u8]>, to: Option<&[u8]>) -> Scan {
        let start = from.map_or(Bound::Unbounded, Bound::Included);
        let end = to.map_or(Bound::Unbounded, |t| Bound::Excluded(t.to_vec()));
        Scan::new(self.iter(), start, end)
    }

    /// `(key, value)` pairs whose keys start with `prefix`.
    pub fn prefix(&self, prefix: &[u8]) -> Scan {
        let end = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
        Scan::new(self.iter(), Bound::Included(prefix), end)
    }

    /// Keys matching `pattern` (anchored at both ends, as a whole-key
    /// match), in order. Segments are searched by walking the regex's DFA
    /// through their tries, pruning subtrees no key of which can match;
    /// memtables are scanned.
    pub fn search(&self, pattern: &str, limit: usize) -> Result<Vec<Vec<u8>>> {
        let re = pith_trie::KeyRegex::new(pattern).map_err(|e| Error::Regex(e.to_string()))?;
        let (st, snap) = self.inner.view();
        let mut best: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        let mut offer = |key: &[u8], tag: u64| match best.get_mut(key) {
            Some(t) => *t = (*t).max(tag),
            None => {
                best.insert(key.to_vec(), tag);
            }
        };
        for m in std::iter::once(&st.mem).chain(st.frozen.iter()) {
            for f in m.keys_matching(snap, |k| re.is_match(k)) {
                offer(&f.key, f.tag);
            }
        }
        for s in &st.segments {
            s.trie().regex_search(&re, |id, key| {
                if let Some(r) = s.visible(id, snap) {
                    offer(key, s.tag(r));
                }
                true
            });
        }
        Ok(best
            .into_iter()
            .filter(|(_, t)| tag_kind(*t) == Kind::Put)
            .map(|(k, _)| k)
            .take(limit)
            .collect())
    }

    /// Freezes the memtable and waits until every frozen memtable is built
    /// into a segment (after which the logs are deleted).
    pub fn flush(&self) -> Result<()> {
        {
            let _role = self.inner.writer_role();
            if !self.inner.current().mem.is_empty() {
                self.inner.switch_memtable()?;
            }
        }
        self.inner.wait_for(|st, _| st.frozen.is_empty())
    }

    /// Flushes, then waits until background merges have nothing left to do
    /// under the merge policy (what "after compaction settles" means in
    /// benchmarks). Unlike [`DB::compact`] it does not force a full merge.
    pub fn settle(&self) -> Result<()> {
        self.flush()?;
        let o = &self.inner.options;
        self.inner
            .wait_for(|st, _| st.frozen.is_empty() && crate::background::merge_due(st, o).is_none())
    }

    /// Flushes, then merges all segments into one, dropping every version
    /// and tombstone no snapshot needs, and re-encoding values with the
    /// merge codec. Waits until done.
    pub fn compact(&self) -> Result<()> {
        self.flush()?;
        let target = {
            let mut bg = lock(&self.inner.bg);
            bg.compactions_requested += 1;
            self.inner.bg_cv.notify_all();
            bg.compactions_requested
        };
        self.inner.wait_for(|_, bg| bg.compactions_done >= target)
    }

    /// Sizes and counts.
    pub fn stats(&self) -> Result<Stats> {
        let st = self.inner.current();
        let (mut disk_bytes, mut wal_bytes) = (0, 0);
        let dir = &self.inner.dir;
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let len = entry
                .metadata()
                .map_err(|e| Error::io(entry.path(), e))?
                .len();
            disk_bytes += len;
            if entry.file_name().to_string_lossy().ends_with(".wal") {
                wal_bytes += len;
            }
        }
        Ok(Stats {
            segments: st.segments.iter().map(|s| s.info()).collect(),
            memtable_bytes: std::iter::once(&st.mem)
                .chain(st.frozen.iter())
                .map(|m| m.approximate_bytes() as u64)
                .sum(),
            frozen_memtables: st.frozen.len(),
            disk_bytes,
            wal_bytes,
            last_sequence: self.inner.last_seq.load(Ordering::Acquire),
        })
    }

    /// Reads every byte of every live file and checks every checksum:
    /// segments (all sections, every record decoded), the manifest (at
    /// open), and the current log.
    pub fn verify(&self) -> Result<VerifyReport> {
        let st = self.inner.current();
        let mut report = VerifyReport::default();
        for s in &st.segments {
            s.verify()?;
            report.segments += 1;
            report.records += s.records();
        }
        for m in std::iter::once(&st.mem).chain(st.frozen.iter()) {
            let path = self.inner.file(m.wal_number, "wal");
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&path, e)),
            };
            let r = wal::replay_bytes(&path, &bytes, &mut |_, _| {})?;
            report.wals += 1;
            report.wal_records += r.records;
        }
        Ok(report)
    }

    /// The directory of this database.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Stops background work (waiting for a build in progress), syncs the
    /// log and releases the lock. Dropping the handle does the same.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        {
            let mut bg = lock(&self.inner.bg);
            bg.shutdown = true;
            self.inner.bg_cv.notify_all();
        }
        if let Some(h) = lock(&self.background).take() {
            let _ = h.join();
        }
        lock(&self.inner.wal).sync()
    }
}

impl Drop for DB {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
