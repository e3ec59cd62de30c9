//! The read side: open a store from bytes and decode records by id.
//!
//! [`Store::open`] checks the footer (magic, version, crc32c), that the
//! sections exactly fill the bytes, the metadata crc32c over the dictionary,
//! offsets and group checksums, and that the offsets start at 0, never
//! decrease and end at the pool length. That is O(records), not O(bytes):
//! the pool is checked as records are read (version 2: the crc32c of the
//! stored bytes of the record's group, before it is decoded; version 1:
//! the crc32c of each decoded record, after), and [`Store::verify`]
//! checks all of it.
//!
//! Thread safety: a `Store` is `Send + Sync`; `get` may be called from many
//! threads at once (each thread keeps its own zstd context).

use std::sync::Arc;

use pith_enc::le;

use crate::checksums::{self, Sums};
use crate::error::{Error, Result};
use crate::fixed::Layout;
use crate::format::{pad8, Codec, Footer, FOOTER_BYTES, MAX_EXPANSION};
use crate::global;
use crate::model::{Model, ModelRef};
use crate::offsets::Offsets;
use crate::shared::{self, Encoded};
use crate::zstd_codec;

/// How records are decoded.
enum Decoder {
    Plain,
    Fixed(Layout),
    Zstd(zstd_codec::Decoder),
    Global(global::Decoder),
    Shared(Arc<Model>),
}

/// An opened record store over borrowed bytes.
pub struct Store<'a> {
    footer: Footer,
    pool: &'a [u8],
    /// The pool with its zero padding, as the pool checksum covers it.
    padded_pool: &'a [u8],
    offsets: Offsets<'a>,
    /// Version 2's group checksums, if the records are checksummed.
    sums: Option<Sums<'a>>,
    decoder: Decoder,
    dict_len: usize,
    size: usize,
}

impl std::fmt::Debug for Store<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("codec", &self.footer.codec)
            .field("records", &self.footer.records)
            .finish()
    }
}

impl<'a> Store<'a> {
    /// Opens a store. `bytes` must be 8-byte aligned (mmap is). A store
    /// encoded with a shared model fails with [`Error::ModelRequired`]:
    /// open it with [`Store::open_with_model`].
    pub fn open(bytes: &'a [u8]) -> Result<Self> {
        Store::open_with_model(bytes, None)
    }

    /// The shared model a store's bytes say they need, if any; checks the
    /// footer and the section sizes only ([`Store::open_with_model`]
    /// checks the rest).
    pub fn required_model(bytes: &[u8]) -> Result<Option<ModelRef>> {
        let f = Footer::decode(bytes)?;
        if f.codec != Codec::Shared {
            return Ok(None);
        }
        let at = pad8(f.pool_len).and_then(|p| usize::try_from(p).ok());
        let section = at
            .and_then(|at| Some(at..at.checked_add(usize::try_from(f.dict_len).ok()?)?))
            .and_then(|r| bytes.get(r))
            .and_then(shared::read_ref_section);
        section.map(Some).ok_or_else(|| Error::Corrupt {
            offset: bytes.len() as u64,
            detail: "the shared-model reference is misplaced or malformed".into(),
        })
    }

    /// Where the record offsets lie in `bytes`, from the footer alone (no
    /// other check: [`Store::open_with_offsets`] makes them), so a reader
    /// can keep a copy of them in memory.
    pub fn offsets_range(bytes: &[u8]) -> Result<std::ops::Range<usize>> {
        let f = Footer::decode(bytes)?;
        let body = bytes.len() - FOOTER_BYTES;
        let start = usize::try_from(f.offsets_len)
            .ok()
            .and_then(|len| body.checked_sub(len))
            .ok_or_else(|| Error::Corrupt {
                offset: body as u64,
                detail: format!("{} bytes of offsets in a {body}-byte store", f.offsets_len),
            })?;
        Ok(start..body)
    }

    /// Opens a store; `model` is the shared model it was encoded with, if
    /// it was ([`Store::required_model`] says which), and is ignored for
    /// stores that carry their own.
    pub fn open_with_model(bytes: &'a [u8], model: Option<Arc<Model>>) -> Result<Self> {
        Store::open_with_offsets(bytes, model, None)
    }

