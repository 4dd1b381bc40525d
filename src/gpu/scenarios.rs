//! Which scenarios the GPU makes, and making one: `clean` (the frame as it is), the ImageNet-C
//! corruptions with kernels ([`super::corruption::on_gpu`]), Hard ImageNet's ablations and RFS
//! region noise ([`super::masks`]) and the IN-9 / XIMAGENET-12 variations that need only the
//! frame, its mask and boxes ([`super::background`]); every other scenario runs on the CPU
//! workers for those variants, and a run lists both (`run.gpu_scenarios`, `run.cpu_fallback`,
//! docs/gpu.md#gpu-resident-scenarios).

use image::GrayImage;

use super::corruption;
use super::launch::{Buf, DeviceImage, Launcher};
use super::{GpuError, background, masks};
use crate::frame::BBox;
use crate::key::CLEAN;
use crate::rng::RngKey;
use crate::scenario::{Plan, Scenario};

/// Whether the GPU makes `s`'s variants (a frame the CPU scenario would refuse still goes to the
/// CPU, which says why: [`Made::Cpu`]).
pub(crate) fn on_gpu(s: &dyn Scenario) -> bool {
    if s.key() == CLEAN {
        return true;
    }
    // A stored-as-JPEG round trip after the corruption runs on the GPU too (super::jpeg).
    s.as_corruption()
        .is_some_and(|c| corruption::on_gpu(c.kind()))
        || masks::on_gpu(s)
        || background::on_gpu(s)
}

/// The plan's scenario keys split into those the GPU makes and those left to the CPU, in plan
/// order.
pub(crate) fn split(plan: &Plan) -> (Vec<String>, Vec<String>) {
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

/// What a scenario sees besides the frame: the mask the CPU scenario would be given (its host
/// copy, for the boxes and checks made on the host, and its device copy) and the frame's boxes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Extras<'a> {
    /// `ScenarioInput::mask_for(s.mask_resize())` and its device buffer.
    pub(crate) mask: Option<(&'a GrayImage, Buf)>,
    /// The frame's object boxes at the scenario stage.
    pub(crate) boxes: &'a [BBox],
}

/// Where a variant made by [`apply`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Made {
    /// In the source image (`clean`: nothing to do).
    Source,
    /// In the destination image.
    Destination,
    /// Not made: the CPU scenario refuses this frame (no mask, an empty one, …) and says why.
    Cpu,
}

/// Makes `s`'s variant of `src` (into `dst`, same size, when it changes pixels); an error for a
/// scenario [`on_gpu`] refuses.
pub(crate) fn apply<L: Launcher>(
    l: &mut L,
    s: &dyn Scenario,
    src: DeviceImage,
    dst: DeviceImage,
    key: RngKey,
    extras: Extras,
) -> Result<Made, GpuError> {
    if s.key() == CLEAN {
        return Ok(Made::Source);
    }
    let refused = || GpuError::Launch(format!("scenario {} has no GPU kernels", s.key()));
    if let Some(c) = s.as_corruption() {
        if !corruption::corrupt(l, c.kind(), c.severity(), src, dst, key)? {
            return Err(refused());
        }
        if let Some(quality) = c.stored_jpeg() {
            super::jpeg::roundtrip(l, dst, dst, quality)?;
        }
        return Ok(Made::Destination);
    }
    if masks::on_gpu(s) {
        // The CPU scenarios' own conditions: a mask of the frame's size with an object pixel, and
        // for RFS a background pixel too.
        let Some((mask, buf)) = extras.mask else {
            return Ok(Made::Cpu);
        };
        let raw = mask.as_raw();
        let suitable = mask.dimensions() == (src.width, src.height)
            && raw.iter().any(|&v| v != 0)
            && (s.as_region_noise().is_none() || raw.contains(&0));
        if !suitable {
            return Ok(Made::Cpu);
        }
        let boxes = masks::boxes(s, mask);
        return Ok(
            match masks::apply(l, s, src, Some(buf), &boxes, dst, key)? {
                true => Made::Destination,
                false => Made::Cpu,
            },
        );
    }
    if background::on_gpu(s) {
        return Ok(
            match background::apply(l, s, src, extras.mask, extras.boxes, dst, key)? {
                true => Made::Destination,
                false => Made::Cpu,
            },
        );
    }
    Err(refused())
}
