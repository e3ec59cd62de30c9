//! The read side: open validated bytes and answer point and range queries.
//!
//! # Layout in brief (version 1; `docs/format.md` has every byte)
//!
//! A Patricia (path-compressed) trie in LOUDS-sparse order, as in Fast
//! Succinct Tries: edges are numbered breadth-first, siblings contiguous and
//! in byte order. Per edge `e` the trie keeps
//!
//! * `first[e]`: the first byte of the edge label (one byte per edge);
//! * `louds[e]`: set if `e` is the first child edge of its parent;
//! * `has_child[e]`: set if the edge leads to an internal node;
//! * `term[e]`: set if a key ends at the node the edge leads to;
//! * `has_tail[e]`: set if the label is longer than one byte; the rest of the
//!   label is entry `rank1(has_tail, e)` of the label store.
//!
//! Internal node `k` (the root is 0, the node below edge `e` is
//! `rank1(has_child, e) + 1`) owns edges `select1(louds, k) ..` up to the next
//! set `louds` bit. Its parent edge is `select1(has_child, k - 1)`.
//!
//! Terminals in breadth-first order are not in key order, so a map takes
//! breadth-first terminal rank to key id and back ([`crate::ids`]: the keys'
//! levels in versions 3 and 5, a permutation before); ids are therefore exactly
//! ranks in sorted order and id ranges are key ranges.
//!
//! # Trust model: what open checks, what validate checks
//!
//! [`Trie::open`] checks in O(1) of the size: magic, version, the header's
//! checksum, the counts it can compare without reading the body (edges,
//! terminals + empty key = keys, `louds` ones = internal nodes + 1), and
//! every section's bounds and geometry. (It also reads the LOUDS flags
//! once to build the node starts of `nodes.rs`, for tries of up to 2^21
//! internal nodes: 0.73 ms for 230K nodes measured.) [`Trie::validate`] reads every byte:
//! the body checksum, every rank counter and select sample, label offsets
//! (or blocks) monotone and inside the pool, the key levels' boundaries, lists and
//! tree (or the permutation and its shortcuts), every leaf is terminal,
//! every node's children come after its parent edge, sibling bytes
//! strictly increase, and ids come out in key order. Only a validated trie promises right answers.
//!
//! On bytes that were opened but not validated (corrupt yet checksum-valid,
//! or never checked) every query still stays in bounds, never panics and
//! ends: each section accessor is bounds-checked (a position past the end
//! reads as 0 or an empty label), `select` never scans past the last block,
//! walks up the trie need each parent edge to precede its child and walks
//! down each child range to follow its parent edge ([`Trie::parent_edge`],
//! [`Trie::child_edges`]), a lookup consumes a query byte per step, and a
//! regex walk stops after visiting as many edges as the trie has. A trie
//! of dense integer keys (version 4) caps ids at its key count, which open
//! bounds below 2^32, and its regex walk enters each key once at most. The
//! answers may then be wrong. The checks cost no measurable lookup time:
//! each replaces the panic branch of an indexing bounds check.
//!
//! The engine checks each segment's trie section against its checksum when
//! it opens the segment and runs [`Trie::validate`] in `verify`; the fuzz
//! targets query tries that were opened and not validated.
//!
//! # Thread safety
//!
//! A [`Trie`] is an immutable view: `Send + Sync`, `Copy`, free to share.

use crate::cpu::multiversion;
use crate::dense::Dense;
use crate::edges::{Edges, HAS_CHILD, HAS_TAIL, LOUDS, TERM};
use crate::error::{Error, Result};
use crate::format::{
    check_body, read_header, FormatVersion, Header, FLAG_ROOT_TERMINAL, FLAG_SHARED_LABELS,
    HEADER_BYTES,
};
use crate::ids::KeyIds;
use crate::labels::{Labels, Layout};
use crate::levels::Levels;
use crate::nodes::NodeStarts;
use crate::perm::Perm;
use crate::symbols::{Code, LabelCmp};
use crate::words::{corrupt, WordReader};

