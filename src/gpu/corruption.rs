//! The ImageNet-C corruptions on the GPU: for each corruption with kernels, the sequence of launches
//! that turns a frame's RGB bytes into the variant's, with the severity parameters of the CPU
//! kernels (`scenario/corruption/`), so both paths read the same tables. Grouped like the CPU
//! kernels; each group lists the corruptions it has kernels for (`NAMES`) and sequences them
//! (`corrupt`).
//!
//! An image on the device is `width × height × 3` bytes, RGB interleaved, rows packed.

mod blur;
mod digital;
mod digital_jpeg;
pub(super) mod elastic;
mod noise;
pub(super) mod weather;

use super::GpuError;
use super::launch::{Buf, Launcher};
use crate::rng::RngKey;

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

/// What a group's `corrupt` gets: the corruption, its severity index and the two images.
#[derive(Debug, Clone, Copy)]
struct Job<'a> {
    name: &'a str,
    /// Severity − 1 (0..=4), to index the CPU kernels' parameter tables.
    s: usize,
    src: DeviceImage,
    dst: DeviceImage,
    key: RngKey,
}

/// The corruptions with GPU kernels, by group.
const GROUPS: &[&[&str]] = &[
    noise::NAMES,
    digital::NAMES,
    digital_jpeg::NAMES,
    blur::NAMES,
    weather::NAMES,
    elastic::NAMES,
];

/// Whether `name` (an ImageNet-C corruption) has GPU kernels that can run here (frost only where
/// its textures are installed: otherwise the CPU path reports its variants as unsuitable, as a CPU
/// run does, instead of the GPU path failing the run).
pub fn on_gpu(name: &str) -> bool {
    GROUPS.iter().any(|names| names.contains(&name)) && weather::ready(name)
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
    let job = Job {
        name,
        s: usize::from(severity - 1),
        src,
        dst,
        key,
    };
    if noise::NAMES.contains(&name) {
        noise::corrupt(l, &job)?;
    } else if digital::NAMES.contains(&name) {
        digital::corrupt(l, &job)?;
    } else if digital_jpeg::NAMES.contains(&name) {
        digital_jpeg::corrupt(l, &job)?;
    } else if blur::NAMES.contains(&name) {
        blur::corrupt(l, &job)?;
    } else if weather::NAMES.contains(&name) {
        weather::corrupt(l, &job)?;
    } else if elastic::NAMES.contains(&name) {
        elastic::corrupt(l, &job)?;
    } else {
        return Ok(false);
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
        name: "motion_blur",
        s: usize::from(severity - 1),
        src,
        dst,
        key: RngKey(0),
    };
    let (radius, sigma) = crate::scenario::corruption::blur::MOTION_BLUR[job.s];
    blur::motion(l, &job, radius, sigma, Some(angle))
}
