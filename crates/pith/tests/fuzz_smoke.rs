//! Runs the fuzz entry points (`pith::fuzz`) on stable, in the default test
//! suite: real files with random byte flips, truncations and random bytes.
//! The cargo-fuzz targets in `fuzz/` run the same code for longer.

use rand::{Rng, SeedableRng};

fn real_files() -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = pith::DB::open(dir.path(), pith::Options::default()).expect("open");
    for i in 0..300u32 {
        db.put(
            format!("key{i:04}"),
            format!("value {i} {}", "v".repeat((i % 40) as usize)),
        )
        .expect("put");
    }
    // A second column family: a version 3 manifest, and log records of
    // kind 3.
    let family = db.create_family("f").expect("family");
    for i in 0..40u32 {
        db.put_cf(&family, format!("f{i:03}"), "in a family")
            .expect("put");
    }
    let snap = db.snapshot();
    for i in 0..50u32 {
        db.delete(format!("key{i:04}")).expect("delete");
    }
    db.flush().expect("flush");
    db.put("tail", "in the log").expect("put");
    db.put_cf(&family, "tail", "in the log too").expect("put");
    drop(snap);
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir.path()).expect("read_dir") {
        let p = e.expect("entry").path();
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        if name.ends_with(".seg") || name.ends_with(".wal") || name == "MANIFEST" {
            out.push((name, std::fs::read(&p).expect("read")));
        }
    }
    drop(db);
    out
}

fn run(name: &str, data: &[u8]) {
    if name.ends_with(".seg") {
        pith::fuzz::segment(data);
        pith::fuzz::segment_refixed(data);
    } else if name.ends_with(".wal") {
        pith::fuzz::wal(data);
    } else {
        pith::fuzz::manifest(data);
    }
}

#[test]
fn mutated_real_files_never_panic() {
    let files = real_files();
    assert!(files.iter().any(|(n, _)| n.ends_with(".seg")));
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    for (name, bytes) in &files {
        run(name, bytes);
        for _ in 0..300 {
            let mut m = bytes.clone();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..m.len());
                m[at] ^= 1 << rng.gen_range(0..8);
            }
            run(name, &m);
            let cut = rng.gen_range(0..bytes.len());
            run(name, &bytes[..cut]);
        }
    }
    for _ in 0..300 {
        let len = rng.gen_range(0..4096);
        let noise: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        for name in ["x.seg", "x.wal", "MANIFEST"] {
            run(name, &noise);
        }
    }
}