/// The top two levels by byte, computed at open (nothing on disk). Every
/// lookup starts at the root, and the top nodes are the widest; the tables
/// replace their binary searches and the selects that find the next level's
/// children with array reads. The second level is a [`SecondRow`] per root
/// child with children and a range per second-level edge: 264 bytes a row
/// and 8 an edge (14 KiB for Debian package keys' 33 rows and 720 edges,
/// where rows of 256 edges and 256 ranges took 3 KiB each: 99 KiB, in
/// vectors of twice that capacity). It is built only for tries
/// of at least [`SECOND_LEVEL_MIN_EDGES`] edges, where it measurably pays.
#[derive(Clone, Debug)]
pub(crate) struct RootIndex {
    /// Edge of the root child labelled `b`, or `NO_EDGE`.
    edge: [u32; 256],
    /// Child edge range of that child's node (empty for a leaf).
    range: [(u32, u32); 256],
    /// Index in `second` of root child `b`'s row, or `NO_ROW`.
    row: [u16; 256],
    /// The second level's rows.
    second: Vec<SecondRow>,
    /// Child edge range of each second-level edge's node, a row's edges
    /// in label order from its `first_range`.
    second_range: Vec<(u32, u32)>,
    /// Every internal node's first edge, when the trie is not too large
    /// (`nodes.rs`).
    nodes: Option<NodeStarts>,
}

/// The children of one root child's node, by byte. They are consecutive
/// edges in label order, so the child labelled `c` is the edge
/// `first_edge + slot[c] - 1`, and its node's range is at `first_range +
/// slot[c] - 1` in `RootIndex::second_range`.
#[derive(Clone, Debug)]
struct SecondRow {
    /// One more than the rank of the child labelled `c` among the node's
    /// children, or 0 when no child is labelled `c`.
    slot: [u8; 256],
    /// The first child's edge.
    first_edge: u32,
    /// Where the first child's range is in `RootIndex::second_range`.
    first_range: u32,
}

const NO_EDGE: u32 = u32::MAX;
const NO_ROW: u16 = u16::MAX;
const SECOND_LEVEL_MIN_EDGES: usize = 4096;

/// A static succinct trie over borrowed bytes (zero-copy).
#[derive(Clone, Debug)]
pub struct Trie<'a> {
    pub(crate) num_keys: usize,
    pub(crate) root_terminal: bool,
    pub(crate) edges: Edges<'a>,
    pub(crate) labels: Labels<'a>,
    pub(crate) ids: KeyIds<'a>,
    header: Header,
    body: &'a [u8],
    root: Box<RootIndex>,
    /// Dense integer keys (format version 4): then every query answers
    /// from these, and the LOUDS parts above are those of an empty trie.
    pub(crate) dense: Option<Dense<'a>>,
}

/// Sizes of a trie's parts in bytes, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SizeReport {
    /// Whole serialized trie.
    pub total: usize,
    /// Per-edge first label bytes and flag bits with rank counters and
    /// select samples.
    pub edges_bytes: usize,
    /// Label store: symbol table, offsets (versions 5 and 6: blocks) or refs,
    /// and the encoded pools.
    pub labels: usize,
    /// Encoded label pool alone (with the blocks' pool of long labels).
    pub label_pool: usize,
    /// The labels' refs to their shared store entries (0 when each label
    /// has an entry of its own: inline or blocks).
    pub label_refs: usize,
    /// The terminal <-> id map: the keys' levels (versions 3 and 5), or the
    /// permutation with its shortcuts (versions 1 and 2).
    pub permutation: usize,
    /// Number of edges (nodes other than the root).
    pub edges: usize,
    /// Whether labels use the symbol table (`true`) or are raw.
    pub compressed_labels: bool,
    /// Labels stored as copies of the end of a recent label (format
    /// version 6; counted by a pass over the labels).
    pub label_copies: usize,
    /// The body of a dense-key trie (format version 4: the other parts
    /// are then empty), 0 for a LOUDS trie.
    pub dense_keys: usize,
}

