//! Round trips for every codec, edge cases, and corruption of every region.

use proptest::prelude::*;

use crate::{build_to_vec, Codec, CodecChoice, Effort, Error, Options, Store};

pub(crate) use crate::fuzz::aligned;

/// The first `len` bytes of `words`.
pub(crate) fn view(words: &[u64], len: usize) -> &[u8] {
    &bytemuck::cast_slice::<u64, u8>(words)[..len]
}

fn options(codec: CodecChoice) -> Options {
    Options {
        codec,
        zstd_level: 3,
        ..Options::default()
    }
}

fn roundtrip(records: &[Vec<u8>], codec: CodecChoice) -> Codec {
    roundtrip_with(records, &options(codec))
}

fn roundtrip_with(records: &[Vec<u8>], options: &Options) -> Codec {
    let (bytes, stats) = build_to_vec(records, options).unwrap();
    assert_eq!(stats.store_bytes as usize, bytes.len());
    let words = aligned(&bytes);
    let store = Store::open(view(&words, bytes.len())).unwrap();
    assert_eq!(store.len(), records.len() as u64);
    let mut out = vec![9, 9, 9];
    for (i, r) in records.iter().enumerate() {
        store.get(i as u64, &mut out).unwrap();
        assert_eq!(&out, r, "record {i}");
        assert_eq!(
            &read_from_copy(&store, bytes.as_slice(), i as u64),
            r,
            "record {i}"
        );
    }
    assert!(matches!(
        store.get(records.len() as u64, &mut out),
        Err(Error::IdOutOfRange { .. })
    ));
    let mut seen = 0;
    store
        .scan(|id, r| {
            assert_eq!(r, records[id as usize].as_slice());
            seen += 1;
            true
        })
        .unwrap();
    assert_eq!(seen, records.len());
    store.verify().unwrap();
    store.codec()
}

/// Record `id` read as a caller reading the file would: its stored range
/// copied out of `bytes` (the store's), then [`Store::get_from`].
pub(crate) fn read_from_copy(store: &Store<'_>, bytes: &[u8], id: u64) -> Vec<u8> {
    let range = store.stored_range(id);
    let copy = bytes[range.start as usize..range.end as usize].to_vec();
    let mut out = vec![5];
    store.get_from(id, &copy, &mut out).expect("get_from");
    out
}

const ALL: [CodecChoice; 4] = [
    CodecChoice::Auto,
    CodecChoice::Force(Codec::Plain),
    CodecChoice::Force(Codec::ZstdDict),
    CodecChoice::Force(Codec::Global),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_codec_roundtrips(records in proptest::collection::vec(
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..300),
            "(Package: [a-z]{1,8}\nVersion: [0-9]\\.[0-9]\n){1,5}".prop_map(String::into_bytes),
        ], 0..120)) {
        for codec in ALL {
            roundtrip(&records, codec);
        }
        // The default effort is fast; the thorough parse must agree.
        let thorough = Options {
            effort: Effort::Thorough,
            ..options(CodecChoice::Force(Codec::Global))
        };
        roundtrip_with(&records, &thorough);
    }
}

fn text_records(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("Package: lib{}-dev\nVersion: {}.{}-{}\nDepends: libc6 (>= 2.{}), zlib1g\nDescription: development files for lib{}\n", i % 97, i % 7, i % 13, i % 3, i % 40, i % 97).into_bytes())
        .collect()
}

#[test]
fn edge_cases() {
    for codec in ALL {
        roundtrip(&[], codec);
        roundtrip(&[vec![]], codec);
        roundtrip(&[vec![], vec![], vec![1]], codec);
        roundtrip(&vec![b"same record".to_vec(); 500], codec);
    }
}

/// A store of empty records (an index's entries) holds no checksums: a
/// crc32c of nothing per record would be the whole store.
#[test]
fn empty_records_cost_no_checksums() {
    let records: Vec<Vec<u8>> = vec![Vec::new(); 10_000];
    let (bytes, _) = build_to_vec(&records, &options(CodecChoice::Auto)).expect("build");
    // The offsets' bases (a word per 64 records) and the footer: 1.4 KB
    // (with a checksum per record: 41 KB).
    assert!(
        bytes.len() < 2048,
        "{} bytes for 10,000 empty records",
        bytes.len()
    );
    let store = Store::open(&bytes).expect("open");
    assert_eq!(store.len(), 10_000);
    let mut out = vec![1u8];
    store.get(9_999, &mut out).expect("get");
    assert!(out.is_empty());
    store.verify().expect("verify");
}

