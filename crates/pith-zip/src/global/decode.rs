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
//! The symbols are read through the tables of `tables.rs`, built once per
//! model: literals two at a time where both codes fit in
//! [`PAIR_BITS`](super::tables::PAIR_BITS) bits, lengths and sources with
//! their extra bits in one step; what those tables leave out takes the
//! general path, with the same checks. `reference.rs` (tests only) keeps
//! the plain one-lookup-per-symbol decoder this one must agree with.
//!
//! Thread safety: a `Decoder` is immutable once built and `Send + Sync`.
//!
//! Every value read from the bit stream is checked before it is used: a
//! symbol no code has, a length past the record's bound, a dictionary
//! position outside the dictionary or a distance before the record's start
//! is a typed error, and so is a stream that ends early or has bytes left
//! over. The output never grows past `min(max, MAX_EXPANSION * (len + 1))`.

use super::symbols::{
    literal_len, match_len, source, Source, AFTER_MATCH, CONTEXTS, CONTEXT_OF, MAX_MATCH,
    START_CONTEXT,
};
use super::tables::{
    next_ctx, Alphabet, Fused, FusedEntry, Literals, ESCAPE_CLASS, KIND_END, LITERAL_ESCAPE,
    PAIR_BITS,
};
use super::{prefetch, read_model, MAX_EXPANSION};
use crate::bits::BitReader;
use crate::error::{Error, Result};
use crate::huffman::{self, MAX_BITS};

/// Pending copies per flush.
const BATCH: usize = 64;

