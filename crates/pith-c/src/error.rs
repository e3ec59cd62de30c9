//! The C library's one error type, and how each error reads in `errptr`.
//!
//! Messages start with the name LevelDB gives the same kind of failure
//! (`Corruption: `, `IO error: `, `Invalid argument: `, `Not found: `),
//! so programs that look at that prefix, as some LevelDB wrappers do,
//! keep working; the rest is the engine's message, which says what to
//! do. Errors become strings only here, at the C boundary.

use std::fmt;

/// A failure of a C API call.
#[derive(Debug)]
pub(crate) enum Error {
    /// The engine failed.
    Engine(engine::Error),
    /// The caller passed a NULL where a value was needed, or a NULL
    /// pointer with a nonzero length.
    Null(&'static str),
    /// A string argument is not usable (a path or a pattern that is not
    /// UTF-8 where it must be).
    BadArgument(String),
    /// A custom comparator disagrees with byte order.
    Comparator {
        /// The comparator's name.
        name: String,
        /// The first key of the pair it disagreed on.
        a: Vec<u8>,
        /// The second key.
        b: Vec<u8>,
        /// What the comparator returned for `(a, b)`.
        got: i32,
        /// How byte order ranks `a` against `b`.
        want: std::cmp::Ordering,
    },
    /// `leveldb_repair_db` found something it cannot repair.
    Repair(Box<Error>),
    /// A file-system call outside the engine failed (destroy, test dir).
    Io {
        /// What was being done, with the path.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A panic was caught at the boundary: a bug in the library.
    Panic(String),
}

impl From<engine::Error> for Error {
    fn from(e: engine::Error) -> Self {
        Error::Engine(e)
    }
}

/// `bytes` for a message: printable ASCII as is, the rest escaped.
pub(crate) fn escape(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

impl Error {
    /// LevelDB's name for this kind of failure.
    fn code(&self) -> &'static str {
        match self {
            Error::Engine(e) => match e.root() {
                engine::Error::Corruption { .. } | engine::Error::UnsupportedVersion { .. } => {
                    "Corruption"
                }
                engine::Error::Io { .. }
                | engine::Error::NoSpace { .. }
                | engine::Error::Locked { .. }
                | engine::Error::Poisoned(_) => "IO error",
                engine::Error::NotFound { .. }
                | engine::Error::AlreadyExists { .. }
                | engine::Error::DirectoryNotEmpty { .. }
                | engine::Error::InvalidArgument(_)
                | engine::Error::Regex(_)
                | engine::Error::ReadOnly { .. } => "Invalid argument",
                _ => "IO error",
            },
            Error::Null(_) | Error::BadArgument(_) | Error::Comparator { .. } => "Invalid argument",
            Error::Repair(inner) => inner.code(),
            Error::Io { .. } | Error::Panic(_) => "IO error",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.code())?;
        match self {
            Error::Engine(e) => write!(f, "{e}"),
            Error::Null(what) => write!(f, "{what} is NULL; pass a valid pointer"),
            Error::BadArgument(what) => f.write_str(what),
            Error::Comparator {
                name,
                a,
                b,
                got,
                want,
            } => {
                let (a, b) = (escape(a), escape(b));
                let order = match want {
                    std::cmp::Ordering::Less => format!("\"{a}\" before \"{b}\""),
                    std::cmp::Ordering::Greater => format!("\"{a}\" after \"{b}\""),
                    std::cmp::Ordering::Equal => format!("\"{a}\" equal to \"{b}\""),
                };
                write!(
                    f,
                    "comparator \"{name}\" returned {got} for (\"{a}\", \"{b}\"), but byte order puts {order}; PithDB orders keys bytewise (memcmp, shorter first) and cannot use another order: use a comparator that agrees with byte order, or encode keys so that byte order is the order you need"
                )
            }
            Error::Repair(inner) => {
                let inner = inner.to_string();
                let inner = inner
                    .split_once(": ")
                    .map_or(inner.as_str(), |(_, rest)| rest);
                write!(
                    f,
                    "repair: {inner} (leveldb_repair_db checks every file and drops a torn log tail, as every open does, but does not rewrite a damaged segment: restore that file from a backup, or copy out what still reads)"
                )
            }
            Error::Io { what, source } => write!(f, "{what}: {source}"),
            Error::Panic(m) => write!(
                f,
                "internal error (a bug in libpith, please report it): {m}"
            ),
        }
    }
}

/// Result alias of this crate.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;
