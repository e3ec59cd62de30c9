//! Key ids from breadth-first terminals, by level (format versions 3 and 5).
//!
//! The trie numbers its edges level by level (LOUDS order), and within one
//! level the edges are in key order: a level's nodes are ordered by their
//! parents, which are in key order by induction, then by label. So the
//! terminals of one level, taken in edge order, are already sorted, and the
//! sorted keys are a merge of one sorted run per level. Write `S[r]` for
//! the level of the key of rank `r` (the empty key, always id 0, is left
//! out): the permutation between breadth-first terminals and key ranks,
//! which version 1 stored whole (`(1 + 1/8) log2 n` bits a key and more),
//! is fully described by `S`.
//!
//! * **Terminal -> id** (every lookup's last step): the `j`-th terminal of
//!   level `l` has the rank of the `j`-th `l` in `S`. Each level's ranks
//!   form an increasing list, stored as Elias-Fano: about `2 + log2(n /
//!   n_l)` bits each, `2 + H0(S)` bits a key in all, and one select plus
//!   one read to fetch. (A wavelet tree answers this too, with one select
//!   per tree node on the way up: 82 ns against 30 ns on Debian keys,
//!   measured, for 4.4 fewer bits a key.)
//! * **Id -> terminal** (id -> key, seeks by id): `S` itself, as a wavelet
//!   tree shaped by the Huffman code of the level frequencies (Mäkinen and
//!   Navarro's compressed wavelet trees): `H0(S)` bits a key plus rank
//!   directories, and one rank per node from the root down; frequent
//!   levels have short codes, so about `H0(S)` ranks on average.
//!
//! On Debian package keys `H0(S)` is 3.5 bits (18 levels), on this
//! machine's file paths 4.8 (43 levels).
//!
//! Layout (every part a packed array unless said):
//!
//! ```text
//! word    root of the tree: 0, or the leaf (m + l - 1) when only level l
//!         has keys
//! packed  edge_start[D + 1]: first edge of level l at l - 1; E last
//! packed  term_start[D + 1]: TERM edges before edge_start[i]
//! packed  upper_start[D + 1]: level l's upper bits start at bit
//!         upper_start[l - 1] of `upper`; its length last
//! packed  low_start[D + 1]: likewise in `lows`
//! packed  low_width[D]
//! bitvec  upper: the levels' Elias-Fano upper bits, concatenated
//! packed  lows (width 64): the levels' low bits, concatenated, a bit stream
//! packed  children[2m]: child of internal node k for bit b at 2k + b
//!         (v < m: node v; v >= m: the leaf of level v - m + 1)
//! packed  node_start[m + 1]: bit offset of each node in `tree`; total last
//! packed  node_ones[m]: ones of `tree` before node_start[k]
//! bitvec  tree: the nodes' bits, root first
//! ```
//!
//! In level `l` (with `n_l` keys among `N`, low width `w = floor(log2(N /
//! n_l))`), the `j`-th rank `x` has its low `w` bits at `lows` bit
//! `low_start[l - 1] + j w` and sets upper bit `upper_start[l - 1] + (x >>
//! w) + j`. Since `term_start[l - 1]` counts the keys of the levels above,
//! the `t`-th TERM edge's one is the `t`-th one of `upper`.
//!
//! [`Levels::read`] checks the parts' lengths in O(1) (at most one level
//! per edge, fewer tree nodes than levels). Every accessor reads through
//! `try_get` or clamps, an id is at most the number of keys, and a tree
//! walk takes at most [`MAX_HEIGHT`] steps, so on bytes not validated an
//! answer may be wrong but stays in bounds and comes at once.
//! [`Levels::validate`] checks the level boundaries against the edges, the
//! Elias-Fano geometry, that the tree is the Huffman tree of the level
//! counts with every node where its keys put it, canonical widths, the
//! directories, and that the tree inverts the lists for every key; the
//! trie's key-order walk then checks the lists themselves.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use pith_enc::packed::{bits_for, mask, or_bits, Packed};

use crate::bitvec::{BitVec, BitVecBuilder};
use crate::edges::{Edges, HAS_CHILD, LOUDS, TERM};
use crate::error::Result;
use crate::words::{corrupt, packed_bytes, push_packed, WordReader};

