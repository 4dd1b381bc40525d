//! The run summary (`summary.json`) and its renderings: Markdown, CSV and a terminal table.
//!
//! `summary.json` contract (other tools rely on it; keys in this order):
//! ```text
//! { "run": {...free-form: config, model, engine, seed, plan, start/end, end reason...},
//!   "frames": {"read": N, "skipped": N, "dropped": N},
//!   "scenarios": {"<key>": {"n": N, "n_labelled": N, "top1": f|null, "top1_ci95": [lo, hi]|null,
//!                           "top5": f|null, "drop": f|null, "agreement": f|null,
//!                           "flip": f|null, "flip_excess": f|null}, ... plan order},
//!   "metrics": {...per metric family...},
//!   "latency_ms": {"<stage>": {"p50": ms, "p90": ms, "p95": ms, "p99": ms, "max": ms}, ... pipeline order} }
//! ```
//! Accuracies, drop and agreement are fractions (drop may be negative); `null` where undefined.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ReportError;
use crate::key::{CLEAN, ScenarioKey};
use crate::latency::Quantiles;
use crate::metrics::hard_imagenet::HardImagenet;
use crate::metrics::imagenet_c::{BaselineTable, ImagenetC};
use crate::metrics::in9::{ChallengeTally, In9};
use crate::metrics::placement::Placement;
use crate::metrics::rfs::Rfs;
use crate::metrics::volatility::{InnerResults, TABLE2, Volatility};
use crate::metrics::{Metrics, Record, Tally};

/// Frame counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameCounts {
    /// Frames read from the source.
    pub read: u64,
    /// Frames skipped because of bad input (corrupt image, bad label, ...).
    pub skipped: u64,
    /// Frames dropped by a live source's back-pressure policy (the pipeline was behind).
    pub dropped: u64,
    /// Frames the source lost before robustream saw them (a camera driver's sequence gaps; see
    /// `Source::lost`); written only when not 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One scenario's line of the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    /// Records evaluated.
    pub n: u64,
    /// Records with a truth.
    pub n_labelled: u64,
    /// Top-1 accuracy (fraction) over labelled records.
    pub top1: Option<f64>,
    /// 95% Wilson interval of `top1`, `[low, high]`.
    pub top1_ci95: Option<[f64; 2]>,
    /// Top-5 accuracy (fraction) over labelled records.
    pub top5: Option<f64>,
    /// Top-1 accuracy drop from clean (fraction) on frames labelled in both (see [`Tally::drop`]).
    pub drop: Option<f64>,
    /// Fraction of frames whose model top-1 equals clean's (see [`Tally::agreement`]).
    pub agreement: Option<f64>,
    /// Flip probability over consecutive frames (see [`Tally::flip_probability`]).
    #[serde(default)]
    pub flip: Option<f64>,
    /// Flip probability minus clean's on the same frame pairs (see [`Tally::flip_excess`]).
    #[serde(default)]
    pub flip_excess: Option<f64>,
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
    /// Free-form description of the run (config path, model, engine, seed, plan, times, end reason).
    pub run: serde_json::Value,
    /// Frame counts.
    pub frames: FrameCounts,
    /// Per-scenario results in plan order.
    #[serde(with = "crate::ordered")]
    pub scenarios: Vec<(String, ScenarioSummary)>,
    /// Per metric family results (filled by the metric families; an empty object otherwise).
    #[serde(default)]
    pub metrics: serde_json::Map<String, serde_json::Value>,
    /// Latency quantiles per stage in milliseconds, in pipeline order ([`crate::metrics::Stage`]), stages seen
    /// only.
    #[serde(default, with = "crate::ordered")]
    pub latency_ms: Vec<(String, Quantiles)>,
}

