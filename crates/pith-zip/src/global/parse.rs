//! The encoder's parse: splits a record into sequences (a run of literals,
//! then a match into the dictionary or back into the record) choosing, at
//! each position, the match that saves the most bits under the current
//! prices. The thorough parse (here) walks the hash chains `depth` deep
//! with two steps of lazy evaluation; the fast one is [`super::fast`].
//!
//! Invariants of the sequences produced: literal runs and matches tile the
//! record exactly, in order; every match is `MIN_MATCH..=MAX_MATCH` long and
//! its source holds exactly the bytes it replaces; the last sequence has no
//! match (`match_len == 0`).

use std::sync::Arc;

use pith_enc::prefix::common_len;

use super::fast::FastParse;
use super::hot::HotIndex;
use super::matcher::{DictIndex, LocalIndex};
use super::seq::{Prediction, Prices, Seq};
use super::symbols::{source, Source, MAX_MATCH, MIN_MATCH};
use super::Effort;

/// Positions ahead whose chain head is prefetched.
const LOOKAHEAD: usize = 4;

/// A match at least this long ends the search at its position.
const SUFFICIENT: usize = 64;

#[derive(Clone, Copy)]
struct Candidate {
    len: u64,
    source: Source,
    gain: f32,
}

/// Parses records against one dictionary.
pub(crate) struct Parser {
    /// Shared by every parser of one model (it is read-only).
    index: Arc<DictIndex>,
    local: LocalIndex,
    /// Chain candidates examined per position (the thorough parse).
    depth: usize,
    effort: Effort,
    /// Scratch of the fast parse.
    fast: FastParse,
}

/// Decoder-visible state the sources are relative to.
#[derive(Clone, Copy)]
struct State {
    /// End of the last dictionary match.
    cursor: u64,
    /// Distance of the last local match (0: none yet).
    last_dist: u64,
    /// Start of the pending literal run.
    lit_start: usize,
}

impl Parser {
    /// A parser over `dict` (with the chains when `effort` needs them).
    pub(crate) fn new(dict: &[u8], depth: usize, effort: Effort) -> Self {
        let chains = effort == Effort::Thorough;
        Parser::over(Arc::new(DictIndex::new(dict, chains)), depth, effort)
    }

    /// A parser over an index built before (a shared model's, or one a
    /// parser of another effort uses): the thorough parse needs its chains.
    pub(crate) fn over(index: Arc<DictIndex>, depth: usize, effort: Effort) -> Self {
        debug_assert!(effort == Effort::Fast || index.has_chains());
        Parser {
            index,
            local: LocalIndex::new(),
            depth,
            effort,
            fast: FastParse::new(),
        }
    }

    /// The dictionary's index, to share with other parsers.
    pub(crate) fn index(&self) -> &Arc<DictIndex> {
        &self.index
    }

    /// The dictionary parsed against.
    pub(crate) fn dict(&self) -> &[u8] {
        self.index.dict()
    }

