//! The JPEG round trip's GPU kernels against `kernels::jpeg::roundtrip` (and so against
//! Pillow/libjpeg-turbo): equal bytes at every quality, size and content.

use image::RgbImage;

use super::{flat, host_corrupt, test_image};
use crate::gpu::host::HostLauncher;
use crate::gpu::jpeg;
use crate::gpu::launch::DeviceImage;
use crate::kernels::jpeg as cpu;
use crate::rng::RngKey;
use crate::scenario::corruption::Corruption;
use crate::scenario::corruption::digital::JPEG_QUALITY;

/// The GPU round trip through the host build, on a launcher of its own.
fn host_roundtrip(image: &RgbImage, quality: u8) -> RgbImage {
    host_roundtrip_on(&mut HostLauncher::new(), image, quality)
}

/// The GPU round trip through the host build on `l` (so its scratch buffers carry over).
fn host_roundtrip_on(l: &mut HostLauncher, image: &RgbImage, quality: u8) -> RgbImage {
    let (src, dst) = l.images(image);
    jpeg::roundtrip(l, src, dst, quality).unwrap();
    l.image(dst)
}

/// Uniformly random bytes (a fixed xorshift stream): the worst case for the DCT's range.
fn noisy(w: u32, h: u32, seed: u64) -> RgbImage {
    let mut s = seed | 1;
    let raw = (0..w * h * 3)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 32) as u8
        })
        .collect();
    RgbImage::from_raw(w, h, raw).unwrap()
}

/// Alternating black and white pixels: saturates the inverse DCT.
fn checker(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let v = if (x + y) % 2 == 0 { 0 } else { 255 };
        image::Rgb([v, 255 - v, v])
    })
}

fn assert_same(what: &str, image: &RgbImage, quality: u8) {
    let gpu = host_roundtrip(image, quality);
    let want = cpu::roundtrip(image, quality);
    assert_eq!(gpu.dimensions(), want.dimensions(), "{what}");
    if let Some(i) = gpu
        .as_raw()
        .iter()
        .zip(want.as_raw())
        .position(|(a, b)| a != b)
    {
        let (w, p) = (image.width() as usize, i / 3);
        panic!(
            "{what} q{quality}: byte {i} (pixel {}, {} channel {}) is {} on the GPU, {} on the CPU",
            p % w,
            p / w,
            i % 3,
            gpu.as_raw()[i],
            want.as_raw()[i]
        );
    }
}

#[test]
fn jpeg_roundtrip_matches_the_cpu_at_every_quality() {
    let qualities = JPEG_QUALITY.iter().copied().chain([1, 50, 85, 95, 100]);
    for q in qualities {
        for (name, img) in [
            ("test 224²", test_image(224, 224)),
            ("test 61×17", test_image(61, 17)),
            ("noise 61×17", noisy(61, 17, q.into())),
            ("noise 40×24", noisy(40, 24, 7)),
            ("checker 33×18", checker(33, 18)),
        ] {
            assert_same(name, &img, q);
        }
    }
}

#[test]
fn jpeg_roundtrip_matches_the_cpu_at_every_size_around_blocks_and_mcus() {
    // Sizes at and around the 8-pixel block and 16-pixel MCU, and the ≤ 2 chroma-column case
    // (width ≤ 4: plain replication instead of fancy upsampling).
    let sizes = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33];
    for &w in &sizes {
        for &h in &sizes {
            let q = [7, 25, 85][(w + h) as usize % 3];
            assert_same(
                &format!("noise {w}×{h}"),
                &noisy(w, h, u64::from(w * 97 + h)),
                q,
            );
            assert_same(&format!("test {w}×{h}"), &test_image(w, h), q);
        }
    }
    for (w, h) in [(17, 9), (1, 41), (41, 1), (100, 3), (3, 100)] {
        for q in [7, 85] {
            assert_same(&format!("noise {w}×{h}"), &noisy(w, h, 5), q);
            assert_same(&format!("test {w}×{h}"), &test_image(w, h), q);
        }
    }
}

#[test]
fn jpeg_roundtrip_matches_the_cpu_on_flat_images() {
    for v in [0, 1, 127, 128, 254, 255] {
        for (w, h) in [(1, 1), (16, 16), (61, 17)] {
            for q in [1, 7, 85, 100] {
                assert_same(&format!("flat {v} {w}×{h}"), &flat(w, h, v), q);
            }
        }
    }
    for rgb in [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0]] {
        let img = RgbImage::from_pixel(19, 13, image::Rgb(rgb));
        assert_same(&format!("flat {rgb:?}"), &img, 10);
    }
}

#[test]
fn jpeg_roundtrip_reuses_its_scratch_across_sizes_and_in_place() {
    // A launcher's scratch buffers keep the last call's contents: a smaller image after a larger
    // one, and another quality, must not see them.
    let mut l = HostLauncher::new();
    for (img, q) in [
        (noisy(70, 50, 1), 7),
        (noisy(13, 11, 2), 85),
        (test_image(224, 224), 25),
        (checker(9, 30), 50),
    ] {
        assert_eq!(host_roundtrip_on(&mut l, &img, q), cpu::roundtrip(&img, q));
    }
    // In place (`stored_as_jpeg` rewrites a variant's own buffer).
    let img = noisy(37, 21, 3);
    let buf = l.buffer(img.as_raw());
    let d = DeviceImage {
        buf,
        width: 37,
        height: 21,
    };
    jpeg::roundtrip(&mut l, d, d, 85).unwrap();
    assert_eq!(l.read(buf), cpu::roundtrip(&img, 85).into_raw());
    // Mismatched sizes are an error, an empty image a no-op.
    let small = DeviceImage { width: 36, ..d };
    assert!(jpeg::roundtrip(&mut l, d, small, 85).is_err());
    let empty = DeviceImage {
        width: 0,
        height: 0,
        ..d
    };
    jpeg::roundtrip(&mut l, empty, empty, 85).unwrap();
    // Beyond the kernels' 32-bit indices: refused before any launch.
    let huge = DeviceImage {
        width: 50_000,
        height: 50_000,
        ..d
    };
    assert!(jpeg::roundtrip(&mut l, huge, huge, 85).is_err());
}

#[test]
fn jpeg_compression_matches_the_cpu_at_every_severity() {
    for img in [test_image(224, 224), noisy(61, 17, 9), flat(1, 1, 200)] {
        for s in 1..=5 {
            let key = RngKey(0);
            let gpu = host_corrupt("jpeg_compression", s, &img, key);
            let cpu = Corruption::new("jpeg_compression", s)
                .unwrap()
                .corrupt(&img, key);
            assert_eq!(gpu, cpu, "jpeg_compression/{s}: equal bytes");
        }
    }
}