/// Writes the section for `seq` (the level, `1..=D`, of every key other
/// than the empty one, in key order), given each level's first edge and
/// the TERM edges before it (`D + 1` entries each, the totals last).
pub(crate) fn write_levels<L: Copy + Into<u32>>(
    out: &mut Vec<u64>,
    seq: &[L],
    edge_start: &[u64],
    term_start: &[u64],
) {
    let depth = edge_start.len().saturating_sub(1);
    let mut count = vec![0u64; depth + 1];
    for &l in seq {
        count[l.into() as usize] += 1;
    }
    out.push(0); // the root, known once the tree is built
    let root_at = out.len() - 1;
    push_packed(
        out,
        edge_start,
        bits_for(edge_start.last().copied().unwrap_or(0)),
    );
    push_packed(
        out,
        term_start,
        bits_for(term_start.last().copied().unwrap_or(0)),
    );
    write_lists(out, seq, &count);
    let tree = HuffmanTree::new(&count);
    out[root_at] = tree.root as u64;
    write_tree(out, seq, &count, &tree);
}

/// The low width and the upper bits of the Elias-Fano list of `count`
/// ranks below `keys`: `floor(log2(keys / count))` low bits (0 for an
/// empty list), and one upper bit per rank plus one per value of the high
/// part.
fn list_shape(keys: u64, count: u64) -> (u32, u64) {
    match keys.checked_div(count) {
        Some(q) if q > 0 => {
            let width = q.ilog2();
            (width, ((keys - 1) >> width) + count)
        }
        _ => (0, 0),
    }
}

/// The Elias-Fano lists of each level's key ranks.
fn write_lists<L: Copy + Into<u32>>(out: &mut Vec<u64>, seq: &[L], count: &[u64]) {
    let depth = count.len() - 1;
    let n = seq.len() as u64;
    let shape: Vec<(u32, u64)> = count.iter().map(|&c| list_shape(n, c)).collect();
    let (mut upper_start, mut low_start) = (vec![0u64], vec![0u64]);
    for l in 1..=depth {
        let (width, upper) = shape[l];
        upper_start.push(upper_start[l - 1] + upper);
        low_start.push(low_start[l - 1] + count[l] * u64::from(width));
    }
    let mut upper = BitVecBuilder::with_len(upper_start[depth] as usize);
    let mut lows = vec![0u64; (low_start[depth] as usize).div_ceil(64)];
    let mut seen = vec![0u64; depth + 1];
    for (r, &l) in seq.iter().enumerate() {
        let l = l.into() as usize;
        let (w, j) = (shape[l].0, seen[l]);
        seen[l] += 1;
        let r = r as u64;
        upper.set((upper_start[l - 1] + (r >> w) + j) as usize);
        or_bits(
            &mut lows,
            (low_start[l - 1] + j * u64::from(w)) as usize,
            r & mask(w),
            w,
        );
    }
    let widths: Vec<u64> = shape[1..].iter().map(|&(w, _)| u64::from(w)).collect();
    push_packed(out, &upper_start, bits_for(upper_start[depth]));
    push_packed(out, &low_start, bits_for(low_start[depth]));
    push_packed(out, &widths, bits_for(63));
    upper.write(out);
    push_packed(out, &lows, 64);
}

/// The wavelet tree of `seq`: each key's code, root first, as one bit in
/// every node it passes, written straight to where [`node_layout`] puts
/// that node.
fn write_tree<L: Copy + Into<u32>>(
    out: &mut Vec<u64>,
    seq: &[L],
    count: &[u64],
    tree: &HuffmanTree,
) {
    let depth = count.len() - 1;
    let m = tree.children.len() / 2;
    push_packed(
        out,
        &tree.children,
        bits_for((m + depth).saturating_sub(1) as u64),
    );
    let (node_start, node_ones) = node_layout(tree, count);
    let paths: Vec<Vec<(usize, bool)>> = (0..=depth)
        .map(|l| {
            if l > 0 && count[l] > 0 {
                tree.path(m + l - 1)
            } else {
                Vec::new()
            }
        })
        .collect();
    let mut bits = BitVecBuilder::with_len(node_start[m] as usize);
    let mut next = node_start.clone();
    for &l in seq {
        for &(node, bit) in &paths[l.into() as usize] {
            if bit {
                bits.set(next[node] as usize);
            }
            next[node] += 1;
        }
    }
    push_packed(out, &node_start, bits_for(node_start[m]));
    let ones = node_ones.last().copied().unwrap_or(0);
    push_packed(out, &node_ones[..m], bits_for(ones));
    bits.write(out);
}

