//! The model's view of a frame and the engine's input tensor on the GPU (`cuda/preprocess.cu`;
//! docs/gpu.md#gpu-resident-scenarios). CPU: [`crate::view::ModelView`] (the model description's
//! resize and centre crop, resampled with the Pillow-exact code of [`crate::kernels::resample`])
//! and [`crate::preprocess::Normalizer`].
//!
//! The resize is Pillow's two separable passes, as launches through a scratch image: the
//! coefficient tables are the CPU's own (`resample::axis_table`), uploaded once per (filter, input
//! size, output size, window) as launcher constants, and the kernels do Pillow's integer sums, so
//! the view has the CPU's bytes. Only the part of the resized image that the centre crop keeps is
//! computed, and the passes run in Pillow's order (vertical first when the height shrinks much
//! more than the width). The view is then normalised into one row of the input batch through the
//! [`Normalizer`]'s own tables, so the tensor has the CPU's floats (float16: the same floats,
//! rounded to nearest even, as the engine rounds the CPU's batch).

use std::collections::HashMap;
use std::fmt::Write as _;

use super::GpuError;
#[cfg(test)]
use super::corruption;
use super::launch::{Args, Buf, DeviceImage, Launcher};
use crate::kernels::resample::{self, AxisTable, Filter};
#[cfg(test)]
use crate::key::Corruption;
use crate::model::{Layout, ModelDesc};
use crate::preprocess::Normalizer;
#[cfg(test)]
use crate::rng::RngKey;
use crate::scenario::ScenarioStage;
use crate::view::{ModelView, center_offset, filter_of};

/// Scratch slot of the intermediate image between the two resampling passes. The view recipes'
/// scratch buffers only live during one call. Their slots sit above the corruption recipes'
/// (numbered from 0), so that the two do not keep regrowing each other's buffers, and below the
/// slots from 64 up, where a caller keeps its frame and variant across calls.
const SCRATCH_TMP: usize = 32;
/// Scratch slot of a variant's view on its way into the batch ([`GpuView::view_into_batch`]).
const SCRATCH_VIEW: usize = 33;

/// Most axis tables a [`GpuView`] remembers before it forgets them all (a stream has a handful of
/// frame sizes; the launcher keeps the uploaded tables).
const MAX_AXES: usize = 64;

/// The element type of the model's image input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Element {
    /// float32.
    #[default]
    F32,
    /// float16 (IEEE binary16, rounded to nearest even; docs/model-description.md#float16-models).
    F16,
}

impl Element {
    /// Bytes per value.
    fn bytes(self) -> usize {
        match self {
            Element::F32 => 4,
            Element::F16 => 2,
        }
    }
}

/// What the recipe needs to know, on the host, of an axis table it uploaded.
#[derive(Debug, Clone, Copy)]
struct AxisInfo {
    /// Weights per output sample (0 for NEAREST).
    taps: usize,
    /// Source samples `[lo, hi)` the table reads.
    lo: usize,
    hi: usize,
}

impl AxisInfo {
    fn of(t: &AxisTable) -> Self {
        match t {
            AxisTable::Conv { taps, start, .. } => {
                let lo = start.iter().min().map_or(0, |&s| s as usize);
                let hi = start.iter().max().map_or(0, |&s| s as usize + taps);
                Self {
                    taps: *taps,
                    lo,
                    hi,
                }
            }
            AxisTable::Nearest(_) => Self {
                taps: 0,
                lo: 0,
                hi: 0,
            },
        }
    }
}

/// The table's bytes as the kernels read them: the `u32` first source sample (NEAREST: source
/// index) per output sample, then (convolutions) the `i32` weights, all little-endian.
fn table_bytes(t: &AxisTable) -> Vec<u8> {
    match t {
        AxisTable::Conv { start, weights, .. } => start
            .iter()
            .flat_map(|s| s.to_le_bytes())
            .chain(weights.iter().flat_map(|w| w.to_le_bytes()))
            .collect(),
        AxisTable::Nearest(idx) => idx.iter().flat_map(|s| s.to_le_bytes()).collect(),
    }
}

/// The model view and the input tensor of one model on the GPU: what `ModelView` and
/// `Normalizer` do on the CPU, with the same results. Like `ModelView`, one per worker
/// (`&mut self`: it remembers the tables it uploaded).
pub(crate) struct GpuView {
    width: u32,
    height: u32,
    /// The resize rule (only its geometry is used here).
    geometry: ModelView,
    filter: Filter,
    norm: Normalizer,
    /// Launcher constant name of the normalisation tables (from the values they are made of).
    lut_name: String,
    element: Element,
    /// Axis tables uploaded, by (input size, output size, first output sample, samples).
    axes: HashMap<(u32, u32, u32, u32), AxisInfo>,
}

