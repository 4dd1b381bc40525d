//! Masks on a fixed camera from a learned background plate: the background scenarios need
//! a foreground mask per frame, and a line camera that watches one scene can make its own.
//!
//! **Learning.** The first `frames` frames (default 30) are kept and the plate is their per-pixel,
//! per-channel median — robust to objects passing through, as long as each pixel shows the empty
//! scene in more than half of them. The pixel's noise level is the median absolute deviation (MAD)
//! of its max-channel differences to the plate over those frames.
//!
//! **Foreground.** A later pixel is foreground when its largest channel difference to the plate
//! exceeds `max(min_diff, k · 1.4826 · MAD)` (1.4826 · MAD estimates σ for Gaussian noise; default
//! k = 4, min_diff = 25 levels). The raw mask is cleaned by a 3×3 opening (removes isolated pixels)
//! and a 3×3 closing (fills pinholes), then given to the frame as a 0/255 mask (boxes follow from it
//! downstream). A frame with no foreground pixel gets no mask (mask scenarios skip it).
//!
//! Frames seen while learning are passed on without a mask. The plate is learned again when
//! [`PlateSource::relearn`] is called or when the file `relearn_file` appears (it is then removed):
//! `touch relearn` from a shell re-learns the empty scene after the camera moved or the light changed.
//! A frame of another size than the plate restarts learning at that size.

use std::path::PathBuf;

use image::{GrayImage, RgbImage};

use super::{Source, SourceError};
use crate::frame::{Frame, Regions};

/// `[source.plate]`: how the background plate is learned and applied.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlateConfig {
    /// Frames the plate is learned from (1..=255).
    pub(crate) frames: usize,
    /// Noise multiplier k of the threshold.
    pub(crate) k: f32,
    /// Smallest difference (0..255 levels) that counts as foreground.
    pub(crate) min_diff: u8,
    /// A file whose appearance triggers re-learning (relative to the working directory).
    pub(crate) relearn_file: Option<PathBuf>,
}

impl Default for PlateConfig {
    fn default() -> Self {
        Self {
            frames: 30,
            k: 4.0,
            min_diff: 25,
            relearn_file: None,
        }
    }
}

impl PlateConfig {
    /// Checks the ranges; the message names the key.
    pub(crate) fn check(&self) -> Result<(), PlateConfigError> {
        if !(1..=255).contains(&self.frames) {
            return Err(PlateConfigError::OutOfRange {
                key: "frames",
                value: self.frames.to_string(),
                must: "be in 1..=255",
            });
        }
        if !(self.k.is_finite() && self.k >= 0.0) {
            return Err(PlateConfigError::OutOfRange {
                key: "k",
                value: self.k.to_string(),
                must: "be a number ≥ 0",
            });
        }
        Ok(())
    }
}

/// A `[source.plate]` setting out of range. Display = the message, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PlateConfigError {
    /// `key = value` outside its range.
    #[error("[source.plate] {key} = {value} must {must}")]
    OutOfRange {
        /// The key ("frames", "k").
        key: &'static str,
        /// The value as written back.
        value: String,
        /// The rule it breaks ("be in 1..=255").
        must: &'static str,
    },
}

/// A learned plate: the empty scene and each pixel's threshold.
#[derive(Debug, Clone)]
struct Plate {
    /// The per-pixel median of the learning frames.
    pub(crate) image: RgbImage,
    /// Per-pixel foreground threshold on the max-channel difference.
    pub(crate) threshold: GrayImage,
}

/// Learns a plate from `frames` (all the same size, at least one).
fn learn(frames: &[RgbImage], k: f32, min_diff: u8) -> Plate {
    let (w, h) = frames[0].dimensions();
    let n = frames.len();
    let mut image = RgbImage::new(w, h);
    let mut threshold = GrayImage::new(w, h);
    let mut column = vec![0u8; n];
    let mut diffs = vec![0u8; n];
    let raws: Vec<&[u8]> = frames.iter().map(|f| f.as_raw().as_slice()).collect();
    let plate = image.as_mut();
    for i in 0..plate.len() {
        for (c, raw) in column.iter_mut().zip(&raws) {
            *c = raw[i];
        }
        plate[i] = median(&mut column);
    }
    for (p, t) in threshold.iter_mut().enumerate() {
        for (d, raw) in diffs.iter_mut().zip(&raws) {
            *d = max_channel_diff(&raw[p * 3..p * 3 + 3], &plate[p * 3..p * 3 + 3]);
        }
        let mad = f32::from(median(&mut diffs));
        *t = (k * 1.4826 * mad).round().clamp(f32::from(min_diff), 255.0) as u8;
    }
    Plate { image, threshold }
}

