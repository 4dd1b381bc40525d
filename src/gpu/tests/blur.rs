//! The blur corruptions' GPU kernels against `scenario::corruption::blur`.

use image::RgbImage;

use super::{assert_close, assert_same_distribution, flat, host_corrupt, test_image};
use crate::gpu::corruption;
use crate::gpu::host::HostLauncher;
use crate::gpu::launch::{Args, Launcher};
use crate::key::Corruption as Kind;
use crate::rng::RngKey;
use crate::scenario::corruption::{Corruption, blur};

/// The images every deterministic blur is checked on: two sizes (one not a multiple of 8), flat
/// black and white, one pixel wide and one pixel high.
fn images() -> Vec<RgbImage> {
    vec![
        test_image(224, 224),
        test_image(61, 17),
        flat(13, 9, 0),
        flat(13, 9, 255),
        test_image(1, 40),
        test_image(37, 1),
        test_image(1, 1),
    ]
}

/// Mean and max |Δ| of two images.
fn diff(a: &RgbImage, b: &RgbImage) -> (f64, u8) {
    let (mut sum, mut max) = (0u64, 0u8);
    for (x, y) in a.as_raw().iter().zip(b.as_raw()) {
        sum += u64::from(x.abs_diff(*y));
        max = max.max(x.abs_diff(*y));
    }
    (sum as f64 / a.as_raw().len().max(1) as f64, max)
}

/// Deterministic `name` at every severity on every image: within tolerance, and the same bytes.
fn same_bytes_everywhere(name: &str) {
    for img in images() {
        for s in 1..=5 {
            let key = RngKey(0);
            let gpu = host_corrupt(name, s, &img, key);
            let cpu = Corruption::new(name, s).unwrap().corrupt(&img, key);
            let what = format!("{name}/{s} {}×{}", img.width(), img.height());
            assert_close(&what, &gpu, &cpu);
            assert_eq!(
                gpu, cpu,
                "{what}: the same f64 operations give the same bytes"
            );
        }
    }
}

#[test]
fn gaussian_blur_matches_the_cpu_bytes_at_every_severity() {
    same_bytes_everywhere("gaussian_blur");
}

#[test]
fn zoom_blur_matches_the_cpu_bytes_at_every_severity() {
    same_bytes_everywhere("zoom_blur");
}

#[test]
fn defocus_blur_matches_the_cpu_at_every_severity() {
    let (mut worst_mean, mut worst_max) = (0.0f64, 0u8);
    for img in images() {
        for s in 1..=5 {
            let key = RngKey(0);
            let gpu = host_corrupt("defocus_blur", s, &img, key);
            let cpu = Corruption::new("defocus_blur", s)
                .unwrap()
                .corrupt(&img, key);
            let what = format!("defocus_blur/{s} {}×{}", img.width(), img.height());
            assert_close(&what, &gpu, &cpu);
            let (mean, max) = diff(&gpu, &cpu);
            worst_mean = worst_mean.max(mean);
            worst_max = worst_max.max(max);
        }
    }
    eprintln!(
        "defocus_blur: GPU − CPU over all images and severities: worst mean |Δ| {worst_mean:.5}, max {worst_max}"
    );
    // The direct correlation and the CPU's exact disk sums round differently only where a value
    // sits within ~1e-12 of a byte boundary.
    assert!(
        worst_max <= 1 && worst_mean < 1e-3,
        "mean {worst_mean}, max {worst_max}"
    );
}

/// Runs motion_blur at severity `s` with the angle fixed.
fn host_motion_at(img: &RgbImage, s: u8, angle: f64) -> RgbImage {
    let mut l = HostLauncher::new();
    let (src, dst) = l.images(img);
    corruption::motion_blur_at(&mut l, s, src, dst, angle).unwrap();
    l.image(dst)
}

