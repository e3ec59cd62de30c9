//! Shared compression models: trained once and used by flushes, copied
//! through merges, retrained when the data drifts, deleted when unused,
//! and a missing or corrupt model file is a typed error naming it.

mod common;

use std::path::Path;
use std::sync::Arc;

use pith::env::{Fs, MemFs};
use pith::{Error, Options, DB};

fn options(fs: &MemFs) -> Options {
    Options {
        memtable_bytes: 256 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn package(i: usize, salt: &str) -> String {
    format!(
        "Package: lib{salt}{i}\nVersion: {}.{}-1\nMaintainer: Debian {salt} Team <team@debian.org>\nDepends: libc6 (>= 2.{}), libssl3\nDescription: shared library {i} of {salt}\n",
        i % 9,
        i % 13,
        30 + i % 7
    )
}

/// Random-looking text: the same alphabet as nothing else written here.
fn noise(i: usize) -> String {
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..160)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'0' + (x % 75) as u8)
        })
        .collect()
}

fn write_file(fs: &MemFs, path: &Path, bytes: &[u8]) {
    match fs.remove(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => panic!("remove: {e}"),
        _ => {}
    }
    let mut f = fs.create(path).expect("create");
    f.append(bytes).expect("append");
    f.sync().expect("sync");
}

/// Opening must fail with a corruption error naming the model file
/// `model` and the segment encoded with it.
fn refused_naming_both(fs: &MemFs, model: &str) {
    let e = match DB::open("/db", options(fs)) {
        Ok(_) => panic!("opened"),
        Err(e) => e,
    };
    assert!(matches!(e, Error::Corruption { .. }), "{e:?}");
    assert!(e.to_string().contains(model), "{e}");
    assert!(e.to_string().contains(".seg"), "names the segment too: {e}");
}

/// A database of 1,500 records flushed once, closed; its model file's name.
fn flushed_once(fs: &MemFs) -> String {
    let db = DB::open("/db", options(fs)).expect("open");
    load(&db, 0..1500, |i| package(i, "a"));
    db.flush().expect("flush");
    drop(db);
    common::files(fs, ".model").pop().expect("a model file")
}

fn load(db: &DB, range: std::ops::Range<usize>, value: impl Fn(usize) -> String) {
    for i in range {
        db.put(format!("key{i:06}"), value(i)).expect("put");
    }
}

fn check(db: &DB, range: std::ops::Range<usize>, value: impl Fn(usize) -> String) {
    for i in range {
        assert_eq!(
            db.get(format!("key{i:06}")).expect("get").as_deref(),
            Some(value(i).as_bytes()),
            "key{i:06}"
        );
    }
}

#[test]
fn flushes_share_one_model_and_merges_copy_their_records() {
    let fs = MemFs::new();
    // Flushes and merges only when asked, so the counts below are exact.
    let opts = Options {
        memtable_bytes: 16 << 20,
        merge_trigger: 50,
        stall_segments: 100,
        ..options(&fs)
    };
    let db = DB::open("/db", opts.clone()).expect("open");
    for round in 0..4 {
        load(&db, round * 1500..(round + 1) * 1500, |i| package(i, "a"));
        db.flush().expect("flush");
    }
    let s = db.stats().expect("stats");
    assert_eq!(s.models.len(), 1, "{:?}", s.models);
    let model = s.models[0].number;
    assert!(s.segments.iter().all(|x| x.model == Some(model)));
    assert_eq!(common::files(&fs, ".model").len(), 1);
    assert_eq!((s.records_copied, s.records_encoded), (0, 6000));
    db.compact().expect("compact");
    let s = db.stats().expect("stats");
    assert_eq!(s.segments.len(), 1);
    assert_eq!(s.segments[0].model, Some(model));
    assert_eq!(
        s.records_copied, 6000,
        "every record copied, none re-encoded"
    );
    assert_eq!(s.records_encoded, 6000);
    let ratio = (s.total(|x| x.raw_key_bytes) + s.total(|x| x.raw_value_bytes)) as f64
        / s.disk_bytes as f64;
    assert!(ratio > 3.0, "ratio {ratio:.2}");
    check(&db, 0..6000, |i| package(i, "a"));
    db.verify().expect("verify");
    drop(db);
    let db = DB::open("/db", opts).expect("reopen");
    check(&db, 0..6000, |i| package(i, "a"));
    assert_eq!(db.verify().expect("verify").models, 1);
}

