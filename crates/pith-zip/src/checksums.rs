//! Record checksums by group (store format version 2).
//!
//! A store checks every record it decodes. Version 1 stored the crc32c of
//! each decoded record after it: 4 bytes a record, which for the small
//! records of a table's column group or an index's values (10 to 60
//! stored bytes) was a tenth to a half of the store. Version 2 checks
//! groups of `2^g` consecutive records instead: one crc32c over the
//! group's stored bytes, kept after the offsets, so a read checks the
//! bytes of its record's group (a few hundred bytes: a few tens of
//! nanoseconds with the CPU's crc32c instruction) before decoding its
//! record, as block-based engines check the block a value is in.
//!
//! The group size is chosen per store from the average stored length of
//! all its records: the largest power of two (at most 64) whose group of
//! records of that length stays within [`GROUP_TARGET_BYTES`], and whose
//! largest group stays within [`GROUP_MAX_BYTES`] (so a few large records
//! among many small ones cannot make a small record's read sum megabytes
//! of neighbours). Records of a few hundred bytes or more are each a group
//! of one. A store is
//! streamed to its writer, and the average is known only at the end, so
//! the builder sums every candidate size at once (seven crc32c runs over
//! each record's bytes, about 60 ns a small record; a store's first
//! records were no guide: keys of random values sorted before a table's
//! small rows chose groups of one for all of them).
//!
//! Invariants: group `k` covers records `k * 2^g .. min((k + 1) * 2^g, n)`
//! and its checksum is the crc32c of the pool bytes from the first one's
//! offset to the end of the last; there are `ceil(n / 2^g)` checksums,
//! packed two to a little-endian `u64` word (the first in the low half), the
//! last word's unused half 0.

use crate::format::MAX_GROUP_LOG2;

/// Stored bytes a group of records aims at: what a read checks beyond its
/// own record. Small enough that a group rarely spans two 4 KiB pages
/// more often than its record alone would (about one read in sixteen),
/// large enough that records of 30 bytes share a checksum eight ways.
pub(crate) const GROUP_TARGET_BYTES: u64 = 256;

/// Most stored bytes any group of more than one record may hold: what the
/// read of a small record beside a large one sums at worst (about a
/// microsecond with the CPU's crc32c).
pub(crate) const GROUP_MAX_BYTES: u64 = 16 << 10;
/// Candidate group sizes: `2^0 ..= 2^MAX_GROUP_LOG2`.
const SIZES: usize = MAX_GROUP_LOG2 as usize + 1;

/// The sums of one candidate group size.
#[derive(Default)]
struct Level {
    /// crc32c and bytes of the group being summed, so far.
    open: u32,
    open_bytes: u64,
    /// Bytes of the largest group closed.
    largest: u64,
    sums: Vec<u32>,
}

/// The group checksums of a store being built, from its records' stored
/// bytes in order. Memory: about 8 bytes a record (every candidate's
/// sums), until [`GroupSums::finish`] keeps one.
pub(crate) struct GroupSums {
    records: u64,
    bytes: u64,
    levels: [Level; SIZES],
}

impl GroupSums {
    pub(crate) fn new() -> Self {
        GroupSums {
            records: 0,
            bytes: 0,
            levels: Default::default(),
        }
    }

    /// Adds the next record's stored bytes.
    pub(crate) fn add(&mut self, stored: &[u8]) {
        let own = crc32c::crc32c(stored);
        let i = self.records;
        let len = stored.len() as u64;
        for (log2, level) in self.levels.iter_mut().enumerate() {
            let mask = (1u64 << log2) - 1;
            (level.open, level.open_bytes) = if i & mask == 0 {
                (own, len)
            } else {
                (
                    crc32c::crc32c_append(level.open, stored),
                    level.open_bytes + len,
                )
            };
            if i & mask == mask {
                level.sums.push(level.open);
                level.largest = level.largest.max(level.open_bytes);
            }
        }
        self.records += 1;
        self.bytes += len;
    }

    /// The log2 of the group size and the words to store after the offsets.
    pub(crate) fn finish(self) -> (u32, Vec<u64>) {
        let average = (self.bytes / self.records.max(1)).max(1);
        let per_group = (GROUP_TARGET_BYTES / average).max(1);
        let partial = |log2: u32| self.records % (1 << log2) != 0;
        let largest = |log2: u32| {
            let level = &self.levels[log2 as usize];
            level
                .largest
                .max(if partial(log2) { level.open_bytes } else { 0 })
        };
        let log2 = (1..=per_group.ilog2().min(MAX_GROUP_LOG2))
            .rev()
            .find(|&log2| largest(log2) <= GROUP_MAX_BYTES)
            .unwrap_or(0);
        let partial = partial(log2);
        let Level { open, mut sums, .. } = std::mem::take(&mut { self.levels }[log2 as usize]);
        if partial {
            sums.push(open);
        }
        let words = sums
            .chunks(2)
            .map(|pair| u64::from(pair[0]) | u64::from(pair.get(1).copied().unwrap_or(0)) << 32)
            .collect();
        (log2, words)
    }
}

