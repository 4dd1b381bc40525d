//! The digital corruptions' GPU kernels against `scenario::corruption::digital`.

use image::RgbImage;

use super::{assert_close, flat, host_corrupt, test_image};
use crate::rng::RngKey;
use crate::scenario::corruption::Corruption;

#[test]
fn contrast_matches_the_cpu_at_every_severity() {
    for img in [test_image(224, 224), test_image(61, 17), flat(8, 8, 200)] {
        for s in 1..=5 {
            let key = RngKey(0);
            let gpu = host_corrupt("contrast", s, &img, key);
            let cpu = Corruption::new("contrast", s).unwrap().corrupt(&img, key);
            assert_close(&format!("contrast/{s}"), &gpu, &cpu);
            assert_eq!(
                gpu, cpu,
                "contrast/{s}: the same f64 tables give the same bytes"
            );
        }
    }
}

/// Images every deterministic digital kernel is checked on: the textured field at 224² (every
/// byte value), at an odd 61×17, at 720p-like proportions, 1-pixel-wide and -high frames, a tiny
/// one, and flat black, white and grey.
fn images() -> Vec<RgbImage> {
    vec![
        test_image(224, 224),
        test_image(61, 17),
        test_image(320, 180),
        test_image(1, 37),
        test_image(37, 1),
        test_image(3, 2),
        flat(9, 7, 0),
        flat(9, 7, 255),
        flat(9, 7, 128),
    ]
}

/// The GPU kernels of `name` give the CPU's bytes at every severity on [`images`].
fn equals_the_cpu(name: &str, images: &[RgbImage]) {
    for img in images {
        for s in 1..=5 {
            let key = RngKey(0);
            let gpu = host_corrupt(name, s, img, key);
            let cpu = Corruption::new(name, s).unwrap().corrupt(img, key);
            let what = format!("{name}/{s} at {}×{}", img.width(), img.height());
            assert_close(&what, &gpu, &cpu);
            assert_eq!(gpu, cpu, "{what}: not the same bytes");
        }
    }
}

/// Every 24-bit colour once, in a 4096 × 4096 image.
fn all_colours() -> RgbImage {
    RgbImage::from_fn(4096, 4096, |x, y| {
        let c = y * 4096 + x;
        image::Rgb([(c >> 16) as u8, (c >> 8) as u8, c as u8])
    })
}

#[test]
fn brightness_and_saturate_match_the_cpu_at_every_severity() {
    equals_the_cpu("brightness", &images());
    equals_the_cpu("saturate", &images());
}

#[test]
fn brightness_and_saturate_match_the_cpu_for_every_colour() {
    // The f64 chain on the GPU against the CPU's fast path (itself checked against the chain).
    equals_the_cpu("brightness", &[all_colours()]);
    equals_the_cpu("saturate", &[all_colours()]);
}

#[test]
fn pixelate_matches_the_cpu_at_every_severity() {
    let mut imgs = images();
    // 720p (horizontal pass first; severity 2 is the CPU's halving shortcut), a frame more than
    // twice as tall as wide (Pillow goes vertical first), sizes whose BOX enlargement has ties.
    imgs.extend([
        test_image(1280, 720),
        test_image(40, 130),
        test_image(130, 40),
    ]);
    equals_the_cpu("pixelate", &imgs);
}
