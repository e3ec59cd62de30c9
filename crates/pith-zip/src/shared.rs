//! Stores encoded with a shared [`Model`] ([`Codec::Shared`]): built in
//! one pass, without training, and able to take records already encoded
//! with the same model as they are.
//!
//! Such a store's dictionary section is a 16-byte reference to its model,
//! `id u64 | fingerprint u32 | reserved u32 (0)`, and each record is
//!
//! ```text
//! varint(len << 1 | plain) | payload
//! ```
//!
//! (store format version 1 followed it with the crc32c of the decoded
//! record; version 2 checksums groups of records instead, after the
//! offsets) where `len` is the decoded length and `payload` is the global
//! codec's encoding, or, when `plain` is set, the record itself: a record
//! the model does not shrink is stored as it is, so incompressible data
//! costs its size plus a byte or two. The header makes a record
//! self-describing: a merge copies it, decoded length included, without
//! decoding (the source store checks its group's checksum before handing
//! it out, and the new store sums it into a group of its own).

use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pith_enc::{le, varint};

use crate::builder::{finish_store, BuildStats, CountingWriter, Options, Tail};
use crate::checksums::GroupSums;
use crate::error::{Error, Result};
use crate::format::Codec;
use crate::global;
use crate::model::{Model, ModelRef};
use crate::threads::on_threads;

/// Raw bytes a build hands [`SharedBuilder::push_many`] at once, per
/// thread: enough that splitting them costs little, few enough that a
/// build's memory stays small (the engine's segment builds, and `pith
/// bench zip` measuring them, batch by it).
pub const BATCH_BYTES_PER_THREAD: usize = 2 << 20;

/// Bytes of the model-reference section.
pub(crate) const REF_BYTES: usize = 16;

pub(crate) fn ref_section(r: ModelRef) -> [u8; REF_BYTES] {
    let mut b = [0u8; REF_BYTES];
    b[..8].copy_from_slice(&r.id.to_le_bytes());
    b[8..12].copy_from_slice(&r.fingerprint.to_le_bytes());
    b
}

/// The reference in a model-reference section, if it is one.
pub(crate) fn read_ref_section(b: &[u8]) -> Option<ModelRef> {
    let b = b
        .first_chunk::<REF_BYTES>()
        .filter(|_| b.len() == REF_BYTES)?;
    (le::u32_in(b, 12) == 0).then(|| ModelRef {
        id: le::u64_in(b, 0),
        fingerprint: le::u32_in(b, 8),
    })
}

/// A stored record taken apart.
pub(crate) struct Framed<'a> {
    /// Decoded length.
    pub len: u64,
    pub plain: bool,
    pub payload: &'a [u8],
    pub crc: Option<u32>,
}

/// Takes a stored record apart; `max` bounds the decoded length.
pub(crate) fn unframe(stored: &[u8], checksummed: bool, max: u64) -> Result<Framed<'_>, String> {
    let (head, rest) = varint::get(stored).ok_or("record header truncated")?;
    let (len, plain) = (head >> 1, head & 1 == 1);
    if len > max {
        return Err(format!(
            "record of {len} bytes exceeds the store's largest ({max})"
        ));
    }
    let (payload, crc) = if checksummed {
        let at = rest
            .len()
            .checked_sub(4)
            .ok_or("record checksum truncated")?;
        (&rest[..at], le::u32_at(rest, at))
    } else {
        (rest, None)
    };
    if plain && payload.len() as u64 != len {
        return Err(format!(
            "plain record of {len} bytes stored in {}",
            payload.len()
        ));
    }
    Ok(Framed {
        len,
        plain,
        payload,
        crc,
    })
}

/// A record's stored bytes, as [`crate::Store::encoded`] hands them out
/// for [`SharedBuilder::push_encoded`].
#[derive(Clone, Copy, Debug)]
pub struct Encoded<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) raw_len: u64,
    pub(crate) model: ModelRef,
}

impl Encoded<'_> {
    /// Stored bytes, header included.
    pub fn stored_len(&self) -> usize {
        self.bytes.len()
    }

    /// Decoded length.
    pub fn raw_len(&self) -> u64 {
        self.raw_len
    }

    /// The model it is encoded with.
    pub fn model(&self) -> ModelRef {
        self.model
    }
}

