//! Concurrency stress: writer threads (each owning its keys) and reader
//! threads share one handle while memtables flush and segments merge in
//! the background. Checks: batches are atomic to readers (pairs written
//! together are seen together, through snapshots and iterators), a key's
//! value never goes back in time, and the final state equals each
//! writer's model. `PITH_STRESS_OPS` sets the writes per writer.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pith::{Options, WriteBatch, WriteOptions, DB};
use rand::{Rng, SeedableRng};

const WRITERS: u64 = 3;
const READERS: u64 = 2;
const KEYS: u64 = 150;

fn pair(w: u64, j: u64) -> (String, String) {
    (format!("w{w}/k{j:03}/a"), format!("w{w}/k{j:03}/b"))
}

fn counter(v: &[u8]) -> u64 {
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .expect("value starts with its counter")
}

#[test]
fn writers_readers_flushes_and_merges() {
    let ops: u64 = std::env::var("PITH_STRESS_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2500);
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        memtable_bytes: 24 << 10,
        merge_trigger: 3,
        stall_segments: 10,
        ..Options::default()
    };
    let db = Arc::new(DB::open(dir.path(), options).expect("open"));
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for r in 0..READERS {
        let (db, stop) = (db.clone(), stop.clone());
        readers.push(std::thread::spawn(move || {
            let mut rng = rand::rngs::StdRng::seed_from_u64(100 + r);
            let mut last_seen: HashMap<String, u64> = HashMap::new();
            let mut checks = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let (w, j) = (rng.gen_range(0..WRITERS), rng.gen_range(0..KEYS));
                let (a, b) = pair(w, j);
                let snap = db.snapshot();
                let (va, vb) = (
                    db.get_at(&snap, &a).expect("get"),
                    db.get_at(&snap, &b).expect("get"),
                );
                assert_eq!(va, vb, "pair {a} / {b} torn in a snapshot");
                if let Some(v) = db.get(&a).expect("get") {
                    let c = counter(&v);
                    let prev = last_seen.insert(a.clone(), c).unwrap_or(0);
                    assert!(c >= prev, "{a} went back from {prev} to {c}");
                }
                if rng.gen_ratio(1, 20) {
                    let mut it = db.iter();
                    it.seek(format!("w{w}/").as_bytes());
                    let mut pending: Option<(Vec<u8>, Vec<u8>)> = None;
                    while let (Some(k), Some(v)) = (it.key(), it.value()) {
                        if !k.starts_with(format!("w{w}/").as_bytes()) {
                            break;
                        }
                        if k.ends_with(b"/a") {
                            assert!(pending.is_none(), "a key without its pair");
                            pending = Some((k.to_vec(), v.to_vec()));
                        } else {
                            let (ka, va) = pending.take().expect("b without a in one iterator");
                            assert_eq!(ka[..ka.len() - 1], k[..k.len() - 1]);
                            assert_eq!(va, v, "pair torn in an iterator");
                        }
                        it.next();
                    }
                    assert!(pending.is_none());
                    it.status().expect("iterator status");
                }
                checks += 1;
            }
            checks
        }));
    }
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let db = db.clone();
        writers.push(std::thread::spawn(move || {
            let mut rng = rand::rngs::StdRng::seed_from_u64(w);
            let mut model: BTreeMap<String, String> = BTreeMap::new();
            for c in 1..=ops {
                let j = rng.gen_range(0..KEYS);
                let (a, b) = pair(w, j);
                let mut batch = WriteBatch::new();
                if rng.gen_ratio(1, 5) {
                    batch.delete(&a).delete(&b);
                    model.remove(&a);
                    model.remove(&b);
                } else {
                    let v = format!("{c} {}", "x".repeat(rng.gen_range(0..200)));
                    batch.put(&a, &v).put(&b, &v);
                    model.insert(a, v.clone());
                    model.insert(b, v);
                }
                db.write(WriteOptions { sync: c % 100 == 0 }, batch)
                    .expect("write");
            }
            model
        }));
    }
    let mut expected: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for h in writers {
        for (k, v) in h.join().expect("writer") {
            expected.insert(k.into_bytes(), v.into_bytes());
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in readers {
        assert!(h.join().expect("reader") > 0);
    }
    assert_eq!(
        common::all(&db),
        expected.clone().into_iter().collect::<Vec<_>>()
    );
    db.compact().expect("compact");
    assert_eq!(common::all(&db), expected.into_iter().collect::<Vec<_>>());
    db.verify().expect("verify");
    assert!(db.stats().expect("stats").segments.len() == 1);
}
