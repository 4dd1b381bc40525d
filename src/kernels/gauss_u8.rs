//! gaussian_blur's u8 → u8 Gaussian (docs/imagenet-c.md#gaussian_blur,
//! docs/imagenet-c.md#h1-gaussian-filter) in float32 with an exact float64 fallback:
//! the same bytes as [`super::gaussian::gaussian_filter_map`] with `x/255` in and
//! [`super::filter::floor8_clip`] out (scipy's float64 `gaussian_filter`, then the uint8 truncation),
//! at about twice the float32 lanes and a third fewer operations per tap.
//!
//! # Why the bytes are exact
//!
//! Every output byte is `b(y)`, where `y = fl64(ô·255)` is the float64 result `ô` of scipy's filter
//! scaled back to bytes and `b(y) = clamp(⌊y⌋, 0, 255)`; `b` is monotone (it is the reference's
//! `uint8(clip(ô, 0, 1)·255)` for every `ô`). Let `S = Σ_ij wy_j·wx_i·x_ij ≥ 0` be the exact real value
//! of the filter on the integer bytes `x` with scipy's float64 weights `w` (as real numbers; all
//! positive). The float32 pass computes `ŝ ≥ 0`, and the bounds below give `|y − ŝ| ≤ κ·ŝ` for a
//! constant `κ` of the kernel (about 3·10⁻⁶ at σ 6). Where `b(ŝ − κŝ) = b(ŝ + κŝ)` that common value is
//! the reference's byte; every other element (an output within `κŝ` of an integer: about 0.1 % of a
//! photo's elements, and every element of a region of constant 255) is recomputed in float64 in
//! scipy's own operation order, which gives the reference's `ô` bit for bit.
//!
//! The bounds, with `u` the unit roundoff (2⁻²⁴ for float32, 2⁻⁵³ for float64) and `γ_n = n·u/(1 −
//! n·u)` (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1: a sum evaluated in any order
//! whose terms each carry at most `n` roundings, additions included, is `Σ t_k(1 + θ_k)` with `|θ_k| ≤
//! γ_n`). All terms are non-negative, so each error is relative to the exact value itself:
//!
//! * float32, vertical (`t = Σ_j wy_j·s_j`, pair sums `s_j = x_l + x_r ≤ 510` exact): each term carries
//!   the weight's rounding to float32, the product's and at most `ry` additions: `t̂ = Σ_j wy_j·s_j(1 +
//!   θ_j)`, `|θ_j| ≤ γ_{ry+2}`.
//! * float32, horizontal: the weight, the pair sum `t̂_l + t̂_r`, the product and at most `rx`
//!   additions: `|φ_i| ≤ γ_{rx+3}`; with the vertical factors, `|ŝ − S| ≤ ρ·S`, `ρ = (1 + γ_{ry+2})(1 +
//!   γ_{rx+3}) − 1`. A fused multiply-add only removes roundings, so this holds with or without FMA.
//! * float64 (the reference, on the [0, 1] scale): the input `fl(x/255)`, the pair sum, the product
//!   and the additions: `|ô − S/255| ≤ ρ₆₄·S/255`, `ρ₆₄ = (1 + γ_{ry+3})(1 + γ_{rx+3}) − 1`; then
//!   `y = fl(ô·255)`: `|y − S| ≤ (ρ₆₄(1 + u) + u)·S`.
//! * Together, with `S ≤ ŝ/(1 − ρ)`: `|y − ŝ| ≤ κ·ŝ`, `κ = (ρ + ρ₆₄(1 + u) + u)/(1 − ρ)`.
//!
//! Products of normal numbers stay normal here (positive f32 weights that are normal numbers, checked;
//! bytes ≥ 1 or exactly 0), so the relative error model applies. The tested half-width is
//! `e(ŝ) = κ′·ŝ + 2⁻¹⁶` ([`Bound`], `κ′ ≥ κ` rounded up): `ŝ < 256`, so the float32 evaluation of
//! `κ′·ŝ` and of `ŝ ± e` rounds by at most half an ulp of 256 (2⁻¹⁷) plus a relative 2⁻²⁴ of `e`, which
//! the `2⁻¹⁶` covers; the tested interval always contains `[ŝ − κŝ, ŝ + κŝ]`.
//!
//! # Layout
//!
//! As [`super::gaussian::gaussian_filter_map`]: bands of rows in parallel (each band's input rows with
//! the vertical halo gathered once per column strip, converted to f32), the vertical pass written into
//! padded rows, the horizontal pass per row, then the bytes and a flag per element. A row with flags
//! recomputes its flagged elements in f64: sparse flags through per-row cached f64 vertical sums (each
//! column at most once per row), dense flags (more than a quarter of the row) through the whole f64 row.
//! The f32 arithmetic is compiled for AVX-512F + FMA, AVX2 + FMA or portable code; the fast path's
//! float values differ between them, the bytes never do (each is exact), and nothing depends on the
//! thread count.

