//! Immutable segments: one file holding a key trie, a record store, and per
//! record a tag (sequence number and kind), mmapped and read in place.
//!
//! Invariants checked at open (so reads cannot go out of bounds or return
//! another key's value): header checksum, sections inside the file and
//! 8-byte aligned, checksums of the trie, tag, history, Bloom and expiry
//! sections, the trie holds `keys` keys and the store `records` records
//! (the trie's own structure is trusted once its checksum matches, as
//! written by this engine; `verify` validates it), every tag has a
//! valid kind and a sequence number in `[min_seq, max_seq]`, history
//! groups are in key order with strictly decreasing sequence numbers below
//! their key's newest version.
//!
//! Thread safety: a `Segment` is immutable and `Send + Sync`; it is shared
//! through `Arc` by readers, iterators and merges, and its file is deleted
//! only after the last `Arc` is gone (see `Segment::drop`).

pub(crate) mod bloom;
pub(crate) mod cursor;
mod expiry;
pub(crate) mod format;
pub(crate) mod readahead;
mod tags;
pub(crate) mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pith_trie::Trie;
use pith_zip::Store;

use crate::dbformat::Kind;
use crate::dbformat::{expired, tag_kind, tag_seq};
use crate::env::{FileBytes, Fs};
use crate::error::{Error, Result};
use crate::model_file::ModelFile;
use crate::value_cache::ValueCache;
use bloom::Bloom;
use expiry::Expiry;
use format::{Header, HeaderError, SECTIONS, SECTION_NAMES};
use readahead::ReadAhead;
use tags::Tags;

/// An open segment file.
pub(crate) struct Segment {
    // The views borrow `map`; they are declared first so they drop first.
    trie: Trie<'static>,
    store: Store<'static>,
    tags: Tags<'static>,
    hist_keys: &'static [u64],
    hist_starts: &'static [u64],
    bloom: Bloom<'static>,
    expiry: Expiry<'static>,
    header: Header,
    /// Twice the mean value length (capped), reserved before a decode.
    typical_value: usize,
    /// Tombstones among all its records.
    tombstones: u64,
    /// File number.
    pub number: u64,
    path: PathBuf,
    file_bytes: u64,
    /// Set when a merge has replaced this segment: the file is removed when
    /// the last reader lets go.
    obsolete: AtomicBool,
    /// Removes the file when obsolete (`None`: bytes not from a file).
    fs: Option<Arc<dyn Fs>>,
    /// The shared model its store is encoded with, if any (held so the
    /// model outlives every segment using it).
    model: Option<Arc<ModelFile>>,
    /// The database's cache of decoded values, if it keeps one.
    cache: Option<Arc<ValueCache>>,
    /// Point reads read stored values with `pread` (`Options::value_reads`).
    pread_values: bool,
    /// Copies of the sections a lookup walks, when kept resident (the
    /// views borrow it instead of `map`). A `Vec`, not a `Box`: moving a
    /// box asserts unique access to what it points to, which the views
    /// borrowed from it would contradict (Miri's aliasing model flags it);
    /// a vector's buffer is reached through a raw pointer.
    resident: Vec<u64>,
    map: FileBytes,
}

/// How point reads read stored values ([`crate::Options::value_reads`]).
///
/// Measured on debian-packages (`pith bench db --workloads readrandom`,
/// 8 reader threads on 2 cores, two sets of five or six alternating
/// runs): with the settled database's 13.4 MB in a 9.9 MiB memory limit,
/// `Pread` served 78-97K reads a second against 69-89K (medians 8% and
/// 10% more, p99 about a sixth lower); without a limit, where reads find
/// their pages in memory, `Mapped` served about 8% more (three runs each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ValueReads {
    /// Through the segment file's memory mapping: a read whose pages are
    /// in the page cache costs no system call; one whose pages are not
    /// waits for a page fault. Best when the values fit in memory.
    #[default]
    Mapped,
    /// With `pread` (`read_exact_at`) into a per-thread buffer: a system
    /// call on every read, but the file's pages never enter the process's
    /// mapping. When the page cache is short (data larger than memory),
    /// the kernel then reclaims pages without unmapping them (no
    /// cross-core TLB flushes) and maps no neighbouring pages on a fault;
    /// reads that miss the page cache cost less CPU. Best when the data
    /// does not fit. File systems without mappings read from memory
    /// either way.
    Pread,
}