    /// [`Store::open_with_model`], reading the record offsets from
    /// `offsets`, a copy of `bytes[Store::offsets_range(bytes)]` (8-byte
    /// aligned) the caller keeps in memory, instead of from `bytes`: a
    /// lookup then reads `bytes` only for its record. The copy is checked
    /// as the offsets in `bytes` would be (the metadata checksum covers
    /// it).
    pub fn open_with_offsets(
        bytes: &'a [u8],
        model: Option<Arc<Model>>,
        offsets: Option<&'a [u8]>,
    ) -> Result<Self> {
        if bytes.as_ptr().align_offset(8) != 0 {
            return Err(Error::Misaligned);
        }
        let f = Footer::decode(bytes)?;
        let body = (bytes.len() - FOOTER_BYTES) as u64;
        let corrupt = |offset: u64, detail: String| Error::Corrupt { offset, detail };
        let (pool_end, dict_end) = match (pad8(f.pool_len), pad8(f.dict_len)) {
            (Some(p), Some(d)) => (p, d),
            _ => return Err(corrupt(body + 24, "section sizes overflow".into())),
        };
        let need = pool_end
            .checked_add(dict_end)
            .and_then(|n| n.checked_add(f.offsets_len))
            .filter(|_| f.offsets_len % 8 == 0);
        if need != Some(body) {
            return Err(corrupt(
                body,
                format!(
                    "section sizes (pool {}, dictionary {}, offsets {}) do not fill the {body} bytes before the footer",
                    f.pool_len, f.dict_len, f.offsets_len
                ),
            ));
        }
        if f.max_record > f.raw_bytes {
            return Err(corrupt(
                body + 48,
                "largest record exceeds the total record bytes".into(),
            ));
        }
        // No codec expands a byte of pool into more than its expansion
        // bound; a footer claiming more is corrupt (this bounds what a
        // crafted file can make a reader allocate).
        let crc_bytes = if f.record_crc() {
            f.records.saturating_mul(4)
        } else {
            0
        };
        let payload_bytes = f.pool_len.saturating_sub(crc_bytes);
        let plausible = match f.codec {
            Codec::Plain => f.raw_bytes == payload_bytes && crc_bytes <= f.pool_len,
            // Checked against the section once it is read.
            Codec::Fixed => true,
            _ => {
                f.raw_bytes
                    <= payload_bytes
                        .saturating_add(f.records)
                        .saturating_mul(MAX_EXPANSION)
            }
        };
        if !plausible {
            return Err(corrupt(
                body + 56,
                format!(
                    "{} record bytes cannot come from a {}-byte pool",
                    f.raw_bytes, f.pool_len
                ),
            ));
        }
        let pool_end = pool_end as usize;
        let offsets_start = pool_end + dict_end as usize;
        let (padded_dict, offset_bytes) = (
            &bytes[pool_end..offsets_start],
            offsets.unwrap_or(&bytes[offsets_start..body as usize]),
        );
        if offset_bytes.len() as u64 != f.offsets_len {
            return Err(corrupt(
                offsets_start as u64,
                format!(
                    "a copy of {} bytes of offsets where the store has {}",
                    offset_bytes.len(),
                    f.offsets_len
                ),
            ));
        }
        let computed = crc32c::crc32c_append(crc32c::crc32c(padded_dict), offset_bytes);
        if computed != f.meta_crc {
            return Err(Error::ChecksumMismatch {
                region: "metadata".into(),
                stored: f.meta_crc,
                computed,
            });
        }
        let dict = &padded_dict[..f.dict_len as usize];
        let words: &[u64] =
            bytemuck::try_cast_slice(offset_bytes).map_err(|_| Error::Misaligned)?;
        let offsets_at = (pool_end as u64) + dict_end;
        let (offsets, used) = Offsets::read(words, offsets_at, f.version)?;
        let bad = |detail: String| Error::Corrupt {
            offset: offsets_at,
            detail,
        };
        let sum_words = &words[used..];
        let want = match f.group_log2() {
            Some(log2) => checksums::words_for(f.records, log2),
            None => Some(0),
        };
        if want != Some(sum_words.len() as u64) {
            return Err(bad(format!(
                "{} words of group checksums for {} records (flags {:#x})",
                sum_words.len(),
                f.records,
                f.flags
            )));
        }
        let sums = f.group_log2().map(|log2| Sums::new(log2, sum_words));
        if offsets.len() as u64 != f.records.saturating_add(1) {
            return Err(bad(format!(
                "{} offsets for {} records",
                offsets.len(),
                f.records
            )));
        }
        let fixed = match f.codec {
            Codec::Fixed => Some(
                Layout::read(dict)
                    .map_err(|e| corrupt(pool_end as u64, format!("fixed codec: {e}")))?,
            ),
            _ => None,
        };
        if let Some(l) = &fixed {
            let sizes = (l.length() as u64)
                .checked_mul(f.records)
                .zip((l.stored() as u64).checked_mul(f.records));
            let max = if f.records == 0 { 0 } else { l.length() as u64 };
            if sizes != Some((f.raw_bytes, f.pool_len)) || f.max_record != max || f.record_crc() {
                return Err(corrupt(
                    body + 48,
                    format!(
                        "{} records of {} bytes, {} stored, cannot make {} record bytes (largest {}) from a {}-byte pool",
                        f.records, l.length(), l.stored(), f.raw_bytes, f.max_record, f.pool_len
                    ),
                ));
            }
        }
        // Every extent at least this long. With the fixed codec, extents
        // of at least `stored` bytes that end at a pool of `records *
        // stored` bytes (checked above and below) are each exactly that.
        let min_len = match (&fixed, f.record_crc()) {
            (Some(l), _) => l.stored() as u64,
            (None, true) => 4,
            (None, false) => 0,
        };
        let mut prev = offsets.get(0);
        if prev != 0 {
            return Err(bad("first offset is not 0".into()));
        }
        for i in 1..offsets.len() {
            let v = offsets.get(i);
            if v > f.pool_len || prev.checked_add(min_len).map_or(true, |end| v < end) {
                return Err(bad(format!(
                    "record {} has a negative or too short extent",
                    i - 1
                )));
            }
            prev = v;
        }
        if prev != f.pool_len {
            return Err(bad("offsets do not end at the pool length".into()));
        }
        let decoder = match f.codec {
            Codec::Plain => Decoder::Plain,
            Codec::Fixed => Decoder::Fixed(fixed.ok_or_else(|| {
                corrupt(pool_end as u64, "fixed codec without its section".into())
            })?),
            Codec::ZstdDict => Decoder::Zstd(zstd_codec::Decoder::new(dict).ok_or_else(|| {
                corrupt(pool_end as u64, "the zstd dictionary is malformed".into())
            })?),
            Codec::Global => Decoder::Global(
                global::Decoder::open(dict)
                    .map_err(|e| corrupt(pool_end as u64, format!("global codec model: {e}")))?,
            ),
            Codec::Shared => {
                let wanted = shared::read_ref_section(dict).ok_or_else(|| {
                    corrupt(pool_end as u64, "malformed shared-model reference".into())
                })?;
                match model {
                    None => return Err(Error::ModelRequired { model: wanted }),
                    Some(m) if m.reference() != wanted => {
                        return Err(Error::ModelMismatch {
                            expected: wanted,
                            found: m.reference(),
                        })
                    }
                    Some(m) => Decoder::Shared(m),
                }
            }
        };
        Ok(Store {
            footer: f,
            pool: &bytes[..f.pool_len as usize],
            padded_pool: &bytes[..pool_end],
            offsets,
            sums,
            decoder,
            dict_len: dict.len(),
            size: bytes.len(),
        })
    }

