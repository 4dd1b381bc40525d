//! The model's view of a frame: the geometry that brings a frame to the model's input (shorter-side
//! resize or a fixed-size squash, then a centre crop; or a squash straight to the input size), and
//! the same geometry for masks and boxes. Resampling follows torchvision/PIL
//! (docs/imagenet-c.md#how-imagenet-c-was-made, docs/hard-imagenet.md#data-and-preprocessing,
//! docs/preprocessing.md#preprocessing-in-the-references): antialiased bilinear ("triangle"
//! convolution with support scaled by the downscale factor), long side truncated, crop offsets
//! rounded half to even. Masks go through the same geometry, sampled by the rule their benchmark's
//! reference uses ([`MaskResize`]). It sits below scenarios because the scenarios that work at the
//! model's view (Hard ImageNet's) need it as much as preprocessing does.

use image::{GrayImage, RgbImage};

use crate::frame::BBox;
use crate::kernels::resample::{Filter, Resampler, Window};
use crate::model::{Crop, ModelDesc};

/// Size after torchvision `Resize(shorter)`: the shorter side becomes `shorter`, the longer side
/// `int(shorter · long / short)` (truncation). Returns (width, height).
///
/// ```
/// use robustream::view::shorter_side_size;
/// assert_eq!(shorter_side_size(600, 400, 256), (384, 256)); // scikit-image's coffee.png
/// assert_eq!(shorter_side_size(375, 500, 256), (256, 341)); // 341.33 truncated
/// ```
pub fn shorter_side_size(width: u32, height: u32, shorter: u32) -> (u32, u32) {
    if width <= height {
        let h = (u64::from(shorter) * u64::from(height) / u64::from(width.max(1))) as u32;
        (shorter, h)
    } else {
        let w = (u64::from(shorter) * u64::from(width) / u64::from(height.max(1))) as u32;
        (w, shorter)
    }
}

/// Offset of a centred crop of `crop` pixels out of `size`: `int(round((size − crop) / 2))` with
/// Python's half-to-even rounding (torchvision `CenterCrop`). Negative when the crop is larger.
///
/// ```
/// use robustream::view::center_offset;
/// assert_eq!(center_offset(256, 224), 16);
/// assert_eq!(center_offset(341, 224), 58); // round(58.5) = 58
/// assert_eq!(center_offset(343, 224), 60); // round(59.5) = 60
/// ```
pub fn center_offset(size: u32, crop: u32) -> i64 {
    let diff = i64::from(size) - i64::from(crop);
    // (diff / 2) rounded half to even: diff odd → x.5 → the even neighbour.
    let half = diff.div_euclid(2);
    if diff.rem_euclid(2) == 1 && half % 2 != 0 {
        half + 1
    } else {
        half
    }
}

/// Resizes an RGB image exactly as Pillow's `Image.resize(size, BILINEAR)` (antialiased triangle
/// convolution; what torchvision `Resize` does to PIL images), see [`crate::kernels::resample`].
pub fn resize_rgb(image: &RgbImage, width: u32, height: u32, resizer: &mut Resampler) -> RgbImage {
    resizer.resize_rgb(image, width, height, Filter::Bilinear)
}

/// Resizes a mask exactly as Pillow's `Image.resize(size, NEAREST)` (keeps it binary; the filter
/// torchvision/PIL use for masks and mode "1"/"P" images).
pub fn resize_mask(mask: &GrayImage, width: u32, height: u32) -> GrayImage {
    crate::kernels::resample::resize_gray_nearest(mask, width, height)
}

/// Crops `(width, height)` at a centred offset (see [`center_offset`]), padding with zeros where the
/// crop leaves the image (torchvision pads too).
pub fn center_crop<P: image::Pixel<Subpixel = u8>>(
    image: &image::ImageBuffer<P, Vec<u8>>,
    width: u32,
    height: u32,
) -> image::ImageBuffer<P, Vec<u8>> {
    let (iw, ih) = image.dimensions();
    if (iw, ih) == (width, height) {
        return image.clone();
    }
    let left = center_offset(iw, width);
    let top = center_offset(ih, height);
    let mut out = image::ImageBuffer::<P, Vec<u8>>::new(width, height);
    let c = usize::from(P::CHANNEL_COUNT);
    let src = image.as_raw();
    let dst_row = width as usize * c;
    // Columns of the output that fall inside the source.
    let x0 = (-left).clamp(0, i64::from(width)) as usize;
    let x1 = (i64::from(iw) - left).clamp(0, i64::from(width)) as usize;
    if x0 >= x1 {
        return out;
    }
    let out_raw: &mut [u8] = &mut out;
    for y in 0..height as usize {
        let sy = y as i64 + top;
        if sy < 0 || sy >= i64::from(ih) {
            continue;
        }
        let s = (sy as usize * iw as usize + (x0 as i64 + left) as usize) * c;
        let len = (x1 - x0) * c;
        out_raw[y * dst_row + x0 * c..y * dst_row + x0 * c + len].copy_from_slice(&src[s..s + len]);
    }
    out
}

