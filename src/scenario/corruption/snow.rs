//! ImageNet-C `snow` (REFERENCE §2.10), a weather corruption, as imagecorruptions 1.1.2 computes it:
//! a thresholded, zoomed Gaussian snow layer streaked by the motion-blur port (H5), added twice (as is
//! and rotated by 180°) over a brightened image. Built on [`super::kernels`].

use image::RgbImage;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use super::kernels::{self, Border};
use crate::scenario::RngKey;

/// Parameters of one snow severity (REFERENCE §2.10).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnowParams {
    /// Mean μ of the Gaussian snow field.
    pub mean: f64,
    /// Standard deviation s of the snow field.
    pub std: f64,
    /// Zoom factor z of the field ([`kernels::clipped_zoom_f64`]).
    pub zoom: f64,
    /// Threshold t: zoomed field values below it become 0.
    pub threshold: f64,
    /// Motion-blur radius r (2r + 1 taps).
    pub radius: usize,
    /// Motion-blur σ.
    pub sigma: f64,
    /// Blend b of the image with its brightened version.
    pub blend: f32,
}

/// (μ, s, z, t, r, σ, b) per severity 1..5 (REFERENCE §2.10).
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
    blend: f32,
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

/// ImageNet-C `snow` as imagecorruptions 1.1.2 computes it (REFERENCE §2.10):
/// 1. x = value/255 in float32; snow field S = N(μ, s) of H×W (f64; row `y` draws from the key's
///    sub-stream `rng.stream(y)`);
/// 2. S = clipped_zoom(S, z) — imagecorruptions' per-axis crop, **untrimmed** (H3); S[S < t] = 0; clip
///    to [0, 1];
/// 3. S = motion blur of the whole zoomed layer (H5, radius r, σ, angle U[−135°, −45°) from the key's
///    main generator, edge replication, taps past the layer dropped); S = round(S·255)/255 (half to
///    even, emulating hendrycks' PNG round trip); top-left H×W kept;
/// 4. x' = b·x + (1 − b)·max(x, gray(x)·1.5 + 0.5) in float32 (gray per H7);
/// 5. out = floor8(clip(x' + S + rot180(S), 0, 1)·255).
///
/// Generalisation: hendrycks reshapes the layer to 224×224 and zooms square crops; imagecorruptions'
/// per-axis zoom and top-left crop, used here, work for any H×W (both agree in distribution at 224²).
/// imagecorruptions rejects frames below 32×32; here they work the same way (a 1×1 frame zooms to a
/// tiny layer whose motion taps stop at its size).
pub fn snow_corruption(image: &RgbImage, p: &SnowParams, rng: RngKey) -> RgbImage {
    let (w, h) = (image.width() as usize, image.height() as usize);
    if w == 0 || h == 0 {
        return image.clone();
    }
    // 1. The field, row-keyed.
    let mut field = vec![0f64; w * h];
    field.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let mut r = rng.stream(y as u64);
        for v in row {
            let n: f64 = StandardNormal.sample(&mut r);
            *v = p.mean + p.std * n;
        }
    });
    let angle: f64 = rng.rng().random_range(-135.0..-45.0);
    snow_with(image, p, &field, angle)
}

/// Steps 2–5 of [`snow_corruption`] with a given snow field (H×W, row-major, before zooming) and motion
/// angle in degrees.
pub fn snow_with(image: &RgbImage, p: &SnowParams, field: &[f64], angle: f64) -> RgbImage {
    let (w, h) = (image.width() as usize, image.height() as usize);
    assert_eq!(field.len(), w * h, "field size");
    if w == 0 || h == 0 {
        return image.clone();
    }
    // 2. Zoom (whole, untrimmed), threshold, clip.
    let (_, _, zw) = kernels::clipped_zoom_axis(w, p.zoom);
    let (_, _, zh) = kernels::clipped_zoom_axis(h, p.zoom);
    let mut layer = kernels::clipped_zoom_f64(field, (w, h, 1), p.zoom, (zw, zh));
    for v in &mut layer {
        *v = if *v < p.threshold {
            0.0
        } else {
            v.clamp(0.0, 1.0)
        };
    }
    // 3. Streak, quantise, crop.
    let taps = kernels::motion_kernel(p.radius, p.sigma, angle, zw, zh);
    let streaked = kernels::filter_taps(&layer, (zw, zh, 1), &taps, Border::Nearest);
    let s: Vec<f64> = (0..h)
        .flat_map(|y| {
            let row = &streaked[y * zw..y * zw + w];
            row.iter()
                .map(|&v| f64::from((v * 255.0).round_ties_even().clamp(0.0, 255.0) as u8) / 255.0)
        })
        .collect();
    // 4–5. Brighten, add the layer and its 180° rotation.
    let b = p.blend;
    let mut out = vec![0u8; w * h * 3];
    out.par_chunks_mut(w * 3)
        .zip(image.as_raw().par_chunks(w * 3))
        .enumerate()
        .for_each(|(y, (o, src))| {
            for x in 0..w {
                let px = &src[x * 3..x * 3 + 3];
                let f = |c: usize| f32::from(px[c]) / 255.0;
                let (r, g, bl) = (f(0), f(1), f(2));
                let bright = kernels::gray(r, g, bl) * 1.5 + 0.5;
                let snow = s[y * w + x] + s[(h - 1 - y) * w + (w - 1 - x)];
                for (c, v) in [r, g, bl].into_iter().enumerate() {
                    let xb = b * v + (1.0 - b) * v.max(bright);
                    o[x * 3 + c] = ((f64::from(xb) + snow).clamp(0.0, 1.0) * 255.0) as u8;
                }
            }
        });
    RgbImage::from_raw(image.width(), image.height(), out).expect("same size")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_reference() {
        let rows: Vec<(f64, f64, f64, f64, usize, f64, f32)> = SNOW
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
        assert_eq!(kernels::clipped_zoom_axis(224, 4.5), (50, 87, 225));
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
