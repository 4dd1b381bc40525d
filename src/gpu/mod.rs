//! GPU-resident scenarios (docs/gpu.md#gpu-resident-scenarios): the CUDA kernels that make a
//! frame's variants on the GPU, the program they form, how they are compiled (NVRTC, at run time)
//! and how a scenario's launches are sequenced.
//!
//! The kernels live in `cuda/` as CUDA C++ that also compiles as host C++: the tests run every
//! kernel on the CPU through the host build ([`launch::Launcher`] has a host implementation in the
//! tests) and compare it with the Rust kernels of `scenario/`, and compile the program with NVRTC
//! to check that it builds for the GPU, all without a GPU.

pub mod corruption;
pub mod launch;
#[cfg(feature = "gpu")]
pub mod nvrtc;
pub mod preprocess;
pub mod program;

#[cfg(test)]
mod host;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

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
    /// A buffer was used outside its size, or a kernel is unknown (a bug in a recipe).
    #[error("GPU launch: {0}")]
    Launch(String),
}
