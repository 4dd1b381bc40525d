//! Noise corruptions (docs/imagenet-c.md#the-19-corruptions): gaussian, shot (Poisson), impulse
//! (salt & pepper) and speckle noise, each drawn independently per pixel **and** channel.
//!
//! All four are size-independent. Rows are processed in parallel; row `y` always draws from the keyed
//! sub-stream `rng.stream(y)` (in pixel order, R, G, B), so an output depends only on the key and the
//! image, never on the thread count or on how rows are grouped into tasks. numpy's exact streams are not
//! reproduced (docs/imagenet-c.md#randomness-and-external-inputs); the distributions are.

use std::sync::OnceLock;

use image::RgbImage;
use rand::RngExt;
use rand_distr::{Distribution, Poisson};

use crate::kernels::lanes::{self, floor8_unit};
use crate::kernels::rowrng;
use crate::kernels::ziggurat::Ziggurat;
use crate::rng::{RngKey, ScenarioRng};

/// Noise standard deviation σ per severity 1..5 on the [0, 1] scale
/// (docs/imagenet-c.md#gaussian_noise).
pub(crate) const GAUSSIAN_SIGMA: [f64; 5] = [0.08, 0.12, 0.18, 0.26, 0.38];

/// Photon count c per severity 1..5: the pixel value x ∈ [0, 1] becomes Poisson(x·c)/c
/// (docs/imagenet-c.md#shot_noise).
pub(crate) const SHOT_PHOTONS: [f64; 5] = [60.0, 25.0, 12.0, 5.0, 3.0];

/// Fraction of elements (pixel × channel) replaced by salt or pepper per severity 1..5
/// (docs/imagenet-c.md#impulse_noise).
pub(crate) const IMPULSE_AMOUNT: [f64; 5] = [0.03, 0.06, 0.09, 0.17, 0.27];

/// Multiplicative noise standard deviation σ per severity 1..5 (docs/imagenet-c.md#speckle_noise).
pub(crate) const SPECKLE_SIGMA: [f64; 5] = [0.15, 0.20, 0.35, 0.45, 0.60];

/// Elements (pixel × channel) per rayon task: below about this much work a task costs more than it saves.
const ELEMENTS_PER_TASK: usize = 16_384;

/// Applies `f(value, rng)` to every element, row `y` drawing from `rng.stream(y)` in element order.
/// Within a task four rows advance their streams in lockstep ([`rowrng::for_each_row_element`]); neither
/// that nor the grouping into tasks of about [`ELEMENTS_PER_TASK`] elements ([`lanes::map_row_tasks`]) changes
/// the result.
fn per_element<F>(image: &RgbImage, rng: RngKey, f: F) -> RgbImage
where
    F: Fn(u8, &mut ScenarioRng) -> u8 + Sync,
{
    lanes::map_row_tasks(image, ELEMENTS_PER_TASK, |first, row_len, rows| {
        rowrng::for_each_row_element(rows, row_len, rng, first, |r, v| *v = f(*v, r));
    })
}

/// `f(value, z)` for every element with `z` a standard normal deviate, row `y` drawing from
/// `rng.stream(y)`: two deviates per 64-bit draw ([`Ziggurat::pair`], elements in order; rows grouped
/// into tasks by [`lanes::map_row_tasks`]).
fn per_element_normal<F>(image: &RgbImage, rng: RngKey, f: F) -> RgbImage
where
    F: Fn(u8, f64) -> u8 + Sync,
{
    let zig = Ziggurat::get();
    lanes::map_row_tasks(image, ELEMENTS_PER_TASK, |first, row_len, rows| {
        for (i, row) in rows.chunks_exact_mut(row_len).enumerate() {
            let mut r = rng.stream(first + i as u64);
            let mut pairs = row.chunks_exact_mut(2);
            for p in &mut pairs {
                let (a, b) = zig.pair(&mut r);
                p[0] = f(p[0], a);
                p[1] = f(p[1], b);
            }
            if let [last] = pairs.into_remainder() {
                *last = f(*last, zig.pair(&mut r).0);
            }
        }
    })
}

