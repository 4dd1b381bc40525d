//! Masks from a segmentation ONNX model: the alternative to a background plate
//! ([`super::plate`]) when the camera moves or the scene has no empty moment. `[source.segment]`
//! wraps any source; every k-th frame goes through the model and the foreground it finds becomes
//! the frame's mask, which **replaces the source's own masks and boxes** (as the plate does; boxes
//! follow from the mask downstream). A frame with no foreground pixel gets no mask, so the mask
//! scenarios skip it.
//!
//! **Input.** The frame is squashed (no crop: the mask must cover the whole frame) to the model's
//! input size with Pillow's bilinear filter ([`crate::kernels::resample`], antialiased when shrinking), and
//! written as float32 in `layout` (NCHW or NHWC) as `(value · scale − mean[c]) / std[c]` per RGB
//! channel (one lookup table of 3 × 256 entries). Defaults: scale 1/255, ImageNet mean and std.
//! The size is read from the model when its input is fixed; a dynamic input needs `size`.
//!
//! **Output** (the model's first output, float32, in the input's layout; rank 4 `[1, C, H, W]` /
//! `[1, H, W, C]`, or single-channel `[1, H, W]`):
//! - `classes = [..]`: per-class logits or probabilities (DeepLab on VOC: `[1, 21, H, W]`,
//!   `classes = [15]` for people). A pixel is foreground when its argmax is in the list; computed
//!   as the margin `max(fg scores) − max(other scores) > 0` (ties count as background).
//! - otherwise one channel (a saliency or probability map, U²-Net / ISNet): foreground when the
//!   value exceeds `threshold` (default 0.5); with `minmax = true` the map is first stretched to
//!   0..1 by its own minimum and maximum (what those models' demos do; a constant map is all 0).
//!
//! **Resize back.** The per-pixel margin (score − threshold, or the class margin) is upsampled to
//! the frame size bilinearly with pixel centres aligned (`(x + 0.5) · in / out − 0.5`, edges
//! clamped) and thresholded at 0: smoother edges than a nearest-neighbour blow-up of the low
//! resolution mask, at one multiply-add pair per frame pixel. `min_area` (frame pixels, default 0)
//! then drops 8-connected foreground blobs smaller than it (speckle on textured backgrounds).
//!
//! **Cost and `every`.** A real segmentation model costs far more than the classifier: ISNet takes
//! about 3 s per 1024² image on a CPU (FACTS). `every = k` runs the model on every k-th frame only
//! (default 1 = every frame); the frames in between reuse the last result. **On a moving scene the
//! reused mask lags**: it shows where the objects were up to k − 1 frames ago. Every call
//! (preprocess + inference + postprocess) is timed; calls, reused frames, frames without foreground,
//! failures and the mean / p50 / p90 / max milliseconds per call are written to `summary.json` as
//! `run.source_report.segment`, and each call's time is its frame's `mask` latency stage
//! (`Frame::mask_ms`; reused masks have none). The model runs on the source thread, so on a live source a slow
//! model lowers the rate frames are read at (the camera's own buffering decides what is lost).
//!
//! **Runtime.** The session is a second ONNX Runtime session in the classifier's process, always on
//! the CPU, with `threads` intra-op threads (default 1, no spinning, so it does not starve the
//! classifier or the scenario workers). It shares the process's ONNX Runtime environment and finds
//! the library the same way as the classifier ([`crate::runtime::library_path`]:
//! `[engine] library`, `ORT_DYLIB_PATH`, the set-up script's copy).
//!
//! A frame the model fails on comes out as one skipped item (fatal under `--strict`), like any
//! unreadable frame; the next frame calls the model again.

use std::path::PathBuf;

use image::{GrayImage, RgbImage};
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::{TensorElementType, TensorRef, ValueType};

use super::decode::one_line;
use super::{Source, SourceError, SourceErrorKind};
use crate::frame::{Frame, Regions};
use crate::geometry::{Connectivity, label_components};
use crate::kernels::resample::{Filter, Resampler};
use crate::latency::LatencyHistogram;
use crate::model::Layout;

/// ImageNet channel means on 0..1 (the default `mean`).
const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
/// ImageNet channel standard deviations on 0..1 (the default `std`).
const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];

