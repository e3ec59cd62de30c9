//! Model tests: every query checked against a `BTreeSet` of the same keys,
//! plus edge cases and corruption of serialized bytes.

use std::collections::BTreeSet;

use proptest::prelude::*;

use crate::{build, AlignedBytes, Error, KeyRegex, Trie, TrieBuilder};

fn trie_of(keys: &BTreeSet<Vec<u8>>) -> AlignedBytes {
    build(keys.iter()).expect("sorted unique keys")
}

/// The trie of `keys` as `finish` writes it.
fn trie_finished_by(
    keys: &BTreeSet<Vec<u8>>,
    finish: impl FnOnce(TrieBuilder) -> crate::Result<AlignedBytes>,
) -> AlignedBytes {
    let mut b = TrieBuilder::new();
    for k in keys {
        b.push(k).expect("sorted unique keys");
    }
    finish(b).expect("build")
}

/// The same trie in the format before version 3 (version 1 or 2), which
/// the readers must still answer from.
fn legacy_trie_of(keys: &BTreeSet<Vec<u8>>) -> AlignedBytes {
    trie_finished_by(keys, TrieBuilder::finish_legacy)
}

/// The same trie in format version 3 (labels found by sampled offsets),
/// which the readers must still answer from.
fn v3_trie_of(keys: &BTreeSet<Vec<u8>>) -> AlignedBytes {
    trie_finished_by(keys, TrieBuilder::finish_v3)
}

/// The same trie in format version 5 (no label is a copy), which the
/// readers must still answer from.
fn v5_trie_of(keys: &BTreeSet<Vec<u8>>) -> AlignedBytes {
    trie_finished_by(keys, TrieBuilder::finish_v5)
}

/// The same keys with every label that is shorter as a copy written as
/// one (format version 6 wherever one is), coded by a table of no
/// symbols: copies on key sets too small for a trained table.
fn copies_trie_of(keys: &BTreeSet<Vec<u8>>) -> AlignedBytes {
    trie_finished_by(keys, TrieBuilder::finish_with_copies)
}

/// Checks every query against the model, in the current format and in the
/// ones before, and with copies forced.
fn check_against_model(keys: &BTreeSet<Vec<u8>>, probes: &[Vec<u8>]) {
    check_bytes_against_model(&trie_of(keys), keys, probes);
    check_bytes_against_model(&copies_trie_of(keys), keys, probes);
    check_bytes_against_model(&v5_trie_of(keys), keys, probes);
    check_bytes_against_model(&v3_trie_of(keys), keys, probes);
    check_bytes_against_model(&legacy_trie_of(keys), keys, probes);
}

fn check_bytes_against_model(bytes: &AlignedBytes, keys: &BTreeSet<Vec<u8>>, probes: &[Vec<u8>]) {
    let trie = Trie::open_validated(bytes.as_bytes()).expect("open");
    let sorted: Vec<&Vec<u8>> = keys.iter().collect();
    assert_eq!(trie.len(), sorted.len());
    for (id, k) in sorted.iter().enumerate() {
        assert_eq!(trie.lookup(k), Some(id as u64), "lookup {k:?}");
        assert_eq!(trie.key(id as u64).as_ref(), Some(*k), "key {id}");
    }
    assert_eq!(trie.key(sorted.len() as u64), None);
    // Iteration both ways.
    let forward: Vec<Vec<u8>> = trie.iter().map(|(_, k)| k).collect();
    assert_eq!(
        forward,
        sorted.iter().map(|k| k.to_vec()).collect::<Vec<_>>()
    );
    let mut c = trie.cursor();
    let mut backward = Vec::new();
    let mut ok = c.seek_to_last();
    while ok {
        backward.push(c.key().expect("valid").to_vec());
        assert_eq!(c.id(), Some((sorted.len() - backward.len()) as u64));
        ok = c.prev();
    }
    backward.reverse();
    assert_eq!(backward, forward);
    // The checks below scan the model for every probe: every key of a small
    // set is a probe, of a large one a spread of 2,000 (all 30,256 keys of
    // `large_trie_top_level_index_matches_model` took 100 s a run).
    let step = (keys.len() / 2000).max(1);
    for p in probes.iter().chain(keys.iter().step_by(step)) {
        let lb = sorted.partition_point(|k| k.as_slice() < p.as_slice()) as u64;
        assert_eq!(trie.lower_bound(p), lb, "lower_bound {p:?}");
        assert_eq!(
            trie.lookup(p),
            sorted.binary_search(&p).ok().map(|i| i as u64)
        );
        // Seek, then step both ways.
        let mut c = trie.cursor();
        assert_eq!(c.seek(p), (lb as usize) < sorted.len());
        if c.valid() {
            assert_eq!(c.key(), Some(sorted[lb as usize].as_slice()));
            if c.prev() {
                assert_eq!(c.key(), Some(sorted[lb as usize - 1].as_slice()));
                assert!(c.next());
                assert_eq!(c.key(), Some(sorted[lb as usize].as_slice()));
            }
        }
        // Prefix and range queries as id ranges.
        let want: Vec<u64> = (0..sorted.len() as u64)
            .filter(|&i| sorted[i as usize].starts_with(p))
            .collect();
        let got = trie.prefix_range(p);
        assert_eq!(got.clone().collect::<Vec<_>>(), want, "prefix {p:?}");
        for q in probes.iter().take(4) {
            let want = sorted
                .iter()
                .filter(|k| k.as_slice() >= p.as_slice() && k.as_slice() < q.as_slice())
                .count();
            assert_eq!(
                trie.range::<(std::ops::Bound<&[u8]>, std::ops::Bound<&[u8]>)>((
                    std::ops::Bound::Included(p),
                    std::ops::Bound::Excluded(q)
                ))
                .count(),
                want
            );
            let want = sorted
                .iter()
                .filter(|k| k.as_slice() > p.as_slice() && k.as_slice() <= q.as_slice())
                .count();
            assert_eq!(
                trie.range::<(std::ops::Bound<&[u8]>, std::ops::Bound<&[u8]>)>((
                    std::ops::Bound::Excluded(p),
                    std::ops::Bound::Included(q)
                ))
                .count(),
                want
            );
        }
    }
}

fn check_regex(keys: &BTreeSet<Vec<u8>>, pattern: &str) {
    check_regex_on(&trie_of(keys), keys, pattern);
    check_regex_on(&copies_trie_of(keys), keys, pattern);
    check_regex_on(&legacy_trie_of(keys), keys, pattern);
}

