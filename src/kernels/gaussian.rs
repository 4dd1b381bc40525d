//! The separable Gaussian filter of the ImageNet-C corruptions (docs/imagenet-c.md#h1-gaussian-filter):
//! scipy's `gaussian_filter` with 'nearest' or 'reflect' borders, in scipy's operation order, in
//! bands of rows; scipy's 1-D kernel and OpenCV's `getGaussianKernel`.

use rayon::prelude::*;

use super::filter::{Border, border_index, map_slice, numpy_sum};

/// scipy's Gaussian radius `int(truncate·σ + 0.5)` (docs/imagenet-c.md#h1-gaussian-filter: σ 1 → 4,
/// 3 → 12, 6 → 24 with truncate 4).
pub(crate) fn gaussian_radius(sigma: f64, truncate: f64) -> usize {
    (truncate * sigma + 0.5) as usize
}

/// scipy's 1-D Gaussian kernel (`_gaussian_kernel1d`): `φ_i = exp((−0.5/σ²)·i²)` for i ∈ [−r, r]
/// ([`gaussian_radius`]), divided by `Σφ` summed the way `numpy.sum` does ([`numpy_sum`]). `exp` is
/// the platform's libm one; numpy 1.26 on AVX-512 CPUs uses its own SIMD `exp`, which differs in the
/// last bit for some arguments, so a weight can differ from scipy's by one ulp there.
pub(crate) fn gaussian_kernel1d(sigma: f64, truncate: f64) -> Vec<f64> {
    let r = gaussian_radius(sigma, truncate) as isize;
    let s2 = sigma * sigma;
    let mut k: Vec<f64> = (-r..=r)
        .map(|i| (-0.5 / s2 * (i * i) as f64).exp())
        .collect();
    let sum = numpy_sum(&k);
    k.iter_mut().for_each(|v| *v /= sum);
    k
}

crate::kernels::multiversion! {
    /// One symmetric correlation of whole rows, in scipy's operation order (`NI_Correlate1D` with a
    /// symmetric kernel): `out[i] = w₀·c[i]`, then for each pair `(w_j, l_j, r_j)` in the given
    /// order (scipy: j = r down to 1) `out[i] += (l_j[i] + r_j[i])·w_j`. Blocks of outputs stay in
    /// registers across all pairs. Compiled three times: with AVX-512F or AVX2 where the CPU has
    /// it, else portable; the arithmetic is the same (separate adds and multiplies, never fused:
    /// Rust does not contract), so every version gives identical bits, those of scipy's loop.
    pub(super) fn symmetric_pass(
        out: &mut [f64],
        w0: f64,
        center: &[f64],
        pairs: &[(f64, &[f64], &[f64])],
    );
    /// [`symmetric_pass`] compiled for AVX-512F (4 registers of 8 lanes per block).
    symmetric_pass_avx512 ["avx512f"] => symmetric_pass_body::<32>;
    /// [`symmetric_pass`] compiled for AVX2 (4 registers of 4 lanes per block).
    symmetric_pass_avx2 ["avx2"] => symmetric_pass_body::<16>;
    _ => symmetric_pass_body::<8>;
    levels symmetric_pass_at;
}

/// The body of [`symmetric_pass`], `B` outputs per register block.
#[inline(always)]
fn symmetric_pass_body<const B: usize>(
    out: &mut [f64],
    w0: f64,
    center: &[f64],
    pairs: &[(f64, &[f64], &[f64])],
) {
    let n = out.len();
    let full = n / B * B;
    for start in (0..full).step_by(B) {
        let c: &[f64; B] = center[start..start + B].try_into().expect("block");
        let mut acc = [0.0f64; B];
        for l in 0..B {
            acc[l] = c[l] * w0;
        }
        for &(w, left, right) in pairs {
            let a: &[f64; B] = left[start..start + B].try_into().expect("block");
            let b: &[f64; B] = right[start..start + B].try_into().expect("block");
            for l in 0..B {
                acc[l] += (a[l] + b[l]) * w;
            }
        }
        out[start..start + B].copy_from_slice(&acc);
    }
    if B > 8 && n - full >= 8 {
        let (first, rest) = out[full..].split_at_mut((n - full) / 8 * 8);
        let sub: Vec<(f64, &[f64], &[f64])> = pairs
            .iter()
            .map(|&(w, l, r)| (w, &l[full..], &r[full..]))
            .collect();
        symmetric_pass_body::<8>(first, w0, &center[full..], &sub);
        let done = full + first.len();
        let sub: Vec<(f64, &[f64], &[f64])> = pairs
            .iter()
            .map(|&(w, l, r)| (w, &l[done..], &r[done..]))
            .collect();
        symmetric_pass_body::<8>(rest, w0, &center[done..], &sub);
        return;
    }
    for i in full..n {
        let mut acc = center[i] * w0;
        for &(w, left, right) in pairs {
            acc += (left[i] + right[i]) * w;
        }
        out[i] = acc;
    }
}

