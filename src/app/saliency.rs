//! Occlusion saliency (opt-in post pass, `[saliency]` / `--saliency`): how well the evidence the
//! model uses lines up with the object mask, for any engine (no gradients needed).
//!
//! The reference (docs/hard-imagenet.md#saliency-alignment) uses GradCAM, which needs the model's
//! gradients and a chosen layer; an ONNX Runtime inference session has neither. We measure the same
//! alignment with an **occlusion map** instead: a `patch` × `patch` square (model-view pixels)
//! filled with gray 0.5 (exactly 0.5 on the [0, 1] scale, written into the normalised tensor, so no
//! u8 rounding) slides over the model's view with step `stride` (the last row and column of
//! positions are moved to touch the far edges, so every pixel is covered); at each position the map
//! value is the **drop of the true-class probability** from the unoccluded frame (probability =
//! softmax of the logits, summed over the model classes the class map sends to the truth). A
//! pixel's value is the mean drop over the patches covering it. The map is then scaled and compared
//! with the mask as docs/hard-imagenet.md#saliency-alignment does ([`crate::metrics::saliency`]:
//! min–max to [0, 1], ≥ 0.5, IoU / Dice with ε = 1e−10, Δ density). Occlusion and GradCAM maps are
//! different estimators of saliency: compare models with the same method, not these numbers with
//! GradCAM's.
//!
//! Defaults: `patch = 32`, `stride = 16` at a 224-pixel view, scaled with min(width, height) / 224.
//! Frames: at most `frames` frames with a mask and a truth, the ones with the smallest keyed rank
//! `RngKey::new(seed, frame id, "saliency/frame")` (ties by source order;
//! `crate::app::challenge::BottomK`), kept during the main pass at the model's view
//! ([`crate::app::challenge::Harvest`]); the shards of a run each keep their own and `robustream merge`
//! keeps the smallest ranks of their lines (docs/deploy.md#post-passes-in-shards). **Cost**: 1 + positions²
//! inferences per frame (170 at 224² with the defaults, batched at `[pipeline] max_batch`), reported
//! as `inferences` and `seconds` in `metrics.saliency`. Per-frame lines go to `saliency.jsonl`, and
//! with `maps = true` (`--saliency-maps`) the scaled maps to `saliency/<n>.png` (8-bit gray).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::app::challenge::{Foreground, round3};
use crate::classmap::ClassMap;
use crate::engine::{Engine, EngineError};
use crate::metrics::saliency::{
    Alignment, AlignmentMeans, SaliencyEntry, alignment, min_max_scale,
};
use crate::model::ModelDesc;
use crate::model::{Layout, OutputKind};
use crate::preprocess::Normalizer;
use crate::report::ReportError;
use crate::report::family::to_value;
use crate::report::lines::LineFile;
use crate::view::MaskResize;

/// How the pass brings a frame's mask to the model's view: Hard ImageNet's rule (bilinear, then
/// non-zero → object, docs/hard-imagenet.md#data-and-preprocessing), since its
/// `saliency_analysis.py` reads the masks through the Hard ImageNet dataset's transform
/// (docs/hard-imagenet.md#saliency-alignment).
pub const MASK_RESIZE: MaskResize = MaskResize::BilinearNonZero;

/// The file of per-frame saliency lines in the run directory.
pub(crate) const SALIENCY_JSONL: &str = "saliency.jsonl";

/// `[saliency]` of a run config (CLI `--saliency`, `--saliency-maps`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct SaliencyConfig {
    /// Run the occlusion saliency pass after the main pass.
    pub(crate) enabled: bool,
    /// Most frames evaluated (the smallest keyed ranks among the frames with a mask and a truth).
    pub(crate) frames: usize,
    /// Occluding square's side in model-view pixels; default 32 × min(width, height) / 224.
    pub(crate) patch: Option<u32>,
    /// Step between patch positions in model-view pixels; default 16 × min(width, height) / 224.
    pub(crate) stride: Option<u32>,
    /// Write each frame's scaled map as `saliency/<n>.png`.
    pub(crate) maps: bool,
}

