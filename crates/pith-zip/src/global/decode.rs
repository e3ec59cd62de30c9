//! Decoding one record of the global-dictionary codec, in two phases.
//!
//! Phase one reads the bits: literals go to a small buffer, each sequence
//! (its literals and its match) is queued, and the dictionary lines a match
//! will read are prefetched. Phase two writes the queued sequences in
//! order, literals and matches alike, 16 bytes per move: a move past the
//! end of a sequence writes bytes the next one overwrites, so a match of
//! up to 64 bytes costs four moves and no branch on its length, nor on
//! where it copies from (phase two is the module's only unsafe code: raw
//! pointers within the bounds phase one checked, tested under Miri).
//! Literal contexts never
//! depend on copied bytes, so phase one runs without waiting on the
//! dictionary, and the dictionary's cache misses (the cost of a
//! megabytes-large dictionary) overlap instead of queueing. The queue is
//! written out every [`BATCH`] sequences or when the literal buffer is
//! full, so memory stays constant; a literal run longer than the buffer is
//! decoded in place.
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

use std::sync::Arc;

use super::dict::Dictionary;
use super::symbols::{
    literal_len, match_len, source, Source, AFTER_MATCH, CONTEXTS, CONTEXT_OF, MAX_MATCH,
    START_CONTEXT,
};
use super::tables::{
    fused_kind, fused_value, next_ctx, Alphabet, Fused, FusedEntry, Literals, MatchSource,
    ESCAPE_CLASS, KIND_END, LITERAL_ESCAPE, PAIR_BITS,
};
use super::{prefetch, read_model, HotTable, MAX_EXPANSION};
use crate::bits::BitReader;
use crate::error::{Error, Result};
use crate::huffman::{self, MAX_BITS};

/// Pending copies per flush.
const BATCH: usize = 16;

/// An opened model: the inflated dictionary (shared with the matcher's
/// index of an encoder over it, see `dict.rs`) and the decode tables.
pub(crate) struct Decoder {
    dict: Arc<Dictionary>,
    literals: Literals,
    /// The sequence codes with their extra bits folded in ([`Fused`]) ...
    lit_len: Fused,
    match_len: Fused,
    source: Fused,
    /// Match length and source in one lookup, for most matches.
    match_source: MatchSource,
    /// ... and as plain codes, for the symbols [`Fused`] leaves out.
    lit_len_code: huffman::Decoder,
    match_len_code: huffman::Decoder,
    source_code: huffman::Decoder,
    /// The hot table's positions by rank, then one 0 (never empty, so the
    /// branch-free lookup of every source has a slot to read).
    hot: Box<[u32]>,
}

/// Bytes [`Decoder::decode_sized`] makes room for at once, at most: a
/// header that lies (a record's is only checked after decoding) costs a
/// reader this much memory, no more, before its decoding fails.
const EAGER_BYTES: usize = 64 << 10;

/// Bytes past the end of the dictionary, the literal buffer and the
/// output that 16-byte moves may read or write.
const SLACK: usize = MATCH_MOVES;
const _: () = assert!(
    SLACK <= super::dict::SLACK,
    "the dictionary's slack covers the moves"
);

/// Literal buffer of phase one (on the stack); a run that does not fit
/// flushes the pending sequences, and one longer than the buffer is decoded
/// in place.
const LITERAL_BUFFER: usize = 512;

fn bad(detail: impl Into<String>) -> Error {
    Error::Codec(detail.into())
}

/// A sequence phase two performs: `lit_len` literals from the literal
/// buffer at `lit_at` to `dst - lit_len`, then `len` bytes to `dst` from
/// the dictionary at `from`, or from `dst - from` in the output when
/// `local`.
#[derive(Clone, Copy, Default)]
struct Seq {
    dst: usize,
    from: usize,
    lit_at: u32,
    lit_len: u32,
    len: u32,
    local: bool,
}

/// The value of a [`Fused`] slot `e` (not 0), consuming its code and
/// extra bits. The reader must have been refilled since the last
/// sequence code (a slot takes at most 42 bits).
#[inline(always)]
fn read_fused(r: &mut BitReader<'_>, e: FusedEntry) -> u64 {
    let v = fused_value(e, r.peek(56));
    r.consume(e & 63);
    v
}

