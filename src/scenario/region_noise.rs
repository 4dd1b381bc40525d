//! Relative Foreground Sensitivity noise (docs/hard-imagenet.md#relative-foreground-sensitivity,
//! Hard ImageNet `rfs.py`): Gaussian noise added to the object only (`fg`) or to the background
//! only (`bg`), keys `region_noise/<fg|bg>/<linf|l2>/<level>/t<trial>`.
//!
//! * Levels exactly as the reference's grids: `linf` σ ∈ {0.125, 0.25, 0.375, 0.5, 0.625, 0.75} on
//!   the [0, 1] scale (typical 0.25), `l2` ‖δ‖₂ ∈ {30, 60, 90, 120, 150, 180}.
//! * Trials `t1`..`t3` (the reference's `trials = 3`): a fresh noise tensor per trial. Within one
//!   `(norm, level, trial)` the **same** tensor n is used for the `fg` and the `bg` version: both
//!   draw their randomness from [`Scenario::rng_key`] = `region_noise/<norm>/<level>/t<trial>`
//!   (without the region), so `RngKey::new(seed, frame id, rng_key)` is identical for the pair.
//! * Groups: `rfs` (linf 0.25, fg and bg, three trials), `rfs-linf`, `rfs-l2` and `rfs-all` (the
//!   full grids). RFS itself, `(acc_bg − acc_fg) / (2·min(ā, 1 − ā))` over class-balanced
//!   accuracies, is computed from the records by the metrics, not here.
//!
//! # Definitions (docs/hard-imagenet.md#region-noise), on the [0, 1] scale x = v/255
//! * linf: `out = clamp(x + m·n·σ, 0, 1)`.
//! * l2: `out = clamp(x + σ·(m·n)/‖m·n‖₂, 0, 1)`, the norm over the whole 3×H×W masked tensor.
//!
//! m is the region (object pixels = mask > 0, docs/hard-imagenet.md#data-and-preprocessing; its
//! complement for `bg`) on all three channels. At the model's view the mask is Hard ImageNet's:
//! resized bilinearly, then non-zero → object ([`super::ablation::MASK_RESIZE`]).
//!
//! # How we compute it, and where it differs
//! * **Output rounding**: the reference feeds the float result to the model; we must return u8:
//!   `out = ⌊clamp(v + 255·δ, 0, 255) + ½⌋` (nearest, halves up), δ the perturbation on the [0, 1]
//!   scale, evaluated in `f32`. Elements outside the region are copied unchanged.
//! * **Other sizes**: the l2 budget is defined for 224×224 inputs; on an H×W input the budget is
//!   scaled by `√(H·W)/224`, so that a region covering the same fraction of the frame gets the same
//!   per-pixel noise as at 224² (exactly the reference at 224²). linf is size-independent.
//! * **Empty region** (the reference divides by a zero norm and feeds NaN): the scenario reports
//!   [`ScenarioError::Unsuitable`] when the mask has no object pixel or no background pixel, for
//!   both `fg` and `bg`, so the two versions always cover the same frames.
//! * **The normal draws**: `torch.randn`'s stream cannot be reproduced; the distribution is. Each
//!   N(0, 1) value is an inverse-CDF draw on 2¹⁶ levels: a 16-bit uniform index `i` picks
//!   `q_i = Φ⁻¹((i + ½)/2¹⁶)`, the table rescaled so that its variance is exactly 1. It differs from
//!   a continuous normal only in the tails beyond ±4.33 (probability 1.5·10⁻⁵ per element; with
//!   linf σ ≥ 0.25 such values saturate anyway) and by steps below 4·10⁻⁵ near 0 (0.0025 of a u8
//!   step at σ = 0.25). One 64-bit draw gives four elements and each costs one table lookup, with
//!   no rejection test, so a 720p frame takes a few milliseconds on one core (`benches/objects.rs`).
//! * **Order of draws**: row `y` draws from `rng.stream(y)`; element `e = 3x + c` of the row (pixel
//!   x, channel c) takes bits `16·(e mod 4)..` of the row's `⌊e/4⌋`-th 64-bit word. Every element is
//!   drawn whether or not it is in the region, so n does not depend on the mask or the region, and
//!   rows run in parallel with the same result for any thread count. The l2 norm is accumulated as
//!   an exact integer sum of fixed-point squares (2⁻²⁴ steps), so it is independent of the order too.

