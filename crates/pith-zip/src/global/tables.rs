//! Decode tables of the global codec, built once per model from its code
//! lengths, so that decoding a symbol is one lookup and no per-symbol
//! branching on what the symbol means.
//!
//! * [`Literals`]: per literal context, a table of single literals (byte,
//!   code length, the context it leads to) and one of literal *pairs*:
//!   [`PAIR_BITS`] stream bits give up to two literals, their bytes, the
//!   bits both take and the context after them. A literal costs about
//!   4.4 bits on Debian records, so most lookups yield two.
//! * [`Fused`]: for literal lengths, match lengths and sources, each slot
//!   holds the code length, the number of extra bits and the value the
//!   extra bits are added to (and for sources, the kind), so a length is
//!   `base + extra` with no call to the symbol mappings of `symbols.rs`.
//!
//! Anything rare (escapes, codes longer than a pair table's bits, extra
//! bits too wide for a slot, bit patterns no code has) has a slot of 0,
//! and the decoder takes the general path for it: the same checks, the
//! same errors, just slower.
//!
//! The context automaton: the context of the next literal of a run follows
//! from the current context and the class of the literal alone (see
//! [`next_ctx`]), which is what lets a pair table know the second
//! literal's context.

use super::symbols::{
    is_hex_class, literal_len, match_len, next_context, source, CONTEXT_OF, HEX_RUN,
};
use crate::huffman::{self, MAX_BITS};

/// Stream bits a pair-table lookup uses. On debian-packages 9 and 10 bits
/// decoded about as fast and 12 bits 3% slower (a table twice the size).
/// Narrowing the sequence-code tables to 9 or 10 bits too, so the hot
/// tables fit the L1 cache, was 1-2% slower: more codes took the general
/// path.
pub(crate) const PAIR_BITS: u32 = 11;

/// The escape symbol of literal tables (after the 256 byte values).
pub(crate) const LITERAL_ESCAPE: usize = 256;

/// Class of a single-literal entry whose symbol is the escape.
pub(crate) const ESCAPE_CLASS: u16 = 15;

/// Context of the literal after one of class `class` (a [`CONTEXT_OF`]
/// value) that was decoded in context `ctx`.
///
/// The encoder's context (`literal_context` in `mod.rs`) also counts hex
/// digits in a row, but within a run the context tells that count as far
/// as it matters: the hex classes (0, 1) as contexts mean exactly one hex
/// digit before, [`HEX_RUN`] two or more, any other context none (a run
/// starts in `START_CONTEXT` or `AFTER_MATCH`, neither a hex class).
pub(crate) fn next_ctx(ctx: usize, class: u8) -> u8 {
    let before = if ctx == usize::from(HEX_RUN) {
        2
    } else if ctx < 2 && is_hex_class(ctx as u8) {
        1
    } else {
        0
    };
    let hexes = if is_hex_class(class) { before + 1 } else { 0 };
    next_context(class, hexes)
}

/// Literal decode tables of all contexts.
pub(crate) struct Literals {
    /// Context `c` at `c << MAX_BITS`, indexed by the next [`MAX_BITS`]
    /// bits: `length | byte << 4 | next context << 12`, length 0 where no
    /// code is, next context [`ESCAPE_CLASS`] for the escape.
    single: Box<[u16]>,
    /// Context `c` at `c << PAIR_BITS`, indexed by the next [`PAIR_BITS`]
    /// bits: `bits | count << 4 | byte1 << 8 | byte2 << 16 | next context
    /// << 24 | bits of the first << 28`, 0 where [`Self::single`] must
    /// decode.
    pairs: Box<[u32]>,
}