/// Where the tree's nodes lie in its bit vector, from the level counts:
/// `node_start` (`m + 1` entries, the total last), and the ones before
/// each node (`m + 1` entries, the total last). A node holds one bit per
/// key below it, a one per key below its child 1; nodes are numbered
/// breadth-first, so children come after their parents.
fn node_layout(tree: &HuffmanTree, count: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let m = tree.children.len() / 2;
    let size = |x: usize, below: &[u64]| if x < m { below[x] } else { count[x - m + 1] };
    let mut below = vec![0u64; m];
    for k in (0..m).rev() {
        below[k] = size(tree.children[2 * k] as usize, &below)
            + size(tree.children[2 * k + 1] as usize, &below);
    }
    let (mut starts, mut ones) = (vec![0u64], vec![0u64]);
    for k in 0..m {
        starts.push(starts[k] + below[k]);
        ones.push(ones[k] + size(tree.children[2 * k + 1] as usize, &below));
    }
    (starts, ones)
}

/// True when `p`'s width is `bits_for` its last entry (the writer's choice
/// for increasing arrays).
fn canonical_width(p: Packed<'_>) -> bool {
    p.width() == bits_for(p.len().checked_sub(1).map_or(0, |i| p.get(i)))
}

/// The level (`1..=depth`) whose range in `starts` (level `l` starting at
/// `starts[l - 1]`) holds `x`: the last start at or before `x`, by binary
/// search (index 0 when none is, on bytes not validated).
#[inline(always)]
fn level_at(starts: Packed<'_>, depth: usize, x: usize) -> usize {
    let (mut lo, mut hi) = (0, depth);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if starts.get(mid) as usize <= x {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo + 1
}

/// `width` bits (below 64) of `words` from bit `pos`, little-endian; 0 past
/// the end.
#[inline(always)]
fn bits_at(words: Packed<'_>, pos: usize, width: u32) -> u64 {
    let (w, off) = (pos / 64, (pos % 64) as u32);
    let lo = words.try_get(w).unwrap_or(0) >> off;
    let hi = words
        .try_get(w + 1)
        .unwrap_or(0)
        .checked_shl(64 - off)
        .unwrap_or(0);
    (lo | hi) & mask(width)
}

/// The Huffman tree over the levels that have keys, numbered for the
/// layout: internal nodes `0..m` breadth-first from the root, leaf of level
/// `l` at `m + l - 1`.
struct HuffmanTree {
    root: usize,
    /// `children[2k + b]`.
    children: Vec<u64>,
    /// `(parent << 1) | bit` per node and leaf.
    up: Vec<u64>,
}

impl HuffmanTree {
    /// `count[l]`: keys at level `l` (`count[0]` unused).
    fn new(count: &[u64]) -> Self {
        let depth = count.len().saturating_sub(1);
        let used: Vec<usize> = (1..=depth).filter(|&l| count[l] > 0).collect();
        // Merge the two lightest until one is left. Ties go to the lower
        // id, so a build is deterministic. Ids: leaves are `l - 1` (levels
        // 1..=D), merged nodes `D + i`.
        let mut merged: Vec<(usize, usize)> = Vec::new();
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> =
            used.iter().map(|&l| Reverse((count[l], l - 1))).collect();
        while heap.len() > 1 {
            let (Some(Reverse((ca, a))), Some(Reverse((cb, b)))) = (heap.pop(), heap.pop()) else {
                break;
            };
            merged.push((a, b));
            heap.push(Reverse((ca + cb, depth + merged.len() - 1)));
        }
        let m = merged.len();
        let mut up = vec![0u64; m + depth];
        let Some(Reverse((_, top))) = heap.pop() else {
            // No keys other than the empty one: an unused root.
            return HuffmanTree {
                root: 0,
                children: Vec::new(),
                up,
            };
        };
        if m == 0 {
            // One level: the root is its leaf.
            return HuffmanTree {
                root: top,
                children: Vec::new(),
                up,
            };
        }
        // Number merged nodes breadth-first from the top one.
        let mut number = vec![usize::MAX; m];
        let mut order = vec![top - depth];
        number[top - depth] = 0;
        let mut i = 0;
        while i < order.len() {
            let (a, b) = merged[order[i]];
            for c in [a, b] {
                if c >= depth {
                    number[c - depth] = order.len();
                    order.push(c - depth);
                }
            }
            i += 1;
        }
        let id = |c: usize| if c >= depth { number[c - depth] } else { m + c };
        let mut children = vec![0u64; 2 * m];
        for (k, &node) in order.iter().enumerate() {
            let (a, b) = merged[node];
            for (bit, c) in [a, b].into_iter().enumerate() {
                children[2 * k + bit] = id(c) as u64;
                up[id(c)] = ((k as u64) << 1) | bit as u64;
            }
        }
        HuffmanTree {
            root: 0,
            children,
            up,
        }
    }

    /// The (node, bit) pairs from the root down to node or leaf `x`.
    fn path(&self, x: usize) -> Vec<(usize, bool)> {
        let mut path = Vec::new();
        let mut x = x;
        while x != self.root && !self.children.is_empty() {
            let link = self.up[x] as usize;
            path.push((link >> 1, link & 1 == 1));
            x = link >> 1;
        }
        path.reverse();
        path
    }
}

/// The deepest a walk down the tree goes: a Huffman tree `h` deep weighs
/// at least the Fibonacci number `F(h + 2)`, and a trie has fewer than
/// `2^32` keys, so a real tree is at most 46 deep. Bounds every walk on
/// bytes not validated.
const MAX_HEIGHT: usize = 64;

/// A read-only view of the section.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Levels<'a> {
    root: usize,
    /// Internal nodes of the tree.
    m: usize,
    /// Deepest level, `D`.
    depth: usize,
    edge_start: Packed<'a>,
    term_start: Packed<'a>,
    upper_start: Packed<'a>,
    low_start: Packed<'a>,
    low_width: Packed<'a>,
    upper: BitVec<'a>,
    lows: Packed<'a>,
    children: Packed<'a>,
    node_start: Packed<'a>,
    node_ones: Packed<'a>,
    tree: BitVec<'a>,
    /// Byte offset of the section in the file, for error messages.
    at: usize,
}

