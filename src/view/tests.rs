use super::*;

#[test]
fn shorter_side_truncates_the_long_side() {
    // coffee.png is 600×400: 256/400·600 = 384.
    assert_eq!(shorter_side_size(600, 400, 256), (384, 256));
    // 500×375 → 341.33 → 341.
    assert_eq!(shorter_side_size(500, 375, 256), (341, 256));
    assert_eq!(shorter_side_size(375, 500, 256), (256, 341));
    assert_eq!(shorter_side_size(256, 256, 256), (256, 256));
}

#[test]
fn crop_offset_rounds_half_to_even() {
    assert_eq!(center_offset(256, 224), 16);
    // (341 − 224) / 2 = 58.5 → 58 (even); (343 − 224)/2 = 59.5 → 60.
    assert_eq!(center_offset(341, 224), 58);
    assert_eq!(center_offset(343, 224), 60);
    assert_eq!(center_offset(225, 224), 0); // 0.5 → 0
    assert_eq!(center_offset(227, 224), 2); // 1.5 → 2
    assert_eq!(center_offset(200, 224), -12);
}

#[test]
fn crop_copies_the_centre_and_pads() {
    let img = RgbImage::from_fn(6, 4, |x, y| image::Rgb([x as u8, y as u8, 7]));
    let c = center_crop(&img, 2, 2);
    assert_eq!(c.get_pixel(0, 0), &image::Rgb([2, 1, 7]));
    assert_eq!(c.get_pixel(1, 1), &image::Rgb([3, 2, 7]));
    let p = center_crop(&img, 8, 4);
    assert_eq!(p.get_pixel(0, 0), &image::Rgb([0, 0, 0]));
    assert_eq!(p.get_pixel(1, 0), &image::Rgb([0, 0, 7]));
    assert_eq!(p.get_pixel(7, 3), &image::Rgb([0, 0, 0]));
}

#[test]
fn bilinear_downscale_matches_pil_on_a_ramp() {
    // PIL: Image.fromarray(ramp 0, 16, …, 240).resize((4, 1), BILINEAR) weighs each output's 4-pixel
    // block and its neighbours with a triangle of support 4: for a linear ramp the interior outputs
    // are the block centres; the edges are pulled inwards by the clipped kernel.
    let img = RgbImage::from_fn(16, 1, |x, _| {
        let v = (x * 16) as u8;
        image::Rgb([v, v, v])
    });
    let mut r = Resampler::new();
    let out = resize_rgb(&img, 4, 1, &mut r);
    let got: Vec<u8> = out.pixels().map(|p| p[0]).collect();
    // Pillow 13.0.0 gives [30, 88, 152, 210].
    assert_eq!(got, [30, 88, 152, 210]);
}

#[test]
fn mask_resize_is_pil_nearest() {
    // Pillow 13.0.0: a 7×5 mask with a 4×2 block at (2..6, 1..3) → resize((3, 11), NEAREST).
    let mask = GrayImage::from_fn(7, 5, |x, y| {
        image::Luma([if (2..6).contains(&x) && (1..3).contains(&y) {
            255
        } else {
            0
        }])
    });
    let out = resize_mask(&mask, 3, 11);
    let rows: Vec<[u8; 3]> = out
        .as_raw()
        .chunks_exact(3)
        .map(|r| [r[0], r[1], r[2]])
        .collect();
    let on = [0, 255, 255];
    let off = [0, 0, 0];
    assert_eq!(rows, [off, off, on, on, on, on, on, off, off, off, off]);
    assert_eq!(resize_mask(&mask, 7, 5), mask);
}

