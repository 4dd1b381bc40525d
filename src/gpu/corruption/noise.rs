//! Noise corruptions (`cuda/noise.cu`; CPU: `scenario/corruption/noise.rs`).

use super::Job;
use crate::gpu::GpuError;
use crate::gpu::launch::{Args, Launcher};
use crate::scenario::corruption::noise;

/// The noise corruptions with kernels.
#[derive(Debug, Clone, Copy)]
pub(super) enum Noise {
    /// `gaussian_noise`.
    Gaussian,
    /// `shot_noise`.
    Shot,
    /// `impulse_noise`.
    Impulse,
    /// `speckle_noise`.
    Speckle,
}

pub(super) fn corrupt<L: Launcher>(l: &mut L, which: Noise, j: &Job) -> Result<(), GpuError> {
    let n = j.src.elements();
    let bufs = [l.address(j.src.buf), l.address(j.dst.buf)];
    let key = j.key.0 as i64;
    match which {
        Noise::Gaussian => {
            let args = Args::buffers(&bufs)
                .ints(&[n as i64, key])
                .floats(&[noise::GAUSSIAN_SIGMA[j.s] as f32]);
            l.launch("rs_gaussian_noise", n.div_ceil(4), &args)
        }
        Noise::Shot => {
            let c = noise::SHOT_PHOTONS[j.s];
            // The CPU's own alias tables (built once per process), uploaded once per launcher.
            let table = noise::shot_table(j.s)
                .ok_or_else(|| GpuError::Launch(format!("shot_noise: no table for {c} photons")))?;
            let levels = table.levels();
            let mut entries = || {
                table
                    .entries()
                    .iter()
                    .flat_map(|e| e.to_le_bytes())
                    .collect()
            };
            let table = l.constant(&format!("shot_noise/{c}"), &mut entries)?;
            let args = Args::buffers(&[bufs[0], bufs[1], l.address(table)]).ints(&[
                n as i64,
                key,
                levels as i64,
            ]);
            l.launch("rs_shot_noise", n.div_ceil(2), &args)
        }
        Noise::Impulse => {
            // The CPU kernel's flip threshold: round(amount · 2³²), amount clamped to [0, 1].
            let amount = noise::IMPULSE_AMOUNT[j.s].clamp(0.0, 1.0);
            let threshold = (amount * 4_294_967_296.0).round() as i64;
            let args = Args::buffers(&bufs).ints(&[n as i64, key, threshold]);
            l.launch("rs_impulse_noise", n.div_ceil(2), &args)
        }
        Noise::Speckle => {
            let args = Args::buffers(&bufs)
                .ints(&[n as i64, key])
                .floats(&[noise::SPECKLE_SIGMA[j.s] as f32]);
            l.launch("rs_speckle_noise", n.div_ceil(4), &args)
        }
    }
}
