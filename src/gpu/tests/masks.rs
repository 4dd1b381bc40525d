//! The mask-based scenarios' GPU kernels (`gpu::masks`) against `scenario::ablation` and
//! `scenario::region_noise`, on procedural frames with exact masks.

use image::{GrayImage, Luma, RgbImage};

use super::{assert_same_distribution, flat};
use crate::frame::BBox;
use crate::gpu::host::HostLauncher;
use crate::gpu::masks;
use crate::rng::RngKey;
use crate::scenario::ablation::Ablation;
use crate::scenario::region_noise::{Norm, Region, RegionNoise};
use crate::scenario::{Scenario, ScenarioInput};
use crate::scene::{Background, Object, Shape, random_scene, render};

/// Runs `s` on `image` with `mask` through the host build of the kernels.
fn host_masks(s: &dyn Scenario, image: &RgbImage, mask: &GrayImage, key: RngKey) -> RgbImage {
    let mut l = HostLauncher::new();
    let (src, dst) = l.images(image);
    let m = l.buffer(mask.as_raw());
    let boxes = masks::boxes(s, mask);
    assert!(
        masks::apply(&mut l, s, src, Some(m), &boxes, dst, key).unwrap(),
        "{} has no GPU kernels",
        s.key()
    );
    l.image(dst)
}

/// The CPU scenario's variant with `mask` as its mask; `None` where it refuses the frame.
fn cpu(s: &dyn Scenario, image: &RgbImage, mask: &GrayImage, key: RngKey) -> Option<RgbImage> {
    s.apply(&ScenarioInput::new(image).with_mask(Some(mask)), key)
        .ok()
}

/// Three objects (disc, rectangle against the right edge, triangle) on a checker.
fn objects_scene(w: u32, h: u32) -> (RgbImage, GrayImage) {
    let objects = [
        Object::new(
            Shape::Disc,
            BBox::new(w / 10, h / 8, w / 10 + w * 3 / 10, h / 8 + h * 3 / 10),
            [230, 30, 120],
        ),
        Object::new(
            Shape::Rect,
            BBox::new(w * 6 / 10, h / 2, w, h * 9 / 10),
            [250, 200, 10],
        ),
        Object::new(
            Shape::Triangle,
            BBox::new(w / 3, h * 6 / 10, w / 3 + w / 4, h),
            [40, 220, 90],
        ),
    ];
    let s = render(
        w,
        h,
        &Background::checker([20, 40, 60], [90, 70, 50], 7),
        &objects,
    );
    (s.image, s.mask)
}

/// `mask` made soft (object values 1..=255 varying, as a bilinear mask's edges) with a lone
/// one-pixel object and a 2×2 blob added.
fn soften(mask: &GrayImage) -> GrayImage {
    let (w, h) = mask.dimensions();
    let mut m = GrayImage::from_fn(w, h, |x, y| {
        let v = mask.get_pixel(x, y)[0];
        Luma([if v == 0 {
            0
        } else {
            1 + ((x * 7 + y * 3) % 255) as u8
        }])
    });
    if w > 4 && h > 4 {
        m.put_pixel(0, h - 1, Luma([3]));
        for (x, y) in [(w - 3, 1), (w - 2, 1), (w - 3, 2), (w - 2, 2)] {
            m.put_pixel(x, y, Luma([9]));
        }
    }
    m
}

/// Frames with masks: several sizes (an odd one, a 1-pixel-wide one), exact and soft masks, random
/// scenes, black and white frames and a mask covering the whole frame.
fn frames() -> Vec<(String, RgbImage, GrayImage)> {
    let mut out = Vec::new();
    for (w, h) in [(224, 224), (61, 17), (1, 40), (40, 1), (320, 180)] {
        let (img, mask) = objects_scene(w, h);
        out.push((format!("objects {w}×{h}"), img.clone(), mask.clone()));
        out.push((format!("soft {w}×{h}"), img.clone(), soften(&mask)));
        out.push((format!("black {w}×{h}"), flat(w, h, 0), mask.clone()));
        out.push((format!("white {w}×{h}"), flat(w, h, 255), soften(&mask)));
        out.push((
            format!("full {w}×{h}"),
            img,
            GrayImage::from_pixel(w, h, Luma([255])),
        ));
    }
    for seed in 0..4 {
        let s = random_scene(224, 224, seed);
        out.push((format!("random {seed}"), s.image, s.mask));
        let s = random_scene(61, 17, seed);
        out.push((format!("random 61×17 {seed}"), s.image, s.mask));
    }
    out
}