#[test]
fn motion_blur_at_a_fixed_angle_matches_the_cpu_bytes() {
    for img in images() {
        for s in 1..=5 {
            let blur::MotionBlurParams { radius, sigma } = blur::MOTION_BLUR[usize::from(s - 1)];
            for angle in [-45.0, -30.25, -0.5, 0.0, 12.7, 44.99] {
                let gpu = host_motion_at(&img, s, angle);
                let cpu = blur::motion_blur_at(&img, radius, sigma, angle);
                let what = format!(
                    "motion_blur/{s} at {angle}° {}×{}",
                    img.width(),
                    img.height()
                );
                assert_close(&what, &gpu, &cpu);
                assert_eq!(gpu, cpu, "{what}");
            }
        }
    }
}

#[test]
fn motion_blur_draws_its_angle_uniformly_from_the_key() {
    let img = test_image(61, 17);
    let mut angles = Vec::new();
    for k in 0..400u64 {
        let key = RngKey::new(k, "frame", "corruption/motion_blur/3");
        let gpu = host_corrupt("motion_blur", 3, &img, key);
        // The angle the kernels drew, as the taps buffer (scratch slot 6) records it.
        let mut l = HostLauncher::new();
        let (src, dst) = l.images(&img);
        assert!(corruption::corrupt(&mut l, Kind::MotionBlur, 3, src, dst, key).unwrap());
        let taps = l.scratch(6, 16).unwrap();
        let mut head = [0u8; 8];
        l.download(taps, &mut head).unwrap();
        let angle = f64::from_le_bytes(head);
        assert!((-45.0..45.0).contains(&angle), "{angle}");
        let blur::MotionBlurParams { radius, sigma } = blur::MOTION_BLUR[2];
        assert_eq!(
            gpu,
            blur::motion_blur_at(&img, radius, sigma, angle),
            "key {k}"
        );
        angles.push(angle);
    }
    // Uniform on [−45, 45): Kolmogorov–Smirnov against the uniform CDF at α = 1e-6.
    angles.sort_by(f64::total_cmp);
    let n = angles.len() as f64;
    let d = angles
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let f = (a + 45.0) / 90.0;
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max);
    assert!(d < 2.69 / n.sqrt(), "KS {d}");
}

/// The reference's walk, sequential, with each walked pixel's source given.
fn sequential_walk(px: &mut [u8], w: usize, h: usize, d: usize, source: &[usize]) {
    for y in (d + 1..=h - d).rev() {
        for x in (d + 1..=w - d).rev() {
            let (p, s) = (y * w + x, source[y * w + x]);
            for c in 0..3 {
                px[3 * p + c] = px[3 * s + c];
            }
        }
    }
}

#[test]
fn glass_walk_by_pointer_jumping_equals_the_sequential_walk() {
    for (w, h, d) in [
        (61usize, 17usize, 1usize),
        (40, 33, 2),
        (97, 64, 4),
        (10, 10, 4),
    ] {
        let img = test_image(w as u32, h as u32);
        let pixels = w * h;
        for it in 0..2i64 {
            let mut l = HostLauncher::new();
            let src = l.buffer(img.as_raw());
            let dst = l.alloc(3 * pixels).unwrap();
            let (la, lb) = (l.alloc(4 * pixels).unwrap(), l.alloc(4 * pixels).unwrap());
            let key = 0x5eed_0000 + it;
            let args =
                Args::buffers(&[l.address(la)]).ints(&[w as i64, h as i64, d as i64, key, it]);
            l.launch("rs_glass_links", pixels as u64, &args).unwrap();
            let links: Vec<i32> = l
                .read(la)
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            // Each walked pixel's source, whichever way its link encodes it.
            let source: Vec<usize> = links
                .iter()
                .map(|&v| {
                    if v >= 0 {
                        v as usize
                    } else {
                        (-(v + 1)) as usize
                    }
                })
                .collect();
            for (p, &s) in source.iter().enumerate() {
                let (y, x, sy, sx) = (p / w, p % w, s / w, s % w);
                let walked = (d + 1..=h - d).contains(&y) && (d + 1..=w - d).contains(&x);
                if walked {
                    let (dy, dx) = (sy as isize - y as isize, sx as isize - x as isize);
                    let r = -(d as isize)..d as isize;
                    assert!(r.contains(&dy) && r.contains(&dx), "{dx}, {dy}");
                } else {
                    assert_eq!(s, p);
                }
            }
            let (mut from, mut to) = (l.address(la), l.address(lb));
            for _ in 0..64 - pixels.leading_zeros() {
                let args = Args::buffers(&[from, to]).ints(&[pixels as i64]);
                l.launch("rs_glass_jump", pixels as u64, &args).unwrap();
                std::mem::swap(&mut from, &mut to);
            }
            let args =
                Args::buffers(&[l.address(src), l.address(dst), from]).ints(&[pixels as i64]);
            l.launch("rs_glass_gather", 3 * pixels as u64, &args)
                .unwrap();
            let mut want = img.as_raw().clone();
            sequential_walk(&mut want, w, h, d, &source);
            assert_eq!(l.read(dst), want, "{w}×{h}, δ {d}");
        }
    }
}

