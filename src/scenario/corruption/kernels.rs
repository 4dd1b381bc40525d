//! Shared filtering kernels of the ImageNet-C blur and weather corruptions (REFERENCE §1.4):
//! the separable Gaussian filter (H1, scipy `gaussian_filter` with 'nearest' or 'reflect' borders), the
//! anti-aliased disk kernel (H2, defocus), a generic centred 2-D correlation (OpenCV `filter2D`), the
//! imagecorruptions `clipped_zoom` (H3), the one-sided motion-blur kernel (H5) and OpenCV grayscale (H7).
//!
//! Images are interleaved row-major `f64` buffers of `width × height × channels`. Every filter pads once
//! and then adds whole contiguous rows (`acc += k · row`), which the compiler vectorises; rows are
//! computed in parallel with rayon, each row always in the same order, so results never depend on the
//! thread count.

use rayon::prelude::*;

/// How a filter reads outside the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Border {
    /// Edge replication, `a a | a b c | c c` (scipy 'nearest', OpenCV `BORDER_REPLICATE`).
    Nearest,
    /// Half-sample symmetric, `b a | a b c | c b` (scipy 'reflect', OpenCV `BORDER_REFLECT`).
    Reflect,
    /// Whole-sample symmetric, `c b | a b c | b a` (OpenCV `BORDER_REFLECT_101`, its default).
    Reflect101,
}

/// The in-image index that position `i` (possibly outside `0..n`) reads under `border`; periodic for
/// the reflections, so any distance works. `n` must be at least 1.
pub fn border_index(i: isize, n: usize, border: Border) -> usize {
    let n_i = n as isize;
    if (0..n_i).contains(&i) {
        return i as usize;
    }
    match border {
        Border::Nearest => i.clamp(0, n_i - 1) as usize,
        Border::Reflect => {
            let p = 2 * n_i;
            let m = i.rem_euclid(p);
            (if m >= n_i { p - 1 - m } else { m }) as usize
        }
        Border::Reflect101 => {
            if n == 1 {
                return 0;
            }
            let p = 2 * n_i - 2;
            let m = i.rem_euclid(p);
            (if m >= n_i { p - m } else { m }) as usize
        }
    }
}

/// scipy's Gaussian radius `int(truncate·σ + 0.5)` (REFERENCE H1: σ 1 → 4, 3 → 12, 6 → 24 with truncate 4).
pub fn gaussian_radius(sigma: f64, truncate: f64) -> usize {
    (truncate * sigma + 0.5) as usize
}

/// scipy's 1-D Gaussian kernel: `exp(−i²/(2σ²))` for i ∈ [−r, r] ([`gaussian_radius`]), normalised to sum 1.
pub fn gaussian_kernel1d(sigma: f64, truncate: f64) -> Vec<f64> {
    let r = gaussian_radius(sigma, truncate) as isize;
    let s2 = sigma * sigma;
    let mut k: Vec<f64> = (-r..=r)
        .map(|i| (-0.5 / s2 * (i * i) as f64).exp())
        .collect();
    let sum: f64 = k.iter().sum();
    k.iter_mut().for_each(|v| *v /= sum);
    k
}

/// `out[i] = Σ_t w_t · src_t[i]` over the taps `(w_t, src_t)`, in tap order, for every `i`. Blocks of 8
/// outputs stay in registers across all taps (one store per output instead of one per tap). Compiled
/// twice: with AVX2 where the CPU has it (4 lanes instead of SSE2's 2), else portable. The arithmetic is
/// the same (separate multiply and add, never fused: Rust does not contract), so both give identical bits.
fn accumulate(out: &mut [f64], taps: &[(f64, &[f64])]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: `accumulate_avx2` is compiled with `#[target_feature(enable = "avx2")]`; calling it is
        // sound exactly when the CPU supports AVX2, which was just checked. It takes only safe references
        // and contains no unsafe code.
        unsafe { accumulate_avx2(out, taps) };
        return;
    }
    accumulate_portable(out, taps);
}