impl Decoder {
    /// Reads a model section.
    pub(crate) fn open(model: &[u8]) -> Result<Self> {
        let parts = read_model(model).map_err(bad)?;
        Decoder::from_parts(parts.dict, &parts.lengths, &parts.hot)
    }

    /// A decoder for `dict` with the codes of `lengths` (one table each)
    /// and the hot positions of `hot`.
    pub(crate) fn from_parts(dict: Vec<u8>, lengths: &[Vec<u8>], hot: &HotTable) -> Result<Self> {
        Decoder::over(Arc::new(Dictionary::new(dict)), lengths, hot)
    }

    /// A decoder for a dictionary already in memory (an encoder's, just
    /// trained), with the codes of `lengths` and the hot positions of
    /// `hot` (each below the dictionary's length: see `hot.rs`).
    pub(crate) fn over(dict: Arc<Dictionary>, lengths: &[Vec<u8>], hot: &HotTable) -> Result<Self> {
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
        let match_len_fused = Fused::new(&match_len, Alphabet::MatchLen);
        let source_fused = Fused::new(&source, Alphabet::Source);
        Ok(Decoder {
            dict,
            literals: Literals::new(&tables),
            lit_len: Fused::new(&lit_len, Alphabet::LiteralLen),
            match_source: MatchSource::new(&match_len_fused, &source_fused),
            match_len: match_len_fused,
            source: source_fused,
            lit_len_code: lit_len,
            match_len_code: match_len,
            source_code: source,
            hot: hot.positions().iter().copied().chain([0]).collect(),
        })
    }

    /// Hot positions (the table's entries, without the padding one).
    #[inline]
    fn hot_len(&self) -> usize {
        self.hot.len() - 1
    }

    /// The hot table's positions, by rank (for encoders over this model).
    pub(crate) fn hot_positions(&self) -> &[u32] {
        &self.hot[..self.hot_len()]
    }

    /// Dictionary size in bytes (in memory, inflated).
    pub(crate) fn dict_len(&self) -> usize {
        self.dict.bytes().len()
    }

    /// The inflated dictionary, to share with a matcher's index.
    pub(crate) fn shared_dict(&self) -> &Arc<Dictionary> {
        &self.dict
    }

    /// Memory held: the dictionary and the decode tables.
    pub(crate) fn heap_bytes(&self) -> usize {
        let codes = [&self.lit_len_code, &self.match_len_code, &self.source_code];
        self.dict_len()
            + self.literals.heap_bytes()
            + self.lit_len.heap_bytes()
            + self.match_len.heap_bytes()
            + self.source.heap_bytes()
            + self.match_source.heap_bytes()
            + self.hot.len() * 4
            + codes.iter().map(|c| c.table().len() * 2).sum::<usize>()
    }

    /// Replaces `out` with the record encoded in `payload`, which may not
    /// decode to more than `max` bytes; `out` is empty after an error.
    pub(crate) fn decode(&self, payload: &[u8], max: u64, out: &mut Vec<u8>) -> Result<()> {
        self.decode_or_clear(payload, max, 0, out)
    }

    /// [`Decoder::decode`] of a record said to be `len` bytes long (by a
    /// header the caller checks the result against): `out` is sized for
    /// it at once, where `decode` sizes it from the payload and grows it
    /// as decoding goes (for rustdoc's records, ten times their payload,
    /// a reallocation and a second zeroing per read).
    pub(crate) fn decode_sized(&self, payload: &[u8], len: u64, out: &mut Vec<u8>) -> Result<()> {
        self.decode_or_clear(payload, len, EAGER_BYTES, out)
    }

    /// [`Decoder::decode_into`], leaving `out` empty after an error.
    fn decode_or_clear(
        &self,
        payload: &[u8],
        max: u64,
        eager: usize,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let decoded = self.decode_into(payload, max, eager, out);
        if decoded.is_err() {
            out.clear();
        }
        decoded
    }

