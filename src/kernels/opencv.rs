//! The OpenCV 8-bit operations XIMAGENET-12 builds its scenarios from
//! (docs/ximagenet.md#scenarios), reproduced byte for byte as OpenCV 4.8.1 computes them on x86-64
//! (opencv-python-headless, the AVX2 code path):
//!
//! - [`gaussian_blur`]: `GaussianBlur` on u8, which OpenCV computes in **fixed point**: a kernel in
//!   1/256 steps (`gaussian_kernel_q8`), exact integer horizontal and vertical passes, the result
//!   rounded as `(sum + 2¹⁵) >> 16`; border reflect-101 (OpenCV's default).
//! - `rgb_to_hsv` / `hsv_to_rgb`: `cvtColor` RGB↔HSV with 8-bit hue `0..=179` (H = degrees / 2).
//!   RGB→HSV is OpenCV's integer formula with its rounded 12-bit division tables. HSV→RGB is float32
//!   arithmetic whose two products under `1 − s·h` and `1 − s·(1 − h)` OpenCV's build fuses (FMA), and
//!   whose result OpenCV **truncates** in its SIMD loop but **rounds** (half to even) in its scalar loop:
//!   per image row, whole blocks of [`HSV_SIMD_BLOCK`] pixels go through the SIMD loop, the remaining
//!   columns through the scalar one. `hsv_to_rgb` takes that choice as a `Rounding`;
//!   [`simd_columns`] says which columns truncate.
//! - [`add_weighted_bright`]: `addWeighted(a, 1.5, b, 0.9, 1.9)` (XIMAGENET's bright scenarios), float32
//!   `fma(a, 1.5, fma(b, 0.9, 1.9))` rounded half to even and saturated, except the last
//!   `len mod 16` elements of the (continuous) buffer, which OpenCV's scalar tail computes unfused as
//!   `(a·1.5 + b·0.9) + 1.9`.
//! - [`gray`]: `cvtColor` RGB→GRAY on u8, `(9798 R + 19235 G + 3735 B + 2¹⁴) >> 15`.
//! - [`resize_linear`]: `resize` with its default `INTER_LINEAR` on u8 (XIMAGENET's random
//!   background squashes the segmented object to the background's size with it): fixed-point
//!   weights in 1/2048 steps, the horizontal pass exact in integers, the vertical pass with the
//!   rounding of OpenCV's vector loop, `(((h0 >> 4)·b0 >> 16) + ((h1 >> 4)·b1 >> 16) + 2) >> 2`
//!   (see the function).
//!
//! Every formula was checked against OpenCV 4.8.1 exhaustively where the input space allows (all 2²⁴
//! colours, all 181 × 256 × 256 HSV triples, all 65 536 addWeighted pairs) by
//! `scripts/make_background_fixtures.py`, which also writes the fixtures the tests here compare with
//! (`tests/fixtures/background/`). OpenCV builds without AVX2/FMA (other CPUs, other versions) differ in
//! the last bit of a few HSV and addWeighted results; we follow the AVX2 build, the common one.
//!
//! Speed (about OpenCV's own single-thread speed or better; `benches/background.rs`): the loops are
//! branch-free, work on blocks held in registers and are compiled twice, with AVX2 + FMA where the CPU
//! has both (chosen at run time) and portable; the portable build computes the same bits
//! (`f32::mul_add` is a correctly rounded fused multiply-add everywhere), only slower. Float → u8
//! conversions go through the 2²³ trick (`MAGIC`) because Rust's saturating casts do not vectorise;
//! the HSV tables are recomputed per pixel as float32 divisions (equal to the tables for every index,
//! tested) because table lookups do not vectorise. The blur keeps OpenCV's integers but runs the
//! passes the other way round (the sum is the same): per output row, the vertical pass in u16 straight
//! from the image rows, then the horizontal pass in float32, which is exact here (every product and sum
//! is an integer below 2²⁴), so all work stays in L1. Blocks of rows run in parallel (rayon); nothing
//! here is random and all arithmetic is exact or per element, so results never depend on the thread
//! count.

use image::RgbImage;
use rayon::prelude::*;

/// The output rectangle of a filter: columns `[x0, x1)`, rows `[y0, y1)` of the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    /// First column.
    pub(crate) x0: u32,
    /// First row.
    pub(crate) y0: u32,
    /// One past the last column.
    pub(crate) x1: u32,
    /// One past the last row.
    pub(crate) y1: u32,
}

impl Rect {
    /// The whole `width × height` image.
    pub(crate) fn full(width: u32, height: u32) -> Self {
        Self {
            x0: 0,
            y0: 0,
            x1: width,
            y1: height,
        }
    }

    /// Width in pixels.
    pub(crate) fn width(&self) -> u32 {
        self.x1.saturating_sub(self.x0)
    }

    /// Height in pixels.
    fn height(&self) -> u32 {
        self.y1.saturating_sub(self.y0)
    }
}

