//! An ordered map of versions for the memtable: a skip list whose nodes
//! live in an [`Arena`], with one writer and any number of lock-free
//! readers, after LevelDB's `db/skiplist.h`.
//!
//! A node holds one version: its key, tag (`seq << 8 | kind`), deadline
//! and value, laid out in one allocation of the node arena when the value
//! is at most [`INLINE_VALUE_BYTES`]:
//!
//! ```text
//! Header (tag, deadline, key_len, value_len, height, value: null, older)
//!   | next[height] | key | value
//! ```
//!
//! A longer value goes to an arena of its own and the header points at
//! it. So the nodes a search walks lie close together (a few dozen bytes
//! each, not a kilobyte) and stay in cache: with 1 KB values inside the
//! nodes, every step of a search was a cache miss, and an insert or a
//! lookup in a full 64 MiB memtable cost 1.1-1.4 us; a value costs one
//! miss, once, when it is read.
//!
//! Order is key ascending, then tag descending (newest version first).
//! Written by hand rather than taken from a crate: keys sit in the node
//! and values in bump-allocated memory beside it (a general-purpose map
//! allocates them one by one and reaches them through two more pointers),
//! lookups compare against a borrowed key without building a probe, and
//! nodes are never freed one by one, so no epoch or reference count is
//! needed.
//!
//! Invariants:
//! * nodes and values are never removed or moved, and a node's header, key
//!   and value never change after it is linked: only its `next` pointers
//!   do; a header's `value` is null exactly when the value is inline;
//! * every level is a sorted list, and level `i + 1` is a sublist of level
//!   `i`; a node is linked bottom up, each link published with `Release`
//!   after the node is fully written, and readers load links with
//!   `Acquire`, so a reader that reaches a node sees all of it;
//! * `height` only grows; a reader that sees a stale height starts lower,
//!   one that sees a new height with unset head links skips the level.
//!
//! Point reads do not walk the list once it holds [`INDEX_FROM`] versions:
//! a hash index ([`index`]) finds each key's newest version, and each
//! version points at the next older one of its key, so [`SkipList::get`]
//! touches a node or two instead of the twenty-odd of a search (each a
//! cache miss in a full memtable). A smaller list is searched: the index
//! would cost more memory than it saves time there (a table's many small
//! families each have a memtable).
//!
//! Thread safety: [`SkipList::insert`] serializes writers on a lock (the
//! engine has one writer at a time anyway, the group-commit leader); reads
//! take no lock and may run during an insert. Everything a read returns
//! borrows the list, so it cannot outlive the arena.

use std::cmp::Ordering;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Mutex, PoisonError};

use super::arena::Arena;

/// Tallest tower; with a branching factor of 4, enough for 4^12 (16M)
/// versions before searches degrade.
const MAX_HEIGHT: usize = 12;

/// Versions from which the list keeps a hash index (built then from the
/// versions held, kept up by every insert after).
pub(crate) const INDEX_FROM: usize = 256;

/// Longest value kept inside its node; longer ones go to the value arena.
/// Short values (counters, index entries, deletes) cost no extra read;
/// long ones would spread the nodes a search walks apart.
pub(crate) const INLINE_VALUE_BYTES: usize = 32;

/// One node's fixed part; its `next` links, key and (inline) value follow
/// it.
#[repr(C)]
struct Header {
    tag: u64,
    deadline: u64,
    key_len: u32,
    value_len: u32,
    height: u32,
    _pad: u32,
    /// The value in the value arena; null when it follows the key.
    value: *const u8,
    /// The next older version of the same key, if any (the hash index's
    /// version chain; see [`index`]).
    older: AtomicPtr<Header>,
}

const HEADER_BYTES: usize = std::mem::size_of::<Header>();
const LINK_BYTES: usize = std::mem::size_of::<AtomicPtr<Header>>();

/// A linked node. Only ever points at a fully written node in the arena.
type Node = NonNull<Header>;

/// A version in the list, borrowed from it.
#[derive(Clone, Copy)]
pub(crate) struct Entry<'a> {
    node: Node,
    _list: PhantomData<&'a SkipList>,
}

// SAFETY: an entry is a shared borrow of a linked node, which never
// changes but for its atomic links; the list is `Sync`, so sharing or
// sending such a borrow is sound (as `&T` is `Send` for `T: Sync`).
unsafe impl Send for Entry<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for Entry<'_> {}

impl<'a> Entry<'a> {
    fn new(node: Node) -> Self {
        Entry {
            node,
            _list: PhantomData,
        }
    }