#[test]
fn boxes_map_like_their_rectangle_masks() {
    use crate::geometry::{box_mask, tight_box};
    let views = [
        (Resize::Shorter(256), 224, 224),
        (Resize::Shorter(28), 24, 24),
        (Resize::Shorter(60), 24, 20),
        (Resize::Keep, 24, 24), // crop only (pads when the frame is smaller)
        (Resize::To(32, 24), 32, 24), // crop = "squash"
        (Resize::To(256, 256), 224, 224), // Hard ImageNet
        (Resize::To(29, 40), 24, 24),
    ];
    let mut checked = 0;
    for (resize, width, height) in views {
        let mut view = ModelView {
            width,
            height,
            resize,
            filter: Filter::Bilinear,
            resizer: Resampler::new(),
        };
        for (w, h) in [(71u32, 45u32), (45, 71), (640, 427), (20, 13), (224, 224)] {
            let boxes = [
                BBox::new(0, 0, w, h),
                BBox::new(w / 3, h / 4, w / 2 + 1, h - 1),
                BBox::new(0, 0, 1, 1),
                BBox::new(w - 2, h / 2, w, h / 2 + 1),
                BBox::new(w / 2, h / 2, w / 2 + 1, h / 2 + 1),
                BBox::new(1, 2, w + 50, h + 9), // partly outside the frame: clipped
            ];
            for b in boxes {
                let want = b.clip(w, h).and_then(|c| {
                    tight_box(&view.mask(&box_mask(w, h, &[c]), MaskResize::Nearest))
                });
                let got = view.boxes(&[b], (w, h));
                assert_eq!(
                    got,
                    want.into_iter().collect::<Vec<_>>(),
                    "{resize:?} {w}x{h} {b:?}"
                );
                checked += usize::from(!got.is_empty());
            }
        }
    }
    // Most boxes survive; the one-pixel ones vanish under downscaling or cropping.
    assert!(checked > 110, "{checked}");
    // A box fully outside the view's crop is dropped.
    let view = ModelView {
        width: 24,
        height: 24,
        resize: Resize::Keep,
        filter: Filter::Bilinear,
        resizer: Resampler::new(),
    };
    assert_eq!(view.boxes(&[BBox::new(0, 0, 5, 5)], (100, 100)), vec![]);
    assert_eq!(
        view.boxes(&[BBox::new(40, 40, 60, 50)], (100, 100)),
        vec![BBox::new(2, 2, 22, 12)]
    );
}

/// Hard ImageNet's preprocessing against Pillow 13.0.0 (`scripts/make_hard_imagenet_fixtures.py`
/// writes the reference rule's outputs, docs/hard-imagenet.md#data-and-preprocessing): images
/// squashed bilinearly to the resize size and centre-cropped with half-to-even offsets; masks
/// through the same geometry, bilinear on their 8-bit values, then non-zero → 255. Byte-exact.
#[test]
fn hard_imagenet_view_matches_the_reference_rule() {
    #[derive(serde::Deserialize)]
    struct Case {
        kind: String,
        src: String,
        want: String,
        resize: [u32; 2],
        crop: [u32; 2],
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hard_imagenet");
    let cases: Vec<Case> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let mut masks = 0;
    for c in &cases {
        let mut view = ModelView {
            width: c.crop[0],
            height: c.crop[1],
            resize: Resize::To(c.resize[0], c.resize[1]),
            filter: Filter::Bilinear,
            resizer: Resampler::new(),
        };
        let src = image::open(dir.join(&c.src)).unwrap();
        let want = image::open(dir.join(&c.want)).unwrap();
        match c.kind.as_str() {
            "mask" => {
                let src = src.into_luma8();
                let got = view.mask(&src, MaskResize::BilinearNonZero);
                assert_eq!(got, want.into_luma8(), "{}", c.src);
                // The nearest rule is a different (thinner) mask wherever the size changes.
                let nearest = view.mask(&src, MaskResize::Nearest);
                let on = |m: &GrayImage| m.as_raw().iter().filter(|&&v| v != 0).count();
                if src.dimensions() != (c.resize[0], c.resize[1]) {
                    assert!(on(&nearest) < on(&got), "{}", c.src);
                } else {
                    assert_eq!(on(&nearest), on(&got), "{}", c.src);
                }
                masks += 1;
            }
            _ => assert_eq!(view.image(&src.into_rgb8()), want.into_rgb8(), "{}", c.src),
        }
    }
    assert!(masks >= 7 && cases.len() >= 9, "{} cases", cases.len());
}

#[test]
fn bilinear_masks_are_binary_and_cover_the_nearest_ones() {
    // A soft 0/1/255 mask through shorter-side, fixed-size and crop-only views: the bilinear rule
    // gives 0/255 only, and (here, down- and up-scaling) contains every nearest object pixel.
    let mask = GrayImage::from_fn(71, 45, |x, y| {
        image::Luma([match (x * 3 + y * 5) % 11 {
            0 => 1,
            1..=3 => 255,
            _ => 0,
        }])
    });
    for resize in [
        Resize::Shorter(28),
        Resize::To(256, 256),
        Resize::To(30, 24),
        Resize::Keep,
    ] {
        let mut view = ModelView {
            width: 24,
            height: 24,
            resize,
            filter: Filter::Bilinear,
            resizer: Resampler::new(),
        };
        let b = view.mask(&mask, MaskResize::BilinearNonZero);
        let n = view.mask(&mask, MaskResize::Nearest);
        assert_eq!(b.dimensions(), (24, 24));
        assert!(b.as_raw().iter().all(|&v| v == 0 || v == 255), "{resize:?}");
        assert!(
            n.as_raw()
                .iter()
                .zip(b.as_raw())
                .all(|(&n, &b)| n == 0 || b == 255),
            "{resize:?}"
        );
    }
}

#[test]
fn model_view_equals_resize_then_crop() {
    let desc = |resize: &str| {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("l.txt"), "a\nb\n").unwrap();
        let text = format!(
            "onnx = \"m.onnx\"\nlabels = \"l.txt\"\n[input]\nname = \"i\"\nlayout = \"nchw\"\n\
                 height = 24\nwidth = 24\n[preprocess]\n{resize}\ncrop = \"center\"\n\
                 mean = [0.0, 0.0, 0.0]\nstd = [1.0, 1.0, 1.0]\n[output]\nname = \"o\"\nkind = \"logits\"\nclasses = 2\n"
        );
        let p = d.path().join("m.toml");
        std::fs::write(&p, text).unwrap();
        (ModelDesc::load(&p).unwrap(), d)
    };
    let img = RgbImage::from_fn(71, 45, |x, y| {
        image::Rgb([(x * 3 + y) as u8, (x * y) as u8, (200 - x) as u8])
    });
    for (resize, (w, h)) in [
        ("resize_shorter = 28", shorter_side_size(71, 45, 28)),
        ("resize_shorter = 24", shorter_side_size(71, 45, 24)),
        ("resize_shorter = 60", shorter_side_size(71, 45, 60)),
        // A fixed-size squash, then the crop (offsets 2.5 → 2 and 8.5 → 8, half to even).
        ("resize = { width = 29, height = 41 }", (29, 41)),
        ("resize = { width = 24, height = 24 }", (24, 24)),
    ] {
        let (m, _d) = desc(resize);
        let mut view = ModelView::new(&m);
        assert_eq!(view.resized_size((71, 45)), (w, h), "{resize}");
        let mut r = Resampler::new();
        let want = center_crop(&resize_rgb(&img, w, h, &mut r), 24, 24);
        assert_eq!(view.image(&img), want, "{resize}");
    }
}

