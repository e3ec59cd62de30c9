//! `pith bench zip`: PithDB's record store against block-compressed and
//! per-record baselines over the same values.
//!
//! Baselines, each with its own index counted in its size:
//! * `snappy4k`, `zstd16k`: records packed in file order into blocks closed
//!   once they reach 4 KiB / 16 KiB raw (RocksDB's block rule), each block
//!   compressed alone (snappy; zstd level 3); index: 8 bytes per block and 4
//!   bytes per record. A read decompresses the whole block, then copies the
//!   record out; there is no block cache.
//! * `zstd_dict`: zstd level 19 per record, standard frames, 1 MiB trained
//!   dictionary, 8 bytes of offset per record.
//! * `ceiling`: the whole input as one zstd-19 long-window stream; ratio only.
//!
//! Reads are timed one by one (so p99 is real; the clock costs ~20 ns of
//! each), over ids in a shuffled order shared by every store.

use std::path::PathBuf;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::seconds;
use crate::input::Records;
use crate::stats::Summary;
use crate::text::count;
use crate::zip_cmd::EffortArg;
use crate::CliError;

/// Options of `pith bench zip`.
#[derive(clap::Args)]
pub struct Args {
    /// JSON Lines records `{"key","value"}` (optionally .zst); values are used in file order.
    #[arg(long, default_value = "data/debian-sample.jsonl.zst")]
    records: PathBuf,
    /// Random reads timed per store.
    #[arg(long, default_value_t = 200_000)]
    reads: usize,
    /// zstd level of PithDB's zstd-dict codec.
    #[arg(long, default_value_t = 19)]
    level: i32,
    /// Sample kept by PithDB's builder for training, in MiB.
    #[arg(long, default_value_t = 16)]
    sample_mib: usize,
    /// Largest dictionary of PithDB's global codec, in MiB.
    #[arg(long, default_value_t = 8)]
    global_dict_mib: usize,
    /// Hash-chain candidates PithDB's global codec examines per position.
    #[arg(long, default_value_t = pith_zip::Options::default().global_depth)]
    global_depth: usize,
    /// How hard PithDB's global codec searches when encoding with a
    /// trained model (pith_global and pith_shared).
    #[arg(long, value_enum, default_value_t = EffortArg::Fast)]
    effort: EffortArg,
    /// Skip the whole-input zstd-19 ceiling (slow on large inputs).
    #[arg(long)]
    no_ceiling: bool,
    /// Seed for the read order.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Stores to measure, comma-separated, of: pith (auto), pith_plain,
    /// pith_zstd_dict, pith_global, pith_shared (a model trained once, then
    /// encoding with it, as the engine does), snappy4k, zstd16k, zstd_dict.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "pith,pith_plain,pith_zstd_dict,pith_global,pith_shared,snappy4k,zstd16k,zstd_dict"
    )]
    stores: Vec<String>,
}

/// A store under test: size and a way to read record `id` into a buffer.
struct Measured {
    /// Key in the JSON line (`pith`, `snappy4k`, ...).
    key: &'static str,
    name: String,
    bytes: usize,
    build_s: f64,
    get_ns: f64,
    get_p99_ns: f64,
    seq_mb_s: f64,
}

fn zerr(e: impl std::fmt::Display) -> CliError {
    CliError::Usage(format!("compression: {e}"))
}

fn time_reads(ids: &[u64], mut get: impl FnMut(u64, &mut Vec<u8>)) -> (f64, f64) {
    let mut buf = Vec::new();
    let mut samples = Vec::with_capacity(ids.len());
    for &id in ids {
        let t = Instant::now();
        get(id, &mut buf);
        samples.push(t.elapsed().as_nanos() as f64);
        std::hint::black_box(&buf);
    }
    samples.sort_by(f64::total_cmp);
    let p99 = samples[(samples.len() - 1) * 99 / 100];
    (Summary::of(&mut samples).median, p99)
}

/// Blocks of records compressed alone.
struct Blocks {
    blocks: Vec<Vec<u8>>,
    /// Per record: block, offset in the decompressed block, length.
    loc: Vec<(u32, u32, u32)>,
    raw_len: Vec<usize>,
}

