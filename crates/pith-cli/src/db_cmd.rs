//! The database subcommands: `pith load | get | put | delete | scan | search
//! | stats | verify | compact`.
//!
//! Each opens the database directory given by `--db`, does one thing and
//! closes it (so the LOCK file keeps two commands from sharing a database).
//! Keys and values are printed as raw bytes; `scan` separates them with a
//! tab, one pair per line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use pith::{Options, WriteBatch, WriteOptions, DB};

use crate::input::Records;
use crate::CliError;

/// Where the database lives.
#[derive(clap::Args)]
pub struct DbArg {
    /// Database directory.
    #[arg(long)]
    pub db: PathBuf,
}

/// `pith load`.
#[derive(clap::Args)]
pub struct LoadArgs {
    #[command(flatten)]
    db: DbArg,
    /// JSON Lines records `{"key": .., "value": ..}`, optionally .zst.
    file: PathBuf,
    /// Write through the log and memtable in batches of 1,000 (the normal
    /// write path) instead of building segments directly.
    #[arg(long)]
    wal: bool,
    /// Do not merge the loaded segments into one (re-encoded with the merge
    /// codec) at the end.
    #[arg(long)]
    no_compact: bool,
    /// Load only the first N records.
    #[arg(long)]
    limit: Option<usize>,
    /// Give each new segment a codec and dictionary of its own instead of
    /// encoding with the database's shared model (the format before shared
    /// models; larger and slower to build, for comparison).
    #[arg(long)]
    no_shared_model: bool,
}

/// `pith scan`.
#[derive(clap::Args)]
pub struct ScanArgs {
    #[command(flatten)]
    db: DbArg,
    /// Only keys starting with this prefix.
    #[arg(long, conflicts_with_all = ["from", "to"])]
    prefix: Option<String>,
    /// First key (inclusive).
    #[arg(long)]
    from: Option<String>,
    /// End key (exclusive).
    #[arg(long)]
    to: Option<String>,
    /// At most this many pairs.
    #[arg(long)]
    limit: Option<usize>,
    /// Print keys only.
    #[arg(long)]
    keys_only: bool,
}

/// `pith search`.
#[derive(clap::Args)]
pub struct SearchArgs {
    #[command(flatten)]
    db: DbArg,
    /// Regular expression a whole key must match.
    regex: String,
    /// At most this many keys.
    #[arg(long, default_value_t = usize::MAX)]
    limit: usize,
}

/// `pith get` / `pith delete`.
#[derive(clap::Args)]
pub struct KeyArgs {
    #[command(flatten)]
    db: DbArg,
    /// The key.
    key: String,
}

/// `pith put`.
#[derive(clap::Args)]
pub struct PutArgs {
    #[command(flatten)]
    db: DbArg,
    /// The key.
    key: String,
    /// The value.
    value: String,
}

/// `pith stats`.
#[derive(clap::Args)]
pub struct StatsArgs {
    #[command(flatten)]
    db: DbArg,
    /// One JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

fn open(path: &Path, create: bool) -> Result<DB, CliError> {
    open_with(path, create, true)
}

fn open_with(path: &Path, create: bool, shared_models: bool) -> Result<DB, CliError> {
    let options = Options {
        create_if_missing: create,
        shared_models,
        ..Options::default()
    };
    let db = DB::open(path, options)?;
    warn_torn(&db);
    Ok(db)
}

/// Opens for a command that only reads: a shared lock, nothing on disk
/// changed (works on a read-only file system and beside other readers).
fn open_read_only(path: &Path) -> Result<DB, CliError> {
    let db = DB::open_read_only(path, Options::default())?;
    warn_torn(&db);
    Ok(db)
}

/// Says on stderr what recovery dropped as torn log tails.
fn warn_torn(db: &DB) {
    for (path, bytes) in &db.recovery_report().torn {
        eprintln!(
            "pith: warning: a log ended in a torn write ({bytes} bytes dropped: a crash during a write that was not acknowledged as synced); it is kept as {}",
            path.display()
        );
    }
}

fn out() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    std::io::BufWriter::new(std::io::stdout().lock())
}

fn stdout_err(source: std::io::Error) -> CliError {
    CliError::Io {
        path: PathBuf::from("<stdout>"),
        source,
    }
}

