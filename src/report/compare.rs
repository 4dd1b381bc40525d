//! `robustream compare BASELINE CANDIDATE`: two runs (or a run and a checked-in `summary.json`) side
//! by side, per scenario and per metric, with intervals, and a gate of `--fail-on` rules for CI
//! (docs/compare.md).
//!
//! Per scenario in both runs, top-1 and top-5 of each side and the difference candidate − baseline
//! with a 95 % interval: *paired* where both runs hold records of the same labelled frames with the
//! same truths (exact McNemar p, Newcombe's paired interval, [`stats`]), otherwise *unpaired*
//! (Newcombe's interval from the two Wilson intervals, no p) with the reason. Per metric, the
//! scalars of summary.json's `metrics` families ([`rules::METRICS`]): baseline, candidate,
//! difference.
//!
//! JSON contract (`--format json`, docs/compare.md#json-output; keys in this order):
//! ```text
//! { "compare": 1,
//!   "baseline":  {"path": s, "kind": "run"|"summary", "model": s|null, "end": s|null, "records": N|null},
//!   "candidate": {...same...},
//!   "alpha": f|null,
//!   "scenarios": {"<key>": {
//!       "top1": {"baseline": f|null, "candidate": f|null, "diff": f|null, "ci95": [lo, hi]|null,
//!                "n": [N, N], "paired": bool,
//!                "pairs": {"both": N, "baseline_only": N, "candidate_only": N, "neither": N}|null,
//!                "p": f|null, "significant": bool|null, "unpaired_reason": s|null},
//!       "top5": {...same...},
//!       "drop" | "agreement" | "flip" | "flip_excess": {"baseline": f|null, "candidate": f|null, "diff": f|null}},
//!     ... baseline's plan order},
//!   "only_baseline": [key, ...], "only_candidate": [key, ...],
//!   "metrics": {"<metric>" | "<metric>[<key>]": {"baseline": f|null, "candidate": f|null, "diff": f|null}, ...},
//!   "notes": [s, ...],
//!   "gate": {"rules": [{"rule": s, "status": "passed"|"fired"|"unchecked",
//!                       "fired": [{"item": s, "value": f, "baseline": f, "candidate": f, "p": f|null}],
//!                       "not_significant": [...same...], "unchecked": [{"item": s, "why": s}]}],
//!            "failed": [rule, ...], "unchecked": [rule, ...], "status": "pass"|"fail"|"unchecked", "exit": N} }
//! ```
//! Values are fractions as in summary.json (`diff` = candidate − baseline); `null` where undefined.

mod html;
mod render;
pub mod rules;
mod stats;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use self::rules::{Rule, Scope, Unit};
use self::stats::PairedCounts;
use super::ReportError;
use super::summary::{ScenarioSummary, Summary};
use crate::metrics::Record;
use crate::metrics::accuracy::Z95;

/// Exit code of `robustream compare` when a `--fail-on` rule fired (docs/compare.md#exit-codes).
const EXIT_FIRED: u8 = 3;
/// Exit code when no rule fired but a rule could not be checked (a metric missing on a side).
const EXIT_UNCHECKED: u8 = 4;

/// A side of the comparison that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The path is neither a run directory nor a summary file.
    #[error(
        "{which} {}: {why}; give a run directory (records.jsonl, summary.json) or a summary.json \
         file",
        path.display()
    )]
    NotAnInput {
        /// `baseline` or `candidate`.
        which: &'static str,
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The run's records or summary cannot be read.
    #[error("{which}: {source}")]
    Read {
        /// `baseline` or `candidate`.
        which: &'static str,
        /// The cause (it names the file).
        source: ReportError,
    },
}

/// One side as read: a run directory (records and the summary rebuilt from them) or a summary file.
#[derive(Debug, Clone)]
pub struct Input {
    /// The path given.
    pub(crate) path: PathBuf,
    /// The summary (rebuilt from the records when there are records).
    pub(crate) summary: Summary,
    /// The records, for a run directory that has them.
    pub(crate) records: Option<Vec<Record>>,
    /// Truncated last lines skipped in the records (0 or 1).
    pub(crate) truncated: usize,
}

