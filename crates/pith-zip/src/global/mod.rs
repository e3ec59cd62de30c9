//! The global-dictionary codec: our own, in the spirit of Terark's PA-Zip.
//!
//! A store-wide dictionary of raw record bytes (an even sample of the whole
//! input, megabytes rather than zstd's ~100 KiB) plus one set of static
//! Huffman codes trained on the whole input. Each record is a bit stream of
//! sequences, each a literal run and a match that copies either from the
//! dictionary or from earlier in the record:
//!
//! ```text
//! sequence := literal-length-code [extra] literal* match-length-code [extra]
//!             (source-code [extra])?          -- absent when the length code is END
//! ```
//!
//! * Literals are Huffman-coded with one of eleven tables chosen by the
//!   class of the literal before (hex digit, letter, digit, space, newline,
//!   ...), with own tables for runs of hex digits, for a record's first
//!   literal and for the first after a match (so literal decoding never
//!   waits for dictionary bytes).
//! * A dictionary source is a signed delta from the *predicted* position:
//!   where the previous dictionary match of the record ended plus the
//!   literals since. A record that is a near copy of a dictionary record
//!   with substitutions costs a couple of bits per match. A position
//!   matches start at often (a common phrase) is named instead by its rank
//!   in the model's hot table (`hot.rs`), in a few bits.
//! * Local sources are distances back into the record, with a one-symbol
//!   repeat of the last distance.
//! * Each table has an escape symbol for values unseen in training (then
//!   spelled out in raw bits), so the codes spend no space on them.
//! * No per-record header or table: the record's extent comes from the
//!   store's offsets, the END code ends it, and the decoder checks it
//!   consumed exactly the record's bytes.
//!
//! Why our own codec and not zstd with a big dictionary: a zstd frame
//! carries its own entropy tables (or falls back to the dictionary's few
//! defaults) and codes offsets as absolute distances, so a megabytes-large
//! dictionary buys little; here the tables are global and dictionary
//! offsets relative to a prediction, which is where records from one store
//! resemble each other.
//!
//! The model section of the store (see `docs/format.md`) is
//! `"PZG2" | dict_len u32 | packed_len u32 | code lengths for the 14 tables
//! | the hot table | the dictionary as one zstd frame`, or version 1,
//! `"PZG1"`, without the hot table (and without the rank symbols), which
//! the encoder still writes for a model without hot positions. The
//! dictionary is kept compressed on disk and inflated once at open.

mod decode;
mod dict;
mod fast;
mod hot;
mod matcher;
mod parse;
#[cfg(test)]
mod reference;
mod seq;
mod symbols;
mod tables;

use std::sync::Arc;

use pith_enc::le;
use zstd::zstd_safe::{self, CParameter, DParameter};

use crate::bits::BitWriter;
use crate::error::{Error, Result};
use crate::huffman;
use crate::threads::on_threads;
use hot::HotIndex;
use parse::Parser;
use seq::{Prices, Seq};
use symbols::{
    literal_len, match_len, source, Source, AFTER_MATCH, CONTEXTS, CONTEXT_OF, START_CONTEXT,
};

pub(crate) use decode::Decoder;
pub(crate) use hot::HotTable;
pub(crate) use matcher::DictIndex;

/// Largest dictionary the format allows.
pub(crate) const MAX_DICT: usize = 1 << 30;
/// The most record bytes one byte of a record's encoding can yield (plus
/// one byte's worth per record): a sequence is at least 3 bits and copies
/// at most `MAX_MATCH` bytes.
pub(crate) const MAX_EXPANSION: u64 = 3 * symbols::MAX_MATCH;

/// Model section magic of version 1 (no hot table) ...
const MAGIC: [u8; 4] = *b"PZG1";
/// ... and of version 2 (a hot table after the code lengths).
const MAGIC_HOT: [u8; 4] = *b"PZG2";
/// Tables: literals per context, then literal lengths, match lengths, sources.
/// Fourteen in all.
const TABLES: usize = CONTEXTS + 3;

/// How hard the parser searches for matches when it encodes records with
/// a trained model. Training always parses thoroughly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Effort {
    /// One dictionary candidate per position (the front-most with the same
    /// hash, looked up for the whole record before parsing, so the lookups
    /// overlap), a few local ones, one lazy step. Several times faster
    /// than [`Effort::Thorough`], about 9% larger on Debian records (the
    /// README's "Ingest" has figures). The default: records are encoded
    /// once, at ingest speed, and merges copy them.
    #[default]
    Fast,
    /// Hash chains walked [`crate::Options::global_depth`] deep, two lazy
    /// steps.
    Thorough,
}

/// Symbol counts, the input of the Huffman codes.
struct Counts {
    tables: Vec<Vec<u64>>,
}

impl Counts {
    fn new() -> Self {
        let mut tables = vec![vec![0u64; 256]; CONTEXTS];
        tables.push(vec![0; literal_len::SYMBOLS]);
        tables.push(vec![0; match_len::SYMBOLS]);
        tables.push(vec![0; source::SYMBOLS]);
        Counts { tables }
    }