/// The upper median of `v` (sorted in place).
fn median(v: &mut [u8]) -> u8 {
    v.sort_unstable();
    v[v.len() / 2]
}

#[inline]
fn max_channel_diff(a: &[u8], b: &[u8]) -> u8 {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.abs_diff(*y))
        .max()
        .unwrap_or(0)
}

/// The cleaned foreground mask (0/255) of `frame` against `plate`.
fn foreground(plate: &Plate, frame: &RgbImage) -> GrayImage {
    let (w, h) = frame.dimensions();
    let mut raw = GrayImage::new(w, h);
    for (((m, px), bg), t) in raw
        .iter_mut()
        .zip(frame.as_raw().chunks_exact(3))
        .zip(plate.image.as_raw().chunks_exact(3))
        .zip(plate.threshold.iter())
    {
        *m = if max_channel_diff(px, bg) > *t {
            255
        } else {
            0
        };
    }
    // Opening then closing, 3×3.
    let opened = dilate(&erode(&raw));
    erode(&dilate(&opened))
}

/// 3×3 min (`is_min`) or max filter, separable, borders replicated.
fn morph(m: &GrayImage, is_min: bool) -> GrayImage {
    let (w, h) = (m.width() as usize, m.height() as usize);
    let pick = |a: u8, b: u8| if is_min { a.min(b) } else { a.max(b) };
    let src = m.as_raw();
    let mut rows = vec![0u8; src.len()];
    for y in 0..h {
        let r = &src[y * w..(y + 1) * w];
        for x in 0..w {
            let l = r[x.saturating_sub(1)];
            let rr = r[(x + 1).min(w - 1)];
            rows[y * w + x] = pick(pick(l, r[x]), rr);
        }
    }
    let mut out = GrayImage::new(m.width(), m.height());
    let dst = out.as_mut();
    for y in 0..h {
        let (up, down) = (y.saturating_sub(1), (y + 1).min(h - 1));
        for x in 0..w {
            dst[y * w + x] = pick(pick(rows[up * w + x], rows[y * w + x]), rows[down * w + x]);
        }
    }
    out
}

fn erode(m: &GrayImage) -> GrayImage {
    morph(m, true)
}

fn dilate(m: &GrayImage) -> GrayImage {
    morph(m, false)
}

/// A source whose frames get masks from a learned plate (see the module docs).
pub(crate) struct PlateSource {
    inner: Box<dyn Source>,
    config: PlateConfig,
    learning: Vec<RgbImage>,
    plate: Option<Plate>,
    relearns: u64,
}

impl PlateSource {
    /// Wraps `inner`.
    pub(crate) fn new(inner: Box<dyn Source>, config: PlateConfig) -> Self {
        Self {
            inner,
            config,
            learning: Vec::new(),
            plate: None,
            relearns: 0,
        }
    }

    /// Forgets the plate: the next `frames` frames learn it again.
    fn relearn(&mut self) {
        self.plate = None;
        self.learning.clear();
        self.relearns += 1;
    }

    /// Whether a plate is learned.
    #[cfg(test)]
    fn has_plate(&self) -> bool {
        self.plate.is_some()
    }

    fn check_trigger(&mut self) {
        let Some(path) = &self.config.relearn_file else {
            return;
        };
        if path.exists() {
            let _ = std::fs::remove_file(path);
            self.relearn();
        }
    }
}

