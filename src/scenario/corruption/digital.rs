//! Digital corruptions (docs/imagenet-c.md#the-19-corruptions): brightness, contrast, saturate,
//! jpeg_compression, pixelate.
//!
//! (imagecorruptions files `brightness` under "weather"; it shares the HSV kernel with `saturate`
//! (docs/imagenet-c.md#brightness), so it lives here with the digital ones.)

use image::RgbImage;

use rayon::prelude::*;

use crate::kernels::channels::{apply_channel_luts, channel_sums, halve_row_pair};
use crate::kernels::lanes::{self, floor8_unit};
use crate::kernels::resample::{Filter, Resampler};
use crate::kernels::{hsv, jpeg};

/// Value (brightness) offset ΔV added in HSV space per severity 1..5
/// (docs/imagenet-c.md#brightness).
pub(crate) const BRIGHTNESS_DELTA: [f64; 5] = [0.1, 0.2, 0.3, 0.4, 0.5];

/// Saturation `(scale, offset)` per severity 1..5: S becomes `clip(S·scale + offset, 0, 1)`
/// (docs/imagenet-c.md#saturate). Severities 1–2 desaturate, 3–5 over-saturate.
pub(crate) const SATURATE_SCALE_OFFSET: [SaturateParams; 5] = [
    saturation(0.3, 0.0),
    saturation(0.1, 0.0),
    saturation(2.0, 0.0),
    saturation(5.0, 0.1),
    saturation(20.0, 0.2),
];

/// One saturate severity (docs/imagenet-c.md#saturate): the reference's `c`, used as
/// `S·c[0] + c[1]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SaturateParams {
    /// The saturation's factor (`c[0]`).
    pub(crate) scale: f64,
    /// What is added after scaling (`c[1]`).
    pub(crate) offset: f64,
}

/// Table row constructor.
const fn saturation(scale: f64, offset: f64) -> SaturateParams {
    SaturateParams { scale, offset }
}

/// JPEG quality per severity 1..5 (docs/imagenet-c.md#jpeg_compression).
pub(crate) const JPEG_QUALITY: [u8; 5] = [25, 18, 15, 10, 7];

/// Pixelate size factor per severity 1..5: the frame is shrunk to `int(W·f) × int(H·f)` and enlarged back
/// (docs/imagenet-c.md#pixelate; at 224 the intermediate sizes are 134, 112, 89, 67, 56).
pub(crate) const PIXELATE_FACTOR: [f64; 5] = [0.6, 0.5, 0.4, 0.3, 0.25];

/// ImageNet-C `brightness`: in scikit-image HSV (docs/imagenet-c.md#h6-hsv-conversion),
/// `V = clip(V + ΔV, 0, 1)`, back to RGB, `floor8(clip(·, 0, 1)·255)`
/// (docs/imagenet-c.md#brightness; identical in imagecorruptions). Per pixel, so size-independent;
/// bit-identical to the f64 chain (exact shortcut, f64 lanes where the chain's rounding decides:
/// [`hsv::edit_hsv`]), parallel over rows.
pub(crate) fn brightness(image: &RgbImage, delta: f64) -> RgbImage {
    hsv::edit_hsv(image, hsv::Edit::Brightness { delta })
}

/// ImageNet-C `saturate`: in scikit-image HSV, `S = clip(S·scale + offset, 0, 1)`, back to RGB,
/// `floor8(clip(·, 0, 1)·255)` (docs/imagenet-c.md#saturate; identical in imagecorruptions). Per
/// pixel, so size-independent; bit-identical to the f64 chain ([`hsv::edit_hsv`]), parallel over
/// rows.
pub(crate) fn saturate(image: &RgbImage, scale: f64, offset: f64) -> RgbImage {
    hsv::edit_hsv(image, hsv::Edit::Saturate { scale, offset })
}