/// XIMAGENET's object/background blur: `GaussianBlur(img, (15, 15), 3)`
/// (docs/ximagenet.md#blurred-background-and-blurred-object).
pub(crate) const BLUR_15: [u16; 15] = [2, 5, 9, 14, 21, 27, 33, 34, 33, 27, 21, 14, 9, 5, 2];
/// XIMAGENET's blur for the bright scenarios: `GaussianBlur(img, (9, 9), cv2.BORDER_DEFAULT)`, whose
/// third argument (4) is σ (docs/ximagenet.md#bright-background-and-bright-object).
pub(crate) const BLUR_9: [u16; 9] = [21, 26, 30, 34, 34, 34, 30, 26, 21];

/// OpenCV's fixed-point Gaussian kernel for 8-bit images (`GaussianBlur` on `CV_8U`): `ksize` taps
/// (odd) of `exp(−d²/(2σ²))` normalised to sum 1 (σ > 0), scaled by 256 and rounded from the outermost
/// tap inwards with the rounding error carried to the next tap (ties to even); the centre tap takes
/// whatever makes the sum exactly 256. `(15, 3.0)` gives [`BLUR_15`], `(9, 4.0)` gives [`BLUR_9`].
///
/// The Gaussian is evaluated as OpenCV does, `exp((2i − (n − 1))² · (−0.125 / σ²))`, in f64 (OpenCV uses
/// a software double with its own `exp`; the two agree on every tap that matters here, see the tests).
#[cfg(test)]
fn gaussian_kernel_q8(ksize: usize, sigma: f64) -> Vec<u16> {
    assert!(ksize % 2 == 1 && sigma > 0.0, "odd size and positive σ");
    let half = ksize / 2;
    let scale = -0.125 / (sigma * sigma);
    let raw: Vec<f64> = (0..half)
        .map(|i| {
            let x = (2 * i) as f64 - (ksize - 1) as f64;
            (x * x * scale).exp()
        })
        .collect();
    let sum = 2.0 * raw.iter().sum::<f64>() + 1.0;
    let mul = 1.0 / sum;
    let mut taps = vec![0u16; ksize];
    let (mut err, mut used) = (0.0f64, 0u32);
    for i in 0..half {
        let want = raw[i] * mul * 256.0 + err;
        let q = want.round_ties_even();
        err = want - q;
        taps[i] = q as u16;
        taps[ksize - 1 - i] = q as u16;
        used += q as u32;
    }
    taps[half] = (256 - 2 * used) as u16;
    taps
}

/// OpenCV `BORDER_REFLECT_101` (`c b | a b c | b a`): the in-image index that position `i` reads, for
/// any distance (periodic); `n ≥ 1`.
fn reflect101(i: isize, n: usize) -> usize {
    let n_i = n as isize;
    if (0..n_i).contains(&i) {
        return i as usize;
    }
    if n == 1 {
        return 0;
    }
    let p = 2 * n_i - 2;
    let m = i.rem_euclid(p);
    (if m >= n_i { p - m } else { m }) as usize
}

/// Longest kernel [`gaussian_blur`] takes.
const MAX_TAPS: usize = 31;

/// Rows per rayon task for rows of `row_len` bytes (about 64 KiB of output per task).
fn rows_per_task(row_len: usize) -> usize {
    (65_536 / row_len.max(1)).max(1)
}