use std::sync::{Arc, OnceLock};

use image::{GrayImage, RgbImage};
use rand::Rng;
use rayon::prelude::*;

use super::ablation::{MASK_RESIZE, object_mask};
use super::{CatalogEntry, RngKey, Scenario, ScenarioError, ScenarioInput};
use crate::key::ScenarioKey;

/// linf noise levels σ (on the [0, 1] scale) as written in the reference's grid
/// (docs/hard-imagenet.md#region-noise).
const LINF_LEVELS: [&str; 6] = ["0.125", "0.25", "0.375", "0.5", "0.625", "0.75"];
/// l2 noise budgets ‖δ‖₂ (on the [0, 1] scale, for a 3×224×224 input) as in the reference's grid.
const L2_LEVELS: [&str; 6] = ["30", "60", "90", "120", "150", "180"];
/// The reference's default linf level (docs/hard-imagenet.md#region-noise, "typical").
const TYPICAL_LINF: &str = "0.25";
/// Trials per level (the reference's `trials = 3`), keyed `t1`..`t3`.
const TRIALS: u32 = 3;
/// Side of the square input the l2 budgets are defined for.
pub(crate) const REFERENCE_SIDE: f64 = 224.0;

/// Which part of the frame gets the noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Region {
    /// Object pixels (mask > 0), key segment `fg`.
    Foreground,
    /// The other pixels, key segment `bg`.
    Background,
}

/// How the noise is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Norm {
    /// `σ·n` per element, key segment `linf`.
    Linf,
    /// `σ·n/‖m·n‖₂` (whole masked tensor), key segment `l2`.
    L2,
}

impl Norm {
    /// The key segment: `linf` or `l2`.
    fn name(self) -> &'static str {
        match self {
            Norm::Linf => "linf",
            Norm::L2 => "l2",
        }
    }

    /// The reference's levels for this norm, as written in keys.
    pub(crate) fn levels(self) -> &'static [&'static str] {
        match self {
            Norm::Linf => &LINF_LEVELS,
            Norm::L2 => &L2_LEVELS,
        }
    }
}

/// One RFS noise scenario, `region_noise/<fg|bg>/<linf|l2>/<level>/t<trial>`. Needs a foreground
/// mask with both object and background pixels.
#[derive(Debug, Clone)]
pub struct RegionNoise {
    key: String,
    rng_key: String,
    region: Region,
    norm: Norm,
    sigma: f64,
}

impl RegionNoise {
    /// The scenario for a region, norm, level (one of [`Norm::levels`], written as there) and trial
    /// (1..=[`TRIALS`]); `None` otherwise.
    pub(crate) fn new(region: Region, norm: Norm, level: &str, trial: u32) -> Option<Self> {
        if !norm.levels().contains(&level) || !(1..=TRIALS).contains(&trial) {
            return None;
        }
        let sigma: f64 = level.parse().ok()?;
        Some(Self {
            key: key(region, norm, level, trial),
            rng_key: format!("region_noise/{}/{level}/t{trial}", norm.name()),
            region,
            norm,
            sigma,
        })
    }

    /// Parses `region_noise/<fg|bg>/<linf|l2>/<level>/t<trial>`.
    #[cfg(test)]
    fn from_key(key: &str) -> Option<Self> {
        Self::from_parsed(ScenarioKey::parse(key))
    }

    /// The scenario of a parsed key: a known norm, one of its levels and a trial written as a
    /// plain number in 1..=[`TRIALS`]; `None` otherwise.
    fn from_parsed(key: ScenarioKey<'_>) -> Option<Self> {
        let ScenarioKey::RegionNoise {
            foreground,
            norm,
            level,
            trial,
        } = key
        else {
            return None;
        };
        let region = if foreground {
            Region::Foreground
        } else {
            Region::Background
        };
        let norm = match norm {
            "linf" => Norm::Linf,
            "l2" => Norm::L2,
            _ => return None,
        };
        if trial.starts_with('0') || trial.starts_with('+') {
            return None;
        }
        Self::new(region, norm, level, trial.parse().ok()?)
    }

    /// Which part of the frame gets the noise.
    pub(crate) fn region(&self) -> Region {
        self.region
    }

    /// How the noise is scaled.
    pub(crate) fn norm(&self) -> Norm {
        self.norm
    }

