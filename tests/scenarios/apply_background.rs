//! Pool scenarios in `robustream apply` and `preview` with `--background`
//! (docs/in9.md#mixed-same-mixed-rand-and-mixed-next, docs/corner-cases.md#composition,
//! docs/ximagenet.md#random-background):
//! on the quokka with its mask and the real model's view, the backgrounds given fill the pool for
//! that one frame; `mixed_same` takes one of the frame's class (`--class`), a background with a mask
//! next to it gives its Only-BG-T (as the pool of a run), one without is taken whole, a manifest gives
//! its rows; without backgrounds these scenarios fail (apply) or are grey (preview) with a hint.

use std::path::{Path, PathBuf};

use crate::util::*;
use image::RgbImage;

/// `robustream apply --model … --mask quokka_mask.png <extra> quokka.jpg out`; the output image, or
/// the error text.
fn apply(dir: &Path, name: &str, scenario: &str, extra: &[&str]) -> Result<RgbImage, String> {
    let out = dir.join(format!("{name}.png"));
    let o = robustream()
        .args(["apply", "--scenario", scenario, "--model"])
        .arg(model())
        .arg("--mask")
        .arg(photo("quokka_mask.png"))
        .args(extra)
        .arg(photo("quokka.jpg"))
        .arg(&out)
        .output()
        .unwrap();
    match o.status.success() {
        true => Ok(image::open(&out).unwrap().to_rgb8()),
        false => Err(text(&o.stderr)),
    }
}

/// The model's view of a photo (`apply --scenario clean --model`).
fn view(dir: &Path, photo_name: &str) -> RgbImage {
    let out = dir.join(format!("view_{photo_name}.png"));
    let o = run(robustream()
        .args(["apply", "--scenario", "clean", "--model"])
        .arg(model())
        .arg(photo(photo_name))
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    image::open(&out).unwrap().to_rgb8()
}

fn arg(p: PathBuf, class: &str) -> String {
    format!("{}:{class}", p.display())
}

/// The share of pixels outside the object (black in `only_fg`) where `a` equals `b`.
fn background_agreement(only_fg: &RgbImage, a: &RgbImage, b: &RgbImage) -> (f64, usize) {
    let outside: Vec<usize> = only_fg
        .pixels()
        .enumerate()
        .filter(|(_, p)| p.0 == [0, 0, 0])
        .map(|(i, _)| i)
        .collect();
    let same = outside
        .iter()
        .filter(|&&i| {
            let (x, y) = ((i % 224) as u32, (i / 224) as u32);
            a.get_pixel(x, y) == b.get_pixel(x, y)
        })
        .count();
    (same as f64 / outside.len() as f64, outside.len())
}

#[test]
fn apply_fills_the_pool_from_background_options() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let flower = arg(photo("flower.jpg"), "wallaby");
    let china = arg(photo("china.jpg"), "palace");

    // No backgrounds: the pool scenario fails and says how to give some.
    let e = apply(
        dir,
        "none",
        "background/mixed_same",
        &["--class", "wallaby"],
    )
    .unwrap_err();
    assert!(e.contains("--background"), "{e}");

    // mixed_same takes the background of the frame's own class, whatever else is given.
    let both = apply(
        dir,
        "both",
        "background/mixed_same",
        &[
            "--class",
            "wallaby",
            "--background",
            &china,
            "--background",
            &flower,
        ],
    )
    .unwrap();
    let same = apply(
        dir,
        "same",
        "background/mixed_same",
        &["--class", "wallaby", "--background", &flower],
    )
    .unwrap();
    assert_eq!(both, same);
    let other = apply(
        dir,
        "other",
        "background/mixed_same",
        &[
            "--class",
            "104",
            "--background",
            &arg(photo("china.jpg"), "104"),
        ],
    )
    .unwrap();
    assert_ne!(both, other);
    // No background of the frame's class: the pool has nothing suitable (as a run's warm-up).
    let e = apply(
        dir,
        "none_same",
        "background/mixed_same",
        &["--class", "palace", "--background", &flower],
    )
    .unwrap_err();
    assert!(e.contains("background pool warming up"), "{e}");
    // mixed_same needs the frame's class.
    let e = apply(
        dir,
        "noclass",
        "background/mixed_same",
        &["--background", &flower],
    )
    .unwrap_err();
    assert!(e.contains("ground truth"), "{e}");

    // A background without a mask is taken whole: outside the object the variant is the flower's
    // model view (the object's own pixels are the quokka's).
    let only_fg = apply(dir, "only_fg", "background/only_fg", &[]).unwrap();
    let flower_view = view(dir, "flower.jpg");
    let (agree, outside) = background_agreement(&only_fg, &same, &flower_view);
    assert!(outside > 10_000, "{outside}");
    assert!(agree > 0.97, "{agree}");
    let clean = view(dir, "quokka.jpg");
    let (agree_clean, _) = background_agreement(&only_fg, &same, &clean);
    assert!(agree_clean < 0.05, "{agree_clean}");

    // A background with its mask next to it (`<stem>.mask.png`) gives its Only-BG-T, as the pool of a
    // run makes it: here the quokka as its own background, so outside the object the variant is
    // `background/only_bg_t` of the quokka.
    let bgdir = dir.join("bgs");
    std::fs::create_dir_all(&bgdir).unwrap();
    std::fs::copy(photo("quokka.jpg"), bgdir.join("q.jpg")).unwrap();
    std::fs::copy(photo("quokka_mask.png"), bgdir.join("q.mask.png")).unwrap();
    let masked = apply(
        dir,
        "masked",
        "background/mixed_rand",
        &["--background", bgdir.join("q.jpg").to_str().unwrap()],
    )
    .unwrap();
    let only_bg_t = apply(dir, "only_bg_t", "background/only_bg_t", &[]).unwrap();
    let (agree, _) = background_agreement(&only_fg, &masked, &only_bg_t);
    assert!(agree > 0.97, "{agree}");
    // Without the mask the same image is taken whole: a different variant.
    std::fs::remove_file(bgdir.join("q.mask.png")).unwrap();
    let whole = apply(
        dir,
        "whole",
        "background/mixed_rand",
        &["--background", bgdir.join("q.jpg").to_str().unwrap()],
    )
    .unwrap();
    assert_ne!(whole, masked);
    // A manifest gives its rows with their masks (a manifest without boxes: the mask's box, as
    // above) ...
    let csv = dir.join("bgs.csv");
    std::fs::write(
        &csv,
        format!(
            "path,label,mask\n{},wallaby,{}\n",
            photo("quokka.jpg").display(),
            photo("quokka_mask.png").display()
        ),
    )
    .unwrap();
    let manifest = apply(
        dir,
        "manifest",
        "background/mixed_rand",
        &["--background", csv.to_str().unwrap()],
    )
    .unwrap();
    assert_eq!(manifest, masked);
    // ... and boxes (assets/photos/masks.csv: the quokka with its annotated box, which IN-9's
    // Only-BG-T tiles over instead of the mask's box).
    let boxed = apply(
        dir,
        "boxed",
        "background/mixed_rand",
        &["--background", photo("masks.csv").to_str().unwrap()],
    )
    .unwrap();
    assert_ne!(boxed, whole);

    // Placement on another class's background: needs a background of a class other than --class.
    let e = apply(
        dir,
        "po_none",
        "placement/other/centre/112",
        &["--class", "wallaby", "--background", &flower],
    )
    .unwrap_err();
    assert!(e.contains("warming up"), "{e}");
    apply(
        dir,
        "po",
        "placement/other/centre/112",
        &[
            "--class",
            "wallaby",
            "--background",
            &flower,
            "--background",
            &china,
        ],
    )
    .unwrap();

    // Class names need the model's labels; a bad class is one clear line.
    let e = apply(
        dir,
        "badclass",
        "background/mixed_rand",
        &["--background", &arg(photo("flower.jpg"), "unicorn")],
    )
    .unwrap_err();
    assert!(
        e.contains("unicorn") && e.trim().lines().count() == 1,
        "{e}"
    );
}

