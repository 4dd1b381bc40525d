//! Standard normal deviates for the per-element noise corruptions, two per 64-bit draw.
//!
//! `gaussian_noise` and `speckle_noise` need one N(0, 1) deviate per pixel and channel; with
//! `rand_distr::StandardNormal` (a 256-layer ziggurat on one 64-bit draw per deviate) the draw and the
//! float conversion were most of the kernel. Their outputs are truncated to 8 bits after scaling by
//! σ ≤ 0.6, so a deviate needs far fewer than 53 random bits: here each 32-bit half of a xoshiro draw is
//! one ziggurat candidate — 7 bits pick one of 128 layers, the other 25 are a signed position in it — so
//! one 64-bit draw usually yields two deviates. The layout is Marsaglia & Tsang's 128-layer ziggurat
//! ("The Ziggurat Method for Generating Random Variables", J. Stat. Softw. 5(8), 2000: the RNOR tables
//! and its fix-up for the base strip's tail and the wedges), except that the layer index and the position
//! come from disjoint bits (in the paper they overlap, which correlates them). A candidate is accepted
//! outright in about 97.2 % of cases; the rest take the exact slow path, drawing further values from the
//! same stream, so a row's deviates are still a pure function of its keyed stream.
//!
//! ImageNet-C draws with numpy's `np.random.normal`; its stream is not reproduced
//! (docs/imagenet-c.md#randomness-and-external-inputs), the distribution is: the tests check
//! moments, tail masses and the Kolmogorov–Smirnov distance to Φ on millions of deviates.

use std::sync::OnceLock;

use rand::Rng;

use crate::rng::ScenarioRng;

/// Layers of the ziggurat.
const LAYERS: usize = 128;

/// Right edge of the base strip's rectangle part, `r` (Marsaglia & Tsang's `dn` for 128 layers).
const R: f64 = 3.442_619_855_899;

/// Area of each layer (`vn` for 128 layers).
const AREA: f64 = 9.912_563_035_262_17e-3;

/// Positions are signed 25-bit integers: |j| < 2²⁴.
const SCALE: f64 = 16_777_216.0;

/// The ziggurat's tables (see [`Ziggurat::get`]).
#[derive(Debug)]
pub(crate) struct Ziggurat {
    /// `|j| < k[i]`: the candidate lies inside layer `i`'s inner rectangle (accept `j·w[i]`).
    k: [u32; LAYERS],
    /// Position scale of layer `i`: `x = j·w[i]`.
    w: [f64; LAYERS],
    /// `f[i] = exp(−x_i²/2)` at the layer's right edge.
    f: [f64; LAYERS],
}

impl Ziggurat {
    /// The tables, built once per process (Marsaglia & Tsang's `zigset` with 2²⁴ in place of 2³¹).
    pub(crate) fn get() -> &'static Ziggurat {
        static TABLES: OnceLock<Ziggurat> = OnceLock::new();
        TABLES.get_or_init(|| {
            let mut k = [0u32; LAYERS];
            let mut w = [0.0; LAYERS];
            let mut f = [0.0; LAYERS];
            let mut dn = R;
            let mut tn = dn;
            let q = AREA / (-0.5 * dn * dn).exp();
            k[0] = (dn / q * SCALE) as u32;
            k[1] = 0;
            w[0] = q / SCALE;
            w[LAYERS - 1] = dn / SCALE;
            f[0] = 1.0;
            f[LAYERS - 1] = (-0.5 * dn * dn).exp();
            for i in (1..LAYERS - 1).rev() {
                dn = (-2.0 * (AREA / dn + (-0.5 * dn * dn).exp()).ln()).sqrt();
                k[i + 1] = (dn / tn * SCALE) as u32;
                tn = dn;
                f[i] = (-0.5 * dn * dn).exp();
                w[i] = dn / SCALE;
            }
            Ziggurat { k, w, f }
        })
    }

    /// One N(0, 1) deviate from the 32-bit candidate `bits`, drawing from `rng` only when the candidate
    /// falls outside its layer's inner rectangle (about 2.8 % of candidates).
    #[inline(always)]
    fn deviate(&self, bits: u32, rng: &mut ScenarioRng) -> f64 {
        let i = (bits & (LAYERS as u32 - 1)) as usize;
        let j = (bits as i32) >> 7;
        if j.unsigned_abs() < self.k[i] {
            f64::from(j) * self.w[i]
        } else {
            self.fix_up(j, i, rng)
        }
    }

    /// Two deviates from one 64-bit draw (low half first).
    #[inline(always)]
    pub(crate) fn pair(&self, rng: &mut ScenarioRng) -> (f64, f64) {
        let bits = rng.next_u64();
        let a = self.deviate(bits as u32, rng);
        let b = self.deviate((bits >> 32) as u32, rng);
        (a, b)
    }

    /// The exact slow path (RNOR's `nfix`): the base strip's tail beyond `r` (Marsaglia's exponential
    /// rejection), a wedge test against the density, or a fresh candidate.
    #[cold]
    fn fix_up(&self, mut j: i32, mut i: usize, rng: &mut ScenarioRng) -> f64 {
        loop {
            let x = f64::from(j) * self.w[i];
            if i == 0 {
                // Tail: x = −ln(u₁)/r, y = −ln(u₂), accepted when 2y > x².
                loop {
                    let x = -open01(rng).ln() / R;
                    let y = -open01(rng).ln();
                    if y + y > x * x {
                        return if j > 0 { R + x } else { -R - x };
                    }
                }
            }
            if self.f[i] + open01(rng) * (self.f[i - 1] - self.f[i]) < (-0.5 * x * x).exp() {
                return x;
            }
            let bits = rng.next_u32();
            i = (bits & (LAYERS as u32 - 1)) as usize;
            j = (bits as i32) >> 7;
            if j.unsigned_abs() < self.k[i] {
                return f64::from(j) * self.w[i];
            }
        }
    }
}

