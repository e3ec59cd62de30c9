//! Tests of the stress tool's own checks: that the model and the
//! expected-state file round-trip and reject damage, that a clean run
//! passes, and that every kind of wrong answer (a wrong version, a value
//! of another key, a resurrected or lost key, a half-applied batch, a key
//! out of order, a value changed behind the workload's back) is caught,
//! so the checks cannot be vacuous.

use std::path::Path;
use std::time::{Duration, Instant};

use pith::{WriteBatch, DB};

use super::expected::{Expected, Header};
use super::model::{Found, Model};
use super::report::{Counts, Op, Reporter};
use super::scan::{Dir, ScanCheck};
use super::worker::Run;
use super::*;

fn args(dir: &Path, seconds: f64) -> Args {
    Args {
        db: dir.join("db"),
        seconds,
        threads: 2,
        keys: 300,
        kill_every: None,
        seed: Some(42),
        value_bytes: 40,
        memtable_bytes: 16 << 10,
        sync: false,
        child: false,
    }
}

fn model() -> Model {
    Model {
        salt: 9,
        value_bytes: 50,
        keys: 1000,
    }
}

/// Runs a short clean workload in `dir` and returns its config.
fn clean_run(dir: &Path) -> Config {
    let cfg = Config::new(&args(dir, 1.0)).unwrap();
    let (counts, report) = (Counts::default(), Reporter::default());
    plain(&cfg, &counts, &report).unwrap();
    assert_eq!(report.count(), 0);
    cfg
}

/// Reconciles the database of `cfg` and returns the reporter.
fn reconcile(cfg: &Config) -> Reporter {
    let expected = cfg.open_expected(false).unwrap();
    let db = cfg.open_db().unwrap();
    let report = Reporter::default();
    recover::reconcile(
        &db,
        &model_of(&expected),
        &expected,
        &Counts::default(),
        &report,
    )
    .unwrap();
    report
}

fn first_error(report: &Reporter) -> String {
    report.error().expect("a mismatch").to_string()
}

#[test]
fn keys_sort_by_index_and_parse_back() {
    let m = model();
    for i in 0..m.keys - 1 {
        let (k, next) = (m.key(i), m.key(i + 1));
        assert!(Model::bound(i) <= k && k < Model::bound(i + 1) && k < next);
        assert_eq!(m.index_of(&k), Some(i));
    }
    assert_eq!(m.index_of(b"k00000001x"), None);
    assert_eq!(m.index_of(&Model::bound(m.keys)), None);
    assert_eq!(m.index_of(b"zzz"), None);
}

#[test]
fn values_name_their_key_and_version() {
    let m = model();
    let (mut puts, mut lens) = (0, 0);
    for v in 1..=200 {
        let value = m.value(7, v);
        if m.is_put(7, v) {
            puts += 1;
            lens += value.len();
            assert_eq!(m.decode(7, &value), Ok(v));
        } else {
            assert!(m.decode(7, &value).unwrap_err().contains("delete"));
        }
        assert!(m.decode(8, &value).unwrap_err().contains("key index 7"));
        let mut bent = value.clone();
        if let Some(b) = bent.last_mut() {
            *b ^= 1;
        }
        assert!(m.decode(7, &bent).is_err());
    }
    assert!((130..=170).contains(&puts), "about 75% puts, got {puts}");
    let mean = lens / puts;
    assert!((40..=60).contains(&mean), "mean value length {mean}");
    assert!(m.decode(7, b"short").is_err());
}

#[test]
fn read_windows() {
    let m = model();
    let put = (1..).find(|&v| m.is_put(3, v)).unwrap();
    let del = (1..).find(|&v| !m.is_put(3, v)).unwrap();
    assert!(m.allowed(3, put, put, Found::Version(put)));
    assert!(!m.allowed(3, put, put, Found::Version(put + 1)));
    assert!(!m.allowed(3, put, put, Found::Absent));
    assert!(m.allowed(3, del, del, Found::Absent));
    assert!(m.allowed(3, 0, 0, Found::Absent));
    assert!(m.allowed(3, put.min(del), put.max(del), Found::Absent));
    assert!(!m.allowed(3, put + 1, put + 5, Found::Version(put)));
}

#[test]
fn expected_state_round_trips_and_rejects_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.expected");
    let header = Header {
        keys: 10,
        value_bytes: 100,
        threads: 3,
        salt: 5,
    };
    let e = Expected::create(&path, header).unwrap();
    e.begin(4, 2).unwrap();
    e.ack(4, 1).unwrap();
    drop(e);
    let e = Expected::open(&path).unwrap();
    assert_eq!(e.header(), header);
    assert_eq!((e.pending(4), e.acked(4), e.acked(5)), (2, 1, 0));

    let good = std::fs::read(&path).unwrap();
    for (at, what) in [(0, "magic"), (8, "version"), (13, "checksum")] {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        std::fs::write(&path, &bad).unwrap();
        let err = Expected::open(&path).err().expect("damage is rejected");
        assert!(matches!(err, CliError::StressState { .. }), "{what}: {err}");
    }
    let mut short = good.clone();
    short.pop();
    std::fs::write(&path, &short).unwrap();
    assert!(matches!(
        Expected::open(&path),
        Err(CliError::StressState { .. })
    ));
    let mut inverted = good;
    let slot = 64 + 8 * 4;
    inverted[slot..slot + 4].copy_from_slice(&0u32.to_le_bytes());
    std::fs::write(&path, &inverted).unwrap();
    let err = Expected::open(&path).err().expect("acked above pending");
    assert!(err.to_string().contains("above pending"), "{err}");
}