    /// The entry with its borrow of the list erased.
    ///
    /// # Safety
    /// The caller must keep the list alive (and not dropped) for as long
    /// as it uses the result or anything read through it: nodes live
    /// until the list drops.
    pub(crate) unsafe fn detach(self) -> Entry<'static> {
        Entry::new(self.node)
    }

    fn header(&self) -> &'a Header {
        // SAFETY: an entry is made only from linked nodes, which are fully
        // written, never change and live as long as the list it borrows.
        unsafe { self.node.as_ref() }
    }

    /// The user key.
    pub(crate) fn key(&self) -> &'a [u8] {
        let h = self.header();
        // SAFETY: the key follows the links, `key_len` bytes, inside the
        // node's allocation (see `SkipList::insert`).
        unsafe {
            let at = self.node.cast::<u8>().add(key_offset(h.height as usize));
            std::slice::from_raw_parts(at.as_ptr(), h.key_len as usize)
        }
    }

    /// `seq << 8 | kind`.
    pub(crate) fn tag(&self) -> u64 {
        self.header().tag
    }

    /// When the version expires (`NO_DEADLINE`: never).
    pub(crate) fn deadline(&self) -> u64 {
        self.header().deadline
    }

    /// The value (empty for a delete).
    pub(crate) fn value(&self) -> &'a [u8] {
        let h = self.header();
        if !h.value.is_null() {
            // SAFETY: a non-null `value` points at `value_len` bytes of the
            // value arena, written before the node was linked and kept as
            // long as the list.
            return unsafe { std::slice::from_raw_parts(h.value, h.value_len as usize) };
        }
        // SAFETY: an inline value follows the key, `value_len` bytes,
        // inside the node's allocation.
        unsafe {
            let at = self
                .node
                .cast::<u8>()
                .add(key_offset(h.height as usize) + h.key_len as usize);
            std::slice::from_raw_parts(at.as_ptr(), h.value_len as usize)
        }
    }

    /// The next version in order, if any.
    pub(crate) fn next(&self) -> Option<Entry<'a>> {
        // SAFETY: `self.node` is linked, so its links are initialized.
        unsafe { load_next(self.node, 0) }.map(Entry::new)
    }
}

/// Byte offset of the key in a node of `height` links.
fn key_offset(height: usize) -> usize {
    HEADER_BYTES + height * LINK_BYTES
}

/// Link `level` of `node`.
///
/// # Safety
/// `node` must point at a node of the list (or its head) with more than
/// `level` links whose links were initialized.
unsafe fn link<'a>(node: Node, level: usize) -> &'a AtomicPtr<Header> {
    // SAFETY: per the contract, link `level` lies inside the node.
    unsafe {
        &*node
            .cast::<u8>()
            .add(HEADER_BYTES + level * LINK_BYTES)
            .cast::<AtomicPtr<Header>>()
            .as_ptr()
    }
}

/// The node after `node` on `level`, if any (an `Acquire` load).
///
/// # Safety
/// As for [`link`].
unsafe fn load_next(node: Node, level: usize) -> Option<Node> {
    // SAFETY: forwarded contract.
    NonNull::new(unsafe { link(node, level) }.load(AtomicOrdering::Acquire))
}

/// What only the writer touches.
struct Writer {
    /// Nodes: headers, links, keys, inline values.
    arena: Arena,
    /// Values longer than [`INLINE_VALUE_BYTES`].
    values: Arena,
    /// xorshift state for tower heights.
    rng: u64,
    /// The hash index's tables.
    tables: index::Tables,
}

/// The skip list. See the module docs.
pub(crate) struct SkipList {
    head: Node,
    index: index::HashIndex,
    /// The key hash the index is built on (callers of [`SkipList::get`]
    /// pass the same function's hash).
    hash: fn(&[u8]) -> u64,
    /// Versions at which the index is built.
    index_from: usize,
    height: AtomicUsize,
    len: AtomicUsize,
    /// Bytes of nodes and values (headers, links, keys, values, padding)
    /// and of the hash index's tables.
    bytes: AtomicUsize,
    writer: Mutex<Writer>,
}

// SAFETY: the nodes `head` reaches and the values they point at live in
// the arenas the list owns; they are written only under the writer lock
// before being published with
// `Release` stores, and read through `Acquire` loads, so sharing the list
// across threads is sound (see the module docs).
unsafe impl Send for SkipList {}
// SAFETY: as for `Send`.
unsafe impl Sync for SkipList {}

impl SkipList {
    /// An empty list indexing keys by `hash` from [`INDEX_FROM`] versions.
    pub(crate) fn new(hash: fn(&[u8]) -> u64) -> Self {
        SkipList::with_index_from(hash, INDEX_FROM)
    }