fn check_regex_on(bytes: &AlignedBytes, keys: &BTreeSet<Vec<u8>>, pattern: &str) {
    let trie = Trie::open(bytes.as_bytes()).expect("open");
    let model = regex::bytes::Regex::new(&format!(r"\A(?:{pattern})\z")).expect("model regex");
    let want: Vec<(u64, Vec<u8>)> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| model.is_match(k))
        .map(|(i, k)| (i as u64, k.clone()))
        .collect();
    let re = KeyRegex::new(pattern).expect("compile");
    let mut got = Vec::new();
    let stats = trie.regex_search(&re, |id, k| {
        got.push((id, k.to_vec()));
        true
    });
    assert_eq!(got, want, "pattern {pattern:?}");
    assert_eq!(stats.matches as usize, want.len());
    // Walks from a start key: exactly the matches at or after it.
    let mut froms: Vec<Vec<u8>> = vec![Vec::new(), vec![0xFF, 0xFF]];
    for k in keys.iter().step_by((keys.len() / 6).max(1)) {
        froms.push(k.clone());
        froms.push([k.as_slice(), &[0]].concat());
        froms.push(k[..k.len() / 2].to_vec());
        if let Some((&last, head)) = k.split_last() {
            froms.push([head, &[last.wrapping_add(1)]].concat());
        }
    }
    for from in froms {
        let mut walk = trie.regex_walk_from(&re, &from);
        let mut got = Vec::new();
        while let Some(id) = walk.next_match() {
            got.push((id, walk.key().to_vec()));
        }
        let want_from: Vec<(u64, Vec<u8>)> =
            want.iter().filter(|(_, k)| *k >= from).cloned().collect();
        assert_eq!(got, want_from, "pattern {pattern:?} from {from:?}");
    }
}

fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Small alphabet: deep shared prefixes, many prefix-of-another keys.
        proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..12),
        // Any bytes, including 0x00 and 0xFF.
        proptest::collection::vec(any::<u8>(), 0..20),
        // Text-like keys with structure.
        "[a-d]{1,3}(/[0-9]{1,2}(\\.[0-9])?)?".prop_map(String::into_bytes),
    ]
}

/// Keys that repeat their ends among neighbours, as Debian's do:
/// packages of a source, each `name[-part]/version` with the source's
/// version, so the builder writes labels as copies (version 6).
fn versioned_keys() -> impl Strategy<Value = BTreeSet<Vec<u8>>> {
    proptest::collection::vec(
        (
            "[a-e]{1,6}",
            "[0-9]{1,3}\\.[0-9]{1,4}(\\+dfsg)?-[1-3]",
            proptest::collection::vec(
                prop_oneof![
                    Just(""),
                    Just("-dev"),
                    Just("-doc"),
                    Just("-common"),
                    Just("-data"),
                    Just("-utils"),
                ],
                1..6,
            ),
        ),
        // Enough label bytes for a symbol table to pay (copies need one).
        200..400,
    )
    .prop_map(|sources| {
        sources
            .iter()
            .flat_map(|(name, version, parts)| {
                parts
                    .iter()
                    .map(move |part| format!("{name}{part}/{version}").into_bytes())
            })
            .collect()
    })
}

/// Keys that repeat whole labels, as file paths do: directories crossed
/// with a few file names, so the builder picks shared labels (version 2).
fn repeating_keys() -> impl Strategy<Value = BTreeSet<Vec<u8>>> {
    (
        proptest::collection::vec("[a-c]{1,6}", 1..40),
        proptest::collection::vec(
            prop_oneof![
                Just("__init__.py".to_string()),
                Just("README.md".to_string()),
                Just("LICENSE".to_string()),
                "[a-z_]{1,10}(\\.py)?",
            ],
            1..8,
        ),
    )
        .prop_map(|(dirs, names)| {
            dirs.iter()
                .flat_map(|d| names.iter().map(move |n| format!("{d}/{n}").into_bytes()))
                .collect()
        })
}

fn format_version(bytes: &AlignedBytes) -> u32 {
    pith_enc::le::u32_at(bytes.as_bytes(), 8).expect("a header")
}

/// Whether the labels are in the shared layout (version 2, or versions 3
/// and 5 with header flag bit 1).
fn shares_labels(bytes: &AlignedBytes) -> bool {
    match format_version(bytes) {
        2 => true,
        3 | 5 | 6 => pith_enc::le::u32_at(bytes.as_bytes(), 12).is_some_and(|f| f & 2 != 0),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn shared_labels_match_btreeset(keys in repeating_keys(),
                                    probes in proptest::collection::vec(key_strategy(), 0..30)) {
        let mut probes = probes;
        for k in keys.iter().step_by(7) {
            probes.push([k.as_slice(), b"x"].concat());
            probes.push(k[..k.len() - 1].to_vec());
        }
        check_against_model(&keys, &probes);
        check_regex(&keys, "a.*/__init__\\.py");
        check_regex(&keys, ".*E.*");
    }

    #[test]
    fn matches_btreeset(keys in proptest::collection::btree_set(key_strategy(), 0..300),
                        probes in proptest::collection::vec(key_strategy(), 0..30)) {
        check_against_model(&keys, &probes);
    }

    #[test]
    fn regex_matches_model(keys in proptest::collection::btree_set(key_strategy(), 0..300),
                           pattern in prop_oneof![
                               Just("a.*".to_string()), Just("[ab]*c".to_string()), Just("(?s).*".to_string()),
                               Just("".to_string()), Just("b?a?".to_string()), Just("[a-d]+/1.*".to_string()),
                               Just(r"(?-u)[\x00-\x10].*\xFF".to_string()), Just("c{2,4}".to_string()),
                               // Byte mode: every key below `a` or `b` matches.
                               Just("(?s-u).*".to_string()), Just("(?s-u)[ab].*".to_string()),
                               Just("(?s-u)a.*|b".to_string()),
                               // Unicode mode: every ASCII byte keeps the state.
                               Just("(?s)[ab].*".to_string()), Just("(?s)a.*|[bc].*".to_string()),
                               "[abc]{0,3}".prop_map(|s| format!("{s}.*")),
                           ]) {
        check_regex(&keys, &pattern);
    }
}

proptest! {
    // Tries of a few thousand keys each: fewer cases.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn copies_match_btreeset(keys in versioned_keys(),
                             probes in proptest::collection::vec(key_strategy(), 0..30)) {
        let mut probes = probes;
        for k in keys.iter().step_by(5) {
            probes.push([k.as_slice(), b"0"].concat());
            probes.push(k[..k.len() - 1].to_vec());
            let mut next = k.clone();
            *next.last_mut().unwrap() += 1;
            probes.push(next);
        }
        prop_assert_eq!(format_version(&trie_of(&keys)), 6);
        check_against_model(&keys, &probes);
        check_regex(&keys, "[a-c].*-dev/.*");
        check_regex(&keys, ".*/1.*-2");
    }
}

#[test]
fn empty_trie() {
    check_against_model(&BTreeSet::new(), &[vec![], vec![0], vec![0xFF]]);
}

#[test]
fn only_the_empty_key() {
    let keys: BTreeSet<Vec<u8>> = [vec![]].into();
    check_against_model(&keys, &[vec![], vec![0], vec![0xFF]]);
    check_regex(&keys, "");
    check_regex(&keys, "a*");
}

#[test]
fn extreme_bytes_and_prefix_chains() {
    let keys: BTreeSet<Vec<u8>> = [
        vec![],
        vec![0],
        vec![0, 0],
        vec![0, 0, 0],
        vec![0xFF],
        vec![0xFF, 0xFF],
        vec![0xFF, 0x00, 0xFF],
        vec![0x7F; 9],
    ]
    .into();
    check_against_model(&keys, &[vec![0, 1], vec![0xFF, 0xFF, 0xFF], vec![0x80]]);
}