/// ImageNet-C `jpeg_compression`: the frame saved as a JPEG at `quality` and decoded back
/// (docs/imagenet-c.md#jpeg_compression; identical in imagecorruptions). The reference goes through
/// Pillow, i.e. libjpeg-turbo with its defaults (4:2:0 chroma subsampling, islow integer DCT, IJG
/// tables scaled to the quality, fancy upsampling); [`jpeg::roundtrip`] reproduces those lossy
/// stages in integer arithmetic without writing the bitstream (which is lossless and does not
/// change the pixels). Any size.
///
/// The `image` crate's `JpegEncoder` was not used: its quantisation tables at a given quality do follow
/// the IJG standard (Annex K tables, libjpeg's quality scaling, baseline clamp), but it always encodes
/// 4:4:4 and decodes with a different IDCT and upsampler, which at qualities 7–25 differs visibly from
/// Pillow's output (see [`jpeg`]).
pub(crate) fn jpeg_compression(image: &RgbImage, quality: u8) -> RgbImage {
    jpeg::roundtrip(image, quality)
}

/// ImageNet-C `pixelate` as hendrycks wrote it (docs/imagenet-c.md#pixelate): Pillow `resize` down
/// with `BOX` to `int(W·f) × int(H·f)`, then back up to `W × H` with `BOX` again. Pillow-exact
/// through [`crate::kernels::resample`].
///
/// Sizes: hendrycks hard-codes 224 (`int(224·f)` for both sides); like imagecorruptions this uses each
/// side's own length, which is the same at 224×224 and keeps the aspect ratio elsewhere. The intermediate
/// side is at least 1 pixel (Pillow refuses a 0-pixel resize; only frames under 4 px are affected).
///
/// Up-sampling: imagecorruptions uses `NEAREST` instead ([`pixelate_with`] with [`Filter::Nearest`]). When
/// enlarging, Pillow's `BOX` kernel is one source pixel wide, so each output pixel takes exactly one
/// source pixel, the same one `NEAREST` picks, *unless* its centre falls (up to rounding) exactly on the
/// boundary between two source pixels, where the two filters may resolve the tie to different
/// neighbours. At 224×224 no severity has such ties: both give identical bytes (checked against the
/// imagecorruptions fixtures). Other sizes can tie (e.g. 1280 → 512 → 1280 at factor 0.4: output columns
/// 2, 7, 12, … have centres on source boundaries). `BOX`, the filter of the released ImageNet-C, is kept.
pub(crate) fn pixelate(image: &RgbImage, factor: f64) -> RgbImage {
    pixelate_with(image, factor, Filter::Box)
}

/// [`pixelate`] with a chosen up-sampling filter (`Box`: hendrycks / ImageNet-C; `Nearest`:
/// imagecorruptions). The down-sampling is always `BOX`.
///
/// A fresh [`Resampler`] per call: its coefficient tables for a 224-pixel frame cost a few microseconds,
/// and a shared one would need locking across the pipeline's threads.
pub(crate) fn pixelate_with(image: &RgbImage, factor: f64, up: Filter) -> RgbImage {
    let (w, h) = image.dimensions();
    if w == 0 || h == 0 {
        return image.clone();
    }
    let (sw, sh) = pixelate_size(w, h, factor);
    if let Some(out) = pixelate_halving(image, (sw, sh), up) {
        return out;
    }
    let mut r = Resampler::new();
    let small = r.resize_rgb(image, sw, sh, Filter::Box);
    r.resize_rgb(&small, w, h, up)
}

