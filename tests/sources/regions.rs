//! Masks and boxes end to end: manifests with `mask`, `boxes` and `annotation` columns, folders with
//! masks and annotations next to the images, bad regions skipped with one clear line (fatal under
//! --strict), and the IN-9 release layout scored through `configs/in_to_in9.json` — on procedurally
//! generated scenes with exact masks, and the real model.

use std::path::{Path, PathBuf};

use crate::util::*;
use robustream::frame::BBox;
use robustream::scene::{Background, Object, Scene, Shape, random_scene, render};
use robustream::source::mask::mask_to_npy;
use robustream::source::regions::{NormBox, format_norm_boxes};

/// Writes `scene` as `<dir>/<name>.png` and returns its normalised boxes in the manifest format.
fn save(dir: &Path, name: &str, scene: &Scene) -> String {
    scene.image.save(dir.join(format!("{name}.png"))).unwrap();
    let (w, h) = scene.image.dimensions();
    let boxes: Vec<NormBox> = scene
        .boxes
        .iter()
        .map(|b| NormBox::from_pixels(b, w, h))
        .collect();
    format_norm_boxes(&boxes)
}

/// A Pascal VOC annotation of one box (inclusive corners, as ImageNet writes them).
fn voc(size: (u32, u32), b: BBox) -> String {
    format!(
        "<annotation><size><width>{}</width><height>{}</height><depth>3</depth></size>\
         <object><name>n00000000</name><bndbox><xmin>{}</xmin><ymin>{}</ymin><xmax>{}</xmax>\
         <ymax>{}</ymax></bndbox></object></annotation>",
        size.0,
        size.1,
        b.x0,
        b.y0,
        b.x1 - 1,
        b.y1 - 1
    )
}

#[test]
fn manifest_with_masks_and_boxes_runs_end_to_end() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let two = render(
        320,
        240,
        &Background::stripes([30, 60, 30], [60, 30, 30], 7),
        &[
            Object::new(Shape::Disc, BBox::new(20, 30, 120, 130), [250, 200, 0]),
            Object::new(Shape::Triangle, BBox::new(180, 90, 300, 230), [0, 90, 250]),
        ],
    );
    let boxes_two = save(dir, "two", &two);
    two.mask.save(dir.join("two_mask.png")).unwrap();
    let one = random_scene(200, 150, 3);
    save(dir, "one", &one);
    std::fs::write(dir.join("one.npy"), mask_to_npy(&one.mask)).unwrap();
    let voc_scene = random_scene(160, 200, 4);
    save(dir, "voc", &voc_scene);
    std::fs::write(dir.join("voc.xml"), voc((160, 200), voc_scene.boxes[0])).unwrap();
    let manifest = dir.join("m.csv");
    std::fs::write(
        &manifest,
        format!(
            "path,label,mask,boxes,annotation\n\
             two.png,0,two_mask.png,{boxes_two},\n\
             one.png,,one.npy,,\n\
             voc.png,tench,,,voc.xml\n"
        ),
    )
    .unwrap();
    // `background/only_bg_b` needs a box or a mask on every frame (voc.png has only its
    // annotation): under --strict a frame without would end the run.
    let out = dir.join("run");
    let o = run(robustream()
        .args([
            "run",
            "--quiet",
            "--strict",
            "--scenarios",
            "background/only_bg_b",
        ])
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(&manifest)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 3);
    assert_eq!(s["frames"]["skipped"], 0);
    assert_eq!(s["run"]["variants_failed"], 0);
    let recs = records(&out);
    assert_eq!(recs.len(), 6);
    let frames: Vec<&str> = recs.iter().map(|r| r["frame"].as_str().unwrap()).collect();
    assert_eq!(
        frames,
        [
            "two.png", "two.png", "one.png", "one.png", "voc.png", "voc.png"
        ]
    );
    assert_eq!(recs[1]["scenario"], "background/only_bg_b");
    assert_eq!(recs[0]["truth"], 0);
    assert!(recs[2]["truth"].is_null());
}

