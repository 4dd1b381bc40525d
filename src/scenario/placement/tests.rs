use super::*;
use crate::frame::{Frame, Regions, Truth};
use crate::scenario::pool::{BackgroundMaker, BackgroundPool};
use crate::scenario::test_util::ExpectFailure;
use image::{GrayImage, Luma, Rgb};

#[test]
fn centre_offsets_follow_the_reference() {
    for (o, dst) in [(56, 84), (84, 70), (112, 56), (57, 84), (1, 112), (224, 0)] {
        let p = centre_paste(224, 224, o, o);
        assert_eq!(
            (p.dst_x, p.dst_y, p.src_x, p.width),
            (dst, dst, 0, o),
            "{o}"
        );
    }
    // Longer than the canvas: start 0, the patch cut at max(0, o/2 − 112) (reference
    // `obj_start_x`), canvas-long.
    let p = centre_paste(224, 224, 230, 10);
    assert_eq!((p.dst_x, p.src_x, p.width), (0, 3, 224));
    assert_eq!((p.dst_y, p.src_y, p.height), (107, 0, 10));
    // Non-square canvas: each axis on its own.
    let p = centre_paste(1280, 720, 270, 180);
    assert_eq!((p.dst_x, p.dst_y), (640 - 135, 360 - 90));
}

#[test]
fn corners_are_flush_and_cut_at_the_far_edges() {
    let tr = corner_paste(Corner::TopRight, 224, 224, 56, 84);
    assert_eq!((tr.dst_x, tr.dst_y, tr.width, tr.height), (168, 0, 56, 84));
    let bl = corner_paste(Corner::BottomLeft, 224, 224, 56, 84);
    assert_eq!((bl.dst_x, bl.dst_y), (0, 140));
    let br = corner_paste(Corner::BottomRight, 300, 200, 56, 84);
    assert_eq!((br.dst_x, br.dst_y), (244, 116));
    let tl = corner_paste(Corner::TopLeft, 224, 224, 300, 10);
    assert_eq!((tl.dst_x, tl.width, tl.src_x), (0, 224, 0));
    let tr = corner_paste(Corner::TopRight, 224, 224, 300, 10);
    assert_eq!((tr.dst_x, tr.width), (0, 224));
}

#[test]
fn aspect_sizes_match_python_including_the_cap() {
    // Expected values computed with the reference's function in Python 3.10.
    for (pw, ph, s, cap, want) in [
        (100, 20, 56, 224, Some((224, 44))),
        (37, 91, 84, 224, Some((84, 206))),
        (300, 50, 112, 224, Some((224, 37))),
        (49, 49, 56, 224, Some((56, 56))),
        (150, 100, 112, 224, Some((168, 112))),
        (7, 3, 84, 224, Some((196, 84))),
        (13, 97, 112, 224, Some((30, 224))),
        (640, 427, 180, 720, Some((269, 180))),
        (500, 1, 56, 224, None),
        (0, 10, 56, 224, None),
    ] {
        assert_eq!(ar_patch_size(pw, ph, s, cap), want, "{pw}×{ph} s={s}");
    }
}

#[test]
fn sizes_scale_with_the_shorter_side() {
    assert_eq!(SIZES.map(|s| scaled_size(s, 224, 224)), [56, 84, 112]);
    assert_eq!(SIZES.map(|s| scaled_size(s, 1280, 720)), [180, 270, 360]);
    assert_eq!(scaled_size(56, 100, 100), 25); // 25.0
    assert_eq!(scaled_size(84, 100, 100), 38); // 37.5 → 38 (half up)
    assert_eq!(scaled_size(56, 1, 1), 1);
}

#[test]
fn keys_round_trip_and_reject_others() {
    let (keys, groups) = catalog();
    assert_eq!(keys.len(), 54);
    for k in &keys {
        assert_eq!(Placement::from_key(&k.name).unwrap().key(), k.name);
    }
    assert_eq!(groups[0].members.len(), 12);
    assert_eq!(
        groups[0].members[..4],
        [
            "placement/own-tile/centre/56",
            "placement/own-tile/top-right/56",
            "placement/other/centre/56",
            "placement/other/top-right/56",
        ]
    );
    assert_eq!(groups[1].members[0], "placement/ar/own-tile/centre/56");
    for bad in [
        "placement/own/centre/56",
        "placement/own-gray/centre/57",
        "placement/own-gray/middle/56",
        "placement/ar/ar/own-gray/centre/56",
        "placement/own-gray/centre/56/x",
    ] {
        assert!(Placement::from_key(bad).is_none(), "{bad}");
    }
}