/// [`accumulate`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn accumulate_avx2(out: &mut [f64], taps: &[(f64, &[f64])]) {
    accumulate_portable(out, taps);
}

/// The body of [`accumulate`].
#[inline(always)]
fn accumulate_portable(out: &mut [f64], taps: &[(f64, &[f64])]) {
    const B: usize = 8;
    let n = out.len();
    let full = n / B * B;
    for start in (0..full).step_by(B) {
        let mut acc = [0.0f64; B];
        for &(w, src) in taps {
            let s: &[f64; B] = src[start..start + B].try_into().expect("block");
            for l in 0..B {
                acc[l] += w * s[l];
            }
        }
        out[start..start + B].copy_from_slice(&acc);
    }
    for i in full..n {
        let mut acc = 0.0;
        for &(w, src) in taps {
            acc += w * src[i];
        }
        out[i] = acc;
    }
}

/// Minimum number of elements a rayon task should get.
const ELEMENTS_PER_TASK: usize = 8_192;

/// Rows per rayon task for rows of `row_len` elements.
fn rows_per_task(row_len: usize) -> usize {
    (ELEMENTS_PER_TASK / row_len.max(1)).max(1)
}

/// Correlates every row of `data` horizontally with `k` (centred, `k.len()` odd) under `border`, in
/// place (each row is copied into a padded scratch row first).
fn filter_rows(data: &mut [f64], w: usize, ch: usize, k: &[f64], border: Border) {
    let r = k.len() / 2;
    let row_len = w * ch;
    let per = rows_per_task(row_len);
    data.par_chunks_mut(row_len * per).for_each(|rows| {
        let mut padded = vec![0.0; (w + 2 * r) * ch];
        for o in rows.chunks_exact_mut(row_len) {
            for (px, p) in padded.chunks_exact_mut(ch).enumerate() {
                let sx = border_index(px as isize - r as isize, w, border);
                p.copy_from_slice(&o[sx * ch..(sx + 1) * ch]);
            }
            let taps: Vec<(f64, &[f64])> = k
                .iter()
                .enumerate()
                .map(|(j, &kj)| (kj, &padded[j * ch..j * ch + row_len]))
                .collect();
            accumulate(o, &taps);
        }
    });
}

/// Correlates every column of `src` vertically with `k` (centred) under `border`.
fn filter_cols(src: &[f64], w: usize, h: usize, ch: usize, k: &[f64], border: Border) -> Vec<f64> {
    let mut out = vec![0.0; w * ch * h];
    filter_cols_into(src, &mut out, w, h, ch, k, border);
    out
}

/// [`filter_cols`] into an existing buffer of the same size.
fn filter_cols_into(
    src: &[f64],
    out: &mut [f64],
    w: usize,
    h: usize,
    ch: usize,
    k: &[f64],
    border: Border,
) {
    let r = k.len() / 2;
    let row_len = w * ch;
    let per = rows_per_task(row_len);
    out.par_chunks_mut(row_len * per)
        .enumerate()
        .for_each(|(t, rows)| {
            for (i, o) in rows.chunks_exact_mut(row_len).enumerate() {
                let y = t * per + i;
                let taps: Vec<(f64, &[f64])> = k
                    .iter()
                    .enumerate()
                    .map(|(j, &kj)| {
                        let sy = border_index(y as isize + j as isize - r as isize, h, border);
                        (kj, &src[sy * row_len..(sy + 1) * row_len])
                    })
                    .collect();
                accumulate(o, &taps);
            }
        });
}

/// REFERENCE H1: scipy `gaussian_filter(data, (σ, σ, 0), mode, truncate)` on an interleaved
/// `width × height × channels` image: separable, the spatial axes only (rows first, as scipy does axis 0
/// first, then columns), kernel [`gaussian_kernel1d`]. ImageNet-C uses truncate 4 and [`Border::Nearest`]
/// (gaussian_blur, glass_blur); elastic_transform uses truncate 3 and [`Border::Reflect`].
/// Returns `data` unchanged for an empty image or σ ≤ 0.
pub fn gaussian_filter(
    data: &[f64],
    width: usize,
    height: usize,
    channels: usize,
    sigma: f64,
    truncate: f64,
    border: Border,
) -> Vec<f64> {
    assert_eq!(data.len(), width * height * channels, "buffer size");
    if data.is_empty() || sigma <= 0.0 {
        return data.to_vec();
    }
    let mut out = vec![0.0; data.len()];
    gaussian_filter_into(
        data, &mut out, width, height, channels, sigma, truncate, border,
    );
    out
}

