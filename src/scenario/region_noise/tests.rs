use super::*;
use crate::scenario::test_util::ExpectFailure;
use image::{Luma, Rgb};

#[test]
fn quantiles_match_known_values_and_the_table_is_a_unit_normal() {
    assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-12);
    assert!((normal_quantile(0.025) + 1.959_963_984_540_054).abs() < 1e-12);
    assert!((normal_quantile(0.841_344_746_068_542_9) - 1.0).abs() < 1e-12);
    assert!((normal_quantile(1e-6) + 4.753_424_308_822_899).abs() < 1e-10);
    assert!(normal_quantile(0.5).abs() < 1e-15);
    let t = normal_table();
    assert_eq!(t.len(), NORMAL_LEVELS);
    assert!(t.windows(2).all(|p| p[0] < p[1]));
    assert!((0..NORMAL_LEVELS).all(|i| t[i] == -t[NORMAL_LEVELS - 1 - i]));
    let m = |k: i32| t.iter().map(|&v| f64::from(v).powi(k)).sum::<f64>() / t.len() as f64;
    assert!(m(1).abs() < 1e-12);
    assert!((m(2) - 1.0).abs() < 1e-6, "{}", m(2));
    assert!((m(4) - 3.0).abs() < 0.01, "kurtosis {}", m(4));
    // The extreme level: Φ⁻¹(0.5 / 2¹⁶) ≈ −4.33 (a hair more after the unit-variance scaling).
    assert!((-4.36..-4.32).contains(&t[0]), "{}", t[0]);
}

fn gray(w: u32, h: u32, v: u8) -> RgbImage {
    RgbImage::from_pixel(w, h, Rgb([v, v, v]))
}

/// Object in the left half.
fn left_half(w: u32, h: u32) -> GrayImage {
    GrayImage::from_fn(w, h, |x, _| Luma([if x < w / 2 { 255 } else { 0 }]))
}

fn invert(m: &GrayImage) -> GrayImage {
    GrayImage::from_fn(m.width(), m.height(), |x, y| {
        Luma([if m.get_pixel(x, y).0[0] == 0 { 9 } else { 0 }])
    })
}

/// The f64 reference of the kernel: recompute the indices and apply the definition directly.
fn reference(
    image: &RgbImage,
    mask: &GrayImage,
    fg: bool,
    l2: bool,
    sigma: f64,
    rng: RngKey,
) -> Vec<u8> {
    let (w, h) = image.dimensions();
    let t = normal_table();
    let mut n = Vec::new();
    let mut inside = Vec::new();
    let mut idx = vec![0u16; (w as usize * 3).div_ceil(4) * 4];
    for y in 0..h {
        row_indices(rng, y, &mut idx);
        for e in 0..w as usize * 3 {
            n.push(f64::from(t[usize::from(idx[e])]));
            inside.push((mask.get_pixel(e as u32 / 3, y).0[0] != 0) == fg);
        }
    }
    let scale = if l2 {
        let norm: f64 = n
            .iter()
            .zip(&inside)
            .filter(|p| *p.1)
            .map(|(v, _)| v * v)
            .sum::<f64>()
            .sqrt();
        sigma * (f64::from(w * h)).sqrt() / 224.0 / norm
    } else {
        sigma
    };
    image
        .as_raw()
        .iter()
        .zip(n.iter().zip(&inside))
        .map(|(&v, (&n, &inside))| {
            if !inside {
                return v;
            }
            let x = (f64::from(v) / 255.0 + scale * n).clamp(0.0, 1.0);
            (x * 255.0 + 0.5).floor() as u8
        })
        .collect()
}

/// Elements where `a` and `b` differ, and the largest difference.
fn diff(a: &[u8], b: &[u8]) -> (usize, u8) {
    let d: Vec<u8> = a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).collect();
    (
        d.iter().filter(|&&v| v != 0).count(),
        d.into_iter().max().unwrap_or(0),
    )
}