impl ValueReads {
    /// Every choice, by [`ValueReads::name`].
    const ALL: [ValueReads; 2] = [ValueReads::Mapped, ValueReads::Pread];

    /// The name settings and bindings give it: `mapped` or `pread`.
    pub fn name(self) -> &'static str {
        match self {
            ValueReads::Mapped => "mapped",
            ValueReads::Pread => "pread",
        }
    }

    /// The choice named `name` (exactly as [`ValueReads::name`] gives it).
    pub fn from_name(name: &str) -> Option<ValueReads> {
        ValueReads::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// Sections a point lookup reads besides the values (the store's record
/// offsets, inside its section, are copied too: see [`resident_copy`]).
const LOOKUP_SECTIONS: [usize; 5] = [
    format::TRIE,
    format::TAGS,
    format::HISTORY,
    format::BLOOM,
    format::EXPIRY,
];

/// Copies of `sections[i]` for `i` in [`LOOKUP_SECTIONS`], then of
/// `offsets` (the store's record offsets, a few bits a record: with them
/// in memory a lookup reads the file only for its record, one read of
/// storage when the values do not fit the page cache), each starting on a
/// word boundary, and the byte offset of each copy in it (in
/// [`LOOKUP_SECTIONS`] order, then the offsets').
fn resident_copy(
    sections: &[&[u8]; SECTIONS],
    offsets: &[u8],
) -> (Vec<u64>, [usize; LOOKUP_SECTIONS.len() + 1]) {
    let parts = LOOKUP_SECTIONS.map(|i| sections[i]);
    let parts = parts.iter().copied().chain([offsets]);
    let mut starts = [0; LOOKUP_SECTIONS.len() + 1];
    let mut end = 0;
    for (start, part) in starts.iter_mut().zip(parts.clone()) {
        *start = end;
        end += part.len().div_ceil(8) * 8;
    }
    let mut copy = vec![0u64; end / 8];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut copy);
    for (&at, part) in starts.iter().zip(parts) {
        bytes[at..at + part.len()].copy_from_slice(part);
    }
    (copy, starts)
}

/// Finds an open model file by number.
pub(crate) type ModelLookup<'a> = &'a dyn Fn(u64) -> Option<Arc<ModelFile>>;

/// Sizes and counts of one segment, for stats.
#[derive(Clone, Debug)]
pub struct SegmentInfo {
    /// File number (the file is `NNNNNN.seg`).
    pub number: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Versions stored (keys plus older versions kept for snapshots).
    pub records: u64,
    /// Tombstones among the newest versions and older ones.
    pub tombstones: u64,
    /// Versions with a deadline (expired or not).
    pub expiring: u64,
    /// Sum of key lengths.
    pub raw_key_bytes: u64,
    /// Sum of value lengths (all versions).
    pub raw_value_bytes: u64,
    /// Bytes of the key trie.
    pub index_bytes: u64,
    /// Bytes of the record store (dictionary and offsets included).
    pub store_bytes: u64,
    /// Bytes of tags, history index, Bloom filter and deadlines.
    pub meta_bytes: u64,
    /// Bytes held in memory for lookups (trie, tags, history, Bloom filter
    /// and record offsets copied out of the file; 0 unless
    /// `Options::resident_index`).
    pub resident_bytes: u64,
    /// File size.
    pub file_bytes: u64,
    /// The record store's codec.
    pub codec: String,
    /// The shared model file its values are encoded with, if any.
    pub model: Option<u64>,
    /// Lowest and highest sequence number.
    pub seq_range: (u64, u64),
    /// Bits of each record's tag (its sequence number and kind); 0 when
    /// every record is a put at the lowest sequence number: a bulk load,
    /// or a build that will be the oldest segment while no snapshot is
    /// older than its newest version (no reader needs its sequence
    /// numbers; see `docs/format.md`, "Segment file").
    pub tag_bits: u32,
}

fn words(bytes: &[u8]) -> Option<&[u64]> {
    if bytes.is_empty() {
        // An absent section: its slice's address need not be aligned.
        return Some(&[]);
    }
    bytemuck::try_cast_slice(bytes).ok()
}