/// [`gaussian_filter`] writing into `out` (same size as `data`), to reuse buffers across calls.
#[allow(clippy::too_many_arguments)]
pub fn gaussian_filter_into(
    data: &[f64],
    out: &mut [f64],
    width: usize,
    height: usize,
    channels: usize,
    sigma: f64,
    truncate: f64,
    border: Border,
) {
    assert_eq!(data.len(), width * height * channels, "buffer size");
    assert_eq!(out.len(), data.len(), "output size");
    if data.is_empty() || sigma <= 0.0 {
        out.copy_from_slice(data);
        return;
    }
    let k = gaussian_kernel1d(sigma, truncate);
    filter_cols_into(data, out, width, height, channels, &k, border);
    filter_rows(out, width, channels, &k, border);
}

/// OpenCV `getGaussianKernel(n, σ)` for σ > 0: `exp(−(i − (n−1)/2)²/(2σ²))`, normalised to sum 1.
pub fn opencv_gaussian_kernel(n: usize, sigma: f64) -> Vec<f64> {
    let c = (n as f64 - 1.0) / 2.0;
    let mut k: Vec<f64> = (0..n)
        .map(|i| (-((i as f64 - c).powi(2)) / (2.0 * sigma * sigma)).exp())
        .collect();
    let sum: f64 = k.iter().sum();
    k.iter_mut().for_each(|v| *v /= sum);
    k
}

/// REFERENCE H2: the anti-aliased disk of defocus_blur, as a square row-major kernel and its side.
///
/// Support −8..8 (17×17) for radius ≤ 8, else −r..r; 1 where x² + y² ≤ r², divided by the count; then
/// blurred with OpenCV `GaussianBlur` (3×3 for r ≤ 8, 5×5 above; σ = `alias_blur`; border
/// reflect-101) and **not** renormalised: at radius 8 and 10 the disk touches its support's edge and the
/// reflected border adds mass, so those kernels sum to 1.012975 and 1.010786 (REFERENCE §2.7). The
/// reference holds the kernel in float32; so does this (values rounded to f32, returned as f64).
pub fn disk_kernel(radius: usize, alias_blur: f64) -> (Vec<f64>, usize) {
    let (half, ksize) = if radius <= 8 { (8, 3) } else { (radius, 5) };
    let n = 2 * half + 1;
    let r2 = (radius * radius) as isize;
    let mut disk: Vec<f64> = (0..n * n)
        .map(|i| {
            let (y, x) = (
                (i / n) as isize - half as isize,
                (i % n) as isize - half as isize,
            );
            f64::from(u8::from(x * x + y * y <= r2))
        })
        .collect();
    let count: f64 = disk.iter().sum();
    disk.iter_mut()
        .for_each(|v| *v = f64::from((*v / count) as f32));
    let g = opencv_gaussian_kernel(ksize, alias_blur);
    let g: Vec<f64> = g.iter().map(|&v| f64::from(v as f32)).collect();
    let mut blurred = filter_cols(&disk, n, n, 1, &g, Border::Reflect101);
    filter_rows(&mut blurred, n, 1, &g, Border::Reflect101);
    (blurred.iter().map(|&v| f64::from(v as f32)).collect(), n)
}

/// Pads an interleaved image by `top`, `bottom`, `left`, `right` under `border`.
pub fn pad(
    data: &[f64],
    dims: (usize, usize, usize),
    margins: (usize, usize, usize, usize),
    border: Border,
) -> Vec<f64> {
    pad_map(data, dims, margins, border, |v| v)
}

