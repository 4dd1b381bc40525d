//! Image resampling that reproduces Pillow 13.0 `Image.resize(size, filter)` bit for bit on 8-bit
//! RGB and gray ("L") images (docs/preprocessing.md#pillow-exact-resampling; torchvision `Resize`,
//! as in docs/imagenet-c.md#how-imagenet-c-was-made, is PIL `BILINEAR`).
//!
//! All sizes are in pixels; sample values are u8 on the 0..255 scale.
//!
//! # What Pillow does (and what this module does the same way)
//! * **Convolution filters** (`BOX`, `BILINEAR`, `BICUBIC` with a = −0.5, `LANCZOS` with 3 lobes):
//!   separable, one pass per axis. Per axis, with `scale = in / out`, the kernel is stretched by
//!   `max(scale, 1)` (antialiasing when down-scaling), output sample `i` is centred on
//!   `(i + 0.5)·scale` in source coordinates, its window is `[trunc(centre − support + 0.5),
//!   trunc(centre + support + 0.5))` clipped to the image, the weights are evaluated in `f64`,
//!   normalised to sum 1 and rounded (half away from zero) to fixed point with 22 fractional bits.
//!   Sums are accumulated in `i32` starting from ½ (`1 << 21`), shifted right by 22 and clipped to
//!   0..=255 after **each** pass (the intermediate image is u8, so the pass order matters).
//! * **Pass order**: horizontal first, except (new in Pillow 13) when the height shrinks by more than
//!   twice as many pixels as the width does, then vertical first. The first pass only processes the
//!   rows (columns) the second one reads. An axis whose size does not change is not resampled at all;
//!   an unchanged image is copied.
//! * **`NEAREST`** is not a convolution: Pillow runs an affine "scale" transform; output column `i`
//!   reads source column `trunc(x_i)` with `x_0 = scale/2` and `x_{i+1} = x_i + scale` accumulated in
//!   `f64` (likewise for rows); samples that would fall outside the source are 0.
//!
//! Results are checked against fixtures written by real Pillow 13.0.0
//! (`scripts/make_resample_fixtures.py` → `tests/fixtures/resample/`).
//!
//! # Implementation
//! [`Resampler`] caches the coefficient tables per (input size, output size, filter) and keeps the
//! intermediate image between calls, so a stream of equally sized frames allocates only its outputs.
//! The passes are integer loops over contiguous rows; the vertical one is auto-vectorised, the RGB
//! horizontal one has an AVX2 kernel (chosen at run time, with a portable fallback that gives the
//! same bytes). Passes of more than about a million multiply-adds (e.g. a 256-row output of a 600×400
//! frame) are split over rayon's threads by blocks of rows.

use std::collections::HashMap;
use std::sync::OnceLock;

use image::{GrayImage, RgbImage};
use rayon::prelude::*;

/// A resampling filter, named and defined as in Pillow (`PIL.Image.Resampling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Filter {
    /// Pillow `NEAREST`: picks one source pixel (no convolution, no antialiasing).
    Nearest,
    /// Pillow `BOX`: box kernel of support ½ (area average when down-scaling).
    Box,
    /// Pillow `BILINEAR`: triangle kernel of support 1 (torchvision's default for PIL images).
    Bilinear,
    /// Pillow `BICUBIC`: Keys cubic with a = −0.5, support 2 (Pillow's default filter).
    Bicubic,
    /// Pillow `LANCZOS`: 3-lobed Lanczos windowed sinc, support 3.
    Lanczos,
}

impl Filter {
    /// Half-width of the kernel at scale 1, in source pixels.
    fn support(self) -> f64 {
        match self {
            Filter::Nearest | Filter::Box => 0.5,
            Filter::Bilinear => 1.0,
            Filter::Bicubic => 2.0,
            Filter::Lanczos => 3.0,
        }
    }

    /// Kernel value at `x` (same expressions, in the same evaluation order, as Pillow's).
    fn kernel(self, x: f64) -> f64 {
        match self {
            Filter::Nearest | Filter::Box => {
                if x > -0.5 && x <= 0.5 {
                    1.0
                } else {
                    0.0
                }
            }
            Filter::Bilinear => {
                let x = x.abs();
                if x < 1.0 { 1.0 - x } else { 0.0 }
            }
            Filter::Bicubic => {
                // a = −0.5: (a + 2) = 1.5, (a + 3) = 2.5 are exact.
                let x = x.abs();
                if x < 1.0 {
                    (1.5 * x - 2.5) * x * x + 1.0
                } else if x < 2.0 {
                    (((x - 5.0) * x + 8.0) * x - 4.0) * -0.5
                } else {
                    0.0
                }
            }
            Filter::Lanczos => {
                if (-3.0..3.0).contains(&x) {
                    sinc(x) * sinc(x / 3.0)
                } else {
                    0.0
                }
            }
        }
    }
}

