//! Point reads of many keys in one call ([`crate::DB::multi_get_cf_at_with`]),
//! with the cache misses of the reads overlapped.
//!
//! A read of a settled family (empty memtables, one segment whose keys
//! are all live and visible at the snapshot: a bulk-loaded table's column
//! groups, any family after a full merge) walks the trie to the key's id,
//! then loads the record's offsets, then its stored bytes and their group
//! checksum, then decodes it: dependent loads, each a cache miss when
//! reads are random. One read at a time, the misses queue. Here the reads
//! go through a pipeline: read `i + LOOKAHEAD` is looked up and its
//! offsets prefetched, read `i + LOOKAHEAD / 2` has its stored bytes
//! prefetched, and read `i` is checked and decoded, by then from cache.
//! Reads of families that are not settled take the general path
//! (memtables, then segments newest first).
//!
//! Invariants: results are handed out in the order of the reads, each
//! what a lone get at the same snapshot returns (in a settled segment the
//! record of key id `i` is record `i`, its only visible version, a live
//! put); prefetches are hints and load nothing the reads do not.

use std::collections::VecDeque;

use crate::core::{State, Tree};
use crate::dbformat::{expired, tag_kind, Kind};
use crate::error::{Error, Result};
use crate::family::ColumnFamily;
use crate::segment::Segment;

/// Reads between a read's lookup and its decoding. Half of it is the
/// distance between the prefetch of its offsets and that of its bytes:
/// a few reads of work, enough for a miss to memory to land.
const LOOKAHEAD: usize = 8;

/// The one segment a read of `t` at `snap` needs when `t` is settled (no
/// memtable entry; one segment whose versions `snap` sees all, holding no
/// tombstone and no deadline, so every key in its trie is live and its
/// record is its newest version): `Some(None)` when `t` has no segment at
/// all, `None` when `t` is not settled.
pub(crate) fn settled_segment(t: &Tree, snap: u64) -> Option<Option<&Segment>> {
    if !t.memtables().all(|m| m.is_empty()) {
        return None;
    }
    match t.segments.as_slice() {
        [] => Some(None),
        [only] if only.all_keys_live() && only.max_seq() <= snap => Some(Some(only)),
        _ => None,
    }
}

/// The value of `key` in `t` at `snap` into `out` (it replaces its
/// contents, left unspecified when there is none); the deadline when the
/// key is live at `now`, `None` when it is absent, deleted or expired. The
/// walk of the engine's `get_in`, which stays separate: routed through
/// this one, a miss cost about 10 ns more (140 against 130 ns p50, `pith
/// bench get` on Debian, three alternating runs).
pub(crate) fn get_into(
    t: &Tree,
    key: &[u8],
    snap: u64,
    now: u64,
    out: &mut Vec<u8>,
) -> Result<Option<u64>> {
    let live = |tag: u64, deadline: u64| {
        (tag_kind(tag) == Kind::Put && !expired(deadline, now)).then_some(deadline)
    };
    let hash = crate::dbformat::key_hash(key);
    for m in std::iter::once(&t.mem).chain(t.frozen.iter().rev()) {
        if let Some(v) = m.get(key, hash, snap, now, true) {
            out.clear();
            out.extend_from_slice(&v.value);
            return Ok(live(v.tag, v.deadline));
        }
    }
    for s in t.segments.iter().rev() {
        if let Some((tag, deadline)) = s.get(key, hash, snap, now, Some(&mut *out))? {
            return Ok(live(tag, deadline));
        }
    }
    Ok(None)
}

/// Where a read will find its value.
enum Located<'s> {
    /// In a settled family: record `id` of the segment, or nowhere.
    Settled(Option<(&'s Segment, u64)>),
    /// In this family, through [`get_into`].
    General(&'s Tree),
}

/// A family's tree, and its one segment when it is settled.
struct Family<'s> {
    id: u32,
    tree: &'s Tree,
    settled: Option<Option<&'s Segment>>,
}

/// Where the read of `key` in `cf` will find its value, prefetching its
/// offsets when it is in a settled family's segment; `families` caches
/// what was learnt of each family.
fn locate<'s>(
    st: &'s State,
    snap: u64,
    families: &mut Vec<Family<'s>>,
    cf: &ColumnFamily,
    key: &[u8],
) -> Result<Located<'s>> {
    let f = match families.iter().position(|f| f.id == cf.id) {
        Some(at) => &families[at],
        None => {
            let tree = st.tree_of(cf)?;
            families.push(Family {
                id: cf.id,
                tree,
                settled: settled_segment(tree, snap),
            });
            &families[families.len() - 1]
        }
    };
    Ok(match f.settled {
        Some(seg) => {
            let found = seg.and_then(|s| Some((s, s.trie().lookup(key)?)));
            if let Some((s, id)) = found {
                s.prefetch_offsets(id);
            }
            Located::Settled(found)
        }
        None => Located::General(f.tree),
    })
}

/// Reads each `(family, key)` of `reads` in `st` at `snap` (deadlines
/// judged at `now`), calling `visit(i, value)` for the `i`-th in order.
pub(crate) fn multi_get_with<'a, K: AsRef<[u8]>, E: From<Error>>(
    st: &State,
    snap: u64,
    now: u64,
    reads: impl IntoIterator<Item = (&'a ColumnFamily, K)>,
    mut visit: impl FnMut(usize, Option<&[u8]>) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    // The families read, looked up once each (a batch names few).
    let mut families: Vec<Family<'_>> = Vec::new();
    let prefetch_record = |at: &Located<'_>| {
        if let Located::Settled(Some((s, id))) = at {
            s.prefetch_record(*id);
        }
    };
    let mut reads = reads.into_iter();
    let mut queue: VecDeque<(K, Located<'_>)> = VecDeque::with_capacity(LOOKAHEAD);
    let mut buf = Vec::new();
    for i in 0.. {
        while queue.len() < LOOKAHEAD {
            let Some((cf, key)) = reads.next() else { break };
            let at = locate(st, snap, &mut families, cf, key.as_ref())?;
            if i == 0 && queue.len() < LOOKAHEAD / 2 {
                // The first reads never reach the middle of the queue.
                prefetch_record(&at);
            }
            queue.push_back((key, at));
        }
        if let Some((_, at)) = queue.get(LOOKAHEAD / 2) {
            prefetch_record(at);
        }
        let Some((key, at)) = queue.pop_front() else {
            break;
        };
        let found = match at {
            Located::Settled(None) => false,
            Located::Settled(Some((s, id))) => {
                s.value(id, &mut buf)?;
                true
            }
            Located::General(t) => get_into(t, key.as_ref(), snap, now, &mut buf)?.is_some(),
        };
        visit(i, found.then_some(buf.as_slice()))?;
    }
    Ok(())
}
