//! Entry points shared by the cargo-fuzz targets (`fuzz/`) and the in-tree
//! smoke tests: parse arbitrary bytes as each on-disk structure of the
//! engine (none may panic, whatever the bytes), and drive the whole engine
//! through random operations, injected I/O errors and power cuts against
//! a model ([`api`]).

pub mod api;

use std::path::Path;

use crate::dbformat::tag_kind;
use crate::dbformat::Kind;
use crate::manifest::Manifest;
use crate::segment::Segment;
use crate::wal;

/// Opens `data` as a segment file and reads through it: every key looked
/// up and its visible value decoded, a cursor walk both ways, `verify`.
pub fn segment(data: &[u8]) {
    let bytes = crate::env::FileBytes::heap(data.to_vec());
    let Ok(seg) = Segment::from_bytes(bytes, Path::new("fuzz.seg"), 1, &|_| None, true) else {
        return;
    };
    let mut out = Vec::new();
    for (id, key) in seg.trie().iter().take(1000) {
        let hash = crate::dbformat::key_hash(&key);
        let _ = seg.get(&key, hash, u64::MAX >> 8, 0, Some(&mut out));
        let _ = seg.get(&key, hash, u64::MAX >> 8, 0, None);
        for (tag, r) in seg.versions(id) {
            let _ = seg.deadline(r);
            if tag_kind(tag) == Kind::Put {
                let _ = seg.value(r, &mut out);
            }
        }
    }
    let _ = seg.verify();
    let _ = seg.info();
}

/// Replays `data` as a write-ahead log.
pub fn wal(data: &[u8]) {
    let mut ops = 0u64;
    let _ = wal::replay_bytes(Path::new("fuzz.wal"), data, 0, &mut |_, op| {
        ops += op.key.len() as u64 + op.value.len() as u64;
    });
}

/// Decodes `data` as a manifest.
pub fn manifest(data: &[u8]) {
    let _ = Manifest::decode(Path::new("MANIFEST"), data);
}

/// Like [`segment`], but first recomputes the header's and every
/// section's checksum, so mutations reach the structural checks behind
/// them (the trie and record store keep their own checksums).
pub fn segment_refixed(data: &[u8]) {
    use crate::segment::format::{layout, Header};
    let mut bytes = data.to_vec();
    let version = bytes
        .get(8..12)
        .map(|v| u32::from_le_bytes([v[0], v[1], v[2], v[3]]));
    let len = version.and_then(layout).map(|(_, len)| len);
    if let Some(len) = len.filter(|&len| bytes.len() >= len) {
        let crc = crc32c::crc32c(&bytes[..len - 8]);
        bytes[len - 8..len - 4].copy_from_slice(&crc.to_le_bytes());
        if let Ok(mut h) = Header::decode(&bytes) {
            for s in h.sections.iter_mut() {
                let range = usize::try_from(s.offset)
                    .ok()
                    .zip(usize::try_from(s.offset.saturating_add(s.len)).ok());
                if let Some(section) = range.and_then(|(a, b)| bytes.get(a..b)) {
                    s.crc = crc32c::crc32c(section);
                }
            }
            let header = h.encode();
            bytes[..len].copy_from_slice(&header);
        }
    }
    segment(&bytes);
}
