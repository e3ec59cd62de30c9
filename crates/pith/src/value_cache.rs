//! [`ValueCache`]: decoded values of segment records, shared by every
//! reader of one open database ([`crate::Options::value_cache_bytes`]).
//!
//! A segment's value is decoded from the global codec on every read: about
//! a microsecond and a half for a Debian package record, which is most of
//! the cost of a scan (a scan of a hundred records decodes a hundred). A
//! block-compressed engine keeps uncompressed blocks in a block cache for
//! the same reason; here the unit is the record, since one record decodes
//! alone. Reads that hit skip the decode and the record's group checksum
//! (both were done when the value came in).
//!
//! An entry holds the values of up to sixteen neighbouring records of one
//! segment, keyed by `(segment file number, record number >> 4)`.
//! Segments never change and file numbers are never reused within an open
//! database, so an entry is never stale: a rewritten key lives in another
//! segment, under another key. Entries of a segment a merge removed are
//! unreachable; the segment drops them when it goes
//! ([`ValueCache::forget_segment`]), so they do not hold budget until the
//! hand comes round.
//!
//! Eviction is CLOCK (second chance) per shard: a hit sets the entry's
//! bit; the hand clears set bits and evicts the first entry it finds
//! clear, and a new entry takes the place of the last one evicted, just
//! behind the hand, so it gets a whole turn before the hand comes back.
//! No list is reordered on a hit, so a hit is a lookup and a copy under
//! the shard's lock.
//!
//! Invariants: a shard's `charged` is the sum of `Slot::charge` over its
//! entries and stays at most its capacity after each insert; `index` maps
//! exactly the keys of the filled slots, each to its position, and `free`
//! lists exactly the empty ones.
//!
//! Thread safety: `Sync`; each of [`SHARDS`] shards has its own mutex, and
//! a key's shard is chosen by its hash.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, MutexGuard};

/// Shards, each with its own lock: enough that readers on different
/// cores rarely meet.
const SHARDS: usize = 16;

/// Records of one segment that share an entry: record `r` is in entry
/// `r >> GROUP_SHIFT`. A scan reads neighbours, so one lookup serves
/// sixteen reads and their values lie side by side in memory; a point
/// read decodes and adds only its own record.
const GROUP_SHIFT: u32 = 4;
const GROUP: usize = 1 << GROUP_SHIFT;

/// Bytes an entry costs beyond its value bytes: the slot with its spans,
/// its index entry and the allocations' headers, rounded up.
const ENTRY_OVERHEAD: usize = 256;

/// The most an entry may charge, as a fraction of its shard: a few large
/// entries must not evict everything else.
const ENTRY_SHARE: usize = 8;

/// Decoded values of segment records, within a byte budget.
pub(crate) struct ValueCache {
    shards: Box<[Mutex<Shard>]>,
    shard_capacity: usize,
}

/// Counts of the database's cache of decoded values, for stats ([`crate::Stats::value_cache`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValueCacheStats {
    /// The budget ([`crate::Options::value_cache_bytes`]).
    pub capacity_bytes: u64,
    /// Bytes the entries held count against it (their buffers plus a
    /// fixed overhead each).
    pub charged_bytes: u64,
    /// Values held.
    pub values: u64,
    /// Reads of segment values answered from the cache since open.
    pub hits: u64,
    /// Reads of segment values that decoded (and then cached) since open.
    pub misses: u64,
}

/// `(segment file number, record >> GROUP_SHIFT)`.
type Key = (u64, u64);

#[derive(Default)]
struct Shard {
    index: HashMap<Key, usize, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Option<Slot>>,
    /// Positions of the empty slots, the last evicted last.
    free: Vec<usize>,
    hand: usize,
    charged: usize,
    hits: u64,
    misses: u64,
}

/// The held values of one group of records.
struct Slot {
    key: Key,
    /// The values, one after another, in the order they came.
    bytes: Vec<u8>,
    /// Where each record's value lies in `bytes`, by its place in the
    /// group; `None` when not held.
    spans: [Option<(u32, u32)>; GROUP],
    referenced: bool,
}

impl Slot {
    fn charge(&self) -> usize {
        self.bytes.capacity() + ENTRY_OVERHEAD
    }
}

/// Locks a shard, taking it over from a panicked holder (every change to
/// a shard is complete before anything can panic).
fn lock(shard: &Mutex<Shard>) -> MutexGuard<'_, Shard> {
    shard.lock().unwrap_or_else(|p| p.into_inner())
}

impl ValueCache {
    /// A cache of at most `capacity_bytes` (values plus overhead); `None`
    /// when that is too little to hold an entry (under 32 KiB).
    pub(crate) fn new(capacity_bytes: usize) -> Option<ValueCache> {
        if capacity_bytes.div_ceil(SHARDS) / ENTRY_SHARE <= ENTRY_OVERHEAD {
            return None;
        }
        Some(ValueCache {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            shard_capacity: capacity_bytes.div_ceil(SHARDS),
        })
    }

