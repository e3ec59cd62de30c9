//! Data that does not compress costs at most 1% more than its bytes: the
//! record store falls back to plain records (per store and per record),
//! whatever the load path and whether models are shared.

use pith::{Options, DB};
use rand::{RngCore, SeedableRng};

fn random(rng: &mut impl RngCore, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rng.fill_bytes(&mut v);
    v
}

/// Loads `records` (bulk or through the log), compacts, and returns the
/// database's bytes on disk and the raw bytes of its keys and values.
fn stored(records: &[(Vec<u8>, Vec<u8>)], bulk: bool, shared_models: bool) -> (u64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = DB::open(
        dir.path(),
        Options {
            shared_models,
            ..Options::default()
        },
    )
    .expect("open");
    if bulk {
        db.bulk_load(records.iter().map(|(k, v)| (k, v)))
            .expect("bulk");
    } else {
        for (k, v) in records {
            db.put(k, v).expect("put");
        }
        db.flush().expect("flush");
    }
    db.compact().expect("compact");
    for (k, v) in records.iter().step_by(97) {
        assert_eq!(db.get(k).expect("get").as_deref(), Some(&v[..]));
    }
    let s = db.stats().expect("stats");
    let raw = records
        .iter()
        .map(|(k, v)| (k.len() + v.len()) as u64)
        .sum();
    (s.disk_bytes, raw)
}

#[test]
fn random_bytes_cost_at_most_one_percent_more_than_their_size() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let one = vec![(b"big".to_vec(), random(&mut rng, 4 << 20))];
    let many: Vec<(Vec<u8>, Vec<u8>)> = (0..400)
        .map(|i| (format!("k{i:05}").into_bytes(), random(&mut rng, 10_000)))
        .collect();
    for (name, records) in [("one 4 MiB value", &one), ("400 values of 10 kB", &many)] {
        for bulk in [true, false] {
            for shared in [true, false] {
                let (disk, raw) = stored(records, bulk, shared);
                assert!(
                    disk as f64 <= 1.01 * raw as f64,
                    "{name}, bulk {bulk}, shared models {shared}: {disk} bytes on disk for {raw}"
                );
            }
        }
    }
}

/// Random records among text: the text compresses, the random records
/// cost little more than their bytes.
#[test]
fn random_records_among_text_are_stored_plain() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    let text: Vec<(Vec<u8>, Vec<u8>)> = (0..4000)
        .map(|i| {
            let v = format!("Package: libfoo{i}\nVersion: 1.{i}.3-1\nArchitecture: amd64\nMaintainer: Debian Foo Team <foo@lists.debian.org>\nDescription: a library for foo {i}\n");
            (format!("t{i:06}").into_bytes(), v.into_bytes())
        })
        .collect();
    let noise: Vec<(Vec<u8>, Vec<u8>)> = (0..1000)
        .map(|i| (format!("r{i:06}").into_bytes(), random(&mut rng, 1000)))
        .collect();
    let mixed: Vec<(Vec<u8>, Vec<u8>)> = text.iter().chain(noise.iter()).cloned().collect();
    for shared in [true, false] {
        let (text_disk, _) = stored(&text, true, shared);
        let (mixed_disk, _) = stored(&mixed, true, shared);
        let noise_raw: u64 = noise.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        // Mixed in, the text's records may each carry a checksum of their
        // own (4 bytes): a store whose average record is large checks each
        // record alone, where the text alone shares one among several.
        let own_checksums = 4.0 * text.len() as f64;
        assert!(
            mixed_disk as f64 <= text_disk as f64 + 1.05 * noise_raw as f64 + own_checksums,
            "shared models {shared}: text alone {text_disk}, with {noise_raw} random bytes {mixed_disk}"
        );
    }
}

/// A family of random values trains one model, finds that it does not pay
/// (it saves under a tenth), and stores its values plain from then on:
/// bulk loads, flushes and merges alike, without training again on every
/// flush, and the values read back.
#[test]
fn a_model_that_does_not_pay_is_kept_but_values_are_stored_plain() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        memtable_bytes: 256 << 10,
        ..Options::default()
    };
    let db = DB::open(dir.path(), options).expect("open");
    let records: Vec<(Vec<u8>, Vec<u8>)> = (0..8000)
        .map(|i| (format!("k{i:06}").into_bytes(), random(&mut rng, 48)))
        .collect();
    db.bulk_load(records.iter().map(|(k, v)| (k, v)))
        .expect("bulk");
    for i in 0..6000 {
        db.put(format!("p{i:06}"), random(&mut rng, 48))
            .expect("put");
    }
    db.flush().expect("flush");
    let s = db.stats().expect("stats");
    assert_eq!(
        s.models.len(),
        1,
        "one model, not one per flush: {:?}",
        s.models
    );
    let model = &s.models[0];
    assert!(model.current && model.trained_ratio < 1.11, "{model:?}");
    assert_eq!(model.segments, 0);
    assert!(s.segments.len() >= 2);
    for seg in &s.segments {
        assert_eq!(seg.codec, "plain", "segment {}", seg.number);
    }
    db.compact().expect("compact");
    let s = db.stats().expect("stats");
    assert!(s.segments.iter().all(|seg| seg.codec == "plain"));
    for (k, v) in records.iter().step_by(101) {
        assert_eq!(db.get(k).expect("get").as_deref(), Some(&v[..]));
    }
    // Compacted already: another compaction leaves the segment alone.
    let number = s.segments[0].number;
    db.compact().expect("compact again");
    assert_eq!(db.stats().expect("stats").segments[0].number, number);
    // Data that compresses after all gets a model that pays.
    for i in 0..4000 {
        let v = format!("Package: libfoo{i}\nVersion: 1.{i}.3-1\nMaintainer: Debian Foo Team <foo@lists.debian.org>\nDescription: a library for foo {i}\n");
        db.put(format!("t{i:06}"), v).expect("put");
    }
    db.flush().expect("flush");
    let s = db.stats().expect("stats");
    let current: Vec<_> = s.models.iter().filter(|m| m.current).collect();
    assert_eq!(current.len(), 1);
    assert!(current[0].trained_ratio > 2.0, "{:?}", current[0]);
    let newest = s.segments.last().expect("a segment");
    assert_eq!(newest.codec, "global-shared", "{newest:?}");
}
