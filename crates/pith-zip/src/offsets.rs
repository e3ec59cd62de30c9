//! Record offsets: a non-decreasing sequence as sampled bases, a stride,
//! and packed deltas.
//!
//! Layout (`u64` words), version 3: `count | shape | stride | bases |
//! deltas`. `shape` holds the delta width in bits 0..8 and, in bit 8, the
//! affine flag. Value `i` is `bases[i / 64] + (i % 64) * stride +
//! delta[i]`, where `stride` is the smallest step between neighbours (the
//! shortest record) and `delta[i]` is bits `i*width .. (i+1)*width` of the
//! little-endian delta bit stream (a [`pith_enc::packed`] stream followed
//! by one zero word). One read of a base and one of a delta (usually the
//! same cache line for `i` and `i + 1`) give a record's extent: cheaper
//! than Elias-Fano's select, at `width + 1` bits per record, where `width`
//! covers the largest excess over the stride within 64 consecutive
//! records. When every value is `bases[0] + i * stride` (records of one
//! length) the affine flag is set, `bases` is that one word and the deltas
//! only the zero word: the offsets take five words however many records
//! there are.
//!
//! Versions 1 and 2 wrote `count | width | bases[ceil(count / 64)] |
//! deltas`, read as version 3 with a stride of 0 and no affine flag.

use pith_enc::packed::{self, bits_for, Packed};

use crate::error::{Error, Result};
use crate::global::prefetch;

const SAMPLE: usize = 64;
/// `shape` bit: the values are `bases[0] + i * stride`.
const AFFINE: u64 = 1 << 8;

/// Appends the version 3 encoding of `values` (non-decreasing) to `out`.
pub(crate) fn write_offsets(out: &mut Vec<u64>, values: &[u64]) {
    let stride = values.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(0);
    let first = values.first().copied().unwrap_or(0);
    let affine = values
        .iter()
        .zip(0u64..)
        .all(|(&v, i)| v == first + i * stride);
    out.push(values.len() as u64);
    if affine {
        out.extend_from_slice(&[AFFINE, stride, first, 0]);
        return;
    }
    let bases: Vec<u64> = values.chunks(SAMPLE).map(|c| c[0]).collect();
    let deltas = values
        .iter()
        .enumerate()
        .map(|(i, v)| v - bases[i / SAMPLE] - (i % SAMPLE) as u64 * stride);
    let width = bits_for(deltas.clone().max().unwrap_or(0));
    out.push(u64::from(width));
    out.push(stride);
    out.extend_from_slice(&bases);
    packed::pack_into(out, deltas, width);
    out.push(0);
}

/// A read-only offsets array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Offsets<'a> {
    bases: &'a [u64],
    deltas: Packed<'a>,
    stride: u64,
    /// `i >> base_shift` is the index of `i`'s base: 6, or 63 when affine
    /// (so every `i` a store can hold maps to the one base).
    base_shift: u32,
    /// `i & step_mask` is how many strides `i` lies past its base: 63, or
    /// every bit when affine.
    step_mask: usize,
}

impl<'a> Offsets<'a> {
    /// Parses an offsets array of store version `version` at the start of
    /// `words`; returns it and the number of words it takes (what follows
    /// is the caller's).
    pub(crate) fn read(words: &'a [u64], offset: u64, version: u32) -> Result<(Self, usize)> {
        let bad = |detail: &str| Error::Corrupt {
            offset,
            detail: detail.to_string(),
        };
        let (&count, rest) = words
            .split_first()
            .ok_or_else(|| bad("offsets: missing count"))?;
        let (&shape, rest) = rest
            .split_first()
            .ok_or_else(|| bad("offsets: missing width"))?;
        let (stride, rest) = match version {
            1 | 2 => (0, rest),
            _ => {
                let (&stride, rest) = rest
                    .split_first()
                    .ok_or_else(|| bad("offsets: missing stride"))?;
                (stride, rest)
            }
        };
        let affine = version >= 3 && shape & AFFINE != 0;
        let width = if version >= 3 { shape & !AFFINE } else { shape };
        if width > 64 || (affine && width != 0) || (!affine && count > (rest.len() as u64) * 64) {
            return Err(bad("offsets: count, width or shape out of range"));
        }
        let (len, width) = (count as usize, width as u32);
        let nbases = if affine { 1 } else { len.div_ceil(SAMPLE) };
        let short = || bad("offsets: section size disagrees with count and width");
        let ndeltas = packed::words_for(if affine { 0 } else { len }, width)
            .map(|n| n + 1)
            .filter(|&n| rest.len().checked_sub(nbases).is_some_and(|left| n <= left))
            .ok_or_else(short)?;
        let (bases, rest) = rest.split_at(nbases);
        let deltas = Packed::new(&rest[..ndeltas], len, width).ok_or_else(short)?;
        let header = if version >= 3 { 3 } else { 2 };
        let (base_shift, step_mask) = if affine {
            (63, usize::MAX)
        } else {
            (6, SAMPLE - 1)
        };
        Ok((
            Offsets {
                bases,
                deltas,
                stride,
                base_shift,
                step_mask,
            },
            header + nbases + ndeltas,
        ))
    }

