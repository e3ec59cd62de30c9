//! The hot table: the dictionary positions that matches start at most
//! often, so that a match can name one by its rank instead of by its
//! position.
//!
//! Records of one store copy the same phrases again and again (on
//! debian-packages: `Maintainer: Debian ...`, `Architecture: amd64\n`,
//! `Priority: optional\nFilename: pool/main/`), each from one place in
//! the dictionary, and a dictionary position costs about twenty bits
//! (an absolute position in a megabyte-large dictionary, or a delta from
//! the prediction of several thousand). Measured on the 50 MB Debian set
//! encoded with a trained model: 1.14M matches named their position
//! outright at 19.6 bits each (22% of the store), but those positions'
//! order-0 entropy was 14.3 bits, 16,384 of them covering 77% of the
//! matches. Ranked by how often training used them, a position's rank
//! is coded like a length: a symbol per bit length of the rank, then its
//! low bits ([`super::symbols::Source::Hot`]), so the most used cost the
//! fewest bits.
//!
//! Ranks in one bit-length bucket cost the same, so their order within
//! the bucket is free: the table is stored bucket by bucket, each bucket's
//! positions ascending, as varint deltas (1.5-2 bytes an entry where 4
//! would do without the freedom). Bucket `0` holds rank 0; bucket `b >= 1`
//! ranks `2^(b-1) .. 2^b`; the last bucket may be short.
//!
//! Invariants: at most [`MAX_HOT`] positions, each below the dictionary's
//! length; within a bucket strictly ascending. Checked when a model
//! section is read; the encoder's index (position -> rank) holds one entry
//! per distinct position.

use pith_enc::varint;

use super::seq::{Prediction, Prices, Seq};
use super::symbols::source::{self, MAX_HOT};
use super::symbols::Source;

/// Hot entries a trained table may have. On Debian 32,768 made the
/// records 16 KB smaller and the model file 4 KB larger (0.1%), for twice
/// the decoder's table (64 KiB here, which every read may touch), and
/// 65,536 was estimated to save less than it costs to store.
pub(crate) const HOT_ENTRIES: usize = 1 << 14;

/// A position must start at least this many training matches to be hot.
const MIN_USES: u32 = 2;

/// A Near delta this small is cheaper than any rank: not counted, and
/// never recoded.
const NEAR_CHEAP: i64 = 64;

/// A model's hot positions, by rank.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HotTable {
    positions: Vec<u32>,
}

/// Whether a rank may replace `src`: not for a Near delta cheaper than
/// any rank.
fn rankable(src: Source) -> bool {
    !matches!(src, Source::Near(d) if d.abs() < NEAR_CHEAP)
}

/// Sorts each bucket of `positions` (by rank) ascending, the order
/// [`HotTable::write`] stores.
fn sort_within_buckets(positions: &mut [u32]) {
    let n = positions.len();
    for b in 0..=bucket(n) {
        let r = bucket_ranks(b);
        positions[r.start.min(n)..r.end.min(n)].sort_unstable();
    }
}

/// The bucket of rank `r`: its bit length.
fn bucket(r: usize) -> u32 {
    usize::BITS - r.leading_zeros()
}

/// Ranks of bucket `b`.
fn bucket_ranks(b: u32) -> std::ops::Range<usize> {
    match b {
        0 => 0..1,
        _ => 1 << (b - 1)..1 << b,
    }
}

impl HotTable {
    /// No hot positions (a model section of version 1, or training that
    /// found none).
    pub(crate) fn empty() -> Self {
        HotTable::default()
    }

    /// The table of `positions` by rank, as a decoder holds them (read
    /// and checked by [`HotTable::read`], or chosen by training).
    pub(crate) fn from_positions(positions: Vec<u32>) -> Self {
        HotTable { positions }
    }