/// `pith load`.
pub fn load(args: &LoadArgs) -> Result<(), CliError> {
    let db = open_with(&args.db.db, true, !args.no_shared_model)?;
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed} {human_pos} records  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let started = Instant::now();
    let mut bytes = 0u64;
    let records = Records::open(&args.file)?
        .take(args.limit.unwrap_or(usize::MAX))
        .inspect(|r| {
            if let Ok((k, v)) = r {
                bytes += (k.len() + v.len()) as u64;
                bar.inc(1);
                if bar.position() % 4096 == 0 {
                    bar.set_message(format!("{:.1} MB read", bytes as f64 / 1e6));
                }
            }
        });
    let loaded = if args.wal {
        let mut n = 0u64;
        let mut batch = WriteBatch::new();
        for r in records {
            let (k, v) = r?;
            batch.put(k, v);
            n += 1;
            if batch.len() == 1000 {
                db.write(WriteOptions::default(), std::mem::take(&mut batch))?;
            }
        }
        db.write(WriteOptions::default(), batch)?;
        bar.set_message("flushing");
        db.flush()?;
        n
    } else {
        bar.set_message("building segments");
        db.try_bulk_load(records)?.records
    };
    // Flushed segments use the fast flush codec, and bulk chunks are
    // separate segments: a full merge re-encodes them with the merge codec.
    if !args.no_compact && (args.wal || db.stats()?.segments.len() > 1) {
        bar.set_message("merging segments");
        db.compact()?;
    }
    bar.finish_and_clear();
    let stats = db.stats()?;
    let raw = stats.total(|s| s.raw_key_bytes + s.raw_value_bytes);
    eprintln!(
        "loaded {loaded} records ({:.1} MB of keys and values) in {:.1} s: {} segments, {:.1} MB on disk, {:.2}x",
        raw as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        stats.segments.len(),
        stats.disk_bytes as f64 / 1e6,
        raw as f64 / stats.disk_bytes.max(1) as f64
    );
    db.close()?;
    Ok(())
}

/// `pith get`: prints the value, or exits non-zero when the key is absent.
pub fn get(args: &KeyArgs) -> Result<(), CliError> {
    let db = open_read_only(&args.db.db)?;
    match db.get(args.key.as_bytes())? {
        Some(v) => {
            let mut o = out();
            o.write_all(&v).map_err(stdout_err)?;
            o.write_all(b"\n").map_err(stdout_err)?;
            Ok(())
        }
        None => Err(CliError::Usage(format!("key not found: {}", args.key))),
    }
}

/// `pith put` (synced).
pub fn put(args: &PutArgs) -> Result<(), CliError> {
    let db = open(&args.db.db, true)?;
    let mut b = WriteBatch::new();
    b.put(&args.key, &args.value);
    db.write(WriteOptions::synced(), b)?;
    Ok(db.close()?)
}

/// `pith delete` (synced).
pub fn delete(args: &KeyArgs) -> Result<(), CliError> {
    let db = open(&args.db.db, false)?;
    let mut b = WriteBatch::new();
    b.delete(&args.key);
    db.write(WriteOptions::synced(), b)?;
    Ok(db.close()?)
}

/// `pith scan`.
pub fn scan(args: &ScanArgs) -> Result<(), CliError> {
    let db = open_read_only(&args.db.db)?;
    let scan = match &args.prefix {
        Some(p) => db.prefix(p.as_bytes()),
        None => db.range(
            args.from.as_deref().map(str::as_bytes),
            args.to.as_deref().map(str::as_bytes),
        ),
    };
    let mut o = out();
    let limit = args.limit.unwrap_or(usize::MAX);
    if args.keys_only {
        // Keys only: no value is decoded.
        for k in scan.keys().take(limit) {
            o.write_all(&k?).map_err(stdout_err)?;
            o.write_all(b"\n").map_err(stdout_err)?;
        }
    } else {
        for kv in scan.take(limit) {
            let (k, v) = kv?;
            o.write_all(&k).map_err(stdout_err)?;
            o.write_all(b"\t").map_err(stdout_err)?;
            o.write_all(&v).map_err(stdout_err)?;
            o.write_all(b"\n").map_err(stdout_err)?;
        }
    }
    o.flush().map_err(stdout_err)
}

/// `pith search`.
pub fn search(args: &SearchArgs) -> Result<(), CliError> {
    let db = open_read_only(&args.db.db)?;
    let mut o = out();
    for k in db.search(&args.regex)?.keys().take(args.limit) {
        o.write_all(&k?).map_err(stdout_err)?;
        o.write_all(b"\n").map_err(stdout_err)?;
    }
    o.flush().map_err(stdout_err)
}

