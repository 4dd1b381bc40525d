//! The groups family (`metrics.groups`, docs/groups.md): accuracy per group of frames with its
//! interval, the gap to the reference group or to the rest, the worst group, pooled and per
//! scenario, computed by [`crate::metrics::groups`] from the streaming state; its lines, its
//! `summary.md` and `report.html` sections, its `compare` metrics and its Prometheus gauges.

use std::fmt::Write as _;

use crate::metrics::Metrics;
use crate::metrics::groups::{Dimension, GroupSettings, Groups};
use crate::report::family::{
    Better, Family, Inputs, MetricDef, Scalar, Scope, Unit, def, to_value,
};
use crate::report::format::{NONE, md_cell, md_table, pct};
use crate::report::html::svg::{self, Bar, Scale, esc};
use crate::report::prometheus::exposition::{escape, head, num, scenario_labels};
use crate::report::summary::Summary;

/// The family.
pub(crate) struct GroupsFamily;

/// Groups shown on a terminal line; the rest are in `summary.md` and `summary.json`.
const LINE_GROUPS: usize = 12;

const RULES: &[MetricDef] = &[
    def(
        "group_top1",
        Scope::Key,
        Unit::Fraction,
        Better::Higher,
        "change of a group's top-1, per `<dimension>=<group>` (`@<scenario>`: under one scenario)",
    ),
    def(
        "group_gap",
        Scope::Key,
        Unit::Fraction,
        Better::Lower,
        "change of a group's gap to the reference group or the rest, per `<dimension>=<group>` \
         (`@<scenario>`: under one scenario)",
    ),
    def(
        "worst_group_top1",
        Scope::Key,
        Unit::Fraction,
        Better::Higher,
        "change of the worst group's top-1, per `<dimension>` (`@<scenario>`: under one scenario)",
    ),
];

