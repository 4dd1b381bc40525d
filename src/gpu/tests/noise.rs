//! The noise corruptions' GPU kernels against `scenario::corruption::noise`.

use image::RgbImage;

use super::{assert_same_distribution, flat, host_corrupt, test_image};
use crate::rng::RngKey;
use crate::scenario::corruption::Corruption;

#[test]
fn gaussian_noise_matches_the_cpu_in_distribution_at_every_severity() {
    let img = test_image(256, 192);
    for s in 1..=5 {
        let key = RngKey::new(3, "frame", &format!("corruption/gaussian_noise/{s}"));
        let gpu = host_corrupt("gaussian_noise", s, &img, key);
        let cpu = Corruption::new("gaussian_noise", s)
            .unwrap()
            .corrupt(&img, key);
        assert_same_distribution(&format!("gaussian_noise/{s}"), &img, &gpu, &cpu);
    }
}

#[test]
fn gaussian_noise_repeats_and_follows_its_key() {
    let img = test_image(97, 31); // an element count that is not a multiple of 4
    let key = RngKey::new(0, "f", "corruption/gaussian_noise/3");
    let a = host_corrupt("gaussian_noise", 3, &img, key);
    assert_eq!(a, host_corrupt("gaussian_noise", 3, &img, key));
    assert_ne!(
        a,
        host_corrupt("gaussian_noise", 3, &img, RngKey(key.0 ^ 1))
    );
}

/// Every input value of `img` at every severity of `name`: the GPU and CPU outputs agree in
/// distribution.
fn matches_in_distribution(name: &str, img: &RgbImage) {
    for s in 1..=5 {
        let key = RngKey::new(5, "frame", &format!("corruption/{name}/{s}"));
        let gpu = host_corrupt(name, s, img, key);
        let cpu = Corruption::new(name, s).unwrap().corrupt(img, key);
        assert_same_distribution(&format!("{name}/{s}"), img, &gpu, &cpu);
    }
}

/// Repeats with its key, changes with another, and runs on odd sizes and a 1-pixel-wide frame.
fn repeats_and_follows_its_key(name: &str) {
    for img in [test_image(97, 31), test_image(61, 17), test_image(1, 40)] {
        let key = RngKey::new(0, "f", &format!("corruption/{name}/3"));
        let a = host_corrupt(name, 3, &img, key);
        assert_eq!(a, host_corrupt(name, 3, &img, key), "{name}");
        if img.width() > 1 {
            assert_ne!(a, host_corrupt(name, 3, &img, RngKey(key.0 ^ 1)), "{name}");
        }
    }
}

#[test]
fn shot_noise_matches_the_cpu_in_distribution_at_every_severity() {
    matches_in_distribution("shot_noise", &test_image(256, 192));
    matches_in_distribution("shot_noise", &flat(64, 64, 100));
}

#[test]
fn shot_noise_keeps_black_and_repeats() {
    for s in 1..=5 {
        let black = flat(61, 17, 0);
        let key = RngKey::new(1, "f", "corruption/shot_noise");
        assert_eq!(host_corrupt("shot_noise", s, &black, key), black);
    }
    repeats_and_follows_its_key("shot_noise");
}

#[test]
fn shot_noise_draws_the_cpu_tables_levels_exactly() {
    // A 64-bit draw maps to the entry the CPU's ShotTable::sample picks for the same bits, so
    // over many elements the level frequencies are the table's probabilities.
    let img = flat(512, 512, 128);
    let key = RngKey::new(9, "f", "corruption/shot_noise/5");
    let gpu = host_corrupt("shot_noise", 5, &img, key);
    let c = crate::scenario::corruption::noise::SHOT_PHOTONS[4];
    let x = 128.0 / 255.0 * c;
    let n = gpu.as_raw().len() as f64;
    // Level k of c = 3 photons: byte floor8(k / 3) for k < 3, 255 for k ≥ 3.
    let mut pk = (-x).exp();
    let mut tail = 1.0;
    for k in 0..3u32 {
        let byte = (f64::from(k) / c * 255.0) as u8;
        let got = gpu.as_raw().iter().filter(|&&b| b == byte).count() as f64 / n;
        let se = (pk * (1.0 - pk) / n).sqrt();
        assert!((got - pk).abs() < 5.0 * se, "level {k}: {got} vs {pk}");
        tail -= pk;
        pk *= x / f64::from(k + 1);
    }
    let got = gpu.as_raw().iter().filter(|&&b| b == 255).count() as f64 / n;
    let se = (tail * (1.0 - tail) / n).sqrt();
    assert!((got - tail).abs() < 5.0 * se, "tail: {got} vs {tail}");
}

#[test]
fn impulse_noise_matches_the_cpu_in_distribution_at_every_severity() {
    matches_in_distribution("impulse_noise", &test_image(256, 192));
    matches_in_distribution("impulse_noise", &flat(64, 64, 255));
}

#[test]
fn impulse_noise_leaves_unflipped_values_as_the_cpu_does() {
    // Every output byte is salt, pepper, or the CPU's floor8(v / 255 · 255) of its input.
    let img = test_image(224, 224);
    let key = RngKey::new(2, "f", "corruption/impulse_noise/1");
    let gpu = host_corrupt("impulse_noise", 1, &img, key);
    let keep = |v: u8| ((f64::from(v) / 255.0).clamp(0.0, 1.0) * 255.0) as u8;
    let mut flipped = 0usize;
    for (v, o) in img.as_raw().iter().zip(gpu.as_raw()) {
        if *o != keep(*v) {
            assert!(*o == 0 || *o == 255, "{v} became {o}");
            flipped += 1;
        }
    }
    // Fraction flipped (a flip to the value already there is invisible): about 3 %.
    let f = flipped as f64 / img.as_raw().len() as f64;
    assert!((0.027..0.033).contains(&f), "{f}");
    repeats_and_follows_its_key("impulse_noise");
}

#[test]
fn speckle_noise_matches_the_cpu_in_distribution_at_every_severity() {
    matches_in_distribution("speckle_noise", &test_image(256, 192));
    matches_in_distribution("speckle_noise", &flat(64, 64, 200));
}

#[test]
fn speckle_noise_keeps_black_and_repeats() {
    for s in 1..=5 {
        let black = flat(61, 17, 0);
        let key = RngKey::new(1, "f", "corruption/speckle_noise");
        assert_eq!(host_corrupt("speckle_noise", s, &black, key), black);
    }
    repeats_and_follows_its_key("speckle_noise");
}
