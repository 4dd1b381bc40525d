//! The engine's batches, one [`BatchRecord`] each (`batches.csv`, docs/output.md#batchescsv), and
//! what a run's batches add up to ([`BatchStats`], summary.json's `run.batches`).
//!
//! A record's `infer` stage is its batch's inference time, so a per-record p99 is one batch's time
//! weighted by how many rows it held: it cannot say how often the engine stalls, nor why. A batch
//! record can: each runtime call's shape and time, whether the shape changed from the engine's
//! previous call (a provider that re-plans per shape pays there), the engine's idle gap before it
//! (a GPU that clocks down between paced batches pays there) and how long its rows queued.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::RunTiming;
use crate::latency::{LatencyHistogram, Quantiles};

/// One batch the engine ran, or one warm-up round of one size on the engine thread.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRecord {
    /// Position among the engine thread's batches, warm-up rounds first, from 0.
    pub(crate) index: u64,
    /// A warm-up run (zeros, no records) rather than a batch of rows.
    pub(crate) warmup: bool,
    /// When it started, seconds since the pipeline started.
    pub(crate) start_s: f64,
    /// Rows of the batch (for a warm-up run: its size).
    pub(crate) rows: usize,
    /// The runtime calls that ran it, in order ([`crate::engine::Engine::take_runs`]); one
    /// stand-in call of the whole batch for an engine that does not say.
    pub(crate) calls: Vec<Call>,
    /// The engine's idle time between the end of its previous batch and this one, ms (`None` for
    /// the first).
    pub(crate) gap_ms: Option<f64>,
    /// Median and largest time the batch's rows waited between being written and the batch's
    /// start, ms (`None` for a warm-up run).
    pub(crate) queue_ms: Option<(f64, f64)>,
    /// The whole batch's inference, ms (its calls and the copies around them).
    pub(crate) infer_ms: f64,
}

/// One runtime call of a batch: its shape, rows and time, and whether the engine's call before it
/// (in this batch or the one before) ran another shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Call {
    /// The call's shape, its timing and real rows.
    pub(crate) run: RunTiming,
    /// The engine's previous call ran another shape (false for the engine's first call).
    pub(crate) changed: bool,
}

impl Call {
    /// The calls of `runs` in order, the first compared with `previous` (the shape of the
    /// engine's call before them); returns them and the shape of the last.
    pub(crate) fn sequence(
        runs: &[RunTiming],
        previous: Option<usize>,
    ) -> (Vec<Call>, Option<usize>) {
        let mut prev = previous;
        let calls = runs
            .iter()
            .map(|&run| {
                let changed = prev.is_some_and(|p| p != run.shape);
                prev = Some(run.shape);
                Call { run, changed }
            })
            .collect();
        (calls, prev)
    }
}

/// The header of `batches.csv`, one column per field of [`BatchRecord::csv_line`].
pub(crate) const CSV_HEADER: &str = "batch,kind,start_s,rows,padded,shapes,calls_ms,shape_changes,gap_ms,\
                              queue_p50_ms,queue_max_ms,infer_ms";

impl BatchRecord {
    /// Rows of padding its calls ran.
    pub(crate) fn padded(&self) -> usize {
        self.calls
            .iter()
            .map(|c| c.run.shape - c.run.rows.min(c.run.shape))
            .sum()
    }

    /// How many of its calls ran another shape than the engine's call before each.
    pub(crate) fn shape_changes(&self) -> usize {
        self.calls.iter().filter(|c| c.changed).count()
    }

    /// The line of `batches.csv` (docs/output.md#batchescsv): calls as `shape+shape`, their times
    /// likewise, ms to the microsecond, seconds to the microsecond, absent values empty.
    pub(crate) fn csv_line(&self) -> String {
        let join = |f: &dyn Fn(&RunTiming) -> String| {
            self.calls
                .iter()
                .map(|c| f(&c.run))
                .collect::<Vec<_>>()
                .join("+")
        };
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.3}"));
        format!(
            "{},{},{:.6},{},{},{},{},{},{},{},{},{:.3}",
            self.index,
            if self.warmup { "warmup" } else { "batch" },
            self.start_s,
            self.rows,
            self.padded(),
            join(&|r| r.shape.to_string()),
            join(&|r| format!("{:.3}", r.ms)),
            self.shape_changes(),
            opt(self.gap_ms),
            opt(self.queue_ms.map(|q| q.0)),
            opt(self.queue_ms.map(|q| q.1)),
            self.infer_ms,
        )
    }
}

