//! Decoding one record of the global-dictionary codec.
//!
//! Every value read from the bit stream is checked before it is used: a
//! symbol no code has, a length past the record's bound, a dictionary
//! position outside the dictionary or a distance before the record's start
//! is a typed error, and so is a stream that ends early or has bytes left
//! over. The output never grows past `min(max, MAX_EXPANSION * (len + 1))`.

use super::symbols::{literal_len, match_len, source, Source, CONTEXTS, CONTEXT_OF, MAX_MATCH, START_CONTEXT};
use super::{read_model, MAX_EXPANSION};
use crate::bits::BitReader;
use crate::error::{Error, Result};
use crate::huffman;

/// An opened model: the inflated dictionary and the decode tables.
pub(crate) struct Decoder {
    dict: Vec<u8>,
    literals: Vec<huffman::Decoder>,
    lit_len: huffman::Decoder,
    match_len: huffman::Decoder,
    source: huffman::Decoder,
}

fn bad(detail: impl Into<String>) -> Error {
    Error::Codec(detail.into())
}

impl Decoder {
    /// Reads a model section.
    pub(crate) fn open(model: &[u8]) -> Result<Self> {
        let (dict, lengths) = read_model(model).map_err(bad)?;
        let mut tables = Vec::with_capacity(lengths.len());
        for (t, l) in lengths.iter().enumerate() {
            tables.push(
                huffman::Decoder::new(l)
                    .ok_or_else(|| bad(format!("code lengths of table {t} are not a prefix code")))?,
            );
        }
        let source = tables.pop().ok_or_else(|| bad("missing table"))?;
        let match_len = tables.pop().ok_or_else(|| bad("missing table"))?;
        let lit_len = tables.pop().ok_or_else(|| bad("missing table"))?;
        debug_assert_eq!(tables.len(), CONTEXTS);
        Ok(Decoder {
            dict,
            literals: tables,
            lit_len,
            match_len,
            source,
        })
    }

    /// Dictionary size in bytes (in memory, inflated).
    pub(crate) fn dict_len(&self) -> usize {
        self.dict.len()
    }

    /// Replaces `out` with the record encoded in `payload`, which may not
    /// decode to more than `max` bytes.
    pub(crate) fn decode(&self, payload: &[u8], max: u64, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let limit = max.min((payload.len() as u64 + 1).saturating_mul(MAX_EXPANSION)) as usize;
        let mut r = BitReader::new(payload);
        let mut cursor = 0u64;
        let mut last_dist = 0usize;
        let mut ctx = usize::from(START_CONTEXT);
        loop {
            r.refill();
            let sym = self.lit_len.get(&mut r).ok_or_else(|| bad("invalid literal-length code"))?;
            let eb = literal_len::extra_bits(sym).ok_or_else(|| bad("literal-length code out of range"))?;
            let lits = literal_len::value(sym, r.read_wide(eb));
            let lits = usize::try_from(lits)
                .ok()
                .filter(|&n| n <= limit - out.len())
                .ok_or_else(|| bad(format!("{lits} literals overflow the record bound {limit}")))?;
            out.try_reserve(lits).map_err(|_| bad("cannot allocate the record"))?;
            for _ in 0..lits {
                r.refill();
                let b = self.literals[ctx].get(&mut r).ok_or_else(|| bad("invalid literal code"))?;
                out.push(b as u8);
                ctx = usize::from(CONTEXT_OF[b & 255]);
            }
            r.refill();
            let sym = self.match_len.get(&mut r).ok_or_else(|| bad("invalid match-length code"))?;
            if sym == match_len::END {
                break;
            }
            let eb = match_len::extra_bits(sym).ok_or_else(|| bad("match-length code out of range"))?;
            let len = match_len::value(sym, r.read_wide(eb));
            if len > MAX_MATCH || len as usize > limit - out.len() {
                return Err(bad(format!("a {len}-byte match overflows the record bound {limit}")));
            }
            let len = len as usize;
            r.refill();
            let sym = self.source.get(&mut r).ok_or_else(|| bad("invalid source code"))?;
            let eb = source::extra_bits(sym).ok_or_else(|| bad("source code out of range"))?;
            let src = source::value(sym, r.read_wide(eb));
            out.try_reserve(len).map_err(|_| bad("cannot allocate the record"))?;
            match src {
                Source::Dict(delta) => {
                    let predicted = cursor + lits as u64;
                    let from = (predicted as i128 + i128::from(delta)) as u128;
                    let span = usize::try_from(from)
                        .ok()
                        .and_then(|f| Some(f..f.checked_add(len)?))
                        .and_then(|range| self.dict.get(range.clone()).map(|s| (range.end, s)));
                    let (end, bytes) = span.ok_or_else(|| {
                        bad(format!("dictionary match at {from}+{len} outside the {}-byte dictionary", self.dict.len()))
                    })?;
                    out.extend_from_slice(bytes);
                    cursor = end as u64;
                }
                Source::LocalRepeat | Source::Local(_) => {
                    let dist = match src {
                        Source::Local(d) => usize::try_from(d).unwrap_or(usize::MAX),
                        _ => last_dist,
                    };
                    if dist == 0 || dist > out.len() {
                        return Err(bad(format!("match distance {dist} before the record start")));
                    }
                    copy_back(out, dist, len);
                    last_dist = dist;
                }
            }
            ctx = usize::from(CONTEXT_OF[usize::from(out[out.len() - 1])]);
        }
        if !r.finish() {
            return Err(bad("record bits end early or leave bytes over"));
        }
        Ok(())
    }
}

/// Appends `len` bytes copied from `dist` back, overlapping allowed (a
/// distance shorter than the length repeats the pattern).
#[inline]
fn copy_back(out: &mut Vec<u8>, dist: usize, len: usize) {
    let start = out.len() - dist;
    if dist >= len {
        out.extend_from_within(start..start + len);
    } else {
        for i in 0..len {
            let b = out[start + i];
            out.push(b);
        }
    }
}
