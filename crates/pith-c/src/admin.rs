//! Whole-database operations: compact, destroy, repair.
//!
//! Destroy removes only PithDB's files (the names `pith`'s `filename.rs`
//! documents: `MANIFEST`, `MANIFEST.tmp`, `LOCK`, `NNNNNN.wal`,
//! `NNNNNN.wal.torn`, `NNNNNN.seg`, `NNNNNN.model`, `NNNNNN.tmp`), and
//! only while it holds the database's lock, so an open database is never
//! destroyed under its owner. The engine has no destroy call; this list
//! must follow `filename.rs` (a test destroys a database that has every
//! kind of file it can make through the public API).

use std::ffi::c_char;
use std::fs::{self, File, TryLockError};
use std::path::Path;

use crate::db::leveldb_t;
use crate::error::{Error, Result};
use crate::ffi::{self, guard, guard_quiet, ErrPtr};
use crate::handle;
use crate::options::leveldb_options_t;

/// See `leveldb_compact_range` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_compact_range(
    db: *mut leveldb_t,
    _start_key: *const c_char,
    _start_key_len: usize,
    _limit_key: *const c_char,
    _limit_key_len: usize,
) {
    guard_quiet((), || {
        // SAFETY: the caller's open database.
        let db = unsafe { handle::get(db, "the database") }?;
        // No errptr, as in LevelDB: a failure that matters (a write that
        // cannot be made durable) stops writes, and the next write says so.
        Ok(db.db.compact()?)
    })
}

/// Whether `name` is a file PithDB makes in a database directory.
fn is_pith_file(name: &str) -> bool {
    if matches!(name, "MANIFEST" | "MANIFEST.tmp" | "LOCK") {
        return true;
    }
    let Some((stem, ext)) = name.split_once('.') else {
        return false;
    };
    stem.len() >= 6
        && stem.bytes().all(|b| b.is_ascii_digit())
        && matches!(ext, "wal" | "wal.torn" | "seg" | "model" | "tmp")
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}

/// Removes the database in `dir`; see `leveldb_destroy_db`.
fn destroy(dir: &Path) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(format!("listing {}", dir.display()))(e)),
    };
    let lock_path = dir.join("LOCK");
    // Hold the lock (the engine's: an exclusive flock on LOCK) while
    // removing, so a database open here is left alone.
    let lock = match File::options().read(true).write(true).open(&lock_path) {
        Ok(f) => match f.try_lock() {
            Ok(()) => Some(f),
            Err(TryLockError::WouldBlock) => {
                return Err(Error::Engine(engine::Error::Locked {
                    path: dir.to_path_buf(),
                }));
            }
            Err(TryLockError::Error(e)) => {
                return Err(io(format!("locking {}", lock_path.display()))(e))
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(format!("opening {}", lock_path.display()))(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io(format!("listing {}", dir.display())))?;
        if let Some(name) = entry
            .file_name()
            .to_str()
            .filter(|n| is_pith_file(n) && *n != "LOCK")
        {
            names.push(name.to_owned());
        }
    }
    for name in names {
        let path = dir.join(&name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(io(format!("removing {}", path.display()))(e));
            }
            _ => {}
        }
    }
    if lock.is_some() {
        fs::remove_file(&lock_path).map_err(io(format!("removing {}", lock_path.display())))?;
    }
    drop(lock);
    // Left in place when it holds files that are not ours.
    let _ = fs::remove_dir(dir);
    Ok(())
}

/// See `leveldb_destroy_db` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_destroy_db(
    _options: *const leveldb_options_t,
    name: *const c_char,
    errptr: ErrPtr,
) {
    guard(errptr, (), || {
        // SAFETY: `name` is a NUL-terminated string.
        destroy(unsafe { ffi::path(name) }?)
    })
}

/// See `leveldb_repair_db` in pith/c.h.
#[no_mangle]
pub unsafe extern "C" fn leveldb_repair_db(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: ErrPtr,
) {
    guard(errptr, (), || {
        // SAFETY: the caller's live options and a NUL-terminated string.
        let (o, path) = unsafe { (handle::get(options, "options")?, ffi::path(name)?) };
        let mut o = o.engine();
        o.create_if_missing = false;
        o.error_if_exists = false;
        let repair = |e: engine::Error| match e.is_corruption() {
            true => Error::Repair(Box::new(Error::Engine(e))),
            false => Error::Engine(e),
        };
        let db = engine::DB::open(path, o).map_err(repair)?;
        db.verify().map_err(repair)?;
        db.close().map_err(repair)
    })
}

#[cfg(test)]
mod tests {
    use super::is_pith_file;

    #[test]
    fn pith_file_names() {
        for n in [
            "MANIFEST",
            "MANIFEST.tmp",
            "LOCK",
            "000001.wal",
            "000012.wal.torn",
            "1234567.seg",
            "000003.model",
            "000004.tmp",
        ] {
            assert!(is_pith_file(n), "{n}");
        }
        for n in [
            "CURRENT",
            "000001.log",
            "00001.seg",
            "abc123.seg",
            "notes.txt",
            "000001",
            "x.wal",
        ] {
            assert!(!is_pith_file(n), "{n}");
        }
    }
}
