//! The first decoder of the global codec (one table lookup per symbol,
//! everything resized as it goes), kept for tests: the fast decoder in
//! `decode.rs` must accept exactly the records this one accepts and decode
//! them to the same bytes, and reject the same corrupt ones.

use super::symbols::{
    is_hex_class, literal_len, match_len, next_context, source, Source, AFTER_MATCH, CONTEXTS,
    CONTEXT_OF, MAX_MATCH, START_CONTEXT,
};
use super::{prefetch, MAX_EXPANSION};
use crate::bits::BitReader;
use crate::error::{Error, Result};
use crate::huffman::{self, MAX_BITS};

/// The escape symbol of literal tables (after the 256 byte values).
const LITERAL_ESCAPE: usize = 256;

/// Pending copies per flush.
const BATCH: usize = 64;

/// The reference decoder.
pub(crate) struct Reference {
    dict: Vec<u8>,
    hot: Vec<u32>,
    literals: Vec<huffman::Decoder>,
    literal_table: Box<[u16]>,
    lit_len: huffman::Decoder,
    match_len: huffman::Decoder,
    source: huffman::Decoder,
}

/// Class of a literal entry whose symbol is the escape.
const ESCAPE_CLASS: u16 = 15;

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

#[derive(Clone, Copy, Default)]
struct Copy {
    dst: usize,
    len: usize,
    from: usize,
    local: bool,
}

impl Reference {
    pub(crate) fn new(dict: Vec<u8>, lengths: &[Vec<u8>], hot: &[u32]) -> Self {
        let mut tables: Vec<huffman::Decoder> = lengths
            .iter()
            .map(|l| huffman::Decoder::new(l).unwrap())
            .collect();
        let source = tables.pop().unwrap();
        let match_len = tables.pop().unwrap();
        let lit_len = tables.pop().unwrap();
        assert_eq!(tables.len(), CONTEXTS);
        let literal_table = tables
            .iter()
            .flat_map(|t| t.table())
            .map(|&e| literal_entry(e))
            .collect();
        Reference {
            dict,
            hot: hot.to_vec(),
            literals: tables,
            literal_table,
            lit_len,
            match_len,
            source,
        }
    }