impl std::fmt::Debug for GpuView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuView")
            .field("size", &(self.width, self.height))
            .field("filter", &self.filter)
            .field("element", &self.element)
            .finish_non_exhaustive()
    }
}

impl GpuView {
    /// For `model`, whose image input takes `element`s.
    pub(crate) fn new(model: &ModelDesc, element: Element) -> Self {
        let p = &model.preprocess;
        let mut lut_name = String::from("view/normalize");
        for c in p.channels.order() {
            let _ = write!(
                lut_name,
                "/{:08x}.{:08x}.{:08x}",
                p.scale.to_bits(),
                p.mean[c].to_bits(),
                p.std[c].to_bits()
            );
        }
        Self {
            width: model.input.width,
            height: model.input.height,
            geometry: ModelView::new(model),
            filter: filter_of(p.interpolation),
            norm: Normalizer::new(model),
            lut_name,
            element,
            axes: HashMap::new(),
        }
    }

    /// The view's (width, height): the model's input size.
    pub(crate) fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// Bytes of one row of the input batch (`3 × width × height` elements).
    pub(crate) fn row_bytes(&self) -> usize {
        3 * self.width as usize * self.height as usize * self.element.bytes()
    }

    /// The axis table `in_size → out_size`, output samples `[first, first + len)`, uploaded (once
    /// per launcher): its address, the address of its weights, and its shape.
    fn axis<L: Launcher>(
        &mut self,
        l: &mut L,
        (in_size, out_size): (u32, u32),
        first: u32,
        len: u32,
    ) -> Result<Table, GpuError> {
        let filter = self.filter;
        let table = || resample::axis_table(in_size, out_size, filter, first, len);
        let name = format!("view/{filter:?}/{in_size}/{out_size}/{first}/{len}");
        let mut made = None;
        let buf = l.constant(&name, &mut || {
            let t = table();
            made = Some(AxisInfo::of(&t));
            table_bytes(&t)
        })?;
        let key = (in_size, out_size, first, len);
        let info = match made.or_else(|| self.axes.get(&key).copied()) {
            Some(info) => info,
            // Uploaded by another view of this launcher.
            None => AxisInfo::of(&table()),
        };
        if self.axes.len() >= MAX_AXES {
            self.axes.clear();
        }
        self.axes.insert(key, info);
        let base = l.address(buf);
        Ok((base, base + 4 * u64::from(len), info))
    }

