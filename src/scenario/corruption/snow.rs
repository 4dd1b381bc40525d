//! ImageNet-C `snow` (docs/imagenet-c.md#snow), a weather corruption, as imagecorruptions 1.1.2
//! computes it:
//! a thresholded, zoomed Gaussian snow layer streaked by the motion-blur port (H5), added twice (as is
//! and rotated by 180°) over a brightened image. Built on [`crate::kernels::filter`].

use image::RgbImage;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use crate::kernels::{filter, lanes, motion, zoom};
use crate::rng::RngKey;

/// Parameters of one snow severity (docs/imagenet-c.md#snow).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnowParams {
    /// Mean μ of the Gaussian snow field.
    pub mean: f64,
    /// Standard deviation s of the snow field.
    pub std: f64,
    /// Zoom factor z of the field (`zoom::clipped_zoom_f64`).
    pub(crate) zoom: f64,
    /// Threshold t: zoomed field values below it become 0.
    pub(crate) threshold: f64,
    /// Motion-blur radius r (2r + 1 taps).
    pub(crate) radius: usize,
    /// Motion-blur σ.
    pub(crate) sigma: f64,
    /// Blend b of the image with its brightened version (the reference's Python float: both b and
    /// 1 − b are formed in f64 and only then rounded to f32, see [`blend_row`]).
    pub(crate) blend: f64,
}

/// (μ, s, z, t, r, σ, b) per severity 1..5 (docs/imagenet-c.md#snow).
pub const SNOW: [SnowParams; 5] = [
    snow(0.1, 0.3, 3.0, 0.5, 10, 4.0, 0.8),
    snow(0.2, 0.3, 2.0, 0.5, 12, 4.0, 0.7),
    snow(0.55, 0.3, 4.0, 0.9, 12, 8.0, 0.7),
    snow(0.55, 0.3, 4.5, 0.85, 12, 8.0, 0.65),
    snow(0.55, 0.3, 2.5, 0.85, 12, 12.0, 0.55),
];

/// Table row constructor.
const fn snow(
    mean: f64,
    std: f64,
    zoom: f64,
    threshold: f64,
    radius: usize,
    sigma: f64,
    blend: f64,
) -> SnowParams {
    SnowParams {
        mean,
        std,
        zoom,
        threshold,
        radius,
        sigma,
        blend,
    }
}

/// ImageNet-C `snow` as imagecorruptions 1.1.2 computes it (docs/imagenet-c.md#snow):
/// 1. x = value/255 in float32; snow field S = N(μ, s) of H×W (f64);
/// 2. S = clipped_zoom(S, z) — imagecorruptions' per-axis crop, **untrimmed** (H3); `S[S < t]` = 0; clip
///    to [0, 1];
/// 3. S = motion blur of the whole zoomed layer (H5, radius r, σ, angle U[−135°, −45°) from the key's
///    main generator, edge replication, taps past the layer dropped); S = round(S·255)/255 (half to
///    even, emulating hendrycks' PNG round trip); top-left H×W kept;
/// 4. x' = b·x + (1 − b)·max(x, gray(x)·1.5 + 0.5) in float32 (gray per H7; the weights b and 1 − b
///    computed in f64, then rounded to f32, as numpy does with the table's Python floats);
/// 5. out = floor8(clip(x' + S + rot180(S), 0, 1)·255).
///
/// Randomness: the zoom reads only the central crop of the field (⌈H/z⌉ × ⌈W/z⌉, see
/// [`zoom::clipped_zoom_axis`]), so only that crop is drawn — row `j` of the crop from the key's
/// sub-stream `rng.stream(j)` — the rest of the field could not change the output (1/z² of the normals:
/// 5–25 % at the table's zooms).
///
/// Generalisation: hendrycks reshapes the layer to 224×224 and zooms square crops; imagecorruptions'
/// per-axis zoom and top-left crop, used here, work for any H×W (both agree in distribution at 224²).
/// imagecorruptions rejects frames below 32×32; here they work the same way (a 1×1 frame zooms to a
/// tiny layer whose motion taps stop at its size).
pub(crate) fn snow_corruption(image: &RgbImage, p: &SnowParams, rng: RngKey) -> RgbImage {
    lanes::in_pool(|| snow_corruption_body(image, p, rng))
}

