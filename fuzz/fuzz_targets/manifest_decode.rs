//! cargo-fuzz target: `pith::fuzz::manifest` on arbitrary bytes (must not panic).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pith::fuzz::manifest(data);
});
