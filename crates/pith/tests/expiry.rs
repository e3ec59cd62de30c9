//! Keys with a deadline: hidden from every read once past it, the deadline
//! kept through the log, flushes, merges and reopen, expired values dropped
//! by builds, and segments without deadlines unchanged.

mod common;

use std::path::Path;
use std::sync::Arc;

use pith::{ManualClock, Options, WriteBatch, WriteOptions, DB};

/// Some fixed "now": 2026-01-01T00:00:00Z.
const T0: u64 = 1_767_225_600_000;

fn open(dir: &Path, clock: &ManualClock) -> DB {
    let options = Options {
        clock: Arc::new(clock.clone()),
        ..common::small()
    };
    DB::open(dir, options).expect("open")
}

fn keys(db: &DB) -> Vec<Vec<u8>> {
    db.range(None, None)
        .keys()
        .collect::<pith::Result<Vec<_>>>()
        .expect("scan")
}

#[test]
fn every_read_hides_a_key_from_its_deadline_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let db = open(dir.path(), &clock);
    db.put("a", "stays").expect("put");
    db.put_expiring("b", "goes", T0 + 1000).expect("put");
    db.put_expiring("c", "later", T0 + 5000).expect("put");
    let before = db.iter();
    clock.advance(999);
    assert_eq!(
        db.get_with_deadline("b").expect("get"),
        Some((b"goes".to_vec(), Some(T0 + 1000)))
    );
    assert_eq!(
        db.get_with_deadline("a").expect("get"),
        Some((b"stays".to_vec(), None))
    );
    clock.advance(1);
    assert_eq!(db.get("b").expect("get"), None, "at the deadline");
    assert!(!db.contains("b").expect("contains") && db.contains("a").expect("contains"));
    assert_eq!(
        db.deadline_of("c").expect("deadline"),
        Some(Some(T0 + 5000))
    );
    assert_eq!(db.deadline_of("a").expect("deadline"), Some(None));
    assert_eq!(db.deadline_of("b").expect("deadline"), None);
    assert_eq!(db.get_with_deadline("b").expect("get"), None);
    assert_eq!(keys(&db), vec![b"a".to_vec(), b"c".to_vec()]);
    let back: Vec<Vec<u8>> = db
        .range(None, None)
        .rev()
        .map(|kv| kv.expect("scan").0)
        .collect();
    assert_eq!(back, vec![b"c".to_vec(), b"a".to_vec()]);
    let found: Vec<Vec<u8>> = db
        .search("[a-z]")
        .expect("search")
        .keys()
        .collect::<pith::Result<_>>()
        .expect("search");
    assert_eq!(found, vec![b"a".to_vec(), b"c".to_vec()]);
    assert_eq!(db.count_keys().expect("count"), 2);
    // An iterator judges expiry when it was made.
    let mut it = before;
    it.seek(b"b");
    assert_eq!(it.key(), Some(&b"b"[..]));
    assert_eq!(it.deadline(), Some(T0 + 1000));
    it.seek(b"a");
    assert_eq!(it.deadline(), None);
    // The same after a flush: the deadline lives in the segment.
    clock.set(T0 + 10);
    db.flush().expect("flush");
    assert_eq!(
        db.deadline_of("b").expect("deadline"),
        Some(Some(T0 + 1000))
    );
    assert_eq!(
        db.get_with_deadline("b").expect("get"),
        Some((b"goes".to_vec(), Some(T0 + 1000)))
    );
    clock.set(T0 + 5000);
    assert_eq!(keys(&db), vec![b"a".to_vec()]);
}

#[test]
fn an_expired_version_hides_the_older_ones_below_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let db = open(dir.path(), &clock);
    db.put("k", "old, no deadline").expect("put");
    db.flush().expect("flush");
    db.put_expiring("k", "new, expiring", T0 + 100)
        .expect("put");
    clock.advance(100);
    assert_eq!(db.get("k").expect("get"), None, "memtable over segment");
    db.flush().expect("flush");
    assert_eq!(db.get("k").expect("get"), None, "segment over segment");
    assert!(keys(&db).is_empty());
    db.compact().expect("compact");
    assert_eq!(db.get("k").expect("get"), None, "after the merge");
    let stats = db.stats().expect("stats");
    assert_eq!(stats.total(|s| s.records), 0, "{:?}", stats.segments);
    // A later plain put replaces the deadline.
    db.put_expiring("j", "v1", T0 + 200).expect("put");
    db.put("j", "v2").expect("put");
    clock.advance(1000);
    assert_eq!(
        db.get_with_deadline("j").expect("get"),
        Some((b"v2".to_vec(), None))
    );
}

