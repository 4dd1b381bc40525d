//! XIMAGENET-12 scenarios, docs/ximagenet.md#scenarios, on the OpenCV-exact kernels of
//! [`crate::kernels::opencv`]. Object = mask > 0 (XIMAGENET standardises its masks to 0/255, any non-zero →
//! 255); background = mask == 0.
//!
//! Random choices (the colour's hue, the rainbow shift) come from the variant's keyed generator instead
//! of Python's `random`; the ranges are the reference's (inclusive `random.randint`). The reference's
//! rainbow code sits inside its R/G/B loop and is written three times, the last draw winning: one draw
//! here. Its grayscale scenario has no published code: ours is OpenCV RGB→GRAY of the background,
//! written to all three channels.

use image::{GrayImage, RgbImage};
use rand::RngExt;

use super::{ScenarioRng, in9};
use crate::kernels::opencv::{self, BLUR_9, BLUR_15, HueEdit, Rect};

/// XIMAGENET-12's background colours (docs/ximagenet.md#scenarios).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Colour {
    /// One hue drawn from 0..=29 or 150..=180 (the range first, each with probability ½).
    Red,
    /// One hue drawn from 30..=89.
    Green,
    /// One hue drawn from 90..=149.
    Blue,
    /// OpenCV grayscale (no random draw).
    Grey,
    /// Every hue shifted by one k drawn from 0..=90, `((H + k) mod 256) mod 180`.
    Rainbow,
}

impl Colour {
    /// The hue edit for one variant, drawn from `rng` (`None` for [`Colour::Grey`]).
    fn draw(self, rng: &mut ScenarioRng) -> Option<HueEdit> {
        Some(match self {
            Colour::Red => {
                if rng.random_range(0..2u8) == 0 {
                    HueEdit::Set(rng.random_range(0..=29))
                } else {
                    HueEdit::Set(rng.random_range(150..=180))
                }
            }
            Colour::Green => HueEdit::Set(rng.random_range(30..=89)),
            Colour::Blue => HueEdit::Set(rng.random_range(90..=149)),
            Colour::Rainbow => HueEdit::Shift(rng.random_range(0..=90)),
            Colour::Grey => return None,
        })
    }
}

/// Copies `src` pixels into `dst` where `take(mask value)` holds (same sizes).
fn take_where(dst: &mut RgbImage, src: &RgbImage, mask: &GrayImage, take: impl Fn(u8) -> bool) {
    let dst: &mut [u8] = dst;
    for ((d, s), &m) in dst
        .chunks_exact_mut(3)
        .zip(src.as_raw().chunks_exact(3))
        .zip(mask.as_raw())
    {
        if take(m) {
            d.copy_from_slice(s);
        }
    }
}

/// Blurred background: `GaussianBlur(image, (15, 15), 3)` where mask == 0, the image elsewhere.
pub(crate) fn blur_background(image: &RgbImage, mask: &GrayImage) -> RgbImage {
    let (w, h) = image.dimensions();
    let mut out = opencv::gaussian_blur(image, &BLUR_15, Rect::full(w, h));
    take_where(&mut out, image, mask, |m| m > 0);
    out
}

/// The mask's tight box as a [`Rect`] (the whole image for an empty mask).
fn object_rect(mask: &GrayImage) -> Rect {
    match in9::mask_box(mask) {
        Some(b) => Rect {
            x0: b.x0,
            y0: b.y0,
            x1: b.x1,
            y1: b.y1,
        },
        None => Rect::full(mask.width(), mask.height()),
    }
}

/// Blurred object: the image with `GaussianBlur(image, (15, 15), 3)` where mask > 0 (the blur is
/// computed only over the object's box; the values are those of the whole-image blur).
pub(crate) fn blur_object(image: &RgbImage, mask: &GrayImage) -> RgbImage {
    let rect = object_rect(mask);
    let blurred = opencv::gaussian_blur(image, &BLUR_15, rect);
    let mut out = image.clone();
    paste_rect(&mut out, &blurred, mask, rect, |m| m > 0);
    out
}

