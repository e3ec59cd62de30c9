//! Key ids of terminals, and terminals of key ids: one interface over the
//! two encodings a trie may carry (see `docs/format.md`).
//!
//! A key's id is its rank in sorted order, but the trie numbers its
//! terminals breadth-first. Versions 1 and 2 store the map between the two
//! as a permutation with cycle shortcuts ([`crate::perm`], 19-23 bits a
//! key measured); version 3 stores only the level of each key in key
//! order ([`crate::levels`], 11-15 bits a key), which is all the map
//! depends on. Terminal ranks here count TERM edges only; the empty key, when
//! present, is id 0 in both and handled by the trie.

use crate::edges::Edges;
use crate::error::Result;
use crate::levels::Levels;
use crate::perm::Perm;

/// The terminal <-> id map of one trie. Held inline (one per trie, 616
/// bytes): boxing the larger variant would add a pointer chase to every
/// lookup.
#[derive(Clone, Copy, Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum KeyIds<'a> {
    /// Versions 1 and 2: `pi[terminal rank]`, the empty key's terminal
    /// first when present.
    Cycles(Perm<'a>),
    /// Version 3: the keys' levels in key order.
    Levels(Levels<'a>),
}

impl KeyIds<'_> {
    /// The id of the key ending below the `t`-th TERM edge, which is at
    /// `level` (`None`: not known to the caller, looked up when needed);
    /// `root` says whether the empty key is present.
    #[inline(always)]
    pub(crate) fn id(&self, t: usize, level: Option<usize>, root: bool, e: usize) -> u64 {
        match self {
            KeyIds::Cycles(p) => p.get(usize::from(root) + t) as u64,
            KeyIds::Levels(l) => {
                let level = level.unwrap_or_else(|| l.level_of_edge(e));
                (usize::from(root) + l.id(level, t)) as u64
            }
        }
    }

    /// The TERM rank of key `id`'s edge, or `None` for the empty key.
    #[inline(always)]
    pub(crate) fn terminal(&self, id: usize, root: bool) -> Option<usize> {
        match self {
            KeyIds::Cycles(p) => {
                let t = p.inverse(id);
                if root {
                    t.checked_sub(1)
                } else {
                    Some(t)
                }
            }
            KeyIds::Levels(l) => {
                if root {
                    id.checked_sub(1).map(|r| l.terminal(r))
                } else {
                    Some(l.terminal(id))
                }
            }
        }
    }

    /// Checks the encoding's own invariants (the trie's key-order walk
    /// checks the ids themselves); `keys` counts the TERM edges.
    pub(crate) fn validate(&self, edges: &Edges<'_>, keys: usize, root: bool) -> Result<()> {
        match self {
            KeyIds::Cycles(p) => {
                p.validate()?;
                if root && p.get(0) != 0 {
                    return Err(crate::words::corrupt(
                        crate::format::HEADER_BYTES,
                        "the empty key does not have id 0",
                    ));
                }
                Ok(())
            }
            KeyIds::Levels(l) => l.validate(edges, keys),
        }
    }

    pub(crate) fn size_bytes(&self) -> usize {
        match self {
            KeyIds::Cycles(p) => p.size_bytes(),
            KeyIds::Levels(l) => l.size_bytes(),
        }
    }
}