#[test]
fn ablations_give_the_cpus_bytes() {
    let mut compared = 0;
    for name in ["gray", "gray_bbox", "tile"] {
        let s = Ablation::new(name).unwrap();
        for (what, img, mask) in frames() {
            let key = RngKey::new(1, "frame", s.rng_key());
            let Some(want) = cpu(&s, &img, &mask, key) else {
                assert!(mask.as_raw().iter().all(|&v| v == 0), "{name} {what}");
                continue;
            };
            let got = host_masks(&s, &img, &mask, key);
            assert!(got == want, "ablation/{name} on {what}: bytes differ");
            compared += 1;
        }
    }
    assert!(compared >= 3 * 20, "{compared}");
}

#[test]
fn tile_boxes_are_pairs_and_the_whole_frame_falls_back_to_gray() {
    let s = Ablation::new("tile").unwrap();
    let (_, mask) = objects_scene(224, 224);
    let b = masks::boxes(&s, &soften(&mask));
    // Three objects and the 2×2 blob (the lone pixel's box is empty).
    assert_eq!(b.len(), 2 * 4, "{b:?}");
    let full = GrayImage::from_pixel(30, 20, Luma([255]));
    assert_eq!(
        masks::boxes(&s, &full),
        vec![BBox::new(0, 0, 29, 19), BBox::new(0, 0, 0, 0)]
    );
    let img = flat(30, 20, 7);
    let got = host_masks(&s, &img, &full, RngKey(0));
    assert_eq!(got.get_pixel(0, 0).0, [128; 3]);
    assert_eq!(got.get_pixel(29, 19).0, [7; 3]);
}

#[test]
fn every_mask_scenario_is_on_the_gpu_and_nothing_else() {
    let (keys, _) = crate::scenario::ablation::catalog();
    let (rfs, _) = crate::scenario::region_noise::catalog();
    let cat = crate::scenario::catalog::Catalog::builtin();
    for k in keys.iter().chain(&rfs) {
        let s = cat.build(&k.name).unwrap();
        assert!(masks::on_gpu(s.as_ref()), "{}", k.name);
    }
    for k in ["clean", "corruption/gaussian_noise/3"] {
        let s = cat.build(k).unwrap();
        assert!(!masks::on_gpu(s.as_ref()), "{k}");
    }
}

