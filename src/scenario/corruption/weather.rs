//! Weather corruptions frost (docs/imagenet-c.md#frost) and fog (docs/imagenet-c.md#fog), following
//! imagecorruptions 1.1.2 for arbitrary frame sizes.
//!
//! * fog: the plasma fractal (docs/imagenet-c.md#h4-plasma-fractal) on an N×N torus with N the next
//!   power of two ≥ max(H, W, 3) as imagecorruptions does (hendrycks: always 256, 224-only),
//!   top-left H×W window.
//! * frost: one of frost1–frost5 (`randint(5)`; frost6 is never chosen, frost2 ≡ frost3), rescaled
//!   with OpenCV-style bicubic ([`crate::kernels::bicubic`]) by imagecorruptions' factor (always
//!   ×1.1, so ≥ 1.1× upscaled), randomly cropped and blended on the 0..255 scale.
//!
//! numpy's random streams are not reproduced (docs/imagenet-c.md#randomness-and-external-inputs);
//! the distributions are. All draws come from the key's main generator in a fixed order, so outputs
//! never depend on the thread count.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use image::RgbImage;
use rand::RngExt;
use rayon::prelude::*;

use crate::kernels::bicubic::bicubic_rows;
use crate::kernels::lanes;
use crate::kernels::rowrng::for_each_row_element;
use crate::rng::RngKey;

/// One fog severity (docs/imagenet-c.md#fog): the reference's `x + c[0]·plasma_fractal(wibbledecay
/// = c[1])`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FogParams {
    /// c0: how strongly the plasma is added.
    pub(crate) strength: f64,
    /// c1: the plasma fractal's `wibbledecay`.
    pub(crate) wibble_decay: f64,
}

/// Fog (strength c0, wibble decay c1) per severity 1..5 (docs/imagenet-c.md#fog).
pub(crate) const FOG_PARAMS: [FogParams; 5] = [
    fog_row(1.5, 2.0),
    fog_row(2.0, 2.0),
    fog_row(2.5, 1.7),
    fog_row(2.5, 1.5),
    fog_row(3.0, 1.4),
];

/// Table row constructor.
const fn fog_row(strength: f64, wibble_decay: f64) -> FogParams {
    FogParams {
        strength,
        wibble_decay,
    }
}

/// One frost severity (docs/imagenet-c.md#frost): the reference's `c[0]·x + c[1]·frost`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FrostParams {
    /// a: the image's weight (`c[0]`).
    pub(crate) image: f64,
    /// f: the frost texture's weight (`c[1]`).
    pub(crate) frost: f64,
}

/// Frost (image weight a, frost weight f) per severity 1..5 (docs/imagenet-c.md#frost).
pub(crate) const FROST_PARAMS: [FrostParams; 5] = [
    frost_row(1.0, 0.4),
    frost_row(0.8, 0.6),
    frost_row(0.7, 0.7),
    frost_row(0.65, 0.7),
    frost_row(0.6, 0.75),
];

/// Table row constructor.
const fn frost_row(image: f64, frost: f64) -> FrostParams {
    FrostParams { image, frost }
}

/// The frost texture files that can be chosen, in imagecorruptions' order (`randint(5)` picks one of
/// these five; the listed frost6.jpg is never chosen, docs/imagenet-c.md#frost).
const FROST_FILES: [&str; 5] = [
    "frost1.png",
    "frost2.png",
    "frost3.png",
    "frost4.jpg",
    "frost5.jpg",
];

/// imagecorruptions' extra texture upscale factor, applied whatever the frame size
/// (docs/imagenet-c.md#frost).
const FROST_EXTRA_SCALE: f64 = 1.1;

/// Environment variable naming the frost texture folder.
const FROST_DIR_ENV: &str = "ROBUSTREAM_FROST_DIR";

/// The frost folder relative to a repository / working directory (installed by `scripts/setup.sh`).
const FROST_DIR: &str = "assets/frost";

/// imagecorruptions `next_power_of_2(max(H, W, 3))`: the fog map side for a frame of `w`×`h`.
pub(crate) fn fog_map_size(w: u32, h: u32) -> usize {
    (w.max(h).max(3) as usize).next_power_of_two()
}