    /// Number of records.
    pub fn len(&self) -> u64 {
        self.footer.records
    }

    /// True when the store holds no record.
    pub fn is_empty(&self) -> bool {
        self.footer.records == 0
    }

    /// The codec in use.
    pub fn codec(&self) -> Codec {
        self.footer.codec
    }

    /// Sum of the decoded record lengths.
    pub fn raw_bytes(&self) -> u64 {
        self.footer.raw_bytes
    }

    /// Size of the whole store in bytes.
    pub fn size_bytes(&self) -> usize {
        self.size
    }

    /// Dictionary (or model) section size in bytes, as stored.
    pub fn dict_bytes(&self) -> usize {
        self.dict_len
    }

    /// Bytes of memory the opened store holds beyond the mapped file (the
    /// inflated dictionary of the global codec, decode tables).
    pub fn heap_bytes(&self) -> usize {
        match &self.decoder {
            Decoder::Global(d) => d.heap_bytes(),
            _ => 0,
        }
    }

    /// Where record `id` is stored: its pool offset and stored bytes,
    /// once the checksum of its group (version 2) matched them.
    /// Offsets are pool offsets; those outside `window` (a window read
    /// for this record holds its group) are reported as corrupt.
    fn extent<'w>(&self, id: u64, window: Window<'w>) -> Result<(usize, &'w [u8])> {
        if id >= self.footer.records {
            return Err(Error::IdOutOfRange {
                id,
                len: self.footer.records,
            });
        }
        let i = id as usize;
        let (a, b) = (
            self.offsets.get(i) as usize,
            self.offsets.get(i + 1) as usize,
        );
        if let Some(sums) = &self.sums {
            let group = id >> sums.log2;
            let (first, end) = self.group_of(id);
            // A group of one is the record's own extent, already read.
            let (lo, hi) = match sums.log2 {
                0 => (a as u64, b as u64),
                _ => (self.offsets.get(first), self.offsets.get(end)),
            };
            let group_bytes = window.slice(id, lo as usize, hi as usize)?;
            let (stored, computed) = (sums.get(group), crate::crc::crc32c(group_bytes));
            if stored != computed {
                // Corrupt, not ChecksumMismatch: it carries the offset (of
                // the group: the bad bytes are somewhere in it), so callers
                // can name where they are.
                return Err(corrupt_record(
                    id,
                    lo as usize,
                    format!(
                        "checksum mismatch of records {first}..{end} (pool bytes {lo}..{hi}): stored {stored:#010x}, computed {computed:#010x}"
                    ),
                ));
            }
        }
        Ok((a, window.slice(id, a, b)?))
    }

    /// The records a read of record `id` checks: its group's (version 2
    /// and later), or its own.
    fn group_of(&self, id: u64) -> (usize, usize) {
        match &self.sums {
            Some(sums) => {
                let group = id >> sums.log2;
                let end = ((group + 1) << sums.log2).min(self.footer.records);
                ((group << sums.log2) as usize, end as usize)
            }
            None => (id as usize, id as usize + 1),
        }
    }

    /// Asks the CPU to start loading the offsets a read of record `id`
    /// looks up first: the first of two steps that let a batch of reads
    /// overlap their cache misses (see [`Store::prefetch_record`]). A
    /// hint: nothing is checked, and an id out of range does nothing.
    pub fn prefetch_offsets(&self, id: u64) {
        if id < self.footer.records {
            let (first, end) = self.group_of(id);
            self.offsets.prefetch(first);
            self.offsets.prefetch(end);
        }
    }

    /// Where the bytes a read of record `id` checks and decodes are: a
    /// range of the bytes the store was opened on (its group's, which the
    /// checksum covers; the pool comes first, so these are pool offsets).
    /// For hints (a reader asking the kernel to read ahead): the offsets
    /// are not checked, and an id out of range gives an empty range.
    pub fn stored_range(&self, id: u64) -> std::ops::Range<u64> {
        if id >= self.footer.records {
            return 0..0;
        }
        let (first, end) = self.group_of(id);
        self.offsets.get(first)..self.offsets.get(end)
    }

    /// Asks the CPU to start loading the stored bytes a read of record
    /// `id` checks and decodes, and their group's checksum. Reads the
    /// offsets, so it waits for them unless [`Store::prefetch_offsets`]
    /// was called enough earlier. A hint, as that one.
    pub fn prefetch_record(&self, id: u64) {
        if id >= self.footer.records {
            return;
        }
        if let Some(sums) = &self.sums {
            sums.prefetch(id >> sums.log2);
        }
        let (first, end) = self.group_of(id);
        let (lo, hi) = (
            self.offsets.get(first) as usize,
            self.offsets.get(end) as usize,
        );
        // Crafted offsets may be out of order or past the pool: then this
        // touches nothing, and the read itself reports them.
        let mut line = lo & !63;
        while line < hi.min(self.pool.len()) {
            crate::global::prefetch(self.pool, line);
            line += 64;
        }
    }

    /// Replaces `out` with record `id`, decoding only that record.
    pub fn get(&self, id: u64, out: &mut Vec<u8>) -> Result<()> {
        self.get_in(id, Window::whole(self.pool), out)
    }

    /// [`Store::get`] from `stored`, the bytes of this store's pool at
    /// [`Store::stored_range`]`(id)` read by the caller (with `pread`,
    /// say, where the pool's mapping would cost a page fault): checked and
    /// decoded as `get` checks and decodes its own. Bytes that are not
    /// that range fail its checksum or are reported as corrupt.
    pub fn get_from(&self, id: u64, stored: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let at = self.stored_range(id).start as usize;
        self.get_in(id, Window { bytes: stored, at }, out)
    }

    fn get_in(&self, id: u64, window: Window<'_>, out: &mut Vec<u8>) -> Result<()> {
        if let Decoder::Shared(model) = &self.decoder {
            return self.get_shared(model, id, window, out);
        }
        let (a, stored) = self.extent(id, window)?;
        let (payload, crc) = if self.footer.record_crc() {
            let (p, c) = stored.split_at(stored.len() - 4);
            (p, le::u32_at(c, 0))
        } else {
            (stored, None)
        };
        let decoded = match &self.decoder {
            Decoder::Plain => {
                out.clear();
                out.extend_from_slice(payload);
                Ok(())
            }
            Decoder::Fixed(l) => l.decode(payload, out).map_err(Error::Codec),
            Decoder::Zstd(d) => d.decode(payload, self.footer.max_record, out),
            Decoder::Global(d) => d.decode(payload, self.footer.max_record, out),
            Decoder::Shared(_) => Err(Error::Codec("unreachable: shared records".into())),
        };
        decoded.map_err(|e| {
            out.clear();
            corrupt_record(id, a, e)
        })?;
        check_crc(id, a, crc, out)
    }

    /// Record `id` of a shared-model store taken apart: its pool offset,
    /// stored bytes and parts (header checked, payload not decoded).
    fn framed<'w>(
        &self,
        id: u64,
        window: Window<'w>,
    ) -> Result<(usize, &'w [u8], shared::Framed<'w>)> {
        let (at, stored) = self.extent(id, window)?;
        let r = shared::unframe(stored, self.footer.record_crc(), self.footer.max_record)
            .map_err(|detail| corrupt_record(id, at, detail))?;
        Ok((at, stored, r))
    }

    /// Record `id` of a shared-model store.
    fn get_shared(
        &self,
        model: &Model,
        id: u64,
        window: Window<'_>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (at, _, r) = self.framed(id, window)?;
        let corrupt = |detail: String| corrupt_record(id, at, detail);
        if r.plain {
            out.clear();
            out.extend_from_slice(r.payload);
        } else {
            // The header bounds the length: the decoder sizes `out` for
            // it at once (bounded by the payload too, so a crafted header
            // cannot make a reader allocate much), and the real length is
            // checked below.
            let decoded = model.decoder().decode_sized(r.payload, r.len, out);
            decoded.map_err(|e| {
                out.clear();
                corrupt(e.to_string())
            })?;
            if out.len() as u64 != r.len {
                let n = out.len();
                out.clear();
                return Err(corrupt(format!(
                    "decodes to {n} bytes, its header says {}",
                    r.len
                )));
            }
        }
        check_crc(id, at, r.crc, out)
    }

    /// The stored bytes of record `id`, to copy into a store built with
    /// the same model ([`crate::SharedBuilder::push_encoded`]); `None`
    /// when this store is not encoded with a shared model, or its records
    /// have no group checksums (version 1, whose checksums cover decoded
    /// bytes, or a store built without checksums): decode those to copy
    /// them, so that bytes no checksum vouches for are never given a new
    /// one. The header and the group's checksum are checked; the payload
    /// is not decoded.
    pub fn encoded(&self, id: u64) -> Result<Option<Encoded<'a>>> {
        let Decoder::Shared(model) = &self.decoder else {
            return Ok(None);
        };
        if self.sums.is_none() {
            return Ok(None);
        }
        let (_, bytes, r) = self.framed(id, Window::whole(self.pool))?;
        Ok(Some(Encoded {
            bytes,
            raw_len: r.len,
            model: model.reference(),
        }))
    }

    /// The shared model this store is encoded with, if any.
    pub fn model(&self) -> Option<&Arc<Model>> {
        match &self.decoder {
            Decoder::Shared(m) => Some(m),
            _ => None,
        }
    }

    /// Calls `f(id, record)` for every record in id order, reusing one
    /// buffer; stops early when `f` returns false.
    pub fn scan(&self, mut f: impl FnMut(u64, &[u8]) -> bool) -> Result<()> {
        let mut buf = Vec::new();
        for id in 0..self.footer.records {
            self.get(id, &mut buf)?;
            if !f(id, &buf) {
                break;
            }
        }
        Ok(())
    }

    /// Checks every byte: the pool checksum, every record's (or group's)
    /// own, and that the records decode to the footer's totals.
    pub fn verify(&self) -> Result<()> {
        let computed = crc32c::crc32c(self.padded_pool);
        if computed != self.footer.pool_crc {
            return Err(Error::ChecksumMismatch {
                region: "pool".into(),
                stored: self.footer.pool_crc,
                computed,
            });
        }
        let (mut total, mut max) = (0u64, 0u64);
        self.scan(|_, r| {
            total += r.len() as u64;
            max = max.max(r.len() as u64);
            true
        })?;
        if total != self.footer.raw_bytes || max != self.footer.max_record {
            return Err(Error::Corrupt {
                offset: self.size as u64 - FOOTER_BYTES as u64,
                detail: format!(
                    "records decode to {total} bytes (largest {max}); the footer says {} (largest {})",
                    self.footer.raw_bytes, self.footer.max_record
                ),
            });
        }
        Ok(())
    }
}