#[test]
fn apply_maps_the_annotated_box_into_the_model_view() {
    use robustream::model::ModelDesc;
    use robustream::view::ModelView;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let scene = random_scene(400, 300, 11);
    scene.image.save(dir.join("in.png")).unwrap();
    // A box that the centre crop cuts on the left (400x300 → 341x256 → crop 224 at x 58).
    let b = BBox::new(40, 60, 230, 280);
    std::fs::write(dir.join("in.xml"), voc((400, 300), b)).unwrap();
    let normalised = format_norm_boxes(&[NormBox::from_pixels(&b, 400, 300)]);
    let mut view = ModelView::new(&ModelDesc::load(&model()).unwrap());
    let base = view.image(&scene.image);
    let [mapped] = view.boxes(&[b], (400, 300))[..] else {
        panic!("one box");
    };
    assert_eq!(mapped.x0, 0, "{mapped:?}");
    for (flag, value) in [
        ("--annotation", dir.join("in.xml")),
        ("--boxes", PathBuf::from(normalised)),
    ] {
        let out = dir.join("out.png");
        let o = run(robustream()
            .args(["apply", "--scenario", "background/only_bg_b", "--model"])
            .arg(model())
            .arg(flag)
            .arg(&value)
            .arg(dir.join("in.png"))
            .arg(&out));
        assert!(o.status.success(), "{}", text(&o.stderr));
        let got = image::open(&out).unwrap().into_rgb8();
        assert_eq!(got.dimensions(), (224, 224));
        for (x, y, p) in got.enumerate_pixels() {
            let inside = (mapped.x0..mapped.x1).contains(&x) && (mapped.y0..mapped.y1).contains(&y);
            let want = if inside {
                [0, 0, 0]
            } else {
                base.get_pixel(x, y).0
            };
            assert_eq!(p.0, want, "{flag} at ({x}, {y}), box {mapped:?}");
        }
    }
    // Both ways at once is a usage error.
    let o = robustream()
        .args(["apply", "--scenario", "clean", "--boxes", "0 0 1 1"])
        .args(["--annotation", "x.xml"])
        .arg(dir.join("in.png"))
        .arg(dir.join("o.png"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn bad_masks_and_boxes_are_skipped_with_one_clear_line_each() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let scene = random_scene(64, 48, 1);
    let boxes = save(dir, "a", &scene);
    scene.mask.save(dir.join("good.png")).unwrap();
    image::GrayImage::from_pixel(32, 24, image::Luma([255]))
        .save(dir.join("small.png"))
        .unwrap();
    image::GrayImage::new(64, 48)
        .save(dir.join("empty.png"))
        .unwrap();
    std::fs::write(dir.join("wrong_size.xml"), voc((640, 480), scene.boxes[0])).unwrap();
    let manifest = dir.join("m.csv");
    std::fs::write(
        &manifest,
        format!(
            "path,label,mask,boxes,annotation\n\
             a.png,0,good.png,{boxes},\n\
             a.png,0,small.png,,\n\
             a.png,0,empty.png,,\n\
             a.png,0,,10 20 30 40,\n\
             a.png,0,,,wrong_size.xml\n\
             a.png,0,,{boxes},wrong_size.xml\n\
             a.png,0,,,missing.xml\n"
        ),
    )
    .unwrap();
    let out = dir.join("run");
    let o = run_on(&manifest, &out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    for needle in [
        "small.png is 32x24 but image",
        "empty.png has no foreground pixel",
        "manifest `boxes` column: box 1 `10 20 30 40` has a coordinate outside [0, 1]",
        "the annotation is for a 640x480 image but the image is 64x48",
        "both `boxes` and `annotation`",
        "cannot read annotation",
    ] {
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(needle)).collect();
        assert_eq!(lines.len(), 1, "one line with `{needle}`:\n{err}");
        assert!(lines[0].contains("a.png"), "names the image: {}", lines[0]);
    }
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 1);
    assert_eq!(s["frames"]["skipped"], 6);
    assert_eq!(records(&out).len(), 2);

    // --strict: the first bad item (the wrong-size mask) ends the run.
    let strict = dir.join("strict");
    let o = run_on(&manifest, &strict, &["--strict"]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("small.png is 32x24 but image") && err.contains("--strict"),
        "{err}"
    );
    assert!(!err.contains("empty.png"), "stops at the first: {err}");
    let s = summary(&strict);
    assert_eq!(s["run"]["end"], "failed");
}

#[test]
fn a_scenario_that_needs_a_mask_is_reported_on_frames_without_one() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let scene = random_scene(64, 48, 2);
    save(dir, "a", &scene);
    scene.mask.save(dir.join("a_mask.png")).unwrap();
    let manifest = dir.join("m.csv");
    std::fs::write(&manifest, "path,label,mask\na.png,0,a_mask.png\na.png,0,\n").unwrap();
    let go = |out: &Path, extra: &[&str]| {
        run(robustream()
            .args(["run", "--quiet", "--scenarios", "background/only_fg"])
            .args(extra)
            .arg("--model")
            .arg(model())
            .arg("--source")
            .arg(&manifest)
            .arg("--out")
            .arg(out))
    };
    let out = dir.join("run");
    let o = go(&out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("needs a")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("a.png") && lines[0].contains("background/only_fg"),
        "{err}"
    );
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 2);
    assert_eq!(s["run"]["variants_failed"], 1);
    assert_eq!(s["scenarios"]["background/only_fg"]["n"], 1);
    assert_eq!(s["scenarios"]["clean"]["n"], 2);
    let o = go(&dir.join("strict"), &["--strict"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("--strict"), "{}", text(&o.stderr));
}

