//! `pith bench db`: the classic storage-engine workloads, PithDB against
//! real peers, on one real data set, in one process run.
//!
//! For each engine: fills (`fillseq`, `fillrandom` with 1, 3 and 6 threads)
//! into fresh directories, each followed by the engine's full compaction,
//! measuring throughput (of the fill; the compaction's time is reported
//! apart as `settle_seconds`, and the two together as `sustained_rps`:
//! records / (fill seconds + settle seconds)), bytes written to storage per user byte
//! (fill and compaction) and the settled size; then, on the `fillrandom` (1 thread) database, the read
//! workloads under each memory limit: the engine is closed, its files are
//! dropped from the page cache, the process enters a memory cgroup of the
//! given size (page cache included), and the engine reopens with caches
//! sized for the limit. Output: a table with a legend, then one JSON line
//! of the run's figures, last on stdout (`report.rs`); each row's full JSON
//! object (latency CDF, settings) in `results.jsonl` in `--out`, and on
//! stdout too with `--json`.
//!
//! Each read phase runs in a child process (this binary with hidden
//! arguments), which reads the keys, then enters the cgroup, so a limit
//! too small for an engine ends that phase (reported as killed) and not
//! the whole run, and each phase's peak RSS is its own.
//!
//! `readwhilewriting` (as RocksDB's db_bench) gets a phase of its own, on
//! its own fresh copy of the settled database: `--threads` readers of
//! random existing keys at full speed while one more thread overwrites
//! random existing keys at full speed, one record per write, each key with
//! its own value from the data set (so the data and its compressibility
//! stay what was loaded; the records held for this are the first
//! [`REWRITE_POOL_BYTES`] of the data set, so on larger sets the writer
//! overwrites the keys of that prefix only). Its row's latency and QPS figures are the readers';
//! `writer_rps`, `writer_ops`, `writer_p50_us` and `writer_p99_us` are the
//! writer's; then the engine settles (full compaction, as after the fills:
//! `settle_seconds`), and `db_bytes` is the settled size after, `write_amp`
//! the bytes written to storage (run and settle) per key and value byte the
//! writer wrote.

mod charts;
mod engine;
mod report;
pub(crate) mod sys;
mod workload;

use std::path::PathBuf;
use std::time::Duration;

use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::input::Records;
use crate::text::count;
use crate::CliError;
use workload::{Budget, Order, Outcome, Read};

/// `pith bench db` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// Engines, comma-separated: pith, and with --features peers rocksdb,
    /// rocksdb-zstd, lmdb.
    #[arg(long, default_value = "pith")]
    engines: String,
    /// JSON Lines records `{"key","value"}` (.zst ok).
    #[arg(long, default_value = "data/debian-sample.jsonl.zst")]
    dataset: PathBuf,
    /// Workloads, comma-separated: fillseq, fillrandom, readrandom,
    /// readmissing, mixed95, mixed99, scan, readwhilewriting, or all.
    #[arg(long, default_value = "all")]
    workloads: String,
    /// Threads of the read and mixed workloads; the reader threads of
    /// readwhilewriting (which adds one writer thread).
    #[arg(long, default_value_t = 8)]
    threads: usize,
    /// Seconds per read workload.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Operations per read workload (instead of --duration).
    #[arg(long)]
    ops: Option<u64>,
    /// Memory limits for the read phase, comma-separated: none, half (of
    /// the raw data), fifth, or a size such as 64M.
    #[arg(long, default_value = "none")]
    mem_limit: String,
    /// Writer threads of the fillrandom workload, comma-separated.
    #[arg(long, default_value = "1,3,6", value_delimiter = ',')]
    fill_threads: Vec<usize>,
    /// Short run: fillrandom with 1 thread only, 2-second reads.
    #[arg(long)]
    quick: bool,
    /// Where results.jsonl (each row's full JSON object, latency CDF
    /// included) and the SVG charts go.
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
    /// Also print each row's full JSON object (the lines of results.jsonl)
    /// on stdout, after the table. Either way stdout ends with one line, a
    /// JSON object of the run's figures, for scripts.
    #[arg(long)]
    json: bool,
    /// Where the databases are built (a fresh subdirectory; removed after).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Random seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Internal: run one read phase on this database (a child process).
    #[arg(long, hide = true)]
    read_phase_db: Option<PathBuf>,
    /// Internal: the read phase's memory limit in bytes (0: none).
    #[arg(long, hide = true, default_value_t = 0)]
    read_phase_limit: u64,
    /// Internal: the read phase's cache size in bytes.
    #[arg(long, hide = true, default_value_t = 0)]
    read_phase_cache: u64,
}

