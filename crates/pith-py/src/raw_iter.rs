//! `pith.RawIterator`: the engine's two-way `DbIterator` as it is (seek,
//! next, prev, key, value), for callers who position it themselves, as
//! RocksDB's raw iterator (rocksdict's `Rdict.iter()`) and plyvel's
//! iterator `seek` allow.
//!
//! Positioning decodes no value: a value is decoded only when `value()` is
//! called, once per position. Every call runs with the GIL released and
//! checks that the database is still open (`ClosedError` after close). The
//! engine's iterator owns the memtables and segments it reads (`Arc`s), so
//! it reads the state it was made on however long it lives.
//!
//! Thread safety: the engine's iterator is `Send`, not `Sync`; it sits in
//! a `Mutex`.

use std::sync::{Arc, Mutex};

use engine::DbIterator;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::bin_arg;
use crate::errors::Failure;
use crate::handle::{lock, Handle};

/// A two-way iterator positioned by hand: ``seek(key)``,
/// ``seek_to_first()``, ``seek_to_last()``, ``seek_for_prev(key)``,
/// ``next()``, ``prev()``; then ``valid()``, ``key()``, ``value()``. It
/// starts unpositioned (not valid). A value is decoded only when
/// ``value()`` asks for it.
#[pyclass(module = "pith", name = "RawIterator", frozen)]
pub(crate) struct PyRawIter {
    handle: Arc<Handle>,
    it: Mutex<DbIterator>,
}

impl PyRawIter {
    /// A raw iterator over `it`.
    pub(crate) fn new(handle: Arc<Handle>, it: DbIterator) -> PyRawIter {
        PyRawIter {
            handle,
            it: Mutex::new(it),
        }
    }

    /// Runs `f` on the iterator with the GIL released, the database open.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut DbIterator) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        self.handle.run(py, |_| f(&mut lock(&self.it)))
    }
}

#[pymethods]
impl PyRawIter {
    /// Moves to the first key ``>= key``.
    fn seek(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bin_arg(key, "key")?;
        self.with(py, |it| {
            it.seek(key.as_bytes());
            Ok(())
        })
    }

    /// Moves to the last key ``<= key``.
    fn seek_for_prev(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bin_arg(key, "key")?;
        self.with(py, |it| {
            it.seek_for_prev(key.as_bytes());
            Ok(())
        })
    }

    /// Moves to the first key.
    fn seek_to_first(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |it| {
            it.seek_to_first();
            Ok(())
        })
    }

    /// Moves to the last key.
    fn seek_to_last(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |it| {
            it.seek_to_last();
            Ok(())
        })
    }

    /// Steps to the next key (nothing happens when not valid).
    fn next(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |it| {
            it.next();
            Ok(())
        })
    }

    /// Steps to the previous key (nothing happens when not valid).
    fn prev(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |it| {
            it.prev();
            Ok(())
        })
    }

    /// True when positioned on a key.
    fn valid(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |it| Ok(it.valid()))
    }

    /// The current key, or ``None`` when not valid.
    fn key(&self, py: Python<'_>) -> PyResult<Option<Py<PyBytes>>> {
        let key = self.with(py, |it| Ok(it.key().map(<[u8]>::to_vec)))?;
        Ok(key.map(|k| PyBytes::new(py, &k).unbind()))
    }

    /// The current value (decoded now), or ``None`` when not valid; a value
    /// that cannot be decoded raises ``CorruptionError``.
    fn value(&self, py: Python<'_>) -> PyResult<Option<Py<PyBytes>>> {
        let value = self.with(py, |it| {
            if !it.valid() {
                return Ok(None);
            }
            match it.value() {
                Some(v) => Ok(Some(v.to_vec())),
                None => {
                    it.status()?;
                    Ok(None)
                }
            }
        })?;
        Ok(value.map(|v| PyBytes::new(py, &v).unbind()))
    }

    /// When the current key expires (milliseconds since the Unix epoch),
    /// or ``None`` (it never does, or not valid).
    fn deadline(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        self.with(py, |it| Ok(it.deadline()))
    }

    /// Raises the error that stopped the iterator (or that the current
    /// value could not be decoded with), if any.
    fn status(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |it| Ok(it.status()?))
    }

    fn __repr__(&self) -> String {
        format!("<pith.RawIterator on {}>", self.handle.path.display())
    }
}