#[test]
fn folder_sources_pick_up_masks_and_annotations_next_to_images() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("data");
    let class = root.join("tench");
    std::fs::create_dir_all(&class).unwrap();
    let a = random_scene(96, 64, 5);
    save(&class, "a", &a);
    a.mask.save(class.join("a.mask.png")).unwrap();
    let b = random_scene(80, 80, 6);
    save(&class, "b", &b);
    std::fs::write(class.join("b.mask.npy"), mask_to_npy(&b.mask)).unwrap();
    std::fs::write(class.join("b.xml"), voc((80, 80), b.boxes[0])).unwrap();
    let c = random_scene(50, 40, 7);
    save(&class, "c", &c);
    image::GrayImage::from_pixel(10, 10, image::Luma([255]))
        .save(class.join("c.mask.png"))
        .unwrap();
    let out = d.path().join("run");
    let o = run_on(&root, &out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("c.mask.png is 10x10 but image"), "{err}");
    let s = summary(&out);
    // The .mask.png files are not images of the source.
    assert_eq!(s["frames"]["read"], 2);
    assert_eq!(s["frames"]["skipped"], 1);
    let frames: Vec<String> = records(&out)
        .iter()
        .map(|r| r["frame"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        frames,
        ["tench/a.png", "tench/a.png", "tench/b.png", "tench/b.png"]
    );
}

/// The IN-9 class folders as released (in the order of
/// docs/in9.md#classes-and-the-imagenet-mapping).
const IN9_CLASSES: [&str; 9] = [
    "00_dog",
    "01_bird",
    "02_wheeled vehicle",
    "03_reptile",
    "04_carnivore",
    "05_insect",
    "06_musical instrument",
    "07_primate",
    "08_fish",
];

/// A small IN-9 release: two 224² scenes per class in `original` (with `fg_mask` .npy masks) and
/// `only_fg` (the object on black, named like the original) .
fn in9_release(root: &Path) {
    for (c, class) in IN9_CLASSES.iter().enumerate() {
        for k in 0..2u64 {
            let stem = format!("n{c:08}_{k}");
            let scene = random_scene(224, 224, c as u64 * 10 + k);
            let orig = root.join("original/val").join(class);
            let fg = root.join("only_fg/val").join(class);
            let masks = root.join("fg_mask/val").join(class);
            for dir in [&orig, &fg, &masks] {
                std::fs::create_dir_all(dir).unwrap();
            }
            scene.image.save(orig.join(format!("{stem}.png"))).unwrap();
            let mut only = scene.image.clone();
            for (p, m) in only.pixels_mut().zip(scene.mask.pixels()) {
                if m.0[0] == 0 {
                    p.0 = [0, 0, 0];
                }
            }
            only.save(fg.join(format!("{stem}.png"))).unwrap();
            std::fs::write(masks.join(format!("{stem}.npy")), mask_to_npy(&scene.mask)).unwrap();
        }
    }
}

