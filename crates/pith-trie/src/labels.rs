//! The label store: the second and later bytes of every multi-byte edge label.
//!
//! Two layouts; the trie's format version says which (see `docs/format.md`):
//!
//! * **inline** (version 1): `store`, one entry per multi-byte label, in
//!   edge order;
//! * **shared** (version 2): `store | refs`, the store holding each
//!   distinct label once (in order of first use) and `refs` (packed, width
//!   `bits_for(distinct - 1)`) the store entry of each multi-byte label.
//!   Real key sets repeat whole labels: on the 581,455 file paths of this
//!   machine 740,894 labels are 138,617 distinct strings (`__init__.py`,
//!   `.cpython-311.pyc`, `LICENSE`, ...): the part of a minimal
//!   automaton's suffix sharing (fst merges whole equal subtrees) that a
//!   trie with key-rank ids can have.
//!
//! A store is `symbols | bases | deltas | pool (byte array)`. Its `count +
//! 1` offsets are `offset[i] = bases[i / 64] + deltas[i]`, with `bases` a
//! packed array of width `bits_for(pool length)` and `deltas` a packed array
//! of width `bits_for(largest delta)`. Entry `i` is
//! `pool[offset[i] .. offset[i + 1]]`, encoded by the symbol table (see
//! [`crate::symbols`]).
//!
//! [`Labels::read`] checks the parts' lengths in O(1); [`Labels::validate`]
//! checks that the offsets start at 0, never decrease and end at the pool
//! length, and that every ref names an entry. Queries take each slice with
//! a checked `get`, so unvalidated offsets or refs give a wrong label,
//! never an out-of-bounds read.
//!
//! Sampled bases with packed deltas rather than Elias-Fano: a label's extent
//! is then two plain reads instead of a select, which a lookup pays at every
//! trie level with a multi-byte label, for a few more bits per label.
//!
//! The builder writes both layouts and keeps the shared one only when it
//! makes the labels at least [`SHARED_GAIN`] smaller: a ref costs one more
//! read per label on every lookup step.

use std::collections::HashMap;

use pith_enc::packed::{bits_for, Packed};

use crate::error::Result;
use crate::symbols::{LabelCmp, SymbolTable, Symbols};
use crate::words::{corrupt, packed_bytes, push_bytes, push_packed, push_packed_iter, WordReader};

/// Offsets per sampled base.
const SAMPLE: usize = 64;

/// The shared layout is kept when it is at most this fraction of the
/// inline one's bytes (numerator, denominator).
pub(crate) const SHARED_GAIN: (usize, usize) = (7, 8);

/// Which layout the labels were written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// One store entry per label (format version 1).
    Inline,
    /// Distinct labels once, and a ref per label (format version 2).
    Shared,
}

/// Encodes labels in the smaller layout (see [`SHARED_GAIN`]) and says
/// which.
pub(crate) fn write_labels<'k>(
    out: &mut Vec<u64>,
    labels: impl ExactSizeIterator<Item = &'k [u8]> + Clone,
) -> Layout {
    if !repeats_may_pay(labels.clone()) {
        write_store(out, labels);
        return Layout::Inline;
    }
    let (distinct, refs) = dedup(labels.clone());
    let mut shared = Vec::new();
    write_store(&mut shared, distinct.iter().copied());
    let width = bits_for(distinct.len().saturating_sub(1) as u64);
    push_packed_iter(&mut shared, refs.iter().map(|&r| u64::from(r)), width);
    drop((distinct, refs));
    let mut inline = Vec::new();
    write_store(&mut inline, labels);
    if shared.len() * SHARED_GAIN.1 <= inline.len() * SHARED_GAIN.0 {
        out.extend_from_slice(&shared);
        Layout::Shared
    } else {
        out.extend_from_slice(&inline);
        Layout::Inline
    }
}

/// Whether the labels repeat enough for the shared layout to be worth
/// building: the bytes of repeated labels must be at least twice what the
/// refs cost, since a pool compresses labels about 2x (1.8-2x measured on
/// Debian keys and file paths). Counted on (crc32c, length) pairs, 8 bytes
/// a label, so that a key set of unique labels never pays for a hash map of
/// them (it was the builder's largest allocation on Debian keys); a crc
/// collision only nudges the estimate.
fn repeats_may_pay<'k>(labels: impl ExactSizeIterator<Item = &'k [u8]>) -> bool {
    let count = labels.len();
    let mut seen: Vec<u64> = labels
        .map(|l| u64::from(crc32c::crc32c(l)) << 32 | l.len().min(u32::MAX as usize) as u64)
        .collect();
    seen.sort_unstable();
    let mut distinct = 0u64;
    let mut repeated_bytes = 0u64;
    for (i, &k) in seen.iter().enumerate() {
        if i > 0 && seen[i - 1] == k {
            repeated_bytes += k & u64::from(u32::MAX);
        } else {
            distinct += 1;
        }
    }
    let refs_bytes = count as u64 * u64::from(bits_for(distinct.saturating_sub(1))) / 8;
    distinct < count as u64 && repeated_bytes >= 2 * refs_bytes
}

/// The distinct labels in order of first use, and each label's index
/// among them.
fn dedup<'k>(labels: impl ExactSizeIterator<Item = &'k [u8]>) -> (Vec<&'k [u8]>, Vec<u32>) {
    let mut ids: HashMap<&[u8], u32> = HashMap::new();
    let mut distinct = Vec::new();
    let refs = labels
        .map(|label| {
            *ids.entry(label).or_insert_with(|| {
                distinct.push(label);
                // Fewer labels than edges, and edges are below 2^32 - 1.
                distinct.len() as u32 - 1
            })
        })
        .collect();
    (distinct, refs)
}

