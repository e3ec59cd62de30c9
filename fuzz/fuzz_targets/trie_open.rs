//! Opens arbitrary bytes as a trie and, if they open, runs every query kind.
//! Must never panic, hang or read out of bounds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pith_trie::fuzz::open_and_query(data);
});