/// [`pad`] of any element type, each element converted by `load`.
fn pad_map<T: Copy>(
    data: &[T],
    (width, height, channels): (usize, usize, usize),
    (top, bottom, left, right): (usize, usize, usize, usize),
    border: Border,
    load: impl Fn(T) -> f64,
) -> Vec<f64> {
    let (pw, ph) = (width + left + right, height + top + bottom);
    let mut out = vec![0.0; pw * ph * channels];
    for (py, row) in out.chunks_exact_mut(pw * channels).enumerate() {
        let sy = border_index(py as isize - top as isize, height, border);
        let src = &data[sy * width * channels..(sy + 1) * width * channels];
        for (px, p) in row.chunks_exact_mut(channels).enumerate() {
            let sx = border_index(px as isize - left as isize, width, border);
            for (c, v) in p.iter_mut().enumerate() {
                *v = load(src[sx * channels + c]);
            }
        }
    }
    out
}

/// Correlation with a sparse list of taps `(weight, dx, dy)`: `out(y, x) = Σ w · in(y + dy, x + dx)` per
/// channel, reading outside the image under `border`, taps added in list order. The engine behind
/// [`filter2d`] and the motion blur.
pub fn filter_taps(
    data: &[f64],
    dims: (usize, usize, usize),
    taps: &[(f64, isize, isize)],
    border: Border,
) -> Vec<f64> {
    filter_taps_map(data, dims, taps, border, |v| v, |v| v)
}

/// [`filter_taps`] reading any element type through `load` and writing each result through `store`
/// (e.g. u8 in, floor8 out), so no full-size f64 copy of the input or output is made.
pub fn filter_taps_map<T, U>(
    data: &[T],
    (width, height, channels): (usize, usize, usize),
    taps: &[(f64, isize, isize)],
    border: Border,
    load: impl Fn(T) -> f64,
    store: impl Fn(f64) -> U + Sync,
) -> Vec<U>
where
    T: Copy,
    U: Copy + Default + Send,
{
    let row_len = width * channels;
    if data.is_empty() || row_len == 0 {
        return Vec::new();
    }
    let m = |f: fn(isize) -> isize| taps.iter().map(|t| f(t.1).max(0)).max().unwrap_or(0) as usize;
    let my = |f: fn(isize) -> isize| taps.iter().map(|t| f(t.2).max(0)).max().unwrap_or(0) as usize;
    let (left, right, top, bottom) = (m(|d| -d), m(|d| d), my(|d| -d), my(|d| d));
    let padded = pad_map(
        data,
        (width, height, channels),
        (top, bottom, left, right),
        border,
        load,
    );
    let pw = (width + left + right) * channels;
    let mut out = vec![U::default(); row_len * height];
    let per = rows_per_task(row_len);
    out.par_chunks_mut(row_len * per)
        .enumerate()
        .for_each(|(t, rows)| {
            let mut acc = vec![0.0; row_len];
            for (i, o) in rows.chunks_exact_mut(row_len).enumerate() {
                let y = t * per + i;
                let segs: Vec<(f64, &[f64])> = taps
                    .iter()
                    .map(|&(w, dx, dy)| {
                        let row = (y as isize + dy + top as isize) as usize;
                        let start = row * pw + (dx + left as isize) as usize * channels;
                        (w, &padded[start..start + row_len])
                    })
                    .collect();
                accumulate(&mut acc, &segs);
                o.iter_mut().zip(&acc).for_each(|(o, &a)| *o = store(a));
            }
        });
    out
}

/// OpenCV `filter2D` (correlation, anchor at the centre) with a square row-major kernel of odd side
/// `ksize`, each channel separately, under `border` (OpenCV's default is [`Border::Reflect101`]).
/// Zero taps are skipped.
pub fn filter2d(
    data: &[f64],
    dims: (usize, usize, usize),
    kernel: &[f64],
    ksize: usize,
    border: Border,
) -> Vec<f64> {
    filter_taps(data, dims, &kernel_taps(kernel, ksize), border)
}