impl<'a> Trie<'a> {
    /// Opens a serialized trie without copying, in time independent of its
    /// size: the header, its checksum, the counts and every section's
    /// bounds are checked, and the top-level lookup tables are built (at
    /// most 256 + 65,536 edges read). Tries of up to 2^21 internal nodes
    /// also get each node's first edge in memory, from one pass over their
    /// LOUDS flags (a bit per edge; about 2 bytes a node), which spares
    /// every step down a level a select. The body checksum and the structural
    /// invariants are left to [`Trie::validate`]; see the module docs for
    /// what a query promises on bytes that were not validated.
    ///
    /// `bytes` must be 8-byte aligned (mmap and [`crate::AlignedBytes`] are).
    pub fn open(bytes: &'a [u8]) -> Result<Self> {
        if bytes.as_ptr().align_offset(8) != 0 {
            return Err(Error::Misaligned);
        }
        let (h, body) = read_header(bytes)?;
        let words: &[u64] = bytemuck::try_cast_slice(body).map_err(|_| Error::Misaligned)?;
        let mut r = WordReader::new(words, HEADER_BYTES);
        if h.version == FormatVersion::V4 {
            return Self::open_dense(h, body, r);
        }
        let limit = body.len() as u64 * 8;
        let bad = |detail: &str| corrupt(HEADER_BYTES, detail.to_string());
        if h.num_keys > limit + 1 || h.num_edges > limit {
            return Err(bad("key or edge count larger than the body can hold"));
        }
        let num_keys = h.num_keys as usize;
        let num_edges = h.num_edges as usize;
        let root_terminal = h.flags & FLAG_ROOT_TERMINAL != 0;
        let known_flags = match h.version {
            FormatVersion::V1 | FormatVersion::V2 => FLAG_ROOT_TERMINAL,
            FormatVersion::V3 | FormatVersion::V5 => FLAG_ROOT_TERMINAL | FLAG_SHARED_LABELS,
            FormatVersion::V6 => FLAG_ROOT_TERMINAL,
            // Opened by `open_dense` above; never parsed as LOUDS.
            FormatVersion::V4 => return Err(bad("a dense-key trie read as a LOUDS trie")),
        };
        if h.flags & !known_flags != 0 {
            return Err(bad("unknown header flags"));
        }
        let edges = Edges::read(&mut r)?;
        let layout = match h.version {
            FormatVersion::V1 => Layout::Inline,
            FormatVersion::V2 => Layout::Shared,
            FormatVersion::V3 | FormatVersion::V4 | FormatVersion::V5
                if h.flags & FLAG_SHARED_LABELS != 0 =>
            {
                Layout::Shared
            }
            FormatVersion::V3 | FormatVersion::V4 => Layout::Inline,
            FormatVersion::V5 => Layout::Blocks,
            FormatVersion::V6 => Layout::Copies,
        };
        let labels = Labels::read(&mut r, edges.ones(HAS_TAIL), layout)?;
        let ids = match h.version {
            FormatVersion::V1 | FormatVersion::V2 => KeyIds::Cycles(Perm::read(&mut r, num_keys)?),
            FormatVersion::V3 | FormatVersion::V4 | FormatVersion::V5 | FormatVersion::V6 => {
                KeyIds::Levels(Levels::read(&mut r, num_edges)?)
            }
        };
        if !r.is_empty() {
            return Err(corrupt(r.offset(), "trailing bytes after the last section"));
        }
        let mut trie = Trie {
            num_keys,
            root_terminal,
            edges,
            labels,
            ids,
            header: h,
            body,
            root: Box::new(RootIndex {
                edge: [NO_EDGE; 256],
                range: [(0, 0); 256],
                row: [NO_ROW; 256],
                second: Vec::new(),
                second_range: Vec::new(),
                nodes: None,
            }),
            dense: None,
        };
        trie.check_counts()?;
        trie.root.nodes = NodeStarts::build(&trie.edges);
        if num_edges > 0 {
            let (s, t) = trie.children(0);
            for e in s..t.min(s + 256) {
                let b = trie.edges.label(e) as usize;
                trie.root.edge[b] = e as u32;
                if trie.edges.bit(HAS_CHILD, e) {
                    let (cs, ct) = trie.children(trie.child_node(e));
                    trie.root.range[b] = (cs as u32, ct as u32);
                    if num_edges >= SECOND_LEVEL_MIN_EDGES && trie.root.row[b] == NO_ROW {
                        trie.index_second_level(b, cs, ct);
                    }
                }
            }
            trie.root.second.shrink_to_fit();
            trie.root.second_range.shrink_to_fit();
        }
        Ok(trie)
    }