/// Quantiles written as each row's latency CDF (`[quantile, us]` pairs).
const CDF_QUANTILES: [f64; 16] = [
    0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0,
];

/// One row of the results.
struct Row {
    engine: String,
    workload: String,
    threads: usize,
    outcome: Outcome,
    db_bytes: u64,
    write_amp: Option<f64>,
    peak_rss: u64,
    mem_limit: u64,
    cache_bytes: u64,
    settings: String,
}

impl Row {
    fn json(&self, raw_bytes: u64) -> serde_json::Value {
        let h = &self.outcome.hist;
        let us = |ns: f64| ns / 1000.0;
        let fill = self.workload.starts_with("fill");
        serde_json::json!({
            "engine": self.engine, "workload": self.workload, "threads": self.threads,
            "ops": self.outcome.ops, "seconds": self.outcome.seconds,
            "qps": self.outcome.ops as f64 / self.outcome.seconds.max(1e-9),
            "mb_s": if fill { raw_bytes as f64 / 1e6 / self.outcome.seconds.max(1e-9) } else { 0.0 },
            "mean_us": us(h.mean()), "p50_us": us(h.value_at_quantile(0.5) as f64),
            "p99_us": us(h.value_at_quantile(0.99) as f64), "p999_us": us(h.value_at_quantile(0.999) as f64),
            "max_us": us(h.max() as f64), "stddev_us": us(h.stdev()),
            "latency_unit": if fill { format!("batch of {}", workload::FILL_BATCH) } else { "operation".into() },
            "db_bytes": self.db_bytes, "write_amp": self.write_amp,
            "peak_rss_bytes": self.peak_rss, "mem_limit_bytes": self.mem_limit,
            "cache_bytes": self.cache_bytes, "settings": self.settings,
            "cdf": CDF_QUANTILES.iter().map(|&q| [q, us(h.value_at_quantile(q) as f64)]).collect::<Vec<_>>(),
        })
    }
}

fn io(path: &std::path::Path) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |source| CliError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Bytes of records (key and value) a `readwhilewriting` phase holds for
/// its writer to rewrite.
const REWRITE_POOL_BYTES: u64 = 64 << 20;

/// What the benchmark keeps of the data set.
struct Loaded {
    /// Shuffled distinct keys (for reads).
    keys: Vec<Vec<u8>>,
    /// A sample of values (for the mixed workloads' updates).
    values: Vec<Vec<u8>>,
    /// Records of the data set as they are, up to [`REWRITE_POOL_BYTES`]
    /// (for the writer of `readwhilewriting`; only in its read phase).
    records: Vec<(Vec<u8>, Vec<u8>)>,
    /// Key and value bytes of the data set.
    raw_bytes: u64,
}

