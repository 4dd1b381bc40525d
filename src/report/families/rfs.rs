//! The relative foreground sensitivity family (`metrics.rfs`,
//! docs/hard-imagenet.md#relative-foreground-sensitivity): class-balanced accuracies under noise on
//! the object or the background and RFS per noise and level, computed by [`crate::metrics::rfs`];
//! its lines, its `summary.md` and `report.html` sections, its `compare` metrics.

use std::fmt::Write as _;

use crate::metrics::rfs::Rfs;
use crate::report::family::{
    Better, Family, Inputs, MetricDef, Scalar, Scope, Unit, def, to_value,
};
use crate::report::format::{md_cell, md_table, num, pct};
use crate::report::html::svg::{self, Bar, Scale, esc};
use crate::report::summary::Summary;

/// The family.
pub(crate) struct RfsFamily;

const RULES: &[MetricDef] = &[
    def(
        "rfs",
        Scope::None,
        Unit::Number,
        Better::Neither,
        "change of the typical RFS (linf 0.25)",
    ),
    def(
        "rfs_level",
        Scope::Key,
        Unit::Number,
        Better::Neither,
        "change of RFS, per `<noise>/<level>`",
    ),
];

impl Family for RfsFamily {
    fn key(&self) -> &'static str {
        "rfs"
    }

    fn compute(&self, inputs: &Inputs<'_>) -> Option<serde_json::Value> {
        let m = inputs.metrics;
        let classes = m
            .keys()
            .iter()
            .filter_map(|k| m.class_tallies(k).map(|c| (k.as_str(), c)));
        crate::metrics::rfs::compute(classes).map(|r| to_value(&r))
    }

    fn lines(&self, s: &Summary) -> Option<String> {
        let r = s.rfs()?;
        let mut out = String::new();
        for (kind, levels) in &r.noise {
            let parts: Vec<String> = levels
                .0
                .iter()
                .map(|(level, l)| format!("{level} {}", num(l.rfs, 3)))
                .collect();
            let _ = writeln!(out, "RFS {kind}: {}", parts.join(", "));
        }
        if let Some(t) = &r.typical {
            let _ = writeln!(
                out,
                "RFS typical (linf 0.25): {} (fg {}, bg {}, {} trials, {} classes)",
                num(t.rfs, 3),
                pct(t.acc_fg),
                pct(t.acc_bg),
                t.trials,
                t.classes
            );
        }
        (!out.is_empty()).then_some(out)
    }

    fn paragraph(&self) -> &'static str {
        "objects"
    }

    fn markdown(&self, s: &Summary) -> Option<String> {
        let r = s.rfs()?;
        let mut out = String::from(
            "\n## Relative foreground sensitivity \
             (docs/hard-imagenet.md#relative-foreground-sensitivity)\n\n",
        );
        out.push_str(
            "Class-balanced accuracies under noise on the object (fg) or the background (bg), \
             trials pooled per class; RFS = (bg − fg) / (2·min(ā, 1 − ā)).\n\n",
        );
        let mut rows = vec![
            [
                "noise", "level", "fg acc", "bg acc", "RFS", "trials", "classes",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for (kind, levels) in &r.noise {
            for (level, l) in &levels.0 {
                rows.push(vec![
                    md_cell(kind),
                    md_cell(level),
                    pct(l.acc_fg),
                    pct(l.acc_bg),
                    num(l.rfs, 3),
                    l.trials.to_string(),
                    l.classes.to_string(),
                ]);
            }
        }
        out.push_str(&md_table(&rows));
        Some(out)
    }

    fn headline(&self, s: &Summary) -> Vec<(&'static str, String)> {
        s.rfs()
            .and_then(|r| r.typical)
            .and_then(|t| t.rfs)
            .map(|r| ("RFS", format!("{r:.3}")))
            .into_iter()
            .collect()
    }

    fn html(&self, s: &Summary) -> Option<String> {
        let r = s.rfs()?;
        let mut bars = Vec::new();
        let mut rows = String::new();
        for (noise, levels) in &r.noise {
            for (level, l) in &levels.0 {
                let label = format!("{noise} {level}");
                for (which, v, colour) in [("fg", l.acc_fg, 0), ("bg", l.acc_bg, 1)] {
                    bars.push(Bar {
                        label: format!("{label} {which}"),
                        value: v,
                        interval: None,
                        colour,
                    });
                }
                let _ = write!(
                    rows,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&label),
                    svg::pct(l.acc_fg),
                    svg::pct(l.acc_bg),
                    l.rfs.map_or_else(|| "—".into(), |v| format!("{v:.3}"))
                );
            }
        }
        if bars.is_empty() {
            return None;
        }
        let mut out = String::from("<section id=\"rfs\"><h2>Relative foreground sensitivity</h2>");
        out.push_str(&svg::bars(
            "rfs",
            "Accuracy with noise on the foreground (fg) or background (bg)",
            &bars,
            Scale::Fraction,
            None,
        ));
        let _ = write!(
            out,
            "<table><tr><th>noise</th><th>acc fg</th><th>acc bg</th><th>RFS</th></tr>{rows}</table></section>"
        );
        Some(out)
    }

    fn rules(&self) -> &'static [MetricDef] {
        RULES
    }

    fn compare_rank(&self) -> u8 {
        0
    }

    fn scalars(&self, s: &Summary) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = Vec::new();
        if let Some(r) = s.rfs() {
            if let Some(t) = &r.typical {
                out.push(("rfs", None, t.rfs));
            }
            for (kind, levels) in &r.noise {
                for (level, l) in &levels.0 {
                    out.push(("rfs_level", Some(format!("{kind}/{level}")), l.rfs));
                }
            }
        }
        out
    }
}

impl Summary {
    /// The RFS metrics (`metrics.rfs`), if the plan had `region_noise/*` scenarios.
    fn rfs(&self) -> Option<Rfs> {
        self.family("rfs")
    }
}