/// Diamond–square plasma fractal (docs/imagenet-c.md#h4-plasma-fractal) on an `n`×`n` torus (`n` a
/// power of two ≥ 1), row-major, normalised to [0, 1] (min 0, max 1, unless constant: then all 0 as
/// NaN-free stand-in for numpy's 0/0). The random term is `wibble · U[−wibble, wibble)` (amplitude
/// ∝ wibble², a reference quirk); wibble starts at 100 and is divided by `decay` after every step.
/// See [`plasma_window`] for how it is computed and where the randomness comes from; this
/// materialises the whole map.
#[cfg(test)]
fn plasma_fractal(n: usize, decay: f64, rng: RngKey) -> Vec<f64> {
    let p = plasma_window(n, decay, rng, (n, n));
    p.values
        .iter()
        .map(|&v| {
            if p.range > 0.0 {
                (v - p.min) / p.range
            } else {
                0.0
            }
        })
        .collect()
}

/// The top-left window of a plasma map before normalisation, with the whole map's minimum and range.
#[derive(Debug, Clone)]
pub(crate) struct PlasmaWindow {
    /// `h` rows of `w` raw map values.
    pub(crate) values: Vec<f64>,
    /// Minimum over the whole `n`×`n` map.
    pub(crate) min: f64,
    /// Maximum minus minimum over the whole map (0 for a constant map).
    pub(crate) range: f64,
}

/// The top-left `w`×`h` window (`w, h ≤ n`) of the un-normalised `plasma_fractal` of side `n`, plus the
/// whole map's minimum and range (the reference normalises by the whole map,
/// docs/imagenet-c.md#fog).
///
/// The map is built as numpy builds it, level by level (step n, n/2, …, 2), but held compactly: at
/// step s the already computed points form a `g×g` corner grid Q (g = n/s); the level computes the
/// centres C = ((Q\[i,j\] + Q\[i+1,j\]) + (Q\[i,j+1\] + Q\[i+1,j+1\]))/4 + noise, the horizontal edges
/// DH = ((C\[i,j\] + C\[i−1,j\]) + (Q\[i,j\] + Q\[i,j+1\]))/4 + noise and the vertical edges
/// DV = ((C\[i,j\] + C\[i,j−1\]) + (Q\[i,j\] + Q\[i+1,j\]))/4 + noise (indices mod g, numpy's association),
/// and the next corner grid interleaves the four. Each of the three phases runs in parallel over grid
/// rows; the last level is never interleaved into a full map: its rows only update the minimum and
/// maximum and fill the window (for a 1280×720 frame the 2048² map is never stored).
///
/// Randomness: noise = `wibble · (wibble · (2u − 1))`, u uniform in [0, 1); grid row i of phase p
/// (0 squares, 1 horizontal edges, 2 vertical edges) at level ℓ (0 for step n) draws its values in
/// column order from `rng.stream((3ℓ + p)·2³² + i)` — a different stream than numpy's single sequence,
/// with the same distribution, and independent of the thread count.
pub(crate) fn plasma_window(
    n: usize,
    decay: f64,
    rng: RngKey,
    (w, h): (usize, usize),
) -> PlasmaWindow {
    assert!(
        n.is_power_of_two(),
        "plasma map side {n} is not a power of two"
    );
    assert!(w <= n && h <= n, "window {w}×{h} larger than the map {n}");
    if n == 1 {
        return PlasmaWindow {
            values: vec![0.0; w * h],
            min: 0.0,
            range: 0.0,
        };
    }
    let mut q = vec![0.0f64]; // the 1×1 corner grid: map[0, 0] = 0
    let mut g = 1;
    let mut wibble = 100.0f64;
    let mut level = 0u64;
    loop {
        let noise = Noise { rng, level, wibble };
        if 2 * g == n {
            return last_level(Corners::Grid(&q), g, &noise, (w, h));
        }
        let c = squares(&q, g, &noise);
        let (dh, dv) = diamonds(&q, &c, g, &noise);
        wibble /= decay;
        level += 1;
        if 4 * g == n {
            let next = Noise { rng, level, wibble };
            let parts = Corners::Parts {
                q: &q,
                dh: &dh,
                dv: &dv,
                c: &c,
                g,
            };
            return last_level(parts, 2 * g, &next, (w, h));
        }
        q = interleave(&q, &dh, &dv, &c, g);
        g *= 2;
    }
}

