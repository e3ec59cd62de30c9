//! The global-dictionary codec: our own, in the spirit of Terark's PA-Zip.
//!
//! A store-wide dictionary of raw record bytes (an even sample of the whole
//! input, megabytes rather than zstd's ~100 KiB) plus one set of static
//! Huffman codes trained on the whole input. Each record is a bit stream of
//! sequences, each a literal run and a match that copies either from the
//! dictionary or from earlier in the record:
//!
//! ```text
//! sequence := literal-length-code [extra] literal* match-length-code [extra]
//!             (source-code [extra])?          -- absent when the length code is END
//! ```
//!
//! * Literals are Huffman-coded with one of nine tables chosen by the class
//!   of the byte before (hex digit, letter, digit, space, newline, ...).
//! * A dictionary source is a signed delta from the *predicted* position:
//!   where the previous dictionary match of the record ended plus the
//!   literals since. A record that is a near copy of a dictionary record
//!   with substitutions costs a couple of bits per match.
//! * Local sources are distances back into the record, with a one-symbol
//!   repeat of the last distance.
//! * No per-record header or table: the record's extent comes from the
//!   store's offsets, the END code ends it, and the decoder checks it
//!   consumed exactly the record's bytes.
//!
//! Why our own codec and not zstd with a big dictionary: a zstd frame
//! carries its own entropy tables (or falls back to the dictionary's few
//! defaults) and codes offsets as absolute distances, so a megabytes-large
//! dictionary buys little; here the tables are global and dictionary
//! offsets relative to a prediction, which is where records from one store
//! resemble each other.
//!
//! The model section of the store (see `docs/format.md`) is
//! `"PZG1" | dict_len u32 | packed_len u32 | code lengths for the 12 tables
//! | the dictionary as one zstd frame`. The dictionary is kept compressed on
//! disk and inflated once at open.

mod decode;
mod matcher;
mod parse;
mod symbols;

use zstd::zstd_safe::{self, CParameter, DParameter};

use crate::bits::BitWriter;
use crate::error::{Error, Result};
use crate::huffman;
use parse::{Parser, Prices, Seq};
use symbols::{literal_len, match_len, source, CONTEXTS, CONTEXT_OF, START_CONTEXT};

pub(crate) use decode::Decoder;

/// Largest dictionary the format allows.
pub(crate) const MAX_DICT: usize = 1 << 30;
/// The most record bytes one byte of a record's encoding can yield (plus
/// one byte's worth per record): a sequence is at least 3 bits and copies
/// at most `MAX_MATCH` bytes.
pub(crate) const MAX_EXPANSION: u64 = 3 * symbols::MAX_MATCH;

const MAGIC: [u8; 4] = *b"PZG1";
/// Memory of the decode tables of an opened model.
pub(crate) const TABLE_BYTES: usize = TABLES * (2 << huffman::MAX_BITS);
/// Tables: literals per context, then literal lengths, match lengths, sources.
const TABLES: usize = CONTEXTS + 3;

/// Symbol counts, the input of the Huffman codes.
struct Counts {
    tables: Vec<Vec<u64>>,
}

impl Counts {
    fn new() -> Self {
        let mut tables = vec![vec![0u64; 256]; CONTEXTS];
        tables.push(vec![0; literal_len::SYMBOLS]);
        tables.push(vec![0; match_len::SYMBOLS]);
        tables.push(vec![0; source::SYMBOLS]);
        Counts { tables }
    }

    fn add(&mut self, rec: &[u8], seqs: &[Seq]) {
        for s in seqs {
            for p in s.lit_start..s.lit_start + s.lit_len {
                self.tables[literal_context(rec, p)][usize::from(rec[p])] += 1;
            }
            self.tables[CONTEXTS][literal_len::encode(s.lit_len as u64).symbol] += 1;
            if s.match_len == 0 {
                self.tables[CONTEXTS + 1][match_len::END] += 1;
            } else {
                self.tables[CONTEXTS + 1][match_len::encode(s.match_len).symbol] += 1;
                self.tables[CONTEXTS + 2][source::encode(s.source).symbol] += 1;
            }
        }
    }

    /// Code lengths. Every symbol gets a code (counts are smoothed by one),
    /// so any record can be encoded, not only those like the training ones.
    fn lengths(&self) -> Vec<Vec<u8>> {
        self.tables
            .iter()
            .map(|t| {
                let scaled: Vec<u64> = t.iter().map(|&c| c * 4 + 1).collect();
                huffman::code_lengths(&scaled)
            })
            .collect()
    }
}

#[inline]
fn literal_context(rec: &[u8], p: usize) -> usize {
    if p == 0 {
        usize::from(START_CONTEXT)
    } else {
        usize::from(CONTEXT_OF[usize::from(rec[p - 1])])
    }
}

