//! Inference engines. An [`Engine`] sees only tensors: a batch of preprocessed images in, one row of
//! class scores per image out. Model specifics come from the [`crate::model::ModelDesc`]; execution settings from
//! [`EngineConfig`].

pub mod onnx;
mod output;
pub(crate) mod shapes;

use std::path::PathBuf;

use serde::Deserialize;

pub use output::{Prediction, RowError, check_row, decode_row, try_decode_row};
pub use shapes::{BatchShapes, Partial, ShapeRun, ShapesError};

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
    /// The batch sizes the engine runs at ([`shapes`]); absent = the powers of two up to the
    /// largest batch and that batch (`[pipeline] max_batch` in a run). Each is run once when the
    /// session starts.
    pub batch_sizes: Option<Vec<usize>>,
    /// How a batch of another size is run: `"pad"` (the next size up) or `"split"` (the sizes that
    /// fit); absent = `split` on the CPU, `pad` on GPU providers ([`shapes`]).
    pub partial: Option<Partial>,
    /// CUDA (and TensorRT's CUDA fallback): how cuDNN picks convolution algorithms the first time
    /// it sees a shape. `heuristic` (default) takes cuDNN's guess in 0.1–0.5 s; `exhaustive`
    /// (ONNX Runtime's own default) times every algorithm, 0.7–1.4 s per shape on an H100;
    /// `default` takes the first algorithm without a search.
    pub cudnn_search: CudnnSearch,
    /// Run batches through ONNX Runtime's IO binding from memory of the session's allocator
    /// (pinned host memory on GPU providers) into output tensors allocated once per batch size;
    /// absent = on for `cuda` / `tensorrt`, off on the CPU (where it only adds a copy: the CPU
    /// path runs the caller's memory in place).
    pub io_binding: Option<bool>,
    /// Where a run makes its variants: `"cpu"` (default), `"gpu"` (CUDA kernels; an error when
    /// there is no GPU) or `"auto"` (the GPU when the provider is CUDA or TensorRT and a device is
    /// present), docs/gpu.md#gpu-resident-scenarios.
    pub scenarios_on: crate::gpu::ScenariosOn,
    /// One ONNX Runtime session per batch size (`"per-size"`) or one for all sizes
    /// (`"shared"`); absent = per-size on `cuda` / `tensorrt`, shared on the CPU
    /// (docs/gpu.md#one-session-per-batch-size).
    pub sessions: Option<Sessions>,
    /// Rounds of every batch size the engine thread runs before its first batch, on top of the
    /// one round when the engine loads; absent = 2 on `cuda` / `tensorrt` (a provider's state is
    /// per calling thread), 0 on the CPU (docs/gpu.md#one-session-per-batch-size).
    pub engine_thread_warmup: Option<usize>,
    /// The batch shapes of a live source: `"plan"` (one size, a frame's variants in equal
    /// batches of at most `[pipeline] max_batch`), `"sizes"` (the batch sizes as for any source);
    /// absent = `plan` on `cuda` / `tensorrt`, `sizes` on the CPU. `batch_sizes`, when given,
    /// always wins ([`shapes::plan_size`], docs/gpu.md#live-shapes).
    pub live_shapes: Option<LiveShapes>,
}

/// `[engine] sessions`: how many ONNX Runtime sessions run the batch sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sessions {
    /// One session for every size: the least memory; a provider that keeps state for the last
    /// shape it saw (cuDNN's execution plans in ONNX Runtime's CUDA Conv) re-plans on every change.
    Shared,
    /// A session per size, each only ever seeing its own shape (weights shared between them on
    /// the CPU; one copy per size on a GPU).
    PerSize,
}

/// `[engine] live_shapes`: the batch shapes of a live source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveShapes {
    /// One size from the frame's plan ([`shapes::plan_size`]).
    Plan,
    /// The batch sizes as configured or defaulted for any source.
    Sizes,
}

/// One ONNX Runtime call of a batch ([`Engine::take_runs`]): the size it ran at, the rows of the
/// batch in it (the rest padding), and how long it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunTiming {
    /// The batch size of the call.
    pub shape: usize,
    /// Real rows in it.
    pub rows: usize,
    /// Wall time of the call, ms.
    pub ms: f64,
}

/// `[engine] cudnn_search`: cuDNN's convolution algorithm search (ONNX Runtime's CUDA provider
/// option `cudnn_conv_algo_search`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CudnnSearch {
    /// cuDNN's heuristics (`cudnnGetConvolutionForwardAlgorithm_v7`): fast, near-best.
    #[default]
    Heuristic,
    /// Time every algorithm (`cudnnFindConvolutionForwardAlgorithmEx`): slow start, best kernels.
    Exhaustive,
    /// The default algorithm, no search.
    Default,
}

