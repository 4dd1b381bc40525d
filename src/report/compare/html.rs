//! The HTML page of a [`Comparison`] (`--format html`, docs/compare.md#output-formats): one
//! self-contained file, its CSS inline, no script and nothing to load, differences coloured by
//! direction and significance.

use std::fmt::Write as _;

use super::render::{ci_cell, gate_lines, n_cell, p_cell, side_line, unpaired_reasons};
use super::rules::{Better, Unit};
use super::{Comparison, Diff, show, show_diff};

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}th,td{padding:2px 8px;border-bottom:1px solid #ddd}\
th{text-align:left;background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.better{color:#1a7f37}.worse{color:#cf222e}.sig{font-weight:bold}\
.better.sig{background:#dafbe1}.worse.sig{background:#ffebe9}\
.fail{color:#cf222e;font-weight:bold}.pass{color:#1a7f37}.unchecked{color:#9a6700;font-weight:bold}\
.notes li{color:#555}code{background:#f4f4f4;padding:0 3px}";

/// Text safe in HTML content and attribute values.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The class of a difference: its direction, and `sig` when significant.
fn class(diff: Option<f64>, better: Better, significant: bool) -> String {
    let Some(d) = diff.filter(|d| *d != 0.0) else {
        return "n".into();
    };
    let good = match better {
        Better::Higher => d > 0.0,
        Better::Lower => d < 0.0,
        Better::Neither => return "n".into(),
    };
    let mut c = String::from(if good { "n better" } else { "n worse" });
    if significant {
        c.push_str(" sig");
    }
    c
}

/// Whether an accuracy difference is significant: at `--alpha` when given, else at 5 % (the 95 %
/// interval excludes 0).
fn significant(d: &Diff) -> bool {
    d.significant
        .unwrap_or_else(|| d.ci95.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0))
}

fn cell(out: &mut String, class: &str, text: &str) {
    match class {
        "" => {
            let _ = write!(out, "<td>{}</td>", esc(text));
        }
        _ => {
            let _ = write!(out, "<td class=\"{class}\">{}</td>", esc(text));
        }
    }
}

/// The page.
pub(super) fn page(c: &Comparison) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>robustream compare</title><style>",
    );
    out.push_str(STYLE);
    out.push_str("</style></head><body>\n<h1>robustream compare</h1>\n<ul>");
    let _ = writeln!(
        out,
        "<li>baseline (A): <code>{}</code></li><li>candidate (B): <code>{}</code></li></ul>",
        esc(&side_line(&c.baseline)),
        esc(&side_line(&c.candidate))
    );
    if !c.notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for n in &c.notes {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul>\n");
    }
    if !c.gate.is_empty() {
        let (class, verdict) = match c.exit_code() {
            0 => ("pass", "passed"),
            super::EXIT_FIRED => ("fail", "failed"),
            _ => ("unchecked", "not passed (rules could not be checked)"),
        };
        let _ = write!(
            out,
            "<h2>Gate: <span class=\"{class}\">{verdict}</span></h2>\n<ul>"
        );
        for line in gate_lines(c) {
            let class = if line.starts_with("FAIL") {
                " class=\"fail\""
            } else if line.starts_with("CANNOT") {
                " class=\"unchecked\""
            } else {
                ""
            };
            let _ = write!(out, "<li{class}>{}</li>", esc(&line));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("<h2>Scenarios</h2>\n<table><tr>");
    for h in [
        "scenario",
        "n",
        "top-1 A",
        "top-1 B",
        "Δ top-1",
        "95% CI",
        "McNemar p",
        "top-5 A",
        "top-5 B",
        "Δ top-5",
        "pairing",
    ] {
        let _ = write!(out, "<th>{h}</th>");
    }
    out.push_str("</tr>\n");
    for (key, d) in &c.scenarios {
        out.push_str("<tr>");
        cell(&mut out, "", key);
        cell(&mut out, "n", &n_cell(&d.top1));
        cell(&mut out, "n", &show(Unit::Fraction, d.top1.a));
        cell(&mut out, "n", &show(Unit::Fraction, d.top1.b));
        let c1 = class(d.top1.diff(), Better::Higher, significant(&d.top1));
        cell(&mut out, &c1, &show_diff(Unit::Fraction, d.top1.diff()));
        cell(&mut out, "n", &ci_cell(&d.top1));
        cell(&mut out, "n", &p_cell(&d.top1));
        cell(&mut out, "n", &show(Unit::Fraction, d.top5.a));
        cell(&mut out, "n", &show(Unit::Fraction, d.top5.b));
        let c5 = class(d.top5.diff(), Better::Higher, significant(&d.top5));
        cell(&mut out, &c5, &show_diff(Unit::Fraction, d.top5.diff()));
        cell(
            &mut out,
            "",
            if d.top1.paired() {
                "paired"
            } else {
                "unpaired"
            },
        );
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n<p>Δ = B − A in points; 95% CI: Newcombe (paired or unpaired); p: exact McNemar (paired only); bold: significant.</p>\n");
    for r in unpaired_reasons(c) {
        let _ = writeln!(out, "<p>{}</p>", esc(&r));
    }
    for (which, keys) in [
        ("Only in the baseline", &c.only_baseline),
        ("Only in the candidate", &c.only_candidate),
    ] {
        if !keys.is_empty() {
            let _ = writeln!(out, "<p>{which}: {}</p>", esc(&keys.join(", ")));
        }
    }
    if !c.metrics.is_empty() {
        out.push_str(
            "<h2>Metrics</h2>\n<table><tr><th>metric</th><th>baseline</th><th>candidate</th>\
             <th>Δ</th></tr>\n",
        );
        for r in &c.metrics {
            let unit = r.metric.unit;
            out.push_str("<tr>");
            cell(&mut out, "", &r.id());
            cell(&mut out, "n", &show(unit, r.delta.a));
            cell(&mut out, "n", &show(unit, r.delta.b));
            let cl = class(r.delta.diff(), r.metric.better, false);
            cell(&mut out, &cl, &show_diff(unit, r.delta.diff()));
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
    out.push_str("</body></html>\n");
    out
}