    fn merge(&mut self, other: &Counts) {
        for (mine, theirs) in self.tables.iter_mut().zip(&other.tables) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
    }

    fn add(&mut self, rec: &[u8], seqs: &[Seq]) {
        for s in seqs {
            for p in s.lit_start..s.lit_start + s.lit_len {
                self.tables[literal_context(rec, p, s.lit_start)][usize::from(rec[p])] += 1;
            }
            self.tables[CONTEXTS][literal_len::encode(s.lit_len as u64).symbol] += 1;
            if s.match_len == 0 {
                self.tables[CONTEXTS + 1][match_len::END] += 1;
            } else {
                self.tables[CONTEXTS + 1][match_len::encode(s.match_len).symbol] += 1;
                self.tables[CONTEXTS + 2][source::encode(s.source).symbol] += 1;
            }
        }
    }

    /// Code lengths, each table with its escape last: symbols unseen in
    /// training are escaped, so any record can be encoded.
    fn lengths(&self) -> Vec<Vec<u8>> {
        self.tables
            .iter()
            .map(|t| huffman::escaped_lengths(t))
            .collect()
    }
}

/// Context of the literal at `p` in a run starting at `run_start`; the
/// decoder derives the same from the literals it has decoded.
#[inline]
fn literal_context(rec: &[u8], p: usize, run_start: usize) -> usize {
    if p == 0 {
        return usize::from(START_CONTEXT);
    }
    if p == run_start {
        return usize::from(AFTER_MATCH);
    }
    let class = |b: u8| CONTEXT_OF[usize::from(b)];
    let hexes = rec[run_start..p]
        .iter()
        .rev()
        .take(2)
        .take_while(|&&b| symbols::is_hex_class(class(b)))
        .count() as u32;
    usize::from(symbols::next_context(class(rec[p - 1]), hexes))
}

/// Average cost in bits of a literal under `lengths`, weighted by `counts`.
fn literal_price(lengths: &[Vec<u8>], counts: &Counts) -> f32 {
    let (mut bits, mut n) = (0u64, 0u64);
    for (t, table) in lengths.iter().take(CONTEXTS).enumerate() {
        for (s, &l) in table.iter().enumerate().take(256) {
            bits += u64::from(l) * counts.tables[t][s];
            n += counts.tables[t][s];
        }
    }
    if n == 0 {
        8.0
    } else {
        bits as f32 / n as f32
    }
}

/// The prices a parse optimizes against, from the codes and the average
/// literal cost.
fn prices_from(lengths: &[Vec<u8>], literal: f32) -> Prices {
    let as_f32 = |t: &Vec<u8>| {
        let code = huffman::Encoder::new(t);
        (0..t.len() - 1).map(|s| code.cost(s) as f32).collect()
    };
    Prices {
        literal,
        match_len: as_f32(&lengths[CONTEXTS + 1]),
        source: as_f32(&lengths[CONTEXTS + 2]),
    }
}

/// The codes with the ranks of `hot` in them, from the last training
/// round's sequences (`parsed`, one vector per record of `records`, in
/// order): the sequences recoded at provisional rank costs and counted,
/// then recoded again at the costs of those codes and counted for the
/// final ones. The parse itself prices dictionary sources without ranks;
/// the encoder recodes its sequences as these rounds do.
fn with_hot_ranks<R: AsRef<[u8]>>(
    parsed: &[Vec<Seq>],
    records: &[R],
    index: &HotIndex,
    prices: &Prices,
) -> (Vec<Vec<u8>>, Prices) {
    let count = |cost: &dyn Fn(Source) -> f32| {
        let mut counts = Counts::new();
        let mut seqs = Vec::new();
        for (rec, parsed) in records.iter().zip(parsed) {
            seqs.clone_from(parsed);
            index.recode(&mut seqs, cost);
            counts.add(rec.as_ref(), &seqs);
        }
        counts
    };
    let counts = count(&|s| hot::provisional_cost(prices, s));
    let lengths = counts.lengths();
    let first = prices_from(&lengths, literal_price(&lengths, &counts));
    let counts = count(&|s| first.source_cost(s));
    let lengths = counts.lengths();
    let prices = prices_from(&lengths, literal_price(&lengths, &counts));
    (lengths, prices)
}

/// Encodes records against one dictionary with codes trained beforehand.
pub(crate) struct Encoder {
    parser: Parser,
    prices: Prices,
    lengths: Vec<Vec<u8>>,
    codes: Vec<huffman::Encoder>,
    hot: HotIndex,
    seqs: Vec<Seq>,
}

/// Calls `f(start, end, sum)` for each maximal run `start..end` of bytes
/// that at least `min` matches copied, `sum` adding up the copies of each
/// byte in it. `coverage` is a difference array: its prefix sum at `b`
/// counts the matches that copied byte `b` (so it ends at 0, closing every
/// run).
fn copied_runs(coverage: &[i32], min: i64, mut f: impl FnMut(usize, usize, i64)) {
    let (mut depth, mut start, mut sum) = (0i64, None, 0i64);
    for (b, &d) in coverage.iter().enumerate() {
        depth += i64::from(d);
        match (depth >= min, start) {
            (true, None) => {
                start = Some(b);
                sum = depth;
            }
            (true, Some(_)) => sum += depth,
            (false, Some(s)) => {
                f(s, b, sum);
                start = None;
            }
            (false, None) => {}
        }
    }
}

