//! The reading and writing API against a `BTreeMap` model: double-ended
//! scans (`next` and `next_back` mixed), their snapshot variants, prefixes
//! ending in `0xFF`, the regex search as an iterator of pairs, an
//! iterator's owned status error, and writes with options. The data spans
//! a flushed segment and the memtable. Set `PITH_PROPTEST_CASES` for a
//! longer run.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use pith::env::MemFs;
use pith::{Options, WriteOptions, DB};
use proptest::prelude::*;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Clone, Debug)]
enum Write {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

/// A scan, and its walk: `true` steps the front end, `false` the back.
#[derive(Clone, Debug)]
enum Query {
    Range(Option<Vec<u8>>, Option<Vec<u8>>, Vec<bool>),
    Prefix(Vec<u8>, Vec<bool>),
}

/// Keys over a small alphabet, so that they share prefixes, and `0xFF`s
/// end prefixes often.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![Just(0u8), Just(b'a'), Just(0xfeu8), Just(0xffu8)],
        0..4,
    )
}

fn write() -> impl Strategy<Value = Write> {
    prop_oneof![
        3 => (key(), prop::collection::vec(any::<u8>(), 0..12)).prop_map(|(k, v)| Write::Put(k, v)),
        1 => key().prop_map(Write::Delete),
    ]
}

fn walk() -> impl Strategy<Value = Vec<bool>> {
    prop::collection::vec(any::<bool>(), 0..12)
}

fn query() -> impl Strategy<Value = Query> {
    prop_oneof![
        (prop::option::of(key()), prop::option::of(key()), walk())
            .prop_map(|(from, to, w)| Query::Range(from, to, w)),
        (key(), walk()).prop_map(|(p, w)| Query::Prefix(p, w)),
    ]
}

