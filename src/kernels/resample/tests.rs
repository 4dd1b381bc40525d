use super::*;

crate::kernels::levels_agree! {
    fn vertical_rows_levels_agree(|level| {
        let (w, h_in, h_out) = (29 * 3, 40, 23);
        let src: Vec<u8> = (0..w * h_in).map(|i| (i * 89 % 256) as u8).collect();
        let mut out = Vec::new();
        for filter in [Filter::Bilinear, Filter::Bicubic, Filter::Lanczos] {
            let axis = Axis::new(h_in as u32, h_out, filter);
            let mut dst = vec![0u8; w * h_out as usize];
            vertical_rows_at(level, (&src, w, 0, 0, 0), &mut dst, w, &axis)?;
            out.extend(dst);
        }
        Some(out)
    });
}
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/resample")
}

fn filter_named(name: &str) -> Filter {
    match name {
        "nearest" => Filter::Nearest,
        "box" => Filter::Box,
        "bilinear" => Filter::Bilinear,
        "bicubic" => Filter::Bicubic,
        "lanczos" => Filter::Lanczos,
        other => panic!("unknown filter {other}"),
    }
}

/// Every `<source>_<filter>_<w>x<h>.png` fixture (written by Pillow 13.0.0) is reproduced exactly.
#[test]
fn matches_pillow_fixtures_exactly() {
    check_fixtures(Resampler::new());
}

/// The same with the portable kernels (what CPUs without AVX2 run).
#[test]
fn portable_kernels_match_pillow_fixtures_exactly() {
    check_fixtures(Resampler {
        portable: true,
        ..Resampler::default()
    });
}