#[test]
fn scan_check_catches_order_gaps_and_strangers() {
    let m = model();
    let value = |i: u32| {
        let v = (1..).find(|&v| m.is_put(i, v)).unwrap();
        (v, m.value(i, v))
    };
    let (v10, x10) = value(10);
    let (v11, x11) = value(11);
    let windows = |a: u32, b: u32| (vec![v10, v11, a], vec![v10, v11, b]);
    // Key 12 at version 0: absent is right.
    let (before, after) = windows(0, 0);
    let mut ok = ScanCheck::new(&m, "t", (10, 13), before, after, Dir::Forward);
    ok.see(&m.key(10), &x10).unwrap();
    ok.see(&m.key(11), &x11).unwrap();
    ok.finish().unwrap();
    assert_eq!(ok.checked, 3);

    let (before, after) = windows(0, 0);
    let mut gap = ScanCheck::new(&m, "t", (10, 13), before, after, Dir::Forward);
    let err = gap.see(&m.key(11), &x11).unwrap_err();
    assert!(
        err.found.contains("skipped") && err.key.starts_with("k00000010"),
        "{err:?}"
    );

    let (before, after) = windows(0, 0);
    let mut order = ScanCheck::new(&m, "t", (10, 13), before, after, Dir::Backward);
    order.see(&m.key(11), &x11).unwrap();
    order.see(&m.key(10), &x10).unwrap();
    order.finish().unwrap();
    let err = order.see(&m.key(11), &x11).unwrap_err();
    assert!(err.found.contains("after k00000010"), "{err:?}");

    let (before, after) = windows(0, 0);
    let mut stranger = ScanCheck::new(&m, "t", (10, 13), before, after, Dir::Forward);
    assert!(stranger.see(b"k0000001", b"x").is_err());
    let mut wrong = ScanCheck::new(
        &m,
        "t",
        (10, 13),
        vec![v10 + 1; 3],
        vec![v10 + 1; 3],
        Dir::Forward,
    );
    assert!(wrong.see(&m.key(10), &x10).is_err());

    let (before, after) = windows(0, 0);
    let mut exact = ScanCheck::new(&m, "t", (10, 13), before, after, Dir::Forward).exact(vec![
        Found::Absent,
        Found::Version(v11),
        Found::Absent,
    ]);
    assert!(exact.see(&m.key(10), &x10).is_err());
}

#[test]
fn a_short_run_passes_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::new(&args(dir.path(), 1.5)).unwrap();
    let (counts, report) = (Counts::default(), Reporter::default());
    plain(&cfg, &counts, &report).unwrap();
    assert_eq!(report.count(), 0);
    let values = counts.get();
    for op in [
        Op::Put,
        Op::Batch,
        Op::Get,
        Op::ScanForward,
        Op::ScanBackward,
    ] {
        assert!(values[op as usize] > 0, "{op:?} never ran: {values:?}");
    }
    assert!(values[Op::Checked as usize] > 1000, "{values:?}");
    // A second run checks the first one's state and carries on.
    plain(&cfg, &Counts::default(), &report).unwrap();
    assert_eq!(report.count(), 0);
    // Another key space does not fit the expected state.
    let mut other = args(dir.path(), 0.1);
    other.keys = 301;
    let err = plain(&Config::new(&other).unwrap(), &counts, &report).unwrap_err();
    assert!(err.to_string().contains("--keys 300"), "{err}");
}

#[test]
fn refuses_a_database_it_did_not_make() {
    let dir = tempfile::tempdir().unwrap();
    DB::open(dir.path().join("db"), pith::Options::default())
        .unwrap()
        .close()
        .unwrap();
    let cfg = Config::new(&args(dir.path(), 0.1)).unwrap();
    let err = plain(&cfg, &Counts::default(), &Reporter::default()).unwrap_err();
    assert!(err.to_string().contains("no expected state"), "{err}");
}

/// Finds a key of the finished run in `cfg` that is present and one that
/// is absent.
fn present_and_absent(cfg: &Config) -> (u32, u32) {
    let e = cfg.open_expected(false).unwrap();
    let m = model_of(&e);
    let present = (0..m.keys).find(|&i| m.is_put(i, e.acked(i))).unwrap();
    let absent = (0..m.keys).find(|&i| !m.is_put(i, e.acked(i))).unwrap();
    (present, absent)
}

