//! Dense integer keys (format version 4): the trie of a key set whose keys
//! all have one width of 1 to 8 bytes and, read as big-endian integers, lie
//! close together: a table's integer primary keys, sequence numbers, ids.
//!
//! Such keys index themselves. Key `k` is the integer `v` it spells, and its
//! id is the number of keys below `v`, so the body keeps only the width, the
//! smallest key `min` and the span `max - min + 1`; when the span equals the
//! key count, every integer from `min` to `max` is a key and nothing else is
//! stored, and otherwise a bit vector over the span marks the keys (rank:
//! key -> id, select: id -> key). A lookup is a subtraction and a rank where
//! a LOUDS trie walks four levels, and the 63,440 primary keys of the
//! bundled Debian table (four bytes each, `1..=63,440`) take 24 bytes of
//! body where the LOUDS trie took 138 KB.
//!
//! The builder writes this layout when the span is at most
//! [`SPAN_PER_KEY`] times the key count (a bit vector of at most about ten
//! bits a key with its directories, where a LOUDS trie of such keys
//! measured 16-18 bits a key), and a LOUDS trie otherwise.
//!
//! Body layout (little-endian `u64` words after the 64-byte header, whose
//! version is 4, flags 0 and edge count 0):
//!
//! ```text
//! width | min | span | bit vector of `span` bits (only when span > keys)
//! ```
//!
//! Invariants: `1 <= width <= 8`; `1 <= keys <= span`; `min + span - 1`
//! fits in `width` bytes; the bit vector, when present, has `span` bits of
//! which `keys` are ones, the first and the last among them. [`Dense::read`]
//! checks all but the bit vector's contents in O(1); [`Dense::validate`]
//! checks those. On a bit vector not validated, answers may be wrong but
//! every read stays in bounds (the bit vector's own guarantee).

use crate::bitvec::{BitVec, BitVecBuilder};
use crate::error::Result;
use crate::words::{corrupt, WordReader};

/// Largest span, in multiples of the key count, written as dense keys.
pub(crate) const SPAN_PER_KEY: u64 = 8;

/// Where the body starts in the file, for error offsets.
const BODY_AT: usize = crate::format::HEADER_BYTES;

/// The keys of a version-4 trie.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dense<'a> {
    width: usize,
    min: u64,
    span: u64,
    keys: u64,
    /// Which of the span's integers are keys; `None`: all of them.
    present: Option<BitVec<'a>>,
}

/// The integer that `key` spells, big-endian (`key.len() <= 8`).
#[inline(always)]
fn value_of(key: &[u8]) -> u64 {
    key.iter().fold(0u64, |v, &b| v << 8 | u64::from(b))
}

/// Largest integer `width` bytes hold.
fn max_of(width: usize) -> u64 {
    u64::MAX >> (64 - 8 * width)
}

/// The shape of a dense key set: what its body's first three words hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    width: usize,
    min: u64,
    span: u64,
}

/// The shape of `n` sorted, unique keys from `first` to `last`, all of one
/// width (`same_width`), if they are dense enough to be written as
/// version 4: a width of 1 to 8 bytes and a span at most [`SPAN_PER_KEY`]
/// times the count (and addressable here). O(1).
pub(crate) fn shape(first: &[u8], last: &[u8], n: u64, same_width: bool) -> Option<Shape> {
    let width = first.len();
    if n == 0 || !same_width || !(1..=8).contains(&width) {
        return None;
    }
    let min = value_of(first);
    // All 2^64 integers overflow the span: not dense short of 2^64 keys.
    let span = (value_of(last) - min).checked_add(1)?;
    usize::try_from(span).ok()?;
    (span <= n.saturating_mul(SPAN_PER_KEY)).then_some(Shape { width, min, span })
}

/// Appends the version-4 body of `keys` (the `n` keys `shape` was made
/// from) to `out`.
pub(crate) fn write<'k>(
    out: &mut Vec<u64>,
    shape: Shape,
    keys: impl Iterator<Item = &'k [u8]>,
    n: u64,
) {
    out.extend_from_slice(&[shape.width as u64, shape.min, shape.span]);
    if shape.span > n {
        // `shape` checked the span fits a usize.
        let mut bits = BitVecBuilder::with_len(shape.span as usize);
        for k in keys {
            bits.set((value_of(k) - shape.min) as usize);
        }
        bits.write(out);
    }
}

