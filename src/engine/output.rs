//! Decoding one row of model output into a [`Prediction`]: top-k classes and their probabilities.

use crate::model::OutputKind;

/// How far a `kind = "probabilities"` row may be from a distribution: each value within
/// `[-PROB_TOLERANCE, 1 + PROB_TOLERANCE]` and the sum within `1 ± PROB_TOLERANCE`. Rounding in an
/// f32 softmax over 1000 classes is about 1e-6 and an fp16 engine's about 5e-4; a logits or
/// multi-label (sigmoid) output misses it by far.
const PROB_TOLERANCE: f32 = 1e-3;

/// Why a row of model output cannot be scored ([`check_row`]). The messages are stable per cause
/// (no per-row numbers), so a warning repeated on every frame groups into one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowError {
    /// NaN or ±inf among the scores.
    #[error(
        "the model's output holds NaN/inf ({found}); check that the model description's \
         `[preprocess]` normalises the input as the model was trained \
         (docs/model-description.md#preprocess), then the model alone on a clean image \
         (`python3 scripts/check_model.py --model MODEL.onnx IMAGE`, with EfficientNet-Lite0's \
         preprocessing)"
    )]
    NonFinite {
        /// What was found, e.g. `NaN, +inf`.
        found: String,
    },
    /// `kind = "probabilities"` but the row is not a distribution.
    #[error(
        "the model's output is not probabilities ({problem}) but its description says \
         `[output] kind = \"probabilities\"` (values in [0, 1] summing to 1 ± 0.001); if the \
         model outputs scores, set `kind = \"logits\"`"
    )]
    NotProbabilities {
        /// What is wrong: a value below 0 or above 1, or the sum.
        problem: &'static str,
    },
}

impl RowError {
    /// The message with the model description named where the fix goes there (`[output] kind`).
    pub(crate) fn in_model(&self, description: &std::path::Path) -> String {
        match self {
            Self::NonFinite { .. } => self.to_string(),
            Self::NotProbabilities { .. } => format!("{self} in {}", description.display()),
        }
    }
}

/// Checks one output row before it is scored: every value finite, and for
/// [`OutputKind::Probabilities`] a distribution within [`PROB_TOLERANCE`].
pub fn check_row(row: &[f32], kind: OutputKind) -> Result<(), RowError> {
    if row.iter().any(|v| !v.is_finite()) {
        let has = |f: fn(&f32) -> bool| row.iter().any(f);
        let found: Vec<&str> = [
            (has(|v| v.is_nan()), "NaN"),
            (has(|v| *v == f32::INFINITY), "+inf"),
            (has(|v| *v == f32::NEG_INFINITY), "-inf"),
        ]
        .into_iter()
        .filter_map(|(present, name)| present.then_some(name))
        .collect();
        return Err(RowError::NonFinite {
            found: found.join(", "),
        });
    }
    if kind == OutputKind::Probabilities {
        let problem = if row.iter().any(|&v| v < -PROB_TOLERANCE) {
            Some("a value below 0")
        } else if row.iter().any(|&v| v > 1.0 + PROB_TOLERANCE) {
            Some("a value above 1")
        } else {
            let sum: f64 = row.iter().map(|&v| f64::from(v)).sum();
            if sum > 1.0 + f64::from(PROB_TOLERANCE) {
                Some("the values sum to more than 1")
            } else if sum < 1.0 - f64::from(PROB_TOLERANCE) {
                Some("the values sum to less than 1")
            } else {
                None
            }
        };
        if let Some(problem) = problem {
            return Err(RowError::NotProbabilities { problem });
        }
    }
    Ok(())
}

/// [`check_row`], then [`decode_row`].
pub fn try_decode_row(row: &[f32], kind: OutputKind, k: usize) -> Result<Prediction, RowError> {
    check_row(row, kind)?;
    Ok(decode_row(row, kind, k))
}

/// The top-k classes of one image, best first, in the **model's** class space, with probabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// Class indices, best first.
    pub top: Vec<usize>,
    /// Their probabilities (softmax of logits, or the output as is), same order.
    pub prob: Vec<f32>,
}

