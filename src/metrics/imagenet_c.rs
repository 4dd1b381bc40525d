//! ImageNet-C metrics (docs/imagenet-c.md#metrics): Corruption Error (CE) and mean CE (mCE),
//! normalised by a baseline model's errors (AlexNet's by default), and their relative versions that
//! subtract the clean error.
//!
//! With E_{s,c} the top-1 error (fraction) on corruption c at severity s and E_clean the clean error:
//! CE_c = Σ_s E_{s,c} / Σ_s E^base_{s,c} (docs/imagenet-c.md#corruption-error-and-mce); relative
//! CE_c = Σ_s (E_{s,c} − E_clean) / Σ_s (E^base_{s,c} − E^base_clean)
//! (docs/imagenet-c.md#relative-ce-and-relative-mce); mCE and relative mCE are their means over the
//! table's benchmark corruptions (the 15 of ImageNet-C). Values are fractions (1.0 = the baseline;
//! papers print them ×100 as %, e.g. ResNet-50's published AlexNet-normalised mCE 76.7 % is 0.767
//! here).
//!
//! A corruption gets a CE only when all five severities were evaluated on labelled frames; the others
//! that appear in the plan are listed as incomplete with their missing severities. mCE needs every
//! benchmark corruption complete. The mean over all 19 (the four validation corruptions included, as
//! hendrycks `test.py` prints it, docs/imagenet-c.md#metric-quirks) is reported separately as
//! `mce_all19`.
//!
//! The baseline is a [`BaselineTable`]: the built-in one is AlexNet's, `configs/imagenet_c_alexnet.toml`
//! (with its provenance, embedded in the binary); a run config's `[metrics] ce_baseline` names another
//! file of the same format (e.g. the user's own ResNet-50, or the model version shipped today), which
//! is deliberately beyond docs/imagenet-c.md#metrics: the formulas are the same, only the
//! denominator model changes. [`BaselineTable::parse`] reads that format.

use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::key::{CORRUPTIONS, SEVERITIES, ScenarioKey};

/// The text of `configs/imagenet_c_alexnet.toml`, embedded so the binary works from any directory.
pub const BUILTIN_TABLE_TOML: &str = include_str!("../../configs/imagenet_c_alexnet.toml");

/// Where the built-in table comes from (shown in `summary.json` as `normalisation`).
pub const BUILTIN_TABLE_NAME: &str = "configs/imagenet_c_alexnet.toml";

/// The baseline name of summaries written before tables named their model (always AlexNet then).
const DEFAULT_BASELINE: &str = "AlexNet";

/// A malformed baseline table: which table and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ImageNet-C baseline table {origin}: {message}")]
pub struct TableError {
    /// The table's name or path.
    pub origin: String,
    /// What is wrong and what to do.
    pub message: String,
}

/// The file format of `configs/imagenet_c_alexnet.toml` (and of `[metrics] ce_baseline` files).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    model: Option<String>,
    clean: Option<f64>,
    benchmark: Vec<String>,
    errors: std::collections::BTreeMap<String, Vec<f64>>,
}

/// A baseline model's ImageNet-C top-1 errors (fractions), the normaliser of CE and mCE: per
/// corruption and severity 1..5, all 19 corruptions in ImageNet-C index order
/// (docs/imagenet-c.md#corruption-order-and-groups), the clean error when known, and which
/// corruptions the benchmark mCE averages. The built-in table is AlexNet's
/// (docs/imagenet-c.md#alexnet-baseline-errors, clean 0.4348 from
/// docs/imagenet-c.md#relative-ce-and-relative-mce).
///
/// `summary.json` keeps a table other than the built-in one in `metrics.imagenet_c.baseline_table`
/// (this type's JSON form: `file`, `model`, `clean`, `benchmark`, `errors`), so `robustream report`
/// rebuilds CE against the same baseline; reading it back validates it again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StoredTable")]
pub struct BaselineTable {
    /// Where the table came from (a path, or [`BUILTIN_TABLE_NAME`]).
    #[serde(rename = "file")]
    origin: String,
    /// The baseline model's name (`model` in the file).
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// The baseline's clean top-1 error; without it relative CE is unavailable.
    clean: Option<f64>,
    /// The corruptions mCE averages, in ImageNet-C index order.
    benchmark: Vec<String>,
    /// Every corruption's five errors, in ImageNet-C index order.
    #[serde(with = "crate::ordered")]
    errors: Vec<(String, [f64; 5])>,
}

/// The JSON form of a [`BaselineTable`] as read back from `summary.json`, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredTable {
    file: String,
    model: Option<String>,
    clean: Option<f64>,
    benchmark: Vec<String>,
    errors: std::collections::BTreeMap<String, Vec<f64>>,
}

impl TryFrom<StoredTable> for BaselineTable {
    type Error = TableError;

    fn try_from(s: StoredTable) -> Result<Self, TableError> {
        let raw = RawTable {
            model: s.model,
            clean: s.clean,
            benchmark: s.benchmark,
            errors: s.errors,
        };
        Self::validate(raw, &s.file)
    }
}