use rayon::prelude::*;

use super::filter::{Border, border_index, floor8_clip};
use super::gaussian;

/// The half-width `e(ŝ) = rel·ŝ + abs` of the interval tested around an f32 result `ŝ` (module docs).
#[derive(Debug, Clone, Copy)]
struct Bound {
    /// `κ` of the module docs, rounded up to f32 with a little room.
    rel: f32,
    /// `2⁻¹⁶`: covers the f32 roundings of `ŝ·rel` and of `ŝ ± e(ŝ)` (results below 256).
    abs: f32,
}

impl Bound {
    /// The bound of the module documentation for kernels `ky` (rows axis) and `kx` (columns axis), which
    /// must have positive weights whose f32 roundings are normal numbers (every Gaussian kernel of
    /// [`gaussian::gaussian_kernel1d`] with truncate ≤ 4 has).
    fn new(ky: &[f64], kx: &[f64]) -> Self {
        assert!(
            ky.iter()
                .chain(kx)
                .all(|&w| w > 0.0 && (w as f32).is_normal()),
            "the bound assumes positive, normal weights"
        );
        let gamma = |n: usize, u: f64| {
            let nu = n as f64 * u;
            nu / (1.0 - nu)
        };
        let (u32_, u64_) = (2f64.powi(-24), 2f64.powi(-53));
        let (ry, rx) = (ky.len() / 2, kx.len() / 2);
        let rho = (1.0 + gamma(ry + 2, u32_)) * (1.0 + gamma(rx + 3, u32_)) - 1.0;
        let rho64 = (1.0 + gamma(ry + 3, u64_)) * (1.0 + gamma(rx + 3, u64_)) - 1.0;
        let kappa = (rho + rho64 * (1.0 + u64_) + u64_) / (1.0 - rho);
        // f64 rounding of the lines above is ~1e-16 relative: 1e-6 of room covers it and the
        // rounding of κ to f32.
        Self {
            rel: ((kappa * (1.0 + 1e-6)) as f32).next_up(),
            abs: 2f32.powi(-16),
        }
    }
}

/// Rows of flagged elements above which a row is recomputed whole in f64 (a quarter of the row).
const DENSE_FRACTION: usize = 4;

/// Elements per column strip of the vertical pass for a radius `ry`: the `2·ry + 1` input rows one
/// output row reads over one strip stay within 32 KiB (L1), in multiples of 64 lanes (at 1280×720,
/// σ 6: 9.3 ms instead of 16.8 ms with 1024-element strips).
fn strip_len(ry: usize) -> usize {
    (32_768 / 4 / (2 * ry + 1) / 64 * 64).clamp(64, 1024)
}

/// ImageNet-C `gaussian_blur`'s filter: `floor8_clip(H1(x/255))` for an interleaved u8 image of
/// `(width, height, channels)`, scipy's `gaussian_filter` with σ per axis `(σ_y, σ_x)` (an axis with
/// σ ≤ 0 is not filtered), `truncate` and `border` (docs/imagenet-c.md#gaussian_blur,
/// docs/imagenet-c.md#h1-gaussian-filter). Byte-identical to [`gaussian::gaussian_filter_map`] with
/// `|v| f64::from(v) / 255.0` and [`floor8_clip`] (module docs), for any size and thread count.
/// Panics if `data` does not hold `width·height·channels` bytes.
pub(crate) fn gaussian_blur_u8(
    data: &[u8],
    dims: (usize, usize, usize),
    (sigma_y, sigma_x): (f64, f64),
    truncate: f64,
    border: Border,
) -> Vec<u8> {
    let kernel = |s: f64| {
        if s > 0.0 {
            gaussian::gaussian_kernel1d(s, truncate)
        } else {
            vec![1.0]
        }
    };
    let (ky, kx) = (kernel(sigma_y), kernel(sigma_x));
    let bound = Bound::new(&ky, &kx);
    filter(data, dims, &ky, &kx, border, bound, simd_level())
}

