//! ONNX Runtime backend through the `ort` crate, loading the shared library at run time
//! (`load-dynamic`): the path comes from `[engine] library` or `ORT_DYLIB_PATH`.
//!
//! Providers: `cpu` always; `cuda` and `tensorrt` are registered with `error_on_failure`, so on a machine
//! without them (or with the CPU-only ONNX Runtime build) session creation fails with a clear message
//! instead of silently falling back to the CPU. TensorRT engine and timing caches go to
//! `[engine] engine_cache` (default `engines/`).

use std::path::{Path, PathBuf};

use ort::ep;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::{TensorElementType, TensorRef, ValueType};

use super::model::{Layout, ModelDesc};
use super::{Engine, EngineConfig, EngineError, Provider};

/// An ONNX Runtime session for one model.
pub struct OnnxEngine {
    session: Session,
    input_name: String,
    output_name: String,
    dims: [usize; 3],
    classes: usize,
    fixed_batch: Option<usize>,
    describe: String,
}

/// Where the set-up script puts the library, relative to the repository root.
const SETUP_LIBRARY: &str = "assets/lib/libonnxruntime.so";

/// Finds the ONNX Runtime library: the configured path, else `ORT_DYLIB_PATH`, else the set-up
/// script's copy (`assets/lib/libonnxruntime.so` under the working directory, or under the repository
/// a `target/<profile>/robustream` binary was built in).
pub fn library_path(config: &EngineConfig) -> Result<PathBuf, EngineError> {
    let path = match (&config.library, std::env::var_os("ORT_DYLIB_PATH")) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) => PathBuf::from(p),
        (None, None) => {
            let exe_repo = std::env::current_exe()
                .ok()
                .and_then(|e| Some(e.parent()?.parent()?.parent()?.join(SETUP_LIBRARY)));
            return [Some(PathBuf::from(SETUP_LIBRARY)), exe_repo]
                .into_iter()
                .flatten()
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    EngineError::Library(
                        "no ONNX Runtime library: set `[engine] library` in the config or \
                         ORT_DYLIB_PATH, or run `bash scripts/setup.sh` to install \
                         assets/lib/libonnxruntime.so"
                            .into(),
                    )
                });
        }
    };
    // ort panics on a missing file; check first and say what to do.
    if !path.is_file() {
        return Err(EngineError::Library(format!(
            "ONNX Runtime library {} does not exist; run `bash scripts/setup.sh` or point \
             `[engine] library` / ORT_DYLIB_PATH at libonnxruntime.so",
            path.display()
        )));
    }
    Ok(path)
}

/// The process's ONNX Runtime environment, made on first use from the library at `lib` (see
/// [`library_path`]) and shared by every later session: `ort` allows one environment per process
/// (a second `build` fails), and the classifier and a segmentation mask source
/// (`source::segment`) each need a session. The library is loaded once; a later call with another
/// path gets the environment of the first.
pub fn environment(lib: &Path) -> Result<ort::environment::Environment, EngineError> {
    static ENV: std::sync::Mutex<Option<ort::environment::Environment>> =
        std::sync::Mutex::new(None);
    let mut env = ENV
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(e) = env.as_ref() {
        return Ok(e.clone());
    }
    let made = ort::init_from(lib)
        .map_err(|e| {
            EngineError::Library(format!(
                "cannot load ONNX Runtime from {}: {e}",
                lib.display()
            ))
        })?
        .with_name("robustream")
        .build()
        .map_err(|e| EngineError::Library(format!("cannot start ONNX Runtime: {e}")))?;
    *env = Some(made.clone());
    Ok(made)
}

