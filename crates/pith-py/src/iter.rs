//! Lazy Python iterators over the engine's scans and regex searches:
//! `pith.Iterator` (from `DB.iterator`, `items`, `keys`, `values` and the
//! same on a snapshot) and `pith.SearchIterator` (from `search`).
//!
//! Each `__next__` takes one step of the engine's scan with the GIL
//! released (a step may read a segment and decode a value). A key-only
//! iterator walks the engine's key-only scan, which decodes no value;
//! values are decoded only when the iterator yields them. The engine's
//! scan owns the memtables and segments it reads (`Arc`s), so an iterator
//! sees the state it was created on however long it lives, and does not
//! borrow from the `DB` object: no lifetime is extended unsafely. It holds
//! an `Arc<Handle>` and checks at each step that the database is open:
//! after `DB.close()` the next step raises `ClosedError`.
//!
//! Thread safety: the engine's scans are `Send`, not `Sync`; each Python
//! iterator keeps its scan in a `Mutex`, so two threads stepping one
//! iterator take turns.

use std::sync::{Arc, Mutex};

use engine::{Scan, ScanKeys, Search, SearchKeys};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::errors::Failure;
use crate::handle::{lock, Handle};

/// What an iterator yields.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Yield {
    /// `(key, value)` tuples.
    Items,
    /// Keys (`bytes`).
    Keys,
    /// Values (`bytes`).
    Values,
}

impl Yield {
    /// From `include_key` / `include_value`; `None` when both are false.
    pub(crate) fn from_flags(include_key: bool, include_value: bool) -> Option<Yield> {
        match (include_key, include_value) {
            (true, true) => Some(Yield::Items),
            (true, false) => Some(Yield::Keys),
            (false, true) => Some(Yield::Values),
            (false, false) => None,
        }
    }
}

/// The engine's walk: with values, or keys only.
enum Walk {
    Pairs(Scan),
    Keys(ScanKeys),
}

/// One yielded entry, before it becomes Python objects.
enum Entry {
    Pair(Vec<u8>, Vec<u8>),
    One(Vec<u8>),
}

impl Entry {
    /// The Python object for this entry.
    fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self {
            Entry::Pair(k, v) => {
                let t = PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?;
                Ok(t.into_any().unbind())
            }
            Entry::One(b) => Ok(PyBytes::new(py, &b).into_any().unbind()),
        }
    }
}

struct IterState {
    walk: Walk,
    what: Yield,
    reverse: bool,
    done: bool,
}

impl IterState {
    /// The next entry in the iterator's direction.
    fn step(&mut self) -> Result<Option<Entry>, Failure> {
        if self.done {
            return Ok(None);
        }
        let entry = match &mut self.walk {
            Walk::Pairs(scan) => {
                let next = if self.reverse {
                    scan.next_back()
                } else {
                    scan.next()
                };
                match next.transpose()? {
                    None => None,
                    Some((k, v)) => Some(match self.what {
                        Yield::Values => Entry::One(v),
                        Yield::Keys => Entry::One(k),
                        Yield::Items => Entry::Pair(k, v),
                    }),
                }
            }
            Walk::Keys(keys) => {
                let next = if self.reverse {
                    keys.next_back()
                } else {
                    keys.next()
                };
                next.transpose()?.map(Entry::One)
            }
        };
        if entry.is_none() {
            self.done = true;
        }
        Ok(entry)
    }
}

/// A lazy iterator over a key range of a database or a snapshot, in key
/// order or reversed.
///
/// Yields `(key, value)` tuples, keys, or values (as asked when it was
/// made). Reads the state of the database when it was made (later writes
/// are not seen). After the database is closed, the next step raises
/// `pith.ClosedError`.
#[pyclass(module = "pith", name = "Iterator")]
pub(crate) struct PyIter {
    handle: Arc<Handle>,
    state: Mutex<IterState>,
}

impl PyIter {
    /// An iterator over `scan`, yielding `what`.
    pub(crate) fn new(handle: Arc<Handle>, scan: Scan, what: Yield, reverse: bool) -> PyIter {
        let walk = match what {
            Yield::Keys => Walk::Keys(scan.keys()),
            Yield::Items | Yield::Values => Walk::Pairs(scan),
        };
        PyIter {
            handle,
            state: Mutex::new(IterState {
                walk,
                what,
                reverse,
                done: false,
            }),
        }
    }
}

#[pymethods]
impl PyIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let entry = self.handle.run(py, |_| lock(&self.state).step())?;
        entry.map(|e| e.into_py(py)).transpose()
    }

    /// Ends the iteration early: later steps yield nothing. (Dropping the
    /// iterator does the same; this only makes it explicit.)
    fn close(&self, py: Python<'_>) {
        py.detach(|| lock(&self.state).done = true);
    }

    fn __repr__(&self) -> String {
        format!("<pith.Iterator on {}>", self.handle.path.display())
    }
}

/// The engine's search: with values, or keys only.
enum Matches {
    Pairs(Search),
    Keys(SearchKeys),
}

struct SearchState {
    matches: Matches,
    /// Matches still to yield (`None`: no limit).
    remaining: Option<usize>,
}

impl SearchState {
    fn step(&mut self) -> Result<Option<Entry>, Failure> {
        if self.remaining == Some(0) {
            return Ok(None);
        }
        let entry = match &mut self.matches {
            Matches::Pairs(s) => s.next().transpose()?.map(|(k, v)| Entry::Pair(k, v)),
            Matches::Keys(s) => s.next().transpose()?.map(Entry::One),
        };
        match (&entry, &mut self.remaining) {
            (Some(_), Some(n)) => *n -= 1,
            (None, r) => *r = Some(0),
            _ => {}
        }
        Ok(entry)
    }
}

/// A lazy iterator over the keys matching a regex (whole-key match), in
/// key order: `(key, value)` tuples, or keys only. Segments are searched by
/// walking the pattern's automaton through their key tries.
#[pyclass(module = "pith", name = "SearchIterator")]
pub(crate) struct PySearch {
    handle: Arc<Handle>,
    state: Mutex<SearchState>,
}

impl PySearch {
    /// An iterator over `search`'s first `limit` matches, with their
    /// values when `include_value`.
    pub(crate) fn new(
        handle: Arc<Handle>,
        search: Search,
        include_value: bool,
        limit: Option<usize>,
    ) -> PySearch {
        let matches = if include_value {
            Matches::Pairs(search)
        } else {
            Matches::Keys(search.keys())
        };
        PySearch {
            handle,
            state: Mutex::new(SearchState {
                matches,
                remaining: limit,
            }),
        }
    }
}

#[pymethods]
impl PySearch {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let entry = self.handle.run(py, |_| lock(&self.state).step())?;
        entry.map(|e| e.into_py(py)).transpose()
    }

    fn __repr__(&self) -> String {
        format!("<pith.SearchIterator on {}>", self.handle.path.display())
    }
}
