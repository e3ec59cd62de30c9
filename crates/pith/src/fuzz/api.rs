//! An API-sequence driver: random operations, injected I/O errors and
//! power cuts, checked against a `BTreeMap` model (after redb's
//! `fuzz_redb`). The power-loss, I/O-error and fuzz tests all run it.
//!
//! The database lives on a [`FaultFs`] over a [`MemFs`]. The model keeps
//! the state after every operation of the current *epoch* (since the last
//! reopen), and two marks: the last state acknowledged (whose log record
//! was written: a deferred write's is only after `DB::write_log` or a
//! later write that was not deferred), and the last one made durable (a
//! synced write, a flush, a compaction, a clean close).
//! When an operation fails, or the power is cut, the driver drops the
//! handle, clears the faults, restores power and reopens; the database
//! must then hold exactly one of the epoch's states, no older than the
//! durable mark after a power cut and no older than the acknowledged mark
//! otherwise (an I/O error loses nothing the OS already has), and
//! `verify` must pass. While no failure has happened, every read must
//! match the model exactly; right after a failed operation (before the
//! reopen) reads must still work and show the acknowledged state. Any violation panics with a description.
//!
//! Operations apply to 48 keys; batches hold 1-4 puts and deletes, so a
//! half-applied batch is a state the model never passed through and is
//! caught. Keys 32 to 47 live in a second column family (created with the
//! database), so batches span families, flushes build a generation of two
//! memtables, and recovery replays both from one log. Some puts carry a deadline, through the log, flushes and merges:
//! one in 2100, which is stored and never reached, or one in 1970, which
//! makes the put read as a delete (and builds turn it into a tombstone).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::env::{CallKind, FaultFs, Injected, MemFs};
use crate::{ColumnFamily, Options, Records, WriteBatch, WriteOptions, DB};

/// One operation of a sequence.
#[derive(Clone, Debug)]
pub enum Op {
    /// A batch of puts (`Some(value size)`) and deletes (`None`), by key
    /// index, synced or not.
    Write {
        /// The operations.
        ops: Vec<(u8, Option<u16>)>,
        /// Sync the log before acknowledging.
        sync: bool,
        /// Leave the log record buffered (`WriteOptions::defer_log`).
        defer: bool,
    },
    /// `DB::write_log`: deferred writes' records reach the log.
    WriteLog,
    /// `DB::bulk_load_families` of puts (key index, value size) into
    /// both families at once: all of them or none.
    BulkLoad {
        /// The puts; the last of a repeated key wins.
        puts: Vec<(u8, u16)>,
    },
    /// A point read of a key, checked against the model.
    Get(u8),
    /// A full scan, checked against the model.
    Scan,
    /// `DB::flush`.
    Flush,
    /// `DB::compact`.
    Compact,
    /// A clean close and reopen.
    Reopen,
    /// Fail the call this many calls from now.
    FailCall {
        /// Calls from now (1: the next one).
        after: u16,
        /// ENOSPC instead of EIO.
        no_space: bool,
    },
    /// Fail every call of a kind on files whose name contains a string,
    /// until the next recovery.
    FailKind {
        /// The kind of call.
        kind: CallKind,
        /// Part of the file name.
        name: &'static str,
        /// ENOSPC instead of EIO.
        no_space: bool,
    },
    /// Cut the power this many calls from now, tearing unsynced writes
    /// with this seed when given.
    PowerCut {
        /// Calls from now (1: the next one).
        after: u16,
        /// Tear seed.
        tear: Option<u64>,
    },
}

/// Counts of what a run did, for reports.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Operations run.
    pub ops: u64,
    /// Operations that failed (after an injected failure).
    pub failed_ops: u64,
    /// Recoveries checked.
    pub recoveries: u64,
    /// Power cuts that happened.
    pub power_cuts: u64,
    /// Failures injected.
    pub injected: u64,
    /// File-system calls made.
    pub calls: u64,
}

/// The engine under test and its model.
pub struct Driver {
    mem: MemFs,
    fault: FaultFs,
    dir: PathBuf,
    db: Option<DB>,
    /// States of this epoch; the last is the model.
    states: Vec<BTreeMap<u8, Vec<u8>>>,
    acked: usize,
    durable: usize,
    /// A failure was injected since the last recovery: reads may fail.
    faulty: bool,
    counter: u64,
    summary: Summary,
    options: fn(Arc<dyn crate::env::Fs>) -> Options,
}

