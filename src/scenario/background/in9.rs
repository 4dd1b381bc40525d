//! IN-9 (Backgrounds Challenge) variations, docs/in9.md#how-the-variations-are-built: `only_fg`,
//! `no_fg`, `only_bg_b`, `only_bg_t` and the `mixed_*` composite, as pure functions of a frame and
//! its regions.
//!
//! Boxes use the crate's convention, exclusive ends `[x0, x1) × [y0, y1)`. The reference's boxes are
//! ImageNet's inclusive corners drawn with PIL (a VOC box `xmin..=xmax` is `[xmin, xmax + 1)` here, as
//! the sources convert it). `only_bg_t` follows the reference (`get_bg_tiled` in
//! rabbit-abacus/roleofimagebackgrounds `main.py`) exactly: the right and bottom margins are
//! `W − xmax` and `H − ymax` with `xmax = x1 − 1`, `ymax = y1 − 1`, and the right (bottom) strip is
//! cut from column `xmax` (row `ymax`), so it includes the box's last column (row) — a box touching
//! the right edge tiles with its own last column when that strip wins. The one case the reference
//! cannot produce (its dataset filter drops boxes over 90 % of the view) is refused here: a box
//! covering the whole image has no background to tile.

use image::{GrayImage, RgbImage};

use crate::frame::BBox;

/// `[x0, x1) × [y0, y1)`.
const fn bbox(x0: u32, y0: u32, x1: u32, y1: u32) -> BBox {
    BBox { x0, y0, x1, y1 }
}

/// A box cut to a `width × height` image, `None` when nothing is left.
pub(crate) fn clip_box(b: BBox, width: u32, height: u32) -> Option<BBox> {
    let c = BBox {
        x0: b.x0.min(width),
        y0: b.y0.min(height),
        x1: b.x1.min(width),
        y1: b.y1.min(height),
    };
    (c.x0 < c.x1 && c.y0 < c.y1).then_some(c)
}

/// The tight box of the mask's pixels > 0; `None` for an empty mask.
pub(crate) fn mask_box(mask: &GrayImage) -> Option<BBox> {
    let w = mask.width() as usize;
    if w == 0 {
        return None;
    }
    let mut b: Option<BBox> = None;
    for (y, row) in mask.as_raw().chunks_exact(w).enumerate() {
        let Some(first) = row.iter().position(|&m| m > 0) else {
            continue;
        };
        let last = row.iter().rposition(|&m| m > 0).unwrap_or(first);
        let y = y as u32;
        b = Some(match b {
            None => BBox {
                x0: first as u32,
                y0: y,
                x1: last as u32 + 1,
                y1: y + 1,
            },
            Some(b) => BBox {
                x0: b.x0.min(first as u32),
                y0: b.y0,
                x1: b.x1.max(last as u32 + 1),
                y1: y + 1,
            },
        });
    }
    b
}

/// The object box IN-9 works with for an image of `size` (width, height): the frame's box when it has
/// exactly one (the reference keeps only such images), else the tight box of the mask (pixels > 0),
/// else the union of its boxes; clipped to the image. `None` when that leaves nothing (no regions, an
/// empty mask, boxes outside the image). A mask of another size than the image is ignored.
pub(crate) fn object_box(
    size: (u32, u32),
    mask: Option<&GrayImage>,
    boxes: &[BBox],
) -> Option<BBox> {
    let (w, h) = size;
    if let [only] = boxes {
        return clip_box(*only, w, h);
    }
    if let Some(m) = mask.filter(|m| m.dimensions() == size) {
        return mask_box(m);
    }
    // The union of the boxes (none when there are none).
    boxes
        .iter()
        .filter_map(|b| clip_box(*b, w, h))
        .reduce(|a, b| BBox {
            x0: a.x0.min(b.x0),
            y0: a.y0.min(b.y0),
            x1: a.x1.max(b.x1),
            y1: a.y1.max(b.y1),
        })
}

/// `only_bg_b` (docs/in9.md#only-bg-b): the box's pixels set to black.
pub(crate) fn only_bg_b(image: &RgbImage, b: BBox) -> RgbImage {
    let mut out = image.clone();
    let Some(b) = clip_box(b, image.width(), image.height()) else {
        return out;
    };
    let w = image.width() as usize;
    let raw: &mut [u8] = &mut out;
    for y in b.y0 as usize..b.y1 as usize {
        raw[(y * w + b.x0 as usize) * 3..(y * w + b.x1 as usize) * 3].fill(0);
    }
    out
}

