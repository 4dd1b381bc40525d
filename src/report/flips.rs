//! The frames whose prediction flipped most, kept with a thumbnail for the HTML report
//! (`flips.json` in the run directory).
//!
//! A frame's **flips** are its non-clean variants whose model top-1 differs from the clean
//! variant's (the per-frame count behind the `agreement` column: agreement = 1 − flips / variants
//! summed over frames). The run keeps the [`KEEP`] frames with the most flips, earlier frames first
//! on ties, so the choice depends only on the records in source order, not on threads.
//!
//! **How.** A worker offers every frame's image at the scenario stage (the model's view by
//! default) as it prepares the frame: [`FlipKeeper::offer`] shrinks it to a thumbnail of at most
//! [`THUMB_SIDE`] pixels a side and holds it until the frame's records arrive. The run's collector,
//! which sees complete frames in source order, calls [`FlipKeeper::settle`]: the thumbnail is then
//! dropped, or kept (JPEG-encoded) when the frame enters the top [`KEEP`]. Held thumbnails are bounded
//! by the frames in flight ([`PENDING_MAX`] at most; the oldest go first). Stored variants (a
//! released ImageNet-C read as files) are not offered: their frames have no clean sibling.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Mutex;

use base64::Engine as _;
use image::RgbImage;
use serde::{Deserialize, Serialize};

use super::ReportError;
use crate::key::CLEAN;
use crate::metrics::Record;

/// File name of the kept frames in a run directory.
pub const FLIPS_JSON: &str = "flips.json";
/// How many frames are kept.
pub const KEEP: usize = 12;
/// The longer side of a thumbnail, pixels.
pub const THUMB_SIDE: u32 = 112;
/// At most this many thumbnails wait for their frame's records.
pub const PENDING_MAX: usize = 1024;
/// At most this many flipped variants are listed per frame (in plan order).
pub const LISTED: usize = 8;

/// A model prediction as shown: class name and probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Guess {
    /// The model's top-1 class name (its label file's line; `#<index>` without one).
    pub label: String,
    /// Its probability.
    pub prob: f32,
}

/// One flipped variant of a kept frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flipped {
    /// The scenario key.
    pub scenario: String,
    /// What the model said under it.
    pub guess: Guess,
    /// Whether that is the truth (`null` without a truth).
    pub correct: Option<bool>,
}

/// One kept frame (an element of `flips.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlipFrame {
    /// Frame id.
    pub frame: String,
    /// Variants whose top-1 differs from clean's.
    pub flips: usize,
    /// Non-clean variants of the frame.
    pub variants: usize,
    /// The truth's name in the dataset label space, when labelled.
    pub truth: Option<String>,
    /// The clean prediction.
    pub clean: Guess,
    /// Whether the clean prediction is the truth (`null` without a truth).
    pub clean_correct: Option<bool>,
    /// The first [`LISTED`] flipped variants, in plan order.
    pub flipped: Vec<Flipped>,
    /// The thumbnail as a `data:image/jpeg;base64,…` URI.
    pub thumbnail: String,
}

/// Keeps the most-flipped frames of a run (see the module docs).
pub struct FlipKeeper {
    inner: Mutex<Inner>,
    model_names: Vec<String>,
    truth_names: Vec<String>,
}

#[derive(Default)]
struct Inner {
    pending: HashMap<String, RgbImage>,
    order: VecDeque<String>,
    /// Kept frames, most flips first, then in source order.
    kept: Vec<FlipFrame>,
}