/// The batch size [`EngineConfig::resolved_shapes`] assumes when `batch_sizes` is absent (the
/// default `[pipeline] max_batch`).
const DEFAULT_MAX_BATCH: usize = 8;

/// The most threads a run may ask for (`[engine] threads`, `[pipeline] workers`): more than any
/// machine has cores (the largest have a few hundred hardware threads). Each is an OS thread; a
/// value far beyond this (a typo such as 100000) would never finish starting them.
pub(crate) const MAX_THREADS: usize = 1024;

/// The most `[engine] engine_thread_warmup` rounds: more than any provider needs (two settle
/// cuDNN's per-thread handles and plans), few enough that a typo cannot hold a run for minutes.
const MAX_WARMUP_ROUNDS: usize = 10;

/// The cores of this machine, for messages.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl EngineConfig {
    /// Checks the values that do not depend on the model; the message names the key.
    pub(crate) fn validate(&self) -> Result<(), EngineConfigError> {
        if self.threads > MAX_THREADS {
            return Err(EngineConfigError::Threads {
                threads: self.threads,
                cores: cores(),
            });
        }
        if let Some(rounds) = self.engine_thread_warmup.filter(|&r| r > MAX_WARMUP_ROUNDS) {
            return Err(EngineConfigError::Warmup { rounds });
        }
        Ok(())
    }

    /// Whether the provider runs on a GPU (`cuda`, `tensorrt`).
    fn on_gpu(&self) -> bool {
        matches!(self.provider, Provider::Cuda | Provider::Tensorrt)
    }

    /// `sessions` as it applies: as set, else per-size on a GPU provider, shared on the CPU.
    pub fn resolved_sessions(&self) -> Sessions {
        self.sessions.unwrap_or(match self.on_gpu() {
            true => Sessions::PerSize,
            false => Sessions::Shared,
        })
    }

    /// `engine_thread_warmup` as it applies: as set, else 2 on a GPU provider, 0 on the CPU.
    pub(crate) fn resolved_thread_warmup(&self) -> usize {
        self.engine_thread_warmup
            .unwrap_or(if self.on_gpu() { 2 } else { 0 })
    }

    /// `live_shapes` as it applies: as set, else `plan` on a GPU provider, `sizes` on the CPU.
    pub(crate) fn resolved_live_shapes(&self) -> LiveShapes {
        self.live_shapes.unwrap_or(match self.on_gpu() {
            true => LiveShapes::Plan,
            false => LiveShapes::Sizes,
        })
    }

    /// The batch sizes of a session: [`EngineConfig::shapes`] for the largest configured size, or
    /// for [`DEFAULT_MAX_BATCH`] when none is configured. (A run's config always sets
    /// `batch_sizes`, from `[pipeline] max_batch` when the file does not.)
    fn resolved_shapes(&self) -> Result<BatchShapes, EngineConfigError> {
        let max = self
            .batch_sizes
            .as_ref()
            .and_then(|s| s.iter().max().copied())
            .unwrap_or(DEFAULT_MAX_BATCH);
        self.shapes(max)
    }

    /// The batch sizes for batches of at most `max_batch` images: `batch_sizes` as configured (an
    /// error when its largest size is not `max_batch`), else [`BatchShapes::powers_of_two`].
    pub fn shapes(&self, max_batch: usize) -> Result<BatchShapes, EngineConfigError> {
        let partial = self.partial.unwrap_or(match self.provider {
            Provider::Cpu => Partial::Split,
            Provider::Cuda | Provider::Tensorrt => Partial::Pad,
        });
        match &self.batch_sizes {
            None => Ok(BatchShapes::powers_of_two(max_batch, partial)),
            Some(sizes) => {
                let shapes = BatchShapes::new(sizes, partial)?;
                if shapes.max() != max_batch {
                    return Err(EngineConfigError::LargestBatch {
                        sizes: sizes.clone(),
                        largest: shapes.max(),
                        max_batch,
                    });
                }
                Ok(shapes)
            }
        }
    }
}