/// Grid cells per rayon task of the plasma phases.
const PLASMA_CELLS_PER_TASK: usize = 8_192;

/// Grid rows per task for grids of side `g`.
fn plasma_rows_per_task(g: usize) -> usize {
    (PLASMA_CELLS_PER_TASK / g).max(1)
}

/// The noise of one level: phase `p`, grid row `i` draws from `rng.stream((3·level + p)·2³² + i)`.
struct Noise {
    rng: RngKey,
    level: u64,
    wibble: f64,
}

impl Noise {
    /// Noise values of grid rows `first ..` of `phase` into `out` (rows of `g`).
    fn fill(&self, phase: u64, first: usize, g: usize, out: &mut [f64]) {
        let wb = self.wibble;
        let base = ((3 * self.level + phase) << 32) + first as u64;
        for_each_row_element(out, g, self.rng, base, |r, v| {
            *v = wb * (wb * (2.0 * r.random::<f64>() - 1.0));
        });
    }
}

/// `out[j] = x[j] + x[(j + 1) mod g]` (numpy's `x + roll(x, −1)`).
fn add_next(x: &[f64], out: &mut [f64]) {
    let g = x.len();
    for j in 0..g - 1 {
        out[j] = x[j] + x[j + 1];
    }
    out[g - 1] = x[g - 1] + x[0];
}

/// `out[j] = x[j] + x[(j − 1) mod g]` (numpy's `x + roll(x, 1)`).
fn add_prev(x: &[f64], out: &mut [f64]) {
    let g = x.len();
    out[0] = x[0] + x[g - 1];
    for j in 1..g {
        out[j] = x[j] + x[j - 1];
    }
}

/// A centre row from corner rows i and i+1: `((Q[i] + Q[i+1]) + roll(…, −1))/4 + noise`; `s` is
/// scratch.
fn centre_row(qi: &[f64], qn: &[f64], noise: &[f64], s: &mut [f64], out: &mut [f64]) {
    for ((s, &a), &b) in s.iter_mut().zip(qi).zip(qn) {
        *s = a + b;
    }
    add_next(s, out);
    for (o, &n) in out.iter_mut().zip(noise) {
        *o = *o / 4.0 + n;
    }
}

/// A horizontal-edge row i: `((C[i] + C[i−1]) + (Q[i] + roll(Q[i], −1)))/4 + noise`.
fn dh_row(ci: &[f64], cp: &[f64], qi: &[f64], noise: &[f64], s: &mut [f64], out: &mut [f64]) {
    add_next(qi, s);
    for (((o, &a), &b), (&t, &n)) in out.iter_mut().zip(ci).zip(cp).zip(s.iter().zip(noise)) {
        *o = ((a + b) + t) / 4.0 + n;
    }
}

/// A vertical-edge row i: `((C[i] + roll(C[i], 1)) + (Q[i] + Q[i+1]))/4 + noise`.
fn dv_row(ci: &[f64], qi: &[f64], qn: &[f64], noise: &[f64], s: &mut [f64], out: &mut [f64]) {
    add_prev(ci, s);
    for (((o, &t), (&a, &b)), &n) in out
        .iter_mut()
        .zip(s.iter())
        .zip(qi.iter().zip(qn))
        .zip(noise)
    {
        *o = (t + (a + b)) / 4.0 + n;
    }
}

/// Row `i` of a `g × g` grid.
fn grid_row(grid: &[f64], g: usize, i: usize) -> &[f64] {
    &grid[i * g..][..g]
}