impl Input {
    /// Reads `path`: a run directory with `records.jsonl` (its summary rebuilt as `robustream
    /// report` does), a directory with only `summary.json`, or a summary file. `which` names the
    /// side in errors.
    pub fn load(path: &Path, which: &'static str) -> Result<Self, CompareError> {
        let read = |source| CompareError::Read { which, source };
        let not = |why| CompareError::NotAnInput {
            which,
            path: path.to_path_buf(),
            why,
        };
        let summary_only = |file: &Path| -> Result<Self, CompareError> {
            Ok(Self {
                path: path.to_path_buf(),
                summary: Summary::read(file).map_err(read)?,
                records: None,
                truncated: 0,
            })
        };
        if path.is_dir() {
            if path.join(super::jsonl::RECORDS_JSONL).exists() {
                let (summary, _, records) = super::read_run(path, false).map_err(read)?;
                return Ok(Self {
                    path: path.to_path_buf(),
                    summary,
                    records: Some(records.records),
                    truncated: records.truncated,
                });
            }
            let file = path.join(super::SUMMARY_JSON);
            if !file.exists() {
                return Err(not("neither records.jsonl nor summary.json in this folder"));
            }
            return summary_only(&file);
        }
        if !path.exists() {
            return Err(not("no such file or directory"));
        }
        summary_only(path)
    }

    /// `run.model` of the summary, if it says one.
    fn model(&self) -> Option<&str> {
        Some(self.summary.run.model.as_str()).filter(|m| !m.is_empty())
    }

    /// `run.end` of the summary, if it says one.
    fn end(&self) -> Option<&str> {
        self.summary.run.end.map(|e| e.as_str())
    }
}

/// How a difference of accuracies was estimated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Pairing {
    /// On the same labelled frames: the 2 × 2 table of right/wrong.
    Paired(PairedCounts),
    /// From each side's accuracy and count alone; why it could not be paired.
    Unpaired(String),
}

/// A difference of two accuracies (top-1 or top-5) in one scenario.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Diff {
    /// The baseline's accuracy.
    pub(crate) a: Option<f64>,
    /// The candidate's accuracy.
    pub(crate) b: Option<f64>,
    /// Labelled records of each side (the pairs, twice, when paired).
    pub(crate) n: [u64; 2],
    /// 95 % interval of `b − a`.
    pub(crate) ci95: Option<(f64, f64)>,
    /// Paired or not.
    pub(crate) pairing: Pairing,
    /// Exact McNemar p (paired only).
    pub(crate) p: Option<f64>,
    /// With `--alpha`: whether the difference is significant at it (paired: p < alpha; unpaired:
    /// Newcombe's 1 − alpha interval excludes 0).
    pub(crate) significant: Option<bool>,
}

impl Diff {
    /// `b − a`.
    fn diff(&self) -> Option<f64> {
        Some(self.b? - self.a?)
    }

    /// Whether the difference was paired.
    fn paired(&self) -> bool {
        matches!(self.pairing, Pairing::Paired(_))
    }

    fn paired_from(t: PairedCounts, alpha: Option<f64>) -> Self {
        let p = stats::mcnemar_exact(t.baseline_only, t.candidate_only);
        Self {
            a: t.a(),
            b: t.b(),
            n: [t.n(), t.n()],
            ci95: stats::newcombe_paired(&t, Z95),
            pairing: Pairing::Paired(t),
            p: Some(p),
            significant: alpha.map(|alpha| p < alpha),
        }
    }

