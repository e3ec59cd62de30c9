//! Word-aligned serialization helpers shared by every on-disk structure.
//!
//! A serialized trie is a sequence of little-endian `u64` words. Writers append
//! to a `Vec<u64>`; readers take sub-slices from a `&[u64]` through
//! [`WordReader`], which checks every length against what remains and reports
//! the byte offset of a failure. Byte arrays are stored as a length word
//! followed by the bytes padded with zeros to a whole word. A packed array
//! of fixed-width integers (the [`pith_enc::packed`] bit stream) is stored as
//! `count | width | words[ceil(count * width / 64) + 1]`: one trailing zero
//! word after the stream, as this format has always had. A label *entry*
//! inside a byte array is a LEB128 length, then that many bytes.

use pith_enc::le;
use pith_enc::packed::{self, Packed};

use crate::error::{Error, Result};

/// Cursor over a word slice that hands out bounds-checked sub-slices.
pub(crate) struct WordReader<'a> {
    words: &'a [u64],
    pos: usize,
    /// Byte offset of `words[0]` in the whole file, for error messages.
    base: usize,
}

impl<'a> WordReader<'a> {
    pub(crate) fn new(words: &'a [u64], base: usize) -> Self {
        WordReader {
            words,
            pos: 0,
            base,
        }
    }

    /// Byte offset (in the file) of the next word.
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos * 8
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u64]> {
        let available = self.words.len() - self.pos;
        if n > available {
            return Err(Error::Truncated {
                what,
                offset: self.offset(),
                needed: n.saturating_mul(8),
                available: available * 8,
            });
        }
        let s = &self.words[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn word(&mut self, what: &'static str) -> Result<u64> {
        Ok(self.take(1, what)?[0])
    }

    /// Reads a word that counts elements and checks it fits in `usize` and below `limit`.
    pub(crate) fn count(&mut self, what: &'static str, limit: u64) -> Result<usize> {
        let off = self.offset();
        let v = self.word(what)?;
        if v > limit {
            return Err(corrupt(
                off,
                format!("{what}: count {v} exceeds limit {limit}"),
            ));
        }
        usize::try_from(v).map_err(|_| corrupt(off, format!("{what}: count {v} too large")))
    }

    /// Reads a byte array written by [`push_bytes`].
    pub(crate) fn bytes(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let remaining_bytes = ((self.words.len() - self.pos) as u64) * 8;
        let len = self.count(what, remaining_bytes)?;
        let words = self.take(len.div_ceil(8), what)?;
        let bytes: &[u8] = bytemuck::cast_slice(words);
        Ok(&bytes[..len])
    }

    /// Reads a packed array written by [`push_packed`].
    pub(crate) fn packed(&mut self, what: &'static str) -> Result<Packed<'a>> {
        let off = self.offset();
        let len = self.count(what, u64::MAX >> 8)?;
        let width = self.count(what, 64)? as u32;
        let nwords = packed::words_for(len, width)
            .ok_or_else(|| corrupt(off, format!("{what}: size overflows")))?;
        let words = self.take(nwords + 1, what)?;
        Packed::new(words, len, width)
            .ok_or_else(|| corrupt(off, format!("{what}: packed geometry is invalid")))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos == self.words.len()
    }
}

/// Appends an entry: `bytes`' length as a LEB128 varint, then `bytes`.
pub(crate) fn push_entry(out: &mut Vec<u8>, bytes: &[u8]) {
    pith_enc::varint::put(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The entry at the start of `bytes` and what follows it, or `None` when
/// its length is cut off or runs past the end.
#[inline(always)]
pub(crate) fn split_entry(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, tail) = pith_enc::varint::get(bytes)?;
    let len = usize::try_from(len).ok()?;
    Some((tail.get(..len)?, tail.get(len..)?))
}

/// Appends a length word and `bytes` zero-padded to a whole number of words.
pub(crate) fn push_bytes(out: &mut Vec<u64>, bytes: &[u8]) {
    out.push(bytes.len() as u64);
    out.extend(bytes.chunks(8).map(le::u64_padded));
}

/// A byte array as [`push_bytes`] writes it, appended in pieces straight
/// into the output (so the bytes need not be held whole beside it): a
/// length word, filled in by [`ByteWords::finish`], then the bytes.
pub(crate) struct ByteWords<'o> {
    out: &'o mut Vec<u64>,
    /// Where the length word is.
    at: usize,
    len: usize,
    /// The bytes of the word not yet pushed.
    word: u64,
}

impl<'o> ByteWords<'o> {
    pub(crate) fn new(out: &'o mut Vec<u64>) -> Self {
        out.push(0);
        let at = out.len() - 1;
        ByteWords {
            out,
            at,
            len: 0,
            word: 0,
        }
    }

    /// Bytes appended so far.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn put(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.word |= u64::from(b) << (8 * (self.len % 8));
            self.len += 1;
            if self.len % 8 == 0 {
                self.out.push(self.word);
                self.word = 0;
            }
        }
    }

    /// Ends the array, padding its last word with zeros, and returns its
    /// length in bytes.
    pub(crate) fn finish(self) -> usize {
        if self.len % 8 != 0 {
            self.out.push(self.word);
        }
        self.out[self.at] = self.len as u64;
        self.len
    }
}

