//! Golden bytes: the record-store examples in `docs/format.md` must be what
//! the builder writes, so the spec cannot drift from the code, and the
//! examples of older versions must still read.

use std::sync::Arc;

use crate::tests::{aligned, view};
use crate::{build_to_vec, Codec, CodecChoice, Model, Options, Store};

fn golden(name: &str) -> Vec<u8> {
    pith_enc::golden::block(include_str!("../../../docs/format.md"), name)
}

/// Asserts `bytes` are the docs' block `name`, and that they open (with
/// `model`, for a shared-model store), read back as `records` and verify.
fn assert_documented(bytes: &[u8], name: &str, records: &[&[u8]], model: Option<Arc<Model>>) {
    assert_eq!(
        bytes,
        golden(name),
        "docs drifted; the builder writes:\n{}",
        pith_enc::golden::hex(bytes)
    );
    let words = aligned(bytes);
    let store = Store::open_with_model(view(&words, bytes.len()), model).expect("open");
    let mut out = Vec::new();
    for (id, r) in records.iter().enumerate() {
        store.get(id as u64, &mut out).expect("get");
        assert_eq!(out, *r);
    }
    store.verify().expect("verify");
}

/// The store the builder writes of `records` when asked for plain.
fn asked_for_plain(records: &[&[u8]]) -> (Vec<u8>, Codec) {
    let options = Options {
        codec: CodecChoice::Force(Codec::Plain),
        ..Options::default()
    };
    let (bytes, stats) = build_to_vec(records, &options).expect("build");
    (bytes, stats.codec)
}

#[test]
fn plain_store_matches_docs() {
    let records: [&[u8]; 3] = [b"red", b"", b"yellow"];
    let (bytes, codec) = asked_for_plain(&records);
    assert_eq!(codec, Codec::Plain);
    assert_documented(&bytes, "golden-zip-v3", &records, None);
}

#[test]
fn fixed_store_matches_docs() {
    let records: [&[u8]; 3] = [b"user:001", b"user:002", b"user:013"];
    let (bytes, codec) = asked_for_plain(&records);
    assert_eq!(codec, Codec::Fixed);
    assert_documented(&bytes, "golden-zip-fixed-v3", &records, None);
}

/// The model every shared-model example uses: trained on no records, so
/// it is small and the same on every machine.
fn empty_model() -> (Model, Vec<u8>) {
    Model::train(7, &[] as &[&[u8]], u64::MAX, &Options::default()).expect("train")
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
    Model::open(&file).expect("the documented model opens");
}

#[test]
fn shared_store_matches_docs() {
    let model = Arc::new(empty_model().0);
    let records: [&[u8]; 3] = [b"red", b"", b"yellow"];
    let mut bytes = Vec::new();
    let mut b = crate::SharedBuilder::new(model.clone(), &Options::default(), &mut bytes);
    for r in records {
        b.push(r).expect("push");
    }
    b.finish().expect("finish");
    assert_documented(&bytes, "golden-zip-shared-v3", &records, Some(model));
}

#[test]
fn older_versions_examples_still_read() {
    let records: [&[u8]; 3] = [b"red", b"", b"yellow"];
    let model = Arc::new(empty_model().0);
    for name in [
        "golden-zip-v2",
        "golden-zip-shared-v2",
        "golden-zip-v1",
        "golden-zip-shared-v1",
    ] {
        let bytes = golden(name);
        let words = aligned(&bytes);
        let store =
            Store::open_with_model(view(&words, bytes.len()), Some(model.clone())).expect(name);
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
        let store =
            Store::open_with_model(view(&words, bad.len()), Some(model.clone())).expect(name);
        assert!(store.get(0, &mut out).is_err(), "{name}");
    }
}
