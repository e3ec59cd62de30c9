//! A static symbol table that compresses trie labels, in the spirit of FSST.
//!
//! Up to 255 symbols of 1 to 8 bytes each; a label is encoded as a sequence of
//! one-byte codes, code `c < 255` standing for symbol `c` and code `255`
//! (escape) followed by one literal byte. Each label is encoded alone, so one
//! label decodes without touching any other, and comparison against a query
//! runs symbol by symbol without materializing the label.
//!
//! Why not nest labels into a second trie as marisa-trie and Terark's NLT do?
//! Nesting shares suffixes between labels but charges a link of `log2(labels)`
//! bits per label and a pointer chase per fragment on every lookup and every
//! id -> key. A symbol table costs 2 KiB per trie, decodes with one table load
//! per 1-8 output bytes, and on the Debian key set compresses label bytes
//! about 2x (measured by `pith bench trie`).
//!
//! Training follows the FSST paper's loop, simplified: encode a sample with
//! the current table, count single codes and adjacent pairs, keep the 255
//! candidates of highest gain (count x length), repeat five times.
//!
//! On-disk (`u64` words): `mode`, then for mode 1 only
//! `syms[255] | lens (byte array, 256 bytes)`. Mode 0 stores labels raw (and
//! no table), mode 1 uses the table; symbol `c` is the low `lens[c]` bytes of
//! `syms[c]`, little-endian, and `lens[255]` is 0 (255 is the escape code). Decoding never fails: a
//! code with length 0 (unused) decodes to nothing and a trailing escape is
//! ignored, so arbitrary pool bytes cannot cause a panic.

use pith_enc::le;

use crate::error::Result;
use crate::words::{corrupt, push_bytes, WordReader};

pub(crate) const ESCAPE: u8 = 255;
/// Symbols a table holds on disk (codes `0..255`; unused ones have
/// length 0).
const MAX_SYMBOLS: usize = 255;
/// Bytes of labels sampled for training.
const SAMPLE_BYTES: usize = 1 << 16;
const ROUNDS: usize = 5;

/// How labels are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Raw = 0,
    Symbols = 1,
}

#[inline]
fn low_mask(len: usize) -> u64 {
    if len >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * len)) - 1
    }
}

/// A symbol as the greedy parse tries it.
#[derive(Clone, Copy)]
struct Cand {
    sym: u64,
    mask: u64,
    code: u8,
    len: u8,
}

/// A trained table with a greedy longest-match encoder.
pub(crate) struct SymbolTable {
    pub(crate) mode: Mode,
    syms: Vec<u64>,
    lens: Vec<u8>,
    /// The symbols of two bytes or more, by their first two bytes and
    /// then longest first, each its bytes (zero past its length), the
    /// mask of its length, and its code and length, side by side so the
    /// greedy parse reads one run of memory.
    cands: Vec<Cand>,
    /// Where each first two bytes' run of `cands` is: an open-addressing
    /// table of [`PAIR_SLOTS`] slots (at most 255 runs, so at most half
    /// full), a slot `prefix << 16 | start << 8 | len`, 0 when empty (a
    /// run is never empty). The runs were by first byte once, scanned
    /// longest first, a dozen symbols or more behind a common first byte;
    /// by two bytes, whole trie builds took 4-25% less time for the same
    /// bytes (best of 15: Debian keys 42.0 -> 39.2 ms, Debian URLs 28.4 ->
    /// 21.1, this machine's file paths 326 -> 285).
    pairs: Vec<u32>,
    /// The code of the one-byte symbol of each byte, [`ESCAPE`] for none.
    single: [u8; 256],
    /// Bytes of the training sample, and of its encoding: what
    /// [`SymbolTable::encoded_estimate`] scales by.
    sample: (usize, usize),
}

/// Slots of [`SymbolTable::pairs`].
const PAIR_SLOTS: usize = 512;

/// The slot a run of symbols starting with `prefix` (their first two
/// bytes, little-endian) is looked for first.
#[inline]
fn pair_slot(prefix: u16) -> usize {
    (u32::from(prefix).wrapping_mul(0x9E37_79B1) >> 23) as usize
}