/// Most bytes copied to the front of the dictionary.
const HOT_BYTES: usize = 1 << 20;

/// The dictionary's most referenced runs of bytes, densest first, at most
/// `budget` bytes. `coverage` is a difference array: its prefix sum at `b`
/// counts the training matches that copied byte `b`.
fn hot_bytes(dict: &[u8], coverage: &[i32], budget: usize) -> Vec<u8> {
    let mut runs = Vec::new();
    copied_runs(coverage, 2, |s, b, sum| {
        if b - s >= 8 {
            runs.push((sum as f64 / (b - s) as f64, s, b));
        }
    });
    runs.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out = Vec::new();
    for (_, s, e) in runs {
        if out.len() + (e - s) > budget {
            continue;
        }
        out.extend_from_slice(&dict[s..e.min(dict.len())]);
    }
    out
}

/// Bytes kept on each side of a run of dictionary bytes the survey's
/// matches copied (`used_bytes`): records of the data outside the survey
/// copy from the neighbourhood of what the survey copied. Measured with
/// `pith bench zip` (store and model file together, against keeping the
/// whole dictionary, the ratio's trial records out of the survey): on
/// debian-packages 32 keeps 37% of the dictionary at +0.12% size and 64
/// keeps 48% at -0.03%; on 60 MB of rustdoc 32 keeps 37% at +0.5% and 64
/// keeps 43% at +0.1%. (With the trial records in the survey, 0 kept 15%
/// and 24% at -0.3% and +1.7%.) 32: the dictionary is what every reader
/// keeps in memory.
const KEEP_AROUND_USED: usize = 32;

/// Whether a survey of `survey` records decides which of a `dict_len`-byte
/// dictionary's bytes are kept: only one at least as large as the
/// dictionary (a first model trained on a few KiB keeps its dictionary
/// whole rather than what a few records happened to copy).
fn prunes<R: AsRef<[u8]>>(survey: &[R], dict_len: usize) -> bool {
    let bytes: usize = survey.iter().map(|r| r.as_ref().len()).sum();
    !survey.is_empty() && bytes >= dict_len
}

/// The bytes of `dict` that `keep` (a [`used_mask`]) keeps, in their
/// order.
fn used_bytes(dict: &[u8], keep: &[bool]) -> Vec<u8> {
    dict.iter()
        .zip(keep)
        .filter_map(|(&d, &k)| k.then_some(d))
        .collect()
}

/// Which bytes of `dict` some match copied (`coverage` is a difference
/// array: its prefix sum at `b` counts the matches that copied byte `b`),
/// each run widened by `margin` bytes on both sides.
fn used_mask(dict: &[u8], coverage: &[i32], margin: usize) -> Vec<bool> {
    let mut keep = vec![false; dict.len()];
    copied_runs(
        &coverage[..coverage.len().min(dict.len() + 1)],
        1,
        |start, end, _| {
            let (lo, hi) = (start.saturating_sub(margin), (end + margin).min(dict.len()));
            keep[lo..hi].fill(true);
        },
    );
    keep
}

/// Where `positions` of a dictionary are once only its bytes in `keep`
/// remain, in ascending order; positions of bytes dropped are dropped.
fn kept_positions(keep: &[bool], mut positions: Vec<u32>) -> Vec<u32> {
    positions.sort_unstable();
    let mut out = Vec::with_capacity(positions.len());
    let (mut at, mut kept_before) = (0usize, 0u32);
    for p in positions {
        let p = p as usize;
        while at < p.min(keep.len()) {
            kept_before += u32::from(keep[at]);
            at += 1;
        }
        if keep.get(p) == Some(&true) {
            out.push(kept_before);
        }
    }
    out
}

/// Chain candidates examined per position by default. Measured on the
/// bundled Debian sample with a trained model (one core, 2-core VM under
/// load, so roughly): depth 64 encodes 7.2 MB/s to 3.92x, depth 16
/// 16.0 MB/s to 3.87x, depth 4 11.6 MB/s to 3.78x (before chain-head
/// prefetching). It applies to training, and to encoding with
/// [`Effort::Thorough`]; the fast parse looks at one candidate.
pub(crate) const DEFAULT_DEPTH: usize = 16;

