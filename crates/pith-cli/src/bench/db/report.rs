//! The report of `pith bench db` on stdout, and its files in `--out`.
//!
//! Stdout, in this order: a title (data set, read budget), the table (units
//! in its header), a legend for what the header cannot say, the ratio lines
//! of PithDB to each peer, with `--json` each row's full JSON object (the
//! lines of `results.jsonl`, latency CDFs included), and last one compact
//! JSON object of the run's figures (per row and per ratio), which CI and
//! scripts read. `results.jsonl` and the SVG charts go to `--out`.
//!
//! Rows are the JSON objects the phases produced (`Row::json` plus the
//! fields fills and `readwhilewriting` add); a row with an `error` field is
//! a read phase that ended early.

use serde_json::Value;

use super::workload::{Budget, FILL_BATCH, SCAN_LEN};
use super::{budget, charts, io, Args};
use crate::text::count;
use crate::CliError;

/// Fields of a row that the final summary line keeps (when present): the
/// figures of the table and of the lines under it, not the CDF.
const SUMMARY_FIELDS: [&str; 19] = [
    "engine",
    "workload",
    "threads",
    "mem_limit_bytes",
    "qps",
    "latency_unit",
    "mean_us",
    "p50_us",
    "p99_us",
    "p999_us",
    "db_bytes",
    "write_amp",
    "peak_rss_bytes",
    "settle_seconds",
    "sustained_rps",
    "writer_rps",
    "writer_p50_us",
    "writer_p99_us",
    "error",
];

/// The memory limit as the table shows it: `none`, or mebibytes (the unit
/// `--mem-limit` reads `32M` in).
pub fn limit_cell(bytes: u64) -> String {
    if bytes == 0 {
        "none".into()
    } else if bytes.is_multiple_of(1 << 20) {
        format!("{}", bytes >> 20)
    } else {
        format!("{:.1}", bytes as f64 / (1u64 << 20) as f64)
    }
}

/// The memory limit in a sentence: `none`, or `32 MiB`.
pub fn limit_text(bytes: u64) -> String {
    match limit_cell(bytes) {
        none if bytes == 0 => none,
        mib => format!("{mib} MiB"),
    }
}

/// What one latency sample of `workload` times (the table's `latency per`).
pub fn latency_per(workload: &str) -> String {
    match workload {
        w if w.starts_with("fill") => format!("{FILL_BATCH} puts"),
        w if w.starts_with("mixed") => "get or put".into(),
        "scan" => format!("scan of {SCAN_LEN}"),
        _ => "get".into(),
    }
}

/// PithDB's figures over a peer's on one workload, threads and limit.
struct Ratio {
    peer: String,
    workload: String,
    threads: usize,
    mem_limit: u64,
    qps: f64,
    p99: f64,
    size: f64,
    writer: Option<f64>,
    /// Fills: the sustained rates' ratio (fill and settle), the figure a
    /// fill is judged on; `qps` is the fill alone.
    sustained: Option<f64>,
}

fn f(j: &Value, k: &str) -> f64 {
    j[k].as_f64().unwrap_or(0.0)
}

fn text<'a>(j: &'a Value, k: &str) -> &'a str {
    j[k].as_str().unwrap_or("?")
}

fn ratios(rows: &[Value]) -> Vec<Ratio> {
    let key = |j: &Value| {
        (
            j["workload"].to_string(),
            j["threads"].to_string(),
            j["mem_limit_bytes"].to_string(),
        )
    };
    let engine = |j: &Value| j["engine"].as_str().unwrap_or("").to_string();
    let peers: std::collections::BTreeSet<String> =
        rows.iter().map(engine).filter(|e| e != "pith").collect();
    let mut out = Vec::new();
    for peer in peers {
        for r in rows
            .iter()
            .filter(|r| engine(r) == "pith" && r["error"].is_null())
        {
            let Some(p) = rows
                .iter()
                .find(|p| engine(p) == peer && key(p) == key(r) && p["error"].is_null())
            else {
                continue;
            };
            out.push(Ratio {
                peer: peer.clone(),
                workload: text(r, "workload").to_string(),
                threads: f(r, "threads") as usize,
                mem_limit: f(r, "mem_limit_bytes") as u64,
                qps: f(r, "qps") / f(p, "qps").max(1e-9),
                p99: f(r, "p99_us") / f(p, "p99_us").max(1e-9),
                size: f(r, "db_bytes") / f(p, "db_bytes").max(1.0),
                writer: (!r["writer_rps"].is_null())
                    .then(|| f(r, "writer_rps") / f(p, "writer_rps").max(1e-9)),
                sustained: (!r["sustained_rps"].is_null())
                    .then(|| f(r, "sustained_rps") / f(p, "sustained_rps").max(1e-9)),
            });
        }
    }
    out
}

