//! Properties, stats and approximate sizes, in LevelDB's shapes.
//!
//! PithDB has no levels: every segment is reported at level 0. The stats
//! come from `DB::stats` (one consistent view per call); the JSON form is
//! also `pith_stats`'. Approximate sizes are estimated from a key count
//! (see [`approximate_size`]), since the public engine API has no
//! per-range size.

use std::ffi::c_char;
use std::fmt::Write as _;

use crate::db::leveldb_t;
use crate::error::Result;
use crate::ffi::{self, guard_quiet};
use crate::handle;

/// Stats as one JSON object.
pub(crate) fn stats_json(db: &engine::DB) -> Result<String> {
    let s = db.stats()?;
    let raw = s.total(|g| g.raw_key_bytes) + s.total(|g| g.raw_value_bytes);
    let stored = s.total(|g| g.index_bytes) + s.total(|g| g.store_bytes);
    let ratio = if stored == 0 {
        0.0
    } else {
        raw as f64 / stored as f64
    };
    let v = serde_json::json!({
        "segments": s.segments.len(),
        "segment_records": s.total(|g| g.records),
        "segment_keys": s.total(|g| g.keys),
        "raw_key_bytes": s.total(|g| g.raw_key_bytes),
        "raw_value_bytes": s.total(|g| g.raw_value_bytes),
        "index_bytes": s.total(|g| g.index_bytes),
        "store_bytes": s.total(|g| g.store_bytes),
        "meta_bytes": s.total(|g| g.meta_bytes),
        "resident_bytes": s.total(|g| g.resident_bytes),
        "compression_ratio": ratio,
        "memtable_bytes": s.memtable_bytes,
        "memtable_entries": s.memtable_entries,
        "frozen_memtables": s.frozen_memtables,
        "disk_bytes": s.disk_bytes,
        "wal_bytes": s.wal_bytes,
        "last_sequence": s.last_sequence,
        "models": s.models.len(),
        "value_cache_bytes": s.value_cache.charged_bytes,
        "value_cache_hits": s.value_cache.hits,
        "value_cache_misses": s.value_cache.misses,
    });
    Ok(v.to_string())
}

/// Stats as a text table (the `leveldb.stats` property).
fn stats_text(db: &engine::DB) -> Result<String> {
    let s = db.stats()?;
    let mut t = String::new();
    let _ = writeln!(t, "                               PithDB segments");
    let _ = writeln!(
        t,
        "segment      keys   records  tombstones   file bytes  index bytes  store bytes  codec"
    );
    let _ = writeln!(
        t,
        "--------------------------------------------------------------------------------------"
    );
    for g in &s.segments {
        let _ = writeln!(
            t,
            "{:06} {:>10} {:>9} {:>11} {:>12} {:>12} {:>12}  {}",
            g.number,
            g.keys,
            g.records,
            g.tombstones,
            g.file_bytes,
            g.index_bytes,
            g.store_bytes,
            g.codec
        );
    }
    let _ = writeln!(
        t,
        "segments: {} (all at level 0: PithDB has no levels)",
        s.segments.len()
    );
    let _ = writeln!(
        t,
        "memtable: {} bytes, {} entries, {} frozen",
        s.memtable_bytes, s.memtable_entries, s.frozen_memtables
    );
    let _ = writeln!(
        t,
        "disk: {} bytes ({} in write-ahead logs)",
        s.disk_bytes, s.wal_bytes
    );
    let _ = writeln!(t, "last sequence: {}", s.last_sequence);
    Ok(t)
}