/// One pass over the data set.
fn load_keys(args: &Args) -> Result<Loaded, CliError> {
    let mut keys = Vec::new();
    let mut values = Vec::new();
    let mut records = Vec::new();
    let want_records = args.read_phase_db.is_some() && wants(args, READ_WHILE_WRITING);
    let (mut raw_bytes, mut record_bytes) = (0u64, 0u64);
    for (i, r) in Records::open(&args.dataset)?.enumerate() {
        let (k, v) = r?;
        let bytes = (k.len() + v.len()) as u64;
        raw_bytes += bytes;
        if i % 64 == 0 && values.len() < 2048 {
            values.push(v.clone());
        }
        if want_records && record_bytes + bytes <= REWRITE_POOL_BYTES {
            record_bytes += bytes;
            records.push((k.clone(), v));
        }
        keys.push(k);
    }
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: no records",
            args.dataset.display()
        )));
    }
    keys.shuffle(&mut rand::rngs::StdRng::seed_from_u64(args.seed));
    Ok(Loaded {
        keys,
        values,
        records,
        raw_bytes,
    })
}

fn budget(args: &Args) -> Budget {
    match args.ops {
        Some(n) => Budget::Ops(n),
        None => Budget::Time(Duration::from_secs_f64(if args.quick {
            2.0
        } else {
            args.duration
        })),
    }
}

/// The workload that runs in a read phase of its own.
const READ_WHILE_WRITING: &str = "readwhilewriting";

/// Whether `--workloads` asks for `name`.
fn wants(args: &Args, name: &str) -> bool {
    args.workloads == "all" || args.workloads.split(',').any(|w| w.trim() == name)
}

/// The read workloads asked for that share one read phase (all but
/// `readwhilewriting`), in the order they run.
fn read_workloads(args: &Args) -> Vec<(&'static str, Read)> {
    [
        ("readrandom", Read::Random),
        ("readmissing", Read::Missing),
        ("mixed95", Read::Mixed(95)),
        ("mixed99", Read::Mixed(99)),
        ("scan", Read::Scan),
    ]
    .into_iter()
    .filter(|(n, _)| wants(args, n))
    .collect()
}

/// The child side: evict, limit, open, run the read workloads, print rows.
fn read_phase(args: &Args, dir: &std::path::Path, data: &Loaded) -> Result<(), CliError> {
    let (keys, values, raw_bytes) = (&data.keys, &data.values, data.raw_bytes);
    let name = args.engines.trim();
    sys::evict(dir);
    let limit = args.read_phase_limit;
    // The harness's own memory is made before the limit applies (see
    // `workload::Histograms`): the reader threads' histograms (returned
    // after each workload), each workload's merged one and the writer's.
    let mut hists = workload::Histograms::new(
        args.threads
            + read_workloads(args).len()
            + 2 * usize::from(wants(args, READ_WHILE_WRITING)),
    );
    let guard = if limit > 0 {
        match sys::MemoryLimit::enter(limit) {
            Ok(g) => {
                eprintln!(
                    "{name}: memory limited to {} (page cache included) by a cgroup v{} child group",
                    report::limit_text(limit),
                    g.version
                );
                Some(g)
            }
            Err(e) => {
                eprintln!(
                    "{name}: cannot limit memory to {} ({e}); running this phase unlimited",
                    report::limit_text(limit)
                );
                None
            }
        }
    } else {
        None
    };
    let effective = guard.as_ref().map_or(0, |g| g.bytes);
    let memtable = if limit > 0 {
        (limit / 8).clamp(1 << 20, 64 << 20)
    } else {
        64 << 20
    };
    let db = engine::open(name, dir, args.read_phase_cache, memtable, limit > 0)?;
    for (workload, kind) in read_workloads(args) {
        eprintln!(
            "{name}: {workload}, {}, memory limit {}",
            count(args.threads, "thread"),
            report::limit_text(effective)
        );
        sys::reset_peak_rss();
        let outcome = workload::read(
            db.as_ref(),
            keys,
            values,
            kind,
            args.threads,
            budget(args),
            args.seed,
            &mut hists,
        )?;
        let row = Row {
            engine: name.to_string(),
            workload: workload.to_string(),
            threads: args.threads,
            outcome,
            db_bytes: sys::dir_bytes(dir),
            write_amp: None,
            peak_rss: sys::peak_rss_bytes(),
            mem_limit: effective,
            cache_bytes: args.read_phase_cache,
            settings: db.settings(),
        };
        println!("ROW {}", row.json(raw_bytes));
    }
    if wants(args, READ_WHILE_WRITING) {
        let row = read_while_writing(args, db.as_ref(), dir, data, effective, &mut hists)?;
        println!("ROW {row}");
    }
    drop(db);
    drop(guard);
    Ok(())
}

