//! The file-system seam: everything the engine does to storage goes
//! through [`Fs`], so power loss and I/O errors can be tested, not argued.
//!
//! Three implementations:
//!
//! * [`RealFs`]: the operating system's file system (`std::fs`, `mmap`,
//!   `flock`), what a database uses unless told otherwise;
//! * [`MemFs`]: files in memory, modelling exactly what survives a power
//!   cut under the contract below, and optionally a disk of fixed size;
//! * [`FaultFs`]: wraps another `Fs` and fails chosen calls (the Nth, or
//!   every call of a kind on matching files) with `EIO` or `ENOSPC`, or cuts
//!   the power at a chosen call.
//!
//! # Durability contract
//!
//! What is durable (survives a power cut) when a call returns, and what is
//! not. The engine relies on nothing more; `MemFs` grants nothing more.
//!
//! * [`WritableFile::append`] and [`WritableFile::write_at`]: the bytes are
//!   visible to every later read through the same `Fs`, and **volatile**:
//!   a power cut may drop them, or keep a prefix of the last unsynced
//!   append cut at a 512-byte sector boundary (a torn write).
//! * [`WritableFile::sync`]: every byte written to the file before it is
//!   durable, and so is the file's length. Its *name* is not.
//! * [`Fs::create`], [`Fs::rename`], [`Fs::remove`]: atomic and visible at
//!   once, and volatile until [`Fs::sync_dir`] on the parent directory
//!   returns; a power cut before that undoes them (a created file is gone,
//!   a rename is undone, a removed file is back with its durable bytes).
//! * [`Fs::sync_dir`]: every create, rename and remove in the directory
//!   before it is durable.
//! * [`Fs::sync_file`]: as `WritableFile::sync`, for a file written
//!   earlier (perhaps by a process that crashed).
//! * Reads ([`Fs::read`], [`Fs::map`], [`Fs::list`], [`Fs::len`]) change
//!   nothing.
//!
//! This is POSIX's promise with nothing added: a file's data and its name
//! are made durable separately, by `fdatasync` and by `fsync` of the
//! directory. So a new file is published by writing it under a temporary
//! name, syncing it, renaming it and syncing the directory.
//!
//! # Design
//!
//! After LevelDB's `Env` (a whole-system interface, with `helpers/memenv`
//! in memory and `db/fault_injection_test.cc` wrapping the real one to
//! drop unsynced data), raft-engine's `FileSystem` (handles created by the
//! file system, so a wrapper can intercept every call), and redb's
//! `StorageBackend` (a few calls per file, `sync_data` explicit). Unlike
//! LevelDB's fault-injection environment, which tracks only each file's
//! synced length and the files created since the last directory sync, the
//! power-cut model here (`MemFs`) keeps inodes and directory entries with a
//! durable copy of each, so unsynced renames and removes are undone too and
//! writes at an offset are handled, and `FaultFs` can fail any call by
//! index (SQLite's discipline) as well as by kind and name. Reads of segment
//! files go through [`Fs::map`] once at open and then touch no file system
//! call, so the read path costs what it did before the seam (point reads
//! under `Options::value_reads` `pread` the file the mapping holds:
//! `FileBytes::read_at`).
//!
//! # Errors
//!
//! Calls return `std::io::Error`; the engine adds the path and maps
//! "no space" (`ErrorKind::StorageFull`, `ENOSPC`) to its own variant.
//!
//! Thread safety: an `Fs` is shared by every thread of a database (`Send +
//! Sync`); a [`WritableFile`] is used by one thread at a time.

mod fault;
mod mem;
mod real;

use std::fmt::Debug;
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use fault::{Call, CallKind, FaultFs, Injected};
pub use mem::MemFs;
pub use real::RealFs;

/// Storage as the engine sees it. See the module documentation for what
/// each call makes durable.
pub trait Fs: Send + Sync + Debug {
    /// Creates `dir` and its missing parents (a no-op when it exists).
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Creates a new, empty file for writing; fails with `AlreadyExists`
    /// when `path` exists.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// The whole content of a file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// The content of a file that no one will change while it is held:
    /// mapped into memory where the file system can, read otherwise.
    fn map(&self, path: &Path) -> io::Result<FileBytes>;
    /// The length of a file.
    fn len(&self, path: &Path) -> io::Result<u64>;
    /// True when `path` names a file or directory.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Renames `from` to `to`, replacing `to` if it exists; atomic.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// The names of the entries of a directory, in no particular order.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Makes the directory's entries (creates, renames, removes) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Makes an existing file's bytes durable, like [`WritableFile::sync`],
    /// without opening it for writing (recovery: what a crashed process
    /// left in the page cache must be durable before it is built on).
    fn sync_file(&self, path: &Path) -> io::Result<()>;
    /// Takes an exclusive advisory lock on `path` (creating the file if
    /// needed). Fails with `WouldBlock` while another holder has it. The
    /// lock is released when the returned guard drops. (Only writers lock:
    /// read-only opens take no lock.)
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>>;
}

/// A file open for writing. See the module documentation for durability.
pub trait WritableFile: Send {
    /// Appends `data` at the end of the file.
    fn append(&mut self, data: &[u8]) -> io::Result<()>;
    /// Writes `data` at `offset`, which must be at most the file's length.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Makes every byte written so far, and the file's length, durable.
    fn sync(&mut self) -> io::Result<()>;
}

/// A held lock; dropping it releases the lock.
pub trait FileLock: Send + Sync {}

