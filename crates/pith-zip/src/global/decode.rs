//! Decoding one record of the global-dictionary codec, in two phases.
//!
//! Phase one reads the bits: literals go straight to their place in the
//! output, each match leaves a gap and a pending copy, and the dictionary
//! lines a copy will read are prefetched. Phase two fills the gaps in
//! order. Literal contexts never depend on copied bytes, so phase one runs
//! without waiting on the dictionary, and the dictionary's cache misses (the
//! cost of a megabytes-large dictionary) overlap instead of queueing.
//! Pending copies are flushed every [`BATCH`] matches, so memory stays
//! constant.
//!
//! Every value read from the bit stream is checked before it is used: a
//! symbol no code has, a length past the record's bound, a dictionary
//! position outside the dictionary or a distance before the record's start
//! is a typed error, and so is a stream that ends early or has bytes left
//! over. The output never grows past `min(max, MAX_EXPANSION * (len + 1))`.

use super::symbols::{
    is_hex_class, literal_len, match_len, next_context, source, Source, AFTER_MATCH, CONTEXTS,
    CONTEXT_OF, MAX_MATCH, START_CONTEXT,
};
use super::{prefetch, read_model, MAX_EXPANSION};
use crate::bits::BitReader;
use crate::error::{Error, Result};
use crate::huffman::{self, MAX_BITS};

/// The escape symbol of literal tables (after the 256 byte values).
const LITERAL_ESCAPE: usize = 256;

/// Pending copies per flush.
const BATCH: usize = 64;

/// An opened model: the inflated dictionary and the decode tables.
pub(crate) struct Decoder {
    dict: Dictionary,
    literals: Vec<huffman::Decoder>,
    /// All literal tables in one array, context `c` at `c << MAX_BITS`,
    /// entries `length | byte << 4 | class << 12` (see [`literal_entry`]):
    /// one array, no pointer to chase per literal, and the next literal's
    /// context comes from the entry, not from a second lookup.
    literal_table: Box<[u16]>,
    lit_len: huffman::Decoder,
    match_len: huffman::Decoder,
    source: huffman::Decoder,
}

/// The inflated dictionary, in huge pages where the kernel gives them: its
/// reads are random, and 4 KiB pages would add a TLB miss to most.
enum Dictionary {
    Mapped(memmap2::MmapMut),
    Heap(Vec<u8>),
}

impl Dictionary {
    fn new(bytes: Vec<u8>) -> Self {
        if bytes.len() < 2 << 20 {
            return Dictionary::Heap(bytes);
        }
        match memmap2::MmapMut::map_anon(bytes.len()) {
            Ok(mut map) => {
                // Only a hint: without transparent huge pages it is a no-op.
                #[cfg(target_os = "linux")]
                let _ = map.advise(memmap2::Advice::HugePage);
                map.copy_from_slice(&bytes);
                Dictionary::Mapped(map)
            }
            Err(_) => Dictionary::Heap(bytes),
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Dictionary::Mapped(m) => m,
            Dictionary::Heap(v) => v,
        }
    }
}

/// Class of a literal entry whose symbol is the escape.
const ESCAPE_CLASS: u16 = 15;

/// A literal-table entry from a [`huffman::Decoder`] entry
/// (`length | symbol << 4`): the length, the byte, and the byte's
/// [`CONTEXT_OF`] class ([`ESCAPE_CLASS`] for the escape symbol).
fn literal_entry(e: u16) -> u16 {
    let (len, symbol) = (e & 15, usize::from(e >> 4));
    let class = if symbol == LITERAL_ESCAPE {
        ESCAPE_CLASS
    } else {
        u16::from(CONTEXT_OF[symbol & 255])
    };
    len | ((symbol & 255) as u16) << 4 | class << 12
}

fn bad(detail: impl Into<String>) -> Error {
    Error::Codec(detail.into())
}

/// A copy phase two performs: `len` bytes to `dst` from the dictionary at
/// `from`, or from `dst - from` in the output when `local`.
#[derive(Clone, Copy, Default)]
struct Copy {
    dst: usize,
    len: usize,
    from: usize,
    local: bool,
}

impl Decoder {
    /// Reads a model section.
    pub(crate) fn open(model: &[u8]) -> Result<Self> {
        let (dict, lengths) = read_model(model).map_err(bad)?;
        Decoder::from_parts(dict, &lengths)
    }

    /// A decoder for `dict` with the codes of `lengths` (one table each).
    pub(crate) fn from_parts(dict: Vec<u8>, lengths: &[Vec<u8>]) -> Result<Self> {
        let mut tables = Vec::with_capacity(lengths.len());
        for (t, l) in lengths.iter().enumerate() {
            tables.push(
                huffman::Decoder::new(l).ok_or_else(|| {
                    bad(format!("code lengths of table {t} are not a prefix code"))
                })?,
            );
        }
        let source = tables.pop().ok_or_else(|| bad("missing table"))?;
        let match_len = tables.pop().ok_or_else(|| bad("missing table"))?;
        let lit_len = tables.pop().ok_or_else(|| bad("missing table"))?;
        debug_assert_eq!(tables.len(), CONTEXTS);
        let literal_table = tables
            .iter()
            .flat_map(|t| t.table())
            .map(|&e| literal_entry(e))
            .collect();
        Ok(Decoder {
            dict: Dictionary::new(dict),
            literals: tables,
            literal_table,
            lit_len,
            match_len,
            source,
        })
    }

    /// Dictionary size in bytes (in memory, inflated).
    pub(crate) fn dict_len(&self) -> usize {
        self.dict.bytes().len()
    }