/// The background strip that `only_bg_t` (docs/in9.md#only-bg-t) tiles with, for box `b` in a
/// `width × height` image, as the reference computes it from the inclusive corners `xmax = x1 − 1`,
/// `ymax = y1 − 1`:
/// margins left = x0, right = W − xmax, top = y0, bottom = H − ymax; the larger vertical strip (full
/// height, `[0, x0)` or `[xmax, W)`) when `max(left, right) · H > max(top, bottom) · W`, else the
/// larger horizontal strip (full width, `[0, y0)` or `[ymax, H)`); ties between left and right go
/// right, between top and bottom to the bottom. `None` for a box covering the whole image (no
/// background; the reference's dataset never holds one).
pub(crate) fn tile_strip(width: u32, height: u32, b: BBox) -> Option<BBox> {
    if b.x0 == 0 && b.y0 == 0 && b.x1 >= width && b.y1 >= height || b.x1 == 0 || b.y1 == 0 {
        return None;
    }
    let (xmax, ymax) = (b.x1.min(width) - 1, b.y1.min(height) - 1);
    let (w, h) = (u64::from(width), u64::from(height));
    let (left, right) = (u64::from(b.x0), w - u64::from(xmax));
    let (top, bottom) = (u64::from(b.y0), h - u64::from(ymax));
    let x_area = left.max(right) * h;
    let y_area = top.max(bottom) * w;
    Some(if x_area > y_area {
        if left > right {
            bbox(0, 0, b.x0, height)
        } else {
            bbox(xmax, 0, width, height)
        }
    } else if top > bottom {
        bbox(0, 0, width, b.y0)
    } else {
        bbox(0, ymax, width, height)
    })
}

/// `only_bg_t` (docs/in9.md#only-bg-t): the box's pixels replaced by the image tiled with copies of
/// [`tile_strip`] from (0, 0), i.e. pixel (x, y) of the box takes the strip's pixel
/// (x mod strip width, y mod strip height). `None` when there is no strip (the box spans the image).
pub(crate) fn only_bg_t(image: &RgbImage, b: BBox) -> Option<RgbImage> {
    let (width, height) = image.dimensions();
    let b = clip_box(b, width, height)?;
    let s = tile_strip(width, height, b)?;
    let (tw, th) = ((s.x1 - s.x0) as usize, (s.y1 - s.y0) as usize);
    let w = width as usize;
    let src = image.as_raw();
    let mut out = image.clone();
    let raw: &mut [u8] = &mut out;
    for y in b.y0 as usize..b.y1 as usize {
        let sy = s.y0 as usize + y % th;
        let src_row = &src[sy * w * 3..(sy + 1) * w * 3];
        let dst_row = &mut raw[y * w * 3..(y + 1) * w * 3];
        // Copy runs: from column x, the strip continues for (tw − x mod tw) pixels.
        let mut x = b.x0 as usize;
        while x < b.x1 as usize {
            let sx = x % tw;
            let run = (tw - sx).min(b.x1 as usize - x);
            let from = (s.x0 as usize + sx) * 3;
            dst_row[x * 3..(x + run) * 3].copy_from_slice(&src_row[from..from + run * 3]);
            x += run;
        }
    }
    Some(out)
}

/// `round(p · m / 255)` for p, m in 0..=255 (exact: 255 is odd, so there are no ties).
#[inline(always)]
fn scale(p: u8, m: u8) -> u8 {
    ((u32::from(p) * u32::from(m) + 127) / 255) as u8
}

/// `only_fg` (docs/in9.md#foreground-masks-only-fg-and-no-fg): image × mask, the mask value m as
/// weight m / 255 (exact for binary masks).
pub(crate) fn only_fg(image: &RgbImage, mask: &GrayImage) -> RgbImage {
    weighted(image, mask, false)
}

/// `no_fg` (docs/in9.md#foreground-masks-only-fg-and-no-fg): image × (1 − mask), the mask value m
/// as weight m / 255.
pub(crate) fn no_fg(image: &RgbImage, mask: &GrayImage) -> RgbImage {
    weighted(image, mask, true)
}

fn weighted(image: &RgbImage, mask: &GrayImage, invert: bool) -> RgbImage {
    assert_eq!(
        image.dimensions(),
        mask.dimensions(),
        "mask of the image's size"
    );
    let mut out = image.clone();
    let raw: &mut [u8] = &mut out;
    for (p, &m) in raw.chunks_exact_mut(3).zip(mask.as_raw()) {
        match if invert { 255 - m } else { m } {
            255 => {}
            0 => p.fill(0),
            m => p.iter_mut().for_each(|c| *c = scale(*c, m)),
        }
    }
    out
}

