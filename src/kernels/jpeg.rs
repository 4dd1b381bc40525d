//! Baseline JPEG compression round trip (encode at a quality, decode back) exactly as Pillow does it with
//! its bundled libjpeg-turbo, computed without writing the bitstream
//! (docs/imagenet-c.md#jpeg_compression).
//!
//! Entropy coding (Huffman) is lossless, so the pixels a JPEG round trip returns are fully determined by the
//! lossy stages, which this module reproduces in integer arithmetic, stage for stage, as libjpeg-turbo's
//! defaults run them when Pillow saves an RGB image with `quality=q` and opens it again:
//!
//! 1. RGB → YCbCr with libjpeg's 16-bit fixed-point tables (`jccolor.c`);
//! 2. chroma subsampling 4:2:0 (`jpeg_set_defaults`: luma 2×2, chroma 1×1; Pillow keeps it) by the
//!    2×2 box average with the alternating 1, 2 rounding bias (`jcsample.c` `h2v2_downsample`), after
//!    libjpeg's edge replication to whole blocks (right edge at full resolution, bottom edge per plane);
//! 3. per 8×8 block: the "islow" integer forward DCT (`jfdctint.c`), quantisation by the IJG tables
//!    scaled to the quality (`jcparam.c`, baseline-clamped to 1..=255) with libjpeg-turbo's
//!    reciprocal-multiply rounding (`jcdctmgr.c`), dequantisation and the "islow" inverse DCT
//!    (`jidctint.c`), range-limited to 0..=255;
//! 4. "fancy" (triangle) chroma upsampling `h2v2_fancy_upsample` (`jdsample.c`; plain 2×2 replication
//!    when the chroma plane is at most 2 samples wide, as libjpeg-turbo selects) with edge-replicated
//!    context rows;
//! 5. YCbCr → RGB with libjpeg's fixed-point tables (`jdcolor.c`).
//!
//! libjpeg-turbo's SIMD kernels produce the same bytes as these C algorithms, except that its SIMD inverse
//! DCT saturates out-of-range outputs where the C code wraps them modulo 1024 (`& RANGE_MASK`); this module
//! saturates, like the SIMD path Pillow's x86-64 and aarch64 wheels run (and the two agree whenever the
//! IDCT output stays within ±512 of mid-grey, i.e. for all but pathological inputs).
//!
//! Any size ≥ 1×1 (libjpeg pads partial blocks by edge replication and crops after decoding; so does this).
//!
//! Speed (same bytes): stages 1–3 run fused per MCU row (16 pixel rows), MCU rows in parallel: the rows
//! are colour-converted straight into the padded luma plane and a small full-resolution chroma scratch,
//! chroma is subsampled from it, and every block goes through the forward DCT, the quantiser and the
//! inverse DCT eight blocks at a time, as `i32` vectors whose lanes are the eight blocks (so no pass
//! needs a transposition) — integer loops that compile to AVX2 where the CPU has it, with no
//! allocation per block. Stages 4–5 run in parallel over bands of output rows with branch-free
//! arithmetic (no lookup tables). The straightforward per-stage implementation the module started as is
//! kept in the tests as the oracle for all of this.
//!
//! Why not the `image` crate's codec: its `JpegEncoder` uses the same IJG tables and quality scaling, but
//! encodes every component at full resolution (4:4:4; all sampling factors are 1) and its decoder
//! (zune-jpeg) has its own IDCT and upsampling, so its round trip is visibly different from Pillow's at the
//! low qualities ImageNet-C uses (chroma is not smeared over 16×16 areas).

use image::RgbImage;
use rayon::prelude::*;

use super::lanes;

/// IJG luminance quantisation table (ITU-T T.81 Annex K, Table K.1), natural (row-major) order.
pub(crate) const STD_LUMA_QUANT: [u16; 64] = [
    16, 11, 10, 16, 24, 40, 51, 61, //
    12, 12, 14, 19, 26, 58, 60, 55, //
    14, 13, 16, 24, 40, 57, 69, 56, //
    14, 17, 22, 29, 51, 87, 80, 62, //
    18, 22, 37, 56, 68, 109, 103, 77, //
    24, 35, 55, 64, 81, 104, 113, 92, //
    49, 64, 78, 87, 103, 121, 120, 101, //
    72, 92, 95, 98, 112, 100, 103, 99,
];

/// IJG chrominance quantisation table (ITU-T T.81 Annex K, Table K.2), natural order.
pub(crate) const STD_CHROMA_QUANT: [u16; 64] = [
    17, 18, 24, 47, 99, 99, 99, 99, //
    18, 21, 26, 66, 99, 99, 99, 99, //
    24, 26, 56, 99, 99, 99, 99, 99, //
    47, 66, 99, 99, 99, 99, 99, 99, //
    99, 99, 99, 99, 99, 99, 99, 99, //
    99, 99, 99, 99, 99, 99, 99, 99, //
    99, 99, 99, 99, 99, 99, 99, 99, //
    99, 99, 99, 99, 99, 99, 99, 99,
];

/// Pixels per rayon task of the decoding stage (upsampling + colour conversion, ~0.1 ms of work).
const PIXELS_PER_TASK: usize = 16_384;

/// Chroma sampling of the simulated encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subsampling {
    /// 4:2:0 — chroma halved in both directions (libjpeg's and Pillow's default).
    Yuv420,
    /// 4:4:4 — no subsampling (what the `image` crate's encoder writes; used to cross-check against it).
    #[cfg(test)]
    Yuv444,
}

