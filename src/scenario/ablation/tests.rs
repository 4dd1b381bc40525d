use super::*;
use image::{Luma, Rgb};

/// A mask from rows of `#` (object) and `.`.
fn mask(rows: &[&str]) -> GrayImage {
    let h = rows.len() as u32;
    let w = rows[0].len() as u32;
    let mut m = GrayImage::new(w, h);
    for (y, r) in rows.iter().enumerate() {
        for (x, c) in r.bytes().enumerate() {
            if c == b'#' {
                m.put_pixel(x as u32, y as u32, Luma([255]));
            }
        }
    }
    m
}

/// An image whose pixel (x, y) is (x, y, 7) — every pixel tells where it came from.
fn coords(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| Rgb([x as u8, y as u8, 7]))
}

/// The image as rows of source coordinates, `G` for gray pixels.
fn sources(img: &RgbImage) -> Vec<String> {
    (0..img.height())
        .map(|y| {
            (0..img.width())
                .map(|x| {
                    let p = img.get_pixel(x, y).0;
                    if p == [GRAY; 3] {
                        " G ".to_string()
                    } else {
                        format!("{}{} ", p[0], p[1])
                    }
                })
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

#[test]
fn gray_sets_exactly_the_nonzero_mask_pixels() {
    let img = coords(4, 3);
    let mut m = mask(&["....", ".##.", "...."]);
    m.put_pixel(3, 2, Luma([1])); // a soft edge counts as object (mask > 0)
    let out = gray_object(&img, &m);
    assert_eq!(sources(&out), ["00 10 20 30", "01  G  G 31", "02 12 22  G"]);
}

#[test]
fn gray_bbox_excludes_the_last_row_and_column() {
    let img = coords(6, 5);
    let m = mask(&["......", ".#....", "..##..", "...#..", "......"]);
    assert_eq!(exclusive_max_box(&m), Some(BBox::new(1, 1, 3, 3)));
    let out = gray_bbox(&img, &m);
    assert_eq!(
        sources(&out),
        [
            "00 10 20 30 40 50",
            "01  G  G 31 41 51",
            "02  G  G 32 42 52",
            "03 13 23 33 43 53",
            "04 14 24 34 44 54",
        ]
    );
    // One object pixel: an empty box, nothing changes; no object: nothing either.
    let one = mask(&["...", ".#.", "..."]);
    assert_eq!(exclusive_max_box(&one), Some(BBox::new(1, 1, 1, 1)));
    assert_eq!(gray_bbox(&coords(3, 3), &one), coords(3, 3));
    assert_eq!(exclusive_max_box(&GrayImage::new(3, 3)), None);
}

#[test]
fn adjacent_tiles_are_clipped_and_trimmed_at_object_pixels() {
    // Box [2, 4) × [1, 3); object pixels at (5, 2) (right), the box's own pixels, and (2, 4).
    let m = mask(&[
        "........", //
        "..##....", //
        "..##.#..", //
        "........", //
        "..#.....", //
    ]);
    let b = BBox::new(2, 1, 4, 3);
    let t = adjacent_tiles(&m, b);
    // Right: columns 4, 5 — column 5 holds an object pixel in rows 1..3, so only column 4.
    assert_eq!(t[0], (Side::Right, BBox::new(4, 1, 5, 3)));
    // Left: columns 0, 1, both free.
    assert_eq!(t[1], (Side::Left, BBox::new(0, 1, 2, 3)));
    // Below: rows 3, 4 — row 4 holds (2, 4) within columns 2..4.
    assert_eq!(t[2], (Side::Below, BBox::new(2, 3, 4, 4)));
    // Above: rows -1..1 clipped to row 0.
    assert_eq!(t[3], (Side::Above, BBox::new(2, 0, 4, 1)));
    assert_eq!(largest_adjacent_tile(&m, b), Some((Side::Left, t[1].1)));
    // Trimming counts outwards from the box: an object column right next to the box empties the
    // tile even if the columns beyond it are free.
    let m2 = mask(&["..###...", "..##....", "........"]);
    assert_eq!(
        adjacent_tiles(&m2, BBox::new(2, 0, 4, 2))[0],
        (Side::Right, BBox::new(4, 0, 4, 2))
    );
}

#[test]
fn ties_go_to_right_then_left_then_below_then_above_and_none_without_tiles() {
    let m = mask(&["...", ".#.", "..."]);
    // 1×1 box in the middle: all four tiles have area 1.
    assert_eq!(
        largest_adjacent_tile(&m, BBox::new(1, 1, 2, 2)),
        Some((Side::Right, BBox::new(2, 1, 3, 2)))
    );
    // A box covering the whole image has no tile.
    let full = mask(&["##", "##"]);
    assert_eq!(largest_adjacent_tile(&full, BBox::new(0, 0, 2, 2)), None);
    let mut img = coords(2, 2);
    tile_fill(&mut img, &full, &[BBox::new(0, 0, 2, 2)]);
    assert_eq!(sources(&img), [" G  G", " G  G"]);
}

#[test]
fn repeated_tiles_continue_periodically_from_the_touching_side() {
    // Box columns 1..6 of row 0 (width 5); tiles of width 2.
    let mut img = coords(9, 1);
    fill_from_tile(
        &mut img,
        BBox::new(1, 0, 6, 1),
        Side::Right,
        BBox::new(6, 0, 8, 1),
    );
    // Period (6, 7) continued leftwards from column 6: column 5 = 7, 4 = 6, 3 = 7, 2 = 6, 1 = 7.
    assert_eq!(sources(&img), ["00 70 60 70 60 70 60 70 80"]);
    let mut img = coords(9, 1);
    fill_from_tile(
        &mut img,
        BBox::new(3, 0, 8, 1),
        Side::Left,
        BBox::new(1, 0, 3, 1),
    );
    // Period (1, 2) continued rightwards from column 2: column 3 = 1, 4 = 2, …
    assert_eq!(sources(&img), ["00 10 20 10 20 10 20 10 80"]);
    // Vertically: box rows 0..3, tile rows 3..5 below.
    let mut img = coords(1, 6);
    fill_from_tile(
        &mut img,
        BBox::new(0, 0, 1, 3),
        Side::Below,
        BBox::new(0, 3, 1, 5),
    );
    assert_eq!(sources(&img), ["04", "03", "04", "03", "04", "05"]);
    let mut img = coords(1, 6);
    fill_from_tile(
        &mut img,
        BBox::new(0, 2, 1, 6),
        Side::Above,
        BBox::new(0, 0, 1, 2),
    );
    assert_eq!(sources(&img), ["00", "01", "00", "01", "00", "01"]);
    // A tile as large as the box is a plain translation.
    let mut img = coords(6, 1);
    fill_from_tile(
        &mut img,
        BBox::new(1, 0, 3, 1),
        Side::Right,
        BBox::new(3, 0, 5, 1),
    );
    assert_eq!(sources(&img), ["00 30 40 30 40 50"]);
}

#[test]
fn tile_ablation_fills_each_four_connected_component_on_the_image_so_far() {
    // Two components that touch only diagonally (separate under 4-connectivity).
    // A: rows 0..3, cols 0..3 → exclusive-max box [0, 2) × [0, 2).
    // B: (3, 3)..(5, 4) → box [3, 5) × [3, 4).
    let m = mask(&[
        "###.....", //
        "###.....", //
        "###.....", //
        "...###..", //
        "...###..", //
    ]);
    let out = tile(&coords(8, 5), &m);
    // A: right tile = columns 2..4 of rows 0..2, cut at column 2 (A's own last column) → empty;
    // left and above are outside; below = rows 2..4 of columns 0..2, cut at row 2 (A's own last
    // row) → empty. No tile: gray.
    // B: right tile columns 5..7 of row 3: column 5 is B's last column → empty; left columns 1..3
    // of row 3: free → tile [1, 3); below: row 4, columns 3..5: object → empty; above: row 2,
    // columns 3..5: free → 2×1 = area 2, ties with left (2×1): left wins.
    assert_eq!(
        sources(&out),
        [
            " G  G 20 30 40 50 60 70",
            " G  G 21 31 41 51 61 71",
            "02 12 22 32 42 52 62 72",
            "03 13 23 13 23 53 63 73",
            "04 14 24 34 44 54 64 74",
        ]
    );
}

#[test]
fn later_boxes_read_the_image_as_filled_so_far() {
    // No object pixels (nothing trims); box 1 = [2, 4): right and left tiles tie at area 2, right
    // wins → columns 4, 5 copied. Box 2 = [0, 2): only a right tile, [2, 4) — now holding 4, 5.
    let free = GrayImage::new(8, 1);
    let mut img = coords(8, 1);
    tile_fill(
        &mut img,
        &free,
        &[BBox::new(2, 0, 4, 1), BBox::new(0, 0, 2, 1)],
    );
    assert_eq!(sources(&img), ["40 50 40 50 40 50 60 70"]);
}
