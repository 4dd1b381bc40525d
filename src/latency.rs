//! Latency histograms: per-stage timings recorded in microseconds (HdrHistogram, 3 significant
//! digits) and reported as p50/p90/p95/p99/max in milliseconds, the way trtexec and MLPerf report
//! them; beside it, exact counts in fixed buckets ([`BUCKET_BOUNDS_US`]) and the exact sum, which a
//! monitoring system can window and add up across processes (a quantile cannot be).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency quantiles of one stage, in milliseconds rounded to 3 decimals (1 µs resolution).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Quantiles {
    /// Median, ms.
    pub(crate) p50: f64,
    /// 90th percentile, ms.
    pub(crate) p90: f64,
    /// 95th percentile, ms.
    pub(crate) p95: f64,
    /// 99th percentile, ms.
    pub(crate) p99: f64,
    /// Largest recorded value, ms (exact to the microsecond).
    pub(crate) max: f64,
}

/// The upper bounds of the fixed latency buckets, µs: 50 µs to 10 s in 1–2.5–5 steps, covering a
/// frame's decode (tens of µs) to an offline run's queueing (seconds). A value is counted in the
/// first bucket whose bound is ≥ it; values above the last bound only in the total.
pub(crate) const BUCKET_BOUNDS_US: [u64; 18] = [
    50,
    100,
    250,
    500,
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    u64::MAX,
];

/// A histogram of durations. Values are recorded in whole microseconds with 3 significant digits
/// (relative error ≤ 0.1%) and the range grows as needed.
#[derive(Debug, Clone)]
pub(crate) struct LatencyHistogram {
    hist: Histogram<u64>,
    /// Exact smallest recorded value, µs (the histogram only keeps it to 3 significant digits).
    min_us: u64,
    /// Exact largest recorded value, µs.
    max_us: u64,
    /// Values that could not be recorded (negative, NaN, infinite, too large).
    ignored: u64,
    /// Recorded values per fixed bucket ([`BUCKET_BOUNDS_US`]), not cumulative.
    buckets: [u64; BUCKET_BOUNDS_US.len()],
    /// Exact sum of the recorded values, µs.
    sum_us: u128,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub(crate) fn new() -> Self {
        Self {
            hist: Histogram::new(3).expect("3 significant digits is a valid histogram precision"),
            min_us: u64::MAX,
            max_us: 0,
            ignored: 0,
            buckets: [0; BUCKET_BOUNDS_US.len()],
            sum_us: 0,
        }
    }

    /// Records a duration in milliseconds, rounded to the nearest microsecond. Negative, NaN and
    /// infinite values are ignored (and counted in [`LatencyHistogram::ignored`]).
    pub(crate) fn record_ms(&mut self, ms: f64) {
        let Some(us) = ms_to_us(ms) else {
            self.ignored += 1;
            return;
        };
        match self.hist.record(us) {
            Ok(()) => {
                self.min_us = self.min_us.min(us);
                self.max_us = self.max_us.max(us);
                // The last bound is u64::MAX, so some bucket always takes the value.
                let b = BUCKET_BOUNDS_US.partition_point(|&bound| bound < us);
                self.buckets[b.min(BUCKET_BOUNDS_US.len() - 1)] += 1;
                self.sum_us += u128::from(us);
            }
            Err(_) => self.ignored += 1,
        }
    }

    /// Number of recorded values.
    pub(crate) fn len(&self) -> u64 {
        self.hist.len()
    }

    /// True when nothing has been recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The exact sum of the recorded values, seconds.
    pub(crate) fn sum_seconds(&self) -> f64 {
        // µs → s by one division of the exact integer: the nearest f64 to the decimal value.
        self.sum_us as f64 / 1e6
    }

    /// The cumulative bucket counts: for each bound of [`BUCKET_BOUNDS_US`] but the last (in µs),
    /// how many recorded values are ≤ it. The count of all values is [`LatencyHistogram::len`].
    pub(crate) fn cumulative_buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let finite = BUCKET_BOUNDS_US.len() - 1;
        BUCKET_BOUNDS_US[..finite]
            .iter()
            .zip(&self.buckets)
            .scan(0u64, |total, (&bound, &n)| {
                *total += n;
                Some((bound, *total))
            })
    }

    /// Number of values passed to [`LatencyHistogram::record_ms`] that were not recorded.
    #[cfg(test)]
    fn ignored(&self) -> u64 {
        self.ignored
    }

    /// p50/p90/p95/p99/max in milliseconds (3 decimals); all 0 when empty. A quantile is the lower
    /// end of its histogram bucket (within 0.1% of the exact order statistic), kept within the exact
    /// minimum and maximum, so a run of equal values reports that value exactly.
    pub(crate) fn quantiles(&self) -> Quantiles {
        if self.hist.is_empty() {
            return Quantiles::default();
        }
        let q = |p: f64| {
            let v = self.hist.lowest_equivalent(self.hist.value_at_quantile(p));
            us_to_ms(v.clamp(self.min_us, self.max_us))
        };
        Quantiles {
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            max: us_to_ms(self.max_us),
        }
    }
}