impl BaselineTable {
    /// Reads and validates a table file (see [`BaselineTable::parse`]); the path names it in errors.
    pub fn read(path: &Path) -> Result<Self, TableError> {
        let origin = path.display().to_string();
        let text = crate::fsread::read_text(path, crate::fsread::MAX_TEXT_BYTES).map_err(|e| {
            TableError {
                origin: origin.clone(),
                message: format!(
                    "cannot be read ({e}); check the path (--ce-baseline, or `ce_baseline` in \
                     `[metrics]`)"
                ),
            }
        })?;
        Self::parse(&text, &origin)
    }

    /// Parses and validates a table in the format of `configs/imagenet_c_alexnet.toml`: optional
    /// `model` (the baseline's name), optional `clean` (its clean error, fraction; without it
    /// relative CE is reported as unavailable, as for a run without clean frames), `benchmark` (names
    /// averaged by mCE) and `[errors]` (name = five fractions, one per severity) for exactly the 19
    /// ImageNet-C corruptions. `name` says where the text came from.
    pub fn parse(text: &str, name: &str) -> Result<Self, TableError> {
        let raw: RawTable = toml::from_str(text).map_err(|e| TableError {
            origin: name.to_string(),
            message: e
                .to_string()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
        })?;
        Self::validate(raw, name)
    }

    /// Checks a table as read: names, value ranges, five severities, and denominators above zero.
    fn validate(raw: RawTable, name: &str) -> Result<Self, TableError> {
        let err = |message: String| TableError {
            origin: name.to_string(),
            message,
        };
        let fraction = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
        if let Some(m) = &raw.model
            && m.trim().is_empty()
        {
            return Err(err(
                "`model` is empty; name the baseline model or leave the key out".into(),
            ));
        }
        if let Some(clean) = raw.clean
            && (!fraction(clean) || clean >= 1.0)
        {
            return Err(err(format!(
                "`clean` = {clean} is not an error rate in [0, 1)"
            )));
        }
        if let Some(unknown) = raw
            .errors
            .keys()
            .find(|k| !CORRUPTIONS.iter().any(|(n, _)| n == k))
        {
            return Err(err(format!(
                "`errors.{unknown}` is not an ImageNet-C corruption; `robustream scenarios` lists them"
            )));
        }
        let mut errors = Vec::with_capacity(CORRUPTIONS.len());
        for (name, _) in CORRUPTIONS {
            let e = raw.errors.get(*name).ok_or_else(|| {
                err(format!(
                    "`errors.{name}` is missing; the table needs all 19 corruptions"
                ))
            })?;
            let Ok(e) = <[f64; 5]>::try_from(e.as_slice()) else {
                return Err(err(format!(
                    "`errors.{name}` has {} values; it needs five, one per severity 1..5",
                    e.len()
                )));
            };
            if !e.iter().all(|&v| fraction(v)) {
                return Err(err(format!(
                    "`errors.{name}` holds a value outside [0, 1] (errors are fractions, not %)"
                )));
            }
            if severity_sum(&e) <= 0.0 {
                return Err(err(format!(
                    "`errors.{name}` are all 0, so its CE would divide by zero"
                )));
            }
            if let Some(clean) = raw.clean
                && severity_sum(&e) - 5.0 * clean <= 0.0
            {
                return Err(err(format!(
                    "`errors.{name}` are not above the clean error on average, so its relative CE \
                     would divide by zero or a negative number"
                )));
            }
            errors.push((name.to_string(), e));
        }
        if raw.benchmark.is_empty() {
            return Err(err("`benchmark` is empty".into()));
        }
        for (i, b) in raw.benchmark.iter().enumerate() {
            if !raw.errors.contains_key(b) {
                return Err(err(format!(
                    "`benchmark` names `{b}`, which has no `errors` row"
                )));
            }
            if raw.benchmark[..i].contains(b) {
                return Err(err(format!("`benchmark` names `{b}` twice")));
            }
        }
        // Benchmark members in table (ImageNet-C index) order.
        let benchmark = errors
            .iter()
            .map(|(n, _)| n)
            .filter(|n| raw.benchmark.contains(n))
            .cloned()
            .collect();
        Ok(Self {
            origin: name.to_string(),
            model: raw.model,
            clean: raw.clean,
            benchmark,
            errors,
        })
    }

    /// The built-in table (`configs/imagenet_c_alexnet.toml`, embedded), parsed once. A unit test
    /// keeps it valid, so the error cannot happen in a released binary; callers still report it.
    pub fn builtin() -> Result<&'static BaselineTable, TableError> {
        static TABLE: OnceLock<Result<BaselineTable, TableError>> = OnceLock::new();
        TABLE
            .get_or_init(|| BaselineTable::parse(BUILTIN_TABLE_TOML, BUILTIN_TABLE_NAME))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether this is the built-in AlexNet table (same origin and values).
    pub fn is_builtin(&self) -> bool {
        Self::builtin().is_ok_and(|b| b == self)
    }

    /// Where the table came from (a path as given, or [`BUILTIN_TABLE_NAME`]).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The baseline model's name: the table's `model`, else where the table came from.
    pub fn model(&self) -> &str {
        self.model.as_deref().unwrap_or(&self.origin)
    }