#[test]
fn linf_and_l2_follow_the_definitions_with_clamping_and_rounding() {
    // A ramp with values near both ends, so that clamping happens at σ = 0.75.
    let img = RgbImage::from_fn(37, 11, |x, y| {
        Rgb([(x * 7) as u8, (y * 23) as u8, 255 - (x * 7) as u8])
    });
    let mask = GrayImage::from_fn(37, 11, |x, y| Luma([u8::from((x + y) % 5 < 2) * 200]));
    let rng = RngKey::new(3, "f", "region_noise/linf/0.75/t1");
    for (norm, sigma) in [(Norm::Linf, 0.75), (Norm::Linf, 0.125), (Norm::L2, 30.0)] {
        for region in [Region::Foreground, Region::Background] {
            let out = region_noise(&img, &mask, region, norm, sigma, rng);
            let want = reference(
                &img,
                &mask,
                region == Region::Foreground,
                norm == Norm::L2,
                sigma,
                rng,
            );
            // f32 vs f64 can disagree only where v lands within ~1e-5 of a half.
            let (count, max) = diff(out.as_raw(), &want);
            assert!(
                max <= 1 && count <= 2,
                "{norm:?} {region:?}: {count} off, max {max}"
            );
            let clamped = out.as_raw().iter().filter(|&&v| v == 0 || v == 255).count();
            if sigma == 0.75 {
                assert!(clamped > 100, "{clamped}");
            }
        }
    }
}

#[test]
fn fg_and_bg_share_the_noise_and_touch_only_their_region() {
    let img = gray(64, 48, 128);
    let mask = left_half(64, 48);
    let rng = RngKey::new(0, "f", "region_noise/linf/0.25/t1");
    for norm in [Norm::Linf, Norm::L2] {
        let fg = region_noise(&img, &mask, Region::Foreground, norm, 0.25, rng);
        let bg = region_noise(&img, &mask, Region::Background, norm, 0.25, rng);
        // The background version of the inverted mask perturbs the same elements with the same
        // noise and the same norm: identical output.
        let bg_inv = region_noise(&img, &invert(&mask), Region::Background, norm, 0.25, rng);
        assert_eq!(fg, bg_inv, "{norm:?}");
        for (x, y, p) in fg.enumerate_pixels() {
            let q = bg.get_pixel(x, y);
            if x < 32 {
                assert_eq!(q.0, [128; 3]);
            } else {
                assert_eq!(p.0, [128; 3]);
            }
        }
        // Another trial's key gives other noise.
        let other = RngKey::new(0, "f", "region_noise/linf/0.25/t2");
        assert_ne!(
            fg,
            region_noise(&img, &mask, Region::Foreground, norm, 0.25, other)
        );
    }
}

#[test]
fn noise_has_the_requested_spread_and_l2_norm() {
    let (w, h) = (224u32, 224u32);
    let img = gray(w, h, 128);
    let mask = left_half(w, h);
    let rng = RngKey::new(1, "f", "k");
    // linf σ = 0.125 on a mid-gray: the noise is 31.9 u8 steps wide, clipping is negligible.
    let out = region_noise(&img, &mask, Region::Foreground, Norm::Linf, 0.125, rng);
    let d: Vec<f64> = out
        .enumerate_pixels()
        .filter(|(x, _, _)| *x < w / 2)
        .flat_map(|(_, _, p)| p.0.map(|v| f64::from(v) - 128.0))
        .collect();
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    let sd = (d.iter().map(|v| v * v).sum::<f64>() / d.len() as f64 - mean * mean).sqrt();
    assert!(mean.abs() < 0.3, "{mean}");
    assert!((sd - 31.875).abs() < 0.3, "{sd}");
    // l2 = 30 at 224²: ‖δ‖₂ over the region is 30 (u8 scale: 30·255), up to rounding.
    let out = region_noise(&img, &mask, Region::Background, Norm::L2, 30.0, rng);
    let sq: f64 = out
        .as_raw()
        .iter()
        .map(|&v| (f64::from(v) - 128.0).powi(2))
        .sum();
    let norm = sq.sqrt() / 255.0;
    assert!((norm - 30.0).abs() < 0.05, "{norm}");
}

#[test]
fn l2_budget_scales_with_the_frame_size() {
    // Same fraction of the frame at 448×448: per-element spread equals the 224² one.
    let spread = |side: u32| {
        let img = gray(side, side, 128);
        let mask = left_half(side, side);
        let out = region_noise(&img, &mask, Region::Foreground, Norm::L2, 30.0, RngKey(5));
        let d: Vec<f64> = out.as_raw().iter().map(|&v| f64::from(v) - 128.0).collect();
        let n = (d.len() / 2) as f64; // half the elements are in the region
        (d.iter().map(|v| v * v).sum::<f64>() / n).sqrt()
    };
    let (a, b) = (spread(224), spread(448));
    assert!((a / b - 1.0).abs() < 0.01, "{a} {b}");
}

