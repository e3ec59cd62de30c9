//! Bad input gets typed errors naming table, row and column and writes
//! nothing; schema changes that need no rewrite work and others are
//! refused; loads (bulk and not) check every row; `verify` finds an index
//! that disagrees with its rows; tables and their data survive reopening.

use std::sync::Arc;

use pith_table::{
    group_family, index_family, BuildState, Condition, Error, KeyBound, Query, Schema, Table,
    Tables, Value, PRIMARY,
};
use serde_json::json;

const SCHEMA: &str = r#"{
    "name": "pkgs",
    "columns": [
        {"name": "id", "type": "u32"},
        {"name": "name", "type": "string"},
        {"name": "size", "type": "u64", "nullable": true},
        {"name": "md5", "type": "fixed_bytes", "length": 4, "nullable": true},
        {"name": "price", "type": "decimal", "precision": 6, "scale": 2, "nullable": true},
        {"name": "seen", "type": "timestamp", "nullable": true},
        {"name": "uid", "type": "uuid", "nullable": true},
        {"name": "text", "type": "string", "nullable": true}
    ],
    "primary_key": ["id"],
    "indexes": [
        {"name": "by_name", "columns": ["name"], "unique": true},
        {"name": "by_size", "columns": ["size", "name"]}
    ],
    "column_groups": [{"name": "long", "columns": ["text"]}]
}"#;

fn setup() -> (tempfile::TempDir, Tables, Table) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(pith::DB::open(dir.path(), pith::Options::default()).expect("open"));
    let tables = Tables::open(db).expect("tables");
    let t = tables
        .create(&Schema::from_json(SCHEMA).expect("schema"))
        .expect("create");
    (dir, tables, t)
}

fn obj(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    v.as_object().expect("object").clone()
}

/// Every (key, value) of family `cf`, in key order.
fn entries_of(db: &pith::DB, cf: &pith::ColumnFamily) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.range_cf(cf, None, None)
        .expect("range")
        .collect::<pith::Result<_>>()
        .expect("entries")
}

/// Inserts the row `v` (column name -> value) into `t`.
fn insert_json(t: &Table, v: serde_json::Value) {
    let row = t.row_from_json(&obj(v), "test").expect("row");
    t.insert(&row).expect("insert");
}

fn all_rows(t: &Table) -> Vec<Vec<Value>> {
    t.query(&Query {
        index: PRIMARY.into(),
        condition: Condition::Range(KeyBound::Unbounded, KeyBound::Unbounded),
        columns: t.all_columns(),
        limit: None,
        reverse: false,
    })
    .expect("query")
}

#[test]
fn bad_values_name_table_row_and_column_and_write_nothing() {
    let (_dir, _tables, t) = setup();
    let good = json!({"id": 1, "name": "zlib", "size": 10, "md5": "0a0b0c0d", "price": "9.99",
        "seen": "2024-05-01T12:00:00Z", "uid": "67e55044-10b1-426f-9247-bb680e5fe0c8", "text": "x"});
    let row = t.row_from_json(&obj(good.clone()), "line 1").expect("fits");
    t.insert(&row).expect("insert");
    let cases = [
        (json!({"id": 2}), "column name is not nullable"),
        (json!({"id": 2, "name": "a", "nope": 1}), "no column nope"),
        (
            json!({"id": 2, "name": "a", "md5": "0a0b"}),
            "column md5: 2 bytes where the column holds exactly 4",
        ),
        (
            json!({"id": 2, "name": "a", "price": "12345.5"}),
            "column price",
        ),
        (json!({"id": 2, "name": "a", "price": 1.5}), "JSON float"),
        (json!({"id": -2, "name": "a"}), "column id"),
        (
            json!({"id": 2, "name": 7}),
            "column name: expected a string",
        ),
        (
            json!({"id": 2, "name": "a", "seen": "yesterday"}),
            "column seen",
        ),
        (
            json!({"id": 2, "name": "a", "uid": "67e55044"}),
            "column uid",
        ),
    ];
    for (bad, needle) in cases {
        let e = t
            .row_from_json(&obj(bad), "line 7")
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("table pkgs") && e.contains("line 7") && e.contains(needle),
            "{e}"
        );
    }
    // Values given directly are checked too, and a refused write changes
    // nothing.
    let mut wrong = row.clone();
    wrong[0] = Value::UInt(3);
    wrong[2] = Value::Text("ten".into());
    let e = t.insert(&wrong).expect_err("type");
    assert!(
        matches!(&e, Error::Value { column, row, .. } if column == "size" && row.contains("id=3")),
        "{e}"
    );
    let mut dup_name = row.clone();
    dup_name[0] = Value::UInt(3);
    let e = t.insert(&dup_name).expect_err("unique");
    assert!(
        matches!(&e, Error::Duplicate { index, .. } if index == "by_name"),
        "{e}"
    );
    let e = t.insert(&row).expect_err("primary key");
    assert!(
        matches!(&e, Error::Duplicate { index, .. } if index == "primary key"),
        "{e}"
    );
    assert_eq!(all_rows(&t), vec![row.clone()]);
    assert_eq!(t.verify().expect("verify"), 1);
    // JSON out is JSON in.
    assert_eq!(t.row_to_json(&t.all_columns(), &row), good);
}

