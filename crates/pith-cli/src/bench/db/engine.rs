//! The engines the database benchmark drives, behind one small trait.
//!
//! PithDB is always built in. The peers (RocksDB, LMDB) are compiled only
//! with the `peers` feature (`cargo build --release -p pith-cli --features
//! peers`), so the default build and CI stay fast. Each engine states its
//! settings in [`Engine::settings`], which the output records.

use std::path::Path;

use crate::CliError;

/// One engine under test. Shared by all benchmark threads.
pub trait Engine: Send + Sync {
    /// Writes a batch of records (one atomic batch or transaction).
    fn put_batch(&self, batch: &[(Vec<u8>, Vec<u8>)]) -> Result<(), CliError>;
    /// Reads one key; returns the value's length if present.
    fn get(&self, key: &[u8]) -> Result<Option<usize>, CliError>;
    /// Reads up to `n` records from the first key `>= start`; returns how
    /// many.
    fn scan(&self, start: &[u8], n: usize) -> Result<usize, CliError>;
    /// Flushes and compacts fully, so the size on disk is the settled one.
    fn settle(&self) -> Result<(), CliError>;
    /// The settings used, for the report.
    fn settings(&self) -> String;
}

/// Engine names `--engines` accepts (in this build).
pub fn available() -> Vec<&'static str> {
    let mut v = vec!["pith"];
    if cfg!(feature = "peers") {
        v.extend(["rocksdb", "rocksdb-zstd", "lmdb"]);
    }
    v
}

/// Opens engine `name` in `dir`. `cache_bytes` sizes caches that an
/// engine keeps beside the OS page cache (RocksDB's block cache);
/// `memtable_bytes` the write buffers (smaller under memory limits, so the
/// mixed workloads fit); `limited` says a memory limit is in force.
pub fn open(
    name: &str,
    dir: &Path,
    cache_bytes: u64,
    memtable_bytes: u64,
    limited: bool,
) -> Result<Box<dyn Engine>, CliError> {
    match name {
        "pith" => Ok(Box::new(Pith::open(
            dir,
            cache_bytes,
            limited,
            memtable_bytes,
        )?)),
        #[cfg(feature = "peers")]
        "rocksdb" => Ok(Box::new(peers::Rocks::open(
            dir,
            cache_bytes,
            memtable_bytes,
            false,
        )?)),
        #[cfg(feature = "peers")]
        "rocksdb-zstd" => Ok(Box::new(peers::Rocks::open(
            dir,
            cache_bytes,
            memtable_bytes,
            true,
        )?)),
        #[cfg(feature = "peers")]
        "lmdb" => Ok(Box::new(peers::Lmdb::open(dir)?)),
        other => {
            let _ = cache_bytes;
            Err(CliError::Usage(format!(
                "unknown engine {other:?}; this build has {} (peers need --features peers)",
                available().join(", ")
            )))
        }
    }
}

/// PithDB with its default options but the memtable size and, without a
/// memory limit, a value cache the size of a peer's block cache (decoded
/// records, as the block cache holds uncompressed blocks); under a limit,
/// no value cache and a segment-build budget of that size instead (the
/// memory it may use beside the page cache), and point reads that `pread`
/// their values (`pith::ValueReads`; RocksDB reads its blocks so too).
struct Pith {
    db: pith::DB,
    memtable_bytes: u64,
    value_cache: u64,
    build_budget: Option<usize>,
}

impl Pith {
    fn open(
        dir: &Path,
        cache_bytes: u64,
        limited: bool,
        memtable_bytes: u64,
    ) -> Result<Self, CliError> {
        let build_budget = limited.then_some(cache_bytes as usize);
        // Under a limit the memory is worth more as page cache: it holds
        // stored (compressed) records, several times as many as decoded
        // ones would fit. Measured on debian-packages at a fifth: a 1 MiB
        // value cache cost readrandom an eighth of its rate, a 2.5 MiB one
        // got the read phase killed by the cgroup.
        let value_cache = if limited { 0 } else { cache_bytes };
        // Measured at a fifth on debian-packages: `pread` served about a
        // tenth more reads than the mapping, which served about as much
        // more without a limit (see `pith::ValueReads`).
        let value_reads = match limited {
            true => pith::ValueReads::Pread,
            false => pith::ValueReads::Mapped,
        };
        let options = pith::Options {
            memtable_bytes: memtable_bytes as usize,
            build_memory_bytes: build_budget,
            value_cache_bytes: value_cache as usize,
            value_reads,
            ..pith::Options::default()
        };
        Ok(Pith {
            db: pith::DB::open(dir, options)?,
            memtable_bytes,
            value_cache,
            build_budget,
        })
    }
}

