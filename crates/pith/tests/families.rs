//! Column families: separate key spaces in one database, one log and one
//! manifest; atomic batches and snapshots across them; their own segments,
//! merges and models; create and drop at run time; old databases open
//! unchanged. The fault driver (`tests/faults.rs`) runs every power-cut and
//! I/O-error sequence with a second family too.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use pith::env::{Fs, MemFs};
use pith::{ColumnFamily, Error, Options, Records, WriteBatch, WriteOptions, DB};
use proptest::prelude::*;

fn on(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        ..common::small()
    }
}

fn open(fs: &MemFs) -> DB {
    DB::open("/db", on(fs)).expect("open")
}

fn manifest_version(fs: &MemFs) -> u32 {
    let b = fs.read(Path::new("/db/MANIFEST")).expect("manifest");
    u32::from_le_bytes([b[8], b[9], b[10], b[11]])
}

fn scan(db: &DB, cf: &ColumnFamily) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.range_cf(cf, None, None)
        .expect("live family")
        .collect::<Result<Vec<_>, _>>()
        .expect("scan")
}

fn kv(k: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
    (k.as_bytes().to_vec(), v.as_bytes().to_vec())
}

#[test]
fn families_are_separate_key_spaces_that_survive_reopen_and_flush() {
    let fs = MemFs::new();
    let db = open(&fs);
    let rows = db.create_family("rows").expect("create");
    let idx = db.create_family("idx").expect("create");
    let default = db.default_family();
    for (cf, v) in [(&default, "d"), (&rows, "r"), (&idx, "i")] {
        db.put_cf(cf, "k", v).expect("put");
        db.put_cf(cf, format!("only-{v}"), v).expect("put");
    }
    db.delete_cf(&rows, "only-r").expect("delete");
    let check = |db: &DB| {
        let names: Vec<String> = db.families().iter().map(|f| f.name().to_string()).collect();
        assert_eq!(names, ["default", "rows", "idx"]);
        let (rows, idx) = (
            db.family("rows").expect("rows"),
            db.family("idx").expect("idx"),
        );
        assert_eq!(db.get("k").expect("get").as_deref(), Some(&b"d"[..]));
        assert_eq!(
            db.get_cf(&rows, "k").expect("get").as_deref(),
            Some(&b"r"[..])
        );
        assert_eq!(
            db.get_cf(&idx, "k").expect("get").as_deref(),
            Some(&b"i"[..])
        );
        assert_eq!(
            scan(db, &db.default_family()),
            [kv("k", "d"), kv("only-d", "d")]
        );
        assert_eq!(scan(db, &rows), [kv("k", "r")]);
        assert_eq!(scan(db, &idx), [kv("k", "i"), kv("only-i", "i")]);
        assert_eq!(db.count_keys_cf(&idx).expect("count"), 2);
        assert!(db.contains_cf(&idx, "only-i").expect("contains"));
        assert!(!db.contains_cf(&idx, "only-d").expect("contains"));
        let found: Vec<Vec<u8>> = db
            .search_cf(&idx, "only-.*")
            .expect("search")
            .keys()
            .collect::<Result<_, _>>()
            .expect("keys");
        assert_eq!(found, [b"only-i".to_vec()]);
    };
    check(&db);
    db.close().expect("close");
    // From the log.
    let db = open(&fs);
    check(&db);
    db.flush().expect("flush");
    check(&db);
    // A segment per family that had entries, each its own.
    let rows = db.family("rows").expect("rows");
    for cf in db.families() {
        let stats = db.stats_cf(&cf).expect("stats");
        assert_eq!(stats.segments.len(), 1, "{}", cf.name());
    }
    assert_eq!(db.stats().expect("stats").segments.len(), 3);
    // "only-r" was deleted before the flush, which had nothing older to
    // hide: its tombstone is dropped.
    assert_eq!(db.stats_cf(&rows).expect("stats").total(|s| s.keys), 1);
    db.close().expect("close");
    // From the segments.
    let db = open(&fs);
    check(&db);
    db.close().expect("close");
    let db = DB::open_read_only("/db", on(&fs)).expect("read-only");
    check(&db);
}

