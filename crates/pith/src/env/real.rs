//! [`RealFs`]: the operating system's file system.
//!
//! `sync` is `fdatasync` (the file's data and length; its metadata such as
//! times are not needed for recovery), `sync_dir` is `fsync` of the
//! directory, `map` is a read-only `mmap` advised for random access, with
//! its file kept open (for `pread`s: `Options::value_reads`) and advised so
//! too on Linux, and
//! `lock` is `flock` through `File::try_lock`.
//!
//! A mapped file must not be truncated by another process while mapped:
//! reading a page past the new end raises SIGBUS, which no Rust code can
//! catch. The engine never truncates or rewrites a file it has mapped (a
//! segment file is written once under a temporary name and renamed), and
//! the `LOCK` file keeps other PithDB processes out; a process that
//! ignores the lock and truncates a segment file can crash readers.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;

use super::{FileBytes, FileLock, Fs, WritableFile};

/// The operating system's file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

struct RealFile {
    file: File,
    /// The file offset is at the end (no `write_at` since the last append).
    at_end: bool,
}

impl WritableFile for RealFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if !self.at_end {
            self.file.seek(SeekFrom::End(0))?;
            self.at_end = true;
        }
        self.file.write_all(data)
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.at_end = false;
        self.file.seek(SeekFrom::Start(offset))?;
        self.file.write_all(data)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

struct RealLock {
    _file: File,
}

impl FileLock for RealLock {}

impl Fs for RealFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(RealFile { file, at_end: true }))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn map(&self, path: &Path) -> io::Result<FileBytes> {
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            // A mapping cannot be empty.
            return Ok(FileBytes::heap(Vec::new()));
        }
        // SAFETY: the engine maps only files it wrote once and never changes
        // again (segments, renamed into place after a sync), inside a
        // directory the LOCK file reserves for one process; every byte read
        // through the map is validated before use. See the module docs for
        // the one case this cannot exclude (truncation by a foreign process).
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        #[cfg(unix)]
        {
            // Advice only: a failure changes speed, never results.
            let _ = map.advise(memmap2::Advice::Random);
        }
        #[cfg(target_os = "linux")]
        {
            // The same for reads of the file (`Options::value_reads`):
            // no read-ahead around a `pread`. Advice only, as above.
            use std::os::fd::AsRawFd;
            // SAFETY: `posix_fadvise` only reads its integer arguments;
            // the descriptor is open (owned by `file`) for the call.
            let _ = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
        }
        Ok(FileBytes::mapped(map, file))
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn sync_file(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_data()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(RealLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Err(io::ErrorKind::WouldBlock.into()),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }
}