/// `sin(πx)/(πx)`, 1 at 0 (Pillow's `sinc_filter`; `f64::sin` is the platform libm's `sin`, as in
/// Pillow).
fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        return 1.0;
    }
    let x = x * std::f64::consts::PI;
    x.sin() / x
}

/// Fractional bits of the fixed-point weights (Pillow: `32 − 8 − 2`).
const PRECISION_BITS: u32 = 22;
/// Rounding offset every sum starts from.
const HALF: i32 = 1 << (PRECISION_BITS - 1);

/// Fixed-point sum → u8: floor shift, then clip to 0..=255.
#[inline(always)]
fn clip8(v: i32) -> u8 {
    (v >> PRECISION_BITS).clamp(0, 255) as u8
}

/// Convolution coefficients of one axis, laid out for branch-free inner loops: every output sample
/// reads exactly `taps` consecutive source samples starting at `start[i]`, with weights
/// `weights[i·taps .. (i+1)·taps]`. Pillow's window (`xmin`, length `xmax`) is embedded at its offset
/// inside this fixed-length window and the rest is zero-weighted (`taps` = the longest Pillow window,
/// so the fixed window always fits in the image). Zero weights add exactly 0 to the integer sums, so
/// the result is Pillow's.
///
/// The SIMD RGB horizontal kernel also uses a copy of the table laid out for it (built on first use,
/// see [`Axis::rgb_pair_weights`]).
#[derive(Debug)]
struct Axis {
    taps: usize,
    start: Vec<u32>,
    weights: Vec<i32>,
    rgb_pairs: OnceLock<Vec<i32>>,
}

impl Axis {
    /// Pillow's `precompute_coeffs` + `normalize_coeffs_8bpc` for `in_size → out_size` (both ≥ 1).
    fn new(in_size: u32, out_size: u32, filter: Filter) -> Self {
        debug_assert!(in_size > 0 && out_size > 0 && filter != Filter::Nearest);
        // Pillow computes `(double)(box1 − box0) / out` with the box in f32; exact for sizes < 2^24.
        let scale = f64::from(in_size) / f64::from(out_size);
        let filterscale = if scale < 1.0 { 1.0 } else { scale };
        let support = filter.support() * filterscale;
        let ss = 1.0 / filterscale;
        let n_in = in_size as i32;

        // Pillow's windows and normalised f64 weights.
        let mut windows = Vec::with_capacity(out_size as usize);
        let mut pre: Vec<f64> = Vec::new();
        let mut taps = 1usize;
        for i in 0..out_size {
            let center = (f64::from(i) + 0.5) * scale;
            // `(int)` in C truncates toward zero, as `as` does for in-range values.
            let xmin = ((center - support + 0.5) as i32).max(0);
            let xmax = ((center + support + 0.5) as i32).min(n_in);
            let len = (xmax - xmin).max(0) as usize;
            let first = pre.len();
            let mut ww = 0.0;
            for x in 0..len as i32 {
                let w = filter.kernel((f64::from(x + xmin) - center + 0.5) * ss);
                pre.push(w);
                ww += w;
            }
            if ww != 0.0 {
                for w in &mut pre[first..] {
                    *w /= ww;
                }
            }
            windows.push((xmin as usize, len, first));
            taps = taps.max(len);
        }
        let taps = taps.min(in_size as usize);

        let mut start = Vec::with_capacity(windows.len());
        let mut weights = vec![0i32; windows.len() * taps];
        for (i, &(xmin, len, first)) in windows.iter().enumerate() {
            let s = xmin.min(in_size as usize - taps);
            start.push(s as u32);
            let dst = &mut weights[i * taps + (xmin - s)..][..len];
            for (d, &w) in dst.iter_mut().zip(&pre[first..first + len]) {
                let f = w * f64::from(1u32 << PRECISION_BITS);
                *d = if w < 0.0 {
                    (-0.5 + f) as i32
                } else {
                    (0.5 + f) as i32
                };
            }
        }
        Self {
            taps,
            start,
            weights,
            rgb_pairs: OnceLock::new(),
        }
    }

    /// The same coefficients restricted to output samples `[first, first + len)`: resizing to the full
    /// size and cropping gives exactly what this window computes directly.
    fn window(&self, first: usize, len: usize) -> Self {
        Self {
            taps: self.taps,
            start: self.start[first..first + len].to_vec(),
            weights: self.weights[first * self.taps..(first + len) * self.taps].to_vec(),
            rgb_pairs: OnceLock::new(),
        }
    }

