//! `pith zip ...`: build a standalone record-store file from JSON Lines
//! values, and read records back by id.
//!
//! `build` streams the input twice (the store builder's two passes) and never
//! holds it whole; the file written is pith-zip's format (`docs/format.md`).

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::input::Records;
use crate::CliError;

/// `pith zip` subcommands.
#[derive(clap::Subcommand)]
pub enum ZipCommand {
    /// Builds a record store from the values of JSON Lines records (.zst ok).
    Build {
        /// Input records.
        #[arg(long)]
        records: PathBuf,
        /// Output store file.
        #[arg(long)]
        out: PathBuf,
        /// Use only the first N records.
        #[arg(long)]
        limit: Option<u64>,
        /// Codec: chosen by trial on a sample (auto) or forced.
        #[arg(long, value_enum, default_value_t = CodecArg::Auto)]
        codec: CodecArg,
    },
    /// Prints record ID of a store file to stdout.
    Get {
        /// Store file.
        #[arg(long)]
        store: PathBuf,
        /// Record id.
        id: u64,
    },
}

/// `--codec` values.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum CodecArg {
    /// Try the codecs on held-out sample records, keep the smallest.
    Auto,
    /// Records as they are.
    Plain,
    /// zstd frames against a trained dictionary.
    ZstdDict,
    /// PithDB's own global-dictionary codec.
    Global,
}

/// `--effort` values: how hard the global codec's parser searches when it
/// encodes with a trained model.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum EffortArg {
    /// One dictionary candidate per position, one lazy step.
    Fast,
    /// Hash chains walked `--global-depth` deep, two lazy steps.
    Thorough,
}

impl From<EffortArg> for pith_zip::Effort {
    fn from(e: EffortArg) -> Self {
        match e {
            EffortArg::Fast => pith_zip::Effort::Fast,
            EffortArg::Thorough => pith_zip::Effort::Thorough,
        }
    }
}

impl CodecArg {
    fn choice(self) -> pith_zip::CodecChoice {
        use pith_zip::{Codec, CodecChoice};
        match self {
            CodecArg::Auto => CodecChoice::Auto,
            CodecArg::Plain => CodecChoice::Force(Codec::Plain),
            CodecArg::ZstdDict => CodecChoice::Force(Codec::ZstdDict),
            CodecArg::Global => CodecChoice::Force(Codec::Global),
        }
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |source| CliError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs a `pith zip` subcommand.
pub fn run(cmd: &ZipCommand) -> Result<(), CliError> {
    match cmd {
        ZipCommand::Build {
            records,
            out,
            limit,
            codec,
        } => {
            let first_error: RefCell<Option<CliError>> = RefCell::new(None);
            let source = || {
                let opened = Records::open(records);
                let iter = match opened {
                    Ok(r) => Some(r),
                    Err(e) => {
                        first_error.borrow_mut().get_or_insert(e);
                        None
                    }
                };
                iter.into_iter()
                    .flatten()
                    .map_while(|r| match r {
                        Ok((_, v)) => Some(v),
                        Err(e) => {
                            first_error.borrow_mut().get_or_insert(e);
                            None
                        }
                    })
                    .take(limit.map_or(usize::MAX, |l| l as usize))
            };
            let file = std::fs::File::create(out).map_err(io(out))?;
            let mut w = std::io::BufWriter::new(file);
            let options = pith_zip::Options {
                codec: codec.choice(),
                ..pith_zip::Options::default()
            };
            let built = pith_zip::build(source, &options, &mut w);
            if let Some(e) = first_error.into_inner() {
                return Err(e);
            }
            let stats = built.map_err(|e| CliError::Usage(format!("{}: {e}", out.display())))?;
            let file = w.into_inner().map_err(|e| CliError::Io {
                path: out.clone(),
                source: e.into_error(),
            })?;
            file.sync_all().map_err(io(out))?;
            eprintln!(
                "{}: {} records, {} -> {} bytes ({:.2}x, codec {})",
                out.display(),
                stats.records,
                stats.raw_bytes,
                stats.store_bytes,
                stats.raw_bytes as f64 / stats.store_bytes.max(1) as f64,
                stats.codec.name()
            );
            Ok(())
        }
        ZipCommand::Get { store, id } => {
            let bytes = std::fs::read(store).map_err(io(store))?;
            let mut words = vec![0u64; bytes.len().div_ceil(8)];
            bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(&bytes);
            let view = &bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()];
            let s = pith_zip::Store::open(view)
                .map_err(|e| CliError::Usage(format!("{}: {e}", store.display())))?;
            let mut out = Vec::new();
            s.get(*id, &mut out)
                .map_err(|e| CliError::Usage(format!("{}: {e}", store.display())))?;
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(&out).map_err(io(Path::new("stdout")))?;
            stdout.flush().map_err(io(Path::new("stdout")))
        }
    }
}
