//! The one error type of the engine.
//!
//! Corruption is always reported as [`Error::Corruption`] with the file and,
//! where known, the byte offset, whichever layer found it (a segment's trie,
//! its record store, the WAL or the manifest). I/O failures carry the path
//! they happened on. Nothing in the engine panics on bad bytes.

use std::path::PathBuf;

use thiserror::Error;

/// Errors from the engine.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file's bytes are not what the engine wrote: a checksum mismatch, a
    /// bad magic, a structure that does not validate.
    #[error("corruption in {path} at byte {offset}: {detail}; restore the file from a backup or remove the database")]
    Corruption {
        /// The file.
        path: PathBuf,
        /// Byte offset of the bad structure (0 when the whole file is bad).
        offset: u64,
        /// What was wrong.
        detail: String,
    },
    /// A file was written by a format version this build does not read.
    #[error("{path}: unsupported format version {found} (this build reads {expected})")]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version this build reads.
        expected: u32,
        /// The version found.
        found: u32,
    },
    /// Another process (or another handle in this one) holds the database.
    #[error("database {path} is locked by another process or handle; close it first")]
    Locked {
        /// The database directory.
        path: PathBuf,
    },
    /// `Options::create_if_missing` is false and there is no database.
    #[error("no database at {path} (set create_if_missing to create one)")]
    NotFound {
        /// The directory.
        path: PathBuf,
    },
    /// `Options::error_if_exists` is true and a database exists.
    #[error("a database already exists at {path}")]
    AlreadyExists {
        /// The directory.
        path: PathBuf,
    },
    /// The caller passed something the engine cannot take.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A key regex did not compile.
    #[error("regex: {0}")]
    Regex(String),
    /// An earlier write or background job failed; the database accepts no
    /// more writes until it is reopened (reads still work).
    #[error("the database stopped accepting writes after an earlier failure: {0}; reopen it")]
    Poisoned(String),
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(
        path: impl Into<PathBuf>,
        offset: u64,
        detail: impl Into<String>,
    ) -> Self {
        Error::Corruption {
            path: path.into(),
            offset,
            detail: detail.into(),
        }
    }

    /// True for [`Error::Corruption`] (and version mismatches): the bytes on
    /// disk are bad, as opposed to an I/O failure or a usage error.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Corruption { .. } | Error::UnsupportedVersion { .. }
        )
    }

    /// Maps a record-store error on `path` to an engine error.
    pub(crate) fn from_zip(path: &std::path::Path, base: u64, e: pith_zip::Error) -> Self {
        match e {
            pith_zip::Error::Io(source) => Error::io(path, source),
            pith_zip::Error::Corrupt { offset, detail } => {
                Error::corrupt(path, base + offset, format!("record store: {detail}"))
            }
            other => Error::corrupt(path, base, format!("record store: {other}")),
        }
    }

    /// Maps a trie error on `path` to an engine error.
    pub(crate) fn from_trie(path: &std::path::Path, base: u64, e: pith_trie::Error) -> Self {
        match e {
            pith_trie::Error::Corrupt { offset, detail } => {
                Error::corrupt(path, base + offset as u64, format!("key trie: {detail}"))
            }
            pith_trie::Error::Regex(r) => Error::Regex(r),
            other => Error::corrupt(path, base, format!("key trie: {other}")),
        }
    }
}
