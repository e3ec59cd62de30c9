//! Fixed-width unsigned integers bit-packed into `u64` words, readable in place.
//!
//! Layout: value `i` of width `w` occupies bits `i * w .. (i + 1) * w` of
//! the words read as one little-endian bit stream, bit `b` being bit
//! `b % 64` of word `b / 64`; a value may straddle two words. [`pack_into`]
//! writes exactly [`words_for`]`(len, w)` words, and bits past the last
//! value are zero. Widths run from 0 (every value is 0, no words) to 64.
//!
//! This module owns only the bit stream. Framing around it (count and width
//! words, trailing padding words, sampled bases) belongs to each format;
//! pith-trie's `packed` sections and pith-zip's offset deltas both add one
//! zero word after the stream. [`Packed`] reads either, padded or not: a
//! read of the word after the last one is treated as zero.
//!
//! Invariant of [`Packed`]: `width <= 64` and `words.len() >=
//! words_for(len, width)`, checked by [`Packed::new`], so
//! [`Packed::get`]`(i)` for `i < len` reads only inside `words`. Read-only
//! and `Copy`; share it between threads freely.

/// Bits needed to store `max`: 0 for 0, else the position of its highest
/// one plus one.
#[inline]
pub fn bits_for(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// The mask of the low `width` bits, `width <= 64`.
#[inline]
pub fn mask(width: u32) -> u64 {
    debug_assert!(width <= 64);
    u64::MAX.checked_shr(64 - width).unwrap_or(0)
}

/// Words holding `len` values of `width` bits: `ceil(len * width / 64)`,
/// or `None` when `len * width` overflows.
#[inline]
pub fn words_for(len: usize, width: u32) -> Option<usize> {
    Some(len.checked_mul(width as usize)?.div_ceil(64))
}

/// Sets the `width` bits of `words` starting at bit `bit` to `value`
/// (they were zero; `value` fits in `width` bits), in the layout above:
/// a value may straddle two words, which must exist.
#[inline]
pub fn or_bits(words: &mut [u64], bit: usize, value: u64, width: u32) {
    if width == 0 {
        return;
    }
    let (w, off) = (bit / 64, bit % 64);
    words[w] |= value << off;
    if off + width as usize > 64 {
        words[w + 1] |= value >> (64 - off);
    }
}

/// Appends the values, `width` bits each, as [`words_for`]`(len, width)`
/// words.
///
/// Every value must fit in `width` bits (checked in debug builds; higher
/// bits would corrupt the next value).
///
/// # Panics
///
/// If `width > 64`, or the size in bits overflows `usize`.
pub fn pack_into<I>(out: &mut Vec<u64>, values: I, width: u32)
where
    I: IntoIterator<Item = u64>,
    I::IntoIter: ExactSizeIterator,
{
    assert!(width <= 64, "packed width {width} exceeds 64");
    let values = values.into_iter();
    let nwords = words_for(values.len(), width).expect("packed array size overflows usize");
    let start = out.len();
    out.resize(start + nwords, 0);
    if width == 0 {
        return;
    }
    let words = &mut out[start..];
    for (i, v) in values.enumerate() {
        debug_assert!(
            v & !mask(width) == 0,
            "value {v} does not fit in {width} bits"
        );
        or_bits(words, i * width as usize, v, width);
    }
}

/// The values packed `width` bits each into a new vector of
/// [`words_for`]`(values.len(), width)` words.
pub fn pack(values: &[u64], width: u32) -> Vec<u64> {
    let mut out = Vec::new();
    pack_into(&mut out, values.iter().copied(), width);
    out
}

/// A read-only view of `len` packed values over borrowed words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packed<'a> {
    words: &'a [u64],
    len: usize,
    width: u32,
    mask: u64,
}

impl<'a> Packed<'a> {
    /// Views `words` as `len` values of `width` bits; `None` when `width >
    /// 64` or `words` is shorter than [`words_for`]`(len, width)`. Words
    /// past those (a format's padding) are allowed and never change a value.
    pub fn new(words: &'a [u64], len: usize, width: u32) -> Option<Self> {
        if width > 64 || words.len() < words_for(len, width)? {
            return None;
        }
        Some(Packed {
            words,
            len,
            width,
            mask: mask(width),
        })
    }

    /// Number of values.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no values.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bits per value.
    #[inline]
    pub fn width(&self) -> u32 {
        self.width
    }

