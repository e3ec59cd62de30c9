//! `pith trie ...`: build a standalone trie file from keys and query one.
//!
//! The file written is exactly pith-trie's serialized format
//! (`docs/format.md`), so it can be mmapped and opened zero-copy elsewhere.

use std::io::Write;
use std::path::PathBuf;

use crate::input::{sorted_keys_as, Format};
use crate::CliError;

/// `pith trie` subcommands.
#[derive(clap::Subcommand)]
pub enum TrieCommand {
    /// Builds a trie file from the keys of JSON Lines records (or one key per line with --format keys; zstd ok).
    Build {
        /// Input keys.
        #[arg(long)]
        keys: PathBuf,
        /// What the input holds.
        #[arg(long, value_enum, default_value_t = Format::Jsonl)]
        format: Format,
        /// Output trie file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Prints the keys of a trie file that match a whole-key regex, with their ids.
    Search {
        /// Trie file.
        #[arg(long)]
        trie: PathBuf,
        /// Regex that must match a whole key.
        regex: String,
        /// Stop after this many matches.
        #[arg(long, default_value_t = u64::MAX)]
        limit: u64,
    },
}

fn read(path: &PathBuf) -> Result<pith_trie::AlignedBytes, CliError> {
    let bytes = std::fs::read(path).map_err(|source| CliError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(pith_trie::AlignedBytes::copy_from(&bytes))
}

/// Runs a `pith trie` subcommand.
pub fn run(cmd: &TrieCommand) -> Result<(), CliError> {
    match cmd {
        TrieCommand::Build { keys, format, out } => {
            let keys = sorted_keys_as(keys, *format)?;
            let bytes = pith_trie::build(&keys)?;
            let io = |source| CliError::Io {
                path: out.clone(),
                source,
            };
            let mut f = std::fs::File::create(out).map_err(io)?;
            f.write_all(bytes.as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
            eprintln!(
                "{}: {} keys, {} bytes",
                out.display(),
                keys.len(),
                bytes.len()
            );
            Ok(())
        }
        TrieCommand::Search { trie, regex, limit } => {
            let bytes = read(trie)?;
            let t = pith_trie::Trie::open_validated(bytes.as_bytes())
                .map_err(|e| CliError::Usage(format!("{}: {e}", trie.display())))?;
            let re = pith_trie::KeyRegex::new(regex)?;
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let mut left = *limit;
            let mut failed = None;
            t.regex_search(&re, |id, key| {
                if left == 0 {
                    return false;
                }
                left -= 1;
                let line = writeln!(out, "{id}\t{}", String::from_utf8_lossy(key));
                failed = line.err();
                failed.is_none()
            });
            if let Some(source) = failed {
                return Err(CliError::Io {
                    path: "stdout".into(),
                    source,
                });
            }
            out.flush().map_err(|source| CliError::Io {
                path: "stdout".into(),
                source,
            })
        }
    }
}