/// The body of [`snow_corruption`].
fn snow_corruption_body(image: &RgbImage, p: &SnowParams, rng: RngKey) -> RgbImage {
    let (w, h) = (image.width() as usize, image.height() as usize);
    if w == 0 || h == 0 {
        return image.clone();
    }
    let (cw, _, _) = zoom::clipped_zoom_axis(w, p.zoom);
    let (ch, _, _) = zoom::clipped_zoom_axis(h, p.zoom);
    let mut crop = vec![0f64; cw * ch];
    let rows_per_task = (ELEMENTS_PER_TASK / cw).max(1);
    crop.par_chunks_mut(cw * rows_per_task)
        .enumerate()
        .for_each(|(t, rows)| {
            for (i, row) in rows.chunks_exact_mut(cw).enumerate() {
                let mut r = rng.stream((t * rows_per_task + i) as u64);
                for v in row {
                    let n: f64 = StandardNormal.sample(&mut r);
                    *v = p.mean + p.std * n;
                }
            }
        });
    let angle: f64 = rng.rng().random_range(-135.0..-45.0);
    snow_from_crop(image, p, &crop, angle)
}

/// Steps 2–5 of [`snow_corruption`] with a given snow field (H×W, row-major, before zooming) and motion
/// angle in degrees. Only the field's central crop (what the zoom reads) matters.
pub fn snow_with(image: &RgbImage, p: &SnowParams, field: &[f64], angle: f64) -> RgbImage {
    lanes::in_pool(|| snow_with_body(image, p, field, angle))
}

/// The body of [`snow_with`].
fn snow_with_body(image: &RgbImage, p: &SnowParams, field: &[f64], angle: f64) -> RgbImage {
    let (w, h) = (image.width() as usize, image.height() as usize);
    assert_eq!(field.len(), w * h, "field size");
    if w == 0 || h == 0 {
        return image.clone();
    }
    let (cw, left, _) = zoom::clipped_zoom_axis(w, p.zoom);
    let (ch, top, _) = zoom::clipped_zoom_axis(h, p.zoom);
    let crop: Vec<f64> = (top..top + ch)
        .flat_map(|y| field[y * w + left..y * w + left + cw].iter().copied())
        .collect();
    snow_from_crop(image, p, &crop, angle)
}

/// Field elements drawn per rayon task.
const ELEMENTS_PER_TASK: usize = 16_384;

/// Output rows per band of the layer / streak stage.
const BAND_ROWS: usize = 32;

/// Steps 2–5 from the field's central crop (`⌈W/z⌉ × ⌈H/z⌉`, row-major).
///
/// Only what the output needs is computed: the zoomed, thresholded layer is built band by band for
/// the rows and columns the streak taps of the top-left H×W outputs reach (edge-replicated where they
/// reach past the layer, exactly as blurring the whole layer would), streaked with the taps added in
/// order (f64, as `filter::filter_taps` adds them), quantised to bytes; then the blend runs per row in
/// parallel. Bands and rows run in parallel; nothing depends on the thread count.
fn snow_from_crop(image: &RgbImage, p: &SnowParams, crop: &[f64], angle: f64) -> RgbImage {
    let (w, h) = (image.width() as usize, image.height() as usize);
    let (cw, _, zw) = zoom::clipped_zoom_axis(w, p.zoom);
    let (ch, _, zh) = zoom::clipped_zoom_axis(h, p.zoom);
    assert_eq!(crop.len(), cw * ch, "crop size");
    let taps = motion::motion_kernel(p.radius, p.sigma, angle, zw, zh);
    let (min_dx, max_dx) = taps
        .iter()
        .fold((0, 0), |(a, b), t| (a.min(t.1), b.max(t.1)));
    let (min_dy, max_dy) = taps
        .iter()
        .fold((0, 0), |(a, b), t| (a.min(t.2), b.max(t.2)));
    // Layer columns the taps can read (clamped to the layer), and the padding that replicates its
    // edges for reads past them.
    let ncols = zw.min(w + max_dx as usize);
    let (pad_l, pad_r) = (min_dx.unsigned_abs(), max_dx as usize);
    let stride = pad_l + ncols + pad_r;
    let xs = zoom::zoom_axis(cw, zw, 0, ncols);
    let ys = zoom::zoom_axis(ch, zh, 0, zh);
    let geo = Layer {
        crop,
        cw,
        xs: &xs,
        ys: &ys,
        threshold: p.threshold,
        pad_l,
        ncols,
        stride,
    };
    // 2–3: layer band → streak → bytes q = round(S·255).
    let mut q = vec![0u8; w * h];
    q.par_chunks_mut(w * BAND_ROWS)
        .enumerate()
        .for_each(|(b, out)| {
            let y0 = b * BAND_ROWS;
            let n = out.len() / w;
            let r0 = (y0 as isize + min_dy).max(0) as usize;
            let r1 = ((y0 + n) as isize + max_dy).min(zh as isize) as usize;
            streak_band(&geo, &taps, (r0, r1), y0, w, out);
        });
    // 4–5.
    let mut out = vec![0u8; w * h * 3];
    out.par_chunks_mut(w * 3)
        .zip(image.as_raw().par_chunks(w * 3))
        .enumerate()
        .for_each(|(y, (o, src))| {
            let snow = (&q[y * w..][..w], &q[(h - 1 - y) * w..][..w]);
            blend_row(src, snow, p.blend, o);
        });
    RgbImage::from_raw(image.width(), image.height(), out).expect("same size")
}