/// f32 weights of one axis in symmetric form: `[w₀, w₁, …, w_r]` (centre first).
fn half_weights(k: &[f64]) -> Vec<f32> {
    let r = k.len() / 2;
    k[r..].iter().map(|&w| w as f32).collect()
}

/// Per-task buffers, reused across the bands a task runs.
#[derive(Default)]
struct Scratch {
    /// The band's input rows with the vertical halo over one strip, as f32.
    strip: Vec<f32>,
    /// The vertical pass of the band's rows, each padded by `rx` pixels on both sides.
    vertical: Vec<f32>,
    /// One flag per element of the row (1 = recompute in f64).
    flags: Vec<u8>,
    /// f64 vertical sums of the row being repaired, valid where `stamp` equals `generation`.
    v64: Vec<f64>,
    /// Which entries of `v64` belong to the current row.
    stamp: Vec<u32>,
    /// Counter of repaired rows (the stamp of the current one).
    generation: u32,
    /// Byte offsets of the input rows `y − ry ..= y + ry` of the row being repaired.
    rows: Vec<usize>,
    /// The flagged elements of the row being repaired.
    ids: Vec<usize>,
}

/// [`gaussian_blur_u8`] with kernels, the tested half-width `bound` and the instruction set
/// (`level`, as [`simd_level`]; lower levels must be supported by the CPU too) given: tests force the
/// f64 path with large margins and the portable code with level 0.
fn filter(
    data: &[u8],
    (width, height, channels): (usize, usize, usize),
    ky: &[f64],
    kx: &[f64],
    border: Border,
    bound: Bound,
    level: u8,
) -> Vec<u8> {
    assert_eq!(data.len(), width * height * channels, "buffer size");
    let level = level.min(simd_level());
    let row_len = width * channels;
    let mut out = vec![0u8; data.len()];
    if row_len == 0 || height == 0 {
        return out;
    }
    let (ry, rx) = (ky.len() / 2, kx.len() / 2);
    let (hy, hx) = (half_weights(ky), half_weights(kx));
    let band = (2 * ry).max(height.div_ceil(8)).max(16);
    let pad = rx * channels;
    let stride = row_len + 2 * pad;
    let unit: [f64; 256] = std::array::from_fn(|v| v as f64 / 255.0);
    let exact = Exact {
        data,
        dims: (width, height, channels),
        ky,
        kx,
        border,
        unit: &unit,
    };
    let strip = strip_len(ry);
    let run_band = |sc: &mut Scratch, t: usize, rows: &mut [u8]| {
        let (y0, n) = (t * band, rows.len() / row_len);
        sc.vertical.resize(n * stride, 0.0);
        for x0 in (0..row_len).step_by(strip) {
            let sw = strip.min(row_len - x0);
            sc.strip.resize((n + 2 * ry) * sw, 0.0);
            for (k, dst) in sc.strip.chunks_exact_mut(sw).enumerate() {
                let y = border_index(y0 as isize + k as isize - ry as isize, height, border);
                to_f32(level, dst, &data[y * row_len + x0..y * row_len + x0 + sw]);
            }
            for (i, v) in sc.vertical.chunks_exact_mut(stride).enumerate() {
                let src = &sc.strip[i * sw..(i + 2 * ry + 1) * sw];
                symmetric(
                    level,
                    &mut v[pad + x0..pad + x0 + sw],
                    src,
                    ry * sw,
                    sw,
                    &hy,
                );
            }
        }
        sc.flags.resize(row_len, 0);
        for (i, o) in rows.chunks_exact_mut(row_len).enumerate() {
            let v = &mut sc.vertical[i * stride..(i + 1) * stride];
            for px in (0..rx).chain(rx + width..2 * rx + width) {
                let sx = border_index(px as isize - rx as isize, width, border) + rx;
                v.copy_within(sx * channels..(sx + 1) * channels, px * channels);
            }
            let flagged = horizontal_bytes(level, o, &mut sc.flags, v, (pad, channels), &hx, bound);
            if flagged > 0 {
                exact.repair(sc, y0 + i, o, flagged);
            }
        }
    };
    if rayon::current_num_threads() == 1 {
        // A one-thread pool gains nothing from a hand-over to its worker (a cross-thread round
        // trip, ~10 % of a 224² call): the same bands in order on this thread, one scratch.
        let mut sc = Scratch::default();
        for (t, rows) in out.chunks_mut(row_len * band).enumerate() {
            run_band(&mut sc, t, rows);
        }
    } else {
        super::lanes::in_pool(|| {
            out.par_chunks_mut(row_len * band)
                .enumerate()
                .for_each_init(Scratch::default, |sc, (t, rows)| run_band(sc, t, rows));
        });
    }
    out
}

