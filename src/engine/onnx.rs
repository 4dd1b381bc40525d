//! ONNX Runtime backend through the `ort` crate, loading the shared library at run time
//! (`load-dynamic`): the path comes from `[engine] library` or `ORT_DYLIB_PATH`.
//!
//! Providers: `cpu` always; `cuda` and `tensorrt` are registered with `error_on_failure`, so on a machine
//! without them (or with the CPU-only ONNX Runtime build) session creation fails with a clear message
//! instead of silently falling back to the CPU. TensorRT engine and timing caches go to
//! `[engine] engine_cache` (default `engines/`).
//!
//! Shapes: the engine only ever runs the batch sizes of its [`BatchShapes`] (`[engine]
//! batch_sizes` / `partial`, see [`super::shapes`]), each once at [`Engine::warm_up`]. With
//! `[engine] sessions = "per-size"` (the GPU default) each size has a session of its own, which
//! never sees another shape: ONNX Runtime's CUDA Conv keeps its cuDNN plan for the last shape only
//! (docs/gpu.md#one-session-per-batch-size); CPU sessions of one engine share their prepacked
//! weights. With TensorRT a per-size session's profile is its size (min = opt = max); a shared
//! session's spans the sizes (min = the smallest, opt = max = the largest). On CUDA, cuDNN's
//! algorithm search is `[engine] cudnn_search` (default `heuristic`, where ONNX Runtime's own
//! default is exhaustive). Each call of a batch is timed ([`Engine::take_runs`]).
//!
//! Copies: on the CPU a batch runs straight from the caller's memory (a tensor view, no copy). On
//! CUDA and TensorRT, batches are assembled in pinned host memory from ONNX Runtime's
//! `CudaPinned` allocator ([`Engine::batch_buffer`]) and run through an IO binding whose output
//! tensors, one per batch size, are allocated once ([`BoundIo`], one per session): the input goes
//! to the GPU by DMA from pinned pages and the scores come back into the same output buffers every
//! batch, in plain host memory, complete when the run returns (no device-wide synchronise).
//!
//! Element types: float32, or float16 at either end (docs/model-description.md#float16-models). A
//! float16 input gets the f32 batch converted into a float16 buffer kept between batches (pinned
//! tensors, one per batch size, on the binding path); a float16 output is converted to f32 into
//! the score vector every path returns anyway.

use std::path::{Path, PathBuf};

use half::f16;
use half::slice::HalfFloatSliceExt;
use ort::ep;
use ort::memory::{AllocationDevice, Allocator, AllocatorType, MemoryInfo, MemoryType};
use ort::session::builder::GraphOptimizationLevel;
use ort::session::{IoBinding, Session, SessionInputValue};
use ort::value::{
    DynTensor, DynValue, Shape, Tensor, TensorElementType, TensorRef, TensorRefMut, ValueType,
};

use super::shapes::{BatchShapes, Partial};
use super::{
    BatchBuffer, BatchMemory, CudnnSearch, Engine, EngineConfig, EngineError, InputMismatch,
    OutputMismatch, Provider, RunTiming, Sessions,
};
use crate::model::{Layout, ModelDesc};

/// An ONNX Runtime session for one model.
pub struct OnnxEngine {
    /// The sessions: one running every size ([`Sessions::Shared`], or a single size), or one per
    /// size in the order of `shapes.sizes()` ([`Sessions::PerSize`]).
    sessions: Vec<Session>,
    input_name: String,
    output_name: String,
    dims: [usize; 3],
    classes: usize,
    fixed_batch: Option<usize>,
    shapes: BatchShapes,
    /// The image input's element type: float32, or float16 converted from the f32 batch.
    input_element: Element,
    /// The score output's element type: float32, or float16 converted to f32 before decoding.
    output_element: Element,
    /// The float16 copy of a batch for a float16 input, kept between batches (no allocation once
    /// it has held the largest batch).
    half_input: Vec<f16>,
    /// Padding of a batch that is not one of the sizes, when the caller's memory cannot be padded.
    scratch: Vec<f32>,
    /// The IO bindings of GPU providers, one per session (`None` on the CPU).
    io: Option<Vec<BoundIo>>,
    /// The runtime calls of the current batch ([`Engine::take_runs`]).
    runs: Vec<RunTiming>,
    /// [`runtime_info`] of the loaded library.
    runtime: String,
    /// A buffer of the binding's memory for [`Engine::infer`]'s input (made on first use).
    bound_scratch: Option<BatchBuffer>,
    describe: String,
}

