//! Entry points shared by the cargo-fuzz targets and the in-tree smoke tests.
//!
//! [`open_and_query`] must never panic, whatever the bytes: it opens them and,
//! if they open, exercises every query on keys drawn from the input itself,
//! validated or not, and checks a validated trie's answers agree.

use crate::{AlignedBytes, KeyRegex, Trie};

/// Opens `data` as a trie and, if it opens, runs every kind of query on it
/// before validating (queries on unvalidated bytes must stay in bounds and
/// end); if it then validates, checks that ids and keys agree both ways.
pub fn open_and_query(data: &[u8]) {
    let bytes = AlignedBytes::copy_from(data);
    let Ok(trie) = Trie::open(bytes.as_bytes()) else {
        return;
    };
    exercise(&trie, data);
    if trie.validate().is_ok() {
        check_consistent(&trie);
    }
}

/// On a validated trie: every key found by id looks up to that id, in
/// increasing key order (a few hundred ids at most). Panics otherwise: the
/// validation let through a structure the queries disagree on.
pub(crate) fn check_consistent(trie: &Trie<'_>) {
    let mut prev: Option<Vec<u8>> = None;
    for id in 0..(trie.len() as u64).min(300) {
        let key = trie
            .key(id)
            .expect("a validated trie has every id below len");
        assert_eq!(trie.lookup(&key), Some(id), "id {id} key {key:?}");
        if let Some(p) = &prev {
            assert!(p < &key, "ids out of key order at {id}");
        }
        prev = Some(key);
    }
}

/// Like [`open_and_query`], but first rewrites both checksums so that the
/// fuzzer reaches structural validation instead of stopping at the crc.
pub fn open_and_query_with_valid_checksums(data: &[u8]) {
    let mut bytes = data.to_vec();
    if bytes.len() >= 64 {
        let body_len = pith_enc::le::u64_at(&bytes, 32).unwrap_or(0);
        let end = usize::try_from(body_len)
            .ok()
            .and_then(|l| l.checked_add(64))
            .filter(|&e| e <= bytes.len());
        if let Some(end) = end {
            let body_crc = crc32c::crc32c(&bytes[64..end]);
            bytes[40..44].copy_from_slice(&body_crc.to_le_bytes());
        }
        let header_crc = crc32c::crc32c(&bytes[..60]);
        bytes[60..64].copy_from_slice(&header_crc.to_le_bytes());
    }
    open_and_query(&bytes);
}

/// Runs every query kind on an opened trie, with probes taken from `probe`.
pub fn exercise(trie: &Trie<'_>, probe: &[u8]) {
    let n = trie.len() as u64;
    let mut buf = Vec::new();
    for id in [0, 1, n / 2, n.saturating_sub(1), n, n.saturating_add(1)] {
        buf.clear();
        if trie.key_into(id, &mut buf) {
            let _ = trie.lookup(&buf);
            let _ = trie.lower_bound(&buf);
        }
    }
    for chunk in probe.chunks(7).take(64) {
        let _ = trie.lookup(chunk);
        let _ = trie.lower_bound(chunk);
        let _ = trie.prefix_range(chunk);
    }
    let mut c = trie.cursor();
    c.seek_to_first();
    for _ in 0..64 {
        if !c.next() {
            break;
        }
    }
    c.seek_to_last();
    for _ in 0..64 {
        if !c.prev() {
            break;
        }
    }
    // A pattern whose walk feeds the DFA, and one whose walk stops feeding
    // it below `a` (a universal state: every key there matches).
    for pattern in [".*a.*", "(?s-u)a.*"] {
        if let Ok(re) = KeyRegex::new(pattern) {
            let mut left = 256;
            trie.regex_search(&re, |_, _| {
                left -= 1;
                left > 0
            });
        }
    }
}
