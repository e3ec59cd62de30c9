//! A two-way cursor over one segment's keys at a snapshot, skipping keys
//! whose every version in this segment is newer than the snapshot.
//!
//! The cursor owns an `Arc` of its segment and a trie cursor that borrows
//! it; see the SAFETY note on [`SegmentCursor::new`].

use std::sync::Arc;

use pith_trie::Cursor;

use crate::error::Result;
use crate::iter::VersionCursor;
use crate::segment::Segment;

/// Cursor over a segment at snapshot `snap`.
pub(crate) struct SegmentCursor {
    // Borrows `*segment`; declared first so it drops first.
    cursor: Cursor<'static, 'static>,
    /// Record visible at the snapshot for the current key.
    record: Option<u64>,
    snap: u64,
    segment: Arc<Segment>,
}

impl SegmentCursor {
    pub(crate) fn new(segment: Arc<Segment>, snap: u64) -> Self {
        // SAFETY: the trie lives inside the `Segment` on the heap behind
        // `Arc`, which this struct keeps alive for as long as the cursor
        // exists; the segment is immutable and never moves, and `cursor` is
        // declared before `segment` so it is dropped first.
        let trie: &'static pith_trie::Trie<'static> =
            unsafe { &*std::ptr::from_ref(segment.trie()).cast::<pith_trie::Trie<'static>>() };
        SegmentCursor {
            cursor: trie.cursor(),
            record: None,
            snap,
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

    fn next(&mut self) {
        if self.cursor.next() {
            self.settle(true);
        } else {
            self.record = None;
        }
    }

    fn prev(&mut self) {
        if self.cursor.prev() {
            self.settle(false);
        } else {
            self.record = None;
        }
    }

    fn key(&self) -> Option<&[u8]> {
        self.record.and(self.cursor.key())
    }

    fn tag(&self) -> u64 {
        self.record.map_or(0, |r| self.segment.tag(r))
    }

    fn value(&self, out: &mut Vec<u8>) -> Result<()> {
        match self.record {
            Some(r) => self.segment.value(r, out),
            None => {
                out.clear();
                Ok(())
            }
        }
    }
}
