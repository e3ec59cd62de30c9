//! Golden bytes: the record-store example in `docs/format.md` must be what
//! the builder writes, so the spec cannot drift from the code.

use crate::{build_to_vec, Codec, CodecChoice, Options, Store};

fn golden(name: &str) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/format.md");
    let doc = std::fs::read_to_string(path).expect("docs/format.md");
    let block = doc
        .split(&format!("```text {name}\n"))
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("no {name} block in docs/format.md"));
    block
        .split_whitespace()
        .map(|h| u8::from_str_radix(h, 16).expect("hex byte"))
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.chunks(16)
        .map(|c| {
            c.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
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
        golden("golden-zip-v1"),
        "docs drifted; the builder writes:\n{}",
        hex(&bytes)
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