    fn unpaired_from(
        (a, na): (Option<f64>, u64),
        (b, nb): (Option<f64>, u64),
        why: String,
        alpha: Option<f64>,
    ) -> Self {
        let hits = |v: Option<f64>, n: u64| v.map(|v| (v * n as f64).round() as u64);
        let interval = |z| match (hits(b, nb), hits(a, na)) {
            (Some(rb), Some(ra)) => stats::newcombe_unpaired(rb, nb, ra, na, z),
            _ => None,
        };
        Self {
            a,
            b,
            n: [na, nb],
            ci95: interval(Z95),
            pairing: Pairing::Unpaired(why),
            p: None,
            significant: alpha.and_then(|alpha| {
                interval(stats::z_two_sided(alpha)).map(|(lo, hi)| lo > 0.0 || hi < 0.0)
            }),
        }
    }
}

/// A value of each side and their difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Delta {
    /// The baseline's value.
    pub(crate) a: Option<f64>,
    /// The candidate's value.
    pub(crate) b: Option<f64>,
}

impl Delta {
    /// `b − a`.
    fn diff(&self) -> Option<f64> {
        Some(self.b? - self.a?)
    }
}

/// One scenario in both runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScenarioDiff {
    /// Top-1 accuracy.
    pub(crate) top1: Diff,
    /// Top-5 accuracy.
    pub(crate) top5: Diff,
    /// The scenario's drop from clean.
    pub(crate) drop: Delta,
    /// Agreement with clean.
    pub(crate) agreement: Delta,
    /// Flip probability.
    pub(crate) flip: Delta,
    /// Flip excess over clean.
    pub(crate) flip_excess: Delta,
}

/// One scalar metric of the summaries' families.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MetricRow {
    /// The metric.
    pub(crate) metric: &'static rules::MetricDef,
    /// Its key within the family (a corruption, a variation, …), for keyed metrics.
    pub(crate) key: Option<String>,
    /// Whether each side's summary has the entry at all.
    pub(crate) present: [bool; 2],
    /// The values.
    pub(crate) delta: Delta,
}

impl MetricRow {
    /// `metric` or `metric[key]`.
    fn id(&self) -> String {
        match &self.key {
            Some(k) => format!("{}[{k}]", self.metric.name),
            None => self.metric.name.to_string(),
        }
    }
}

/// One item a rule looked at: a scenario or a metric's key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hit {
    /// The scenario key or the metric's id.
    pub(crate) item: String,
    /// The rule's value (e.g. baseline − candidate for a `_drop` rule).
    pub(crate) value: f64,
    /// The baseline's value.
    pub(crate) a: f64,
    /// The candidate's value.
    pub(crate) b: f64,
    /// McNemar's p where the difference is paired.
    pub(crate) p: Option<f64>,
}

/// What became of one rule.
#[derive(Debug, Clone, PartialEq, Eq, Copy)]
enum Status {
    /// Checked everywhere it applies; fired nowhere.
    Passed,
    /// Fired somewhere.
    Fired,
    /// Fired nowhere but could not be checked somewhere.
    Unchecked,
}

impl Status {
    /// As in the JSON.
    fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Fired => "fired",
            Self::Unchecked => "unchecked",
        }
    }
}

/// The verdict on one rule.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RuleOutcome {
    /// The rule.
    pub(crate) rule: Rule,
    /// Where it fired.
    pub(crate) fired: Vec<Hit>,
    /// Where it would have fired but the difference is not significant at `--alpha`.
    pub(crate) not_significant: Vec<Hit>,
    /// Where it could not be checked, and why.
    pub(crate) unchecked: Vec<(String, String)>,
}

impl RuleOutcome {
    /// Fired, unchecked or passed.
    fn status(&self) -> Status {
        if !self.fired.is_empty() {
            Status::Fired
        } else if !self.unchecked.is_empty() {
            Status::Unchecked
        } else {
            Status::Passed
        }
    }
}