    /// Tap pairs per output sample in [`Axis::rgb_pair_weights`] (an odd window gets a zero-weighted
    /// extra tap).
    fn pairs(&self) -> usize {
        self.taps.div_ceil(2)
    }

    /// For each output sample and each pair of taps `(w0, w1)`: `[w0 w0 w0 w1 w1 w1 0 0]`, the weights
    /// of 8 lanes holding the 8 bytes `R0 G0 B0 R1 G1 B1 · ·` that start at the pair's first pixel.
    fn rgb_pair_weights(&self) -> &[i32] {
        self.rgb_pairs.get_or_init(|| {
            let pairs = self.pairs();
            let mut out = vec![0i32; self.start.len() * pairs * 8];
            for (o, w) in out
                .chunks_exact_mut(pairs * 8)
                .zip(self.weights.chunks_exact(self.taps))
            {
                for (lanes, pair) in o.chunks_exact_mut(8).zip(w.chunks(2)) {
                    lanes[..3].fill(pair[0]);
                    lanes[3..6].fill(pair.get(1).copied().unwrap_or(0));
                }
            }
            out
        })
    }

    /// Source samples `[lo, hi)` covered by the windows (for the vertical axis: the rows that go
    /// through the horizontal pass; Pillow's range, give or take a zero-weighted padding row).
    fn span(&self) -> (usize, usize) {
        let lo = self.start.iter().min().map_or(0, |&s| s as usize);
        let hi = self
            .start
            .iter()
            .max()
            .map_or(0, |&s| s as usize + self.taps);
        (lo, hi)
    }
}

/// Pillow's fixed-point coefficients of one axis `in_size → out_size` (both ≥ 1) for a convolution
/// `filter` (not `Nearest`), flattened for the GPU kernels (docs/gpu.md#gpu-resident-scenarios):
/// `taps`, then per output sample its first source sample and its `taps` weights — the table the
/// CPU passes use, so the GPU's sums are the same integers.
pub(crate) fn conv_table(in_size: u32, out_size: u32, filter: Filter) -> Vec<i32> {
    let axis = Axis::new(in_size.max(1), out_size.max(1), filter);
    let mut t = Vec::with_capacity(1 + axis.start.len() * (axis.taps + 1));
    t.push(axis.taps as i32);
    for (s, w) in axis.start.iter().zip(axis.weights.chunks_exact(axis.taps)) {
        t.push(*s as i32);
        t.extend_from_slice(w);
    }
    t
}

/// Pillow's NEAREST source index for each output sample (`None` = outside the source, written as 0).
fn nearest_indices(in_size: u32, out_size: u32) -> impl Iterator<Item = Option<u32>> {
    let step = f64::from(in_size) / f64::from(out_size);
    let mut pos = step * 0.5;
    (0..out_size).map(move |_| {
        // Pillow's COORD: negative → −1, else truncation.
        let i = if pos < 0.0 { -1 } else { pos as i64 };
        pos += step;
        (i >= 0 && i < i64::from(in_size)).then_some(i as u32)
    })
}

/// Pillow 13 `Image.resize((width, height), NEAREST)` of a one-channel image, without a
/// [`Resampler`] (NEAREST needs no coefficient tables; this allocates two index tables of `width` and
/// `height` entries).
pub fn resize_gray_nearest(src: &GrayImage, width: u32, height: u32) -> GrayImage {
    let mut out = vec![0u8; width as usize * height as usize];
    if src.dimensions() == (width, height) {
        out.copy_from_slice(src.as_raw());
    } else if src.width() > 0 && src.height() > 0 {
        let idx = |n, m| -> Vec<u32> {
            nearest_indices(n, m)
                .map(|i| i.unwrap_or(u32::MAX))
                .collect()
        };
        let (xs, ys) = (idx(src.width(), width), idx(src.height(), height));
        nearest::<1>(
            src.as_raw(),
            src.width() as usize,
            &mut out,
            width as usize,
            &xs,
            &ys,
        );
    }
    GrayImage::from_raw(width, height, out).expect("buffer of width × height")
}

/// A cached table for one axis.
#[derive(Debug)]
enum Table {
    Conv(Axis),
    /// Source index per output sample, `u32::MAX` where Pillow leaves a 0.
    Nearest(Vec<u32>),
}

impl Table {
    /// The table of output samples `[first, first + len)` of `in_size → out_size`.
    fn new(key: TableKey) -> Self {
        let TableKey {
            in_size,
            out_size,
            filter,
            first,
            len,
        } = key;
        let (first, len) = (first as usize, len as usize);
        match filter {
            Filter::Nearest => Table::Nearest(
                nearest_indices(in_size, out_size)
                    .skip(first)
                    .take(len)
                    .map(|i| i.unwrap_or(u32::MAX))
                    .collect(),
            ),
            _ if first == 0 && len == out_size as usize => {
                Table::Conv(Axis::new(in_size, out_size, filter))
            }
            _ => Table::Conv(Axis::new(in_size, out_size, filter).window(first, len)),
        }
    }
}

