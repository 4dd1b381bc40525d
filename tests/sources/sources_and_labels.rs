//! Sources, label spaces and stages end to end on the real model: ImageFolder layouts, class maps
//! (model classes → dataset labels, unmapped = wrong), masks, and scenarios at the native frame size.

use std::path::Path;

use crate::util::*;

fn run_ok(extra: &[&str], source: &Path, out: &Path) -> Vec<serde_json::Value> {
    let o = run(robustream()
        .args(["run", "--quiet"])
        .args(extra)
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    records(out)
}

#[test]
fn image_folder_labels_come_from_class_folder_names() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("data");
    for (class, photo_name) in [
        ("espresso", "coffee.png"),
        ("tabby cat", "chelsea.png"),
        ("967", "coffee.png"),
    ] {
        std::fs::create_dir_all(root.join(class)).unwrap();
        std::fs::copy(photo(photo_name), root.join(class).join(photo_name)).unwrap();
    }
    let model = model();
    let recs = run_ok(
        &["--model", model.to_str().unwrap()],
        &root,
        &d.path().join("run"),
    );
    let by_frame = |id: &str| {
        recs.iter()
            .find(|r| r["frame"] == id)
            .unwrap_or_else(|| panic!("{id}"))
    };
    assert_eq!(by_frame("967/coffee.png")["truth"], 967);
    assert_eq!(by_frame("espresso/coffee.png")["truth"], 967);
    assert_eq!(by_frame("tabby cat/chelsea.png")["truth"], 281);
    assert_eq!(by_frame("espresso/coffee.png")["pred"], 967);
}