/// Words of group checksums a store of `records` records in groups of
/// `2^log2` holds, or `None` if that overflows.
pub(crate) fn words_for(records: u64, log2: u32) -> Option<u64> {
    let groups = records.div_ceil(1u64.checked_shl(log2)?);
    Some(groups.div_ceil(2))
}

/// The group checksums of an opened store.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sums<'a> {
    pub(crate) log2: u32,
    words: &'a [u64],
}

impl<'a> Sums<'a> {
    /// Over `words`, which the caller checked hold every group's.
    pub(crate) fn new(log2: u32, words: &'a [u64]) -> Self {
        Sums { log2, words }
    }

    /// Asks the CPU to start loading group `k`'s checksum.
    #[inline]
    pub(crate) fn prefetch(&self, k: u64) {
        crate::global::prefetch(self.words, (k / 2) as usize);
    }

    /// The stored checksum of group `k` (0 past the last).
    #[inline]
    pub(crate) fn get(&self, k: u64) -> u32 {
        let word = self.words.get((k / 2) as usize).copied().unwrap_or(0);
        (word >> (32 * (k % 2))) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The sums of `records`, computed the slow way for group size `2^log2`.
    fn expected(records: &[Vec<u8>], log2: u32) -> Vec<u32> {
        records
            .chunks(1 << log2)
            .map(|group| crc32c::crc32c(&group.concat()))
            .collect()
    }

    proptest! {
        #[test]
        fn every_group_sums_its_stored_bytes(
            records in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..300)
        ) {
            let mut sums = GroupSums::new();
            for r in &records {
                sums.add(r);
            }
            let (log2, words) = sums.finish();
            prop_assert!(log2 <= MAX_GROUP_LOG2);
            let want = expected(&records, log2);
            prop_assert_eq!(Some(words.len() as u64), words_for(records.len() as u64, log2));
            let read = Sums::new(log2, &words);
            for (k, &w) in want.iter().enumerate() {
                prop_assert_eq!(read.get(k as u64), w);
            }
            if want.len() % 2 == 1 {
                prop_assert_eq!(words.last().map(|w| w >> 32), Some(0));
            }
        }
    }

    #[test]
    fn the_group_size_follows_the_record_size() {
        let size_for = |len: usize, n: usize| {
            let mut sums = GroupSums::new();
            for _ in 0..n {
                sums.add(&vec![7u8; len]);
            }
            sums.finish().0
        };
        assert_eq!(size_for(4, 1000), 6, "tiny records: 64 a group");
        assert_eq!(size_for(30, 1000), 3, "30 bytes: 8 a group");
        assert_eq!(size_for(100, 1000), 1);
        assert_eq!(size_for(256, 1000), 0);
        assert_eq!(size_for(5000, 10), 0);
        assert_eq!(size_for(0, 5), 6, "empty records");
        assert_eq!(GroupSums::new().finish(), (6, vec![]), "no records");
        // The average of all records, not of the first ones, decides.
        let mut sums = GroupSums::new();
        for len in std::iter::repeat_n(1000, 100).chain(std::iter::repeat_n(10, 10_000)) {
            sums.add(&vec![1u8; len]);
        }
        assert_eq!(
            sums.finish().0,
            3,
            "(100 * 1000 + 10_000 * 10) / 10_100 = 19 bytes: 8 a group"
        );
        // But no group of several records past 16 KiB: 64 records of
        // 64 KiB among 200,000 of one byte average 21 bytes (8 a group by
        // the average), and make every record a group of one.
        let mut sums = GroupSums::new();
        let many = |len: usize, n: usize| std::iter::repeat_n(len, n);
        for len in many(1, 100_000)
            .chain(many(64 << 10, 64))
            .chain(many(1, 100_000))
        {
            sums.add(&vec![2u8; len]);
        }
        assert_eq!(sums.finish().0, 0);
        // 20 KiB alone: a group of several holding it is too large.
        let mut sums = GroupSums::new();
        for len in many(20 << 10, 1).chain(many(4, 100_000)) {
            sums.add(&vec![3u8; len]);
        }
        assert_eq!(sums.finish().0, 0, "a group of 64 would hold 20 KiB");
        // 8 KiB alone: groups of 2 hold it with room, of 4 too (8 KiB and
        // 12 bytes), as do groups of 64: the average (4 bytes, plus 8 KiB
        // over 100,001) allows 64.
        let mut sums = GroupSums::new();
        for len in many(8 << 10, 1).chain(many(4, 100_000)) {
            sums.add(&vec![3u8; len]);
        }
        assert_eq!(sums.finish().0, 6);
    }
}
