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
//! Keys are `(segment file number, record number)`. Segments never change
//! and file numbers are never reused within an open database, so an entry
//! is never stale: a rewritten key lives in another segment, under another
//! key. Entries of segments a merge removed are unreachable and age out.
//!
//! Eviction is CLOCK (second chance) per shard: a hit sets the entry's
//! bit; the hand clears set bits and evicts the first entry it finds
//! clear. It needs no list to reorder on a hit, so a hit is a lookup and a
//! copy under the shard's lock.
//!
//! Invariants: a shard's `charged` is the sum of [`charge`] over its
//! entries and stays at most its capacity after each insert; `index` maps
//! exactly the keys of `slots`, each to its position.
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
    slots: Vec<Slot>,
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
    /// when that is 0.
    pub(crate) fn new(capacity_bytes: usize) -> Option<ValueCache> {
        if capacity_bytes == 0 {
            return None;
        }
        Some(ValueCache {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            shard_capacity: capacity_bytes.div_ceil(SHARDS),
        })
    }

    fn shard(&self, key: Key) -> &Mutex<Shard> {
        &self.shards[(mix(key) >> 60) as usize % SHARDS]
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
                let slot = &mut shard.slots[at];
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
    /// takes no more values (a few would evict too much).
    pub(crate) fn insert(&self, segment: u64, record: u64, value: &[u8]) {
        let Ok(len) = u32::try_from(value.len()) else {
            return;
        };
        let key = (segment, record >> GROUP_SHIFT);
        let place = record as usize % GROUP;
        let mut shard = lock(self.shard(key));
        if let Some(&at) = shard.index.get(&key) {
            if shard.slots[at].spans[place].is_some() {
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
        if start + value.len() + ENTRY_OVERHEAD <= self.shard_capacity / 8 {
            slot.bytes.extend_from_slice(value);
            slot.spans[place] = Some((start as u32, len));
            if slot.spans.iter().all(Option::is_some) {
                // Complete (a scan's usual case): give back the slack.
                slot.bytes.shrink_to_fit();
            }
        }
        if !slot.bytes.is_empty() {
            shard.put(slot, self.shard_capacity);
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
                .map(|x| x.spans.iter().flatten().count() as u64)
                .sum::<u64>();
            stats.hits += s.hits;
            stats.misses += s.misses;
        }
        stats
    }
}

impl Shard {
    /// Takes the entry of `key` out, if held.
    fn remove(&mut self, key: Key) -> Option<Slot> {
        let at = self.index.remove(&key)?;
        let slot = self.slots.swap_remove(at);
        if let Some(moved) = self.slots.get(at) {
            self.index.insert(moved.key, at);
        }
        if self.hand > self.slots.len() {
            self.hand = 0;
        }
        self.charged -= slot.charge();
        Some(slot)
    }

    /// Holds `slot` (its key not held), evicting until it fits within
    /// `capacity`.
    fn put(&mut self, slot: Slot, capacity: usize) {
        let cost = slot.charge();
        while self.charged + cost > capacity && !self.slots.is_empty() {
            self.evict_one();
        }
        self.index.insert(slot.key, self.slots.len());
        self.charged += cost;
        self.slots.push(slot);
    }

    /// Evicts the first entry from the hand on whose bit is clear,
    /// clearing set bits on the way. Stops within two turns of the hand
    /// (after one every bit is clear). Does nothing when empty.
    fn evict_one(&mut self) {
        while !self.slots.is_empty() {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let slot = &mut self.slots[self.hand];
            if slot.referenced {
                slot.referenced = false;
                self.hand += 1;
                continue;
            }
            let key = slot.key;
            self.remove(key);
            return;
        }
    }
}

/// A key's hash: both halves multiplied in, high bits mixed down (the
/// shard takes the top four bits, the map the rest).
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

    /// Checks a shard's invariants: the index maps exactly the slots'
    /// keys to their places, the charge is the sum of the entries', the
    /// spans lie inside their buffers.
    fn check(c: &ValueCache) {
        for s in c.shards.iter() {
            let s = lock(s);
            assert_eq!(s.index.len(), s.slots.len());
            for (at, slot) in s.slots.iter().enumerate() {
                assert_eq!(s.index.get(&slot.key), Some(&at));
                for &(start, len) in slot.spans.iter().flatten() {
                    assert!((start + len) as usize <= slot.bytes.len());
                }
            }
            let charged: usize = s.slots.iter().map(Slot::charge).sum();
            assert_eq!(charged, s.charged);
            assert!(s.charged <= c.shard_capacity);
        }
    }

    #[test]
    fn a_held_value_reads_back_and_others_miss() {
        let c = ValueCache::new(1 << 20).expect("a cache");
        c.insert(7, 3, b"seven three");
        c.insert(7, 4, b"seven four");
        let mut out = b"old".to_vec();
        assert!(c.get(7, 3, &mut out));
        assert_eq!(out, b"seven three");
        assert!(c.get(7, 4, &mut out));
        assert_eq!(out, b"seven four");
        assert!(!c.get(7, 5, &mut out), "same group, not held");
        assert!(!c.get(7, 3 + GROUP as u64, &mut out), "next group");
        assert!(!c.get(8, 3, &mut out), "another segment");
        assert_eq!(out, b"seven four", "a miss leaves out alone");
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.values), (2, 3, 2));
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
    fn no_budget_is_no_cache() {
        assert!(ValueCache::new(0).is_none());
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
        // One shard, filled with eight single-value groups.
        let c = ValueCache::new(SHARDS * 8 * (ENTRY_OVERHEAD + 100)).expect("a cache");
        let shard_of = |k: Key| (mix(k) >> 60) as usize % SHARDS;
        let groups: Vec<u64> = (0..100_000u64)
            .filter(|&g| shard_of((1, g)) == 0)
            .take(9)
            .collect();
        let record = |g: u64| g << GROUP_SHIFT;
        for &g in &groups[..8] {
            c.insert(1, record(g), &value(g, 100));
        }
        check(&c);
        let mut out = Vec::new();
        assert!(c.get(1, record(groups[0]), &mut out));
        c.insert(1, record(groups[8]), &value(groups[8], 100));
        check(&c);
        assert!(
            c.get(1, record(groups[0]), &mut out),
            "the read group was evicted"
        );
        assert!(
            !c.get(1, record(groups[1]), &mut out),
            "the hand's first clear group stayed"
        );
        assert!(c.get(1, record(groups[8]), &mut out));
    }

    #[test]
    fn a_group_past_an_eighth_of_a_shard_takes_no_more_values() {
        let c = ValueCache::new(SHARDS * 8 * (ENTRY_OVERHEAD + 100)).expect("a cache");
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