/// Options that exercise flushes and merges on a few kilobytes.
pub fn small_options(fs: Arc<dyn crate::env::Fs>) -> Options {
    Options {
        memtable_bytes: 6 << 10,
        merge_trigger: 2,
        max_merge_width: 3,
        stall_segments: 6,
        fs,
        ..Options::default()
    }
}

/// Options under which the first model is trained from the live memtable
/// (at 16 KiB of a 64 KiB memtable) while writes go on; point reads read
/// stored values as `pread` would (`ValueReads::Pread`: a copy of each
/// record's bytes, from `MemFs`), where the other options read them in
/// place.
pub fn early_training_options(fs: Arc<dyn crate::env::Fs>) -> Options {
    Options {
        value_reads: crate::ValueReads::Pread,
        memtable_bytes: 64 << 10,
        merge_zip: pith_zip::Options {
            sample_bytes: 16 << 10,
            ..pith_zip::Options::default()
        },
        ..small_options(fs)
    }
}

/// Options under which the background thread works only while the caller
/// waits for it (no automatic flush or merge: memtables of 1 MiB, merges
/// only on `compact`), so a sequence of operations makes the same
/// file-system calls in the same order every time.
pub fn deterministic_options(fs: Arc<dyn crate::env::Fs>) -> Options {
    Options {
        memtable_bytes: 1 << 20,
        merge_trigger: 50,
        stall_segments: 100,
        fs,
        ..Options::default()
    }
}

/// A deadline no run reaches: 2100-01-01, in milliseconds.
const YEAR_2100_MS: u64 = 4_102_444_800_000;

fn key(k: u8) -> Vec<u8> {
    format!("key{:03}", k % 48).into_bytes()
}

/// The second column family, and the first key index in it.
const SIDE: &str = "side";
const SIDE_FROM: u8 = 32;

/// True when key `k` lives in the second family.
fn in_side(k: u8) -> bool {
    k % 48 >= SIDE_FROM
}

/// The second family's handle in `db`; it must survive every recovery.
fn side(db: &DB) -> ColumnFamily {
    db.family(SIDE)
        .unwrap_or_else(|| panic!("column family {SIDE:?} is gone after a recovery"))
}

impl Default for Driver {
    fn default() -> Self {
        Driver::new()
    }
}

impl Driver {
    /// A new database on a fresh in-memory file system.
    pub fn new() -> Self {
        Driver::with_options(small_options)
    }

    /// A new database whose options `options` makes from the file system
    /// to use (for example [`deterministic_options`]).
    pub fn with_options(options: fn(Arc<dyn crate::env::Fs>) -> Options) -> Self {
        let mem = MemFs::new();
        let fault = FaultFs::over_mem(mem.clone());
        let mut d = Driver {
            mem,
            fault,
            dir: PathBuf::from("/db"),
            db: None,
            states: vec![BTreeMap::new()],
            acked: 0,
            durable: 0,
            faulty: false,
            counter: 0,
            summary: Summary::default(),
            options,
        };
        let db = d
            .open()
            .expect("creating a database on a healthy file system");
        db.create_family(SIDE)
            .expect("creating a family on a healthy file system");
        d.db = Some(db);
        d
    }

    fn open(&self) -> crate::Result<DB> {
        DB::open(&self.dir, (self.options)(Arc::new(self.fault.clone())))
    }

    /// The in-memory file system (to inspect files).
    pub fn mem(&self) -> &MemFs {
        &self.mem
    }

    /// The fault injector.
    pub fn fault(&self) -> &FaultFs {
        &self.fault
    }

    /// The database directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the run did so far.
    pub fn summary(&self) -> Summary {
        let mut s = self.summary.clone();
        s.injected = self.fault.injected();
        s.calls = self.fault.calls();
        s
    }

    fn model(&self) -> &BTreeMap<u8, Vec<u8>> {
        // Never empty: an epoch starts with one state.
        &self.states[self.states.len() - 1]
    }

    /// Runs one operation; panics when the engine breaks its contract.
    pub fn run(&mut self, op: &Op) {
        self.summary.ops += 1;
        let ok = self.attempt(op);
        if std::env::var_os("PITH_API_TRACE").is_some() {
            eprintln!(
                "op {op:?}: ok {ok}, dead {}, calls {}, counter {}",
                self.fault.is_dead(),
                self.fault.calls(),
                self.counter
            );
        }
        if !ok && !self.fault.is_dead() {
            self.check_reads_after_failure();
        }
        if !ok || self.fault.is_dead() {
            self.summary.failed_ops += u64::from(!ok);
            self.recover();
        }
    }

