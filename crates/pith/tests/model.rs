//! Model-based property test: random sequences of operations against the
//! engine and a `BTreeMap`, including snapshots, flushes, merges,
//! close-and-reopen, and puts that expire on a clock the test moves. Set
//! `PITH_PROPTEST_CASES` for a longer run.

mod common;

use std::collections::BTreeMap;

use std::sync::Arc;

use pith::{Clock, ManualClock, Options, ValueReads, WriteBatch, WriteOptions, DB};
use proptest::prelude::*;

/// What reads must show: the live keys and values.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// What was written: value and deadline (`NEVER`: none) per key.
type Stored = BTreeMap<Vec<u8>, (Vec<u8>, u64)>;

const NEVER: u64 = u64::MAX;
/// The clock's start.
const T0: u64 = 1_767_225_600_000;

/// The keys of `stored` not expired at `now`.
fn live(stored: &Stored, now: u64) -> Model {
    stored
        .iter()
        .filter(|(_, (_, deadline))| *deadline > now)
        .map(|(k, (v, _))| (k.clone(), v.clone()))
        .collect()
}

/// A key, and for a put its value and time to live (`None`: a delete).
type BatchOp = (Vec<u8>, Option<(Vec<u8>, Option<u8>)>);

#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    /// A put expiring this many milliseconds from now.
    PutExpiring(Vec<u8>, Vec<u8>, u8),
    Delete(Vec<u8>),
    /// Puts (with a time to live when given) and deletes.
    Batch(Vec<BatchOp>),
    /// Moves the clock this many milliseconds forward.
    Advance(u8),
    Get(Vec<u8>),
    Scan,
    Seek(Vec<u8>, Vec<bool>),
    Snapshot,
    CheckSnapshots,
    ReleaseSnapshot,
    Flush,
    Compact,
    Reopen,
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![Just(b'a'), Just(b'b'), Just(0u8), Just(0xffu8)],
        0..4,
    )
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..40)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (key(), value()).prop_map(|(k, v)| Op::Put(k, v)),
        4 => (key(), value(), 0..20u8).prop_map(|(k, v, t)| Op::PutExpiring(k, v, t)),
        3 => key().prop_map(Op::Delete),
        2 => prop::collection::vec(
            (key(), prop::option::of((value(), prop::option::of(0..20u8)))),
            0..6
        )
        .prop_map(Op::Batch),
        3 => (0..12u8).prop_map(Op::Advance),
        4 => key().prop_map(Op::Get),
        1 => Just(Op::Scan),
        2 => (key(), prop::collection::vec(any::<bool>(), 0..8)).prop_map(|(k, s)| Op::Seek(k, s)),
        1 => Just(Op::Snapshot),
        1 => Just(Op::CheckSnapshots),
        1 => Just(Op::ReleaseSnapshot),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

/// `one_thread`: one background thread, so segment builds make their
/// trie and store one after the other, where with more they overlap.
/// `value_reads`: how point reads read stored values.
fn options(clock: &ManualClock, one_thread: bool, value_reads: ValueReads) -> Options {
    let defaults = Options::default();
    Options {
        value_reads,
        background_threads: if one_thread {
            1
        } else {
            defaults.background_threads.max(2)
        },
        clock: Arc::new(clock.clone()),
        memtable_bytes: 1024,
        merge_trigger: 2,
        stall_segments: 10,
        // Small enough that the value cache evicts all the time.
        value_cache_bytes: 64 << 10,
        ..defaults
    }
}

