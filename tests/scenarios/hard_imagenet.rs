//! Hard ImageNet's preprocessing end to end, through the binary and the real model: a model
//! description with `resize = { width = 256, height = 256 }` (torchvision `Resize((256, 256))` →
//! `CenterCrop(224)`), and masks brought to that view as the reference does (bilinear, then
//! non-zero → object, docs/hard-imagenet.md#data-and-preprocessing). The expected masks are
//! Pillow's (`scripts/make_hard_imagenet_fixtures.py`, `tests/fixtures/hard_imagenet/`).

use std::path::{Path, PathBuf};

use crate::util::*;
use image::{GrayImage, RgbImage};
use robustream::model::ModelDesc;
use robustream::scenario::ablation::gray_object;
use robustream::view::{MaskResize, ModelView};

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/hard_imagenet").join(name)
}

/// The shipped description: the demo model with Hard ImageNet's preprocessing.
fn hard_model() -> PathBuf {
    root().join("models/efficientnet_lite0_hard_imagenet.toml")
}

#[test]
fn the_shipped_description_is_the_demo_model_with_a_256_squash() {
    let hard = ModelDesc::load(&hard_model()).unwrap();
    let demo = ModelDesc::load(&model()).unwrap();
    let r = hard.preprocess.resize.unwrap();
    assert_eq!((r.width, r.height), (256, 256));
    assert_eq!(hard.preprocess.resize_shorter, None);
    assert_eq!((hard.input.width, hard.input.height), (224, 224));
    assert_eq!(
        (hard.preprocess.mean, hard.preprocess.std),
        (demo.preprocess.mean, demo.preprocess.std)
    );
    assert_eq!(
        std::fs::canonicalize(&hard.onnx).unwrap(),
        std::fs::canonicalize(&demo.onnx).unwrap()
    );
}

/// A 500×375 frame (the size of the mask fixture) that never holds the gray 128 on every channel
/// (blue is 7 everywhere, and stays 7 through any resize), so gray pixels after an ablation are
/// exactly the ablated ones.
fn frame(dir: &Path) -> (RgbImage, PathBuf) {
    let img = RgbImage::from_fn(500, 375, |x, y| {
        let checker = ((x / 25 + y / 25) % 2) as u8 * 90;
        image::Rgb([(x / 2) as u8, checker + (y / 3) as u8, 7])
    });
    let p = dir.join("frame.png");
    img.save(&p).unwrap();
    (img, p)
}

fn luma(p: &Path) -> GrayImage {
    image::open(p).unwrap().into_luma8()
}

/// `robustream apply` of `key` at the model's view of `input` with `mask`.
fn apply(dir: &Path, model: &Path, key: &str, input: &Path, mask: &Path) -> RgbImage {
    let out = dir.join(format!("{}.png", key.replace('/', "_")));
    let o = run(robustream()
        .args(["apply", "--scenario", key, "--model", path(model)])
        .args(["--mask", path(mask)])
        .arg(input)
        .arg(&out));
    assert!(o.status.success(), "{key}: {}", text(&o.stderr));
    image::open(&out).unwrap().into_rgb8()
}

