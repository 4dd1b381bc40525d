//! The CUDA device as a [`Launcher`] (cudarc, driver API, loaded at run time): [`open`] finds the
//! device, compiles the kernel program for its architecture with NVRTC once per process and loads
//! it; each [`CudaLauncher`] owns a stream and its buffers, so every pipeline worker launches
//! independently of the others. Launches of one launcher run in order on its stream; a download
//! waits for them.
//!
//! cudarc panics when it cannot load `libcuda`, so [`open`] asks `is_culib_present` first and a
//! machine without a driver gets [`GpuError::NoDriver`], never a panic.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    DriverError, LaunchConfig, PushKernelArg,
};

use super::GpuError;
use super::launch::{Args, Buf, Launcher};
use super::nvrtc;

// SAFETY: `Args` is `#[repr(C)]` plain data (integers and floats, no references), laid out exactly
// as the kernels' `RsArgs` parameter, which is what a `DeviceRepr` kernel argument must be.
unsafe impl DeviceRepr for Args {}

/// Threads per block of every launch.
const BLOCK: u32 = 256;

/// What was found on the device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeviceInfo {
    /// CUDA device ordinal.
    pub(crate) ordinal: usize,
    /// The device's name, e.g. `NVIDIA H100 80GB HBM3`.
    pub(crate) name: String,
    /// Compute capability (major, minor).
    pub(crate) compute: (i32, i32),
    /// Streaming multiprocessors.
    pub(crate) multiprocessors: i32,
}

/// An opened device: its context and the loaded kernel module.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    module: Arc<CudaModule>,
    /// What [`open`] found.
    pub info: DeviceInfo,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}

fn driver(what: &str) -> impl Fn(DriverError) -> GpuError + '_ {
    move |e| GpuError::Driver(format!("{what}: {e}"))
}

/// How a waiting worker waits for its stream (docs/gpu.md#measured-on-a-gpu): `blocking` (the
/// default: the thread sleeps until the GPU signals, so waiting costs no core), `spin`, `yield` or
/// `auto` (CUDA's `CU_CTX_SCHED_*` modes; spinning was ~10 % faster on an H200 and burns a core
/// per waiting worker).
const SYNC_ENV: &str = "ROBUSTREAM_GPU_SYNC";

/// Whether the CUDA driver library can be loaded (no panic, no device access).
pub(crate) fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only tries `dlopen` on the driver's usual names and closes
    // what it opened; it calls nothing in the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// The number of CUDA devices, or why there are none.
