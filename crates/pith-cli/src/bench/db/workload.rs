//! The workloads: fills from a data set read whole before they are
//! timed, timed read and mixed phases over the loaded keys, and
//! `readwhilewriting` (readers at full speed beside one writer at full
//! speed, as RocksDB's db_bench runs it).
//!
//! Every operation of a read phase is timed on its own (`Instant` around
//! the call, ~20 ns) into a per-thread HDR histogram of nanoseconds; the
//! histograms are merged at the end. Fills time each batch. Threads share
//! only the engine (which is `Sync`), the read-only key and value lists
//! and atomic counters; each keeps its own histogram.
//!
//! The histograms of a read phase come from [`Histograms`], made and
//! written through before the phase enters its memory cgroup: at three
//! significant digits over an hour of nanoseconds each holds 256 KiB of
//! counts, and nine of them made in the reader threads (8 readers and the
//! merge) were charged to the cgroup, 2.3 MB of a 9.9 MiB limit that the
//! engine under test then did not have (`/proc/PID/smaps`: eight 288 KB
//! per-thread malloc arenas). Memory the harness uses is not the engine's.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::engine::Engine;
use crate::input::Records;
use crate::CliError;

/// Records per write batch in fills (one atomic batch or transaction).
pub const FILL_BATCH: usize = 64;

/// Records one `scan` operation reads, from a random existing key on.
pub const SCAN_LEN: usize = 100;

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

/// Histograms whose memory is already resident: [`Histograms::new`]
/// writes every count, so the pages are charged to the memory cgroup the
/// process is in then, not to one it enters later. Taking one from an
/// empty pool makes a fresh one.
pub struct Histograms {
    pool: Vec<Histogram<u64>>,
}

impl Histograms {
    /// A pool of `n` histograms, every page of them written.
    pub fn new(n: usize) -> Self {
        let pool = (0..n)
            .map(|_| {
                // Made by writing every count (zero), so the pages are
                // faulted in now; `reset` makes sure of it.
                let mut h = histogram();
                h.reset();
                h
            })
            .collect();
        Histograms { pool }
    }

    /// An empty histogram, from the pool while it lasts.
    fn take(&mut self) -> Histogram<u64> {
        self.pool.pop().unwrap_or_else(histogram)
    }

    /// Returns `h`, emptied, to the pool.
    fn give(&mut self, mut h: Histogram<u64>) {
        h.reset();
        self.pool.push(h);
    }
}

/// Reads `path` in chunks, orders each, and writes them with `threads`
/// threads in batches of [`FILL_BATCH`]. Only the writes are timed: the
/// whole data set is read, parsed and ordered before the clock starts.
/// Reading and parsing is the harness's work, not the engine's, and when it
/// was timed between chunks it was 0.19 s of the 0.31-0.33 s that PithDB's
/// fill of debian-packages took, for both engines alike.
pub fn fill(
    engine: &dyn Engine,
    path: &Path,
    order: Order,
    threads: usize,
    seed: u64,
) -> Result<Outcome, CliError> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut chunks = Vec::new();
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
        chunks.push(chunk);
    }
    let started = Instant::now();
    let mut hist = histogram();
    let mut ops = 0u64;
    for chunk in &chunks {
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
    /// Scans of [`SCAN_LEN`] records from random existing keys.
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
#[allow(clippy::too_many_arguments)]
pub fn read(
    engine: &dyn Engine,
    keys: &[Vec<u8>],
    values: &[Vec<u8>],
    kind: Read,
    threads: usize,
    budget: Budget,
    seed: u64,
    hists: &mut Histograms,
) -> Result<Outcome, CliError> {
    readers(
        engine,
        keys,
        values,
        kind,
        threads,
        budget,
        seed,
        &AtomicBool::new(false),
        hists,
    )
}

/// Outcome of `readwhilewriting`.
pub struct WhileWriting {
    /// The readers' operations, wall seconds and per-read latencies.
    pub readers: Outcome,
    /// The writer's records (one per write), wall seconds and per-write
    /// latencies.
    pub writer: Outcome,
    /// Key and value bytes the writer wrote.
    pub written_bytes: u64,
}

/// `readwhilewriting`: `threads` threads read random `keys` (each read
/// checked to find its key) until `budget` is spent, while one more thread
/// rewrites random `records` (existing keys with their own values from the
/// data set, so the data and its compressibility stay as loaded), one
/// record per write, at full speed until the readers stop. The writer has
/// no rate limit, as db_bench's `readwhilewriting` without
/// `--benchmark_write_rate_limit`.
pub fn read_while_writing(
    engine: &dyn Engine,
    keys: &[Vec<u8>],
    records: &[(Vec<u8>, Vec<u8>)],
    threads: usize,
    budget: Budget,
    seed: u64,
    hists: &mut Histograms,
) -> Result<WhileWriting, CliError> {
    if records.is_empty() {
        return Err(CliError::Usage(
            "readwhilewriting needs records to rewrite; the data set gave none".into(),
        ));
    }
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let writer_hist = hists.take();
    let (readers, writer) = std::thread::scope(|s| {
        let stop = &stop;
        let writer = s.spawn(move || {
            let written = write_until(engine, records, seed, stop, writer_hist);
            // A failed writer ends the readers too: the phase has failed.
            stop.store(true, Ordering::Relaxed);
            written
        });
        let readers = readers(
            engine,
            keys,
            &[],
            Read::Random,
            threads,
            budget,
            seed,
            stop,
            hists,
        );
        stop.store(true, Ordering::Relaxed);
        let writer = writer
            .join()
            .unwrap_or_else(|_| Err(CliError::Usage("the writer thread panicked".into())));
        (readers, writer)
    });
    let (hist, ops, written_bytes) = writer?;
    Ok(WhileWriting {
        readers: readers?,
        writer: Outcome {
            ops,
            seconds: started.elapsed().as_secs_f64(),
            hist,
        },
        written_bytes,
    })
}

/// The writer of [`read_while_writing`]: overwrites until `stop`; returns
/// its latencies, records and bytes written.
fn write_until(
    engine: &dyn Engine,
    records: &[(Vec<u8>, Vec<u8>)],
    seed: u64,
    stop: &AtomicBool,
    mut h: Histogram<u64>,
) -> Result<(Histogram<u64>, u64, u64), CliError> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5752_4954_4552);
    let (mut ops, mut bytes) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let record = &records[rng.gen_range(0..records.len())];
        bytes += (record.0.len() + record.1.len()) as u64;
        let t = Instant::now();
        engine.put_batch(std::slice::from_ref(record))?;
        h.saturating_record(t.elapsed().as_nanos() as u64);
        ops += 1;
    }
    Ok((h, ops, bytes))
}