/// libjpeg `jpeg_quality_scaling` + `jpeg_add_quant_table(…, force_baseline = TRUE)`: the table `base`
/// scaled to `quality` (clamped to 1..=100): factor `5000/q` below 50, else `200 − 2q`, each entry
/// `(base·factor + 50) / 100` clamped to 1..=255.
pub(crate) fn quant_table(base: &[u16; 64], quality: u8) -> [u16; 64] {
    let q = u32::from(quality.clamp(1, 100));
    let scale = if q < 50 { 5000 / q } else { 200 - 2 * q };
    base.map(|b| ((u32::from(b) * scale + 50) / 100).clamp(1, 255) as u16)
}

/// `img` compressed as Pillow's `img.save(f, "JPEG", quality=quality)` followed by `Image.open(f)` would
/// return it (libjpeg-turbo defaults: 4:2:0, islow DCT, fancy upsampling). Same size out; an empty image is
/// returned as is.
pub(crate) fn roundtrip(img: &RgbImage, quality: u8) -> RgbImage {
    roundtrip_with(img, quality, Subsampling::Yuv420)
}

/// [`roundtrip`] with an explicit chroma sampling.
fn roundtrip_with(img: &RgbImage, quality: u8, sampling: Subsampling) -> RgbImage {
    if rayon::current_num_threads() == 1 {
        // A one-thread pool gains nothing from a hand-over to its worker (a cross-thread round
        // trip per call): the same MCU rows and bands in order on this thread.
        return roundtrip_with_body(img, quality, sampling, false);
    }
    lanes::in_pool(|| roundtrip_with_body(img, quality, sampling, true))
}

/// The body of [`roundtrip_with`]: the MCU rows and the decoding bands on rayon's pool (`parallel`) or
/// in order on this thread (the same results either way).
fn roundtrip_with_body(
    img: &RgbImage,
    quality: u8,
    sampling: Subsampling,
    parallel: bool,
) -> RgbImage {
    let (w, h) = (img.width() as usize, img.height() as usize);
    if w == 0 || h == 0 {
        return img.clone();
    }
    let geo = Geometry::new(w, h, sampling);
    let luma = Quantiser::new(&quant_table(&STD_LUMA_QUANT, quality));
    let chroma = Quantiser::new(&quant_table(&STD_CHROMA_QUANT, quality));
    let mut yp = vec![0u8; geo.y_stride * geo.y_rows];
    let mut cbp = vec![0u8; geo.c_stride * geo.c_rows];
    let mut crp = vec![0u8; geo.c_stride * geo.c_rows];
    let c_chunk = geo.c_stride * geo.c_rows_per_mcu;
    /// One MCU row's index and its luma, Cb and Cr plane chunks, as the zipped iterators give them.
    type McuRow<'a> = (usize, ((&'a mut [u8], &'a mut [u8]), &'a mut [u8]));
    let encode = |(m, ((y, cb), cr)): McuRow| {
        encode_mcu_row(img.as_raw(), &geo, (&luma, &chroma), m, [y, cb, cr]);
    };
    let y_chunk = geo.y_stride * 16;
    if parallel {
        yp.par_chunks_mut(y_chunk)
            .zip(cbp.par_chunks_mut(c_chunk))
            .zip(crp.par_chunks_mut(c_chunk))
            .enumerate()
            .for_each(encode);
    } else {
        yp.chunks_mut(y_chunk)
            .zip(cbp.chunks_mut(c_chunk))
            .zip(crp.chunks_mut(c_chunk))
            .enumerate()
            .for_each(encode);
    }
    let mut out = vec![0u8; w * h * 3];
    let rows_per_task = (PIXELS_PER_TASK / w).max(1);
    let decode = |(task, rows): (usize, &mut [u8])| {
        decode_rows(&geo, [&yp, &cbp, &crp], task * rows_per_task, rows);
    };
    if parallel {
        out.par_chunks_mut(w * 3 * rows_per_task)
            .enumerate()
            .for_each(decode);
    } else {
        out.chunks_mut(w * 3 * rows_per_task)
            .enumerate()
            .for_each(decode);
    }
    RgbImage::from_raw(w as u32, h as u32, out).expect("buffer of width × height × 3")
}

// ---------------------------------------------------------------------------------------------------------
// Plane geometry.

/// Sizes of the three component planes, each padded to whole blocks (libjpeg's layout).
#[derive(Debug, Clone, Copy)]
struct Geometry {
    w: usize,
    h: usize,
    sampling: Subsampling,
    /// Luma: `8·⌈w/8⌉` samples per row, `8·⌈h/8⌉` rows.
    y_stride: usize,
    y_rows: usize,
    /// Chroma: 4:2:0 `16·⌈w/16⌉/2` × `16·⌈h/16⌉/2`; 4:4:4 as luma.
    c_stride: usize,
    c_rows: usize,
    /// Chroma rows per MCU row of 16 pixel rows (8 for 4:2:0, 16 for 4:4:4).
    c_rows_per_mcu: usize,
    /// Real (not padding) chroma samples per row and rows (libjpeg's `downsampled_width/height`).
    c_real_cols: usize,
    c_real_rows: usize,
}

