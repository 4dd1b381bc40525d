//! The background scenarios (IN-9, docs/in9.md#how-the-variations-are-built; XIMAGENET-12,
//! docs/ximagenet.md#scenarios) driven as a user would: `robustream apply` and `robustream preview`
//! on a procedural scene written as PNG with its exact mask.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use image::{GrayImage, RgbImage};
use robustream::frame::BBox;
use robustream::scenario::background::{IN9, XIMAGENET12};
use robustream::scene::{Background, Object, Shape, render};

const OBJECT: [u8; 3] = [250, 220, 0];

/// A 96×80 scene: a yellow disc on a red/blue checker (saturated, so recolouring shows), written as
/// `scene.png` and `mask.png` into `dir`.
fn scene(dir: &Path) -> (PathBuf, PathBuf, RgbImage, GrayImage) {
    let s = render(
        96,
        80,
        &Background::checker([200, 30, 30], [30, 40, 190], 8),
        &[Object::new(Shape::Disc, BBox::new(20, 16, 70, 60), OBJECT)],
    );
    let (img, mask) = (dir.join("scene.png"), dir.join("mask.png"));
    s.image.save(&img).unwrap();
    s.mask.save(&mask).unwrap();
    (img, mask, s.image, s.mask)
}

fn keys() -> Vec<String> {
    IN9.iter()
        .chain(XIMAGENET12)
        .map(|(leaf, _)| format!("background/{leaf}"))
        .collect()
}

fn uses_pool(key: &str) -> bool {
    key.contains("/mixed_") || key.contains("/random_bg_")
}

fn apply(key: &str, img: &Path, mask: Option<&Path>, out: &Path, seed: u64) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_robustream"));
    c.args(["apply", "--scenario", key, "--seed", &seed.to_string()]);
    if let Some(m) = mask {
        c.arg("--mask").arg(m);
    }
    c.arg(img).arg(out);
    c.output().expect("robustream runs")
}

#[test]
fn every_background_key_applies_to_a_photo_with_a_mask() {
    let d = tempfile::tempdir().unwrap();
    let (img, mask, pixels, mask_px) = scene(d.path());
    for key in keys() {
        let name = key.replace('/', "_");
        let out = d.path().join(format!("{name}.png"));
        let o = apply(&key, &img, Some(&mask), &out, 3);
        if uses_pool(&key) {
            // apply has one image and no earlier frames: a clear error, not a panic or a silent copy.
            assert_eq!(o.status.code(), Some(1), "{key}");
            let err = crate::util::text(&o.stderr);
            assert!(
                err.contains(&key) && err.contains("robustream run"),
                "{key}: {err}"
            );
            assert!(!out.exists(), "{key}");
            continue;
        }
        assert!(
            o.status.success(),
            "{key}: {}",
            crate::util::text(&o.stderr)
        );
        let got = image::open(&out).unwrap().into_rgb8();
        assert_eq!(got.dimensions(), (96, 80), "{key}");
        if key == "background/transparent" {
            // The reference's RGBA with its alpha dropped, as its loader reads it: the image
            // itself.
            assert_eq!(got, pixels, "{key}");
            continue;
        }
        assert_ne!(got, pixels, "{key} changed nothing");
        // Same seed, same bytes.
        let again = d.path().join(format!("{name}_again.png"));
        assert!(apply(&key, &img, Some(&mask), &again, 3).status.success());
        assert_eq!(image::open(&again).unwrap().into_rgb8(), got, "{key}");
        // Which side changed: the object side, the background side, or both (by definition).
        let (mut obj_changed, mut bg_changed) = (false, false);
        for (x, y, m) in mask_px.enumerate_pixels() {
            let changed = got.get_pixel(x, y) != pixels.get_pixel(x, y);
            if m.0[0] > 0 {
                obj_changed |= changed;
            } else {
                bg_changed |= changed;
            }
        }
        let leaf = key.trim_start_matches("background/");
        let (want_obj, want_bg) = match leaf {
            "only_fg" | "segmented" => (false, true),
            "no_fg" | "blur_obj" | "bright_obj" => (true, false),
            // The box of a disc holds object and background pixels.
            "only_bg_b" | "only_bg_t" => (true, true),
            _ => (false, true),
        };
        assert_eq!((obj_changed, bg_changed), (want_obj, want_bg), "{key}");
    }
}

#[test]
fn exact_pixels_of_the_masking_scenarios() {
    let d = tempfile::tempdir().unwrap();
    let (img, mask, pixels, _) = scene(d.path());
    let run = |key: &str| {
        let out = d.path().join("out.png");
        assert!(apply(key, &img, Some(&mask), &out, 0).status.success());
        image::open(&out).unwrap().into_rgb8()
    };
    // Disc centre (45, 38) is object, the corner (0, 0) background.
    let fg = run("background/only_fg");
    assert_eq!(fg.get_pixel(45, 38).0, OBJECT);
    assert_eq!(fg.get_pixel(0, 0).0, [0, 0, 0]);
    let nf = run("background/no_fg");
    assert_eq!(nf.get_pixel(45, 38).0, [0, 0, 0]);
    assert_eq!(nf.get_pixel(0, 0), pixels.get_pixel(0, 0));
    let bb = run("background/only_bg_b");
    // The disc's box is [20, 70) × [16, 60): a box corner outside the disc is black too.
    assert_eq!(bb.get_pixel(20, 16).0, [0, 0, 0]);
    assert_eq!(bb.get_pixel(19, 16), pixels.get_pixel(19, 16));
    // only_bg_t, as the reference cuts it from the inclusive corner xmax = 69: the right strip
    // [69, 96) (margin 96 − 69 = 27; 27 · 80 > (80 − 59) · 96) tiles the box from x = 0: pixel
    // (x, y) of the box = pixel (69 + x mod 27, y).
    let bt = run("background/only_bg_t");
    for (x, y) in [(20, 16), (45, 38), (69, 59)] {
        assert_eq!(
            bt.get_pixel(x, y),
            pixels.get_pixel(69 + x % 27, y),
            "{x} {y}"
        );
    }
    assert_eq!(run("background/segmented"), fg);
}

