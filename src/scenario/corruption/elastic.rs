//! ImageNet-C `elastic_transform`, following **imagecorruptions 1.1.2** (REFERENCE §2.18), not hendrycks:
//! hendrycks' version is 224-only (parameters written as multiples of 244, plus a random affine warp),
//! while imagecorruptions scales with the frame (σ = 1 % of each side, displacement noise ∝ H) and has
//! no affine step. The fixture statistics (tests/fixtures/corruptions) come from imagecorruptions.
//!
//! dx, dy = gaussian(U[−0.005·H, 0.005·H) field, σ = (0.01·H, 0.01·W), reflect, truncate 3)·α (both
//! fields use H, a reference quirk); out(y, x) = bilinear sample of the image at (y + dy, x + dx) with
//! half-sample-symmetric ('reflect') borders; floor8. Row `y` of dx draws from `rng.stream(2y)`, of dy from
//! `rng.stream(2y + 1)`, so the output depends only on the key, never on the thread count.

use image::RgbImage;
use rand::RngExt;
use rayon::prelude::*;

use crate::scenario::RngKey;

/// Displacement scale α per severity 1..5: 250 × (0.05, 0.065, 0.085, 0.1, 0.12) (REFERENCE §2.18, IC).
pub const ELASTIC_ALPHA: [f64; 5] = [12.5, 16.25, 21.25, 25.0, 30.0];

/// Smoothing σ as a fraction of each side (σ_y = 0.01·H, σ_x = 0.01·W) (REFERENCE §2.18, IC).
pub const ELASTIC_SIGMA_FRACTION: f64 = 0.01;

/// Half-width of the displacement noise as a fraction of the height H (both dx and dy; REFERENCE §2.18).
pub const ELASTIC_NOISE_FRACTION: f64 = 0.005;

/// Gaussian truncation (radius `int(3σ + 0.5)`) used by elastic_transform (REFERENCE §1.4 H1).
pub const ELASTIC_TRUNCATE: f64 = 3.0;

/// Half-sample-symmetric ('reflect', …c b a | a b c…) index into `0..n` (n ≥ 1), any distance out.
#[inline]
fn reflect(i: i64, n: usize) -> usize {
    let n = n as i64;
    let m = i.rem_euclid(2 * n);
    (if m < n { m } else { 2 * n - 1 - m }) as usize
}

/// scipy's 1-D Gaussian weights for σ and truncate: radius `int(truncate·σ + 0.5)`, normalised to sum 1.
fn kernel(sigma: f64, truncate: f64) -> Vec<f64> {
    let r = (truncate * sigma + 0.5) as i64;
    if sigma <= 0.0 || r == 0 {
        return vec![1.0];
    }
    let k: Vec<f64> = (-r..=r)
        .map(|i| (-0.5 * (i as f64 / sigma).powi(2)).exp())
        .collect();
    let s: f64 = k.iter().sum();
    k.into_iter().map(|v| v / s).collect()
}

/// scipy `gaussian_filter(field, (σ_y, σ_x), mode='reflect', truncate)` on a row-major `w`×`h` field
/// (rows axis first, as scipy). Private until the shared `kernels::gaussian_filter` takes one σ per
/// axis; then this can be unified with it.
fn gaussian_reflect(
    field: &[f64],
    w: usize,
    h: usize,
    sy: f64,
    sx: f64,
    truncate: f64,
) -> Vec<f64> {
    let ky = kernel(sy, truncate);
    let ry = (ky.len() / 2) as i64;
    let mut tmp = vec![0.0f64; w * h];
    tmp.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for (k, &kv) in ky.iter().enumerate() {
            let sy = reflect(y as i64 + k as i64 - ry, h);
            let src = &field[sy * w..sy * w + w];
            for (o, &s) in row.iter_mut().zip(src) {
                *o += kv * s;
            }
        }
    });
    let kx = kernel(sx, truncate);
    let rx = (kx.len() / 2) as i64;
    let mut out = vec![0.0f64; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let src = &tmp[y * w..y * w + w];
        for (x, o) in row.iter_mut().enumerate() {
            *o = kx
                .iter()
                .enumerate()
                .map(|(k, &kv)| kv * src[reflect(x as i64 + k as i64 - rx, w)])
                .sum();
        }
    });
    out
}

