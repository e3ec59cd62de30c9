//! Open, read and write options, the cache handle, and what each
//! LevelDB option becomes in PithDB.
//!
//! [`leveldb_options_t`] records every setter call as given (`None`:
//! never set); [`leveldb_options_t::engine`] turns it into
//! [`engine::Options`] and [`leveldb_options_t::report`] into the text of
//! the `pith.options` property. Defaults are LevelDB's where the two
//! differ (`create_if_missing` is false). The mapping is documented in
//! `include/pith/c.h` and `docs/c-api.md`; keep the three in step.
//!
//! Pointers to caches, environments and loggers are not kept: what they
//! mean here is read when they are set. A comparator is kept (it is
//! called later), as LevelDB keeps it.

use std::ffi::{c_int, c_void};
use std::fmt::Write as _;

use crate::comparator::{leveldb_comparator_t, leveldb_filterpolicy_t, Comparator, Filter};
use crate::ffi::guard_quiet;
use crate::handle;
use crate::snapshot::leveldb_snapshot_t;

/// Options for `leveldb_open`, `leveldb_destroy_db`, `leveldb_repair_db`.
#[derive(Clone, Debug, Default)]
pub struct leveldb_options_t {
    pub(crate) create_if_missing: bool,
    pub(crate) error_if_exists: bool,
    pub(crate) paranoid_checks: bool,
    write_buffer_size: Option<usize>,
    max_open_files: Option<c_int>,
    cache_capacity: Option<usize>,
    block_size: Option<usize>,
    block_restart_interval: Option<c_int>,
    max_file_size: Option<usize>,
    compression: Option<c_int>,
    env: bool,
    info_log: bool,
    pub(crate) comparator: Option<Comparator>,
    filter: Option<Filter>,
}

impl leveldb_options_t {
    /// The engine's options.
    pub(crate) fn engine(&self) -> engine::Options {
        let mut o = engine::Options {
            create_if_missing: self.create_if_missing,
            error_if_exists: self.error_if_exists,
            ..engine::Options::default()
        };
        if let Some(n) = self.write_buffer_size {
            o.memtable_bytes = n.max(1);
        }
        if let Some(Filter::Bloom(bits)) = self.filter {
            o.bloom_bits_per_key = bits;
        }
        if let Some(n) = self.cache_capacity {
            o.value_cache_bytes = n;
        }
        o
    }

    /// How each option was taken, one per line (the `pith.options`
    /// property).
    pub(crate) fn report(&self, comparator_name: Option<&str>) -> String {
        let mut r = String::new();
        let mut line = |s: String| {
            r.push_str(&s);
            r.push('\n');
        };
        line(format!("create_if_missing: {}", self.create_if_missing));
        line(format!("error_if_exists: {}", self.error_if_exists));
        line(format!(
            "paranoid_checks: {}{}",
            self.paranoid_checks,
            if self.paranoid_checks {
                " (every file was verified at open)"
            } else {
                ""
            }
        ));
        let engine = self.engine();
        line(format!(
            "write_buffer_size: {} (PithDB memtable_bytes: {})",
            opt(self.write_buffer_size),
            engine.memtable_bytes
        ));
        line(match &self.filter {
            None => format!("filter_policy: not set (PithDB Bloom filters at {} bits per key)", engine.bloom_bits_per_key),
            Some(Filter::Bloom(b)) => format!("filter_policy: bloom {b} bits per key (PithDB Bloom filters at {b} bits per key)"),
            Some(Filter::Custom(n)) => format!(
                "filter_policy: custom \"{n}\" (accepted, never called; PithDB Bloom filters at {} bits per key)",
                engine.bloom_bits_per_key
            ),
        });
        line(match comparator_name {
            None => "comparator: not set (bytewise)".into(),
            Some(n) => {
                format!("comparator: \"{n}\" (checked against byte order, which PithDB keeps)")
            }
        });
        let unused = "accepted, no effect";
        line(format!(
            "cache: {} (PithDB value_cache_bytes: {}, decoded values, a cache of its own per database)",
            opt(self.cache_capacity),
            engine.value_cache_bytes
        ));
        line(format!(
            "block_size: {} ({unused}: segments have no blocks)",
            opt(self.block_size)
        ));
        line(format!(
            "block_restart_interval: {} ({unused}: segments have no blocks)",
            opt(self.block_restart_interval)
        ));
        line(format!(
            "max_open_files: {} ({unused}: segments are mmapped once)",
            opt(self.max_open_files)
        ));
        line(format!(
            "max_file_size: {} ({unused}: segment size follows memtables and merges)",
            opt(self.max_file_size)
        ));
        line(format!(
            "compression: {} ({unused}: PithDB always compresses and picks its codec)",
            match self.compression {
                None => "not set".into(),
                Some(0) => "leveldb_no_compression".into(),
                Some(1) => "leveldb_snappy_compression".into(),
                Some(n) => format!("{n} (unknown)"),
            }
        ));
        line(format!(
            "env: {} (only the default environment exists)",
            if self.env { "set" } else { "not set" }
        ));
        line(format!(
            "info_log: {} ({unused})",
            if self.info_log { "set" } else { "not set" }
        ));
        r
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(
        || "not set".into(),
        |v| {
            let mut s = String::new();
            let _ = write!(s, "{v}");
            s
        },
    )
}

/// Runs `f` on the options behind `o` (NULL: nothing happens).
///
/// # Safety
/// `o` is NULL or a live `leveldb_options_t` used by this thread only.
unsafe fn set(o: *mut leveldb_options_t, f: impl FnOnce(&mut leveldb_options_t)) {
    guard_quiet((), || {
        // SAFETY: passed on from the caller.
        f(unsafe { handle::get_mut(o, "options") }?);
        Ok(())
    })
}

/// See `leveldb_options_create` in pith/c.h.
#[no_mangle]
pub extern "C" fn leveldb_options_create() -> *mut leveldb_options_t {
    guard_quiet(std::ptr::null_mut(), || {
        Ok(handle::into_raw(leveldb_options_t::default()))
    })
}

/// See `leveldb_options_destroy` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_destroy(o: *mut leveldb_options_t) {
    guard_quiet((), || {
        // SAFETY: C gives back options from leveldb_options_create, once.
        unsafe { handle::destroy(o) };
        Ok(())
    })
}