impl<'a> Levels<'a> {
    /// Takes the section of a trie of `edges` edges in O(1), checking that
    /// its parts agree in length (at most one level per edge, fewer
    /// internal tree nodes than levels).
    pub(crate) fn read(r: &mut WordReader<'a>, edges: usize) -> Result<Self> {
        let at = r.offset();
        let root = r.count("key levels", u64::MAX >> 8)?;
        let edge_start = r.packed("level edge starts")?;
        let term_start = r.packed("level terminal starts")?;
        let upper_start = r.packed("level upper bit starts")?;
        let low_start = r.packed("level low bit starts")?;
        let low_width = r.packed("level low widths")?;
        let upper = BitVec::read(r, "level upper bits")?;
        let lows = r.packed("level low bits")?;
        let children = r.packed("level tree children")?;
        let node_start = r.packed("level tree node starts")?;
        let node_ones = r.packed("level tree node ones")?;
        let tree = BitVec::read(r, "level tree bits")?;
        let depth = edge_start.len().saturating_sub(1);
        let m = node_ones.len();
        let agree = term_start.len() == edge_start.len()
            && upper_start.len() == edge_start.len()
            && low_start.len() == edge_start.len()
            && low_width.len() == depth
            && children.len() == 2 * m
            && node_start.len() == m + 1
            && depth <= edges
            && (m == 0 || m < depth)
            && (root < m + depth || (m + depth == 0 && root == 0));
        if !agree {
            return Err(corrupt(at, "key level parts disagree on their lengths"));
        }
        Ok(Levels {
            root,
            m,
            depth,
            edge_start,
            term_start,
            upper_start,
            low_start,
            low_width,
            upper,
            lows,
            children,
            node_start,
            node_ones,
            tree,
            at,
        })
    }

