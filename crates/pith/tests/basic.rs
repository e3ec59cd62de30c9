//! End-to-end behaviour of the public API.

mod common;

use pith::{Error, Options, WriteBatch, WriteOptions, DB};

#[test]
fn put_get_delete_across_flush_merge_and_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model = std::collections::BTreeMap::new();
    {
        let db = DB::open(dir.path(), common::small()).expect("open");
        for i in 0..3000u32 {
            let k = format!("key{:05}", (i * 7919) % 2000);
            let v = format!("value {i} {}", "x".repeat((i % 50) as usize));
            db.put(&k, &v).expect("put");
            model.insert(k.into_bytes(), v.into_bytes());
            if i % 11 == 0 {
                let k = format!("key{:05}", (i * 31) % 2000);
                db.delete(&k).expect("delete");
                model.remove(k.as_bytes());
            }
        }
        db.flush().expect("flush");
        assert!(!db.stats().expect("stats").segments.is_empty());
        for (k, v) in &model {
            assert_eq!(db.get(k).expect("get").as_ref(), Some(v));
        }
        assert_eq!(
            common::all(&db),
            model.clone().into_iter().collect::<Vec<_>>()
        );
    }
    let db = DB::open(dir.path(), common::small()).expect("reopen");
    assert_eq!(
        common::all(&db),
        model.clone().into_iter().collect::<Vec<_>>()
    );
    db.compact().expect("compact");
    let stats = db.stats().expect("stats");
    assert_eq!(stats.segments.len(), 1);
    assert_eq!(stats.segments[0].keys as usize, model.len());
    assert_eq!(common::all(&db), model.into_iter().collect::<Vec<_>>());
    db.verify().expect("verify");
}

#[test]
fn iterator_moves_both_ways_over_all_sources() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = DB::open(dir.path(), common::small()).expect("open");
    for i in (0..100u32).step_by(2) {
        db.put(format!("k{i:03}"), "seg").expect("put");
    }
    db.flush().expect("flush");
    for i in (1..100u32).step_by(2) {
        db.put(format!("k{i:03}"), "mem").expect("put");
    }
    db.delete("k050").expect("delete");
    let mut it = db.iter();
    it.seek(b"k049");
    assert_eq!(it.key(), Some(&b"k049"[..]));
    it.next();
    assert_eq!(it.key(), Some(&b"k051"[..]));
    it.prev();
    assert_eq!(it.key(), Some(&b"k049"[..]));
    it.prev();
    assert_eq!(
        (it.key(), it.value()),
        (Some(&b"k048"[..]), Some(&b"seg"[..]))
    );
    it.seek_to_last();
    assert_eq!(it.key(), Some(&b"k099"[..]));
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.prev();
    }
    assert_eq!(n, 99);
    it.seek_for_prev(b"k050");
    assert_eq!(it.key(), Some(&b"k049"[..]));
}