    /// Decodes into `out`, sized at first for at least `eager` bytes (if
    /// the bound allows) or what the payload's length suggests.
    fn decode_into(&self, payload: &[u8], max: u64, eager: usize, out: &mut Vec<u8>) -> Result<()> {
        let dict = self.dict.bytes();
        let limit = max.min((payload.len() as u64 + 1).saturating_mul(MAX_EXPANSION)) as usize;
        // The record is decoded into `out` as it is, grown when needed and
        // cut to the record's length at the end: a buffer reused from
        // record to record is zeroed only where it grows, and there is no
        // resize per literal run or match. It is kept SLACK bytes longer
        // than what is decoded, for the 16-byte moves of phase two.
        let first = limit
            .min(
                payload
                    .len()
                    .saturating_mul(8)
                    .saturating_add(64)
                    .max(eager),
            )
            .saturating_add(SLACK);
        if out.len() < first {
            grow(out, first)?;
        }
        let mut r = BitReader::new(payload);
        let mut pos = 0usize;
        let mut cursor = 0usize;
        let mut last_dist = 0usize;
        let mut ctx = usize::from(START_CONTEXT);
        let mut pending = [Seq::default(); BATCH];
        let mut npending = 0;
        let mut lit_buf = [0u8; LITERAL_BUFFER + SLACK];
        let mut lit_used = 0usize;
        loop {
            r.refill();
            let e = self.lit_len.get(r.peek(MAX_BITS));
            let lits = if e != 0 {
                read_fused(&mut r, e)
            } else {
                let sym = self
                    .lit_len_code
                    .get(&mut r)
                    .ok_or_else(|| bad("invalid literal-length code"))?;
                let eb = literal_len::extra_bits(sym)
                    .ok_or_else(|| bad("literal-length code out of range"))?;
                let lits = literal_len::value(sym, r.read_wide(eb));
                r.refill();
                lits
            };
            let lits = usize::try_from(lits)
                .ok()
                .filter(|&n| n <= limit - pos)
                .ok_or_else(|| bad(format!("{lits} literals overflow the record bound {limit}")))?;
            if lit_used + lits > LITERAL_BUFFER || npending == BATCH {
                // SAFETY: the sequences were checked as they were queued.
                unsafe { fill(out, self.dict.padded(), &lit_buf, &pending[..npending]) };
                npending = 0;
                lit_used = 0;
            }
            let mut seq = Seq {
                dst: pos + lits,
                lit_at: lit_used as u32,
                lit_len: lits as u32,
                ..Seq::default()
            };
            if pos + lits + SLACK > out.len() {
                grow(
                    out,
                    (pos + lits + SLACK).max(out.len().saturating_mul(2).min(limit + SLACK)),
                )?;
            }
            if lits <= LITERAL_BUFFER {
                self.literals(&mut r, ctx, &mut lit_buf[lit_used..], lits)?;
                lit_used += lits;
            } else {
                // Longer than the buffer (which is empty now): in place,
                // after everything before it was written.
                self.literals(&mut r, ctx, &mut out[pos..], lits)?;
                seq.lit_len = 0;
            }
            pos += lits;
            r.refill();
            let joined = self.match_source.get(r.peek(MAX_BITS));
            let (len, e) = if joined != 0 {
                (joined >> 32, joined as u32)
            } else {
                let e = self.match_len.get(r.peek(MAX_BITS));
                let len = if e != 0 {
                    if fused_kind(e) == KIND_END {
                        r.consume(e & 63);
                        pending[npending] = seq;
                        npending += 1;
                        break;
                    }
                    read_fused(&mut r, e)
                } else {
                    let sym = self
                        .match_len_code
                        .get(&mut r)
                        .ok_or_else(|| bad("invalid match-length code"))?;
                    if sym == match_len::END {
                        pending[npending] = seq;
                        npending += 1;
                        break;
                    }
                    let eb = match_len::extra_bits(sym)
                        .ok_or_else(|| bad("match-length code out of range"))?;
                    match_len::value(sym, r.read_wide(eb))
                };
                r.refill();
                (len, self.source.get(r.peek(MAX_BITS)))
            };
            if len > MAX_MATCH || len as usize > limit - pos {
                return Err(bad(format!(
                    "a {len}-byte match overflows the record bound {limit}"
                )));
            }
            let len = len as usize;
            // `local` and `at`: the dictionary position, or the distance
            // back into the record; computed without a branch per kind of
            // source (which one comes next is as good as random).
            let (local, at, hot_ok) = if e != 0 {
                let v = read_fused(&mut r, e);
                let kind = fused_kind(e);
                let near = (cursor + lits).wrapping_add(source::near_delta(v) as usize);
                // Read for every source, so no branch waits on the kind:
                // other kinds (and a rank past the table) read the padding
                // slot, which stays in cache.
                let is_hot = kind == source::Kind::Hot as u32;
                let slot = select(is_hot, (v as usize).min(self.hot_len()), self.hot_len());
                let ranked = self.hot[slot] as usize;
                let other = select(
                    kind == source::Kind::LocalRepeat as u32,
                    last_dist,
                    v as usize,
                );
                let other = select(is_hot, ranked, other);
                let at = select(kind == source::Kind::Near as u32, near, other);
                let local = (kind == source::Kind::LocalRepeat as u32)
                    | (kind == source::Kind::Local as u32);
                (local, at, !is_hot | ((v as usize) < self.hot_len()))
            } else {
                let sym = self
                    .source_code
                    .get(&mut r)
                    .ok_or_else(|| bad("invalid source code"))?;
                let eb = source::extra_bits(sym).ok_or_else(|| bad("source code out of range"))?;
                let wide = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
                match source::value(sym, r.read_wide(eb)) {
                    Source::Near(delta) => (
                        false,
                        (cursor + lits)
                            .checked_add_signed(delta as isize)
                            .unwrap_or(usize::MAX),
                        true,
                    ),
                    Source::At(at) => (false, wide(at), true),
                    Source::LocalRepeat => (true, last_dist, true),
                    Source::Local(d) => (true, wide(d), true),
                    Source::Hot(rank) => match self.hot_positions().get(wide(rank)) {
                        Some(&at) => (false, at as usize, true),
                        None => (false, 0, false),
                    },
                }
            };
            if !hot_ok {
                return Err(bad(format!(
                    "hot rank beyond the model's {} hot positions",
                    self.hot_len()
                )));
            }
            // A Near delta below position 0 wraps to a huge position and
            // fails like any other position outside the dictionary.
            let local_ok = (at != 0) & (at <= pos);
            let dict_ok = (at <= dict.len()) & (len <= dict.len().wrapping_sub(at));
            let valid = (local & local_ok) | (!local & dict_ok);
            if !valid {
                return Err(bad(if local {
                    format!("match distance {at} before the record start")
                } else {
                    format!(
                        "dictionary match at {at}+{len} outside the {}-byte dictionary",
                        dict.len()
                    )
                }));
            }
            prefetch(dict, at);
            prefetch(dict, at + len - 1);
            cursor = select(local, cursor, at + len);
            last_dist = select(local, at, last_dist);
            seq.len = len as u32;
            seq.from = at;
            seq.local = local;
            pending[npending] = seq;
            npending += 1;
            pos += len;
            if pos + SLACK > out.len() {
                grow(
                    out,
                    (pos + SLACK).max(out.len().saturating_mul(2).min(limit + SLACK)),
                )?;
            }
            ctx = usize::from(AFTER_MATCH);
        }
        // SAFETY: the sequences were checked as they were queued.
        unsafe { fill(out, self.dict.padded(), &lit_buf, &pending[..npending]) };
        if !r.finish() {
            return Err(bad("record bits end early or leave bytes over"));
        }
        out.truncate(pos);
        Ok(())
    }