    /// The words given to [`Packed::new`], padding included.
    #[inline]
    pub fn words(&self) -> &'a [u64] {
        self.words
    }

    /// Value `i`, or `None` past `len`: for readers that index with
    /// numbers read from bytes not yet validated.
    #[inline(always)]
    pub fn try_get(&self, i: usize) -> Option<u64> {
        (i < self.len).then(|| self.get(i))
    }

    /// Value `i`, for `i < len`. Past `len` the result is unspecified (it
    /// may panic).
    #[inline(always)]
    pub fn get(&self, i: usize) -> u64 {
        debug_assert!(i < self.len);
        if self.width == 0 {
            return 0;
        }
        let bit = i * self.width as usize;
        let (w, off) = (bit / 64, (bit % 64) as u32);
        let lo = self.words[w] >> off;
        // The next word, when the value straddles into it; branch-free:
        // `checked_shl` keeps off == 0 (a shift by 64) defined, and a value
        // ending in the last word may have no next word without padding.
        let next = self.words.get(w + 1).copied().unwrap_or(0);
        let hi = next.checked_shl(64 - off).unwrap_or(0);
        (lo | hi) & self.mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bits_for_and_mask() {
        assert_eq!(bits_for(0), 0);
        assert_eq!(bits_for(1), 1);
        assert_eq!(bits_for(255), 8);
        assert_eq!(bits_for(256), 9);
        assert_eq!(bits_for(u64::MAX), 64);
        assert_eq!(mask(0), 0);
        assert_eq!(mask(1), 1);
        assert_eq!(mask(63), u64::MAX >> 1);
        assert_eq!(mask(64), u64::MAX);
    }

    /// The layout is a format: pin it bit for bit.
    #[test]
    fn golden_layout() {
        assert_eq!(pack(&[1, 2, 3, 4], 3), vec![0b100_011_010_001]);
        assert_eq!(
            pack(&[0x1F, u64::MAX >> 3, 5], 61),
            vec![0xE000_0000_0000_001F, 0x17FF_FFFF_FFFF_FFFF, 0x0]
        );
        // 3 * 61 = 183 bits: three words, the third holding bits 128..183.
        let words = pack(&[0x1F, u64::MAX >> 3, 5], 61);
        assert_eq!(words.len(), 3);
        assert_eq!(pack(&[7, 7], 0), Vec::<u64>::new());
        assert_eq!(pack(&[u64::MAX, 1], 64), vec![u64::MAX, 1]);
        assert_eq!(words_for(3, 61), Some(3));
        assert_eq!(words_for(usize::MAX, 2), None);
    }

    #[test]
    fn new_checks_geometry() {
        let words = pack(&[1, 2, 3], 2);
        assert!(Packed::new(&words, 3, 2).is_some());
        assert!(Packed::new(&words, 33, 2).is_none());
        assert!(Packed::new(&words, 1, 65).is_none());
        assert!(Packed::new(&[], usize::MAX, 2).is_none());
        let empty = Packed::new(&[], 5, 0).expect("width 0 needs no words");
        assert_eq!(empty.get(4), 0);
        assert!(Packed::new(&[], 0, 64).expect("no values").is_empty());
    }

    fn values(width: u32, n: usize, seed: u64) -> Vec<u64> {
        (0..n as u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed) & mask(width))
            .collect()
    }

    proptest! {
        #[test]
        fn round_trip_unpadded(width in 0u32..=64, n in 0usize..300, seed: u64) {
            let values = values(width, n, seed);
            let words = pack(&values, width);
            prop_assert_eq!(Some(words.len()), words_for(n, width));
            let p = Packed::new(&words, n, width).expect("valid");
            prop_assert_eq!(p.len(), n);
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(p.get(i), v);
                prop_assert_eq!(p.try_get(i), Some(v));
            }
            prop_assert_eq!(p.try_get(n), None);
        }

        /// Garbage in padding words never leaks into a value.
        #[test]
        fn padding_is_ignored(width in 0u32..=64, n in 0usize..200, seed: u64, pad: u64) {
            let values = values(width, n, seed);
            let mut words = Vec::new();
            pack_into(&mut words, values.iter().copied(), width);
            words.push(pad);
            let p = Packed::new(&words, n, width).expect("valid");
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(p.get(i), v);
            }
        }

        /// Matches a bit-by-bit reference of the layout.
        #[test]
        fn matches_bitwise_reference(width in 1u32..=64, n in 0usize..100, seed: u64) {
            let values = values(width, n, seed);
            let words = pack(&values, width);
            let bit = |b: usize| (words[b / 64] >> (b % 64)) & 1;
            for (i, &v) in values.iter().enumerate() {
                let want = (0..width as usize)
                    .fold(0u64, |acc, k| acc | bit(i * width as usize + k) << k);
                prop_assert_eq!(want, v);
            }
            let used = n * width as usize;
            for b in used..words.len() * 64 {
                prop_assert_eq!(bit(b), 0, "bit {} past the values is set", b);
            }
        }
    }
}