#[test]
fn get_reads_chosen_columns_and_updates_rewrite_what_changed() {
    let (_dir, _tables, t) = setup();
    for i in 0..50u32 {
        insert_json(
            &t,
            json!({"id": i, "name": format!("p{i:02}"), "size": i % 5, "text": format!("long text {i}")}),
        );
    }
    let cols = t.columns(&["text", "id"]).expect("columns");
    assert_eq!(
        t.get(&[Value::UInt(7)], &cols).expect("get"),
        Some(vec![Value::Text("long text 7".into()), Value::UInt(7)])
    );
    assert_eq!(t.get(&[Value::UInt(99)], &cols).expect("get"), None);
    let snap = t.db().snapshot();
    t.update(
        &[Value::UInt(7)],
        &[(2, Value::UInt(4)), (1, Value::Text("renamed".into()))],
    )
    .expect("update");
    let size_name = t.columns(&["size", "name"]).expect("columns");
    assert_eq!(
        t.get(&[Value::UInt(7)], &size_name).expect("get"),
        Some(vec![Value::UInt(4), Value::Text("renamed".into())])
    );
    assert_eq!(
        t.get_at(&snap, &[Value::UInt(7)], &size_name).expect("get"),
        Some(vec![Value::UInt(2), Value::Text("p07".into())])
    );
    let e = t
        .update(&[Value::UInt(7)], &[(0, Value::UInt(8))])
        .expect_err("pk");
    assert!(matches!(e, Error::Value { .. }));
    let e = t
        .update(&[Value::UInt(7)], &[(1, Value::Text("p08".into()))])
        .expect_err("unique");
    assert!(matches!(e, Error::Duplicate { .. }));
    // Range over a composite index's first column, backward, limited.
    let rows = t
        .query(&Query {
            index: "by_size".into(),
            condition: Condition::Range(
                KeyBound::Included(vec![Value::UInt(3)]),
                KeyBound::Unbounded,
            ),
            columns: t.columns(&["id"]).expect("columns"),
            limit: Some(4),
            reverse: true,
        })
        .expect("query");
    // Size 4, by name, last first: "renamed" (id 7), then "p49", ...
    let ids: Vec<Vec<Value>> = [7, 49, 44, 39]
        .iter()
        .map(|&i| vec![Value::UInt(i)])
        .collect();
    assert_eq!(rows, ids);
    assert_eq!(
        t.count("by_size", &Condition::Eq(vec![Value::UInt(4)]))
            .expect("count"),
        11
    );
    assert!(t.delete(&[Value::UInt(7)]).expect("delete"));
    assert!(!t.delete(&[Value::UInt(7)]).expect("delete"));
    assert_eq!(t.verify().expect("verify"), 49);
}