/// Elements per column strip of [`separable_rows`] for a vertical radius `ry`: at most 512 (a band's
/// input rows over one strip stay in the L2 cache), and for large radii few enough that the `2·ry + 1`
/// f64 input rows one output row reads over a strip stay within 32 KiB (L1), in multiples of 32
/// (elastic_transform at 1280×720, ry 22: 96 instead of 512 elements, ~25.6 -> ~20.4 ms at 1 thread).
/// The strips only change the order in which elements are visited, never an element's operations.
fn separable_strip(ry: usize) -> usize {
    (32_768 / 8 / (2 * ry + 1))
        .next_multiple_of(32)
        .clamp(64, 512)
}

/// Per-task buffers of [`separable_rows`], reused across the bands a task runs.
#[derive(Default)]
struct SeparableScratch {
    /// The band's input rows (with the vertical halo, border rows resolved) over one strip, in f64.
    strip: Vec<f64>,
    /// The vertical pass of the band's rows, each padded for the horizontal pass.
    vertical: Vec<f64>,
    /// One output row in f64.
    line: Vec<f64>,
}

/// The separable Gaussian behind `gaussian_filter` and [`gaussian_filter_map`], in bands of rows.
/// Per band and column strip, the input rows it needs (`load`ed to f64) are gathered and filtered
/// vertically (kernel `ky`); then per row the horizontal pass (kernel `kx`) of the padded row, each
/// result passed through `store`. Both passes in scipy's operation order ([`symmetric_pass`]); the
/// intermediate is f64, as scipy's. Bands run in parallel, and every element is computed the same
/// way whatever the thread count or band size; no image-sized f64 buffer is made.
#[allow(clippy::too_many_arguments)]
fn separable_rows<T, U, L, S>(
    data: &[T],
    (width, height, channels): (usize, usize, usize),
    ky: &[f64],
    kx: &[f64],
    border: Border,
    out: &mut [U],
    load: L,
    store: S,
) where
    T: Copy + Sync,
    U: Copy + Send,
    L: Fn(T) -> f64 + Sync,
    S: Fn(f64) -> U + Sync,
{
    let row_len = width * channels;
    if row_len == 0 || height == 0 {
        return;
    }
    let (ry, rx) = (ky.len() / 2, kx.len() / 2);
    // Bands at least as tall as the vertical halo (gathering costs at most twice the rows) and an
    // eighth of the frame (fewer halos), with at least 16 rows.
    let band = (2 * ry).max(height.div_ceil(8)).max(16);
    let pad = rx * channels;
    let stride = row_len + 2 * pad;
    let strip_w = separable_strip(ry);
    out.par_chunks_mut(row_len * band)
        .enumerate()
        .for_each_init(SeparableScratch::default, |sc, (t, rows)| {
            let (y0, n) = (t * band, rows.len() / row_len);
            // The vertical pass of row i goes to the middle of padded row i of `vertical`.
            sc.vertical.resize(n * stride, 0.0);
            for x0 in (0..row_len).step_by(strip_w) {
                let sw = strip_w.min(row_len - x0);
                sc.strip.resize((n + 2 * ry) * sw, 0.0);
                for (k, dst) in sc.strip.chunks_exact_mut(sw).enumerate() {
                    let y = border_index(y0 as isize + k as isize - ry as isize, height, border);
                    map_slice(dst, &data[y * row_len + x0..y * row_len + x0 + sw], &load);
                }
                let strip = |k: usize| &sc.strip[k * sw..(k + 1) * sw];
                for (i, v) in sc.vertical.chunks_exact_mut(stride).enumerate() {
                    let pairs: Vec<(f64, &[f64], &[f64])> = (1..=ry)
                        .rev()
                        .map(|j| (ky[ry + j], strip(i + ry - j), strip(i + ry + j)))
                        .collect();
                    let dst = &mut v[pad + x0..pad + x0 + sw];
                    symmetric_pass(dst, ky[ry], strip(i + ry), &pairs);
                }
            }
            sc.line.resize(row_len, 0.0);
            for (v, o) in sc
                .vertical
                .chunks_exact_mut(stride)
                .zip(rows.chunks_exact_mut(row_len))
            {
                // Border columns of the padded row, read from its middle.
                for px in (0..rx).chain(rx + width..2 * rx + width) {
                    let sx = border_index(px as isize - rx as isize, width, border) + rx;
                    v.copy_within(sx * channels..(sx + 1) * channels, px * channels);
                }
                let at = |d: usize| &v[d * channels..d * channels + row_len];
                let pairs: Vec<(f64, &[f64], &[f64])> = (1..=rx)
                    .rev()
                    .map(|j| (kx[rx + j], at(rx - j), at(rx + j)))
                    .collect();
                symmetric_pass(&mut sc.line, kx[rx], at(rx), &pairs);
                map_slice(o, &sc.line, &store);
            }
        });
}

