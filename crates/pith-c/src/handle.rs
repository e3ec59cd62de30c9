//! Opaque handles: boxing a Rust value for C and getting it back.
//!
//! Every `leveldb_*_t` handed to C is a `Box` leaked with [`into_raw`]
//! and reclaimed exactly once by the matching destroy/close/release
//! function through [`destroy`]. Between the two, C holds the only
//! pointer; [`get`] and [`get_mut`] borrow through it for one call.

use crate::error::{Error, Result};

/// `value` on the heap, as a pointer C owns.
pub(crate) fn into_raw<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Drops the value behind `p` (NULL does nothing).
///
/// # Safety
/// `p` is NULL or came from [`into_raw`] with the same `T`, and is not
/// used again.
pub(crate) unsafe fn destroy<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: the caller promises `p` came from `Box::into_raw` and is
        // given up here.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Takes the value behind `p` back (NULL: `None`).
///
/// # Safety
/// As [`destroy`].
pub(crate) unsafe fn take<T>(p: *mut T) -> Option<T> {
    if p.is_null() {
        return None;
    }
    // SAFETY: as in `destroy`.
    Some(*unsafe { Box::from_raw(p) })
}

/// A shared borrow of the value behind `p` for one call.
///
/// # Safety
/// `p` is NULL or a live handle from [`into_raw`] not mutably borrowed
/// elsewhere during `'a` (the C caller uses a handle from one thread at a
/// time, except a `leveldb_t`, which is only ever borrowed shared).
pub(crate) unsafe fn get<'a, T>(p: *const T, what: &'static str) -> Result<&'a T> {
    // SAFETY: passed on from the caller; `as_ref` checks NULL.
    unsafe { p.as_ref() }.ok_or(Error::Null(what))
}

/// A mutable borrow of the value behind `p` for one call.
///
/// # Safety
/// `p` is NULL or a live handle from [`into_raw`] that no one else
/// borrows during `'a`.
pub(crate) unsafe fn get_mut<'a, T>(p: *mut T, what: &'static str) -> Result<&'a mut T> {
    // SAFETY: passed on from the caller; `as_mut` checks NULL.
    unsafe { p.as_mut() }.ok_or(Error::Null(what))
}
