//! GPU-resident scenarios (docs/gpu.md#gpu-resident-scenarios): the CUDA kernels that make a
//! frame's variants on the GPU, the program they form, how they are compiled (NVRTC, at run time)
//! and how a scenario's launches are sequenced.
//!
//! The kernels live in `cuda/` as CUDA C++ that also compiles as host C++: the tests run every
//! kernel on the CPU through the host build ([`launch::Launcher`] has a host implementation in the
//! tests) and compare it with the Rust kernels of `scenario/`, and compile the program with NVRTC
//! to check that it builds for the GPU, all without a GPU.

mod background;
pub mod corruption;
#[cfg(feature = "gpu")]
pub mod cuda;
mod jpeg;
pub mod launch;
mod masks;
#[cfg(feature = "gpu")]
mod nvrtc;
pub(crate) mod preprocess;
mod program;
pub(crate) mod scenarios;

#[cfg(test)]
pub(crate) mod host;
#[cfg(test)]
pub(crate) mod tests;

use std::path::PathBuf;
use std::sync::Arc;

/// An opened GPU ([`cuda::Gpu`]); without the `gpu` feature the type has no values.
#[cfg(feature = "gpu")]
pub type Device = cuda::Gpu;

/// An opened GPU; this build has no `gpu` feature, so there is none.
#[cfg(not(feature = "gpu"))]
#[derive(Debug)]
pub enum Device {}

/// The [`launch::Launcher`] of a [`Device`]: a stream with its buffers ([`cuda::CudaLauncher`]).
#[cfg(feature = "gpu")]
pub(crate) type DeviceLauncher = cuda::CudaLauncher;

/// The launcher of a [`Device`]; without the `gpu` feature there is none.
#[cfg(not(feature = "gpu"))]
#[derive(Debug)]
pub(crate) enum DeviceLauncher {}

#[cfg(not(feature = "gpu"))]
impl DeviceLauncher {
    /// Never called: there is no device to open a stream on.
    pub(crate) fn new(device: &Arc<Device>) -> Result<Self, GpuError> {
        match **device {}
    }
}

#[cfg(not(feature = "gpu"))]
impl launch::Launcher for DeviceLauncher {
    fn alloc(&mut self, _: usize) -> Result<launch::Buf, GpuError> {
        match *self {}
    }
    fn scratch(&mut self, _: usize, _: usize) -> Result<launch::Buf, GpuError> {
        match *self {}
    }
    fn constant(
        &mut self,
        _: &str,
        _: &mut dyn FnMut() -> Vec<u8>,
    ) -> Result<launch::Buf, GpuError> {
        match *self {}
    }
    fn zero(&mut self, _: launch::Buf, _: usize) -> Result<(), GpuError> {
        match *self {}
    }
    fn upload(&mut self, _: launch::Buf, _: &[u8]) -> Result<(), GpuError> {
        match *self {}
    }
    fn download(&mut self, _: launch::Buf, _: &mut [u8]) -> Result<(), GpuError> {
        match *self {}
    }
    fn address(&self, _: launch::Buf) -> u64 {
        match *self {}
    }
    fn launch(&mut self, _: &'static str, _: u64, _: &launch::Args) -> Result<(), GpuError> {
        match *self {}
    }
}

/// What summary.json's `run.gpu` says of the device.
pub(crate) fn describe(device: &Device) -> serde_json::Value {
    #[cfg(feature = "gpu")]
    {
        serde_json::json!(device.info)
    }
    #[cfg(not(feature = "gpu"))]
    match *device {}
}

/// The GPU a run makes its variants on, per `[engine] scenarios_on` (`on`), whether the engine's
/// provider runs on a GPU (`gpu_provider`) and `[engine] device_id` (`ordinal`); `None` = the CPU
/// workers. Asking for the GPU where there is none is an error, never a silent fall-back; `auto`
/// without a GPU provider, driver or device is the CPU, but a present device that cannot be used
/// (no NVRTC, say) is an error too.
pub(crate) fn choose(
    on: ScenariosOn,
    gpu_provider: bool,
    ordinal: usize,
) -> Result<Option<Arc<Device>>, GpuError> {
    match on {
        ScenariosOn::Cpu => Ok(None),
        ScenariosOn::Auto if !gpu_provider => Ok(None),
        #[cfg(feature = "gpu")]
        ScenariosOn::Auto if !cuda::driver_present() || cuda::device_count()? == 0 => Ok(None),
        #[cfg(feature = "gpu")]
        ScenariosOn::Auto | ScenariosOn::Gpu => cuda::open(ordinal).map(Some),
        #[cfg(not(feature = "gpu"))]
        ScenariosOn::Auto => {
            let _ = ordinal;
            Ok(None)
        }
        #[cfg(not(feature = "gpu"))]
        ScenariosOn::Gpu => Err(GpuError::NotBuilt),
    }
}

/// `[engine] scenarios_on`: where a run makes its variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScenariosOn {
    /// On the CPU workers (the default).
    #[default]
    Cpu,
    /// On the GPU: an error, not a fall-back, when there is none.
    Gpu,
    /// On the GPU when the engine's provider is CUDA and a device is present, else on the CPU.
    Auto,
}

/// A GPU-path failure.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// NVRTC could not be loaded.
    #[error(
        "CUDA's run-time compiler NVRTC (libnvrtc.so.13) was not found (looked in {}, then the \
         library path): run `bash scripts/assets.sh` to cache it, or set ROBUSTREAM_NVRTC to its path",
        tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NoNvrtc {
        /// The files looked for before the library path.
        tried: Vec<PathBuf>,
    },
    /// The kernels did not compile (a bug in this program, with NVRTC's log).
    #[error("the GPU kernels did not compile for {arch}:\n{log}")]
    Compile {
        /// The virtual architecture.
        arch: &'static str,
        /// NVRTC's log.
        log: String,
    },
    /// The CUDA driver library (`libcuda.so`) is not on this machine.
    #[error(
        "no CUDA driver here (libcuda.so was not found): GPU scenarios need an NVIDIA GPU with its \
         driver; set `[engine] scenarios_on = \"cpu\"` (or \"auto\") to make variants on the CPU"
    )]
    NoDriver,
    /// The driver is there but the device ordinal is not.
    #[error(
        "no CUDA device {ordinal} (this machine has {count}): set `[engine] device_id` to one \
         of them, or `scenarios_on = \"cpu\"`"
    )]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// The driver refused a call (the message names the call).
    #[error("CUDA driver: {0}")]
    Driver(String),
    /// An environment setting of the GPU path has a value it does not know (the message names the
    /// variable, the value and the ones it takes).
    #[error("{0}")]
    Setting(String),
    /// This binary was built without the `gpu` feature.
    #[error(
        "this robustream was built without the `gpu` feature: rebuild with default features (or \
         `--features gpu`), or set `[engine] scenarios_on = \"cpu\"`"
    )]
    NotBuilt,
    /// A buffer was used outside its size, or a kernel is unknown (a bug in a recipe).
    #[error("GPU launch: {0}")]
    Launch(String),
}