impl Geometry {
    fn new(w: usize, h: usize, sampling: Subsampling) -> Self {
        let (y_stride, y_rows) = (round_up(w, 8), round_up(h, 8));
        match sampling {
            Subsampling::Yuv420 => Self {
                w,
                h,
                sampling,
                y_stride,
                y_rows,
                c_stride: round_up(w, 16) / 2,
                c_rows: round_up(h, 16) / 2,
                c_rows_per_mcu: 8,
                c_real_cols: w.div_ceil(2),
                c_real_rows: h.div_ceil(2),
            },
            #[cfg(test)]
            Subsampling::Yuv444 => Self {
                w,
                h,
                sampling,
                y_stride,
                y_rows,
                c_stride: y_stride,
                c_rows: y_rows,
                c_rows_per_mcu: 16,
                c_real_cols: w,
                c_real_rows: h,
            },
        }
    }
}

/// `⌈n / d⌉ · d`.
fn round_up(n: usize, d: usize) -> usize {
    n.div_ceil(d) * d
}

// ---------------------------------------------------------------------------------------------------------
// Encoder side, one MCU row (16 pixel rows) at a time.

crate::kernels::multiversion! {
    /// Stages 1–3 for MCU row `m` into the three plane chunks `[y, cb, cr]` (luma rows 16m..,
    /// chroma rows m·`c_rows_per_mcu`..): colour conversion with edge replication, chroma
    /// subsampling, and every block's DCT round trip. Compiled for AVX2 where the CPU has it.
    fn encode_mcu_row(
        raw: &[u8],
        geo: &Geometry,
        quant: (&Quantiser, &Quantiser),
        m: usize,
        planes: [&mut [u8]; 3],
    );
    /// [`encode_mcu_row`] with AVX-512F and AVX-512BW enabled (integer code: identical results).
    encode_mcu_row_avx512 ["avx512f", "avx512bw"] => encode_mcu_row_body;
    /// [`encode_mcu_row`] with AVX2 enabled.
    encode_mcu_row_avx2 ["avx2"] => encode_mcu_row_body;
    _ => encode_mcu_row_body;
    levels encode_mcu_row_at;
}

/// The body of [`encode_mcu_row`].
#[inline(always)]
fn encode_mcu_row_body(
    raw: &[u8],
    geo: &Geometry,
    (luma, chroma): (&Quantiser, &Quantiser),
    m: usize,
    [yc, cbc, crc]: [&mut [u8]; 3],
) {
    let (w, h) = (geo.w, geo.h);
    let y_rows = yc.len() / geo.y_stride;
    match geo.sampling {
        #[cfg(test)]
        Subsampling::Yuv444 => {
            for i in 0..y_rows {
                let src = &raw[(16 * m + i).min(h - 1) * w * 3..][..w * 3];
                let s = geo.y_stride;
                convert_row(
                    src,
                    &mut yc[i * s..][..s],
                    &mut cbc[i * s..][..s],
                    &mut crc[i * s..][..s],
                );
            }
        }
        Subsampling::Yuv420 => {
            // Full-resolution chroma of the MCU row's 16 source rows (replicated below the image),
            // each padded by replication to 16·⌈w/16⌉ columns, then the 2×2 box with bias 1, 2, 1, 2, …
            let fw = 2 * geo.c_stride;
            let mut cb_full = vec![0u8; 16 * fw];
            let mut cr_full = vec![0u8; 16 * fw];
            let mut y_spare = vec![0u8; geo.y_stride];
            for i in 0..16 {
                let src = &raw[(16 * m + i).min(h - 1) * w * 3..][..w * 3];
                let y_row = if i < y_rows {
                    &mut yc[i * geo.y_stride..][..geo.y_stride]
                } else {
                    &mut y_spare[..]
                };
                convert_row(
                    src,
                    y_row,
                    &mut cb_full[i * fw..][..fw],
                    &mut cr_full[i * fw..][..fw],
                );
            }
            let cs = geo.c_stride;
            for jl in 0..8 {
                let jj = (8 * m + jl).min(geo.c_real_rows - 1);
                let a = 2 * jj - 16 * m;
                let b = (2 * jj + 1).min(h - 1) - 16 * m;
                for (full, out) in [(&cb_full, &mut *cbc), (&cr_full, &mut *crc)] {
                    downsample_row(
                        &full[a * fw..][..fw],
                        &full[b * fw..][..fw],
                        &mut out[jl * cs..][..cs],
                    );
                }
            }
        }
    }
    for strip in yc.chunks_exact_mut(8 * geo.y_stride) {
        compress_strip(strip, geo.y_stride, luma);
    }
    for plane in [cbc, crc] {
        for strip in plane.chunks_exact_mut(8 * geo.c_stride) {
            compress_strip(strip, geo.c_stride, chroma);
        }
    }
}

/// One source row (`w` RGB pixels) → Y, Cb, Cr rows as `rgb_ycc_convert` computes them, each replicated
/// from its last real sample to the end of its (longer) destination row.
#[inline(always)]
fn convert_row(src: &[u8], y: &mut [u8], cb: &mut [u8], cr: &mut [u8]) {
    let w = src.len() / 3;
    for (i, p) in src.chunks_exact(3).enumerate() {
        let (r, g, b) = (i32::from(p[0]), i32::from(p[1]), i32::from(p[2]));
        y[i] = ((fix(0.29900) * r + fix(0.58700) * g + fix(0.11400) * b + ONE_HALF) >> SCALEBITS)
            as u8;
        cb[i] = ((-fix(0.16874) * r - fix(0.33126) * g + fix(0.50000) * b + CBCR_OFFSET + ONE_HALF
            - 1)
            >> SCALEBITS) as u8;
        cr[i] = ((fix(0.50000) * r - fix(0.41869) * g - fix(0.08131) * b + CBCR_OFFSET + ONE_HALF
            - 1)
            >> SCALEBITS) as u8;
    }
    for row in [y, cb, cr] {
        let last = row[w - 1];
        row[w..].fill(last);
    }
}

