//! `pith bench trie`: pith-trie against `fst::Map` (key -> rank) over the same keys.
//!
//! Both structures are built from the same sorted keys; lookups run in the
//! same shuffled order, interleaved round by round so drift in the machine
//! hits both alike. Sizes are the serialized bytes each would put on disk.

use std::path::PathBuf;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::{ns_per_op, seconds};
use crate::alloc::measure_peak;
use crate::input::{sorted_keys_as, Format};
use crate::stats::Summary;
use crate::text::count;
use crate::CliError;

/// Options of `pith bench trie`.
#[derive(clap::Args)]
pub struct Args {
    /// Keys: the "key" of JSON Lines records, or one per line with --format keys (zstd ok).
    #[arg(long, default_value = "data/debian-sample.jsonl.zst")]
    keys: PathBuf,
    /// What the keys file holds.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
    /// Minimum number of timed lookups per structure.
    #[arg(long, default_value_t = 2_000_000)]
    ops: usize,
    /// Builds timed per structure (the median is reported).
    #[arg(long, default_value_t = 3)]
    builds: usize,
    /// Whole-key regex for the search timing.
    #[arg(long, default_value = "lib.*-dev/.*")]
    regex: String,
    /// Seed for the shuffles.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// Keys near present ones that are absent: last byte bumped, or a cut key
/// with a suffix, so misses happen deep in the structure, not at the root.
fn absent_keys(keys: &[Vec<u8>], rng: &mut impl Rng, n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(n);
    let mut tries = 0;
    while out.len() < n && tries < n * 10 && !keys.is_empty() {
        tries += 1;
        let k = &keys[rng.gen_range(0..keys.len())];
        let mut a = k.clone();
        if rng.gen_bool(0.5) {
            match a.last_mut() {
                Some(b) if *b < 0xFF => *b += 1,
                _ => a.push(b'!'),
            }
        } else {
            a.truncate(k.len() / 2);
            a.push(b'~');
        }
        if keys.binary_search(&a).is_err() {
            out.push(a);
        }
    }
    out
}

fn fmt_bytes(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{:.2} MiB", n as f64 / (1 << 20) as f64)
    } else {
        format!("{:.1} KiB", n as f64 / 1024.0)
    }
}

