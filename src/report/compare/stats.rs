//! The statistics of `robustream compare` (docs/compare.md#statistics): the exact McNemar test on
//! paired right/wrong outcomes, and Newcombe's score-based intervals for a difference of two
//! proportions, paired and independent.

/// Newcombe's unpaired interval lives with the Wilson interval it is made of (the groups family's
/// gaps use it too, docs/groups.md#gap).
pub(crate) use crate::metrics::accuracy::newcombe_unpaired;
use crate::metrics::accuracy::{Z95, wilson_interval};

/// The 2 × 2 table of paired outcomes of one scenario: each labelled frame seen by both runs is
/// right or wrong under the baseline (A) and under the candidate (B).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PairedCounts {
    /// Right in both runs.
    pub(crate) both: u64,
    /// Right in the baseline only (the candidate lost it): McNemar's *b*.
    pub(crate) baseline_only: u64,
    /// Right in the candidate only (the candidate gained it): McNemar's *c*.
    pub(crate) candidate_only: u64,
    /// Wrong in both runs.
    pub(crate) neither: u64,
}

impl PairedCounts {
    /// Adds one pair.
    pub(crate) fn add(&mut self, a_right: bool, b_right: bool) {
        match (a_right, b_right) {
            (true, true) => self.both += 1,
            (true, false) => self.baseline_only += 1,
            (false, true) => self.candidate_only += 1,
            (false, false) => self.neither += 1,
        }
    }

    /// Pairs in all.
    pub(crate) fn n(&self) -> u64 {
        self.both + self.baseline_only + self.candidate_only + self.neither
    }

    /// The baseline's accuracy over the pairs; `None` without pairs.
    pub(crate) fn a(&self) -> Option<f64> {
        frac(self.both + self.baseline_only, self.n())
    }

    /// The candidate's accuracy over the pairs; `None` without pairs.
    pub(crate) fn b(&self) -> Option<f64> {
        frac(self.both + self.candidate_only, self.n())
    }

    /// The difference candidate − baseline, `(c − b) / n`; `None` without pairs.
    #[cfg(test)]
    fn diff(&self) -> Option<f64> {
        let n = self.n();
        (n > 0).then(|| (self.candidate_only as f64 - self.baseline_only as f64) / n as f64)
    }
}

fn frac(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// The exact (conditional) McNemar test of McNemar (1947), as statsmodels' `mcnemar(exact=True)`:
/// given the discordant pairs `b` and `c`, the two-sided binomial test of `b` out of `b + c` at ½,
/// `p = min(1, 2·P(X ≤ min(b, c)))` with `X ~ Bin(b + c, ½)` (docs/compare.md#exact-mcnemar-test).
/// No discordant pair gives 1. Up to 53 discordant pairs the tail is summed in exact integers;
/// beyond, in log space from its largest term, so 100 000 discordant pairs cost 50 000 steps and
/// no term underflows to a wrong 0.
pub(crate) fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    let k = b.min(c);
    if n == 0 || 2 * k >= n {
        return 1.0;
    }
    // Up to 53 pairs, Σ C(n, i) is an integer below 2^53: exact in f64, as is 2^n.
    if n <= 53 {
        let (mut term, mut sum) = (1u64, 0u64);
        for i in 0..=k {
            sum += term;
            term = term * (n - i) / (i + 1);
        }
        return (2.0 * sum as f64 / 2f64.powi(n as i32)).min(1.0);
    }
    // log C(n, i) − n·ln 2 for i = 0..=k, by the ratio C(n, i+1) / C(n, i) = (n − i) / (i + 1).
    let mut logs = Vec::with_capacity(k as usize + 1);
    let mut l = -(n as f64) * std::f64::consts::LN_2;
    logs.push(l);
    for i in 0..k {
        l += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
        logs.push(l);
    }
    // The terms grow with i below n / 2: the last is the largest.
    let top = l;
    let sum: f64 = logs.iter().map(|x| (x - top).exp()).sum();
    (2.0 * (top + sum.ln()).exp()).min(1.0)
}

