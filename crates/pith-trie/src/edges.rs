//! Per-edge first label bytes and flag bits, interleaved 64 edges per block.
//!
//! A lookup step needs, for one edge, its label byte, up to four flags and
//! the ranks of those flags. Kept in separate bit vectors that was about ten
//! dependent cache-line loads per trie level; interleaved, one edge's facts
//! lie in one 112-byte block (two adjacent cache lines).
//!
//! Layout (`u64` words): `n | blocks[(n / 64 + 1) * 14] | samples x 3`.
//! Block `b` covers edges `64b .. 64b + 64`:
//!
//! ```text
//! words 0..8    first label byte of each edge (edge 64b + i at byte i)
//! words 8..12   flag bits LOUDS, HAS_CHILD, TERM, HAS_TAIL (edge 64b + i at bit i)
//! words 12..14  ones before the block, u32 each: LOUDS | HAS_CHILD << 32,
//!               TERM | HAS_TAIL << 32
//! ```
//!
//! The last block is always partial or empty, so `rank(kind, n)` reads inside
//! the array. Bytes and bits past `n` are zero. Select samples (packed
//! positions of every 16th LOUDS one and every 32nd HAS_CHILD and TERM one)
//! follow. [`Edges::read`] takes the parts in O(1) and [`Edges::validate`]
//! recomputes counters and samples and rejects any difference. Between the
//! two, every accessor reads through a bounds-checked word fetch (0 past
//! the end) and `select` never scans past the last block, so corrupt but
//! unvalidated bytes give wrong answers, never a panic or an endless loop.

use pith_enc::packed::{bits_for, Packed};

use crate::bitvec::select_in_word;
use crate::error::{Error, Result};
use crate::words::{corrupt, packed_bytes, push_packed, WordReader};

/// Flag: the edge is the first child of its parent.
pub(crate) const LOUDS: usize = 0;
/// Flag: the edge leads to an internal node.
pub(crate) const HAS_CHILD: usize = 1;
/// Flag: a key ends at the node the edge leads to.
pub(crate) const TERM: usize = 2;
/// Flag: the label is longer than one byte.
pub(crate) const HAS_TAIL: usize = 3;

const BLOCK_WORDS: usize = 14;
const SAMPLE_EVERY: [usize; 3] = [16, 32, 32];

/// Accumulates edges in breadth-first order.
#[derive(Default)]
pub(crate) struct EdgesBuilder {
    labels: Vec<u8>,
    flags: [Vec<u64>; 4],
}

impl EdgesBuilder {
    pub(crate) fn push(&mut self, label: u8, flags: [bool; 4]) {
        let e = self.labels.len();
        if e % 64 == 0 {
            for f in &mut self.flags {
                f.push(0);
            }
        }
        for (kind, &set) in flags.iter().enumerate() {
            if set {
                self.flags[kind][e / 64] |= 1 << (e % 64);
            }
        }
        self.labels.push(label);
    }

    pub(crate) fn len(&self) -> usize {
        self.labels.len()
    }

    pub(crate) fn write(&self, out: &mut Vec<u64>) -> Result<()> {
        let n = self.labels.len();
        if n >= u32::MAX as usize {
            return Err(Error::TooLarge {
                what: "edges",
                limit: u32::MAX as u64 - 1,
            });
        }
        out.push(n as u64);
        let nblocks = n / 64 + 1;
        let start = out.len();
        out.resize(start + nblocks * BLOCK_WORDS, 0);
        let blocks = &mut out[start..];
        let mut counts = [0u64; 4];
        for b in 0..nblocks {
            let block = &mut blocks[b * BLOCK_WORDS..(b + 1) * BLOCK_WORDS];
            let lo = (64 * b).min(n);
            let hi = (64 * b + 64).min(n);
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut block[..8]);
            bytes[..hi - lo].copy_from_slice(&self.labels[lo..hi]);
            for kind in 0..4 {
                block[8 + kind] = self.flags[kind].get(b).copied().unwrap_or(0);
            }
            block[12] = counts[LOUDS] | counts[HAS_CHILD] << 32;
            block[13] = counts[TERM] | counts[HAS_TAIL] << 32;
            for (kind, c) in counts.iter_mut().enumerate() {
                *c += u64::from(block[8 + kind].count_ones());
            }
        }
        for (kind, every) in SAMPLE_EVERY.iter().enumerate() {
            push_packed(
                out,
                &sample_positions(&self.flags[kind], *every),
                bits_for(n as u64),
            );
        }
        Ok(())
    }
}

