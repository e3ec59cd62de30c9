//! The workloads: fills from a streamed data set, and timed read and mixed
//! phases over the loaded keys.
//!
//! Every operation of a read phase is timed on its own (`Instant` around
//! the call, ~20 ns) into a per-thread HDR histogram of nanoseconds; the
//! histograms are merged at the end. Fills time each batch.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::engine::Engine;
use crate::input::Records;
use crate::CliError;

/// Records per write batch in fills (one atomic batch or transaction).
pub const FILL_BATCH: usize = 64;

/// Records a fill sorts or shuffles at once: the whole input when it is
/// smaller, so `fillrandom` over debian-packages is fully random.
pub const FILL_CHUNK_BYTES: usize = 256 << 20;

/// Order of a fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Sorted by key (within each chunk).
    Sequential,
    /// Shuffled (within each chunk).
    Random,
}

/// Measured outcome of one phase.
pub struct Outcome {
    /// Operations done (records for fills).
    pub ops: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// Latency in nanoseconds (per operation; per batch for fills).
    pub hist: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap_or_else(|_| {
        Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits is valid"))
    })
}

/// Streams `path` in chunks, orders each, and writes it with `threads`
/// threads in batches of [`FILL_BATCH`].
pub fn fill(
    engine: &dyn Engine,
    path: &Path,
    order: Order,
    threads: usize,
    seed: u64,
) -> Result<Outcome, CliError> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let started = Instant::now();
    let mut hist = histogram();
    let mut ops = 0u64;
    let mut records = Records::open(path)?;
    loop {
        let mut chunk = Vec::new();
        let mut bytes = 0;
        for r in records.by_ref() {
            let (k, v) = r?;
            bytes += k.len() + v.len();
            chunk.push((k, v));
            if bytes >= FILL_CHUNK_BYTES {
                break;
            }
        }
        if chunk.is_empty() {
            break;
        }
        match order {
            Order::Sequential => chunk.sort_by(|a, b| a.0.cmp(&b.0)),
            Order::Random => chunk.shuffle(&mut rng),
        }
        ops += chunk.len() as u64;
        let batches: Vec<&[(Vec<u8>, Vec<u8>)]> = chunk.chunks(FILL_BATCH).collect();
        let next = AtomicUsize::new(0);
        let results: Vec<Result<Histogram<u64>, CliError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads.max(1))
                .map(|_| {
                    s.spawn(|| {
                        let mut h = histogram();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(batch) = batches.get(i) else { break };
                            let t = Instant::now();
                            engine.put_batch(batch)?;
                            h.saturating_record(t.elapsed().as_nanos() as u64);
                        }
                        Ok(h)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(CliError::Usage("a fill thread panicked".into())))
                })
                .collect()
        });
        for r in results {
            let _ = hist.add(r?);
        }
    }
    Ok(Outcome {
        ops,
        seconds: started.elapsed().as_secs_f64(),
        hist,
    })
}

/// A read or mixed workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// Existing keys, uniformly at random.
    Random,
    /// Absent keys (existing keys with a byte appended).
    Missing,
    /// Reads of existing keys, `100 - pct` percent random updates.
    Mixed(u32),
    /// Scans of 100 records from random existing keys.
    Scan,
}

/// When a phase stops.
#[derive(Clone, Copy, Debug)]
pub enum Budget {
    /// After this many operations in all.
    Ops(u64),
    /// After this long.
    Time(Duration),
}

/// Runs `kind` with `threads` threads until `budget` is spent.
pub fn read(
    engine: &dyn Engine,
    keys: &[Vec<u8>],
    values: &[Vec<u8>],
    kind: Read,
    threads: usize,
    budget: Budget,
    seed: u64,
) -> Result<Outcome, CliError> {
    let done = AtomicU64::new(0);
    let started = Instant::now();
    let results: Vec<Result<(Histogram<u64>, u64), CliError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1) as u64)
            .map(|t| {
                let done = &done;
                s.spawn(move || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(
                        seed ^ (t + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    );
                    let mut h = histogram();
                    let mut probe = Vec::new();
                    let mut mine = 0u64;
                    loop {
                        match budget {
                            Budget::Ops(n) => {
                                if done.fetch_add(1, Ordering::Relaxed) >= n {
                                    break;
                                }
                            }
                            Budget::Time(d) => {
                                if mine % 64 == 0 && started.elapsed() >= d {
                                    break;
                                }
                            }
                        }
                        let key = &keys[rng.gen_range(0..keys.len())];
                        let t = Instant::now();
                        match kind {
                            Read::Random => {
                                if engine.get(key)?.is_none() {
                                    return Err(CliError::Usage(format!(
                                        "wrong answer: existing key {:?} not found",
                                        String::from_utf8_lossy(key)
                                    )));
                                }
                            }
                            Read::Missing => {
                                probe.clear();
                                probe.extend_from_slice(key);
                                probe.push(1);
                                if engine.get(&probe)?.is_some() {
                                    return Err(CliError::Usage(
                                        "wrong answer: an absent key was found".into(),
                                    ));
                                }
                            }
                            Read::Mixed(pct) => {
                                if rng.gen_range(0..100) < pct || values.is_empty() {
                                    std::hint::black_box(engine.get(key)?);
                                } else {
                                    let v = &values[rng.gen_range(0..values.len())];
                                    engine.put_batch(&[(key.clone(), v.clone())])?;
                                }
                            }
                            Read::Scan => {
                                std::hint::black_box(engine.scan(key, 100)?);
                            }
                        }
                        h.saturating_record(t.elapsed().as_nanos() as u64);
                        mine += 1;
                    }
                    Ok((h, mine))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CliError::Usage("a benchmark thread panicked".into())))
            })
            .collect()
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut hist = histogram();
    let mut ops = 0;
    for r in results {
        let (h, n) = r?;
        ops += n;
        let _ = hist.add(h);
    }
    Ok(Outcome { ops, seconds, hist })
}