    /// Writes the model's view of `src` into `dst` (of the model's input size): the description's
    /// resize and centre crop, with the bytes `ModelView::image` gives.
    pub(crate) fn view<L: Launcher>(
        &mut self,
        l: &mut L,
        src: DeviceImage,
        dst: DeviceImage,
    ) -> Result<(), GpuError> {
        let (vw, vh) = (self.width, self.height);
        if (dst.width, dst.height) != (vw, vh) {
            return Err(GpuError::Launch(format!(
                "model view of {vw}×{vh} into a {}×{} image",
                dst.width, dst.height
            )));
        }
        let (sw, sh) = (src.width, src.height);
        let view_bytes = dst.elements() as usize;
        if sw == 0 || sh == 0 {
            return l.zero(dst.buf, view_bytes);
        }
        let (rw, rh) = self.geometry.resized_size((sw, sh));
        let (left, top) = (center_offset(rw, vw), center_offset(rh, vh));
        let (s, d) = (l.address(src.buf), l.address(dst.buf));
        let i = |v: u32| i64::from(v);
        if (rw, rh) == (sw, sh) {
            let args = Args::buffers(&[s, d]).ints(&[i(sw), i(sh), i(vw), i(vh), left, top]);
            return l.launch("rs_view_crop", elements(dst.elements() as i64)?, &args);
        }
        // The part of the resized image the crop keeps (all of the view unless it pads).
        let (x0, x1) = (left.max(0), (left + i(vw)).min(i(rw)));
        let (y0, y1) = (top.max(0), (top + i(vh)).min(i(rh)));
        if x0 >= x1 || y0 >= y1 {
            return l.zero(dst.buf, view_bytes);
        }
        if (x0, x1, y0, y1) != (left, left + i(vw), top, top + i(vh)) {
            l.zero(dst.buf, view_bytes)?;
        }
        let out = d + (((y0 - top) * i(vw) + (x0 - left)) * 3) as u64;
        let out_stride = i(vw) * 3;
        let (ww, wh) = ((x1 - x0) as u32, (y1 - y0) as u32);
        let (x0, y0) = (x0 as u32, y0 as u32);
        let src_stride = i(sw) * 3;

        if self.filter == Filter::Nearest {
            let (xs, _, _) = self.axis(l, (sw, rw), x0, ww)?;
            let (ys, _, _) = self.axis(l, (sh, rh), y0, wh)?;
            let args =
                Args::buffers(&[s, out, xs, ys]).ints(&[i(wh), i(ww), src_stride, out_stride]);
            let n = elements(i(ww) * i(wh) * 3)?;
            return l.launch("rs_view_nearest", n, &args);
        }
        match (sw != rw, sh != rh) {
            (true, false) => {
                let h = self.axis(l, (sw, rw), x0, ww)?;
                let from = (s + (i(y0) * src_stride) as u64, src_stride);
                horizontal(l, Pass::new(from, (out, out_stride)), h, i(wh), i(ww), 0)
            }
            (false, true) => {
                let v = self.axis(l, (sh, rh), y0, wh)?;
                let pass = Pass::new((s, src_stride), (out, out_stride));
                vertical(l, pass, v, (i(wh), i(ww) * 3), 0, i(x0) * 3)
            }
            _ if resample::vertical_first(sw as usize, sh as usize, rw as usize, rh as usize) => {
                // Only the source columns the horizontal pass reads go through the vertical one.
                let h = self.axis(l, (sw, rw), x0, ww)?;
                let v = self.axis(l, (sh, rh), y0, wh)?;
                let (lo, hi) = (h.2.lo as i64, h.2.hi as i64);
                let tmp_row = (hi - lo) * 3;
                let tmp = l.scratch(SCRATCH_TMP, (i(wh) * tmp_row) as usize)?;
                let t = l.address(tmp);
                let pass = Pass::new((s, src_stride), (t, tmp_row));
                vertical(l, pass, v, (i(wh), tmp_row), 0, lo * 3)?;
                let pass = Pass::new((t, tmp_row), (out, out_stride));
                horizontal(l, pass, h, i(wh), i(ww), lo)
            }
            _ => {
                // Only the source rows the vertical pass reads go through the horizontal one.
                let h = self.axis(l, (sw, rw), x0, ww)?;
                let v = self.axis(l, (sh, rh), y0, wh)?;
                let (lo, hi) = (v.2.lo as i64, v.2.hi as i64);
                let tmp_row = i(ww) * 3;
                let tmp = l.scratch(SCRATCH_TMP, ((hi - lo) * tmp_row) as usize)?;
                let t = l.address(tmp);
                let pass = Pass::new((s + (lo * src_stride) as u64, src_stride), (t, tmp_row));
                horizontal(l, pass, h, hi - lo, i(ww), 0)?;
                let pass = Pass::new((t, tmp_row), (out, out_stride));
                vertical(l, pass, v, (i(wh), tmp_row), lo, 0)
            }
        }
    }

    /// Normalises `view` (of the model's input size) into row `row` of `batch`: the row starts
    /// `row × row_bytes()` bytes in, as in the CPU path's batch buffer, and holds the values
    /// `Normalizer::write` gives, in the model's layout and element type.
    pub(crate) fn normalize_into_batch<L: Launcher>(
        &self,
        l: &mut L,
        view: DeviceImage,
        batch: Buf,
        row: usize,
    ) -> Result<(), GpuError> {
        let (vw, vh) = (self.width, self.height);
        if (view.width, view.height) != (vw, vh) {
            return Err(GpuError::Launch(format!(
                "normalizing a {}×{} image into a {vw}×{vh} tensor",
                view.width, view.height
            )));
        }
        let lut = l.constant(&self.lut_name, &mut || {
            self.norm
                .lut()
                .iter()
                .flatten()
                .flat_map(|v| v.to_le_bytes())
                .collect()
        })?;
        let pixels = i64::from(vw) * i64::from(vh);
        let out = l.address(batch) + (row * self.row_bytes()) as u64;
        let order = self.norm.order().map(|c| c as i64);
        let args = Args::buffers(&[l.address(view.buf), out, l.address(lut)]).ints(&[
            pixels,
            i64::from(self.norm.layout() == Layout::Nhwc),
            i64::from(self.element == Element::F16),
            order[0],
            order[1],
            order[2],
        ]);
        l.launch("rs_view_normalize", elements(3 * pixels)?, &args)
    }

    /// The model's view of `image`, normalised into row `row` of `batch` (the view goes through a
    /// scratch buffer, unless `image` is already its own view).
    pub(crate) fn view_into_batch<L: Launcher>(
        &mut self,
        l: &mut L,
        image: DeviceImage,
        batch: Buf,
        row: usize,
    ) -> Result<(), GpuError> {
        let dims = (image.width, image.height);
        if dims == self.size() && self.geometry.resized_size(dims) == dims {
            return self.normalize_into_batch(l, image, batch, row);
        }
        let (width, height) = self.size();
        let view = DeviceImage {
            buf: l.scratch(SCRATCH_VIEW, 3 * width as usize * height as usize)?,
            width,
            height,
        };
        self.view(l, image, view)?;
        self.normalize_into_batch(l, view, batch, row)
    }

