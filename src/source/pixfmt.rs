//! Camera pixel formats → RGB: the conversions a V4L2 capture needs, as pure functions on
//! the raw buffers a driver hands over, so they are tested on recorded buffers on machines without a
//! camera.
//!
//! - `YUYV` / `UYVY` (4:2:2, two pixels per four bytes): ITU-R BT.601 limited range ("studio
//!   swing", Y 16..235, Cb/Cr 16..240), the V4L2 default colourspace of SD/webcam YUV, in the classic
//!   8-bit fixed-point form (coefficients × 256, rounded) — integer-only and within ±1 of the float
//!   formula.
//! - `RGB3` / `BGR3` (packed 24-bit) and `GREY` (8-bit luma, replicated to three channels).
//! - `Y10 ` / `Y12 ` / `Y16 ` (GenICam `Mono10` / `Mono12` / `Mono16`): luma in 16-bit
//!   little-endian containers, scaled to 8 bits by dropping the low bits (v >> 2, >> 4, >> 8),
//!   replicated to three channels.
//! - The packed GenICam monochrome formats, scaled to 8 bits the same way (the low bits dropped):
//!   GigE Vision's `Mono10Packed` / `Mono12Packed` (two pixels in three bytes, each pixel's 8 high
//!   bits in a byte of its own, the low bits of both in the middle byte: the 8-bit picture is bytes
//!   0 and 2 of each triple) and PFNC's `Mono12p` (two pixels in three bytes, least significant bit
//!   first) and `Mono10p` (four pixels in five bytes, least significant bit first). The `p` formats
//!   pack across rows without padding, so they are converted for widths whose rows end on a byte:
//!   even for `Mono12p`, a multiple of 4 for `Mono10p` (GenICam Pixel Format Naming Convention 2.x,
//!   `p` formats, and GigE Vision's older `Packed` ones; docs/sources.md#genicam-cameras).
//! - Bayer 8-bit mosaics `RGGB` / `GRBG` / `GBRG` / `BA81` (GenICam `BayerRG8` / `BayerGR8` /
//!   `BayerGB8` / `BayerBG8`, named by their top-left 2×2 tile): demosaiced by bilinear
//!   interpolation (each missing colour the rounded mean of its nearest 2 or 4 samples of that
//!   colour, OpenCV's default `COLOR_Bayer*2RGB`; docs/sources.md#genicam-cameras), borders
//!   mirrored (index −1 reads 1, so the colour pattern continues). One pass over the output rows,
//!   split by rows with rayon, three source rows read per output row, no scratch buffer.
//! - Bayer mosaics deeper than 8 bits (GenICam `BayerRG10` / `BayerRG12` / `BayerRG16` in 16-bit
//!   little-endian containers, `BayerRG10Packed` / `BayerRG12Packed` and `BayerRG10p` /
//!   `BayerRG12p` packed as the monochrome formats of the same name, and the same for the other
//!   three tiles): each sample scaled to 8 bits as the monochrome formats are (the low bits
//!   dropped), into one 8-bit mosaic per frame, then demosaiced as above. Demosaicing at full
//!   depth and rounding after would differ by at most 1: each scaled sample is below its exact
//!   value (in 8-bit units) by less than 1, so the mean of the scaled samples is below the exact
//!   mean by less than 1, and the two means, rounded, differ by at most 1.
//! - `MJPG`: each buffer is a JPEG image; many UVC cameras leave out the Huffman tables (DHT) and rely
//!   on the standard ones of JPEG Annex K.3 (the AVI1 / Motion-JPEG convention), which
//!   [`ensure_huffman_tables`] inserts before decoding.
//!
//! Row strides (`bytesperline`) larger than the packed width are honoured. A buffer shorter than the
//! format needs (a truncated frame from a failing device) is a [`ConvertError`], never a panic.

// Dead code is allowed only in builds where `not(feature = "camera")`: the pixel formats are the
// V4L2 camera's: a build without the `camera` feature converts only in the unit tests.
#![cfg_attr(not(feature = "camera"), allow(dead_code))]

use std::borrow::Cow;

use image::RgbImage;
use rayon::prelude::*;

/// A camera pixel format robustream converts (V4L2 fourcc in the doc of each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PixelFormat {
    /// `YUYV`: Y0 U Y1 V, 4:2:2, BT.601 limited range.
    Yuyv,
    /// `UYVY`: U Y0 V Y1, 4:2:2, BT.601 limited range.
    Uyvy,
    /// `RGB3`: R G B.
    Rgb24,
    /// `BGR3`: B G R.
    Bgr24,
    /// `GREY`: 8-bit luma.
    Grey,
    /// `MJPG`: one JPEG per buffer.
    Mjpeg,
    /// `Y10 `: 10-bit luma in 16-bit little-endian containers (GenICam `Mono10`).
    Mono10,
    /// `Y12 `: 12-bit luma in 16-bit little-endian containers (GenICam `Mono12`).
    Mono12,
    /// `Y16 `: 16-bit little-endian luma (GenICam `Mono16`).
    Mono16,
    /// An 8-bit Bayer mosaic, by its top-left 2×2 tile.
    Bayer8(Cfa),
    /// GenICam packed monochrome (no V4L2 fourcc; see [`MonoPacking`]).
    MonoPacked(MonoPacking),
    /// A Bayer mosaic deeper than 8 bits (GenICam `BayerRG10`, `BayerRG12p`, ...), by its top-left
    /// 2×2 tile and how its samples are stored (see [`Deep`]).
    BayerDeep(Cfa, Deep),
}

/// How the samples of a Bayer mosaic deeper than 8 bits are stored: in 16-bit little-endian
/// containers, or packed as the monochrome formats of the same depth are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deep {
    /// 10 bits in 16 (`BayerRG10`).
    Le10,
    /// 12 bits in 16 (`BayerRG12`).
    Le12,
    /// 16 bits (`BayerRG16`).
    Le16,
    /// Packed like the monochrome format ([`MonoPacking`]: `BayerRG10Packed`, `BayerRG12p`, ...).
    Packed(MonoPacking),
}

impl Deep {
    /// The low bits dropped from a 16-bit container. The packed layouts' groups give each pixel's
    /// 8 high bits directly ([`packed_group`]); for them this is the 8 of the widest container and
    /// is not used.
    fn shift(self) -> u32 {
        match self {
            Self::Le10 => 2,
            Self::Le12 => 4,
            Self::Le16 | Self::Packed(_) => 8,
        }
    }
}