/// `GaussianBlur` of an RGB u8 image with a symmetric fixed-point kernel `k` (odd length up to
/// [`MAX_TAPS`], taps summing to 256, e.g. [`BLUR_15`]), border reflect-101, computed only inside
/// `rect` (which must lie in the image): returns the `rect.width() × rect.height()` block of the full
/// blurred image, exactly as OpenCV 4.8.1 computes it (docs/ximagenet.md#scenarios):
/// `(Σ_j k_j Σ_i k_i · p(y + j − r, x + i − r) + 2¹⁵) >> 16`. An empty image or rectangle gives an empty
/// result.
pub(crate) fn gaussian_blur(src: &RgbImage, k: &[u16], rect: Rect) -> RgbImage {
    let (w, h) = (src.width() as usize, src.height() as usize);
    assert!(
        k.len() % 2 == 1 && k.iter().map(|&t| u32::from(t)).sum::<u32>() == 256,
        "odd kernel summing to 256"
    );
    assert!(
        k.len() <= MAX_TAPS && k.iter().zip(k.iter().rev()).all(|(a, b)| a == b),
        "symmetric kernel of at most MAX_TAPS taps"
    );
    assert!(
        rect.x1 as usize <= w && rect.y1 as usize <= h,
        "rect inside the image"
    );
    let (rw, rh) = (rect.width() as usize, rect.height() as usize);
    if rw == 0 || rh == 0 {
        return RgbImage::new(rect.width(), rect.height());
    }
    let r = k.len() / 2;
    let (x0, y0) = (rect.x0 as usize, rect.y0 as usize);
    let row_len = rw * 3;
    // Source columns the horizontal pass reads: reflections of columns within r of the rectangle stay
    // inside [sx0, sx1) (for images narrower than r that is every column).
    let sx0 = x0.saturating_sub(r);
    let sx1 = (x0 + rw + r).min(w);
    let src_len = (sx1 - sx0) * 3;
    // Padded position p (column x0 + p − r) reads source column cols[p] − sx0; positions [lead, end)
    // are the contiguous run that needs no reflection.
    let cols: Vec<usize> = (0..rw + 2 * r)
        .map(|p| reflect101(x0 as isize + p as isize - r as isize, w) - sx0)
        .collect();
    let lead = r.saturating_sub(x0);
    let end = (rw + 2 * r).min(w + r - x0);
    let src_raw = src.as_raw();
    let kf: Vec<f32> = k.iter().map(|&t| f32::from(t)).collect();
    let per = rows_per_task(row_len);
    let mut out = vec![0u8; rh * row_len];
    out.par_chunks_mut(per * row_len)
        .enumerate()
        .for_each(|(t, block)| {
            let mut vsum = vec![0u16; src_len];
            let mut padded = vec![0f32; (rw + 2 * r) * 3];
            let mut sums = vec![0f32; row_len];
            for (i, o) in block.chunks_exact_mut(row_len).enumerate() {
                let y = (y0 + t * per + i) as isize;
                // Vertical pass first (exact in u16), over the source columns the row needs.
                let rows: [&[u8]; MAX_TAPS] = std::array::from_fn(|j| {
                    if j < k.len() {
                        let sy = reflect101(y + j as isize - r as isize, h);
                        &src_raw[(sy * w + sx0) * 3..(sy * w + sx1) * 3]
                    } else {
                        &[]
                    }
                });
                vertical_u16(&rows[..k.len()], k, &mut vsum);
                // The padded row as float32 (exact integers), reflecting at the image's edges.
                widen(
                    &vsum[(x0 + lead - r - sx0) * 3..(x0 + end - r - sx0) * 3],
                    &mut padded[lead * 3..end * 3],
                );
                for p in (0..lead).chain(end..rw + 2 * r) {
                    let c = cols[p] * 3;
                    for ch in 0..3 {
                        padded[p * 3 + ch] = f32::from(vsum[c + ch]);
                    }
                }
                horizontal_f32(&padded, &kf, &mut sums, o);
            }
        });
    RgbImage::from_raw(rect.width(), rect.height(), out).expect("buffer of the rect's size")
}

crate::kernels::multiversion! {
    /// The vertical pass of one row: `out[i] = Σ_j k[j] · rows[j][i]` (exact in u16: the taps sum to
    /// 256, so every partial sum is ≤ 255 · 256).
    fn vertical_u16(rows: &[&[u8]], k: &[u16], out: &mut [u16]);
    vertical_u16_avx2 ["avx2", "fma"] => vertical_u16_body;
    _ => vertical_u16_body;
    levels vertical_u16_at;
}

#[inline(always)]
fn vertical_u16_body(rows: &[&[u8]], k: &[u16], out: &mut [u16]) {
    // Symmetric taps in pairs: a non-centre tap is at most 128 (it has a twin and all sum to 256), so
    // k·(a + b) ≤ 128 · 510 fits u16. Blocks of B outputs stay in registers across all taps.
    const B: usize = 32;
    let n = out.len();
    let r = k.len() / 2;
    let kc = k[r];
    let full = n / B * B;
    for start in (0..full).step_by(B) {
        let c: &[u8; B] = rows[r][start..start + B].try_into().expect("block");
        let mut acc = [0u16; B];
        for l in 0..B {
            acc[l] = kc.wrapping_mul(u16::from(c[l]));
        }
        for t in 0..r {
            let a: &[u8; B] = rows[t][start..start + B].try_into().expect("block");
            let b: &[u8; B] = rows[2 * r - t][start..start + B].try_into().expect("block");
            let kt = k[t];
            for l in 0..B {
                acc[l] = acc[l].wrapping_add(kt.wrapping_mul(u16::from(a[l]) + u16::from(b[l])));
            }
        }
        out[start..start + B].copy_from_slice(&acc);
    }
    for i in full..n {
        let mut acc = kc.wrapping_mul(u16::from(rows[r][i]));
        for t in 0..r {
            let pair = u16::from(rows[t][i]) + u16::from(rows[2 * r - t][i]);
            acc = acc.wrapping_add(k[t].wrapping_mul(pair));
        }
        out[i] = acc;
    }
}

crate::kernels::multiversion! {
    /// u16 → f32, element by element.
    fn widen(src: &[u16], dst: &mut [f32]);
    widen_avx2 ["avx2", "fma"] => widen_body;
    _ => widen_body;
    levels widen_at;
}

#[inline(always)]
fn widen_body(src: &[u16], dst: &mut [f32]) {
    for (d, &v) in dst.iter_mut().zip(src) {
        *d = f32::from(v);
    }
}

