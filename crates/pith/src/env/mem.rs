//! [`MemFs`]: files in memory that model a power cut exactly as the
//! durability contract (module `env`) allows, and optionally a full disk.
//!
//! Each file is an inode holding its current bytes and its *durable*
//! bytes (as of its last `sync`); each directory holds its current entries
//! and its durable entries (as of its last `sync_dir`). [`MemFs::power_cut`]
//! replaces every current state by the durable one, so what a test reads
//! after it is what a disk would hold after the power came back: unsynced
//! bytes are gone (or, when tearing, a prefix of the last unsynced appends
//! cut at a 512-byte sector boundary survives), unsynced creates, renames
//! and removes are undone. Handles opened before the cut fail from then on
//! (their process died with the machine), and locks are released.
//!
//! Directories themselves are durable as soon as they are created (the
//! engine creates one directory and never removes it). A mapped file is
//! a copy of the file's bytes at the time of the call.
//!
//! With a capacity ([`MemFs::set_capacity`]), a write that would take the
//! bytes of all files past it fails with `StorageFull` (ENOSPC) and writes
//! nothing; removing files frees their bytes.
//!
//! Thread safety: one mutex guards everything; each call holds it briefly.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{no_space, parent, FileBytes, FileLock, Fs, WritableFile};

/// The sector size a torn write is cut at.
pub const SECTOR: usize = 512;

/// An in-memory file system with power cuts. See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    /// The bytes a power cut leaves (as of the last sync).
    durable: Vec<u8>,
    /// A `write_at` changed bytes since the last sync, so `data` is not
    /// `durable` plus appended bytes.
    overwritten: bool,
    /// Open write handles.
    handles: usize,
}

#[derive(Debug, Default)]
struct Dir {
    entries: BTreeMap<String, u64>,
    durable: BTreeMap<String, u64>,
}

#[derive(Debug, Default)]
struct State {
    inodes: HashMap<u64, Inode>,
    next_inode: u64,
    dirs: BTreeMap<PathBuf, Dir>,
    /// Held locks.
    locks: HashSet<PathBuf>,
    /// Bumped by every power cut; handles of an older one fail.
    generation: u64,
    capacity: Option<u64>,
}

fn lost_power() -> io::Error {
    io::Error::other("the machine lost power: this handle is from before the cut")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    Ok((parent(path), name.to_string_lossy().into_owned()))
}

impl State {
    fn dir(&mut self, dir: &Path) -> io::Result<&mut Dir> {
        self.dirs.get_mut(dir).ok_or_else(|| not_found(dir))
    }

    fn lookup(&self, path: &Path) -> io::Result<u64> {
        let (dir, name) = split(path)?;
        self.dirs
            .get(&dir)
            .and_then(|d| d.entries.get(&name))
            .copied()
            .ok_or_else(|| not_found(path))
    }

    fn inode(&self, path: &Path) -> io::Result<&Inode> {
        let id = self.lookup(path)?;
        self.inodes.get(&id).ok_or_else(|| not_found(path))
    }

    /// Bytes held by files that are named or open.
    fn used(&self) -> u64 {
        let named: std::collections::HashSet<u64> = self
            .dirs
            .values()
            .flat_map(|d| d.entries.values().copied())
            .collect();
        self.inodes
            .iter()
            .filter(|(id, i)| named.contains(id) || i.handles > 0)
            .map(|(_, i)| i.data.len() as u64)
            .sum()
    }

    /// Fails with ENOSPC when `extra` more bytes do not fit.
    fn reserve(&self, path: &Path, extra: u64) -> io::Result<()> {
        match self.capacity {
            Some(cap) if extra > 0 && self.used() + extra > cap => Err(no_space(path)),
            _ => Ok(()),
        }
    }

    /// Drops inodes nothing refers to any more (no name, durable or not,
    /// and no handle).
    fn collect(&mut self) {
        let live: std::collections::HashSet<u64> = self
            .dirs
            .values()
            .flat_map(|d| d.entries.values().chain(d.durable.values()).copied())
            .collect();
        self.inodes
            .retain(|id, i| live.contains(id) || i.handles > 0);
    }
}