/// The float64 reference computation of single elements or whole rows (scipy's operation order, as
/// [`gaussian::gaussian_filter_map`]).
struct Exact<'a> {
    data: &'a [u8],
    dims: (usize, usize, usize),
    ky: &'a [f64],
    kx: &'a [f64],
    border: Border,
    /// `v/255` for every byte, as the reference's division computes it.
    unit: &'a [f64; 256],
}

impl Exact<'_> {
    /// Recomputes the `flagged` elements of row `y` (marked in `sc.flags`) into `out` in f64.
    fn repair(&self, sc: &mut Scratch, y: usize, out: &mut [u8], flagged: usize) {
        let (width, height, channels) = self.dims;
        let row_len = width * channels;
        let (ry, rx) = (self.ky.len() / 2, self.kx.len() / 2);
        sc.rows.clear();
        sc.rows.extend((0..=2 * ry).map(|k| {
            border_index(y as isize + k as isize - ry as isize, height, self.border) * row_len
        }));
        if flagged * DENSE_FRACTION > row_len {
            self.whole_row(sc, out);
            return;
        }
        sc.v64.resize(row_len, 0.0);
        sc.stamp.resize(row_len, 0);
        sc.generation = sc.generation.wrapping_add(1);
        if sc.generation == 0 {
            sc.stamp.fill(0);
            sc.generation = 1;
        }
        let w0 = self.kx[rx];
        // Flagged elements, found eight flags (one u64) at a time, stopping at the last one.
        let mut ids = std::mem::take(&mut sc.ids);
        ids.clear();
        for (k, f) in sc.flags.chunks(8).enumerate() {
            if ids.len() == flagged {
                break;
            }
            let word = f.iter().rev().fold(0u64, |a, &b| (a << 8) | u64::from(b));
            if word != 0 {
                ids.extend((k * 8..k * 8 + f.len()).filter(|&e| sc.flags[e] != 0));
            }
        }
        for &e in &ids {
            let (x, c) = (e / channels, e % channels);
            let mut at = |dx: isize| {
                let col = border_index(x as isize + dx, width, self.border) * channels + c;
                if sc.stamp[col] != sc.generation {
                    sc.v64[col] = self.vertical_at(&sc.rows, col);
                    sc.stamp[col] = sc.generation;
                }
                sc.v64[col]
            };
            let mut acc = at(0) * w0;
            for j in (1..=rx).rev() {
                let (l, r) = (at(-(j as isize)), at(j as isize));
                acc += (l + r) * self.kx[rx + j];
            }
            out[e] = floor8_clip(acc);
        }
        sc.ids = ids;
    }

    /// The f64 vertical sum at element `col` of the row whose input rows start at `rows`.
    fn vertical_at(&self, rows: &[usize], col: usize) -> f64 {
        let ry = self.ky.len() / 2;
        let a = |k: usize| self.unit[usize::from(self.data[rows[k] + col])];
        let mut acc = a(ry) * self.ky[ry];
        for j in (1..=ry).rev() {
            acc += (a(ry - j) + a(ry + j)) * self.ky[ry + j];
        }
        acc
    }

    /// Every element of the row in f64 (rows with many flags): the vertical sums into a padded row,
    /// then [`gaussian::symmetric_pass`].
    fn whole_row(&self, sc: &mut Scratch, out: &mut [u8]) {
        let (width, _, channels) = self.dims;
        let row_len = width * channels;
        let (ry, rx) = (self.ky.len() / 2, self.kx.len() / 2);
        let pad = rx * channels;
        sc.v64.resize(row_len + 2 * pad, 0.0);
        // The stamps no longer describe `v64`.
        sc.generation = sc.generation.wrapping_add(1);
        {
            let mid = &mut sc.v64[pad..pad + row_len];
            let centre = &self.data[sc.rows[ry]..sc.rows[ry] + row_len];
            for (m, &v) in mid.iter_mut().zip(centre) {
                *m = self.unit[usize::from(v)] * self.ky[ry];
            }
            for j in (1..=ry).rev() {
                let l = &self.data[sc.rows[ry - j]..sc.rows[ry - j] + row_len];
                let r = &self.data[sc.rows[ry + j]..sc.rows[ry + j] + row_len];
                let w = self.ky[ry + j];
                for ((m, &a), &b) in mid.iter_mut().zip(l).zip(r) {
                    *m += (self.unit[usize::from(a)] + self.unit[usize::from(b)]) * w;
                }
            }
        }
        let v = &mut sc.v64;
        for px in (0..rx).chain(rx + width..2 * rx + width) {
            let sx = border_index(px as isize - rx as isize, width, self.border) + rx;
            v.copy_within(sx * channels..(sx + 1) * channels, px * channels);
        }
        let at = |d: usize| &v[d * channels..d * channels + row_len];
        let pairs: Vec<(f64, &[f64], &[f64])> = (1..=rx)
            .rev()
            .map(|j| (self.kx[rx + j], at(rx - j), at(rx + j)))
            .collect();
        let mut line = vec![0.0f64; row_len];
        gaussian::symmetric_pass(&mut line, self.kx[rx], at(rx), &pairs);
        for (o, &l) in out.iter_mut().zip(&line) {
            *o = floor8_clip(l);
        }
    }
}

