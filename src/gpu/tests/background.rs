//! The mask-based background scenarios' GPU kernels (`gpu::background`) against the CPU scenarios
//! (`scenario::background`): equal bytes on procedural scenes with exact masks, and the GPU declining
//! exactly the frames the CPU scenario refuses.

use image::{GrayImage, RgbImage};

use super::{flat, test_image};
use crate::frame::BBox;
use crate::gpu::background;
use crate::gpu::host::HostLauncher;
use crate::gpu::launch::DeviceImage;
use crate::gpu::launch::Launcher;
use crate::kernels::opencv::{self, HueEdit, Rounding};
use crate::rng::RngKey;
use crate::scenario::background::Background;
use crate::scenario::{Scenario, ScenarioInput};
use crate::scene::{Object, Shape, paint_objects, random_scene};

/// The background leaves with GPU kernels.
const ON_GPU: &[&str] = &[
    "only_fg",
    "no_fg",
    "only_bg_b",
    "only_bg_t",
    "segmented",
    "transparent",
    "transparent_on/black",
    "transparent_on/white",
    "transparent_on/grey",
    "transparent_on/12ab9f",
    "color_grey",
];

/// The background leaves with GPU kernels and a random draw (the hue).
const RANDOM: &[&str] = &["color_r", "color_g", "color_b", "color_rainbow"];

/// Runs `leaf` through the host build of its kernels; `None` when the GPU path declines.
fn host_apply(
    leaf: &str,
    image: &RgbImage,
    mask: Option<&GrayImage>,
    boxes: &[BBox],
) -> Option<RgbImage> {
    host_apply_key(leaf, image, mask, boxes, RngKey(7))
}

/// [`host_apply`] with the variant's key.
fn host_apply_key(
    leaf: &str,
    image: &RgbImage,
    mask: Option<&GrayImage>,
    boxes: &[BBox],
    key: RngKey,
) -> Option<RgbImage> {
    let s = Background::new(leaf).unwrap();
    let mut l = HostLauncher::new();
    let (src, dst) = l.images(image);
    let mask = mask.map(|m| (m, l.buffer(m.as_raw())));
    background::apply(&mut l, &s, src, mask, boxes, dst, key)
        .unwrap()
        .then(|| l.image(dst))
}

/// Every GPU leaf gives the CPU scenario's bytes on this frame, or declines where the CPU refuses;
/// returns how many leaves the GPU made.
fn equals_the_cpu(what: &str, image: &RgbImage, mask: Option<&GrayImage>, boxes: &[BBox]) -> usize {
    let mut made = 0;
    for leaf in ON_GPU {
        let s = Background::new(leaf).unwrap();
        let input = ScenarioInput::new(image).with_mask(mask).with_boxes(boxes);
        let cpu = s.apply(&input, RngKey(7));
        let gpu = host_apply(leaf, image, mask, boxes);
        let what = format!("{leaf} on {what} ({}×{})", image.width(), image.height());
        match (cpu, gpu) {
            (Ok(cpu), Some(gpu)) => {
                assert!(gpu == cpu, "{what}: not the CPU's bytes");
                made += 1;
            }
            (Err(_), None) => {}
            (Ok(_), None) => panic!("{what}: the GPU declined a frame the CPU takes"),
            (Err(e), Some(_)) => panic!("{what}: the GPU took a frame the CPU refuses ({e})"),
        }
    }
    made
}

/// A mask with every value 0..=255 (soft edges: IN-9 weights by m / 255, XIMAGENET by m > 0).
fn soft_mask(w: u32, h: u32) -> GrayImage {
    GrayImage::from_fn(w, h, |x, y| {
        image::Luma([((x * 37 + y * 101) % 256) as u8 * u8::from((x + y) % 5 != 0)])
    })
}

#[test]
fn every_variation_gives_the_cpus_bytes_on_scenes() {
    for (w, h) in [
        (224, 224),
        (61, 17),
        (17, 61),
        (1, 37),
        (37, 1),
        (3, 2),
        (320, 180),
    ] {
        for seed in 0..3 {
            let sc = random_scene(w, h, seed);
            let what = format!("scene {seed}");
            equals_the_cpu(&what, &sc.image, Some(&sc.mask), &sc.boxes);
            equals_the_cpu(
                &format!("{what}, mask only"),
                &sc.image,
                Some(&sc.mask),
                &[],
            );
            equals_the_cpu(&format!("{what}, boxes only"), &sc.image, None, &sc.boxes);
            equals_the_cpu(&format!("{what}, nothing"), &sc.image, None, &[]);
        }
    }
}

