//! The exception hierarchy, and the one place engine errors become Python
//! exceptions.
//!
//! The classes are defined in Python source (`EXCEPTIONS`) so that two of
//! them can also derive from a built-in (`InvalidArgumentError` is a
//! `ValueError`, `IOError` an `OSError`), which a single-base
//! `create_exception!` cannot express. They are created once, when the
//! module is imported, and kept in a `PyOnceLock` for raising from any
//! method.
//!
//! Every failure a method can meet is first a [`Failure`], a plain Rust
//! value that crosses the GIL-released part of a call (it is `Send`), and
//! becomes a `PyErr` only with the GIL held again ([`Failure::into_pyerr`]).
//! The engine's message, which names the file, is the exception's text;
//! errors tied to a path also carry it as the attribute `path`, and I/O
//! errors their `errno` when the OS gave one.
//!
//! Thread safety: the class table is written once under the interpreter's
//! once-lock and read-only afterwards.

use std::ffi::CStr;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyModule, PyType};

/// The Python source of the exception classes.
const EXCEPTIONS: &CStr = cr#"
class Error(Exception):
    """Base class of every error PithDB raises.

    ``str(e)`` is the engine's message, which names the file involved;
    errors tied to a file or directory also have it as ``e.path``."""
    __module__ = "pith"

class CorruptionError(Error):
    """A file's bytes are not what PithDB wrote (a checksum mismatch, a bad
    magic, a structure that does not validate), or a file was written by a
    format version this build does not read. The message names the file and
    the byte offset."""
    __module__ = "pith"

class LockedError(Error):
    """Another process, or another open ``pith.DB`` in this one, holds the
    database. Close it first, or open with ``read_only=True``."""
    __module__ = "pith"

class ReadOnlyError(Error):
    """A write, flush or compaction on a database opened with
    ``read_only=True``."""
    __module__ = "pith"

class InvalidArgumentError(Error, ValueError):
    """An argument PithDB cannot take: a bad option, a regex that does not
    parse, conflicting iterator bounds, a negative time to live. Also a
    ``ValueError``."""
    __module__ = "pith"

class IOError(Error, OSError):
    """An operating-system I/O call failed; ``e.path`` is the file and
    ``e.errno`` the OS error number when there is one. Also an ``OSError``."""
    __module__ = "pith"

class NoSpaceError(IOError):
    """The disk (or the quota) is full. Nothing acknowledged is lost; free
    some space, then reopen the database if it stopped accepting writes."""
    __module__ = "pith"

class NotFoundError(Error):
    """No database at the path and ``create_if_missing=False``."""
    __module__ = "pith"

class AlreadyExistsError(Error):
    """A database exists at the path and ``error_if_exists=True``."""
    __module__ = "pith"

class ClosedError(Error):
    """The database (or the snapshot) was closed: nothing can be read or
    written through it, or through its iterators and batches, any more."""
    __module__ = "pith"
"#;

/// The exception classes, in the order of [`Kind`].
static CLASSES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

/// The exception classes, by what went wrong.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Error,
    Corruption,
    Locked,
    ReadOnly,
    InvalidArgument,
    Io,
    NoSpace,
    NotFound,
    AlreadyExists,
    Closed,
}

/// Every kind with its Python class name, in [`CLASSES`] order.
const NAMES: [(Kind, &str); 10] = [
    (Kind::Error, "Error"),
    (Kind::Corruption, "CorruptionError"),
    (Kind::Locked, "LockedError"),
    (Kind::ReadOnly, "ReadOnlyError"),
    (Kind::InvalidArgument, "InvalidArgumentError"),
    (Kind::Io, "IOError"),
    (Kind::NoSpace, "NoSpaceError"),
    (Kind::NotFound, "NotFoundError"),
    (Kind::AlreadyExists, "AlreadyExistsError"),
    (Kind::Closed, "ClosedError"),
];

/// Creates the exception classes and adds them to module `m`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let source = PyModule::from_code(py, EXCEPTIONS, c"pith/_exceptions.py", c"pith._exceptions")?;
    let mut classes = Vec::with_capacity(NAMES.len());
    for (_, name) in NAMES {
        let class = source.getattr(name)?.cast_into::<PyType>()?;
        m.add(name, &class)?;
        classes.push(class.unbind());
    }
    // A second import (a subinterpreter, or importlib.reload) keeps the
    // first table, whose classes are still the module's.
    let _ = CLASSES.set(py, classes);
    Ok(())
}

