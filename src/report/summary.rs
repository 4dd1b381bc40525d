//! The run summary (`summary.json`): its data model, read and written as JSON. Built in
//! [`compute`] (from the streaming state or from records, the metric families through their
//! registry), rendered in [`markdown`] (`summary.md`), [`text`] (the terminal table) and [`csv`];
//! `report.html` is [`super::html`].
//!
//! `summary.json` contract (other tools rely on it; keys in this order):
//! ```text
//! { "format": 3 (crate::contract, docs/output.md#format-changelog),
//!   "run": {...config, model, engine, seed, plan, start/end, end reason: run_block::RunBlock...},
//!   "frames": {"read": N, "skipped": N, "dropped": N[, "lost": N, "lost_causes": {"<cause>": N}]},
//!   "scenarios": {"<key>": {"n": N, "n_labelled": N, "top1": f|null, "top1_ci95": [lo, hi]|null,
//!                           "top5": f|null, "drop": f|null, "agreement": f|null,
//!                           "flip": f|null, "flip_excess": f|null}, ... plan order},
//!   "metrics": {...per metric family...},
//!   "latency_ms": {"<stage>": {"p50": ms, "p90": ms, "p95": ms, "p99": ms, "max": ms}, ... pipeline order} }
//! ```
//! Accuracies, drop and agreement are fractions (drop may be negative); `null` where undefined.

mod compute;
mod csv;
mod markdown;
mod text;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ReportError;
use super::run_block::RunBlock;
use crate::latency::Quantiles;
use crate::metrics::Tally;

/// Frame counts of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FrameCounts {
    /// Frames read from the source.
    pub(crate) read: u64,
    /// Frames skipped because of bad input (corrupt image, bad label, ...).
    pub(crate) skipped: u64,
    /// Frames dropped by a live source's back-pressure policy (the pipeline was behind).
    pub(crate) dropped: u64,
    /// Frames the source lost before robustream saw them (a camera driver's sequence gaps; see
    /// `Source::lost`); written only when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) lost: u64,
    /// `lost` by cause (`Source::lost_causes`: `sequence_gap`, a GenICam stream's
    /// `missing_packets`, `timeout`…), adding up to `lost`; written only when not empty
    /// (docs/output.md#run-directory).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) lost_causes: BTreeMap<String, u64>,
}

impl FrameCounts {
    /// Sets `lost_causes` from a source's cumulative `(cause, count)` pairs.
    pub(crate) fn set_lost_causes(&mut self, causes: &[(&'static str, u64)]) {
        self.lost_causes = causes
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| ((*c).to_string(), *n))
            .collect();
    }

    /// The causes of `lost` in words (`2 incomplete, 1 timeout`); `None` without causes.
    pub(crate) fn lost_causes_text(&self) -> Option<String> {
        (!self.lost_causes.is_empty()).then(|| {
            let causes: Vec<String> = self
                .lost_causes
                .iter()
                .map(|(c, n)| format!("{n} {}", c.replace('_', " ")))
                .collect();
            causes.join(", ")
        })
    }

    /// [`FrameCounts::lost_causes_text`] in brackets after a space, or nothing.
    pub(crate) fn lost_causes_bracketed(&self) -> String {
        self.lost_causes_text()
            .map_or_else(String::new, |c| format!(" ({c})"))
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One scenario's line of the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ScenarioSummary {
    /// Records evaluated.
    pub(crate) n: u64,
    /// Records with a truth.
    pub(crate) n_labelled: u64,
    /// Top-1 accuracy (fraction) over labelled records.
    pub(crate) top1: Option<f64>,
    /// 95% Wilson interval of `top1`, `[low, high]`.
    pub(crate) top1_ci95: Option<[f64; 2]>,
    /// Top-5 accuracy (fraction) over labelled records.
    pub(crate) top5: Option<f64>,
    /// Top-1 accuracy drop from clean (fraction) on frames labelled in both (see [`Tally::drop`]).
    pub(crate) drop: Option<f64>,
    /// Fraction of frames whose model top-1 equals clean's (see [`Tally::agreement`]).
    pub(crate) agreement: Option<f64>,
    /// Flip probability over consecutive frames (see [`Tally::flip_probability`]).
    #[serde(default)]
    pub(crate) flip: Option<f64>,
    /// Flip probability minus clean's on the same frame pairs (see [`Tally::flip_excess`]).
    #[serde(default)]
    pub(crate) flip_excess: Option<f64>,
}

impl From<&Tally> for ScenarioSummary {
    fn from(t: &Tally) -> Self {
        Self {
            n: t.n,
            n_labelled: t.n_labelled,
            top1: t.top1(),
            top1_ci95: t.top1_ci95().map(|(lo, hi)| [lo, hi]),
            top5: t.top5(),
            drop: t.drop(),
            agreement: t.agreement(),
            flip: t.flip_probability(),
            flip_excess: t.flip_excess(),
        }
    }
}

/// The summary of a run (see the module docs for its JSON form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The output contract's format (docs/output.md#format-changelog): written first; absent in
    /// summaries of format 1.
    #[serde(default)]
    pub(crate) format: crate::contract::Format,
    /// What the run was and how it ended ([`RunBlock`]).
    #[serde(
        serialize_with = "super::run_block::serialize_run",
        deserialize_with = "super::run_block::deserialize_run"
    )]
    pub(crate) run: RunBlock,
    /// Frame counts.
    pub(crate) frames: FrameCounts,
    /// Per-scenario results in plan order.
    #[serde(with = "crate::ordered")]
    pub(crate) scenarios: Vec<(String, ScenarioSummary)>,
    /// Per metric family results (filled by the metric families; an empty object otherwise).
    #[serde(default)]
    pub(crate) metrics: serde_json::Map<String, serde_json::Value>,
    /// Latency quantiles per stage in milliseconds, in pipeline order ([`crate::metrics::Stage`]), stages seen
    /// only.
    #[serde(default, with = "crate::ordered")]
    pub(crate) latency_ms: Vec<(String, Quantiles)>,
}

impl Summary {
    /// A metric family read back from `metrics.<name>`; `None` when absent or of another shape.
    pub(crate) fn family<T: serde::de::DeserializeOwned>(&self, name: &str) -> Option<T> {
        self.metrics
            .get(name)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// Parses a `summary.json` text.
    pub(crate) fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Reads a `summary.json` file.
    pub(crate) fn read(path: &Path) -> Result<Self, ReportError> {
        let text = crate::fsread::read_text_io(path, crate::fsread::MAX_TABLE_TEXT_BYTES)
            .map_err(ReportError::io("read", path))?;
        Self::from_json(&text).map_err(|source| ReportError::MalformedSummary {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Pretty-printed JSON (no trailing newline).
    pub fn to_json(&self) -> String {
        // Cannot fail: every map key is a string.
        serde_json::to_string_pretty(self).expect("a Summary serialises to JSON")
    }
}

#[cfg(test)]
pub(crate) mod tests;
