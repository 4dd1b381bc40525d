//! How a GPU scenario is run, whatever runs it: buffers are handles, a kernel launch is a name, the
//! number of elements of its `RS_FOR` loop and one [`Args`]. [`Launcher`] is implemented by the
//! CUDA device ([`super::cuda`]) and, in the tests, by the host build of the same kernels, so the
//! recipes that sequence the launches of a scenario run unchanged on the CPU.

use super::GpuError;

/// The one argument of every kernel: the `RsArgs` struct of `cuda/common.cuh` (same layout).
/// `p` holds buffer addresses ([`Launcher::address`]), `i` integers, `f` floats, `d` doubles; what each slot
/// means is written above each kernel.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Args {
    /// Buffer addresses.
    pub(crate) p: [u64; 6],
    /// Integers (sizes, strides, keys).
    pub(crate) i: [i64; 8],
    /// Floats (parameters).
    pub(crate) f: [f32; 8],
    /// Doubles (parameters the CPU kernels use in f64).
    pub(crate) d: [f64; 4],
}

// The kernels' `RsArgs` is 176 bytes (a `static_assert` there); the two must agree.
const _: () = assert!(std::mem::size_of::<Args>() == 176 && std::mem::align_of::<Args>() == 8);

impl Args {
    /// Arguments with the buffers `p` (the rest zero).
    pub(crate) fn buffers(p: &[u64]) -> Self {
        let mut a = Self::default();
        a.p[..p.len()].copy_from_slice(p);
        a
    }

    /// Sets the integers from slot 0.
    pub(crate) fn ints(mut self, i: &[i64]) -> Self {
        self.i[..i.len()].copy_from_slice(i);
        self
    }

    /// Sets the floats from slot 0.
    pub(crate) fn floats(mut self, f: &[f32]) -> Self {
        self.f[..f.len()].copy_from_slice(f);
        self
    }

    /// Sets the doubles from slot 0.
    pub(crate) fn doubles(mut self, d: &[f64]) -> Self {
        self.d[..d.len()].copy_from_slice(d);
        self
    }
}

/// The most threads a reduction kernel (one that adds into a few totals with
/// `rs_atomic_add_u64`) is launched with: each thread adds once, so this bounds the atomics.
pub(crate) const REDUCE_THREADS: u64 = 16_384;

/// Scratch slots of the pipeline (recipes use the slots below these): a worker's current frame,
/// its variant, its batch row and the frame's masks.
pub(crate) const FRAME_SLOT: usize = 64;
/// See [`FRAME_SLOT`].
pub(crate) const VARIANT_SLOT: usize = 65;
/// See [`FRAME_SLOT`].
pub(crate) const ROW_SLOT: usize = 66;
/// The frame's mask at the scenario stage, one slot per mask rule from here (see [`FRAME_SLOT`]).
pub(crate) const MASK_SLOT: usize = 67;

/// A buffer of a [`Launcher`]: an index into its own table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buf(pub(crate) usize);

/// An RGB image in a launcher's buffer: `width × height × 3` bytes, RGB interleaved, rows
/// packed (what the scenario and view kernels read and write).
#[derive(Debug, Clone, Copy)]
pub struct DeviceImage {
    /// `width × height × 3` bytes.
    pub buf: Buf,
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
}

impl DeviceImage {
    /// Elements (bytes) of the image.
    pub(crate) fn elements(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height) * 3
    }
}

/// What runs kernels: the CUDA device, or the host build of the kernels in the tests.
pub trait Launcher {
    /// A zeroed buffer of `bytes` bytes, aligned for any element type the kernels use.
    fn alloc(&mut self, bytes: usize) -> Result<Buf, GpuError>;
    /// Scratch buffer number `slot`, at least `bytes` long, kept by the launcher and handed out
    /// again to the next call with the same slot (grown when too small): recipes take their
    /// temporaries here, numbered from 0, so a run allocates only while buffers grow. Its contents
    /// are whatever the last user left; [`Launcher::zero`] it where a kernel adds into it.
    fn scratch(&mut self, slot: usize, bytes: usize) -> Result<Buf, GpuError>;
    /// A read-only buffer kept for the launcher's lifetime under `name` (e.g. `shot_noise/60`),
    /// made by `make` and uploaded the first time the name is asked for: tables and textures a
    /// recipe needs for every frame.
    fn constant(&mut self, name: &str, make: &mut dyn FnMut() -> Vec<u8>) -> Result<Buf, GpuError>;
    /// Sets the first `bytes` bytes of `buf` to zero.
    fn zero(&mut self, buf: Buf, bytes: usize) -> Result<(), GpuError>;
    /// Copies `data` to the start of `buf`.
    fn upload(&mut self, buf: Buf, data: &[u8]) -> Result<(), GpuError>;
    /// Copies the start of `buf` into `out`.
    fn download(&mut self, buf: Buf, out: &mut [u8]) -> Result<(), GpuError>;
    /// The address kernels see for `buf` (a device pointer on the GPU).
    fn address(&self, buf: Buf) -> u64;
    /// Runs kernel `name` over `elements` loop elements with `args`; launches run in order.
    fn launch(&mut self, name: &'static str, elements: u64, args: &Args) -> Result<(), GpuError>;
    /// Waits until every launch and copy queued so far has finished (nothing to wait for where
    /// launches run at once).
    fn synchronize(&mut self) -> Result<(), GpuError> {
        Ok(())
    }
    /// Copies the start of `buf` into `out` as float32 values (a batch row), waiting for it.
    fn download_f32(&mut self, buf: Buf, out: &mut [f32]) -> Result<(), GpuError> {
        let mut bytes = vec![0u8; std::mem::size_of_val(out)];
        self.download(buf, &mut bytes)?;
        for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(())
    }
}
