//! `jpeg_compression` (`cuda/jpeg.cu` through [`crate::gpu::jpeg::roundtrip`]; CPU:
//! `scenario/corruption/digital.rs`, `kernels/jpeg.rs`): equal bytes.

use super::Job;
use crate::gpu::GpuError;
use crate::gpu::jpeg;
use crate::gpu::launch::Launcher;
use crate::scenario::corruption::digital;

pub(super) fn corrupt<L: Launcher>(l: &mut L, j: &Job) -> Result<(), GpuError> {
    jpeg::roundtrip(l, j.src, j.dst, digital::JPEG_QUALITY[j.s])
}
