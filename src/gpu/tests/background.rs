//! The mask-based background scenarios' GPU kernels (`gpu::background`) against the CPU scenarios
//! (`scenario::background`): equal bytes on procedural scenes with exact masks, and the GPU declining
//! exactly the frames the CPU scenario refuses.

use image::{GrayImage, RgbImage};

use super::{flat, test_image};
use crate::frame::BBox;
use crate::gpu::background;
use crate::gpu::corruption::DeviceImage;
use crate::gpu::host::HostLauncher;
use crate::gpu::launch::Launcher;
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

/// Runs `leaf` through the host build of its kernels; `None` when the GPU path declines.
fn host_apply(
    leaf: &str,
    image: &RgbImage,
    mask: Option<&GrayImage>,
    boxes: &[BBox],
) -> Option<RgbImage> {
    let s = Background::new(leaf).unwrap();
    let mut l = HostLauncher::new();
    let (w, h) = image.dimensions();
    let src = DeviceImage {
        buf: l.buffer(image.as_raw()),
        width: w,
        height: h,
    };
    let dst = DeviceImage {
        buf: l.alloc(image.as_raw().len()).unwrap(),
        ..src
    };
    let mask = mask.map(|m| (m, l.buffer(m.as_raw())));
    background::apply(&mut l, &s, src, mask, boxes, dst, RngKey(7))
        .unwrap()
        .then(|| RgbImage::from_raw(w, h, l.read(dst.buf)).unwrap())
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
        "color_r",
        "color_g",
        "color_b",
        "color_rainbow",
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
