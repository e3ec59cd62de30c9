//! Iterators: a merge of per-source cursors (memtables and segments) that
//! shows, for each key, the newest version visible at one snapshot, and
//! hides deleted keys, and keys past their deadline at the time the
//! iterator was made (`clock.rs`).
//!
//! Each source cursor already resolves versions within its source and
//! skips keys it has no visible version of; the merge picks, among sources
//! on the same key, the version with the highest tag (sequence number).
//! Moving forward, every source sits at or after the current key; moving
//! backward, at or before it; changing direction re-seeks every source, as
//! LevelDB's merging iterator does. The merge's core (`land`) serves the
//! regex search too (`search.rs`), over forward-only sources.
//!
//! A [`Scan`] is a range of a [`DbIterator`] as a double-ended Rust
//! iterator: its back end is a second `DbIterator` over the same sources,
//! and each end stops at the last key the other returned.
//!
//! An iterator holds `Arc`s of the memtables and segments it was created
//! on, so it sees one consistent snapshot however long it lives, and the
//! files it reads are not deleted under it.

use std::cell::{Cell, OnceCell};
use std::ops::Bound;
use std::sync::Arc;

use crate::dbformat::{expired, tag_kind, Kind, NO_DEADLINE};
use crate::error::{Error, Result};
use crate::memtable::{MemEntry, Memtable};

/// One source of a merge, positioned on a key: what a merge reads of it,
/// and a step forward. Both [`VersionCursor`]s and the search's
/// match cursors (`search.rs`) are sources.
pub(crate) trait Source: Send {
    /// Steps to the next key (with a visible version).
    fn next(&mut self);
    /// Current key, `None` when exhausted.
    fn key(&self) -> Option<&[u8]>;
    /// Tag of the current key's visible version.
    fn tag(&self) -> u64;
    /// Deadline of the current key's visible version (`NO_DEADLINE`:
    /// none).
    fn deadline(&self) -> u64;
    /// Value of the current key's visible version.
    fn value(&self, out: &mut Vec<u8>) -> Result<()>;
}

/// A cursor over one source's keys at a fixed snapshot, both ways.
pub(crate) trait VersionCursor: Source {
    /// An unpositioned cursor over the same source at the same snapshot.
    fn fresh(&self) -> Box<dyn VersionCursor>;
    /// First key `>= key` with a visible version.
    fn seek(&mut self, key: &[u8]);
    /// First key with a visible version.
    fn seek_to_first(&mut self);
    /// Last key `< key` (any key when `None`) with a visible version.
    fn seek_before(&mut self, key: Option<&[u8]>);
    /// Steps to the previous key with a visible version.
    fn prev(&mut self);
}

/// Cursor over a memtable. It stands on the memtable's own node: a step
/// forward follows the list's links from it (no search), and nothing is
/// copied until a value is asked for.
pub(crate) struct MemCursor {
    /// The current version, borrowed from `mem`'s list with its lifetime
    /// erased: `mem`, held beside it, keeps the list and its nodes alive.
    cur: Option<MemEntry<'static>>,
    mem: Arc<Memtable>,
    snap: u64,
}

impl MemCursor {
    pub(crate) fn new(mem: Arc<Memtable>, snap: u64) -> Self {
        MemCursor {
            cur: None,
            mem,
            snap,
        }
    }
}