/// `out[i] = w[0]·src[centre + i] + Σ_{j=r..1} w[j]·(src[centre + i − j·step] + src[centre + i +
/// j·step])` in f32 for every `i` (`r = w.len() − 1`); `src` must reach `centre + r·step + out.len()`
/// and `centre ≥ r·step`. Runs AVX-512F + FMA code at `level` 2, AVX2 + FMA at 1, portable code at 0
/// (`level` at most [`simd_level`]).
fn symmetric(level: u8, out: &mut [f32], src: &[f32], centre: usize, step: usize, w: &[f32]) {
    debug_assert!(level <= simd_level());
    #[cfg(target_arch = "x86_64")]
    {
        if level == 2 {
            // SAFETY: `symmetric_avx512` only enables AVX-512F and FMA code generation for safe code;
            // level 2 is at most `simd_level()`, which is 2 only where the CPU reports both.
            unsafe { symmetric_avx512(out, src, centre, step, w) };
            return;
        }
        if level == 1 {
            // SAFETY: as above, for AVX2 and FMA (`simd_level() ≥ 1`).
            unsafe { symmetric_avx2(out, src, centre, step, w) };
            return;
        }
    }
    symmetric_portable(out, src, centre, step, w);
}

/// 2 with AVX-512F and FMA, 1 with AVX2 and FMA, else 0 ([`crate::kernels::cpu`], detected once):
/// exactly the features `symmetric_avx512` / `symmetric_avx2` (and their siblings) are compiled with.
#[cfg(target_arch = "x86_64")]
fn simd_level() -> u8 {
    if crate::kernels::cpu_has!("avx512f", "fma") {
        2
    } else if crate::kernels::cpu_has!("avx2", "fma") {
        1
    } else {
        0
    }
}

/// Always 0 (portable code) off x86-64.
#[cfg(not(target_arch = "x86_64"))]
fn simd_level() -> u8 {
    0
}

/// [`symmetric`] for AVX-512F with FMA: blocks of 64 lanes (four registers), then 16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
fn symmetric_avx512(out: &mut [f32], src: &[f32], centre: usize, step: usize, w: &[f32]) {
    let done = symmetric_blocks::<64, true>(out, src, centre, step, w, 0);
    let done = symmetric_blocks::<16, true>(out, src, centre, step, w, done);
    symmetric_blocks::<1, true>(out, src, centre, step, w, done);
}

/// [`symmetric`] for AVX2 with FMA: blocks of 32 lanes (four registers), then 8.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn symmetric_avx2(out: &mut [f32], src: &[f32], centre: usize, step: usize, w: &[f32]) {
    let done = symmetric_blocks::<32, true>(out, src, centre, step, w, 0);
    let done = symmetric_blocks::<8, true>(out, src, centre, step, w, done);
    symmetric_blocks::<1, true>(out, src, centre, step, w, done);
}

