//! The database subcommands but `load` and `stats`: `pith get | put |
//! delete | scan | search | dump | verify | compact`, and what they share
//! (opening, progress, counting).
//!
//! Commands that only read open the database read-only: they take no lock
//! and work beside a writer (a load in progress), seeing the database as
//! it was when they opened it. Commands that write take the lock.
//! Records are printed as `--format` says (see `output`); `get` of an
//! absent key exits with status 1, any error with 2.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use pith::{Options, WriteBatch, WriteOptions, DB};

use crate::output::{self, Out, OutFormat};
use crate::text::count;
use crate::CliError;

/// Where the database lives.
#[derive(clap::Args)]
pub struct DbArg {
    /// Database directory.
    #[arg(long)]
    pub db: PathBuf,
}

/// Which keys a scan or dump covers.
#[derive(clap::Args)]
pub struct RangeArgs {
    /// --prefix, --from and --to are hex (for binary keys).
    #[arg(long)]
    hex: bool,
    /// Only keys starting with this prefix.
    #[arg(long, conflicts_with_all = ["from", "to"])]
    prefix: Option<String>,
    /// First key (inclusive).
    #[arg(long)]
    from: Option<String>,
    /// End key (exclusive).
    #[arg(long)]
    to: Option<String>,
}

/// `pith scan`.
#[derive(clap::Args)]
pub struct ScanArgs {
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    range: RangeArgs,
    /// At most this many pairs.
    #[arg(long)]
    limit: Option<usize>,
    /// Print keys only (no value is decoded).
    #[arg(long)]
    keys_only: bool,
    /// In descending key order.
    #[arg(long)]
    reverse: bool,
    /// Output format: text (escaped, key TAB value), json (what `load`
    /// reads), hex.
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    format: OutFormat,
}

/// `pith dump`.
#[derive(clap::Args)]
pub struct DumpArgs {
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    range: RangeArgs,
    /// Write to this file instead of standard output.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// `pith search`.
#[derive(clap::Args)]
#[command(after_help = "\
The pattern must match a WHOLE key: `zypper` finds only the key \"zypper\", `zypper.*` \
finds keys starting with it, and --contains finds keys holding a match anywhere. \
Syntax: Rust's regex crate (https://docs.rs/regex). When nothing matches a whole key \
but some keys contain a match, a hint says so on standard error.")]
pub struct SearchArgs {
    #[command(flatten)]
    db: DbArg,
    /// Regular expression a whole key must match.
    regex: String,
    /// Match anywhere in the key, not the whole key.
    #[arg(long)]
    contains: bool,
    /// At most this many keys.
    #[arg(long)]
    limit: Option<usize>,
    /// Print each key's value too.
    #[arg(long)]
    values: bool,
    /// Output format: text (escaped), json (what `load` reads, with
    /// --values), hex.
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    format: OutFormat,
}

/// `pith get`.
#[derive(clap::Args)]
pub struct GetArgs {
    #[command(flatten)]
    db: DbArg,
    /// The key.
    key: String,
    /// The key is hex (for binary keys).
    #[arg(long)]
    hex: bool,
    /// Output format: text (the value escaped, and a newline), raw (the
    /// value's bytes, nothing added), json (the record as `load` reads
    /// it), hex.
    #[arg(long, value_enum, default_value_t = OutFormat::Text)]
    format: OutFormat,
}

/// `pith delete`.
#[derive(clap::Args)]
pub struct KeyArgs {
    #[command(flatten)]
    db: DbArg,
    /// The key.
    key: String,
    /// The key is hex (for binary keys).
    #[arg(long)]
    hex: bool,
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
    /// The key and the value are hex (for binary data).
    #[arg(long)]
    hex: bool,
}

pub(crate) fn open(path: &Path, create: bool) -> Result<DB, CliError> {
    open_with(path, create, true)
}

pub(crate) fn open_with(path: &Path, create: bool, shared_models: bool) -> Result<DB, CliError> {
    let options = Options {
        create_if_missing: create,
        shared_models,
        ..Options::default()
    };
    let db = DB::open(path, options)?;
    warn_torn(&db);
    Ok(db)
}

/// Opens for a command that only reads: no lock, nothing on disk changed
/// (works beside a writer and on a read-only file system).
pub(crate) fn open_read_only(path: &Path) -> Result<DB, CliError> {
    let db = DB::open_read_only(path, Options::default())?;
    warn_torn(&db);
    Ok(db)
}

/// Says on stderr what recovery dropped as torn log tails.
fn warn_torn(db: &DB) {
    for (path, bytes) in &db.recovery_report().torn {
        if db.is_read_only() {
            eprintln!(
                "pith: note: {} ends in an incomplete record ({bytes} bytes: a write in progress, or a crash during one); this read-only view leaves it out",
                path.display()
            );
        } else {
            eprintln!(
                "pith: warning: a log ended in a torn write ({bytes} bytes dropped: a crash during a write that was not acknowledged as synced); it is kept as {}",
                path.display()
            );
        }
    }
}

