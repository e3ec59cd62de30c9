//! Iterators: a merge of per-source cursors (memtables and segments) that
//! shows, for each key, the newest version visible at one snapshot, and
//! hides deleted keys.
//!
//! Each source cursor already resolves versions within its source and
//! skips keys it has no visible version of; the merge picks, among sources
//! on the same key, the version with the highest tag (sequence number).
//! Moving forward, every source sits at or after the current key; moving
//! backward, at or before it; changing direction re-seeks every source, as
//! LevelDB's merging iterator does.
//!
//! An iterator holds `Arc`s of the memtables and segments it was created
//! on, so it sees one consistent snapshot however long it lives, and the
//! files it reads are not deleted under it.

use std::cell::{Cell, OnceCell};
use std::ops::Bound;
use std::sync::Arc;

use crate::dbformat::tag_kind;
use crate::dbformat::Kind;
use crate::error::{Error, Result};
use crate::memtable::{Found, Memtable};

/// A cursor over one source's keys at a fixed snapshot.
pub(crate) trait VersionCursor: Send {
    /// First key `>= key` with a visible version.
    fn seek(&mut self, key: &[u8]);
    /// First key with a visible version.
    fn seek_to_first(&mut self);
    /// Last key `< key` (any key when `None`) with a visible version.
    fn seek_before(&mut self, key: Option<&[u8]>);
    fn next(&mut self);
    fn prev(&mut self);
    /// Current key, `None` when exhausted.
    fn key(&self) -> Option<&[u8]>;
    /// Tag of the current key's visible version.
    fn tag(&self) -> u64;
    /// Value of the current key's visible version.
    fn value(&self, out: &mut Vec<u8>) -> Result<()>;
}

/// Cursor over a memtable.
pub(crate) struct MemCursor {
    mem: Arc<Memtable>,
    snap: u64,
    cur: Option<Found>,
}

impl MemCursor {
    pub(crate) fn new(mem: Arc<Memtable>, snap: u64) -> Self {
        MemCursor {
            mem,
            snap,
            cur: None,
        }
    }
}

impl VersionCursor for MemCursor {
    fn seek(&mut self, key: &[u8]) {
        self.cur = self.mem.next_visible(key, true, self.snap);
    }

    fn seek_to_first(&mut self) {
        self.cur = self.mem.next_visible(&[], true, self.snap);
    }

    fn seek_before(&mut self, key: Option<&[u8]>) {
        self.cur = self.mem.prev_visible(key, self.snap);
    }

    fn next(&mut self) {
        if let Some(c) = self.cur.take() {
            self.cur = self.mem.next_visible(&c.key, false, self.snap);
        }
    }

    fn prev(&mut self) {
        if let Some(c) = self.cur.take() {
            self.cur = self.mem.prev_visible(Some(&c.key), self.snap);
        }
    }

    fn key(&self) -> Option<&[u8]> {
        self.cur.as_ref().map(|c| c.key.as_slice())
    }

    fn tag(&self) -> u64 {
        self.cur.as_ref().map_or(0, |c| c.tag)
    }

    fn value(&self, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        if let Some(c) = &self.cur {
            out.extend_from_slice(&c.value);
        }
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
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
}

impl DbIterator {
    pub(crate) fn new(sources: Vec<Box<dyn VersionCursor>>) -> Self {
        DbIterator {
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

    /// True when positioned on a key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key (`None` when not valid).
    pub fn key(&self) -> Option<&[u8]> {
        self.valid.then_some(self.key.as_slice())
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

    /// The error that stopped the iterator, or that a value could not be
    /// decoded with, if any.
    pub fn status(&self) -> Result<(), &Error> {
        let value_error = self.value.get().and_then(|r| r.as_ref().err());
        self.error.as_ref().or(value_error).map_or(Ok(()), Err)
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
        self.seek(key);
        if !self.valid() && self.error.is_none() {
            self.seek_to_last();
        } else if self.valid && self.key.as_slice() != key {
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
        let key = std::mem::take(&mut self.key);
        for s in &mut self.sources {
            if s.key() == Some(key.as_slice()) {
                match dir {
                    Direction::Forward => s.next(),
                    Direction::Backward => s.prev(),
                }
            }
        }
    }

    /// Lands on the nearest key in `dir` whose newest visible version is a
    /// put.
    fn find(&mut self, dir: Direction) {
        self.valid = false;
        if self.status().is_err() {
            return;
        }
        self.reset_value();
        loop {
            let mut best: Option<usize> = None;
            for (i, s) in self.sources.iter().enumerate() {
                let Some(k) = s.key() else { continue };
                best = match best {
                    None => Some(i),
                    Some(b) => {
                        let bk = self.sources[b].key().unwrap_or_default();
                        let better = match (dir, k.cmp(bk)) {
                            (Direction::Forward, std::cmp::Ordering::Less) => true,
                            (Direction::Backward, std::cmp::Ordering::Greater) => true,
                            (_, std::cmp::Ordering::Equal) => s.tag() > self.sources[b].tag(),
                            _ => false,
                        };
                        Some(if better { i } else { b })
                    }
                };
            }
            let Some(b) = best else { return };
            self.key.clear();
            self.key
                .extend_from_slice(self.sources[b].key().unwrap_or_default());
            if tag_kind(self.sources[b].tag()) == Kind::Put {
                self.current = b;
                self.valid = true;
                return;
            }
            self.advance_at_current(dir);
        }
    }
}

/// A forward scan from a start position to an end bound, as a Rust
/// iterator of `(key, value)` pairs.
pub struct Scan {
    it: DbIterator,
    end: Bound<Vec<u8>>,
    started: bool,
    done: bool,
}

impl Scan {
    pub(crate) fn new(mut it: DbIterator, start: Bound<&[u8]>, end: Bound<Vec<u8>>) -> Self {
        match start {
            Bound::Unbounded => it.seek_to_first(),
            Bound::Included(k) => it.seek(k),
            Bound::Excluded(k) => {
                it.seek(k);
                if it.key() == Some(k) {
                    it.next();
                }
            }
        }
        Scan {
            it,
            end,
            started: false,
            done: false,
        }
    }
}

impl Iterator for Scan {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let key = match self.next_key()? {
            Ok(k) => k,
            Err(e) => return Some(Err(e)),
        };
        match self.it.value() {
            Some(v) => Some(Ok((key, v.to_vec()))),
            None => {
                self.done = true;
                self.it.status().err().cloned().map(Err)
            }
        }
    }
}

impl Scan {
    /// The keys only: nothing is decoded but the keys.
    pub fn keys(self) -> ScanKeys {
        ScanKeys { scan: self }
    }

    /// The next key in range, without its value.
    fn next_key(&mut self) -> Option<Result<Vec<u8>>> {
        if self.done {
            return None;
        }
        if self.started {
            self.it.next();
        }
        self.started = true;
        if !self.it.valid() {
            self.done = true;
            return self.it.status().err().cloned().map(Err);
        }
        let key = self.it.key().unwrap_or_default();
        let in_range = match &self.end {
            Bound::Unbounded => true,
            Bound::Included(e) => key <= e.as_slice(),
            Bound::Excluded(e) => key < e.as_slice(),
        };
        if !in_range {
            self.done = true;
            return None;
        }
        Some(Ok(key.to_vec()))
    }
}

/// The keys of a [`Scan`], in order, without their values (no value is
/// decoded); from [`Scan::keys`].
pub struct ScanKeys {
    scan: Scan,
}

impl Iterator for ScanKeys {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.scan.next_key()
    }
}
