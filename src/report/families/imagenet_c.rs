//! The ImageNet-C family (`metrics.imagenet_c`, docs/imagenet-c.md#metrics): CE, mCE and relative
//! mCE against a baseline table, computed by [`crate::metrics::imagenet_c`]; its lines, its
//! `summary.md` and `report.html` sections, its `compare` metrics.

use std::error::Error;
use std::fmt::Write as _;

use crate::key::{CLEAN, ScenarioKey};
use crate::metrics::imagenet_c::{BaselineTable, ImagenetC};
use crate::report::ReportError;
use crate::report::family::{Better, Family, Inputs, MetricDef, Scalar, Scope, Unit, charted, def};
use crate::report::format::{md_cell, md_list, md_table, pct};
use crate::report::html::svg::{self, Bar, Scale, esc};
use crate::report::summary::{ScenarioSummary, Summary};

/// The family.
pub(crate) struct ImagenetCFamily;

const RULES: &[MetricDef] = &[
    def(
        "mce",
        Scope::None,
        Unit::Fraction,
        Better::Lower,
        "change of ImageNet-C mCE",
    ),
    def(
        "relative_mce",
        Scope::None,
        Unit::Fraction,
        Better::Lower,
        "change of ImageNet-C relative mCE",
    ),
    def(
        "mce_all19",
        Scope::None,
        Unit::Fraction,
        Better::Lower,
        "change of the mean CE over all 19 corruptions",
    ),
    def(
        "relative_mce_all19",
        Scope::None,
        Unit::Fraction,
        Better::Lower,
        "change of the mean relative CE over all 19",
    ),
    def(
        "clean_error",
        Scope::None,
        Unit::Fraction,
        Better::Lower,
        "change of ImageNet-C's clean error",
    ),
    def(
        "ce",
        Scope::Key,
        Unit::Fraction,
        Better::Lower,
        "change of the CE, per corruption",
    ),
    def(
        "relative_ce",
        Scope::Key,
        Unit::Fraction,
        Better::Lower,
        "change of the relative CE, per corruption",
    ),
];

impl Family for ImagenetCFamily {
    fn key(&self) -> &'static str {
        "imagenet_c"
    }

    fn compute(&self, inputs: &Inputs<'_>) -> Option<serde_json::Value> {
        let builtin = BaselineTable::builtin();
        let table = builtin.as_ref().copied().map_err(|e| e as &dyn Error);
        imagenet_c_metrics(inputs.scenarios, table)
    }

    fn carry_over(&self, summary: &mut Summary, previous: &Summary) {
        if let Some(stored) = previous.stored_ce_baseline() {
            match stored {
                Ok(table) => summary.set_ce_baseline(&table),
                // Never a silent fall-back to AlexNet: the entry says why there is no CE.
                Err(e) => summary.set_imagenet_c(Err(&e)),
            }
        }
    }

    fn lines(&self, s: &Summary) -> Option<String> {
        match s.imagenet_c() {
            Some(ic) => Some(imagenet_c_lines(&ic)),
            None => s.imagenet_c_error().map(|e| format!("{e}\n")),
        }
    }

    fn markdown(&self, s: &Summary) -> Option<String> {
        match s.imagenet_c() {
            Some(ic) => Some(imagenet_c_markdown(&ic)),
            None => s
                .imagenet_c_error()
                .map(|e| format!("\n## ImageNet-C\n\n- {}\n", md_cell(e))),
        }
    }

    fn headline(&self, s: &Summary) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(ic) = s.imagenet_c() {
            if let Some(m) = ic.mce {
                out.push(("mCE", format!("{:.1} %", m * 100.0)));
            }
            if let Some(m) = ic.relative_mce {
                out.push(("relative mCE", format!("{:.1} %", m * 100.0)));
            }
        }
        out
    }

    fn html(&self, s: &Summary) -> Option<String> {
        html_section(s)
    }

    fn rules(&self) -> &'static [MetricDef] {
        RULES
    }

    fn compare_rank(&self) -> u8 {
        0
    }

    fn scalars(&self, s: &Summary) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = Vec::new();
        if let Some(ic) = s.imagenet_c() {
            let mut one = |name, v: Option<f64>| out.push((name, None, v));
            one("mce", ic.mce);
            one("relative_mce", ic.relative_mce);
            one("mce_all19", ic.mce_all19);
            one("relative_mce_all19", ic.relative_mce_all19);
            one("clean_error", ic.clean_error);
            for (k, v) in &ic.ce {
                out.push(("ce", Some(k.clone()), Some(*v)));
            }
            for (k, v) in &ic.relative_ce {
                out.push(("relative_ce", Some(k.clone()), *v));
            }
        }
        out
    }
}