/// A 224² frame: a colour ramp background, a box [100, 140) × [60, 120) of a solid colour.
fn scene() -> (RgbImage, GrayImage, BBox) {
    let b = BBox::new(100, 60, 140, 120);
    let img = RgbImage::from_fn(224, 224, |x, y| {
        if x >= b.x0 && x < b.x1 && y >= b.y0 && y < b.y1 {
            Rgb([250, 10, 10])
        } else {
            Rgb([x as u8, y as u8, 90])
        }
    });
    let mask = GrayImage::from_fn(224, 224, |x, y| {
        Luma([u8::from(x >= b.x0 && x < b.x1 && y >= b.y0 && y < b.y1) * 255])
    });
    (img, mask, b)
}

/// The variant.
fn apply(key: &str, input: &ScenarioInput<'_>) -> Result<RgbImage, ScenarioError> {
    let s = Placement::from_key(key).unwrap();
    s.apply(input, RngKey::new(0, "f", s.rng_key()))
}

#[test]
fn own_gray_centre_pastes_the_resized_box_on_a_gray_filled_frame() {
    let (img, mask, b) = scene();
    let input = ScenarioInput::new(&img).with_mask(Some(&mask));
    let out = apply("placement/own-gray/centre/56", &input).unwrap();
    // The patch is a solid colour: bicubic keeps it exactly. It covers [84, 140)².
    for (x, y, p) in out.enumerate_pixels() {
        let in_patch = (84..140).contains(&x) && (84..140).contains(&y);
        let in_box = x >= b.x0 && x < b.x1 && y >= b.y0 && y < b.y1;
        let want = if in_patch {
            Rgb([250, 10, 10])
        } else if in_box {
            Rgb([GRAY; 3])
        } else {
            *img.get_pixel(x, y)
        };
        assert_eq!(*p, want, "({x}, {y})");
    }
}

#[test]
fn top_right_ar_patch_and_the_last_box_is_the_object() {
    let (img, _, _) = scene();
    // Two boxes: the last one is the object; both are removed from the background.
    let boxes = [BBox::new(0, 0, 10, 10), BBox::new(100, 60, 140, 120)];
    let input = ScenarioInput::new(&img).with_boxes(&boxes);
    let out = apply("placement/ar/own-gray/top-right/84", &input).unwrap();
    // 40×60 box, short side 84: 84×126, at columns 140..224, rows 0..126.
    for (x, y, p) in out.enumerate_pixels() {
        if x >= 140 && y < 126 {
            assert_eq!(p.0, [250, 10, 10], "({x}, {y})");
        } else if (x < 10 && y < 10) || ((100..140).contains(&x) && (60..120).contains(&y)) {
            assert_eq!(p.0, [GRAY; 3], "({x}, {y})");
        } else {
            assert_eq!(p, img.get_pixel(x, y), "({x}, {y})");
        }
    }
}

#[test]
fn own_tile_background_has_no_object_pixels_and_random_corner_is_seeded() {
    let (img, mask, b) = scene();
    let input = ScenarioInput::new(&img).with_mask(Some(&mask));
    let out = apply("placement/own-tile/centre/56", &input).unwrap();
    // The box area outside the pasted patch holds background pixels (ramp, blue 90) only.
    for y in b.y0..b.y1 {
        for x in b.x0..b.x1 {
            if !((84..140).contains(&x) && (84..140).contains(&y)) {
                assert_eq!(out.get_pixel(x, y).0[2], 90, "({x}, {y})");
            }
        }
    }
    // Random corner: the same key and frame give the same corner; across frames all four occur.
    let s = Placement::from_key("placement/own-gray/random-corner/56").unwrap();
    let corner_of = |frame: &str| {
        let out = s.apply(&input, RngKey::new(0, frame, s.rng_key())).unwrap();
        let red = |x, y| out.get_pixel(x, y).0 == [250, 10, 10];
        (red(0, 0), red(223, 0), red(0, 223), red(223, 223))
    };
    assert_eq!(corner_of("a"), corner_of("a"));
    let seen: std::collections::HashSet<_> = (0..40).map(|i| corner_of(&format!("f{i}"))).collect();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(
        seen.iter()
            .all(|c| [c.0, c.1, c.2, c.3].iter().filter(|v| **v).count() == 1)
    );
}

