//! Our ImageNet-C corruptions against the reference implementation (imagecorruptions 1.1.2, fixtures
//! made by `scripts/make_corruption_fixtures.py`, see tests/fixtures/corruptions/README.md):
//! deterministic corruptions pixel by pixel (mean |Δ| ≤ 0.5, max |Δ| ≤ 2 on 0..255), random ones in
//! distribution (per-channel mean and spread of the change they make). Every corruption robustream
//! lists is checked at every severity; one without a fixture fails.

use std::path::PathBuf;

use image::RgbImage;
use robustream::scenario::RngKey;
use robustream::scenario::corruption::{CORRUPTIONS, Corruption, SEVERITIES};
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corruptions")
}

fn load(rel: &str) -> RgbImage {
    image::open(fixtures().join(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .to_rgb8()
}

fn stats() -> Value {
    let text = std::fs::read_to_string(fixtures().join("photo224_stats.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// (mean |Δ|, max |Δ|) between two images of one size.
fn compare(a: &RgbImage, b: &RgbImage) -> (f64, u8) {
    assert_eq!(a.dimensions(), b.dimensions());
    let (mut sum, mut max) = (0u64, 0u8);
    for (x, y) in a.as_raw().iter().zip(b.as_raw()) {
        let d = x.abs_diff(*y);
        sum += u64::from(d);
        max = max.max(d);
    }
    (sum as f64 / a.as_raw().len() as f64, max)
}

/// Per channel mean and standard deviation of (output − input) over `runs` keyed draws.
fn change_stats(c: &Corruption, input: &RgbImage, runs: u64) -> ([f64; 3], [f64; 3]) {
    let (mut s, mut s2, mut n) = ([0f64; 3], [0f64; 3], 0f64);
    for run in 0..runs {
        let out = c.corrupt(input, RngKey::new(run, "photo224.png", "fidelity"));
        for (o, i) in out
            .as_raw()
            .chunks_exact(3)
            .zip(input.as_raw().chunks_exact(3))
        {
            for ch in 0..3 {
                let d = f64::from(o[ch]) - f64::from(i[ch]);
                s[ch] += d;
                s2[ch] += d * d;
            }
        }
        n += (input.width() * input.height()) as f64;
    }
    let mean = s.map(|v| v / n);
    let std = std::array::from_fn(|ch| (s2[ch] / n - mean[ch] * mean[ch]).max(0.0).sqrt());
    (mean, std)
}

fn triple(v: &Value) -> [f64; 3] {
    std::array::from_fn(|i| v[i].as_f64().unwrap())
}

#[test]
fn every_corruption_matches_the_reference() {
    let photo = load("photo224.png");
    let small = load("small.png");
    let stats = stats();
    let mut failures = Vec::new();
    for (name, _) in CORRUPTIONS {
        let entry = &stats["corruptions"][name];
        assert!(entry.is_object(), "no reference statistics for {name}");
        for sev in SEVERITIES {
            let c = Corruption::new(name, sev).unwrap();
            if entry["deterministic"].as_bool().unwrap() {
                for (input, dir) in [(&photo, "photo224"), (&small, "small")] {
                    let want = load(&format!("{dir}/{name}_{sev}.png"));
                    let got = c.corrupt(input, RngKey(0));
                    let (mad, max) = compare(&got, &want);
                    if mad > 0.5 || max > 2 {
                        failures.push(format!(
                            "{name}/{sev} on {dir}: mean |Δ| {mad:.3}, max |Δ| {max}"
                        ));
                    }
                }
            } else {
                let r = &entry["severities"][usize::from(sev - 1)];
                let (mean, std) = change_stats(&c, &photo, 8);
                let (ref_mean, ref_std) = (triple(&r["diff_mean"]), triple(&r["diff_std"]));
                for ch in 0..3 {
                    // Means: within 3 % of the change's spread (they are near 0 for symmetric noise);
                    // spreads: within 3 %.
                    let mean_ok = (mean[ch] - ref_mean[ch]).abs() <= 0.03 * ref_std[ch] + 0.1;
                    let std_ok = (std[ch] - ref_std[ch]).abs() <= 0.03 * ref_std[ch] + 0.1;
                    if !(mean_ok && std_ok) {
                        failures.push(format!(
                            "{name}/{sev} channel {ch}: change mean {:.3} vs {:.3}, sd {:.3} vs {:.3}",
                            mean[ch], ref_mean[ch], std[ch], ref_std[ch]
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "differences from imagecorruptions 1.1.2:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_comparison_has_teeth() {
    // Neighbouring severities must not pass for each other, or the tolerances above would be too loose.
    let photo = load("photo224.png");
    let got = Corruption::new("contrast", 1)
        .unwrap()
        .corrupt(&photo, RngKey(0));
    let (mad, _) = compare(&got, &load("photo224/contrast_2.png"));
    assert!(mad > 0.5, "contrast 1 vs 2: {mad}");
    let c = Corruption::new("gaussian_noise", 2).unwrap();
    let (_, std) = change_stats(&c, &photo, 2);
    let r = &stats()["corruptions"]["gaussian_noise"]["severities"][0];
    let ref_std = triple(&r["diff_std"]);
    assert!(
        (std[0] - ref_std[0]).abs() > 0.03 * ref_std[0] + 0.1,
        "noise 2 vs 1"
    );
}