    /// The inflated dictionary.
    pub(crate) fn dict(&self) -> &[u8] {
        self.dict.bytes()
    }

    /// Replaces `out` with the record encoded in `payload`, which may not
    /// decode to more than `max` bytes.
    pub(crate) fn decode(&self, payload: &[u8], max: u64, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let dict = self.dict.bytes();
        let limit = max.min((payload.len() as u64 + 1).saturating_mul(MAX_EXPANSION)) as usize;
        let mut r = BitReader::new(payload);
        let mut cursor = 0usize;
        let mut last_dist = 0usize;
        let mut ctx = usize::from(START_CONTEXT);
        let mut pending = [Copy::default(); BATCH];
        let mut npending = 0;
        loop {
            r.refill();
            let sym = self
                .lit_len
                .get(&mut r)
                .ok_or_else(|| bad("invalid literal-length code"))?;
            let eb = literal_len::extra_bits(sym)
                .ok_or_else(|| bad("literal-length code out of range"))?;
            let lits = literal_len::value(sym, r.read_wide(eb));
            let lits = usize::try_from(lits)
                .ok()
                .filter(|&n| n <= limit - out.len())
                .ok_or_else(|| bad(format!("{lits} literals overflow the record bound {limit}")))?;
            out.try_reserve(lits)
                .map_err(|_| bad("cannot allocate the record"))?;
            let start = out.len();
            out.resize(start + lits, 0);
            let mut hexes = 0;
            for slot in &mut out[start..] {
                // A literal takes at most MAX_BITS + 8 bits (escaped).
                if r.available() < MAX_BITS + 8 {
                    r.refill();
                }
                let e = self.literal_table[ctx << MAX_BITS | r.peek(MAX_BITS) as usize];
                let len = u32::from(e & 15);
                if len == 0 {
                    return Err(bad("invalid literal code"));
                }
                r.consume(len);
                let mut class = (e >> 12) as u8;
                let mut b = (e >> 4) as u8;
                if u16::from(class) == ESCAPE_CLASS {
                    let escaped = self.literals[ctx]
                        .escaped(&mut r)
                        .ok_or_else(|| bad("escaped literal out of range"))?;
                    b = escaped as u8;
                    class = CONTEXT_OF[escaped & 255];
                }
                *slot = b;
                hexes = if is_hex_class(class) { hexes + 1 } else { 0 };
                ctx = usize::from(next_context(class, hexes));
            }
            r.refill();
            let sym = self
                .match_len
                .get(&mut r)
                .ok_or_else(|| bad("invalid match-length code"))?;
            if sym == match_len::END {
                break;
            }
            let eb =
                match_len::extra_bits(sym).ok_or_else(|| bad("match-length code out of range"))?;
            let len = match_len::value(sym, r.read_wide(eb));
            if len > MAX_MATCH || len as usize > limit - out.len() {
                return Err(bad(format!(
                    "a {len}-byte match overflows the record bound {limit}"
                )));
            }
            let len = len as usize;
            r.refill();
            let sym = self
                .source
                .get(&mut r)
                .ok_or_else(|| bad("invalid source code"))?;
            let eb = source::extra_bits(sym).ok_or_else(|| bad("source code out of range"))?;
            let dst = out.len();
            let copy = match source::value(sym, r.read_wide(eb)) {
                src @ (Source::Near(_) | Source::At(_)) => {
                    let from = match src {
                        Source::Near(delta) => {
                            (cursor as i128 + lits as i128 + i128::from(delta)) as u128
                        }
                        Source::At(at) => u128::from(at),
                        _ => u128::MAX,
                    };
                    let from = usize::try_from(from)
                        .ok()
                        .filter(|&f| f <= dict.len() && len <= dict.len() - f)
                        .ok_or_else(|| {
                            bad(format!(
                                "dictionary match at {from}+{len} outside the {}-byte dictionary",
                                dict.len()
                            ))
                        })?;
                    prefetch(dict, from);
                    prefetch(dict, from + len - 1);
                    cursor = from + len;
                    Copy {
                        dst,
                        len,
                        from,
                        local: false,
                    }
                }
                src => {
                    let dist = match src {
                        Source::Local(d) => usize::try_from(d).unwrap_or(usize::MAX),
                        _ => last_dist,
                    };
                    if dist == 0 || dist > dst {
                        return Err(bad(format!(
                            "match distance {dist} before the record start"
                        )));
                    }
                    last_dist = dist;
                    Copy {
                        dst,
                        len,
                        from: dist,
                        local: true,
                    }
                }
            };
            out.try_reserve(len)
                .map_err(|_| bad("cannot allocate the record"))?;
            out.resize(dst + len, 0);
            pending[npending] = copy;
            npending += 1;
            if npending == BATCH {
                fill(out, dict, &pending);
                npending = 0;
            }
            ctx = usize::from(AFTER_MATCH);
        }
        fill(out, dict, &pending[..npending]);
        if !r.finish() {
            return Err(bad("record bits end early or leave bytes over"));
        }
        Ok(())
    }
}

/// Phase two: performs `copies` in order. Their ranges were checked when
/// they were decoded.
#[inline]
fn fill(out: &mut [u8], dict: &[u8], copies: &[Copy]) {
    for c in copies {
        if !c.local {
            out[c.dst..c.dst + c.len].copy_from_slice(&dict[c.from..c.from + c.len]);
        } else if c.from >= c.len {
            out.copy_within(c.dst - c.from..c.dst - c.from + c.len, c.dst);
        } else {
            // Overlapping: a distance shorter than the length repeats the
            // pattern, byte by byte.
            for i in c.dst..c.dst + c.len {
                out[i] = out[i - c.from];
            }
        }
    }
}