#[test]
fn a_batch_across_families_is_atomic_and_one_snapshot_reads_them_all() {
    let fs = MemFs::new();
    let db = open(&fs);
    let rows = db.create_family("rows").expect("create");
    let idx = db.create_family("idx").expect("create");
    let mut b = WriteBatch::new();
    b.put_cf(&rows, "pk1", "alice")
        .put_cf(&idx, "alice/pk1", "");
    db.write(WriteOptions::synced(), b).expect("write");
    let before = db.snapshot();
    let mut b = WriteBatch::new();
    b.put_cf(&rows, "pk1", "bob")
        .delete_cf(&idx, "alice/pk1")
        .put_cf(&idx, "bob/pk1", "")
        .put("meta", "1");
    db.write(WriteOptions::default(), b).expect("write");
    db.flush().expect("flush");
    let at = |snap: &pith::Snapshot, cf: &ColumnFamily| {
        db.range_cf_at(cf, snap, None, None)
            .expect("live")
            .collect::<Result<Vec<_>, _>>()
            .expect("scan")
    };
    assert_eq!(at(&before, &rows), [kv("pk1", "alice")]);
    assert_eq!(at(&before, &idx), [kv("alice/pk1", "")]);
    assert_eq!(db.get_cf_at(&idx, &before, "bob/pk1").expect("get"), None);
    let now = db.snapshot();
    assert_eq!(at(&now, &rows), [kv("pk1", "bob")]);
    assert_eq!(at(&now, &idx), [kv("bob/pk1", "")]);
    assert_eq!(db.get("meta").expect("get").as_deref(), Some(&b"1"[..]));
    // A batch naming a family that is gone writes nothing at all.
    db.drop_family(&idx).expect("drop");
    let mut b = WriteBatch::new();
    b.put_cf(&rows, "pk2", "carol")
        .put_cf(&idx, "carol/pk2", "");
    let e = db
        .write(WriteOptions::default(), b)
        .expect_err("stale family");
    assert!(matches!(e, Error::NoSuchFamily { .. }), "{e:?}");
    assert_eq!(db.get_cf(&rows, "pk2").expect("get"), None);
}

#[test]
fn dropping_a_family_removes_its_data_and_files_and_its_id_is_never_reused() {
    let fs = MemFs::new();
    let db = open(&fs);
    let keep = db.create_family("keep").expect("create");
    let tmp = db.create_family("tmp").expect("create");
    for i in 0..200 {
        db.put_cf(&tmp, format!("t{i:04}"), "x".repeat(100))
            .expect("put");
        db.put_cf(&keep, format!("k{i:04}"), "y").expect("put");
    }
    db.flush().expect("flush");
    // Writes still only in the log when the family goes.
    db.put_cf(&tmp, "late", "z").expect("put");
    let segments = common::files(&fs, ".seg").len();
    let tmp_segments = db.stats_cf(&tmp).expect("stats").segments.len();
    assert!(tmp_segments >= 1);
    db.drop_family(&tmp).expect("drop");
    assert_eq!(common::files(&fs, ".seg").len(), segments - tmp_segments);
    for e in [
        db.get_cf(&tmp, "t0001").expect_err("dropped"),
        db.put_cf(&tmp, "t0001", "x").expect_err("dropped"),
        db.iter_cf(&tmp).err().expect("dropped"),
        db.drop_family(&tmp).expect_err("dropped"),
        db.stats_cf(&tmp).expect_err("dropped"),
    ] {
        assert!(
            matches!(&e, Error::NoSuchFamily { name } if name == "tmp"),
            "{e:?}"
        );
    }
    assert_eq!(db.family("tmp"), None);
    assert_eq!(scan(&db, &keep).len(), 200);
    db.close().expect("close");
    // The log's writes to it are skipped, not resurrected.
    let db = open(&fs);
    assert_eq!(db.family("tmp"), None);
    let again = db.create_family("tmp").expect("create again");
    assert!(again.id() > tmp.id(), "ids are never reused");
    assert_eq!(scan(&db, &again), []);
    // The old handle does not reach the new family of the same name.
    assert!(matches!(
        db.get_cf(&tmp, "late"),
        Err(Error::NoSuchFamily { .. })
    ));
    db.put_cf(&again, "new", "1").expect("put");
    db.close().expect("close");
    let db = open(&fs);
    let again = db.family("tmp").expect("recreated");
    assert_eq!(scan(&db, &again), [kv("new", "1")]);
    assert_eq!(scan(&db, &db.family("keep").expect("keep")).len(), 200);
    db.verify().expect("verify");
}