#[test]
fn ablation_and_rfs_noise_use_the_reference_mask_at_the_hard_imagenet_view() {
    let d = tempfile::tempdir().unwrap();
    let model = hard_model();
    let (img, input) = frame(d.path());
    let mask_path = fixture("mask500x375.png");
    // Pillow's Resize((256, 256), BILINEAR) → CenterCrop(224) → > 0 of the mask.
    let want = luma(&fixture("mask500x375_want.png"));
    let mut view = ModelView::new(&ModelDesc::load(&model).unwrap());
    let nearest = view.mask(&luma(&mask_path), MaskResize::Nearest);
    let base = view.image(&img);
    assert_eq!(base.dimensions(), (224, 224));
    // The bilinear mask is the nearest one plus a ring of edge pixels.
    let ring: Vec<(u32, u32)> = want
        .enumerate_pixels()
        .filter(|(x, y, v)| v.0[0] != 0 && nearest.get_pixel(*x, *y).0[0] == 0)
        .map(|(x, y, _)| (x, y))
        .collect();
    assert!(ring.len() > 500, "{}", ring.len());

    let gray = apply(d.path(), &model, "ablation/gray", &input, &mask_path);
    assert_eq!(gray.dimensions(), (224, 224));
    for (x, y, p) in gray.enumerate_pixels() {
        let object = want.get_pixel(x, y).0[0] != 0;
        let expected = if object {
            [128; 3]
        } else {
            base.get_pixel(x, y).0
        };
        assert_eq!(
            p.0, expected,
            "ablation/gray at ({x}, {y}), object {object}"
        );
    }

    // RFS noise: the foreground version changes object pixels only (the ring included), the
    // background version the others only.
    let fg = apply(
        d.path(),
        &model,
        "region_noise/fg/linf/0.25/t1",
        &input,
        &mask_path,
    );
    let bg = apply(
        d.path(),
        &model,
        "region_noise/bg/linf/0.25/t1",
        &input,
        &mask_path,
    );
    let changed = |v: &RgbImage, x: u32, y: u32| v.get_pixel(x, y) != base.get_pixel(x, y);
    for (x, y, m) in want.enumerate_pixels() {
        let object = m.0[0] != 0;
        assert!(object || !changed(&fg, x, y), "fg noise outside ({x}, {y})");
        assert!(!object || !changed(&bg, x, y), "bg noise inside ({x}, {y})");
    }
    let ring_changed = ring.iter().filter(|&&(x, y)| changed(&fg, x, y)).count();
    assert!(
        ring_changed * 2 > ring.len(),
        "{ring_changed} of {}",
        ring.len()
    );
}

/// Top-5 and probabilities of a record, for comparing two evaluations of the same pixels.
fn top5(r: &serde_json::Value) -> (Vec<u64>, Vec<f64>) {
    let ints = r["top5"].as_array().unwrap().iter();
    let probs = r["prob"].as_array().unwrap().iter();
    (
        ints.map(|v| v.as_u64().unwrap()).collect(),
        probs.map(|v| v.as_f64().unwrap()).collect(),
    )
}

fn same_prediction(a: &(Vec<u64>, Vec<f64>), b: &(Vec<u64>, Vec<f64>)) -> bool {
    a.0 == b.0 && a.1.iter().zip(&b.1).all(|(p, q)| (p - q).abs() < 1e-4)
}

