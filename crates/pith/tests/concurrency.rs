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
                db.write(
                    WriteOptions {
                        sync: c % 100 == 0,
                        ..WriteOptions::default()
                    },
                    batch,
                )
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

/// Read-only handles opened again and again while a writer writes,
/// flushes and merges (so segments and logs vanish under them): every open
/// succeeds and sees a prefix of the writer's batches (batch `i` writes
/// `n/{i}/0..4` and sets `last` to `i`; a view holding `last = c` holds
/// exactly the batches up to `c`), and a writer can open beside readers.
#[test]
fn read_only_opens_beside_a_writer_see_a_prefix_of_its_batches() {
    const BATCHES: u64 = 3000;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let options = Options {
        memtable_bytes: 8 << 10,
        merge_trigger: 2,
        ..Options::default()
    };
    let writer = DB::open(&path, options).expect("open");
    writer.put("last", "0").expect("put");
    writer.flush().expect("flush");
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (path, done) = (path.clone(), done.clone());
        std::thread::spawn(move || {
            let mut opens = 0u64;
            while !done.load(Ordering::Acquire) || opens < 20 {
                let db = DB::open_read_only(&path, Options::default()).expect("read-only open");
                let last: u64 = std::str::from_utf8(&db.get("last").expect("get").expect("last"))
                    .expect("utf8")
                    .parse()
                    .expect("number");
                let batches: Vec<u64> = db
                    .prefix(b"n/")
                    .keys()
                    .map(|k| {
                        let k = String::from_utf8(k.expect("scan")).expect("utf8");
                        k.split('/').nth(1).expect("batch").parse().expect("number")
                    })
                    .collect();
                assert_eq!(
                    batches.len() as u64,
                    4 * last,
                    "a view is a prefix: last = {last}"
                );
                let mut expected: Vec<u64> = (1..=last).flat_map(|i| [i; 4]).collect();
                expected.sort_by_key(|i| i.to_string());
                let mut seen = batches.clone();
                seen.sort_by_key(|i| i.to_string());
                assert_eq!(seen, expected);
                opens += 1;
            }
            opens
        })
    };
    for i in 1..=BATCHES {
        let mut b = WriteBatch::new();
        for j in 0..4 {
            b.put(format!("n/{i}/{j}"), vec![b'v'; 40]);
        }
        b.put("last", i.to_string());
        writer.write(WriteOptions::default(), b).expect("write");
    }
    done.store(true, Ordering::Release);
    let opens = reader.join().expect("reader");
    assert!(opens >= 20, "{opens}");
    // A writer opens beside a reader; the reader keeps its view.
    let r = DB::open_read_only(&path, Options::default()).expect("read-only");
    writer.close().expect("close");
    let w = DB::open(&path, Options::default()).expect("a writer opens beside a reader");
    w.put("last", "x").expect("put");
    assert_eq!(r.get("last").expect("get").as_deref(), Some(&b"3000"[..]));
    w.close().expect("close");
}
