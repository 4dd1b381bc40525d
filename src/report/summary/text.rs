//! The terminal table of a summary: the scenarios as aligned plain text (the columns of
//! `summary.md`), each metric family's lines (registry order, a blank line between paragraphs) and
//! the frames line.

use std::fmt::Write as _;

use super::{ScenarioSummary, Summary};
use crate::latency::Quantiles;
use crate::report::families::FAMILIES;
use crate::report::format::{NONE, aligned, pct};

/// The scenario table's header (terminal and Markdown).
pub(super) const SCENARIO_HEADER: [&str; 7] = [
    "scenario",
    "n",
    "top-1",
    "95% CI",
    "top-5",
    "drop",
    "agreement",
];

impl Summary {
    /// The per-scenario table as aligned plain text for a terminal (same columns as the Markdown),
    /// then the metric families' lines and the frames line.
    pub fn table(&self) -> String {
        let mut rows = vec![SCENARIO_HEADER.map(String::from).to_vec()];
        rows.extend(self.scenarios.iter().map(|(k, s)| scenario_cells(k, s)));
        let mut out = aligned(&rows);
        let mut paragraph = None;
        for family in FAMILIES {
            if let Some(lines) = family.lines(self) {
                if paragraph != Some(family.paragraph()) {
                    out.push('\n');
                    paragraph = Some(family.paragraph());
                }
                out.push_str(&lines);
            }
        }
        let _ = writeln!(out, "\n{}", self.frames_line());
        out
    }

    /// One line on the frames: read, and of them skipped (unreadable), dropped at admission (the
    /// pipeline was behind a live source) and lost by the source before robustream saw them.
    fn frames_line(&self) -> String {
        let f = &self.frames;
        format!(
            "Frames: {} read; {} skipped (unreadable), {} dropped (pipeline behind a live source), \
             {} lost (by the source{})",
            f.read,
            f.skipped,
            f.dropped,
            f.lost,
            f.lost_causes_text()
                .map_or_else(String::new, |c| format!(": {c}"))
        )
    }
}

/// The table cells of one scenario: key, n, percentages with one decimal.
pub(super) fn scenario_cells(key: &str, s: &ScenarioSummary) -> Vec<String> {
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
pub(super) fn latency_cells(stage: &str, q: &Quantiles) -> Vec<String> {
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