impl Blocks {
    fn build(
        values: &[Vec<u8>],
        block: usize,
        mut compress: impl FnMut(&[u8]) -> Vec<u8>,
    ) -> Blocks {
        let (mut blocks, mut loc, mut raw_len) = (Vec::new(), Vec::new(), Vec::new());
        let mut cur = Vec::new();
        for v in values {
            loc.push((blocks.len() as u32, cur.len() as u32, v.len() as u32));
            cur.extend_from_slice(v);
            if cur.len() >= block {
                blocks.push(compress(&cur));
                raw_len.push(cur.len());
                cur.clear();
            }
        }
        if !cur.is_empty() {
            blocks.push(compress(&cur));
            raw_len.push(cur.len());
        }
        Blocks {
            blocks,
            loc,
            raw_len,
        }
    }

    fn size(&self) -> usize {
        self.blocks.iter().map(Vec::len).sum::<usize>() + 8 * self.blocks.len() + 4 * self.loc.len()
    }
}

fn measure_blocks(
    key: &'static str,
    name: &str,
    values: &[Vec<u8>],
    ids: &[u64],
    block: usize,
    compress: impl FnMut(&[u8]) -> Vec<u8> + Clone,
    mut decompress: impl FnMut(&[u8], &mut Vec<u8>),
) -> Measured {
    let (build, blocks) = seconds(1, || Blocks::build(values, block, compress.clone()));
    let mut scratch = Vec::new();
    let (get_ns, get_p99_ns) = time_reads(ids, |id, out| {
        let (b, off, len) = blocks.loc[id as usize];
        scratch.clear();
        scratch.reserve(blocks.raw_len[b as usize]);
        decompress(&blocks.blocks[b as usize], &mut scratch);
        out.clear();
        out.extend_from_slice(&scratch[off as usize..(off + len) as usize]);
    });
    let raw: usize = values.iter().map(Vec::len).sum();
    let t = Instant::now();
    for (b, data) in blocks.blocks.iter().enumerate() {
        scratch.clear();
        scratch.reserve(blocks.raw_len[b]);
        decompress(data, &mut scratch);
        std::hint::black_box(&scratch);
    }
    let seq = raw as f64 / 1e6 / t.elapsed().as_secs_f64();
    Measured {
        key,
        name: name.into(),
        bytes: blocks.size(),
        build_s: build.median,
        get_ns,
        get_p99_ns,
        seq_mb_s: seq,
    }
}

fn measure_pith(
    key: &'static str,
    name: &str,
    values: &[Vec<u8>],
    ids: &[u64],
    options: &pith_zip::Options,
) -> Result<(Measured, pith_zip::Codec), CliError> {
    let (build, built) = seconds(1, || pith_zip::build_to_vec(values, options));
    let (bytes, stats) = built.map_err(|e| CliError::Usage(format!("pith-zip: {e}")))?;
    // Open from 8-byte aligned memory, as a memory map would give.
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(&bytes);
    let view = &bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()];
    let store =
        pith_zip::Store::open(view).map_err(|e| CliError::Usage(format!("pith-zip: {e}")))?;
    let (get_ns, get_p99_ns, seq_mb_s) = read_and_check(&store, values, ids)?;
    Ok((
        Measured {
            key,
            name: name.into(),
            bytes: bytes.len(),
            build_s: build.median,
            get_ns,
            get_p99_ns,
            seq_mb_s,
        },
        stats.codec,
    ))
}

/// Times random reads (p50, p99 in ns) and a sequential scan (MB/s) of
/// `store`, then checks every record reads back as given.
fn read_and_check(
    store: &pith_zip::Store<'_>,
    values: &[Vec<u8>],
    ids: &[u64],
) -> Result<(f64, f64, f64), CliError> {
    let mut failed = None;
    let (get_ns, get_p99_ns) = time_reads(ids, |id, out| {
        if let Err(e) = store.get(id, out) {
            failed = Some(e);
        }
    });
    let t = Instant::now();
    store
        .scan(|_, r| std::hint::black_box(r).len() < usize::MAX)
        .map_err(|e| CliError::Usage(format!("pith-zip: {e}")))?;
    let seq = store.raw_bytes() as f64 / 1e6 / t.elapsed().as_secs_f64();
    if let Some(e) = failed {
        return Err(CliError::Usage(format!("pith-zip read failed: {e}")));
    }
    let mut buf = Vec::new();
    for (i, v) in values.iter().enumerate() {
        store
            .get(i as u64, &mut buf)
            .map_err(|e| CliError::Usage(format!("pith-zip: {e}")))?;
        if &buf != v {
            return Err(CliError::Usage(format!(
                "pith-zip returned wrong bytes for record {i}"
            )));
        }
    }
    Ok((get_ns, get_p99_ns, seq))
}