/// The table's header and rows (and the lines under a row for its settle
/// and writer figures).
fn table(rows: &[Value]) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<13} {:<16} {:>7} {:>9} {:>11}  {:<11} {:>9} {:>9} {:>9} {:>10} {:>8} {:>6} {:>8}",
        "engine",
        "workload",
        "threads",
        "limit MiB",
        "ops/s",
        "latency per",
        "mean us",
        "p50 us",
        "p99 us",
        "p99.9 us",
        "db MB",
        "w-amp",
        "rss MB"
    )];
    for j in rows {
        if let Some(e) = j["error"].as_str() {
            lines.push(format!(
                "{:<13} {:<16} {:>7} {:>9}  {e}",
                text(j, "engine"),
                text(j, "workload"),
                "",
                limit_cell(f(j, "mem_limit_bytes") as u64)
            ));
            continue;
        }
        lines.push(format!(
            "{:<13} {:<16} {:>7} {:>9} {:>11.0}  {:<11} {:>9.1} {:>9.1} {:>9.1} {:>10.1} {:>8.2} {:>6} {:>8.1}",
            text(j, "engine"),
            text(j, "workload"),
            f(j, "threads"),
            limit_cell(f(j, "mem_limit_bytes") as u64),
            f(j, "qps"),
            latency_per(text(j, "workload")),
            f(j, "mean_us"),
            f(j, "p50_us"),
            f(j, "p99_us"),
            f(j, "p999_us"),
            f(j, "db_bytes") / 1e6,
            j["write_amp"].as_f64().map_or("-".to_string(), |w| format!("{w:.2}")),
            f(j, "peak_rss_bytes") / 1e6
        ));
        let indent = " ".repeat(13 + 1 + 16 + 1);
        if let Some(writer) = j["writer_rps"].as_f64() {
            lines.push(format!(
                "{indent}writer {writer:.0} records/s (p50 {:.1} us, p99 {:.1} us per put), then {:.2} s settling to {:.2} MB",
                f(j, "writer_p50_us"),
                f(j, "writer_p99_us"),
                f(j, "settle_seconds"),
                f(j, "db_bytes") / 1e6
            ));
        }
        if let Some(sustained) = j["sustained_rps"].as_f64() {
            lines.push(format!(
                "{indent}sustained {sustained:.0} records/s (the fill, then {:.2} s settling)",
                f(j, "settle_seconds")
            ));
        }
    }
    lines
}

