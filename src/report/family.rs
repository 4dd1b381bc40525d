//! What a metric family is: one entry of `summary.json`'s `metrics` (`imagenet_c`, `in9`,
//! `volatility`, …) with everything robustream does with it — compute it when a summary is built,
//! keep what records cannot rebuild, print it, write it into `summary.md` and `report.html`, offer
//! its scalars to `compare` and its rules to `--fail-on`, export it to Prometheus. Each family
//! implements [`Family`] in its own file under `report/families/`, computing with its `metrics::`
//! module; `report/families/mod.rs` lists them ([`crate::report::families::FAMILIES`]) and every
//! rendering walks that list (docs/ARCHITECTURE.md#adding-a-metric-family).
//!
//! Every method but [`Family::key`] has a default that does nothing, so a family implements only
//! what it has: a post-pass family (`saliency`) is a key and nothing else.

use serde::Serialize;

use super::summary::{ScenarioSummary, Summary};
use crate::metrics::Metrics;

/// What a family is computed from when a summary is built (streaming, or from records).
pub(crate) struct Inputs<'a> {
    /// The scenario lines of the summary, plan order.
    pub(crate) scenarios: &'a [(String, ScenarioSummary)],
    /// The streaming state the lines come from (per-class tallies, object scores, the window).
    pub(crate) metrics: &'a Metrics,
}

impl Inputs<'_> {
    /// `(scenario key, top-1)` of every scenario line.
    pub(crate) fn top1(&self) -> impl Iterator<Item = (&str, Option<f64>)> {
        top1_of(self.scenarios)
    }
}

/// One scalar a family offers `compare`: `(rule metric name, key within the family, value)`.
pub(crate) type Scalar = (&'static str, Option<String>, Option<f64>);

/// A metric family (see the module docs). The renderings call the methods in the order of
/// [`crate::report::families::FAMILIES`].
pub(crate) trait Family: Sync {
    /// Its key under `summary.json`'s `metrics`.
    fn key(&self) -> &'static str;

    /// Its `summary.json` entry, computed when a summary is built; `None` when the plan has nothing
    /// it measures. Default: `None` (a family a post pass writes).
    fn compute(&self, _inputs: &Inputs<'_>) -> Option<serde_json::Value> {
        None
    }

    /// Whether [`Summary::recompute`] rebuilds it from records; `false`: a post pass writes it (e.g.
    /// `saliency`) and a recompute carries the previous summary's entry over.
    fn rebuilt_from_records(&self) -> bool {
        true
    }

    /// After a recompute: what the records cannot rebuild, taken from the previous summary (the
    /// challenge's counts, the XIMAGENET-12 inner results, a configured CE baseline).
    fn carry_over(&self, _summary: &mut Summary, _previous: &Summary) {}

    /// Its lines under the terminal table, each ending in a newline; `None` when it has none.
    fn lines(&self, _s: &Summary) -> Option<String> {
        None
    }

    /// The paragraph its terminal lines belong to: a blank line separates paragraphs, families of
    /// one paragraph follow each other without one (the background/object families share one).
    fn paragraph(&self) -> &'static str {
        self.key()
    }

    /// Its `summary.md` section (starting with a blank line and a `## ` heading).
    fn markdown(&self, _s: &Summary) -> Option<String> {
        None
    }

    /// Its figures among the overview cards of `report.html`: `(label, value)`.
    fn headline(&self, _s: &Summary) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Its `<section>` of `report.html`.
    fn html(&self, _s: &Summary) -> Option<String> {
        None
    }

    /// The metrics a `--fail-on` rule can name from this family (docs/compare.md#metrics).
    fn rules(&self) -> &'static [MetricDef] {
        &[]
    }

    /// Where its metrics stand in `compare`'s list and `--fail-on`'s: families are sorted by this,
    /// stably (registry order within a rank). The order docs/compare.md#metrics gives is older
    /// than the registry and lists RFS before XIMAGENET-12: ImageNet-C, IN-9 and RFS say 0.
    fn compare_rank(&self) -> u8 {
        1
    }

    /// Its scalars in a summary, each named by one of [`Family::rules`].
    fn scalars(&self, _s: &Summary) -> Vec<Scalar> {
        Vec::new()
    }

    /// Its samples of the live Prometheus exposition (docs/prometheus.md), from the streaming
    /// state; written after the per-scenario ratios, before the latency histograms.
    fn prometheus(&self, _metrics: &Metrics, _out: &mut String) {}
}

/// What a rule's `[PATTERN]` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// One number per run: no pattern.
    None,
    /// One number per scenario in both runs: the pattern is a scenario key, `*` matching any text.
    Scenario,
    /// One number per key of a metric family (a corruption, a variation, …): the pattern matches the
    /// key, `*` matching any text.
    Key,
}

/// How a metric's values are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// A fraction shown as a percentage (differences in points).
    Fraction,
    /// A plain number (variances, RFS) shown with 4 decimals.
    Number,
}

/// Which way a metric improves: colours its difference in `compare`'s HTML only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Better {
    /// Accuracies and scores.
    Higher,
    /// Errors, gaps and variances.
    Lower,
    /// Left uncoloured.
    Neither,
}

/// A metric a rule can name: what the value is and what its pattern selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MetricDef {
    /// The name used in rules and in `compare`'s JSON.
    pub(crate) name: &'static str,
    /// What a `[PATTERN]` selects.
    pub(crate) scope: Scope,
    /// How values are shown.
    pub(crate) unit: Unit,
    /// Which way it improves.
    pub(crate) better: Better,
    /// One line on what the rule's value is (for the docs and `--help`).
    pub(crate) what: &'static str,
}

/// A [`MetricDef`].
pub(crate) const fn def(
    name: &'static str,
    scope: Scope,
    unit: Unit,
    better: Better,
    what: &'static str,
) -> MetricDef {
    MetricDef {
        name,
        scope,
        unit,
        better,
        what,
    }
}

/// `(scenario key, top-1)` of every scenario line.
pub(crate) fn top1_of(
    scenarios: &[(String, ScenarioSummary)],
) -> impl Iterator<Item = (&str, Option<f64>)> {
    scenarios.iter().map(|(k, s)| (k.as_str(), s.top1))
}

/// A metric family's value as JSON. Cannot fail: the families hold only numbers, strings, booleans
/// and string-keyed maps.
pub(crate) fn to_value<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("metric families serialise to JSON")
}

/// Whether a summary's charts show top-1 (some scenario has labels) rather than agreement with
/// clean.
pub(crate) fn labelled(s: &Summary) -> bool {
    s.scenarios.iter().any(|(_, v)| v.top1.is_some())
}

/// The value charted for a scenario line, with its interval: top-1, else agreement with clean.
pub(crate) fn charted(s: &Summary, v: &ScenarioSummary) -> (Option<f64>, Option<[f64; 2]>) {
    if labelled(s) {
        (v.top1, v.top1_ci95)
    } else {
        (v.agreement, None)
    }
}