/// See `leveldb_options_set_comparator` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_comparator(
    o: *mut leveldb_options_t,
    c: *mut leveldb_comparator_t,
) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.comparator = Comparator::new(c)) }
}

/// See `leveldb_options_set_filter_policy` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_filter_policy(
    o: *mut leveldb_options_t,
    p: *mut leveldb_filterpolicy_t,
) {
    // SAFETY: `o` is the caller's live options; `p` is NULL or a live
    // policy (read now, not kept).
    unsafe { set(o, |o| o.filter = p.as_ref().map(|p| p.filter.clone())) }
}

/// See `leveldb_options_set_create_if_missing` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_create_if_missing(o: *mut leveldb_options_t, v: u8) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.create_if_missing = v != 0) }
}

/// See `leveldb_options_set_error_if_exists` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_error_if_exists(o: *mut leveldb_options_t, v: u8) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.error_if_exists = v != 0) }
}

/// See `leveldb_options_set_paranoid_checks` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_paranoid_checks(o: *mut leveldb_options_t, v: u8) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.paranoid_checks = v != 0) }
}

/// See `leveldb_options_set_env` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_env(
    o: *mut leveldb_options_t,
    env: *mut crate::env::leveldb_env_t,
) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.env = !env.is_null()) }
}

/// See `leveldb_options_set_info_log` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_info_log(o: *mut leveldb_options_t, log: *mut c_void) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.info_log = !log.is_null()) }
}

/// See `leveldb_options_set_write_buffer_size` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_write_buffer_size(
    o: *mut leveldb_options_t,
    n: usize,
) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.write_buffer_size = Some(n)) }
}

/// See `leveldb_options_set_max_open_files` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_max_open_files(o: *mut leveldb_options_t, n: c_int) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.max_open_files = Some(n)) }
}

/// See `leveldb_options_set_cache` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_cache(
    o: *mut leveldb_options_t,
    c: *mut leveldb_cache_t,
) {
    // SAFETY: `o` is the caller's live options; `c` is NULL or a live
    // cache (read now, not kept).
    unsafe { set(o, |o| o.cache_capacity = c.as_ref().map(|c| c.capacity)) }
}

/// See `leveldb_options_set_block_size` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_block_size(o: *mut leveldb_options_t, n: usize) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.block_size = Some(n)) }
}

/// See `leveldb_options_set_block_restart_interval` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_block_restart_interval(
    o: *mut leveldb_options_t,
    n: c_int,
) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.block_restart_interval = Some(n)) }
}

/// See `leveldb_options_set_max_file_size` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_max_file_size(o: *mut leveldb_options_t, n: usize) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.max_file_size = Some(n)) }
}

/// See `leveldb_options_set_compression` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_options_set_compression(o: *mut leveldb_options_t, n: c_int) {
    // SAFETY: `o` is the caller's live options.
    unsafe { set(o, |o| o.compression = Some(n)) }
}

/// A block cache: its capacity becomes the value cache's
/// (`Options::value_cache_bytes`) of each database opened with it.
#[derive(Debug)]
pub struct leveldb_cache_t {
    capacity: usize,
}

