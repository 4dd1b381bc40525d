//! The terminal table, the Markdown and the gate's lines of a [`Comparison`]
//! (docs/compare.md#output-formats).

use std::fmt::Write as _;

use super::rules::Unit;
use super::{Comparison, Diff, Hit, Pairing, RuleOutcome, SideInfo, Status, show, show_diff};

/// The scenario table's header.
const HEADER: [&str; 11] = [
    "scenario", "n", "top-1 A", "top-1 B", "Δ top-1", "95% CI", "p", "top-5 A", "top-5 B",
    "Δ top-5", "pairing",
];

/// Hits shown per rule before `… and N more`.
const SHOWN: usize = 10;

/// One side's line: path, model, end, records.
pub(super) fn side_line(s: &SideInfo) -> String {
    let mut parts = Vec::new();
    if let Some(m) = &s.model {
        parts.push(format!("model {m}"));
    }
    if let Some(e) = &s.end {
        parts.push(format!("end {e}"));
    }
    parts.push(match s.records {
        Some(n) => format!("{n} records"),
        None => "summary only".into(),
    });
    format!("{} ({})", s.path, parts.join(", "))
}

/// `n` of a difference: the pairs, or both sides' counts.
pub(super) fn n_cell(d: &Diff) -> String {
    if d.paired() || d.n[0] == d.n[1] {
        d.n[0].to_string()
    } else {
        format!("{}/{}", d.n[0], d.n[1])
    }
}

/// The 95 % interval in points.
pub(super) fn ci_cell(d: &Diff) -> String {
    d.ci95.map_or_else(
        || "–".into(),
        |(lo, hi)| {
            format!(
                "{}…{}",
                show_diff(Unit::Fraction, Some(lo)),
                show_diff(Unit::Fraction, Some(hi))
            )
        },
    )
}

/// McNemar's p with 3 significant figures, or `–`.
pub(super) fn p_cell(d: &Diff) -> String {
    d.p.map_or_else(|| "–".into(), fmt_p)
}

