//! Shared models: model files, stores built with a model, records copied
//! between stores without decoding, and corruption of each.

use std::sync::Arc;

use proptest::prelude::*;

use crate::tests::{aligned, read_from_copy, view};
use crate::{Codec, Error, Model, Options, SharedBuilder, Store, MODEL_HEADER_BYTES};

fn packages(n: usize, salt: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            format!(
                "Package: lib{i}-{salt}\nVersion: {}.{}-{salt}\nMaintainer: Team {}\nDepends: libc6 (>= 2.{})\nDescription: library number {i}\n",
                i % 9, i % 13, i % 5, 30 + i % 7
            )
            .into_bytes()
        })
        .collect()
}

fn model(id: u64, sample: &[Vec<u8>]) -> (Arc<Model>, Vec<u8>) {
    let (m, file) = Model::train(id, sample, u64::MAX, &Options::default()).expect("train");
    (Arc::new(m), file)
}

fn build(model: &Arc<Model>, records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut b = SharedBuilder::new(model.clone(), &Options::default(), &mut out);
    for r in records {
        b.push(r).expect("push");
    }
    let stats = b.finish().expect("finish");
    assert_eq!(stats.codec, Codec::Shared);
    assert_eq!(stats.store_bytes as usize, out.len());
    out
}

fn check(store: &Store<'_>, bytes: &[u8], records: &[Vec<u8>]) {
    assert_eq!(store.len(), records.len() as u64);
    let mut out = vec![7];
    for (i, r) in records.iter().enumerate() {
        store.get(i as u64, &mut out).expect("get");
        assert_eq!(&out, r, "record {i}");
        assert_eq!(&read_from_copy(store, bytes, i as u64), r, "record {i}");
    }
    store.verify().expect("verify");
}

#[test]
fn a_store_reads_back_with_its_model_and_only_with_it() {
    let (m, _) = model(5, &packages(400, 0));
    let records = packages(300, 1);
    let bytes = build(&m, &records);
    let raw: usize = records.iter().map(Vec::len).sum();
    assert!(bytes.len() * 3 < raw, "{} bytes for {raw}", bytes.len());
    let words = aligned(&bytes);
    let b = view(&words, bytes.len());
    assert_eq!(
        Store::required_model(b).expect("footer"),
        Some(m.reference())
    );
    let store = Store::open_with_model(b, Some(m.clone())).expect("open");
    assert_eq!(store.codec(), Codec::Shared);
    check(&store, &bytes, &records);
    assert!(
        matches!(Store::open(b), Err(Error::ModelRequired { model }) if model == m.reference())
    );
    let (other, _) = model(6, &packages(50, 2));
    assert!(matches!(
        Store::open_with_model(b, Some(other)),
        Err(Error::ModelMismatch { .. })
    ));
}

#[test]
fn model_files_round_trip_and_every_flip_or_cut_is_refused() {
    let (m, file) = model(9, &packages(200, 3));
    let opened = Arc::new(Model::open(&file).expect("open"));
    assert_eq!(opened.reference(), m.reference());
    assert_eq!(opened.ratio(), m.ratio());
    assert_eq!(opened.trained_from(), m.trained_from());
    // A store built by the trained model reads with the reopened one, and
    // the reopened one encodes the same bytes.
    let records = packages(100, 4);
    let bytes = build(&m, &records);
    assert_eq!(build(&opened, &records), bytes);
    let words = aligned(&bytes);
    check(
        &Store::open_with_model(view(&words, bytes.len()), Some(opened)).expect("open"),
        &bytes,
        &records,
    );
    for i in (0..MODEL_HEADER_BYTES).chain((MODEL_HEADER_BYTES..file.len()).step_by(97)) {
        let mut f = file.clone();
        f[i] ^= 0x20;
        assert!(Model::open(&f).is_err(), "flip at {i} not detected");
    }
    for cut in [
        0,
        8,
        MODEL_HEADER_BYTES - 1,
        MODEL_HEADER_BYTES,
        file.len() - 1,
    ] {
        assert!(
            Model::open(&file[..cut]).is_err(),
            "cut at {cut} not detected"
        );
    }
}

