//! Shared filtering kernels of the ImageNet-C blur and weather corruptions
//! (docs/imagenet-c.md#shared-kernels):
//! the separable Gaussian filter (H1, scipy `gaussian_filter` with 'nearest' or 'reflect' borders), the
//! anti-aliased disk kernel (H2, defocus), a generic centred 2-D correlation (OpenCV `filter2D`), the
//! imagecorruptions `clipped_zoom` (H3), the one-sided motion-blur kernel (H5) and OpenCV grayscale (H7).
//!
//! Images are interleaved row-major `f64` buffers of `width × height × channels`. Every filter pads once
//! and then adds whole contiguous rows (`acc += k · row`), which the compiler vectorises; rows are
//! computed in parallel with rayon, each row always in the same order, so results never depend on the
//! thread count.

use rayon::prelude::*;

/// `floor8(clip(v, 0, 1)·255)` (docs/imagenet-c.md#value-ranges-and-rounding), the same value as
/// [`floor8_unit`](super::lanes::floor8_unit) for every input (NaN → 0), written without NaN-aware
/// clamping or saturating casts (a few instructions, and loops over rows vectorise).
#[inline(always)]
pub fn floor8_clip(v: f64) -> u8 {
    let v = if v > 0.0 { v } else { 0.0 }; // NaN → 0, as the reference's uint8 cast of NaN·255
    let v = if v < 1.0 { v } else { 1.0 };
    // SAFETY: v is in [0, 1] here, so v·255 is finite and in [0, 255]: representable as i32, which
    // is all `to_int_unchecked` requires; the truncation is the reference's floor for v ≥ 0.
    unsafe { (v * 255.0).to_int_unchecked::<i32>() as u8 }
}

/// [`floor8_clip`] of a float32 value with the ×255 in float32 (the reference's `np.clip(x, 0, 1) *
/// 255` on a float32 array, then uint8).
#[inline(always)]
pub fn floor8_clip_f32(v: f32) -> u8 {
    let v = if v > 0.0 { v } else { 0.0 };
    let v = if v < 1.0 { v } else { 1.0 };
    // SAFETY: as in `floor8_clip`: v·255 is finite and in [0, 255].
    unsafe { (v * 255.0).to_int_unchecked::<i32>() as u8 }
}

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

/// scipy's Gaussian radius `int(truncate·σ + 0.5)` (docs/imagenet-c.md#h1-gaussian-filter: σ 1 → 4,
/// 3 → 12, 6 → 24 with truncate 4).
pub fn gaussian_radius(sigma: f64, truncate: f64) -> usize {
    (truncate * sigma + 0.5) as usize
}

/// scipy's 1-D Gaussian kernel (`_gaussian_kernel1d`): `φ_i = exp((−0.5/σ²)·i²)` for i ∈ [−r, r]
/// ([`gaussian_radius`]), divided by `Σφ` summed the way `numpy.sum` does ([`numpy_sum`]). `exp` is
/// the platform's libm one; numpy 1.26 on AVX-512 CPUs uses its own SIMD `exp`, which differs in the
/// last bit for some arguments, so a weight can differ from scipy's by one ulp there.
pub fn gaussian_kernel1d(sigma: f64, truncate: f64) -> Vec<f64> {
    let r = gaussian_radius(sigma, truncate) as isize;
    let s2 = sigma * sigma;
    let mut k: Vec<f64> = (-r..=r)
        .map(|i| (-0.5 / s2 * (i * i) as f64).exp())
        .collect();
    let sum = numpy_sum(&k);
    k.iter_mut().for_each(|v| *v /= sum);
    k
}

/// `numpy.sum` of a contiguous f64 array: numpy's pairwise summation (fewer than 8 values: in order;
/// up to 128: eight interleaved partial sums combined as ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), then
/// the remainder in order; longer: split at a multiple of 8 near the middle and recurse).
pub fn numpy_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        a.iter().fold(0.0, |s, &v| s + v)
    } else if n <= 128 {
        let mut r: [f64; 8] = a[..8].try_into().expect("8 values");
        let full = n - n % 8;
        for block in a[8..full].chunks_exact(8) {
            for (r, &v) in r.iter_mut().zip(block) {
                *r += v;
            }
        }
        let s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        a[full..].iter().fold(s, |s, &v| s + v)
    } else {
        let half = n / 2;
        let half = half - half % 8;
        numpy_sum(&a[..half]) + numpy_sum(&a[half..])
    }
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

/// Minimum number of elements a rayon task should get.
const ELEMENTS_PER_TASK: usize = 8_192;

/// Rows per rayon task for rows of `row_len` elements.
fn rows_per_task(row_len: usize) -> usize {
    (ELEMENTS_PER_TASK / row_len.max(1)).max(1)
}

