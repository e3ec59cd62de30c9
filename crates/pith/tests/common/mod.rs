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

/// Cases per property test: `PITH_PROPTEST_CASES`, default 48.
pub fn proptest_cases() -> u32 {
    std::env::var("PITH_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(48)
}

/// The names in `/db` on `fs` that end with `ext`, sorted.
pub fn files(fs: &pith::env::MemFs, ext: &str) -> Vec<String> {
    use pith::env::Fs;
    let mut names: Vec<String> = fs
        .list(std::path::Path::new("/db"))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(ext))
        .collect();
    names.sort();
    names
}