fn options(fs: &MemFs) -> Options {
    Options {
        memtable_bytes: 1 << 20,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

fn apply(db: &DB, model: &mut Model, writes: &[Write]) {
    for w in writes {
        match w {
            Write::Put(k, v) => {
                db.put(k, v).expect("put");
                model.insert(k.clone(), v.clone());
            }
            Write::Delete(k) => {
                db.delete(k).expect("delete");
                model.remove(k);
            }
        }
    }
}

/// The model's pairs a query covers, in key order.
fn expected(model: &Model, q: &Query) -> VecDeque<(Vec<u8>, Vec<u8>)> {
    let covered = |k: &[u8]| match q {
        Query::Range(from, to, _) => {
            from.as_deref().is_none_or(|f| k >= f) && to.as_deref().is_none_or(|t| k < t)
        }
        Query::Prefix(p, _) => k.starts_with(p),
    };
    model
        .iter()
        .filter(|(k, _)| covered(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Steps `it` as the walk says (then forward to the end) and compares each
/// item with the model's front or back; once both ends have met, both
/// return `None`.
fn check_walk<T: PartialEq + std::fmt::Debug>(
    mut it: impl DoubleEndedIterator<Item = pith::Result<T>>,
    mut want: VecDeque<T>,
    walk: &[bool],
    what: &str,
) {
    let steps = walk.iter().copied().chain(std::iter::repeat(true));
    for (i, front) in steps.take(walk.len() + want.len() + 1).enumerate() {
        let (got, expected) = if front {
            (it.next(), want.pop_front())
        } else {
            (it.next_back(), want.pop_back())
        };
        let got = got.transpose().expect("scan");
        assert_eq!(got, expected, "{what}: step {i} of walk {walk:?}");
    }
    assert!(it.next().is_none(), "{what}: front after the end");
    assert!(it.next_back().is_none(), "{what}: back after the end");
}

fn check_query(db: &DB, snap: Option<&pith::Snapshot>, model: &Model, q: &Query) {
    let scan = || match (q, snap) {
        (Query::Range(from, to, _), None) => db.range(from.as_deref(), to.as_deref()),
        (Query::Range(from, to, _), Some(s)) => db.range_at(s, from.as_deref(), to.as_deref()),
        (Query::Prefix(p, _), None) => db.prefix(p),
        (Query::Prefix(p, _), Some(s)) => db.prefix_at(s, p),
    };
    let (Query::Range(_, _, walk) | Query::Prefix(_, walk)) = q;
    let what = format!("{q:?} at snapshot: {}", snap.is_some());
    let want = expected(model, q);
    let keys: VecDeque<Vec<u8>> = want.iter().map(|(k, _)| k.clone()).collect();
    check_walk(scan(), want.clone(), walk, &what);
    check_walk(scan().keys(), keys, walk, &format!("{what}, keys"));
    let reversed: Vec<_> = scan().rev().collect::<pith::Result<_>>().expect("rev");
    assert!(reversed.iter().eq(want.iter().rev()), "{what}: rev");
}

/// Search patterns, and which keys each matches.
type Pattern = (&'static str, fn(&[u8]) -> bool);

const PATTERNS: &[Pattern] = &[
    ("(?s-u)a.*", |k| k.first() == Some(&b'a')),
    ("(?s-u).*a", |k| k.last() == Some(&b'a')),
    ("(?s-u).*", |_| true),
    ("", <[u8]>::is_empty),
    (r"(?-u)[^a\xff]*", |k| {
        !k.iter().any(|&b| b == b'a' || b == 0xff)
    }),
    (r"(?-u)\x00?\xff.", |k| {
        matches!(k, [0xff, _] | [0, 0xff, _])
    }),
];

fn check_search(db: &DB, snap: Option<&pith::Snapshot>, model: &Model) {
    for &(pattern, matches) in PATTERNS {
        let search = || match snap {
            None => db.search(pattern).expect("pattern"),
            Some(s) => db.search_at(s, pattern).expect("pattern"),
        };
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .iter()
            .filter(|(k, _)| matches(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let what = format!("search {pattern:?} at snapshot: {}", snap.is_some());
        let got: Vec<_> = search().collect::<pith::Result<_>>().expect("search");
        assert_eq!(got, want, "{what}");
        let keys: Vec<_> = search().keys().collect::<pith::Result<_>>().expect("keys");
        assert!(keys.iter().eq(want.iter().map(|(k, _)| k)), "{what}: keys");
        let first: Vec<_> = search().take(2).collect::<pith::Result<_>>().expect("take");
        assert_eq!(first, want[..want.len().min(2)], "{what}: take(2)");
        {
            // Resumed from each matching key, one past it, and half of it.
            for (k, _) in want.iter().step_by(3) {
                for from in [
                    k.clone(),
                    [k.as_slice(), &[0]].concat(),
                    k[..k.len() / 2].to_vec(),
                ] {
                    let resumed = match snap {
                        None => db.search_from(pattern, &from),
                        Some(s) => db.search_from_at(s, pattern, &from),
                    };
                    let got: Vec<_> = resumed
                        .expect("pattern")
                        .collect::<pith::Result<_>>()
                        .expect("search_from");
                    let tail: Vec<_> = want.iter().filter(|(w, _)| *w >= from).cloned().collect();
                    assert_eq!(got, tail, "{what}: from {from:?}");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases()))]

    /// Writes, a flush (so the data spans a segment and the memtable), a
    /// snapshot, more writes (overwriting and deleting what the snapshot
    /// saw), maybe a flush, then scans and searches: current ones see the
    /// model at the end, snapshot ones the model at the snapshot.
    #[test]
    fn scans_and_searches_match_the_model(
        before in prop::collection::vec(write(), 0..40),
        after in prop::collection::vec(write(), 0..40),
        flush_after in any::<bool>(),
        queries in prop::collection::vec(query(), 1..8),
    ) {
        let fs = MemFs::new();
        let db = DB::open("/db", options(&fs)).expect("open");
        let mut model = Model::new();
        apply(&db, &mut model, &before);
        db.flush().expect("flush");
        let snap = db.snapshot();
        let at_snap = model.clone();
        apply(&db, &mut model, &after);
        if flush_after {
            db.flush().expect("flush");
        }
        for q in &queries {
            check_query(&db, None, &model, q);
            check_query(&db, Some(&snap), &at_snap, q);
        }
        check_search(&db, None, &model);
        check_search(&db, Some(&snap), &at_snap);
    }
}

/// The data of the named tests below: keys under `a\xff`, around it and
/// under `\xff\xff`, in a segment and in the memtable.
fn edge_keys_db(fs: &MemFs) -> DB {
    let db = DB::open("/db", options(fs)).expect("open");
    for k in [
        &b"a"[..],
        b"a\xfe\xff",
        b"a\xff",
        b"a\xff\x00",
        b"b",
        b"\xff\xff\x01",
    ] {
        db.put(k, k).expect("put");
    }
    db.flush().expect("flush");
    for k in [&b"a\xff\xff"[..], b"a\xff\xff\xff", b"\xff\xff", b"\xff"] {
        db.put(k, k).expect("put");
    }
    db
}

fn keys(scan: pith::ScanKeys) -> Vec<Vec<u8>> {
    scan.collect::<pith::Result<_>>().expect("scan")
}

#[test]
fn reverse_prefix_scans_need_no_successor_key() {
    let fs = MemFs::new();
    let db = edge_keys_db(&fs);
    let back = |p: &[u8]| -> Vec<Vec<u8>> { keys(db.prefix(p).keys()).into_iter().rev().collect() };
    let rev = |p: &[u8]| -> Vec<Vec<u8>> {
        db.prefix(p)
            .keys()
            .rev()
            .collect::<pith::Result<_>>()
            .expect("rev")
    };
    for p in [&b"a\xff"[..], b"a\xff\xff", b"\xff", b"\xff\xff", b"", b"a"] {
        assert_eq!(rev(p), back(p), "prefix {p:?}");
    }
    let want: Vec<&[u8]> = vec![b"a\xff\xff\xff", b"a\xff\xff", b"a\xff\x00", b"a\xff"];
    assert_eq!(rev(b"a\xff"), want);
    let want: Vec<&[u8]> = vec![b"\xff\xff\x01", b"\xff\xff"];
    assert_eq!(rev(b"\xff\xff"), want);
    // The ends meet in the middle, each key once.
    let mut scan = db.prefix(b"a\xff").keys();
    assert_eq!(
        scan.next_back().transpose().expect("back"),
        Some(b"a\xff\xff\xff".to_vec())
    );
    assert_eq!(
        scan.next().transpose().expect("front"),
        Some(b"a\xff".to_vec())
    );
    assert_eq!(
        scan.next_back().transpose().expect("back"),
        Some(b"a\xff\xff".to_vec())
    );
    assert_eq!(
        scan.next().transpose().expect("front"),
        Some(b"a\xff\x00".to_vec())
    );
    assert!(scan.next().is_none() && scan.next_back().is_none());
}

#[test]
fn snapshot_scans_and_searches_see_old_values_after_writes_and_deletes() {
    let fs = MemFs::new();
    let db = edge_keys_db(&fs);
    let snap = db.snapshot();
    db.put(b"a\xff", "new").expect("put");
    db.delete(b"a\xff\xff").expect("delete");
    db.delete(b"a\xff\x00").expect("delete");
    db.flush().expect("flush");
    db.put(b"a\xff\x01", "new").expect("put");
    let at_snap: Vec<_> = db
        .prefix_at(&snap, b"a\xff")
        .rev()
        .collect::<pith::Result<_>>()
        .expect("scan");
    let old = |k: &[u8]| (k.to_vec(), k.to_vec());
    assert_eq!(
        at_snap,
        vec![
            old(b"a\xff\xff\xff"),
            old(b"a\xff\xff"),
            old(b"a\xff\x00"),
            old(b"a\xff")
        ]
    );
    let now: Vec<_> = db
        .prefix(b"a\xff")
        .collect::<pith::Result<_>>()
        .expect("scan");
    let new = |k: &[u8]| (k.to_vec(), b"new".to_vec());
    assert_eq!(
        now,
        vec![new(b"a\xff"), new(b"a\xff\x01"), old(b"a\xff\xff\xff")]
    );
    let range: Vec<_> = db
        .range_at(&snap, Some(b"a\xff\x00"), Some(b"a\xff\xff\xff"))
        .keys()
        .collect::<pith::Result<_>>()
        .expect("range");
    assert_eq!(range, vec![b"a\xff\x00".to_vec(), b"a\xff\xff".to_vec()]);
    let pattern = r"(?-u)a\xff.*";
    let found: Vec<_> = db
        .search_at(&snap, pattern)
        .expect("pattern")
        .collect::<pith::Result<_>>()
        .expect("search");
    assert_eq!(
        found,
        vec![
            old(b"a\xff"),
            old(b"a\xff\x00"),
            old(b"a\xff\xff"),
            old(b"a\xff\xff\xff")
        ]
    );
    let found: Vec<_> = db
        .search(pattern)
        .expect("pattern")
        .collect::<pith::Result<_>>()
        .expect("search");
    assert_eq!(found, now);
}

#[test]
fn a_bad_pattern_says_what_and_where() {
    let fs = MemFs::new();
    let db = edge_keys_db(&fs);
    let Err(pith::Error::Regex(message)) = db.search("pkg/(zlib") else {
        panic!("a bad pattern was accepted");
    };
    assert!(message.contains("unclosed group"), "{message}");
    // The parser's caret, under the `(` of the caller's pattern.
    assert!(message.contains("pkg/(zlib\n        ^"), "{message}");
}

/// Walks the whole database with a [`pith::DbIterator`], passing its status
/// on with `?`.
fn count_keys(db: &DB) -> pith::Result<usize> {
    let mut it = db.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next();
    }
    it.status()?;
    Ok(n)
}

#[test]
fn iterator_status_is_an_owned_error() {
    let fs = MemFs::new();
    let db = edge_keys_db(&fs);
    assert_eq!(count_keys(&db).expect("walk"), 10);
}

/// DB::count_keys answers a settled database from its one segment and
/// walks otherwise; both agree with a walk of the iterator.
#[test]
fn count_keys_is_exact_settled_or_not() {
    let fs = MemFs::new();
    let db = DB::open("/db", options(&fs)).expect("open");
    assert_eq!(db.count_keys().expect("empty"), 0);
    for i in 0..500u32 {
        db.put(format!("k{i:04}"), "v").expect("put");
    }
    db.compact().expect("compact");
    assert_eq!(db.count_keys().expect("settled"), 500);
    db.delete("k0007").expect("delete");
    assert_eq!(db.count_keys().expect("memtable"), 499);
    db.compact().expect("compact");
    assert_eq!(db.count_keys().expect("settled again"), 499);
    db.put_expiring("k0008", "v", 1).expect("expired at 1 ms");
    db.compact().expect("compact");
    assert_eq!(db.count_keys().expect("expired"), 498);
    assert_eq!(count_keys(&db).expect("walk"), 498);
}

#[test]
fn writes_with_options_are_synced_when_asked() {
    let fs = MemFs::new();
    {
        let db = DB::open("/db", options(&fs)).expect("open");
        db.put_opt(WriteOptions::synced(), "kept", "1")
            .expect("put");
        db.put_opt(WriteOptions::synced(), "deleted", "1")
            .expect("put");
        db.delete_opt(WriteOptions::synced(), "deleted")
            .expect("delete");
        db.put_opt(WriteOptions::default(), "lost", "1")
            .expect("put");
        db.delete_opt(WriteOptions::default(), "kept")
            .expect("delete");
        // The power goes before anything else is synced: the unsynced put
        // and delete are lost.
        fs.power_cut(None);
    }
    let db = DB::open("/db", options(&fs)).expect("reopen");
    assert_eq!(db.get("kept").expect("get").as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get("deleted").expect("get"), None);
    assert_eq!(db.get("lost").expect("get"), None);
}

/// What a process killed now would leave: a new file system holding the
/// bytes `fs` has been given (written, synced or not), without the
/// engine's buffers.
fn killed_copy(fs: &MemFs) -> MemFs {
    use pith::env::Fs;
    let copy = MemFs::new();
    for (path, _) in fs.files() {
        let bytes = fs.read(&path).expect("read a file");
        let dir = path.parent().expect("a file has a directory");
        copy.create_dir_all(dir).expect("mkdir");
        let mut f = copy.create(&path).expect("create");
        f.append(&bytes).expect("append");
    }
    copy
}

fn get_in(fs: &MemFs, key: &str) -> Option<Vec<u8>> {
    let db = DB::open("/db", options(fs)).expect("open after a kill");
    db.get(key).expect("get")
}

/// `WriteOptions::defer_log`: the write is visible at once, its record
/// stays in the engine until `write_log` or a later write that is not
/// deferred writes it (in order), and a process killed in between loses
/// it and nothing else.
#[test]
fn deferred_writes_are_visible_at_once_and_logged_on_demand() {
    let fs = MemFs::new();
    let db = DB::open("/db", options(&fs)).expect("open");
    let deferred = WriteOptions {
        defer_log: true,
        ..WriteOptions::default()
    };
    db.put("kept", "0").expect("put");
    db.put_opt(deferred, "a", "1").expect("deferred put");
    assert_eq!(db.get("a").expect("get").as_deref(), Some(&b"1"[..]));
    let killed = killed_copy(&fs);
    assert_eq!(get_in(&killed, "a"), None, "a deferred record was written");
    assert_eq!(get_in(&killed, "kept").as_deref(), Some(&b"0"[..]));

    db.write_log().expect("write_log");
    assert_eq!(get_in(&killed_copy(&fs), "a").as_deref(), Some(&b"1"[..]));
    db.write_log().expect("a write_log with nothing buffered");

    // A plain write carries the deferred records before its own.
    db.put_opt(deferred, "b", "2").expect("deferred put");
    db.put_opt(deferred, "b", "3").expect("deferred put");
    db.put("c", "4").expect("put");
    let killed = killed_copy(&fs);
    assert_eq!(get_in(&killed, "b").as_deref(), Some(&b"3"[..]));
    assert_eq!(get_in(&killed, "c").as_deref(), Some(&b"4"[..]));

    // Close writes what is buffered.
    db.put_opt(deferred, "d", "5").expect("deferred put");
    db.close().expect("close");
    assert_eq!(get_in(&fs, "d").as_deref(), Some(&b"5"[..]));
}

/// Deferred records never pile up: past 1 MiB the buffer is written.
#[test]
fn deferred_records_are_written_once_a_mebibyte_waits() {
    let fs = MemFs::new();
    // A memtable that holds them all: no switch writes the log instead.
    let big = Options {
        memtable_bytes: 16 << 20,
        ..options(&fs)
    };
    let db = DB::open("/db", big).expect("open");
    let deferred = WriteOptions {
        defer_log: true,
        ..WriteOptions::default()
    };
    let value = vec![b'v'; 64 << 10];
    for i in 0..20 {
        db.put_opt(deferred, format!("k{i:02}"), &value)
            .expect("deferred put");
    }
    let killed = killed_copy(&fs);
    assert!(
        get_in(&killed, "k00").is_some(),
        "1.25 MiB of deferred records, none written"
    );
}

/// `sync_wal` makes every write acknowledged before it survive a power
/// cut, deferred ones included (their records are written first), and
/// writes go on while it runs.
#[test]
fn sync_wal_makes_earlier_writes_survive_a_power_cut() {
    let fs = MemFs::new();
    let fault = pith::env::FaultFs::over_mem(fs.clone());
    let on_fault = Options {
        fs: Arc::new(fault.clone()),
        ..options(&fs)
    };
    let db = DB::open("/db", on_fault).expect("open");
    let deferred = WriteOptions {
        defer_log: true,
        ..WriteOptions::default()
    };
    db.put("plain", "1").expect("put");
    db.put_opt(deferred, "deferred", "2").expect("deferred put");
    db.sync_wal().expect("sync_wal");
    db.put("after", "3").expect("put");
    fault.cut_power_now(None).expect("a power cut");
    drop(db); // its final sync fails: the power is off
    fault.restore_power();
    let db = DB::open("/db", options(&fs)).expect("open after the cut");
    assert_eq!(db.get("plain").expect("get").as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get("deferred").expect("get").as_deref(), Some(&b"2"[..]));
    assert_eq!(
        db.get("after").expect("get"),
        None,
        "an unsynced write survived"
    );
}