/// A spinner on standard error when it is a terminal (hidden otherwise).
pub(crate) fn progress(template: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// A command-line argument as bytes: as typed, or decoded from hex.
fn arg_bytes(arg: &str, hex: bool, what: &str) -> Result<Vec<u8>, CliError> {
    if !hex {
        return Ok(arg.as_bytes().to_vec());
    }
    let digits = arg.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return Err(CliError::Usage(format!(
            "{what} '{arg}' is not hex: an odd number of digits"
        )));
    }
    digits
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| CliError::Usage(format!("{what} '{arg}' is not hex")))
        })
        .collect()
}

fn stdout_err(source: std::io::Error) -> CliError {
    CliError::Io {
        path: PathBuf::from("<stdout>"),
        source,
    }
}

/// `pith get`: prints the value; an absent key is [`CliError::NotFound`].
pub fn get(args: &GetArgs) -> Result<(), CliError> {
    let key = &arg_bytes(&args.key, args.hex, "key")?;
    let db = open_read_only(&args.db.db)?;
    let value = db.get(key)?.ok_or_else(|| {
        let mut shown = Vec::new();
        output::escape(key, &mut shown);
        CliError::NotFound(format!(
            "key not found: \"{}\"",
            String::from_utf8_lossy(&shown)
        ))
    })?;
    let mut o = Out::stdout();
    // Text and hex print the value alone; json prints the record.
    match args.format {
        OutFormat::Json => o.record(args.format, key, Some(&value)),
        OutFormat::Raw => o.write(&value),
        _ => o.record(args.format, &value, None),
    }
    .map_err(stdout_err)?;
    o.finish().map_err(stdout_err)
}

/// `pith put` (synced).
pub fn put(args: &PutArgs) -> Result<(), CliError> {
    let key = arg_bytes(&args.key, args.hex, "key")?;
    let value = arg_bytes(&args.value, args.hex, "value")?;
    let db = open(&args.db.db, true)?;
    let mut b = WriteBatch::new();
    b.put(key, value);
    db.write(WriteOptions::synced(), b)?;
    Ok(db.close()?)
}

/// `pith delete` (synced).
pub fn delete(args: &KeyArgs) -> Result<(), CliError> {
    let key = arg_bytes(&args.key, args.hex, "key")?;
    let db = open(&args.db.db, false)?;
    let mut b = WriteBatch::new();
    b.delete(key);
    db.write(WriteOptions::synced(), b)?;
    Ok(db.close()?)
}

fn raw_refused(format: OutFormat, what: &str) -> Result<(), CliError> {
    match format {
        OutFormat::Raw => Err(CliError::Usage(format!(
            "--format raw prints one value (`pith get`); {what} prints many records: use text, json or hex"
        ))),
        _ => Ok(()),
    }
}

fn scan_of(db: &DB, range: &RangeArgs) -> Result<pith::Scan, CliError> {
    let bytes = |arg: &Option<String>, what| {
        arg.as_deref()
            .map(|a| arg_bytes(a, range.hex, what))
            .transpose()
    };
    Ok(match bytes(&range.prefix, "--prefix")? {
        Some(p) => db.prefix(&p),
        None => db.range(
            bytes(&range.from, "--from")?.as_deref(),
            bytes(&range.to, "--to")?.as_deref(),
        ),
    })
}

/// `pith scan`.
pub fn scan(args: &ScanArgs) -> Result<(), CliError> {
    raw_refused(args.format, "scan")?;
    let db = open_read_only(&args.db.db)?;
    let scan = scan_of(&db, &args.range)?;
    let mut o = Out::stdout();
    let limit = args.limit.unwrap_or(usize::MAX);
    match (args.keys_only, args.reverse) {
        (true, false) => print(
            &mut o,
            args.format,
            scan.keys().map(|k| k.map(|k| (k, None))),
            limit,
        ),
        (true, true) => print(
            &mut o,
            args.format,
            scan.keys().rev().map(|k| k.map(|k| (k, None))),
            limit,
        ),
        (false, false) => print(
            &mut o,
            args.format,
            scan.map(|r| r.map(|(k, v)| (k, Some(v)))),
            limit,
        ),
        (false, true) => print(
            &mut o,
            args.format,
            scan.rev().map(|r| r.map(|(k, v)| (k, Some(v)))),
            limit,
        ),
    }?;
    o.finish().map_err(stdout_err)
}

