//! Benchmarks: each runs PithDB and its peers in one process over the same
//! inputs, prints a table and ends with one JSON line of figures.
//!
//! Output rule: stdout is the report, a table with units in its header and
//! a legend for what the header cannot say, then, as its last line, one
//! JSON object of figures (CI and scripts read it). Progress goes to stderr.

pub mod db;
pub mod get;
pub mod table;
pub mod trie;
pub mod zip;

use std::hint::black_box;
use std::time::Instant;

use crate::stats::Summary;

/// Times `f` over `items` in batches and summarizes nanoseconds per call.
///
/// Batches amortize the clock read (~20 ns) over `batch` calls; the median of
/// the batch means is robust to the occasional interrupt.
pub fn ns_per_op<T>(items: &[T], batch: usize, mut f: impl FnMut(&T) -> u64) -> Vec<f64> {
    let mut samples = Vec::with_capacity(items.len() / batch + 1);
    let mut acc = 0u64;
    for chunk in items.chunks(batch) {
        let t = Instant::now();
        for x in chunk {
            acc = acc.wrapping_add(f(black_box(x)));
        }
        samples.push(t.elapsed().as_nanos() as f64 / chunk.len() as f64);
    }
    black_box(acc);
    samples
}

/// Median wall seconds of `runs` calls of `f`, and the last result.
pub fn seconds<T>(runs: usize, mut f: impl FnMut() -> T) -> (Summary, T) {
    let mut samples = Vec::with_capacity(runs);
    let mut out = None;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        out = Some(black_box(f()));
        samples.push(t.elapsed().as_secs_f64());
    }
    let out = out.unwrap_or_else(|| unreachable!("runs >= 1"));
    (Summary::of(&mut samples), out)
}