impl Family for GroupsFamily {
    fn key(&self) -> &'static str {
        "groups"
    }

    fn compute(&self, inputs: &Inputs<'_>) -> Option<serde_json::Value> {
        let m = inputs.metrics;
        m.groups().report(m.keys()).map(|g| to_value(&g))
    }

    fn lines(&self, s: &Summary) -> Option<String> {
        s.groups().map(|g| groups_lines(&g))
    }

    fn markdown(&self, s: &Summary) -> Option<String> {
        s.groups().map(|g| groups_markdown(&g))
    }

    fn headline(&self, s: &Summary) -> Vec<(&'static str, String)> {
        let Some(g) = s.groups() else {
            return Vec::new();
        };
        // The lowest worst group over the dimensions.
        g.dimensions
            .iter()
            .filter_map(|(dim, d)| d.worst.as_ref().map(|w| (dim, w)))
            .min_by(|a, b| a.1.top1.total_cmp(&b.1.top1))
            .map(|(dim, w)| {
                (
                    "worst group",
                    format!("{dim}={} {}", w.group, svg::pct(Some(w.top1))),
                )
            })
            .into_iter()
            .collect()
    }

    fn html(&self, s: &Summary) -> Option<String> {
        let g = s.groups()?;
        let mut out = String::from("<section id=\"groups\"><h2>Groups</h2>");
        for (dim, d) in &g.dimensions {
            let bars: Vec<Bar> = d
                .groups
                .iter()
                .map(|(name, group)| Bar {
                    label: name.clone(),
                    value: group.all.top1,
                    interval: group.all.top1_ci95,
                    colour: if d.reference.as_deref() == Some(name.as_str()) {
                        1
                    } else {
                        2
                    },
                })
                .collect();
            let reference_top1 = d.reference.as_deref().and_then(|r| {
                d.groups
                    .iter()
                    .find(|(n, _)| n == r)
                    .and_then(|(_, g)| g.all.top1)
            });
            out.push_str(&svg::bars(
                &format!("groups-{dim}"),
                &format!("Top-1 per {dim} ({})", compared_with(d)),
                &bars,
                Scale::Fraction,
                reference_top1,
            ));
            let _ = write!(out, "<p>{}</p>", esc(&dimension_line(dim, d, usize::MAX)));
        }
        out.push_str("</section>");
        Some(out)
    }

    fn rules(&self) -> &'static [MetricDef] {
        RULES
    }

    fn scalars(&self, s: &Summary) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = Vec::new();
        let Some(g) = s.groups() else {
            return out;
        };
        for (dim, d) in &g.dimensions {
            for (name, group) in &d.groups {
                let key = format!("{dim}={name}");
                out.push(("group_top1", Some(key.clone()), group.all.top1));
                out.push(("group_gap", Some(key), group.all.gap));
            }
            out.push((
                "worst_group_top1",
                Some(dim.clone()),
                d.worst.as_ref().map(|w| w.top1),
            ));
            // Under each scenario, when there is more than one (else they are the numbers above).
            if crossed(d) {
                for (name, group) in &d.groups {
                    for (scenario, c) in &group.scenarios {
                        let key = format!("{dim}={name}@{scenario}");
                        out.push(("group_top1", Some(key.clone()), c.top1));
                        out.push(("group_gap", Some(key), c.gap));
                    }
                }
                for (scenario, w) in &d.worst_by_scenario {
                    out.push((
                        "worst_group_top1",
                        Some(format!("{dim}@{scenario}")),
                        Some(w.top1),
                    ));
                }
            }
        }
        out
    }

    fn prometheus(&self, metrics: &Metrics, out: &mut String) {
        let Some(g) = metrics.groups().report(metrics.keys()) else {
            return;
        };
        let labels = |dim: &str, group: &str| {
            format!("dimension=\"{}\",group=\"{}\"", escape(dim), escape(group))
        };
        let (mut accuracy, mut gaps, mut worst) = (String::new(), String::new(), String::new());
        for (dim, d) in &g.dimensions {
            for (name, group) in &d.groups {
                for (scenario, c) in &group.scenarios {
                    if let Some(a) = c.top1 {
                        let _ = writeln!(
                            accuracy,
                            "robustream_group_accuracy_ratio{{{},{}}} {}",
                            labels(dim, name),
                            scenario_labels(scenario),
                            num(a)
                        );
                    }
                }
                if let Some(gap) = group.all.gap {
                    let _ = writeln!(
                        gaps,
                        "robustream_group_gap_ratio{{{}}} {}",
                        labels(dim, name),
                        num(gap)
                    );
                }
            }
            if let Some(w) = &d.worst {
                let _ = writeln!(
                    worst,
                    "robustream_group_worst_accuracy_ratio{{dimension=\"{}\"}} {}",
                    escape(dim),
                    num(w.top1)
                );
            }
        }
        for (name, help, samples) in [
            (
                "robustream_group_accuracy_ratio",
                "Top-1 accuracy of a group of frames under a scenario (0..1, docs/groups.md).",
                accuracy,
            ),
            (
                "robustream_group_gap_ratio",
                "The reference group's (or the rest's) top-1 minus this group's, over all \
                 scenarios (docs/groups.md#gap).",
                gaps,
            ),
            (
                "robustream_group_worst_accuracy_ratio",
                "Top-1 of the worst group of a dimension, over all scenarios (docs/groups.md).",
                worst,
            ),
        ] {
            if !samples.is_empty() {
                head(out, name, "gauge", help);
                out.push_str(&samples);
            }
        }
    }
}

impl Summary {
    /// The group metrics of this summary (`metrics.groups`), if its frames had groups.
    pub(crate) fn groups(&self) -> Option<Groups> {
        self.family("groups")
    }

    /// How the groups of this summary were compared (their reference groups): a recompute from
    /// records compares them the same way.
    pub(crate) fn group_settings(&self) -> Option<GroupSettings> {
        let g = self.groups()?;
        Some(GroupSettings {
            reference: g
                .dimensions
                .into_iter()
                .filter_map(|(dim, d)| d.reference.map(|r| (dim, r)))
                .collect(),
        })
    }
}

/// Whether a dimension's groups were seen under more than one scenario.
fn crossed(d: &Dimension) -> bool {
    d.worst_by_scenario.len() > 1 || d.groups.iter().any(|(_, g)| g.scenarios.len() > 1)
}

/// What a dimension's gaps are taken to, in words.
fn compared_with(d: &Dimension) -> String {
    match &d.reference {
        Some(r) => format!("gaps to {r}"),
        None => "gaps to the rest".to_string(),
    }
}

