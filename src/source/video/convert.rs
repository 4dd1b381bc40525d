//! Decoded frames to RGB24 with libswscale, straight into the frame's pixel buffer.

use ffmpeg::format::Pixel;
use ffmpeg::software::scaling;
use ffmpeg_next as ffmpeg;
use image::RgbImage;

use super::input::StreamError;

/// Bytes of slack after the last row of a conversion buffer (SIMD converters may store a
/// whole vector past a row's last pixel).
const SLACK: usize = 64;

/// A libswscale context converting one input format and size to RGB24 of the same size.
pub(super) struct Converter {
    key: (Pixel, u32, u32),
    ctx: scaling::Context,
}

// SAFETY: a `Converter` owns its SwsContext alone (never shared or cloned) and the source that
// holds it is used by one thread at a time (`Source: Send`, not `Sync`). libswscale contexts
// keep no thread-local state or thread affinity; they only must not be used concurrently,
// which exclusive ownership rules out. (ffmpeg-next leaves `scaling::Context` !Send only
// because it wraps a raw pointer.)
unsafe impl Send for Converter {}

/// Converts `decoded` to RGB24 straight into a new image buffer, with the converter in
/// `converter` (made anew when the frame's format or size differs from the one it was made for).
pub(super) fn convert(
    decoded: &ffmpeg::frame::Video,
    converter: &mut Option<Converter>,
) -> Result<RgbImage, StreamError> {
    let failed = |message: String, source| StreamError::Convert { message, source };
    let (fmt, w, h) = (decoded.format(), decoded.width(), decoded.height());
    if w == 0 || h == 0 {
        return Err(failed("decoded an empty frame".into(), None));
    }
    let key = (fmt, w, h);
    if converter.as_ref().is_none_or(|c| c.key != key) {
        let ctx = scaling::Context::get(fmt, w, h, Pixel::RGB24, w, h, scaling::Flags::BILINEAR)
            .map_err(|e| {
                failed(
                    format!("cannot convert {fmt:?} {w}x{h} to RGB ({e})"),
                    Some(e),
                )
            })?;
        *converter = Some(Converter { key, ctx });
    }
    let Some(conv) = converter.as_mut() else {
        return Err(failed("no converter".into(), None));
    };
    let (wu, hu) = (w as usize, h as usize);
    // Rows padded to 16 pixels (48 bytes): the SIMD YUV → RGB converters store 8 pixels at
    // a time and skip a row's tail when the stride has no room for it. Sizes that are a
    // multiple of 16 (320, 640, 1280, 1920…) are written in place with no padding.
    let stride = 3 * wu.div_ceil(16) * 16;
    let mut buf = vec![0u8; stride * hu + SLACK];
    let dst = [
        buf.as_mut_ptr(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    ];
    let dst_stride = [stride as i32, 0, 0, 0];
    // SAFETY: `conv.ctx` was made for exactly this input format and size (checked by `key`)
    // and RGB24 output of the same size. The source pointers and line sizes are those of
    // the decoder's valid, referenced frame `decoded`, which outlives the call. The
    // destination is one packed plane of `stride * h + SLACK` bytes with `stride ≥ 3w`,
    // so every row libswscale writes (≤ `stride` bytes, plus at most one vector past the
    // last row, within SLACK) lies inside `buf`; the other destination planes are unused
    // for a packed format. Nothing else aliases `buf` during the call.
    let lines = unsafe {
        let src = &*decoded.as_ptr();
        ffmpeg::ffi::sws_scale(
            conv.ctx.as_mut_ptr(),
            src.data.as_ptr() as *const *const u8,
            src.linesize.as_ptr(),
            0,
            h as i32,
            dst.as_ptr(),
            dst_stride.as_ptr(),
        )
    };
    if lines != h as i32 {
        return Err(failed(
            format!("RGB conversion wrote {lines} of {h} rows"),
            None,
        ));
    }
    let row = 3 * wu;
    if stride != row {
        for y in 1..hu {
            buf.copy_within(y * stride..y * stride + row, y * row);
        }
    }
    buf.truncate(row * hu);
    RgbImage::from_raw(w, h, buf).ok_or_else(|| failed("RGB buffer size".into(), None))
}