impl Default for SaliencyConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            frames: 32,
            patch: None,
            stride: None,
            maps: false,
        }
    }
}

/// A `[saliency]` setting out of range; the message names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaliencyConfigError {
    /// No frame to explain.
    #[error("`saliency.frames` must be at least 1")]
    ZeroFrames,
    /// An empty occluding patch or a stride that does not move.
    #[error("`saliency.patch` and `saliency.stride` must be at least 1 pixel")]
    ZeroPatch,
}

impl SaliencyConfig {
    /// Checks the values; the message names the key.
    pub(crate) fn validate(&self) -> Result<(), SaliencyConfigError> {
        if self.frames == 0 {
            return Err(SaliencyConfigError::ZeroFrames);
        }
        if self.patch == Some(0) || self.stride == Some(0) {
            return Err(SaliencyConfigError::ZeroPatch);
        }
        Ok(())
    }

    /// Patch side and stride for a view of `width` × `height` pixels (module docs).
    fn geometry(&self, width: u32, height: u32) -> (u32, u32) {
        let side = width.min(height).max(1);
        let scaled = |v: u32| ((f64::from(v) * f64::from(side) / 224.0).round() as u32).max(1);
        let patch = self.patch.unwrap_or_else(|| scaled(32)).min(side);
        (patch, self.stride.unwrap_or_else(|| scaled(16)))
    }
}

/// Patch offsets along an axis of `size` pixels: `0, stride, 2·stride, …` up to `size − patch`, with
/// `size − patch` added when the steps miss it (so the far edge is covered).
fn positions(size: u32, patch: u32, stride: u32) -> Vec<u32> {
    let last = size.saturating_sub(patch);
    let mut out: Vec<u32> = (0..=last).step_by(stride.max(1) as usize).collect();
    if out.last() != Some(&last) {
        out.push(last);
    }
    out
}

/// The true-class probability of one output row: softmax of logits (max subtracted, f64) or the
/// probabilities as they are, summed over `targets` (model classes mapped to the truth).
fn true_class_probability(row: &[f32], kind: OutputKind, targets: &[usize]) -> f64 {
    let clean = |v: f32| {
        if v.is_finite() {
            f64::from(v)
        } else {
            f64::NEG_INFINITY
        }
    };
    match kind {
        OutputKind::Probabilities => targets.iter().map(|&c| f64::from(row[c])).sum(),
        OutputKind::Logits => {
            let max = row
                .iter()
                .map(|&v| clean(v))
                .fold(f64::NEG_INFINITY, f64::max);
            if !max.is_finite() {
                return 0.0;
            }
            let denom: f64 = row.iter().map(|&v| (clean(v) - max).exp()).sum();
            targets
                .iter()
                .map(|&c| (clean(row[c]) - max).exp())
                .sum::<f64>()
                / denom
        }
    }
}

/// Averages per-position drops into a per-pixel map (`width` × `height`, row-major): each pixel is
/// the mean drop of the patches covering it (0 where none does).
fn occlusion_map(
    width: u32,
    height: u32,
    patch: u32,
    spots: &[(u32, u32)],
    drops: &[f64],
) -> Vec<f32> {
    let (w, h) = (width as usize, height as usize);
    let mut sum = vec![0f64; w * h];
    let mut count = vec![0u32; w * h];
    for (&(x0, y0), &d) in spots.iter().zip(drops) {
        let (x0, y0) = (x0 as usize, y0 as usize);
        let (x1, y1) = ((x0 + patch as usize).min(w), (y0 + patch as usize).min(h));
        for y in y0..y1 {
            let row = y * w;
            for (s, c) in sum[row + x0..row + x1]
                .iter_mut()
                .zip(&mut count[row + x0..row + x1])
            {
                *s += d;
                *c += 1;
            }
        }
    }
    sum.iter()
        .zip(&count)
        .map(|(&s, &c)| {
            if c > 0 {
                (s / f64::from(c)) as f32
            } else {
                0.0
            }
        })
        .collect()
}

