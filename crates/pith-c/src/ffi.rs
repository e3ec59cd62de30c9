//! The boundary with C: catching panics, storing errors in `errptr`,
//! reading `(pointer, length)` arguments, and handing out `malloc`ed
//! buffers.
//!
//! Invariants every exported function keeps by going through here:
//! - no panic unwinds into C: [`guard`] catches it and reports it as an
//!   error (through `errptr` when the function has one);
//! - `*errptr` is touched only on failure: the old message is freed with
//!   `free` and replaced by a new one from `malloc`;
//! - every buffer returned to C comes from `malloc` ([`malloc_bytes`]),
//!   so `leveldb_free` (`free`) releases it.
//!
//! This is one of the two modules (with `handle`) whose helpers
//! dereference C pointers; each `unsafe` block states what the C caller
//! promised that makes it sound.

use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{Error, Result};

/// A C caller's error slot: `*errptr` is NULL or a message from `malloc`.
pub(crate) type ErrPtr = *mut *mut c_char;

/// Runs `f`; on an error or a panic stores the message in `errptr` (if
/// not NULL) and returns `default`.
pub(crate) fn guard<T>(errptr: ErrPtr, default: T, f: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            save_error(errptr, &e);
            default
        }
        Err(payload) => {
            save_error(errptr, &Error::Panic(panic_message(payload.as_ref())));
            default
        }
    }
}

/// Runs `f` for a function with no `errptr`: an error or a panic leaves
/// the call without effect and returns `default`.
pub(crate) fn guard_quiet<T>(default: T, f: impl FnOnce() -> Result<T>) -> T {
    guard(std::ptr::null_mut(), default, f)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".to_string()
    }
}

/// Stores `e`'s message in `*errptr`, freeing the message already there.
pub(crate) fn save_error(errptr: ErrPtr, e: &Error) {
    if errptr.is_null() {
        return;
    }
    let message = malloc_cstring(&e.to_string());
    // SAFETY: `errptr` is not NULL and, by the C API's contract, points to
    // a writable `char*` that is NULL or a malloc()ed string we own now.
    unsafe {
        let old = *errptr;
        if !old.is_null() {
            libc::free(old.cast());
        }
        *errptr = message;
    }
}

/// A copy of `bytes` in a buffer from `malloc` (never NULL-sized: at least
/// one byte, so an empty value is not confused with "not found"), with a
/// NUL after the bytes when `nul`. NULL if `malloc` fails.
pub(crate) fn malloc_bytes(bytes: &[u8], nul: bool) -> *mut c_char {
    let len = bytes.len() + usize::from(nul);
    // SAFETY: malloc has no preconditions; the size is at least 1.
    let p = unsafe { libc::malloc(len.max(1)) }.cast::<u8>();
    if p.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `p` is a fresh allocation of at least `len` bytes, which
    // cannot overlap `bytes`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        if nul {
            *p.add(bytes.len()) = 0;
        }
    }
    p.cast()
}

/// `s` as a NUL-terminated string from `malloc` (NUL bytes inside `s`
/// become `?` so the C string holds all of it).
pub(crate) fn malloc_cstring(s: &str) -> *mut c_char {
    if s.as_bytes().contains(&0) {
        return malloc_bytes(s.replace('\0', "?").as_bytes(), true);
    }
    malloc_bytes(s.as_bytes(), true)
}

/// The `len` bytes at `ptr`; NULL is the empty slice when `len` is 0.
///
/// # Safety
/// `ptr` is NULL or valid for reads of `len` bytes for `'a`.
pub(crate) unsafe fn bytes<'a>(
    ptr: *const c_char,
    len: usize,
    what: &'static str,
) -> Result<&'a [u8]> {
    if ptr.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(Error::Null(what))
        };
    }
    // SAFETY: not NULL, and the caller promises `len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

/// The NUL-terminated string at `ptr`, as bytes.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string live for `'a`.
pub(crate) unsafe fn cstr<'a>(ptr: *const c_char, what: &'static str) -> Result<&'a [u8]> {
    if ptr.is_null() {
        return Err(Error::Null(what));
    }
    // SAFETY: not NULL, and the caller promises a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(ptr) }.to_bytes())
}

