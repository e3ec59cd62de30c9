//! `pith stress`: a long-running randomized read/write/verify test of the
//! engine, after RocksDB's `db_stress` and `db_crashtest.py`.
//!
//! Several threads put, delete, write batches, get, read through held
//! snapshots, scan forward and backward (turning around mid-scan), flush,
//! compact and verify, on a small memtable so flushes and merges happen
//! all the time. Every read is checked exactly against an expected state
//! (`expected.rs`), which stays exact under concurrency because each key
//! has one writer thread (`worker.rs`) and every version of every key has
//! a known value (`model.rs`); scans are checked key by key (`scan.rs`,
//! `walk.rs`).
//!
//! With `--kill-every S` the workload runs in a child process that the
//! parent SIGKILLs after a random time in `[S/2, 3S/2]`; the parent then
//! reopens the database, checks every key against the acknowledged and
//! in-flight versions (`recover.rs`), and starts a new child, which
//! resumes from the expected state (`crash.rs`).
//!
//! Invariants: the run ends by itself at `--seconds` (plus a final check);
//! any mismatch stops it with an error naming the key, the expected and
//! the found version. The expected state lives beside the database as
//! `<DIR>.expected`, never inside it.
//!
//! Thread safety: the database handle, the expected state, the counters
//! and the reporter are shared by reference among the worker threads of
//! one process; nothing else is.

mod crash;
mod expected;
mod model;
mod recover;
mod report;
mod scan;
mod walk;
mod worker;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pith::{Options, DB};

use self::expected::{Expected, Header};
use self::model::{Model, MAX_KEYS};
use self::report::{Counts, Recoveries, Reporter};
use self::worker::Run;
use crate::CliError;

/// `pith stress`.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Database directory, created if missing. The expected state goes
    /// beside it, to `<DIR>.expected`; an existing pair is checked and
    /// resumed.
    #[arg(long)]
    pub db: PathBuf,
    /// Total run time in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub seconds: f64,
    /// Worker threads.
    #[arg(long, default_value_t = 4)]
    pub threads: u32,
    /// Size of the key space.
    #[arg(long, default_value_t = 10_000)]
    pub keys: u32,
    /// Run the workload in a child process and SIGKILL it after a random
    /// time in [S/2, 3S/2], then reopen and check the database, and start
    /// again until --seconds pass. Writes are synced.
    #[arg(long, value_name = "SECONDS")]
    pub kill_every: Option<f64>,
    /// Random seed (default: from the clock; printed either way).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Mean value size in bytes (at least 12).
    #[arg(long, default_value_t = 100)]
    pub value_bytes: u32,
    /// Memtable size: small, so flushes and merges happen often.
    #[arg(long, default_value_t = 64 << 10)]
    pub memtable_bytes: usize,
    /// Sync every write (always on with --kill-every).
    #[arg(long)]
    pub sync: bool,
    /// Internal: run as the workload child of --kill-every.
    #[arg(long, hide = true)]
    pub child: bool,
}

/// Checked arguments.
struct Config {
    db: PathBuf,
    expected: PathBuf,
    seconds: f64,
    threads: u32,
    keys: u32,
    seed: u64,
    value_bytes: u32,
    memtable_bytes: usize,
    sync: bool,
}

/// Segments above this many start a merge: low, so merges run often.
const MERGE_TRIGGER: usize = 3;

impl Config {
    fn new(a: &Args) -> Result<Config, CliError> {
        let bad = |m: &str| Err(CliError::Usage(format!("stress: {m}")));
        if !a.seconds.is_finite() || a.seconds < 0.0 {
            return bad("--seconds must be a non-negative number");
        }
        if a.threads == 0 || a.threads > 1024 {
            return bad("--threads must be 1 to 1024");
        }
        if a.keys < a.threads || a.keys > MAX_KEYS {
            return bad("--keys must be at least --threads and at most 100,000,000");
        }
        if a.value_bytes == 0 || a.value_bytes > 1 << 20 {
            return bad("--value-bytes must be 1 to 1 MiB");
        }
        if a.memtable_bytes == 0 {
            return bad("--memtable-bytes must be positive");
        }
        if a.kill_every.is_some_and(|k| !k.is_finite() || k <= 0.0) {
            return bad("--kill-every must be a positive number of seconds");
        }
        let seed = a.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        Ok(Config {
            expected: Expected::path_for(&a.db)?,
            db: a.db.clone(),
            seconds: a.seconds,
            threads: a.threads,
            keys: a.keys,
            seed,
            value_bytes: a.value_bytes,
            memtable_bytes: a.memtable_bytes,
            sync: a.sync || a.kill_every.is_some(),
        })
    }

    fn options(&self) -> Options {
        Options {
            memtable_bytes: self.memtable_bytes,
            merge_trigger: MERGE_TRIGGER,
            ..Options::default()
        }
    }