/// What the shared-model path costs: training a model once, then encoding
/// with it, as the engine's flushes do.
struct SharedFigures {
    measured: Measured,
    train_s: f64,
    encode_mb_s: f64,
    /// Encoding on every core, in batches as the engine's builds encode.
    parallel: Parallel,
    model_bytes: usize,
}

/// Encoding on several threads, as a segment build does.
#[derive(Clone, Copy)]
struct Parallel {
    threads: usize,
    mb_s: f64,
}

/// A model trained on the values (as the engine trains one), then a store
/// encoded with it in one pass; the size counts the model file too.
fn measure_shared(
    values: &[Vec<u8>],
    ids: &[u64],
    options: &pith_zip::Options,
) -> Result<SharedFigures, CliError> {
    let zerr = |e: pith_zip::Error| CliError::Usage(format!("pith-zip: {e}"));
    let raw: usize = values.iter().map(Vec::len).sum();
    let (train, trained) = seconds(1, || {
        let mut sample = pith_zip::Sample::new(options.sample_bytes);
        for (i, v) in values.iter().enumerate() {
            sample.offer(i as u64, v);
        }
        pith_zip::Model::train(1, sample.records(), raw as u64, options)
    });
    let (model, model_file) = trained.map_err(zerr)?;
    let model = std::sync::Arc::new(model);
    // The matcher's index is built once, outside the timings, as the
    // engine holds it across a build: the rates are those of encoding.
    let _index = model.hold_index(options);
    let (encode, built) = seconds(3, || -> Result<Vec<u8>, pith_zip::Error> {
        let mut out = Vec::new();
        let mut b = pith_zip::SharedBuilder::new(model.clone(), options, &mut out);
        for v in values {
            b.push(v)?;
        }
        b.finish()?;
        Ok(out)
    });
    let bytes = built.map_err(zerr)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (parallel, built) = seconds(3, || -> Result<Vec<u8>, pith_zip::Error> {
        let mut out = Vec::new();
        let mut b = pith_zip::SharedBuilder::new(model.clone(), options, &mut out);
        let (mut start, mut batch) = (0, 0);
        for (i, v) in values.iter().enumerate() {
            batch += v.len();
            if batch >= pith_zip::BATCH_BYTES_PER_THREAD * threads {
                b.push_many(&values[start..=i], threads)?;
                (start, batch) = (i + 1, 0);
            }
        }
        b.push_many(&values[start..], threads)?;
        b.finish()?;
        Ok(out)
    });
    if built.map_err(zerr)? != bytes {
        return Err(CliError::Usage(
            "pith-zip encoded other bytes on several threads than on one".into(),
        ));
    }
    let mut words = vec![0u64; bytes.len().div_ceil(8)];
    bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(&bytes);
    let view = &bytemuck::cast_slice::<u64, u8>(&words)[..bytes.len()];
    let store = pith_zip::Store::open_with_model(view, Some(model)).map_err(zerr)?;
    let (get_ns, get_p99_ns, seq_mb_s) = read_and_check(&store, values, ids)?;
    Ok(SharedFigures {
        measured: Measured {
            key: "pith_shared",
            name: "pith shared model (+ model file)".into(),
            bytes: bytes.len() + model_file.len(),
            build_s: train.median + encode.median,
            get_ns,
            get_p99_ns,
            seq_mb_s,
        },
        train_s: train.median,
        encode_mb_s: raw as f64 / 1e6 / encode.median,
        parallel: Parallel {
            threads,
            mb_s: raw as f64 / 1e6 / parallel.median,
        },
        model_bytes: model_file.len(),
    })
}