    pub(crate) fn size_bytes(&self) -> usize {
        8 + [
            self.edge_start,
            self.term_start,
            self.upper_start,
            self.low_start,
            self.low_width,
            self.lows,
            self.children,
            self.node_start,
            self.node_ones,
        ]
        .iter()
        .map(packed_bytes)
        .sum::<usize>()
            + self.upper.size_bytes()
            + self.tree.size_bytes()
    }

    /// The level of edge `e` (`1..=D`): a binary search of the level
    /// boundaries, for callers that did not count it on the way down.
    #[inline(always)]
    pub(crate) fn level_of_edge(&self, e: usize) -> usize {
        level_at(self.edge_start, self.depth, e)
    }

    /// The rank, among the keys other than the empty one, of the key that
    /// ends below the `t`-th TERM edge, which is at `level`.
    #[inline(always)]
    pub(crate) fn id(&self, level: usize, t: usize) -> usize {
        let Some(first) = level.checked_sub(1) else {
            return 0;
        };
        let at = |p: Packed<'_>| p.try_get(first).unwrap_or(0) as usize;
        let j = t.saturating_sub(at(self.term_start));
        let high = self
            .upper
            .select1(t)
            .saturating_sub(at(self.upper_start))
            .saturating_sub(j);
        let width = at(self.low_width) as u32 & 63;
        let low_at = at(self.low_start).saturating_add(j.saturating_mul(width as usize));
        // At most the number of keys, whatever the bytes: callers add to it.
        ((high << width) | bits_at(self.lows, low_at, width) as usize).min(self.upper.ones())
    }

    /// The TERM rank of the edge where the key of rank `r` (among the keys
    /// other than the empty one) ends.
    #[inline(always)]
    pub(crate) fn terminal(&self, r: usize) -> usize {
        let mut x = self.root;
        let mut i = r;
        for _ in 0..=self.m.min(MAX_HEIGHT) {
            if x >= self.m {
                let base = self.term_start.try_get(x - self.m).unwrap_or(0) as usize;
                return base.saturating_add(i);
            }
            let start = self.node_start.try_get(x).unwrap_or(0) as usize;
            let ones = self.node_ones.try_get(x).unwrap_or(0) as usize;
            let pos = start.saturating_add(i);
            if pos >= self.tree.len() {
                return 0;
            }
            let bit = self.tree.get(pos);
            let rank1 = self.tree.rank1(pos);
            i = if bit {
                rank1.saturating_sub(ones)
            } else {
                pos.saturating_sub(rank1)
                    .saturating_sub(start.saturating_sub(ones))
            };
            x = self.children.try_get(2 * x + usize::from(bit)).unwrap_or(0) as usize;
        }
        0
    }

    /// The tree against the one the level counts make: the same Huffman
    /// tree, each node as many bits as keys below it, its ones those
    /// below child 1, in node order (so each walk is as short as the
    /// writer made it, and a crafted chain of nodes is refused).
    fn validate_tree(&self) -> Result<()> {
        let bad = |detail: &str| Err(corrupt(self.at, detail.to_string()));
        let d = self.depth;
        let mut count = vec![0u64; d + 1];
        for (l, c) in count.iter_mut().enumerate().skip(1) {
            *c = self.term_start.get(l) - self.term_start.get(l - 1);
        }
        let want = HuffmanTree::new(&count);
        let m = want.children.len() / 2;
        let same = self.m == m
            && self.root == want.root
            && (0..2 * m).all(|i| self.children.get(i) == want.children[i]);
        if !same {
            return bad("the level tree is not the Huffman tree of the level counts");
        }
        let (starts, ones_before) = node_layout(&want, &count);
        for k in 0..=m {
            let (at, ones) = (starts[k], ones_before[k]);
            let placed = self.node_start.get(k) == at
                && self.tree.len() as u64 >= at
                && self.tree.rank1(at as usize) as u64 == ones
                && (k == m || self.node_ones.get(k) == ones);
            if !placed {
                return bad("a level tree node's bits are not where its keys put them");
            }
        }
        if self.tree.len() as u64 != starts[m] {
            return bad("level tree nodes do not span its bits");
        }
        Ok(())
    }