#[test]
fn names_in_use_bad_names_and_the_default_family_are_refused() {
    let fs = MemFs::new();
    let db = open(&fs);
    db.create_family("a").expect("create");
    assert!(matches!(db.create_family("a"), Err(Error::FamilyExists { name }) if name == "a"));
    assert!(matches!(
        db.create_family("default"),
        Err(Error::FamilyExists { .. })
    ));
    assert!(matches!(
        db.create_family(""),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        db.create_family(&"n".repeat(256)),
        Err(Error::InvalidArgument(_))
    ));
    db.create_family(&"n".repeat(255))
        .expect("255 bytes is fine");
    assert!(matches!(
        db.drop_family(&db.default_family()),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(db.default_family().id(), 0);
    db.close().expect("close");
    let db = DB::open_read_only("/db", on(&fs)).expect("read-only");
    assert!(matches!(db.create_family("b"), Err(Error::ReadOnly { .. })));
}

#[test]
fn a_database_without_families_keeps_manifest_version_2_and_one_with_them_writes_3() {
    let fs = MemFs::new();
    let db = open(&fs);
    db.put("k", "v").expect("put");
    db.flush().expect("flush");
    db.compact().expect("compact");
    assert_eq!(manifest_version(&fs), 2, "older builds must still open it");
    let f = db.create_family("f").expect("create");
    assert_eq!(manifest_version(&fs), 3);
    db.drop_family(&f).expect("drop");
    db.put("k2", "v").expect("put");
    db.flush().expect("flush");
    // The dropped id stays spent.
    assert_eq!(manifest_version(&fs), 3);
    db.close().expect("close");
    let db = open(&fs);
    assert_eq!(db.families().len(), 1);
    assert_eq!(db.get("k2").expect("get").as_deref(), Some(&b"v"[..]));
}

fn package(i: usize) -> String {
    format!(
        "Package: lib{i}\nVersion: {}.{}-1\nMaintainer: Debian Team <team@debian.org>\nDepends: libc6 (>= 2.{}), libssl3\nDescription: shared library {i}\n",
        i % 9,
        i % 13,
        30 + i % 7
    )
}

fn path(i: usize) -> String {
    format!(
        "/usr/share/doc/pkg{}/examples/{}/file-{i}.txt:{}",
        i % 97,
        i % 11,
        i * 7919 % 100_003
    )
}

#[test]
fn each_family_has_its_own_models_segments_and_merges() {
    let fs = MemFs::new();
    let options = Options {
        memtable_bytes: 256 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = DB::open("/db", options).expect("open");
    let docs = db.create_family("docs").expect("create");
    let paths = db.create_family("paths").expect("create");
    for i in 0..6_000 {
        let mut b = WriteBatch::new();
        b.put_cf(&docs, format!("d{i:06}"), package(i))
            .put_cf(&paths, format!("p{i:06}"), path(i));
        db.write(WriteOptions::default(), b).expect("write");
    }
    db.flush().expect("flush");
    let models = |cf: &ColumnFamily| -> Vec<u64> {
        db.stats_cf(cf)
            .expect("stats")
            .models
            .iter()
            .filter(|m| m.current)
            .map(|m| m.number)
            .collect()
    };
    let (docs_model, paths_model) = (models(&docs), models(&paths));
    assert_eq!(docs_model.len(), 1, "docs trained a model");
    assert_eq!(paths_model.len(), 1, "paths trained a model");
    assert_ne!(docs_model, paths_model, "each family trains its own");
    assert_eq!(models(&db.default_family()), Vec::<u64>::new());
    db.compact().expect("compact");
    for cf in [&docs, &paths] {
        let stats = db.stats_cf(cf).expect("stats");
        assert_eq!(stats.segments.len(), 1, "{} compacted", cf.name());
        assert_eq!(stats.total(|s| s.keys), 6_000);
    }
    assert_eq!(
        db.get_cf(&docs, "d000042").expect("get"),
        Some(package(42).into_bytes())
    );
    assert_eq!(
        db.get_cf(&paths, "p000042").expect("get"),
        Some(path(42).into_bytes())
    );
    // Dropping one family unlists its models and removes their files.
    let model_files = common::files(&fs, ".model").len();
    db.drop_family(&paths).expect("drop");
    assert!(common::files(&fs, ".model").len() < model_files);
    db.verify().expect("verify");
    db.close().expect("close");
    let db = DB::open(
        "/db",
        Options {
            fs: Arc::new(fs.clone()),
            ..Options::default()
        },
    )
    .expect("reopen");
    let docs = db.family("docs").expect("docs");
    assert_eq!(db.count_keys_cf(&docs).expect("count"), 6_000);
}

#[test]
fn bulk_loads_go_to_their_family() {
    let fs = MemFs::new();
    let db = open(&fs);
    let bulk = db.create_family("bulk").expect("create");
    db.put("k", "default").expect("put");
    let records = (0..500).map(|i| Ok::<_, Error>((format!("b{i:04}"), format!("v{i}"))));
    let stats = db.try_bulk_load_cf(&bulk, records).expect("load");
    assert_eq!(stats.keys, 500);
    assert_eq!(db.count_keys_cf(&bulk).expect("count"), 500);
    assert_eq!(db.get("k").expect("get").as_deref(), Some(&b"default"[..]));
    assert_eq!(db.get("b0001").expect("get"), None);
    db.close().expect("close");
    let db = open(&fs);
    let bulk = db.family("bulk").expect("bulk");
    assert_eq!(
        db.get_cf(&bulk, "b0499").expect("get").as_deref(),
        Some(&b"v499"[..])
    );
}

#[test]
fn a_load_into_several_families_installs_them_all_at_once() {
    let fs = MemFs::new();
    let db = open(&fs);
    let (a, b) = (
        db.create_family("a").expect("a"),
        db.create_family("b").expect("b"),
    );
    db.put_cf(&a, "old", "written before").expect("put");
    let before = db.snapshot();
    // Out of order, with a repeated key whose last value wins.
    let mut in_a: Vec<(Vec<u8>, Vec<u8>)> = (0..3000)
        .rev()
        .map(|i| kv(&format!("a{i:05}"), &format!("value {i} of a")))
        .collect();
    in_a.push(kv("a00007", "the last one"));
    let in_b: Vec<(Vec<u8>, Vec<u8>)> = (0..2000).map(|i| kv(&format!("b{i:05}"), "b")).collect();
    let stats = db
        .bulk_load_families(vec![
            (&a, in_a.into_iter().collect()),
            (&b, in_b.into_iter().collect()),
            (&db.default_family(), Records::new()),
        ])
        .expect("load");
    assert_eq!((stats.records, stats.keys, stats.segments), (5001, 5000, 2));
    // Flushed first: the earlier write is in a segment of its own.
    assert_eq!(db.stats_cf(&a).expect("stats").segments.len(), 2);
    assert_eq!(db.count_keys_cf(&a).expect("count"), 3001);
    assert_eq!(db.count_keys_cf(&b).expect("count"), 2000);
    assert_eq!(db.count_keys_cf(&db.default_family()).expect("count"), 0);
    // A snapshot from before sees none of it, in either family.
    assert_eq!(db.get_cf_at(&a, &before, "a00001").expect("get"), None);
    assert_eq!(db.get_cf_at(&b, &before, "b00001").expect("get"), None);
    let got = db
        .multi_get_cf(vec![
            (&a, &b"a00007"[..]),
            (&b, b"b01999"),
            (&a, b"nope"),
            (&a, b"old"),
        ])
        .expect("multi get");
    let want: Vec<Option<&[u8]>> = vec![
        Some(b"the last one"),
        Some(b"b"),
        None,
        Some(b"written before"),
    ];
    assert_eq!(got.iter().map(|v| v.as_deref()).collect::<Vec<_>>(), want);
    let at = db
        .multi_get_cf_at(&before, [(&a, "old"), (&b, "b00000")])
        .expect("multi get at");
    assert_eq!(at, vec![Some(b"written before".to_vec()), None]);
    drop(before);
    db.close().expect("close");
    let db = open(&fs);
    let (a, b) = (db.family("a").expect("a"), db.family("b").expect("b"));
    assert_eq!(
        db.get_cf(&a, "a02999").expect("get").as_deref(),
        Some(&b"value 2999 of a"[..])
    );
    assert_eq!(db.count_keys_cf(&b).expect("count"), 2000);
    assert!(db.verify().is_ok());
}

#[test]
fn a_load_naming_a_family_twice_or_a_dropped_one_loads_nothing() {
    let fs = MemFs::new();
    let db = open(&fs);
    let (a, gone) = (
        db.create_family("a").expect("a"),
        db.create_family("gone").expect("gone"),
    );
    db.drop_family(&gone).expect("drop");
    let records = || -> Records { [kv("k1", "v1"), kv("k2", "v2")].into_iter().collect() };
    let twice = db.bulk_load_families(vec![(&a, records()), (&a, records())]);
    assert!(matches!(twice, Err(Error::InvalidArgument(_))), "{twice:?}");
    let dropped = db.bulk_load_families(vec![(&a, records()), (&gone, records())]);
    assert!(
        matches!(dropped, Err(Error::NoSuchFamily { .. })),
        "{dropped:?}"
    );
    assert_eq!(db.count_keys_cf(&a).expect("count"), 0);
    let stale = db.multi_get_cf([(&a, "k1"), (&gone, "k1")]);
    assert!(
        matches!(stale, Err(Error::NoSuchFamily { .. })),
        "{stale:?}"
    );
    // Nothing was built: only the manifest, the log and the lock remain.
    let segments = fs
        .list(Path::new("/db"))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".seg") || n.ends_with(".model") || n.ends_with(".tmp"))
        .count();
    assert_eq!(segments, 0);
}

/// An I/O error at each call of a load into three families in turn: each
/// failed load leaves no family loaded and no file behind (what the other
/// families built is removed), and the database stays writable or
/// reopens clean.
#[test]
fn a_load_that_fails_anywhere_leaves_no_family_loaded_and_no_file() {
    use pith::env::{FaultFs, Injected};
    let records = |p: &str| -> Records {
        (0..1500)
            .map(|i| kv(&format!("{p}{i:05}"), &format!("{p} value {}", package(i))))
            .collect()
    };
    let built = |fs: &MemFs| {
        fs.list(Path::new("/db"))
            .expect("list")
            .into_iter()
            .filter(|n| n.ends_with(".seg") || n.ends_with(".model") || n.ends_with(".tmp"))
            .count()
    };
    let mut failures = 0;
    for at in 1.. {
        let mem = MemFs::new();
        let fault = FaultFs::over_mem(mem.clone());
        let options = Options {
            fs: Arc::new(fault.clone()),
            ..common::small()
        };
        let db = DB::open("/db", options.clone()).expect("open");
        let names = ["x", "y", "z"];
        let cfs: Vec<ColumnFamily> = names
            .iter()
            .map(|n| db.create_family(n).expect("create"))
            .collect();
        fault.fail_call(fault.calls() + at, Injected::Eio);
        let loads = cfs
            .iter()
            .zip(names)
            .map(|(cf, n)| (cf, records(n)))
            .collect();
        let loaded = db.bulk_load_families(loads);
        fault.clear();
        if loaded.is_ok() {
            assert_eq!(db.count_keys_cf(&cfs[2]).expect("count"), 1500);
            break;
        }
        failures += 1;
        for cf in &cfs {
            assert_eq!(
                db.count_keys_cf(cf).expect("count"),
                0,
                "failure at call {at}"
            );
        }
        // A failed build removes every file at once; a failed install
        // stops writes, and the next open removes what it left.
        if db.put("probe", "still writable").is_ok() {
            assert_eq!(built(&mem), 0, "files left by a load failed at call {at}");
        }
        drop(db);
        // A load whose manifest record was written but not synced may
        // be there after the reopen, as any write that failed: whole.
        let db = DB::open("/db", options).expect("reopen");
        let counts: Vec<u64> = names
            .iter()
            .map(|n| {
                let cf = db.family(n).expect("family");
                db.count_keys_cf(&cf).expect("count")
            })
            .collect();
        assert!(
            counts == [0, 0, 0] || counts == [1500, 1500, 1500],
            "failure at call {at}: a part of the load after reopen: {counts:?}"
        );
        // The reopen replayed the log (the probe) into a memtable that the
        // background thread builds now: its build's temporary file is not
        // a leftover, so the count waits for it to finish.
        db.flush().expect("flush");
        let files = mem.list(Path::new("/db")).expect("list");
        let stats = db.stats().expect("stats");
        let wanted = stats.segments.len() + stats.models.len();
        assert!(
            built(&mem) <= wanted,
            "files left after reopen, failure at call {at}: {files:?}"
        );
        assert!(db.verify().is_ok());
    }
    assert!(failures > 10, "only {failures} calls to fail");
}

/// What the property test does, on three family names.
#[derive(Clone, Debug)]
enum Op {
    Put(usize, u8, u8),
    Delete(usize, u8),
    /// Puts (`Some(value)`) and deletes across families.
    Batch(Vec<(usize, u8, Option<u8>)>),
    /// Drop the family and create it again under the same name, empty.
    Recreate(usize),
    Flush,
    Compact,
    Reopen,
}

const NAMES: [&str; 3] = ["default", "a", "b"];

fn op() -> impl Strategy<Value = Op> {
    let f = 0..NAMES.len();
    prop_oneof![
        8 => (f.clone(), 0..16u8, any::<u8>()).prop_map(|(f, k, v)| Op::Put(f, k, v)),
        3 => (f.clone(), 0..16u8).prop_map(|(f, k)| Op::Delete(f, k)),
        3 => prop::collection::vec((f.clone(), 0..16u8, prop::option::of(any::<u8>())), 1..6)
            .prop_map(Op::Batch),
        1 => (1..NAMES.len()).prop_map(Op::Recreate),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

type Model = BTreeMap<&'static str, BTreeMap<Vec<u8>, Vec<u8>>>;

fn key(k: u8) -> Vec<u8> {
    vec![b'k', k]
}

fn check(db: &DB, model: &Model) {
    let snap = db.snapshot();
    for name in NAMES {
        let cf = db.family(name).expect("family");
        let got: BTreeMap<Vec<u8>, Vec<u8>> = db
            .range_cf_at(&cf, &snap, None, None)
            .expect("live")
            .collect::<Result<_, _>>()
            .expect("scan");
        assert_eq!(&got, &model[name], "family {name}");
    }
    // Every key of every family in one batched read (families taking
    // turns, settled or not), against the model and at the same snapshot.
    let families: Vec<(&str, ColumnFamily)> = NAMES
        .iter()
        .map(|n| (*n, db.family(n).expect("family")))
        .collect();
    let reads: Vec<(&str, &ColumnFamily, Vec<u8>)> = (0..17u8)
        .flat_map(|k| families.iter().map(move |(n, cf)| (*n, cf, key(k))))
        .collect();
    let mut got = Vec::new();
    db.multi_get_cf_at_with(
        &snap,
        reads.iter().map(|(_, cf, k)| (*cf, k)),
        |i, v| -> Result<(), Error> {
            got.push((i, v.map(<[u8]>::to_vec)));
            Ok(())
        },
    )
    .expect("multi get");
    let want: Vec<(usize, Option<Vec<u8>>)> = reads
        .iter()
        .enumerate()
        .map(|(i, (n, _, k))| (i, model[n].get(k).cloned()))
        .collect();
    assert_eq!(got, want, "batched reads");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases()))]

    #[test]
    fn families_match_a_model(ops in prop::collection::vec(op(), 1..60)) {
        let fs = MemFs::new();
        let mut db = open(&fs);
        for name in &NAMES[1..] {
            db.create_family(name).expect("create");
        }
        let mut model: Model = NAMES.iter().map(|n| (*n, BTreeMap::new())).collect();
        for op in &ops {
            let cf = |f: usize| db.family(NAMES[f]).expect("family");
            match op {
                Op::Put(f, k, v) => {
                    db.put_cf(&cf(*f), key(*k), [*v]).expect("put");
                    model.get_mut(NAMES[*f]).expect("name").insert(key(*k), vec![*v]);
                }
                Op::Delete(f, k) => {
                    db.delete_cf(&cf(*f), key(*k)).expect("delete");
                    model.get_mut(NAMES[*f]).expect("name").remove(&key(*k));
                }
                Op::Batch(ops) => {
                    let mut b = WriteBatch::new();
                    for (f, k, v) in ops {
                        let m = model.get_mut(NAMES[*f]).expect("name");
                        match v {
                            Some(v) => {
                                b.put_cf(&cf(*f), key(*k), [*v]);
                                m.insert(key(*k), vec![*v]);
                            }
                            None => {
                                b.delete_cf(&cf(*f), key(*k));
                                m.remove(&key(*k));
                            }
                        }
                    }
                    db.write(WriteOptions::default(), b).expect("write");
                }
                Op::Recreate(f) => {
                    db.drop_family(&cf(*f)).expect("drop");
                    db.create_family(NAMES[*f]).expect("create");
                    model.get_mut(NAMES[*f]).expect("name").clear();
                }
                Op::Flush => db.flush().expect("flush"),
                Op::Compact => db.compact().expect("compact"),
                Op::Reopen => {
                    db.close().expect("close");
                    db = open(&fs);
                }
            }
            check(&db, &model);
        }
        db.verify().expect("verify");
    }
}