impl Segment {
    /// Opens and validates the segment file `number` at `path` (mapped
    /// where the file system can; see `env::RealFs` on truncation); its
    /// values are read through `cache` (the database's [`ValueCache`]),
    /// and point reads read them as `value_reads` says.
    pub(crate) fn open(
        fs: &Arc<dyn Fs>,
        path: &Path,
        number: u64,
        models: ModelLookup<'_>,
        resident: bool,
        value_reads: ValueReads,
        cache: Option<Arc<ValueCache>>,
    ) -> Result<Segment> {
        let mut map = fs.map(path).map_err(|e| Error::io(path, e))?;
        if value_reads == ValueReads::Mapped {
            map.close_file();
        }
        let mut segment = Segment::from_bytes(map, path, number, models, resident)?;
        segment.fs = Some(fs.clone());
        segment.cache = cache;
        segment.pread_values = value_reads == ValueReads::Pread;
        Ok(segment)
    }

    /// Validates a segment's bytes; `path` names it in errors, `models`
    /// finds the shared model its store needs; `resident` copies the
    /// sections a lookup walks into memory (`Options::resident_index`).
    pub(crate) fn from_bytes(
        map: FileBytes,
        path: &Path,
        number: u64,
        models: ModelLookup<'_>,
        resident: bool,
    ) -> Result<Segment> {
        // SAFETY: the slice points into the bytes owned by `map` (a mapping
        // or a heap allocation), which lives in the same struct, is never
        // moved out or changed, and is dropped after every field that
        // borrows it (declaration order). Neither a mapping's address nor a
        // heap allocation's changes when the `FileBytes` value moves.
        let bytes: &'static [u8] = unsafe { std::slice::from_raw_parts(map.as_ptr(), map.len()) };
        let corrupt = |offset: u64, detail: String| Error::corrupt(path, offset, detail);
        let header = Header::decode(bytes).map_err(|e| match e {
            HeaderError::Truncated => corrupt(0, format!("segment file of {} bytes is shorter than its header", bytes.len())),
            HeaderError::BadMagic => corrupt(0, "bad segment magic (expected \"PITHSEG\\0\")".into()),
            HeaderError::Version(found) => Error::UnsupportedVersion {
                path: path.to_path_buf(),
                expected: format::VERSION,
                found,
            },
            HeaderError::Checksum { at, stored, computed } => corrupt(at as u64, format!("segment header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")),
            HeaderError::Reserved => corrupt(12, "reserved header fields are not zero".into()),
        })?;
        if header.min_seq > header.max_seq || header.max_seq >= crate::dbformat::MAX_SEQ {
            return Err(corrupt(
                32,
                format!(
                    "impossible sequence range {}..={}",
                    header.min_seq, header.max_seq
                ),
            ));
        }
        let mut sections: [&'static [u8]; SECTIONS] = [&[]; SECTIONS];
        let mut end = header.len() as u64;
        for (i, s) in header
            .sections
            .iter()
            .take(header.section_count())
            .enumerate()
        {
            let name = SECTION_NAMES[i];
            let stop = s.offset.checked_add(s.len);
            if s.offset % 8 != 0 || s.offset < end || stop.is_none_or(|e| e > bytes.len() as u64) {
                return Err(corrupt(
                    56 + 24 * i as u64,
                    format!(
                        "{name} section ({} bytes at {}) is misplaced in a {}-byte file",
                        s.len,
                        s.offset,
                        bytes.len()
                    ),
                ));
            }
            end = stop.unwrap_or(0);
            sections[i] = &bytes[s.offset as usize..end as usize];
        }
        // The store's offsets, when kept resident (a store whose footer is
        // bad keeps them in the file; opening it reports what is wrong).
        let store_offsets = Store::offsets_range(sections[format::STORE])
            .ok()
            .filter(|_| resident);
        let (resident, starts) = if resident {
            let offsets = store_offsets
                .clone()
                .map_or(&[][..], |r| &sections[format::STORE][r]);
            resident_copy(&sections, offsets)
        } else {
            (Vec::new(), [0; LOOKUP_SECTIONS.len() + 1])
        };
        let mut offsets_copy = None;
        if !resident.is_empty() {
            // SAFETY: as for `bytes` above: the copy is a heap allocation
            // owned by the same struct, never changed, grown or moved out,
            // and dropped after every view (declaration order); moving the
            // vector does not move its buffer.
            let copy: &'static [u8] = unsafe {
                std::slice::from_raw_parts(resident.as_ptr().cast::<u8>(), resident.len() * 8)
            };
            // Reads go to the copy from here on; the file's pages it was
            // read through leave the mapping at the end of the open.
            for (&at, &i) in starts.iter().zip(&LOOKUP_SECTIONS) {
                sections[i] = &copy[at..at + sections[i].len()];
            }
            if let Some(r) = store_offsets {
                let at = starts[LOOKUP_SECTIONS.len()];
                offsets_copy = Some(&copy[at..at + r.len()]);
            }
        }
        // The trie opens in O(1) and checks no body checksum of its own, so
        // its section is checked here (about 1 ms per 10 MB); its structure
        // is validated by `verify`.
        let checked_at_open = [
            format::TRIE,
            format::TAGS,
            format::HISTORY,
            format::BLOOM,
            format::EXPIRY,
        ];
        for i in checked_at_open
            .into_iter()
            .filter(|&i| i < header.section_count())
        {
            let s = header.sections[i];
            let computed = crc32c::crc32c(sections[i]);
            if computed != s.crc {
                return Err(corrupt(
                    s.offset,
                    format!(
                        "{} section checksum mismatch (stored {:#010x}, computed {computed:#010x})",
                        SECTION_NAMES[i], s.crc
                    ),
                ));
            }
        }
        let at = |i: usize| header.sections[i].offset;
        let trie = Trie::open(sections[format::TRIE])
            .map_err(|e| Error::from_trie(path, at(format::TRIE), e))?;
        let store_bytes = sections[format::STORE];
        let zip_err = |e| Error::from_zip(path, at(format::STORE), e);
        let model = match Store::required_model(store_bytes).map_err(zip_err)? {
            None => None,
            Some(wanted) => {
                let name = || {
                    crate::filename::path(
                        path.parent().unwrap_or(Path::new("")),
                        wanted.id,
                        crate::filename::FileKind::Model,
                    )
                };
                let file = models(wanted.id).ok_or_else(|| {
                    corrupt(
                        at(format::STORE),
                        format!(
                            "its values are encoded with model file {}, which is not loaded (missing from the manifest or the directory)",
                            name().display()
                        ),
                    )
                })?;
                if file.model.reference() != wanted {
                    return Err(corrupt(
                        at(format::STORE),
                        format!(
                            "its values are encoded with another model than model file {} holds (fingerprint {:#010x}, the file's {:#010x})",
                            file.path().display(),
                            wanted.fingerprint,
                            file.model.reference().fingerprint
                        ),
                    ));
                }
                Some(file)
            }
        };
        let store = Store::open_with_offsets(
            store_bytes,
            model.as_ref().map(|m| m.model.clone()),
            offsets_copy,
        )
        .map_err(zip_err)?;
        let misaligned = |i: usize| {
            corrupt(
                at(i),
                format!(
                    "{} section is not a whole number of words",
                    SECTION_NAMES[i]
                ),
            )
        };
        let tag_words = words(sections[format::TAGS]).ok_or_else(|| misaligned(format::TAGS))?;
        let tags = Tags::open(tag_words, header.records, header.min_seq)
            .map_err(|d| corrupt(at(format::TAGS), d))?;
        let history =
            words(sections[format::HISTORY]).ok_or_else(|| misaligned(format::HISTORY))?;
        let bloom_words =
            words(sections[format::BLOOM]).ok_or_else(|| misaligned(format::BLOOM))?;
        let bloom = Bloom::open(bloom_words).map_err(|d| corrupt(at(format::BLOOM), d))?;
        let expiry_words =
            words(sections[format::EXPIRY]).ok_or_else(|| misaligned(format::EXPIRY))?;
        let expiry = Expiry::open(expiry_words, header.records)
            .map_err(|d| corrupt(at(format::EXPIRY), d))?;
        if trie.len() as u64 != header.keys
            || store.len() != header.records
            || header.keys == 0
            || header.keys > header.records
        {
            return Err(corrupt(
                16,
                format!(
                    "counts disagree: header {} keys and {} records, trie {} keys, store {} records",
                    header.keys, header.records, trie.len(), store.len()
                ),
            ));
        }
        let (hist_keys, hist_starts) = split_history(history, header.keys, header.records)
            .map_err(|d| corrupt(at(format::HISTORY), d))?;
        let mut tombstones = 0;
        for r in 0..header.records {
            let tag = tags.get(r);
            if tag_seq(tag) > header.max_seq {
                return Err(corrupt(
                    at(format::TAGS),
                    format!("record {r} has a sequence number above the segment's maximum"),
                ));
            }
            tombstones += u64::from(tag_kind(tag) == Kind::Delete);
        }
        for (j, &key) in hist_keys.iter().enumerate() {
            let mut above = tag_seq(tags.get(key));
            for t in (hist_starts[j]..hist_starts[j + 1]).map(|r| tags.get(r)) {
                if tag_seq(t) >= above {
                    return Err(corrupt(
                        at(format::HISTORY),
                        format!("older versions of key {key} are not in decreasing sequence order"),
                    ));
                }
                above = tag_seq(t);
            }
        }
        if !resident.is_empty() {
            // Lookups read the file only for values from here on. What the
            // open read (the sections copied, so they do not count twice;
            // the header, the store's footer, and the neighbours the kernel
            // maps with them: it maps a large folio of page cache whole, up
            // to 512 KiB of values around the footer here) leaves the
            // mapping, so an open segment holds no file pages until its
            // values are read: 0.5 MB less resident after `pith serve`
            // loads debian-packages.
            map.forget(0..map.len());
        }
        let typical_value = (2 * store.raw_bytes() / header.records.max(1)).min(1 << 16) as usize;
        Ok(Segment {
            trie,
            store,
            tags,
            hist_keys,
            hist_starts,
            bloom,
            expiry,
            file_bytes: bytes.len() as u64,
            typical_value,
            tombstones,
            header,
            number,
            path: path.to_path_buf(),
            obsolete: AtomicBool::new(false),
            fs: None,
            model,
            cache: None,
            pread_values: false,
            resident,
            map,
        })
    }

