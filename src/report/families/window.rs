//! The sliding-window family (`metrics.window`, docs/ximagenet.md#sliding-window-volatility): the
//! last N frames' accuracy per scenario, drop volatility and the temporal volatility of the mean
//! drop, kept by [`crate::metrics::window`] in the streaming state; its line, its `summary.md`
//! section, its chart on `report.html`'s timeline, its `compare` metrics and its Prometheus gauges.

use std::fmt::Write as _;

use crate::metrics::Metrics;
use crate::metrics::window::WindowReport;
use crate::report::family::{
    Better, Family, Inputs, MetricDef, Scalar, Scope, Unit, def, to_value,
};
use crate::report::format::{NONE, md_cell};
use crate::report::html::svg::{self, Series};
use crate::report::prometheus::exposition::{head, num, scenario_labels};
use crate::report::summary::Summary;

/// The family.
pub(crate) struct WindowFamily;

const RULES: &[MetricDef] = &[
    def(
        "window_drop_volatility",
        Scope::None,
        Unit::Number,
        Better::Lower,
        "change of the sliding window's drop volatility",
    ),
    def(
        "temporal_volatility",
        Scope::None,
        Unit::Number,
        Better::Lower,
        "change of the window's temporal volatility",
    ),
];

impl Family for WindowFamily {
    fn key(&self) -> &'static str {
        "window"
    }

    fn compute(&self, inputs: &Inputs<'_>) -> Option<serde_json::Value> {
        inputs.metrics.window().map(|w| to_value(&w))
    }

    fn lines(&self, s: &Summary) -> Option<String> {
        window_line(s).map(|line| format!("{line}\n"))
    }

    fn markdown(&self, s: &Summary) -> Option<String> {
        window_line(s).map(|line| format!("\n## Sliding window\n\n- {}\n", md_cell(&line)))
    }

    fn rules(&self) -> &'static [MetricDef] {
        RULES
    }

    fn scalars(&self, s: &Summary) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = Vec::new();
        if let Some(w) = s.window() {
            out.push(("window_drop_volatility", None, w.drop_volatility));
            out.push(("temporal_volatility", None, w.temporal_volatility));
        }
        out
    }

    fn prometheus(&self, metrics: &Metrics, out: &mut String) {
        let Some(w) = metrics.window() else {
            return;
        };
        head(
            out,
            "robustream_window_accuracy_ratio",
            "gauge",
            "Top-1 accuracy over the sliding window's labelled records (0..1).",
        );
        for s in &w.scenarios {
            if let Some(a) = s.top1 {
                let _ = writeln!(
                    out,
                    "robustream_window_accuracy_ratio{{{}}} {}",
                    scenario_labels(&s.scenario),
                    num(a)
                );
            }
        }
        if let Some(v) = w.drop_volatility {
            head(
                out,
                "robustream_window_drop_volatility",
                "gauge",
                "Drop volatility across the sliding window's scenarios \
                 (docs/ximagenet.md#sliding-window-volatility).",
            );
            let _ = writeln!(out, "robustream_window_drop_volatility {}", num(v));
        }
    }
}

impl Summary {
    /// The sliding window of this summary (`metrics.window`), if one was kept.
    fn window(&self) -> Option<WindowReport> {
        self.family("window")
    }

    /// The length in frames of the window this summary kept, if any: a recompute rebuilds the
    /// window at the same length.
    pub(crate) fn window_frames(&self) -> Option<usize> {
        self.metrics
            .get("window")?
            .get("frames")?
            .as_u64()
            .map(|f| f as usize)
    }
}

/// One line on the sliding window: its drop volatility and the trend's temporal volatility,
/// with what they measure and in which unit (docs/ximagenet.md#sliding-window-volatility).
fn window_line(s: &Summary) -> Option<String> {
    let w = s.window()?;
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

/// The window's chart on `report.html`'s timeline: windowed clean top-1 and mean drop against
/// frames; `None` without a window or its series.
pub(crate) fn timeline_chart(s: &Summary) -> Option<String> {
    let w = s.window().filter(|w| !w.series.is_empty())?;
    let clean: Vec<(f64, f64)> = w
        .series
        .iter()
        .filter_map(|p| p.clean_top1.map(|v| (p.frame as f64, v)))
        .collect();
    let drop: Vec<(f64, f64)> = w
        .series
        .iter()
        .filter_map(|p| p.mean_drop.map(|v| (p.frame as f64, v)))
        .collect();
    let mut series = Vec::new();
    if !clean.is_empty() {
        series.push(Series {
            name: "clean top-1".into(),
            points: clean,
            colour: 2,
        });
    }
    series.push(Series {
        name: "mean drop".into(),
        points: drop,
        colour: 3,
    });
    let title = format!("Over windows of {} frames ({})", w.frames, w.basis);
    Some(svg::lines("window", &title, "frames", &series, true))
}