/// How a mask is brought to the model's view. The geometry is always the image's (same resize, same
/// crop); only the sampling differs, because each benchmark's reference resizes its masks its own
/// way. Whoever uses the mask at the view says which rule it needs
/// ([`crate::scenario::Scenario::mask_resize`], the saliency pass).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MaskResize {
    /// Pillow `NEAREST`, values kept (a binary mask stays binary, no edge grows or shrinks): what
    /// PIL does to label images (modes "1" and "P") and what IN-9's generation uses for its
    /// geometry (`Resize(256, NEAREST)`, docs/in9.md#how-the-variations-are-built). The default for
    /// every scenario whose reference does not resize masks bilinearly (IN-9, XIMAGENET-12 and
    /// Corner Cases work at the native size, so any resize is ours).
    #[default]
    Nearest,
    /// Pillow `BILINEAR` (antialiased, as torchvision `Resize` on an 8-bit "L" image) of the mask's
    /// 8-bit values (0/255 after [`crate::source::mask`]), rounded to u8 as Pillow does, then
    /// every non-zero sample → 255: Hard ImageNet's `Resize((256, 256))` → `CenterCrop(224)` →
    /// `mask[mask > 0] = 1` (docs/hard-imagenet.md#data-and-preprocessing). The object gains a thin
    /// ring at its edges (about one view pixel wide when down-scaling).
    BilinearNonZero,
}

/// The resize before the centre crop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resize {
    /// None: the crop alone.
    Keep,
    /// Shorter side to this many pixels, long side truncated (torchvision `Resize(n)`).
    Shorter(u32),
    /// Exactly this size, aspect ratio not kept (torchvision `Resize((h, w))`; `crop = "squash"` is
    /// this at the input size, whose crop is then the identity).
    To(u32, u32),
}

/// Brings a frame (and its mask) to the model's input view: the resize of the model description
/// (shorter side, a fixed size, or none) then the centre crop; `crop = "squash"` is a resize to the
/// input size.
pub struct ModelView {
    width: u32,
    height: u32,
    resize: Resize,
    resizer: Resampler,
}

impl ModelView {
    /// For this model.
    pub fn new(model: &ModelDesc) -> Self {
        let (width, height) = (model.input.width, model.input.height);
        let p = &model.preprocess;
        let resize = match (p.crop, p.resize_shorter, p.resize) {
            (Crop::Squash, _, _) => Resize::To(width, height),
            (Crop::Center, Some(s), _) => Resize::Shorter(s),
            (Crop::Center, None, Some(r)) => Resize::To(r.width, r.height),
            (Crop::Center, None, None) => Resize::Keep,
        };
        Self {
            width,
            height,
            resize,
            resizer: Resampler::new(),
        }
    }

    /// The size a frame of `(width, height)` is resized to before the centre crop.
    pub fn resized_size(&self, (width, height): (u32, u32)) -> (u32, u32) {
        match self.resize {
            Resize::Keep => (width, height),
            Resize::Shorter(s) => shorter_side_size(width, height, s),
            Resize::To(w, h) => (w, h),
        }
    }

    /// The crop of the resized `(width, height)` image as a window of it, when the crop lies inside
    /// (then only the window's samples need computing: same bytes, less work).
    fn inner_window(&self, (w, h): (u32, u32)) -> Option<Window> {
        let (left, top) = (center_offset(w, self.width), center_offset(h, self.height));
        (left >= 0 && top >= 0 && w >= self.width && h >= self.height).then_some(Window {
            x: left as u32,
            y: top as u32,
            width: self.width,
            height: self.height,
        })
    }