/// `pith stats`.
pub fn stats(args: &StatsArgs) -> Result<(), CliError> {
    let db = open_read_only(&args.db.db)?;
    let s = db.stats()?;
    let keys = s.total(|x| x.keys);
    let raw_keys = s.total(|x| x.raw_key_bytes);
    let raw_values = s.total(|x| x.raw_value_bytes);
    let index = s.total(|x| x.index_bytes);
    let store = s.total(|x| x.store_bytes);
    let resident = s.total(|x| x.resident_bytes);
    let ratio = (raw_keys + raw_values) as f64 / s.disk_bytes.max(1) as f64;
    if args.json {
        let segments: Vec<serde_json::Value> = s
            .segments
            .iter()
            .map(|x| {
                serde_json::json!({"number": x.number, "keys": x.keys, "records": x.records,
                "tombstones": x.tombstones, "index_bytes": x.index_bytes, "store_bytes": x.store_bytes,
                "resident_bytes": x.resident_bytes, "file_bytes": x.file_bytes, "codec": x.codec, "model": x.model})
            })
            .collect();
        let models: Vec<serde_json::Value> = s
            .models
            .iter()
            .map(|m| {
                serde_json::json!({"number": m.number, "file_bytes": m.file_bytes,
                "heap_bytes": m.heap_bytes, "dict_bytes": m.dict_bytes,
                "trained_ratio": m.trained_ratio, "trained_from": m.trained_from,
                "current": m.current, "segments": m.segments})
            })
            .collect();
        let v = serde_json::json!({
            "keys": keys, "raw_key_bytes": raw_keys, "raw_value_bytes": raw_values,
            "index_bytes": index, "value_store_bytes": store, "disk_bytes": s.disk_bytes,
            "resident_index_bytes": resident,
            "wal_bytes": s.wal_bytes, "memtable_bytes": s.memtable_bytes,
            "compression_ratio": ratio, "segment_count": s.segments.len(), "segments": segments,
            "last_sequence": s.last_sequence, "models": models,
        });
        println!("{v}");
        return Ok(());
    }
    println!("keys (summed over segments) {keys}");
    println!("raw key bytes            {raw_keys}");
    println!("raw value bytes          {raw_values}");
    println!("index (trie) bytes       {index}");
    println!("value store bytes        {store}");
    println!("resident index bytes     {resident} (trie, tags, history, Bloom: kept in memory)");
    println!("files on disk, bytes     {}", s.disk_bytes);
    println!("  of which logs          {}", s.wal_bytes);
    println!("compression ratio        {ratio:.2}x (raw keys and values / files on disk)");
    println!("segments                 {}", s.segments.len());
    for x in &s.segments {
        let model = x
            .model
            .map(|m| format!(", model {m:06}"))
            .unwrap_or_default();
        println!(
            "  {:06}.seg  {} keys, {} records, {} tombstones, trie {} B, store {} B ({}{model}), file {} B",
            x.number, x.keys, x.records, x.tombstones, x.index_bytes, x.store_bytes, x.codec, x.file_bytes
        );
    }
    println!("shared models            {}", s.models.len());
    for m in &s.models {
        println!(
            "  {:06}.model  file {} B, dictionary {} B, memory {} B, trained on {} B to {:.2}x, {} segments{}",
            m.number,
            m.file_bytes,
            m.dict_bytes,
            m.heap_bytes,
            m.trained_from,
            m.trained_ratio,
            m.segments,
            if m.current { ", current" } else { "" }
        );
    }
    Ok(())
}

/// `pith verify`: non-zero exit, naming the file, on any corruption.
pub fn verify(args: &DbArg) -> Result<(), CliError> {
    let db = open_read_only(&args.db)?;
    let r = db.verify()?;
    println!(
        "ok: {} segments, {} records, {} logs with {} records checked",
        r.segments, r.records, r.wals, r.wal_records
    );
    for p in &r.torn_logs {
        eprintln!(
            "pith: warning: {} holds the torn tail of a log from a crash; inspect it, then remove it",
            p.display()
        );
    }
    Ok(())
}

/// `pith compact`.
pub fn compact(args: &DbArg) -> Result<(), CliError> {
    let db = open(&args.db, false)?;
    db.compact()?;
    Ok(db.close()?)
}
