//! Where each label lies in the pool, by blocks of lengths (format version
//! 5's inline labels).
//!
//! Versions 1 and 3 find label `i` at `pool[offset[i] .. offset[i + 1]]`,
//! each offset a sampled base plus a packed delta from it: about 11 bits a
//! label on Debian keys (the deltas span 64 labels). Here a block of
//! [`LABELS`] labels takes [`WORDS`] words, 6.4 bits a label: where the
//! block's first label starts, and every label's length in 5 bits. A
//! label's start is the base plus the lengths before it in the block,
//! summed a word at a time by one multiplication; its end is its start
//! plus its length. So a label is one read of 24 bytes and a few
//! arithmetic steps, where the offsets took two reads in two arrays.
//!
//! ```text
//! word 0   base (bits 0..34): pool byte where label 30 b starts;
//!          lengths of labels 0..6 of the block at bits 34 + 5 k
//! word 1   lengths of labels 6..18 at bits 5 (k - 6); bit 63 set iff
//!          a label of the block is long
//! word 2   lengths of labels 18..30 at bits 5 (k - 18)
//! ```
//!
//! A length field of 1 to 31 is the label's number of pool bytes. A field
//! of 0 (no label is empty) marks a long label: its pool bytes are a
//! 4-byte little-endian pointer into the long pool, where the label is an
//! entry, a LEB128 length then its bytes. Entries are in label order.
//! Labels of more than 31 bytes are rare on real keys (0.15% of Debian
//! keys' labels, 3% of the Debian package files'), so the pointers cost
//! little. Fields past the last label and the spare bits (60..63 of word
//! 1, 60..64 of word 2) are zero.
//!
//! A trie with a block whose base would reach 2^34, or a long label whose
//! entry would start at 2^32 or past it, cannot be written this way; the
//! builder writes version 3 instead.
//!
//! Queries read through checked `get`s: blocks that disagree with the
//! pools give a wrong label or an empty one, never an out-of-bounds read.
//! [`Blocks::validate`] checks that each base is where the lengths before
//! it end, that the last label ends at the pool's end, that the pointers
//! walk the long pool's entries in order and end at its end, that every
//! long label is longer than 31 bytes, and that the unused bits are zero.

use pith_enc::le;

use crate::error::{Error, Result};
use crate::words::{corrupt, push_entry, split_entry, WordReader};

/// Labels per block.
pub(crate) const LABELS: usize = 30;
/// Words per block.
pub(crate) const WORDS: usize = 3;
/// Bits of a length field.
const LEN_BITS: u32 = 5;
/// Bits of a block's base.
const BASE_BITS: u32 = 34;
/// The base's bits in word 0.
const BASE_MASK: u64 = (1 << BASE_BITS) - 1;
/// Longest label kept in the pool itself.
const MAX_SHORT: usize = (1 << LEN_BITS) - 1;
/// Pool bytes of a long label: its pointer.
const POINTER_BYTES: usize = 4;
/// Length fields in word 0 and in words 1 and 2.
const FIELDS_0: usize = 6;
const FIELDS_1: usize = 12;

/// `pattern` at every `step` bits, `times` times from bit 0.
const fn repeat(pattern: u64, step: u32, times: u32) -> u64 {
    let mut m = 0;
    let mut k = 0;
    while k < times {
        m |= pattern << (step * k);
        k += 1;
    }
    m
}

/// The low bit of each of twelve fields.
const FIELD_LOW: u64 = repeat(1, LEN_BITS, 12);
/// Fields 0, 2, .. 10 of twelve: pairs of fields summed into 10-bit slots.
const EVEN_FIELDS: u64 = repeat(0x1F, 2 * LEN_BITS, 6);
/// One at each 10-bit slot, to sum the six slots into the top one.
const SLOT_ONES: u64 = repeat(1, 2 * LEN_BITS, 6);

/// Bit of word 1 set when the block has a long label.
const HAS_LONG: u64 = 1 << 63;

/// The fields of `x` (at most twelve, bits 0..60) summed in pairs into six
/// 10-bit slots. Slots of several words add up without overflow: thirty
/// fields of at most 31 sum to under 2^10.
#[inline(always)]
fn pair_slots(x: u64) -> u64 {
    (x & EVEN_FIELDS) + ((x >> LEN_BITS) & EVEN_FIELDS)
}

/// The sum of the six slots of `slots`, by one multiplication.
#[inline(always)]
fn slot_total(slots: u64) -> u64 {
    (slots.wrapping_mul(SLOT_ONES) >> 50) & 0x3FF
}

