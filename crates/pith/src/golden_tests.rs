//! Golden bytes: the examples in `docs/format.md` must be what the encoders
//! write, so the spec cannot drift from the code.

use crate::batch::WriteBatch;
use crate::manifest::{FamilyEntry, Manifest, SegmentEntry};

fn golden(name: &str) -> Vec<u8> {
    pith_enc::golden::block(include_str!("../../../docs/format.md"), name)
}

/// A log holding `batch` at sequence 1, through the real writer on the
/// in-memory file system.
fn wal_of(mut batch: WriteBatch) -> Vec<u8> {
    use crate::env::{Fs, MemFs};
    let fs = MemFs::new();
    let dir = std::path::Path::new("/golden");
    fs.create_dir_all(dir).expect("mkdir");
    let path = dir.join("000001.wal");
    let mut w = crate::wal::WalWriter::create(&fs, &path).expect("create");
    w.add(batch.encode_with_seq(1)).expect("add");
    w.commit(true).expect("commit");
    fs.read(&path).expect("read")
}

#[test]
fn wal_matches_docs() {
    let mut b = WriteBatch::new();
    b.put("a", "1");
    let bytes = wal_of(b);
    assert_eq!(
        bytes,
        golden("golden-wal-v1"),
        "docs drifted; encoder writes:\n{}",
        pith_enc::golden::hex(&bytes)
    );
    let mut b = WriteBatch::new();
    b.put_expiring("a", "1", 1_767_225_600_000);
    let bytes = wal_of(b);
    assert_eq!(
        bytes,
        golden("golden-wal-v1-expiring"),
        "docs drifted; encoder writes:\n{}",
        pith_enc::golden::hex(&bytes)
    );
    let mut b = WriteBatch::new();
    b.put_cf(&crate::ColumnFamily::new(1, "idx".into()), "a", "1");
    let bytes = wal_of(b);
    assert_eq!(
        bytes,
        golden("golden-wal-v1-family"),
        "docs drifted; encoder writes:\n{}",
        pith_enc::golden::hex(&bytes)
    );
}

#[test]
fn manifest_matches_docs() {
    let mut m = Manifest::new();
    m.next_file = 4;
    m.last_seq = 5;
    m.log_number = 3;
    m.segments = vec![SegmentEntry {
        family: 0,
        number: 1,
        keys: 4,
        records: 5,
        min_seq: 1,
        max_seq: 5,
        file_bytes: 1000,
        model: 2,
    }];
    m.families[0].current_model = 2;
    m.models = vec![2];
    let bytes = m.encode();
    assert_eq!(
        bytes,
        golden("golden-manifest-v2"),
        "docs drifted; encoder writes:\n{}",
        pith_enc::golden::hex(&bytes)
    );
}

/// A database with a second column family: version 3, the family table
/// after the models.
#[test]
fn manifest_with_families_matches_docs() {
    let mut m = Manifest::new();
    m.next_file = 5;
    m.last_seq = 6;
    m.log_number = 4;
    m.segments = vec![SegmentEntry {
        family: 1,
        number: 3,
        keys: 1,
        records: 1,
        min_seq: 6,
        max_seq: 6,
        file_bytes: 500,
        model: 0,
    }];
    m.families.push(FamilyEntry {
        id: 1,
        name: "idx".into(),
        current_model: 0,
    });
    m.next_family = 2;
    let bytes = m.encode();
    assert_eq!(
        bytes,
        golden("golden-manifest-v3"),
        "docs drifted; encoder writes:\n{}",
        pith_enc::golden::hex(&bytes)
    );
}

/// Databases written before shared models keep opening: a version 1
/// manifest decodes, with no models.
#[test]
fn version_1_manifest_in_docs_still_decodes() {
    let m = Manifest::decode(
        std::path::Path::new("MANIFEST"),
        &golden("golden-manifest-v1"),
    )
    .expect("a version 1 manifest decodes");
    let mut expected = Manifest::new();
    expected.next_file = 3;
    expected.last_seq = 5;
    expected.log_number = 2;
    expected.segments = vec![SegmentEntry {
        family: 0,
        number: 1,
        keys: 4,
        records: 5,
        min_seq: 1,
        max_seq: 5,
        file_bytes: 1000,
        model: 0,
    }];
    assert_eq!(m, expected);
}

/// Two keys, one with an older version kept, one deleted; a plain record
/// store (its bytes are documented in the record-store section). The
/// newest version of the first key expires at the deadline when given.
struct TwoKeys(Option<u64>);

impl crate::segment::writer::GroupSource for TwoKeys {
    fn groups(
        &self,
    ) -> Box<dyn Iterator<Item = crate::Result<crate::segment::writer::Group<'_>>> + '_> {
        use crate::dbformat::{tag, Kind, NO_DEADLINE};
        use crate::segment::writer::{Group, ValueRef};
        let v = |index| ValueRef {
            src: 0,
            index,
            deadline: NO_DEADLINE,
        };
        let newest = ValueRef {
            deadline: self.0.unwrap_or(NO_DEADLINE),
            ..v(0)
        };
        Box::new(
            [
                Group {
                    key: b"apple".to_vec().into(),
                    versions: vec![(tag(3, Kind::Put), newest), (tag(1, Kind::Put), v(1))].into(),
                },
                Group {
                    key: b"banana".to_vec().into(),
                    versions: vec![(tag(2, Kind::Delete), v(2))].into(),
                },
            ]
            .into_iter()
            .map(Ok),
        )
    }

