//! Builds a record store from records in id order, streaming.
//!
//! Two passes over the input (the caller supplies a function that restarts
//! it): the first counts records, fingerprints them and keeps an evenly
//! strided sample of at most [`Options::sample_bytes`]; half the sample is
//! dictionary material, the other half held out to train codes and judge
//! codecs; the second pass encodes each record, writes it straight to the
//! output, and checks the input fingerprints the same.
//!
//! Memory bound: the sample (default 16 MiB), the global dictionary (at
//! most half the sample and a sixteenth of the input, plus up to a quarter
//! of that, at most 1 MiB, of copied hot bytes) and its hash
//! chains (4 bytes per dictionary byte and 16 MiB of heads), the zstd
//! dictionary, 8 bytes per record for the offsets, and one encoded record:
//! about 70 MiB at the defaults plus 8 bytes per record, whatever the size
//! of the input.

use std::io::Write;

use crate::checksums::GroupSums;
use crate::error::{Error, Result};
use crate::fixed::{Layout, Survey};
use crate::format::{group_flags, Codec, Footer, VERSION};
use crate::global::{self, Effort};
use crate::offsets::write_offsets;
use crate::zstd_codec::Encoder;

/// Which codec to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodecChoice {
    /// Try the codecs on held-out records of the sample and keep the
    /// smallest store (plain unless compression saves at least 10%).
    Auto,
    /// Force one codec. Plain, chosen or forced, becomes
    /// [`Codec::Fixed`] when every record has one length and some byte
    /// position is the same in all of them (it stores only the other
    /// bytes); forcing `Fixed` itself is an error.
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
    /// Target zstd dictionary size; default 112 KiB (zstd's default). The
    /// trained dictionary is also capped at a tenth of the sample.
    pub dict_bytes: usize,
    /// Largest dictionary of the [`Codec::Global`] codec, raw bytes drawn
    /// from the sample (at most half of it); default 8 MiB. It is held in
    /// memory, inflated, while the store is open.
    pub global_dict_bytes: usize,
    /// The global dictionary is also at most `1 / global_dict_divisor` of
    /// the input's bytes (0: no such cap); default 16. The dictionary is
    /// memory every open store holds, so it should grow with the data, the
    /// way an index does; measured on Debian (50 MB), 8 MiB compresses to
    /// 4.43x, 4 MiB to 4.29x, 2 MiB to 4.21x.
    pub global_dict_divisor: usize,
    /// Hash-chain candidates the global codec's parser examines per
    /// position; default 16. Higher finds a few more matches, slower
    /// (64: about 1% smaller, half the speed).
    pub global_depth: usize,
    /// How hard the global codec's parser searches when it encodes records
    /// with a trained model; default [`Effort::Fast`].
    pub effort: Effort,
    /// Largest sample kept for codec choice and training; default 16 MiB.
    pub sample_bytes: usize,
    /// Checksum the records, a crc32c per group of consecutive records
    /// (one record, or up to 64 small ones: `checksums.rs`), checked
    /// before a record is decoded; default true.
    pub record_checksums: bool,
    /// Threads training a global-codec model may use (the calling one
    /// included); default 1. The model does not depend on it.
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            codec: CodecChoice::Auto,
            zstd_level: 19,
            dict_bytes: 112 << 10,
            global_dict_bytes: 8 << 20,
            global_dict_divisor: 16,
            global_depth: global::DEFAULT_DEPTH,
            effort: Effort::default(),
            sample_bytes: 16 << 20,
            record_checksums: true,
            threads: 1,
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
    /// Dictionary or model section bytes (included in `store_bytes`).
    pub dict_bytes: u64,
    /// Records copied as stored from another store, not encoded
    /// ([`crate::SharedBuilder::push_encoded`]).
    pub copied: u64,
}

/// An evenly strided sample of a stream of records of unknown length:
/// keeps every `stride`-th record, doubling the stride (and halving the
/// sample) whenever it outgrows its budget. Records larger than the budget
/// are never kept. A sample holds copies of its records (`Sample`, made by
/// [`Sample::new`]) or whatever the caller hands [`Sample::offer_with`]
/// (such as `Cow` slices lent by a source that holds its records in
/// memory, which then need no copy): the records kept are the same.
#[derive(Debug)]
pub struct Sample<R = Vec<u8>> {
    records: Vec<R>,
    bytes: usize,
    stride: u64,
    budget: usize,
}

impl Sample {
    /// An empty sample of copies, of at most `budget` bytes.
    pub fn new(budget: usize) -> Self {
        Sample::with_budget(budget)
    }