/// How many of the fields of `x` are zero, of its first `n` (the rest
/// clear).
#[inline(always)]
fn zero_fields(x: u64, n: u32) -> u64 {
    let any = (x | x >> 1 | x >> 2 | x >> 3 | x >> 4) & FIELD_LOW;
    u64::from(n) - slot_total(pair_slots(any))
}

/// What [`locate`] needs of field `j`, worked out once for every `j`:
/// the masks of the fields before it in each word (word 0's in place,
/// above the base), their counts, and where field `j` is.
#[derive(Clone, Copy)]
struct Place {
    before: [u64; WORDS],
    counts: [u32; WORDS],
    word: usize,
    shift: u32,
}

static PLACES: [Place; LABELS] = {
    let mut places = [Place {
        before: [0; WORDS],
        counts: [0; WORDS],
        word: 0,
        shift: 0,
    }; LABELS];
    let mut j = 0;
    while j < LABELS {
        let mut k = 0;
        while k < j {
            let (word, shift) = field_position(k);
            places[j].before[word] |= (MAX_SHORT as u64) << shift;
            places[j].counts[word] += 1;
            k += 1;
        }
        let (word, shift) = field_position(j);
        places[j].word = word;
        places[j].shift = shift;
        j += 1;
    }
    places
};

/// Word and bit of field `j`.
const fn field_position(j: usize) -> (usize, u32) {
    if j < FIELDS_0 {
        (0, BASE_BITS + LEN_BITS * j as u32)
    } else if j < FIELDS_0 + FIELDS_1 {
        (1, LEN_BITS * (j - FIELDS_0) as u32)
    } else {
        (2, LEN_BITS * (j - FIELDS_0 - FIELDS_1) as u32)
    }
}

/// Field `j` of a block and the pool bytes of the fields before it.
#[inline(always)]
fn locate(block: [u64; WORDS], j: usize) -> (u64, u64) {
    let place = &PLACES[j % LABELS];
    let x0 = (block[0] & place.before[0]) >> BASE_BITS;
    let x1 = block[1] & place.before[1];
    let x2 = block[2] & place.before[2];
    let mut before = slot_total(pair_slots(x0) + pair_slots(x1) + pair_slots(x2));
    if block[1] & HAS_LONG != 0 {
        before += long_bytes([x0, x1, x2], place.counts);
    }
    let field = (block[place.word % WORDS] >> place.shift) & MAX_SHORT as u64;
    (field, before)
}

/// The pointers' bytes among the fields `x` (masked as [`locate`] does),
/// which have `counts` fields: for blocks with a long label only, so out
/// of the common path.
#[cold]
#[inline(never)]
fn long_bytes(x: [u64; WORDS], counts: [u32; WORDS]) -> u64 {
    let zeros: u64 = (0..WORDS).map(|k| zero_fields(x[k], counts[k])).sum();
    zeros * POINTER_BYTES as u64
}

/// Builds the blocks and the long pool as labels are encoded in order.
#[derive(Default)]
pub(crate) struct BlocksWriter {
    blocks: Vec<u64>,
    long: Vec<u8>,
    count: usize,
}

impl BlocksWriter {
    /// Records the next label, `code` (not empty), which starts at byte
    /// `at` of the pool, and returns the bytes the pool must take for it:
    /// `code` itself, or a pointer into the long pool.
    pub(crate) fn push<'c>(
        &mut self,
        at: usize,
        code: &'c [u8],
        pointer: &'c mut [u8; 4],
    ) -> Result<&'c [u8]> {
        let j = self.count % LABELS;
        if j == 0 {
            if at as u64 >= 1 << BASE_BITS {
                return Err(too_large("label pool", 1 << BASE_BITS));
            }
            self.blocks.extend([at as u64, 0, 0]);
        }
        self.count += 1;
        let block = self.blocks.len() - WORDS;
        let (field, bytes): (u64, &[u8]) = if (1..=MAX_SHORT).contains(&code.len()) {
            (code.len() as u64, code)
        } else {
            let p = u32::try_from(self.long.len())
                .map_err(|_| too_large("long label pool", 1 << 32))?;
            push_entry(&mut self.long, code);
            *pointer = p.to_le_bytes();
            self.blocks[block + 1] |= HAS_LONG;
            (0, &pointer[..])
        };
        let (word, shift) = field_position(j);
        self.blocks[block + word] |= field << shift;
        Ok(bytes)
    }

    /// The blocks' words and the long pool.
    pub(crate) fn finish(self) -> (Vec<u64>, Vec<u8>) {
        (self.blocks, self.long)
    }
}

fn too_large(what: &'static str, limit: u64) -> Error {
    Error::TooLarge { what, limit }
}

