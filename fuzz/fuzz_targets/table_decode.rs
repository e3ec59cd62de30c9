//! cargo-fuzz target: `pith_table::fuzz_decode` on arbitrary bytes (stored
//! keys and rows of a table must never panic the decoders).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pith_table::fuzz_decode(data);
});
