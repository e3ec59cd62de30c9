//! The one error type of `pith-zip`.
//!
//! Opening validates the footer, the section sizes (with overflow checks),
//! the metadata checksum and the offsets, so an opened store never reads out
//! of bounds; record bytes are checked when a
//! record is decoded (per-record crc32c), and a mismatch names the record.

use thiserror::Error;

/// Errors from building, opening or reading a record store.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes do not end with a record-store footer.
    #[error("not a pith record store: bad magic (expected \"PITHZIP\\0\" in the footer)")]
    BadMagic,
    /// The format version is not one this build reads.
    #[error(
        "unsupported record store version {found} (this build reads 1 to {expected}); upgrade pith-zip"
    )]
    UnsupportedVersion {
        /// Newest version this build reads.
        expected: u32,
        /// Version found.
        found: u32,
    },
    /// A stored checksum does not match the bytes it covers.
    #[error("record store checksum mismatch in {region}: stored {stored:#010x}, computed {computed:#010x}; the bytes are corrupt")]
    ChecksumMismatch {
        /// `footer`, `metadata`, `pool` or `record N`.
        region: String,
        /// Stored checksum.
        stored: u32,
        /// Computed checksum.
        computed: u32,
    },
    /// The bytes are shorter than the footer says.
    #[error("record store truncated: {what} needs {needed} bytes, {available} available")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes present.
        available: u64,
    },
    /// The buffer is not 8-byte aligned.
    #[error("record store bytes must be 8-byte aligned (as from mmap); copy them into an aligned buffer")]
    Misaligned,
    /// A structural invariant does not hold.
    #[error("record store corrupt at byte {offset}: {detail}")]
    Corrupt {
        /// Byte offset of the bad structure.
        offset: u64,
        /// What is wrong.
        detail: String,
    },
    /// A record id past the end.
    #[error("record id {id} out of range (the store holds {len} records)")]
    IdOutOfRange {
        /// The id asked for.
        id: u64,
        /// Number of records.
        len: u64,
    },
    /// A record or the store exceeds what the format addresses.
    #[error("{what} too large: {size} bytes (limit {limit})")]
    TooLarge {
        /// What overflowed.
        what: &'static str,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The build's input source yielded different records on its second pass.
    #[error("the record source changed between the builder's two passes")]
    InputChanged,
    /// zstd failed (training, compressing, or decoding corrupt bytes).
    #[error("zstd: {0}")]
    Zstd(String),
    /// A record or model of the global codec does not decode.
    #[error("global codec: {0}")]
    Codec(String),
    /// The store is encoded with a shared model, and it was not given.
    #[error("the record store is encoded with shared model {} (fingerprint {:#010x}); open it with that model", .model.id, .model.fingerprint)]
    ModelRequired {
        /// The model the store needs.
        model: crate::ModelRef,
    },
    /// A model other than the one the bytes were encoded with.
    #[error("model mismatch: expected model {} (fingerprint {:#010x}), found model {} (fingerprint {:#010x})", .expected.id, .expected.fingerprint, .found.id, .found.fingerprint)]
    ModelMismatch {
        /// The model required.
        expected: crate::ModelRef,
        /// The model offered.
        found: crate::ModelRef,
    },
    /// Writing the store failed.
    #[error("writing record store: {0}")]
    Io(#[from] std::io::Error),
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
