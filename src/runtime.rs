//! ONNX Runtime itself: finding the shared library and starting the one environment a process may
//! have. The classifier and a segmentation mask source both run sessions in it, so it sits below
//! both.

use std::path::{Path, PathBuf};

/// ONNX Runtime could not be found or started; the message names the library and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RuntimeError(pub(crate) String);

/// Where the set-up script puts the library, relative to an asset folder ([`crate::assets`]).
const SETUP_LIBRARY: &str = "lib/libonnxruntime.so";

/// Finds the ONNX Runtime library: the configured path, else `ORT_DYLIB_PATH`, else the set-up
/// script's copy (`lib/libonnxruntime.so` in the asset folders, [`crate::assets::dirs`]: the
/// checkout's `assets/`, the one of the repository the binary was built in, the cache), so an
/// installed binary works from any directory.
pub(crate) fn library_path(configured: Option<&Path>) -> Result<PathBuf, RuntimeError> {
    let path = match (configured, std::env::var_os("ORT_DYLIB_PATH")) {
        (Some(p), _) => p.to_path_buf(),
        (None, Some(p)) => PathBuf::from(p),
        (None, None) => {
            let tried = crate::assets::candidates(SETUP_LIBRARY);
            return tried.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
                let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
                RuntimeError(format!(
                    "no ONNX Runtime library: set `[engine] library` in the config or \
                     ORT_DYLIB_PATH, or run `bash scripts/setup.sh` to install \
                     assets/lib/libonnxruntime.so (looked in {})",
                    tried.join(", ")
                ))
            });
        }
    };
    // ort panics on a missing file; check first and say what to do.
    if !path.is_file() {
        return Err(RuntimeError(format!(
            "ONNX Runtime library {} does not exist; run `bash scripts/setup.sh` or point \
             `[engine] library` / ORT_DYLIB_PATH at libonnxruntime.so",
            path.display()
        )));
    }
    Ok(path)
}

/// ONNX Runtime's own log messages, one line each on stderr: warnings and fatal errors. Errors are
/// left out: each one also fails the call it belongs to, whose status robustream reports in its own
/// one-line message (ONNX Runtime's logger would print it again, in colour, over several lines, and
/// from its own thread, so that it could cut into another line of robustream's).
fn log_line(level: ort::logging::LogLevel, _category: &str, _id: &str, _at: &str, message: &str) {
    use ort::logging::LogLevel;
    let what = match level {
        LogLevel::Warning => "warning",
        LogLevel::Fatal => "fatal error",
        LogLevel::Verbose | LogLevel::Info | LogLevel::Error => return,
    };
    // One `eprintln!` holds stderr's lock for the whole line.
    eprintln!(
        "onnxruntime {what}: {}",
        message.split_whitespace().collect::<Vec<_>>().join(" ")
    );
}

/// The process's ONNX Runtime environment, made on first use from the library at `lib` (see
/// [`library_path`]) and shared by every later session: `ort` allows one environment per process
/// (a second `build` fails), and the classifier and a segmentation mask source
/// each need a session. The library is loaded once; a later call with another
/// path gets the environment of the first.
pub(crate) fn environment(lib: &Path) -> Result<ort::environment::Environment, RuntimeError> {
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
            RuntimeError(format!(
                "cannot load ONNX Runtime from {}: {e}",
                lib.display()
            ))
        })?
        .with_name("robustream")
        .with_logger(std::sync::Arc::new(log_line))
        .build()
        .map_err(|e| RuntimeError(format!("cannot start ONNX Runtime: {e}")))?;
    made.set_log_level(ort::logging::LogLevel::Warning);
    *env = Some(made.clone());
    Ok(made)
}