impl SymbolTable {
    fn from_symbols(mode: Mode, symbols: &[(u64, u8)]) -> Self {
        let mut single = [ESCAPE; 256];
        let mut order: Vec<usize> = Vec::with_capacity(symbols.len());
        // Codes below 255 only: the escape is no symbol.
        for (c, &(sym, len)) in symbols.iter().enumerate().take(MAX_SYMBOLS) {
            match len {
                0 => {}
                // The lower code of two equal ones, as the parse took it.
                1 if single[(sym & 0xFF) as usize] == ESCAPE => {
                    single[(sym & 0xFF) as usize] = c as u8;
                }
                1 => {}
                _ => order.push(c),
            }
        }
        // By first two bytes, then longest first (stable: among equal
        // ones, the lower code first).
        order.sort_by_key(|&c| (symbols[c].0 & 0xFFFF, std::cmp::Reverse(symbols[c].1)));
        let cands: Vec<Cand> = order
            .iter()
            .map(|&c| {
                let (sym, len) = symbols[c];
                let mask = low_mask(len as usize);
                Cand {
                    sym: sym & mask,
                    mask,
                    code: c as u8,
                    len,
                }
            })
            .collect();
        let mut pairs = vec![0u32; PAIR_SLOTS];
        let mut start = 0;
        for run in cands.chunk_by(|a, b| a.sym & 0xFFFF == b.sym & 0xFFFF) {
            let prefix = (run[0].sym & 0xFFFF) as u16;
            let mut i = pair_slot(prefix);
            while pairs[i] != 0 {
                i = (i + 1) % PAIR_SLOTS;
            }
            // At most 254 symbols of two bytes or more: both fit a byte.
            pairs[i] = u32::from(prefix) << 16 | (start as u32) << 8 | run.len() as u32;
            start += run.len();
        }
        SymbolTable {
            mode,
            syms: symbols.iter().map(|s| s.0).collect(),
            lens: symbols.iter().map(|s| s.1).collect(),
            cands,
            pairs,
            single,
            sample: (1, 1),
        }
    }

    /// The symbols of two bytes or more that start with `prefix`, longest
    /// first.
    #[inline]
    fn run_of(&self, prefix: u16) -> &[Cand] {
        let mut i = pair_slot(prefix);
        loop {
            let e = self.pairs[i];
            if e == 0 {
                return &[];
            }
            if (e >> 16) as u16 == prefix {
                let (start, len) = ((e >> 8 & 0xFF) as usize, (e & 0xFF) as usize);
                return self.cands.get(start..start + len).unwrap_or(&[]);
            }
            i = (i + 1) % PAIR_SLOTS;
        }
    }

    /// About how many bytes `raw` bytes of labels encode to (a little
    /// more, by the sample's ratio): the builder reserves room for the
    /// encoded labels with it, where doubling a vector as it fills left up
    /// to as much again unused at the builder's peak.
    pub(crate) fn encoded_estimate(&self, raw: usize) -> usize {
        if self.mode == Mode::Raw {
            return raw;
        }
        let (plain, coded) = self.sample;
        let scaled = raw as u128 * coded as u128 / plain.max(1) as u128;
        usize::try_from(scaled + scaled / 32).unwrap_or(usize::MAX / 2) + 64
    }

    /// Greedy parse of `input` (not empty) into codes: the longest
    /// symbol it starts with and its length, or `None` and 1 (a literal).
    #[inline]
    fn next_code(&self, input: &[u8]) -> (Option<u8>, usize) {
        let word = le::u64_padded(input);
        if input.len() >= 2 {
            for c in self.run_of(word as u16) {
                if word & c.mask == c.sym && c.len as usize <= input.len() {
                    return (Some(c.code), c.len as usize);
                }
            }
        }
        match self.single[usize::from(input[0])] {
            ESCAPE => (None, 1),
            c => (Some(c), 1),
        }
    }

