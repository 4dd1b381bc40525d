//! Foreground masks: an image file read as 8-bit gray (values kept: 0 = background, 255 =
//! foreground), or a NumPy `.npy` array. The kind is told from the content (the `.npy` magic bytes),
//! not the extension.
//!
//! Two kinds of label images are made binary rather than read as soft masks: a gray mask whose
//! largest value is 1 (a 0/1 label image, as `.npy` masks are) becomes 0/255, and a colour mask
//! (e.g. XIMAGENET-12's red object on black, docs/ximagenet.md#masks) becomes 255 wherever any
//! channel is non-zero. A mask with no foreground pixel at all is an error for its frame:
//! background and ablation scenarios would silently return the clean frame.

use std::io::Cursor;
use std::path::Path;

use image::GrayImage;
use npyz::{DType, NpyHeader, Order, TypeChar};

use super::decode::{DecodeError, decode_bytes};
use super::{SourceError, SourceErrorKind};

/// Why mask bytes made no mask. Display = the message: what is wrong and what to do (the caller's
/// message names the file).
#[derive(Debug, thiserror::Error)]
pub enum MaskError {
    /// An image mask that does not decode.
    #[error(transparent)]
    Image(#[from] DecodeError),
    /// A `.npy` header that cannot be read.
    #[error("not a readable .npy file ({0}); save it with numpy.save")]
    NpyHeader(#[source] std::io::Error),
    /// A `.npy` file whose header and data disagree, or whose data cannot be read.
    #[error("{reason}; {fix}")]
    Corrupt {
        /// What is wrong with the file.
        reason: String,
        /// What to do ("save it again", …).
        fix: &'static str,
        /// The failed read, where one failed.
        #[source]
        source: Option<std::io::Error>,
    },
    /// An array that is not 2-D, or empty, or too large a side.
    #[error("mask array has shape {shape:?}; masks must be {must}")]
    Shape {
        /// The array's shape.
        shape: Vec<u64>,
        /// What the shape must be.
        must: &'static str,
    },
    /// An element type masks are not read from.
    #[error(
        "mask array dtype `{dtype}` is not supported; use bool, uint8, int32, int64, float32 or \
         float64"
    )]
    Dtype {
        /// The dtype as numpy writes it (`<u2`).
        dtype: String,
    },
    /// The pixels do not fill the mask's size (`what`: "image" or "array").
    #[error("mask {what} has an inconsistent size; save it again")]
    Inconsistent {
        /// "image" or "array".
        what: &'static str,
    },
}

/// The first bytes of every `.npy` file.
const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// Loads the mask at `mask_path` for the image at `image_path`, whose size is `size` (width, height)
/// in pixels. Errors are per-item: the item is the image, the message names the mask.
pub(crate) fn load(
    mask_path: &Path,
    image_path: &Path,
    size: (u32, u32),
) -> Result<GrayImage, SourceError> {
    let m = mask_path.display();
    let bytes = super::decode::read_file(mask_path, "mask").map_err(|why| {
        SourceError::at(
            SourceErrorKind::Annotation,
            image_path,
            format!("mask {m}: {why}"),
        )
        .caused_by(why)
    })?;
    let mask = decode_mask(&bytes).map_err(|why| {
        SourceError::at(
            SourceErrorKind::Annotation,
            image_path,
            format!("mask {m}: {why}"),
        )
        .caused_by(why)
    })?;
    if mask.dimensions() != size {
        return Err(SourceError::at(
            SourceErrorKind::Annotation,
            image_path,
            format!(
                "mask {m} is {}x{} but image {} is {}x{}; masks must have the image's size",
                mask.width(),
                mask.height(),
                image_path.display(),
                size.0,
                size.1
            ),
        ));
    }
    if !crate::geometry::has_foreground(&mask) {
        return Err(SourceError::at(
            SourceErrorKind::Annotation,
            image_path,
            format!(
                "mask {m} has no foreground pixel (all 0); mark the object with non-zero values \
                 (255 in an image, 1 in a .npy) or drop the mask"
            ),
        ));
    }
    Ok(mask)
}