/// The low `valid` bits (`valid <= 64`).
fn valid_mask(valid: usize) -> u64 {
    if valid >= 64 {
        u64::MAX
    } else {
        (1u64 << valid) - 1
    }
}

/// Positions of the ones numbered 0, every, 2 * every, ...
fn sample_positions(words: &[u64], every: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut seen = 0usize;
    for (w, &word) in words.iter().enumerate() {
        let c = word.count_ones() as usize;
        let mut next = seen.div_ceil(every) * every;
        while next < seen + c {
            out.push((w * 64) as u64 + u64::from(select_in_word(word, (next - seen) as u32)));
            next += every;
        }
        seen += c;
    }
    out
}

/// Read-only view of the interleaved edges.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Edges<'a> {
    n: usize,
    blocks: &'a [u64],
    samples: [Packed<'a>; 3],
    ones: [usize; 4],
    /// Byte offset of the section in the file, for error messages.
    at: usize,
}

impl<'a> Edges<'a> {
    /// Takes the section's parts in O(1): the lengths and the sample
    /// geometry are checked, the bits, counters and samples are not (see
    /// [`Edges::validate`]); every accessor stays in bounds and terminates
    /// whatever they hold.
    pub(crate) fn read(r: &mut WordReader<'a>) -> Result<Self> {
        let at = r.offset();
        let n = r.count("edges", u32::MAX as u64 - 1)?;
        let nblocks = n / 64 + 1;
        let blocks = r.take(nblocks * BLOCK_WORDS, "edge blocks")?;
        let mut samples_read = Vec::with_capacity(3);
        for _ in 0..3 {
            samples_read.push(r.packed("edge select samples")?);
        }
        let samples = [samples_read[0], samples_read[1], samples_read[2]];
        // The totals are the last block's counters plus its own ones.
        let last = &blocks[(nblocks - 1) * BLOCK_WORDS..];
        let valid = valid_mask(n - 64 * (nblocks - 1));
        let ones = [LOUDS, HAS_CHILD, TERM, HAS_TAIL].map(|kind| {
            let before = (last[12 + kind / 2] >> (32 * (kind % 2))) as u32 as usize;
            before + (last[8 + kind] & valid).count_ones() as usize
        });
        for kind in 0..3 {
            let s = &samples[kind];
            if s.len() != ones[kind].div_ceil(SAMPLE_EVERY[kind]) || s.width() != bits_for(n as u64)
            {
                return Err(corrupt(
                    at,
                    "edge select samples disagree with the bit counts",
                ));
            }
        }
        Ok(Edges {
            n,
            blocks,
            samples,
            ones,
            at,
        })
    }

    /// Checks what [`Edges::read`] took on trust: every rank counter, the
    /// zero padding past the last edge, and every select sample.
    pub(crate) fn validate(&self) -> Result<()> {
        let (n, at) = (self.n, self.at);
        let nblocks = n / 64 + 1;
        let mut counts = [0u64; 4];
        let mut flag_words: [Vec<u64>; 3] = Default::default();
        for b in 0..nblocks {
            let block = &self.blocks[b * BLOCK_WORDS..(b + 1) * BLOCK_WORDS];
            let want12 = counts[LOUDS] | counts[HAS_CHILD] << 32;
            let want13 = counts[TERM] | counts[HAS_TAIL] << 32;
            if block[12] != want12 || block[13] != want13 {
                return Err(corrupt(
                    at,
                    format!("edge block {b}: rank counters do not match the bits"),
                ));
            }
            let valid = n.saturating_sub(64 * b).min(64);
            let mask = valid_mask(valid);
            let bytes: &[u8] = bytemuck::cast_slice(&block[..8]);
            if block[8..12].iter().any(|w| w & !mask != 0) || bytes[valid..].iter().any(|&x| x != 0)
            {
                return Err(corrupt(
                    at,
                    format!("edge block {b}: bits or bytes set past the last edge"),
                ));
            }
            for kind in 0..4 {
                counts[kind] += u64::from(block[8 + kind].count_ones());
                if kind < 3 {
                    flag_words[kind].push(block[8 + kind]);
                }
            }
        }
        for kind in 0..3 {
            let want = sample_positions(&flag_words[kind], SAMPLE_EVERY[kind]);
            let s = &self.samples[kind];
            if s.len() != want.len() || want.iter().enumerate().any(|(i, &p)| s.get(i) != p) {
                return Err(corrupt(at, "edge select samples do not match the bits"));
            }
        }
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        self.n
    }