/// Builds a store encoded with a shared model, in one pass over records
/// in id order. Memory: one encoded record (with
/// [`SharedBuilder::push_many`], the encodings of the records it is given)
/// and 8 bytes per record, plus the model's matcher index (shared, built
/// on the model's first encode).
pub struct SharedBuilder<W: Write> {
    model: Arc<Model>,
    encoder: global::Encoder,
    /// Encoders of the helper threads of [`SharedBuilder::push_many`],
    /// made on first use.
    helpers: Vec<global::Encoder>,
    /// How the encoders parse.
    options: Options,
    out: CountingWriter<W>,
    offsets: Vec<u64>,
    pool_crc: u32,
    raw_bytes: u64,
    max_record: u64,
    sums: Option<GroupSums>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    copied: u64,
}

impl<W: Write> SharedBuilder<W> {
    /// A builder writing to `out`; of `options` it uses
    /// [`Options::record_checksums`], [`Options::effort`] and
    /// [`Options::global_depth`].
    pub fn new(model: Arc<Model>, options: &Options, out: W) -> Self {
        SharedBuilder {
            encoder: model.encoder(options),
            helpers: Vec::new(),
            options: options.clone(),
            model,
            out: CountingWriter {
                inner: out,
                written: 0,
            },
            offsets: vec![0],
            pool_crc: 0,
            raw_bytes: 0,
            max_record: 0,
            sums: options.record_checksums.then(GroupSums::new),
            buf: Vec::new(),
            scratch: Vec::new(),
            copied: 0,
        }
    }

    /// Encodes and appends the next record.
    pub fn push(&mut self, record: &[u8]) -> Result<()> {
        self.buf.clear();
        frame(&mut self.encoder, record, &mut self.scratch, &mut self.buf);
        let buf = std::mem::take(&mut self.buf);
        let written = self.append(&buf, record.len() as u64);
        self.buf = buf;
        written
    }