/// The centres C of one level (g×g).
fn squares(q: &[f64], g: usize, noise: &Noise) -> Vec<f64> {
    let mut c = vec![0.0; g * g];
    let per = plasma_rows_per_task(g);
    c.par_chunks_mut(g * per).enumerate().for_each(|(t, rows)| {
        let mut nz = vec![0.0; rows.len()];
        noise.fill(0, t * per, g, &mut nz);
        let mut s = vec![0.0; g];
        for (k, (row, nz)) in rows.chunks_exact_mut(g).zip(nz.chunks_exact(g)).enumerate() {
            let i = t * per + k;
            let (qi, qn) = (grid_row(q, g, i), grid_row(q, g, (i + 1) % g));
            centre_row(qi, qn, nz, &mut s, row);
        }
    });
    c
}

/// The horizontal and vertical edges (DH, DV) of one level.
fn diamonds(q: &[f64], c: &[f64], g: usize, noise: &Noise) -> (Vec<f64>, Vec<f64>) {
    let mut dh = vec![0.0; g * g];
    let mut dv = vec![0.0; g * g];
    let per = plasma_rows_per_task(g);
    dh.par_chunks_mut(g * per)
        .zip(dv.par_chunks_mut(g * per))
        .enumerate()
        .for_each(|(t, (hrows, vrows))| {
            let mut nz = vec![0.0; hrows.len()];
            let mut s = vec![0.0; g];
            noise.fill(1, t * per, g, &mut nz);
            for (k, (row, nz)) in hrows
                .chunks_exact_mut(g)
                .zip(nz.chunks_exact(g))
                .enumerate()
            {
                let i = t * per + k;
                let (ci, cp) = (grid_row(c, g, i), grid_row(c, g, (i + g - 1) % g));
                dh_row(ci, cp, grid_row(q, g, i), nz, &mut s, row);
            }
            noise.fill(2, t * per, g, &mut nz);
            for (k, (row, nz)) in vrows
                .chunks_exact_mut(g)
                .zip(nz.chunks_exact(g))
                .enumerate()
            {
                let i = t * per + k;
                let (qi, qn) = (grid_row(q, g, i), grid_row(q, g, (i + 1) % g));
                dv_row(grid_row(c, g, i), qi, qn, nz, &mut s, row);
            }
        });
    (dh, dv)
}

/// The next level's corner grid (2g × 2g): rows `2i` = Q\[i\], DH\[i\] interleaved; rows `2i + 1` =
/// DV\[i\], C\[i\] interleaved.
fn interleave(q: &[f64], dh: &[f64], dv: &[f64], c: &[f64], g: usize) -> Vec<f64> {
    let mut out = vec![0.0; 4 * g * g];
    out.par_chunks_mut(4 * g).enumerate().for_each(|(i, rows)| {
        let (even, odd) = rows.split_at_mut(2 * g);
        zip_pairs(grid_row(q, g, i), grid_row(dh, g, i), even);
        zip_pairs(grid_row(dv, g, i), grid_row(c, g, i), odd);
    });
    out
}

/// `out[2j] = a[j]`, `out[2j + 1] = b[j]`.
fn zip_pairs(a: &[f64], b: &[f64], out: &mut [f64]) {
    for ((o, &a), &b) in out.chunks_exact_mut(2).zip(a).zip(b) {
        o[0] = a;
        o[1] = b;
    }
}

/// The corner grid of the last level: stored, or (usually) the previous level's four grids of side
/// `g`, read interleaved row by row so the full grid is never assembled.
enum Corners<'a> {
    Grid(&'a [f64]),
    Parts {
        q: &'a [f64],
        dh: &'a [f64],
        dv: &'a [f64],
        c: &'a [f64],
        g: usize,
    },
}

impl Corners<'_> {
    /// Row `r` of the corner grid into `out` (its side).
    fn row(&self, r: usize, out: &mut [f64]) {
        match *self {
            Corners::Grid(q) => out.copy_from_slice(grid_row(q, out.len(), r)),
            Corners::Parts { q, dh, dv, c, g } => {
                let i = r / 2;
                if r.is_multiple_of(2) {
                    zip_pairs(grid_row(q, g, i), grid_row(dh, g, i), out);
                } else {
                    zip_pairs(grid_row(dv, g, i), grid_row(c, g, i), out);
                }
            }
        }
    }
}