fn check_fixtures(mut r: Resampler) {
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(fixtures())
        .expect("tests/fixtures/resample exists (scripts/make_resample_fixtures.py)")
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if name.starts_with("src_") {
            continue;
        }
        let mut parts = name.rsplitn(3, '_');
        let (size, filter, source) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let (w, h) = size.split_once('x').unwrap();
        let (w, h): (u32, u32) = (w.parse().unwrap(), h.parse().unwrap());
        let filter = filter_named(filter);
        let src = image::open(fixtures().join(format!("src_{source}.png"))).unwrap();
        let want = image::open(&path).unwrap();
        let (got, want): (Vec<u8>, Vec<u8>) = if source.starts_with("gray") {
            let got = r.resize_gray(&src.to_luma8(), w, h, filter);
            (got.into_raw(), want.to_luma8().into_raw())
        } else {
            let got = r.resize_rgb(&src.to_rgb8(), w, h, filter);
            (got.into_raw(), want.to_rgb8().into_raw())
        };
        assert_eq!(got.len(), want.len(), "{name}: size");
        let diff = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        if diff > 0 {
            failures.push(format!("{name}: {diff}/{} samples differ", got.len()));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(checked >= 100, "only {checked} fixtures found");
}

#[test]
fn a_window_equals_the_crop_of_the_full_resize() {
    let src = RgbImage::from_fn(61, 43, |x, y| {
        image::Rgb([
            (x * 37 + y * 11) as u8,
            (x * x + 3 * y) as u8,
            (x ^ (y * 5)) as u8,
        ])
    });
    let gray = GrayImage::from_fn(61, 43, |x, y| image::Luma([(x * 29 + y * y * 7) as u8]));
    let filters = [
        Filter::Nearest,
        Filter::Box,
        Filter::Bilinear,
        Filter::Bicubic,
        Filter::Lanczos,
    ];
    // Down, up, one axis only, same size; windows at the corners and in the middle.
    for (w, h) in [(40, 27), (97, 70), (61, 20), (30, 43), (61, 43), (20, 40)] {
        for filter in filters {
            let mut r = Resampler::new();
            let full = r.resize_rgb(&src, w, h, filter);
            let gray_full = r.resize_gray(&gray, w, h, filter);
            for win in [
                Window {
                    x: 0,
                    y: 0,
                    width: w,
                    height: h,
                },
                Window {
                    x: 3,
                    y: 2,
                    width: w / 2,
                    height: h / 3,
                },
                Window {
                    x: w - 7,
                    y: h - 5,
                    width: 7,
                    height: 5,
                },
                Window {
                    x: w / 4,
                    y: 0,
                    width: 1,
                    height: h,
                },
            ] {
                let got = r.resize_rgb_window(&src, w, h, win, filter);
                let want = image::imageops::crop_imm(&full, win.x, win.y, win.width, win.height)
                    .to_image();
                assert_eq!(got, want, "{w}x{h} {filter:?} {win:?}");
                // The same for one channel (masks at the model view).
                let got = r.resize_gray_window(&gray, w, h, win, filter);
                let want =
                    image::imageops::crop_imm(&gray_full, win.x, win.y, win.width, win.height)
                        .to_image();
                assert_eq!(got, want, "gray {w}x{h} {filter:?} {win:?}");
            }
        }
    }
}

#[test]
fn windows_are_cut_to_the_image() {
    let src = RgbImage::from_pixel(10, 10, image::Rgb([9, 9, 9]));
    let mut r = Resampler::new();
    let out = r.resize_rgb_window(
        &src,
        5,
        5,
        Window {
            x: 3,
            y: 4,
            width: 10,
            height: 10,
        },
        Filter::Bilinear,
    );
    assert_eq!(out.dimensions(), (2, 1));
}

#[test]
fn same_size_is_a_copy_and_empty_is_black() {
    let img = RgbImage::from_fn(5, 4, |x, y| image::Rgb([x as u8, y as u8, 9]));
    let mut r = Resampler::new();
    for f in [Filter::Nearest, Filter::Bilinear, Filter::Lanczos] {
        assert_eq!(r.resize_rgb(&img, 5, 4, f), img);
    }
    assert_eq!(
        r.resize_rgb(&img, 0, 3, Filter::Bilinear).dimensions(),
        (0, 3)
    );
    let empty = RgbImage::new(0, 0);
    let out = r.resize_rgb(&empty, 3, 2, Filter::Bicubic);
    assert!(out.pixels().all(|p| p.0 == [0, 0, 0]));
}

#[test]
fn constant_images_stay_constant() {
    let mut r = Resampler::new();
    let img = GrayImage::from_pixel(17, 9, image::Luma([201]));
    for f in [
        Filter::Nearest,
        Filter::Box,
        Filter::Bilinear,
        Filter::Bicubic,
        Filter::Lanczos,
    ] {
        for (w, h) in [(5, 3), (40, 31), (17, 2), (1, 9)] {
            let out = r.resize_gray(&img, w, h, f);
            assert!(out.pixels().all(|p| p.0 == [201]), "{f:?} {w}×{h}");
        }
    }
}

#[test]
fn tables_are_cached_and_bounded() {
    let mut r = Resampler::new();
    let img = GrayImage::from_pixel(30, 20, image::Luma([7]));
    r.resize_gray(&img, 10, 10, Filter::Bilinear);
    r.resize_gray(&img, 10, 10, Filter::Bilinear);
    assert_eq!(r.tables.len(), 2);
    for w in 1..=100 {
        r.resize_gray(&img, w, 20, Filter::Box);
    }
    assert!(r.tables.len() <= MAX_TABLES);
}

#[test]
fn free_nearest_matches_the_resampler() {
    let img = GrayImage::from_fn(23, 17, |x, y| image::Luma([(x * 11 + y * 3) as u8]));
    let mut r = Resampler::new();
    for (w, h) in [(7, 5), (50, 40), (23, 3), (1, 1), (23, 17)] {
        assert_eq!(
            resize_gray_nearest(&img, w, h),
            r.resize_gray(&img, w, h, Filter::Nearest)
        );
    }
    assert_eq!(
        resize_gray_nearest(&GrayImage::new(0, 4), 2, 2).into_raw(),
        [0; 4]
    );
}

#[test]
fn nearest_index_formula() {
    // 37 → 11: scale 3.3636…, samples at trunc(1.68 + 3.36·i).
    let idx: Vec<u32> = nearest_indices(37, 11).map(Option::unwrap).collect();
    assert_eq!(idx, [1, 5, 8, 11, 15, 18, 21, 25, 28, 31, 35]);
    // Up-scaling 2 → 5: positions 0.2, 0.6, 1.0, 1.4, 1.8.
    let idx: Vec<u32> = nearest_indices(2, 5).map(Option::unwrap).collect();
    assert_eq!(idx, [0, 0, 1, 1, 1]);
}

#[test]
fn large_images_take_the_parallel_path_identically() {
    // Same result whether a pass runs on rayon or not: compare a big image against its rows
    // resized one band at a time (horizontal-only resize, so rows are independent).
    let img = RgbImage::from_fn(700, 600, |x, y| {
        image::Rgb([(x * 7 + y) as u8, (x ^ y) as u8, (x * y / 13) as u8])
    });
    let mut r = Resampler::new();
    let big = r.resize_rgb(&img, 301, 600, Filter::Bicubic);
    for band in [0u32, 7, 14] {
        let part = image::imageops::crop_imm(&img, 0, band * 40, 700, 40).to_image();
        let small = r.resize_rgb(&part, 301, 40, Filter::Bicubic);
        let want = image::imageops::crop_imm(&big, 0, band * 40, 301, 40).to_image();
        assert_eq!(small, want);
    }
    let both = r.resize_rgb(&img, 384, 256, Filter::Bilinear);
    assert_eq!(both.dimensions(), (384, 256));
}