/// See `leveldb_cache_create_lru` in pith/c.h.
#[no_mangle]
pub extern "C" fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t {
    guard_quiet(std::ptr::null_mut(), || {
        Ok(handle::into_raw(leveldb_cache_t { capacity }))
    })
}

/// See `leveldb_cache_destroy` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_cache_destroy(c: *mut leveldb_cache_t) {
    guard_quiet((), || {
        // SAFETY: C gives back a cache from leveldb_cache_create_lru, once.
        unsafe { handle::destroy(c) };
        Ok(())
    })
}

/// Options for reads.
#[derive(Debug)]
pub struct leveldb_readoptions_t {
    /// The snapshot to read at (NULL: now); the caller keeps it alive.
    pub(crate) snapshot: *const leveldb_snapshot_t,
}

impl leveldb_readoptions_t {
    /// The engine snapshot to read at, if any.
    ///
    /// # Safety
    /// The snapshot set on these options, if any, is not released yet.
    pub(crate) unsafe fn snapshot(&self) -> Option<&engine::Snapshot> {
        // SAFETY: NULL or a live snapshot, by the caller's promise.
        unsafe { self.snapshot.as_ref() }.map(|s| &s.snap)
    }
}

/// See `leveldb_readoptions_create` in pith/c.h.
#[no_mangle]
pub extern "C" fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t {
    guard_quiet(std::ptr::null_mut(), || {
        Ok(handle::into_raw(leveldb_readoptions_t {
            snapshot: std::ptr::null(),
        }))
    })
}

/// See `leveldb_readoptions_destroy` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_readoptions_destroy(o: *mut leveldb_readoptions_t) {
    guard_quiet((), || {
        // SAFETY: C gives back options from leveldb_readoptions_create, once.
        unsafe { handle::destroy(o) };
        Ok(())
    })
}

/// Runs `f` on the read options behind `o` (NULL: nothing happens).
///
/// # Safety
/// `o` is NULL or live read options used by this thread only.
unsafe fn set_read(o: *mut leveldb_readoptions_t, f: impl FnOnce(&mut leveldb_readoptions_t)) {
    guard_quiet((), || {
        // SAFETY: passed on from the caller.
        f(unsafe { handle::get_mut(o, "read options") }?);
        Ok(())
    })
}

/// See `leveldb_readoptions_set_verify_checksums` in pith/c.h: accepted,
/// no effect (segments' checksums are checked when they are opened).
#[no_mangle]
pub unsafe extern "C" fn leveldb_readoptions_set_verify_checksums(
    o: *mut leveldb_readoptions_t,
    _v: u8,
) {
    // SAFETY: `o` is the caller's live read options.
    unsafe { set_read(o, |_| ()) }
}

/// See `leveldb_readoptions_set_fill_cache` in pith/c.h: accepted, no
/// effect (every value read fills the value cache).
#[no_mangle]
pub unsafe extern "C" fn leveldb_readoptions_set_fill_cache(o: *mut leveldb_readoptions_t, _v: u8) {
    // SAFETY: `o` is the caller's live read options.
    unsafe { set_read(o, |_| ()) }
}

/// See `leveldb_readoptions_set_snapshot` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_readoptions_set_snapshot(
    o: *mut leveldb_readoptions_t,
    snap: *const leveldb_snapshot_t,
) {
    // SAFETY: `o` is the caller's live read options.
    unsafe { set_read(o, |o| o.snapshot = snap) }
}

/// Options for writes.
#[derive(Debug, Default)]
pub struct leveldb_writeoptions_t {
    pub(crate) sync: bool,
}

impl leveldb_writeoptions_t {
    /// The engine's write options.
    pub(crate) fn engine(&self) -> engine::WriteOptions {
        engine::WriteOptions {
            sync: self.sync,
            ..engine::WriteOptions::default()
        }
    }
}

/// See `leveldb_writeoptions_create` in pith/c.h.
#[no_mangle]
pub extern "C" fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t {
    guard_quiet(std::ptr::null_mut(), || {
        Ok(handle::into_raw(leveldb_writeoptions_t::default()))
    })
}

/// See `leveldb_writeoptions_destroy` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writeoptions_destroy(o: *mut leveldb_writeoptions_t) {
    guard_quiet((), || {
        // SAFETY: C gives back options from leveldb_writeoptions_create, once.
        unsafe { handle::destroy(o) };
        Ok(())
    })
}

/// See `leveldb_writeoptions_set_sync` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_writeoptions_set_sync(o: *mut leveldb_writeoptions_t, v: u8) {
    guard_quiet((), || {
        // SAFETY: `o` is the caller's live write options.
        unsafe { handle::get_mut(o, "write options") }?.sync = v != 0;
        Ok(())
    })
}
