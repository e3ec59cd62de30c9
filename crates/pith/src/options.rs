//! Options for opening a database, writing and reading.
//!
//! Defaults are what a read-heavy embedded user wants: writes are
//! acknowledged once in the OS (not fsynced) unless [`WriteOptions::sync`]
//! is set, as in LevelDB and RocksDB; memtables of 64 MiB; segments encoded
//! with the database's shared compression model, trained in the background
//! (see `training.rs` for when).

use std::sync::Arc;

use pith_zip::{Codec, CodecChoice, Options as ZipOptions};

use crate::clock::Clock;
use crate::env::Fs;
use crate::segment::ValueReads;

/// Options for [`crate::DB::open`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Create the database if the directory holds none; default true.
    pub create_if_missing: bool,
    /// Fail if a database already exists; default false.
    pub error_if_exists: bool,
    /// A memtable this large (approximate bytes of keys, values and
    /// overhead) is frozen and built into a segment; default 64 MiB.
    pub memtable_bytes: usize,
    /// Frozen memtables waiting to be built before writers stall
    /// (backpressure); default 2.
    pub max_frozen_memtables: usize,
    /// Merges run while there are more segments than this; default 4.
    pub merge_trigger: usize,
    /// At most this many segments are merged at once; default 8.
    pub max_merge_width: usize,
    /// Writers stall while there are this many segments or more (merges
    /// fall behind); default 24.
    pub stall_segments: usize,
    /// Encode segments with a shared model, one per database (retrained
    /// when the data drifts), instead of a codec and dictionary per
    /// segment; default true. Flushes then encode without training and
    /// merges copy records without decoding; the model is in memory once.
    pub shared_models: bool,
    /// Record-store options ([`crate::ZipOptions`]: codec, zstd level,
    /// dictionary and sample sizes) for segments built from memtables when
    /// there is no shared model (`shared_models` off, or too little data
    /// yet to train one). Default: [`crate::CodecChoice::Force`]
    /// ([`crate::Codec::ZstdDict`]) at zstd level 3 with a 4 MiB sample
    /// (at most a quarter of [`Options::memtable_bytes`]), chosen for build
    /// speed; the rest [`crate::ZipOptions::default`]. Its `threads` is
    /// replaced by [`Options::background_threads`];
    /// [`Options::build_memory_bytes`] caps its sample and dictionary.
    pub flush_zip: ZipOptions,
    /// Record-store options ([`crate::ZipOptions`]) for merged and
    /// bulk-loaded segments without a shared model, and for training shared
    /// models (its sample size, dictionary sizes, parse depth and
    /// [`crate::Effort`]). Default: [`crate::ZipOptions::default`] (codec
    /// chosen per segment, zstd level 19). Its `threads` is replaced by
    /// [`Options::background_threads`]; [`Options::build_memory_bytes`]
    /// caps its sample and dictionary.
    pub merge_zip: ZipOptions,
    /// Threads one segment build encodes values (or trains a model) with,
    /// the building thread included; default: the number of cores.
    pub background_threads: usize,
    /// How much lower than the opening thread's the CPU priority of the
    /// flush and merge threads (and the encoders they start) is: a nice
    /// increment, 0 to 19; default 0 (the same priority). A server whose
    /// cores also answer requests raises it so that requests run before
    /// encoding (`pith serve` uses 10): tail latency falls while the
    /// cores are busy, and background work takes longer then, so writers
    /// may meet the memtable stall sooner. Linux only (elsewhere a nice
    /// value is the whole process's, and this is ignored).
    pub background_nice: u8,
    /// Keep a copy of what a point lookup walks in each segment (its trie,
    /// record tags, history, Bloom filter and the record store's offsets)
    /// in memory, so those stay resident however little page cache is left
    /// and a lookup costs at most the reads of its value; default true.
    /// Costs their size in memory (`pith stats` shows the tries' bytes; the
    /// rest is a few bytes per record). With it, an opened segment's file
    /// mapping is also emptied once the open is done, so the file's pages
    /// count in memory only as values are read (or `verify` and merges
    /// read them). Off, they are read through the file mapping like
    /// the values, and the kernel may evict them.
    pub resident_index: bool,
    /// Bytes of decoded segment values kept in memory for reads to reuse
    /// (values plus 256 bytes for each entry of up to sixteen neighbouring
    /// records), shared by every reader; default 8 MiB, 0 (or anything
    /// under 32 KiB) for none. A value of a segment is otherwise decoded on every
    /// read, which is most of a scan's cost; the cache is PithDB's block
    /// cache, at the grain of a record (its hits skip the decode and the
    /// record's checksum, both done when the value came in). Values of
    /// memtables are not cached (they are not encoded). `DB::stats`
    /// reports its hits and misses.
    pub value_cache_bytes: usize,
    /// How a point read ([`crate::DB::get`] and its kin) reads its value's
    /// stored bytes from a segment file on a value cache miss; default
    /// [`ValueReads::Mapped`]. Scans and merges read through the mapping
    /// either way.
    pub value_reads: ValueReads,
    /// Bits per key of each segment's Bloom filter (0: none); default 10,
    /// about 1% false positives. A segment whose keys are dense integers
    /// (its trie is `pith_trie`'s version 4) gets none: its trie answers a
    /// lookup sooner than a filter would.
    pub bloom_bits_per_key: u32,
    /// Bulk loads sort and build this many bytes of input per segment;
    /// default 256 MiB (their memory bound, about twice this).
    pub bulk_chunk_bytes: usize,
    /// Approximate memory one segment build (flush, merge or bulk-load
    /// chunk, beyond the chunk itself) may use; default `None`: the record
    /// store's defaults, about 70 MiB for a large merge, plus up to 4 MiB
    /// of encoded values held while the segment's trie is built beside
    /// them. A budget shrinks the training sample to a quarter of it, the
    /// global dictionary to a thirty-second (its hash chains take twelve
    /// times its size) and the values held to no more than the sample, at
    /// some cost in compression; for memory-limited deployments.
    pub build_memory_bytes: Option<usize>,
    /// The file system every file of the database goes through; default
    /// the operating system's ([`crate::env::RealFs`]). Tests pass a
    /// [`crate::env::MemFs`] or a [`crate::env::FaultFs`].
    pub fs: Arc<dyn Fs>,
    /// The clock deadlines are judged by ([`crate::WriteBatch::put_expiring`]);
    /// default the system's wall clock ([`crate::SystemClock`]). Tests pass
    /// a [`crate::ManualClock`].
    pub clock: Arc<dyn Clock>,
}

