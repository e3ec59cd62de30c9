//! The database handle: open, close, put, delete, write, get.
//!
//! A [`leveldb_t`] owns an engine [`engine::DB`] (which is `Send + Sync`,
//! so C may call these from many threads at once), the comparator to
//! check keys with, if one was given, and the `pith.options` report made
//! at open. It is only ever borrowed shared; `leveldb_close` takes it
//! back once.

use std::ffi::c_char;
use std::path::Path;

use crate::batch::leveldb_writebatch_t;
use crate::comparator::Comparator;
use crate::error::Result;
use crate::ffi::{self, guard, guard_quiet, ErrPtr};
use crate::handle;
use crate::options::{leveldb_options_t, leveldb_readoptions_t, leveldb_writeoptions_t};

/// An open database.
pub struct leveldb_t {
    pub(crate) db: engine::DB,
    pub(crate) comparator: Option<Comparator>,
    /// How the LevelDB options given at open were taken.
    pub(crate) options_report: String,
}

impl leveldb_t {
    /// Opens the database at `path` with C options `o`: probes the
    /// comparator first, verifies every file after when `paranoid_checks`.
    pub(crate) fn open(o: &leveldb_options_t, path: &Path) -> Result<leveldb_t> {
        let comparator_name = match o.comparator {
            Some(c) => {
                c.probe()?;
                Some(c.name())
            }
            None => None,
        };
        let db = engine::DB::open(path, o.engine())?;
        if o.paranoid_checks {
            // A failure drops (and so closes) the database.
            db.verify()?;
        }
        Ok(leveldb_t {
            db,
            comparator: o.comparator,
            options_report: o.report(comparator_name.as_deref()),
        })
    }
}

/// See `leveldb_open` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_open(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: ErrPtr,
) -> *mut leveldb_t {
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: `options` is the caller's live options.
        let o = unsafe { handle::get(options, "options") }?;
        // SAFETY: `name` is a NUL-terminated string.
        let path = unsafe { ffi::path(name) }?;
        Ok(handle::into_raw(leveldb_t::open(o, path)?))
    })
}

/// See `leveldb_close` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_close(db: *mut leveldb_t) {
    guard_quiet((), || {
        // SAFETY: C gives back a handle from leveldb_open, once.
        if let Some(db) = unsafe { handle::take(db) } {
            // No errptr to report a failed final sync through, as in
            // LevelDB; the log's records up to it are in the OS already.
            let _ = db.db.close();
        }
        Ok(())
    })
}

/// See `leveldb_put` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_put(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: ErrPtr,
) {
    guard(errptr, (), || {
        // SAFETY: the caller's live handles, and byte ranges of the given
        // lengths.
        let (db, o, key, val) = unsafe {
            (
                handle::get(db, "the database")?,
                handle::get(options, "write options")?,
                ffi::bytes(key, keylen, "the key")?,
                ffi::bytes(val, vallen, "the value")?,
            )
        };
        Ok(db.db.put_opt(o.engine(), key, val)?)
    })
}

/// See `leveldb_delete` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_delete(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    errptr: ErrPtr,
) {
    guard(errptr, (), || {
        // SAFETY: the caller's live handles, and a byte range of the given
        // length.
        let (db, o, key) = unsafe {
            (
                handle::get(db, "the database")?,
                handle::get(options, "write options")?,
                ffi::bytes(key, keylen, "the key")?,
            )
        };
        Ok(db.db.delete_opt(o.engine(), key)?)
    })
}

/// See `leveldb_write` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_write(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    batch: *mut leveldb_writebatch_t,
    errptr: ErrPtr,
) {
    guard(errptr, (), || {
        // SAFETY: the caller's live handles.
        let (db, o, batch) = unsafe {
            (
                handle::get(db, "the database")?,
                handle::get(options, "write options")?,
                handle::get(batch, "the write batch")?,
            )
        };
        if let Some(c) = db.comparator {
            c.check_ascending(&mut batch.keys())?;
        }
        Ok(db.db.write(o.engine(), batch.engine())?)
    })
}

/// See `leveldb_get` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_get(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: ErrPtr,
) -> *mut c_char {
    // SAFETY: `vallen` is writable (or NULL, skipped).
    unsafe { ffi::set_len(vallen, 0) };
    guard(errptr, std::ptr::null_mut(), || {
        // SAFETY: the caller's live handles, and a byte range of the given
        // length.
        let (db, o, key) = unsafe {
            (
                handle::get(db, "the database")?,
                handle::get(options, "read options")?,
                ffi::bytes(key, keylen, "the key")?,
            )
        };
        // SAFETY: the caller keeps the options' snapshot unreleased.
        let value = match unsafe { o.snapshot() } {
            Some(s) => db.db.get_at(s, key)?,
            None => db.db.get(key)?,
        };
        let Some(value) = value else {
            return Ok(std::ptr::null_mut());
        };
        let p = ffi::malloc_bytes(&value, false);
        if p.is_null() {
            return Err(crate::error::Error::Io {
                what: format!("allocating {} bytes for a value", value.len()),
                source: std::io::Error::from(std::io::ErrorKind::OutOfMemory),
            });
        }
        // SAFETY: as above.
        unsafe { ffi::set_len(vallen, value.len()) };
        Ok(p)
    })
}
