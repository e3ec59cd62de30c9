//! PithDB's own calls, beyond LevelDB's API: regex search, stats, bulk
//! load, verify, flush (`pith_*`).
//!
//! Same conventions as the LevelDB calls (errptr, malloc'd results). The
//! search callback gets pointers valid for the call only; when the
//! database has a comparator, consecutive matches are checked with it
//! like an iterator's steps.

use std::ffi::{c_char, c_void};

use crate::db::leveldb_t;
use crate::error::{Error, Result};
use crate::ffi::{self, guard, ErrPtr};
use crate::handle;
use crate::options::leveldb_readoptions_t;
use crate::props;

type MatchFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> u8;

/// See `pith_search` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn pith_search(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    pattern: *const c_char,
    limit: usize,
    include_values: u8,
    state: *mut c_void,
    on_match: Option<MatchFn>,
    errptr: ErrPtr,
) -> usize {
    guard(errptr, 0, || {
        // SAFETY: the caller's open database, NULL or live read options,
        // and a NUL-terminated pattern.
        let (db, o, pattern) = unsafe {
            (
                handle::get(db, "the database")?,
                options.as_ref(),
                ffi::cstr(pattern, "the pattern")?,
            )
        };
        let on_match = on_match.ok_or(Error::Null("the match callback"))?;
        let pattern = std::str::from_utf8(pattern).map_err(|_| {
            Error::BadArgument(
                "the pattern is not UTF-8; write non-UTF-8 bytes as \\xNN escapes".into(),
            )
        })?;
        // SAFETY: the caller keeps the options' snapshot unreleased.
        let search = match o.and_then(|o| unsafe { o.snapshot() }) {
            Some(s) => db.db.search_at(s, pattern)?,
            None => db.db.search(pattern)?,
        };
        let limit = if limit == 0 { usize::MAX } else { limit };
        let mut delivered = 0;
        let mut previous: Option<Vec<u8>> = None;
        let mut deliver = |key: Vec<u8>, value: Option<Vec<u8>>| -> Result<bool> {
            if let (Some(c), Some(p)) = (db.comparator, &previous) {
                c.check_step(p, &key, true)?;
            }
            let (v, vlen) = value
                .as_ref()
                .map_or((std::ptr::null(), 0), |v| (v.as_ptr().cast(), v.len()));
            // SAFETY: the callback was given with this state; the key and
            // value are valid during the call.
            let go_on = unsafe { on_match(state, key.as_ptr().cast(), key.len(), v, vlen) } != 0;
            delivered += 1;
            previous = Some(key);
            Ok(go_on && delivered < limit)
        };
        if include_values != 0 {
            for m in search {
                let (k, v) = m?;
                if !deliver(k, Some(v))? {
                    break;
                }
            }
        } else {
            for k in search.keys() {
                if !deliver(k?, None)? {
                    break;
                }
            }
        }
        Ok(delivered)
    })
}

/// See `pith_stats` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn pith_stats(db: *mut leveldb_t, errptr: ErrPtr) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: the caller's open database.
        let db = unsafe { handle::get(db, "the database") }?;
        Ok(ffi::malloc_cstring(&props::stats_json(&db.db)?))
    })
}

/// See `pith_bulk_load` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn pith_bulk_load(
    db: *mut leveldb_t,
    n: usize,
    keys: *const *const c_char,
    keylens: *const usize,
    values: *const *const c_char,
    valuelens: *const usize,
    errptr: ErrPtr,
) -> u64 {
    guard(errptr, 0, || {
        // SAFETY: the caller's open database.
        let db = unsafe { handle::get(db, "the database") }?;
        if n == 0 {
            return Ok(0);
        }
        // SAFETY: four arrays of `n` elements, by the contract.
        let (keys, keylens, values, valuelens) = unsafe {
            (
                ffi::array(keys, n, "the keys")?,
                ffi::array(keylens, n, "the key lengths")?,
                ffi::array(values, n, "the values")?,
                ffi::array(valuelens, n, "the value lengths")?,
            )
        };
        let mut records = Vec::with_capacity(n);
        for i in 0..n {
            let (Some(&k), Some(&kl), Some(&v), Some(&vl)) =
                (keys.get(i), keylens.get(i), values.get(i), valuelens.get(i))
            else {
                break;
            };
            // SAFETY: each key and value is valid for its length.
            records.push(unsafe { (ffi::bytes(k, kl, "a key")?, ffi::bytes(v, vl, "a value")?) });
        }
        if let Some(c) = db.comparator {
            c.check_ascending(&mut records.iter().map(|r| r.0).collect())?;
        }
        Ok(db.db.bulk_load(records)?.records)
    })
}

/// See `pith_verify` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn pith_verify(db: *mut leveldb_t, errptr: ErrPtr) -> *mut c_char {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: the caller's open database.
        let db = unsafe { handle::get(db, "the database") }?;
        let r = db.db.verify()?;
        Ok(ffi::malloc_cstring(&format!(
            "verified: {} segments ({} records), {} models, {} logs ({} records); {} torn logs kept",
            r.segments,
            r.records,
            r.models,
            r.wals,
            r.wal_records,
            r.torn_logs.len()
        )))
    })
}

/// See `pith_flush` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn pith_flush(db: *mut leveldb_t, errptr: ErrPtr) {
    guard(errptr, (), || {
        // SAFETY: the caller's open database.
        let db = unsafe { handle::get(db, "the database") }?;
        Ok(db.db.flush()?)
    })
}
