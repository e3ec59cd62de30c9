//! Small statistics helpers for benchmarks: medians and spreads of samples.

/// Summary of repeated measurements.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    /// Median.
    pub median: f64,
    /// 25th percentile.
    pub p25: f64,
    /// 75th percentile.
    pub p75: f64,
}

impl Summary {
    /// Summarizes `samples` (any order; must not be empty).
    pub fn of(samples: &mut [f64]) -> Summary {
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Summary {
            median: at(0.5),
            p25: at(0.25),
            p75: at(0.75),
        }
    }

    /// Interquartile spread as a percentage of the median.
    pub fn spread_pct(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            100.0 * (self.p75 - self.p25) / self.median
        }
    }
}
