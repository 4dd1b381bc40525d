//! Blur corruptions (docs/imagenet-c.md#the-19-corruptions): gaussian_blur, defocus_blur,
//! zoom_blur, motion_blur and glass_blur, following imagecorruptions 1.1.2 (the reference that runs
//! on any H×W) on top of the shared kernels in [`crate::kernels::filter`].
//!
//! Sizes: every function takes any size, including 1×1 and empty, and returns the same size.
//! imagecorruptions itself rejects frames below 32×32; ours simply apply the same formulas (borders are
//! replicated or reflected as the reference's; taps that would leave a tiny frame are dropped as the
//! reference's motion port does; glass_blur's pixel walk is empty when the frame is ≤ 2δ+1 on a side).

use image::RgbImage;
use rand::RngExt;

use crate::kernels::defocus;
use crate::kernels::filter::{self, Border};
use crate::kernels::{gauss_u8, glass, motion, zoom};
use crate::rng::RngKey;

/// Gaussian σ per severity 1..5 (docs/imagenet-c.md#gaussian_blur); radius int(4σ + 0.5) = 4, 8,
/// 12, 16, 24.
pub(crate) const GAUSSIAN_BLUR_SIGMA: [f64; 5] = [1.0, 2.0, 3.0, 4.0, 6.0];

/// scipy `gaussian_filter`'s `truncate` for gaussian_blur (docs/imagenet-c.md#gaussian_blur): the
/// kernel reaches int(4σ + 0.5) pixels. Shared with the GPU recipe (docs/gpu.md#gpu-resident-scenarios).
pub(crate) const GAUSSIAN_BLUR_TRUNCATE: f64 = 4.0;

/// One glass_blur severity (docs/imagenet-c.md#glass_blur): the reference's `c = (sigma,
/// max_delta, iterations)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct GlassBlurParams {
    /// σ of the Gaussian before and after the pixel walk.
    pub(crate) sigma: f64,
    /// δ: how far a pixel may be swapped (`max_delta`).
    pub(crate) max_delta: usize,
    /// How many passes of the walk.
    pub(crate) iterations: usize,
}

/// (σ, max_delta δ, iterations) per severity 1..5 (docs/imagenet-c.md#glass_blur).
pub(crate) const GLASS_BLUR: [GlassBlurParams; 5] = [
    glass(0.7, 1, 2),
    glass(0.9, 2, 1),
    glass(1.0, 2, 3),
    glass(1.1, 3, 2),
    glass(1.5, 4, 2),
];

/// Table row constructor.
const fn glass(sigma: f64, max_delta: usize, iterations: usize) -> GlassBlurParams {
    GlassBlurParams {
        sigma,
        max_delta,
        iterations,
    }
}

/// One defocus_blur severity (docs/imagenet-c.md#defocus_blur): the reference's `disk(radius,
/// alias_blur)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DefocusBlurParams {
    /// The disk's radius.
    pub(crate) radius: usize,
    /// σ of the Gaussian that anti-aliases the disk (`alias_blur`).
    pub(crate) alias_blur: f64,
}

/// (disk radius, alias_blur σ) per severity 1..5 (docs/imagenet-c.md#defocus_blur).
pub(crate) const DEFOCUS_BLUR: [DefocusBlurParams; 5] = [
    defocus(3, 0.1),
    defocus(4, 0.5),
    defocus(6, 0.5),
    defocus(8, 0.5),
    defocus(10, 0.5),
];

/// Table row constructor.
const fn defocus(radius: usize, alias_blur: f64) -> DefocusBlurParams {
    DefocusBlurParams { radius, alias_blur }
}

/// One motion_blur severity (docs/imagenet-c.md#motion_blur): the reference's
/// `_motion_blur(x, radius, sigma, angle)` without the drawn angle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MotionBlurParams {
    /// The kernel's radius r (2r + 1 taps).
    pub(crate) radius: usize,
    /// σ of the kernel's half-Gaussian.
    pub(crate) sigma: f64,
}

