//! A cursor that walks keys in order, forwards and backwards, from any position.
//!
//! The cursor keeps the path of edges from the root to the current terminal
//! and the key bytes along it, so `next` and `prev` move in amortized
//! constant time (each edge is entered and left once per full scan) instead
//! of rebuilding the key from its id. Positions are ids: `next` goes from id
//! `i` to `i + 1` because breadth-first terminals are mapped to key order.
//!
//! On dense integer keys (format version 4) a position is only its id, and
//! each move computes the key from the id.
//!
//! A cursor borrows its trie and is not shared between threads; make one
//! per thread (they are cheap).

use crate::edges::{LOUDS, TERM};
use crate::trie::Trie;

/// An ordered cursor over a trie's keys.
///
/// ```
/// let mut b = pith_trie::TrieBuilder::new();
/// for k in ["a", "ab", "b"] {
///     b.push(k.as_bytes()).unwrap();
/// }
/// let bytes = b.finish().unwrap();
/// let trie = pith_trie::Trie::open(bytes.as_bytes()).unwrap();
/// let mut c = trie.cursor();
/// c.seek(b"aa");
/// assert_eq!(c.key(), Some(&b"ab"[..]));
/// c.prev();
/// assert_eq!((c.id(), c.key()), (Some(0), Some(&b"a"[..])));
/// ```
#[derive(Clone, Debug)]
pub struct Cursor<'t, 'a> {
    trie: &'t Trie<'a>,
    /// Edges from the root to the current node, each with the key length before it.
    path: Vec<(usize, usize)>,
    key: Vec<u8>,
    id: Option<u64>,
}

impl<'t, 'a> Cursor<'t, 'a> {
    pub(crate) fn new(trie: &'t Trie<'a>) -> Self {
        Cursor {
            trie,
            path: Vec::new(),
            key: Vec::new(),
            id: None,
        }
    }

    /// True when positioned on a key.
    pub fn valid(&self) -> bool {
        self.id.is_some()
    }

    /// Id of the current key.
    pub fn id(&self) -> Option<u64> {
        self.id
    }

    /// The current key.
    pub fn key(&self) -> Option<&[u8]> {
        self.id.map(|_| self.key.as_slice())
    }

    /// Moves to the first key `>= key`. Returns whether the cursor is valid.
    pub fn seek(&mut self, key: &[u8]) -> bool {
        self.seek_id(self.trie.lower_bound(key))
    }

    /// Moves to the first key.
    pub fn seek_to_first(&mut self) -> bool {
        self.seek_id(0)
    }

    /// Moves to the last key.
    pub fn seek_to_last(&mut self) -> bool {
        match (self.trie.len() as u64).checked_sub(1) {
            Some(last) => self.seek_id(last),
            None => self.invalidate(),
        }
    }

    fn invalidate(&mut self) -> bool {
        self.id = None;
        self.path.clear();
        self.key.clear();
        false
    }

    /// Moves to key `id`; invalid if `id >= len()`.
    pub fn seek_id(&mut self, id: u64) -> bool {
        let t = self.trie;
        if id >= t.len() as u64 {
            return self.invalidate();
        }
        self.path.clear();
        self.key.clear();
        self.id = Some(id);
        if t.dense.is_some() {
            // Dense keys: no path; the key is computed from its id.
            t.key_into(id, &mut self.key);
            return true;
        }
        let Some(mut e) = t.terminal_edge(id) else {
            return true; // the empty key
        };
        loop {
            self.path.push((e, 0));
            match t.parent_edge(e) {
                Some(p) => e = p,
                None => break,
            }
        }
        self.path.reverse();
        for entry in &mut self.path {
            entry.1 = self.key.len();
            t.push_label(entry.0, &mut self.key);
        }
        true
    }

    fn push(&mut self, e: usize, len_before: usize) {
        self.key.truncate(len_before);
        self.trie.push_label(e, &mut self.key);
        self.path.push((e, len_before));
    }

