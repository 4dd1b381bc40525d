//! Preprocessing presets through the binary with the real model (docs/preprocessing.md#presets):
//! a preset-based description runs, gives exactly what the same values written out give, and its
//! keys reach the model's view (the interpolation changes the probabilities).

use crate::util::*;

/// `robustream run` of the real model's description `model` on a demo photo (clean and one
/// corruption); the records without timings.
fn records_of(model: &std::path::Path, out: &std::path::Path) -> Vec<serde_json::Value> {
    let o = run(robustream()
        .args(["run", "--quiet", "--scenarios", "corruption/contrast/2"])
        .arg("--model")
        .arg(model)
        .arg("--source")
        .arg(photo("coffee.png"))
        .arg("--out")
        .arg(out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    records_without_timings(out)
}

/// The `[preprocess]` table of the demo description replaced by `keys`.
fn preprocess(desc: String, keys: &str) -> String {
    let start = desc.find("[preprocess]").unwrap();
    let end = desc.find("[output]").unwrap();
    format!("{}[preprocess]\n{keys}\n{}", &desc[..start], &desc[end..])
}

#[test]
fn a_preset_description_runs_the_real_model_as_its_values_written_out() {
    let d = tempfile::tempdir().unwrap();
    let preset = model_variant(d.path(), "preset.toml", |t| {
        preprocess(t, "preset = \"efficientnet-lite\"")
    });
    let written = model_variant(d.path(), "written.toml", |t| {
        preprocess(
            t,
            "resize_shorter = 256\ncrop = \"center\"\ninterpolation = \"bicubic\"\n\
             scale = 1.0\nmean = [127.0, 127.0, 127.0]\nstd = [128.0, 128.0, 128.0]\n\
             channels = \"rgb\"",
        )
    });
    // The preset with today's bilinear filter is the demo description's preprocessing exactly.
    let bilinear = model_variant(d.path(), "bilinear.toml", |t| {
        preprocess(
            t,
            "preset = \"efficientnet-lite\"\ninterpolation = \"bilinear\"",
        )
    });
    let from_preset = records_of(&preset, &d.path().join("preset"));
    assert_eq!(from_preset.len(), 2);
    assert_eq!(from_preset, records_of(&written, &d.path().join("written")));
    let demo = records_of(&model(), &d.path().join("demo"));
    assert_eq!(records_of(&bilinear, &d.path().join("bilinear")), demo);
    // Bicubic is another view: the same classes here, other probabilities.
    for (p, b) in from_preset.iter().zip(&demo) {
        assert_eq!(p["pred"], b["pred"], "{p} {b}");
        assert_ne!(p["prob"], b["prob"], "{p} {b}");
    }
}

#[test]
fn bgr_channels_change_what_the_real_model_sees() {
    let d = tempfile::tempdir().unwrap();
    let bgr = model_variant(d.path(), "bgr.toml", |t| {
        t.replace(
            "std = [128.0, 128.0, 128.0]",
            "std = [128.0, 128.0, 128.0]\nchannels = \"bgr\"",
        )
    });
    let swapped = records_of(&bgr, &d.path().join("bgr"));
    let demo = records_of(&model(), &d.path().join("demo"));
    assert_eq!(swapped.len(), demo.len());
    assert!(
        swapped
            .iter()
            .zip(&demo)
            .all(|(s, r)| s["prob"] != r["prob"]),
        "{swapped:?}"
    );
}

#[test]
fn a_preset_mistake_is_one_line_before_the_run() {
    let d = tempfile::tempdir().unwrap();
    for (file, keys, want) in [
        (
            "typo.toml",
            "preset = \"torchvison\"",
            &["typo.toml", "did you mean `torchvision`?"][..],
        ),
        (
            "conflict.toml",
            "preset = \"keras\"\nresize_shorter = 256",
            &["conflict.toml", "preset `keras`", "a squash to 224×224"][..],
        ),
    ] {
        let m = model_variant(d.path(), file, |t| preprocess(t, keys));
        let o = run(robustream()
            .args(["run", "--quiet", "--model"])
            .arg(&m)
            .arg("--source")
            .arg(photo("coffee.png"))
            .arg("--out")
            .arg(d.path().join("run")));
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{file}");
        assert!(want.iter().all(|w| err.contains(w)), "{file}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