impl Encoder {
    /// Builds the dictionary from `material` and trains the codes on
    /// `training` (records that should not be in `material`, or the
    /// statistics would see free copies). A first parse finds which
    /// dictionary bytes are referenced most; those are copied to the front
    /// of the dictionary, where positions are cheap. Two more rounds settle
    /// the codes, each parsing with the prices of the round before and with
    /// `effort`, so the codes fit the parse that will encode with them (on
    /// Debian, fast rounds give the same ratio as thorough ones, sooner;
    /// a fast first round, though, picks hot bytes that cost 2% of the
    /// ratio, for 0.3 s less training, so it is always thorough). The
    /// second round parses `survey` instead (more records like
    /// `training`, up to 8 MiB, when it is at least as large as the
    /// dictionary), and the dictionary bytes none of its matches copied,
    /// beyond [`KEEP_AROUND_USED`] bytes of what they did, are dropped
    /// before the third: on Debian records the dictionary shrinks to 37%,
    /// its model file to 46%, and the records do not grow (the dictionary
    /// is what a reader keeps in memory). Each round's parse is split across up to `threads` threads
    /// (counts add up, so the result does not depend on the split).
    pub(crate) fn train<R: AsRef<[u8]> + Sync>(
        material: &[u8],
        training: &[R],
        survey: &[R],
        depth: usize,
        threads: usize,
        effort: Effort,
    ) -> Self {
        let mut parser = Parser::new(material, depth, Effort::Thorough);
        let mut prices = Prices::initial();
        let mut lengths = Counts::new().lengths();
        // Empty while the rounds parse (they price no ranks: the table is
        // chosen from their matches), the hot table after the last.
        let mut hot = HotIndex::new(HotTable::empty());
        let mut hot_starts: Option<Vec<u32>> = None;
        for round in 0..3 {
            let index = parser.index().clone();
            let prices_now = &prices;
            let round_effort = if round >= 1 { effort } else { Effort::Thorough };
            // Round 1 parses the survey when pruning (see below).
            let prune = round == 1 && prunes(survey, parser.dict().len());
            let spans_wanted = round == 0 || prune;
            // Per part: symbol counts, and the dictionary spans copied (in
            // round 0 to find the hot bytes, in round 1 the unused ones);
            // 32-bit positions, as the dictionary is at most `MAX_DICT`.
            // The last round keeps each record's sequences, to recode with
            // the hot table; the hot table counts where the matches of the
            // survey's round start (or the last round's, without a survey).
            let last = round == 2;
            let parse_part = |part: &[R]| {
                let mut p = Parser::over(index.clone(), depth, round_effort);
                let (mut counts, mut spans, mut seqs) = (Counts::new(), Vec::new(), Vec::new());
                let (mut kept, mut starts) = (Vec::new(), Vec::new());
                for r in part {
                    seqs.clear();
                    p.parse(r.as_ref(), prices_now, &hot, &mut seqs);
                    counts.add(r.as_ref(), &seqs);
                    if spans_wanted {
                        Parser::dict_spans(&seqs, |at, len| spans.push((at as u32, len as u32)));
                    }
                    if prune || (last && hot_starts.is_none()) {
                        hot::dict_starts(&seqs, &mut starts);
                    }
                    if last {
                        kept.push(seqs.clone());
                    }
                }
                (counts, spans, kept, starts)
            };
            let records = if prune { survey } else { training };
            let parts = threads.clamp(1, records.len().max(1));
            let chunk = records.len().div_ceil(parts).max(1);
            let results = on_threads(records.chunks(chunk).collect(), parse_part);
            let mut counts = Counts::new();
            let mut coverage = if spans_wanted {
                vec![0i32; parser.dict().len() + 1]
            } else {
                Vec::new()
            };
            for (c, spans, ..) in &results {
                counts.merge(c);
                for &(at, len) in spans {
                    coverage[at as usize] += 1;
                    coverage[at as usize + len as usize] -= 1;
                }
            }
            lengths = counts.lengths();
            prices = prices_from(&lengths, literal_price(&lengths, &counts));
            if round == 0 {
                let dict = parser.dict();
                let mut front = hot_bytes(dict, &coverage, HOT_BYTES.min(dict.len() / 4));
                let room = MAX_DICT - front.len().min(MAX_DICT);
                front.extend_from_slice(&dict[..dict.len().min(room)]);
                parser = Parser::new(&front, depth, effort);
            } else if prune {
                let keep = used_mask(parser.dict(), &coverage, KEEP_AROUND_USED);
                let starts = results.iter().flat_map(|r| &r.3).copied().collect();
                hot_starts = Some(kept_positions(&keep, starts));
                let kept = used_bytes(parser.dict(), &keep);
                parser = Parser::new(&kept, depth, effort);
            } else if last {
                let mut parsed = Vec::new();
                let mut starts = hot_starts.take().unwrap_or_default();
                for (_, _, seqs, s) in results {
                    parsed.extend(seqs);
                    starts.extend(s);
                }
                hot = HotIndex::new(HotTable::from_starts(starts));
                (lengths, prices) = with_hot_ranks(&parsed, records, &hot, &prices);
            }
        }
        let parser = Parser::over(parser.index().clone(), depth, effort);
        let codes = lengths.iter().map(|l| huffman::Encoder::new(l)).collect();
        Encoder {
            parser,
            prices,
            lengths,
            codes,
            hot,
            seqs: Vec::new(),
        }
    }

