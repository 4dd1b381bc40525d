use super::*;
use crate::frame::{BBox, Frame, Regions, Truth};
use crate::scenario::pool::{BackgroundMaker, BackgroundPool};

fn frame(id: &str, class: Option<usize>, colour: u8, boxes: Vec<BBox>) -> Frame {
    Frame {
        truth: class.map(Truth),
        regions: Some(Regions { mask: None, boxes }),
        ..Frame::new(
            id,
            0,
            RgbImage::from_pixel(8, 6, image::Rgb([colour, colour, colour])),
        )
    }
}

fn maker() -> Arc<BackgroundMaker> {
    Arc::new(|img: &RgbImage, r: &Regions| pool_background(img, r.mask.as_ref(), &r.boxes))
}

/// A pool with frames of class 0 (grey 10), 2 (grey 20 and 21) and an unlabelled one (grey 30);
/// plus a class-5 frame whose box covers everything (no usable background).
fn pool() -> crate::scenario::PoolView {
    let b = vec![BBox {
        x0: 2,
        y0: 1,
        x1: 5,
        y1: 4,
    }];
    let mut p = BackgroundPool::new(8, 1, maker());
    p.offer(&frame("a", Some(0), 10, b.clone()));
    p.offer(&frame("b", Some(2), 20, b.clone()));
    p.offer(&frame("c", Some(2), 21, b.clone()));
    p.offer(&frame("d", None, 30, b.clone()));
    p.offer(&frame(
        "e",
        Some(5),
        50,
        vec![BBox {
            x0: 0,
            y0: 0,
            x1: 8,
            y1: 6,
        }],
    ));
    (*p.view()).clone()
}

fn obj() -> (RgbImage, GrayImage) {
    let img = RgbImage::from_pixel(8, 6, image::Rgb([200, 100, 50]));
    let mask = GrayImage::from_fn(8, 6, |x, y| {
        image::Luma([if x < 3 && y < 3 { 255 } else { 0 }])
    });
    (img, mask)
}

fn bg_value(
    scenario: &str,
    truth: Option<usize>,
    pool: &crate::scenario::PoolView,
    seed: u64,
) -> Result<u8, ScenarioError> {
    let (img, mask) = obj();
    let s = build(scenario).unwrap();
    let input = ScenarioInput::new(&img)
        .with_mask(Some(&mask))
        .with_truth(truth.map(Truth))
        .with_pool(Some(pool));
    let out = s.apply(&input, RngKey(seed))?;
    // The object stays; the background pixel (7, 5) comes from the drawn frame.
    assert_eq!(out.get_pixel(0, 0).0, [200, 100, 50]);
    Ok(out.get_pixel(7, 5).0[0])
}