/// The runtime calls of one shape.
#[derive(Debug, Clone, Default)]
struct ShapeCalls {
    /// Calls whose shape was the engine's previous call's too.
    same: LatencyHistogram,
    /// Calls right after a call of another shape.
    changed: LatencyHistogram,
}

/// What a run's batches add up to: `run.batches` of summary.json (docs/output.md#runbatches).
/// Warm-up runs are kept apart: they are not the run's batches.
#[derive(Debug, Clone, Default)]
pub(crate) struct BatchStats {
    batches: u64,
    rows: u64,
    padded: u64,
    calls: u64,
    shape_changes: u64,
    infer: LatencyHistogram,
    gap: LatencyHistogram,
    queue_max: LatencyHistogram,
    by_shape: BTreeMap<usize, ShapeCalls>,
    warmup: BTreeMap<usize, Vec<f64>>,
}

/// Quantiles of one series, or nothing when it is empty.
fn quantiles(h: &LatencyHistogram) -> Option<Quantiles> {
    (!h.is_empty()).then(|| h.quantiles())
}

/// `run.batches.by_shape.<size>`.
#[derive(Debug, Serialize)]
struct ShapeJson {
    calls: u64,
    after_change: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ms: Option<Quantiles>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ms_after_change: Option<Quantiles>,
}

impl BatchStats {
    /// Counts one batch record.
    pub(crate) fn add(&mut self, b: &BatchRecord) {
        if b.warmup {
            for c in &b.calls {
                let ms = round3(c.run.ms);
                self.warmup.entry(c.run.shape).or_default().push(ms);
            }
            return;
        }
        self.batches += 1;
        self.rows += b.rows as u64;
        self.padded += b.padded() as u64;
        self.calls += b.calls.len() as u64;
        self.shape_changes += b.shape_changes() as u64;
        self.infer.record_ms(b.infer_ms);
        if let Some(gap) = b.gap_ms {
            self.gap.record_ms(gap);
        }
        if let Some((_, max)) = b.queue_ms {
            self.queue_max.record_ms(max);
        }
        for c in &b.calls {
            let calls = self.by_shape.entry(c.run.shape).or_default();
            match c.changed {
                true => calls.changed.record_ms(c.run.ms),
                false => calls.same.record_ms(c.run.ms),
            }
        }
    }

    /// Whether no batch was counted.
    pub(crate) fn is_empty(&self) -> bool {
        self.batches == 0 && self.warmup.is_empty()
    }

    /// `run.batches` (docs/output.md#runbatches).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let by_shape: serde_json::Map<String, serde_json::Value> = self
            .by_shape
            .iter()
            .map(|(shape, c)| {
                let j = ShapeJson {
                    calls: c.same.len() + c.changed.len(),
                    after_change: c.changed.len(),
                    ms: quantiles(&c.same),
                    ms_after_change: quantiles(&c.changed),
                };
                (
                    shape.to_string(),
                    serde_json::to_value(j).unwrap_or_default(),
                )
            })
            .collect();
        serde_json::json!({
            "count": self.batches,
            "rows": self.rows,
            "padded_rows": self.padded,
            "calls": self.calls,
            "shape_changes": self.shape_changes,
            "infer_ms": quantiles(&self.infer),
            "gap_ms": quantiles(&self.gap),
            "queue_max_ms": quantiles(&self.queue_max),
            "by_shape": by_shape,
            "engine_thread_warmup_ms": self
                .warmup
                .iter()
                .map(|(s, v)| (s.to_string(), serde_json::json!(v)))
                .collect::<serde_json::Map<_, _>>(),
        })
    }
}