    fn value(&self, v: &crate::segment::writer::ValueRef, out: &mut Vec<u8>) -> crate::Result<()> {
        out.clear();
        out.extend_from_slice([&b"red"[..], b"green", b""][v.index as usize]);
        Ok(())
    }
}

/// The segment the writer makes of `TwoKeys(deadline)`, checked against
/// the docs' block `name`; it opens and verifies.
fn check_segment(deadline: Option<u64>, name: &str) -> crate::segment::Segment {
    // Through the real writer, on the in-memory file system.
    use crate::env::{Fs, MemFs};
    let fs = MemFs::new();
    let dir = std::path::Path::new("/golden");
    fs.create_dir_all(dir).expect("mkdir");
    let zip = pith_zip::Options {
        codec: pith_zip::CodecChoice::Force(pith_zip::Codec::Plain),
        ..pith_zip::Options::default()
    };
    let coding = crate::segment::writer::ValueCoding {
        zip: &zip,
        model: None,
        threads: 1,
    };
    let written =
        crate::segment::writer::write_segment(&fs, dir, 1, &TwoKeys(deadline), coding, 10)
            .expect("write");
    assert!(written.is_some());
    let bytes = fs.read(&dir.join("000001.seg")).expect("read");
    assert_eq!(
        bytes,
        golden(name),
        "docs drifted; the writer writes:\n{}",
        pith_enc::golden::hex(&bytes)
    );
    let seg = crate::segment::Segment::from_bytes(
        crate::env::FileBytes::heap(bytes),
        std::path::Path::new("golden.seg"),
        1,
        &|_| None,
        true,
    )
    .expect("the documented bytes open");
    seg.verify().expect("verify");
    assert_eq!((seg.keys(), seg.records()), (2, 3));
    seg
}

#[test]
fn segment_matches_docs() {
    let seg = check_segment(None, "golden-segment-v1");
    assert_eq!(seg.deadline(0), crate::dbformat::NO_DEADLINE);
}

/// The file ranges read-ahead works from are the store's checksum groups
/// in the file: the first starts the store section (its pool comes
/// first), each record's is its group's (the same as the record before,
/// or starting where that one ends), and the last is inside the section.
#[test]
fn stored_spans_are_the_groups_of_the_store_section_in_order() {
    let seg = check_segment(None, "golden-segment-v1");
    let section = seg.store_section();
    let spans: Vec<_> = (0..seg.records()).map(|r| seg.stored_span(r)).collect();
    assert_eq!(spans[0].start, section.start, "{spans:?} in {section:?}");
    for pair in spans.windows(2) {
        assert!(
            pair[0] == pair[1] || pair[0].end == pair[1].start,
            "{spans:?}"
        );
    }
    let last = spans.last().expect("records");
    assert!(
        last.start < last.end && last.end <= section.end,
        "{spans:?} in {section:?}"
    );
}

#[test]
fn segment_with_a_deadline_matches_docs() {
    let seg = check_segment(Some(1_767_225_600_000), "golden-segment-v2");
    assert_eq!(seg.deadline(0), 1_767_225_600_000);
    assert_eq!(seg.deadline(1), crate::dbformat::NO_DEADLINE);
    assert_eq!(seg.deadline(2), crate::dbformat::NO_DEADLINE);
}

/// Segments written with older trie formats
/// (`crates/pith/testdata/legacy-segments.md`): version 1, whose key ids
/// are a permutation, and version 3, whose labels are found by sampled
/// offsets. They open, verify and answer, so databases written then keep
/// working.
#[test]
fn segments_with_older_tries_still_open_and_read() {
    use crate::dbformat::key_hash as hash;
    use crate::dbformat::{tag_kind, Kind, NO_DEADLINE};
    let doc = include_str!("../testdata/legacy-segments.md");
    for (name, deadline) in [
        ("legacy-segment-v1-trie-v1", NO_DEADLINE),
        ("legacy-segment-v2-trie-v1", 1_767_225_600_000),
        ("legacy-segment-v1-trie-v3", NO_DEADLINE),
        ("legacy-segment-v2-trie-v3", 1_767_225_600_000),
    ] {
        let bytes = pith_enc::golden::block(doc, name);
        let seg = crate::segment::Segment::from_bytes(
            crate::env::FileBytes::heap(bytes),
            std::path::Path::new(name),
            1,
            &|_| None,
            true,
        )
        .expect("a segment with an older trie opens");
        seg.verify().expect("verify");
        assert_eq!((seg.keys(), seg.records()), (2, 3));
        assert_eq!(seg.deadline(0), deadline);
        let get = |key: &[u8], snap: u64| {
            let mut value = Vec::new();
            let found = seg
                .get(key, hash(key), snap, 0, Some(&mut value))
                .expect("get");
            found.map(|(tag, _)| (tag_kind(tag), value))
        };
        assert_eq!(get(b"apple", u64::MAX), Some((Kind::Put, b"red".to_vec())));
        assert_eq!(get(b"apple", 2), Some((Kind::Put, b"green".to_vec())));
        assert_eq!(get(b"banana", u64::MAX), Some((Kind::Delete, Vec::new())));
        assert_eq!(get(b"cherry", u64::MAX), None);
        assert_eq!(get(b"appl", u64::MAX), None);
    }
}