/// `h2v2_downsample` of one output row from two full-resolution rows of `2·out.len()` samples:
/// `(a + b + c + d + bias) >> 2`, bias 1 on even and 2 on odd output columns.
#[inline(always)]
fn downsample_row(r0: &[u8], r1: &[u8], out: &mut [u8]) {
    for (i, ((o, a), b)) in out
        .iter_mut()
        .zip(r0.chunks_exact(2))
        .zip(r1.chunks_exact(2))
        .enumerate()
    {
        let sum = u16::from(a[0]) + u16::from(a[1]) + u16::from(b[0]) + u16::from(b[1]);
        *o = ((sum + 1 + (i as u16 & 1)) >> 2) as u8;
    }
}

/// 8 rows of 8 lanes of `i32`: the 1-D DCT passes run down the rows, all 8 lanes at once.
type Block = [[i32; 8]; 8];

/// One strip of 8 rows (`stride` samples each, a multiple of 8): every block through the forward DCT,
/// quantisation, dequantisation and inverse DCT, in place. Same integer operations as
/// `fdct_islow`, `Divisor::quantize` and `idct_islow`, on up to 8 blocks at once: lane `b` of
/// every vector belongs to block `b`, so both 1-D passes of both transforms run across blocks with no
/// transposition (a pass along a block's columns just takes the 8 row vectors of one column).
#[inline(always)]
fn compress_strip(strip: &mut [u8], stride: usize, q: &Quantiser) {
    let blocks = stride / 8;
    for first in (0..blocks).step_by(8) {
        let n = (blocks - first).min(8);
        // v[r][c][b] = sample (r, c) of block `first + b`, centred.
        let mut v: [Block; 8] = [[[0; 8]; 8]; 8];
        for (r, vr) in v.iter_mut().enumerate() {
            let row = &strip[r * stride + 8 * first..][..8 * n];
            for (b, block) in row.chunks_exact(8).enumerate() {
                for c in 0..8 {
                    vr[c][b] = i32::from(block[c]) - 128;
                }
            }
        }
        for vr in v.iter_mut() {
            *vr = fdct_lanes(vr, true); // along each row: v[r][k]
        }
        // Along each column: v[vertical frequency][horizontal frequency].
        columns(&mut v, |col| fdct_lanes(col, false));
        for (r, vr) in v.iter_mut().enumerate() {
            for (c, x) in vr.iter_mut().enumerate() {
                *x = q.round_trip(r * 8 + c, x);
            }
        }
        columns(&mut v, |col| idct_lanes(col, CONST_BITS - PASS1_BITS));
        for vr in v.iter_mut() {
            *vr = idct_lanes(vr, CONST_BITS + PASS1_BITS + 3); // v[r][c] = sample
        }
        for (r, vr) in v.iter().enumerate() {
            let row = &mut strip[r * stride + 8 * first..][..8 * n];
            for (b, block) in row.chunks_exact_mut(8).enumerate() {
                for c in 0..8 {
                    block[c] = (vr[c][b] + 128).clamp(0, 255) as u8;
                }
            }
        }
    }
}

/// Applies a 1-D pass to every column of 8 lane-blocks (`v[row][col]`): the column's 8 row vectors in,
/// its 8 outputs back in place.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // a column of a 3-D array: indices are the clearest
fn columns(v: &mut [Block; 8], pass: impl Fn(&Block) -> Block) {
    for c in 0..8 {
        let out = pass(&std::array::from_fn(|r| v[r][c]));
        for r in 0..8 {
            v[r][c] = out[r];
        }
    }
}

/// `fdct_1d` on the 8 rows of `d`, every lane independently.
#[inline(always)]
fn fdct_lanes(d: &Block, pass1: bool) -> Block {
    let mut o: Block = [[0; 8]; 8];
    for l in 0..8 {
        let tmp0 = d[0][l] + d[7][l];
        let tmp7 = d[0][l] - d[7][l];
        let tmp1 = d[1][l] + d[6][l];
        let tmp6 = d[1][l] - d[6][l];
        let tmp2 = d[2][l] + d[5][l];
        let tmp5 = d[2][l] - d[5][l];
        let tmp3 = d[3][l] + d[4][l];
        let tmp4 = d[3][l] - d[4][l];

        let tmp10 = tmp0 + tmp3;
        let tmp13 = tmp0 - tmp3;
        let tmp11 = tmp1 + tmp2;
        let tmp12 = tmp1 - tmp2;

        let shift = if pass1 {
            o[0][l] = (tmp10 + tmp11) << PASS1_BITS;
            o[4][l] = (tmp10 - tmp11) << PASS1_BITS;
            CONST_BITS - PASS1_BITS
        } else {
            o[0][l] = descale(tmp10 + tmp11, PASS1_BITS);
            o[4][l] = descale(tmp10 - tmp11, PASS1_BITS);
            CONST_BITS + PASS1_BITS
        };
        let z1 = (tmp12 + tmp13) * FIX_0_541196100;
        o[2][l] = descale(z1 + tmp13 * FIX_0_765366865, shift);
        o[6][l] = descale(z1 + tmp12 * -FIX_1_847759065, shift);

        let z1 = tmp4 + tmp7;
        let z2 = tmp5 + tmp6;
        let z3 = tmp4 + tmp6;
        let z4 = tmp5 + tmp7;
        let z5 = (z3 + z4) * FIX_1_175875602;
        let tmp4 = tmp4 * FIX_0_298631336;
        let tmp5 = tmp5 * FIX_2_053119869;
        let tmp6 = tmp6 * FIX_3_072711026;
        let tmp7 = tmp7 * FIX_1_501321110;
        let z1 = z1 * -FIX_0_899976223;
        let z2 = z2 * -FIX_2_562915447;
        let z3 = z3 * -FIX_1_961570560 + z5;
        let z4 = z4 * -FIX_0_390180644 + z5;
        o[7][l] = descale(tmp4 + z1 + z3, shift);
        o[5][l] = descale(tmp5 + z2 + z4, shift);
        o[3][l] = descale(tmp6 + z2 + z3, shift);
        o[1][l] = descale(tmp7 + z1 + z4, shift);
    }
    o
}