impl Summary {
    /// Recomputes `metrics.imagenet_c` against `table` instead of the built-in AlexNet one (config
    /// `[metrics] ce_baseline`; the formulas of docs/imagenet-c.md#metrics with another denominator
    /// model). No effect when the plan has no labelled ImageNet-C corruption. A table other than
    /// the built-in one is kept in `summary.json` (`baseline_table`), so [`Summary::recompute`]
    /// with this summary as `previous` uses it again.
    pub fn set_ce_baseline(&mut self, table: &BaselineTable) {
        self.set_imagenet_c(Ok(table));
    }

    /// Replaces `metrics.imagenet_c` with the metrics against `table`, or an `{"error": …}` entry.
    fn set_imagenet_c(&mut self, table: Result<&BaselineTable, &dyn Error>) {
        if let Some(v) = imagenet_c_metrics(&self.scenarios, table) {
            self.metrics.insert("imagenet_c".into(), v);
        }
    }

    /// The baseline table stored in `metrics.imagenet_c.baseline_table` (a run with `[metrics]
    /// ce_baseline`), validated again; `None` when the run used the built-in table.
    pub(crate) fn stored_ce_baseline(&self) -> Option<Result<BaselineTable, ReportError>> {
        let stored = self.metrics.get("imagenet_c")?.get("baseline_table")?;
        Some(
            serde_json::from_value(stored.clone())
                .map_err(|source| ReportError::StoredBaseline { source }),
        )
    }

    /// The ImageNet-C metrics of this summary (`metrics.imagenet_c`), if its plan had ImageNet-C
    /// corruptions.
    pub(crate) fn imagenet_c(&self) -> Option<ImagenetC> {
        self.family("imagenet_c")
    }

    /// Why `metrics.imagenet_c` holds no metrics (`{"error": "..."}`: an unusable baseline table).
    fn imagenet_c_error(&self) -> Option<&str> {
        self.metrics.get("imagenet_c")?.get("error")?.as_str()
    }
}

/// The `metrics.imagenet_c` value for these scenario lines (docs/imagenet-c.md#metrics; see
/// [`crate::metrics::imagenet_c::compute`]), or `None` when the plan holds no ImageNet-C corruption
/// with a labelled record.
/// normalised by `table`. Should the table be unusable (the built-in one cannot be: a unit test keeps
/// it valid; a stored one may have been edited), the value is `{"error": "..."}` rather than a panic.
fn imagenet_c_metrics(
    scenarios: &[(String, ScenarioSummary)],
    table: Result<&BaselineTable, &dyn Error>,
) -> Option<serde_json::Value> {
    // Errors need labels: an unlabelled stream has agreement and flips, not CE.
    if !scenarios.iter().any(|(k, s)| {
        matches!(ScenarioKey::parse(k), ScenarioKey::Corruption { .. }) && s.n_labelled > 0
    }) {
        return None;
    }
    let table = match table {
        Ok(t) => t,
        // The entry is the error's line (what summary.json has always held there).
        Err(e) => return Some(serde_json::json!({ "error": e.to_string() })),
    };
    let errors = scenarios
        .iter()
        .map(|(k, s)| (k.as_str(), s.top1.map(|a| 1.0 - a)));
    let ic = crate::metrics::imagenet_c::compute(table, errors)?;
    Some(serde_json::to_value(ic).expect("plain numbers and strings serialise"))
}

/// The ImageNet-C lines of the terminal table and summary.md, each ending in a newline: mCE and
/// relative mCE over the baseline table's benchmark corruptions (or how many have a CE), the
/// all-19 means when present, and the incomplete corruptions with their missing severities. The
/// baseline is named as 100 %.
fn imagenet_c_lines(ic: &ImagenetC) -> String {
    let table = match ic.table() {
        Ok(t) => t,
        Err(e) => return format!("ImageNet-C: {e}\n"),
    };
    let (bench, of) = (ic.benchmark_complete(table), table.benchmark().len());
    let base = &ic.baseline;
    let mut out = match ic.mce {
        Some(mce) => format!(
            "ImageNet-C ({base} = 100%): mCE {}, relative mCE {} ({of} benchmark corruptions){}\n",
            pct(Some(mce)),
            pct(ic.relative_mce),
            match (ic.clean_error, table.clean()) {
                (None, _) => "; relative needs the clean error",
                (Some(_), None) => "; relative needs the baseline's clean error",
                _ => "",
            }
        ),
        None => format!(
            "ImageNet-C ({base} = 100%): CE for {} corruption{} ({bench} of the {of} benchmark \
             ones); mCE needs all {of} × 5\n",
            ic.ce.len(),
            if ic.ce.len() == 1 { "" } else { "s" },
        ),
    };
    if let Some(all) = ic.mce_all19 {
        let _ = writeln!(
            out,
            "ImageNet-C all 19 (benchmark + validation, not the published mCE): mean CE {}, \
             relative {}",
            pct(Some(all)),
            pct(ic.relative_mce_all19)
        );
    }
    if !ic.incomplete.is_empty() {
        const SHOWN: usize = 4;
        let mut parts: Vec<String> = ic
            .incomplete
            .iter()
            .take(SHOWN)
            .map(|(name, missing)| {
                let s: Vec<String> = missing.iter().map(u8::to_string).collect();
                format!("{name} (no severity {})", s.join(", "))
            })
            .collect();
        if ic.incomplete.len() > SHOWN {
            parts.push(format!("… ({} in all)", ic.incomplete.len()));
        }
        let _ = writeln!(out, "ImageNet-C incomplete, no CE: {}", parts.join(", "));
    }
    out
}

