//! Golden bytes: the record-store examples in `docs/format.md` must be what
//! the builder writes, so the spec cannot drift from the code, and the
//! examples of older versions must still read.

use crate::{build_to_vec, Codec, CodecChoice, Options, Store};

fn golden(name: &str) -> Vec<u8> {
    pith_enc::golden::block(include_str!("../../../docs/format.md"), name)
}

#[test]
fn plain_store_matches_docs() {
    let records: [&[u8]; 3] = [b"red", b"", b"yellow"];
    let options = Options {
        codec: CodecChoice::Force(Codec::Plain),
        ..Options::default()
    };
    let (bytes, _) = build_to_vec(&records, &options).expect("build");
    assert_eq!(
        bytes,
        golden("golden-zip-v3"),
        "docs drifted; the builder writes:\n{}",
        pith_enc::golden::hex(&bytes)
    );
    // And the documented bytes read back as the records.
    let mut aligned = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..bytes.len()].copy_from_slice(&bytes);
    let store =
        Store::open(&bytemuck::cast_slice::<u64, u8>(&aligned)[..bytes.len()]).expect("open");
    let mut out = Vec::new();
    for (id, r) in records.iter().enumerate() {
        store.get(id as u64, &mut out).expect("get");
        assert_eq!(out, *r);
    }
}

/// The model every shared-model example uses: trained on no records, so
/// it is small and the same on every machine.
fn empty_model() -> (crate::Model, Vec<u8>) {
    crate::Model::train(7, &[] as &[&[u8]], u64::MAX, &Options::default()).expect("train")
}

#[test]
fn model_file_header_matches_docs() {
    let (_, file) = empty_model();
    let header = &file[..crate::MODEL_HEADER_BYTES];
    assert_eq!(
        header,
        golden("golden-model-v1-header"),
        "docs drifted; the trainer writes:\n{}",
        pith_enc::golden::hex(header)
    );
    crate::Model::open(&file).expect("the documented model opens");
}

#[test]
fn shared_store_matches_docs() {
    let (model, _) = empty_model();
    let model = std::sync::Arc::new(model);
    let records: [&[u8]; 3] = [b"red", b"", b"yellow"];
    let mut bytes = Vec::new();
    let mut b = crate::SharedBuilder::new(model.clone(), &Options::default(), &mut bytes);
    for r in records {
        b.push(r).expect("push");
    }
    b.finish().expect("finish");
    assert_eq!(
        bytes,
        golden("golden-zip-shared-v3"),
        "docs drifted; the builder writes:\n{}",
        pith_enc::golden::hex(&bytes)
    );
    let mut aligned = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..bytes.len()].copy_from_slice(&bytes);
    let view = &bytemuck::cast_slice::<u64, u8>(&aligned)[..bytes.len()];
    let store = Store::open_with_model(view, Some(model)).expect("open");
    let mut out = Vec::new();
    for (id, r) in records.iter().enumerate() {
        store.get(id as u64, &mut out).expect("get");
        assert_eq!(out, *r);
    }
}

/// `bytes` copied to 8-byte-aligned memory.
fn aligned(bytes: &[u8]) -> Vec<u64> {
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
    words
}

#[test]
fn fixed_store_matches_docs() {
    let records: [&[u8]; 3] = [b"user:001", b"user:002", b"user:013"];
    let options = Options {
        codec: CodecChoice::Force(Codec::Plain),
        ..Options::default()
    };
    let (bytes, stats) = build_to_vec(&records, &options).expect("build");
    assert_eq!(stats.codec, Codec::Fixed);
    assert_eq!(
        bytes,
        golden("golden-zip-fixed-v3"),
        "docs drifted; the builder writes:\n{}",
        pith_enc::golden::hex(&bytes)
    );
    let words = aligned(&bytes);
    let store = Store::open(&bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()]).expect("open");
    let mut out = Vec::new();
    for (id, r) in records.iter().enumerate() {
        store.get(id as u64, &mut out).expect("get");
        assert_eq!(out, *r);
    }
    store.verify().expect("verify");
}

#[test]
fn older_versions_examples_still_read() {
    let records: [&[u8]; 3] = [b"red", b"", b"yellow"];
    let (model, _) = empty_model();
    let model = std::sync::Arc::new(model);
    for name in [
        "golden-zip-v2",
        "golden-zip-shared-v2",
        "golden-zip-v1",
        "golden-zip-shared-v1",
    ] {
        let bytes = golden(name);
        let words = aligned(&bytes);
        let view = &bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()];
        let store = Store::open_with_model(view, Some(model.clone())).expect(name);
        let mut out = Vec::new();
        for (id, r) in records.iter().enumerate() {
            store.get(id as u64, &mut out).expect("get");
            assert_eq!(out, *r, "{name}");
            // A version 1 record's checksum covers its decoded bytes, so
            // it is copied by decoding it, not as it is stored; a version
            // 2 shared-model record is copied as it is.
            assert_eq!(
                store.encoded(id as u64).expect("encoded").is_some(),
                name == "golden-zip-shared-v2",
                "{name}"
            );
        }
        store.verify().expect(name);
        // Its checksums still catch a flipped byte ("red" is at 0
        // or 1).
        let mut bad = bytes.clone();
        bad[1] ^= 0x20;
        let words = aligned(&bad);
        let view = &bytemuck::cast_slice::<u64, u8>(&words)[..bad.len()];
        let store = Store::open_with_model(view, Some(model.clone())).expect(name);
        assert!(store.get(0, &mut out).is_err(), "{name}");
    }
}
