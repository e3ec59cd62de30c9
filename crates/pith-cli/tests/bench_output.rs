//! `pith bench db --quick` end to end, through the built binary, on a small
//! generated data set: stdout is a table that explains itself (units, a
//! legend, `none` for no memory limit, singular and plural right) and ends
//! with one JSON line of figures; the rows' long JSON objects come to
//! stdout only with `--json` (they are always in `--out`).

use std::path::Path;
use std::process::Output;

mod common;
use common::{pith, text};

/// Writes `n` JSON Lines records shaped like the bundled sample's (package
/// keys, JSON values of a few hundred bytes).
fn dataset(path: &Path, n: usize) {
    let mut text = String::new();
    for i in 0..n {
        let value = format!(
            "{{\"Package\":\"pkg{i}\",\"Version\":\"1.{}.{}\",\"Depends\":\"libc6 (>= 2.{}), libpkg{}\",\"Description\":\"package number {i} of the test set, with some text to compress\"}}",
            i % 7,
            i % 13,
            i % 30,
            i % 50
        );
        let record = serde_json::json!({"key": format!("pkg{i:05}/1.{}", i % 7), "value": value});
        text.push_str(&format!("{record}\n"));
    }
    std::fs::write(path, text).expect("write the data set");
}

fn bench_db(dir: &Path, extra: &[&str]) -> Output {
    let data = dir.join("data.jsonl");
    if !data.exists() {
        dataset(&data, 2000);
    }
    let out = dir.join("out");
    let mut args: Vec<std::ffi::OsString> = [
        "bench",
        "db",
        "--quick",
        "--threads",
        "1",
        "--ops",
        "300",
        "--dataset",
    ]
    .iter()
    .map(Into::into)
    .collect();
    args.extend([
        data.into_os_string(),
        "--out".into(),
        out.into_os_string(),
        "--dir".into(),
        dir.into(),
    ]);
    args.extend(extra.iter().map(Into::into));
    pith(&args)
}

/// Whether `line` is a JSON object.
fn is_json(line: &str) -> bool {
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(line).is_ok()
}

#[test]
fn table_explains_itself_and_ends_with_one_json_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let o = bench_db(
        dir.path(),
        &["--workloads", "fillrandom,readrandom,scan,readwhilewriting"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();

    let last = lines.last().copied().unwrap_or_default();
    let summary: serde_json::Value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("last line: {e}\n{}", text(&o)));
    assert_eq!(summary["bench"], "db", "{}", text(&o));
    let rows = summary["rows"].as_array().expect("rows in the summary");
    assert_eq!(rows.len(), 4, "{}", text(&o));
    assert!(
        rows.iter().all(|r| r.get("cdf").is_none()),
        "the summary carries no CDF\n{}",
        text(&o)
    );
    let json_lines = lines.iter().filter(|l| is_json(l)).count();
    assert_eq!(
        json_lines,
        1,
        "without --json only the last line is JSON\n{}",
        text(&o)
    );

    for header in ["limit MiB", "ops/s", "latency per", "p99 us", "db MB"] {
        assert!(stdout.contains(header), "{header}\n{}", text(&o));
    }
    assert!(lines.iter().any(|l| l.trim() == "legend:"), "{}", text(&o));
    for entry in [
        "latency per",
        "db MB",
        "limit MiB",
        "w-amp",
        "sustained",
        "writer",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("  {entry} "))),
            "no legend line for {entry}\n{}",
            text(&o)
        );
    }
    let fill = lines
        .iter()
        .find(|l| l.starts_with("pith") && l.contains("fillrandom"))
        .unwrap_or_else(|| panic!("no fillrandom row\n{}", text(&o)));
    assert!(fill.contains(" none "), "{fill}");
    assert!(fill.contains("64 puts"), "{fill}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("pith") && l.contains("scan of 100")),
        "{}",
        text(&o)
    );

    let all = text(&o);
    for wrong in [
        "1 threads",
        "1 segments",
        "1 keys",
        "1 workloads",
        "limit MB",
    ] {
        assert!(!all.contains(wrong), "{wrong:?} in\n{all}");
    }
    assert!(all.contains("1 thread"), "{all}");
    assert!(dir.path().join("out/results.jsonl").exists(), "{all}");
}

#[test]
fn json_flag_adds_the_rows_before_the_summary() {
    let dir = tempfile::tempdir().expect("temp dir");
    let o = bench_db(dir.path(), &["--workloads", "readrandom", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let json: Vec<serde_json::Value> = stdout
        .lines()
        .filter(|l| is_json(l))
        .map(|l| serde_json::from_str(l).expect("parsed above"))
        .collect();
    assert_eq!(json.len(), 2, "one row and the summary\n{}", text(&o));
    assert_eq!(json[0]["workload"], "readrandom", "{}", text(&o));
    assert!(json[0]["cdf"].is_array(), "{}", text(&o));
    assert_eq!(json[1]["bench"], "db", "{}", text(&o));
    let last = stdout.lines().last().unwrap_or_default();
    assert!(is_json(last) && last.contains("\"bench\":\"db\""), "{last}");
}
