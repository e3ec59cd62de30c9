//! How the global-dictionary codec maps lengths and match sources to the
//! symbols of its Huffman tables, plus extra bits.
//!
//! Each mapping is a bijection between values and (symbol, extra bits): a
//! few small values get a symbol of their own, larger ones share a symbol
//! per power of two and spell their low bits out. All decoders check the
//! symbol range and that the result fits in a `u64`.

/// Shortest match the format can express.
pub(crate) const MIN_MATCH: u64 = 4;
/// Longest match one sequence may copy. It bounds how far a byte of
/// encoded record can expand, so a crafted record cannot make a reader
/// allocate much more than [`super::MAX_EXPANSION`] times its size.
pub(crate) const MAX_MATCH: u64 = 1 << 16;

/// Number of bits needed for `v` (0 for 0).
#[inline]
fn bit_len(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// A symbol plus `extra_bits` low bits of `extra`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Coded {
    pub(crate) symbol: usize,
    pub(crate) extra: u64,
    pub(crate) extra_bits: u32,
}

/// Symbols 0..DIRECT stand for themselves; above, symbol `DIRECT + b - B0`
/// stands for values of bit length `b` and carries `b - 1` extra bits.
#[inline]
fn log_code(v: u64, direct: u64) -> Coded {
    if v < direct {
        return Coded {
            symbol: v as usize,
            extra: 0,
            extra_bits: 0,
        };
    }
    let b = bit_len(v);
    let b0 = bit_len(direct);
    Coded {
        symbol: (direct as usize) + (b - b0) as usize,
        extra: v & ((1u64 << (b - 1)) - 1),
        extra_bits: b - 1,
    }
}

/// Extra bits for `symbol` of a [`log_code`] alphabet; `None` if beyond 64-bit values.
#[inline]
fn log_extra_bits(symbol: usize, direct: u64) -> Option<u32> {
    if (symbol as u64) < direct {
        return Some(0);
    }
    let b = bit_len(direct) + (symbol as u64 - direct) as u32;
    (b <= 64).then_some(b - 1)
}

#[inline]
fn log_value(symbol: usize, extra: u64, direct: u64) -> u64 {
    if (symbol as u64) < direct {
        return symbol as u64;
    }
    let b = bit_len(direct) + (symbol as u64 - direct) as u32;
    (1u64 << (b - 1)) | extra
}

/// Literal run lengths: 0..16 direct.
pub(crate) mod literal_len {
    use super::*;
    const DIRECT: u64 = 16;
    /// Alphabet size.
    pub(crate) const SYMBOLS: usize = 16 + 60;
    pub(crate) fn encode(v: u64) -> Coded {
        log_code(v, DIRECT)
    }
    pub(crate) fn extra_bits(symbol: usize) -> Option<u32> {
        log_extra_bits(symbol, DIRECT)
    }
    pub(crate) fn value(symbol: usize, extra: u64) -> u64 {
        log_value(symbol, extra, DIRECT)
    }
}

/// Match lengths: symbol 0 ends the record; otherwise `len - MIN_MATCH`,
/// 0..32 direct (as symbols 1..33).
pub(crate) mod match_len {
    use super::*;
    const DIRECT: u64 = 32;
    /// Symbol that ends the record instead of a match.
    pub(crate) const END: usize = 0;
    /// Alphabet size.
    pub(crate) const SYMBOLS: usize = 1 + 32 + 12;
    pub(crate) fn encode(len: u64) -> Coded {
        debug_assert!((MIN_MATCH..=MAX_MATCH).contains(&len));
        let mut c = log_code(len - MIN_MATCH, DIRECT);
        c.symbol += 1;
        c
    }
    pub(crate) fn extra_bits(symbol: usize) -> Option<u32> {
        log_extra_bits(symbol.checked_sub(1)?, DIRECT)
    }
    pub(crate) fn value(symbol: usize, extra: u64) -> u64 {
        log_value(symbol - 1, extra, DIRECT) + MIN_MATCH
    }
}

/// Where a match copies from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Dictionary position `predicted + delta`, `|delta| < 2^15`, where
    /// `predicted` is the end of the previous dictionary match (0 at the
    /// start of a record) plus the literals since.
    Near(i64),
    /// Dictionary position given outright. The dictionary puts its most
    /// referenced bytes first, so popular positions are small numbers and
    /// cost few bits.
    At(u64),
    /// The same distance back into the record as the previous local match.
    LocalRepeat,
    /// `distance >= 1` bytes back into the decoded record.
    Local(u64),
    /// Dictionary position `hot[rank]`: the model's table of the positions
    /// its training matches started at most often, ranked by how often
    /// (a popular phrase costs a few bits where its position would cost
    /// twenty).
    Hot(u64),
}