    pub(crate) fn ones(&self, kind: usize) -> usize {
        self.ones[kind]
    }

    pub(crate) fn size_bytes(&self) -> usize {
        8 + self.blocks.len() * 8 + self.samples.iter().map(packed_bytes).sum::<usize>()
    }

    /// First label byte of edge `e < n`.
    #[inline(always)]
    pub(crate) fn label(&self, e: usize) -> u8 {
        let w = self.word((e / 64) * BLOCK_WORDS + (e % 64) / 8);
        (w >> (8 * (e % 8))) as u8
    }

    /// Word `i` of the blocks; 0 past them. Every accessor reads through
    /// this (`e <= n` is always inside; a position computed from unvalidated
    /// bytes may not be), so no query can index out of bounds.
    #[inline(always)]
    fn word(&self, i: usize) -> u64 {
        self.blocks.get(i).copied().unwrap_or(0)
    }

    /// Flag `kind` of the edges of block `b` (edge `64b + i` at bit `i`);
    /// 0 past the last block.
    #[inline(always)]
    pub(crate) fn flag_word(&self, kind: usize, b: usize) -> u64 {
        self.word(b * BLOCK_WORDS + 8 + kind)
    }

    #[inline(always)]
    pub(crate) fn bit(&self, kind: usize, e: usize) -> bool {
        (self.word((e / 64) * BLOCK_WORDS + 8 + kind) >> (e % 64)) & 1 == 1
    }

    /// Ones of flag `kind` before edge `e` (`e <= n`).
    #[inline(always)]
    pub(crate) fn rank(&self, kind: usize, e: usize) -> usize {
        let base = (e / 64) * BLOCK_WORDS;
        let counter = (self.word(base + 12 + kind / 2) >> (32 * (kind % 2))) as u32 as usize;
        let mask = (1u64 << (e % 64)) - 1;
        counter + (self.word(base + 8 + kind) & mask).count_ones() as usize
    }

    /// Position of the `r`-th one of flag `kind` (LOUDS, HAS_CHILD or
    /// TERM), or `n` when there is no such one. At most `n` (also when
    /// samples are corrupt: the scan stops at the last block).
    #[inline(always)]
    pub(crate) fn select(&self, kind: usize, r: usize) -> usize {
        if r >= self.ones[kind] {
            return self.n;
        }
        let every = SAMPLE_EVERY[kind];
        let p = self.samples[kind].try_get(r / every).unwrap_or(0) as usize;
        let mut rem = (r % every) as u32;
        let last = self.n / 64;
        let mut b = (p / 64).min(last);
        let mut word = self.word(b * BLOCK_WORDS + 8 + kind) & (u64::MAX << (p % 64));
        loop {
            let c = word.count_ones();
            if rem < c {
                return (b * 64 + select_in_word(word, rem) as usize).min(self.n);
            }
            rem -= c;
            b += 1;
            if b > last {
                return self.n;
            }
            word = self.word(b * BLOCK_WORDS + 8 + kind);
        }
    }

