//! `jpeg_compression` (`cuda/jpeg.cu` through [`crate::gpu::jpeg::roundtrip`]; CPU:
//! `scenario/corruption/digital.rs`, `kernels/jpeg.rs`): equal bytes.

use super::Job;
use crate::gpu::GpuError;
use crate::gpu::jpeg;
use crate::gpu::launch::Launcher;
use crate::scenario::corruption::digital;

pub(super) const NAMES: &[&str] = &["jpeg_compression"];

pub(super) fn corrupt<L: Launcher>(l: &mut L, j: &Job) -> Result<(), GpuError> {
    match j.name {
        "jpeg_compression" => jpeg::roundtrip(l, j.src, j.dst, digital::JPEG_QUALITY[j.s]),
        other => unreachable!("{other} is not in NAMES"),
    }
}
