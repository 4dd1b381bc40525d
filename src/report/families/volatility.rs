//! The XIMAGENET-12 family (`metrics.volatility`, docs/ximagenet.md#robustness-score): σ²_cross,
//! score_cross and, with the user's inner results, S_robust, computed by
//! [`crate::metrics::volatility`]; its line, its `summary.md` and `report.html` sections, its
//! `compare` metrics. (The sliding window's volatility is the `window` family.)

use std::fmt::Write as _;

use crate::metrics::volatility::{InnerResults, TABLE2, Volatility};
use crate::report::family::{
    Better, Family, Inputs, MetricDef, Scalar, Scope, Unit, def, to_value, top1_of,
};
use crate::report::format::{md_cell, md_table, num, pct};
use crate::report::html::svg::{self, Bar, Scale};
use crate::report::summary::Summary;

/// The family.
pub(crate) struct VolatilityFamily;

const RULES: &[MetricDef] = &[
    def(
        "variance_cross",
        Scope::None,
        Unit::Number,
        Better::Lower,
        "change of XIMAGENET-12 σ²_cross",
    ),
    def(
        "score_cross",
        Scope::None,
        Unit::Number,
        Better::Higher,
        "change of XIMAGENET-12 score_cross",
    ),
    def(
        "s_robust",
        Scope::None,
        Unit::Number,
        Better::Higher,
        "change of XIMAGENET-12 S_robust",
    ),
];

impl Family for VolatilityFamily {
    fn key(&self) -> &'static str {
        "volatility"
    }

    fn compute(&self, inputs: &Inputs<'_>) -> Option<serde_json::Value> {
        crate::metrics::volatility::compute(inputs.top1(), None).map(|v| to_value(&v))
    }

    fn carry_over(&self, summary: &mut Summary, previous: &Summary) {
        if let Some(inner) = previous.volatility().and_then(|v| v.inner) {
            summary.set_ximagenet_inner(&inner);
        }
    }

    fn lines(&self, s: &Summary) -> Option<String> {
        s.volatility().map(|v| volatility_line(&v))
    }

    fn paragraph(&self) -> &'static str {
        "objects"
    }

    fn markdown(&self, s: &Summary) -> Option<String> {
        let v = s.volatility()?;
        let mut out =
            String::from("\n## XIMAGENET-12 volatility (docs/ximagenet.md#robustness-score)\n\n");
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
        Some(out)
    }

    fn headline(&self, s: &Summary) -> Vec<(&'static str, String)> {
        s.volatility()
            .and_then(|v| v.score.or(v.score_cross))
            .map(|v| ("robustness score", format!("{v:.4}")))
            .into_iter()
            .collect()
    }

    fn html(&self, s: &Summary) -> Option<String> {
        let v = s.volatility()?;
        let bars: Vec<Bar> = v
            .drop_volatility
            .iter()
            .map(|(name, d)| Bar {
                label: name.clone(),
                value: d.map(|d| d * 100.0),
                interval: None,
                colour: 4,
            })
            .collect();
        let mut out = String::from("<section id=\"ximagenet\"><h2>XIMAGENET-12 volatility</h2>");
        out.push_str(&svg::bars(
            "ximagenet",
            "Drop volatility (C(i) − μ)² × 100 per scenario",
            &bars,
            Scale::From0,
            None,
        ));
        let num = |x: Option<f64>| x.map_or_else(|| "—".into(), |x| format!("{x:.4}"));
        let _ = write!(
            out,
            "<p>μ (clean) {} · σ²_cross {} · score_cross {} · σ²_inner {} · S_robust {}</p></section>",
            svg::pct(v.mu),
            num(v.variance_cross),
            num(v.score_cross),
            num(v.variance_inner),
            num(v.score)
        );
        Some(out)
    }

    fn rules(&self) -> &'static [MetricDef] {
        RULES
    }

    fn scalars(&self, s: &Summary) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = Vec::new();
        if let Some(v) = s.volatility() {
            out.push(("variance_cross", None, v.variance_cross));
            out.push(("score_cross", None, v.score_cross));
            out.push(("s_robust", None, v.score));
        }
        out
    }
}

impl Summary {
    /// Adds the user's XIMAGENET-12 inner results (accuracies of scenario-trained models, config
    /// `[metrics] ximagenet_inner`) to `metrics.volatility`: σ²_inner and S_robust
    /// (docs/ximagenet.md#cross-and-inner-variance, docs/ximagenet.md#s_robust). No effect when the
    /// plan has no XIMAGENET-12 scenario. The results are kept in `summary.json` so
    /// [`Summary::recompute`] with this summary as `previous` keeps them.
    pub(crate) fn set_ximagenet_inner(&mut self, inner: &InnerResults) {
        if let Some(v) = crate::metrics::volatility::compute(top1_of(&self.scenarios), Some(inner))
        {
            self.metrics.insert("volatility".into(), to_value(&v));
        }
    }

    /// The XIMAGENET-12 volatility metrics (`metrics.volatility`), if the plan had such scenarios.
    pub(crate) fn volatility(&self) -> Option<Volatility> {
        self.family("volatility")
    }
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