    /// Positions by rank.
    pub(crate) fn positions(&self) -> &[u32] {
        &self.positions
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// The table for matches starting at `starts` (dictionary positions,
    /// any order, one per match; see [`dict_starts`]): the positions at
    /// least [`MIN_USES`] start at, the most used first, at most
    /// [`HOT_ENTRIES`].
    pub(crate) fn from_starts(mut starts: Vec<u32>) -> Self {
        starts.sort_unstable();
        let mut uses: Vec<(u32, u32)> = Vec::new();
        for run in starts.chunk_by(|a, b| a == b) {
            let n = run.len().min(u32::MAX as usize) as u32;
            if n >= MIN_USES {
                uses.push((n, run[0]));
            }
        }
        uses.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        uses.truncate(HOT_ENTRIES);
        let mut positions: Vec<u32> = uses.into_iter().map(|(_, p)| p).collect();
        sort_within_buckets(&mut positions);
        HotTable { positions }
    }

    /// Appends the table: `count u32`, then bucket by bucket each
    /// position as a varint delta from the one before it in its bucket
    /// (the first from 0).
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.positions.len() as u32).to_le_bytes());
        let mut prev = 0;
        for (r, &p) in self.positions.iter().enumerate() {
            if bucket_ranks(bucket(r)).start == r {
                prev = 0;
            }
            varint::put(out, u64::from(p - prev));
            prev = p;
        }
    }

    /// Reads what [`HotTable::write`] wrote, for a dictionary of
    /// `dict_len` bytes; returns the table and the bytes used.
    pub(crate) fn read(bytes: &[u8], dict_len: usize) -> Result<(Self, usize), String> {
        let count = bytes
            .first_chunk::<4>()
            .map(|b| u32::from_le_bytes(*b) as usize)
            .ok_or("hot table truncated")?;
        if count > MAX_HOT {
            return Err(format!("{count} hot positions, more than {MAX_HOT}"));
        }
        let mut at = 4;
        let mut positions = Vec::with_capacity(count);
        let mut prev = 0u64;
        for r in 0..count {
            let rest = &bytes[at..];
            let (delta, after) = varint::get(rest).ok_or("hot table truncated")?;
            at += rest.len() - after.len();
            let first = bucket_ranks(bucket(r)).start == r;
            if first {
                prev = 0;
            } else if delta == 0 {
                return Err(format!("hot position of rank {r} repeats the one before"));
            }
            let p = prev.saturating_add(delta);
            if p >= dict_len as u64 {
                return Err(format!(
                    "hot position {p} (rank {r}) outside the {dict_len}-byte dictionary"
                ));
            }
            positions.push(p as u32);
            prev = p;
        }
        Ok((HotTable { positions }, at))
    }
}

/// Appends the dictionary position of each match of `seqs` (one record's
/// parse, which names no ranks) that a rank could name: all but the cheap
/// [`Source::Near`]s.
pub(crate) fn dict_starts(seqs: &[Seq], out: &mut Vec<u32>) {
    let mut at = Prediction::default();
    for s in seqs {
        let pos = at.step(s, &[]).and_then(|p| u32::try_from(p).ok());
        out.extend(pos.filter(|_| rankable(s.source)));
    }
}

/// The encoder's way from a dictionary position to its rank: an
/// open-addressing hash table at most half full, so a lookup is about
/// one probe (a binary search over the sorted positions made encoding
/// 6% slower on Debian; this, about 2%).
pub(crate) struct HotIndex {
    /// `(position + 1) << 32 | rank`, 0 for an empty slot.
    slots: Vec<u64>,
    bits: u32,
    hot: HotTable,
}

impl HotIndex {
    pub(crate) fn new(hot: HotTable) -> Self {
        let bits = (usize::BITS - (2 * hot.positions.len()).leading_zeros()).max(1);
        let mut index = HotIndex {
            slots: vec![0; 1 << bits],
            bits,
            hot,
        };
        for (&p, r) in index.hot.positions.iter().zip(0u64..) {
            let mut i = index.slot(p);
            loop {
                match index.slots[i] {
                    0 => {
                        index.slots[i] = (u64::from(p) + 1) << 32 | r;
                        break;
                    }
                    // A position listed twice (a crafted table) keeps its
                    // first rank.
                    e if e >> 32 == u64::from(p) + 1 => break,
                    _ => i = (i + 1) & (index.slots.len() - 1),
                }
            }
        }
        index
    }

    #[inline]
    fn slot(&self, pos: u32) -> usize {
        (pos.wrapping_mul(0x9E37_79B1) >> (32 - self.bits)) as usize
    }

    /// The table it indexes.
    pub(crate) fn table(&self) -> &HotTable {
        &self.hot
    }

    /// The rank of dictionary position `pos`, if it is hot.
    #[inline]
    pub(crate) fn rank(&self, pos: u32) -> Option<u64> {
        let key = u64::from(pos) + 1;
        let mut i = self.slot(pos);
        loop {
            let e = *self.slots.get(i)?;
            if e == 0 {
                return None;
            }
            if e >> 32 == key {
                return Some(e & u64::from(u32::MAX));
            }
            i = (i + 1) & (self.slots.len() - 1);
        }
    }

    /// The rank [`HotIndex::recode`] would consider for a copy from
    /// dictionary position `at` coded as `src`: `None` for a cheap Near
    /// or a position that is not hot.
    #[inline]
    fn candidate(&self, src: Source, at: usize) -> Option<u64> {
        if self.hot.is_empty() || !rankable(src) {
            return None;
        }
        self.rank(u32::try_from(at).ok()?)
    }