/// Steps 4–5 for one row: `floor8(b·x + (1 − b)·max(x, gray(x)·1.5 + 0.5) + S + rot180(S))` with x on
/// [0, 1] in f32 (gray per H7) and the layer values `S = q/255` in f64; `snow` holds this row's layer
/// bytes and those of the mirrored row (read right to left). Compiled for AVX2 where available.
///
/// The weights are `f32(b)` and `f32(1 − b)` with `1 − b` taken in f64 (docs/imagenet-c.md#snow):
/// numpy multiplies the float32 image by the Python floats `c[6]` and `1 - c[6]`, each cast to
/// float32. `1 − f32(b)` differs from that in the last bit at b = 0.8 and 0.65 (severities 1 and
/// 4), which moved about 4 and 1.5 bytes per 224² frame by one level.
fn blend_row(src: &[u8], snow: (&[u8], &[u8]), b: f64, out: &mut [u8]) {
    let b = (b as f32, (1.0 - b) as f32);
    blend_row_dispatch(src, snow, b, out);
}

crate::kernels::multiversion! {
    /// [`blend_row_body`] compiled for AVX2 where the CPU has it, else portable.
    fn blend_row_dispatch(src: &[u8], snow: (&[u8], &[u8]), b: (f32, f32), out: &mut [u8]);
    /// [`blend_row`] with AVX2 enabled.
    blend_row_avx2 ["avx2"] => blend_row_body;
    _ => blend_row_body;
    levels blend_row_at;
}

/// The body of [`blend_row`] (weights `(b, 1 − b)` in f32), in planes of up to 256 pixels so that the
/// arithmetic vectorises.
#[inline(always)]
fn blend_row_body(
    src: &[u8],
    (mine, mirrored): (&[u8], &[u8]),
    (b, nb): (f32, f32),
    out: &mut [u8],
) {
    const CHUNK: usize = 256;
    let w = mine.len();
    let mut x = [[0.0f32; CHUNK]; 3];
    let mut s = [0.0f64; CHUNK];
    let mut bytes = [[0u8; CHUNK]; 3];
    for start in (0..w).step_by(CHUNK) {
        let n = CHUNK.min(w - start);
        for (i, p) in src[3 * start..3 * (start + n)].chunks_exact(3).enumerate() {
            for c in 0..3 {
                x[c][i] = f32::from(p[c]) / 255.0;
            }
        }
        for (i, v) in s[..n].iter_mut().enumerate() {
            let (a, m) = (mine[start + i], mirrored[w - 1 - (start + i)]);
            *v = f64::from(a) / 255.0 + f64::from(m) / 255.0;
        }
        for i in 0..n {
            let bright = filter::gray(x[0][i], x[1][i], x[2][i]) * 1.5 + 0.5;
            for c in 0..3 {
                let v = x[c][i];
                let m = if v > bright { v } else { bright };
                let xb = b * v + nb * m;
                bytes[c][i] = lanes::floor8(f64::from(xb) + s[i]);
            }
        }
        for (i, p) in out[3 * start..3 * (start + n)]
            .chunks_exact_mut(3)
            .enumerate()
        {
            p.copy_from_slice(&[bytes[0][i], bytes[1][i], bytes[2][i]]);
        }
    }
}