impl Engine for Pith {
    fn put_batch(&self, batch: &[(Vec<u8>, Vec<u8>)]) -> Result<(), CliError> {
        let mut b = pith::WriteBatch::new();
        for (k, v) in batch {
            b.put(k, v);
        }
        Ok(self.db.write(pith::WriteOptions::default(), b)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>, CliError> {
        Ok(self.db.get(key)?.map(|v| v.len()))
    }

    fn scan(&self, start: &[u8], n: usize) -> Result<usize, CliError> {
        let mut it = self.db.iter();
        it.seek(start);
        let mut got = 0;
        while got < n && it.valid() {
            std::hint::black_box(it.value());
            got += 1;
            it.next();
        }
        Ok(got)
    }

    fn settle(&self) -> Result<(), CliError> {
        Ok(self.db.compact()?)
    }

    fn settings(&self) -> String {
        let budget = match self.build_budget {
            Some(b) => format!(", segment builds within {} MiB", b >> 20),
            None => String::new(),
        };
        format!(
            "defaults but a {} MiB memtable{budget}: log without fsync, values encoded with the database's shared model (trained while the first memtable fills, or at the first flush; retrained on drift), merges copying encoded records, builds on every core, 10-bit Bloom filters, {}",
            self.memtable_bytes >> 20,
            match self.value_cache {
                0 => "no value cache (the memory is left to the page cache), values of point reads read with pread".to_string(),
                n => format!("a {} MiB cache of decoded values", n >> 20),
            }
        )
    }
}

#[cfg(feature = "peers")]
mod peers {
    use std::path::Path;

    use super::Engine;
    use crate::CliError;

    fn err(e: impl std::fmt::Display) -> CliError {
        CliError::Usage(format!("peer engine: {e}"))
    }

    /// RocksDB as the published comparisons configure it.
    pub struct Rocks {
        db: rocksdb::DB,
        settings: String,
    }

    impl Rocks {
        pub fn open(
            dir: &Path,
            cache_bytes: u64,
            memtable_bytes: u64,
            zstd: bool,
        ) -> Result<Self, CliError> {
            let mut opts = rocksdb::Options::default();
            opts.create_if_missing(true);
            opts.set_compaction_style(rocksdb::DBCompactionStyle::Level);
            opts.increase_parallelism(2);
            opts.set_max_background_jobs(2);
            opts.set_write_buffer_size(memtable_bytes as usize);
            opts.set_level_compaction_dynamic_level_bytes(true);
            let (block, codec) = if zstd {
                (16 << 10, rocksdb::DBCompressionType::Zstd)
            } else {
                (4 << 10, rocksdb::DBCompressionType::Snappy)
            };
            opts.set_compression_type(codec);
            opts.set_bottommost_compression_type(codec);
            let mut table = rocksdb::BlockBasedOptions::default();
            table.set_block_size(block);
            table.set_bloom_filter(10.0, false);
            let cache = rocksdb::Cache::new_lru_cache(cache_bytes.max(1 << 20) as usize);
            table.set_block_cache(&cache);
            table.set_cache_index_and_filter_blocks(true);
            table.set_pin_l0_filter_and_index_blocks_in_cache(true);
            opts.set_block_based_table_factory(&table);
            let db = rocksdb::DB::open(&opts, dir).map_err(err)?;
            let settings = format!(
                "leveled compaction, {} KiB blocks, {}, 10-bit Bloom filters, {} MiB block cache (index and filters in it), {} MiB memtable, WAL without fsync",
                block >> 10,
                if zstd { "zstd" } else { "snappy" },
                cache_bytes.max(1 << 20) >> 20,
                memtable_bytes >> 20
            );
            Ok(Rocks { db, settings })
        }
    }

    impl Engine for Rocks {
        fn put_batch(&self, batch: &[(Vec<u8>, Vec<u8>)]) -> Result<(), CliError> {
            let mut b = rocksdb::WriteBatch::default();
            for (k, v) in batch {
                b.put(k, v);
            }
            self.db.write(b).map_err(err)
        }

        fn get(&self, key: &[u8]) -> Result<Option<usize>, CliError> {
            Ok(self.db.get_pinned(key).map_err(err)?.map(|v| v.len()))
        }

        fn scan(&self, start: &[u8], n: usize) -> Result<usize, CliError> {
            let mut it = self.db.raw_iterator();
            it.seek(start);
            let mut got = 0;
            while got < n && it.valid() {
                std::hint::black_box(it.value());
                got += 1;
                it.next();
            }
            it.status().map_err(err)?;
            Ok(got)
        }

        fn settle(&self) -> Result<(), CliError> {
            self.db.flush().map_err(err)?;
            self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
            Ok(())
        }

        fn settings(&self) -> String {
            self.settings.clone()
        }
    }

    /// LMDB (a B+tree) through heed.
    pub struct Lmdb {
        /// `None` only while dropping.
        env: Option<heed::Env>,
        db: heed::Database<heed::types::Bytes, heed::types::Bytes>,
    }

    impl Lmdb {
        pub fn open(dir: &Path) -> Result<Self, CliError> {
            std::fs::create_dir_all(dir).map_err(|source| CliError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            let mut options = heed::EnvOpenOptions::new();
            options.map_size(64 << 30).max_dbs(1).max_readers(64);
            // SAFETY: NO_SYNC/NO_META_SYNC trade durability on power loss
            // for speed, as the other engines' unsynced logs do; the
            // directory is used by this process only.
            let env = unsafe {
                options.flags(
                    heed::EnvFlags::NO_SYNC
                        | heed::EnvFlags::NO_META_SYNC
                        | heed::EnvFlags::NO_READ_AHEAD,
                );
                options.open(dir)
            }
            .map_err(err)?;
            let mut wtxn = env.write_txn().map_err(err)?;
            let db = env.create_database(&mut wtxn, None).map_err(err)?;
            wtxn.commit().map_err(err)?;
            Ok(Lmdb { env: Some(env), db })
        }

        fn env(&self) -> Result<&heed::Env, CliError> {
            self.env
                .as_ref()
                .ok_or_else(|| err("LMDB environment already closed"))
        }
    }

    impl Drop for Lmdb {
        fn drop(&mut self) {
            // Unmap now, not when heed's registry lets go, so the files can
            // leave the page cache before the next phase.
            if let Some(env) = self.env.take() {
                env.prepare_for_closing().wait();
            }
        }
    }

    impl Engine for Lmdb {
        fn put_batch(&self, batch: &[(Vec<u8>, Vec<u8>)]) -> Result<(), CliError> {
            let mut wtxn = self.env()?.write_txn().map_err(err)?;
            for (k, v) in batch {
                self.db.put(&mut wtxn, k, v).map_err(err)?;
            }
            wtxn.commit().map_err(err)
        }

        fn get(&self, key: &[u8]) -> Result<Option<usize>, CliError> {
            let rtxn = self.env()?.read_txn().map_err(err)?;
            Ok(self.db.get(&rtxn, key).map_err(err)?.map(<[u8]>::len))
        }

        fn scan(&self, start: &[u8], n: usize) -> Result<usize, CliError> {
            let rtxn = self.env()?.read_txn().map_err(err)?;
            let range = (std::ops::Bound::Included(start), std::ops::Bound::Unbounded);
            let mut got = 0;
            for kv in self.db.range(&rtxn, &range).map_err(err)?.take(n) {
                std::hint::black_box(kv.map_err(err)?);
                got += 1;
            }
            Ok(got)
        }

        fn settle(&self) -> Result<(), CliError> {
            self.env()?.force_sync().map_err(err)
        }

        fn settings(&self) -> String {
            "B+tree, 64 GiB map, NO_SYNC | NO_META_SYNC | NO_READ_AHEAD, one write transaction per batch".into()
        }
    }
}
