//! `pith.Snapshot`: a consistent read view (the engine's `Snapshot`, which
//! pins a sequence number so merges keep the versions it sees).
//!
//! Released by `close()`, a `with` block, or garbage collection. Reads
//! through a released snapshot, or through any snapshot of a closed
//! database, raise `ClosedError`. Iterators already made from it keep
//! working after it is released (they hold what they read), until the
//! database closes.
//!
//! Thread safety: the engine's snapshot sits in an `RwLock`; reads share
//! it, release takes it out.

use std::sync::{Arc, RwLock};

use engine::Snapshot;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::convert::{opt_bin_arg, pattern_arg};
use crate::handle::{read, write, Handle};
use crate::iter::{PyIter, PySearch};
use crate::raw_iter::PyRawIter;
use crate::read::{self as reads, IterArgs, View};

/// A consistent, read-only view of the database as it was when the
/// snapshot was taken: ``get``, ``snap[key]``, ``key in snap``,
/// ``iterator`` / ``items`` / ``keys`` / ``values`` and ``search``, as on
/// ``pith.DB``. Release it with ``close()`` or a ``with`` block.
#[pyclass(module = "pith", name = "Snapshot", frozen)]
pub(crate) struct PySnapshot {
    handle: Arc<Handle>,
    snap: RwLock<Option<Snapshot>>,
}

impl PySnapshot {
    /// A Python snapshot of `handle`'s database.
    pub(crate) fn new(handle: Arc<Handle>, snap: Snapshot) -> PySnapshot {
        PySnapshot {
            handle,
            snap: RwLock::new(Some(snap)),
        }
    }

    fn view(&self) -> View<'_> {
        View::At(&self.snap)
    }
}

#[pymethods]
impl PySnapshot {
    /// The value of ``key`` as of the snapshot, or ``default``.
    #[pyo3(signature = (key, default = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        match reads::get(py, &self.handle, self.view(), key)? {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// ``DB.get_many`` as of the snapshot.
    #[pyo3(signature = (keys, default = None))]
    fn get_many(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let values = reads::get_many(py, &self.handle, self.view(), keys)?;
        Ok(reads::values_list(py, values, default))
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
        match reads::get(py, &self.handle, self.view(), key)? {
            Some(v) => Ok(PyBytes::new(py, &v).unbind()),
            None => Err(pyo3::exceptions::PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(reads::get(py, &self.handle, self.view(), key)?.is_some())
    }

    /// Iterates over the keys as of the snapshot, in order.
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyIter> {
        self.iterator(py, None, None, None, false, true, false)
    }

    /// ``DB.iterator`` as of the snapshot.
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
        reads::iterator(py, &self.handle, self.view(), args)
    }

    /// ``DB.raw_iterator`` as of the snapshot.
    fn raw_iterator(&self, py: Python<'_>) -> PyResult<PyRawIter> {
        reads::raw_iterator(py, &self.handle, self.view())
    }

    /// ``(key, value)`` tuples as of the snapshot.
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

    /// Keys as of the snapshot (no value is decoded).
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

    /// Values as of the snapshot, in key order.
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

    /// ``DB.search`` as of the snapshot.
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
        reads::search(
            py,
            &self.handle,
            self.view(),
            &pattern,
            &start,
            limit,
            include_value,
        )
    }

    /// The sequence number the snapshot reads at (``None`` once released).
    #[getter]
    fn sequence(&self, py: Python<'_>) -> Option<u64> {
        py.detach(|| read(&self.snap).as_ref().map(Snapshot::sequence))
    }

    /// Releases the snapshot (merges may then drop the versions only it
    /// needed). Releasing twice does nothing.
    fn close(&self, py: Python<'_>) {
        let snap = py.detach(|| write(&self.snap).take());
        drop(snap);
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        match self.sequence(py) {
            Some(s) => format!("<pith.Snapshot at sequence {s}>"),
            None => "<pith.Snapshot (released)>".into(),
        }
    }
}
