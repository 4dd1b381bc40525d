//! Decoding one row of model output into a [`Prediction`]: top-k classes and their probabilities.

use super::model::OutputKind;

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
/// Non-finite scores rank last.
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
    fn probabilities_pass_through() {
        let p = decode_row(&[0.1, 0.7, 0.2], OutputKind::Probabilities, 2);
        assert_eq!(p.top, vec![1, 2]);
        assert_eq!(p.prob, vec![0.7, 0.2]);
    }
}
