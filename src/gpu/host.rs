//! The tests' [`Launcher`]: the kernel program built by the host C++ compiler (`g++`, from the
//! set-up's build-essential) into a shared library, each kernel called as a plain function whose
//! `RS_FOR` loop runs every element in turn. Buffers are host memory.

use std::path::PathBuf;
use std::sync::OnceLock;

use image::RgbImage;

use super::GpuError;
use super::launch::{Args, Buf, DeviceImage, Launcher};
use super::program;

/// Buffers are aligned to this (CUDA allocations are aligned to at least 256 bytes).
const ALIGN: usize = 64;

/// The host build of the program, compiled once per process (and reused across processes while
/// the source is unchanged).
fn library() -> &'static libloading::Library {
    static LIB: OnceLock<libloading::Library> = OnceLock::new();
    LIB.get_or_init(|| {
        let src = program::source();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in src.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        let dir = std::env::temp_dir().join("robustream-gpu-host");
        std::fs::create_dir_all(&dir).expect("the temporary folder is writable");
        let so: PathBuf = dir.join(format!("kernels-{h:016x}.so"));
        if !so.is_file() {
            let cpp = dir.join(format!("kernels-{h:016x}-{}.cpp", std::process::id()));
            std::fs::write(&cpp, &src).expect("the temporary folder is writable");
            let part = so.with_extension(format!("{}.part", std::process::id()));
            let out = std::process::Command::new("g++")
                .args(["-std=c++17", "-O2", "-ffp-contract=off", "-shared", "-fPIC"])
                .args([
                    "-Wall",
                    "-Wextra",
                    "-Werror",
                    "-Wno-unused-function",
                    "-x",
                    "c++",
                ])
                .arg(&cpp)
                .arg("-o")
                .arg(&part)
                .output()
                .expect("g++ runs (bash scripts/system.sh installs build-essential)");
            let _ = std::fs::remove_file(&cpp);
            assert!(
                out.status.success(),
                "the host build of the GPU kernels failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::rename(&part, &so).expect("the temporary folder is writable");
        }
        // SAFETY: the library is our own kernel program built just above; loading it runs no
        // initialiser beyond the C++ runtime's, and it stays loaded for the whole process.
        unsafe { libloading::Library::new(&so) }.expect("the host build of the kernels loads")
    })
}

/// One buffer: its storage (never touched again after allocation, so the pointer taken from it
/// stays valid and unique) and the aligned start the kernels and copies use.
struct HostBuf {
    _storage: Vec<u8>,
    start: *mut u8,
    len: usize,
}

/// Host memory standing in for device memory.
#[derive(Default)]
pub(crate) struct HostLauncher {
    bufs: Vec<HostBuf>,
    /// Scratch slot → buffer.
    scratch: Vec<Option<Buf>>,
    /// Constants by name.
    constants: std::collections::HashMap<String, Buf>,
}

impl HostLauncher {
    pub(crate) fn new() -> Self {
        library();
        Self::default()
    }

    /// A new buffer holding `data`.
    pub(crate) fn buffer(&mut self, data: &[u8]) -> Buf {
        let b = self.alloc(data.len()).expect("host allocation");
        self.upload(b, data).expect("host upload");
        b
    }

    /// A source image holding `img` and a destination image of its size.
    pub(crate) fn images(&mut self, img: &RgbImage) -> (DeviceImage, DeviceImage) {
        let (width, height) = img.dimensions();
        let src = DeviceImage {
            buf: self.buffer(img.as_raw()),
            width,
            height,
        };
        let dst = DeviceImage {
            buf: self.alloc(img.as_raw().len()).expect("host allocation"),
            ..src
        };
        (src, dst)
    }

    /// The RGB image `d` holds.
    pub(crate) fn image(&mut self, d: DeviceImage) -> RgbImage {
        let bytes = 3 * d.width as usize * d.height as usize;
        let raw = self.read(d.buf)[..bytes].to_vec();
        RgbImage::from_raw(d.width, d.height, raw).expect("the buffer holds the image")
    }

    /// The contents of `buf`.
    pub(crate) fn read(&mut self, buf: Buf) -> Vec<u8> {
        let mut out = vec![0; self.bufs[buf.0].len];
        self.download(buf, &mut out).expect("host download");
        out
    }
}

impl Launcher for HostLauncher {
    fn alloc(&mut self, bytes: usize) -> Result<Buf, GpuError> {
        let mut storage = vec![0u8; bytes + ALIGN];
        let base = storage.as_mut_ptr();
        let start = base.wrapping_add((ALIGN - base as usize % ALIGN) % ALIGN);
        self.bufs.push(HostBuf {
            _storage: storage,
            start,
            len: bytes,
        });
        Ok(Buf(self.bufs.len() - 1))
    }

    fn scratch(&mut self, slot: usize, bytes: usize) -> Result<Buf, GpuError> {
        if self.scratch.len() <= slot {
            self.scratch.resize(slot + 1, None);
        }
        match self.scratch[slot] {
            Some(b) if self.bufs[b.0].len >= bytes => Ok(b),
            _ => {
                let b = self.alloc(bytes)?;
                // Not zeroed on purpose: a recipe must not rely on a fresh scratch buffer's zeros.
                self.upload(b, &vec![0xa5; bytes])?;
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
        self.upload(buf, &vec![0; bytes])
    }

    fn upload(&mut self, buf: Buf, data: &[u8]) -> Result<(), GpuError> {
        let b = &self.bufs[buf.0];
        if data.len() > b.len {
            return Err(GpuError::Launch(format!(
                "upload of {} bytes into {}",
                data.len(),
                b.len
            )));
        }
        // SAFETY: `start` points to `len` bytes inside the buffer's own allocation (aligned
        // start ≤ ALIGN − 1 bytes in, ALIGN spare bytes at the end), alive as long as `self`;
        // `data` is a distinct allocation and no longer than `len`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), b.start, data.len()) };
        Ok(())
    }

    fn download(&mut self, buf: Buf, out: &mut [u8]) -> Result<(), GpuError> {
        let b = &self.bufs[buf.0];
        if out.len() > b.len {
            return Err(GpuError::Launch(format!(
                "download of {} bytes from {}",
                out.len(),
                b.len
            )));
        }
        // SAFETY: as in `upload`, with the copy running the other way.
        unsafe { std::ptr::copy_nonoverlapping(b.start, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    fn address(&self, buf: Buf) -> u64 {
        self.bufs[buf.0].start as u64
    }

    fn launch(&mut self, name: &'static str, _elements: u64, args: &Args) -> Result<(), GpuError> {
        // SAFETY: every kernel of the program is `extern "C" void name(RsArgs)`, and `Args` is
        // `#[repr(C)]` with RsArgs's fields in order (6 u64, 8 i64, 8 float, 4 double). The addresses in
        // `args.p` come from `address` of this launcher's live buffers, which the kernels index
        // within the sizes their recipes allocated.
        unsafe {
            let f = library()
                .get::<unsafe extern "C" fn(Args)>(name.as_bytes())
                .map_err(|e| GpuError::Launch(format!("kernel {name}: {e}")))?;
            f(*args);
        }
        Ok(())
    }
}