#[test]
fn a_class_map_scores_in_the_dataset_label_space() {
    let d = tempfile::tempdir().unwrap();
    // Two coarse classes; only espresso (967) and cup (968) map to "coffee", the cat classes to "cat".
    let map = d.path().join("coarse.json");
    std::fs::write(
        &map,
        r#"{"classes": ["coffee", "cat"], "map": {"967": 0, "968": 0, "281": 1, "282": 1, "285": 1}}"#,
    )
    .unwrap();
    let cfg = d.path().join("run.toml");
    std::fs::write(
        &cfg,
        format!(
            "model = {:?}\nscenarios = [\"corruption/contrast/5\"]\n[source]\npath = \"m.csv\"\n[dataset]\nclass_map = \"coarse.json\"\n",
            model()
        ),
    )
    .unwrap();
    for f in ["coffee.png", "chelsea.png", "rocket.jpg"] {
        std::fs::copy(photo(f), d.path().join(f)).unwrap();
    }
    // Labels are written in the dataset's space: by name or by index.
    std::fs::write(
        d.path().join("m.csv"),
        "path,label\ncoffee.png,coffee\nchelsea.png,1\nrocket.jpg,cat\n",
    )
    .unwrap();
    let out = d.path().join("run");
    let o = run(robustream()
        .args(["run", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = records(&out);
    let clean = |id: &str| {
        recs.iter()
            .find(|r| r["frame"] == id && r["scenario"] == "clean")
            .unwrap()
    };
    assert_eq!(
        (
            clean("coffee.png")["truth"].clone(),
            clean("coffee.png")["pred"].clone()
        ),
        (0.into(), 0.into())
    );
    // Chelsea's top-1 is tiger cat (282): mapped to "cat".
    assert_eq!(clean("chelsea.png")["pred"], 1);
    assert_eq!(
        clean("chelsea.png")["top5"][0],
        282,
        "top5 stays in the model's class space"
    );
    // The rocket's top-1 (missile) is not mapped: pred −1, counted wrong.
    assert_eq!(clean("rocket.jpg")["pred"], -1);
    let s = summary(&out);
    let c = &s["scenarios"]["clean"];
    assert_eq!(
        (c["n_labelled"].as_u64(), c["top1"].as_f64()),
        (Some(3), Some(2.0 / 3.0))
    );
}

#[test]
fn masks_ride_along_and_native_stage_corrupts_the_full_frame() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(photo("coffee.png"), d.path().join("coffee.png")).unwrap();
    let (w, h) = image::image_dimensions(photo("coffee.png")).unwrap();
    image::GrayImage::from_fn(w, h, |x, _| image::Luma([if x > w / 2 { 255 } else { 0 }]))
        .save(d.path().join("mask.png"))
        .unwrap();
    std::fs::write(
        d.path().join("m.csv"),
        "path,label,mask\ncoffee.png,espresso,mask.png\n",
    )
    .unwrap();
    let src = d.path().join("m.csv");
    let model = model();
    let m = model.to_str().unwrap();
    let at_input = run_ok(
        &["--model", m, "--scenarios", "corruption/gaussian_noise/5"],
        &src,
        &d.path().join("a"),
    );
    assert_eq!(
        at_input.len(),
        2,
        "the frame with its mask is evaluated, not skipped"
    );

    let cfg = d.path().join("native.toml");
    std::fs::write(
        &cfg,
        format!("model = {model:?}\nstage = \"native\"\n[source]\npath = \"m.csv\"\n"),
    )
    .unwrap();
    let out = d.path().join("b");
    let o = run(robustream()
        .args([
            "run",
            "--quiet",
            "--scenarios",
            "corruption/gaussian_noise/5",
            "--config",
        ])
        .arg(&cfg)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let native = records(&out);
    assert_eq!(
        native[0]["prob"], at_input[0]["prob"],
        "clean is the same at either stage"
    );
    // Noise added at 600×400 is averaged by the downscale: the model is far less hurt than by the
    // same σ at 224×224.
    let espresso = |r: &serde_json::Value| {
        let top = r["top5"].as_array().unwrap();
        top.iter()
            .position(|c| c == 967)
            .map_or(0.0, |i| r["prob"][i].as_f64().unwrap())
    };
    assert_ne!(native[1]["prob"], at_input[1]["prob"]);
    assert_eq!(native[1]["top5"][0], 967, "{}", native[1]);
    assert!(
        espresso(&native[1]) > espresso(&at_input[1]),
        "{} vs {}",
        native[1],
        at_input[1]
    );
    assert_eq!(summary(&out)["run"]["stage"], "native");
}

#[test]
fn every_image_format_in_a_folder_is_scored_once_despite_symlink_loops() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("data");
    let class = root.join("espresso");
    std::fs::create_dir_all(&class).unwrap();
    // The same photo written by the `image` crate's own encoders (WebP lossless, GIF quantised).
    let coffee = image::open(photo("coffee.png")).unwrap().to_rgb8();
    for ext in ["png", "webp", "bmp", "gif", "tiff"] {
        coffee.save(class.join(format!("coffee.{ext}"))).unwrap();
    }
    // Not images: ignored as before.
    for other in ["notes.txt", "list.csv", "meta.json", "other.xml"] {
        std::fs::write(class.join(other), "not an image").unwrap();
    }
    image::GrayImage::new(2, 2)
        .save(class.join("other.mask.png"))
        .unwrap();
    // Two loops: the root into itself, the class folder up to the root.
    std::os::unix::fs::symlink(".", root.join("loop")).unwrap();
    std::os::unix::fs::symlink("..", class.join("up")).unwrap();

    let out = d.path().join("run");
    let o = run(robustream()
        .args([
            "run",
            "--quiet",
            "--scenarios",
            "corruption/contrast/1",
            "--model",
        ])
        .arg(model())
        .arg("--source")
        .arg(&root)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    for link in ["data/loop", "espresso/up"] {
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(link)).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].contains(": is a link to "), "{err}");
        assert!(
            lines[0].ends_with("not followed, so its images are read once; remove the link"),
            "{err}"
        );
    }
    let recs = records(&out);
    let mut frames: Vec<&str> = recs.iter().map(|r| r["frame"].as_str().unwrap()).collect();
    frames.dedup();
    assert_eq!(
        frames,
        [
            "espresso/coffee.bmp",
            "espresso/coffee.gif",
            "espresso/coffee.png",
            "espresso/coffee.tiff",
            "espresso/coffee.webp",
        ],
        "each image once, in name order"
    );
    assert_eq!(recs.len(), 10, "clean + contrast for each image");
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 5);
    assert_eq!(s["frames"]["skipped"], 2, "the two links");
    // The lossless formats give the PNG's pixels, so the same scores.
    let clean = |frame: &str| {
        recs.iter()
            .find(|r| r["frame"] == frame && r["scenario"] == "clean")
            .unwrap_or_else(|| panic!("{frame}"))
    };
    let png = clean("espresso/coffee.png");
    for f in [
        "espresso/coffee.webp",
        "espresso/coffee.bmp",
        "espresso/coffee.tiff",
    ] {
        assert_eq!(clean(f)["top5"], png["top5"], "{f}");
        assert_eq!(clean(f)["prob"], png["prob"], "{f}");
    }
    assert_eq!(clean("espresso/coffee.gif")["truth"], 967);
}
