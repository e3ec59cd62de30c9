//! The skip list against a `BTreeMap` model, and readers racing a writer.
//! Small enough to run under Miri (`cargo +nightly miri test -p pith --lib
//! memtable::skiplist`), which checks the unsafe code's aliasing and
//! publication.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::dbformat::key_hash;

type Model = BTreeMap<(Vec<u8>, Reverse<u64>), (u64, Vec<u8>)>;

fn entries(list: &SkipList) -> Vec<(Vec<u8>, u64, u64, Vec<u8>)> {
    list.iter()
        .map(|e| (e.key().to_vec(), e.tag(), e.deadline(), e.value().to_vec()))
        .collect()
}

fn model_entries(model: &Model) -> Vec<(Vec<u8>, u64, u64, Vec<u8>)> {
    model
        .iter()
        .map(|((k, Reverse(t)), (d, v))| (k.clone(), *t, *d, v.clone()))
        .collect()
}

/// A poor hash on purpose (the length and first byte), so that keys
/// collide in the index and its probing is exercised; the engine's is
/// `dbformat::key_hash`.
fn h(key: &[u8]) -> u64 {
    key.len() as u64 * 31 + key.first().map_or(0, |&b| u64::from(b) & 1)
}

/// The newest version of `key` at or below `tag`, as a search finds it.
fn visible(list: &SkipList, key: &[u8], tag: u64) -> Option<(Vec<u8>, u64)> {
    as_tuple(list.search(key, tag))
}

fn as_tuple(e: Option<Entry<'_>>) -> Option<(Vec<u8>, u64)> {
    e.map(|e| (e.key().to_vec(), e.tag()))
}

#[test]
fn empty_list_finds_nothing() {
    let list = SkipList::new(h);
    assert!(list.first().is_none());
    assert!(list.last().is_none());
    assert!(list.seek_ge(b"", u64::MAX).is_none());
    assert!(list.seek_lt(b"zz", 0).is_none());
    assert_eq!((list.len(), list.bytes()), (0, 0));
}

#[test]
fn versions_sort_by_key_then_newest_first() {
    let list = SkipList::new(h);
    list.insert(b"b", 5, 0, b"b5");
    list.insert(b"a", 3, 7, b"a3");
    list.insert(b"b", 9, 0, b"b9");
    list.insert(b"", 1, 0, b"empty key");
    list.insert(b"a", 4, 0, b"");
    let got: Vec<(Vec<u8>, u64)> = list.iter().map(|e| (e.key().to_vec(), e.tag())).collect();
    let want: Vec<(Vec<u8>, u64)> = vec![
        (b"".to_vec(), 1),
        (b"a".to_vec(), 4),
        (b"a".to_vec(), 3),
        (b"b".to_vec(), 9),
        (b"b".to_vec(), 5),
    ];
    assert_eq!(got, want);
    let a3 = list.seek_ge(b"a", 3).expect("a3");
    assert_eq!((a3.value(), a3.deadline()), (&b"a3"[..], 7));
    assert_eq!(as_tuple(list.seek_ge(b"b", 8)), Some((b"b".to_vec(), 5)));
    assert_eq!(
        as_tuple(list.seek_lt(b"b", u64::MAX)),
        Some((b"a".to_vec(), 3))
    );
    assert_eq!(as_tuple(list.last()), Some((b"b".to_vec(), 5)));
    assert_eq!(list.len(), 5);
    // Header 40 bytes, at least one link each, keys and values rounded up.
    assert!(list.bytes() >= 5 * 48, "{}", list.bytes());
}

#[test]
fn values_past_the_inline_limit_live_apart_and_read_back() {
    let list = SkipList::new(h);
    let at_limit = vec![1u8; INLINE_VALUE_BYTES];
    let past = vec![2u8; INLINE_VALUE_BYTES + 1];
    list.insert(b"a", 1, 0, &at_limit);
    let one_inline = list.bytes();
    list.insert(b"b", 2, 0, &past);
    list.insert(b"c", 3, 0, b"");
    let got: Vec<Vec<u8>> = list.iter().map(|e| e.value().to_vec()).collect();
    assert_eq!(got, vec![at_limit.clone(), past.clone(), Vec::new()]);
    let apart: Vec<bool> = list.iter().map(|e| !e.header().value.is_null()).collect();
    assert_eq!(apart, vec![false, true, false]);
    // Memory counts the value wherever it lives.
    assert!(list.bytes() > one_inline + INLINE_VALUE_BYTES);
}

