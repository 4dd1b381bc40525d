//! `robustream preview` driven as a user would: the contact sheet of the real photo on the real model
//! description, checked tile by tile against what `robustream apply` writes.

use std::path::{Path, PathBuf};

use crate::util::*;
use image::{GrayImage, RgbImage};
use robustream::app::preview::{
    BACKGROUND, BAND_GAP, DEFAULT_TILE, FAILED, GAP, Geometry, HEADER_H, LABEL_PAD, LETTERBOX,
    MARGIN, Rect, grid, placement, scale_to_tile,
};
use robustream::kernels::resample::Resampler;
use robustream::model::ModelDesc;
use robustream::scenario::{Catalog, Plan};
use robustream::view::{MaskResize, ModelView};

fn rgb(path: &Path) -> RgbImage {
    image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgb8()
}

fn crop(sheet: &RgbImage, r: Rect) -> RgbImage {
    image::imageops::crop_imm(sheet, r.x, r.y, r.width, r.height).to_image()
}

/// Runs `robustream apply` and returns its output.
fn apply(dir: &Path, name: &str, args: &[&str], input: &Path) -> RgbImage {
    let out = dir.join(name);
    let o = run(robustream().arg("apply").args(args).arg(input).arg(&out));
    assert!(o.status.success());
    rgb(&out)
}

/// Runs `robustream preview` with `args` on `image`, returns the sheet and stdout.
fn preview(dir: &Path, image: &Path, args: &[&str]) -> (RgbImage, String) {
    let out = dir.join("sheet.png");
    let o = run(robustream()
        .arg("preview")
        .arg("--image")
        .arg(image)
        .args(args)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success());
    (rgb(&out), text(&o.stdout))
}

fn rows_of(items: &[&str]) -> Vec<robustream::app::preview::Row> {
    grid(&Plan::from_items(items, &Catalog::builtin()).unwrap().keys())
}

fn has_ink(sheet: &RgbImage, r: Rect) -> bool {
    crop(sheet, r).pixels().any(|p| p.0 != BACKGROUND)
}

fn model_str() -> String {
    model().to_str().unwrap().to_string()
}

#[test]
fn imagenet_c_all_sheet_shows_what_apply_writes() {
    let d = tempfile::tempdir().unwrap();
    let coffee = photo("coffee.png");
    let m = model_str();
    let (sheet, stdout) = preview(
        d.path(),
        &coffee,
        &["--scenarios", "imagenet-c-all", "--model", &m],
    );
    assert!(
        stdout.contains("96 variants in 19 rows x 6 columns"),
        "{stdout}"
    );

    // Size: 19 rows × (clean + 5 severities), plus the title, header and label bands.
    let rows = rows_of(&["imagenet-c-all"]);
    let g = Geometry::new(&rows, DEFAULT_TILE, false);
    let t = DEFAULT_TILE;
    assert_eq!(
        (g.width, g.height),
        (
            2 * MARGIN + g.label_width + LABEL_PAD + 6 * t + 5 * GAP,
            2 * MARGIN + 16 + BAND_GAP + HEADER_H + 19 * t + 18 * GAP
        )
    );
    assert_eq!(sheet.dimensions(), (g.width, g.height));

    // Every row's clean tile is the model view (what `apply --scenario clean --model` writes) scaled.
    let view = apply(
        d.path(),
        "clean.png",
        &["--scenario", "clean", "--model", &m],
        &coffee,
    );
    assert_eq!(view.dimensions(), (224, 224));
    let clean_tile = scale_to_tile(&view, t, &mut Resampler::new());
    assert_eq!(clean_tile.dimensions(), (t, t));
    for r in 0..rows.len() {
        assert_eq!(crop(&sheet, g.cell(r, 0)), clean_tile, "row {r}");
    }

    // Corruption tiles are apply's output (same seed 0, frame id = file name) scaled the same way:
    // random ones (keyed randomness), a deterministic one, and the validation set's last.
    for (key, r, c) in [
        ("corruption/gaussian_noise/3", 0, 3),
        ("corruption/glass_blur/2", 4, 2),
        ("corruption/contrast/5", 11, 5),
        ("corruption/saturate/1", 18, 1),
    ] {
        assert_eq!(
            rows[r].columns[c].as_ref().map(|c| c.key.as_str()),
            Some(key)
        );
        let variant = apply(
            d.path(),
            "v.png",
            &["--scenario", key, "--model", &m],
            &coffee,
        );
        let tile = scale_to_tile(&variant, t, &mut Resampler::new());
        assert_eq!(crop(&sheet, g.cell(r, c)), tile, "{key}");
        assert_ne!(tile, clean_tile, "{key} changes the image");
    }

    // Labels, headers and the title are drawn; the gaps between tiles are not.
    for r in 0..rows.len() {
        assert!(has_ink(&sheet, g.label(r)), "label of row {r}");
    }
    for c in 0..6 {
        assert!(has_ink(&sheet, g.header(c)), "header {c}");
    }
    assert!(has_ink(&sheet, g.title));
    let gap = Rect {
        x: g.cell(0, 0).x + t,
        y: g.cell(0, 0).y,
        width: GAP,
        height: t,
    };
    assert!(!has_ink(&sheet, gap));
}