#[test]
fn records_copied_without_decoding_read_back_and_keep_their_checksums() {
    let (m, _) = model(1, &packages(300, 0));
    let records = packages(200, 5);
    let a = build(&m, &records);
    let wa = aligned(&a);
    let sa = Store::open_with_model(view(&wa, a.len()), Some(m.clone())).expect("open a");
    // Every other record copied, the rest pushed decoded: one store.
    let mut out = Vec::new();
    let mut b = SharedBuilder::new(m.clone(), &Options::default(), &mut out);
    for (i, r) in records.iter().enumerate() {
        if i % 2 == 0 {
            let e = sa.encoded(i as u64).expect("encoded").expect("shared");
            assert_eq!(e.raw_len(), r.len() as u64);
            b.push_encoded(&e).expect("copy");
        } else {
            b.push(r).expect("push");
        }
    }
    assert_eq!(b.copied(), 100);
    b.finish().expect("finish");
    assert_eq!(out, a, "copies are byte-identical to encoding again");
    // A record of another model is refused, not copied.
    let (other, _) = model(2, &packages(50, 6));
    let mut sink = Vec::new();
    let mut c = SharedBuilder::new(other, &Options::default(), &mut sink);
    let e = sa.encoded(0).expect("encoded").expect("shared");
    assert!(matches!(
        c.push_encoded(&e),
        Err(Error::ModelMismatch { .. })
    ));
    assert_eq!(c.records(), 0);
}

#[test]
fn encoding_on_several_threads_writes_the_same_bytes() {
    let (m, _) = model(1, &packages(300, 0));
    let records = packages(3000, 8);
    let one = build(&m, &records);
    for threads in [1, 2, 3, 8] {
        let mut out = Vec::new();
        let mut b = SharedBuilder::new(m.clone(), &Options::default(), &mut out);
        // Mixed: a batch, one record alone, another batch, an empty batch.
        b.push_many(&records[..1700], threads).expect("batch");
        b.push(&records[1700]).expect("one");
        b.push_many(&records[1701..], threads).expect("batch");
        b.push_many(&[] as &[Vec<u8>], threads).expect("empty");
        b.finish().expect("finish");
        assert_eq!(out, one, "{threads} threads");
    }
}

#[test]
fn incompressible_records_cost_their_size_plus_a_few_bytes() {
    let (m, _) = model(3, &packages(300, 0));
    let noise = crate::tests::noise(0x9E37_79B9_7F4A_7C15, 20, 10_000);
    let bytes = build(&m, &noise);
    let raw: usize = noise.iter().map(Vec::len).sum();
    // Per record: a 2-byte header, a 4-byte checksum, an 8-byte offset at
    // most; per store: the reference, padding and the 80-byte footer.
    assert!(
        bytes.len() <= raw + 14 * noise.len() + 128,
        "{} for {raw}",
        bytes.len()
    );
    let words = aligned(&bytes);
    check(
        &Store::open_with_model(view(&words, bytes.len()), Some(m)).expect("open"),
        &bytes,
        &noise,
    );
}