    /// The level of the `t`-th TERM edge: a binary search of `term_start`.
    fn level_of_terminal(&self, t: usize) -> usize {
        // Levels without terminals share a `term_start` with the next:
        // the last level starting at or before `t` is the one.
        level_at(self.term_start, self.depth, t)
    }

    /// Checks what [`Levels::read`] took on trust, given the trie's edges
    /// and its number of keys other than the empty one: the level
    /// boundaries are the edges' levels, the lists' geometry is what their
    /// counts make it, the directories match their bits, and the tree maps
    /// every rank to a terminal whose list entry is that rank. (That the
    /// lists hold the key ranks is the trie's key-order walk, which also
    /// makes the lists a bijection, and then the tree its inverse.)
    pub(crate) fn validate(&self, edges: &Edges<'_>, keys: usize) -> Result<()> {
        let bad = |detail: &str| Err(corrupt(self.at, detail.to_string()));
        self.upper.validate()?;
        self.tree.validate()?;
        let d = self.depth;
        let start = |i: usize| self.edge_start.get(i) as usize;
        if edges.len() == 0 {
            return if d == 0 && self.m == 0 && keys == 0 {
                Ok(())
            } else {
                bad("key levels on a trie without edges")
            };
        }
        // Level 1 is the root's edges; level l + 1 starts at the first
        // child edge of level l's first edge with a child.
        if d == 0 || start(0) != 0 || start(d) != edges.len() {
            return bad("level boundaries do not span the edges");
        }
        for i in 0..d {
            if start(i) >= start(i + 1) {
                return bad("a level has no edges");
            }
            let next = if i + 1 < d {
                edges.select(LOUDS, edges.rank(HAS_CHILD, start(i)) + 1)
            } else if edges.rank(HAS_CHILD, edges.len()) != edges.rank(HAS_CHILD, start(i)) {
                return bad("edges below the deepest level");
            } else {
                edges.len()
            };
            if next != start(i + 1) {
                return bad("a level boundary is not where the level starts");
            }
        }
        for i in 0..=d {
            if self.term_start.get(i) as usize != edges.rank(TERM, start(i)) {
                return bad("a level's terminal count does not match its edges");
            }
        }
        // The lists' geometry.
        let n = keys as u64;
        if self.upper_start.get(0) != 0 || self.low_start.get(0) != 0 {
            return bad("level lists do not start at bit 0");
        }
        for l in 1..=d {
            let count = self.term_start.get(l) - self.term_start.get(l - 1);
            let (width, upper) = list_shape(n, count);
            let geometry_ok = self.low_width.get(l - 1) == u64::from(width)
                && self.upper_start.get(l) == self.upper_start.get(l - 1) + upper
                && self.low_start.get(l) == self.low_start.get(l - 1) + count * u64::from(width);
            if !geometry_ok {
                return bad("a level list's geometry does not match its key count");
            }
        }
        let lows_bits = self.lows.len() as u64 * 64;
        if self.upper_start.get(d) != self.upper.len() as u64
            || self.upper.ones() != keys
            || self.low_start.get(d).div_ceil(64) * 64 != lows_bits
        {
            return bad("level lists do not fill their bits");
        }
        for l in 1..=d {
            // Each level's ones inside its own stretch of `upper`.
            let (first, end) = (self.term_start.get(l - 1), self.term_start.get(l));
            if first < end {
                let lo = self.upper.select1(first as usize) as u64;
                let hi = self.upper.select1(end as usize - 1) as u64;
                if lo < self.upper_start.get(l - 1) || hi >= self.upper_start.get(l) {
                    return bad("a level's list spills out of its upper bits");
                }
            }
        }
        self.validate_tree()?;
        let widths_ok = self.edge_start.width() == bits_for(edges.len() as u64)
            && canonical_width(self.term_start)
            && canonical_width(self.upper_start)
            && canonical_width(self.low_start)
            && canonical_width(self.node_start)
            && self.low_width.width() == bits_for(63)
            && self.lows.width() == 64
            && self.children.width() == bits_for((self.m + d).saturating_sub(1) as u64)
            && self.node_ones.width() == bits_for(self.tree.ones() as u64);
        if !widths_ok {
            return bad("a key level array's width is not the canonical one");
        }
        for r in 0..keys {
            let t = self.terminal(r);
            if t >= keys || self.id(self.level_of_terminal(t), t) != r {
                return bad("the level tree does not invert the level lists");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A level sequence's section alone (boundaries made up to fit), read
    /// back: `id` and `terminal` against the merge they encode.
    fn roundtrip(seq: &[u32], depth: usize) {
        let mut count = vec![0u64; depth + 1];
        for &l in seq {
            count[l as usize] += 1;
        }
        // One edge per terminal, each level one edge larger than its keys.
        let mut edge_start = vec![0u64];
        let mut term_start = vec![0u64];
        for l in 1..=depth {
            edge_start.push(edge_start[l - 1] + count[l] + 1);
            term_start.push(term_start[l - 1] + count[l]);
        }
        let mut out = Vec::new();
        write_levels(&mut out, seq, &edge_start, &term_start);
        let mut r = WordReader::new(&out, 0);
        let levels = Levels::read(&mut r, edge_start[depth] as usize).unwrap();
        assert!(r.is_empty());
        levels.upper.validate().unwrap();
        levels.tree.validate().unwrap();
        let mut seen = vec![0usize; depth + 1];
        for (rank, &l) in seq.iter().enumerate() {
            let l = l as usize;
            let t = term_start[l - 1] as usize + seen[l];
            seen[l] += 1;
            assert_eq!(levels.id(l, t), rank, "level {l} terminal {t}");
            assert_eq!(levels.terminal(rank), t, "rank {rank}");
        }
        for l in 1..=depth {
            for e in edge_start[l - 1]..edge_start[l] {
                assert_eq!(levels.level_of_edge(e as usize), l);
            }
        }
    }

    proptest! {
        #[test]
        fn ids_and_terminals_invert(seq in proptest::collection::vec(1u32..12, 0..2000)) {
            roundtrip(&seq, 12);
        }
    }

    #[test]
    fn skewed_and_single_levels() {
        roundtrip(&[3; 500], 5);
        roundtrip(&[], 4);
        let skewed: Vec<u32> = (0..5000u32)
            .map(|i| if i % 97 == 0 { 1 + i % 30 } else { 7 })
            .collect();
        roundtrip(&skewed, 40);
        // Frequencies in a geometric series make the deepest Huffman tree.
        let mut geometric = Vec::new();
        for l in 1..=16u32 {
            geometric.extend(std::iter::repeat_n(l, 1 << (16 - l)));
        }
        geometric.sort_by_key(|&l| (l * 7919) % 17);
        roundtrip(&geometric, 16);
    }

    /// The byte offsets of the parts `read` takes, in order.
    fn part_offsets(words: &[u64]) -> Vec<usize> {
        let mut r = WordReader::new(words, 0);
        let mut at = vec![r.offset()];
        r.word("root").unwrap();
        for _ in 0..5 {
            at.push(r.offset());
            r.packed("part").unwrap();
        }
        at.push(r.offset());
        BitVec::read(&mut r, "upper").unwrap();
        at.push(r.offset());
        at
    }

    /// Lows and low widths of all ones: an id past every key unless
    /// clamped, which the trie's callers would overflow adding to.
    #[test]
    fn ids_stay_below_the_key_count_on_garbage() {
        let seq: Vec<u32> = (0..500u32).map(|i| 1 + i % 3).collect();
        let (edge_start, term_start) = (vec![0, 200, 400, 500], vec![0, 167, 334, 500]);
        let mut out = Vec::new();
        write_levels(&mut out, &seq, &edge_start, &term_start);
        let at = part_offsets(&out);
        // low_width (the 6th part) and lows (the 8th): data after the
        // count and width words, all ones.
        for part in [at[5], at[7]] {
            let (count, width) = (out[part / 8] as usize, out[part / 8 + 1] as u32);
            let data = pith_enc::packed::words_for(count, width).unwrap();
            out[part / 8 + 2..part / 8 + 2 + data].fill(u64::MAX);
        }
        let mut r = WordReader::new(&out, 0);
        let levels = Levels::read(&mut r, 500).unwrap();
        for t in 0..500 {
            for level in 1..=3 {
                assert!(levels.id(level, t) <= 500);
            }
        }
    }

    /// The tree's rank counters all ones: the walk from a key rank down
    /// the tree must not overflow adding them (the `trie_open` fuzzer's
    /// find, in `BitVec::rank1`).
    #[test]
    fn tree_walk_survives_corrupt_rank_counters() {
        let seq: Vec<u32> = (0..900u32).map(|i| 1 + (i * 7) % 5).collect();
        let (edge_start, term_start) = (
            vec![0, 180, 360, 540, 720, 900],
            vec![0, 180, 360, 540, 720, 900],
        );
        let mut out = Vec::new();
        write_levels(&mut out, &seq, &edge_start, &term_start);
        // The tree is the last part: nbits, ones, bits, then rank blocks.
        let mut r = WordReader::new(&out, 0);
        let levels = Levels::read(&mut r, 900).unwrap();
        let nbits = levels.tree.len();
        let tree_at = out.len() - (levels.tree.size_bytes() / 8);
        let rank_at = tree_at + 2 + nbits / 64 + 1;
        let rank_words = 2 * (nbits / 64 + 1).div_ceil(8);
        out[rank_at..rank_at + rank_words].fill(u64::MAX);
        let mut r = WordReader::new(&out, 0);
        let levels = Levels::read(&mut r, 900).unwrap();
        for rank in 0..900 {
            let _ = levels.terminal(rank);
        }
    }

    /// A section of a few words claiming 2^40 levels and tree nodes (packed
    /// arrays of width 0 take no data words): a walk must not try them all.
    #[test]
    fn walks_stay_short_on_huge_counts() {
        let huge = 1u64 << 40;
        let mut words = vec![0u64]; // root
        let empty_packed = |out: &mut Vec<u64>, count: u64| out.extend([count, 0, 0]);
        for _ in 0..4 {
            empty_packed(&mut words, huge + 1); // edge, term, upper, low starts
        }
        empty_packed(&mut words, huge); // low widths
        BitVecBuilder::with_len(0).write(&mut words); // upper
        empty_packed(&mut words, 0); // lows
        empty_packed(&mut words, 2 * (huge - 1)); // children
        empty_packed(&mut words, huge); // node starts
        empty_packed(&mut words, huge - 1); // node ones
        BitVecBuilder::with_len(100).write(&mut words); // tree
        let mut r = WordReader::new(&words, 0);
        let levels = Levels::read(&mut r, usize::MAX).unwrap();
        assert!(r.is_empty());
        assert_eq!(levels.m, huge as usize - 1);
        for rank in 0..50 {
            let _ = levels.terminal(rank);
            let _ = levels.id(1 + rank, rank);
        }
    }

    #[test]
    fn walks_stay_bounded_on_garbage() {
        let seq: Vec<u32> = (0..3000u32).map(|i| 1 + (i * 31) % 9).collect();
        let depth = 9;
        let mut edge_start = vec![0u64];
        let mut term_start = vec![0u64];
        for l in 1..=depth {
            let c = seq.iter().filter(|&&x| x as usize == l).count() as u64;
            edge_start.push(edge_start[l - 1] + c);
            term_start.push(term_start[l - 1] + c);
        }
        let mut out = Vec::new();
        write_levels(&mut out, &seq, &edge_start, &term_start);
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for round in 0..200 {
            let mut bad = out.clone();
            for _ in 0..1 + round % 8 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x as usize) % bad.len();
                bad[i] ^= 1 << (x >> 58);
            }
            let mut r = WordReader::new(&bad, 0);
            if let Ok(levels) = Levels::read(&mut r, 3000) {
                for rank in (0..3000).step_by(7) {
                    let _ = levels.terminal(rank);
                    let _ = levels.id(1 + rank % 12, rank);
                    let _ = levels.level_of_edge(rank);
                }
            }
        }
    }
}