/// Writes at most `limit` records (values `None`: keys only).
fn print(
    o: &mut Out,
    format: OutFormat,
    records: impl Iterator<Item = pith::Result<(Vec<u8>, Option<Vec<u8>>)>>,
    limit: usize,
) -> Result<(), CliError> {
    for r in records.take(limit) {
        let (k, v) = r?;
        o.record(format, &k, v.as_deref()).map_err(stdout_err)?;
    }
    Ok(())
}

/// `pith dump`: every live record (or a range) as JSON Lines that `pith
/// load` reads back byte-exact.
pub fn dump(args: &DumpArgs) -> Result<(), CliError> {
    let db = open_read_only(&args.db.db)?;
    let started = Instant::now();
    let bar = progress("{spinner} {elapsed} {human_pos} records dumped");
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut line = Vec::new();
    let mut sink: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(std::io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(path).map_err(|source| CliError::Io {
                path: path.clone(),
                source,
            })?,
        )),
        None => Box::new(std::io::BufWriter::with_capacity(
            1 << 20,
            std::io::stdout().lock(),
        )),
    };
    let target = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("<stdout>"));
    let io = |source| CliError::Io {
        path: target.clone(),
        source,
    };
    for kv in scan_of(&db, &args.range)? {
        let (k, v) = kv?;
        line.clear();
        output::record(OutFormat::Json, &k, Some(&v), &mut line);
        sink.write_all(&line).map_err(io)?;
        n += 1;
        bytes += (k.len() + v.len()) as u64;
        bar.inc(1);
    }
    sink.flush().map_err(io)?;
    drop(sink);
    if let Some(path) = &args.out {
        std::fs::File::open(path)
            .and_then(|f| f.sync_all())
            .map_err(io)?;
    }
    bar.finish_and_clear();
    eprintln!(
        "dumped {} ({:.1} MB of keys and values) to {} in {:.1} s",
        count(n, "record"),
        bytes as f64 / 1e6,
        target.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// True when some key matches `pattern`.
fn any_match(db: &DB, pattern: &str) -> Result<bool, CliError> {
    Ok(db.search(pattern)?.keys().next().transpose()?.is_some())
}

/// `pattern` matching anywhere in a key (any bytes around it).
fn contains(pattern: &str) -> String {
    format!("(?s-u:.)*(?:{pattern})(?s-u:.)*")
}

/// `pith search`.
pub fn search(args: &SearchArgs) -> Result<(), CliError> {
    raw_refused(args.format, "search")?;
    let db = open_read_only(&args.db.db)?;
    let pattern = match args.contains {
        true => contains(&args.regex),
        false => args.regex.clone(),
    };
    let limit = args.limit.unwrap_or(usize::MAX);
    let mut o = Out::stdout();
    let mut found = 0usize;
    // Keys only decode no value; with --values each match comes with its
    // value from the same walk.
    if args.values {
        for kv in db.search(&pattern)?.take(limit) {
            let (k, v) = kv?;
            o.record(args.format, &k, Some(&v)).map_err(stdout_err)?;
            found += 1;
        }
    } else {
        for k in db.search(&pattern)?.keys().take(limit) {
            o.record(args.format, &k?, None).map_err(stdout_err)?;
            found += 1;
        }
    }
    if found == 0 && !args.contains && any_match(&db, &contains(&args.regex))? {
        eprintln!(
            "pith: no key matches '{0}' as a whole, but some keys contain a match: the pattern must match a whole key (try '{0}.*' for a prefix, or --contains)",
            args.regex
        );
    }
    o.finish().map_err(stdout_err)
}

/// `pith verify`: non-zero exit, naming the file, on any corruption.
pub fn verify(args: &DbArg) -> Result<(), CliError> {
    let db = open_read_only(&args.db)?;
    let bar = progress("{spinner} {elapsed} verifying checksums of every file");
    let started = Instant::now();
    let r = db.verify()?;
    bar.finish_and_clear();
    println!(
        "ok: {}, {}, {} with {} checked in {:.1} s",
        count(r.segments as u64, "segment"),
        count(r.records, "record"),
        count(r.wals as u64, "log"),
        count(r.wal_records, "record"),
        started.elapsed().as_secs_f64()
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
    let before = db.stats()?;
    let bar = progress(&format!(
        "{{spinner}} {{elapsed}} merging {} ({:.1} MB)",
        count(before.segments.len() as u64, "segment"),
        before.disk_bytes as f64 / 1e6
    ));
    let started = Instant::now();
    db.compact()?;
    let after = db.stats()?;
    bar.finish_and_clear();
    eprintln!(
        "compacted {} ({:.1} MB on disk) into {} ({:.1} MB) in {:.1} s",
        count(before.segments.len() as u64, "segment"),
        before.disk_bytes as f64 / 1e6,
        count(after.segments.len() as u64, "segment"),
        after.disk_bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(db.close()?)
}
