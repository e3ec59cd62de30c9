//! `pith.DB`: the database handle, its point reads and writes, the mapping
//! protocol (`db[key]`, `key in db`, `del db[key]`), maintenance
//! (`flush`, `compact`, `verify`, `stats`, `bulk_load`) and the factories
//! of batches, snapshots, iterators and searches.
//!
//! Every engine call runs with the GIL released (`Handle::run`), so Python
//! threads sharing one `DB` run in parallel: the engine is `Send + Sync`,
//! reads never block writes, and writers are grouped by the engine.
//! `bulk_load` takes the GIL back only to pull a chunk of its input from
//! the Python iterable.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use engine::{Options, ValueReads, WriteBatch, WriteOptions, DB};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyIterator, PyTuple};

use crate::batch::PyBatch;
use crate::convert::{bin_arg, opt_bin_arg, pattern_arg, Bin, Expiry};
use crate::errors::{invalid, Failure};
use crate::handle::{Handle, IN_FEED};
use crate::iter::{PyIter, PySearch};
use crate::raw_iter::PyRawIter;
use crate::read::{self, IterArgs, View};
use crate::snapshot::PySnapshot;
use crate::stats::{bulk_dict, stats_dict, verify_dict};

/// Write options with `sync` as given.
pub(crate) fn write_options(sync: bool) -> WriteOptions {
    WriteOptions {
        sync,
        ..WriteOptions::default()
    }
}

/// Puts `key -> value` (expiring as `expiry` says) with `sync`.
pub(crate) fn put_in(
    db: &DB,
    key: &[u8],
    value: &[u8],
    expiry: Expiry,
    sync: bool,
) -> Result<(), Failure> {
    let options = write_options(sync);
    match expiry.deadline(db.now_ms()) {
        None => db.put_opt(options, key, value)?,
        Some(deadline) => {
            let mut b = WriteBatch::new();
            b.put_expiring(key, value, deadline);
            db.write(options, b)?;
        }
    }
    Ok(())
}

/// An open PithDB database.
///
/// ``pith.DB(path, *, create_if_missing=True, error_if_exists=False,
/// read_only=False, ...)`` opens (or creates) the database in directory
/// ``path``. Keys and values are ``bytes``; ``str`` is accepted and encoded
/// as UTF-8 (reads always return ``bytes``). Use it as a context manager to
/// close it on exit. One handle may be shared by threads: every engine call
/// releases the GIL.
///
/// Engine options (keyword-only, ``None`` keeps the engine's default):
/// ``memtable_bytes`` (a memtable this large is built into a segment),
/// ``max_frozen_memtables``, ``merge_trigger`` (merges run while there are
/// more segments than this), ``max_merge_width`` (segments merged at
/// once), ``stall_segments`` (writers wait while there are this many
/// segments), ``background_threads``,
/// ``bloom_bits_per_key``, ``shared_models``, ``resident_index``,
/// ``value_cache_bytes`` (decoded values kept for reads; 0: none),
/// ``value_reads`` (``"mapped"``, the default, or ``"pread"``: how point
/// reads read stored values; ``"pread"`` when the data is larger than the
/// memory), ``bulk_chunk_bytes``, ``build_memory_bytes``.
#[pyclass(module = "pith", name = "DB", frozen)]
pub(crate) struct PyDB {
    handle: Arc<Handle>,
}

