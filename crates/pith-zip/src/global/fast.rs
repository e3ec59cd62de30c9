//! The fast parse, for encoding with a model trained before (flushes and
//! bulk loads, where encode speed is ingest speed).
//!
//! Measured on Debian records with a trained model, the thorough parse
//! ([`super::parse`]) spends most of its time waiting on memory: each
//! position it searches costs a miss on the chain heads and one on the
//! dictionary bytes of every candidate, ~110 ns, and a record is searched
//! at about one position in four. This parse takes the misses out of the
//! critical path in two passes over each record:
//!
//! 1. For every position: look up its dictionary candidate (the chain
//!    head: the front-most dictionary position with the same 6-byte hash)
//!    and ask for that candidate's bytes to be loaded, and thread the
//!    position into the record's own chains. For every `LONG_STEP`-th
//!    position: look up the second table's candidate (the front-most
//!    position with the same 16-byte hash) and load its bytes too. The
//!    lookups are independent, so the CPU overlaps their misses; and the
//!    table slots of every position are asked for first, in a pass that
//!    only hashes (the two tables, a megabyte each, are mostly out of the
//!    L2 cache, and a lookup waiting on its slot held up the prefetches
//!    after it: 4-13% faster on Debian records, 0-7% on rustdoc's, same
//!    parse). This pass runs ahead of the parse, [`AHEAD`] positions at
//!    most, found in steps of at least [`AHEAD_MIN`] (so a position's
//!    lookups are that far behind the prefetches for it), not over the
//!    whole record first: a match that jumps past the positions found
//!    skips the ones it covers, which the parse never looks at (only the
//!    record's own chains lose them). Measured with a trained model on one
//!    core (three alternating runs, medians): redis-benchmark's 1 KB
//!    values of one repeated byte encode at 918 MB/s against 360, which
//!    made `pith serve`'s SETs 12% faster (its flushes share the two cores
//!    with the serving thread); Debian (71 against 61 MB/s) and rustdoc
//!    (133 against 135) within the VM's noise, their values 0.001% and
//!    0.07% larger (12,781,208 bytes against 12,781,024; 6,556,448
//!    against 6,551,704). Stepping only when fewer than six positions
//!    were left skipped more (0.03% and 0.2% larger, at the same speed),
//!    and windows of 64 or 128 positions more still.
//! 2. Parse greedily with one lazy step, from the candidates of pass 1,
//!    whose bytes are in cache by then: at each position, the continuation
//!    of the last dictionary match (the prediction the format codes in a
//!    couple of bits), the last local distance, the one dictionary
//!    candidate, the long candidate of the next sampled position (moved
//!    back to this one) and up to `LOCAL_DEPTH` local ones. A match is
//!    extended backwards over pending literals before it is taken. Runs
//!    without a match are crossed in growing steps ([`SKIP_SHIFT`]).
//!
//! Measured (more in the README, "Ingest"): on the 50 MB Debian set, one
//! core of the 2-core VM, 42-59 MB/s to 3.67x against the thorough parse's
//! 8-10 MB/s to 4.15x. Walking the chains even two deep halves the speed
//! (each link is a miss no pass can prefetch); a head table of 2^22
//! entries instead of 2^18 gains 3% of ratio for a third of the speed;
//! searching a window around the prediction after each difference gained
//! under 1%. What the short table loses is mostly anchoring: the
//! front-most candidate of a common prefix ("Package: ") is rarely the
//! record this one nearly copies. The second table, on 16-byte hashes (as
//! zstd's "double fast" strategy pairs a long hash with a short one), finds
//! such records: values 3.3% smaller on Debian (13.59 to 13.14 MB, 3.68x
//! to 3.80x) and 12% on 61 MB of rustdoc (7.82 to 6.86 MB, 7.83x to
//! 8.93x), at an encode speed within this VM's noise of the one-table
//! parse (alternating runs, one core: rustdoc 96-122 against 95-129 MB/s,
//! Debian 56-67 against 55-78), decoding no slower (longer matches, fewer
//! sequences). Measured choices (sizes, Debian and rustdoc): 16 bytes
//! against 12 (equal, 1.1% smaller), 10 (0.3%, 2.9% larger) or 8 (1.0%
//! larger on Debian); the front-most position per hash against the last
//! one (0.1%, 0.3% larger, at 12 bytes); every fourth position against
//! every position (0.7% larger on Debian, at 12 bytes) or every second
//! (0.3%); 2^18 heads against 2^17 (0.9%, 2.3% larger, at 12 bytes).
//! Buckets of the four front-most positions per hash (all four loaded and
//! compared) find much more: 2^17 buckets (2 MiB) 12.87 and 6.27 MB, 2^19
//! buckets (8 MiB, about one entry per dictionary position) 12.30 and
//! 5.98 MB, but encoding was 30-35% slower with either (one core, Debian,
//! alternating runs: 32-47 against 49-80 MB/s), so the cost is in the
//! compares (each a miss the pass-1 prefetches do not cover), not the
//! table's size; two positions per bucket (1 MiB) gained 0.4% and 2.9%.
//! Filtering a bucket before comparing was tried once: four positions per
//! hash, each with the four bytes after its sixteen, and pass 1 keeping
//! only the front-most whose four bytes equal the record's (2^17 buckets,
//! 4 MiB): 13.01 and 6.65 MB, half of the unfiltered buckets' gain, at a
//! speed not measured apart from the noise (one run: 45 MB/s). Worth
//! measuring properly on a quieter machine.
//!
//! Invariants: the same as [`super::parse`]'s sequences (they tile the
//! record in order, every match is `MIN_MATCH..=MAX_MATCH` long and its
//! source holds exactly the bytes it replaces, the last sequence has no
//! match), and `dict_cand[p]`/`local_cand[p]` hold, for every position `p`
//! below `ready` with `HASH_LEN` bytes left that pass 1 found, a
//! dictionary position (or `NONE`) and an earlier record position found
//! too (or `NONE`) whose bytes hash like `p`'s, and `NONE` for a position
//! a match jumped over; `long_cand[k]` holds, for every `k` found with
//! `LONG_LEN` bytes left at `k * LONG_STEP`, a dictionary position (or
//! `NONE`) whose `LONG_LEN` bytes hash like those. The parse looks only at
//! positions below `ready`. A candidate is only a hint: every match offered
//! is measured against the bytes, so a collision costs a compare, never a
//! wrong match.

