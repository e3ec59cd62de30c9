//! `pith bench get`: point-read latency of a loaded database, one thread.
//!
//! Samples up to `--keys` existing keys (a strided pass over the database),
//! shuffles them, and times `get` one call at a time (present keys), then
//! the same keys with a byte appended (absent keys). Nothing is cached by
//! the engine; the OS page cache holds whatever the files' size allows.
//! The comparison with RocksDB and other peers is `pith bench db` (issue 5).

use std::path::PathBuf;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::stats::Summary;
use crate::text::count;
use crate::CliError;

/// `pith bench get` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// Database directory (load one with `pith load`).
    #[arg(long)]
    db: PathBuf,
    /// Keys sampled for the reads.
    #[arg(long, default_value_t = 100_000)]
    keys: usize,
    /// Timed reads of present keys (and as many of absent ones).
    #[arg(long, default_value_t = 200_000)]
    ops: usize,
    /// Shuffle seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

fn time(keys: &[Vec<u8>], ops: usize, db: &pith::DB) -> Result<(f64, f64, usize), CliError> {
    let mut samples = Vec::with_capacity(ops);
    let mut found = 0;
    for k in keys.iter().cycle().take(ops) {
        let t = Instant::now();
        let v = db.get(k)?;
        samples.push(t.elapsed().as_nanos() as f64);
        found += usize::from(std::hint::black_box(v).is_some());
    }
    samples.sort_by(f64::total_cmp);
    let p99 = samples[(samples.len() - 1) * 99 / 100];
    Ok((Summary::of(&mut samples).median, p99, found))
}

/// Runs the benchmark.
pub fn run(args: &Args) -> Result<(), CliError> {
    let db = pith::DB::open_read_only(&args.db, pith::Options::default())?;
    let stats = db.stats()?;
    let total = stats.total(|s| s.keys).max(1) as usize;
    let stride = total.div_ceil(args.keys.max(1));
    let mut keys = Vec::new();
    for (i, kv) in db.range(None, None).enumerate() {
        let (k, _) = kv?;
        if i % stride == 0 {
            keys.push(k);
        }
    }
    if keys.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: the database is empty",
            args.db.display()
        )));
    }
    keys.shuffle(&mut rand::rngs::StdRng::seed_from_u64(args.seed));
    let ops = args.ops.max(1);
    // Warm the page cache and the branch predictors with one pass.
    time(&keys, keys.len().min(ops), &db)?;
    let (p50, p99, found) = time(&keys, ops, &db)?;
    let absent: Vec<Vec<u8>> = keys
        .iter()
        .map(|k| [k.as_slice(), b"\x01"].concat())
        .collect();
    let (miss50, miss99, false_found) = time(&absent, ops, &db)?;
    if found != ops || false_found != 0 {
        return Err(CliError::Usage(format!(
            "wrong answers: {found} of {ops} present keys found, {false_found} absent keys found"
        )));
    }
    println!(
        "pith bench get: {} ({}, {}): present p50 {p50:.0} ns, p99 {p99:.0} ns; absent p50 {miss50:.0} ns, p99 {miss99:.0} ns",
        args.db.display(),
        count(stats.segments.len(), "segment"),
        count(total, "key")
    );
    println!(
        "  one get timed alone, one thread: {} of {} sampled present keys, then as many absent ones (a present key with a byte appended)",
        count(ops, "get"),
        keys.len()
    );
    let v = serde_json::json!({"bench": "get", "db": args.db.display().to_string(),
        "segments": stats.segments.len(), "keys": total, "ops": ops,
        "get_p50_ns": p50, "get_p99_ns": p99, "miss_p50_ns": miss50, "miss_p99_ns": miss99});
    println!("{v}");
    Ok(())
}