/// `idct_1d` on the 8 rows of `i` (already dequantised), every lane independently, descaled by
/// `shift`. (libjpeg's shortcuts for all-zero AC inputs give the same values, so there are none.)
#[inline(always)]
fn idct_lanes(i: &Block, shift: u32) -> Block {
    let mut o: Block = [[0; 8]; 8];
    for l in 0..8 {
        let z2 = i[2][l];
        let z3 = i[6][l];
        let z1 = (z2 + z3) * FIX_0_541196100;
        let tmp2 = z1 + z3 * -FIX_1_847759065;
        let tmp3 = z1 + z2 * FIX_0_765366865;
        let tmp0 = (i[0][l] + i[4][l]) << CONST_BITS;
        let tmp1 = (i[0][l] - i[4][l]) << CONST_BITS;
        let tmp10 = tmp0 + tmp3;
        let tmp13 = tmp0 - tmp3;
        let tmp11 = tmp1 + tmp2;
        let tmp12 = tmp1 - tmp2;

        let (tmp3, tmp2, tmp1, tmp0) = (i[1][l], i[3][l], i[5][l], i[7][l]);
        let z4 = tmp1 + tmp3;
        let z3 = tmp0 + tmp2;
        let z2 = tmp1 + tmp2;
        let z1 = tmp0 + tmp3;
        let z5 = (z3 + z4) * FIX_1_175875602;
        let tmp3 = tmp3 * FIX_1_501321110;
        let tmp2 = tmp2 * FIX_3_072711026;
        let tmp1 = tmp1 * FIX_2_053119869;
        let tmp0 = tmp0 * FIX_0_298631336;
        let z4 = z4 * -FIX_0_390180644 + z5;
        let z3 = z3 * -FIX_1_961570560 + z5;
        let z1 = z1 * -FIX_0_899976223;
        let z2 = z2 * -FIX_2_562915447;
        let tmp3 = tmp3 + z1 + z4;
        let tmp2 = tmp2 + z2 + z3;
        let tmp1 = tmp1 + z2 + z4;
        let tmp0 = tmp0 + z1 + z3;

        o[0][l] = descale(tmp10 + tmp3, shift);
        o[1][l] = descale(tmp11 + tmp2, shift);
        o[2][l] = descale(tmp12 + tmp1, shift);
        o[3][l] = descale(tmp13 + tmp0, shift);
        o[4][l] = descale(tmp13 - tmp0, shift);
        o[5][l] = descale(tmp12 - tmp1, shift);
        o[6][l] = descale(tmp11 - tmp2, shift);
        o[7][l] = descale(tmp10 - tmp3, shift);
    }
    o
}

/// One quantisation table prepared for lane-parallel use: [`Divisor`]'s reciprocal, correction and shift
/// per coefficient (natural order), and the step itself for dequantisation. Crate-visible for the GPU
/// round trip (`gpu::jpeg`, docs/gpu.md#gpu-resident-scenarios), which uploads these same numbers.
#[derive(Debug, Clone)]
pub(crate) struct Quantiser {
    /// `Divisor::recip` per coefficient.
    pub(crate) recip: [u32; 64],
    /// `Divisor::corr` per coefficient.
    pub(crate) corr: [u32; 64],
    /// `Divisor::shift` per coefficient.
    pub(crate) shift: [u32; 64],
    /// The quantisation step per coefficient.
    pub(crate) step: [i32; 64],
}

impl Quantiser {
    /// The quantiser of `table` (a [`quant_table`]; divisors are 8 × its steps, the islow scale).
    pub(crate) fn new(table: &[u16; 64]) -> Self {
        let d = table.map(|q| Divisor::new(q * 8));
        Self {
            recip: d.map(|d| d.recip),
            corr: d.map(|d| d.corr),
            shift: d.map(|d| d.shift),
            step: table.map(i32::from),
        }
    }

    /// Coefficient `i` (natural order) of 8 blocks quantised then dequantised: `round(t / (8·q))·q` with
    /// libjpeg-turbo's reciprocal rounding (`Divisor::quantize`; `(|t| + corr)·recip < 2³¹` for every
    /// DCT output, so 32-bit unsigned arithmetic is exact).
    #[inline(always)]
    fn round_trip(&self, i: usize, t: &[i32; 8]) -> [i32; 8] {
        let (recip, corr, shift, step) = (self.recip[i], self.corr[i], self.shift[i], self.step[i]);
        std::array::from_fn(|l| {
            let a = t[l].unsigned_abs() + corr;
            let q = (a.wrapping_mul(recip) >> shift) as i32;
            (if t[l] < 0 { -q } else { q }) * step
        })
    }
}

// ---------------------------------------------------------------------------------------------------------
// Decoder side: upsampling and colour conversion, a band of output rows at a time.

