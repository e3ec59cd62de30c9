//! `pith table` as a user meets it: the Debian schema and the bundled
//! rows (made from the bundled records by `scripts/debian_packages_to_rows.py`,
//! which this test runs too when python3 and zstd are there), loaded,
//! queried every way, verified; bad input named by file, line and column.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::pith;

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(p)
}

#[track_caller]
fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Writes `schema` to `file` and runs `pith table alter --db DB --schema FILE`.
fn alter(db: &str, file: &Path, schema: &str) -> Output {
    std::fs::write(file, schema).expect("write the schema");
    pith(&["table", "alter", "--db", db, "--schema", &s(file)])
}

/// `pith table query --db DB packages ARGS...`.
fn query(db: &str, args: &[&str]) -> Output {
    pith(&[&["table", "query", "--db", db, "packages"], args].concat())
}

#[test]
fn the_debian_table_loads_queries_and_verifies() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = s(&tmp.path().join("db"));
    let schema = s(&repo("data/debian-packages.schema.json"));
    let rows = s(&repo("data/debian-packages-rows.jsonl.zst"));
    ok(&pith(&[
        "table", "create", "--db", &db, "--schema", &schema,
    ]));
    let loaded = ok(&pith(&["table", "load", "--db", &db, "packages", &rows]));
    assert!(
        loaded.contains("loaded 15,860 rows") && loaded.contains("bulk"),
        "{loaded}"
    );
    let got = ok(&pith(&[
        "table",
        "get",
        "--db",
        &db,
        "packages",
        "1",
        "--columns",
        "package,version,id",
    ]));
    assert_eq!(
        got,
        "{\"package\":\"0ad\",\"version\":\"0.0.26-3\",\"id\":1}\n"
    );
    // Exact on a composite unique index: both columns, as text.
    let got = ok(&query(
        &db,
        &[
            "--index",
            "by_package_version",
            "--eq",
            "0ad",
            "0.0.26-3",
            "--columns",
            "id",
        ],
    ));
    assert_eq!(got, "{\"id\":1}\n");
    // A prefix of a composite index, backward, limited.
    let got = ok(&query(
        &db,
        &[
            "--index",
            "by_section_size",
            "--prefix",
            "games",
            "--reverse",
            "--limit",
            "2",
            "--columns",
            "package,installed_size",
        ],
    ));
    let sizes: Vec<u64> = got
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["installed_size"]
                .as_u64()
                .expect("size")
        })
        .collect();
    assert!(sizes.len() == 2 && sizes[0] >= sizes[1], "{got}");
    // A range with an exclusive bound, and a regex count.
    let range = ok(&query(
        &db,
        &[
            "--index",
            "by_section_size",
            "--from",
            "games",
            "1000",
            "--before",
            "games",
            "2000",
            "--count",
        ],
    ));
    assert!(range.trim().parse::<u64>().expect("count") > 0);
    let dev = ok(&query(
        &db,
        &[
            "--index",
            "by_package_version",
            "--regex",
            "lib.*-dev",
            "--count",
        ],
    ));
    assert!(dev.trim().parse::<u64>().expect("count") > 100, "{dev}");
    let stats = ok(&pith(&["table", "stats", "--db", &db, "packages"]));
    for name in [
        "default",
        "deps",
        "text",
        "hashes",
        "by_maintainer",
        "by_homepage",
    ] {
        assert!(stats.contains(name), "{stats}");
    }
    // `pith stats` counts every family: 4 groups and 4 indexes of 15,860
    // entries, the catalog's one, the empty default family.
    let engine: serde_json::Value =
        serde_json::from_str(&ok(&pith(&["stats", "--db", &db, "--exact", "--json"])))
            .expect("json");
    assert_eq!(engine["families"].as_array().map(Vec::len), Some(10));
    assert_eq!(engine["live_keys"].as_u64(), Some(8 * 15_860 + 1));
    let verified = ok(&pith(&["table", "verify", "--db", &db, "packages"]));
    assert!(verified.starts_with("ok: 15,860 rows"), "{verified}");
    // An absent key exits 1.
    let absent = pith(&["table", "get", "--db", &db, "packages", "999999"]);
    assert_eq!(absent.status.code(), Some(1));
}

#[test]
fn a_bad_row_is_named_by_file_line_and_column_and_nothing_is_loaded() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = s(&tmp.path().join("db"));
    let schema = s(&repo("data/debian-packages.schema.json"));
    ok(&pith(&[
        "table", "create", "--db", &db, "--schema", &schema,
    ]));
    let input = tmp.path().join("rows.jsonl");
    std::fs::write(
        &input,
        "{\"id\": 1, \"package\": \"a\", \"version\": \"1\"}\n{\"id\": 2, \"package\": \"b\", \"version\": \"1\", \"size\": \"big\"}\n",
    )
    .expect("write");
    let o = pith(&["table", "load", "--db", &db, "packages", &s(&input)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("rows.jsonl:2") && err.contains("column size"),
        "{err}"
    );
    let count = ok(&query(
        &db,
        &["--index", "primary", "--from", "0", "--count"],
    ));
    assert_eq!(count.trim(), "0");
}