#[test]
fn very_long_keys() {
    let big: Vec<u8> = (0..70_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let mut other = big.clone();
    other[65_000] ^= 1;
    let mut shorter = big.clone();
    shorter.truncate(66_000);
    let keys: BTreeSet<Vec<u8>> = [big.clone(), other, shorter, vec![1, 2, 3]].into();
    check_against_model(&keys, &[big[..40_000].to_vec()]);
}

#[test]
fn single_chain_deep_trie() {
    // Every key a prefix of the next: a trie as deep as the longest key.
    let keys: BTreeSet<Vec<u8>> = (0..2000).map(|n| vec![b'x'; n]).collect();
    check_against_model(&keys, &[vec![b'x'; 5000], vec![b'y']]);
}

#[test]
fn many_keys_cross_directory_boundaries() {
    let keys: BTreeSet<Vec<u8>> = (0..20_000u32)
        .map(|i| format!("key/{:05}/{}", i * 7919 % 20_000, i % 3).into_bytes())
        .collect();
    check_against_model(
        &keys,
        &[b"key/1".to_vec(), b"key/19999/3".to_vec(), b"kez".to_vec()],
    );
}

#[test]
fn unsorted_input_is_rejected() {
    assert_eq!(
        build([b"b".as_slice(), b"a"]).unwrap_err(),
        Error::UnsortedInput {
            index: 1,
            problem: "less than"
        }
    );
    assert_eq!(
        build([b"a".as_slice(), b"a"]).unwrap_err(),
        Error::UnsortedInput {
            index: 1,
            problem: "equal to"
        }
    );
}

/// Labels coded by a symbol table are fed to the DFA a code at a time
/// (escaped bytes among them), and a matching key is spelled from the codes
/// of its path: the matches and their keys are the model's, also for a DFA
/// with more states than the walk remembers code steps for.
#[test]
fn regex_feeds_symbol_codes() {
    // Non-ASCII words too, so that symbols hold bytes of UTF-8 (`é`) and
    // bytes that are not UTF-8 (0xFF), which Unicode-mode patterns treat
    // differently from ASCII, inside labels as well as first in them.
    let words: [&[u8]; 7] = [
        b"lib",
        b"dev",
        b"python3",
        b"da\xFFta",
        b"doc",
        "caf\u{e9}".as_bytes(),
        b"utils",
    ];
    let keys: BTreeSet<Vec<u8>> = (0..6000u32)
        .map(|i| {
            let (a, b) = (words[i as usize % 7], words[(i as usize / 7) % 7]);
            // A byte the table will not hold a symbol for, now and then.
            let odd: &[u8] = if i % 97 == 0 { b"\x01" } else { b"" };
            let rest = format!("/{}.{}-{}", i % 13, i % 7, i % 3);
            [
                a,
                format!("{}-", i / 49).as_bytes(),
                b,
                odd,
                rest.as_bytes(),
            ]
            .concat()
        })
        .collect();
    let bytes = trie_of(&keys);
    let trie = Trie::open(bytes.as_bytes()).unwrap();
    assert!(trie.size_report().compressed_labels, "labels coded");
    for pattern in [
        "lib.*-dev/.*",
        ".*-dev.*",
        ".*[0-9]+-doc/1.*",
        "(?s).*",
        // Byte mode, where `.*` leads to a state every byte keeps (the
        // walk's runs).
        "(?s-u).*",
        "(?s-u)lib.*",
        "(?s-u)(lib|dev).*|data.*",
        "(?s)lib.*",
        "(?s)(lib|dev).*|data.*",
        r"(?-u).*\x01.*",
        // 2^12 states and more: most steps past the remembered ones.
        "(?s-u).*1.{11}",
    ] {
        check_regex_on(&bytes, &keys, pattern);
    }
}

#[test]
fn regex_prunes_instead_of_scanning() {
    let keys: BTreeSet<Vec<u8>> = (0..10_000u32)
        .map(|i| format!("{:04}/item{}", i, i % 10).into_bytes())
        .collect();
    let bytes = trie_of(&keys);
    let trie = Trie::open(bytes.as_bytes()).unwrap();
    let re = KeyRegex::new("12[0-9]3/item[0-9]").unwrap();
    let mut hits = Vec::new();
    let stats = trie.regex_search(&re, |_, k| {
        hits.push(String::from_utf8(k.to_vec()).unwrap());
        true
    });
    assert_eq!(
        hits,
        (0..10).map(|d| format!("12{d}3/item3")).collect::<Vec<_>>()
    );
    let total = trie.num_edges() as u64;
    assert!(
        stats.visited_edges * 50 < total,
        "visited {} of {total} edges",
        stats.visited_edges
    );
    // Early stop.
    let re = KeyRegex::new(".*").unwrap();
    let mut seen = 0;
    trie.regex_search(&re, |_, _| {
        seen += 1;
        seen < 5
    });
    assert_eq!(seen, 5);
}

#[test]
fn a_walk_from_a_key_skips_what_lies_before_it() {
    let keys: BTreeSet<Vec<u8>> = (0..10_000u32)
        .map(|i| format!("key/{i:05}").into_bytes())
        .collect();
    let bytes = trie_of(&keys);
    let trie = Trie::open_validated(bytes.as_bytes()).unwrap();
    let re = KeyRegex::new("key/.*").unwrap();
    let mut full = trie.regex_walk(&re);
    while full.next_match().is_some() {}
    let mut tail = trie.regex_walk_from(&re, b"key/09000");
    let mut first = None;
    let mut n = 0;
    while let Some(id) = tail.next_match() {
        first.get_or_insert(id);
        n += 1;
    }
    assert_eq!((first, n), (Some(9000), 1000));
    assert!(
        tail.stats().visited_edges * 5 < full.stats().visited_edges,
        "from the 9,000th key: {} edges of a full walk's {}",
        tail.stats().visited_edges,
        full.stats().visited_edges
    );
}

#[test]
fn bad_regex_is_an_error() {
    assert!(matches!(KeyRegex::new("(unclosed"), Err(Error::Regex(_))));
    // The parser's own message, with the position in the caller's pattern
    // (not in the anchored wrapper it is compiled in), not only "error
    // building NFA".
    let Err(Error::Regex(message)) = KeyRegex::new("ab(c") else {
        panic!("a bad pattern compiled");
    };
    assert!(message.contains("unclosed group"), "{message}");
    assert!(message.contains("ab(c\n"), "{message}");
    assert!(message.contains("\n      ^\n"), "{message}");
}

#[test]
fn regex_walk_is_the_search_one_match_at_a_time() {
    let keys: BTreeSet<Vec<u8>> = ["", "a", "ab", "abc", "b", "ba", "bab"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    let bytes = trie_of(&keys);
    let trie = Trie::open(bytes.as_bytes()).unwrap();
    for pattern in ["", "a.*", ".*b", "b?a?b?", "x"] {
        let re = KeyRegex::new(pattern).unwrap();
        let mut searched = Vec::new();
        let search_stats = trie.regex_search(&re, |id, k| {
            searched.push((id, k.to_vec()));
            true
        });
        let mut walk = trie.regex_walk(std::sync::Arc::new(re.clone()));
        let mut walked = Vec::new();
        while let Some(id) = walk.next_match() {
            assert_eq!(trie.key(id).as_deref(), Some(walk.key()));
            walked.push((id, walk.key().to_vec()));
        }
        assert_eq!(walked, searched, "{pattern}");
        assert_eq!(walk.stats(), search_stats, "{pattern}");
        assert_eq!(
            walk.next_match(),
            None,
            "{pattern}: a finished walk stays finished"
        );
    }
}

fn sample_keys() -> BTreeSet<Vec<u8>> {
    (0..3000u32)
        .map(|i| format!("pkg-{}/{}.{}-{}", i % 311, i % 17, i % 5, i).into_bytes())
        .collect()
}

fn sample_bytes() -> AlignedBytes {
    trie_of(&sample_keys())
}

/// The sample with copies forced (format version 6).
fn copies_sample_bytes() -> AlignedBytes {
    let bytes = copies_trie_of(&sample_keys());
    assert_eq!(format_version(&bytes), 6, "the sample must have copies");
    bytes
}

/// 2,400 file-path-like keys, whose labels repeat (the shared layout).
fn shared_sample_keys() -> BTreeSet<Vec<u8>> {
    let names = ["__init__.py", "setup.py", "README.md", "LICENSE.txt", "x"];
    (0..480u32)
        .flat_map(|d| names.map(|n| format!("lib/pkg{}/{}/{n}", d % 97, d).into_bytes()))
        .collect()
}

fn shared_sample_bytes() -> AlignedBytes {
    let bytes = trie_of(&shared_sample_keys());
    assert!(shares_labels(&bytes), "the sample must share labels");
    bytes
}

/// The two samples in every format: current (inline and shared labels),
/// version 3, then version 1 and version 2.
fn every_sample() -> Vec<AlignedBytes> {
    vec![
        sample_bytes(),
        shared_sample_bytes(),
        copies_sample_bytes(),
        v5_trie_of(&sample_keys()),
        v3_trie_of(&sample_keys()),
        v3_trie_of(&shared_sample_keys()),
        legacy_trie_of(&sample_keys()),
        legacy_trie_of(&shared_sample_keys()),
    ]
}

#[test]
fn shared_labels_make_repeating_keys_smaller() {
    let shared = shared_sample_bytes();
    assert_eq!(format_version(&shared), 5);
    let trie = Trie::open_validated(shared.as_bytes()).unwrap();
    assert!(trie.size_report().label_refs > 0);
    // Unique labels stay inline.
    assert!(!shares_labels(&sample_bytes()));
    assert!(shares_labels(&v3_trie_of(&shared_sample_keys())));
    assert!(!shares_labels(&v3_trie_of(&sample_keys())));
    assert_eq!(format_version(&legacy_trie_of(&sample_keys())), 1);
    assert_eq!(format_version(&legacy_trie_of(&shared_sample_keys())), 2);
}

#[test]
fn key_levels_are_smaller_than_the_permutation() {
    for keys in [sample_keys(), shared_sample_keys()] {
        let (now, before) = (v3_trie_of(&keys), legacy_trie_of(&keys));
        let now = Trie::open_validated(now.as_bytes()).unwrap().size_report();
        let before = Trie::open_validated(before.as_bytes())
            .unwrap()
            .size_report();
        assert!(
            now.permutation < before.permutation,
            "{} vs {}",
            now.permutation,
            before.permutation
        );
        assert_eq!(
            now.total - now.permutation,
            before.total - before.permutation
        );
    }
}

#[test]
fn every_single_byte_flip_is_detected() {
    for good in every_sample() {
        every_flip_is_detected(&good);
    }
}

fn every_flip_is_detected(good: &AlignedBytes) {
    let mut bytes = good.as_bytes().to_vec();
    for i in (0..bytes.len()).step_by(7) {
        bytes[i] ^= 0x10;
        let Err(err) = Trie::open_validated(AlignedBytes::copy_from(&bytes).as_bytes()) else {
            panic!("flip of byte {i} not caught");
        };
        assert!(
            matches!(
                err,
                Error::BadMagic
                    | Error::ChecksumMismatch { .. }
                    | Error::UnsupportedVersion { .. }
                    | Error::Truncated { .. }
            ),
            "byte {i}: {err}"
        );
        bytes[i] ^= 0x10;
    }
}

#[test]
fn truncation_is_detected() {
    let good = sample_bytes();
    for len in [
        0,
        7,
        8,
        63,
        64,
        65,
        good.len() / 2,
        good.len() - 8,
        good.len() - 1,
    ] {
        assert!(
            Trie::open(AlignedBytes::copy_from(&good.as_bytes()[..len]).as_bytes()).is_err(),
            "len {len}"
        );
    }
}

#[test]
fn misaligned_input_is_an_error() {
    let good = sample_bytes();
    let mut v = vec![0u8; good.len() + 1];
    v[1..].copy_from_slice(good.as_bytes());
    let slice = if v.as_ptr().align_offset(8) == 0 {
        &v[1..]
    } else {
        &v[v.as_ptr().align_offset(8) + 1..]
    };
    if slice.len() >= 64 {
        assert_eq!(Trie::open(slice).unwrap_err(), Error::Misaligned);
    }
}

/// Rewrites the checksums of `bytes` so structural validation is what is tested.
fn fix_checksums(bytes: &mut [u8]) {
    let body_crc = crc32c::crc32c(&bytes[64..]);
    bytes[40..44].copy_from_slice(&body_crc.to_le_bytes());
    let hcrc = crc32c::crc32c(&bytes[..60]);
    bytes[60..64].copy_from_slice(&hcrc.to_le_bytes());
}

#[test]
fn corrupt_structure_with_valid_checksums_never_panics() {
    for good in every_sample() {
        corrupt_structure_never_panics(&good);
    }
}

fn corrupt_structure_never_panics(good: &AlignedBytes) {
    let mut rng_state = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        rng_state
    };
    let mut valid = 0;
    for _ in 0..3000 {
        let mut bytes = good.as_bytes().to_vec();
        for _ in 0..1 + next() % 3 {
            let i = 16 + (next() as usize) % (bytes.len() - 16);
            bytes[i] ^= 1 << (next() % 8);
        }
        fix_checksums(&mut bytes);
        let aligned = AlignedBytes::copy_from(&bytes);
        // Queries run on what opened, validated or not: they must stay in
        // bounds and end either way.
        if let Ok(trie) = Trie::open(aligned.as_bytes()) {
            crate::fuzz::exercise(&trie, &bytes[64..bytes.len().min(200)]);
            if trie.validate().is_ok() {
                // What validation lets through must answer consistently.
                crate::fuzz::check_consistent(&trie);
                valid += 1;
            }
        }
    }
    // Some flips (label pool bytes, first-label bytes) leave a structurally
    // valid trie; most must be caught by validation.
    assert!(valid < 3000);
}

#[test]
fn open_reads_no_body_and_validate_checks_it() {
    let good = sample_bytes();
    let mut bytes = good.as_bytes().to_vec();
    // A first label byte of the first edge block, which open does not
    // check (the sections' lengths, which it does, are elsewhere).
    let deep = 64 + 8 + 5;
    bytes[deep] ^= 0x04;
    let aligned = AlignedBytes::copy_from(&bytes);
    let trie = Trie::open(aligned.as_bytes()).expect("open checks the header only");
    assert!(matches!(
        trie.validate(),
        Err(Error::ChecksumMismatch { region: "body", .. })
    ));
    assert!(Trie::open_validated(aligned.as_bytes()).is_err());
    // A header flip is still caught at open.
    let mut head = good.as_bytes().to_vec();
    head[20] ^= 0x01;
    assert!(matches!(
        Trie::open(AlignedBytes::copy_from(&head).as_bytes()),
        Err(Error::ChecksumMismatch {
            region: "header",
            ..
        })
    ));
}

#[test]
fn fuzz_entry_point_smoke() {
    let good = sample_bytes();
    crate::fuzz::open_and_query(good.as_bytes());
    crate::fuzz::open_and_query(&[]);
    crate::fuzz::open_and_query(b"PITHTRIE");
    let mut state = 7u64;
    for len in 0..200 {
        let data: Vec<u8> = (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 33) as u8
            })
            .collect();
        crate::fuzz::open_and_query(&data);
        crate::fuzz::open_and_query_with_valid_checksums(&data);
    }
    let mut bytes = good.as_bytes().to_vec();
    for i in (64..bytes.len()).step_by(13) {
        bytes[i] = bytes[i].wrapping_add(1);
        crate::fuzz::open_and_query_with_valid_checksums(&bytes);
        bytes[i] = bytes[i].wrapping_sub(1);
    }
}