#[test]
fn glass_blur_matches_the_cpu_in_distribution_at_every_severity() {
    let img = test_image(256, 192);
    for s in 1..=5 {
        let key = RngKey::new(3, "frame", &format!("corruption/glass_blur/{s}"));
        let gpu = host_corrupt("glass_blur", s, &img, key);
        let cpu = Corruption::new("glass_blur", s).unwrap().corrupt(&img, key);
        assert_same_distribution(&format!("glass_blur/{s}"), &img, &gpu, &cpu);
    }
}

#[test]
fn glass_blur_without_a_walk_matches_the_cpu_bytes() {
    // Sides ≤ 2δ + 1: the reference's walk is empty, only the two Gaussians remain.
    for img in [
        test_image(3, 3),
        test_image(1, 40),
        flat(13, 9, 255),
        flat(13, 9, 0),
    ] {
        for s in 1..=5 {
            let gpu = host_corrupt("glass_blur", s, &img, RngKey(1));
            let cpu = Corruption::new("glass_blur", s)
                .unwrap()
                .corrupt(&img, RngKey(1));
            assert_eq!(gpu, cpu, "glass_blur/{s} {}×{}", img.width(), img.height());
        }
    }
}

#[test]
fn random_blurs_repeat_and_follow_their_key() {
    let img = test_image(61, 17);
    for name in ["glass_blur", "motion_blur"] {
        let key = RngKey::new(0, "f", &format!("corruption/{name}/3"));
        let a = host_corrupt(name, 3, &img, key);
        assert_eq!(a, host_corrupt(name, 3, &img, key), "{name}");
        assert_ne!(a, host_corrupt(name, 3, &img, RngKey(key.0 ^ 1)), "{name}");
    }
}

/// A 1280×720 frame with texture at every scale (gradients plus hashed noise), for the exactness
/// of the deterministic blurs at video size.
fn frame_720p() -> RgbImage {
    RgbImage::from_fn(1280, 720, |x, y| {
        let hash = (x.wrapping_mul(0x9e37_79b1) ^ y.wrapping_mul(0x85eb_ca77)).rotate_left(13);
        let n = (hash.wrapping_mul(0xc2b2_ae35) >> 24) as u8;
        image::Rgb([
            (x / 5) as u8 ^ (n & 0x0f),
            ((y * 255 / 719) as u8).wrapping_add(n >> 5),
            n,
        ])
    })
}

#[test]
fn deterministic_blurs_give_the_cpu_bytes_on_a_720p_frame() {
    let img = frame_720p();
    for name in ["gaussian_blur", "zoom_blur", "defocus_blur"] {
        for s in [1, 5] {
            let gpu = host_corrupt(name, s, &img, RngKey(0));
            let cpu = Corruption::new(name, s).unwrap().corrupt(&img, RngKey(0));
            let what = format!("{name}/{s} 1280×720");
            assert_close(&what, &gpu, &cpu);
            let (mean, max) = diff(&gpu, &cpu);
            eprintln!("{what}: mean |Δ| {mean:.6}, max {max}");
            if name != "defocus_blur" {
                assert_eq!(gpu, cpu, "{what}");
            }
        }
    }
}