    /// The level: σ for [`Norm::Linf`], the l2 budget at 224² for [`Norm::L2`] (on the [0, 1]
    /// scale).
    pub(crate) fn sigma(&self) -> f64 {
        self.sigma
    }
}

/// The key of one RFS scenario.
fn key(region: Region, norm: Norm, level: &str, trial: u32) -> String {
    ScenarioKey::RegionNoise {
        foreground: region == Region::Foreground,
        norm: norm.name(),
        level,
        trial: &trial.to_string(),
    }
    .to_string()
}

impl Scenario for RegionNoise {
    fn key(&self) -> &str {
        &self.key
    }

    /// `region_noise/<norm>/<level>/t<trial>`: shared by the `fg` and `bg` versions (same noise).
    fn rng_key(&self) -> &str {
        &self.rng_key
    }

    /// Hard ImageNet's masks: bilinear, then non-zero → object
    /// (docs/hard-imagenet.md#data-and-preprocessing).
    fn mask_resize(&self) -> crate::view::MaskResize {
        MASK_RESIZE
    }

    fn apply(&self, input: &ScenarioInput<'_>, rng: RngKey) -> Result<RgbImage, ScenarioError> {
        let mask = object_mask(&self.key, input)?;
        if mask.as_raw().iter().all(|&v| v != 0) {
            return Err(ScenarioError::Unsuitable {
                key: self.key.clone(),
                reason: "the mask covers the whole frame: no background to compare with".into(),
            });
        }
        Ok(region_noise(
            input.image,
            mask,
            self.region,
            self.norm,
            self.sigma,
            rng,
        ))
    }

    fn as_region_noise(&self) -> Option<&RegionNoise> {
        Some(self)
    }
}

/// Builds `region_noise/...` scenarios; `None` for other keys.
#[cfg(test)]
fn build(key: &str) -> Option<Arc<dyn Scenario>> {
    build_key(ScenarioKey::parse(key))
}

/// `build` of a parsed key; `None` for other families.
pub(crate) fn build_key(key: ScenarioKey<'_>) -> Option<Arc<dyn Scenario>> {
    RegionNoise::from_parsed(key).map(|s| Arc::new(s) as Arc<dyn Scenario>)
}

/// The catalogue entries: every key (norm, level, trial, then fg before bg), and the groups `rfs`,
/// `rfs-linf`, `rfs-l2`, `rfs-all`.
pub(crate) fn catalog() -> (Vec<CatalogEntry>, Vec<CatalogEntry>) {
    let mut keys = Vec::new();
    let mut per_norm = Vec::new();
    for norm in [Norm::Linf, Norm::L2] {
        let mut members = Vec::new();
        for level in norm.levels() {
            let what = match norm {
                Norm::Linf => format!("Gaussian noise σ = {level}"),
                Norm::L2 => format!("Gaussian noise of L2 norm {level} (at 224²)"),
            };
            for trial in 1..=TRIALS {
                for region in [Region::Foreground, Region::Background] {
                    let name = key(region, norm, level, trial);
                    let place = match region {
                        Region::Foreground => "on the object only",
                        Region::Background => "on the background only",
                    };
                    keys.push(CatalogEntry {
                        name: name.clone(),
                        description: format!(
                            "{what} {place}, trial {trial} (same noise for fg and bg; RFS, \
                             docs/hard-imagenet.md#region-noise)"
                        ),
                        members: Vec::new(),
                    });
                    members.push(name);
                }
            }
        }
        per_norm.push(members);
    }
    let typical: Vec<String> = per_norm[0]
        .iter()
        .filter(|k| k.contains(&format!("/linf/{TYPICAL_LINF}/")))
        .cloned()
        .collect();
    let all: Vec<String> = per_norm.concat();
    let groups = vec![
        CatalogEntry {
            name: "rfs".into(),
            description: format!(
                "RFS at the typical level: linf σ = {TYPICAL_LINF} on object / background, {TRIALS} trials (needs masks)"
            ),
            members: typical,
        },
        CatalogEntry {
            name: "rfs-linf".into(),
            description: "RFS linf grid σ = 0.125..0.75, fg and bg, 3 trials (needs masks)".into(),
            members: per_norm[0].clone(),
        },
        CatalogEntry {
            name: "rfs-l2".into(),
            description: "RFS L2 grid 30..180, fg and bg, 3 trials (needs masks)".into(),
            members: per_norm[1].clone(),
        },
        CatalogEntry {
            name: "rfs-all".into(),
            description: "RFS linf and L2 grids, fg and bg, 3 trials (needs masks)".into(),
            members: all,
        },
    ];
    (keys, groups)
}