/// `e`, a version of a cursor's memtable, to stand on.
///
/// # Safety
/// `e` must borrow the memtable the cursor holds in `mem`: the cursor then
/// keeps it alive for as long as `cur` can be read (they live and drop
/// together, and `cur` is never handed out past `&self`).
unsafe fn detached(e: Option<MemEntry<'_>>) -> Option<MemEntry<'static>> {
    // SAFETY: per the contract.
    e.map(|e| unsafe { e.detach() })
}

impl VersionCursor for MemCursor {
    fn fresh(&self) -> Box<dyn VersionCursor> {
        Box::new(MemCursor::new(self.mem.clone(), self.snap))
    }

    fn seek(&mut self, key: &[u8]) {
        // SAFETY: found in `self.mem`.
        self.cur = unsafe { detached(self.mem.next_visible(key, true, self.snap)) };
    }

    fn seek_to_first(&mut self) {
        // SAFETY: found in `self.mem`.
        self.cur = unsafe { detached(self.mem.next_visible(&[], true, self.snap)) };
    }

    fn seek_before(&mut self, key: Option<&[u8]>) {
        // SAFETY: found in `self.mem`.
        self.cur = unsafe { detached(self.mem.prev_visible(key, self.snap)) };
    }

    fn prev(&mut self) {
        if let Some(c) = self.cur.take() {
            // SAFETY: found in `self.mem`.
            self.cur = unsafe { detached(self.mem.prev_visible(Some(c.key()), self.snap)) };
        }
    }
}

impl Source for MemCursor {
    fn next(&mut self) {
        if let Some(c) = self.cur.take() {
            // SAFETY: reached by links from `c`, a version of `self.mem`.
            self.cur = unsafe { detached(Memtable::visible_after(c, self.snap)) };
        }
    }

    fn key(&self) -> Option<&[u8]> {
        self.cur.as_ref().map(|c| c.key())
    }

    fn tag(&self) -> u64 {
        self.cur.as_ref().map_or(0, |c| c.tag())
    }

    fn deadline(&self) -> u64 {
        self.cur.as_ref().map_or(NO_DEADLINE, |c| c.deadline())
    }

    fn value(&self, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        if let Some(c) = &self.cur {
            out.extend_from_slice(c.value());
        }
        Ok(())
    }
}

/// Which way a merge moves.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Forward,
    Backward,
}

/// Among `sources`, the one on the nearest key in `dir`; among sources on
/// that key, the one holding its newest version (the highest tag). `None`
/// when every source is exhausted.
fn nearest<S: Source + ?Sized>(sources: &[Box<S>], dir: Direction) -> Option<usize> {
    let mut best: Option<(usize, &[u8], u64)> = None;
    for (i, s) in sources.iter().enumerate() {
        let Some(k) = s.key() else { continue };
        let better = best.is_none_or(|(_, bk, bt)| match (dir, k.cmp(bk)) {
            (Direction::Forward, std::cmp::Ordering::Less) => true,
            (Direction::Backward, std::cmp::Ordering::Greater) => true,
            (_, std::cmp::Ordering::Equal) => s.tag() > bt,
            _ => false,
        });
        if better {
            best = Some((i, k, s.tag()));
        }
    }
    best.map(|(i, _, _)| i)
}

/// Calls `step` on every source sitting on `key`.
fn step_all_at<S: Source + ?Sized>(sources: &mut [Box<S>], key: &[u8], step: impl Fn(&mut S)) {
    for s in sources {
        if s.key() == Some(key) {
            step(&mut **s);
        }
    }
}

/// Lands a merge of `sources` on the nearest key in `dir` whose newest
/// visible version is a put not expired at `now`, stepping past deleted
/// and expired keys with `step` (one key in `dir`): copies the key into
/// `key` and returns the source holding that version, or `None` when no
/// such key is left.
pub(crate) fn land<S: Source + ?Sized>(
    sources: &mut [Box<S>],
    dir: Direction,
    now: u64,
    key: &mut Vec<u8>,
    step: impl Fn(&mut S),
) -> Option<usize> {
    loop {
        let b = nearest(sources, dir)?;
        key.clear();
        key.extend_from_slice(sources[b].key().unwrap_or_default());
        if tag_kind(sources[b].tag()) == Kind::Put && !expired(sources[b].deadline(), now) {
            return Some(b);
        }
        step_all_at(sources, key, &step);
    }
}