crate::kernels::multiversion! {
    /// The horizontal pass of one row of vertical sums (interleaved RGB, padded by r pixels each
    /// side): `sums[i] = Σ_t k[t] · padded[i + 3t]`, then `out = (sums + 2¹⁵) >> 16`.
    fn horizontal_f32(padded: &[f32], k: &[f32], sums: &mut [f32], out: &mut [u8]);
    horizontal_f32_avx2 ["avx2", "fma"] => horizontal_f32_body;
    _ => horizontal_f32_body;
    levels horizontal_f32_at;
}

#[inline(always)]
fn horizontal_f32_body(padded: &[f32], k: &[f32], sums: &mut [f32], out: &mut [u8]) {
    // Exact in float32: every product and partial sum is an integer below 2²⁴ (≤ 255 · 2¹⁶ + 2¹⁵).
    // Blocks of B sums stay in registers across all taps; symmetric taps share a multiply.
    const B: usize = 16;
    let n = out.len();
    let r = k.len() / 2;
    let kc = k[r];
    let full = n / B * B;
    for start in (0..full).step_by(B) {
        let c: &[f32; B] = padded[r * 3 + start..r * 3 + start + B]
            .try_into()
            .expect("block");
        let mut acc = [0f32; B];
        for l in 0..B {
            acc[l] = kc * c[l];
        }
        for t in 0..r {
            let a: &[f32; B] = padded[t * 3 + start..t * 3 + start + B]
                .try_into()
                .expect("block");
            let o = (2 * r - t) * 3 + start;
            let b: &[f32; B] = padded[o..o + B].try_into().expect("block");
            let kt = k[t];
            for l in 0..B {
                acc[l] += kt * (a[l] + b[l]);
            }
        }
        sums[start..start + B].copy_from_slice(&acc);
    }
    for i in full..n {
        let mut acc = kc * padded[r * 3 + i];
        for t in 0..r {
            acc += k[t] * (padded[t * 3 + i] + padded[(2 * r - t) * 3 + i]);
        }
        sums[i] = acc;
    }
    // (sum + 2¹⁵) >> 16, in float (exact: a power-of-two scale, then truncation).
    for (o, &v) in out.iter_mut().zip(sums.iter()) {
        *o = to_u8_trunc((v + 32_768.0) * (1.0 / 65_536.0));
    }
}

// ---------------------------------------------------------------------------------------------------
// HSV

/// `round(n / d)` with ties to even, exactly (n, d > 0). Equals OpenCV's `cvRound(double(n) / d)` for
/// the tables below: a quotient with denominator ≤ 1530 is never within a double's rounding error of a
/// tie without being one.
#[cfg(test)]
const fn div_round_even(n: i64, d: i64) -> i32 {
    let q = n / d;
    let twice = 2 * (n % d);
    (if twice > d || (twice == d && q % 2 == 1) {
        q + 1
    } else {
        q
    }) as i32
}

/// OpenCV's `sdiv_table`: `round(255 · 2¹² / v)` (0 for v = 0).
#[cfg(test)]
const SDIV: [i32; 256] = {
    let mut t = [0i32; 256];
    let mut i = 1;
    while i < 256 {
        t[i] = div_round_even(255 << 12, i as i64);
        i += 1;
    }
    t
};

/// OpenCV's `hdiv_table180`: `round(180 · 2¹² / (6 · diff))` (0 for diff = 0).
#[cfg(test)]
const HDIV: [i32; 256] = {
    let mut t = [0i32; 256];
    let mut i = 1;
    while i < 256 {
        t[i] = div_round_even(180 << 12, 6 * i as i64);
        i += 1;
    }
    t
};

/// OpenCV `cvtColor(RGB2HSV)` of one 8-bit pixel: `[H, S, V]` with H in `0..=179` (degrees / 2),
/// S and V in `0..=255`. Integer arithmetic with OpenCV's rounded 12-bit division tables; when several
/// channels are the maximum, red wins over green over blue.
#[inline(always)]
#[cfg(test)]
pub(crate) fn rgb_to_hsv(r: u8, g: u8, b: u8) -> [u8; 3] {
    let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
    let v = r.max(g).max(b);
    let diff = v - r.min(g).min(b);
    let s = (diff * SDIV[v as usize] + (1 << 11)) >> 12;
    let num = if v == r {
        g - b
    } else if v == g {
        b - r + 2 * diff
    } else {
        r - g + 4 * diff
    };
    let mut h = (num * HDIV[diff as usize] + (1 << 11)) >> 12;
    if h < 0 {
        h += 180;
    }
    [h as u8, s as u8, v as u8]
}

/// How [`hsv_to_rgb`] turns its float result into u8: OpenCV 4.8.1 truncates in its SIMD loop and rounds
/// (half to even) in its scalar loop (see [`simd_columns`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg(test)]
pub(crate) enum Rounding {
    /// Truncation toward zero (OpenCV's SIMD loop, `v_trunc`).
    Truncate,
    /// Round half to even (OpenCV's scalar loop, `saturate_cast<uchar>`).
    Nearest,
}