#[test]
fn loads_check_every_row_and_bulk_loads_refuse_duplicates_before_writing() {
    let (_dir, _tables, t) = setup();
    let rows = |ids: &[u32]| -> Vec<pith_table::Result<(String, Vec<Value>)>> {
        ids.iter()
            .enumerate()
            .map(|(n, &i)| {
                let label = format!("line {}", n + 1);
                t.row_from_json(&obj(json!({"id": i, "name": format!("n{i}")})), &label)
                    .map(|r| (label, r))
            })
            .collect()
    };
    let e = t
        .load(rows(&[1, 2, 3, 2]), &mut |_| {})
        .expect_err("duplicate");
    assert!(
        matches!(&e, Error::Duplicate { row, index, .. } if row.starts_with("line 4") && index == "primary key"),
        "{e}"
    );
    assert!(
        all_rows(&t).is_empty(),
        "a refused bulk load writes nothing"
    );
    let stats = t.load(rows(&[5, 1, 3]), &mut |_| {}).expect("load");
    assert!(stats.bulk && stats.rows == 3);
    // Into a table with rows: inserts, checked one by one.
    let stats = t.load(rows(&[7, 8]), &mut |_| {}).expect("load");
    assert!(!stats.bulk && stats.rows == 2);
    let e = t.load(rows(&[9, 3]), &mut |_| {}).expect_err("duplicate");
    assert!(
        matches!(&e, Error::Duplicate { row, .. } if row.starts_with("line 2")),
        "{e}"
    );
    assert_eq!(t.verify().expect("verify"), 6);
    let st = t.stats().expect("stats");
    let names: Vec<&str> = st.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["default", "long", "by_name", "by_size"]);
    assert_eq!(st[0].entries, 6);
}

#[test]
fn schema_changes_without_a_rewrite_work_and_others_are_refused() {
    let (_dir, tables, t) = setup();
    for i in 0..30u32 {
        let row = t
            .row_from_json(
                &obj(json!({"id": i, "name": format!("n{}", i % 10), "size": i})),
                "t",
            )
            .map(|mut r| {
                // names repeat: make them unique for the unique index
                r[1] = Value::Text(format!("n{i}"));
                r
            })
            .expect("row");
        t.insert(&row).expect("insert");
    }
    let mut next: serde_json::Value = serde_json::from_str(SCHEMA).expect("json");
    next["columns"]
        .as_array_mut()
        .expect("columns")
        .push(json!({"name": "extra", "type": "i32", "nullable": true}));
    next["indexes"] = json!([
        {"name": "by_name", "columns": ["name"], "unique": true},
        {"name": "by_extra", "columns": ["extra", "size"]}
    ]);
    let t2 = tables
        .alter(&Schema::from_value(&next).expect("schema"))
        .expect("alter");
    tables.wait_for_builds("pkgs").expect("built");
    assert!(tables.builds().iter().all(|b| b.state == BuildState::Done));
    assert!(
        t2.db().family(&index_family("pkgs", "by_size")).is_none(),
        "dropped index gone"
    );
    assert_eq!(
        t2.count("by_extra", &Condition::Eq(vec![Value::Null]))
            .expect("count"),
        30
    );
    let extra = t2.columns(&["extra", "name"]).expect("columns");
    assert_eq!(
        t2.get(&[Value::UInt(3)], &extra).expect("get"),
        Some(vec![Value::Null, Value::Text("n3".into())])
    );
    t2.update(&[Value::UInt(3)], &[(8, Value::Int(-5))])
        .expect("update");
    assert_eq!(
        t2.count("by_extra", &Condition::Prefix(vec![Value::Int(-5)]))
            .expect("count"),
        1
    );
    assert_eq!(t2.verify().expect("verify"), 30);
    // A unique index admits any number of nulls (29 rows here), as in
    // SQL, and holds for values.
    let mut unique = next.clone();
    unique["indexes"] = json!([
        {"name": "by_name", "columns": ["name"], "unique": true},
        {"name": "by_extra", "columns": ["extra", "size"]},
        {"name": "one_extra", "columns": ["extra"], "unique": true}
    ]);
    let t4 = tables
        .alter(&Schema::from_value(&unique).expect("schema"))
        .expect("alter");
    tables
        .wait_for_builds("pkgs")
        .expect("nulls are no duplicates");
    let nulls = t4.count("one_extra", &Condition::Eq(vec![Value::Null]));
    assert_eq!(nulls.expect("count"), 29);
    let e = t4
        .update(&[Value::UInt(4)], &[(8, Value::Int(-5))])
        .expect_err("taken");
    assert!(
        matches!(&e, Error::Duplicate { index, .. } if index == "one_extra"),
        "{e}"
    );
    assert_eq!(t4.verify().expect("verify"), 30);
    // A unique index the rows do not satisfy cannot be built: it is
    // removed from the schema, and leaves nothing.
    let t2 = tables
        .alter(&Schema::from_value(&next).expect("schema"))
        .expect("alter");
    t2.update(&[Value::UInt(4)], &[(8, Value::Int(-5))])
        .expect("update");
    let t3 = tables
        .alter(&Schema::from_value(&unique).expect("schema"))
        .expect("alter");
    let e = tables.wait_for_builds("pkgs").expect_err("dups");
    assert!(
        matches!(&e, Error::IndexBuildFailed { index, .. } if index == "one_extra"),
        "{e}"
    );
    let q = t3.count("one_extra", &Condition::Eq(vec![Value::Null]));
    assert!(matches!(q, Err(Error::IndexBuildFailed { .. })), "{q:?}");
    assert!(t2.db().family(&index_family("pkgs", "one_extra")).is_none());
    assert!(tables
        .schema("pkgs")
        .expect("schema")
        .index("one_extra")
        .is_none());
    let mut retyped = next.clone();
    retyped["columns"][2]["type"] = json!("i64");
    let e = tables
        .alter(&Schema::from_value(&retyped).expect("schema"))
        .expect_err("rewrite");
    assert!(matches!(e, Error::Unsupported { .. }), "{e}");
    assert_eq!(tables.schema("pkgs").expect("schema"), *t2.schema());
}