use pith_enc::prefix::common_len;

use super::hot::HotIndex;
use super::matcher::{long_hash, mix, DictIndex, HASH_LEN, LONG_LEN, NONE};
use super::prefetch;
use super::seq::{Prices, Seq};
use super::symbols::{source, Source, MAX_MATCH, MIN_MATCH};

/// A match at least this long from the prediction or the repeat is taken
/// without looking at the candidates, and one at least this long is taken
/// without a lazy step.
const LONG_ENOUGH: usize = 16;

/// Earlier positions of the record examined per position (they are in
/// cache: the record is).
const LOCAL_DEPTH: usize = 4;
/// In a run of positions without a match, the parse moves on by
/// `1 + misses >> SKIP_SHIFT` positions (LZ4's acceleration): the 8th
/// miss in a row steps by two, the 16th by three. A match found a few
/// positions late is extended backwards over the literals skipped, so
/// little is lost, and long literal runs (hex digests, ids) cost fewer
/// searches. Measured on one core with a trained model, two alternating
/// runs, against no skipping: Debian 12,046,312 -> 11,980,936 bytes
/// (-0.5%: probably short false matches in its digests, which cost more
/// than the parse's estimate of them) at 48-50 -> 53-55 MB/s, decode
/// 364-366 -> 372-374 MB/s; rustdoc's 1 KB pieces +0.07% at the same
/// speed; file paths and URLs 8 to a record -0.05% and +0.2%. A shift of
/// 2 was faster (56 MB/s on Debian) but 0.6% larger on URLs; 1 and 0 made
/// Debian 1.3% and 2.7% larger.
const SKIP_SHIFT: u32 = 3;

