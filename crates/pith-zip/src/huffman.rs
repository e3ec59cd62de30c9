//! Static canonical Huffman codes, length-limited to [`MAX_BITS`] bits, for
//! the global-dictionary codec.
//!
//! One code is built per symbol table from statistics of the whole input
//! and stored once per store (as code lengths), so records carry no tables
//! of their own: that is where a per-record zstd frame spends many of its
//! bytes on short records. Codes are assigned canonically (by length, then
//! symbol) and written bit-reversed so the LSB-first [`BitReader`] decodes a
//! symbol with one lookup into a `2^MAX_BITS` table.
//!
//! Escapes: a table over `n` symbols has an extra symbol `n`, the escape,
//! followed by the symbol's index in raw bits. Symbols never seen in
//! training get no code of their own (length 0) and are escaped, so they
//! take no code space from the common ones (with an 11-bit limit, 240
//! unseen byte values would otherwise take 12% of it).
//!
//! Invariants: every stored code satisfies Kraft's inequality (checked when
//! read), so table slots never overlap; slots no code reaches hold length 0
//! and decode as an error; an escaped index must be below `n`.

use pith_enc::le;

use crate::bits::{BitReader, BitWriter};

/// Longest code, in bits; decode tables have `2^MAX_BITS` entries.
pub(crate) const MAX_BITS: u32 = 11;

/// Code lengths (0 = symbol absent) for `freqs`, none longer than
/// [`MAX_BITS`]. A single used symbol gets a 1-bit code.
pub(crate) fn code_lengths(freqs: &[u64]) -> Vec<u8> {
    let mut scaled: Vec<u64> = freqs.to_vec();
    loop {
        let lengths = huffman_lengths(&scaled);
        if lengths.iter().all(|&l| u32::from(l) <= MAX_BITS) {
            return lengths;
        }
        // Flatten the distribution and retry: halving keeps the order of
        // frequencies, and rare symbols (kept at 1) rise towards the root.
        for f in &mut scaled {
            if *f > 0 {
                *f = (*f >> 1).max(1);
            }
        }
    }
}

/// Unlimited Huffman code lengths by the two-queue method.
fn huffman_lengths(freqs: &[u64]) -> Vec<u8> {
    let mut lengths = vec![0u8; freqs.len()];
    let mut leaves: Vec<(u64, usize)> = freqs
        .iter()
        .enumerate()
        .filter(|(_, &f)| f > 0)
        .map(|(s, &f)| (f, s))
        .collect();
    match leaves.len() {
        0 => return lengths,
        1 => {
            lengths[leaves[0].1] = 1;
            return lengths;
        }
        _ => {}
    }
    leaves.sort_unstable();
    // Nodes: leaves first, then internal nodes; parent links give depths.
    let n = leaves.len();
    let mut weight: Vec<u64> = leaves.iter().map(|l| l.0).collect();
    let mut parent = vec![usize::MAX; 2 * n - 1];
    let (mut next_leaf, mut next_inner) = (0usize, n);
    for node in n..2 * n - 1 {
        let mut pick = || {
            let take_leaf =
                next_leaf < n && (next_inner >= node || weight[next_leaf] <= weight[next_inner]);
            if take_leaf {
                next_leaf += 1;
                next_leaf - 1
            } else {
                next_inner += 1;
                next_inner - 1
            }
        };
        let (a, b) = (pick(), pick());
        weight.push(weight[a] + weight[b]);
        parent[a] = node;
        parent[b] = node;
    }
    let mut depth = vec![0u32; 2 * n - 1];
    for node in (0..2 * n - 2).rev() {
        depth[node] = depth[parent[node]] + 1;
    }
    for (i, &(_, s)) in leaves.iter().enumerate() {
        lengths[s] = depth[i].min(255) as u8;
    }
    lengths
}