    /// Appends the encoding of `input` to `out`.
    pub(crate) fn encode(&self, mut input: &[u8], out: &mut Vec<u8>) {
        if self.mode == Mode::Raw {
            out.extend_from_slice(input);
            return;
        }
        while !input.is_empty() {
            match self.next_code(input) {
                (Some(c), len) => {
                    out.push(c);
                    input = &input[len..];
                }
                (None, _) => {
                    out.push(ESCAPE);
                    out.push(input[0]);
                    input = &input[1..];
                }
            }
        }
    }

    /// Trains a table on a sample of `labels`; falls back to raw storage when
    /// the table would not save space on the sample.
    pub(crate) fn train<'k>(labels: impl ExactSizeIterator<Item = &'k [u8]> + Clone) -> Self {
        Self::train_codes(labels, MAX_SYMBOLS)
    }

    /// A table of no symbols: every byte an escape and its literal (small
    /// tries with copies, for golden bytes and tests).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn escapes_only() -> Self {
        SymbolTable::from_symbols(Mode::Symbols, &[])
    }

    /// [`SymbolTable::train`] with at most `max_symbols` symbols (codes
    /// `0..max_symbols`), leaving the codes from `max_symbols` to 254 for
    /// the labels' layout (see [`crate::copies`]).
    pub(crate) fn train_codes<'k>(
        labels: impl ExactSizeIterator<Item = &'k [u8]> + Clone,
        max_symbols: usize,
    ) -> Self {
        let max_symbols = max_symbols.min(MAX_SYMBOLS);
        let total: usize = labels.clone().map(<[u8]>::len).sum();
        let step = total.div_ceil(SAMPLE_BYTES).max(1);
        let sample: Vec<&[u8]> = labels.step_by(step).collect();
        let sample_bytes: usize = sample.iter().map(|s| s.len()).sum();
        let mut table = SymbolTable::from_symbols(Mode::Symbols, &[]);
        // Candidate ids: 0..255 symbols of the current table, 256 + b a literal byte.
        let n = MAX_SYMBOLS + 256;
        let mut single = vec![0u32; n];
        // Each adjacent pair of codes as `a * n + b`, sorted to count them:
        // 4 bytes per code of the sample (about 64 KiB of labels), where a
        // table of every pair's count took 0.5 MB, the builder's largest
        // allocation on small key sets.
        // At most one pair per sample byte (each code takes one or more).
        let mut pairs: Vec<u32> = Vec::with_capacity(sample_bytes);
        let mut codes: Vec<usize> = Vec::new();
        for _ in 0..ROUNDS {
            single.iter_mut().for_each(|c| *c = 0);
            pairs.clear();
            for label in &sample {
                codes.clear();
                let mut rest: &[u8] = label;
                while !rest.is_empty() {
                    let (c, len) = table.next_code(rest);
                    codes.push(c.map_or(MAX_SYMBOLS + rest[0] as usize, usize::from));
                    rest = &rest[len..];
                }
                for (i, &c) in codes.iter().enumerate() {
                    single[c] += 1;
                    if let Some(&d) = codes.get(i + 1) {
                        // Below 511^2.
                        pairs.push((c * n + d) as u32);
                    }
                }
            }
            pairs.sort_unstable();
            let sym_of = |id: usize| -> (u64, u8) {
                if id < MAX_SYMBOLS {
                    (table.syms[id], table.lens[id])
                } else {
                    ((id - MAX_SYMBOLS) as u64, 1)
                }
            };
            // (gain, sym, len), best first in this order. Only the best
            // KEEP can be chosen (255 distinct, and duplicates are rare), so
            // the list is cut back to them whenever it doubles: a full list
            // of pairs was up to 6 MB, the builder's largest allocation on
            // small key sets.
            let order = |x: &(u64, u64, u8), y: &(u64, u64, u8)| {
                y.0.cmp(&x.0).then(x.2.cmp(&y.2)).then(x.1.cmp(&y.1))
            };
            const KEEP: usize = 1024;
            let mut cands: Vec<(u64, u64, u8)> = Vec::with_capacity(2 * KEEP);
            let mut offer = |c: (u64, u64, u8)| {
                cands.push(c);
                if cands.len() == 2 * KEEP {
                    cands.select_nth_unstable_by(KEEP - 1, order);
                    cands.truncate(KEEP);
                }
            };
            for (id, &count) in single.iter().enumerate() {
                if count > 0 {
                    let (s, l) = sym_of(id);
                    offer((u64::from(count) * u64::from(l), s, l));
                }
            }
            // Pairs in order of `a`, then `b`; counts capped at 16 bits, as
            // the table of counts they replace held them (so the tables
            // chosen, and the bytes written, are the same).
            for run in pairs.chunk_by(|x, y| x == y) {
                let (a, b) = (run[0] as usize / n, run[0] as usize % n);
                let cnt = run.len().min(usize::from(u16::MAX)) as u64;
                let ((sa, la), (sb, lb)) = (sym_of(a), sym_of(b));
                if la + lb <= 8 {
                    let s = sa | (sb << (8 * u32::from(la)));
                    offer((cnt * u64::from(la + lb), s, la + lb));
                }
            }
            cands.sort_unstable_by(order);
            let mut chosen: Vec<(u64, u8)> = Vec::with_capacity(max_symbols);
            let mut seen = std::collections::HashSet::new();
            for (_, s, l) in cands {
                if chosen.len() == max_symbols {
                    break;
                }
                if seen.insert((s, l)) {
                    chosen.push((s, l));
                }
            }
            table = SymbolTable::from_symbols(Mode::Symbols, &chosen);
        }
        let mut encoded = Vec::new();
        for label in &sample {
            table.encode(label, &mut encoded);
        }
        // The table itself costs about 2 KiB; require a clear saving.
        if encoded.len() + 2048 >= sample_bytes {
            return SymbolTable::from_symbols(Mode::Raw, &[]);
        }
        table.sample = (sample_bytes, encoded.len());
        table
    }

    pub(crate) fn write(&self, out: &mut Vec<u64>) {
        out.push(self.mode as u64);
        if self.mode == Mode::Raw {
            return;
        }
        let mut syms = [0u64; MAX_SYMBOLS];
        let mut lens = [0u8; 256];
        for (c, (&s, &l)) in self.syms.iter().zip(&self.lens).enumerate() {
            syms[c] = s & low_mask(l as usize);
            lens[c] = l;
        }
        out.extend_from_slice(&syms);
        push_bytes(out, &lens);
    }
}

