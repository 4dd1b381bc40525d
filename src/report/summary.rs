//! The run summary (`summary.json`) and its renderings: Markdown, CSV and a terminal table.
//!
//! `summary.json` contract (other tools rely on it; keys in this order):
//! ```text
//! { "format": 2 (crate::contract, docs/output.md#format-changelog),
//!   "run": {...config, model, engine, seed, plan, start/end, end reason: run_block::RunBlock...},
//!   "frames": {"read": N, "skipped": N, "dropped": N},
//!   "scenarios": {"<key>": {"n": N, "n_labelled": N, "top1": f|null, "top1_ci95": [lo, hi]|null,
//!                           "top5": f|null, "drop": f|null, "agreement": f|null,
//!                           "flip": f|null, "flip_excess": f|null}, ... plan order},
//!   "metrics": {...per metric family...},
//!   "latency_ms": {"<stage>": {"p50": ms, "p90": ms, "p95": ms, "p99": ms, "max": ms}, ... pipeline order} }
//! ```
//! Accuracies, drop and agreement are fractions (drop may be negative); `null` where undefined.

use std::error::Error;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::ReportError;
use super::run_block::RunBlock;
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
    /// The output contract's format (docs/output.md#format-changelog): written first; absent in
    /// summaries of format 1.
    #[serde(default)]
    pub format: crate::contract::Format,
    /// What the run was and how it ended ([`RunBlock`]).
    #[serde(
        serialize_with = "super::run_block::serialize_run",
        deserialize_with = "super::run_block::deserialize_run"
    )]
    pub run: RunBlock,
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
    pub fn from_metrics(m: &Metrics, run: RunBlock, frames: FrameCounts) -> Self {
        let scenarios: Vec<(String, ScenarioSummary)> = m
            .tallies()
            .map(|(k, t)| (k.to_string(), t.into()))
            .collect();
        let mut metrics = serde_json::Map::new();
        let builtin = BaselineTable::builtin();
        let table = builtin.as_ref().copied().map_err(|e| e as &dyn Error);
        if let Some(ic) = imagenet_c_metrics(&scenarios, table) {
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
    pub fn recompute_with_metrics(
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
                RunBlock::default(),
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
                Err(e) => summary.set_imagenet_c(Err(&e)),
            }
        }
        if let Some(p) = previous {
            summary.keep_post_pass_families(p);
        }
        (summary, metrics)
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
    fn set_imagenet_c(&mut self, table: Result<&BaselineTable, &dyn Error>) {
        if let Some(v) = imagenet_c_metrics(&self.scenarios, table) {
            self.metrics.insert("imagenet_c".into(), v);
        }
    }

    /// The baseline table stored in `metrics.imagenet_c.baseline_table` (a run with `[metrics]
    /// ce_baseline`), validated again; `None` when the run used the built-in table.
    fn stored_ce_baseline(&self) -> Option<Result<BaselineTable, ReportError>> {
        let stored = self.metrics.get("imagenet_c")?.get("baseline_table")?;
        Some(
            serde_json::from_value(stored.clone())
                .map_err(|source| ReportError::StoredBaseline { source }),
        )
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
        if let serde_json::Value::Object(run) = self.run.to_value() {
            let facts: Vec<String> = run
                .iter()
                .filter_map(|(k, v)| {
                    // `labels` (docs/prometheus.md#fleets): `device=…, camera=…, line=3`.
                    let v = match v.as_object() {
                        Some(labels) if k == "labels" => labels
                            .iter()
                            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                            .collect::<Vec<_>>()
                            .join(", "),
                        _ => scalar(v)?,
                    };
                    Some(format!("- {}: {}\n", md_cell(k), md_cell(&v)))
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
        let mut out = aligned(&rows);
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
        let _ = writeln!(out, "\n{}", self.frames_line());
        out
    }

    /// The sliding window of this summary (`metrics.window`), if one was kept.
    pub fn window(&self) -> Option<crate::metrics::window::WindowReport> {
        self.metrics
            .get("window")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// One line on the frames: read, and of them skipped (unreadable), dropped at admission (the
    /// pipeline was behind a live source) and lost by the source before robustream saw them.
    fn frames_line(&self) -> String {
        let f = &self.frames;
        format!(
            "Frames: {} read; {} skipped (unreadable), {} dropped (pipeline behind a live source), \
             {} lost (by the source)",
            f.read, f.skipped, f.dropped, f.lost
        )
    }

    /// One line on the sliding window: its drop volatility and the trend's temporal volatility,
    /// with what they measure and in which unit (docs/ximagenet.md#sliding-window-volatility).
    fn window_line(&self) -> Option<String> {
        let w = self.window()?;
        let v = |x: Option<f64>| x.map_or_else(|| NONE.to_string(), |x| format!("{x:.4}"));
        let measure = match w.basis.as_str() {
            "agreement" => "agreement with clean",
            _ => "top-1 accuracy",
        };
        Some(format!(
            "Sliding window (last {} frames, {} in it, drops by {}): drop volatility {} (variance \
             of the scenarios' {measure} around clean's, fraction², 0 = all alike); temporal \
             volatility of the mean drop {} over {} windows (fraction², needs 2)",
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
    table: Result<&BaselineTable, &dyn Error>,
) -> Option<serde_json::Value> {
    // Errors need labels: an unlabelled stream has agreement and flips, not CE.
    if !scenarios.iter().any(|(k, s)| {
        matches!(ScenarioKey::parse(k), ScenarioKey::Corruption { .. }) && s.n_labelled > 0
    }) {
        return None;
    }
    let table = match table {
        Ok(t) => t,
        // The entry is the error's line (what summary.json has always held there).
        Err(e) => return Some(serde_json::json!({ "error": e.to_string() })),
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

/// `rows` as aligned plain text: the first column left-aligned, the others right-aligned, two
/// spaces apart, a rule of `-` under the first row (the header); trailing spaces trimmed.
pub(crate) fn aligned(rows: &[Vec<String>]) -> String {
    let widths = column_widths(rows);
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
            let total = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    out
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
pub(crate) mod tests;