/// Region-noise outputs: outside the region (fg: object pixels, mask ≠ 0) both paths leave the
/// input's bytes; inside, for every input value occurring 500 times there, the two paths' outputs
/// are the same distribution ([`assert_same_distribution`] on the region's elements alone).
fn assert_region_matches(
    what: &str,
    input: &RgbImage,
    mask: &GrayImage,
    fg: bool,
    gpu: &RgbImage,
    cpu: &RgbImage,
) {
    let (mut i, mut g, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for (p, m) in mask.as_raw().iter().enumerate() {
        let e = 3 * p..3 * p + 3;
        if (*m != 0) == fg {
            i.extend_from_slice(&input.as_raw()[e.clone()]);
            g.extend_from_slice(&gpu.as_raw()[e.clone()]);
            c.extend_from_slice(&cpu.as_raw()[e]);
        } else {
            assert_eq!(gpu.as_raw()[e.clone()], input.as_raw()[e.clone()], "{what}");
            assert_eq!(cpu.as_raw()[e.clone()], input.as_raw()[e], "{what}");
        }
    }
    let row = |v: Vec<u8>| RgbImage::from_raw((v.len() / 3) as u32, 1, v).unwrap();
    assert_same_distribution(what, &row(i), &row(g), &row(c));
}

/// A frame for the distribution checks: flat object colours on a two-colour background, so every
/// value occurs often in both regions (gray ones on a small frame, where pixels are few).
fn two_tone_scene(w: u32, h: u32) -> (RgbImage, GrayImage) {
    let small = w * h < 4096;
    let (background, color) = if small {
        (Background::Solid([60, 60, 60]), [200, 200, 200])
    } else {
        (
            Background::stripes([30, 60, 90], [140, 120, 100], 5),
            [200, 40, 250],
        )
    };
    let s = render(
        w,
        h,
        &background,
        &[
            Object::new(Shape::Rect, BBox::new(w / 8, h / 10, w / 2, h), color),
            Object::new(
                Shape::Disc,
                BBox::new(w * 6 / 10, h / 5, w * 9 / 10, h * 4 / 5),
                color,
            ),
        ],
    );
    (s.image, s.mask)
}

#[test]
fn region_noise_matches_the_cpu_in_the_region_and_leaves_the_rest() {
    for (w, h) in [(224, 224), (61, 17), (320, 180)] {
        let (img, mask) = two_tone_scene(w, h);
        for norm in [Norm::Linf, Norm::L2] {
            for level in norm.levels() {
                for region in [Region::Foreground, Region::Background] {
                    let s = RegionNoise::new(region, norm, level, 2).unwrap();
                    let key = RngKey::new(7, "frame", s.rng_key());
                    let want = cpu(&s, &img, &mask, key).unwrap();
                    let got = host_masks(&s, &img, &mask, key);
                    let what = format!("{} at {w}×{h}", s.key());
                    let fg = region == Region::Foreground;
                    assert_region_matches(&what, &img, &mask, fg, &got, &want);
                }
            }
        }
    }
}

#[test]
fn region_noise_keeps_flat_frames_and_edges_in_range() {
    // Black and white frames, soft masks, 1-pixel-wide frames: the region changes, the rest not.
    for (w, h) in [(224, 224), (1, 40), (40, 1), (61, 17)] {
        let (_, mask) = objects_scene(w, h);
        let mask = soften(&mask);
        if mask.as_raw().iter().all(|&v| v == 0) || mask.as_raw().iter().all(|&v| v != 0) {
            continue;
        }
        for v in [0, 255] {
            let img = flat(w, h, v);
            for norm in [Norm::Linf, Norm::L2] {
                for region in [Region::Foreground, Region::Background] {
                    let s = RegionNoise::new(region, norm, norm.levels()[2], 1).unwrap();
                    let key = RngKey::new(2, "f", s.rng_key());
                    let got = host_masks(&s, &img, &mask, key);
                    let want = cpu(&s, &img, &mask, key).unwrap();
                    let fg = region == Region::Foreground;
                    let mut changed = 0;
                    for (p, m) in mask.as_raw().iter().enumerate() {
                        for c in 0..3 {
                            let e = 3 * p + c;
                            if (*m != 0) != fg {
                                assert_eq!(got.as_raw()[e], v, "{} {w}×{h}", s.key());
                            } else if got.as_raw()[e] != v {
                                changed += 1;
                            }
                        }
                    }
                    // About half the region moves off a saturated value (noise towards the inside).
                    let region_elems =
                        3 * mask.as_raw().iter().filter(|&&m| (m != 0) == fg).count();
                    assert!(
                        changed * 4 >= region_elems && changed * 4 <= 3 * region_elems,
                        "{} {w}×{h} on {v}: {changed} of {region_elems} changed",
                        s.key()
                    );
                    let cpu_changed = want.as_raw().iter().filter(|&&x| x != v).count();
                    assert!(cpu_changed * 4 >= region_elems, "{}", s.key());
                }
            }
        }
    }
}

#[test]
fn region_noise_shares_its_noise_between_fg_and_bg_and_follows_its_key() {
    let (img, mask) = two_tone_scene(97, 31);
    let inverse = GrayImage::from_fn(97, 31, |x, y| {
        Luma([if mask.get_pixel(x, y)[0] == 0 { 255 } else { 0 }])
    });
    for norm in [Norm::Linf, Norm::L2] {
        let fg = RegionNoise::new(Region::Foreground, norm, norm.levels()[1], 3).unwrap();
        let bg = RegionNoise::new(Region::Background, norm, norm.levels()[1], 3).unwrap();
        assert_eq!(fg.rng_key(), bg.rng_key());
        let key = RngKey::new(4, "f", fg.rng_key());
        // The object's noise under fg is the same tensor as under bg with the mask inverted.
        let a = host_masks(&fg, &img, &mask, key);
        assert_eq!(a, host_masks(&bg, &img, &inverse, key), "{}", fg.key());
        assert_eq!(a, host_masks(&fg, &img, &mask, key));
        assert_ne!(a, host_masks(&fg, &img, &mask, RngKey(key.0 ^ 1)));
        assert_ne!(a, img);
    }
}