#[test]
fn a_key_that_needs_a_mask_says_so_without_one() {
    let d = tempfile::tempdir().unwrap();
    let (img, _, _, _) = scene(d.path());
    for key in [
        "background/blur_bg",
        "background/only_fg",
        "background/only_bg_t",
    ] {
        let out = d.path().join("out.png");
        let o = apply(key, &img, None, &out, 0);
        assert_eq!(o.status.code(), Some(1), "{key}");
        let err = crate::util::text(&o.stderr);
        assert!(
            err.contains(&format!("scenario `{key}` needs a foreground mask")),
            "{key}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

#[test]
fn preview_draws_both_groups() {
    let d = tempfile::tempdir().unwrap();
    let (img, mask, _, _) = scene(d.path());
    let sheet = d.path().join("sheet.png");
    let o = Command::new(env!("CARGO_BIN_EXE_robustream"))
        .args(["preview", "--scenarios", "in9,ximagenet12", "--mask"])
        .arg(&mask)
        .arg("--image")
        .arg(&img)
        .arg("--out")
        .arg(&sheet)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", crate::util::text(&o.stderr));
    let stdout = crate::util::text(&o.stdout);
    // clean + 20 background variants.
    assert!(stdout.contains("21 variants"), "{stdout}");
    // The five pool scenarios are grey tiles with a warning each; the others drew.
    let err = crate::util::text(&o.stderr);
    assert_eq!(err.matches("drawn as a grey tile").count(), 5, "{err}");
    assert!(image::open(&sheet).is_ok());
}

#[test]
fn transparent_images_on_their_mattes_are_exact() {
    let d = tempfile::tempdir().unwrap();
    let (img, mask, pixels, mask_px) = scene(d.path());
    for (leaf, matte) in [
        ("transparent_on/black", [0, 0, 0]),
        ("transparent_on/white", [255, 255, 255]),
        ("transparent_on/grey", [128, 128, 128]),
        ("transparent_on/00Ff80", [0, 255, 128]),
    ] {
        let out = d.path().join("t.png");
        let o = apply(&format!("background/{leaf}"), &img, Some(&mask), &out, 0);
        assert!(
            o.status.success(),
            "{leaf}: {}",
            crate::util::text(&o.stderr)
        );
        let got = image::open(&out).unwrap().into_rgb8();
        for (x, y, m) in mask_px.enumerate_pixels() {
            let want = if m.0[0] > 0 {
                pixels.get_pixel(x, y).0
            } else {
                matte
            };
            assert_eq!(got.get_pixel(x, y).0, want, "{leaf} at {x},{y}");
        }
    }
    // A matte that is not a colour is an unknown scenario, named, with where to find the list.
    let o = apply(
        "background/transparent_on/grey50",
        &img,
        Some(&mask),
        &d.path().join("x.png"),
        0,
    );
    assert_eq!(o.status.code(), Some(1), "{}", crate::util::text(&o.stderr));
    let err = crate::util::text(&o.stderr);
    assert!(
        err.contains("unknown scenario `background/transparent_on/grey50`")
            && err.contains("robustream scenarios"),
        "{err}"
    );
}

#[test]
fn random_background_squashes_the_object_onto_a_whole_image_of_another_size() {
    let d = tempfile::tempdir().unwrap();
    let (img, mask, pixels, mask_px) = scene(d.path());
    // A 64×50 photo-like background, given without a mask: taken whole (generated_background.py's
    // background is a whole image). The variant has its size.
    let bg = RgbImage::from_fn(64, 50, |x, y| {
        image::Rgb([(x * 3) as u8, (y * 5) as u8, ((x + y) * 2) as u8])
    });
    let bg_path = d.path().join("bg.png");
    bg.save(&bg_path).unwrap();
    let segmented = RgbImage::from_fn(96, 80, |x, y| {
        if mask_px.get_pixel(x, y).0[0] > 0 {
            *pixels.get_pixel(x, y)
        } else {
            image::Rgb([0, 0, 0])
        }
    });
    let fg = robustream::kernels::opencv::resize_linear(&segmented, 64, 50);
    let out = d.path().join("r.png");
    let o = Command::new(env!("CARGO_BIN_EXE_robustream"))
        .args(["apply", "--scenario", "background/random_bg_add", "--mask"])
        .arg(&mask)
        .arg("--background")
        .arg(&bg_path)
        .arg(&img)
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", crate::util::text(&o.stderr));
    let got = image::open(&out).unwrap().into_rgb8();
    assert_eq!(got.dimensions(), (64, 50));
    for ((g, b), f) in got.as_raw().iter().zip(bg.as_raw()).zip(fg.as_raw()) {
        assert_eq!(u16::from(*g), (u16::from(*b) + u16::from(*f)).min(255));
    }
    // The object is there (squashed), the corner is the background's.
    assert_eq!(got.get_pixel(0, 0), bg.get_pixel(0, 0));
    assert_ne!(got.get_pixel(30, 24), bg.get_pixel(30, 24));
}