    pub(crate) fn len(&self) -> usize {
        self.deltas.len()
    }

    /// Asks the CPU to start loading what [`Offsets::get`]`(i)` reads: its
    /// base and the word its delta starts in.
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        prefetch(self.bases, i >> self.base_shift);
        let bit = i.saturating_mul(self.deltas.width() as usize);
        prefetch(self.deltas.words(), bit / 64);
    }

    /// Value `i`, for `i < len` (wrapping where crafted bytes would
    /// overflow: the store checks every value at open).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.bases[i >> self.base_shift]
            .wrapping_add(((i & self.step_mask) as u64).wrapping_mul(self.stride))
            .wrapping_add(self.deltas.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(values: &[u64]) -> usize {
        let mut out = Vec::new();
        write_offsets(&mut out, values);
        let (o, used) = Offsets::read(&out, 0, 3).unwrap();
        assert_eq!(used, out.len());
        assert_eq!(o.len(), values.len());
        for (i, &v) in values.iter().enumerate() {
            assert_eq!(o.get(i), v, "value {i}");
        }
        used
    }

    #[test]
    fn records_of_one_length_take_five_words() {
        for (len, first) in [(1, 0), (2, 7), (65, 0), (10_000, 3)] {
            let values: Vec<u64> = (0..len).map(|i| first + i * 50).collect();
            assert_eq!(round_trip(&values), 5, "{len} values");
        }
        let empty: Vec<u64> = (0..1000).map(|_| 9).collect();
        assert_eq!(round_trip(&empty), 5);
    }

    #[test]
    fn the_stride_narrows_the_deltas() {
        // Records of 100 or 101 bytes: a delta is the excess over 100
        // bytes a record since its base, at most 63 (6 bits), where base
        // and delta alone need 13 bits (up to 6,363).
        let mut values = vec![0u64];
        for i in 0..1000u64 {
            values.push(values[values.len() - 1] + 100 + (i * 7919) % 2);
        }
        let used = round_trip(&values);
        let bases = values.len().div_ceil(64);
        assert!(
            used <= 3 + bases + (values.len() * 6).div_ceil(64) + 1,
            "{used} words"
        );
    }

    #[test]
    fn version_2_layout_reads_without_a_stride() {
        // count 3 | width 4 | one base | deltas 0, 5, 9 | zero word
        let words = [3u64, 4, 100, 0x950, 0];
        let (o, used) = Offsets::read(&words, 0, 2).unwrap();
        assert_eq!(used, 5);
        assert_eq!((o.get(0), o.get(1), o.get(2)), (100, 105, 109));
    }

    #[test]
    fn malformed_shapes_are_refused() {
        // Affine with a width; a width over 64; too few words.
        for words in [
            vec![3u64, AFFINE | 1, 5, 0, 0],
            vec![3u64, 65, 5, 0, 0],
            vec![300u64, 8, 0, 0],
        ] {
            assert!(Offsets::read(&words, 0, 3).is_err(), "{words:?}");
        }
    }

    proptest! {
        #[test]
        fn roundtrip(mut values in proptest::collection::vec(0u64..1 << 40, 0..500)) {
            values.sort_unstable();
            round_trip(&values);
        }

        #[test]
        fn roundtrip_of_near_equal_lengths(lens in proptest::collection::vec(30u64..34, 0..500)) {
            let mut values = vec![0u64];
            for l in lens {
                values.push(values[values.len() - 1] + l);
            }
            round_trip(&values);
        }
    }
}