fn prices_of(lengths: &[Vec<u8>], counts: &Counts) -> Prices {
    let (mut bits, mut n) = (0u64, 0u64);
    for (t, table) in lengths.iter().take(CONTEXTS).enumerate() {
        for (s, &l) in table.iter().enumerate() {
            bits += u64::from(l) * counts.tables[t][s];
            n += counts.tables[t][s];
        }
    }
    let as_f32 = |t: &Vec<u8>| t.iter().map(|&l| f32::from(l)).collect();
    Prices {
        literal: if n == 0 { 8.0 } else { bits as f32 / n as f32 },
        match_len: as_f32(&lengths[CONTEXTS + 1]),
        source: as_f32(&lengths[CONTEXTS + 2]),
    }
}

/// Encodes records against one dictionary with codes trained beforehand.
pub(crate) struct Encoder<'d> {
    parser: Parser<'d>,
    prices: Prices,
    lengths: Vec<Vec<u8>>,
    codes: Vec<huffman::Encoder>,
    seqs: Vec<Seq>,
}

/// Chain candidates examined per position by default.
pub(crate) const DEFAULT_DEPTH: usize = 32;

impl<'d> Encoder<'d> {
    /// Trains the codes on `training` (records that should not be in
    /// `dict`, or the statistics would see free copies): two rounds, the
    /// second parsing with the prices of the first's codes.
    pub(crate) fn train<R: AsRef<[u8]>>(dict: &'d [u8], training: &[R], depth: usize) -> Self {
        let mut parser = Parser::new(dict, depth);
        let mut prices = Prices::initial();
        let mut lengths = Counts::new().lengths();
        let mut seqs = Vec::new();
        for _round in 0..2 {
            let mut counts = Counts::new();
            for r in training {
                seqs.clear();
                parser.parse(r.as_ref(), &prices, &mut seqs);
                counts.add(r.as_ref(), &seqs);
            }
            lengths = counts.lengths();
            prices = prices_of(&lengths, &counts);
        }
        let codes = lengths.iter().map(|l| huffman::Encoder::new(l)).collect();
        Encoder {
            parser,
            prices,
            lengths,
            codes,
            seqs,
        }
    }

    /// Appends the encoding of `rec` to `out`.
    pub(crate) fn encode(&mut self, rec: &[u8], out: &mut Vec<u8>) {
        self.seqs.clear();
        self.parser.parse(rec, &self.prices, &mut self.seqs);
        let mut w = BitWriter::default();
        let put = |w: &mut BitWriter, code: &huffman::Encoder, c: symbols::Coded| {
            code.put(w, c.symbol);
            w.put_wide(c.extra, c.extra_bits);
        };
        for s in &self.seqs {
            put(&mut w, &self.codes[CONTEXTS], literal_len::encode(s.lit_len as u64));
            for p in s.lit_start..s.lit_start + s.lit_len {
                self.codes[literal_context(rec, p)].put(&mut w, usize::from(rec[p]));
            }
            if s.match_len == 0 {
                self.codes[CONTEXTS + 1].put(&mut w, match_len::END);
            } else {
                put(&mut w, &self.codes[CONTEXTS + 1], match_len::encode(s.match_len));
                put(&mut w, &self.codes[CONTEXTS + 2], source::encode(s.source));
            }
        }
        out.extend_from_slice(&w.finish());
    }

    /// The model section: header, code lengths, and the dictionary
    /// compressed as one zstd frame.
    pub(crate) fn model_bytes(&self) -> Result<Vec<u8>> {
        let dict = self.parser.dict();
        let packed = compress_dict(dict)?;
        let mut out = Vec::with_capacity(packed.len() + 1024);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        out.extend_from_slice(&(packed.len() as u32).to_le_bytes());
        for l in &self.lengths {
            huffman::write_lengths(&mut out, l);
        }
        out.extend_from_slice(&packed);
        Ok(out)
    }
}

fn zerr(code: usize) -> Error {
    Error::Zstd(zstd_safe::get_error_name(code).to_string())
}

fn compress_dict(dict: &[u8]) -> Result<Vec<u8>> {
    let mut cctx = zstd_safe::CCtx::create();
    let window = (usize::BITS - dict.len().max(1 << 10).leading_zeros()).clamp(10, 30);
    for p in [
        CParameter::CompressionLevel(19),
        CParameter::WindowLog(window),
        CParameter::EnableLongDistanceMatching(true),
    ] {
        cctx.set_parameter(p).map_err(zerr)?;
    }
    let mut out = Vec::with_capacity(zstd_safe::compress_bound(dict.len()));
    cctx.compress2(&mut out, dict).map_err(zerr)?;
    Ok(out)
}

