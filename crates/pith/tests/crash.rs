//! Crash tests: a child process writes batches and reports each
//! acknowledged one (a process crash must keep every write acknowledged:
//! a third of the batches are synced, a third plain, and a third deferred
//! (`WriteOptions::defer_log`), reported once `DB::write_log` returns);
//! the parent kills it with SIGKILL at a random moment
//! (often during a background build, merge or compaction, which the small
//! memtable makes frequent), reopens the database and checks that
//!
//! * every acknowledged batch is there, whole;
//! * the one batch in flight at the kill is all there or all absent;
//! * nothing later exists, and `verify` passes.
//!
//! Batch `i` puts `b{i}/0`, `b{i}/1`, `b{i}/2` = `v{i}` and deletes
//! `b{i-3}/2`; parts 0 and 1 are in the default column family, part 2 in
//! the family `side`, so every batch spans two families. Rounds continue on the same directory, so recovery of
//! recovery is exercised too. `PITH_CRASH_ROUNDS` sets the rounds
//! (default 12).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use pith::{Options, WriteBatch, WriteOptions, DB};
use rand::{Rng, SeedableRng};

fn options() -> Options {
    Options {
        memtable_bytes: 32 << 10,
        merge_trigger: 2,
        stall_segments: 8,
        ..Options::default()
    }
}

fn key(i: u64, part: u32) -> String {
    format!("b{i:08}/{part}")
}

fn value(i: u64) -> Vec<u8> {
    format!("v{i} {}", "payload ".repeat(20)).into_bytes()
}

/// The child: writes from `PITH_CRASH_START` until killed.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var("PITH_CRASH_DIR") else {
        return;
    };
    let start: u64 = std::env::var("PITH_CRASH_START")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let db = DB::open(&dir, options()).expect("child open");
    let side = db.family(SIDE).expect("the parent created the family");
    for i in start.. {
        let mut b = WriteBatch::new();
        for part in 0..2 {
            b.put(key(i, part), value(i));
        }
        b.put_cf(&side, key(i, 2), value(i));
        if i >= 3 {
            b.delete_cf(&side, key(i - 3, 2));
        }
        let options = WriteOptions {
            sync: i % 3 == 0,
            defer_log: i % 3 == 2,
        };
        db.write(options, b).expect("child write");
        if options.defer_log {
            db.write_log().expect("child write_log");
        }
        println!("ack {i}");
        if i % 401 == 200 {
            db.compact().expect("child compact");
        }
    }
}

/// The column family of each batch's part 2.
const SIDE: &str = "side";

fn present(db: &DB, i: u64, part: u32) -> bool {
    let cf = match part {
        2 => db.family(SIDE).expect("the family survives every crash"),
        _ => db.default_family(),
    };
    match db.get_cf(&cf, key(i, part)).expect("get") {
        Some(v) => {
            assert_eq!(v, value(i), "batch {i} part {part} has a wrong value");
            true
        }
        None => false,
    }
}

/// Checks the database after a kill; returns the first batch id not in it.
fn check(dir: &std::path::Path, acked: Option<u64>) -> u64 {
    let db = DB::open(dir, options()).expect("reopen after kill");
    let next = acked.map_or(0, |a| a + 1);
    // The batch in flight: all or nothing.
    let in_flight = present(&db, next, 0);
    assert_eq!(
        in_flight,
        present(&db, next, 1),
        "batch {next} is half applied"
    );
    assert_eq!(
        in_flight,
        present(&db, next, 2),
        "batch {next} is half applied"
    );
    let committed_end = if in_flight { next + 1 } else { next };
    assert!(
        !present(&db, committed_end, 0),
        "batch {committed_end} exists but was never written"
    );
    for i in 0..committed_end {
        assert!(
            present(&db, i, 0) && present(&db, i, 1),
            "acknowledged batch {i} lost"
        );
        let deleted_later = i + 3 < committed_end;
        assert_eq!(
            present(&db, i, 2),
            !deleted_later,
            "batch {i} part 2 wrong (deleted by batch {})",
            i + 3
        );
    }
    let n = db.range(None, None).count() as u64;
    assert_eq!(n, 2 * committed_end, "scan of the default family");
    let side = db.family(SIDE).expect("side");
    let n = db.range_cf(&side, None, None).expect("side").count() as u64;
    let expect = committed_end.min(3);
    assert_eq!(n, expect, "scan of {SIDE} sees {n} keys, expected {expect}");
    db.verify().expect("verify after kill");
    committed_end
}

#[test]
fn kill_during_writes_flushes_and_merges() {
    let rounds: u32 = std::env::var("PITH_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("test binary");
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut next = 0u64;
    let mut total_acked = 0;
    DB::open(dir.path(), options())
        .and_then(|db| db.create_family(SIDE).map(|_| db))
        .and_then(DB::close)
        .expect("create the database and its second family");
    for round in 0..rounds {
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env("PITH_CRASH_DIR", dir.path())
            .env("PITH_CRASH_START", next.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("child stdout");
        let reader = std::thread::spawn(move || {
            let mut last = None;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line.strip_prefix("ack ") {
                    last = n.trim().parse::<u64>().ok();
                }
            }
            last
        });
        std::thread::sleep(Duration::from_millis(rng.gen_range(100..700)));
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        let acked = reader.join().expect("reader").or(next.checked_sub(1));
        if let Some(a) = acked {
            total_acked = total_acked.max(a + 1);
        }
        next = check(dir.path(), acked);
        eprintln!("round {round}: {next} batches committed");
    }
    assert!(total_acked > 0, "the child never acknowledged a write");
}
