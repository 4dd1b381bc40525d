//! ImageNet-C `elastic_transform`, following **imagecorruptions 1.1.2**
//! (docs/imagenet-c.md#elastic_transform), not hendrycks:
//! hendrycks' version is 224-only (parameters written as multiples of 244, plus a random affine warp),
//! while imagecorruptions scales with the frame (σ = 1 % of each side, displacement noise ∝ H) and has
//! no affine step. The fixture statistics (tests/fixtures/corruptions) come from imagecorruptions.
//!
//! dx, dy = gaussian(U[−0.005·H, 0.005·H) field, σ = (0.01·H, 0.01·W), reflect, truncate 3)·α (both
//! fields use H, a reference quirk); out(y, x) = bilinear sample of the image at (y + dy, x + dx) with
//! half-sample-symmetric ('reflect') borders; floor8. Row `y` of dx draws from `rng.stream(2y)`, of dy from
//! `rng.stream(2y + 1)`, so the output depends only on the key, never on the thread count.
//!
//! Speed: both displacement fields are smoothed in one two-channel pass of the shared
//! [`gaussian::gaussian_filter_map`] (scipy's f64 arithmetic, bands in parallel, one σ per axis, the
//! float32 store fused in); the resampling runs eight pixels at a time on CPUs with AVX-512 (one
//! 32-bit gather per neighbour, the same IEEE operations per lane) and falls back to the per-pixel
//! loop, with the border reflection, where a neighbour is outside the frame. About 23 ms per
//! 1280×720 frame on one core of the development machine, against 255 ms before; same bytes.

use image::RgbImage;
use rand::RngExt;
use rayon::prelude::*;

use crate::kernels::filter::{self, Border};
use crate::kernels::gaussian;
use crate::kernels::lanes;
use crate::rng::RngKey;

/// Displacement scale α per severity 1..5: 250 × (0.05, 0.065, 0.085, 0.1, 0.12)
/// (docs/imagenet-c.md#elastic_transform, IC).
pub(crate) const ELASTIC_ALPHA: [f64; 5] = [12.5, 16.25, 21.25, 25.0, 30.0];

/// Smoothing σ as a fraction of each side (σ_y = 0.01·H, σ_x = 0.01·W)
/// (docs/imagenet-c.md#elastic_transform, IC).
pub(crate) const ELASTIC_SIGMA_FRACTION: f64 = 0.01;

/// Half-width of the displacement noise as a fraction of the height H (both dx and dy;
/// docs/imagenet-c.md#elastic_transform).
pub(crate) const ELASTIC_NOISE_FRACTION: f64 = 0.005;

/// Gaussian truncation (radius `int(3σ + 0.5)`) used by elastic_transform
/// (docs/imagenet-c.md#h1-gaussian-filter).
pub(crate) const ELASTIC_TRUNCATE: f64 = 3.0;

/// Half-sample-symmetric ('reflect', …c b a | a b c…) index into `0..n` (n ≥ 1), any distance out.
#[inline]
fn reflect(i: i64, n: usize) -> usize {
    let n = n as i64;
    let m = i.rem_euclid(2 * n);
    (if m < n { m } else { 2 * n - 1 - m }) as usize
}

/// The two smoothed displacement fields, interleaved as `[dx, dy]` per pixel: U[−max_d, max_d) per
/// pixel (row y of dx from `rng.stream(2y)`, of dy from `rng.stream(2y + 1)`), scipy
/// `gaussian_filter(field, (σ_y, σ_x), mode='reflect', truncate=3)` (the shared
/// [`gaussian::gaussian_filter_map`], scipy's arithmetic; both fields in one two-channel pass), times
/// α, stored as float32 as the reference.
fn displacements(w: usize, h: usize, alpha: f64, rng: RngKey) -> Vec<f32> {
    smooth_displacements(&raw_displacements(w, h, rng), w, h, alpha)
}

/// The draws of [`displacements`]: U[−max_d, max_d) per pixel, interleaved `[dx, dy]`, row y of dx
/// from `rng.stream(2y)`, of dy from `rng.stream(2y + 1)` (docs/imagenet-c.md#elastic_transform).
pub(crate) fn raw_displacements(w: usize, h: usize, rng: RngKey) -> Vec<f64> {
    let max_d = ELASTIC_NOISE_FRACTION * h as f64;
    let mut field = vec![0.0f64; 2 * w * h];
    field
        .par_chunks_mut(2 * w)
        .enumerate()
        .for_each(|(y, row)| {
            for parity in 0..2 {
                let mut r = rng.stream(2 * y as u64 + parity as u64);
                for v in row[parity..].iter_mut().step_by(2) {
                    *v = max_d * (2.0 * r.random::<f64>() - 1.0);
                }
            }
        });
    field
}