#[test]
fn large_values_get_chunks_of_their_own() {
    let list = SkipList::new(h);
    let big = vec![7u8; super::super::arena::CHUNK_BYTES];
    list.insert(b"big", 1, 0, &big);
    list.insert(b"small", 2, 0, b"v");
    let e = list.seek_ge(b"big", u64::MAX).expect("big");
    assert_eq!(e.value(), &big[..]);
    // The first chunk (the head, "small") and the big value's own.
    let own = super::super::arena::CHUNK_BYTES;
    assert!(
        list.reserved() > own && list.reserved() < 2 * own,
        "{}",
        list.reserved()
    );
}

/// Through the index's build and several doublings, with versions
/// arriving in tag order and out of it, every key at every tag reads as a
/// search of the list finds it (the engine's hash and the poor one).
#[test]
fn the_index_answers_as_a_search_through_its_growth() {
    let (keys, versions) = if cfg!(miri) { (20u64, 3u64) } else { (300, 4) };
    for hash in [h as fn(&[u8]) -> u64, key_hash] {
        for index_from in [0, 50] {
            let list = SkipList::with_index_from(hash, index_from);
            for v in 0..versions {
                for k in 0..keys {
                    // Tags of later rounds are higher, except every
                    // seventh key's, which go below the ones it has.
                    let t = if k % 7 == 0 {
                        1000 - v
                    } else {
                        10 + v * 1000 + k
                    };
                    let key = format!("k{}", k * 7919 % keys);
                    list.insert(key.as_bytes(), t, 0, format!("{key}@{t}").as_bytes());
                }
            }
            for k in 0..keys {
                let key = format!("k{k}");
                for t in [0, 5, 999, 1000, 1010 + k, 2500, 5000, u64::MAX] {
                    let got = list.get(key.as_bytes(), hash(key.as_bytes()), t);
                    assert_eq!(
                        as_tuple(got),
                        visible(&list, key.as_bytes(), t),
                        "{key} at {t}"
                    );
                    if let Some(e) = got {
                        assert_eq!(e.value(), format!("{key}@{}", e.tag()).as_bytes());
                    }
                }
            }
            assert!(list.get(b"absent", hash(b"absent"), u64::MAX).is_none());
        }
    }
}