/// Two runs side by side (see the module docs).
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The baseline's path, model, end, records.
    pub(crate) baseline: SideInfo,
    /// The candidate's.
    pub(crate) candidate: SideInfo,
    /// `--alpha`, if given.
    pub(crate) alpha: Option<f64>,
    /// Scenarios in both runs, in the baseline's order.
    pub(crate) scenarios: Vec<(String, ScenarioDiff)>,
    /// Scenarios only the baseline has.
    pub(crate) only_baseline: Vec<String>,
    /// Scenarios only the candidate has.
    pub(crate) only_candidate: Vec<String>,
    /// The family metrics either side has (the baseline's order, then the candidate's new ones).
    pub(crate) metrics: Vec<MetricRow>,
    /// What the reader should know (runs still in progress, summaries only, …).
    pub(crate) notes: Vec<String>,
    /// The verdict per rule, in the order given.
    pub(crate) gate: Vec<RuleOutcome>,
}

/// What the comparison says about a side.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SideInfo {
    /// The path given.
    pub(crate) path: String,
    /// Whether it is a run with records (else a summary only).
    pub(crate) records: Option<usize>,
    /// `run.model`.
    pub(crate) model: Option<String>,
    /// `run.end`.
    pub(crate) end: Option<String>,
}

impl SideInfo {
    fn of(input: &Input) -> Self {
        Self {
            path: input.path.display().to_string(),
            records: input.records.as_ref().map(Vec::len),
            model: input.model().map(str::to_string),
            end: input.end().map(str::to_string),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "path": self.path,
            "kind": if self.records.is_some() { "run" } else { "summary" },
            "model": self.model,
            "end": self.end,
            "records": self.records,
        })
    }
}

/// The `run.end` values of a run that ended as planned.
const WHOLE_ENDS: [&str; 3] = ["completed", "limit", "duration"];

impl Comparison {
    /// Compares `candidate` with `baseline` and judges `rules` (see the module docs).
    pub fn new(baseline: &Input, candidate: &Input, alpha: Option<f64>, rules: &[Rule]) -> Self {
        let (sa, sb) = (&baseline.summary, &candidate.summary);
        let by_a = by_scenario(baseline.records.as_deref());
        let by_b = by_scenario(candidate.records.as_deref());
        let mut scenarios = Vec::new();
        let mut only_baseline = Vec::new();
        for (key, a) in &sa.scenarios {
            let Some((_, b)) = sb.scenarios.iter().find(|(k, _)| k == key) else {
                only_baseline.push(key.clone());
                continue;
            };
            let pairs = match (&by_a, &by_b) {
                (Some(ra), Some(rb)) => pair(
                    ra.get(key.as_str()).map_or(&[][..], Vec::as_slice),
                    rb.get(key.as_str()).map_or(&[][..], Vec::as_slice),
                ),
                (None, _) => Err("the baseline is a summary, without records".to_string()),
                (_, None) => Err("the candidate is a summary, without records".to_string()),
            };
            scenarios.push((key.clone(), scenario_diff(a, b, pairs, alpha)));
        }
        let only_candidate = sb
            .scenarios
            .iter()
            .filter(|(k, _)| !sa.scenarios.iter().any(|(ka, _)| ka == k))
            .map(|(k, _)| k.clone())
            .collect();
        let mut cmp = Self {
            baseline: SideInfo::of(baseline),
            candidate: SideInfo::of(candidate),
            alpha,
            scenarios,
            only_baseline,
            only_candidate,
            metrics: metric_rows(sa, sb),
            notes: Vec::new(),
            gate: Vec::new(),
        };
        cmp.notes = cmp.notes_for(baseline, candidate);
        cmp.gate = rules.iter().map(|r| cmp.judge(r)).collect();
        cmp
    }