#[test]
fn snapshots_survive_flush_and_merge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = DB::open(dir.path(), common::small()).expect("open");
    db.put("a", "1").expect("put");
    db.put("b", "1").expect("put");
    let s1 = db.snapshot();
    db.put("a", "2").expect("put");
    db.delete("b").expect("delete");
    db.flush().expect("flush");
    let s2 = db.snapshot();
    db.put("a", "3").expect("put");
    db.compact().expect("compact");
    assert_eq!(
        db.get_at(&s1, "a").expect("get").as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(
        db.get_at(&s1, "b").expect("get").as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(
        db.get_at(&s2, "a").expect("get").as_deref(),
        Some(&b"2"[..])
    );
    assert_eq!(db.get_at(&s2, "b").expect("get"), None);
    assert_eq!(db.get("a").expect("get").as_deref(), Some(&b"3"[..]));
    let mut it = db.iter_at(&s1);
    it.seek_to_first();
    assert_eq!(it.key(), Some(&b"a"[..]));
    drop((s1, s2));
    db.compact().expect("compact");
    let st = db.stats().expect("stats");
    assert_eq!(
        st.total(|s| s.records),
        1,
        "old versions dropped once no snapshot needs them"
    );
}

/// A build that will be the oldest segment, while no snapshot is older
/// than its newest version, writes every record at one sequence number:
/// its tags take no bits. A snapshot older than that keeps them, and
/// reads at every point stay right either way, newer writes shadowing the
/// forgotten versions and after a reopen.
#[test]
fn the_oldest_segment_forgets_sequence_numbers_no_reader_needs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model = std::collections::BTreeMap::new();
    // Memtables large enough that only `flush` and `compact` build.
    let db = DB::open(dir.path(), Options::default()).expect("open");
    let tag_bits = |db: &DB| -> Vec<u32> {
        let st = db.stats().expect("stats");
        st.segments.iter().map(|s| s.tag_bits).collect()
    };
    for i in 0..600u32 {
        let (k, v) = (format!("k{:03}", i % 200), format!("v{i}"));
        db.put(&k, &v).expect("put");
        model.insert(k, v);
    }
    db.flush().expect("flush");
    assert_eq!(tag_bits(&db), [0], "a first flush with no snapshot");

    // Keys new since a snapshot: no older version of them is kept, so
    // only the rule itself keeps their sequence numbers from the snapshot.
    let snap = db.snapshot();
    let at_snap = model.clone();
    for k in ["k900", "k901"] {
        db.put(k, "new key").expect("put");
        model.insert(k.into(), "new key".into());
    }
    db.flush().expect("flush");
    let bits = tag_bits(&db);
    assert!(
        bits[0] == 0 && bits[1] > 0,
        "a flush above another: {bits:?}"
    );
    db.compact().expect("compact");
    let bits = tag_bits(&db);
    assert!(
        bits.len() == 1 && bits[0] > 0,
        "the snapshot is older: {bits:?}"
    );
    for k in model.keys() {
        assert_eq!(
            db.get_at(&snap, k).expect("get").as_deref(),
            at_snap.get(k).map(String::as_bytes),
            "{k} at the snapshot"
        );
    }
    drop(snap);

    // Newer versions and a tombstone over forgotten ones, merged.
    db.put("k000", "new").expect("put");
    model.insert("k000".into(), "new".into());
    db.delete("k002").expect("delete");
    model.remove("k002");
    db.flush().expect("flush");
    assert_eq!(db.get("k000").expect("get").as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get("k002").expect("get"), None);
    db.compact().expect("compact");
    assert_eq!(tag_bits(&db), [0], "a full merge with no snapshot");
    let want: Vec<(Vec<u8>, Vec<u8>)> = model
        .iter()
        .map(|(k, v)| (k.clone().into_bytes(), v.clone().into_bytes()))
        .collect();
    assert_eq!(common::all(&db), want);
    db.verify().expect("verify");
    drop(db);
    let db = DB::open(dir.path(), Options::default()).expect("reopen");
    assert_eq!(common::all(&db), want);
    db.put("k005", "after").expect("put");
    assert_eq!(db.get("k005").expect("get").as_deref(), Some(&b"after"[..]));
    db.compact().expect("compact");
    assert_eq!(db.get("k005").expect("get").as_deref(), Some(&b"after"[..]));
    assert_eq!(tag_bits(&db), [0]);
}

#[test]
fn second_open_is_locked_out_and_options_are_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = DB::open(dir.path(), Options::default()).expect("open");
    match DB::open(dir.path(), Options::default()) {
        Err(Error::Locked { .. }) => {}
        other => panic!("expected Locked, got {:?}", other.map(|_| ())),
    }
    drop(db);
    let opts = Options {
        error_if_exists: true,
        ..Options::default()
    };
    assert!(matches!(
        DB::open(dir.path(), opts),
        Err(Error::AlreadyExists { .. })
    ));
    let missing = dir.path().join("nothing");
    let opts = Options {
        create_if_missing: false,
        ..Options::default()
    };
    assert!(matches!(
        DB::open(&missing, opts),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn background_threads_run_at_the_priority_asked_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        background_nice: 20,
        ..Options::default()
    };
    match DB::open(dir.path(), opts) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("background_nice is 20"), "{m}"),
        other => panic!("expected InvalidArgument, got {:?}", other.map(|_| ())),
    }
    // The thread's nice value is field 19 of its stat line (Linux only:
    // elsewhere the option is documented to do nothing).
    if !cfg!(target_os = "linux") {
        return;
    }
    fn nice_of(name: &str) -> Option<i64> {
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() == name {
                let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
                let after_name = &stat[stat.rfind(')')? + 2..];
                return after_name.split(' ').nth(16)?.parse().ok();
            }
        }
        None
    }
    let me = std::fs::read_to_string("/proc/thread-self/comm").expect("comm");
    let ours = nice_of(me.trim_end());
    let opts = Options {
        background_nice: 7,
        ..Options::default()
    };
    let db = DB::open(dir.path(), opts).expect("open");
    db.put("k", "v").expect("put");
    db.flush().expect("flush: the lowered thread still works");
    let ours = ours.expect("this thread's nice value");
    // Each thread lowers itself as it starts; the merge thread may not
    // have run yet.
    let want = (ours + 7).min(19);
    for name in ["pith-flush", "pith-merge"] {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut nice = nice_of(name);
        while nice != Some(want) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
            nice = nice_of(name);
        }
        assert_eq!(nice, Some(want), "{name}");
    }
}

