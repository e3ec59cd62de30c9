//! The database handle: every method of [`DB`], in one place.
//!
//! Opening is in `recovery.rs`, the write path in `write.rs`, background
//! flushes and merges in `background.rs`, bulk loads in `bulk.rs`; the
//! state they share, and its locking rules, in `core.rs`. A `DB` is
//! `Send + Sync`; share it with `Arc`.

use std::collections::BTreeMap;
use std::ops::{Bound, Range};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::background::{self, Role};
use crate::batch::WriteBatch;
use crate::bulk::{self, BulkStats};
use crate::core::{lock, Inner, State, Tree};
use crate::dbformat::{expired, tag_kind, Kind, NO_DEADLINE};
use crate::error::{Error, Result};
use crate::family::{self, ColumnFamily};
use crate::filename::{self, FileKind};
use crate::iter::{DbIterator, MemCursor, Scan, Source, VersionCursor};
use crate::manifest::{DEFAULT_FAMILY_NAME, MAX_FAMILY_NAME};
use crate::memtable::Memtable;
use crate::options::{FamilyOptions, Options, WriteOptions};
use crate::reads;
use crate::records::Records;
use crate::recovery::{self, RecoveryReport};
use crate::search::{self, MemMatches, Search};
use crate::segment::cursor::{SegmentCursor, SegmentMatches};
use crate::segment::{Segment, SegmentInfo};
use crate::value_cache::ValueCacheStats;
use crate::wal;

/// An embedded PithDB database. See the crate documentation.
pub struct DB {
    pub(crate) inner: Arc<Inner>,
    /// The default family's handle: what the methods without `_cf` use.
    default_cf: ColumnFamily,
    /// The flush and merge threads.
    background: Mutex<Vec<JoinHandle<()>>>,
    recovery: RecoveryReport,
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

/// Sizes and counts, from [`DB::stats`] (every column family) or
/// [`DB::stats_cf`] (one).
#[derive(Clone, Debug)]
pub struct Stats {
    /// Live segments, oldest first.
    pub segments: Vec<SegmentInfo>,
    /// Approximate bytes in the live and frozen memtables.
    pub memtable_bytes: u64,
    /// Versions (puts and deletes) in the live and frozen memtables.
    pub memtable_entries: u64,
    /// Frozen memtables waiting to be built (generations: a switch
    /// freezes every family's memtable at once).
    pub frozen_memtables: usize,
    /// Bytes of all files in the database directory.
    pub disk_bytes: u64,
    /// Bytes of write-ahead logs.
    pub wal_bytes: u64,
    /// Highest published sequence number.
    pub last_sequence: u64,
    /// Shared compression models in use, oldest first.
    pub models: Vec<ModelInfo>,
    /// Records that segment builds (flushes, merges, bulk loads) since
    /// open copied as stored, without decoding and encoding.
    pub records_copied: u64,
    /// Records that segment builds since open encoded.
    pub records_encoded: u64,
    /// The cache of decoded values (the whole database's, whichever
    /// families were asked for); all zero when there is none.
    pub value_cache: ValueCacheStats,
}

/// One shared compression model, for stats.
#[derive(Clone, Debug)]
pub struct ModelInfo {
    /// File number (the file is `NNNNNN.model`).
    pub number: u64,
    /// File size.
    pub file_bytes: u64,
    /// Memory it holds: the inflated dictionary and decode tables, plus
    /// the matcher's index while a build encodes with it.
    pub heap_bytes: u64,
    /// Inflated dictionary bytes.
    pub dict_bytes: u64,
    /// Raw over encoded bytes on held-out records when trained.
    pub trained_ratio: f64,
    /// Bytes of sample records it was trained on.
    pub trained_from: u64,
    /// Whether it is its family's current model: new segments are
    /// encoded with it, or stored plain when it does not pay (a trained
    /// ratio under 1.11).
    pub current: bool,
    /// Live segments encoded with it.
    pub segments: usize,
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
    /// Shared model files read back and checked.
    pub models: usize,
    /// Write-ahead logs read.
    pub wals: usize,
    /// Log records read.
    pub wal_records: u64,
    /// Logs whose torn tail was dropped at a recovery (`NNNNNN.wal.torn`),
    /// kept for inspection. Not corruption, but worth a look: a crash
    /// happened during a write, and bytes that were never acknowledged
    /// as synced were dropped. Remove them once inspected.
    pub torn_logs: Vec<PathBuf>,
}

/// The value of `key` at `snap` and its deadline (`NO_DEADLINE`: none),
/// unless it is deleted, absent or expired at `now`; without
/// `with_value`, the value is left empty and nothing is decoded.
fn get_in(
    st: &Tree,
    key: &[u8],
    snap: u64,
    now: u64,
    with_value: bool,
) -> Result<Option<(Vec<u8>, u64)>> {
    let live = |tag: u64, deadline: u64, value: Vec<u8>| {
        (tag_kind(tag) == Kind::Put && !expired(deadline, now)).then_some((value, deadline))
    };
    let hash = crate::dbformat::key_hash(key);
    for m in std::iter::once(&st.mem).chain(st.frozen.iter().rev()) {
        if let Some(v) = m.get(key, hash, snap, now, with_value) {
            return Ok(live(v.tag, v.deadline, v.value));
        }
    }
    let mut out = Vec::new();
    for s in st.segments.iter().rev() {
        let decode_into = with_value.then_some(&mut out);
        if let Some((tag, deadline)) = s.get(key, hash, snap, now, decode_into)? {
            return Ok(live(tag, deadline, out));
        }
    }
    Ok(None)
}

/// The value of each (family, key) of `reads` in `st` at `snap`.
fn multi_get_in<'a, K: AsRef<[u8]>>(
    st: &State,
    snap: u64,
    now: u64,
    reads: impl IntoIterator<Item = (&'a ColumnFamily, K)>,
) -> Result<Vec<Option<Vec<u8>>>> {
    let mut values = Vec::new();
    reads::multi_get_with(st, snap, now, reads, |_, v| -> Result<()> {
        values.push(v.map(<[u8]>::to_vec));
        Ok(())
    })?;
    Ok(values)
}

/// The trie of `t`'s keys at `snap` when `t` is settled: no memtable
/// entry, one segment whose versions `snap` sees all, holding no
/// tombstone and no deadline (so every key in its trie is live and has one
/// visible newest version): `Some(None)` when `t` has no segment at all.
/// `None` when `t` is not settled.
fn settled(t: &Tree, snap: u64) -> Option<Option<&pith_trie::Trie<'_>>> {
    reads::settled_segment(t, snap).map(|s| s.map(Segment::trie))
}

