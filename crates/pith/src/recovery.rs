//! Opening a database: lock, manifest, segments, and the replay of the
//! logs that hold writes not yet in any segment.
//!
//! Steps, in order:
//!
//! 1. Without a manifest, create a database, but only in a directory that
//!    is empty (or holds only the leftovers of an interrupted creation:
//!    `LOCK`, `MANIFEST.tmp`). Creating deletes nothing.
//! 2. Read-write: take the exclusive lock. A read-only open takes no lock
//!    and may run beside a writer: it loads steps 3 to 6 and reads the
//!    manifest again, and loads again when a writer changed it or removed
//!    a file meanwhile (see `load_view_beside_writer`).
//! 3. Read the manifest; every file number on disk raises its counter, so
//!    a number is never reused (a log created just before a crash).
//! 4. Read-write only: remove garbage (temporary files, segments not in
//!    the manifest, logs older than its log number) *before* anything
//!    needs space, so a full disk cannot wedge recovery. `.wal.torn` files
//!    are kept for inspection.
//! 5. Open and check every live segment against its manifest entry.
//! 6. Replay every log at or after the manifest's log number (including
//!    logs renamed `.wal.torn`) into one memtable per column family (a
//!    write to a family dropped since is skipped), which become the first
//!    frozen generation: the background thread builds them into segments, and
//!    only then are its logs removed (at once, when they hold nothing the
//!    segments lack). So open writes no segment and needs almost no space.
//!    A log whose tail was torn is renamed `.wal.torn` (read-write) and
//!    reported in [`RecoveryReport`]. Every replayed log
//!    is synced first: what it holds may be only in the page cache, and new
//!    writes must not become durable before what they were built on.
//! 7. Read-write only: create the log for new writes.
//!
//! A read-only open changes nothing on disk: logs are replayed into memory
//! only. It sees the database as it was at one moment of its load: the
//! newest log may end in a record a writer is still appending, which it
//! leaves out (and reports as torn, without renaming anything).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, RwLock};

use crate::core::{Bg, Inner, Queue, State, Tree};
use crate::env::{FileLock, Fs};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind, LOCK, MANIFEST_TMP};
use crate::manifest::Manifest;
use crate::memtable::Memtable;
use crate::model_file::ModelFile;
use crate::options::Options;
use crate::segment::Segment;
use crate::value_cache::ValueCache;
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
    // A read-only open takes no lock: it may run beside a writer, and
    // loads a consistent view instead (below).
    let lock = match read_only {
        true => None,
        false => take_lock(&*fs, dir)?,
    };
    let value_cache = ValueCache::new(options.value_cache_bytes).map(Arc::new);
    let mut view = match read_only {
        true => load_view_beside_writer(&fs, dir, &options, &value_cache)?,
        false => load_view(&fs, dir, &options, false, &value_cache)?,
    };
    let (wal, mem_number) = if read_only {
        (None, view.m.next_file)
    } else {
        let number = view.m.next_file;
        view.m.next_file += 1;
        let path = filename::path(dir, number, FileKind::Wal);
        let w = WalWriter::create(&*fs, &path)?;
        (Some(w), number)
    };
    if !read_only {
        fs.sync_dir(dir).map_err(io(dir))?;
    }
    let rebuild = view.trees.iter().any(|t| !t.recovered.is_empty());
    if !rebuild && !read_only {
        // The logs hold nothing the segments lack: no build is needed.
        // Torn ones stay for inspection.
        for p in &view.plain_logs {
            fs.remove(p).map_err(io(p))?;
        }
    }
    let trees = view
        .trees
        .into_iter()
        .map(|t| Tree {
            id: t.id,
            name: t.name,
            mem: Arc::new(Memtable::new(mem_number)),
            // Every family's memtable of the recovered generation, empty
            // ones too: the default family's frozen list holds every
            // generation.
            frozen: match rebuild {
                true => vec![Arc::new(t.recovered)],
                false => Vec::new(),
            },
            segments: t.segments,
            model: t.model,
        })
        .collect();
    let inner = Arc::new(Inner {
        dir: dir.to_path_buf(),
        options,
        fs,
        read_only,
        state: RwLock::new(Arc::new(State { trees })),
        last_seq: AtomicU64::new(view.last_seq),
        queue: Mutex::new(Queue::default()),
        queue_cv: Condvar::new(),
        wal: Mutex::new(wal),
        manifest: Mutex::new(view.m),
        snapshots: Arc::new(Mutex::new(BTreeMap::new())),
        bg: Mutex::new(Bg::default()),
        bg_cv: Condvar::new(),
        family_options: Mutex::new(HashMap::new()),
        value_cache,
        _lock: lock,
    });
    Ok((inner, view.report))
}

/// What a database directory holds, loaded: the manifest, and per column
/// family its segments and current model, and the logs replayed into a
/// memtable.
struct View {
    m: Manifest,
    trees: Vec<LoadedTree>,
    last_seq: u64,
    /// Replayed logs that are not torn: removable once nothing needs them.
    plain_logs: Vec<PathBuf>,
    report: RecoveryReport,
}

/// One column family as loaded.
struct LoadedTree {
    id: u32,
    name: Arc<str>,
    segments: Vec<Arc<Segment>>,
    model: Option<Arc<ModelFile>>,
    recovered: Memtable,
}

