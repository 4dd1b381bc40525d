//! The object scenarios through the binary, as a user runs them: Hard ImageNet ablations, RFS region
//! noise and Corner Cases placements with `robustream apply` (and `preview`, `scenarios`) on a
//! procedural scene whose mask and boxes are known to the pixel.

use std::path::{Path, PathBuf};

use crate::util::{model, path, robustream, run, text};
use image::{GrayImage, Luma, RgbImage};
use robustream::frame::BBox;
use robustream::scene::{Background, Object, Shape, render};

const RED: [u8; 3] = [250, 30, 30];
const GREEN: [u8; 3] = [20, 220, 40];
const CHECK_A: [u8; 3] = [30, 60, 90];
const CHECK_B: [u8; 3] = [200, 180, 160];
/// The disc's box, then the rectangle's (the last box: the Corner Cases object).
const DISC: BBox = BBox {
    x0: 40,
    y0: 50,
    x1: 120,
    y1: 130,
};
const RECT: BBox = BBox {
    x0: 200,
    y0: 60,
    x1: 260,
    y1: 200,
};
/// The two boxes of a 320×240 frame, normalised xyxy as `--boxes` takes them.
const BOXES: &str =
    "0.125 0.20833333333333334 0.375 0.5416666666666666;0.625 0.25 0.8125 0.8333333333333334";

/// A 320×240 checkerboard with a red disc and a green rectangle; writes `scene.png` and
/// `mask.png` (0/255) into `dir`.
fn scene(dir: &Path) -> (RgbImage, GrayImage, PathBuf, PathBuf) {
    let s = render(
        320,
        240,
        &Background::checker(CHECK_A, CHECK_B, 10),
        &[
            Object::new(Shape::Disc, DISC, RED),
            Object::new(Shape::Rect, RECT, GREEN),
        ],
    );
    let (img, mask) = (dir.join("scene.png"), dir.join("mask.png"));
    s.image.save(&img).unwrap();
    s.mask.save(&mask).unwrap();
    (s.image, s.mask, img, mask)
}

/// `robustream apply --scenario key <args> input out.png`, returning the image (panics on failure).
fn apply(dir: &Path, key: &str, args: &[&str], input: &Path) -> RgbImage {
    let out = dir.join(format!("{}.png", key.replace('/', "_")));
    let o = run(robustream()
        .args(["apply", "--scenario", key])
        .args(args)
        .arg(input)
        .arg(&out));
    assert!(o.status.success(), "{key}: {}", text(&o.stderr));
    image::open(&out).unwrap().to_rgb8()
}

/// `robustream apply` expected to fail: its stderr.
fn apply_fails(dir: &Path, key: &str, args: &[&str], input: &Path) -> String {
    let o = robustream()
        .args(["apply", "--scenario", key])
        .args(args)
        .arg(input)
        .arg(dir.join("never.png"))
        .output()
        .unwrap();
    assert!(!o.status.success(), "{key} should fail");
    assert!(!dir.join("never.png").exists());
    text(&o.stderr)
}

fn inside(b: BBox, x: u32, y: u32) -> bool {
    x >= b.x0 && x < b.x1 && y >= b.y0 && y < b.y1
}