/// Milliseconds to whole microseconds; `None` for negative, NaN, infinite or out-of-range values.
fn ms_to_us(ms: f64) -> Option<u64> {
    if ms.is_nan() || ms < 0.0 {
        return None; // negative or NaN
    }
    let us = (ms * 1000.0).round();
    // 2^63 keeps clear of the histogram's own limits; anything that large is garbage anyway.
    (us < 9.223_372_036_854_776e18).then_some(us as u64)
}

/// Whole microseconds to milliseconds with 3 decimals.
fn us_to_ms(us: u64) -> f64 {
    // Dividing the exact integer by 1000 gives the nearest f64 to the 3-decimal value.
    us as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_count_each_value_once_at_its_bound_and_the_sum_is_exact() {
        let mut h = LatencyHistogram::new();
        // 0.05 ms = 50 µs sits on the first bound (le is ≤); 0.0501 ms rounds to 50 µs too.
        for ms in [0.05, 0.0501, 0.051, 3.0, 20_000.0] {
            h.record_ms(ms);
        }
        let b: Vec<(u64, u64)> = h.cumulative_buckets().collect();
        assert_eq!(b.len(), BUCKET_BOUNDS_US.len() - 1);
        assert_eq!(b[0], (50, 2));
        assert_eq!(b[1], (100, 3));
        assert_eq!(b[6], (5_000, 4));
        // 20 s is above the last finite bound: only in the count.
        assert_eq!(*b.last().unwrap(), (10_000_000, 4));
        assert_eq!(h.len(), 5);
        assert_eq!(h.sum_seconds(), 20.003151);
        assert!(b.windows(2).all(|w| w[0].1 <= w[1].1));
    }

    #[test]
    fn empty_is_all_zero() {
        let h = LatencyHistogram::new();
        assert!(h.is_empty());
        assert_eq!(h.quantiles(), Quantiles::default());
    }

    #[test]
    fn quantiles_of_one_to_hundred() {
        let mut h = LatencyHistogram::new();
        for i in 1..=100 {
            h.record_ms(f64::from(i));
        }
        let q = h.quantiles();
        // Values up to 100 ms = 100 000 µs; 3 significant digits → buckets of at most 64 µs here.
        assert!((q.p50 - 50.0).abs() <= 0.05, "{q:?}");
        assert!((q.p90 - 90.0).abs() <= 0.09, "{q:?}");
        assert!((q.p95 - 95.0).abs() <= 0.095, "{q:?}");
        assert!((q.p99 - 99.0).abs() <= 0.099, "{q:?}");
        assert_eq!(q.max, 100.0);
        assert_eq!(h.len(), 100);
    }

    #[test]
    fn small_values_are_exact_to_the_microsecond() {
        let mut h = LatencyHistogram::new();
        h.record_ms(1.2344); // rounds to 1234 µs
        h.record_ms(0.0);
        let q = h.quantiles();
        assert_eq!(q.p50, 0.0);
        assert_eq!(q.p99, 1.234);
        assert_eq!(q.max, 1.234);
    }

    #[test]
    fn quantiles_stay_within_exact_min_and_max() {
        // 123 456 µs and 3 501 µs fall inside wider buckets (resolution 64 µs and 2 µs).
        for v in [123.456, 3.501, 3.5] {
            let mut h = LatencyHistogram::new();
            h.record_ms(v);
            h.record_ms(v);
            let q = h.quantiles();
            assert_eq!(
                q,
                Quantiles {
                    p50: v,
                    p90: v,
                    p95: v,
                    p99: v,
                    max: v
                }
            );
        }
    }

    #[test]
    fn quantiles_are_within_a_tenth_of_a_percent() {
        let mut h = LatencyHistogram::new();
        // 1000 values 10.000, 10.037, ..., 46.963 ms.
        let values: Vec<f64> = (0..1000).map(|i| 10.0 + f64::from(i) * 0.037).collect();
        for v in &values {
            h.record_ms(*v);
        }
        let q = h.quantiles();
        for (got, rank) in [(q.p50, 500), (q.p90, 900), (q.p95, 950), (q.p99, 990)] {
            let exact = values[rank - 1];
            assert!(got <= exact && got >= exact * 0.999, "{got} vs {exact}");
        }
        assert_eq!(q.max, 46.963);
    }

    #[test]
    fn bad_values_are_ignored() {
        let mut h = LatencyHistogram::new();
        for v in [
            -1.0,
            -0.0004,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
        ] {
            h.record_ms(v);
        }
        assert!(h.is_empty());
        assert_eq!(h.ignored(), 6);
        h.record_ms(2.0);
        assert_eq!(h.quantiles().max, 2.0);
        // Large but sane values grow the range.
        h.record_ms(3_600_000.0);
        assert_eq!(h.quantiles().max, 3_600_000.0);
    }
}