/// One axis's table as the GPU kernels take it (`gpu::preprocess`,
/// docs/gpu.md#gpu-resident-scenarios): the very numbers the CPU passes use, for output samples
/// `[first, first + len)` of `in_size → out_size` (both ≥ 1), so the two paths give the same bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AxisTable {
    /// A convolution: output sample `i` is `clip8((2^21 + Σ_t src[start[i] + t] · weights[i·taps +
    /// t]) >> 22)`, with `taps` weights per sample (zero-weighted padding included).
    Conv {
        /// Weights per output sample.
        taps: usize,
        /// First source sample read, per output sample.
        start: Vec<u32>,
        /// Fixed-point weights (22 fractional bits), `taps` per output sample.
        weights: Vec<i32>,
    },
    /// NEAREST: the source index per output sample, `u32::MAX` where Pillow writes 0.
    Nearest(Vec<u32>),
}

/// The table of one axis (see [`AxisTable`]) for `filter`, built by the CPU's own code.
pub(crate) fn axis_table(
    in_size: u32,
    out_size: u32,
    filter: Filter,
    first: u32,
    len: u32,
) -> AxisTable {
    match Table::new(TableKey {
        in_size,
        out_size,
        filter,
        first,
        len,
    }) {
        Table::Conv(axis) => AxisTable::Conv {
            taps: axis.taps,
            start: axis.start,
            weights: axis.weights,
        },
        Table::Nearest(idx) => AxisTable::Nearest(idx),
    }
}

/// What a cached table is for: one axis resized `in_size → out_size` with `filter`, of which output
/// samples `[first, first + len)` are wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct TableKey {
    in_size: u32,
    out_size: u32,
    filter: Filter,
    first: u32,
    len: u32,
}

/// A rectangle of the resized image: columns `[x, x + width)`, rows `[y, y + height)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    /// First column.
    pub(crate) x: u32,
    /// First row.
    pub(crate) y: u32,
    /// Columns.
    pub(crate) width: u32,
    /// Rows.
    pub(crate) height: u32,
}

/// Above this many multiply-adds (or output samples, for NEAREST) a pass is split over rayon's threads
/// by blocks of rows; below, task overhead outweighs the gain. E.g. 600×400 → 384×256 BILINEAR is
/// 1.8 M (horizontal) + 1.2 M (vertical) multiply-adds.
const PARALLEL_MACS: usize = 1 << 20;
/// Rows per rayon task.
const ROWS_PER_TASK: usize = 16;
/// Most cached tables before the cache is emptied (a stream has a handful of distinct sizes).
const MAX_TABLES: usize = 64;

/// Pillow-exact resizer with cached coefficient tables and a reusable intermediate buffer.
///
/// Not thread-safe by itself (`&mut self`); give each worker its own. Large images are processed with
/// rayon internally.
#[derive(Debug, Default)]
pub struct Resampler {
    tables: HashMap<TableKey, Table>,
    /// Intermediate image of the horizontal pass (u8, as in Pillow).
    tmp: Vec<u8>,
    /// Use the portable kernels even where SIMD ones exist (tests of the fallback path).
    portable: bool,
}

impl Resampler {
    /// An empty resampler.
    pub fn new() -> Self {
        Self::default()
    }

    /// `src` resized to `width × height` as Pillow 13 `Image.resize((width, height), filter)` does for
    /// an RGB image. A zero-sized source or target gives a black image of the target size.
    pub fn resize_rgb(
        &mut self,
        src: &RgbImage,
        width: u32,
        height: u32,
        filter: Filter,
    ) -> RgbImage {
        let all = Window {
            x: 0,
            y: 0,
            width,
            height,
        };
        self.resize_rgb_window(src, width, height, all, filter)
    }

    /// The `window` of `src` resized to `width × height` (Pillow 13 `resize` then `crop`), computing
    /// only the window's samples: a shorter-side resize followed by a centre crop does ~40 % less work
    /// this way, with identical bytes. A window reaching past the resized image is cut to it.
    pub(crate) fn resize_rgb_window(
        &mut self,
        src: &RgbImage,
        width: u32,
        height: u32,
        window: Window,
        filter: Filter,
    ) -> RgbImage {
        let window = clip_window(window, width, height);
        let mut out = vec![0u8; window.width as usize * window.height as usize * 3];
        self.resize_raw::<3>(
            src.as_raw(),
            src.width(),
            src.height(),
            &mut out,
            width,
            height,
            window,
            filter,
        );
        RgbImage::from_raw(window.width, window.height, out).expect("buffer of width × height × 3")
    }

