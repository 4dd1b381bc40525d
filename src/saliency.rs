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
//! Frames: a seeded reservoir of at most `frames` frames with a mask and a truth, kept during the
//! main pass at the model's view ([`crate::challenge::Harvest`]). **Cost**: 1 + positions²
//! inferences per frame (170 at 224² with the defaults, batched at `[pipeline] max_batch`), reported
//! as `inferences` and `seconds` in `metrics.saliency`. Per-frame lines go to `saliency.jsonl`, and
//! with `maps = true` (`--saliency-maps`) the scaled maps to `saliency/<n>.png` (8-bit gray).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use serde::Deserialize;
use serde_json::json;

use crate::challenge::{Foreground, round3};
use crate::classmap::ClassMap;
use crate::engine::Engine;
use crate::metrics::saliency::{AlignmentMeans, alignment, min_max_scale};
use crate::model::ModelDesc;
use crate::model::{Layout, OutputKind};
use crate::preprocess::Normalizer;
use crate::view::MaskResize;

/// How the pass brings a frame's mask to the model's view: Hard ImageNet's rule (bilinear, then
/// non-zero → object, docs/hard-imagenet.md#data-and-preprocessing), since its
/// `saliency_analysis.py` reads the masks through the Hard ImageNet dataset's transform
/// (docs/hard-imagenet.md#saliency-alignment).
pub const MASK_RESIZE: MaskResize = MaskResize::BilinearNonZero;

/// The file of per-frame saliency lines in the run directory.
pub const SALIENCY_JSONL: &str = "saliency.jsonl";

/// `[saliency]` of a run config (CLI `--saliency`, `--saliency-maps`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SaliencyConfig {
    /// Run the occlusion saliency pass after the main pass.
    pub enabled: bool,
    /// Most frames evaluated (seeded reservoir over the frames with a mask and a truth).
    pub frames: usize,
    /// Occluding square's side in model-view pixels; default 32 × min(width, height) / 224.
    pub patch: Option<u32>,
    /// Step between patch positions in model-view pixels; default 16 × min(width, height) / 224.
    pub stride: Option<u32>,
    /// Write each frame's scaled map as `saliency/<n>.png`.
    pub maps: bool,
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
    pub fn validate(&self) -> Result<(), SaliencyConfigError> {
        if self.frames == 0 {
            return Err(SaliencyConfigError::ZeroFrames);
        }
        if self.patch == Some(0) || self.stride == Some(0) {
            return Err(SaliencyConfigError::ZeroPatch);
        }
        Ok(())
    }

    /// Patch side and stride for a view of `width` × `height` pixels (module docs).
    pub fn geometry(&self, width: u32, height: u32) -> (u32, u32) {
        let side = width.min(height).max(1);
        let scaled = |v: u32| ((f64::from(v) * f64::from(side) / 224.0).round() as u32).max(1);
        let patch = self.patch.unwrap_or_else(|| scaled(32)).min(side);
        (patch, self.stride.unwrap_or_else(|| scaled(16)))
    }
}

/// Patch offsets along an axis of `size` pixels: `0, stride, 2·stride, …` up to `size − patch`, with
/// `size − patch` added when the steps miss it (so the far edge is covered).
pub fn positions(size: u32, patch: u32, stride: u32) -> Vec<u32> {
    let last = size.saturating_sub(patch);
    let mut out: Vec<u32> = (0..=last).step_by(stride.max(1) as usize).collect();
    if out.last() != Some(&last) {
        out.push(last);
    }
    out
}

