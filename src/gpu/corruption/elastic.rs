//! elastic_transform (`cuda/elastic.cu`; CPU: `scenario/corruption/elastic.rs`,
//! docs/gpu.md#gpu-resident-scenarios): the raw displacement fields drawn into scratch, then the
//! deterministic part (smoothing, resampling), which the tests also run on the CPU's own fields.

use super::Job;
use crate::gpu::GpuError;
use crate::gpu::launch::{Args, Buf, DeviceImage, Launcher};
use crate::kernels::gaussian;
use crate::scenario::corruption::elastic;

/// `rs_border_index`'s code for half-sample symmetric borders (scipy 'reflect').
const REFLECT: i64 = 1;

pub(super) fn corrupt<L: Launcher>(l: &mut L, j: &Job) -> Result<(), GpuError> {
    let (w, h) = (j.src.width as usize, j.src.height as usize);
    let field = l.scratch(0, 2 * w * h * 8)?;
    let max_d = elastic::ELASTIC_NOISE_FRACTION * h as f64;
    let args = Args::buffers(&[l.address(field)])
        .ints(&[(w * h) as i64, j.key.0 as i64])
        .doubles(&[max_d]);
    l.launch("rs_elastic_field", (w * h) as u64, &args)?;
    warp(l, j.src, j.dst, field, elastic::ELASTIC_ALPHA[j.s])
}

/// The Gaussian kernel of σ (scipy's, one tap of weight 1 for σ ≤ 0) as a constant.
fn gaussian_constant<L: Launcher>(
    l: &mut L,
    sigma: f64,
    truncate: f64,
) -> Result<(Buf, i64), GpuError> {
    let k = if sigma > 0.0 {
        gaussian::gaussian_kernel1d(sigma, truncate)
    } else {
        vec![1.0]
    };
    let radius = (k.len() / 2) as i64;
    let name = format!(
        "elastic/gaussian/{:016x}/{:016x}",
        sigma.to_bits(),
        truncate.to_bits()
    );
    let buf = l.constant(&name, &mut || {
        k.iter().flat_map(|v| v.to_le_bytes()).collect()
    })?;
    Ok((buf, radius))
}

/// elastic_transform's deterministic part: the raw fields in `field` (`[dx, dy]` doubles per
/// pixel) smoothed with σ = (0.01·H, 0.01·W), reflect, truncate 3 (rows, then columns, through
/// scratch slot 1 into slot 2; `field` is not changed), then `src` resampled at the displacements
/// ×`alpha` into `dst`.
pub(crate) fn warp<L: Launcher>(
    l: &mut L,
    src: DeviceImage,
    dst: DeviceImage,
    field: Buf,
    alpha: f64,
) -> Result<(), GpuError> {
    let (w, h) = (src.width as usize, src.height as usize);
    let values = (2 * w * h) as u64;
    let sy = elastic::ELASTIC_SIGMA_FRACTION * h as f64;
    let sx = elastic::ELASTIC_SIGMA_FRACTION * w as f64;
    let (ky, ry) = gaussian_constant(l, sy, elastic::ELASTIC_TRUNCATE)?;
    let (kx, rx) = gaussian_constant(l, sx, elastic::ELASTIC_TRUNCATE)?;
    let tmp = l.scratch(1, 2 * w * h * 8)?;
    let smooth = l.scratch(2, 2 * w * h * 8)?;
    let (field, tmp, smooth) = (l.address(field), l.address(tmp), l.address(smooth));
    let dims = [w as i64, h as i64, 2];
    let args =
        Args::buffers(&[field, tmp, l.address(ky)]).ints(&[dims[0], dims[1], 2, ry, REFLECT]);
    l.launch("rs_filter_rows_sym", values, &args)?;
    let args =
        Args::buffers(&[tmp, smooth, l.address(kx)]).ints(&[dims[0], dims[1], 2, rx, REFLECT]);
    l.launch("rs_filter_cols_sym", values, &args)?;
    let args = Args::buffers(&[l.address(src.buf), l.address(dst.buf), smooth])
        .ints(&[dims[0], dims[1]])
        .doubles(&[alpha]);
    l.launch("rs_elastic_resample", (w * h) as u64, &args)
}