/// Runs the benchmark.
pub fn run(args: &Args) -> Result<(), CliError> {
    let keys = sorted_keys_as(&args.keys, args.format)?;
    if keys.is_empty() {
        return Err(CliError::Usage(format!("{}: no keys", args.keys.display())));
    }
    let n = keys.len();
    let raw_bytes: usize = keys.iter().map(Vec::len).sum();
    eprintln!(
        "{}: {n} unique keys, {} of key bytes",
        args.keys.display(),
        fmt_bytes(raw_bytes)
    );

    // Build both, several times; keep the last.
    let (pith_build, (pith, pith_mem)) =
        seconds(args.builds, || measure_peak(|| pith_trie::build(&keys)));
    let pith = pith?;
    let (fst_build, (fst_bytes, fst_mem)) = seconds(args.builds, || {
        measure_peak(|| {
            let mut b = fst::MapBuilder::memory();
            for (i, k) in keys.iter().enumerate() {
                b.insert(k, i as u64)
                    .map_err(|e| CliError::Usage(format!("fst: {e}")))?;
            }
            b.into_inner()
                .map_err(|e| CliError::Usage(format!("fst: {e}")))
        })
    });
    let fst_bytes = fst_bytes?;
    let (open_s, trie) = seconds(args.builds, || pith_trie::Trie::open(pith.as_bytes()));
    let trie = trie?;
    let (validate_s, valid) = seconds(args.builds, || trie.validate());
    valid?;
    let map = fst::Map::new(fst_bytes.clone()).map_err(|e| CliError::Usage(format!("fst: {e}")))?;

    // Correctness before speed: both agree on every key.
    for (i, k) in keys.iter().enumerate() {
        if trie.lookup(k) != Some(i as u64) || map.get(k) != Some(i as u64) {
            return Err(CliError::Usage(format!("lookup mismatch on key #{i}")));
        }
    }

    let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed);
    let rounds = args.ops.div_ceil(n).max(3);
    let batch = 256;
    let mut order: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let absent = absent_keys(&keys, &mut rng, n.min(100_000));
    let mut absent_order: Vec<&[u8]> = absent.iter().map(Vec::as_slice).collect();
    let mut ids: Vec<u64> = (0..n as u64).collect();
    let (mut pl, mut fl, mut pa, mut fa, mut pk) = (vec![], vec![], vec![], vec![], vec![]);
    let mut buf = Vec::new();
    for _ in 0..rounds {
        order.shuffle(&mut rng);
        absent_order.shuffle(&mut rng);
        ids.shuffle(&mut rng);
        pl.extend(ns_per_op(&order, batch, |k| trie.lookup(k).unwrap_or(0)));
        fl.extend(ns_per_op(&order, batch, |k| map.get(k).unwrap_or(0)));
        pa.extend(ns_per_op(&absent_order, batch, |k| {
            trie.lookup(k).unwrap_or(1)
        }));
        fa.extend(ns_per_op(&absent_order, batch, |k| map.get(k).unwrap_or(1)));
        pk.extend(ns_per_op(&ids, batch, |&id| {
            buf.clear();
            trie.key_into(id, &mut buf);
            buf.len() as u64
        }));
    }
    let [pl, fl, pa, fa, pk] = [pl, fl, pa, fa, pk].map(|mut s| Summary::of(&mut s));

    // Full ordered iteration.
    let (pith_iter, _) = seconds(3, || {
        let mut c = trie.cursor();
        let mut total = 0usize;
        let mut ok = c.seek_to_first();
        while ok {
            total += c.key().map_or(0, <[u8]>::len);
            ok = c.next();
        }
        total
    });
    let (fst_iter, _) = seconds(3, || {
        use fst::Streamer;
        let mut s = map.stream();
        let mut total = 0usize;
        while let Some((k, _)) = s.next() {
            total += k.len();
        }
        total
    });

    // Regex: through the trie versus a scan of every key with `regex`.
    let re = pith_trie::KeyRegex::new(&args.regex)?;
    let (pith_re, stats) = seconds(3, || trie.regex_search(&re, |_, _| true));
    let scan_re = regex::bytes::Regex::new(&format!(r"\A(?:{})\z", args.regex))
        .map_err(|e| CliError::Usage(format!("regex: {e}")))?;
    let (scan_re_s, scan_matches) =
        seconds(3, || keys.iter().filter(|k| scan_re.is_match(k)).count());
    // The scan an engine would do without the walk: every key decoded
    // from the trie in order, then matched.
    let (trie_scan_re_s, trie_scan_matches) = seconds(3, || {
        trie.iter().filter(|(_, k)| scan_re.is_match(k)).count()
    });
    if scan_matches as u64 != stats.matches || trie_scan_matches != scan_matches {
        return Err(CliError::Usage(format!(
            "regex mismatch: trie {} vs scan {scan_matches}",
            stats.matches
        )));
    }

    let size = trie.size_report();
    println!(
        "pith bench trie: {} ({}, {} of key bytes)",
        args.keys.display(),
        count(n, "key"),
        fmt_bytes(raw_bytes)
    );
    println!(
        "{:<28} {:>14} {:>14} {:>9}",
        "", "pith-trie", "fst::Map", "pith/fst"
    );
    let row = |name: &str, p: f64, f: f64, unit: &str| {
        println!(
            "{name:<28} {:>14} {:>14} {:>9.2}",
            format!("{p:.1} {unit}"),
            format!("{f:.1} {unit}"),
            p / f
        );
    };
    println!(
        "{:<28} {:>14} {:>14} {:>9.2}",
        "size",
        fmt_bytes(pith.len()),
        fmt_bytes(fst_bytes.len()),
        pith.len() as f64 / fst_bytes.len() as f64
    );
    println!(
        "{:<28} {:>13.3}x {:>13.3}x",
        "size / raw key bytes",
        pith.len() as f64 / raw_bytes as f64,
        fst_bytes.len() as f64 / raw_bytes as f64
    );
    row(
        "build (median)",
        pith_build.median * 1e3,
        fst_build.median * 1e3,
        "ms",
    );
    row(
        "build peak heap",
        pith_mem as f64 / 1048576.0,
        fst_mem as f64 / 1048576.0,
        "MiB",
    );
    row("lookup present (median)", pl.median, fl.median, "ns");
    row("lookup absent (median)", pa.median, fa.median, "ns");
    row(
        "full ordered scan / key",
        pith_iter.median * 1e9 / n as f64,
        fst_iter.median * 1e9 / n as f64,
        "ns",
    );
    println!(
        "{:<28} {:>11.1} ns {:>14}",
        "id -> key (median)", pk.median, "n/a"
    );
    println!(
        "{:<28} {:>11.3} ms {:>14}",
        "open",
        open_s.median * 1e3,
        "n/a"
    );
    println!(
        "{:<28} {:>11.1} KiB {:>13}",
        "built at open (heap)",
        trie.resident_bytes() as f64 / 1024.0,
        "n/a"
    );
    println!(
        "{:<28} {:>11.3} ms {:>14}",
        "validate (every byte)",
        validate_s.median * 1e3,
        "n/a"
    );
    println!(
        "pith/fst: pith-trie's figure over fst::Map's (below 1: pith-trie smaller or faster); lookup and id -> key: per call, the median of the means of batches of {batch} calls in shuffled order; scan: a full ordered iteration, per key"
    );
    println!(
        "regex {:?}: {} matches; trie walk {:.3} ms visiting {} of {} edges; scan of all keys held in memory {:.3} ms, of all keys read from the trie {:.3} ms",
        args.regex,
        stats.matches,
        pith_re.median * 1e3,
        stats.visited_edges,
        size.edges,
        scan_re_s.median * 1e3,
        trie_scan_re_s.median * 1e3
    );
    println!(
        "trie parts: edges (label bytes, flags, ranks) {}, labels {} (pool {}, {}, {}), key ids {}",
        fmt_bytes(size.edges_bytes),
        fmt_bytes(size.labels),
        fmt_bytes(size.label_pool),
        if size.compressed_labels {
            "symbol table"
        } else {
            "raw"
        },
        if size.label_refs > 0 {
            format!("shared: refs {}", fmt_bytes(size.label_refs))
        } else if size.label_copies > 0 {
            format!("one per label, {} copies", size.label_copies)
        } else {
            "one per label".to_string()
        },
        fmt_bytes(size.permutation)
    );
    println!(
        "noise (interquartile spread of the batch means): lookup pith {:.0}% fst {:.0}%, absent pith {:.0}% fst {:.0}%, key {:.0}%; {} of {}",
        pl.spread_pct(),
        fl.spread_pct(),
        pa.spread_pct(),
        fa.spread_pct(),
        pk.spread_pct(),
        count(rounds, "round"),
        count(n, "op")
    );
    let json = serde_json::json!({
        "bench": "trie",
        "dataset": args.keys.display().to_string(),
        "keys": n,
        "raw_bytes": raw_bytes,
        "pith_bytes": pith.len(),
        "pith_label_copies": size.label_copies,
        "fst_bytes": fst_bytes.len(),
        "pith_build_s": pith_build.median,
        "fst_build_s": fst_build.median,
        "pith_build_peak_heap_bytes": pith_mem,
        "fst_build_peak_heap_bytes": fst_mem,
        "pith_lookup_ns": pl.median,
        "fst_lookup_ns": fl.median,
        "pith_key_ns": pk.median,
        "pith_absent_ns": pa.median,
        "fst_absent_ns": fa.median,
        "pith_iter_ns": pith_iter.median * 1e9 / n as f64,
        "fst_iter_ns": fst_iter.median * 1e9 / n as f64,
        "pith_open_s": open_s.median,
        "pith_resident_bytes": trie.resident_bytes(),
        "pith_validate_s": validate_s.median,
        "regex": args.regex,
        "regex_matches": stats.matches,
        "pith_regex_s": pith_re.median,
        "scan_regex_s": scan_re_s.median,
        "trie_scan_regex_s": trie_scan_re_s.median,
        "regex_visited_edges": stats.visited_edges,
        "edges": size.edges,
    });
    println!("{json}");
    Ok(())
}