    /// An encoder for a model trained before: its dictionary's index, its
    /// code lengths and its average literal cost.
    pub(crate) fn for_model(
        index: Arc<DictIndex>,
        lengths: Vec<Vec<u8>>,
        hot: HotTable,
        literal: f32,
        depth: usize,
        effort: Effort,
    ) -> Self {
        let codes = lengths.iter().map(|l| huffman::Encoder::new(l)).collect();
        Encoder {
            parser: Parser::over(index, depth, effort),
            prices: prices_from(&lengths, literal),
            lengths,
            codes,
            hot: HotIndex::new(hot),
            seqs: Vec::new(),
        }
    }

    /// The hot table, by rank.
    pub(crate) fn hot(&self) -> &HotTable {
        self.hot.table()
    }

    /// The dictionary's index, shared with encoders made by [`Encoder::for_model`].
    pub(crate) fn index(&self) -> &Arc<DictIndex> {
        self.parser.index()
    }

    /// The code lengths, one table per entry.
    pub(crate) fn lengths(&self) -> &[Vec<u8>] {
        &self.lengths
    }

    /// The average literal cost the parse assumes.
    pub(crate) fn literal_price(&self) -> f32 {
        self.prices.literal
    }

    /// Appends the encoding of `rec` to `out`.
    pub(crate) fn encode(&mut self, rec: &[u8], out: &mut Vec<u8>) {
        self.seqs.clear();
        self.parser
            .parse(rec, &self.prices, &self.hot, &mut self.seqs);
        let prices = &self.prices;
        self.hot.recode(&mut self.seqs, |s| prices.source_cost(s));
        // Written into `out` itself: a bit writer of its own grew a
        // vector from empty (five reallocations for a Debian record) and
        // was copied and freed, for every record.
        let mut w = BitWriter::appending(std::mem::take(out));
        let put = |w: &mut BitWriter, code: &huffman::Encoder, c: symbols::Coded| {
            code.put(w, c.symbol);
            w.put_wide(c.extra, c.extra_bits);
        };
        for s in &self.seqs {
            put(
                &mut w,
                &self.codes[CONTEXTS],
                literal_len::encode(s.lit_len as u64),
            );
            for p in s.lit_start..s.lit_start + s.lit_len {
                self.codes[literal_context(rec, p, s.lit_start)].put(&mut w, usize::from(rec[p]));
            }
            if s.match_len == 0 {
                self.codes[CONTEXTS + 1].put(&mut w, match_len::END);
            } else {
                put(
                    &mut w,
                    &self.codes[CONTEXTS + 1],
                    match_len::encode(s.match_len),
                );
                put(&mut w, &self.codes[CONTEXTS + 2], source::encode(s.source));
            }
        }
        *out = w.finish();
    }

    /// The model section: header, code lengths, and the dictionary
    /// compressed as one zstd frame at `level` ([`STORE_DICT_LEVEL`] or
    /// [`MODEL_DICT_LEVEL`]).
    pub(crate) fn model_bytes(&self, level: i32) -> Result<Vec<u8>> {
        Ok(self.model_bytes_with(&compress_dict(self.parser.dict(), level)?))
    }

    /// [`Encoder::model_bytes`] with the dictionary compressed already
    /// (by [`compress_dict`], at the level the caller chose).
    pub(crate) fn model_bytes_with(&self, packed: &[u8]) -> Vec<u8> {
        let dict = self.parser.dict();
        let mut out = Vec::with_capacity(packed.len() + 1024);
        let hot = self.hot.table();
        out.extend_from_slice(if hot.is_empty() { &MAGIC } else { &MAGIC_HOT });
        le::put_u32(&mut out, dict.len() as u32);
        le::put_u32(&mut out, packed.len() as u32);
        for (t, l) in self.lengths.iter().enumerate() {
            if t == CONTEXTS + 2 && hot.is_empty() {
                // Version 1's source alphabet: no rank symbols (without a
                // table nothing codes one), then the escape.
                let mut v1 = l[..source::HOT_BASE].to_vec();
                v1.push(l[l.len() - 1]);
                huffman::write_lengths(&mut out, &v1);
            } else {
                huffman::write_lengths(&mut out, l);
            }
        }
        if !hot.is_empty() {
            hot.write(&mut out);
        }
        out.extend_from_slice(packed);
        out
    }
}

/// Asks the CPU to start loading `items[at]` into cache (no-op elsewhere
/// than x86-64, or out of bounds).
#[inline]
pub(crate) fn prefetch<T>(items: &[T], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < items.len() {
        // SAFETY: a prefetch is a hint that never faults, and the address
        // is inside `items` anyway.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch(items.as_ptr().add(at).cast::<i8>(), _MM_HINT_T0);
        }
    }
}

fn zerr(code: usize) -> Error {
    Error::Zstd(zstd_safe::get_error_name(code).to_string())
}

/// zstd level of the dictionary a self-contained store holds. Measured on
/// an 8 MiB Debian dictionary: level 19 takes 3.4 s for 1.76 MB, level 16
/// 1.5 s for 1.80 MB; the 2 s saved on every build are worth 0.4% of the
/// store.
pub(crate) const STORE_DICT_LEVEL: i32 = 16;