impl MemFs {
    /// An empty file system with unlimited space.
    pub fn new() -> Self {
        MemFs::default()
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Limits the bytes of all files to `capacity` (`None`: unlimited).
    pub fn set_capacity(&self, capacity: Option<u64>) {
        self.lock_state().capacity = capacity;
    }

    /// Bytes held by named or open files.
    pub fn used_bytes(&self) -> u64 {
        self.lock_state().used()
    }

    /// Cuts the power: every file and directory goes back to its durable
    /// state. With `tear_seed`, each file with unsynced appends keeps a
    /// pseudo-random prefix of them cut at a sector boundary (possibly none,
    /// possibly all), as a disk that wrote some sectors of the last writes
    /// would. Handles opened before the cut fail from now on.
    pub fn power_cut(&self, tear_seed: Option<u64>) {
        let mut st = self.lock_state();
        st.generation += 1;
        st.locks.clear();
        for d in st.dirs.values_mut() {
            d.entries = d.durable.clone();
        }
        let mut rng = tear_seed.map(|s| s | 1);
        let mut ids: Vec<u64> = st.inodes.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let Some(inode) = st.inodes.get_mut(&id) else {
                continue;
            };
            let mut kept = inode.durable.clone();
            let unsynced = inode.data.len().saturating_sub(kept.len());
            if let Some(x) = rng.as_mut() {
                if !inode.overwritten && unsynced > 0 {
                    // xorshift64: deterministic per seed, no dependency.
                    *x ^= *x << 13;
                    *x ^= *x >> 7;
                    *x ^= *x << 17;
                    let sectors = unsynced.div_ceil(SECTOR) + 1;
                    let keep = ((*x % sectors as u64) as usize * SECTOR).min(unsynced);
                    let start = kept.len();
                    kept.extend_from_slice(&inode.data[start..start + keep]);
                }
            }
            inode.durable = kept.clone();
            inode.data = kept;
            inode.overwritten = false;
            inode.handles = 0;
        }
        st.collect();
    }

    /// Every file's path and length, sorted by path (for tests and reports).
    pub fn files(&self) -> Vec<(PathBuf, u64)> {
        let st = self.lock_state();
        let mut out = Vec::new();
        for (dir, d) in &st.dirs {
            for (name, id) in &d.entries {
                let len = st.inodes.get(id).map_or(0, |i| i.data.len() as u64);
                out.push((dir.join(name), len));
            }
        }
        out.sort();
        out
    }

    /// Replaces the bytes of an existing file in place, durably (for
    /// corruption tests: a disk that changed bytes behind the engine).
    pub fn overwrite(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut st = self.lock_state();
        let id = st.lookup(path)?;
        let inode = st.inodes.get_mut(&id).ok_or_else(|| not_found(path))?;
        inode.data = data.to_vec();
        inode.durable = data.to_vec();
        inode.overwritten = false;
        Ok(())
    }
}

struct MemFile {
    fs: MemFs,
    id: u64,
    path: PathBuf,
    generation: u64,
}

impl MemFile {
    fn with<T>(&self, f: impl FnOnce(&mut State, u64) -> io::Result<T>) -> io::Result<T> {
        let mut st = self.fs.lock_state();
        if st.generation != self.generation {
            return Err(lost_power());
        }
        f(&mut st, self.id)
    }
}