/// Steps every source on `key` forward: past the key a merge returned.
pub(crate) fn step_past<S: Source + ?Sized>(sources: &mut [Box<S>], key: &[u8]) {
    step_all_at(sources, key, S::next);
}

/// A two-way iterator over the database at one snapshot.
///
/// Positioning calls (`seek`, `seek_to_first`, `seek_to_last`, `next`,
/// `prev`) never fail and decode no value: a value is decoded the first
/// time [`DbIterator::value`] asks for it at a position, so walking keys
/// costs no decoding. A value that cannot be decoded (corruption) reads as
/// `None` and [`DbIterator::status`] returns the error.
///
/// Thread safety: `Send`, not `Sync` (the decoded value is cached inside).
pub struct DbIterator {
    sources: Vec<Box<dyn VersionCursor>>,
    dir: Direction,
    valid: bool,
    key: Vec<u8>,
    /// The source holding the current key's visible version.
    current: usize,
    /// The current value, decoded on first request.
    value: OnceCell<Result<Vec<u8>>>,
    /// A buffer to decode into, kept from the previous position.
    spare: Cell<Vec<u8>>,
    error: Option<Error>,
    /// The time expiry is judged at: when the iterator was made.
    now: u64,
}

impl DbIterator {
    /// A merge of `sources` that hides the keys expired at `now`.
    pub(crate) fn new(sources: Vec<Box<dyn VersionCursor>>, now: u64) -> Self {
        DbIterator {
            now,
            sources,
            dir: Direction::Forward,
            valid: false,
            key: Vec::new(),
            current: 0,
            value: OnceCell::new(),
            spare: Cell::new(Vec::new()),
            error: None,
        }
    }

    /// An unpositioned iterator over the same sources at the same snapshot.
    pub(crate) fn unpositioned(&self) -> DbIterator {
        DbIterator::new(self.sources.iter().map(|s| s.fresh()).collect(), self.now)
    }

    /// True when positioned on a key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (`None` when not valid).
    pub fn key(&self) -> Option<&[u8]> {
        self.valid.then_some(self.key.as_slice())
    }

    /// When the current key expires, in milliseconds since the Unix epoch
    /// (`None` when it never does, or when not valid). The iterator judges
    /// expiry at the time it was made: a key that expires while it lives
    /// stays visible to it.
    pub fn deadline(&self) -> Option<u64> {
        let d = self.sources.get(self.current)?.deadline();
        (self.valid && d != NO_DEADLINE).then_some(d)
    }

    /// The current value (`None` when not valid, or when it cannot be
    /// decoded: then [`DbIterator::status`] says why). Decoded on the first
    /// call at each position.
    pub fn value(&self) -> Option<&[u8]> {
        if !self.valid {
            return None;
        }
        let decoded = self.value.get_or_init(|| {
            let mut buf = self.spare.take();
            let source = self.sources.get(self.current);
            match source.map(|s| s.value(&mut buf)) {
                Some(Ok(())) => Ok(buf),
                Some(Err(e)) => Err(e),
                None => Err(Error::Internal("iterator source out of range".into())),
            }
        });
        decoded.as_ref().ok().map(Vec::as_slice)
    }

    /// The error that stopped the iterator, or that the value at the
    /// current position could not be decoded with, if any; `?` passes it
    /// on. The error is owned (a clone: [`Error`] is cheap to clone, its
    /// I/O causes shared), and the iterator keeps it: asking again returns
    /// it again.
    pub fn status(&self) -> Result<()> {
        self.error().cloned().map_or(Ok(()), Err)
    }

    fn error(&self) -> Option<&Error> {
        let value_error = self.value.get().and_then(|r| r.as_ref().err());
        self.error.as_ref().or(value_error)
    }

    /// Forgets the current value, keeping its buffer for the next one.
    fn reset_value(&mut self) {
        if let Some(Ok(buf)) = self.value.take() {
            self.spare.set(buf);
        }
    }