    /// Closes and reopens, checking the recovered state.
    pub fn finish(&mut self) {
        self.recover();
    }

    /// Cuts the power now (if no cut happened yet), then recovers.
    pub fn cut_power_now(&mut self, tear: Option<u64>) {
        self.faulty = true;
        // A MemFs is underneath, so cuts are available.
        let _ = self.fault.cut_power_now(tear);
        self.recover();
    }

    /// Runs `op` against the open database; false when it failed.
    fn attempt(&mut self, op: &Op) -> bool {
        let Some(db) = self.db.as_ref() else {
            return false;
        };
        match op {
            Op::Write { ops, sync, defer } => {
                let mut batch = WriteBatch::new();
                let mut next = self.model().clone();
                let (side, default) = (side(db), db.default_family());
                for &(k, put) in ops {
                    let cf = if in_side(k) { &side } else { &default };
                    match put {
                        Some(len) => {
                            self.counter += 1;
                            let mut v = format!("v{}:", self.counter).into_bytes();
                            v.resize(usize::from(len % 700) + v.len(), b'a' + k % 26);
                            match len % 8 {
                                1 => {
                                    batch.put_expiring_cf(cf, key(k), &v, YEAR_2100_MS);
                                    next.insert(k % 48, v);
                                }
                                2 => {
                                    batch.put_expiring_cf(cf, key(k), &v, 1);
                                    next.remove(&(k % 48));
                                }
                                _ => {
                                    batch.put_cf(cf, key(k), &v);
                                    next.insert(k % 48, v);
                                }
                            }
                        }
                        None => {
                            batch.delete_cf(cf, key(k));
                            next.remove(&(k % 48));
                        }
                    }
                }
                if batch.is_empty() {
                    return true;
                }
                self.states.push(next);
                let options = WriteOptions {
                    sync: *sync,
                    defer_log: *defer,
                };
                match db.write(options, batch) {
                    Ok(()) => {
                        // A deferred write is visible, not yet logged
                        // (unless the buffer filled: the model does not
                        // count on that).
                        if *sync || !*defer {
                            self.acked = self.states.len() - 1;
                        }
                        if *sync {
                            self.durable = self.acked;
                        }
                        true
                    }
                    Err(e) => self.expect_failure(&e),
                }
            }
            Op::WriteLog => match db.write_log() {
                Ok(()) => {
                    self.acked = self.states.len() - 1;
                    true
                }
                Err(e) => self.expect_failure(&e),
            },
            Op::BulkLoad { puts } => {
                let mut next = self.model().clone();
                let (side, default) = (side(db), db.default_family());
                let (mut in_default, mut in_side_family) = (Records::new(), Records::new());
                for &(k, len) in puts {
                    self.counter += 1;
                    let mut v = format!("b{}:", self.counter).into_bytes();
                    v.resize(usize::from(len % 700) + v.len(), b'A' + k % 26);
                    next.insert(k % 48, v.clone());
                    match in_side(k) {
                        true => in_side_family.push(&key(k), &v),
                        false => in_default.push(&key(k), &v),
                    }
                }
                self.states.push(next);
                match db.bulk_load_families(vec![(&default, in_default), (&side, in_side_family)]) {
                    Ok(_) => {
                        // Durable when it returns, with every write before
                        // it (the load flushes the memtables first).
                        self.acked = self.states.len() - 1;
                        self.durable = self.acked;
                        true
                    }
                    Err(e) => self.expect_failure(&e),
                }
            }
            Op::Get(k) => match db.get_cf(
                &if in_side(*k) {
                    side(db)
                } else {
                    db.default_family()
                },
                key(*k),
            ) {
                Ok(v) => {
                    if !self.faulty {
                        assert_eq!(
                            v.as_ref(),
                            self.model().get(&(k % 48)),
                            "get of {:?} disagrees with the model",
                            String::from_utf8_lossy(&key(*k))
                        );
                    }
                    true
                }
                Err(e) => self.expect_failure(&e),
            },
            Op::Scan => match scan(db) {
                Ok(got) => {
                    if !self.faulty {
                        assert_eq!(&got, self.model(), "scan disagrees with the model");
                    }
                    true
                }
                Err(e) => self.expect_failure(&e),
            },
            Op::Flush | Op::Compact => {
                let r = if matches!(op, Op::Flush) {
                    db.flush()
                } else {
                    db.compact()
                };
                match r {
                    Ok(()) => {
                        // The switch synced the old log, deferred records
                        // first.
                        self.acked = self.states.len() - 1;
                        self.durable = self.acked;
                        true
                    }
                    Err(e) => self.expect_failure(&e),
                }
            }
            Op::Reopen => {
                let db = self.db.take();
                let closed = db.map_or(Ok(()), DB::close);
                if let Err(e) = closed {
                    return self.expect_failure(&e);
                }
                self.acked = self.states.len() - 1;
                self.durable = self.acked;
                match self.open() {
                    Ok(db) => {
                        self.db = Some(db);
                        self.check_state(self.acked)
                    }
                    Err(e) => self.expect_failure(&e),
                }
            }
            Op::FailCall { after, no_space } => {
                let at = self.fault.calls() + u64::from((*after).max(1));
                self.fault.fail_call(at, injected(*no_space));
                self.faulty = true;
                true
            }
            Op::FailKind {
                kind,
                name,
                no_space,
            } => {
                self.fault
                    .fail_matching(Some(*kind), name, injected(*no_space));
                self.faulty = true;
                true
            }
            Op::PowerCut { after, tear } => {
                let at = self.fault.calls() + u64::from((*after).max(1));
                // A MemFs is underneath, so cuts are available.
                let _ = self.fault.cut_power_at(at, *tear);
                self.faulty = true;
                true
            }
        }
    }

