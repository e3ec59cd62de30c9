//! `pith`: the PithDB command line.
//!
//! Subcommands print one clear line on error and exit non-zero. Benchmarks
//! print a readable table and, as their last line, one JSON object of figures.

mod alloc;
mod bench;
mod db_cmd;
mod input;
mod load_cmd;
mod output;
mod serve_cmd;
mod stats;
mod stats_cmd;
mod stress;
mod table_cmd;
mod text;
mod trie_cmd;
mod zip_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOC: alloc::CountingAlloc = alloc::CountingAlloc;

#[derive(Parser)]
#[command(
    name = "pith",
    version,
    about = "PithDB: a read-optimized storage engine built on searchable compression",
    after_help = "Exit status: 0 success, 1 not found (`get` of an absent key), 2 any error (a usage error, bad input, I/O, corruption)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Loads JSON Lines records `{"key": .., "value": ..}` (zstd ok; `-`: stdin) into a database.
    Load(load_cmd::LoadArgs),
    /// Prints the value of a key (exit status 1 when absent).
    Get(db_cmd::GetArgs),
    /// Writes one key (synced).
    Put(db_cmd::PutArgs),
    /// Deletes one key (synced).
    Delete(db_cmd::KeyArgs),
    /// Prints key/value pairs in key order: all, a prefix, or a range.
    Scan(db_cmd::ScanArgs),
    /// Prints the keys matching a regular expression over whole keys (searched through the tries).
    Search(db_cmd::SearchArgs),
    /// Writes every live record as JSON Lines that `load` reads back byte-exact.
    Dump(db_cmd::DumpArgs),
    /// Live keys, stored entries, sizes and the compression ratio.
    Stats(stats_cmd::StatsArgs),
    #[command(about = SERVE_ABOUT)]
    Serve(serve_cmd::ServeArgs),
    /// Checks every checksum of every file; exits non-zero on corruption.
    Verify(db_cmd::DbArg),
    /// Merges all segments into one.
    Compact(db_cmd::DbArg),
    /// Tables with typed columns, indexes and column groups: create, load, get, query, stats, verify.
    Table {
        #[command(subcommand)]
        which: table_cmd::TableCommand,
    },
    /// Randomized concurrent read/write/verify test, optionally killing and recovering.
    Stress(stress::Args),
    /// Standalone trie files: build from keys, search by regex.
    Trie {
        #[command(subcommand)]
        which: trie_cmd::TrieCommand,
    },
    /// Standalone record-store files: build from JSON Lines values, get by id.
    Zip {
        #[command(subcommand)]
        which: zip_cmd::ZipCommand,
    },
    /// Benchmarks that run PithDB and its peers side by side.
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// The key index: pith-trie against fst::Map over the same keys.
    Trie(bench::trie::Args),
    /// The record store: pith-zip against block-compressed and per-record baselines.
    Zip(bench::zip::Args),
    /// Point-read latency of a loaded database.
    Get(bench::get::Args),
    /// Storage-engine workloads, PithDB against peers (RocksDB, LMDB with --features peers).
    Db(bench::db::Args),
    /// Tables: pith-table against SQLite, the same rows and indexes.
    Table(bench::table::Args),
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so a closed pipe (`pith scan | head`) would
    // surface as a write error; like `cat`, end quietly instead.
    // SAFETY: `signal` with SIG_DFL installs no handler code; it runs first
    // in `main`, before any thread exists that could race on dispositions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let result = match serve_only() {
        Some(serve) => serve_cmd::serve(&serve.args),
        None => run(Cli::parse().command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pith: {e}");
            match e {
                CliError::NotFound(_) => ExitCode::from(1),
                _ => ExitCode::from(2),
            }
        }
    }
}

/// `pith serve` parsed on its own (see [`serve_only`]).
#[derive(Parser)]
#[command(name = "pith serve", bin_name = "pith serve", version, about = SERVE_ABOUT)]
struct ServeCli {
    #[command(flatten)]
    args: serve_cmd::ServeArgs,
}

/// What `pith serve --help` says first (and `pith --help` beside `serve`).
const SERVE_ABOUT: &str =
    "Serves the database over the Redis protocol (redis-cli and every Redis client work).";