/// The true-class probability of one output row: softmax of logits (max subtracted, f64) or the
/// probabilities as they are, summed over `targets` (model classes mapped to the truth).
pub fn true_class_probability(row: &[f32], kind: OutputKind, targets: &[usize]) -> f64 {
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
pub fn occlusion_map(
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

/// Runs the pass on `frames` (kept during the main pass) and returns `metrics.saliency`;
/// `no_frames_reason` is what `metrics.saliency.reason` says when `frames` is empty.
#[allow(clippy::too_many_arguments)]
pub fn run_pass(
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
) -> anyhow::Result<serde_json::Value> {
    let started = Instant::now();
    let (width, height) = (model.input.width, model.input.height);
    let (patch, stride) = config.geometry(width, height);
    if frames.is_empty() {
        let reason = no_frames_reason;
        // A warning, printed under --quiet too (as the main pass's warnings are).
        eprintln!("warning: saliency: not applicable: {reason}");
        return Ok(
            json!({"applicable": false, "reason": reason, "patch": patch, "stride": stride}),
        );
    }
    let xs = positions(width, patch, stride);
    let ys = positions(height, patch, stride);
    let spots: Vec<(u32, u32)> = ys
        .iter()
        .flat_map(|&y| xs.iter().map(move |&x| (x, y)))
        .collect();
    let norm = Normalizer::new(model);
    let p = &model.preprocess;
    let gray: [f32; 3] = std::array::from_fn(|c| (127.5 - p.mean[c]) / p.std[c]);
    let len = model.input_len();
    let classes = model.output.classes;
    let batch = batch.max(1);
    let mut input = vec![0f32; batch * len];
    let jsonl_path = out.join(SALIENCY_JSONL);
    let mut jsonl = crate::report::lines::LineFile::create(&jsonl_path)
        .map_err(|e| anyhow::anyhow!("saliency: {e}"))?;
    let maps_dir: Option<PathBuf> = config.maps.then(|| out.join("saliency"));
    if let Some(d) = &maps_dir {
        std::fs::create_dir_all(d)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", d.display()))?;
    }
    let mut means = AlignmentMeans::default();
    let mut inferences = 0u64;
    let mut complete = true;
    let mut last_line = Instant::now();
    'frames: for (n, f) in frames.iter().enumerate() {
        let targets: Vec<usize> = (0..classes)
            .filter(|&c| class_map.map(c) == Some(f.truth))
            .collect();
        let base = norm.tensor(&f.image);
        // Job 0 is the unoccluded frame, job k ≥ 1 occludes spots[k − 1].
        let jobs = spots.len() + 1;
        let mut probs = Vec::with_capacity(jobs);
        for start in (0..jobs).step_by(batch) {
            if stop.load(Ordering::Relaxed) {
                complete = false;
                break 'frames;
            }
            let k = batch.min(jobs - start);
            input[..k * len]
                .par_chunks_mut(len)
                .enumerate()
                .for_each(|(i, slot)| {
                    slot.copy_from_slice(&base);
                    if let Some(&spot) = (start + i).checked_sub(1).and_then(|j| spots.get(j)) {
                        fill_patch(slot, model.input.layout, width, height, spot, patch, gray);
                    }
                });
            let out = engine.infer(&input[..k * len], k)?;
            anyhow::ensure!(
                out.len() == k * classes,
                "saliency: the engine returned {} values for {k} images of {classes} classes",
                out.len()
            );
            inferences += k as u64;
            for (i, row) in out.chunks_exact(classes).enumerate() {
                if let Err(e) = crate::engine::check_row(row, model.output.kind) {
                    let what = match (start + i).checked_sub(1).and_then(|j| spots.get(j)) {
                        Some((x, y)) => format!("occluded at ({x}, {y})"),
                        None => "unoccluded".to_string(),
                    };
                    anyhow::bail!(
                        "saliency: frame {} ({what}): {}",
                        f.id,
                        e.in_model(&model.path)
                    );
                }
                probs.push(true_class_probability(row, model.output.kind, &targets));
            }
        }
        let p0 = probs[0];
        let drops: Vec<f64> = probs[1..].iter().map(|&q| p0 - q).collect();
        let mut map = occlusion_map(width, height, patch, &spots, &drops);
        min_max_scale(&mut map);
        let mask: Vec<bool> = f.mask.as_raw().iter().map(|&v| v != 0).collect();
        let Some(a) = alignment(&map, &mask) else {
            // Empty mask: skipped (docs/hard-imagenet.md#saliency-alignment); the harvest keeps
            // none.
            continue;
        };
        means.add(&a);
        let line = json!({
            "frame": f.id, "truth": f.truth, "p_true": p0,
            "iou": a.iou, "dice": a.dice, "delta_density": a.delta_density,
        });
        jsonl
            .append(&line.to_string(), || {
                format!("the line of frame `{}`", crate::quote::clip(&f.id))
            })
            .map_err(|e| anyhow::anyhow!("saliency: {e}"))?;
        if let Some(d) = &maps_dir {
            let px: Vec<u8> = map.iter().map(|&v| (v * 255.0).round() as u8).collect();
            let path = d.join(format!("{n}.png"));
            image::GrayImage::from_raw(width, height, px)
                .ok_or_else(|| anyhow::anyhow!("saliency map of {} has the wrong size", f.id))?
                .save(&path)
                .map_err(|e| {
                    // No half-written map is left behind.
                    let _ = std::fs::remove_file(&path);
                    let fix = match &e {
                        image::ImageError::IoError(io) => crate::report::write_fix(io),
                        _ => "check the disk that holds the run directory (--out)",
                    };
                    anyhow::anyhow!(
                        "saliency: cannot write the map of frame `{}` to {}: {}; {fix}",
                        crate::quote::clip(&f.id),
                        crate::quote::clip_path(&path),
                        crate::source::decode::one_line(&e.to_string())
                    )
                })?;
        }
        if !quiet && last_line.elapsed().as_secs_f64() >= 1.0 {
            eprintln!(
                "saliency: {}/{} frames, {inferences} inferences",
                n + 1,
                frames.len()
            );
            last_line = Instant::now();
        }
    }
    if !quiet {
        eprintln!(
            "saliency: {} frames, {inferences} inferences, {:.1} s",
            means.frames,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(json!({
        "applicable": true,
        "method": "occlusion",
        "frames": means.frames,
        "iou": means.iou(),
        "dice": means.dice(),
        "delta_density": means.delta_density(),
        "patch": patch,
        "stride": stride,
        "positions": spots.len(),
        "inferences": inferences,
        "complete": complete,
        "seconds": round3(started.elapsed().as_secs_f64()),
    }))
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
}
