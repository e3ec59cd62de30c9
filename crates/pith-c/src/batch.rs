//! Write batches: put, delete, clear, iterate, append.
//!
//! A [`leveldb_writebatch_t`] is an engine `WriteBatch`, which keeps its
//! operations encoded in order and lists them (`iterate`) and appends
//! another batch's (`append`); `leveldb_write` writes a copy, so a batch
//! can be written again, as in LevelDB. Used by one thread at a time.

use std::ffi::{c_char, c_void};

use crate::ffi::{self, guard_quiet};
use crate::handle;

/// A write batch (`leveldb_writebatch_create`).
#[derive(Clone, Debug, Default)]
pub struct leveldb_writebatch_t {
    batch: engine::WriteBatch,
}

impl leveldb_writebatch_t {
    /// The engine batch to write (a copy: the batch can be written again).
    pub(crate) fn engine(&self) -> engine::WriteBatch {
        self.batch.clone()
    }

    /// Every key the batch touches (with repeats).
    pub(crate) fn keys(&self) -> Vec<&[u8]> {
        self.batch
            .iter()
            .map(|op| match op {
                engine::BatchOp::Put { key, .. } | engine::BatchOp::Delete { key, .. } => key,
            })
            .collect()
    }
}

/// See `leveldb_writebatch_create` in pith/c.h.
#[no_mangle]
pub extern "C" fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t {
    guard_quiet(std::ptr::null_mut(), || {
        Ok(handle::into_raw(leveldb_writebatch_t::default()))
    })
}

/// See `leveldb_writebatch_destroy` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_destroy(b: *mut leveldb_writebatch_t) {
    guard_quiet((), || {
        // SAFETY: C gives back a batch from leveldb_writebatch_create, once.
        unsafe { handle::destroy(b) };
        Ok(())
    })
}

/// See `leveldb_writebatch_clear` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_clear(b: *mut leveldb_writebatch_t) {
    guard_quiet((), || {
        // SAFETY: the caller's live batch, used by this thread only.
        unsafe { handle::get_mut(b, "the write batch") }?
            .batch
            .clear();
        Ok(())
    })
}

/// See `leveldb_writebatch_put` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_put(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    guard_quiet((), || {
        // SAFETY: the caller's live batch, and byte ranges of the given
        // lengths.
        let (b, key, val) = unsafe {
            (
                handle::get_mut(b, "the write batch")?,
                ffi::bytes(key, klen, "the key")?,
                ffi::bytes(val, vlen, "the value")?,
            )
        };
        b.batch.put(key, val);
        Ok(())
    })
}

/// See `leveldb_writebatch_delete` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_delete(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: usize,
) {
    guard_quiet((), || {
        // SAFETY: the caller's live batch, and a byte range of the given
        // length.
        let (b, key) = unsafe {
            (
                handle::get_mut(b, "the write batch")?,
                ffi::bytes(key, klen, "the key")?,
            )
        };
        b.batch.delete(key);
        Ok(())
    })
}

type PutFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize);
type DeletedFn = unsafe extern "C" fn(*mut c_void, *const c_char, usize);

/// See `leveldb_writebatch_iterate` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_iterate(
    b: *const leveldb_writebatch_t,
    state: *mut c_void,
    put: Option<PutFn>,
    deleted: Option<DeletedFn>,
) {
    guard_quiet((), || {
        // SAFETY: the caller's live batch.
        let b = unsafe { handle::get(b, "the write batch") }?;
        for op in b.batch.iter() {
            match (op, put, deleted) {
                // SAFETY: the callbacks were given with this state; the
                // slices are valid during the call.
                (
                    engine::BatchOp::Put {
                        key: k, value: v, ..
                    },
                    Some(f),
                    _,
                ) => unsafe {
                    f(
                        state,
                        k.as_ptr().cast(),
                        k.len(),
                        v.as_ptr().cast(),
                        v.len(),
                    )
                },
                // SAFETY: as above.
                (engine::BatchOp::Delete { key: k, .. }, _, Some(f)) => unsafe {
                    f(state, k.as_ptr().cast(), k.len())
                },
                _ => {}
            }
        }
        Ok(())
    })
}

/// See `leveldb_writebatch_append` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writebatch_append(
    destination: *mut leveldb_writebatch_t,
    source: *const leveldb_writebatch_t,
) {
    guard_quiet((), || {
        // SAFETY: the caller's live batches; appending a batch to itself
        // is allowed, so the source is copied before the destination is
        // borrowed mutably.
        let source = unsafe { handle::get(source, "the source batch") }?
            .batch
            .clone();
        // SAFETY: as above; no other borrow of it is alive.
        unsafe { handle::get_mut(destination, "the destination batch") }?
            .batch
            .append(&source);
        Ok(())
    })
}
