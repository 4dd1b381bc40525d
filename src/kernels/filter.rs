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

    /// The body of [`DiskPlan::band`].
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
        let (w, h, half, gr, r) = (self.width, self.height, self.half, self.gr, self.radius);
        let pad = half + gr;
        let pw = (w + 2 * pad) * ch;
        let row_len = w * ch;
        let out_rows = rows.len() / row_len;
        let nrows = out_rows + 2 * (gr + r);
        // Band row k is image row y0 + k − r − gr (reflect-101), padded by `pad` columns.
        s.rows.resize(nrows * pw, 0);
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
        // Horizontal run sums of half-width w (each of `hruns`) of every band row, for C_T.
        let sw = (w + 2 * gr) * ch;
        s.hsums.resize(self.hruns.len() * nrows * sw, 0);
        for (i, &run) in self.hruns.iter().enumerate() {
            let first = (half - run) * ch;
            for k in 0..nrows {
                let row = &s.rows[k * pw..(k + 1) * pw];
                let terms: Vec<IntTerm> = (0..=2 * run)
                    .map(|j| IntTerm::plain(&row[first + j * ch..first + j * ch + sw]))
                    .collect();
                let dst = &mut s.hsums[(i * nrows + k) * sw..(i * nrows + k + 1) * sw];
                sum_terms::<64>(dst, &terms);
            }
        }
        let prefix_row = |k: usize| &s.prefix[k * pw..(k + 1) * pw];
        // U = G_x(S) + C_R for image rows y0 − gr .. y0 + out_rows + gr.
        let su = out_rows + 2 * gr;
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
mod tests {
    use super::*;