/// The second table is looked up at every `LONG_STEP`-th position only: a
/// match at least `LONG_LEN + LONG_STEP - 1` long covers a sampled position,
/// and its candidate there, moved back, is one at the position searched.
const LONG_STEP: usize = 4;

/// Pass 1 keeps the candidates of at least this many positions found
/// ahead of the parse (the lazy step looks one position ahead, and the
/// long candidate it moves back is up to `LONG_STEP` further; the rest is
/// time for the prefetches to land) ...
const AHEAD_MIN: usize = AHEAD / 2;

/// ... and finds up to this many ahead when it must: a match that ends
/// past the positions found (one of 129 bytes or more may) leaves those it
/// jumps over without candidates (see the module docs).
const AHEAD: usize = 256;

/// Where a match copies from.
#[derive(Clone, Copy)]
enum From {
    Dict(usize),
    /// Distance back into the record.
    Local(usize),
}

#[derive(Clone, Copy)]
struct Found {
    len: usize,
    from: From,
    gain: f32,
}

/// Decoder-visible state the sources are relative to.
#[derive(Clone, Copy)]
struct State {
    /// End of the last dictionary match.
    cursor: usize,
    /// Distance of the last local match (0: none yet).
    last_dist: usize,
    /// Start of the pending literal run.
    lit_start: usize,
}

impl State {
    /// How a copy from `from` at record position `p` is coded.
    #[inline]
    fn source(&self, p: usize, from: From) -> Source {
        match from {
            From::Dict(at) => {
                let delta = at as i64 - (self.cursor + (p - self.lit_start)) as i64;
                if delta.abs() < source::NEAR_LIMIT {
                    Source::Near(delta)
                } else {
                    Source::At(at as u64)
                }
            }
            From::Local(d) if d == self.last_dist => Source::LocalRepeat,
            From::Local(d) => Source::Local(d as u64),
        }
    }
}

/// Scratch of the fast parse, reused from record to record.
pub(crate) struct FastParse {
    /// Per position of the window being found: its `HASH_LEN` bytes'
    /// hash; per sampled position of it: its long slot.
    hashes: Vec<u64>,
    long_slots: Vec<u32>,
    dict_cand: Vec<u32>,
    long_cand: Vec<u32>,
    local_cand: Vec<u32>,
    local_head: Vec<u32>,
    /// Bits of the local chains' heads, for the record being parsed.
    local_bits: u32,
    /// Candidates are found for positions below this one (those skipped
    /// by a long match excepted).
    ready: usize,
}

impl FastParse {
    pub(crate) fn new() -> Self {
        FastParse {
            hashes: Vec::new(),
            long_slots: Vec::new(),
            dict_cand: Vec::new(),
            long_cand: Vec::new(),
            local_cand: Vec::new(),
            local_head: Vec::new(),
            local_bits: 0,
            ready: 0,
        }
    }

    /// Readies the scratch for `rec`: no position has candidates yet.
    fn begin(&mut self, index: &DictIndex, rec: &[u8]) {
        let n = rec.len().saturating_sub(HASH_LEN - 1);
        self.local_bits = (usize::BITS - n.max(1).leading_zeros()).clamp(6, 14);
        let long_n = if index.long_heads().is_empty() {
            0
        } else {
            rec.len().saturating_sub(LONG_LEN - 1).div_ceil(LONG_STEP)
        };
        self.local_head.clear();
        self.local_head.resize(1 << self.local_bits, NONE);
        self.dict_cand.clear();
        self.dict_cand.resize(n, NONE);
        self.local_cand.clear();
        self.local_cand.resize(n, NONE);
        self.long_cand.clear();
        self.long_cand.resize(long_n, NONE);
        self.ready = 0;
    }

