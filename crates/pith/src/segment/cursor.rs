//! Cursors over one segment's keys at a snapshot, skipping keys whose
//! every version in this segment is newer than the snapshot: a two-way
//! [`SegmentCursor`], and [`SegmentMatches`], the keys matching a regex
//! found by walking the segment's trie.
//!
//! Each owns an `Arc` of its segment and a trie walk that borrows it; see
//! [`static_trie`].

use std::sync::Arc;

use pith_trie::{Cursor, KeyRegex, RegexWalk, Trie};

use crate::dbformat::NO_DEADLINE;
use crate::error::Result;
use crate::iter::{Source, VersionCursor};
use crate::segment::readahead::ReadAhead;
use crate::segment::Segment;

/// `segment`'s trie, borrowed for `'static`.
///
/// # Safety
///
/// The caller keeps an `Arc` of `segment` for as long as the returned
/// reference, or anything borrowing it, lives: a struct holding both
/// declares the borrower before the `Arc`, so the borrower drops first.
/// Then the reference stays valid: the trie lives inside the `Segment` on
/// the heap behind the `Arc`, and the segment is immutable and never moves.
unsafe fn static_trie(segment: &Arc<Segment>) -> &'static Trie<'static> {
    // SAFETY: as the caller promises above.
    unsafe { &*std::ptr::from_ref(segment.trie()).cast::<Trie<'static>>() }
}

/// Cursor over a segment at snapshot `snap`.
pub(crate) struct SegmentCursor {
    // Borrows `*segment`; declared first so it drops first.
    cursor: Cursor<'static, 'static>,
    /// Record visible at the snapshot for the current key.
    record: Option<u64>,
    snap: u64,
    /// Asks for the records ahead while values are read in key order.
    ahead: ReadAhead,
    segment: Arc<Segment>,
}

impl SegmentCursor {
    pub(crate) fn new(segment: Arc<Segment>, snap: u64) -> Self {
        // SAFETY: this struct keeps `segment` alive for as long as the
        // cursor exists, and `cursor` is declared before `segment` so it is
        // dropped first.
        let trie = unsafe { static_trie(&segment) };
        SegmentCursor {
            cursor: trie.cursor(),
            record: None,
            snap,
            ahead: ReadAhead::default(),
            segment,
        }
    }

    /// Settles on the current trie key or moves on in the given direction
    /// until a key with a visible version.
    fn settle(&mut self, forward: bool) {
        loop {
            let Some(id) = self.cursor.id() else {
                self.record = None;
                return;
            };
            if let Some(r) = self.segment.visible(id, self.snap) {
                self.record = Some(r);
                return;
            }
            if forward {
                self.cursor.next();
            } else {
                self.cursor.prev();
            }
        }
    }
}

impl VersionCursor for SegmentCursor {
    fn fresh(&self) -> Box<dyn VersionCursor> {
        Box::new(SegmentCursor::new(self.segment.clone(), self.snap))
    }

    fn seek(&mut self, key: &[u8]) {
        self.cursor.seek(key);
        self.settle(true);
    }

    fn seek_to_first(&mut self) {
        self.cursor.seek_to_first();
        self.settle(true);
    }

    fn seek_before(&mut self, key: Option<&[u8]>) {
        match key {
            Some(k) if self.cursor.seek(k) => {
                self.cursor.prev();
            }
            _ => {
                self.cursor.seek_to_last();
            }
        }
        self.settle(false);
    }

    fn prev(&mut self) {
        if self.cursor.prev() {
            self.settle(false);
        } else {
            self.record = None;
        }
    }
}

impl Source for SegmentCursor {
    fn next(&mut self) {
        if self.cursor.next() {
            self.settle(true);
        } else {
            self.record = None;
        }
    }

    fn key(&self) -> Option<&[u8]> {
        self.record.and(self.cursor.key())
    }

    fn tag(&self) -> u64 {
        tag_of(&self.segment, self.record)
    }

    fn deadline(&self) -> u64 {
        self.record
            .map_or(NO_DEADLINE, |r| self.segment.deadline(r))
    }

    fn value(&self, out: &mut Vec<u8>) -> Result<()> {
        value_of(&self.segment, self.record, &self.ahead, out)
    }
}

/// The keys of a segment matching a regex, with versions visible at a
/// snapshot, in key order: a walk of the regex's DFA through the trie that
/// skips every subtree no key of which can match (see `pith-trie`'s
/// `regex.rs`). Forward only; positioned on the first match when made.
pub(crate) struct SegmentMatches {
    // Borrows `*segment`; declared first so it drops first.
    walk: RegexWalk<'static, 'static, Arc<KeyRegex>>,
    /// Record visible at the snapshot for the current match.
    record: Option<u64>,
    snap: u64,
    /// Asks for the records ahead while values are read in key order.
    ahead: ReadAhead,
    segment: Arc<Segment>,
}

impl SegmentMatches {
    /// The matches `>= from`, positioned on the first.
    pub(crate) fn new(segment: Arc<Segment>, re: Arc<KeyRegex>, snap: u64, from: &[u8]) -> Self {
        // SAFETY: this struct keeps `segment` alive for as long as the walk
        // exists, and `walk` is declared before `segment` so it is dropped
        // first.
        let trie = unsafe { static_trie(&segment) };
        let mut matches = SegmentMatches {
            walk: trie.regex_walk_from(re, from),
            record: None,
            snap,
            ahead: ReadAhead::default(),
            segment,
        };
        matches.next();
        matches
    }
}

impl Source for SegmentMatches {
    fn next(&mut self) {
        self.record = None;
        while let Some(id) = self.walk.next_match() {
            self.record = self.segment.visible(id, self.snap);
            if self.record.is_some() {
                return;
            }
        }
    }

    fn key(&self) -> Option<&[u8]> {
        self.record.map(|_| self.walk.key())
    }

    fn tag(&self) -> u64 {
        tag_of(&self.segment, self.record)
    }

    fn deadline(&self) -> u64 {
        self.record
            .map_or(NO_DEADLINE, |r| self.segment.deadline(r))
    }

    fn value(&self, out: &mut Vec<u8>) -> Result<()> {
        value_of(&self.segment, self.record, &self.ahead, out)
    }
}

/// The tag of a cursor's current `record` (0 when none).
fn tag_of(segment: &Segment, record: Option<u64>) -> u64 {
    record.map_or(0, |r| segment.tag(r))
}

/// Replaces `out` with the value of a cursor's current `record` (empty
/// when none).
fn value_of(
    segment: &Segment,
    record: Option<u64>,
    ahead: &ReadAhead,
    out: &mut Vec<u8>,
) -> Result<()> {
    match record {
        Some(r) => segment.value_in_row(r, out, ahead),
        None => {
            out.clear();
            Ok(())
        }
    }
}
