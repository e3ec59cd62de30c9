//! The memtable: recent writes, in memory, ordered for reading.
//!
//! A skip list of *versions* ([`skiplist`], its nodes and its long values
//! in two [`arena`]s freed whole when the memtable drops): (user key, tag) -> (deadline, value),
//! where the tag is `seq << 8 | kind` and the deadline is `NO_DEADLINE`
//! unless the put expires. Versions of one key sort newest first. Entries
//! are only ever added, never changed, so readers need no lock and see a
//! consistent state by ignoring versions newer than their snapshot
//! sequence number; the engine publishes a batch's sequence numbers only
//! after all of its versions are inserted.
//!
//! Point reads ([`Memtable::get`]) go through the skip list's hash index
//! by the key's [`key_hash`] (the one its Bloom filter probes use), not
//! down the list: in a full memtable a search was most of a read's time
//! (readwhilewriting on debian-packages: 345K reads/s searching, 901K
//! through the index).
//!
//! Thread safety: any number of readers with one writer at a time (the
//! group-commit leader; the skip list serializes writers regardless).

mod arena;
mod skiplist;

use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use crate::dbformat::{expired, key_hash, max_tag, tag, tag_kind, Kind};

pub(crate) use skiplist::Entry as MemEntry;
use skiplist::SkipList;

/// A version found by a point read: its tag and deadline, and its value
/// when it is a put that has not expired (empty otherwise).
#[derive(Debug)]
pub(crate) struct Version {
    pub tag: u64,
    pub deadline: u64,
    pub value: Vec<u8>,
}

/// One memtable and the logs that make it durable.
pub(crate) struct Memtable {
    list: SkipList,
    max_seq: AtomicU64,
    /// File numbers of the write-ahead logs holding these writes,
    /// ascending: one for a live memtable, all the replayed ones for the
    /// memtable recovery builds.
    pub logs: Vec<u64>,
}

impl Memtable {
    /// An empty memtable whose writes go to log `wal_number`.
    pub(crate) fn new(wal_number: u64) -> Self {
        Memtable::with_logs(vec![wal_number])
    }

    /// An empty memtable backed by `logs` (ascending).
    pub(crate) fn with_logs(logs: Vec<u64>) -> Self {
        Memtable {
            list: SkipList::new(key_hash),
            max_seq: AtomicU64::new(0),
            logs,
        }
    }

    /// The oldest log this memtable needs (`u64::MAX` when none).
    pub(crate) fn oldest_log(&self) -> u64 {
        self.logs.first().copied().unwrap_or(u64::MAX)
    }

    /// Adds a version expiring at `deadline` (`NO_DEADLINE` for never).
    /// Called by one writer at a time.
    pub(crate) fn insert(&self, key: &[u8], seq: u64, kind: Kind, value: &[u8], deadline: u64) {
        self.list.insert(key, tag(seq, kind), deadline, value);
        self.max_seq.fetch_max(seq, AtomicOrdering::Relaxed);
    }

    /// Memory held by the versions (nodes with their keys and values).
    pub(crate) fn approximate_bytes(&self) -> usize {
        self.list.bytes()
    }

    /// Versions held (puts and deletes).
    pub(crate) fn entries(&self) -> usize {
        self.list.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.len() == 0
    }

    /// Highest sequence number inserted (0 when empty).
    pub(crate) fn max_seq(&self) -> u64 {
        self.max_seq.load(AtomicOrdering::Relaxed)
    }

    /// The newest version of `key` (whose [`key_hash`] is `hash`) visible
    /// at `snap`, found through the hash index; its value is copied only
    /// when `with_value` and it is a put not expired at `now`.
    pub(crate) fn get(
        &self,
        key: &[u8],
        hash: u64,
        snap: u64,
        now: u64,
        with_value: bool,
    ) -> Option<Version> {
        let e = self.list.get(key, hash, max_tag(snap))?;
        let live = with_value && tag_kind(e.tag()) == Kind::Put && !expired(e.deadline(), now);
        Some(Version {
            tag: e.tag(),
            deadline: e.deadline(),
            value: if live { e.value().to_vec() } else { Vec::new() },
        })
    }