/// The arguments of `pith serve ...`, parsed without building the other
/// subcommands' parsers. A server is the one long-lived `pith` process, and
/// the code a full parse runs stays in its resident size: building every
/// subcommand's arguments touches about 0.3 MB of code pages that the
/// server never runs again (measured with `/proc/PID/smaps` after loading
/// debian-packages). `None` for every other command line.
fn serve_only() -> Option<ServeCli> {
    let mut args = std::env::args_os();
    let _program = args.next();
    (args.next()? == "serve").then(|| ServeCli::parse_from(std::env::args_os().skip(1)))
}

/// Runs one subcommand.
fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Bench {
            which: BenchCommand::Trie(args),
        } => bench::trie::run(&args),
        Command::Bench {
            which: BenchCommand::Zip(args),
        } => bench::zip::run(&args),
        Command::Bench {
            which: BenchCommand::Get(args),
        } => bench::get::run(&args),
        Command::Bench {
            which: BenchCommand::Db(args),
        } => bench::db::run(&args),
        Command::Bench {
            which: BenchCommand::Table(args),
        } => bench::table::run(&args),
        Command::Load(a) => load_cmd::load(&a),
        Command::Get(a) => db_cmd::get(&a),
        Command::Put(a) => db_cmd::put(&a),
        Command::Delete(a) => db_cmd::delete(&a),
        Command::Scan(a) => db_cmd::scan(&a),
        Command::Search(a) => db_cmd::search(&a),
        Command::Dump(a) => db_cmd::dump(&a),
        Command::Stats(a) => stats_cmd::stats(&a),
        Command::Verify(a) => db_cmd::verify(&a),
        Command::Compact(a) => db_cmd::compact(&a),
        Command::Serve(a) => serve_cmd::serve(&a),
        Command::Stress(a) => stress::run(&a),
        Command::Table { which } => table_cmd::run(&which),
        Command::Trie { which } => trie_cmd::run(&which),
        Command::Zip { which } => zip_cmd::run(&which),
    }
}

/// Errors the command line reports.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Reading an input file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A line of a JSON Lines input is not a `{"key": .., "value": ..}` object.
    #[error("{path}:{line}: {detail}")]
    BadRecord {
        /// The file.
        path: PathBuf,
        /// One-based line number.
        line: u64,
        /// What is wrong.
        detail: String,
    },
    /// A database operation failed.
    #[error("{0}")]
    Db(#[from] pith::Error),
    /// What was asked for does not exist (exit status 1).
    #[error("{0}")]
    NotFound(String),
    /// A load stopped part way; says what it left in the database.
    #[error("{cause}\npith: the load stopped there: {}{}", loaded_before(*written, *last_line, input), close_error.as_ref().map(|e| format!("\npith: and closing the database failed: {e}")).unwrap_or_default())]
    LoadStopped {
        /// Why it stopped.
        cause: Box<CliError>,
        /// The input.
        input: PathBuf,
        /// Records written before it stopped.
        written: u64,
        /// The input line of the last record written.
        last_line: u64,
        /// Closing the database after the failure failed too.
        close_error: Option<String>,
    },
    /// A table operation failed.
    #[error("{0}")]
    Table(#[from] pith_table::Error),
    /// A trie operation failed.
    #[error("trie: {0}")]
    Trie(#[from] pith_trie::Error),
    /// Anything the user asked for that cannot be done.
    #[error("{0}")]
    Usage(String),
    /// `pith stress` read something its expected state rules out.
    #[error("stress: {count} mismatch(es); first, in {check} of key {key}: expected {expected}, found {found}")]
    StressMismatch {
        /// Mismatches found.
        count: u64,
        /// The first mismatching key.
        key: String,
        /// The check that failed (get, scan, recovery, ...).
        check: String,
        /// What the expected state allows.
        expected: String,
        /// What the database returned.
        found: String,
    },
    /// The expected-state file of `pith stress` is missing or damaged.
    #[error("{path}: {detail}")]
    StressState {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// A `pith stress --kill-every` child failed by itself (its error is
    /// printed above).
    #[error("stress child process failed: {status}; its error is printed above")]
    StressChild {
        /// How it ended.
        status: String,
    },
}

/// What a stopped load left behind, as a sentence.
fn loaded_before(written: u64, last_line: u64, input: &std::path::Path) -> String {
    match written {
        0 => format!("nothing from {} was written", input.display()),
        n => format!(
            "{} from {} (its lines 1-{}) are in the database; nothing after line {} was written",
            text::count(n, "record"),
            input.display(),
            text::thousands(last_line),
            text::thousands(last_line)
        ),
    }
}