/// Read-only blocks over `count` labels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Blocks<'a> {
    words: &'a [u64],
    count: usize,
}

impl<'a> Blocks<'a> {
    /// Takes the blocks of `count` labels in O(1).
    pub(crate) fn read(r: &mut WordReader<'a>, count: usize) -> Result<Self> {
        let words = r.take(count.div_ceil(LABELS) * WORDS, "label blocks")?;
        Ok(Blocks { words, count })
    }

    /// The number of labels.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Bytes of the blocks.
    pub(crate) fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The bytes of label `i`: in `pool`, or, for a long label, an entry
    /// of `long`; empty past the last label or where the blocks and pools
    /// disagree (bytes not validated).
    #[inline(always)]
    pub(crate) fn label<'p>(&self, i: usize, pool: &'p [u8], long: &'p [u8]) -> &'p [u8] {
        if i >= self.count {
            return &[];
        }
        let Some(&[w0, w1, w2]) = self
            .words
            .get(i / LABELS * WORDS..)
            .and_then(|w| w.first_chunk())
        else {
            return &[];
        };
        let (field, before) = locate([w0, w1, w2], i % LABELS);
        let start = (w0 & BASE_MASK).wrapping_add(before) as usize;
        if field != 0 {
            return pool
                .get(start..start.wrapping_add(field as usize))
                .unwrap_or(&[]);
        }
        let entry = pool
            .get(start..)
            .and_then(|p| p.first_chunk::<POINTER_BYTES>())
            .and_then(|p| long.get(le::u32_in(p, 0) as usize..))
            .and_then(split_entry);
        entry.map_or(&[], |(label, _)| label)
    }

