//! `pith`: PithDB, an embedded key-value engine built on searchable
//! compression.
//!
//! Writes go to a write-ahead log (group commit, optional fsync per write)
//! and a lock-free memtable. A full memtable is frozen and a background
//! thread builds it into an immutable *segment*: all keys in one succinct
//! trie (`pith-trie`, key <-> dense id), all values in one globally
//! compressed record store (`pith-zip`, one record decodes alone), plus a
//! sequence number and kind per record and a Bloom filter. Segments are
//! mmapped and read in place; background merges keep their number small
//! and drop versions no snapshot needs. A manifest, replaced atomically,
//! names the live segments.
//!
//! ```
//! use pith::{Options, WriteBatch, WriteOptions, DB};
//!
//! let dir = tempfile::tempdir()?;
//! let db = DB::open(dir.path(), Options::default())?;
//! db.put("apple", "red")?;
//! let mut batch = WriteBatch::new();
//! batch.put("banana", "yellow").put("cherry", "dark red").delete("apple");
//! db.write(WriteOptions::synced(), batch)?;
//! let snap = db.snapshot();
//! db.put("banana", "green")?;
//! db.flush()?; // memtable -> segment
//! assert_eq!(db.get("banana")?.as_deref(), Some(&b"green"[..]));
//! assert_eq!(db.get_at(&snap, "banana")?.as_deref(), Some(&b"yellow"[..]));
//! assert_eq!(db.get("apple")?, None);
//! let keys: Vec<Vec<u8>> = db.prefix(b"b").keys().collect::<pith::Result<_>>()?;
//! assert_eq!(keys, vec![b"banana".to_vec()]);
//! // Scans are double-ended, and take a snapshot too.
//! let (last, _) = db.range(None, None).next_back().expect("a key")?;
//! assert_eq!(last, b"cherry");
//! let old: Vec<_> = db.prefix_at(&snap, b"b").collect::<pith::Result<_>>()?;
//! assert_eq!(old, vec![(b"banana".to_vec(), b"yellow".to_vec())]);
//! // A regex over whole keys, walked through the segments' tries.
//! let (key, value) = db.search("c.*y")?.next().expect("a match")?;
//! assert_eq!((key.as_slice(), value.as_slice()), (&b"cherry"[..], &b"dark red"[..]));
//! db.delete_opt(WriteOptions::synced(), "cherry")?;
//! assert_eq!(db.search("c.*y")?.count(), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Reading
//!
//! Point reads ([`DB::get`]), scans ([`DB::range`], [`DB::prefix`]: a
//! [`Scan`], double-ended, with [`Scan::keys`] to decode no value), regex
//! search ([`DB::search`]: a lazy [`Search`]) and the two-way
//! [`DbIterator`] ([`DB::iter`]) read the current state; each has an `_at`
//! variant that reads as of a [`Snapshot`].
//!
//! # Column families
//!
//! Named key spaces in one database, as RocksDB has them
//! ([`DB::create_family`], [`DB::drop_family`], a [`ColumnFamily`] handle
//! and the `_cf` methods). Each has its own memtables, segments, merges
//! and shared compression models, so an index's keys and a table's values
//! are each compressed with a model of their own kind. They share the log
//! (a [`WriteBatch`] across families is atomic), the sequence numbers (one
//! [`Snapshot`] reads every family at the same point) and the manifest.
//! Memtables switch together and a flush builds one segment per family
//! from them in one manifest edit (RocksDB's `atomic_flush`), so no family
//! holds a log back. The methods without `_cf` use the default family,
//! which is what a database without families has; such a database keeps
//! its version 2 manifest (older builds still open it) until a family is
//! created.
//!
//! ```
//! use pith::{WriteBatch, WriteOptions, DB};
//!
//! let dir = tempfile::tempdir()?;
//! let db = DB::open(dir.path(), pith::Options::default())?;
//! let rows = db.create_family("rows")?;
//! let by_name = db.create_family("by_name")?;
//! let mut batch = WriteBatch::new();
//! batch.put_cf(&rows, "id:7", "alice,1990").put_cf(&by_name, "alice/id:7", "");
//! db.write(WriteOptions::synced(), batch)?; // both or neither
//! let snap = db.snapshot();
//! assert_eq!(db.get_cf_at(&rows, &snap, "id:7")?.as_deref(), Some(&b"alice,1990"[..]));
//! let names: Vec<_> = db.prefix_cf(&by_name, b"alice/")?.keys().collect::<pith::Result<_>>()?;
//! assert_eq!(names, vec![b"alice/id:7".to_vec()]);
//! assert_eq!(db.get("id:7")?, None); // the default family is another key space
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Durability
//!
//! A write returns once it is in the log in the OS; with
//! [`WriteOptions::sync`] once the log is fsynced. Recovery replays the
//! logs and stops at a torn tail. Segment files and the manifest are
//! written to temporary names, fsynced and renamed. A `LOCK` file keeps a
//! second process (or handle) out. All file access goes through the
//! file-system seam in [`env`](mod@env), whose durability contract the engine
//! relies on, and whose in-memory and fault-injecting implementations the
//! power-loss and I/O-error tests use.
//!
//! # Thread safety
//!
//! [`DB`] is `Send + Sync`: share one handle (in an `Arc`) among threads.
//! Reads never block on writes or merges; writers are serialized through
//! group commit. Iterators and snapshots are independent of the handle's
//! later changes.
//!
//! On-disk formats are in `docs/format.md` (WAL, manifest, segment file).

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

// Layers, bottom to top: each module imports only modules before it on
// this line, so none imports one that imports it back (the `layering`
// test reads the line and checks every module's imports against it).
// layers: dbformat family clock filename env error priority batch records wal manifest memtable iter search model_file value_cache segment merge options core training write bulk background recovery reads db fuzz
mod background;
mod batch;
mod bulk;
mod clock;
mod core;
mod db;
mod dbformat;
pub mod env;
mod error;
mod family;
mod filename;
// The fuzz entry points are not API: built for the cargo-fuzz targets
// (`fuzz/`) and the fuzz tests with the `fuzzing` feature (this crate's
// dev-dependency on itself turns it on for `cargo test`).
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod iter;
mod manifest;
mod memtable;
mod merge;
mod model_file;
mod options;
mod priority;
mod reads;
mod records;
mod recovery;
mod search;
mod segment;
mod training;
mod value_cache;
mod wal;
mod write;

#[cfg(test)]
mod golden_tests;

pub use batch::{BatchOp, WriteBatch};
pub use bulk::BulkStats;
pub use clock::{Clock, ManualClock, SystemClock};
pub use db::{ModelInfo, Snapshot, Stats, VerifyReport, DB};
pub use error::{Error, Result};
pub use family::ColumnFamily;
pub use iter::{DbIterator, Scan, ScanKeys};
pub use options::{FamilyOptions, Options, WriteOptions};
/// Record-store options (`pith-zip`'s), the type of [`Options::flush_zip`]
/// and [`Options::merge_zip`].
pub use pith_zip::Options as ZipOptions;
// The types of `ZipOptions`' fields.
pub use pith_zip::{Codec, CodecChoice, Effort};
pub use records::Records;
pub use recovery::RecoveryReport;
pub use search::{Search, SearchKeys};
pub use segment::{SegmentInfo, ValueReads};
pub use value_cache::ValueCacheStats;
