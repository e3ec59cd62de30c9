//! The shared, closable database handle behind `pith.DB` and everything
//! made from it (snapshots, iterators, batches, searches).
//!
//! The engine's `DB` lives in an `RwLock<Option<DB>>`: every call takes
//! the read lock for its whole duration, with the GIL released, and
//! `close()` takes the write lock (also with the GIL released), so it
//! waits for calls in flight in other threads, then takes the `DB` out and
//! closes it. A call after that finds `None` and raises `ClosedError`;
//! nothing is ever used after it is freed, and no Python object holds a
//! Rust reference into the engine: iterators and snapshots own what they
//! read (the engine's iterators hold `Arc`s of their memtables and
//! segments), and hold an `Arc<Handle>` to check that the database is
//! still open at each step.
//!
//! Lock order: the handle's lock, then an object's own (snapshot,
//! iterator, batch) lock. Both are taken only with the GIL released, and
//! no code holding either waits for the GIL, so Python threads cannot
//! deadlock on them. A lock poisoned by a panic (which PyO3 turns into a
//! `PanicException`) is used anyway: the values they guard stay
//! consistent across every engine call.

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use engine::DB;
use pyo3::prelude::*;

use crate::errors::Failure;

thread_local! {
    /// Set while this thread runs Python code for `bulk_load`'s input,
    /// holding the handle's read lock: using a database from there could
    /// deadlock with `close()` (which waits for that lock), so `run` and
    /// `close` refuse it.
    pub(crate) static IN_FEED: Cell<bool> = const { Cell::new(false) };
}

/// The failure for a call made from inside `bulk_load`'s input.
fn reentrant() -> Failure {
    Failure::Invalid("a database cannot be used from inside the iterable given to bulk_load".into())
}

/// An open (or closed) database, shared by a `pith.DB` and the objects
/// made from it.
pub(crate) struct Handle {
    db: RwLock<Option<DB>>,
    /// The directory, kept for `repr` and messages after close.
    pub(crate) path: PathBuf,
    /// Opened with `read_only=True`.
    pub(crate) read_only: bool,
}

impl Handle {
    /// A handle on the open `db`.
    pub(crate) fn new(db: DB, path: PathBuf, read_only: bool) -> Handle {
        Handle {
            db: RwLock::new(Some(db)),
            path,
            read_only,
        }
    }

    /// Runs `f` on the open database with the GIL released; a closed
    /// handle is `ClosedError`, an engine error its exception.
    pub(crate) fn run<T, F>(&self, py: Python<'_>, f: F) -> PyResult<T>
    where
        T: Send,
        F: FnOnce(&DB) -> Result<T, Failure> + Send,
    {
        if IN_FEED.with(Cell::get) {
            return Err(reentrant().into_pyerr(py));
        }
        py.detach(|| self.with_db(f)).map_err(|e| e.into_pyerr(py))
    }

    /// Runs `f` on the open database, on this thread as it is (the caller
    /// has released the GIL).
    pub(crate) fn with_db<T>(
        &self,
        f: impl FnOnce(&DB) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        match read(&self.db).as_ref() {
            Some(db) => f(db),
            None => Err(Failure::Closed("database")),
        }
    }

    /// True once closed.
    pub(crate) fn is_closed(&self, py: Python<'_>) -> bool {
        py.detach(|| read(&self.db).is_none())
    }

    /// Closes the database (waiting for calls in flight), with the GIL
    /// released. Closing a closed handle does nothing.
    pub(crate) fn close(&self, py: Python<'_>) -> PyResult<()> {
        if IN_FEED.with(Cell::get) {
            return Err(reentrant().into_pyerr(py));
        }
        py.detach(|| {
            let db = write(&self.db).take();
            match db {
                Some(db) => db.close().map_err(Failure::Engine),
                None => Ok(()),
            }
        })
        .map_err(|e| e.into_pyerr(py))
    }
}

/// `lock`'s read guard, poisoned or not.
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

/// `lock`'s write guard, poisoned or not.
pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

/// `m`'s guard, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
