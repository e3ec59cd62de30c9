//! `pith`: the PithDB command line.
//!
//! Subcommands print one clear line on error and exit non-zero. Benchmarks
//! print a readable table and, as their last line, one JSON object of figures.

mod alloc;
mod bench;
mod input;
mod stats;
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
    about = "PithDB: a read-optimized storage engine built on searchable compression"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench {
            which: BenchCommand::Trie(args),
        } => bench::trie::run(&args),
        Command::Bench {
            which: BenchCommand::Zip(args),
        } => bench::zip::run(&args),
        Command::Trie { which } => trie_cmd::run(&which),
        Command::Zip { which } => zip_cmd::run(&which),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pith: {e}");
            ExitCode::FAILURE
        }
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
    /// A trie operation failed.
    #[error("trie: {0}")]
    Trie(#[from] pith_trie::Error),
    /// Anything the user asked for that cannot be done.
    #[error("{0}")]
    Usage(String),
}
