//! The Corner Cases placement family (`metrics.placement`,
//! docs/corner-cases.md#evaluation-and-difficulty-groups): accuracy per placement cell, group,
//! size and difficulty, the worst cell, and the centre/size scores per class, computed by
//! [`crate::metrics::placement`]; its lines, its `summary.md` and `report.html` sections, its
//! `compare` metrics.

use std::fmt::Write as _;

use crate::metrics::placement::{Cell, Placement};
use crate::report::family::{
    Better, Family, Inputs, MetricDef, Scalar, Scope, Unit, def, to_value,
};
use crate::report::format::{NONE, md_cell, md_list, md_table, pct};
use crate::report::html::svg::{self, esc};
use crate::report::summary::Summary;

/// The family.
pub(crate) struct PlacementFamily;

const RULES: &[MetricDef] = &[
    def(
        "placement_worst",
        Scope::Key,
        Unit::Fraction,
        Better::Higher,
        "change of the worst placement cell's accuracy, per variant",
    ),
    def(
        "placement_group",
        Scope::Key,
        Unit::Fraction,
        Better::Higher,
        "change of placement accuracy, per `<variant>/<group>`",
    ),
];

impl Family for PlacementFamily {
    fn key(&self) -> &'static str {
        "placement"
    }

    fn compute(&self, inputs: &Inputs<'_>) -> Option<serde_json::Value> {
        let m = inputs.metrics;
        let counts = m.tallies().map(|(k, t)| (k, t.n_labelled, t.top1_correct));
        crate::metrics::placement::compute(counts, m.object_scores()).map(|p| to_value(&p))
    }

    fn lines(&self, s: &Summary) -> Option<String> {
        let out = placement_lines(&s.placement()?);
        (!out.is_empty()).then_some(out)
    }

    fn paragraph(&self) -> &'static str {
        "objects"
    }

    fn markdown(&self, s: &Summary) -> Option<String> {
        let p = s.placement()?;
        let mut out = String::from(
            "\n## Object placement \
             (Corner Cases, docs/corner-cases.md#evaluation-and-difficulty-groups)\n\n",
        );
        out.push_str(&md_list(&placement_lines(&p)));
        for (name, v) in &p.variants {
            let _ = writeln!(out, "\n{name} placements (background/position/size):\n");
            let mut rows = vec![["cell", "n", "accuracy"].map(String::from).to_vec()];
            rows.extend(
                v.cells
                    .iter()
                    .map(|(k, c)| vec![md_cell(k), c.n.to_string(), pct(c.accuracy)]),
            );
            out.push_str(&md_table(&rows));
        }
        if !p.classes.is_empty() {
            out.push_str(
                "\nCentre and size scores per class \
                 (docs/corner-cases.md#centre-and-size-scores):\n\n",
            );
            let mut rows = vec![
                ["class", "images", "centre score", "size score"]
                    .map(String::from)
                    .to_vec(),
            ];
            rows.extend(p.classes.iter().map(|(k, c)| {
                vec![
                    md_cell(k),
                    c.images.to_string(),
                    format!("{:.3}", c.centre_score),
                    format!("{:.3}", c.size_score),
                ]
            }));
            out.push_str(&md_table(&rows));
        }
        Some(out)
    }

    fn html(&self, s: &Summary) -> Option<String> {
        let p = s.placement()?;
        let mut out = String::new();
        for (variant, v) in &p.variants {
            // Position × size, pooled over backgrounds.
            let mut positions: Vec<String> = Vec::new();
            let mut sizes: Vec<String> = Vec::new();
            let mut cells: Vec<(usize, usize, u64, u64)> = Vec::new();
            for (key, cell) in &v.cells {
                let mut parts = key.rsplitn(3, '/');
                let (Some(size), Some(position)) = (parts.next(), parts.next()) else {
                    continue;
                };
                let i = index_of(&mut positions, position);
                let j = index_of(&mut sizes, size);
                match cells.iter_mut().find(|c| (c.0, c.1) == (i, j)) {
                    Some(c) => {
                        c.2 += cell.n;
                        c.3 += cell.correct;
                    }
                    None => cells.push((i, j, cell.n, cell.correct)),
                }
            }
            if cells.is_empty() {
                continue;
            }
            let title = format!("{variant}: accuracy by position × object size (px at 224²)");
            out.push_str(&svg::heatmap(
                &format!("placement-{variant}"),
                &title,
                &positions,
                &sizes,
                |i, j| {
                    cells
                        .iter()
                        .find(|c| (c.0, c.1) == (i, j))
                        .and_then(|c| (c.2 > 0).then(|| c.3 as f64 / c.2 as f64))
                },
            ));
            if let Some(w) = &v.worst {
                let _ = write!(
                    out,
                    "<p>{variant}: worst cell {} at {}</p>",
                    esc(&w.cell),
                    svg::pct(Some(w.accuracy))
                );
            }
        }
        (!out.is_empty()).then(|| {
            format!("<section id=\"placement\"><h2>Object size and position</h2>{out}</section>")
        })
    }

    fn rules(&self) -> &'static [MetricDef] {
        RULES
    }

    fn scalars(&self, s: &Summary) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = Vec::new();
        if let Some(p) = s.placement() {
            for (name, v) in &p.variants {
                out.push((
                    "placement_worst",
                    Some(name.clone()),
                    v.worst.as_ref().map(|w| w.accuracy),
                ));
                for (g, c) in &v.groups {
                    out.push(("placement_group", Some(format!("{name}/{g}")), c.accuracy));
                }
            }
        }
        out
    }
}

impl Summary {
    /// The placement metrics (`metrics.placement`), if the plan had placements or frames had boxes.
    fn placement(&self) -> Option<Placement> {
        self.family("placement")
    }
}

/// The placement lines: per variant, accuracy per size and per group and the worst cell; the
/// number of classes with centre/size scores.
fn placement_lines(p: &Placement) -> String {
    let mut out = String::new();
    let join = |cells: &[(String, Cell)]| -> String {
        cells
            .iter()
            .map(|(k, c)| format!("{k} {}", pct(c.accuracy)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (name, v) in &p.variants {
        let worst = v.worst.as_ref().map_or_else(
            || NONE.to_string(),
            |w| format!("{} {}", w.cell, pct(Some(w.accuracy))),
        );
        let difficulty = match v.difficulties.is_empty() {
            true => String::new(),
            false => format!("; by difficulty {}", join(&v.difficulties)),
        };
        let _ = writeln!(
            out,
            "Placement {name}: by size {}; by group {}{difficulty}; worst {worst}",
            join(&v.sizes),
            join(&v.groups)
        );
    }
    if !p.classes.is_empty() {
        let images: u64 = p.classes.iter().map(|(_, c)| c.images).sum();
        let _ = writeln!(
            out,
            "Centre/size scores: {} class{} from {images} framed image{} (summary.json)",
            p.classes.len(),
            if p.classes.len() == 1 { "" } else { "es" },
            if images == 1 { "" } else { "s" },
        );
    }
    out
}

/// The position of `item` in `list`, appended when new.
fn index_of(list: &mut Vec<String>, item: &str) -> usize {
    match list.iter().position(|x| x == item) {
        Some(i) => i,
        None => {
            list.push(item.to_string());
            list.len() - 1
        }
    }
}