/// Newcombe's interval for the difference of two paired proportions, candidate − baseline
/// (Newcombe 1998, "Improved confidence intervals for the difference between binomial proportions
/// based on paired data", Stat Med 17:2635–2650, method 10; docs/compare.md#paired-interval): the
/// Wilson intervals of both accuracies combined with the correlation φ of the pairs, φ's numerator
/// `ad − bc` reduced by `n/2` when positive (0 when that crosses 0), φ = 0 when a margin is empty.
/// `z` is the normal quantile ([`Z95`] for 95 %). `None` without pairs.
pub(crate) fn newcombe_paired(t: &PairedCounts, z: f64) -> Option<(f64, f64)> {
    let n = t.n();
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    // First proportion: the candidate's; second: the baseline's.
    let (r1, r2) = (t.both + t.candidate_only, t.both + t.baseline_only);
    let (p1, p2) = (r1 as f64 / nf, r2 as f64 / nf);
    let (l1, u1) = wilson_interval(r1, n, z);
    let (l2, u2) = wilson_interval(r2, n, z);
    let margins = [r1, n - r1, r2, n - r2];
    let phi = if margins.contains(&0) {
        0.0
    } else {
        let product: f64 = margins.iter().map(|&m| m as f64).product();
        let a = t.both as f64 * t.neither as f64 - t.candidate_only as f64 * t.baseline_only as f64;
        let a = if a > nf / 2.0 {
            a - nf / 2.0
        } else if a >= 0.0 {
            0.0
        } else {
            a
        };
        a / product.sqrt()
    };
    let theta = p1 - p2;
    let (d1, d2) = (p1 - l1, u2 - p2);
    let (e1, e2) = (u1 - p1, p2 - l2);
    let low = theta - (d1 * d1 + d2 * d2 - 2.0 * phi * d1 * d2).max(0.0).sqrt();
    let high = theta + (e1 * e1 + e2 * e2 - 2.0 * phi * e1 * e2).max(0.0).sqrt();
    Some((low.max(-1.0), high.min(1.0)))
}

