//! Masks from a segmentation ONNX model, as a user runs it: the synthetic camera moving a
//! red cut-out across a dark scene, `[source.segment]` with the tiny fixture of
//! `scripts/make_segment_fixture.py` (foreground = strongly red pixels), background scenarios, the
//! real classifier. The model's masks are compared with the camera's exact ones through the boxes
//! the records carry; the cost is read back from `run.source_report.segment`; bad settings are one
//! line and a non-zero exit.

use std::path::{Path, PathBuf};

use crate::util::*;

const FRAMES: u64 = 12;

/// A red square photo and a disc mask for it: the sprite the synthetic camera moves.
fn sprite(dir: &Path) -> (PathBuf, PathBuf) {
    let photo = dir.join("red.png");
    let mask = dir.join("red_mask.png");
    image::RgbImage::from_pixel(50, 50, image::Rgb([230, 30, 30]))
        .save(&photo)
        .unwrap();
    let disc = image::GrayImage::from_fn(50, 50, |x, y| {
        let (dx, dy) = (x as f64 - 24.5, y as f64 - 24.5);
        image::Luma([if dx * dx + dy * dy <= 24.0 * 24.0 {
            255
        } else {
            0
        }])
    });
    disc.save(&mask).unwrap();
    (photo, mask)
}

/// A run config: the camera (seed 3: a dark checker background, no channel above 110) with the
/// sprite, two mask scenarios, and `extra` appended (e.g. a `[source.segment]` table).
fn config(dir: &Path, extra: &str) -> PathBuf {
    let (photo, mask) = sprite(dir);
    let p = dir.join("segment.toml");
    std::fs::write(
        &p,
        format!(
            "scenarios = [\"background/only_fg\", \"background/no_fg\"]\n[source]\npath = \
             \"synthetic\"\nkind = \"synthetic\"\n[source.synthetic]\nwidth = 160\nheight = \
             120\nfps = 3\nframes = {FRAMES}\nseed = 3\nsprite = {photo:?}\nsprite_mask = \
             {mask:?}\nsprite_size = 0.5\n{extra}"
        ),
    )
    .unwrap();
    p
}

/// The fixture copied next to the config, so `model` is given relative to the config file.
fn fixture_next_to(dir: &Path, name: &str) {
    let models = dir.join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::copy(
        root().join("tests/fixtures/segment").join(name),
        models.join(name),
    )
    .unwrap();
}

fn run_config(config: &Path, out: &Path, args: &[&str]) -> std::process::Output {
    run(quiet_run(config).arg("--out").arg(out).args(args))
}

/// The clean records' first box per frame number (normalised xyxy).
fn boxes(out: &Path) -> Vec<(u64, [f64; 4])> {
    records(out)
        .iter()
        .filter(|r| r["scenario"] == "clean")
        .map(|r| {
            let n = r["frame"].as_str().unwrap()["synthetic/".len()..]
                .parse()
                .unwrap();
            let b: Vec<f64> = r["boxes"][0]
                .as_array()
                .unwrap_or_else(|| panic!("frame {n} has a box: {r}"))
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            (n, [b[0], b[1], b[2], b[3]])
        })
        .collect()
}

fn box_iou(a: [f64; 4], b: [f64; 4]) -> f64 {
    let iw = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let ih = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = iw * ih;
    let area = |r: [f64; 4]| (r[2] - r[0]) * (r[3] - r[1]);
    inter / (area(a) + area(b) - inter)
}