    /// Seven rows of 203 values in [0, 1).
    fn rows() -> Vec<Vec<f64>> {
        (0..7)
            .map(|t| {
                (0..203)
                    .map(|i| ((i * 37 + t * 11) % 97) as f64 / 97.0)
                    .collect()
            })
            .collect()
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    crate::kernels::levels_agree! {
        fn symmetric_pass_levels_agree(|level| {
            let rows = rows();
            let pairs: Vec<(f64, &[f64], &[f64])> = (0..3)
                .map(|j| (0.1 * (j + 1) as f64, rows[j].as_slice(), rows[6 - j].as_slice()))
                .collect();
            let mut out = vec![0.0; 203];
            symmetric_pass_at(level, &mut out, 0.4, &rows[3], &pairs).map(|()| bits(&out))
        });
        fn accumulate_levels_agree(|level| {
            let rows = rows();
            let taps: Vec<(f64, &[f64])> =
                rows.iter().enumerate().map(|(t, r)| (0.3 - 0.07 * t as f64, r.as_slice())).collect();
            let mut out = vec![0.0; 203];
            accumulate_at(level, &mut out, &taps).map(|()| bits(&out))
        });
        fn map_slice_levels_agree(|level| {
            let src: Vec<u8> = (0..1000).map(|i| (i * 7 % 256) as u8).collect();
            let mut out = vec![0.0f64; 1000];
            map_slice_at(level, &mut out, &src, &|v: u8| f64::from(v) / 255.0).map(|()| bits(&out))
        });
    }

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

    /// FNV-1a over the bit patterns of a slice of f64, in order (a fingerprint of exact values).
    fn fingerprint(v: &[f64]) -> u64 {
        v.iter().fold(0xcbf2_9ce4_8422_2325, |h, v| {
            (h ^ v.to_bits()).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }

    #[test]
    fn numpy_sum_is_pairwise() {
        // numpy 1.26: np.sum([1, 1e-16 × 15]) = 1.0000000000000016 and np.sum([1, 1e-16 × 299]) =
        // 1.0000000000000289, where a sequential sum stays at 1.
        let mut a = vec![1.0];
        a.extend([1e-16; 15]);
        assert_eq!(numpy_sum(&a), 1.000_000_000_000_001_6);
        a.extend([1e-16; 284]);
        assert_eq!(numpy_sum(&a), 1.000_000_000_000_028_9);
        assert_eq!(numpy_sum(&[1.0, 2.0, 3.0]), 6.0);
        assert_eq!(numpy_sum(&[]), 0.0);
    }

    #[test]
    fn gaussian_filter_follows_scipys_operation_order() {
        // scipy 1.11.4 `correlate1d` along axis 0 then axis 1, with this module's kernels as the
        // weights (scipy's own kernel can differ in the last bit: numpy's SIMD `exp`), gives exactly
        // these values: (2, 2, 0) with 'nearest' on a 9×11×3 image x = (i·37 mod 256)/255, and
        // (1.3, 2.6) with 'reflect', truncate 3, on a 13×17 field f = (i·53 mod 199)/7 − 10.
        let x: Vec<f64> = (0..9 * 11 * 3)
            .map(|i| f64::from(i * 37 % 256) / 255.0)
            .collect();
        let g = gaussian_filter(&x, 11, 9, 3, 2.0, 4.0, Border::Nearest);
        assert_eq!(fingerprint(&g), 0x96ae_beec_4e52_00bd);
        let mut into = vec![0.0; x.len()];
        gaussian_filter_into(&x, &mut into, 11, 9, 3, 2.0, 4.0, Border::Nearest);
        assert_eq!(into, g);
        let u8s: Vec<u8> = (0..9 * 11 * 3).map(|i| (i * 37 % 256) as u8).collect();
        let from_u8 = gaussian_filter_map(
            &u8s,
            (11, 9, 3),
            (2.0, 2.0),
            4.0,
            Border::Nearest,
            |v| f64::from(v) / 255.0,
            |v| v,
        );
        assert_eq!(from_u8, g);
        let f: Vec<f64> = (0..13 * 17)
            .map(|i| f64::from(i * 53 % 199) / 7.0 - 10.0)
            .collect();
        let g2 = gaussian_filter_axes(&f, (17, 13, 1), (1.3, 2.6), 3.0, Border::Reflect);
        assert_eq!(fingerprint(&g2), 0x5412_2d14_e3ab_09d1);
        // The thread count does not matter; σ ≤ 0 on an axis leaves that axis alone.
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let g1 = one.install(|| gaussian_filter(&x, 11, 9, 3, 2.0, 4.0, Border::Nearest));
        assert_eq!(g1, g);
        let rows_only = gaussian_filter_axes(&f, (17, 13, 1), (0.0, 2.6), 3.0, Border::Reflect);
        let row0 = gaussian_filter_axes(&f[..17], (17, 1, 1), (0.0, 2.6), 3.0, Border::Reflect);
        assert_eq!(rows_only[..17], row0[..]);
    }

    #[test]
    fn banded_gaussian_equals_a_plain_symmetric_correlation() {
        // Frames wider than a strip, taller than a band, with vector tails: the banded, stripped,
        // vectorised filter equals scipy's symmetric correlation written as plain loops.
        let plain = |data: &[f64], (w, h, ch): (usize, usize, usize), k: &[f64], b: Border| {
            let r = k.len() / 2;
            let pass = |src: &[f64], vertical: bool| -> Vec<f64> {
                let mut out = vec![0.0; src.len()];
                for y in 0..h {
                    for x in 0..w {
                        for c in 0..ch {
                            let at = |d: isize| {
                                let (yy, xx) = if vertical {
                                    (border_index(y as isize + d, h, b), x)
                                } else {
                                    (y, border_index(x as isize + d, w, b))
                                };
                                src[(yy * w + xx) * ch + c]
                            };
                            let mut acc = at(0) * k[r];
                            for j in (1..=r as isize).rev() {
                                acc += (at(-j) + at(j)) * k[r + j as usize];
                            }
                            out[(y * w + x) * ch + c] = acc;
                        }
                    }
                }
                out
            };
            pass(&pass(data, true), false)
        };
        // The last two have radii 24 and 29: strips of 96 elements (separable_strip), several per
        // row with a partial last one.
        for (w, h, ch, sigma) in [
            (203, 70, 3, 1.5),
            (1, 9, 1, 2.0),
            (600, 5, 1, 6.0),
            (130, 70, 2, 7.2),
        ] {
            let data: Vec<f64> = noise_image(w, h, ch, 7)
                .into_iter()
                .map(|v| f64::from(v) / 255.0)
                .collect();
            for b in [Border::Nearest, Border::Reflect, Border::Reflect101] {
                let k = gaussian_kernel1d(sigma, 4.0);
                let want = plain(&data, (w, h, ch), &k, b);
                assert_eq!(
                    gaussian_filter(&data, w, h, ch, sigma, 4.0, b),
                    want,
                    "{w}×{h}"
                );
            }
        }
    }

    #[test]
    fn floor8_clip_equals_floor8_unit() {
        let mut v: Vec<f64> = (-300..1600).map(|i| f64::from(i) / 1024.0).collect();
        v.extend((0..=255).map(|k| f64::from(k) / 255.0));
        v.extend((0..=255).map(|k| f64::from(k) / 255.0 - 1e-17));
        v.extend([
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.0 - 1e-16,
            -0.0,
            5e-324,
            f64::MAX,
        ]);
        for x in v {
            assert_eq!(floor8_clip(x), crate::kernels::lanes::floor8_unit(x), "{x}");
            let y = x as f32;
            assert_eq!(floor8_clip_f32(y), (y.clamp(0.0, 1.0) * 255.0) as u8, "{y}");
        }
    }

    /// Random-ish u8 image of `w × h × ch`.
    fn noise_image(w: usize, h: usize, ch: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..w * h * ch)
            .map(|_| {
                s = s
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (s >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn defocus_scratch_left_by_other_calls_does_not_matter() {
        // One thread keeps its buffers across calls: a call after larger and smaller frames and
        // other radii equals the same call on a fresh thread.
        let frames = [(90, 61), (13, 7), (40, 33)];
        let calls = [(10, 0.5), (3, 0.1), (6, 0.5)];
        let run = |(w, h): (usize, usize), (r, a): (usize, f64)| {
            let img = noise_image(w, h, 3, (w + h) as u64);
            defocus_filter(&img, (w, h, 3), r, a, floor8_clip)
        };
        let one = || {
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .expect("pool")
        };
        let reused = one();
        for (k, &f) in frames.iter().enumerate() {
            for (m, &c) in calls.iter().enumerate() {
                let after = reused.install(|| run(f, c));
                let fresh = one().install(|| run(f, c));
                assert!(after == fresh, "frame {k} call {m}");
            }
        }
    }

    #[test]
    fn defocus_filter_equals_the_direct_correlation() {
        // Every severity plus other radii, on frames smaller and larger than the kernel: the
        // decomposition gives the 2-D correlation with the f32 kernel to ~1e−12 of a grey level.
        let lut: [f64; 256] = std::array::from_fn(|v| v as f64 / 255.0);
        for (w, h) in [(1, 1), (2, 3), (5, 40), (37, 23), (64, 70)] {
            let img = noise_image(w, h, 3, (w * h) as u64);
            for (r, a) in [
                (3, 0.1),
                (4, 0.5),
                (6, 0.5),
                (8, 0.5),
                (10, 0.5),
                (0, 0.5),
                (7, 0.5),
                (9, 0.3),
                (13, 0.8),
            ] {
                let (k32, side) = disk_kernel(r, a);
                let k64 = disk_parts(r, a).kernel;
                let scale = k32.iter().sum::<f64>() / k64.iter().sum::<f64>();
                let direct = |k: &[f64]| {
                    filter_taps_map(
                        &img,
                        (w, h, 3),
                        &kernel_taps(k, side),
                        Border::Reflect101,
                        |v| lut[usize::from(v)],
                        |v| v,
                    )
                };
                let worst = |a: &[f64], b: &[f64]| {
                    a.iter()
                        .zip(b)
                        .map(|(a, b)| (a - b).abs())
                        .fold(0.0, f64::max)
                };
                let fast = defocus_filter(&img, (w, h, 3), r, a, |v| v);
                // Exact: the correlation with the f64 kernel times the scale.
                let scaled: Vec<f64> = k64.iter().map(|&v| v * scale).collect();
                let e = worst(&fast, &direct(&scaled));
                assert!(e < 1e-12, "{w}×{h} radius {r}: {e:e}");
                // Against the f32 kernel: at most the summed f32 rounding of the taps.
                let bound: f64 = scaled.iter().zip(&k32).map(|(a, b)| (a - b).abs()).sum();
                let e = worst(&fast, &direct(&k32));
                assert!(
                    e <= bound + 1e-12 && bound < 2e-7,
                    "{w}×{h} radius {r}: {e:e} > {bound:e}"
                );
                let one = rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .expect("pool");
                let single = one.install(|| defocus_filter(&img, (w, h, 3), r, a, |v| v));
                assert_eq!(single, fast);
            }
        }
        // A flat white frame: the f32 kernel sums to 1 − 3.7e−9 at severity 1, so the reference
        // gives 254 everywhere, and so does this.
        let white = vec![255u8; 30 * 20 * 3];
        let out = defocus_filter(&white, (30, 20, 3), 3, 0.1, floor8_clip);
        assert!(out.iter().all(|&v| v == 254));
        assert!(defocus_filter(&[], (0, 5, 3), 3, 0.1, floor8_clip).is_empty());
    }

    #[test]
    fn disk_edges_and_runs() {
        // Radius 10: column half-heights of the disk.
        let runs: Vec<Option<usize>> = (-11..=11).map(|o| disk_run(10, o)).collect();
        assert_eq!(runs[0], None);
        assert_eq!(runs[1..12], [0, 4, 6, 7, 8, 8, 9, 9, 9, 9, 10].map(Some));
        // Severity 4 (support ±8, 3 taps): the blur misses one tap beyond each edge and reflects it
        // back one inside.
        let d = disk_parts(8, 0.5);
        let g1 = d.g[2];
        let t = edge_terms(8, &d.g);
        assert_eq!(
            t,
            [(-9, -8, -g1), (-8, -7, g1), (8, 7, g1), (9, 8, -g1)],
            "{t:?}"
        );
        for r in 0..=64 {
            let d = disk_parts(r, 0.5);
            assert!(
                !touches_two_edges(r, &edge_terms(d.half, &d.g)),
                "radius {r}"
            );
        }
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
        // Non-zero taps before the anti-alias blur: 29, 49, 113, 197, 317
        // (docs/imagenet-c.md#defocus_blur).
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
        // The example of docs/imagenet-c.md#h3-clipped-zoom: z = 1.03 on 224 → crop 218 at 3,
        // zoomed to 225.
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
