//! Appends records to one log file through the file-system seam.
//!
//! A log is created with its header synced, so a log that exists after a
//! crash starts with a valid header or is a torn creation (recovery treats
//! a short or zero header as empty). Records are buffered by `add` and
//! written by `commit` in one append; `commit(true)` and `sync` make them
//! durable. Records may also stay buffered across several `add`s (deferred
//! writes): `sync` writes them first, and `write_pending` on its own.
//! After a failed append or sync the file's tail is unknown: the caller
//! must stop writing to it (the engine stops all writes).

use std::path::{Path, PathBuf};

use crate::env::{Fs, WritableFile};
use crate::error::{Error, Result};
use crate::wal::{frame, header, HEADER, MAX_RECORD};

/// Appends records to one log file.
pub(crate) struct WalWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    buf: Vec<u8>,
    /// The first failed append or sync: the tail is unknown and the
    /// buffered records it dropped are lost, so every later write or sync
    /// fails with it (a thread that checked for poisoning before the
    /// failure must not find an empty buffer and report success).
    failed: Option<Error>,
    /// Bytes written so far, header included.
    pub(crate) len: u64,
}

impl WalWriter {
    /// Creates a new log at `path` (which must not exist) and syncs its
    /// header. The caller syncs the directory.
    pub(crate) fn create(fs: &dyn Fs, path: &Path) -> Result<Self> {
        let io = |e| Error::io(path, e);
        let mut file = fs.create(path).map_err(io)?;
        file.append(&header()).map_err(io)?;
        file.sync().map_err(io)?;
        Ok(WalWriter {
            file,
            path: path.to_path_buf(),
            buf: Vec::new(),
            failed: None,
            len: HEADER as u64,
        })
    }

    /// Adds one record to the pending buffer.
    pub(crate) fn add(&mut self, payload: &[u8]) -> Result<()> {
        if payload.len() > MAX_RECORD {
            return Err(Error::InvalidArgument(format!(
                "write batch of {} bytes exceeds the {} byte limit",
                payload.len(),
                MAX_RECORD
            )));
        }
        frame(&mut self.buf, payload);
        Ok(())
    }

    /// The log's file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes buffered and not yet written.
    pub(crate) fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Drops the records added after the buffer held `mark` bytes (after a
    /// failure before `commit`); earlier deferred records stay.
    pub(crate) fn discard_after(&mut self, mark: usize) {
        self.buf.truncate(mark);
    }

    /// Writes the pending records in one call, then syncs if asked.
    pub(crate) fn commit(&mut self, sync: bool) -> Result<()> {
        self.write_pending()?;
        if sync {
            if let Err(e) = self.file.sync() {
                let e = Error::io(&self.path, e);
                self.failed = Some(e.clone());
                return Err(e);
            }
        }
        Ok(())
    }

    /// Writes the pending records, if any, in one call.
    pub(crate) fn write_pending(&mut self) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.buf.is_empty() {
            return Ok(());
        }
        let result = self.file.append(&self.buf);
        self.len += self.buf.len() as u64;
        self.buf.clear();
        if let Err(e) = result {
            let e = Error::io(&self.path, e);
            self.failed = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    /// Writes the pending records and makes everything written durable.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.commit(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{CallKind, FaultFs, Injected, MemFs};

    /// After a failed append, a later write of an empty buffer (another
    /// thread's, which had buffered records the failure dropped) must not
    /// report success, even once the disk is healthy again.
    #[test]
    fn a_failed_append_fails_every_later_write_and_sync() {
        let mem = MemFs::new();
        let fault = FaultFs::over_mem(mem.clone());
        let fs: &dyn Fs = &fault;
        fs.create_dir_all(Path::new("/db")).expect("mkdir");
        let mut w = WalWriter::create(fs, Path::new("/db/000001.wal")).expect("create");
        w.add(b"deferred").expect("add");
        fault.fail_matching(Some(CallKind::Append), ".wal", Injected::Eio);
        assert!(w.write_pending().is_err());
        fault.clear();
        assert_eq!(w.pending(), 0, "the failed append took the buffer");
        assert!(
            w.write_pending().is_err(),
            "an empty buffer reported written"
        );
        assert!(w.sync().is_err(), "a sync after a lost record succeeded");
    }
}