/// Levels of the normal table: 2¹⁶, one 16-bit index each.
const NORMAL_LEVELS: usize = 1 << 16;
/// Fixed-point scale of the squared table entries used for the l2 norm.
pub(crate) const SQUARE_SCALE: f64 = (1u64 << 24) as f64;

/// `Φ⁻¹(p)` for `0 < p < 1`, to about 1e-13 absolute: Newton's method on
/// `Φ(x) = erfc(−x/√2)/2` (the tail where it is accurate), from `start`.
fn normal_quantile_from(p: f64, start: f64) -> f64 {
    if p > 0.5 {
        return -normal_quantile_from(1.0 - p, -start);
    }
    let mut x = start.min(0.0);
    for _ in 0..200 {
        let cdf = 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
        let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let step = (cdf - p) / pdf;
        x -= step;
        if step.abs() <= 1e-14 * x.abs().max(1.0) {
            break;
        }
    }
    x
}

/// `Φ⁻¹(p)`, the standard normal quantile (0 < p < 1).
#[cfg(test)]
fn normal_quantile(p: f64) -> f64 {
    normal_quantile_from(p, if p > 0.5 { 1.0 } else { -1.0 })
}

/// The normal draw table: `q_i = Φ⁻¹((i + ½)/2¹⁶)` for `i` in `0..2¹⁶`, scaled to variance exactly 1
/// (in `f64`; stored as `f32`), antisymmetric (`q_{2¹⁶−1−i} = −q_i`). Built once (a few ms).
pub(crate) fn normal_table() -> &'static [f32; NORMAL_LEVELS] {
    &tables().0
}

/// The squares of [`normal_table`]'s entries in 2⁻²⁴ fixed point ([`SQUARE_SCALE`]), rounded: the
/// l2 norm is their exact integer sum (the GPU path sums the same table,
/// docs/gpu.md#mask-based-scenarios).
pub(crate) fn normal_squares() -> &'static [u32; NORMAL_LEVELS] {
    &tables().1
}

/// The normal table and its squares in 2⁻²⁴ fixed point (fixed-size, so a `u16` index needs no
/// bounds check).
type Tables = (Box<[f32; NORMAL_LEVELS]>, Box<[u32; NORMAL_LEVELS]>);

/// The normal table and its squares, built once.
fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let half = NORMAL_LEVELS / 2;
        let mut lower = Vec::with_capacity(half);
        let mut x = -4.0;
        for i in 0..half {
            x = normal_quantile_from((i as f64 + 0.5) / NORMAL_LEVELS as f64, x);
            lower.push(x);
        }
        let full: Vec<f64> = lower
            .iter()
            .copied()
            .chain(lower.iter().rev().map(|v| -v))
            .collect();
        let var = full.iter().map(|v| v * v).sum::<f64>() / NORMAL_LEVELS as f64;
        let scale = 1.0 / var.sqrt();
        let table: Vec<f32> = full.iter().map(|v| (v * scale) as f32).collect();
        let squares: Vec<u32> = table
            .iter()
            .map(|&v| (f64::from(v) * f64::from(v) * SQUARE_SCALE).round() as u32)
            .collect();
        (
            table.into_boxed_slice().try_into().expect("2¹⁶ levels"),
            squares.into_boxed_slice().try_into().expect("2¹⁶ levels"),
        )
    })
}

/// Elements (pixel × channel) per rayon task.
const ELEMENTS_PER_TASK: usize = 32_768;

/// `Σ squares[i]` over the indices (the fixed-point squared norm of their noise).
#[inline]
fn sum_squares(idx: &[u16], squares: &[u32; NORMAL_LEVELS]) -> u64 {
    idx.iter()
        .map(|&i| u64::from(squares[usize::from(i)]))
        .sum()
}

/// `out[e] = ⌊src[e] + a·table[idx[e]] + ½⌋` clamped to 0..=255 (the saturating `as u8` does the
/// clamping: a value below 0 gives 0, one above 255 gives 255). Equal lengths.
#[inline]
fn add_noise(out: &mut [u8], src: &[u8], idx: &[u16], table: &[f32; NORMAL_LEVELS], a: f32) {
    for ((o, &v), &i) in out.iter_mut().zip(src).zip(idx) {
        *o = (f32::from(v) + a * table[usize::from(i)] + 0.5) as u8;
    }
}