/// Writes the normalised gray 0.5 over the patch at (`x0`, `y0`) of a `width` × `height` tensor.
fn fill_patch(
    t: &mut [f32],
    layout: Layout,
    width: u32,
    height: u32,
    spot: (u32, u32),
    patch: u32,
    gray: [f32; 3],
) {
    let (w, h) = (width as usize, height as usize);
    let (x0, y0) = (spot.0 as usize, spot.1 as usize);
    let (x1, y1) = ((x0 + patch as usize).min(w), (y0 + patch as usize).min(h));
    match layout {
        Layout::Nchw => {
            for (c, plane) in t.chunks_exact_mut(w * h).enumerate() {
                for y in y0..y1 {
                    plane[y * w + x0..y * w + x1].fill(gray[c]);
                }
            }
        }
        Layout::Nhwc => {
            for y in y0..y1 {
                for px in t[(y * w + x0) * 3..(y * w + x1) * 3].chunks_exact_mut(3) {
                    px.copy_from_slice(&gray);
                }
            }
        }
    }
}

/// A failure of the saliency pass. Each message is the one line the run reports
/// (`robustream::error_line`), the same as the pass has always said it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SaliencyError {
    /// The engine failed: its own message, as the main pass reports it.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The engine returned another number of values than `images` rows of `classes`.
    #[error("saliency: the engine returned {got} values for {images} images of {classes} classes")]
    OutputLength {
        /// Values returned.
        got: usize,
        /// Images in the engine call.
        images: usize,
        /// The model's classes.
        classes: usize,
    },
    /// An output row cannot be scored ([`crate::engine::check_row`]).
    #[error("saliency: frame {frame} ({}): {message}", spot_text(*spot))]
    Output {
        /// The frame.
        frame: String,
        /// Where the patch was; `None` for the unoccluded frame.
        spot: Option<(u32, u32)>,
        /// What is wrong with the row and what to do.
        message: String,
    },
    /// `saliency.jsonl` could not be created or written (file, line, cause, fix; a line cut short
    /// is cut off again, [`crate::report::lines::LineFile`]).
    #[error("saliency: {0}")]
    Write(#[from] ReportError),
    /// The folder of maps (`saliency/` in the run directory) could not be created.
    #[error("cannot create {}: {source}", path.display())]
    MapsFolder {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A map's pixels do not make an image of the model's view (a bug, not the user's doing).
    #[error("saliency map of {frame} has the wrong size")]
    MapSize {
        /// The frame.
        frame: String,
    },
    /// A map could not be written (no half-written map is left behind). The image error is said
    /// in the message, folded to one line, and held here rather than as the `source()`, so the
    /// line says it once and only once.
    #[error(
        "saliency: cannot write the map of frame `{}` to {}: {}; {}",
        crate::quote::clip(frame),
        crate::quote::clip_path(path),
        crate::source::decode::one_line(&error.to_string()),
        map_fix(error)
    )]
    MapWrite {
        /// The frame.
        frame: String,
        /// The map's file.
        path: PathBuf,
        /// The encoder's or the file's error.
        error: image::ImageError,
    },
}

/// How [`SaliencyError::Output`] names the image whose row failed.
fn spot_text(spot: Option<(u32, u32)>) -> String {
    match spot {
        Some((x, y)) => format!("occluded at ({x}, {y})"),
        None => "unoccluded".to_string(),
    }
}

/// What to do about a map that could not be written: the run directory's fix for a file error.
fn map_fix(error: &image::ImageError) -> &'static str {
    match error {
        image::ImageError::IoError(io) => crate::report::write_fix(io),
        _ => "check the disk that holds the run directory (--out)",
    }
}