    /// Moves to the first key `>= key`.
    pub fn seek(&mut self, key: &[u8]) {
        for s in &mut self.sources {
            s.seek(key);
        }
        self.dir = Direction::Forward;
        self.find(Direction::Forward);
    }

    /// Moves to the first key.
    pub fn seek_to_first(&mut self) {
        for s in &mut self.sources {
            s.seek_to_first();
        }
        self.dir = Direction::Forward;
        self.find(Direction::Forward);
    }

    /// Moves to the last key.
    pub fn seek_to_last(&mut self) {
        for s in &mut self.sources {
            s.seek_before(None);
        }
        self.dir = Direction::Backward;
        self.find(Direction::Backward);
    }

    /// Moves to the last key `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) {
        self.seek_back(key, true);
    }

    /// Moves to the last key `< key`, or `<= key` when `inclusive`.
    fn seek_back(&mut self, key: &[u8], inclusive: bool) {
        self.seek(key);
        if !self.valid() && self.error.is_none() {
            self.seek_to_last();
        } else if self.valid && !(inclusive && self.key.as_slice() == key) {
            self.prev();
        }
    }

    /// Steps to the next key. Does nothing when not valid.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.dir == Direction::Backward {
            let key = std::mem::take(&mut self.key);
            for s in &mut self.sources {
                s.seek(&key);
                if s.key() == Some(key.as_slice()) {
                    s.next();
                }
            }
            self.dir = Direction::Forward;
        } else {
            self.advance_at_current(Direction::Forward);
        }
        self.find(Direction::Forward);
    }

    /// Steps to the previous key. Does nothing when not valid.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.dir == Direction::Forward {
            let key = std::mem::take(&mut self.key);
            for s in &mut self.sources {
                s.seek_before(Some(&key));
            }
            self.dir = Direction::Backward;
        } else {
            self.advance_at_current(Direction::Backward);
        }
        self.find(Direction::Backward);
    }

    /// Moves every source sitting on the current key one step.
    fn advance_at_current(&mut self, dir: Direction) {
        step_all_at(&mut self.sources, &self.key, cursor_step(dir));
    }

    /// Lands on the nearest key in `dir` whose newest visible version is a
    /// put.
    fn find(&mut self, dir: Direction) {
        self.valid = false;
        if self.error().is_some() {
            return;
        }
        self.reset_value();
        let now = self.now;
        if let Some(b) = land(&mut self.sources, dir, now, &mut self.key, cursor_step(dir)) {
            self.current = b;
            self.valid = true;
        }
    }
}