    /// [`Resampler::resize_rgb`] for a one-channel (Pillow mode "L") image.
    pub(crate) fn resize_gray(
        &mut self,
        src: &GrayImage,
        width: u32,
        height: u32,
        filter: Filter,
    ) -> GrayImage {
        let all = Window {
            x: 0,
            y: 0,
            width,
            height,
        };
        self.resize_gray_window(src, width, height, all, filter)
    }

    /// [`Resampler::resize_rgb_window`] for a one-channel (Pillow mode "L") image.
    pub(crate) fn resize_gray_window(
        &mut self,
        src: &GrayImage,
        width: u32,
        height: u32,
        window: Window,
        filter: Filter,
    ) -> GrayImage {
        let window = clip_window(window, width, height);
        let mut out = vec![0u8; window.width as usize * window.height as usize];
        self.resize_raw::<1>(
            src.as_raw(),
            src.width(),
            src.height(),
            &mut out,
            width,
            height,
            window,
            filter,
        );
        GrayImage::from_raw(window.width, window.height, out).expect("buffer of width × height")
    }

    fn ensure_table(&mut self, key: TableKey) {
        self.tables.entry(key).or_insert_with(|| Table::new(key));
    }

    /// Resizes interleaved `C`-channel u8 pixels `src` (`sw × sh`) to `dw × dh` and writes the
    /// `win` part of the result into `dst` (`win.width × win.height`, fully written; `win` lies inside
    /// `dw × dh`).
    #[allow(clippy::too_many_arguments)]
    fn resize_raw<const C: usize>(
        &mut self,
        src: &[u8],
        sw: u32,
        sh: u32,
        dst: &mut [u8],
        dw: u32,
        dh: u32,
        win: Window,
        filter: Filter,
    ) {
        debug_assert_eq!(src.len(), sw as usize * sh as usize * C);
        debug_assert_eq!(dst.len(), win.width as usize * win.height as usize * C);
        debug_assert!(win.x + win.width <= dw && win.y + win.height <= dh);
        if win.width == 0 || win.height == 0 {
            return;
        }
        if sw == 0 || sh == 0 {
            dst.fill(0);
            return;
        }
        let (x0, y0, ww, wh) = (
            win.x as usize,
            win.y as usize,
            win.width as usize,
            win.height as usize,
        );
        let src_row = sw as usize * C;
        let dst_row = ww * C;
        if (sw, sh) == (dw, dh) {
            // No resampling: the window is a plain crop.
            for (d, s) in dst
                .chunks_exact_mut(dst_row)
                .zip(src.chunks_exact(src_row).skip(y0))
            {
                d.copy_from_slice(&s[x0 * C..(x0 + ww) * C]);
            }
            return;
        }
        let need_h = sw != dw;
        let need_v = sh != dh;
        let h_key = TableKey {
            in_size: sw,
            out_size: dw,
            filter,
            first: win.x,
            len: win.width,
        };
        let v_key = TableKey {
            in_size: sh,
            out_size: dh,
            filter,
            first: win.y,
            len: win.height,
        };
        // Tables for an axis that is not resampled are never built (Pillow does not use them either).
        if self.tables.len() + 2 > MAX_TABLES {
            self.tables.clear();
        }
        if need_h || filter == Filter::Nearest {
            self.ensure_table(h_key);
        }
        if need_v || filter == Filter::Nearest {
            self.ensure_table(v_key);
        }
        let Self {
            tables,
            tmp,
            portable,
        } = self;
        let simd = !*portable;

        if filter == Filter::Nearest {
            let (Some(Table::Nearest(xs)), Some(Table::Nearest(ys))) =
                (tables.get(&h_key), tables.get(&v_key))
            else {
                unreachable!("nearest tables were just built")
            };
            nearest::<C>(src, src_row, dst, dst_row, xs, ys);
            return;
        }

        let conv = |key: TableKey| match tables.get(&key) {
            Some(Table::Conv(axis)) => axis,
            _ => unreachable!("convolution table was just built"),
        };
        let (sw, sh, dw, dh) = (sw as usize, sh as usize, dw as usize, dh as usize);
        match (need_h, need_v) {
            (true, false) => {
                let rows = &src[y0 * src_row..(y0 + wh) * src_row];
                horizontal::<C>(rows, src_row, 0, dst, dst_row, conv(h_key), simd)
            }
            (false, true) => vertical(src, src_row, 0, x0 * C, dst, dst_row, conv(v_key), simd),
            // Pillow's pass order depends on the full sizes, not on the window.
            _ if vertical_first(sw, sh, dw, dh) => {
                // Only the source columns the horizontal pass reads go through the vertical pass.
                let h_axis = conv(h_key);
                let (lo, hi) = h_axis.span();
                let tmp_row = (hi - lo) * C;
                tmp.resize(wh * tmp_row, 0);
                vertical(src, src_row, 0, lo * C, tmp, tmp_row, conv(v_key), simd);
                horizontal::<C>(tmp, tmp_row, lo, dst, dst_row, h_axis, simd);
            }
            _ => {
                // Only the source rows the vertical pass reads go through the horizontal pass.
                let v_axis = conv(v_key);
                let (lo, hi) = v_axis.span();
                tmp.resize((hi - lo) * dst_row, 0);
                horizontal::<C>(
                    &src[lo * src_row..hi * src_row],
                    src_row,
                    0,
                    tmp,
                    dst_row,
                    conv(h_key),
                    simd,
                );
                vertical(tmp, dst_row, lo, 0, dst, dst_row, v_axis, simd);
            }
        }
    }
}