#[test]
fn unscaled_tiles_are_apply_bytes_for_any_seed_frame_id_and_jpeg_setting() {
    let d = tempfile::tempdir().unwrap();
    let coffee = photo("coffee.png");
    let m = model_str();
    let key = "corruption/shot_noise/2";
    let rows = rows_of(&[key]);
    let g = Geometry::new(&rows, 224, false);
    let mut seen = Vec::new();
    for extra in [
        &["--seed", "7"][..],
        &["--seed", "8", "--frame-id", "cups/coffee.png"][..],
        &["--seed", "7", "--jpeg-after-corruption", "85"][..],
    ] {
        let mut args = vec!["--scenarios", key, "--model", &m, "--tile", "224"];
        args.extend(extra);
        let (sheet, _) = preview(d.path(), &coffee, &args);
        assert_eq!(sheet.dimensions(), (g.width, g.height));
        let mut a = vec!["--scenario", key, "--model", &m];
        a.extend(extra);
        let want = apply(d.path(), "v.png", &a, &coffee);
        let got = crop(&sheet, g.cell(0, 1));
        assert_eq!(got, want, "{extra:?}");
        seen.push(got);
    }
    assert_ne!(seen[0], seen[1], "seed and frame id change the noise");
    assert_ne!(seen[0], seen[2], "the JPEG step changes the pixels");
}

#[test]
fn native_image_tiles_keep_their_aspect_ratio() {
    let d = tempfile::tempdir().unwrap();
    let coffee = photo("coffee.png");
    let key = "corruption/contrast/2";
    let rows = rows_of(&[key]);
    let g = Geometry::new(&rows, DEFAULT_TILE, false);

    // Without a model: the native 600×400 frame, letterboxed into the square tile.
    let (sheet, stdout) = preview(d.path(), &coffee, &["--scenarios", key]);
    assert!(
        stdout.contains("2 variants in 1 rows x 2 columns"),
        "{stdout}"
    );
    let native = apply(d.path(), "n.png", &["--scenario", key], &coffee);
    assert_eq!(native.dimensions(), (600, 400));
    let tile = scale_to_tile(&native, DEFAULT_TILE, &mut Resampler::new());
    assert_eq!(tile.dimensions(), (160, 107));
    let cell = g.cell(0, 1);
    let at = placement(cell, tile.dimensions());
    assert_eq!(crop(&sheet, at), tile);
    assert_eq!(sheet.get_pixel(cell.x, cell.y).0, LETTERBOX);
    assert_eq!(
        sheet.get_pixel(cell.x + 80, cell.y + cell.height - 1).0,
        LETTERBOX
    );

    // `--stage native` with a model: the corruption on the full frame, shown as the model sees it.
    let m = model_str();
    let (sheet, _) = preview(
        d.path(),
        &coffee,
        &["--scenarios", key, "--model", &m, "--stage", "native"],
    );
    let mut view = ModelView::new(&ModelDesc::load(&model()).unwrap());
    let seen = scale_to_tile(&view.image(&native), DEFAULT_TILE, &mut Resampler::new());
    assert_eq!(crop(&sheet, g.cell(0, 1)), seen);
    let clean = scale_to_tile(
        &view.image(&rgb(&coffee)),
        DEFAULT_TILE,
        &mut Resampler::new(),
    );
    assert_eq!(crop(&sheet, g.cell(0, 0)), clean);
}