/// An opened model: the inflated dictionary and the decode tables.
pub(crate) struct Decoder {
    dict: Dictionary,
    literals: Literals,
    /// The sequence codes with their extra bits folded in ([`Fused`]) ...
    lit_len: Fused,
    match_len: Fused,
    source: Fused,
    /// ... and as plain codes, for the symbols [`Fused`] leaves out.
    lit_len_code: huffman::Decoder,
    match_len_code: huffman::Decoder,
    source_code: huffman::Decoder,
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

/// The value of a [`Fused`] slot `e` (not 0), consuming its code and
/// extra bits. The reader must have been refilled since the last
/// sequence code (a slot takes at most 42 bits).
#[inline]
fn fused_value(r: &mut BitReader<'_>, e: FusedEntry) -> u64 {
    let (len, extra) = (e & 15, e >> 4 & 31);
    let v = u64::from(e >> 12) + (u64::from(e >> 11 & 1) << extra) + (r.peek(len + extra) >> len);
    r.consume(len + extra);
    v
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
        if tables.len() != CONTEXTS || tables.iter().any(|t| t.escape() != LITERAL_ESCAPE) {
            return Err(bad("literal tables do not match the contexts"));
        }
        Ok(Decoder {
            dict: Dictionary::new(dict),
            literals: Literals::new(&tables),
            lit_len: Fused::new(&lit_len, Alphabet::LiteralLen),
            match_len: Fused::new(&match_len, Alphabet::MatchLen),
            source: Fused::new(&source, Alphabet::Source),
            lit_len_code: lit_len,
            match_len_code: match_len,
            source_code: source,
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

    /// Memory held: the dictionary and the decode tables.
    pub(crate) fn heap_bytes(&self) -> usize {
        let codes = [&self.lit_len_code, &self.match_len_code, &self.source_code];
        self.dict_len()
            + self.literals.heap_bytes()
            + self.lit_len.heap_bytes()
            + self.match_len.heap_bytes()
            + self.source.heap_bytes()
            + codes.iter().map(|c| c.table().len() * 2).sum::<usize>()
    }

    /// Replaces `out` with the record encoded in `payload`, which may not
    /// decode to more than `max` bytes; `out` is empty after an error.
    pub(crate) fn decode(&self, payload: &[u8], max: u64, out: &mut Vec<u8>) -> Result<()> {
        let decoded = self.decode_into(payload, max, out);
        if decoded.is_err() {
            out.clear();
        }
        decoded
    }

    fn decode_into(&self, payload: &[u8], max: u64, out: &mut Vec<u8>) -> Result<()> {
        let dict = self.dict.bytes();
        let limit = max.min((payload.len() as u64 + 1).saturating_mul(MAX_EXPANSION)) as usize;
        // The record is decoded into `out` as it is, grown when needed and
        // cut to the record's length at the end: a buffer reused from
        // record to record is zeroed only where it grows, and there is no
        // resize per literal run or match.
        let first = limit.min(payload.len().saturating_mul(8).saturating_add(64));
        if out.len() < first {
            grow(out, first)?;
        }
        let mut r = BitReader::new(payload);
        let mut pos = 0usize;
        let mut cursor = 0usize;
        let mut last_dist = 0usize;
        let mut ctx = usize::from(START_CONTEXT);
        let mut pending = [Copy::default(); BATCH];
        let mut npending = 0;
        loop {
            r.refill();
            let e = self.lit_len.get(r.peek(MAX_BITS));
            let lits = if e != 0 {
                fused_value(&mut r, e)
            } else {
                let sym = self
                    .lit_len_code
                    .get(&mut r)
                    .ok_or_else(|| bad("invalid literal-length code"))?;
                let eb = literal_len::extra_bits(sym)
                    .ok_or_else(|| bad("literal-length code out of range"))?;
                literal_len::value(sym, r.read_wide(eb))
            };
            let lits = usize::try_from(lits)
                .ok()
                .filter(|&n| n <= limit - pos)
                .ok_or_else(|| bad(format!("{lits} literals overflow the record bound {limit}")))?;
            let end = pos + lits;
            if end > out.len() {
                grow(out, end.max(out.len().saturating_mul(2)).min(limit))?;
            }
            if lits > 0 {
                self.literals(&mut r, ctx, &mut out[pos..end])?;
            }
            pos = end;
            r.refill();
            let e = self.match_len.get(r.peek(MAX_BITS));
            let len = if e != 0 {
                if e >> 9 & 3 == KIND_END {
                    r.consume(e & 15);
                    break;
                }
                fused_value(&mut r, e)
            } else {
                let sym = self
                    .match_len_code
                    .get(&mut r)
                    .ok_or_else(|| bad("invalid match-length code"))?;
                if sym == match_len::END {
                    break;
                }
                let eb = match_len::extra_bits(sym)
                    .ok_or_else(|| bad("match-length code out of range"))?;
                match_len::value(sym, r.read_wide(eb))
            };
            if len > MAX_MATCH || len as usize > limit - pos {
                return Err(bad(format!(
                    "a {len}-byte match overflows the record bound {limit}"
                )));
            }
            let len = len as usize;
            r.refill();
            let e = self.source.get(r.peek(MAX_BITS));
            let src = if e != 0 {
                let v = fused_value(&mut r, e);
                match e >> 9 & 3 {
                    k if k == source::Kind::Near as u32 => Source::Near(source::near_delta(v)),
                    k if k == source::Kind::At as u32 => Source::At(v),
                    k if k == source::Kind::LocalRepeat as u32 => Source::LocalRepeat,
                    _ => Source::Local(v),
                }
            } else {
                let sym = self
                    .source_code
                    .get(&mut r)
                    .ok_or_else(|| bad("invalid source code"))?;
                let eb = source::extra_bits(sym).ok_or_else(|| bad("source code out of range"))?;
                source::value(sym, r.read_wide(eb))
            };
            let dst = pos;
            let copy = match src {
                Source::Near(_) | Source::At(_) => {
                    let from = match src {
                        Source::Near(delta) => (cursor + lits).checked_add_signed(delta as isize),
                        Source::At(at) => usize::try_from(at).ok(),
                        _ => None,
                    };
                    let from = from
                        .filter(|&f| f <= dict.len() && len <= dict.len() - f)
                        .ok_or_else(|| {
                            bad(format!(
                                "dictionary match {src:?}+{len} outside the {}-byte dictionary",
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
                Source::LocalRepeat | Source::Local(_) => {
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
            pos += len;
            if pos > out.len() {
                grow(out, pos.max(out.len().saturating_mul(2)).min(limit))?;
            }
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
        out.truncate(pos);
        Ok(())
    }

    /// Decodes the literal run `run` (not empty) starting in context
    /// `ctx`. Two literals per lookup where their codes fit in
    /// [`PAIR_BITS`] together.
    #[inline]
    fn literals(&self, r: &mut BitReader<'_>, mut ctx: usize, run: &mut [u8]) -> Result<()> {
        let mut i = 0;
        while i + 1 < run.len() {
            if r.available() < PAIR_BITS {
                r.refill();
            }
            let e = self.literals.pair(ctx, r.peek(PAIR_BITS));
            if e == 0 {
                let (b, next) = self.literal(r, ctx)?;
                run[i] = b;
                i += 1;
                ctx = next;
                continue;
            }
            r.consume(e & 15);
            // With one literal in the entry, the second byte is garbage
            // that the next literal overwrites (two remain, so it exists).
            run[i] = (e >> 8) as u8;
            run[i + 1] = (e >> 16) as u8;
            i += (e >> 4 & 3) as usize;
            ctx = (e >> 24) as usize;
        }
        if let Some(slot) = run.get_mut(i) {
            *slot = self.literal(r, ctx)?.0;
        }
        Ok(())
    }

    /// Decodes one literal in context `ctx`, escapes included; returns it
    /// and the next context.
    #[inline]
    fn literal(&self, r: &mut BitReader<'_>, ctx: usize) -> Result<(u8, usize)> {
        // A literal takes at most MAX_BITS + 8 bits (escaped).
        if r.available() < MAX_BITS + 8 {
            r.refill();
        }
        let e = self.literals.single(ctx, r.peek(MAX_BITS));
        let len = u32::from(e & 15);
        if len == 0 {
            return Err(bad("invalid literal code"));
        }
        r.consume(len);
        let next = e >> 12;
        if next != ESCAPE_CLASS {
            return Ok(((e >> 4) as u8, usize::from(next)));
        }
        let b = huffman::read_escaped(r, LITERAL_ESCAPE)
            .ok_or_else(|| bad("escaped literal out of range"))?;
        Ok((b as u8, usize::from(next_ctx(ctx, CONTEXT_OF[b & 255]))))
    }
}

/// Grows `out` to `len` bytes (zeroed).
fn grow(out: &mut Vec<u8>, len: usize) -> Result<()> {
    out.try_reserve(len.saturating_sub(out.len()))
        .map_err(|_| bad("cannot allocate the record"))?;
    out.resize(len, 0);
    Ok(())
}

/// Phase two: performs `copies` in order. Their ranges were checked when
/// they were decoded.
#[inline]
fn fill(out: &mut [u8], dict: &[u8], copies: &[Copy]) {
    for c in copies {
        if !c.local {
            copy_exact(
                &mut out[c.dst..c.dst + c.len],
                &dict[c.from..c.from + c.len],
            );
        } else if c.from >= c.len {
            let (head, tail) = out.split_at_mut(c.dst);
            let at = c.dst - c.from;
            copy_exact(&mut tail[..c.len], &head[at..at + c.len]);
        } else {
            // Overlapping: a distance shorter than the length repeats the
            // pattern, byte by byte.
            for i in c.dst..c.dst + c.len {
                out[i] = out[i - c.from];
            }
        }
    }
}

/// Copies `src` to `dst` (the same length) with a few fixed-size moves
/// instead of a call to `memcpy`, which costs more than the copy at the
/// lengths matches have (19 bytes on average on Debian records): two
/// overlapping 4-, 8- or 16-byte moves cover any length from 4 to 32.
#[inline(always)]
fn copy_exact(dst: &mut [u8], src: &[u8]) {
    #[inline(always)]
    fn mv<const N: usize>(dst: &mut [u8], src: &[u8], at: usize) {
        if let (Some(d), Some(s)) = (dst.get_mut(at..at + N), src.get(at..at + N)) {
            d.copy_from_slice(s);
        }
    }
    let n = dst.len().min(src.len());
    match n {
        0..4 => {
            for (d, s) in dst.iter_mut().zip(src) {
                *d = *s;
            }
        }
        4..=8 => {
            mv::<4>(dst, src, 0);
            mv::<4>(dst, src, n - 4);
        }
        9..=16 => {
            mv::<8>(dst, src, 0);
            mv::<8>(dst, src, n - 8);
        }
        _ => {
            let mut at = 0;
            while at + 16 < n {
                mv::<16>(dst, src, at);
                at += 16;
            }
            mv::<16>(dst, src, n - 16);
        }
    }
}