/// Match sources: symbol 0 is dictionary delta 0; 1..=16 nonzero deltas
/// by bit length of their zigzag form; 17..=81 absolute dictionary
/// positions by bit length; 82 the local repeat; 83..=147 local distances
/// by bit length; 148..=163 hot-position ranks by bit length (model
/// sections of version 1 have no hot table and code the first 148 only).
pub(crate) mod source {
    use super::*;
    /// Largest `|delta|` of a [`Source::Near`] is `NEAR_LIMIT - 1`.
    pub(crate) const NEAR_LIMIT: i64 = 1 << 15;
    const AT_BASE: usize = 17;
    const LOCAL_REPEAT: usize = 82;
    const LOCAL_BASE: usize = 83;
    /// First hot-rank symbol; also the alphabet of a model section
    /// without a hot table (version 1).
    pub(crate) const HOT_BASE: usize = LOCAL_BASE + 65;
    /// Most entries a hot table may have: ranks below it fit the
    /// alphabet's 16 hot symbols.
    pub(crate) const MAX_HOT: usize = 1 << 15;
    /// Alphabet size.
    pub(crate) const SYMBOLS: usize = HOT_BASE + 16;

    fn zigzag(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }

    fn unzigzag(v: u64) -> i64 {
        ((v >> 1) as i64) ^ -((v & 1) as i64)
    }

    pub(crate) fn encode(s: Source) -> Coded {
        let (base, c) = match s {
            Source::Near(delta) => {
                debug_assert!(delta.abs() < NEAR_LIMIT);
                (0, log_code(zigzag(delta), 1))
            }
            Source::At(pos) => (AT_BASE, log_code(pos, 1)),
            Source::LocalRepeat => (LOCAL_REPEAT, log_code(0, 1)),
            Source::Local(d) => {
                debug_assert!(d >= 1);
                (LOCAL_BASE, log_code(d - 1, 1))
            }
            Source::Hot(rank) => {
                debug_assert!(rank < MAX_HOT as u64);
                (HOT_BASE, log_code(rank, 1))
            }
        };
        Coded {
            symbol: base + c.symbol,
            ..c
        }
    }

    pub(crate) fn extra_bits(symbol: usize) -> Option<u32> {
        match symbol {
            0..AT_BASE => log_extra_bits(symbol, 1),
            AT_BASE..LOCAL_REPEAT => log_extra_bits(symbol - AT_BASE, 1),
            LOCAL_REPEAT => Some(0),
            LOCAL_BASE..HOT_BASE => log_extra_bits(symbol - LOCAL_BASE, 1),
            HOT_BASE..SYMBOLS => log_extra_bits(symbol - HOT_BASE, 1),
            _ => None,
        }
    }

    /// How [`value`] builds the source of `symbol` from its extra bits:
    /// the source is `kind` applied to `base + extra`, with
    /// [`Kind::Near`] the zigzag form of the delta and [`Kind::Local`] the
    /// distance itself (its `+ 1` folded into `base`). For decode tables
    /// that add the extra bits without a `match` per symbol.
    pub(crate) fn parts(symbol: usize) -> (Kind, u64) {
        match symbol {
            0..AT_BASE => (Kind::Near, log_value(symbol, 0, 1)),
            AT_BASE..LOCAL_REPEAT => (Kind::At, log_value(symbol - AT_BASE, 0, 1)),
            LOCAL_REPEAT => (Kind::LocalRepeat, 0),
            LOCAL_BASE..HOT_BASE => (Kind::Local, log_value(symbol - LOCAL_BASE, 0, 1) + 1),
            _ => (Kind::Hot, log_value(symbol - HOT_BASE, 0, 1)),
        }
    }

    /// The delta of a [`Kind::Near`] source from `base + extra`.
    #[inline]
    pub(crate) fn near_delta(zigzagged: u64) -> i64 {
        unzigzag(zigzagged)
    }

    /// The kinds of [`Source`], for [`parts`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[repr(u8)]
    pub(crate) enum Kind {
        Near = 0,
        At = 1,
        LocalRepeat = 2,
        Local = 3,
        Hot = 4,
    }

    pub(crate) fn value(symbol: usize, extra: u64) -> Source {
        match symbol {
            0..AT_BASE => Source::Near(unzigzag(log_value(symbol, extra, 1))),
            AT_BASE..LOCAL_REPEAT => Source::At(log_value(symbol - AT_BASE, extra, 1)),
            LOCAL_REPEAT => Source::LocalRepeat,
            LOCAL_BASE..HOT_BASE => Source::Local(log_value(symbol - LOCAL_BASE, extra, 1) + 1),
            _ => Source::Hot(log_value(symbol - HOT_BASE, extra, 1)),
        }
    }
}