    /// Pass 1 far enough ahead of position `p` for the parse to look at
    /// `p`, the lazy step's `p + 1` and the long candidate it moves back:
    /// the candidates of the next [`AHEAD`] positions are found when fewer
    /// than [`AHEAD_MIN`] are left, from `p` on when a match jumped past
    /// the last ones found (the positions it covered get none).
    #[inline]
    fn ensure(&mut self, index: &DictIndex, rec: &[u8], p: usize) {
        if self.ready < p + AHEAD_MIN {
            let from = self.ready.max(p);
            self.find_candidates(index, rec, from, p + AHEAD);
            self.ready = p + AHEAD;
        }
    }

    /// Pass 1 for positions `from..to` of `rec` (cut to those with
    /// `HASH_LEN` bytes left), and for the sampled positions among them.
    fn find_candidates(&mut self, index: &DictIndex, rec: &[u8], from: usize, to: usize) {
        let n = self.dict_cand.len();
        let (from, to) = (from.min(n), to.min(n));
        let local_bits = self.local_bits;
        let (dict, heads, bits) = (index.dict(), index.heads(), index.bits());
        let (long_heads, long_bits) = (index.long_heads(), index.long_bits());
        let long_n = self.long_cand.len();
        let longs = from.div_ceil(LONG_STEP).min(long_n)..to.div_ceil(LONG_STEP).min(long_n);
        // First every position's hashes, and the head-table slots asked
        // for: the tables (a megabyte each) are mostly out of the L2
        // cache, and a lookup whose slot is already on its way does not
        // hold up the lookups after it.
        self.hashes.clear();
        self.hashes.extend((from..to).map(|p| {
            let m = mix(&rec[p..]);
            prefetch(heads, (m >> (64 - bits)) as usize);
            m
        }));
        self.long_slots.clear();
        self.long_slots.extend(longs.clone().map(|k| {
            let h = long_hash(&rec[k * LONG_STEP..], long_bits);
            prefetch(long_heads, h);
            h as u32
        }));
        let local_head = &mut self.local_head[..];
        for (p, ((d, l), &m)) in self.dict_cand[from..to]
            .iter_mut()
            .zip(&mut self.local_cand[from..to])
            .zip(&self.hashes)
            .enumerate()
        {
            *d = heads[(m >> (64 - bits)) as usize];
            prefetch(dict, *d as usize);
            let h = (m >> (64 - local_bits)) as usize;
            *l = local_head[h];
            local_head[h] = (from + p) as u32;
        }
        for (c, &h) in self.long_cand[longs].iter_mut().zip(&self.long_slots) {
            *c = long_heads[h as usize];
            prefetch(dict, *c as usize);
        }
    }

