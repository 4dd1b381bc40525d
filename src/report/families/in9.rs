//! The IN-9 / Backgrounds Challenge family (`metrics.in9`, docs/in9.md): accuracy per variation,
//! BG-gap and the challenge accuracy, computed by [`crate::metrics::in9`]; its lines, its
//! `summary.md` and `report.html` sections, its `compare` metrics.

use std::fmt::Write as _;

use crate::metrics::in9::{ChallengeTally, In9};
use crate::report::family::{
    Better, Family, Inputs, MetricDef, Scalar, Scope, Unit, def, to_value, top1_of,
};
use crate::report::format::{md_list, pct};
use crate::report::html::svg::{self, Bar, Scale};
use crate::report::summary::Summary;

/// The family.
pub(crate) struct In9Family;

const RULES: &[MetricDef] = &[
    def(
        "bg_gap",
        Scope::None,
        Unit::Fraction,
        Better::Lower,
        "change of IN-9's BG-gap",
    ),
    def(
        "challenge_accuracy",
        Scope::None,
        Unit::Fraction,
        Better::Higher,
        "change of IN-9's challenge accuracy",
    ),
    def(
        "in9_accuracy",
        Scope::Key,
        Unit::Fraction,
        Better::Higher,
        "change of IN-9 accuracy, per variation",
    ),
];

impl Family for In9Family {
    fn key(&self) -> &'static str {
        "in9"
    }

    fn compute(&self, inputs: &Inputs<'_>) -> Option<serde_json::Value> {
        crate::metrics::in9::compute(inputs.top1(), None).map(|m| to_value(&m))
    }

    fn carry_over(&self, summary: &mut Summary, previous: &Summary) {
        if let Some(tally) = previous.challenge() {
            summary.set_challenge(tally);
        }
    }

    fn lines(&self, s: &Summary) -> Option<String> {
        s.in9().map(|m| in9_lines(&m))
    }

    fn markdown(&self, s: &Summary) -> Option<String> {
        let m = s.in9()?;
        let mut out = String::from("\n## IN-9 / Backgrounds Challenge (docs/in9.md)\n\n");
        out.push_str(&md_list(&in9_lines(&m)));
        Some(out)
    }

    fn headline(&self, s: &Summary) -> Vec<(&'static str, String)> {
        s.in9()
            .and_then(|i| i.bg_gap)
            .map(|g| ("BG-gap", svg::pct(Some(g))))
            .into_iter()
            .collect()
    }

    fn html(&self, s: &Summary) -> Option<String> {
        let in9 = s.in9()?;
        let interval_of = |key: &str| {
            s.scenarios
                .iter()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| v.top1_ci95)
        };
        let bars: Vec<Bar> = in9
            .accuracy
            .iter()
            .map(|(variation, acc)| Bar {
                label: variation.clone(),
                value: *acc,
                interval: interval_of(&crate::metrics::in9::scenario_key(variation)),
                colour: 2,
            })
            .collect();
        let mut out = String::from("<section id=\"in9\"><h2>IN-9 backgrounds</h2>");
        out.push_str(&svg::bars(
            "in9",
            "Accuracy per IN-9 variation",
            &bars,
            Scale::Fraction,
            None,
        ));
        let _ = write!(
            out,
            "<p>BG-gap (mixed_same − mixed_rand) {} · challenge accuracy {}</p></section>",
            svg::pct(in9.bg_gap),
            svg::pct(in9.challenge_accuracy)
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
        if let Some(in9) = s.in9() {
            out.push(("bg_gap", None, in9.bg_gap));
            out.push(("challenge_accuracy", None, in9.challenge_accuracy));
            for (k, v) in &in9.accuracy {
                out.push(("in9_accuracy", Some(k.clone()), *v));
            }
        }
        out
    }
}

impl Summary {
    /// Records the outcome of the adversarial-background challenge (docs/in9.md#challenge-accuracy,
    /// run after the stream by the challenge pass) in `metrics.in9`: `challenge_accuracy` and the
    /// raw counts under `challenge`. Creates the `in9` section when the plan had no IN-9 variation.
    /// The counts stay in `summary.json`, so [`Summary::recompute`] with this summary as `previous`
    /// keeps them.
    pub(crate) fn set_challenge(&mut self, tally: ChallengeTally) {
        if let Some(in9) = crate::metrics::in9::compute(top1_of(&self.scenarios), Some(tally)) {
            self.metrics.insert("in9".into(), to_value(&in9));
        }
    }

    /// The challenge's counts recorded by [`Summary::set_challenge`], if any.
    pub(crate) fn challenge(&self) -> Option<ChallengeTally> {
        self.in9().and_then(|m| m.challenge)
    }

    /// The IN-9 metrics of this summary (`metrics.in9`), if its plan had IN-9 variations or a
    /// challenge ran.
    pub(crate) fn in9(&self) -> Option<In9> {
        self.family("in9")
    }
}

/// The IN-9 lines of the terminal table and summary.md, each ending in a newline: accuracy per
/// variation, BG-gap, and the challenge (accuracy, vulnerable / foregrounds, composites, whether it
/// completed).
fn in9_lines(m: &In9) -> String {
    let mut out = String::new();
    if !m.accuracy.is_empty() {
        let parts: Vec<String> = m
            .accuracy
            .iter()
            .map(|(v, a)| format!("{v} {}", pct(*a)))
            .collect();
        let _ = writeln!(out, "IN-9 accuracy: {}", parts.join(", "));
        let _ = writeln!(
            out,
            "IN-9 BG-gap (mixed_same − mixed_rand): {}",
            pct(m.bg_gap)
        );
    }
    if let Some(c) = m.challenge {
        let _ = writeln!(
            out,
            "IN-9 challenge accuracy: {} ({} of {} foregrounds vulnerable, {} backgrounds, {} \
             composites{})",
            pct(m.challenge_accuracy),
            c.vulnerable,
            c.foregrounds,
            c.backgrounds,
            c.composites,
            if c.complete { "" } else { "; incomplete" }
        );
        if c.failed > 0 {
            let _ = writeln!(
                out,
                "  {} composites not scored (the model's output could not be scored), {} \
                 foregrounds undecided and left out",
                c.failed, c.undecided
            );
        }
    }
    out
}