/// Options of one column family that differ from the database's
/// ([`crate::DB::set_family_options`]; RocksDB's per-family options). They
/// are not stored: set them again after each open (as a table layer does
/// for its families). What a segment was built with is recorded in it, so
/// segments built under other options read the same.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FamilyOptions {
    /// Bits per key of the family's Bloom filters, instead of
    /// [`Options::bloom_bits_per_key`]; `Some(0)`: none. A filter only
    /// answers point reads ([`crate::DB::get_cf`]): a family read only by
    /// seeks and scans (a non-unique index, whose keys end in the row's
    /// key) saves its size, about 1.2 bytes a key at 10 bits.
    pub bloom_bits_per_key: Option<u32>,
}

impl FamilyOptions {
    /// Options that change nothing.
    pub fn new() -> Self {
        FamilyOptions::default()
    }

    /// With `bits` Bloom bits per key (0: no filter).
    pub fn bloom_bits_per_key(mut self, bits: u32) -> Self {
        self.bloom_bits_per_key = Some(bits);
        self
    }
}

impl Options {
    /// Checks the options a database cannot run with; the error names the
    /// first option at fault and its value.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        let fault = if self.memtable_bytes == 0 {
            Some("memtable_bytes is 0; it must be positive".to_string())
        } else if self.max_frozen_memtables == 0 {
            Some("max_frozen_memtables is 0; it must be positive".to_string())
        } else if self.merge_trigger == 0 {
            Some("merge_trigger is 0; it must be positive".to_string())
        } else if self.background_threads == 0 {
            Some("background_threads is 0; it must be positive".to_string())
        } else if self.background_nice > 19 {
            Some(format!(
                "background_nice is {}; it must be at most 19",
                self.background_nice
            ))
        } else if self.max_merge_width < 2 {
            Some(format!(
                "max_merge_width is {}; it must be at least 2",
                self.max_merge_width
            ))
        } else if self.stall_segments <= self.merge_trigger {
            Some(format!(
                "stall_segments is {} and merge_trigger {}; stall_segments must be above merge_trigger",
                self.stall_segments, self.merge_trigger
            ))
        } else {
            None
        };
        match fault {
            Some(message) => Err(crate::Error::InvalidArgument(message)),
            None => Ok(()),
        }
    }

    /// `zip` shrunk to fit [`Options::build_memory_bytes`].
    pub(crate) fn within_build_budget(&self, zip: &pith_zip::Options) -> pith_zip::Options {
        self.within_share_of_budget(zip, 1)
    }

    /// `zip` for one of `builds` builds running at once: each gets its
    /// share of [`Options::background_threads`] (at least one) and of
    /// [`Options::build_memory_bytes`].
    pub(crate) fn within_share_of_budget(
        &self,
        zip: &pith_zip::Options,
        builds: usize,
    ) -> pith_zip::Options {
        let builds = builds.max(1);
        let mut zip = zip.clone();
        zip.threads = (self.background_threads / builds).max(1);
        if let Some(budget) = self.build_memory_bytes.map(|b| b / builds) {
            zip.sample_bytes = zip.sample_bytes.min(budget / 4).max(64 << 10);
            zip.global_dict_bytes = zip.global_dict_bytes.min(budget / 32).max(16 << 10);
        }
        zip
    }
}

