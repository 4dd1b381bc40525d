//! The Hard ImageNet family (`metrics.hard_imagenet`, docs/hard-imagenet.md#ablation-accuracy-and-drop):
//! accuracy and drop per object ablation, computed by [`crate::metrics::hard_imagenet`]; its line,
//! its `summary.md` and `report.html` sections, its `compare` metrics.

use std::fmt::Write as _;

use crate::metrics::hard_imagenet::HardImagenet;
use crate::report::family::{
    Better, Family, Inputs, MetricDef, Scalar, Scope, Unit, def, to_value,
};
use crate::report::format::{md_cell, md_table, pct};
use crate::report::html::svg::{self, Bar, Scale, esc};
use crate::report::summary::Summary;

/// The family.
pub(crate) struct HardImagenetFamily;

const RULES: &[MetricDef] = &[
    def(
        "ablation_accuracy",
        Scope::Key,
        Unit::Fraction,
        Better::Higher,
        "change of Hard ImageNet accuracy, per ablation",
    ),
    def(
        "ablation_drop",
        Scope::Key,
        Unit::Fraction,
        Better::Neither,
        "change of Hard ImageNet drop, per ablation",
    ),
];

impl Family for HardImagenetFamily {
    fn key(&self) -> &'static str {
        "hard_imagenet"
    }

    fn compute(&self, inputs: &Inputs<'_>) -> Option<serde_json::Value> {
        let ablations = inputs
            .scenarios
            .iter()
            .map(|(k, s)| (k.as_str(), s.n_labelled, s.top1, s.drop));
        crate::metrics::hard_imagenet::compute(ablations).map(|h| to_value(&h))
    }

    fn lines(&self, s: &Summary) -> Option<String> {
        let h = s.hard_imagenet()?;
        let parts: Vec<String> = h
            .ablations
            .iter()
            .map(|(k, a)| {
                if k == "none" {
                    format!("none {}", pct(a.accuracy))
                } else {
                    format!("{k} {} (drop {})", pct(a.accuracy), pct(a.drop))
                }
            })
            .collect();
        Some(format!("Hard ImageNet ablations: {}\n", parts.join(", ")))
    }

    fn paragraph(&self) -> &'static str {
        "objects"
    }

    fn markdown(&self, s: &Summary) -> Option<String> {
        let h = s.hard_imagenet()?;
        let mut out = String::from(
            "\n## Hard ImageNet ablations \
             (docs/hard-imagenet.md#ablation-accuracy-and-drop)\n\n",
        );
        let mut rows = vec![
            ["ablation", "n", "accuracy", "drop"]
                .map(String::from)
                .to_vec(),
        ];
        rows.extend(
            h.ablations
                .iter()
                .map(|(k, a)| vec![md_cell(k), a.n.to_string(), pct(a.accuracy), pct(a.drop)]),
        );
        out.push_str(&md_table(&rows));
        Some(out)
    }

    fn html(&self, s: &Summary) -> Option<String> {
        let h = s.hard_imagenet()?;
        if h.ablations.is_empty() {
            return None;
        }
        let bars: Vec<Bar> = h
            .ablations
            .iter()
            .map(|(name, a)| Bar {
                label: name.clone(),
                value: a.accuracy,
                interval: None,
                colour: 3,
            })
            .collect();
        let mut out = String::from("<section id=\"ablations\"><h2>Hard ImageNet ablations</h2>");
        out.push_str(&svg::bars(
            "ablations",
            "Accuracy per ablation",
            &bars,
            Scale::Fraction,
            None,
        ));
        out.push_str("<table><tr><th>ablation</th><th>n</th><th>accuracy</th><th>drop</th></tr>");
        for (name, a) in &h.ablations {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(name),
                a.n,
                svg::pct(a.accuracy),
                svg::pct(a.drop)
            );
        }
        out.push_str("</table></section>");
        Some(out)
    }

    fn rules(&self) -> &'static [MetricDef] {
        RULES
    }

    fn scalars(&self, s: &Summary) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = Vec::new();
        if let Some(h) = s.hard_imagenet() {
            for (k, a) in &h.ablations {
                out.push(("ablation_accuracy", Some(k.clone()), a.accuracy));
                out.push(("ablation_drop", Some(k.clone()), a.drop));
            }
        }
        out
    }
}

impl Summary {
    /// The Hard ImageNet ablation metrics (`metrics.hard_imagenet`), if the plan had ablations.
    fn hard_imagenet(&self) -> Option<HardImagenet> {
        self.family("hard_imagenet")
    }
}
