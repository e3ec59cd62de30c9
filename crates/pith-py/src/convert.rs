//! Arguments in: keys and values as `bytes` (also `bytearray`) or `str`
//! (encoded UTF-8), expiry arguments, iterator bounds.
//!
//! A `bytes` argument is borrowed, not copied: [`Bin`] holds the Python
//! object (immutable, kept alive by the reference) and its bytes can be
//! read with the GIL released. A `bytearray` is copied (it could change
//! under a released GIL); a `str` is its UTF-8 encoding (cached by Python).
//! Anything else is a `TypeError` naming the argument.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyByteArray, PyBytes, PyString};

use crate::errors::invalid;

/// A key or value argument, readable without the GIL.
pub(crate) enum Bin {
    /// `bytes` (borrowed) or `bytearray` (copied).
    Bytes(PyBackedBytes),
    /// `str`, as UTF-8.
    Str(PyBackedStr),
}

impl Bin {
    /// The argument's bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            Bin::Bytes(b) => b,
            Bin::Str(s) => s.as_bytes(),
        }
    }
}

impl AsRef<[u8]> for Bin {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// Reads argument `name` as bytes: `bytes`, `bytearray` or `str`.
pub(crate) fn bin_arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Bin> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Bin::Bytes(PyBackedBytes::from(b.clone())));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Bin::Str(PyBackedStr::try_from(s.clone())?));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Bin::Bytes(PyBackedBytes::from(b.clone())));
    }
    Err(PyTypeError::new_err(format!(
        "{name} must be bytes or str, not {}",
        type_name(obj)
    )))
}

/// Reads optional argument `name` as bytes (`None` stays `None`).
pub(crate) fn opt_bin_arg(obj: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<Vec<u8>>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => Ok(Some(bin_arg(o, name)?.as_bytes().to_vec())),
    }
}

/// The name of `obj`'s type, for messages.
fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "an unknown type".into())
}

/// When a put expires: a time to live in milliseconds from now, or a
/// deadline in milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Expiry {
    /// Never.
    Never,
    /// `ttl_ms` from the database's clock at the time of the put.
    Ttl(u64),
    /// At this millisecond since the epoch.
    At(u64),
}

impl Expiry {
    /// Checks `ttl_ms` and `expire_at_ms` (at most one, neither negative).
    pub(crate) fn from_args(
        py: Python<'_>,
        ttl_ms: Option<i64>,
        expire_at_ms: Option<i64>,
    ) -> PyResult<Expiry> {
        let non_negative = |v: i64, name: &str| {
            u64::try_from(v).map_err(|_| invalid(py, format!("{name} must be >= 0, got {v}")))
        };
        match (ttl_ms, expire_at_ms) {
            (None, None) => Ok(Expiry::Never),
            (Some(t), None) => Ok(Expiry::Ttl(non_negative(t, "ttl_ms")?)),
            (None, Some(a)) => Ok(Expiry::At(non_negative(a, "expire_at_ms")?)),
            (Some(_), Some(_)) => Err(invalid(py, "give ttl_ms or expire_at_ms, not both")),
        }
    }

    /// The deadline for a put made when the clock reads `now_ms` (`None`:
    /// never expires).
    pub(crate) fn deadline(self, now_ms: u64) -> Option<u64> {
        match self {
            Expiry::Never => None,
            Expiry::Ttl(t) => Some(now_ms.saturating_add(t)),
            Expiry::At(a) => Some(a),
        }
    }
}

/// An iterator's key range: `start` inclusive, `stop` exclusive, either
/// open.
#[derive(Clone, Debug, Default)]
pub(crate) struct Range {
    pub(crate) start: Option<Vec<u8>>,
    pub(crate) stop: Option<Vec<u8>>,
}

impl Range {
    /// The range from `start`/`stop`, or from `prefix` (all keys that
    /// begin with it), which excludes the other two.
    pub(crate) fn from_args(
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        stop: Option<&Bound<'_, PyAny>>,
        prefix: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Range> {
        let start = opt_bin_arg(start, "start")?;
        let stop = opt_bin_arg(stop, "stop")?;
        match opt_bin_arg(prefix, "prefix")? {
            None => Ok(Range { start, stop }),
            Some(p) if start.is_none() && stop.is_none() => Ok(Range {
                stop: successor(&p),
                start: Some(p),
            }),
            Some(_) => Err(invalid(py, "prefix cannot be combined with start or stop")),
        }
    }
}

/// The smallest key greater than every key that starts with `prefix`
/// (`None`: there is none, as for an empty or all-`0xFF` prefix).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xFF {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

/// Turns a search pattern argument (`str`, or UTF-8 `bytes`) into a
/// `String`.
pub(crate) fn pattern_arg(py: Python<'_>, pattern: &Bound<'_, PyAny>) -> PyResult<String> {
    let b = bin_arg(pattern, "pattern")?;
    match std::str::from_utf8(b.as_bytes()) {
        Ok(s) => Ok(s.to_owned()),
        Err(e) => Err(invalid(py, format!("pattern is not UTF-8: {e}"))),
    }
}