    /// Decodes a run of `n` literals, starting in context `ctx`, into
    /// `buf[..n]`; `buf[n]` must exist too (it may be overwritten). Two
    /// literals per lookup where their codes fit in [`PAIR_BITS`]
    /// together; the last of an odd run from a pair's first half.
    #[inline(always)]
    fn literals(
        &self,
        r: &mut BitReader<'_>,
        mut ctx: usize,
        buf: &mut [u8],
        n: usize,
    ) -> Result<()> {
        let mut i = 0;
        while i < n {
            if r.available() < PAIR_BITS {
                r.refill();
            }
            let e = self.literals.pair(ctx, r.peek(PAIR_BITS));
            if e == 0 {
                let (b, next) = self.literal(r, ctx)?;
                buf[i] = b;
                i += 1;
                ctx = next;
                continue;
            }
            let take = if n - i >= 2 { (e >> 4 & 3) as usize } else { 1 };
            r.consume(if take == 2 { e & 15 } else { e >> 28 });
            // With one literal taken, the second byte is garbage that the
            // next literal overwrites, or past the run.
            buf[i] = (e >> 8) as u8;
            buf[i + 1] = (e >> 16) as u8;
            i += take;
            // Wrong when a pair was cut to one literal, but then the run
            // is over.
            ctx = (e >> 24 & 15) as usize;
        }
        Ok(())
    }