/// The ids of `trie`'s keys in `[from, to)`.
fn id_range(trie: &pith_trie::Trie<'_>, from: Option<&[u8]>, to: Option<&[u8]>) -> Range<u64> {
    let lo = from.map_or(0, |k| trie.lower_bound(k));
    let hi = to.map_or(trie.len() as u64, |k| trie.lower_bound(k));
    lo..hi.max(lo)
}

/// Live keys of `t` in `[from, to)` at `snap` from trie ranks, when `t`
/// is settled (see [`settled`]); `None` otherwise.
fn settled_count(t: &Tree, snap: u64, from: Option<&[u8]>, to: Option<&[u8]>) -> Option<u64> {
    Some(settled(t, snap)?.map_or(0, |trie| {
        let ids = id_range(trie, from, to);
        ids.end - ids.start
    }))
}

/// Positions `it` at the first key of `[from, to)` (the last, when
/// `reverse`) and calls `visit` at each position inside it, stepping
/// toward the other end, until `visit` returns false or the range ends;
/// then the iterator's status (a value or segment that failed).
fn walk_range(
    it: &mut DbIterator,
    from: Option<&[u8]>,
    to: Option<&[u8]>,
    reverse: bool,
    visit: &mut dyn FnMut(&DbIterator) -> bool,
) -> Result<()> {
    match (reverse, from, to) {
        (false, Some(f), _) => it.seek(f),
        (false, None, _) => it.seek_to_first(),
        (true, _, Some(end)) => {
            it.seek_for_prev(end);
            if it.key() == Some(end) {
                it.prev(); // the end is excluded
            }
        }
        (true, _, None) => it.seek_to_last(),
    }
    while let Some(key) = it.key() {
        let inside = match reverse {
            false => to.is_none_or(|end| key < end),
            true => from.is_none_or(|f| key >= f),
        };
        if !inside || !visit(it) {
            break;
        }
        match reverse {
            false => it.next(),
            true => it.prev(),
        }
    }
    it.status()
}

/// Counts a scan's keys (no value decoded).
fn count_scan(scan: Scan) -> Result<u64> {
    let mut n = 0;
    for k in scan.keys() {
        k?;
        n += 1;
    }
    Ok(n)
}

/// A deadline as the API shows it.
fn shown(deadline: u64) -> Option<u64> {
    (deadline != NO_DEADLINE).then_some(deadline)
}

/// One source per memtable and segment of `st`, newest first: `mem` makes
/// a memtable's, `seg` a segment's.
fn sources_in<T: ?Sized>(
    st: &Tree,
    mem: impl Fn(Arc<Memtable>) -> Box<T>,
    seg: impl Fn(Arc<Segment>) -> Box<T>,
) -> Vec<Box<T>> {
    let mems = std::iter::once(&st.mem).chain(st.frozen.iter().rev());
    let segments = st.segments.iter().rev();
    mems.map(|m| mem(m.clone()))
        .chain(segments.map(|s| seg(s.clone())))
        .collect()
}

fn iter_in(st: &Tree, snap: u64, now: u64) -> DbIterator {
    let sources = sources_in::<dyn VersionCursor>(
        st,
        |m| Box::new(MemCursor::new(m, snap)),
        |s| Box::new(SegmentCursor::new(s, snap)),
    );
    DbIterator::new(sources, now)
}

fn search_in(st: &Tree, snap: u64, now: u64, pattern: &str, from: &[u8]) -> Result<Search> {
    let re = search::compile(pattern)?;
    let sources = sources_in::<dyn Source>(
        st,
        |m| Box::new(MemMatches::new(MemCursor::new(m, snap), re.clone(), from)),
        |s| Box::new(SegmentMatches::new(s, re.clone(), snap, from)),
    );
    Ok(Search::new(sources, now))
}

/// A scan of `it`'s keys in `[from, to)`; `None` leaves a side open.
fn range_scan(it: DbIterator, from: Option<&[u8]>, to: Option<&[u8]>) -> Scan {
    let start = from.map_or(Bound::Unbounded, |f| Bound::Included(f.to_vec()));
    let end = to.map_or(Bound::Unbounded, |t| Bound::Excluded(t.to_vec()));
    Scan::new(it, start, end)
}