/// zstd level of a shared model's dictionary. A model is trained while
/// writes wait for its first flush, and a database holds one copy: on 3 MB
/// of Debian records level 9 takes 0.13 s for 643 KB, level 16 1.08 s for
/// 588 KB (zstd 1.5, this VM), so a second of ingest costs 55 KB once.
pub(crate) const MODEL_DICT_LEVEL: i32 = 9;

/// `dict` as one zstd frame at `level`, the window its size.
pub(crate) fn compress_dict(dict: &[u8], level: i32) -> Result<Vec<u8>> {
    let mut cctx = zstd_safe::CCtx::create();
    let window = (usize::BITS - dict.len().max(1 << 10).leading_zeros()).clamp(10, 30);
    for p in [
        CParameter::CompressionLevel(level),
        CParameter::WindowLog(window),
        CParameter::EnableLongDistanceMatching(true),
    ] {
        cctx.set_parameter(p).map_err(zerr)?;
    }
    let mut out = Vec::with_capacity(zstd_safe::compress_bound(dict.len()));
    cctx.compress2(&mut out, dict).map_err(zerr)?;
    Ok(out)
}

/// Inflates the dictionary: exactly `len` bytes from exactly `packed`.
fn decompress_dict(packed: &[u8], len: usize) -> Result<Vec<u8>> {
    let mut dctx = zstd_safe::DCtx::create();
    dctx.set_parameter(DParameter::WindowLogMax(31))
        .map_err(zerr)?;
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| Error::Zstd(format!("cannot allocate a {len}-byte dictionary")))?;
    let n = dctx.decompress(&mut out, packed).map_err(zerr)?;
    if n != len {
        return Err(Error::Zstd(format!(
            "dictionary inflates to {n} bytes, the model says {len}"
        )));
    }
    Ok(out)
}

/// What a model section holds, inflated.
pub(crate) struct ModelParts {
    pub(crate) dict: Vec<u8>,
    /// One table each, the escape last; a version 1 section's source
    /// table is widened to the rank symbols (with no codes).
    pub(crate) lengths: Vec<Vec<u8>>,
    pub(crate) hot: HotTable,
}

