//! Opens arbitrary bytes as a shared-model file, and reads arbitrary bytes
//! as a record of a store encoded with a fixed model.
//! Must never panic, hang or read out of bounds.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pith_zip::fuzz::model_open(data);
    pith_zip::fuzz::shared_record(data);
});