/// The legend under the table: one line for each column or figure the
/// header does not explain, the ones for figures absent from `rows` left
/// out.
fn legend(rows: &[Value], ratios: &[Ratio]) -> Vec<String> {
    let has = |field: &str| rows.iter().any(|j| !j[field].is_null());
    let mut entries = vec![
        ("ops/s", "operations per second, all threads together: records written (fills: the writes alone, timed after the data set is read and parsed, the settle not counted), gets, gets and puts (mixed), scans (scan)".to_string()),
        ("latency per", format!("what one latency sample times: a write batch of {FILL_BATCH} records (fills), one get, one get or put (mixed95 and mixed99: 95% and 99% gets), one scan of {SCAN_LEN} records from a random existing key")),
        ("mean..p99.9", "latency of one sample (see latency per) in microseconds: mean, median (p50), 99th and 99.9th percentile".into()),
        ("limit MiB", "memory limit of the read phase (a cgroup, page cache included; MiB = 2^20 bytes); none: no limit (fills always run without one)".into()),
        ("db MB", "size of the database directory (MB = 10^6 bytes) when the row's workload ended: fills after their settle; the read rows under one limit share one copy of the settled fillrandom database, so rows after mixed95 or mixed99 include their puts (log, unmerged files); readwhilewriting on a copy of its own, after its settle".into()),
        ("w-amp", "bytes written to storage per key and value byte written (fills: the fill and its settle; readwhilewriting: the writer's run and the settle); -: not measured (the other read workloads)".into()),
        ("rss MB", "peak resident memory of the process during the workload (each read phase runs in a child process of its own)".into()),
    ];
    if has("sustained_rps") {
        entries.push((
            "sustained",
            "records / (fill seconds + settle seconds): the write rate once compaction is counted"
                .into(),
        ));
    }
    if has("settle_seconds") {
        entries.push((
            "settling",
            "the engine's full compaction after a fill or after readwhilewriting".into(),
        ));
    }
    if has("writer_rps") {
        entries.push(("writer", "readwhilewriting's one writer thread (one record per put, at full speed); the row's other figures are its reader threads'".into()));
    }
    if !ratios.is_empty() {
        entries.push(("pith / PEER", "PithDB's figure over the peer's on the same workload, threads and limit: qps above 1x, p99 and size below 1x favour PithDB".into()));
    }
    let mut lines = vec!["legend:".to_string()];
    lines.extend(
        entries
            .into_iter()
            .map(|(name, meaning)| format!("  {name:<12} {meaning}")),
    );
    lines
}

fn ratio_lines(ratios: &[Ratio]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut peer = "";
    for r in ratios {
        if r.peer != peer {
            peer = &r.peer;
            lines.push(format!("pith / {peer}:"));
        }
        let limit = limit_text(r.mem_limit);
        let writer = r
            .writer
            .map_or(String::new(), |w| format!(", writer {w:.2}x"));
        let (qps, sustained) = match r.sustained {
            Some(s) => ("fill qps", format!(", sustained {s:.2}x")),
            None => ("qps", String::new()),
        };
        lines.push(format!(
            "  {:<16} {}, limit {limit}: {qps} {:.2}x{sustained}, p99 {:.2}x, size {:.2}x{writer}",
            r.workload,
            count(r.threads, "thread"),
            r.qps,
            r.p99,
            r.size
        ));
    }
    lines
}

/// The last line of stdout: the run and each row's figures, the ratios.
fn summary(args: &Args, rows: &[Value], ratios: &[Ratio], keys: usize, raw_bytes: u64) -> Value {
    let (read_seconds, read_ops) = match budget(args) {
        Budget::Time(d) => (Some(d.as_secs_f64()), None),
        Budget::Ops(n) => (None, Some(n)),
    };
    let rows: Vec<Value> = rows
        .iter()
        .map(|j| {
            let kept = SUMMARY_FIELDS
                .iter()
                .filter(|k| !j[**k].is_null())
                .map(|k| (k.to_string(), j[*k].clone()));
            Value::Object(kept.collect())
        })
        .collect();
    let ratios: Vec<Value> = ratios
        .iter()
        .map(|r| {
            serde_json::json!({"peer": r.peer, "workload": r.workload, "threads": r.threads,
                "mem_limit_bytes": r.mem_limit, "qps": r.qps, "p99": r.p99, "size": r.size,
                "writer": r.writer, "sustained": r.sustained})
        })
        .collect();
    serde_json::json!({
        "bench": "db", "dataset": args.dataset.display().to_string(), "keys": keys,
        "raw_bytes": raw_bytes, "read_threads": args.threads, "read_seconds": read_seconds,
        "read_ops": read_ops, "results": args.out.join("results.jsonl").display().to_string(),
        "rows": rows, "ratios": ratios,
    })
}

/// The title line: what the run read and how long each read workload ran.
pub fn title(args: &Args, keys: usize, raw_bytes: u64) -> String {
    let each = match budget(args) {
        Budget::Time(d) => format!("{} s each", d.as_secs_f64()),
        Budget::Ops(n) => format!("{} each", count(n as usize, "operation")),
    };
    format!(
        "pith bench db: {} ({}, {:.1} MB of keys and values); read workloads {each}, {}",
        args.dataset.display(),
        count(keys, "key"),
        raw_bytes as f64 / 1e6,
        count(args.threads, "thread")
    )
}

