//! Opening a database: lock, manifest, segments, and the replay of the
//! logs that hold writes not yet in any segment.
//!
//! Steps, in order:
//!
//! 1. Without a manifest, create a database, but only in a directory that
//!    is empty (or holds only the leftovers of an interrupted creation:
//!    `LOCK`, `MANIFEST.tmp`). Creating deletes nothing.
//! 2. Take the lock: exclusive for read-write, shared for read-only.
//! 3. Read the manifest; every file number on disk raises its counter, so
//!    a number is never reused (a log created just before a crash).
//! 4. Read-write only: remove garbage (temporary files, segments not in
//!    the manifest, logs older than its log number) *before* anything
//!    needs space, so a full disk cannot wedge recovery. `.wal.torn` files
//!    are kept for inspection.
//! 5. Open and check every live segment against its manifest entry.
//! 6. Replay every log at or after the manifest's log number (including
//!    logs renamed `.wal.torn`) into one memtable, which becomes the first
//!    frozen memtable: the background thread builds it into a segment, and
//!    only then are its logs removed (at once, when they hold nothing the
//!    segments lack). So open writes no segment and needs almost no space.
//!    A log whose tail was torn is renamed `.wal.torn` (read-write) and
//!    reported in [`RecoveryReport`]. Every replayed log
//!    is synced first: what it holds may be only in the page cache, and new
//!    writes must not become durable before what they were built on.
//! 7. Read-write only: create the log for new writes.
//!
//! A read-only open changes nothing on disk: logs are replayed into memory
//! only.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, RwLock};

use crate::core::{Bg, Inner, Queue, State};
use crate::env::{FileLock, Fs};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind, LOCK, MANIFEST_TMP};
use crate::manifest::Manifest;
use crate::memtable::Memtable;
use crate::model_file::ModelFile;
use crate::options::Options;
use crate::segment::Segment;
use crate::wal::{self, WalWriter};

/// What recovery found at open.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    /// Logs replayed.
    pub logs: usize,
    /// Log records replayed.
    pub records: u64,
    /// Logs whose tail was torn (a crash during an append), with the bytes
    /// dropped from each. The files are kept as `NNNNNN.wal.torn`.
    pub torn: Vec<(PathBuf, u64)>,
}