/// The deterministic part of [`displacements`]: the raw fields (`[dx, dy]` per pixel of a `w`×`h`
/// frame) smoothed with scipy's `gaussian_filter` (σ = (0.01·H, 0.01·W), reflect, truncate 3), times
/// `alpha`, as float32 (docs/imagenet-c.md#elastic_transform). The GPU path draws its own fields
/// and is checked against this on the same ones (docs/gpu.md#gpu-resident-scenarios).
pub(crate) fn smooth_displacements(field: &[f64], w: usize, h: usize, alpha: f64) -> Vec<f32> {
    let sigmas = (
        ELASTIC_SIGMA_FRACTION * h as f64,
        ELASTIC_SIGMA_FRACTION * w as f64,
    );
    gaussian::gaussian_filter_map(
        field,
        (w, h, 2),
        sigmas,
        ELASTIC_TRUNCATE,
        Border::Reflect,
        |v| v,
        |v| (v * alpha) as f32,
    )
}

/// ImageNet-C `elastic_transform` (imagecorruptions 1.1.2; see the module doc) with displacement scale
/// `alpha` ([`ELASTIC_ALPHA`]). Any size: an empty image is returned as is; at 1×1 σ = 0.01 gives a
/// one-tap kernel and every sample reflects back onto the single pixel, so the output equals the input.
/// Runs inside rayon's pool ([`lanes::in_pool`]: a caller outside it hands the work over once, not
/// per stage).
pub(crate) fn elastic_transform(image: &RgbImage, alpha: f64, rng: RngKey) -> RgbImage {
    lanes::in_pool(|| elastic_in_pool(image, alpha, rng))
}

/// The body of [`elastic_transform`].
fn elastic_in_pool(image: &RgbImage, alpha: f64, rng: RngKey) -> RgbImage {
    let (w, h) = image.dimensions();
    let (wu, hu) = (w as usize, h as usize);
    if wu == 0 || hu == 0 {
        return image.clone();
    }
    let d = displacements(wu, hu, alpha, rng);
    resample(image, &d)
}

/// The resampling step of [`elastic_transform`]: every pixel of `image` sampled bilinearly at its
/// position plus the displacements `d` (`[dx, dy]` per pixel, float32, [`smooth_displacements`]),
/// reflected at the borders, floor8 (docs/imagenet-c.md#elastic_transform).
pub(crate) fn resample(image: &RgbImage, d: &[f32]) -> RgbImage {
    let (w, h) = image.dimensions();
    let (wu, hu) = (w as usize, h as usize);
    let src = image.as_raw();
    // The reference works on float32 x/255 (docs/imagenet-c.md#value-ranges-and-rounding).
    let unit: [f64; 256] = std::array::from_fn(|v| f64::from(v as f32 / 255.0));
    let mut out = vec![0u8; src.len()];
    let field = Field {
        src,
        w: wu,
        h: hu,
        d,
        unit: &unit,
    };
    field.resample(&mut out);
    RgbImage::from_raw(w, h, out).expect("same size as the input")
}

/// The inputs of the bilinear resampling step of [`elastic_transform`].
struct Field<'a> {
    /// Interleaved RGB source, `w × h`.
    src: &'a [u8],
    w: usize,
    h: usize,
    /// Displacements `[dx, dy]` per pixel (float32, as the reference's), row-major `w × h`.
    d: &'a [f32],
    /// `f32(v/255)` as f64 for every u8 value.
    unit: &'a [f64; 256],
}