#[test]
fn trie_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Trie<'static>>();
}

/// The golden bytes of `name` in docs/format.md, printing the bytes to
/// paste there when they differ.
fn assert_golden(name: &str, got: &AlignedBytes) {
    let want = pith_enc::golden::block(include_str!("../../../docs/format.md"), name);
    assert_eq!(
        got.as_bytes(),
        want.as_slice(),
        "docs/format.md golden bytes `{name}` drifted from the encoder; now:\n{}",
        pith_enc::golden::hex(got.as_bytes())
    );
}

#[test]
fn golden_bytes_match_docs() {
    let keys = [b"a".as_slice(), b"ab", b"b"];
    let v3 = v3_trie_of(&keys.iter().map(|k| k.to_vec()).collect());
    assert_golden("golden-trie-v3", &v3);
    // Version 1, as written before version 3, still opens and answers.
    let v1 = legacy_trie_of(&keys.iter().map(|k| k.to_vec()).collect());
    assert_golden("golden-trie-v1", &v1);
    let trie = Trie::open_validated(v1.as_bytes()).unwrap();
    for (id, key) in keys.iter().enumerate() {
        assert_eq!(trie.lookup(key), Some(id as u64));
        assert_eq!(trie.key(id as u64).as_deref(), Some(*key));
    }
}

