//! Word-aligned serialization helpers shared by every on-disk structure.
//!
//! A serialized trie is a sequence of little-endian `u64` words. Writers append
//! to a `Vec<u64>`; readers take sub-slices from a `&[u64]` through
//! [`WordReader`], which checks every length against what remains and reports
//! the byte offset of a failure. Byte arrays are stored as a length word
//! followed by the bytes padded with zeros to a whole word.

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

    pub(crate) fn is_empty(&self) -> bool {
        self.pos == self.words.len()
    }
}

/// Appends a length word and `bytes` zero-padded to a whole number of words.
pub(crate) fn push_bytes(out: &mut Vec<u64>, bytes: &[u8]) {
    out.push(bytes.len() as u64);
    for chunk in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        out.push(u64::from_le_bytes(w));
    }
}

pub(crate) fn corrupt(offset: usize, detail: impl Into<String>) -> Error {
    Error::Corrupt {
        offset,
        detail: detail.into(),
    }
}