/// (radius, σ) of the motion kernel per severity 1..5 (docs/imagenet-c.md#motion_blur); 2r+1 = 21,
/// 31, 31, 31, 41 taps.
pub(crate) const MOTION_BLUR: [MotionBlurParams; 5] = [
    motion(10, 3.0),
    motion(15, 5.0),
    motion(15, 8.0),
    motion(15, 12.0),
    motion(20, 15.0),
];

/// Table row constructor.
const fn motion(radius: usize, sigma: f64) -> MotionBlurParams {
    MotionBlurParams { radius, sigma }
}

/// One zoom_blur severity (docs/imagenet-c.md#zoom_blur): the reference's zoom factors
/// `np.arange(1, stop, step)` ([`zoom_factors`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ZoomArange {
    /// The arange's (excluded) end.
    pub(crate) stop: f64,
    /// The arange's step.
    pub(crate) step: f64,
}

/// numpy `arange(1, stop, step)` per severity 1..5 as (stop, step) (docs/imagenet-c.md#zoom_blur);
/// see [`zoom_factors`].
pub(crate) const ZOOM_BLUR_ARANGE: [ZoomArange; 5] = [
    arange(1.11, 0.01),
    arange(1.16, 0.01),
    arange(1.21, 0.02),
    arange(1.26, 0.02),
    arange(1.31, 0.03),
];

/// Table row constructor.
const fn arange(stop: f64, step: f64) -> ZoomArange {
    ZoomArange { stop, step }
}

/// `(width, height, 3)` of an image as usize.
fn dims(image: &RgbImage) -> (usize, usize, usize) {
    (image.width() as usize, image.height() as usize, 3)
}

/// ImageNet-C `gaussian_blur`: `floor8(clip(H1(x, σ), 0, 1)·255)` with truncate 4 and edge replication,
/// spatial axes only (docs/imagenet-c.md#gaussian_blur, docs/imagenet-c.md#h1-gaussian-filter;
/// identical in imagecorruptions). Size-independent. The u8 filter runs in f32 with a proven error
/// bound; the rare bytes the bound cannot settle (an output within it of an integer) are recomputed
/// in scipy's own f64 operations ([`gauss_u8`]), so the bytes are those of
/// [`crate::kernels::gaussian::gaussian_filter_map`] with `x/255` in and `floor8` out, which equal imagecorruptions'
/// on the fixtures and on a 1280×720 frame.
pub(crate) fn gaussian_blur(image: &RgbImage, sigma: f64) -> RgbImage {
    let raw = gauss_u8::gaussian_blur_u8(
        image.as_raw(),
        dims(image),
        (sigma, sigma),
        GAUSSIAN_BLUR_TRUNCATE,
        Border::Nearest,
    );
    RgbImage::from_raw(image.width(), image.height(), raw).expect("same size")
}

/// ImageNet-C `defocus_blur`: every channel correlated with the anti-aliased disk
/// ([`defocus::disk_kernel`], which at severities 4–5 sums to 1.013 / 1.011, kept) under OpenCV's
/// reflect-101 border, then `floor8(clip(·, 0, 1)·255)` (docs/imagenet-c.md#defocus_blur,
/// docs/imagenet-c.md#h2-disk-kernel). Size-independent (the border reflection is periodic, so
/// frames smaller than the kernel work too). Computed as exact integer disk sums then the small
/// anti-alias Gaussian ([`defocus::defocus_filter`], O(radius) per pixel instead of O(radius²));
/// the bytes agree with the direct 2-D correlation (checked on the fixtures and on 1280×720 frames;
/// the reference itself filters through a DFT).
pub(crate) fn defocus_blur(image: &RgbImage, radius: usize, alias_blur: f64) -> RgbImage {
    if image.as_raw().is_empty() {
        return image.clone();
    }
    let raw = defocus::defocus_filter(
        image.as_raw(),
        dims(image),
        radius,
        alias_blur,
        filter::floor8_clip,
    );
    RgbImage::from_raw(image.width(), image.height(), raw).expect("same size")
}

/// The zoom factors of numpy `arange(1, stop, step)` exactly as numpy computes them: `ceil((stop − 1)
/// / step)` values `1 + i·((1 + step) − 1)`. Severity 1 therefore has **12** factors up to 1.11
/// (a quirk noted in docs/imagenet-c.md#zoom_blur); the counts are 12, 16, 11, 13, 11.
pub(crate) fn zoom_factors(stop: f64, step: f64) -> Vec<f64> {
    let n = ((stop - 1.0) / step).ceil() as usize;
    let delta = (1.0 + step) - 1.0;
    (0..n).map(|i| 1.0 + i as f64 * delta).collect()
}

