//! Noise corruptions (REFERENCE §2.1–§2.4): gaussian_noise so far.

use image::RgbImage;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use super::floor8_unit;
use crate::scenario::RngKey;

/// Noise standard deviation σ per severity 1..5 on the [0, 1] scale (REFERENCE §2.1).
pub const GAUSSIAN_SIGMA: [f64; 5] = [0.08, 0.12, 0.18, 0.26, 0.38];

/// ImageNet-C `gaussian_noise`: `out = floor8(clip(x + N(0, σ), 0, 1)·255)`, x on [0, 1], one independent
/// draw per pixel **and** channel (REFERENCE §2.1; identical in imagecorruptions). Size-independent.
///
/// Rows are processed in parallel; row `y` draws from the keyed sub-stream `rng.stream(y)`, so the
/// output depends only on the key, never on the thread count. numpy's exact stream is not reproduced
/// (REFERENCE §1.1 item 7); the distribution is.
pub fn gaussian_noise(image: &RgbImage, sigma: f64, rng: RngKey) -> RgbImage {
    let row_len = image.width() as usize * 3;
    let mut out = image.as_raw().clone();
    if row_len == 0 {
        return image.clone();
    }
    out.par_chunks_mut(row_len)
        .enumerate()
        .for_each(|(y, row)| {
            let mut r = rng.stream(y as u64);
            for v in row.iter_mut() {
                let n: f64 = StandardNormal.sample(&mut r);
                *v = floor8_unit(f64::from(*v) / 255.0 + sigma * n);
            }
        });
    RgbImage::from_raw(image.width(), image.height(), out).expect("same size as the input buffer")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gray(v: u8) -> RgbImage {
        RgbImage::from_pixel(200, 150, image::Rgb([v, v, v]))
    }

    #[test]
    fn noise_has_the_table_sigma_on_mid_gray() {
        // At 128 clipping is negligible for σ ≤ 0.18 (≥ 2.7σ of headroom); the change is N(0, σ)·255,
        // truncated (mean shifts by about −0.5).
        let img = gray(128);
        for (s, sigma) in GAUSSIAN_SIGMA.iter().enumerate().take(3) {
            let out = gaussian_noise(&img, *sigma, RngKey(s as u64));
            let d: Vec<f64> = out.as_raw().iter().map(|&v| f64::from(v) - 128.0).collect();
            let n = d.len() as f64;
            let mean = d.iter().sum::<f64>() / n;
            let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
            assert!((mean + 0.5).abs() < 0.6, "severity {}: mean {mean}", s + 1);
            assert!(
                (sd / (sigma * 255.0) - 1.0).abs() < 0.03,
                "severity {}: sd {sd}",
                s + 1
            );
        }
    }

    #[test]
    fn channels_and_pixels_are_independent() {
        let out = gaussian_noise(&gray(128), 0.08, RngKey(3));
        let differing = out
            .pixels()
            .filter(|p| p[0] != p[1] || p[1] != p[2])
            .count();
        assert!(differing > out.pixels().len() * 9 / 10);
    }

    #[test]
    fn deterministic_per_key_and_thread_count() {
        let img = gray(90);
        let a = gaussian_noise(&img, 0.18, RngKey(42));
        let b = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| gaussian_noise(&img, 0.18, RngKey(42)));
        assert_eq!(a, b);
        assert_ne!(a, gaussian_noise(&img, 0.18, RngKey(43)));
    }

    #[test]
    fn handles_empty_and_tiny_images() {
        assert_eq!(
            gaussian_noise(&RgbImage::new(0, 0), 0.1, RngKey(0)).dimensions(),
            (0, 0)
        );
        assert_eq!(
            gaussian_noise(&RgbImage::new(1, 1), 0.1, RngKey(0)).dimensions(),
            (1, 1)
        );
    }
}
