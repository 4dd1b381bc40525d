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
pub(crate) const BUILTIN_TABLE_TOML: &str = include_str!("../../configs/imagenet_c_alexnet.toml");

/// Where the built-in table comes from (shown in `summary.json` as `normalisation`).
const BUILTIN_TABLE_NAME: &str = "configs/imagenet_c_alexnet.toml";

/// The baseline name of summaries written before tables named their model (always AlexNet then).
const DEFAULT_BASELINE: &str = "AlexNet";

/// What kind of problem a [`TableError`] is, for callers to match on (a config names the file's
/// path for one that cannot be read, the format for one that does not parse or hold).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum TableErrorKind {
    /// The file cannot be read (missing, not a regular file, too large, not UTF-8).
    Read,
    /// The text is not a table: malformed TOML, an unknown key, a value of the wrong type.
    Parse,
    /// The table parses but does not hold: a missing or unknown corruption, a value out of range,
    /// a denominator of zero, a bad `benchmark` list.
    Invalid,
}

/// A malformed baseline table: which table, what kind of problem, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ImageNet-C baseline table {origin}: {message}")]
pub struct TableError {
    /// What kind of problem it is.
    pub(crate) kind: TableErrorKind,
    /// The table's name or path.
    pub(crate) origin: String,
    /// What is wrong and what to do.
    pub(crate) message: String,
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
                kind: TableErrorKind::Read,
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
    pub(crate) fn parse(text: &str, name: &str) -> Result<Self, TableError> {
        let raw: RawTable = toml::from_str(text).map_err(|e| TableError {
            kind: TableErrorKind::Parse,
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
            kind: TableErrorKind::Invalid,
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
    pub(crate) fn builtin() -> Result<&'static BaselineTable, TableError> {
        static TABLE: OnceLock<Result<BaselineTable, TableError>> = OnceLock::new();
        TABLE
            .get_or_init(|| BaselineTable::parse(BUILTIN_TABLE_TOML, BUILTIN_TABLE_NAME))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether this is the built-in AlexNet table (same origin and values).
    fn is_builtin(&self) -> bool {
        Self::builtin().is_ok_and(|b| b == self)
    }

    /// Where the table came from (a path as given, or [`BUILTIN_TABLE_NAME`]).
    #[cfg(test)]
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }

    /// The baseline model's name: the table's `model`, else where the table came from.
    pub(crate) fn model(&self) -> &str {
        self.model.as_deref().unwrap_or(&self.origin)
    }

    /// The baseline's clean top-1 error (fraction), if the table gives it.
    pub(crate) fn clean(&self) -> Option<f64> {
        self.clean
    }

    /// The corruptions mCE averages, in ImageNet-C index order.
    pub(crate) fn benchmark(&self) -> &[String] {
        &self.benchmark
    }

    /// Every corruption with its five per-severity errors, in ImageNet-C index order.
    #[cfg(test)]
    pub(crate) fn errors(&self) -> &[(String, [f64; 5])] {
        &self.errors
    }

    /// The five per-severity errors of one corruption.
    #[cfg(test)]
    pub(crate) fn errors_of(&self, corruption: &str) -> Option<&[f64; 5]> {
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
pub(crate) struct ImagenetC {
    /// The baseline model the ratios are relative to ([`BaselineTable::model`], e.g. `AlexNet`);
    /// summaries written before this field existed were AlexNet's.
    #[serde(default = "default_baseline")]
    pub(crate) baseline: String,
    /// Clean top-1 error, when `clean` was evaluated on labelled frames.
    pub(crate) clean_error: Option<f64>,
    /// Per corruption in the plan: top-1 error at severities 1..5 (`null` for a severity that is not
    /// in the plan or had no labelled frames).
    #[serde(with = "crate::ordered")]
    pub(crate) errors: Vec<(String, [Option<f64>; 5])>,
    /// CE per complete corruption (all five severities),
    /// docs/imagenet-c.md#corruption-error-and-mce.
    #[serde(with = "crate::ordered")]
    pub(crate) ce: Vec<(String, f64)>,
    /// Relative CE per complete corruption (docs/imagenet-c.md#relative-ce-and-relative-mce);
    /// `null` without a clean error (the run's or the baseline's).
    #[serde(with = "crate::ordered")]
    pub(crate) relative_ce: Vec<(String, Option<f64>)>,
    /// mCE: mean CE over the table's benchmark corruptions (ImageNet-C's 15); `null` unless all of
    /// them are complete.
    pub(crate) mce: Option<f64>,
    /// Relative mCE over the benchmark corruptions; `null` unless all are complete and both clean
    /// errors are known.
    pub(crate) relative_mce: Option<f64>,
    /// Mean CE over all 19 corruptions (benchmark + validation; not the published mCE); `null` unless
    /// all 19 are complete.
    pub(crate) mce_all19: Option<f64>,
    /// Mean relative CE over all 19; `null` unless all 19 are complete and both clean errors are
    /// known.
    pub(crate) relative_mce_all19: Option<f64>,
    /// Corruptions in the plan without all five severities evaluated on labelled frames → the
    /// missing severities.
    #[serde(with = "crate::ordered")]
    pub(crate) incomplete: Vec<(String, Vec<u8>)>,
    /// What the ratios are normalised by.
    pub(crate) normalisation: String,
    /// The baseline table itself when it is not the built-in AlexNet one (absent then), so a
    /// summary rebuilt from the records (`robustream report`) keeps the run's baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) baseline_table: Option<BaselineTable>,
}

fn default_baseline() -> String {
    DEFAULT_BASELINE.to_string()
}

impl ImagenetC {
    /// The table these metrics were computed with: the stored one, else the built-in AlexNet table.
    pub(crate) fn table(&self) -> Result<&BaselineTable, TableError> {
        match &self.baseline_table {
            Some(t) => Ok(t),
            None => BaselineTable::builtin(),
        }
    }

    /// The number of the table's benchmark corruptions that have a CE.
    pub(crate) fn benchmark_complete(&self, table: &BaselineTable) -> usize {
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
pub(crate) fn compute<'a>(
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
mod tests;
