//! The one error type of the engine.
//!
//! Corruption is always reported as [`Error::Corruption`] with the file and,
//! where known, the byte offset, whichever layer found it (a segment's trie,
//! its record store, the WAL or the manifest). I/O failures carry the path
//! they happened on; a full disk is [`Error::NoSpace`]. Nothing in the
//! engine panics on bad bytes.
//!
//! Errors are `Clone` (I/O causes are shared through `Arc`), so the leader
//! of a write group hands every follower the same typed error, and a
//! database that stopped writes keeps its cause in [`Error::Poisoned`].

use std::path::PathBuf;
use std::sync::Arc;

use thiserror::Error;

/// Errors from the engine.
#[derive(Clone, Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: Arc<std::io::Error>,
    },
    /// The disk (or the user's quota) is full. Nothing acknowledged is
    /// lost; free space and retry (after a reopen if writes stopped).
    #[error("no space left on the device writing {path}: {source}; free some space (then reopen the database if it stopped accepting writes)")]
    NoSpace {
        /// The file being written.
        path: PathBuf,
        /// The cause.
        source: Arc<std::io::Error>,
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
    #[error("{path}: unsupported format version {found} (this build reads up to {expected}){}", newer_build_hint(*.found, *.expected))]
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
    /// There is no database in the directory, and creating one there would
    /// mix its files with someone else's.
    #[error("refusing to create a database in {path}: it already holds {entry}, which is not a PithDB file; use an empty directory")]
    DirectoryNotEmpty {
        /// The directory.
        path: PathBuf,
        /// One entry that is not ours.
        entry: String,
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
    /// more writes until it is reopened (reads still work). Holds the
    /// failure that stopped it.
    #[error("the database stopped accepting writes after an earlier failure: {0}; reopen it")]
    Poisoned(Arc<Error>),
    /// The database was opened read-only.
    #[error("the database at {path} is open read-only")]
    ReadOnly {
        /// The database directory.
        path: PathBuf,
    },
    /// The handle is closing; the operation was not done.
    #[error("the database is closing")]
    Closing,
    /// No live column family by that name (or id): never created, or
    /// dropped (a handle of a dropped family stays invalid even if a
    /// family of the same name is created again).
    #[error("no column family {name} (never created, or dropped)")]
    NoSuchFamily {
        /// The family's name, or `id N` where only the id is known.
        name: String,
    },
    /// [`crate::DB::create_family`] of a name already in use.
    #[error("column family {name} already exists")]
    FamilyExists {
        /// The family's name.
        name: String,
    },
    /// The engine broke one of its own invariants (a bug, or a panic in
    /// the background thread); writes stop.
    #[error("internal error: {0}; please report it")]
    Internal(String),
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What to tell a user whose file has version `found` where this build
/// reads up to `expected`: a newer build's file is not damage.
fn newer_build_hint(found: u32, expected: u32) -> &'static str {
    if found > expected {
        "; a newer build wrote it: open it with that build, and do not remove it"
    } else {
        ""
    }
}

impl Error {
    /// An I/O failure on `path` (a full disk becomes [`Error::NoSpace`]).
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let (path, source) = (path.into(), Arc::new(source));
        if crate::env::is_no_space(&source) {
            Error::NoSpace { path, source }
        } else {
            Error::Io { path, source }
        }
    }

    /// True for [`Error::NoSpace`], also as the cause of [`Error::Poisoned`].
    pub fn is_no_space(&self) -> bool {
        match self {
            Error::NoSpace { .. } => true,
            Error::Poisoned(cause) => cause.is_no_space(),
            _ => false,
        }
    }

    /// The cause of a [`Error::Poisoned`], or the error itself.
    pub fn root(&self) -> &Error {
        match self {
            Error::Poisoned(cause) => cause.root(),
            other => other,
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
            // A newer build wrote it: not damage, and not to be removed.
            pith_zip::Error::UnsupportedVersion { expected, found } => Error::UnsupportedVersion {
                path: path.to_path_buf(),
                expected,
                found,
            },
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
            pith_trie::Error::UnsupportedVersion { expected, found } => Error::UnsupportedVersion {
                path: path.to_path_buf(),
                expected,
                found,
            },
            other => Error::corrupt(path, base, format!("key trie: {other}")),
        }
    }
}