    fn shard(&self, key: Key) -> &Mutex<Shard> {
        &self.shards[shard_of(key)]
    }

    /// Replaces `out` with the value of record `record` of segment
    /// `segment` and returns true, if it is held; false (and `out`
    /// untouched) if not.
    pub(crate) fn get(&self, segment: u64, record: u64, out: &mut Vec<u8>) -> bool {
        let key = (segment, record >> GROUP_SHIFT);
        let place = record as usize % GROUP;
        let mut shard = lock(self.shard(key));
        let found = match shard.index.get(&key).copied() {
            Some(at) => {
                let Some(slot) = shard.slots[at].as_mut() else {
                    unreachable!("the index maps keys to filled slots");
                };
                match slot.spans[place] {
                    Some((start, len)) => {
                        slot.referenced = true;
                        let (start, len) = (start as usize, len as usize);
                        out.clear();
                        out.extend_from_slice(&slot.bytes[start..start + len]);
                        true
                    }
                    None => false,
                }
            }
            None => false,
        };
        if found {
            shard.hits += 1;
        } else {
            shard.misses += 1;
        }
        found
    }

    /// Holds `value` as record `record` of segment `segment`, evicting
    /// what it must. An entry that would grow past an eighth of a shard
    /// ([`ENTRY_SHARE`]) takes no more values.
    pub(crate) fn insert(&self, segment: u64, record: u64, value: &[u8]) {
        let Ok(len) = u32::try_from(value.len()) else {
            return;
        };
        let key = (segment, record >> GROUP_SHIFT);
        let place = record as usize % GROUP;
        let mut shard = lock(self.shard(key));
        if let Some(&at) = shard.index.get(&key) {
            if shard.slots[at]
                .as_ref()
                .is_some_and(|s| s.spans[place].is_some())
            {
                return;
            }
        }
        // The group's entry is taken out, grown, and put back through the
        // same path as a new one, so eviction never meets it half-changed.
        let mut slot = match shard.remove(key) {
            Some(slot) => slot,
            None => Slot {
                key,
                bytes: Vec::new(),
                spans: [None; GROUP],
                referenced: false,
            },
        };
        let start = slot.bytes.len();
        let fits = start + value.len() + ENTRY_OVERHEAD <= self.shard_capacity / ENTRY_SHARE;
        if let (true, Ok(at)) = (fits, u32::try_from(start)) {
            slot.bytes.extend_from_slice(value);
            slot.spans[place] = Some((at, len));
            if slot.spans.iter().all(Option::is_some) {
                // Complete (a scan's usual case): give back the slack.
                slot.bytes.shrink_to_fit();
            }
        }
        if slot.spans.iter().any(Option::is_some) {
            shard.put(slot, self.shard_capacity);
        }
    }

    /// Drops every entry of segment `segment` (one a merge replaced: no
    /// reader will ask for its records again). A pass over every shard
    /// under its lock, once per segment removed.
    pub(crate) fn forget_segment(&self, segment: u64) {
        for shard in self.shards.iter() {
            let mut shard = lock(shard);
            let keys: Vec<Key> = shard
                .index
                .keys()
                .filter(|k| k.0 == segment)
                .copied()
                .collect();
            for key in keys {
                shard.remove(key);
            }
        }
    }

    /// Counts, for stats.
    pub(crate) fn stats(&self) -> ValueCacheStats {
        let mut stats = ValueCacheStats {
            capacity_bytes: (self.shard_capacity * SHARDS) as u64,
            ..ValueCacheStats::default()
        };
        for s in self.shards.iter() {
            let s = lock(s);
            stats.charged_bytes += s.charged as u64;
            stats.values += s
                .slots
                .iter()
                .flatten()
                .map(|x| x.spans.iter().flatten().count() as u64)
                .sum::<u64>();
            stats.hits += s.hits;
            stats.misses += s.misses;
        }
        stats
    }
}

impl Shard {
    /// Takes the entry of `key` out, if held, leaving its slot empty.
    fn remove(&mut self, key: Key) -> Option<Slot> {
        let at = self.index.remove(&key)?;
        let slot = self.slots[at].take()?;
        self.free.push(at);
        self.charged -= slot.charge();
        Some(slot)
    }

    /// Holds `slot` (its key not held), evicting until it fits within
    /// `capacity`; it goes where the last eviction left room.
    fn put(&mut self, slot: Slot, capacity: usize) {
        let cost = slot.charge();
        while self.charged + cost > capacity && self.charged > 0 {
            self.evict_one();
        }
        let at = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        self.index.insert(slot.key, at);
        self.charged += cost;
        self.slots[at] = Some(slot);
    }

