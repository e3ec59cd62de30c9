//! Like `trie_open`, but rewrites the checksums first so the fuzzer explores
//! structural validation and the query paths rather than the crc check.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pith_trie::fuzz::open_and_query_with_valid_checksums(data);
});
