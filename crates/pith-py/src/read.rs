//! The read methods `pith.DB` and `pith.Snapshot` share (`get`,
//! `iterator`, `search`), over the current state or a snapshot.
//!
//! Each runs its engine call with the GIL released, through the handle
//! (`handle.rs`), so a closed database is `ClosedError`.

use std::sync::{Arc, RwLock};

use engine::{Snapshot, DB};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::{bin_arg, Range};
use crate::errors::{invalid, Failure};
use crate::handle::{read, Handle};
use crate::iter::{PyIter, PySearch, Yield};
use crate::raw_iter::PyRawIter;

/// What a read sees: the current state, or a snapshot (which may have been
/// released).
#[derive(Clone, Copy)]
pub(crate) enum View<'a> {
    Current,
    At(&'a RwLock<Option<Snapshot>>),
}

impl View<'_> {
    /// Runs `f` on the database and the snapshot (`None`: current state).
    fn with<T>(
        self,
        db: &DB,
        f: impl FnOnce(&DB, Option<&Snapshot>) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        match self {
            View::Current => f(db, None),
            View::At(lock) => match read(lock).as_ref() {
                Some(s) => f(db, Some(s)),
                None => Err(Failure::Closed("snapshot")),
            },
        }
    }
}

/// The value of `key` in `view`, or `None`.
pub(crate) fn get(
    py: Python<'_>,
    handle: &Handle,
    view: View<'_>,
    key: &Bound<'_, PyAny>,
) -> PyResult<Option<Vec<u8>>> {
    let key = bin_arg(key, "key")?;
    handle.run(py, |db| {
        view.with(db, |db, snap| match snap {
            None => Ok(db.get(key.as_bytes())?),
            Some(s) => Ok(db.get_at(s, key.as_bytes())?),
        })
    })
}

/// True when `key` is present in the database's current state: a lookup
/// that decodes no value.
pub(crate) fn contains(py: Python<'_>, handle: &Handle, key: &Bound<'_, PyAny>) -> PyResult<bool> {
    let key = bin_arg(key, "key")?;
    handle.run(py, |db| Ok(db.contains(key.as_bytes())?))
}

/// The values of `keys` (an iterable) in `view`, in order, `None` for the
/// absent ones: one GIL release for all of them.
pub(crate) fn get_many(
    py: Python<'_>,
    handle: &Handle,
    view: View<'_>,
    keys: &Bound<'_, PyAny>,
) -> PyResult<Vec<Option<Vec<u8>>>> {
    let keys = keys
        .try_iter()?
        .map(|k| bin_arg(&k?, "key"))
        .collect::<PyResult<Vec<_>>>()?;
    handle.run(py, |db| {
        view.with(db, |db, snap| {
            keys.iter()
                .map(|k| match snap {
                    None => db.get(k.as_bytes()),
                    Some(s) => db.get_at(s, k.as_bytes()),
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(Failure::Engine)
        })
    })
}

/// `values` as a list of `bytes`, with `default` for the absent ones.
pub(crate) fn values_list(
    py: Python<'_>,
    values: Vec<Option<Vec<u8>>>,
    default: Option<Py<PyAny>>,
) -> Vec<Py<PyAny>> {
    values
        .into_iter()
        .map(|v| match v {
            Some(v) => PyBytes::new(py, &v).into_any().unbind(),
            None => default
                .as_ref()
                .map_or_else(|| py.None(), |d| d.clone_ref(py)),
        })
        .collect()
}

/// Arguments of `iterator()`.
pub(crate) struct IterArgs<'py> {
    pub(crate) start: Option<Bound<'py, PyAny>>,
    pub(crate) stop: Option<Bound<'py, PyAny>>,
    pub(crate) prefix: Option<Bound<'py, PyAny>>,
    pub(crate) reverse: bool,
    pub(crate) include_key: bool,
    pub(crate) include_value: bool,
}

/// A `pith.Iterator` over `view`.
pub(crate) fn iterator(
    py: Python<'_>,
    handle: &Arc<Handle>,
    view: View<'_>,
    args: IterArgs<'_>,
) -> PyResult<PyIter> {
    let range = Range::from_args(
        py,
        args.start.as_ref(),
        args.stop.as_ref(),
        args.prefix.as_ref(),
    )?;
    let what = Yield::from_flags(args.include_key, args.include_value)
        .ok_or_else(|| invalid(py, "include_key and include_value cannot both be False"))?;
    let scan = handle.run(py, |db| {
        view.with(db, |db, snap| {
            let (from, to) = (range.start.as_deref(), range.stop.as_deref());
            Ok(match snap {
                None => db.range(from, to),
                Some(s) => db.range_at(s, from, to),
            })
        })
    })?;
    Ok(PyIter::new(handle.clone(), scan, what, args.reverse))
}

/// A `pith.SearchIterator` over the keys of `view` matching `pattern`,
/// from `start` on (inclusive).
pub(crate) fn search(
    py: Python<'_>,
    handle: &Arc<Handle>,
    view: View<'_>,
    pattern: &str,
    start: &[u8],
    limit: Option<usize>,
    include_value: bool,
) -> PyResult<PySearch> {
    let search = handle.run(py, |db| {
        view.with(db, |db, snap| {
            Ok(match snap {
                None => db.search_from(pattern, start)?,
                Some(s) => db.search_from_at(s, pattern, start)?,
            })
        })
    })?;
    Ok(PySearch::new(handle.clone(), search, include_value, limit))
}

/// A `pith.RawIterator` over `view` (unpositioned).
pub(crate) fn raw_iterator(
    py: Python<'_>,
    handle: &Arc<Handle>,
    view: View<'_>,
) -> PyResult<PyRawIter> {
    let it = handle.run(py, |db| {
        view.with(db, |db, snap| {
            Ok(match snap {
                None => db.iter(),
                Some(s) => db.iter_at(s),
            })
        })
    })?;
    Ok(PyRawIter::new(handle.clone(), it))
}
