//! Comparators and filter policies made in C.
//!
//! PithDB orders keys bytewise and cannot take another order, so a
//! comparator is not used to order anything: it is *checked*. [`Comparator`]
//! calls the C function on key pairs whose byte order is known and reports
//! the first answer that disagrees ([`Comparator::probe`] on a fixed set at
//! open, [`Comparator::check_ascending`] on the keys writes, iterators and
//! searches handle). A filter policy is recorded (Bloom bits, or a custom
//! policy's name) and never filters: PithDB's own Bloom filters do that,
//! and a filter can only change speed, never results.
//!
//! Thread safety: LevelDB requires a comparator to be callable from any
//! thread, so [`Comparator`] is `Send + Sync`; it holds a pointer to the
//! C object, which the caller keeps alive while a database uses it, as in
//! LevelDB.

use std::cmp::Ordering;
use std::ffi::{c_char, c_int, c_void, CStr};

use crate::error::{Error, Result};
use crate::ffi::{self, guard_quiet};
use crate::handle;

type CompareFn =
    unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> c_int;
type NameFn = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type DestructorFn = unsafe extern "C" fn(*mut c_void);

/// A comparator made in C (`leveldb_comparator_create`).
pub struct leveldb_comparator_t {
    state: *mut c_void,
    destructor: Option<DestructorFn>,
    compare: Option<CompareFn>,
    name: Option<NameFn>,
}

impl Drop for leveldb_comparator_t {
    fn drop(&mut self) {
        if let Some(d) = self.destructor {
            // SAFETY: the destructor and state were given together by the
            // caller, for this call, once.
            unsafe { d(self.state) };
        }
    }
}

/// A reference to a C comparator, kept by options, databases and
/// iterators.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Comparator(*const leveldb_comparator_t);

// SAFETY: LevelDB's contract makes a comparator's functions callable from
// any thread at once and keeps it alive while a database uses it; the
// pointer is only read.
unsafe impl Send for Comparator {}
// SAFETY: as for Send.
unsafe impl Sync for Comparator {}

/// Keys whose byte order is known, ascending: the probe set.
const PROBES: &[&[u8]] = &[
    b"",
    b"\x00",
    b"\x00\x00",
    b"\x01",
    b" ",
    b"0",
    b"00",
    b"1",
    b"10",
    b"2",
    b"9",
    b"A",
    b"B",
    b"Z",
    b"a",
    b"a\x00",
    b"aa",
    b"ab",
    b"abc",
    b"b",
    b"ba",
    b"key1",
    b"key10",
    b"key2",
    b"z",
    b"\x7f",
    b"\x80",
    b"\xc3\xa9",
    b"\xfe",
    b"\xff",
    b"\xff\xff",
];

impl Comparator {
    /// A reference to `c` (NULL: `None`).
    pub(crate) fn new(c: *const leveldb_comparator_t) -> Option<Comparator> {
        (!c.is_null()).then_some(Comparator(c))
    }

    fn inner(&self) -> &leveldb_comparator_t {
        // SAFETY: not NULL (see `new`), and the caller of
        // leveldb_options_set_comparator keeps the comparator alive while
        // options or databases use it (LevelDB's rule).
        unsafe { &*self.0 }
    }