/// [`symmetric`] without special instructions (separate multiply and add).
fn symmetric_portable(out: &mut [f32], src: &[f32], centre: usize, step: usize, w: &[f32]) {
    let done = symmetric_blocks::<8, false>(out, src, centre, step, w, 0);
    symmetric_blocks::<1, false>(out, src, centre, step, w, done);
}

/// The body of [`symmetric`] for the whole blocks of `B` outputs from `from` on; returns where they end.
#[inline(always)]
fn symmetric_blocks<const B: usize, const FMA: bool>(
    out: &mut [f32],
    src: &[f32],
    centre: usize,
    step: usize,
    w: &[f32],
    from: usize,
) -> usize {
    let end = from + (out.len() - from) / B * B;
    for s in (from..end).step_by(B) {
        let acc = tap_block::<B, FMA>(src, centre + s, step, w);
        out[s..s + B].copy_from_slice(&acc);
    }
    end
}

/// The symmetric taps of `B` outputs whose centre tap is `src[at..at + B]`: `w[0]·c + Σ_j
/// w[j]·(src[at − j·step] + src[at + j·step])`, summed from the outermost pair in, with a fused
/// multiply-add when `FMA` (the one body [`symmetric_blocks`] and [`bytes_blocks`] share).
#[inline(always)]
fn tap_block<const B: usize, const FMA: bool>(
    src: &[f32],
    at: usize,
    step: usize,
    w: &[f32],
) -> [f32; B] {
    let c: &[f32; B] = src[at..at + B].try_into().expect("block");
    let mut acc = [0.0f32; B];
    for l in 0..B {
        acc[l] = c[l] * w[0];
    }
    for j in (1..w.len()).rev() {
        let (lo, hi) = (at - j * step, at + j * step);
        let a: &[f32; B] = src[lo..lo + B].try_into().expect("block");
        let b: &[f32; B] = src[hi..hi + B].try_into().expect("block");
        let wj = w[j];
        for l in 0..B {
            let t = a[l] + b[l];
            acc[l] = if FMA {
                t.mul_add(wj, acc[l])
            } else {
                acc[l] + t * wj
            };
        }
    }
    acc
}

/// u8 → f32 of a row piece, AVX-512F code at `level` 2 (at most [`simd_level`]), else portable.
fn to_f32(level: u8, dst: &mut [f32], src: &[u8]) {
    debug_assert!(level <= simd_level());
    #[cfg(target_arch = "x86_64")]
    if level == 2 {
        // SAFETY: `to_f32_avx512` only enables AVX-512F and FMA code generation for safe code;
        // level 2 is at most `simd_level()`, which is 2 only where the CPU reports both.
        unsafe { to_f32_avx512(dst, src) };
        return;
    }
    to_f32_body(dst, src);
}

/// [`to_f32`] compiled for AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
fn to_f32_avx512(dst: &mut [f32], src: &[u8]) {
    to_f32_body(dst, src);
}

/// The body of [`to_f32`].
#[inline(always)]
fn to_f32_body(dst: &mut [f32], src: &[u8]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = f32::from(s);
    }
}

/// The horizontal pass fused with the bytes: `ŝ` = [`symmetric`]`(src, centre, step, w)` at each
/// element, then `out[i] = b(ŝ − e(ŝ))` and `flags[i] = 1` where `b(ŝ − e(ŝ)) ≠ b(ŝ + e(ŝ))`, with `e`
/// the [`Bound`] and `b` = clamp(floor(·), 0, 255) (module docs); the f32 row is never stored.
/// Returns the number of flags. AVX-512F code at `level` 2, AVX2 at 1, portable at 0 (`level` at most
/// [`simd_level`]).
#[allow(clippy::too_many_arguments)]
fn horizontal_bytes(
    level: u8,
    out: &mut [u8],
    flags: &mut [u8],
    src: &[f32],
    (centre, step): (usize, usize),
    w: &[f32],
    bound: Bound,
) -> usize {
    debug_assert!(level <= simd_level());
    assert_eq!(out.len(), flags.len(), "a flag per byte");
    #[cfg(target_arch = "x86_64")]
    {
        if level == 2 {
            // SAFETY: `horizontal_bytes_avx512` only enables AVX-512F and FMA code generation for
            // safe code; level 2 is at most `simd_level()`, which is 2 only where the CPU reports
            // both.
            return unsafe { horizontal_bytes_avx512(out, flags, src, (centre, step), w, bound) };
        }
        if level == 1 {
            // SAFETY: as above, for AVX2 and FMA (`simd_level() ≥ 1`).
            return unsafe { horizontal_bytes_avx2(out, flags, src, (centre, step), w, bound) };
        }
    }
    let mut n = 0;
    let done = bytes_blocks::<8, false>(out, flags, src, (centre, step), w, bound, 0, &mut n);
    bytes_blocks::<1, false>(out, flags, src, (centre, step), w, bound, done, &mut n);
    n
}

