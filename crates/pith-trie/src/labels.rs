//! The label store: the second and later bytes of every multi-byte edge label.
//!
//! Layout: `symbols | offsets: EliasFano (count + 1 values) | pool (byte array)`.
//! Label `i` is `pool[offsets[i] .. offsets[i + 1]]`, encoded by the symbol
//! table (see [`crate::symbols`]). [`Labels::read`] checks that the offsets
//! start at 0, never decrease and end at the pool length, so every slice
//! taken by a query is in bounds.

use crate::elias_fano::{write_elias_fano, EliasFano};
use crate::error::Result;
use crate::symbols::{LabelCmp, SymbolTable, Symbols};
use crate::words::{corrupt, push_bytes, WordReader};

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
    write_elias_fano(out, &offsets);
    push_bytes(out, &pool);
}

/// A read-only label store.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Labels<'a> {
    symbols: Symbols<'a>,
    offsets: EliasFano<'a>,
    pool: &'a [u8],
}

impl<'a> Labels<'a> {
    pub(crate) fn read(r: &mut WordReader<'a>, count: usize) -> Result<Self> {
        let off = r.offset();
        let symbols = Symbols::read(r)?;
        let offsets = EliasFano::read(r, "label offsets")?;
        let pool = r.bytes("label pool")?;
        if offsets.len() != count + 1 {
            return Err(corrupt(
                off,
                format!(
                    "label offsets hold {} entries, expected {}",
                    offsets.len(),
                    count + 1
                ),
            ));
        }
        let mut prev = 0;
        for i in 0..offsets.len() {
            let v = offsets.get(i);
            if (i == 0 && v != 0) || v < prev {
                return Err(corrupt(off, format!("label offset {i} out of order")));
            }
            prev = v;
        }
        if prev != pool.len() as u64 {
            return Err(corrupt(off, "label offsets do not end at the pool length"));
        }
        Ok(Labels {
            symbols,
            offsets,
            pool,
        })
    }

    pub(crate) fn size_bytes(&self) -> usize {
        let table = if self.symbols.mode() == crate::symbols::Mode::Symbols {
            255 * 8 + 264
        } else {
            0
        };
        8 + table + self.offsets.size_bytes() + 8 + self.pool.len().div_ceil(8) * 8
    }

    pub(crate) fn symbols(&self) -> Symbols<'a> {
        self.symbols
    }

    pub(crate) fn pool_bytes(&self) -> usize {
        self.pool.len()
    }

    #[inline(always)]
    fn code(&self, i: usize) -> &'a [u8] {
        let (a, b) = self.offsets.get_pair(i);
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
