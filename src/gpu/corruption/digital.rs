//! Digital corruptions (`cuda/digital.cu`; CPU: `scenario/corruption/digital.rs`).

use super::Job;
use crate::gpu::GpuError;
use crate::gpu::launch::{Args, Launcher, REDUCE_THREADS};
use crate::scenario::corruption::digital;

pub(super) const NAMES: &[&str] = &["contrast", "brightness", "saturate"];

pub(super) fn corrupt<L: Launcher>(l: &mut L, j: &Job) -> Result<(), GpuError> {
    let n = j.src.elements();
    let (src, dst) = (l.address(j.src.buf), l.address(j.dst.buf));
    match j.name {
        "contrast" => {
            let pixels = n / 3;
            let sums = l.scratch(0, 3 * 8)?;
            l.zero(sums, 3 * 8)?;
            let luts = l.scratch(1, 768)?;
            let (sums, luts) = (l.address(sums), l.address(luts));
            let args = Args::buffers(&[src, sums]).ints(&[pixels as i64]);
            l.launch("rs_channel_sums", pixels.min(REDUCE_THREADS), &args)?;
            let args = Args::buffers(&[sums, luts])
                .ints(&[pixels as i64])
                .doubles(&[digital::CONTRAST_FACTOR[j.s]]);
            l.launch("rs_contrast_luts", 768, &args)?;
            let args = Args::buffers(&[src, dst, luts]).ints(&[n as i64]);
            l.launch("rs_apply_channel_luts", n, &args)
        }
        "brightness" => {
            let args = Args::buffers(&[src, dst])
                .ints(&[(n / 3) as i64, 1])
                .doubles(&[digital::BRIGHTNESS_DELTA[j.s]]);
            l.launch("rs_hsv_edit", n / 3, &args)
        }
        "saturate" => {
            let (scale, offset) = digital::SATURATE_SCALE_OFFSET[j.s];
            let args = Args::buffers(&[src, dst])
                .ints(&[(n / 3) as i64, 0])
                .doubles(&[scale, offset]);
            l.launch("rs_hsv_edit", n / 3, &args)
        }
        other => unreachable!("{other} is not in NAMES"),
    }
}