#[test]
fn drifted_data_trains_a_new_model_and_the_old_one_goes_with_its_last_segment() {
    let fs = MemFs::new();
    let db = DB::open("/db", options(&fs)).expect("open");
    load(&db, 0..1500, |i| package(i, "a"));
    db.flush().expect("flush");
    let first = db.stats().expect("stats").models[0].number;
    load(&db, 1500..3000, noise);
    db.flush().expect("flush");
    let s = db.stats().expect("stats");
    assert_eq!(s.models.len(), 2, "new data this different retrains");
    let second = s.models.iter().find(|m| m.current).expect("current").number;
    assert_ne!(first, second);
    assert_eq!(common::files(&fs, ".model").len(), 2);
    db.compact().expect("compact");
    let s = db.stats().expect("stats");
    assert_eq!(s.models.len(), 1);
    assert_eq!(s.models[0].number, second);
    assert_eq!(
        common::files(&fs, ".model"),
        vec![format!("{second:06}.model")],
        "the unused model file is removed"
    );
    check(&db, 0..1500, |i| package(i, "a"));
    check(&db, 1500..3000, noise);
    drop(db);
    let db = DB::open("/db", options(&fs)).expect("reopen");
    check(&db, 0..1500, |i| package(i, "a"));
    db.verify().expect("verify");
}

#[test]
fn a_missing_or_corrupt_model_is_a_corruption_error_naming_the_files() {
    let fs = MemFs::new();
    let name = flushed_once(&fs);
    let path = Path::new("/db").join(&name);
    let good = fs.read(&path).expect("read");

    let mut bad = good.clone();
    bad[good.len() / 2] ^= 0x08;
    write_file(&fs, &path, &bad);
    refused_naming_both(&fs, &name);

    fs.remove(&path).expect("remove");
    refused_naming_both(&fs, &name);

    write_file(&fs, &path, &good);
    let db = DB::open("/db", options(&fs)).expect("whole again");
    check(&db, 0..1500, |i| package(i, "a"));
}

#[test]
fn a_model_file_no_manifest_lists_is_removed_at_open() {
    let fs = MemFs::new();
    let name = flushed_once(&fs);
    let stray = Path::new("/db").join("999999.model");
    write_file(
        &fs,
        &stray,
        &fs.read(&Path::new("/db").join(&name)).expect("read"),
    );
    let db = DB::open("/db", options(&fs)).expect("reopen");
    assert_eq!(common::files(&fs, ".model"), vec![name]);
    check(&db, 0..1500, |i| package(i, "a"));
}

#[test]
fn without_shared_models_each_store_carries_its_own_codec() {
    let fs = MemFs::new();
    let opts = Options {
        shared_models: false,
        ..options(&fs)
    };
    let db = DB::open("/db", opts.clone()).expect("open");
    load(&db, 0..1500, |i| package(i, "a"));
    db.flush().expect("flush");
    load(&db, 1500..3000, |i| package(i, "a"));
    db.compact().expect("compact");
    let s = db.stats().expect("stats");
    assert!(s.models.is_empty());
    assert!(s.segments.iter().all(|x| x.model.is_none()));
    assert!(common::files(&fs, ".model").is_empty());
    assert_eq!(s.records_copied, 0);
    drop(db);
    // Turning them on later trains a model; the old segments keep reading.
    let db = DB::open("/db", options(&fs)).expect("reopen");
    load(&db, 3000..4500, |i| package(i, "a"));
    db.flush().expect("flush");
    assert_eq!(db.stats().expect("stats").models.len(), 1);
    db.compact().expect("compact");
    check(&db, 0..4500, |i| package(i, "a"));
    db.verify().expect("verify");
}

#[test]
fn a_bulk_load_trains_once_and_its_chunks_share_the_model() {
    let fs = MemFs::new();
    let opts = Options {
        bulk_chunk_bytes: 64 << 10,
        ..options(&fs)
    };
    let db = DB::open("/db", opts).expect("open");
    let stats = db
        .bulk_load((0..3000).map(|i| (format!("key{i:06}"), package(i, "b"))))
        .expect("bulk");
    assert!(stats.segments > 3, "{stats:?}");
    let s = db.stats().expect("stats");
    assert_eq!(s.models.len(), 1, "one model for the whole load");
    assert!(s
        .segments
        .iter()
        .all(|x| x.model == Some(s.models[0].number)));
    check(&db, 0..3000, |i| package(i, "b"));
}