    fn notes_for(&self, baseline: &Input, candidate: &Input) -> Vec<String> {
        let mut notes = Vec::new();
        for (which, input, info) in [
            ("baseline", baseline, &self.baseline),
            ("candidate", candidate, &self.candidate),
        ] {
            match info.end.as_deref() {
                Some(end) if WHOLE_ENDS.contains(&end) => {}
                Some("running") => notes.push(format!(
                    "the {which} run was still running (or was killed) when read: compared as it \
                     stands"
                )),
                Some(end) => notes.push(format!(
                    "the {which} run ended early (`{end}`): compared as it stands"
                )),
                None if input.records.is_some() => notes.push(format!(
                    "the {which} run has no summary.json (killed before writing it?): compared \
                     from its records as they stand"
                )),
                None => notes.push(format!("the {which} summary has no `run.end`")),
            }
            if input.records.is_none() {
                notes.push(format!(
                    "the {which} is a summary without records: differences are unpaired"
                ));
            }
            if input.truncated > 0 {
                notes.push(format!(
                    "the {which} run's records.jsonl ends in a truncated line, skipped"
                ));
            }
        }
        if let (Some(a), Some(b)) = (&self.baseline.model, &self.candidate.model)
            && a != b
        {
            notes.push(format!("models: baseline {a}, candidate {b}"));
        }
        if !self.only_baseline.is_empty() || !self.only_candidate.is_empty() {
            notes.push(format!(
                "the plans differ: {} scenario(s) only in the baseline, {} only in the candidate; \
                 compared on the {} in both",
                self.only_baseline.len(),
                self.only_candidate.len(),
                self.scenarios.len()
            ));
        }
        if let Some(alpha) = self.alpha {
            notes.push(format!(
                "--alpha {alpha}: top-1/top-5 rules fire only where the difference is significant \
                 (paired: exact McNemar p < {alpha}; unpaired: Newcombe's {}% interval excludes \
                 0); other rules are judged on their values alone",
                ((1.0 - alpha) * 1e8).round() / 1e6
            ));
        }
        notes
    }

    /// The exit code of the gate: 0, [`EXIT_FIRED`] or [`EXIT_UNCHECKED`].
    pub fn exit_code(&self) -> u8 {
        let statuses: Vec<Status> = self.gate.iter().map(RuleOutcome::status).collect();
        if statuses.contains(&Status::Fired) {
            EXIT_FIRED
        } else if statuses.contains(&Status::Unchecked) {
            EXIT_UNCHECKED
        } else {
            0
        }
    }

    /// Judges one rule.
    fn judge(&self, rule: &Rule) -> RuleOutcome {
        let mut out = RuleOutcome {
            rule: rule.clone(),
            fired: Vec::new(),
            not_significant: Vec::new(),
            unchecked: Vec::new(),
        };
        let mut seen = 0;
        if rule.metric.scope == Scope::Scenario {
            for key in self.only_baseline.iter().filter(|k| rule.selects(k)) {
                seen += 1;
                out.unchecked
                    .push((key.clone(), "not in the candidate's plan".into()));
            }
            for (key, d) in self.scenarios.iter().filter(|(k, _)| rule.selects(k)) {
                seen += 1;
                let (delta, test) = match rule.metric.name {
                    "top1" | "top1_drop" => (
                        Delta {
                            a: d.top1.a,
                            b: d.top1.b,
                        },
                        Some(&d.top1),
                    ),
                    "top5" | "top5_drop" => (
                        Delta {
                            a: d.top5.a,
                            b: d.top5.b,
                        },
                        Some(&d.top5),
                    ),
                    "drop" => (d.drop, None),
                    "agreement" => (d.agreement, None),
                    "flip" => (d.flip, None),
                    _ => (d.flip_excess, None),
                };
                let sign = if rule.metric.name.ends_with("_drop") {
                    -1.0
                } else {
                    1.0
                };
                let (Some(a), Some(b)) = (delta.a, delta.b) else {
                    out.unchecked.push((key.clone(), missing(delta)));
                    continue;
                };
                let value = sign * (b - a);
                if rule.fires(value) {
                    let hit = Hit {
                        item: key.clone(),
                        value,
                        a,
                        b,
                        p: test.and_then(|t| t.p),
                    };
                    match test.and_then(|t| t.significant) {
                        Some(false) => out.not_significant.push(hit),
                        _ => out.fired.push(hit),
                    }
                }
            }
            if seen == 0 {
                out.unchecked.push((
                    rule.pattern.clone().unwrap_or_else(|| "scenarios".into()),
                    "no scenario of the baseline matches".into(),
                ));
            }
            return out;
        }
        for row in self
            .metrics
            .iter()
            .filter(|r| r.metric.name == rule.metric.name)
        {
            if !rule.selects(row.key.as_deref().unwrap_or_default()) {
                continue;
            }
            // A key only the candidate has: nothing to compare it with.
            if !row.present[0] && row.key.is_some() {
                continue;
            }
            seen += 1;
            let (Some(a), Some(b)) = (row.delta.a, row.delta.b) else {
                out.unchecked.push((row.id(), missing_row(row)));
                continue;
            };
            let value = b - a;
            if rule.fires(value) {
                out.fired.push(Hit {
                    item: row.id(),
                    value,
                    a,
                    b,
                    p: None,
                });
            }
        }
        if seen == 0 {
            let what = match &rule.pattern {
                Some(p) => format!(
                    "no `{}` key of the baseline matches `{p}`",
                    rule.metric.name
                ),
                None => "neither summary has it".to_string(),
            };
            out.unchecked.push((rule.metric.name.to_string(), what));
        }
        out
    }

