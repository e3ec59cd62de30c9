//! `pith load`: records from a JSON Lines (or keys) file into a database.
//!
//! The input is read in chunks and each chunk is written whole or not at
//! all: a batch of [`WAL_BATCH`] records through the log (`--wal`), or a
//! bulk chunk of `Options::bulk_chunk_bytes` built straight into segments.
//! A bad line stops the load before the chunk that holds it is written, so
//! the error says exactly which input lines are in the database: every
//! line before the last written chunk's end, nothing after. Repeated keys:
//! the last line wins.

use std::path::PathBuf;
use std::time::Instant;

use pith::{Options, WriteBatch, WriteOptions, DB};

use crate::db_cmd::{open_with, progress, DbArg};
use crate::input::{self, Format, Records};
use crate::text::{count, thousands};
use crate::CliError;

/// Records per log batch with `--wal`.
pub const WAL_BATCH: usize = 1000;

/// Per-record bytes a bulk chunk counts on top of key and value (as the
/// engine's bulk load does), so a chunk here is one engine chunk.
const RECORD_OVERHEAD: usize = 48;

/// `pith load`.
#[derive(clap::Args)]
#[command(after_help = "\
Input: JSON Lines, one {\"key\": .., \"value\": ..} object per line (\"key_base64\" / \
\"value_base64\" for bytes that are not UTF-8, as `pith dump` writes), or one key per \
line with --format keys. zstd-compressed input is read as it is; gzip, xz, bzip2, lz4 \
and zip are refused (decompress first). A UTF-8 byte-order mark is skipped, blank \
lines are skipped, and FILE `-` is standard input.

Repeated keys: the last line wins, within the file and over keys already stored.

On a bad line the load stops: the records of earlier chunks (batches of 1,000 with \
--wal, chunks of 256 MiB otherwise) are in the database, and the error says which \
lines those are; nothing from the failing chunk on is written.")]
pub struct LoadArgs {
    #[command(flatten)]
    db: DbArg,
    /// Input file (`-`: standard input; zstd ok).
    file: PathBuf,
    /// What the input holds.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
    /// Write through the log and memtable in batches of 1,000 (the normal
    /// write path) instead of building segments directly.
    #[arg(long)]
    wal: bool,
    /// Do not merge the loaded segments into one at the end.
    #[arg(long)]
    no_compact: bool,
    /// Load only the first N records.
    #[arg(long)]
    limit: Option<u64>,
    /// Give each new segment a codec and dictionary of its own instead of
    /// encoding with the database's shared model (the format before shared
    /// models; larger and slower to build, for comparison).
    #[arg(long)]
    no_shared_model: bool,
}

/// What a load has done so far.
#[derive(Default)]
struct Progress {
    /// Records read from the input.
    read: u64,
    /// Records written (in whole chunks).
    written: u64,
    /// The input line of the last record written (0: none).
    last_line: u64,
    /// Key and value bytes written.
    bytes: u64,
}

/// `pith load`.
pub fn load(args: &LoadArgs) -> Result<(), CliError> {
    let db = open_with(&args.db.db, true, !args.no_shared_model)?;
    let name = input::display_name(&args.file);
    let mut records = Records::open_as(&args.file, args.format)?;
    let started = Instant::now();
    let (keys_before, disk_before) = (db.count_keys()?, db.stats()?.disk_bytes);
    let bar = progress("{spinner} {elapsed} {human_pos} records  {msg}");
    let mut done = Progress::default();
    let limit = args.limit.unwrap_or(u64::MAX);
    let chunk_limit = Options::default().bulk_chunk_bytes;
    loop {
        let mut chunk = Vec::new();
        let mut bytes = 0usize;
        let mut end = false;
        loop {
            if done.read == limit {
                end = true;
                break;
            }
            match records.next() {
                None => {
                    end = true;
                    break;
                }
                Some(Err(cause)) => return Err(stopped(db, &name, cause, &done)),
                Some(Ok((k, v))) => {
                    done.read += 1;
                    bytes += k.len() + v.len() + RECORD_OVERHEAD;
                    chunk.push((k, v));
                    bar.inc(1);
                    let full = match args.wal {
                        true => chunk.len() == WAL_BATCH,
                        false => bytes >= chunk_limit,
                    };
                    if full {
                        break;
                    }
                }
            }
        }
        let n = chunk.len() as u64;
        // Key and value bytes: what `bytes` counted, less the overhead.
        let chunk_bytes = (bytes - chunk.len() * RECORD_OVERHEAD) as u64;
        if n > 0 {
            if !args.wal {
                bar.set_message("building segments");
            }
            if let Err(e) = write_chunk(&db, args.wal, chunk) {
                return Err(stopped(db, &name, e, &done));
            }
            done.written += n;
            done.bytes += chunk_bytes;
            done.last_line = records.line();
            bar.set_message(format!("{:.1} MB written", done.bytes as f64 / 1e6));
        }
        if end {
            break;
        }
    }
    if args.wal {
        bar.set_message("flushing");
        db.flush()?;
    }
    // Bulk chunks are separate segments, and flushed ones may be several:
    // a full merge makes one.
    if !args.no_compact && db.stats()?.segments.len() > 1 {
        bar.set_message("merging segments");
        db.compact()?;
    }
    bar.set_message("counting keys");
    let keys_after = db.count_keys()?;
    let disk_after = db.stats()?.disk_bytes;
    bar.finish_and_clear();
    let new_keys = keys_after.saturating_sub(keys_before);
    eprintln!(
        "loaded {}: read {} (lines 1-{}), wrote {} ({:.1} MB of keys and values): {}, {} replacing a value (of a key already stored or an earlier line: the last wins); the database now holds {}, {:.1} MB on disk (was {:.1} MB), in {:.1} s",
        name.display(),
        count(done.read, "record"),
        thousands(records.line()),
        thousands(done.written),
        done.bytes as f64 / 1e6,
        count(new_keys, "new key"),
        thousands(done.written.saturating_sub(new_keys)),
        count(keys_after, "live key"),
        disk_after as f64 / 1e6,
        disk_before as f64 / 1e6,
        started.elapsed().as_secs_f64(),
    );
    db.close()?;
    Ok(())
}

fn write_chunk(db: &DB, wal: bool, chunk: Vec<(Vec<u8>, Vec<u8>)>) -> Result<(), CliError> {
    if wal {
        let mut batch = WriteBatch::new();
        for (k, v) in chunk {
            batch.put(k, v);
        }
        db.write(WriteOptions::default(), batch)?;
    } else {
        db.bulk_load(chunk)?;
    }
    Ok(())
}

/// Closes the database (making what was written durable) and builds the
/// error that says what the load left behind.
fn stopped(db: DB, name: &std::path::Path, cause: CliError, done: &Progress) -> CliError {
    let closed = db.close().err().map(|e| e.to_string());
    CliError::LoadStopped {
        cause: Box::new(cause),
        input: name.to_path_buf(),
        written: done.written,
        last_line: done.last_line,
        close_error: closed,
    }
}