impl WritableFile for MemFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        let path = self.path.clone();
        self.with(|st, id| {
            st.reserve(&path, data.len() as u64)?;
            let inode = st.inodes.get_mut(&id).ok_or_else(lost_power)?;
            inode.data.extend_from_slice(data);
            Ok(())
        })
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let path = self.path.clone();
        self.with(|st, id| {
            let len = st.inodes.get(&id).ok_or_else(lost_power)?.data.len();
            let start = usize::try_from(offset)
                .ok()
                .filter(|&o| o <= len)
                .ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "write_at past the end")
                })?;
            let end = start + data.len();
            st.reserve(&path, end.saturating_sub(len) as u64)?;
            let inode = st.inodes.get_mut(&id).ok_or_else(lost_power)?;
            if end > inode.data.len() {
                inode.data.resize(end, 0);
            }
            inode.data[start..end].copy_from_slice(data);
            if start < inode.durable.len() {
                inode.overwritten = true;
            }
            Ok(())
        })
    }

    fn sync(&mut self) -> io::Result<()> {
        self.with(|st, id| {
            let inode = st.inodes.get_mut(&id).ok_or_else(lost_power)?;
            if inode.overwritten || inode.data.len() < inode.durable.len() {
                inode.durable = inode.data.clone();
            } else {
                let from = inode.durable.len();
                let tail = &inode.data[from..];
                inode.durable.extend_from_slice(tail);
            }
            inode.overwritten = false;
            Ok(())
        })
    }
}

impl Drop for MemFile {
    fn drop(&mut self) {
        let mut st = self.fs.lock_state();
        if st.generation == self.generation {
            if let Some(inode) = st.inodes.get_mut(&self.id) {
                inode.handles = inode.handles.saturating_sub(1);
            }
            st.collect();
        }
    }
}

struct MemLock {
    fs: MemFs,
    path: PathBuf,
    generation: u64,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        let mut st = self.fs.lock_state();
        if st.generation != self.generation {
            return;
        }
        st.locks.remove(&self.path);
    }
}