/// Decodes mask bytes: `.npy` content via [`npy_to_mask`], anything else as an image converted to
/// 8-bit gray (colour masks and 0/1 gray masks made 0/255, see the module docs). The error is a
/// message saying what is wrong and what to do.
pub fn decode_mask(bytes: &[u8]) -> Result<GrayImage, MaskError> {
    if bytes.starts_with(NPY_MAGIC) {
        return npy_to_mask(bytes);
    }
    let img = decode_bytes(bytes)?;
    if img.color().has_color() {
        let rgb = img.into_rgb8();
        let data = rgb
            .as_raw()
            .chunks_exact(3)
            .map(|px| if px == [0, 0, 0] { 0 } else { 255 })
            .collect();
        return GrayImage::from_raw(rgb.width(), rgb.height(), data)
            .ok_or(MaskError::Inconsistent { what: "image" });
    }
    let mut gray = img.into_luma8();
    if gray.as_raw().iter().max() == Some(&1) {
        gray.iter_mut().for_each(|v| *v *= 255);
    }
    Ok(gray)
}

/// Converts an in-memory `.npy` file to a mask. Accepted: shape `(H, W)` or `(H, W, 1)`, C or
/// Fortran order, dtype bool, uint8, int32, int64, float32 or float64 (either byte order). Values
/// are 0/1 (mapped to 0/255, fractions to soft edges) when the array's maximum is at most 1, and
/// 0..255 (clipped, rounded) otherwise; NaN counts as 0.
fn npy_to_mask(bytes: &[u8]) -> Result<GrayImage, MaskError> {
    if header_shape_overflows(bytes) {
        return Err(MaskError::Corrupt {
            reason: "the .npy shape has more elements than can be counted".into(),
            fix: "the file is corrupt, save it again",
            source: None,
        });
    }
    let mut cursor = Cursor::new(bytes);
    let header = NpyHeader::from_reader(&mut cursor).map_err(MaskError::NpyHeader)?;
    let (h, w) = mask_shape(header.shape())?;
    let dtype = header.dtype();
    let DType::Plain(ts) = &dtype else {
        return Err(unsupported_dtype(&dtype));
    };
    let item_size = ts.num_bytes().ok_or_else(|| unsupported_dtype(&dtype))?;
    let n = u64::from(w) * u64::from(h);
    // Check the data length first so a lying header cannot make us allocate or read past the end.
    let data_len = (bytes.len() as u64).saturating_sub(cursor.position());
    if Some(data_len) != n.checked_mul(item_size as u64) {
        return Err(MaskError::Corrupt {
            reason: format!(
                "the .npy data is {data_len} bytes but shape {:?} of {} needs {}",
                header.shape(),
                dtype_name(&dtype),
                n.saturating_mul(item_size as u64)
            ),
            fix: "the file is truncated or corrupt, save it again",
            source: None,
        });
    }
    let order = header.order();
    let file = npyz::NpyFile::with_header(header, cursor);
    let read_err = |e: std::io::Error| MaskError::Corrupt {
        reason: format!("cannot read .npy data ({e})"),
        fix: "save it again",
        source: Some(e),
    };
    let values: Vec<f64> = match (ts.type_char(), item_size) {
        (TypeChar::Bool, 1) => file
            .into_vec::<bool>()
            .map_err(read_err)?
            .into_iter()
            .map(|b| f64::from(u8::from(b)))
            .collect(),
        (TypeChar::Uint, 1) => to_f64(file.into_vec::<u8>().map_err(read_err)?),
        (TypeChar::Int, 4) => to_f64(file.into_vec::<i32>().map_err(read_err)?),
        (TypeChar::Int, 8) => file
            .into_vec::<i64>()
            .map_err(read_err)?
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        (TypeChar::Float, 4) => to_f64(file.into_vec::<f32>().map_err(read_err)?),
        (TypeChar::Float, 8) => file.into_vec::<f64>().map_err(read_err)?,
        _ => return Err(unsupported_dtype(&dtype)),
    };
    let pixels = to_mask_values(&values);
    let (w_us, h_us) = (w as usize, h as usize);
    let data: Vec<u8> = match order {
        Order::C => pixels,
        // Fortran order: element (row r, column c) is stored at c * H + r.
        Order::Fortran => (0..h_us)
            .flat_map(|r| (0..w_us).map(move |c| (r, c)))
            .map(|(r, c)| pixels[c * h_us + r])
            .collect(),
    };
    GrayImage::from_raw(w, h, data).ok_or(MaskError::Inconsistent { what: "array" })
}

