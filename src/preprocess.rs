//! Preprocessing: bringing a frame to the model's view (shorter-side resize, centre crop or squash) and
//! normalising it into the input tensor. Resampling follows torchvision/PIL
//! (docs/imagenet-c.md#how-imagenet-c-was-made,
//! docs/preprocessing.md#preprocessing-in-the-references):
//! antialiased bilinear ("triangle" convolution with support scaled by the downscale factor), long side
//! truncated, crop offsets rounded half to even.

use image::{GrayImage, RgbImage};

use crate::engine::model::{Crop, Layout, ModelDesc};
use crate::frame::BBox;
use crate::resample::{Filter, Resampler, Window};

/// Size after torchvision `Resize(shorter)`: the shorter side becomes `shorter`, the longer side
/// `int(shorter · long / short)` (truncation). Returns (width, height).
///
/// ```
/// use robustream::preprocess::shorter_side_size;
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
/// use robustream::preprocess::center_offset;
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
/// convolution; what torchvision `Resize` does to PIL images), see [`crate::resample`].
pub fn resize_rgb(image: &RgbImage, width: u32, height: u32, resizer: &mut Resampler) -> RgbImage {
    resizer.resize_rgb(image, width, height, Filter::Bilinear)
}

/// Resizes a mask exactly as Pillow's `Image.resize(size, NEAREST)` (keeps it binary; the filter
/// torchvision/PIL use for masks and mode "1"/"P" images).
pub fn resize_mask(mask: &GrayImage, width: u32, height: u32) -> GrayImage {
    crate::resample::resize_gray_nearest(mask, width, height)
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

/// Brings a frame (and its mask) to the model's input view: optional shorter-side resize then centre
/// crop, or a squash resize, per the model description.
pub struct ModelView {
    width: u32,
    height: u32,
    resize_shorter: Option<u32>,
    crop: Crop,
    resizer: Resampler,
}

impl ModelView {
    /// For this model.
    pub fn new(model: &ModelDesc) -> Self {
        Self {
            width: model.input.width,
            height: model.input.height,
            resize_shorter: model.preprocess.resize_shorter,
            crop: model.preprocess.crop,
            resizer: Resampler::new(),
        }
    }

    /// The image at the model's input size.
    pub fn image(&mut self, image: &RgbImage) -> RgbImage {
        match self.crop {
            Crop::Squash => resize_rgb(image, self.width, self.height, &mut self.resizer),
            Crop::Center => {
                let Some(s) = self.resize_shorter else {
                    return center_crop(image, self.width, self.height);
                };
                let (w, h) = shorter_side_size(image.width(), image.height(), s);
                let (left, top) = (center_offset(w, self.width), center_offset(h, self.height));
                if left >= 0 && top >= 0 && w >= self.width && h >= self.height {
                    // Compute only the crop of the resized image: same bytes, less work.
                    let window = Window {
                        x: left as u32,
                        y: top as u32,
                        width: self.width,
                        height: self.height,
                    };
                    if image.width() == 0 || image.height() == 0 {
                        return RgbImage::new(self.width, self.height);
                    }
                    self.resizer
                        .resize_rgb_window(image, w, h, window, Filter::Bilinear)
                } else {
                    center_crop(
                        &resize_rgb(image, w, h, &mut self.resizer),
                        self.width,
                        self.height,
                    )
                }
            }
        }
    }

    /// The mask through the same geometry (nearest-neighbour).
    pub fn mask(&self, mask: &GrayImage) -> GrayImage {
        match self.crop {
            Crop::Squash => resize_mask(mask, self.width, self.height),
            Crop::Center => {
                let m = match self.resize_shorter {
                    Some(s) => {
                        let (w, h) = shorter_side_size(mask.width(), mask.height(), s);
                        resize_mask(mask, w, h)
                    }
                    None => mask.clone(),
                };
                center_crop(&m, self.width, self.height)
            }
        }
    }

    /// Boxes of a frame of `size` (width, height) through the same geometry: each box becomes the
    /// tight box of its filled rectangle taken through [`ModelView::mask`] (nearest-neighbour resize,
    /// then the crop), so boxes and masks stay pixel-consistent. Boxes are clipped to the view; a box
    /// left with no pixel (cropped away, or thinner than a pixel after downscaling) is dropped.
    pub fn boxes(&self, boxes: &[BBox], size: (u32, u32)) -> Vec<BBox> {
        let (iw, ih) = size;
        let (rw, rh) = match (self.crop, self.resize_shorter) {
            (Crop::Squash, _) => (self.width, self.height),
            (Crop::Center, Some(s)) => shorter_side_size(iw, ih, s),
            (Crop::Center, None) => (iw, ih),
        };
        let (left, top) = match self.crop {
            Crop::Squash => (0, 0),
            Crop::Center => (
                center_offset(rw, self.width),
                center_offset(rh, self.height),
            ),
        };
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

/// Per-channel affine normalisation into the input tensor: `(x − mean[c]) / std[c]` with x on the
/// 0..255 scale, written in the model's layout.
#[derive(Debug, Clone)]
pub struct Normalizer {
    layout: Layout,
    lut: [[f32; 256]; 3],
}

impl Normalizer {
    /// For this model.
    pub fn new(model: &ModelDesc) -> Self {
        let p = &model.preprocess;
        Self {
            layout: model.input.layout,
            lut: std::array::from_fn(|c| {
                std::array::from_fn(|v| (v as f32 - p.mean[c]) / p.std[c])
            }),
        }
    }

    /// A new tensor of `image` (3 × width × height values). Built by appending, so the buffer is never
    /// zero-filled first.
    pub fn tensor(&self, image: &RgbImage) -> Vec<f32> {
        let raw = image.as_raw();
        let mut out = Vec::with_capacity(raw.len());
        match self.layout {
            Layout::Nchw => {
                for (c, lut) in self.lut.iter().enumerate() {
                    out.extend(raw.chunks_exact(3).map(|px| lut[usize::from(px[c])]));
                }
            }
            Layout::Nhwc => out.extend(raw.chunks_exact(3).flat_map(|px| {
                std::array::from_fn::<f32, 3, _>(|c| self.lut[c][usize::from(px[c])])
            })),
        }
        out
    }

    /// Writes `image` into `out` (length 3 × width × height).
    pub fn write(&self, image: &RgbImage, out: &mut [f32]) {
        let plane = image.width() as usize * image.height() as usize;
        assert_eq!(
            out.len(),
            plane * 3,
            "tensor slot does not match the image size"
        );
        let raw = image.as_raw();
        match self.layout {
            Layout::Nchw => {
                for (c, (plane_out, lut)) in out.chunks_exact_mut(plane).zip(&self.lut).enumerate()
                {
                    for (o, px) in plane_out.iter_mut().zip(raw.chunks_exact(3)) {
                        *o = lut[usize::from(px[c])];
                    }
                }
            }
            Layout::Nhwc => {
                for (o, px) in out.chunks_exact_mut(3).zip(raw.chunks_exact(3)) {
                    o[0] = self.lut[0][usize::from(px[0])];
                    o[1] = self.lut[1][usize::from(px[1])];
                    o[2] = self.lut[2][usize::from(px[2])];
                }
            }
        }
    }
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
    fn normalizer_writes_planes() {
        let img = RgbImage::from_fn(2, 1, |x, _| image::Rgb([255 * x as u8, 127, 0]));
        let desc_lut = Normalizer {
            layout: Layout::Nchw,
            lut: std::array::from_fn(|_| std::array::from_fn(|v| (v as f32 - 127.0) / 128.0)),
        };
        let mut out = vec![0f32; 6];
        desc_lut.write(&img, &mut out);
        assert_eq!(desc_lut.tensor(&img), out);
        let nhwc = Normalizer {
            layout: Layout::Nhwc,
            ..desc_lut.clone()
        };
        let mut interleaved = vec![0f32; 6];
        nhwc.write(&img, &mut interleaved);
        assert_eq!(nhwc.tensor(&img), interleaved);
        assert_eq!(interleaved[..3], [out[0], out[2], out[4]]);
        assert_eq!(
            out,
            vec![
                -127.0 / 128.0,
                1.0,
                0.0,
                0.0,
                -127.0 / 128.0,
                -127.0 / 128.0
            ]
        );
    }

    #[test]
    fn boxes_map_like_their_rectangle_masks() {
        use crate::source::regions::{box_mask, tight_box};
        let views = [
            (Crop::Center, Some(256), 224, 224),
            (Crop::Center, Some(28), 24, 24),
            (Crop::Center, Some(60), 24, 20),
            (Crop::Center, None, 24, 24), // crop only (pads when the frame is smaller)
            (Crop::Squash, None, 32, 24),
        ];
        let mut checked = 0;
        for (crop, resize_shorter, width, height) in views {
            let view = ModelView {
                width,
                height,
                resize_shorter,
                crop,
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
                    let want = b
                        .clip(w, h)
                        .and_then(|c| tight_box(&view.mask(&box_mask(w, h, &[c]))));
                    let got = view.boxes(&[b], (w, h));
                    assert_eq!(
                        got,
                        want.into_iter().collect::<Vec<_>>(),
                        "{crop:?} {w}x{h} {b:?}"
                    );
                    checked += usize::from(!got.is_empty());
                }
            }
        }
        // Most boxes survive; the one-pixel ones vanish under downscaling or cropping.
        assert!(checked > 80, "{checked}");
        // A box fully outside the view's crop is dropped.
        let view = ModelView {
            width: 24,
            height: 24,
            resize_shorter: None,
            crop: Crop::Center,
            resizer: Resampler::new(),
        };
        assert_eq!(view.boxes(&[BBox::new(0, 0, 5, 5)], (100, 100)), vec![]);
        assert_eq!(
            view.boxes(&[BBox::new(40, 40, 60, 50)], (100, 100)),
            vec![BBox::new(2, 2, 22, 12)]
        );
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
        for (resize, shorter) in [
            ("resize_shorter = 28", 28u32),
            ("resize_shorter = 24", 24),
            ("resize_shorter = 60", 60),
        ] {
            let (m, _d) = desc(resize);
            let mut view = ModelView::new(&m);
            let (w, h) = shorter_side_size(71, 45, shorter);
            let mut r = Resampler::new();
            let want = center_crop(&resize_rgb(&img, w, h, &mut r), 24, 24);
            assert_eq!(view.image(&img), want, "{resize}");
        }
    }
}