/// The zoomed, thresholded snow layer, computed row by row from the field's crop.
struct Layer<'a> {
    crop: &'a [f64],
    cw: usize,
    xs: &'a [(usize, usize, f64)],
    ys: &'a [(usize, usize, f64)],
    threshold: f64,
    pad_l: usize,
    ncols: usize,
    stride: usize,
}

impl Layer<'_> {
    /// Layer rows `r0 .. r1` (scipy's align-corners bilinear in f64 with the operations of
    /// `zoom::clipped_zoom_f64`; values below the threshold → 0, others clipped to [0, 1]), each
    /// edge-replicated into its padding, `stride` values per row. The horizontal interpolation of each
    /// crop row involved is computed once and shared by the (z on average) layer rows reading it.
    #[inline(always)]
    fn rows(&self, r0: usize, r1: usize) -> Vec<f64> {
        let mut out = vec![0.0f64; (r1 - r0) * self.stride];
        let (j0, j1) = (self.ys[r0].0, self.ys[r1 - 1].1);
        let mut hrows = vec![0.0f64; (j1 + 1 - j0) * self.ncols];
        for (k, hr) in hrows.chunks_exact_mut(self.ncols).enumerate() {
            let src = &self.crop[(j0 + k) * self.cw..][..self.cw];
            for (o, &(x0, x1, tx)) in hr.iter_mut().zip(self.xs) {
                *o = src[x0] * (1.0 - tx) + src[x1] * tx;
            }
        }
        let (hrows, t) = (&hrows, self.threshold);
        for (k, row) in out.chunks_exact_mut(self.stride).enumerate() {
            let (y0, y1, ty) = self.ys[r0 + k];
            let top = &hrows[(y0 - j0) * self.ncols..][..self.ncols];
            let bot = &hrows[(y1 - j0) * self.ncols..][..self.ncols];
            let body = &mut row[self.pad_l..self.pad_l + self.ncols];
            for ((o, &a), &b) in body.iter_mut().zip(top).zip(bot) {
                let v = a * (1.0 - ty) + b * ty;
                let c = v.clamp(0.0, 1.0);
                *o = if v < t { 0.0 } else { c };
            }
            let (first, last) = (row[self.pad_l], row[self.pad_l + self.ncols - 1]);
            row[..self.pad_l].fill(first);
            row[self.pad_l + self.ncols..].fill(last);
        }
        out
    }
}

crate::kernels::multiversion! {
    /// Builds the layer rows `r0 .. r1` and streaks output rows `y0 ..` (as many as `out` holds,
    /// `w` each) from them, storing `round_half_even(S·255)` clamped to a byte. Compiled for AVX2
    /// where available.
    fn streak_band(
        geo: &Layer<'_>,
        taps: &[(f64, isize, isize)],
        rows: (usize, usize),
        y0: usize,
        w: usize,
        out: &mut [u8],
    );
    /// [`streak_band`] with AVX2 enabled.
    streak_band_avx2 ["avx2"] => streak_band_body;
    _ => streak_band_body;
    levels streak_band_at;
}

/// The body of [`streak_band`].
#[inline(always)]
fn streak_band_body(
    geo: &Layer<'_>,
    taps: &[(f64, isize, isize)],
    (r0, r1): (usize, usize),
    y0: usize,
    w: usize,
    out: &mut [u8],
) {
    let band = geo.rows(r0, r1);
    streak_rows_body(&band, geo, taps, (r0, r1), y0, w, out);
}