crate::kernels::multiversion! {
    /// `out[i] = Σ_t w_t · src_t[i]` over the taps `(w_t, src_t)`, in tap order, for every `i`.
    /// Blocks of 8 outputs stay in registers across all taps (one store per output instead of one
    /// per tap). Compiled twice: with AVX2 where the CPU has it (4 lanes instead of SSE2's 2), else
    /// portable. The arithmetic is the same (separate multiply and add, never fused: Rust does not
    /// contract), so both give identical bits.
    fn accumulate(out: &mut [f64], taps: &[(f64, &[f64])]);
    /// [`accumulate`] compiled for AVX2.
    accumulate_avx2 ["avx2"] => accumulate_portable;
    _ => accumulate_portable;
    levels accumulate_at;
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

crate::kernels::multiversion! {
    /// `out[i] = f(src[i])`, compiled for AVX-512F or AVX2 where the CPU has it (conversions such
    /// as u8 → f64 ÷ 255 or f64 → u8 then vectorise); every version computes the same values.
    fn map_slice[T: Copy, U, F: Fn(T) -> U](out: &mut [U], src: &[T], f: &F);
    /// [`map_slice`] compiled for AVX-512F.
    map_slice_avx512 ["avx512f"] => map_slice_body;
    /// [`map_slice`] compiled for AVX2.
    map_slice_avx2 ["avx2"] => map_slice_body;
    _ => map_slice_body;
    levels map_slice_at;
}

/// The body of [`map_slice`].
#[inline(always)]
fn map_slice_body<T: Copy, U, F: Fn(T) -> U>(out: &mut [U], src: &[T], f: &F) {
    for (o, &v) in out.iter_mut().zip(src) {
        *o = f(v);
    }
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

/// The separable Gaussian behind [`gaussian_filter`] and [`gaussian_filter_map`], in bands of rows.
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
pub fn gaussian_filter(
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
pub fn gaussian_filter_axes(
    data: &[f64],
    dims: (usize, usize, usize),
    sigmas: (f64, f64),
    truncate: f64,
    border: Border,
) -> Vec<f64> {
    gaussian_filter_map(data, dims, sigmas, truncate, border, |v| v, |v| v)
}

/// [`gaussian_filter_axes`] of any element type: every input element converted by `load` (e.g. u8
/// to `x/255`), every result passed through `store` (e.g. straight to u8), so no full-size f64 copy
/// of the input, intermediate or output is made.
pub fn gaussian_filter_map<T, U>(
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
pub fn opencv_gaussian_kernel(n: usize, sigma: f64) -> Vec<f64> {
    let c = (n as f64 - 1.0) / 2.0;
    let mut k: Vec<f64> = (0..n)
        .map(|i| (-((i as f64 - c).powi(2)) / (2.0 * sigma * sigma)).exp())
        .collect();
    let sum: f64 = k.iter().sum();
    k.iter_mut().for_each(|v| *v /= sum);
    k
}

/// The ingredients of the defocus disk (docs/imagenet-c.md#h2-disk-kernel) before its final f32
/// rounding.
struct Disk {
    /// The support is `−half..=half` on both axes.
    half: usize,
    /// The disk radius r.
    radius: usize,
    /// The value of every disk tap: `1/count`, rounded to f32 as the reference's float32 array.
    value: f64,
    /// OpenCV's anti-alias Gaussian (3 or 5 taps), rounded to f32.
    g: Vec<f64>,
    /// The blurred kernel, row-major `(2·half + 1)²`, in f64 before rounding to f32.
    kernel: Vec<f64>,
}

/// Half-width of row (or column) `offset` of the disk of `radius`: the largest w with
/// w² + offset² ≤ radius², or `None` where the row is empty (|offset| > radius).
fn disk_run(radius: usize, offset: isize) -> Option<usize> {
    let (r2, o2) = ((radius * radius) as isize, offset * offset);
    (o2 <= r2).then(|| {
        (0..=radius)
            .rev()
            .find(|&w| (w * w) as isize + o2 <= r2)
            .unwrap_or(0)
    })
}

/// Builds [`Disk`]: 1 where x² + y² ≤ r² on the support, divided by the count and rounded to f32,
/// then OpenCV `GaussianBlur` (columns, then rows; taps added in order in f64; reflect-101 border).
fn disk_parts(radius: usize, alias_blur: f64) -> Disk {
    let (half, ksize) = if radius <= 8 { (8, 3) } else { (radius, 5) };
    let n = 2 * half + 1;
    let r2 = (radius * radius) as isize;
    let inside = |i: usize| {
        let (y, x) = (
            (i / n) as isize - half as isize,
            (i % n) as isize - half as isize,
        );
        x * x + y * y <= r2
    };
    let count = (0..n * n).filter(|&i| inside(i)).count() as f64;
    let value = f64::from((1.0 / count) as f32);
    let disk: Vec<f64> = (0..n * n)
        .map(|i| if inside(i) { value } else { 0.0 })
        .collect();
    let g: Vec<f64> = opencv_gaussian_kernel(ksize, alias_blur)
        .iter()
        .map(|&v| f64::from(v as f32))
        .collect();
    let gr = (ksize / 2) as isize;
    let at = |i: isize| border_index(i, n, Border::Reflect101);
    let mut cols = vec![0.0; n * n];
    for y in 0..n {
        for x in 0..n {
            let mut acc = 0.0;
            for (j, &w) in g.iter().enumerate() {
                acc += w * disk[at(y as isize + j as isize - gr) * n + x];
            }
            cols[y * n + x] = acc;
        }
    }
    let mut kernel = vec![0.0; n * n];
    for y in 0..n {
        for x in 0..n {
            let mut acc = 0.0;
            for (j, &w) in g.iter().enumerate() {
                acc += w * cols[y * n + at(x as isize + j as isize - gr)];
            }
            kernel[y * n + x] = acc;
        }
    }
    Disk {
        half,
        radius,
        value,
        g,
        kernel,
    }
}

/// The anti-aliased disk of defocus_blur (docs/imagenet-c.md#h2-disk-kernel), as a square row-major
/// kernel and its side.
///
/// Support −8..8 (17×17) for radius ≤ 8, else −r..r; 1 where x² + y² ≤ r², divided by the count; then
/// blurred with OpenCV `GaussianBlur` (3×3 for r ≤ 8, 5×5 above; σ = `alias_blur`; border
/// reflect-101) and **not** renormalised: at radius 8 and 10 the disk touches its support's edge and the
/// reflected border adds mass, so those kernels sum to 1.012975 and 1.010786
/// (docs/imagenet-c.md#defocus_blur). The reference holds the kernel in float32; so does this
/// (values rounded to f32, returned as f64).
pub fn disk_kernel(radius: usize, alias_blur: f64) -> (Vec<f64>, usize) {
    let d = disk_parts(radius, alias_blur);
    (
        d.kernel.iter().map(|&v| f64::from(v as f32)).collect(),
        2 * d.half + 1,
    )
}

/// How the anti-alias blur of the disk departs, near the support's edges, from a plain convolution:
/// `Δ(b, b′)` = (the reflect-101, cropped 1-D blur) − (the unbounded 1-D blur), for output offset b
/// (|b| ≤ half + gr) and input offset b′ (|b′| ≤ half). Returned as `(b, b′, Δ)` for Δ ≠ 0; the
/// same on both axes.
fn edge_terms(half: usize, g: &[f64]) -> Vec<(isize, isize, f64)> {
    let gr = (g.len() / 2) as isize;
    let (h, n) = (half as isize, 2 * half + 1);
    let mut terms = Vec::new();
    for b in -h - gr..=h + gr {
        for bp in -h..=h {
            let plain = if (b - bp).abs() <= gr {
                g[(b - bp + gr) as usize]
            } else {
                0.0
            };
            let bounded: f64 = if b.abs() <= h {
                (-gr..=gr)
                    .filter(|&k| border_index(b + k + h, n, Border::Reflect101) as isize - h == bp)
                    .map(|k| g[(k + gr) as usize])
                    .sum()
            } else {
                0.0
            };
            if bounded != plain {
                terms.push((b, bp, bounded - plain));
            }
        }
    }
    terms
}

/// Whether some pixel of the disk of `radius` lies near two edges of its support at once (its row
/// and its column both appear as input offsets b′ of `departures`), which [`defocus_filter`]'s
/// decomposition does not handle. Never the case: for r ≤ 8 (support ±8, blur radius 1) such a pixel
/// would have |x|, |y| ≥ 7, i.e. x² + y² ≥ 98 > 64; for r > 8 (support ±r, blur radius 2),
/// 2·(r − 2)² > r² for every r ≥ 7.
fn touches_two_edges(radius: usize, departures: &[(isize, isize, f64)]) -> bool {
    let near_edge = |o: isize| departures.iter().any(|t| t.1 == o);
    let r = radius as isize;
    (-r..=r).any(|a| {
        near_edge(a)
            && disk_run(radius, a).is_some_and(|w| (-(w as isize)..=w as isize).any(near_edge))
    })
}

/// OpenCV `filter2D(x/255, -1, disk_kernel(radius, alias_blur))` (correlation, reflect-101 border)
/// of an interleaved u8 image, each result passed through `store` — defocus_blur
/// (docs/imagenet-c.md#defocus_blur, docs/imagenet-c.md#h2-disk-kernel) in O(radius) instead of
/// O(radius²) operations per pixel.
///
/// The kernel is `R_y·D·R_xᵀ`: the uniform disk D (value c) blurred on each axis by the small
/// Gaussian g with the kernel-support border (R = the unbounded blur T plus the edge departures Δ of
/// [`edge_terms`]). Correlating an image with it therefore equals, exactly in real arithmetic,
/// `c·[G(S) + G_y(C_R) + G_x(C_T)]` on the reflect-101-padded image, where S is the image's disk sum
/// (per disk column, a run sum from two column prefix sums: exact integers), C_R = Σ Δ(b, b′)·(the
/// vertical run of disk column b′, shifted by b) and C_T the same along rows (the Δ·D·Δ term is
/// empty: no disk pixel is near two support edges, see [`touches_two_edges`]). The Δ that are equal
/// up to rounding (all are ±g₁ or ±g₂) are applied once per group to exact integer sums. Where the
/// reference rounds its kernel to f32, the result is scaled by Σ(f32 kernel)/Σ(f64 kernel): flat
/// regions then get exactly the reference's `x·Σkernel` (e.g. 254.99999… → 254 at severities 1–3);
/// elsewhere the f32 rounding of individual taps moves a value by at most their summed rounding
/// (< 2e−7, i.e. 5e−5 grey levels; about 1e−9 on natural images, where the roundings cancel).
/// Bands of rows run in parallel; every output is computed the same way whatever the thread count.
pub fn defocus_filter<U, F>(
    data: &[u8],
    dims: (usize, usize, usize),
    radius: usize,
    alias_blur: f64,
    store: F,
) -> Vec<U>
where
    U: Copy + Default + Send,
    F: Fn(f64) -> U + Sync,
{
    let (width, height, channels) = dims;
    assert_eq!(data.len(), width * height * channels, "buffer size");
    let row_len = width * channels;
    if row_len == 0 || height == 0 {
        return Vec::new();
    }
    let d = disk_parts(radius, alias_blur);
    let run = |o: isize| disk_run(d.radius, o);
    let departures = edge_terms(d.half, &d.g);
    // Edge departures that touch a non-empty disk column: (output offset, run half-height, Δ).
    let edges: Vec<(isize, usize, f64)> = departures
        .iter()
        .filter_map(|&(b, bp, delta)| run(bp).map(|h| (b, h, delta)))
        .collect();
    debug_assert!(
        !touches_two_edges(d.radius, &departures),
        "no disk pixel is near two support edges"
    );
    let kernel32: f64 = d.kernel.iter().map(|&v| f64::from(v as f32)).sum();
    let kernel64: f64 = d.kernel.iter().sum();
    let r = d.radius as isize;
    let plan = DiskPlan {
        width,
        height,
        channels,
        half: d.half,
        gr: d.g.len() / 2,
        radius: d.radius,
        runs: (-r..=r).map(|o| run(o).unwrap_or(0)).collect(),
        g: d.g.clone(),
        edge_groups: {
            let mut groups: EdgeGroups = Vec::new();
            for &(b, run, delta) in &edges {
                let m = delta.abs();
                match groups.iter_mut().find(|g| (g.0 - m).abs() <= 1e-12 * g.0) {
                    Some(g) => g.1.push((b, run, delta < 0.0)),
                    None => groups.push((m, vec![(b, run, delta < 0.0)])),
                }
            }
            groups
        },
        factor: d.value * (kernel32 / kernel64) / 255.0,
        hruns: {
            let mut runs: Vec<usize> = edges.iter().map(|e| e.1).filter(|&w| w > 0).collect();
            runs.sort_unstable();
            runs.dedup();
            runs
        },
        border_columns: {
            let pad = d.half + d.g.len() / 2;
            (0..pad)
                .chain(pad + width..2 * pad + width)
                .map(|px| {
                    let x = border_index(px as isize - pad as isize, width, Border::Reflect101);
                    (px, x)
                })
                .collect()
        },
    };
    // At least DISK_BAND_ROWS rows and an eighth of the frame (fewer halos); results do not depend
    // on the band size.
    let band = DISK_BAND_ROWS.max(height.div_ceil(8));
    let mut out = vec![U::default(); row_len * height];
    out.par_chunks_mut(row_len * band)
        .enumerate()
        .for_each(|(t, rows)| {
            DISK_SCRATCH.with(|scratch| {
                // No borrow is live here already: `band` makes no rayon calls, so this thread
                // cannot start another band inside it.
                let mut scratch = scratch.borrow_mut();
                plan.band(data, t * band, rows, &mut scratch, &store)
            })
        });
    out
}

thread_local! {
    /// [`defocus_filter`]'s buffers, kept per thread across calls: fresh ones per call were
    /// megabytes of new pages each time (at 1280×720 severity 5 ~42 ms per call against ~15 ms with
    /// reused memory, 1 thread). They stay allocated (the largest frame's size) on every thread that
    /// ran a band; `band` resizes them and never reads what it did not write in the same band.
    static DISK_SCRATCH: std::cell::RefCell<DiskScratch> =
        std::cell::RefCell::new(DiskScratch::default());
}

/// Least output rows per rayon task of [`defocus_filter`] (the halo of a band is 2·(r + gr) rows).
const DISK_BAND_ROWS: usize = 32;

/// Edge departures of [`defocus_filter`] grouped by |Δ|: `(|Δ|, [(offset, run half-width, Δ < 0)])`.
type EdgeGroups = Vec<(f64, Vec<(isize, usize, bool)>)>;

/// Everything [`defocus_filter`] needs per band, fixed per call.
struct DiskPlan {
    width: usize,
    height: usize,
    channels: usize,
    half: usize,
    gr: usize,
    radius: usize,
    /// Half-width of disk row (= column) `o`, at index `o + radius`.
    runs: Vec<usize>,
    g: Vec<f64>,
    /// The edge departures grouped by |Δ| (equal up to rounding): `(|Δ|, [(b, h, Δ < 0)])`: ±|Δ|
    /// times the run of half-height h at offset b (see [`edge_terms`]), on both axes.
    edge_groups: EdgeGroups,
    /// `c · Σ(f32 kernel)/Σ(f64 kernel) / 255`.
    factor: f64,
    /// (padded column, image column) of the padding columns (reflect-101).
    border_columns: Vec<(usize, usize)>,
    /// The distinct non-zero run half-widths among `edges` (cached per band for C_T).
    hruns: Vec<usize>,
}

/// Per-thread buffers of [`defocus_filter`], reused across bands and calls ([`DISK_SCRATCH`]).
#[derive(Default)]
struct DiskScratch {
    /// Padded input rows of the band (i32).
    rows: Vec<i32>,
    /// Column prefix sums of `rows` (one more row).
    prefix: Vec<i32>,
    /// One f64 row of the disk sums S, then of C_T.
    line: Vec<f64>,
    /// G_x(S) + C_R for the band's rows and gr rows either side.
    u: Vec<f64>,
    /// One f64 output row.
    acc: Vec<f64>,
    /// G_x(C_T) of one output row.
    ct: Vec<f64>,
    /// Horizontal run sums of the band rows, per run half-width of `DiskPlan::hruns`.
    hsums: Vec<i32>,
}

impl DiskPlan {
    crate::kernels::multiversion! {
        /// Computes output rows `y0..y0 + rows.len()/row_len` into `rows`: [`DiskPlan::band_body`]
        /// compiled for AVX-512F or AVX2 where the CPU has it, else portable (integer sums are
        /// exact and the float operations are the same in every version: identical results).
        fn band[U: Copy, F: Fn(f64) -> U](
            &self,
            data: &[u8],
            y0: usize,
            rows: &mut [U],
            s: &mut DiskScratch,
            store: &F,
        );
        /// [`DiskPlan::band_body`] compiled for AVX-512F.
        band_avx512 ["avx512f"] => Self::band_body;
        /// [`DiskPlan::band_body`] compiled for AVX2.
        band_avx2 ["avx2"] => Self::band_body;
        _ => Self::band_body;
        levels band_at;
    }

    /// The body of [`DiskPlan::band`], in the band's steps: pad the band's input rows, their
    /// column prefix sums, the horizontal run sums C_T reads, U = G_x(S) + C_R per row, then the
    /// output rows (G_y of U, plus G_x(C_T) when the disk has edge terms). Every step is
    /// `#[inline(always)]` so that it is compiled into each of [`DiskPlan::band`]'s versions.
    #[inline(always)]
    fn band_body<U: Copy, F: Fn(f64) -> U>(
        &self,
        data: &[u8],
        y0: usize,
        rows: &mut [U],
        s: &mut DiskScratch,
        store: &F,
    ) {
        let ch = self.channels;
        let pad = self.half + self.gr;
        let row_len = self.width * ch;
        let out_rows = rows.len() / row_len;
        let d = BandDims {
            pw: (self.width + 2 * pad) * ch,
            row_len,
            sw: (self.width + 2 * self.gr) * ch,
            out_rows,
            nrows: out_rows + 2 * (self.gr + self.radius),
        };
        self.padded_rows(data, y0, d, s);
        prefix_sums(d, s);
        self.run_sums(d, s);
        self.vertical_pass(d, s);
        self.output_rows(rows, d, s, store);
    }

    /// Fills `s.rows` with the band's input rows as i32: band row k is image row
    /// y0 + k − r − gr (reflect-101), padded by `half + gr` reflect-101 columns either side.
    #[inline(always)]
    fn padded_rows(&self, data: &[u8], y0: usize, d: BandDims, s: &mut DiskScratch) {
        let ch = self.channels;
        let (h, r, gr) = (self.height, self.radius, self.gr);
        let pad = self.half + gr;
        let (pw, row_len) = (d.pw, d.row_len);
        s.rows.resize(d.nrows * pw, 0);
        for (k, dst) in s.rows.chunks_exact_mut(pw).enumerate() {
            let y = border_index(
                y0 as isize + k as isize - (r + gr) as isize,
                h,
                Border::Reflect101,
            );
            let src = &data[y * row_len..(y + 1) * row_len];
            for (v, &sv) in dst[pad * ch..pad * ch + row_len].iter_mut().zip(src) {
                *v = i32::from(sv);
            }
            for &(px, x) in &self.border_columns {
                for c in 0..ch {
                    dst[px * ch + c] = i32::from(src[x * ch + c]);
                }
            }
        }
    }

    /// Horizontal run sums of half-width w (each of `hruns`) of every band row into `s.hsums`, for
    /// C_T (cached per band: many edge terms share a run).
    #[inline(always)]
    fn run_sums(&self, d: BandDims, s: &mut DiskScratch) {
        let ch = self.channels;
        let (pw, nrows, sw) = (d.pw, d.nrows, d.sw);
        s.hsums.resize(self.hruns.len() * nrows * sw, 0);
        for (i, &run) in self.hruns.iter().enumerate() {
            let first = (self.half - run) * ch;
            for k in 0..nrows {
                let row = &s.rows[k * pw..(k + 1) * pw];
                let terms: Vec<IntTerm> = (0..=2 * run)
                    .map(|j| IntTerm::plain(&row[first + j * ch..first + j * ch + sw]))
                    .collect();
                let dst = &mut s.hsums[(i * nrows + k) * sw..(i * nrows + k + 1) * sw];
                sum_terms::<64>(dst, &terms);
            }
        }
    }

    /// `s.u` = G_x(S) + C_R for image rows y0 − gr .. y0 + out_rows + gr: the disk sums S and the
    /// vertical edge terms C_R, both read off the prefix sums (exact integers).
    #[inline(always)]
    fn vertical_pass(&self, d: BandDims, s: &mut DiskScratch) {
        let ch = self.channels;
        let (half, gr, r) = (self.half, self.gr, self.radius);
        let pad = half + gr;
        let (pw, row_len, sw) = (d.pw, d.row_len, d.sw);
        let prefix_row = |k: usize| &s.prefix[k * pw..(k + 1) * pw];
        let su = d.out_rows + 2 * gr;
        s.u.resize(su * row_len, 0.0);
        s.line.resize(sw, 0.0);
        for (ys, urow) in s.u.chunks_exact_mut(row_len).enumerate() {
            let kc = ys + r;
            // S: per disk row, the run sum from two prefix rows (exact integers).
            let disk: Vec<IntTerm> = self
                .runs
                .iter()
                .enumerate()
                .map(|(i, &run)| {
                    let b = (half + i - r) * ch;
                    IntTerm::diff(
                        false,
                        &prefix_row(kc + run + 1)[b..b + sw],
                        &prefix_row(kc - run)[b..b + sw],
                    )
                })
                .collect();
            let line = &mut s.line[..];
            line.fill(0.0);
            add_groups::<32>(line, &[(1.0, disk)]);
            blur_small(urow, line, &self.g, ch);
            // C_R: Δ times vertical runs (prefix differences) at column offset b.
            let groups: Vec<(f64, Vec<IntTerm>)> = self
                .edge_groups
                .iter()
                .map(|(weight, terms)| {
                    let terms = terms
                        .iter()
                        .map(|&(b, run, neg)| {
                            let start = (pad as isize + b) as usize * ch;
                            IntTerm::diff(
                                neg,
                                &prefix_row(kc + run + 1)[start..start + row_len],
                                &prefix_row(kc - run)[start..start + row_len],
                            )
                        })
                        .collect();
                    (*weight, terms)
                })
                .collect();
            add_groups::<32>(urow, &groups);
        }
    }

    /// The band's output rows: G_y of `s.u`, plus G_x(C_T) when the disk has edge terms, scaled by
    /// `factor` and stored through `store`.
    #[inline(always)]
    fn output_rows<U: Copy, F: Fn(f64) -> U>(
        &self,
        rows: &mut [U],
        d: BandDims,
        s: &mut DiskScratch,
        store: &F,
    ) {
        let ch = self.channels;
        let (half, gr, r) = (self.half, self.gr, self.radius);
        let (pw, row_len, sw, nrows) = (d.pw, d.row_len, d.sw, d.nrows);
        s.acc.resize(row_len, 0.0);
        s.ct.resize(row_len, 0.0);
        for (yo, orow) in rows.chunks_exact_mut(row_len).enumerate() {
            let acc = &mut s.acc[..];
            let urow = |k: usize| &s.u[(yo + k) * row_len..(yo + k + 1) * row_len];
            let pairs: Vec<(f64, &[f64], &[f64])> = (1..=gr)
                .map(|j| (self.g[gr + j], urow(gr - j), urow(gr + j)))
                .collect();
            symmetric_pass(acc, self.g[gr], urow(gr), &pairs);
            if !self.edge_groups.is_empty() {
                // C_T over columns −gr .. w + gr: Δ times horizontal runs (cached per band row)
                // at row offset a; then G_x.
                let groups: Vec<(f64, Vec<IntTerm>)> = self
                    .edge_groups
                    .iter()
                    .map(|(weight, terms)| {
                        let terms = terms
                            .iter()
                            .map(|&(a, run, neg)| {
                                let k = (yo as isize + a + (r + gr) as isize) as usize;
                                let src = match self.hruns.iter().position(|&w| w == run) {
                                    Some(i) => {
                                        &s.hsums[(i * nrows + k) * sw..(i * nrows + k + 1) * sw]
                                    }
                                    None => &s.rows[k * pw + half * ch..k * pw + half * ch + sw],
                                };
                                IntTerm {
                                    neg,
                                    top: src,
                                    bot: None,
                                }
                            })
                            .collect();
                        (*weight, terms)
                    })
                    .collect();
                let line = &mut s.line[..];
                line.fill(0.0);
                add_groups::<32>(line, &groups);
                let ct = &mut s.ct[..];
                blur_small(ct, line, &self.g, ch);
                for (a, &v) in acc.iter_mut().zip(ct.iter()) {
                    *a += v;
                }
            }
            for (o, &v) in orow.iter_mut().zip(acc.iter()) {
                *o = store(self.factor * v);
            }
        }
    }
}

/// The sizes of one band of [`DiskPlan::band`], in values (`channels` per pixel).
#[derive(Clone, Copy)]
struct BandDims {
    /// A padded band row: `(width + 2·(half + gr)) · channels`.
    pw: usize,
    /// An image row: `width · channels`.
    row_len: usize,
    /// A row of run sums over columns −gr .. width + gr: `(width + 2·gr) · channels`.
    sw: usize,
    /// The band's output rows.
    out_rows: usize,
    /// The band's input rows: the output rows and `gr + radius` either side.
    nrows: usize,
}

/// `s.prefix` = the column prefix sums of the band rows `s.rows` (one more row, the first zero):
/// any vertical run sum is then the difference of two of its rows.
#[inline(always)]
fn prefix_sums(d: BandDims, s: &mut DiskScratch) {
    let (pw, nrows) = (d.pw, d.nrows);
    s.prefix.resize((nrows + 1) * pw, 0);
    s.prefix[..pw].fill(0);
    for k in 0..nrows {
        let (done, next) = s.prefix.split_at_mut((k + 1) * pw);
        let prev = &done[k * pw..];
        let row = &s.rows[k * pw..(k + 1) * pw];
        for ((n, &p), &v) in next[..pw].iter_mut().zip(prev).zip(row) {
            *n = p.wrapping_add(v);
        }
    }
}

/// One integer term of [`add_groups`] / [`sum_terms`]: `±top` or `±(top − bot)`, element-wise.
struct IntTerm<'a> {
    neg: bool,
    top: &'a [i32],
    bot: Option<&'a [i32]>,
}

impl<'a> IntTerm<'a> {
    /// `+top`.
    fn plain(top: &'a [i32]) -> Self {
        Self {
            neg: false,
            top,
            bot: None,
        }
    }

    /// `±(top − bot)`.
    fn diff(neg: bool, top: &'a [i32], bot: &'a [i32]) -> Self {
        Self {
            neg,
            top,
            bot: Some(bot),
        }
    }

    /// Adds this term to `acc`, the elements `start..start + B` (exact wrapping i32).
    #[inline(always)]
    fn add_to<const B: usize>(&self, acc: &mut [i32; B], start: usize) {
        let t: &[i32; B] = self.top[start..start + B].try_into().expect("block");
        match (self.neg, self.bot) {
            (false, None) => {
                for l in 0..B {
                    acc[l] = acc[l].wrapping_add(t[l]);
                }
            }
            (true, None) => {
                for l in 0..B {
                    acc[l] = acc[l].wrapping_sub(t[l]);
                }
            }
            (false, Some(bot)) => {
                let b: &[i32; B] = bot[start..start + B].try_into().expect("block");
                for l in 0..B {
                    acc[l] = acc[l].wrapping_add(t[l].wrapping_sub(b[l]));
                }
            }
            (true, Some(bot)) => {
                let b: &[i32; B] = bot[start..start + B].try_into().expect("block");
                for l in 0..B {
                    acc[l] = acc[l].wrapping_sub(t[l].wrapping_sub(b[l]));
                }
            }
        }
    }

    /// This term's element `i`.
    fn at(&self, i: usize) -> i32 {
        let v = self
            .bot
            .map_or(self.top[i], |b| self.top[i].wrapping_sub(b[i]));
        if self.neg { v.wrapping_neg() } else { v }
    }
}

/// `out[i] += Σ_groups w · Σ_terms term[i]`: the terms of a group summed exactly in i32, then
/// weighted; groups in order. `B` outputs per block, kept in registers.
#[inline(always)]
fn add_groups<const B: usize>(out: &mut [f64], groups: &[(f64, Vec<IntTerm>)]) {
    let n = out.len();
    let full = n / B * B;
    add_groups_from::<B>(&mut out[..full], groups, 0);
    add_groups_from::<8>(out, groups, full);
}

/// [`add_groups`] of the elements from `first` on.
#[inline(always)]
fn add_groups_from<const B: usize>(out: &mut [f64], groups: &[(f64, Vec<IntTerm>)], first: usize) {
    let n = out.len();
    let full = first + (n - first) / B * B;
    for start in (first..full).step_by(B) {
        let o: &mut [f64; B] = (&mut out[start..start + B]).try_into().expect("block");
        let mut res = *o;
        for (w, terms) in groups {
            let mut acc = [0i32; B];
            for t in terms {
                t.add_to(&mut acc, start);
            }
            for l in 0..B {
                res[l] += w * f64::from(acc[l]);
            }
        }
        *o = res;
    }
    for (i, o) in out.iter_mut().enumerate().skip(full) {
        for (w, terms) in groups {
            let a = terms.iter().fold(0i32, |a, t| a.wrapping_add(t.at(i)));
            *o += w * f64::from(a);
        }
    }
}

/// `out[i] = Σ_terms term[i]` (exact wrapping i32), `B` outputs per block.
#[inline(always)]
fn sum_terms<const B: usize>(out: &mut [i32], terms: &[IntTerm]) {
    let n = out.len();
    let full = n / B * B;
    sum_terms_from::<B>(&mut out[..full], terms, 0);
    sum_terms_from::<8>(out, terms, full);
}

/// [`sum_terms`] of the elements from `first` on.
#[inline(always)]
fn sum_terms_from<const B: usize>(out: &mut [i32], terms: &[IntTerm], first: usize) {
    let n = out.len();
    let full = first + (n - first) / B * B;
    for start in (first..full).step_by(B) {
        let mut acc = [0i32; B];
        for t in terms {
            t.add_to(&mut acc, start);
        }
        out[start..start + B].copy_from_slice(&acc);
    }
    for (i, o) in out.iter_mut().enumerate().skip(full) {
        *o = terms.iter().fold(0i32, |a, t| a.wrapping_add(t.at(i)));
    }
}

/// `out[x] = Σ_k g_k · line[x + gr + k]` per channel (a small centred correlation along a row of
/// `out.len()/ch + 2·gr` pixels), symmetric taps paired.
fn blur_small(out: &mut [f64], line: &[f64], g: &[f64], ch: usize) {
    let gr = g.len() / 2;
    let n = out.len();
    let at = |d: usize| &line[d * ch..d * ch + n];
    let pairs: Vec<(f64, &[f64], &[f64])> = (1..=gr)
        .map(|j| (g[gr + j], at(gr - j), at(gr + j)))
        .collect();
    symmetric_pass(out, g[gr], at(gr), &pairs);
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

/// One axis of scipy `zoom(order=1)` (align-corners bilinear, docs/imagenet-c.md#h3-clipped-zoom):
/// for each of the first `keep` output positions of an `n_in → n_out` zoom, the (lower index, upper
/// index, upper weight) taken from the crop starting at `offset`.
pub(crate) fn zoom_axis(
    n_in: usize,
    n_out: usize,
    offset: usize,
    keep: usize,
) -> Vec<(usize, usize, f64)> {
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

/// imagecorruptions' `clipped_zoom(img, z)` (docs/imagenet-c.md#h3-clipped-zoom, IC variant, z ≥ 1)
/// followed by its callers' top-left crop: each axis cropped with its own size
/// ([`clipped_zoom_axis`]) — so non-square frames work — zoomed with scipy `zoom(order=1)`
/// (align-corners bilinear, computed in f64) and **not** trimmed; the top-left `out_w × out_h` of
/// the zoomed crop is returned (the zoomed crop is never smaller than the input; pass the zoomed
/// size from [`clipped_zoom_axis`] to get all of it). Interleaved f32 in and out, as zoom_blur
/// holds its image in float32 (scipy computes in f64 and stores the input's type).
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

/// The motion-blur kernel (docs/imagenet-c.md#h5-motion-blur-kernel; imagecorruptions' numpy port
/// of ImageMagick `MotionBlurImage`): taps `(weight, dx, dy)` for radius `r`, sigma `σ`, angle `θ`
/// degrees on an image of `width × height`.
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

/// OpenCV RGB→GRAY (docs/imagenet-c.md#h7-grayscale) on float32, `0.299 R + 0.587 G + 0.114 B`.
#[inline]
pub fn gray(r: f32, g: f32, b: f32) -> f32 {
    0.299 * r + 0.587 * g + 0.114 * b
}

#[cfg(test)]
mod tests;
