//! `summary.md`: title, run facts, frame counts, the scenario table (percentages), each metric
//! family's section (in registry order) and the latency table (ms).

use std::fmt::Write as _;

use super::Summary;
use super::text::{SCENARIO_HEADER, latency_cells, scenario_cells};
use crate::report::families::FAMILIES;
use crate::report::format::{md_cell, md_table};

const LATENCY_HEADER: [&str; 6] = ["stage", "p50", "p90", "p95", "p99", "max"];

impl Summary {
    /// Markdown report: title, run facts, frame counts, the scenario table (percentages), the
    /// metric families' sections and the latency table (ms).
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
            n => format!(", {n} lost by the source{}", f.lost_causes_bracketed()),
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
        for family in FAMILIES {
            if let Some(section) = family.markdown(self) {
                out.push_str(&section);
            }
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