pub fn device_count() -> Result<usize, GpuError> {
    if !driver_present() {
        return Err(GpuError::NoDriver);
    }
    let n = CudaContext::device_count().map_err(driver("counting devices"))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Opens device `ordinal`: context (blocking synchronisation unless [`SYNC_ENV`] says otherwise,
/// cudarc's event tracking off), the program compiled for its architecture (once per process and
/// architecture) and loaded.
pub fn open(ordinal: usize) -> Result<Arc<Gpu>, GpuError> {
    let count = device_count()?;
    if ordinal >= count {
        return Err(GpuError::NoDevice { ordinal, count });
    }
    let ctx = CudaContext::new(ordinal).map_err(driver("creating a context"))?;
    use cudarc::driver::sys::CUctx_flags;
    let sched = match std::env::var(SYNC_ENV).as_deref() {
        Ok("spin") => CUctx_flags::CU_CTX_SCHED_SPIN,
        Ok("yield") => CUctx_flags::CU_CTX_SCHED_YIELD,
        Ok("auto") => CUctx_flags::CU_CTX_SCHED_AUTO,
        Ok("blocking") | Err(std::env::VarError::NotPresent) => {
            CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC
        }
        Ok(other) => {
            return Err(GpuError::Setting(format!(
                "{SYNC_ENV}={other:?}: expected blocking (the default), spin, yield or auto"
            )));
        }
        Err(std::env::VarError::NotUnicode(v)) => {
            return Err(GpuError::Setting(format!(
                "{SYNC_ENV}={v:?}: expected blocking (the default), spin, yield or auto"
            )));
        }
    };
    ctx.set_flags(sched)
        .map_err(driver("setting the synchronisation mode"))?;
    // One pair of runs on an H200 (docs/gpu.md#measured-on-a-gpu), 16 workers: with cudarc's
    // event tracking on, 1,966 variants/s and an engine batch p99 of 523 ms; off, 2,518/s and
    // 25 ms (the engine's stalls still came in other runs without it). It only adds driver calls.
    // SAFETY: cudarc's event tracking orders uses of one allocation across streams. Every
    // allocation here belongs to one `CudaLauncher` and is only ever read, written, copied and
    // freed on that launcher's stream (its buffers and constants are private, a replaced scratch
    // buffer is freed stream-ordered, and the launches take raw addresses of its own buffers), so
    // stream order alone serialises every access and the events add nothing. It is turned off
    // before any allocation or stream exists.
    unsafe { ctx.disable_event_tracking() };
    let compute = ctx
        .compute_capability()
        .map_err(driver("reading the compute capability"))?;
    let multiprocessors = ctx
        .attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .map_err(driver("reading the multiprocessor count"))?;
    let name = ctx.name().map_err(driver("reading the device name"))?;
    let ptx = ptx_for(compute)?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
        .map_err(driver("loading the kernels"))?;
    Ok(Arc::new(Gpu {
        ctx,
        module,
        info: DeviceInfo {
            ordinal,
            name,
            compute,
            multiprocessors,
        },
    }))
}

/// The program's PTX for compute capability `(major, minor)`, compiled once per process.
fn ptx_for((major, minor): (i32, i32)) -> Result<String, GpuError> {
    static CACHE: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let arch = format!("compute_{major}{minor}");
    let cache = CACHE.get_or_init(Default::default);
    if let Some(p) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&arch) {
        return Ok(p.clone());
    }
    // NVRTC takes the architecture as a 'static str; one small leak per architecture.
    let name: &'static str = Box::leak(arch.clone().into_boxed_str());
    let ptx = nvrtc::compile(name)?;
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(arch, ptx.clone());
    Ok(ptx)
}

/// A stream of the device with its own buffers: one per pipeline worker.
pub struct CudaLauncher {
    gpu: Arc<Gpu>,
    stream: Arc<CudaStream>,
    bufs: Vec<CudaSlice<u8>>,
    scratch: Vec<Option<Buf>>,
    constants: HashMap<String, Buf>,
    functions: HashMap<&'static str, CudaFunction>,
    /// Most blocks of one launch (the grid-stride loops cover the rest).
    max_blocks: u32,
}

impl CudaLauncher {
    /// A new stream on `gpu`.
    pub fn new(gpu: &Arc<Gpu>) -> Result<Self, GpuError> {
        let stream = gpu.ctx.new_stream().map_err(driver("creating a stream"))?;
        let max_blocks = u32::try_from(gpu.info.multiprocessors.max(1))
            .unwrap_or(1)
            .saturating_mul(32);
        Ok(Self {
            gpu: gpu.clone(),
            stream,
            bufs: Vec::new(),
            scratch: Vec::new(),
            constants: HashMap::new(),
            functions: HashMap::new(),
            max_blocks,
        })
    }

    fn slice(&self, buf: Buf, bytes: usize) -> Result<&CudaSlice<u8>, GpuError> {
        let s = self
            .bufs
            .get(buf.0)
            .ok_or_else(|| GpuError::Launch(format!("no buffer {}", buf.0)))?;
        if s.len() < bytes {
            return Err(GpuError::Launch(format!(
                "{bytes} bytes from a buffer of {}",
                s.len()
            )));
        }
        Ok(s)
    }
}

impl Launcher for CudaLauncher {
    fn alloc(&mut self, bytes: usize) -> Result<Buf, GpuError> {
        let s = self
            .stream
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(driver("allocating device memory"))?;
        self.bufs.push(s);
        Ok(Buf(self.bufs.len() - 1))
    }

    fn scratch(&mut self, slot: usize, bytes: usize) -> Result<Buf, GpuError> {
        if self.scratch.len() <= slot {
            self.scratch.resize(slot + 1, None);
        }
        match self.scratch[slot] {
            Some(b) if self.bufs[b.0].len() >= bytes => Ok(b),
            Some(b) => {
                let s = self
                    .stream
                    .alloc_zeros::<u8>(bytes.max(1))
                    .map_err(driver("allocating device memory"))?;
                self.bufs[b.0] = s; // the old buffer is freed (stream-ordered)
                Ok(b)
            }
            None => {
                let b = self.alloc(bytes)?;
                self.scratch[slot] = Some(b);
                Ok(b)
            }
        }
    }

    fn constant(&mut self, name: &str, make: &mut dyn FnMut() -> Vec<u8>) -> Result<Buf, GpuError> {
        if let Some(b) = self.constants.get(name) {
            return Ok(*b);
        }
        let data = make();
        let b = self.alloc(data.len())?;
        self.upload(b, &data)?;
        self.constants.insert(name.to_owned(), b);
        Ok(b)
    }

    fn zero(&mut self, buf: Buf, bytes: usize) -> Result<(), GpuError> {
        self.slice(buf, bytes)?;
        let stream = self.stream.clone();
        let s = &mut self.bufs[buf.0];
        let mut view = s.slice_mut(..bytes);
        stream
            .memset_zeros(&mut view)
            .map_err(driver("zeroing device memory"))
    }

    fn upload(&mut self, buf: Buf, data: &[u8]) -> Result<(), GpuError> {
        self.slice(buf, data.len())?;
        let stream = self.stream.clone();
        let s = &mut self.bufs[buf.0];
        let mut view = s.slice_mut(..data.len());
        stream
            .memcpy_htod(data, &mut view)
            .map_err(driver("copying to the device"))?;
        // `data` is pageable host memory the caller may reuse at once.
        self.synchronize()
    }

    fn download(&mut self, buf: Buf, out: &mut [u8]) -> Result<(), GpuError> {
        let bytes = out.len();
        self.slice(buf, bytes)?;
        let view = self.bufs[buf.0].slice(..bytes);
        self.stream
            .memcpy_dtoh(&view, out)
            .map_err(driver("copying to the host"))?;
        self.synchronize()
    }

    fn address(&self, buf: Buf) -> u64 {
        match self.bufs.get(buf.0) {
            Some(s) => s.device_ptr(&self.stream).0,
            None => 0,
        }
    }

    fn launch(&mut self, name: &'static str, elements: u64, args: &Args) -> Result<(), GpuError> {
        if !self.functions.contains_key(name) {
            let f = self
                .gpu
                .module
                .load_function(name)
                .map_err(|e| GpuError::Launch(format!("kernel {name}: {e}")))?;
            self.functions.insert(name, f);
        }
        let f = &self.functions[name];
        let blocks = elements
            .div_ceil(u64::from(BLOCK))
            .clamp(1, u64::from(self.max_blocks)) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut builder = self.stream.launch_builder(f);
        builder.arg(args);
        // SAFETY: every kernel takes exactly one `RsArgs` by value, which `args` is (see the
        // `DeviceRepr` impl above). The addresses inside it come from `address` of this
        // launcher's live buffers, which stay allocated until the launcher is dropped (after
        // its stream), and the recipes size every buffer for the elements the kernels index.
        unsafe { builder.launch(cfg) }
            .map(|_| ())
            .map_err(|e| GpuError::Launch(format!("kernel {name}: {e}")))
    }

    fn synchronize(&mut self) -> Result<(), GpuError> {
        self.stream
            .synchronize()
            .map_err(driver("waiting for the stream"))
    }

    fn download_f32(&mut self, buf: Buf, out: &mut [f32]) -> Result<(), GpuError> {
        let src = self.slice(buf, std::mem::size_of_val(out))?;
        // SAFETY: the buffer holds at least `out.len()` f32s (checked just above; device
        // allocations are aligned far beyond 4 bytes), and every bit pattern is a valid f32.
        let view = unsafe { src.transmute::<f32>(out.len()) }
            .ok_or_else(|| GpuError::Launch("row larger than its buffer".into()))?;
        self.stream
            .memcpy_dtoh(&view, out)
            .map_err(driver("copying a row to the host"))?;
        self.synchronize()
    }
}
