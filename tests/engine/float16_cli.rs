//! Float16 models through the binary (docs/model-description.md#float16-models): the null
//! classifier exported with a float16 input and output runs end to end and predicts what the
//! float32 one predicts; the demo model converted by scripts/convert_float16.py agrees with the
//! float32 one on the demo photos, `compare` sets the two runs side by side and `bench` runs it.

use std::path::{Path, PathBuf};

use crate::util::*;

/// The fixture description `name` (tests/fixtures/engine) with absolute paths and torchvision's
/// preprocessing, whose tensor values float16 cannot all represent (the fixtures' own
/// (x − 127) / 128 it can: k / 128).
fn described(dir: &Path, name: &str) -> PathBuf {
    let fixtures = root().join("tests/fixtures/engine");
    let text = std::fs::read_to_string(fixtures.join(name)).unwrap();
    let start = text.find("[preprocess]").unwrap();
    let end = text.find("[output]").unwrap();
    let onnx = name.replace(".toml", ".onnx");
    let text = format!(
        "{}[preprocess]\npreset = \"torchvision\"\n{}",
        &text[..start],
        &text[end..]
    )
    .replace(
        &format!("\"{onnx}\""),
        &format!("{:?}", fixtures.join(&onnx)),
    )
    .replace(
        "\"null_classes.txt\"",
        &format!("{:?}", fixtures.join("null_classes.txt")),
    );
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn records_of(model: &Path, out: &Path) -> Vec<serde_json::Value> {
    let o = run(robustream()
        .args([
            "run",
            "--quiet",
            "--scenarios",
            "corruption/contrast/3,corruption/gaussian_noise/2",
        ])
        .arg("--model")
        .arg(model)
        .arg("--source")
        .arg(photo("chelsea.png"))
        .arg("--out")
        .arg(out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    records_without_timings(out)
}

#[test]
fn a_float16_model_runs_end_to_end_and_predicts_as_its_float32_twin() {
    let d = tempfile::tempdir().unwrap();
    let half = records_of(
        &described(d.path(), "null_classifier_f16.toml"),
        &d.path().join("f16"),
    );
    let full = records_of(
        &described(d.path(), "null_classifier.toml"),
        &d.path().join("f32"),
    );
    assert_eq!(half.len(), 3);
    assert_eq!(half.len(), full.len());
    for (h, f) in half.iter().zip(&full) {
        assert_eq!(h["scenario"], f["scenario"]);
        assert_eq!(h["pred"], f["pred"], "{h} {f}");
        assert_eq!(h["top5"], f["top5"], "{h} {f}");
        let (p, q) = (
            h["prob"][0].as_f64().unwrap(),
            f["prob"][0].as_f64().unwrap(),
        );
        assert!((p - q).abs() < 1e-4, "{h} {f}");
    }
}

/// The demo model converted by `scripts/convert_float16.py` (assets.sh makes it beside the float32
/// one), as its description in the cache names it.
fn fp16_model() -> PathBuf {
    let m = assets().join("models/efficientnet_lite0_fp16.toml");
    assert!(
        m.is_file()
            && assets()
                .join("models/efficientnet_lite0_fp16.onnx")
                .is_file(),
        "the float16 demo model is missing: run `bash scripts/assets.sh`"
    );
    m
}

/// The demo config on its first `limit` photos into `out`, with `model`.
fn demo_run(model: &Path, out: &Path, limit: u32) {
    let o = run(robustream()
        .args(["run", "--quiet", "--config"])
        .arg(root().join("configs/demo.toml"))
        .arg("--model")
        .arg(model)
        .args(["--limit", &limit.to_string()])
        .arg("--out")
        .arg(out));
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// Records of the demo model (float32) and its float16 conversion on the same frames.
fn demo_pair(d: &Path, limit: u32) -> (PathBuf, PathBuf) {
    let (a, b) = (d.join("fp32"), d.join("fp16"));
    demo_run(&model(), &a, limit);
    demo_run(&fp16_model(), &b, limit);
    (a, b)
}

/// The float16 file holds the weights in half the bytes: float16 initializers (the converter's
/// `--check`, run by assets.sh, checks the types, the float32 I/O and the ONNX checker).
#[test]
fn the_float16_demo_model_is_half_the_size() {
    fp16_model();
    let size = |f: &str| {
        std::fs::metadata(assets().join("models").join(f))
            .unwrap()
            .len() as f64
    };
    let ratio = size("efficientnet_lite0_fp16.onnx") / size("efficientnet_lite0.onnx");
    assert!((0.45..0.55).contains(&ratio), "{ratio}");
}

/// The converted model predicts what the float32 one predicts on the demo's first four photos
/// (44 records: clean, gaussian_noise and contrast 1..5).
///
/// Tolerance. A top-1 probability is p = σ(g), g the top logit against the log-sum-exp of the
/// others, so |Δp| ≈ p(1 − p)·|Δg|. float16 keeps 11 significant bits: one rounding moves a value
/// by up to u = 2⁻¹¹ ≈ 4.9·10⁻⁴ of itself, and a logit of ≈ 15 by ≈ 0.007. That is what the demo
/// run measured as the median |Δg| (0.0077 over its 99 records). The 4.6 million rounded weights
/// of 50 layers add up to more on some frames (ONNX Runtime's CPU provider, which runs the tests,
/// computes in float32 with those weights: docs/model-description.md#making-a-float16-model), most
/// on low-contrast variants, whose signal is small against the rounding of the weights it meets: at
/// most 0.14 (motorcycle_left.png, contrast/4, Δp = 0.029). The bound |Δg| ≤ 0.25 — about 35
/// roundings of such a logit, 1.8× the worst measured — leaves room for other CPUs' kernels. A
/// top-1 may change only where two classes are within that of each other, and then to the float32
/// runner-up: at most one record of the 44.
#[test]
fn the_float16_demo_model_agrees_with_float32_on_the_demo_photos() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = demo_pair(d.path(), 4);
    let (full, half) = (records_without_timings(&a), records_without_timings(&b));
    assert_eq!(full.len(), 44, "4 photos × 11 scenarios");
    assert_eq!(half.len(), full.len());
    let mut differ = 0;
    for (f, h) in full.iter().zip(&half) {
        assert_eq!((&f["frame"], &f["scenario"]), (&h["frame"], &h["scenario"]));
        if f["pred"] != h["pred"] {
            differ += 1;
            assert_eq!(h["pred"], f["top5"][1], "{f}\n{h}");
            continue;
        }
        let (p, q) = (
            f["prob"][0].as_f64().unwrap(),
            h["prob"][0].as_f64().unwrap(),
        );
        let slope = (p * (1.0 - p)).max(q * (1.0 - q));
        assert!((p - q).abs() <= slope * 0.25, "{f}\n{h}");
    }
    assert!(
        differ <= 1,
        "{differ} of {} top-1 predictions differ",
        full.len()
    );
}

/// `compare` of a float32 and a float16 run of the same frames: every scenario paired, both models
/// named.
#[test]
fn compare_of_float32_and_float16_runs_names_both_models() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = demo_pair(d.path(), 2);
    let o = run(robustream()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--format", "json"]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let models = |side: &str| j[side]["model"].as_str().unwrap().to_string();
    assert!(
        models("baseline").ends_with("efficientnet_lite0.toml"),
        "{j}"
    );
    assert!(
        models("candidate").ends_with("efficientnet_lite0_fp16.toml"),
        "{j}"
    );
    let notes = j["notes"].to_string();
    assert!(notes.contains("efficientnet_lite0_fp16.toml"), "{notes}");
    let scenarios = j["scenarios"].as_object().unwrap();
    assert_eq!(scenarios.len(), 11, "{j}");
    for (key, s) in scenarios {
        assert_eq!(s["top1"]["paired"], true, "{key}: {s}");
    }
}

/// `bench` runs the converted model as it runs the float32 one.
#[test]
fn bench_runs_the_float16_demo_model() {
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("b.json");
    let o = run(robustream()
        .arg("bench")
        .arg("--model")
        .arg(fp16_model())
        .args([
            "--threads",
            "1",
            "--warmup",
            "0",
            "--iterations",
            "4",
            "--json",
        ])
        .arg(&json));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(v["samples"], 4, "{v}");
    assert!(v["inference_ms"]["median"].as_f64().unwrap() > 0.0, "{v}");
}