#[test]
fn auto_compresses_text_and_keeps_noise_plain() {
    assert_ne!(
        roundtrip(&text_records(3000), CodecChoice::Auto),
        Codec::Plain
    );
    let noise = noise(0x2545_F491_4F6C_DD1D, 500, 200);
    assert_eq!(roundtrip(&noise, CodecChoice::Auto), Codec::Plain);
}

/// `records` records of `len` pseudo-random bytes (xorshift from `seed`):
/// data no codec shrinks.
pub(crate) fn noise(seed: u64, records: usize, len: usize) -> Vec<Vec<u8>> {
    let mut x = seed;
    (0..records)
        .map(|_| {
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        })
        .collect()
}

#[test]
fn text_compresses() {
    let records = text_records(5000);
    let (bytes, stats) = build_to_vec(&records, &options(CodecChoice::Auto)).unwrap();
    assert!(
        bytes.len() * 3 < stats.raw_bytes as usize,
        "{} of {}",
        bytes.len(),
        stats.raw_bytes
    );
}

#[test]
fn huge_record() {
    let big: Vec<u8> = (0..70u32 << 20)
        .map(|i| (i % 251) as u8 ^ (i >> 20) as u8)
        .collect();
    let records = vec![b"small".to_vec(), big, vec![]];
    for codec in [
        CodecChoice::Force(Codec::Plain),
        CodecChoice::Force(Codec::ZstdDict),
        CodecChoice::Force(Codec::Global),
    ] {
        let (bytes, _) = build_to_vec(
            &records,
            &Options {
                zstd_level: 1,
                ..options(codec)
            },
        )
        .unwrap();
        let words = aligned(&bytes);
        let store = Store::open(view(&words, bytes.len())).unwrap();
        let mut out = Vec::new();
        store.get(1, &mut out).unwrap();
        assert!(out == records[1]);
    }
}

#[test]
fn changing_source_is_an_error() {
    let mut calls = 0;
    let err = crate::build(
        || {
            calls += 1;
            (0..calls).map(|i| vec![i as u8])
        },
        &Options::default(),
        Vec::new(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::InputChanged));
}

/// Every flipped byte is caught by open, by get (record crc) or by verify;
/// nothing panics and no get returns wrong bytes.
#[test]
fn every_byte_flip_is_caught() {
    for codec in [
        CodecChoice::Force(Codec::Plain),
        CodecChoice::Force(Codec::ZstdDict),
        CodecChoice::Force(Codec::Global),
    ] {
        let records = text_records(300);
        let (good, _) = build_to_vec(&records, &options(codec)).unwrap();
        for i in (0..good.len()).step_by(3) {
            let mut bytes = good.clone();
            bytes[i] ^= 0x04;
            let words = aligned(&bytes);
            let Ok(store) = Store::open(view(&words, bytes.len())) else {
                continue;
            };
            let mut out = Vec::new();
            let mut any_error = false;
            for (id, r) in records.iter().enumerate() {
                match store.get(id as u64, &mut out) {
                    Ok(()) => assert_eq!(
                        &out, r,
                        "byte {i} flipped: record {id} decoded wrong without an error"
                    ),
                    Err(_) => any_error = true,
                }
            }
            assert!(
                any_error || store.verify().is_err(),
                "byte {i} flip not detected"
            );
        }
    }
}

#[test]
fn truncation_and_misalignment() {
    let (good, _) = build_to_vec(&text_records(100), &options(CodecChoice::Auto)).unwrap();
    for len in [0, 10, 79, 80, good.len() / 2, good.len() - 1] {
        let words = aligned(&good[..len]);
        assert!(Store::open(view(&words, len)).is_err(), "len {len}");
    }
    let words = aligned(&[&[0u8][..], &good].concat());
    assert!(matches!(
        Store::open(&view(&words, good.len() + 1)[1..]),
        Err(Error::Misaligned)
    ));
}

#[test]
fn fuzz_entry_point_smoke() {
    let (good, _) = build_to_vec(&text_records(50), &options(CodecChoice::Auto)).unwrap();
    crate::fuzz::open_and_get(&good);
    crate::fuzz::open_and_get(&[]);
    let mut state = 3u64;
    for len in (0..400).step_by(7) {
        let data: Vec<u8> = (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 33) as u8
            })
            .collect();
        crate::fuzz::open_and_get(&data);
    }
}

#[test]
fn store_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store<'static>>();
}