#[test]
fn soft_masks_several_boxes_and_flat_frames_give_the_cpus_bytes() {
    for (w, h) in [(224, 224), (61, 17)] {
        // Two objects: IN-9 takes the tight box of the mask (several boxes), or their union.
        let mut img = test_image(w, h);
        let mut mask = GrayImage::new(w, h);
        let objects = [
            Object::new(Shape::Disc, BBox::new(2, 1, w / 3, h / 2), [250, 10, 10]),
            Object::new(
                Shape::Triangle,
                BBox::new(w / 2, h / 3, w + 5, h),
                [0, 0, 0],
            ),
        ];
        let boxes = paint_objects(&mut img, &mut mask, &objects);
        assert_eq!(boxes.len(), 2);
        let made = equals_the_cpu("two objects", &img, Some(&mask), &boxes);
        assert_eq!(made, ON_GPU.len());
        equals_the_cpu("two boxes", &img, None, &boxes);
        equals_the_cpu("soft mask", &img, Some(&soft_mask(w, h)), &[]);
        equals_the_cpu("soft mask, boxes", &img, Some(&soft_mask(w, h)), &boxes);
        for v in [0, 255] {
            let f = flat(w, h, v);
            equals_the_cpu(&format!("flat {v}"), &f, Some(&mask), &boxes);
            equals_the_cpu(&format!("flat {v}, soft"), &f, Some(&soft_mask(w, h)), &[]);
        }
        // Boxes at the edges, spanning the frame, outside it; whole-frame and one-pixel masks.
        let img = test_image(w, h);
        for b in [
            BBox::new(0, 0, w, h),
            BBox::new(0, 0, w + 9, 3),
            BBox::new(w - 1, 0, w, h),
            BBox::new(w + 1, h + 1, w + 4, h + 4),
            BBox::new(3, 2, 4, 3),
        ] {
            equals_the_cpu(&format!("box {b:?}"), &img, None, &[b]);
        }
        let full = GrayImage::from_pixel(w, h, image::Luma([255]));
        equals_the_cpu("whole-frame mask", &img, Some(&full), &[]);
        let mut one = GrayImage::new(w, h);
        one.put_pixel(w - 1, h - 1, image::Luma([1]));
        equals_the_cpu("one-pixel mask", &img, Some(&one), &[]);
        equals_the_cpu("empty mask", &img, Some(&GrayImage::new(w, h)), &[]);
        equals_the_cpu(
            "mask of another size",
            &img,
            Some(&GrayImage::new(w + 1, h)),
            &[],
        );
    }
}

#[test]
fn pool_blur_and_hue_scenarios_stay_on_the_cpu() {
    for leaf in [
        "mixed_same",
        "mixed_rand",
        "mixed_next",
        "random_bg_add",
        "random_bg_paste",
        "random_bg_add_bgt",
        "random_bg_paste_bgt",
        "blur_bg",
        "blur_obj",
        "bright_bg",
        "bright_obj",
    ] {
        let s = Background::new(leaf).unwrap();
        assert!(!background::on_gpu(&s), "{leaf}");
        let sc = random_scene(16, 12, 1);
        assert!(host_apply(leaf, &sc.image, Some(&sc.mask), &sc.boxes).is_none());
    }
    for leaf in ON_GPU {
        assert!(
            background::on_gpu(&Background::new(leaf).unwrap()),
            "{leaf}"
        );
    }
    let corruption = crate::scenario::corruption::Corruption::new("contrast", 1).unwrap();
    assert!(!background::on_gpu(&corruption));
}

/// `gpu::background::recolour` at a given hue edit, in the host build.
fn host_recolour(image: &RgbImage, mask: &GrayImage, edit: HueEdit) -> RgbImage {
    let mut l = HostLauncher::new();
    let (w, h) = image.dimensions();
    let src = DeviceImage {
        buf: l.buffer(image.as_raw()),
        width: w,
        height: h,
    };
    let dst = DeviceImage {
        buf: l.alloc(image.as_raw().len().max(1)).unwrap(),
        ..src
    };
    let m = l.buffer(mask.as_raw());
    background::recolour(&mut l, (src, m, dst), background::Hue::Fixed(edit)).unwrap();
    RgbImage::from_raw(w, h, l.read(dst.buf)[..image.as_raw().len()].to_vec()).unwrap()
}