impl OnnxEngine {
    /// Loads the ONNX Runtime library, creates a session for `model` with `config`, and checks that the
    /// model's input and output match the description.
    pub fn new(model: &ModelDesc, config: &EngineConfig) -> Result<Self, EngineError> {
        let lib = library_path(config)?;
        let env = environment(&lib)?;
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
        let setup =
            |e: ort::Error<_>| EngineError::Run(format!("cannot configure the session: {e}"));
        let mut builder = Session::builder(&env)
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
        builder = match config.provider {
            Provider::Cpu => builder,
            Provider::Cuda => builder
                .with_execution_providers([ep::CUDA::default()
                    .with_device_id(config.device_id)
                    .build()
                    .error_on_failure()])
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
                builder
                    .with_execution_providers([
                        ep::TensorRT::default()
                            .with_device_id(config.device_id)
                            .with_fp16(config.fp16)
                            .with_engine_cache(true)
                            .with_engine_cache_path(&cache)
                            .with_timing_cache(true)
                            .with_timing_cache_path(&cache)
                            .build()
                            .error_on_failure(),
                        ep::CUDA::default().with_device_id(config.device_id).build(),
                    ])
                    .map_err(|e| provider_error("tensorrt", &e))?
            }
        };
        let session = builder
            .commit_from_file(&model.onnx)
            .map_err(|e| model_err(format!("ONNX Runtime cannot load it: {e}")))?;
        let (dims, fixed_batch) = check_input(&session, model).map_err(model_err)?;
        check_output(&session, model).map_err(model_err)?;
        let threads = if config.threads == 0 {
            "default".to_string()
        } else {
            config.threads.to_string()
        };
        let describe = format!(
            "onnxruntime ({}), provider {:?}, intra-op threads {threads}",
            lib.display(),
            config.provider
        )
        .to_lowercase();
        Ok(Self {
            session,
            input_name: model.input.name.clone(),
            output_name: model.output.name.clone(),
            dims,
            classes: model.output.classes,
            fixed_batch,
            describe,
        })
    }

    /// The batch size the model requires, if its batch dimension is fixed.
    pub fn fixed_batch(&self) -> Option<usize> {
        self.fixed_batch
    }
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
) -> Result<([usize; 3], Option<usize>), String> {
    let names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
    let input = session
        .inputs()
        .iter()
        .find(|i| i.name() == model.input.name)
        .ok_or_else(|| {
            format!(
                "has no input `{}` (inputs: {names:?}); fix `[input] name`",
                model.input.name
            )
        })?;
    let ValueType::Tensor { ty, shape, .. } = input.dtype() else {
        return Err(format!("input `{}` is not a tensor", model.input.name));
    };
    if *ty != TensorElementType::Float32 {
        return Err(format!(
            "input `{}` is {ty:?}, robustream feeds float32",
            model.input.name
        ));
    }
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
        return Err(format!(
            "input `{}` has shape {dims:?} but the description says {:?} {want:?} (N first); fix \
             `[input]` height/width/layout",
            model.input.name, model.input.layout
        ));
    }
    let fixed = (dims[0] > 0).then_some(dims[0] as usize);
    Ok((want, fixed))
}

fn check_output(session: &Session, model: &ModelDesc) -> Result<(), String> {
    let names: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
    let output = session
        .outputs()
        .iter()
        .find(|o| o.name() == model.output.name)
        .ok_or_else(|| {
            format!(
                "has no output `{}` (outputs: {names:?}); fix `[output] name`",
                model.output.name
            )
        })?;
    let ValueType::Tensor { ty, shape, .. } = output.dtype() else {
        return Err(format!("output `{}` is not a tensor", model.output.name));
    };
    if *ty != TensorElementType::Float32 {
        return Err(format!(
            "output `{}` is {ty:?}, robustream reads float32",
            model.output.name
        ));
    }
    let last = shape.iter().last().copied().unwrap_or(-1);
    if last >= 0 && last as usize != model.output.classes {
        return Err(format!(
            "output `{}` has {last} classes but the description says {}; fix `[output] classes` and the labels file",
            model.output.name, model.output.classes
        ));
    }
    Ok(())
}

impl Engine for OnnxEngine {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn infer(&mut self, input: &[f32], batch: usize) -> Result<Vec<f32>, EngineError> {
        let per = self.dims.iter().product::<usize>();
        if input.len() != per * batch {
            return Err(EngineError::Run(format!(
                "input holds {} values, expected {batch} × {per}",
                input.len()
            )));
        }
        if let Some(fixed) = self.fixed_batch
            && fixed != batch
        {
            return Err(EngineError::Run(format!(
                "the model's batch dimension is fixed at {fixed}; set `[pipeline] max_batch = {fixed}`"
            )));
        }
        let shape = [batch, self.dims[0], self.dims[1], self.dims[2]];
        let tensor = TensorRef::from_array_view((shape, input))
            .map_err(|e| EngineError::Run(e.to_string()))?;
        let outputs = self
            .session
            .run(ort::inputs![self.input_name.as_str() => tensor])
            .map_err(|e| EngineError::Run(e.to_string()))?;
        let value = outputs
            .get(&self.output_name)
            .ok_or_else(|| EngineError::Run(format!("no output `{}`", self.output_name)))?;
        let (out_shape, data) = value
            .try_extract_tensor::<f32>()
            .map_err(|e| EngineError::Run(format!("output `{}`: {e}", self.output_name)))?;
        if data.len() != batch * self.classes {
            return Err(EngineError::Run(format!(
                "output `{}` has shape {out_shape:?}, expected [{batch}, {}]; fix `[output] classes`",
                self.output_name, self.classes
            )));
        }
        Ok(data.to_vec())
    }
}