/// The last level (step 2, map side 2g) from its corner grid: centres and edges computed band by band
/// in parallel (each band assembling the corner rows it reads and recomputing the one centre row above
/// it — same stream, same values), the whole map's minimum and maximum folded in, and the window's
/// rows written. Neither the full map nor the full last-level grids are ever stored.
fn last_level(
    corners: Corners<'_>,
    g: usize,
    noise: &Noise,
    (w, h): (usize, usize),
) -> PlasmaWindow {
    let per = plasma_rows_per_task(g);
    let bands = g.div_ceil(per);
    let mut values = vec![0.0f64; w * h];
    // Window rows of band b: map rows [2·per·b, 2·per·(b + 1)) ∩ [0, h).
    let mut chunks: Vec<&mut [f64]> = values.chunks_mut((2 * per * w).max(1)).collect();
    chunks.resize_with(bands, Default::default);
    let (min, max) = chunks
        .into_par_iter()
        .enumerate()
        .map(|(b, win)| {
            let i0 = b * per;
            let n = per.min(g - i0);
            let wrap = |r: usize| (r + g) % g;
            // Corner rows i0 − 1 ..= i0 + n, centre rows i0 − 1 .. i0 + n (local index +1).
            let mut qb = vec![0.0; (n + 2) * g];
            for (k, row) in qb.chunks_exact_mut(g).enumerate() {
                corners.row(wrap(i0 + k + g - 1), row);
            }
            let mut nz = vec![0.0; (n + 1) * g];
            noise.fill(0, wrap(i0 + g - 1), g, &mut nz[..g]);
            noise.fill(0, i0, g, &mut nz[g..]);
            let mut s = vec![0.0; g];
            let mut cb = vec![0.0; (n + 1) * g];
            for (k, (row, nz)) in cb.chunks_exact_mut(g).zip(nz.chunks_exact(g)).enumerate() {
                centre_row(
                    grid_row(&qb, g, k),
                    grid_row(&qb, g, k + 1),
                    nz,
                    &mut s,
                    row,
                );
            }
            let mut dh = vec![0.0; n * g];
            let mut dv = vec![0.0; n * g];
            noise.fill(1, i0, g, &mut nz[..n * g]);
            for (k, (row, nz)) in dh.chunks_exact_mut(g).zip(nz.chunks_exact(g)).enumerate() {
                let (ci, cp, qi) = (
                    grid_row(&cb, g, k + 1),
                    grid_row(&cb, g, k),
                    grid_row(&qb, g, k + 1),
                );
                dh_row(ci, cp, qi, nz, &mut s, row);
            }
            noise.fill(2, i0, g, &mut nz[..n * g]);
            for (k, (row, nz)) in dv.chunks_exact_mut(g).zip(nz.chunks_exact(g)).enumerate() {
                let (qi, qn) = (grid_row(&qb, g, k + 1), grid_row(&qb, g, k + 2));
                dv_row(grid_row(&cb, g, k + 1), qi, qn, nz, &mut s, row);
            }
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for grid in [&qb[g..(n + 1) * g], &cb[g..], &dh[..], &dv[..]] {
                let (l, h) = min_max(grid);
                lo = lo.min(l);
                hi = hi.max(h);
            }
            let mut pair = vec![0.0; 2 * g];
            for (k, out) in win.chunks_exact_mut(w).enumerate() {
                let i = k / 2 + 1; // local corner / centre row
                if k % 2 == 1 {
                    zip_pairs(grid_row(&dv, g, k / 2), grid_row(&cb, g, i), &mut pair);
                } else {
                    zip_pairs(grid_row(&qb, g, i), grid_row(&dh, g, k / 2), &mut pair);
                }
                out.copy_from_slice(&pair[..w]);
            }
            (lo, hi)
        })
        .reduce(
            || (f64::INFINITY, f64::NEG_INFINITY),
            |a, b| (a.0.min(b.0), a.1.max(b.1)),
        );
    PlasmaWindow {
        values,
        min,
        range: max - min,
    }
}

