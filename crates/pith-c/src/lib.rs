//! `libpith`: PithDB as a C library, with LevelDB 1.23's C API.
//!
//! Builds `libpith.so` and `libpith.a`. The C declarations are in
//! `include/pith/c.h` (and `include/leveldb/c.h`, which includes it): every
//! function of LevelDB's `c.h` with the same name and signature, and
//! PithDB's `pith_*` additions. `docs/c-api.md` says what each LevelDB
//! option and call means on PithDB.
//!
//! Layout, one job per module:
//! - `ffi`: the boundary (panics caught, errors into `errptr`, `malloc`ed
//!   results, reading C pointers); `handle`: boxing handles for C;
//!   `error`: the one error type and its LevelDB-style messages;
//! - `options` (open/read/write options, cache), `comparator`
//!   (comparators, checked against byte order; filter policies), `env`
//!   (environment, `leveldb_free`, versions);
//! - `db` (open, close, put, delete, write, get), `snapshot`, `batch`,
//!   `iterator`, `props` (properties, approximate sizes), `admin`
//!   (compact, destroy, repair), `extras` (`pith_*`).
//!
//! Invariants: no exported function unwinds into C (each body runs in
//! `ffi::guard`); every buffer handed to C comes from `malloc`; a handle
//! is a leaked `Box` reclaimed once by its destroy call. Every `unsafe`
//! block says which promise of the C caller (stated in `pith/c.h`) makes
//! it sound. The exported functions are `unsafe extern "C"`: their
//! contract is the header's, not Rust's.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::unwrap_used)]
// The handle types carry LevelDB's C names.
#![allow(non_camel_case_types)]
// Each exported function's safety contract is its declaration's comment in
// include/pith/c.h and the API-wide rules at the top of that header.
#![allow(clippy::missing_safety_doc)]

mod admin;
mod batch;
mod comparator;
mod db;
mod env;
mod error;
mod extras;
mod ffi;
mod handle;
mod iterator;
mod options;
mod props;
mod snapshot;