/// A footer whose size fields are huge (with its checksum fixed) must give
/// an error, not an allocation abort.
#[test]
fn huge_claimed_sizes_are_errors() {
    let (good, _) = build_to_vec(
        &text_records(50),
        &options(CodecChoice::Force(Codec::ZstdDict)),
    )
    .unwrap();
    let f = good.len() - 80;
    for (max_record, raw) in [(u64::MAX, u64::MAX), (u64::MAX, 1), (1 << 50, 1 << 50)] {
        let mut bytes = good.clone();
        bytes[f + 48..f + 56].copy_from_slice(&max_record.to_le_bytes());
        bytes[f + 56..f + 64].copy_from_slice(&raw.to_le_bytes());
        let crc = crc32c::crc32c(&bytes[f..f + 76]);
        bytes[f + 76..f + 80].copy_from_slice(&crc.to_le_bytes());
        let words = aligned(&bytes);
        if let Ok(store) = Store::open(view(&words, bytes.len())) {
            let mut out = Vec::new();
            // Frames claim their true sizes, which are fine; every record must
            // still decode correctly or fail cleanly.
            for id in 0..store.len() {
                let _ = store.get(id, &mut out);
            }
        }
    }
}

/// Rewrites the offsets section of a plain store without record checksums
/// to `words` (in the layout of store `version`), fixing the metadata and
/// footer checksums, and opens it.
fn with_offsets(
    version: u32,
    pool: &[u8],
    offsets: &[u64],
    records: u64,
    max_record: u64,
) -> Result<(), Error> {
    let mut bytes = pool.to_vec();
    bytes.resize(pool.len().next_multiple_of(8), 0);
    let pool_crc = crc32c::crc32c(&bytes);
    let meta: &[u8] = bytemuck::cast_slice(offsets);
    bytes.extend_from_slice(meta);
    let footer = crate::format::Footer {
        version,
        codec: Codec::Plain,
        records,
        pool_len: pool.len() as u64,
        dict_len: 0,
        offsets_len: meta.len() as u64,
        max_record,
        raw_bytes: pool.len() as u64,
        pool_crc,
        meta_crc: crc32c::crc32c(meta),
        flags: 0,
    };
    bytes.extend_from_slice(&footer.encode());
    let words = aligned(&bytes);
    let store = Store::open(view(&words, bytes.len()))?;
    let mut out = Vec::new();
    for id in 0..store.len() {
        store.get(id, &mut out)?;
    }
    store.verify()
}

/// Offsets that wrap around u64 or point past the pool are rejected at
/// open (they used to pass in release builds and make `get` panic).
#[test]
fn wrapping_offsets_are_rejected() {
    let pool = b"0123456789abcdef";
    // Version 2: count, width, bases[1], deltas (64-bit wide) + 1 spare
    // word.
    let good = [4, 64, 0, 0, 5, 10, 16, 0];
    with_offsets(2, pool, &good, 3, 6).unwrap();
    for bad in [
        [4, 64, 0, 0, u64::MAX - 1, 10, 16, 0],
        [4, 64, 0, 0, 17, 10, 16, 0],
        [4, 64, 0, 0, 5, 4, 16, 0],
    ] {
        let err = with_offsets(2, pool, &bad, 3, 6).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{bad:?}: {err}");
    }
    // Version 3: count, shape, stride, bases[1], deltas + 1 spare word;
    // a stride that wraps around u64 or overshoots the pool.
    let good = [4, 64, 2, 0, 0, 3, 6, 10, 0];
    with_offsets(3, pool, &good, 3, 6).unwrap();
    let affine = [5, 1 << 8, 4, 0, 0];
    with_offsets(3, pool, &affine, 4, 4).unwrap();
    for bad in [
        vec![4, 64, u64::MAX / 2, 0, 0, 3, 6, 10, 0],
        vec![4, 64, 7, 0, 0, 3, 6, 10, 0],
        vec![5, 1 << 8, u64::MAX, 0, 0],
        vec![5, 1 << 8, 5, 0, 0],
    ] {
        let err = with_offsets(3, pool, &bad, 4, 4).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{bad:?}: {err}");
    }
}

/// Section lengths near u64::MAX give an error, not an overflow.
#[test]
fn overflowing_section_sizes_are_rejected() {
    let (good, _) = build_to_vec(&text_records(20), &options(CodecChoice::Auto)).unwrap();
    let f = good.len() - 80;
    for (at, v) in [(24, u64::MAX - 3), (32, u64::MAX - 3), (40, u64::MAX - 7)] {
        let mut bytes = good.clone();
        bytes[f + at..f + at + 8].copy_from_slice(&v.to_le_bytes());
        let crc = crc32c::crc32c(&bytes[f..f + 76]);
        bytes[f + 76..f + 80].copy_from_slice(&crc.to_le_bytes());
        let words = aligned(&bytes);
        assert!(
            Store::open(view(&words, bytes.len())).is_err(),
            "field {at}"
        );
    }
}