/// Runs the pass on `frames` (kept during the main pass) and returns `metrics.saliency`;
/// `no_frames_reason` is what `metrics.saliency.reason` says when `frames` is empty. Per frame:
/// the true-class probabilities with and without each patch ([`Occlusion::probabilities`]), the
/// scaled map ([`Occlusion::scaled_map`]), its alignment with the mask, then the frame's line and
/// map ([`Outputs`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_pass(
    config: &SaliencyConfig,
    batch: usize,
    out: &Path,
    frames: &[Foreground],
    no_frames_reason: &str,
    engine: &mut dyn Engine,
    model: &ModelDesc,
    class_map: &ClassMap,
    stop: &AtomicBool,
    quiet: bool,
) -> Result<SaliencyEntry, SaliencyError> {
    let started = Instant::now();
    let (width, height) = (model.input.width, model.input.height);
    let (patch, stride) = config.geometry(width, height);
    if frames.is_empty() {
        let reason = no_frames_reason;
        // A warning, printed under --quiet too (as the main pass's warnings are).
        eprintln!("warning: saliency: not applicable: {reason}");
        return Ok(SaliencyEntry {
            patch: Some(patch),
            stride: Some(stride),
            ..SaliencyEntry::not_applicable(reason)
        });
    }
    let mut pass = Occlusion::new(model, patch, stride, batch);
    let mut outputs = Outputs::create(out, config.maps)?;
    let mut means = AlignmentMeans::default();
    let mut complete = true;
    let mut last_line = Instant::now();
    for (n, f) in frames.iter().enumerate() {
        let Some(probs) = pass.probabilities(f, engine, class_map, stop)? else {
            complete = false;
            break;
        };
        let map = pass.scaled_map(&probs);
        let mask: Vec<bool> = f.mask.as_raw().iter().map(|&v| v != 0).collect();
        let Some(a) = alignment(&map, &mask) else {
            // Empty mask: skipped (docs/hard-imagenet.md#saliency-alignment); the harvest keeps
            // none.
            continue;
        };
        means.add(&a);
        outputs.line(f, probs[0], &a)?;
        outputs.map(n, f, width, height, &map)?;
        if !quiet && last_line.elapsed().as_secs_f64() >= 1.0 {
            eprintln!(
                "saliency: {}/{} frames, {} inferences",
                n + 1,
                frames.len(),
                pass.inferences
            );
            last_line = Instant::now();
        }
    }
    if !quiet {
        eprintln!(
            "saliency: {} frames, {} inferences, {:.1} s",
            means.frames,
            pass.inferences,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(pass.summary(&means, complete, started))
}

/// The occlusion of one pass, fixed per pass (patch positions, the normalised gray) with the batch
/// buffer every engine call reuses and the count of inferences so far.
struct Occlusion<'a> {
    model: &'a ModelDesc,
    norm: Normalizer,
    patch: u32,
    stride: u32,
    /// Every patch position, row by row ([`positions`] on both axes).
    spots: Vec<(u32, u32)>,
    /// Gray 0.5 in the model's normalisation, per channel.
    gray: [f32; 3],
    /// Values per image.
    len: usize,
    /// Images per engine call (at least 1).
    batch: usize,
    /// `batch` images' worth of input, reused by every engine call.
    input: Vec<f32>,
    inferences: u64,
}

impl<'a> Occlusion<'a> {
    /// The pass over `model`'s view with patches of `patch` pixels every `stride`, `batch` images
    /// per engine call.
    fn new(model: &'a ModelDesc, patch: u32, stride: u32, batch: usize) -> Self {
        let xs = positions(model.input.width, patch, stride);
        let ys = positions(model.input.height, patch, stride);
        let spots: Vec<(u32, u32)> = ys
            .iter()
            .flat_map(|&y| xs.iter().map(move |&x| (x, y)))
            .collect();
        let norm = Normalizer::new(model);
        // Per tensor channel, in the description's channel order and scale.
        let gray = norm.uniform(127.5);
        let len = model.input_len();
        let batch = batch.max(1);
        Self {
            model,
            norm,
            patch,
            stride,
            spots,
            gray,
            len,
            batch,
            input: vec![0f32; batch * len],
            inferences: 0,
        }
    }

    /// The true-class probabilities of frame `f`: unoccluded first, then occluded at each spot in
    /// order, in engine calls of at most `batch` images. `None` when `stop` was raised between two
    /// calls (the pass ends there, incomplete).
    fn probabilities(
        &mut self,
        f: &Foreground,
        engine: &mut dyn Engine,
        class_map: &ClassMap,
        stop: &AtomicBool,
    ) -> Result<Option<Vec<f64>>, SaliencyError> {
        let targets: Vec<usize> = (0..self.model.output.classes)
            .filter(|&c| class_map.map(c) == Some(f.truth))
            .collect();
        let base = self.norm.tensor(&f.image);
        // Job 0 is the unoccluded frame, job k ≥ 1 occludes spots[k − 1].
        let jobs = self.spots.len() + 1;
        let mut probs = Vec::with_capacity(jobs);
        for start in (0..jobs).step_by(self.batch) {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let k = self.batch.min(jobs - start);
            self.fill_batch(&base, start, k);
            let out = engine.infer(&self.input[..k * self.len], k)?;
            self.score_batch(f, start, k, &out, &targets, &mut probs)?;
        }
        Ok(Some(probs))
    }

    /// The spot job `job` occludes: `None` for job 0, the unoccluded frame.
    fn spot(&self, job: usize) -> Option<(u32, u32)> {
        job.checked_sub(1).and_then(|j| self.spots.get(j)).copied()
    }

    /// Writes jobs `start..start + k` into the batch buffer: the frame's tensor `base`, with the
    /// job's patch filled with gray (in parallel, one image per task).
    fn fill_batch(&mut self, base: &[f32], start: usize, k: usize) {
        let (layout, width, height) = (
            self.model.input.layout,
            self.model.input.width,
            self.model.input.height,
        );
        let (spots, patch, gray) = (&self.spots, self.patch, self.gray);
        self.input[..k * self.len]
            .par_chunks_mut(self.len)
            .enumerate()
            .for_each(|(i, slot)| {
                slot.copy_from_slice(base);
                if let Some(&spot) = (start + i).checked_sub(1).and_then(|j| spots.get(j)) {
                    fill_patch(slot, layout, width, height, spot, patch, gray);
                }
            });
    }

    /// Checks the engine's output `out` for jobs `start..start + k` of frame `f` (its size, then
    /// each row, [`crate::engine::check_row`]) and appends each row's true-class probability (of
    /// the model classes `targets`) to `probs`.
    fn score_batch(
        &mut self,
        f: &Foreground,
        start: usize,
        k: usize,
        out: &[f32],
        targets: &[usize],
        probs: &mut Vec<f64>,
    ) -> Result<(), SaliencyError> {
        let (classes, kind) = (self.model.output.classes, self.model.output.kind);
        if out.len() != k * classes {
            return Err(SaliencyError::OutputLength {
                got: out.len(),
                images: k,
                classes,
            });
        }
        self.inferences += k as u64;
        for (i, row) in out.chunks_exact(classes).enumerate() {
            if let Err(e) = crate::engine::check_row(row, kind) {
                return Err(SaliencyError::Output {
                    frame: f.id.clone(),
                    spot: self.spot(start + i),
                    message: e.in_model(&self.model.path),
                });
            }
            probs.push(true_class_probability(row, kind, targets));
        }
        Ok(())
    }

    /// The frame's map from its probabilities (unoccluded first): each spot's drop from the
    /// unoccluded probability averaged per pixel ([`occlusion_map`]), then min–max scaled to
    /// [0, 1] as the alignment wants it.
    fn scaled_map(&self, probs: &[f64]) -> Vec<f32> {
        let p0 = probs[0];
        let drops: Vec<f64> = probs[1..].iter().map(|&q| p0 - q).collect();
        let (width, height) = (self.model.input.width, self.model.input.height);
        let mut map = occlusion_map(width, height, self.patch, &self.spots, &drops);
        min_max_scale(&mut map);
        map
    }

    /// `metrics.saliency` of a pass that ran: the mean alignment over the frames in `means`, the
    /// geometry, the cost, and whether every frame was evaluated (`complete`).
    fn summary(&self, means: &AlignmentMeans, complete: bool, started: Instant) -> SaliencyEntry {
        SaliencyEntry {
            applicable: true,
            reason: None,
            method: Some("occlusion".into()),
            frames: Some(means.frames),
            iou: Some(means.iou()),
            dice: Some(means.dice()),
            delta_density: Some(means.delta_density()),
            patch: Some(self.patch),
            stride: Some(self.stride),
            positions: Some(self.spots.len() as u64),
            inferences: Some(self.inferences),
            complete: Some(complete),
            seconds: Some(round3(started.elapsed().as_secs_f64())),
            extra: serde_json::Map::new(),
        }
    }
}

/// A line of `saliency.jsonl`: one frame's alignment (docs/benchmarks-usage.md#occlusion-saliency).
/// Written by the pass, read back by `robustream merge`; a field a line of an older format lacks
/// reads as its default, and one this robustream does not know is kept in [`SaliencyLine::extra`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SaliencyLine {
    /// The frame's id.
    pub(crate) frame: String,
    /// Its label (dataset class index).
    #[serde(default)]
    pub(crate) truth: usize,
    /// The unoccluded true-class probability.
    #[serde(default)]
    pub(crate) p_true: f64,
    /// [`Alignment::iou`].
    #[serde(default)]
    pub(crate) iou: f64,
    /// [`Alignment::dice`].
    #[serde(default)]
    pub(crate) dice: f64,
    /// [`Alignment::delta_density`].
    #[serde(default)]
    pub(crate) delta_density: Option<f64>,
    /// Fields this robustream does not know (a newer format's), kept in order.
    #[serde(flatten)]
    pub(crate) extra: serde_json::Map<String, serde_json::Value>,
}