/// [`pixelate_with`] when the intermediate size is exactly half of an even frame (severity 2,
/// `f = 0.5`, at 224² or 1280×720) in one pass, or `None` when that shortcut does not apply.
///
/// What Pillow computes there (see [`crate::kernels::resample`]): the horizontal pass goes first (Pillow 13
/// goes vertical first only when the height shrinks by more than twice as many pixels as the width,
/// i.e. for frames more than twice as tall as wide, which take the general path), and each `BOX`
/// window of a halving covers exactly two samples with weight ½ = 2²¹ in 22-bit fixed point, so a
/// pass gives `(2²¹ + a·2²¹ + b·2²¹) >> 22 = (a + b + 1) >> 1`, a rounding-up average. The small pixel
/// is therefore `avg(avg(a₀₀, a₀₁), avg(a₁₀, a₁₁))` of its 2×2 block (row averages first). Enlarging
/// by exactly 2, both `BOX` (one tap of weight 1 per output sample) and `NEAREST` (source `trunc(i/2)`)
/// copy each small pixel into its 2×2 block. The result is the same bytes as the two resizes
/// (`halving_equals_the_two_resizes`), without the intermediate image.
fn pixelate_halving(image: &RgbImage, (sw, sh): (u32, u32), up: Filter) -> Option<RgbImage> {
    let (w, h) = image.dimensions();
    let exact = 2 * u64::from(sw) == u64::from(w)
        && 2 * u64::from(sh) == u64::from(h)
        && u64::from(h) <= 2 * u64::from(w);
    if !exact || !matches!(up, Filter::Box | Filter::Nearest) {
        return None;
    }
    let row = w as usize * 3;
    let src = image.as_raw();
    let mut out = vec![0u8; src.len()];
    let pairs = |src: &[u8], out: &mut [u8]| {
        for (s, o) in src.chunks_exact(2 * row).zip(out.chunks_exact_mut(2 * row)) {
            let (a, b) = s.split_at(row);
            let (o0, o1) = o.split_at_mut(row);
            halve_row_pair(a, b, o0);
            o1.copy_from_slice(o0);
        }
    };
    if src.len() >= HALVING_PARALLEL_BYTES {
        let rows_per_task = (HALVING_PARALLEL_BYTES / 4 / (2 * row)).max(1) * 2 * row;
        lanes::in_pool(|| {
            src.par_chunks(rows_per_task)
                .zip(out.par_chunks_mut(rows_per_task))
                .for_each(|(s, o)| pairs(s, o));
        });
    } else {
        pairs(src, &mut out);
    }
    Some(RgbImage::from_raw(w, h, out).expect("same size as the input buffer"))
}

/// Frames of at least this many bytes (≈ 1.4 Mpx) halve their rows in parallel, in blocks of about a
/// quarter of this; below it one thread does the ~0.1 ms of work faster than handing it out.
const HALVING_PARALLEL_BYTES: usize = 1 << 22;

/// The intermediate size of [`pixelate`]: Python's `int(side · factor)` (truncation of the f64 product),
/// at least 1 and at most the side itself.
pub(crate) fn pixelate_size(w: u32, h: u32, factor: f64) -> (u32, u32) {
    let side = |n: u32| {
        let v = f64::from(n) * factor;
        if v.is_finite() {
            (v as u32).clamp(1, n.max(1))
        } else {
            n.max(1)
        }
    };
    (side(w), side(h))
}

/// Contrast factor c per severity 1..5 (docs/imagenet-c.md#contrast).
pub(crate) const CONTRAST_FACTOR: [f64; 5] = [0.4, 0.3, 0.2, 0.1, 0.05];

/// ImageNet-C `contrast`: with x on [0, 1] and μ the per-channel mean over the whole image,
/// `out = floor8(clip((x − μ)·c + μ, 0, 1)·255)` (docs/imagenet-c.md#contrast; identical in
/// imagecorruptions).
///
/// Size-independent. Because the map is per channel and x takes only 256 values, it is evaluated once per
/// value into a lookup table (same f64 arithmetic as the reference, so the result is exact). Two passes
/// over the bytes: exact integer channel sums ([`channel_sums`]) and the table lookups
/// ([`apply_channel_luts`], AVX-512 VBMI byte permutes where the CPU has them).
pub(crate) fn contrast(image: &RgbImage, c: f64) -> RgbImage {
    let raw = image.as_raw();
    let sums = channel_sums(raw);
    let n = (raw.len() / 3).max(1) as f64;
    let luts: [[u8; 256]; 3] = std::array::from_fn(|ch| {
        let mean = sums[ch] as f64 / n / 255.0;
        std::array::from_fn(|v| floor8_unit((v as f64 / 255.0 - mean) * c + mean))
    });
    let mut out = vec![0u8; raw.len()];
    apply_channel_luts(raw, &mut out, &luts);
    RgbImage::from_raw(image.width(), image.height(), out).expect("same size as the input buffer")
}

#[cfg(test)]
mod tests;