/// A zstd dictionary that starts with zstd's dictionary magic but is
/// malformed is a typed error at open (zstd would otherwise abort).
#[test]
fn malformed_zstd_dictionary_is_an_error() {
    let records = text_records(2000);
    let (good, stats) =
        build_to_vec(&records, &options(CodecChoice::Force(Codec::ZstdDict))).unwrap();
    assert!(stats.dict_bytes > 64);
    let f = good.len() - 80;
    let pool_len = u64::from_le_bytes(good[f + 24..f + 32].try_into().unwrap()) as usize;
    let dict_at = pool_len.next_multiple_of(8);
    let mut bytes = good.clone();
    // Keep the magic, wreck the entropy tables that follow it.
    for b in &mut bytes[dict_at + 8..dict_at + 64] {
        *b = 0xFF;
    }
    let meta_crc = crc32c::crc32c(&bytes[dict_at..f]);
    bytes[f + 68..f + 72].copy_from_slice(&meta_crc.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[f..f + 76]);
    bytes[f + 76..f + 80].copy_from_slice(&crc.to_le_bytes());
    let words = aligned(&bytes);
    if let Ok(store) = Store::open(view(&words, bytes.len())) {
        // zstd may accept the bytes as a raw-content dictionary; then every
        // record must fail its checksum or decode right.
        let mut out = Vec::new();
        for (id, r) in records.iter().enumerate() {
            if store.get(id as u64, &mut out).is_ok() {
                assert_eq!(&out, r);
            }
        }
    }
}

#[test]
fn global_dictionary_grows_with_the_input() {
    // 20,000 records of ~100 bytes: 2 MB, so a divisor of 16 allows
    // ~125 KiB of dictionary where no divisor allows the whole sample half.
    let records = text_records(20_000);
    let model = |divisor| {
        let o = Options {
            codec: CodecChoice::Force(Codec::Global),
            global_dict_divisor: divisor,
            ..Options::default()
        };
        let (bytes, stats) = build_to_vec(&records, &o).unwrap();
        let words = aligned(&bytes);
        let store = Store::open(view(&words, bytes.len())).unwrap();
        let mut out = Vec::new();
        store.get(12_345, &mut out).unwrap();
        assert_eq!(out, records[12_345]);
        (stats.raw_bytes, stats.dict_bytes)
    };
    let (raw, capped) = model(16);
    let (_, uncapped) = model(0);
    assert!(capped < uncapped, "{capped} vs {uncapped}");
    // The model section stores the dictionary compressed; its raw size is
    // at most raw/16 plus the copied hot bytes (a quarter more).
    assert!(capped <= raw / 16 * 5 / 4 + 4096, "{capped} for {raw}");
}

#[test]
fn zstd_dictionary_trains_on_small_and_large_samples() {
    for n in [200, 20_000] {
        let records = text_records(n);
        let material: Vec<&[u8]> = records.iter().map(|r| r.as_slice()).collect();
        let dict = crate::builder::train_fastcover(&material, 16 << 10).unwrap();
        assert!(!dict.is_empty() && dict.len() <= 16 << 10, "{}", dict.len());
    }
    // Too little material: no dictionary, no error.
    assert!(crate::builder::train_fastcover(&[b"ab".as_slice()], 1024).is_none());
}

/// A reader may keep the record offsets in memory: the store then reads
/// them from the copy, checked as the stored ones would be.
#[test]
fn offsets_can_be_read_from_a_copy() {
    let records = text_records(300);
    let (bytes, _) = build_to_vec(&records, &options(CodecChoice::Auto)).unwrap();
    let words = aligned(&bytes);
    let bytes = view(&words, bytes.len());
    let range = Store::offsets_range(bytes).unwrap();
    let copy = aligned(&bytes[range.clone()]);
    let store = Store::open_with_offsets(bytes, None, Some(view(&copy, range.len()))).unwrap();
    let mut out = Vec::new();
    for (i, r) in records.iter().enumerate() {
        store.get(i as u64, &mut out).unwrap();
        assert_eq!(&out, r, "record {i}");
    }
    store.verify().unwrap();
    // A copy that differs from what the store holds is caught.
    let mut bad = bytes[range.clone()].to_vec();
    let last = bad.len() - 9;
    bad[last] ^= 1;
    let bad = aligned(&bad);
    assert!(matches!(
        Store::open_with_offsets(bytes, None, Some(view(&bad, range.len()))),
        Err(Error::ChecksumMismatch { .. })
    ));
    // So is one of another length.
    assert!(matches!(
        Store::open_with_offsets(bytes, None, Some(view(&copy, range.len() - 8))),
        Err(Error::Corrupt { .. })
    ));
}