/// Canonical codes for `lengths`, bit-reversed for LSB-first output.
fn canonical_codes(lengths: &[u8]) -> Vec<u16> {
    let mut count = [0u32; MAX_BITS as usize + 1];
    for &l in lengths {
        count[l as usize] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; MAX_BITS as usize + 2];
    let mut code = 0u32;
    for len in 1..=MAX_BITS as usize {
        code = (code + count[len - 1]) << 1;
        next[len] = code;
    }
    lengths
        .iter()
        .map(|&l| {
            if l == 0 {
                return 0;
            }
            let c = next[l as usize];
            next[l as usize] += 1;
            (c.reverse_bits() >> (32 - u32::from(l))) as u16
        })
        .collect()
}

/// Raw bits of an escaped index into `n` symbols.
fn escape_bits(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

/// Code lengths for `counts` over `n = counts.len()` symbols plus the
/// escape (the result has `n + 1` entries): unseen symbols get none.
pub(crate) fn escaped_lengths(counts: &[u64]) -> Vec<u8> {
    let mut freqs = counts.to_vec();
    // The escape is rare but must always be codable.
    let total: u64 = counts.iter().sum();
    freqs.push((total >> 16).max(1));
    code_lengths(&freqs)
}

/// Encoding side of one code (with escape).
#[derive(Clone, Debug)]
pub(crate) struct Encoder {
    codes: Vec<u16>,
    lengths: Vec<u8>,
    escape_bits: u32,
}

impl Encoder {
    /// `lengths` has one entry per symbol and one for the escape, last.
    pub(crate) fn new(lengths: &[u8]) -> Self {
        Encoder {
            codes: canonical_codes(lengths),
            lengths: lengths.to_vec(),
            escape_bits: escape_bits(lengths.len() - 1),
        }
    }

    /// Writes `symbol`, escaped when it has no code.
    #[inline]
    pub(crate) fn put(&self, w: &mut BitWriter, symbol: usize) {
        let len = self.lengths[symbol];
        if len > 0 {
            w.put(u64::from(self.codes[symbol]), u32::from(len));
        } else {
            let esc = self.lengths.len() - 1;
            w.put(u64::from(self.codes[esc]), u32::from(self.lengths[esc]));
            w.put(symbol as u64, self.escape_bits);
        }
    }

    /// Bits `symbol` costs, escape included.
    pub(crate) fn cost(&self, symbol: usize) -> u32 {
        match self.lengths[symbol] {
            0 => u32::from(self.lengths[self.lengths.len() - 1]) + self.escape_bits,
            l => u32::from(l),
        }
    }
}

/// Decoding side of one code: `2^MAX_BITS` entries of `symbol << 4 | length`.
#[derive(Clone, Debug)]
pub(crate) struct Decoder {
    table: Box<[u16]>,
    /// The escape symbol (= number of ordinary symbols).
    escape: usize,
}

impl Decoder {
    /// Builds the table; `None` when `lengths` break Kraft's inequality,
    /// exceed [`MAX_BITS`], or name no symbol or more than 4096.
    pub(crate) fn new(lengths: &[u8]) -> Option<Self> {
        if lengths.len() > 4096 || lengths.len() < 2 {
            return None;
        }
        let mut kraft = 0u64;
        for &l in lengths {
            if u32::from(l) > MAX_BITS {
                return None;
            }
            if l > 0 {
                kraft += 1 << (MAX_BITS - u32::from(l));
            }
        }
        if kraft > 1 << MAX_BITS {
            return None;
        }
        let mut table = vec![0u16; 1 << MAX_BITS].into_boxed_slice();
        for (symbol, (&l, &code)) in lengths.iter().zip(&canonical_codes(lengths)).enumerate() {
            if l == 0 {
                continue;
            }
            let step = 1usize << l;
            let mut slot = usize::from(code);
            while slot < table.len() {
                table[slot] = (symbol as u16) << 4 | u16::from(l);
                slot += step;
            }
        }
        let escape = lengths.len() - 1;
        Some(Decoder { table, escape })
    }

    /// The raw table: `2^MAX_BITS` entries of `symbol << 4 | length`
    /// (length 0: no code), indexed by the next `MAX_BITS` stream bits.
    pub(crate) fn table(&self) -> &[u16] {
        &self.table
    }

    /// The escape symbol (= number of ordinary symbols).
    pub(crate) fn escape(&self) -> usize {
        self.escape
    }

    /// Reads an escaped symbol index (after the escape code); `None` when
    /// out of range.
    #[inline(always)]
    pub(crate) fn escaped(&self, r: &mut BitReader<'_>) -> Option<usize> {
        read_escaped(r, self.escape)
    }

    /// Decodes one symbol; `None` on a bit pattern no code has or an
    /// escaped index out of range. The reader must hold at least
    /// `MAX_BITS + 12` bits (or be at its end).
    #[inline(always)]
    pub(crate) fn get(&self, r: &mut BitReader<'_>) -> Option<usize> {
        let e = self.table[r.peek(MAX_BITS) as usize];
        let len = u32::from(e & 15);
        if len == 0 {
            return None;
        }
        r.consume(len);
        let symbol = usize::from(e >> 4);
        if symbol != self.escape {
            return Some(symbol);
        }
        self.escaped(r)
    }
}

/// Reads the index of an escaped symbol of a code over `symbols` ordinary
/// symbols (after the escape code); `None` when out of range.
#[inline(always)]
pub(crate) fn read_escaped(r: &mut BitReader<'_>, symbols: usize) -> Option<usize> {
    let raw = r.read(escape_bits(symbols)) as usize;
    (raw < symbols).then_some(raw)
}

/// Appends `lengths` as 4-bit nibbles after a u16 count.
pub(crate) fn write_lengths(out: &mut Vec<u8>, lengths: &[u8]) {
    le::put_u16(out, lengths.len() as u16);
    for pair in lengths.chunks(2) {
        out.push(pair[0] | pair.get(1).copied().unwrap_or(0) << 4);
    }
}

/// Reads what [`write_lengths`] wrote; returns the lengths and the bytes used.
pub(crate) fn read_lengths(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
    let n = usize::from(le::u16_at(bytes, 0)?);
    let packed = bytes.get(2..2 + n.div_ceil(2))?;
    let mut lengths = Vec::with_capacity(n);
    for &b in packed {
        lengths.push(b & 15);
        lengths.push(b >> 4);
    }
    if n % 2 == 1 && lengths.pop() != Some(0) {
        return None;
    }
    Some((lengths, 2 + n.div_ceil(2)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn symbols_roundtrip(freqs in proptest::collection::vec(0u64..1_000_000, 1..300),
                             picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..500)) {
            let lengths = escaped_lengths(&freqs);
            prop_assert!(lengths.iter().all(|&l| u32::from(l) <= MAX_BITS));
            // Every symbol, seen in training or not, is codable.
            let used: Vec<usize> = (0..freqs.len()).collect();
            let enc = Encoder::new(&lengths);
            let dec = Decoder::new(&lengths).unwrap();
            let symbols: Vec<usize> = picks.iter().map(|i| used[i.index(used.len())]).collect();
            let mut w = BitWriter::default();
            for &s in &symbols {
                enc.put(&mut w, s);
            }
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            for &s in &symbols {
                r.refill();
                prop_assert_eq!(dec.get(&mut r), Some(s));
            }
            let mut packed = Vec::new();
            write_lengths(&mut packed, &lengths);
            prop_assert_eq!(read_lengths(&packed), Some((lengths.clone(), packed.len())));
        }
    }

    #[test]
    fn skewed_frequencies_stay_within_the_limit() {
        let freqs: Vec<u64> = (0..64).map(|i| 1u64 << i.min(60)).collect();
        let lengths = code_lengths(&freqs);
        assert!(lengths.iter().all(|&l| l >= 1 && u32::from(l) <= MAX_BITS));
        assert!(Decoder::new(&lengths).is_some());
    }

    #[test]
    fn over_full_codes_are_rejected() {
        assert!(Decoder::new(&[1, 1, 1]).is_none());
        assert!(Decoder::new(&[12, 1]).is_none());
        assert!(Decoder::new(&[1]).is_none());
        assert!(Decoder::new(&[1, 2, 2]).is_some());
    }
}
