use super::*;

fn headers(r: &Row) -> Vec<&str> {
    r.columns
        .iter()
        .map(|c| c.as_ref().map_or("-", |c| c.header.as_str()))
        .collect()
}

fn key(r: &Row, i: usize) -> &str {
    r.columns[i].as_ref().map_or("-", |c| c.key.as_str())
}

#[test]
fn imagenet_c_all_is_19_rows_of_clean_and_five_severities() {
    let c = Catalog::builtin();
    let plan = Plan::from_items(&["imagenet-c-all"], &c).unwrap();
    let rows = grid(&plan.keys());
    assert_eq!(rows.len(), 19);
    assert_eq!(rows[0].label, "corruption/gaussian_noise");
    assert_eq!(rows[18].label, "corruption/saturate");
    for r in &rows {
        assert_eq!(headers(r), ["clean", "1", "2", "3", "4", "5"]);
        assert_eq!(key(r, 0), "clean");
        assert_eq!(key(r, 3), format!("{}/3", r.label));
    }
}

#[test]
fn grid_orders_rows_by_first_appearance_and_severities_by_number() {
    let rows = grid(&[
        "corruption/fog/10",
        "corruption/contrast/2",
        "corruption/fog/9",
        "corruption/fog/9",
        "clean",
    ]);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].label, "corruption/fog");
    // Severities share columns: the union 2, 9, 10; missing ones are empty cells.
    assert_eq!(headers(&rows[0]), ["clean", "-", "9", "10"]);
    assert_eq!(headers(&rows[1]), ["clean", "2", "-", "-"]);
}

#[test]
fn leaf_families_are_one_row_each_with_leaves_in_given_order() {
    let rows = grid(&[
        "background/only_fg",
        "background/mixed_rand",
        "ablation/fg_blur/1",
        "background/only_bg_b",
    ]);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].label, "background");
    assert_eq!(
        headers(&rows[0]),
        ["clean", "only_fg", "mixed_rand", "only_bg_b"]
    );
    assert_eq!(key(&rows[0], 1), "background/only_fg");
    assert_eq!(rows[1].label, "ablation/fg_blur");
    assert_eq!(headers(&rows[1]), ["clean", "1"]);
}

#[test]
fn equal_severities_share_a_column_without_captions() {
    let items = [
        "corruption/fog",
        "corruption/pixelate/5",
        "corruption/pixelate/1",
    ];
    let plan = Plan::from_items(&items, &Catalog::builtin()).unwrap();
    let rows = grid(&plan.keys());
    assert_eq!(headers(&rows[1]), ["clean", "1", "-", "-", "-", "5"]);
    let g = Geometry::new(&rows, 32, false);
    assert_eq!(g.headers, ["clean", "1", "2", "3", "4", "5"]);
    assert_eq!(g.caption(1, 5), None);
    // Another family's numbers get columns of their own (and a caption), not a sparse union.
    let rows = grid(&[
        "corruption/fog/1",
        "placement/own-gray/centre/84",
        "placement/own-gray/centre/56",
        "placement/own-tile/centre/112",
    ]);
    assert_eq!(headers(&rows[0]), ["clean", "1"]);
    assert_eq!(headers(&rows[1]), ["clean", "56", "84", "-"]);
    assert_eq!(headers(&rows[2]), ["clean", "-", "-", "112"]);
    let g = Geometry::new(&rows, 32, false);
    assert_eq!(g.headers, ["clean", "1", "", ""]);
    assert!(g.caption(1, 1).is_some() && g.caption(2, 3).is_some());
    // A leaf row next to them is packed left and captioned.
    let rows = grid(&["corruption/fog/2", "background/only_fg"]);
    assert_eq!(headers(&rows[1]), ["clean", "only_fg"]);
    assert!(Geometry::new(&rows, 32, false).caption(1, 1).is_some());
}

