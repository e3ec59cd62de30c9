//! Record offsets: a non-decreasing sequence as sampled bases plus packed deltas.
//!
//! Layout (`u64` words): `count | width | bases[ceil(count / 64)] |
//! deltas[ceil(count * width / 64) + 1]`. Value `i` is
//! `bases[i / 64] + delta[i]`, where `delta[i]` is bits
//! `i*width .. (i+1)*width` of the little-endian delta bit stream (a
//! [`pith_enc::packed`] stream followed by one zero word). One read
//! of a base and one of a delta (usually the same cache line for `i` and
//! `i + 1`) give a record's extent: cheaper than Elias-Fano's select, at
//! `width + 1` bits per record, where `width` covers the largest span of 64
//! consecutive records.

use pith_enc::packed::{self, bits_for, Packed};

use crate::error::{Error, Result};

const SAMPLE: usize = 64;

/// Appends the encoding of `values` (non-decreasing) to `out`.
pub(crate) fn write_offsets(out: &mut Vec<u64>, values: &[u64]) {
    let bases: Vec<u64> = values.chunks(SAMPLE).map(|c| c[0]).collect();
    let deltas = values
        .iter()
        .enumerate()
        .map(|(i, v)| v - bases[i / SAMPLE]);
    let width = bits_for(deltas.clone().max().unwrap_or(0));
    out.push(values.len() as u64);
    out.push(u64::from(width));
    out.extend_from_slice(&bases);
    packed::pack_into(out, deltas, width);
    out.push(0);
}

/// A read-only offsets array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Offsets<'a> {
    bases: &'a [u64],
    deltas: Packed<'a>,
}

impl<'a> Offsets<'a> {
    /// Parses an offsets array at the start of `words`; returns it and the
    /// number of words it takes (what follows is the caller's).
    pub(crate) fn read(words: &'a [u64], offset: u64) -> Result<(Self, usize)> {
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
        let (len, width) = (count as usize, width as u32);
        let nbases = len.div_ceil(SAMPLE);
        let short = || bad("offsets: section size disagrees with count and width");
        let ndeltas = packed::words_for(len, width)
            .map(|n| n + 1)
            .filter(|&n| rest.len().checked_sub(nbases).is_some_and(|left| n <= left))
            .ok_or_else(short)?;
        let (bases, rest) = rest.split_at(nbases);
        let deltas = Packed::new(&rest[..ndeltas], len, width).ok_or_else(short)?;
        Ok((Offsets { bases, deltas }, 2 + nbases + ndeltas))
    }

    pub(crate) fn len(&self) -> usize {
        self.deltas.len()
    }

    /// Value `i`, for `i < len`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.bases[i / SAMPLE].wrapping_add(self.deltas.get(i))
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
            let (o, used) = Offsets::read(&out, 0).unwrap();
            prop_assert_eq!(used, out.len());
            prop_assert_eq!(o.len(), values.len());
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(o.get(i), v);
            }
        }
    }
}