/// How a packed GenICam monochrome format lays its pixels out (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MonoPacking {
    /// GigE Vision `Mono10Packed`: 2 pixels in 3 bytes, high bits in bytes 0 and 2.
    Gvsp10,
    /// GigE Vision `Mono12Packed`: 2 pixels in 3 bytes, high bits in bytes 0 and 2.
    Gvsp12,
    /// PFNC `Mono10p`: 4 pixels in 5 bytes, least significant bit first.
    Lsb10,
    /// PFNC `Mono12p`: 2 pixels in 3 bytes, least significant bit first.
    Lsb12,
}

impl MonoPacking {
    /// Pixels per group and bytes per group.
    fn group(self) -> (usize, usize) {
        match self {
            Self::Gvsp10 | Self::Gvsp12 | Self::Lsb12 => (2, 3),
            Self::Lsb10 => (4, 5),
        }
    }
}

/// The colour of the top-left 2×2 tile of a Bayer mosaic, row by row (`Rggb` = R G / G B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cfa {
    /// R G / G B (`RGGB`, GenICam `BayerRG8`).
    Rggb,
    /// G R / B G (`GRBG`, `BayerGR8`).
    Grbg,
    /// G B / R G (`GBRG`, `BayerGB8`).
    Gbrg,
    /// B G / G R (`BA81`, `BayerBG8`).
    Bggr,
}

impl Cfa {
    /// The channel (0 = R, 1 = G, 2 = B) sampled at `(x, y)`.
    #[inline]
    fn channel(self, x: usize, y: usize) -> usize {
        // Where red sits in the 2×2 tile, as (x parity, y parity).
        let (rx, ry) = match self {
            Self::Rggb => (0, 0),
            Self::Grbg => (1, 0),
            Self::Gbrg => (0, 1),
            Self::Bggr => (1, 1),
        };
        match ((x & 1) == rx, (y & 1) == ry) {
            (true, true) => 0,
            (false, false) => 2,
            _ => 1,
        }
    }
}

impl PixelFormat {
    /// The format of a V4L2 fourcc (`b"YUYV"`, ...), if robustream converts it.
    pub(crate) fn from_fourcc(fourcc: [u8; 4]) -> Option<Self> {
        Some(match &fourcc {
            b"YUYV" => Self::Yuyv,
            b"UYVY" => Self::Uyvy,
            b"RGB3" => Self::Rgb24,
            b"BGR3" => Self::Bgr24,
            b"GREY" => Self::Grey,
            b"MJPG" => Self::Mjpeg,
            b"Y10 " => Self::Mono10,
            b"Y12 " => Self::Mono12,
            b"Y16 " => Self::Mono16,
            b"RGGB" => Self::Bayer8(Cfa::Rggb),
            b"GRBG" => Self::Bayer8(Cfa::Grbg),
            b"GBRG" => Self::Bayer8(Cfa::Gbrg),
            b"BA81" => Self::Bayer8(Cfa::Bggr),
            _ => return None,
        })
    }

    /// The V4L2 fourcc.
    pub(crate) fn fourcc(self) -> [u8; 4] {
        *match self {
            Self::Yuyv => b"YUYV",
            Self::Uyvy => b"UYVY",
            Self::Rgb24 => b"RGB3",
            Self::Bgr24 => b"BGR3",
            Self::Grey => b"GREY",
            Self::Mjpeg => b"MJPG",
            Self::Mono10 => b"Y10 ",
            Self::Mono12 => b"Y12 ",
            Self::Mono16 => b"Y16 ",
            Self::Bayer8(Cfa::Rggb) => b"RGGB",
            Self::Bayer8(Cfa::Grbg) => b"GRBG",
            Self::Bayer8(Cfa::Gbrg) => b"GBRG",
            Self::Bayer8(Cfa::Bggr) => b"BA81",
            // Tags for messages only: V4L2 has no fourcc for these ([`from_fourcc`] knows none).
            Self::MonoPacked(MonoPacking::Gvsp10) => b"M10G",
            Self::MonoPacked(MonoPacking::Gvsp12) => b"M12G",
            Self::MonoPacked(MonoPacking::Lsb10) => b"M10p",
            Self::MonoPacked(MonoPacking::Lsb12) => b"M12p",
            // The 16-bit containers: V4L2's fourccs of the same layout (10 and 12 bits low-aligned,
            // the high bits zero), which [`from_fourcc`] does not take (V4L2 raw captures are
            // not converted); packed: tags of the same shape as the monochrome ones.
            Self::BayerDeep(cfa, deep) => {
                let i = match cfa {
                    Cfa::Rggb => 0,
                    Cfa::Grbg => 1,
                    Cfa::Gbrg => 2,
                    Cfa::Bggr => 3,
                };
                let tags: [&[u8; 4]; 4] = match deep {
                    Deep::Le10 => [b"RG10", b"BA10", b"GB10", b"BG10"],
                    Deep::Le12 => [b"RG12", b"BA12", b"GB12", b"BG12"],
                    Deep::Le16 => [b"RG16", b"GR16", b"GB16", b"BYR2"],
                    Deep::Packed(MonoPacking::Gvsp10) => [b"R10G", b"A10G", b"G10G", b"B10G"],
                    Deep::Packed(MonoPacking::Gvsp12) => [b"R12G", b"A12G", b"G12G", b"B12G"],
                    Deep::Packed(MonoPacking::Lsb10) => [b"R10p", b"A10p", b"G10p", b"B10p"],
                    Deep::Packed(MonoPacking::Lsb12) => [b"R12p", b"A12p", b"G12p", b"B12p"],
                };
                tags[i]
            }
        }
    }

    /// Bytes per packed row of `width` pixels (`None` for MJPEG, which has no rows).
    pub(crate) fn packed_row(self, width: u32) -> Option<usize> {
        let w = width as usize;
        match self {
            // 4:2:2 packs pixel pairs; an odd width still takes a whole pair at the end.
            Self::Yuyv | Self::Uyvy => Some(w.div_ceil(2) * 4),
            Self::Rgb24 | Self::Bgr24 => Some(w * 3),
            Self::Grey | Self::Bayer8(_) => Some(w),
            Self::Mono10 | Self::Mono12 | Self::Mono16 => Some(w * 2),
            Self::BayerDeep(_, Deep::Le10 | Deep::Le12 | Deep::Le16) => Some(w * 2),
            // A last, partial group of the GigE layouts still takes its bytes.
            Self::MonoPacked(p) | Self::BayerDeep(_, Deep::Packed(p)) => {
                let (pixels, bytes) = p.group();
                Some(w.div_ceil(pixels) * bytes)
            }
            Self::Mjpeg => None,
        }
    }
}

