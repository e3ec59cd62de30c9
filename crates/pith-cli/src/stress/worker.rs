//! One stress thread: random writes of its own keys, and reads, snapshot
//! reads and scans of all keys, each checked against the expected state.
//!
//! Ownership: key `i` belongs to thread `i % threads`, and only its owner
//! writes it, one write at a time. So the owner knows each of its keys'
//! exact version; any other thread knows a window: a read that loads the
//! key's acknowledged version, reads the database, then loads its pending
//! version must find a version in between (see `model::Model::allowed`).
//! A write of version `v` goes: `Expected::begin(v)`, the database write,
//! `Expected::ack(v)`. A batch touches only the owner's keys (sometimes
//! one key twice: the later operation wins).
//!
//! Flushes, full compactions and `verify()` calls come on a clock (see
//! `MAINTENANCE_SECONDS`), on top of the flushes and merges the small
//! memtable causes.
//!
//! Snapshots are held across a random number of the thread's operations
//! (so flushes and merges run under them) and then read in full, key by
//! key and by a scan, which must agree with the reads made earlier through
//! the same snapshot. Scans sometimes reverse direction for one step and
//! back, which must land on the neighbouring keys the scan already saw.
//!
//! A worker belongs to its thread; everything it shares ([`Run`]) is
//! `Sync`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use pith::{DbIterator, Snapshot, WriteBatch, WriteOptions, DB};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::expected::Expected;
use super::model::{mix, Found, Model};
use super::report::{Counts, Fail, Mismatch, Op, Reporter};
use super::scan::{Dir, ScanCheck};
use super::walk;
use crate::CliError;

/// What the worker threads of one run share.
pub struct Run<'a> {
    /// The database.
    pub db: &'a DB,
    /// Keys and values.
    pub model: &'a Model,
    /// Versions per key.
    pub expected: &'a Expected,
    /// Worker threads (owners).
    pub threads: u32,
    /// Write with `WriteOptions::synced()`.
    pub sync: bool,
    /// When workers stop.
    pub deadline: Instant,
    /// Operation counters.
    pub counts: &'a Counts,
    /// Mismatches and the stop flag.
    pub report: &'a Reporter,
}

/// A snapshot held across operations.
struct Held {
    snap: Snapshot,
    lo: u32,
    hi: u32,
    before: Vec<u32>,
    after: Vec<u32>,
    /// Outcomes of reads already made through it.
    seen: HashMap<u32, Found>,
    /// The operation count at which it is checked in full and dropped.
    until: u64,
}

/// Mean seconds between `flush()`, `compact()` and `verify()` calls of
/// the whole run (each thread calls them `threads` times less often):
/// by the clock, so a fast build does not merge all the time and a slow
/// one still merges.
const MAINTENANCE_SECONDS: [f64; 3] = [2.0, 8.0, 8.0];

struct Worker<'a> {
    run: &'a Run<'a>,
    tid: u32,
    own: u32,
    rng: StdRng,
    ops: u64,
    held: Option<Held>,
    /// When this thread next flushes, compacts, verifies.
    next: [Instant; 3],
}

/// Runs thread `tid`'s workload until the deadline or a mismatch anywhere.
/// Mismatches go to the reporter; an error is returned (and stops the
/// others).
pub fn worker(run: &Run, tid: u32, seed: u64) -> Result<(), CliError> {
    let mut w = Worker {
        run,
        tid,
        own: (run.model.keys - tid).div_ceil(run.threads),
        rng: StdRng::seed_from_u64(mix(seed ^ mix(u64::from(tid) + 1))),
        ops: 0,
        held: None,
        next: [Instant::now(); 3],
    };
    for (k, &mean) in MAINTENANCE_SECONDS.iter().enumerate() {
        w.schedule(k, mean);
    }
    let mut result = Ok(());
    loop {
        let now = Instant::now();
        if result.is_err() || now >= run.deadline || run.report.stopped() {
            break;
        }
        result = w.step(now);
    }
    if result.is_ok() && !run.report.stopped() {
        if let Some(h) = w.held.take() {
            result = w.check_held(h);
        }
    }
    match result {
        Ok(()) => Ok(()),
        Err(Fail::Mismatch(m)) => {
            run.report.mismatch(m);
            Ok(())
        }
        Err(Fail::Error(e)) => {
            run.report.stop();
            Err(e)
        }
    }
}

