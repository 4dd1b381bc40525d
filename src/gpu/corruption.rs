//! The ImageNet-C corruptions on the GPU: for each corruption with kernels, the sequence of launches
//! that turns a frame's RGB bytes into the variant's, with the severity parameters of the CPU
//! kernels (`scenario/corruption/`), so both paths read the same tables. Grouped like the CPU
//! kernels; [`group`] is the one list of which group's kernels make each corruption (`None`: it
//! stays on the CPU), and each group sequences its own (`corrupt`).
//!
//! An image on the device is a [`DeviceImage`]: `width × height × 3` bytes, RGB interleaved, rows
//! packed.

mod blur;
mod digital;
mod digital_jpeg;
pub(super) mod elastic;
mod noise;
pub(super) mod weather;

use super::GpuError;
use super::launch::{DeviceImage, Launcher};
use crate::key::Corruption;
use crate::rng::RngKey;

/// What a group's `corrupt` gets: the severity index and the two images.
#[derive(Debug, Clone, Copy)]
struct Job {
    /// Severity − 1 (0..=4), to index the CPU kernels' parameter tables.
    s: usize,
    src: DeviceImage,
    dst: DeviceImage,
    key: RngKey,
}

/// The kernels of a corruption: its group and, in groups of several, which of the group's.
#[derive(Debug, Clone, Copy)]
enum Group {
    Noise(noise::Noise),
    Digital(digital::Digital),
    Jpeg,
    Blur(blur::Blur),
    Weather(weather::Weather),
    Elastic,
}

/// The kernels that make corruption `c`, `None` for one that has none (it runs on the CPU).
fn group(c: Corruption) -> Option<Group> {
    use Corruption as C;
    Some(match c {
        C::GaussianNoise => Group::Noise(noise::Noise::Gaussian),
        C::ShotNoise => Group::Noise(noise::Noise::Shot),
        C::ImpulseNoise => Group::Noise(noise::Noise::Impulse),
        C::SpeckleNoise => Group::Noise(noise::Noise::Speckle),
        C::Contrast => Group::Digital(digital::Digital::Contrast),
        C::Brightness => Group::Digital(digital::Digital::Brightness),
        C::Saturate => Group::Digital(digital::Digital::Saturate),
        C::Pixelate => Group::Digital(digital::Digital::Pixelate),
        C::JpegCompression => Group::Jpeg,
        C::GaussianBlur => Group::Blur(blur::Blur::Gaussian),
        C::DefocusBlur => Group::Blur(blur::Blur::Defocus),
        C::MotionBlur => Group::Blur(blur::Blur::Motion),
        C::ZoomBlur => Group::Blur(blur::Blur::Zoom),
        C::GlassBlur => Group::Blur(blur::Blur::Glass),
        C::Frost => Group::Weather(weather::Weather::Frost),
        C::Fog => Group::Weather(weather::Weather::Fog),
        C::Snow => Group::Weather(weather::Weather::Snow),
        C::ElasticTransform => Group::Elastic,
        C::Spatter => return None,
    })
}

/// Whether corruption `c` has GPU kernels that can run here (frost only where its textures are
/// installed: otherwise the CPU path reports its variants as unsuitable, as a CPU run does,
/// instead of the GPU path failing the run).
pub fn on_gpu(c: Corruption) -> bool {
    match group(c) {
        Some(Group::Weather(w)) => weather::ready(w),
        Some(_) => true,
        None => false,
    }
}

/// Writes corruption `c` at `severity` (1..=5) of `src` into `dst` (same size); `Ok(false)`
/// when the corruption has no GPU kernels ([`on_gpu`]), leaving `dst` untouched.
pub fn corrupt<L: Launcher>(
    l: &mut L,
    c: Corruption,
    severity: u8,
    src: DeviceImage,
    dst: DeviceImage,
    key: RngKey,
) -> Result<bool, GpuError> {
    if (src.width, src.height) != (dst.width, dst.height) || !(1..=5).contains(&severity) {
        return Err(GpuError::Launch(format!(
            "{c}/{severity}: {}×{} into {}×{}",
            src.width, src.height, dst.width, dst.height
        )));
    }
    let job = Job {
        s: usize::from(severity - 1),
        src,
        dst,
        key,
    };
    let Some(group) = group(c) else {
        return Ok(false);
    };
    match group {
        Group::Noise(which) => noise::corrupt(l, which, &job)?,
        Group::Digital(which) => digital::corrupt(l, which, &job)?,
        Group::Jpeg => digital_jpeg::corrupt(l, &job)?,
        Group::Blur(which) => blur::corrupt(l, which, &job)?,
        Group::Weather(which) => weather::corrupt(l, which, &job)?,
        Group::Elastic => elastic::corrupt(l, &job)?,
    }
    Ok(true)
}

/// motion_blur at `severity` with its angle fixed at `angle` degrees instead of drawn, to compare
/// the kernels with the CPU's `blur::motion_blur_at` (the angle is the only random draw).
#[cfg(test)]
pub(crate) fn motion_blur_at<L: Launcher>(
    l: &mut L,
    severity: u8,
    src: DeviceImage,
    dst: DeviceImage,
    angle: f64,
) -> Result<(), GpuError> {
    let job = Job {
        s: usize::from(severity - 1),
        src,
        dst,
        key: RngKey(0),
    };
    let p = crate::scenario::corruption::blur::MOTION_BLUR[job.s];
    blur::motion(l, &job, p.radius, p.sigma, Some(angle))
}