/// The non-zero taps `(weight, dx, dy)` of a square row-major kernel of odd side `ksize`, centred.
pub fn kernel_taps(kernel: &[f64], ksize: usize) -> Vec<(f64, isize, isize)> {
    let half = (ksize / 2) as isize;
    kernel
        .iter()
        .enumerate()
        .filter(|(_, w)| **w != 0.0)
        .map(|(i, &w)| (w, (i % ksize) as isize - half, (i / ksize) as isize - half))
        .collect()
}

/// One axis of scipy `zoom(order=1)` (align-corners bilinear, REFERENCE H3): for each of the first
/// `keep` output positions of an `n_in → n_out` zoom, the (lower index, upper index, upper weight)
/// taken from the crop starting at `offset`.
fn zoom_axis(n_in: usize, n_out: usize, offset: usize, keep: usize) -> Vec<(usize, usize, f64)> {
    let scale = if n_out > 1 {
        (n_in as f64 - 1.0) / (n_out as f64 - 1.0)
    } else {
        1.0
    };
    (0..keep)
        .map(|o| {
            let c = (o as f64 * scale).min(n_in as f64 - 1.0).max(0.0);
            let lo = (c.floor() as usize).min(n_in - 1);
            let hi = (lo + 1).min(n_in - 1);
            (offset + lo, offset + hi, c - lo as f64)
        })
        .collect()
}

/// The crop size, crop offset and zoomed size of one axis of imagecorruptions' `clipped_zoom`:
/// `ch = ceil(n / z)`, `top = (n − ch) // 2`, `out = round(ch · z)` (Python round, half to even).
pub fn clipped_zoom_axis(n: usize, z: f64) -> (usize, usize, usize) {
    let ch = (n as f64 / z).ceil() as usize;
    let top = n.saturating_sub(ch) / 2;
    let out = (ch as f64 * z).round_ties_even() as usize;
    (ch, top, out)
}

/// imagecorruptions' `clipped_zoom(img, z)` (REFERENCE H3, IC variant, z ≥ 1) followed by its callers'
/// top-left crop: each axis cropped with its own size ([`clipped_zoom_axis`]) — so non-square frames
/// work — zoomed with scipy `zoom(order=1)` (align-corners bilinear, computed in f64) and **not**
/// trimmed; the top-left `out_w × out_h` of the zoomed crop is returned (the zoomed crop is never smaller
/// than the input; pass the zoomed size from [`clipped_zoom_axis`] to get all of it). Interleaved f32 in
/// and out, as zoom_blur holds its image in float32 (scipy computes in f64 and stores the input's type).
pub fn clipped_zoom(
    data: &[f32],
    dims: (usize, usize, usize),
    z: f64,
    out: (usize, usize),
) -> Vec<f32> {
    clipped_zoom_generic(data, dims, z, out, |v| v as f32)
}

/// `acc += clipped_zoom(data, dims, z, (width, height))` element-wise in f32 without materialising
/// the layer (zoom_blur's running sum; the same f32 additions as adding the stored layer).
pub fn clipped_zoom_add(data: &[f32], dims: (usize, usize, usize), z: f64, acc: &mut [f32]) {
    let (width, height, channels) = dims;
    assert_eq!(acc.len(), width * height * channels, "accumulator size");
    let (cw, left, zw) = clipped_zoom_axis(width, z);
    let (chh, top, zh) = clipped_zoom_axis(height, z);
    let xs = zoom_axis(cw, zw, left, width.min(zw));
    let ys = zoom_axis(chh, zh, top, height.min(zh));
    let row_len = width * channels;
    if row_len == 0 || data.is_empty() {
        return;
    }
    acc.par_chunks_mut(row_len)
        .zip(ys.par_iter())
        .for_each(|(o, &(y0, y1, ty))| {
            let r0 = &data[y0 * row_len..(y0 + 1) * row_len];
            let r1 = &data[y1 * row_len..(y1 + 1) * row_len];
            for (p, &(x0, x1, tx)) in o.chunks_exact_mut(channels).zip(&xs) {
                for c in 0..channels {
                    let a = f64::from(r0[x0 * channels + c]);
                    let b = f64::from(r0[x1 * channels + c]);
                    let d = f64::from(r1[x0 * channels + c]);
                    let e = f64::from(r1[x1 * channels + c]);
                    let top = a * (1.0 - tx) + b * tx;
                    let bot = d * (1.0 - tx) + e * tx;
                    p[c] += (top * (1.0 - ty) + bot * ty) as f32;
                }
            }
        });
}

