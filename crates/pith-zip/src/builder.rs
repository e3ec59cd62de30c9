//! Builds a record store from records in id order, streaming.
//!
//! Two passes over the input (the caller supplies a function that restarts
//! it): the first counts records and keeps an evenly strided sample of at
//! most [`Options::sample_bytes`]; the codec is chosen and the dictionary
//! trained on that sample; the second pass encodes each record and writes it
//! straight to the output.
//!
//! Memory bound: the sample (default 16 MiB) + the dictionary + 8 bytes per
//! record for the offsets + one encoded record. It does not grow with the
//! size of the records.

use std::io::Write;

use crate::error::{Error, Result};
use crate::format::{Codec, Footer, FLAG_RECORD_CRC};
use crate::offsets::write_offsets;
use crate::zstd_codec::Encoder;

/// Which codec to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodecChoice {
    /// Try the codecs on the sample and keep the smallest (plain unless
    /// compression saves at least 10%).
    Auto,
    /// Force one codec.
    Force(Codec),
}

/// Build options. `Options::default()` is what the engine uses.
#[derive(Clone, Debug)]
pub struct Options {
    /// Codec selection; default [`CodecChoice::Auto`].
    pub codec: CodecChoice,
    /// zstd level for [`Codec::ZstdDict`]; default 19 (records are encoded
    /// once and read many times).
    pub zstd_level: i32,
    /// Target dictionary size; default 112 KiB (zstd's default). The trained
    /// dictionary is also capped at a tenth of the sample.
    pub dict_bytes: usize,
    /// Largest sample kept for codec choice and training; default 16 MiB.
    pub sample_bytes: usize,
    /// Store a crc32c of every decoded record after it; default true.
    pub record_checksums: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            codec: CodecChoice::Auto,
            zstd_level: 19,
            dict_bytes: 112 << 10,
            sample_bytes: 16 << 20,
            record_checksums: true,
        }
    }
}

/// What a build produced.
#[derive(Clone, Debug)]
pub struct BuildStats {
    /// Codec chosen.
    pub codec: Codec,
    /// Records written.
    pub records: u64,
    /// Sum of record lengths.
    pub raw_bytes: u64,
    /// Bytes written, all parts included.
    pub store_bytes: u64,
    /// Dictionary bytes (included in `store_bytes`).
    pub dict_bytes: u64,
}

/// An evenly strided sample: keeps every `stride`-th record, doubling the
/// stride (and halving the sample) whenever it outgrows its budget.
struct Sample {
    records: Vec<Vec<u8>>,
    bytes: usize,
    stride: u64,
    budget: usize,
}

impl Sample {
    fn offer(&mut self, index: u64, record: &[u8]) {
        if index % self.stride != 0 {
            return;
        }
        self.records.push(record.to_vec());
        self.bytes += record.len();
        while self.bytes > self.budget && self.records.len() > 1 {
            let kept: Vec<Vec<u8>> = std::mem::take(&mut self.records)
                .into_iter()
                .step_by(2)
                .collect();
            self.bytes = kept.iter().map(Vec::len).sum();
            self.records = kept;
            self.stride *= 2;
        }
    }
}

fn train_dictionary(sample: &[Vec<u8>], options: &Options) -> Vec<u8> {
    let total: usize = sample.iter().map(Vec::len).sum();
    let size = options.dict_bytes.min(total / 10);
    if size < 256 || sample.len() < 8 {
        return Vec::new();
    }
    // Training fails on too little or too uniform data; no dictionary then.
    zstd::dict::from_samples(sample, size).unwrap_or_default()
}

/// Bytes of the sample trial-encoded when choosing a codec.
const TRIAL_BYTES: usize = 1 << 20;

/// Compression ratio of zstd-dict on an evenly strided part (at most
/// [`TRIAL_BYTES`]) of the sample, counting frame overhead but not the
/// dictionary, which is shared by the whole store.
fn trial_ratio(sample: &[Vec<u8>], dict: &[u8], level: i32) -> Result<f64> {
    let total: usize = sample.iter().map(Vec::len).sum();
    let step = total.div_ceil(TRIAL_BYTES).max(1);
    let mut enc = Encoder::new(dict, level)?;
    let (mut raw, mut encoded, mut out) = (0usize, 0usize, Vec::new());
    for r in sample.iter().step_by(step) {
        out.clear();
        enc.encode(r, &mut out)?;
        raw += r.len();
        encoded += out.len();
    }
    Ok(if encoded == 0 {
        1.0
    } else {
        raw as f64 / encoded as f64
    })
}

