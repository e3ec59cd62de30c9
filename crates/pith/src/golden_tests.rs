//! Golden bytes: the examples in `docs/format.md` must be what the encoders
//! write, so the spec cannot drift from the code.

use crate::batch::WriteBatch;
use crate::manifest::{Manifest, SegmentEntry};

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
fn wal_matches_docs() {
    // Through the real writer, on the in-memory file system.
    use crate::env::{Fs, MemFs};
    let fs = MemFs::new();
    let dir = std::path::Path::new("/golden");
    fs.create_dir_all(dir).expect("mkdir");
    let path = dir.join("000001.wal");
    let mut w = crate::wal::WalWriter::create(&fs, &path).expect("create");
    let mut b = WriteBatch::new();
    b.put("a", "1");
    w.add(b.encode_with_seq(1)).expect("add");
    w.commit(true).expect("commit");
    let bytes = fs.read(&path).expect("read");
    assert_eq!(
        bytes,
        golden("golden-wal-v1"),
        "docs drifted; encoder writes:\n{}",
        hex(&bytes)
    );
}

#[test]
fn manifest_matches_docs() {
    let m = Manifest {
        next_file: 3,
        last_seq: 5,
        log_number: 2,
        segments: vec![SegmentEntry {
            number: 1,
            keys: 4,
            records: 5,
            min_seq: 1,
            max_seq: 5,
            file_bytes: 1000,
        }],
    };
    let bytes = m.encode();
    assert_eq!(
        bytes,
        golden("golden-manifest-v1"),
        "docs drifted; encoder writes:\n{}",
        hex(&bytes)
    );
}