/// A mask as the bytes of a `.npy` file the way IN-9's `fg_mask` stores masks
/// (docs/in9.md#variations-and-release-layout): a 2-D `uint8` array of shape (H, W), C order, 1 on
/// the foreground (non-zero pixels) and 0 elsewhere. [`npy_to_mask`] reads it back as 0/255.
pub fn mask_to_npy(mask: &GrayImage) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '|u1', 'fortran_order': False, 'shape': ({}, {}), }}",
        mask.height(),
        mask.width()
    );
    // Magic (6) + version (2) + length (2) + header + newline: a multiple of 64, as numpy writes.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + mask.as_raw().len());
    out.extend_from_slice(NPY_MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend(mask.as_raw().iter().map(|&v| u8::from(v != 0)));
    out
}

/// Height and width from a `.npy` shape `(H, W)` or `(H, W, 1)`; both must be at least 1 and fit
/// in `u32`.
fn mask_shape(shape: &[u64]) -> Result<(u32, u32), MaskError> {
    let refuse = |must| MaskError::Shape {
        shape: shape.to_vec(),
        must,
    };
    let (h, w) = match shape {
        [h, w] | [h, w, 1] => (*h, *w),
        _ => return Err(refuse("2-D (H, W) or (H, W, 1)")),
    };
    match (u32::try_from(h), u32::try_from(w)) {
        (Ok(h), Ok(w)) if h > 0 && w > 0 => Ok((h, w)),
        _ => Err(refuse("non-empty and at most 4294967295 pixels a side")),
    }
}

/// True when the `shape` tuple written in a `.npy` header has an element count that overflows
/// `u64` (npyz multiplies the dimensions without checking, which panics in debug builds). Headers this
/// cannot make sense of are left to npyz to reject.
fn header_shape_overflows(bytes: &[u8]) -> bool {
    let (len_at, text_at, len_bytes): (usize, usize, usize) = match bytes.get(6) {
        Some(1) => (8, 10, 2),
        Some(2 | 3) => (8, 12, 4),
        _ => return false,
    };
    let Some(len_field) = bytes.get(len_at..len_at + len_bytes) else {
        return false;
    };
    let len = len_field
        .iter()
        .rev()
        .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
    let Some(text) = bytes.get(text_at..text_at.saturating_add(len)) else {
        return false;
    };
    let text = String::from_utf8_lossy(text);
    let Some(after_key) = text.find("shape").map(|i| &text[i..]) else {
        return false;
    };
    let (Some(open), Some(close)) = (after_key.find('('), after_key.find(')')) else {
        return false;
    };
    if close < open {
        return false;
    }
    let mut count: u64 = 1;
    for dim in after_key[open + 1..close].split(',').map(str::trim) {
        if dim.is_empty() {
            continue;
        }
        let Ok(dim) = dim.parse::<u64>() else {
            return false;
        };
        match count.checked_mul(dim) {
            Some(c) => count = c,
            None => return true,
        }
    }
    false
}

/// A dtype as numpy writes it, e.g. `<f4`.
fn dtype_name(dtype: &DType) -> String {
    match dtype {
        DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    }
}

fn unsupported_dtype(dtype: &DType) -> MaskError {
    MaskError::Dtype {
        dtype: dtype_name(dtype),
    }
}

fn to_f64<T: Into<f64>>(v: Vec<T>) -> Vec<f64> {
    v.into_iter().map(Into::into).collect()
}

/// Maps raw mask values to 0..=255: when the maximum is at most 1 the values are fractions
/// (×255), otherwise they are already 0..255. Rounded and clipped; NaN → 0.
fn to_mask_values(values: &[f64]) -> Vec<u8> {
    let max = values
        .iter()
        .copied()
        .filter(|v| !v.is_nan())
        .fold(f64::NEG_INFINITY, f64::max);
    let scale = if max <= 1.0 { 255.0 } else { 1.0 };
    values
        .iter()
        .map(|&v| {
            if v.is_nan() {
                0
            } else {
                (v * scale).round().clamp(0.0, 255.0) as u8
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