impl Default for Options {
    fn default() -> Self {
        let flush_zip = pith_zip::Options {
            codec: CodecChoice::Force(Codec::ZstdDict),
            zstd_level: 3,
            sample_bytes: 4 << 20,
            ..pith_zip::Options::default()
        };
        Options {
            create_if_missing: true,
            error_if_exists: false,
            memtable_bytes: 64 << 20,
            max_frozen_memtables: 2,
            merge_trigger: 4,
            max_merge_width: 8,
            stall_segments: 24,
            shared_models: true,
            flush_zip,
            merge_zip: pith_zip::Options::default(),
            background_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            background_nice: 0,
            resident_index: true,
            value_cache_bytes: 8 << 20,
            value_reads: ValueReads::Mapped,
            bloom_bits_per_key: 10,
            bulk_chunk_bytes: 256 << 20,
            build_memory_bytes: None,
            fs: crate::env::default_fs(),
            clock: Arc::new(crate::clock::SystemClock),
        }
    }
}

/// Options for one write.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// fsync the write-ahead log before acknowledging; default false (the
    /// write survives a process crash, not a power loss). Writes grouped
    /// with a synced write are synced too.
    pub sync: bool,
    /// Leave this write's log record in the engine's buffer (default
    /// false): it is written with the next write that is not deferred, by
    /// [`DB::write_log`](crate::DB::write_log), a log sync, a memtable
    /// switch, or close, and at once when the buffer passes 1 MiB. The
    /// write is visible to readers at once, but until its record is
    /// written a process crash loses it. So a server can apply many
    /// clients' writes and then write all their records in one system
    /// call before it replies to any of them, as Redis does for its
    /// append-only file once per event-loop turn. Ignored with `sync`.
    pub defer_log: bool,
}

impl WriteOptions {
    /// Options with `sync` set.
    pub fn synced() -> Self {
        WriteOptions {
            sync: true,
            defer_log: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_option_is_named_with_its_value() {
        assert!(Options::default().validate().is_ok());
        let message = |o: Options| match o.validate() {
            Err(crate::Error::InvalidArgument(m)) => m,
            other => panic!("{other:?}"),
        };
        let m = message(Options {
            max_merge_width: 1,
            ..Options::default()
        });
        assert_eq!(m, "max_merge_width is 1; it must be at least 2");
        let m = message(Options {
            stall_segments: 4,
            merge_trigger: 4,
            ..Options::default()
        });
        assert!(
            m.starts_with("stall_segments is 4 and merge_trigger 4"),
            "{m}"
        );
        let m = message(Options {
            memtable_bytes: 0,
            ..Options::default()
        });
        assert!(m.starts_with("memtable_bytes is 0"), "{m}");
    }
}