crate::kernels::multiversion! {
    /// Output rows `y0 ..` (as many as `out` holds, `3w` bytes each) from the reconstructed planes
    /// `[Y, Cb, Cr]`. Compiled for AVX2 where the CPU has it.
    fn decode_rows(geo: &Geometry, planes: [&[u8]; 3], y0: usize, out: &mut [u8]);
    /// [`decode_rows`] with AVX-512F and AVX-512BW enabled (integer code: identical results).
    decode_rows_avx512 ["avx512f", "avx512bw"] => decode_rows_body;
    /// [`decode_rows`] with AVX2 enabled.
    decode_rows_avx2 ["avx2"] => decode_rows_body;
    _ => decode_rows_body;
    levels decode_rows_at;
}

/// The body of [`decode_rows`].
#[inline(always)]
fn decode_rows_body(geo: &Geometry, [yp, cbp, crp]: [&[u8]; 3], y0: usize, out: &mut [u8]) {
    let w = geo.w;
    // Upsampled rows are computed 2 samples per chroma sample, so they may run one past `w`.
    let up_len = 2 * geo.c_real_cols;
    let mut cb_row = vec![0u8; up_len.max(w)];
    let mut cr_row = vec![0u8; up_len.max(w)];
    let mut colsum = vec![0u16; geo.c_real_cols];
    for (i, row) in out.chunks_exact_mut(w * 3).enumerate() {
        let y = y0 + i;
        match geo.sampling {
            Subsampling::Yuv420 => {
                upsample_row_h2v2(cbp, geo, y, &mut cb_row, &mut colsum);
                upsample_row_h2v2(crp, geo, y, &mut cr_row, &mut colsum);
            }
            #[cfg(test)]
            Subsampling::Yuv444 => {
                cb_row[..w].copy_from_slice(&cbp[y * geo.c_stride..][..w]);
                cr_row[..w].copy_from_slice(&crp[y * geo.c_stride..][..w]);
            }
        }
        ycc_to_rgb_row(
            &yp[y * geo.y_stride..][..w],
            &cb_row[..w],
            &cr_row[..w],
            row,
        );
    }
}

/// Output row `y` of a 2×2-subsampled chroma plane, upsampled into `out[..2·c_real_cols]` as
/// libjpeg-turbo does: `h2v2_fancy_upsample` (weights 9/16, 3/16, 3/16, 1/16, rounding +8 / +7
/// alternating by column; context rows above the first and below the last real row replicate it) when
/// the plane has more than 2 real columns, otherwise `h2v2_upsample` (each sample copied 2×2).
/// `colsum` holds `c_real_cols` scratch values.
#[inline(always)]
fn upsample_row_h2v2(plane: &[u8], geo: &Geometry, y: usize, out: &mut [u8], colsum: &mut [u16]) {
    let dw = geo.c_real_cols;
    let near = y / 2;
    let row = |j: usize| &plane[j * geo.c_stride..][..dw];
    if dw <= 2 {
        for (x, o) in out[..2 * dw].iter_mut().enumerate() {
            *o = row(near)[x / 2];
        }
        return;
    }
    let far = if y.is_multiple_of(2) {
        near.saturating_sub(1)
    } else {
        (near + 1).min(geo.c_real_rows - 1)
    };
    for ((s, &a), &b) in colsum.iter_mut().zip(row(near)).zip(row(far)) {
        *s = 3 * u16::from(a) + u16::from(b);
    }
    // Output pair (2i, 2i + 1) from column sums i − 1, i, i + 1; the edges use 4 · this.
    out[0] = ((colsum[0] * 4 + 8) >> 4) as u8;
    out[1] = ((colsum[0] * 3 + colsum[1] + 7) >> 4) as u8;
    let inner = &mut out[2..2 * dw - 2];
    for (i, pair) in inner.chunks_exact_mut(2).enumerate() {
        let (left, this, right) = (colsum[i], colsum[i + 1], colsum[i + 2]);
        pair[0] = ((this * 3 + left + 8) >> 4) as u8;
        pair[1] = ((this * 3 + right + 7) >> 4) as u8;
    }
    out[2 * dw - 2] = ((colsum[dw - 1] * 3 + colsum[dw - 2] + 8) >> 4) as u8;
    out[2 * dw - 1] = ((colsum[dw - 1] * 4 + 7) >> 4) as u8;
}

/// `ycc_rgb_convert` of one row into interleaved RGB, with the table entries computed arithmetically:
/// `R = Y + ((FIX(1.402)·Cr' + ½) >> 16)`, `G = Y + ((−FIX(0.34414)·Cb' + ½ − FIX(0.71414)·Cr') >> 16)`,
/// `B = Y + ((FIX(1.772)·Cb' + ½) >> 16)` with `Cb' = Cb − 128`, `Cr' = Cr − 128`, clamped to 0..=255.
#[inline(always)]
fn ycc_to_rgb_row(y: &[u8], cb: &[u8], cr: &[u8], out: &mut [u8]) {
    for (((px, &y), &cb), &cr) in out.chunks_exact_mut(3).zip(y).zip(cb).zip(cr) {
        let (y, cb, cr) = (i32::from(y), i32::from(cb) - 128, i32::from(cr) - 128);
        let r = y + ((fix(1.40200) * cr + ONE_HALF) >> SCALEBITS);
        let g = y + ((-fix(0.34414) * cb + ONE_HALF - fix(0.71414) * cr) >> SCALEBITS);
        let b = y + ((fix(1.77200) * cb + ONE_HALF) >> SCALEBITS);
        px[0] = r.clamp(0, 255) as u8;
        px[1] = g.clamp(0, 255) as u8;
        px[2] = b.clamp(0, 255) as u8;
    }
}

