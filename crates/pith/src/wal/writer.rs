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
            self.file.sync().map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Writes the pending records, if any, in one call.
    pub(crate) fn write_pending(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let result = self.file.append(&self.buf);
        self.len += self.buf.len() as u64;
        self.buf.clear();
        result.map_err(|e| Error::io(&self.path, e))
    }

    /// Writes the pending records and makes everything written durable.
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.commit(true)
    }
}