#[test]
fn deadlines_survive_the_log_and_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    {
        let db = open(dir.path(), &clock);
        let mut b = WriteBatch::new();
        b.put_expiring("logged", "x", T0 + 50)
            .put("plain", "y")
            .put_expiring("far", "z", T0 + 1_000_000);
        db.write(WriteOptions::synced(), b).expect("write");
        db.put_expiring("flushed", "w", T0 + 60).expect("put");
        // Drop without close: recovery replays the log.
    }
    {
        let db = open(dir.path(), &clock);
        assert_eq!(
            db.get_with_deadline("logged").expect("get"),
            Some((b"x".to_vec(), Some(T0 + 50)))
        );
        db.flush().expect("flush");
        db.close().expect("close");
    }
    let db = open(dir.path(), &clock);
    assert_eq!(
        db.get_with_deadline("far").expect("get"),
        Some((b"z".to_vec(), Some(T0 + 1_000_000)))
    );
    clock.advance(60);
    assert_eq!(keys(&db), vec![b"far".to_vec(), b"plain".to_vec()]);
    db.verify().expect("verify");
}

#[test]
fn merges_drop_expired_values_and_keep_live_deadlines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let db = open(dir.path(), &clock);
    let value = vec![b'v'; 200];
    for i in 0..2000u64 {
        let key = format!("key{i:05}");
        if i % 2 == 0 {
            db.put_expiring(&key, &value, T0 + 1000 + i).expect("put");
        } else {
            db.put(&key, &value).expect("put");
        }
    }
    db.flush().expect("flush");
    let stats = db.stats().expect("stats");
    assert_eq!(stats.total(|s| s.expiring), 1000);
    clock.set(T0 + 1999);
    db.compact().expect("compact");
    let stats = db.stats().expect("stats");
    // Keys 0, 2, .., 998 expired (deadlines up to T0 + 1998); 1000 ..
    // 1998 still live with their deadlines.
    assert_eq!(stats.total(|s| s.expiring), 500, "{:?}", stats.segments);
    assert_eq!(stats.total(|s| s.records), 1500);
    assert_eq!(stats.total(|s| s.tombstones), 0);
    assert_eq!(db.count_keys().expect("count"), 1500);
    assert_eq!(
        db.get_with_deadline("key01000").expect("get"),
        Some((value.clone(), Some(T0 + 2000)))
    );
    assert_eq!(db.get("key00998").expect("get"), None);
    db.verify().expect("verify");
    clock.set(T0 + 10_000);
    db.compact().expect("compact");
    let stats = db.stats().expect("stats");
    assert_eq!(
        (stats.total(|s| s.records), stats.total(|s| s.expiring)),
        (1000, 0)
    );
}

#[test]
fn a_deadline_costs_a_few_bytes_and_no_deadline_costs_nothing() {
    let sizes: Vec<u64> = [false, true]
        .iter()
        .map(|&expiring| {
            let dir = tempfile::tempdir().expect("tempdir");
            let clock = ManualClock::new(T0);
            let db = open(dir.path(), &clock);
            let records: Vec<(String, String)> = (0..20_000)
                .map(|i| {
                    (
                        format!("user:{i:06}"),
                        format!("{{\"id\":{i},\"plan\":\"basic\"}}"),
                    )
                })
                .collect();
            for (i, (k, v)) in records.iter().enumerate() {
                if expiring {
                    // Deadlines spread over a day, as sessions would be.
                    db.put_expiring(k, v, T0 + 86_400_000 + i as u64 * 4_000)
                        .expect("put");
                } else {
                    db.put(k, v).expect("put");
                }
            }
            db.compact().expect("compact");
            let stats = db.stats().expect("stats");
            assert_eq!(
                stats.total(|s| s.expiring),
                if expiring { 20_000 } else { 0 }
            );
            stats.total(|s| s.meta_bytes)
        })
        .collect();
    let per_record = (sizes[1] - sizes[0]) as f64 / 20_000.0;
    assert!(
        per_record <= 6.0,
        "{per_record} bytes per deadline ({sizes:?})"
    );
}

#[test]
fn snapshots_see_old_versions_but_judge_expiry_now() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    let db = open(dir.path(), &clock);
    db.put("k", "plain").expect("put");
    let plain = db.snapshot();
    db.put_expiring("k", "expiring", T0 + 10).expect("put");
    let expiring = db.snapshot();
    clock.advance(10);
    db.compact().expect("compact");
    assert_eq!(
        db.get_at(&plain, "k").expect("get"),
        Some(b"plain".to_vec())
    );
    assert_eq!(db.get_at(&expiring, "k").expect("get"), None);
    assert_eq!(db.get("k").expect("get"), None);
}