#[test]
fn a_hard_imagenet_run_on_the_real_model_evaluates_the_reference_variants() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let model = hard_model();
    let (img, _) = frame(dir);
    std::fs::copy(fixture("mask500x375.png"), dir.join("frame.mask.png")).unwrap();
    std::fs::copy(photo("quokka.jpg"), dir.join("quokka.jpg")).unwrap();
    std::fs::copy(photo("quokka_mask.png"), dir.join("quokka.mask.png")).unwrap();
    let source = dir.join("hard.csv");
    std::fs::write(
        &source,
        "path,label,mask\nframe.png,wallaby,frame.mask.png\nquokka.jpg,wallaby,quokka.mask.png\n",
    )
    .unwrap();
    // The shipped run config (hard-imagenet + rfs + saliency on the shipped description).
    let out = dir.join("r");
    let o = run(robustream()
        .args(["run", "--quiet", "--saliency-maps", "--config"])
        .arg(root().join("configs/hard_imagenet.toml"))
        .args(["--source", path(&source), "--out", path(&out)]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["run"]["variants_failed"], 0, "{}", s["run"]);
    let recs = records(&out);
    // Two frames × (clean + 3 ablations + 6 RFS variants).
    assert_eq!(recs.len(), 20);
    let ablations = &s["metrics"]["hard_imagenet"]["ablations"];
    for name in ["none", "gray", "gray_bbox", "tile"] {
        assert_eq!(ablations[name]["n"], 2, "{name}: {ablations}");
    }
    assert!(s["metrics"]["rfs"].is_object(), "{}", s["metrics"]);
    assert_eq!(s["metrics"]["saliency"]["frames"], 2, "{}", s["metrics"]);

    // The saliency pass scored frame.png's map against the reference's mask (Pillow's bilinear
    // then > 0): IoU recomputed from the written map and the fixture.
    let want = luma(&fixture("mask500x375_want.png"));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("saliency.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let n = lines
        .iter()
        .position(|l| l["frame"] == "frame.png")
        .unwrap();
    let map = luma(&out.join(format!("saliency/{n}.png")));
    let sal: Vec<bool> = map.as_raw().iter().map(|&v| v >= 128).collect();
    let object: Vec<bool> = want.as_raw().iter().map(|&v| v != 0).collect();
    let got = lines[n]["iou"].as_f64().unwrap();
    assert!((robustream::metrics::saliency::iou(&sal, &object) - got).abs() < 1e-12);

    // The run's `ablation/gray` variant of frame.png is exactly the reference's: evaluating the
    // Pillow-rule variant (gray where the fixture mask is) as a clean 224² frame with a crop-only
    // description gives the same prediction; the nearest-mask variant does not.
    let run_gray = top5(
        recs.iter()
            .find(|r| r["frame"] == "frame.png" && r["scenario"] == "ablation/gray")
            .unwrap(),
    );
    let mut view = ModelView::new(&ModelDesc::load(&model).unwrap());
    let base = view.image(&img);
    let nearest = view.mask(&luma(&fixture("mask500x375.png")), MaskResize::Nearest);
    let crop_only = model_variant(dir, "crop.toml", |t| {
        assert!(t.contains("resize_shorter = 256 "), "{t}");
        t.replace("resize_shorter = 256 ", "")
    });
    let evaluate = |name: &str, variant: &RgbImage| {
        let p = dir.join(name);
        variant.save(&p).unwrap();
        let o = dir.join(format!("r_{name}"));
        let r = run(robustream()
            .args(["run", "--quiet", "--scenarios", "clean"])
            .args(["--model", path(&crop_only), "--source", path(&p)])
            .args(["--out", path(&o)]));
        assert!(r.status.success(), "{}", text(&r.stderr));
        top5(&records(&o)[0])
    };
    let reference = evaluate("reference.png", &gray_object(&base, &want));
    assert!(
        same_prediction(&run_gray, &reference),
        "{run_gray:?} vs {reference:?}"
    );
    let thinner = evaluate("nearest.png", &gray_object(&base, &nearest));
    assert!(
        !same_prediction(&run_gray, &thinner),
        "the nearest mask's variant should be told apart: {thinner:?}"
    );
}

#[test]
fn a_bad_resize_key_is_one_line_naming_it_and_the_fix() {
    let d = tempfile::tempdir().unwrap();
    for (edit, needle) in [
        (
            "resize_shorter = 256 \nresize = { width = 256, height = 256 }",
            "not both",
        ),
        (
            "resize = { width = 256, height = 200 }",
            "height at least 224",
        ),
        (
            "resize = [256, 256]",
            "resize = { width = 256, height = 256 }",
        ),
    ] {
        let m = model_variant(d.path(), "bad.toml", |t| {
            t.replace("resize_shorter = 256 ", edit)
        });
        let o = robustream()
            .args([
                "run",
                "--quiet",
                "--scenarios",
                "clean",
                "--model",
                path(&m),
            ])
            .arg("--source")
            .arg(photo("coffee.png"))
            .arg("--out")
            .arg(d.path().join("r"))
            .output()
            .unwrap();
        assert!(!o.status.success(), "{edit}");
        let err = text(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("bad.toml") && err.contains(needle),
            "{edit}: {err}"
        );
    }
}