/// [`clipped_zoom`] on f64 data (snow's float64 layer).
pub fn clipped_zoom_f64(
    data: &[f64],
    dims: (usize, usize, usize),
    z: f64,
    out: (usize, usize),
) -> Vec<f64> {
    clipped_zoom_generic(data, dims, z, out, |v| v)
}

/// The body of [`clipped_zoom`] for any element type that widens to f64; `store` narrows the result.
fn clipped_zoom_generic<T>(
    data: &[T],
    (width, height, channels): (usize, usize, usize),
    z: f64,
    (out_w, out_h): (usize, usize),
    store: fn(f64) -> T,
) -> Vec<T>
where
    T: Copy + Into<f64> + Default + Send + Sync,
{
    let (cw, left, zw) = clipped_zoom_axis(width, z);
    let (chh, top, zh) = clipped_zoom_axis(height, z);
    let xs = zoom_axis(cw, zw, left, out_w.min(zw));
    let ys = zoom_axis(chh, zh, top, out_h.min(zh));
    let row_len = out_w * channels;
    let mut out = vec![T::default(); row_len * out_h];
    if row_len == 0 || data.is_empty() {
        return out;
    }
    out.par_chunks_mut(row_len)
        .zip(ys.par_iter())
        .for_each(|(o, &(y0, y1, ty))| {
            let r0 = &data[y0 * width * channels..(y0 + 1) * width * channels];
            let r1 = &data[y1 * width * channels..(y1 + 1) * width * channels];
            for (p, &(x0, x1, tx)) in o.chunks_exact_mut(channels).zip(&xs) {
                for c in 0..channels {
                    let a: f64 = r0[x0 * channels + c].into();
                    let b: f64 = r0[x1 * channels + c].into();
                    let d: f64 = r1[x0 * channels + c].into();
                    let e: f64 = r1[x1 * channels + c].into();
                    let top = a * (1.0 - tx) + b * tx;
                    let bot = d * (1.0 - tx) + e * tx;
                    p[c] = store(top * (1.0 - ty) + bot * ty);
                }
            }
        });
    out
}

/// REFERENCE H5 (imagecorruptions' numpy port of ImageMagick `MotionBlurImage`): taps
/// `(weight, dx, dy)` for radius `r`, sigma `σ`, angle `θ` degrees on an image of `width × height`.
///
/// Width w = 2r + 1; weights `exp(−i²/(2σ²))` for i = 0..w−1, a **one-sided** half-Gaussian whose first
/// tap is the pixel itself, normalised to sum 1; tap i reads
/// `dx = ceil(i·p₁/|p| − 0.5)`, `dy = ceil(i·p₀/|p| − 0.5)` with `p = (w·sin θ, w·cos θ)` (computed in
/// this order, as the port does). Taps stop (without renormalising) at the first one with `|dy| ≥ height`
/// or `|dx| ≥ width`, as the port does for small images.
pub fn motion_kernel(
    radius: usize,
    sigma: f64,
    angle_deg: f64,
    width: usize,
    height: usize,
) -> Vec<(f64, isize, isize)> {
    let w = 2 * radius + 1;
    let k: Vec<f64> = (0..w)
        .map(|i| {
            let x = i as f64;
            (-(x * x) / (2.0 * sigma * sigma)).exp() / ((2.0 * std::f64::consts::PI).sqrt() * sigma)
        })
        .collect();
    let z: f64 = k.iter().sum();
    let a = angle_deg * (std::f64::consts::PI / 180.0);
    let (p0, p1) = (w as f64 * a.sin(), w as f64 * a.cos());
    let hyp = p0.hypot(p1);
    let mut taps = Vec::with_capacity(w);
    for (i, &ki) in k.iter().enumerate() {
        let dy = ((i as f64 * p0) / hyp - 0.5).ceil() as isize;
        let dx = ((i as f64 * p1) / hyp - 0.5).ceil() as isize;
        if dy.unsigned_abs() >= height || dx.unsigned_abs() >= width {
            break;
        }
        taps.push((ki / z, dx, dy));
    }
    taps
}