    /// The newest version of `key` visible at `snap`.
    fn visible(&self, key: &[u8], snap: u64) -> Option<MemEntry<'_>> {
        self.list.search(key, max_tag(snap))
    }

    /// The first version from `e` on (in the list's order: key
    /// ascending, newest first) that `snap` sees: the visible version of
    /// `e`'s key when `e` is its newest, else of the next key that has
    /// one. Follows links; no search.
    fn first_visible_from<'a>(mut e: MemEntry<'a>, snap: u64) -> Option<MemEntry<'a>> {
        let max = max_tag(snap);
        while e.tag() > max {
            e = e.next()?;
        }
        Some(e)
    }

    /// The visible version at `snap` of the first key in `(start, ..)` (or
    /// `[start, ..)` when `inclusive`) that has one. One search, then
    /// links.
    pub(crate) fn next_visible(
        &self,
        start: &[u8],
        inclusive: bool,
        snap: u64,
    ) -> Option<MemEntry<'_>> {
        let e = if inclusive {
            self.list.seek_ge(start, u64::MAX)?
        } else {
            self.after_key(start)?
        };
        Self::first_visible_from(e, snap)
    }

    /// The visible version at `snap` of the first key after `e`'s that
    /// has one: [`Memtable::next_visible`] of `e`'s key, by following
    /// links from `e` (a scan's step) instead of searching.
    pub(crate) fn visible_after<'a>(e: MemEntry<'a>, snap: u64) -> Option<MemEntry<'a>> {
        let key = e.key();
        let mut n = e.next()?;
        while n.key() == key {
            n = n.next()?;
        }
        Self::first_visible_from(n, snap)
    }

    /// The first version of the first key after `key`.
    fn after_key(&self, key: &[u8]) -> Option<MemEntry<'_>> {
        // Tag 0 is the oldest a version of `key` can have: only a version
        // of `key` with tag 0 can be at or after it and still be `key`'s.
        let e = self.list.seek_ge(key, 0)?;
        if e.key() == key {
            e.next()
        } else {
            Some(e)
        }
    }

    /// The visible version of the last key before `end` (any key when
    /// `end` is `None`) that has one at `snap`.
    pub(crate) fn prev_visible(&self, end: Option<&[u8]>, snap: u64) -> Option<MemEntry<'_>> {
        let mut e = match end {
            Some(k) => self.list.seek_lt(k, u64::MAX)?,
            None => self.list.last()?,
        };
        loop {
            if let Some(v) = self.visible(e.key(), snap) {
                return Some(v);
            }
            e = self.list.seek_lt(e.key(), u64::MAX)?;
        }
    }

    /// Every version, in key order and newest first within a key. The
    /// entries borrow the memtable's own nodes: nothing is copied.
    pub(crate) fn versions(&self) -> impl Iterator<Item = MemEntry<'_>> + '_ {
        self.list.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbformat::{tag_seq, NO_DEADLINE};

    #[test]
    fn versions_and_snapshots() {
        let m = Memtable::new(1);
        m.insert(b"a", 1, Kind::Put, b"a1", NO_DEADLINE);
        m.insert(b"a", 3, Kind::Put, b"a3", NO_DEADLINE);
        m.insert(b"b", 2, Kind::Delete, b"", NO_DEADLINE);
        m.insert(b"c", 5, Kind::Put, b"c5", NO_DEADLINE);
        assert_eq!(
            m.get(b"a", key_hash(b"a"), 10, 0, true).map(|v| v.value),
            Some(b"a3".to_vec())
        );
        assert_eq!(
            m.get(b"a", key_hash(b"a"), 2, 0, true).map(|v| v.value),
            Some(b"a1".to_vec())
        );
        assert_eq!(
            m.get(b"a", key_hash(b"a"), 2, 0, false).map(|v| v.value),
            Some(Vec::new())
        );
        assert!(m.get(b"a", key_hash(b"a"), 0, 0, true).is_none());
        assert_eq!(
            m.get(b"b", key_hash(b"b"), 9, 0, true)
                .map(|v| tag_kind(v.tag)),
            Some(Kind::Delete)
        );
        let f = m.next_visible(b"a", false, 4).map(|f| f.key().to_vec());
        assert_eq!(f, Some(b"b".to_vec()));
        // c is invisible at 4, so the last visible key is b.
        assert_eq!(
            m.prev_visible(None, 4).map(|f| f.key().to_vec()),
            Some(b"b".to_vec())
        );
        assert_eq!(
            m.prev_visible(Some(b"b"), 4).map(|f| f.key().to_vec()),
            Some(b"a".to_vec())
        );
        let v: Vec<(Vec<u8>, u64)> = m.versions().map(|e| (e.key().to_vec(), e.tag())).collect();
        assert_eq!(v.len(), 4);
        assert_eq!((v[0].0.as_slice(), tag_seq(v[0].1)), (&b"a"[..], 3));
        assert_eq!((v[1].0.as_slice(), tag_seq(v[1].1)), (&b"a"[..], 1));
    }

    /// A walk by links (`next_visible`, then `visible_after`) meets the
    /// same versions, at every snapshot, as a search per key.
    #[test]
    fn a_walk_by_links_sees_what_a_search_per_key_sees() {
        let m = Memtable::new(1);
        let n: u8 = if cfg!(miri) { 12 } else { 40 };
        let keys: Vec<Vec<u8>> = (0..n).map(|i| vec![b'k', i / 4, i]).collect();
        let mut seq = 0;
        for round in 0..4u64 {
            for (i, k) in keys.iter().enumerate() {
                if (i as u64 + round).is_multiple_of(3) {
                    continue;
                }
                seq += 1;
                let kind = if (i as u64 * 7 + round).is_multiple_of(5) {
                    Kind::Delete
                } else {
                    Kind::Put
                };
                m.insert(k, seq, kind, format!("{i}@{seq}").as_bytes(), NO_DEADLINE);
            }
        }
        for snap in 0..=seq + 1 {
            let want: Vec<(Vec<u8>, u64)> = keys
                .iter()
                .filter_map(|k| m.visible(k, snap).map(|e| (e.key().to_vec(), e.tag())))
                .collect();
            let mut got = Vec::new();
            let mut e = m.next_visible(b"", true, snap);
            while let Some(v) = e {
                got.push((v.key().to_vec(), v.tag()));
                e = Memtable::visible_after(v, snap);
            }
            assert_eq!(got, want, "at {snap}");
            for k in &keys {
                let after = m.next_visible(k, false, snap).map(|e| e.key().to_vec());
                let want_after = want.iter().map(|(wk, _)| wk.clone()).find(|wk| wk > k);
                assert_eq!(after, want_after, "after {k:?} at {snap}");
            }
        }
    }

    #[test]
    fn an_expired_put_is_found_without_its_value() {
        let m = Memtable::new(1);
        m.insert(b"k", 1, Kind::Put, b"value", 100);
        let live = m.get(b"k", key_hash(b"k"), 1, 99, true).expect("found");
        assert_eq!((live.deadline, live.value.as_slice()), (100, &b"value"[..]));
        let gone = m.get(b"k", key_hash(b"k"), 1, 100, true).expect("found");
        assert_eq!((gone.deadline, gone.value.len()), (100, 0));
        assert_eq!(
            m.next_visible(b"", true, 1).map(|f| f.deadline()),
            Some(100)
        );
    }
}