#[test]
fn long_leaf_families_continue_on_further_rows() {
    let leaves: Vec<String> = (0..17).map(|i| format!("background/v{i}")).collect();
    let rows = grid(&leaves);
    assert_eq!(rows.len(), 3);
    let sizes: Vec<usize> = rows.iter().map(|r| r.columns.len()).collect();
    assert_eq!(sizes, [8, 8, 4]);
    for r in &rows {
        assert_eq!(r.label, "background");
        assert_eq!(key(r, 0), "clean");
        assert_eq!(r.shared, None);
    }
    assert_eq!(key(&rows[1], 1), "background/v7");
    assert_eq!(key(&rows[2], 3), "background/v16");
    // The first row's headers are on top; the continuations carry captions.
    let g = Geometry::new(&rows, 32, false);
    assert_eq!(g.headers[1], "v0");
    assert!(g.caption(0, 1).is_none() && g.caption(1, 1).is_some());
}

#[test]
fn clean_alone_is_one_cell_and_nothing_is_nothing() {
    let rows = grid(&["clean"]);
    assert_eq!(rows.len(), 1);
    assert_eq!(headers(&rows[0]), ["clean"]);
    assert!(grid::<&str>(&[]).is_empty());
    let rows = grid(&["weird", "clean"]);
    assert_eq!(rows[0].label, "other");
    assert_eq!(key(&rows[0], 1), "weird");
}

#[test]
fn geometry_adds_up_and_cells_do_not_overlap() {
    let rows = grid(&[
        "corruption/fog/1",
        "corruption/fog/2",
        "corruption/gaussian_noise/1",
    ]);
    let g = Geometry::new(&rows, 100, false);
    // "gaussian_noise" at ×2 is the widest label.
    assert_eq!(g.label_width, 14 * 16);
    assert_eq!(g.columns, 3);
    assert_eq!(
        g.width,
        2 * MARGIN + g.label_width + LABEL_PAD + 3 * 100 + 2 * GAP
    );
    // Row 1 has fewer columns but the same headers as far as it goes: no caption.
    assert_eq!(g.caption(1, 0), None);
    assert_eq!(
        g.height,
        2 * MARGIN + 16 + BAND_GAP + HEADER_H + 2 * 100 + GAP
    );
    let c00 = g.cell(0, 0);
    let c01 = g.cell(0, 1);
    let c10 = g.cell(1, 0);
    assert_eq!(c01.x, c00.right() + GAP);
    assert_eq!(c10.y, c00.bottom() + GAP);
    assert!(g.label(0).right() + LABEL_PAD == c00.x);
    assert!(g.header(0).bottom() <= c00.y);
    assert!(g.cell(1, 2).right() + MARGIN == g.width);
    assert!(g.cell(1, 2).bottom() + MARGIN == g.height);
    let with_mask = Geometry::new(&rows, 100, true);
    assert_eq!(with_mask.height, g.height + 100 + BAND_GAP);
    let panel = with_mask.mask_panel.unwrap();
    assert_eq!((panel.x, panel.width), (c00.x, 100));
    assert!(panel.bottom() <= with_mask.header(0).y);
}

#[test]
fn rows_with_other_headers_get_a_caption_band() {
    let rows = grid(&["corruption/fog/1", "background/only_fg"]);
    let g = Geometry::new(&rows, 64, false);
    assert_eq!(g.caption(0, 1), None);
    let cap = g.caption(1, 1).unwrap();
    assert_eq!(cap.bottom() + 4, g.cell(1, 1).y);
    assert_eq!(g.cell(1, 0).y, g.cell(0, 0).bottom() + GAP + CAPTION_H);
}

#[test]
fn long_labels_are_capped() {
    let rows = grid(&["x/an_extraordinarily_long_family_name_indeed/1"]);
    let g = Geometry::new(&rows, 64, false);
    assert_eq!(g.label_width, MAX_LABEL_W);
    let rows = grid(&["a/b/1"]);
    assert_eq!(Geometry::new(&rows, 64, false).label_width, MIN_LABEL_W);
}

#[test]
fn fit_keeps_aspect_and_fills_the_long_side() {
    assert_eq!(fit(224, 224, 160), (160, 160));
    assert_eq!(fit(400, 600, 160), (107, 160));
    assert_eq!(fit(32, 32, 160), (160, 160));
    assert_eq!(fit(1000, 1, 160), (160, 1));
    assert_eq!(fit(0, 5, 160), (0, 0));
    let c = Rect {
        x: 10,
        y: 20,
        width: 160,
        height: 160,
    };
    let p = placement(c, (160, 107));
    assert_eq!((p.x, p.y, p.width, p.height), (10, 46, 160, 107));
}

