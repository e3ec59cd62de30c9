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