/// Inflates the dictionary: exactly `len` bytes from exactly `packed`.
fn decompress_dict(packed: &[u8], len: usize) -> Result<Vec<u8>> {
    let mut dctx = zstd_safe::DCtx::create();
    dctx.set_parameter(DParameter::WindowLogMax(31))
        .map_err(zerr)?;
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| Error::Zstd(format!("cannot allocate a {len}-byte dictionary")))?;
    let n = dctx.decompress(&mut out, packed).map_err(zerr)?;
    if n != len {
        return Err(Error::Zstd(format!(
            "dictionary inflates to {n} bytes, the model says {len}"
        )));
    }
    Ok(out)
}

/// Parses a model section into its dictionary and code lengths.
fn read_model(bytes: &[u8]) -> std::result::Result<(Vec<u8>, Vec<Vec<u8>>), String> {
    if bytes.get(..4) != Some(&MAGIC[..]) {
        return Err("model section lacks its magic".into());
    }
    let u32_at = |at: usize| -> std::result::Result<usize, String> {
        let b = bytes.get(at..at + 4).ok_or("model header truncated")?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let (dict_len, packed_len) = (u32_at(4)?, u32_at(8)?);
    let mut at = 12;
    let mut lengths = Vec::with_capacity(TABLES);
    for t in 0..TABLES {
        let (l, used) = huffman::read_lengths(&bytes[at..])
            .ok_or_else(|| format!("code lengths of table {t} truncated"))?;
        let expected = match t {
            _ if t < CONTEXTS => 256,
            _ if t == CONTEXTS => literal_len::SYMBOLS,
            _ if t == CONTEXTS + 1 => match_len::SYMBOLS,
            _ => source::SYMBOLS,
        };
        if l.len() != expected {
            return Err(format!("table {t} has {} symbols, not {expected}", l.len()));
        }
        lengths.push(l);
        at += used;
    }
    if bytes.len() - at != packed_len {
        return Err(format!(
            "model holds {} dictionary bytes, its header says {packed_len}",
            bytes.len() - at
        ));
    }
    if dict_len > MAX_DICT || (dict_len as u64) > (packed_len as u64 + 1) * 32_768 {
        return Err(format!(
            "a {packed_len}-byte dictionary cannot inflate to {dict_len}"
        ));
    }
    let dict = decompress_dict(&bytes[at..], dict_len).map_err(|e| e.to_string())?;
    Ok((dict, lengths))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(dict: &[u8], training: &[&[u8]], records: &[&[u8]]) -> usize {
        let mut enc = Encoder::train(dict, training, DEFAULT_DEPTH);
        let model = enc.model_bytes().unwrap();
        let dec = Decoder::open(&model).unwrap();
        let mut total = 0;
        for r in records {
            let mut bytes = Vec::new();
            enc.encode(r, &mut bytes);
            total += bytes.len();
            let mut out = vec![1, 2, 3];
            dec.decode(&bytes, r.len() as u64, &mut out).unwrap();
            assert_eq!(&out, r);
        }
        total
    }

    #[test]
    fn records_roundtrip() {
        let dict = b"Package: libfoo1\nVersion: 1.2.3-1\nDepends: libc6 (>= 2.34)\n";
        let training: Vec<&[u8]> = vec![
            b"Package: libfoo2\nVersion: 1.2.4-1\nDepends: libc6 (>= 2.36)\n",
            b"Package: bar\nVersion: 0.1\n",
        ];
        let records: Vec<&[u8]> = vec![
            b"",
            b"a",
            b"Package: libfoo3\nVersion: 1.2.3-2\nDepends: libc6 (>= 2.34), libfoo-common\n",
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            &[0xFF, 0, 0x80, 7, 7, 7, 7, 7, 7, 7, 7, 7, 0xFE],
        ];
        roundtrip(dict, &training, &records);
        roundtrip(b"", &[], &records);
    }

    #[test]
    fn near_copies_of_dictionary_records_cost_little() {
        let dict: Vec<u8> = (0..200)
            .flat_map(|i| format!("Package: pkg{i}\nVersion: {i}.0\nMaintainer: Team {}\nDescription: tool number {i} of many, with a long text\n", i % 7).into_bytes())
            .collect();
        let rec = b"Package: pkg77\nVersion: 78.0\nMaintainer: Team 0\nDescription: tool number 77 of many, with a long text\n";
        let encoded = roundtrip(&dict, &[&rec[..]], &[&rec[..]]);
        assert!(encoded < rec.len() / 8, "{encoded} bytes for {}", rec.len());
    }
}