/// Calls `f(x0, x1)` for every maximal run `[x0, x1)` of pixels of the mask row `m` that are in the
/// region (object when `fg`, background otherwise), left to right.
fn for_runs(m: &[u8], fg: bool, mut f: impl FnMut(usize, usize)) {
    let inside = |v: &u8| (*v != 0) == fg;
    let mut x = 0;
    while x < m.len() {
        let Some(start) = m[x..].iter().position(inside) else {
            return;
        };
        let x0 = x + start;
        let len = m[x0..]
            .iter()
            .position(|v| !inside(v))
            .unwrap_or(m.len() - x0);
        f(x0, x0 + len);
        x = x0 + len;
    }
}

/// Fills `idx` (the row's elements rounded up to a multiple of 4) with the 16-bit normal-table
/// indices of row `y`: four per 64-bit word of `rng.stream(y)`, low bits first.
fn row_indices(rng: RngKey, y: u32, idx: &mut [u16]) {
    let mut r = rng.stream(u64::from(y));
    for chunk in idx.chunks_exact_mut(4) {
        let w = r.next_u64();
        chunk[0] = w as u16;
        chunk[1] = (w >> 16) as u16;
        chunk[2] = (w >> 32) as u16;
        chunk[3] = (w >> 48) as u16;
    }
}

/// The RFS noise kernel (module doc, docs/hard-imagenet.md#region-noise): `image` with N(0,
/// 1)·amplitude noise added to the elements of `region` (object = `mask` > 0, on all channels),
/// rounded to nearest (halves up) and clamped to 0..=255; other elements unchanged. `sigma` is σ
/// for [`Norm::Linf`], the l2 budget at 224² for [`Norm::L2`] (scaled by `√(H·W)/224`). An empty
/// region returns the image unchanged. `mask` has the image's size.
fn region_noise(
    image: &RgbImage,
    mask: &GrayImage,
    region: Region,
    norm: Norm,
    sigma: f64,
    rng: RngKey,
) -> RgbImage {
    assert_eq!(
        image.dimensions(),
        mask.dimensions(),
        "mask and image sizes"
    );
    let (w, h) = image.dimensions();
    let row_len = w as usize * 3;
    if row_len == 0 || h == 0 {
        return image.clone();
    }
    let fg = region == Region::Foreground;
    let (table, squares) = tables();
    let padded = row_len.div_ceil(4) * 4;
    let mask_raw = mask.as_raw();
    let amplitude = match norm {
        Norm::Linf => 255.0 * sigma,
        Norm::L2 => {
            let sum: u64 = (0..h)
                .into_par_iter()
                .map_init(
                    || vec![0u16; padded],
                    |idx, y| {
                        row_indices(rng, y, idx);
                        let m = &mask_raw[y as usize * w as usize..][..w as usize];
                        let mut s = 0u64;
                        for_runs(m, fg, |a, b| s += sum_squares(&idx[3 * a..3 * b], squares));
                        s
                    },
                )
                .sum();
            if sum == 0 {
                return image.clone();
            }
            let norm = (sum as f64 / SQUARE_SCALE).sqrt();
            let budget = sigma * (f64::from(w) * f64::from(h)).sqrt() / REFERENCE_SIDE;
            255.0 * budget / norm
        }
    };
    let a = amplitude as f32;
    let mut out = image.as_raw().clone();
    let src = image.as_raw();
    let rows_per_task = (ELEMENTS_PER_TASK / row_len).max(1);
    out.par_chunks_mut(row_len * rows_per_task)
        .enumerate()
        .for_each(|(task, rows)| {
            let mut idx = vec![0u16; padded];
            for (i, row) in rows.chunks_exact_mut(row_len).enumerate() {
                let y = task * rows_per_task + i;
                row_indices(rng, y as u32, &mut idx);
                let m = &mask_raw[y * w as usize..][..w as usize];
                let s = &src[y * row_len..][..row_len];
                for_runs(m, fg, |x0, x1| {
                    let (e0, e1) = (3 * x0, 3 * x1);
                    add_noise(&mut row[e0..e1], &s[e0..e1], &idx[e0..e1], table, a);
                });
            }
        });
    RgbImage::from_raw(w, h, out).expect("same size as the input")
}

#[cfg(test)]
mod tests;