#[test]
fn ablations_gray_gray_bbox_and_tile() {
    let d = tempfile::tempdir().unwrap();
    let (img, mask, input, m) = scene(d.path());
    let with_mask = ["--mask", path(&m)];

    let gray = apply(d.path(), "ablation/gray", &with_mask, &input);
    for (x, y, p) in gray.enumerate_pixels() {
        let want = if mask.get_pixel(x, y).0[0] != 0 {
            [128; 3]
        } else {
            img.get_pixel(x, y).0
        };
        assert_eq!(p.0, want, "gray ({x}, {y})");
    }

    // The mask's tight box is [40, 260) × [50, 200); gray_bbox leaves out its last row and column.
    let bbox = apply(d.path(), "ablation/gray_bbox", &with_mask, &input);
    let filled = BBox::new(40, 50, 259, 199);
    for (x, y, p) in bbox.enumerate_pixels() {
        let want = if inside(filled, x, y) {
            [128; 3]
        } else {
            img.get_pixel(x, y).0
        };
        assert_eq!(p.0, want, "gray_bbox ({x}, {y})");
    }

    // Tile: the components' exclusive-max boxes hold background (checker) pixels only; everything
    // else is untouched (including the objects' last row and column).
    let tile = apply(d.path(), "ablation/tile", &with_mask, &input);
    let boxes = [BBox::new(40, 50, 119, 129), BBox::new(200, 60, 259, 199)];
    for (x, y, p) in tile.enumerate_pixels() {
        if boxes.iter().any(|b| inside(*b, x, y)) {
            assert!(
                p.0 == CHECK_A || p.0 == CHECK_B,
                "tile ({x}, {y}) = {:?}",
                p.0
            );
        } else {
            assert_eq!(p.0, img.get_pixel(x, y).0, "tile ({x}, {y})");
        }
    }
    assert_eq!(tile.get_pixel(259, 100).0, GREEN);
}

#[test]
fn region_noise_fg_and_bg_share_one_noise_tensor() {
    let d = tempfile::tempdir().unwrap();
    let (img, mask, input, m) = scene(d.path());
    let inverted = GrayImage::from_fn(320, 240, |x, y| {
        Luma([if mask.get_pixel(x, y).0[0] == 0 {
            255
        } else {
            0
        }])
    });
    let inv = d.path().join("inverted.png");
    inverted.save(&inv).unwrap();
    let args = |mask: &Path| {
        vec![
            "--mask".to_string(),
            path(mask).to_string(),
            "--seed".into(),
            "7".into(),
        ]
    };
    let a = args(&m);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let fg = apply(d.path(), "region_noise/fg/linf/0.25/t1", &a, &input);
    let bg = apply(d.path(), "region_noise/bg/linf/0.25/t1", &a, &input);
    let mut changed = (0, 0);
    for (x, y, p) in fg.enumerate_pixels() {
        let object = mask.get_pixel(x, y).0[0] != 0;
        let q = bg.get_pixel(x, y);
        let orig = img.get_pixel(x, y);
        if object {
            assert_eq!(q, orig, "bg noise on the object at ({x}, {y})");
            changed.0 += usize::from(p != orig);
        } else {
            assert_eq!(p, orig, "fg noise on the background at ({x}, {y})");
            changed.1 += usize::from(q != orig);
        }
    }
    assert!(changed.0 > 5000 && changed.1 > 40_000, "{changed:?}");
    // The background of the inverted mask is the object: the same elements, the same noise (the
    // fg and bg keys share their randomness), hence the same bytes.
    let b = args(&inv);
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    let bg_inverted = apply(d.path(), "region_noise/bg/linf/0.25/t1", &b, &input);
    assert_eq!(bg_inverted, fg);
    let l2_fg = apply(d.path(), "region_noise/fg/l2/60/t1", &a, &input);
    let l2_bg_inverted = apply(d.path(), "region_noise/bg/l2/60/t1", &b, &input);
    assert_eq!(l2_fg, l2_bg_inverted);
    // Another trial draws another tensor.
    assert_ne!(
        apply(d.path(), "region_noise/fg/linf/0.25/t2", &a, &input),
        fg
    );
}

