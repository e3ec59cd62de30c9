//! Helpers shared by the integration tests.
#![allow(dead_code)]

use pith::Options;

/// Options that make memtables flush and segments merge after a few
/// kilobytes, so small tests exercise the whole lifecycle.
pub fn small() -> Options {
    Options {
        memtable_bytes: 16 << 10,
        merge_trigger: 3,
        stall_segments: 12,
        ..Options::default()
    }
}

/// Collects a whole forward scan.
pub fn all(db: &pith::DB) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.range(None, None)
        .collect::<Result<Vec<_>, _>>()
        .expect("scan")
}