/// Encodes entries into a store.
fn write_store<'k>(out: &mut Vec<u64>, labels: impl ExactSizeIterator<Item = &'k [u8]> + Clone) {
    let table = SymbolTable::train(labels.clone());
    let mut pool = Vec::new();
    let mut offsets = Vec::with_capacity(labels.len() + 1);
    offsets.push(0u64);
    for label in labels {
        table.encode(label, &mut pool);
        offsets.push(pool.len() as u64);
    }
    table.write(out);
    let bases: Vec<u64> = offsets.iter().step_by(SAMPLE).copied().collect();
    let delta = |(i, v): (usize, &u64)| v - bases[i / SAMPLE];
    let widest = offsets.iter().enumerate().map(delta).max().unwrap_or(0);
    push_packed(out, &bases, bits_for(pool.len() as u64));
    push_packed_iter(out, offsets.iter().enumerate().map(delta), bits_for(widest));
    push_bytes(out, &pool);
}

/// A read-only label store.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Labels<'a> {
    symbols: Symbols<'a>,
    bases: Packed<'a>,
    deltas: Packed<'a>,
    pool: &'a [u8],
    /// The store entry of each label, in the shared layout.
    refs: Option<Packed<'a>>,
    /// Byte offset of the section in the file, for error messages.
    at: usize,
}

impl<'a> Labels<'a> {
    /// Takes a labels section of `count` labels in `layout` in O(1).
    pub(crate) fn read(r: &mut WordReader<'a>, count: usize, layout: Layout) -> Result<Self> {
        let off = r.offset();
        let symbols = Symbols::read(r)?;
        let bases = r.packed("label offset bases")?;
        let deltas = r.packed("label offset deltas")?;
        let pool = r.bytes("label pool")?;
        let entries = match layout {
            Layout::Inline => count,
            Layout::Shared => deltas.len().saturating_sub(1),
        };
        if deltas.len() != entries + 1 || bases.len() != deltas.len().div_ceil(SAMPLE) {
            let detail = format!(
                "label offsets hold {} entries, expected {}",
                deltas.len(),
                entries + 1
            );
            return Err(corrupt(off, detail));
        }
        let refs = match layout {
            Layout::Inline => None,
            Layout::Shared => {
                let at = r.offset();
                let refs = r.packed("label refs")?;
                if refs.len() != count || refs.width() != bits_for(entries.saturating_sub(1) as u64)
                {
                    return Err(corrupt(
                        at,
                        format!(
                            "label refs hold {} entries of {} bits, expected {count} of {}",
                            refs.len(),
                            refs.width(),
                            bits_for(entries.saturating_sub(1) as u64)
                        ),
                    ));
                }
                Some(refs)
            }
        };
        Ok(Labels {
            symbols,
            bases,
            deltas,
            pool,
            refs,
            at: off,
        })
    }

    /// Checks what [`Labels::read`] took on trust: the offsets start at 0,
    /// never decrease and end at the pool length.
    pub(crate) fn validate(&self) -> Result<()> {
        let mut prev = 0;
        for i in 0..self.deltas.len() {
            let v = self.offset(i);
            if (i == 0 && v != 0) || v < prev {
                return Err(corrupt(self.at, format!("label offset {i} out of order")));
            }
            prev = v;
        }
        if prev != self.pool.len() as u64 {
            return Err(corrupt(
                self.at,
                "label offsets do not end at the pool length",
            ));
        }
        if let Some(refs) = self.refs {
            let entries = self.deltas.len() - 1;
            if let Some(i) = (0..refs.len()).find(|&i| refs.get(i) >= entries as u64) {
                return Err(corrupt(
                    self.at,
                    format!("label ref {i} names no entry of the {entries} stored"),
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn size_bytes(&self) -> usize {
        let table = if self.symbols.mode() == crate::symbols::Mode::Symbols {
            255 * 8 + 264
        } else {
            0
        };
        8 + table
            + packed_bytes(&self.bases)
            + packed_bytes(&self.deltas)
            + 8
            + self.pool.len().div_ceil(8) * 8
            + self.refs_bytes()
    }

    /// Bytes of the refs (0 in the inline layout).
    pub(crate) fn refs_bytes(&self) -> usize {
        self.refs.as_ref().map_or(0, packed_bytes)
    }

    pub(crate) fn symbols(&self) -> Symbols<'a> {
        self.symbols
    }

    pub(crate) fn pool_bytes(&self) -> usize {
        self.pool.len()
    }

    #[inline(always)]
    fn offset(&self, i: usize) -> u64 {
        self.bases.get(i / SAMPLE).wrapping_add(self.deltas.get(i))
    }

    /// The encoded label `i`; empty for `i` past the last label or offsets
    /// that do not delimit a slice of the pool (bytes not yet validated).
    #[inline(always)]
    fn code(&self, i: usize) -> &'a [u8] {
        let i = match self.refs {
            None => i,
            Some(refs) => match refs.try_get(i) {
                Some(entry) => entry as usize,
                None => return &[],
            },
        };
        if i + 1 >= self.deltas.len() {
            return &[];
        }
        let (a, b) = (self.offset(i), self.offset(i + 1));
        self.pool.get(a as usize..b as usize).unwrap_or(&[])
    }

    /// Appends label `i` to `out`.
    #[inline(always)]
    pub(crate) fn decode(&self, i: usize, out: &mut Vec<u8>) {
        self.symbols.decode(self.code(i), out);
    }

    /// Compares label `i` with the start of `query`.
    #[inline(always)]
    pub(crate) fn compare(&self, i: usize, query: &[u8]) -> LabelCmp {
        self.symbols.compare(self.code(i), query)
    }
}