/// The path named by the NUL-terminated `name`.
///
/// # Safety
/// As [`cstr`].
pub(crate) unsafe fn path<'a>(name: *const c_char) -> Result<&'a std::path::Path> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: passed on from the caller.
    let bytes = unsafe { cstr(name, "the database name") }?;
    if bytes.is_empty() {
        return Err(Error::BadArgument(
            "the database name is empty; pass a directory path".into(),
        ));
    }
    Ok(std::path::Path::new(std::ffi::OsStr::from_bytes(bytes)))
}

/// Stores `n` in `*out` when `out` is not NULL.
///
/// # Safety
/// `out` is NULL or valid for a write of one `usize`.
pub(crate) unsafe fn set_len(out: *mut usize, n: usize) {
    if !out.is_null() {
        // SAFETY: not NULL, and the caller promises it is writable.
        unsafe { *out = n };
    }
}

/// Frees a pointer from `malloc` (NULL does nothing).
///
/// # Safety
/// `p` is NULL or came from `malloc` and is not used again.
pub(crate) unsafe fn free(p: *mut std::ffi::c_void) {
    // SAFETY: passed on from the caller; free(NULL) is a no-op.
    unsafe { libc::free(p) }
}

/// The `n` elements at `p`.
///
/// # Safety
/// `p` is NULL or valid for reads of `n` elements.
pub(crate) unsafe fn array<'a, T>(p: *const T, n: usize, what: &'static str) -> Result<&'a [T]> {
    if p.is_null() {
        return Err(Error::Null(what));
    }
    // SAFETY: not NULL, and the caller promises `n` readable elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message in `*slot`, freed.
    fn take(slot: &mut *mut c_char) -> String {
        assert!(!slot.is_null());
        // SAFETY: the slot holds a NUL-terminated string from malloc.
        let s = unsafe { CStr::from_ptr(*slot) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: from malloc, not used again.
        unsafe { free((*slot).cast()) };
        *slot = std::ptr::null_mut();
        s
    }

    #[test]
    fn a_panic_becomes_an_error_and_the_default() {
        let mut slot: *mut c_char = std::ptr::null_mut();
        let got = guard(&mut slot, 7, || -> Result<i32> { panic!("boom") });
        assert_eq!(got, 7);
        let message = take(&mut slot);
        assert!(
            message.contains("internal error") && message.contains("boom"),
            "{message}"
        );
        // Without an errptr, the default only.
        assert_eq!(guard_quiet(3, || -> Result<i32> { panic!("quiet") }), 3);
    }

    #[test]
    fn success_leaves_the_slot_alone_and_failure_replaces_it() {
        let mut slot = malloc_cstring("earlier");
        let before = slot;
        assert_eq!(guard(&mut slot, 0, || Ok(5)), 5);
        assert_eq!(slot, before);
        // The earlier message is freed (ASan runs would see a leak).
        guard(&mut slot, (), || Err(Error::Null("the thing")));
        assert_eq!(
            take(&mut slot),
            "Invalid argument: the thing is NULL; pass a valid pointer"
        );
    }

    #[test]
    fn buffers_and_arguments() {
        let p = malloc_bytes(b"", false);
        assert!(!p.is_null(), "an empty value is a buffer, not NULL");
        // SAFETY: from malloc, not used again.
        unsafe { free(p.cast()) };
        let mut s = malloc_cstring("a\0b");
        assert_eq!(take(&mut s), "a?b");
        // SAFETY: NULL with length 0, and a live slice.
        unsafe {
            assert_eq!(bytes(std::ptr::null(), 0, "k").ok(), Some(&[][..]));
            assert!(bytes(std::ptr::null(), 1, "k").is_err());
            assert_eq!(bytes(b"xy".as_ptr().cast(), 2, "k").ok(), Some(&b"xy"[..]));
        }
    }
}