impl FlipKeeper {
    /// A keeper naming model classes by `model_names` and truths by `truth_names` (the dataset
    /// label space the records' `truth` indexes).
    pub fn new(model_names: Vec<String>, truth_names: Vec<String>) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            model_names,
            truth_names,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere while holding the lock leaves plain data, still consistent enough to
        // show.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Holds a thumbnail of frame `id`'s `image` until [`FlipKeeper::settle`] sees its records.
    pub fn offer(&self, id: &str, image: &RgbImage) {
        let (w, h) = image.dimensions();
        if w == 0 || h == 0 {
            return;
        }
        let scale = f64::from(THUMB_SIDE) / f64::from(w.max(h));
        let (tw, th) = if scale < 1.0 {
            let side = |v: u32| ((f64::from(v) * scale).round() as u32).max(1);
            (side(w), side(h))
        } else {
            (w, h)
        };
        let thumb = if (tw, th) == (w, h) {
            image.clone()
        } else {
            image::imageops::thumbnail(image, tw, th)
        };
        let mut inner = self.lock();
        if inner.pending.insert(id.to_string(), thumb).is_none() {
            inner.order.push_back(id.to_string());
        }
        while inner.pending.len() > PENDING_MAX {
            match inner.order.pop_front() {
                Some(old) => {
                    inner.pending.remove(&old);
                }
                None => break,
            }
        }
    }

    /// Takes one complete frame's records (in source order): its thumbnail is kept when the frame
    /// is among the most flipped so far, else dropped.
    pub fn settle(&self, records: &[Record]) {
        let Some(first) = records.first() else {
            return;
        };
        let mut inner = self.lock();
        let Some(thumb) = inner.pending.remove(&first.frame) else {
            return;
        };
        if let Some(i) = inner.order.iter().position(|id| *id == first.frame) {
            inner.order.remove(i);
        }
        let Some(clean) = records.iter().find(|r| r.scenario == CLEAN) else {
            return;
        };
        let variants: Vec<&Record> = records.iter().filter(|r| r.scenario != CLEAN).collect();
        let flipped: Vec<&Record> = variants
            .iter()
            .copied()
            .filter(|r| r.model_top1() != clean.model_top1())
            .collect();
        let flips = flipped.len();
        let enters = flips > 0
            && (inner.kept.len() < KEEP || inner.kept.last().is_some_and(|k| k.flips < flips));
        if !enters {
            return;
        }
        let Some(thumbnail) = jpeg_uri(&thumb) else {
            return;
        };
        let frame = FlipFrame {
            frame: first.frame.clone(),
            flips,
            variants: variants.len(),
            truth: clean.truth.map(|t| self.truth_name(t)),
            clean: self.guess(clean),
            clean_correct: clean.top1_correct(),
            flipped: flipped
                .iter()
                .take(LISTED)
                .map(|r| Flipped {
                    scenario: r.scenario.clone(),
                    guess: self.guess(r),
                    correct: r.top1_correct(),
                })
                .collect(),
            thumbnail,
        };
        // After every frame with as many flips: earlier frames win ties.
        let at = inner.kept.partition_point(|k| k.flips >= flips);
        inner.kept.insert(at, frame);
        inner.kept.truncate(KEEP);
    }

    /// The kept frames, most flips first.
    pub fn kept(&self) -> Vec<FlipFrame> {
        self.lock().kept.clone()
    }

    /// Writes the kept frames to `flips.json` in `dir` (replacing it whole).
    pub fn write(&self, dir: &Path) -> Result<(), ReportError> {
        let kept = self.kept();
        // Plain strings and numbers: serialising cannot fail.
        let json = serde_json::to_string(&kept).unwrap_or_else(|_| "[]".into());
        super::write_atomic(&dir.join(FLIPS_JSON), json.as_bytes())
    }

    fn guess(&self, r: &Record) -> Guess {
        let top = r.model_top1();
        Guess {
            label: top.map_or_else(
                || "(none)".into(),
                |i| {
                    self.model_names
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| format!("#{i}"))
                },
            ),
            prob: r.prob.first().copied().unwrap_or(f32::NAN),
        }
    }

    fn truth_name(&self, t: usize) -> String {
        self.truth_names
            .get(t)
            .cloned()
            .unwrap_or_else(|| format!("#{t}"))
    }
}

/// JPEG quality of the thumbnails: a 112² photo is a few kB (PNG would be ten times that).
const THUMB_QUALITY: u8 = 85;

/// `image` as a JPEG data URI; `None` if encoding fails (it does not for an in-memory RGB image).
fn jpeg_uri(image: &RgbImage) -> Option<String> {
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, THUMB_QUALITY)
        .encode_image(image)
        .ok()?;
    Some(format!(
        "data:image/jpeg;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&jpeg)
    ))
}