#[test]
fn verify_finds_an_index_out_of_step_and_tables_survive_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Arc::new(pith::DB::open(dir.path(), pith::Options::default()).expect("open"));
        let tables = Tables::open(db.clone()).expect("tables");
        let t = tables
            .create(&Schema::from_json(SCHEMA).expect("schema"))
            .expect("create");
        for i in 0..10u32 {
            insert_json(&t, json!({"id": i, "name": format!("n{i}"), "size": 1}));
        }
        assert!(matches!(
            tables.create(t.schema()),
            Err(Error::TableExists { .. })
        ));
        drop(t);
        drop(tables);
        Arc::try_unwrap(db)
            .ok()
            .expect("last handle")
            .close()
            .expect("close");
    }
    let db = Arc::new(pith::DB::open(dir.path(), pith::Options::default()).expect("reopen"));
    let tables = Tables::open(db.clone()).expect("tables");
    assert_eq!(tables.list().expect("list"), ["pkgs"]);
    let t = tables.open_table("pkgs").expect("open");
    assert_eq!(t.verify().expect("verify"), 10);
    // Remove one index entry behind the table's back.
    let by_size = db.family(&index_family("pkgs", "by_size")).expect("family");
    let (key, _) = entries_of(&db, &by_size).swap_remove(0);
    db.delete_cf(&by_size, key).expect("delete");
    let e = t.verify().expect_err("out of step");
    assert!(
        matches!(&e, Error::Inconsistent { index, .. } if index == "by_size"),
        "{e}"
    );
    tables.drop_table("pkgs").expect("drop");
    assert!(db.family(&group_family("pkgs", "default")).is_none());
    assert!(matches!(
        tables.open_table("pkgs"),
        Err(Error::NoSuchTable { .. })
    ));
}