    /// [`Trie::open`] of a version-4 body (dense integer keys), in O(1).
    /// The trie carries an empty trie's LOUDS parts, which its queries do
    /// not read: every public query answers from [`Dense`] first.
    fn open_dense(h: Header, body: &'a [u8], mut r: WordReader<'a>) -> Result<Self> {
        let bad = |detail: &str| Err(corrupt(HEADER_BYTES, detail.to_string()));
        if h.flags != 0 || h.num_edges != 0 {
            return bad("a dense-key trie with header flags or edges");
        }
        let num_keys = usize::try_from(h.num_keys)
            .map_err(|_| corrupt(HEADER_BYTES, "more keys than this machine addresses"))?;
        let dense = Dense::read(&mut r, h.num_keys)?;
        if !r.is_empty() {
            return Err(corrupt(r.offset(), "trailing bytes after the last section"));
        }
        let mut trie = Trie::open(empty_trie())?;
        trie.num_keys = num_keys;
        trie.header = h;
        trie.body = body;
        trie.dense = Some(dense);
        Ok(trie)
    }

    /// Opens `bytes` and [validates](Trie::validate) them: for bytes from
    /// a source not trusted to be well-formed, when the linear cost is
    /// acceptable.
    ///
    /// The body checksum is checked first, so damage on storage is named
    /// as such rather than as the structural fault it causes.
    pub fn open_validated(bytes: &'a [u8]) -> Result<Self> {
        if let Ok((h, body)) = read_header(bytes) {
            check_body(&h, body)?;
        }
        let trie = Self::open(bytes)?;
        trie.validate_parts()?;
        Ok(trie)
    }

    /// Adds the second-level row of root child `b`, whose node's child
    /// edges are `s..t`. A node with a child for every byte (a slot counts
    /// to 255), or whose edges are out of label order or outnumber the
    /// bytes (bytes not validated), gets no row: lookups then search it as
    /// any other node.
    fn index_second_level(&mut self, b: usize, s: usize, t: usize) {
        let (Ok(row), Ok(first_edge), Ok(first_range)) = (
            u16::try_from(self.root.second.len()),
            u32::try_from(s),
            u32::try_from(self.root.second_range.len()),
        ) else {
            return;
        };
        let mut r = SecondRow {
            slot: [0; 256],
            first_edge,
            first_range,
        };
        let mut ranges = Vec::with_capacity(t.saturating_sub(s).min(256));
        let mut last = None;
        for e in s..t.min(s + 256) {
            let c = self.edges.label(e);
            if last.is_some_and(|l| l >= c) {
                return; // labels not increasing: bytes not validated
            }
            last = Some(c);
            ranges.push(if self.edges.bit(HAS_CHILD, e) {
                let (cs, ct) = self.children(self.child_node(e));
                (cs as u32, ct as u32)
            } else {
                (0, 0)
            });
            // Rows of more than 255 children are dropped below.
            r.slot[usize::from(c)] = ranges.len() as u8;
        }
        if ranges.len() != t - s || ranges.len() > usize::from(u8::MAX) {
            return; // more children than labels, or more than a slot counts
        }
        self.root.row[b] = row;
        self.root.second.push(r);
        self.root.second_range.extend(ranges);
    }