/// A run config over the release at `root`, scored through `configs/in_to_in9.json` with a copy of
/// the model description without `resize_shorter` (in9_eval.py applies no resize or crop,
/// docs/in9.md#evaluation-preprocessing: the 224² images are the model's input as they are); `top`
/// and `source` are extra lines for the top level and the `[source]` table.
fn in9_config(dir: &Path, root: &Path, top: &str, source: &str) -> PathBuf {
    let model = model_variant(dir, "no_resize.toml", |t| {
        let out = t.replace("resize_shorter = 256", "");
        assert_ne!(out, t);
        out
    });
    let p = dir.join("in9.toml");
    std::fs::write(
        &p,
        format!(
            "model = {model:?}\nout = {:?}\n{top}\n[source]\npath = {root:?}\n{source}\n\
             [dataset]\nclass_map = {:?}\n",
            dir.join("run"),
            crate::util::root().join("configs/in_to_in9.json"),
        ),
    )
    .unwrap();
    p
}

/// Runs the config strictly and returns the run's records.
fn run_config(config: &Path) -> Vec<serde_json::Value> {
    let o = run(robustream()
        .args(["run", "--quiet", "--strict", "--config"])
        .arg(config));
    assert!(o.status.success(), "{}", text(&o.stderr));
    records(&config.parent().unwrap().join("run"))
}

#[test]
fn in9_release_is_scored_in_the_in9_label_space_stored_and_on_the_fly() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("bg_challenge");
    in9_release(&root);
    let in_to_in9 = robustream::source::in9::in_to_in9().unwrap();

    // Stored: every image of `original` and `only_fg` evaluated as it is, under `clean` and
    // `background/only_fg`, image by image; the source kind is detected from the layout.
    let stored_dir = d.path().join("stored");
    std::fs::create_dir_all(&stored_dir).unwrap();
    let config = in9_config(
        &stored_dir,
        &root,
        "scenarios = [\"background/only_fg\"]",
        "",
    );
    let stored = run_config(&config);
    let s = summary(&stored_dir.join("run"));
    assert_eq!(s["frames"]["read"], 36);
    assert!(
        s["run"]["source"]
            .as_str()
            .unwrap()
            .contains("(stored: original, only_fg; 36 images)"),
        "{}",
        s["run"]["source"]
    );
    assert_eq!(stored.len(), 36);
    for (i, r) in stored.iter().enumerate() {
        let frame = r["frame"].as_str().unwrap();
        let class: usize = frame[..2].parse().unwrap();
        let want_key = ["clean", "background/only_fg"][i % 2];
        assert_eq!(r["scenario"], want_key, "{r}");
        assert_eq!(r["truth"], class, "{r}");
        assert!(!frame.ends_with(".png"), "ids are <class>/<stem>: {frame}");
        // pred is the in_to_in9 image of the model's top-1: an IN-9 class or -1 (unmapped).
        let top1 = r["top5"][0].as_u64().unwrap() as usize;
        let pred = r["pred"].as_i64().unwrap();
        assert_eq!(pred, in_to_in9.map(top1).map_or(-1, |c| c as i64), "{r}");
    }
    assert_eq!(stored[0]["frame"], "00_dog/n00000000_0");
    assert_eq!(stored[1]["frame"], "00_dog/n00000000_0");
    assert_eq!(stored[35]["frame"], "08_fish/n00000008_1");
    assert!(s["scenarios"]["background/only_fg"]["n"] == 18);

    // On the fly: `original` alone gives ordinary frames with their fg_mask; the plan's
    // `background/only_fg` computed from image and mask scores exactly as the stored only_fg files.
    let fly_dir = d.path().join("fly");
    std::fs::create_dir_all(&fly_dir).unwrap();
    let config = in9_config(
        &fly_dir,
        &root,
        "scenarios = [\"background/only_fg\"]",
        "kind = \"in9\"\nvariations = [\"original\"]",
    );
    let fly = run_config(&config);
    let s = summary(&fly_dir.join("run"));
    assert_eq!(s["frames"]["read"], 18);
    assert!(
        s["run"]["source"]
            .as_str()
            .unwrap()
            .contains("(original; 18 images, 18 with fg_mask)"),
        "{}",
        s["run"]["source"]
    );
    assert_eq!(fly.len(), 36);
    for (a, b) in stored.iter().zip(&fly) {
        for field in ["frame", "scenario", "truth", "pred", "top5", "prob", "hit5"] {
            assert_eq!(a[field], b[field], "{field}: stored {a} vs on the fly {b}");
        }
    }
}