/// A buffer that cannot be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConvertError {
    /// Shorter than the format, size and stride need.
    #[error(
        "{format} buffer of {got} bytes is too short for {width}x{height} (needs {need}); the \
         frame is truncated — check the device and cable"
    )]
    Truncated {
        /// The format's fourcc as text.
        format: String,
        /// Bytes received.
        got: usize,
        /// Bytes needed.
        need: usize,
        /// Frame width.
        width: u32,
        /// Frame height.
        height: u32,
    },
    /// The stride is smaller than a packed row.
    #[error("row stride {stride} is smaller than a packed {format} row of {row} bytes")]
    Stride {
        /// The format's fourcc as text.
        format: String,
        /// The stride given.
        stride: usize,
        /// The packed row length.
        row: usize,
    },
    /// A width whose rows do not end on a byte in a format packed across rows (`Mono12p`,
    /// `Mono10p`).
    #[error(
        "{format} rows of {width} pixels do not end on a byte (the width must be a multiple of \
         {multiple}); set the camera's Width to one, or use a Mono16/Mono8 pixel format"
    )]
    Unaligned {
        /// The format's tag as text.
        format: String,
        /// Frame width.
        width: u32,
        /// What the width must be a multiple of.
        multiple: usize,
    },
    /// An MJPEG buffer that does not decode, or decodes to another size.
    #[error("MJPEG frame: {0}")]
    Jpeg(String),
}

/// Converts one captured buffer to RGB. `stride` is the driver's `bytesperline` (0 = packed).
pub(crate) fn to_rgb(
    format: PixelFormat,
    buf: &[u8],
    width: u32,
    height: u32,
    stride: usize,
) -> Result<RgbImage, ConvertError> {
    let name = || {
        String::from_utf8_lossy(&format.fourcc())
            .trim_end()
            .to_string()
    };
    let Some(row) = format.packed_row(width) else {
        return decode_mjpeg(buf, width, height);
    };
    if let PixelFormat::MonoPacked(p @ (MonoPacking::Lsb10 | MonoPacking::Lsb12))
    | PixelFormat::BayerDeep(_, Deep::Packed(p @ (MonoPacking::Lsb10 | MonoPacking::Lsb12))) =
        format
    {
        let pixels = p.group().0;
        if !(width as usize).is_multiple_of(pixels) {
            return Err(ConvertError::Unaligned {
                format: name(),
                width,
                multiple: pixels,
            });
        }
    }
    let stride = if stride == 0 { row } else { stride };
    if stride < row {
        return Err(ConvertError::Stride {
            format: name(),
            stride,
            row,
        });
    }
    let h = height as usize;
    let need = if h == 0 { 0 } else { stride * (h - 1) + row };
    if buf.len() < need {
        return Err(ConvertError::Truncated {
            format: name(),
            got: buf.len(),
            need,
            width,
            height,
        });
    }
    let mut out = RgbImage::new(width, height);
    let w = width as usize;
    if w == 0 || h == 0 {
        return Ok(out);
    }
    if let PixelFormat::Bayer8(cfa) = format {
        demosaic_bilinear(cfa, buf, w, h, stride, &mut out);
        return Ok(out);
    }
    if let PixelFormat::BayerDeep(cfa, deep) = format {
        // Each sample's 8 high bits first (as the monochrome formats of the same depth), then the
        // 8-bit demosaic: within 1 of demosaicing at full depth and rounding after (module docs).
        let mut mosaic = vec![0u8; w * h];
        mosaic
            .par_chunks_exact_mut(w)
            .enumerate()
            .for_each(|(y, dst)| {
                let src = &buf[y * stride..y * stride + row];
                match deep {
                    Deep::Packed(p) => {
                        let (pixels, bytes) = p.group();
                        for (d, s) in dst.chunks_mut(pixels).zip(src.chunks_exact(bytes)) {
                            d.copy_from_slice(&packed_group(p, s)[..d.len()]);
                        }
                    }
                    Deep::Le10 | Deep::Le12 | Deep::Le16 => {
                        let shift = deep.shift();
                        for (d, s) in dst.iter_mut().zip(src.chunks_exact(2)) {
                            let v = u16::from_le_bytes([s[0], s[1]]) >> shift;
                            *d = v.min(255) as u8;
                        }
                    }
                }
            });
        demosaic_bilinear(cfa, &mosaic, w, h, w, &mut out);
        return Ok(out);
    }
    out.par_chunks_exact_mut(w * 3)
        .enumerate()
        .for_each(|(y, dst)| {
            let src = &buf[y * stride..y * stride + row];
            match format {
                PixelFormat::Yuyv => yuv422_row(src, dst, [0, 1, 2, 3]),
                PixelFormat::Uyvy => yuv422_row(src, dst, [1, 0, 3, 2]),
                PixelFormat::Rgb24 => dst.copy_from_slice(src),
                PixelFormat::Bgr24 => {
                    for (d, s) in dst.chunks_exact_mut(3).zip(src.chunks_exact(3)) {
                        d.copy_from_slice(&[s[2], s[1], s[0]]);
                    }
                }
                PixelFormat::Grey => {
                    for (d, &g) in dst.chunks_exact_mut(3).zip(src) {
                        d.fill(g);
                    }
                }
                PixelFormat::Mono10 => mono16_row(src, dst, 2),
                PixelFormat::Mono12 => mono16_row(src, dst, 4),
                PixelFormat::Mono16 => mono16_row(src, dst, 8),
                PixelFormat::MonoPacked(p) => mono_packed_row(p, src, dst),
                PixelFormat::Mjpeg | PixelFormat::Bayer8(_) | PixelFormat::BayerDeep(..) => {
                    unreachable!("MJPEG and Bayer are converted above")
                }
            }
        });
    Ok(out)
}

/// One row of packed monochrome ([`MonoPacking`]) as 8-bit luma (each pixel's 8 high bits),
/// replicated to RGB. `dst` may end inside a group (an odd width of a GigE layout).
fn mono_packed_row(p: MonoPacking, src: &[u8], dst: &mut [u8]) {
    let (pixels, bytes) = p.group();
    for (d, s) in dst.chunks_mut(pixels * 3).zip(src.chunks_exact(bytes)) {
        for (px, &g) in d.chunks_exact_mut(3).zip(&packed_group(p, s)) {
            px.fill(g);
        }
    }
}

/// The 8 high bits of each pixel of one packed group `s` ([`MonoPacking::group`]'s bytes); the
/// entries past the group's pixel count are 0.
#[inline]
fn packed_group(p: MonoPacking, s: &[u8]) -> [u8; 4] {
    match p {
        MonoPacking::Gvsp10 | MonoPacking::Gvsp12 => [s[0], s[2], 0, 0],
        // p0 = s0 | (s1 & 0xF) << 8, p1 = s1 >> 4 | s2 << 4; >> 4 each.
        MonoPacking::Lsb12 => [(s[0] >> 4) | (s[1] << 4), s[2], 0, 0],
        // p0 = s0 | (s1 & 3) << 8, p1 = s1 >> 2 | (s2 & 0xF) << 6, p2 = s2 >> 4 | (s3 & 0x3F)
        // << 4, p3 = s3 >> 6 | s4 << 2; >> 2 each.
        MonoPacking::Lsb10 => [
            (s[0] >> 2) | (s[1] << 6),
            (s[1] >> 4) | (s[2] << 4),
            (s[2] >> 6) | (s[3] << 2),
            s[4],
        ],
    }
}