    /// The image at the model's input size.
    pub fn image(&mut self, image: &RgbImage) -> RgbImage {
        let (w, h) = self.resized_size(image.dimensions());
        if (w, h) == image.dimensions() {
            return center_crop(image, self.width, self.height);
        }
        match self.inner_window((w, h)) {
            Some(window) => self
                .resizer
                .resize_rgb_window(image, w, h, window, Filter::Bilinear),
            None => center_crop(
                &resize_rgb(image, w, h, &mut self.resizer),
                self.width,
                self.height,
            ),
        }
    }

    /// The mask through the image's geometry, sampled by `rule` (see [`MaskResize`]).
    pub fn mask(&mut self, mask: &GrayImage, rule: MaskResize) -> GrayImage {
        let (w, h) = self.resized_size(mask.dimensions());
        let (view_w, view_h) = (self.width, self.height);
        match rule {
            MaskResize::Nearest if (w, h) == mask.dimensions() => center_crop(mask, view_w, view_h),
            MaskResize::Nearest => center_crop(&resize_mask(mask, w, h), view_w, view_h),
            MaskResize::BilinearNonZero => {
                let mut out = match self.inner_window((w, h)) {
                    // An unchanged size is a plain crop here too (Pillow copies).
                    Some(window) => {
                        self.resizer
                            .resize_gray_window(mask, w, h, window, Filter::Bilinear)
                    }
                    None if (w, h) == mask.dimensions() => center_crop(mask, view_w, view_h),
                    None => center_crop(
                        &self.resizer.resize_gray(mask, w, h, Filter::Bilinear),
                        view_w,
                        view_h,
                    ),
                };
                for v in out.iter_mut() {
                    if *v != 0 {
                        *v = 255;
                    }
                }
                out
            }
        }
    }

    /// Boxes of a frame of `size` (width, height) through the same geometry: each box becomes the
    /// tight box of its filled rectangle taken through [`ModelView::mask`] with
    /// [`MaskResize::Nearest`] (then the crop), so boxes and nearest masks stay pixel-consistent.
    /// Boxes are clipped to the view; a box left with no pixel (cropped away, or thinner than a
    /// pixel after downscaling) is dropped.
    pub fn boxes(&self, boxes: &[BBox], size: (u32, u32)) -> Vec<BBox> {
        let (iw, ih) = size;
        let (rw, rh) = self.resized_size(size);
        let (left, top) = (
            center_offset(rw, self.width),
            center_offset(rh, self.height),
        );
        boxes
            .iter()
            .filter_map(|b| {
                let b = b.clip(iw, ih)?;
                let (x0, x1) = map_span(b.x0, b.x1, iw, rw, left, self.width)?;
                let (y0, y1) = map_span(b.y0, b.y1, ih, rh, top, self.height)?;
                Some(BBox::new(x0, y0, x1, y1))
            })
            .collect()
    }
}

/// One axis of [`ModelView::boxes`]: the samples `[lo, hi)` of an axis of `in_size` resized to
/// `out_size` with Pillow's NEAREST (the samples whose source index falls in the span), then shifted
/// by the crop `offset` and clipped to `[0, view)`. Runs the same resize as the masks on a one-row
/// indicator, so the two cannot disagree.
fn map_span(
    lo: u32,
    hi: u32,
    in_size: u32,
    out_size: u32,
    offset: i64,
    view: u32,
) -> Option<(u32, u32)> {
    let (lo, hi) = if in_size == out_size {
        (lo, hi)
    } else {
        let mut line = GrayImage::new(in_size, 1);
        line.as_mut()[lo as usize..hi as usize].fill(255);
        let resized = resize_mask(&line, out_size, 1);
        let first = resized.as_raw().iter().position(|&v| v != 0)?;
        let last = resized.as_raw().iter().rposition(|&v| v != 0)?;
        (first as u32, last as u32 + 1)
    };
    let shift = |v: u32| (i64::from(v) - offset).clamp(0, i64::from(view)) as u32;
    let (a, b) = (shift(lo), shift(hi));
    (a < b).then_some((a, b))
}

#[cfg(test)]
mod tests {
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
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hard_imagenet");
        let cases: Vec<Case> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap())
                .unwrap();
        let mut masks = 0;
        for c in &cases {
            let mut view = ModelView {
                width: c.crop[0],
                height: c.crop[1],
                resize: Resize::To(c.resize[0], c.resize[1]),
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
}