    /// Offers record `index` of the stream (indexes increase by one); a
    /// record kept is copied.
    pub fn offer(&mut self, index: u64, record: &[u8]) {
        self.offer_with(index, record.len(), || record.to_vec());
    }
}

impl<R: AsRef<[u8]>> Sample<R> {
    /// An empty sample of at most `budget` bytes.
    pub fn with_budget(budget: usize) -> Self {
        Sample {
            records: Vec::new(),
            bytes: 0,
            stride: 1,
            budget: budget.max(1),
        }
    }

    /// Whether record `index` of the stream would be kept (so a caller can
    /// skip fetching the others).
    pub fn wants(&self, index: u64) -> bool {
        index % self.stride == 0
    }

    /// Offers record `index` of the stream (indexes increase by one), of
    /// `len` bytes: `record()` makes what the sample keeps, called only if
    /// it keeps it.
    pub fn offer_with(&mut self, index: u64, len: usize, record: impl FnOnce() -> R) {
        if !self.wants(index) || len > self.budget {
            return;
        }
        self.records.push(record());
        self.bytes += len;
        while self.bytes > self.budget && self.records.len() > 1 {
            let kept: Vec<R> = std::mem::take(&mut self.records)
                .into_iter()
                .step_by(2)
                .collect();
            self.bytes = kept.iter().map(|r| r.as_ref().len()).sum();
            self.records = kept;
            self.stride *= 2;
        }
    }

    fn split(&self) -> (Vec<&[u8]>, Vec<&[u8]>) {
        let records: Vec<&[u8]> = self.records.iter().map(AsRef::as_ref).collect();
        split_sample(&records)
    }

    /// The records kept, in stream order.
    pub fn records(&self) -> &[R] {
        &self.records
    }

    /// Bytes kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// Splits a sample into dictionary material (even positions) and held-out
/// records (odd positions), which train and judge codecs without seeing
/// themselves in the dictionary.
pub(crate) fn split_sample<'r>(records: &[&'r [u8]]) -> (Vec<&'r [u8]>, Vec<&'r [u8]>) {
    let mut dict = Vec::new();
    let mut held = Vec::new();
    for (i, r) in records.iter().enumerate() {
        if i % 2 == 0 { &mut dict } else { &mut held }.push(*r);
    }
    (dict, held)
}

/// At most `budget` bytes of `records`, evenly strided.
pub(crate) fn strided<'r>(records: &[&'r [u8]], budget: usize) -> Vec<&'r [u8]> {
    strided_split(records, budget).0
}

/// [`strided`], and the records it did not take (in order): a trial set
/// and the rest, disjoint, so a ratio measured on the trial is of records
/// nothing was trained or chosen on.
pub(crate) fn strided_split<'r>(
    records: &[&'r [u8]],
    budget: usize,
) -> (Vec<&'r [u8]>, Vec<&'r [u8]>) {
    let total: usize = records.iter().map(|r| r.len()).sum();
    let step = total.div_ceil(budget.max(1)).max(1);
    let (mut taken, mut rest) = (Vec::new(), Vec::new());
    let (mut bytes, mut full) = (0, false);
    for (i, r) in records.iter().enumerate() {
        // Every `step`-th record until the next would pass the budget.
        full = full || (i % step == 0 && bytes + r.len() > budget);
        if i % step == 0 && !full {
            bytes += r.len();
            taken.push(*r);
        } else {
            rest.push(*r);
        }
    }
    (taken, rest)
}

fn train_zstd_dictionary(material: &[&[u8]], options: &Options) -> Vec<u8> {
    let total: usize = material.iter().map(|r| r.len()).sum();
    let size = options.dict_bytes.min(total / 10);
    if size < 256 || material.len() < 8 {
        return Vec::new();
    }
    // Training fails on too little or too uniform data; no dictionary then.
    train_fastcover(material, size).unwrap_or_default()
}