/// Run through an [`IoBinding`]: input tensors viewed over pinned host memory (ONNX Runtime
/// queues the copy to the GPU when they are bound), outputs written into tensors allocated once
/// per batch size. Used for the GPU providers; the same code runs on the CPU in the tests.
struct BoundIo {
    binding: IoBinding,
    /// The model input's name, NUL-terminated, for the C API.
    input_cname: std::ffi::CString,
    /// Where batch buffers are allocated (pinned host memory for a GPU).
    input_memory: MemoryInfo<'static>,
    input_allocator: Allocator,
    output_allocator: Allocator,
    /// One output tensor per batch size, `[size, classes]` of the output's element type,
    /// allocated on first use.
    outputs: Vec<(usize, DynTensor)>,
    /// For a float16 input: one float16 copy of the batch per batch size, in the input's memory
    /// kind, allocated on first use (the f32 batch is converted into it before each run).
    half_inputs: Vec<(usize, Tensor<f16>)>,
    /// The scores are bound to plain host memory, so they are in place when the run returns:
    /// ONNX Runtime ends a run by synchronising its provider's streams, and copies device outputs
    /// to host memory on them. Only scores in device memory need `SynchronizeBoundOutputs`, which
    /// on CUDA is a device-wide `cudaDeviceSynchronize` (it would also wait for every worker's
    /// stream of a GPU-made run: docs/gpu.md#one-session-per-batch-size).
    outputs_on_host: bool,
}

/// The element type of the model's image input or score output
/// (docs/model-description.md#float16-models).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    /// float32: the batch and the scores as they are.
    F32,
    /// float16: the f32 batch converted (round to nearest even) before each run, the scores
    /// converted to f32 after.
    F16,
}

impl Element {
    /// The element type of a tensor the engine can feed or read, or `None`.
    fn of(ty: TensorElementType) -> Option<Self> {
        match ty {
            TensorElementType::Float32 => Some(Element::F32),
            TensorElementType::Float16 => Some(Element::F16),
            _ => None,
        }
    }
}

/// A batch buffer in memory from the session's allocator (pinned host memory on CUDA).
struct AllocatedMemory {
    tensor: Tensor<f32>,
}