/// `x / 255` for every u8 value (numpy's `np.array(img) / 255.`).
fn unit_lut() -> [f64; 256] {
    std::array::from_fn(|v| v as f64 / 255.0)
}

/// ImageNet-C `gaussian_noise`: `out = floor8(clip(x + N(0, σ), 0, 1)·255)`, x on [0, 1], one independent
/// draw per pixel **and** channel (docs/imagenet-c.md#gaussian_noise; identical in
/// imagecorruptions). Size-independent.
///
/// Row `y` draws from the keyed sub-stream `rng.stream(y)`, so the output depends only on the key, never
/// on the thread count. numpy's exact stream is not reproduced
/// (docs/imagenet-c.md#randomness-and-external-inputs); the distribution is (deviates from
/// [`Ziggurat`], two per 64-bit draw).
pub(crate) fn gaussian_noise(image: &RgbImage, sigma: f64, rng: RngKey) -> RgbImage {
    let unit = unit_lut();
    per_element_normal(image, rng, |v, n| {
        lanes::floor8(unit[usize::from(v)] + sigma * n)
    })
}

/// ImageNet-C `shot_noise`: `out = floor8(clip(Poisson(λ = x·c) / c, 0, 1)·255)` with x = value/255 and `c`
/// the photon count ([`SHOT_PHOTONS`]), one independent Poisson draw per pixel **and** channel
/// (docs/imagenet-c.md#shot_noise; identical in imagecorruptions). Size-independent; keyed row
/// streams as [`gaussian_noise`].
///
/// Every count k ≥ c clips to 255, so for each of the 256 input values the output takes at most
/// `⌈c⌉ + 1` levels. [`ShotTable`] holds, per input value, a Walker/Vose alias table of their
/// probabilities (from the Poisson pmf, the tail k ≥ ⌈c⌉ lumped into the last level), and each element
/// is one 64-bit draw: its high half picks a bucket, its low half decides between the bucket's own level
/// and its alias — no loop, no branch to mispredict, instead of a Poisson sampler's several uniforms or
/// a rejection loop. Black (λ = 0) always gives 0, as numpy's `poisson(0)` does. Above
/// [`SHOT_TABLE_MAX_PHOTONS`] (far beyond the table's 60) rand_distr's Poisson sampler is used instead.
/// The tables of the five ImageNet-C photon counts are built once per process; others per call. A
/// non-positive or non-finite `c` leaves the image as `floor8(x)`.
pub(crate) fn shot_noise(image: &RgbImage, c: f64, rng: RngKey) -> RgbImage {
    let unit = unit_lut();
    if !(c > 0.0 && c.is_finite()) {
        return per_element(image, rng, |v, _| floor8_unit(unit[usize::from(v)]));
    }
    let owned;
    let table = match SHOT_PHOTONS.iter().position(|&p| p == c) {
        Some(i) => shot_table(i),
        None => {
            owned = ShotTable::new(c);
            owned.as_ref()
        }
    };
    match table {
        Some(table) => per_element(image, rng, |v, r| table.sample(v, r)),
        None => {
            let samplers: Vec<Option<Poisson<f64>>> =
                unit.iter().map(|&x| Poisson::new(x * c).ok()).collect();
            per_element(image, rng, |v, r| match &samplers[usize::from(v)] {
                Some(p) => floor8_unit(p.sample(r) / c),
                None => 0, // λ = 0
            })
        }
    }
}

/// The [`ShotTable`] of severity index `s` (0..5, photon count `SHOT_PHOTONS[s]`), built once per
/// process; `None` for an index out of range. Shared by the CPU kernel and the GPU recipe
/// (docs/gpu.md#gpu-resident-scenarios), which uploads its entries.
pub(crate) fn shot_table(s: usize) -> Option<&'static ShotTable> {
    static TABLES: [OnceLock<Option<ShotTable>>; 5] = [const { OnceLock::new() }; 5];
    let c = *SHOT_PHOTONS.get(s)?;
    TABLES[s].get_or_init(|| ShotTable::new(c)).as_ref()
}

