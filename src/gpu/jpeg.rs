//! The JPEG round trip on the GPU (`cuda/jpeg.cu`; docs/gpu.md#gpu-resident-scenarios): the same
//! bytes as [`crate::kernels::jpeg::roundtrip`] (Pillow/libjpeg-turbo's lossy stages, 4:2:0,
//! islow DCT, fancy upsampling), for the `jpeg_compression` corruption and for variants stored as
//! JPEG (`stored_as_jpeg`, docs/imagenet-c.md#jpeg_compression).

use super::GpuError;
use super::launch::{Args, DeviceImage, Launcher};
use crate::kernels::jpeg::{self as cpu, STD_CHROMA_QUANT, STD_LUMA_QUANT};

/// Scratch slot of the DCT coefficients (one `i32` per plane sample).
const COEF_SLOT: usize = 0;
/// Scratch slot of the reconstructed Y, Cb, Cr planes (one byte per sample).
const PLANES_SLOT: usize = 1;

/// Writes `src` compressed as Pillow's `save(…, "JPEG", quality=quality)` followed by `open`
/// would return it into `dst` (same size; `src` and `dst` may be the same buffer): four launches,
/// two scratch buffers (slots 0 and 1) and one constant table per quality. An empty image is left
/// as it is.
pub(crate) fn roundtrip<L: Launcher>(
    l: &mut L,
    src: DeviceImage,
    dst: DeviceImage,
    quality: u8,
) -> Result<(), GpuError> {
    if (src.width, src.height) != (dst.width, dst.height) {
        return Err(GpuError::Launch(format!(
            "jpeg round trip: {}×{} into {}×{}",
            src.width, src.height, dst.width, dst.height
        )));
    }
    let (w, h) = (u64::from(src.width), u64::from(src.height));
    if w == 0 || h == 0 {
        return Ok(());
    }
    // The planes, padded as libjpeg lays them out (the CPU kernel's `Geometry`, 4:2:0).
    let luma = w.div_ceil(8) * 8 * h.div_ceil(8) * 8;
    let chroma = w.div_ceil(16) * 8 * h.div_ceil(16) * 8;
    let samples = luma + 2 * chroma;
    let rows = samples / 8; // (block, row) elements: 8 per block of 64 samples
    // The kernels index samples and pixels in 32 bits (a 25,000 × 25,000 image still fits).
    let too_big = || GpuError::Launch(format!("jpeg round trip: {w}×{h} is too large"));
    if samples >= 1 << 31 {
        return Err(too_big());
    }
    let coef = l.scratch(
        COEF_SLOT,
        usize::try_from(samples * 4).map_err(|_| too_big())?,
    )?;
    let planes = l.scratch(
        PLANES_SLOT,
        usize::try_from(samples).map_err(|_| too_big())?,
    )?;
    let quant = l.constant(&format!("jpeg/quant/{quality}"), &mut || {
        quantisers(quality)
    })?;
    let args = Args::buffers(&[
        l.address(src.buf),
        l.address(dst.buf),
        l.address(coef),
        l.address(planes),
        l.address(quant),
    ])
    .ints(&[w as i64, h as i64]);
    l.launch("rs_jpeg_forward_rows", rows, &args)?;
    l.launch("rs_jpeg_quant_cols", rows, &args)?;
    l.launch("rs_jpeg_inverse_rows", rows, &args)?;
    l.launch("rs_jpeg_decode", w * h, &args)
}

/// The quantisers of `quality` as `rs_jpeg_quant_cols` reads them: luma then chroma, each
/// `recip[64]`, `corr[64]`, `shift[64]`, `step[64]` as little-endian `u32`, the CPU kernel's own
/// numbers.
fn quantisers(quality: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 * 256 * 4);
    for base in [&STD_LUMA_QUANT, &STD_CHROMA_QUANT] {
        let q = cpu::Quantiser::new(&cpu::quant_table(base, quality));
        let step = q.step.map(|s| s as u32);
        for table in [&q.recip, &q.corr, &q.shift, &step] {
            out.extend(table.iter().flat_map(|v| v.to_le_bytes()));
        }
    }
    out
}