impl BatchMemory for AllocatedMemory {
    fn as_slice(&self) -> &[f32] {
        // Checked when it was made ([`OnnxEngine::batch_buffer`]): host-accessible f32 memory.
        self.tensor
            .try_extract_tensor::<f32>()
            .map(|(_, d)| d)
            .expect("allocated batch memory is host-accessible f32")
    }
    fn as_mut_slice(&mut self) -> &mut [f32] {
        self.tensor
            .try_extract_tensor_mut::<f32>()
            .map(|(_, d)| d)
            .expect("allocated batch memory is host-accessible f32")
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl OnnxEngine {
    /// Loads the ONNX Runtime library, creates a session for `model` with `config`, and checks that the
    /// model's input and output match the description.
    pub fn new(model: &ModelDesc, config: &EngineConfig) -> Result<Self, EngineError> {
        let lib = crate::runtime::library_path(config.library.as_deref())?;
        let env = crate::runtime::environment(&lib)?;
        let model_err = |message: String| EngineError::Model {
            path: model.onnx.clone(),
            message,
        };
        if !model.onnx.is_file() {
            return Err(model_err(format!(
                "the model file does not exist (named by {}); run `bash scripts/setup.sh`",
                model.path.display()
            )));
        }
        let mut shapes = config.resolved_shapes().map_err(|e| EngineError::Model {
            path: model.path.clone(),
            message: e.to_string(),
        })?;
        let per_size = config.resolved_sessions() == Sessions::PerSize;
        // Per-size sessions on the CPU share their prepacked weights (ONNX Runtime's
        // PrepackedWeightsContainer): one copy of the packed convolution weights, not one a size.
        let prepacked = (per_size && config.provider == Provider::Cpu)
            .then(ort::session::builder::PrepackedWeights::new);
        let build = |profile: &BatchShapes| -> Result<Session, EngineError> {
            session_builder(&env, model, config, profile, prepacked.as_ref())?
                .commit_from_file(&model.onnx)
                .map_err(|e| model_err(load_failure(&e.to_string(), &runtime_info(&lib))))
        };
        let one = |size: usize| BatchShapes::new(&[size], shapes.partial());
        let first_profile = match per_size {
            true => one(shapes.sizes()[0]).map_err(|e| model_err(e.to_string()))?,
            false => shapes.clone(),
        };
        let first = build(&first_profile)?;
        let (dims, fixed_batch, input_element) =
            check_input(&first, model).map_err(|mismatch| EngineError::Input {
                path: model.onnx.clone(),
                mismatch,
            })?;
        let output_element =
            check_output(&first, model).map_err(|mismatch| EngineError::Output {
                path: model.onnx.clone(),
                mismatch,
            })?;
        let mut sessions = vec![first];
        // A model with a fixed batch dimension runs at that size only, smaller batches padded.
        if let Some(fixed) = fixed_batch {
            shapes =
                BatchShapes::new(&[fixed], Partial::Pad).map_err(|e| model_err(e.to_string()))?;
            if per_size && config.provider == Provider::Tensorrt && first_profile != shapes {
                // The first session's TensorRT profile was for another size.
                sessions = vec![build(&shapes)?];
            }
        } else if per_size {
            for &size in &shapes.sizes()[1..] {
                sessions.push(build(&one(size).map_err(|e| model_err(e.to_string()))?)?);
            }
        }
        let threads = if config.threads == 0 {
            "default".to_string()
        } else {
            config.threads.to_string()
        };
        let gpu = config.provider != Provider::Cpu;
        let io = match config.io_binding.unwrap_or(gpu) {
            false => None,
            true => {
                let device = if gpu { config.device_id } else { 0 };
                let bound = sessions
                    .iter()
                    .map(|session| {
                        let memory = match gpu {
                            true => pinned(config.device_id)?,
                            false => host_memory()?,
                        };
                        BoundIo::new(session, &model.input.name, memory, device).map_err(|e| {
                            EngineError::Provider(format!("cannot set up the IO binding: {e}"))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some(bound)
            }
        };
        let describe = format!(
            "onnxruntime ({}), provider {:?}, intra-op threads {threads}, batch sizes {}{}{}",
            lib.display(),
            config.provider,
            shapes.describe(),
            match per_size {
                true => ", a session per size",
                false => "",
            },
            match (&io, gpu) {
                (Some(_), true) => ", io binding from pinned memory",
                (Some(_), false) => ", io binding",
                (None, _) => "",
            }
        )
        .to_lowercase();
        Ok(Self {
            sessions,
            input_name: model.input.name.clone(),
            output_name: model.output.name.clone(),
            dims,
            classes: model.output.classes,
            fixed_batch,
            shapes,
            input_element,
            output_element,
            half_input: Vec::new(),
            scratch: Vec::new(),
            io,
            runs: Vec::new(),
            bound_scratch: None,
            runtime: runtime_info(&lib),
            describe,
        })
    }

    /// Which of the sessions runs batches of `shape`: its own when there is one per size (`shape`
    /// is always one of the sizes: [`BatchShapes::runs`]), else the one.
    fn session_of(&self, shape: usize) -> usize {
        match self.sessions.len() {
            1 => 0,
            _ => self
                .shapes
                .sizes()
                .iter()
                .position(|&s| s == shape)
                .unwrap_or(0),
        }
    }

    /// The ONNX Runtime library this session runs on: version and build.
    pub(crate) fn runtime(&self) -> &str {
        &self.runtime
    }

    /// Values per image.
    fn per(&self) -> usize {
        self.dims.iter().product()
    }

    /// Runs exactly `shape` images from `input` (`shape × per` values) and returns `rows × classes`
    /// scores (the first `rows` images; the rest is padding).
    fn run_plain(
        &mut self,
        input: &[f32],
        shape: usize,
        rows: usize,
    ) -> Result<Vec<f32>, EngineError> {
        let started = std::time::Instant::now();
        let dims = [shape, self.dims[0], self.dims[1], self.dims[2]];
        let run = |e: ort::Error| EngineError::Run(e.to_string());
        let session = self.session_of(shape);
        let tensor = match self.input_element {
            Element::F32 => {
                SessionInputValue::from(TensorRef::from_array_view((dims, input)).map_err(run)?)
            }
            Element::F16 => {
                // Resized to the batch (allocating only when it grows), then overwritten.
                self.half_input.resize(input.len(), f16::ZERO);
                self.half_input.convert_from_f32_slice(input);
                SessionInputValue::from(
                    TensorRef::from_array_view((dims, &self.half_input[..])).map_err(run)?,
                )
            }
        };
        let outputs = self.sessions[session]
            .run(ort::inputs![self.input_name.as_str() => tensor])
            .map_err(run)?;
        let value = outputs
            .get(&self.output_name)
            .ok_or_else(|| EngineError::Run(format!("no output `{}`", self.output_name)))?;
        let scores = read_scores(
            value,
            self.output_element,
            &self.output_name,
            shape,
            rows,
            self.classes,
        )?;
        self.runs.push(RunTiming {
            shape,
            rows,
            ms: started.elapsed().as_secs_f64() * 1e3,
        });
        Ok(scores)
    }

    /// Runs `shape` images starting at `ptr` through the IO binding; returns the first `rows`
    /// rows of scores.
    ///
    /// # Safety
    /// `ptr` points to `shape × per` initialised f32 values in memory of the binding's input kind
    /// ([`BoundIo::input_memory`]) that nothing writes to until this returns.
    unsafe fn run_bound(
        &mut self,
        ptr: *mut f32,
        shape: usize,
        rows: usize,
    ) -> Result<Vec<f32>, EngineError> {
        let started = std::time::Instant::now();
        let run = |e: ort::Error| EngineError::Run(e.to_string());
        let index = self.session_of(shape);
        let io = &mut self
            .io
            .as_mut()
            .expect("run_bound is only called with an IO binding")[index];
        let dims = Shape::new([shape, self.dims[0], self.dims[1], self.dims[2]].map(|d| d as i64));
        // SAFETY: by this function's contract `ptr` holds `shape × per` f32 values of the kind
        // `input_memory` describes, unchanged until we return; the view is dropped, and unbound
        // below, before we return, so it never outlives them.
        let input =
            unsafe { TensorRefMut::<f32>::from_raw(io.input_memory.to_owned(), ptr.cast(), dims) }
                .map_err(run)?;
        let (session, output_name, classes) =
            (&mut self.sessions[index], &self.output_name, self.classes);
        let (input_element, output_element) = (self.input_element, self.output_element);
        let result = (|| {
            match input_element {
                Element::F32 => bind_in_place(&mut io.binding, &io.input_cname, &*input)?,
                Element::F16 => {
                    // Converted into a float16 tensor of the same memory kind, one per batch size,
                    // kept between batches.
                    let slot = match io.half_inputs.iter().position(|(s, _)| *s == shape) {
                        Some(i) => i,
                        None => {
                            let t = Tensor::<f16>::new(&io.input_allocator, input.shape().clone())
                                .map_err(run)?;
                            io.half_inputs.push((shape, t));
                            io.half_inputs.len() - 1
                        }
                    };
                    let (_, src) = input.try_extract_tensor::<f32>().map_err(run)?;
                    let (_, dst) = io.half_inputs[slot]
                        .1
                        .try_extract_tensor_mut::<f16>()
                        .map_err(run)?;
                    dst.convert_from_f32_slice(src);
                    bind_in_place(&mut io.binding, &io.input_cname, &io.half_inputs[slot].1)?;
                }
            }
            let slot = match io.outputs.iter().position(|(s, _)| *s == shape) {
                Some(i) => i,
                None => {
                    let t = match output_element {
                        Element::F32 => Tensor::<f32>::new(&io.output_allocator, [shape, classes])
                            .map(Tensor::upcast),
                        Element::F16 => Tensor::<f16>::new(&io.output_allocator, [shape, classes])
                            .map(Tensor::upcast),
                    }
                    .map_err(run)?;
                    io.outputs.push((shape, t));
                    io.outputs.len() - 1
                }
            };
            io.binding
                .bind_output(output_name.as_str(), &mut io.outputs[slot].1)
                .map_err(run)?;
            let out = session.run_binding(&io.binding).map_err(run)?;
            if !io.outputs_on_host {
                io.binding.synchronize_outputs().map_err(run)?;
            }
            let value = out
                .get(output_name)
                .ok_or_else(|| EngineError::Run(format!("no output `{output_name}`")))?;
            read_scores(value, output_element, output_name, shape, rows, classes)
        })();
        // On every path: the binding must not keep a view of memory the caller reuses.
        io.binding.clear_inputs();
        if result.is_ok() {
            self.runs.push(RunTiming {
                shape,
                rows,
                ms: started.elapsed().as_secs_f64() * 1e3,
            });
        }
        result
    }

    /// One batch of zeros at each size, timed.
    fn run_each_size(&mut self) -> Result<Vec<(usize, f64)>, EngineError> {
        let per = self.per();
        let sizes = self.shapes.sizes().to_vec();
        let mut buffer = self.batch_buffer(self.shapes.max(), per);
        buffer.as_mut_slice().fill(0.0);
        let mut times = Vec::with_capacity(sizes.len());
        for size in sizes {
            let t = std::time::Instant::now();
            self.infer_buffer(&mut buffer, size)?;
            times.push((size, t.elapsed().as_secs_f64() * 1e3));
        }
        Ok(times)
    }

    /// Whether `buffer` is this engine's bound input memory.
    fn is_bound(&self, buffer: &BatchBuffer) -> bool {
        self.io.is_some()
            && buffer
                .memory()
                .as_any()
                .downcast_ref::<AllocatedMemory>()
                .is_some()
    }

    /// The batch size the model requires, if its batch dimension is fixed.
    pub(crate) fn fixed_batch(&self) -> Option<usize> {
        self.fixed_batch
    }
}

impl BoundIo {
    fn new(
        session: &Session,
        input: &str,
        input_memory: MemoryInfo<'static>,
        device: i32,
    ) -> ort::Result<Self> {
        let input_allocator = Allocator::new(session, input_memory.to_owned())?;
        // Scores in pinned memory are refused by ONNX Runtime 1.31's CUDA provider at the first
        // run (its pinned-to-pinned copy of an output onto itself fails `dst_data != src_data`;
        // seen on an H200, docs/gpu.md#measured-on-a-gpu): with a pinned input they go to plain
        // host memory, a few kilobytes per batch.
        let output_memory = if input_memory.allocation_device() == AllocationDevice::CUDA_PINNED {
            MemoryInfo::new(
                AllocationDevice::CPU,
                0,
                AllocatorType::Arena,
                MemoryType::Default,
            )?
        } else {
            MemoryInfo::new(
                input_memory.allocation_device(),
                device,
                AllocatorType::Device,
                MemoryType::CPUOutput,
            )?
        };
        let outputs_on_host = output_memory.allocation_device() == AllocationDevice::CPU;
        // The CPU provider has no allocator of its own for MemoryType::CPUOutput: use the input's.
        let output_allocator = Allocator::new(session, output_memory)
            .or_else(|_| Allocator::new(session, input_memory.to_owned()))?;
        Ok(Self {
            binding: session.create_binding()?,
            input_cname: std::ffi::CString::new(input)
                .map_err(|_| ort::Error::new("the input name holds a NUL byte"))?,
            input_memory,
            input_allocator,
            output_allocator,
            outputs: Vec::new(),
            half_inputs: Vec::new(),
            outputs_on_host,
        })
    }
}

/// The first `rows` rows of scores of the output `value` of a run of `shape` images, as f32 (a
/// float16 output converted). The f32 path copies them out; the f16 path converts into the copy
/// it returns instead, so neither allocates more than the one vector.
fn read_scores(
    value: &DynValue,
    element: Element,
    name: &str,
    shape: usize,
    rows: usize,
    classes: usize,
) -> Result<Vec<f32>, EngineError> {
    let extract = |e: ort::Error| EngineError::Run(format!("output `{name}`: {e}"));
    let wrong_shape = |out_shape: &Shape| {
        EngineError::Run(format!(
            "output `{name}` has shape {out_shape:?}, expected [{shape}, {classes}]; fix \
             `[output] classes`"
        ))
    };
    match element {
        Element::F32 => {
            let (out_shape, data) = value.try_extract_tensor::<f32>().map_err(extract)?;
            if data.len() != shape * classes {
                return Err(wrong_shape(out_shape));
            }
            Ok(data[..rows * classes].to_vec())
        }
        Element::F16 => {
            let (out_shape, data) = value.try_extract_tensor::<f16>().map_err(extract)?;
            if data.len() != shape * classes {
                return Err(wrong_shape(out_shape));
            }
            let mut out = vec![0f32; rows * classes];
            data[..rows * classes].convert_to_f32_slice(&mut out);
            Ok(out)
        }
    }
}

/// The loaded ONNX Runtime for reports: its version (from the library's versioned file name, which
/// the set-up script's symlink points to) and its build line (commit, build type).
fn runtime_info(lib: &Path) -> String {
    let version = std::fs::canonicalize(lib)
        .ok()
        .and_then(|p| {
            let name = p.file_name()?.to_string_lossy().into_owned();
            Some(name.split_once(".so.")?.1.to_string())
        })
        .unwrap_or_else(|| "(version unknown)".into());
    let build = ort::info()
        .trim_start_matches("ORT Build Info:")
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    format!("onnxruntime {version} ({build})")
}

/// Binds `value` to the session input `name` through ONNX Runtime's C API as it is: ONNX Runtime
/// keeps using the memory in place when the session reads its input from that kind of memory (the
/// CPU) and queues a copy when it does not (pinned host memory to a GPU: by DMA). The `ort` crate's
/// own `bind_input` first clones a tensor that views borrowed memory of the session's own device,
/// which is the copy this path exists to avoid (and, in `ort` 2.0.0-rc.15, deadlocks on the CPU).
/// The caller keeps the memory alive and unchanged until the run is over and then clears the
/// binding's inputs.
fn bind_in_place<V: ort::AsPointer<Sys = ort::sys::OrtValue>>(
    binding: &mut IoBinding,
    name: &std::ffi::CStr,
    value: &V,
) -> Result<(), EngineError> {
    use ort::AsPointer;
    let api = ort::api();
    // SAFETY: `binding` and `value` are live `ort` wrappers, so their pointers are valid, non-null
    // ONNX Runtime objects; `name` is NUL-terminated and outlives the call. BindInput only reads
    // its arguments (it keeps its own reference to the value's tensor, which the caller's contract
    // above covers) and returns either null or a status we own.
    let status = unsafe { (api.BindInput)(binding.ptr_mut(), name.as_ptr(), value.ptr()) };
    if status.0.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null status from the API is a valid OrtStatus we own: read its message, then
    // release it exactly once.
    let message = unsafe {
        let text = std::ffi::CStr::from_ptr((api.GetErrorMessage)(status.0))
            .to_string_lossy()
            .into_owned();
        (api.ReleaseStatus)(status.0);
        text
    };
    Err(EngineError::Run(format!(
        "cannot bind the input: {message}"
    )))
}

/// A session builder for `model` with `config`'s threads and provider; a TensorRT profile spans
/// `profile`'s sizes (one size for a per-size session). `prepacked`: the container the CPU
/// sessions of one engine share their packed weights through.
fn session_builder(
    env: &ort::environment::Environment,
    model: &ModelDesc,
    config: &EngineConfig,
    profile: &BatchShapes,
    prepacked: Option<&ort::session::builder::PrepackedWeights>,
) -> Result<ort::session::builder::SessionBuilder, EngineError> {
    let setup = |e: ort::Error<_>| EngineError::Run(format!("cannot configure the session: {e}"));
    let mut builder = Session::builder(env)
        .map_err(|e| EngineError::Run(e.to_string()))?
        .with_optimization_level(GraphOptimizationLevel::All)
        .map_err(setup)?
        .with_inter_threads(1)
        .map_err(setup)?
        .with_intra_op_spinning(config.spin)
        .map_err(setup)?;
    if config.threads > 0 {
        builder = builder.with_intra_threads(config.threads).map_err(setup)?;
    }
    if let Some(weights) = prepacked {
        builder = builder.with_prepacked_weights(weights).map_err(setup)?;
    }
    let search = match config.cudnn_search {
        CudnnSearch::Heuristic => ep::cuda::ConvAlgorithmSearch::Heuristic,
        CudnnSearch::Exhaustive => ep::cuda::ConvAlgorithmSearch::Exhaustive,
        CudnnSearch::Default => ep::cuda::ConvAlgorithmSearch::Default,
    };
    let cuda = || {
        ep::CUDA::default()
            .with_device_id(config.device_id)
            .with_conv_algorithm_search(search)
    };
    Ok(match config.provider {
        Provider::Cpu => builder,
        Provider::Cuda => builder
            .with_execution_providers([cuda().build().error_on_failure()])
            .map_err(|e| provider_error("cuda", &e))?,
        Provider::Tensorrt => {
            let cache = absolute(
                config
                    .engine_cache
                    .as_deref()
                    .unwrap_or(Path::new("engines")),
            );
            std::fs::create_dir_all(&cache).map_err(|e| {
                EngineError::Provider(format!(
                    "cannot create engine cache {}: {e}",
                    cache.display()
                ))
            })?;
            let cache = cache.to_string_lossy().into_owned();
            let (min, max) = trt_profile(model, profile);
            builder
                .with_execution_providers([
                    ep::TensorRT::default()
                        .with_device_id(config.device_id)
                        .with_fp16(config.fp16)
                        .with_engine_cache(true)
                        .with_engine_cache_path(&cache)
                        .with_timing_cache(true)
                        .with_timing_cache_path(&cache)
                        .with_profile_min_shapes(&min)
                        .with_profile_opt_shapes(&max)
                        .with_profile_max_shapes(&max)
                        .build()
                        .error_on_failure(),
                    cuda().build(),
                ])
                .map_err(|e| provider_error("tensorrt", &e))?
        }
    })
}

/// Pinned host memory of GPU `device` (ONNX Runtime's `CudaPinned`), which the GPU reads by DMA.
fn pinned(device: i32) -> Result<MemoryInfo<'static>, EngineError> {
    MemoryInfo::new(
        AllocationDevice::CUDA_PINNED,
        device,
        AllocatorType::Device,
        MemoryType::CPUInput,
    )
    .map_err(|e| EngineError::Provider(format!("no pinned host memory: {e}")))
}

/// The CPU provider's host memory (its arena allocator), for an IO binding on the CPU.
fn host_memory() -> Result<MemoryInfo<'static>, EngineError> {
    MemoryInfo::new(
        AllocationDevice::CPU,
        0,
        AllocatorType::Arena,
        MemoryType::Default,
    )
    .map_err(|e| EngineError::Provider(format!("no host memory info: {e}")))
}

/// TensorRT's optimisation profile for the input over the batch sizes: `(min, max)` shape strings
/// (`name:NxCxHxW`), min at the smallest size and opt = max at the largest.
fn trt_profile(model: &ModelDesc, shapes: &BatchShapes) -> (String, String) {
    let (h, w) = (model.input.height, model.input.width);
    let dims = |n: usize| match model.input.layout {
        Layout::Nchw => format!("{}:{n}x3x{h}x{w}", model.input.name),
        Layout::Nhwc => format!("{}:{n}x{h}x{w}x3", model.input.name),
    };
    (dims(shapes.sizes()[0]), dims(shapes.max()))
}

/// ONNX Runtime's reason for refusing a model file, with what to do about it.
fn load_failure(reason: &str, runtime: &str) -> String {
    let reason = reason.trim().trim_end_matches('.');
    let lower = reason.to_lowercase();
    let fix = if lower.contains("protobuf parsing failed") || lower.contains("no graph") {
        "the file is not an ONNX model (corrupt, truncated or another format): export the model \
         to ONNX again, or run `bash scripts/setup.sh` for the demo model"
            .to_string()
    } else if lower.contains("ir version") || lower.contains("opset") {
        format!(
            "the model is newer than this ONNX Runtime ({runtime}) reads: export it with an older \
             opset, or point `[engine] library` at a newer ONNX Runtime"
        )
    } else {
        "check that `onnx` in the model description names the right file, and that the file \
         passes `onnx.checker.check_model`"
            .to_string()
    };
    format!("ONNX Runtime cannot load it ({reason}); {fix}")
}

fn provider_error<T>(name: &str, e: &ort::Error<T>) -> EngineError {
    EngineError::Provider(format!(
        "execution provider `{name}` is not available here ({e}); it needs a GPU, the GPU build of \
         ONNX Runtime and the CUDA{} libraries. Use `provider = \"cpu\"` on this machine.",
        if name == "tensorrt" { "/TensorRT" } else { "" }
    ))
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Checks the input tensor against the description; returns its non-batch dims and a fixed batch size.
fn check_input(
    session: &Session,
    model: &ModelDesc,
) -> Result<([usize; 3], Option<usize>, Element), InputMismatch> {
    let name = || model.input.name.clone();
    let input = session
        .inputs()
        .iter()
        .find(|i| i.name() == model.input.name)
        .ok_or_else(|| InputMismatch::Missing {
            name: name(),
            inputs: session.inputs().iter().map(|i| i.name().into()).collect(),
        })?;
    let ValueType::Tensor { ty, shape, .. } = input.dtype() else {
        return Err(InputMismatch::NotTensor { name: name() });
    };
    let element = Element::of(*ty).ok_or_else(|| InputMismatch::NotFloat32 {
        name: name(),
        element: format!("{ty:?}"),
    })?;
    let (h, w) = (model.input.height as usize, model.input.width as usize);
    let want: [usize; 3] = match model.input.layout {
        Layout::Nchw => [3, h, w],
        Layout::Nhwc => [h, w, 3],
    };
    let dims: Vec<i64> = shape.iter().copied().collect();
    let ok = dims.len() == 4
        && dims[1..]
            .iter()
            .zip(want)
            .all(|(&d, w)| d < 0 || d as usize == w);
    if !ok {
        return Err(InputMismatch::Shape {
            name: name(),
            dims,
            layout: model.input.layout,
            want,
        });
    }
    let fixed = (dims[0] > 0).then_some(dims[0] as usize);
    Ok((want, fixed, element))
}

/// Checks the output tensor against the description's `[output]`; returns its element type.
fn check_output(session: &Session, model: &ModelDesc) -> Result<Element, OutputMismatch> {
    let name = || model.output.name.clone();
    let output = session
        .outputs()
        .iter()
        .find(|o| o.name() == model.output.name)
        .ok_or_else(|| OutputMismatch::Missing {
            name: name(),
            outputs: session.outputs().iter().map(|o| o.name().into()).collect(),
        })?;
    let ValueType::Tensor {
        ty,
        shape,
        dimension_symbols,
    } = output.dtype()
    else {
        return Err(OutputMismatch::NotTensor { name: name() });
    };
    let element = Element::of(*ty).ok_or_else(|| OutputMismatch::NotFloat32 {
        name: name(),
        element: format!("{ty:?}"),
    })?;
    if shape.len() > 2 {
        let dims: Vec<String> = shape
            .iter()
            .enumerate()
            .map(|(i, &d)| match dimension_symbols.get(i) {
                _ if d >= 0 => d.to_string(),
                Some(s) if !s.is_empty() => s.clone(),
                _ => "?".into(),
            })
            .collect();
        return Err(OutputMismatch::Rank {
            name: name(),
            shape: format!("[{}]", dims.join(", ")),
        });
    }
    let last = shape.iter().last().copied().unwrap_or(-1);
    if last >= 0 && last as usize != model.output.classes {
        return Err(OutputMismatch::Classes {
            name: name(),
            classes: last,
            expected: model.output.classes,
        });
    }
    Ok(element)
}

impl Engine for OnnxEngine {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn infer(&mut self, input: &[f32], batch: usize) -> Result<Vec<f32>, EngineError> {
        self.runs.clear();
        self.infer_rows(input, batch)
    }

    fn infer_buffer(
        &mut self,
        buffer: &mut BatchBuffer,
        batch: usize,
    ) -> Result<Vec<f32>, EngineError> {
        self.runs.clear();
        self.infer_in(buffer, batch)
    }

    fn take_runs(&mut self) -> Vec<RunTiming> {
        std::mem::take(&mut self.runs)
    }

    fn shapes(&self) -> Option<BatchShapes> {
        Some(self.shapes.clone())
    }

    fn warm_up(&mut self) -> Result<Vec<(usize, f64)>, EngineError> {
        let times = match self.run_each_size() {
            // The binding is the one part a provider may refuse at run time: fall back to plain
            // runs (said in `describe`) rather than fail the run.
            Err(e) if self.io.is_some() => {
                self.io = None;
                self.bound_scratch = None;
                self.describe = format!("{}; io binding off (warm-up: {e})", self.describe);
                self.run_each_size()
            }
            r => r,
        };
        self.runs.clear();
        times
    }

    fn batch_buffer(&mut self, rows: usize, per: usize) -> BatchBuffer {
        // Every session's binding reads the same kind of memory; the first's allocator makes it.
        let Some(io) = self.io.as_ref().and_then(|io| io.first()) else {
            return BatchBuffer::host(rows, per);
        };
        let made = Tensor::<f32>::new(&io.input_allocator, [rows.max(1), per.max(1)]).and_then(
            |mut tensor| {
                // Allocated uninitialised; this also checks the memory is host-accessible f32.
                tensor.try_extract_tensor_mut::<f32>()?.1.fill(0.0);
                Ok(tensor)
            },
        );
        match made {
            Ok(tensor) => BatchBuffer::new(Box::new(AllocatedMemory { tensor }), rows, per),
            Err(e) => {
                // Without memory of its own kind the binding has nothing to read: plain runs.
                self.io = None;
                self.bound_scratch = None;
                self.describe = format!(
                    "{}; io binding off (its memory could not be allocated: {e})",
                    self.describe
                );
                BatchBuffer::host(rows, per)
            }
        }
    }
}

impl OnnxEngine {
    /// [`Engine::infer`] without clearing the runs of the batch (it is also a part of one).
    fn infer_rows(&mut self, input: &[f32], batch: usize) -> Result<Vec<f32>, EngineError> {
        let per = self.per();
        if input.len() != per * batch {
            return Err(EngineError::Run(format!(
                "input holds {} values, expected {batch} × {per}",
                input.len()
            )));
        }
        if self.io.is_some() {
            // A binding reads from its own memory: through a buffer of it.
            let mut buffer = match self.bound_scratch.take() {
                Some(b) => b,
                None => self.batch_buffer(self.shapes.max(), per),
            };
            let mut out = Vec::with_capacity(batch * self.classes);
            let result = input.chunks(buffer.rows() * per).try_for_each(|chunk| {
                buffer.as_mut_slice()[..chunk.len()].copy_from_slice(chunk);
                out.extend(self.infer_in(&mut buffer, chunk.len() / per)?);
                Ok(())
            });
            self.bound_scratch = Some(buffer);
            return result.map(|()| out);
        }
        let mut out = Vec::with_capacity(batch * self.classes);
        for run in self.shapes.runs(batch) {
            let rows = &input[run.start * per..(run.start + run.rows) * per];
            let scores = if run.rows == run.shape {
                self.run_plain(rows, run.shape, run.rows)?
            } else {
                // Padding: through the scratch.
                let mut scratch = std::mem::take(&mut self.scratch);
                scratch.clear();
                scratch.extend_from_slice(rows);
                scratch.resize(run.shape * per, 0.0);
                let r = self.run_plain(&scratch, run.shape, run.rows);
                self.scratch = scratch;
                r?
            };
            out.extend_from_slice(&scores);
        }
        Ok(out)
    }

    /// [`Engine::infer_buffer`] without clearing the runs of the batch.
    fn infer_in(
        &mut self,
        buffer: &mut BatchBuffer,
        batch: usize,
    ) -> Result<Vec<f32>, EngineError> {
        let per = self.per();
        if buffer.per() != per || batch > buffer.rows() {
            return Err(EngineError::Run(format!(
                "batch buffer of {} × {} values cannot hold {batch} × {per}",
                buffer.rows(),
                buffer.per()
            )));
        }
        let bound = self.is_bound(buffer);
        if !bound && self.io.is_some() {
            // Host memory on a binding engine: through the scratch (`infer`).
            return self.infer_rows(&buffer.as_slice()[..batch * per], batch);
        }
        let capacity = buffer.rows();
        let mut out = Vec::with_capacity(batch * self.classes);
        for run in self.shapes.runs(batch) {
            if run.start + run.shape > capacity {
                // The padding does not fit behind the rows: copy them out (`infer` pads).
                let rows = &buffer.as_slice()[run.start * per..(run.start + run.rows) * per];
                let rows = rows.to_vec();
                out.extend(self.infer_rows(&rows, run.rows)?);
                continue;
            }
            let data = buffer.as_mut_slice();
            // Padding rows after the batch (only the last run pads): zeros.
            data[(run.start + run.rows) * per..(run.start + run.shape) * per].fill(0.0);
            let span = &mut data[run.start * per..(run.start + run.shape) * per];
            let scores = match bound {
                false => self.run_plain(span, run.shape, run.rows)?,
                // SAFETY: `span` is `shape × per` initialised values of the binding's own
                // allocator (checked by `is_bound`), borrowed mutably for the whole call.
                true => unsafe { self.run_bound(span.as_mut_ptr(), run.shape, run.rows)? },
            };
            out.extend_from_slice(&scores);
        }
        Ok(out)
    }
}