#[test]
fn segmentation_masks_drive_the_background_scenarios() {
    let dir = tempfile::tempdir().unwrap();
    // Reference: the camera's exact masks.
    let exact_out = dir.path().join("exact");
    let o = run_config(&config(dir.path(), ""), &exact_out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let exact = boxes(&exact_out);
    assert_eq!(exact.len() as u64, FRAMES);

    // The model every second frame, given relative to the config file.
    fixture_next_to(dir.path(), "red_logits_nchw.onnx");
    let cfg = config(
        dir.path(),
        "[source.segment]\nmodel = \"models/red_logits_nchw.onnx\"\nclasses = [1]\nevery = 2\n",
    );
    let out = dir.path().join("seg");
    let o = run_config(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = records(&out);
    for key in ["clean", "background/only_fg", "background/no_fg"] {
        let n = recs.iter().filter(|r| r["scenario"] == key).count() as u64;
        assert_eq!(
            n, FRAMES,
            "every frame has a model mask, so `{key}` ran on all"
        );
    }
    let seg = boxes(&out);
    for ((n, got), (m, want)) in seg.iter().zip(&exact) {
        assert_eq!(n, m);
        let iou = box_iou(*got, *want);
        if n % 2 == 0 {
            // Segmented frames: the model's mask matches the exact one up to the 64-pixel
            // model resolution (a box edge off by about one model pixel).
            assert!(iou > 0.85, "frame {n}: IoU {iou} ({got:?} vs {want:?})");
        } else {
            // Reused frames carry the previous frame's mask, which lags the moving sprite.
            let prev = seg[*n as usize - 1].1;
            assert_eq!(*got, prev, "frame {n} reuses frame {}'s mask", n - 1);
        }
    }
    // The sprite moves: a reused mask is not the exact one of its own frame.
    assert!(
        seg.iter()
            .zip(&exact)
            .any(|((n, got), (_, want))| n % 2 == 1 && box_iou(*got, *want) < 0.99),
        "the reused masks lag"
    );
    // The model's cost is the `mask` latency stage of the frames it ran on, and only of those.
    for r in recs.iter().filter(|r| r["scenario"] == "clean") {
        let frame = r["frame"].as_str().unwrap();
        let n: u64 = frame.rsplit('/').next().unwrap().parse().unwrap();
        let mask_ms = r["ms"]["mask"].as_f64();
        match n % 2 {
            0 => assert!(mask_ms.is_some_and(|v| v > 0.0), "{r}"),
            _ => assert_eq!(mask_ms, None, "a reused mask costs nothing: {r}"),
        }
    }
    let s = summary(&out);
    assert!(
        s["latency_ms"]["mask"]["p50"]
            .as_f64()
            .is_some_and(|v| v > 0.0),
        "{}",
        s["latency_ms"]
    );
    let source = s["run"]["source"].as_str().unwrap();
    assert!(
        source.contains("masks from segmentation model") && source.contains("every 2 frames"),
        "{source}"
    );
    let rep = &s["run"]["source_report"]["segment"];
    assert_eq!(rep["calls"], FRAMES / 2, "{rep}");
    assert_eq!(rep["reused"], FRAMES / 2, "{rep}");
    assert_eq!(rep["failed"], 0, "{rep}");
    assert_eq!(
        rep["input"],
        serde_json::json!([64, 64]),
        "size read from the model"
    );
    let ms = &rep["ms_per_call"];
    for q in ["mean", "p50", "p90", "max"] {
        assert!(ms[q].as_f64().is_some_and(|v| v > 0.0), "{q}: {rep}");
    }
    assert!(
        rep["model"]
            .as_str()
            .unwrap()
            .ends_with("models/red_logits_nchw.onnx"),
        "{rep}"
    );
    eprintln!("segmentation cost (fixture, 160x120 -> 64x64): {ms}");
}

#[test]
fn the_nhwc_probability_map_with_a_threshold() {
    let dir = tempfile::tempdir().unwrap();
    fixture_next_to(dir.path(), "red_prob_nhwc.onnx");
    let cfg = config(
        dir.path(),
        "[source.segment]\nmodel = \"models/red_prob_nhwc.onnx\"\nlayout = \"nhwc\"\nsize = [80, \
         60]\nmean = [0, 0, 0]\nstd = [1, 1, 1]\nthreshold = 0.5\nmin_area = 20\n",
    );
    let out = dir.path().join("seg");
    let o = run_config(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let exact_out = dir.path().join("exact");
    let o = run_config(&config(dir.path(), ""), &exact_out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for ((n, got), (_, want)) in boxes(&out).iter().zip(&boxes(&exact_out)) {
        let iou = box_iou(*got, *want);
        assert!(iou > 0.9, "frame {n}: IoU {iou} ({got:?} vs {want:?})");
    }
    let rep = &summary(&out)["run"]["source_report"]["segment"];
    assert_eq!(
        (rep["calls"].as_u64(), rep["reused"].as_u64()),
        (Some(FRAMES), Some(0))
    );
    assert_eq!(rep["input"], serde_json::json!([80, 60]));
}

#[test]
fn a_model_failing_on_frames_skips_them_or_stops_a_strict_run() {
    let dir = tempfile::tempdir().unwrap();
    // The fixture loads and passes the checks, and ONNX Runtime fails on inputs other than 64².
    fixture_next_to(dir.path(), "fails_unless_64.onnx");
    let cfg = config(
        dir.path(),
        "[source.segment]\nmodel = \"models/fails_unless_64.onnx\"\nlayout = \"nhwc\"\nsize = [32, 32]\n",
    );
    let out = dir.path().join("run");
    let o = run_config(&cfg, &out, &[]);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("synthetic/00000000")
            && err.contains("fails_unless_64.onnx failed on this frame")
            && err.contains("inference failed"),
        "{err}"
    );
    // Each skipped frame's line says what to check, on one line.
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("failed on this frame"))
        .collect();
    assert!(!lines.is_empty(), "{err}");
    assert!(
        lines.iter().all(|l| l.ends_with(
            "check that the model runs on a float32 [1, 32, 32, 3] input (`[source.segment] size` \
             and `layout = \"nhwc\"`)"
        )),
        "{err}"
    );
    let s = summary(&out);
    assert_eq!(s["frames"]["skipped"], FRAMES, "{s}");
    assert_eq!(s["run"]["source_report"]["segment"]["failed"], FRAMES);
    let o = run_config(&cfg, &dir.path().join("strict"), &["--strict"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("--strict"), "{}", text(&o.stderr));
}

#[test]
fn bad_segment_settings_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    fixture_next_to(dir.path(), "red_prob_nhwc.onnx");
    let cases = [
        (
            "[source.segment]\nmodel = \"models/missing.onnx\"\n",
            "does not exist",
        ),
        (
            "[source.segment]\nmodel = \"models/red_prob_nhwc.onnx\"\nlayout = \"nhwc\"\nsize = \
             [8, 8]\nclasses = [1]\n",
            "remove `classes`",
        ),
        (
            "[source.segment]\nmodel = \"models/red_prob_nhwc.onnx\"\nlayout = \"nhwc\"\n",
            "set `[source.segment] size",
        ),
        (
            "[source.segment]\nmodel = \"models/red_prob_nhwc.onnx\"\nevery = 0\n",
            "every = 0",
        ),
        (
            "[source.segment]\nmodel = \"models/red_prob_nhwc.onnx\"\nthreshhold = 0.5\n",
            "threshhold",
        ),
        (
            "[source.plate]\nframes = 5\n[source.segment]\nmodel = \"models/red_prob_nhwc.onnx\"\n",
            "keep one",
        ),
    ];
    for (extra, want) in cases {
        let cfg = config(dir.path(), extra);
        let o = run_config(&cfg, &dir.path().join("out"), &[]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{extra}");
        assert!(err.contains(want), "{extra}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
}
