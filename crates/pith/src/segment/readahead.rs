//! Read-ahead for a reader of a segment's values in key order: a cursor,
//! or a merge reading its inputs.
//!
//! Segment files are mapped with random-access advice, so the kernel reads
//! no page ahead of a fault: right for point reads (a neighbour read with
//! a record would take page cache from records that are asked for), but a
//! scan of records not in the page cache then waits for one read per page,
//! one after the other. A 100-record scan of debian-packages (about 20 KB
//! of stored records) waited for five.
//!
//! As RocksDB's iterators do for blocks, a reader asks for read-ahead once
//! its records in a row have crossed a page ([`TRIGGER`] bytes: a seek and
//! a few reads ask for nothing), a window of [`FIRST_WINDOW`] bytes from
//! the start of the record (of its checksum group) on, then, each time it
//! comes within a quarter of the last window of the end of what it asked
//! for, the next window, twice as large, up to [`MAX_WINDOW`]: the pages
//! are on their way before they are read, and a scan that stops has asked
//! for at most about twice what it read beyond the first page (a 20 KB
//! scan: 24 KiB). A record larger than the window gets the window past
//! its own end. A read that is not the next record (a seek elsewhere, a
//! step back) starts over; records found in the value cache count as read
//! ([`ReadAhead::note`]) and ask for nothing. The advice is
//! `madvise(MADV_WILLNEED)`, which starts reading the pages without
//! waiting for them (pages already cached cost a lookup). A merge reads
//! each input this way too (its records are copied or decoded in key
//! order), so merging segments whose pages were evicted reads them in
//! windows, not a page per fault.
//!
//! Invariant: `until` is the end of what was last asked for (0: nothing),
//! and a range returned by [`ReadAhead::before`] starts at or after the
//! record read and at or after the previous range's end, and ends past
//! the record.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bytes of records read in a row before any read-ahead: a page.
pub(crate) const TRIGGER: u64 = 4 << 10;
/// Bytes asked for first.
pub(crate) const FIRST_WINDOW: u64 = 8 << 10;
/// The most bytes one request asks for: what Linux reads for one
/// `MADV_WILLNEED` at most on a disk with the default read-ahead
/// (128 KiB), so no request is cut short.
pub(crate) const MAX_WINDOW: u64 = 128 << 10;
/// Bytes a record may start past the end of the last one read and still
/// be the next one in a row (records between them not visible to the
/// reader's snapshot, or deleted).
const GAP: u64 = 4 << 10;

/// One reader's read-ahead state. Atomics for interior mutability (a
/// cursor reads values through `&self`, a merge source is shared by
/// reference); relaxed, as the state is a hint: readers that raced on it
/// would only ask for other pages.
#[derive(Debug, Default)]
pub(crate) struct ReadAhead {
    /// Start of the current row of records read (file offset).
    row_start: AtomicU64,
    /// End of the last record read (file offset), 0 before the first.
    last_end: AtomicU64,
    /// End of the range asked for last; 0 for none.
    until: AtomicU64,
    /// Size of the range asked for last.
    window: AtomicU64,
}

impl ReadAhead {
    /// Before a read of the stored bytes at `span` (file offsets): the
    /// range to ask the kernel for, if any.
    pub(crate) fn before(&self, span: Range<u64>) -> Option<Range<u64>> {
        if !self.note(span.clone()) {
            return None;
        }
        if span.end - self.row_start.load(Relaxed) < TRIGGER {
            return None;
        }
        let (until, last_window) = (self.until.load(Relaxed), self.window.load(Relaxed));
        if until > 0 && span.end + last_window / 4 <= until {
            return None;
        }
        let window = if until == 0 {
            FIRST_WINDOW
        } else {
            (last_window * 2).clamp(FIRST_WINDOW, MAX_WINDOW)
        };
        let from = span.start.max(until);
        // A record the window would not cover gets the window past its end.
        let to = if from + window > span.end {
            from + window
        } else {
            span.end + window
        };
        self.until.store(to, Relaxed);
        self.window.store(window, Relaxed);
        Some(from..to)
    }