/// A key range: from (included) and to (excluded), open when `None`.
type Bounds = (Option<&'static [u8]>, Option<&'static [u8]>);

#[test]
fn range_counts_agree_with_scans_settled_or_not() {
    let fs = MemFs::new();
    let db = open(&fs);
    let f = db.create_family("f").expect("create");
    for i in 0..500u32 {
        db.put_cf(&f, format!("k{i:04}"), "v").expect("put");
    }
    let bounds: [Bounds; 5] = [
        (None, None),
        (Some(b"k0100"), Some(b"k0200")),
        (Some(b"k01"), None),
        (None, Some(b"k0042")),
        (Some(b"z"), Some(b"zz")),
    ];
    let check = |db: &DB, snap: Option<&pith::Snapshot>| {
        for (from, to) in bounds {
            let scanned = match snap {
                Some(s) => db.range_cf_at(&f, s, from, to).expect("scan").count(),
                None => db.range_cf(&f, from, to).expect("scan").count(),
            } as u64;
            let counted = match snap {
                Some(s) => db.count_range_cf_at(&f, s, from, to).expect("count"),
                None => db.count_range_cf(&f, from, to).expect("count"),
            };
            assert_eq!(counted, scanned, "{from:?}..{to:?}");
            // Keys visited (forward and backward, all or the first 7)
            // are the scan's keys.
            let owned = db.snapshot();
            let at = snap.unwrap_or(&owned);
            let keys: Vec<Vec<u8>> = db
                .range_cf_at(&f, at, from, to)
                .expect("scan")
                .keys()
                .collect::<Result<_, _>>()
                .expect("keys");
            for reverse in [false, true] {
                for limit in [usize::MAX, 7] {
                    let mut visited = Vec::new();
                    db.for_each_key_cf_at(&f, at, from, to, reverse, &mut |k| {
                        visited.push(k.to_vec());
                        visited.len() < limit
                    })
                    .expect("visit");
                    let mut want = keys.clone();
                    if reverse {
                        want.reverse();
                    }
                    want.truncate(limit);
                    assert_eq!(
                        visited, want,
                        "{from:?}..{to:?} reverse {reverse} limit {limit}"
                    );
                }
            }
            // Keys with their values, forward and backward, likewise.
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = db
                .range_cf_at(&f, at, from, to)
                .expect("scan")
                .collect::<Result<_, _>>()
                .expect("pairs");
            for reverse in [false, true] {
                let mut visited = Vec::new();
                db.for_each_cf_at(&f, at, from, to, reverse, &mut |k, v| {
                    visited.push((k.to_vec(), v.to_vec()));
                    true
                })
                .expect("visit values");
                let mut want = pairs.clone();
                if reverse {
                    want.reverse();
                }
                assert_eq!(visited, want, "{from:?}..{to:?} values, reverse {reverse}");
            }
            // Values read into one buffer are the scan's values.
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = db
                .range_cf_at(&f, at, from, to)
                .expect("scan")
                .collect::<Result<_, _>>()
                .expect("pairs");
            let mut got = Vec::new();
            let absent = b"absent".to_vec();
            let reads = pairs.iter().map(|(k, _)| (&f, k)).chain([(&f, &absent)]);
            db.multi_get_cf_at_with(at, reads, |i, v| -> Result<(), Error> {
                got.push((i, v.map(<[u8]>::to_vec)));
                Ok(())
            })
            .expect("multi get");
            let mut want: Vec<(usize, Option<Vec<u8>>)> = pairs
                .iter()
                .enumerate()
                .map(|(i, (_, v))| (i, Some(v.clone())))
                .collect();
            want.push((pairs.len(), None));
            assert_eq!(got, want);
        }
    };
    check(&db, None); // memtable: walked
    db.compact().expect("compact");
    check(&db, None); // one settled segment: two trie ranks
    let snap = db.snapshot();
    db.delete_cf(&f, "k0150").expect("delete");
    db.put_cf(&f, "k0150x", "v").expect("put");
    db.flush().expect("flush");
    check(&db, None); // a tombstone: walked
    check(&db, Some(&snap));
    assert_eq!(
        db.count_range_cf(&f, Some(b"k0100"), Some(b"k0200"))
            .expect("count"),
        100
    );
    drop(snap);
    db.compact().expect("compact");
    check(&db, None);
}