/// Decodes one output row: the `k` best classes (ties broken by lower index) with probabilities.
/// Softmax is computed in f64 with the maximum subtracted, so large logits do not overflow.
/// Non-finite scores rank last (callers that score rows check them first: [`try_decode_row`]).
pub fn decode_row(row: &[f32], kind: OutputKind, k: usize) -> Prediction {
    let key = |v: f32| if v.is_finite() { v } else { f32::NEG_INFINITY };
    let mut idx: Vec<usize> = (0..row.len()).collect();
    let k = k.min(row.len());
    let cmp = |a: &usize, b: &usize| key(row[*b]).total_cmp(&key(row[*a])).then(a.cmp(b));
    if k < row.len() && k > 0 {
        idx.select_nth_unstable_by(k - 1, cmp);
    }
    idx.truncate(k);
    idx.sort_by(cmp);
    let prob = match kind {
        OutputKind::Probabilities => idx.iter().map(|&i| row[i]).collect(),
        OutputKind::Logits => {
            let max = row
                .iter()
                .copied()
                .map(key)
                .fold(f32::NEG_INFINITY, f32::max);
            let denom: f64 = row
                .iter()
                .map(|&v| (f64::from(key(v)) - f64::from(max)).exp())
                .sum();
            idx.iter()
                .map(|&i| ((f64::from(key(row[i])) - f64::from(max)).exp() / denom) as f32)
                .collect()
        }
    };
    Prediction { top: idx, prob }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_with_softmax() {
        let p = decode_row(&[1.0, 3.0, 2.0, 3.0], OutputKind::Logits, 3);
        assert_eq!(p.top, vec![1, 3, 2]);
        let e = [1f64.exp(), 3f64.exp(), 2f64.exp(), 3f64.exp()];
        let s: f64 = e.iter().sum();
        assert!((f64::from(p.prob[0]) - e[1] / s).abs() < 1e-6);
        assert!((f64::from(p.prob[2]) - e[2] / s).abs() < 1e-6);
    }

    #[test]
    fn large_logits_and_nan_are_safe() {
        let p = decode_row(&[1000.0, f32::NAN, 999.0], OutputKind::Logits, 5);
        assert_eq!(p.top, vec![0, 2, 1]);
        assert!(p.prob.iter().all(|v| v.is_finite()));
        assert!((p.prob[0] + p.prob[1] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn non_finite_rows_are_refused_naming_what_was_found() {
        for kind in [OutputKind::Logits, OutputKind::Probabilities] {
            let e = try_decode_row(&[0.2, f32::NAN, 0.8], kind, 2).unwrap_err();
            assert_eq!(
                e.to_string(),
                "the model's output holds NaN/inf (NaN); check that the model description's \
                 `[preprocess]` normalises the input as the model was trained \
                 (docs/model-description.md#preprocess), then the model alone on a clean image \
                 (`python3 scripts/check_model.py --model MODEL.onnx IMAGE`, with \
                 EfficientNet-Lite0's preprocessing)"
            );
            let e = check_row(&[f32::NEG_INFINITY, 1.0, f32::INFINITY, f32::NAN], kind);
            assert!(
                matches!(&e, Err(RowError::NonFinite { found }) if found == "NaN, +inf, -inf"),
                "{e:?}"
            );
        }
        assert!(check_row(&[-1e30, 3e38, 0.0], OutputKind::Logits).is_ok());
    }

    #[test]
    fn probabilities_must_be_a_distribution() {
        let ok = |row: &[f32]| check_row(row, OutputKind::Probabilities);
        assert!(ok(&[0.1, 0.7, 0.2]).is_ok());
        assert!(ok(&[1.0, 0.0, 0.0]).is_ok());
        // Within the tolerance: f32/fp16 rounding.
        assert!(ok(&[0.3004, 0.7, 0.0]).is_ok());
        assert!(ok(&[1.0005, -0.0004, 0.0]).is_ok());
        for (row, problem) in [
            (&[2.0f32, -1.5, 0.5][..], "a value below 0"),
            (&[1.5, 0.0, 0.0][..], "a value above 1"),
            (&[0.9, 0.9, 0.9][..], "the values sum to more than 1"),
            (&[0.1, 0.1, 0.1][..], "the values sum to less than 1"),
            (&[0.3015, 0.7, 0.0][..], "the values sum to more than 1"),
        ] {
            let e = ok(row).unwrap_err();
            assert_eq!(e, RowError::NotProbabilities { problem }, "{row:?}");
            let text = e.to_string();
            assert!(
                text.contains(problem) && text.contains("kind = \"logits\""),
                "{text}"
            );
        }
        // Logits are not held to it.
        assert!(check_row(&[2.0, -1.5, 0.5], OutputKind::Logits).is_ok());
    }

    #[test]
    fn probabilities_pass_through() {
        let p = decode_row(&[0.1, 0.7, 0.2], OutputKind::Probabilities, 2);
        assert_eq!(p.top, vec![1, 2]);
        assert_eq!(p.prob, vec![0.7, 0.2]);
    }
}
