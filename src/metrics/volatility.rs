//! XIMAGENET-12 accuracy-drop volatility and robustness score (docs/ximagenet.md#robustness-score).
//!
//! μ is the model's accuracy on the original images (our `clean`), C(i) its accuracy on scenario i
//! (the paper's "cross" experiment, EX1). Per scenario the drop volatility is (C(i) − μ)²; the cross
//! variance σ²_cross = Σ (C(i) − μ)² / (n − 1) over the n scenarios with an accuracy — n − 1 as every
//! row of the paper's Table 2 is computed, although its formula text says n — and
//! `score_cross` = 1 − σ²_cross. The full score S_robust = 1 − (σ²_cross + σ²_inner) needs C'(i), the
//! accuracies of models trained *and* tested on each scenario (EX2), which a stream cannot produce:
//! the user supplies them as a JSON file ([`InnerResults`]); without it only `score_cross` is given.
//!
//! Scenarios: the XIMAGENET-12 keys `background/<name>` ([`SCENARIOS`], then the options
//! `transparent_on/<matte>`, `random_bg_*_bgt`), whichever the plan holds; σ²_cross covers every
//! one present and the section lists them (`scenarios`). The paper's Table 2 uses eight of them
//! ([`TABLE2`], group `ximagenet12-table2`): when all eight have an accuracy, `table2` gives
//! σ²_cross and score_cross over exactly those eight, the numbers that compare with the paper's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::key::{CLEAN, ScenarioKey};

pub(crate) use crate::scenario::background::TABLE2;

/// The XIMAGENET-12 scenario names of the `ximagenet12` group (keys `background/<name>`,
/// docs/ximagenet.md#scenarios).
const SCENARIOS: [&str; 13] = [
    "blur_bg",
    "blur_obj",
    "color_r",
    "color_g",
    "color_b",
    "color_grey",
    "color_rainbow",
    "bright_bg",
    "bright_obj",
    "segmented",
    "transparent",
    "random_bg_add",
    "random_bg_paste",
];

/// The scenario key of an XIMAGENET-12 scenario name.
fn key_of(name: &str) -> String {
    ScenarioKey::Background { leaf: name }.to_string()
}

/// Where an XIMAGENET-12 scenario key sorts in the section ([`SCENARIOS`], then the listed options,
/// then other mattes), `None` for any other key.
fn rank(key: &str) -> Option<usize> {
    rank_and_name(key).map(|(r, _)| r)
}

/// [`rank`] and the scenario's name (the key's leaf).
fn rank_and_name(key: &str) -> Option<(usize, &str)> {
    let parsed = ScenarioKey::parse(key);
    let ScenarioKey::Background { leaf: name } = parsed else {
        return None;
    };
    let options = crate::scenario::background::XIMAGENET12_OPTIONS;
    SCENARIOS
        .iter()
        .chain(options.iter().map(|(n, _)| n))
        .position(|s| *s == name)
        .or_else(|| {
            (name.starts_with("transparent_on/")
                && crate::scenario::background::build_key(parsed).is_some())
            .then_some(SCENARIOS.len() + options.len())
        })
        .map(|r| (r, name))
}

/// Errors reading the inner (scenario-trained) results file.
#[derive(Debug, thiserror::Error)]
pub enum InnerError {
    /// The file could not be read.
    #[error(
        "cannot read XIMAGENET-12 inner results {path}: {source}; check `ximagenet_inner` in \
         `[metrics]` (relative to the config file)"
    )]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a JSON object of numbers.
    #[error(
        "XIMAGENET-12 inner results {}: {} (expected {{\"clean\": 0.95, \"background/blur_bg\": 0.9, ...}} with fractions)",
        crate::quote::clip_path(path), crate::quote::clip(&source.to_string())
    )]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// A key is neither `clean` nor an XIMAGENET-12 scenario key.
    #[error(
        "XIMAGENET-12 inner results {}: unknown key `{}` (use `clean` or background/<{}>)",
        crate::quote::clip_path(path), crate::quote::clip(key), SCENARIOS.join("|")
    )]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
    },
    /// A value is not a fraction in [0, 1].
    #[error(
        "XIMAGENET-12 inner results {}: `{}` = {value} is not a fraction in [0, 1]",
        crate::quote::clip_path(path),
        crate::quote::clip(key)
    )]
    NotAFraction {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// The value.
        value: f64,
    },
}

/// C'(i): accuracies (fractions) of models trained and tested on each scenario (the paper's EX2),
/// keyed by scenario key (`background/blur_bg`, ...), plus optionally `clean` (the model trained and
/// tested on the originals, μ' for σ²_inner; the run's own clean accuracy when absent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct InnerResults(pub(crate) BTreeMap<String, f64>);

