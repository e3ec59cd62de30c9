//! Match finding for the global-dictionary encoder: hash chains over the
//! whole dictionary (built once per store) and over the record being
//! encoded (rebuilt per record).
//!
//! Hash chains rather than a suffix array: a suffix array finds the longest
//! match exactly, but each lookup is ~24 dependent cache misses into an
//! array four times the dictionary's size; chains cut short at a fixed
//! depth find nearly the same matches on record data (long matches are
//! found through the prediction of the next dictionary position, which is
//! checked before any chain) at a fraction of the build time.
//!
//! Invariants: `head` and `chain` hold positions `< dict.len() - HASH_LEN + 1`
//! (or `NONE`), and chains strictly increase, so every walk ends and visits
//! the front of the dictionary, where its most referenced bytes are, first.

use std::sync::Arc;

use pith_enc::le;
use pith_enc::prefix::common_len;

use super::dict::Dictionary;
use super::prefetch;

/// Bytes hashed to find candidates.
pub(crate) const HASH_LEN: usize = 6;
/// No position.
pub(crate) const NONE: u32 = u32::MAX;

/// The first `HASH_LEN` bytes of `bytes`, mixed: its top `bits` bits are
/// the hash of a table of `1 << bits` entries.
#[inline]
pub(crate) fn mix(bytes: &[u8]) -> u64 {
    le::u64_padded(&bytes[..HASH_LEN]).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[inline]
pub(crate) fn hash(bytes: &[u8], bits: u32) -> usize {
    (mix(bytes) >> (64 - bits)) as usize
}

/// Largest head table without chains (the fast parse's), and the largest
/// second table on longer hashes: 2^18 entries, 1 MiB each (a dictionary
/// under 128 KiB gets one to two entries per byte). Measured
/// on Debian with the short table alone (3 MB dictionary, one core of the
/// 2-core VM, three runs each): 2^18 encodes 42-59 MB/s to 3.67x, 2^22
/// (16 MiB, what the chains use) 30-39 MB/s to 3.77x.
const FAST_HEAD_BITS: u32 = 18;

/// Bytes the fast parse's second table hashes (see [`DictIndex::long_heads`]).
pub(crate) const LONG_LEN: usize = 16;

/// The `LONG_LEN` bytes at the start of `bytes`, mixed; the top bits are
/// the hash.
#[inline]
fn mix_long(bytes: &[u8]) -> u64 {
    let a = le::u64_padded(&bytes[..8]);
    let b = le::u64_padded(&bytes[8..LONG_LEN]);
    (a ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F).rotate_left(31)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The second table's slot for the `LONG_LEN` bytes at the start of
/// `bytes`, in a table of `1 << bits` entries (as [`hash`] for the first).
#[inline]
pub(crate) fn long_hash(bytes: &[u8], bits: u32) -> usize {
    (mix_long(bytes) >> (64 - bits)) as usize
}

/// Hash chains over the dictionary, or only their heads (the front-most
/// position of each hash) for the fast parse.
pub(crate) struct DictIndex {
    /// The dictionary, shared with the model's decoder when indexed for
    /// one ([`DictIndex::over`]).
    dict: Arc<Dictionary>,
    bits: u32,
    head: Vec<u32>,
    chain: Vec<u32>,
    /// The fast parse's second table, over `LONG_LEN` bytes: the
    /// front-most position of each hash, `2^long_bits` entries.
    long_head: Vec<u32>,
    long_bits: u32,
}

impl DictIndex {
    /// Indexes every position of `dict` (at most `u32::MAX - 1` bytes),
    /// with the chains behind the heads when `chains`; the index keeps a
    /// copy of `dict`.
    pub(crate) fn new(dict: &[u8], chains: bool) -> Self {
        DictIndex::over(Arc::new(Dictionary::from_slice(dict)), chains)
    }

    /// [`DictIndex::new`] over a dictionary in memory already (a model's
    /// decoder's), which the index shares instead of copying.
    pub(crate) fn over(shared: Arc<Dictionary>, chains: bool) -> Self {
        let dict = shared.bytes();
        let cap = if chains { 22 } else { FAST_HEAD_BITS };
        let bits = (usize::BITS - dict.len().max(1 << 12).leading_zeros()).clamp(12, cap);
        let mut head = vec![NONE; 1 << bits];
        let positions = dict.len().saturating_sub(HASH_LEN - 1);
        let mut chain = vec![NONE; if chains { positions } else { 0 }];
        for p in (0..positions).rev() {
            let h = hash(&dict[p..], bits);
            if let Some(link) = chain.get_mut(p) {
                *link = head[h];
            }
            head[h] = p as u32;
        }
        // Built with or without chains, at most as large as the fast
        // parse's heads: a fast parse given an index with chains (one a
        // thorough encoder built) finds the same long candidates as with
        // its own (its short heads, with more bits, may differ).
        let long_bits = bits.min(FAST_HEAD_BITS);
        let mut long_head = vec![NONE; 1 << long_bits];
        for p in (0..dict.len().saturating_sub(LONG_LEN - 1)).rev() {
            long_head[long_hash(&dict[p..], long_bits)] = p as u32;
        }
        DictIndex {
            dict: shared,
            bits,
            head,
            chain,
            long_head,
            long_bits,
        }
    }

    /// The fast parse's second table: the front-most position of each
    /// hash of `LONG_LEN` bytes, indexed by [`long_hash`] with
    /// [`DictIndex::long_bits`].
    #[inline]
    pub(crate) fn long_heads(&self) -> &[u32] {
        &self.long_head
    }

    /// Bits of the second table's hash.
    pub(crate) fn long_bits(&self) -> u32 {
        self.long_bits
    }

    pub(crate) fn dict(&self) -> &[u8] {
        self.dict.bytes()
    }

    /// The dictionary, to share with a decoder.
    pub(crate) fn shared_dict(&self) -> &Arc<Dictionary> {
        &self.dict
    }

    /// Empties the second table (tests compare the parse without it).
    #[cfg(test)]
    pub(crate) fn drop_long_heads(&mut self) {
        self.long_head.clear();
    }

    /// Whether the chains behind the heads are there (else a walk stops
    /// at the head).
    pub(crate) fn has_chains(&self) -> bool {
        !self.chain.is_empty() || self.dict.len() < HASH_LEN
    }

    /// Memory held beyond the dictionary: the heads of both tables and the
    /// chains. The dictionary is its model's decoder's (which counts it)
    /// for an index over a model; one built by [`DictIndex::new`]
    /// (training) holds its own copy besides.
    pub(crate) fn heap_bytes(&self) -> usize {
        4 * (self.head.len() + self.chain.len() + self.long_head.len())
    }

    /// Starts loading the chain head a later search for `s` will read.
    #[inline]
    pub(crate) fn prefetch_head(&self, s: &[u8]) {
        if s.len() >= HASH_LEN {
            prefetch(&self.head, hash(s, self.bits));
        }
    }

    /// The chain heads, indexed by the top [`DictIndex::bits`] bits of [`mix`].
    #[inline]
    pub(crate) fn heads(&self) -> &[u32] {
        &self.head
    }

    /// Bits of the chain heads' hash.
    pub(crate) fn bits(&self) -> u32 {
        self.bits
    }

    /// Calls `f(position, length)` for up to `depth` dictionary positions
    /// whose match with `s` is at least `HASH_LEN` long, front first, until
    /// `f` returns false.
    #[inline]
    pub(crate) fn candidates(
        &self,
        s: &[u8],
        depth: usize,
        mut f: impl FnMut(usize, usize) -> bool,
    ) {
        if s.len() < HASH_LEN {
            return;
        }
        let chain = &self.chain;
        let mut p = self.head[hash(s, self.bits)];
        let mut seen = 0;
        while p != NONE && seen < depth {
            let at = p as usize;
            // The next link loads while this candidate is compared: the
            // two cache misses overlap instead of queueing.
            prefetch(chain, at);
            let len = common_len(s, &self.dict()[at..]);
            if len >= HASH_LEN && !f(at, len) {
                return;
            }
            seen += 1;
            p = chain.get(at).copied().unwrap_or(NONE);
        }
    }
}

/// Hash chains over the record being encoded, positions inserted as the
/// parse passes them.
pub(crate) struct LocalIndex {
    head: Vec<u32>,
    chain: Vec<u32>,
    /// Positions `< inserted` are in the chains.
    inserted: usize,
}

const LOCAL_BITS: u32 = 12;

impl LocalIndex {
    pub(crate) fn new() -> Self {
        LocalIndex {
            head: vec![NONE; 1 << LOCAL_BITS],
            chain: Vec::new(),
            inserted: 0,
        }
    }

    /// Starts a new record of `len` bytes.
    pub(crate) fn reset(&mut self, len: usize) {
        self.head.fill(NONE);
        self.chain.clear();
        self.chain.resize(len, NONE);
        self.inserted = 0;
    }

    /// Inserts every position before `upto`.
    #[inline]
    pub(crate) fn insert_upto(&mut self, record: &[u8], upto: usize) {
        let last = upto.min(record.len().saturating_sub(HASH_LEN - 1));
        while self.inserted < last {
            let p = self.inserted;
            let h = hash(&record[p..], LOCAL_BITS);
            self.chain[p] = self.head[h];
            self.head[h] = p as u32;
            self.inserted += 1;
        }
    }

    /// Calls `f(distance, length)` for up to `depth` earlier positions of
    /// `record` matching at `at` for at least `HASH_LEN` bytes, until `f`
    /// returns false.
    #[inline]
    pub(crate) fn candidates(
        &self,
        record: &[u8],
        at: usize,
        depth: usize,
        mut f: impl FnMut(usize, usize) -> bool,
    ) {
        if record.len() - at < HASH_LEN {
            return;
        }
        let mut p = self.head[hash(&record[at..], LOCAL_BITS)];
        let mut seen = 0;
        while p != NONE && seen < depth {
            let from = p as usize;
            if from < at {
                let len = common_len(&record[at..], &record[from..]);
                if len >= HASH_LEN && !f(at - from, len) {
                    return;
                }
            }
            seen += 1;
            p = self.chain[from];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_dictionary_and_local_matches() {
        let dict = b"Package: libfoo\nVersion: 1.2.3\nPackage: libbar\n";
        let idx = DictIndex::new(dict, true);
        let mut found = Vec::new();
        idx.candidates(b"Package: libbar\nX", 8, |p, l| {
            found.push((p, l));
            true
        });
        assert!(found.contains(&(31, 16)), "{found:?}");

        let record = b"abcdefgh-abcdefgh";
        let mut local = LocalIndex::new();
        local.reset(record.len());
        local.insert_upto(record, 9);
        let mut found = Vec::new();
        local.candidates(record, 9, 4, |d, l| {
            found.push((d, l));
            true
        });
        assert_eq!(found, vec![(9, 8)]);
    }
}
