//! Bit vectors with constant-time rank and fast select, readable in place.
//!
//! Layout (all `u64` words, little-endian):
//!
//! ```text
//! nbits | ones | bits[nbits/64 + 1] | rank[2 * nblocks] | samples (packed ints)
//! ```
//!
//! * `bits` holds bit `i` at word `i / 64`, bit `i % 64`, plus one zero word of
//!   padding so `rank1(nbits)` never reads past the array. Bits at and past
//!   `nbits` are zero.
//! * `rank` is Vigna's rank9: per 512-bit block, word `2b` is the number of
//!   ones before the block and word `2b + 1` packs seven 9-bit counts, the ones
//!   in words `1..=7` of the block before that word.
//! * `samples[s]` is the position of the `(64 s)`-th one, packed in
//!   `bits_for(nbits)` bits. Select jumps there and counts ones word by word;
//!   where 64 ones are spread over more than [`SCAN_WORDS`] words it binary
//!   searches the rank blocks instead, so sparse vectors stay fast too. Dense
//!   samples cost about half a bit per one; select was the hottest operation
//!   of a lookup under rank9 block samples (about 40% of its time, profiled).
//!
//! We write this ourselves rather than use `sucds` or `vers-vecs` because the
//! trie must open zero-copy from an mmapped, checksummed file, and neither
//! crate reads its structures in place from borrowed bytes. [`BitVec::read`]
//! takes the parts in O(1), so `get(i)` and `rank1(i)` for `i <= len` stay
//! in bounds whatever the bytes hold, and `select1` reads through checked
//! fetches and ends within a bounded scan; [`BitVec::validate`] recomputes
//! the rank and select directories and rejects any mismatch, after which
//! every answer is right.

use pith_enc::packed::{bits_for, Packed};

use crate::error::Result;
use crate::words::{corrupt, packed_bytes, push_packed, WordReader};

const SAMPLE_ONES: usize = 64;
/// Longest word scan select does before falling back to the rank blocks.
const SCAN_WORDS: usize = 8;

/// Builds a bit vector by appending bits.
#[derive(Default, Clone, Debug)]
pub(crate) struct BitVecBuilder {
    words: Vec<u64>,
    len: usize,
}

impl BitVecBuilder {
    pub(crate) fn with_len(len: usize) -> Self {
        BitVecBuilder {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    #[cfg(test)]
    pub(crate) fn push(&mut self, bit: bool) {
        if self.len % 64 == 0 {
            self.words.push(0);
        }
        if bit {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len += 1;
    }

    pub(crate) fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }

    /// Serializes with rank and select directories.
    pub(crate) fn write(&self, out: &mut Vec<u64>) {
        let mut bits = self.words.clone();
        bits.resize(self.len / 64 + 1, 0);
        let (rank, samples, ones) = directories(&bits);
        out.push(self.len as u64);
        out.push(ones as u64);
        out.extend_from_slice(&bits);
        out.extend_from_slice(&rank);
        push_packed(out, &samples, bits_for(self.len as u64));
    }
}

/// Computes the rank9 blocks and select samples of `bits`.
fn directories(bits: &[u64]) -> (Vec<u64>, Vec<u64>, usize) {
    let nblocks = bits.len().div_ceil(8);
    let mut rank = Vec::with_capacity(nblocks * 2);
    let mut samples = Vec::new();
    let mut ones = 0usize;
    for (b, block) in bits.chunks(8).enumerate() {
        let mut rel = 0u64;
        let mut in_block = 0u64;
        for (k, w) in block.iter().enumerate() {
            if k > 0 {
                rel |= in_block << (9 * (k - 1));
            }
            let c = w.count_ones() as u64;
            // The position of every multiple of SAMPLE_ONES that falls in this word.
            let before = ones + in_block as usize;
            let mut next = before.div_ceil(SAMPLE_ONES) * SAMPLE_ONES;
            while next < before + c as usize {
                let pos = select_in_word(*w, (next - before) as u32) as u64;
                samples.push(((b * 8 + k) * 64) as u64 + pos);
                next += SAMPLE_ONES;
            }
            in_block += c;
        }
        for k in block.len()..8 {
            if k > 0 {
                rel |= in_block << (9 * (k - 1));
            }
        }
        rank.push(ones as u64);
        rank.push(rel);
        ones += in_block as usize;
    }
    (rank, samples, ones)
}

/// A read-only bit vector with rank and select over borrowed words.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BitVec<'a> {
    len: usize,
    ones: usize,
    bits: &'a [u64],
    rank: &'a [u64],
    samples: Packed<'a>,
    /// What the vector is and where it starts, for error messages.
    what: &'static str,
    at: usize,
}

impl<'a> BitVec<'a> {
    /// Takes a vector written by [`BitVecBuilder::write`] in O(1): lengths
    /// are checked, the directories not (see [`BitVec::validate`]).
    pub(crate) fn read(r: &mut WordReader<'a>, what: &'static str) -> Result<Self> {
        let at = r.offset();
        let len = r.count(what, u64::MAX >> 8)?;
        let ones = r.count(what, len as u64)?;
        let nwords = len / 64 + 1;
        let bits = r.take(nwords, what)?;
        let nblocks = nwords.div_ceil(8);
        let rank = r.take(nblocks * 2, what)?;
        let samples = r.packed(what)?;
        Ok(BitVec {
            len,
            ones,
            bits,
            rank,
            samples,
            what,
            at,
        })
    }