/// zstd-19 per record, 1 MiB trained dictionary, standard frames.
fn measure_zstd_dict(values: &[Vec<u8>], ids: &[u64]) -> Result<Measured, CliError> {
    let raw: usize = values.iter().map(Vec::len).sum();
    let (dict_build, dict_store) = seconds(1, || -> Result<(Vec<u8>, Vec<Vec<u8>>), CliError> {
        let step = (raw / (32 << 20)).max(1);
        let sample: Vec<&Vec<u8>> = values.iter().step_by(step).collect();
        let dict = zstd::dict::from_samples(&sample, (1 << 20).min(raw / 10)).map_err(zerr)?;
        let mut c = zstd::bulk::Compressor::with_dictionary(19, &dict).map_err(zerr)?;
        let frames = values
            .iter()
            .map(|v| c.compress(v))
            .collect::<Result<Vec<_>, _>>()
            .map_err(zerr)?;
        Ok((dict, frames))
    });
    let (dict, frames) = dict_store?;
    let ddict = zstd::dict::DecoderDictionary::copy(&dict);
    let mut dec = zstd::bulk::Decompressor::with_prepared_dictionary(&ddict).map_err(zerr)?;
    let (get_ns, get_p99_ns) = time_reads(ids, |id, out| {
        out.clear();
        out.reserve(values[id as usize].len());
        let _ = dec.decompress_to_buffer(&frames[id as usize], out);
    });
    let t = Instant::now();
    let mut out = Vec::new();
    for (f, v) in frames.iter().zip(values) {
        out.clear();
        out.reserve(v.len());
        let _ = dec.decompress_to_buffer(f, &mut out);
    }
    let seq = raw as f64 / 1e6 / t.elapsed().as_secs_f64();
    let n = values.len();
    let dict_bytes = dict.len() + frames.iter().map(Vec::len).sum::<usize>() + 8 * n;
    Ok(Measured {
        key: "zstd_dict",
        name: "zstd-19 per record, 1 MiB dict".into(),
        bytes: dict_bytes,
        build_s: dict_build.median,
        get_ns,
        get_p99_ns,
        seq_mb_s: seq,
    })
}

