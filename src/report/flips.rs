//! The frames whose prediction flipped most, kept with a thumbnail for the HTML report
//! (`flips.json` in the run directory).
//!
//! A frame's **flips** are its non-clean variants whose model top-1 differs from the clean
//! variant's (the per-frame count behind the `agreement` column: agreement = 1 − flips / variants
//! summed over frames). The run keeps the [`KEEP`] frames with the most flips, earlier frames first
//! on ties, so the choice depends only on the records in source order, not on threads.
//!
//! **How.** A worker offers every frame's image at the scenario stage (the model's view by
//! default) as it prepares the frame — a shared reference, no copy: [`FlipKeeper::offer`] holds it
//! until the frame's records arrive. The run's collector, which sees complete frames in source
//! order, calls [`FlipKeeper::settle`]: the image is let go, or, when the frame enters the top
//! [`KEEP`], shrunk to a thumbnail of at most [`THUMB_SIDE`] pixels a side and JPEG-encoded. So
//! only frames that enter the kept set cost a thumbnail, on the collector's thread, and the
//! workers pay nothing. Held images are the frames in flight, which the pipeline holds anyway;
//! a frame whose every variant failed is never settled and waits until pushed out by newer ones
//! ([`PENDING_MAX`] frames or [`PENDING_BYTES`] at most, the oldest first). Stored variants (a
//! released ImageNet-C read as files) are not offered: their frames have no clean sibling.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use image::RgbImage;
use serde::{Deserialize, Serialize};

use super::ReportError;
use crate::key::CLEAN;
use crate::metrics::Record;

/// File name of the kept frames in a run directory.
pub(crate) const FLIPS_JSON: &str = "flips.json";
/// How many frames are kept.
const KEEP: usize = 12;
/// The longer side of a thumbnail, pixels.
const THUMB_SIDE: u32 = 112;
/// At most this many offered images wait for their frame's records (frames in flight are far
/// fewer).
const PENDING_MAX: usize = 256;
/// At most this many bytes of offered images wait for their frame's records.
const PENDING_BYTES: usize = 256 << 20;
/// At most this many samples a side are averaged per thumbnail pixel.
const SAMPLES: u32 = 4;
/// round(2¹⁶ / n) for n = 0 (unused) ..= SAMPLES².
const RECIPROCALS: [u32; 17] = {
    let mut t = [0u32; 17];
    let mut n = 1;
    while n < 17 {
        t[n] = ((1u32 << 16) + n as u32 / 2) / n as u32;
        n += 1;
    }
    t
};
/// At most this many flipped variants are listed per frame (in plan order).
const LISTED: usize = 8;

/// A model prediction as shown: class name and probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Guess {
    /// The model's top-1 class name (its label file's line; `#<index>` without one).
    pub(crate) label: String,
    /// Its probability.
    pub(crate) prob: f32,
}

/// One flipped variant of a kept frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Flipped {
    /// The scenario key.
    pub(crate) scenario: String,
    /// What the model said under it.
    pub(crate) guess: Guess,
    /// Whether that is the truth (`null` without a truth).
    pub(crate) correct: Option<bool>,
}

/// One kept frame (an element of `flips.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlipFrame {
    /// Frame id.
    pub(crate) frame: String,
    /// Variants whose top-1 differs from clean's.
    pub(crate) flips: usize,
    /// Non-clean variants of the frame.
    pub(crate) variants: usize,
    /// The truth's name in the dataset label space, when labelled.
    pub(crate) truth: Option<String>,
    /// The clean prediction.
    pub(crate) clean: Guess,
    /// Whether the clean prediction is the truth (`null` without a truth).
    pub(crate) clean_correct: Option<bool>,
    /// The first [`LISTED`] flipped variants, in plan order.
    pub(crate) flipped: Vec<Flipped>,
    /// The thumbnail as a `data:image/jpeg;base64,…` URI.
    pub(crate) thumbnail: String,
}