/// The keys of the version-5 golden trie: three tails, one longer than a
/// label block keeps in the pool.
const GOLDEN_V5_KEYS: [&[u8]; 3] = [b"ant", b"antelope", b"bee/a-tail-of-more-than-31-bytes!"];

#[test]
fn golden_v5_bytes_match_docs() {
    let bytes = build(GOLDEN_V5_KEYS).unwrap();
    assert_golden("golden-trie-v5", &bytes);
    let trie = Trie::open_validated(bytes.as_bytes()).unwrap();
    for (id, key) in GOLDEN_V5_KEYS.iter().enumerate() {
        assert_eq!(trie.lookup(key), Some(id as u64));
        assert_eq!(trie.key(id as u64).as_deref(), Some(*key));
    }
}

/// The keys of the version-6 golden trie: tails `pt`, `2.6.1`, then two
/// copies of it, `oc/` + `2.6.1` and `tils/` + `2.6.1`.
const GOLDEN_V6_KEYS: [&[u8]; 3] = [b"apt-doc/2.6.1", b"apt-utils/2.6.1", b"apt/2.6.1"];

#[test]
fn golden_v6_bytes_match_docs() {
    let mut b = TrieBuilder::new();
    for key in GOLDEN_V6_KEYS {
        b.push(key).unwrap();
    }
    let bytes = b.finish_with_copies().unwrap();
    assert_eq!(format_version(&bytes), 6);
    assert_golden("golden-trie-v6", &bytes);
    let trie = Trie::open_validated(bytes.as_bytes()).unwrap();
    for (id, key) in GOLDEN_V6_KEYS.iter().enumerate() {
        assert_eq!(trie.lookup(key), Some(id as u64));
        assert_eq!(trie.key(id as u64).as_deref(), Some(*key));
    }
}

/// The keys of the version-2 golden trie: four tails, one distinct.
const GOLDEN_V2_KEYS: [&[u8]; 4] = [
    b"a/readme-first.txt",
    b"b/readme-first.txt",
    b"c/readme-first.txt",
    b"d/readme-first.txt",
];

/// Golden trie (`a`, `ab`, `b`) with `pi` rewritten to `[2, 1, 0]`: a valid
/// permutation, checksums fixed, but ids no longer in key order.
#[test]
fn permutation_out_of_key_order_is_rejected() {
    let good = legacy_trie_of(&[b"a".to_vec(), b"ab".to_vec(), b"b".to_vec()].into());
    let mut bytes = good.as_bytes().to_vec();
    // The permutation is the last section: packed(n=3, width=2, words), bitvec, packed.
    // Find its first packed word by searching for n=3, width=2, value word 0b01_10_00 (pi = [0, 2, 1]).
    let pattern: Vec<u8> = [3u64, 2, 0b01_10_00]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let at = bytes
        .windows(pattern.len())
        .rposition(|w| w == pattern.as_slice())
        .expect("pi section");
    bytes[at + 16..at + 24].copy_from_slice(&(0b00_01_10u64).to_le_bytes()); // pi = [2, 1, 0]
    fix_checksums(&mut bytes);
    let err = Trie::open_validated(AlignedBytes::copy_from(&bytes).as_bytes())
        .map(|_| ())
        .unwrap_err();
    assert!(err.to_string().contains("out of key order"), "{err}");
}

/// Replaces the one place `from` (words) occurs in `bytes` with `to`,
/// and fixes the checksums.
fn rewrite_words(bytes: &mut [u8], from: &[u64], to: &[u64]) {
    let pattern: Vec<u8> = from.iter().flat_map(|w| w.to_le_bytes()).collect();
    let hits: Vec<usize> = (0..=bytes.len() - pattern.len())
        .filter(|&i| bytes[i..i + pattern.len()] == pattern[..])
        .collect();
    assert_eq!(hits.len(), 1, "{from:?} must occur once");
    let with: Vec<u8> = to.iter().flat_map(|w| w.to_le_bytes()).collect();
    bytes[hits[0]..hits[0] + with.len()].copy_from_slice(&with);
    fix_checksums(bytes);
}