/// `[source.segment]`: the segmentation model and how its input and output are read.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentConfig {
    /// The `.onnx` file (relative to the config file).
    pub(crate) model: PathBuf,
    /// Input size `[width, height]` in pixels; default: the model's fixed input size (required
    /// when the model's input size is dynamic).
    #[serde(default)]
    pub(crate) size: Option<[u32; 2]>,
    /// Input (and output) tensor layout, `"nchw"` (default) or `"nhwc"`.
    #[serde(default = "default_layout")]
    pub(crate) layout: Layout,
    /// Factor from 0..255 pixel values to the model's scale before `mean`/`std` (default 1/255).
    #[serde(default = "default_scale")]
    pub(crate) scale: f32,
    /// Per-channel (RGB) mean subtracted after `scale` (default ImageNet's).
    #[serde(default = "default_mean")]
    pub(crate) mean: [f32; 3],
    /// Per-channel (RGB) divisor after the mean (default ImageNet's).
    #[serde(default = "default_std")]
    pub(crate) std: [f32; 3],
    /// Foreground classes of a multi-class output (argmax in this list). Absent: the output is a
    /// single-channel map read with `threshold`.
    #[serde(default)]
    pub(crate) classes: Option<Vec<usize>>,
    /// Foreground when a single-channel output exceeds this (default 0.5).
    #[serde(default)]
    pub(crate) threshold: Option<f32>,
    /// Stretch a single-channel output to 0..1 by its minimum and maximum before `threshold`.
    #[serde(default)]
    pub(crate) minmax: bool,
    /// Run the model on every k-th frame; the frames in between reuse the last mask (default 1).
    #[serde(default = "default_every")]
    pub(crate) every: u64,
    /// Intra-op threads of the segmentation session (default 1; 0 = ONNX Runtime's default).
    #[serde(default = "default_threads")]
    pub(crate) threads: usize,
    /// Foreground blobs (8-connected) smaller than this many frame pixels are dropped (default 0).
    #[serde(default)]
    pub(crate) min_area: u64,
    /// The run's `[engine] library` (set by the config loader, not a key of the table): the
    /// segmentation session loads ONNX Runtime the way the classifier does.
    #[serde(skip)]
    pub(crate) library: Option<PathBuf>,
}

fn default_layout() -> Layout {
    Layout::Nchw
}
fn default_scale() -> f32 {
    1.0 / 255.0
}
fn default_mean() -> [f32; 3] {
    IMAGENET_MEAN
}
fn default_std() -> [f32; 3] {
    IMAGENET_STD
}
fn default_every() -> u64 {
    1
}
fn default_threads() -> usize {
    1
}

impl SegmentConfig {
    /// A config for `model` with every default.
    #[cfg(test)]
    fn new(model: impl Into<PathBuf>) -> Self {
        Self {
            model: model.into(),
            size: None,
            layout: default_layout(),
            scale: default_scale(),
            mean: default_mean(),
            std: default_std(),
            classes: None,
            threshold: None,
            minmax: false,
            every: default_every(),
            threads: default_threads(),
            min_area: 0,
            library: None,
        }
    }