/// `window` cut to the `width × height` image.
fn clip_window(window: Window, width: u32, height: u32) -> Window {
    let x = window.x.min(width);
    let y = window.y.min(height);
    Window {
        x,
        y,
        width: window.width.min(width - x),
        height: window.height.min(height - y),
    }
}

/// Pillow 13's pass order when both axes change: vertical first iff the height shrinks, by more than
/// twice as many pixels as the width does (Pillow PR #9549, "if height is scaled down significantly
/// more than width, resize vertically first"; the exact condition was established by comparing both
/// orders with Pillow 13.0.0 on ~3000 random size pairs, and is covered by the fixtures).
pub(crate) fn vertical_first(sw: usize, sh: usize, dw: usize, dh: usize) -> bool {
    let (sw, sh, dw, dh) = (sw as i64, sh as i64, dw as i64, dh as i64);
    dh < sh && sh - dh > 2 * (sw - dw)
}

/// NEAREST sampling with precomputed index tables (`u32::MAX` → 0).
fn nearest<const C: usize>(
    src: &[u8],
    src_row: usize,
    dst: &mut [u8],
    dst_row: usize,
    xs: &[u32],
    ys: &[u32],
) {
    let fill_row = |(out, &y): (&mut [u8], &u32)| {
        if y == u32::MAX {
            out.fill(0);
            return;
        }
        let row = &src[y as usize * src_row..][..src_row];
        for (o, &x) in out.chunks_exact_mut(C).zip(xs) {
            if x == u32::MAX {
                o.fill(0);
            } else {
                let x = x as usize * C;
                o.copy_from_slice(&row[x..x + C]);
            }
        }
    };
    if dst.len() >= PARALLEL_MACS {
        dst.par_chunks_mut(dst_row)
            .zip(ys.par_iter())
            .with_min_len(ROWS_PER_TASK)
            .for_each(fill_row);
    } else {
        dst.chunks_mut(dst_row).zip(ys).for_each(fill_row);
    }
}

/// Horizontal pass: every row of `src` (`C` channels, rows `src_row` samples apart, first column =
/// source column `col_offset`) into the same row of `dst`. `simd`: use a SIMD kernel if there is one
/// for this CPU and channel count.
fn horizontal<const C: usize>(
    src: &[u8],
    src_row: usize,
    col_offset: usize,
    dst: &mut [u8],
    dst_row: usize,
    axis: &Axis,
    simd: bool,
) {
    #[cfg(target_arch = "x86_64")]
    let simd = simd && C == 3 && has_avx2();
    #[cfg(not(target_arch = "x86_64"))]
    let simd = {
        let _ = simd;
        false
    };
    if simd {
        axis.rgb_pair_weights(); // built once, before the threads share the axis
    }
    let chunk = |(d, s): (&mut [u8], &[u8])| {
        #[cfg(target_arch = "x86_64")]
        if simd {
            // SAFETY: `avx2::rgb_rows` is compiled with `#[target_feature(enable = "avx2")]`; calling
            // it is sound exactly when the CPU supports AVX2, which `has_avx2` checked. It takes only
            // safe references and contains no unsafe code.
            return unsafe { avx2::rgb_rows(s, src_row, col_offset, d, dst_row, axis) };
        }
        scalar_rows::<C>(s, src_row, col_offset, d, dst_row, axis)
    };
    if dst.len() * axis.taps >= PARALLEL_MACS {
        dst.par_chunks_mut(dst_row * ROWS_PER_TASK)
            .zip(src.par_chunks(src_row * ROWS_PER_TASK))
            .for_each(chunk);
    } else {
        chunk((dst, src));
    }
}

