//! The OpenCV kernels against OpenCV 4.8.1's own outputs (`tests/fixtures/background/`, written by
//! `scripts/make_background_fixtures.py`): byte for byte.

use std::path::PathBuf;

use image::{GrayImage, RgbImage};

use crate::kernels::opencv::{self, BLUR_9, BLUR_15, HueEdit, Rect, Rounding};

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/background")
        .join(name)
}

fn rgb(name: &str) -> RgbImage {
    image::open(path(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .into_rgb8()
}

fn gray(name: &str) -> GrayImage {
    image::open(path(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .into_luma8()
}

/// Asserts equality and names the first differing pixel.
fn same(name: &str, got: &RgbImage, want: &RgbImage) {
    assert_eq!(got.dimensions(), want.dimensions(), "{name}: size");
    if let Some((x, y, p)) = got
        .enumerate_pixels()
        .find(|(x, y, p)| *p != want.get_pixel(*x, *y))
    {
        panic!(
            "{name}: first difference at ({x}, {y}): got {:?}, OpenCV {:?}",
            p.0,
            want.get_pixel(x, y).0
        );
    }
}

#[test]
fn gaussian_blurs() {
    let input = rgb("input.png");
    let full = Rect::full(input.width(), input.height());
    same(
        "blur15",
        &opencv::gaussian_blur(&input, &BLUR_15, full),
        &rgb("blur15_s3.png"),
    );
    same(
        "blur9",
        &opencv::gaussian_blur(&input, &BLUR_9, full),
        &rgb("blur9_s4.png"),
    );
    for (w, h) in [(1, 1), (3, 2), (7, 5)] {
        let t = rgb(&format!("tiny_{w}x{h}.png"));
        let full = Rect::full(w, h);
        same(
            &format!("tiny {w}x{h} blur15"),
            &opencv::gaussian_blur(&t, &BLUR_15, full),
            &rgb(&format!("tiny_{w}x{h}_blur15.png")),
        );
        same(
            &format!("tiny {w}x{h} blur9"),
            &opencv::gaussian_blur(&t, &BLUR_9, full),
            &rgb(&format!("tiny_{w}x{h}_blur9.png")),
        );
    }
}

#[test]
fn add_weighted() {
    let vector = gray("addweighted_vector.png");
    let scalar = gray("addweighted_scalar.png");
    for a in 0..=255u8 {
        for b in 0..=255u8 {
            let (x, y) = (u32::from(b), u32::from(a));
            assert_eq!(
                opencv::bright_value(a, b, true),
                vector.get_pixel(x, y).0[0],
                "fused {a} {b}"
            );
            assert_eq!(
                opencv::bright_value(a, b, false),
                scalar.get_pixel(x, y).0[0],
                "unfused {a} {b}"
            );
        }
    }
    // The whole bright image, tail rule included (3219 elements: the last 3 unfused).
    let input = rgb("input.png");
    let blur = rgb("blur9_s4.png");
    let n = input.as_raw().len();
    let mut out = blur.as_raw().clone();
    opencv::add_weighted_bright(input.as_raw(), &mut out, 0..n, n);
    let out = RgbImage::from_raw(input.width(), input.height(), out).unwrap();
    same("bright", &out, &rgb("bright.png"));
    // The same through pieces (as bright_obj computes a box), element positions kept.
    let mut pieces = blur.as_raw().clone();
    for start in (0..n).step_by(100) {
        let end = (start + 100).min(n);
        opencv::add_weighted_bright(
            &input.as_raw()[start..end],
            &mut pieces[start..end],
            start..end,
            n,
        );
    }
    assert_eq!(&pieces, out.as_raw());
}

#[test]
fn hsv_conversions() {
    let input = rgb("input.png");
    let hsv = rgb("hsv.png");
    for (p, h) in input.pixels().zip(hsv.pixels()) {
        assert_eq!(opencv::rgb_to_hsv(p[0], p[1], p[2]), h.0, "{:?}", p.0);
    }
    let cols = rgb("rgb2hsv_in.png");
    for (p, h) in cols.pixels().zip(rgb("rgb2hsv.png").pixels()) {
        assert_eq!(opencv::rgb_to_hsv(p[0], p[1], p[2]), h.0, "{:?}", p.0);
    }
    let trip = rgb("hsv2rgb_in.png");
    let vector = rgb("hsv2rgb_vector.png");
    let scalar = rgb("hsv2rgb_scalar.png");
    for ((t, v), s) in trip.pixels().zip(vector.pixels()).zip(scalar.pixels()) {
        assert_eq!(
            opencv::hsv_to_rgb(t[0], t[1], t[2], Rounding::Truncate),
            v.0,
            "vector {:?}",
            t.0
        );
        assert_eq!(
            opencv::hsv_to_rgb(t[0], t[1], t[2], Rounding::Nearest),
            s.0,
            "scalar {:?}",
            t.0
        );
    }
    let keep = vec![0u8; (input.width() * input.height()) as usize];
    for hue in [0, 29, 45, 120, 150, 180] {
        same(
            &format!("hue {hue}"),
            &opencv::recolour(&input, &keep, HueEdit::Set(hue)),
            &rgb(&format!("hue_{hue}.png")),
        );
    }
    for k in [0, 40, 90] {
        same(
            &format!("rainbow {k}"),
            &opencv::recolour(&input, &keep, HueEdit::Shift(k)),
            &rgb(&format!("rainbow_{k}.png")),
        );
    }
    let g = gray("gray.png");
    for (p, q) in input.pixels().zip(g.pixels()) {
        assert_eq!(opencv::gray(p[0], p[1], p[2]), q.0[0], "{:?}", p.0);
    }
}
