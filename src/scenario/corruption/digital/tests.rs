use super::*;
use crate::kernels::channels::tests::noise_bytes;

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
fn parameter_tables_are_the_reference_ones() {
    assert_eq!(BRIGHTNESS_DELTA, [0.1, 0.2, 0.3, 0.4, 0.5]);
    assert_eq!(CONTRAST_FACTOR, [0.4, 0.3, 0.2, 0.1, 0.05]);
    assert_eq!(
        SATURATE_SCALE_OFFSET.map(|p| (p.scale, p.offset)),
        [(0.3, 0.0), (0.1, 0.0), (2.0, 0.0), (5.0, 0.1), (20.0, 0.2)]
    );
    assert_eq!(JPEG_QUALITY, [25, 18, 15, 10, 7]);
    assert_eq!(PIXELATE_FACTOR, [0.6, 0.5, 0.4, 0.3, 0.25]);
}

/// Pixels covering an ordinary colour, the three tie cases (r = g, g = b, r = b at the maximum), black,
/// grey, white and a near-red whose hue wraps below 0.
fn hsv_probe() -> RgbImage {
    let px: [[u8; 3]; 8] = [
        [51, 153, 102],
        [200, 200, 50],
        [10, 90, 90],
        [255, 0, 255],
        [0, 0, 0],
        [128, 128, 128],
        [255, 255, 255],
        [250, 20, 30],
    ];
    RgbImage::from_fn(8, 1, |x, _| image::Rgb(px[x as usize]))
}

fn pixels(img: &RgbImage) -> Vec<[u8; 3]> {
    img.pixels().map(|p| p.0).collect()
}

#[test]
fn brightness_matches_scikit_image_on_hand_picked_pixels() {
    // Expected values worked out by hand (e.g. (51, 153, 102): h = 2.5/6, s = 2/3, v = 0.6 → 0.7;
    // sector 2 gives (v/3, v, 2v/3)·255 = (59.5, 178.5, 119.0) → 59, 178, 119) and confirmed with
    // scikit-image 0.19.3.
    assert_eq!(
        pixels(&brightness(&hsv_probe(), 0.1)),
        [
            [59, 178, 119],
            [225, 225, 56],
            [12, 115, 115],
            [255, 0, 255],
            [25, 25, 25],
            [153, 153, 153],
            [255, 255, 255],
            [255, 20, 30]
        ]
    );
    assert_eq!(
        pixels(&brightness(&hsv_probe(), 0.5)),
        [
            [85, 255, 170],
            [255, 255, 63],
            [24, 217, 217],
            [255, 0, 255],
            [127, 127, 127],
            [255, 255, 255],
            [255, 255, 255],
            [255, 20, 30]
        ]
    );
}

#[test]
fn saturate_matches_scikit_image_on_hand_picked_pixels() {
    assert_eq!(
        pixels(&saturate(&hsv_probe(), 0.3, 0.0)),
        [
            [122, 153, 137],
            [200, 200, 155],
            [66, 90, 90],
            [255, 178, 255],
            [0, 0, 0],
            [128, 128, 128],
            [255, 255, 255],
            [250, 180, 184]
        ]
    );
    // The offset gives greys a (red, h = 0) saturation: grey 128 → (128, 102, 102).
    assert_eq!(
        pixels(&saturate(&hsv_probe(), 20.0, 0.2)),
        [
            [0, 153, 76],
            [200, 200, 0],
            [0, 90, 90],
            [255, 0, 255],
            [0, 0, 0],
            [128, 102, 102],
            [255, 204, 204],
            [250, 0, 10]
        ]
    );
}

#[test]
fn hsv_corruptions_match_the_per_pixel_formula() {
    let img = RgbImage::from_fn(37, 23, |x, y| {
        image::Rgb([(x * 7) as u8, (y * 11) as u8, ((x * y * 3) % 256) as u8])
    });
    let u = |v: u8| f64::from(v) / 255.0;
    for (s, d) in BRIGHTNESS_DELTA.iter().enumerate() {
        let out = brightness(&img, *d);
        let SaturateParams { scale, offset } = SATURATE_SCALE_OFFSET[s];
        let sat = saturate(&img, scale, offset);
        for ((p, b), q) in img.pixels().zip(out.pixels()).zip(sat.pixels()) {
            let [h, sv, v] = hsv::rgb_to_hsv([u(p[0]), u(p[1]), u(p[2])]);
            let want = hsv::hsv_to_rgb([h, sv, (v + d).clamp(0.0, 1.0)]).map(floor8_unit);
            assert_eq!(b.0, want);
            let want =
                hsv::hsv_to_rgb([h, (sv * scale + offset).clamp(0.0, 1.0), v]).map(floor8_unit);
            assert_eq!(q.0, want);
        }
    }
}

#[test]
fn brightness_never_darkens_and_saturate_keeps_value() {
    let img = RgbImage::from_fn(64, 64, |x, y| {
        image::Rgb([(x * 4) as u8, (y * 4) as u8, 77])
    });
    for d in BRIGHTNESS_DELTA {
        let out = brightness(&img, d);
        for (p, q) in img.pixels().zip(out.pixels()) {
            // max channel = V rises by ΔV·255 (up to truncation) or saturates at 255.
            let (vi, vo) = (*p.0.iter().max().unwrap(), *q.0.iter().max().unwrap());
            assert!(
                vo >= vi && (vo == 255 || i32::from(vo) - i32::from(vi) >= (d * 255.0) as i32 - 1)
            );
        }
    }
    for p in SATURATE_SCALE_OFFSET {
        let out = saturate(&img, p.scale, p.offset);
        for (p, q) in img.pixels().zip(out.pixels()) {
            let (vi, vo) = (*p.0.iter().max().unwrap(), *q.0.iter().max().unwrap());
            assert!(vi == vo || vi == vo + 1, "{p:?} → {q:?}");
        }
    }
}