/// `v` rounded to 3 decimals (µs resolution for ms).
fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(shape: usize, rows: usize, ms: f64) -> RunTiming {
        RunTiming { shape, rows, ms }
    }

    #[test]
    fn calls_are_changed_when_the_engine_s_previous_call_ran_another_shape() {
        let (calls, last) = Call::sequence(&[run(4, 4, 1.0), run(4, 4, 1.0), run(1, 1, 0.5)], None);
        let changed: Vec<bool> = calls.iter().map(|c| c.changed).collect();
        assert_eq!(changed, [false, false, true]);
        assert_eq!(last, Some(1));
        // Against the batch before: its last call ran 1.
        let (calls, _) = Call::sequence(&[run(4, 3, 1.0)], last);
        assert!(calls[0].changed);
        let (calls, last) = Call::sequence(&[], Some(8));
        assert!(calls.is_empty());
        assert_eq!(last, Some(8));
    }

    #[test]
    fn a_batch_line_has_every_column_and_sums_its_padding() {
        let (calls, _) = Call::sequence(&[run(8, 8, 3.25), run(4, 3, 1.5)], Some(8));
        let b = BatchRecord {
            index: 7,
            warmup: false,
            start_s: 1.5,
            rows: 11,
            calls,
            gap_ms: Some(0.25),
            queue_ms: Some((2.0, 4.5)),
            infer_ms: 4.875,
        };
        assert_eq!(b.padded(), 1);
        assert_eq!(b.shape_changes(), 1);
        let line = b.csv_line();
        assert_eq!(
            line,
            "7,batch,1.500000,11,1,8+4,3.250+1.500,1,0.250,2.000,4.500,4.875"
        );
        assert_eq!(
            line.split(',').count(),
            CSV_HEADER.split(',').count(),
            "{CSV_HEADER}"
        );
        let first = BatchRecord {
            gap_ms: None,
            queue_ms: None,
            warmup: true,
            ..b
        };
        assert!(first.csv_line().contains(",warmup,"));
        assert!(
            first.csv_line().contains(",1,,,,4.875"),
            "{}",
            first.csv_line()
        );
    }

    #[test]
    fn the_stats_keep_warm_ups_apart_and_split_calls_by_change() {
        let mut stats = BatchStats::default();
        assert!(stats.is_empty());
        let batch = |calls: Vec<Call>, rows| BatchRecord {
            index: 0,
            warmup: false,
            start_s: 0.0,
            rows,
            calls,
            gap_ms: Some(1.0),
            queue_ms: Some((1.0, 2.0)),
            infer_ms: 10.0,
        };
        let (warm, last) = Call::sequence(&[run(4, 4, 9.0)], None);
        stats.add(&BatchRecord {
            warmup: true,
            gap_ms: None,
            queue_ms: None,
            ..batch(warm, 4)
        });
        let (a, last) = Call::sequence(&[run(4, 4, 2.0)], last);
        stats.add(&batch(a, 4));
        let (b, last) = Call::sequence(&[run(2, 1, 5.0)], last);
        stats.add(&batch(b, 1));
        let (c, _) = Call::sequence(&[run(2, 2, 1.0)], last);
        stats.add(&batch(c, 2));
        let j = stats.to_json();
        assert_eq!(j["count"], 3);
        assert_eq!(j["rows"], 7);
        assert_eq!(j["padded_rows"], 1);
        assert_eq!(j["calls"], 3);
        assert_eq!(j["shape_changes"], 1);
        assert_eq!(j["by_shape"]["2"]["calls"], 2);
        assert_eq!(j["by_shape"]["2"]["after_change"], 1);
        assert_eq!(j["by_shape"]["2"]["ms_after_change"]["max"], 5.0);
        assert_eq!(j["by_shape"]["2"]["ms"]["max"], 1.0);
        assert_eq!(j["by_shape"]["4"]["after_change"], 0);
        assert!(j["by_shape"]["4"].get("ms_after_change").is_none());
        assert_eq!(j["engine_thread_warmup_ms"]["4"], serde_json::json!([9.0]));
        assert_eq!(j["infer_ms"]["p50"], 10.0);
    }
}