/// Hue edits at the ends of every range and sector.
fn edits() -> Vec<HueEdit> {
    let set = [
        0, 1, 15, 29, 30, 59, 60, 89, 90, 119, 120, 149, 150, 179, 180,
    ];
    let shift = [0, 1, 2, 45, 89, 90];
    set.into_iter()
        .map(HueEdit::Set)
        .chain(shift.into_iter().map(HueEdit::Shift))
        .collect()
}

#[test]
fn recolouring_gives_opencvs_bytes_at_every_edit() {
    // Widths below, at and across OpenCV's 32-pixel SIMD blocks (truncated) and their rest (rounded).
    for (w, h) in [(224, 224), (61, 17), (33, 5), (1, 37), (37, 1), (320, 180)] {
        for seed in 0..2 {
            let sc = random_scene(w, h, seed);
            let img = test_image(w, h);
            for edit in edits() {
                for (what, image, mask) in [
                    ("scene", &sc.image, sc.mask.clone()),
                    ("texture", &img, soft_mask(w, h)),
                ] {
                    let gpu = host_recolour(image, &mask, edit);
                    let cpu = opencv::recolour(image, mask.as_raw(), edit);
                    assert!(
                        gpu == cpu,
                        "{what} {seed} {w}×{h} {edit:?}: not OpenCV's bytes"
                    );
                }
            }
        }
    }
}

#[test]
fn recolouring_gives_opencvs_bytes_for_every_colour() {
    // Every 24-bit colour, in 32-pixel blocks (truncated) and in rows of 16 (rounded).
    let colour = |c: u32| image::Rgb([(c >> 16) as u8, (c >> 8) as u8, c as u8]);
    for (w, h) in [(4096u32, 4096u32), (16, 1 << 20)] {
        let img = RgbImage::from_fn(w, h, |x, y| colour(y * w + x));
        let mask = GrayImage::new(w, h);
        for edit in [HueEdit::Shift(90), HueEdit::Shift(1), HueEdit::Set(100)] {
            let gpu = host_recolour(&img, &mask, edit);
            let cpu = opencv::recolour(&img, mask.as_raw(), edit);
            assert!(gpu == cpu, "{w}×{h} {edit:?}: not OpenCV's bytes");
        }
    }
}

/// The hue values `colour` draws (`Colour::draw`), each with its probability.
fn support(leaf: &str) -> Vec<(u8, f64)> {
    match leaf {
        "color_r" => (0..=29)
            .map(|h| (h, 0.5 / 30.0))
            .chain((150..=180).map(|h| (h, 0.5 / 31.0)))
            .collect(),
        "color_g" => (30..=89).map(|h| (h, 1.0 / 60.0)).collect(),
        "color_b" => (90..=149).map(|h| (h, 1.0 / 60.0)).collect(),
        _ => (0..=90).map(|k| (k, 1.0 / 91.0)).collect(),
    }
}

#[test]
fn random_colours_are_opencvs_recolouring_at_their_own_draw() {
    for (w, h) in [(224, 224), (61, 17)] {
        let sc = random_scene(w, h, 5);
        for leaf in RANDOM {
            let set = *leaf != "color_rainbow";
            let candidates: Vec<RgbImage> = support(leaf)
                .into_iter()
                .map(|(v, _)| {
                    let edit = if set {
                        HueEdit::Set(v)
                    } else {
                        HueEdit::Shift(v)
                    };
                    opencv::recolour(&sc.image, sc.mask.as_raw(), edit)
                })
                .collect();
            for k in 0..6 {
                let gpu = host_apply_key(leaf, &sc.image, Some(&sc.mask), &sc.boxes, RngKey(k))
                    .expect("on the GPU");
                assert!(
                    candidates.contains(&gpu),
                    "{leaf} key {k} {w}×{h}: not OpenCV's recolouring at any hue of its range"
                );
            }
        }
    }
}