impl Summary {
    /// The summary of the streaming state `m`, with the run description and frame counts.
    pub fn from_metrics(m: &Metrics, run: serde_json::Value, frames: FrameCounts) -> Self {
        let scenarios: Vec<(String, ScenarioSummary)> = m
            .tallies()
            .map(|(k, t)| (k.to_string(), t.into()))
            .collect();
        let mut metrics = serde_json::Map::new();
        if let Some(ic) = imagenet_c_metrics(
            &scenarios,
            BaselineTable::builtin().map_err(|e| e.to_string()),
        ) {
            metrics.insert("imagenet_c".into(), ic);
        }
        if let Some(in9) = crate::metrics::in9::compute(top1_of(&scenarios), None) {
            metrics.insert("in9".into(), to_value(&in9));
        }
        if let Some(v) = crate::metrics::volatility::compute(top1_of(&scenarios), None) {
            metrics.insert("volatility".into(), to_value(&v));
        }
        let ablations = scenarios
            .iter()
            .map(|(k, s)| (k.as_str(), s.n_labelled, s.top1, s.drop));
        if let Some(h) = crate::metrics::hard_imagenet::compute(ablations) {
            metrics.insert("hard_imagenet".into(), to_value(&h));
        }
        let classes = m
            .keys()
            .iter()
            .filter_map(|k| m.class_tallies(k).map(|c| (k.as_str(), c)));
        if let Some(r) = crate::metrics::rfs::compute(classes) {
            metrics.insert("rfs".into(), to_value(&r));
        }
        let counts = m.tallies().map(|(k, t)| (k, t.n_labelled, t.top1_correct));
        if let Some(p) = crate::metrics::placement::compute(counts, m.object_scores()) {
            metrics.insert("placement".into(), to_value(&p));
        }
        if let Some(w) = m.window() {
            metrics.insert("window".into(), to_value(&w));
        }
        Self {
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
        let mut order: Vec<String> = previous
            .map(|p| p.scenarios.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        if records.iter().any(|r| r.scenario == CLEAN) && !order.iter().any(|k| k == CLEAN) {
            order.insert(0, CLEAN.to_string());
        }
        // The window of the written summary, rebuilt at the same length.
        let window = previous
            .and_then(|p| p.metrics.get("window"))
            .and_then(|w| w.get("frames"))
            .and_then(serde_json::Value::as_u64)
            .map_or(0, |f| f as usize);
        let mut metrics = Metrics::new(order).with_window(window);
        let groups = group_by_frame(records);
        for group in &groups {
            metrics.add_frame(group);
        }
        let (run, frames) = match previous {
            Some(p) => (p.run.clone(), p.frames),
            None => (
                serde_json::Value::Object(serde_json::Map::new()),
                FrameCounts {
                    read: groups.len() as u64,
                    ..FrameCounts::default()
                },
            ),
        };
        let mut summary = Self::from_metrics(&metrics, run, frames);
        if let Some(tally) = previous.and_then(Summary::challenge) {
            summary.set_challenge(tally);
        }
        if let Some(inner) = previous.and_then(|p| p.volatility()).and_then(|v| v.inner) {
            summary.set_ximagenet_inner(&inner);
        }
        if let Some(stored) = previous.and_then(Summary::stored_ce_baseline) {
            match stored {
                Ok(table) => summary.set_ce_baseline(&table),
                // Never a silent fall-back to AlexNet: the entry says why there is no CE.
                Err(e) => summary.set_imagenet_c(Err(e)),
            }
        }
        if let Some(p) = previous {
            summary.keep_post_pass_families(p);
        }
        summary
    }

    /// After a recompute: copies from `previous` the metric families that records cannot rebuild
    /// (those of post-passes, e.g. `saliency`; anything not in [`RECORD_FAMILIES`]) and puts the
    /// families in `previous`'s order (new ones after), so a recomputed summary of an unchanged run
    /// equals the written one.
    fn keep_post_pass_families(&mut self, previous: &Summary) {
        for (k, v) in &previous.metrics {
            if !RECORD_FAMILIES.contains(&k.as_str()) && !self.metrics.contains_key(k) {
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

    /// Recomputes `metrics.imagenet_c` against `table` instead of the built-in AlexNet one (config
    /// `[metrics] ce_baseline`; the formulas of docs/imagenet-c.md#metrics with another denominator
    /// model). No effect when the plan has no labelled ImageNet-C corruption. A table other than
    /// the built-in one is kept in `summary.json` (`baseline_table`), so [`Summary::recompute`]
    /// with this summary as `previous` uses it again.
    pub fn set_ce_baseline(&mut self, table: &BaselineTable) {
        self.set_imagenet_c(Ok(table));
    }

    /// Replaces `metrics.imagenet_c` with the metrics against `table`, or an `{"error": …}` entry.
    fn set_imagenet_c(&mut self, table: Result<&BaselineTable, String>) {
        if let Some(v) = imagenet_c_metrics(&self.scenarios, table) {
            self.metrics.insert("imagenet_c".into(), v);
        }
    }

    /// The baseline table stored in `metrics.imagenet_c.baseline_table` (a run with `[metrics]
    /// ce_baseline`), validated again; `None` when the run used the built-in table.
    fn stored_ce_baseline(&self) -> Option<Result<BaselineTable, String>> {
        let stored = self.metrics.get("imagenet_c")?.get("baseline_table")?;
        Some(serde_json::from_value(stored.clone()).map_err(|e| {
            format!(
                "summary.json metrics.imagenet_c.baseline_table: {e}; fix it there or rerun \
                     with the table"
            )
        }))
    }

    /// Adds the user's XIMAGENET-12 inner results (accuracies of scenario-trained models, config
    /// `[metrics] ximagenet_inner`) to `metrics.volatility`: σ²_inner and S_robust
    /// (docs/ximagenet.md#cross-and-inner-variance, docs/ximagenet.md#s_robust). No effect when the
    /// plan has no XIMAGENET-12 scenario. The results are kept in `summary.json` so
    /// [`Summary::recompute`] with this summary as `previous` keeps them.
    pub fn set_ximagenet_inner(&mut self, inner: &InnerResults) {
        if let Some(v) = crate::metrics::volatility::compute(top1_of(&self.scenarios), Some(inner))
        {
            self.metrics.insert("volatility".into(), to_value(&v));
        }
    }

    /// The XIMAGENET-12 volatility metrics (`metrics.volatility`), if the plan had such scenarios.
    pub fn volatility(&self) -> Option<Volatility> {
        self.family("volatility")
    }

    /// The Hard ImageNet ablation metrics (`metrics.hard_imagenet`), if the plan had ablations.
    pub fn hard_imagenet(&self) -> Option<HardImagenet> {
        self.family("hard_imagenet")
    }

    /// The placement metrics (`metrics.placement`), if the plan had placements or frames had boxes.
    pub fn placement(&self) -> Option<Placement> {
        self.family("placement")
    }

    /// The RFS metrics (`metrics.rfs`), if the plan had `region_noise/*` scenarios.
    pub fn rfs(&self) -> Option<Rfs> {
        self.family("rfs")
    }

    /// The terminal lines of the background/object families other than IN-9 (volatility, Hard
    /// ImageNet, RFS), each ending in a newline; empty when none is present.
    fn object_lines(&self) -> String {
        let mut out = String::new();
        if let Some(v) = self.volatility() {
            out.push_str(&volatility_line(&v));
        }
        if let Some(h) = self.hard_imagenet() {
            out.push_str(&hard_imagenet_line(&h));
        }
        if let Some(r) = self.rfs() {
            out.push_str(&rfs_lines(&r));
        }
        if let Some(p) = self.placement() {
            out.push_str(&placement_lines(&p));
        }
        out
    }

    /// The summary.md sections of the background/object families other than IN-9.
    fn object_markdown(&self) -> String {
        let mut out = String::new();
        if let Some(v) = self.volatility() {
            out.push_str("\n## XIMAGENET-12 volatility (docs/ximagenet.md#robustness-score)\n\n");
            let _ = writeln!(out, "- {}", md_cell(volatility_line(&v).trim_end()));
            let _ = writeln!(out, "- clean accuracy μ: {}\n", pct(v.mu));
            let mut rows = vec![vec![
                "scenario".to_string(),
                "(C(i) − μ)² × 100".to_string(),
            ]];
            rows.extend(
                v.drop_volatility
                    .iter()
                    .map(|(k, x)| vec![md_cell(k), num(x.map(|x| x * 100.0), 2)]),
            );
            out.push_str(&md_table(&rows));
        }
        if let Some(h) = self.hard_imagenet() {
            out.push_str(
                "\n## Hard ImageNet ablations \
                 (docs/hard-imagenet.md#ablation-accuracy-and-drop)\n\n",
            );
            let mut rows = vec![
                ["ablation", "n", "accuracy", "drop"]
                    .map(String::from)
                    .to_vec(),
            ];
            rows.extend(
                h.ablations
                    .iter()
                    .map(|(k, a)| vec![md_cell(k), a.n.to_string(), pct(a.accuracy), pct(a.drop)]),
            );
            out.push_str(&md_table(&rows));
        }
        if let Some(r) = self.rfs() {
            out.push_str(
                "\n## Relative foreground sensitivity \
                 (docs/hard-imagenet.md#relative-foreground-sensitivity)\n\n",
            );
            out.push_str(
                "Class-balanced accuracies under noise on the object (fg) or the background (bg), \
                 trials pooled per class; RFS = (bg − fg) / (2·min(ā, 1 − ā)).\n\n",
            );
            let mut rows = vec![
                [
                    "noise", "level", "fg acc", "bg acc", "RFS", "trials", "classes",
                ]
                .map(String::from)
                .to_vec(),
            ];
            for (kind, levels) in &r.noise {
                for (level, l) in &levels.0 {
                    rows.push(vec![
                        md_cell(kind),
                        md_cell(level),
                        pct(l.acc_fg),
                        pct(l.acc_bg),
                        num(l.rfs, 3),
                        l.trials.to_string(),
                        l.classes.to_string(),
                    ]);
                }
            }
            out.push_str(&md_table(&rows));
        }
        if let Some(p) = self.placement() {
            out.push_str(
                "\n## Object placement \
                 (Corner Cases, docs/corner-cases.md#evaluation-and-difficulty-groups)\n\n",
            );
            for line in placement_lines(&p).lines() {
                let _ = writeln!(out, "- {}", md_cell(line));
            }
            for (name, v) in &p.variants {
                let _ = writeln!(out, "\n{name} placements (background/position/size):\n");
                let mut rows = vec![["cell", "n", "accuracy"].map(String::from).to_vec()];
                rows.extend(
                    v.cells
                        .iter()
                        .map(|(k, c)| vec![md_cell(k), c.n.to_string(), pct(c.accuracy)]),
                );
                out.push_str(&md_table(&rows));
            }
            if !p.classes.is_empty() {
                out.push_str(
                    "\nCentre and size scores per class \
                     (docs/corner-cases.md#centre-and-size-scores):\n\n",
                );
                let mut rows = vec![
                    ["class", "images", "centre score", "size score"]
                        .map(String::from)
                        .to_vec(),
                ];
                rows.extend(p.classes.iter().map(|(k, c)| {
                    vec![
                        md_cell(k),
                        c.images.to_string(),
                        format!("{:.3}", c.centre_score),
                        format!("{:.3}", c.size_score),
                    ]
                }));
                out.push_str(&md_table(&rows));
            }
        }
        out
    }

    /// A metric family read back from `metrics.<name>`; `None` when absent or of another shape.
    fn family<T: serde::de::DeserializeOwned>(&self, name: &str) -> Option<T> {
        self.metrics
            .get(name)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// Records the outcome of the adversarial-background challenge (docs/in9.md#challenge-accuracy,
    /// run after the stream by the challenge pass) in `metrics.in9`: `challenge_accuracy` and the
    /// raw counts under `challenge`. Creates the `in9` section when the plan had no IN-9 variation.
    /// The counts stay in `summary.json`, so [`Summary::recompute`] with this summary as `previous`
    /// keeps them.
    pub fn set_challenge(&mut self, tally: ChallengeTally) {
        if let Some(in9) = crate::metrics::in9::compute(top1_of(&self.scenarios), Some(tally)) {
            self.metrics.insert("in9".into(), to_value(&in9));
        }
    }

    /// The challenge's counts recorded by [`Summary::set_challenge`], if any.
    pub fn challenge(&self) -> Option<ChallengeTally> {
        self.in9().and_then(|m| m.challenge)
    }

    /// The IN-9 metrics of this summary (`metrics.in9`), if its plan had IN-9 variations or a
    /// challenge ran.
    pub fn in9(&self) -> Option<In9> {
        self.metrics
            .get("in9")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// Parses a `summary.json` text.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Reads a `summary.json` file.
    pub fn read(path: &Path) -> Result<Self, ReportError> {
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

    /// Markdown report: title, run facts, frame counts, the scenario table (percentages) and the
    /// latency table (ms).
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("# robustream run summary\n\n");
        if let Some(run) = self.run.as_object() {
            let facts: Vec<String> = run
                .iter()
                .filter_map(|(k, v)| {
                    scalar(v).map(|v| format!("- {}: {}\n", md_cell(k), md_cell(&v)))
                })
                .collect();
            if !facts.is_empty() {
                out.push_str(&facts.concat());
                out.push('\n');
            }
        }
        let f = &self.frames;
        let lost = match f.lost {
            0 => String::new(),
            n => format!(", {n} lost by the source"),
        };
        let _ = writeln!(
            out,
            "Frames: {} read, {} skipped, {} dropped{lost}.\n",
            f.read, f.skipped, f.dropped
        );
        out.push_str("## Scenarios\n\n");
        let mut rows = vec![SCENARIO_HEADER.map(String::from).to_vec()];
        rows.extend(
            self.scenarios
                .iter()
                .map(|(k, s)| scenario_cells(&md_cell(k), s)),
        );
        out.push_str(&md_table(&rows));
        if let Some(ic) = self.imagenet_c() {
            out.push_str(&imagenet_c_markdown(&ic));
        } else if let Some(e) = self.imagenet_c_error() {
            let _ = writeln!(out, "\n## ImageNet-C\n\n- {}", md_cell(e));
        }
        if let Some(in9) = self.in9() {
            out.push_str(&in9_markdown(&in9));
        }
        out.push_str(&self.object_markdown());
        if let Some(line) = self.window_line() {
            let _ = writeln!(out, "\n## Sliding window\n\n- {}", md_cell(&line));
        }
        out.push_str("\n## Latency (ms)\n\n");
        if self.latency_ms.is_empty() {
            out.push_str("No timings recorded.\n");
        } else {
            let mut rows = vec![LATENCY_HEADER.map(String::from).to_vec()];
            rows.extend(
                self.latency_ms
                    .iter()
                    .map(|(stage, q)| latency_cells(stage, q)),
            );
            out.push_str(&md_table(&rows));
        }
        out
    }

    /// CSV, one row per scenario: `scenario,n,n_labelled,top1,top1_ci_lo,top1_ci_hi,top5,drop,agreement,flip,flip_excess`;
    /// fractions with 6 decimals, empty where undefined.
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "scenario,n,n_labelled,top1,top1_ci_lo,top1_ci_hi,top5,drop,agreement,flip,flip_excess\n",
        );
        for (key, s) in &self.scenarios {
            let ci = s.top1_ci95;
            let fields = [
                csv_field(key),
                s.n.to_string(),
                s.n_labelled.to_string(),
                frac6(s.top1),
                frac6(ci.map(|c| c[0])),
                frac6(ci.map(|c| c[1])),
                frac6(s.top5),
                frac6(s.drop),
                frac6(s.agreement),
                frac6(s.flip),
                frac6(s.flip_excess),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }

    /// The per-scenario table as aligned plain text for a terminal (same columns as the Markdown).
    pub fn table(&self) -> String {
        let mut rows = vec![SCENARIO_HEADER.map(String::from).to_vec()];
        rows.extend(self.scenarios.iter().map(|(k, s)| scenario_cells(k, s)));
        let widths = column_widths(&rows);
        let mut out = String::new();
        for (i, row) in rows.iter().enumerate() {
            let mut line = String::new();
            for (j, (cell, w)) in row.iter().zip(&widths).enumerate() {
                if j == 0 {
                    let _ = write!(line, "{cell:<w$}");
                } else {
                    let _ = write!(line, "  {cell:>w$}");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
            if i == 0 {
                let total = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
                out.push_str(&"-".repeat(total));
                out.push('\n');
            }
        }
        if let Some(ic) = self.imagenet_c() {
            out.push('\n');
            out.push_str(&imagenet_c_lines(&ic));
        } else if let Some(e) = self.imagenet_c_error() {
            let _ = writeln!(out, "\n{e}");
        }
        if let Some(in9) = self.in9() {
            out.push('\n');
            out.push_str(&in9_lines(&in9));
        }
        let objects = self.object_lines();
        if !objects.is_empty() {
            out.push('\n');
            out.push_str(&objects);
        }
        if let Some(line) = self.window_line() {
            let _ = writeln!(out, "\n{line}");
        }
        out
    }

    /// The sliding window of this summary (`metrics.window`), if one was kept.
    pub fn window(&self) -> Option<crate::metrics::window::WindowReport> {
        self.metrics
            .get("window")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// One line on the sliding window: its drop volatility and the trend's temporal volatility.
    fn window_line(&self) -> Option<String> {
        let w = self.window()?;
        let v = |x: Option<f64>| x.map_or_else(|| NONE.to_string(), |x| format!("{x:.4}"));
        Some(format!(
            "Sliding window (last {} frames, {} in it, drops by {}): drop volatility {}; temporal \
             volatility of the mean drop {} over {} windows",
            w.frames,
            w.filled,
            w.basis,
            v(w.drop_volatility),
            v(w.temporal_volatility),
            w.series.len()
        ))
    }

    /// The ImageNet-C metrics of this summary (`metrics.imagenet_c`), if its plan had ImageNet-C
    /// corruptions.
    pub fn imagenet_c(&self) -> Option<ImagenetC> {
        self.metrics
            .get("imagenet_c")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// Why `metrics.imagenet_c` holds no metrics (`{"error": "..."}`: an unusable baseline table).
    fn imagenet_c_error(&self) -> Option<&str> {
        self.metrics.get("imagenet_c")?.get("error")?.as_str()
    }
}

/// The metric families [`Summary::recompute`] rebuilds from records (with the challenge's counts and
/// the XIMAGENET-12 inner results taken from the previous summary); any other family in
/// `summary.json` comes from a post-pass and is carried over.
pub const RECORD_FAMILIES: &[&str] = &[
    "window",
    "imagenet_c",
    "in9",
    "volatility",
    "hard_imagenet",
    "rfs",
    "placement",
];

/// `(scenario key, top-1)` of every scenario line.
fn top1_of(scenarios: &[(String, ScenarioSummary)]) -> impl Iterator<Item = (&str, Option<f64>)> {
    scenarios.iter().map(|(k, s)| (k.as_str(), s.top1))
}

/// A metric family's value as JSON. Cannot fail: the families hold only numbers, strings, booleans
/// and string-keyed maps.
fn to_value<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("metric families serialise to JSON")
}

/// The `metrics.imagenet_c` value for these scenario lines (docs/imagenet-c.md#metrics; see
/// [`crate::metrics::imagenet_c::compute`]), or `None` when the plan holds no ImageNet-C corruption
/// with a labelled record.
/// normalised by `table`. Should the table be unusable (the built-in one cannot be: a unit test keeps
/// it valid; a stored one may have been edited), the value is `{"error": "..."}` rather than a panic.
fn imagenet_c_metrics(
    scenarios: &[(String, ScenarioSummary)],
    table: Result<&BaselineTable, String>,
) -> Option<serde_json::Value> {
    // Errors need labels: an unlabelled stream has agreement and flips, not CE.
    if !scenarios.iter().any(|(k, s)| {
        matches!(ScenarioKey::parse(k), ScenarioKey::Corruption { .. }) && s.n_labelled > 0
    }) {
        return None;
    }
    let table = match table {
        Ok(t) => t,
        Err(e) => return Some(serde_json::json!({ "error": e })),
    };
    let errors = scenarios
        .iter()
        .map(|(k, s)| (k.as_str(), s.top1.map(|a| 1.0 - a)));
    let ic = crate::metrics::imagenet_c::compute(table, errors)?;
    Some(serde_json::to_value(ic).expect("plain numbers and strings serialise"))
}

/// The ImageNet-C lines of the terminal table and summary.md, each ending in a newline: mCE and
/// relative mCE over the baseline table's benchmark corruptions (or how many have a CE), the
/// all-19 means when present, and the incomplete corruptions with their missing severities. The
/// baseline is named as 100 %.
fn imagenet_c_lines(ic: &ImagenetC) -> String {
    let table = match ic.table() {
        Ok(t) => t,
        Err(e) => return format!("ImageNet-C: {e}\n"),
    };
    let (bench, of) = (ic.benchmark_complete(table), table.benchmark().len());
    let base = &ic.baseline;
    let mut out = match ic.mce {
        Some(mce) => format!(
            "ImageNet-C ({base} = 100%): mCE {}, relative mCE {} ({of} benchmark corruptions){}\n",
            pct(Some(mce)),
            pct(ic.relative_mce),
            match (ic.clean_error, table.clean()) {
                (None, _) => "; relative needs the clean error",
                (Some(_), None) => "; relative needs the baseline's clean error",
                _ => "",
            }
        ),
        None => format!(
            "ImageNet-C ({base} = 100%): CE for {} corruption{} ({bench} of the {of} benchmark \
             ones); mCE needs all {of} × 5\n",
            ic.ce.len(),
            if ic.ce.len() == 1 { "" } else { "s" },
        ),
    };
    if let Some(all) = ic.mce_all19 {
        let _ = writeln!(
            out,
            "ImageNet-C all 19 (benchmark + validation, not the published mCE): mean CE {}, \
             relative {}",
            pct(Some(all)),
            pct(ic.relative_mce_all19)
        );
    }
    if !ic.incomplete.is_empty() {
        const SHOWN: usize = 4;
        let mut parts: Vec<String> = ic
            .incomplete
            .iter()
            .take(SHOWN)
            .map(|(name, missing)| {
                let s: Vec<String> = missing.iter().map(u8::to_string).collect();
                format!("{name} (no severity {})", s.join(", "))
            })
            .collect();
        if ic.incomplete.len() > SHOWN {
            parts.push(format!("… ({} in all)", ic.incomplete.len()));
        }
        let _ = writeln!(out, "ImageNet-C incomplete, no CE: {}", parts.join(", "));
    }
    out
}

/// The ImageNet-C section of summary.md: the lines of [`imagenet_c_lines`], the clean error, a table
/// of per-severity errors, mean error, CE and relative CE per corruption in the plan, and what the
/// ratios are normalised by.
fn imagenet_c_markdown(ic: &ImagenetC) -> String {
    let mut out = format!(
        "\n## ImageNet-C (normalised by {}, docs/imagenet-c.md#metrics)\n\n",
        md_cell(&ic.baseline)
    );
    for line in imagenet_c_lines(ic).lines() {
        let _ = writeln!(out, "- {}", md_cell(line));
    }
    let _ = writeln!(out, "- clean error: {}\n", pct(ic.clean_error));
    let mut rows = vec![
        [
            "corruption",
            "sev 1",
            "sev 2",
            "sev 3",
            "sev 4",
            "sev 5",
            "mean error",
            "CE",
            "relative CE",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (name, errors) in &ic.errors {
        let mut row = vec![md_cell(name)];
        row.extend(errors.iter().map(|e| pct(*e)));
        let complete: Option<Vec<f64>> = errors.iter().copied().collect();
        row.push(pct(complete.map(|e| e.iter().sum::<f64>() / 5.0)));
        row.push(pct(ic.ce.iter().find(|(n, _)| n == name).map(|(_, v)| *v)));
        row.push(pct(ic
            .relative_ce
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| *v)));
        rows.push(row);
    }
    out.push_str(&md_table(&rows));
    let _ = writeln!(out, "\nNormalisation: {}.", md_cell(&ic.normalisation));
    out
}

/// The IN-9 lines of the terminal table and summary.md, each ending in a newline: accuracy per
/// variation, BG-gap, and the challenge (accuracy, vulnerable / foregrounds, composites, whether it
/// completed).
fn in9_lines(m: &In9) -> String {
    let mut out = String::new();
    if !m.accuracy.is_empty() {
        let parts: Vec<String> = m
            .accuracy
            .iter()
            .map(|(v, a)| format!("{v} {}", pct(*a)))
            .collect();
        let _ = writeln!(out, "IN-9 accuracy: {}", parts.join(", "));
        let _ = writeln!(
            out,
            "IN-9 BG-gap (mixed_same − mixed_rand): {}",
            pct(m.bg_gap)
        );
    }
    if let Some(c) = m.challenge {
        let _ = writeln!(
            out,
            "IN-9 challenge accuracy: {} ({} of {} foregrounds vulnerable, {} backgrounds, {} \
             composites{})",
            pct(m.challenge_accuracy),
            c.vulnerable,
            c.foregrounds,
            c.backgrounds,
            c.composites,
            if c.complete { "" } else { "; incomplete" }
        );
        if c.failed > 0 {
            let _ = writeln!(
                out,
                "  {} composites not scored (the model's output could not be scored), {} \
                 foregrounds undecided and left out",
                c.failed, c.undecided
            );
        }
    }
    out
}

/// The volatility line: σ²_cross, score_cross and, with inner results, S_robust.
fn volatility_line(v: &Volatility) -> String {
    let full = match (v.score, v.variance_inner) {
        (Some(s), Some(i)) => format!(
            "; S_robust {} (σ²_inner {})",
            num(Some(s), 4),
            num(Some(i), 4)
        ),
        _ if v.inner.is_some() => "; S_robust undefined (inner results cover < 2 scenarios)".into(),
        _ => "; S_robust needs [metrics] ximagenet_inner".into(),
    };
    // What σ²_cross covers: the paper's Table 2 set by name, else the scenarios themselves.
    let is_table2 = v.scenarios.len() == TABLE2.len()
        && TABLE2.iter().all(|t| v.scenarios.iter().any(|s| s == t));
    let covers = match (v.scenarios.is_empty(), is_table2) {
        (true, _) => String::new(),
        (false, true) => ": the paper's Table 2 set".into(),
        (false, false) => format!(": {}", v.scenarios.join(", ")),
    };
    let table2 = match (&v.table2, is_table2) {
        (Some(t), false) => format!(
            "; Table 2 set (8): σ²_cross {}, score_cross {}",
            num(Some(t.variance_cross), 4),
            num(Some(t.score_cross), 4)
        ),
        _ => String::new(),
    };
    format!(
        "XIMAGENET-12: σ²_cross {} over {} scenario{} (n − 1{covers}), score_cross {}{table2}{full}\n",
        num(v.variance_cross, 4),
        v.n,
        if v.n == 1 { "" } else { "s" },
        num(v.score_cross, 4),
    )
}

/// The Hard ImageNet line: accuracy (and paired drop) per ablation.
fn hard_imagenet_line(h: &HardImagenet) -> String {
    let parts: Vec<String> = h
        .ablations
        .iter()
        .map(|(k, a)| {
            if k == "none" {
                format!("none {}", pct(a.accuracy))
            } else {
                format!("{k} {} (drop {})", pct(a.accuracy), pct(a.drop))
            }
        })
        .collect();
    format!("Hard ImageNet ablations: {}\n", parts.join(", "))
}

/// The RFS lines: one per noise type (level → RFS) and the typical level in full.
fn rfs_lines(r: &Rfs) -> String {
    let mut out = String::new();
    for (kind, levels) in &r.noise {
        let parts: Vec<String> = levels
            .0
            .iter()
            .map(|(level, l)| format!("{level} {}", num(l.rfs, 3)))
            .collect();
        let _ = writeln!(out, "RFS {kind}: {}", parts.join(", "));
    }
    if let Some(t) = &r.typical {
        let _ = writeln!(
            out,
            "RFS typical (linf 0.25): {} (fg {}, bg {}, {} trials, {} classes)",
            num(t.rfs, 3),
            pct(t.acc_fg),
            pct(t.acc_bg),
            t.trials,
            t.classes
        );
    }
    out
}

/// The placement lines: per variant, accuracy per size and per group and the worst cell; the
/// number of classes with centre/size scores.
fn placement_lines(p: &Placement) -> String {
    let mut out = String::new();
    let join = |cells: &[(String, crate::metrics::placement::Cell)]| -> String {
        cells
            .iter()
            .map(|(k, c)| format!("{k} {}", pct(c.accuracy)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (name, v) in &p.variants {
        let worst = v.worst.as_ref().map_or_else(
            || NONE.to_string(),
            |w| format!("{} {}", w.cell, pct(Some(w.accuracy))),
        );
        let difficulty = match v.difficulties.is_empty() {
            true => String::new(),
            false => format!("; by difficulty {}", join(&v.difficulties)),
        };
        let _ = writeln!(
            out,
            "Placement {name}: by size {}; by group {}{difficulty}; worst {worst}",
            join(&v.sizes),
            join(&v.groups)
        );
    }
    if !p.classes.is_empty() {
        let images: u64 = p.classes.iter().map(|(_, c)| c.images).sum();
        let _ = writeln!(
            out,
            "Centre/size scores: {} class{} from {images} framed image{} (summary.json)",
            p.classes.len(),
            if p.classes.len() == 1 { "" } else { "es" },
            if images == 1 { "" } else { "s" },
        );
    }
    out
}

/// A number with `decimals` decimals (sign shown for negatives only), or `–`.
fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| NONE.to_string(), |v| format!("{v:.decimals$}"))
}

/// The IN-9 section of summary.md: the lines of [`in9_lines`] as a list.
fn in9_markdown(m: &In9) -> String {
    let mut out = String::from("\n## IN-9 / Backgrounds Challenge (docs/in9.md)\n\n");
    for line in in9_lines(m).lines() {
        let _ = writeln!(out, "- {}", md_cell(line));
    }
    out
}

const SCENARIO_HEADER: [&str; 7] = [
    "scenario",
    "n",
    "top-1",
    "95% CI",
    "top-5",
    "drop",
    "agreement",
];
const LATENCY_HEADER: [&str; 6] = ["stage", "p50", "p90", "p95", "p99", "max"];
/// Shown for an undefined value.
const NONE: &str = "–";

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

/// The table cells of one scenario: key, n, percentages with one decimal.
fn scenario_cells(key: &str, s: &ScenarioSummary) -> Vec<String> {
    let ci = s.top1_ci95.map_or_else(
        || NONE.to_string(),
        |[lo, hi]| format!("{:.1}–{:.1}", lo * 100.0, hi * 100.0),
    );
    vec![
        key.to_string(),
        s.n.to_string(),
        pct(s.top1),
        ci,
        pct(s.top5),
        pct(s.drop),
        pct(s.agreement),
    ]
}

/// The table cells of one latency stage, ms with 3 decimals.
fn latency_cells(stage: &str, q: &Quantiles) -> Vec<String> {
    let ms = |v: f64| format!("{v:.3}");
    vec![
        stage.to_string(),
        ms(q.p50),
        ms(q.p90),
        ms(q.p95),
        ms(q.p99),
        ms(q.max),
    ]
}

/// A fraction as a percentage with one decimal (`71.4%`), or `–`.
fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| NONE.to_string(), |v| format!("{:.1}%", v * 100.0))
}

/// A fraction with 6 decimals, or empty.
fn frac6(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.6}")).unwrap_or_default()
}

/// A JSON scalar as display text; `None` for arrays, objects and null.
fn scalar(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Text safe inside a Markdown table cell or list item: `|` escaped, line breaks as spaces.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A CSV field, quoted (RFC 4180) when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Widths of each column in characters.
fn column_widths(rows: &[Vec<String>]) -> Vec<usize> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    (0..cols)
        .map(|j| {
            rows.iter()
                .filter_map(|r| r.get(j))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// A Markdown table from rows (the first is the header); first column left-aligned, others right.
fn md_table(rows: &[Vec<String>]) -> String {
    // At least 3 wide, so the alignment rule (`:--`, `--:`) fits.
    let widths: Vec<usize> = column_widths(rows).into_iter().map(|w| w.max(3)).collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(j, (c, w))| {
                if j == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if i == 0 {
            let rule: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(j, w)| {
                    let dashes = "-".repeat(w - 1);
                    if j == 0 {
                        format!(":{dashes}")
                    } else {
                        format!("{dashes}:")
                    }
                })
                .collect();
            let _ = writeln!(out, "| {} |", rule.join(" | "));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::metrics::accuracy::{Z95, wilson_interval};
    use crate::metrics::tests::{frames, rec, timed};
    use crate::metrics::volatility::InnerResults;
    use serde_json::json;

    /// Asserts two summaries are equal up to float rounding in the last bit: serde_json's default
    /// float parser is not always correctly rounded, so a summary read back from JSON may differ from
    /// the one written by one unit in the last place.
    pub(crate) fn assert_same(a: &Summary, b: &Summary) {
        fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
            use serde_json::Value::{Array, Number, Object};
            match (a, b) {
                (Number(x), Number(y)) => match (x.as_f64(), y.as_f64()) {
                    (Some(x), Some(y)) => (x - y).abs() <= 1e-15 * x.abs().max(y.abs()).max(1.0),
                    _ => x == y,
                },
                (Array(x), Array(y)) => {
                    x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
                }
                (Object(x), Object(y)) => {
                    x.len() == y.len()
                        && x.iter()
                            .zip(y)
                            .all(|((kx, x), (ky, y))| kx == ky && same(x, y))
                }
                _ => a == b,
            }
        }
        let (ja, jb) = (
            serde_json::to_value(a).unwrap(),
            serde_json::to_value(b).unwrap(),
        );
        assert!(same(&ja, &jb), "{ja:#}\n!=\n{jb:#}");
    }

    #[test]
    fn assert_same_tolerates_only_the_last_bit() {
        let s = streamed(&["clean", "fog"], &timed_frames());
        let mut t = s.clone();
        let top1 = t.scenarios[1].1.top1.unwrap();
        t.scenarios[1].1.top1 = Some(f64::from_bits(top1.to_bits() + 1));
        assert_same(&s, &t);
        t.scenarios[1].1.top1 = Some(top1 + 1e-9);
        assert!(std::panic::catch_unwind(|| assert_same(&s, &t)).is_err());
    }

    fn keys(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// The hand-checked frames of `metrics::tests::frames`, with timings on some records.
    fn timed_frames() -> Vec<Vec<Record>> {
        let mut fs = frames();
        fs[0][0] = timed(
            fs[0][0].clone(),
            &[("decode", 1.0), ("infer", 2.5), ("total", 10.0)],
        );
        fs[0][1] = timed(
            fs[0][1].clone(),
            &[("decode", 1.0), ("infer", 3.5), ("total", 12.0)],
        );
        fs[1][2] = timed(fs[1][2].clone(), &[("infer", 4.0), ("total", 8.0)]);
        fs
    }

    /// Two frames over the scenario keys `order` (truth 1): `a` right everywhere, `b` right on
    /// `clean` only.
    fn right_and_wrong(order: &[String]) -> Vec<Vec<Record>> {
        let frame = |id: &str, right: bool| -> Vec<Record> {
            order
                .iter()
                .map(|k| rec(id, k, Some(1), &[if right || k == "clean" { 1 } else { 2 }]))
                .collect()
        };
        vec![frame("a", true), frame("b", false)]
    }

    fn streamed(order: &[&str], fs: &[Vec<Record>]) -> Summary {
        let mut m = Metrics::new(keys(order));
        for f in fs {
            m.add_frame(f);
        }
        let run =
            json!({"config": "configs/demo.toml", "model": "resnet50", "seed": 7, "plan": order});
        Summary::from_metrics(
            &m,
            run,
            FrameCounts {
                read: 5,
                skipped: 1,
                dropped: 0,
                lost: 0,
            },
        )
    }

    #[test]
    fn summary_numbers_by_hand() {
        let s = streamed(&["clean", "fog", "noise"], &timed_frames());
        let keys: Vec<&str> = s.scenarios.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, vec!["clean", "fog", "noise"]);
        let fog = &s.scenarios[1].1;
        assert_eq!((fog.n, fog.n_labelled), (4, 3));
        assert_eq!(fog.top1, Some(2.0 / 3.0));
        let (lo, hi) = wilson_interval(2, 3, Z95);
        assert_eq!(fog.top1_ci95, Some([lo, hi]));
        assert_eq!((fog.top5, fog.drop), (Some(1.0), Some(0.0)));
        assert_eq!(fog.agreement, Some(1.0 / 3.0));
        let lat: Vec<&str> = s.latency_ms.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(lat, vec!["decode", "infer", "total"]);
        assert_eq!(s.latency_ms[1].1.max, 4.0);
        assert_eq!(s.latency_ms[1].1.p50, 3.5);
    }

    #[test]
    fn json_contract() {
        let s = streamed(&["clean", "fog", "noise"], &timed_frames());
        let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        let top: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            top,
            vec!["run", "frames", "scenarios", "metrics", "latency_ms"]
        );
        assert_eq!(v["frames"], json!({"read": 5, "skipped": 1, "dropped": 0}));
        assert_eq!(v["metrics"], json!({}));
        assert_eq!(v["run"]["model"], "resnet50");
        let clean = &v["scenarios"]["clean"];
        let fields: Vec<&str> = clean
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            fields,
            vec![
                "n",
                "n_labelled",
                "top1",
                "top1_ci95",
                "top5",
                "drop",
                "agreement",
                "flip",
                "flip_excess"
            ]
        );
        assert_eq!(clean["n"], 3);
        assert_eq!(clean["top1"], 0.5);
        assert_eq!(clean["top1_ci95"].as_array().unwrap().len(), 2);
        let order: Vec<&str> = v["scenarios"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(order, vec!["clean", "fog", "noise"]);
        let lat: Vec<&str> = v["latency_ms"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(lat, vec!["decode", "infer", "total"]);
        assert_eq!(
            v["latency_ms"]["infer"],
            json!({"p50": 3.5, "p90": 4.0, "p95": 4.0, "p99": 4.0, "max": 4.0})
        );
        // Round trip (numbers to the last bit or so: see `assert_same`).
        assert_same(&Summary::from_json(&s.to_json()).unwrap(), &s);
    }

    #[test]
    fn nulls_where_undefined() {
        let mut m = Metrics::new(keys(&["clean", "fog"]));
        m.add_frame(&[rec("a", "fog", None, &[1])]);
        let s = Summary::from_metrics(&m, json!({}), FrameCounts::default());
        let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(
            v["scenarios"]["fog"],
            json!({"n": 1, "n_labelled": 0, "top1": null, "top1_ci95": null, "top5": null, "drop": null, "agreement": null, "flip": null, "flip_excess": null})
        );
        assert_eq!(v["scenarios"]["clean"]["n"], 0);
        assert_eq!(v["latency_ms"], json!({}));
    }

    #[test]
    fn rejects_malformed_summaries() {
        assert!(Summary::from_json("{}").is_err());
        let dup = r#"{"run": {}, "frames": {"read": 1, "skipped": 0, "dropped": 0},
            "scenarios": {"a": {"n": 1, "n_labelled": 0, "top1": null, "top1_ci95": null, "top5": null, "drop": null, "agreement": null},
                          "a": {"n": 1, "n_labelled": 0, "top1": null, "top1_ci95": null, "top5": null, "drop": null, "agreement": null}}}"#;
        let e = Summary::from_json(dup).unwrap_err();
        assert!(e.to_string().contains("duplicate key `a`"), "{e}");
        // `metrics` and `latency_ms` may be absent.
        let ok =
            r#"{"run": null, "frames": {"read": 1, "skipped": 0, "dropped": 0}, "scenarios": {}}"#;
        let s = Summary::from_json(ok).unwrap();
        assert!(s.metrics.is_empty() && s.latency_ms.is_empty());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        std::fs::write(&path, "{").unwrap();
        let e = Summary::read(&path).unwrap_err();
        assert!(
            matches!(e, ReportError::MalformedSummary { .. })
                && e.to_string().contains("summary.json")
        );
    }

    #[test]
    fn recompute_matches_streaming() {
        let fs = timed_frames();
        let s = streamed(&["clean", "fog", "noise"], &fs);
        let flat: Vec<Record> = fs.concat();
        let r = Summary::recompute(&flat, Some(&s));
        assert_eq!(r.to_json(), s.to_json());
        assert_eq!(r, s);
        // Without the previous summary: same scenarios and latency, frames from the records.
        let r = Summary::recompute(&flat, None);
        assert_eq!(r.scenarios, s.scenarios);
        assert_eq!(r.latency_ms, s.latency_ms);
        assert_eq!(
            r.frames,
            FrameCounts {
                read: 4,
                skipped: 0,
                dropped: 0,
                lost: 0,
            }
        );
        assert_eq!(r.run, json!({}));
    }

    #[test]
    fn recompute_splits_frames_that_share_an_id() {
        // A manifest listing the same file twice: two frames with one id, written one after the other.
        let recs = vec![
            rec("a.png", "clean", Some(1), &[1]),
            rec("a.png", "fog", Some(1), &[2]),
            rec("a.png", "clean", Some(1), &[1]),
            rec("a.png", "fog", Some(1), &[1]),
            rec("b.png", "clean", None, &[3]),
            rec("b.png", "fog", None, &[3]),
        ];
        let r = Summary::recompute(&recs, None);
        assert_eq!(r.frames.read, 3);
        let s = streamed(
            &["clean", "fog"],
            &[
                recs[0..2].to_vec(),
                recs[2..4].to_vec(),
                recs[4..6].to_vec(),
            ],
        );
        assert_eq!(r.scenarios, s.scenarios);
        let fog = &r.scenarios[1].1;
        // Paired over the two labelled frames: clean 2/2, fog 1/2; agreement over all three: 2/3.
        assert_eq!((fog.drop, fog.agreement), (Some(0.5), Some(2.0 / 3.0)));
    }

    #[test]
    fn recompute_keeps_previous_order_and_unseen_scenarios() {
        let fs = timed_frames();
        let s = streamed(&["clean", "zoom", "noise", "fog"], &fs);
        let r = Summary::recompute(&fs.concat(), Some(&s));
        assert_eq!(r.to_json(), s.to_json());
        assert_eq!(r.scenarios[1].0, "zoom");
        assert_eq!(r.scenarios[1].1.n, 0);
    }

    #[test]
    fn markdown_rendering() {
        let s = streamed(&["clean", "fog", "noise"], &timed_frames());
        let md = s.to_markdown();
        assert!(md.starts_with("# robustream run summary\n"), "{md}");
        assert!(
            md.contains("- model: resnet50\n") && md.contains("- seed: 7\n"),
            "{md}"
        );
        assert!(!md.contains("- plan"), "arrays are not listed: {md}");
        assert!(md.contains("Frames: 5 read, 1 skipped, 0 dropped."), "{md}");
        let lines: Vec<&str> = md.lines().collect();
        let header = lines
            .iter()
            .position(|l| l.starts_with("| scenario"))
            .unwrap();
        assert_eq!(
            lines[header],
            "| scenario |   n | top-1 |    95% CI |  top-5 | drop | agreement |"
        );
        assert_eq!(
            lines[header + 1],
            "| :------- | --: | ----: | --------: | -----: | ---: | --------: |"
        );
        let fog = lines[header + 3];
        let (lo, hi) = wilson_interval(2, 3, Z95);
        let ci = format!("{:.1}–{:.1}", lo * 100.0, hi * 100.0);
        assert_eq!(ci, "20.8–93.9");
        assert_eq!(
            fog,
            "| fog      |   4 | 66.7% | 20.8–93.9 | 100.0% | 0.0% |     33.3% |"
        );
        let latency = "## Latency (ms)\n\n\
            | stage  |    p50 |    p90 |    p95 |    p99 |    max |\n\
            | :----- | -----: | -----: | -----: | -----: | -----: |\n\
            | decode |  1.000 |  1.000 |  1.000 |  1.000 |  1.000 |\n\
            | infer  |  3.500 |  4.000 |  4.000 |  4.000 |  4.000 |\n\
            | total  | 10.000 | 12.000 | 12.000 | 12.000 | 12.000 |\n";
        assert!(md.ends_with(latency), "{md}");
    }

    #[test]
    fn markdown_nulls_and_escaping() {
        let mut m = Metrics::new(vec![]);
        m.add_frame(&[rec("a", "weird|key", None, &[1])]);
        let s = Summary::from_metrics(&m, json!({"note": "a|b"}), FrameCounts::default());
        let md = s.to_markdown();
        assert!(
            md.contains("| weird\\|key |   1 |     – |      – |     – |    – |         – |"),
            "{md}"
        );
        assert!(md.contains("- note: a\\|b"), "{md}");
        assert!(md.contains("No timings recorded."), "{md}");
    }

    #[test]
    fn csv_rendering() {
        let mut fs = frames();
        fs.push(vec![rec("f5", "odd,\"key\"", None, &[1])]);
        let s = streamed(&["clean", "fog", "noise"], &fs);
        let csv = s.to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "scenario,n,n_labelled,top1,top1_ci_lo,top1_ci_hi,top5,drop,agreement,flip,flip_excess"
        );
        let (lo, hi) = wilson_interval(1, 2, Z95);
        assert_eq!(
            lines[1],
            format!(
                "clean,3,2,0.500000,{lo:.6},{hi:.6},1.000000,0.000000,1.000000,1.000000,0.000000"
            )
        );
        assert_eq!(
            lines[2],
            "fog,4,3,0.666667,0.207660,0.938508,1.000000,0.000000,0.333333,1.000000,0.000000"
        );
        assert_eq!(lines[4], "\"odd,\"\"key\"\"\",1,0,,,,,,,,");
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn a_configured_ce_baseline_is_used_named_stored_and_kept_by_recompute() {
        // gaussian_noise complete (errors 0.5 at every severity: frame `b` wrong), fog at 1 only;
        // a baseline of 0.25 everywhere (no benchmark of 15: two corruptions) gives CE 2.
        let mut order = vec!["clean".to_string()];
        order.extend((1..=5).map(|s| format!("corruption/gaussian_noise/{s}")));
        order.push("corruption/fog/1".into());
        let fs = right_and_wrong(&order);
        let refs: Vec<&str> = order.iter().map(String::as_str).collect();
        let mut s = streamed(&refs, &fs);
        let alexnet = s.clone();
        let mut text = String::from(
            "model = \"Quarter | net\"\nclean = 0.125\nbenchmark = [\"gaussian_noise\", \"fog\"]\n\
             [errors]\n",
        );
        for (name, _) in crate::key::CORRUPTIONS {
            text += &format!("{name} = [0.25, 0.25, 0.25, 0.25, 0.25]\n");
        }
        let table = BaselineTable::parse(&text, "q.toml").unwrap();
        s.set_ce_baseline(&table);
        let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        let ic = &v["metrics"]["imagenet_c"];
        assert_eq!(ic["baseline"], "Quarter | net");
        assert_eq!(ic["ce"], json!({"gaussian_noise": 2.0}));
        // (2.5 − 5 × 0) / (1.25 − 5 × 0.125) = 4.
        assert_eq!(ic["relative_ce"], json!({"gaussian_noise": 4.0}));
        assert_eq!(ic["baseline_table"]["file"], "q.toml");
        assert_eq!(
            ic["baseline_table"]["benchmark"],
            json!(["gaussian_noise", "fog"])
        );
        assert_eq!(
            s.table().lines().find(|l| l.starts_with("ImageNet-C (")),
            Some(
                "ImageNet-C (Quarter | net = 100%): CE for 1 corruption (1 of the 2 benchmark \
                 ones); mCE needs all 2 × 5"
            )
        );
        let md = s.to_markdown();
        assert!(
            md.contains(
                "## ImageNet-C (normalised by Quarter \\| net, docs/imagenet-c.md#metrics)"
            ),
            "{md}"
        );
        assert!(
            md.contains("Normalisation: Quarter \\| net top-1 errors"),
            "{md}"
        );
        let row = md
            .lines()
            .find(|l| l.starts_with("| gaussian_noise "))
            .unwrap();
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells[7..10], ["50.0%", "200.0%", "400.0%"], "{row}");
        // The built-in table, set explicitly, changes nothing.
        let mut same = alexnet.clone();
        same.set_ce_baseline(BaselineTable::builtin().unwrap());
        assert_eq!(same.to_json(), alexnet.to_json());
        assert_eq!(alexnet.metrics["imagenet_c"]["baseline"], "AlexNet");
        assert!(
            alexnet.metrics["imagenet_c"]
                .get("baseline_table")
                .is_none()
        );
        // `report` rebuilds the metrics against the stored table, not AlexNet's.
        let r = Summary::recompute(&fs.concat(), Some(&s));
        assert_eq!(r.to_json(), s.to_json());
        // Without a summary there is nothing to take the baseline from: AlexNet's, and it says so.
        let r = Summary::recompute(&fs.concat(), None);
        assert_eq!(r.metrics["imagenet_c"]["baseline"], "AlexNet");
        // A stored table edited by hand is an error entry, shown in the table and summary.md.
        let mut bad = s.clone();
        bad.metrics["imagenet_c"]["baseline_table"]["errors"]["fog"][0] = json!(4.0);
        let r = Summary::recompute(&fs.concat(), Some(&bad));
        let e = r.metrics["imagenet_c"]["error"].as_str().unwrap();
        assert!(
            e.starts_with(
                "summary.json metrics.imagenet_c.baseline_table: ImageNet-C baseline table q.toml: \
                 `errors.fog` holds a value outside [0, 1]"
            ),
            "{e}"
        );
        assert!(r.imagenet_c().is_none());
        assert!(r.table().contains(&format!("\n{e}\n")), "{}", r.table());
        assert!(
            r.to_markdown()
                .contains("## ImageNet-C\n\n- summary.json metrics.imagenet_c.baseline_table: ")
        );
    }

    #[test]
    fn imagenet_c_metrics_in_json_markdown_table_and_recompute() {
        // Every key of all 19 corruptions × 5: frame `a` right everywhere, frame `b` right on clean
        // only, so the clean error is 0 and every severity's error 0.5.
        let table = BaselineTable::builtin().unwrap();
        let mut order = vec!["clean".to_string()];
        for (name, _) in table.errors() {
            order.extend((1..=5).map(|s| format!("corruption/{name}/{s}")));
        }
        let fs = right_and_wrong(&order);
        let refs: Vec<&str> = order.iter().map(String::as_str).collect();
        let s = streamed(&refs, &fs);
        let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        let ic = &v["metrics"]["imagenet_c"];
        assert_eq!(ic["clean_error"], 0.0);
        assert_eq!(ic["errors"]["fog"], json!([0.5, 0.5, 0.5, 0.5, 0.5]));
        let ce = |name: &str| 2.5 / table.errors_of(name).unwrap().iter().sum::<f64>();
        let rel =
            |name: &str| 2.5 / (table.errors_of(name).unwrap().iter().sum::<f64>() - 5.0 * 0.4348);
        assert!((ic["ce"]["fog"].as_f64().unwrap() - ce("fog")).abs() < 1e-12);
        assert!((ic["relative_ce"]["saturate"].as_f64().unwrap() - rel("saturate")).abs() < 1e-12);
        let names: Vec<&str> = table.errors().iter().map(|(n, _)| n.as_str()).collect();
        let mce15 = names[..15].iter().map(|n| ce(n)).sum::<f64>() / 15.0;
        let mce19 = names.iter().map(|n| ce(n)).sum::<f64>() / 19.0;
        let rel15 = names[..15].iter().map(|n| rel(n)).sum::<f64>() / 15.0;
        assert!((ic["mce"].as_f64().unwrap() - mce15).abs() < 1e-12);
        assert!((ic["mce_all19"].as_f64().unwrap() - mce19).abs() < 1e-12);
        assert!((ic["relative_mce"].as_f64().unwrap() - rel15).abs() < 1e-12);
        assert!(ic["relative_mce_all19"].as_f64().is_some());
        assert_eq!(ic["incomplete"], json!({}));
        // The same through the typed accessor, the terminal lines and the Markdown section.
        let typed = s.imagenet_c().unwrap();
        assert_eq!(typed.ce.len(), 19);
        let t = s.table();
        let pct = |v: f64| format!("{:.1}%", v * 100.0);
        assert!(
            t.contains(&format!(
                "ImageNet-C (AlexNet = 100%): mCE {}, relative mCE {} (15 benchmark corruptions)\n",
                pct(mce15),
                pct(rel15)
            )),
            "{t}"
        );
        assert!(t.contains("ImageNet-C all 19 (benchmark + validation, not the published mCE)"));
        let md = s.to_markdown();
        assert!(
            md.contains("## ImageNet-C (normalised by AlexNet, docs/imagenet-c.md#metrics)"),
            "{md}"
        );
        assert!(md.contains("- clean error: 0.0%"), "{md}");
        let fog = md.lines().find(|l| l.starts_with("| fog ")).unwrap();
        assert!(fog.contains(&pct(ce("fog"))), "{fog}");
        assert!(fog.contains("50.0%"), "{fog}");
        assert!(md.contains("Normalisation: AlexNet top-1 errors"), "{md}");
        // `report` rebuilds the same metrics from the records.
        let r = Summary::recompute(&fs.concat(), Some(&s));
        assert_eq!(r.to_json(), s.to_json());
    }

    fn in9_frames() -> Vec<Vec<Record>> {
        // Two frames: clean right on both; mixed_same right on one, mixed_rand on none.
        ["a", "b"]
            .iter()
            .enumerate()
            .map(|(i, id)| {
                vec![
                    rec(id, "clean", Some(1), &[1]),
                    rec(
                        id,
                        "background/mixed_same",
                        Some(1),
                        &[if i == 0 { 1 } else { 2 }],
                    ),
                    rec(id, "background/mixed_rand", Some(1), &[2]),
                ]
            })
            .collect()
    }

    #[test]
    fn in9_metrics_and_challenge_survive_json_and_recompute() {
        let order = ["clean", "background/mixed_same", "background/mixed_rand"];
        let fs = in9_frames();
        let mut s = streamed(&order, &fs);
        let m = s.in9().unwrap();
        assert_eq!(m.bg_gap, Some(0.5));
        assert_eq!(m.accuracy[0], ("original".to_string(), Some(1.0)));
        assert_eq!(s.challenge(), None);
        let tally = ChallengeTally {
            foregrounds: 5,
            vulnerable: 4,
            backgrounds: 7,
            composites: 20,
            complete: true,
            ..ChallengeTally::default()
        };
        s.set_challenge(tally);
        let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        let in9 = &v["metrics"]["in9"];
        assert_eq!(
            in9["accuracy"],
            json!({"original": 1.0, "mixed_same": 0.5, "mixed_rand": 0.0})
        );
        assert_eq!(in9["bg_gap"], 0.5);
        assert!((in9["challenge_accuracy"].as_f64().unwrap() - 0.2).abs() < 1e-15);
        assert_eq!(
            in9["challenge"],
            json!({"foregrounds": 5, "vulnerable": 4, "backgrounds": 7, "composites": 20, "complete": true, "failed": 0, "undecided": 0})
        );
        // Through summary.json and back, then rebuilt from the records with it as `previous`.
        let back = Summary::from_json(&s.to_json()).unwrap();
        assert_eq!(back.challenge(), Some(tally));
        let r = Summary::recompute(&fs.concat(), Some(&back));
        assert_eq!(r.to_json(), s.to_json());
        // Without the previous summary the challenge is unknown.
        assert_eq!(Summary::recompute(&fs.concat(), None).challenge(), None);
        let t = s.table();
        assert!(
            t.contains("IN-9 accuracy: original 100.0%, mixed_same 50.0%, mixed_rand 0.0%\n"),
            "{t}"
        );
        assert!(
            t.contains("IN-9 BG-gap (mixed_same − mixed_rand): 50.0%\n"),
            "{t}"
        );
        assert!(
            t.contains("IN-9 challenge accuracy: 20.0% (4 of 5 foregrounds vulnerable, 7 backgrounds, 20 composites)\n"),
            "{t}"
        );
        let md = s.to_markdown();
        assert!(
            md.contains("## IN-9 / Backgrounds Challenge (docs/in9.md)\n\n- IN-9 accuracy:"),
            "{md}"
        );
    }

    #[test]
    fn challenge_alone_makes_the_in9_section() {
        let mut s = streamed(&["clean", "fog"], &timed_frames());
        assert!(s.in9().is_none());
        s.set_challenge(ChallengeTally {
            foregrounds: 2,
            vulnerable: 0,
            backgrounds: 2,
            composites: 4,
            complete: false,
            ..ChallengeTally::default()
        });
        let m = s.in9().unwrap();
        assert!(m.accuracy.is_empty() && m.bg_gap.is_none());
        assert_eq!(m.challenge_accuracy, Some(1.0));
        assert!(s.table().contains("; incomplete)"));
        assert!(!s.table().contains("IN-9 accuracy"));
        let r = Summary::recompute(&timed_frames().concat(), Some(&s));
        assert_eq!(r.to_json(), s.to_json());
    }

    /// Three frames of classes 0, 0, 1 through clean, an ablation, one RFS level and two XIMAGENET-12
    /// scenarios; correctness per frame chosen so every number is checked by hand below.
    fn object_frames() -> Vec<Vec<Record>> {
        // (frame, truth, clean, gray, fg-noise, bg-noise, blur_bg, blur_obj) right?
        let plan = [
            ("a", 0, true, false, false, true, true, true),
            ("b", 0, true, true, true, true, false, true),
            ("c", 1, false, false, false, true, true, false),
        ];
        plan.iter()
            .map(|&(id, t, c, g, f, b, bb, bo)| {
                let r =
                    |key: &str, right: bool| rec(id, key, Some(t), &[if right { t } else { 7 }]);
                vec![
                    r("clean", c),
                    r("ablation/gray", g),
                    r("region_noise/fg/linf/0.25/t1", f),
                    r("region_noise/bg/linf/0.25/t1", b),
                    r("background/blur_bg", bb),
                    r("background/blur_obj", bo),
                ]
            })
            .collect()
    }

    const OBJECT_ORDER: [&str; 6] = [
        "clean",
        "ablation/gray",
        "region_noise/fg/linf/0.25/t1",
        "region_noise/bg/linf/0.25/t1",
        "background/blur_bg",
        "background/blur_obj",
    ];

    #[test]
    fn object_families_by_hand_and_through_recompute() {
        let fs = object_frames();
        let mut s = streamed(&OBJECT_ORDER, &fs);
        let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        let m = &v["metrics"];
        let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, vec!["volatility", "hard_imagenet", "rfs"]);
        // Hard ImageNet: clean 2/3, gray 1/3; paired drop (2 − 1)/3.
        let h = &m["hard_imagenet"]["ablations"];
        assert!((h["none"]["accuracy"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-15);
        assert!((h["gray"]["drop"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-15);
        // RFS: fg class 0 1/2, class 1 0/1 → 0.25; bg 1 and 1 → 1; ā = 0.625 → (1 − 0.25)/0.75 = 1.
        let t = &m["rfs"]["typical"];
        assert_eq!(
            (t["acc_fg"].as_f64(), t["acc_bg"].as_f64()),
            (Some(0.25), Some(1.0))
        );
        assert!((t["rfs"].as_f64().unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(m["rfs"]["noise"]["linf"]["0.25"], *t);
        // Volatility: μ = 2/3, blur_bg 2/3, blur_obj 2/3 → zero volatility, σ² 0, score_cross 1.
        let vol = &m["volatility"];
        assert_eq!(vol["n"], 2);
        assert!(vol["variance_cross"].as_f64().unwrap().abs() < 1e-15);
        assert_eq!(
            (vol["variance_inner"].clone(), vol["score"].clone()),
            (json!(null), json!(null))
        );
        // Inner results: σ²_inner = ((0.5 − 0.9)² + (0.7 − 0.9)²)/1 = 0.2 → S_robust 0.8.
        let inner = InnerResults(
            [
                ("clean", 0.9),
                ("background/blur_bg", 0.5),
                ("background/blur_obj", 0.7),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        );
        s.set_ximagenet_inner(&inner);
        let vol = s.volatility().unwrap();
        assert!((vol.variance_inner.unwrap() - 0.2).abs() < 1e-12);
        assert!((vol.score.unwrap() - 0.8).abs() < 1e-12);
        // A post-pass family (not rebuilt from records) is carried over by recompute, in place.
        s.metrics.insert("saliency".into(), json!({"frames": 3}));
        let back = Summary::from_json(&s.to_json()).unwrap();
        let r = Summary::recompute(&fs.concat(), Some(&back));
        assert_eq!(r.to_json(), s.to_json());
        // Renderings.
        let t = s.table();
        assert!(
            t.contains("XIMAGENET-12: σ²_cross 0.0000 over 2 scenarios (n − 1: blur_bg, blur_obj), score_cross 1.0000; S_robust 0.8000 (σ²_inner 0.2000)\n"),
            "{t}"
        );
        assert!(
            t.contains("Hard ImageNet ablations: none 66.7%, gray 33.3% (drop 33.3%)\n"),
            "{t}"
        );
        assert!(t.contains("RFS linf: 0.25 1.000\n"), "{t}");
        assert!(
            t.contains(
                "RFS typical (linf 0.25): 1.000 (fg 25.0%, bg 100.0%, 1 trials, 2 classes)\n"
            ),
            "{t}"
        );
        let md = s.to_markdown();
        for section in [
            "## XIMAGENET-12 volatility (docs/ximagenet.md#robustness-score)",
            "## Hard ImageNet ablations (docs/hard-imagenet.md#ablation-accuracy-and-drop)",
            "## Relative foreground sensitivity \
             (docs/hard-imagenet.md#relative-foreground-sensitivity)",
            "| linf  |  0.25 |  25.0% | 100.0% | 1.000 |      1 |       2 |",
        ] {
            assert!(md.contains(section), "{section}\n{md}");
        }
        assert!(md.find("## Relative").unwrap() < md.find("## Latency").unwrap());
    }

    #[test]
    fn no_imagenet_c_entry_without_corruptions() {
        let s = streamed(&["clean", "fog"], &timed_frames());
        assert!(s.imagenet_c().is_none() && s.metrics.is_empty());
        assert!(!s.table().contains("ImageNet-C"));
    }

    #[test]
    fn terminal_table_is_aligned() {
        let s = streamed(
            &["clean", "corruption/fog/3"],
            &[vec![
                rec("a", "clean", Some(1), &[1]),
                rec("a", "corruption/fog/3", Some(1), &[2]),
            ]],
        );
        let t = s.table();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 7, "{t}");
        assert_eq!(
            lines[0],
            "scenario          n   top-1      95% CI   top-5    drop  agreement"
        );
        assert_eq!(lines[1], "-".repeat(lines[0].chars().count()));
        assert_eq!(
            lines[2],
            "clean             1  100.0%  20.7–100.0  100.0%    0.0%     100.0%"
        );
        assert_eq!(
            lines[3],
            "corruption/fog/3  1    0.0%    0.0–79.3    0.0%  100.0%       0.0%"
        );
        // One severity of one corruption: no CE, and the ImageNet-C lines say what is missing.
        assert_eq!(lines[4], "");
        assert_eq!(
            lines[5],
            "ImageNet-C (AlexNet = 100%): CE for 0 corruptions (0 of the 15 benchmark ones); \
             mCE needs all 15 × 5"
        );
        assert_eq!(
            lines[6],
            "ImageNet-C incomplete, no CE: fog (no severity 1, 2, 4, 5)"
        );
    }

    #[test]
    fn a_summary_that_is_a_device_a_fifo_or_huge_is_refused_with_its_fix() {
        let dir = tempfile::tempdir().unwrap();
        let limit = crate::fsread::MAX_TABLE_TEXT_BYTES;
        for (path, why) in crate::fsread::refused_paths(dir.path(), limit) {
            let e = Summary::read(&path).unwrap_err();
            assert!(matches!(e, ReportError::Io { .. }), "{e}");
            let e = e.to_string();
            assert!(
                e.contains(&format!("{}: {why}", path.display()))
                    && e.contains("move it out of the run directory"),
                "{e}"
            );
        }
    }
}