/// A scan of `it`'s keys that start with `prefix`.
fn prefix_scan(it: DbIterator, prefix: &[u8]) -> Scan {
    // No successor (an empty or all-0xFF prefix): every key from `prefix`
    // on starts with it.
    let end = pith_enc::prefix::successor(prefix).map_or(Bound::Unbounded, Bound::Excluded);
    Scan::new(it, Bound::Included(prefix.to_vec()), end)
}

/// The default family's handle.
fn default_family() -> ColumnFamily {
    ColumnFamily::new(family::DEFAULT, Arc::from(DEFAULT_FAMILY_NAME))
}

impl DB {
    /// Opens (or creates) the database in directory `path`, replaying its
    /// write-ahead logs into memory; the flush thread builds them
    /// into a segment. Creating a database needs an empty (or missing)
    /// directory.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<DB> {
        let (inner, recovery) = recovery::open(path.as_ref(), options, false)?;
        let db = DB {
            inner,
            default_cf: default_family(),
            background: Mutex::new(Vec::new()),
            recovery,
        };
        for (name, role) in [("pith-flush", Role::Flush), ("pith-merge", Role::Merge)] {
            let worker = db.inner.clone();
            let handle = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || background::run(&worker, role))
                .map_err(|e| Error::io(path.as_ref(), e))?;
            lock(&db.background).push(handle);
        }
        Ok(db)
    }

    /// Opens an existing database for reading only, beside a writer or not
    /// (RocksDB's read-only mode): no lock, logs replayed into memory,
    /// nothing on disk changed, no background threads. Works on a read-only
    /// file system. The handle sees the database as it was when it opened
    /// (a prefix of the writes, never a torn batch); later writes of
    /// another handle are not seen (open again to see them). Writes,
    /// `flush` and `compact` return [`Error::ReadOnly`].
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<DB> {
        let (inner, recovery) = recovery::open(path.as_ref(), options, true)?;
        Ok(DB {
            inner,
            default_cf: default_family(),
            background: Mutex::new(Vec::new()),
            recovery,
        })
    }

    /// What recovery found when this handle opened the database: logs
    /// replayed, and torn tails dropped.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// True when opened with [`DB::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// The value of `key`, or `None` (absent, deleted or expired).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_cf(&self.default_cf, key)
    }

    /// The value of `key` in column family `cf`.
    pub fn get_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let (st, snap) = self.inner.view();
        let found = get_in(st.tree_of(cf)?, key.as_ref(), snap, self.inner.now(), true)?;
        Ok(found.map(|(value, _)| value))
    }

    /// The value of `key` as of `snapshot` (expiry judged now: a key
    /// expired since the snapshot was taken reads as absent).
    pub fn get_at(&self, snapshot: &Snapshot, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_cf_at(&self.default_cf, snapshot, key)
    }

    /// [`DB::get_cf`] as of `snapshot`.
    pub fn get_cf_at(
        &self,
        cf: &ColumnFamily,
        snapshot: &Snapshot,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let st = self.inner.current();
        let found = get_in(
            st.tree_of(cf)?,
            key.as_ref(),
            snapshot.seq,
            self.inner.now(),
            true,
        )?;
        Ok(found.map(|(value, _)| value))
    }

    /// The values of several (family, key) pairs, in their order (`None`
    /// where a key is absent, deleted or expired), all at one point:
    /// [`DB::get_cf`] for each, with the database state and clock read
    /// once (the column groups of a table row, say). Reads in a settled
    /// family (nothing in memtables, one segment) overlap their cache
    /// misses: later reads are looked up and their bytes prefetched
    /// while earlier ones decode, so many reads in one call are faster
    /// than as many calls.
    pub fn multi_get_cf<'a, K: AsRef<[u8]>>(
        &self,
        reads: impl IntoIterator<Item = (&'a ColumnFamily, K)>,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let (st, snap) = self.inner.view();
        multi_get_in(&st, snap, self.inner.now(), reads)
    }

    /// [`DB::multi_get_cf_at`], handing each value to `visit` (with its
    /// position in `reads`) as it is read instead of collecting them: the
    /// values are decoded into one buffer, reused from read to read, so a
    /// read allocates nothing. The first error `visit` returns stops the
    /// reads and is returned; so does the engine's first (a family that no
    /// longer exists, corruption), possibly before the few reads ahead of
    /// it in `reads` were visited (reads are looked up a few ahead).
    pub fn multi_get_cf_at_with<'a, K: AsRef<[u8]>, E: From<Error>>(
        &self,
        snapshot: &Snapshot,
        reads: impl IntoIterator<Item = (&'a ColumnFamily, K)>,
        visit: impl FnMut(usize, Option<&[u8]>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let st = self.inner.current();
        reads::multi_get_with(&st, snapshot.seq, self.inner.now(), reads, visit)
    }

    /// [`DB::multi_get_cf`] as of `snapshot`.
    pub fn multi_get_cf_at<'a, K: AsRef<[u8]>>(
        &self,
        snapshot: &Snapshot,
        reads: impl IntoIterator<Item = (&'a ColumnFamily, K)>,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let st = self.inner.current();
        multi_get_in(&st, snapshot.seq, self.inner.now(), reads)
    }

    /// The time by the database's clock ([`Options::clock`]), in
    /// milliseconds since the Unix epoch: what deadlines are judged
    /// against, for callers turning a time to live into a deadline.
    pub fn now_ms(&self) -> u64 {
        self.inner.now()
    }

    /// The value of `key` and when it expires (milliseconds since the Unix
    /// epoch; `None`: never), or `None` when it is absent, deleted or
    /// expired. See [`WriteBatch::put_expiring`].
    pub fn get_with_deadline(
        &self,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<(Vec<u8>, Option<u64>)>> {
        let (st, snap) = self.inner.view();
        let found = get_in(
            st.default_tree(),
            key.as_ref(),
            snap,
            self.inner.now(),
            true,
        )?;
        Ok(found.map(|(value, deadline)| (value, shown(deadline))))
    }

    /// True when `key` is present (not deleted, not expired): a lookup
    /// that decodes no value.
    pub fn contains(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        self.contains_cf(&self.default_cf, key)
    }

    /// [`DB::contains`] in column family `cf`.
    pub fn contains_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<bool> {
        let (st, snap) = self.inner.view();
        let found = get_in(st.tree_of(cf)?, key.as_ref(), snap, self.inner.now(), false)?;
        Ok(found.is_some())
    }

    /// When `key` expires, without decoding its value: `None` when it is
    /// absent (deleted, expired or never written), `Some(None)` when it is
    /// present and never expires, `Some(Some(ms))` when it expires at
    /// `ms` (milliseconds since the Unix epoch).
    pub fn deadline_of(&self, key: impl AsRef<[u8]>) -> Result<Option<Option<u64>>> {
        let (st, snap) = self.inner.view();
        let found = get_in(
            st.default_tree(),
            key.as_ref(),
            snap,
            self.inner.now(),
            false,
        )?;
        Ok(found.map(|(_, deadline)| shown(deadline)))
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
        iter_in(st.default_tree(), snap, self.inner.now())
    }

    /// A two-way iterator over `snapshot`.
    pub fn iter_at(&self, snapshot: &Snapshot) -> DbIterator {
        let st = self.inner.current();
        iter_in(st.default_tree(), snapshot.seq, self.inner.now())
    }

    /// A two-way iterator over column family `cf`.
    pub fn iter_cf(&self, cf: &ColumnFamily) -> Result<DbIterator> {
        let (st, snap) = self.inner.view();
        Ok(iter_in(st.tree_of(cf)?, snap, self.inner.now()))
    }

    /// A two-way iterator over column family `cf` as of `snapshot`: every
    /// family read through one snapshot is seen at the same point.
    pub fn iter_cf_at(&self, cf: &ColumnFamily, snapshot: &Snapshot) -> Result<DbIterator> {
        let st = self.inner.current();
        Ok(iter_in(st.tree_of(cf)?, snapshot.seq, self.inner.now()))
    }

    /// `(key, value)` pairs with keys in `[from, to)`, in key order;
    /// `None` leaves a side open. Double-ended: `.rev()` walks down from
    /// `to`.
    pub fn range(&self, from: Option<&[u8]>, to: Option<&[u8]>) -> Scan {
        range_scan(self.iter(), from, to)
    }

    /// [`DB::range`] as of `snapshot`.
    pub fn range_at(&self, snapshot: &Snapshot, from: Option<&[u8]>, to: Option<&[u8]>) -> Scan {
        range_scan(self.iter_at(snapshot), from, to)
    }

    /// `(key, value)` pairs whose keys start with `prefix`, in key order.
    /// Double-ended: `.rev()` walks down from the last such key (whatever
    /// the prefix, `0xFF` bytes included).
    pub fn prefix(&self, prefix: &[u8]) -> Scan {
        prefix_scan(self.iter(), prefix)
    }

    /// [`DB::prefix`] as of `snapshot`.
    pub fn prefix_at(&self, snapshot: &Snapshot, prefix: &[u8]) -> Scan {
        prefix_scan(self.iter_at(snapshot), prefix)
    }

    /// [`DB::range`] in column family `cf`.
    pub fn range_cf(
        &self,
        cf: &ColumnFamily,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
    ) -> Result<Scan> {
        Ok(range_scan(self.iter_cf(cf)?, from, to))
    }

    /// [`DB::range`] in column family `cf` as of `snapshot`.
    pub fn range_cf_at(
        &self,
        cf: &ColumnFamily,
        snapshot: &Snapshot,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
    ) -> Result<Scan> {
        Ok(range_scan(self.iter_cf_at(cf, snapshot)?, from, to))
    }

    /// [`DB::prefix`] in column family `cf`.
    pub fn prefix_cf(&self, cf: &ColumnFamily, prefix: &[u8]) -> Result<Scan> {
        Ok(prefix_scan(self.iter_cf(cf)?, prefix))
    }

    /// [`DB::prefix`] in column family `cf` as of `snapshot`.
    pub fn prefix_cf_at(
        &self,
        cf: &ColumnFamily,
        snapshot: &Snapshot,
        prefix: &[u8],
    ) -> Result<Scan> {
        Ok(prefix_scan(self.iter_cf_at(cf, snapshot)?, prefix))
    }

    /// Live keys, counted exactly. A settled database (no memtable entry,
    /// at most one segment, holding no tombstone and no deadline) answers
    /// from the segment's key count at once; otherwise every key is walked
    /// (no value is decoded), in time proportional to the keys. [`Stats`]
    /// has what the segments store, without the walk.
    pub fn count_keys(&self) -> Result<u64> {
        self.count_keys_cf(&self.default_cf)
    }

    /// [`DB::count_keys`] of column family `cf`.
    pub fn count_keys_cf(&self, cf: &ColumnFamily) -> Result<u64> {
        self.count_range_cf(cf, None, None)
    }

    /// Live keys of column family `cf` in `[from, to)` (`None` leaves a
    /// side open), counted exactly. When the family is settled (no
    /// memtable entry, one segment, no tombstone or deadline in it), the
    /// count is the difference of two trie ranks, found by two seeks
    /// whatever the range holds; otherwise the keys are walked (no value
    /// decoded).
    pub fn count_range_cf(
        &self,
        cf: &ColumnFamily,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
    ) -> Result<u64> {
        let (st, snap) = self.inner.view();
        if let Some(n) = settled_count(st.tree_of(cf)?, snap, from, to) {
            return Ok(n);
        }
        drop(st);
        count_scan(self.range_cf(cf, from, to)?)
    }

    /// [`DB::count_range_cf`] as of `snapshot`.
    pub fn count_range_cf_at(
        &self,
        cf: &ColumnFamily,
        snapshot: &Snapshot,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
    ) -> Result<u64> {
        let st = self.inner.current();
        if let Some(n) = settled_count(st.tree_of(cf)?, snapshot.seq, from, to) {
            return Ok(n);
        }
        drop(st);
        count_scan(self.range_cf_at(cf, snapshot, from, to)?)
    }

    /// Calls `visit` with each live key of family `cf` in `[from, to)` at
    /// `snapshot` (`None` leaves a side open), in key order or, when
    /// `reverse`, from the last, until it returns false; no value is read.
    /// On a settled family (nothing in its memtables, one segment with no
    /// tombstone or deadline that the snapshot sees whole, as after a bulk
    /// load or a full compaction) the keys come straight from the
    /// segment's trie, without a merging iterator: an index's entries, say.
    pub fn for_each_key_cf_at(
        &self,
        cf: &ColumnFamily,
        snapshot: &Snapshot,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        reverse: bool,
        visit: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        let st = self.inner.current();
        let t = st.tree_of(cf)?;
        if let Some(trie) = settled(t, snapshot.seq) {
            let Some(trie) = trie else {
                return Ok(());
            };
            let ids = id_range(trie, from, to);
            if ids.is_empty() {
                return Ok(());
            }
            let mut c = trie.cursor();
            let (mut left, mut moved) = (
                ids.end - ids.start,
                match reverse {
                    false => c.seek_id(ids.start),
                    true => c.seek_id(ids.end - 1),
                },
            );
            while moved && left > 0 {
                let Some(key) = c.key() else { break };
                if !visit(key) {
                    break;
                }
                left -= 1;
                moved = match reverse {
                    false => c.next(),
                    true => c.prev(),
                };
            }
            return Ok(());
        }
        let mut it = iter_in(t, snapshot.seq, self.inner.now());
        drop(st);
        walk_range(&mut it, from, to, reverse, &mut |it| {
            it.key().is_some_and(&mut *visit)
        })
    }

    /// [`DB::for_each_key_cf_at`] with each key's value: `visit` gets both
    /// (values decoded as they are visited, through a merging iterator).
    /// A value that does not decode stops the walk with its error.
    pub fn for_each_cf_at(
        &self,
        cf: &ColumnFamily,
        snapshot: &Snapshot,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        reverse: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let mut it = self.iter_cf_at(cf, snapshot)?;
        walk_range(&mut it, from, to, reverse, &mut |it| {
            // A value that does not decode: `walk_range` returns its error.
            matches!((it.key(), it.value()), (Some(k), Some(v)) if visit(k, v))
        })
    }

    /// `(key, value)` pairs whose keys match `pattern` (anchored at both
    /// ends, as a whole-key match, in `regex::bytes` syntax), in key order,
    /// found lazily: take as many as wanted (`.take(n)`), or only the keys
    /// ([`Search::keys`], no value decoded). Segments are searched by
    /// walking the pattern's DFA through their tries, skipping subtrees no
    /// key of which can match; memtables are filtered.
    ///
    /// A pattern that does not parse is an [`Error::Regex`] whose message
    /// is the regex parser's, pointing at the position.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = pith::DB::open(dir.path(), pith::Options::default())?;
    /// db.put("pkg/zlib/1.3", "deb")?;
    /// db.put("pkg/zstd/1.5", "deb")?;
    /// for kv in db.search(r"pkg/z.*/1\.[0-9]")?.take(10) {
    ///     let (key, value) = kv?;
    ///     assert!(key.starts_with(b"pkg/z") && value == b"deb");
    /// }
    /// let keys = db.search("pkg/zs.*")?.keys().collect::<pith::Result<Vec<_>>>()?;
    /// assert_eq!(keys, vec![b"pkg/zstd/1.5".to_vec()]);
    /// assert!(matches!(db.search("pkg/(z"), Err(pith::Error::Regex(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn search(&self, pattern: &str) -> Result<Search> {
        self.search_from(pattern, b"")
    }

    /// [`DB::search`] over the keys `>= from` only. Each segment's walk
    /// starts on `from`'s path through its trie, so resuming a search after
    /// the last key seen (a paged scan) costs the matches ahead, not again
    /// those behind.
    pub fn search_from(&self, pattern: &str, from: &[u8]) -> Result<Search> {
        self.search_from_cf(&self.default_cf, pattern, from)
    }

    /// [`DB::search`] in column family `cf`.
    pub fn search_cf(&self, cf: &ColumnFamily, pattern: &str) -> Result<Search> {
        self.search_from_cf(cf, pattern, b"")
    }

    /// [`DB::search_from`] in column family `cf`.
    pub fn search_from_cf(&self, cf: &ColumnFamily, pattern: &str, from: &[u8]) -> Result<Search> {
        let (st, snap) = self.inner.view();
        search_in(st.tree_of(cf)?, snap, self.inner.now(), pattern, from)
    }

    /// [`DB::search_from`] in column family `cf` as of `snapshot`.
    pub fn search_from_cf_at(
        &self,
        cf: &ColumnFamily,
        snapshot: &Snapshot,
        pattern: &str,
        from: &[u8],
    ) -> Result<Search> {
        let st = self.inner.current();
        search_in(
            st.tree_of(cf)?,
            snapshot.seq,
            self.inner.now(),
            pattern,
            from,
        )
    }

    /// [`DB::search`] as of `snapshot`.
    pub fn search_at(&self, snapshot: &Snapshot, pattern: &str) -> Result<Search> {
        self.search_from_at(snapshot, pattern, b"")
    }

    /// [`DB::search_from`] as of `snapshot`.
    pub fn search_from_at(
        &self,
        snapshot: &Snapshot,
        pattern: &str,
        from: &[u8],
    ) -> Result<Search> {
        self.search_from_cf_at(&self.default_cf, snapshot, pattern, from)
    }

    /// Puts `key -> value`, with the default [`WriteOptions`] (not
    /// fsynced).
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(WriteOptions::default(), key, value)
    }

    /// Puts `key -> value` with `options` (e.g. [`WriteOptions::synced`]).
    pub fn put_opt(
        &self,
        options: WriteOptions,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(options, b)
    }

    /// Puts `key -> value` expiring at `deadline_ms` (milliseconds since
    /// the Unix epoch, by [`Options::clock`]), with the default
    /// [`WriteOptions`]; see [`WriteBatch::put_expiring`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let clock = pith::ManualClock::new(1_000);
    /// let options = pith::Options { clock: std::sync::Arc::new(clock.clone()), ..Default::default() };
    /// let db = pith::DB::open(dir.path(), options)?;
    /// db.put_expiring("session", "alice", 1_500)?;
    /// assert_eq!(db.get_with_deadline("session")?, Some((b"alice".to_vec(), Some(1_500))));
    /// clock.advance(500);
    /// assert_eq!(db.get("session")?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_expiring(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        deadline_ms: u64,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put_expiring(key, value, deadline_ms);
        self.write(WriteOptions::default(), b)
    }

    /// Puts `key -> value` in column family `cf`, with the default
    /// [`WriteOptions`].
    pub fn put_cf(
        &self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put_cf(cf, key, value);
        self.write(WriteOptions::default(), b)
    }

    /// Deletes `key` in column family `cf`, with the default
    /// [`WriteOptions`].
    pub fn delete_cf(&self, cf: &ColumnFamily, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_cf(cf, key);
        self.write(WriteOptions::default(), b)
    }

    /// Deletes `key` (a no-op if absent), with the default
    /// [`WriteOptions`].
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(WriteOptions::default(), key)
    }

    /// Deletes `key` (a no-op if absent) with `options`.
    pub fn delete_opt(&self, options: WriteOptions, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(options, b)
    }

    /// Applies `batch` atomically, across column families too: readers
    /// and recovery see all of it or none of it. A batch naming a family
    /// that is not live is [`Error::NoSuchFamily`] and writes nothing; a
    /// family dropped while the batch waits to commit loses its part,
    /// like any other write to it.
    pub fn write(&self, options: WriteOptions, batch: WriteBatch) -> Result<()> {
        self.inner.write(options, batch)
    }

    /// Makes every write acknowledged so far durable (fsyncs the log), as
    /// if each had been written with [`WriteOptions::synced`]: for callers
    /// that sync once a second rather than per write. Writers wait for the
    /// fsync. [`Error::ReadOnly`] on a read-only handle.
    pub fn sync_wal(&self) -> Result<()> {
        self.inner.sync_wal()
    }

    /// Writes the log records that writes with
    /// [`WriteOptions::defer_log`] left in the engine's buffer (one system
    /// call, no fsync): when it returns `Ok`, every write acknowledged
    /// before the call survives a process crash. An error when the
    /// database has stopped accepting writes ([`Error::Poisoned`]), even
    /// if the records had been written before that; [`Error::ReadOnly`] on
    /// a read-only handle.
    pub fn write_log(&self) -> Result<()> {
        self.inner.write_log()
    }

    /// Loads many records straight into segments, without the log: the
    /// input is cut into chunks of `Options::bulk_chunk_bytes`, each sorted
    /// (the last of repeated keys wins) and built into one segment, made
    /// durable and added to the manifest. Other writers wait while it runs;
    /// readers do not. Call [`DB::compact`] afterwards to merge the chunks.
    pub fn bulk_load<I, K, V>(&self, records: I) -> Result<BulkStats>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        self.try_bulk_load(records.into_iter().map(Ok::<_, Error>))
    }

    /// [`DB::bulk_load`] over a fallible input; the first input error stops
    /// the load (chunks already built stay loaded) and is returned.
    pub fn try_bulk_load<I, K, V, E>(&self, records: I) -> Result<BulkStats, E>
    where
        I: IntoIterator<Item = Result<(K, V), E>>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        E: From<Error>,
    {
        bulk::load(&self.inner, family::DEFAULT, records)
    }

    /// [`DB::try_bulk_load`] into column family `cf`. The load flushes
    /// every family's memtable first (they switch together).
    pub fn try_bulk_load_cf<I, K, V, E>(
        &self,
        cf: &ColumnFamily,
        records: I,
    ) -> Result<BulkStats, E>
    where
        I: IntoIterator<Item = Result<(K, V), E>>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        E: From<Error>,
    {
        bulk::load(&self.inner, cf.id, records)
    }

    /// Loads each family's records (in any order; the last of repeated
    /// keys wins) into one new segment per family, building the families
    /// in parallel (`Options::background_threads` at a time), and installs
    /// them all at once: readers and recovery see every family's records
    /// or none, as after one write batch. The records are held in memory
    /// as given, so this suits loads that fit in it; [`DB::bulk_load`]
    /// streams. Flushes every family's memtable first; other writers wait
    /// while it runs, readers do not. A family named twice is an
    /// [`Error::InvalidArgument`].
    pub fn bulk_load_families(&self, loads: Vec<(&ColumnFamily, Records)>) -> Result<BulkStats> {
        let loads = loads.into_iter().map(|(cf, r)| (cf.id, r)).collect();
        bulk::load_families(&self.inner, loads)
    }

    /// Freezes the memtables (every family's) and waits until every
    /// frozen memtable is built into a segment (after which their logs are
    /// deleted).
    pub fn flush(&self) -> Result<()> {
        self.inner.check_writable()?;
        {
            let _role = self.inner.writer_role();
            if self
                .inner
                .with_state(|st| st.trees.iter().any(|t| !t.mem.is_empty()))
            {
                self.inner.switch_memtable()?;
            }
        }
        self.inner.wait_for(|st, _| st.frozen_generations() == 0)
    }

    /// Flushes, then waits until background merges have nothing left to do
    /// under the merge policy (what "after compaction settles" means in
    /// benchmarks). Unlike [`DB::compact`] it does not force a full merge.
    pub fn settle(&self) -> Result<()> {
        self.flush()?;
        let o = &self.inner.options;
        self.inner.wait_for(|st, _| {
            st.frozen_generations() == 0 && background::any_merge_due(st, o).is_none()
        })
    }

    /// Flushes, then merges each family's segments into one, dropping every version
    /// and tombstone no snapshot needs, and re-encoding values with the
    /// merge codec (or the current shared model). Waits until done. A
    /// database that is already one segment with nothing to drop, its
    /// values in the current shared model, is left as it is (a merge
    /// would rewrite the same records), as RocksDB's `CompactRange` leaves
    /// its bottommost level by default.
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

    /// The file numbers of the current segments (every family's, in
    /// family order, each family's oldest first): a cheap way to notice
    /// that a flush or merge finished (no file is read, unlike
    /// [`DB::stats`]).
    pub fn segment_numbers(&self) -> Vec<u64> {
        self.inner
            .with_state(|st| st.segments().map(|s| s.number).collect())
    }

    /// Creates column family `name` (1 to 255 bytes of UTF-8, not in use),
    /// durably: it is in the manifest when this returns. Writes to it go
    /// through the same log as every other family's.
    pub fn create_family(&self, name: &str) -> Result<ColumnFamily> {
        self.inner.check_writable()?;
        if name.is_empty() || name.len() > MAX_FAMILY_NAME {
            return Err(Error::InvalidArgument(format!(
                "a column family name is 1 to {MAX_FAMILY_NAME} bytes, not {}",
                name.len()
            )));
        }
        // The writer role keeps memtable switches (and so generations)
        // out while the family joins the live one.
        let _role = self.inner.writer_role();
        if self.family(name).is_some() {
            return Err(Error::FamilyExists { name: name.into() });
        }
        let id = crate::core::lock(&self.inner.manifest).next_family;
        if id == u32::MAX {
            return Err(Error::InvalidArgument(
                "every column family id has been used".into(),
            ));
        }
        let name: Arc<str> = Arc::from(name);
        self.inner.apply(crate::core::Edit {
            create: Some((id, name.clone())),
            ..Default::default()
        })?;
        Ok(ColumnFamily::new(id, name))
    }

    /// Sets the options of family `cf` that differ from the database's
    /// ([`FamilyOptions`]), for the segments built from now on (flushes,
    /// merges, bulk loads); until the database closes: they are not
    /// stored, so set them after each open.
    pub fn set_family_options(&self, cf: &ColumnFamily, options: FamilyOptions) -> Result<()> {
        if self.inner.with_state(|st| st.tree(cf.id).is_none()) {
            return Err(Error::NoSuchFamily {
                name: cf.name.to_string(),
            });
        }
        crate::core::lock(&self.inner.family_options).insert(cf.id, options);
        Ok(())
    }

    /// Drops column family `cf` and everything in it: its segment files
    /// go once no reader holds them. The default family cannot be dropped.
    /// Its handles (and snapshots' reads of it) fail with
    /// [`Error::NoSuchFamily`] from now on; its id is never reused.
    pub fn drop_family(&self, cf: &ColumnFamily) -> Result<()> {
        self.inner.check_writable()?;
        if cf.id == family::DEFAULT {
            return Err(Error::InvalidArgument(
                "the default column family cannot be dropped".into(),
            ));
        }
        let _role = self.inner.writer_role();
        if self.inner.with_state(|st| st.tree(cf.id).is_none()) {
            return Err(Error::NoSuchFamily {
                name: cf.name.to_string(),
            });
        }
        self.inner.apply(crate::core::Edit {
            drop: Some(cf.id),
            ..Default::default()
        })?;
        crate::core::lock(&self.inner.family_options).remove(&cf.id);
        Ok(())
    }

    /// The live column family named `name`.
    pub fn family(&self, name: &str) -> Option<ColumnFamily> {
        self.inner.with_state(|st| {
            st.trees
                .iter()
                .find(|t| &*t.name == name)
                .map(|t| ColumnFamily::new(t.id, t.name.clone()))
        })
    }

    /// Every live column family, the default one first, then by creation.
    pub fn families(&self) -> Vec<ColumnFamily> {
        self.inner.with_state(|st| {
            st.trees
                .iter()
                .map(|t| ColumnFamily::new(t.id, t.name.clone()))
                .collect()
        })
    }

    /// The default column family: what the methods without `_cf` use.
    pub fn default_family(&self) -> ColumnFamily {
        self.default_cf.clone()
    }

    /// Sizes and counts, of every column family. Files removed while it
    /// lists them (a finishing flush or merge) are skipped.
    pub fn stats(&self) -> Result<Stats> {
        let st = self.inner.current();
        self.stats_of(&st.trees.iter().collect::<Vec<_>>())
    }

    /// [`DB::stats`] of column family `cf`: its segments, memtables and
    /// models; the file and log sizes, the sequence number and the build
    /// counts are still the whole database's.
    pub fn stats_cf(&self, cf: &ColumnFamily) -> Result<Stats> {
        let st = self.inner.current();
        self.stats_of(&[st.tree_of(cf)?])
    }

    fn stats_of(&self, trees: &[&Tree]) -> Result<Stats> {
        let (mut disk_bytes, mut wal_bytes) = (0, 0);
        let (fs, dir) = (&*self.inner.fs, &self.inner.dir);
        for name in fs.list(dir).map_err(|e| Error::io(dir, e))? {
            let path = dir.join(&name);
            let len = match fs.len(&path) {
                Ok(len) => len,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&path, e)),
            };
            disk_bytes += len;
            if matches!(filename::parse(&name), Some((_, FileKind::Wal))) {
                wal_bytes += len;
            }
        }
        let models = crate::core::dedup_models(trees.iter().flat_map(|t| t.models()).collect());
        let segments = || trees.iter().flat_map(|t| t.segments.iter());
        let memtables = || trees.iter().flat_map(|t| t.memtables());
        let models = models
            .into_iter()
            .map(|m| ModelInfo {
                number: m.number,
                file_bytes: m.file_bytes(),
                heap_bytes: m.model.heap_bytes() as u64,
                dict_bytes: m.model.dict_bytes() as u64,
                trained_ratio: f64::from(m.model.ratio()),
                trained_from: m.model.trained_from(),
                current: trees
                    .iter()
                    .any(|t| t.model.as_ref().is_some_and(|c| c.number == m.number)),
                segments: segments()
                    .filter(|s| s.model().is_some_and(|x| x.number == m.number))
                    .count(),
            })
            .collect();
        let (records_copied, records_encoded) = {
            let bg = crate::core::lock(&self.inner.bg);
            (bg.records_copied, bg.records_encoded)
        };
        Ok(Stats {
            records_copied,
            records_encoded,
            models,
            segments: segments().map(|s| s.info()).collect(),
            memtable_bytes: memtables().map(|m| m.approximate_bytes() as u64).sum(),
            memtable_entries: memtables().map(|m| m.entries() as u64).sum(),
            frozen_memtables: trees.iter().map(|t| t.frozen.len()).max().unwrap_or(0),
            disk_bytes,
            wal_bytes,
            last_sequence: self.inner.last_seq.load(Ordering::Acquire),
            value_cache: self
                .inner
                .value_cache
                .as_ref()
                .map_or_else(ValueCacheStats::default, |c| c.stats()),
        })
    }

    /// Reads every byte of every live file and checks every checksum:
    /// shared model files (read again from disk), segments (all sections,
    /// every record decoded), the manifest (at open), and the logs of the
    /// memtables. Lists `.wal.torn` files.
    pub fn verify(&self) -> Result<VerifyReport> {
        let st = self.inner.current();
        let (fs, dir) = (&*self.inner.fs, &self.inner.dir);
        let mut report = VerifyReport::default();
        for m in st.models() {
            crate::model_file::ModelFile::open(&self.inner.fs, dir, m.number)?;
            report.models += 1;
        }
        for s in st.segments() {
            s.verify()?;
            report.segments += 1;
            report.records += s.records();
        }
        // Every family's memtables of a generation share its logs.
        let mut logs: Vec<u64> = st
            .default_tree()
            .memtables()
            .flat_map(|m| m.logs.iter().copied())
            .collect();
        logs.sort_unstable();
        for n in logs {
            for kind in [FileKind::Wal, FileKind::TornWal] {
                let path = self.inner.file(n, kind);
                let bytes = match fs.read(&path) {
                    Ok(b) => b,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(Error::io(&path, e)),
                };
                let r = wal::replay_bytes(&path, &bytes, 0, &mut |_, _| {})?;
                report.wals += 1;
                report.wal_records += r.records;
            }
        }
        for name in fs.list(dir).map_err(|e| Error::io(dir, e))? {
            if matches!(filename::parse(&name), Some((_, FileKind::TornWal))) {
                report.torn_logs.push(dir.join(name));
            }
        }
        report.torn_logs.sort();
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
        for h in std::mem::take(&mut *lock(&self.background)) {
            // A thread catches a job's panic itself; a join error would be
            // a panic outside a job, already reflected in no more progress.
            let _ = h.join();
        }
        match lock(&self.inner.wal).as_mut() {
            Some(w) => w.sync(),
            None => Ok(()),
        }
    }
}

impl Drop for DB {
    fn drop(&mut self) {
        // Dropping cannot report; call `close` to see a failed final sync.
        let _ = self.shutdown();
    }
}