/// Writes `block` (the `rect` part of an image) into `out` where `take(mask)` holds.
fn paste_rect(
    out: &mut RgbImage,
    block: &RgbImage,
    mask: &GrayImage,
    rect: Rect,
    take: impl Fn(u8) -> bool,
) {
    let w = out.width() as usize;
    let rw = rect.width() as usize;
    let raw: &mut [u8] = out;
    for (i, brow) in block.as_raw().chunks_exact(rw * 3).enumerate() {
        let y = rect.y0 as usize + i;
        let start = y * w + rect.x0 as usize;
        let mrow = &mask.as_raw()[start..start + rw];
        let orow = &mut raw[start * 3..(start + rw) * 3];
        for ((o, b), &m) in orow.chunks_exact_mut(3).zip(brow.chunks_exact(3)).zip(mrow) {
            if take(m) {
                o.copy_from_slice(b);
            }
        }
    }
}

/// Recoloured background: [`Colour::draw`] once, then OpenCV HSV with the hue replaced or shifted
/// ([`opencv::recolour`]) or, for grey, OpenCV grayscale — on the background (mask == 0) only.
pub(crate) fn colour_background(
    image: &RgbImage,
    mask: &GrayImage,
    colour: Colour,
    rng: &mut ScenarioRng,
) -> RgbImage {
    match colour.draw(rng) {
        Some(edit) => opencv::recolour(image, mask.as_raw(), edit),
        None => {
            let mut out = image.clone();
            let raw: &mut [u8] = &mut out;
            for (p, &m) in raw.chunks_exact_mut(3).zip(mask.as_raw()) {
                if m == 0 {
                    let g = opencv::gray(p[0], p[1], p[2]);
                    p.fill(g);
                }
            }
            out
        }
    }
}

/// Bright background (`background`) or object: the image with
/// `addWeighted(image, 1.5, GaussianBlur(image, (9, 9), 4), 0.9, 1.9)` on the background (mask == 0)
/// or on the object (mask > 0). The bright image is computed only where it is used (the whole image,
/// or the object's box), with OpenCV's element-position rule for the fused arithmetic
/// ([`opencv::add_weighted_bright`]).
pub(crate) fn bright(image: &RgbImage, mask: &GrayImage, background: bool) -> RgbImage {
    let (w, h) = image.dimensions();
    let total = w as usize * h as usize * 3;
    if background {
        // The bright image over the whole frame, made in the blur's buffer; the object copied back.
        let mut out = opencv::gaussian_blur(image, &BLUR_9, Rect::full(w, h));
        opencv::add_weighted_bright(image.as_raw(), &mut out, 0..total, total);
        take_where(&mut out, image, mask, |m| m > 0);
        return out;
    }
    let rect = object_rect(mask);
    let mut bright = opencv::gaussian_blur(image, &BLUR_9, rect);
    let rw = rect.width() as usize;
    for (i, row) in bright.chunks_exact_mut(rw * 3).enumerate() {
        let start = ((rect.y0 as usize + i) * w as usize + rect.x0 as usize) * 3;
        let range = start..start + rw * 3;
        opencv::add_weighted_bright(&image.as_raw()[range.clone()], row, range, total);
    }
    let mut out = image.clone();
    paste_rect(&mut out, &bright, mask, rect, |m| m > 0);
    out
}

/// Segmented image: the object (mask > 0) on black.
pub(crate) fn segmented(image: &RgbImage, mask: &GrayImage) -> RgbImage {
    let mut out = image.clone();
    let raw: &mut [u8] = &mut out;
    for (p, &m) in raw.chunks_exact_mut(3).zip(mask.as_raw()) {
        if m == 0 {
            p.fill(0);
        }
    }
    out
}