/// A new exception of `kind` with message `msg`.
fn new_error(py: Python<'_>, kind: Kind, msg: String) -> PyErr {
    let class = CLASSES
        .get(py)
        .and_then(|c| c.get(kind as usize))
        .map(|c| c.bind(py).clone());
    match class {
        Some(class) => PyErr::from_type(class, msg),
        // Unreachable once the module is imported.
        None => PyTypeError::new_err(msg),
    }
}

/// An exception of `kind` with attributes `path` and `errno` set when
/// given.
fn error_with(
    py: Python<'_>,
    kind: Kind,
    msg: String,
    path: Option<&std::path::Path>,
    errno: Option<i32>,
) -> PyErr {
    let err = new_error(py, kind, msg);
    let value = err.value(py);
    // Attribute setting on a fresh exception instance cannot fail short of
    // memory exhaustion; the exception is still raised without them then.
    if let Some(p) = path {
        let _ = value.setattr("path", p.to_string_lossy().into_owned());
    }
    if let Some(n) = errno {
        let _ = value.setattr("errno", n);
    }
    err
}

/// Everything a method can fail with, before it becomes a Python
/// exception (a `Send` value, so it can leave a GIL-released section).
#[derive(Debug)]
pub(crate) enum Failure {
    /// The engine's error.
    Engine(engine::Error),
    /// The handle (or the snapshot) was closed.
    Closed(&'static str),
    /// A bad argument, found by the bindings.
    Invalid(String),
    /// A Python exception raised while the GIL was re-acquired (bulk
    /// load's input).
    Python(PyErr),
}

impl From<engine::Error> for Failure {
    fn from(e: engine::Error) -> Self {
        Failure::Engine(e)
    }
}

impl From<PyErr> for Failure {
    fn from(e: PyErr) -> Self {
        Failure::Python(e)
    }
}

impl Failure {
    /// The Python exception for this failure.
    pub(crate) fn into_pyerr(self, py: Python<'_>) -> PyErr {
        match self {
            Failure::Engine(e) => engine_error(py, e),
            Failure::Closed(what) => new_error(
                py,
                Kind::Closed,
                format!("the {what} is closed; open it again to use it"),
            ),
            Failure::Invalid(msg) => new_error(py, Kind::InvalidArgument, msg),
            Failure::Python(e) => e,
        }
    }
}

/// An `InvalidArgumentError` with message `msg`.
pub(crate) fn invalid(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    new_error(py, Kind::InvalidArgument, msg.into())
}

/// The Python exception for engine error `e`: its class by variant, its
/// message the engine's.
pub(crate) fn engine_error(py: Python<'_>, e: engine::Error) -> PyErr {
    use engine::Error as E;
    let msg = e.to_string();
    match &e {
        E::Io { path, source } => error_with(py, Kind::Io, msg, Some(path), source.raw_os_error()),
        E::NoSpace { path, source } => {
            error_with(py, Kind::NoSpace, msg, Some(path), source.raw_os_error())
        }
        E::Corruption { path, .. } | E::UnsupportedVersion { path, .. } => {
            error_with(py, Kind::Corruption, msg, Some(path), None)
        }
        E::Locked { path } => error_with(py, Kind::Locked, msg, Some(path), None),
        E::ReadOnly { path } => error_with(py, Kind::ReadOnly, msg, Some(path), None),
        E::NotFound { path } => error_with(py, Kind::NotFound, msg, Some(path), None),
        E::AlreadyExists { path } => error_with(py, Kind::AlreadyExists, msg, Some(path), None),
        E::DirectoryNotEmpty { path, .. } => {
            error_with(py, Kind::InvalidArgument, msg, Some(path), None)
        }
        E::InvalidArgument(_) | E::Regex(_) => new_error(py, Kind::InvalidArgument, msg),
        E::Closing => new_error(py, Kind::Closed, msg),
        // Poisoned, Internal, and variants added later: the base class,
        // with the engine's message (which holds the cause).
        _ => new_error(py, Kind::Error, msg),
    }
}