impl Literals {
    /// Tables for the literal codes, one per context, each an
    /// [`huffman::Decoder`] over 256 bytes and the escape.
    pub(crate) fn new(codes: &[huffman::Decoder]) -> Self {
        let mut single = Vec::with_capacity(codes.len() << MAX_BITS);
        for (ctx, code) in codes.iter().enumerate() {
            single.extend(code.table().iter().map(|&e| {
                let (len, symbol) = (e & 15, usize::from(e >> 4));
                let next = if symbol == LITERAL_ESCAPE {
                    ESCAPE_CLASS
                } else {
                    u16::from(next_ctx(ctx, CONTEXT_OF[symbol & 255]))
                };
                len | ((symbol & 255) as u16) << 4 | next << 12
            }));
        }
        let single: Box<[u16]> = single.into();
        let one = |ctx: usize, bits: usize| -> Option<(u32, u32, usize)> {
            let e = *single.get(ctx << MAX_BITS | (bits & ((1 << MAX_BITS) - 1)))?;
            let (len, byte, next) = (u32::from(e & 15), u32::from(e >> 4 & 255), e >> 12);
            (len > 0 && next != ESCAPE_CLASS).then_some((len, byte, usize::from(next)))
        };
        let mut pairs = Vec::with_capacity(codes.len() << PAIR_BITS);
        for ctx in 0..codes.len() {
            for bits in 0..1usize << PAIR_BITS {
                let entry = match one(ctx, bits) {
                    Some((l1, b1, c1)) if l1 <= PAIR_BITS => {
                        match one(c1, bits >> l1).filter(|&(l2, ..)| l1 + l2 <= PAIR_BITS) {
                            Some((l2, b2, c2)) => {
                                (l1 + l2)
                                    | 2 << 4
                                    | b1 << 8
                                    | b2 << 16
                                    | (c2 as u32) << 24
                                    | l1 << 28
                            }
                            None => l1 | 1 << 4 | b1 << 8 | (c1 as u32) << 24 | l1 << 28,
                        }
                    }
                    _ => 0,
                };
                pairs.push(entry);
            }
        }
        Literals {
            single,
            pairs: pairs.into(),
        }
    }

    /// The single-literal entry for context `ctx` and the next stream bits.
    #[inline]
    pub(crate) fn single(&self, ctx: usize, bits: u64) -> u16 {
        let i = ctx << MAX_BITS | (bits as usize & ((1 << MAX_BITS) - 1));
        self.single.get(i).copied().unwrap_or(0)
    }

    /// The pair entry for context `ctx` and the next stream bits.
    #[inline]
    pub(crate) fn pair(&self, ctx: usize, bits: u64) -> u32 {
        let i = ctx << PAIR_BITS | (bits as usize & ((1 << PAIR_BITS) - 1));
        self.pairs.get(i).copied().unwrap_or(0)
    }

    /// Memory of the tables.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.single.len() * 2 + self.pairs.len() * 4
    }
}

/// Widest extra bits a [`Fused`] slot takes: with an 11-bit code, 42 bits,
/// within the 56 a refilled reader holds.
const FUSED_EXTRA: u32 = 31;

/// Largest `small` part of a [`Fused`] slot.
const FUSED_SMALL: u64 = (1 << 18) - 1;

/// A [`Fused`] slot: `code length + extra bits | code length << 6 | kind
/// << 10 | pow << 13 | small << 14`, the value being `small + (pow <<
/// extra bits) + extra`; 0 where the general path must decode. The bits
/// to consume come first, so the reader's shift waits on nothing but the
/// load. Four bytes, so the three tables take 24 KiB of cache rather than
/// 48.
pub(crate) type FusedEntry = u32;

/// Which of the three sequence codes a [`Fused`] table is for.
#[derive(Clone, Copy)]
pub(crate) enum Alphabet {
    LiteralLen,
    MatchLen,
    Source,
}

/// A sequence code's table with each symbol's extra bits and base folded
/// in.
pub(crate) struct Fused {
    table: Box<[FusedEntry]>,
}

/// The kind value of [`Alphabet::MatchLen`]'s END symbol.
pub(crate) const KIND_END: u32 = 1;

/// The slot of `symbol` with a `len`-bit code.
fn fused_entry(alphabet: Alphabet, symbol: usize, len: u32) -> FusedEntry {
    let parts = match alphabet {
        Alphabet::LiteralLen => {
            literal_len::extra_bits(symbol).map(|eb| (eb, literal_len::value(symbol, 0), 0))
        }
        Alphabet::MatchLen if symbol == match_len::END => Some((0, 0, KIND_END)),
        Alphabet::MatchLen => {
            match_len::extra_bits(symbol).map(|eb| (eb, match_len::value(symbol, 0), 0))
        }
        Alphabet::Source => source::extra_bits(symbol).map(|eb| {
            let (kind, base) = source::parts(symbol);
            (eb, base, kind as u32)
        }),
    };
    let Some((eb, base, kind)) = parts.filter(|&(eb, ..)| eb <= FUSED_EXTRA) else {
        return 0;
    };
    // A value with extra bits is `1 << eb` (plus a small offset) plus
    // them, or small.
    let (pow, small) = match base.checked_sub(1 << eb) {
        Some(rest) if eb > 0 && rest <= FUSED_SMALL => (1, rest),
        _ if base <= FUSED_SMALL => (0, base),
        _ => return 0,
    };
    (len + eb) | len << 6 | kind << 10 | pow << 13 | (small as u32) << 14
}