/// Literal contexts: literals are coded with one of [`CONTEXTS`] tables,
/// chosen by the class of the previous literal of the same run (hex digits,
/// letters, digits, separators and line breaks predict very different next
/// bytes), [`HEX_RUN`] inside a run of hex digits, [`START_CONTEXT`] at
/// the start of the record and
/// [`AFTER_MATCH`] for the first literal after a match. The last context
/// never depends on the bytes a match copied, so a decoder can decode all
/// of a record's bits before it touches the dictionary.
pub(crate) const CONTEXTS: usize = 11;

/// Context of the first literal of a record.
pub(crate) const START_CONTEXT: u8 = 5;

/// Context of the first literal after a match.
pub(crate) const AFTER_MATCH: u8 = 9;

/// Context after two or more hex digits in a row (hashes and checksums in
/// records are long runs of literals that cost four bits each at best).
pub(crate) const HEX_RUN: u8 = 10;

/// Classes of [`CONTEXT_OF`] that are hex digits.
#[inline]
pub(crate) fn is_hex_class(class: u8) -> bool {
    class <= 1
}

/// Context of the next literal of a run after a literal of class `class`,
/// `hexes` being how many hex digits in a row end the run so far.
#[inline]
pub(crate) fn next_context(class: u8, hexes: u32) -> u8 {
    if hexes >= 2 {
        HEX_RUN
    } else {
        class
    }
}

/// Context class of each byte value.
pub(crate) static CONTEXT_OF: [u8; 256] = {
    let mut t = [8u8; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = match c {
            b'0'..=b'9' => 0,
            b'a'..=b'f' => 1,
            b'g'..=b'z' => 2,
            b'A'..=b'Z' => 3,
            b' ' => 4,
            b'\n' => 5,
            b'-' | b'.' | b'_' | b'/' => 6,
            0x21..=0x7E => 7,
            _ => 8,
        };
        b += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    fn check<V: Copy + PartialEq + std::fmt::Debug>(
        v: V,
        c: Coded,
        symbols: usize,
        extra_bits: impl Fn(usize) -> Option<u32>,
        value: impl Fn(usize, u64) -> V,
    ) {
        assert!(c.symbol < symbols, "{v:?} -> symbol {}", c.symbol);
        assert_eq!(extra_bits(c.symbol), Some(c.extra_bits), "{v:?}");
        assert_eq!(value(c.symbol, c.extra), v);
    }

    #[test]
    fn mappings_are_bijections() {
        let mut vals: Vec<u64> = (0..300).collect();
        vals.extend((0..64).map(|b| 1u64 << b));
        vals.extend((1..64).map(|b| (1u64 << b) - 1));
        vals.push(u64::MAX);
        for &v in &vals {
            check(
                v,
                literal_len::encode(v),
                literal_len::SYMBOLS,
                literal_len::extra_bits,
                literal_len::value,
            );
            let m = v.clamp(MIN_MATCH, MAX_MATCH);
            check(
                m,
                match_len::encode(m),
                match_len::SYMBOLS,
                match_len::extra_bits,
                match_len::value,
            );
            let near = (v as i64).rem_euclid(source::NEAR_LIMIT);
            for s in [
                Source::Near(near),
                Source::Near(-near),
                Source::At(v),
                Source::Local(v.max(1)),
                Source::LocalRepeat,
                Source::Hot(v % source::MAX_HOT as u64),
            ] {
                check(
                    s,
                    source::encode(s),
                    source::SYMBOLS,
                    source::extra_bits,
                    source::value,
                );
            }
        }
        assert_eq!(match_len::extra_bits(match_len::END), None);
    }

    #[test]
    fn source_parts_agree_with_value() {
        for symbol in 0..source::SYMBOLS {
            let bits = source::extra_bits(symbol).unwrap().min(20);
            let (kind, base) = source::parts(symbol);
            for extra in [0, 1, (1u64 << bits) - 1]
                .into_iter()
                .filter(|&e| e < 1 << bits)
            {
                let v = base + extra;
                let got = match kind {
                    source::Kind::Near => Source::Near(source::near_delta(v)),
                    source::Kind::At => Source::At(v),
                    source::Kind::LocalRepeat => Source::LocalRepeat,
                    source::Kind::Local => Source::Local(v),
                    source::Kind::Hot => Source::Hot(v),
                };
                assert_eq!(
                    got,
                    source::value(symbol, extra),
                    "symbol {symbol} extra {extra}"
                );
            }
        }
    }
}