#[test]
fn interpolation_picks_the_resize_filter() {
    let desc = |keys: &str| {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("l.txt"), "a\nb\n").unwrap();
        let text = format!(
            "onnx = \"m.onnx\"\nlabels = \"l.txt\"\n[input]\nname = \"i\"\nlayout = \"nchw\"\n\
                 height = 24\nwidth = 24\n[preprocess]\n{keys}\n[output]\nname = \"o\"\n\
                 kind = \"logits\"\nclasses = 2\n"
        );
        let p = d.path().join("m.toml");
        std::fs::write(&p, text).unwrap();
        (ModelDesc::load(&p).unwrap(), d)
    };
    let img = RgbImage::from_fn(71, 45, |x, y| {
        image::Rgb([(x * 7 + y * 3) as u8, (x * y) as u8, (200 - 2 * x) as u8])
    });
    let norm = "mean = [0.0, 0.0, 0.0]\nstd = [1.0, 1.0, 1.0]";
    let mut views = Vec::new();
    for (name, filter) in [
        ("nearest", Filter::Nearest),
        ("box", Filter::Box),
        ("bilinear", Filter::Bilinear),
        ("bicubic", Filter::Bicubic),
        ("lanczos", Filter::Lanczos),
    ] {
        // The windowed path (crop inside the resized frame), the squash, and a crop that pads.
        for (shape, (w, h)) in [
            ("resize_shorter = 28\ncrop = \"center\"", (44, 28)),
            ("crop = \"squash\"", (24, 24)),
            (
                "resize = { width = 30, height = 24 }\ncrop = \"center\"",
                (30, 24),
            ),
        ] {
            let (m, _d) = desc(&format!("{shape}\ninterpolation = \"{name}\"\n{norm}"));
            let got = ModelView::new(&m).image(&img);
            let want = center_crop(&Resampler::new().resize_rgb(&img, w, h, filter), 24, 24);
            assert_eq!(got, want, "{name} {shape}");
            if shape.starts_with("resize_shorter") {
                views.push(got);
            }
        }
    }
    // Each filter gives another view of the same frame.
    for (i, a) in views.iter().enumerate() {
        for b in &views[i + 1..] {
            assert_ne!(a, b);
        }
    }
    // Without the key: bilinear, as before.
    let (m, _d) = desc(&format!("resize_shorter = 28\ncrop = \"center\"\n{norm}"));
    assert_eq!(ModelView::new(&m).image(&img), views[2]);
}