    /// The match at `p` that saves the most bits, if any saves any.
    fn best(
        &self,
        index: &DictIndex,
        rec: &[u8],
        p: usize,
        st: &State,
        prices: &Prices,
        hot: &HotIndex,
    ) -> Option<Found> {
        let dict = index.dict();
        let rest = &rec[p..];
        let mut best: Option<Found> = None;
        let mut offer = |len: usize, from: From| {
            let len = len.min(MAX_MATCH as usize);
            if len < MIN_MATCH as usize {
                return;
            }
            let src = st.source(p, from);
            let cost = match from {
                From::Dict(at) => hot.match_cost(prices, len as u64, src, at),
                From::Local(_) => prices.match_cost(len as u64, src),
            };
            let gain = len as f32 * prices.literal - cost;
            if gain > 0.0 && best.map_or(true, |b| gain > b.gain) {
                best = Some(Found { len, from, gain });
            }
        };
        let predicted = st.cursor + (p - st.lit_start);
        let mut longest = 0;
        if let Some(tail) = dict.get(predicted..) {
            longest = common_len(rest, tail);
            offer(longest, From::Dict(predicted));
        }
        if st.last_dist > 0 && st.last_dist <= p {
            let len = common_len(rest, &rec[p - st.last_dist..]);
            longest = longest.max(len);
            offer(len, From::Local(st.last_dist));
        }
        if longest >= LONG_ENOUGH || p >= self.local_cand.len() {
            return best;
        }
        let at = self.dict_cand[p];
        if at != NONE {
            let len = common_len(rest, &dict[at as usize..]);
            if len >= HASH_LEN {
                offer(len, From::Dict(at as usize));
            }
        }
        // The long candidate of the next sampled position, moved back to
        // `p`.
        let ahead = p.next_multiple_of(LONG_STEP) - p;
        if let Some(&long) = self.long_cand.get(p.div_ceil(LONG_STEP)) {
            let from = (long as usize).wrapping_sub(ahead);
            if long != NONE && long as usize >= ahead && from != at as usize {
                let len = common_len(rest, &dict[from..]);
                if len >= LONG_LEN {
                    offer(len, From::Dict(from));
                }
            }
        }
        let mut from = self.local_cand[p];
        for _ in 0..LOCAL_DEPTH {
            if from == NONE {
                break;
            }
            let len = common_len(rest, &rec[from as usize..]);
            if len >= HASH_LEN {
                offer(len, From::Local(p - from as usize));
                if len >= LONG_ENOUGH {
                    break;
                }
            }
            from = self.local_cand[from as usize];
        }
        best
    }

    /// Appends the sequences of `rec` to `out`.
    pub(crate) fn parse(
        &mut self,
        index: &DictIndex,
        rec: &[u8],
        prices: &Prices,
        hot: &HotIndex,
        out: &mut Vec<Seq>,
    ) {
        self.begin(index, rec);
        let dict = index.dict();
        let mut st = State {
            cursor: 0,
            last_dist: 0,
            lit_start: 0,
        };
        let mut p = 0;
        // The best match at `p`, when the lazy step found it already.
        let mut next: Option<Option<Found>> = None;
        let mut misses = 0usize;
        while p + MIN_MATCH as usize <= rec.len() {
            self.ensure(index, rec, p);
            let here = match next.take() {
                Some(found) => found,
                None => self.best(index, rec, p, &st, prices, hot),
            };
            let Some(mut m) = here else {
                misses += 1;
                p += 1 + (misses >> SKIP_SHIFT);
                continue;
            };
            misses = 0;
            // One lazy step: a literal now may buy a better match.
            if m.len < LONG_ENOUGH && p + 1 + MIN_MATCH as usize <= rec.len() {
                let later = self.best(index, rec, p + 1, &st, prices, hot);
                if later.is_some_and(|c| c.gain > m.gain + prices.literal) {
                    next = Some(later);
                    p += 1;
                    continue;
                }
            }
            // Extend backwards over the pending literals.
            let mut start = p;
            match &mut m.from {
                From::Dict(at) => {
                    while start > st.lit_start && *at > 0 && dict[*at - 1] == rec[start - 1] {
                        *at -= 1;
                        start -= 1;
                        m.len += 1;
                    }
                }
                From::Local(dist) => {
                    while start > st.lit_start
                        && start > *dist
                        && rec[start - 1 - *dist] == rec[start - 1]
                    {
                        start -= 1;
                        m.len += 1;
                    }
                }
            }
            let len = m.len.min(MAX_MATCH as usize);
            let source = st.source(start, m.from);
            out.push(Seq {
                lit_start: st.lit_start,
                lit_len: start - st.lit_start,
                match_len: len as u64,
                source,
            });
            match m.from {
                From::Dict(at) => st.cursor = at + len,
                From::Local(dist) => st.last_dist = dist,
            }
            p = start + len;
            st.lit_start = p;
        }
        out.push(Seq::last(st.lit_start, rec.len()));
    }
}