/// One smoothed displacement field: U[−max_d, max_d) per pixel (row y from `rng.stream(2y + parity)`),
/// gaussian-smoothed, times α.
fn displacement(w: usize, h: usize, alpha: f64, parity: u64, rng: RngKey) -> Vec<f64> {
    let max_d = ELASTIC_NOISE_FRACTION * h as f64;
    let mut field = vec![0.0f64; w * h];
    field.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let mut r = rng.stream(2 * y as u64 + parity);
        for v in row {
            *v = max_d * (2.0 * r.random::<f64>() - 1.0);
        }
    });
    let sy = ELASTIC_SIGMA_FRACTION * h as f64;
    let sx = ELASTIC_SIGMA_FRACTION * w as f64;
    let mut d = gaussian_reflect(&field, w, h, sy, sx, ELASTIC_TRUNCATE);
    for v in &mut d {
        *v = (*v * alpha) as f32 as f64; // the reference stores the fields as float32
    }
    d
}

/// ImageNet-C `elastic_transform` (imagecorruptions 1.1.2; see the module doc) with displacement scale
/// `alpha` ([`ELASTIC_ALPHA`]). Any size: an empty image is returned as is; at 1×1 σ = 0.01 gives a
/// one-tap kernel and every sample reflects back onto the single pixel, so the output equals the input.
pub fn elastic_transform(image: &RgbImage, alpha: f64, rng: RngKey) -> RgbImage {
    let (w, h) = image.dimensions();
    let (wu, hu) = (w as usize, h as usize);
    if wu == 0 || hu == 0 {
        return image.clone();
    }
    let dx = displacement(wu, hu, alpha, 0, rng);
    let dy = displacement(wu, hu, alpha, 1, rng);
    let src = image.as_raw();
    // The reference works on float32 x/255 (REFERENCE §1.2).
    let unit: [f64; 256] = std::array::from_fn(|v| f64::from(v as f32 / 255.0));
    let mut out = vec![0u8; src.len()];
    out.par_chunks_mut(wu * 3).enumerate().for_each(|(y, row)| {
        for (x, px) in row.chunks_exact_mut(3).enumerate() {
            let i = y * wu + x;
            let (cy, cx) = (y as f64 + dy[i], x as f64 + dx[i]);
            let (fy, fx) = (cy.floor(), cx.floor());
            let (ty, tx) = (cy - fy, cx - fx);
            let (y0, x0) = (fy as i64, fx as i64);
            let (ya, yb) = (reflect(y0, hu), reflect(y0 + 1, hu));
            let (xa, xb) = (reflect(x0, wu), reflect(x0 + 1, wu));
            let at =
                |yy: usize, xx: usize, c: usize| unit[usize::from(src[(yy * wu + xx) * 3 + c])];
            for (c, v) in px.iter_mut().enumerate() {
                let top = (1.0 - tx) * at(ya, xa, c) + tx * at(ya, xb, c);
                let bot = (1.0 - tx) * at(yb, xa, c) + tx * at(yb, xb, c);
                // scipy interpolates in double and stores float32; clip and ×255 in float32.
                *v = ((((1.0 - ty) * top + ty * bot) as f32).clamp(0.0, 1.0) * 255.0) as u8;
            }
        }
    });
    RgbImage::from_raw(w, h, out).expect("same size as the input")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn kernel_radius_follows_scipy() {
        assert_eq!(kernel(2.24, 3.0).len(), 2 * 7 + 1);
        assert_eq!(kernel(0.01, 3.0), vec![1.0]);
        assert!((kernel(1.5, 3.0).iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // A constant field stays constant under reflect borders.
        let f = vec![2.5; 7 * 5];
        let g = gaussian_reflect(&f, 7, 5, 3.0, 4.0, 3.0);
        assert!(g.iter().all(|v| (v - 2.5).abs() < 1e-12));
    }

    #[test]
    fn zero_displacement_is_identity() {
        let img = RgbImage::from_fn(9, 6, |x, y| image::Rgb([(x * 20) as u8, (y * 30) as u8, 5]));
        assert_eq!(elastic_transform(&img, 0.0, RngKey(1)), img);
        let one = RgbImage::from_pixel(1, 1, image::Rgb([10, 200, 30]));
        assert_eq!(elastic_transform(&one, 30.0, RngKey(1)), one);
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