    /// The comparator's name.
    pub(crate) fn name(&self) -> String {
        let c = self.inner();
        let Some(f) = c.name else {
            return "(unnamed)".into();
        };
        // SAFETY: the C function was given with this state; it returns a
        // NUL-terminated string that lives as long as the comparator (or
        // NULL, handled).
        let p = unsafe { f(c.state) };
        if p.is_null() {
            return "(unnamed)".into();
        }
        // SAFETY: not NULL, NUL-terminated by the contract above.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// The comparator's answer for `(a, b)`.
    fn compare(&self, a: &[u8], b: &[u8]) -> Result<c_int> {
        let c = self.inner();
        let f = c
            .compare
            .ok_or(Error::Null("the comparator's compare function"))?;
        // SAFETY: the function was given with this state; both slices are
        // valid for their lengths during the call.
        Ok(unsafe {
            f(
                c.state,
                a.as_ptr().cast(),
                a.len(),
                b.as_ptr().cast(),
                b.len(),
            )
        })
    }

    /// Checks that the comparator ranks `a` and `b` as byte order does,
    /// both ways round.
    pub(crate) fn check_pair(&self, a: &[u8], b: &[u8]) -> Result<()> {
        let want = a.cmp(b);
        for (x, y, want) in [(a, b, want), (b, a, want.reverse())] {
            let got = self.compare(x, y)?;
            if got.cmp(&0) != want {
                return Err(Error::Comparator {
                    name: self.name(),
                    a: x.to_vec(),
                    b: y.to_vec(),
                    got,
                    want,
                });
            }
        }
        Ok(())
    }

    /// Checks the comparator on every pair of the probe set.
    pub(crate) fn probe(&self) -> Result<()> {
        for (i, a) in PROBES.iter().enumerate() {
            for b in PROBES.iter().skip(i) {
                self.check_pair(a, b)?;
            }
        }
        Ok(())
    }

    /// Checks the comparator on each neighbouring pair of `keys` once
    /// sorted bytewise (repeats dropped).
    pub(crate) fn check_ascending(&self, keys: &mut Vec<&[u8]>) -> Result<()> {
        keys.sort_unstable();
        keys.dedup();
        for w in keys.windows(2) {
            if let [a, b] = w {
                self.check_pair(a, b)?;
            }
        }
        Ok(())
    }

    /// Checks that the comparator agrees that `a` comes before `b` when
    /// `forward`, after it otherwise (an iterator's step).
    pub(crate) fn check_step(&self, a: &[u8], b: &[u8], forward: bool) -> Result<()> {
        let expected = if forward {
            Ordering::Less
        } else {
            Ordering::Greater
        };
        if a.cmp(b) != expected {
            // The engine's own order is bytewise; nothing to check.
            return Ok(());
        }
        self.check_pair(a, b)
    }
}

/// See `leveldb_comparator_create` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_comparator_create(
    state: *mut c_void,
    destructor: Option<DestructorFn>,
    compare: Option<CompareFn>,
    name: Option<NameFn>,
) -> *mut leveldb_comparator_t {
    guard_quiet(std::ptr::null_mut(), || {
        Ok(handle::into_raw(leveldb_comparator_t {
            state,
            destructor,
            compare,
            name,
        }))
    })
}

/// See `leveldb_comparator_destroy` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_comparator_destroy(c: *mut leveldb_comparator_t) {
    guard_quiet((), || {
        // SAFETY: C gives back a comparator from leveldb_comparator_create,
        // once.
        unsafe { handle::destroy(c) };
        Ok(())
    })
}

/// What a filter policy asks of PithDB.
#[derive(Clone, Debug)]
pub(crate) enum Filter {
    /// PithDB's Bloom filters with this many bits per key.
    Bloom(u32),
    /// A custom policy, by name: accepted, never called to filter.
    Custom(String),
}

type CreateFilterFn = unsafe extern "C" fn(
    *mut c_void,
    *const *const c_char,
    *const usize,
    c_int,
    *mut usize,
) -> *mut c_char;
type KeyMayMatchFn =
    unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> u8;

/// A filter policy (`leveldb_filterpolicy_create*`).
pub struct leveldb_filterpolicy_t {
    pub(crate) filter: Filter,
    state: *mut c_void,
    destructor: Option<DestructorFn>,
}

impl Drop for leveldb_filterpolicy_t {
    fn drop(&mut self) {
        if let Some(d) = self.destructor {
            // SAFETY: the destructor and state were given together by the
            // caller, for this call, once.
            unsafe { d(self.state) };
        }
    }
}

/// See `leveldb_filterpolicy_create` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_filterpolicy_create(
    state: *mut c_void,
    destructor: Option<DestructorFn>,
    _create_filter: Option<CreateFilterFn>,
    _key_may_match: Option<KeyMayMatchFn>,
    name: Option<NameFn>,
) -> *mut leveldb_filterpolicy_t {
    guard_quiet(std::ptr::null_mut(), || {
        let label = match name {
            // SAFETY: the function was given with this state and returns a
            // NUL-terminated string or NULL.
            Some(f) => match unsafe { ffi::cstr(f(state), "the filter policy's name") } {
                Ok(n) => String::from_utf8_lossy(n).into_owned(),
                Err(_) => "(unnamed)".into(),
            },
            None => "(unnamed)".into(),
        };
        Ok(handle::into_raw(leveldb_filterpolicy_t {
            filter: Filter::Custom(label),
            state,
            destructor,
        }))
    })
}

/// See `leveldb_filterpolicy_create_bloom` in pith/c.h.
#[no_mangle]
pub extern "C" fn leveldb_filterpolicy_create_bloom(
    bits_per_key: c_int,
) -> *mut leveldb_filterpolicy_t {
    guard_quiet(std::ptr::null_mut(), || {
        let bits = u32::try_from(bits_per_key).unwrap_or(0);
        Ok(handle::into_raw(leveldb_filterpolicy_t {
            filter: Filter::Bloom(bits),
            state: std::ptr::null_mut(),
            destructor: None,
        }))
    })
}

/// See `leveldb_filterpolicy_destroy` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_filterpolicy_destroy(p: *mut leveldb_filterpolicy_t) {
    guard_quiet((), || {
        // SAFETY: C gives back a policy from leveldb_filterpolicy_create*,
        // once.
        unsafe { handle::destroy(p) };
        Ok(())
    })
}