/// Minimum and maximum of NaN-free values (`(∞, −∞)` when empty), in 8 independent lanes so that the
/// comparisons vectorise.
fn min_max(v: &[f64]) -> (f64, f64) {
    let mut lo = [f64::INFINITY; 8];
    let mut hi = [f64::NEG_INFINITY; 8];
    let mut chunks = v.chunks_exact(8);
    for c in chunks.by_ref() {
        for l in 0..8 {
            lo[l] = if c[l] < lo[l] { c[l] } else { lo[l] };
            hi[l] = if c[l] > hi[l] { c[l] } else { hi[l] };
        }
    }
    for &x in chunks.remainder() {
        lo[0] = lo[0].min(x);
        hi[0] = hi[0].max(x);
    }
    (
        lo.iter().copied().fold(f64::INFINITY, f64::min),
        hi.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

/// ImageNet-C `fog` (imagecorruptions 1.1.2, docs/imagenet-c.md#fog): with x on [0, 1], m = max(x)
/// over all pixels and channels and P the `plasma_fractal` of side [`fog_map_size`] (top-left H×W
/// window, same on every channel): `out = floor8(clip((x + c0·P)·m/(m + c0), 0, 1)·255)`. Any size;
/// an empty image is returned as is; 1×1 uses a 4×4 map (next power of two ≥ 3). Only the window of
/// the map is stored ([`plasma_window`]); the blend runs in parallel over rows.
pub(crate) fn fog(image: &RgbImage, strength: f64, decay: f64, rng: RngKey) -> RgbImage {
    lanes::in_pool(|| fog_body(image, strength, decay, rng))
}

/// The body of [`fog`].
fn fog_body(image: &RgbImage, strength: f64, decay: f64, rng: RngKey) -> RgbImage {
    let (w, h) = image.dimensions();
    if w == 0 || h == 0 {
        return image.clone();
    }
    let (wu, hu) = (w as usize, h as usize);
    let n = fog_map_size(w, h);
    let plasma = plasma_window(n, decay, rng, (wu, hu));
    let max = image
        .as_raw()
        .par_chunks(1 << 16)
        .map(|c| c.iter().copied().max().unwrap_or(0))
        .max()
        .unwrap_or(0);
    let m = f64::from(max) / 255.0;
    let scale = m / (m + strength);
    let blend = FogBlend {
        min: plasma.min,
        range: plasma.range,
        strength,
        scale,
        unit: std::array::from_fn(|v| v as f64 / 255.0),
    };
    let row_len = wu * 3;
    let mut out = image.as_raw().clone();
    out.par_chunks_mut(row_len * FOG_BLEND_ROWS)
        .zip(plasma.values.par_chunks(wu * FOG_BLEND_ROWS))
        .for_each(|(rows, p)| blend.rows(rows, p));
    RgbImage::from_raw(w, h, out).expect("same size as the input")
}

/// Rows per rayon task of fog's blend.
const FOG_BLEND_ROWS: usize = 8;

/// The constants of fog's blend: `floor8((x + strength·(P − min)/range)·scale)`.
struct FogBlend {
    min: f64,
    range: f64,
    strength: f64,
    scale: f64,
    unit: [f64; 256],
}

impl FogBlend {
    crate::kernels::multiversion! {
        /// Blends interleaved RGB rows in place with their plasma values `p` (one per pixel).
        /// Compiled for AVX2 where available.
        fn rows(&self, rows: &mut [u8], p: &[f64]);
        /// [`FogBlend::rows`] with AVX2 enabled.
        rows_avx2 ["avx2"] => Self::rows_body;
        _ => Self::rows_body;
        levels rows_at;
    }

    /// The body of [`FogBlend::rows`]: the per-pixel term first, spread to the three channels, then one
    /// vector loop over the elements.
    #[inline(always)]
    fn rows_body(&self, rows: &mut [u8], p: &[f64]) {
        let mut add = vec![0.0f64; 3 * p.len()];
        for (a, &pv) in add.chunks_exact_mut(3).zip(p) {
            let pv = if self.range > 0.0 {
                (pv - self.min) / self.range
            } else {
                0.0
            };
            a.fill(self.strength * pv);
        }
        for (v, &a) in rows.iter_mut().zip(&add) {
            *v = lanes::floor8((self.unit[usize::from(*v)] + a) * self.scale);
        }
    }
}

/// Where the frost textures are looked for, in order: `$ROBUSTREAM_FROST_DIR`, else `frost/` in the
/// asset folders ([`crate::assets::dirs`]: the checkout's `assets/`, the one of the repository the
/// binary was built in, the set-up script's cache), then the build-time manifest directory's
/// `assets/frost`.
fn frost_dir_candidates() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os(FROST_DIR_ENV) {
        return vec![PathBuf::from(dir)];
    }
    let mut dirs = crate::assets::candidates("frost");
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(FROST_DIR));
    dirs
}