/// The ImageNet-C section of summary.md: the lines of [`imagenet_c_lines`], the clean error, a table
/// of per-severity errors, mean error, CE and relative CE per corruption in the plan, and what the
/// ratios are normalised by.
fn imagenet_c_markdown(ic: &ImagenetC) -> String {
    let mut out = format!(
        "\n## ImageNet-C (normalised by {}, docs/imagenet-c.md#metrics)\n\n",
        md_cell(&ic.baseline)
    );
    out.push_str(&md_list(&imagenet_c_lines(ic)));
    let _ = writeln!(out, "- clean error: {}\n", pct(ic.clean_error));
    let mut rows = vec![
        [
            "corruption",
            "sev 1",
            "sev 2",
            "sev 3",
            "sev 4",
            "sev 5",
            "mean error",
            "CE",
            "relative CE",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (name, errors) in &ic.errors {
        let mut row = vec![md_cell(name)];
        row.extend(errors.iter().map(|e| pct(*e)));
        let complete: Option<Vec<f64>> = errors.iter().copied().collect();
        row.push(pct(complete.map(|e| e.iter().sum::<f64>() / 5.0)));
        row.push(pct(ic.ce.iter().find(|(n, _)| n == name).map(|(_, v)| *v)));
        row.push(pct(ic
            .relative_ce
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| *v)));
        rows.push(row);
    }
    out.push_str(&md_table(&rows));
    let _ = writeln!(out, "\nNormalisation: {}.", md_cell(&ic.normalisation));
    out
}

/// The `imagenet-c` section of report.html: accuracy against severity per corruption in the plan
/// (present whenever the plan has corruptions, labelled or not), then CE and relative CE per
/// corruption and mCE when the family has them.
fn html_section(s: &Summary) -> Option<String> {
    let mut names: Vec<&str> = Vec::new();
    for (k, _) in &s.scenarios {
        if let ScenarioKey::Corruption { name, .. } = ScenarioKey::parse(k)
            && !names.contains(&name)
        {
            names.push(name);
        }
    }
    if names.is_empty() {
        return None;
    }
    let clean = s
        .scenarios
        .iter()
        .find(|(k, _)| k == CLEAN)
        .and_then(|(_, v)| charted(s, v).0);
    let mut out = String::from(
        "<section id=\"imagenet-c\"><h2>ImageNet-C corruptions</h2><p>Accuracy against \
         severity; band: 95 % Wilson interval; dashed: clean.</p><div class=\"grid\">",
    );
    for name in &names {
        let points: Vec<svg::SeverityPoint> = s
            .scenarios
            .iter()
            .filter_map(|(k, v)| match ScenarioKey::parse(k) {
                ScenarioKey::Corruption { name: n, severity } if n == *name => {
                    let (value, ci) = charted(s, v);
                    Some((severity, value, ci))
                }
                _ => None,
            })
            .collect();
        out.push_str(&svg::severity_chart(name, &points, clean));
    }
    out.push_str("</div>");
    if let Some(ic) = s.imagenet_c().filter(|ic| !ic.ce.is_empty()) {
        let bars: Vec<Bar> = ic
            .ce
            .iter()
            .map(|(name, ce)| Bar {
                label: name.clone(),
                value: Some(ce * 100.0),
                interval: None,
                colour: 0,
            })
            .collect();
        let title = format!("CE per corruption, % of {} (dashed: 100 %)", ic.baseline);
        out.push_str(&svg::bars("ce", &title, &bars, Scale::From0, Some(100.0)));
        let rel: Vec<Bar> = ic
            .relative_ce
            .iter()
            .map(|(name, ce)| Bar {
                label: name.clone(),
                value: ce.map(|c| c * 100.0),
                interval: None,
                colour: 1,
            })
            .collect();
        if rel.iter().any(|b| b.value.is_some()) {
            let title = format!("relative CE per corruption, % of {}", ic.baseline);
            out.push_str(&svg::bars(
                "relative-ce",
                &title,
                &rel,
                Scale::From0,
                Some(100.0),
            ));
        }
        let figure =
            |v: Option<f64>| v.map_or_else(|| "—".into(), |v| format!("{:.1} %", v * 100.0));
        let _ = write!(
            out,
            "<p>mCE {} · relative mCE {} (15 benchmark corruptions) · over all 19: {} / {}. {}</p>",
            figure(ic.mce),
            figure(ic.relative_mce),
            figure(ic.mce_all19),
            figure(ic.relative_mce_all19),
            esc(&ic.normalisation)
        );
    }
    out.push_str("</section>");
    Some(out)
}