/// One row of 16-bit little-endian luma, `shift` low bits dropped (values above the format's
/// range saturate at 255), replicated to RGB.
fn mono16_row(src: &[u8], dst: &mut [u8], shift: u32) {
    for (d, s) in dst.chunks_exact_mut(3).zip(src.chunks_exact(2)) {
        let v = u16::from_le_bytes([s[0], s[1]]) >> shift;
        d.fill(v.min(255) as u8);
    }
}

/// Mirrors index `i` (which may be −1 or `n`) into `0..n` so the Bayer pattern continues across
/// the border: −1 → 1, n → n − 2 (a 1-wide axis reads its only sample).
#[inline]
fn mirror(i: isize, n: usize) -> usize {
    let n = n as isize;
    let m = if i < 0 {
        -i
    } else if i >= n {
        2 * n - 2 - i
    } else {
        i
    };
    m.clamp(0, n - 1) as usize
}

/// Bilinear demosaicing of an 8-bit Bayer mosaic (docs/sources.md#genicam-cameras): the sampled
/// channel is kept; a missing channel is the rounded mean of its samples among the 8 neighbours
/// (the 2 horizontal or vertical ones for red/blue at a green site, the 4 diagonal ones for
/// red/blue at blue/red sites, the 4 orthogonal greens at red/blue sites). Borders mirror.
/// Rows in parallel; each output row reads the source rows above, at and below it.
fn demosaic_bilinear(cfa: Cfa, buf: &[u8], w: usize, h: usize, stride: usize, out: &mut RgbImage) {
    out.par_chunks_exact_mut(w * 3)
        .enumerate()
        .for_each(|(y, dst)| {
            let yi = y as isize;
            let row = |r: isize| {
                let r = mirror(r, h);
                &buf[r * stride..r * stride + w]
            };
            let (up, mid, down) = (row(yi - 1), row(yi), row(yi + 1));
            // Whether red (else blue) sits on this row, and the x parity of that non-green site.
            let red_row = cfa.channel(0, y) == 0 || cfa.channel(1, y) == 0;
            let site = usize::from(cfa.channel(0, y) == 1);
            let at = |x: usize, l: usize, r: usize| -> [u8; 3] {
                let here = mid[x];
                if x & 1 == site {
                    let cross = (u16::from(mid[l])
                        + u16::from(mid[r])
                        + u16::from(up[x])
                        + u16::from(down[x])
                        + 2)
                        >> 2;
                    let diagonal = (u16::from(up[l])
                        + u16::from(up[r])
                        + u16::from(down[l])
                        + u16::from(down[r])
                        + 2)
                        >> 2;
                    let (g, d) = (cross as u8, diagonal as u8);
                    if red_row { [here, g, d] } else { [d, g, here] }
                } else {
                    let horizontal = ((u16::from(mid[l]) + u16::from(mid[r]) + 1) >> 1) as u8;
                    let vertical = ((u16::from(up[x]) + u16::from(down[x]) + 1) >> 1) as u8;
                    // A green site: the row's own colour left and right, the other above and below.
                    if red_row {
                        [horizontal, here, vertical]
                    } else {
                        [vertical, here, horizontal]
                    }
                }
            };
            let last = w - 1;
            dst[..3].copy_from_slice(&at(0, mirror(-1, w), mirror(1, w)));
            for (i, px) in dst.chunks_exact_mut(3).enumerate().take(last).skip(1) {
                px.copy_from_slice(&at(i, i - 1, i + 1));
            }
            if last > 0 {
                let r = mirror(w as isize, w);
                dst[last * 3..].copy_from_slice(&at(last, last - 1, r));
            }
        });
}

/// One row of 4:2:2: `order` gives the byte positions of (Y0, U, Y1, V) in each 4-byte group.
/// `dst` holds `width` RGB pixels; an odd width drops the last group's second pixel.
fn yuv422_row(src: &[u8], dst: &mut [u8], order: [usize; 4]) {
    let [y0, u, y1, v] = order;
    // Whole pixel pairs in exact chunks (no length test per pair, so the loop compiles to straight
    // code), then the half pair of an odd width.
    let pairs = dst.len() / 6;
    let (whole, tail) = dst.split_at_mut(pairs * 6);
    for (group, px) in src.chunks_exact(4).zip(whole.chunks_exact_mut(6)) {
        let (d, e) = (i32::from(group[u]) - 128, i32::from(group[v]) - 128);
        let a = yuv_to_rgb(group[y0], d, e);
        let b = yuv_to_rgb(group[y1], d, e);
        px.copy_from_slice(&[a[0], a[1], a[2], b[0], b[1], b[2]]);
    }
    if let (Some(group), false) = (src.chunks_exact(4).nth(pairs), tail.is_empty()) {
        let (d, e) = (i32::from(group[u]) - 128, i32::from(group[v]) - 128);
        tail.copy_from_slice(&yuv_to_rgb(group[y0], d, e));
    }
}

/// BT.601 limited range → RGB, 8-bit fixed point: with C = Y − 16, D = Cb − 128, E = Cr − 128,
/// R = (298C + 409E + 128) >> 8, G = (298C − 100D − 208E + 128) >> 8, B = (298C + 516D + 128) >> 8,
/// clamped to 0..255.
#[inline]
fn yuv_to_rgb(y: u8, d: i32, e: i32) -> [u8; 3] {
    let c = 298 * (i32::from(y) - 16) + 128;
    let clamp = |v: i32| (v >> 8).clamp(0, 255) as u8;
    [
        clamp(c + 409 * e),
        clamp(c - 100 * d - 208 * e),
        clamp(c + 516 * d),
    ]
}

/// Decodes one MJPEG buffer (after [`ensure_huffman_tables`]) and checks it has the negotiated size.
fn decode_mjpeg(buf: &[u8], width: u32, height: u32) -> Result<RgbImage, ConvertError> {
    let jpeg = ensure_huffman_tables(buf)?;
    let img = image::load_from_memory_with_format(&jpeg, image::ImageFormat::Jpeg)
        .map_err(|e| ConvertError::Jpeg(format!("cannot decode ({e})")))?
        .to_rgb8();
    if img.dimensions() != (width, height) {
        return Err(ConvertError::Jpeg(format!(
            "decoded {}x{} but the device negotiated {width}x{height}",
            img.width(),
            img.height()
        )));
    }
    Ok(img)
}