/// Keeps the most-flipped frames of a run (see the module docs).
pub struct FlipKeeper {
    inner: Mutex<Inner>,
    model_names: Vec<String>,
    truth_names: Vec<String>,
}

#[derive(Default)]
struct Inner {
    pending: HashMap<String, Arc<RgbImage>>,
    /// Bytes of the images in `pending`.
    pending_bytes: usize,
    order: VecDeque<String>,
    /// Kept frames, most flips first, then in source order.
    kept: Vec<FlipFrame>,
}

impl Inner {
    /// Lets go of frame `id`'s image (its place in `order` is the caller's business).
    fn forget(&mut self, id: &str) -> Option<Arc<RgbImage>> {
        let image = self.pending.remove(id)?;
        self.pending_bytes -= image.as_raw().len();
        Some(image)
    }
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

    /// Holds frame `id`'s `image` until [`FlipKeeper::settle`] sees its records.
    pub fn offer(&self, id: &str, image: Arc<RgbImage>) {
        let mut inner = self.lock();
        inner.pending_bytes += image.as_raw().len();
        match inner.pending.insert(id.to_string(), image) {
            Some(old) => inner.pending_bytes -= old.as_raw().len(),
            None => inner.order.push_back(id.to_string()),
        }
        while inner.pending.len() > PENDING_MAX || inner.pending_bytes > PENDING_BYTES {
            let Some(old) = inner.order.pop_front() else {
                break;
            };
            inner.forget(&old);
        }
    }

