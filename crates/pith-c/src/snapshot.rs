//! Snapshots: `leveldb_create_snapshot` and `leveldb_release_snapshot`.
//!
//! A [`leveldb_snapshot_t`] owns an engine snapshot, which pins the
//! versions it reads until released. It does not borrow the database
//! handle (the engine's snapshot holds what it needs), so releasing it
//! after `leveldb_close` is safe. Read options point at it; the caller
//! keeps it unreleased while they do, as in LevelDB.

use crate::db::leveldb_t;
use crate::ffi::guard_quiet;
use crate::handle;

/// A snapshot taken with `leveldb_create_snapshot`.
pub struct leveldb_snapshot_t {
    pub(crate) snap: engine::Snapshot,
}

/// See `leveldb_create_snapshot` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_create_snapshot(db: *mut leveldb_t) -> *const leveldb_snapshot_t {
    guard_quiet(std::ptr::null(), || {
        // SAFETY: `db` is the caller's open database.
        let db = unsafe { handle::get(db, "the database") }?;
        Ok(handle::into_raw(leveldb_snapshot_t {
            snap: db.db.snapshot(),
        })
        .cast_const())
    })
}

/// See `leveldb_release_snapshot` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_release_snapshot(
    _db: *mut leveldb_t,
    snap: *const leveldb_snapshot_t,
) {
    guard_quiet((), || {
        // SAFETY: C gives back a snapshot from leveldb_create_snapshot, once;
        // it was handed out as `const` only to match LevelDB's signature.
        unsafe { handle::destroy(snap.cast_mut()) };
        Ok(())
    })
}
