//! Inputs of segment builds: a frozen memtable, or several segments merged
//! by key, with the versions nobody can read any more dropped.
//!
//! Which versions survive ([`retain`]): the newest version of every key,
//! and an older version only when a live snapshot sees it (its sequence
//! number is at or below the snapshot and the next newer version's is
//! above). When the output will be the oldest segment (nothing older can
//! hold the key), tombstones at the end of a key's surviving list are
//! dropped too: with nothing below them, "deleted" and "absent" read the
//! same.
//!
//! A build that will be the oldest segment may also forget its sequence
//! numbers ([`forgets_seqs`]): when no live snapshot is older than its
//! newest version, every reader, now or later, sees all of its versions,
//! and they are written at one sequence number (RocksDB zeroes them in its
//! bottommost compactions for the same reason). The tags then take no bits.
//!
//! Before that, [`expire`] turns every put past its deadline at the
//! build's time into a tombstone at the same sequence number: every read
//! already sees it as one, and it must still hide the older versions
//! below it in segments the build does not read. So an expired value is
//! dropped by the first flush or merge that sees it, and its key by the
//! first bottommost merge.

use std::sync::Arc;

use std::borrow::Cow;

use crate::dbformat::{expired, tag, tag_kind, tag_seq, Kind, NO_DEADLINE};
use crate::error::Result;
use crate::memtable::{MemEntry, Memtable};
use crate::segment::readahead::ReadAhead;
use crate::segment::writer::{Group, GroupSource, ValueRef};
use crate::segment::Segment;

/// Filters `versions` (newest first) down to those still readable.
/// `snapshots` holds the live snapshot sequence numbers, ascending.
pub(crate) fn retain<T>(versions: &mut Vec<(u64, T)>, snapshots: &[u64], bottommost: bool) {
    if versions.len() > 1 {
        let seqs: Vec<u64> = versions.iter().map(|v| tag_seq(v.0)).collect();
        let mut i = 0;
        versions.retain(|_| {
            let keep = i == 0 || {
                let (mine, newer) = (seqs[i], seqs[i - 1]);
                // A snapshot s with mine <= s < newer sees this version.
                let first = snapshots.partition_point(|&s| s < mine);
                snapshots.get(first).is_some_and(|&s| s < newer)
            };
            i += 1;
            keep
        });
    }
    if bottommost {
        while versions
            .last()
            .is_some_and(|v| tag_kind(v.0) == Kind::Delete)
        {
            versions.pop();
        }
    }
}

/// Whether a build whose newest version is at `max_seq` may write all its
/// versions at one sequence number: it will be the oldest segment
/// (`bottommost`) and no live snapshot (`snapshots`, ascending) is older
/// than `max_seq`. Readers cannot tell: a reader's sequence number is a
/// live snapshot's or the one published when it started, and snapshots
/// taken later are at or above `max_seq` (a build's versions were all
/// published before it began: a memtable is frozen under the writer
/// role, after its last write's sequence number is). With no snapshot
/// below `max_seq`, [`retain`] kept one version per key, and with
/// `bottommost` no tombstone: there is nothing left whose order the
/// sequence numbers would decide.
pub(crate) fn forgets_seqs(snapshots: &[u64], bottommost: bool, max_seq: u64) -> bool {
    bottommost && snapshots.first().is_none_or(|&oldest| oldest >= max_seq)
}

/// Turns the puts of `versions` expired at `now` into tombstones with
/// the same sequence numbers (and no deadline).
pub(crate) fn expire(versions: &mut [(u64, ValueRef)], now: u64) {
    for (t, v) in versions.iter_mut() {
        if tag_kind(*t) == Kind::Put && expired(v.deadline, now) {
            *t = tag(tag_seq(*t), Kind::Delete);
            v.deadline = NO_DEADLINE;
        }
    }
}

/// A frozen memtable as a build input. It holds references to the
/// memtable's nodes, not copies of the keys or values: a value is copied
/// only when the builder asks for it.
pub(crate) struct MemSource<'a> {
    groups: Vec<MemGroup<'a>>,
    /// Every group's versions, one run after another (a vector per group
    /// was an allocation per key: 63,440 of them in a flush of Debian
    /// records).
    versions: Vec<(u64, ValueRef)>,
    entries: Vec<MemEntry<'a>>,
    /// The oldest live snapshot's sequence number, if any.
    oldest_snapshot: Option<u64>,
    bottommost: bool,
}