    /// An operation failed: fine after an injected failure (the error must
    /// be a typed one, checked by its variant), a bug otherwise.
    fn expect_failure(&mut self, e: &crate::Error) -> bool {
        assert!(
            self.faulty,
            "an operation failed with no failure injected: {e}"
        );
        let root = e.root();
        assert!(
            matches!(
                root,
                crate::Error::Io { .. }
                    | crate::Error::NoSpace { .. }
                    | crate::Error::Closing
                    | crate::Error::Poisoned(_)
            ),
            "an injected I/O failure surfaced as {e:?}"
        );
        false
    }

    /// After a failed operation, before any recovery: reads of what was
    /// written before still work and are correct (they touch no file: the
    /// memtables are in memory and segments are mapped).
    fn check_reads_after_failure(&self) {
        let Some(db) = self.db.as_ref() else {
            return;
        };
        let got = scan(db).unwrap_or_else(|e| panic!("a read failed after a write failed: {e}"));
        assert!(
            self.states[self.acked..].contains(&got),
            "after a failed operation, reads show a state the writes never passed through"
        );
    }

    /// Drops the handle, clears every fault, reopens, and checks that the
    /// database holds an allowed state.
    fn recover(&mut self) {
        let cut = self.fault.is_dead();
        drop(self.db.take());
        if self.fault.is_dead() {
            self.summary.power_cuts += 1;
        }
        let cut = cut || self.fault.is_dead();
        self.fault.clear();
        self.fault.restore_power();
        self.db = Some(self.open().unwrap_or_else(|e| {
            panic!(
                "reopen after {} failed: {e}",
                if cut { "a power cut" } else { "an I/O error" }
            )
        }));
        // The faults are cleared: nothing pending can fail the check.
        self.faulty = false;
        self.check_state(if cut { self.durable } else { self.acked });
    }