    /// Decodes one literal in context `ctx`, escapes included; returns it
    /// and the next context.
    #[inline(always)]
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

/// `a` if `c`, else `b`, by masks: the sources' kinds follow each other
/// as good as at random, and a branch on them mispredicts often.
#[inline(always)]
fn select(c: bool, a: usize, b: usize) -> usize {
    let mask = usize::from(c).wrapping_neg();
    (a & mask) | (b & !mask)
}

/// Grows `out` to `len` bytes (zeroed).
fn grow(out: &mut Vec<u8>, len: usize) -> Result<()> {
    out.try_reserve(len.saturating_sub(out.len()))
        .map_err(|_| bad("cannot allocate the record"))?;
    out.resize(len, 0);
    Ok(())
}

/// Phase two: performs `seqs` in order, each its literals from `lits`
/// and its match, moving 16 bytes at a time: a move past the end of a
/// sequence writes bytes the next sequence (or the slack) overwrites, and
/// reads bytes of the slack after the dictionary (`padded`) or the
/// literal buffer. A match's first [`MATCH_MOVES`] bytes are moved
/// without looking at its length, and its source (the dictionary or the
/// record itself) is picked without a branch: which comes next is as good
/// as random, and the mispredicted branches on both were most of this
/// phase's time (measured: decoding 10-14% faster on rustdoc records, 3-11%
/// on Debian's, than with a branch per kind and per 16 bytes past the
/// first 32). Raw pointers, because a safe copy cannot take its source
/// from either of two slices, one of them its destination, without that
/// branch.
///
/// # Safety
/// Phase one checked what every `s` in `seqs` holds, with `SLACK` =
/// [`MATCH_MOVES`]:
/// - `s.lit_at + s.lit_len <= LITERAL_BUFFER <= lits.len() - SLACK`;
/// - `s.dst + s.len + SLACK <= out.len()`;
/// - unless `s.local`: `s.from + s.len <= padded.len() - SLACK`;
/// - if `s.local`: `0 < s.from <= s.dst`.
unsafe fn fill(out: &mut [u8], padded: &[u8], lits: &[u8], seqs: &[Seq]) {
    debug_assert!(padded.len() >= SLACK && lits.len() >= LITERAL_BUFFER + SLACK);
    let out_len = out.len();
    let base = out.as_mut_ptr();
    let dict = padded.as_ptr();
    let lit = lits.as_ptr();
    for s in seqs {
        let (lit_len, len) = (s.lit_len as usize, s.len as usize);
        debug_assert!(
            s.dst + len + SLACK <= out_len && s.lit_at as usize + lit_len <= LITERAL_BUFFER
        );
        debug_assert!(if s.local {
            0 < s.from && s.from <= s.dst
        } else {
            s.from + len + SLACK <= padded.len()
        });
        // SAFETY (each move below): by the bounds above, a literal run's
        // moves write `out[s.dst - lit_len..s.dst + 32]` and read
        // `lits[s.lit_at..s.lit_at + lit_len + 32]`, a match's write
        // `out[s.dst..s.dst + s.len + SLACK]` and read
        // `padded[s.from..s.from + s.len + SLACK]` or, from `s.from >= 16`
        // bytes back, `out[s.dst - s.from..s.dst + s.len + SLACK]` (each
        // move's source ends where its destination starts or before); the
        // byte loop reads and writes below `s.dst + s.len`.
        unsafe {
            moves(
                base.add(s.dst - lit_len),
                lit.add(s.lit_at as usize),
                lit_len,
                32,
            );
            if s.local & (s.from < 16) {
                // Closer than a move: the pattern repeats byte by byte.
                for i in s.dst..s.dst + len {
                    *base.add(i) = *base.add(i - s.from);
                }
                continue;
            }
            // Both candidates are computed, one of them out of bounds:
            // by wrapping arithmetic, which is defined for any offset.
            let src = if s.local {
                base.wrapping_add(s.dst.wrapping_sub(s.from)).cast_const()
            } else {
                dict.wrapping_add(s.from)
            };
            moves(base.add(s.dst), src, len, MATCH_MOVES);
        }
    }
}

/// Bytes of a match moved before its length is looked at: the slack
/// after the output, the dictionary and the literal buffer.
const MATCH_MOVES: usize = 64;

/// Moves `len` bytes from `src` to `dst` in 16-byte moves, at least
/// `first` bytes (a multiple of 16) and up to 15 bytes past `len`.
///
/// # Safety
/// `dst..dst + max(first, len + 15)` must be writable and
/// `src..src + max(first, len + 15)` readable, and no 16-byte move's
/// source may overlap its destination (a source at least 16 bytes before
/// the destination reads what earlier moves wrote, as an LZ77 copy must).
#[inline(always)]
unsafe fn moves(dst: *mut u8, src: *const u8, len: usize, first: usize) {
    // The first `first` bytes in a loop of constant length (unrolled, no
    // branch on `len`), the rest as `len` asks.
    let mut done = 0;
    while done < first {
        // SAFETY: in bounds and apart, as the caller promised.
        unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), 16) };
        done += 16;
    }
    while done < len {
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), 16) };
        done += 16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `seqs` make, byte by byte: the meaning `fill` must keep.
    fn plain(out: &mut [u8], dict: &[u8], lits: &[u8], seqs: &[Seq]) {
        for s in seqs {
            let (at, n) = (s.lit_at as usize, s.lit_len as usize);
            out[s.dst - n..s.dst].copy_from_slice(&lits[at..at + n]);
            for i in 0..s.len as usize {
                out[s.dst + i] = if s.local {
                    out[s.dst + i - s.from]
                } else {
                    dict[s.from + i]
                };
            }
        }
    }

    /// Every kind of sequence `fill` moves, on buffers no longer than its
    /// bounds allow (so Miri, which runs this test in CI, catches a move
    /// out of them): literal runs of 0 to 40 bytes, dictionary matches up
    /// to its last byte, matches in the record closer than a move (a run
    /// of one byte), overlapping ones 16 to 63 bytes back, and far ones.
    #[test]
    fn fill_moves_what_the_sequences_say_within_its_bounds() {
        let dict: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        let lits: Vec<u8> = (0..LITERAL_BUFFER as u32)
            .map(|i| (i * 13 + 1) as u8)
            .collect();
        // (literals, match length, source, local)
        let plan: [(u32, u32, usize, bool); 12] = [
            (5, 4, 0, false),
            (0, 100, 200, false),
            (40, 1, 1, true),
            (0, 50, 1, true),
            (3, 70, 16, true),
            (0, 9, 63, true),
            (33, 130, 17, true),
            (1, 4, 296, false),
            (0, 64, 236, false),
            (2, 200, 150, true),
            (0, 5, 5, true),
            (7, 0, 0, false),
        ];
        let (mut seqs, mut pos, mut lit_at) = (Vec::new(), 0usize, 0u32);
        for (n, len, from, local) in plan {
            let dst = pos + n as usize;
            seqs.push(Seq {
                dst,
                from,
                lit_at,
                lit_len: n,
                len,
                local,
            });
            lit_at += n;
            pos = dst + len as usize;
        }
        let mut padded = dict.clone();
        padded.resize(dict.len() + SLACK, 0);
        let mut lit_buf = lits.clone();
        lit_buf.resize(LITERAL_BUFFER + SLACK, 0);
        let mut want = vec![0u8; pos];
        plain(&mut want, &dict, &lits, &seqs);
        for split in [1, 5, seqs.len()] {
            let mut out = vec![0xAA; pos + SLACK];
            for batch in seqs.chunks(split) {
                // SAFETY: the plan keeps `fill`'s bounds: literals within
                // the buffer, matches within the dictionary or behind
                // them, and `pos + SLACK` bytes of output.
                unsafe { fill(&mut out, &padded, &lit_buf, batch) };
            }
            assert_eq!(&out[..pos], &want[..], "in batches of {split}");
        }
    }
}