    pub(crate) fn min_seq(&self) -> u64 {
        self.header.min_seq
    }

    pub(crate) fn max_seq(&self) -> u64 {
        self.header.max_seq
    }

    pub(crate) fn keys(&self) -> u64 {
        self.header.keys
    }

    pub(crate) fn records(&self) -> u64 {
        self.header.records
    }

    pub(crate) fn file_bytes(&self) -> u64 {
        self.file_bytes
    }

    /// True when a merge of this segment alone would drop nothing: it
    /// holds one version per key, no tombstone and no deadline.
    pub(crate) fn has_nothing_to_drop(&self) -> bool {
        self.header.keys == self.header.records && self.tombstones == 0 && self.expiry.len() == 0
    }

    /// True when every key's newest version is a live put: no tombstone
    /// and no deadline anywhere in the segment.
    pub(crate) fn all_keys_live(&self) -> bool {
        self.tombstones == 0 && self.expiry.len() == 0
    }

    pub(crate) fn trie(&self) -> &Trie<'_> {
        &self.trie
    }

    /// The shared model its values are encoded with, if any.
    pub(crate) fn model(&self) -> Option<&Arc<ModelFile>> {
        self.model.as_ref()
    }

    /// Record `r`'s stored bytes, when they can be copied into a store
    /// encoded with `model` without decoding.
    pub(crate) fn encoded(
        &self,
        r: u64,
        model: pith_zip::ModelRef,
    ) -> Result<Option<pith_zip::Encoded<'_>>> {
        if self.store.model().map(|m| m.reference()) != Some(model) {
            return Ok(None);
        }
        self.store
            .encoded(r)
            .map_err(|e| Error::from_zip(&self.path, self.header.sections[format::STORE].offset, e))
    }

    /// Marks the file for removal once no reader holds the segment.
    pub(crate) fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }

    /// The tag of record `r`.
    pub(crate) fn tag(&self, r: u64) -> u64 {
        self.tags.get(r)
    }

    /// When record `r` expires (`NO_DEADLINE`: never).
    pub(crate) fn deadline(&self, r: u64) -> u64 {
        self.expiry.deadline(r)
    }

    /// The older versions of key `id`, as a record-id range.
    pub(crate) fn history(&self, id: u64) -> std::ops::Range<u64> {
        match self.hist_keys.binary_search(&id) {
            Ok(j) => self.hist_starts[j]..self.hist_starts[j + 1],
            Err(_) => 0..0,
        }
    }

    /// The record of key `id` visible at snapshot `snap`, if any.
    pub(crate) fn visible(&self, id: u64, snap: u64) -> Option<u64> {
        if tag_seq(self.tag(id)) <= snap {
            return Some(id);
        }
        self.history(id).find(|&r| tag_seq(self.tag(r)) <= snap)
    }

    /// Every version of key `id`, newest first, as (tag, record).
    pub(crate) fn versions(&self, id: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        std::iter::once(id)
            .chain(self.history(id))
            .map(|r| (self.tag(r), r))
    }

    /// Asks the CPU to start loading the offsets of record `r`
    /// ([`pith_zip::Store::prefetch_offsets`]).
    pub(crate) fn prefetch_offsets(&self, r: u64) {
        self.store.prefetch_offsets(r);
    }

    /// Asks the CPU to start loading record `r`'s stored bytes
    /// ([`pith_zip::Store::prefetch_record`]).
    ///
    /// Nothing when point reads `pread` their values: the mapping is
    /// not what they read.
    pub(crate) fn prefetch_record(&self, r: u64) {
        if !self.pread_values {
            self.store.prefetch_record(r);
        }
    }

    /// Replaces `out` with record `r`'s value: from the value cache when
    /// it holds it, else decoded (and then cached).
    pub(crate) fn value(&self, r: u64, out: &mut Vec<u8>) -> Result<()> {
        self.value_through(r, out, None)
    }

    /// [`Segment::value`] for a cursor reading records in key order: on a
    /// value cache miss, `ahead` may first ask the kernel to read the
    /// records that follow (see `readahead.rs`).
    pub(crate) fn value_in_row(&self, r: u64, out: &mut Vec<u8>, ahead: &ReadAhead) -> Result<()> {
        self.value_through(r, out, Some(ahead))
    }

    /// [`Segment::value`], telling `ahead` (when given) of a hit and
    /// letting it read ahead before a decode.
    fn value_through(&self, r: u64, out: &mut Vec<u8>, ahead: Option<&ReadAhead>) -> Result<()> {
        if let Some(cache) = &self.cache {
            if cache.get(self.number, r, out) {
                if let Some(ahead) = ahead {
                    ahead.note(self.stored_span(r));
                }
                return Ok(());
            }
        }
        match ahead {
            Some(ahead) => {
                self.read_ahead(r, ahead);
                self.decode(r, out)?;
            }
            None if self.pread_values => self.decode_read(r, out)?,
            None => self.decode(r, out)?,
        }
        if let Some(cache) = &self.cache {
            cache.insert(self.number, r, out);
        }
        Ok(())
    }

    /// Before a read of record `r` by a reader in key order: asks the
    /// kernel for the records ahead when `ahead` says so.
    pub(crate) fn read_ahead(&self, r: u64, ahead: &ReadAhead) {
        if let Some(range) = ahead.before(self.stored_span(r)) {
            self.map.will_need(range.start as usize..range.end as usize);
        }
    }

    /// Where in the file the bytes a read of record `r` reads are (its
    /// checksum group's stored bytes; the store's pool starts its
    /// section).
    pub(crate) fn stored_span(&self, r: u64) -> std::ops::Range<u64> {
        let base = self.header.sections[format::STORE].offset;
        let stored = self.store.stored_range(r);
        base + stored.start..base + stored.end
    }

    /// Replaces `out` with record `r`'s value, decoded from the store,
    /// the value cache neither read nor filled (merges: a merge reading
    /// every record would evict what readers use).
    pub(crate) fn decode(&self, r: u64, out: &mut Vec<u8>) -> Result<()> {
        self.store.get(r, out).map_err(|e| self.store_error(e))
    }

    /// [`Segment::decode`] from the record's stored bytes read from the
    /// file (`pread`) into a buffer of the calling thread, not through
    /// the mapping (`Options::value_reads`).
    fn decode_read(&self, r: u64, out: &mut Vec<u8>) -> Result<()> {
        /// Largest buffer a thread keeps between reads.
        const KEEP: usize = 64 << 10;
        thread_local! {
            /// The last read's stored bytes: a record's checksum group,
            /// usually a few hundred bytes (kept, so reads allocate
            /// nothing; one larger than [`KEEP`] is let go).
            static STORED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let span = self.stored_span(r);
        STORED.with(|stored| {
            let mut stored = stored.borrow_mut();
            let read = self
                .map
                .read_at(span.start as usize..span.end as usize, &mut stored)
                .map_err(|e| Error::io(&self.path, e))
                .and_then(|()| {
                    self.store
                        .get_from(r, &stored, out)
                        .map_err(|e| self.store_error(e))
                });
            if stored.capacity() > KEEP {
                *stored = Vec::new();
            }
            read
        })
    }

    fn store_error(&self, e: pith_zip::Error) -> Error {
        Error::from_zip(&self.path, self.header.sections[format::STORE].offset, e)
    }

    /// The version of `key` visible at `snap`: its tag and deadline, and,
    /// when `out` is given, its value decoded into it if it is a put not
    /// expired at `now`. `None` when this segment has no visible version.
    pub(crate) fn get(
        &self,
        key: &[u8],
        hash: u64,
        snap: u64,
        now: u64,
        out: Option<&mut Vec<u8>>,
    ) -> Result<Option<(u64, u64)>> {
        if snap < self.header.min_seq || !self.bloom.may_contain(hash) {
            return Ok(None);
        }
        let Some(id) = self.trie.lookup(key) else {
            return Ok(None);
        };
        let Some(r) = self.visible(id, snap) else {
            return Ok(None);
        };
        let (tag, deadline) = (self.tag(r), self.deadline(r));
        if let Some(out) = out.filter(|_| tag_kind(tag) == Kind::Put && !expired(deadline, now)) {
            // Room for a typical value up front, so decoding rarely regrows.
            out.reserve(self.typical_value);
            self.value(r, out)?;
        }
        Ok(Some((tag, deadline)))
    }

    /// Checks every checksum and decodes every record.
    pub(crate) fn verify(&self) -> Result<()> {
        // Summed a megabyte at a time, each asked of the kernel first: the
        // mapping is advised for random access, so a cold file was
        // otherwise read a page per fault.
        const CHUNK: usize = 1 << 20;
        let sections = self
            .header
            .sections
            .iter()
            .take(self.header.section_count());
        for (i, s) in sections.enumerate() {
            let section = s.offset as usize..(s.offset + s.len) as usize;
            let computed = crc_in_chunks(&self.map, section, CHUNK, |r| self.map.will_need(r));
            if computed != s.crc {
                return Err(Error::corrupt(
                    &self.path,
                    s.offset,
                    format!(
                        "{} section checksum mismatch (stored {:#010x}, computed {computed:#010x})",
                        SECTION_NAMES[i], s.crc
                    ),
                ));
            }
        }
        self.trie.validate().map_err(|e| {
            Error::from_trie(&self.path, self.header.sections[format::TRIE].offset, e)
        })?;
        self.store.verify().map_err(|e| {
            Error::from_zip(&self.path, self.header.sections[format::STORE].offset, e)
        })?;
        let mut raw = 0u64;
        for (_, k) in self.trie.iter() {
            raw += k.len() as u64;
        }
        if raw != self.header.raw_key_bytes {
            return Err(Error::corrupt(
                &self.path,
                48,
                format!(
                    "keys total {raw} bytes, the header says {}",
                    self.header.raw_key_bytes
                ),
            ));
        }
        Ok(())
    }

    /// The store section's place in the file (tests).
    #[cfg(test)]
    pub(crate) fn store_section(&self) -> std::ops::Range<u64> {
        let s = self.header.sections[format::STORE];
        s.offset..s.offset + s.len
    }

    /// Sizes and counts.
    pub(crate) fn info(&self) -> SegmentInfo {
        let s = &self.header.sections;
        SegmentInfo {
            number: self.number,
            keys: self.header.keys,
            records: self.header.records,
            tombstones: self.tombstones,
            expiring: self.expiry.len(),
            raw_key_bytes: self.header.raw_key_bytes,
            raw_value_bytes: self.store.raw_bytes(),
            index_bytes: s[format::TRIE].len,
            store_bytes: s[format::STORE].len,
            meta_bytes: s[format::TAGS].len
                + s[format::HISTORY].len
                + s[format::BLOOM].len
                + s[format::EXPIRY].len,
            resident_bytes: 8 * self.resident.len() as u64,
            file_bytes: self.file_bytes,
            codec: self.store.codec().name().to_string(),
            model: self.model.as_ref().map(|m| m.number),
            seq_range: (self.header.min_seq, self.header.max_seq),
            tag_bits: self.tags.width(),
        }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        let obsolete = self.obsolete.load(Ordering::Acquire);
        if let Some(cache) = self.cache.as_ref().filter(|_| obsolete) {
            cache.forget_segment(self.number);
        }
        if let Some(fs) = self.fs.as_ref().filter(|_| obsolete) {
            // Best effort: a file left behind is not in the manifest, and
            // the next open removes it.
            let _ = fs.remove(&self.path);
        }
    }
}

