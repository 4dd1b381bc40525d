//! Accuracy helpers: confidence intervals for a proportion of correct predictions.

/// The z value of a two-sided 95% normal interval (the 0.975 quantile of the standard normal).
pub const Z95: f64 = 1.959963984540054;

/// Wilson score interval for a binomial proportion: `successes` out of `n` trials, at normal
/// quantile `z` (use [`Z95`] for 95%). Returns `(low, high)` as fractions in `[0, 1]`.
///
/// Formula (Wilson 1927; Newcombe 1998, method 3): with `p = successes / n`,
/// `centre = (p + z²/2n) / (1 + z²/n)` and
/// `half = z / (1 + z²/n) · sqrt(p(1 − p)/n + z²/4n²)`; the interval is `centre ± half`.
/// The bounds are exact at the edges: `low = 0` when `successes = 0`, `high = 1` when
/// `successes = n`. `n = 0` gives the uninformative `(0, 1)`; `successes > n` is clamped to `n`.
///
/// ```
/// use robustream::metrics::accuracy::{Z95, wilson_interval};
/// let (lo, hi) = wilson_interval(5, 10, Z95);
/// assert!((lo - 0.2366).abs() < 1e-4 && (hi - 0.7634).abs() < 1e-4);
/// ```
pub fn wilson_interval(successes: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let s = successes.min(n);
    let nf = n as f64;
    let p = s as f64 / nf;
    let z2 = z * z;
    let denom = 1.0 + z2 / nf;
    let centre = (p + z2 / (2.0 * nf)) / denom;
    let half = z / denom * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt();
    let low = if s == 0 {
        0.0
    } else {
        (centre - half).clamp(0.0, 1.0)
    };
    let high = if s == n {
        1.0
    } else {
        (centre + half).clamp(0.0, 1.0)
    };
    (low, high)
}

/// `part / whole` as a fraction, or `None` when `whole` is 0 (undefined).
pub(crate) fn fraction(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Newcombe's hybrid score interval for the difference of two independent proportions,
/// `r1/n1 − r2/n2` (Newcombe 1998, "Interval estimation for the difference between independent
/// proportions: comparison of eleven methods", Stat Med 17:873–890, method 10;
/// docs/compare.md#unpaired-interval): the square-and-add of the two Wilson intervals. `None`
/// when either side has no trials.
pub(crate) fn newcombe_unpaired(r1: u64, n1: u64, r2: u64, n2: u64, z: f64) -> Option<(f64, f64)> {
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let (p1, p2) = (r1.min(n1) as f64 / n1 as f64, r2.min(n2) as f64 / n2 as f64);
    let (l1, u1) = wilson_interval(r1, n1, z);
    let (l2, u2) = wilson_interval(r2, n2, z);
    let theta = p1 - p2;
    let low = theta - ((p1 - l1).powi(2) + (u2 - p2).powi(2)).sqrt();
    let high = theta + ((u1 - p1).powi(2) + (p2 - l2).powi(2)).sqrt();
    Some((low.max(-1.0), high.min(1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: (f64, f64), b: (f64, f64), tol: f64) -> bool {
        (a.0 - b.0).abs() < tol && (a.1 - b.1).abs() < tol
    }

    #[test]
    fn wilson_known_values() {
        assert_eq!(wilson_interval(0, 10, Z95).0, 0.0);
        assert!(close(wilson_interval(0, 10, Z95), (0.0, 0.27753), 1e-5));
        assert!(close(wilson_interval(10, 10, Z95), (0.72247, 1.0), 1e-5));
        assert_eq!(wilson_interval(10, 10, Z95).1, 1.0);
        assert!(close(wilson_interval(5, 10, Z95), (0.2366, 0.7634), 1e-4));
        // Textbook example: 81 successes in 263 trials → 95% Wilson interval (0.2553, 0.3662).
        assert!(close(wilson_interval(81, 263, Z95), (0.2553, 0.3662), 1e-4));
        assert!(close(wilson_interval(1, 1, Z95), (0.20655, 1.0), 1e-5));
    }

    #[test]
    fn wilson_is_symmetric_and_contains_p() {
        for (s, n) in [(3u64, 4u64), (7, 9), (1, 100), (50, 100)] {
            let (lo, hi) = wilson_interval(s, n, Z95);
            let (lo2, hi2) = wilson_interval(n - s, n, Z95);
            assert!((lo - (1.0 - hi2)).abs() < 1e-12 && (hi - (1.0 - lo2)).abs() < 1e-12);
            let p = s as f64 / n as f64;
            assert!(lo <= p && p <= hi);
        }
    }

    #[test]
    fn wilson_edge_cases() {
        assert_eq!(wilson_interval(0, 0, Z95), (0.0, 1.0));
        assert_eq!(wilson_interval(12, 10, Z95), wilson_interval(10, 10, Z95));
        // A wider z gives a wider interval.
        let (a, b) = wilson_interval(5, 10, Z95);
        let (c, d) = wilson_interval(5, 10, 2.575829);
        assert!(c < a && d > b);
    }

    #[test]
    fn fraction_of_zero_is_undefined() {
        assert_eq!(fraction(1, 0), None);
        assert_eq!(fraction(1, 4), Some(0.25));
        assert_eq!(fraction(0, 3), Some(0.0));
    }
}