    /// Takes one complete frame's records (in source order): its thumbnail is kept when the frame
    /// is among the most flipped so far, else dropped.
    pub fn settle(&self, records: &[Record]) {
        let Some(first) = records.first() else {
            return;
        };
        let mut inner = self.lock();
        let Some(image) = inner.forget(&first.frame) else {
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
        let Some(thumbnail) = jpeg_uri(&shrink(&image)) else {
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
    pub(crate) fn kept(&self) -> Vec<FlipFrame> {
        self.lock().kept.clone()
    }

    /// Writes the kept frames to `flips.json` in `dir` (replacing it whole).
    pub(crate) fn write(&self, dir: &Path) -> Result<(), ReportError> {
        write_kept(dir, &self.kept())
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

/// `image` as a thumbnail: at most [`THUMB_SIDE`] a side, the aspect ratio kept.
fn shrink(image: &RgbImage) -> RgbImage {
    let (w, h) = image.dimensions();
    let scale = f64::from(THUMB_SIDE) / f64::from(w.max(h).max(1));
    if scale >= 1.0 {
        return image.clone();
    }
    let side = |v: u32| ((f64::from(v) * scale).round() as u32).max(1);
    thumbnail(image, side(w), side(h))
}

/// `image` shrunk to `tw` × `th`: each pixel the mean of an even grid of up to [`SAMPLES`]²
/// samples over its source box (the whole box when it is that small: an exact 2×2 mean for 224² →
/// 112²). A thumbnail needs no more, and reading a 4K frame whole for one would hold the collector
/// up for milliseconds.
fn thumbnail(image: &RgbImage, tw: u32, th: u32) -> RgbImage {
    let (w, h) = image.dimensions();
    // Sample positions along one axis for output index `t` of `n` over `len` source pixels.
    let grid = |t: u32, n: u32, len: u32| -> ([u32; SAMPLES as usize], u32) {
        let (a, b) = (
            u64::from(t) * u64::from(len) / u64::from(n),
            (u64::from(t) + 1) * u64::from(len) / u64::from(n),
        );
        let span = (b - a).max(1);
        let k = span.min(u64::from(SAMPLES));
        let mut at = [0u32; SAMPLES as usize];
        for (i, p) in at.iter_mut().enumerate().take(k as usize) {
            // The centre of the i-th of k equal parts of the box (every pixel when k = span).
            let offset = (2 * i as u64 + 1) * span / (2 * k);
            *p = (a + offset).min(u64::from(len) - 1) as u32;
        }
        (at, k as u32)
    };
    // Byte offsets of each output column's samples within a row, and of each sample row.
    let cols: Vec<([usize; SAMPLES as usize], usize)> = (0..tw)
        .map(|x| {
            let (at, k) = grid(x, tw, w);
            (at.map(|x| x as usize * 3), k as usize)
        })
        .collect();
    let src = image.as_raw();
    let stride = w as usize * 3;
    let mut out = Vec::with_capacity(tw as usize * th as usize * 3);
    for ty in 0..th {
        let (rows, ky) = grid(ty, th, h);
        let rows = rows.map(|y| y as usize * stride);
        for (xs, kx) in &cols {
            let mut sum = [0u32; 3];
            for &row in &rows[..ky as usize] {
                for &x in &xs[..*kx] {
                    let p = &src[row + x..row + x + 3];
                    sum[0] += u32::from(p[0]);
                    sum[1] += u32::from(p[1]);
                    sum[2] += u32::from(p[2]);
                }
            }
            // s / n, rounded, by a multiply (three divisions a pixel would cost more than the
            // sums): 2¹⁶ / n is exact for the usual n = 4 and 16, and within 0.5 of s / n for
            // every n ≤ 16 and s ≤ 16 × 255.
            let inv = RECIPROCALS[(ky as usize) * *kx];
            out.extend(sum.map(|s| ((s * inv + (1 << 15)) >> 16) as u8));
        }
    }
    // tw × th × 3 bytes were pushed: the buffer fits.
    RgbImage::from_raw(tw, th, out).unwrap_or_else(|| RgbImage::new(tw, th))
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

/// The kept frames of a run split into shards, from the kept frames of each shard (`robustream
/// merge`): every frame of the whole run's top [`KEEP`] is in its own shard's top [`KEEP`], so the
/// whole run's are the [`KEEP`] with the most flips of the union, earlier frames first on ties, as
/// [`FlipKeeper::settle`] chooses them; `position` gives a frame's position in the source (`None`
/// sorts last).
pub(crate) fn merge_kept(
    parts: impl IntoIterator<Item = Vec<FlipFrame>>,
    position: impl Fn(&str) -> Option<u64>,
) -> Vec<FlipFrame> {
    let mut all: Vec<(Option<u64>, FlipFrame)> = parts
        .into_iter()
        .flatten()
        .map(|f| (position(&f.frame), f))
        .collect();
    all.sort_by(|(pa, a), (pb, b)| {
        b.flips
            .cmp(&a.flips)
            .then_with(|| pa.unwrap_or(u64::MAX).cmp(&pb.unwrap_or(u64::MAX)))
    });
    all.dedup_by(|(_, a), (_, b)| a.frame == b.frame);
    all.truncate(KEEP);
    all.into_iter().map(|(_, f)| f).collect()
}

/// Writes `kept` as `flips.json` in `dir` (replacing it whole).
pub(crate) fn write_kept(dir: &Path, kept: &[FlipFrame]) -> Result<(), ReportError> {
    // Plain strings and numbers: serialising cannot fail.
    let json = serde_json::to_string(kept).unwrap_or_else(|_| "[]".into());
    super::write_atomic(&dir.join(FLIPS_JSON), json.as_bytes())
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
    fn the_kept_frames_of_parts_merge_to_the_whole_runs() {
        let img = Arc::new(RgbImage::from_pixel(32, 32, image::Rgb([1, 2, 3])));
        // More frames than KEEP, many ties: the part that holds a frame decides nothing.
        let flips: Vec<usize> = (0..40).map(|i| (i * 7) % 5).collect();
        let fill = |which: &dyn Fn(usize) -> bool| {
            let k = keeper();
            for (i, &f) in flips.iter().enumerate().filter(|(i, _)| which(*i)) {
                k.offer(&format!("f{i}"), img.clone());
                k.settle(&frame(&format!("f{i}"), f));
            }
            k.kept()
        };
        let whole = fill(&|_| true);
        assert_eq!(whole.len(), KEEP);
        let parts = (0..3).map(|p| fill(&|i| (i * 5 + i / 3) % 3 == p));
        let position = |id: &str| id[1..].parse::<u64>().ok();
        assert_eq!(merge_kept(parts, position), whole);
        assert!(merge_kept(Vec::<Vec<FlipFrame>>::new(), position).is_empty());
    }

    #[test]
    fn keeps_the_most_flipped_frames_earlier_first_on_ties() {
        let k = keeper();
        let img = Arc::new(RgbImage::from_pixel(224, 160, image::Rgb([10, 20, 30])));
        let flips = [1, 3, 0, 3, 2, 4];
        for i in 0..flips.len() {
            k.offer(&format!("f{i}"), img.clone());
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
    fn reciprocal_means_round_like_division() {
        for n in 1..=16u32 {
            for s in 0..=(n * 255) {
                let got = (s * RECIPROCALS[n as usize] + (1 << 15)) >> 16;
                let exact = f64::from(s) / f64::from(n);
                assert!(
                    (f64::from(got) - exact).abs() <= 0.5 + 1e-9,
                    "{s}/{n}: {got}"
                );
            }
        }
    }

    #[test]
    fn a_half_size_thumbnail_is_the_exact_2x2_mean() {
        let img = RgbImage::from_fn(224, 224, |x, y| {
            image::Rgb([(x % 2 * 100) as u8, (y % 2 * 50) as u8, 7])
        });
        let t = thumbnail(&img, 112, 112);
        // (0 + 100 + 0 + 100) / 4 = 50, (0 + 0 + 50 + 50) / 4 = 25.
        assert!(t.pixels().all(|p| p.0 == [50, 25, 7]));
        // A large frame: a grid of samples inside each box, the last row and column reachable.
        let big = RgbImage::from_fn(1920, 1080, |x, y| {
            image::Rgb([(x / 8) as u8, (y / 8) as u8, 0])
        });
        let t = thumbnail(&big, 112, 63);
        assert_eq!(t.dimensions(), (112, 63));
        let last = t.get_pixel(111, 62).0;
        assert!(last[0] > 230 && last[1] > 125, "{last:?}");
        assert!(t.get_pixel(0, 0).0[0] < 2);
    }

    #[test]
    fn keeps_at_most_keep_and_holds_at_most_pending_max() {
        let k = keeper();
        let img = Arc::new(RgbImage::new(4, 4));
        for i in 0..(PENDING_MAX + 10) {
            k.offer(&format!("p{i}"), img.clone());
        }
        assert_eq!(k.lock().pending_bytes, PENDING_MAX * 48);
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
    fn large_images_are_pushed_out_by_bytes() {
        let k = keeper();
        // 4K frames: 24.9 MB each, so ten fit in PENDING_BYTES.
        let big = Arc::new(RgbImage::new(3840, 2160));
        for i in 0..12 {
            k.offer(&format!("b{i}"), big.clone());
        }
        let inner = k.lock();
        assert_eq!(inner.pending.len(), PENDING_BYTES / big.as_raw().len());
        assert_eq!(
            inner.pending_bytes,
            inner.pending.len() * big.as_raw().len()
        );
        assert!(!inner.pending.contains_key("b0") && inner.pending.contains_key("b11"));
    }

    #[test]
    fn writes_and_reads_flips_json() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_empty());
        let k = keeper();
        k.offer("a", Arc::new(RgbImage::new(8, 8)));
        k.settle(&frame("a", 2));
        k.write(dir.path()).unwrap();
        assert_eq!(read(dir.path()).unwrap(), k.kept());
        std::fs::write(dir.path().join(FLIPS_JSON), "[{").unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("flips.json") && e.contains("not a valid"), "{e}");
    }
}