#[test]
fn a_schema_change_adds_and_drops_indexes_and_refuses_a_rewrite() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = s(&tmp.path().join("db"));
    let none = pith(&["table", "list", "--db", &db]);
    assert!(String::from_utf8_lossy(&none.stderr).contains("no database"));
    let schema = s(&repo("data/debian-packages.schema.json"));
    ok(&pith(&[
        "table", "create", "--db", &db, "--schema", &schema,
    ]));
    let rows = s(&repo("data/debian-packages-rows.jsonl.zst"));
    ok(&pith(&["table", "load", "--db", &db, "packages", &rows]));
    assert_eq!(ok(&pith(&["table", "list", "--db", &db])), "packages\n");

    // The printed schema reads back, and altering to it changes nothing.
    let printed = ok(&pith(&["table", "schema", "--db", &db, "packages"]));
    let mut json: serde_json::Value = serde_json::from_str(&printed).expect("schema JSON");
    let out = ok(&alter(&db, &tmp.path().join("same.json"), &printed));
    assert!(out.contains("unchanged"), "{out}");

    // An index on an existing column and a new nullable column; one index dropped.
    let indexes = json["indexes"].as_array_mut().expect("indexes");
    indexes.retain(|i| i["name"] != "by_homepage");
    indexes.push(serde_json::json!({"name": "by_arch", "columns": ["architecture", "package"]}));
    json["columns"]
        .as_array_mut()
        .expect("columns")
        .push(serde_json::json!({"name": "rating", "type": "u8", "nullable": true}));
    let next = tmp.path().join("next.json");
    let out = ok(&alter(&db, &next, &json.to_string()));
    for phrase in [
        "column rating (u8) added",
        "index by_arch added",
        "index by_homepage dropped",
        "15,860 rows walked",
    ] {
        assert!(out.contains(phrase), "{phrase}: {out}");
    }
    let got = ok(&query(
        &db,
        &[
            "--index",
            "by_arch",
            "--eq",
            "all",
            "2to3",
            "--columns",
            "package,architecture,rating",
        ],
    ));
    assert_eq!(
        got,
        "{\"package\":\"2to3\",\"architecture\":\"all\",\"rating\":null}\n"
    );
    let gone = query(&db, &["--index", "by_homepage", "--eq", "x"]);
    assert!(!gone.status.success());
    let verified = ok(&pith(&["table", "verify", "--db", &db, "packages"]));
    assert!(verified.starts_with("ok: 15,860 rows"), "{verified}");

    // A change that would rewrite rows is refused, saying why; nothing changes.
    json["columns"].as_array_mut().expect("columns").pop();
    json["primary_key"] = serde_json::json!(["package", "version"]);
    let refused = alter(&db, &next, &json.to_string());
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("packages") && err.contains("columns must stay"),
        "{err}"
    );
    let now = ok(&pith(&["table", "schema", "--db", &db, "packages"]));
    assert!(now.contains("rating") && now.contains("by_arch"), "{now}");

    // A unique index the rows break is built, found out, dropped and
    // reported, and the command fails.
    let mut json: serde_json::Value = serde_json::from_str(&now).expect("schema JSON");
    json["indexes"]
        .as_array_mut()
        .expect("indexes")
        .push(serde_json::json!({"name": "one_section", "columns": ["section"], "unique": true}));
    let failed = alter(&db, &next, &json.to_string());
    assert!(!failed.status.success());
    let out = String::from_utf8_lossy(&failed.stdout);
    assert!(
        out.contains("index one_section could not be built and was dropped"),
        "{out}"
    );
    let now = ok(&pith(&["table", "schema", "--db", &db, "packages"]));
    assert!(!now.contains("one_section"), "{now}");
    let verified = ok(&pith(&["table", "verify", "--db", &db, "packages"]));
    assert!(verified.starts_with("ok: 15,860 rows"), "{verified}");
}

/// The converter reproduces the bundled rows from the bundled records.
#[test]
fn the_converter_script_makes_the_bundled_rows() {
    let have = |cmd: &str| {
        std::process::Command::new(cmd)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !have("python3") || !have("zstd") {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 and zstd are needed in CI"
        );
        eprintln!("skipped: python3 or zstd missing");
        return;
    }
    let out = std::process::Command::new("python3")
        .arg(repo("scripts/debian_packages_to_rows.py"))
        .arg(repo("data/debian-sample.jsonl.zst"))
        .output()
        .expect("run the converter");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bundled = std::process::Command::new("zstd")
        .args(["-dc"])
        .arg(repo("data/debian-packages-rows.jsonl.zst"))
        .output()
        .expect("zstd");
    assert!(
        out.stdout == bundled.stdout,
        "the bundled rows are not what the script makes"
    );
}