/// Golden version-3 trie (`a`, `ab`, `b`: key levels `[1, 2, 1]`) with its
/// level lists or its tree rewritten, directories still valid: each is
/// caught by validation, by the key-order walk or by the tree check.
#[test]
fn key_levels_out_of_key_order_are_rejected() {
    let good = build([b"a".as_slice(), b"ab", b"b"]).unwrap();
    // Upper bits of the lists: level 1 holds ranks 0 and 2 (bits 0 and
    // 3), level 2 rank 1 (bit 4). Rank 1 instead of 2 for level 1 (bit 2).
    let mut lists = good.as_bytes().to_vec();
    rewrite_words(&mut lists, &[6, 3, 0b01_1001], &[6, 3, 0b01_0101]);
    let err = Trie::open_validated(AlignedBytes::copy_from(&lists).as_bytes()).unwrap_err();
    let caught = ["out of key order", "does not invert"];
    assert!(caught.iter().any(|c| err.to_string().contains(c)), "{err}");
    // The tree's one node with its children swapped (packed: count 2,
    // width 2, leaves 2 and 1): not the tree the level counts make.
    let mut tree = good.as_bytes().to_vec();
    rewrite_words(&mut tree, &[2, 2, 2 | 1 << 2], &[2, 2, 1 | 2 << 2]);
    let err = Trie::open_validated(AlignedBytes::copy_from(&tree).as_bytes()).unwrap_err();
    assert!(err.to_string().contains("not the Huffman tree"), "{err}");
    // Its bits (one per key, `1 0 1` in a bitvec of 3 bits, 2 ones) as
    // `1 1 0`: the same counts, but key 1 is now sent to level 1, whose
    // list does not hold it.
    let mut bits = good.as_bytes().to_vec();
    rewrite_words(&mut bits, &[3, 2, 0b101], &[3, 2, 0b011]);
    let err = Trie::open_validated(AlignedBytes::copy_from(&bits).as_bytes()).unwrap_err();
    assert!(err.to_string().contains("does not invert"), "{err}");
}

#[test]
fn trailing_bytes_and_reserved_header_bytes_are_rejected() {
    let good = build([b"a".as_slice(), b"b"]).unwrap();
    let mut longer = good.as_bytes().to_vec();
    longer.extend_from_slice(&[0; 8]);
    assert!(Trie::open(AlignedBytes::copy_from(&longer).as_bytes()).is_err());
    let mut reserved = good.as_bytes().to_vec();
    reserved[50] = 1;
    fix_checksums(&mut reserved);
    assert!(Trie::open(AlignedBytes::copy_from(&reserved).as_bytes()).is_err());
}

#[test]
fn large_trie_top_level_index_matches_model() {
    // Enough edges for the second-level index; varied first and second bytes.
    let keys: BTreeSet<Vec<u8>> = (0..30_000u32)
        .map(|i| {
            let a = b"abcdefghijklmnopqrstuvwxyz0123456789"[(i % 36) as usize];
            let b = (i.wrapping_mul(2_654_435_761) >> 24) as u8;
            let mut k = vec![a, b];
            k.extend_from_slice(format!("/{}", i / 7).as_bytes());
            k
        })
        // A root child with every second byte: too many for a row's
        // one-byte slots, so it is searched as any node.
        .chain((0..=255u8).map(|c| vec![b'Z', c, b'/']))
        .collect();
    let bytes = trie_of(&keys);
    assert!(Trie::open(bytes.as_bytes()).unwrap().num_edges() >= 4096);
    let mut probes: Vec<Vec<u8>> = Vec::new();
    for (i, k) in keys.iter().enumerate().step_by(2503) {
        probes.push(k[..1].to_vec());
        probes.push(k[..2].to_vec());
        let mut absent = k.clone();
        absent[1] = absent[1].wrapping_add(1 + (i % 3) as u8);
        probes.push(absent);
        probes.push([k.as_slice(), b"x"].concat());
    }
    probes.push(vec![0xFF, 0xFF]);
    probes.push(vec![b'a']);
    for c in (0..=255u8).step_by(5) {
        probes.push(vec![b'Z', c, b'/']);
        probes.push(vec![b'Z', c, b'.']);
        probes.push(vec![b'Z', c]);
    }
    check_against_model(&keys, &probes);
}

#[test]
fn golden_v2_bytes_match_docs() {
    let keys: BTreeSet<Vec<u8>> = GOLDEN_V2_KEYS.iter().map(|k| k.to_vec()).collect();
    let v3 = v3_trie_of(&keys);
    assert_golden("golden-trie-v3-shared", &v3);
    let v2 = legacy_trie_of(&keys);
    assert_golden("golden-trie-v2", &v2);
    for bytes in [v3, v2] {
        let trie = Trie::open_validated(bytes.as_bytes()).unwrap();
        assert_eq!(trie.size_report().label_refs, 24);
        for (id, key) in GOLDEN_V2_KEYS.iter().enumerate() {
            assert_eq!(trie.lookup(key), Some(id as u64));
            assert_eq!(trie.key(id as u64).as_deref(), Some(*key));
        }
    }
}

/// Dense integer keys (format version 4): `count` keys of `width` bytes,
/// spread over a span at most `spread` times their count, from the bottom
/// of the width's range, its top, or anywhere between.
fn dense_keys() -> impl Strategy<Value = BTreeSet<Vec<u8>>> {
    (1usize..=8, 1u64..300, 1u64..=8, any::<u64>(), any::<u64>()).prop_map(
        |(width, count, spread, base, mut seed)| {
            let max = u64::MAX >> (64 - 8 * width);
            let span = (count * spread).min(max).max(1);
            let room = max - (span - 1); // starts 0..=room keep the span in range
            let base = match base % 4 {
                0 => 0,
                1 => room,
                _ => base % room.saturating_add(1).max(1),
            };
            let mut offsets = BTreeSet::new();
            while (offsets.len() as u64) < count.min(span) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                offsets.insert(if spread == 1 {
                    offsets.len() as u64
                } else {
                    seed % span
                });
            }
            offsets
                .into_iter()
                .map(|o| (base + o).to_be_bytes()[8 - width..].to_vec())
                .collect()
        },
    )
}

/// Probes around dense keys: each key's neighbours, its prefixes, itself
/// extended, and keys of other widths.
fn dense_probes(keys: &BTreeSet<Vec<u8>>, extra: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut probes = extra.to_vec();
    for k in keys.iter().step_by((keys.len() / 20).max(1)) {
        let v = k.iter().fold(0u64, |v, &b| v << 8 | u64::from(b));
        for d in [v.wrapping_sub(1), v.wrapping_add(1)] {
            probes.push(d.to_be_bytes()[8 - k.len()..].to_vec());
        }
        probes.push(k[..k.len() - 1].to_vec());
        probes.push([k.as_slice(), &[0]].concat());
        probes.push([k.as_slice(), &[0xFF]].concat());
    }
    probes.push(vec![0xFF; 9]);
    probes.push(Vec::new());
    probes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PITH_PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64)))]
    #[test]
    fn dense_keys_match_btreeset(keys in dense_keys(),
                                 extra in proptest::collection::vec(key_strategy(), 0..20)) {
        let bytes = trie_of(&keys);
        prop_assert_eq!(format_version(&bytes), 4);
        check_bytes_against_model(&bytes, &keys, &dense_probes(&keys, &extra));
        for pattern in [".*", "(?s-u)\\x00.*", "(?s-u).*[\\x80-\\xff]", "(?s-u).\\x01.*"] {
            check_regex_on(&bytes, &keys, pattern);
        }
    }
}