impl Source for PlateSource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        self.check_trigger();
        let mut frame = match self.inner.next_frame()? {
            Ok(f) => f,
            Err(e) => return Some(Err(e)),
        };
        let size = frame.image.dimensions();
        let size_changed = match (&self.plate, self.learning.first()) {
            (Some(p), _) => p.image.dimensions() != size,
            (None, Some(f)) => f.dimensions() != size,
            (None, None) => false,
        };
        if size_changed {
            self.plate = None;
            self.learning.clear();
        }
        match &self.plate {
            None => {
                self.learning.push(frame.image.clone());
                if self.learning.len() >= self.config.frames {
                    self.plate = Some(learn(&self.learning, self.config.k, self.config.min_diff));
                    self.learning.clear();
                }
                // Learned masks replace the source's own; while learning there is none.
                frame.regions = None;
            }
            Some(plate) => {
                let t0 = std::time::Instant::now();
                let mask = foreground(plate, &frame.image);
                frame.regions = mask.iter().any(|&v| v != 0).then(|| Regions {
                    mask: Some(mask),
                    boxes: Vec::new(),
                });
                frame.mask_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
            }
        }
        Some(Ok(frame))
    }

    fn describe(&self) -> String {
        format!(
            "{}, masks from a background plate learned over {} frames",
            self.inner.describe(),
            self.config.frames
        )
    }

    crate::source::forward_to_inner!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::synthetic::{SyntheticConfig, open};
    use crate::source::test_util::{labels, mask_iou};

    /// A fixed camera whose objects cross the scene in a few frames (3 fps: each frame moves them
    /// 2–8 % of the free room), so every pixel shows the empty scene in most learning frames.
    fn camera(frames: u64) -> Box<dyn Source> {
        let c = SyntheticConfig {
            width: 120,
            height: 90,
            fps: 3.0,
            frames: Some(frames),
            objects: 2,
            seed: 3,
            ..SyntheticConfig::default()
        };
        Box::new(open(&c, &labels()).unwrap())
    }

    #[test]
    fn the_plate_finds_the_moving_objects_of_a_fixed_camera() {
        let config = PlateConfig {
            frames: 25,
            ..PlateConfig::default()
        };
        let mut s = PlateSource::new(camera(60), config);
        let mut truth = camera(60);
        let mut ious = Vec::new();
        for n in 0..60 {
            let f = s.next_frame().unwrap().unwrap();
            let t = truth.next_frame().unwrap().unwrap();
            let exact = t.regions.unwrap().mask.unwrap();
            if n < 25 {
                assert!(f.regions.is_none(), "frame {n} is a learning frame");
                continue;
            }
            let mask = f.regions.expect("objects are in every frame").mask.unwrap();
            ious.push(mask_iou(&mask, &exact));
        }
        ious.sort_by(f64::total_cmp);
        // Median IoU against the exact masks; the worst frames are those where an object sits
        // where it sat in most learning frames (slow objects) or on a background of its colour.
        let median = ious[ious.len() / 2];
        assert!(median > 0.9, "median IoU {median}: {ious:?}");
        assert!(s.has_plate());
    }

    #[test]
    fn relearning_on_command_and_on_a_size_change() {
        let dir = tempfile::tempdir().unwrap();
        let trigger = dir.path().join("relearn");
        let config = PlateConfig {
            frames: 3,
            relearn_file: Some(trigger.clone()),
            ..PlateConfig::default()
        };
        let mut s = PlateSource::new(camera(20), config);
        for _ in 0..3 {
            assert!(s.next_frame().unwrap().unwrap().regions.is_none());
        }
        assert!(s.has_plate());
        assert!(s.next_frame().unwrap().unwrap().regions.is_some());
        std::fs::write(&trigger, b"").unwrap();
        assert!(s.next_frame().unwrap().unwrap().regions.is_none());
        assert!(!trigger.exists(), "the trigger is consumed");
        assert_eq!(s.relearns, 1);
        // A static scene: the plate equals it and nothing is foreground.
        let still = RgbImage::from_pixel(12, 10, image::Rgb([40, 90, 140]));
        let plate = learn(&[still.clone(), still.clone(), still.clone()], 4.0, 25);
        assert_eq!(plate.image, still);
        assert!(foreground(&plate, &still).iter().all(|&v| v == 0));
        // A one-pixel speck is removed by the opening; a 4×4 block survives whole.
        let mut f = still.clone();
        f.put_pixel(1, 1, image::Rgb([255, 255, 255]));
        assert!(foreground(&plate, &f).iter().all(|&v| v == 0));
        for y in 2..6 {
            for x in 3..7 {
                f.put_pixel(x, y, image::Rgb([0, 0, 0]));
            }
        }
        let m = foreground(&plate, &f);
        assert_eq!(m.iter().filter(|&&v| v == 255).count(), 16);
        assert_eq!((m.get_pixel(3, 2).0, m.get_pixel(7, 2).0), ([255], [0]));
        assert!(
            PlateConfig {
                frames: 0,
                ..PlateConfig::default()
            }
            .check()
            .is_err()
        );
    }
}