/// Operations of the model test.
#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<u8>, u64, u64, Vec<u8>),
    SeekGe(Vec<u8>, u64),
    SeekLt(Vec<u8>, u64),
    Get(Vec<u8>, u64),
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    // A small alphabet so keys collide, share prefixes and have versions.
    prop::collection::vec(prop::sample::select(vec![0u8, b'a', b'b', 0xff]), 0..4)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (key(), 0u64..40, any::<u64>(), prop::collection::vec(any::<u8>(), 0..2 * INLINE_VALUE_BYTES))
            .prop_map(|(k, t, d, v)| Op::Insert(k, t, d, v)),
        1 => (key(), 0u64..42).prop_map(|(k, t)| Op::SeekGe(k, t)),
        1 => (key(), 0u64..42).prop_map(|(k, t)| Op::SeekLt(k, t)),
        2 => (key(), 0u64..42).prop_map(|(k, t)| Op::Get(k, t)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

    #[test]
    fn matches_a_btreemap(
        ops in prop::collection::vec(op(), 0..if cfg!(miri) { 30 } else { 200 }),
        index_from in prop_oneof![Just(0usize), 1usize..60, Just(usize::MAX)],
    ) {
        // The index from the first version, built part way, or never.
        let list = SkipList::with_index_from(h, index_from);
        let mut model = Model::new();
        for op in ops {
            match op {
                Op::Insert(k, t, d, v) => {
                    if model.contains_key(&(k.clone(), Reverse(t))) {
                        continue; // the engine never repeats a (key, tag)
                    }
                    list.insert(&k, t, d, &v);
                    model.insert((k, Reverse(t)), (d, v));
                }
                Op::SeekGe(k, t) => {
                    let want = model.range((k.clone(), Reverse(t))..).next().map(|((k, Reverse(t)), _)| (k.clone(), *t));
                    prop_assert_eq!(as_tuple(list.seek_ge(&k, t)), want);
                }
                Op::Get(k, t) => {
                    let want = model.range((k.clone(), Reverse(t))..).next().map(|((k, Reverse(t)), _)| (k.clone(), *t)).filter(|(mk, _)| *mk == k);
                    prop_assert_eq!(as_tuple(list.get(&k, h(&k), t)), want);
                }
                Op::SeekLt(k, t) => {
                    let want = model.range(..(k.clone(), Reverse(t))).next_back().map(|((k, Reverse(t)), _)| (k.clone(), *t));
                    prop_assert_eq!(as_tuple(list.seek_lt(&k, t)), want);
                }
            }
        }
        prop_assert_eq!(entries(&list), model_entries(&model));
        prop_assert_eq!(list.len(), model.len());
        let last = model.keys().next_back().map(|(k, Reverse(t))| (k.clone(), *t));
        prop_assert_eq!(as_tuple(list.last()), last);
        // Every key at every tag, through the index and through a search.
        for (k, _) in model.keys() {
            for t in 0..42 {
                prop_assert_eq!(as_tuple(list.get(k, h(k), t)), visible(&list, k, t));
            }
        }
    }
}

/// Readers run while one thread inserts: every version the writer has
/// announced is found, whole, and every walk is sorted.
#[test]
fn readers_see_whole_sorted_versions_while_a_writer_inserts() {
    let n: usize = if cfg!(miri) { 200 } else { 20_000 };
    // The index is built part way, while readers run; keys repeat (four
    // versions each), so their version chains grow under the readers.
    let list = Arc::new(SkipList::with_index_from(key_hash, n / 10));
    let announced = Arc::new(AtomicUsize::new(0));
    let key_of = move |i: usize| format!("{:08}", (i * 7919) % (n / 4)).into_bytes();
    let value_of = |i: usize| vec![(i % 251) as u8; i % 71];
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (list, announced) = (list.clone(), announced.clone());
            std::thread::spawn(move || {
                let mut walks = 0;
                loop {
                    let done = announced.load(AtomicOrdering::Acquire);
                    // Each announced version is there with its value.
                    for i in (r..done).step_by(if cfg!(miri) { 17 } else { 97 }) {
                        let e = list
                            .seek_ge(&key_of(i), i as u64)
                            .expect("announced version");
                        assert_eq!((e.key(), e.tag()), (&key_of(i)[..], i as u64));
                        assert_eq!(e.value(), &value_of(i)[..]);
                        // The index finds it too, or a newer version of its
                        // key, never an older one.
                        let k = key_of(i);
                        let got = list
                            .get(&k, key_hash(&k), u64::MAX)
                            .expect("indexed version");
                        assert!(got.key() == &k[..] && got.tag() >= i as u64);
                        let at = list
                            .get(&k, key_hash(&k), i as u64)
                            .expect("indexed at its tag");
                        assert_eq!((at.tag(), at.value()), (i as u64, &value_of(i)[..]));
                    }
                    // A walk is sorted and holds at least what was announced.
                    let mut count = 0;
                    let mut prev: Option<Entry<'_>> = None;
                    for e in list.iter() {
                        if let Some(p) = prev {
                            assert!((p.key(), Reverse(p.tag())) < (e.key(), Reverse(e.tag())));
                        }
                        prev = Some(e);
                        count += 1;
                    }
                    assert!(count >= done);
                    walks += 1;
                    if done == n {
                        return walks;
                    }
                }
            })
        })
        .collect();
    for i in 0..n {
        list.insert(&key_of(i), i as u64, 0, &value_of(i));
        announced.store(i + 1, AtomicOrdering::Release);
    }
    for r in readers {
        assert!(r.join().expect("reader") >= 1);
    }
    assert_eq!(list.len(), n);
}