/// Reads `flips.json` from a run directory: no file is no kept frames; a file that does not parse
/// is an error naming it.
pub fn read(dir: &Path) -> Result<Vec<FlipFrame>, ReportError> {
    let path = dir.join(FLIPS_JSON);
    let text = match crate::fsread::read_text_io(&path, 64 << 20) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ReportError::io("read", &path)(e)),
    };
    serde_json::from_str(&text).map_err(|source| ReportError::MalformedFlips { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::rec;

    fn keeper() -> FlipKeeper {
        FlipKeeper::new(
            (0..10).map(|i| format!("class{i}")).collect(),
            (0..10).map(|i| format!("truth{i}")).collect(),
        )
    }

    /// A frame whose clean top-1 is 1 and `flips` of its four variants say 2.
    fn frame(id: &str, flips: usize) -> Vec<Record> {
        let mut v = vec![rec(id, "clean", Some(1), &[1])];
        for i in 0..4 {
            let top = if i < flips { 2 } else { 1 };
            v.push(rec(
                id,
                &format!("corruption/fog/{}", i + 1),
                Some(1),
                &[top],
            ));
        }
        v
    }

    #[test]
    fn keeps_the_most_flipped_frames_earlier_first_on_ties() {
        let k = keeper();
        let img = RgbImage::from_pixel(224, 160, image::Rgb([10, 20, 30]));
        let flips = [1, 3, 0, 3, 2, 4];
        for i in 0..flips.len() {
            k.offer(&format!("f{i}"), &img);
        }
        for (i, &f) in flips.iter().enumerate() {
            k.settle(&frame(&format!("f{i}"), f));
        }
        let kept = k.kept();
        let order: Vec<(&str, usize)> = kept.iter().map(|f| (f.frame.as_str(), f.flips)).collect();
        assert_eq!(
            order,
            [("f5", 4), ("f1", 3), ("f3", 3), ("f4", 2), ("f0", 1)]
        );
        let top = &kept[0];
        assert_eq!((top.variants, top.flipped.len()), (4, 4));
        assert_eq!(top.truth.as_deref(), Some("truth1"));
        assert_eq!(top.clean.label, "class1");
        assert_eq!(top.flipped[0].guess.label, "class2");
        assert_eq!(top.flipped[0].correct, Some(false));
        let prefix = "data:image/jpeg;base64,";
        assert!(top.thumbnail.starts_with(prefix));
        // The thumbnail keeps the aspect ratio within THUMB_SIDE.
        let jpeg = base64::engine::general_purpose::STANDARD
            .decode(&top.thumbnail[prefix.len()..])
            .unwrap();
        let thumb = image::load_from_memory(&jpeg).unwrap();
        assert_eq!((thumb.width(), thumb.height()), (112, 80));
        // Everything settled: nothing waits.
        assert!(k.lock().pending.is_empty() && k.lock().order.is_empty());
    }

    #[test]
    fn keeps_at_most_keep_and_holds_at_most_pending_max() {
        let k = keeper();
        let img = RgbImage::new(4, 4);
        for i in 0..(PENDING_MAX + 10) {
            k.offer(&format!("p{i}"), &img);
        }
        assert_eq!(k.lock().pending.len(), PENDING_MAX);
        // The oldest went first.
        assert!(!k.lock().pending.contains_key("p0"));
        for i in 10..(10 + KEEP + 5) {
            k.settle(&frame(&format!("p{i}"), 1 + i % 4));
        }
        let kept = k.kept();
        assert_eq!(kept.len(), KEEP);
        assert!(kept.windows(2).all(|w| w[0].flips >= w[1].flips));
    }

    #[test]
    fn writes_and_reads_flips_json() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_empty());
        let k = keeper();
        k.offer("a", &RgbImage::new(8, 8));
        k.settle(&frame("a", 2));
        k.write(dir.path()).unwrap();
        assert_eq!(read(dir.path()).unwrap(), k.kept());
        std::fs::write(dir.path().join(FLIPS_JSON), "[{").unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("flips.json") && e.contains("not a valid"), "{e}");
    }
}
