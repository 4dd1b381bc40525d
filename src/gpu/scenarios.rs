//! Which scenarios the GPU makes, and making one: `clean` (the frame as it is) and the ImageNet-C
//! corruptions with kernels ([`super::corruption::on_gpu`]); every other scenario runs on the CPU
//! workers for those variants, and a run lists both (`run.gpu_scenarios`, `run.cpu_fallback`,
//! docs/gpu.md#gpu-resident-scenarios).

use super::GpuError;
use super::corruption::{self, DeviceImage};
use super::launch::Launcher;
use crate::key::CLEAN;
use crate::rng::RngKey;
use crate::scenario::{Plan, Scenario};

/// Whether the GPU makes `s`'s variants.
pub fn on_gpu(s: &dyn Scenario) -> bool {
    if s.key() == CLEAN {
        return true;
    }
    // A stored-as-JPEG round trip after the corruption runs on the GPU too (super::jpeg).
    s.as_corruption()
        .is_some_and(|c| corruption::on_gpu(c.name()))
}

/// The plan's scenario keys split into those the GPU makes and those left to the CPU, in plan
/// order.
pub fn split(plan: &Plan) -> (Vec<String>, Vec<String>) {
    let (mut gpu, mut cpu) = (Vec::new(), Vec::new());
    for s in plan.scenarios() {
        let to = if on_gpu(s.as_ref()) {
            &mut gpu
        } else {
            &mut cpu
        };
        to.push(s.key().to_string());
    }
    (gpu, cpu)
}

/// Where a variant made by [`apply`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// In the source image (`clean`: nothing to do).
    Source,
    /// In the destination image.
    Destination,
}

/// Makes `s`'s variant of `src` (into `dst`, same size, when it changes pixels); an error for a
/// scenario [`on_gpu`] refuses.
pub fn apply<L: Launcher>(
    l: &mut L,
    s: &dyn Scenario,
    src: DeviceImage,
    dst: DeviceImage,
    key: RngKey,
) -> Result<Made, GpuError> {
    if s.key() == CLEAN {
        return Ok(Made::Source);
    }
    let refused = || GpuError::Launch(format!("scenario {} has no GPU kernels", s.key()));
    let c = s.as_corruption().ok_or_else(refused)?;
    if !corruption::corrupt(l, c.name(), c.severity(), src, dst, key)? {
        return Err(refused());
    }
    if let Some(quality) = c.stored_jpeg() {
        super::jpeg::roundtrip(l, dst, dst, quality)?;
    }
    Ok(Made::Destination)
}