    /// Checks what [`Blocks::read`] took on trust (see the module docs);
    /// `at` is the section's offset, for errors.
    pub(crate) fn validate(&self, pool: &[u8], long: &[u8], at: usize) -> Result<()> {
        let mut pos = 0u64;
        let mut long_pos = 0usize;
        for (b, block) in self.words.chunks_exact(WORDS).enumerate() {
            let block = [block[0], block[1], block[2]];
            if block[0] & BASE_MASK != pos {
                return Err(corrupt(
                    at,
                    format!("label block {b} starts at the wrong pool byte"),
                ));
            }
            if (block[1] & !HAS_LONG | block[2]) >> (LEN_BITS as usize * FIELDS_1) != 0 {
                return Err(corrupt(at, format!("label block {b} has spare bits set")));
            }
            let mut has_long = false;
            for j in 0..LABELS {
                let (field, _) = locate(block, j);
                let i = b * LABELS + j;
                if i >= self.count {
                    if field != 0 {
                        return Err(corrupt(
                            at,
                            format!("label block {b} has a length past the last label"),
                        ));
                    }
                    continue;
                }
                if field != 0 {
                    pos += field;
                    continue;
                }
                let pointer = usize::try_from(pos)
                    .ok()
                    .and_then(|p| pool.get(p..))
                    .and_then(|p| p.first_chunk::<POINTER_BYTES>())
                    .map(|p| le::u32_in(p, 0) as usize);
                if pointer != Some(long_pos) {
                    return Err(corrupt(
                        at,
                        format!("long label {i} does not point at the next long-pool entry"),
                    ));
                }
                let (label, rest) = split_entry(&long[long_pos..])
                    .ok_or_else(|| corrupt(at, format!("long label {i} overruns the long pool")))?;
                if label.len() <= MAX_SHORT {
                    let len = label.len();
                    return Err(corrupt(at, format!("long label {i} is only {len} bytes")));
                }
                long_pos = long.len() - rest.len();
                pos += POINTER_BYTES as u64;
                has_long = true;
            }
            if has_long != (block[1] & HAS_LONG != 0) {
                return Err(corrupt(
                    at,
                    format!("label block {b}: wrong long-label bit"),
                ));
            }
        }
        if pos != pool.len() as u64 {
            return Err(corrupt(at, "label lengths do not end at the pool length"));
        }
        if long_pos != long.len() {
            return Err(corrupt(
                at,
                "long labels do not end at the long pool's length",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks, pool and long pool for `labels`, as the builder writes them.
    fn write(labels: &[Vec<u8>]) -> (Vec<u64>, Vec<u8>, Vec<u8>) {
        let mut writer = BlocksWriter::default();
        let mut pool = Vec::new();
        let mut pointer = [0; 4];
        for label in labels {
            let bytes = writer.push(pool.len(), label, &mut pointer).unwrap();
            pool.extend_from_slice(bytes);
        }
        let (words, long) = writer.finish();
        (words, pool, long)
    }

    /// Labels of 1 to 70 bytes, a few of them long.
    fn sample_labels(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let len = if i % 23 == 5 {
                    32 + i % 40
                } else {
                    1 + (i * 7) % 31
                };
                (0..len).map(|k| (i + k) as u8).collect()
            })
            .collect()
    }

    #[test]
    fn labels_read_back_and_validate() {
        for n in [0, 1, 29, 30, 31, 95, 400] {
            let labels = sample_labels(n);
            let (words, pool, long) = write(&labels);
            assert_eq!(words.len(), n.div_ceil(LABELS) * WORDS);
            let blocks = Blocks {
                words: &words,
                count: n,
            };
            for (i, label) in labels.iter().enumerate() {
                assert_eq!(
                    blocks.label(i, &pool, &long),
                    label.as_slice(),
                    "label {i} of {n}"
                );
            }
            assert!(blocks.label(n, &pool, &long).is_empty());
            blocks.validate(&pool, &long, 0).unwrap();
            let longs = labels.iter().filter(|l| l.len() > MAX_SHORT).count();
            let short: usize = labels
                .iter()
                .filter(|l| l.len() <= MAX_SHORT)
                .map(Vec::len)
                .sum();
            assert_eq!(pool.len(), short + POINTER_BYTES * longs);
        }
    }

    #[test]
    fn every_damaged_word_or_pointer_is_caught() {
        let labels = sample_labels(95);
        let (words, pool, long) = write(&labels);
        for w in 0..words.len() {
            for bit in [0, 3, 33, 34, 37, 59, 60, 63] {
                let mut bad = words.clone();
                bad[w] ^= 1 << bit;
                let blocks = Blocks {
                    words: &bad,
                    count: labels.len(),
                };
                // Wrong answers are allowed before validation, panics not.
                for i in 0..=labels.len() {
                    blocks.label(i, &pool, &long);
                }
                assert!(
                    blocks.validate(&pool, &long, 0).is_err(),
                    "word {w} bit {bit}"
                );
            }
        }
        let blocks = Blocks {
            words: &words,
            count: labels.len(),
        };
        // A pointer moved, and the long pool cut.
        let first_long = labels.iter().position(|l| l.len() > MAX_SHORT).unwrap();
        let at = labels[..first_long].iter().map(Vec::len).sum::<usize>();
        let mut bad_pool = pool.clone();
        bad_pool[at] ^= 1;
        assert!(blocks.validate(&bad_pool, &long, 0).is_err());
        assert!(blocks.validate(&pool, &long[..long.len() - 1], 0).is_err());
        assert!(blocks.validate(&pool[..pool.len() - 1], &long, 0).is_err());
        // A long label that is not long: its entry's length cut to 31 (the
        // pool cut to match, so only that rule fails).
        let first_len = labels[first_long].len();
        let mut short_long = long.clone();
        short_long[0] = MAX_SHORT as u8;
        short_long.drain(1 + MAX_SHORT..1 + first_len);
        let err = blocks.validate(&pool, &short_long, 0);
        assert!(
            err.as_ref()
                .is_err_and(|e| e.to_string().contains("only 31 bytes")),
            "{err:?}"
        );
        for i in 0..labels.len() {
            blocks.label(i, &bad_pool, &long[..long.len() / 2]);
        }
    }

    /// A block's fields, by a plain loop: (field j, pool bytes before it).
    fn locate_by_loop(block: [u64; WORDS], j: usize) -> (u64, u64) {
        let field = |k: usize| {
            let (word, shift) = match k {
                0..6 => (0, 34 + 5 * k),
                6..18 => (1, 5 * (k - 6)),
                _ => (2, 5 * (k - 18)),
            };
            (block[word] >> shift) & 31
        };
        let before = (0..j).map(|k| match field(k) {
            0 => 4,
            f => f,
        });
        (field(j), before.sum())
    }

    #[test]
    fn locate_matches_a_loop() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20_000 {
            let mut block = [next(), next() & ((1 << 60) - 1), next() & ((1 << 60) - 1)];
            // Some blocks without a zero field, as most are.
            if round % 2 == 0 {
                for k in 0..LABELS {
                    if locate_by_loop(block, k).0 == 0 {
                        let (word, shift) = match k {
                            0..6 => (0, 34 + 5 * k),
                            6..18 => (1, 5 * (k - 6)),
                            _ => (2, 5 * (k - 18)),
                        };
                        block[word] |= 1 << shift;
                    }
                }
            } else {
                block[1] |= HAS_LONG;
            }
            for j in 0..LABELS {
                assert_eq!(
                    locate(block, j),
                    locate_by_loop(block, j),
                    "{block:x?} j={j}"
                );
            }
        }
    }
}