/// Runs the benchmark.
pub fn run(args: &Args) -> Result<(), CliError> {
    let mut values = Vec::new();
    for r in Records::open(&args.records)? {
        values.push(r?.1);
    }
    if values.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: no records",
            args.records.display()
        )));
    }
    let n = values.len();
    let raw: usize = values.iter().map(Vec::len).sum();
    eprintln!(
        "{}: {n} records, {:.1} MB of values",
        args.records.display(),
        raw as f64 / 1e6
    );
    let mut ids: Vec<u64> = (0..n as u64)
        .cycle()
        .take(args.reads.max(n.min(args.reads)))
        .collect();
    ids.shuffle(&mut rand::rngs::StdRng::seed_from_u64(args.seed));

    let base = pith_zip::Options {
        zstd_level: args.level,
        sample_bytes: args.sample_mib << 20,
        global_dict_bytes: args.global_dict_mib << 20,
        global_depth: args.global_depth,
        effort: args.effort.into(),
        ..pith_zip::Options::default()
    };
    let want = |key: &str| args.stores.iter().any(|s| s == key);
    let mut rows = Vec::new();
    let mut codec = None;
    if want("pith") {
        let (auto, c) = measure_pith("pith", "pith (auto)", &values, &ids, &base)?;
        rows.push(auto);
        codec = Some(c);
    }
    for (key, c) in [
        ("pith_plain", pith_zip::Codec::Plain),
        ("pith_zstd_dict", pith_zip::Codec::ZstdDict),
        ("pith_global", pith_zip::Codec::Global),
    ] {
        if !want(key) {
            continue;
        }
        let opts = pith_zip::Options {
            codec: pith_zip::CodecChoice::Force(c),
            ..base.clone()
        };
        rows.push(measure_pith(key, &format!("pith {}", c.name()), &values, &ids, &opts)?.0);
    }
    let mut shared = None;
    if want("pith_shared") {
        let f = measure_shared(&values, &ids, &base)?;
        rows.push(f.measured);
        shared = Some((f.train_s, f.encode_mb_s, f.parallel, f.model_bytes));
    }
    if want("snappy4k") {
        rows.push(measure_blocks(
            "snappy4k",
            "snappy 4 KiB blocks",
            &values,
            &ids,
            4096,
            |b| {
                snap::raw::Encoder::new()
                    .compress_vec(b)
                    .unwrap_or_default()
            },
            |c, out| {
                let len = snap::raw::decompress_len(c).unwrap_or(0);
                out.resize(len, 0);
                let _ = snap::raw::Decoder::new().decompress(c, out);
            },
        ));
    }
    if want("zstd16k") {
        rows.push(measure_blocks(
            "zstd16k",
            "zstd-3 16 KiB blocks",
            &values,
            &ids,
            16384,
            |b| zstd::bulk::compress(b, 3).unwrap_or_default(),
            {
                let mut d = zstd::bulk::Decompressor::new().map_err(zerr)?;
                move |c, out| {
                    let _ = d.decompress_to_buffer(c, out);
                }
            },
        ));
    }
    if want("zstd_dict") {
        rows.push(measure_zstd_dict(&values, &ids)?);
    }
    let ceiling = if args.no_ceiling {
        None
    } else {
        let t = Instant::now();
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 19).map_err(zerr)?;
        enc.long_distance_matching(true).map_err(zerr)?;
        enc.window_log(27).map_err(zerr)?;
        for v in &values {
            std::io::Write::write_all(&mut enc, v).map_err(zerr)?;
        }
        let whole = enc.finish().map_err(zerr)?;
        Some((whole.len(), t.elapsed().as_secs_f64()))
    };

    println!(
        "pith bench zip: {} ({}, {:.1} MB of values)",
        args.records.display(),
        count(n, "record"),
        raw as f64 / 1e6
    );
    println!(
        "{:<32} {:>12} {:>7} {:>9} {:>10} {:>10} {:>9}",
        "store", "bytes", "ratio", "build s", "get p50 ns", "get p99 ns", "seq MB/s"
    );
    for r in &rows {
        println!(
            "{:<32} {:>12} {:>7.2} {:>9.2} {:>10.0} {:>10.0} {:>9.0}",
            r.name,
            r.bytes,
            raw as f64 / r.bytes as f64,
            r.build_s,
            r.get_ns,
            r.get_p99_ns,
            r.seq_mb_s
        );
    }
    if let Some((bytes, s)) = ceiling {
        println!(
            "{:<32} {:>12} {:>7.2} {:>9.2} {:>10} {:>10} {:>9}",
            "ceiling: zstd-19 long, one stream",
            bytes,
            raw as f64 / bytes as f64,
            s,
            "-",
            "-",
            "-"
        );
    }
    println!(
        "bytes: the store's size, values with their index and any dictionary (pith shared model: and its model file); ratio: value bytes / bytes; get: one random record read and decoded, timed alone; seq MB/s: value MB (10^6 bytes) per second of a read of every record in order; ceiling: all values as one zstd stream, no random access"
    );
    if let Some((train_s, mb_s, parallel, model_bytes)) = shared {
        println!(
            "pith shared model: trained in {train_s:.2} s ({model_bytes} bytes), then encodes {mb_s:.1} MB/s on one core, {:.1} MB/s on {} threads in a build's batches",
            parallel.mb_s, parallel.threads
        );
    }
    let row = |key: &str| rows.iter().find(|r| r.key == key);
    let ratio = |key: &str| row(key).map(|r| raw as f64 / r.bytes as f64);
    let field = |key: &str, f: fn(&Measured) -> f64| row(key).map(f);
    let json = serde_json::json!({
        "bench": "zip",
        "dataset": args.records.display().to_string(),
        "records": n,
        "raw_bytes": raw,
        "pith_bytes": row("pith").map(|r| r.bytes),
        "pith_codec": codec.map(|c| c.name()),
        "pith_ratio": ratio("pith"),
        "pith_plain_ratio": ratio("pith_plain"),
        "pith_zstd_dict_ratio": ratio("pith_zstd_dict"),
        "pith_global_ratio": ratio("pith_global"),
        "pith_shared_ratio": ratio("pith_shared"),
        "pith_shared_train_s": shared.map(|s| s.0),
        "pith_shared_encode_mb_s": shared.map(|s| s.1),
        "pith_shared_encode_parallel_mb_s": shared.map(|s| s.2.mb_s),
        "pith_shared_encode_threads": shared.map(|s| s.2.threads),
        "pith_shared_model_bytes": shared.map(|s| s.3),
        "pith_shared_get_ns": field("pith_shared", |r| r.get_ns),
        "snappy4k_ratio": ratio("snappy4k"),
        "zstd16k_ratio": ratio("zstd16k"),
        "zstd_dict_ratio": ratio("zstd_dict"),
        "ceiling_ratio": ceiling.map(|(b, _)| raw as f64 / b as f64),
        "pith_build_s": field("pith", |r| r.build_s),
        "pith_get_ns": field("pith", |r| r.get_ns),
        "pith_get_p99_ns": field("pith", |r| r.get_p99_ns),
        "pith_global_get_ns": field("pith_global", |r| r.get_ns),
        "zstd16k_get_ns": field("zstd16k", |r| r.get_ns),
        "snappy4k_get_ns": field("snappy4k", |r| r.get_ns),
        "zstd_dict_get_ns": field("zstd_dict", |r| r.get_ns),
        "pith_seq_mb_s": field("pith", |r| r.seq_mb_s),
        "zstd16k_seq_mb_s": field("zstd16k", |r| r.seq_mb_s),
        "snappy4k_seq_mb_s": field("snappy4k", |r| r.seq_mb_s),
    });
    println!("{json}");
    Ok(())
}