/// The `mixed_*` composite (docs/in9.md#mixed-same-mixed-rand-and-mixed-next) of the frame's object
/// over `bg` (same size): the object image is `only_fg`; where it is black in all three channels
/// the pixel is background (the reference's quirk:
/// genuinely black object pixels show the background too), elsewhere the object, blended with the
/// background by the mask weight m / 255 (`(p·m + q·(255 − m)) / 255`, rounded) — for the reference's
/// binary masks exactly its "object where non-black, else background".
pub(crate) fn mixed(image: &RgbImage, mask: &GrayImage, bg: &RgbImage) -> RgbImage {
    assert_eq!(
        image.dimensions(),
        mask.dimensions(),
        "mask of the image's size"
    );
    assert_eq!(
        image.dimensions(),
        bg.dimensions(),
        "background of the image's size"
    );
    let mut out = bg.clone();
    let raw: &mut [u8] = &mut out;
    for ((o, p), &m) in raw
        .chunks_exact_mut(3)
        .zip(image.as_raw().chunks_exact(3))
        .zip(mask.as_raw())
    {
        // Binary masks (the reference's) take the short ways.
        match m {
            0 => continue,
            255 => {
                if p != [0, 0, 0] {
                    o.copy_from_slice(p);
                }
                continue;
            }
            _ if p.iter().all(|&c| scale(c, m) == 0) => continue,
            _ => {}
        }
        let (mf, mb) = (u32::from(m), 255 - u32::from(m));
        for (o, &p) in o.iter_mut().zip(p) {
            *o = ((u32::from(p) * mf + u32::from(*o) * mb + 127) / 255) as u8;
        }
    }
    out
}