/// A cursor's step in `dir`.
fn cursor_step(dir: Direction) -> fn(&mut (dyn VersionCursor + 'static)) {
    match dir {
        Direction::Forward => |s| s.next(),
        Direction::Backward => |s| s.prev(),
    }
}

/// A scan over a key range at one snapshot, as a Rust iterator of
/// `(key, value)` pairs in key order; from [`crate::DB::range`],
/// [`crate::DB::prefix`] and their `_at` variants.
///
/// Double-ended: [`DoubleEndedIterator::next_back`] (and so `.rev()`)
/// walks down from the end of the range, and may be mixed with `next`; the
/// two ends stop where they meet, so no pair is returned twice. The back
/// end is a second merge over the same sources, made on the first
/// `next_back`, so a forward-only scan costs no more than before.
///
/// The scan holds the memtables and segments it was made on: later writes,
/// flushes and merges do not change what it returns. An error (a value
/// that cannot be decoded) is returned once, and ends the scan.
///
/// Thread safety: `Send`, not `Sync`.
pub struct Scan {
    front: DbIterator,
    /// The back end, from the first `next_back` on.
    back: Option<DbIterator>,
    /// The range's bounds. Once an end has returned a key, the other end
    /// stops at that key instead (pairs not yet returned lie strictly
    /// between the ends' positions).
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    /// The front end has returned the key it is on.
    front_started: bool,
    done: bool,
}

/// The ends of a [`Scan`].
#[derive(Clone, Copy)]
enum End {
    Front,
    Back,
}

impl Scan {
    pub(crate) fn new(mut it: DbIterator, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Self {
        match &start {
            Bound::Unbounded => it.seek_to_first(),
            Bound::Included(k) => it.seek(k),
            Bound::Excluded(k) => {
                it.seek(k);
                if it.key() == Some(k.as_slice()) {
                    it.next();
                }
            }
        }
        Scan {
            front: it,
            back: None,
            start,
            end,
            front_started: false,
            done: false,
        }
    }

    /// The keys only: nothing is decoded but the keys.
    pub fn keys(self) -> ScanKeys {
        ScanKeys { scan: self }
    }

    /// Moves `end` to its next key, without its value.
    fn step(&mut self, end: End) -> Option<Result<Vec<u8>>> {
        if self.done {
            return None;
        }
        match (end, &mut self.back) {
            (End::Front, _) => {
                if self.front_started {
                    self.front.next();
                }
                self.front_started = true;
            }
            (End::Back, Some(back)) => back.prev(),
            (End::Back, None) => {
                let mut back = self.front.unpositioned();
                match &self.end {
                    Bound::Unbounded => back.seek_to_last(),
                    Bound::Included(k) => back.seek_back(k, true),
                    Bound::Excluded(k) => back.seek_back(k, false),
                }
                self.back = Some(back);
            }
        }
        let it = self.iterator(end)?;
        let next = match it.key() {
            None => it.status().err().map(Err),
            Some(key) if self.before_the_other_end(end, key) => return Some(Ok(key.to_vec())),
            Some(_) => None,
        };
        self.done = true;
        next
    }

    fn iterator(&self, end: End) -> Option<&DbIterator> {
        match end {
            End::Front => Some(&self.front),
            End::Back => self.back.as_ref(),
        }
    }

    /// True when `key`, reached by `end`, is short of where the other end
    /// stops: the other end's last key once it has returned one, else the
    /// range's bound on that side.
    fn before_the_other_end(&self, end: End, key: &[u8]) -> bool {
        match end {
            End::Front => match (&self.back, &self.end) {
                (Some(back), _) => back.key().is_some_and(|b| key < b),
                (None, Bound::Unbounded) => true,
                (None, Bound::Included(e)) => key <= e.as_slice(),
                (None, Bound::Excluded(e)) => key < e.as_slice(),
            },
            End::Back => match (self.front_started, &self.start) {
                (true, _) => self.front.key().is_some_and(|f| key > f),
                (false, Bound::Unbounded) => true,
                (false, Bound::Included(s)) => key >= s.as_slice(),
                (false, Bound::Excluded(s)) => key > s.as_slice(),
            },
        }
    }

    /// Moves `end` to its next pair.
    fn pair(&mut self, end: End) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        let key = match self.step(end)? {
            Ok(k) => k,
            Err(e) => return Some(Err(e)),
        };
        let it = self.iterator(end)?;
        match it.value() {
            Some(v) => Some(Ok((key, v.to_vec()))),
            None => {
                let status = it.status();
                self.done = true;
                status.err().map(Err)
            }
        }
    }
}

impl Iterator for Scan {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.pair(End::Front)
    }
}

impl DoubleEndedIterator for Scan {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.pair(End::Back)
    }
}

impl std::iter::FusedIterator for Scan {}

/// The keys of a [`Scan`], in order, without their values (no value is
/// decoded); from [`Scan::keys`]. Double-ended, like the scan.
pub struct ScanKeys {
    scan: Scan,
}

impl Iterator for ScanKeys {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.scan.step(End::Front)
    }
}

impl DoubleEndedIterator for ScanKeys {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.scan.step(End::Back)
    }
}

impl std::iter::FusedIterator for ScanKeys {}