/// An `[engine]` setting that cannot work; the message names the key and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineConfigError {
    /// More intra-op threads than ONNX Runtime can start.
    #[error(
        "`[engine] threads` (--threads) = {threads}: ONNX Runtime starts that many intra-op \
         threads per session and would never finish starting them, and threads beyond the \
         cores only slow it down (this machine has {cores}); use 0 (one per core) or at most \
         {MAX_THREADS}"
    )]
    Threads {
        /// The configured count.
        threads: usize,
        /// This machine's cores.
        cores: usize,
    },
    /// More warm-up rounds on the engine thread than any provider needs.
    #[error(
        "`[engine] engine_thread_warmup` = {rounds}: each round runs every batch size once \
         before the first frame; 1 or 2 settle any provider, use at most {MAX_WARMUP_ROUNDS}"
    )]
    Warmup {
        /// The configured rounds.
        rounds: usize,
    },
    /// `batch_sizes` itself is unusable.
    #[error(transparent)]
    Shapes(#[from] ShapesError),
    /// The largest batch size is not the pipeline's batch.
    #[error(
        "the largest of `[engine] batch_sizes` = {sizes:?} is {largest} but batches hold up to \
         {max_batch} (`[pipeline] max_batch`, --batch); make them equal"
    )]
    LargestBatch {
        /// The sizes as configured.
        sizes: Vec<usize>,
        /// Their largest.
        largest: usize,
        /// `[pipeline] max_batch`.
        max_batch: usize,
    },
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
            batch_sizes: None,
            partial: None,
            cudnn_search: CudnnSearch::Heuristic,
            io_binding: None,
            scenarios_on: crate::gpu::ScenariosOn::Cpu,
            sessions: None,
            engine_thread_warmup: None,
            live_shapes: None,
        }
    }
}

/// An engine failure.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The ONNX Runtime library could not be found or loaded.
    #[error(transparent)]
    Library(#[from] crate::runtime::RuntimeError),
    /// The model could not be loaded, or does not match its description.
    #[error("model {path}: {message}")]
    Model {
        /// The model or description file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// The model's input does not match the description's `[input]`; `mismatch` says how.
    #[error("model {path}: {mismatch}")]
    Input {
        /// The model file.
        path: PathBuf,
        /// How the input differs.
        mismatch: InputMismatch,
    },
    /// The model's output does not match the description's `[output]`; `mismatch` says how.
    #[error("model {path}: {mismatch}")]
    Output {
        /// The model file.
        path: PathBuf,
        /// How the output differs.
        mismatch: OutputMismatch,
    },
    /// The requested execution provider is not available here.
    #[error("{0}")]
    Provider(String),
    /// Running a batch failed.
    #[error("inference failed: {0}")]
    Run(String),
}

/// How a model's input differs from its description's `[input]` ([`EngineError::Input`]).
/// Display = the part of the line after the model's path, with what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputMismatch {
    /// The model has no input of the described name.
    #[error("has no input `{name}` (inputs: {inputs:?}); fix `[input] name`")]
    Missing {
        /// `[input] name`.
        name: String,
        /// The model's inputs.
        inputs: Vec<String>,
    },
    /// The input is not a tensor (a sequence or a map).
    #[error(
        "input `{name}` is not a tensor; robustream feeds one float32 or float16 image tensor, \
         re-export the model with one"
    )]
    NotTensor {
        /// The input's name.
        name: String,
    },
    /// The input's elements are neither float32 nor float16 (a model that normalises inside, from
    /// uint8).
    #[error(
        "input `{name}` is {element} but robustream feeds float32 or float16 (normalised by the \
         description's `[preprocess]` mean/std); re-export the model with a float32 input and put its \
         normalisation in `[preprocess]`"
    )]
    NotFloat32 {
        /// The input's name.
        name: String,
        /// Its element type, as the runtime names it (`Uint8`).
        element: String,
    },
    /// The input's shape is not N × the described image (negative dimensions are free).
    #[error(
        "input `{name}` has shape {dims:?} but the description says {layout:?} {want:?} (N first); \
         fix `[input]` height/width/layout"
    )]
    Shape {
        /// The input's name.
        name: String,
        /// Its dimensions as the model declares them (-1: free).
        dims: Vec<i64>,
        /// `[input] layout`.
        layout: crate::model::Layout,
        /// The non-batch dimensions the description gives.
        want: [usize; 3],
    },
}

/// How a model's output differs from its description's `[output]` ([`EngineError::Output`]).
/// Display = the part of the line after the model's path, with the setting to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputMismatch {
    /// The model has no output of the described name.
    #[error("has no output `{name}` (outputs: {outputs:?}); fix `[output] name`")]
    Missing {
        /// `[output] name`.
        name: String,
        /// The model's outputs.
        outputs: Vec<String>,
    },
    /// The output is not a tensor (a sequence or a map).
    #[error("output `{name}` is not a tensor")]
    NotTensor {
        /// The output's name.
        name: String,
    },
    /// The output's elements are neither float32 nor float16.
    #[error(
        "output `{name}` is {element} but robustream reads float32 or float16 scores; re-export \
         the model with a float32 output (a Cast at the end of the graph)"
    )]
    NotFloat32 {
        /// The output's name.
        name: String,
        /// Its element type, as the runtime names it (`Int64`).
        element: String,
    },
    /// The output is not one row of scores per image: more than two dimensions (a convolutional
    /// head exported without its flatten, `[N, C, 1, 1]`).
    #[error(
        "output `{name}` has shape {shape}, not [batch, classes]; robustream reads one row of \
         `[output] classes` scores per image: re-export the model with a Flatten (or Reshape to \
         [N, classes]) at the end of the graph"
    )]
    Rank {
        /// The output's name.
        name: String,
        /// Its dimensions as declared, `[N, 10, 1, 1]` (a free one by its name or `?`).
        shape: String,
    },
    /// The output's last dimension is not the described number of classes.
    #[error(
        "output `{name}` has {classes} classes but the description says {expected}; fix \
         `[output] classes` and the labels file"
    )]
    Classes {
        /// The output's name.
        name: String,
        /// Its last dimension.
        classes: i64,
        /// `[output] classes`.
        expected: usize,
    },
}

