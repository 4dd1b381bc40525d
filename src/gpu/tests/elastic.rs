//! elastic_transform's GPU kernels against `scenario::corruption::elastic`: on the CPU's own raw
//! displacement fields the smoothing gives the CPU's float32 displacements bit for bit and the
//! resampling its bytes; the GPU's own fields (Philox) match the CPU's in distribution.

use image::RgbImage;

use super::weather::assert_same_means;
use super::{flat, host_corrupt, test_image};
use crate::gpu::corruption::elastic as ge;
use crate::gpu::host::HostLauncher;
use crate::gpu::launch::Launcher;
use crate::key::Corruption as Kind;
use crate::rng::RngKey;
use crate::scenario::corruption::elastic;

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Runs the GPU's deterministic part on `raw` fields: (output, float32 displacements).
fn gpu_warp(img: &RgbImage, raw: &[f64], alpha: f64) -> (RgbImage, Vec<f32>) {
    let mut l = HostLauncher::new();
    let (src, dst) = l.images(img);
    let bytes: Vec<u8> = raw.iter().flat_map(|v| v.to_le_bytes()).collect();
    let field = l.buffer(&bytes);
    ge::warp(&mut l, src, dst, field, alpha).unwrap();
    let out = l.image(dst);
    let smooth = l.scratch(2, 0).unwrap();
    let d = f64s(&l.read(smooth)[..raw.len() * 8])
        .iter()
        .map(|v| (v * alpha) as f32)
        .collect();
    (out, d)
}

#[test]
fn elastic_warp_gives_the_cpus_bytes_on_the_cpus_fields() {
    let frames = [
        test_image(224, 224),
        test_image(61, 17),
        flat(9, 7, 0),
        flat(9, 7, 255),
        test_image(1, 40),
        test_image(40, 1),
        test_image(1, 1),
    ];
    for img in &frames {
        let (w, h) = img.dimensions();
        for s in 1..=5u8 {
            let alpha = elastic::ELASTIC_ALPHA[usize::from(s - 1)];
            let key = RngKey::new(2, "frame", &format!("corruption/elastic_transform/{s}"));
            let raw = elastic::raw_displacements(w as usize, h as usize, key);
            let (gpu, d) = gpu_warp(img, &raw, alpha);
            let want = elastic::smooth_displacements(&raw, w as usize, h as usize, alpha);
            let what = format!("elastic_transform/{s} {w}×{h}");
            assert_eq!(d, want, "{what}: displacements");
            let cpu = elastic::elastic_transform(img, alpha, key);
            assert_eq!(gpu, cpu, "{what}: the same fields give the same bytes");
        }
    }
    // Displacements far outside the frame: every border reflection.
    for (w, h, alpha) in [(37u32, 23u32, 400.0), (203, 17, 2000.0), (9, 50, 60.0)] {
        let img = test_image(w, h);
        let raw = elastic::raw_displacements(w as usize, h as usize, RngKey(9));
        let (gpu, d) = gpu_warp(&img, &raw, alpha);
        assert_eq!(
            d,
            elastic::smooth_displacements(&raw, w as usize, h as usize, alpha)
        );
        assert_eq!(gpu, elastic::resample(&img, &d), "{w}×{h} α {alpha}");
    }
}

#[test]
fn elastic_fields_are_uniform_like_the_cpus() {
    let (w, h) = (300usize, 200usize);
    let mut l = HostLauncher::new();
    let img = test_image(w as u32, h as u32);
    let (src, dst) = l.images(&img);
    let key = RngKey::new(4, "frame", "corruption/elastic_transform/3");
    crate::gpu::corruption::corrupt(&mut l, Kind::ElasticTransform, 3, src, dst, key).unwrap();
    let field = l.scratch(0, 0).unwrap();
    let raw = f64s(&l.read(field)[..2 * w * h * 8]);
    let max_d = elastic::ELASTIC_NOISE_FRACTION * h as f64;
    let m = raw.len() as f64;
    for (k, v) in raw.iter().enumerate() {
        assert!((-max_d..max_d).contains(v), "value {k}: {v}");
    }
    let mean = raw.iter().sum::<f64>() / m;
    let var = raw.iter().map(|v| v * v).sum::<f64>() / m - mean * mean;
    let want_var = max_d * max_d / 3.0;
    assert!(mean.abs() < 5.0 * (want_var / m).sqrt(), "mean {mean}");
    // Var of U²: max_d⁴ (1/5 − 1/9).
    let se = (max_d.powi(4) * (1.0 / 5.0 - 1.0 / 9.0) / m).sqrt();
    assert!(
        (var - want_var).abs() < 5.0 * se,
        "variance {var}, want {want_var}"
    );
    // dx and dy independent of each other and of the neighbour.
    let c = raw.chunks_exact(2).map(|p| p[0] * p[1]).sum::<f64>() / (m / 2.0);
    assert!(c.abs() < 5.0 * want_var / (m / 2.0).sqrt(), "dx·dy {c}");
    let c = raw.windows(3).step_by(2).map(|p| p[0] * p[2]).sum::<f64>() / (m / 2.0);
    assert!(c.abs() < 5.0 * want_var / (m / 2.0).sqrt(), "dx·dx' {c}");
}