#[test]
fn scale_to_tile_shrinks_with_lanczos_and_enlarges_with_nearest() {
    let mut r = Resampler::new();
    let img = RgbImage::from_fn(300, 200, |x, y| image::Rgb([x as u8, y as u8, 7]));
    let small = scale_to_tile(&img, 150, &mut r);
    assert_eq!(small.dimensions(), (150, 100));
    assert_eq!(
        small,
        Resampler::new().resize_rgb(&img, 150, 100, Filter::Lanczos)
    );
    let tiny = RgbImage::from_fn(2, 2, |x, y| {
        image::Rgb([(x * 200) as u8, (y * 200) as u8, 0])
    });
    let big = scale_to_tile(&tiny, 8, &mut r);
    // Nearest: each source pixel becomes a 4×4 block, no blending.
    assert_eq!(big.get_pixel(3, 3), tiny.get_pixel(0, 0));
    assert_eq!(big.get_pixel(4, 0), tiny.get_pixel(1, 0));
    assert_eq!(big.get_pixel(7, 7), tiny.get_pixel(1, 1));
    let same = scale_to_tile(&small, 150, &mut r);
    assert_eq!(same, small);
}

fn ink_box(img: &RgbImage) -> Option<(u32, u32, u32, u32)> {
    let mut b: Option<(u32, u32, u32, u32)> = None;
    for (x, y, p) in img.enumerate_pixels() {
        if p.0 != BACKGROUND {
            b = Some(match b {
                None => (x, y, x, y),
                Some((a, c, d, e)) => (a.min(x), c.min(y), d.max(x), e.max(y)),
            });
        }
    }
    b
}

#[test]
fn text_stays_within_its_advance_box() {
    let all = Rect {
        x: 0,
        y: 0,
        width: 200,
        height: 100,
    };
    for (text, scale) in [("Ag_|", 2), ("clean", 1), ("W", 3), ("é×?", 2)] {
        let mut img = RgbImage::from_pixel(200, 100, image::Rgb(BACKGROUND));
        draw_text(&mut img, 10, 20, text, scale, INK, all);
        let (x0, y0, x1, y1) = ink_box(&img).expect("something is drawn");
        assert!(x0 >= 10 && y0 >= 20, "{text}");
        assert!(x1 < 10 + text_width(text, scale), "{text}");
        assert!(y1 < 20 + GLYPH * scale, "{text}");
    }
    let mut img = RgbImage::from_pixel(50, 50, image::Rgb(BACKGROUND));
    draw_text(&mut img, 0, 0, "   ", 2, INK, all);
    assert!(ink_box(&img).is_none());
    // Clipping: nothing outside the clip rectangle.
    let clip = Rect {
        x: 5,
        y: 5,
        width: 10,
        height: 6,
    };
    let mut img = RgbImage::from_pixel(50, 50, image::Rgb(BACKGROUND));
    draw_text(&mut img, 0, 0, "MMMM", 2, INK, clip);
    let (x0, y0, x1, y1) = ink_box(&img).unwrap();
    assert!(x0 >= 5 && y0 >= 5 && x1 < 15 && y1 < 11);
}

#[test]
fn labels_shed_lines_to_fit_small_rows() {
    for h in [8, 16, 20, 30, 160] {
        let r = Rect {
            x: 4,
            y: 10,
            width: 120,
            height: h,
        };
        let mut img = RgbImage::from_pixel(130, 200, image::Rgb(BACKGROUND));
        draw_label(&mut img, r, "corruption/", "fog", Some("note"));
        let (x0, y0, x1, y1) = ink_box(&img).expect("the name is drawn");
        assert!(
            x0 >= r.x && y0 >= r.y && x1 < r.right() && y1 < r.bottom(),
            "{h}"
        );
        // The name is never cut: at ×2 from 16 px rows on (the 'f' spans 7 glyph rows).
        let tall = y1 - y0 + 1;
        if h >= 16 {
            assert!(tall >= 14, "{h}: {tall}");
        }
        // Prefix and note appear only where they fit with the ×2 name.
        let muted = img.pixels().any(|p| p.0 == MUTED);
        assert_eq!(muted, h >= 26, "{h}");
    }
}