    /// Counts the record at `span` as read (a value cache hit, or through
    /// [`ReadAhead::before`]); returns whether it follows the one before
    /// in a row (the same record again neither follows nor breaks it).
    pub(crate) fn note(&self, span: Range<u64>) -> bool {
        let last = self.last_end.swap(span.end, Relaxed);
        if last == span.end && last > 0 {
            // The same record again (a merge that could not copy it
            // decodes it): no step.
            return false;
        }
        let follows = last > 0 && span.start >= last && span.start - last <= GAP;
        if !follows {
            self.row_start.store(span.start, Relaxed);
            self.until.store(0, Relaxed);
            self.window.store(0, Relaxed);
        }
        follows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of `len` bytes one after another from `at`.
    fn row(at: u64, len: u64, n: u64) -> impl Iterator<Item = Range<u64>> {
        (0..n).map(move |i| at + i * len..at + (i + 1) * len)
    }

    #[test]
    fn a_row_asks_ahead_after_a_page_in_growing_windows() {
        let ra = ReadAhead::default();
        let mut asked: Vec<Range<u64>> = Vec::new();
        for span in row(1000, 200, 3000) {
            let got = ra.before(span.clone());
            if span.end - 1000 < TRIGGER {
                assert_eq!(got, None, "{span:?}: nothing before a page is read");
            }
            if let Some(r) = got {
                assert!(
                    r.start >= span.start,
                    "{r:?} starts before the record {span:?}"
                );
                assert!(r.end > span.end, "{r:?} ends inside the record {span:?}");
                if let Some(prev) = asked.last() {
                    assert_eq!(r.start, prev.end, "requests follow each other");
                }
                asked.push(r);
            }
            if let Some(last) = asked.last() {
                assert!(span.end <= last.end, "{span:?} past {last:?}");
            }
        }
        let sizes: Vec<u64> = asked.iter().map(|r| r.end - r.start).collect();
        assert_eq!(
            &sizes[..5],
            &[8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10]
        );
        assert!(sizes[5..].iter().all(|&s| s == MAX_WINDOW));
        assert!(asked.len() <= 10, "{} requests", asked.len());
    }

    #[test]
    fn a_short_scan_asks_for_little_more_than_it_reads() {
        let ra = ReadAhead::default();
        let mut end = 0;
        for span in row(0, 200, 100) {
            if let Some(r) = ra.before(span) {
                end = r.end;
            }
        }
        // 20,000 bytes read; asked up to at most 24 KiB past the first
        // page.
        assert!(end <= TRIGGER + (24 << 10), "asked up to {end}");
    }

    #[test]
    fn a_record_larger_than_the_window_is_asked_past_its_end() {
        let ra = ReadAhead::default();
        assert_eq!(ra.before(0..100), None);
        let r = ra.before(100..100_000).expect("a request");
        assert_eq!(r, 100..100_000 + FIRST_WINDOW);
    }

    #[test]
    fn cache_hits_keep_the_row_and_a_jump_or_a_step_back_starts_over() {
        let ra = ReadAhead::default();
        assert!(!ra.note(0..3000));
        assert!(ra.note(3000..6000), "a hit continues the row");
        assert_eq!(ra.before(6000..6100), Some(6000..6000 + FIRST_WINDOW));
        // Elsewhere: nothing, and the row starts again.
        assert_eq!(ra.before(1_000_000..1_000_100), None);
        assert_eq!(
            ra.before(1_000_100..1_000_200),
            None,
            "under a page in a row"
        );
        // The same record twice is no step either way.
        assert!(!ra.note(1_000_100..1_000_200));
        assert!(ra.note(1_000_200..1_005_000));
        // Backwards.
        assert!(!ra.note(500..600));
        // A gap of skipped records still follows.
        assert!(ra.note(600 + GAP..700 + GAP));
    }
}