#[test]
fn a_corrupt_record_is_an_error_naming_it_and_other_groups_still_read() {
    let (m, _) = model(4, &packages(300, 0));
    let records = packages(50, 7);
    let bytes = build(&m, &records);
    let store_words = aligned(&bytes);
    let s = Store::open_with_model(view(&store_words, bytes.len()), Some(m.clone())).expect("open");
    let at = {
        let e = s.encoded(10).expect("encoded").expect("shared");
        e.bytes.as_ptr() as usize - view(&store_words, bytes.len()).as_ptr() as usize
    };
    for delta in [0, 1, 3] {
        let mut bad = bytes.clone();
        bad[at + delta] ^= 0x41;
        let w = aligned(&bad);
        let s = Store::open_with_model(view(&w, bad.len()), Some(m.clone())).expect("open");
        let mut out = Vec::new();
        let e = s.get(10, &mut out).expect_err("corrupt record");
        assert!(e.to_string().contains("record 10"), "{e}");
        assert!(out.is_empty());
        // Its group (the error names it) is unreadable, and nothing else:
        // the records before and after it read, and so copy.
        let group = e.to_string();
        let range = group
            .split("records ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .expect("the error names the group");
        let (first, end) = range.split_once("..").expect("a range");
        let (first, end): (usize, usize) =
            (first.parse().expect("first"), end.parse().expect("end"));
        assert!(first <= 10 && 10 < end && end - first <= 64, "{group}");
        for (id, record) in records.iter().enumerate() {
            let read = s.get(id as u64, &mut out);
            assert_eq!(
                read.is_err(),
                (first..end).contains(&id),
                "record {id}: {read:?}"
            );
            assert_eq!(
                s.encoded(id as u64).is_err(),
                (first..end).contains(&id),
                "record {id}"
            );
            if read.is_ok() {
                assert_eq!(&out, record);
            }
        }
    }
}

#[test]
fn an_empty_sample_trains_a_model_that_still_round_trips() {
    let (m, file) = model(8, &[]);
    Model::open(&file).expect("reopen");
    let records = packages(20, 9);
    let bytes = build(&m, &records);
    let words = aligned(&bytes);
    check(
        &Store::open_with_model(view(&words, bytes.len()), Some(m)).expect("open"),
        &bytes,
        &records,
    );
}

#[test]
fn fuzz_entries_survive_their_seeds() {
    let (_, file) = model(2, &packages(40, 0));
    crate::fuzz::model_open(&file);
    crate::fuzz::model_open(&file[..MODEL_HEADER_BYTES]);
    for data in [
        &b""[..],
        b"\x00",
        b"\xff\xff\xff\xff\xff\x01",
        b"\x0b\x00\x00\x00\x00abc",
    ] {
        crate::fuzz::shared_record(data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_records_round_trip(
        sample in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..40),
        records in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..40),
    ) {
        let (m, _) = model(1, &sample);
        let bytes = build(&m, &records);
        let words = aligned(&bytes);
        let store = Store::open_with_model(view(&words, bytes.len()), Some(m)).unwrap();
        check(&store, &bytes, &records);
    }
}

#[test]
fn both_efforts_encode_with_one_model_and_share_its_index() {
    let (m, _) = model(1, &packages(400, 1));
    let records = packages(300, 2);
    let fast = Options::default();
    let thorough = Options {
        effort: crate::Effort::Thorough,
        ..Options::default()
    };
    // A fast encoder's index has no chains; a thorough one asked for
    // meanwhile gets its own, and both stores decode.
    let _hold = m.hold_index(&fast);
    let mut sizes = Vec::new();
    for options in [&fast, &thorough] {
        let mut out = Vec::new();
        let mut b = SharedBuilder::new(m.clone(), options, &mut out);
        for r in &records {
            b.push(r).expect("push");
        }
        b.finish().expect("finish");
        let words = aligned(&out);
        let store = Store::open_with_model(view(&words, out.len()), Some(m.clone())).unwrap();
        check(&store, &out, &records);
        sizes.push(out.len());
    }
    let raw: usize = records.iter().map(Vec::len).sum();
    assert!(
        sizes[0] < raw / 3 && sizes[1] < raw / 3,
        "{sizes:?} of {raw}"
    );
}

/// Records zstd cannot compress (random bytes) get a model without a
/// dictionary, trained on a probe's worth, whose ratio says it saves
/// nothing; compressible ones get a dictionary. Both round-trip.
#[test]
fn incompressible_samples_get_no_dictionary() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let random: Vec<Vec<u8>> = (0..40_000)
        .map(|_| (0..6).flat_map(|_| noise().to_le_bytes()).collect())
        .collect();
    let (m, _) = model(1, &random);
    assert_eq!(m.dict_bytes(), 0);
    assert!(m.ratio() < 1.05, "ratio {}", m.ratio());
    let bytes = build(&m, &random[..500]);
    let words = aligned(&bytes);
    let store = Store::open_with_model(view(&words, bytes.len()), Some(m.clone())).expect("open");
    check(&store, &bytes, &random[..500]);
    let text = packages(20_000, 3);
    let (m, _) = model(2, &text);
    assert!(m.dict_bytes() > 0);
    assert!(m.ratio() > 2.0, "ratio {}", m.ratio());
}

#[test]
fn chunks_tile_the_records_in_order() {
    let records: Vec<Vec<u8>> = [5usize, 1, 30, 0, 7, 7, 7, 2, 40, 3]
        .iter()
        .map(|&n| vec![b'x'; n])
        .collect();
    for chunk_bytes in [1, 8, 10, 25, 1000] {
        let chunks = super::shared::chunk_bounds(&records, chunk_bytes);
        let mut at = 0;
        for (k, c) in chunks.iter().enumerate() {
            assert_eq!(c.start, at, "contiguous at {chunk_bytes}");
            assert!(c.end > c.start, "no empty chunk at {chunk_bytes}");
            let bytes: usize = records[c.clone()].iter().map(Vec::len).sum();
            if k + 1 < chunks.len() {
                assert!(bytes >= chunk_bytes, "only the last chunk is short");
            }
            at = c.end;
        }
        assert_eq!(at, records.len(), "every record at {chunk_bytes}");
    }
    assert!(super::shared::chunk_bounds(&[] as &[Vec<u8>], 8).is_empty());
}