/// Pixels per block of OpenCV 4.8.1's SIMD HSV→RGB loop on AVX2 (4 vectors of 8 floats).
const HSV_SIMD_BLOCK: usize = 32;

/// The columns `[0, n)` of each row that OpenCV's SIMD loop converts (truncating) for a row of
/// `width` pixels: whole blocks of [`HSV_SIMD_BLOCK`]; the rest of the row is rounded.
fn simd_columns(width: usize) -> usize {
    width / HSV_SIMD_BLOCK * HSV_SIMD_BLOCK
}

/// `6 / 180` in float32, OpenCV's `hscale` for 8-bit hue.
const HSCALE: f32 = 6.0 / 180.0;
/// `1 / 255` in float32.
const INV255: f32 = 1.0 / 255.0;

/// OpenCV `cvtColor(HSV2RGB)` of one 8-bit pixel `(h, s, v)`, h in `0..=180` (180 wraps to red, as in
/// OpenCV), returned as `[R, G, B]`. float32 throughout: `s/255`, `v/255`, `h · 6/180` split into sector
/// and fraction, the four values `v`, `v(1 − s)`, `v · fma(−s, f, 1)`, `v · fma(−s, 1 − f, 1)` picked by
/// sector, × 255, then `rounding`.
#[inline(always)]
#[cfg(test)]
pub(crate) fn hsv_to_rgb(h: u8, s: u8, v: u8, rounding: Rounding) -> [u8; 3] {
    let (r, g, b) = match rounding {
        Rounding::Truncate => hsv_lane::<true>(i32::from(h), i32::from(s), i32::from(v)),
        Rounding::Nearest => hsv_lane::<false>(i32::from(h), i32::from(s), i32::from(v)),
    };
    [r, g, b]
}

/// `hsv_to_rgb` without branches (selects only), so that loops over it vectorise; `TRUNC` picks
/// truncation over rounding.
#[inline(always)]
fn hsv_lane<const TRUNC: bool>(h: i32, s: i32, v: i32) -> (u8, u8, u8) {
    let sf = s as f32 * INV255;
    let vf = v as f32 * INV255;
    let hh = h as f32 * HSCALE;
    let whole = hh.trunc();
    let frac = hh - whole;
    // h ≤ 180 → whole ≤ 6, and sector 6 is sector 0.
    let sector = if whole >= 6.0 { whole - 6.0 } else { whole };
    let t0 = vf;
    let t1 = vf * (1.0 - sf);
    let t2 = vf * (-sf).mul_add(frac, 1.0);
    let t3 = vf * (-sf).mul_add(1.0 - frac, 1.0);
    // Sector → (R, G, B): 0 (t0, t3, t1), 1 (t2, t0, t1), 2 (t1, t0, t3), 3 (t1, t2, t0),
    // 4 (t3, t1, t0), 5 (t0, t1, t2).
    let r = if sector == 1.0 {
        t2
    } else if sector == 2.0 || sector == 3.0 {
        t1
    } else if sector == 4.0 {
        t3
    } else {
        t0
    };
    let g = if sector == 0.0 {
        t3
    } else if sector == 3.0 {
        t2
    } else if sector >= 4.0 {
        t1
    } else {
        t0
    };
    let b = if sector <= 1.0 {
        t1
    } else if sector == 2.0 {
        t3
    } else if sector == 5.0 {
        t2
    } else {
        t0
    };
    let q = |x: f32| {
        if TRUNC {
            to_u8_trunc(x * 255.0)
        } else {
            to_u8_nearest(x * 255.0)
        }
    };
    (q(r), q(g), q(b))
}

/// `rgb_to_hsv` without table lookups or branches, so that loops over it vectorise: OpenCV's tables
/// `round(255 · 2¹² / v)` and `round(180 · 2¹² / (6 · diff))` are recomputed as float32 divisions
/// rounded half to even, which equal the tables for every index (tested); index 0 (an infinite
/// quotient) only ever meets a zero factor.
#[inline(always)]
fn hsv_of_lane(r: i32, g: i32, b: i32) -> (i32, i32, i32) {
    let v = r.max(g).max(b);
    let diff = v - r.min(g).min(b);
    let sdiv = round_quotient(1_044_480.0, v as f32);
    let hdiv = round_quotient(737_280.0, (6 * diff) as f32);
    let s = (diff.wrapping_mul(sdiv) + (1 << 11)) >> 12;
    let num = if v == r {
        g - b
    } else if v == g {
        b - r + 2 * diff
    } else {
        r - g + 4 * diff
    };
    let h = (num.wrapping_mul(hdiv) + (1 << 11)) >> 12;
    let h = if h < 0 { h + 180 } else { h };
    (h, s, v)
}

