//! Corruption tests: flip or truncate bytes in each kind of file (segment,
//! log, manifest) of a closed database; opening, reading and verifying must
//! give a typed corruption error that names the file, or correct data,
//! never a panic or a wrong value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pith::{Error, Options, ValueReads, DB};

fn options() -> Options {
    Options {
        merge_trigger: 8,
        stall_segments: 16,
        ..Options::default()
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A closed database with two segments and an unflushed log, its final
/// contents, and every state the log's writes pass through (the log's
/// last record may be lost as a torn tail, so a damaged log may recover
/// any of these, and nothing else).
fn pristine() -> (tempfile::TempDir, Model, Vec<Model>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model = Model::new();
    let mut states = Vec::new();
    let db = DB::open(dir.path(), options()).expect("open");
    for i in 0..400u32 {
        let (k, v) = (
            format!("pkg{i:04}/{}", i % 9),
            format!(
                "Package: pkg{i}\nVersion: {}\nDescription: {}\n",
                i % 9,
                "text ".repeat((i % 30) as usize)
            ),
        );
        db.put(&k, &v).expect("put");
        model.insert(k.into_bytes(), v.into_bytes());
        if i == 200 || i == 300 {
            db.flush().expect("flush");
        }
        if i >= 300 {
            states.push(model.clone());
        }
    }
    db.delete("pkg0007/7").expect("delete");
    model.remove(&b"pkg0007/7"[..]);
    states.push(model.clone());
    drop(db);
    (dir, model, states)
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == ext) || p.file_name().is_some_and(|n| n == ext)
        })
        .collect();
    v.sort();
    v
}

fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().expect("tempdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let p = e.expect("entry").path();
        std::fs::copy(&p, to.path().join(p.file_name().expect("name"))).expect("copy");
    }
    to
}

/// Opens, reads everything, verifies. Values read must match the model; a
/// damaged log may instead give one of the states its writes passed
/// through (a prefix of them survived).
fn exercise(dir: &Path, model: &Model, states: &[Model], damaged: &str) {
    let check_err = |e: &Error, what: &str| {
        assert!(
            e.is_corruption(),
            "{what}: {damaged}: expected corruption, got {e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(damaged),
            "{what}: error does not name {damaged}: {msg}"
        );
    };
    let db = match DB::open(dir, options()) {
        Ok(db) => db,
        Err(e) => return check_err(&e, "open"),
    };
    if damaged.ends_with(".wal") {
        let got: Result<Model, Error> = db.range(None, None).collect();
        match got {
            Ok(got) => assert!(
                states.contains(&got),
                "{damaged}: recovered a state the writes never passed through"
            ),
            Err(e) => check_err(&e, "scan"),
        }
    } else {
        for (k, v) in model {
            match db.get(k) {
                Ok(got) => assert_eq!(got.as_ref(), Some(v), "{damaged}: wrong value for {k:?}"),
                Err(e) => check_err(&e, "get"),
            }
        }
        for kv in db.range(None, None) {
            match kv {
                Ok((k, v)) => assert_eq!(
                    model.get(&k),
                    Some(&v),
                    "{damaged}: scan returned a wrong pair"
                ),
                Err(e) => {
                    check_err(&e, "scan");
                    break;
                }
            }
        }
    }
    if let Err(e) = db.verify() {
        check_err(&e, "verify");
    }
}

fn flip_each(ext: &str, positions: usize) {
    let (base, model, states) = pristine();
    for file in files(base.path(), ext) {
        let name = file
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let len = std::fs::metadata(&file).expect("metadata").len() as usize;
        let step = (len / positions).max(1);
        for at in (0..len).step_by(step).chain([len - 1]) {
            let copy = copy_dir(base.path());
            let target = copy.path().join(&name);
            let mut bytes = std::fs::read(&target).expect("read");
            bytes[at] ^= 0x5a;
            std::fs::write(&target, &bytes).expect("write");
            exercise(copy.path(), &model, &states, &name);
        }
        // Truncations.
        for cut in [0, len / 3, len - 1] {
            let copy = copy_dir(base.path());
            let target = copy.path().join(&name);
            let bytes = std::fs::read(&target).expect("read");
            std::fs::write(&target, &bytes[..cut]).expect("write");
            exercise(copy.path(), &model, &states, &name);
        }
    }
}

#[test]
fn segment_flips_and_truncations() {
    flip_each("seg", 120);
}

#[test]
fn wal_flips_and_truncations() {
    flip_each("wal", 150);
}

#[test]
fn manifest_flips_and_truncations() {
    flip_each("MANIFEST", 60);
}

#[test]
fn flip_in_segment_header_is_reported_at_open() {
    let (base, _, _) = pristine();
    let seg = &files(base.path(), "seg")[0];
    let mut bytes = std::fs::read(seg).expect("read");
    bytes[20] ^= 1;
    std::fs::write(seg, &bytes).expect("write");
    match DB::open(base.path(), options()) {
        Err(Error::Corruption { path, offset, .. }) => {
            assert_eq!(path.extension().and_then(|x| x.to_str()), Some("seg"));
            assert!(offset < 184, "the header is at 0..184, not {offset}");
        }
        other => panic!("expected corruption, got {:?}", other.map(|_| ())),
    }
}