#[test]
fn recovery_catches_values_changed_behind_its_back() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = clean_run(dir.path());
    let (present, absent) = present_and_absent(&cfg);
    let e = cfg.open_expected(false).unwrap();
    let m = model_of(&e);
    let v = e.acked(present);
    drop(e);
    let newer = (v + 1..).find(|&w| m.is_put(present, w)).unwrap();
    type Tamper<'a> = Box<dyn Fn(&DB) + 'a>;
    let cases: Vec<(&str, Tamper, &str)> = vec![
        (
            "a newer version",
            Box::new(|db| db.put(m.key(present), m.value(present, newer)).unwrap()),
            "found version",
        ),
        (
            "another key's value",
            Box::new(|db| db.put(m.key(present), m.value(absent, 1)).unwrap()),
            "a value of key index",
        ),
        (
            "a deleted key",
            Box::new(|db| db.delete(m.key(present)).unwrap()),
            "found absent",
        ),
        (
            "a resurrected key",
            Box::new(|db| db.put(m.key(absent), m.value(absent, 999)).unwrap()),
            "expected absent",
        ),
        (
            "a stranger",
            Box::new(|db| db.put("k0000000zz", "?").unwrap()),
            "unknown",
        ),
    ];
    for (what, tamper, text) in cases {
        let db = cfg.open_db().unwrap();
        let snap_before: Vec<(Vec<u8>, Vec<u8>)> =
            db.range(None, None).map(|kv| kv.unwrap()).collect();
        tamper(&db);
        db.close().unwrap();
        let report = reconcile(&cfg);
        assert!(report.count() > 0, "{what} went unnoticed");
        let err = first_error(&report);
        assert!(err.contains(text), "{what}: {err}");
        // Undo, so the next case starts clean.
        let db = cfg.open_db().unwrap();
        let mut undo = WriteBatch::new();
        for kv in db.range(None, None) {
            undo.delete(kv.unwrap().0);
        }
        for (k, v) in snap_before {
            undo.put(k, v);
        }
        db.write(Default::default(), undo).unwrap();
        db.close().unwrap();
        assert_eq!(reconcile(&cfg).count(), 0, "undoing {what}");
    }
}

#[test]
fn recovery_catches_a_wrong_expectation() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = clean_run(dir.path());
    let (present, _) = present_and_absent(&cfg);
    let e = cfg.open_expected(false).unwrap();
    let v = e.acked(present);
    e.force(present, v + 3, v + 3).unwrap();
    drop(e);
    let err = first_error(&reconcile(&cfg));
    let key = String::from_utf8_lossy(&model_of(&cfg.open_expected(false).unwrap()).key(present))
        .into_owned();
    assert!(
        err.contains(&key) && err.contains(&format!("found version {v}")),
        "{err}"
    );
}

#[test]
fn recovery_settles_writes_in_flight_and_checks_batches() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = clean_run(dir.path());
    let e = cfg.open_expected(false).unwrap();
    let m = model_of(&e);
    let threads = e.header().threads;
    // Two keys of thread 0 whose next versions are puts.
    let mut keys = (0..m.keys)
        .filter(|i| i % threads == 0)
        .filter(|&i| m.is_put(i, e.acked(i) + 1));
    let (a, b) = (keys.next().unwrap(), keys.next().unwrap());
    let (va, vb) = (e.acked(a) + 1, e.acked(b) + 1);
    e.begin(a, va).unwrap();
    e.begin(b, vb).unwrap();
    drop(e);
    // Only one of the batch's two writes is in the database.
    let db = cfg.open_db().unwrap();
    db.put(m.key(a), m.value(a, va)).unwrap();
    db.close().unwrap();
    let err = first_error(&reconcile(&cfg));
    assert!(err.contains("batch atomicity"), "{err}");
    // Both landed: settled to the pending versions.
    let db = cfg.open_db().unwrap();
    db.put(m.key(b), m.value(b, vb)).unwrap();
    db.close().unwrap();
    let expected = cfg.open_expected(false).unwrap();
    let db = cfg.open_db().unwrap();
    let report = Reporter::default();
    let rec = recover::reconcile(&db, &m, &expected, &Counts::default(), &report).unwrap();
    assert_eq!((report.count(), rec.landed, rec.lost), (0, 2, 0));
    assert_eq!((expected.acked(a), expected.pending(b)), (va, vb));
}

#[test]
fn the_workload_catches_values_changed_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = clean_run(dir.path());
    let mut expected = cfg.open_expected(false).unwrap();
    expected.set_threads(2).unwrap();
    let m = model_of(&expected);
    let db = cfg.open_db().unwrap();
    let (counts, report) = (Counts::default(), Reporter::default());
    let run = Run {
        db: &db,
        model: &m,
        expected: &expected,
        threads: 2,
        sync: false,
        deadline: Instant::now() + Duration::from_secs(20),
        counts: &counts,
        report: &report,
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            // Behind the workers' backs: every key gets a version nobody
            // wrote.
            std::thread::sleep(Duration::from_millis(200));
            let mut b = WriteBatch::new();
            for i in 0..m.keys {
                b.put(m.key(i), m.value(i, 1_000_000 + i));
            }
            db.write(Default::default(), b).unwrap();
        });
        workload(&run, 1, Duration::from_secs(1), || {}).unwrap();
    });
    assert!(report.count() > 0, "tampering went unnoticed");
    let err = first_error(&report);
    assert!(err.contains("expected"), "{err}");
}