    /// Replaces `out` with the record encoded in `payload`, which may not
    /// decode to more than `max` bytes.
    pub(crate) fn decode(&self, payload: &[u8], max: u64, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let dict = &self.dict[..];
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
                src @ (Source::Near(_) | Source::At(_) | Source::Hot(_)) => {
                    let from = match src {
                        Source::Near(delta) => {
                            (cursor as i128 + lits as i128 + i128::from(delta)) as u128
                        }
                        Source::At(at) => u128::from(at),
                        Source::Hot(rank) => usize::try_from(rank)
                            .ok()
                            .and_then(|r| self.hot.get(r))
                            .map(|&p| u128::from(p))
                            .ok_or_else(|| bad(format!("hot rank {rank} beyond the table")))?,
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

#[cfg(test)]
mod tests {
    use std::sync::{Mutex, OnceLock};

    use proptest::prelude::*;

    use super::super::{read_model, Decoder, Effort, Encoder, DEFAULT_DEPTH, STORE_DICT_LEVEL};
    use super::*;

    /// Debian-like text: letters, digits, runs of hex, separators.
    fn record(i: u64) -> Vec<u8> {
        let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        format!(
            "Package: lib{}-{}\nVersion: {}.{}-{}\nMD5sum: {:016x}{:016x}\nDepends: libc6 (>= 2.{})\nDescription: tool {} of many\n",
            ["foo", "bar", "baz", "qux"][(i % 4) as usize],
            i % 13,
            i % 7,
            i % 11,
            i % 3,
            h,
            h.rotate_left(17),
            i % 40,
            i
        )
        .into_bytes()
    }

    /// The encoder and both decoders of one model.
    fn codec() -> &'static (Mutex<Encoder>, Decoder, Reference) {
        static CODEC: OnceLock<(Mutex<Encoder>, Decoder, Reference)> = OnceLock::new();
        CODEC.get_or_init(|| {
            let dict: Vec<u8> = (0..60).step_by(2).flat_map(record).collect();
            let training: Vec<Vec<u8>> = (1..60).step_by(2).map(record).collect();
            let training: Vec<&[u8]> = training.iter().map(Vec::as_slice).collect();
            let enc = Encoder::train(&dict, &training, &[], DEFAULT_DEPTH, 1, Effort::Thorough);
            let model = enc.model_bytes(STORE_DICT_LEVEL).unwrap();
            let parts = read_model(&model).unwrap();
            // The proptests below decode ranks too.
            assert!(!parts.hot.is_empty(), "training found hot positions");
            let dec = Decoder::open(&model).unwrap();
            let reference = Reference::new(parts.dict, &parts.lengths, parts.hot.positions());
            (Mutex::new(enc), dec, reference)
        })
    }

    /// A record: Debian-like, random bytes, or a mix with repeats.
    fn any_record() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            (0u64..500).prop_map(record),
            proptest::collection::vec(any::<u8>(), 0..1500),
            (
                (0u64..500),
                proptest::collection::vec(any::<u8>(), 0..40),
                1usize..5
            )
                .prop_map(|(i, noise, times)| {
                    let mut r = record(i);
                    for _ in 0..times {
                        r.extend_from_slice(&noise);
                        r.extend_from_slice(&record(i + 1)[..20]);
                    }
                    r
                }),
        ]
    }

    /// What a decoder makes of `payload`, starting from a dirty buffer.
    fn run(
        decode: impl Fn(&[u8], u64, &mut Vec<u8>) -> Result<()>,
        payload: &[u8],
        max: u64,
        dirt: &[u8],
    ) -> Option<Vec<u8>> {
        let mut out = dirt.to_vec();
        decode(payload, max, &mut out).ok().map(|()| out)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The fast decoder accepts what the reference accepts, decodes
        /// it to the same bytes, and rejects what it rejects: intact
        /// records, records with a bit flipped, cut short or extended,
        /// and a bound on the length below the record's.
        #[test]
        fn fast_decoder_agrees_with_the_reference(
            rec in any_record(),
            edit in 0usize..5,
            at in any::<prop::sample::Index>(),
            bit in 0u8..8,
            tail in proptest::collection::vec(any::<u8>(), 1..4),
            dirt in proptest::collection::vec(any::<u8>(), 0..2000),
        ) {
            let (enc, dec, reference) = codec();
            let mut payload = Vec::new();
            enc.lock().unwrap().encode(&rec, &mut payload);
            let mut max = rec.len() as u64;
            match edit {
                1 if !payload.is_empty() => {
                    let i = at.index(payload.len());
                    payload[i] ^= 1 << bit;
                }
                2 => payload.truncate(at.index(payload.len() + 1)),
                3 => payload.extend_from_slice(&tail),
                4 => max = at.index(rec.len() + 1) as u64,
                _ => {}
            }
            let fast = run(|p, m, o| dec.decode(p, m, o), &payload, max, &dirt);
            let slow = run(|p, m, o| reference.decode(p, m, o), &payload, max, &dirt);
            prop_assert_eq!(&fast, &slow);
            if edit == 0 {
                prop_assert_eq!(fast, Some(rec));
            }
        }

        /// Random bytes as a payload: both decoders agree.
        #[test]
        fn random_payloads_decode_alike(
            payload in proptest::collection::vec(any::<u8>(), 0..200),
            max in 0u64..5000,
        ) {
            let (_, dec, reference) = codec();
            let fast = run(|p, m, o| dec.decode(p, m, o), &payload, max, &[]);
            let slow = run(|p, m, o| reference.decode(p, m, o), &payload, max, &[]);
            prop_assert_eq!(fast, slow);
        }
    }
}
