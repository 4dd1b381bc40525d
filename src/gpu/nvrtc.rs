//! Compiling the kernels to PTX with NVRTC, CUDA's run-time compiler, through cudarc. NVRTC needs
//! no GPU: the set-up command caches `libnvrtc.so.13` from PyPI's `nvidia-cuda-nvrtc` wheel in
//! `assets/nvrtc/`, and the test suite compiles every kernel on machines without one.
//!
//! cudarc finds NVRTC by library name only, and panics when none loads. [`load`] first loads the
//! cached copy by path (`ROBUSTREAM_NVRTC`, then `assets/nvrtc/`), which the dynamic linker then
//! hands out for the name `libnvrtc.so.13` too (a loaded library answers to its soname), and asks
//! cudarc's own check (`is_culib_present`) before anything that could panic.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::GpuError;
use super::program;

/// Environment variable naming an NVRTC library file to use before any other.
const NVRTC_ENV: &str = "ROBUSTREAM_NVRTC";

/// The cached NVRTC under the asset folders (`scripts/assets.sh`).
const CACHED: &str = "nvrtc/libnvrtc.so.13";

/// Makes NVRTC loadable for cudarc, once per process; the error says where it looked and how to
/// get it.
fn load() -> Result<(), GpuError> {
    static LOADED: OnceLock<Result<(), Vec<PathBuf>>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let explicit = std::env::var_os(NVRTC_ENV).filter(|p| !p.is_empty());
            let tried: Vec<PathBuf> = explicit
                .map(PathBuf::from)
                .into_iter()
                .chain(crate::assets::candidates(CACHED))
                .collect();
            for path in tried.iter().filter(|p| p.is_file()) {
                // SAFETY: loading NVRTC runs its initialisers, which only set up the library's
                // own state (it is a self-contained compiler library, loaded the same way by
                // cudarc below). The handle is leaked on purpose: the library must stay loaded for
                // the whole process, as cudarc keeps its own handle in a static.
                if let Ok(lib) = unsafe { libloading::Library::new(path) } {
                    std::mem::forget(lib);
                    break;
                }
            }
            // SAFETY: `is_culib_present` only tries `dlopen` on NVRTC's usual names and closes
            // what it opened; it does not call into the library.
            if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                Ok(())
            } else {
                Err(tried)
            }
        })
        .clone()
        .map_err(|tried| GpuError::NoNvrtc { tried })
}

/// The whole program compiled to PTX for `arch` (e.g. `compute_90`). Contraction of `a*b+c` into
/// fused multiply-adds is off, so the device rounds like the host build the tests compare with.
pub(crate) fn compile(arch: &'static str) -> Result<String, GpuError> {
    load()?;
    let opts = cudarc::nvrtc::CompileOptions {
        arch: Some(arch),
        fmad: Some(false),
        name: Some("robustream.cu".into()),
        options: vec!["--std=c++17".into()],
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(program::source(), opts)
        .map(|ptx| ptx.to_src())
        .map_err(|e| GpuError::Compile {
            arch,
            log: match e {
                cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                    log.to_string_lossy().into_owned()
                }
                other => format!("{other:?}"),
            },
        })
}