    /// Checks what [`BitVec::read`] took on trust: zero bits past `len`,
    /// and the rank and select directories against the bits.
    pub(crate) fn validate(&self) -> Result<()> {
        let (len, what) = (self.len, self.what);
        // Bits past `len` must be zero so counts are exact.
        let tail_mask = !((1u64 << (len % 64)) - 1);
        if self.bits[len / 64] & tail_mask != 0 {
            return Err(corrupt(self.at, format!("{what}: bits set past the end")));
        }
        let (want_rank, want_samples, want_ones) = directories(self.bits);
        let samples = &self.samples;
        let samples_match = samples.len() == want_samples.len()
            && samples.width() == bits_for(len as u64)
            && want_samples
                .iter()
                .enumerate()
                .all(|(i, &p)| samples.get(i) == p);
        if want_ones != self.ones || want_rank != self.rank || !samples_match {
            return Err(corrupt(
                self.at,
                format!("{what}: rank/select directory does not match the bits"),
            ));
        }
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn ones(&self) -> usize {
        self.ones
    }

    /// Number of words of storage, for size reports.
    pub(crate) fn size_bytes(&self) -> usize {
        (2 + self.bits.len() + self.rank.len()) * 8 + packed_bytes(&self.samples)
    }

    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> bool {
        debug_assert!(i < self.len);
        (self.bits[i / 64] >> (i % 64)) & 1 == 1
    }

    /// Number of ones in positions `0..i`, for `i <= len`.
    #[inline(always)]
    pub(crate) fn rank1(&self, i: usize) -> usize {
        debug_assert!(i <= self.len);
        let w = i / 64;
        let b = w / 8;
        let k = w % 8;
        let abs = self.rank[2 * b] as usize;
        let rel = if k == 0 {
            0
        } else {
            ((self.rank[2 * b + 1] >> (9 * (k - 1))) & 0x1FF) as usize
        };
        let mask = (1u64 << (i % 64)) - 1;
        // Wrapping: a corrupt counter (bytes not validated) gives a wrong
        // rank, never an overflow panic; valid counters never wrap.
        abs.wrapping_add(rel)
            .wrapping_add((self.bits[w] & mask).count_ones() as usize)
    }

    /// Position of the `r`-th one (zero-based), or `len` when `r >= ones`.
    /// On bytes not validated the answer may be wrong but is at most
    /// `len`, and the work is bounded.
    #[inline(always)]
    pub(crate) fn select1(&self, r: usize) -> usize {
        if r >= self.ones {
            return self.len;
        }
        let p = self.samples.try_get(r / SAMPLE_ONES).unwrap_or(0) as usize;
        let mut rem = (r % SAMPLE_ONES) as u32;
        let mut w = p / 64;
        let Some(&first) = self.bits.get(w) else {
            return self.len;
        };
        let mut word = first & (u64::MAX << (p % 64));
        for _ in 0..SCAN_WORDS {
            let c = word.count_ones();
            if rem < c {
                return (w * 64 + select_in_word(word, rem) as usize).min(self.len);
            }
            rem -= c;
            w += 1;
            match self.bits.get(w) {
                Some(&next) => word = next,
                None => return self.len,
            }
        }
        self.select_by_blocks(r, p / 512)
    }

    /// Select through the rank blocks, starting at block `lo` (clamped
    /// reads, at most `len`).
    #[cold]
    fn select_by_blocks(&self, r: usize, mut lo: usize) -> usize {
        let block = |b: usize| self.rank.get(2 * b).copied().unwrap_or(0) as usize;
        let mut hi = self.rank.len() / 2;
        if lo >= hi {
            return self.len;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if block(mid) <= r {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let mut rem = r.saturating_sub(block(lo));
        for w in 8 * lo..8 * lo + 8 {
            let word = self.bits.get(w).copied().unwrap_or(0);
            let c = word.count_ones() as usize;
            if rem < c {
                return (w * 64 + select_in_word(word, rem as u32) as usize).min(self.len);
            }
            rem -= c;
        }
        self.len
    }
}

/// `SELECT_IN_BYTE[r * 256 + b]`: position of the `r`-th set bit of byte `b`
/// (8 when there is none).
static SELECT_IN_BYTE: [u8; 2048] = {
    let mut t = [8u8; 2048];
    let mut b = 0;
    while b < 256 {
        let mut r = 0;
        let mut i = 0;
        while i < 8 {
            if (b >> i) & 1 == 1 {
                t[r * 256 + b] = i as u8;
                r += 1;
            }
            i += 1;
        }
        b += 1;
    }
    t
};

/// Position of the `r`-th set bit of `w` (zero-based); `r < w.count_ones()`.
///
/// Branch-free (a data-dependent branch here mispredicts about half the
/// time): byte popcounts and their prefix sums by one multiplication, the
/// byte holding the bit by a SWAR comparison, the bit by table lookup.
#[inline(always)]
pub(crate) fn select_in_word(w: u64, r: u32) -> u32 {
    const L8: u64 = 0x0101_0101_0101_0101;
    const H8: u64 = 0x8080_8080_8080_8080;
    let mut s = w - ((w >> 1) & 0x5555_5555_5555_5555);
    s = (s & 0x3333_3333_3333_3333) + ((s >> 2) & 0x3333_3333_3333_3333);
    s = (s + (s >> 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    let prefix = s.wrapping_mul(L8); // byte i: ones in bytes 0..=i
    let rr = u64::from(r) * L8;
    // High bit of byte i set iff prefix_i <= r.
    let le = ((rr | H8) - prefix) & H8;
    let byte = ((le >> 7).wrapping_mul(L8) >> 56) as u32; // bytes with prefix <= r
    let before = ((prefix << 8) >> (8 * byte)) as u32 & 0xFF;
    let bits = (w >> (8 * byte)) as usize & 0xFF;
    8 * byte + u32::from(SELECT_IN_BYTE[(r - before) as usize * 256 + bits])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn build(bits: &[bool]) -> Vec<u64> {
        let mut b = BitVecBuilder::default();
        for &x in bits {
            b.push(x);
        }
        let mut out = Vec::new();
        b.write(&mut out);
        out
    }

    proptest! {
        #[test]
        fn rank_select_match_naive(bits in proptest::collection::vec(proptest::bool::weighted(0.3), 0..5000)) {
            let words = build(&bits);
            let mut r = WordReader::new(&words, 0);
            let bv = BitVec::read(&mut r, "test").unwrap();
            bv.validate().unwrap();
            prop_assert!(r.is_empty());
            let mut ones = 0;
            for (i, &b) in bits.iter().enumerate() {
                prop_assert_eq!(bv.rank1(i), ones);
                prop_assert_eq!(bv.get(i), b);
                if b {
                    prop_assert_eq!(bv.select1(ones), i);
                    ones += 1;
                }
            }
            prop_assert_eq!(bv.rank1(bits.len()), ones);
            prop_assert_eq!(bv.ones(), ones);
        }
    }

    #[test]
    fn select_stays_in_bounds_on_corrupt_directories() {
        let bits: Vec<bool> = (0..5000).map(|i| i % 3 == 0).collect();
        let mut words = build(&bits);
        // The rank blocks and the samples (`count | width | data | 0`):
        // every data word set to all ones.
        let rank_at = 2 + 5000 / 64 + 1;
        let samples_at = rank_at + 2 * (5000usize / 64 + 1).div_ceil(8);
        words[rank_at..samples_at].fill(u64::MAX);
        let (count, width) = (words[samples_at] as usize, words[samples_at + 1] as u32);
        let data = pith_enc::packed::words_for(count, width).unwrap();
        words[samples_at + 2..samples_at + 2 + data].fill(u64::MAX);
        let mut r = WordReader::new(&words, 0);
        let bv = BitVec::read(&mut r, "test").unwrap();
        assert!(bv.validate().is_err());
        for k in 0..5000 {
            assert!(bv.select1(k) <= 5000);
        }
    }

    /// Rank counters of all ones (bytes not validated): `rank1` gives some
    /// number, and no overflow panic (found by the `trie_open` fuzzer
    /// through the level tree of a version-3 trie).
    #[test]
    fn rank_does_not_overflow_on_corrupt_counters() {
        let bits: Vec<bool> = (0..3000).map(|i| i % 7 == 0).collect();
        let mut words = build(&bits);
        let rank_at = 2 + 3000 / 64 + 1;
        let rank_words = 2 * (3000usize / 64 + 1).div_ceil(8);
        words[rank_at..rank_at + rank_words].fill(u64::MAX);
        let mut r = WordReader::new(&words, 0);
        let bv = BitVec::read(&mut r, "test").unwrap();
        assert!(bv.validate().is_err());
        for i in 0..=3000 {
            let _ = bv.rank1(i);
        }
    }

    #[test]
    fn sparse_and_dense_large() {
        for stride in [1usize, 3, 700, 5000] {
            let bits: Vec<bool> = (0..200_000).map(|i| i % stride == 0).collect();
            let words = build(&bits);
            let mut r = WordReader::new(&words, 0);
            let bv = BitVec::read(&mut r, "test").unwrap();
            let positions: Vec<usize> = (0..bits.len()).filter(|&i| bits[i]).collect();
            for (k, &p) in positions.iter().enumerate() {
                assert_eq!(bv.select1(k), p);
                assert_eq!(bv.rank1(p), k);
            }
        }
    }

    #[test]
    fn select_in_word_matches_naive() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let w = x & (x >> 3) | (x << 61); // vary density
            for w in [w, x, !x, 1 << (x % 64), u64::MAX] {
                let expect: Vec<u32> = (0..64).filter(|i| (w >> i) & 1 == 1).collect();
                for (r, &p) in expect.iter().enumerate() {
                    assert_eq!(select_in_word(w, r as u32), p, "w={w:#x} r={r}");
                }
            }
        }
    }

    #[test]
    fn select_in_word_all_positions() {
        let w = 0x8000_0001_0010_0301u64;
        let expect: Vec<u32> = (0..64).filter(|i| (w >> i) & 1 == 1).collect();
        for (r, &p) in expect.iter().enumerate() {
            assert_eq!(select_in_word(w, r as u32), p);
        }
    }

    #[test]
    fn tampered_directory_is_rejected() {
        let bits: Vec<bool> = (0..3000).map(|i| i % 5 == 0).collect();
        let mut words = build(&bits);
        let rank_start = 2 + 3000 / 64 + 1;
        words[rank_start + 2] += 1;
        let mut r = WordReader::new(&words, 0);
        let bv = BitVec::read(&mut r, "test").expect("lengths are intact");
        assert!(bv.validate().is_err());
    }
}