    /// The baseline's clean top-1 error (fraction), if the table gives it.
    pub fn clean(&self) -> Option<f64> {
        self.clean
    }

    /// The corruptions mCE averages, in ImageNet-C index order.
    pub fn benchmark(&self) -> &[String] {
        &self.benchmark
    }

    /// Every corruption with its five per-severity errors, in ImageNet-C index order.
    pub fn errors(&self) -> &[(String, [f64; 5])] {
        &self.errors
    }

    /// The five per-severity errors of one corruption.
    pub fn errors_of(&self, corruption: &str) -> Option<&[f64; 5]> {
        self.errors
            .iter()
            .find(|(n, _)| n == corruption)
            .map(|(_, e)| e)
    }
}

/// Σ over the five severities, always in severity order (so equal inputs give equal sums bit for bit).
fn severity_sum(e: &[f64; 5]) -> f64 {
    e.iter().sum()
}

/// The `imagenet_c` entry of `summary.json`'s `metrics` (all values fractions; maps keep ImageNet-C
/// index order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImagenetC {
    /// The baseline model the ratios are relative to ([`BaselineTable::model`], e.g. `AlexNet`);
    /// summaries written before this field existed were AlexNet's.
    #[serde(default = "default_baseline")]
    pub baseline: String,
    /// Clean top-1 error, when `clean` was evaluated on labelled frames.
    pub clean_error: Option<f64>,
    /// Per corruption in the plan: top-1 error at severities 1..5 (`null` for a severity that is not
    /// in the plan or had no labelled frames).
    #[serde(with = "crate::ordered")]
    pub errors: Vec<(String, [Option<f64>; 5])>,
    /// CE per complete corruption (all five severities),
    /// docs/imagenet-c.md#corruption-error-and-mce.
    #[serde(with = "crate::ordered")]
    pub ce: Vec<(String, f64)>,
    /// Relative CE per complete corruption (docs/imagenet-c.md#relative-ce-and-relative-mce);
    /// `null` without a clean error (the run's or the baseline's).
    #[serde(with = "crate::ordered")]
    pub relative_ce: Vec<(String, Option<f64>)>,
    /// mCE: mean CE over the table's benchmark corruptions (ImageNet-C's 15); `null` unless all of
    /// them are complete.
    pub mce: Option<f64>,
    /// Relative mCE over the benchmark corruptions; `null` unless all are complete and both clean
    /// errors are known.
    pub relative_mce: Option<f64>,
    /// Mean CE over all 19 corruptions (benchmark + validation; not the published mCE); `null` unless
    /// all 19 are complete.
    pub mce_all19: Option<f64>,
    /// Mean relative CE over all 19; `null` unless all 19 are complete and both clean errors are
    /// known.
    pub relative_mce_all19: Option<f64>,
    /// Corruptions in the plan without all five severities evaluated on labelled frames → the
    /// missing severities.
    #[serde(with = "crate::ordered")]
    pub incomplete: Vec<(String, Vec<u8>)>,
    /// What the ratios are normalised by.
    pub normalisation: String,
    /// The baseline table itself when it is not the built-in AlexNet one (absent then), so a
    /// summary rebuilt from the records (`robustream report`) keeps the run's baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_table: Option<BaselineTable>,
}

fn default_baseline() -> String {
    DEFAULT_BASELINE.to_string()
}

impl ImagenetC {
    /// The table these metrics were computed with: the stored one, else the built-in AlexNet table.
    pub fn table(&self) -> Result<&BaselineTable, TableError> {
        match &self.baseline_table {
            Some(t) => Ok(t),
            None => BaselineTable::builtin(),
        }
    }

    /// The number of the table's benchmark corruptions that have a CE.
    pub fn benchmark_complete(&self, table: &BaselineTable) -> usize {
        table
            .benchmark()
            .iter()
            .filter(|b| self.ce.iter().any(|(n, _)| n == *b))
            .count()
    }
}

