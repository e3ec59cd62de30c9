//! The label store: the second and later bytes of every multi-byte edge label.
//!
//! Layout: `symbols | bases | deltas | pool (byte array)`. The `count + 1`
//! offsets are `offset[i] = bases[i / 64] + deltas[i]`, with `bases` a
//! packed array of width `bits_for(pool length)` and `deltas` a packed array
//! of width `bits_for(largest delta)`. Label `i` is
//! `pool[offset[i] .. offset[i + 1]]`, encoded by the symbol table (see
//! [`crate::symbols`]). [`Labels::read`] checks the parts' lengths in O(1);
//! [`Labels::validate`] checks that the offsets start at 0, never decrease
//! and end at the pool length. Queries take each slice with a checked
//! `get`, so unvalidated offsets give a wrong label, never an out-of-bounds
//! read.
//!
//! Sampled bases with packed deltas rather than Elias-Fano: a label's extent
//! is then two plain reads instead of a select, which a lookup pays at every
//! trie level with a multi-byte label, for a few more bits per label.

use pith_enc::packed::{bits_for, Packed};

use crate::error::Result;
use crate::symbols::{LabelCmp, SymbolTable, Symbols};
use crate::words::{corrupt, packed_bytes, push_bytes, push_packed, WordReader};

/// Offsets per sampled base.
const SAMPLE: usize = 64;

/// Encodes labels into a store.
pub(crate) fn write_labels<'k>(
    out: &mut Vec<u64>,
    labels: impl ExactSizeIterator<Item = &'k [u8]> + Clone,
) {
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
    let deltas: Vec<u64> = offsets
        .iter()
        .enumerate()
        .map(|(i, v)| v - bases[i / SAMPLE])
        .collect();
    push_packed(out, &bases, bits_for(pool.len() as u64));
    push_packed(
        out,
        &deltas,
        bits_for(deltas.iter().copied().max().unwrap_or(0)),
    );
    push_bytes(out, &pool);
}

/// A read-only label store.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Labels<'a> {
    symbols: Symbols<'a>,
    bases: Packed<'a>,
    deltas: Packed<'a>,
    pool: &'a [u8],
    /// Byte offset of the section in the file, for error messages.
    at: usize,
}

impl<'a> Labels<'a> {
    pub(crate) fn read(r: &mut WordReader<'a>, count: usize) -> Result<Self> {
        let off = r.offset();
        let symbols = Symbols::read(r)?;
        let bases = r.packed("label offset bases")?;
        let deltas = r.packed("label offset deltas")?;
        let pool = r.bytes("label pool")?;
        if deltas.len() != count + 1 || bases.len() != deltas.len().div_ceil(SAMPLE) {
            let detail = format!(
                "label offsets hold {} entries, expected {}",
                deltas.len(),
                count + 1
            );
            return Err(corrupt(off, detail));
        }
        Ok(Labels {
            symbols,
            bases,
            deltas,
            pool,
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