    /// Encodes and appends `records` in order, splitting the encoding
    /// across up to `threads` threads (the calling one included); hand it
    /// about [`BATCH_BYTES_PER_THREAD`] raw bytes per thread at a time. The
    /// records are cut into contiguous chunks of about equal bytes, several
    /// per thread, and each thread takes the next chunk nobody has taken
    /// until none is left: records of equal bytes do not take equal time
    /// (one fixed part per thread left the faster thread idle for a fifth
    /// of each batch on Debian records), so a thread that finishes early
    /// takes more chunks instead of waiting. The output is the same bytes
    /// as pushing them one by one.
    pub fn push_many<R: AsRef<[u8]> + Sync>(
        &mut self,
        records: &[R],
        threads: usize,
    ) -> Result<()> {
        let total: usize = records.iter().map(|r| r.as_ref().len()).sum();
        // Below this a thread costs more than it saves.
        const MIN_PART: usize = 64 << 10;
        // Chunks per thread: the most a thread waits for the others at the
        // end is about one chunk's time.
        const CHUNKS_PER_THREAD: usize = 8;
        // Smallest chunk: below this, claiming and concatenating chunks
        // costs more than their imbalance.
        const MIN_CHUNK: usize = 16 << 10;
        let threads = threads
            .clamp(1, (total / MIN_PART).max(1))
            .min(records.len().max(1));
        if threads <= 1 {
            for r in records {
                self.push(r.as_ref())?;
            }
            return Ok(());
        }
        while self.helpers.len() < threads - 1 {
            self.helpers.push(self.model.encoder(&self.options));
        }
        let chunk_bytes = (total / (threads * CHUNKS_PER_THREAD)).max(MIN_CHUNK);
        let chunks = chunk_bounds(records, chunk_bytes);
        let next = AtomicUsize::new(0);
        // Each thread: (chunk index, its framed records, their ends).
        let claim_chunks = |encoder: &mut global::Encoder| {
            let mut done = Vec::new();
            let mut scratch = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(range) = chunks.get(i) else {
                    return done;
                };
                let (mut out, mut ends) = (Vec::new(), Vec::new());
                for r in &records[range.clone()] {
                    frame(encoder, r.as_ref(), &mut scratch, &mut out);
                    ends.push(out.len());
                }
                done.push((i, out, ends));
            }
        };
        let encoders: Vec<&mut global::Encoder> = std::iter::once(&mut self.encoder)
            .chain(self.helpers.iter_mut())
            .take(threads)
            .collect();
        let mut encoded: Vec<_> = on_threads(encoders, claim_chunks)
            .into_iter()
            .flatten()
            .collect();
        encoded.sort_unstable_by_key(|(i, _, _)| *i);
        for ((_, out, ends), range) in encoded.iter().zip(&chunks) {
            let mut start = 0;
            for (&end, r) in ends.iter().zip(&records[range.clone()]) {
                self.append(&out[start..end], r.as_ref().len() as u64)?;
                start = end;
            }
        }
        Ok(())
    }

    /// Appends a record taken from another store as it is stored, without
    /// decoding it. Fails (and appends nothing) when that store used
    /// another model: push the decoded record then.
    pub fn push_encoded(&mut self, record: &Encoded<'_>) -> Result<()> {
        if record.model != self.model.reference() {
            return Err(Error::ModelMismatch {
                expected: self.model.reference(),
                found: record.model,
            });
        }
        self.copied += 1;
        self.append(record.bytes, record.raw_len)
    }

    fn append(&mut self, stored: &[u8], raw_len: u64) -> Result<()> {
        self.pool_crc = crc32c::crc32c_append(self.pool_crc, stored);
        if let Some(sums) = &mut self.sums {
            sums.add(stored);
        }
        self.out.write_all(stored)?;
        self.offsets.push(self.out.written);
        self.raw_bytes += raw_len;
        self.max_record = self.max_record.max(raw_len);
        Ok(())
    }

    /// Records appended so far.
    pub fn records(&self) -> u64 {
        self.offsets.len() as u64 - 1
    }

    /// Records appended by [`SharedBuilder::push_encoded`].
    pub fn copied(&self) -> u64 {
        self.copied
    }

    /// Writes the tail (reference, offsets, footer) and flushes.
    pub fn finish(mut self) -> Result<BuildStats> {
        let section = ref_section(self.model.reference());
        let records = self.records();
        let copied = self.copied;
        let stats = finish_store(
            &mut self.out,
            Tail {
                codec: Codec::Shared,
                section: &section,
                offsets: &self.offsets,
                records,
                max_record: self.max_record,
                raw_bytes: self.raw_bytes,
                pool_crc: self.pool_crc,
                sums: self.sums.take(),
            },
        )?;
        Ok(BuildStats { copied, ..stats })
    }
}

/// `records` cut into contiguous ranges of at least `chunk_bytes` bytes
/// each (the last may be shorter), in order, covering every record.
pub(crate) fn chunk_bounds<R: AsRef<[u8]>>(records: &[R], chunk_bytes: usize) -> Vec<Range<usize>> {
    let mut chunks = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, r) in records.iter().enumerate() {
        bytes += r.as_ref().len();
        if bytes >= chunk_bytes {
            chunks.push(start..i + 1);
            (start, bytes) = (i + 1, 0);
        }
    }
    if start < records.len() {
        chunks.push(start..records.len());
    }
    chunks
}

/// Appends `record` to `out` as a store keeps it: header, then payload
/// (the encoding, or the record when that is no smaller).
fn frame(encoder: &mut global::Encoder, record: &[u8], scratch: &mut Vec<u8>, out: &mut Vec<u8>) {
    scratch.clear();
    encoder.encode(record, scratch);
    let plain = scratch.len() >= record.len();
    varint::put(out, ((record.len() as u64) << 1) | u64::from(plain));
    out.extend_from_slice(if plain { record } else { scratch });
}

/// A one-record store whose record is stored as `stored` (any bytes),
/// claiming a decoded length of up to 64 KiB: for fuzzing the record
/// parser and decoder behind a valid tail.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn store_with_record(model: &Arc<Model>, stored: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut b = SharedBuilder::new(model.clone(), &Options::default(), &mut out);
    // Writing to memory cannot fail.
    let _ = b.append(stored, 1 << 16);
    let _ = b.finish();
    out
}
