//! Occlusion saliency end to end on the real model and the quokka photo with its hand-drawn mask:
//! the summary's numbers, the written map, and IoU / Dice recomputed from that map and the mask at
//! the model's view (docs/hard-imagenet.md#saliency-alignment).

use crate::util::*;
use robustream::metrics::saliency::{dice, iou};
use robustream::model::ModelDesc;
use robustream::source::mask::decode_mask;
use robustream::view::ModelView;

#[test]
fn occlusion_map_is_written_and_scored_against_the_mask() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("r");
    let o = run(robustream()
        .args(["run", "--saliency-maps", "--batch", "8", "--model"])
        .arg(model())
        .arg("--source")
        .arg(photo("masks.csv"))
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("saliency: 1 frames, 170 inferences"));
    let s = summary(&out);
    let m = &s["metrics"]["saliency"];
    assert_eq!(m["applicable"], true, "{m}");
    assert_eq!(m["method"], "occlusion");
    assert_eq!(
        (m["frames"].as_u64(), m["positions"].as_u64()),
        (Some(1), Some(169))
    );
    // One unoccluded pass plus 13 × 13 patch positions (32 px patches, stride 16, at 224²).
    assert_eq!(
        (m["patch"].as_u64(), m["stride"].as_u64()),
        (Some(32), Some(16))
    );
    assert_eq!(m["inferences"], 170);
    assert_eq!(m["complete"], true);
    let (i, dc) = (m["iou"].as_f64().unwrap(), m["dice"].as_f64().unwrap());
    assert!(i > 0.0 && i <= 1.0 && dc >= i, "{m}");
    assert!(m["delta_density"].as_f64().unwrap().abs() <= 1.0);

    // The map: min–max scaled, so it spans 0..255 at the model's size.
    let map = image::open(out.join("saliency/0.png")).unwrap().to_luma8();
    assert_eq!(map.dimensions(), (224, 224));
    let (lo, hi) = map
        .as_raw()
        .iter()
        .fold((255u8, 0u8), |(a, b), &v| (a.min(v), b.max(v)));
    assert_eq!((lo, hi), (0, 255));
    // IoU and Dice again from the written map (v ≥ 0.5 ⇔ round(255 v) ≥ 128) and the mask brought
    // to the model's view as the run does: Hard ImageNet's bilinear-then-non-zero rule.
    let desc = ModelDesc::load(&model()).unwrap();
    let mask = decode_mask(&std::fs::read(photo("quokka_mask.png")).unwrap()).unwrap();
    let mask: Vec<bool> = ModelView::new(&desc)
        .mask(&mask, robustream::app::saliency::MASK_RESIZE)
        .as_raw()
        .iter()
        .map(|&v| v != 0)
        .collect();
    let sal: Vec<bool> = map.as_raw().iter().map(|&v| v >= 128).collect();
    assert!(
        (iou(&sal, &mask) - i).abs() < 1e-12,
        "{} vs {i}",
        iou(&sal, &mask)
    );
    assert!((dice(&sal, &mask) - dc).abs() < 1e-12);

    let line: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(out.join("saliency.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["frame"], "quokka.jpg");
    assert_eq!(line["iou"].as_f64(), Some(i));

    // `robustream report` rebuilds the summary from the records and keeps this post-pass family.
    let o = run(robustream().args(["report", "--format", "json"]).arg(&out));
    assert!(o.status.success());
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(&r["metrics"]["saliency"], m);
}

#[test]
fn saliency_without_masks_does_not_apply() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("r");
    let o = run(robustream()
        .args(["run", "--quiet", "--saliency", "--model"])
        .arg(model())
        .arg("--source")
        .arg(photo("coffee.png"))
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    // A warning, shown under --quiet too.
    assert!(
        text(&o.stderr)
            .contains("warning: saliency: not applicable: no frame with a foreground mask")
    );
    assert_eq!(summary(&out)["metrics"]["saliency"]["applicable"], false);
}
