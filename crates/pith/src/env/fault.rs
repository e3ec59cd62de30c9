//! [`FaultFs`]: wraps another [`Fs`] and injects failures.
//!
//! Every call through it (file-system calls and calls on the files it
//! opened) is counted, from 1, and may be made to fail:
//!
//! * the Nth call ([`FaultFs::fail_call`]), SQLite's discipline: run a
//!   workload once to count its calls, then once per call index;
//! * every call of a kind on files whose name contains a string
//!   ([`FaultFs::fail_matching`]), until cleared: a full disk, a broken
//!   directory;
//! * a power cut at the Nth call ([`FaultFs::cut_power_at`]), when the
//!   wrapped file system is a [`MemFs`]: the cut happens instead of the
//!   call, and every later call fails, as on a machine without power,
//!   until [`FaultFs::restore_power`] (called once the old database
//!   handle is dropped, before reopening).
//!
//! An injected failure changes nothing in the wrapped file system: the
//! call is refused before it reaches it. Calls can be recorded
//! ([`FaultFs::record`]) to report which call sites a test reached.
//!
//! Thread safety: counters and rules sit behind one mutex; the wrapped
//! file system's own locking applies to the calls that pass.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{FileBytes, FileLock, Fs, MemFs, WritableFile};

/// Which kind of call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CallKind {
    /// [`Fs::create_dir_all`].
    CreateDir,
    /// [`Fs::create`].
    Create,
    /// [`Fs::read`].
    Read,
    /// [`Fs::map`].
    Map,
    /// [`Fs::len`].
    Len,
    /// [`Fs::exists`].
    Exists,
    /// [`Fs::rename`].
    Rename,
    /// [`Fs::remove`].
    Remove,
    /// [`Fs::list`].
    List,
    /// [`Fs::sync_dir`].
    SyncDir,
    /// [`Fs::lock`].
    Lock,
    /// [`WritableFile::append`].
    Append,
    /// [`WritableFile::write_at`].
    WriteAt,
    /// [`WritableFile::sync`] and [`Fs::sync_file`].
    Sync,
}

/// One call as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// Its index, from 1.
    pub index: u64,
    /// Its kind.
    pub kind: CallKind,
    /// The file or directory (the source, for a rename).
    pub path: PathBuf,
}

/// The failure to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injected {
    /// An I/O error (`EIO`).
    Eio,
    /// A full disk (`ENOSPC`).
    NoSpace,
    /// A panic in the call (a bug below the engine, or one of its own
    /// mid-operation): what unwinding leaves behind is under test.
    Panic,
}

impl Injected {
    fn error(self, kind: CallKind, path: &Path) -> io::Error {
        match self {
            Injected::Eio => io::Error::other(format!(
                "input/output error (injected on {kind:?} of {})",
                path.display()
            )),
            Injected::NoSpace => io::Error::new(
                io::ErrorKind::StorageFull,
                format!(
                    "no space left on device (injected on {kind:?} of {})",
                    path.display()
                ),
            ),
            Injected::Panic => panic!("panic injected on {kind:?} of {}", path.display()),
        }
    }
}

struct Rule {
    kind: Option<CallKind>,
    name_contains: String,
    error: Injected,
}

#[derive(Default)]
struct Faults {
    calls: u64,
    fail_at: Option<(u64, Injected)>,
    rules: Vec<Rule>,
    cut_at: Option<(u64, Option<u64>)>,
    dead: bool,
    injected: u64,
    log: Option<Vec<Call>>,
}

/// A file system that fails on request. See the module documentation.
#[derive(Clone)]
pub struct FaultFs {
    inner: Arc<dyn Fs>,
    mem: Option<MemFs>,
    faults: Arc<Mutex<Faults>>,
}

impl std::fmt::Debug for FaultFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultFs")
            .field("inner", &self.inner)
            .field("calls", &self.calls())
            .finish()
    }
}

impl FaultFs {
    /// Wraps `inner`; power cuts are not available.
    pub fn new(inner: Arc<dyn Fs>) -> Self {
        FaultFs {
            inner,
            mem: None,
            faults: Arc::default(),
        }
    }

    /// Wraps an in-memory file system, with power cuts.
    pub fn over_mem(mem: MemFs) -> Self {
        FaultFs {
            inner: Arc::new(mem.clone()),
            mem: Some(mem),
            faults: Arc::default(),
        }
    }

    fn faults(&self) -> MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Calls made so far.
    pub fn calls(&self) -> u64 {
        self.faults().calls
    }

    /// Failures injected so far (power cuts and refused calls after them
    /// not counted).
    pub fn injected(&self) -> u64 {
        self.faults().injected
    }

    /// Fails call number `index` (counting from 1, over the life of this
    /// file system) with `error`.
    pub fn fail_call(&self, index: u64, error: Injected) {
        self.faults().fail_at = Some((index, error));
    }