    /// Best match at `p`, if any saves bits.
    fn best(&mut self, rec: &[u8], p: usize, st: &State, prices: &Prices) -> Option<Candidate> {
        let dict = self.index.dict();
        let rest = &rec[p..];
        let mut best: Option<Candidate> = None;
        let mut offer = |len: usize, source: Source| {
            let len = (len as u64).min(MAX_MATCH);
            if len < MIN_MATCH {
                return;
            }
            let gain = len as f32 * prices.literal - prices.match_cost(len, source);
            if gain > 0.0 && best.map_or(true, |b| gain > b.gain) {
                best = Some(Candidate { len, source, gain });
            }
        };
        // The dictionary position that continues the last dictionary match.
        let predicted = st.cursor + (p - st.lit_start) as u64;
        let mut longest = 0;
        if let Some(tail) = dict.get(predicted as usize..) {
            longest = common_len(rest, tail);
            offer(longest, Source::Near(0));
        }
        if st.last_dist > 0 && st.last_dist as usize <= p {
            let from = p - st.last_dist as usize;
            let len = common_len(rest, &rec[from..]);
            longest = longest.max(len);
            offer(len, Source::LocalRepeat);
        }
        // A match this long from the two cheapest sources is taken without
        // searching: a chain candidate would have to be longer still to
        // win, and it rarely is on record data.
        if longest >= SUFFICIENT {
            return best;
        }
        self.index.candidates(rest, self.depth, |at, len| {
            let delta = at as i64 - predicted as i64;
            if delta.abs() < source::NEAR_LIMIT {
                offer(len, Source::Near(delta));
            }
            offer(len, Source::At(at as u64));
            len < SUFFICIENT
        });
        self.local.insert_upto(rec, p);
        self.local
            .candidates(rec, p, self.depth.min(16), |dist, len| {
                let source = if dist as u64 == st.last_dist {
                    Source::LocalRepeat
                } else {
                    Source::Local(dist as u64)
                };
                offer(len, source);
                len < SUFFICIENT
            });
        best
    }

    /// The dictionary position each dictionary match of `seqs` (a parse of
    /// one record, which names no hot ranks: the encoder recodes after the
    /// parse) copies from, with its length.
    pub(crate) fn dict_spans(seqs: &[Seq], mut f: impl FnMut(u64, u64)) {
        let mut at = Prediction::default();
        for s in seqs {
            if let Some(pos) = at.step(s, &[]) {
                f(pos, s.match_len);
            }
        }
    }

    /// Appends the sequences of `rec` to `out`, priced by `prices` (and
    /// the fast parse, by the ranks of `hot` too).
    pub(crate) fn parse(
        &mut self,
        rec: &[u8],
        prices: &Prices,
        hot: &HotIndex,
        out: &mut Vec<Seq>,
    ) {
        match self.effort {
            Effort::Fast => self.fast.parse(&self.index, rec, prices, hot, out),
            Effort::Thorough => self.parse_thorough(rec, prices, out),
        }
    }

    /// The thorough parse: every candidate up to `depth` per position, and
    /// two lazy steps.
    fn parse_thorough(&mut self, rec: &[u8], prices: &Prices, out: &mut Vec<Seq>) {
        self.local.reset(rec.len());
        let mut st = State {
            cursor: 0,
            last_dist: 0,
            lit_start: 0,
        };
        let mut p = 0;
        while p + MIN_MATCH as usize <= rec.len() {
            // The chain heads are in a table of megabytes: ask for the one
            // a few positions ahead now, so it is in cache when needed.
            if let Some(ahead) = rec.get(p + LOOKAHEAD..) {
                self.index.prefetch_head(ahead);
            }
            let Some(here) = self.best(rec, p, &st, prices) else {
                p += 1;
                continue;
            };
            // Lazy steps: a literal or two now may buy a better match.
            if here.len < 64 {
                let later = |parser: &mut Self, k: usize| {
                    p + k + MIN_MATCH as usize <= rec.len()
                        && parser
                            .best(rec, p + k, &st, prices)
                            .is_some_and(|c| c.gain > here.gain + k as f32 * prices.literal)
                };
                if later(self, 1) || later(self, 2) {
                    p += 1;
                    continue;
                }
            }
            out.push(Seq {
                lit_start: st.lit_start,
                lit_len: p - st.lit_start,
                match_len: here.len,
                source: here.source,
            });
            match here.source {
                Source::Near(delta) => {
                    let predicted = st.cursor + (p - st.lit_start) as u64;
                    st.cursor = (predicted as i64 + delta) as u64 + here.len;
                }
                Source::At(at) => st.cursor = at + here.len,
                // The parse names no hot ranks (the encoder recodes).
                Source::LocalRepeat | Source::Hot(_) => {}
                Source::Local(d) => st.last_dist = d,
            }
            p += here.len as usize;
            st.lit_start = p;
        }
        out.push(Seq::last(st.lit_start, rec.len()));
    }
}