#[test]
fn unknown_scenario_fails_with_the_runs_suggestion_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("sheet.png");
    let o = robustream()
        .args(["preview", "--scenarios", "imagenet-c,corruption/contrat/2"])
        .arg("--image")
        .arg(photo("coffee.png"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("unknown scenario or group `corruption/contrat/2`")
            && err.contains("did you mean `corruption/contrast/2`?"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn a_mask_draws_its_outline_in_the_corner_panel() {
    let d = tempfile::tempdir().unwrap();
    let coffee = photo("coffee.png");
    let (w, h) = image::image_dimensions(&coffee).unwrap();
    let inside = |x: u32, y: u32| (200..400).contains(&x) && (100..300).contains(&y);
    let mask = GrayImage::from_fn(w, h, |x, y| {
        image::Luma([if inside(x, y) { 255 } else { 0 }])
    });
    let mask_path: PathBuf = d.path().join("mask.png");
    mask.save(&mask_path).unwrap();
    let m = model_str();
    let key = "corruption/contrast/3";
    let (sheet, _) = preview(
        d.path(),
        &coffee,
        &[
            "--scenarios",
            key,
            "--model",
            &m,
            "--mask",
            mask_path.to_str().unwrap(),
        ],
    );
    let rows = rows_of(&[key]);
    let g = Geometry::new(&rows, DEFAULT_TILE, true);
    assert_eq!(sheet.dimensions(), (g.width, g.height));
    let plain = Geometry::new(&rows, DEFAULT_TILE, false);
    assert_eq!(g.height, plain.height + DEFAULT_TILE + BAND_GAP);

    // The panel is the model view scaled, except on the mask's boundary (the mask through the same
    // view geometry, scaled with NEAREST): there, a 2 px ring inside the foreground is recoloured.
    let panel = g.mask_panel.unwrap();
    assert_eq!(
        (panel.x, panel.y + panel.height + BAND_GAP),
        (g.cell(0, 0).x, g.header(0).y)
    );
    let view = apply(
        d.path(),
        "clean.png",
        &["--scenario", "clean", "--model", &m],
        &coffee,
    );
    let shown = scale_to_tile(&view, DEFAULT_TILE, &mut Resampler::new());
    let vmask =
        ModelView::new(&ModelDesc::load(&model()).unwrap()).mask(&mask, MaskResize::Nearest);
    let tmask =
        robustream::kernels::resample::resize_gray_nearest(&vmask, DEFAULT_TILE, DEFAULT_TILE);
    let fg = |x: u32, y: u32| tmask.get_pixel(x, y).0[0] == 255;
    let got = crop(&sheet, panel);
    let mut changed = 0;
    let mut colours = std::collections::HashSet::new();
    for (x, y, p) in got.enumerate_pixels() {
        if p == shown.get_pixel(x, y) {
            continue;
        }
        changed += 1;
        colours.insert(p.0);
        assert!(
            fg(x, y),
            "outline only on the foreground, not at ({x}, {y})"
        );
        let near_bg = (x.saturating_sub(2)..=(x + 2).min(DEFAULT_TILE - 1))
            .any(|u| (y.saturating_sub(2)..=(y + 2).min(DEFAULT_TILE - 1)).any(|v| !fg(u, v)));
        assert!(near_bg, "outline only near the boundary, not at ({x}, {y})");
    }
    let (x0, x1) = (0..DEFAULT_TILE)
        .filter(|&x| fg(x, 80))
        .fold((u32::MAX, 0), |(a, b), x| (a.min(x), b.max(x)));
    let side = x1 - x0 + 1;
    assert!(side > 60, "the mask covers a good part of the view: {side}");
    assert!(
        changed >= 4 * 2 * (side - 4),
        "a closed 2 px ring is drawn: {changed} pixels"
    );
    assert_eq!(colours.len(), 1, "one outline colour: {colours:?}");
    assert!(has_ink(&sheet, g.mask_label().unwrap()));

    // The scenarios still see the image as apply does.
    let want = apply(
        d.path(),
        "v.png",
        &["--scenario", key, "--model", &m],
        &coffee,
    );
    assert_eq!(
        crop(&sheet, g.cell(0, 1)),
        scale_to_tile(&want, DEFAULT_TILE, &mut Resampler::new())
    );
}

/// Every tile of a sheet over `items` is apply's output for its key with the same `region_args`
/// (scaled), or, where apply fails for this image, a grey tile with a warning line naming the key.
fn sheet_matches_apply(dir: &Path, items: &str, region_args: &[&str], min_drawn: usize) {
    let coffee = photo("coffee.png");
    let m = model_str();
    let out = dir.join("sheet.png");
    let o = run(robustream()
        .args(["preview", "--scenarios", items, "--model", &m])
        .args(region_args)
        .arg("--image")
        .arg(&coffee)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success());
    let warnings = text(&o.stderr);
    let sheet = rgb(&out);
    let list: Vec<&str> = items.split(',').collect();
    let rows = rows_of(&list);
    let g = Geometry::new(&rows, DEFAULT_TILE, true);
    assert_eq!(sheet.dimensions(), (g.width, g.height));
    let (mut drawn, mut failed) = (0, 0);
    for (r, row) in rows.iter().enumerate() {
        for (c, column) in row.columns.iter().enumerate() {
            let Some(column) = column else { continue };
            let variant = dir.join("v.png");
            let a = run(robustream()
                .args(["apply", "--scenario", &column.key, "--model", &m])
                .args(region_args)
                .arg(&coffee)
                .arg(&variant));
            let tile = crop(&sheet, g.cell(r, c));
            if a.status.success() {
                let want = scale_to_tile(&rgb(&variant), DEFAULT_TILE, &mut Resampler::new());
                assert_eq!(tile, want, "{} ({region_args:?})", column.key);
                drawn += 1;
            } else {
                assert_eq!(
                    tile.get_pixel(2, 2).0,
                    FAILED,
                    "{} is a grey tile",
                    column.key
                );
                let line = format!("warning: {} cannot apply to ", column.key);
                assert!(warnings.contains(&line), "{line} in {warnings}");
                failed += 1;
            }
        }
    }
    assert!(drawn >= min_drawn, "{drawn} drawn, {failed} failed");
    assert_eq!(warnings.lines().count(), failed, "{warnings}");
}

#[test]
fn region_scenarios_on_a_mask_are_what_apply_writes() {
    let d = tempfile::tempdir().unwrap();
    let (w, h) = image::image_dimensions(photo("coffee.png")).unwrap();
    // An elliptic "object" around the cup.
    let mask = GrayImage::from_fn(w, h, |x, y| {
        let (dx, dy) = ((x as f64 - 300.0) / 150.0, (y as f64 - 180.0) / 120.0);
        image::Luma([if dx * dx + dy * dy <= 1.0 { 255 } else { 0 }])
    });
    let mask_path = d.path().join("mask.png");
    mask.save(&mask_path).unwrap();
    sheet_matches_apply(
        d.path(),
        "hard-imagenet,rfs,in9,ximagenet12,corner-cases",
        &["--mask", mask_path.to_str().unwrap()],
        30,
    );
}

#[test]
fn placements_from_given_boxes_are_what_apply_writes() {
    let d = tempfile::tempdir().unwrap();
    sheet_matches_apply(
        d.path(),
        "corner-cases,background/only_bg_b",
        &["--boxes", "0.25 0.1 0.75 0.8"],
        7,
    );
}

#[test]
fn apply_honours_the_extension_suggests_keys_and_takes_groups() {
    let d = tempfile::tempdir().unwrap();
    let coffee = photo("coffee.png");
    let apply = |scenario: &str, out: &Path| {
        robustream()
            .args(["apply", "--scenario", scenario])
            .arg(&coffee)
            .arg(out)
            .output()
            .unwrap()
    };
    // A JPEG would change the pixels: refused, nothing written.
    let jpg = d.path().join("x.jpg");
    let o = apply("corruption/contrast/2", &jpg);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("x.jpg: a JPEG would re-compress") && err.contains(".png"),
        "{err}"
    );
    assert!(!jpg.exists());
    // A lossless extension is the format written, bytes and pixels as the PNG.
    let png = d.path().join("x.png");
    let bmp = d.path().join("x.bmp");
    assert!(apply("corruption/contrast/2", &png).status.success());
    assert!(apply("corruption/contrast/2", &bmp).status.success());
    assert_eq!(&std::fs::read(&bmp).unwrap()[..2], b"BM");
    assert_eq!(rgb(&bmp), rgb(&png));
    // A misspelt key gets the closest name, as a run does.
    let o = apply("corruption/contrat/2", &png);
    let err = text(&o.stderr);
    assert!(
        err.contains("unknown scenario `corruption/contrat/2` (--scenario takes a key")
            && err.contains("did you mean `corruption/contrast/2`?"),
        "{err}"
    );
    // A prefix: one PNG per key into the output folder, each what the key alone writes.
    let folder = d.path().join("noise");
    let o = apply("corruption/gaussian_noise/*", &folder);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("wrote 5 images into"),
        "{}",
        text(&o.stderr)
    );
    for s in 1..=5 {
        let key = format!("corruption/gaussian_noise/{s}");
        let one = d.path().join(format!("{s}.png"));
        assert!(apply(&key, &one).status.success());
        let file = folder.join(format!("corruption_gaussian_noise_{s}.png"));
        assert_eq!(rgb(&file), rgb(&one), "{key}");
    }
}