#[test]
fn placements_paste_the_last_box_on_the_own_background() {
    let d = tempfile::tempdir().unwrap();
    let (img, _, input, _) = scene(d.path());
    let with_boxes = ["--boxes", BOXES];
    // 56 on a 224 canvas → 60 on this 320×240 one; the last box is the green rectangle, pasted at
    // (160 − 30, 120 − 30); both boxes are gray.
    let out = apply(
        d.path(),
        "placement/own-gray/centre/56",
        &with_boxes,
        &input,
    );
    let patch = BBox::new(130, 90, 190, 150);
    for (x, y, p) in out.enumerate_pixels() {
        let want = if inside(patch, x, y) {
            GREEN
        } else if inside(DISC, x, y) || inside(RECT, x, y) {
            [128; 3]
        } else {
            img.get_pixel(x, y).0
        };
        assert_eq!(p.0, want, "({x}, {y})");
    }
    // Aspect ratio kept: 60×140 with short side 120 is 120×280, capped at 240 → 102×240, flush
    // with the top-right corner.
    let out = apply(
        d.path(),
        "placement/ar/own-tile/top-right/112",
        &with_boxes,
        &input,
    );
    let patch = BBox::new(218, 0, 320, 240);
    for (x, y, p) in out.enumerate_pixels() {
        if inside(patch, x, y) {
            assert_eq!(p.0, GREEN, "({x}, {y})");
        } else if inside(DISC, x, y) || inside(RECT, x, y) {
            // Tile-filled from the checkerboard.
            assert!(p.0 == CHECK_A || p.0 == CHECK_B, "({x}, {y}) = {:?}", p.0);
        } else {
            assert_eq!(p.0, img.get_pixel(x, y).0, "({x}, {y})");
        }
    }
    // With a mask only, the object is the mask's tight box (both objects).
    let (_, _, _, m) = scene(d.path());
    let out = apply(
        d.path(),
        "placement/own-gray/top-right/112",
        &["--mask", path(&m)],
        &input,
    );
    assert_eq!(out.get_pixel(0, 0).0, img.get_pixel(0, 0).0);
    assert_eq!(out.get_pixel(100, 100).0, [128; 3]);
    assert_eq!(out.dimensions(), (320, 240));
}