    /// Checks the values that do not need the model; the message names the key.
    pub(crate) fn check(&self) -> Result<(), SegmentError> {
        let setting = |key, message: String| Err(SegmentError::Setting { key, message });
        if self.every == 0 {
            return setting(
                "every",
                "[source.segment] every = 0: give 1 to segment every frame, k for every k-th"
                    .into(),
            );
        }
        if let Some([w, h]) = self.size
            && !((1..=8192).contains(&w) && (1..=8192).contains(&h))
        {
            return setting(
                "size",
                format!(
                    "[source.segment] size = [{w}, {h}] must be [width, height] in 1..=8192; set the \
                 model's input size, or remove `size` to use the model's own"
                ),
            );
        }
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return setting(
                "scale",
                format!(
                    "[source.segment] scale = {} must be a number above 0; set the factor from \
                 0..255 pixels to the model's scale (e.g. 0.00392156 for 0..1), or remove it",
                    self.scale
                ),
            );
        }
        if self.mean.iter().any(|m| !m.is_finite()) {
            return setting(
                "mean",
                format!(
                    "[source.segment] mean = {:?} must be finite numbers; give three, e.g. mean = \
                 [0.485, 0.456, 0.406] (ImageNet's, the default)",
                    self.mean
                ),
            );
        }
        if self.std.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
            return setting(
                "std",
                format!(
                    "[source.segment] std = {:?} must be numbers above 0; give three, e.g. std = \
                 [0.229, 0.224, 0.225] (ImageNet's, the default)",
                    self.std
                ),
            );
        }
        match (&self.classes, self.threshold) {
            (Some(_), Some(_)) => {
                return setting(
                    "classes",
                    "[source.segment] `classes` (argmax of a multi-class output) and \
                            `threshold` (a single-channel map) both say how the output is read; \
                            keep one"
                        .into(),
                );
            }
            (Some(c), None) if c.is_empty() => {
                return setting(
                    "classes",
                    "[source.segment] classes = []: list the foreground class indices, \
                            e.g. classes = [15]"
                        .into(),
                );
            }
            (Some(_), None) if self.minmax => {
                return setting(
                    "minmax",
                    "[source.segment] minmax applies to a single-channel output read \
                            with `threshold`, not to `classes`; remove minmax"
                        .into(),
                );
            }
            (None, Some(t)) if !t.is_finite() => {
                return setting(
                    "threshold",
                    format!(
                        "[source.segment] threshold = {t} must be a finite number; give e.g. \
                     threshold = 0.5 (the default)"
                    ),
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// How the output is read.
    fn readout(&self) -> Readout {
        match &self.classes {
            Some(c) => Readout::Classes(c.clone()),
            None => Readout::Threshold {
                threshold: self.threshold.unwrap_or(0.5),
                minmax: self.minmax,
            },
        }
    }
}

/// How the model's output becomes foreground (see the module docs).
#[derive(Debug, Clone, PartialEq)]
enum Readout {
    /// Argmax over the class axis in this list.
    Classes(Vec<usize>),
    /// A single-channel map above `threshold`, stretched to 0..1 first when `minmax`.
    Threshold {
        /// Foreground above this value.
        threshold: f32,
        /// Stretch the map to 0..1 by its own extremes first.
        minmax: bool,
    },
}

impl Readout {
    /// Checks a channel count against the readout; the message names the key to change.
    fn check_channels(&self, channels: usize) -> Result<(), SegmentError> {
        let output = |message: String| Err(SegmentError::Output { message });
        match self {
            Readout::Classes(c) => {
                if channels == 1 {
                    return output(
                        "its output has one channel (a saliency/probability map) but \
                                `[source.segment] classes` is set; remove `classes` (and use \
                                `threshold`)"
                            .into(),
                    );
                }
                if let Some(bad) = c.iter().find(|&&k| k >= channels) {
                    return output(format!(
                        "`[source.segment] classes` names class {bad} but the output has \
                         {channels} classes (0..{channels}); fix `classes`"
                    ));
                }
            }
            Readout::Threshold { .. } => {
                if channels != 1 {
                    return output(format!(
                        "its output has {channels} channels; set `[source.segment] classes = \
                         [..]` to the foreground class indices (argmax), or use a \
                         single-channel model"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The `(channels, height, width)` of an output tensor of shape `shape` in `layout`: rank 4
/// `[1, C, H, W]` (NCHW) or `[1, H, W, C]` (NHWC), rank 3 `[1, H, W]` and rank 2 `[H, W]` one
/// channel. Dynamic dimensions (< 0) are returned as 0. Errors name what is wrong.
fn output_geometry(shape: &[i64], layout: Layout) -> Result<(usize, usize, usize), SegmentError> {
    let d = |v: i64| usize::try_from(v).unwrap_or(0);
    let batch_ok = |b: i64| b == 1 || b < 0;
    match (shape, layout) {
        ([b, c, h, w], Layout::Nchw) if batch_ok(*b) => Ok((d(*c), d(*h), d(*w))),
        ([b, h, w, c], Layout::Nhwc) if batch_ok(*b) => Ok((d(*c), d(*h), d(*w))),
        ([b, h, w], _) if batch_ok(*b) => Ok((1, d(*h), d(*w))),
        ([h, w], _) => Ok((1, d(*h), d(*w))),
        _ => Err(SegmentError::Output {
            message: format!(
                "its first output has shape {shape:?}; robustream reads a batch of one as [1, C, \
                 H, W] (layout nchw), [1, H, W, C] (layout nhwc) or [1, H, W]: fix \
                 `[source.segment] layout`, or re-export the model with such an output"
            ),
        }),
    }
}

/// Why a segmentation model cannot make masks under its `[source.segment]` settings, by kind.
/// Display = the message: what is wrong and which key or model change fixes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SegmentError {
    /// A `[source.segment]` value out of range, found before the model is loaded.
    #[error("{message}")]
    Setting {
        /// The key ("every", "size", "scale", "mean", "std", "classes", "minmax", "threshold").
        key: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
    /// The model's input is not the image tensor robustream feeds, or not the configured size.
    #[error("{message}")]
    Input {
        /// What is wrong and what to do.
        message: String,
    },
    /// The model's output is not a map the readout (`classes` / `threshold`, `layout`) can read.
    #[error("{message}")]
    Output {
        /// What is wrong and what to do.
        message: String,
    },
    /// Running the model failed (ONNX Runtime's text quoted, on one line).
    #[error("{message}")]
    Inference {
        /// What failed and what to check.
        message: String,
    },
}

/// The per-pixel foreground margin (> 0 = foreground) of an output `data` holding `channels` ×
/// `height` × `width` values in `layout` (channels-last for NHWC; a single channel is the same in
/// both). Row-major, `height × width`.
fn margin_map(
    data: &[f32],
    channels: usize,
    pixels: usize,
    layout: Layout,
    readout: &Readout,
) -> Vec<f32> {
    match readout {
        Readout::Classes(fg) => {
            let mut is_fg = vec![false; channels];
            for &k in fg {
                if let Some(f) = is_fg.get_mut(k) {
                    *f = true;
                }
            }
            let at = |c: usize, p: usize| match layout {
                Layout::Nchw => data[c * pixels + p],
                Layout::Nhwc => data[p * channels + c],
            };
            (0..pixels)
                .map(|p| {
                    let (mut best_fg, mut best_bg) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
                    for (c, &f) in is_fg.iter().enumerate() {
                        let v = at(c, p);
                        if f {
                            best_fg = best_fg.max(v);
                        } else {
                            best_bg = best_bg.max(v);
                        }
                    }
                    best_fg - best_bg
                })
                .collect()
        }
        Readout::Threshold { threshold, minmax } => {
            let map = &data[..pixels];
            if *minmax {
                let (lo, hi) = map
                    .iter()
                    .filter(|v| v.is_finite())
                    .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                        (lo.min(v), hi.max(v))
                    });
                let span = hi - lo;
                map.iter()
                    .map(|&v| {
                        let n = if span > 0.0 { (v - lo) / span } else { 0.0 };
                        n - threshold
                    })
                    .collect()
            } else {
                map.iter().map(|&v| v - threshold).collect()
            }
        }
    }
}

/// Per output index along one axis: the two source indices and the weight of the second, for a
/// bilinear resize from `n_in` to `n_out` samples with pixel centres aligned, edges clamped.
fn taps(n_in: usize, n_out: usize) -> Vec<(usize, usize, f32)> {
    let scale = n_in as f64 / n_out as f64;
    (0..n_out)
        .map(|o| {
            let s = ((o as f64 + 0.5) * scale - 0.5).clamp(0.0, (n_in - 1) as f64);
            let i0 = s.floor() as usize;
            let i1 = (i0 + 1).min(n_in - 1);
            (i0, i1, (s - i0 as f64) as f32)
        })
        .collect()
}

/// The `width × height` 0/255 mask of a `mw × mh` margin map: bilinear upsampling of the margin
/// (pixel centres aligned, edges clamped), foreground where it is > 0. `mw`, `mh` ≥ 1.
fn upsample_mask(margin: &[f32], mw: usize, mh: usize, width: u32, height: u32) -> GrayImage {
    let xs = taps(mw, width as usize);
    let ys = taps(mh, height as usize);
    let mut out = GrayImage::new(width, height);
    let mut top = vec![0f32; width as usize];
    let mut bottom = vec![0f32; width as usize];
    for (row, &(y0, y1, fy)) in out.as_mut().chunks_exact_mut(width as usize).zip(&ys) {
        let (r0, r1) = (
            &margin[y0 * mw..(y0 + 1) * mw],
            &margin[y1 * mw..(y1 + 1) * mw],
        );
        for ((t, b), &(x0, x1, fx)) in top.iter_mut().zip(bottom.iter_mut()).zip(&xs) {
            *t = r0[x0] + (r0[x1] - r0[x0]) * fx;
            *b = r1[x0] + (r1[x1] - r1[x0]) * fx;
        }
        for ((m, t), b) in row.iter_mut().zip(&top).zip(&bottom) {
            *m = if t + (b - t) * fy > 0.0 { 255 } else { 0 };
        }
    }
    out
}

/// Clears the 8-connected foreground blobs of `mask` smaller than `min_area` pixels.
fn remove_small(mask: &mut GrayImage, min_area: u64) {
    if min_area <= 1 {
        return;
    }
    let comps = label_components(mask, Connectivity::Eight);
    if comps.areas.iter().all(|&a| a >= min_area) {
        return;
    }
    for (m, &l) in mask.iter_mut().zip(&comps.labels) {
        if l != 0 && comps.areas[l as usize - 1] < min_area {
            *m = 0;
        }
    }
}

/// A loaded segmentation model: session, input geometry and readout.
struct Segmenter {
    session: Session,
    input_name: String,
    output_name: String,
    size: (u32, u32),
    layout: Layout,
    /// `(v · scale − mean[c]) / std[c]` for v in 0..=255, per channel.
    lut: [[f32; 256]; 3],
    readout: Readout,
    resampler: Resampler,
    tensor: Vec<f32>,
    path: PathBuf,
}

impl Segmenter {
    /// Loads `config.model` (after [`SegmentConfig::check`]) and checks its input and output
    /// against the config. Errors are one line naming the file or key and the fix.
    fn open(config: &SegmentConfig) -> Result<Self, SourceError> {
        let path = config.model.clone();
        config.check().map_err(|e| {
            SourceError::at(SourceErrorKind::Model, &path, e.to_string()).caused_by(e)
        })?;
        let err = |m: String| {
            SourceError::at(
                SourceErrorKind::Model,
                &path,
                format!("segmentation model: {m}"),
            )
        };
        let unfit = |e: SegmentError| err(e.to_string()).caused_by(e);
        if !path.is_file() {
            return Err(err(
                "the file does not exist; fix `[source.segment] model` (relative to the config \
                 file)"
                    .into(),
            ));
        }
        let lib = crate::runtime::library_path(config.library.as_deref()).map_err(|e| {
            SourceError::new(SourceErrorKind::Model, "[source.segment]", e.to_string())
        })?;
        let env = crate::runtime::environment(&lib).map_err(|e| {
            SourceError::new(
                SourceErrorKind::Model,
                "[source.segment]",
                format!(
                    "{}; point `[engine] library` or ORT_DYLIB_PATH at a working \
                     libonnxruntime.so (`bash scripts/setup.sh` installs one)",
                    super::decode::fold(&e.to_string())
                ),
            )
        })?;
        let setup = |e: ort::Error<_>| {
            err(format!(
                "ONNX Runtime cannot configure its session ({}); check `[source.segment] \
                 threads` and `[engine] library`",
                one_line(&e.to_string())
            ))
        };
        let mut builder = Session::builder(&env)
            .map_err(|e| {
                err(format!(
                    "ONNX Runtime cannot create its session ({}); check `[engine] library` \
                     (the ONNX Runtime the classifier uses too)",
                    one_line(&e.to_string())
                ))
            })?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(setup)?
            .with_inter_threads(1)
            .map_err(setup)?
            .with_intra_op_spinning(false)
            .map_err(setup)?;
        if config.threads > 0 {
            builder = builder.with_intra_threads(config.threads).map_err(setup)?;
        }
        let session = builder.commit_from_file(&path).map_err(|e| {
            err(format!(
                "ONNX Runtime cannot load it ({}); give an .onnx model",
                one_line(&e.to_string())
            ))
        })?;
        let (input_name, size) = check_input(&session, config).map_err(unfit)?;
        let readout = config.readout();
        let output_name = check_output(&session, config.layout, &readout).map_err(unfit)?;
        let mut lut = [[0f32; 256]; 3];
        for (c, table) in lut.iter_mut().enumerate() {
            for (v, t) in table.iter_mut().enumerate() {
                *t = (v as f32 * config.scale - config.mean[c]) / config.std[c];
            }
        }
        Ok(Self {
            session,
            input_name,
            output_name,
            size,
            layout: config.layout,
            lut,
            readout,
            resampler: Resampler::new(),
            tensor: Vec::new(),
            path,
        })
    }

    /// The model's input size `(width, height)`.
    fn size(&self) -> (u32, u32) {
        self.size
    }

    /// The foreground mask (0/255, the image's size) the model finds in `image`, before
    /// `min_area`. The error says what failed (inference, an output of the wrong shape).
    fn mask(&mut self, image: &RgbImage) -> Result<GrayImage, SegmentError> {
        let (w, h) = self.size;
        let small = self.resampler.resize_rgb(image, w, h, Filter::Bilinear);
        write_tensor(&small, self.layout, &self.lut, &mut self.tensor);
        let shape = match self.layout {
            Layout::Nchw => [1, 3, h as usize, w as usize],
            Layout::Nhwc => [1, h as usize, w as usize, 3],
        };
        let layout = match self.layout {
            Layout::Nchw => "nchw",
            Layout::Nhwc => "nhwc",
        };
        let input_fix = || {
            format!(
                "check that the model runs on a float32 {shape:?} input (`[source.segment] size` \
                 and `layout = \"{layout}\"`)"
            )
        };
        let failed = |message| SegmentError::Inference { message };
        let tensor = TensorRef::from_array_view((shape, self.tensor.as_slice())).map_err(|e| {
            failed(format!(
                "cannot make its input tensor ({}); {}",
                one_line(&e.to_string()),
                input_fix()
            ))
        })?;
        let outputs = self
            .session
            .run(ort::inputs![self.input_name.as_str() => tensor])
            .map_err(|e| {
                failed(format!(
                    "inference failed ({}); {}",
                    one_line(&e.to_string()),
                    input_fix()
                ))
            })?;
        let unreadable = |message| SegmentError::Output { message };
        let value = outputs.get(&self.output_name).ok_or_else(|| {
            unreadable(format!(
                "it gave no output `{}`; re-export the model with its map as the first output",
                self.output_name
            ))
        })?;
        let (out_shape, data) = value.try_extract_tensor::<f32>().map_err(|e| {
            unreadable(format!(
                "output `{}` is not a float32 tensor ({}); re-export the model with a float32 \
                 map as its first output",
                self.output_name,
                one_line(&e.to_string())
            ))
        })?;
        let dims: Vec<i64> = out_shape.iter().copied().collect();
        let (c, oh, ow) = output_geometry(&dims, self.layout)?;
        self.readout.check_channels(c)?;
        if oh == 0 || ow == 0 || data.len() != c * oh * ow {
            return Err(unreadable(format!(
                "output `{}` has shape {dims:?}, which holds no {c} × H × W map; check \
                 `[source.segment] layout = \"{layout}\"`, or re-export the model with a [1, C, H, \
                 W] or [1, H, W, C] output",
                self.output_name
            )));
        }
        let margin = margin_map(data, c, oh * ow, self.layout, &self.readout);
        Ok(upsample_mask(
            &margin,
            ow,
            oh,
            image.width(),
            image.height(),
        ))
    }
}

/// Writes `image` into `out` as float32 in `layout` through the per-channel table `lut`.
fn write_tensor(image: &RgbImage, layout: Layout, lut: &[[f32; 256]; 3], out: &mut Vec<f32>) {
    let px = image.as_raw();
    let n = px.len() / 3;
    out.clear();
    out.resize(px.len(), 0.0);
    match layout {
        Layout::Nchw => {
            let (r, gb) = out.split_at_mut(n);
            let (g, b) = gb.split_at_mut(n);
            for (i, p) in px.chunks_exact(3).enumerate() {
                r[i] = lut[0][usize::from(p[0])];
                g[i] = lut[1][usize::from(p[1])];
                b[i] = lut[2][usize::from(p[2])];
            }
        }
        Layout::Nhwc => {
            for (o, p) in out.chunks_exact_mut(3).zip(px.chunks_exact(3)) {
                for c in 0..3 {
                    o[c] = lut[c][usize::from(p[c])];
                }
            }
        }
    }
}

/// Checks the model's (single) image input against the config; returns its name and the size.
fn check_input(
    session: &Session,
    config: &SegmentConfig,
) -> Result<(String, (u32, u32)), SegmentError> {
    let unfit = |message| Err(SegmentError::Input { message });
    let inputs = session.inputs();
    let [input] = inputs else {
        let names: Vec<&str> = inputs.iter().map(|i| i.name()).collect();
        return unfit(format!(
            "it has {} inputs ({}); robustream feeds one image tensor: give a segmentation \
             model with a single image input",
            inputs.len(),
            crate::quote::clip_list(names)
        ));
    };
    let name = input.name().to_string();
    let ValueType::Tensor { ty, shape, .. } = input.dtype() else {
        return unfit(format!(
            "input `{name}` is not a tensor; give a model whose input is a float32 image tensor"
        ));
    };
    if *ty != TensorElementType::Float32 {
        return unfit(format!(
            "input `{name}` is {ty:?}; robustream feeds float32: re-export the model with a \
             float32 input"
        ));
    }
    let dims: Vec<i64> = shape.iter().copied().collect();
    let layout = match config.layout {
        Layout::Nchw => "nchw",
        Layout::Nhwc => "nhwc",
    };
    let (b, c, h, w) = match (dims.as_slice(), config.layout) {
        ([b, c, h, w], Layout::Nchw) => (*b, *c, *h, *w),
        ([b, h, w, c], Layout::Nhwc) => (*b, *c, *h, *w),
        _ => {
            return unfit(format!(
                "input `{name}` has shape {dims:?}, not an image batch; robustream feeds [1, 3, H, \
                 W] (layout nchw) or [1, H, W, 3] (layout nhwc): give a model with such an input"
            ));
        }
    };
    if !(c == 3 || c < 0) || !(b == 1 || b < 0) {
        let other = if config.layout == Layout::Nchw {
            "nhwc"
        } else {
            "nchw"
        };
        return unfit(format!(
            "input `{name}` has shape {dims:?}, which is not a batch of one RGB image in layout \
             {layout}; fix `[source.segment] layout` (e.g. layout = \"{other}\")"
        ));
    }
    let fixed = |v: i64| u32::try_from(v).ok().filter(|&v| v > 0);
    let size = match (config.size, fixed(w), fixed(h)) {
        (None, Some(w), Some(h)) => (w, h),
        (None, _, _) => {
            return unfit(format!(
                "input `{name}` has a dynamic size ({dims:?}); set `[source.segment] size = \
                 [width, height]`"
            ));
        }
        (Some([sw, sh]), fw, fh) => {
            if fw.is_some_and(|v| v != sw) || fh.is_some_and(|v| v != sh) {
                return unfit(format!(
                    "`[source.segment] size = [{sw}, {sh}]` but input `{name}` is fixed at \
                     {dims:?} ({layout}); remove `size` or match it"
                ));
            }
            (sw, sh)
        }
    };
    Ok((name, size))
}

/// Checks the model's first output against the readout; returns its name.
fn check_output(
    session: &Session,
    layout: Layout,
    readout: &Readout,
) -> Result<String, SegmentError> {
    let output = |message| Err(SegmentError::Output { message });
    let Some(first) = session.outputs().first() else {
        return output(
            "it has no output; give a segmentation model (its first output a map)".into(),
        );
    };
    let name = first.name().to_string();
    let ValueType::Tensor { ty, shape, .. } = first.dtype() else {
        return output(format!(
            "output `{name}` is not a tensor; give a model whose first output is a float32 map"
        ));
    };
    if *ty != TensorElementType::Float32 {
        return output(format!(
            "output `{name}` is {ty:?}; robustream reads float32: re-export the model with a \
             float32 output"
        ));
    }
    let dims: Vec<i64> = shape.iter().copied().collect();
    let (c, _, _) = output_geometry(&dims, layout)?;
    if c > 0 {
        readout.check_channels(c)?;
    }
    Ok(name)
}

/// What the segmentation did over the run (for `run.source_report.segment`).
#[derive(Debug, Default)]
struct Stats {
    calls: u64,
    reused: u64,
    empty: u64,
    failed: u64,
    total_ms: f64,
    latency: LatencyHistogram,
}

/// A source whose frames get masks from a segmentation model (see the module docs).
pub(crate) struct SegmentSource {
    inner: Box<dyn Source>,
    segmenter: Segmenter,
    every: u64,
    min_area: u64,
    /// The last call's result (`None` inside: no foreground) and how many frames used it since.
    last: Option<(Option<GrayImage>, (u32, u32))>,
    since: u64,
    stats: Stats,
}

impl SegmentSource {
    /// Wraps `inner`, loading the model (errors as in [`Segmenter::open`]).
    pub(crate) fn new(inner: Box<dyn Source>, config: &SegmentConfig) -> Result<Self, SourceError> {
        let segmenter = Segmenter::open(config)?;
        Ok(Self {
            inner,
            segmenter,
            every: config.every,
            min_area: config.min_area,
            last: None,
            since: 0,
            stats: Stats::default(),
        })
    }

    /// One model call on `image`: the cleaned mask, or `None` without foreground; timed.
    fn call(&mut self, image: &RgbImage) -> Result<Option<GrayImage>, SegmentError> {
        let t0 = std::time::Instant::now();
        let mut mask = self.segmenter.mask(image)?;
        remove_small(&mut mask, self.min_area);
        let mask = mask.iter().any(|&v| v != 0).then_some(mask);
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        self.stats.calls += 1;
        self.stats.total_ms += ms;
        self.stats.latency.record_ms(ms);
        Ok(mask)
    }

    fn own_report(&self) -> serde_json::Value {
        let s = &self.stats;
        let q = s.latency.quantiles();
        let mean = if s.calls > 0 {
            s.total_ms / s.calls as f64
        } else {
            0.0
        };
        let r3 = |v: f64| (v * 1000.0).round() / 1000.0;
        let (w, h) = self.segmenter.size();
        serde_json::json!({
            "model": self.segmenter.path.display().to_string(),
            "input": [w, h],
            "every": self.every,
            "calls": s.calls,
            "reused": s.reused,
            "no_foreground": s.empty,
            "failed": s.failed,
            "ms_per_call": {
                "mean": r3(mean),
                "p50": q.p50,
                "p90": q.p90,
                "max": q.max,
            },
        })
    }
}

impl Source for SegmentSource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        let mut frame = match self.inner.next_frame()? {
            Ok(f) => f,
            Err(e) => return Some(Err(e)),
        };
        let size = frame.image.dimensions();
        let reuse = match &self.last {
            Some((_, s)) => *s == size && self.since < self.every,
            None => false,
        };
        let mask = if reuse {
            self.since += 1;
            self.stats.reused += 1;
            self.last.as_ref().and_then(|(m, _)| m.clone())
        } else {
            let t0 = std::time::Instant::now();
            match self.call(&frame.image) {
                Ok(m) => {
                    self.last = Some((m.clone(), size));
                    self.since = 1;
                    // The call's cost is this frame's `mask` latency stage (reused masks: none).
                    frame.mask_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
                    m
                }
                Err(e) => {
                    self.stats.failed += 1;
                    self.last = None;
                    return Some(Err(SourceError::new(
                        SourceErrorKind::Model,
                        frame.id,
                        format!(
                            "segmentation model {} failed on this frame (skipped): {e}",
                            crate::quote::clip_path(&self.segmenter.path)
                        ),
                    )
                    .caused_by(e)));
                }
            }
        };
        if mask.is_none() {
            self.stats.empty += 1;
        }
        // Model masks replace the source's own masks and boxes.
        frame.regions = mask.map(|m| Regions {
            mask: Some(m),
            boxes: Vec::new(),
        });
        Some(Ok(frame))
    }

    fn describe(&self) -> String {
        let every = match self.every {
            1 => "every frame".to_string(),
            k => format!("every {k} frames"),
        };
        format!(
            "{}, masks from segmentation model {} ({every})",
            self.inner.describe(),
            self.segmenter.path.display()
        )
    }

    fn report(&self) -> Option<serde_json::Value> {
        let own = self.own_report();
        Some(match self.inner.report() {
            None => serde_json::json!({ "segment": own }),
            Some(serde_json::Value::Object(mut m)) => {
                m.insert("segment".into(), own);
                serde_json::Value::Object(m)
            }
            Some(other) => serde_json::json!({ "source": other, "segment": own }),
        })
    }

    crate::source::forward_to_inner!(except_report);
}

#[cfg(test)]
mod tests;