#[pymethods]
impl PyDB {
    #[new]
    #[pyo3(signature = (
        path,
        *,
        create_if_missing = true,
        error_if_exists = false,
        read_only = false,
        memtable_bytes = None,
        max_frozen_memtables = None,
        merge_trigger = None,
        max_merge_width = None,
        stall_segments = None,
        background_threads = None,
        bloom_bits_per_key = None,
        shared_models = None,
        resident_index = None,
        value_cache_bytes = None,
        value_reads = None,
        bulk_chunk_bytes = None,
        build_memory_bytes = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        create_if_missing: bool,
        error_if_exists: bool,
        read_only: bool,
        memtable_bytes: Option<usize>,
        max_frozen_memtables: Option<usize>,
        merge_trigger: Option<usize>,
        max_merge_width: Option<usize>,
        stall_segments: Option<usize>,
        background_threads: Option<usize>,
        bloom_bits_per_key: Option<u32>,
        shared_models: Option<bool>,
        resident_index: Option<bool>,
        value_cache_bytes: Option<usize>,
        value_reads: Option<&str>,
        bulk_chunk_bytes: Option<usize>,
        build_memory_bytes: Option<usize>,
    ) -> PyResult<PyDB> {
        let mut o = Options {
            create_if_missing,
            error_if_exists,
            ..Options::default()
        };
        if let Some(v) = memtable_bytes {
            o.memtable_bytes = v;
        }
        if let Some(v) = max_frozen_memtables {
            o.max_frozen_memtables = v;
        }
        if let Some(v) = merge_trigger {
            o.merge_trigger = v;
        }
        if let Some(v) = max_merge_width {
            o.max_merge_width = v;
        }
        if let Some(v) = stall_segments {
            o.stall_segments = v;
        }
        if let Some(v) = background_threads {
            o.background_threads = v;
        }
        if let Some(v) = bloom_bits_per_key {
            o.bloom_bits_per_key = v;
        }
        if let Some(v) = shared_models {
            o.shared_models = v;
        }
        if let Some(v) = resident_index {
            o.resident_index = v;
        }
        if let Some(v) = value_cache_bytes {
            o.value_cache_bytes = v;
        }
        if let Some(v) = value_reads {
            o.value_reads = ValueReads::from_name(v).ok_or_else(|| {
                invalid(
                    py,
                    format!("value_reads must be \"mapped\" or \"pread\", not {v:?}"),
                )
            })?;
        }
        if let Some(v) = bulk_chunk_bytes {
            o.bulk_chunk_bytes = v;
        }
        if build_memory_bytes.is_some() {
            o.build_memory_bytes = build_memory_bytes;
        }
        let db = py
            .detach(|| {
                if read_only {
                    DB::open_read_only(&path, o)
                } else {
                    DB::open(&path, o)
                }
            })
            .map_err(|e| Failure::Engine(e).into_pyerr(py))?;
        Ok(PyDB {
            handle: Arc::new(Handle::new(db, path, read_only)),
        })
    }

    /// The value of ``key``, or ``default`` when it is absent (or deleted,
    /// or expired).
    #[pyo3(signature = (key, default = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        match read::get(py, &self.handle, View::Current, key)? {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// The values of ``keys`` (any iterable of keys), as a list in the same
    /// order, with ``default`` for the absent ones. Faster than a ``get``
    /// per key: the GIL is released once for all of them.
    #[pyo3(signature = (keys, default = None))]
    fn get_many(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let values = read::get_many(py, &self.handle, View::Current, keys)?;
        Ok(read::values_list(py, values, default))
    }

    /// ``(value, deadline_ms)`` for ``key``, or ``None`` when it is absent:
    /// ``deadline_ms`` is when it expires, in milliseconds since the Unix
    /// epoch, or ``None`` when it never does.
    fn get_with_deadline(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Option<(Py<PyBytes>, Option<u64>)>> {
        let key = bin_arg(key, "key")?;
        let found = self
            .handle
            .run(py, |db| Ok(db.get_with_deadline(key.as_bytes())?))?;
        Ok(found.map(|(v, d)| (PyBytes::new(py, &v).unbind(), d)))
    }

    /// The database clock, in milliseconds since the Unix epoch: what
    /// deadlines are judged against.
    fn now_ms(&self, py: Python<'_>) -> PyResult<u64> {
        self.handle.run(py, |db| Ok(db.now_ms()))
    }

    /// Puts ``key -> value``. ``sync=True`` returns only once the write is
    /// on disk (fsync). ``ttl_ms`` (milliseconds from now) or
    /// ``expire_at_ms`` (milliseconds since the Unix epoch) makes the key
    /// expire: from then on every read sees it as absent.
    #[pyo3(signature = (key, value, sync = false, *, ttl_ms = None, expire_at_ms = None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        sync: bool,
        ttl_ms: Option<i64>,
        expire_at_ms: Option<i64>,
    ) -> PyResult<()> {
        let (key, value) = (bin_arg(key, "key")?, bin_arg(value, "value")?);
        let expiry = Expiry::from_args(py, ttl_ms, expire_at_ms)?;
        self.handle.run(py, |db| {
            put_in(db, key.as_bytes(), value.as_bytes(), expiry, sync)
        })
    }

    /// Deletes ``key`` (nothing happens when it is absent). ``sync=True``
    /// returns only once the delete is on disk.
    #[pyo3(signature = (key, sync = false))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: bool) -> PyResult<()> {
        let key = bin_arg(key, "key")?;
        self.handle.run(py, |db| {
            Ok(db.delete_opt(write_options(sync), key.as_bytes())?)
        })
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
        match read::get(py, &self.handle, View::Current, key)? {
            Some(v) => Ok(PyBytes::new(py, &v).unbind()),
            None => Err(pyo3::exceptions::PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, false, None, None)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key, false)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        read::contains(py, &self.handle, key)
    }

    /// Iterates over the keys, in order (as ``keys()``).
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIter> {
        self.keys(py, None, None, None, false)
    }

    /// A write batch: puts and deletes applied atomically by ``write()``,
    /// or on leaving a ``with`` block without an exception (an exception
    /// discards them). ``sync=True`` fsyncs the log when it is written.
    #[pyo3(signature = (sync = false))]
    fn write_batch(&self, sync: bool) -> PyBatch {
        PyBatch::new(self.handle.clone(), sync)
    }

    /// A snapshot: a consistent read view of the database as it is now.
    /// Release it with ``close()`` or a ``with`` block.
    fn snapshot(&self, py: Python<'_>) -> PyResult<PySnapshot> {
        let snap = self.handle.run(py, |db| Ok(db.snapshot()))?;
        Ok(PySnapshot::new(self.handle.clone(), snap))
    }

    /// A lazy iterator over the keys in ``[start, stop)`` (either side open
    /// when ``None``), or over the keys beginning with ``prefix``, in key
    /// order or, with ``reverse=True``, backwards from the end of the range.
    /// Yields ``(key, value)`` tuples, or keys only (``include_value=False``,
    /// no value is decoded) or values only (``include_key=False``).
    #[pyo3(signature = (start = None, stop = None, prefix = None, reverse = false, include_key = true, include_value = true))]
    #[allow(clippy::too_many_arguments)]
    fn iterator<'py>(
        &self,
        py: Python<'py>,
        start: Option<Bound<'py, PyAny>>,
        stop: Option<Bound<'py, PyAny>>,
        prefix: Option<Bound<'py, PyAny>>,
        reverse: bool,
        include_key: bool,
        include_value: bool,
    ) -> PyResult<PyIter> {
        let args = IterArgs {
            start,
            stop,
            prefix,
            reverse,
            include_key,
            include_value,
        };
        read::iterator(py, &self.handle, View::Current, args)
    }

    /// A two-way iterator positioned by hand (``seek``, ``next``,
    /// ``prev``, ``key``, ``value``), unpositioned at first.
    fn raw_iterator(&self, py: Python<'_>) -> PyResult<PyRawIter> {
        read::raw_iterator(py, &self.handle, View::Current)
    }

    /// ``(key, value)`` tuples; the arguments are ``iterator()``'s.
    #[pyo3(signature = (start = None, stop = None, prefix = None, reverse = false))]
    fn items<'py>(
        &self,
        py: Python<'py>,
        start: Option<Bound<'py, PyAny>>,
        stop: Option<Bound<'py, PyAny>>,
        prefix: Option<Bound<'py, PyAny>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        self.iterator(py, start, stop, prefix, reverse, true, true)
    }

    /// Keys only (no value is decoded); the arguments are ``iterator()``'s.
    #[pyo3(signature = (start = None, stop = None, prefix = None, reverse = false))]
    fn keys<'py>(
        &self,
        py: Python<'py>,
        start: Option<Bound<'py, PyAny>>,
        stop: Option<Bound<'py, PyAny>>,
        prefix: Option<Bound<'py, PyAny>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        self.iterator(py, start, stop, prefix, reverse, true, false)
    }

    /// Values only, in key order; the arguments are ``iterator()``'s.
    #[pyo3(signature = (start = None, stop = None, prefix = None, reverse = false))]
    fn values<'py>(
        &self,
        py: Python<'py>,
        start: Option<Bound<'py, PyAny>>,
        stop: Option<Bound<'py, PyAny>>,
        prefix: Option<Bound<'py, PyAny>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        self.iterator(py, start, stop, prefix, reverse, false, true)
    }

    /// A lazy iterator over the keys matching regex ``pattern`` (Rust
    /// ``regex`` syntax, matched against the whole key), in key order: at
    /// most ``limit`` of them, as ``(key, value)`` tuples or, with
    /// ``include_value=False``, keys; from key ``start`` on (inclusive)
    /// when given, the walk starting on that key's path, so a paged search
    /// resumes without walking the matches before it again. A pattern that
    /// does not parse raises ``InvalidArgumentError``.
    #[pyo3(signature = (pattern, limit = None, include_value = true, start = None))]
    fn search(
        &self,
        py: Python<'_>,
        pattern: &Bound<'_, PyAny>,
        limit: Option<usize>,
        include_value: bool,
        start: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PySearch> {
        let pattern = pattern_arg(py, pattern)?;
        let start = opt_bin_arg(start.as_ref(), "start")?.unwrap_or_default();
        read::search(
            py,
            &self.handle,
            View::Current,
            &pattern,
            &start,
            limit,
            include_value,
        )
    }

    /// Live keys, counted exactly: from the one segment of a settled
    /// database, otherwise by walking them (no value is decoded).
    fn count_keys(&self, py: Python<'_>) -> PyResult<u64> {
        self.handle.run(py, |db| Ok(db.count_keys()?))
    }

    /// Sizes and counts as a dict: ``segments`` (a list of dicts, oldest
    /// first), ``memtable_bytes``, ``memtable_entries``,
    /// ``frozen_memtables``, ``disk_bytes``, ``wal_bytes``,
    /// ``last_sequence``, ``records_copied``, ``records_encoded``,
    /// ``value_cache`` (a dict: ``capacity_bytes``, ``charged_bytes``,
    /// ``values``, ``hits``, ``misses``) and ``models``.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.handle.run(py, |db| Ok(db.stats()?))?;
        stats_dict(py, &s)
    }

    /// Reads every live file and checks every checksum; returns a dict
    /// (``segments``, ``records``, ``models``, ``wals``, ``wal_records``,
    /// ``torn_logs``) or raises ``CorruptionError`` naming the bad file.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.handle.run(py, |db| Ok(db.verify()?))?;
        verify_dict(py, &r)
    }

    /// Builds the memtable into a segment, and waits until it is done.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.handle.run(py, |db| Ok(db.flush()?))
    }

    /// Flushes, then merges every segment into one, dropping deleted and
    /// overwritten versions no snapshot needs; waits until done.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        self.handle.run(py, |db| Ok(db.compact()?))
    }

    /// Flushes, then waits until background merges have nothing left to
    /// do (without forcing a full merge as ``compact()`` does).
    fn settle(&self, py: Python<'_>) -> PyResult<()> {
        self.handle.run(py, |db| Ok(db.settle()?))
    }

    /// Makes every write acknowledged so far durable (fsyncs the log).
    fn sync_wal(&self, py: Python<'_>) -> PyResult<()> {
        self.handle.run(py, |db| Ok(db.sync_wal()?))
    }

    /// Loads an iterable of ``(key, value)`` pairs straight into segments,
    /// without the log (the last value of a repeated key wins); returns a
    /// dict (``records``, ``keys``, ``segments``). Call ``compact()``
    /// afterwards to merge the segments. The iterable must not use this
    /// database (that raises ``InvalidArgumentError``).
    fn bulk_load<'py>(
        &self,
        py: Python<'py>,
        records: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let source = records.try_iter()?.unbind();
        let stats = self.handle.run(py, move |db| {
            let mut feed = Feed {
                source,
                buf: VecDeque::new(),
                done: false,
            };
            db.try_bulk_load::<_, _, _, Failure>(std::iter::from_fn(|| feed.next()))
        })?;
        bulk_dict(py, &stats)
    }

    /// Closes the database: waits for calls in progress in other threads,
    /// stops background work, syncs the log and releases the lock. Later
    /// use of the handle, or of its snapshots, iterators and batches,
    /// raises ``ClosedError``. Closing twice does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.handle.close(py)
    }

    /// True once ``close()`` was called.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        self.handle.is_closed(py)
    }

    /// The database directory.
    #[getter]
    fn path(&self) -> String {
        self.handle.path.to_string_lossy().into_owned()
    }

    /// True when opened with ``read_only=True``.
    #[getter]
    fn read_only(&self) -> bool {
        self.handle.read_only
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let state = if self.handle.is_closed(py) {
            " (closed)"
        } else {
            ""
        };
        format!("<pith.DB {}{state}>", self.handle.path.display())
    }
}

