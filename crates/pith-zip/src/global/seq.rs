//! What a parse produces and what it optimizes against: [`Seq`], one
//! literal run and the match after it, [`Prediction`], where its
//! dictionary matches copy from, and [`Prices`], the bit costs of the
//! codes. Shared by the parses (`parse.rs`, `fast.rs`), the hot table
//! (`hot.rs`) and the encoder, none of which this module imports.

use super::symbols::{match_len, source, Source};

/// One sequence: `lit_len` literals starting at `lit_start`, then a match
/// of `match_len` bytes from `source` (none when `match_len == 0`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seq {
    pub(crate) lit_start: usize,
    pub(crate) lit_len: usize,
    pub(crate) match_len: u64,
    pub(crate) source: Source,
}

impl Seq {
    /// The closing sequence of a record of `len` bytes: the literals from
    /// `lit_start` on, and no match.
    pub(crate) fn last(lit_start: usize, len: usize) -> Seq {
        Seq {
            lit_start,
            lit_len: len - lit_start,
            match_len: 0,
            source: Source::LocalRepeat,
        }
    }
}

/// The prediction a decoder keeps while it reads one record's sequences
/// (the end of the last dictionary match, 0 at the start), for code that
/// walks sequences the decoder's way: training's statistics, the hot
/// table's counts and the encoder's recoding.
#[derive(Default)]
pub(crate) struct Prediction {
    end: i64,
}

impl Prediction {
    /// The dictionary position the match of `s` copies from (`hot`: the
    /// model's hot positions by rank), moving the prediction to its end;
    /// `None` for a local match, the closing sequence, or a position no
    /// dictionary has (a rank past `hot`).
    #[inline]
    pub(crate) fn step(&mut self, s: &Seq, hot: &[u32]) -> Option<u64> {
        if s.match_len == 0 {
            return None;
        }
        let pos = match s.source {
            Source::Near(d) => self.end + s.lit_len as i64 + d,
            Source::At(p) => p as i64,
            Source::Hot(r) => hot.get(r as usize).map_or(-1, |&p| i64::from(p)),
            Source::Local(_) | Source::LocalRepeat => return None,
        };
        self.end = pos + s.match_len as i64;
        u64::try_from(pos).ok()
    }
}

/// Bit costs the parse optimizes against.
#[derive(Clone, Debug)]
pub(crate) struct Prices {
    /// Average cost of a literal.
    pub(crate) literal: f32,
    /// Cost of each match-length symbol (without extra bits).
    pub(crate) match_len: Vec<f32>,
    /// Cost of each source symbol (without extra bits).
    pub(crate) source: Vec<f32>,
}

impl Prices {
    /// Guesses for the first round, before any statistics exist.
    pub(crate) fn initial() -> Self {
        Prices {
            literal: 6.0,
            match_len: (0..match_len::SYMBOLS)
                .map(|s| if s < 12 { 4.0 } else { 6.0 })
                .collect(),
            source: (0..source::SYMBOLS)
                .map(|s| match s {
                    0 => 2.0,
                    65 => 3.0,
                    _ => 5.0,
                })
                .collect(),
        }
    }

    #[inline]
    pub(crate) fn match_cost(&self, len: u64, src: Source) -> f32 {
        let m = match_len::encode(len);
        self.match_len[m.symbol] + m.extra_bits as f32 + self.source_cost(src)
    }

    /// What a source costs: its symbol and extra bits.
    #[inline]
    pub(crate) fn source_cost(&self, src: Source) -> f32 {
        let s = source::encode(src);
        self.source[s.symbol] + s.extra_bits as f32
    }
}