    /// Fails every call of `kind` (any kind when `None`) on a path whose
    /// file name contains `name_contains`, until [`FaultFs::clear`].
    pub fn fail_matching(&self, kind: Option<CallKind>, name_contains: &str, error: Injected) {
        self.faults().rules.push(Rule {
            kind,
            name_contains: name_contains.to_string(),
            error,
        });
    }

    /// Removes every pending failure and power cut.
    pub fn clear(&self) {
        let mut f = self.faults();
        f.fail_at = None;
        f.rules.clear();
        f.cut_at = None;
    }

    /// Cuts the power when call number `index` is made (see
    /// [`MemFs::power_cut`] for `tear_seed`). Fails unless this wraps a
    /// [`MemFs`].
    pub fn cut_power_at(&self, index: u64, tear_seed: Option<u64>) -> io::Result<()> {
        self.power_source()?;
        self.faults().cut_at = Some((index, tear_seed));
        Ok(())
    }

    /// Cuts the power now.
    pub fn cut_power_now(&self, tear_seed: Option<u64>) -> io::Result<()> {
        let mem = self.power_source()?;
        cut(mem, &mut self.faults(), tear_seed);
        Ok(())
    }

    /// The file system whose power can be cut.
    fn power_source(&self) -> io::Result<&MemFs> {
        self.mem.as_ref().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "power cuts need a FaultFs over a MemFs",
            )
        })
    }

    /// True after a power cut, until [`FaultFs::restore_power`].
    pub fn is_dead(&self) -> bool {
        self.faults().dead
    }

    /// Lets calls through again after a power cut. Drop the database that
    /// was running at the cut first: its handles stay dead.
    pub fn restore_power(&self) {
        self.faults().dead = false;
    }

    /// Starts (or, with `false`, stops and clears) recording calls.
    pub fn record(&self, on: bool) {
        self.faults().log = on.then(Vec::new);
    }

    /// The calls recorded so far.
    pub fn recorded(&self) -> Vec<Call> {
        self.faults().log.clone().unwrap_or_default()
    }

    /// Counts a call and decides whether it fails.
    fn check(&self, kind: CallKind, path: &Path) -> io::Result<()> {
        let mut f = self.faults();
        if f.dead {
            return Err(io::Error::other("the machine has no power (after a cut)"));
        }
        f.calls += 1;
        let index = f.calls;
        if let Some(log) = f.log.as_mut() {
            log.push(Call {
                index,
                kind,
                path: path.to_path_buf(),
            });
        }
        if let Some((at, seed)) = f.cut_at {
            if at == index {
                // Armed only over a MemFs (`cut_power_at` checks).
                if let Some(mem) = &self.mem {
                    cut(mem, &mut f, seed);
                }
                return Err(io::Error::other("the machine lost power (cut injected)"));
            }
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let injected = match f.fail_at {
            Some((at, e)) if at == index => Some(e),
            _ => f
                .rules
                .iter()
                .find(|r| r.kind.is_none_or(|k| k == kind) && name.contains(&r.name_contains))
                .map(|r| r.error),
        };
        match injected {
            Some(e) => {
                f.injected += 1;
                // Not while holding the fault state's lock.
                drop(f);
                Err(e.error(kind, path))
            }
            None => Ok(()),
        }
    }
}

/// Cuts the power of `mem`; every later call fails until power returns.
fn cut(mem: &MemFs, f: &mut Faults, tear_seed: Option<u64>) {
    mem.power_cut(tear_seed);
    f.dead = true;
    f.cut_at = None;
}

struct FaultFile {
    fs: FaultFs,
    path: PathBuf,
    inner: Box<dyn WritableFile>,
}

impl WritableFile for FaultFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.fs.check(CallKind::Append, &self.path)?;
        self.inner.append(data)
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.fs.check(CallKind::WriteAt, &self.path)?;
        self.inner.write_at(offset, data)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.fs.check(CallKind::Sync, &self.path)?;
        self.inner.sync()
    }
}

impl Fs for FaultFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.check(CallKind::CreateDir, dir)?;
        self.inner.create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.check(CallKind::Create, path)?;
        let inner = self.inner.create(path)?;
        Ok(Box::new(FaultFile {
            fs: self.clone(),
            path: path.to_path_buf(),
            inner,
        }))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.check(CallKind::Read, path)?;
        self.inner.read(path)
    }

    fn map(&self, path: &Path) -> io::Result<FileBytes> {
        self.check(CallKind::Map, path)?;
        self.inner.map(path)
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        self.check(CallKind::Len, path)?;
        self.inner.len(path)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.check(CallKind::Exists, path)?;
        self.inner.exists(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check(CallKind::Rename, from)?;
        self.inner.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.check(CallKind::Remove, path)?;
        self.inner.remove(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.check(CallKind::List, dir)?;
        self.inner.list(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.check(CallKind::SyncDir, dir)?;
        self.inner.sync_dir(dir)
    }

    fn sync_file(&self, path: &Path) -> io::Result<()> {
        self.check(CallKind::Sync, path)?;
        self.inner.sync_file(path)
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        self.check(CallKind::Lock, path)?;
        self.inner.lock(path)
    }
}