#[test]
fn random_colours_draw_their_hues_like_the_cpu() {
    // A background pixel of pure red (hue 0, s = v = 255) beside an object pixel: the output's
    // colour tells the hue set (or, for the rainbow, the shift); hues 0 and 180 give the same red
    // and count together.
    let red = RgbImage::from_pixel(2, 1, image::Rgb([255, 0, 0]));
    let mask = GrayImage::from_raw(2, 1, vec![0, 255]).unwrap();
    let decode: std::collections::HashMap<[u8; 3], u8> = (0..180u8)
        .map(|h| (opencv::hsv_to_rgb(h, 255, 255, Rounding::Nearest), h))
        .collect();
    assert_eq!(decode.len(), 180, "hues 0..180 give distinct reds");
    let n = 6000u64;
    let mut l = HostLauncher::new();
    let src = DeviceImage {
        buf: l.buffer(red.as_raw()),
        width: 2,
        height: 1,
    };
    let dst = DeviceImage {
        buf: l.alloc(6).unwrap(),
        ..src
    };
    let m = l.buffer(mask.as_raw());
    for leaf in RANDOM {
        let s = Background::new(leaf).unwrap();
        let mut expected = [0.0f64; 180];
        for (v, p) in support(leaf) {
            expected[usize::from(v) % 180] += p;
        }
        let (mut gpu, mut cpu) = ([0u64; 180], [0u64; 180]);
        for k in 0..n {
            let key = RngKey(k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            assert!(background::apply(&mut l, &s, src, Some((&mask, m)), &[], dst, key).unwrap());
            let out = l.read(dst.buf);
            gpu[usize::from(decode[&[out[0], out[1], out[2]]])] += 1;
            let c = s
                .apply(&ScenarioInput::new(&red).with_mask(Some(&mask)), key)
                .unwrap();
            cpu[usize::from(decode[&c.get_pixel(0, 0).0])] += 1;
        }
        for (who, counts) in [("GPU", &gpu), ("CPU", &cpu)] {
            for (h, (&c, &p)) in counts.iter().zip(&expected).enumerate() {
                let mean = n as f64 * p;
                let sd = (n as f64 * p * (1.0 - p)).sqrt();
                assert!(
                    (c as f64 - mean).abs() <= 5.0 * sd + 1e-9,
                    "{leaf} {who}: hue {h} drawn {c} times in {n}, expected {mean:.1}"
                );
            }
        }
    }
}

/// On a machine with a CUDA device: every background variation with kernels on the device against
/// its host build (compared with the CPU above), repeated bit for bit. Skipped where there is none.
#[cfg(feature = "gpu")]
#[test]
fn device_background_kernels_match_their_host_build() {
    use crate::gpu::cuda::{CudaLauncher, device_count, open};
    match device_count() {
        Ok(n) if n > 0 => {}
        other => {
            eprintln!("skipped: no CUDA device here ({other:?})");
            return;
        }
    }
    let gpu = open(0).unwrap();
    let mut l = CudaLauncher::new(&gpu).unwrap();
    for (w, h) in [(224, 224), (61, 17), (1280, 720)] {
        let sc = random_scene(w, h, 3);
        for leaf in ON_GPU.iter().chain(RANDOM) {
            let s = Background::new(leaf).unwrap();
            let key = RngKey::new(0, "device", leaf);
            let src = DeviceImage {
                buf: l.alloc(sc.image.as_raw().len()).unwrap(),
                width: w,
                height: h,
            };
            l.upload(src.buf, sc.image.as_raw()).unwrap();
            let m = l.alloc(sc.mask.as_raw().len()).unwrap();
            l.upload(m, sc.mask.as_raw()).unwrap();
            let mut once = || {
                let dst = DeviceImage {
                    buf: l.alloc(sc.image.as_raw().len()).unwrap(),
                    ..src
                };
                let mask = Some((&sc.mask, m));
                assert!(background::apply(&mut l, &s, src, mask, &sc.boxes, dst, key).unwrap());
                let mut out = vec![0; sc.image.as_raw().len()];
                l.download(dst.buf, &mut out).unwrap();
                RgbImage::from_raw(w, h, out).unwrap()
            };
            let a = once();
            assert!(a == once(), "{leaf} {w}×{h}: a repeat differs");
            let host = host_apply_key(leaf, &sc.image, Some(&sc.mask), &sc.boxes, key).unwrap();
            assert!(a == host, "{leaf} {w}×{h}: device and host builds differ");
        }
    }
}
