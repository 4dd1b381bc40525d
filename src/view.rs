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
use crate::model::{Crop, Interpolation, ModelDesc};

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
#[cfg(test)]
fn resize_rgb(image: &RgbImage, width: u32, height: u32, resizer: &mut Resampler) -> RgbImage {
    resizer.resize_rgb(image, width, height, Filter::Bilinear)
}

/// Resizes a mask exactly as Pillow's `Image.resize(size, NEAREST)` (keeps it binary; the filter
/// torchvision/PIL use for masks and mode "1"/"P" images).
fn resize_mask(mask: &GrayImage, width: u32, height: u32) -> GrayImage {
    crate::kernels::resample::resize_gray_nearest(mask, width, height)
}

/// Crops `(width, height)` at a centred offset (see [`center_offset`]), padding with zeros where the
/// crop leaves the image (torchvision pads too).
fn center_crop<P: image::Pixel<Subpixel = u8>>(
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
/// (each scenario, the saliency pass).
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
    /// 8-bit values (0/255 as sources read them), rounded to u8 as Pillow does, then
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
    /// The image's resize filter (`[preprocess] interpolation`; masks keep their own rule).
    filter: Filter,
    resizer: Resampler,
}

/// The Pillow filter of an `[preprocess] interpolation` (docs/preprocessing.md#presets).
pub(crate) fn filter_of(interpolation: Interpolation) -> Filter {
    match interpolation {
        Interpolation::Nearest => Filter::Nearest,
        Interpolation::Box => Filter::Box,
        Interpolation::Bilinear => Filter::Bilinear,
        Interpolation::Bicubic => Filter::Bicubic,
        Interpolation::Lanczos => Filter::Lanczos,
    }
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
            filter: filter_of(p.interpolation),
            resizer: Resampler::new(),
        }
    }

    /// The size a frame of `(width, height)` is resized to before the centre crop.
    pub(crate) fn resized_size(&self, (width, height): (u32, u32)) -> (u32, u32) {
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

    /// The image at the model's input size, resized with the description's `interpolation`.
    pub fn image(&mut self, image: &RgbImage) -> RgbImage {
        let (w, h) = self.resized_size(image.dimensions());
        if (w, h) == image.dimensions() {
            return center_crop(image, self.width, self.height);
        }
        let filter = self.filter;
        match self.inner_window((w, h)) {
            Some(window) => self.resizer.resize_rgb_window(image, w, h, window, filter),
            None => center_crop(
                &self.resizer.resize_rgb(image, w, h, filter),
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
mod tests;