/// Builds a store from `source()`, which must yield the same records, in id
/// order, each time it is called (it is called twice).
pub fn build<S, I, R, W>(mut source: S, options: &Options, out: W) -> Result<BuildStats>
where
    S: FnMut() -> I,
    I: IntoIterator<Item = R>,
    R: AsRef<[u8]>,
    W: Write,
{
    let mut out = CountingWriter {
        inner: out,
        written: 0,
    };
    // Pass 1: count, measure, sample.
    let mut sample = Sample {
        records: Vec::new(),
        bytes: 0,
        stride: 1,
        budget: options.sample_bytes.max(1),
    };
    let (mut records, mut raw_bytes, mut max_record) = (0u64, 0u64, 0u64);
    for r in source() {
        let r = r.as_ref();
        sample.offer(records, r);
        records += 1;
        raw_bytes += r.len() as u64;
        max_record = max_record.max(r.len() as u64);
    }
    let level = options.zstd_level;
    let (codec, dict) = match options.codec {
        CodecChoice::Force(Codec::Plain) => (Codec::Plain, Vec::new()),
        CodecChoice::Force(Codec::ZstdDict) => {
            (Codec::ZstdDict, train_dictionary(&sample.records, options))
        }
        CodecChoice::Auto => {
            let dict = train_dictionary(&sample.records, options);
            // Keep zstd when it saves at least 10% after paying for the
            // dictionary, judged against the whole input's size.
            let ratio = trial_ratio(&sample.records, &dict, level)?;
            let zstd_total = raw_bytes as f64 / ratio + dict.len() as f64;
            if zstd_total < 0.9 * raw_bytes as f64 {
                (Codec::ZstdDict, dict)
            } else {
                (Codec::Plain, Vec::new())
            }
        }
    };
    drop(sample);

    // Pass 2: encode and write.
    let mut encoder = match codec {
        Codec::ZstdDict => Some(Encoder::new(&dict, level)?),
        Codec::Plain => None,
    };
    let mut offsets = Vec::with_capacity(records as usize + 1);
    offsets.push(0u64);
    let mut buf = Vec::new();
    let mut pool_crc = 0u32;
    let mut seen = 0u64;
    for r in source() {
        let r = r.as_ref();
        seen += 1;
        if seen > records || r.len() as u64 > max_record {
            return Err(Error::InputChanged);
        }
        buf.clear();
        match encoder.as_mut() {
            Some(enc) => enc.encode(r, &mut buf)?,
            None => buf.extend_from_slice(r),
        }
        if options.record_checksums {
            buf.extend_from_slice(&crc32c::crc32c(r).to_le_bytes());
        }
        pool_crc = crc32c::crc32c_append(pool_crc, &buf);
        out.write_all(&buf)?;
        offsets.push(out.written);
    }
    if seen != records {
        return Err(Error::InputChanged);
    }
    let pool_len = out.written;
    let padding = &[0u8; 8][..(pool_len.next_multiple_of(8) - pool_len) as usize];
    pool_crc = crc32c::crc32c_append(pool_crc, padding);
    out.write_all(padding)?;
    let mut meta = dict.clone();
    meta.resize(dict.len().next_multiple_of(8), 0);
    let mut words = Vec::new();
    write_offsets(&mut words, &offsets);
    meta.extend_from_slice(bytemuck::cast_slice(&words));
    out.write_all(&meta)?;
    let footer = Footer {
        codec,
        records,
        pool_len,
        dict_len: dict.len() as u64,
        offsets_len: (words.len() * 8) as u64,
        max_record,
        raw_bytes,
        pool_crc,
        meta_crc: crc32c::crc32c(&meta),
        flags: if options.record_checksums {
            FLAG_RECORD_CRC
        } else {
            0
        },
    };
    out.write_all(&footer.encode())?;
    out.inner.flush()?;
    Ok(BuildStats {
        codec,
        records,
        raw_bytes,
        store_bytes: out.written,
        dict_bytes: dict.len() as u64,
    })
}

/// Builds a store in memory from a slice of records.
pub fn build_to_vec<R: AsRef<[u8]>>(
    records: &[R],
    options: &Options,
) -> Result<(Vec<u8>, BuildStats)> {
    let mut out = Vec::new();
    let stats = build(|| records.iter(), options, &mut out)?;
    Ok((out, stats))
}

struct CountingWriter<W> {
    inner: W,
    written: u64,
}

impl<W: Write> CountingWriter<W> {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }
}