#[test]
fn output_does_not_depend_on_the_thread_count() {
    let img = RgbImage::from_fn(301, 203, |x, y| Rgb([x as u8, y as u8, (x ^ y) as u8]));
    let mask = GrayImage::from_fn(301, 203, |x, y| Luma([u8::from((x / 7 + y / 5) % 3 == 0)]));
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            [Norm::Linf, Norm::L2]
                .map(|norm| region_noise(&img, &mask, Region::Background, norm, 0.5, RngKey(11)))
        })
    };
    assert!(run(1) == run(4));
}

#[test]
fn keys_parse_and_fg_bg_share_the_rng_key() {
    let fg = RegionNoise::from_key("region_noise/fg/linf/0.25/t2").unwrap();
    let bg = RegionNoise::from_key("region_noise/bg/linf/0.25/t2").unwrap();
    assert_eq!(fg.key(), "region_noise/fg/linf/0.25/t2");
    assert_eq!(fg.rng_key(), "region_noise/linf/0.25/t2");
    assert_eq!(fg.rng_key(), bg.rng_key());
    assert_ne!(
        fg.rng_key(),
        RegionNoise::from_key("region_noise/fg/linf/0.25/t3")
            .unwrap()
            .rng_key()
    );
    assert_eq!(
        RegionNoise::from_key("region_noise/bg/l2/180/t3")
            .unwrap()
            .sigma,
        180.0
    );
    for bad in [
        "region_noise/fg/linf/0.3/t1",
        "region_noise/fg/linf/.25/t1",
        "region_noise/fg/l2/0.25/t1",
        "region_noise/fg/linf/0.25/t4",
        "region_noise/fg/linf/0.25/t0",
        "region_noise/fg/linf/0.25/t01",
        "region_noise/fg/linf/0.25",
        "region_noise/fg/linf/0.25/t1/x",
        "region_noise/xx/linf/0.25/t1",
    ] {
        assert!(RegionNoise::from_key(bad).is_none(), "{bad}");
    }
}

#[test]
fn scenario_needs_object_and_background_pixels() {
    let img = gray(8, 8, 50);
    let s = RegionNoise::from_key("region_noise/bg/l2/60/t1").unwrap();
    let rng = RngKey(0);
    assert!(matches!(
        s.apply(&ScenarioInput::new(&img), rng),
        Err(ScenarioError::NeedsMask(_))
    ));
    let empty = GrayImage::new(8, 8);
    let err = s
        .apply(&ScenarioInput::new(&img).with_mask(Some(&empty)), rng)
        .expect_failure();
    assert!(err.to_string().contains("mask is empty"), "{err}");
    let full = GrayImage::from_pixel(8, 8, Luma([255]));
    let err = s
        .apply(&ScenarioInput::new(&img).with_mask(Some(&full)), rng)
        .expect_failure();
    assert!(err.to_string().contains("whole frame"), "{err}");
    let half = left_half(8, 8);
    let out = s
        .apply(&ScenarioInput::new(&img).with_mask(Some(&half)), rng)
        .unwrap();
    assert_ne!(out, img);
}

#[test]
fn catalog_lists_the_grid_and_groups() {
    let (keys, groups) = catalog();
    assert_eq!(keys.len(), 2 * 6 * 3 * 2);
    assert_eq!(keys[0].name, "region_noise/fg/linf/0.125/t1");
    assert_eq!(keys[1].name, "region_noise/bg/linf/0.125/t1");
    let rfs = &groups[0];
    assert_eq!(rfs.name, "rfs");
    assert_eq!(
        rfs.members,
        [
            "region_noise/fg/linf/0.25/t1",
            "region_noise/bg/linf/0.25/t1",
            "region_noise/fg/linf/0.25/t2",
            "region_noise/bg/linf/0.25/t2",
            "region_noise/fg/linf/0.25/t3",
            "region_noise/bg/linf/0.25/t3",
        ]
    );
    for k in &keys {
        assert_eq!(build(&k.name).unwrap().key(), k.name);
    }
}
