//! The first edge of every internal node, built in memory at open.
//!
//! A lookup's step down a level needs the child node's edge range: in
//! LOUDS-sparse order that is a select on the LOUDS flags (a sampled
//! position, then a scan of ones) and the next one after it. Measured on
//! this machine's file paths, Debian package keys and their homepage URLs,
//! those two were a fifth to a quarter of a lookup's time; an array of
//! node starts removes both. Stored in the file it would cost 17 to 20 bits
//! a node; here it is 16 bits a node plus a 32-bit base per 64 nodes, made
//! by one pass over the LOUDS words when the trie opens.
//!
//! Invariants: `deltas` has one entry per internal node and one more (the
//! edge count, where a node after the last would start), node `k` starts
//! at edge `bases[k / 64] + deltas[k]`, and nodes start in increasing
//! order. 64 nodes of at most 256 edges each span at most 16,384 edges,
//! so a delta fits in 16 bits. A trie with more than [`MAX_NODES`] nodes,
//! or LOUDS flags that disagree with the header's node count, lie past the
//! last edge or put 64 nodes more than 65,535 edges apart (bytes not
//! validated), gets none,
//! and its queries select as before. Every read is a checked `get`, so a wrong
//! index (it can only come from bytes not validated) gives wrong ranges,
//! never an out-of-bounds read.

use crate::edges::{Edges, LOUDS};

/// Tries with more internal nodes than this (about 4 MiB of index, and a
/// few milliseconds of open) select instead: open stays fast for the
/// largest tries.
const MAX_NODES: usize = 1 << 21;

/// Nodes per base.
const GROUP: usize = 64;

#[derive(Clone, Debug)]
pub(crate) struct NodeStarts {
    bases: Vec<u32>,
    deltas: Vec<u16>,
}

impl NodeStarts {
    /// The node starts of `edges`, or `None` (see the module docs).
    pub(crate) fn build(edges: &Edges<'_>) -> Option<Self> {
        let nodes = edges.ones(LOUDS);
        let n = edges.len();
        if nodes > MAX_NODES || u32::try_from(n).is_err() {
            return None;
        }
        let mut index = NodeStarts {
            bases: Vec::with_capacity((nodes + 1).div_ceil(GROUP)),
            deltas: Vec::with_capacity(nodes + 1),
        };
        for b in 0..=n / 64 {
            let mut word = edges.flag_word(LOUDS, b);
            while word != 0 {
                let at = b * 64 + word.trailing_zeros() as usize;
                if index.deltas.len() == nodes || at >= n {
                    return None; // more ones than counted, or past the edges
                }
                index.push(at)?;
                word &= word - 1;
            }
        }
        index.push(n)?;
        (index.deltas.len() == nodes + 1).then_some(index)
    }

    /// Appends the next node's start, `None` if it is too far from its
    /// group's base (or before it: flags not validated).
    fn push(&mut self, at: usize) -> Option<()> {
        if self.deltas.len() % GROUP == 0 {
            self.bases.push(at as u32);
        }
        let base = *self.bases.last()? as usize;
        self.deltas.push(u16::try_from(at.checked_sub(base)?).ok()?);
        Some(())
    }

    #[inline(always)]
    fn start(&self, k: usize) -> Option<usize> {
        Some(*self.bases.get(k / GROUP)? as usize + usize::from(*self.deltas.get(k)?))
    }

    /// The edges of internal node `k`, `None` past the last node.
    #[inline(always)]
    pub(crate) fn children(&self, k: usize) -> Option<(usize, usize)> {
        Some((self.start(k)?, self.start(k + 1)?))
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bases.capacity() * 4 + self.deltas.capacity() * 2
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;
    use crate::Trie;

    fn check(keys: &BTreeSet<Vec<u8>>) {
        let bytes = crate::build(keys).unwrap();
        let trie = Trie::open_validated(bytes.as_bytes()).unwrap();
        let nodes = trie.edges.ones(LOUDS);
        if trie.edges.len() == 0 {
            return;
        }
        let index = NodeStarts::build(&trie.edges).expect("built");
        for k in 0..nodes {
            let s = trie.edges.select(LOUDS, k);
            assert_eq!(
                index.children(k),
                Some((s, trie.edges.next_louds(s + 1))),
                "node {k}"
            );
        }
        assert_eq!(index.children(nodes), None);
    }

    proptest! {
        #[test]
        fn starts_are_the_selects(keys in proptest::collection::btree_set(
            proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..10),
            0..400,
        )) {
            check(&keys);
        }
    }

    /// Wide nodes (every byte under one parent, 256 times) stay within a
    /// group's 16-bit reach.
    #[test]
    fn wide_nodes_fit() {
        let keys: BTreeSet<Vec<u8>> = (0..=255u8)
            .flat_map(|a| (0..=255u8).map(move |b| vec![a, b, b'x']))
            .collect();
        check(&keys);
    }
}