/// Opens the database in `dir`; see the module documentation.
pub(crate) fn open(
    dir: &Path,
    options: Options,
    read_only: bool,
) -> Result<(Arc<Inner>, RecoveryReport)> {
    options.validate()?;
    let fs = options.fs.clone();
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| Error::io(p, e)
    };
    let manifest_path = dir.join(filename::MANIFEST);
    let exists = fs.exists(&manifest_path).map_err(io(&manifest_path))?;
    if !exists && (read_only || !options.create_if_missing) {
        return Err(Error::NotFound {
            path: dir.to_path_buf(),
        });
    }
    if !exists {
        prepare_new(&*fs, dir)?;
    }
    let lock = take_lock(&*fs, dir, read_only)?;
    let mut m = match Manifest::read(&*fs, dir)? {
        Some(_) if options.error_if_exists => {
            return Err(Error::AlreadyExists {
                path: dir.to_path_buf(),
            })
        }
        Some(m) => m,
        None if read_only => {
            return Err(Error::NotFound {
                path: dir.to_path_buf(),
            })
        }
        None => {
            let m = Manifest {
                next_file: 1,
                ..Manifest::default()
            };
            m.write(&*fs, dir)?;
            m
        }
    };

    let live: HashSet<u64> = m.segments.iter().map(|s| s.number).collect();
    let live_models: HashSet<u64> = m.models.iter().copied().collect();
    let mut logs: BTreeMap<u64, PathBuf> = BTreeMap::new();
    let mut garbage = Vec::new();
    for name in fs.list(dir).map_err(io(dir))? {
        if name == MANIFEST_TMP {
            garbage.push(dir.join(name));
            continue;
        }
        let Some((n, kind)) = filename::parse(&name) else {
            continue;
        };
        m.next_file = m.next_file.max(n + 1);
        let path = dir.join(&name);
        match kind {
            FileKind::Wal | FileKind::TornWal if n >= m.log_number => {
                // A log and its torn copy cannot both exist (the rename is
                // atomic); prefer the plain name if they somehow do.
                if kind == FileKind::Wal || !logs.contains_key(&n) {
                    logs.insert(n, path);
                }
            }
            FileKind::Segment if live.contains(&n) => {}
            FileKind::Model if live_models.contains(&n) => {}
            FileKind::TornWal => {}
            FileKind::Wal | FileKind::Segment | FileKind::Model | FileKind::Temp => {
                garbage.push(path)
            }
        }
    }
    if !read_only {
        for p in &garbage {
            fs.remove(p).map_err(io(p))?;
        }
    }

    let mut models = BTreeMap::new();
    for &n in &m.models {
        let file = ModelFile::open(&fs, dir, n).map_err(|e| match e {
            Error::Corruption {
                path,
                offset,
                detail,
            } => {
                let users: Vec<String> = m
                    .segments
                    .iter()
                    .filter(|s| s.model == n)
                    .map(|s| {
                        filename::path(dir, s.number, FileKind::Segment)
                            .display()
                            .to_string()
                    })
                    .collect();
                let detail = match users.is_empty() {
                    true => format!("{detail} (it is the current model)"),
                    false => format!(
                        "{detail} (the values of {} are encoded with it)",
                        users.join(", ")
                    ),
                };
                Error::Corruption {
                    path,
                    offset,
                    detail,
                }
            }
            other => other,
        })?;
        models.insert(n, file);
    }
    let lookup = |n: u64| models.get(&n).cloned();
    let mut segments = Vec::with_capacity(m.segments.len());
    for e in &m.segments {
        let path = filename::path(dir, e.number, FileKind::Segment);
        let s = Segment::open(&fs, &path, e.number, &lookup, options.resident_index)?;
        if crate::core::entry_of(&s) != *e {
            return Err(Error::corrupt(
                &path,
                0,
                "segment does not match its manifest entry",
            ));
        }
        segments.push(Arc::new(s));
    }

    let mut report = RecoveryReport::default();
    let recovered = Memtable::with_logs(logs.keys().copied().collect());
    let mut last_seq = m.last_seq;
    let mut floor = 0;
    // Replayed logs that are not torn: removable once nothing needs them.
    let mut plain_logs = Vec::new();
    for (&n, path) in &logs {
        let r = wal::replay(&*fs, path, floor, |seq, op| {
            if seq > m.last_seq {
                recovered.insert(op.key, seq, op.kind, op.value);
            }
        })?;
        floor = floor.max(r.last_seq);
        last_seq = last_seq.max(r.last_seq);
        report.logs += 1;
        report.records += r.records;
        let mut path = path.clone();
        if r.torn_bytes > 0 {
            let torn = filename::path(dir, n, FileKind::TornWal);
            if !read_only && path != torn {
                // Kept for inspection once built into a segment; until
                // then it is replayed under this name.
                fs.rename(&path, &torn).map_err(io(&path))?;
                path = torn.clone();
            }
            report.torn.push((torn, r.torn_bytes));
        } else if path == filename::path(dir, n, FileKind::Wal) {
            plain_logs.push(path.clone());
        }
        if !read_only {
            // What was replayed may be only in the page cache (a process
            // crash, or a failed sync before it): make it durable before
            // new writes build on it, or a power cut could keep the new
            // writes and lose the replayed ones.
            fs.sync_file(&path).map_err(io(&path))?;
        }
    }

    let (wal, mem_number) = if read_only {
        (None, m.next_file)
    } else {
        let number = m.next_file;
        m.next_file += 1;
        let path = filename::path(dir, number, FileKind::Wal);
        let w = WalWriter::create(&*fs, &path)?;
        (Some(w), number)
    };
    if !read_only {
        fs.sync_dir(dir).map_err(io(dir))?;
    }
    let frozen = if recovered.is_empty() {
        // The logs hold nothing the segments lack: no build is needed.
        // Torn ones stay for inspection.
        if !read_only {
            for p in &plain_logs {
                fs.remove(p).map_err(io(p))?;
            }
        }
        Vec::new()
    } else {
        vec![Arc::new(recovered)]
    };
    let inner = Arc::new(Inner {
        dir: dir.to_path_buf(),
        options,
        fs,
        read_only,
        state: RwLock::new(Arc::new(State {
            model: models.get(&m.current_model).cloned(),
            mem: Arc::new(Memtable::new(mem_number)),
            frozen,
            segments,
        })),
        last_seq: AtomicU64::new(last_seq),
        queue: Mutex::new(Queue::default()),
        queue_cv: Condvar::new(),
        wal: Mutex::new(wal),
        manifest: Mutex::new(m),
        snapshots: Arc::new(Mutex::new(BTreeMap::new())),
        bg: Mutex::new(Bg::default()),
        bg_cv: Condvar::new(),
        _lock: lock,
    });
    Ok((inner, report))
}

/// Creates `dir` for a new database, refusing one that holds anything
/// but the leftovers of an interrupted creation.
fn prepare_new(fs: &dyn Fs, dir: &Path) -> Result<()> {
    fs.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let parent = crate::env::parent(dir);
    fs.sync_dir(&parent).map_err(|e| Error::io(&parent, e))?;
    let mut names = fs.list(dir).map_err(|e| Error::io(dir, e))?;
    names.sort();
    if let Some(entry) = names.into_iter().find(|n| n != LOCK && n != MANIFEST_TMP) {
        return Err(Error::DirectoryNotEmpty {
            path: dir.to_path_buf(),
            entry,
        });
    }
    Ok(())
}

/// Takes the database lock; a read-only open of a database without a lock
/// file (on a read-only copy) goes on without one.
fn take_lock(fs: &dyn Fs, dir: &Path, shared: bool) -> Result<Option<Box<dyn FileLock>>> {
    let path = dir.join(LOCK);
    match fs.lock(&path, shared) {
        Ok(l) => Ok(Some(l)),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Err(Error::Locked {
            path: dir.to_path_buf(),
        }),
        Err(e) if shared && e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&path, e)),
    }
}