/// [`horizontal_bytes`] for AVX-512F with FMA: blocks of 64 lanes, then 16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
fn horizontal_bytes_avx512(
    out: &mut [u8],
    flags: &mut [u8],
    src: &[f32],
    at: (usize, usize),
    w: &[f32],
    bound: Bound,
) -> usize {
    let mut n = 0;
    let done = bytes_blocks::<64, true>(out, flags, src, at, w, bound, 0, &mut n);
    let done = bytes_blocks::<16, true>(out, flags, src, at, w, bound, done, &mut n);
    bytes_blocks::<1, true>(out, flags, src, at, w, bound, done, &mut n);
    n
}

/// [`horizontal_bytes`] for AVX2 with FMA: blocks of 16 lanes, then 8.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn horizontal_bytes_avx2(
    out: &mut [u8],
    flags: &mut [u8],
    src: &[f32],
    at: (usize, usize),
    w: &[f32],
    bound: Bound,
) -> usize {
    let mut n = 0;
    let done = bytes_blocks::<16, true>(out, flags, src, at, w, bound, 0, &mut n);
    let done = bytes_blocks::<8, true>(out, flags, src, at, w, bound, done, &mut n);
    bytes_blocks::<1, true>(out, flags, src, at, w, bound, done, &mut n);
    n
}

/// The body of [`horizontal_bytes`] for the whole blocks of `B` outputs from `from` on (the taps as
/// [`symmetric_blocks`]); adds the flags to `count` and returns where the blocks end.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn bytes_blocks<const B: usize, const FMA: bool>(
    out: &mut [u8],
    flags: &mut [u8],
    src: &[f32],
    (centre, step): (usize, usize),
    w: &[f32],
    bound: Bound,
    from: usize,
    count: &mut usize,
) -> usize {
    let end = from + (out.len() - from) / B * B;
    let mut lanes = [0u32; B];
    for s in (from..end).step_by(B) {
        let acc = tap_block::<B, FMA>(src, centre + s, step, w);
        let o: &mut [u8; B] = (&mut out[s..s + B]).try_into().expect("block");
        let f: &mut [u8; B] = (&mut flags[s..s + B]).try_into().expect("block");
        for l in 0..B {
            let (lo, flag) = settle(acc[l], bound);
            o[l] = lo;
            f[l] = flag;
            lanes[l] += u32::from(flag);
        }
    }
    *count += lanes.iter().map(|&v| v as usize).sum::<usize>();
    end
}

/// The byte `b(ŝ − e(ŝ))` of an f32 result `ŝ` and whether `b(ŝ + e(ŝ))` differs from it (1) or not
/// (0), with `e(ŝ) = |ŝ|·rel + abs` ([`Bound`]) and `b` = clamp(floor(·), 0, 255).
#[inline(always)]
fn settle(s: f32, bound: Bound) -> (u8, u8) {
    let byte = |v: f32| {
        let v = if v > 0.0 { v } else { 0.0 };
        let v = if v < 255.0 { v } else { 255.0 };
        // SAFETY: `v` is in [0, 255] (the f32 pass cannot produce NaN from bytes and finite
        // weights, and a NaN would become 0 above), so the truncation is representable in i32.
        unsafe { v.to_int_unchecked::<i32>() }
    };
    // ŝ ≥ 0 (non-negative terms); `abs(s)` keeps the width non-negative for any input.
    let e = s.abs() * bound.rel + bound.abs;
    let (lo, hi) = (byte(s - e), byte(s + e));
    (lo as u8, u8::from(lo != hi))
}

#[cfg(test)]
mod tests;