/// Computes the ImageNet-C metrics of a run. `scenarios` holds every scenario of the plan as (key,
/// top-1 error over its labelled records, `None` when it had none); keys other than `clean` and
/// `corruption/<name>/<severity>` are ignored. Returns `None` when no corruption of the table is in
/// the plan.
pub fn compute<'a>(
    table: &BaselineTable,
    scenarios: impl IntoIterator<Item = (&'a str, Option<f64>)>,
) -> Option<ImagenetC> {
    let mut clean_error = None;
    // Per table corruption: in the plan at all, and its errors by severity.
    let mut seen = vec![false; table.errors.len()];
    let mut found = vec![[None; 5]; table.errors.len()];
    for (key, error) in scenarios {
        let (name, s) = match ScenarioKey::parse(key) {
            ScenarioKey::Clean => {
                clean_error = error;
                continue;
            }
            ScenarioKey::Corruption { name, severity } if SEVERITIES.contains(&severity) => {
                (name, severity)
            }
            _ => continue,
        };
        let Some(i) = table.errors.iter().position(|(n, _)| n == name) else {
            continue;
        };
        seen[i] = true;
        found[i][usize::from(s - 1)] = error;
    }
    if !seen.contains(&true) {
        return None;
    }
    let mut errors = Vec::new();
    let mut ce = Vec::new();
    let mut relative_ce = Vec::new();
    let mut incomplete = Vec::new();
    for (((name, base), errs), _) in table
        .errors
        .iter()
        .zip(&found)
        .zip(&seen)
        .filter(|(_, seen)| **seen)
    {
        errors.push((name.clone(), *errs));
        let complete: Option<Vec<f64>> = errs.iter().copied().collect();
        let Some(e) = complete else {
            let missing = SEVERITIES
                .zip(errs)
                .filter(|(_, e)| e.is_none())
                .map(|(s, _)| s)
                .collect();
            incomplete.push((name.clone(), missing));
            continue;
        };
        let e: [f64; 5] = [e[0], e[1], e[2], e[3], e[4]];
        ce.push((name.clone(), severity_sum(&e) / severity_sum(base)));
        relative_ce.push((
            name.clone(),
            clean_error
                .zip(table.clean)
                .map(|(c, bc)| (severity_sum(&e) - 5.0 * c) / (severity_sum(base) - 5.0 * bc)),
        ));
    }
    let mean_over = |names: &mut dyn Iterator<Item = &String>| -> (Option<f64>, Option<f64>) {
        let mut n = 0usize;
        let (mut sum, mut rel_sum, mut rel_ok) = (0.0, 0.0, true);
        for name in names {
            let Some(i) = ce.iter().position(|(n, _)| n == name) else {
                return (None, None);
            };
            n += 1;
            sum += ce[i].1;
            match relative_ce[i].1 {
                Some(r) => rel_sum += r,
                None => rel_ok = false,
            }
        }
        if n == 0 {
            return (None, None);
        }
        (Some(sum / n as f64), rel_ok.then(|| rel_sum / n as f64))
    };
    let (mce, relative_mce) = mean_over(&mut table.benchmark.iter());
    let (mce_all19, relative_mce_all19) = mean_over(&mut table.errors.iter().map(|(n, _)| n));
    let builtin = table.is_builtin();
    Some(ImagenetC {
        baseline: table.model().to_string(),
        clean_error,
        errors,
        ce,
        relative_ce,
        mce,
        relative_mce,
        mce_all19,
        relative_mce_all19,
        incomplete,
        normalisation: format!(
            "{} top-1 errors per corruption and severity, {} ({}{}); mCE over the {} benchmark \
             corruptions",
            table.model(),
            table.clean.map_or_else(
                || "no clean error (so no relative CE)".to_string(),
                |c| format!("clean error {c}")
            ),
            table.origin,
            if builtin {
                "; hendrycks README table, docs/imagenet-c.md#alexnet-baseline-errors"
            } else {
                ""
            },
            table.benchmark.len()
        ),
        baseline_table: (!builtin).then(|| table.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> &'static BaselineTable {
        BaselineTable::builtin().expect("the built-in table parses")
    }

    /// Every plan key of the 19 corruptions × 5 and clean, with errors from `f(name, severity)`.
    fn all_keys(
        clean: Option<f64>,
        f: impl Fn(&str, u8) -> Option<f64>,
    ) -> Vec<(String, Option<f64>)> {
        let mut v = vec![("clean".to_string(), clean)];
        for (name, _) in CORRUPTIONS {
            for s in SEVERITIES {
                v.push((format!("corruption/{name}/{s}"), f(name, s)));
            }
        }
        v
    }

    fn run(v: &[(String, Option<f64>)]) -> Option<ImagenetC> {
        compute(table(), v.iter().map(|(k, e)| (k.as_str(), *e)))
    }

    #[test]
    fn builtin_table_matches_the_published_averages() {
        let t = table();
        // The "average" column of docs/imagenet-c.md#alexnet-baseline-errors; the first 15 are
        // augmix's ALEXNET_ERR list.
        let published = [
            0.886428, 0.894468, 0.922640, 0.819880, 0.826268, 0.785948, 0.798360, 0.866816,
            0.826572, 0.819324, 0.564592, 0.853204, 0.646056, 0.717840, 0.606500, 0.845388,
            0.787108, 0.717512, 0.658248,
        ];
        assert_eq!(t.errors().len(), 19);
        for ((name, e), want) in t.errors().iter().zip(published) {
            let avg = e.iter().sum::<f64>() / 5.0;
            assert!((avg - want).abs() < 1e-9, "{name}: {avg} vs {want}");
        }
        // Spot values of the per-severity table (docs/imagenet-c.md#alexnet-baseline-errors) and
        // the clean error (docs/imagenet-c.md#relative-ce-and-relative-mce).
        assert_eq!(t.errors_of("snow").unwrap()[1], 0.88392);
        assert_eq!(t.errors_of("saturate").unwrap()[2], 0.51174);
        assert_eq!(t.clean(), Some(0.4348));
        // Same order as the corruption catalogue; the benchmark is its first 15.
        let names: Vec<&str> = t.errors().iter().map(|(n, _)| n.as_str()).collect();
        let ours: Vec<&str> = CORRUPTIONS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ours);
        assert_eq!(t.benchmark(), &names[..15]);
        assert_eq!(t.origin(), "configs/imagenet_c_alexnet.toml");
        assert_eq!(t.model(), "AlexNet");
        assert!(t.is_builtin());
    }

    #[test]
    fn alexnet_scores_exactly_one() {
        let t = table();
        let v = all_keys(t.clean(), |n, s| {
            Some(t.errors_of(n).unwrap()[usize::from(s - 1)])
        });
        let m = run(&v).unwrap();
        assert_eq!(m.ce.len(), 19);
        assert!(m.ce.iter().all(|(_, c)| *c == 1.0), "{:?}", m.ce);
        assert!(m.relative_ce.iter().all(|(_, c)| *c == Some(1.0)));
        assert_eq!((m.mce, m.relative_mce), (Some(1.0), Some(1.0)));
        assert_eq!((m.mce_all19, m.relative_mce_all19), (Some(1.0), Some(1.0)));
        assert!(m.incomplete.is_empty());
        assert_eq!(m.clean_error, Some(0.4348));
        assert_eq!(m.errors[7].1[1], Some(0.88392));
    }

    #[test]
    fn half_of_alexnets_errors_is_half() {
        // Halving is exact in binary floating point, so every ratio is exactly 0.5.
        let t = table();
        let v = all_keys(t.clean().map(|c| c / 2.0), |n, s| {
            Some(t.errors_of(n).unwrap()[usize::from(s - 1)] / 2.0)
        });
        let m = run(&v).unwrap();
        assert_eq!((m.mce, m.relative_mce), (Some(0.5), Some(0.5)));
        assert_eq!((m.mce_all19, m.relative_mce_all19), (Some(0.5), Some(0.5)));
    }

    #[test]
    fn hand_computed_ce_and_relative_ce() {
        // contrast errors 0.1..0.5 (Σ 1.5); AlexNet Σ = 0.64548 + 0.76150 + 0.88874 + 0.97760 +
        // 0.99270 = 4.26602. CE = 1.5 / 4.26602; with clean error 0.05 the relative CE is
        // (1.5 − 0.25) / (4.26602 − 5 × 0.4348) = 1.25 / 2.09202.
        let v: Vec<(String, Option<f64>)> = [
            ("clean", 0.05),
            ("corruption/contrast/1", 0.1),
            ("corruption/contrast/2", 0.2),
            ("corruption/contrast/3", 0.3),
            ("corruption/contrast/4", 0.4),
            ("corruption/contrast/5", 0.5),
        ]
        .iter()
        .map(|(k, e)| (k.to_string(), Some(*e)))
        .collect();
        let m = run(&v).unwrap();
        assert_eq!(m.ce.len(), 1);
        assert_eq!(m.ce[0].0, "contrast");
        assert!(
            (m.ce[0].1 - 0.351_615_791_768_44).abs() < 1e-12,
            "{}",
            m.ce[0].1
        );
        let rel = m.relative_ce[0].1.unwrap();
        assert!((rel - 0.597_508_628_024_59).abs() < 1e-12, "{rel}");
        assert_eq!(
            m.errors,
            vec![(
                "contrast".to_string(),
                [Some(0.1), Some(0.2), Some(0.3), Some(0.4), Some(0.5)]
            )]
        );
        // One corruption is not the benchmark: no mCE.
        assert_eq!((m.mce, m.relative_mce, m.mce_all19), (None, None, None));
        assert!(m.incomplete.is_empty());
        assert_eq!(m.benchmark_complete(table()), 1);
    }

    #[test]
    fn incomplete_corruptions_are_listed_with_their_missing_severities() {
        // fog at severities 1 and 3 only, and severity 2 of snow without labelled frames.
        let mut v = vec![
            ("clean".to_string(), Some(0.2)),
            ("corruption/fog/3".to_string(), Some(0.5)),
            ("corruption/fog/1".to_string(), Some(0.4)),
            ("background/whatever".to_string(), Some(0.1)),
        ];
        for s in SEVERITIES {
            v.push((format!("corruption/snow/{s}"), (s != 2).then_some(0.5)));
        }
        let m = run(&v).unwrap();
        assert!(m.ce.is_empty() && m.relative_ce.is_empty());
        assert_eq!(
            m.incomplete,
            vec![
                ("snow".to_string(), vec![2]),
                ("fog".to_string(), vec![2, 4, 5]),
            ]
        );
        assert_eq!(m.errors[1].1, [Some(0.4), None, Some(0.5), None, None]);
        assert_eq!(m.mce, None);
        // Nothing of ImageNet-C in the plan: no entry at all.
        assert!(run(&[("clean".to_string(), Some(0.5))]).is_none());
    }

    #[test]
    fn validation_corruptions_count_only_for_all19() {
        let v = all_keys(Some(0.3), |n, _| (n != "saturate").then_some(0.6));
        let m = run(&v).unwrap();
        assert_eq!(m.ce.len(), 18);
        assert!(m.mce.is_some() && m.relative_mce.is_some());
        assert_eq!((m.mce_all19, m.relative_mce_all19), (None, None));
        assert_eq!(
            m.incomplete,
            vec![("saturate".to_string(), vec![1, 2, 3, 4, 5])]
        );
        // Without a clean error: CE and mCE, but no relative ones.
        let v = all_keys(None, |_, _| Some(0.6));
        let m = run(&v).unwrap();
        assert!(m.mce.is_some() && m.mce_all19.is_some());
        assert_eq!((m.relative_mce, m.relative_mce_all19), (None, None));
        assert!(m.relative_ce.iter().all(|(_, r)| r.is_none()));
        assert_eq!(m.relative_ce.len(), 19);
    }

    #[test]
    fn json_form() {
        let t = table();
        let v = all_keys(t.clean(), |n, s| {
            (n != "fog" || s != 4).then(|| t.errors_of(n).unwrap()[usize::from(s - 1)])
        });
        let m = run(&v).unwrap();
        let j = serde_json::to_value(&m).unwrap();
        let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "baseline",
                "clean_error",
                "errors",
                "ce",
                "relative_ce",
                "mce",
                "relative_mce",
                "mce_all19",
                "relative_mce_all19",
                "incomplete",
                "normalisation"
            ]
        );
        assert_eq!(j["incomplete"], serde_json::json!({"fog": [4]}));
        assert_eq!(j["errors"]["fog"][3], serde_json::Value::Null);
        assert_eq!(j["ce"]["gaussian_noise"], 1.0);
        let order: Vec<&str> = j["ce"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            order[..3],
            ["gaussian_noise", "shot_noise", "impulse_noise"]
        );
        assert!(j["mce"].is_null() && j["mce_all19"].is_null());
        assert_eq!(j["baseline"], "AlexNet");
        // The built-in table's description, unchanged by configurable baselines.
        assert_eq!(
            j["normalisation"],
            "AlexNet top-1 errors per corruption and severity, clean error 0.4348 \
             (configs/imagenet_c_alexnet.toml; hendrycks README table, \
             docs/imagenet-c.md#alexnet-baseline-errors); mCE over the 15 benchmark corruptions"
        );
        let back: ImagenetC = serde_json::from_value(j.clone()).unwrap();
        assert_eq!(back, m);
        // A summary written before `baseline` existed reads back as AlexNet's.
        let mut old = j;
        old.as_object_mut().unwrap().remove("baseline");
        let back: ImagenetC = serde_json::from_value(old).unwrap();
        assert_eq!(back.baseline, "AlexNet");
        assert_eq!(back.table().unwrap(), table());
    }

    /// The errors of a made-up model: irregular, all in (0, 1), above `CLEAN` on every row.
    fn own_error(corruption_index: usize, severity: u8) -> f64 {
        0.3 + 0.02 * corruption_index as f64 + 0.05 * f64::from(severity)
            - 0.013 * ((corruption_index * 7 + usize::from(severity)) % 5) as f64
    }
    const CLEAN: f64 = 0.21;

    /// A table in the built-in format with `error(index, severity)` for every corruption and
    /// `head` (e.g. `model`, `clean`) before the benchmark list.
    fn custom_toml(head: &str, error: impl Fn(usize, u8) -> f64) -> String {
        let mut t = format!("{head}\nbenchmark = [");
        for (name, _) in &CORRUPTIONS[..15] {
            t += &format!("\"{name}\", ");
        }
        t += "]\n[errors]\n";
        for (i, (name, _)) in CORRUPTIONS.iter().enumerate() {
            let e: Vec<String> = SEVERITIES.map(|s| error(i, s).to_string()).collect();
            t += &format!("{name} = [{}]\n", e.join(", "));
        }
        t
    }

    fn own_keys(clean: Option<f64>, skip: &str) -> Vec<(String, Option<f64>)> {
        let mut v = vec![("clean".to_string(), clean)];
        for (i, (name, _)) in CORRUPTIONS.iter().enumerate() {
            for s in SEVERITIES {
                let e = (*name != skip).then(|| own_error(i, s));
                v.push((format!("corruption/{name}/{s}"), e));
            }
        }
        v
    }

    #[test]
    fn a_baseline_of_the_models_own_errors_scores_exactly_one() {
        let text = custom_toml(
            &format!("model = \"ResNet-50 v1\"\nclean = {CLEAN}"),
            own_error,
        );
        let t = BaselineTable::parse(&text, "tables/r50.toml").unwrap();
        assert!(!t.is_builtin());
        assert_eq!((t.model(), t.origin()), ("ResNet-50 v1", "tables/r50.toml"));
        assert_eq!(t.errors_of("fog").unwrap()[2], own_error(9, 3));
        let m = compute(
            &t,
            own_keys(Some(CLEAN), "")
                .iter()
                .map(|(k, e)| (k.as_str(), *e)),
        )
        .unwrap();
        assert_eq!(m.ce.len(), 19);
        assert!(m.ce.iter().all(|(_, c)| *c == 1.0), "{:?}", m.ce);
        assert!(m.relative_ce.iter().all(|(_, c)| *c == Some(1.0)));
        assert_eq!((m.mce, m.relative_mce), (Some(1.0), Some(1.0)));
        assert_eq!((m.mce_all19, m.relative_mce_all19), (Some(1.0), Some(1.0)));
        assert_eq!(m.baseline, "ResNet-50 v1");
        assert_eq!(m.benchmark_complete(&t), 15);
        assert_eq!(
            m.normalisation,
            "ResNet-50 v1 top-1 errors per corruption and severity, clean error 0.21 \
             (tables/r50.toml); mCE over the 15 benchmark corruptions"
        );
        // The table travels with the metrics, so a rebuilt summary can use it again.
        assert_eq!(m.baseline_table.as_ref(), Some(&t));
        assert_eq!(m.table().unwrap(), &t);
        let j = serde_json::to_value(&m).unwrap();
        assert_eq!(j["baseline_table"]["file"], "tables/r50.toml");
        assert_eq!(j["baseline_table"]["errors"]["fog"][2], own_error(9, 3));
        let back: ImagenetC = serde_json::from_value(j).unwrap();
        assert_eq!(back, m);
        // Against AlexNet the same errors are not 1.
        let a = run(&own_keys(Some(CLEAN), "")).unwrap();
        assert!(a.ce.iter().all(|(_, c)| *c != 1.0), "{:?}", a.ce);

        // A validation corruption incomplete: every complete one is still 1, the mCE too.
        let m = compute(
            &t,
            own_keys(Some(CLEAN), "spatter")
                .iter()
                .map(|(k, e)| (k.as_str(), *e)),
        )
        .unwrap();
        assert_eq!(m.ce.len(), 18);
        assert!(m.ce.iter().all(|(_, c)| *c == 1.0), "{:?}", m.ce);
        assert_eq!((m.mce, m.relative_mce), (Some(1.0), Some(1.0)));
        assert_eq!((m.mce_all19, m.relative_mce_all19), (None, None));
        assert_eq!(
            m.incomplete,
            vec![("spatter".to_string(), vec![1, 2, 3, 4, 5])]
        );
        // A benchmark corruption incomplete: no mCE, and 14 of the 15 counted.
        let m = compute(
            &t,
            own_keys(Some(CLEAN), "fog")
                .iter()
                .map(|(k, e)| (k.as_str(), *e)),
        )
        .unwrap();
        assert_eq!((m.mce, m.relative_mce), (None, None));
        assert_eq!(m.benchmark_complete(&t), 14);
    }

    #[test]
    fn a_baseline_without_clean_error_has_ce_but_no_relative_ce() {
        // As for a run without clean frames: relative CE is reported as unavailable, not an error.
        let text = custom_toml("model = \"mine\"", |_, _| 0.5);
        let t = BaselineTable::parse(&text, "b.toml").unwrap();
        assert_eq!(t.clean(), None);
        let v = all_keys(Some(0.1), |_, s| Some(0.1 * f64::from(s)));
        let m = compute(&t, v.iter().map(|(k, e)| (k.as_str(), *e))).unwrap();
        // Σ_s 0.1·s = 1.5 against Σ_s 0.5 = 2.5.
        assert!(
            m.ce.iter().all(|(_, c)| (*c - 0.6).abs() < 1e-15),
            "{:?}",
            m.ce
        );
        assert!(m.relative_ce.iter().all(|(_, r)| r.is_none()));
        assert!((m.mce.unwrap() - 0.6).abs() < 1e-15);
        assert_eq!((m.relative_mce, m.relative_mce_all19), (None, None));
        assert!(
            m.normalisation.starts_with(
                "mine top-1 errors per corruption and severity, no clean error (so no relative CE) \
                 (b.toml)"
            ),
            "{}",
            m.normalisation
        );
        // Without `model`, the baseline is named by its file.
        let t = BaselineTable::parse(&custom_toml("", |_, _| 0.5), "dir/b.toml").unwrap();
        assert_eq!(t.model(), "dir/b.toml");
    }

    #[test]
    fn bad_custom_tables_give_one_line_naming_file_key_and_fix() {
        let good = custom_toml("model = \"m\"\nclean = 0.2", |_, _| 0.5);
        assert!(BaselineTable::parse(&good, "b.toml").is_ok());
        let bad = |text: &str| {
            let e = BaselineTable::parse(text, "b.toml")
                .unwrap_err()
                .to_string();
            assert!(!e.contains('\n'), "one line: {e}");
            assert!(e.starts_with("ImageNet-C baseline table b.toml: "), "{e}");
            e
        };
        // TOML syntax: the parser's position, on one line.
        let e = bad(&good.replace("clean = 0.2", "clean = 0.2 0.3"));
        assert!(e.contains("line 2"), "{e}");
        // A corruption missing.
        let e = bad(&good.replace("\nfog = ", "\n# fog = "));
        assert!(
            e.contains("`errors.fog` is missing; the table needs all 19"),
            "{e}"
        );
        // A severity missing (four values) and one too many.
        let e = bad(&good.replace(
            "fog = [0.5, 0.5, 0.5, 0.5, 0.5]",
            "fog = [0.5, 0.5, 0.5, 0.5]",
        ));
        assert!(
            e.contains("`errors.fog` has 4 values; it needs five"),
            "{e}"
        );
        let e = bad(&good.replace("fog = [0.5,", "fog = [0.5, 0.5,"));
        assert!(e.contains("`errors.fog` has 6 values"), "{e}");
        // Values outside [0, 1]: percentages, negatives, a clean error of 1.
        let e = bad(&good.replace("snow = [0.5,", "snow = [55.0,"));
        assert!(
            e.contains("`errors.snow` holds a value outside [0, 1]"),
            "{e}"
        );
        let e = bad(&good.replace("snow = [0.5,", "snow = [-0.1,"));
        assert!(
            e.contains("`errors.snow` holds a value outside [0, 1]"),
            "{e}"
        );
        let e = bad(&good.replace("clean = 0.2", "clean = 1.0"));
        assert!(
            e.contains("`clean` = 1 is not an error rate in [0, 1)"),
            "{e}"
        );
        // Not a number at all: the parser names the key.
        let e = bad(&good.replace("snow = [0.5,", "snow = [\"x\","));
        assert!(e.contains("errors.snow") || e.contains("snow"), "{e}");
        // Denominators: a row of zeros, a row not above the clean error.
        let e = bad(&custom_toml("", |i, _| if i == 3 { 0.0 } else { 0.5 }));
        assert!(e.contains("`errors.defocus_blur` are all 0"), "{e}");
        let e = bad(&good.replace("clean = 0.2", "clean = 0.6"));
        assert!(e.contains("are not above the clean error"), "{e}");
        // An unknown key (a typo of `model`) and an empty name.
        let e = bad(&good.replace("model = ", "modle = "));
        assert!(e.contains("modle"), "{e}");
        let e = bad(&good.replace("model = \"m\"", "model = \" \""));
        assert!(e.contains("`model` is empty"), "{e}");
    }

    #[test]
    fn reading_a_missing_table_names_the_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("nope.toml");
        let e = BaselineTable::read(&p).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "ImageNet-C baseline table {}: cannot be read (",
                p.display()
            )),
            "{e}"
        );
        assert!(!e.contains('\n'));
        std::fs::write(&p, custom_toml("clean = 0.1", |_, _| 0.4)).unwrap();
        let t = BaselineTable::read(&p).unwrap();
        assert_eq!(t.origin(), p.display().to_string());
    }

    #[test]
    fn a_stored_table_is_validated_when_read_back() {
        let t = BaselineTable::parse(&custom_toml("clean = 0.1", |_, _| 0.4), "b.toml").unwrap();
        let mut j = serde_json::to_value(&t).unwrap();
        assert_eq!(j.get("model"), None);
        assert_eq!(
            serde_json::from_value::<BaselineTable>(j.clone()).unwrap(),
            t
        );
        j["errors"]["fog"][0] = serde_json::json!(3.0);
        let e = serde_json::from_value::<BaselineTable>(j)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("b.toml: `errors.fog` holds a value outside [0, 1]"),
            "{e}"
        );
    }

    #[test]
    fn malformed_tables_are_errors_naming_the_problem() {
        let bad = |edit: &dyn Fn(&str) -> String| {
            BaselineTable::parse(&edit(BUILTIN_TABLE_TOML), "t.toml")
                .unwrap_err()
                .to_string()
        };
        let e = bad(&|t| t.replace("clean = 0.4348", "clean = 1.5"));
        assert!(
            e.starts_with("ImageNet-C baseline table t.toml: `clean`"),
            "{e}"
        );
        let e = bad(&|t| t.replace("snow              =", "snoww ="));
        assert!(
            e.contains("`errors.snoww` is not an ImageNet-C corruption"),
            "{e}"
        );
        let e = bad(&|t| t.replace("saturate          = ", "# "));
        assert!(e.contains("`errors.saturate` is missing"), "{e}");
        let e = bad(&|t| t.replace("0.99452]", "1.99452]"));
        assert!(e.contains("gaussian_noise` holds a value outside"), "{e}");
        let e = bad(&|t| {
            t.replace(
                "\"jpeg_compression\",\n]",
                "\"jpeg_compression\", \"fogg\",\n]",
            )
        });
        assert!(e.contains("`benchmark` names `fogg`"), "{e}");
        let e = bad(&|t| format!("{t}\nextra = 1\n"));
        assert!(e.contains("extra"), "{e}");
        let e = bad(&|t| {
            t.replace(
                "0.61390, 0.79734, 0.88790, 0.89942, 0.93430",
                "0.1, 0.1, 0.1, 0.1, 0.1",
            )
        });
        assert!(
            e.contains("`errors.frost` are not above the clean error"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn a_table_that_is_a_device_a_fifo_or_huge_is_refused_with_its_fix() {
        let dir = tempfile::tempdir().unwrap();
        let limit = crate::fsread::MAX_TEXT_BYTES;
        for (path, why) in crate::fsread::refused_paths(dir.path(), limit) {
            let e = BaselineTable::read(&path).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "ImageNet-C baseline table {}: cannot be read ({why}",
                    path.display()
                )) && e
                    .ends_with("check the path (--ce-baseline, or `ce_baseline` in `[metrics]`)"),
                "{e}"
            );
        }
    }
}