/// The kind field of a [`Fused`] slot.
#[inline(always)]
pub(crate) fn fused_kind(e: FusedEntry) -> u32 {
    e >> 10 & 7
}

/// The value of a [`Fused`] slot `e` (not 0) whose code starts at the
/// lowest of `bits` (at least as many as `e & 63`).
#[inline(always)]
pub(crate) fn fused_value(e: FusedEntry, bits: u64) -> u64 {
    let (total, len) = (e & 63, e >> 6 & 15);
    let extra = total - len;
    let raw = (bits >> len) & ((1u64 << extra) - 1);
    u64::from(e >> 14) + (u64::from(e >> 13 & 1) << extra) + raw
}

impl Fused {
    pub(crate) fn new(code: &huffman::Decoder, alphabet: Alphabet) -> Self {
        let table = code
            .table()
            .iter()
            .map(|&e| {
                let (len, symbol) = (u32::from(e & 15), usize::from(e >> 4));
                if len == 0 || symbol == code.escape() {
                    0
                } else {
                    fused_entry(alphabet, symbol, len)
                }
            })
            .collect();
        Fused { table }
    }

    /// The slot for the next stream bits.
    #[inline]
    pub(crate) fn get(&self, bits: u64) -> FusedEntry {
        let i = bits as usize & ((1 << MAX_BITS) - 1);
        self.table.get(i).copied().unwrap_or(0)
    }

    /// Memory of the table.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.table.len() * 4
    }
}

/// A match length and its source in one lookup, where the length has no
/// extra bits and both codes fit in [`MAX_BITS`] bits together (most
/// matches): a slot is the source's [`Fused`] slot with both codes' bits
/// counted in, plus the length `<< 32`; 0 where the two are read apart.
pub(crate) struct MatchSource {
    table: Box<[u64]>,
}

impl MatchSource {
    pub(crate) fn new(lengths: &Fused, sources: &Fused) -> Self {
        let table = lengths
            .table
            .iter()
            .enumerate()
            .map(|(bits, &m)| {
                let len = m >> 6 & 15;
                if m == 0 || fused_kind(m) == KIND_END || m & 63 != len {
                    return 0;
                }
                // Bits past the length's code; the top `len` are unknown,
                // so a source code longer than the rest does not count.
                let s = sources.table.get(bits >> len).copied().unwrap_or(0);
                let source_len = s >> 6 & 15;
                if s == 0 || len + source_len > MAX_BITS {
                    return 0;
                }
                let joined = ((s & 63) + len) | (source_len + len) << 6 | (s & !0x3FF);
                u64::from(joined) | fused_value(m, 0) << 32
            })
            .collect();
        MatchSource { table }
    }

    /// The slot for the next stream bits.
    #[inline]
    pub(crate) fn get(&self, bits: u64) -> u64 {
        let i = bits as usize & ((1 << MAX_BITS) - 1);
        self.table.get(i).copied().unwrap_or(0)
    }

    /// Memory of the table.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.table.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::super::literal_context;
    use super::super::symbols::{AFTER_MATCH, START_CONTEXT};
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The decoder's context automaton gives the encoder's contexts.
        #[test]
        fn context_automaton_matches_the_encoder(
            rec in proptest::collection::vec(
                prop_oneof![Just(b'0'), Just(b'a'), Just(b'g'), Just(b'\n'), Just(b' '), any::<u8>()],
                1..60,
            ),
            run_start in 0usize..60,
        ) {
            let run_start = run_start.min(rec.len() - 1);
            let mut ctx = usize::from(if run_start == 0 { START_CONTEXT } else { AFTER_MATCH });
            for p in run_start..rec.len() {
                prop_assert_eq!(ctx, literal_context(&rec, p, run_start));
                ctx = usize::from(next_ctx(ctx, CONTEXT_OF[usize::from(rec[p])]));
            }
        }
    }
}
