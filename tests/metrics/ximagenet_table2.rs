//! XIMAGENET-12 end to end on the real model (docs/ximagenet.md#scenarios,
//! docs/ximagenet.md#robustness-score): the paper's Table 2 group `ximagenet12-table2` plus the
//! transparent image, over procedural scenes with exact masks and the quokka photo, labelled with
//! the model's own clean predictions. Checks that σ²_cross is computed with n − 1 over exactly the
//! scenarios the summary names, that the Table 2 score covers the eight, that the transparent image
//! (alpha dropped, as the reference's loader reads it) predicts exactly as clean does, and that the
//! reference random background (a whole earlier image, variant at that image's size) runs at the
//! native stage on frames of different sizes.

use std::path::{Path, PathBuf};

use crate::util::*;
use robustream::scene::random_scene;
use serde_json::Value;

const TABLE2: [&str; 8] = [
    "blur_bg",
    "blur_obj",
    "color_g",
    "color_b",
    "color_grey",
    "color_r",
    "random_bg_add",
    "segmented",
];

/// Five 200×150 scenes and the quokka (another size), with masks; `labels` per row (else 0).
fn write_manifest(dir: &Path, labels: Option<&[u64]>) -> PathBuf {
    let mut rows = vec!["path,label,mask".to_string()];
    for i in 0..5u64 {
        let s = random_scene(200, 150, 700 + i);
        s.image.save(dir.join(format!("s{i}.png"))).unwrap();
        s.mask.save(dir.join(format!("s{i}_mask.png"))).unwrap();
        let label = labels.map_or(0, |l| l[i as usize]);
        rows.push(format!("s{i}.png,{label},s{i}_mask.png"));
    }
    let q = std::fs::read_to_string(photo("masks.csv")).unwrap();
    let mut cols = q.lines().nth(1).unwrap().split(',');
    let (file, _, mask) = (cols.next().unwrap(), cols.next(), cols.next().unwrap());
    let label = labels.map_or(0, |l| l[5]);
    rows.push(format!(
        "{},{label},{}",
        photo(file).display(),
        photo(mask).display()
    ));
    let m = dir.join("scenes.csv");
    std::fs::write(&m, rows.join("\n") + "\n").unwrap();
    m
}

fn run_on(source: &Path, out: &Path, scenarios: &str, config: Option<&Path>) {
    let mut cmd = robustream();
    cmd.args(["run", "--quiet", "--seed", "5"]);
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    cmd.args(["--scenarios", scenarios, "--model"])
        .arg(model())
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out);
    let o = run(&mut cmd);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// Per frame id, the top-5 of one scenario's records.
fn top5_by_frame(records: &[Value], key: &str) -> Vec<(String, Value)> {
    let mut v: Vec<(String, Value)> = records
        .iter()
        .filter(|r| r["scenario"] == key)
        .map(|r| (r["frame"].to_string(), r["top5"].clone()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn table2_group_volatility_on_the_real_model() {
    let d = tempfile::tempdir().unwrap();
    let first = d.path().join("first");
    run_on(&write_manifest(d.path(), None), &first, "clean", None);
    let preds: Vec<u64> = records(&first)
        .iter()
        .map(|r| r["top5"][0].as_u64().unwrap())
        .collect();
    assert_eq!(preds.len(), 6);

    let dir = d.path().join("second");
    let source = write_manifest(d.path(), Some(&preds));
    run_on(
        &source,
        &dir,
        "ximagenet12-table2,background/transparent",
        None,
    );
    let s = summary(&dir);
    let sc = &s["scenarios"];
    let top1 = |k: &str| sc[k]["top1"].as_f64();
    let mu = top1("clean").unwrap();
    assert_eq!(mu, 1.0, "labels are the clean predictions");

    // The transparent image as the reference's loader reads it is the original: the same
    // predictions.
    let recs = records(&dir);
    let clean = top5_by_frame(&recs, "clean");
    assert_eq!(clean.len(), 6);
    assert_eq!(top5_by_frame(&recs, "background/transparent"), clean);

    // The reference random background needs an earlier frame: the first frame is skipped, the
    // others are evaluated on whole earlier images (at the model-input stage, of the frame's size).
    let rand = top5_by_frame(&recs, "background/random_bg_add");
    assert_eq!(rand.len(), 5, "{rand:?}");

    // σ²_cross: n − 1 over the nine scenarios the summary names; the Table 2 score over the eight.
    let vol = &s["metrics"]["volatility"];
    let names: Vec<&str> = vol["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut want: Vec<&str> = TABLE2.iter().copied().chain(["transparent"]).collect();
    let mut sorted = names.clone();
    sorted.sort();
    want.sort();
    assert_eq!(sorted, want);
    assert_eq!(vol["n"], 9);
    let var = |keys: &[&str]| {
        keys.iter()
            .map(|k| (top1(&format!("background/{k}")).unwrap() - mu).powi(2))
            .sum::<f64>()
            / (keys.len() - 1) as f64
    };
    let all = var(&names);
    let t2 = var(&TABLE2);
    assert!(
        (vol["variance_cross"].as_f64().unwrap() - all).abs() < 1e-12,
        "{vol}"
    );
    assert!((vol["score_cross"].as_f64().unwrap() - (1.0 - all)).abs() < 1e-12);
    assert!((vol["table2"]["variance_cross"].as_f64().unwrap() - t2).abs() < 1e-12);
    assert!((vol["table2"]["score_cross"].as_f64().unwrap() - (1.0 - t2)).abs() < 1e-12);
    // Transparent adds a zero volatility and one to n − 1: σ²_cross over nine = 7/8 of the eight's.
    assert!((all - t2 * 7.0 / 8.0).abs() < 1e-12);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("over 9 scenarios (n − 1: blur_bg, blur_obj, color_r"),
        "{md}"
    );
    assert!(md.contains("; Table 2 set (8): σ²_cross"), "{md}");

    // The group alone: the line says it is the paper's Table 2 set.
    let only = d.path().join("only");
    run_on(&source, &only, "ximagenet12-table2", None);
    let md = std::fs::read_to_string(only.join("summary.md")).unwrap();
    assert!(
        md.contains("over 8 scenarios (n − 1: the paper's Table 2 set)"),
        "{md}"
    );
    let vol = &summary(&only)["metrics"]["volatility"];
    assert_eq!(vol["variance_cross"], vol["table2"]["variance_cross"]);
}

#[test]
fn reference_random_background_at_the_native_stage() {
    // Frames of two sizes at the native stage: a variant takes the size of the whole earlier image
    // it was drawn on, then the model's own resize and crop; nothing fails.
    let d = tempfile::tempdir().unwrap();
    let source = write_manifest(d.path(), None);
    let config = d.path().join("native.toml");
    std::fs::write(&config, "stage = \"native\"\n").unwrap();
    let dir = d.path().join("native");
    run_on(
        &source,
        &dir,
        "background/random_bg_add,background/random_bg_paste,background/random_bg_add_bgt",
        Some(&config),
    );
    let recs = records(&dir);
    for key in [
        "background/random_bg_add",
        "background/random_bg_paste",
        "background/random_bg_add_bgt",
    ] {
        assert_eq!(top5_by_frame(&recs, key).len(), 5, "{key}");
    }
    let s = summary(&dir);
    assert_eq!(s["scenarios"]["background/random_bg_add"]["n"], 5, "{s:#}");
}