/// A family's own Bloom setting: its segments get no filter (smaller by
/// the filter, about 1.2 bytes a key), point reads still find every key,
/// and the other families keep theirs; a dropped family's handle is
/// refused.
#[test]
fn family_options_set_the_bloom_filter_per_family() {
    let fs = MemFs::new();
    let db = open(&fs);
    let (with, without) = (
        db.create_family("with").expect("create"),
        db.create_family("without").expect("create"),
    );
    db.set_family_options(&without, pith::FamilyOptions::new().bloom_bits_per_key(0))
        .expect("options");
    let keys: Vec<String> = (0..2000)
        .map(|i| format!("key{i:06}-{}", i * 7919 % 1000))
        .collect();
    for cf in [&with, &without] {
        let mut b = WriteBatch::new();
        for k in &keys {
            b.put_cf(cf, k, "v");
        }
        db.write(WriteOptions::default(), b).expect("write");
    }
    db.flush().expect("flush");
    let meta = |cf: &ColumnFamily| -> u64 {
        let s = db.stats_cf(cf).expect("stats");
        assert_eq!(s.segments.len(), 1);
        s.segments[0].meta_bytes
    };
    let (m_with, m_without) = (meta(&with), meta(&without));
    assert!(
        m_with >= m_without + 2000,
        "10 bits a key make 2,500 bytes of filter: {m_with} against {m_without}"
    );
    for cf in [&with, &without] {
        for k in keys.iter().step_by(37) {
            assert_eq!(db.get_cf(cf, k).expect("get").as_deref(), Some(&b"v"[..]));
        }
        assert_eq!(db.get_cf(cf, "absent").expect("get"), None);
    }
    db.drop_family(&without).expect("drop");
    assert!(matches!(
        db.set_family_options(&without, pith::FamilyOptions::new()),
        Err(Error::NoSuchFamily { .. })
    ));
}