/// Largest photon count for which [`shot_noise`] builds alias tables: the pmf recurrence starts from
/// e^(−λ) with λ up to c, which must stay well above f64's underflow (e^(−708)); 600 also bounds the
/// tables to 601 buckets per value (1.2 MiB).
const SHOT_TABLE_MAX_PHOTONS: f64 = 600.0;

/// Bits of an alias entry holding the keep threshold (0 ..= 2³²).
const THRESHOLD_MASK: u64 = (1 << 33) - 1;

/// Sampler of `floor8(clip(Poisson(v/255·c) / c, 0, 1)·255)` for every u8 value `v`: per value, an alias
/// table over the `n = ⌈c⌉ + 1` output levels (counts `0, 1, …, ⌈c⌉ − 1` and "`⌈c⌉` or more", all of
/// which clip to 255).
///
/// A draw takes one 64-bit word: bucket `k = ⌊hi32 · n / 2³²⌋` (hi32 = its high 32 bits), then the
/// bucket's own level if `lo32 < threshold_k`, else its alias. Precision: thresholds are exact to
/// 2⁻³³ and the bucket choice is uniform to within n·2⁻³² (relative), so every level's probability is
/// the Poisson one to within about 1e−8 — far below anything a finite sample can detect.
#[derive(Debug, Clone)]
pub(crate) struct ShotTable {
    /// Buckets (= output levels) per value: `⌈c⌉ + 1`.
    levels: usize,
    /// `entries[v·levels + k]`: keep threshold (bits 0..33, out of 2³²), the bucket's own output byte
    /// (bits 40..48) and its alias's output byte (bits 48..56).
    entries: Vec<u64>,
}

impl ShotTable {
    /// Tables for photon count `c`; `None` unless `0 < c ≤` [`SHOT_TABLE_MAX_PHOTONS`].
    fn new(c: f64) -> Option<Self> {
        if !(c > 0.0 && c <= SHOT_TABLE_MAX_PHOTONS) {
            return None;
        }
        let levels = c.ceil() as usize + 1;
        let out: Vec<u8> = (0..levels).map(|k| floor8_unit(k as f64 / c)).collect();
        let mut entries = vec![0u64; 256 * levels];
        for (v, entries) in entries.chunks_exact_mut(levels).enumerate() {
            let (threshold, alias) = alias_table(&shot_pmf(v as f64 / 255.0 * c, levels));
            for (k, e) in entries.iter_mut().enumerate() {
                let t = (threshold[k] * 4_294_967_296.0)
                    .round()
                    .clamp(0.0, 4_294_967_296.0) as u64;
                *e = t | u64::from(out[k]) << 40 | u64::from(out[alias[k]]) << 48;
            }
        }
        Some(Self { levels, entries })
    }

    /// Buckets (= output levels) per input value (docs/gpu.md#gpu-resident-scenarios: the GPU
    /// kernel indexes the same entries).
    pub(crate) fn levels(&self) -> usize {
        self.levels
    }

    /// The entries, `256 × levels` of them, in the layout described at [`ShotTable`]
    /// (docs/gpu.md#gpu-resident-scenarios: uploaded unchanged for the GPU kernel).
    pub(crate) fn entries(&self) -> &[u64] {
        &self.entries
    }

    /// One draw for input value `v`.
    #[inline]
    fn sample(&self, v: u8, r: &mut ScenarioRng) -> u8 {
        let bits: u64 = r.random();
        let k = (((bits >> 32) * self.levels as u64) >> 32) as usize;
        let e = self.entries[usize::from(v) * self.levels + k];
        // Branch-free choice (the outcome is random, so a branch would mispredict often).
        let keep = 0u8.wrapping_sub(u8::from(bits & 0xffff_ffff < e & THRESHOLD_MASK));
        ((e >> 40) as u8 & keep) | ((e >> 48) as u8 & !keep)
    }
}

