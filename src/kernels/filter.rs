//! What the filtering kernels of the ImageNet-C blur and weather corruptions share
//! (docs/imagenet-c.md#shared-kernels): the rounding to bytes, the borders (scipy's and OpenCV's),
//! padding, the row-parallel tap sums and a generic centred 2-D correlation (OpenCV `filter2D`),
//! and OpenCV grayscale (H7). The filters themselves are one file each beside this one: the
//! separable Gaussian (H1, [`super::gaussian`]), the anti-aliased disk of defocus (H2,
//! [`super::defocus`]), the clipped zoom (H3, [`super::zoom`]) and the motion-blur kernel (H5,
//! [`super::motion`]).
//!
//! Images are interleaved row-major `f64` buffers of `width × height × channels`. Every filter pads once
//! and then adds whole contiguous rows (`acc += k · row`), which the compiler vectorises; rows are
//! computed in parallel with rayon, each row always in the same order, so results never depend on the
//! thread count.

#[cfg(test)]
use rayon::prelude::*;

/// `floor8(clip(v, 0, 1)·255)` (docs/imagenet-c.md#value-ranges-and-rounding), the same value as
/// [`floor8_unit`](super::lanes::floor8_unit) for every input (NaN → 0), written without NaN-aware
/// clamping or saturating casts (a few instructions, and loops over rows vectorise).
#[inline(always)]
pub(crate) fn floor8_clip(v: f64) -> u8 {
    let v = if v > 0.0 { v } else { 0.0 }; // NaN → 0, as the reference's uint8 cast of NaN·255
    let v = if v < 1.0 { v } else { 1.0 };
    // SAFETY: v is in [0, 1] here, so v·255 is finite and in [0, 255]: representable as i32, which
    // is all `to_int_unchecked` requires; the truncation is the reference's floor for v ≥ 0.
    unsafe { (v * 255.0).to_int_unchecked::<i32>() as u8 }
}

/// [`floor8_clip`] of a float32 value with the ×255 in float32 (the reference's `np.clip(x, 0, 1) *
/// 255` on a float32 array, then uint8).
#[inline(always)]
pub(crate) fn floor8_clip_f32(v: f32) -> u8 {
    let v = if v > 0.0 { v } else { 0.0 };
    let v = if v < 1.0 { v } else { 1.0 };
    // SAFETY: as in `floor8_clip`: v·255 is finite and in [0, 255].
    unsafe { (v * 255.0).to_int_unchecked::<i32>() as u8 }
}

/// How a filter reads outside the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Border {
    /// Edge replication, `a a | a b c | c c` (scipy 'nearest', OpenCV `BORDER_REPLICATE`).
    Nearest,
    /// Half-sample symmetric, `b a | a b c | c b` (scipy 'reflect', OpenCV `BORDER_REFLECT`).
    Reflect,
    /// Whole-sample symmetric, `c b | a b c | b a` (OpenCV `BORDER_REFLECT_101`, its default).
    Reflect101,
}

/// The in-image index that position `i` (possibly outside `0..n`) reads under `border`; periodic for
/// the reflections, so any distance works. `n` must be at least 1.
pub(crate) fn border_index(i: isize, n: usize, border: Border) -> usize {
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

/// `numpy.sum` of a contiguous f64 array: numpy's pairwise summation (fewer than 8 values: in order;
/// up to 128: eight interleaved partial sums combined as ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), then
/// the remainder in order; longer: split at a multiple of 8 near the middle and recurse).
pub(crate) fn numpy_sum(a: &[f64]) -> f64 {
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

/// Minimum number of elements a rayon task should get.
#[cfg(test)]
pub(super) const ELEMENTS_PER_TASK: usize = 8_192;

/// Rows per rayon task for rows of `row_len` elements.
#[cfg(test)]
pub(super) fn rows_per_task(row_len: usize) -> usize {
    (ELEMENTS_PER_TASK / row_len.max(1)).max(1)
}

crate::kernels::multiversion! {
    /// `out[i] = Σ_t w_t · src_t[i]` over the taps `(w_t, src_t)`, in tap order, for every `i`.
    /// Blocks of 8 outputs stay in registers across all taps (one store per output instead of one
    /// per tap). Compiled twice: with AVX2 where the CPU has it (4 lanes instead of SSE2's 2), else
    /// portable. The arithmetic is the same (separate multiply and add, never fused: Rust does not
    /// contract), so both give identical bits.
    #[cfg(test)]
    pub(super) fn accumulate(out: &mut [f64], taps: &[(f64, &[f64])]);
    /// `accumulate` compiled for AVX2.
    accumulate_avx2 ["avx2"] => accumulate_portable;
    _ => accumulate_portable;
    levels accumulate_at;
}

/// The body of `accumulate`.
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

crate::kernels::multiversion! {
    /// `out[i] = f(src[i])`, compiled for AVX-512F or AVX2 where the CPU has it (conversions such
    /// as u8 → f64 ÷ 255 or f64 → u8 then vectorise); every version computes the same values.
    pub(super) fn map_slice[T: Copy, U, F: Fn(T) -> U](out: &mut [U], src: &[T], f: &F);
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

/// [`pad`] of any element type, each element converted by `load`.
#[cfg(test)]
pub(super) fn pad_map<T: Copy>(
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
#[cfg(test)]
fn filter_taps(
    data: &[f64],
    dims: (usize, usize, usize),
    taps: &[(f64, isize, isize)],
    border: Border,
) -> Vec<f64> {
    filter_taps_map(data, dims, taps, border, |v| v, |v| v)
}

/// [`filter_taps`] reading any element type through `load` and writing each result through `store`
/// (e.g. u8 in, floor8 out), so no full-size f64 copy of the input or output is made.
#[cfg(test)]
pub(crate) fn filter_taps_map<T, U>(
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
#[cfg(test)]
fn filter2d(
    data: &[f64],
    dims: (usize, usize, usize),
    kernel: &[f64],
    ksize: usize,
    border: Border,
) -> Vec<f64> {
    filter_taps(data, dims, &kernel_taps(kernel, ksize), border)
}

/// The non-zero taps `(weight, dx, dy)` of a square row-major kernel of odd side `ksize`, centred.
#[cfg(test)]
pub(crate) fn kernel_taps(kernel: &[f64], ksize: usize) -> Vec<(f64, isize, isize)> {
    let half = (ksize / 2) as isize;
    kernel
        .iter()
        .enumerate()
        .filter(|(_, w)| **w != 0.0)
        .map(|(i, &w)| (w, (i % ksize) as isize - half, (i / ksize) as isize - half))
        .collect()
}

/// OpenCV RGB→GRAY (docs/imagenet-c.md#h7-grayscale) on float32, `0.299 R + 0.587 G + 0.114 B`.
#[inline]
pub(crate) fn gray(r: f32, g: f32, b: f32) -> f32 {
    0.299 * r + 0.587 * g + 0.114 * b
}

#[cfg(test)]
mod tests;