/// What the pass writes into the run directory: a line per frame in `saliency.jsonl`, and with
/// `maps` each frame's map in `saliency/`.
struct Outputs {
    jsonl: LineFile,
    maps_dir: Option<PathBuf>,
}

impl Outputs {
    /// Creates `saliency.jsonl` in the run directory `out` and, with `maps`, the folder of maps:
    /// before the first inference, so a run directory that cannot take them fails the pass at once.
    fn create(out: &Path, maps: bool) -> Result<Self, SaliencyError> {
        let jsonl = LineFile::create(&out.join(SALIENCY_JSONL))?;
        let maps_dir: Option<PathBuf> = maps.then(|| out.join("saliency"));
        if let Some(d) = &maps_dir {
            std::fs::create_dir_all(d).map_err(|source| SaliencyError::MapsFolder {
                path: d.clone(),
                source,
            })?;
        }
        Ok(Self { jsonl, maps_dir })
    }

    /// Appends frame `f`'s line: its truth, its unoccluded true-class probability `p0` and its
    /// alignment `a`.
    fn line(&mut self, f: &Foreground, p0: f64, a: &Alignment) -> Result<(), SaliencyError> {
        let line = SaliencyLine {
            frame: f.id.clone(),
            truth: f.truth,
            p_true: p0,
            iou: a.iou,
            dice: a.dice,
            delta_density: a.delta_density,
            extra: serde_json::Map::new(),
        };
        self.jsonl.append(&to_value(&line).to_string(), || {
            format!("the line of frame `{}`", crate::quote::clip(&f.id))
        })?;
        Ok(())
    }

