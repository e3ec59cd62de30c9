//! Background index builds: an index added to a table with rows is built
//! while writers insert, update and delete (and ends exactly equal to the
//! rows), queries on it are refused until it ends, a build a close
//! interrupts starts again at the next open, and a unique index the rows
//! do not satisfy is removed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use pith_table::{BuildState, Condition, Error, Schema, Table, Tables, Value};
use rand::{Rng, SeedableRng};
use serde_json::json;

fn schema(indexes: serde_json::Value) -> Schema {
    Schema::from_value(&json!({
        "name": "t",
        "columns": [
            {"name": "id", "type": "u32"},
            {"name": "name", "type": "string"},
            {"name": "group", "type": "u16"},
            {"name": "note", "type": "string", "nullable": true}
        ],
        "primary_key": ["id"],
        "indexes": indexes
    }))
    .expect("schema")
}

fn row(id: u32, version: u32) -> Vec<Value> {
    vec![
        Value::UInt(u64::from(id)),
        Value::Text(format!("name-{id}-{version}")),
        Value::UInt(u64::from((id + version) % 97)),
        Value::Text(format!("a note about {id}")),
    ]
}

fn open(dir: &std::path::Path) -> (Arc<pith::DB>, Tables) {
    let db = Arc::new(pith::DB::open(dir, pith::Options::default()).expect("open"));
    let tables = Tables::open(db.clone()).expect("tables");
    (db, tables)
}

/// A table of `n` rows, loaded in bulk, with no secondary index.
fn loaded(tables: &Tables, n: u32) -> Table {
    let t = tables.create(&schema(json!([]))).expect("create");
    let rows = (0..n).map(|i| Ok((format!("row {i}"), row(i, 0))));
    t.load(rows, &mut |_| {}).expect("load");
    t
}

fn with_indexes() -> Schema {
    schema(json!([
        {"name": "by_group", "columns": ["group", "name"]},
        {"name": "by_name", "columns": ["name"], "unique": true}
    ]))
}

#[test]
fn an_index_built_while_writers_write_ends_equal_to_the_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, tables) = open(dir.path());
    loaded(&tables, 20_000);
    let t = tables.alter(&with_indexes()).expect("alter");
    // Refused until the build ends, or answered right once it has.
    match t.count("by_group", &Condition::Eq(vec![Value::UInt(5)])) {
        Err(Error::IndexBuilding { index, .. }) => assert_eq!(index, "by_group"),
        Ok(_) => {}
        Err(e) => panic!("a query during a build: {e}"),
    }
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let (t, done) = (t.clone(), done.clone());
            thread::spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(w);
                let mut writes = 0u32;
                while !done.load(Ordering::Relaxed) || writes < 200 {
                    writes += 1;
                    let id = rng.gen_range(0..22_000u32);
                    let key = [Value::UInt(u64::from(id))];
                    match rng.gen_range(0..4) {
                        0 => {
                            t.delete(&key).expect("delete");
                        }
                        1 => t
                            .update(&key, &[(2, Value::UInt(u64::from(writes % 97)))])
                            .or_else(|e| match e {
                                Error::NoSuchRow { .. } => Ok(()),
                                e => Err(e),
                            })
                            .expect("update"),
                        _ => t.upsert(&row(id, writes * 2 + w as u32)).expect("upsert"),
                    }
                }
            })
        })
        .collect();
    tables.wait_for_builds("t").expect("built");
    done.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
    let status = tables.builds();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].state, BuildState::Done);
    assert!(status[0].rows > 15_000, "{status:?}");
    // Every row has exactly its entries, in both new indexes.
    let rows = t.verify().expect("verify");
    assert!(rows > 15_000);
    let all = t.count(
        "by_group",
        &Condition::Range(
            pith_table::KeyBound::Unbounded,
            pith_table::KeyBound::Unbounded,
        ),
    );
    assert_eq!(all.expect("count"), rows);
}

#[test]
fn a_handle_opened_before_a_schema_change_refuses_to_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, tables) = open(dir.path());
    let before = loaded(&tables, 100);
    let after = tables.alter(&with_indexes()).expect("alter");
    let e = before.upsert(&row(5, 1)).expect_err("stale");
    assert!(matches!(e, Error::StaleTable { .. }), "{e}");
    assert!(matches!(
        before.delete(&[Value::UInt(5)]),
        Err(Error::StaleTable { .. })
    ));
    // Reads through it still work; the new handle writes.
    assert!(before.get(&[Value::UInt(5)], &[1]).expect("get").is_some());
    after.upsert(&row(5, 1)).expect("upsert");
    tables.wait_for_builds("t").expect("built");
    assert_eq!(after.verify().expect("verify"), 100);
}