/// One key of a [`MemSource`] and where the versions of it a build keeps
/// are in `versions`.
struct MemGroup<'a> {
    key: &'a [u8],
    versions: std::ops::Range<usize>,
}

impl<'a> MemSource<'a> {
    /// The versions of `mem` that a build at time `now` keeps.
    pub(crate) fn new(mem: &'a Memtable, snapshots: &[u64], bottommost: bool, now: u64) -> Self {
        let mut entries: Vec<MemEntry<'a>> = Vec::new();
        let mut groups: Vec<MemGroup<'a>> = Vec::new();
        let mut versions: Vec<(u64, ValueRef)> = Vec::new();
        // The key being gathered and its versions so far (emptied into
        // `versions` when the next key starts).
        let mut pending: Option<&'a [u8]> = None;
        let mut gathered: Vec<(u64, ValueRef)> = Vec::new();
        let mut finish = |key: Option<&'a [u8]>, gathered: &mut Vec<(u64, ValueRef)>| {
            if let Some(key) = key {
                expire(gathered, now);
                retain(gathered, snapshots, bottommost);
                if !gathered.is_empty() {
                    let start = versions.len();
                    versions.append(gathered);
                    groups.push(MemGroup {
                        key,
                        versions: start..versions.len(),
                    });
                }
            }
        };
        for e in mem.versions() {
            if pending != Some(e.key()) {
                finish(pending.replace(e.key()), &mut gathered);
            }
            gathered.push((
                e.tag(),
                ValueRef {
                    src: 0,
                    index: entries.len() as u64,
                    deadline: e.deadline(),
                },
            ));
            entries.push(e);
        }
        finish(pending, &mut gathered);
        MemSource {
            groups,
            versions,
            entries,
            oldest_snapshot: snapshots.first().copied(),
            bottommost,
        }
    }
}

impl GroupSource for MemSource<'_> {
    fn groups(&self) -> Box<dyn Iterator<Item = Result<Group<'_>>> + '_> {
        Box::new(self.groups.iter().map(|g| {
            Ok(Group {
                key: Cow::Borrowed(g.key),
                versions: Cow::Borrowed(&self.versions[g.versions.clone()]),
            })
        }))
    }

    fn value(&self, v: &ValueRef, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        out.extend_from_slice(self.value_in_memory(v).unwrap_or_default());
        Ok(())
    }

    fn value_in_memory(&self, v: &ValueRef) -> Option<&[u8]> {
        self.entries.get(v.index as usize).map(|e| e.value())
    }

    fn forgets_seqs(&self, max_seq: u64) -> bool {
        forgets_seqs(self.oldest_snapshot.as_slice(), self.bottommost, max_seq)
    }
}

/// Adjacent segments merged by key.
pub(crate) struct MergeSource {
    /// Oldest first, as in the manifest.
    segments: Vec<Arc<Segment>>,
    /// Per segment: its records are read in key order (see
    /// `segment/readahead.rs`).
    ahead: Vec<ReadAhead>,
    snapshots: Vec<u64>,
    bottommost: bool,
    /// The build's time, against which deadlines are judged.
    now: u64,
}

impl MergeSource {
    pub(crate) fn new(
        segments: Vec<Arc<Segment>>,
        snapshots: Vec<u64>,
        bottommost: bool,
        now: u64,
    ) -> Self {
        MergeSource {
            ahead: segments.iter().map(|_| ReadAhead::default()).collect(),
            segments,
            snapshots,
            bottommost,
            now,
        }
    }
}

impl GroupSource for MergeSource {
    fn groups(&self) -> Box<dyn Iterator<Item = Result<Group<'_>>> + '_> {
        let mut heads: Vec<pith_trie::Keys<'_, '_>> =
            self.segments.iter().map(|s| s.trie().iter()).collect();
        let mut current: Vec<Option<(u64, Vec<u8>)>> = heads.iter_mut().map(|h| h.next()).collect();
        Box::new(std::iter::from_fn(move || loop {
            let key = current.iter().flatten().map(|(_, k)| k).min()?.clone();
            let mut versions: Vec<(u64, ValueRef)> = Vec::new();
            // Newest segment first, so versions come out newest first.
            for (src, slot) in current.iter_mut().enumerate().rev() {
                if slot.as_ref().is_some_and(|(_, k)| *k == key) {
                    if let Some((id, _)) = slot.take() {
                        let seg = &self.segments[src];
                        versions.extend(seg.versions(id).map(|(tag, r)| {
                            (
                                tag,
                                ValueRef {
                                    src: src as u32,
                                    index: r,
                                    deadline: seg.deadline(r),
                                },
                            )
                        }));
                    }
                    *slot = heads[src].next();
                }
            }
            versions.sort_by_key(|v| std::cmp::Reverse(v.0));
            expire(&mut versions, self.now);
            retain(&mut versions, &self.snapshots, self.bottommost);
            if !versions.is_empty() {
                return Some(Ok(Group {
                    key: Cow::Owned(key),
                    versions: Cow::Owned(versions),
                }));
            }
        }))
    }