    fn open_db(&self) -> Result<DB, CliError> {
        Ok(DB::open(&self.db, self.options())?)
    }

    /// Opens the expected state, creating it (for a new database) when
    /// `create`.
    fn open_expected(&self, create: bool) -> Result<Expected, CliError> {
        if self.expected.exists() {
            let e = Expected::open(&self.expected)?;
            let h = e.header();
            if h.keys != self.keys || h.value_bytes != self.value_bytes {
                return Err(CliError::Usage(format!(
                    "stress: {} was made with --keys {} --value-bytes {}; pass those, or remove it and {} to start afresh",
                    self.expected.display(),
                    h.keys,
                    h.value_bytes,
                    self.db.display()
                )));
            }
            return Ok(e);
        }
        if !create {
            return Err(CliError::StressState {
                path: self.expected.clone(),
                detail: "missing: the parent process creates it before starting a child".into(),
            });
        }
        if dir_has_entries(&self.db)? {
            return Err(CliError::Usage(format!(
                "stress: {} holds files but there is no expected state at {}; use a new or empty directory",
                self.db.display(),
                self.expected.display()
            )));
        }
        // The expected state sits beside the database: make the parent.
        if let Some(parent) = self.expected.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| CliError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let header = Header {
            keys: self.keys,
            value_bytes: self.value_bytes,
            threads: self.threads,
            salt: self.seed,
        };
        Expected::create(&self.expected, header)
    }
}

fn dir_has_entries(dir: &Path) -> Result<bool, CliError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_some()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(CliError::Io {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

fn model_of(expected: &Expected) -> Model {
    let h = expected.header();
    Model {
        salt: h.salt,
        value_bytes: h.value_bytes as usize,
        keys: h.keys,
    }
}

/// `pith stress`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let cfg = Config::new(args)?;
    if args.child {
        return crash::child(&cfg);
    }
    eprintln!(
        "stress: seed {} (repeat with --seed {}), expected state {}",
        cfg.seed,
        cfg.seed,
        cfg.expected.display()
    );
    let counts = Counts::default();
    let report = Reporter::default();
    let started = Instant::now();
    let rec = match args.kill_every {
        Some(every) => crash::parent(&cfg, every, &counts, &report)?,
        None => plain(&cfg, &counts, &report)?,
    };
    let head = format!(
        "pith stress {}: {} threads, {} keys, values ~{} B, memtable {} KiB, seed {}{}",
        if report.count() == 0 {
            "passed"
        } else {
            "FAILED"
        },
        cfg.threads,
        cfg.keys,
        cfg.value_bytes,
        cfg.memtable_bytes >> 10,
        cfg.seed,
        args.kill_every
            .map_or(String::new(), |k| format!(", killed every ~{k} s")),
    );
    report::summary(
        &head,
        started.elapsed().as_secs_f64(),
        &counts.get(),
        &rec,
        report.count(),
    );
    report.error().map_or(Ok(()), Err)
}

/// One process: check what is there, run the workload, check again.
fn plain(cfg: &Config, counts: &Counts, report: &Reporter) -> Result<Recoveries, CliError> {
    let started = Instant::now();
    let mut expected = cfg.open_expected(true)?;
    let model = model_of(&expected);
    let db = cfg.open_db()?;
    let rec = recover::reconcile(&db, &model, &expected, counts, report)?;
    if report.count() == 0 {
        expected.set_threads(cfg.threads)?;
        let run = Run {
            db: &db,
            model: &model,
            expected: &expected,
            threads: cfg.threads,
            sync: cfg.sync,
            deadline: started + Duration::from_secs_f64(cfg.seconds),
            counts,
            report,
        };
        workload(&run, cfg.seed, Duration::from_secs(1), || {
            report::progress(
                started.elapsed().as_secs_f64(),
                cfg.seconds,
                &counts.get(),
                0,
            );
        })?;
    }
    if report.count() == 0 {
        recover::reconcile(&db, &model, &expected, counts, report)?;
    }
    db.close()?;
    Ok(rec)
}

/// Runs `run.threads` workers to the deadline, calling `tick` about every
/// `every` meanwhile. Returns the first worker's error; re-raises a
/// worker's panic.
fn workload(run: &Run, seed: u64, every: Duration, mut tick: impl FnMut()) -> Result<(), CliError> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..run.threads)
            .map(|t| s.spawn(move || worker::worker(run, t, seed)))
            .collect();
        let mut last = Instant::now();
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
            if last.elapsed() >= every {
                tick();
                last = Instant::now();
            }
        }
        let mut result = Ok(());
        for h in handles {
            match h.join() {
                Ok(r) => result = result.and(r),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        result
    })
}