/// Prints the report and writes `results.jsonl` and the charts.
pub fn report(args: &Args, rows: &[Value], keys: usize, raw_bytes: u64) -> Result<(), CliError> {
    let ratios = ratios(rows);
    println!("{}", title(args, keys, raw_bytes));
    for line in table(rows)
        .into_iter()
        .chain(legend(rows, &ratios))
        .chain(ratio_lines(&ratios))
    {
        println!("{line}");
    }
    std::fs::create_dir_all(&args.out).map_err(io(&args.out))?;
    let path = args.out.join("results.jsonl");
    let text: String = rows.iter().map(|j| format!("{j}\n")).collect();
    std::fs::write(&path, &text).map_err(io(&path))?;
    let charts = charts::write(&args.out, rows).map_err(io(&args.out))?;
    eprintln!(
        "results: {} and {} charts ({}) in {}",
        path.display(),
        charts.len(),
        charts.join(", "),
        args.out.display()
    );
    if args.json {
        print!("{text}");
    }
    println!("{}", summary(args, rows, &ratios, keys, raw_bytes));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{latency_per, legend, limit_cell, limit_text, ratio_lines, ratios, table};

    #[test]
    fn no_limit_reads_none_and_limits_read_in_mebibytes() {
        assert_eq!(limit_cell(0), "none");
        assert_eq!(limit_cell(32 << 20), "32");
        assert_eq!(limit_cell(6_436_980), "6.1");
        assert_eq!(limit_text(0), "none");
        assert_eq!(limit_text(32 << 20), "32 MiB");
    }

    #[test]
    fn latency_unit_names_the_batch_and_the_scan_length() {
        assert_eq!(latency_per("fillrandom"), "64 puts");
        assert_eq!(latency_per("fillseq"), "64 puts");
        assert_eq!(latency_per("readrandom"), "get");
        assert_eq!(latency_per("readwhilewriting"), "get");
        assert_eq!(latency_per("mixed95"), "get or put");
        assert_eq!(latency_per("scan"), "scan of 100");
    }

    #[test]
    fn table_and_legend_explain_a_fill_row() {
        let row = serde_json::json!({"engine": "pith", "workload": "fillrandom", "threads": 1,
            "mem_limit_bytes": 0, "qps": 1000.0, "p50_us": 2.0, "db_bytes": 3_000_000,
            "write_amp": 1.5, "settle_seconds": 0.5, "sustained_rps": 800.0});
        let table = table(std::slice::from_ref(&row)).join("\n");
        assert!(table.contains("64 puts"), "{table}");
        assert!(table.contains(" none "), "{table}");
        assert!(table.contains("sustained 800 records/s"), "{table}");
        let legend = legend(&[row], &[]).join("\n");
        for name in ["latency per", "db MB", "limit MiB", "sustained", "settling"] {
            assert!(legend.contains(&format!("  {name} ")), "{name}: {legend}");
        }
        assert!(!legend.contains("  writer "), "{legend}");
    }

    #[test]
    fn a_fill_is_compared_on_its_sustained_rate_too() {
        let row = |engine: &str, qps: f64, sustained: f64| {
            serde_json::json!({"engine": engine, "workload": "fillrandom", "threads": 1,
                "mem_limit_bytes": 0, "qps": qps, "p99_us": 10.0, "db_bytes": 1_000_000,
                "sustained_rps": sustained})
        };
        let read = serde_json::json!({"engine": "pith", "workload": "readrandom", "threads": 8,
            "mem_limit_bytes": 0, "qps": 300.0, "p99_us": 5.0, "db_bytes": 1_000_000});
        let mut peer_read = read.clone();
        peer_read["engine"] = "rocksdb".into();
        let rows = [
            row("pith", 1050.0, 500.0),
            row("rocksdb", 1000.0, 1000.0),
            read,
            peer_read,
        ];
        let ratios = ratios(&rows);
        let lines = ratio_lines(&ratios).join("\n");
        assert!(lines.contains("fill qps 1.05x, sustained 0.50x"), "{lines}");
        assert!(lines.contains("limit none: qps 1.00x, p99"), "{lines}");
        assert_eq!(ratios[0].sustained, Some(0.5));
        assert_eq!(ratios[1].sustained, None);
    }
}