/// Why `frost` has no textures. Display = the one line users see. `Clone` (a decoder's error is
/// kept behind an `Arc`), so the error [`frost_textures`] keeps for the process reaches every caller
/// whole.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum FrostError {
    /// None of the folders tried holds every texture of [`FROST_FILES`]: the folders, why each did
    /// not serve, and the fix (`bash scripts/setup.sh`, or [`FROST_DIR_ENV`]).
    #[error(
        "frost needs the ImageNet-C frost textures ({}); run `bash scripts/setup.sh` to install \
         them into assets/frost, or set {FROST_DIR_ENV}; tried: {}",
        FROST_FILES.join(", "),
        tried_text(tried)
    )]
    NotInstalled {
        /// Each folder tried, in order, with the texture that failed there (`None`: no such
        /// folder).
        tried: Vec<(PathBuf, Option<Box<FrostError>>)>,
    },
    /// A texture file does not read or decode.
    #[error("frost texture {}: {source}", path.display())]
    Undecodable {
        /// The texture file.
        path: PathBuf,
        /// The decoder's error.
        source: Arc<image::ImageError>,
    },
}

/// The folders of [`FrostError::NotInstalled`] as text: `<dir> (no such folder); frost texture …`.
fn tried_text(tried: &[(PathBuf, Option<Box<FrostError>>)]) -> String {
    tried
        .iter()
        .map(|(dir, e)| match e {
            None => format!("{} (no such folder)", dir.display()),
            Some(e) => e.to_string(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Decodes the five choosable textures from `dir` (alpha dropped, RGB order).
fn load_frost_textures(dir: &Path) -> Result<Vec<RgbImage>, FrostError> {
    FROST_FILES
        .iter()
        .map(|f| {
            let path = dir.join(f);
            match image::open(&path) {
                Ok(i) => Ok(i.to_rgb8()),
                Err(e) => Err(FrostError::Undecodable {
                    path,
                    source: Arc::new(e),
                }),
            }
        })
        .collect()
}

/// The frost textures, decoded once per process from the first candidate folder that holds them
/// ([`frost_dir_candidates`]); an error names the folders tried and `bash scripts/setup.sh`.
pub(crate) fn frost_textures() -> Result<&'static [RgbImage], FrostError> {
    static TEXTURES: OnceLock<Result<Vec<RgbImage>, FrostError>> = OnceLock::new();
    TEXTURES
        .get_or_init(|| first_frost_textures(&frost_dir_candidates()))
        .as_ref()
        .map(|v| v.as_slice())
        .map_err(Clone::clone)
}

/// The textures from the first of `candidates` that holds all of [`FROST_FILES`]; otherwise an error
/// naming every folder tried and `bash scripts/setup.sh`.
fn first_frost_textures(candidates: &[PathBuf]) -> Result<Vec<RgbImage>, FrostError> {
    let mut tried = Vec::new();
    for dir in candidates {
        if !dir.is_dir() {
            tried.push((dir.clone(), None));
            continue;
        }
        match load_frost_textures(dir) {
            Ok(t) => return Ok(t),
            Err(e) => tried.push((dir.clone(), Some(Box::new(e)))),
        }
    }
    Err(FrostError::NotInstalled { tried })
}

/// imagecorruptions' frost texture size for a `tw`×`th` texture and a `w`×`h` frame: factor 1 if the
/// texture covers the frame, else the short dimension's ratio (the larger if both are short), then
/// always ×1.1; size `(ceil(tw·s), ceil(th·s))`.
pub fn frost_rescaled_size(tw: u32, th: u32, w: u32, h: u32) -> (u32, u32) {
    let (fh, fw, xh, xw) = (f64::from(th), f64::from(tw), f64::from(h), f64::from(w));
    let mut s = match (th >= h, tw >= w) {
        (true, true) => 1.0,
        (false, true) => xh / fh,
        (true, false) => xw / fw,
        (false, false) => (xh / fh).max(xw / fw),
    };
    s *= FROST_EXTRA_SCALE;
    ((fw * s).ceil() as u32, (fh * s).ceil() as u32)
}

/// ImageNet-C `frost` with the textures from [`frost_textures`]; the error (textures missing) says to run
/// `bash scripts/setup.sh`. See [`frost_with`].
pub(crate) fn frost(image: &RgbImage, a: f64, f: f64, rng: RngKey) -> Result<RgbImage, FrostError> {
    Ok(frost_with(frost_textures()?, image, a, f, rng))
}

/// ImageNet-C `frost` (imagecorruptions 1.1.2, docs/imagenet-c.md#frost) with the given textures
/// (the five of [`FROST_FILES`], in order): texture `randint(len)`; rescaled to
/// [`frost_rescaled_size`] (OpenCV bicubic,
/// [`bicubic_window`](crate::kernels::bicubic::bicubic_window)); crop top = `randint[0, Hr − H)`,
/// left = `randint[0, Wr − W)`; `out = floor8(clip(a·x + f·frost, 0, 255))` on the 0..255 scale.
/// Any size (the ×1.1 rescale always leaves room for a crop); an empty image or an empty texture
/// list returns the input.
pub fn frost_with(
    textures: &[RgbImage],
    image: &RgbImage,
    a: f64,
    f: f64,
    rng: RngKey,
) -> RgbImage {
    lanes::in_pool(|| frost_with_body(textures, image, a, f, rng))
}

/// The body of [`frost_with`].
fn frost_with_body(
    textures: &[RgbImage],
    image: &RgbImage,
    a: f64,
    f: f64,
    rng: RngKey,
) -> RgbImage {
    let (w, h) = image.dimensions();
    if w == 0 || h == 0 || textures.is_empty() {
        return image.clone();
    }
    let mut r = rng.rng();
    let tex = &textures[r.random_range(0..textures.len())];
    let (tw, th) = tex.dimensions();
    let (rw, rh) = frost_rescaled_size(tw, th, w, h);
    let top = r.random_range(0..rh.saturating_sub(h).max(1));
    let left = r.random_range(0..rw.saturating_sub(w).max(1));
    frost_at(tex, image, a, f, (left, top))
}

/// The deterministic part of [`frost_with`] once its draws are made: `texture` rescaled to
/// [`frost_rescaled_size`], its frame-sized window at (`left`, `top`) blended with `image`
/// (docs/imagenet-c.md#frost). The GPU path draws differently and is checked against this at the
/// same texture and offset (docs/gpu.md#gpu-resident-scenarios).
pub(crate) fn frost_at(
    texture: &RgbImage,
    image: &RgbImage,
    a: f64,
    f: f64,
    (left, top): (u32, u32),
) -> RgbImage {
    let (w, h) = image.dimensions();
    let (tw, th) = texture.dimensions();
    let (rw, rh) = frost_rescaled_size(tw, th, w, h);
    let src = image.as_raw();
    let row_len = 3 * w as usize;
    let mut data = vec![0u8; src.len()];
    bicubic_rows(
        texture,
        (rw, rh),
        (left, top),
        (w, h),
        &mut data,
        |y, t, o| {
            let x = &src[y * row_len..][..row_len];
            for ((o, &x), &t) in o.iter_mut().zip(x).zip(t) {
                *o = lanes::trunc_u8(a * f64::from(x) + f * t);
            }
        },
    );
    RgbImage::from_raw(w, h, data).expect("same size as the input")
}

#[cfg(test)]
mod tests;