/// REFERENCE H7: OpenCV RGB→GRAY on float32, `0.299 R + 0.587 G + 0.114 B`.
#[inline]
pub fn gray(r: f32, g: f32, b: f32) -> f32 {
    0.299 * r + 0.587 * g + 0.114 * b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaussian_radius_follows_scipy() {
        for (s, t, r) in [
            (0.7, 4.0, 3),
            (1.0, 4.0, 4),
            (1.5, 4.0, 6),
            (3.0, 4.0, 12),
            (6.0, 4.0, 24),
            (2.44, 3.0, 7),
        ] {
            assert_eq!(gaussian_radius(s, t), r, "σ {s}");
        }
        let k = gaussian_kernel1d(1.0, 4.0);
        assert_eq!(k.len(), 9);
        assert!((k.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // exp(0) / Σ exp(−i²/2), i = −4..4
        let z: f64 = (-4..=4).map(|i: i32| (-(i * i) as f64 / 2.0).exp()).sum();
        assert!((k[4] - 1.0 / z).abs() < 1e-15);
    }

    #[test]
    fn borders_index_like_scipy_and_opencv() {
        let idx = |b| (-4..8).map(|i| border_index(i, 4, b)).collect::<Vec<_>>();
        assert_eq!(idx(Border::Nearest), [0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3]);
        assert_eq!(idx(Border::Reflect), [3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0]);
        assert_eq!(
            idx(Border::Reflect101),
            [2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1]
        );
        assert_eq!(border_index(-5, 1, Border::Reflect101), 0);
        assert_eq!(border_index(7, 1, Border::Reflect), 0);
    }

    #[test]
    fn gaussian_filter_keeps_constants_and_mass() {
        let (w, h) = (5, 3);
        let flat = vec![0.25; w * h * 3];
        for b in [Border::Nearest, Border::Reflect, Border::Reflect101] {
            let out = gaussian_filter(&flat, w, h, 3, 3.0, 4.0, b);
            assert!(out.iter().all(|v| (v - 0.25).abs() < 1e-12));
        }
        // A centred impulse in a large image spreads to the outer product of the 1-D kernel.
        let n = 21;
        let mut img = vec![0.0; n * n];
        img[10 * n + 10] = 1.0;
        let out = gaussian_filter(&img, n, n, 1, 1.0, 4.0, Border::Nearest);
        let k = gaussian_kernel1d(1.0, 4.0);
        assert!((out[(10 + 2) * n + 10 - 1] - k[6] * k[3]).abs() < 1e-15);
        assert!((out.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn disk_kernels_have_the_documented_sums_and_sizes() {
        let want = [
            (3, 0.1, 17, 1.0),
            (4, 0.5, 17, 1.0),
            (6, 0.5, 17, 1.0),
            (8, 0.5, 17, 1.012975),
            (10, 0.5, 21, 1.010786),
        ];
        for (r, a, n, sum) in want {
            let (k, side) = disk_kernel(r, a);
            assert_eq!(side, n);
            assert_eq!(k.len(), n * n);
            let s: f64 = k.iter().sum();
            assert!((s - sum).abs() < 5e-6, "radius {r}: sum {s}");
        }
        // Non-zero taps before the anti-alias blur: 29, 49, 113, 197, 317 (REFERENCE §2.7).
        for (r, taps) in [(3isize, 29), (4, 49), (6, 113), (8, 197), (10, 317)] {
            let n = (-r..=r)
                .flat_map(|y| (-r..=r).map(move |x| (x, y)))
                .filter(|(x, y)| x * x + y * y <= r * r)
                .count();
            assert_eq!(n, taps);
        }
    }

    #[test]
    fn opencv_gaussian_kernel_is_symmetric_and_normalised() {
        let k = opencv_gaussian_kernel(3, 0.5);
        let e = (-2.0f64).exp();
        assert!((k[1] - 1.0 / (1.0 + 2.0 * e)).abs() < 1e-15);
        assert_eq!(k[0], k[2]);
    }

    #[test]
    fn motion_kernel_taps_and_offsets() {
        // Angle 0: taps along +x, dx = ceil(i − 0.5) = i, dy = 0.
        let t = motion_kernel(10, 3.0, 0.0, 224, 224);
        assert_eq!(t.len(), 21);
        assert!(
            t.iter()
                .enumerate()
                .all(|(i, &(_, dx, dy))| dx == i as isize && dy == 0)
        );
        let s: f64 = t.iter().map(|t| t.0).sum();
        assert!((s - 1.0).abs() < 1e-12);
        // One-sided: weights decrease from the pixel itself; ratio k1/k0 = exp(−1/18).
        assert!((t[1].0 / t[0].0 - (-1.0f64 / 18.0).exp()).abs() < 1e-12);
        // 45°: dx = dy = ceil(i·0.7071 − 0.5): 0, 1, 1, 2, 3, 4, 4.
        let t = motion_kernel(3, 2.0, 45.0, 100, 100);
        let d: Vec<(isize, isize)> = t.iter().map(|t| (t.1, t.2)).collect();
        assert_eq!(d, [(0, 0), (1, 1), (1, 1), (2, 2), (3, 3), (4, 4), (4, 4)]);
        // −30°: dx = ceil(i·0.866 − 0.5), dy = ceil(−i·0.5 − 0.5).
        let t = motion_kernel(2, 2.0, -30.0, 100, 100);
        let d: Vec<(isize, isize)> = t.iter().map(|t| (t.1, t.2)).collect();
        assert_eq!(d, [(0, 0), (1, 0), (2, -1), (3, -1), (3, -2)]);
        // Small images stop early (no renormalisation).
        let t = motion_kernel(10, 3.0, 0.0, 5, 5);
        assert_eq!(t.len(), 5);
    }

    #[test]
    fn clipped_zoom_sizes_follow_the_reference() {
        // REFERENCE H3 example: z = 1.03 on 224 → crop 218 at 3, zoomed to 225.
        assert_eq!(clipped_zoom_axis(224, 1.03), (218, 3, 225));
        assert_eq!(clipped_zoom_axis(1, 4.5), (1, 0, 4));
        // Identity zoom returns the image.
        let img: Vec<f32> = (0..12 * 5 * 3).map(|v| v as f32).collect();
        assert_eq!(clipped_zoom(&img, (12, 5, 3), 1.0, (12, 5)), img);
        // z = 2 on 4 samples: crop [1, 3), zoomed to 4 samples at 0, 1/3, 2/3, 1.
        let row = [0f32, 3.0, 6.0, 9.0];
        let z = clipped_zoom(&row, (4, 1, 1), 2.0, (4, 1));
        let want = [3.0, 4.0, 5.0, 6.0];
        assert!(
            z.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-5),
            "{z:?}"
        );
    }

    #[test]
    fn filter2d_and_taps_shift_with_replication() {
        let img: Vec<f64> = (0..4).map(f64::from).collect();
        let out = filter_taps(&img, (4, 1, 1), &[(1.0, 2, 0)], Border::Nearest);
        assert_eq!(out, [2.0, 3.0, 3.0, 3.0]);
        let out = filter_taps(&img, (4, 1, 1), &[(1.0, -1, 0)], Border::Nearest);
        assert_eq!(out, [0.0, 0.0, 1.0, 2.0]);
        let k = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        let out = filter2d(&img, (4, 1, 1), &k, 3, Border::Reflect101);
        assert_eq!(out, [1.0, 2.0, 3.0, 2.0]);
    }

    #[test]
    fn gray_weights() {
        assert!((gray(1.0, 1.0, 1.0) - 1.0).abs() < 1e-6);
        assert!((gray(0.0, 1.0, 0.0) - 0.587).abs() < 1e-7);
    }
}
