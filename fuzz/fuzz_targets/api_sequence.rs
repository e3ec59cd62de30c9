//! cargo-fuzz target: `pith::fuzz::api::api_sequence` - random operations,
//! injected I/O errors and power cuts against a model. A panic is a bug:
//! a lost acknowledged write, a state the writes never passed through, a
//! wrong read, an untyped error, or a panic in the engine.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pith::fuzz::api::api_sequence(data);
});
