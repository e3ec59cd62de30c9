//! Iterators: `leveldb_create_iterator` and the `leveldb_iter_*` calls.
//!
//! A [`leveldb_iterator_t`] owns an engine [`engine::DbIterator`] (which
//! holds the memtables and segments it reads, so it outlives
//! `leveldb_close` safely) and, when the database has a comparator, checks
//! it on each step: the first step on which the comparator disagrees with
//! byte order stops the iterator (not valid) with an error that
//! `leveldb_iter_get_error` returns; the error stays. Pointers from
//! `leveldb_iter_key` and `_value` point into the iterator and stay valid
//! until it moves. Used by one thread at a time.

use std::ffi::c_char;

use crate::comparator::Comparator;
use crate::db::leveldb_t;
use crate::error::Error;
use crate::ffi::{self, guard, guard_quiet, ErrPtr};
use crate::handle;
use crate::options::leveldb_readoptions_t;

/// An iterator (`leveldb_create_iterator`).
pub struct leveldb_iterator_t {
    it: engine::DbIterator,
    comparator: Option<Comparator>,
    /// A comparator disagreement found while stepping.
    error: Option<Error>,
}

impl leveldb_iterator_t {
    fn valid(&self) -> bool {
        self.error.is_none() && self.it.valid()
    }

    /// Steps once, checking the comparator on the two keys.
    fn step(&mut self, forward: bool) {
        let before = match self.comparator {
            Some(_) => self.it.key().map(<[u8]>::to_vec),
            None => None,
        };
        if forward {
            self.it.next();
        } else {
            self.it.prev();
        }
        if let (Some(c), Some(a), Some(b)) = (self.comparator, before, self.it.key()) {
            if let Err(e) = c.check_step(&a, b, forward) {
                self.error = Some(e);
            }
        }
    }
}

/// See `leveldb_create_iterator` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_create_iterator(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
) -> *mut leveldb_iterator_t {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: the caller's live handles.
        let (db, o) = unsafe {
            (
                handle::get(db, "the database")?,
                handle::get(options, "read options")?,
            )
        };
        // SAFETY: the caller keeps the options' snapshot unreleased.
        let it = match unsafe { o.snapshot() } {
            Some(s) => db.db.iter_at(s),
            None => db.db.iter(),
        };
        Ok(handle::into_raw(leveldb_iterator_t {
            it,
            comparator: db.comparator,
            error: None,
        }))
    })
}

/// See `leveldb_iter_destroy` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_destroy(it: *mut leveldb_iterator_t) {
    guard_quiet((), || {
        // SAFETY: C gives back an iterator from leveldb_create_iterator, once.
        unsafe { handle::destroy(it) };
        Ok(())
    })
}

/// Runs `f` on the iterator behind `it` (NULL: nothing happens).
///
/// # Safety
/// `it` is NULL or a live iterator used by this thread only.
unsafe fn with<T>(
    it: *const leveldb_iterator_t,
    default: T,
    f: impl FnOnce(&leveldb_iterator_t) -> T,
) -> T {
    // SAFETY: passed on from the caller.
    guard_quiet(default, || {
        Ok(f(unsafe { handle::get(it, "the iterator") }?))
    })
}

/// Moves the iterator behind `it` with `f` (NULL: nothing happens).
///
/// # Safety
/// As [`with`].
unsafe fn moving(it: *mut leveldb_iterator_t, f: impl FnOnce(&mut leveldb_iterator_t)) {
    guard_quiet((), || {
        // SAFETY: passed on from the caller.
        f(unsafe { handle::get_mut(it, "the iterator") }?);
        Ok(())
    })
}

/// See `leveldb_iter_valid` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> u8 {
    // SAFETY: the caller's live iterator.
    unsafe { with(it, 0, |i| u8::from(i.valid())) }
}

/// See `leveldb_iter_seek_to_first` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_seek_to_first(it: *mut leveldb_iterator_t) {
    // SAFETY: the caller's live iterator.
    unsafe { moving(it, |i| i.it.seek_to_first()) }
}

/// See `leveldb_iter_seek_to_last` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_seek_to_last(it: *mut leveldb_iterator_t) {
    // SAFETY: the caller's live iterator.
    unsafe { moving(it, |i| i.it.seek_to_last()) }
}

/// See `leveldb_iter_seek` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_seek(
    it: *mut leveldb_iterator_t,
    k: *const c_char,
    klen: usize,
) {
    guard_quiet((), || {
        // SAFETY: the caller's live iterator, and a byte range of the
        // given length.
        let (i, k) = unsafe {
            (
                handle::get_mut(it, "the iterator")?,
                ffi::bytes(k, klen, "the key")?,
            )
        };
        i.it.seek(k);
        Ok(())
    })
}

/// See `leveldb_iter_next` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_next(it: *mut leveldb_iterator_t) {
    // SAFETY: the caller's live iterator.
    unsafe { moving(it, |i| i.step(true)) }
}

/// See `leveldb_iter_prev` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_prev(it: *mut leveldb_iterator_t) {
    // SAFETY: the caller's live iterator.
    unsafe { moving(it, |i| i.step(false)) }
}

/// A pointer and length for C, or NULL and 0.
///
/// # Safety
/// `len` is NULL or writable.
unsafe fn out(bytes: Option<&[u8]>, len: *mut usize) -> *const c_char {
    let (p, n) = bytes.map_or((std::ptr::null(), 0), |b| (b.as_ptr().cast(), b.len()));
    // SAFETY: passed on from the caller.
    unsafe { ffi::set_len(len, n) };
    p
}

/// See `leveldb_iter_key` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_key(
    it: *const leveldb_iterator_t,
    klen: *mut usize,
) -> *const c_char {
    // SAFETY: the caller's live iterator and writable length.
    unsafe {
        with(it, std::ptr::null(), |i| {
            out(i.valid().then(|| i.it.key()).flatten(), klen)
        })
    }
}

/// See `leveldb_iter_value` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_value(
    it: *const leveldb_iterator_t,
    vlen: *mut usize,
) -> *const c_char {
    // SAFETY: the caller's live iterator and writable length.
    unsafe {
        with(it, std::ptr::null(), |i| {
            out(i.valid().then(|| i.it.value()).flatten(), vlen)
        })
    }
}

/// See `leveldb_iter_get_error` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_iter_get_error(it: *const leveldb_iterator_t, errptr: ErrPtr) {
    guard(errptr, (), || {
        // SAFETY: the caller's live iterator.
        let i = unsafe { handle::get(it, "the iterator") }?;
        if let Some(e) = &i.error {
            ffi::save_error(errptr, e);
            return Ok(());
        }
        Ok(i.it.status()?)
    })
}