// ---------------------------------------------------------------------------------------------------------
// Colour conversion constants (jccolor.c, jdcolor.c): 16-bit fixed point.

/// Fractional bits of the colour-conversion constants.
const SCALEBITS: u32 = 16;
/// ½ in that fixed point.
const ONE_HALF: i32 = 1 << (SCALEBITS - 1);
/// Chroma offset (128) in that fixed point.
const CBCR_OFFSET: i32 = 128 << SCALEBITS;

/// libjpeg's `FIX(x)`: `(x · 2¹⁶ + 0.5)` truncated.
const fn fix(x: f64) -> i32 {
    (x * (1u32 << SCALEBITS) as f64 + 0.5) as i32
}

// ---------------------------------------------------------------------------------------------------------
// DCT and quantisation (jfdctint.c, jcdctmgr.c, jidctint.c): "islow", 13-bit constants, 2 extra bits
// between the passes.

const CONST_BITS: u32 = 13;
const PASS1_BITS: u32 = 2;
const FIX_0_298631336: i32 = 2446;
const FIX_0_390180644: i32 = 3196;
const FIX_0_541196100: i32 = 4433;
const FIX_0_765366865: i32 = 6270;
const FIX_0_899976223: i32 = 7373;
const FIX_1_175875602: i32 = 9633;
const FIX_1_501321110: i32 = 12299;
const FIX_1_847759065: i32 = 15137;
const FIX_1_961570560: i32 = 16069;
const FIX_2_053119869: i32 = 16819;
const FIX_2_562915447: i32 = 20995;
const FIX_3_072711026: i32 = 25172;

/// libjpeg's `DESCALE`: shift right by `n` rounding half up (arithmetic shift).
#[inline(always)]
fn descale(x: i32, n: u32) -> i32 {
    (x + (1 << (n - 1))) >> n
}

/// One 1-D pass of `jpeg_fdct_islow` on 8 values. Pass 1 (rows) leaves the outputs scaled up by
/// `PASS1_BITS`; pass 2 (columns) removes that scaling, leaving the overall ×8 of the islow DCT.
#[inline(always)]
#[cfg(test)]
fn fdct_1d(d: [i32; 8], pass1: bool) -> [i32; 8] {
    let tmp0 = d[0] + d[7];
    let tmp7 = d[0] - d[7];
    let tmp1 = d[1] + d[6];
    let tmp6 = d[1] - d[6];
    let tmp2 = d[2] + d[5];
    let tmp5 = d[2] - d[5];
    let tmp3 = d[3] + d[4];
    let tmp4 = d[3] - d[4];

    let tmp10 = tmp0 + tmp3;
    let tmp13 = tmp0 - tmp3;
    let tmp11 = tmp1 + tmp2;
    let tmp12 = tmp1 - tmp2;

    let mut o = [0i32; 8];
    let shift = if pass1 {
        o[0] = (tmp10 + tmp11) << PASS1_BITS;
        o[4] = (tmp10 - tmp11) << PASS1_BITS;
        CONST_BITS - PASS1_BITS
    } else {
        o[0] = descale(tmp10 + tmp11, PASS1_BITS);
        o[4] = descale(tmp10 - tmp11, PASS1_BITS);
        CONST_BITS + PASS1_BITS
    };
    let z1 = (tmp12 + tmp13) * FIX_0_541196100;
    o[2] = descale(z1 + tmp13 * FIX_0_765366865, shift);
    o[6] = descale(z1 + tmp12 * -FIX_1_847759065, shift);

    let z1 = tmp4 + tmp7;
    let z2 = tmp5 + tmp6;
    let z3 = tmp4 + tmp6;
    let z4 = tmp5 + tmp7;
    let z5 = (z3 + z4) * FIX_1_175875602;
    let tmp4 = tmp4 * FIX_0_298631336;
    let tmp5 = tmp5 * FIX_2_053119869;
    let tmp6 = tmp6 * FIX_3_072711026;
    let tmp7 = tmp7 * FIX_1_501321110;
    let z1 = z1 * -FIX_0_899976223;
    let z2 = z2 * -FIX_2_562915447;
    let z3 = z3 * -FIX_1_961570560 + z5;
    let z4 = z4 * -FIX_0_390180644 + z5;
    o[7] = descale(tmp4 + z1 + z3, shift);
    o[5] = descale(tmp5 + z2 + z4, shift);
    o[3] = descale(tmp6 + z2 + z3, shift);
    o[1] = descale(tmp7 + z1 + z4, shift);
    o
}

/// `jpeg_fdct_islow`: forward DCT of centred samples (value − 128) in place, rows then columns; outputs
/// are scaled by 8.
#[cfg(test)]
fn fdct_islow(d: &mut [i32; 64]) {
    for row in d.chunks_exact_mut(8) {
        let r: [i32; 8] = std::array::from_fn(|k| row[k]);
        row.copy_from_slice(&fdct_1d(r, true));
    }
    for col in 0..8 {
        let c = fdct_1d(std::array::from_fn(|k| d[k * 8 + col]), false);
        for (k, v) in c.into_iter().enumerate() {
            d[k * 8 + col] = v;
        }
    }
}

