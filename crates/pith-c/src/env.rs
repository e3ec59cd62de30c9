//! The environment handle, `leveldb_free` and the version calls.
//!
//! PithDB has one environment (the operating system's file system, the
//! engine's `RealFs`); [`leveldb_env_t`] exists so LevelDB programs that
//! create and pass one keep working, and gives the test directory.

use std::ffi::{c_char, c_int, c_void};

use crate::error::Error;
use crate::ffi::{self, guard_quiet};
use crate::handle;

/// The default environment (`leveldb_create_default_env`).
#[derive(Debug)]
pub struct leveldb_env_t {
    /// Not zero-sized, so every handle has its own address.
    _private: u8,
}

/// See `leveldb_create_default_env` in pith/c.h.
#[no_mangle]
pub extern "C" fn leveldb_create_default_env() -> *mut leveldb_env_t {
    guard_quiet(std::ptr::null_mut(), || {
        Ok(handle::into_raw(leveldb_env_t { _private: 0 }))
    })
}

/// See `leveldb_env_destroy` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_env_destroy(env: *mut leveldb_env_t) {
    guard_quiet((), || {
        // SAFETY: C gives back an env from leveldb_create_default_env, once.
        unsafe { handle::destroy(env) };
        Ok(())
    })
}

/// See `leveldb_env_get_test_directory` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_env_get_test_directory(env: *mut leveldb_env_t) -> *mut c_char {
    guard_quiet(std::ptr::null_mut(), || {
        // SAFETY: the caller's live env.
        unsafe { handle::get(env, "the env") }?;
        let dir = match std::env::var_os("TEST_TMPDIR").filter(|d| !d.is_empty()) {
            Some(d) => std::path::PathBuf::from(d),
            // SAFETY: geteuid has no preconditions and cannot fail.
            None => std::env::temp_dir().join(format!("pithtest-{}", unsafe { libc::geteuid() })),
        };
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        use std::os::unix::ffi::OsStrExt;
        Ok(ffi::malloc_bytes(dir.as_os_str().as_bytes(), true))
    })
}

/// See `leveldb_free` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_free(ptr: *mut c_void) {
    // SAFETY: C gives back a buffer this library returned (from malloc),
    // once.
    unsafe { ffi::free(ptr) }
}

/// See `leveldb_major_version` in pith/c.h: the LevelDB C API version
/// implemented, 1.23.
#[no_mangle]
pub extern "C" fn leveldb_major_version() -> c_int {
    1
}

/// See `leveldb_minor_version` in pith/c.h.
#[no_mangle]
pub extern "C" fn leveldb_minor_version() -> c_int {
    23
}

/// See `pith_version` in pith/c.h.
#[no_mangle]
pub extern "C" fn pith_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
