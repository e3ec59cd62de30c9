//! What a stress run counts and finds: operation counters, the mismatches
//! seen, the progress line and the final summary.
//!
//! Counters are relaxed atomics (they are statistics, read while workers
//! run). The first mismatch any thread records sets the stop flag, which
//! every worker loop polls, so a run ends soon after its first failure;
//! up to [`KEEP`] mismatches are kept for the report, all are counted.
//!
//! [`Fail`] is why one operation of a worker stopped: a mismatch or an
//! error.
//!
//! A child process of `--kill-every` mode sends its counters to the parent
//! as one `stats n0 n1 ...` line on stdout ([`Counts::line`],
//! [`Counts::parse_line`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::CliError;

/// Mismatches kept for the report.
const KEEP: usize = 20;

/// A counted kind of operation.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// Single-key puts.
    Put,
    /// Single-key deletes.
    Delete,
    /// Multi-key write batches.
    Batch,
    /// Operations inside batches.
    BatchEntry,
    /// Point gets at the latest state.
    Get,
    /// Snapshots taken.
    Snapshot,
    /// Reads through a snapshot.
    SnapshotRead,
    /// Forward scans.
    ScanForward,
    /// Backward scans.
    ScanBackward,
    /// Keys returned by scans.
    ScanKey,
    /// Iterator direction switches checked mid-scan.
    DirectionSwitch,
    /// `flush()` calls.
    Flush,
    /// `compact()` calls.
    Compact,
    /// `verify()` calls while writers run.
    Verify,
    /// Individual key reads (or absences) checked against the expectation.
    Checked,
}

const OPS: usize = 15;

/// One value per [`Op`].
pub type Values = [u64; OPS];

const NAMES: [&str; OPS] = [
    "puts",
    "deletes",
    "batches",
    "batch ops",
    "gets",
    "snapshots",
    "snapshot reads",
    "forward scans",
    "backward scans",
    "scanned keys",
    "direction switches",
    "flushes",
    "compactions",
    "verifies",
    "reads checked",
];

/// Operation counters.
#[derive(Default)]
pub struct Counts {
    n: [AtomicU64; OPS],
}

impl Counts {
    /// Counts `by` more of `op`.
    pub fn add(&self, op: Op, by: u64) {
        if let Some(c) = self.n.get(op as usize) {
            c.fetch_add(by, Ordering::Relaxed);
        }
    }

    /// The current values.
    pub fn get(&self) -> Values {
        std::array::from_fn(|i| self.n.get(i).map_or(0, |c| c.load(Ordering::Relaxed)))
    }

    /// Adds a set of values (another process's).
    pub fn add_all(&self, values: &Values) {
        for (c, v) in self.n.iter().zip(values) {
            c.fetch_add(*v, Ordering::Relaxed);
        }
    }

    /// The line a child sends its parent.
    pub fn line(&self) -> String {
        let mut s = String::from("stats");
        for v in self.get() {
            s.push_str(&format!(" {v}"));
        }
        s
    }

    /// Values from a [`Counts::line`], `None` for any other line.
    pub fn parse_line(line: &str) -> Option<Values> {
        let rest = line.strip_prefix("stats ")?;
        let v: Vec<u64> = rest
            .split(' ')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        v.try_into().ok()
    }
}

/// Top-level operations in `values`.
pub fn ops(values: &Values) -> u64 {
    [
        Op::Put,
        Op::Delete,
        Op::Batch,
        Op::Get,
        Op::Snapshot,
        Op::ScanForward,
        Op::ScanBackward,
        Op::Flush,
        Op::Compact,
        Op::Verify,
    ]
    .iter()
    .map(|&o| values.get(o as usize).copied().unwrap_or(0))
    .sum()
}

/// One read the expected state rules out.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// The key (lossy text).
    pub key: String,
    /// Which check: "get", "scan", "recovery", ...
    pub check: String,
    /// What the expected state allows.
    pub expected: String,
    /// What the database returned.
    pub found: String,
}

impl Mismatch {
    /// The error a run with this as its first mismatch returns.
    pub fn into_error(self, count: u64) -> CliError {
        CliError::StressMismatch {
            count,
            key: self.key,
            check: self.check,
            expected: self.expected,
            found: self.found,
        }
    }
}

/// Collects mismatches and tells workers to stop.
#[derive(Default)]
pub struct Reporter {
    stop: AtomicBool,
    count: AtomicU64,
    kept: Mutex<Vec<Mismatch>>,
}

impl Reporter {
    /// Records a mismatch (printed at once) and stops the run.
    pub fn mismatch(&self, m: Mismatch) {
        let n = self.count.fetch_add(1, Ordering::Relaxed);
        self.stop.store(true, Ordering::Release);
        if (n as usize) < KEEP {
            eprintln!(
                "stress: MISMATCH in {} of key {}: expected {}, found {}",
                m.check, m.key, m.expected, m.found
            );
            self.kept.lock().unwrap_or_else(|p| p.into_inner()).push(m);
        }
    }

    /// Asks workers to stop (an error, not a mismatch, ended the run).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// True once workers should stop.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Mismatches found.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The first mismatch, as the run's error.
    pub fn error(&self) -> Option<CliError> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.first().cloned().map(|m| m.into_error(self.count()))
    }
}

/// Outcome of `--kill-every` recoveries.
#[derive(Clone, Copy, Debug, Default)]
pub struct Recoveries {
    /// Children killed (and the database reopened and checked).
    pub restarts: u64,
    /// Writes in flight at a kill that turned out to have landed.
    pub landed: u64,
    /// Writes in flight at a kill that had not.
    pub lost: u64,
    /// Writes in flight whose outcome reads cannot tell (delete over
    /// absent).
    pub unknown: u64,
}

/// The progress line.
pub fn progress(elapsed: f64, total: f64, values: &Values, restarts: u64) {
    let n = ops(values);
    let checked = values.get(Op::Checked as usize).copied().unwrap_or(0);
    eprintln!(
        "stress: {elapsed:>5.0}s/{total:.0}s  ops {n} ({:.0}/s)  reads checked {checked}  restarts {restarts}",
        n as f64 / elapsed.max(1e-3)
    );
}

/// The final summary, on stdout.
pub fn summary(head: &str, seconds: f64, values: &Values, rec: &Recoveries, mismatches: u64) {
    println!("{head}");
    println!("  seconds             {seconds:.1}");
    println!(
        "  operations          {} ({:.0}/s)",
        ops(values),
        ops(values) as f64 / seconds.max(1e-3)
    );
    for (name, v) in NAMES.iter().zip(values) {
        println!("  {name:<19} {v}");
    }
    println!("  restarts            {}", rec.restarts);
    if rec.restarts > 0 {
        println!(
            "  in flight at kills  {} landed, {} lost, {} undecidable (delete over absent)",
            rec.landed, rec.lost, rec.unknown
        );
    }
    println!("  mismatches          {mismatches}");
}

/// Why an operation stopped.
pub enum Fail {
    /// A read the expected state rules out.
    Mismatch(Mismatch),
    /// The database or the expected-state file failed.
    Error(CliError),
}

impl From<Mismatch> for Fail {
    fn from(m: Mismatch) -> Self {
        Fail::Mismatch(m)
    }
}

impl From<CliError> for Fail {
    fn from(e: CliError) -> Self {
        Fail::Error(e)
    }
}

impl From<pith::Error> for Fail {
    fn from(e: pith::Error) -> Self {
        Fail::Error(e.into())
    }
}