    /// Writes the scaled `map` (`width` × `height`) of frame `f`, the pass's `n`-th, as the 8-bit
    /// gray `saliency/<n>.png` when maps are asked for; one that cannot be written is removed, not
    /// left half-written.
    fn map(
        &self,
        n: usize,
        f: &Foreground,
        width: u32,
        height: u32,
        map: &[f32],
    ) -> Result<(), SaliencyError> {
        let Some(d) = &self.maps_dir else {
            return Ok(());
        };
        let px: Vec<u8> = map.iter().map(|&v| (v * 255.0).round() as u8).collect();
        let path = d.join(format!("{n}.png"));
        let image = image::GrayImage::from_raw(width, height, px).ok_or_else(|| {
            SaliencyError::MapSize {
                frame: f.id.clone(),
            }
        })?;
        image.save(&path).map_err(|error| {
            // No half-written map is left behind.
            let _ = std::fs::remove_file(&path);
            SaliencyError::MapWrite {
                frame: f.id.clone(),
                path: path.clone(),
                error,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_cover_both_edges() {
        assert_eq!(positions(224, 32, 16).len(), 13);
        assert_eq!(positions(224, 32, 16).last(), Some(&192));
        assert_eq!(positions(100, 32, 30), vec![0, 30, 60, 68]);
        assert_eq!(positions(20, 32, 16), vec![0]);
    }

    #[test]
    fn default_geometry_scales_with_the_view() {
        let c = SaliencyConfig::default();
        assert_eq!(c.geometry(224, 224), (32, 16));
        assert_eq!(c.geometry(448, 300), (43, 21));
        let c = SaliencyConfig {
            patch: Some(500),
            stride: Some(7),
            ..Default::default()
        };
        assert_eq!(c.geometry(224, 224), (224, 7));
    }

    #[test]
    fn true_class_probability_sums_mapped_softmax() {
        let row = [0.0f32, 1.0, 2.0];
        let e: Vec<f64> = row.iter().map(|&v| f64::from(v).exp()).collect();
        let s: f64 = e.iter().sum();
        let p = true_class_probability(&row, OutputKind::Logits, &[0, 2]);
        assert!((p - (e[0] + e[2]) / s).abs() < 1e-12);
        assert_eq!(
            true_class_probability(&[0.2, 0.7, 0.1], OutputKind::Probabilities, &[1]),
            f64::from(0.7f32)
        );
        assert_eq!(true_class_probability(&row, OutputKind::Logits, &[]), 0.0);
    }

    #[test]
    fn occlusion_map_averages_overlapping_patches() {
        // 4×1 view, patches of 2 at x = 0, 1, 2 with drops 1, 2, 3.
        let m = occlusion_map(4, 1, 2, &[(0, 0), (1, 0), (2, 0)], &[1.0, 2.0, 3.0]);
        assert_eq!(m, vec![1.0, 1.5, 2.5, 3.0]);
    }

    #[test]
    fn fill_patch_writes_gray_in_both_layouts() {
        let g = [7.0, 8.0, 9.0];
        let mut t = vec![0f32; 3 * 4 * 3];
        fill_patch(&mut t, Layout::Nchw, 4, 3, (1, 1), 2, g);
        // Plane 0, rows 1..3, cols 1..3.
        assert_eq!(&t[4..8], &[0.0, 7.0, 7.0, 0.0]);
        assert_eq!(&t[8..12], &[0.0, 7.0, 7.0, 0.0]);
        assert_eq!(&t[12 + 4..12 + 8], &[0.0, 8.0, 8.0, 0.0]);
        assert_eq!(t.iter().filter(|&&v| v != 0.0).count(), 12);
        let mut t = vec![0f32; 3 * 4 * 3];
        fill_patch(&mut t, Layout::Nhwc, 4, 3, (3, 2), 2, g);
        assert_eq!(&t[(2 * 4 + 3) * 3..], &g);
        assert_eq!(t.iter().filter(|&&v| v != 0.0).count(), 3);
    }

    #[test]
    fn output_folders_that_cannot_be_made_fail_with_their_kind() {
        let d = tempfile::tempdir().unwrap();
        let maps = d.path().join("saliency");
        std::fs::write(&maps, b"a file where the maps folder goes").unwrap();
        let e = Outputs::create(d.path(), true).err().unwrap();
        assert!(
            matches!(&e, SaliencyError::MapsFolder { path, .. } if *path == maps),
            "{e}"
        );
        let line = crate::error_line(&e);
        assert!(
            line.starts_with(&format!("cannot create {}: ", maps.display())),
            "{line}"
        );
        // Without maps the folder is not made; a run directory that is not there fails the lines.
        assert!(Outputs::create(d.path(), false).is_ok());
        let e = Outputs::create(&d.path().join("missing"), false)
            .err()
            .unwrap();
        assert!(
            matches!(
                e,
                SaliencyError::Write(ReportError::Io {
                    action: "create",
                    ..
                })
            ),
            "{e}"
        );
        assert!(e.to_string().starts_with("saliency: cannot create "), "{e}");
        let e = SaliencyError::Output {
            frame: "f".into(),
            spot: Some((16, 32)),
            message: "NaN".into(),
        };
        assert_eq!(
            e.to_string(),
            "saliency: frame f (occluded at (16, 32)): NaN"
        );
    }
}