impl Field<'_> {
    /// Resamples every row into `out` (rows in parallel): eight pixels at a time with AVX-512F where
    /// the CPU has it ([`Field::row_avx512`]), else pixel by pixel compiled for AVX2 or portable; all
    /// compute the same values.
    fn resample(&self, out: &mut [u8]) {
        let row_len = self.w * 3;
        #[cfg(target_arch = "x86_64")]
        if crate::kernels::cpu_has!("avx512f", "avx2") && self.src.len() < (i32::MAX as usize) / 2 {
            // Four readable bytes past every pixel: the gathers load 32-bit words.
            let mut padded = Vec::with_capacity(self.src.len() + 4);
            padded.extend_from_slice(self.src);
            padded.extend_from_slice(&[0; 4]);
            out.par_chunks_mut(row_len)
                .enumerate()
                .for_each(|(y, row)| {
                    // SAFETY: `row_avx512` is compiled with `#[target_feature(enable =
                    // "avx512f,avx2")]` and may run only on a CPU with both, which was just checked.
                    // Its memory accesses are justified inside it, given `padded` = `src` + 4 bytes and
                    // `src.len()` < i32::MAX / 2 (offsets fit in i32), both established here.
                    unsafe { self.row_avx512(y, row, &padded) }
                });
            return;
        }
        out.par_chunks_mut(row_len)
            .enumerate()
            .for_each(|(y, row)| self.row(y, row));
    }

    crate::kernels::multiversion! {
        /// Output row `y`: [`Field::row_body`] compiled for AVX2 where the CPU has it (an inline
        /// `floor` instead of a libm call), else portable; the arithmetic is the same.
        fn row(&self, y: usize, out: &mut [u8]);
        /// [`Field::row_body`] compiled for AVX2.
        row_avx2 ["avx2"] => Self::row_body;
        _ => Self::row_body;
        levels row_at;
    }

    /// Every pixel of output row `y` by [`Field::pixel`].
    #[inline(always)]
    fn row_body(&self, y: usize, out: &mut [u8]) {
        for (x, px) in out.chunks_exact_mut(3).enumerate() {
            self.pixel(y, x, px);
        }
    }

    /// scipy `map_coordinates(order=1, mode='reflect')` of every channel at `(y + dy, x + dx)`:
    /// bilinear in f64 on the float32 `x/255` values, stored as float32, clipped, ×255, floor8.
    /// Samples whose four neighbours are inside the image skip the reflection.
    #[inline(always)]
    fn pixel(&self, y: usize, x: usize, px: &mut [u8]) {
        let (w, h) = (self.w, self.h);
        let i = 2 * (y * w + x);
        let (cy, cx) = (
            y as f64 + f64::from(self.d[i + 1]),
            x as f64 + f64::from(self.d[i]),
        );
        let (fy, fx) = (cy.floor(), cx.floor());
        let (ty, tx) = (cy - fy, cx - fx);
        let (y0, x0) = (fy as i64, fx as i64);
        let (ya, yb) = if y0 >= 0 && y0 + 1 < h as i64 {
            (y0 as usize, y0 as usize + 1)
        } else {
            (reflect(y0, h), reflect(y0 + 1, h))
        };
        let (xa, xb) = if x0 >= 0 && x0 + 1 < w as i64 {
            (x0 as usize, x0 as usize + 1)
        } else {
            (reflect(x0, w), reflect(x0 + 1, w))
        };
        let corner = |yy: usize, xx: usize| -> &[u8; 3] {
            self.src[(yy * w + xx) * 3..(yy * w + xx) * 3 + 3]
                .try_into()
                .expect("3 channels")
        };
        let (a, b, c, d) = (
            corner(ya, xa),
            corner(ya, xb),
            corner(yb, xa),
            corner(yb, xb),
        );
        for ch in 0..3 {
            let u = |p: &[u8; 3]| self.unit[usize::from(p[ch])];
            let top = (1.0 - tx) * u(a) + tx * u(b);
            let bot = (1.0 - tx) * u(c) + tx * u(d);
            // scipy interpolates in double and stores float32; clip and ×255 in float32.
            px[ch] = filter::floor8_clip_f32(((1.0 - ty) * top + ty * bot) as f32);
        }
    }

    /// Output row `y`, eight pixels at a time: the same operations as [`Field::pixel`] on eight f64
    /// lanes (IEEE add, multiply, floor, conversions: identical results), the four neighbours of
    /// each pixel fetched with one 32-bit gather per corner (its three channels at once). A block with
    /// a neighbour outside the frame, and the last `w mod 8` pixels, go through [`Field::pixel`].
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512F and AVX2; `padded` must be `src` followed by at least 4 bytes, and
    /// `src.len()` must be below `i32::MAX / 2`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2")]
    unsafe fn row_avx512(&self, y: usize, out: &mut [u8], padded: &[u8]) {
        use std::arch::x86_64::*;
        let (w, h) = (self.w, self.h);
        let full = w / 8 * 8;
        let d = &self.d[2 * y * w..2 * (y + 1) * w];
        // Even lanes of 16 interleaved [dx, dy] go to the low half, odd lanes to the high half.
        let split = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
        let lane = _mm512_setr_pd(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0);
        let (one, yf) = (_mm512_set1_pd(1.0), _mm512_set1_pd(y as f64));
        let (wi, row3) = (_mm256_set1_epi32(w as i32), (3 * w) as i32);
        let (x_max, y_max) = (
            _mm256_set1_epi32(w as i32 - 2),
            _mm256_set1_epi32(h as i32 - 2),
        );
        let zero_i = _mm256_setzero_si256();
        let (byte, k255) = (_mm256_set1_epi32(0xff), _mm256_set1_ps(255.0));
        let (zero_f, one_f) = (_mm256_setzero_ps(), _mm256_set1_ps(1.0));
        let mut packed = [0i32; 8];
        for x in (0..full).step_by(8) {
            // SAFETY: x + 8 ≤ w, so the 16 floats from 2x are inside this row of `d`.
            let v = unsafe { _mm512_loadu_ps(d.as_ptr().add(2 * x)) };
            let v = _mm512_permutexvar_ps(split, v);
            let dx = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
            let dy = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(
                _mm512_castps_pd(v),
            )));
            let cx = _mm512_add_pd(_mm512_add_pd(_mm512_set1_pd(x as f64), lane), dx);
            let cy = _mm512_add_pd(yf, dy);
            let (fx, fy) = (
                _mm512_roundscale_pd::<0x09>(cx),
                _mm512_roundscale_pd::<0x09>(cy),
            );
            let (tx, ty) = (_mm512_sub_pd(cx, fx), _mm512_sub_pd(cy, fy));
            let (x0, y0) = (_mm512_cvttpd_epi32(fx), _mm512_cvttpd_epi32(fy));
            // All four neighbours inside: 0 ≤ x0 ≤ w − 2 and 0 ≤ y0 ≤ h − 2 (out-of-range or NaN
            // coordinates convert to i32::MIN and fail).
            let outside = _mm256_or_si256(
                _mm256_or_si256(
                    _mm256_cmpgt_epi32(zero_i, x0),
                    _mm256_cmpgt_epi32(x0, x_max),
                ),
                _mm256_or_si256(
                    _mm256_cmpgt_epi32(zero_i, y0),
                    _mm256_cmpgt_epi32(y0, y_max),
                ),
            );
            if _mm256_movemask_epi8(outside) != 0 {
                for (k, px) in out[3 * x..3 * x + 24].chunks_exact_mut(3).enumerate() {
                    self.pixel(y, x + k, px);
                }
                continue;
            }
            let base = _mm256_add_epi32(_mm256_mullo_epi32(y0, wi), x0);
            let a = _mm256_add_epi32(base, _mm256_add_epi32(base, base));
            let b = _mm256_add_epi32(a, _mm256_set1_epi32(3));
            let c = _mm256_add_epi32(a, _mm256_set1_epi32(row3));
            let e = _mm256_add_epi32(c, _mm256_set1_epi32(3));
            // SAFETY: every offset is 3·(y0·w + x0) + {0, 3, 3w, 3w + 3} with 0 ≤ x0 ≤ w − 2 and
            // 0 ≤ y0 ≤ h − 2, i.e. at most len − 3, so the 4 bytes read from it lie within `padded`
            // (= src + 4 bytes); the offsets fit in i32 as len < i32::MAX / 2. Unaligned 32-bit
            // gathers (scale 1) are allowed.
            let [ga, gb, gc, ge] = [a, b, c, e]
                .map(|o| unsafe { _mm256_i32gather_epi32::<1>(padded.as_ptr().cast(), o) });
            let (sx, sy) = (_mm512_sub_pd(one, tx), _mm512_sub_pd(one, ty));
            let unit = |g: __m256i, shift: i32| {
                let v = _mm256_and_si256(_mm256_srlv_epi32(g, _mm256_set1_epi32(shift)), byte);
                _mm512_cvtps_pd(_mm256_div_ps(_mm256_cvtepi32_ps(v), k255))
            };
            let mut bytes = zero_i;
            for ch in 0..3 {
                let shift = 8 * ch;
                let top = _mm512_add_pd(
                    _mm512_mul_pd(sx, unit(ga, shift)),
                    _mm512_mul_pd(tx, unit(gb, shift)),
                );
                let bot = _mm512_add_pd(
                    _mm512_mul_pd(sx, unit(gc, shift)),
                    _mm512_mul_pd(tx, unit(ge, shift)),
                );
                let v = _mm512_cvtpd_ps(_mm512_add_pd(
                    _mm512_mul_pd(sy, top),
                    _mm512_mul_pd(ty, bot),
                ));
                // floor8_clip_f32: max(v, 0) takes 0 for NaN (the second operand), then min 1.
                let v = _mm256_min_ps(_mm256_max_ps(v, zero_f), one_f);
                let q = _mm256_cvttps_epi32(_mm256_mul_ps(v, k255));
                bytes = _mm256_or_si256(bytes, _mm256_sllv_epi32(q, _mm256_set1_epi32(shift)));
            }
            // SAFETY: `packed` holds 8 i32, the 32 bytes stored.
            unsafe { _mm256_storeu_si256(packed.as_mut_ptr().cast(), bytes) };
            for (px, p) in out[3 * x..3 * x + 24].chunks_exact_mut(3).zip(&packed) {
                px.copy_from_slice(&p.to_le_bytes()[..3]);
            }
        }
        for x in full..w {
            self.pixel(y, x, &mut out[3 * x..3 * x + 3]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::kernels::levels_agree! {
        fn row_levels_agree(|level| {
            let (w, h) = (37, 23);
            let img = RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([(x * 7 + y) as u8, (y * 13) as u8, ((x ^ y) * 29) as u8])
            });
            let (wu, hu) = (w as usize, h as usize);
            let d = displacements(wu, hu, ELASTIC_ALPHA[4], RngKey(9));
            let unit: [f64; 256] = std::array::from_fn(|v| f64::from(v as f32 / 255.0));
            let field = Field { src: img.as_raw(), w: wu, h: hu, d: &d, unit: &unit };
            let mut out = vec![0u8; wu * hu * 3];
            for (y, row) in out.chunks_exact_mut(wu * 3).enumerate() {
                field.row_at(level, y, row)?;
            }
            Some(out)
        });
    }

    #[test]
    fn tables_match_reference() {
        let want = [0.05, 0.065, 0.085, 0.1, 0.12].map(|f| 250.0 * f);
        for (a, b) in ELASTIC_ALPHA.iter().zip(want) {
            assert!((a - b).abs() < 1e-12);
        }
        assert_eq!(ELASTIC_SIGMA_FRACTION, 0.01);
        assert_eq!(ELASTIC_NOISE_FRACTION, 0.005);
        assert_eq!(ELASTIC_TRUNCATE, 3.0);
    }

    #[test]
    fn reflect_is_half_sample_symmetric() {
        let idx: Vec<usize> = (-4..8).map(|i| reflect(i, 3)).collect();
        assert_eq!(idx, [2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 0, 1]);
        assert_eq!(reflect(-7, 1), 0);
    }

    #[test]
    fn zero_displacement_is_identity() {
        let img = RgbImage::from_fn(9, 6, |x, y| image::Rgb([(x * 20) as u8, (y * 30) as u8, 5]));
        assert_eq!(elastic_transform(&img, 0.0, RngKey(1)), img);
        let one = RgbImage::from_pixel(1, 1, image::Rgb([10, 200, 30]));
        assert_eq!(elastic_transform(&one, 30.0, RngKey(1)), one);
    }

    #[test]
    fn vector_resampling_equals_the_pixel_loop() {
        // Strong displacements (many neighbours outside the frame, reflected), widths with and
        // without a tail of fewer than 8 pixels: the resampling used (AVX-512 on CPUs that have it)
        // gives the bytes of the plain per-pixel loop.
        for (w, h, alpha) in [
            (64, 40, 30.0),
            (37, 23, 400.0),
            (203, 17, 2000.0),
            (9, 50, 60.0),
        ] {
            let img = RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([(x * 7 + y) as u8, (y * 13) as u8, ((x ^ y) * 29) as u8])
            });
            let (wu, hu) = (w as usize, h as usize);
            let d = displacements(wu, hu, alpha, RngKey(9));
            let unit: [f64; 256] = std::array::from_fn(|v| f64::from(v as f32 / 255.0));
            let field = Field {
                src: img.as_raw(),
                w: wu,
                h: hu,
                d: &d,
                unit: &unit,
            };
            let mut fast = vec![0u8; wu * hu * 3];
            field.resample(&mut fast);
            let mut plain = vec![0u8; wu * hu * 3];
            for (y, row) in plain.chunks_exact_mut(wu * 3).enumerate() {
                field.row_body(y, row);
            }
            assert_eq!(fast, plain, "{w}×{h} α {alpha}");
        }
    }

    #[test]
    fn sizes_and_determinism() {
        for (w, h) in [(1, 1), (32, 32), (37, 23), (1280, 720)] {
            let img = RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([(x * 3) as u8, (y * 5) as u8, ((x ^ y) * 7) as u8])
            });
            let a = elastic_transform(&img, 21.25, RngKey(3));
            assert_eq!(a.dimensions(), (w, h));
            let one = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            assert_eq!(a, one.install(|| elastic_transform(&img, 21.25, RngKey(3))));
            if w > 1 {
                assert_ne!(a, elastic_transform(&img, 21.25, RngKey(4)));
            }
        }
    }
}
