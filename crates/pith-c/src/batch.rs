//! Write batches: put, delete, clear, iterate, append.
//!
//! The engine's `WriteBatch` cannot list its operations, and LevelDB's
//! `leveldb_writebatch_iterate` and `_append` need them, so a
//! [`leveldb_writebatch_t`] keeps its own list, in the order given, and
//! builds an engine batch from it at `leveldb_write` (the list is kept, so
//! a batch can be written again, as in LevelDB). Used by one thread at a
//! time.

use std::ffi::{c_char, c_void};

use crate::ffi::{self, guard_quiet};
use crate::handle;

/// One operation of a batch.
#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

/// A write batch (`leveldb_writebatch_create`).
#[derive(Clone, Debug, Default)]
pub struct leveldb_writebatch_t {
    ops: Vec<Op>,
}

impl leveldb_writebatch_t {
    /// The engine batch doing the same, in the same order.
    pub(crate) fn engine(&self) -> engine::WriteBatch {
        let mut b = engine::WriteBatch::new();
        for op in &self.ops {
            match op {
                Op::Put(k, v) => b.put(k, v),
                Op::Delete(k) => b.delete(k),
            };
        }
        b
    }

    /// Every key the batch touches (with repeats).
    pub(crate) fn keys(&self) -> Vec<&[u8]> {
        self.ops
            .iter()
            .map(|op| match op {
                Op::Put(k, _) | Op::Delete(k) => k.as_slice(),
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
            .ops
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
        b.ops.push(Op::Put(key.to_vec(), val.to_vec()));
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
        b.ops.push(Op::Delete(key.to_vec()));
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
        for op in &b.ops {
            match (op, put, deleted) {
                // SAFETY: the callbacks were given with this state; the
                // slices are valid during the call.
                (Op::Put(k, v), Some(f), _) => unsafe {
                    f(
                        state,
                        k.as_ptr().cast(),
                        k.len(),
                        v.as_ptr().cast(),
                        v.len(),
                    )
                },
                // SAFETY: as above.
                (Op::Delete(k), _, Some(f)) => unsafe { f(state, k.as_ptr().cast(), k.len()) },
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
        let ops = unsafe { handle::get(source, "the source batch") }?
            .ops
            .clone();
        // SAFETY: as above; no other borrow of it is alive.
        unsafe { handle::get_mut(destination, "the destination batch") }?
            .ops
            .extend(ops);
        Ok(())
    })
}
