//! Digital corruptions (REFERENCE §2.13–§2.17): contrast so far.

use image::RgbImage;

use super::floor8_unit;

/// Contrast factor c per severity 1..5 (REFERENCE §2.14).
pub const CONTRAST_FACTOR: [f64; 5] = [0.4, 0.3, 0.2, 0.1, 0.05];

/// ImageNet-C `contrast`: with x on [0, 1] and μ the per-channel mean over the whole image,
/// `out = floor8(clip((x − μ)·c + μ, 0, 1)·255)` (REFERENCE §2.14; identical in imagecorruptions).
///
/// Size-independent. Because the map is per channel and x takes only 256 values, it is evaluated once per
/// value into a lookup table (same f64 arithmetic as the reference, so the result is exact).
pub fn contrast(image: &RgbImage, c: f64) -> RgbImage {
    let raw = image.as_raw();
    let mut sums = [0u64; 3];
    for px in raw.chunks_exact(3) {
        sums[0] += u64::from(px[0]);
        sums[1] += u64::from(px[1]);
        sums[2] += u64::from(px[2]);
    }
    let n = (raw.len() / 3).max(1) as f64;
    let luts: [[u8; 256]; 3] = std::array::from_fn(|ch| {
        let mean = sums[ch] as f64 / n / 255.0;
        std::array::from_fn(|v| floor8_unit((v as f64 / 255.0 - mean) * c + mean))
    });
    let mut out = raw.clone();
    for px in out.chunks_exact_mut(3) {
        px[0] = luts[0][usize::from(px[0])];
        px[1] = luts[1][usize::from(px[1])];
        px[2] = luts[2][usize::from(px[2])];
    }
    RgbImage::from_raw(image.width(), image.height(), out).expect("same size as the input buffer")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formula evaluated directly per pixel, as the reference does.
    fn naive(image: &RgbImage, c: f64) -> RgbImage {
        let (w, h) = image.dimensions();
        // Mean as `contrast` computes it (exact integer sum, then one division); numpy's pairwise float
        // sum can differ in the last bits, which moves a truncated value by at most one level.
        let mut sums = [0u64; 3];
        for p in image.pixels() {
            for ch in 0..3 {
                sums[ch] += u64::from(p[ch]);
            }
        }
        let means = sums.map(|s| s as f64 / (w * h) as f64 / 255.0);
        RgbImage::from_fn(w, h, |x, y| {
            let p = image.get_pixel(x, y);
            image::Rgb(std::array::from_fn(|ch| {
                let v = (p[ch] as f64 / 255.0 - means[ch]) * c + means[ch];
                (v.clamp(0.0, 1.0) * 255.0) as u8
            }))
        })
    }

    #[test]
    fn matches_the_per_pixel_formula() {
        let img = RgbImage::from_fn(37, 23, |x, y| {
            image::Rgb([
                (x * 7 % 256) as u8,
                (y * 11 % 256) as u8,
                ((x * y) % 256) as u8,
            ])
        });
        for c in CONTRAST_FACTOR {
            assert_eq!(contrast(&img, c), naive(&img, c));
        }
    }

    #[test]
    fn uniform_image_is_unchanged_up_to_truncation() {
        let img = RgbImage::from_pixel(8, 8, image::Rgb([10, 128, 250]));
        let out = contrast(&img, 0.05);
        // μ = x, so (x − μ)·c + μ = x; x/255·255 may land a hair below x and truncate.
        for p in out.pixels() {
            for ch in 0..3 {
                let want = img.get_pixel(0, 0)[ch];
                assert!(p[ch] == want || p[ch] + 1 == want);
            }
        }
    }

    #[test]
    fn shrinks_the_spread() {
        let img = RgbImage::from_fn(16, 1, |x, _| image::Rgb([(x * 16) as u8, 0, 255]));
        let out = contrast(&img, 0.1);
        let spread = |im: &RgbImage| {
            let v: Vec<u8> = im.pixels().map(|p| p[0]).collect();
            v.iter().max().unwrap() - v.iter().min().unwrap()
        };
        assert!(spread(&out) <= spread(&img) / 10 + 1);
    }
}