impl InnerResults {
    /// Reads and checks a results file: a JSON object whose keys are `clean` or XIMAGENET-12 scenario
    /// keys and whose values are fractions in [0, 1]. Errors name the file and the key.
    pub(crate) fn read(path: &Path) -> Result<Self, InnerError> {
        let text =
            crate::fsread::read_text_io(path, crate::fsread::MAX_TEXT_BYTES).map_err(|source| {
                InnerError::Io {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        Self::parse(&text, path)
    }

    /// [`InnerResults::read`] on text already read (`path` only names it in errors).
    fn parse(text: &str, path: &Path) -> Result<Self, InnerError> {
        let map: BTreeMap<String, f64> =
            serde_json::from_str(text).map_err(|source| InnerError::Json {
                path: path.to_path_buf(),
                source,
            })?;
        for (key, &value) in &map {
            let known = key == CLEAN || rank(key).is_some();
            if !known {
                return Err(InnerError::UnknownKey {
                    path: path.to_path_buf(),
                    key: key.clone(),
                });
            }
            if !(0.0..=1.0).contains(&value) {
                return Err(InnerError::NotAFraction {
                    path: path.to_path_buf(),
                    key: key.clone(),
                    value,
                });
            }
        }
        Ok(Self(map))
    }
}

/// Σ (x − μ)² / (n − 1) over `xs` (docs/ximagenet.md#cross-and-inner-variance); `None` for fewer
/// than two values.
fn variance_n_minus_1(xs: &[f64], mu: f64) -> Option<f64> {
    (xs.len() >= 2)
        .then(|| xs.iter().map(|x| (x - mu).powi(2)).sum::<f64>() / (xs.len() - 1) as f64)
}

/// `summary.json`'s `metrics.volatility` (fractions; variances in fraction² — the paper prints the
/// per-scenario volatilities ×100 as "%").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Volatility {
    /// μ: the clean top-1 accuracy.
    pub(crate) mu: Option<f64>,
    /// Per scenario present (in [`SCENARIOS`] order, keyed by name): (C(i) − μ)²; `null` when either
    /// accuracy is undefined.
    #[serde(with = "crate::ordered")]
    pub(crate) drop_volatility: Vec<(String, Option<f64>)>,
    /// Scenarios that entered σ²_cross (those with an accuracy, μ defined).
    pub(crate) n: usize,
    /// Their names, in section order: what σ²_cross covers.
    #[serde(default)]
    pub(crate) scenarios: Vec<String>,
    /// σ²_cross and score_cross over exactly the paper's eight Table 2 scenarios ([`TABLE2`]), when
    /// all eight have an accuracy and μ is defined: the numbers to compare with the paper's
    /// Table 2.
    #[serde(default)]
    pub(crate) table2: Option<CrossScore>,
    /// σ²_cross with n − 1; `null` when n < 2 or μ is undefined.
    pub(crate) variance_cross: Option<f64>,
    /// 1 − σ²_cross.
    pub(crate) score_cross: Option<f64>,
    /// The inner results used, when given (so `report` can rebuild the section).
    pub(crate) inner: Option<InnerResults>,
    /// σ²_inner from the inner results: Σ (C'(i) − μ')² / (n' − 1) over their scenarios present in the
    /// plan, μ' = their `clean` (else μ); `null` without inner results or with fewer than two.
    pub(crate) variance_inner: Option<f64>,
    /// S_robust = 1 − (σ²_cross + σ²_inner); `null` unless both variances are defined.
    pub(crate) score: Option<f64>,
}

/// σ²_cross and its score over a set of scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct CrossScore {
    /// Σ (C(i) − μ)² / (n − 1).
    pub(crate) variance_cross: f64,
    /// 1 − σ²_cross.
    pub(crate) score_cross: f64,
}

/// The volatility metrics from per-scenario top-1 accuracies `(key, top-1)` and optional inner
/// results. `None` when no XIMAGENET-12 scenario is in the plan.
pub(crate) fn compute<'a>(
    top1: impl IntoIterator<Item = (&'a str, Option<f64>)>,
    inner: Option<&InnerResults>,
) -> Option<Volatility> {
    let top1: Vec<(&str, Option<f64>)> = top1.into_iter().collect();
    let find = |key: &str| top1.iter().find(|(k, _)| *k == key).map(|(_, a)| *a);
    let mut ranked: Vec<(usize, &str, Option<f64>)> = top1
        .iter()
        .filter_map(|&(k, a)| rank_and_name(k).map(|(r, name)| (r, name, a)))
        .collect();
    ranked.sort_by_key(|&(r, _, _)| r);
    let present: Vec<(&str, Option<f64>)> = ranked.into_iter().map(|(_, s, a)| (s, a)).collect();
    if present.is_empty() {
        return None;
    }
    let mu = find(CLEAN).flatten();
    let table2: Option<Vec<f64>> = TABLE2
        .iter()
        .map(|s| present.iter().find(|(p, _)| p == s).and_then(|(_, a)| *a))
        .collect();
    let table2 = mu
        .zip(table2)
        .and_then(|(m, xs)| variance_n_minus_1(&xs, m))
        .map(|v| CrossScore {
            variance_cross: v,
            score_cross: 1.0 - v,
        });
    let drop_volatility: Vec<(String, Option<f64>)> = present
        .iter()
        .map(|(s, c)| (s.to_string(), mu.zip(*c).map(|(m, c)| (c - m).powi(2))))
        .collect();
    let cross: Vec<f64> = present.iter().filter_map(|(_, c)| *c).collect();
    let variance_cross = mu.and_then(|m| variance_n_minus_1(&cross, m));
    let variance_inner = inner.and_then(|r| {
        let mu_inner = r.0.get(CLEAN).copied().or(mu)?;
        let xs: Vec<f64> = present
            .iter()
            .filter_map(|(s, _)| r.0.get(&key_of(s)).copied())
            .collect();
        variance_n_minus_1(&xs, mu_inner)
    });
    Some(Volatility {
        mu,
        n: if mu.is_some() { cross.len() } else { 0 },
        scenarios: match mu {
            Some(_) => present
                .iter()
                .filter(|(_, c)| c.is_some())
                .map(|(s, _)| s.to_string())
                .collect(),
            None => Vec::new(),
        },
        table2,
        drop_volatility,
        score_cross: variance_cross.map(|v| 1.0 - v),
        score: variance_cross
            .zip(variance_inner)
            .map(|(c, i)| 1.0 - (c + i)),
        variance_cross,
        variance_inner,
        inner: inner.cloned(),
    })
}

#[cfg(test)]
mod tests;