/// The memory behind a [`BatchBuffer`]: plain host memory, or memory an engine allocated (pinned
/// pages a GPU copies from by DMA).
trait BatchMemory: Send {
    /// The values.
    fn as_slice(&self) -> &[f32];
    /// The values, writable.
    fn as_mut_slice(&mut self) -> &mut [f32];
    /// For the engine that made it, to recognise its own kind of memory.
    fn as_any(&self) -> &dyn std::any::Any;
}

impl BatchMemory for Vec<f32> {
    fn as_slice(&self) -> &[f32] {
        self
    }
    fn as_mut_slice(&mut self) -> &mut [f32] {
        self
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Host memory a batch is assembled in and run from: `rows` images of `per` values each, back to
/// back, kept and reused batch after batch ([`Engine::batch_buffer`]).
pub struct BatchBuffer {
    mem: Box<dyn BatchMemory>,
    rows: usize,
    per: usize,
}

impl BatchBuffer {
    /// A buffer in ordinary host memory, zeroed.
    pub(crate) fn host(rows: usize, per: usize) -> Self {
        Self::new(Box::new(vec![0f32; rows * per]), rows, per)
    }

    /// A buffer in `mem`, which holds at least `rows × per` values.
    fn new(mem: Box<dyn BatchMemory>, rows: usize, per: usize) -> Self {
        debug_assert!(mem.as_slice().len() >= rows * per);
        Self { mem, rows, per }
    }

    /// Images it holds at most.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Values per image.
    pub(crate) fn per(&self) -> usize {
        self.per
    }

    /// All `rows × per` values.
    pub(crate) fn as_slice(&self) -> &[f32] {
        &self.mem.as_slice()[..self.rows * self.per]
    }

    /// All `rows × per` values, writable.
    pub fn as_mut_slice(&mut self) -> &mut [f32] {
        let n = self.rows * self.per;
        &mut self.mem.as_mut_slice()[..n]
    }

    /// The memory, for the engine that made it.
    fn memory(&self) -> &dyn BatchMemory {
        self.mem.as_ref()
    }
}

/// A model that classifies batches of preprocessed images.
pub trait Engine: Send {
    /// One line naming the runtime, provider and threads, for reports.
    fn describe(&self) -> String;
    /// Runs `batch` images laid out back to back in `input` (each `ModelDesc::input_len` values, in
    /// the description's layout) and returns `batch × classes` scores, row-major.
    fn infer(&mut self, input: &[f32], batch: usize) -> Result<Vec<f32>, EngineError>;
    /// The batch sizes the engine runs at ([`shapes`]); `None` = any size as given.
    fn shapes(&self) -> Option<BatchShapes> {
        None
    }
    /// Runs every batch size of [`Engine::shapes`] once (zeros in, results dropped), so the first
    /// real batch of each size does not pay the provider's one-off tuning; returns `(size, ms)` per
    /// size.
    fn warm_up(&mut self) -> Result<Vec<(usize, f64)>, EngineError> {
        Ok(Vec::new())
    }
    /// A buffer of `rows` images of `per` values to assemble batches in. Engines whose provider
    /// copies faster from their own memory (pinned host memory for a GPU) return that.
    fn batch_buffer(&mut self, rows: usize, per: usize) -> BatchBuffer {
        BatchBuffer::host(rows, per)
    }
    /// [`Engine::infer`] on the first `batch` images of `buffer`, without copying them out; rows
    /// after `batch` may be overwritten (padding, [`shapes::Partial::Pad`]).
    fn infer_buffer(
        &mut self,
        buffer: &mut BatchBuffer,
        batch: usize,
    ) -> Result<Vec<f32>, EngineError> {
        let n = batch * buffer.per();
        self.infer(&buffer.as_slice()[..n], batch)
    }
    /// The runtime calls of the last [`Engine::infer`] or [`Engine::infer_buffer`], in order
    /// (taken: a second call returns nothing); empty for engines that do not say.
    fn take_runs(&mut self) -> Vec<RunTiming> {
        Vec::new()
    }
}