    /// The counts [`Trie::open`] can compare in O(1).
    fn check_counts(&self) -> Result<()> {
        let bad = |detail: &str| Err(corrupt(HEADER_BYTES, detail.to_string()));
        let edges = &self.edges;
        if edges.len() as u64 != self.header.num_edges {
            return bad("edge array disagrees with the edge count");
        }
        if edges.ones(TERM) + usize::from(self.root_terminal) != self.num_keys {
            return bad("terminal count disagrees with the key count");
        }
        if edges.len() == 0 {
            return if edges.ones(LOUDS) == 0 {
                Ok(())
            } else {
                bad("edge bits on an empty trie")
            };
        }
        if edges.ones(LOUDS) != edges.ones(HAS_CHILD) + 1 || !edges.bit(LOUDS, 0) {
            return bad("node count disagrees between louds and has-child bits");
        }
        Ok(())
    }

    /// Checks everything [`Trie::open`] took on trust, reading every byte:
    /// the body checksum, each section's directories, and the structural
    /// invariants listed in the module docs. Linear in the size (8-30 ms
    /// per MB measured); after it succeeds every query gives the right
    /// answer.
    pub fn validate(&self) -> Result<()> {
        check_body(&self.header, self.body)?;
        self.validate_parts()
    }

    /// [`Trie::validate`] less the body checksum.
    fn validate_parts(&self) -> Result<()> {
        if let Some(d) = &self.dense {
            return d.validate();
        }
        self.edges.validate()?;
        self.labels.validate()?;
        self.validate_structure()?;
        let terminals = self.edges.ones(TERM);
        self.ids
            .validate(&self.edges, terminals, self.root_terminal)?;
        self.validate_key_order()
    }

    fn validate_structure(&self) -> Result<()> {
        let bad = |detail: &str| Err(corrupt(HEADER_BYTES, detail.to_string()));
        let edges = &self.edges;
        let e = edges.len();
        if e == 0 {
            return Ok(());
        }
        for i in 0..e {
            if !edges.bit(HAS_CHILD, i) && !edges.bit(TERM, i) {
                return bad("a leaf is not terminal");
            }
            if i > 0 && !edges.bit(LOUDS, i) && edges.label(i) <= edges.label(i - 1) {
                return bad("sibling labels are not strictly increasing");
            }
        }
        for k in 1..edges.ones(LOUDS) {
            if edges.select(LOUDS, k) <= edges.select(HAS_CHILD, k - 1) {
                return bad("a node's children precede its parent edge");
            }
        }
        Ok(())
    }

    /// Walks the trie in key order (depth first, a node's own key before its
    /// children) and checks the ids come out as 0, 1, 2, ...: the promise
    /// that ids are sorted ranks, on which every id range and the cursor rely.
    fn validate_key_order(&self) -> Result<()> {
        let mut expect = u64::from(self.root_terminal);
        if self.edges.len() == 0 {
            return Ok(());
        }
        let mut stack = vec![self.children(0)];
        while let Some(top) = stack.last_mut() {
            if top.0 == top.1 {
                stack.pop();
                continue;
            }
            let e = top.0;
            top.0 += 1;
            if self.edges.bit(TERM, e) {
                if self.edge_id_at(e, Some(stack.len())) != expect {
                    return Err(corrupt(
                        HEADER_BYTES,
                        format!("key id {expect} is out of key order"),
                    ));
                }
                expect += 1;
            }
            if self.edges.bit(HAS_CHILD, e) {
                stack.push(self.children(self.child_node(e)));
            }
        }
        Ok(())
    }

    /// Whether this is a trie of dense integer keys (format version 4):
    /// keys of one width of 1 to 8 bytes close together as big-endian
    /// integers, looked up by arithmetic and a rank instead of a walk.
    pub fn is_dense(&self) -> bool {
        self.dense.is_some()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.num_keys
    }

    /// True when the trie holds no key.
    pub fn is_empty(&self) -> bool {
        self.num_keys == 0
    }

    /// Number of edges (nodes other than the root).
    pub fn num_edges(&self) -> usize {
        self.edges.len()
    }

    /// Heap bytes the open trie holds beside its borrowed bytes: the
    /// top-level tables and the node starts built at open (a few percent
    /// of the trie's size; see [`Trie::open`]).
    pub fn resident_bytes(&self) -> usize {
        let root = &self.root;
        std::mem::size_of::<RootIndex>()
            + root.second.capacity() * std::mem::size_of::<SecondRow>()
            + root.second_range.capacity() * 8
            + root.nodes.as_ref().map_or(0, NodeStarts::heap_bytes)
    }