/// zstd's dictionary trainer as `ZDICT_trainFromBuffer` runs it (fastCover,
/// d = 8, four steps of k), but with its hash table sized to the material.
/// The stock call fixes the table at 2^20 entries, about 10 MiB of memory
/// (measured with heaptrack) whatever the sample, which was most of the
/// memory of a small memtable's flush; here a 400 KiB sample trains with
/// under 1 MiB. `None` when zstd cannot train on the material.
pub(crate) fn train_fastcover(material: &[&[u8]], capacity: usize) -> Option<Vec<u8>> {
    use zstd::zstd_safe::zstd_sys;
    let total: usize = material.iter().map(|r| r.len()).sum();
    let mut flat = Vec::with_capacity(total);
    let mut sizes = Vec::with_capacity(material.len());
    for r in material {
        flat.extend_from_slice(r);
        sizes.push(r.len());
    }
    // One table entry per eight bytes of material, within zstd's limits.
    let f = (usize::BITS - total.leading_zeros())
        .saturating_sub(3)
        .clamp(12, 20);
    let mut params = zstd_sys::ZDICT_fastCover_params_t {
        k: 0,
        d: 8,
        f,
        steps: 4,
        nbThreads: 1,
        splitPoint: 0.0,
        accel: 1,
        shrinkDict: 0,
        shrinkDictMaxRegression: 0,
        zParams: zstd_sys::ZDICT_params_t {
            compressionLevel: 0,
            notificationLevel: 0,
            dictID: 0,
        },
    };
    let mut dict = vec![0u8; capacity];
    let count = u32::try_from(sizes.len()).ok()?;
    // SAFETY: `dict` is writable for `capacity` bytes; `flat` holds exactly
    // the sum of `sizes` bytes, and `sizes` has `count` entries; `params`
    // is a valid, exclusively borrowed parameter block. zstd reads and
    // writes nothing else and keeps no pointer after returning.
    let written = unsafe {
        zstd_sys::ZDICT_optimizeTrainFromBuffer_fastCover(
            dict.as_mut_ptr().cast(),
            capacity,
            flat.as_ptr().cast(),
            sizes.as_ptr(),
            count,
            &mut params,
        )
    };
    // SAFETY: a pure function of the returned code.
    if unsafe { zstd_sys::ZDICT_isError(written) } != 0 {
        return None;
    }
    dict.truncate(written);
    Some(dict)
}

/// Bytes of held-out records trial-encoded when choosing a codec.
pub(crate) const TRIAL_BYTES: usize = 1 << 20;

/// The trial's share of `held`: `budget`, or half the held-out bytes when
/// they are fewer than twice that, so codes are always trained on
/// something. (Taking all of a small sample left nothing: every symbol
/// escaped, and a 400-record load of the bundled sample stored at 1.76x
/// instead of 2.97x.)
pub(crate) fn trial_bytes(held: &[&[u8]], budget: usize) -> usize {
    let total: usize = held.iter().map(|r| r.len()).sum();
    budget.min(total / 2)
}

/// Bytes of held-out records the global codec's codes are trained on.
/// Measured with shared models (fast parse): 2 MiB against 4 MiB gives
/// 0.1% smaller stores on debian-packages and 0.2% larger on the bundled
/// sample, and trains in 0.60-0.64 s instead of 0.69-0.82 s on Debian.
pub(crate) const TRAINING_BYTES: usize = 2 << 20;

/// Held-out bytes whose matches decide which dictionary bytes a global
/// model keeps (`global::Encoder::train`).
pub(crate) const SURVEY_BYTES: usize = 8 << 20;

/// One codec made ready to encode: its encoder and its dictionary or model
/// section.
enum Prepared {
    Plain,
    Fixed(Layout),
    Zstd(Encoder, Vec<u8>),
    Global(Box<global::Encoder>, Vec<u8>),
}

impl Prepared {
    fn codec(&self) -> Codec {
        match self {
            Prepared::Plain => Codec::Plain,
            Prepared::Fixed(_) => Codec::Fixed,
            Prepared::Zstd(..) => Codec::ZstdDict,
            Prepared::Global(..) => Codec::Global,
        }
    }

    fn section(&self) -> &[u8] {
        match self {
            Prepared::Plain => &[],
            Prepared::Fixed(l) => l.section(),
            Prepared::Zstd(_, d) | Prepared::Global(_, d) => d,
        }
    }

    fn encode(&mut self, record: &[u8], out: &mut Vec<u8>) -> Result<()> {
        match self {
            Prepared::Plain => out.extend_from_slice(record),
            Prepared::Fixed(l) => l.encode(record, out),
            Prepared::Zstd(enc, _) => enc.encode(record, out)?,
            Prepared::Global(enc, _) => enc.encode(record, out),
        }
        Ok(())
    }

    /// Estimated store size for `raw_bytes` of input like `trial` (records
    /// no codec was trained on). The global dictionary's material records
    /// are not credited as nearly free: the model keeps only the parts of
    /// them that other records copy.
    fn estimate(&mut self, trial: &[&[u8]], raw_bytes: u64) -> Result<f64> {
        let (mut raw, mut encoded, mut out) = (0usize, 0usize, Vec::new());
        for r in trial {
            out.clear();
            self.encode(r, &mut out)?;
            raw += r.len();
            encoded += out.len();
        }
        let ratio = if encoded == 0 {
            1.0
        } else {
            raw as f64 / encoded as f64
        };
        Ok(raw_bytes as f64 / ratio + self.section().len() as f64)
    }
}