    /// Descends from the top edge to the first terminal at or below it.
    fn descend_to_min(&mut self) {
        while let Some(&(e, _)) = self.path.last() {
            if self.trie.edges.bit(TERM, e) {
                return;
            }
            let Some((s, _)) = self.trie.child_edges(e) else {
                return; // a leaf that is not terminal: corrupt, not validated
            };
            self.push(s, self.key.len());
        }
    }

    /// Descends from the top edge to the last key below it.
    fn descend_to_max(&mut self) {
        while let Some(&(e, _)) = self.path.last() {
            let Some((_, t)) = self.trie.child_edges(e) else {
                return;
            };
            self.push(t - 1, self.key.len());
        }
    }

    /// Advances to the next key. Returns whether the cursor is valid.
    ///
    /// A cursor moves both ways and re-seeks, as RocksDB's iterators do, so
    /// this is not `Iterator::next`; [`Trie::iter`] is the iterator.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> bool {
        let Some(id) = self.id else { return false };
        let t = self.trie;
        if id + 1 >= t.len() as u64 {
            return self.invalidate();
        }
        if t.dense.is_some() {
            return self.seek_id(id + 1);
        }
        self.id = Some(id + 1);
        match self.path.last().map(|&(e, _)| t.child_edges(e)) {
            None => {
                // At the empty key (the root): go to the first child.
                let s = t.children(0).0;
                self.push(s, 0);
            }
            Some(Some((s, _))) => self.push(s, self.key.len()),
            Some(None) => {
                // Climb until an edge has a next sibling.
                while let Some((e, before)) = self.path.pop() {
                    if e + 1 < t.edges.len() && !t.edges.bit(LOUDS, e + 1) {
                        self.push(e + 1, before);
                        break;
                    }
                }
            }
        }
        self.descend_to_min();
        true
    }

    /// Steps back to the previous key. Returns whether the cursor is valid.
    pub fn prev(&mut self) -> bool {
        let Some(id) = self.id else { return false };
        if id == 0 {
            return self.invalidate();
        }
        if self.trie.dense.is_some() {
            return self.seek_id(id - 1);
        }
        self.id = Some(id - 1);
        let t = self.trie;
        while let Some((e, before)) = self.path.pop() {
            if e > 0 && !t.edges.bit(LOUDS, e) {
                self.push(e - 1, before);
                self.descend_to_max();
                return true;
            }
            // `e` was a first child: the parent node comes just before it.
            self.key.truncate(before);
            match self.path.last() {
                Some(&(p, _)) if t.edges.bit(TERM, p) => return true,
                Some(_) => {}
                None => return true, // the root, which must hold the empty key
            }
        }
        true
    }
}

/// Iterator over `(id, key)` pairs in key order, from a [`Cursor`].
pub struct Keys<'t, 'a> {
    cursor: Cursor<'t, 'a>,
    end: u64,
    started: bool,
}

impl<'t, 'a> Keys<'t, 'a> {
    pub(crate) fn new(trie: &'t Trie<'a>, ids: std::ops::Range<u64>) -> Self {
        let mut cursor = Cursor::new(trie);
        if ids.start < ids.end {
            cursor.seek_id(ids.start);
        }
        Keys {
            cursor,
            end: ids.end,
            started: false,
        }
    }
}

impl Iterator for Keys<'_, '_> {
    type Item = (u64, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.started {
            self.cursor.next();
        }
        self.started = true;
        let id = self.cursor.id().filter(|&id| id < self.end)?;
        Some((id, self.cursor.key.clone()))
    }
}

impl<'a> Trie<'a> {
    /// A cursor, initially invalid; position it with a seek.
    pub fn cursor(&self) -> Cursor<'_, 'a> {
        Cursor::new(self)
    }

    /// All `(id, key)` pairs in key order.
    pub fn iter(&self) -> Keys<'_, 'a> {
        Keys::new(self, 0..self.len() as u64)
    }

    /// The `(id, key)` pairs whose ids fall in `ids` (as from
    /// [`Trie::prefix_range`] or [`Trie::range`]), in key order.
    pub fn iter_ids(&self, ids: std::ops::Range<u64>) -> Keys<'_, 'a> {
        Keys::new(self, ids.start..ids.end.min(self.len() as u64))
    }
}