/// `robustream preview` on the quokka (+ mask) with the model; returns (stdout, stderr, sheet).
fn preview(dir: &Path, name: &str, groups: &str, extra: &[&str]) -> (String, String, RgbImage) {
    let out = dir.join(format!("{name}.png"));
    let o = run(robustream()
        .args(["preview", "--image"])
        .arg(photo("quokka.jpg"))
        .arg("--model")
        .arg(model())
        .args(["--scenarios", groups, "--tile", "96", "--out"])
        .arg(&out)
        .args(extra));
    assert!(o.status.success(), "{}", text(&o.stderr));
    (
        text(&o.stdout),
        text(&o.stderr),
        image::open(&out).unwrap().to_rgb8(),
    )
}

#[test]
fn preview_sheets_of_the_background_and_object_groups_with_backgrounds() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let groups = "in9,ximagenet12,hard-imagenet,corner-cases,rfs";
    let mask = photo("quokka_mask.png");
    let mask = mask.to_str().unwrap();

    // Without backgrounds: the pool scenarios are grey, each with a hint.
    let (_, err, plain) = preview(dir, "plain", groups, &["--mask", mask]);
    let warned: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert!(!warned.is_empty());
    for w in &warned {
        assert!(w.contains("--background"), "{w}");
    }
    for key in [
        "background/mixed_same",
        "background/mixed_rand",
        "background/mixed_next",
        "background/random_bg_add",
        "background/random_bg_paste",
        "placement/other/",
    ] {
        assert!(warned.iter().any(|w| w.contains(key)), "{key}: {err}");
    }

    // With backgrounds of the frame's class and another: every tile draws, no warning at all.
    let flower = arg(photo("flower.jpg"), "wallaby");
    let china = arg(photo("china.jpg"), "palace");
    let (out, err, full) = preview(
        dir,
        "full",
        groups,
        &[
            "--mask",
            mask,
            "--class",
            "wallaby",
            "--background",
            &flower,
            "--background",
            &china,
        ],
    );
    assert!(!err.contains("warning"), "{err}");
    assert!(out.starts_with("wrote "), "{out}");
    assert_eq!(plain.dimensions(), full.dimensions());
    assert_ne!(plain, full);

    // The corner panel with the mask outline is drawn (only) when a mask is given: the sheet with a
    // mask is taller by the panel row.
    let (_, _, no_mask) = preview(dir, "no_mask", "ximagenet12", &[]);
    let (_, _, with_mask) = preview(dir, "with_mask", "ximagenet12", &["--mask", mask]);
    assert_eq!(no_mask.width(), with_mask.width());
    assert!(
        with_mask.height() >= no_mask.height() + 96,
        "{:?} vs {:?}",
        with_mask.dimensions(),
        no_mask.dimensions()
    );
}