/// One dimension on one line: each group's top-1 and n, its gap; the worst group. At most
/// `limit` groups are listed.
fn dimension_line(dim: &str, d: &Dimension, limit: usize) -> String {
    let mut parts: Vec<String> = d
        .groups
        .iter()
        .take(limit)
        .map(|(name, g)| {
            let gap = match g.all.gap {
                Some(x) => format!(", gap {:+.1}", x * 100.0),
                None if d.reference.as_deref() == Some(name.as_str()) => ", reference".into(),
                None => String::new(),
            };
            format!("{name} {} (n {}{gap})", pct(g.all.top1), g.all.n_labelled)
        })
        .collect();
    if d.groups.len() > limit {
        parts.push(format!("… {} more (summary.md)", d.groups.len() - limit));
    }
    let worst = d.worst.as_ref().map_or_else(
        || NONE.to_string(),
        |w| format!("{} {}", w.group, pct(Some(w.top1))),
    );
    format!(
        "Groups by {dim} (top-1, {}, points): {}; worst {worst}",
        compared_with(d),
        parts.join(", ")
    )
}

/// The terminal lines: one per dimension.
fn groups_lines(g: &Groups) -> String {
    let mut out = String::new();
    for (dim, d) in &g.dimensions {
        let _ = writeln!(out, "{}", dimension_line(dim, d, LINE_GROUPS));
    }
    out
}

/// The `summary.md` section: per dimension a table of its groups over all records, and the top-1
/// of each group under each scenario when there is more than one.
fn groups_markdown(g: &Groups) -> String {
    let mut out = String::from("\n## Groups (docs/groups.md)\n");
    for (dim, d) in &g.dimensions {
        let _ = writeln!(
            out,
            "\n{} ({}; worst {}):\n",
            md_cell(dim),
            compared_with(d),
            d.worst.as_ref().map_or_else(
                || NONE.to_string(),
                |w| format!("{} {}", md_cell(&w.group), pct(Some(w.top1)))
            )
        );
        let mut rows = vec![
            [
                dim.as_str(),
                "n",
                "top-1",
                "95% CI",
                "top-5",
                "gap",
                "gap 95% CI",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for (name, group) in &d.groups {
            let c = &group.all;
            let ci = |v: Option<[f64; 2]>| {
                v.map_or_else(
                    || NONE.to_string(),
                    |[lo, hi]| format!("{:.1}–{:.1}%", lo * 100.0, hi * 100.0),
                )
            };
            let gap = match c.gap {
                Some(x) => format!("{:+.1} points", x * 100.0),
                None if d.reference.as_deref() == Some(name.as_str()) => "reference".into(),
                None => NONE.to_string(),
            };
            let gap_ci = match c.gap_ci95 {
                Some([lo, hi]) => format!("{:.1} to {:.1}", lo * 100.0, hi * 100.0),
                None => NONE.to_string(),
            };
            rows.push(vec![
                md_cell(name),
                c.n_labelled.to_string(),
                pct(c.top1),
                ci(c.top1_ci95),
                pct(c.top5),
                gap,
                gap_ci,
            ]);
        }
        out.push_str(&md_table(&rows));
        if crossed(d) {
            let _ = writeln!(out, "\nTop-1 per scenario and {}:\n", md_cell(dim));
            let mut scenarios: Vec<&str> = Vec::new();
            for (_, group) in &d.groups {
                for (k, _) in &group.scenarios {
                    if !scenarios.contains(&k.as_str()) {
                        scenarios.push(k);
                    }
                }
            }
            // Scenarios in report order: the worst-by-scenario list is in it.
            scenarios.sort_by_key(|k| {
                d.worst_by_scenario
                    .iter()
                    .position(|(w, _)| w == k)
                    .unwrap_or(usize::MAX)
            });
            let mut header = vec!["scenario".to_string()];
            header.extend(d.groups.iter().map(|(n, _)| md_cell(n)));
            header.push("worst".into());
            let mut rows = vec![header];
            for k in scenarios {
                let mut row = vec![md_cell(k)];
                for (_, group) in &d.groups {
                    row.push(
                        group
                            .scenarios
                            .iter()
                            .find(|(s, _)| s == k)
                            .map_or_else(|| NONE.to_string(), |(_, c)| pct(c.top1)),
                    );
                }
                row.push(
                    d.worst_by_scenario
                        .iter()
                        .find(|(s, _)| s == k)
                        .map_or_else(|| NONE.to_string(), |(_, w)| md_cell(&w.group)),
                );
                rows.push(row);
            }
            out.push_str(&md_table(&rows));
        }
    }
    out
}

#[cfg(test)]
mod tests;