    /// The frame at the scenario stage, which each scenario starts from: at the model input, its
    /// view, written into `view_buf` (at least `3 × width × height` bytes); at the native stage,
    /// `frame` itself.
    #[cfg(test)]
    pub(crate) fn stage_base<L: Launcher>(
        &mut self,
        l: &mut L,
        stage: ScenarioStage,
        frame: DeviceImage,
        view_buf: Buf,
    ) -> Result<DeviceImage, GpuError> {
        match stage {
            ScenarioStage::Native => Ok(frame),
            ScenarioStage::ModelInput => {
                let (width, height) = self.size();
                let view = DeviceImage {
                    buf: view_buf,
                    width,
                    height,
                };
                self.view(l, frame, view)?;
                Ok(view)
            }
        }
    }

    /// A variant made at `stage` (from `GpuView::stage_base`'s image) into row `row` of `batch`:
    /// normalised as it is at the model input, through its view at the native stage.
    pub(crate) fn variant_into_batch<L: Launcher>(
        &mut self,
        l: &mut L,
        stage: ScenarioStage,
        variant: DeviceImage,
        batch: Buf,
        row: usize,
    ) -> Result<(), GpuError> {
        match stage {
            ScenarioStage::ModelInput => self.normalize_into_batch(l, variant, batch, row),
            ScenarioStage::Native => self.view_into_batch(l, variant, batch, row),
        }
    }

    /// Corruption `c` at `severity` of `base` (the frame at `stage`) into `variant` (a buffer
    /// of `base`'s size), then into row `row` of `batch`; `Ok(false)` when the corruption has no
    /// GPU kernels (nothing written).
    #[allow(clippy::too_many_arguments)]
    #[cfg(test)]
    pub(crate) fn corrupt_into_batch<L: Launcher>(
        &mut self,
        l: &mut L,
        stage: ScenarioStage,
        base: DeviceImage,
        (c, severity, key): (Corruption, u8, RngKey),
        variant: Buf,
        batch: Buf,
        row: usize,
    ) -> Result<bool, GpuError> {
        let dst = DeviceImage {
            buf: variant,
            ..base
        };
        if !corruption::corrupt(l, c, severity, base, dst, key)? {
            return Ok(false);
        }
        self.variant_into_batch(l, stage, dst, batch, row)?;
        Ok(true)
    }
}

/// `n` as a launch's element count: below 2³¹, so that the kernels split an element's index with
/// 32-bit division. Views are at most 8192² pixels (`model::MAX_SIDE`); only the first pass over an
/// enormous frame can reach the limit, and is refused rather than miscomputed.
fn elements(n: i64) -> Result<u64, GpuError> {
    if (0..1 << 31).contains(&n) {
        Ok(n as u64)
    } else {
        Err(GpuError::Launch(format!(
            "a model-view pass of {n} samples: the GPU view takes frames whose passes stay below \
             2^31 samples"
        )))
    }
}

/// An uploaded axis table: its address, its weights' address, its shape.
type Table = (u64, u64, AxisInfo);

/// The buffers of one resampling pass: addresses and row strides in bytes.
#[derive(Debug, Clone, Copy)]
struct Pass {
    src: u64,
    src_stride: i64,
    dst: u64,
    dst_stride: i64,
}

impl Pass {
    fn new((src, src_stride): (u64, i64), (dst, dst_stride): (u64, i64)) -> Self {
        Self {
            src,
            src_stride,
            dst,
            dst_stride,
        }
    }
}

/// The horizontal pass over `rows` rows into `outs` pixels each; the source buffer's column 0
/// holds source pixel `first_col`.
fn horizontal<L: Launcher>(
    l: &mut L,
    p: Pass,
    (start, weights, info): Table,
    rows: i64,
    outs: i64,
    first_col: i64,
) -> Result<(), GpuError> {
    let args = Args::buffers(&[p.src, p.dst, start, weights]).ints(&[
        rows,
        outs,
        info.taps as i64,
        p.src_stride,
        p.dst_stride,
        first_col,
    ]);
    l.launch("rs_view_resample_h", elements(rows * outs * 3)?, &args)
}

/// The vertical pass into `rows` rows of `bytes` bytes; the source buffer's row 0 holds source
/// row `first_row`, and output byte 0 reads byte `col` of each source row.
fn vertical<L: Launcher>(
    l: &mut L,
    p: Pass,
    (start, weights, info): Table,
    (rows, bytes): (i64, i64),
    first_row: i64,
    col: i64,
) -> Result<(), GpuError> {
    let args = Args::buffers(&[p.src, p.dst, start, weights]).ints(&[
        rows,
        bytes,
        info.taps as i64,
        p.src_stride,
        p.dst_stride,
        first_row,
        col,
    ]);
    l.launch("rs_view_resample_v", elements(rows * bytes)?, &args)
}
