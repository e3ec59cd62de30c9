//! Opens arbitrary bytes as a record store and reads records.
//! Must never panic, hang or read out of bounds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pith_zip::fuzz::open_and_get(data);
});