/// `round(n / d)` (ties to even) of a float32 quotient below 2²³, as i32, via the [`MAGIC`] addition.
#[inline(always)]
fn round_quotient(n: f32, d: f32) -> i32 {
    ((n / d + MAGIC).to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32)
}

/// What [`recolour`] does to each background pixel's hue (docs/ximagenet.md#coloured-backgrounds,
/// docs/ximagenet.md#rainbow-background).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HueEdit {
    /// Every hue becomes this value (`0..=180`; XIMAGENET's colour R/G/B).
    Set(u8),
    /// `H ← ((H + k) mod 256) mod 180`: XIMAGENET's rainbow shift, whose u8 addition wraps before the
    /// modulo (H = 179, k = 90 → 13).
    Shift(u8),
}

impl HueEdit {
    /// The new hue of a pixel whose hue is `h` (`0..=179`).
    #[inline(always)]
    #[cfg(test)]
    fn apply(self, h: u8) -> u8 {
        match self {
            HueEdit::Set(v) => v,
            HueEdit::Shift(k) => h.wrapping_add(k) % 180,
        }
    }
}

/// XIMAGENET's colour scenarios on the pixels where `keep` is false: RGB → 8-bit HSV, the hue edited,
/// back to RGB, with OpenCV's column rule for rounding ([`simd_columns`]); pixels where `keep` is true
/// are copied. `keep` has one byte per pixel (non-zero = keep), the image's size.
pub(crate) fn recolour(src: &RgbImage, keep: &[u8], edit: HueEdit) -> RgbImage {
    let (w, h) = (src.width() as usize, src.height() as usize);
    assert_eq!(keep.len(), w * h, "one keep byte per pixel");
    let mut out = vec![0u8; w * h * 3];
    if w == 0 || h == 0 {
        return RgbImage::from_raw(src.width(), src.height(), out).expect("empty");
    }
    let split = simd_columns(w);
    let per = rows_per_task(w * 3);
    out.par_chunks_mut(w * 3 * per)
        .zip(src.as_raw().par_chunks(w * 3 * per))
        .zip(keep.par_chunks(w * per))
        .for_each(|((o, s), k)| {
            for ((o, s), k) in o
                .chunks_exact_mut(w * 3)
                .zip(s.chunks_exact(w * 3))
                .zip(k.chunks_exact(w))
            {
                recolour_row(
                    &s[..split * 3],
                    &k[..split],
                    &mut o[..split * 3],
                    edit,
                    true,
                );
                recolour_row(
                    &s[split * 3..],
                    &k[split..],
                    &mut o[split * 3..],
                    edit,
                    false,
                );
            }
        });
    RgbImage::from_raw(src.width(), src.height(), out).expect("buffer of the image's size")
}

crate::kernels::multiversion! {
    /// [`recolour`] on a run of pixels, all truncated (`simd`) or all rounded.
    fn recolour_row(src: &[u8], keep: &[u8], out: &mut [u8], edit: HueEdit, simd: bool);
    recolour_row_avx2 ["avx2", "fma"] => recolour_row_body;
    _ => recolour_row_body;
    levels recolour_row_at;
}

#[inline(always)]
fn recolour_row_body(src: &[u8], keep: &[u8], out: &mut [u8], edit: HueEdit, simd: bool) {
    if simd {
        recolour_chunks::<true>(src, keep, out, edit);
    } else {
        recolour_chunks::<false>(src, keep, out, edit);
    }
}

/// Pixels per chunk of [`recolour_chunks`].
const CHUNK: usize = 64;