/// The reader threads of [`read`] and [`read_while_writing`]: they stop
/// when `budget` is spent or `stop` is set.
#[allow(clippy::too_many_arguments)]
fn readers(
    engine: &dyn Engine,
    keys: &[Vec<u8>],
    values: &[Vec<u8>],
    kind: Read,
    threads: usize,
    budget: Budget,
    seed: u64,
    stop: &AtomicBool,
    hists: &mut Histograms,
) -> Result<Outcome, CliError> {
    let done = AtomicU64::new(0);
    let mut per_thread: Vec<Histogram<u64>> = (0..threads.max(1)).map(|_| hists.take()).collect();
    let mut hist = hists.take();
    let started = Instant::now();
    let results: Vec<Result<(Histogram<u64>, u64), CliError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1) as u64)
            .zip(per_thread.drain(..))
            .map(|(t, mut h)| {
                let done = &done;
                s.spawn(move || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(
                        seed ^ (t + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    );
                    let mut probe = Vec::new();
                    let mut mine = 0u64;
                    loop {
                        match budget {
                            Budget::Ops(n) => {
                                if done.fetch_add(1, Ordering::Relaxed) >= n
                                    || stop.load(Ordering::Relaxed)
                                {
                                    break;
                                }
                            }
                            Budget::Time(d) => {
                                if mine.is_multiple_of(64)
                                    && (started.elapsed() >= d || stop.load(Ordering::Relaxed))
                                {
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
                                std::hint::black_box(engine.scan(key, SCAN_LEN)?);
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
    let mut ops = 0;
    for r in results {
        let (h, n) = r?;
        ops += n;
        let _ = hist.add(&h);
        hists.give(h);
    }
    Ok(Outcome { ops, seconds, hist })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every read finds its key while the writer overwrites; the writer's
    /// records land (values of the new lengths) and are counted.
    #[test]
    fn read_while_writing_reads_while_one_writer_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let db = super::super::engine::open("pith", dir.path(), 8 << 20, 1 << 20, false).unwrap();
        let keys: Vec<Vec<u8>> = (0..500u32)
            .map(|i| format!("key{i:05}").into_bytes())
            .collect();
        let batch: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|k| (k.clone(), b"original-value".to_vec()))
            .collect();
        db.put_batch(&batch).unwrap();
        let values = vec![b"new".to_vec(), b"newer".to_vec()];
        let records: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), values[i % 2].clone()))
            .collect();

        // One pool through two workloads, as a read phase runs them: the
        // histograms given back are empty when taken again.
        let mut hists = Histograms::new(3);
        for ops in [1000, 700] {
            let plain = read(
                db.as_ref(),
                &keys,
                &values,
                Read::Random,
                2,
                Budget::Ops(ops),
                7,
                &mut hists,
            )
            .unwrap();
            assert_eq!(plain.ops, ops);
            assert_eq!(plain.hist.len(), ops, "latencies of this workload only");
        }

        let run = read_while_writing(
            db.as_ref(),
            &keys,
            &records,
            2,
            Budget::Ops(20_000),
            7,
            &mut Histograms::new(0),
        )
        .unwrap();
        assert_eq!(run.readers.ops, 20_000);
        assert_eq!(run.readers.hist.len(), 20_000);
        assert!(run.writer.ops > 0, "the writer wrote nothing");
        assert_eq!(run.writer.hist.len(), run.writer.ops);
        assert!(run.written_bytes >= run.writer.ops * (8 + 3));
        let overwritten = keys
            .iter()
            .map(|k| db.get(k).unwrap().expect("every key stays present"))
            .filter(|&len| len != b"original-value".len())
            .count() as u64;
        assert!(overwritten > 0 && overwritten <= run.writer.ops);
    }
}