    /// Sizes of the parts: O(1), but for [`SizeReport::label_copies`], a
    /// pass over the labels of a version-6 trie.
    pub fn size_report(&self) -> SizeReport {
        if let Some(d) = &self.dense {
            return SizeReport {
                total: HEADER_BYTES + self.body.len(),
                dense_keys: d.size_bytes(),
                ..SizeReport::default()
            };
        }
        SizeReport {
            total: HEADER_BYTES + self.body.len(),
            edges_bytes: self.edges.size_bytes(),
            labels: self.labels.size_bytes(),
            label_pool: self.labels.pool_bytes(),
            label_refs: self.labels.refs_bytes(),
            permutation: self.ids.size_bytes(),
            edges: self.edges.len(),
            compressed_labels: self.labels.symbols().mode() == crate::symbols::Mode::Symbols,
            label_copies: self.labels.copies(),
            dense_keys: 0,
        }
    }

    /// Child edges of internal node `k`: `start..end`.
    #[inline(always)]
    pub(crate) fn children(&self, k: usize) -> (usize, usize) {
        if let Some(range) = self.root.nodes.as_ref().and_then(|n| n.children(k)) {
            return range;
        }
        let s = self.edges.select(LOUDS, k);
        (s, self.edges.next_louds(s + 1))
    }

    /// Internal node below edge `e` (which must have a child).
    #[inline(always)]
    pub(crate) fn child_node(&self, e: usize) -> usize {
        self.edges.rank(HAS_CHILD, e) + 1
    }

    /// Key id of the terminal node below edge `e`.
    #[inline(always)]
    pub(crate) fn edge_id(&self, e: usize) -> u64 {
        self.edge_id_at(e, None)
    }

    /// [`Trie::edge_id`] for an edge at a level the caller counted (root
    /// children are level 1), which spares a search of the level bounds.
    #[inline(always)]
    pub(crate) fn edge_id_at(&self, e: usize, level: Option<usize>) -> u64 {
        let t = self.edges.rank(TERM, e);
        self.ids.id(t, level, self.root_terminal, e)
    }

    /// The edge where key `id` ends, or `None` for the empty key (`id <
    /// len()`).
    #[inline(always)]
    pub(crate) fn terminal_edge(&self, id: u64) -> Option<usize> {
        let t = self.ids.terminal(id as usize, self.root_terminal)?;
        Some(self.edges.select(TERM, t))
    }

    /// Compares the label of `e` after its first byte with `query`.
    #[inline(always)]
    pub(crate) fn cmp_tail(&self, e: usize, query: &[u8]) -> LabelCmp {
        if self.edges.bit(HAS_TAIL, e) {
            self.labels.compare(self.edges.rank(HAS_TAIL, e), query)
        } else {
            LabelCmp::Prefix(0)
        }
    }