/// [`recolour_row_body`] by chunks: deinterleave, convert every pixel without branches (vectorised),
/// write back the kept pixels' originals and the others' conversions.
#[inline(always)]
fn recolour_chunks<const TRUNC: bool>(src: &[u8], keep: &[u8], out: &mut [u8], edit: HueEdit) {
    let (set, value) = match edit {
        HueEdit::Set(h) => (true, i32::from(h)),
        HueEdit::Shift(k) => (false, i32::from(k)),
    };
    for ((s, k), o) in src
        .chunks(CHUNK * 3)
        .zip(keep.chunks(CHUNK))
        .zip(out.chunks_mut(CHUNK * 3))
    {
        if k.iter().all(|&m| m != 0) {
            o.copy_from_slice(s);
            continue;
        }
        let mut rgb = [[0u8; CHUNK]; 3];
        for (i, p) in s.chunks_exact(3).enumerate() {
            rgb[0][i] = p[0];
            rgb[1][i] = p[1];
            rgb[2][i] = p[2];
        }
        let mut res = [[0u8; CHUNK]; 3];
        for i in 0..CHUNK {
            let (h, sat, val) = hsv_of_lane(
                i32::from(rgb[0][i]),
                i32::from(rgb[1][i]),
                i32::from(rgb[2][i]),
            );
            let shifted = (h + value) & 255;
            let shifted = if shifted >= 180 {
                shifted - 180
            } else {
                shifted
            };
            let h = if set { value } else { shifted };
            let (r, g, b) = hsv_lane::<TRUNC>(h, sat, val);
            res[0][i] = r;
            res[1][i] = g;
            res[2][i] = b;
        }
        for (i, (p, &m)) in o.chunks_exact_mut(3).zip(k).enumerate() {
            if m == 0 {
                p[0] = res[0][i];
                p[1] = res[1][i];
                p[2] = res[2][i];
            } else {
                p.copy_from_slice(&s[i * 3..i * 3 + 3]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// addWeighted, gray

/// Elements per block of OpenCV 4.8.1's SIMD `addWeighted` loop on u8; the last `len mod 16` elements
/// of a buffer go through the scalar loop.
const ADD_WEIGHTED_BLOCK: usize = 16;

/// One element of `addWeighted(a, 1.5, b, 0.9, 1.9)`: `fused` (the SIMD loop) computes
/// `fma(a, 1.5, fma(b, 0.9, 1.9))`, otherwise `(a·1.5 + b·0.9) + 1.9`, in float32; rounded half to even,
/// saturated to u8.
#[inline(always)]
pub(crate) fn bright_value(a: u8, b: u8, fused: bool) -> u8 {
    let (a, b) = (f32::from(a), f32::from(b));
    let v = if fused {
        a.mul_add(1.5, b.mul_add(0.9, 1.9))
    } else {
        (a * 1.5 + b * 0.9) + 1.9
    };
    to_u8_nearest(v)
}

/// 2²³: adding it to a float in [0, 2²³) leaves the integer part in the low mantissa bits, rounded to
/// nearest with ties to even (the default floating-point rounding).
const MAGIC: f32 = 8_388_608.0;

/// `v` rounded half to even and saturated to 0..=255 (OpenCV `saturate_cast<uchar>(float)`), without a
/// float → int conversion (which does not vectorise): clamp, then the [`MAGIC`] addition rounds.
#[inline(always)]
fn to_u8_nearest(v: f32) -> u8 {
    (v.clamp(0.0, 255.0) + MAGIC).to_bits() as u8
}

/// `v` truncated toward zero and saturated to 0..=255 (OpenCV's `v_trunc` then pack), vectorisable.
#[inline(always)]
fn to_u8_trunc(v: f32) -> u8 {
    (v.trunc().clamp(0.0, 255.0) + MAGIC).to_bits() as u8
}

/// XIMAGENET's bright image `addWeighted(a, 1.5, b, 0.9, 1.9)` for the elements `range` of two
/// continuous buffers of `total` elements each (`a` and `b` hold only that range), written over `b`:
/// element `i` is fused when `i < total − total mod 16` (see [`bright_value`]).
pub(crate) fn add_weighted_bright(
    a: &[u8],
    b: &mut [u8],
    range: std::ops::Range<usize>,
    total: usize,
) {
    assert!(a.len() == range.len() && b.len() == a.len());
    let fused_end =
        (total - total % ADD_WEIGHTED_BLOCK).clamp(range.start, range.end) - range.start;
    bright_run(&a[..fused_end], &mut b[..fused_end]);
    for (y, &x) in b[fused_end..].iter_mut().zip(&a[fused_end..]) {
        *y = bright_value(x, *y, false);
    }
}

crate::kernels::multiversion! {
    /// [`bright_value`] (fused) over slices, written over `b`.
    fn bright_run(a: &[u8], b: &mut [u8]);
    bright_run_avx2 ["avx2", "fma"] => bright_run_body;
    _ => bright_run_body;
    levels bright_run_at;
}

#[inline(always)]
fn bright_run_body(a: &[u8], b: &mut [u8]) {
    for (y, &x) in b.iter_mut().zip(a) {
        *y = bright_value(x, *y, true);
    }
}

/// OpenCV `cvtColor(RGB2GRAY)` of one 8-bit pixel: `(9798 R + 19235 G + 3735 B + 2¹⁴) >> 15`.
#[inline(always)]
pub(crate) fn gray(r: u8, g: u8, b: u8) -> u8 {
    ((9798 * u32::from(r) + 19235 * u32::from(g) + 3735 * u32::from(b) + (1 << 14)) >> 15) as u8
}

/// One output position of [`resize_linear`] on one axis: the two source indices and their weights
/// (1/2048 steps).
#[derive(Debug, Clone, Copy)]
struct Tap {
    i0: usize,
    i1: usize,
    w0: i32,
    w1: i32,
}

/// OpenCV's `INTER_LINEAR` taps for one axis of `src` → `dst` samples. Source position
/// `fx = (float)((d + 0.5)·scale − 0.5)` with `scale = 1 / (dst / src)` in double; index
/// `floor(fx)`, weights `cvRound((1 − f)·2048)` and `cvRound(f·2048)` of its float fraction `f`.
/// Columns (`clamp_x`) clamp an index outside the image to the edge with weight (2048, 0); rows
/// keep the fraction and clamp both source rows into the image, as OpenCV's vertical pass does.
fn linear_taps(src: usize, dst: usize, clamp_x: bool) -> Vec<Tap> {
    let scale = 1.0 / (dst as f64 / src as f64);
    let last = src as i64 - 1;
    (0..dst)
        .map(|d| {
            let fx = ((d as f64 + 0.5) * scale - 0.5) as f32;
            let mut sx = fx.floor() as i64;
            let mut f = fx - sx as f32;
            if clamp_x && sx < 0 {
                (sx, f) = (0, 0.0);
            }
            if clamp_x && sx >= last {
                (sx, f) = (last, 0.0);
            }
            // cvRound: round half to even (the default rounding mode).
            let w = |v: f32| (v * 2048.0).round_ties_even() as i32;
            Tap {
                i0: sx.clamp(0, last) as usize,
                i1: (sx + 1).clamp(0, last) as usize,
                w0: w(1.0 - f),
                w1: w(f),
            }
        })
        .collect()
}

/// `cv2.resize(src, (width, height))` on u8 RGB, OpenCV 4.8.1's default `INTER_LINEAR`, byte for
/// byte (checked against opencv-python-headless 4.8.1 on 150 random size pairs from 1×1 to 90×90,
/// 2× reductions — which OpenCV sends to its `INTER_AREA` path, with the same result — and the
/// procedural fixtures of the tests below).
///
/// Per output row: the two source rows (clamped to the image) are resampled horizontally into i32
/// (`s0·a0 + s1·a1`, exact) and kept for the next row; then the vertical blend rounds as OpenCV's
/// SIMD loop does, which drops 4 bits before its 16-bit high multiply:
/// `clamp((((h0 >> 4)·b0 >> 16) + ((h1 >> 4)·b1 >> 16) + 2) >> 2, 0, 255)` — not the
/// `(h0·b0 + h1·b1 + 2²¹) >> 22` of its scalar code, which differs in about one value in ten. An
/// unchanged size is a copy, as in OpenCV.
pub fn resize_linear(src: &RgbImage, width: u32, height: u32) -> RgbImage {
    let (sw, sh) = src.dimensions();
    if (sw, sh) == (width, height) {
        return src.clone();
    }
    if sw == 0 || sh == 0 || width == 0 || height == 0 {
        return RgbImage::new(width, height);
    }
    let (sw, dw) = (sw as usize, width as usize);
    let xs = linear_taps(sw, dw, true);
    let ys = linear_taps(sh as usize, height as usize, false);
    let raw = src.as_raw();
    // Byte offsets of the two source pixels of each output column, and their weights.
    let xo: Vec<[usize; 2]> = xs.iter().map(|t| [t.i0 * 3, t.i1 * 3]).collect();
    let xw: Vec<[i32; 2]> = xs.iter().map(|t| [t.w0, t.w1]).collect();
    let hpass = |row: usize, out: &mut [i32]| {
        let s = &raw[row * sw * 3..(row + 1) * sw * 3];
        for ((o, &[a, b]), &[w0, w1]) in out.chunks_exact_mut(3).zip(&xo).zip(&xw) {
            let (p0, p1) = (&s[a..a + 3], &s[b..b + 3]);
            o[0] = i32::from(p0[0]) * w0 + i32::from(p1[0]) * w1;
            o[1] = i32::from(p0[1]) * w0 + i32::from(p1[1]) * w1;
            o[2] = i32::from(p0[2]) * w0 + i32::from(p1[2]) * w1;
        }
    };
    // Two horizontally resampled rows, tagged with their source row (rows only move forward).
    let mut rows = [vec![0i32; dw * 3], vec![0i32; dw * 3]];
    let mut tags = [usize::MAX; 2];
    let mut out = vec![0u8; dw * 3 * height as usize];
    for (orow, t) in out.chunks_exact_mut(dw * 3).zip(&ys) {
        if tags[0] != t.i0 {
            if tags[1] == t.i0 {
                rows.swap(0, 1);
                tags.swap(0, 1);
            } else {
                hpass(t.i0, &mut rows[0]);
                tags[0] = t.i0;
            }
        }
        if tags[1] != t.i1 {
            // Rows clamped at the image's edges use one source row twice.
            if t.i1 == t.i0 {
                let [r0, r1] = &mut rows;
                r1.copy_from_slice(r0);
            } else {
                hpass(t.i1, &mut rows[1]);
            }
            tags[1] = t.i1;
        }
        let (b0, b1) = (t.w0, t.w1);
        let n = orow.len();
        let (r0, r1) = (&rows[0][..n], &rows[1][..n]);
        for i in 0..n {
            let v = (((r0[i] >> 4) * b0) >> 16) + (((r1[i] >> 4) * b1) >> 16);
            orow[i] = ((v + 2) >> 2).clamp(0, 255) as u8;
        }
    }
    RgbImage::from_raw(width, height, out).expect("width × height × 3 bytes")
}

#[cfg(test)]
mod tests;