/// Records no checksum vouches for (a store built without checksums) are
/// not handed out to be copied as they are: a copy would give them a new
/// checksum. They are decoded instead, which checks what the decoder can.
#[test]
fn records_without_checksums_are_not_copied_as_stored() {
    let (m, _) = model(5, &packages(200, 1));
    let records = packages(20, 2);
    let mut out = Vec::new();
    let options = Options {
        record_checksums: false,
        ..Options::default()
    };
    let mut b = SharedBuilder::new(m.clone(), &options, &mut out);
    for r in &records {
        b.push(r).expect("push");
    }
    b.finish().expect("finish");
    let words = aligned(&out);
    let s = Store::open_with_model(view(&words, out.len()), Some(m.clone())).expect("open");
    let mut got = Vec::new();
    for (id, r) in records.iter().enumerate() {
        assert!(s.encoded(id as u64).expect("encoded").is_none());
        s.get(id as u64, &mut got).expect("get");
        assert_eq!(&got, r);
    }
    // With checksums, the same records are handed out.
    let bytes = build(&m, &records);
    let words = aligned(&bytes);
    let s = Store::open_with_model(view(&words, bytes.len()), Some(m)).expect("open");
    assert!(s.encoded(0).expect("encoded").is_some());
}

/// The matcher's index an encoder builds over a model holds no copy of
/// the dictionary: it shares the decoder's, for a model just trained and
/// for one opened from its file, and the model's memory counts it once.
#[test]
fn the_matcher_index_shares_the_models_dictionary() {
    let (trained, file) = model(9, &packages(400, 0));
    let opened = Arc::new(Model::open(&file).expect("open"));
    for m in [&trained, &opened] {
        assert!(m.dict_bytes() > 0);
        let alone = m.heap_bytes();
        let hold = m.hold_index(&Options::default());
        assert!(
            m.shares_dictionary_with_index(),
            "the index copied the dictionary"
        );
        let with_index = m.heap_bytes();
        // The index adds its tables (for this small dictionary, a few
        // hundred KiB); only the pointer check above tells a copy apart.
        assert!(with_index > alone);
        assert!(with_index - alone <= 3 << 20, "{alone} -> {with_index}");
        drop(hold);
        assert_eq!(m.heap_bytes(), alone);
    }
}