    fn value(&self, v: &ValueRef, out: &mut Vec<u8>) -> Result<()> {
        let src = v.src as usize;
        self.segments[src].read_ahead(v.index, &self.ahead[src]);
        self.segments[src].decode(v.index, out)
    }

    fn encoded(
        &self,
        v: &ValueRef,
        model: pith_zip::ModelRef,
    ) -> Result<Option<pith_zip::Encoded<'_>>> {
        let src = v.src as usize;
        self.segments[src].read_ahead(v.index, &self.ahead[src]);
        self.segments[src].encoded(v.index, model)
    }

    fn forgets_seqs(&self, max_seq: u64) -> bool {
        forgets_seqs(&self.snapshots, self.bottommost, max_seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seqs(v: &[(u64, ())]) -> Vec<u64> {
        v.iter().map(|x| tag_seq(x.0)).collect()
    }

    #[test]
    fn retain_keeps_what_snapshots_see() {
        let mk = |s: &[(u64, Kind)]| s.iter().map(|&(q, k)| (tag(q, k), ())).collect::<Vec<_>>();
        let all = [
            (9, Kind::Put),
            (6, Kind::Delete),
            (4, Kind::Put),
            (2, Kind::Put),
        ];
        let mut v = mk(&all);
        retain(&mut v, &[], false);
        assert_eq!(seqs(&v), vec![9]);
        let mut v = mk(&all);
        retain(&mut v, &[5], false);
        assert_eq!(seqs(&v), vec![9, 4]);
        let mut v = mk(&all);
        retain(&mut v, &[3, 7], false);
        assert_eq!(seqs(&v), vec![9, 6, 2]);
        let mut v = mk(&all);
        retain(&mut v, &[1], false);
        assert_eq!(seqs(&v), vec![9]);
        // Bottommost: a trailing tombstone goes.
        let mut v = mk(&[(9, Kind::Delete), (4, Kind::Put)]);
        retain(&mut v, &[], true);
        assert!(v.is_empty());
        let mut v = mk(&[(9, Kind::Put), (6, Kind::Delete), (4, Kind::Put)]);
        retain(&mut v, &[7], true);
        assert_eq!(seqs(&v), vec![9]);
    }

    #[test]
    fn expired_puts_become_tombstones_that_still_hide_older_versions() {
        let at = |deadline| ValueRef {
            src: 0,
            index: 0,
            deadline,
        };
        let mut v = vec![
            (tag(9, Kind::Put), at(100)),
            (tag(6, Kind::Put), at(NO_DEADLINE)),
            (tag(4, Kind::Put), at(50)),
        ];
        expire(&mut v, 100);
        let kinds: Vec<Kind> = v.iter().map(|x| tag_kind(x.0)).collect();
        assert_eq!(kinds, vec![Kind::Delete, Kind::Put, Kind::Delete]);
        assert!(v
            .iter()
            .all(|x| tag_kind(x.0) == Kind::Put || x.1.deadline == NO_DEADLINE));
        // Not bottommost: the tombstone stays, so nothing older shows.
        let mut kept = v.clone();
        retain(&mut kept, &[], false);
        assert_eq!(kept.len(), 1);
        assert_eq!(tag_kind(kept[0].0), Kind::Delete);
        // Bottommost: the key goes; a snapshot at 7 still sees version 6.
        let mut kept = v.clone();
        retain(&mut kept, &[], true);
        assert!(kept.is_empty());
        let mut kept = v;
        retain(&mut kept, &[7], true);
        let seqs: Vec<u64> = kept.iter().map(|x| tag_seq(x.0)).collect();
        assert_eq!(seqs, vec![9, 6]);
    }
}