impl<'a> Dense<'a> {
    /// Takes a version-4 body of `keys` keys in O(1): the width, bounds and
    /// counts are checked, the bit vector's contents not.
    pub(crate) fn read(r: &mut WordReader<'a>, keys: u64) -> Result<Self> {
        let bad = |detail: &str| Err(corrupt(BODY_AT, detail.to_string()));
        // The builder writes fewer than 2^32 keys; a header claiming more
        // would have queries (a regex walk, an iteration) run that long.
        if keys >= u64::from(u32::MAX) {
            return bad("dense key count of 2^32 or more");
        }
        let width = r.count("dense key width", 8)?;
        let min = r.word("dense key minimum")?;
        let span = r.word("dense key span")?;
        if width == 0 {
            return bad("dense key width is 0");
        }
        if keys == 0 || keys > span {
            return bad("dense key count is 0 or larger than the span");
        }
        if min > max_of(width) || span - 1 > max_of(width) - min {
            return bad("dense key span passes the largest key of its width");
        }
        let present = if span > keys {
            let bits = BitVec::read(r, "dense key bits")?;
            if bits.len() as u64 != span || bits.ones() as u64 != keys {
                return bad("dense key bits disagree with the span or the key count");
            }
            Some(bits)
        } else {
            None
        };
        Ok(Dense {
            width,
            min,
            span,
            keys,
            present,
        })
    }

    /// Checks what [`Dense::read`] took on trust: the bit vector's
    /// directories, and that the first and last integers of the span are
    /// keys (so `min` and the span are exact).
    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(bits) = &self.present {
            bits.validate()?;
            if !bits.get(0) || !bits.get(bits.len() - 1) {
                return Err(corrupt(
                    BODY_AT,
                    "the first or last integer of the dense key span is not a key",
                ));
            }
        }
        Ok(())
    }

    /// Bytes of the body, for size reports.
    pub(crate) fn size_bytes(&self) -> usize {
        24 + self.present.as_ref().map_or(0, BitVec::size_bytes)
    }

    /// Position of `v` in the span, if it lies there.
    #[inline(always)]
    fn offset(&self, v: u64) -> Option<u64> {
        v.checked_sub(self.min).filter(|&o| o < self.span)
    }

    /// Keys below span position `o` (`o <= span`), at most the key count
    /// (a bit vector not validated may count more; callers add to ids).
    #[inline(always)]
    fn rank(&self, o: u64) -> u64 {
        match &self.present {
            None => o,
            Some(bits) => (bits.rank1(o as usize) as u64).min(self.keys),
        }
    }

    /// The id of `key`, if it is a key.
    #[inline(always)]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<u64> {
        if key.len() != self.width {
            return None;
        }
        let o = self.offset(value_of(key))?;
        let id = match &self.present {
            None => o,
            Some(bits) => {
                if !bits.get(o as usize) {
                    return None;
                }
                bits.rank1(o as usize) as u64
            }
        };
        (id < self.keys).then_some(id)
    }

    /// Keys among the span's integers `lo..=hi` (offsets from `min`,
    /// `lo <= hi < span`).
    #[inline(always)]
    pub(crate) fn count_between(&self, lo: u64, hi: u64) -> u64 {
        self.rank(hi + 1).saturating_sub(self.rank(lo))
    }

    /// The key width in bytes.
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// The smallest and largest key as integers.
    pub(crate) fn bounds(&self) -> (u64, u64) {
        (self.min, self.min + (self.span - 1))
    }

    /// The id of the key `v` (an integer of the span that is a key).
    #[inline(always)]
    pub(crate) fn id_of(&self, v: u64) -> u64 {
        self.rank(v - self.min)
    }

    /// Key `id` as an integer, if `id < keys`.
    #[inline(always)]
    pub(crate) fn value_at(&self, id: u64) -> Option<u64> {
        if id >= self.keys {
            return None;
        }
        let o = match &self.present {
            None => id,
            Some(bits) => bits.select1(id as usize) as u64,
        };
        Some(self.min.wrapping_add(o))
    }

    /// Appends the key that integer `v` spells (its `width` low bytes,
    /// big-endian) to `out`.
    #[inline(always)]
    pub(crate) fn push_key(&self, v: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(&v.to_be_bytes()[8 - self.width..]);
    }

    /// Appends key `id` to `out`; false if `id >= keys`.
    #[inline(always)]
    pub(crate) fn key_into(&self, id: u64, out: &mut Vec<u8>) -> bool {
        let Some(v) = self.value_at(id) else {
            return false;
        };
        self.push_key(v, out);
        true
    }

    /// Id of the first key `>= key` in byte order (`keys` if none).
    pub(crate) fn lower_bound(&self, key: &[u8]) -> u64 {
        let w = self.width;
        // The first integer whose `w` bytes sort at or after `key`: `key`
        // padded with zeros when it is no longer than a key (a key equal to
        // the padding is `>= key`), else one past its first `w` bytes (a
        // key equal to those is a proper prefix of `key`, so smaller).
        let head = &key[..key.len().min(w)];
        let padded = match head.is_empty() {
            true => 0,
            false => value_of(head) << (8 * (w - head.len())),
        };
        let Some(first) = (match key.len() > w {
            true => padded.checked_add(1).filter(|&v| v <= max_of(w)),
            false => Some(padded),
        }) else {
            return self.keys;
        };
        match first.checked_sub(self.min) {
            None => 0,
            Some(o) if o >= self.span => self.keys,
            Some(o) => self.rank(o),
        }
    }
}