/// A read-only symbol table that decodes and compares labels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Symbols<'a> {
    mode: Mode,
    syms: &'a [u64],
    lens: &'a [u8],
}

/// A stored label's codes: its own, then, for a label that copies the
/// end of an earlier one (format version 6, [`crate::copies`]), the codes
/// of the label copied from, whose first `skip` decoded bytes are left
/// out. `copied` is empty for a label coded whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Code<'a> {
    pub(crate) own: &'a [u8],
    pub(crate) copied: &'a [u8],
    pub(crate) skip: usize,
}

impl<'a> Code<'a> {
    /// A label coded whole.
    pub(crate) fn whole(own: &'a [u8]) -> Self {
        Code {
            own,
            copied: &[],
            skip: 0,
        }
    }
}

/// Outcome of comparing a stored label with the front of a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LabelCmp {
    /// The label equals the first `n` bytes of the query.
    Prefix(usize),
    /// The label sorts before the query (they differ at some byte).
    Less,
    /// The label sorts after the query (differs, or the query ended first).
    Greater,
}

impl<'a> Symbols<'a> {
    pub(crate) fn read(r: &mut WordReader<'a>) -> Result<Self> {
        let off = r.offset();
        let mode = match r.word("symbol table")? {
            0 => Mode::Raw,
            1 => Mode::Symbols,
            m => return Err(corrupt(off, format!("unknown label mode {m}"))),
        };
        if mode == Mode::Raw {
            return Ok(Symbols {
                mode,
                syms: &[],
                lens: &[],
            });
        }
        let syms = r.take(MAX_SYMBOLS, "symbol table")?;
        let lens = r.bytes("symbol table")?;
        if lens.len() != 256 || lens.iter().any(|&l| l > 8) || lens[255] != 0 {
            return Err(corrupt(off, "symbol lengths out of range"));
        }
        Ok(Symbols { mode, syms, lens })
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// The bytes of code `c` (not [`ESCAPE`]) as a little-endian word,
    /// and how many of them it stands for (empty if the table lacks it:
    /// bytes not validated).
    #[inline(always)]
    pub(crate) fn symbol(&self, c: u8) -> (u64, usize) {
        let len = self
            .lens
            .get(usize::from(c))
            .map_or(0, |&l| usize::from(l).min(8));
        let sym = self.syms.get(usize::from(c)).copied().unwrap_or(0);
        (sym, len)
    }

    /// Appends the decoded label to `out`.
    #[inline(always)]
    pub(crate) fn decode(&self, code: &[u8], out: &mut Vec<u8>) {
        if self.mode == Mode::Raw {
            out.extend_from_slice(code);
            return;
        }
        // Each symbol is appended as a whole word and the length cut back:
        // a copy of constant size is a store, where a copy of `len` bytes
        // was a call to memmove per symbol (a fifth of a regex walk's time,
        // profiled).
        out.reserve(code.len() * 8);
        let mut i = 0;
        while i < code.len() {
            let c = code[i];
            if c == ESCAPE {
                if let Some(&b) = code.get(i + 1) {
                    out.push(b);
                }
                i += 2;
            } else {
                let at = out.len();
                out.extend_from_slice(&self.syms[c as usize].to_le_bytes());
                out.truncate(at + self.lens[c as usize] as usize);
                i += 1;
            }
        }
    }

    /// Compares the label encoded in `code` with the start of `query`.
    #[inline(always)]
    pub(crate) fn compare(&self, code: &[u8], query: &[u8]) -> LabelCmp {
        if self.mode == Mode::Raw {
            return compare_raw(code, query);
        }
        let mut pos = 0;
        let mut i = 0;
        while i < code.len() {
            let c = code[i];
            let (sym, len) = if c == ESCAPE {
                i += 1;
                match code.get(i) {
                    Some(&b) => (u64::from(b), 1),
                    None => break,
                }
            } else {
                (self.syms[c as usize], self.lens[c as usize] as usize)
            };
            i += 1;
            if let Some(order) = compare_symbol(sym, len, &query[pos..]) {
                return order;
            }
            pos += len;
        }
        LabelCmp::Prefix(pos)
    }

    /// The symbol at `code[i]` (an escape and its byte, or a table
    /// code), its length and where the next code starts; length 0 past
    /// the end.
    #[inline(always)]
    fn symbol_at(&self, code: &[u8], i: usize) -> (u64, usize, usize) {
        match code.get(i) {
            None => (0, 0, code.len()),
            Some(&ESCAPE) => code
                .get(i + 1)
                .map_or((0, 0, code.len()), |&b| (u64::from(b), 1, i + 2)),
            Some(&c) => {
                let (sym, len) = self.symbol(c);
                (sym, len, i + 1)
            }
        }
    }

    /// How many bytes `code` decodes to.
    pub(crate) fn decoded_len(&self, code: &[u8]) -> usize {
        if self.mode == Mode::Raw {
            return code.len();
        }
        let (mut i, mut len) = (0, 0);
        while i < code.len() {
            let (_, n, next) = self.symbol_at(code, i);
            len += n;
            i = next;
        }
        len
    }

    /// Leaves out the first `skip` decoded bytes of `code`: the rest of
    /// the symbol they end inside (as a word and its length, `(0, 0)`
    /// when they end at a code's end) and the codes after it.
    #[inline]
    pub(crate) fn skip<'c>(&self, code: &'c [u8], mut skip: usize) -> ((u64, usize), &'c [u8]) {
        if self.mode == Mode::Raw {
            return ((0, 0), code.get(skip..).unwrap_or(&[]));
        }
        let mut i = 0;
        while skip > 0 && i < code.len() {
            let (sym, len, next) = self.symbol_at(code, i);
            i = next;
            if skip < len {
                return ((sym >> (8 * skip), len - skip), &code[i..]);
            }
            skip -= len;
        }
        ((0, 0), &code[i..])
    }