#[test]
fn glyphs_cover_ascii_and_latin1_and_fall_back_to_question_mark() {
    assert_ne!(glyph('A'), [0; 8]);
    assert_eq!(glyph(' '), [0; 8]);
    assert_eq!(glyph('€'), glyph('?'));
    assert_ne!(glyph('×'), glyph('?'));
    // Bit 0 is the leftmost pixel: 'A' has its apex in columns 2..=3.
    assert_eq!(glyph('A')[0], 0b0000_1100);
}

#[test]
fn fit_text_prefers_the_scale_then_shrinks_then_shortens() {
    assert_eq!(fit_text("fog", 48, 2), ("fog".into(), 2));
    assert_eq!(fit_text("fog", 47, 2), ("fog".into(), 1));
    assert_eq!(fit_text("gaussian_noise", 64, 2), ("gaussi..".into(), 1));
    assert_eq!(fit_text("abc", 16, 2), ("ab".into(), 1));
    for w in [0, 8, 17, 64, 300] {
        let (t, s) = fit_text("jpeg_compression", w, 2);
        assert!(text_width(&t, s) <= w);
    }
}

#[test]
fn wrap_fills_lines_splits_long_words_and_marks_overflow() {
    assert_eq!(
        wrap("needs a foreground mask", 10, 5),
        ["needs a", "foreground", "mask"]
    );
    assert_eq!(wrap("abcdefghij", 4, 5), ["abcd", "efgh", "ij"]);
    assert_eq!(wrap("one two three four", 5, 2), ["one", "two.."]);
    assert_eq!(wrap("one three four", 5, 2), ["one", "thr.."]);
    assert!(wrap("x", 0, 3).is_empty());
    for l in wrap("a b c d e f g h i j k l m", 3, 3) {
        assert!(l.chars().count() <= 3, "{l}");
    }
}

#[test]
fn outline_is_the_inner_ring_of_the_mask() {
    let mask = GrayImage::from_fn(10, 8, |x, y| {
        image::Luma([if (2..7).contains(&x) && (2..6).contains(&y) {
            255
        } else {
            0
        }])
    });
    let o = mask_outline(&mask, 1);
    for y in 0..8 {
        for x in 0..10 {
            let inside = (2..7).contains(&x) && (2..6).contains(&y);
            let ring = inside && (x == 2 || x == 6 || y == 2 || y == 5);
            assert_eq!(o[(y * 10 + x) as usize], ring, "({x}, {y})");
        }
    }
    // Thickness 2 also takes the next ring in; the 5×4 square is all outline then.
    assert!(
        mask_outline(&mask, 2)
            .iter()
            .zip(mask.as_raw())
            .all(|(&o, &m)| o == (m == 255))
    );
    // Empty and full masks have no boundary; the image edge is not one.
    let empty = GrayImage::new(6, 6);
    assert!(!mask_outline(&empty, 1).contains(&true));
    let full = GrayImage::from_pixel(6, 6, image::Luma([255]));
    assert!(!mask_outline(&full, 1).contains(&true));
    // A half mask: only the column next to the background.
    let half = GrayImage::from_fn(6, 3, |x, _| image::Luma([if x >= 3 { 255 } else { 0 }]));
    let o = mask_outline(&half, 1);
    for y in 0..3 {
        for x in 0..6 {
            assert_eq!(o[y * 6 + x], x == 3);
        }
    }
}

#[test]
fn outline_colour_contrasts_with_what_it_is_drawn_on() {
    let green = RgbImage::from_pixel(4, 4, image::Rgb([0, 250, 0]));
    assert_eq!(contrasting_colour(&green, &[true; 16]), [255, 0, 255]);
    let magenta = RgbImage::from_pixel(4, 4, image::Rgb([250, 0, 250]));
    assert_eq!(contrasting_colour(&magenta, &[false; 16]), [0, 255, 0]);
    // Only the outline's pixels count.
    let mut mixed = magenta.clone();
    mixed.put_pixel(0, 0, image::Rgb([0, 255, 0]));
    let mut on = [false; 16];
    on[0] = true;
    assert_eq!(contrasting_colour(&mixed, &on), [255, 0, 255]);
}