/// Poisson(λ) probabilities of the counts `0 .. levels − 1`, the last entry holding the whole tail
/// (`1 −` the others, so they sum to 1).
fn shot_pmf(lambda: f64, levels: usize) -> Vec<f64> {
    let mut pmf = vec![0.0; levels];
    let mut p = (-lambda).exp();
    let mut acc = 0.0;
    for (k, slot) in pmf[..levels - 1].iter_mut().enumerate() {
        *slot = p;
        acc += p;
        p *= lambda / (k + 1) as f64;
    }
    pmf[levels - 1] = (1.0 - acc).max(0.0);
    pmf
}

/// Walker's alias table of a distribution (Vose's construction): per bucket the probability of keeping
/// it (else its alias is taken), each bucket being chosen with probability 1/n.
fn alias_table(p: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let n = p.len();
    let mut scaled: Vec<f64> = p.iter().map(|&x| x * n as f64).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&k| scaled[k] < 1.0);
    let mut keep = vec![1.0; n];
    let mut alias: Vec<usize> = (0..n).collect();
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        keep[s] = scaled[s];
        alias[s] = l;
        scaled[l] = (scaled[l] + scaled[s]) - 1.0;
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // Whatever is left holds probability 1/n up to rounding: always kept.
    (keep, alias)
}

/// ImageNet-C `impulse_noise`: scikit-image `random_noise(mode='s&p', amount)` with salt_vs_pepper 0.5
/// (docs/imagenet-c.md#impulse_noise; identical in imagecorruptions): every element (pixel ×
/// channel, independently, hence coloured speckles) is flipped with probability `amount`; a flipped
/// element becomes 1 (salt) or 0 (pepper) with probability ½ each; all others stay x. Then
/// `floor8(clip(·, 0, 1)·255)`, so an untouched value v comes back as `floor8(v/255·255)` (v, or v
/// − 1 where the product lands a hair below v).
///
/// Each element takes one 64-bit draw: its low 32 bits decide the flip (`< amount·2³²`, rounded: the
/// flip probability is `amount` to within 2⁻³³) and bit 32 the salt coin, which the reference draws for
/// every element too (independent, and unused unless flipped: the same joint distribution). The choice
/// is branch-free. Size-independent; keyed row streams as [`gaussian_noise`]. `amount` is clamped to
/// [0, 1].
pub(crate) fn impulse_noise(image: &RgbImage, amount: f64, rng: RngKey) -> RgbImage {
    let amount = if amount.is_nan() {
        0.0
    } else {
        amount.clamp(0.0, 1.0)
    };
    // Flip iff the low word is below this (2³² flips always).
    let threshold = (amount * 4_294_967_296.0).round() as u64;
    let keep: [u8; 256] = unit_lut().map(floor8_unit);
    per_element(image, rng, |v, r| {
        let bits: u64 = r.random();
        let salt = 0u8.wrapping_sub((bits >> 32 & 1) as u8); // 255 or 0
        let flip = 0u8.wrapping_sub(u8::from(bits & 0xffff_ffff < threshold)); // all ones if flipped
        (salt & flip) | (keep[usize::from(v)] & !flip)
    })
}

/// ImageNet-C `speckle_noise`: `out = floor8(clip(x + x·N(0, σ), 0, 1)·255)`, x on [0, 1], one independent
/// draw per pixel **and** channel (docs/imagenet-c.md#speckle_noise; identical in
/// imagecorruptions): noise proportional to the signal, so black stays black. Size-independent;
/// keyed row streams as [`gaussian_noise`].
pub(crate) fn speckle_noise(image: &RgbImage, sigma: f64, rng: RngKey) -> RgbImage {
    let unit = unit_lut();
    per_element_normal(image, rng, |v, z| {
        let x = unit[usize::from(v)];
        lanes::floor8(x + x * (sigma * z))
    })
}

#[cfg(test)]
mod tests;