/// The value of property `name`, or `None` when unknown.
fn property(db: &leveldb_t, name: &[u8]) -> Result<Option<String>> {
    let name = String::from_utf8_lossy(name);
    Ok(Some(match name.as_ref() {
        "leveldb.stats" => stats_text(&db.db)?,
        "leveldb.sstables" => {
            let mut t = String::from("--- level 0 ---\n");
            for g in db.db.stats()?.segments {
                let _ = writeln!(
                    t,
                    " {:06}.seg: {} bytes, {} keys",
                    g.number, g.file_bytes, g.keys
                );
            }
            t
        }
        "leveldb.approximate-memory-usage" => {
            let s = db.db.stats()?;
            let models: u64 = s.models.iter().map(|m| m.heap_bytes).sum();
            (s.memtable_bytes + s.total(|g| g.resident_bytes) + models).to_string()
        }
        "pith.stats" => stats_json(&db.db)?,
        "pith.options" => db.options_report.clone(),
        other => match other
            .strip_prefix("leveldb.num-files-at-level")
            .map(str::parse::<u32>)
        {
            Some(Ok(0)) => db.db.stats()?.segments.len().to_string(),
            Some(Ok(_)) => "0".into(),
            _ => return Ok(None),
        },
    }))
}

/// See `leveldb_property_value` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_property_value(
    db: *mut leveldb_t,
    propname: *const c_char,
) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: the caller's open database and a NUL-terminated string.
        let (db, name) = unsafe {
            (
                handle::get(db, "the database")?,
                ffi::cstr(propname, "the property name")?,
            )
        };
        Ok(property(db, name)?.map_or(std::ptr::null_mut(), |v| ffi::malloc_cstring(&v)))
    })
}

/// The estimate for `[start, limit)`: the database's bytes on disk times
/// the share of its live keys that fall in the range.
fn approximate_size(
    db: &engine::DB,
    start: &[u8],
    limit: &[u8],
    total_keys: u64,
    disk_bytes: u64,
) -> u64 {
    if start >= limit || total_keys == 0 {
        return 0;
    }
    let in_range = db
        .range(Some(start), Some(limit))
        .keys()
        .filter(|k| k.is_ok())
        .count() as u128;
    let share = u128::from(disk_bytes) * in_range / u128::from(total_keys);
    u64::try_from(share).unwrap_or(u64::MAX)
}

/// See `leveldb_approximate_sizes` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_approximate_sizes(
    db: *mut leveldb_t,
    num_ranges: std::ffi::c_int,
    range_start_key: *const *const c_char,
    range_start_key_len: *const usize,
    range_limit_key: *const *const c_char,
    range_limit_key_len: *const usize,
    sizes: *mut u64,
) {
    guard_quiet((), || {
        let n = usize::try_from(num_ranges).unwrap_or(0);
        if n == 0 || sizes.is_null() {
            return Ok(());
        }
        // SAFETY: the caller's open database; `sizes` has room for `n`
        // values (checked not NULL above).
        let (db, sizes) = unsafe {
            (
                handle::get(db, "the database")?,
                std::slice::from_raw_parts_mut(sizes, n),
            )
        };
        sizes.fill(0);
        // SAFETY: four arrays of `n` elements each, by the contract.
        let (starts, start_lens, limits, limit_lens) = unsafe {
            (
                ffi::array(range_start_key, n, "the range starts")?,
                ffi::array(range_start_key_len, n, "the range start lengths")?,
                ffi::array(range_limit_key, n, "the range limits")?,
                ffi::array(range_limit_key_len, n, "the range limit lengths")?,
            )
        };
        let total_keys = db.db.count_keys()?;
        let disk_bytes = db.db.stats()?.disk_bytes;
        for (i, size) in sizes.iter_mut().enumerate() {
            let (Some(&s), Some(&sl), Some(&l), Some(&ll)) = (
                starts.get(i),
                start_lens.get(i),
                limits.get(i),
                limit_lens.get(i),
            ) else {
                break;
            };
            // SAFETY: each key is valid for its length, by the contract.
            let (start, limit) = unsafe {
                (
                    ffi::bytes(s, sl, "a range's start")?,
                    ffi::bytes(l, ll, "a range's limit")?,
                )
            };
            *size = approximate_size(&db.db, start, limit, total_keys, disk_bytes);
        }
        Ok(())
    })
}
