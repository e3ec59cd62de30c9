//! Shared compression models as files: `NNNNNN.model`, one trained
//! global-codec model (`pith_zip::Model`, whose module documents the
//! bytes) that any number of segments are encoded with.
//!
//! A model file is written whole before anything refers to it: to
//! `NNNNNN.tmp`, synced, renamed, and the directory synced; only then does
//! a manifest list it. It is loaded once per open database and shared
//! through `Arc` by every segment encoded with it, so its dictionary is in
//! memory once. When a manifest change leaves no segment using it and it
//! is not the current model, it is marked obsolete and its file removed
//! when the last segment holding it lets go (as segments are).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pith_zip::Model;

use crate::env::Fs;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};

/// A model that encodes the records held out of its training to less
/// than this ratio (it saves under a tenth of their bytes, as with random
/// hashes) does not pay for its decoding: segments built while it is
/// current store their values plain (`Inner::build_segment`). It stays
/// current all the same, so a family of such data is not retrained on
/// every flush; the training rules (drift, outgrown) replace it as they
/// would any other.
pub(crate) const PAYING_RATIO: f32 = 1.11;

/// An open model file.
pub(crate) struct ModelFile {
    pub model: Arc<Model>,
    pub number: u64,
    path: PathBuf,
    file_bytes: u64,
    obsolete: AtomicBool,
    fs: Arc<dyn Fs>,
}

impl std::fmt::Debug for ModelFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelFile")
            .field("number", &self.number)
            .field("model", &self.model)
            .finish()
    }
}

impl ModelFile {
    /// True when values are worth encoding with the model (see
    /// [`PAYING_RATIO`]).
    pub(crate) fn pays(&self) -> bool {
        self.model.ratio() >= PAYING_RATIO
    }

    /// Writes model `bytes` as file `number` in `dir`, durably (the
    /// directory included); on failure no file is left.
    pub(crate) fn create(
        fs: &Arc<dyn Fs>,
        dir: &Path,
        number: u64,
        model: Model,
        bytes: &[u8],
    ) -> Result<Arc<ModelFile>> {
        let tmp = filename::path(dir, number, FileKind::Temp);
        let path = filename::path(dir, number, FileKind::Model);
        let written = (|| {
            let mut f = fs.create(&tmp).map_err(|e| Error::io(&tmp, e))?;
            f.append(bytes).map_err(|e| Error::io(&tmp, e))?;
            f.sync().map_err(|e| Error::io(&tmp, e))?;
            fs.rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
            fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
        })();
        if let Err(e) = written {
            // Best effort: a leftover is not in any manifest, and the next
            // open removes it.
            let _ = fs.remove(&tmp);
            let _ = fs.remove(&path);
            return Err(e);
        }
        Ok(ModelFile::new(fs, number, path, model, bytes.len()))
    }

    fn new(
        fs: &Arc<dyn Fs>,
        number: u64,
        path: PathBuf,
        model: Model,
        file_bytes: usize,
    ) -> Arc<ModelFile> {
        Arc::new(ModelFile {
            model: Arc::new(model),
            number,
            path,
            file_bytes: file_bytes as u64,
            obsolete: AtomicBool::new(false),
            fs: fs.clone(),
        })
    }

    /// Opens model file `number` in `dir`, checking its checksums and that
    /// it is the model of that number.
    pub(crate) fn open(fs: &Arc<dyn Fs>, dir: &Path, number: u64) -> Result<Arc<ModelFile>> {
        let path = filename::path(dir, number, FileKind::Model);
        let bytes = fs.read(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::corrupt(
                    &path,
                    0,
                    "the manifest lists this model file, which is missing",
                )
            } else {
                Error::io(&path, e)
            }
        })?;
        let model = Model::open(&bytes).map_err(|e| Error::from_zip(&path, 0, e))?;
        if model.id() != number {
            return Err(Error::corrupt(
                &path,
                16,
                format!("model file {number} holds model {}", model.id()),
            ));
        }
        Ok(ModelFile::new(fs, number, path, model, bytes.len()))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn file_bytes(&self) -> u64 {
        self.file_bytes
    }

    /// Marks the file for removal once nothing holds the model (or, with
    /// `false`, keeps it again: a merge that started before the model was
    /// unlisted may list it again).
    pub(crate) fn set_obsolete(&self, obsolete: bool) {
        self.obsolete.store(obsolete, Ordering::Release);
    }
}

impl Drop for ModelFile {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            // Best effort: a file left behind is not in the manifest, and
            // the next open removes it.
            let _ = self.fs.remove(&self.path);
        }
    }
}