/// Transparent image (`utils.convert_to_transparent_v2`, docs/ximagenet.md#transparent-image): the
/// reference keeps every pixel's colour and only sets alpha (0 where mask == 0, 255 elsewhere) in a
/// PNG. What a classifier sees of that RGBA image depends on the loader:
///
/// - `matte = None`: the reference's own loader, Keras `load_img` in colour mode `rgb`
///   (`train.py`), is Pillow `convert("RGB")`, which **drops** the alpha channel without
///   compositing: the classifier sees the original image, bit for bit. Returned as is (a control:
///   its accuracy must equal clean's).
/// - `matte = Some(rgb)`: a loader that composites the alpha onto a matte colour; the alpha is 0 or
///   255, so compositing is exact: the object (mask > 0) kept, the background replaced by `rgb`.
pub(crate) fn transparent(image: &RgbImage, mask: &GrayImage, matte: Option<[u8; 3]>) -> RgbImage {
    let mut out = image.clone();
    if let Some(rgb) = matte {
        let raw: &mut [u8] = &mut out;
        for (p, &m) in raw.chunks_exact_mut(3).zip(mask.as_raw()) {
            if m == 0 {
                p.copy_from_slice(&rgb);
            }
        }
    }
    out
}

/// The segmented image (object on black) at `bg`'s size: squashed with OpenCV's default bilinear
/// resize ([`opencv::resize_linear`]) when the sizes differ, as `generated_background.py` does.
fn segmented_at(image: &RgbImage, mask: &GrayImage, bg: &RgbImage) -> RgbImage {
    let fg = segmented(image, mask);
    if fg.dimensions() == bg.dimensions() {
        fg
    } else {
        opencv::resize_linear(&fg, bg.width(), bg.height())
    }
}

/// Random background as published (`generated_background.py`, docs/ximagenet.md#random-background):
/// the segmented image squashed to the background's size (OpenCV bilinear), then
/// `addWeighted(bg, 1, fg, 1, 0)`, the saturating u8 sum (exact for these weights: checked for all
/// 65 536 pairs against OpenCV 4.8.1). The object is *added onto* the background, not pasted. The
/// result has `bg`'s size.
pub(crate) fn random_background_add(image: &RgbImage, mask: &GrayImage, bg: &RgbImage) -> RgbImage {
    let fg = segmented_at(image, mask, bg);
    let mut out = bg.clone();
    let raw: &mut [u8] = &mut out;
    for (o, &f) in raw.iter_mut().zip(fg.as_raw()) {
        *o = o.saturating_add(f);
    }
    out
}