/// A p-value: 3 decimals, or scientific notation below 0.001.
pub(super) fn fmt_p(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

/// The cells of one scenario.
pub(super) fn scenario_cells(key: &str, d: &super::ScenarioDiff) -> Vec<String> {
    vec![
        key.to_string(),
        n_cell(&d.top1),
        show(Unit::Fraction, d.top1.a),
        show(Unit::Fraction, d.top1.b),
        show_diff(Unit::Fraction, d.top1.diff()),
        ci_cell(&d.top1),
        p_cell(&d.top1),
        show(Unit::Fraction, d.top5.a),
        show(Unit::Fraction, d.top5.b),
        show_diff(Unit::Fraction, d.top5.diff()),
        if d.top1.paired() {
            "paired"
        } else {
            "unpaired"
        }
        .into(),
    ]
}

/// The distinct reasons scenarios were not paired, each with how many.
pub(super) fn unpaired_reasons(c: &Comparison) -> Vec<String> {
    let mut reasons: Vec<(String, usize)> = Vec::new();
    for (_, d) in &c.scenarios {
        if let Pairing::Unpaired(why) = &d.top1.pairing {
            match reasons.iter_mut().find(|(w, _)| w == why) {
                Some((_, n)) => *n += 1,
                None => reasons.push((why.clone(), 1)),
            }
        }
    }
    reasons
        .into_iter()
        .map(|(why, n)| format!("unpaired ({n} scenario{}): {why}", plural(n)))
        .collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The metric table's rows (header first).
pub(super) fn metric_rows(c: &Comparison) -> Vec<Vec<String>> {
    let mut rows = vec![
        ["metric", "baseline", "candidate", "Δ"]
            .map(String::from)
            .to_vec(),
    ];
    for r in &c.metrics {
        let unit = r.metric.unit;
        rows.push(vec![
            r.id(),
            show(unit, r.delta.a),
            show(unit, r.delta.b),
            show_diff(unit, r.delta.diff()),
        ]);
    }
    rows
}

/// The terminal rendering.
pub(super) fn table(c: &Comparison) -> String {
    let mut out = format!(
        "baseline (A):  {}\ncandidate (B): {}\n",
        side_line(&c.baseline),
        side_line(&c.candidate)
    );
    for n in &c.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out.push('\n');
    let mut rows = vec![HEADER.map(String::from).to_vec()];
    rows.extend(c.scenarios.iter().map(|(k, d)| scenario_cells(k, d)));
    out.push_str(&crate::report::format::aligned(&rows));
    let _ = writeln!(
        out,
        "Δ = B − A in points; 95% CI: Newcombe (paired or unpaired); p: exact McNemar (paired only)"
    );
    for r in unpaired_reasons(c) {
        let _ = writeln!(out, "{r}");
    }
    for (which, keys) in [
        ("only in the baseline", &c.only_baseline),
        ("only in the candidate", &c.only_candidate),
    ] {
        if !keys.is_empty() {
            let _ = writeln!(out, "{which}: {}", keys.join(", "));
        }
    }
    if !c.metrics.is_empty() {
        out.push('\n');
        out.push_str(&crate::report::format::aligned(&metric_rows(c)));
    }
    out
}

/// Text safe in a Markdown table cell.
fn md(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A Markdown table (first column left-aligned, others right).
fn md_table(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row.iter().map(|c| md(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if i == 0 {
            let rule: Vec<&str> = (0..row.len())
                .map(|j| if j == 0 { ":--" } else { "--:" })
                .collect();
            let _ = writeln!(out, "| {} |", rule.join(" | "));
        }
    }
    out
}

/// The Markdown rendering.
pub(super) fn markdown(c: &Comparison) -> String {
    let mut out = String::from("# robustream compare\n\n");
    let _ = writeln!(out, "- baseline (A): {}", md(&side_line(&c.baseline)));
    let _ = writeln!(out, "- candidate (B): {}", md(&side_line(&c.candidate)));
    for n in &c.notes {
        let _ = writeln!(out, "- note: {}", md(n));
    }
    out.push_str("\n## Scenarios\n\n");
    let mut rows = vec![HEADER.map(String::from).to_vec()];
    rows.extend(c.scenarios.iter().map(|(k, d)| scenario_cells(k, d)));
    out.push_str(&md_table(&rows));
    out.push_str(
        "\nΔ = B − A in points; 95% CI: Newcombe (paired or unpaired); p: exact McNemar (paired \
         only).\n",
    );
    for r in unpaired_reasons(c) {
        let _ = writeln!(out, "\n- {}", md(&r));
    }
    for (which, keys) in [
        ("only in the baseline", &c.only_baseline),
        ("only in the candidate", &c.only_candidate),
    ] {
        if !keys.is_empty() {
            let _ = writeln!(out, "- {which}: {}", md(&keys.join(", ")));
        }
    }
    if !c.metrics.is_empty() {
        out.push_str("\n## Metrics\n\n");
        out.push_str(&md_table(&metric_rows(c)));
    }
    if !c.gate.is_empty() {
        out.push_str("\n## Gate\n\n");
        for line in gate_lines(c) {
            let _ = writeln!(out, "- {}", md(&line));
        }
    }
    out
}

/// A hit as `item value (baseline a, candidate b, McNemar p = …)`.
fn hit_text(o: &RuleOutcome, h: &Hit) -> String {
    let unit = o.rule.metric.unit;
    let value = match unit {
        Unit::Fraction => format!("{:.1} points", h.value * 100.0),
        Unit::Number => format!("{:.4}", h.value),
    };
    let p =
        h.p.map(|p| format!(", McNemar p = {}", fmt_p(p)))
            .unwrap_or_default();
    format!(
        "{} {} {value} (baseline {}, candidate {}{p})",
        h.item,
        o.rule.metric.name,
        show(unit, Some(h.a)),
        show(unit, Some(h.b))
    )
}

/// The gate's lines (see [`Comparison::gate_lines`]).
pub(super) fn gate_lines(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    if c.gate.is_empty() {
        return out;
    }
    for o in &c.gate {
        let rule = &o.rule.text;
        match o.status() {
            Status::Fired => {
                for h in o.fired.iter().take(SHOWN) {
                    out.push(format!("FAIL `{rule}`: {}", hit_text(o, h)));
                }
                if o.fired.len() > SHOWN {
                    out.push(format!(
                        "FAIL `{rule}`: … and {} more",
                        o.fired.len() - SHOWN
                    ));
                }
            }
            Status::Unchecked => {}
            Status::Passed => out.push(format!("pass `{rule}`")),
        }
        for (item, why) in o.unchecked.iter().take(SHOWN) {
            out.push(format!("CANNOT CHECK `{rule}`: {item}: {why}"));
        }
        if o.unchecked.len() > SHOWN {
            out.push(format!(
                "CANNOT CHECK `{rule}`: … and {} more",
                o.unchecked.len() - SHOWN
            ));
        }
        if !o.not_significant.is_empty() {
            let items: Vec<&str> = o.not_significant.iter().map(|h| h.item.as_str()).collect();
            out.push(format!(
                "held back `{rule}`: over the threshold but not significant at --alpha {}: {}",
                c.alpha.unwrap_or_default(),
                items.join(", ")
            ));
        }
    }
    let n = c.gate.len();
    let count = |s: Status| c.gate.iter().filter(|o| o.status() == s).count();
    let code = c.exit_code();
    out.push(match code {
        0 => format!("gate passed: {n} rule{} checked", plural(n)),
        super::EXIT_FIRED => format!(
            "gate failed: {} of {n} rule{} fired{} (exit {code})",
            count(Status::Fired),
            plural(n),
            match count(Status::Unchecked) {
                0 => String::new(),
                u => format!(", {u} could not be checked"),
            }
        ),
        _ => format!(
            "gate not passed: {} of {n} rule{} could not be checked (exit {code})",
            count(Status::Unchecked),
            plural(n)
        ),
    });
    out
}