/// ImageNet-C `zoom_blur` as imagecorruptions computes it, in float32:
/// `out = (x + Σ_z zoom_z(x)) / (count + 1)`, clip, ·255, floor8, with `zoom_z` imagecorruptions'
/// `zoom::clipped_zoom` (each axis cropped to ceil(n/z) around the centre, align-corners bilinear
/// up to round(ceil(n/z)·z), top-left H×W kept). The factor 1 is among the factors, so the
/// unzoomed image has weight 2/(count + 1) (docs/imagenet-c.md#zoom_blur).
///
/// Generalisation: hendrycks' clipped_zoom is square-only (it crops both axes with the height); the
/// per-axis crop of imagecorruptions 1.1.2 is used so that any H×W works (identical at 224²
/// except the reference trims the zoomed image centrally where imagecorruptions keeps its top-left
/// part — the fixtures are imagecorruptions').
///
/// Speed: [`zoom::zoom_blur_u8`] fuses the factors band by band and reuses each horizontally
/// interpolated source row, with the reference's f64 arithmetic per element (bit-identical output).
pub(crate) fn zoom_blur(image: &RgbImage, factors: &[f64]) -> RgbImage {
    let (w, h, c) = dims(image);
    if image.as_raw().is_empty() {
        return image.clone();
    }
    let raw = zoom::zoom_blur_u8(image.as_raw(), (w, h, c), factors);
    RgbImage::from_raw(image.width(), image.height(), raw).expect("same size")
}

/// ImageNet-C `motion_blur` as imagecorruptions 1.1.2 computes it (docs/imagenet-c.md#motion_blur,
/// docs/imagenet-c.md#h5-motion-blur-kernel): one angle θ ~ U[−45°, 45°) from the key's main
/// generator, the one-sided half-Gaussian kernel [`motion::motion_kernel`] applied to the u8
/// values with edge replication (taps added in order, in f64), `floor8(clip(·, 0, 255))`.
/// hendrycks' ImageMagick call (PNG round trip) cannot be ported; the numpy port is its stand-in.
/// Taps reaching past a small frame are dropped as the port does.
pub(crate) fn motion_blur(image: &RgbImage, radius: usize, sigma: f64, rng: RngKey) -> RgbImage {
    let angle: f64 = rng.rng().random_range(-45.0..45.0);
    motion_blur_at(image, radius, sigma, angle)
}

/// [`motion_blur`] at a given angle (degrees), computed band by band by [`motion::streak_rgb`].
pub fn motion_blur_at(image: &RgbImage, radius: usize, sigma: f64, angle: f64) -> RgbImage {
    let (w, h, _) = dims(image);
    if image.as_raw().is_empty() {
        return image.clone();
    }
    let taps = motion::motion_kernel(radius, sigma, angle, w, h);
    let raw = motion::streak_rgb(image.as_raw(), (w, h), &taps);
    RgbImage::from_raw(image.width(), image.height(), raw).expect("same size")
}

/// ImageNet-C `glass_blur` (docs/imagenet-c.md#glass_blur):
/// 1. `x1 = floor8(H1(x, σ)·255)` (u8);
/// 2. `iterations` times: for row h = H−δ down to δ+1 and, inside, column w = W−δ down to δ+1, draw
///    dx, dy uniform in {−δ, …, δ−1} (the reference's asymmetric `randint(−δ, δ)`) and **copy** pixel
///    (h+dy, w+dx) onto (h, w) — the reference's tuple "swap" is a copy under numpy view semantics —
///    sequentially in place, so later copies see earlier ones;
/// 3. `floor8(clip(H1(x1, σ), 0, 1)·255)`.
///
/// Only the walk is inherently sequential; [`glass::glass_blur_rgb`] runs it as one tight loop over
/// packed pixels with offsets drawn in parallel beforehand (each walked row of each iteration from its
/// own keyed stream, see [`glass::walk`]), and the two Gaussian passes in parallel bands with scipy's
/// own symmetric evaluation order (bit-identical to scipy for a given walk). Generalisation: hendrycks
/// hard-codes 224 in the loop bounds; imagecorruptions 1.1.2 uses H for rows and W for columns, as
/// here. Frames with a side ≤ 2δ+1 are not walked (the ranges are empty), only blurred twice.
pub(crate) fn glass_blur(
    image: &RgbImage,
    sigma: f64,
    max_delta: usize,
    iterations: usize,
    rng: RngKey,
) -> RgbImage {
    let (w, h) = (image.width() as usize, image.height() as usize);
    let raw = glass::glass_blur_rgb(image.as_raw(), (w, h), sigma, max_delta, iterations, rng);
    RgbImage::from_raw(image.width(), image.height(), raw).expect("same size")
}