/// Two dense samples: every integer of the span a key (no bit vector),
/// and a few missing (a bit vector over the span).
fn dense_samples() -> Vec<AlignedBytes> {
    let all: BTreeSet<Vec<u8>> = (1u32..=700).map(|i| i.to_be_bytes().to_vec()).collect();
    let some: BTreeSet<Vec<u8>> = (0u64..3000)
        .filter(|i| i % 3 != 1)
        .map(|i| (i * 7 / 2).to_be_bytes()[2..].to_vec())
        .collect();
    vec![trie_of(&all), trie_of(&some)]
}

#[test]
fn dense_keys_are_written_only_when_dense() {
    let [all, some] = <[AlignedBytes; 2]>::try_from(dense_samples()).unwrap();
    for bytes in [&all, &some] {
        assert_eq!(format_version(bytes), 4);
        let trie = Trie::open_validated(bytes.as_bytes()).unwrap();
        let report = trie.size_report();
        assert_eq!((report.edges, report.total), (0, bytes.len()));
        assert_eq!(report.dense_keys, bytes.len() - 64);
        let louds = report.edges_bytes + report.labels + report.label_refs + report.permutation;
        assert_eq!(louds, 0, "{report:?}");
    }
    // 700 four-byte keys in a span of 700: three words of body.
    assert_eq!(all.len(), 64 + 24);
    // A span nine times the key count, keys of two widths, or the empty
    // key: a LOUDS trie (version 5).
    let sparse: BTreeSet<Vec<u8>> = (0u32..100)
        .map(|i| (i * 9).to_be_bytes().to_vec())
        .collect();
    let mixed: BTreeSet<Vec<u8>> = [vec![1], vec![1, 2], vec![2]].into_iter().collect();
    let empty: BTreeSet<Vec<u8>> = [vec![], vec![1]].into_iter().collect();
    for keys in [sparse, mixed, empty] {
        assert_eq!(format_version(&trie_of(&keys)), 5, "{keys:?}");
    }
    // Nine-byte keys are never dense.
    let long: BTreeSet<Vec<u8>> = (0u8..10).map(|i| vec![0, 0, 0, 0, 0, 0, 0, 0, i]).collect();
    assert_eq!(format_version(&trie_of(&long)), 5);
}

#[test]
fn dense_keys_survive_flips_and_corruption() {
    for good in dense_samples() {
        every_flip_is_detected(&good);
        corrupt_structure_never_panics(&good);
    }
}

#[test]
fn dense_headers_that_lie_are_rejected_at_open() {
    let good = &dense_samples()[1];
    let words = |b: &[u8]| -> Vec<u64> {
        b.chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let body = words(&good.as_bytes()[64..]);
    // (word index in the body, new value, what it breaks)
    for (at, value, what) in [
        (0, 0, "width 0"),
        (0, 9, "width 9"),
        (1, u64::MAX - 5, "min past the width"),
        (2, 1, "span below the key count"),
        (2, 1 << 40, "span past the width"),
        (2, body[2] + 1, "span disagreeing with the bit vector"),
    ] {
        let mut bytes = good.as_bytes().to_vec();
        bytes[64 + 8 * at..64 + 8 * at + 8].copy_from_slice(&value.to_le_bytes());
        fix_checksums(&mut bytes);
        let aligned = AlignedBytes::copy_from(&bytes);
        assert!(Trie::open(aligned.as_bytes()).is_err(), "{what}");
    }
    // Flags, edges, or a key count the span cannot hold.
    for (at, value) in [(12, 1u64), (24, 1), (16, 1 << 50)] {
        let mut bytes = good.as_bytes().to_vec();
        let width = if at == 12 { 4 } else { 8 };
        bytes[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
        fix_checksums(&mut bytes);
        assert!(
            Trie::open(AlignedBytes::copy_from(&bytes).as_bytes()).is_err(),
            "header {at}"
        );
    }
}

#[test]
fn dense_golden_bytes_match_docs() {
    // Width 2, keys 5, 7 and 8: min 5, span 4, bits 1011.
    let keys = [[0u8, 5], [0, 7], [0, 8]];
    let bytes = build(keys).unwrap();
    assert_golden("golden-trie-v4", &bytes);
    let trie = Trie::open_validated(bytes.as_bytes()).unwrap();
    assert_eq!(trie.lookup(&[0, 7]), Some(1));
    assert_eq!(trie.lookup(&[0, 6]), None);
    assert_eq!(trie.key(2).as_deref(), Some(&[0u8, 8][..]));
    assert_eq!(trie.lower_bound(&[0, 6]), 1);
}

/// A rank counter that lies (checksums repaired, not validated) must not
/// give an id at or past the key count: callers add to ids.
#[test]
fn dense_ids_stay_below_the_key_count_on_lying_counters() {
    let bytes = build([[0u8, 0], [0, 2], [0, 3]]).unwrap();
    let mut bad = bytes.as_bytes().to_vec();
    // Body word 6: the bit vector's first rank counter.
    bad[64 + 48..64 + 56].copy_from_slice(&u64::MAX.to_le_bytes());
    fix_checksums(&mut bad);
    let aligned = AlignedBytes::copy_from(&bad);
    let trie = Trie::open(aligned.as_bytes()).expect("opens: the counters are not read at open");
    assert!(trie.validate().is_err());
    for key in [&[0u8, 0][..], &[0, 2], &[0, 3], &[0, 1], &[]] {
        assert!(trie.lookup(key).is_none_or(|id| id < 3), "{key:?}");
        assert!(trie.lower_bound(key) <= 3, "{key:?}");
        use std::ops::Bound::{Excluded, Included, Unbounded};
        for bounds in [(Excluded(key), Unbounded), (Included(key), Excluded(key))] {
            let r = trie.range::<(std::ops::Bound<&[u8]>, std::ops::Bound<&[u8]>)>(bounds);
            assert!(r.end <= 4, "{key:?}: {r:?}");
        }
    }
    crate::fuzz::exercise(&trie, &bad[64..]);
}

/// A header may not claim more keys than a builder writes: 2^32 or more
/// would have a regex walk or an iteration run that long.
#[test]
fn dense_key_counts_past_the_builders_are_rejected() {
    let good = build((0u32..10).map(u32::to_be_bytes)).unwrap();
    assert_eq!(format_version(&good), 4);
    for keys in [1u64 << 32, u64::MAX] {
        let mut bad = good.as_bytes().to_vec();
        bad[16..24].copy_from_slice(&keys.to_le_bytes());
        bad[64..72].copy_from_slice(&8u64.to_le_bytes()); // width 8
        bad[72..80].copy_from_slice(&0u64.to_le_bytes()); // min 0
        bad[80..88].copy_from_slice(&keys.to_le_bytes()); // span = keys: no bit vector
        fix_checksums(&mut bad);
        assert!(
            Trie::open(AlignedBytes::copy_from(&bad).as_bytes()).is_err(),
            "{keys}"
        );
        crate::fuzz::open_and_query(&bad);
    }
}

/// A regex walk over dense keys prunes as a LOUDS walk does: a pattern
/// for one key, or one no key can match, visits a few nodes of the
/// implicit byte tree, not every key.
#[test]
fn dense_regex_walks_prune() {
    let keys: BTreeSet<Vec<u8>> = (0u32..200_000)
        .filter(|i| i % 5 != 3)
        .map(|i| i.to_be_bytes().to_vec())
        .collect();
    let bytes = trie_of(&keys);
    assert_eq!(format_version(&bytes), 4);
    let trie = Trie::open_validated(bytes.as_bytes()).unwrap();
    let one = KeyRegex::new("(?s-u)\\x00\\x01\\x00\\x05").unwrap();
    let stats = trie.regex_search(&one, |_, k| {
        assert_eq!(k, [0, 1, 0, 5]);
        true
    });
    assert_eq!(stats.matches, 1);
    assert!(stats.visited_edges < 600, "{stats:?}");
    let none = KeyRegex::new("(?s-u)\\xFF.*").unwrap();
    let stats = trie.regex_search(&none, |_, _| true);
    assert_eq!(stats.matches, 0);
    assert!(stats.visited_edges < 10, "{stats:?}");
    // 0x..03 and 0x..08 end in 3 or 8 mod 5 = 3: missing keys are skipped.
    let ends = KeyRegex::new("(?s-u)\\x00\\x00\\x00[\\x03\\x08]").unwrap();
    let mut got = Vec::new();
    trie.regex_search(&ends, |id, k| {
        got.push((id, k.to_vec()));
        true
    });
    assert!(got.is_empty(), "{got:?}");
}

/// Keys whose tails run from one byte to well past the 31 a label block
/// keeps in the pool (longer ones go through the long pool), as text (the
/// symbol table) and as arbitrary bytes (raw labels).
fn long_tail_keys(text: bool) -> BTreeSet<Vec<u8>> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..700u32)
        .map(|i| {
            let mut key = format!("p{:03}/", i % 250).into_bytes();
            let tail = (i as usize * 13) % 90 + 1;
            key.extend((0..tail).map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if text {
                    b"abcdefgh-./0123"[(state % 15) as usize]
                } else {
                    state as u8
                }
            }));
            key
        })
        .collect()
}