/// Vertical pass: output row `i` = weighted sum of rows `start[i] − row_offset ..` of `src` (rows
/// `src_row` samples apart), over the `dst_row` samples starting at sample `col_offset` of each row
/// (channels interleaved; the channel count does not matter here).
#[allow(clippy::too_many_arguments)]
fn vertical(
    src: &[u8],
    src_row: usize,
    row_offset: usize,
    col_offset: usize,
    dst: &mut [u8],
    dst_row: usize,
    axis: &Axis,
    simd: bool,
) {
    let chunk = |(c, d): (usize, &mut [u8])| {
        let first_row = c * ROWS_PER_TASK;
        let rows = (src, src_row, row_offset, col_offset, first_row);
        vertical_rows(rows, d, dst_row, axis, simd)
    };
    if dst.len() * axis.taps >= PARALLEL_MACS {
        dst.par_chunks_mut(dst_row * ROWS_PER_TASK)
            .enumerate()
            .for_each(chunk);
    } else {
        chunk((0, dst));
    }
}

/// Whether the AVX2 kernels can run here ([`crate::kernels::cpu`], detected once).
#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    crate::kernels::cpu_has!("avx2")
}

/// Portable horizontal rows (any channel count): per output sample and channel, an integer dot
/// product over the window. The common window lengths are monomorphised so the tap loop unrolls.
fn scalar_rows<const C: usize>(
    src: &[u8],
    src_row: usize,
    col_offset: usize,
    dst: &mut [u8],
    dst_row: usize,
    axis: &Axis,
) {
    macro_rules! dispatch {
        ($($k:literal)*) => {
            match axis.taps {
                $($k => scalar_rows_k::<C, $k>(src, src_row, col_offset, dst, dst_row, axis),)*
                _ => scalar_rows_k::<C, 0>(src, src_row, col_offset, dst, dst_row, axis),
            }
        };
    }
    dispatch!(1 2 3 4 5 6 7 8 9 10 11 12)
}

/// [`scalar_rows`] for `K` taps (0: `axis.taps`, not known at compile time).
fn scalar_rows_k<const C: usize, const K: usize>(
    src: &[u8],
    src_row: usize,
    col_offset: usize,
    dst: &mut [u8],
    dst_row: usize,
    axis: &Axis,
) {
    let taps = if K == 0 { axis.taps } else { K };
    for (src, dst) in src.chunks_exact(src_row).zip(dst.chunks_exact_mut(dst_row)) {
        for ((out, &s), w) in dst
            .chunks_exact_mut(C)
            .zip(&axis.start)
            .zip(axis.weights.chunks_exact(taps))
        {
            let s = (s as usize - col_offset) * C;
            let window = &src[s..s + taps * C];
            let mut acc = [HALF; C];
            for (px, &k) in window.chunks_exact(C).zip(w) {
                for c in 0..C {
                    // No overflow: |Σ| ≤ 2^21 + 255·Σ|w| < 2^31 for Pillow's kernels
                    // (Σ|w| < 1.4·2^22).
                    acc[c] += i32::from(px[c]) * k;
                }
            }
            for c in 0..C {
                out[c] = clip8(acc[c]);
            }
        }
    }
}