#[test]
fn batches_are_atomic_and_empty_keys_and_values_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = DB::open(dir.path(), common::small()).expect("open");
    let mut b = WriteBatch::new();
    b.put("", "empty key")
        .put("k", "")
        .put(vec![0u8, 255], vec![1u8; 100_000]);
    db.write(WriteOptions::synced(), b).expect("write");
    db.flush().expect("flush");
    assert_eq!(db.get("").expect("get").as_deref(), Some(&b"empty key"[..]));
    assert_eq!(db.get("k").expect("get").as_deref(), Some(&b""[..]));
    assert_eq!(
        db.get([0u8, 255]).expect("get").map(|v| v.len()),
        Some(100_000)
    );
}

#[test]
fn bulk_load_then_search_and_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = DB::open(dir.path(), common::small()).expect("open");
    db.put("zzz", "before").expect("put");
    let records = (0..5000u32).rev().map(|i| {
        (
            format!("pkg{i:04}/1.{}", i % 7),
            format!("Package: pkg{i}\n"),
        )
    });
    let stats = db.bulk_load(records).expect("bulk");
    assert_eq!(stats.keys, 5000);
    db.put("pkg0001/1.1", "after").expect("put");
    assert_eq!(
        db.get("pkg0001/1.1").expect("get").as_deref(),
        Some(&b"after"[..])
    );
    assert_eq!(db.get("zzz").expect("get").as_deref(), Some(&b"before"[..]));
    let found: Vec<Vec<u8>> = db
        .search("pkg00[0-4]./1\\.3")
        .expect("search")
        .keys()
        .collect::<Result<_, _>>()
        .expect("keys");
    assert_eq!(found.len(), 7, "{found:?}");
    assert_eq!(db.prefix(b"pkg012").count(), 10);
}

#[test]
fn a_build_memory_budget_still_builds_every_segment_kind() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        build_memory_bytes: Some(256 << 10),
        ..common::small()
    };
    let db = DB::open(dir.path(), options.clone()).unwrap();
    let value = |i: u32| {
        format!(
            "Package: lib{i}\nVersion: {}.{}\nDepends: libc6\n",
            i % 9,
            i % 31
        )
    };
    for i in 0..3000u32 {
        db.put(format!("k{i:05}").as_bytes(), value(i).as_bytes())
            .unwrap();
    }
    db.compact().unwrap();
    db.close().unwrap();
    let db = DB::open(dir.path(), options).unwrap();
    for i in (0..3000u32).step_by(7) {
        let got = db.get(format!("k{i:05}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(value(i).as_bytes()), "k{i:05}");
    }
    db.verify().unwrap();
}

/// With `resident_index` a segment's lookup sections are copied into
/// memory (and counted), without it they are not; reads agree either way,
/// and a database written with one opens with the other.
#[test]
fn resident_index_is_counted_and_changes_no_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut expected = Vec::new();
    for (pass, resident) in [(0u32, true), (1, false), (2, true)] {
        let options = Options {
            resident_index: resident,
            ..common::small()
        };
        let db = DB::open(dir.path(), options).expect("open");
        for i in 0..500u32 {
            let k = format!("key{pass}-{i:04}");
            let v = format!("value {i} {}", "y".repeat((i % 40) as usize));
            db.put(&k, &v).expect("put");
            expected.push((k.into_bytes(), v.into_bytes()));
        }
        db.flush().expect("flush");
        expected.sort();
        let stats = db.stats().expect("stats");
        assert!(!stats.segments.is_empty());
        for s in &stats.segments {
            let floor = s.index_bytes + s.meta_bytes;
            if resident {
                // And the store's record offsets: a few words of header,
                // a base every 64 records and at most a word a record.
                let offsets_ceiling = 8 * (4 + s.records / 64 + s.records);
                assert!(s.resident_bytes > floor, "{s:?}");
                assert!(s.resident_bytes < floor + 64 + offsets_ceiling, "{s:?}");
            } else {
                assert_eq!(s.resident_bytes, 0, "{s:?}");
            }
        }
        assert_eq!(common::all(&db), expected);
        for (k, v) in &expected {
            assert_eq!(db.get(k).expect("get").as_ref(), Some(v));
        }
        db.verify().expect("verify");
    }
}