    /// Compares a stored label (see [`Code`]) with the start of `query`.
    #[inline(always)]
    pub(crate) fn compare_label(&self, code: &Code<'_>, query: &[u8]) -> LabelCmp {
        let own = self.compare(code.own, query);
        if code.copied.is_empty() {
            return own;
        }
        let LabelCmp::Prefix(n) = own else {
            return own;
        };
        let ((sym, len), rest) = self.skip(code.copied, code.skip);
        if let Some(order) = compare_symbol(sym, len, &query[n..]) {
            return order;
        }
        match self.compare(rest, &query[n + len..]) {
            LabelCmp::Prefix(m) => LabelCmp::Prefix(n + len + m),
            order => order,
        }
    }

    /// Appends a stored label (see [`Code`]) to `out`.
    #[inline(always)]
    pub(crate) fn decode_label(&self, code: &Code<'_>, out: &mut Vec<u8>) {
        self.decode(code.own, out);
        if !code.copied.is_empty() {
            let ((sym, len), rest) = self.skip(code.copied, code.skip);
            out.extend_from_slice(&sym.to_le_bytes()[..len]);
            self.decode(rest, out);
        }
    }
}

/// Compares symbol `sym` of `len` bytes with the start of `rest`: `None`
/// when `rest` starts with it.
#[inline(always)]
fn compare_symbol(sym: u64, len: usize, rest: &[u8]) -> Option<LabelCmp> {
    let q = le::u64_padded(rest);
    let diff = (q ^ sym) & low_mask(len.min(rest.len()));
    if diff != 0 {
        let at = diff.trailing_zeros() / 8;
        return Some(if (sym >> (8 * at)) as u8 > (q >> (8 * at)) as u8 {
            LabelCmp::Greater
        } else {
            LabelCmp::Less
        });
    }
    (rest.len() < len).then_some(LabelCmp::Greater)
}

