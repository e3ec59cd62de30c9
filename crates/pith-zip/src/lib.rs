//! `pith-zip`: record stores. A segment's values are compressed together,
//! against one dictionary built from all of them, and each record decodes
//! alone by its id, without touching its neighbours and without a block
//! cache.
//!
//! ```
//! use pith_zip::{build_to_vec, Options, Store};
//!
//! let records: Vec<String> = (0..1000).map(|i| format!("Package: pkg{i}\nVersion: 1.{i}\n")).collect();
//! let (bytes, stats) = build_to_vec(&records, &Options::default())?;
//! // Stores open in place from 8-byte aligned bytes, as from mmap.
//! let mut words = vec![0u64; bytes.len().div_ceil(8)];
//! bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(&bytes);
//! let store = Store::open(&bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()])?;
//! let mut out = Vec::new();
//! store.get(42, &mut out)?;
//! assert_eq!(out, records[42].as_bytes());
//! assert!(stats.store_bytes < stats.raw_bytes);
//! # Ok::<(), pith_zip::Error>(())
//! ```
//!
//! # Codecs
//!
//! * [`Codec::Plain`]: records as they are (incompressible data).
//! * [`Codec::Fixed`]: plain records of one length without the byte
//!   positions that are the same in all of them (held once): written in
//!   place of plain whenever that is smaller (`fixed.rs`).
//! * [`Codec::ZstdDict`]: each record a magicless zstd frame against a
//!   dictionary trained (ZDICT) on a sample of the whole input, decoded with
//!   a prepared dictionary.
//! * [`Codec::Global`]: our own codec in the spirit of Terark's PA-Zip: a
//!   megabytes-large dictionary of raw record bytes sampled from the whole
//!   input (the parts of them other records copy), one set of static
//!   Huffman tables shared by every record, and
//!   each record a stream of literals and matches into the dictionary (at
//!   offsets predicted from the previous match) or into itself.
//!
//! The builder picks one by trying them on held-out records of the sample
//! ([`CodecChoice::Auto`]); [`CodecChoice::Force`] overrides it.
//!
//! # Shared models
//!
//! * [`Codec::Shared`]: the global codec with its model outside the store.
//!   A [`Model`] is trained once ([`Model::train`]) and stored in its own
//!   file; [`SharedBuilder`] encodes stores with it in one pass, without
//!   training, and copies records from another store with the same model
//!   without decoding them ([`Store::encoded`], [`SharedBuilder::push_encoded`]);
//!   [`Store::open_with_model`] opens such a store.
//!
//! # Checksums
//!
//! Every read is checked: records are checksummed in groups of
//! consecutive records (one record, or up to 64 small ones; a crc32c of the
//! group's stored bytes, checked before a record is decoded), so small
//! records do not each pay 4 bytes (`checksums.rs`; a read sums its group
//! in three interleaved streams, `crc.rs`).
//!
//! The byte layout is in `docs/format.md` ("Record store, versions 1 to
//! 3").

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

#[cfg(target_endian = "big")]
compile_error!(
    "pith-zip reads its little-endian format in place and supports little-endian targets only"
);

mod bits;
mod builder;
mod checksums;
mod crc;
mod error;
mod fixed;
mod format;
// The fuzz entry points are not API: built for this crate's tests, and for
// the cargo-fuzz targets (`fuzz/`) with the `fuzzing` feature.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
mod global;
mod huffman;
mod model;
mod offsets;
mod shared;
mod store;
mod threads;
mod zstd_codec;

pub use builder::{build, build_to_vec, BuildStats, CodecChoice, Options, Sample};
pub use error::{Error, Result};
pub use format::{Codec, MAGIC};
pub use global::Effort;
pub use model::{
    compressible, IndexHold, Model, ModelRef, MODEL_HEADER_BYTES, MODEL_MAGIC, PROBE_RATIO,
};
pub use shared::{Encoded, SharedBuilder, BATCH_BYTES_PER_THREAD};
pub use store::Store;

#[cfg(test)]
mod golden_tests;
#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod tests;