/// A merge's inputs leave the value cache with them: once the compaction
/// is done and no reader holds the old segments, the cache holds none of
/// their values (they would otherwise hold the budget until evicted).
#[test]
fn values_of_merged_segments_leave_the_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        value_cache_bytes: 1 << 20,
        ..common::small()
    };
    let db = DB::open(dir.path(), options).expect("open");
    for half in 0..2u32 {
        for i in (half..1_000).step_by(2) {
            db.put(format!("key{i:05}"), format!("value {i}"))
                .expect("put");
        }
        db.flush().expect("flush");
    }
    // No background merge may drop the values read below before the
    // count: the 16 KiB memtables made several segments.
    db.settle().expect("settle");
    for i in 0..1_000u32 {
        assert!(db.get(format!("key{i:05}")).expect("get").is_some());
    }
    assert!(db.stats().expect("stats").value_cache.values >= 1_000);
    db.compact().expect("compact");
    let after = db.stats().expect("stats").value_cache;
    assert_eq!((after.values, after.charged_bytes), (0, 0), "{after:?}");
    for i in 0..1_000u32 {
        assert_eq!(
            db.get(format!("key{i:05}")).expect("get"),
            Some(format!("value {i}").into_bytes())
        );
    }
    assert!(db.stats().expect("stats").value_cache.values >= 1_000);
}

/// Reads through the value cache answer what reads without it do, before
/// and after overwrites, deletes, a merge and a reopen (a cached value is
/// never served for a key rewritten since); repeated reads hit it, and
/// stats count them.
#[test]
fn value_cache_serves_repeated_reads_and_never_a_stale_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let uncached = tempfile::tempdir().expect("tempdir");
    let open = |path: &std::path::Path, cache: usize| {
        let options = Options {
            value_cache_bytes: cache,
            ..common::small()
        };
        DB::open(path, options).expect("open")
    };
    let value =
        |round: u32, i: u32| format!("round {round} value {i} {}", "z".repeat((i % 50) as usize));
    let (db, plain) = (open(dir.path(), 1 << 20), open(uncached.path(), 0));
    for round in 0..3u32 {
        for i in (0..2_000u32).filter(|i| round == 0 || i % (round + 2) == 0) {
            let k = format!("key{i:05}");
            for d in [&db, &plain] {
                if round == 2 && i % 8 == 0 {
                    d.delete(&k).expect("delete");
                } else {
                    d.put(&k, value(round, i)).expect("put");
                }
            }
        }
        for d in [&db, &plain] {
            d.flush().expect("flush");
        }
        for _ in 0..2 {
            assert_eq!(common::all(&db), common::all(&plain), "round {round}");
            for i in (0..2_000u32).step_by(3) {
                let k = format!("key{i:05}");
                assert_eq!(db.get(&k).expect("get"), plain.get(&k).expect("get"), "{k}");
            }
        }
        db.compact().expect("compact");
    }
    // The last compaction took its inputs' values out of the cache; reads
    // of the merged segment fill it again.
    assert_eq!(common::all(&db), common::all(&plain), "after the merges");
    let stats = db.stats().expect("stats");
    assert!(stats.value_cache.hits > 2_000, "{:?}", stats.value_cache);
    assert!(stats.value_cache.values > 0);
    assert!(stats.value_cache.charged_bytes <= stats.value_cache.capacity_bytes);
    assert_eq!(
        plain.stats().expect("stats").value_cache,
        pith::ValueCacheStats::default()
    );
    drop(db);
    let db = open(dir.path(), 1 << 20);
    assert_eq!(common::all(&db), common::all(&plain), "after reopen");
    db.verify().expect("verify");
}

