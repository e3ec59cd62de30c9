//! The names of a database's files, in one place.
//!
//! ```text
//! MANIFEST        the live segments and logs (manifest.rs)
//! MANIFEST.tmp    a manifest being written; renamed over MANIFEST
//! LOCK            held (flock) by the process that has the database open
//! NNNNNN.wal      a write-ahead log (numbers share one counter, >= 6 digits)
//! NNNNNN.wal.torn a log whose tail was torn, kept for inspection
//! NNNNNN.seg      a segment
//! NNNNNN.model    a shared compression model (model_file.rs)
//! NNNNNN.tmp      a segment or model being written; renamed when whole
//! ```
//!
//! A database is created only in an empty directory (`recovery.rs`), so
//! every file in a database directory is one of these.

use std::path::{Path, PathBuf};

/// The manifest.
pub(crate) const MANIFEST: &str = "MANIFEST";
/// A manifest being written.
pub(crate) const MANIFEST_TMP: &str = "MANIFEST.tmp";
/// The lock file.
pub(crate) const LOCK: &str = "LOCK";

/// The kinds of numbered files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `NNNNNN.wal`.
    Wal,
    /// `NNNNNN.wal.torn`.
    TornWal,
    /// `NNNNNN.seg`.
    Segment,
    /// `NNNNNN.model`.
    Model,
    /// `NNNNNN.tmp`.
    Temp,
}

impl FileKind {
    fn extension(self) -> &'static str {
        match self {
            FileKind::Wal => "wal",
            FileKind::TornWal => "wal.torn",
            FileKind::Segment => "seg",
            FileKind::Model => "model",
            FileKind::Temp => "tmp",
        }
    }
}

/// The path of file `number` of `kind` in `dir`.
pub(crate) fn path(dir: &Path, number: u64, kind: FileKind) -> PathBuf {
    dir.join(format!("{number:06}.{}", kind.extension()))
}

/// The number and kind of a numbered file's name, if it is one.
pub(crate) fn parse(name: &str) -> Option<(u64, FileKind)> {
    let (stem, ext) = name.split_once('.')?;
    if stem.len() < 6 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let number = stem.parse().ok()?;
    let kind = [
        FileKind::Wal,
        FileKind::TornWal,
        FileKind::Segment,
        FileKind::Model,
        FileKind::Temp,
    ]
    .into_iter()
    .find(|k| k.extension() == ext)?;
    Some((number, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let dir = Path::new("/d");
        for kind in [
            FileKind::Wal,
            FileKind::TornWal,
            FileKind::Segment,
            FileKind::Model,
            FileKind::Temp,
        ] {
            for n in [0, 7, 123_456, 9_999_999] {
                let p = path(dir, n, kind);
                let name = p.file_name().and_then(|s| s.to_str()).expect("utf-8");
                assert_eq!(parse(name), Some((n, kind)), "{name}");
            }
        }
        assert_eq!(parse("12345.wal"), None);
        assert_eq!(parse("000001.txt"), None);
        assert_eq!(parse("MANIFEST"), None);
    }
}