/// A uniform value in the open interval (0, 1) from 53 random bits.
fn open01(rng: &mut ScenarioRng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / 9_007_199_254_740_992.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngKey;

    /// `n` deviates, pairs from stream 0 of a fixed key.
    fn deviates(n: usize, key: u64) -> Vec<f64> {
        let z = Ziggurat::get();
        let mut r = RngKey(key).stream(0);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let (a, b) = z.pair(&mut r);
            out.push(a);
            out.push(b);
        }
        out.truncate(n);
        out
    }

    /// Standard normal CDF.
    fn phi(x: f64) -> f64 {
        0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
    }

    #[test]
    fn tables_are_marsaglia_tsangs() {
        let z = Ziggurat::get();
        // The layers shrink towards the peak; the top layer's inner rectangle is empty.
        assert_eq!(z.k[1], 0);
        assert!(z.w.windows(2).skip(1).all(|p| p[1] > p[0]));
        assert!(z.f.windows(2).all(|p| p[1] < p[0]));
        // The last recursion lands next to the peak (x₁ ≈ 0.2723 for 128 layers).
        let x1 = z.w[1] * SCALE;
        assert!((x1 - 0.2723).abs() < 1e-3, "x1 = {x1}");
        // The 128 equal-area layers cover the half density, whose area is √(π/2), with little to spare.
        let covered = LAYERS as f64 * AREA;
        let half = (std::f64::consts::PI / 2.0).sqrt();
        assert!(
            covered > half && covered < half * 1.013,
            "{covered} against {half}"
        );
        // Inner rectangles accept about 97.2 % of candidates (the top layer's is empty: 1/128 alone).
        let accepted: f64 =
            (0..LAYERS).map(|i| f64::from(z.k[i]) / SCALE).sum::<f64>() / LAYERS as f64;
        assert!(
            accepted > 0.97 && accepted < 1.0 - 1.0 / 128.0,
            "accepted {accepted}"
        );
    }

    #[test]
    fn moments_and_tails_are_standard_normal() {
        let n = 4_000_000;
        let z = deviates(n, 11);
        let nf = n as f64;
        let mean = z.iter().sum::<f64>() / nf;
        let var = z.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / nf;
        let kurt = z.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / nf / (var * var);
        let skew = z.iter().map(|x| (x - mean).powi(3)).sum::<f64>() / nf / var.powf(1.5);
        // Standard errors at n = 4e6: mean 5e-4, variance 7e-4, skewness 1.2e-3, kurtosis 2.4e-3.
        assert!(mean.abs() < 2.5e-3, "mean {mean}");
        assert!((var - 1.0).abs() < 3.5e-3, "variance {var}");
        assert!(skew.abs() < 6e-3, "skewness {skew}");
        assert!((kurt - 3.0).abs() < 0.012, "kurtosis {kurt}");
        // Tail masses, within five binomial standard deviations: beyond r (the base strip's tail),
        // beyond 4 and inside ±1.
        for (edge, inside) in [(R, false), (4.0, false), (1.0, true)] {
            let p = if inside {
                1.0 - 2.0 * phi(-edge)
            } else {
                2.0 * phi(-edge)
            };
            let count = z.iter().filter(|x| (x.abs() < edge) == inside).count() as f64;
            let sd = (nf * p * (1.0 - p)).sqrt();
            assert!(
                (count - nf * p).abs() < 5.0 * sd,
                "|z| {} {edge}: {count} against {}",
                if inside { "<" } else { ">" },
                nf * p
            );
        }
    }

    #[test]
    fn kolmogorov_smirnov_distance_to_phi_is_small() {
        // D·√n stays below 1.95 with probability 0.999 for a correct sampler. (Misplaced mass in the
        // wedges or the tail is too little to move D much: the moment and tail tests catch those —
        // accepting every wedge candidate fails the variance, every tail candidate the tail shape.)
        let n = 1_000_000;
        let mut z = deviates(n, 12);
        z.sort_by(f64::total_cmp);
        let d = z
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let c = phi(x);
                (c - i as f64 / n as f64).max((i + 1) as f64 / n as f64 - c)
            })
            .fold(0.0, f64::max);
        assert!(d * (n as f64).sqrt() < 1.95, "D = {d}");
    }

    #[test]
    fn the_tail_beyond_r_has_the_right_shape() {
        // Conditional on |z| > r the excess is r-shifted normal tail: P(|z| > r + 0.5 | |z| > r).
        let z = deviates(4_000_000, 13);
        let tail: Vec<f64> = z.iter().map(|x| x.abs()).filter(|&x| x > R).collect();
        let beyond = tail.iter().filter(|&&x| x > R + 0.5).count() as f64 / tail.len() as f64;
        let want = phi(-(R + 0.5)) / phi(-R);
        let sd = (want * (1.0 - want) / tail.len() as f64).sqrt();
        assert!((beyond - want).abs() < 5.0 * sd, "{beyond} against {want}");
    }

    #[test]
    fn a_stream_gives_the_same_deviates_every_time() {
        assert_eq!(deviates(1000, 5), deviates(1000, 5));
        assert_ne!(deviates(1000, 5), deviates(1000, 6));
    }
}