    /// The comparison as pretty-printed JSON (the contract in the module docs), no trailing newline.
    pub fn to_json(&self) -> String {
        let scenarios: serde_json::Map<String, Value> = self
            .scenarios
            .iter()
            .map(|(k, d)| {
                (
                    k.clone(),
                    json!({
                        "top1": diff_json(&d.top1),
                        "top5": diff_json(&d.top5),
                        "drop": delta_json(d.drop),
                        "agreement": delta_json(d.agreement),
                        "flip": delta_json(d.flip),
                        "flip_excess": delta_json(d.flip_excess),
                    }),
                )
            })
            .collect();
        let metrics: serde_json::Map<String, Value> = self
            .metrics
            .iter()
            .map(|r| (r.id(), delta_json(r.delta)))
            .collect();
        let hits = |hs: &[Hit]| -> Vec<Value> {
            hs.iter()
                .map(|h| {
                    json!({"item": h.item, "value": h.value, "baseline": h.a, "candidate": h.b,
                           "p": h.p})
                })
                .collect()
        };
        let rules: Vec<Value> = self
            .gate
            .iter()
            .map(|o| {
                json!({
                    "rule": o.rule.text,
                    "status": o.status().as_str(),
                    "fired": hits(&o.fired),
                    "not_significant": hits(&o.not_significant),
                    "unchecked": o.unchecked.iter()
                        .map(|(item, why)| json!({"item": item, "why": why}))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        let with = |s: Status| -> Vec<&str> {
            self.gate
                .iter()
                .filter(|o| o.status() == s)
                .map(|o| o.rule.text.as_str())
                .collect()
        };
        let code = self.exit_code();
        let value = json!({
            "compare": 1,
            "baseline": self.baseline.to_json(),
            "candidate": self.candidate.to_json(),
            "alpha": self.alpha,
            "scenarios": scenarios,
            "only_baseline": self.only_baseline,
            "only_candidate": self.only_candidate,
            "metrics": metrics,
            "notes": self.notes,
            "gate": {
                "rules": rules,
                "failed": with(Status::Fired),
                "unchecked": with(Status::Unchecked),
                "status": match code { 0 => "pass", EXIT_FIRED => "fail", _ => "unchecked" },
                "exit": code,
            },
        });
        serde_json::to_string_pretty(&value).expect("plain JSON values serialise")
    }

    /// The aligned plain-text rendering for a terminal.
    pub fn to_table(&self) -> String {
        render::table(self)
    }

    /// The Markdown rendering.
    pub fn to_markdown(&self) -> String {
        render::markdown(self)
    }

    /// One self-contained HTML page (inline CSS; no script, no link to load).
    pub fn to_html(&self) -> String {
        html::page(self)
    }

    /// The gate's verdict as lines for stderr: each rule that fired or could not be checked, with
    /// its numbers, then one line with the outcome and the exit code. Empty without rules.
    pub fn gate_lines(&self) -> Vec<String> {
        render::gate_lines(self)
    }
}

/// Why a delta has no value: which side lacks it.
fn missing(d: Delta) -> String {
    match (d.a, d.b) {
        (None, None) => "undefined in both runs".into(),
        (None, _) => "undefined in the baseline".into(),
        _ => "undefined in the candidate".into(),
    }
}

fn missing_row(r: &MetricRow) -> String {
    let side = |present: bool, v: Option<f64>, who: &str| match (present, v) {
        (false, _) => Some(format!("not in the {who} summary")),
        (true, None) => Some(format!("null in the {who} summary")),
        _ => None,
    };
    [
        side(r.present[0], r.delta.a, "baseline"),
        side(r.present[1], r.delta.b, "candidate"),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

fn delta_json(d: Delta) -> Value {
    json!({"baseline": d.a, "candidate": d.b, "diff": d.diff()})
}

fn diff_json(d: &Diff) -> Value {
    let (pairs, why) = match &d.pairing {
        Pairing::Paired(t) => (Some(*t), None),
        Pairing::Unpaired(why) => (None, Some(why.as_str())),
    };
    json!({
        "baseline": d.a,
        "candidate": d.b,
        "diff": d.diff(),
        "ci95": d.ci95.map(|(lo, hi)| [lo, hi]),
        "n": d.n,
        "paired": d.paired(),
        "pairs": pairs,
        "p": d.p,
        "significant": d.significant,
        "unpaired_reason": why,
    })
}

/// One side's outcome of a labelled record: its truth, top-1 right, top-5 right.
type Outcome = (usize, bool, bool);

/// Records grouped by scenario, in file order; `None` without records.
fn by_scenario(records: Option<&[Record]>) -> Option<HashMap<&str, Vec<&Record>>> {
    let mut map: HashMap<&str, Vec<&Record>> = HashMap::new();
    for r in records? {
        map.entry(r.scenario.as_str()).or_default().push(r);
    }
    Some(map)
}

/// The labelled records of one scenario keyed by (frame, occurrence): a source that lists a file
/// twice gives its id twice, the n-th time paired with the other run's n-th.
fn outcomes<'a>(records: &[&'a Record]) -> HashMap<(&'a str, u32), Outcome> {
    let mut seen: HashMap<&str, u32> = HashMap::new();
    let mut out = HashMap::with_capacity(records.len());
    for r in records {
        let (Some(truth), Some(t1), Some(t5)) = (r.truth, r.top1_correct(), r.top5_correct())
        else {
            continue;
        };
        let n = seen.entry(r.frame.as_str()).or_default();
        out.insert((r.frame.as_str(), *n), (truth, t1, t5));
        *n += 1;
    }
    out
}

/// The paired top-1 and top-5 tables of one scenario, or why the frames cannot be paired: both
/// runs must hold the same labelled frames with the same truths (docs/compare.md#pairing).
fn pair(a: &[&Record], b: &[&Record]) -> Result<(PairedCounts, PairedCounts), String> {
    let (oa, ob) = (outcomes(a), outcomes(b));
    if oa.is_empty() && ob.is_empty() {
        return Err("no labelled frames".into());
    }
    let (mut top1, mut top5) = (PairedCounts::default(), PairedCounts::default());
    let (mut common, mut truths) = (0usize, 0usize);
    for (key, (ta, a1, a5)) in &oa {
        if let Some((tb, b1, b5)) = ob.get(key) {
            common += 1;
            if ta != tb {
                truths += 1;
            }
            top1.add(*a1, *b1);
            top5.add(*a5, *b5);
        }
    }
    if truths > 0 {
        return Err(format!(
            "the truths differ on {truths} of the {common} frames both runs labelled"
        ));
    }
    if common != oa.len() || common != ob.len() {
        return Err(format!(
            "the labelled frames differ: {} in the baseline, {} in the candidate, {common} in both",
            oa.len(),
            ob.len()
        ));
    }
    Ok((top1, top5))
}

fn scenario_diff(
    a: &ScenarioSummary,
    b: &ScenarioSummary,
    pairs: Result<(PairedCounts, PairedCounts), String>,
    alpha: Option<f64>,
) -> ScenarioDiff {
    let (top1, top5) = match pairs {
        Ok((t1, t5)) => (Diff::paired_from(t1, alpha), Diff::paired_from(t5, alpha)),
        Err(why) => (
            Diff::unpaired_from(
                (a.top1, a.n_labelled),
                (b.top1, b.n_labelled),
                why.clone(),
                alpha,
            ),
            Diff::unpaired_from((a.top5, a.n_labelled), (b.top5, b.n_labelled), why, alpha),
        ),
    };
    ScenarioDiff {
        top1,
        top5,
        drop: Delta {
            a: a.drop,
            b: b.drop,
        },
        agreement: Delta {
            a: a.agreement,
            b: b.agreement,
        },
        flip: Delta {
            a: a.flip,
            b: b.flip,
        },
        flip_excess: Delta {
            a: a.flip_excess,
            b: b.flip_excess,
        },
    }
}

/// The scalar metrics of a summary's families: `(metric, key, value)` ([`rules::METRICS`]), the
/// families in `compare`'s order.
fn scalars(s: &Summary) -> Vec<(&'static str, Option<String>, Option<f64>)> {
    super::families::in_compare_order()
        .into_iter()
        .flat_map(|f| f.scalars(s))
        .collect()
}

/// The metric rows of both summaries: the baseline's in its order, then the candidate's others.
fn metric_rows(a: &Summary, b: &Summary) -> Vec<MetricRow> {
    let (xa, xb) = (scalars(a), scalars(b));
    let find =
        |xs: &[(&'static str, Option<String>, Option<f64>)], name: &str, key: &Option<String>| {
            xs.iter()
                .find(|(n, k, _)| *n == name && k == key)
                .map(|(_, _, v)| *v)
        };
    let mut rows: Vec<MetricRow> = Vec::new();
    for (name, key, _) in xa.iter().chain(&xb) {
        if rows.iter().any(|r| r.metric.name == *name && r.key == *key) {
            continue;
        }
        let Some(metric) = rules::metric(name) else {
            continue;
        };
        let (va, vb) = (find(&xa, name, key), find(&xb, name, key));
        rows.push(MetricRow {
            metric,
            key: key.clone(),
            present: [va.is_some(), vb.is_some()],
            delta: Delta {
                a: va.flatten(),
                b: vb.flatten(),
            },
        });
    }
    rows
}

/// A value as shown in the table, Markdown and HTML: fractions as percentages with one decimal,
/// other numbers with 4 decimals; `–` when undefined.
pub(crate) fn show(unit: Unit, v: Option<f64>) -> String {
    match (unit, v) {
        (_, None) => "–".into(),
        (Unit::Fraction, Some(v)) => format!("{:.1}%", v * 100.0),
        (Unit::Number, Some(v)) => format!("{v:.4}"),
    }
}

/// A difference as shown: fractions in points with a sign, other numbers with a sign and 4
/// decimals; `–` when undefined.
pub(crate) fn show_diff(unit: Unit, v: Option<f64>) -> String {
    match (unit, v) {
        (_, None) => "–".into(),
        (Unit::Fraction, Some(v)) => format!("{:+.1}", v * 100.0).replace('-', "−"),
        (Unit::Number, Some(v)) => format!("{v:+.4}").replace('-', "−"),
    }
}

#[cfg(test)]
mod tests;