/// Step 2 of [`glass_blur`] on an interleaved RGB u8 buffer of `w × h` ([`glass::walk`] on packed
/// pixels).
#[cfg(test)]
fn glass_walk(px: &mut [u8], w: usize, h: usize, delta: usize, iterations: usize, rng: RngKey) {
    let mut packed: Vec<u32> = px
        .chunks_exact(3)
        .map(|p| u32::from(p[0]) | u32::from(p[1]) << 8 | u32::from(p[2]) << 16)
        .collect();
    glass::walk(&mut packed, w, h, delta, iterations, rng);
    for (p, v) in px.chunks_exact_mut(3).zip(packed) {
        p.copy_from_slice(&v.to_le_bytes()[..3]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_image(w: u32, h: u32) -> RgbImage {
        RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([
                (x * 7 + y * 3) as u8,
                ((y * 13) ^ x) as u8,
                ((x + y) * 5) as u8,
            ])
        })
    }

    #[test]
    fn tables_match_the_reference() {
        assert_eq!(GAUSSIAN_BLUR_SIGMA, [1.0, 2.0, 3.0, 4.0, 6.0]);
        let radii: Vec<usize> = GAUSSIAN_BLUR_SIGMA
            .iter()
            .map(|&s| crate::kernels::gaussian::gaussian_radius(s, 4.0))
            .collect();
        assert_eq!(radii, [4, 8, 12, 16, 24]);
        assert_eq!(GLASS_BLUR[2], glass(1.0, 2, 3));
        assert_eq!(GLASS_BLUR[4], glass(1.5, 4, 2));
        assert_eq!(DEFOCUS_BLUR[0], defocus(3, 0.1));
        assert_eq!(DEFOCUS_BLUR[4], defocus(10, 0.5));
        let taps: Vec<usize> = MOTION_BLUR.iter().map(|m| 2 * m.radius + 1).collect();
        assert_eq!(taps, [21, 31, 31, 31, 41]);
        assert_eq!(MOTION_BLUR[3], motion(15, 12.0));
    }

    #[test]
    fn zoom_factor_lists_keep_the_arange_quirk() {
        let counts: Vec<usize> = ZOOM_BLUR_ARANGE
            .iter()
            .map(|z| zoom_factors(z.stop, z.step).len())
            .collect();
        assert_eq!(counts, [12, 16, 11, 13, 11]);
        let f = zoom_factors(1.11, 0.01);
        assert_eq!(f[0], 1.0);
        assert_eq!(f[11], 1.11);
        assert_eq!(zoom_factors(1.21, 0.02)[10], 1.2000000000000002);
        assert_eq!(zoom_factors(1.31, 0.03)[10], 1.3000000000000003);
        assert_eq!(zoom_factors(1.16, 0.01)[15], 1.1500000000000001);
    }

    #[test]
    fn glass_walk_copies_with_asymmetric_offsets() {
        // On a ramp every pixel's value tells where it came from: every copy moved a value by
        // dx ∈ [−δ, δ−1] along x at most per step, and never from column +δ (the first copy into the
        // last walked column reads only columns ≤ its own + δ − 1).
        let (w, h, d) = (40usize, 30usize, 2usize);
        let mut px = vec![0u8; w * h * 3];
        for (i, p) in px.chunks_exact_mut(3).enumerate() {
            p[0] = (i % w) as u8;
            p[1] = (i / w) as u8;
        }
        let orig = px.clone();
        glass_walk(&mut px, w, h, d, 1, RngKey(5));
        // Untouched border.
        for y in 0..h {
            for x in 0..w {
                if !(d + 1..=h - d).contains(&y) || !(d + 1..=w - d).contains(&x) {
                    let i = (y * w + x) * 3;
                    assert_eq!(px[i..i + 3], orig[i..i + 3]);
                }
            }
        }
        // The last row and column walked first read from offsets < +δ, so nothing comes from beyond.
        let max_col = px.chunks_exact(3).map(|p| p[0]).max().unwrap();
        assert!(usize::from(max_col) < w);
        // Copies (not swaps): some value is duplicated.
        let mut seen = std::collections::HashSet::new();
        let dup = px.chunks_exact(3).any(|p| !seen.insert((p[0], p[1])));
        assert!(dup);
        // Offsets: the first visited pixel (h−δ, w−δ) reads from [−δ, δ−1] around itself.
        let i = ((h - d) * w + (w - d)) * 3;
        let (sx, sy) = (usize::from(px[i]), usize::from(px[i + 1]));
        assert!(sx + d >= w - d && sx < w - d + d, "{sx}");
        assert!(sy + d >= h - d && sy < h - d + d, "{sy}");
    }

    #[test]
    fn glass_offsets_cover_exactly_minus_delta_to_delta_minus_one() {
        let mut r = RngKey(9).rng();
        let (d, span) = (3isize, 6u64);
        let mut seen = [0usize; 8];
        for _ in 0..10_000 {
            let u: u32 = r.random();
            let o = ((u64::from(u) * span) >> 32) as isize - d;
            seen[(o + 4) as usize] += 1;
        }
        assert_eq!(seen[0], 0);
        assert_eq!(seen[7], 0);
        assert!(seen[1..7].iter().all(|&n| n > 1_400));
    }

    #[test]
    fn all_sizes_run_and_keep_size() {
        for (w, h) in [(0, 0), (1, 1), (32, 32), (37, 23), (1280, 720)] {
            let img = test_image(w, h);
            let outs = [
                gaussian_blur(&img, 6.0),
                defocus_blur(&img, 10, 0.5),
                zoom_blur(&img, &zoom_factors(1.31, 0.03)),
                motion_blur(&img, 20, 15.0, RngKey(3)),
                glass_blur(&img, 1.5, 4, 2, RngKey(3)),
            ];
            for o in outs {
                assert_eq!(o.dimensions(), (w, h));
            }
        }
    }

    #[test]
    fn constant_images_stay_constant_except_defocus_mass() {
        let img = RgbImage::from_pixel(37, 23, image::Rgb([100, 50, 200]));
        assert_eq!(gaussian_blur(&img, 3.0), img);
        assert_eq!(motion_blur(&img, 15, 8.0, RngKey(1)), img);
        // Floating rounding may truncate 100 to 99, never more.
        let z = zoom_blur(&img, &zoom_factors(1.21, 0.02));
        assert!(z.as_raw().iter().zip(img.as_raw()).all(|(a, b)| b - a <= 1));
        // Defocus sev 4 kernel sums to 1.013: a constant 100 becomes 101.
        let d = defocus_blur(&img, 8, 0.5);
        assert_eq!(d.get_pixel(10, 10)[0], 101);
    }

    #[test]
    fn deterministic_per_key_and_across_threads() {
        let img = test_image(97, 61);
        let run = || {
            (
                motion_blur(&img, 15, 8.0, RngKey(7)),
                glass_blur(&img, 1.0, 2, 3, RngKey(7)),
                defocus_blur(&img, 6, 0.5),
                zoom_blur(&img, &zoom_factors(1.21, 0.02)),
                gaussian_blur(&img, 3.0),
            )
        };
        let a = run();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(run);
        let many = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap()
            .install(run);
        assert_eq!(a, one);
        assert_eq!(a, many);
        assert_ne!(
            glass_blur(&img, 1.0, 2, 3, RngKey(8)),
            a.1,
            "another key draws other offsets"
        );
    }
}