impl Fs for MemFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.lock_state();
        for d in dir.ancestors() {
            if !d.as_os_str().is_empty() {
                st.dirs.entry(d.to_path_buf()).or_default();
            }
        }
        Ok(())
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let (dir, name) = split(path)?;
        let mut st = self.lock_state();
        let id = st.next_inode;
        let d = st.dir(&dir)?;
        if d.entries.contains_key(&name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", path.display()),
            ));
        }
        d.entries.insert(name, id);
        st.next_inode += 1;
        st.inodes.insert(
            id,
            Inode {
                handles: 1,
                ..Inode::default()
            },
        );
        Ok(Box::new(MemFile {
            fs: self.clone(),
            id,
            path: path.to_path_buf(),
            generation: st.generation,
        }))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        Ok(self.lock_state().inode(path)?.data.clone())
    }

    fn map(&self, path: &Path) -> io::Result<FileBytes> {
        Ok(FileBytes::heap(self.read(path)?))
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        Ok(self.lock_state().inode(path)?.data.len() as u64)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let st = self.lock_state();
        Ok(st.dirs.contains_key(path) || st.lookup(path).is_ok())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from_dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        let mut st = self.lock_state();
        st.dir(&to_dir)?;
        let id = st
            .dir(&from_dir)?
            .entries
            .remove(&from_name)
            .ok_or_else(|| not_found(from))?;
        st.dir(&to_dir)?.entries.insert(to_name, id);
        st.collect();
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let (dir, name) = split(path)?;
        let mut st = self.lock_state();
        st.dir(&dir)?
            .entries
            .remove(&name)
            .ok_or_else(|| not_found(path))?;
        st.collect();
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut st = self.lock_state();
        Ok(st.dir(dir)?.entries.keys().cloned().collect())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.lock_state();
        let d = st.dir(dir)?;
        d.durable = d.entries.clone();
        st.collect();
        Ok(())
    }

    fn sync_file(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock_state();
        let id = st.lookup(path)?;
        let inode = st.inodes.get_mut(&id).ok_or_else(|| not_found(path))?;
        inode.durable = inode.data.clone();
        inode.overwritten = false;
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FileLock>> {
        let (dir, name) = split(path)?;
        let mut st = self.lock_state();
        if !st.dir(&dir)?.entries.contains_key(&name) {
            // Like the real lock, locking creates the file.
            let id = st.next_inode;
            st.next_inode += 1;
            st.inodes.insert(id, Inode::default());
            st.dir(&dir)?.entries.insert(name, id);
        }
        if !st.locks.insert(path.to_path_buf()) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(Box::new(MemLock {
            fs: self.clone(),
            path: path.to_path_buf(),
            generation: st.generation,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs_with_dir() -> (MemFs, PathBuf) {
        let fs = MemFs::new();
        let dir = PathBuf::from("/db");
        fs.create_dir_all(&dir).expect("mkdir");
        (fs, dir)
    }

    #[test]
    fn unsynced_data_and_names_are_lost_synced_ones_kept() {
        let (fs, dir) = fs_with_dir();
        let a = dir.join("a");
        let mut f = fs.create(&a).expect("create");
        f.append(b"hello").expect("append");
        f.sync().expect("sync");
        f.append(b" world").expect("append");
        // The name is not durable yet: the whole file goes.
        fs.power_cut(None);
        assert!(!fs.exists(&a).expect("exists"));
        assert!(f.append(b"x").is_err(), "old handles fail after a cut");

        let mut f = fs.create(&a).expect("create");
        f.append(b"hello").expect("append");
        f.sync().expect("sync");
        fs.sync_dir(&dir).expect("sync dir");
        f.append(b" world").expect("append");
        fs.power_cut(None);
        assert_eq!(fs.read(&a).expect("read"), b"hello");
    }

    #[test]
    fn renames_and_removes_are_undone_until_the_directory_syncs() {
        let (fs, dir) = fs_with_dir();
        let (a, b) = (dir.join("a"), dir.join("b"));
        for (p, content) in [(&a, b"aaa"), (&b, b"bbb")] {
            let mut f = fs.create(p).expect("create");
            f.append(content).expect("append");
            f.sync().expect("sync");
        }
        fs.sync_dir(&dir).expect("sync dir");
        fs.rename(&a, &b).expect("rename");
        assert_eq!(fs.read(&b).expect("read"), b"aaa");
        fs.power_cut(None);
        assert_eq!(fs.read(&a).expect("a back"), b"aaa");
        assert_eq!(fs.read(&b).expect("b back"), b"bbb");
        fs.remove(&a).expect("remove");
        fs.sync_dir(&dir).expect("sync dir");
        fs.remove(&b).expect("remove");
        fs.power_cut(None);
        assert!(!fs.exists(&a).expect("exists"));
        assert_eq!(fs.read(&b).expect("b back"), b"bbb");
    }

    #[test]
    fn tears_keep_a_sector_aligned_prefix_of_unsynced_appends() {
        let mut kept = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let (fs, dir) = fs_with_dir();
            let p = dir.join("log");
            let mut f = fs.create(&p).expect("create");
            f.append(&[1u8; 100]).expect("append");
            f.sync().expect("sync");
            fs.sync_dir(&dir).expect("sync dir");
            f.append(&[2u8; 2000]).expect("append");
            fs.power_cut(Some(seed));
            let got = fs.read(&p).expect("read");
            assert_eq!(&got[..100], &[1u8; 100]);
            let extra = got.len() - 100;
            assert!(extra % SECTOR == 0 || extra == 2000, "{extra}");
            kept.insert(extra);
        }
        assert!(kept.len() > 2, "tearing varies with the seed: {kept:?}");
    }

    #[test]
    fn capacity_gives_no_space_and_removal_frees_it() {
        let (fs, dir) = fs_with_dir();
        fs.set_capacity(Some(1000));
        let mut f = fs.create(&dir.join("a")).expect("create");
        f.append(&[0u8; 900]).expect("fits");
        let e = f.append(&[0u8; 200]).expect_err("full");
        assert!(super::super::is_no_space(&e));
        drop(f);
        fs.remove(&dir.join("a")).expect("remove");
        let mut g = fs.create(&dir.join("b")).expect("create");
        g.append(&[0u8; 200]).expect("space was freed");
    }

    #[test]
    fn locks_exclude() {
        let (fs, dir) = fs_with_dir();
        let p = dir.join("LOCK");
        let x = fs.lock(&p).expect("exclusive");
        assert!(fs.lock(&p).is_err());
        drop(x);
        let _y = fs.lock(&p).expect("free again");
        assert!(fs.lock(&p).is_err());
    }
}