#[test]
fn missing_masks_and_pool_backgrounds_fail_with_clear_lines() {
    let d = tempfile::tempdir().unwrap();
    let (_, _, input, _) = scene(d.path());
    for key in [
        "ablation/tile",
        "region_noise/fg/linf/0.25/t1",
        "placement/own-gray/centre/56",
    ] {
        let err = apply_fails(d.path(), key, &[], &input);
        assert!(
            err.contains(&format!("scenario `{key}` needs a foreground mask")),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let err = apply_fails(
        d.path(),
        "placement/other/centre/84",
        &["--boxes", BOXES],
        &input,
    );
    // No stream here, so no pool: the line says what is missing and both ways to give it.
    assert!(
        err.contains("scenario `placement/other/centre/84` needs backgrounds from earlier frames")
            && err.contains("--background IMG[:CLASS]")
            && err.contains("robustream run"),
        "{err}"
    );
}

#[test]
fn model_view_catalogue_and_preview() {
    let d = tempfile::tempdir().unwrap();
    let (_, _, input, m) = scene(d.path());
    let model = model();
    for key in [
        "ablation/tile",
        "region_noise/bg/l2/180/t3",
        "placement/own-tile/random-corner/84",
    ] {
        let out = apply(
            d.path(),
            key,
            &["--mask", path(&m), "--model", path(&model)],
            &input,
        );
        assert_eq!(out.dimensions(), (224, 224), "{key}");
    }

    let o = run(robustream().arg("scenarios"));
    let listing = text(&o.stdout);
    for name in [
        "ablation/gray_bbox",
        "region_noise/bg/l2/180/t3",
        "placement/ar/other/random-corner/112",
        "hard-imagenet",
        "rfs-all",
        "corner-cases-ar",
    ] {
        assert!(listing.contains(name), "{name} not listed");
    }

    let sheet = d.path().join("sheet.png");
    let o = run(robustream()
        .args(["preview", "--scenarios", "hard-imagenet,rfs,corner-cases"])
        .args(["--image", path(&input), "--mask", path(&m)])
        .args(["--out", path(&sheet)]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sheet = image::open(&sheet).unwrap();
    assert!(sheet.width() > 500 && sheet.height() > 500);
}

/// The fixtures of `scripts/make_ablation_fixtures.py` (an independent numpy/scipy/Pillow
/// implementation).
fn fixture(name: &str) -> PathBuf {
    crate::util::root()
        .join("tests/fixtures/objects")
        .join(name)
}

#[test]
fn ablations_match_the_python_fixtures_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    let mask = fixture("abl_mask.png");
    for name in ["gray", "gray_bbox", "tile"] {
        let out = apply(
            d.path(),
            &format!("ablation/{name}"),
            &["--mask", path(&mask)],
            &fixture("abl_image.png"),
        );
        let want = image::open(fixture(&format!("abl_{name}.png")))
            .unwrap()
            .to_rgb8();
        let off = out
            .enumerate_pixels()
            .filter(|(x, y, p)| *p != want.get_pixel(*x, *y))
            .map(|(x, y, _)| (x, y))
            .collect::<Vec<_>>();
        assert!(
            off.is_empty(),
            "{name}: {} pixels differ, first {:?}",
            off.len(),
            off.first()
        );
    }
}

#[test]
fn placements_match_the_python_fixtures_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("place.json")).unwrap()).unwrap();
    let cases = spec["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 5);
    for case in cases {
        let key = case["key"].as_str().unwrap();
        let out = apply(
            d.path(),
            key,
            &["--boxes", case["boxes"].as_str().unwrap()],
            &fixture("place_image.png"),
        );
        let want = image::open(fixture(case["expected"].as_str().unwrap()))
            .unwrap()
            .to_rgb8();
        let off = out
            .enumerate_pixels()
            .filter(|(x, y, p)| *p != want.get_pixel(*x, *y))
            .map(|(x, y, _)| (x, y))
            .collect::<Vec<_>>();
        assert!(
            off.is_empty(),
            "{key}: {} pixels differ, first {:?}",
            off.len(),
            off.first()
        );
    }
}

/// Six procedural scenes with exact masks, alternating between two classes, as a manifest.
fn stream(dir: &Path) -> PathBuf {
    let mut rows = vec!["path,label,mask".to_string()];
    for i in 0..6u64 {
        let s = robustream::scene::random_scene(240, 180, 300 + i);
        s.image.save(dir.join(format!("s{i}.png"))).unwrap();
        s.mask.save(dir.join(format!("s{i}_mask.png"))).unwrap();
        rows.push(format!("s{i}.png,{},s{i}_mask.png", i % 2));
    }
    let m = dir.join("stream.csv");
    std::fs::write(&m, rows.join("\n") + "\n").unwrap();
    m
}

#[test]
fn a_run_evaluates_every_object_family_and_repeats_exactly() {
    let d = tempfile::tempdir().unwrap();
    let source = stream(d.path());
    let keys = "ablation/tile,region_noise/fg/linf/0.25/t1,region_noise/bg/linf/0.25/t1,placement/other/centre/84";
    let go = |out: &Path, workers: &str, batch: &str| {
        let o = run(robustream()
            .args(["run", "--quiet", "--seed", "3", "--scenarios", keys])
            .args(["--workers", workers, "--batch", batch])
            .args(["--model", path(&model()), "--source", path(&source)])
            .args(["--out", path(out)]));
        assert!(o.status.success(), "{}", text(&o.stderr));
        crate::util::records(out)
            .into_iter()
            .map(|mut r| {
                r.as_object_mut().unwrap().remove("ms");
                r
            })
            .collect::<Vec<_>>()
    };
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let ra = go(&a, "1", "1");
    assert_eq!(
        ra,
        go(&b, "3", "8"),
        "records must not depend on scheduling"
    );
    let evaluated = |frame: &str| -> Vec<&str> {
        ra.iter()
            .filter(|r| r["frame"] == frame)
            .map(|r| r["scenario"].as_str().unwrap())
            .collect()
    };
    // Frame 0 has no earlier frame to take a background from; from frame 1 on (an earlier frame of
    // the other class exists) every key is evaluated.
    assert_eq!(
        evaluated("s0.png"),
        [
            "clean",
            "ablation/tile",
            "region_noise/fg/linf/0.25/t1",
            "region_noise/bg/linf/0.25/t1"
        ]
    );
    for i in 1..6 {
        assert_eq!(evaluated(&format!("s{i}.png")).len(), 5, "frame {i}");
    }
    assert_eq!(crate::util::summary(&a)["run"]["variants_failed"], 1);
}