/// scipy `gaussian_filter(data, (σ, σ, 0), mode, truncate)` (docs/imagenet-c.md#h1-gaussian-filter)
/// on an interleaved `width × height × channels` image: separable, the spatial axes only (rows axis
/// first, as scipy does axis 0 first, then columns), kernel [`gaussian_kernel1d`], each pass in
/// scipy's operation order, so that with the same weights every result bit is scipy's
/// (gaussian_blur's bytes equal imagecorruptions' on the fixtures and on a 1280×720 frame).
/// ImageNet-C uses truncate 4 and [`Border::Nearest`] (gaussian_blur, glass_blur, spatter). Returns
/// `data` unchanged for an empty image or σ ≤ 0. One σ per axis: [`gaussian_filter_axes`].
#[cfg(test)]
pub(crate) fn gaussian_filter(
    data: &[f64],
    width: usize,
    height: usize,
    channels: usize,
    sigma: f64,
    truncate: f64,
    border: Border,
) -> Vec<f64> {
    gaussian_filter_axes(
        data,
        (width, height, channels),
        (sigma, sigma),
        truncate,
        border,
    )
}

/// [`gaussian_filter`] with its own σ per axis, `(σ_y, σ_x)` = (rows axis, columns axis), as scipy's
/// `gaussian_filter(data, (σ_y, σ_x, 0), …)`; an axis with σ ≤ 0 is not filtered (scipy skips it).
/// elastic_transform uses σ = (0.01·H, 0.01·W), truncate 3 and [`Border::Reflect`].
#[cfg(test)]
fn gaussian_filter_axes(
    data: &[f64],
    dims: (usize, usize, usize),
    sigmas: (f64, f64),
    truncate: f64,
    border: Border,
) -> Vec<f64> {
    gaussian_filter_map(data, dims, sigmas, truncate, border, |v| v, |v| v)
}

/// `gaussian_filter_axes` of any element type: every input element converted by `load` (e.g. u8
/// to `x/255`), every result passed through `store` (e.g. straight to u8), so no full-size f64 copy
/// of the input, intermediate or output is made.
pub(crate) fn gaussian_filter_map<T, U>(
    data: &[T],
    dims: (usize, usize, usize),
    (sigma_y, sigma_x): (f64, f64),
    truncate: f64,
    border: Border,
    load: impl Fn(T) -> f64 + Sync,
    store: impl Fn(f64) -> U + Sync,
) -> Vec<U>
where
    T: Copy + Sync,
    U: Copy + Default + Send,
{
    let (width, height, channels) = dims;
    assert_eq!(data.len(), width * height * channels, "buffer size");
    let kernel = |s: f64| {
        if s > 0.0 {
            gaussian_kernel1d(s, truncate)
        } else {
            vec![1.0]
        }
    };
    let mut out = vec![U::default(); data.len()];
    separable_rows(
        data,
        dims,
        &kernel(sigma_y),
        &kernel(sigma_x),
        border,
        &mut out,
        load,
        store,
    );
    out
}

/// [`gaussian_filter`] writing into `out` (same size as `data`), to reuse buffers across calls.
#[allow(clippy::too_many_arguments)]
#[cfg(test)]
fn gaussian_filter_into(
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
    separable_rows(
        data,
        (width, height, channels),
        &k,
        &k,
        border,
        out,
        |v| v,
        |v| v,
    );
}

/// OpenCV `getGaussianKernel(n, σ)` for σ > 0: `exp(−(i − (n−1)/2)²/(2σ²))`, normalised to sum 1.
pub(crate) fn opencv_gaussian_kernel(n: usize, sigma: f64) -> Vec<f64> {
    let c = (n as f64 - 1.0) / 2.0;
    let mut k: Vec<f64> = (0..n)
        .map(|i| (-((i as f64 - c).powi(2)) / (2.0 * sigma * sigma)).exp())
        .collect();
    let sum: f64 = k.iter().sum();
    k.iter_mut().for_each(|v| *v /= sum);
    k
}

#[cfg(test)]
mod tests;