/// Runs `readwhilewriting` on the open database, then settles it; returns
/// the row.
fn read_while_writing(
    args: &Args,
    db: &dyn engine::Engine,
    dir: &std::path::Path,
    data: &Loaded,
    mem_limit: u64,
    hists: &mut workload::Histograms,
) -> Result<serde_json::Value, CliError> {
    let name = args.engines.trim();
    eprintln!(
        "{name}: {READ_WHILE_WRITING}, {} and one writer",
        count(args.threads, "reader thread")
    );
    sys::reset_peak_rss();
    let written = sys::write_bytes();
    let run = workload::read_while_writing(
        db,
        &data.keys,
        &data.records,
        args.threads,
        budget(args),
        args.seed,
        hists,
    )?;
    // On stderr before the settle, so a phase killed while settling (a
    // memory limit) still shows what the run measured.
    eprintln!(
        "{name}: {READ_WHILE_WRITING}: {:.0} reads/s, writer {:.0} records/s; settling",
        run.readers.ops as f64 / run.readers.seconds.max(1e-9),
        run.writer.ops as f64 / run.writer.seconds.max(1e-9)
    );
    let t = std::time::Instant::now();
    db.settle()?;
    let settle_seconds = t.elapsed().as_secs_f64();
    let write_amp =
        sys::write_bytes().saturating_sub(written) as f64 / run.written_bytes.max(1) as f64;
    let writer = &run.writer;
    let us = |q: f64| writer.hist.value_at_quantile(q) as f64 / 1000.0;
    let (writer_p50, writer_p99) = (us(0.5), us(0.99));
    let writer_rps = writer.ops as f64 / writer.seconds.max(1e-9);
    let writer_ops = writer.ops;
    let row = Row {
        engine: name.to_string(),
        workload: READ_WHILE_WRITING.to_string(),
        threads: args.threads,
        outcome: run.readers,
        db_bytes: sys::dir_bytes(dir),
        write_amp: Some(write_amp),
        peak_rss: sys::peak_rss_bytes(),
        mem_limit,
        cache_bytes: args.read_phase_cache,
        settings: db.settings(),
    };
    let mut j = row.json(data.raw_bytes);
    j["writer_ops"] = serde_json::json!(writer_ops);
    j["writer_rps"] = serde_json::json!(writer_rps);
    j["writer_p50_us"] = serde_json::json!(writer_p50);
    j["writer_p99_us"] = serde_json::json!(writer_p99);
    j["settle_seconds"] = serde_json::json!(settle_seconds);
    Ok(j)
}

