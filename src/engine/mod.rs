//! Inference engines. An [`Engine`] sees only tensors: a batch of preprocessed images in, one row of
//! class scores per image out. Model specifics come from the [`ModelDesc`]; execution settings from
//! [`EngineConfig`].

pub mod model;
pub mod onnx;
pub mod output;

use std::path::PathBuf;

use serde::Deserialize;

pub use model::ModelDesc;
pub use output::{Prediction, decode_row};

/// Which ONNX Runtime execution provider runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// The CPU provider (always available).
    #[default]
    Cpu,
    /// NVIDIA CUDA (needs the GPU build of ONNX Runtime and CUDA/cuDNN libraries).
    Cuda,
    /// NVIDIA TensorRT, with engine and timing caches under `engine_cache`.
    Tensorrt,
}

/// `[engine]` settings of a run.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// Execution provider.
    pub provider: Provider,
    /// Threads ONNX Runtime uses inside one operator (intra-op); 0 = ONNX Runtime's default.
    pub threads: usize,
    /// Path of the ONNX Runtime shared library; `ORT_DYLIB_PATH` when absent.
    pub library: Option<PathBuf>,
    /// Let ONNX Runtime's intra-op threads spin-wait between operators. Spinning lowers latency on
    /// an otherwise idle machine but burns cores the scenario workers need, so it is off by default.
    pub spin: bool,
    /// GPU index for `cuda` / `tensorrt`.
    pub device_id: i32,
    /// TensorRT: build fp16 engines.
    pub fp16: bool,
    /// TensorRT: folder of engine and timing caches; absent = `engines/` under the working directory
    /// (the repository's `engines/` when run from its root).
    pub engine_cache: Option<PathBuf>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            provider: Provider::Cpu,
            threads: 0,
            library: None,
            spin: false,
            device_id: 0,
            fp16: false,
            engine_cache: None,
        }
    }
}

/// An engine failure.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The ONNX Runtime library could not be found or loaded.
    #[error("{0}")]
    Library(String),
    /// The model could not be loaded, or does not match its description.
    #[error("model {path}: {message}")]
    Model {
        /// The model or description file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// The requested execution provider is not available here.
    #[error("{0}")]
    Provider(String),
    /// Running a batch failed.
    #[error("inference failed: {0}")]
    Run(String),
}

/// A model that classifies batches of preprocessed images.
pub trait Engine: Send {
    /// One line naming the runtime, provider and threads, for reports.
    fn describe(&self) -> String;
    /// Runs `batch` images laid out back to back in `input` (each `ModelDesc::input_len` values, in
    /// the description's layout) and returns `batch × classes` scores, row-major.
    fn infer(&mut self, input: &[f32], batch: usize) -> Result<Vec<f32>, EngineError>;
}
