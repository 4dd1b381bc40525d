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

/// Random corruptions whose randomness is coarse: one draw (a whole plasma map, a texture and a crop)
/// sets the change of the entire image, so the per-run mean of the change varies far more than the
/// shared tolerance (3 % of the change sd + 0.1). Measured with imagecorruptions 1.1.2 on photo224 (400
/// numpy seeds, groups of 8/20): fog's per-run change mean has sd 11.5–14.8 (`run_std.diff_mean` in the
/// fixture), so an 8-run mean has sd 4.5–6.5 and the fixture's own 20-run mean 2.8–4.1, against a shared
/// tolerance of 1.5–1.9; frost: per-run sd 10.5–24, 8-run mean sd 4–11, tolerance 0.7–1.4. The 8-run
/// pooled sd has sd 1.8–2.7 (fog) and 1.6–3.1 (frost), the 20-run 1.0–1.9 (tolerance 0.6–1.9). Such
/// corruptions run `runs` keyed draws and allow, on top of the shared tolerance, 3 standard errors of the
/// difference of two means (`3·√(1/runs + 1/20)·run_std`, 20 = the fixture's seed count) for the change
/// mean, and `sd_factor` times that for the change sd (the per-run spread of the change sd is at most
/// 0.6× the per-run spread of the change mean for fog and frost, measured as above). With 400 runs on
/// each side ours agree with the reference within 0.5 (fog) and 2.0 (frost) on every channel and
/// severity.
/// spatter: a few smooth blobs per frame (σ up to 4) set the change sd of a run: per-run sd of the
/// change sd 1.0–1.6 against a per-run sd of the change mean of only 0.27–0.82 (ratio 1.9–3.9, hence
/// factor 4); the fixture's own 20-seed sd is off by up to 0.4 (severity 1: 4.21 vs 4.62 over 400 seeds,
/// shared tolerance 0.23). Over 400 runs each, ours and the reference agree within 0.1 everywhere.
/// snow: the flake field is zoomed up to 4.5×, so a run has few independent values; with 8 runs the
/// change sd missed the shared tolerance by 0.07 on one channel (24.54 vs 25.47), with 64 runs the worst
/// deviation is 0.48 of the shared tolerance.
const COARSE: &[(&str, u64, f64)] = &[
    ("frost", 64, 0.6),
    ("fog", 64, 0.6),
    ("spatter", 64, 4.0),
    ("snow", 64, 0.6),
];

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
                let coarse = COARSE.iter().find(|(n, _, _)| n == name);
                let runs = coarse.map_or(8, |&(_, runs, _)| runs);
                let (mean, std) = change_stats(&c, &photo, runs);
                let (ref_mean, ref_std) = (triple(&r["diff_mean"]), triple(&r["diff_std"]));
                let run_std = triple(&r["run_std"]["diff_mean"]);
                for ch in 0..3 {
                    // Means: within 3 % of the change's spread (they are near 0 for symmetric noise);
                    // spreads: within 3 %. Coarse corruptions: plus their sampling allowance (COARSE).
                    let (extra_mean, extra_std) = coarse.map_or((0.0, 0.0), |&(_, runs, f)| {
                        let se = 3.0 * (1.0 / runs as f64 + 1.0 / 20.0).sqrt() * run_std[ch];
                        (se, f * se)
                    });
                    let mean_ok =
                        (mean[ch] - ref_mean[ch]).abs() <= 0.03 * ref_std[ch] + 0.1 + extra_mean;
                    let std_ok =
                        (std[ch] - ref_std[ch]).abs() <= 0.03 * ref_std[ch] + 0.1 + extra_std;
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