/// Runs the benchmark.
pub fn run(args: &Args) -> Result<(), CliError> {
    let engines: Vec<String> = args
        .engines
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    for e in &engines {
        if !engine::available().contains(&e.as_str()) {
            return Err(CliError::Usage(format!(
                "unknown engine {e:?}; this build has {} (peers need: cargo build --release -p pith-cli --features peers)",
                engine::available().join(", ")
            )));
        }
    }
    let all = [
        "fillseq",
        "fillrandom",
        "readrandom",
        "readmissing",
        "mixed95",
        "mixed99",
        "scan",
        READ_WHILE_WRITING,
    ];
    let workloads: Vec<&str> = if args.workloads == "all" {
        all.to_vec()
    } else {
        args.workloads.split(',').map(str::trim).collect()
    };
    if let Some(w) = workloads.iter().find(|w| !all.contains(w)) {
        return Err(CliError::Usage(format!(
            "unknown workload {w:?}; known: {}",
            all.join(", ")
        )));
    }
    if args.threads == 0 || args.fill_threads.contains(&0) {
        return Err(CliError::Usage(
            "--threads and --fill-threads must be at least 1".into(),
        ));
    }

    let data = load_keys(args)?;
    if let Some(dir) = &args.read_phase_db {
        return read_phase(args, dir, &data);
    }
    let (keys, raw_bytes) = (&data.keys, data.raw_bytes);
    let limits: Vec<(String, u64)> = args
        .mem_limit
        .split(',')
        .map(|s| match s.trim() {
            "none" | "unlimited" => Ok(("none".to_string(), 0)),
            "half" => Ok(("half".to_string(), raw_bytes / 2)),
            "fifth" => Ok(("fifth".to_string(), raw_bytes / 5)),
            other => sys::parse_size(other)
                .map(|b| (other.to_string(), b))
                .map_err(CliError::Usage),
        })
        .collect::<Result<_, _>>()?;
    eprintln!(
        "{}; engines {}",
        report::title(args, keys.len(), raw_bytes),
        engines.join(",")
    );
    let base = match &args.dir {
        Some(d) => d.join(format!("pith-bench-{}", std::process::id())),
        None => std::env::temp_dir().join(format!("pith-bench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&base).map_err(io(&base))?;
    let result = run_engines(args, &engines, &workloads, raw_bytes, &limits, &base);
    let _ = std::fs::remove_dir_all(&base);
    let rows = result?;
    report::report(args, &rows, keys.len(), raw_bytes)
}

fn run_engines(
    args: &Args,
    engines: &[String],
    workloads: &[&str],
    raw_bytes: u64,
    limits: &[(String, u64)],
    base: &std::path::Path,
) -> Result<Vec<serde_json::Value>, CliError> {
    let mut rows = Vec::new();
    let fill_threads: &[usize] = if args.quick { &[1] } else { &args.fill_threads };
    let mut fills: Vec<(&str, Order, usize)> = Vec::new();
    if workloads.contains(&"fillseq") && !args.quick {
        fills.push(("fillseq", Order::Sequential, 1));
    }
    if workloads.contains(&"fillrandom") {
        fills.extend(
            fill_threads
                .iter()
                .map(|&t| ("fillrandom", Order::Random, t)),
        );
    }
    let reads: Vec<&str> = read_workloads(args).into_iter().map(|r| r.0).collect();
    // Each read phase: its workloads, comma-separated (a child process's
    // --workloads). readwhilewriting has its own, on its own copy.
    let mut phases = Vec::new();
    if !reads.is_empty() {
        phases.push(reads.join(","));
    }
    if wants(args, READ_WHILE_WRITING) {
        phases.push(READ_WHILE_WRITING.to_string());
    }
    // The read phases need a loaded database even if no fill is reported.
    if !phases.is_empty() && !fills.iter().any(|f| f.1 == Order::Random && f.2 == 1) {
        fills.push(("load", Order::Random, 1));
    }
    let unlimited_cache = raw_bytes.max(8 << 20);
    for name in engines {
        let mut read_dir = None;
        for (i, &(workload, order, threads)) in fills.iter().enumerate() {
            let dir = base.join(format!("{name}-{i}"));
            eprintln!("{name}: {workload} with {}", count(threads, "thread"));
            let db = engine::open(name, &dir, unlimited_cache, 64 << 20, false)?;
            sys::reset_peak_rss();
            let written = sys::write_bytes();
            let outcome = workload::fill(db.as_ref(), &args.dataset, order, threads, args.seed)?;
            let t = std::time::Instant::now();
            db.settle()?;
            let settle_seconds = t.elapsed().as_secs_f64();
            let settings = db.settings();
            drop(db);
            let write_amp = (sys::write_bytes() - written) as f64 / raw_bytes.max(1) as f64;
            // Records per second of ingest counting the compaction that
            // makes them settled: what a writer can keep up, not a burst.
            let sustained_rps = outcome.ops as f64 / (outcome.seconds + settle_seconds).max(1e-9);
            if workload != "load" {
                let row = Row {
                    engine: name.clone(),
                    workload: workload.to_string(),
                    threads,
                    outcome,
                    db_bytes: sys::dir_bytes(&dir),
                    write_amp: Some(write_amp),
                    peak_rss: sys::peak_rss_bytes(),
                    mem_limit: 0,
                    cache_bytes: unlimited_cache,
                    settings,
                };
                let mut j = row.json(raw_bytes);
                j["settle_seconds"] = serde_json::json!(settle_seconds);
                j["sustained_rps"] = serde_json::json!(sustained_rps);
                rows.push(j);
            }
            if read_dir.is_none() && order == Order::Random && threads == 1 {
                read_dir = Some(dir);
            } else {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        let Some(dir) = read_dir else { continue };
        for (limit_name, limit) in limits {
            let cache = if *limit == 0 {
                unlimited_cache
            } else {
                (limit / 4).max(1 << 20)
            };
            // Each phase starts from a copy of the settled database: the
            // mixed workloads of one phase must not leave a log for the
            // next phase to replay inside its memory limit, nor
            // readwhilewriting start from their writes.
            for workloads in &phases {
                let copy = base.join(format!("{name}-phase"));
                copy_dir(&dir, &copy)?;
                let phase =
                    spawn_read_phase(args, name, workloads, &copy, *limit, cache, limit_name);
                let _ = std::fs::remove_dir_all(&copy);
                rows.extend(phase?);
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(rows)
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> Result<(), CliError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for e in std::fs::read_dir(from).map_err(io(from))? {
        let e = e.map_err(io(from))?;
        let target = to.join(e.file_name());
        if e.file_type().map_err(io(from))?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), &target).map_err(io(&target))?;
        }
    }
    Ok(())
}

/// Runs one read phase (`workloads`, comma-separated) in a child process
/// and collects its rows.
fn spawn_read_phase(
    args: &Args,
    name: &str,
    workloads: &str,
    dir: &std::path::Path,
    limit: u64,
    cache: u64,
    limit_name: &str,
) -> Result<Vec<serde_json::Value>, CliError> {
    let exe = std::env::current_exe().map_err(io(std::path::Path::new("current executable")))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "bench",
        "db",
        "--engines",
        name,
        "--workloads",
        workloads,
        "--threads",
        &args.threads.to_string(),
    ])
    .arg("--dataset")
    .arg(&args.dataset)
    .args([
        "--duration",
        &args.duration.to_string(),
        "--seed",
        &args.seed.to_string(),
    ])
    .arg("--read-phase-db")
    .arg(dir)
    .args([
        "--read-phase-limit",
        &limit.to_string(),
        "--read-phase-cache",
        &cache.to_string(),
    ])
    .stdout(std::process::Stdio::piped());
    if let Some(ops) = args.ops {
        cmd.args(["--ops", &ops.to_string()]);
    }
    if args.quick {
        cmd.arg("--quick");
    }
    let child = cmd.spawn().map_err(io(dir))?;
    let pid = child.id();
    let out = child.wait_with_output().map_err(io(dir));
    sys::remove_group_of(pid);
    let out = out?;
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("ROW "))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if !out.status.success() {
        eprintln!(
            "{name}: the read phase with memory limit {limit_name} ended early ({}); {} measured{}",
            out.status,
            count(rows.len(), "workload"),
            if limit > 0 {
                ", likely killed by the cgroup's out-of-memory killer"
            } else {
                ""
            }
        );
        let mut rows = rows;
        rows.push(
            serde_json::json!({"engine": name, "workload": "read phase", "mem_limit_bytes": limit,
            "error": format!("child process ended: {}", out.status)}),
        );
        return Ok(rows);
    }
    Ok(rows)
}
