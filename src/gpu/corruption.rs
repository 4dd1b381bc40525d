//! The ImageNet-C corruptions on the GPU: for each corruption with kernels, the sequence of launches
//! that turns a frame's RGB bytes into the variant's, with the severity parameters of the CPU
//! kernels (`scenario/corruption/`), so both paths read the same tables.
//!
//! An image on the device is `width × height × 3` bytes, RGB interleaved, rows packed.

use super::GpuError;
use super::launch::{Args, Buf, Launcher, REDUCE_THREADS};
use crate::rng::RngKey;
use crate::scenario::corruption::{digital, noise};

/// An RGB image in a launcher's buffer.
#[derive(Debug, Clone, Copy)]
pub struct DeviceImage {
    /// `width × height × 3` bytes.
    pub buf: Buf,
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
}

impl DeviceImage {
    /// Elements (bytes) of the image.
    pub fn elements(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height) * 3
    }
}

/// Whether `name` (an ImageNet-C corruption) has GPU kernels.
pub fn on_gpu(name: &str) -> bool {
    matches!(name, "gaussian_noise" | "contrast")
}

/// Writes corruption `name` at `severity` (1..=5) of `src` into `dst` (same size); `Ok(false)`
/// when the corruption has no GPU kernels ([`on_gpu`]), leaving `dst` untouched.
pub fn corrupt<L: Launcher>(
    l: &mut L,
    name: &str,
    severity: u8,
    src: DeviceImage,
    dst: DeviceImage,
    key: RngKey,
) -> Result<bool, GpuError> {
    if (src.width, src.height) != (dst.width, dst.height) || !(1..=5).contains(&severity) {
        return Err(GpuError::Launch(format!(
            "{name}/{severity}: {}×{} into {}×{}",
            src.width, src.height, dst.width, dst.height
        )));
    }
    let s = usize::from(severity - 1);
    let n = src.elements();
    let bufs = [l.address(src.buf), l.address(dst.buf)];
    match name {
        "gaussian_noise" => {
            let args = Args::buffers(&bufs)
                .ints(&[n as i64, key.0 as i64])
                .floats(&[noise::GAUSSIAN_SIGMA[s] as f32]);
            l.launch("rs_gaussian_noise", n.div_ceil(4), &args)?;
        }
        "contrast" => {
            let pixels = n / 3;
            let sums = l.scratch(0, 3 * 8)?;
            l.zero(sums, 3 * 8)?;
            let luts = l.scratch(1, 768)?;
            let (sums_at, luts_at) = (l.address(sums), l.address(luts));
            let args = Args::buffers(&[bufs[0], sums_at]).ints(&[pixels as i64]);
            l.launch("rs_channel_sums", pixels.min(REDUCE_THREADS), &args)?;
            let args = Args::buffers(&[sums_at, luts_at])
                .ints(&[pixels as i64])
                .doubles(&[digital::CONTRAST_FACTOR[s]]);
            l.launch("rs_contrast_luts", 768, &args)?;
            let args = Args::buffers(&[bufs[0], bufs[1], luts_at]).ints(&[n as i64]);
            l.launch("rs_apply_channel_luts", n, &args)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}