#[test]
fn a_build_a_close_interrupts_starts_again_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let (db, tables) = open(dir.path());
        loaded(&tables, 30_000);
        tables.alter(&with_indexes()).expect("alter");
        // Stops the build (or finds it done).
        drop(tables);
        Arc::try_unwrap(db)
            .ok()
            .expect("the build thread let go of the database")
            .close()
            .expect("close");
    }
    let (_db, tables) = open(dir.path());
    tables.wait_for_builds("t").expect("built");
    let t = tables.open_table("t").expect("table");
    assert_eq!(t.verify().expect("verify"), 30_000);
    let name = Value::Text("name-777-0".into());
    assert_eq!(
        t.count("by_name", &Condition::Eq(vec![name]))
            .expect("count"),
        1
    );
}

#[test]
fn a_unique_index_the_rows_break_is_removed_and_the_others_built() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, tables) = open(dir.path());
    loaded(&tables, 5_000);
    let t = tables
        .alter(&schema(json!([
            {"name": "by_group", "columns": ["group", "name"]},
            {"name": "one_per_group", "columns": ["group"], "unique": true}
        ])))
        .expect("alter");
    let e = tables.wait_for_builds("t").expect_err("duplicates");
    assert!(
        matches!(&e, Error::IndexBuildFailed { index, .. } if index == "one_per_group"),
        "{e}"
    );
    let q = t.count("one_per_group", &Condition::Eq(vec![Value::UInt(1)]));
    assert!(matches!(q, Err(Error::IndexBuildFailed { .. })), "{q:?}");
    // Writes through the handle from the change go on, leaving the
    // removed index alone.
    t.upsert(&row(7, 1)).expect("upsert after a failed index");
    t.insert(&row(9_999, 0))
        .expect("insert after a failed index");
    assert!(db
        .family(&pith_table::index_family("t", "one_per_group"))
        .is_none());
    let t = tables.open_table("t").expect("reopen table");
    assert_eq!(t.schema().indexes.len(), 1);
    assert_eq!(t.verify().expect("verify"), 5_001);
}

/// No index family pays for a Bloom filter: a non-unique index is only
/// sought and scanned, and a unique one is looked up by exact key only by
/// the check of a write, whose primary-key check before it has no filter
/// either. A family outside the tables, loaded with as many keys, keeps
/// its filter.
#[test]
fn indexes_pay_for_no_bloom_filter() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, tables) = open(dir.path());
    let t = tables.create(&with_indexes()).expect("create");
    let rows = (0..3000).map(|i| Ok((format!("row {i}"), row(i, 0))));
    t.load(rows, &mut |_| {}).expect("load");
    let meta_bytes = |cf: &pith::ColumnFamily| -> u64 {
        let s = db.stats_cf(cf).expect("stats");
        s.segments.iter().map(|seg| seg.meta_bytes).sum()
    };
    let index = |name: &str| {
        db.family(&pith_table::index_family("t", name))
            .expect("family")
    };
    let plain = db.create_family("plain").expect("create family");
    let keys = (0..3000).map(|i| Ok::<_, pith::Error>((format!("key {i:05}"), b"v".to_vec())));
    db.try_bulk_load_cf(&plain, keys).expect("bulk load");
    let (scanned, unique) = (
        meta_bytes(&index("by_group")),
        meta_bytes(&index("by_name")),
    );
    let filtered = meta_bytes(&plain);
    // 10 bits a key make 3,750 bytes of filter.
    assert!(
        scanned < 1000 && unique < 1000 && filtered >= 3750,
        "metadata bytes: unique index {unique}, non-unique {scanned}, plain family {filtered}"
    );
    // The lookups still answer.
    let name = Value::Text("name-7-0".into());
    assert_eq!(
        t.count("by_name", &Condition::Eq(vec![name]))
            .expect("count"),
        1
    );
    assert_eq!(
        t.count("by_group", &Condition::Eq(vec![Value::UInt(7)]))
            .expect("count"),
        31
    );
}
