//! The skip list's hash index: a point read in a node or two.
//!
//! An open-addressing table (linear probing) of the *newest* version of
//! each key, by the key's hash; each version points through
//! `Header::older` at the next older version of its key. A read probes
//! for its key (comparing full hashes before keys), then walks down the
//! versions to the first its snapshot sees. A key rewritten many times
//! lengthens only its own version chain, never another key's probe.
//!
//! The list builds the index when it reaches `INDEX_FROM` versions: a
//! table sized for them is filled from the list and only then published
//! (until then, readers find no table and search the list). The table
//! doubles when two thirds full: the writer copies the slots into a table
//! twice the size and publishes it; readers that loaded the old one
//! finish on it. Old tables are kept until the list drops (no reader can
//! be tracked); they add at most the current table's size. A doubling
//! copies the table under the writer lock: about a millisecond for the
//! 128K slots of a 64 MiB memtable of Debian records, once.
//!
//! Invariants (every change is made under the list's writer lock, through
//! the [`Tables`] it owns):
//! * a table holds each key at most once, as its version with the highest
//!   tag (of equal tags, the one inserted last, as the list's order has
//!   it); a key's versions descend by tag along `older`;
//! * a slot, once filled, keeps its hash and key; only the version it
//!   points at changes, to a newer version of the same key;
//! * a slot's hash is stored before its node, and a node (or table) is
//!   fully written before it is published, with `Release`; readers load
//!   with `Acquire`;
//! * a published table holds every key of the tables before it, each at
//!   a version no older than theirs.
//!
//! A reader's snapshot was taken before it loaded the table, and every
//! version its snapshot sees was inserted before that snapshot was
//! published; so whichever table it loaded holds them all.
//!
//! Thread safety: `Sync`; readers take no lock.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering as AtomicOrdering};

use super::{Entry, Header, Node};

/// Fewest slots of a table.
const FIRST_SLOTS: usize = 8;

/// The table readers use (null before the first insert); see the module
/// docs.
pub(super) struct HashIndex {
    current: AtomicPtr<Table>,
}

/// What only the writer touches: every table made (the last one current,
/// each from `Box::into_raw`, freed on drop) and the keys held.
#[derive(Default)]
pub(super) struct Tables {
    all: Vec<NonNull<Table>>,
    keys: usize,
}

impl Tables {
    /// Whether the index has a table (it is kept up from then on).
    pub(super) fn built(&self) -> bool {
        !self.all.is_empty()
    }

    fn current(&self) -> Option<&Table> {
        // SAFETY: every pointer in `all` is a live table of ours.
        self.all.last().map(|t| unsafe { t.as_ref() })
    }
}

impl Drop for Tables {
    fn drop(&mut self) {
        for t in self.all.drain(..) {
            // SAFETY: leaked from a `Box` in `grow`, freed once; the
            // list (and so every reader) is gone.
            drop(unsafe { Box::from_raw(t.as_ptr()) });
        }
    }
}

struct Table {
    slots: Box<[Slot]>,
    mask: usize,
}

struct Slot {
    hash: AtomicU64,
    /// The key's newest version; null while the slot is empty.
    node: AtomicPtr<Header>,
}

impl Table {
    fn new(slots: usize) -> Box<Table> {
        Box::new(Table {
            slots: (0..slots)
                .map(|_| Slot {
                    hash: AtomicU64::new(0),
                    node: AtomicPtr::new(std::ptr::null_mut()),
                })
                .collect(),
            mask: slots - 1,
        })
    }

    fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
    }

    /// The slot holding `key`, or the empty slot where it would go.
    fn probe(&self, key: &[u8], hash: u64) -> &Slot {
        let mut i = hash as usize & self.mask;
        loop {
            let slot = &self.slots[i];
            let Some(n) = NonNull::new(slot.node.load(AtomicOrdering::Acquire)) else {
                return slot;
            };
            if slot.hash.load(AtomicOrdering::Relaxed) == hash && Entry::new(n).key() == key {
                return slot;
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// `node`'s header.
///
/// # Safety
/// `node` must be a fully written node of the list.
unsafe fn header<'a>(node: Node) -> &'a Header {
    // SAFETY: per the contract; nodes live as long as the list.
    unsafe { node.as_ref() }
}

impl HashIndex {
    /// An index with no table yet ([`HashIndex::build`] makes the first).
    pub(super) fn new() -> Self {
        HashIndex {
            current: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The newest version of `key` (hash `hash`) whose tag is at most
    /// `tag`; `None` when there is no index yet (search the list).
    pub(super) fn get(&self, key: &[u8], hash: u64, tag: u64) -> Option<Option<Node>> {
        // SAFETY: a published table is fully written and lives as long as
        // the list (the writer's `Tables` own it).
        let table = unsafe { self.current.load(AtomicOrdering::Acquire).as_ref() }?;
        Some(Self::newest_visible(table, key, hash, tag))
    }

    fn newest_visible(table: &Table, key: &[u8], hash: u64, tag: u64) -> Option<Node> {
        let mut version = NonNull::new(table.probe(key, hash).node.load(AtomicOrdering::Acquire));
        while let Some(v) = version {
            // SAFETY: tables and version chains hold only fully written
            // nodes.
            let h = unsafe { header(v) };
            if h.tag <= tag {
                return Some(v);
            }
            version = NonNull::new(h.older.load(AtomicOrdering::Acquire));
        }
        None
    }

    /// Makes and publishes the first table, holding `versions` (every
    /// version of the list: node, key, hash, tag), `count` of them;
    /// returns its bytes.
    ///
    /// # Safety
    /// As for [`HashIndex::add`], for every version; the index must have
    /// no table yet.
    pub(super) unsafe fn build<'k>(
        &self,
        tables: &mut Tables,
        versions: impl Iterator<Item = (Node, &'k [u8], u64, u64)>,
        count: usize,
    ) -> usize {
        let table = Table::new((count * 3 / 2 + 1).next_power_of_two().max(FIRST_SLOTS));
        for (node, key, hash, tag) in versions {
            // SAFETY: forwarded contract; the table is not published yet.
            tables.keys += usize::from(unsafe { place(&table, node, key, hash, tag) });
        }
        self.publish(tables, table)
    }

    /// Indexes `node`, a version of `key` (hash `hash`) with tag `tag`;
    /// returns the bytes of any table it made.
    ///
    /// # Safety
    /// `node` must be a fully written node of the list, not yet indexed,
    /// with a null `older`; `tables` must be this index's, built, and the
    /// caller must hold the list's writer lock.
    pub(super) unsafe fn add(
        &self,
        tables: &mut Tables,
        node: Node,
        key: &[u8],
        hash: u64,
        tag: u64,
    ) -> usize {
        let mut made = 0;
        if (tables.keys + 1) * 3 > tables.current().map_or(0, |t| t.slots.len()) * 2 {
            made = self.grow(tables);
        }
        let Some(table) = tables.current() else {
            unreachable!("grow made a table");
        };
        // SAFETY: forwarded contract.
        let new_key = unsafe { place(table, node, key, hash, tag) };
        tables.keys += usize::from(new_key);
        made
    }

    /// Publishes a table twice the current one's size (or the first)
    /// holding its keys; returns its bytes.
    fn grow(&self, tables: &mut Tables) -> usize {
        let slots = tables.current().map_or(FIRST_SLOTS, |t| t.slots.len() * 2);
        let next = Table::new(slots);
        for old in tables.current().iter().flat_map(|t| t.slots.iter()) {
            let node = old.node.load(AtomicOrdering::Relaxed);
            if let Some(n) = NonNull::new(node) {
                let hash = old.hash.load(AtomicOrdering::Relaxed);
                let slot = next.probe(Entry::new(n).key(), hash);
                slot.hash.store(hash, AtomicOrdering::Relaxed);
                slot.node.store(node, AtomicOrdering::Relaxed);
            }
        }
        self.publish(tables, next)
    }

    /// Makes `table` (filled) the current one; returns its bytes.
    fn publish(&self, tables: &mut Tables, table: Box<Table>) -> usize {
        let bytes = table.bytes();
        let published = NonNull::from(Box::leak(table));
        tables.all.push(published);
        self.current
            .store(published.as_ptr(), AtomicOrdering::Release);
        bytes
    }
}

/// Puts `node`, a version of `key` (hash `hash`) with tag `tag`, in
/// `table`; true when `key` is new to it.
///
/// # Safety
/// As for [`HashIndex::add`]; `table` must have room for one more key.
unsafe fn place(table: &Table, node: Node, key: &[u8], hash: u64, tag: u64) -> bool {
    let slot = table.probe(key, hash);
    // SAFETY: per the contract.
    let new = unsafe { header(node) };
    let Some(newest) = NonNull::new(slot.node.load(AtomicOrdering::Relaxed)) else {
        slot.hash.store(hash, AtomicOrdering::Relaxed);
        slot.node.store(node.as_ptr(), AtomicOrdering::Release);
        return true;
    };
    // SAFETY: tables hold only fully written nodes.
    let top = unsafe { header(newest) };
    if tag >= top.tag {
        new.older.store(newest.as_ptr(), AtomicOrdering::Relaxed);
        slot.node.store(node.as_ptr(), AtomicOrdering::Release);
        return false;
    }
    // Older than the key's newest (the engine inserts in tag order, so
    // only tests get here): into the version chain, before the first
    // version with a tag at most its own.
    let mut at = top;
    loop {
        let next = NonNull::new(at.older.load(AtomicOrdering::Relaxed));
        // SAFETY: version chains hold only fully written nodes.
        match next.map(|n| unsafe { header(n) }) {
            Some(h) if h.tag > tag => at = h,
            _ => {
                new.older.store(
                    next.map_or(std::ptr::null_mut(), NonNull::as_ptr),
                    AtomicOrdering::Relaxed,
                );
                at.older.store(node.as_ptr(), AtomicOrdering::Release);
                return false;
            }
        }
    }
}