    /// The database must hold one of the states from `oldest` on; it
    /// becomes the start of a new epoch.
    ///
    /// With faults still pending (a clean reopen while they wait), a
    /// `verify` that fails is the operation failing (false), not a bug;
    /// the check runs all the same, so the calls it makes do not depend on
    /// whether a fault is armed.
    fn check_state(&mut self, oldest: usize) -> bool {
        self.summary.recoveries += 1;
        let db = self.db.as_ref().expect("open");
        let got = scan(db).unwrap_or_else(|e| panic!("scan after recovery failed: {e}"));
        let found = (oldest..self.states.len())
            .rev()
            .find(|&i| self.states[i] == got);
        if found.is_none() {
            let model = self.model();
            let missing: Vec<_> = model.keys().filter(|k| !got.contains_key(k)).collect();
            let extra: Vec<_> = got.keys().filter(|k| !model.contains_key(k)).collect();
            let changed: Vec<_> = got
                .iter()
                .filter(|(k, v)| model.get(k).is_some_and(|m| m != *v))
                .map(|(k, v)| {
                    (
                        k,
                        String::from_utf8_lossy(&v[..v.len().min(12)]).into_owned(),
                    )
                })
                .collect();
            let older = self.states.iter().position(|s| *s == got);
            panic!(
                "recovered state is none the writes passed through at or after state {oldest} of {}: against the newest, missing {missing:?}, extra {extra:?}, changed {changed:?}; equal to state {older:?}",
                self.states.len() - 1
            );
        }
        match db.verify() {
            Ok(report) => assert!(report.segments <= 64),
            Err(e) if self.faulty => return self.expect_failure(&e),
            Err(e) => panic!("verify after recovery: {e}"),
        }
        self.states = vec![got];
        self.acked = 0;
        self.durable = 0;
        true
    }
}

fn injected(no_space: bool) -> Injected {
    if no_space {
        Injected::NoSpace
    } else {
        Injected::Eio
    }
}

/// The whole database, both families, as the model's map (keys back to
/// their index), read at one snapshot.
fn scan(db: &DB) -> crate::Result<BTreeMap<u8, Vec<u8>>> {
    let mut out = BTreeMap::new();
    let snapshot = db.snapshot();
    for cf in [db.default_family(), side(db)] {
        for kv in db.range_cf_at(&cf, &snapshot, None, None)? {
            let (k, v) = kv?;
            let index = std::str::from_utf8(&k)
                .ok()
                .and_then(|s| s.strip_prefix("key"))
                .and_then(|s| s.parse::<u8>().ok())
                .filter(|&i| in_side(i) == (cf.name() == SIDE))
                .unwrap_or_else(|| {
                    panic!(
                        "a key the driver never wrote in family {}: {k:?}",
                        cf.name()
                    )
                });
            out.insert(index, v);
        }
    }
    Ok(out)
}

/// Decodes fuzzer bytes into operations: one byte picks the operation,
/// the next ones its arguments.
pub fn decode(data: &[u8]) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut it = data.iter().copied();
    let mut next = move || it.next();
    while let Some(b) = next() {
        let arg = next().unwrap_or(0);
        let op = match b % 16 {
            5 => {
                let n = 1 + usize::from(arg % 8);
                let puts = (0..n)
                    .map(|i| {
                        let k = next().unwrap_or(i as u8);
                        (k, u16::from(arg) * 5 + u16::from(k))
                    })
                    .collect();
                Op::BulkLoad { puts }
            }
            0..=4 => {
                let n = 1 + usize::from(arg % 4);
                let mut w = Vec::with_capacity(n);
                for i in 0..n {
                    let k = next().unwrap_or(i as u8);
                    let put = (k % 5 != 0).then(|| u16::from(arg) * 3 + u16::from(k));
                    w.push((k, put));
                }
                Op::Write {
                    ops: w,
                    sync: b & 0x10 != 0,
                    defer: b & 0x20 != 0,
                }
            }
            6 if b & 0x80 != 0 => Op::WriteLog,
            6 => Op::Get(arg),
            7 => Op::Scan,
            8 => Op::Flush,
            9 => Op::Compact,
            10 => Op::Reopen,
            11 | 12 => Op::FailCall {
                after: u16::from(arg) + 1,
                no_space: b & 0x20 != 0,
            },
            13 => Op::FailKind {
                kind: [
                    CallKind::Append,
                    CallKind::Sync,
                    CallKind::Create,
                    CallKind::Rename,
                ][usize::from(arg % 4)],
                name: [".wal", ".tmp", "MANIFEST", ".seg"][usize::from(arg / 4 % 4)],
                no_space: b & 0x20 != 0,
            },
            _ => Op::PowerCut {
                after: u16::from(arg) + 1,
                tear: (b & 0x40 != 0).then_some(u64::from(arg) * 7919),
            },
        };
        ops.push(op);
    }
    ops
}

/// Runs the operations `data` decodes to, then a final recovery.
pub fn api_sequence(data: &[u8]) {
    let ops = decode(data);
    if ops.len() > 400 {
        return;
    }
    let mut d = Driver::new();
    for op in &ops {
        d.run(op);
    }
    d.finish();
}
