//! `pith`: Python bindings for PithDB, built with PyO3 as an abi3
//! extension module (one wheel for CPython 3.9 and later) by maturin.
//!
//! ```python
//! import pith
//! with pith.DB("/tmp/example") as db:
//!     db[b"apple"] = b"red"
//!     with db.write_batch() as b:
//!         b.put(b"banana", b"yellow")
//!     print(list(db.items(prefix=b"b")))
//! ```
//!
//! The Python API (`pith.pyi` is its typed summary, `docs/python.md` its
//! guide) follows plyvel and rocksdict: [`db::PyDB`] (`pith.DB`) with
//! `get`/`put`/`delete` and the mapping protocol, [`batch::PyBatch`]
//! (`write_batch()`), [`snapshot::PySnapshot`] (`snapshot()`), lazy
//! iterators and regex searches ([`iter`]), hand-positioned iterators
//! ([`raw_iter`]), `stats()` and the other
//! maintenance calls ([`stats`]), and an exception hierarchy rooted at
//! `pith.Error` ([`errors`]).
//!
//! Layers, bottom to top: `errors`, `convert`, `handle` (the closable
//! shared handle, and the GIL-released call), `iter`, `raw_iter`, `read`,
//! `stats`, `batch`, `snapshot`, `db`. No `unsafe` code: Python objects
//! never hold references into the engine, only owned engine values
//! (`Arc`-backed iterators and snapshots) and an `Arc` of the handle.
//!
//! Thread safety: every class is `Send + Sync` (state behind locks); every
//! engine call releases the GIL.

#![deny(missing_docs)]
#![deny(unsafe_code)]
#![deny(clippy::unwrap_used)]

mod batch;
mod convert;
mod db;
mod errors;
mod handle;
mod iter;
mod raw_iter;
mod read;
mod snapshot;
mod stats;

use pyo3::prelude::*;

/// PithDB: an embedded key-value store built on searchable compression.
#[pymodule(name = "pith")]
fn pith_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<db::PyDB>()?;
    m.add_class::<batch::PyBatch>()?;
    m.add_class::<snapshot::PySnapshot>()?;
    m.add_class::<iter::PyIter>()?;
    m.add_class::<iter::PySearch>()?;
    m.add_class::<raw_iter::PyRawIter>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