    /// An empty list indexing keys by `hash` from `index_from` versions.
    pub(crate) fn with_index_from(hash: fn(&[u8]) -> u64, index_from: usize) -> Self {
        let mut arena = Arena::new();
        let head = arena.alloc(key_offset(MAX_HEIGHT)).cast::<Header>();
        // SAFETY: `head` is fresh, zeroed, aligned and large enough for a
        // header and MAX_HEIGHT links; null links mean "no next".
        unsafe {
            head.as_ptr().write(Header {
                tag: 0,
                deadline: 0,
                key_len: 0,
                value_len: 0,
                height: MAX_HEIGHT as u32,
                _pad: 0,
                value: std::ptr::null(),
                older: AtomicPtr::new(std::ptr::null_mut()),
            })
        };
        SkipList {
            head,
            index: index::HashIndex::new(),
            hash,
            index_from,
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            writer: Mutex::new(Writer {
                arena,
                values: Arena::new(),
                rng: 0x9E37_79B9_7F4A_7C15,
                tables: index::Tables::default(),
            }),
        }
    }

    /// Versions held.
    pub(crate) fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Relaxed)
    }

    /// Bytes of the nodes and values held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(AtomicOrdering::Relaxed)
    }

    /// Bytes of memory reserved for nodes and values (mapped, not all
    /// touched).
    #[cfg(test)]
    pub(crate) fn reserved(&self) -> usize {
        let w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        w.arena.reserved() + w.values.reserved()
    }

    /// Adds a version. A version with the same key and tag as one already
    /// held (the engine never makes one) is placed before it.
    pub(crate) fn insert(&self, key: &[u8], tag: u64, deadline: u64, value: &[u8]) {
        let key_len = u32::try_from(key.len()).expect("memtable key under 4 GiB");
        let value_len = u32::try_from(value.len()).expect("memtable value under 4 GiB");
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let mut prev = [self.head; MAX_HEIGHT];
        self.seek(key, tag, Some(&mut prev));
        let height = random_height(&mut w.rng);
        let top = self.height.load(AtomicOrdering::Relaxed);
        if height > top {
            // `prev` already holds the head on the new levels.
            self.height.store(height, AtomicOrdering::Relaxed);
        }
        let inline = value.len() <= INLINE_VALUE_BYTES;
        let apart = match inline {
            true => std::ptr::null(),
            false => {
                let at = w.values.alloc(value.len());
                // SAFETY: `at` is fresh and `value.len()` bytes long; no
                // node points at it yet.
                unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), at.as_ptr(), value.len()) };
                at.as_ptr().cast_const()
            }
        };
        let node_size = key_offset(height) + key.len() + if inline { value.len() } else { 0 };
        let node = w.arena.alloc(node_size).cast::<Header>();
        // SAFETY: `node` is fresh, zeroed (null links), aligned and
        // `node_size` bytes long: header, `height` links, key, and the
        // value when inline. Nothing links to it yet, so no reader can see
        // these writes in progress.
        unsafe {
            node.as_ptr().write(Header {
                tag,
                deadline,
                key_len,
                value_len,
                height: height as u32,
                _pad: 0,
                value: apart,
                older: AtomicPtr::new(std::ptr::null_mut()),
            });
            let at = node.cast::<u8>().add(key_offset(height));
            std::ptr::copy_nonoverlapping(key.as_ptr(), at.as_ptr(), key.len());
            if inline {
                let at = at.add(key.len());
                std::ptr::copy_nonoverlapping(value.as_ptr(), at.as_ptr(), value.len());
            }
        }
        for (level, p) in prev.iter().enumerate().take(height) {
            // SAFETY: `p` is the head or a linked node taller than `level`
            // (the seek stopped at it on that level); `node` has `height`
            // initialized links. The writer lock makes this the only
            // writer, so the relaxed load reads the latest link, and the
            // `Release` store publishes the fully written node.
            unsafe {
                let after = link(*p, level).load(AtomicOrdering::Relaxed);
                link(node, level).store(after, AtomicOrdering::Relaxed);
                link(*p, level).store(node.as_ptr(), AtomicOrdering::Release);
            }
        }
        let len = self.len.load(AtomicOrdering::Relaxed) + 1;
        let index_bytes = if w.tables.built() {
            // SAFETY: `node` is fully written and linked, with a null
            // `older`, not indexed; the writer lock is held and the tables
            // are this list's.
            unsafe {
                self.index
                    .add(&mut w.tables, node, key, (self.hash)(key), tag)
            }
        } else if len >= self.index_from {
            let versions = self
                .iter()
                .map(|e| (e.node, e.key(), (self.hash)(e.key()), e.tag()));
            // SAFETY: every version of the list (`node` among them) is
            // fully written and linked, with a null `older`, none indexed;
            // the writer lock is held and the tables are this list's.
            unsafe { self.index.build(&mut w.tables, versions, len) }
        } else {
            0
        };
        self.len.fetch_add(1, AtomicOrdering::Relaxed);
        let value_size = if inline { 0 } else { value.len() };
        let size = node_size.next_multiple_of(8) + value_size.next_multiple_of(8);
        self.bytes
            .fetch_add(size + index_bytes, AtomicOrdering::Relaxed);
    }

    /// The newest version of `key` (whose hash, by the list's function,
    /// is `hash`) with a tag at most `tag`: what `seek_ge(key, tag)` finds
    /// when it is of `key`, through the index when there is one.
    pub(crate) fn get(&self, key: &[u8], hash: u64, tag: u64) -> Option<Entry<'_>> {
        match self.index.get(key, hash, tag) {
            Some(found) => found.map(Entry::new),
            None => self.search(key, tag),
        }
    }

    /// [`SkipList::get`] by a search of the list, without the index.
    pub(crate) fn search(&self, key: &[u8], tag: u64) -> Option<Entry<'_>> {
        self.seek_ge(key, tag).filter(|e| e.key() == key)
    }

    /// The first version at or after (`key`, `tag`) in the list's order.
    pub(crate) fn seek_ge(&self, key: &[u8], tag: u64) -> Option<Entry<'_>> {
        self.seek(key, tag, None).map(Entry::new)
    }

    /// The last version before (`key`, `tag`) in the list's order.
    pub(crate) fn seek_lt(&self, key: &[u8], tag: u64) -> Option<Entry<'_>> {
        self.last_before(|n| before(n, key, tag))
    }

    /// The last version.
    pub(crate) fn last(&self) -> Option<Entry<'_>> {
        self.last_before(|_| true)
    }

    /// The first version.
    pub(crate) fn first(&self) -> Option<Entry<'_>> {
        // SAFETY: the head has MAX_HEIGHT initialized links.
        unsafe { load_next(self.head, 0) }.map(Entry::new)
    }

    /// Every version in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Entry<'_>> + '_ {
        std::iter::successors(self.first(), Entry::next)
    }

    /// The first node not before (`key`, `tag`), recording in `prev` the
    /// last node before it on each level.
    fn seek(&self, key: &[u8], tag: u64, prev: Option<&mut [Node; MAX_HEIGHT]>) -> Option<Node> {
        self.descend(|n| before(n, key, tag), prev).1
    }

    /// The last node for which `is_before` holds (it must hold for a
    /// prefix of the list).
    fn last_before(&self, is_before: impl Fn(Node) -> bool) -> Option<Entry<'_>> {
        let (x, _) = self.descend(is_before, None);
        (x != self.head).then(|| Entry::new(x))
    }

    /// Walks down from the head along the prefix of nodes for which
    /// `is_before` holds: returns the last of them (the head when none)
    /// and the node after it, and records in `prev` the last of them on
    /// each level.
    fn descend(
        &self,
        is_before: impl Fn(Node) -> bool,
        mut prev: Option<&mut [Node; MAX_HEIGHT]>,
    ) -> (Node, Option<Node>) {
        let mut x = self.head;
        let mut level = self
            .height
            .load(AtomicOrdering::Relaxed)
            .clamp(1, MAX_HEIGHT)
            - 1;
        loop {
            // SAFETY: `x` is the head or a node reached on `level`, so it
            // has more than `level` initialized links.
            let next = unsafe { load_next(x, level) };
            match next {
                Some(n) if is_before(n) => x = n,
                _ => {
                    if let Some(p) = prev.as_deref_mut() {
                        p[level] = x;
                    }
                    if level == 0 {
                        return (x, next);
                    }
                    level -= 1;
                }
            }
        }
    }
}

/// Whether `node` sorts before (`key`, `tag`): key ascending, tag
/// descending.
fn before(node: Node, key: &[u8], tag: u64) -> bool {
    let e = Entry::new(node);
    match e.key().cmp(key) {
        Ordering::Less => true,
        Ordering::Greater => false,
        Ordering::Equal => e.tag() > tag,
    }
}

/// A tower height: 1 with probability 3/4, each further level 1/4 as
/// likely, at most [`MAX_HEIGHT`].
fn random_height(rng: &mut u64) -> usize {
    let mut x = *rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *rng = x;
    // Two bits per level: each pair of zero bits is another level.
    let levels = (x.trailing_zeros() / 2) as usize + 1;
    levels.min(MAX_HEIGHT)
}

mod index;
#[cfg(test)]
mod tests;