#[test]
fn mixed_draws_from_the_right_classes() {
    let p = pool();
    for seed in 0..40 {
        assert_eq!(
            bg_value("background/mixed_same", Some(0), &p, seed).unwrap(),
            10
        );
        let v = bg_value("background/mixed_same", Some(2), &p, seed).unwrap();
        assert!(v == 20 || v == 21);
        // Next after 0 present in the pool is 2; after 2 it is 5, which has no usable background,
        // so it wraps to 0; after 7 it wraps to 0.
        let v = bg_value("background/mixed_next", Some(0), &p, seed).unwrap();
        assert!(v == 20 || v == 21);
        assert_eq!(
            bg_value("background/mixed_next", Some(2), &p, seed).unwrap(),
            10
        );
        assert_eq!(
            bg_value("background/mixed_next", Some(7), &p, seed).unwrap(),
            10
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..200 {
        seen.insert(bg_value("background/mixed_rand", None, &p, seed).unwrap());
        seen.insert(bg_value("background/random_bg_paste_bgt", None, &p, seed).unwrap());
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![10, 20, 21, 30]);
    // XIMAGENET-12's random background takes whole images: every entry, the one whose box
    // covers its frame too (the test pool has no whole-image maker: the frames as offered).
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..200 {
        seen.insert(bg_value("background/random_bg_paste", None, &p, seed).unwrap());
        // The sum: the object added onto the drawn grey, the background pixel the grey itself.
        let (img, mask) = obj();
        let input = ScenarioInput::new(&img)
            .with_mask(Some(&mask))
            .with_pool(Some(&p));
        let out = build("background/random_bg_add")
            .unwrap()
            .apply(&input, RngKey(seed))
            .unwrap();
        let g = out.get_pixel(7, 5).0[0];
        assert!([10, 20, 21, 30, 50].contains(&g), "{g}");
        assert_eq!(out.get_pixel(0, 0).0, [200 + g, 100 + g, 50 + g]);
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        vec![10, 20, 21, 30, 50]
    );
}

#[test]
fn mixed_is_deterministic_per_key() {
    let p = pool();
    let a: Vec<u8> = (0..30)
        .map(|s| bg_value("background/mixed_rand", None, &p, s).unwrap())
        .collect();
    let b: Vec<u8> = (0..30)
        .map(|s| bg_value("background/mixed_rand", None, &p, s).unwrap())
        .collect();
    assert_eq!(a, b);
    assert!(a.iter().any(|&v| v != a[0]), "{a:?}");
}

#[test]
fn warm_up_missing_truth_and_missing_pool_are_reported() {
    let p = pool();
    let reason = |r: Result<u8, ScenarioError>| match r {
        Err(ScenarioError::Unsuitable { reason, .. }) => reason,
        other => panic!("{other:?}"),
    };
    let r = reason(bg_value("background/mixed_same", Some(3), &p, 0));
    assert!(r.starts_with("background pool warming up"), "{r}");
    let r = reason(bg_value("background/mixed_same", Some(5), &p, 0));
    assert!(r.starts_with("background pool warming up"), "{r}");
    let empty = crate::scenario::PoolView::default();
    for key in [
        "background/mixed_rand",
        "background/mixed_next",
        "background/random_bg_add",
    ] {
        let r = reason(bg_value(key, Some(0), &empty, 0));
        assert!(r.starts_with("background pool warming up"), "{key}: {r}");
    }
    let r = reason(bg_value("background/mixed_same", None, &p, 0));
    assert!(r.contains("ground truth"), "{r}");
    // No pool at all (apply, preview).
    let (img, mask) = obj();
    let input = ScenarioInput::new(&img).with_mask(Some(&mask));
    let r = build("background/mixed_rand")
        .unwrap()
        .apply(&input, RngKey(0));
    assert!(
        matches!(r, Err(ScenarioError::NoPool { ref key, what: "backgrounds" }) if key == "background/mixed_rand"),
        "{r:?}"
    );
    let e = r.unwrap_err().to_string();
    assert!(e.contains("robustream run"), "{e}");
    let r = build("background/random_bg_add")
        .unwrap()
        .apply(&input, RngKey(0));
    assert!(
        matches!(
            r,
            Err(ScenarioError::NoPool {
                what: "whole images",
                ..
            })
        ),
        "{r:?}"
    );
}

#[test]
fn missing_empty_and_mis_sized_masks() {
    let (img, _) = obj();
    for (leaf, _) in IN9.iter().chain(XIMAGENET12) {
        let s = build(&format!("background/{leaf}")).unwrap();
        let r = s.apply(&ScenarioInput::new(&img), RngKey(0));
        assert_eq!(
            r,
            Err(ScenarioError::NeedsMask(format!("background/{leaf}"))),
            "{leaf}"
        );
        let empty = GrayImage::new(8, 6);
        let r = s.apply(&ScenarioInput::new(&img).with_mask(Some(&empty)), RngKey(0));
        assert!(
            matches!(r, Err(ScenarioError::Unsuitable { ref reason, .. }) if reason.contains("empty")),
            "{leaf}: {r:?}"
        );
        let small = GrayImage::from_pixel(4, 6, image::Luma([255]));
        let r = s.apply(&ScenarioInput::new(&img).with_mask(Some(&small)), RngKey(0));
        assert!(
            matches!(r, Err(ScenarioError::Unsuitable { ref reason, .. }) if reason.contains("4x6")),
            "{leaf}: {r:?}"
        );
    }
    // The box scenarios work from boxes alone.
    let boxes = [BBox {
        x0: 1,
        y0: 1,
        x1: 3,
        y1: 3,
    }];
    let out = build("background/only_bg_b")
        .unwrap()
        .apply(&ScenarioInput::new(&img).with_boxes(&boxes), RngKey(0))
        .unwrap();
    assert_eq!(out.get_pixel(1, 1).0, [0, 0, 0]);
    assert_eq!(out.get_pixel(3, 3).0, [200, 100, 50]);
}

#[test]
fn every_leaf_builds_with_its_key_and_pool_use_is_declared() {
    for (leaf, _) in IN9.iter().chain(XIMAGENET12) {
        let key = format!("background/{leaf}");
        let s = build(&key).unwrap();
        assert_eq!(s.key(), key);
        let pool = leaf.starts_with("mixed") || leaf.starts_with("random_bg");
        assert_eq!(s.uses_pool(), pool, "{leaf}");
    }
    assert!(build("background/nope").is_none());
    assert!(build("only_fg").is_none());
}

#[test]
fn fit_covers_and_centre_crops_with_nearest() {
    // 4×2 → 2×2: height binds (2), width 4 → crop the centre 2 columns.
    let bg = RgbImage::from_fn(4, 2, |x, y| image::Rgb([x as u8, y as u8, 0]));
    let f = fit_background(&bg, 2, 2);
    assert_eq!(f.dimensions(), (2, 2));
    assert_eq!(f.get_pixel(0, 0).0, [1, 0, 0]);
    assert_eq!(f.get_pixel(1, 1).0, [2, 1, 0]);
    // 2×2 → 4×6: height binds (6 → width 6), crop columns 1..5; NEAREST doubles/triples pixels.
    let bg = RgbImage::from_fn(2, 2, |x, y| image::Rgb([x as u8, y as u8, 0]));
    let f = fit_background(&bg, 4, 6);
    assert_eq!(f.dimensions(), (4, 6));
    let row0: Vec<u8> = (0..4).map(|x| f.get_pixel(x, 0).0[0]).collect();
    assert_eq!(row0, vec![0, 0, 1, 1]);
    let col0: Vec<u8> = (0..6).map(|y| f.get_pixel(0, y).0[1]).collect();
    assert_eq!(col0, vec![0, 0, 0, 1, 1, 1]);
    assert!(matches!(fit_background(&bg, 2, 2), Cow::Borrowed(_)));
}