fn prepare(
    codec: Codec,
    dict_material: &[&[u8]],
    held: &[&[u8]],
    global_dict: &[u8],
    options: &Options,
) -> Result<Prepared> {
    Ok(match codec {
        Codec::Plain => Prepared::Plain,
        Codec::ZstdDict => {
            let dict = train_zstd_dictionary(dict_material, options);
            Prepared::Zstd(Encoder::new(&dict, options.zstd_level)?, dict)
        }
        Codec::Global => {
            let training = strided(held, TRAINING_BYTES);
            let enc = global::Encoder::train(
                global_dict,
                &training,
                &strided(held, SURVEY_BYTES),
                options.global_depth,
                options.threads,
                options.effort,
            );
            let model = enc.model_bytes(global::STORE_DICT_LEVEL)?;
            Prepared::Global(Box::new(enc), model)
        }
        Codec::Fixed => {
            return Err(Error::Codec(
                "the fixed codec is chosen from the records, in place of plain".into(),
            ))
        }
        Codec::Shared => {
            return Err(Error::Codec(
                "a shared-model store is built with SharedBuilder and its model".into(),
            ))
        }
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
    // Pass 1: count, measure, fingerprint, sample.
    let mut sample = Sample::new(options.sample_bytes);
    let mut first = Fingerprint::default();
    // Only a store that may end up plain needs to know whether its
    // records share bytes (the fixed codec replaces plain).
    let may_be_plain = matches!(
        options.codec,
        CodecChoice::Auto | CodecChoice::Force(Codec::Plain)
    );
    let mut survey = may_be_plain.then(Survey::default);
    for r in source() {
        let r = r.as_ref();
        sample.offer(first.records, r);
        first.add(r);
        if let Some(survey) = &mut survey {
            survey.add(r);
        }
    }
    let (dict_material, held) = sample.split();
    let mut dict_cap = options.global_dict_bytes.min(global::MAX_DICT);
    if options.global_dict_divisor > 0 {
        let share = first.raw_bytes / options.global_dict_divisor as u64;
        dict_cap = dict_cap.min(usize::try_from(share).unwrap_or(usize::MAX));
    }
    let global_dict: Vec<u8> = strided(&dict_material, dict_cap).concat();
    let mut prepared = match options.codec {
        CodecChoice::Force(codec) => prepare(codec, &dict_material, &held, &global_dict, options)?,
        CodecChoice::Auto => {
            let (trial, rest) = strided_split(&held, trial_bytes(&held, TRIAL_BYTES));
            let raw = first.raw_bytes;
            // Compression must save at least 10% to be worth decoding.
            let mut best = (0.9 * raw as f64, Prepared::Plain);
            for codec in [Codec::ZstdDict, Codec::Global] {
                let mut p = prepare(codec, &dict_material, &rest, &global_dict, options)?;
                let size = p.estimate(&trial, raw)?;
                if size < best.0 {
                    best = (size, p);
                }
            }
            best.1
        }
    };
    // Plain records of one length that share bytes at some positions
    // store only the others: never larger, and as fast to read.
    if let Prepared::Plain = prepared {
        if let Some(layout) = survey.take().and_then(|s| s.layout()) {
            prepared = Prepared::Fixed(layout);
        }
    }
    drop(survey);
    let codec = prepared.codec();
    let mut sums = options.record_checksums.then(GroupSums::new);

    // Pass 2: encode and write, checking the input is the same.
    let mut offsets = Vec::with_capacity(first.records as usize + 1);
    offsets.push(0u64);
    let mut buf = Vec::new();
    let mut pool_crc = 0u32;
    let mut second = Fingerprint::default();
    for r in source() {
        let r = r.as_ref();
        second.add(r);
        if second.records > first.records || second.max_record > first.max_record {
            return Err(Error::InputChanged);
        }
        buf.clear();
        prepared.encode(r, &mut buf)?;
        if let Some(sums) = &mut sums {
            sums.add(&buf);
        }
        pool_crc = crc32c::crc32c_append(pool_crc, &buf);
        out.write_all(&buf)?;
        offsets.push(out.written);
    }
    if second != first {
        return Err(Error::InputChanged);
    }
    drop(sample);
    finish_store(
        &mut out,
        Tail {
            codec,
            section: prepared.section(),
            offsets: &offsets,
            records: first.records,
            max_record: first.max_record,
            raw_bytes: first.raw_bytes,
            pool_crc,
            sums,
        },
    )
}

/// What a store's tail is made of, once its pool is written.
pub(crate) struct Tail<'a> {
    pub codec: Codec,
    /// The dictionary, model or model-reference section.
    pub section: &'a [u8],
    /// `records + 1` pool offsets.
    pub offsets: &'a [u64],
    pub records: u64,
    pub max_record: u64,
    pub raw_bytes: u64,
    /// crc32c of the pool written so far (padding not yet).
    pub pool_crc: u32,
    /// The records' group checksums, if they are checksummed.
    /// Dropped when every record is empty: nothing to check (an index's
    /// entries with no value).
    pub sums: Option<GroupSums>,
}

/// Pads the pool, writes the section, offsets (with the group checksums
/// after them) and footer, and flushes.
pub(crate) fn finish_store<W: Write>(
    out: &mut CountingWriter<W>,
    tail: Tail<'_>,
) -> Result<BuildStats> {
    let pool_len = out.written;
    let padding = &[0u8; 8][..(pool_len.next_multiple_of(8) - pool_len) as usize];
    let pool_crc = crc32c::crc32c_append(tail.pool_crc, padding);
    out.write_all(padding)?;
    let section = tail.section;
    let mut meta = section.to_vec();
    meta.resize(section.len().next_multiple_of(8), 0);
    let mut words = Vec::new();
    write_offsets(&mut words, tail.offsets);
    let sums = tail.sums.filter(|_| tail.max_record > 0);
    let group_log2 = sums.map(|sums| {
        let (log2, sum_words) = sums.finish();
        words.extend_from_slice(&sum_words);
        log2
    });
    meta.extend_from_slice(bytemuck::cast_slice(&words));
    out.write_all(&meta)?;
    let footer = Footer {
        version: VERSION,
        codec: tail.codec,
        records: tail.records,
        pool_len,
        dict_len: section.len() as u64,
        offsets_len: (words.len() * 8) as u64,
        max_record: tail.max_record,
        raw_bytes: tail.raw_bytes,
        pool_crc,
        meta_crc: crc32c::crc32c(&meta),
        flags: group_flags(group_log2),
    };
    out.write_all(&footer.encode())?;
    out.inner.flush()?;
    Ok(BuildStats {
        codec: tail.codec,
        records: tail.records,
        raw_bytes: tail.raw_bytes,
        store_bytes: out.written,
        dict_bytes: section.len() as u64,
        copied: 0,
    })
}

/// What each pass saw of the input, to detect a source that changed.
#[derive(Default, PartialEq, Eq)]
struct Fingerprint {
    records: u64,
    raw_bytes: u64,
    max_record: u64,
    /// crc32c over the records' own crc32c values.
    crcs: u32,
}

impl Fingerprint {
    /// Adds a record.
    fn add(&mut self, r: &[u8]) {
        let crc = crc32c::crc32c(r);
        self.records += 1;
        self.raw_bytes += r.len() as u64;
        self.max_record = self.max_record.max(r.len() as u64);
        self.crcs = crc32c::crc32c_append(self.crcs, &crc.to_le_bytes());
    }
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

/// A writer that counts what went through it.
pub(crate) struct CountingWriter<W> {
    pub inner: W,
    pub written: u64,
}

impl<W: Write> CountingWriter<W> {
    pub(crate) fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trial set and the rest are disjoint, in order, and together
    /// every record, also when records repeat the same bytes.
    #[test]
    fn strided_split_takes_a_trial_and_keeps_the_rest() {
        let bytes: Vec<Vec<u8>> = (0..100u8)
            .map(|i| vec![i % 7; 10 + usize::from(i % 3)])
            .collect();
        let records: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        let (trial, rest) = strided_split(&records, 200);
        assert_eq!(trial, strided(&records, 200));
        assert!(!trial.is_empty() && !rest.is_empty());
        assert_eq!(trial.len() + rest.len(), records.len());
        let is_in =
            |set: &[&[u8]], r: &[u8]| set.iter().any(|t| std::ptr::eq(t.as_ptr(), r.as_ptr()));
        for r in &records {
            assert!(is_in(&trial, r) != is_in(&rest, r));
        }
        let (all, none) = strided_split(&records, usize::MAX);
        assert_eq!((all.len(), none.len()), (100, 0));
    }
}
