//! Entry point shared by the cargo-fuzz target and the in-tree smoke test:
//! open arbitrary bytes as a store and read from it. Must never panic.

use crate::Store;

/// Opens `data` (copied to an aligned buffer) and reads a few records.
pub fn open_and_get(data: &[u8]) {
    let mut words = vec![0u64; data.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..data.len()].copy_from_slice(data);
    let bytes = &bytemuck::cast_slice::<u64, u8>(&words)[..data.len()];
    let Ok(store) = Store::open(bytes) else {
        return;
    };
    let mut out = Vec::new();
    let n = store.len();
    for id in [0, 1, n / 2, n.saturating_sub(1), n] {
        let _ = store.get(id, &mut out);
    }
    let _ = store.verify();
}

/// Opens `data` as a model file and, when it opens, encodes and decodes a
/// record with it. Must never panic.
pub fn model_open(data: &[u8]) {
    let Ok(model) = crate::Model::open(data) else {
        return;
    };
    let model = std::sync::Arc::new(model);
    let record = b"Package: fuzz\nVersion: 1.0\n";
    let mut b = crate::SharedBuilder::new(model.clone(), &crate::Options::default(), Vec::new());
    if b.push(record).is_err() {
        return;
    }
    let Ok(_) = b.finish() else { return };
}

/// Reads `data` as one stored record of a shared-model store (header,
/// payload, checksum) against a small fixed model. Must never panic.
pub fn shared_record(data: &[u8]) {
    use std::sync::{Arc, OnceLock};
    static MODEL: OnceLock<Option<Arc<crate::Model>>> = OnceLock::new();
    let model = MODEL.get_or_init(|| {
        let sample: Vec<String> = (0..64)
            .map(|i| format!("Package: p{i}\nVersion: {i}.0\nDepends: libc6\n"))
            .collect();
        crate::Model::train(1, &sample, u64::MAX, &crate::Options::default())
            .ok()
            .map(|(m, _)| Arc::new(m))
    });
    let Some(model) = model else { return };
    let store = crate::shared::store_with_record(model, data);
    let words = {
        let mut w = vec![0u64; store.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut w)[..store.len()].copy_from_slice(&store);
        w
    };
    let bytes = &bytemuck::cast_slice::<u64, u8>(&words)[..store.len()];
    let Ok(s) = Store::open_with_model(bytes, Some(model.clone())) else {
        return;
    };
    let mut out = Vec::new();
    let _ = s.get(0, &mut out);
    let _ = s.encoded(0);
    let _ = s.verify();
}