/// AVX2 kernels. `std::arch` intrinsics that take no pointers are safe to call inside a
/// `#[target_feature]` function, so this module has no unsafe code; its functions must only be
/// called where AVX2 is available.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Axis, HALF, PRECISION_BITS};

    /// Horizontal RGB rows: per output pixel and pair of taps, one 8-lane multiply-add of the bytes
    /// `R0 G0 B0 R1 G1 B1 · ·` (zero-extended to i32) with `[w0 w0 w0 w1 w1 w1 0 0]`
    /// ([`Axis::rgb_pair_weights`]); lanes 0–2 and 3–5 are summed at the end. Exact integer sums,
    /// like the scalar kernel (no partial sum can overflow: each is bounded by 255·Σ|w| < 2^31 − 2^21).
    #[target_feature(enable = "avx2")]
    pub(super) fn rgb_rows(
        src: &[u8],
        src_row: usize,
        col_offset: usize,
        dst: &mut [u8],
        dst_row: usize,
        axis: &Axis,
    ) {
        // Monomorphise the common pair counts so the pair loop unrolls without bounds checks.
        macro_rules! dispatch {
            ($($p:literal)*) => {
                match axis.pairs() {
                    $($p => rgb_rows_p::<$p>(src, src_row, col_offset, dst, dst_row, axis),)*
                    _ => rgb_rows_p::<0>(src, src_row, col_offset, dst, dst_row, axis),
                }
            };
        }
        dispatch!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
    }

    /// [`rgb_rows`] for `P` tap pairs (0: `axis.pairs()`, not known at compile time).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn rgb_rows_p<const P: usize>(
        src: &[u8],
        src_row: usize,
        col_offset: usize,
        dst: &mut [u8],
        dst_row: usize,
        axis: &Axis,
    ) {
        let pairs = if P == 0 { axis.pairs() } else { P };
        // Bytes read per output pixel: the 8 bytes of the last pair start at 6·(pairs − 1).
        let span = 6 * pairs + 2;
        let weights = axis.rgb_pair_weights();
        let half = _mm_set1_epi32(HALF);
        let fold = _mm256_setr_epi32(3, 4, 5, 3, 4, 5, 3, 4);
        let mut padded = vec![0u8; span];
        for (row, dst) in src.chunks_exact(src_row).zip(dst.chunks_exact_mut(dst_row)) {
            for ((out, &s), w) in dst
                .chunks_exact_mut(3)
                .zip(&axis.start)
                .zip(weights.chunks_exact(pairs * 8))
            {
                let s = (s as usize - col_offset) * 3;
                // Near the row's end (last pixels only) the read would run past it: use a
                // zero-padded copy (the lanes past the window have zero weights).
                let window = match row.get(s..s + span) {
                    Some(win) => win,
                    None => {
                        let tail = &row[s..];
                        padded[..tail.len()].copy_from_slice(tail);
                        padded[tail.len()..].fill(0);
                        &padded[..]
                    }
                };
                let mut acc = _mm256_setzero_si256();
                for (j, w) in w.chunks_exact(8).enumerate() {
                    let b: [u8; 8] = window[6 * j..6 * j + 8].try_into().expect("8 bytes");
                    let px = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(i64::from_le_bytes(b)));
                    let wv = _mm256_setr_epi32(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]);
                    acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(px, wv));
                }
                // Lanes 0–2 += lanes 3–5 → R, G, B sums; then +½, shift, saturate to 0..=255.
                let sum = _mm256_add_epi32(acc, _mm256_permutevar8x32_epi32(acc, fold));
                let v = _mm_add_epi32(_mm256_castsi256_si128(sum), half);
                let v = _mm_srai_epi32::<{ PRECISION_BITS as i32 }>(v);
                let v = _mm_packus_epi16(_mm_packs_epi32(v, v), v);
                let rgb = (_mm_cvtsi128_si32(v) as u32).to_le_bytes();
                out.copy_from_slice(&rgb[..3]);
            }
        }
    }
}

/// Source of a block of vertical-pass rows: `(src, src_row, row_offset, col_offset, first output
/// row)`, see [`vertical`].
type VSource<'a> = (&'a [u8], usize, usize, usize, usize);

/// [`vertical_rows_body`], compiled for AVX2 when `simd` is set and the CPU has it.
fn vertical_rows(rows: VSource<'_>, dst: &mut [u8], dst_row: usize, axis: &Axis, simd: bool) {
    if simd {
        return vertical_rows_simd(rows, dst, dst_row, axis);
    }
    vertical_rows_body(rows, dst, dst_row, axis)
}

crate::kernels::multiversion! {
    /// [`vertical_rows_body`] compiled for AVX2 where the CPU has it, else portable.
    fn vertical_rows_simd(rows: VSource<'_>, dst: &mut [u8], dst_row: usize, axis: &Axis);
    vertical_rows_avx2 ["avx2"] => vertical_rows_body;
    _ => vertical_rows_body;
    levels vertical_rows_at;
}

/// Samples per block of the vertical pass (its accumulators live on the stack).
const V_BLOCK: usize = 512;

/// Vertical rows: per output row, the weighted sum of whole source rows, in blocks of `V_BLOCK`
/// samples (plain loops over contiguous slices, auto-vectorised).
#[inline(always)]
fn vertical_rows_body(rows: VSource<'_>, dst: &mut [u8], dst_row: usize, axis: &Axis) {
    let (src, src_row, row_offset, col_offset, first_row) = rows;
    let taps = axis.taps;
    let mut acc = [0i32; V_BLOCK];
    for (i, out) in dst.chunks_exact_mut(dst_row).enumerate() {
        let i = first_row + i;
        let first = axis.start[i] as usize - row_offset;
        let w = &axis.weights[i * taps..][..taps];
        for (b, out) in out.chunks_mut(V_BLOCK).enumerate() {
            let x0 = col_offset + b * V_BLOCK;
            let acc = &mut acc[..out.len()];
            acc.fill(HALF);
            for (t, &k) in w.iter().enumerate() {
                if k == 0 {
                    continue; // padding (or a genuinely zero weight): adds exactly nothing
                }
                let row = &src[(first + t) * src_row + x0..][..out.len()];
                for (a, &p) in acc.iter_mut().zip(row) {
                    *a += i32::from(p) * k;
                }
            }
            for (o, &a) in out.iter_mut().zip(acc.iter()) {
                *o = clip8(a);
            }
        }
    }
}

#[cfg(test)]
mod tests;
