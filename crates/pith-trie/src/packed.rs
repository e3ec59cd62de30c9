//! Fixed-width packed unsigned integers, readable in place.
//!
//! Layout: `n | width | words[ceil(n * width / 64) + 1]`. Value `i` occupies
//! bits `i * width .. (i + 1) * width` of the little-endian bit stream; one
//! trailing zero word lets a read straddle a word boundary without a branch
//! on the array end. `width` is 0..=64.

use crate::error::Result;
use crate::words::{corrupt, WordReader};

/// Number of bits needed to store `max`.
pub(crate) fn bits_for(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// Appends packed integers to `out`.
pub(crate) fn write_packed(out: &mut Vec<u64>, values: &[u64], width: u32) {
    let nwords = (values.len() * width as usize).div_ceil(64) + 1;
    let start = out.len();
    out.push(values.len() as u64);
    out.push(width as u64);
    out.resize(start + 2 + nwords, 0);
    let words = &mut out[start + 2..];
    if width == 0 {
        return;
    }
    for (i, &v) in values.iter().enumerate() {
        debug_assert!(width == 64 || v >> width == 0);
        let bit = i * width as usize;
        let (w, off) = (bit / 64, bit % 64);
        words[w] |= v << off;
        if off + width as usize > 64 {
            words[w + 1] |= v >> (64 - off);
        }
    }
}

/// A read-only packed integer array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Packed<'a> {
    len: usize,
    width: u32,
    mask: u64,
    words: &'a [u64],
}

impl<'a> Packed<'a> {
    pub(crate) fn read(r: &mut WordReader<'a>, what: &'static str) -> Result<Self> {
        let off = r.offset();
        let len = r.count(what, u64::MAX >> 8)?;
        let width = r.count(what, 64)? as u32;
        let nbits = len
            .checked_mul(width as usize)
            .ok_or_else(|| corrupt(off, format!("{what}: size overflows")))?;
        let words = r.take(nbits.div_ceil(64) + 1, what)?;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        Ok(Packed {
            len,
            width,
            mask,
            words,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn width(&self) -> u32 {
        self.width
    }

    pub(crate) fn size_bytes(&self) -> usize {
        (2 + self.words.len()) * 8
    }

    /// Value `i`, for `i < len`.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> u64 {
        debug_assert!(i < self.len);
        if self.width == 0 {
            return 0;
        }
        let bit = i * self.width as usize;
        let (w, off) = (bit / 64, (bit % 64) as u32);
        let lo = self.words[w] >> off;
        // `checked_shl` keeps off == 0 (shift by 64) well defined.
        let hi = self.words[w + 1].checked_shl(64 - off).unwrap_or(0);
        (lo | hi) & self.mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn roundtrip(width in 0u32..=64, n in 0usize..300, seed in any::<u64>()) {
            let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
            let values: Vec<u64> = (0..n as u64)
                .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed) & mask)
                .collect();
            let mut out = Vec::new();
            write_packed(&mut out, &values, width);
            let mut r = WordReader::new(&out, 0);
            let p = Packed::read(&mut r, "t").unwrap();
            prop_assert!(r.is_empty());
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(p.get(i), v);
            }
        }
    }
}