impl Worker<'_> {
    fn count(&self, op: Op, by: u64) {
        self.run.counts.add(op, by);
    }

    /// Sets when maintenance call `k` (flush, compact, verify) is next due.
    fn schedule(&mut self, k: usize, mean: f64) {
        let gap = self
            .rng
            .gen_range(0.0..2.0 * mean * f64::from(self.run.threads));
        if let Some(n) = self.next.get_mut(k) {
            *n = Instant::now() + Duration::from_secs_f64(gap);
        }
    }

    fn step(&mut self, now: Instant) -> Result<(), Fail> {
        self.ops += 1;
        let db = self.run.db;
        let due = self.next.iter().position(|&t| t <= now);
        if let Some(k) = due {
            let op = match k {
                0 => {
                    db.flush()?;
                    Op::Flush
                }
                1 => {
                    db.compact()?;
                    Op::Compact
                }
                _ => {
                    db.verify()?;
                    Op::Verify
                }
            };
            self.count(op, 1);
            self.schedule(k, MAINTENANCE_SECONDS.get(k).copied().unwrap_or(8.0));
            return Ok(());
        }
        match self.rng.gen_range(0..1000) {
            0..=249 => self.write_one(),
            250..=349 => self.write_batch(),
            350..=549 => {
                let i = self.rng.gen_range(0..self.run.model.keys);
                self.get(i)
            }
            550..=649 => {
                let i = self.own_key();
                self.get(i)
            }
            650..=699 => self.snapshot_op(),
            700..=849 => self.scan(Dir::Forward),
            _ => self.scan(Dir::Backward),
        }
    }

    fn own_key(&mut self) -> u32 {
        self.tid + self.run.threads * self.rng.gen_range(0..self.own)
    }

    fn options(&self) -> WriteOptions {
        if self.run.sync {
            WriteOptions::synced()
        } else {
            WriteOptions::default()
        }
    }

    /// Adds the next version of own key `i` to `batch`; returns it.
    fn stage(&self, i: u32, batch: &mut WriteBatch) -> Result<(u32, bool), Fail> {
        let v = self.run.expected.pending(i) + 1;
        self.run.expected.begin(i, v)?;
        let key = self.run.model.key(i);
        let put = self.run.model.is_put(i, v);
        if put {
            batch.put(key, self.run.model.value(i, v));
        } else {
            batch.delete(key);
        }
        Ok((v, put))
    }

    fn write_one(&mut self) -> Result<(), Fail> {
        let i = self.own_key();
        self.write_key(i)
    }

    /// Writes the next version of own key `i`.
    fn write_key(&mut self, i: u32) -> Result<(), Fail> {
        let mut batch = WriteBatch::new();
        let (v, put) = self.stage(i, &mut batch)?;
        let (db, model) = (self.run.db, self.run.model);
        match (self.run.sync, put) {
            (false, true) => db.put(model.key(i), model.value(i, v))?,
            (false, false) => db.delete(model.key(i))?,
            (true, _) => db.write(self.options(), batch)?,
        }
        self.run.expected.ack(i, v)?;
        self.count(if put { Op::Put } else { Op::Delete }, 1);
        Ok(())
    }

    fn write_batch(&mut self) -> Result<(), Fail> {
        let n = self.rng.gen_range(2..=8);
        let mut batch = WriteBatch::new();
        let mut touched: Vec<(u32, u32)> = Vec::with_capacity(n);
        for _ in 0..n {
            let again = !touched.is_empty() && self.rng.gen_ratio(1, 8);
            let i = match touched.get(self.rng.gen_range(0..touched.len().max(1))) {
                Some(&(i, _)) if again => i,
                _ => self.own_key(),
            };
            let (v, _) = self.stage(i, &mut batch)?;
            match touched.iter_mut().find(|t| t.0 == i) {
                Some(t) => t.1 = v,
                None => touched.push((i, v)),
            }
        }
        self.run.db.write(self.options(), batch)?;
        for (i, v) in touched {
            self.run.expected.ack(i, v)?;
        }
        self.count(Op::Batch, 1);
        self.count(Op::BatchEntry, n as u64);
        Ok(())
    }

    /// Checks a read of key `i` against the window `before..=after`.
    fn check(
        &self,
        what: &str,
        i: u32,
        (before, after): (u32, u32),
        read: Option<&[u8]>,
    ) -> Result<Found, Fail> {
        self.count(Op::Checked, 1);
        let model = self.run.model;
        let found = model.classify(i, read);
        match found {
            Ok(f) if model.allowed(i, before, after, f) => Ok(f),
            _ => Err(Fail::Mismatch(Mismatch {
                key: String::from_utf8_lossy(&model.key(i)).into_owned(),
                check: what.to_string(),
                expected: model.describe_expected(i, before, after),
                found: model.describe_found(i, read),
            })),
        }
    }

    fn get(&mut self, i: u32) -> Result<(), Fail> {
        let before = self.run.expected.acked(i);
        let read = self.run.db.get(self.run.model.key(i))?;
        let after = self.run.expected.pending(i);
        self.check("get", i, (before, after), read.as_deref())?;
        self.count(Op::Get, 1);
        Ok(())
    }

    /// A random range of at most `max` keys.
    fn range(&mut self, max: u32) -> (u32, u32) {
        let keys = self.run.model.keys;
        let lo = self.rng.gen_range(0..keys);
        let n = self.rng.gen_range(1..=max);
        (lo, lo.saturating_add(n).min(keys))
    }

    fn acked_in(&self, (lo, hi): (u32, u32)) -> Vec<u32> {
        (lo..hi).map(|i| self.run.expected.acked(i)).collect()
    }

    fn pending_in(&self, (lo, hi): (u32, u32)) -> Vec<u32> {
        (lo..hi).map(|i| self.run.expected.pending(i)).collect()
    }

    fn snapshot_op(&mut self) -> Result<(), Fail> {
        match self.held.take() {
            None => {
                let (lo, hi) = self.range(64);
                let before = self.acked_in((lo, hi));
                let snap = self.run.db.snapshot();
                let after = self.pending_in((lo, hi));
                let until = self.ops + self.rng.gen_range(0..2_000);
                // Overwrite some of this thread's keys under the snapshot
                // at once, so reads through it must skip newer versions.
                let own: Vec<u32> = (lo..hi)
                    .filter(|i| i % self.run.threads == self.tid)
                    .collect();
                for _ in 0..own.len().min(3) {
                    if let Some(&i) = own.get(self.rng.gen_range(0..own.len())) {
                        self.write_key(i)?;
                    }
                }
                self.held = Some(Held {
                    snap,
                    lo,
                    hi,
                    before,
                    after,
                    seen: HashMap::new(),
                    until,
                });
                self.count(Op::Snapshot, 1);
                Ok(())
            }
            Some(h) if self.ops >= h.until => self.check_held(h),
            Some(mut h) => {
                let i = self.rng.gen_range(h.lo..h.hi);
                self.read_held(&mut h, i)?;
                self.held = Some(h);
                Ok(())
            }
        }
    }

    /// Reads key `i` through a held snapshot: in its window, and the same
    /// as any earlier read through it.
    fn read_held(&self, h: &mut Held, i: u32) -> Result<(), Fail> {
        let k = (i - h.lo) as usize;
        let window = (
            h.before.get(k).copied().unwrap_or(0),
            h.after.get(k).copied().unwrap_or(0),
        );
        let read = self.run.db.get_at(&h.snap, self.run.model.key(i))?;
        let found = self.check("snapshot get", i, window, read.as_deref())?;
        self.count(Op::SnapshotRead, 1);
        match h.seen.insert(i, found) {
            Some(earlier) if earlier != found => Err(Fail::Mismatch(Mismatch {
                key: String::from_utf8_lossy(&self.run.model.key(i)).into_owned(),
                check: "repeated snapshot get".into(),
                expected: format!("{earlier:?}, as the earlier read through this snapshot"),
                found: format!("{found:?}"),
            })),
            _ => Ok(()),
        }
    }

    /// Reads every key of a held snapshot, then scans it.
    fn check_held(&mut self, mut h: Held) -> Result<(), Fail> {
        for i in h.lo..h.hi {
            self.read_held(&mut h, i)?;
        }
        let exact: Vec<Found> = (h.lo..h.hi)
            .map(|i| h.seen.get(&i).copied().unwrap_or(Found::Absent))
            .collect();
        let dir = if self.rng.gen() {
            Dir::Forward
        } else {
            Dir::Backward
        };
        let mut it = self.run.db.iter_at(&h.snap);
        let chk = ScanCheck::new(
            self.run.model,
            "snapshot scan",
            (h.lo, h.hi),
            h.before,
            h.after,
            dir,
        )
        .exact(exact);
        self.walk(&mut it, (h.lo, h.hi), chk)
    }

    fn scan(&mut self, dir: Dir) -> Result<(), Fail> {
        let model = self.run.model;
        let db = self.run.db;
        let variant = self.rng.gen_range(0..4);
        if dir == Dir::Backward || variant >= 2 {
            let range = self.range(200);
            let before = self.acked_in(range);
            let mut it = db.iter();
            let after = self.pending_in(range);
            let chk = ScanCheck::new(model, "iterator scan", range, before, after, dir);
            return self.walk(&mut it, range, chk);
        }
        // The `Scan` API: a range, or a prefix of the decimal index.
        let (range, before, scan, what) = if variant == 0 {
            let (lo, hi) = self.range(200);
            let before = self.acked_in((lo, hi));
            let start = Model::bound(lo);
            let end = (hi < model.keys).then(|| Model::bound(hi));
            let scan = db.range(Some(start.as_slice()), end.as_deref());
            ((lo, hi), before, scan, "range scan")
        } else {
            let digits = self.rng.gen_range(5..=8u32);
            let block = 10u32.pow(8 - digits);
            let lo = self.rng.gen_range(0..model.keys) / block * block;
            let hi = lo.saturating_add(block).min(model.keys);
            let before = self.acked_in((lo, hi));
            let mut prefix = Model::bound(lo);
            prefix.truncate(1 + digits as usize);
            ((lo, hi), before, db.prefix(&prefix), "prefix scan")
        };
        let after = self.pending_in(range);
        let mut chk = ScanCheck::new(model, what, range, before, after, Dir::Forward);
        let mut n = 0;
        for kv in scan {
            let (k, v) = kv?;
            chk.see(&k, &v)?;
            n += 1;
        }
        chk.finish()?;
        self.count(Op::ScanForward, 1);
        self.count(Op::ScanKey, n);
        self.count(Op::Checked, chk.checked);
        Ok(())
    }

    /// Walks `range` with `it` (see `walk.rs`) and counts it.
    fn walk(&mut self, it: &mut DbIterator, range: (u32, u32), chk: ScanCheck) -> Result<(), Fail> {
        let dir = chk.dir();
        let done = walk::walk(it, self.run.model, range, chk, &mut self.rng)?;
        let op = match dir {
            Dir::Forward => Op::ScanForward,
            Dir::Backward => Op::ScanBackward,
        };
        self.count(op, 1);
        self.count(Op::ScanKey, done.keys);
        self.count(Op::DirectionSwitch, done.switches);
        self.count(Op::Checked, done.checked);
        Ok(())
    }
}