    /// What the parse should price a copy of `len` bytes from dictionary
    /// position `at`, coded as `src`, at: the cheaper of that and its rank,
    /// as the encoder will recode it.
    #[inline]
    pub(crate) fn match_cost(&self, prices: &Prices, len: u64, src: Source, at: usize) -> f32 {
        let cost = prices.match_cost(len, src);
        match self.candidate(src, at) {
            Some(rank) => cost.min(prices.match_cost(len, Source::Hot(rank))),
            None => cost,
        }
    }

    /// Recodes the dictionary sources of `seqs` (one record's) as ranks
    /// wherever that costs fewer bits under `cost`. The prediction
    /// follows each match's end whatever names its position, so a recoded
    /// source changes no other.
    pub(crate) fn recode(&self, seqs: &mut [Seq], cost: impl Fn(Source) -> f32) {
        if self.hot.is_empty() {
            return;
        }
        let mut at = Prediction::default();
        for s in seqs.iter_mut() {
            let Some(pos) = at.step(s, &self.hot.positions) else {
                continue;
            };
            let Ok(pos) = usize::try_from(pos) else {
                continue;
            };
            if let Some(rank) = self.candidate(s.source, pos) {
                let hot = Source::Hot(rank);
                if cost(hot) < cost(s.source) {
                    s.source = hot;
                }
            }
        }
    }
}

/// A provisional cost, before the codes know the rank symbols: a rank's
/// extra bits plus four for its symbol (what the position symbols cost
/// on Debian), and `prices` for the rest.
pub(crate) fn provisional_cost(prices: &Prices, src: Source) -> f32 {
    match src {
        Source::Hot(_) => source::encode(src).extra_bits as f32 + 4.0,
        _ => prices.source_cost(src),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(lit_len: usize, match_len: u64, source: Source) -> Seq {
        Seq {
            lit_start: 0,
            lit_len,
            match_len,
            source,
        }
    }

    #[test]
    fn tables_round_trip_bucket_by_bucket() {
        for n in [0usize, 1, 2, 3, 5, 100, 4096, MAX_HOT] {
            let positions: Vec<u32> = (0..n as u32).map(|i| i * 7 + (i % 3)).collect();
            // The order within each bucket is the writer's: ascending.
            let mut t = HotTable { positions };
            sort_within_buckets(&mut t.positions);
            let mut out = Vec::new();
            t.write(&mut out);
            let (back, used) = HotTable::read(&out, 8 * MAX_HOT).expect("reads");
            assert_eq!((back, used), (t, out.len()), "{n} entries");
        }
    }

    #[test]
    fn bad_tables_are_refused() {
        let t = HotTable {
            positions: vec![9, 3, 5],
        };
        let mut out = Vec::new();
        t.write(&mut out);
        assert!(HotTable::read(&out, 10).is_ok());
        assert!(HotTable::read(&out, 9).unwrap_err().contains("outside"));
        assert!(HotTable::read(&out[..out.len() - 1], 10).is_err());
        let mut many = Vec::new();
        many.extend_from_slice(&((MAX_HOT + 1) as u32).to_le_bytes());
        assert!(HotTable::read(&many, 1 << 20)
            .unwrap_err()
            .contains("more than"));
        // Ranks 2 and 3 share a bucket: a zero delta repeats a position.
        let t = HotTable {
            positions: vec![1, 2, 4, 4],
        };
        let mut out = Vec::new();
        t.write(&mut out);
        assert!(HotTable::read(&out, 10).unwrap_err().contains("repeats"));
    }

    #[test]
    fn the_most_used_positions_get_the_first_ranks() {
        // Position 500 started 3 matches, 900 two, 70 one: 70 is not hot.
        let records = [
            vec![seq(0, 8, Source::At(500)), seq(2, 8, Source::At(900))],
            vec![seq(1, 8, Source::At(500)), seq(0, 4, Source::At(70))],
            // A Near naming 500: predicted 0 + 3 literals, delta 497.
            vec![seq(3, 8, Source::Near(497)), seq(0, 8, Source::At(900))],
        ];
        let mut starts = Vec::new();
        for r in &records {
            dict_starts(r, &mut starts);
        }
        let t = HotTable::from_starts(starts);
        assert_eq!(t.positions(), [500, 900]);
        let index = HotIndex::new(t);
        assert_eq!(index.rank(900), Some(1));
        assert_eq!(index.rank(70), None);
        // Recoding: a hot At becomes its rank; a cheap Near stays.
        let mut seqs = vec![
            seq(0, 8, Source::At(900)),
            seq(0, 8, Source::Near(0)),
            seq(0, 8, Source::At(70)),
        ];
        index.recode(&mut seqs, |s| match s {
            Source::Hot(r) => 2.0 + r as f32,
            _ => 20.0,
        });
        assert_eq!(seqs[0].source, Source::Hot(1));
        assert_eq!(seqs[1].source, Source::Near(0));
        assert_eq!(seqs[2].source, Source::At(70));
    }
}