/// Parses a model section (version 1, "PZG1", or 2, "PZG2", with a hot
/// table) into its dictionary, code lengths and hot table.
pub(crate) fn read_model(bytes: &[u8]) -> std::result::Result<ModelParts, String> {
    let with_hot = match bytes.get(..4) {
        Some(m) if m == MAGIC => false,
        Some(m) if m == MAGIC_HOT => true,
        _ => return Err("model section lacks its magic".into()),
    };
    let u32_at = |at: usize| -> std::result::Result<usize, String> {
        Ok(le::u32_at(bytes, at).ok_or("model header truncated")? as usize)
    };
    let (dict_len, packed_len) = (u32_at(4)?, u32_at(8)?);
    let mut at = 12;
    let mut lengths = Vec::with_capacity(TABLES);
    for t in 0..TABLES {
        let (mut l, used) = huffman::read_lengths(&bytes[at..])
            .ok_or_else(|| format!("code lengths of table {t} truncated"))?;
        let expected = match t {
            _ if t < CONTEXTS => 256,
            _ if t == CONTEXTS => literal_len::SYMBOLS,
            _ if t == CONTEXTS + 1 => match_len::SYMBOLS,
            _ if with_hot => source::SYMBOLS,
            _ => source::HOT_BASE,
        } + 1;
        if l.len() != expected {
            return Err(format!("table {t} has {} symbols, not {expected}", l.len()));
        }
        if t == CONTEXTS + 2 && !with_hot {
            // The rank symbols have no code; the escape stays last (and
            // keeps its code: canonical codes skip symbols without one).
            l.splice(
                source::HOT_BASE..source::HOT_BASE,
                [0; source::SYMBOLS - source::HOT_BASE],
            );
        }
        lengths.push(l);
        at += used;
    }
    if dict_len > MAX_DICT {
        return Err(format!(
            "a {dict_len}-byte dictionary is over the format's {MAX_DICT}"
        ));
    }
    let hot = if with_hot {
        let (hot, used) = HotTable::read(&bytes[at..], dict_len)?;
        at += used;
        hot
    } else {
        HotTable::empty()
    };
    if bytes.len() - at != packed_len {
        return Err(format!(
            "model holds {} dictionary bytes, its header says {packed_len}",
            bytes.len() - at
        ));
    }
    if (dict_len as u64) > (packed_len as u64 + 1) * 32_768 {
        return Err(format!(
            "a {packed_len}-byte dictionary cannot inflate to {dict_len}"
        ));
    }
    let dict = decompress_dict(&bytes[at..], dict_len).map_err(|e| e.to_string())?;
    Ok(ModelParts { dict, lengths, hot })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes of the records encoded thoroughly and fast.
    fn roundtrip(dict: &[u8], training: &[&[u8]], records: &[&[u8]]) -> (usize, usize) {
        (
            roundtrip_with(dict, training, records, Effort::Thorough),
            roundtrip_with(dict, training, records, Effort::Fast),
        )
    }

    fn roundtrip_with(dict: &[u8], training: &[&[u8]], records: &[&[u8]], effort: Effort) -> usize {
        let mut enc = Encoder::train(dict, training, &[], DEFAULT_DEPTH, 2, effort);
        let model = enc.model_bytes(STORE_DICT_LEVEL).unwrap();
        let dec = Decoder::open(&model).unwrap();
        let mut total = 0;
        for r in records {
            let mut bytes = Vec::new();
            enc.encode(r, &mut bytes);
            total += bytes.len();
            let mut out = vec![1, 2, 3];
            dec.decode(&bytes, r.len() as u64, &mut out).unwrap();
            assert_eq!(&out, r);
        }
        total
    }

    #[test]
    fn kept_positions_follow_their_bytes_and_drop_the_rest() {
        // Bytes 2..5 and 8 kept: positions 2, 3, 4, 8 move to 0, 1, 2, 3.
        let mut keep = vec![false; 10];
        keep[2..5].fill(true);
        keep[8] = true;
        assert_eq!(
            kept_positions(&keep, vec![8, 3, 0, 3, 9, 2, 40]),
            [0, 1, 1, 3]
        );
        assert!(kept_positions(&keep, Vec::new()).is_empty());
    }

    #[test]
    fn used_bytes_keeps_copied_runs_and_their_margins() {
        let dict: Vec<u8> = (0..100u8).collect();
        let mut coverage = vec![0i32; dict.len() + 1];
        // Two overlapping copies (10..20 and 15..25) and one byte (60).
        for (at, len) in [(10, 10), (15, 10), (60, 1)] {
            coverage[at] += 1;
            coverage[at + len] -= 1;
        }
        let bytes = |r: std::ops::Range<u8>| r.collect::<Vec<u8>>();
        assert_eq!(
            used_bytes(&dict, &used_mask(&dict, &coverage, 0)),
            [bytes(10..25), vec![60]].concat()
        );
        assert_eq!(
            used_bytes(&dict, &used_mask(&dict, &coverage, 3)),
            [bytes(7..28), bytes(57..64)].concat()
        );
        // Margins stop at the ends; nothing copied keeps nothing.
        coverage[0] += 1;
        coverage[2] -= 1;
        assert_eq!(
            used_bytes(&dict, &used_mask(&dict, &coverage, 40))[..3],
            [0, 1, 2]
        );
        assert!(used_bytes(&dict, &used_mask(&dict, &vec![0; 101], 5)).is_empty());
    }

    #[test]
    fn a_survey_drops_the_dictionary_bytes_nothing_copies() {
        let record = |i: u32| {
            format!(
                "Package: lib{i}\nVersion: 1.{i}-1\nMaintainer: Debian Team <team@debian.org>\n\
                 Depends: libc6 (>= 2.34), zlib1g (>= 1:1.2)\n"
            )
            .into_bytes()
        };
        let mut material: Vec<u8> = (0..40).step_by(2).flat_map(record).collect();
        // Bytes like no record: nothing copies them.
        let mut state = 0x9E37_79B9u32;
        material.extend((0..20_000).map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        }));
        // A survey larger than the dictionary prunes it; a smaller one
        // (a first model's few KiB) keeps it whole.
        let held: Vec<Vec<u8>> = (1..40).step_by(2).map(record).collect();
        let held: Vec<&[u8]> = held.iter().map(Vec::as_slice).collect();
        let small = Encoder::train(&material, &held, &held, DEFAULT_DEPTH, 1, Effort::Fast);
        assert!(small.index().dict().len() >= material.len());
        let survey: Vec<Vec<u8>> = (1..800).step_by(2).map(record).collect();
        let survey: Vec<&[u8]> = survey.iter().map(Vec::as_slice).collect();
        assert!(survey.iter().map(|r| r.len()).sum::<usize>() > material.len());
        let mut enc = Encoder::train(&material, &held, &survey, DEFAULT_DEPTH, 1, Effort::Fast);
        let kept = enc.index().dict().len();
        assert!(kept < 4_000, "{kept} of {} bytes kept", material.len());
        let model = enc.model_bytes(STORE_DICT_LEVEL).unwrap();
        let dec = Decoder::open(&model).unwrap();
        for i in 40..60 {
            let r = record(i);
            let mut bytes = Vec::new();
            enc.encode(&r, &mut bytes);
            assert!(
                bytes.len() < r.len() / 3,
                "record {i}: {} bytes",
                bytes.len()
            );
            let mut out = Vec::new();
            dec.decode(&bytes, r.len() as u64, &mut out).unwrap();
            assert_eq!(out, r);
        }
    }

    /// The fast parse finds no candidates for the positions a long match
    /// jumps over, and must find them again after it: in a record that
    /// copies a long run of the dictionary, then has bytes of its own,
    /// then bytes of the dictionary the copy does not predict, then its
    /// own bytes again, the last two are matches (found through the
    /// dictionary's hash table and the record's own chains), not the 700
    /// literals they would be if the search stopped at the long copy.
    #[test]
    fn the_fast_parse_searches_again_after_a_long_copy() {
        let noise = |seed: u64, n: usize| crate::tests::noise(seed, 1, n).remove(0);
        let dict = noise(1, 6000);
        let record = |own: &[u8]| [&dict[..1500], own, &dict[4000..4400], own].concat();
        let (own, other) = (noise(2, 300), noise(3, 300));
        let (record, training) = (record(&own), record(&other));
        for effort in [Effort::Fast, Effort::Thorough] {
            let size = roundtrip_with(&dict, &[&training], &[&record], effort);
            // 300 literals (random bytes, which the codes learnt from other
            // random bytes make a little longer than a byte each), and the
            // codes of three matches: 424 bytes when written; 1,128 with
            // the search stopped at the long copy.
            assert!(size < 600, "{effort:?}: {size} bytes for {}", record.len());
        }
    }

    #[test]
    fn records_roundtrip() {
        let dict = b"Package: libfoo1\nVersion: 1.2.3-1\nDepends: libc6 (>= 2.34)\n";
        let training: Vec<&[u8]> = vec![
            b"Package: libfoo2\nVersion: 1.2.4-1\nDepends: libc6 (>= 2.36)\n",
            b"Package: bar\nVersion: 0.1\n",
        ];
        let records: Vec<&[u8]> = vec![
            b"",
            b"a",
            b"Package: libfoo3\nVersion: 1.2.3-2\nDepends: libc6 (>= 2.34), libfoo-common\n",
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            &[0xFF, 0, 0x80, 7, 7, 7, 7, 7, 7, 7, 7, 7, 0xFE],
        ];
        roundtrip(dict, &training, &records);
        roundtrip(b"", &[], &records);
    }

    #[test]
    fn near_copies_of_dictionary_records_cost_little() {
        let dict: Vec<u8> = (0..200)
            .flat_map(|i| format!("Package: pkg{i}\nVersion: {i}.0\nMaintainer: Team {}\nDescription: tool number {i} of many, with a long text\n", i % 7).into_bytes())
            .collect();
        let rec = b"Package: pkg77\nVersion: 78.0\nMaintainer: Team 0\nDescription: tool number 77 of many, with a long text\n";
        let (thorough, fast) = roundtrip(&dict, &[&rec[..]], &[&rec[..]]);
        assert!(
            thorough < rec.len() / 8,
            "{thorough} bytes for {}",
            rec.len()
        );
        // The fast parse anchors on the front-most "Package: " and needs
        // a few more matches to find pkg77's record.
        assert!(fast < rec.len() / 6, "{fast} bytes for {}", rec.len());
    }

    /// The fast parse with a model's index (heads without chains, as
    /// flushes encode): the dictionary holds most 6-byte runs of the
    /// record first, in 8-byte pieces, and the whole record after them.
    /// The short hash's front-most candidates are the pieces; the second
    /// table, on 16-byte hashes, finds the whole.
    #[test]
    fn the_long_table_finds_a_record_the_short_heads_miss() {
        let rec = b"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu";
        let mut dict = Vec::new();
        for i in (0..rec.len() - 8).step_by(3) {
            dict.extend_from_slice(&rec[i..i + 8]);
            dict.push(b'#');
        }
        dict.extend_from_slice(b"some other bytes in between ");
        dict.extend_from_slice(rec);
        let trained = Encoder::train(&dict, &[&rec[..]], &[], DEFAULT_DEPTH, 1, Effort::Fast);
        let encode = |index: DictIndex| {
            let mut enc = Encoder::for_model(
                Arc::new(index),
                trained.lengths().to_vec(),
                trained.hot().clone(),
                trained.literal_price(),
                DEFAULT_DEPTH,
                Effort::Fast,
            );
            let mut bytes = Vec::new();
            enc.encode(rec, &mut bytes);
            let model = trained.model_bytes(STORE_DICT_LEVEL).unwrap();
            let mut out = Vec::new();
            Decoder::open(&model)
                .unwrap()
                .decode(&bytes, rec.len() as u64, &mut out)
                .unwrap();
            assert_eq!(&out[..], &rec[..]);
            bytes.len()
        };
        let with_long = encode(DictIndex::new(&dict, false));
        let mut short_only = DictIndex::new(&dict, false);
        short_only.drop_long_heads();
        let without = encode(short_only);
        // One match of the whole record, against a piece at a time.
        assert!(
            with_long < rec.len() / 8 && with_long * 3 < without,
            "{with_long} bytes with the long table, {without} without, for {}",
            rec.len()
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Records over a three-letter alphabet against a dictionary of
        /// the same: every position has candidates, matches overlap their
        /// own output, run into the record's start and end, and extend
        /// backwards; both parses must round-trip.
        #[test]
        fn repetitive_records_round_trip_with_both_parses(
            dict in proptest::collection::vec(0u8..3, 0..2000),
            records in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..400), 1..12),
        ) {
            let records: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
            roundtrip(&dict, &records[..records.len() / 2], &records);
        }
    }
}
