//! A worker's GPU (docs/gpu.md#gpu-resident-scenarios): its own CUDA stream and buffers; a frame
//! is uploaded once per worker that makes one of its variants, the variant is made by the GPU
//! kernels and brought back for the model view and normalisation of the CPU path.

use std::sync::Arc;

use image::RgbImage;

use crate::gpu::{Device, GpuError};
use crate::rng::RngKey;
use crate::scenario::Scenario;

#[cfg(feature = "gpu")]
pub(super) use with_gpu::GpuWorker;

#[cfg(feature = "gpu")]
mod with_gpu {
    use super::*;
    use crate::gpu::corruption::DeviceImage;
    use crate::gpu::cuda::CudaLauncher;
    use crate::gpu::launch::{FRAME_SLOT, Launcher, VARIANT_SLOT};
    use crate::gpu::scenarios::{self, Made};

    /// One worker's stream, buffers and the frame it last uploaded.
    pub(in crate::pipeline) struct GpuWorker {
        l: CudaLauncher,
        /// The uploaded frame: its sequence number and image.
        frame: Option<(u64, DeviceImage)>,
    }

    impl GpuWorker {
        pub(in crate::pipeline) fn new(device: &Arc<Device>) -> Result<Self, GpuError> {
            Ok(Self {
                l: CudaLauncher::new(device)?,
                frame: None,
            })
        }

        /// Scenario `s`'s variant of frame `seq` (image `base`), made on the GPU.
        pub(in crate::pipeline) fn variant(
            &mut self,
            seq: u64,
            base: &RgbImage,
            s: &dyn Scenario,
            key: RngKey,
        ) -> Result<RgbImage, GpuError> {
            let (w, h) = base.dimensions();
            let bytes = base.as_raw().len();
            let src = match self.frame {
                Some((at, img)) if at == seq => img,
                _ => {
                    self.frame = None;
                    let buf = self.l.scratch(FRAME_SLOT, bytes)?;
                    self.l.upload(buf, base.as_raw())?;
                    let img = DeviceImage {
                        buf,
                        width: w,
                        height: h,
                    };
                    self.frame = Some((seq, img));
                    img
                }
            };
            let dst = DeviceImage {
                buf: self.l.scratch(VARIANT_SLOT, bytes)?,
                ..src
            };
            match scenarios::apply(&mut self.l, s, src, dst, key)? {
                Made::Source => Ok(base.clone()),
                Made::Destination => {
                    let mut out = vec![0; bytes];
                    self.l.download(dst.buf, &mut out)?;
                    RgbImage::from_raw(w, h, out)
                        .ok_or_else(|| GpuError::Launch("variant of another size".into()))
                }
            }
        }
    }
}

/// Without the `gpu` feature there is no device, so no worker ever has one.
#[cfg(not(feature = "gpu"))]
pub(super) enum GpuWorker {}

#[cfg(not(feature = "gpu"))]
impl GpuWorker {
    pub(super) fn new(device: &Arc<Device>) -> Result<Self, GpuError> {
        match **device {}
    }

    pub(super) fn variant(
        &mut self,
        _: u64,
        _: &RgbImage,
        _: &dyn Scenario,
        _: RngKey,
    ) -> Result<RgbImage, GpuError> {
        match *self {}
    }
}
