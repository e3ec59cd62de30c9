//! Record offsets: a non-decreasing sequence as sampled bases plus packed deltas.
//!
//! Layout (`u64` words): `count | width | bases[ceil(count / 64)] |
//! deltas[ceil(count * width / 64) + 1]`. Value `i` is
//! `bases[i / 64] + delta[i]`, where `delta[i]` is bits
//! `i*width .. (i+1)*width` of the little-endian delta bit stream. One read
//! of a base and one of a delta (usually the same cache line for `i` and
//! `i + 1`) give a record's extent: cheaper than Elias-Fano's select, at
//! `width + 1` bits per record, where `width` covers the largest span of 64
//! consecutive records.

use crate::error::{Error, Result};

const SAMPLE: usize = 64;

fn bits_for(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// Appends the encoding of `values` (non-decreasing) to `out`.
pub(crate) fn write_offsets(out: &mut Vec<u64>, values: &[u64]) {
    let bases: Vec<u64> = values.chunks(SAMPLE).map(|c| c[0]).collect();
    let max_delta = values
        .iter()
        .enumerate()
        .map(|(i, v)| v - bases[i / SAMPLE])
        .max()
        .unwrap_or(0);
    let width = bits_for(max_delta);
    out.push(values.len() as u64);
    out.push(u64::from(width));
    out.extend_from_slice(&bases);
    let start = out.len();
    out.resize(start + (values.len() * width as usize).div_ceil(64) + 1, 0);
    if width == 0 {
        return;
    }
    let words = &mut out[start..];
    for (i, v) in values.iter().enumerate() {
        let d = v - bases[i / SAMPLE];
        let bit = i * width as usize;
        let (w, off) = (bit / 64, bit % 64);
        words[w] |= d << off;
        if off + width as usize > 64 {
            words[w + 1] |= d >> (64 - off);
        }
    }
}

/// A read-only offsets array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Offsets<'a> {
    len: usize,
    width: u32,
    bases: &'a [u64],
    deltas: &'a [u64],
}

impl<'a> Offsets<'a> {
    /// Parses `words` (all of them) as an offsets array.
    pub(crate) fn read(words: &'a [u64], offset: u64) -> Result<Self> {
        let bad = |detail: &str| Error::Corrupt {
            offset,
            detail: detail.to_string(),
        };
        let (&count, rest) = words
            .split_first()
            .ok_or_else(|| bad("offsets: missing count"))?;
        let (&width, rest) = rest
            .split_first()
            .ok_or_else(|| bad("offsets: missing width"))?;
        if width > 64 || count > (rest.len() as u64) * 64 {
            return Err(bad("offsets: count or width out of range"));
        }
        let len = count as usize;
        let nbases = len.div_ceil(SAMPLE);
        let ndeltas = (len * width as usize).div_ceil(64) + 1;
        if rest.len() != nbases + ndeltas {
            return Err(bad("offsets: section size disagrees with count and width"));
        }
        let (bases, deltas) = rest.split_at(nbases);
        Ok(Offsets {
            len,
            width: width as u32,
            bases,
            deltas,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Value `i`, for `i < len`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        let base = self.bases[i / SAMPLE];
        if self.width == 0 {
            return base;
        }
        let bit = i * self.width as usize;
        let (w, off) = (bit / 64, (bit % 64) as u32);
        let lo = self.deltas[w] >> off;
        let hi = self.deltas[w + 1].checked_shl(64 - off).unwrap_or(0);
        let mask = if self.width == 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        };
        base.wrapping_add((lo | hi) & mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn roundtrip(mut values in proptest::collection::vec(0u64..1 << 40, 0..500)) {
            values.sort_unstable();
            let mut out = Vec::new();
            write_offsets(&mut out, &values);
            let o = Offsets::read(&out, 0).unwrap();
            prop_assert_eq!(o.len(), values.len());
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(o.get(i), v);
            }
        }
    }
}
