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
//! As RocksDB's iterators do for blocks, a cursor asks for read-ahead once
//! it reads two records in a row (a single seek-and-read asks for nothing),
//! a window of [`FIRST_WINDOW`] bytes from the record on, then, each time it
//! comes within half of the last window of the end of what it asked for,
//! the next window, twice as large, up to [`MAX_WINDOW`] (so the pages are
//! on their way before they are read; a scan that stops asked for at most
//! the bytes it read, twice over, plus a first window). A read that is not the
//! next record (a seek elsewhere, a step back) starts over. The advice is
//! one `madvise(MADV_WILLNEED)`, which starts reading the pages without
//! waiting for them; pages already cached cost a lookup. Values found in
//! the value cache ask for nothing. A merge reads each input this way too
//! (its records are copied or decoded in key order), so merging segments
//! whose pages were evicted reads them in windows, not a page per fault.
//!
//! Invariant: `until` is the end of what was last asked for (0: nothing),
//! and a range returned by [`ReadAhead::before`] starts at or after the
//! record read and at or after the previous range's end.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bytes asked for when a cursor starts reading records in a row.
pub(crate) const FIRST_WINDOW: u64 = 16 << 10;
/// The most bytes one request asks for.
pub(crate) const MAX_WINDOW: u64 = 256 << 10;
/// Bytes a record may start past the end of the last one read and still
/// be the next one in a row (records between them not visible to the
/// cursor's snapshot, or deleted).
const GAP: u64 = 4 << 10;

/// One reader's read-ahead state. Atomics for interior mutability (a
/// cursor reads values through `&self`, a merge source is shared by
/// reference); relaxed, as the state is a hint: readers that raced on it
/// would only ask for other pages.
#[derive(Debug, Default)]
pub(crate) struct ReadAhead {
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
        let last = self.last_end.swap(span.end, Relaxed);
        if last == span.end && last > 0 {
            // The same record again (a merge that could not copy it
            // decodes it): no step.
            return None;
        }
        let follows = last > 0 && span.start >= last && span.start - last <= GAP;
        if !follows {
            self.until.store(0, Relaxed);
            self.window.store(0, Relaxed);
            return None;
        }
        let (until, last_window) = (self.until.load(Relaxed), self.window.load(Relaxed));
        if until > 0 && span.end + last_window / 2 <= until {
            return None;
        }
        let window = if until == 0 {
            FIRST_WINDOW
        } else {
            (last_window * 2).clamp(FIRST_WINDOW, MAX_WINDOW)
        };
        let from = span.start.max(until);
        let to = from + window;
        self.until.store(to, Relaxed);
        self.window.store(window, Relaxed);
        Some(from..to)
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
    fn a_single_read_asks_for_nothing_and_a_row_asks_ahead_in_growing_windows() {
        let ra = ReadAhead::default();
        let mut asked: Vec<Range<u64>> = Vec::new();
        for span in row(1000, 200, 3000) {
            let first = asked.is_empty() && ra.last_end.load(Relaxed) == 0;
            let got = ra.before(span.clone());
            if first {
                assert_eq!(got, None, "the first read of a row asks for nothing");
            }
            if let Some(r) = got {
                assert!(
                    r.start >= span.start,
                    "{r:?} starts before the record {span:?}"
                );
                if let Some(prev) = asked.last() {
                    assert_eq!(r.start, prev.end, "requests follow each other");
                }
                asked.push(r);
            }
            // Every record read after the first is inside what was asked.
            if let Some(last) = asked.last() {
                assert!(span.end <= last.end, "{span:?} past {last:?}");
            }
        }
        let sizes: Vec<u64> = asked.iter().map(|r| r.end - r.start).collect();
        assert_eq!(
            &sizes[..5],
            &[16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10]
        );
        assert!(sizes[5..].iter().all(|&s| s == MAX_WINDOW));
        // 600 KB of records in about as many bytes asked for, in few requests.
        assert!(asked.len() <= 8, "{} requests", asked.len());
    }

    #[test]
    fn a_jump_or_a_step_back_starts_over() {
        let ra = ReadAhead::default();
        assert_eq!(ra.before(0..100), None);
        assert_eq!(ra.before(100..200), Some(100..100 + FIRST_WINDOW));
        // Elsewhere: nothing, and the next in a row starts a first window.
        assert_eq!(ra.before(1_000_000..1_000_100), None);
        assert_eq!(
            ra.before(1_000_100..1_000_200),
            Some(1_000_100..1_000_100 + FIRST_WINDOW)
        );
        // The same record twice is no step either way.
        assert_eq!(ra.before(1_000_100..1_000_200), None);
        assert_eq!(ra.before(1_000_200..1_000_300), None);
        // Backwards.
        assert_eq!(ra.before(500..600), None);
        // A gap of skipped records still follows.
        assert_eq!(
            ra.before(600 + GAP..700 + GAP),
            Some(600 + GAP..600 + GAP + FIRST_WINDOW)
        );
    }
}