/// The JPEG with Huffman tables: `buf` itself when it has a DHT segment, else a copy with the
/// standard tables of JPEG Annex K.3 inserted just before the first SOF/SOS segment (how Motion-JPEG
/// cameras that omit them expect to be decoded). Errors when `buf` is not a JPEG.
fn ensure_huffman_tables(buf: &[u8]) -> Result<Cow<'_, [u8]>, ConvertError> {
    if buf.len() < 4 || buf[0] != 0xFF || buf[1] != 0xD8 {
        return Err(ConvertError::Jpeg(
            "does not start with a JPEG SOI marker".into(),
        ));
    }
    // Walk the marker segments up to the scan.
    let mut i = 2;
    let mut insert_at = None;
    while i + 4 <= buf.len() {
        if buf[i] != 0xFF {
            return Err(ConvertError::Jpeg(format!(
                "no marker at byte {i}; the frame is damaged"
            )));
        }
        let marker = buf[i + 1];
        if marker == 0xFF {
            i += 1; // fill byte
            continue;
        }
        match marker {
            0xC4 => return Ok(Cow::Borrowed(buf)),
            // SOF0..SOF15 except DHT (C4), JPG (C8), DAC (CC); and SOS.
            0xC0..=0xCF | 0xDA if insert_at.is_none() => insert_at = Some(i),
            _ => {}
        }
        if marker == 0xDA {
            break;
        }
        let len = usize::from(u16::from_be_bytes([buf[i + 2], buf[i + 3]]));
        if len < 2 {
            return Err(ConvertError::Jpeg(format!(
                "segment length {len} at byte {i}; the frame is damaged"
            )));
        }
        i += 2 + len;
    }
    let at = insert_at.ok_or_else(|| ConvertError::Jpeg("no frame header or scan".into()))?;
    let mut out = Vec::with_capacity(buf.len() + 432);
    out.extend_from_slice(&buf[..at]);
    out.extend_from_slice(&standard_dht());
    out.extend_from_slice(&buf[at..]);
    Ok(Cow::Owned(out))
}