/// Streaks output rows from the layer rows `r0 .. r1` held in `band` ([`lanes::accumulate_taps`]).
#[inline(always)]
fn streak_rows_body(
    band: &[f64],
    geo: &Layer<'_>,
    taps: &[(f64, isize, isize)],
    (r0, r1): (usize, usize),
    y0: usize,
    w: usize,
    out: &mut [u8],
) {
    let mut acc_row = vec![0.0f64; w];
    let mut srcs: Vec<(f64, &[f64])> = Vec::with_capacity(taps.len());
    for (i, o) in out.chunks_exact_mut(w).enumerate() {
        let y = (y0 + i) as isize;
        srcs.clear();
        srcs.extend(taps.iter().map(|&(wt, dx, dy)| {
            let row = (y + dy).clamp(r0 as isize, r1 as isize - 1) as usize - r0;
            let start = row * geo.stride + (geo.pad_l as isize + dx) as usize;
            (wt, &band[start..start + w])
        }));
        lanes::accumulate_taps(&mut acc_row, &srcs);
        for (o, &a) in o.iter_mut().zip(&acc_row) {
            *o = lanes::trunc_u8((a * 255.0).round_ties_even());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::kernels::levels_agree! {
        fn blend_row_levels_agree(|level| {
            let src: Vec<u8> = (0..3 * 300).map(|i| (i * 53 % 256) as u8).collect();
            let mine: Vec<u8> = (0..300).map(|i| (i * 17 % 256) as u8).collect();
            let mirrored: Vec<u8> = (0..300).map(|i| (i * 29 % 256) as u8).collect();
            let mut out = vec![0u8; src.len()];
            let b = (0.8f32, (1.0 - 0.8f64) as f32);
            blend_row_at(level, &src, (&mine, &mirrored), b, &mut out).map(|()| out)
        });
        fn streak_band_levels_agree(|level| {
            let (cw, ch, w, h) = (11, 9, 30, 20);
            let crop: Vec<f64> = (0..cw * ch).map(|i| (i * 37 % 101) as f64 / 80.0).collect();
            let xs = zoom::zoom_axis(cw, w + 2, 0, w + 2);
            let ys = zoom::zoom_axis(ch, h, 0, h);
            let (pad_l, ncols) = (3, w + 2);
            let geo = Layer {
                crop: &crop,
                cw,
                xs: &xs,
                ys: &ys,
                threshold: 0.5,
                pad_l,
                ncols,
                stride: pad_l + ncols + 2,
            };
            let taps = [(0.4, 0, 0), (0.3, -1, 1), (0.2, -2, 2), (0.1, 2, -1)];
            let mut out = vec![0u8; w * (h - 4)];
            streak_band_at(level, &geo, &taps, (0, h), 2, w, &mut out).map(|()| out)
        });
    }

    #[test]
    fn table_matches_the_reference() {
        let rows: Vec<(f64, f64, f64, f64, usize, f64, f64)> = SNOW
            .iter()
            .map(|p| {
                (
                    p.mean,
                    p.std,
                    p.zoom,
                    p.threshold,
                    p.radius,
                    p.sigma,
                    p.blend,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (0.1, 0.3, 3.0, 0.5, 10, 4.0, 0.8),
                (0.2, 0.3, 2.0, 0.5, 12, 4.0, 0.7),
                (0.55, 0.3, 4.0, 0.9, 12, 8.0, 0.7),
                (0.55, 0.3, 4.5, 0.85, 12, 8.0, 0.65),
                (0.55, 0.3, 2.5, 0.85, 12, 12.0, 0.55),
            ]
        );
        // The untrimmed zoomed layer at 224: ceil(224/4.5) = 50 → round(225) = 225.
        assert_eq!(zoom::clipped_zoom_axis(224, 4.5), (50, 87, 225));
    }

    #[test]
    fn all_sizes_run_and_keep_size() {
        for (w, h) in [(0, 0), (1, 1), (32, 32), (37, 23), (1280, 720)] {
            let img = RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 90]));
            for p in &SNOW {
                assert_eq!(snow_corruption(&img, p, RngKey(2)).dimensions(), (w, h));
            }
        }
    }

    #[test]
    fn brightens_and_is_deterministic_per_key_and_across_threads() {
        let img = RgbImage::from_fn(61, 47, |x, y| {
            image::Rgb([(x * 3) as u8, (y * 5) as u8, 40])
        });
        let run = || snow_corruption(&img, &SNOW[2], RngKey(11));
        let a = run();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(run);
        let many = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap()
            .install(run);
        assert_eq!(a, one);
        assert_eq!(a, many);
        assert_ne!(a, snow_corruption(&img, &SNOW[2], RngKey(12)));
        // Snow only adds light: never darker than the input (beyond float truncation).
        assert!(
            a.as_raw()
                .iter()
                .zip(img.as_raw())
                .all(|(o, i)| u16::from(*o) + 1 >= u16::from(*i))
        );
    }
}