/// Pairs pulled from a Python iterable this many at a time (one GIL
/// acquisition each).
const FEED_CHUNK: usize = 1024;

/// `bulk_load`'s input: pairs pulled from a Python iterator in chunks.
struct Feed {
    source: Py<PyIterator>,
    buf: VecDeque<(Bin, Bin)>,
    done: bool,
}

impl Feed {
    fn next(&mut self) -> Option<Result<(Bin, Bin), Failure>> {
        if self.buf.is_empty() && !self.done {
            IN_FEED.with(|f| f.set(true));
            let refilled = Python::attach(|py| self.refill(py));
            IN_FEED.with(|f| f.set(false));
            if let Err(e) = refilled {
                self.done = true;
                return Some(Err(Failure::Python(e)));
            }
        }
        self.buf.pop_front().map(Ok)
    }

    fn refill(&mut self, py: Python<'_>) -> PyResult<()> {
        let mut it = self.source.bind(py).clone();
        for _ in 0..FEED_CHUNK {
            let Some(item) = it.next() else {
                self.done = true;
                break;
            };
            let item = item?;
            let pair = item.cast::<PyTuple>().ok().filter(|t| t.len() == 2);
            let Some(pair) = pair else {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "bulk_load takes an iterable of (key, value) tuples",
                ));
            };
            let key = bin_arg(&pair.get_item(0)?, "key")?;
            let value = bin_arg(&pair.get_item(1)?, "value")?;
            self.buf.push_back((key, value));
        }
        Ok(())
    }
}