    /// Evicts the first entry from the hand on whose bit is clear,
    /// clearing set bits on the way, and moves the hand past it. Stops
    /// within two turns of the hand (after one every bit is clear). Needs
    /// an entry held (`charged > 0`).
    fn evict_one(&mut self) {
        for _ in 0..2 * self.slots.len() + 1 {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let at = self.hand;
            self.hand += 1;
            match &mut self.slots[at] {
                None => {}
                Some(slot) if slot.referenced => slot.referenced = false,
                Some(slot) => {
                    let key = slot.key;
                    self.remove(key);
                    return;
                }
            }
        }
    }
}

/// The shard of a key: middle bits of its hash (the map's table uses the
/// low bits for its buckets and the top seven as tags).
fn shard_of(key: Key) -> usize {
    (mix(key) >> 32) as usize % SHARDS
}

/// A key's hash: both halves multiplied in, high bits mixed down.
fn mix((segment, group): Key) -> u64 {
    let h =
        (segment.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ group).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    h ^ (h >> 29)
}

/// The map's hasher: [`mix`] of the two words a key writes. SipHash, the
/// default, would cost more than the rest of a hit.
#[derive(Default)]
struct KeyHasher {
    words: [u64; 2],
    n: usize,
}

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Keys are two u64s, which hash through `write_u64`; anything else
        // is folded in a byte at a time.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, word: u64) {
        let i = self.n % 2;
        self.words[i] = self.words[i].rotate_left(8) ^ word;
        self.n += 1;
    }

    fn finish(&self) -> u64 {
        mix((self.words[0], self.words[1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(i: u64, len: usize) -> Vec<u8> {
        (0..len).map(|j| (i as usize * 31 + j) as u8).collect()
    }

    /// Checks a shard's invariants: the index maps exactly the filled
    /// slots' keys to their places, `free` lists exactly the empty ones,
    /// the charge is the sum of the entries', the spans lie inside their
    /// buffers.
    fn check(c: &ValueCache) {
        for s in c.shards.iter() {
            let s = lock(s);
            let filled = s.slots.iter().flatten().count();
            assert_eq!(s.index.len(), filled);
            let mut free = s.free.clone();
            free.sort_unstable();
            let empty: Vec<usize> = (0..s.slots.len())
                .filter(|&i| s.slots[i].is_none())
                .collect();
            assert_eq!(free, empty);
            for (at, slot) in s.slots.iter().enumerate() {
                let Some(slot) = slot else { continue };
                assert_eq!(s.index.get(&slot.key), Some(&at));
                for &(start, len) in slot.spans.iter().flatten() {
                    assert!((start + len) as usize <= slot.bytes.len());
                }
            }
            let charged: usize = s.slots.iter().flatten().map(Slot::charge).sum();
            assert_eq!(charged, s.charged);
            assert!(s.charged <= c.shard_capacity);
        }
    }

    /// `n` groups (as their first records) of segment 1 whose entries
    /// fall in shard 0.
    fn groups_of_shard_zero(n: usize) -> Vec<u64> {
        (0..1_000_000u64)
            .filter(|&g| shard_of((1, g)) == 0)
            .take(n)
            .map(|g| g << GROUP_SHIFT)
            .collect()
    }

    /// A cache whose shards hold eight single-value entries of 100 bytes.
    fn eight_per_shard() -> ValueCache {
        ValueCache::new(SHARDS * 8 * (ENTRY_OVERHEAD + 100)).expect("a cache")
    }

    #[test]
    fn a_held_value_reads_back_and_others_miss() {
        let c = ValueCache::new(1 << 20).expect("a cache");
        c.insert(7, 3, b"seven three");
        c.insert(7, 4, b"seven four");
        c.insert(7, 6, b"");
        let mut out = b"old".to_vec();
        assert!(c.get(7, 3, &mut out));
        assert_eq!(out, b"seven three");
        assert!(c.get(7, 4, &mut out));
        assert_eq!(out, b"seven four");
        assert!(c.get(7, 6, &mut out), "an empty value is held too");
        assert!(out.is_empty());
        out = b"old".to_vec();
        assert!(!c.get(7, 5, &mut out), "same group, not held");
        assert!(!c.get(7, 3 + GROUP as u64, &mut out), "next group");
        assert!(!c.get(8, 3, &mut out), "another segment");
        assert_eq!(out, b"old", "a miss leaves out alone");
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.values), (3, 3, 3));
        check(&c);
    }

    #[test]
    fn forgetting_a_segment_drops_its_entries_and_keeps_the_others() {
        let c = ValueCache::new(1 << 20).expect("a cache");
        for r in 0..200u64 {
            c.insert(3, r, &[3; 50]);
            c.insert(4, r, &[4; 50]);
        }
        let before = c.stats();
        assert_eq!(before.values, 400);
        c.forget_segment(3);
        let after = c.stats();
        assert_eq!(after.values, 200);
        assert!(after.charged_bytes * 2 <= before.charged_bytes + 1);
        let mut out = Vec::new();
        for r in 0..200u64 {
            assert!(
                !c.get(3, r, &mut out),
                "record {r} of the forgotten segment"
            );
            assert!(c.get(4, r, &mut out), "record {r} of the other");
            assert_eq!(out, [4; 50]);
        }
        // The freed slots take new entries.
        c.insert(5, 0, b"new");
        assert!(c.get(5, 0, &mut out));
        check(&c);
    }

    #[test]
    fn an_empty_value_alone_is_held() {
        let c = ValueCache::new(1 << 20).expect("a cache");
        c.insert(1, 0, b"");
        let mut out = b"x".to_vec();
        assert!(c.get(1, 0, &mut out));
        assert!(out.is_empty());
        check(&c);
    }

    #[test]
    fn a_second_insert_of_a_held_record_changes_nothing() {
        let c = ValueCache::new(1 << 20).expect("a cache");
        c.insert(1, 2, b"first");
        c.insert(1, 2, b"second");
        let mut out = Vec::new();
        assert!(c.get(1, 2, &mut out));
        assert_eq!(out, b"first");
        assert_eq!(c.stats().values, 1);
    }

    #[test]
    fn a_budget_too_small_for_an_entry_is_no_cache() {
        assert!(ValueCache::new(0).is_none());
        assert!(ValueCache::new(SHARDS * ENTRY_SHARE * ENTRY_OVERHEAD).is_none());
        assert!(ValueCache::new(SHARDS * ENTRY_SHARE * (ENTRY_OVERHEAD + 1)).is_some());
    }

    #[test]
    fn the_budget_holds_and_every_held_value_is_its_own() {
        let c = ValueCache::new(256 << 10).expect("a cache");
        let len = |i: u64| (i * 7 % 300) as usize;
        // Records in random order, some read back between inserts, so
        // entries grow, are read and are evicted in every order.
        let mut x = 12345u64;
        let mut out = Vec::new();
        for step in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (segment, record) = (x % 3, (x >> 8) % 4_000);
            let i = segment * 10_000 + record;
            if c.get(segment, record, &mut out) {
                assert_eq!(
                    out,
                    value(i, len(i)),
                    "record {record} of segment {segment}"
                );
            } else {
                c.insert(segment, record, &value(i, len(i)));
            }
            if step % 1_000 == 0 {
                check(&c);
            }
        }
        check(&c);
        let s = c.stats();
        assert!(s.values > 300 && s.hits > 1_000, "{s:?}");
    }

    #[test]
    fn a_group_read_since_the_hand_passed_survives_the_next_eviction() {
        let c = eight_per_shard();
        let records = groups_of_shard_zero(9);
        for &r in &records[..8] {
            c.insert(1, r, &value(r, 100));
        }
        check(&c);
        let mut out = Vec::new();
        assert!(c.get(1, records[0], &mut out));
        c.insert(1, records[8], &value(records[8], 100));
        check(&c);
        assert!(c.get(1, records[0], &mut out), "the read group was evicted");
        assert!(
            !c.get(1, records[1], &mut out),
            "the hand's first clear group stayed"
        );
        assert!(c.get(1, records[8], &mut out));
    }

    /// Entries nobody reads leave in the order they came: the newest is
    /// not the next to go (a new entry takes the evicted one's place,
    /// behind the hand).
    #[test]
    fn unread_entries_are_evicted_oldest_first() {
        let c = eight_per_shard();
        let records = groups_of_shard_zero(16);
        for &r in &records {
            c.insert(1, r, &value(r, 100));
            check(&c);
        }
        let mut out = Vec::new();
        for (i, &r) in records.iter().enumerate() {
            assert_eq!(c.get(1, r, &mut out), i >= 8, "entry {i}");
        }
    }

    #[test]
    fn a_group_past_an_eighth_of_a_shard_takes_no_more_values() {
        let c = eight_per_shard();
        c.insert(1, 0, &[1u8; 100]);
        c.insert(1, 1, &[2u8; 10]);
        c.insert(1, 2, &[3u8; 200]);
        let mut out = Vec::new();
        assert!(c.get(1, 0, &mut out));
        assert!(!c.get(1, 1, &mut out), "past an eighth with the first");
        assert!(!c.get(1, 2, &mut out));
        assert!(!c.get(2, 0, &mut out));
        c.insert(2, 0, &[3u8; 200]);
        assert!(!c.get(2, 0, &mut out), "alone past an eighth");
        check(&c);
    }
}