    /// The encoded rest of edge `e`'s label after its first byte (in
    /// the symbol table's codes), or `None` for a one-byte label.
    #[inline(always)]
    pub(crate) fn tail_code(&self, e: usize) -> Option<Code<'a>> {
        self.edges
            .bit(HAS_TAIL, e)
            .then(|| self.labels.label(self.edges.rank(HAS_TAIL, e)))
    }

    /// Appends the label of edge `e` (all of it) to `out`.
    #[inline(always)]
    pub(crate) fn push_label(&self, e: usize, out: &mut Vec<u8>) {
        out.push(self.edges.label(e));
        if self.edges.bit(HAS_TAIL, e) {
            self.labels.decode(self.edges.rank(HAS_TAIL, e), out);
        }
    }

    multiversion! {
        /// The id of `key`, its rank among all keys, if present.
        pub fn lookup(&self, key: &[u8]) -> Option<u64> = lookup_impl / lookup_popcnt;
    }

    #[inline(always)]
    fn lookup_impl(&self, key: &[u8]) -> Option<u64> {
        if let Some(d) = &self.dense {
            return d.lookup(key);
        }
        if key.is_empty() {
            return self.root_terminal.then_some(0);
        }
        let first = key[0] as usize;
        let e = self.root.edge[first];
        if e == NO_EDGE {
            return None;
        }
        let mut e = e as usize;
        let mut pos = 1;
        let mut range = Some(self.root.range[first]);
        let mut row = self.root.row[first];
        let mut level = 1;
        loop {
            match self.cmp_tail(e, &key[pos..]) {
                LabelCmp::Prefix(n) => pos += n,
                _ => return None,
            }
            if pos == key.len() {
                return self
                    .edges
                    .bit(TERM, e)
                    .then(|| self.edge_id_at(e, Some(level)));
            }
            level += 1;
            if !self.edges.bit(HAS_CHILD, e) {
                return None;
            }
            if row != NO_ROW {
                let r = &self.root.second[usize::from(row)];
                let rank = usize::from(r.slot[usize::from(key[pos])]).checked_sub(1)?;
                e = r.first_edge as usize + rank;
                range = self
                    .root
                    .second_range
                    .get(r.first_range as usize + rank)
                    .copied();
                row = NO_ROW;
                pos += 1;
                continue;
            }
            let (s, t) = match range.take() {
                Some((s, t)) => (s as usize, t as usize),
                None => self.children(self.child_node(e)),
            };
            e = self.edges.find(s, t, key[pos])?;
            pos += 1;
        }
    }

    /// True if `key` is present.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.lookup(key).is_some()
    }

    multiversion! {
        /// Appends key `id` to `out`; returns false (and leaves `out` alone) if
        /// `id >= len()`.
        pub fn key_into(&self, id: u64, out: &mut Vec<u8>) -> bool = key_into_impl / key_into_popcnt;
    }

    #[inline(always)]
    fn key_into_impl(&self, id: u64, out: &mut Vec<u8>) -> bool {
        if let Some(d) = &self.dense {
            return d.key_into(id, out);
        }
        if id >= self.num_keys as u64 {
            return false;
        }
        let Some(mut e) = self.terminal_edge(id) else {
            return true; // the empty key
        };
        // Walk up collecting labels reversed, then reverse the whole key.
        let start = out.len();
        loop {
            let at = out.len();
            self.push_label(e, out);
            out[at..].reverse();
            match self.parent_edge(e) {
                Some(p) => e = p,
                None => break,
            }
        }
        out[start..].reverse();
        true
    }

    /// The edge above edge `e`'s parent node, or `None` when that node is
    /// the root. Parents precede their children, so on bytes that break
    /// that (not validated) this also answers `None`: every upward walk
    /// ends within `e` steps.
    #[inline(always)]
    pub(crate) fn parent_edge(&self, e: usize) -> Option<usize> {
        let k = self.edges.rank(LOUDS, e + 1).checked_sub(1)?;
        let p = self.edges.select(HAS_CHILD, k.checked_sub(1)?);
        (p < e).then_some(p)
    }

    /// [`Trie::child_edges`], also returning the child node, given the
    /// last child node `prev.0` entered and its edges' end `prev.1` (`(0,
    /// 0)`: none): when the node below `e` is the next one, its edges start
    /// at `prev.1` and the select is skipped.
    #[inline(always)]
    pub(crate) fn child_edges_after(
        &self,
        e: usize,
        prev: (usize, usize),
    ) -> Option<(usize, usize, usize)> {
        if !self.edges.bit(HAS_CHILD, e) {
            return None;
        }
        let k = self.child_node(e);
        let (s, t) = if prev.0 != 0 && k == prev.0 + 1 {
            (prev.1, self.edges.next_louds(prev.1 + 1))
        } else {
            self.children(k)
        };
        (s > e && s < t).then_some((k, s, t))
    }

    /// The child edges of the node below edge `e`, if it has some that
    /// come after `e`: every downward walk makes progress and ends, also on
    /// bytes not validated (where a child range could point back up).
    #[inline(always)]
    pub(crate) fn child_edges(&self, e: usize) -> Option<(usize, usize)> {
        self.child_edges_after(e, (0, 0)).map(|(_, s, t)| (s, t))
    }

    /// Key `id`, or `None` if `id >= len()`.
    pub fn key(&self, id: u64) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        self.key_into(id, &mut out).then_some(out)
    }

    /// Smallest id below edge `e` (the node itself if terminal).
    #[inline(always)]
    fn min_id_below(&self, mut e: usize) -> u64 {
        while !self.edges.bit(TERM, e) {
            match self.child_edges(e) {
                Some((s, _)) => e = s,
                None => break,
            }
        }
        self.edge_id(e)
    }

    /// Largest id below edge `e`.
    #[inline(always)]
    fn max_id_below(&self, mut e: usize) -> u64 {
        while let Some((_, t)) = self.child_edges(e) {
            e = t - 1;
        }
        self.edge_id(e)
    }

    multiversion! {
        /// Id of the first key `>= key` (`len()` if none): a seek.
        pub fn lower_bound(&self, key: &[u8]) -> u64 = lower_bound_impl / lower_bound_popcnt;
    }

    #[inline(always)]
    fn lower_bound_impl(&self, key: &[u8]) -> u64 {
        if let Some(d) = &self.dense {
            return d.lower_bound(key);
        }
        if key.is_empty() || self.num_keys == 0 {
            return 0;
        }
        if self.edges.len() == 0 {
            return self.num_keys as u64; // only the empty key, which is < key
        }
        let mut k = 0;
        let mut pos = 0;
        loop {
            let (s, t) = self.children(k);
            let e = self.edges.lower(s, t, key[pos]);
            if e == t {
                // `s < t` in a valid trie: every node has a child edge.
                return match t.checked_sub(1) {
                    Some(last) if last >= s => self.max_id_below(last) + 1,
                    _ => self.num_keys as u64,
                };
            }
            if self.edges.label(e) > key[pos] {
                return self.min_id_below(e);
            }
            pos += 1;
            match self.cmp_tail(e, &key[pos..]) {
                LabelCmp::Less => return self.max_id_below(e) + 1,
                LabelCmp::Greater => return self.min_id_below(e),
                LabelCmp::Prefix(n) => pos += n,
            }
            if pos == key.len() {
                return self.min_id_below(e);
            }
            if !self.edges.bit(HAS_CHILD, e) {
                return self.edge_id(e) + 1; // this key is a proper prefix of `key`
            }
            k = self.child_node(e);
        }
    }

    /// Ids of the keys that start with `prefix`, as a half-open range.
    pub fn prefix_range(&self, prefix: &[u8]) -> std::ops::Range<u64> {
        let start = self.lower_bound(prefix);
        let end = match pith_enc::prefix::successor(prefix) {
            Some(next) => self.lower_bound(&next),
            None => self.num_keys as u64,
        };
        start..end.max(start)
    }

    /// Ids of the keys in a key range, as a half-open id range.
    pub fn range<R: std::ops::RangeBounds<[u8]>>(&self, range: R) -> std::ops::Range<u64> {
        use std::ops::Bound;
        let start = match range.start_bound() {
            Bound::Unbounded => 0,
            Bound::Included(k) => self.lower_bound(k),
            Bound::Excluded(k) => self.lower_bound(k) + u64::from(self.contains(k)),
        };
        let end = match range.end_bound() {
            Bound::Unbounded => self.num_keys as u64,
            Bound::Included(k) => self.lower_bound(k) + u64::from(self.contains(k)),
            Bound::Excluded(k) => self.lower_bound(k),
        };
        start..end.max(start)
    }
}

/// The bytes of a trie without keys (built once), whose LOUDS parts a
/// dense-key trie carries.
fn empty_trie() -> &'static [u8] {
    static EMPTY: std::sync::OnceLock<crate::format::AlignedBytes> = std::sync::OnceLock::new();
    EMPTY
        .get_or_init(|| {
            crate::TrieBuilder::new()
                .finish()
                .expect("a trie without keys always builds")
        })
        .as_bytes()
}
