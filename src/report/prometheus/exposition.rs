//! How the Prometheus text exposition format (version 0.0.4) is written: sample values, label
//! values, the `# HELP`/`# TYPE` head of a metric, the scenario labels. Shared by the endpoint's
//! renderer and the metric families' samples.

use std::fmt::Write as _;

use crate::key::family;

/// A sample value as the exposition writes it: at most 12 decimals with trailing zeros dropped, so
/// `0.7 - 0.6` is `0.1`, not `0.09999999999999998`; `NaN`, `+Inf`, `-Inf` as the format spells them.
pub(crate) fn num(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let text = format!("{v:.12}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    match text {
        "-0" => "0".into(),
        t => t.into(),
    }
}

/// Escapes a label value (backslash, double quote, newline), as the text format requires.
pub(crate) fn escape(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The `# HELP` and `# TYPE` lines of a metric.
pub(crate) fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The labels of a scenario's samples: `scenario="…",family="…"`.
pub(crate) fn scenario_labels(key: &str) -> String {
    format!(
        "scenario=\"{}\",family=\"{}\"",
        escape(key),
        escape(family(key))
    )
}