/// The bytes of a file, mapped or in memory; they do not move while the
/// value lives, even when the value itself moves.
pub struct FileBytes(Bytes);

enum Bytes {
    /// A mapping and, until [`FileBytes::close_file`], its file (for
    /// [`FileBytes::read_at`]).
    Mapped(memmap2::Mmap, Option<std::fs::File>),
    Heap(Arc<[u8]>),
}

impl FileBytes {
    /// Bytes held in memory.
    pub fn heap(bytes: impl Into<Arc<[u8]>>) -> Self {
        FileBytes(Bytes::Heap(bytes.into()))
    }

    /// A file's mapping. It must be a shared, read-only mapping
    /// (`Mmap::map`) of a file nobody changes while it is open:
    /// [`FileBytes::forget`] relies on that.
    pub(crate) fn mapped(map: memmap2::Mmap, file: std::fs::File) -> Self {
        FileBytes(Bytes::Mapped(map, Some(file)))
    }

    /// Closes a mapping's file, for bytes only ever read in place: the
    /// mapping stays, and an open segment holds no file descriptor.
    pub(crate) fn close_file(&mut self) {
        if let Bytes::Mapped(_, file) = &mut self.0 {
            *file = None;
        }
    }

    /// Replaces `buf` with the bytes at `range`: read from the file
    /// (`pread`) when mapped with its file open, so the pages come into
    /// the page cache without entering this process's mapping; copied
    /// otherwise.
    pub(crate) fn read_at(
        &self,
        range: std::ops::Range<usize>,
        buf: &mut Vec<u8>,
    ) -> io::Result<()> {
        buf.clear();
        let len = range.end.saturating_sub(range.start);
        match &self.0 {
            #[cfg(unix)]
            Bytes::Mapped(_, Some(file)) => {
                use std::os::unix::fs::FileExt;
                buf.resize(len, 0);
                file.read_exact_at(buf, range.start as u64)
            }
            _ => {
                let bytes = self
                    .get(range)
                    .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
                buf.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    /// Takes the whole pages inside `range` out of this process's resident
    /// memory, for bytes the caller has copied and will read from the copy
    /// (otherwise they count twice: the copy, and the file's pages the copy
    /// was read through), or has done reading for now (a segment's whole
    /// file after its open). The bytes stay readable and unchanged: a page
    /// touched again (by `verify`'s checksums, say) is mapped back from the
    /// file. Heap bytes, systems without `madvise`, and ones that refuse
    /// the advice are left as they are.
    pub(crate) fn forget(&self, range: std::ops::Range<usize>) {
        // Rounded inward to whole pages: 4 KiB on x86-64, where base pages
        // are that size; elsewhere 64 KiB, a multiple of every base page
        // size in use, since memmap2 rounds a start down to its page and
        // a live byte there would only have to be read back.
        const PAGE: usize = if cfg!(target_arch = "x86_64") {
            4 << 10
        } else {
            64 << 10
        };
        let (start, end) = (range.start.next_multiple_of(PAGE), range.end / PAGE * PAGE);
        #[cfg(unix)]
        if let (Bytes::Mapped(map, _), true) = (&self.0, start < end && end <= self.len()) {
            // SAFETY: `FileBytes::mapped` takes only shared, read-only
            // mappings of files nobody writes while they are open (segment
            // files are immutable), so `MADV_DONTNEED` only drops
            // page-table entries: a later read of these bytes faults the
            // same file contents back in, and no reference into the range
            // sees a change. Advice only: a failure changes memory use,
            // never results.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
        #[cfg(not(unix))]
        let _ = (start, end);
    }

    /// Asks the kernel to start reading the pages holding `range` into
    /// the page cache now (`MADV_WILLNEED`), rather than one page fault
    /// and one read at a time as they are touched (segment mappings are
    /// advised for random access, so the kernel reads no page ahead by
    /// itself). For a reader about to go through `range` in order. One
    /// advice per 128 KiB: Linux reads at most a disk's read-ahead size
    /// (128 KiB by default) for one call and drops the rest. Heap bytes,
    /// systems without `madvise` and a refused advice are left as they
    /// are: it changes speed, never results.
    pub(crate) fn will_need(&self, range: std::ops::Range<usize>) {
        const PIECE: usize = 128 << 10;
        let end = range.end.min(self.len());
        #[cfg(unix)]
        if let Bytes::Mapped(map, _) = &self.0 {
            // memmap2 rounds each start down to its page.
            let mut at = range.start;
            while at < end {
                let len = (end - at).min(PIECE);
                let _ = map.advise_range(memmap2::Advice::WillNeed, at, len);
                at += len;
            }
        }
        #[cfg(not(unix))]
        let _ = end;
    }
}

impl Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Bytes::Mapped(m, _) => m,
            Bytes::Heap(h) => h,
        }
    }
}

/// The error a file system returns when the disk is full.
pub fn no_space(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::StorageFull,
        format!("no space left on device writing {}", path.display()),
    )
}

/// True for errors that mean the disk is full.
pub fn is_no_space(e: &io::Error) -> bool {
    // ENOSPC and EDQUOT on Linux.
    e.kind() == io::ErrorKind::StorageFull
        || e.kind() == io::ErrorKind::QuotaExceeded
        || matches!(e.raw_os_error(), Some(28 | 122))
}

/// The directory holding `path` (`.` for a bare name).
pub(crate) fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The file system a database uses unless its options name another.
pub fn default_fs() -> Arc<dyn Fs> {
    Arc::new(RealFs)
}