/// Checks a seek and a walk of steps (true = next, false = prev).
fn check_seek(db_it: &mut pith::DbIterator, model: &Model, start: &[u8], steps: &[bool]) {
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    db_it.seek(start);
    let mut pos = keys.partition_point(|k| k.as_slice() < start) as isize;
    for &forward in std::iter::once(&true).chain(steps) {
        let want = usize::try_from(pos)
            .ok()
            .and_then(|p| keys.get(p))
            .map(|k| k.as_slice());
        assert_eq!(
            db_it.key(),
            want,
            "after seek {start:?} and steps {steps:?}"
        );
        if let Some(k) = want {
            assert_eq!(db_it.value(), model.get(k).map(Vec::as_slice));
        } else {
            break; // an invalid iterator stays invalid
        }
        if forward {
            db_it.next();
            pos += 1;
        } else {
            db_it.prev();
            pos -= 1;
        }
    }
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = ManualClock::new(T0);
    // Half the cases each way, and half of each half with values read
    // through the mapping, half with `pread`.
    let one_thread = ops.len().is_multiple_of(2);
    let value_reads = match (ops.len() / 2).is_multiple_of(2) {
        true => ValueReads::Mapped,
        false => ValueReads::Pread,
    };
    let options = || options(&clock, one_thread, value_reads);
    let mut db = Some(DB::open(dir.path(), options()).expect("open"));
    let mut stored = Stored::new();
    let mut snaps: Vec<(pith::Snapshot, Stored)> = Vec::new();
    for op in ops {
        let d = db.as_ref().expect("open db");
        let now = clock.now_ms();
        let model = live(&stored, now);
        match op {
            Op::Put(k, v) => {
                d.put(&k, &v).expect("put");
                stored.insert(k, (v, NEVER));
            }
            Op::PutExpiring(k, v, ttl) => {
                let deadline = now + u64::from(ttl);
                d.put_expiring(&k, &v, deadline).expect("put");
                stored.insert(k, (v, deadline));
            }
            Op::Delete(k) => {
                d.delete(&k).expect("delete");
                stored.remove(&k);
            }
            Op::Batch(ops) => {
                let mut b = WriteBatch::new();
                for (k, v) in ops {
                    match v {
                        Some((v, None)) => {
                            b.put(&k, &v);
                            stored.insert(k, (v, NEVER));
                        }
                        Some((v, Some(ttl))) => {
                            let deadline = now + u64::from(ttl);
                            b.put_expiring(&k, &v, deadline);
                            stored.insert(k, (v, deadline));
                        }
                        None => {
                            b.delete(&k);
                            stored.remove(&k);
                        }
                    }
                }
                d.write(WriteOptions::default(), b).expect("write");
            }
            Op::Advance(ms) => clock.advance(u64::from(ms)),
            Op::Get(k) => {
                let want = stored
                    .get(&k)
                    .filter(|(_, deadline)| *deadline > now)
                    .map(|(v, d)| (v.clone(), (*d != NEVER).then_some(*d)));
                assert_eq!(d.get_with_deadline(&k).expect("get"), want, "get {k:?}");
                // The same answers without decoding the value.
                let deadline = want.as_ref().map(|w| w.1);
                assert_eq!(d.deadline_of(&k).expect("deadline_of"), deadline);
                assert_eq!(d.contains(&k).expect("contains"), want.is_some());
                assert_eq!(d.get(&k).expect("get"), model.get(&k).cloned(), "get {k:?}");
            }
            Op::Scan => {
                assert_eq!(
                    common::all(d),
                    model.clone().into_iter().collect::<Vec<_>>()
                );
                assert_eq!(d.count_keys().expect("count"), model.len() as u64);
                let mut it = d.iter();
                it.seek_to_last();
                let mut back = Vec::new();
                while let Some(k) = it.key() {
                    back.push(k.to_vec());
                    it.prev();
                }
                assert_eq!(back, model.keys().rev().cloned().collect::<Vec<_>>());
            }
            Op::Seek(k, steps) => check_seek(&mut d.iter(), &model, &k, &steps),
            Op::Snapshot => snaps.push((d.snapshot(), stored.clone())),
            Op::CheckSnapshots => {
                for (s, m) in &snaps {
                    // A snapshot keeps versions, not time: expiry is
                    // judged now.
                    let m = &live(m, now);
                    let got: Vec<(Vec<u8>, Vec<u8>)> = {
                        let mut it = d.iter_at(s);
                        it.seek_to_first();
                        let mut v = Vec::new();
                        while let (Some(k), Some(val)) = (it.key(), it.value()) {
                            v.push((k.to_vec(), val.to_vec()));
                            it.next();
                        }
                        v
                    };
                    assert_eq!(
                        got,
                        m.clone().into_iter().collect::<Vec<_>>(),
                        "snapshot {}",
                        s.sequence()
                    );
                    for k in m.keys().take(5) {
                        assert_eq!(d.get_at(s, k).expect("get_at").as_ref(), m.get(k));
                    }
                }
            }
            Op::ReleaseSnapshot => {
                if !snaps.is_empty() {
                    snaps.remove(0);
                }
            }
            Op::Flush => d.flush().expect("flush"),
            Op::Compact => d.compact().expect("compact"),
            Op::Reopen => {
                snaps.clear();
                db.take().expect("db").close().expect("close");
                db = Some(DB::open(dir.path(), options()).expect("reopen"));
            }
        }
    }
    let d = db.expect("db");
    let model = live(&stored, clock.now_ms());
    assert_eq!(common::all(&d), model.into_iter().collect::<Vec<_>>());
    d.verify().expect("verify");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(), ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_btreemap(ops in prop::collection::vec(op(), 1..80)) {
        run(ops);
    }
}

/// Minimized by proptest (the first case in `model.proptest-regressions`):
/// two versions of one key, both with an empty value, a snapshot between
/// them, then a flush; the snapshot must still read its version.
#[test]
fn regression_snapshot_between_two_empty_values_survives_a_flush() {
    run(vec![
        Op::Put(vec![97], vec![]),
        Op::Snapshot,
        Op::Put(vec![97], vec![]),
        Op::Flush,
        Op::CheckSnapshots,
    ]);
}