/// Integer keys close together (four bytes, big-endian, every third one
/// missing) get a dense-key trie and no Bloom filter; every read still
/// answers, before and after a merge and a reopen: gets of present keys,
/// of missing ones, of keys of other widths, scans, seeks both ways.
#[test]
fn dense_integer_keys_index_themselves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = |i: u32| i.to_be_bytes();
    let present = |i: u32| i % 3 != 1;
    let fill = |db: &DB| {
        for i in (0..30_000).rev().filter(|&i| present(i)) {
            db.put(key(i), format!("v{i}")).expect("put");
        }
        db.flush().expect("flush");
    };
    // The same keys with filters turned off: what the segment's tags,
    // history and filter take when the filter is empty.
    let unfiltered = tempfile::tempdir().expect("tempdir");
    let no_filter = Options {
        bloom_bits_per_key: 0,
        ..Options::default()
    };
    let meta_without_filter = {
        let db = DB::open(unfiltered.path(), no_filter).expect("open");
        fill(&db);
        db.stats().expect("stats").segments[0].meta_bytes
    };
    let check = |db: &DB| {
        let stats = db.stats().expect("stats");
        assert_eq!(stats.segments.len(), 1);
        let seg = &stats.segments[0];
        // 20,000 four-byte keys: a bit vector of 30,000 bits and its
        // directories (a LOUDS trie took about 2 bytes a key), and no
        // filter although the options ask for one.
        assert!(seg.index_bytes < 6_000, "trie {} B", seg.index_bytes);
        assert_eq!(seg.meta_bytes, meta_without_filter);
        for i in (0..30_000).step_by(7).chain([0, 1, 29_998, 29_999, 30_000]) {
            let want = present(i) && i < 30_000;
            let got = db.get(key(i)).expect("get");
            assert_eq!(got, want.then(|| format!("v{i}").into_bytes()), "key {i}");
        }
        for other in [&[0u8, 0, 3][..], &[0, 0, 0, 3, 0], b"", &[0xFF; 4]] {
            assert_eq!(db.get(other).expect("get"), None, "{other:?}");
        }
        let keys: Vec<Vec<u8>> = common::all(db).into_iter().map(|(k, _)| k).collect();
        let want: Vec<Vec<u8>> = (0..30_000)
            .filter(|&i| present(i))
            .map(|i| key(i).to_vec())
            .collect();
        assert_eq!(keys, want);
        let mut it = db.iter();
        it.seek(&key(301)); // missing: lands on 302
        assert_eq!(it.key(), Some(&key(302)[..]));
        it.prev();
        assert_eq!(it.key(), Some(&key(300)[..]));
        it.seek(&[0, 0, 1]); // a shorter key: 256 is missing, so 257
        assert_eq!(it.key(), Some(&key(257)[..]));
        it.seek_for_prev(&[0, 0, 1, 0x2D, 0]); // a longer key: 301 is missing, so 300
        assert_eq!(it.key(), Some(&key(300)[..]));
        db.verify().expect("verify");
    };
    {
        let db = DB::open(dir.path(), Options::default()).expect("open");
        fill(&db);
        check(&db);
    }
    let db = DB::open(dir.path(), Options::default()).expect("reopen");
    check(&db);
    db.compact().expect("compact");
    check(&db);
}

/// Keys that repeat their ends among neighbours, as Debian's package keys
/// do (a source's packages share a version), get a segment trie whose
/// labels are copies (trie format version 6); the database answers from
/// it as from any other, across reopen and verify.
#[test]
fn keys_sharing_versions_get_copied_tails_end_to_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model = std::collections::BTreeMap::new();
    for i in 0..3000u64 {
        let v = (i / 5).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24;
        let part = ["", "-dev", "-doc", "-common-data", "-utils"][i as usize % 5];
        let flavour = ["x", "gtk", "perl"][(v % 3) as usize];
        let key = format!(
            "lib{}{flavour}{part}/{}.{}-{}",
            v % 997,
            v % 89,
            v / 89 % 1000,
            i / 5 % 4
        );
        model.insert(key.into_bytes(), format!("value {i}").into_bytes());
    }
    {
        let db = DB::open(dir.path(), common::small()).expect("open");
        for (k, v) in &model {
            db.put(k, v).expect("put");
        }
        db.compact().expect("compact");
    }
    // The segment's trie, found by its magic, is version 6.
    let mut versions = Vec::new();
    for entry in std::fs::read_dir(dir.path()).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "seg") {
            let bytes = std::fs::read(&path).expect("read segment");
            let at = bytes
                .windows(8)
                .position(|w| w == b"PITHTRIE")
                .expect("a trie in the segment");
            versions.push(u32::from_le_bytes(
                bytes[at + 8..at + 12].try_into().unwrap(),
            ));
        }
    }
    assert_eq!(versions, [6]);
    let db = DB::open(dir.path(), common::small()).expect("reopen");
    assert_eq!(
        common::all(&db),
        model.clone().into_iter().collect::<Vec<_>>()
    );
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).expect("get").as_ref(), Some(v));
        let mut missing = k.clone();
        missing.push(b'0');
        assert_eq!(db.get(&missing).expect("get"), None);
    }
    // Seeks land on the next key, inside and between copied ends.
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    let mut it = db.iter();
    for pair in keys.windows(2).step_by(11) {
        let mut probe = pair[0].clone();
        probe.push(0);
        it.seek(&probe);
        assert_eq!(it.key(), Some(pair[1].as_slice()));
    }
    db.verify().expect("verify");
}