#[test]
fn pixelate_sizes_follow_python_int_truncation() {
    let at224: Vec<u32> = PIXELATE_FACTOR
        .iter()
        .map(|f| pixelate_size(224, 224, *f).0)
        .collect();
    assert_eq!(at224, [134, 112, 89, 67, 56]);
    assert_eq!(pixelate_size(37, 23, 0.25), (9, 5));
    assert_eq!(pixelate_size(1, 1, 0.25), (1, 1));
    assert_eq!(pixelate_size(3, 2, 0.3), (1, 1));
    assert_eq!(pixelate_size(10, 10, f64::NAN), (10, 10));
    assert_eq!(pixelate_size(10, 10, -1.0), (1, 1));
}

#[test]
fn pixelate_is_box_down_then_box_up() {
    let img = RgbImage::from_fn(224, 224, |x, y| {
        image::Rgb([(x ^ y) as u8, (x * 3) as u8, (255 - y) as u8])
    });
    for f in PIXELATE_FACTOR {
        let (sw, sh) = pixelate_size(224, 224, f);
        let mut r = Resampler::new();
        let small = r.resize_rgb(&img, sw, sh, Filter::Box);
        let want = r.resize_rgb(&small, 224, 224, Filter::Box);
        assert_eq!(pixelate(&img, f), want);
    }
    // A flat frame stays flat; tiny frames keep their size.
    let flat = RgbImage::from_pixel(37, 23, image::Rgb([9, 99, 199]));
    assert_eq!(pixelate(&flat, 0.25), flat);
    assert_eq!(pixelate(&RgbImage::new(1, 1), 0.25).dimensions(), (1, 1));
    // NEAREST up-sampling (imagecorruptions) gives blocks of identical pixels: at f = 0.5 on an even
    // size every output pixel equals its 2×2 neighbourhood's top-left.
    let ic = pixelate_with(&img, 0.5, Filter::Nearest);
    for y in (0..224).step_by(2) {
        for x in (0..224).step_by(2) {
            let p = ic.get_pixel(x, y);
            assert!(p == ic.get_pixel(x + 1, y) && p == ic.get_pixel(x, y + 1));
        }
    }
}

#[test]
fn jpeg_compression_loses_more_at_lower_quality() {
    let img = RgbImage::from_fn(96, 80, |x, y| {
        image::Rgb([(x * 2 + y) as u8, ((x * y) % 251) as u8, (200 - y) as u8])
    });
    let err = |q| {
        let out = jpeg_compression(&img, q);
        assert_eq!(out.dimensions(), img.dimensions());
        out.as_raw()
            .iter()
            .zip(img.as_raw())
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).abs())
            .sum::<f64>()
    };
    assert!(err(95) < err(25) && err(25) < err(7));
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

#[test]
fn contrast_on_odd_sizes_matches_the_formula() {
    for (w, h) in [(1, 1), (65, 3), (64, 3), (97, 41), (224, 224)] {
        let raw = noise_bytes(w * h * 3, (w * h) as u64);
        let img = RgbImage::from_raw(w as u32, h as u32, raw).unwrap();
        for c in CONTRAST_FACTOR {
            assert_eq!(contrast(&img, c), naive(&img, c), "{w}×{h} c {c}");
        }
    }
}

#[test]
fn halving_equals_the_two_resizes() {
    // 1600×1000 is past HALVING_PARALLEL_BYTES (rows in parallel blocks).
    let sizes = [
        (2, 2),
        (2, 4),
        (4, 2),
        (6, 12),
        (224, 224),
        (62, 30),
        (130, 48),
        (1280, 720),
        (1600, 1000),
    ];
    for (k, (w, h)) in sizes.into_iter().enumerate() {
        let raw = noise_bytes(w * h * 3, 1000 + k as u64);
        let img = RgbImage::from_raw(w as u32, h as u32, raw).unwrap();
        for up in [Filter::Box, Filter::Nearest] {
            let mut r = Resampler::new();
            let small = r.resize_rgb(&img, w as u32 / 2, h as u32 / 2, Filter::Box);
            let want = r.resize_rgb(&small, w as u32, h as u32, up);
            let got = pixelate_halving(&img, (w as u32 / 2, h as u32 / 2), up);
            assert!(got.as_ref() == Some(&want), "{w}×{h} {up:?}");
            assert_eq!(pixelate_with(&img, 0.5, up), want);
        }
    }
    // Not a halving, or vertical-first in Pillow 13 (taller than twice the width): general path.
    let tall = RgbImage::from_raw(2, 6, noise_bytes(36, 5)).unwrap();
    assert!(pixelate_halving(&tall, (1, 3), Filter::Box).is_none());
    let odd = RgbImage::from_raw(5, 4, noise_bytes(60, 6)).unwrap();
    assert!(pixelate_halving(&odd, pixelate_size(5, 4, 0.5), Filter::Box).is_none());
    assert!(pixelate_halving(&img_224(), (112, 112), Filter::Bilinear).is_none());
}

fn img_224() -> RgbImage {
    RgbImage::from_raw(224, 224, noise_bytes(224 * 224 * 3, 9)).unwrap()
}