/// Times a read-only open retries when a writer changes the database
/// under it; each retry follows a change the writer made, so a run of
/// failures means a writer that changes the manifest faster than the
/// reader can load it.
const VIEW_ATTEMPTS: u32 = 50;

/// Loads a view while a writer may be flushing, merging and removing
/// files: load, then read the manifest again. A file that vanished (a
/// merged segment, a built log, a dropped model) or a flush that moved the
/// log number on means a writer moved on: load again. Otherwise every log
/// at or after the loaded manifest's log number was still there when the
/// logs were listed (a log is removed only after a manifest without it is
/// written), so the view holds every write the manifest's segments lack up
/// to the moment the logs were read: a prefix of the writes in sequence
/// order.
fn load_view_beside_writer(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    options: &Options,
    cache: &Option<Arc<ValueCache>>,
) -> Result<View> {
    let manifest = || Manifest::read(&**fs, dir);
    let mut last_error = None;
    for _ in 0..VIEW_ATTEMPTS {
        let before = manifest()?;
        let error = match load_view(fs, dir, options, true, cache) {
            Ok(view) if still_complete(&view.m, manifest()?.as_ref()) => return Ok(view),
            Ok(_) => None,
            // A writer renaming a torn log changes no manifest.
            Err(e @ Error::Io { .. }) if is_not_found(&e) => Some(e),
            Err(e) if manifest()? != before => Some(e),
            Err(e) => return Err(e),
        };
        last_error = error;
        std::thread::yield_now();
    }
    Err(last_error.unwrap_or_else(|| {
        Error::corrupt(
            dir.join(filename::MANIFEST),
            0,
            format!("changed under a read-only open {VIEW_ATTEMPTS} times in a row (a writer flushes faster than a view loads)"),
        )
    }))
}

/// True when a view loaded from manifest `loaded` holds every write up to
/// the moment its logs were listed, given the manifest read after: its
/// segments were open by then (a merge removing them later is harmless:
/// a mapping outlives its file), and the logs it listed were all the logs
/// at or after `loaded.log_number` unless a flush moved the log number on
/// meanwhile (the only change that removes logs).
fn still_complete(loaded: &Manifest, after: Option<&Manifest>) -> bool {
    after.is_some_and(|after| after.log_number == loaded.log_number)
}

/// True for an I/O error saying a file does not exist.
fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// Loads the view in `dir` (steps 3 to 6 of the module documentation);
/// read-write, it also removes garbage and syncs the replayed logs.
fn load_view(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    options: &Options,
    read_only: bool,
    cache: &Option<Arc<ValueCache>>,
) -> Result<View> {
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| Error::io(p, e)
    };
    let mut m = match Manifest::read(&**fs, dir)? {
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
            let m = Manifest::new();
            m.write(&**fs, dir)?;
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
        let file = ModelFile::open(fs, dir, n).map_err(|e| match e {
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
    let replayed: Vec<u64> = logs.keys().copied().collect();
    let mut trees: Vec<LoadedTree> = m
        .families
        .iter()
        .map(|f| LoadedTree {
            id: f.id,
            name: Arc::from(f.name.as_str()),
            segments: Vec::new(),
            model: models.get(&f.current_model).cloned(),
            recovered: Memtable::with_logs(replayed.clone()),
        })
        .collect();
    for e in &m.segments {
        let path = filename::path(dir, e.number, FileKind::Segment);
        let s = Segment::open(
            fs,
            &path,
            e.number,
            &lookup,
            options.resident_index,
            options.value_reads,
            cache.clone(),
        )?;
        let tree = trees.iter_mut().find(|t| t.id == e.family);
        match tree {
            Some(t) if crate::core::entry_of(e.family, &s) == *e => t.segments.push(Arc::new(s)),
            _ => {
                return Err(Error::corrupt(
                    &path,
                    0,
                    "segment does not match its manifest entry",
                ))
            }
        }
    }

    let mut report = RecoveryReport::default();
    let mut last_seq = m.last_seq;
    let mut floor = 0;
    let mut unknown_family = None;
    // Replayed logs that are not torn: removable once nothing needs them.
    let mut plain_logs = Vec::new();
    for (&n, path) in &logs {
        let r = wal::replay(&**fs, path, floor, |seq, op| {
            if seq <= m.last_seq {
                return;
            }
            match trees.iter().find(|t| t.id == op.family) {
                Some(t) => t
                    .recovered
                    .insert(op.key, seq, op.kind, op.value, op.deadline),
                // A family dropped after the write: skipped, as the write
                // path skips it. (Ids are never reused, and one past
                // `next_family` cannot be in a log: a family is in the
                // manifest before its first write.)
                None => {
                    unknown_family =
                        unknown_family.or(Some(op.family).filter(|&f| f >= m.next_family))
                }
            }
        })?;
        if let Some(f) = unknown_family {
            return Err(Error::corrupt(
                path,
                0,
                format!("log writes to column family {f}, which was never created"),
            ));
        }
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
    Ok(View {
        m,
        trees,
        last_seq,
        plain_logs,
        report,
    })
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

/// Takes the database's exclusive lock (read-only opens take none).
fn take_lock(fs: &dyn Fs, dir: &Path) -> Result<Option<Box<dyn FileLock>>> {
    let path = dir.join(LOCK);
    match fs.lock(&path) {
        Ok(l) => Ok(Some(l)),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Err(Error::Locked {
            path: dir.to_path_buf(),
        }),
        Err(e) => Err(Error::io(&path, e)),
    }
}