/// [`Symbols::compare`] for labels stored raw.
#[inline(always)]
pub(crate) fn compare_raw(label: &[u8], query: &[u8]) -> LabelCmp {
    let n = label.len().min(query.len());
    match label[..n].iter().zip(&query[..n]).position(|(a, b)| a != b) {
        Some(i) if label[i] < query[i] => LabelCmp::Less,
        Some(_) => LabelCmp::Greater,
        None if label.len() > query.len() => LabelCmp::Greater,
        None => LabelCmp::Prefix(label.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip(labels: &[Vec<u8>]) {
        let table = SymbolTable::train(labels.iter().map(Vec::as_slice));
        let mut words = Vec::new();
        table.write(&mut words);
        let mut r = WordReader::new(&words, 0);
        let syms = Symbols::read(&mut r).unwrap();
        for label in labels {
            let mut code = Vec::new();
            table.encode(label, &mut code);
            let mut back = Vec::new();
            syms.decode(&code, &mut back);
            assert_eq!(&back, label);
            assert_eq!(syms.compare(&code, label), LabelCmp::Prefix(label.len()));
            let mut longer = label.clone();
            longer.push(7);
            assert_eq!(syms.compare(&code, &longer), LabelCmp::Prefix(label.len()));
            if !label.is_empty() {
                assert_eq!(
                    syms.compare(&code, &label[..label.len() - 1]),
                    LabelCmp::Greater
                );
            }
        }
    }

    #[test]
    fn text_labels_compress_and_roundtrip() {
        let labels: Vec<Vec<u8>> = (0..3000)
            .map(|i| {
                format!("libpackage-{}-dev/1.{}.{}-{}", i % 97, i % 13, i % 7, i % 3).into_bytes()
            })
            .collect();
        let table = SymbolTable::train(labels.iter().map(Vec::as_slice));
        assert_eq!(table.mode, Mode::Symbols);
        let mut code = Vec::new();
        for l in &labels {
            table.encode(l, &mut code);
        }
        let raw: usize = labels.iter().map(Vec::len).sum();
        assert!(code.len() * 2 < raw, "{} vs {raw}", code.len());
        roundtrip(&labels);
    }

    /// The greedy parse by definition: at each position the longest
    /// symbol the rest starts with (the lowest code among equal ones),
    /// else an escape.
    fn greedy_by_scan(symbols: &[(u64, u8)], mut input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        while !input.is_empty() {
            let best = symbols
                .iter()
                .enumerate()
                .filter(|(_, &(sym, len))| {
                    let len = usize::from(len);
                    len > 0 && len <= input.len() && sym.to_le_bytes()[..len] == input[..len]
                })
                .min_by_key(|(c, &(_, len))| (std::cmp::Reverse(len), *c));
            match best {
                Some((c, &(_, len))) => {
                    out.push(c as u8);
                    input = &input[usize::from(len)..];
                }
                None => {
                    out.extend([ESCAPE, input[0]]);
                    input = &input[1..];
                }
            }
        }
        out
    }

    fn symbol(bytes: &[u8]) -> (u64, u8) {
        (le::u64_padded(bytes), bytes.len() as u8)
    }

    #[test]
    fn runs_whose_prefixes_share_a_slot_are_both_found() {
        // Two first-two-byte prefixes whose runs hash to the same slot.
        let slot = pair_slot(u16::from_le_bytes(*b"ab"));
        let other = (0..=u16::MAX)
            .find(|&p| p != u16::from_le_bytes(*b"ab") && pair_slot(p) == slot)
            .unwrap()
            .to_le_bytes();
        let symbols = [
            symbol(b"ab"),
            symbol(&[other[0], other[1], b'x']),
            symbol(b"abcd"),
            symbol(b"abc"),
            symbol(b"a"),
            symbol(&other),
            symbol(b"abcd"),
        ];
        let table = SymbolTable::from_symbols(Mode::Symbols, &symbols);
        let mut input = b"abcdabcaba".to_vec();
        input.extend_from_slice(&other);
        input.push(b'x');
        input.extend_from_slice(&other);
        input.push(b'z');
        let mut code = Vec::new();
        table.encode(&input, &mut code);
        assert_eq!(code, [2, 3, 0, 4, 1, 5, ESCAPE, b'z']);
        assert_eq!(code, greedy_by_scan(&symbols, &input));
    }

    proptest! {
        #[test]
        fn encode_is_the_greedy_longest_match(
            symbols in proptest::collection::vec(proptest::collection::vec(0u8..4, 1..9), 0..255),
            input in proptest::collection::vec(0u8..5, 0..60),
        ) {
            let symbols: Vec<(u64, u8)> = symbols.iter().map(|s| symbol(s)).collect();
            let table = SymbolTable::from_symbols(Mode::Symbols, &symbols);
            let mut code = Vec::new();
            table.encode(&input, &mut code);
            prop_assert_eq!(code, greedy_by_scan(&symbols, &input));
        }

        #[test]
        fn arbitrary_labels_roundtrip(labels in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..60)) {
            roundtrip(&labels);
        }

        #[test]
        fn compare_agrees_with_slices(label in proptest::collection::vec(0u8..4, 0..20), query in proptest::collection::vec(0u8..4, 0..20)) {
            let labels = [label.clone(), vec![0, 1, 2, 3, 0, 1, 2, 3], vec![1, 1, 1, 1]];
            let table = SymbolTable::train(labels.iter().map(Vec::as_slice));
            let mut words = Vec::new();
            table.write(&mut words);
            let mut r = WordReader::new(&words, 0);
            let syms = Symbols::read(&mut r).unwrap();
            let mut code = Vec::new();
            table.encode(&label, &mut code);
            prop_assert_eq!(syms.compare(&code, &query), compare_raw(&label, &query));
        }
    }
}