/// Record `id`, stored at pool offset `at`, is corrupt.
fn corrupt_record(id: u64, at: usize, detail: impl std::fmt::Display) -> Error {
    Error::Corrupt {
        offset: at as u64,
        detail: format!("record {id}: {detail}"),
    }
}

/// Fails unless `out` matches the stored checksum `crc` (if any) of record
/// `id` at pool offset `at`; clears `out` when it does not.
fn check_crc(id: u64, at: usize, crc: Option<u32>, out: &mut Vec<u8>) -> Result<()> {
    if let Some(stored) = crc {
        let computed = crc32c::crc32c(out);
        if computed != stored {
            out.clear();
            // Corrupt, not ChecksumMismatch: it carries the record's
            // offset, so callers can name where the bad bytes are.
            return Err(corrupt_record(
                id,
                at,
                format!("checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"),
            ));
        }
    }
    Ok(())
}

/// Bytes of a store's pool from pool offset `at` on: the whole pool, or
/// the part a caller read for one record.
#[derive(Clone, Copy)]
struct Window<'w> {
    bytes: &'w [u8],
    at: usize,
}

impl<'w> Window<'w> {
    fn whole(pool: &'w [u8]) -> Self {
        Window { bytes: pool, at: 0 }
    }

    /// Pool bytes `lo..hi`, which a read of record `id` needs.
    fn slice(&self, id: u64, lo: usize, hi: usize) -> Result<&'w [u8]> {
        lo.checked_sub(self.at)
            .zip(hi.checked_sub(self.at))
            .and_then(|(a, b)| self.bytes.get(a..b))
            .ok_or_else(|| {
                corrupt_record(
                    id,
                    lo,
                    format!(
                        "pool bytes {lo}..{hi} are outside the {} bytes read at {}",
                        self.bytes.len(),
                        self.at
                    ),
                )
            })
    }
}