/// The two-sided normal quantile of `alpha`: `z` with `P(|Z| > z) = alpha` (1.96 for 0.05), found by
/// bisection on the normal tail; [`Z95`] itself for 0.05. `alpha` is clamped to [1e-12, 1).
pub(crate) fn z_two_sided(alpha: f64) -> f64 {
    if (alpha - 0.05).abs() < 1e-15 {
        return Z95;
    }
    let alpha = alpha.clamp(1e-12, 1.0 - 1e-12);
    let (mut lo, mut hi) = (0.0_f64, 10.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        // P(|Z| > mid) = erfc(mid / √2).
        if erfc(mid / std::f64::consts::SQRT_2) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The complementary error function, by the Chebyshev fit of Numerical Recipes (`erfcc`, fractional
/// error below 1.2e-7 everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// statsmodels `mcnemar([[a, b], [c, d]], exact=True).pvalue`, the first value quoted in the
    /// issue; the others computed exactly with Python's integers (`2·Σ C(n, i) / 2ⁿ`).
    #[test]
    fn mcnemar_matches_statsmodels_and_exact_sums() {
        assert_eq!(mcnemar_exact(1, 9), 0.021484375);
        assert_eq!(mcnemar_exact(9, 1), 0.021484375);
        assert!(close(mcnemar_exact(0, 5), 0.0625, 1e-15));
        assert!(close(mcnemar_exact(2, 0), 0.5, 1e-15));
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(5, 6), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert!(close(mcnemar_exact(10, 20), 0.09873714670538902, 1e-13));
        assert!(close(mcnemar_exact(240, 300), 0.011050481081930009, 1e-12));
        // 49 000 discordant pairs: relative accuracy kept in the far tail.
        let p = mcnemar_exact(24_000, 25_000);
        assert!(
            close(p / 6.386559475966387e-06, 1.0, 1e-8),
            "{p} vs 6.386559475966387e-06"
        );
        // 2^-42000 is far below f64's range; the log-space sum is not.
        let p = mcnemar_exact(20_000, 22_000);
        assert!(
            close(p / 1.7397326402141055e-22, 1.0, 1e-8),
            "{p} vs 1.7397326402141055e-22"
        );
    }

    /// Fagerland, Lydersen & Laake (2017), Statistical Analysis of Contingency Tables, ch. 8: the
    /// Cavo et al. (2012) table [[59, 6], [16, 80]] gives Newcombe's square-and-add interval
    /// −0.1186 to −0.0046 for an estimate of −0.0621 (R package contingencytables,
    /// `Newcombe_square_and_add_CI_paired_2x2`, the book's worked example).
    #[test]
    fn paired_interval_matches_the_published_example() {
        // Rows: the first measurement (here the candidate), columns: the second (the baseline).
        let t = PairedCounts {
            both: 59,
            candidate_only: 6,
            baseline_only: 16,
            neither: 80,
        };
        assert!(close(t.diff().unwrap(), -0.0621, 5e-5));
        let (lo, hi) = newcombe_paired(&t, Z95).unwrap();
        assert!(close(lo, -0.1186, 5e-5), "{lo}");
        assert!(close(hi, -0.0046, 5e-5), "{hi}");
        // Swapping the runs mirrors the interval.
        let s = PairedCounts {
            candidate_only: 16,
            baseline_only: 6,
            ..t
        };
        let (lo2, hi2) = newcombe_paired(&s, Z95).unwrap();
        assert!(close(lo2, -hi, 1e-12) && close(hi2, -lo, 1e-12));
    }

    #[test]
    fn paired_interval_of_identical_runs_holds_zero() {
        let t = PairedCounts {
            both: 7,
            neither: 3,
            ..Default::default()
        };
        assert_eq!(t.diff(), Some(0.0));
        let (lo, hi) = newcombe_paired(&t, Z95).unwrap();
        assert!(lo < 0.0 && hi > 0.0, "{lo} {hi}");
        // All right in both: a margin is empty, φ = 0, the interval still holds 0.
        let all = PairedCounts {
            both: 9,
            ..Default::default()
        };
        let (lo, hi) = newcombe_paired(&all, Z95).unwrap();
        assert!(lo < 0.0 && hi > 0.0 && lo >= -1.0 && hi <= 1.0);
        assert_eq!(newcombe_paired(&PairedCounts::default(), Z95), None);
    }

    /// Newcombe (1998, independent proportions), Table II, method 10: 56/70 − 48/80 →
    /// 0.0524 to 0.3339; 9/10 − 3/10 → 0.1705 to 0.8090.
    #[test]
    fn unpaired_interval_matches_newcombe_table_ii() {
        let (lo, hi) = newcombe_unpaired(56, 70, 48, 80, Z95).unwrap();
        assert!(
            close(lo, 0.0524, 5e-5) && close(hi, 0.3339, 5e-5),
            "{lo} {hi}"
        );
        let (lo, hi) = newcombe_unpaired(9, 10, 3, 10, Z95).unwrap();
        assert!(
            close(lo, 0.1705, 5e-5) && close(hi, 0.8090, 5e-5),
            "{lo} {hi}"
        );
        assert_eq!(newcombe_unpaired(1, 0, 1, 2, Z95), None);
    }

    #[test]
    fn normal_quantiles() {
        assert_eq!(z_two_sided(0.05), Z95);
        assert!(close(z_two_sided(0.050000001), Z95, 1e-6));
        assert!(close(z_two_sided(0.01), 2.5758293035489, 1e-6));
        assert!(close(z_two_sided(0.1), 1.6448536269515, 1e-6));
        assert!(close(z_two_sided(0.3173105078629), 1.0, 1e-6));
    }
}