/// A record store of a version this build does not read (a newer build
/// wrote it) is not damage: the error says which version and that the
/// file is not to be thrown away.
#[test]
fn a_store_of_a_newer_version_is_refused_by_version() {
    let (base, _, _) = pristine();
    let seg = &files(base.path(), "seg")[0];
    let mut bytes = std::fs::read(seg).expect("read");
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8"));
    // The store is section 1 (its table entry at 56 + 24); its 80-byte
    // footer ends it: the version at 8, the footer's crc32c at 76.
    let footer = (u64_at(&bytes, 80) + u64_at(&bytes, 88)) as usize - 80;
    assert_eq!(&bytes[footer..footer + 8], b"PITHZIP\0");
    bytes[footer + 8..footer + 12].copy_from_slice(&99u32.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[footer..footer + 76]);
    bytes[footer + 76..footer + 80].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(seg, &bytes).expect("write");
    match DB::open(base.path(), options()) {
        Err(e @ Error::UnsupportedVersion { found: 99, .. }) => {
            let text = e.to_string();
            assert!(
                text.contains(".seg") && !text.contains("remove the database"),
                "{text}"
            );
        }
        other => panic!(
            "expected an unsupported version, got {:?}",
            other.map(|_| ())
        ),
    }
}

/// Flips one byte at a time at 39 places spread over the first segment's
/// record store of the pristine database; for each flip after which the
/// database still opens, calls `check(db, model, segment path, store byte
/// range)`, the database opened with `options`. Restores the file at
/// the end.
fn with_store_flips(
    options: &Options,
    mut check: impl FnMut(&DB, &Model, &Path, std::ops::Range<u64>),
) {
    let (base, model, _) = pristine();
    let seg = files(base.path(), "seg")[0].clone();
    let pristine_bytes = std::fs::read(&seg).expect("read");
    let u64_at =
        |at: usize| u64::from_le_bytes(pristine_bytes[at..at + 8].try_into().expect("8 bytes"));
    // The store is section 1: its table entry is at 56 + 24.
    let (store, store_len) = (u64_at(80), u64_at(88));
    for step in 1..40u64 {
        let at = (store + store_len * step / 80) as usize;
        let mut bytes = pristine_bytes.clone();
        bytes[at] ^= 0x20;
        std::fs::write(&seg, &bytes).expect("write");
        if let Ok(db) = DB::open(base.path(), options.clone()) {
            check(&db, &model, &seg, store..store + store_len);
        }
    }
    std::fs::write(&seg, &pristine_bytes).expect("restore");
}

/// A damaged record is reported at the record: the segment file and an
/// offset inside its record store past the section's start, not just the
/// section; whether its bytes are read through the mapping or with
/// `pread`.
#[test]
fn a_bad_record_names_its_file_and_offset() {
    for value_reads in [ValueReads::Mapped, ValueReads::Pread] {
        a_bad_record_is_reported(value_reads);
    }
}

fn a_bad_record_is_reported(value_reads: ValueReads) {
    let mut reported = 0;
    let options = Options {
        value_reads,
        ..options()
    };
    with_store_flips(&options, |db, model, seg, store| {
        for k in model.keys() {
            match db.get(k) {
                Err(Error::Corruption { path, offset, .. }) => {
                    assert_eq!(path, seg);
                    assert!(store.contains(&offset), "offset {offset}");
                    reported += u64::from(offset > store.start);
                }
                Err(e) => panic!("untyped failure: {e:?}"),
                Ok(_) => {}
            }
        }
    });
    assert!(
        reported > 0,
        "{value_reads:?}: no damaged record was reported at its own offset"
    );
}

/// Scans are lazy: walking keys decodes no value, so a damaged record
/// stops a scan of values (with a typed error) but not a scan of keys.
#[test]
fn a_keys_only_scan_decodes_no_value() {
    let mut checked = 0;
    with_store_flips(&options(), |db, model, _, _| {
        let values = db.range(None, None).collect::<Result<Vec<_>, _>>();
        let Err(e) = values else {
            return;
        };
        assert!(e.is_corruption(), "{e:?}");
        let keys = db
            .range(None, None)
            .keys()
            .collect::<Result<Vec<_>, _>>()
            .expect("keys need no value");
        assert_eq!(keys, model.keys().cloned().collect::<Vec<_>>());
        // The iterator: walking works, the bad value reads as None with a
        // typed error in status.
        let mut it = db.iter();
        it.seek_to_first();
        let mut bad = 0;
        while it.valid() {
            if it.value().is_none() {
                bad += 1;
                assert!(it.status().is_err_and(|e| e.is_corruption()));
                break;
            }
            it.next();
        }
        assert_eq!(bad, 1);
        checked += 1;
    });
    assert!(checked > 0, "no flip damaged a record");
}