/// The crc32c of `bytes[range]`, summed `chunk` bytes at a time, calling
/// `ask` with each chunk's range before the chunk before it is summed (the
/// first before anything).
fn crc_in_chunks(
    bytes: &[u8],
    range: std::ops::Range<usize>,
    chunk: usize,
    mut ask: impl FnMut(std::ops::Range<usize>),
) -> u32 {
    let mut crc = 0;
    let mut at = range.start;
    ask(at..(at + chunk).min(range.end));
    while at < range.end {
        let end = (at + chunk).min(range.end);
        if end < range.end {
            ask(end..(end + chunk).min(range.end));
        }
        crc = crc32c::crc32c_append(crc, &bytes[at..end]);
        at = end;
    }
    crc
}

/// Splits the history section: `h | key ids (h) | starts (h + 1)`.
fn split_history(
    w: &'static [u64],
    keys: u64,
    records: u64,
) -> Result<(&'static [u64], &'static [u64]), String> {
    let (&h, rest) = w.split_first().ok_or("history section is empty")?;
    let h = usize::try_from(h).map_err(|_| "history count overflows".to_string())?;
    if h > keys as usize || rest.len() != 2 * h + 1 {
        return Err(format!(
            "history section of {} words cannot hold {h} groups",
            w.len()
        ));
    }
    let (ids, starts) = rest.split_at(h);
    if ids.windows(2).any(|p| p[0] >= p[1]) || ids.last().is_some_and(|&l| l >= keys) {
        return Err("history key ids are not increasing ids of this segment".into());
    }
    if starts.first() != Some(&keys) && h > 0
        || starts.last() != Some(&records)
        || starts.windows(2).any(|p| p[0] >= p[1])
    {
        return Err(
            "history record ranges are not increasing from the key count to the record count"
                .into(),
        );
    }
    if h == 0 && keys != records {
        return Err("records beyond the keys but no history groups".into());
    }
    Ok((ids, starts))
}

#[cfg(test)]
mod crc_tests {
    use super::crc_in_chunks;

    /// Summed in chunks, a range has the crc32c it has whole, and every
    /// chunk is asked for, in order, before it is summed.
    #[test]
    fn chunked_sums_match_and_ask_for_every_chunk_ahead() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
        for (range, chunk) in [
            (0..10_000, 1000),
            (17..9_999, 333),
            (5..6, 7),
            (40..40, 8),
            (0..10_000, 1 << 20),
        ] {
            let mut asked = Vec::new();
            let crc = crc_in_chunks(&bytes, range.clone(), chunk, |r| asked.push(r));
            assert_eq!(
                crc,
                crc32c::crc32c(&bytes[range.clone()]),
                "{range:?} by {chunk}"
            );
            let covered: Vec<usize> = asked.iter().flat_map(|r| r.clone()).collect();
            assert_eq!(
                covered,
                range.clone().collect::<Vec<_>>(),
                "{range:?} by {chunk}"
            );
        }
    }
}