/// libjpeg-turbo's quantiser for one divisor (`compute_reciprocal`): a 16-bit reciprocal, a rounding
/// correction and a shift such that `q = ((|t| + corr) · recip) >> shift` (sign restored) — the rounded
/// division `t / divisor` that both its C and SIMD quantisers compute.
#[derive(Debug, Clone, Copy)]
struct Divisor {
    recip: u32,
    corr: u32,
    shift: u32,
}

impl Divisor {
    /// `divisor` = quantisation step × 8 (the islow DCT's scale), so ≥ 8 and ≤ 2040 here.
    fn new(divisor: u16) -> Self {
        let divisor = u32::from(divisor.max(2));
        let b = 31 - divisor.leading_zeros(); // index of the highest set bit
        let mut r = 16 + b;
        let mut fq = (1u32 << r) / divisor;
        let fr = (1u32 << r) % divisor;
        let mut c = divisor / 2;
        if fr == 0 {
            fq >>= 1;
            r -= 1;
        } else if fr <= divisor / 2 {
            c += 1;
        } else {
            fq += 1;
        }
        Self {
            recip: fq,
            corr: c,
            shift: r,
        }
    }

    /// The quantised value of `t` (scalar form; [`Quantiser::round_trip`] is its lane-parallel use).
    #[cfg(test)]
    fn quantize(self, t: i32) -> i32 {
        let q = ((t.unsigned_abs() + self.corr) as u64 * u64::from(self.recip)) >> self.shift;
        if t < 0 { -(q as i32) } else { q as i32 }
    }
}

/// `jpeg_idct_islow`: dequantise `coef` by `quant` and inverse-DCT to 64 samples, range-limited to 0..=255
/// (saturating, as libjpeg-turbo's SIMD IDCT; see the module notes).
#[cfg(test)]
fn idct_islow(coef: &[i32; 64], quant: &[i32; 64]) -> [u8; 64] {
    let mut ws = [0i32; 64];
    // Pass 1: columns, from the coefficients into the workspace.
    for col in 0..8 {
        let c = |k: usize| coef[k * 8 + col] * quant[k * 8 + col];
        if (1..8).all(|k| coef[k * 8 + col] == 0) {
            let dc = c(0) << PASS1_BITS;
            for k in 0..8 {
                ws[k * 8 + col] = dc;
            }
            continue;
        }
        let out = idct_1d(
            [c(0), c(1), c(2), c(3), c(4), c(5), c(6), c(7)],
            CONST_BITS - PASS1_BITS,
        );
        for (k, v) in out.into_iter().enumerate() {
            ws[k * 8 + col] = v;
        }
    }
    // Pass 2: rows, from the workspace to samples.
    let mut out = [0u8; 64];
    let limit = |v: i32| (v + 128).clamp(0, 255) as u8;
    for row in 0..8 {
        let w = &ws[row * 8..][..8];
        let o = &mut out[row * 8..][..8];
        if w[1..].iter().all(|&v| v == 0) {
            o.fill(limit(descale(w[0], PASS1_BITS + 3)));
            continue;
        }
        let vals = idct_1d(
            [w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]],
            CONST_BITS + PASS1_BITS + 3,
        );
        for (dst, v) in o.iter_mut().zip(vals) {
            *dst = limit(v);
        }
    }
    out
}

/// One 1-D pass of `jpeg_idct_islow` on 8 (dequantised) inputs, descaled by `shift`.
#[inline(always)]
#[cfg(test)]
fn idct_1d(i: [i32; 8], shift: u32) -> [i32; 8] {
    // Even part.
    let z2 = i[2];
    let z3 = i[6];
    let z1 = (z2 + z3) * FIX_0_541196100;
    let tmp2 = z1 + z3 * -FIX_1_847759065;
    let tmp3 = z1 + z2 * FIX_0_765366865;
    let tmp0 = (i[0] + i[4]) << CONST_BITS;
    let tmp1 = (i[0] - i[4]) << CONST_BITS;
    let tmp10 = tmp0 + tmp3;
    let tmp13 = tmp0 - tmp3;
    let tmp11 = tmp1 + tmp2;
    let tmp12 = tmp1 - tmp2;
    // Odd part.
    let (tmp3, tmp2, tmp1, tmp0) = (i[1], i[3], i[5], i[7]);
    let z4 = tmp1 + tmp3;
    let z3 = tmp0 + tmp2;
    let z2 = tmp1 + tmp2;
    let z1 = tmp0 + tmp3;
    let z5 = (z3 + z4) * FIX_1_175875602;
    let mut tmp3 = tmp3 * FIX_1_501321110;
    let mut tmp2 = tmp2 * FIX_3_072711026;
    let mut tmp1 = tmp1 * FIX_2_053119869;
    let mut tmp0 = tmp0 * FIX_0_298631336;
    let z4 = z4 * -FIX_0_390180644 + z5;
    let z3 = z3 * -FIX_1_961570560 + z5;
    let z1 = z1 * -FIX_0_899976223;
    let z2 = z2 * -FIX_2_562915447;
    tmp3 += z1 + z4;
    tmp2 += z2 + z3;
    tmp1 += z2 + z4;
    tmp0 += z1 + z3;
    [
        descale(tmp10 + tmp3, shift),
        descale(tmp11 + tmp2, shift),
        descale(tmp12 + tmp1, shift),
        descale(tmp13 + tmp0, shift),
        descale(tmp13 - tmp0, shift),
        descale(tmp12 - tmp1, shift),
        descale(tmp11 - tmp2, shift),
        descale(tmp10 - tmp3, shift),
    ]
}

#[cfg(test)]
mod tests;