#[test]
fn a_unique_index_admits_any_number_of_nulls_in_loads_inserts_and_queries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(pith::DB::open(dir.path(), pith::Options::default()).expect("open"));
    let tables = Tables::open(db).expect("tables");
    let schema = r#"{"name": "u", "columns": [
        {"name": "id", "type": "u32"},
        {"name": "code", "type": "string", "nullable": true},
        {"name": "n", "type": "u8", "nullable": true}],
        "primary_key": ["id"],
        "indexes": [{"name": "by_code_n", "columns": ["code", "n"], "unique": true}]}"#;
    let t = tables
        .create(&Schema::from_json(schema).expect("schema"))
        .expect("create");
    let rows = |specs: &[(u32, Option<&str>, Option<u8>)]| {
        specs
            .iter()
            .map(|&(id, code, n)| {
                let label = format!("row {id}");
                t.row_from_json(&obj(json!({"id": id, "code": code, "n": n})), &label)
                    .map(|r| (label, r))
            })
            .collect::<Vec<_>>()
    };
    // A bulk load: a null in either column never collides; values do.
    let e = t
        .load(
            rows(&[(1, Some("a"), Some(1)), (2, Some("a"), Some(1))]),
            &mut |_| {},
        )
        .expect_err("duplicate");
    assert!(
        matches!(&e, Error::Duplicate { index, .. } if index == "by_code_n"),
        "{e}"
    );
    let loaded = [
        (1, Some("a"), Some(1)),
        (2, Some("a"), None),
        (3, Some("a"), None),
        (4, None, Some(1)),
        (5, None, None),
        (6, None, None),
    ];
    t.load(rows(&loaded), &mut |_| {}).expect("load");
    // Inserts: the same.
    let insert = |id: u32, code: Option<&str>, n: Option<u8>| {
        let r = t
            .row_from_json(&obj(json!({"id": id, "code": code, "n": n})), "insert")
            .expect("row");
        t.insert(&r)
    };
    insert(7, Some("a"), None).expect("a null is no duplicate");
    insert(8, None, None).expect("a null is no duplicate");
    let e = insert(9, Some("a"), Some(1)).expect_err("taken");
    assert!(
        matches!(&e, Error::Duplicate { index, .. } if index == "by_code_n"),
        "{e}"
    );
    insert(9, Some("b"), Some(1)).expect("free");
    // Queries find every row with a null, in primary key order, and the
    // one row with a value.
    let ids = |values: Vec<Value>| -> Vec<Value> {
        t.query(&Query {
            index: "by_code_n".into(),
            condition: Condition::Eq(values),
            columns: vec![0],
            limit: None,
            reverse: false,
        })
        .expect("query")
        .into_iter()
        .map(|r| r[0].clone())
        .collect()
    };
    let a = || Value::Text("a".into());
    assert_eq!(ids(vec![a(), Value::Null]), [2, 3, 7].map(Value::UInt));
    assert_eq!(
        ids(vec![Value::Null, Value::Null]),
        [5, 6, 8].map(Value::UInt)
    );
    assert_eq!(ids(vec![Value::Null, Value::UInt(1)]), [Value::UInt(4)]);
    assert_eq!(ids(vec![a(), Value::UInt(1)]), [Value::UInt(1)]);
    let prefix = t
        .count("by_code_n", &Condition::Prefix(vec![a()]))
        .expect("count");
    assert_eq!(prefix, 4);
    // A row moving to a null and back keeps the index right.
    t.update(&[Value::UInt(1)], &[(2, Value::Null)])
        .expect("update");
    insert(10, Some("a"), Some(1)).expect("freed");
    let e = t
        .update(&[Value::UInt(1)], &[(2, Value::UInt(1))])
        .expect_err("taken again");
    assert!(matches!(&e, Error::Duplicate { .. }), "{e}");
    t.delete(&[Value::UInt(2)]).expect("delete");
    assert_eq!(ids(vec![a(), Value::Null]), [1, 3, 7].map(Value::UInt));
    assert_eq!(t.verify().expect("verify"), 9);
}

