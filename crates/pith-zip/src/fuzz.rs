//! Entry point shared by the cargo-fuzz target and the in-tree smoke test:
//! open arbitrary bytes as a store and read from it. Must never panic,
//! and a record read from a copy of its bytes must read as from the store.

use crate::Store;

/// Opens `data` (copied to an aligned buffer) and reads a few records;
/// then the same with the footer's checksums (pool, metadata, footer)
/// made to match, so mutations reach the parsers of the offsets and the
/// codecs' sections behind them.
pub fn open_and_get(data: &[u8]) {
    open_and_read(data);
    if let Some(repaired) = with_checksums_repaired(data) {
        open_and_read(&repaired);
    }
}

/// `data` with the footer's pool, metadata and footer checksums set to
/// what its sections hold, when the footer's sizes place them at all.
fn with_checksums_repaired(data: &[u8]) -> Option<Vec<u8>> {
    use crate::format::{pad8, FOOTER_BYTES};
    let footer = data.len().checked_sub(FOOTER_BYTES)?;
    let field = |at: usize| pith_enc::le::u64_at(data, footer + at);
    let pool_end = pad8(field(24)?)?;
    let dict_end = pool_end.checked_add(pad8(field(32)?)?)?;
    if dict_end.checked_add(field(40)?)? != footer as u64 {
        return None;
    }
    // At most `footer`, so it fits.
    let pool_end = pool_end as usize;
    let mut out = data.to_vec();
    let pool_crc = crc32c::crc32c(&data[..pool_end]);
    let meta_crc = crc32c::crc32c(&data[pool_end..footer]);
    out[footer + 64..footer + 68].copy_from_slice(&pool_crc.to_le_bytes());
    out[footer + 68..footer + 72].copy_from_slice(&meta_crc.to_le_bytes());
    let crc = crc32c::crc32c(&out[footer..footer + 76]);
    out[footer + 76..footer + 80].copy_from_slice(&crc.to_le_bytes());
    Some(out)
}

/// Copies `bytes` into an 8-byte aligned buffer, as a store is read.
pub(crate) fn aligned(bytes: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
    words
}

fn open_and_read(data: &[u8]) {
    let words = aligned(data);
    let bytes = &bytemuck::cast_slice::<u64, u8>(&words)[..data.len()];
    let Ok(store) = Store::open(bytes) else {
        return;
    };
    let (mut out, mut copied) = (Vec::new(), Vec::new());
    let n = store.len();
    for id in [0, 1, n / 2, n.saturating_sub(1), n] {
        let got = store.get(id, &mut out);
        // A read from a copy of the record's bytes (as a reader that
        // `pread`s them does) agrees with the read from the store's own.
        let range = store.stored_range(id);
        let stored = bytes
            .get(range.start as usize..range.end as usize)
            .unwrap_or(&[]);
        let from_copy = store.get_from(id, stored, &mut copied);
        assert_eq!(
            got.is_ok(),
            from_copy.is_ok(),
            "record {id}: {got:?} {from_copy:?}"
        );
        if got.is_ok() {
            assert_eq!(out, copied, "record {id}");
        }
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
    let words = aligned(&store);
    let bytes = &bytemuck::cast_slice::<u64, u8>(&words)[..store.len()];
    let Ok(s) = Store::open_with_model(bytes, Some(model.clone())) else {
        return;
    };
    let mut out = Vec::new();
    let _ = s.get(0, &mut out);
    let _ = s.encoded(0);
    let _ = s.verify();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repair_fixes_only_the_checksums() {
        let records: Vec<String> = (0..100).map(|i| format!("user:{i:03}")).collect();
        let (bytes, _) = crate::build_to_vec(&records, &crate::Options::default()).expect("build");
        assert_eq!(with_checksums_repaired(&bytes).as_deref(), Some(&bytes[..]));
        // A template byte changed: the metadata checksum refuses it, and
        // once repaired the store opens (and reads the changed byte).
        let mut bad = bytes.clone();
        let at = bad
            .windows(5)
            .position(|w| w == b"user:")
            .expect("template");
        bad[at] = b'U';
        let w = aligned(&bad);
        assert!(Store::open(&bytemuck::cast_slice::<u64, u8>(&w)[..bad.len()]).is_err());
        let fixed = with_checksums_repaired(&bad).expect("placed");
        let w = aligned(&fixed);
        let store = Store::open(&bytemuck::cast_slice::<u64, u8>(&w)[..fixed.len()]).expect("open");
        let mut out = Vec::new();
        store.get(7, &mut out).expect("get");
        assert_eq!(out, b"User:007");
        assert!(with_checksums_repaired(&bytes[..bytes.len() - 8]).is_none());
    }
}