#[test]
fn region_panel_draws_box_edges_and_mask_outline() {
    let img = RgbImage::from_pixel(100, 50, image::Rgb([128, 128, 128]));
    let b = BBox::new(10, 10, 30, 20);
    let p = region_panel(&img, None, &[b], 100, &mut Resampler::new());
    let changed = |x: u32, y: u32| p.get_pixel(x, y).0 != [128, 128, 128];
    for (x, y) in [(10, 10), (29, 10), (10, 19), (29, 19), (20, 10), (10, 15)] {
        assert!(changed(x, y), "edge ({x}, {y})");
    }
    for (x, y) in [(9, 10), (30, 15), (20, 20), (15, 15), (28, 18)] {
        assert!(!changed(x, y), "not an edge ({x}, {y})");
    }
    // Halved into a 50-px tile: the box's edges scale with it (starts down, ends up).
    let p = region_panel(&img, None, &[b], 50, &mut Resampler::new());
    assert_eq!(p.dimensions(), (50, 25));
    assert_ne!(p.get_pixel(5, 5).0, p.get_pixel(7, 7).0);
    assert_ne!(p.get_pixel(14, 9).0, p.get_pixel(15, 10).0);
    // A mask outline and a box together, one colour.
    let mask = GrayImage::from_fn(100, 50, |x, _| image::Luma([if x >= 60 { 255 } else { 0 }]));
    let p = region_panel(&img, Some(&mask), &[b], 100, &mut Resampler::new());
    assert_eq!(p.get_pixel(60, 30), p.get_pixel(10, 10));
    assert_eq!(p.get_pixel(61, 30).0, [128, 128, 128]);
}

/// A scenario that always fails, as a mask-needing one does on an image without a mask.
struct NeedsMask;

impl Scenario for NeedsMask {
    fn key(&self) -> &str {
        "background/only_fg"
    }

    fn apply(&self, _: &ScenarioInput<'_>, _: RngKey) -> Result<RgbImage, ScenarioError> {
        Err(ScenarioError::NeedsMask(self.key().into()))
    }
}

#[test]
fn a_failing_scenario_draws_a_grey_tile_and_is_reported() {
    let catalog = Catalog::builtin();
    let rows = grid(&["corruption/contrast/1", "background/only_fg"]);
    let spec = SheetSpec {
        rows,
        title: "t".into(),
        tile: 64,
        seed: 0,
        frame_id: "f".into(),
        view_after: None,
    };
    let img = RgbImage::from_fn(48, 32, |x, y| {
        image::Rgb([(x * 5) as u8, (y * 7) as u8, 90])
    });
    let build = |k: &str| {
        if k == "background/only_fg" {
            Some(Arc::new(NeedsMask) as Arc<dyn Scenario>)
        } else {
            catalog.build(k)
        }
    };
    let out = compose(&spec, &ScenarioInput::new(&img), &build);
    assert_eq!(out.failures.len(), 1);
    assert_eq!(out.failures[0].0, "background/only_fg");
    let cell = out.geometry.cell(1, 1);
    let sheet = &out.sheet;
    let grey = (0..cell.height)
        .flat_map(|y| (0..cell.width).map(move |x| (x, y)))
        .filter(|&(x, y)| sheet.get_pixel(cell.x + x, cell.y + y).0 == FAILED)
        .count();
    let ink = (0..cell.height)
        .flat_map(|y| (0..cell.width).map(move |x| (x, y)))
        .filter(|&(x, y)| sheet.get_pixel(cell.x + x, cell.y + y).0 == INK)
        .count();
    assert!(grey > 64 * 64 / 2, "mostly grey: {grey}");
    assert!(ink > 50, "the reason is written: {ink}");
    // The working scenario's tile is its variant scaled.
    let expect = scale_to_tile(
        &catalog
            .build("corruption/contrast/1")
            .unwrap()
            .apply(
                &ScenarioInput::new(&img),
                RngKey::new(0, "f", "corruption/contrast/1"),
            )
            .unwrap(),
        64,
        &mut Resampler::new(),
    );
    let at = placement(out.geometry.cell(0, 1), expect.dimensions());
    for (x, y, p) in expect.enumerate_pixels() {
        assert_eq!(sheet.get_pixel(at.x + x, at.y + y), p);
    }
}