/// An entry an older version wrote for a row with a null in a unique
/// index (keyed by the columns alone) is accepted by `verify` and deleted
/// with its row's next change.
#[test]
fn a_unique_entry_with_a_null_from_before_is_read_verified_and_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Arc::new(pith::DB::open(dir.path(), pith::Options::default()).expect("open"));
    let tables = Tables::open(db.clone()).expect("tables");
    let schema = r#"{"name": "u", "columns": [
        {"name": "id", "type": "u32"},
        {"name": "code", "type": "string", "nullable": true}],
        "primary_key": ["id"],
        "indexes": [{"name": "by_code", "columns": ["code"], "unique": true}]}"#;
    let t = tables
        .create(&Schema::from_json(schema).expect("schema"))
        .expect("create");
    insert_json(&t, json!({"id": 1, "code": null}));
    // Rewrite the entry the way the older version keyed it.
    let cf = db.family(&index_family("u", "by_code")).expect("family");
    let (key, pk) = entries_of(&db, &cf).swap_remove(0);
    let legacy = key[..key.len() - pk.len()].to_vec();
    let mut batch = pith::WriteBatch::new();
    batch.delete_cf(&cf, &key).put_cf(&cf, &legacy, &pk);
    db.write(pith::WriteOptions::default(), batch)
        .expect("write");
    assert_eq!(t.verify().expect("legacy entry accepted"), 1);
    let found = t.count("by_code", &Condition::Eq(vec![Value::Null]));
    assert_eq!(found.expect("count"), 1);
    // A second null is no duplicate of it.
    insert_json(&t, json!({"id": 2, "code": null}));
    // The row's change removes the old entry.
    t.update(&[Value::UInt(1)], &[(1, Value::Text("x".into()))])
        .expect("update");
    let keys: Vec<Vec<u8>> = entries_of(&db, &cf).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(!keys.contains(&legacy));
    assert_eq!(t.verify().expect("verify"), 2);

    // A build an older version began and this one resumes replaces the
    // old entries it finds: row 2's entry goes back to the old form, and
    // the index is marked as building again.
    let (key, pk) = entries_of(&db, &cf)
        .into_iter()
        .find(|(k, v)| k.len() > v.len() && k.ends_with(v))
        .expect("row 2's null entry");
    let old = key[..key.len() - pk.len()].to_vec();
    let catalog = db.family(pith_table::CATALOG).expect("catalog");
    let mut batch = pith::WriteBatch::new();
    batch.delete_cf(&cf, &key).put_cf(&cf, &old, &pk).put_cf(
        &catalog,
        "u/building",
        "[\"by_code\"]",
    );
    db.write(pith::WriteOptions::default(), batch)
        .expect("write");
    drop((t, tables));
    let tables = Tables::open(db.clone()).expect("tables");
    tables.wait_for_builds("u").expect("resumed build");
    let t = tables.open_table("u").expect("table");
    let keys: Vec<Vec<u8>> = entries_of(&db, &cf).into_iter().map(|(k, _)| k).collect();
    assert!(keys.contains(&key) && !keys.contains(&old), "{keys:?}");
    assert_eq!(t.verify().expect("verify"), 2);
}

#[test]
fn query_each_streams_what_query_collects_and_stops_when_asked() {
    let (_dir, _tables, t) = setup();
    for i in 0..40u32 {
        insert_json(
            &t,
            json!({"id": i, "name": format!("n{i:02}"), "size": i % 7}),
        );
    }
    let covered = t.columns(&["size", "name", "id"]).expect("columns");
    let not_covered = t.columns(&["text", "id"]).expect("columns");
    for (columns, reverse) in [
        (covered.clone(), false),
        (covered, true),
        (not_covered, false),
    ] {
        let q = Query {
            index: "by_size".into(),
            condition: Condition::Range(
                KeyBound::Included(vec![Value::UInt(2)]),
                KeyBound::Excluded(vec![Value::UInt(5)]),
            ),
            columns,
            limit: Some(15),
            reverse,
        };
        let all = t.query(&q).expect("query");
        assert_eq!(all.len(), 15);
        let (n, seen) = visit_first(&t, &q, usize::MAX);
        assert_eq!((n, &seen), (15, &all));
        let (n, first) = visit_first(&t, &q, 3);
        assert_eq!((n, &first[..]), (3, &all[..3]));
    }
    // Past one chunk of rows read at a time (1,024), streamed and stopped.
    for i in 40..2_600u32 {
        insert_json(&t, json!({"id": i, "name": format!("m{i}"), "size": 1}));
    }
    let q = Query {
        index: "by_size".into(),
        condition: Condition::Eq(vec![Value::UInt(1)]),
        columns: t.columns(&["text", "id"]).expect("columns"),
        limit: None,
        reverse: true,
    };
    let all = t.query(&q).expect("query");
    assert_eq!(all.len(), 2_560 + 6);
    let (n, seen) = visit_first(&t, &q, 1_500);
    assert_eq!((n, &seen[..]), (1_500, &all[..1_500]));
}

/// The rows `query_each` visits when its visitor stops after `most`, and
/// the count it returns.
fn visit_first(t: &Table, q: &Query, most: usize) -> (u64, Vec<Vec<Value>>) {
    let mut seen = Vec::new();
    let n = t
        .query_each(q, |row| {
            seen.push(row.to_vec());
            seen.len() < most
        })
        .expect("query_each");
    (n, seen)
}
