//! Building a [`Summary`]: from the streaming state ([`Summary::from_metrics`], every metric
//! family of the registry computing its entry) or from records alone ([`Summary::recompute`],
//! which rebuilds the streaming state and lets each family take from the previous summary what
//! records cannot rebuild).

use super::{FrameCounts, ScenarioSummary, Summary};
use crate::key::CLEAN;
use crate::metrics::{Metrics, Record};
use crate::report::families::{self, FAMILIES};
use crate::report::family::Inputs;
use crate::report::run_block::RunBlock;

impl Summary {
    /// The summary of the streaming state `m`, with the run description and frame counts.
    pub(crate) fn from_metrics(m: &Metrics, run: RunBlock, frames: FrameCounts) -> Self {
        let scenarios: Vec<(String, ScenarioSummary)> = m
            .tallies()
            .map(|(k, t)| (k.to_string(), t.into()))
            .collect();
        let inputs = Inputs {
            scenarios: &scenarios,
            metrics: m,
        };
        let metrics = FAMILIES
            .iter()
            .filter_map(|f| Some((f.key().to_string(), f.compute(&inputs)?)))
            .collect();
        Self {
            format: crate::contract::Format,
            run,
            frames,
            scenarios,
            metrics,
            latency_ms: m
                .latencies()
                .map(|(s, h)| (s.name().to_string(), h.quantiles()))
                .collect(),
        }
    }

    /// Rebuilds a summary from records alone, giving the same numbers as the streaming path fed the
    /// same records. Records are split into frames as written (see `group_by_frame`); scenarios
    /// are ordered as in `previous` when given, then by first appearance with `clean` first. `run` and
    /// `frames` are copied from `previous` (the run's own `summary.json`) when given; otherwise `run` is
    /// an empty object and `frames.read` is the number of frames found.
    pub fn recompute(records: &[Record], previous: Option<&Summary>) -> Self {
        Self::recompute_with_metrics(records, previous).0
    }

    /// [`Summary::recompute`], with the metrics it was computed from.
    pub(crate) fn recompute_with_metrics(
        records: &[Record],
        previous: Option<&Summary>,
    ) -> (Self, Metrics) {
        let mut order: Vec<String> = previous
            .map(|p| p.scenarios.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        if records.iter().any(|r| r.scenario == CLEAN) && !order.iter().any(|k| k == CLEAN) {
            order.insert(0, CLEAN.to_string());
        }
        // The window of the written summary, rebuilt at the same length.
        let window = previous.and_then(Summary::window_frames).unwrap_or(0);
        // The groups compared with the same reference groups (docs/groups.md#gap).
        let compared = previous
            .and_then(Summary::group_settings)
            .unwrap_or_default();
        let mut metrics = Metrics::new(order)
            .with_window(window)
            .with_groups(compared);
        let groups = group_by_frame(records);
        for group in &groups {
            metrics.add_frame(group);
        }
        let (run, frames) = match previous {
            Some(p) => (p.run.clone(), p.frames.clone()),
            None => (
                RunBlock::default(),
                FrameCounts {
                    read: groups.len() as u64,
                    ..FrameCounts::default()
                },
            ),
        };
        let mut summary = Self::from_metrics(&metrics, run, frames);
        if let Some(p) = previous {
            for f in FAMILIES {
                f.carry_over(&mut summary, p);
            }
            summary.keep_post_pass_families(p);
        }
        (summary, metrics)
    }

    /// After a recompute: copies from `previous` the metric families that records cannot rebuild
    /// (those of post-passes, e.g. `saliency`; anything the registry does not rebuild from
    /// records) and puts the families in `previous`'s order (new ones after), so a recomputed
    /// summary of an unchanged run equals the written one.
    fn keep_post_pass_families(&mut self, previous: &Summary) {
        for (k, v) in &previous.metrics {
            if !families::rebuilt_from_records(k) && !self.metrics.contains_key(k) {
                self.metrics.insert(k.clone(), v.clone());
            }
        }
        let mut ordered = serde_json::Map::new();
        for k in previous.metrics.keys() {
            if let Some(v) = self.metrics.remove(k) {
                ordered.insert(k.clone(), v);
            }
        }
        ordered.append(&mut self.metrics);
        self.metrics = ordered;
    }
}

/// Splits records (as written: frame after frame, in source order) into one slice per frame: a new
/// frame starts where the frame id changes, or where a scenario repeats under the same id (a source
/// that lists the same file twice yields two frames with one id).
fn group_by_frame(records: &[Record]) -> Vec<&[Record]> {
    let mut groups = Vec::new();
    let mut start = 0;
    for i in 1..=records.len() {
        let ends = i == records.len()
            || records[i].frame != records[start].frame
            || records[start..i]
                .iter()
                .any(|r| r.scenario == records[i].scenario);
        if ends {
            groups.push(&records[start..i]);
            start = i;
        }
    }
    groups
}