/// Statistics of a corrupted frame against its input: mean, standard deviation, mean absolute
/// change, mean absolute horizontal and vertical neighbour difference.
fn warp_stats(input: &RgbImage, out: &RgbImage) -> Vec<f64> {
    let (w, h) = out.dimensions();
    let v: Vec<f64> = out.as_raw().iter().map(|&b| f64::from(b)).collect();
    let m = v.len() as f64;
    let mean = v.iter().sum::<f64>() / m;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / m).sqrt();
    let change = input
        .as_raw()
        .iter()
        .zip(&v)
        .map(|(&a, b)| (f64::from(a) - b).abs())
        .sum::<f64>()
        / m;
    let (row, h) = (w as usize * 3, h as usize);
    let (mut dx, mut dy) = (0.0, 0.0);
    for y in 0..h {
        for x in 0..row {
            if x + 3 < row {
                dx += (v[y * row + x] - v[y * row + x + 3]).abs();
            }
            if y + 1 < h {
                dy += (v[y * row + x] - v[(y + 1) * row + x]).abs();
            }
        }
    }
    vec![mean, sd, change, dx / m, dy / m]
}

#[test]
fn elastic_transform_matches_the_cpu_in_distribution_at_every_severity() {
    let names = ["mean", "sd", "|change|", "|dx|", "|dy|"];
    for img in [test_image(128, 96), test_image(61, 17)] {
        for s in 1..=5u8 {
            let alpha = elastic::ELASTIC_ALPHA[usize::from(s - 1)];
            let (mut gpu, mut cpu) = (Vec::new(), Vec::new());
            for k in 0..24 {
                let key = RngKey::new(k, "frame", &format!("corruption/elastic_transform/{s}"));
                let g = host_corrupt("elastic_transform", s, &img, key);
                gpu.push(warp_stats(&img, &g));
                let c = elastic::elastic_transform(&img, alpha, key);
                cpu.push(warp_stats(&img, &c));
            }
            let what = format!("elastic_transform/{s} {:?}", img.dimensions());
            assert_same_means(&what, &names, &gpu, &cpu);
        }
    }
}

#[test]
fn elastic_transform_repeats_and_follows_its_key() {
    let img = test_image(61, 17);
    let key = RngKey::new(0, "f", "corruption/elastic_transform/5");
    let a = host_corrupt("elastic_transform", 5, &img, key);
    assert_eq!(a, host_corrupt("elastic_transform", 5, &img, key));
    assert_ne!(
        a,
        host_corrupt("elastic_transform", 5, &img, RngKey(key.0 ^ 1))
    );
    let one = test_image(1, 1);
    assert_eq!(host_corrupt("elastic_transform", 5, &one, key), one);
}

#[test]
fn elastic_warp_gives_the_cpus_bytes_at_video_size() {
    let img = test_image(1280, 720);
    let key = RngKey::new(1, "frame", "corruption/elastic_transform/5");
    let raw = elastic::raw_displacements(1280, 720, key);
    let (gpu, d) = gpu_warp(&img, &raw, elastic::ELASTIC_ALPHA[4]);
    assert_eq!(
        d,
        elastic::smooth_displacements(&raw, 1280, 720, elastic::ELASTIC_ALPHA[4])
    );
    assert_eq!(
        gpu,
        elastic::elastic_transform(&img, elastic::ELASTIC_ALPHA[4], key)
    );
}