/// `file` with its body changed by `f` and both checksums made to match.
fn with_body(file: &[u8], f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut body = file[MODEL_HEADER_BYTES..].to_vec();
    f(&mut body);
    let mut out = file[..MODEL_HEADER_BYTES].to_vec();
    out[40..48].copy_from_slice(&(body.len() as u64).to_le_bytes());
    out[48..52].copy_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    let crc = crc32c::crc32c(&out[..52]);
    out[52..56].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Records that repeat phrases get a model naming their positions by
/// rank (a version 2 section, "PZG2", whose records read back through a
/// reopened model); a model without hot positions is written as version
/// 1 ("PZG1", what builds before ranks read); and a hot table that breaks
/// its limits is refused at open even when every checksum matches.
/// Records of phrases in an order no prediction follows, with noise
/// between them: matches name dictionary positions outright.
fn phrases(n: usize, salt: usize) -> Vec<Vec<u8>> {
    let words = [
        "Architecture: amd64",
        "Priority: optional",
        "Section: libs",
        "Maintainer: Debian Games Team",
        "Depends: libc6 (>= 2.34)",
        "Multi-Arch: same",
        "Tag: role::program",
        "Section: games",
        "Priority: extra",
        "Architecture: all",
        "Depends: python3:any",
        "Tag: devel::library",
        "Maintainer: Debian Python Team",
    ];
    (0..n)
        .map(|i| {
            let mut r = String::new();
            for k in 0..6 {
                let h = (i * 7919 + k * 104_729 + salt * 31) % 1_000_003;
                r.push_str(words[h % words.len()]);
                r.push_str(&format!("\n{:08x}\n", h * 2_654_435_761 % (1 << 32)));
            }
            r.into_bytes()
        })
        .collect()
}

#[test]
fn hot_tables_are_written_read_and_checked() {
    let (m, file) = model(9, &phrases(24_000, 3));
    assert_eq!(&file[MODEL_HEADER_BYTES..][..4], b"PZG2");
    let records = phrases(300, 5);
    let bytes = build(&m, &records);
    let words = aligned(&bytes);
    let reopened = Arc::new(Model::open(&file).expect("open"));
    // An encoder over the reopened model ranks as the trained one did.
    assert_eq!(build(&reopened, &records), bytes);
    check(
        &Store::open_with_model(view(&words, bytes.len()), Some(reopened)).expect("open"),
        &bytes,
        &records,
    );
    let (_, plain) = model(8, &[]);
    assert_eq!(&plain[MODEL_HEADER_BYTES..][..4], b"PZG1");
    // The file's version says which: 2 with a hot table, 1 without.
    assert_eq!((file[8], plain[8]), (2, 1));
    let mut v1 = file.clone();
    v1[8] = 1;
    let crc = crc32c::crc32c(&v1[..52]);
    v1[52..56].copy_from_slice(&crc.to_le_bytes());
    let e = Model::open(&v1).expect_err("refused").to_string();
    assert!(e.contains("must hold a \"PZG1\" section"), "{e}");

    // The hot table follows the fourteen tables of code lengths.
    let body = &file[MODEL_HEADER_BYTES..];
    let mut at = 12;
    for _ in 0..14 {
        at += crate::huffman::read_lengths(&body[at..])
            .expect("lengths")
            .1;
    }
    let count = u32::from_le_bytes(body[at..at + 4].try_into().expect("4 bytes"));
    assert!(count > 0, "hot positions");
    assert!(Model::open(&with_body(&file, |_| {})).is_ok());
    let too_many = with_body(&file, |b| {
        b[at..at + 4].copy_from_slice(&(1u32 << 20).to_le_bytes());
    });
    let e = Model::open(&too_many).expect_err("refused").to_string();
    assert!(e.contains("hot positions, more than"), "{e}");
    // One entry more than written eats into the dictionary's frame.
    let one_more = with_body(&file, |b| {
        b[at..at + 4].copy_from_slice(&(count + 1).to_le_bytes());
    });
    assert!(Model::open(&one_more).is_err());
}

#[test]
fn a_small_sample_still_trains_its_codes() {
    // 0.3 MB of sample: its held-out half is less than the ratio's 1 MiB
    // trial, which once took all of it and left the codes trained on
    // nothing (every symbol escaped).
    let small = phrases(2_000, 3);
    assert!(small.iter().map(Vec::len).sum::<usize>() < 1 << 20);
    let (small, _) = model(1, &small);
    let (large, _) = model(2, &phrases(24_000, 3));
    let records = phrases(300, 5);
    let (a, b) = (build(&small, &records).len(), build(&large, &records).len());
    // The codes of the hex digits and the words are what both learn; the
    // dictionaries hold the same thirteen phrases.
    assert!(
        a * 100 <= b * 105,
        "small-sample model {a} bytes, large {b}"
    );
    assert!(
        small.ratio() >= 0.8 * large.ratio(),
        "{} against {}",
        small.ratio(),
        large.ratio()
    );
}

#[test]
fn a_read_from_bytes_that_are_not_the_records_range_is_an_error() {
    let (m, _) = model(6, &packages(300, 0));
    let records = packages(80, 3);
    let bytes = build(&m, &records);
    let words = aligned(&bytes);
    let s = Store::open_with_model(view(&words, bytes.len()), Some(m.clone())).expect("open");
    let mut out = Vec::new();
    for id in [0, 17, 79] {
        let range = s.stored_range(id);
        let (lo, hi) = (range.start as usize, range.end as usize);
        assert!(hi - lo > 2, "record {id}: {range:?}");
        // A record of another checksum group (neighbours may share one).
        let other = s.stored_range((id + 40) % 80);
        assert_ne!(other, range);
        let wrong: [&[u8]; 5] = [
            &bytes[lo..hi - 1],
            &bytes[lo + 1..hi],
            &bytes[lo + 1..hi + 1],
            &bytes[other.start as usize..other.end as usize],
            &[],
        ];
        for (k, stored) in wrong.into_iter().enumerate() {
            out.clear();
            out.push(1);
            let e = s.get_from(id, stored, &mut out).expect_err("wrong bytes");
            assert!(matches!(e, Error::Corrupt { .. }), "case {k}: {e}");
            assert!(
                e.to_string().contains(&format!("record {id}")),
                "case {k}: {e}"
            );
            assert!(out.is_empty() || out == [1], "case {k}: {out:?}");
        }
        s.get_from(id, &bytes[lo..hi], &mut out).expect("its range");
        assert_eq!(out, records[id as usize]);
    }
    assert!(matches!(
        s.get_from(80, &[], &mut out),
        Err(Error::IdOutOfRange { .. })
    ));
}