    /// First LOUDS one at or after `i`, or `n`. Always in `i..=n` for `i
    /// <= n`, also when the rank counters or select samples are corrupt
    /// (bytes not validated): a child range then never ends before it
    /// starts.
    #[inline(always)]
    pub(crate) fn next_louds(&self, i: usize) -> usize {
        if i >= self.n {
            return self.n;
        }
        let mut b = i / 64;
        let mut word = self.word(b * BLOCK_WORDS + 8 + LOUDS) & (u64::MAX << (i % 64));
        for _ in 0..4 {
            if word != 0 {
                return (b * 64 + word.trailing_zeros() as usize).min(self.n);
            }
            b += 1;
            if b * 64 >= self.n {
                return self.n;
            }
            word = self.word(b * BLOCK_WORDS + 8 + LOUDS);
        }
        // `b * 64 > i`, so `i..=n` holds what a valid trie answers here.
        self.select(LOUDS, self.rank(LOUDS, b * 64))
            .clamp(b * 64, self.n)
    }

    /// First edge in `s..t` whose label is `>= c` (`t` if none); labels in
    /// `s..t` are sorted. (Measured: a branch-free count of the last 16
    /// candidates, and a scan that skips finding `t`, were both slower.)
    #[inline(always)]
    pub(crate) fn lower(&self, mut s: usize, mut t: usize, c: u8) -> usize {
        debug_assert!(s <= t);
        while t - s > 8 {
            let mid = s + (t - s) / 2;
            if self.label(mid) < c {
                s = mid + 1;
            } else {
                t = mid;
            }
        }
        while s < t && self.label(s) < c {
            s += 1;
        }
        s
    }

    /// The edge in `s..t` labelled `c`, if any.
    #[inline(always)]
    pub(crate) fn find(&self, s: usize, t: usize, c: u8) -> Option<usize> {
        let e = self.lower(s, t, c);
        (e < t && self.label(e) == c).then_some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Found by the `trie_structure` fuzz target (a checksum-valid trie
    /// whose LOUDS rank counters were wrong): the scan past four words
    /// fell back to a select that answered 0, and a lower bound was asked
    /// for the edges `493..0`.
    #[test]
    fn next_louds_stays_ahead_on_corrupt_counters() {
        let mut b = EdgesBuilder::default();
        for i in 0..1000 {
            b.push(0, [i == 0 || i == 900, false, false, false]);
        }
        let mut out = Vec::new();
        b.write(&mut out).unwrap();
        // The LOUDS counter of every block between the first and the last
        // says 0 ones (the last one's count is checked at read).
        for block in 1..1000 / 64 {
            out[1 + block * BLOCK_WORDS + 12] &= !u64::from(u32::MAX);
        }
        let mut r = WordReader::new(&out, 0);
        let e = Edges::read(&mut r).unwrap();
        assert!(e.validate().is_err());
        for i in [1, 10, 100, 500, 899, 900, 999, 1000] {
            let next = e.next_louds(i);
            assert!((i..=1000).contains(&next), "next_louds({i}) = {next}");
        }
    }

    proptest! {
        #[test]
        fn matches_naive(edges in proptest::collection::vec((any::<u8>(), any::<[bool; 4]>()), 0..700)) {
            let mut b = EdgesBuilder::default();
            for &(l, f) in &edges {
                b.push(l, f);
            }
            let mut out = Vec::new();
            b.write(&mut out).unwrap();
            let mut r = WordReader::new(&out, 0);
            let e = Edges::read(&mut r).unwrap();
            e.validate().unwrap();
            prop_assert!(r.is_empty());
            let mut ones = [0usize; 4];
            for (i, &(l, f)) in edges.iter().enumerate() {
                prop_assert_eq!(e.label(i), l);
                for kind in 0..4 {
                    prop_assert_eq!(e.bit(kind, i), f[kind]);
                    prop_assert_eq!(e.rank(kind, i), ones[kind]);
                    if f[kind] {
                        if kind < 3 {
                            prop_assert_eq!(e.select(kind, ones[kind]), i);
                        }
                        ones[kind] += 1;
                    }
                }
                let next = edges[i..].iter().position(|x| x.1[LOUDS]).map_or(edges.len(), |p| p + i);
                prop_assert_eq!(e.next_louds(i), next);
            }
            for (kind, &count) in ones.iter().enumerate() {
                prop_assert_eq!(e.rank(kind, edges.len()), count);
                prop_assert_eq!(e.ones(kind), count);
                if kind < 3 {
                    prop_assert_eq!(e.select(kind, count), edges.len());
                }
            }
        }
    }
}
