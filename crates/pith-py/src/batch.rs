//! `pith.WriteBatch`: puts and deletes collected in Python and applied
//! atomically by the engine (all or nothing, for readers and for
//! recovery).
//!
//! As a context manager it writes on a clean exit and discards everything
//! on an exception. `write()` may also be called directly; it empties the
//! batch, which can then be reused. A batch does not read the database
//! until it is written (a `ttl_ms` put reads the clock when added).
//!
//! Thread safety: the engine's batch sits in a `Mutex`; threads adding to
//! one batch take turns.

use std::sync::{Arc, Mutex};

use engine::WriteBatch;
use pyo3::prelude::*;
use pyo3::types::PyAny;

use crate::convert::{bin_arg, Expiry};
use crate::db::write_options;
use crate::handle::{lock, Handle};

/// A batch of puts and deletes, applied atomically by ``write()`` or on
/// leaving a ``with`` block without an exception.
#[pyclass(module = "pith", name = "WriteBatch", frozen)]
pub(crate) struct PyBatch {
    handle: Arc<Handle>,
    batch: Mutex<WriteBatch>,
    sync: bool,
}

impl PyBatch {
    /// An empty batch on `handle`, written with `sync`.
    pub(crate) fn new(handle: Arc<Handle>, sync: bool) -> PyBatch {
        PyBatch {
            handle,
            batch: Mutex::new(WriteBatch::new()),
            sync,
        }
    }
}

#[pymethods]
impl PyBatch {
    /// Adds a put of ``key -> value``; ``ttl_ms`` or ``expire_at_ms`` as
    /// in ``DB.put``.
    #[pyo3(signature = (key, value, *, ttl_ms = None, expire_at_ms = None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl_ms: Option<i64>,
        expire_at_ms: Option<i64>,
    ) -> PyResult<()> {
        let (key, value) = (bin_arg(key, "key")?, bin_arg(value, "value")?);
        let expiry = Expiry::from_args(py, ttl_ms, expire_at_ms)?;
        let deadline = match expiry {
            Expiry::Never => None,
            Expiry::At(at) => Some(at),
            Expiry::Ttl(_) => expiry.deadline(self.handle.run(py, |db| Ok(db.now_ms()))?),
        };
        py.detach(|| {
            let mut b = lock(&self.batch);
            match deadline {
                None => b.put(key.as_bytes(), value.as_bytes()),
                Some(d) => b.put_expiring(key.as_bytes(), value.as_bytes(), d),
            };
        });
        Ok(())
    }

    /// Adds a delete of ``key``.
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = bin_arg(key, "key")?;
        py.detach(|| {
            lock(&self.batch).delete(key.as_bytes());
        });
        Ok(())
    }

    /// Drops every operation added so far.
    fn clear(&self, py: Python<'_>) {
        py.detach(|| lock(&self.batch).clear());
    }

    /// Applies the batch atomically, then empties it.
    fn write(&self, py: Python<'_>) -> PyResult<()> {
        self.handle.run(py, |db| {
            let batch = std::mem::take(&mut *lock(&self.batch));
            Ok(db.write(write_options(self.sync), batch)?)
        })
    }

    /// The number of operations in the batch.
    fn __len__(&self, py: Python<'_>) -> usize {
        py.detach(|| lock(&self.batch).len())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Writes the batch when the block raised nothing, and discards it
    /// otherwise; never swallows the exception.
    #[pyo3(signature = (exc_type = None, _exc_value = None, _traceback = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc_value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_none_or(|t| t.is_none()) {
            self.write(py)?;
        } else {
            self.clear(py);
        }
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<pith.WriteBatch of {} operations>", self.__len__(py))
    }
}