/// The frame's background for the stream's pool: IN-9 `only_bg_t` ([`only_bg_t`]) of `image` with the
/// box chosen by [`object_box`] (exactly one box → that box; else the tight box of the mask; else the
/// union of the boxes). `None` when the frame has no object region or its box leaves no background
/// strip. This is the pipeline's `BackgroundMaker` (`scenario::pool`), applied to the frame at the
/// scenario stage.
pub fn pool_background(
    image: &RgbImage,
    mask: Option<&GrayImage>,
    boxes: &[BBox],
) -> Option<RgbImage> {
    let b = object_box(image.dimensions(), mask, boxes)?;
    only_bg_t(image, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 6×4 image whose pixel (x, y) is (10x + y, 100 + y, x).
    fn grid() -> RgbImage {
        RgbImage::from_fn(6, 4, |x, y| {
            image::Rgb([(10 * x + y) as u8, (100 + y) as u8, x as u8])
        })
    }

    fn red(img: &RgbImage) -> Vec<Vec<u8>> {
        (0..img.height())
            .map(|y| (0..img.width()).map(|x| img.get_pixel(x, y).0[0]).collect())
            .collect()
    }

    #[test]
    fn strip_rule_follows_the_reference() {
        // Box columns 1..=2 of 6, rows 1..=2 of 4: left 1, right 6 − 2 = 4 → 4·4 = 16; top 1,
        // bottom 4 − 2 = 2 → 2·6 = 12: the right strip, from the box's last column.
        let b = bbox(1, 1, 3, 3);
        assert_eq!(tile_strip(6, 4, b), Some(bbox(2, 0, 6, 4)));
        // Left 4 larger than right 6 − 4 = 2.
        let b = bbox(4, 1, 5, 3);
        assert_eq!(tile_strip(6, 4, b), Some(bbox(0, 0, 4, 4)));
        // Equal areas go horizontal: left 2, right 4 − 3 = 1 (2·4) vs top 2, bottom 1 (2·4); the
        // top strip is the larger.
        let b = bbox(2, 2, 4, 4);
        assert_eq!(tile_strip(4, 4, b), Some(bbox(0, 0, 4, 2)));
        // Left 1, right 4 − 2 = 2 (2·4 = 8); top 1, bottom 2 (8): horizontal, the bottom strip from
        // the box's last row 2.
        let b = bbox(1, 1, 3, 3);
        assert_eq!(tile_strip(4, 4, b), Some(bbox(0, 2, 4, 4)));
        // A box covering the image has no background.
        assert_eq!(tile_strip(4, 4, bbox(0, 0, 4, 4)), None);
        // A box touching the right edge: right margin 1 (its last column) loses to left 2.
        assert_eq!(tile_strip(6, 4, bbox(2, 0, 6, 4)), Some(bbox(0, 0, 2, 4)));
        // ... and wins a tie with a one-column left margin (ties go right), as in the reference:
        // left 1 = right 1 (1·8) beats top 0, bottom 1 (1·6).
        assert_eq!(tile_strip(6, 8, bbox(1, 0, 6, 8)), Some(bbox(5, 0, 6, 8)));
    }

    /// A direct port of the reference's `get_bg_tiled` + `combine` (roleofimagebackgrounds
    /// `main.py`) on inclusive corners, pixel by pixel: the oracle `only_bg_t` is checked against.
    fn reference_only_bg_t(img: &RgbImage, xmin: u32, ymin: u32, xmax: u32, ymax: u32) -> RgbImage {
        let (width, height) = img.dimensions();
        let (xmin_margin, ymin_margin) = (xmin, ymin);
        let (xmax_margin, ymax_margin) = (width - xmax, height - ymax);
        let max_x_area = u64::from(xmin_margin.max(xmax_margin)) * u64::from(height);
        let max_y_area = u64::from(ymin_margin.max(ymax_margin)) * u64::from(width);
        let (tx0, ty0, tx1, ty1) = if max_x_area > max_y_area {
            if xmin_margin > xmax_margin {
                (0, 0, xmin, height)
            } else {
                (xmax, 0, width, height)
            }
        } else if ymin_margin > ymax_margin {
            (0, 0, width, ymin)
        } else {
            (0, ymax, width, height)
        };
        let (tw, th) = (tx1 - tx0, ty1 - ty0);
        // bg_tiled: the tile pasted at every (i, j) on a tw × th grid from the origin.
        let tiled = RgbImage::from_fn(width, height, |x, y| {
            *img.get_pixel(tx0 + x % tw, ty0 + y % th)
        });
        // combine: the PIL rectangle [xmin, ymin, xmax, ymax] (inclusive) takes the tiled image.
        RgbImage::from_fn(width, height, |x, y| {
            if (xmin..=xmax).contains(&x) && (ymin..=ymax).contains(&y) {
                *tiled.get_pixel(x, y)
            } else {
                *img.get_pixel(x, y)
            }
        })
    }

    #[test]
    fn only_bg_t_equals_the_reference_port_on_random_boxes() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
        for case in 0..2000 {
            let (w, h) = (rng.random_range(1..24u32), rng.random_range(1..24u32));
            let img = RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([
                    (x * 7 + y) as u8,
                    (y * 11 + x * 3) as u8,
                    (case % 251) as u8,
                ])
            });
            let (xmin, xmax) = {
                let (a, b) = (rng.random_range(0..w), rng.random_range(0..w));
                (a.min(b), a.max(b))
            };
            let (ymin, ymax) = {
                let (a, b) = (rng.random_range(0..h), rng.random_range(0..h));
                (a.min(b), a.max(b))
            };
            let b = bbox(xmin, ymin, xmax + 1, ymax + 1);
            let ours = only_bg_t(&img, b);
            if xmin == 0 && ymin == 0 && xmax == w - 1 && ymax == h - 1 {
                assert!(ours.is_none(), "case {case}: a whole-image box is refused");
                continue;
            }
            let want = reference_only_bg_t(&img, xmin, ymin, xmax, ymax);
            assert!(
                ours.as_ref() == Some(&want),
                "case {case}: {w}x{h} box ({xmin}, {ymin})..=({xmax}, {ymax})"
            );
        }
    }

    #[test]
    fn only_bg_t_tiles_the_strip_from_the_origin() {
        let img = grid();
        // Strip = columns 2..6 (width 4, from the box's last column 2); box columns 1, 2 take
        // strip columns 1 mod 4 = 1 → x 3 and 2 → x 4.
        let out = only_bg_t(&img, bbox(1, 1, 3, 3)).unwrap();
        assert_eq!(
            red(&out),
            vec![
                vec![0, 10, 20, 30, 40, 50],
                vec![1, 31, 41, 31, 41, 51],
                vec![2, 32, 42, 32, 42, 52],
                vec![3, 13, 23, 33, 43, 53],
            ]
        );
        // Horizontal strip from the box's last row 2 (rows 2..4, height 2): box rows 0, 1, 2 take
        // strip rows 0, 1, 0 → image rows 2, 3, 2.
        let out = only_bg_t(&img, bbox(0, 0, 6, 3)).unwrap();
        assert_eq!(red(&out)[0], vec![2, 12, 22, 32, 42, 52]);
        assert_eq!(out.get_pixel(2, 1).0, [23, 103, 2]);
        assert!(only_bg_t(&img, bbox(0, 0, 6, 4)).is_none());
    }

    #[test]
    fn only_bg_b_blacks_the_box() {
        let out = only_bg_b(&grid(), bbox(4, 2, 9, 9));
        assert_eq!(red(&out)[3], vec![3, 13, 23, 33, 0, 0]);
        assert_eq!(out.get_pixel(4, 2).0, [0, 0, 0]);
        assert_eq!(out.get_pixel(3, 2).0, [32, 102, 3]);
    }

    #[test]
    fn fg_and_no_fg_multiply_by_the_mask() {
        let img = RgbImage::from_pixel(3, 1, image::Rgb([200, 101, 7]));
        let mask = GrayImage::from_raw(3, 1, vec![255, 0, 128]).unwrap();
        let fg = only_fg(&img, &mask);
        let nf = no_fg(&img, &mask);
        assert_eq!(fg.get_pixel(0, 0).0, [200, 101, 7]);
        assert_eq!(fg.get_pixel(1, 0).0, [0, 0, 0]);
        // 200·128/255 = 100.39 → 100; 101·128/255 = 50.7 → 51; 7·128/255 = 3.51 → 4.
        assert_eq!(fg.get_pixel(2, 0).0, [100, 51, 4]);
        assert_eq!(nf.get_pixel(0, 0).0, [0, 0, 0]);
        assert_eq!(nf.get_pixel(1, 0).0, [200, 101, 7]);
        assert_eq!(nf.get_pixel(2, 0).0, [100, 50, 3]);
    }

    #[test]
    fn mixed_composites_with_the_black_pixel_quirk() {
        let img = RgbImage::from_raw(4, 1, vec![10, 20, 30, 0, 0, 0, 50, 60, 70, 9, 9, 9]).unwrap();
        let mask = GrayImage::from_raw(4, 1, vec![255, 255, 0, 255]).unwrap();
        let bg = RgbImage::from_pixel(4, 1, image::Rgb([1, 2, 3]));
        let out = mixed(&img, &mask, &bg);
        // Object; black object pixel → background (quirk); outside the mask → background; object.
        assert_eq!(out.as_raw(), &vec![10, 20, 30, 1, 2, 3, 1, 2, 3, 9, 9, 9]);
        // A soft edge blends: (200·51 + 0·204)/255 = 40.
        let img = RgbImage::from_pixel(1, 1, image::Rgb([200, 200, 200]));
        let mask = GrayImage::from_pixel(1, 1, image::Luma([51]));
        let bg = RgbImage::from_pixel(1, 1, image::Rgb([0, 255, 100]));
        assert_eq!(mixed(&img, &mask, &bg).get_pixel(0, 0).0, [40, 244, 120]);
    }

    #[test]
    fn object_box_prefers_one_box_then_mask_then_union() {
        let mask = GrayImage::from_fn(6, 4, |x, y| image::Luma([u8::from(x == 2 && y >= 1) * 9]));
        let one = [bbox(0, 0, 2, 2)];
        let two = [bbox(0, 0, 1, 1), bbox(4, 2, 9, 3)];
        assert_eq!(object_box((6, 4), Some(&mask), &one), Some(one[0]));
        assert_eq!(
            object_box((6, 4), Some(&mask), &two),
            Some(bbox(2, 1, 3, 4))
        );
        assert_eq!(object_box((6, 4), None, &two), Some(bbox(0, 0, 6, 3)));
        assert_eq!(object_box((6, 4), Some(&GrayImage::new(6, 4)), &[]), None);
        assert_eq!(object_box((6, 4), None, &[bbox(7, 0, 9, 2)]), None);
    }

    #[test]
    fn pool_background_is_only_bg_t_of_the_object_box() {
        let img = grid();
        let mask = GrayImage::from_fn(6, 4, |x, y| {
            image::Luma([u8::from((1..3).contains(&x) && (1..3).contains(&y)) * 255])
        });
        let bg = pool_background(&img, Some(&mask), &[]).unwrap();
        assert_eq!(bg, only_bg_t(&img, bbox(1, 1, 3, 3)).unwrap());
        assert!(pool_background(&img, None, &[]).is_none());
        assert!(pool_background(&img, None, &[bbox(0, 0, 6, 4)]).is_none());
    }
}