/// JPEG Annex K.3 tables: (class << 4 | id, 16 code-length counts, symbols).
const STD_TABLES: [(u8, [u8; 16], &[u8]); 4] = [
    (
        0x00,
        [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],
        &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    ),
    (
        0x01,
        [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
        &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    ),
    (
        0x10,
        [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d],
        &[
            0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51,
            0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1,
            0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18,
            0x19, 0x1a, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39,
            0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57,
            0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75,
            0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92,
            0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
            0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
            0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8,
            0xd9, 0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2,
            0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
        ],
    ),
    (
        0x11,
        [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77],
        &[
            0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07,
            0x61, 0x71, 0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09,
            0x23, 0x33, 0x52, 0xf0, 0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25,
            0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38,
            0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56,
            0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74,
            0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
            0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5,
            0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba,
            0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6,
            0xd7, 0xd8, 0xd9, 0xda, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2,
            0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa,
        ],
    ),
];

/// One DHT segment holding the four standard tables.
fn standard_dht() -> Vec<u8> {
    let body: usize = STD_TABLES.iter().map(|(_, _, v)| 17 + v.len()).sum();
    let mut out = Vec::with_capacity(4 + body);
    out.extend_from_slice(&[0xFF, 0xC4]);
    out.extend_from_slice(&((body + 2) as u16).to_be_bytes());
    for (class_id, bits, vals) in &STD_TABLES {
        out.push(*class_id);
        out.extend_from_slice(bits);
        out.extend_from_slice(vals);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BT.601 limited-range RGB → YCbCr, 8-bit fixed point (the inverse the tests record buffers
    /// with).
    fn rgb_to_yuv([r, g, b]: [u8; 3]) -> [u8; 3] {
        let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
        [
            (((66 * r + 129 * g + 25 * b + 128) >> 8) + 16) as u8,
            (((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128) as u8,
            (((112 * r - 94 * g - 18 * b + 128) >> 8) + 128) as u8,
        ]
    }

    /// A test picture whose pixel pairs share a colour, so 4:2:2 loses nothing.
    fn picture(w: u32, h: u32) -> RgbImage {
        RgbImage::from_fn(w, h, |x, y| {
            let x = x / 2 * 2;
            image::Rgb([
                (x * 255 / w.max(1)) as u8,
                (y * 255 / h.max(1)) as u8,
                ((x + y) * 7 % 256) as u8,
            ])
        })
    }

    fn record_422(img: &RgbImage, uyvy: bool, stride: usize) -> Vec<u8> {
        let row = PixelFormat::Yuyv.packed_row(img.width()).unwrap();
        let mut buf = vec![0xAAu8; stride * img.height() as usize];
        for y in 0..img.height() {
            for x in (0..img.width()).step_by(2) {
                let [y0, u, v] = rgb_to_yuv(img.get_pixel(x, y).0);
                let y1 = if x + 1 < img.width() {
                    rgb_to_yuv(img.get_pixel(x + 1, y).0)[0]
                } else {
                    y0
                };
                let g = y as usize * stride + x as usize * 2;
                let bytes = if uyvy { [u, y0, v, y1] } else { [y0, u, y1, v] };
                buf[g..g + 4].copy_from_slice(&bytes);
            }
            assert!(row <= stride);
        }
        buf
    }

    #[test]
    fn yuyv_and_uyvy_recover_the_picture_within_rounding() {
        for (w, h, pad) in [(64u32, 48u32, 0usize), (37, 5, 12), (1, 1, 0)] {
            let img = picture(w, h);
            let stride = PixelFormat::Yuyv.packed_row(w).unwrap() + pad;
            for (uyvy, fmt) in [(false, PixelFormat::Yuyv), (true, PixelFormat::Uyvy)] {
                let buf = record_422(&img, uyvy, stride);
                let out = to_rgb(fmt, &buf, w, h, stride).unwrap();
                let mut worst = 0i32;
                for (a, b) in out.as_raw().iter().zip(img.as_raw()) {
                    worst = worst.max((i32::from(*a) - i32::from(*b)).abs());
                }
                // Two 8-bit fixed-point roundings (forward and back) and limited range's coarser
                // steps: at most 3 levels.
                assert!(worst <= 3, "{fmt:?} {w}x{h}: worst {worst}");
            }
        }
        // Reference points of the BT.601 limited range: black, white, and pure red.
        assert_eq!(yuv_to_rgb(16, 0, 0), [0, 0, 0]);
        assert_eq!(yuv_to_rgb(235, 0, 0), [255, 255, 255]);
        let [y, u, v] = rgb_to_yuv([255, 0, 0]);
        let red = yuv_to_rgb(y, i32::from(u) - 128, i32::from(v) - 128);
        assert!(red[0] >= 253 && red[1] <= 2 && red[2] <= 2, "{red:?}");
    }

    #[test]
    fn packed_rgb_bgr_and_grey_with_strides() {
        let img = picture(5, 3);
        let mut rgb = Vec::new();
        let mut bgr = Vec::new();
        for row in img.rows() {
            for p in row {
                rgb.extend_from_slice(&p.0);
                bgr.extend_from_slice(&[p.0[2], p.0[1], p.0[0]]);
            }
            rgb.extend_from_slice(&[9, 9]); // stride 17
            bgr.extend_from_slice(&[9, 9]);
        }
        assert_eq!(to_rgb(PixelFormat::Rgb24, &rgb, 5, 3, 17).unwrap(), img);
        assert_eq!(to_rgb(PixelFormat::Bgr24, &bgr, 5, 3, 17).unwrap(), img);
        let grey = [10u8, 20, 30, 40, 50, 60];
        let g = to_rgb(PixelFormat::Grey, &grey, 3, 2, 0).unwrap();
        assert_eq!(g.get_pixel(2, 1).0, [60, 60, 60]);
        assert_eq!(g.get_pixel(0, 0).0, [10, 10, 10]);
    }

    #[test]
    fn short_buffers_and_bad_strides_are_errors_not_panics() {
        let e = to_rgb(PixelFormat::Yuyv, &[0; 100], 64, 48, 0).unwrap_err();
        assert!(
            e.to_string()
                .contains("YUYV buffer of 100 bytes is too short for 64x48 (needs 6144)"),
            "{e}"
        );
        // The last row needs only its packed length, not a whole stride.
        assert!(to_rgb(PixelFormat::Grey, &[0; 2 * 8 + 4], 4, 3, 8).is_ok());
        assert!(to_rgb(PixelFormat::Grey, &[0; 2 * 8 + 3], 4, 3, 8).is_err());
        let e = to_rgb(PixelFormat::Rgb24, &[0; 100], 10, 2, 20).unwrap_err();
        assert!(matches!(e, ConvertError::Stride { row: 30, .. }), "{e}");
        assert!(to_rgb(PixelFormat::Mjpeg, &[1, 2, 3], 4, 4, 0).is_err());
        assert!(to_rgb(PixelFormat::Rgb24, &[], 0, 0, 0).unwrap().is_empty());
    }

    #[test]
    fn fourccs_round_trip() {
        for f in [
            PixelFormat::Yuyv,
            PixelFormat::Uyvy,
            PixelFormat::Rgb24,
            PixelFormat::Bgr24,
            PixelFormat::Grey,
            PixelFormat::Mjpeg,
            PixelFormat::Mono10,
            PixelFormat::Mono12,
            PixelFormat::Mono16,
            PixelFormat::Bayer8(Cfa::Rggb),
            PixelFormat::Bayer8(Cfa::Grbg),
            PixelFormat::Bayer8(Cfa::Gbrg),
            PixelFormat::Bayer8(Cfa::Bggr),
        ] {
            assert_eq!(PixelFormat::from_fourcc(f.fourcc()), Some(f));
        }
        // The packed GenICam formats' tags are no V4L2 fourccs.
        for p in [
            MonoPacking::Gvsp10,
            MonoPacking::Gvsp12,
            MonoPacking::Lsb10,
            MonoPacking::Lsb12,
        ] {
            assert_eq!(
                PixelFormat::from_fourcc(PixelFormat::MonoPacked(p).fourcc()),
                None
            );
        }
        // Nor are the deep Bayer ones taken as V4L2 formats (V4L2 raw captures are not converted).
        for deep in [
            Deep::Le10,
            Deep::Le12,
            Deep::Le16,
            Deep::Packed(MonoPacking::Lsb10),
        ] {
            for cfa in [Cfa::Rggb, Cfa::Grbg, Cfa::Gbrg, Cfa::Bggr] {
                let f = PixelFormat::BayerDeep(cfa, deep);
                assert_eq!(PixelFormat::from_fourcc(f.fourcc()), None, "{f:?}");
            }
        }
        assert_eq!(PixelFormat::from_fourcc(*b"NV12"), None);
    }

    /// `values` (`bits` wide) packed as `p` lays them out.
    fn pack(p: MonoPacking, values: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        match p {
            MonoPacking::Gvsp10 | MonoPacking::Gvsp12 => {
                let low = if p == MonoPacking::Gvsp10 { 2 } else { 4 };
                for pair in values.chunks(2) {
                    let (a, b) = (pair[0], pair.get(1).copied().unwrap_or(0));
                    let mask = (1u16 << low) - 1;
                    out.extend([
                        (a >> low) as u8,
                        ((a & mask) | ((b & mask) << 4)) as u8,
                        (b >> low) as u8,
                    ]);
                }
            }
            MonoPacking::Lsb10 | MonoPacking::Lsb12 => {
                // A little-endian bit stream.
                let bits = if p == MonoPacking::Lsb10 { 10 } else { 12 };
                let (mut acc, mut n) = (0u64, 0);
                for &v in values {
                    acc |= u64::from(v) << n;
                    n += bits;
                    while n >= 8 {
                        out.push(acc as u8);
                        acc >>= 8;
                        n -= 8;
                    }
                }
                assert_eq!(n, 0, "whole bytes only");
            }
        }
        out
    }

    #[test]
    fn packed_mono_formats_give_each_pixels_high_bits() {
        let v12: Vec<u16> = vec![4095, 0, 2048, 17, 0x0AB, 0xF00, 1, 4094];
        let v10: Vec<u16> = vec![1023, 0, 512, 5, 0x2AB, 0x300, 3, 1020];
        for (p, values, shift) in [
            (MonoPacking::Gvsp12, &v12, 4),
            (MonoPacking::Lsb12, &v12, 4),
            (MonoPacking::Gvsp10, &v10, 2),
            (MonoPacking::Lsb10, &v10, 2),
        ] {
            // 4 × 2 pixels, and the same rows at a stride with 3 bytes of padding.
            let row = pack(p, &values[..4]);
            let rows = [row.clone(), pack(p, &values[4..])].concat();
            let want: Vec<u8> = values.iter().map(|v| (v >> shift) as u8).collect();
            let f = PixelFormat::MonoPacked(p);
            let img = to_rgb(f, &rows, 4, 2, 0).unwrap();
            let got: Vec<u8> = img.pixels().map(|px| px.0[0]).collect();
            assert_eq!(got, want, "{p:?}");
            assert!(
                img.pixels()
                    .all(|px| px.0[0] == px.0[1] && px.0[1] == px.0[2])
            );
            let padded = [row, vec![7; 3], pack(p, &values[4..])].concat();
            let img = to_rgb(f, &padded, 4, 2, f.packed_row(4).unwrap() + 3).unwrap();
            assert_eq!(img.pixels().map(|px| px.0[0]).collect::<Vec<_>>(), want);
            assert!(to_rgb(f, &rows[..rows.len() - 1], 4, 2, 0).is_err());
        }
        // An odd width in a GigE layout: the last group is half used.
        let f = PixelFormat::MonoPacked(MonoPacking::Gvsp12);
        let img = to_rgb(f, &pack(MonoPacking::Gvsp12, &[4095, 0, 2048]), 3, 1, 0).unwrap();
        assert_eq!(img.as_raw(), &[255, 255, 255, 0, 0, 0, 128, 128, 128]);
        // The `p` layouts need rows that end on a byte.
        let e = to_rgb(
            PixelFormat::MonoPacked(MonoPacking::Lsb10),
            &[0; 100],
            6,
            2,
            0,
        );
        assert!(
            matches!(e, Err(ConvertError::Unaligned { multiple: 4, .. })),
            "{e:?}"
        );
        let e = to_rgb(
            PixelFormat::MonoPacked(MonoPacking::Lsb12),
            &[0; 100],
            3,
            1,
            0,
        );
        assert!(e.is_err_and(|e| e.to_string().contains("must be a multiple of 2")),);
    }

    #[test]
    fn mono10_12_16_drop_their_low_bits() {
        // 1023 (10-bit white), 512, 4; then 12-bit 4095, 2048; 16-bit 65535, 256.
        let le = |v: &[u16]| v.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        let m10 = to_rgb(PixelFormat::Mono10, &le(&[1023, 512, 4, 3]), 2, 2, 0).unwrap();
        let m10: Vec<u8> = m10.pixels().map(|p| p.0[0]).collect();
        assert_eq!(m10, [255, 128, 1, 0]);
        let m12 = to_rgb(PixelFormat::Mono12, &le(&[4095, 2048, 16, 0xFFFF]), 4, 1, 0).unwrap();
        let m12: Vec<[u8; 3]> = m12.pixels().map(|p| p.0).collect();
        // Out-of-range container bits saturate instead of wrapping.
        assert_eq!(m12, [[255; 3], [128; 3], [1; 3], [255; 3]]);
        let m16 = to_rgb(PixelFormat::Mono16, &le(&[65535, 256]), 2, 1, 0).unwrap();
        assert_eq!(m16.as_raw(), &[255, 255, 255, 1, 1, 1]);
        // A stride of 6 bytes for 2 pixels (4 bytes of row, 2 of padding).
        let padded = [0xFF, 0x03, 0x00, 0x02, 9, 9, 4, 0, 0, 0];
        let p = to_rgb(PixelFormat::Mono10, &padded, 2, 2, 6).unwrap();
        assert_eq!(p.get_pixel(1, 0).0, [128; 3]);
        assert_eq!(p.get_pixel(0, 1).0, [1; 3]);
        assert!(to_rgb(PixelFormat::Mono12, &[0; 7], 2, 2, 0).is_err());
    }

    /// A mosaic of `img` as a camera with `cfa` samples it.
    fn mosaic(img: &RgbImage, cfa: Cfa) -> Vec<u8> {
        let mut out = Vec::new();
        for (x, y, p) in img.enumerate_pixels() {
            out.push(p.0[cfa.channel(x as usize, y as usize)]);
        }
        out
    }

    const CFAS: [Cfa; 4] = [Cfa::Rggb, Cfa::Grbg, Cfa::Gbrg, Cfa::Bggr];

    #[test]
    fn deep_bayer_is_the_8_bit_demosaic_of_each_samples_high_bits() {
        use MonoPacking::{Gvsp10, Gvsp12, Lsb10, Lsb12};
        let kinds = [
            (Deep::Le10, 10),
            (Deep::Le12, 12),
            (Deep::Le16, 16),
            (Deep::Packed(Gvsp10), 10),
            (Deep::Packed(Gvsp12), 12),
            (Deep::Packed(Lsb10), 10),
            (Deep::Packed(Lsb12), 12),
        ];
        for cfa in CFAS {
            for (deep, bits) in kinds {
                // The GigE layouts take an odd width (a half-used last group); the `p` ones whole
                // bytes per row.
                let sizes: &[(u32, u32)] = match deep {
                    Deep::Packed(Gvsp10 | Gvsp12) => &[(8, 4), (5, 3)],
                    _ => &[(8, 4), (4, 2)],
                };
                for &(w, h) in sizes {
                    let n = (w * h) as usize;
                    let values: Vec<u16> = (0..n)
                        .map(|i| ((i as u32 * 2_654_435_761) >> (32 - bits)) as u16)
                        .collect();
                    let rows = values.chunks(w as usize);
                    let raw: Vec<u8> = match deep {
                        Deep::Packed(p) => rows.flat_map(|r| pack(p, r)).collect(),
                        _ => rows.flatten().flat_map(|v| v.to_le_bytes()).collect(),
                    };
                    let high: Vec<u8> = values.iter().map(|v| (v >> (bits - 8)) as u8).collect();
                    let f = PixelFormat::BayerDeep(cfa, deep);
                    let want = to_rgb(PixelFormat::Bayer8(cfa), &high, w, h, 0).unwrap();
                    assert_eq!(to_rgb(f, &raw, w, h, 0).unwrap(), want, "{f:?} {w}x{h}");
                    // At a stride with padding, and a truncated buffer refused.
                    let row = f.packed_row(w).unwrap();
                    let padded: Vec<u8> = raw
                        .chunks(row)
                        .flat_map(|r| [r, &[9; 5]].concat())
                        .collect();
                    assert_eq!(to_rgb(f, &padded, w, h, row + 5).unwrap(), want, "{f:?}");
                    assert!(to_rgb(f, &raw[..raw.len() - 1], w, h, 0).is_err());
                }
            }
        }
        // A flat colour at 12 bits comes back exactly, and the `p` layouts refuse a width whose
        // rows end inside a byte.
        let flat = RgbImage::from_pixel(6, 4, image::Rgb([200, 90, 17]));
        let le: Vec<u8> = mosaic(&flat, Cfa::Grbg)
            .iter()
            .flat_map(|&v| ((u16::from(v) << 4) | 0xF).to_le_bytes())
            .collect();
        let f = PixelFormat::BayerDeep(Cfa::Grbg, Deep::Le12);
        assert_eq!(to_rgb(f, &le, 6, 4, 0).unwrap(), flat);
        let f = PixelFormat::BayerDeep(Cfa::Rggb, Deep::Packed(Lsb10));
        let e = to_rgb(f, &[0; 20], 6, 2, 0).unwrap_err();
        assert!(
            matches!(e, ConvertError::Unaligned { multiple: 4, .. }),
            "{e}"
        );
    }

    #[test]
    fn bayer_of_a_flat_colour_comes_back_exactly() {
        for cfa in CFAS {
            for (w, h) in [(6u32, 4u32), (5, 3), (2, 2), (3, 2)] {
                let flat = RgbImage::from_pixel(w, h, image::Rgb([200, 90, 17]));
                let got = to_rgb(PixelFormat::Bayer8(cfa), &mosaic(&flat, cfa), w, h, 0).unwrap();
                assert_eq!(got, flat, "{cfa:?} {w}x{h}");
            }
        }
    }

    #[test]
    fn bayer_rggb_4x4_by_hand() {
        // RGGB samples (R at even/even, B at odd/odd):
        //   y0:  R10 G20 R30 G40
        //   y1:  G50 B60 G70 B80
        //   y2:  R90 G100 R110 G120
        //   y3:  G130 B140 G150 B160
        let raw: Vec<u8> = (1..=16).map(|v| v * 10).collect();
        let img = to_rgb(PixelFormat::Bayer8(Cfa::Rggb), &raw, 4, 4, 0).unwrap();
        let px = |x, y| img.get_pixel(x, y).0;
        // (0,0) red site: G = mean(G20 [right], G20 [left, mirrored], G50 [down], G50 [up,
        // mirrored]) = 35; B = mean of the diagonals, all B60 after mirroring.
        assert_eq!(px(0, 0), [10, 35, 60]);
        // (1,1) blue site: R on the diagonals 10, 30, 90, 110 → 60; G = mean(50, 70, 20, 100) =
        // 60.
        assert_eq!(px(1, 1), [60, 60, 60]);
        // (1,0) green on a red row: R = mean(10, 30) = 20; B = mean(60 below, 60 mirrored) = 60.
        assert_eq!(px(1, 0), [20, 20, 60]);
        // (0,1) green on a blue row: R = mean(10 up, 90 down) = 50; B = mean(60, 60) = 60.
        assert_eq!(px(0, 1), [50, 50, 60]);
        // (2,2) red site inside: G = mean(100, 120, 70, 150) = 110; B = mean(60, 80, 140, 160)
        // = 110.
        assert_eq!(px(2, 2), [110, 110, 110]);
        // (3,3) blue corner: R = diagonals 110 (all four after mirroring); G = mean(150, 150,
        // 120, 120) = 135.
        assert_eq!(px(3, 3), [110, 135, 160]);
        // (2,1) green on a blue row: R = mean(30, 110) = 70; B = mean(60, 80) = 70.
        assert_eq!(px(2, 1), [70, 70, 70]);
        // The smallest mosaic: every missing channel is the one sample of its colour.
        let r = to_rgb(PixelFormat::Bayer8(Cfa::Rggb), &[1, 2, 2, 3], 2, 2, 0).unwrap();
        assert_eq!(r.get_pixel(0, 0).0, [1, 2, 3]);
        // Strides are honoured and short buffers are errors.
        let mut padded = Vec::new();
        for row in raw.chunks(4) {
            padded.extend_from_slice(row);
            padded.extend_from_slice(&[0, 0, 0]);
        }
        let p = to_rgb(PixelFormat::Bayer8(Cfa::Rggb), &padded, 4, 4, 7).unwrap();
        assert_eq!(p, img);
        assert!(to_rgb(PixelFormat::Bayer8(Cfa::Rggb), &raw[..15], 4, 4, 0).is_err());
    }

    #[test]
    fn bayer_patterns_are_the_same_picture_shifted() {
        // A GRBG mosaic is an RGGB one seen one column to the right: demosaicing both must give
        // the same interior pixels.
        let img = picture(9, 6);
        let rggb = to_rgb(
            PixelFormat::Bayer8(Cfa::Rggb),
            &mosaic(&img, Cfa::Rggb),
            9,
            6,
            0,
        )
        .unwrap();
        let shifted: Vec<u8> = mosaic(&img, Cfa::Rggb)
            .chunks(9)
            .flat_map(|r| r[1..].to_vec())
            .collect();
        let grbg = to_rgb(PixelFormat::Bayer8(Cfa::Grbg), &shifted, 8, 6, 0).unwrap();
        for y in 1..5 {
            for x in 1..7 {
                assert_eq!(grbg.get_pixel(x, y), rggb.get_pixel(x + 1, y), "({x},{y})");
            }
        }
    }

    /// Removes every DHT segment of a JPEG (what a Motion-JPEG camera sends).
    fn strip_dht(jpeg: &[u8]) -> Vec<u8> {
        let mut out = jpeg[..2].to_vec();
        let mut i = 2;
        loop {
            let marker = jpeg[i + 1];
            if marker == 0xDA {
                out.extend_from_slice(&jpeg[i..]);
                return out;
            }
            let len = usize::from(u16::from_be_bytes([jpeg[i + 2], jpeg[i + 3]]));
            if marker != 0xC4 {
                out.extend_from_slice(&jpeg[i..i + 2 + len]);
            }
            i += 2 + len;
        }
    }

    #[test]
    fn mjpeg_without_huffman_tables_decodes_as_with_the_standard_ones() {
        for (class, bits, vals) in STD_TABLES {
            let n: usize = bits.iter().map(|&b| usize::from(b)).sum();
            assert_eq!(n, vals.len(), "table {class:#x}");
            let mut sorted = vals.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(
                sorted.len(),
                vals.len(),
                "table {class:#x} repeats a symbol"
            );
        }
        let img = picture(48, 32);
        let mut jpeg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 80)
            .encode_image(&img)
            .unwrap();
        let stripped = strip_dht(&jpeg);
        assert!(stripped.len() < jpeg.len());
        assert!(matches!(
            ensure_huffman_tables(&jpeg).unwrap(),
            Cow::Borrowed(_)
        ));
        let with = decode_mjpeg(&jpeg, 48, 32).unwrap();
        let without = decode_mjpeg(&stripped, 48, 32).unwrap();
        // The encoder uses the Annex K tables, so the restored frame decodes to the same pixels.
        assert_eq!(with, without);
        let e = decode_mjpeg(&jpeg, 64, 32).unwrap_err();
        assert!(
            e.to_string()
                .contains("decoded 48x32 but the device negotiated 64x32"),
            "{e}"
        );
        assert!(decode_mjpeg(&jpeg[..jpeg.len() / 3], 48, 32).is_err());
    }
}