/// Words [`push_packed`] writes for `len` values of `width` bits, an upper
/// bound (to reserve room).
pub(crate) fn packed_words(len: usize, width: u32) -> usize {
    // count, width, the stream, the trailing zero word.
    3 + packed::words_for(len, width).unwrap_or(0)
}

/// Appends `values`, each below `2^width`, as a packed array.
pub(crate) fn push_packed(out: &mut Vec<u64>, values: &[u64], width: u32) {
    push_packed_iter(out, values.iter().copied(), width);
}

/// [`push_packed`] from an iterator, for values not held as `u64`s.
pub(crate) fn push_packed_iter<I>(out: &mut Vec<u64>, values: I, width: u32)
where
    I: IntoIterator<Item = u64>,
    I::IntoIter: ExactSizeIterator,
{
    let values = values.into_iter();
    out.push(values.len() as u64);
    out.push(u64::from(width));
    packed::pack_into(out, values, width);
    out.push(0);
}

/// Bytes a packed array occupies, its count and width words included.
pub(crate) fn packed_bytes(p: &Packed<'_>) -> usize {
    (2 + p.words().len()) * 8
}

pub(crate) fn corrupt(offset: usize, detail: impl Into<String>) -> Error {
    Error::Corrupt {
        offset,
        detail: detail.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The framing is part of the format: count, width, stream, one zero word.
    #[test]
    fn packed_golden_words() {
        let mut out = Vec::new();
        push_packed(&mut out, &[0, 2, 1], 2);
        assert_eq!(out, vec![3, 2, 0b01_10_00, 0]);
        let mut r = WordReader::new(&out, 0);
        let p = r.packed("t").unwrap();
        assert!(r.is_empty());
        assert_eq!(packed_bytes(&p), 32);
    }

    proptest! {
        /// Bytes put in pieces are framed as `push_bytes` frames them whole.
        #[test]
        fn byte_words_match_push_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..100),
            cuts in proptest::collection::vec(0usize..100, 0..6),
        ) {
            let mut whole = vec![7];
            push_bytes(&mut whole, &bytes);
            let mut pieces = vec![7];
            let mut w = ByteWords::new(&mut pieces);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut from = 0;
            for c in cuts.into_iter().chain([bytes.len()]) {
                w.put(&bytes[from..c]);
                from = c;
                prop_assert_eq!(w.len(), c);
            }
            prop_assert_eq!(w.finish(), bytes.len());
            prop_assert_eq!(pieces, whole);
        }

        #[test]
        fn packed_round_trip(width in 0u32..=64, n in 0usize..300, seed in any::<u64>()) {
            let mask = pith_enc::packed::mask(width);
            let values: Vec<u64> = (0..n as u64)
                .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed) & mask)
                .collect();
            let mut out = Vec::new();
            push_packed(&mut out, &values, width);
            let mut r = WordReader::new(&out, 0);
            let p = r.packed("t").unwrap();
            prop_assert!(r.is_empty());
            prop_assert_eq!(packed_bytes(&p), out.len() * 8);
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(p.get(i), v);
            }
        }
    }
}