#[test]
fn missing_regions_and_empty_masks_are_reported() {
    let (img, _, _) = scene();
    let err = apply("placement/own-gray/centre/56", &ScenarioInput::new(&img)).expect_failure();
    assert!(matches!(err, ScenarioError::NeedsMask(_)));
    let empty = GrayImage::new(224, 224);
    let err = apply(
        "placement/own-gray/centre/56",
        &ScenarioInput::new(&img).with_mask(Some(&empty)),
    )
    .expect_failure();
    assert!(err.to_string().contains("mask is empty"), "{err}");
    // A box longer than the canvas's short side and one pixel thin: capped to 0 rows.
    let wide = RgbImage::new(600, 224);
    let thin = [BBox::new(0, 0, 600, 1)];
    let err = apply(
        "placement/ar/own-gray/centre/56",
        &ScenarioInput::new(&wide).with_boxes(&thin),
    )
    .expect_failure();
    assert!(err.to_string().contains("too thin"), "{err}");
}

fn frame(id: &str, class: usize, colour: [u8; 3], size: u32) -> Frame {
    Frame {
        truth: Some(Truth(class)),
        regions: Some(Regions {
            mask: None,
            boxes: vec![BBox::new(0, 0, 2, 2)],
        }),
        ..Frame::new(id, 0, RgbImage::from_pixel(size, size, Rgb(colour)))
    }
}

#[test]
fn other_background_comes_from_another_class_and_warms_up() {
    let (img, mask, _) = scene();
    let maker: Arc<BackgroundMaker> = Arc::new(|img: &RgbImage, _: &Regions| Some(img.clone()));
    let mut pool = BackgroundPool::new(4, 0, maker);
    let key = "placement/other/centre/112";
    let run = |pool: &BackgroundPool, truth| {
        let view = pool.view();
        let input = ScenarioInput::new(&img)
            .with_mask(Some(&mask))
            .with_truth(truth)
            .with_pool(Some(&view));
        apply(key, &input)
    };
    let err = run(&pool, Some(Truth(1))).expect_failure();
    assert!(
        err.to_string().contains(": background pool warming up"),
        "{err}"
    );
    pool.offer(&frame("same", 1, [0, 200, 0], 224));
    assert!(run(&pool, Some(Truth(1))).is_err(), "own class only");
    // Another class, at another size: resized to the canvas (a solid colour stays exact).
    pool.offer(&frame("other", 2, [0, 0, 200], 100));
    let out = run(&pool, Some(Truth(1))).unwrap();
    assert_eq!(out.get_pixel(0, 0).0, [0, 0, 200]);
    assert_eq!(out.get_pixel(112, 112).0, [250, 10, 10]);
    assert_eq!(out.dimensions(), (224, 224));
    // Unknown class: any earlier frame will do.
    assert!(run(&pool, None).is_ok());
    assert!(Placement::from_key(key).unwrap().uses_pool());
    assert!(
        !Placement::from_key("placement/own-tile/centre/112")
            .unwrap()
            .uses_pool()
    );
}

#[test]
fn geometry_scales_on_a_720p_canvas() {
    let b = BBox::new(600, 300, 700, 500);
    let img = RgbImage::from_fn(1280, 720, |x, y| {
        if x >= b.x0 && x < b.x1 && y >= b.y0 && y < b.y1 {
            Rgb([9, 9, 9])
        } else {
            Rgb([200, 200, 200])
        }
    });
    let boxes = [b];
    let input = ScenarioInput::new(&img).with_boxes(&boxes);
    let out = apply("placement/own-gray/top-right/56", &input).unwrap();
    // 56 on 224 → 180 on 720: columns 1100..1280, rows 0..180.
    assert_eq!(out.get_pixel(1100, 0).0, [9, 9, 9]);
    assert_eq!(out.get_pixel(1279, 179).0, [9, 9, 9]);
    assert_eq!(out.get_pixel(1099, 0).0, [200, 200, 200]);
    assert_eq!(out.get_pixel(1100, 180).0, [200, 200, 200]);
}