#[test]
fn long_labels_match_the_model() {
    for text in [true, false] {
        let keys = long_tail_keys(text);
        let bytes = trie_of(&keys);
        assert_eq!(format_version(&bytes), 5);
        let trie = Trie::open_validated(bytes.as_bytes()).unwrap();
        assert_eq!(trie.size_report().compressed_labels, text);
        let probes: Vec<Vec<u8>> = keys
            .iter()
            .step_by(7)
            .flat_map(|k| [k[..k.len() - 1].to_vec(), [k.as_slice(), b"x"].concat()])
            .collect();
        check_against_model(&keys, &probes);
    }
}

/// Debian-like keys whose versions repeat among neighbours: labels copy
/// their ends (version 6), the trie is smaller than version 5's, and
/// answers as the model does.
#[test]
fn copies_make_versioned_keys_smaller() {
    let keys: BTreeSet<Vec<u8>> = (0..4000u64)
        .map(|i| {
            let part = ["", "-dev", "-doc", "-common-data", "-utils"][i as usize % 5];
            let v = (i / 5).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24;
            let name = format!("lib{}{}", v % 997, ["x", "gtk", "perl"][(v % 3) as usize]);
            format!("{name}{part}/{}.{}-{}", v % 89, v / 89 % 1000, i / 5 % 4).into_bytes()
        })
        .collect();
    let (now, before) = (trie_of(&keys), v5_trie_of(&keys));
    assert_eq!((format_version(&now), format_version(&before)), (6, 5));
    let report = |b: &AlignedBytes| Trie::open_validated(b.as_bytes()).unwrap().size_report();
    let (now_report, before_report) = (report(&now), report(&before));
    assert!(
        now_report.label_pool * 20 < before_report.label_pool * 19
            && now_report.total < before_report.total,
        "{now_report:?} {before_report:?}"
    );
    let probes: Vec<Vec<u8>> = keys
        .iter()
        .step_by(3)
        .flat_map(|k| [k[..k.len() - 2].to_vec(), [k.as_slice(), b"1"].concat()])
        .collect();
    check_against_model(&keys, &probes);
    check_regex(&keys, "lib1.*-dev/.*");
    check_regex(&keys, ".*/2.*-3");
}

/// Copies whose ends hold the escape and copy bytes (254, 255, 0) and
/// are longer than a block keeps in the pool (long labels), with copies
/// forced: the model agrees.
#[test]
fn copies_of_long_ends_and_escape_bytes_match_the_model() {
    let ends: [Vec<u8>; 3] = [
        [b"/".as_slice(), &[254; 40], b"-end"].concat(),
        [&[255u8, 254, 0, 255][..], &[b'v'; 44]].concat(),
        b"/2.6.1+dfsg-3~deb12u1".to_vec(),
    ];
    // Starts unique past their first bytes, so labels do not repeat
    // whole (the shared layout would win) but their ends do.
    let keys: BTreeSet<Vec<u8>> = (0..600u64)
        .map(|i| {
            let hash = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
            let start = [
                &[254u8, b'a' + (i % 7) as u8][..],
                format!("{hash:08x}").as_bytes(),
            ]
            .concat();
            [start, ends[(i % 3) as usize].clone()].concat()
        })
        .collect();
    let bytes = copies_trie_of(&keys);
    assert_eq!(format_version(&bytes), 6);
    let trie = Trie::open_validated(bytes.as_bytes()).unwrap();
    assert!(trie.size_report().label_copies > 100);
    let probes: Vec<Vec<u8>> = keys
        .iter()
        .step_by(5)
        .flat_map(|k| {
            let mut bumped = k.clone();
            *bumped.last_mut().unwrap() ^= 1;
            [
                k[..k.len() - 3].to_vec(),
                bumped,
                [k.as_slice(), &[254]].concat(),
            ]
        })
        .collect();
    check_against_model(&keys, &probes);
    check_regex(&keys, "(?s-u).*\\xFE{40}-end");
    check_regex(&keys, "(?s-u)\\xFE[ab].*v");
}

/// Where labels are short, as on real keys, blocks of lengths take less
/// than version 3's sampled offsets; the pool is the same.
#[test]
fn label_blocks_are_smaller_than_sampled_offsets() {
    let keys = sample_keys();
    let (now, before) = (v5_trie_of(&keys), v3_trie_of(&keys));
    let now = Trie::open_validated(now.as_bytes()).unwrap().size_report();
    let before = Trie::open_validated(before.as_bytes())
        .unwrap()
        .size_report();
    assert_eq!(now.label_pool, before.label_pool);
    assert!(now.labels < before.labels, "{now:?} {before:?}");
    assert_eq!(now.total - now.labels, before.total - before.labels);
}

/// A header flag no version defines is refused at open, in every format
/// (the header's checksum rewritten, so only the flag is wrong).
#[test]
fn unknown_header_flags_are_refused() {
    let mut samples = every_sample();
    samples.extend(dense_samples());
    for good in samples {
        for flag in [4u32, 8, 1 << 31] {
            let mut bytes = good.as_bytes().to_vec();
            let flags = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) | flag;
            bytes[12..16].copy_from_slice(&flags.to_le_bytes());
            let crc = crc32c::crc32c(&bytes[..60]);
            bytes[60..64].copy_from_slice(&crc.to_le_bytes());
            let copy = AlignedBytes::copy_from(&bytes);
            assert!(
                Trie::open(copy.as_bytes()).is_err(),
                "flag {flag:#x} of version {}",
                format_version(&good)
            );
        }
    }
}
