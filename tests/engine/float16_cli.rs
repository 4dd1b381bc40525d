//! A float16 model through the binary (docs/model-description.md#float16-models): the null
//! classifier exported with a float16 input and output runs end to end and predicts what the
//! float32 one predicts.

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
