//! The released ImageNet-C layout as a source (`kind = "imagenet-c"`), end to end on the real model:
//! stored JPEGs under `<root>/<corruption>/<severity>/<wnid>/<file>` are evaluated as they are under
//! their own scenario key, with truth from the wnid, and scored as CE / mCE.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::util::*;
use serde_json::{Value, json};

const ESPRESSO: &str = "n07920052"; // class 967
const TABBY: &str = "n02123045"; // class 281

/// A photo as the released ImageNet-C stores its images: a 224×224 centre square, JPEG quality 85.
fn stored_224(photo_name: &str) -> image::RgbImage {
    let img = image::open(photo(photo_name)).unwrap().to_rgb8();
    let (w, h) = img.dimensions();
    let side = w.min(h);
    let square = image::imageops::crop_imm(&img, (w - side) / 2, (h - side) / 2, side, side);
    image::imageops::resize(
        &square.to_image(),
        224,
        224,
        image::imageops::FilterType::Triangle,
    )
}

fn write_jpeg(path: &Path, img: &image::RgbImage) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    image::codecs::jpeg::JpegEncoder::new_with_quality(file, 85)
        .encode_image(img)
        .unwrap();
}

/// A run config for the layout at `root` (and clean folder `clean`), model paths absolute.
fn config(dir: &Path, root: &Path, clean: Option<&Path>, model: &Path) -> PathBuf {
    let mut text = format!(
        "model = {:?}\n[source]\npath = {:?}\nkind = \"imagenet-c\"\n",
        model, root
    );
    if let Some(c) = clean {
        text += &format!("clean = {c:?}\n");
    }
    let p = dir.join("imagenet-c.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn run_cfg(cfg: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    run(robustream()
        .args(["run", "--quiet", "--config"])
        .arg(cfg)
        .arg("--out")
        .arg(out)
        .args(extra))
}