/// Regression: a bulk load of a few short records, too few to say
/// anything about the data, once retrained the model as drifted (on 2
/// bytes), and the next full merge re-encoded every record with the
/// empty model: the database grew 3.3 times. Such loads keep the model.
#[test]
fn a_tiny_bulk_load_keeps_the_model() {
    let fs = MemFs::new();
    let db = DB::open("/db", options(&fs)).expect("open");
    db.bulk_load((0..3000).map(|i| (format!("key{i:06}"), package(i, "b"))))
        .expect("bulk");
    let before = db.stats().expect("stats");
    db.bulk_load([("a", "1"), ("b", "2"), ("a", "3")])
        .expect("tiny bulk");
    db.compact().expect("compact");
    let after = db.stats().expect("stats");
    assert_eq!(after.models.len(), 1, "{:?}", after.models);
    assert_eq!(after.models[0].number, before.models[0].number);
    assert!(
        after.disk_bytes < before.disk_bytes + (4 << 10),
        "{} -> {}",
        before.disk_bytes,
        after.disk_bytes
    );
    check(&db, 0..3000, |i| package(i, "b"));
}

/// A full compaction of a database that is already one segment with
/// nothing to drop, in the current model, rewrites nothing; one with a
/// tombstone or an older version to drop is merged.
#[test]
fn compacting_a_compacted_database_rewrites_nothing() {
    let fs = MemFs::new();
    let db = DB::open("/db", options(&fs)).expect("open");
    for i in 0..2000 {
        db.put(format!("key{i:05}"), package(i, "a")).expect("put");
    }
    db.compact().expect("compact");
    let first = common::files(&fs, ".seg");
    assert_eq!(first.len(), 1, "{first:?}");
    db.compact().expect("compact again");
    assert_eq!(
        common::files(&fs, ".seg"),
        first,
        "a settled segment was rewritten"
    );

    db.delete("key00007").expect("delete");
    db.compact().expect("compact with a tombstone");
    let after = common::files(&fs, ".seg");
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(after, first, "a tombstone to drop must merge");
    let stats = db.stats().expect("stats");
    assert_eq!(stats.segments[0].tombstones, 0);
    assert_eq!(stats.segments[0].keys, 1999);

    db.put("key00008", "new value").expect("put");
    db.flush().expect("flush");
    db.compact().expect("compact with an older version");
    let last = common::files(&fs, ".seg");
    assert_eq!(last.len(), 1, "{last:?}");
    assert_ne!(last, after);
    assert_eq!(
        db.get("key00008").expect("get").as_deref(),
        Some(&b"new value"[..])
    );
    assert_eq!(db.get("key00007").expect("get"), None);
    db.verify().expect("verify");
}

/// With memtables at least twice the training sample, the first model is
/// trained from the live memtable once it holds a sample's worth, while
/// writes go on; the first flush then encodes with it and trains nothing.
#[test]
fn the_first_model_is_trained_while_the_first_memtable_fills() {
    let fs = MemFs::new();
    let mut opts = options(&fs);
    opts.memtable_bytes = 1 << 20;
    opts.merge_zip.sample_bytes = 128 << 10;
    let db = DB::open("/db", opts.clone()).expect("open");
    // About 170 KiB: past the 128 KiB at which the model trains, well
    // short of the memtable; no writes while it trains, so it sees all of
    // them and the test does not depend on timing.
    load(&db, 0..800, |i| package(i, "a"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let early = loop {
        let s = db.stats().expect("stats");
        assert!(s.segments.is_empty(), "nothing was flushed yet");
        if let Some(m) = s.models.first() {
            break m.number;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no model trained early"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // More of the same data (values the model was trained on, under new
    // keys): no drift, so the flush trains nothing. (New package numbers
    // would encode ~25% worse than the model's held-out records, which
    // were drawn from the first 800, and the drift rule would retrain.)
    let same = |i: usize| package(i % 800, "a");
    load(&db, 800..3000, same);
    db.flush().expect("flush");
    let s = db.stats().expect("stats");
    assert_eq!(s.models.len(), 1, "the flush trained again: {:?}", s.models);
    assert_eq!(s.models[0].number, early);
    assert!(s.segments.iter().all(|x| x.model == Some(early)));
    check(&db, 0..800, |i| package(i, "a"));
    check(&db, 800..3000, same);
    drop(db);
    let db = DB::open("/db", opts).expect("reopen");
    check(&db, 0..800, |i| package(i, "a"));
    check(&db, 800..3000, same);
    assert_eq!(db.verify().expect("verify").models, 1);
}
