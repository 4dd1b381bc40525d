//! Noise corruptions (`cuda/noise.cu`; CPU: `scenario/corruption/noise.rs`).

use super::Job;
use crate::gpu::GpuError;
use crate::gpu::launch::{Args, Launcher};
use crate::scenario::corruption::noise;

pub(super) const NAMES: &[&str] = &["gaussian_noise"];

pub(super) fn corrupt<L: Launcher>(l: &mut L, j: &Job) -> Result<(), GpuError> {
    let n = j.src.elements();
    let bufs = [l.address(j.src.buf), l.address(j.dst.buf)];
    match j.name {
        "gaussian_noise" => {
            let args = Args::buffers(&bufs)
                .ints(&[n as i64, j.key.0 as i64])
                .floats(&[noise::GAUSSIAN_SIGMA[j.s] as f32]);
            l.launch("rs_gaussian_noise", n.div_ceil(4), &args)
        }
        other => unreachable!("{other} is not in NAMES"),
    }
}