#[test]
fn stored_variants_are_scored_under_their_own_keys_with_wnid_truth() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("ImageNet-C");
    let coffee = stored_224("coffee.png");
    let chelsea = stored_224("chelsea.png");
    // gaussian_noise complete (1..5), contrast at 1 and 3 only; coffee under its wnid everywhere,
    // chelsea under tabby at gaussian_noise/2; one image under a folder that is no wnid.
    for s in 1..=5 {
        write_jpeg(
            &root.join(format!("gaussian_noise/{s}/{ESPRESSO}/coffee.JPEG")),
            &coffee,
        );
    }
    write_jpeg(
        &root.join(format!("gaussian_noise/2/{TABBY}/chelsea.JPEG")),
        &chelsea,
    );
    for s in [1, 3] {
        write_jpeg(
            &root.join(format!("contrast/{s}/{ESPRESSO}/coffee.JPEG")),
            &coffee,
        );
    }
    write_jpeg(&root.join("contrast/1/n99999999/stray.JPEG"), &coffee);
    // The clean validation image at its native size (goes through the model's resize + crop).
    let val = d.path().join("val");
    std::fs::create_dir_all(val.join(ESPRESSO)).unwrap();
    std::fs::copy(photo("coffee.png"), val.join(ESPRESSO).join("coffee.png")).unwrap();

    let cfg = config(d.path(), &root, Some(&val), &model());
    let out = d.path().join("run");
    let o = run_cfg(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("n99999999/stray.JPEG") && stderr.contains("is not an ImageNet-1k wnid"),
        "one skipped line naming the file: {stderr}"
    );

    // One record per stored file, under its own key, truth from the wnid, ids unique.
    let recs = records(&out);
    let got: Vec<(&str, &str, i64)> = recs
        .iter()
        .map(|r| {
            (
                r["frame"].as_str().unwrap(),
                r["scenario"].as_str().unwrap(),
                r["truth"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut want = vec![(
        format!("clean/{ESPRESSO}/coffee.png"),
        "clean".to_string(),
        967,
    )];
    for s in 1..=5 {
        // Within a severity, wnid folders in sorted order: tabby (n02…) before espresso (n07…).
        if s == 2 {
            want.push((
                format!("gaussian_noise/2/{TABBY}/chelsea.JPEG"),
                "corruption/gaussian_noise/2".into(),
                281,
            ));
        }
        want.push((
            format!("gaussian_noise/{s}/{ESPRESSO}/coffee.JPEG"),
            format!("corruption/gaussian_noise/{s}"),
            967,
        ));
    }
    for s in [1, 3] {
        want.push((
            format!("contrast/{s}/{ESPRESSO}/coffee.JPEG"),
            format!("corruption/contrast/{s}"),
            967,
        ));
    }
    let want: Vec<(&str, &str, i64)> = want
        .iter()
        .map(|(f, s, t)| (f.as_str(), s.as_str(), *t))
        .collect();
    assert_eq!(got, want);
    // Truth is the wnid's index in the model's class order.
    let classes = std::fs::read_to_string(assets().join("models/imagenet_classes.txt")).unwrap();
    let classes: Vec<&str> = classes.lines().collect();
    assert_eq!(
        (classes[967], classes[281]),
        ("espresso", "tabby, tabby cat")
    );
    // The stored photos are plain: coffee is espresso in every variant.
    for r in recs.iter().filter(|r| r["truth"] == 967) {
        assert_eq!(r["pred"], 967, "{r}");
    }

    let s = summary(&out);
    assert_eq!(s["frames"], json!({"read": 9, "skipped": 1, "dropped": 0}));
    let plan: Vec<&str> = s["run"]["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(
        plan,
        [
            "clean",
            "corruption/gaussian_noise/1",
            "corruption/gaussian_noise/2",
            "corruption/gaussian_noise/3",
            "corruption/gaussian_noise/4",
            "corruption/gaussian_noise/5",
            "corruption/contrast/1",
            "corruption/contrast/3",
        ]
    );
    // Accuracy per key is the records' own.
    for (key, sc) in s["scenarios"].as_object().unwrap() {
        let mine: Vec<&Value> = recs.iter().filter(|r| r["scenario"] == *key).collect();
        let right = mine.iter().filter(|r| r["pred"] == r["truth"]).count();
        assert_eq!(sc["n"], mine.len(), "{key}");
        assert_eq!(
            sc["top1"].as_f64().unwrap(),
            right as f64 / mine.len() as f64,
            "{key}"
        );
        // No clean variant of the same frame: drop and agreement are undefined, not invented.
        if key != "clean" {
            assert!(sc["drop"].is_null() && sc["agreement"].is_null(), "{key}");
        }
    }
    let ic = &s["metrics"]["imagenet_c"];
    assert_eq!(ic["incomplete"], json!({"contrast": [2, 4, 5]}));
    assert_eq!(ic["clean_error"], 0.0);
    let ce_keys: Vec<&str> = ic["ce"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(ce_keys, ["gaussian_noise"]);
    let err2 = 1.0
        - s["scenarios"]["corruption/gaussian_noise/2"]["top1"]
            .as_f64()
            .unwrap();
    assert_eq!(ic["errors"]["gaussian_noise"][1].as_f64().unwrap(), err2);
    assert_eq!(
        ic["errors"]["contrast"],
        json!([0.0, null, 0.0, null, null])
    );
    assert!(ic["mce"].is_null() && ic["relative_mce"].is_null() && ic["mce_all19"].is_null());
    let table = text(&o.stdout);
    assert!(
        table.contains("ImageNet-C incomplete, no CE: contrast (no severity 2, 4, 5)"),
        "{table}"
    );
    // `report` rebuilds the same numbers from records.jsonl.
    let o = run(robustream().args(["report", "--format", "json"]).arg(&out));
    assert!(o.status.success());
    let again: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(again["metrics"], s["metrics"]);
    assert_eq!(again["scenarios"], s["scenarios"]);

    // The plan can be narrowed; keys the layout lacks stay in the plan, unevaluated.
    let out2 = d.path().join("run2");
    let o = run_cfg(
        &cfg,
        &out2,
        &["--scenarios", "corruption/contrast/3,corruption/fog/2"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let scen: BTreeSet<String> = records(&out2)
        .iter()
        .map(|r| r["scenario"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        scen,
        BTreeSet::from(["clean".to_string(), "corruption/contrast/3".to_string()])
    );
    let s2 = summary(&out2);
    assert_eq!(s2["scenarios"]["corruption/fog/2"]["n"], 0);
    assert_eq!(
        s2["metrics"]["imagenet_c"]["incomplete"],
        json!({"fog": [1, 2, 3, 4, 5], "contrast": [1, 2, 4, 5]})
    );

    // --strict: the image under the unknown wnid folder ends the run, naming the file.
    let o = run_cfg(&cfg, &d.path().join("run3"), &["--strict"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("n99999999/stray.JPEG"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn stored_images_at_the_model_input_size_are_evaluated_as_they_are() {
    // hendrycks test.py only centre-crops 224 from the 224² JPEGs
    // (docs/imagenet-c.md#evaluation-protocols): the stored image must reach the model unchanged. A
    // model description whose resize is 224 makes a plain folder source see the same pixels, so the
    // probabilities must agree exactly.
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("IC");
    let file = root.join(format!("fog/4/{TABBY}/chelsea.JPEG"));
    write_jpeg(&file, &stored_224("chelsea.png"));
    let cfg = config(d.path(), &root, None, &model());
    let o = run_cfg(&cfg, &d.path().join("ic"), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stored = records(&d.path().join("ic"));
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["scenario"], "corruption/fog/4");

    let m224 = model_variant(d.path(), "m224.toml", |t| {
        assert!(t.contains("resize_shorter = 256"));
        t.replace("resize_shorter = 256", "resize_shorter = 224")
    });
    let folder = d.path().join("folder");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(&file, folder.join("chelsea.JPEG")).unwrap();
    let o = run(robustream()
        .args(["run", "--quiet", "--model"])
        .arg(&m224)
        .arg("--source")
        .arg(&folder)
        .arg("--out")
        .arg(d.path().join("plain")));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let plain = records(&d.path().join("plain"));
    assert_eq!(plain[0]["top5"], stored[0]["top5"]);
    assert_eq!(plain[0]["prob"], stored[0]["prob"]);
    // Through the default model view (224 → 256 → crop 224) the pixels differ.
    let o = run(robustream()
        .args(["run", "--quiet", "--model"])
        .arg(model())
        .arg("--source")
        .arg(&folder)
        .arg("--out")
        .arg(d.path().join("resized")));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_ne!(
        records(&d.path().join("resized"))[0]["prob"],
        stored[0]["prob"]
    );
}

#[test]
fn all_19_corruptions_give_ce_mce_and_the_all19_mean() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("IC");
    let coffee = stored_224("coffee.png");
    let jpeg = d.path().join("coffee.JPEG");
    write_jpeg(&jpeg, &coffee);
    let names: Vec<String> = text(&run(robustream().arg("scenarios")).stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("corruption/"))
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|k| k.strip_suffix("/1"))
        .map(str::to_string)
        .collect();
    assert_eq!(names.len(), 19, "{names:?}");
    for name in &names {
        for s in 1..=5 {
            let dir = root.join(format!("{name}/{s}/{ESPRESSO}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::hard_link(&jpeg, dir.join("coffee.JPEG"))
                .or_else(|_| std::fs::copy(&jpeg, dir.join("coffee.JPEG")).map(|_| ()))
                .unwrap();
        }
    }
    let val = d.path().join("val");
    write_jpeg(&val.join(ESPRESSO).join("coffee.JPEG"), &coffee);
    let cfg = config(d.path(), &root, Some(&val), &model());
    let out = d.path().join("run");
    let o = run_cfg(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(records(&out).len(), 96);
    let s = summary(&out);
    let ic = &s["metrics"]["imagenet_c"];
    assert_eq!(ic["ce"].as_object().unwrap().len(), 19);
    assert_eq!(ic["relative_ce"].as_object().unwrap().len(), 19);
    assert_eq!(ic["incomplete"], json!({}));
    let ce: Vec<f64> = ic["ce"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let mce = ic["mce"].as_f64().unwrap();
    assert!((mce - ce[..15].iter().sum::<f64>() / 15.0).abs() < 1e-12);
    let all = ic["mce_all19"].as_f64().unwrap();
    assert!((all - ce.iter().sum::<f64>() / 19.0).abs() < 1e-12);
    assert!(ic["relative_mce"].as_f64().is_some() && ic["relative_mce_all19"].as_f64().is_some());
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains("ImageNet-C (AlexNet = 100%): mCE "),
        "{stdout}"
    );
    assert!(stdout.contains("ImageNet-C all 19"), "{stdout}");
}