/// Random background, clean paste (not in the paper): where the mask, squashed to `bg`'s size with
/// the same bilinear resize as the object, is > 0, the squashed object replaces the background
/// (at equal sizes: the object pixels, mask > 0, over `bg`). The result has `bg`'s size.
pub(crate) fn random_background_paste(
    image: &RgbImage,
    mask: &GrayImage,
    bg: &RgbImage,
) -> RgbImage {
    let mut out = bg.clone();
    if image.dimensions() == bg.dimensions() {
        take_where(&mut out, image, mask, |m| m > 0);
        return out;
    }
    let fg = segmented_at(image, mask, bg);
    // The mask through the same resize, on one channel of a gray RGB image (every channel resamples
    // alike); 2 048-weighted blends of 0 and 255 are > 0 exactly where any weight reaches the
    // object.
    let m3 = RgbImage::from_fn(mask.width(), mask.height(), |x, y| {
        let v = mask.get_pixel(x, y).0[0];
        image::Rgb([v, v, v])
    });
    let m3 = opencv::resize_linear(&m3, bg.width(), bg.height());
    let raw: &mut [u8] = &mut out;
    for ((o, f), m) in raw
        .chunks_exact_mut(3)
        .zip(fg.as_raw().chunks_exact(3))
        .zip(m3.as_raw().chunks_exact(3))
    {
        if m[0] > 0 {
            o.copy_from_slice(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RngKey;

    fn scene() -> (RgbImage, GrayImage) {
        // 40×33: a diagonal gradient; the object is the disc of radius 9 around (20, 15).
        let img = RgbImage::from_fn(40, 33, |x, y| {
            image::Rgb([(x * 6) as u8, (y * 7) as u8, ((x + y) * 3) as u8])
        });
        let mask = GrayImage::from_fn(40, 33, |x, y| {
            let (dx, dy) = (x as i32 - 20, y as i32 - 15);
            image::Luma([if dx * dx + dy * dy <= 81 { 255 } else { 0 }])
        });
        (img, mask)
    }

    #[test]
    fn blur_and_bright_change_exactly_their_side() {
        let (img, mask) = scene();
        let full = opencv::gaussian_blur(&img, &BLUR_15, Rect::full(40, 33));
        let bb = blur_background(&img, &mask);
        let bo = blur_object(&img, &mask);
        for (x, y, m) in mask.enumerate_pixels() {
            let (i, f) = (img.get_pixel(x, y), full.get_pixel(x, y));
            if m.0[0] > 0 {
                assert_eq!((bb.get_pixel(x, y), bo.get_pixel(x, y)), (i, f));
            } else {
                assert_eq!((bb.get_pixel(x, y), bo.get_pixel(x, y)), (f, i));
            }
        }
        let b9 = opencv::gaussian_blur(&img, &BLUR_9, Rect::full(40, 33));
        let total = 40 * 33 * 3;
        let bg = bright(&img, &mask, true);
        let ob = bright(&img, &mask, false);
        for (x, y, m) in mask.enumerate_pixels() {
            let i = (y as usize * 40 + x as usize) * 3;
            let want: Vec<u8> = (0..3)
                .map(|c| {
                    let fused = i + c < total - total % 16;
                    opencv::bright_value(img.as_raw()[i + c], b9.as_raw()[i + c], fused)
                })
                .collect();
            let (changed, kept) = if m.0[0] > 0 { (&ob, &bg) } else { (&bg, &ob) };
            assert_eq!(&changed.get_pixel(x, y).0[..], &want[..], "{x} {y}");
            assert_eq!(kept.get_pixel(x, y), img.get_pixel(x, y));
        }
    }

    #[test]
    fn colours_draw_in_range_and_keep_the_object() {
        let (img, mask) = scene();
        let mut hues = std::collections::BTreeSet::new();
        for seed in 0..300 {
            let mut rng = RngKey(seed).rng();
            match Colour::Red.draw(&mut rng) {
                Some(HueEdit::Set(h)) => {
                    assert!(h <= 29 || (150..=180).contains(&h), "{h}");
                    hues.insert(h);
                }
                other => panic!("{other:?}"),
            }
            assert!(matches!(
                Colour::Green.draw(&mut rng),
                Some(HueEdit::Set(30..=89))
            ));
            assert!(matches!(
                Colour::Blue.draw(&mut rng),
                Some(HueEdit::Set(90..=149))
            ));
            assert!(matches!(
                Colour::Rainbow.draw(&mut rng),
                Some(HueEdit::Shift(0..=90))
            ));
        }
        assert!(hues.contains(&0) || hues.contains(&180) || hues.len() > 40);
        for c in [
            Colour::Red,
            Colour::Green,
            Colour::Blue,
            Colour::Grey,
            Colour::Rainbow,
        ] {
            let out = colour_background(&img, &mask, c, &mut RngKey(5).rng());
            for (x, y, m) in mask.enumerate_pixels() {
                if m.0[0] > 0 {
                    assert_eq!(out.get_pixel(x, y), img.get_pixel(x, y), "{c:?}");
                }
            }
            assert_ne!(out, img, "{c:?}");
        }
        // Grey: all three channels equal OpenCV's gray of the pixel.
        let out = colour_background(&img, &mask, Colour::Grey, &mut RngKey(0).rng());
        let p = img.get_pixel(0, 32).0;
        assert_eq!(out.get_pixel(0, 32).0, [opencv::gray(p[0], p[1], p[2]); 3]);
        // A set green hue: a saturated background pixel becomes a pure-ish green of the same value.
        let img = RgbImage::from_pixel(2, 1, image::Rgb([255, 0, 0]));
        let mask = GrayImage::from_raw(2, 1, vec![0, 255]).unwrap();
        let out = opencv::recolour(&img, mask.as_raw(), HueEdit::Set(60));
        assert_eq!(out.as_raw(), &vec![0, 255, 0, 255, 0, 0]);
    }

    #[test]
    fn segmented_and_random_backgrounds() {
        let img = RgbImage::from_raw(3, 1, vec![200, 100, 0, 50, 50, 50, 9, 9, 9]).unwrap();
        let mask = GrayImage::from_raw(3, 1, vec![255, 0, 1]).unwrap();
        let bg = RgbImage::from_pixel(3, 1, image::Rgb([100, 160, 7]));
        assert_eq!(
            segmented(&img, &mask).as_raw(),
            &vec![200, 100, 0, 0, 0, 0, 9, 9, 9]
        );
        assert_eq!(
            random_background_add(&img, &mask, &bg).as_raw(),
            &vec![255, 255, 7, 100, 160, 7, 109, 169, 16]
        );
        assert_eq!(
            random_background_paste(&img, &mask, &bg).as_raw(),
            &vec![200, 100, 0, 100, 160, 7, 9, 9, 9]
        );
    }

    #[test]
    fn transparent_drops_alpha_or_composites_on_the_matte() {
        let (img, mask) = scene();
        // Pillow's convert("RGB") of the reference's RGBA: the colours, alpha ignored.
        assert_eq!(transparent(&img, &mask, None), img);
        for matte in [[0, 0, 0], [255, 255, 255], [128, 128, 128], [12, 200, 99]] {
            let out = transparent(&img, &mask, Some(matte));
            for (x, y, m) in mask.enumerate_pixels() {
                let want = if m.0[0] > 0 {
                    img.get_pixel(x, y).0
                } else {
                    matte
                };
                assert_eq!(out.get_pixel(x, y).0, want, "{matte:?} at {x},{y}");
            }
        }
    }

    #[test]
    fn random_background_squashes_the_object_to_the_background() {
        let (img, mask) = scene();
        // A 23×17 background: the result has its size; the object is the segmented image through
        // OpenCV's bilinear resize, added (saturating) to every background pixel.
        let bg = RgbImage::from_fn(23, 17, |x, y| {
            image::Rgb([(x * 11) as u8, 90, (y * 15) as u8])
        });
        let fg = opencv::resize_linear(&segmented(&img, &mask), 23, 17);
        let out = random_background_add(&img, &mask, &bg);
        assert_eq!(out.dimensions(), (23, 17));
        for ((o, b), f) in out.as_raw().iter().zip(bg.as_raw()).zip(fg.as_raw()) {
            assert_eq!(u16::from(*o), (u16::from(*b) + u16::from(*f)).min(255));
        }
        // Far from the disc the foreground is black: the background shows unchanged.
        assert_eq!(out.get_pixel(0, 0), bg.get_pixel(0, 0));
        assert_ne!(out.get_pixel(11, 8), bg.get_pixel(11, 8));
        // Paste: the squashed object where the squashed mask is > 0, the background elsewhere.
        let pasted = random_background_paste(&img, &mask, &bg);
        let m = opencv::resize_linear(
            &RgbImage::from_fn(40, 33, |x, y| image::Rgb([mask.get_pixel(x, y).0[0]; 3])),
            23,
            17,
        );
        for (x, y, p) in pasted.enumerate_pixels() {
            let want = if m.get_pixel(x, y).0[0] > 0 {
                fg.get_pixel(x, y)
            } else {
                bg.get_pixel(x, y)
            };
            assert_eq!(p, want, "{x},{y}");
        }
        // Same size: no resampling, the published sum on the frame's own geometry.
        let same = RgbImage::from_pixel(40, 33, image::Rgb([100, 10, 250]));
        let out = random_background_add(&img, &mask, &same);
        for (x, y, m) in mask.enumerate_pixels() {
            let p = img.get_pixel(x, y).0;
            let want = if m.0[0] > 0 {
                [
                    100u8.saturating_add(p[0]),
                    10u8.saturating_add(p[1]),
                    250u8.saturating_add(p[2]),
                ]
            } else {
                [100, 10, 250]
            };
            assert_eq!(out.get_pixel(x, y).0, want);
        }
    }
}
