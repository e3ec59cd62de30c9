//! Elias-Fano coding of a non-decreasing integer sequence, readable in place.
//!
//! Layout: `n | universe | low: Packed | high: BitVec`. With
//! `l = floor(log2(universe / n))`, value `i` keeps its low `l` bits in `low`
//! and sets bit `(v_i >> l) + i` of `high`; `v_i` is then
//! `((select1(high, i) - i) << l) | low[i]`. This takes about `2 + l` bits per
//! value; the trie uses it for the offsets of its label pool, where a plain
//! `u64` array would cost more than the labels save.
//!
//! [`EliasFano::read`] checks the high bits have exactly `n` ones, so every
//! `get(i)` with `i < n` is in bounds; callers check the decoded values
//! against whatever they index.

use crate::bitvec::{BitVec, BitVecBuilder};
use crate::error::Result;
use crate::packed::{bits_for, write_packed, Packed};
use crate::words::{corrupt, WordReader};

fn low_width(n: usize, universe: u64) -> u32 {
    if n == 0 || universe <= n as u64 {
        0
    } else {
        bits_for(universe / n as u64) - 1
    }
}

/// Writes a non-decreasing sequence.
pub(crate) fn write_elias_fano(out: &mut Vec<u64>, values: &[u64]) {
    debug_assert!(values.windows(2).all(|w| w[0] <= w[1]));
    let universe = values.last().copied().unwrap_or(0);
    let l = low_width(values.len(), universe);
    out.push(values.len() as u64);
    out.push(universe);
    let mask = if l == 0 { 0 } else { (1u64 << l) - 1 };
    let lows: Vec<u64> = values.iter().map(|v| v & mask).collect();
    write_packed(out, &lows, l);
    let high_len = values.len() + (universe >> l) as usize + 1;
    let mut high = BitVecBuilder::with_len(high_len);
    for (i, v) in values.iter().enumerate() {
        high.set((v >> l) as usize + i);
    }
    high.write(out);
}

/// A read-only Elias-Fano sequence.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EliasFano<'a> {
    len: usize,
    l: u32,
    low: Packed<'a>,
    high: BitVec<'a>,
}

impl<'a> EliasFano<'a> {
    pub(crate) fn read(r: &mut WordReader<'a>, what: &'static str) -> Result<Self> {
        let off = r.offset();
        let len = r.count(what, u64::MAX >> 8)?;
        let universe = r.word(what)?;
        let l = low_width(len, universe);
        let low = Packed::read(r, what)?;
        let high = BitVec::read(r, what)?;
        if low.len() != len || high.ones() != len {
            return Err(corrupt(
                off,
                format!("{what}: Elias-Fano parts disagree on the length"),
            ));
        }
        let high_len = (universe >> l).checked_add(len as u64 + 1);
        if low.width() != l || high_len != Some(high.len() as u64) {
            return Err(corrupt(
                off,
                format!("{what}: Elias-Fano widths do not match the universe"),
            ));
        }
        let ef = EliasFano { len, l, low, high };
        let last = if len == 0 { 0 } else { ef.get(len - 1) };
        if last != universe {
            return Err(corrupt(
                off,
                format!("{what}: Elias-Fano universe is not the last value"),
            ));
        }
        Ok(ef)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn size_bytes(&self) -> usize {
        16 + self.low.size_bytes() + self.high.size_bytes()
    }

    /// Value `i`, for `i < len`.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> u64 {
        let hi = (self.high.select1(i) - i) as u64;
        (hi << self.l) | self.low.get(i)
    }

    /// Values `i` and `i + 1`, for `i + 1 < len`, with one select.
    #[inline(always)]
    pub(crate) fn get_pair(&self, i: usize) -> (u64, u64) {
        let p = self.high.select1(i);
        let q = self.high.next_one(p + 1);
        let a = ((p - i) as u64) << self.l | self.low.get(i);
        let b = ((q - i - 1) as u64) << self.l | self.low.get(i + 1);
        (a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn roundtrip(mut values in proptest::collection::vec(0u64..1_000_000, 0..400)) {
            values.sort_unstable();
            let mut out = Vec::new();
            write_elias_fano(&mut out, &values);
            let mut r = WordReader::new(&out, 0);
            let ef = EliasFano::read(&mut r, "t").unwrap();
            prop_assert!(r.is_empty());
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(ef.get(i), v);
                if i + 1 < values.len() {
                    prop_assert_eq!(ef.get_pair(i), (v, values[i + 1]));
                }
            }
        }
    }
}
