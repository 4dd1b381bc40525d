//! The unit that flows through the pipeline: a [`Frame`] (an RGB image with optional ground truth and
//! foreground regions) and the [`LabelSpace`] its truth is expressed in.

use std::time::Instant;

use image::{GrayImage, RgbImage};

/// A ground-truth label: a class index in the **dataset's** label space (see [`LabelSpace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Truth(pub usize);

/// An axis-aligned box in pixel coordinates of the frame: `[x0, y0)`..`[x1, y1)`, exclusive ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BBox {
    /// Left column (inclusive).
    pub x0: u32,
    /// Top row (inclusive).
    pub y0: u32,
    /// Right column (exclusive).
    pub x1: u32,
    /// Bottom row (exclusive).
    pub y1: u32,
}

impl BBox {
    /// The box `[x0, x1) × [y0, y1)`.
    pub fn new(x0: u32, y0: u32, x1: u32, y1: u32) -> Self {
        Self { x0, y0, x1, y1 }
    }

    /// Width in pixels (0 when empty).
    pub(crate) fn width(&self) -> u32 {
        self.x1.saturating_sub(self.x0)
    }

    /// Height in pixels (0 when empty).
    pub(crate) fn height(&self) -> u32 {
        self.y1.saturating_sub(self.y0)
    }

    /// Number of pixels covered.
    pub(crate) fn area(&self) -> u64 {
        u64::from(self.width()) * u64::from(self.height())
    }

    /// True when the box covers no pixel.
    pub(crate) fn is_empty(&self) -> bool {
        self.width() == 0 || self.height() == 0
    }

    /// The part of the box inside a `width`×`height` image, `None` when nothing is left.
    pub(crate) fn clip(&self, width: u32, height: u32) -> Option<BBox> {
        let b = BBox::new(
            self.x0.min(width),
            self.y0.min(height),
            self.x1.min(width),
            self.y1.min(height),
        );
        (!b.is_empty()).then_some(b)
    }
}

/// Foreground information attached to a frame: a mask (0 = background, 255 = foreground, values in
/// between are soft edges) of exactly the frame's size, and/or object boxes.
#[derive(Debug, Clone, Default)]
pub struct Regions {
    /// Foreground mask, same width and height as the frame image.
    pub mask: Option<GrayImage>,
    /// Object boxes.
    pub boxes: Vec<BBox>,
}

/// One input frame.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Stable identifier: the path relative to the source root for files, or a sequence number for
    /// streams. It keys the scenario RNG, so it must not depend on scheduling.
    pub id: String,
    /// Position of the frame in its source (0-based), used to keep outputs in source order.
    pub seq: u64,
    /// The pixels, RGB 8-bit.
    pub image: RgbImage,
    /// Ground truth in the dataset label space, if known.
    pub truth: Option<Truth>,
    /// Foreground mask and boxes, if known.
    pub regions: Option<Regions>,
    /// The scenario key this frame already *is*, for sources of stored variants (a released
    /// ImageNet-C JPEG is `corruption/<name>/<severity>` of its original; see
    /// `source::imagenet_c`). The pipeline evaluates such a frame as it is, under this key only, with
    /// no scenario applied. `None` for ordinary frames, which get every scenario of the plan.
    pub variant: Option<String>,
    /// When the frame was read (monotonic clock).
    pub captured: Instant,
    /// Time spent reading and decoding the frame, in milliseconds.
    pub decode_ms: f64,
    /// Time the mask source (`[source.plate]`, `[source.segment]`) spent on this frame, in
    /// milliseconds; `None` when none ran for it (no mask source, or a reused segmentation mask).
    pub mask_ms: Option<f64>,
    /// Seconds since the start of the stream: a video frame's presentation time, a camera or
    /// synthetic frame's capture time; `None` for image files. Sidecar labels may be keyed by it.
    pub timestamp: Option<f64>,
    /// The frame's groups, dimension → value (`style` → `microsoft`, `camera` → `3`), from the
    /// source's `[source.groups]` (docs/groups.md#config); empty without groups. Every record of
    /// the frame carries them (`Record::groups`).
    pub groups: Groups,
}

/// A frame's groups: dimension name → the frame's value, in name order (docs/groups.md).
pub type Groups = std::collections::BTreeMap<String, String>;

impl Frame {
    /// A frame as most sources and tests build it: no truth, regions, variant, decode or mask time,
    /// timestamp or groups, captured now. Set the rest with struct update syntax:
    /// `Frame { truth: Some(t), ..Frame::new(id, seq, image) }`.
    pub fn new(id: impl Into<String>, seq: u64, image: RgbImage) -> Self {
        Frame {
            id: id.into(),
            seq,
            image,
            truth: None,
            regions: None,
            variant: None,
            captured: Instant::now(),
            decode_ms: 0.0,
            mask_ms: None,
            timestamp: None,
            groups: Groups::new(),
        }
    }
}

/// The dataset's label space: class names in index order.
///
/// Each entry may hold comma-separated aliases (`"tabby, tabby cat"`); [`LabelSpace::resolve`] accepts
/// the whole entry or any alias, case-insensitively, or a plain index.
#[derive(Debug, Clone)]
pub struct LabelSpace {
    names: Vec<String>,
    /// Lower-cased entries and aliases → index, built on the first [`LabelSpace::resolve`]: a
    /// manifest of 200,000 rows resolved its labels by scanning and lower-casing the 1000 names
    /// per row (4 s) before.
    lookup: std::sync::OnceLock<Lookup>,
}

/// [`LabelSpace::lookup`].
#[derive(Debug, Clone, Default)]
struct Lookup {
    /// A whole entry → its first index.
    entries: std::collections::HashMap<String, usize>,
    /// An alias → the one entry holding it, `None` when several do.
    aliases: std::collections::HashMap<String, Option<usize>>,
}

impl PartialEq for LabelSpace {
    fn eq(&self, other: &Self) -> bool {
        self.names == other.names
    }
}

impl Eq for LabelSpace {}

impl LabelSpace {
    /// A label space from names in index order.
    pub fn new(names: Vec<String>) -> Self {
        Self {
            names,
            lookup: std::sync::OnceLock::new(),
        }
    }

    fn lookup(&self) -> &Lookup {
        self.lookup.get_or_init(|| {
            let mut l = Lookup::default();
            for (i, name) in self.names.iter().enumerate() {
                l.entries.entry(name.to_lowercase()).or_insert(i);
                for alias in name.split(',') {
                    l.aliases
                        .entry(alias.trim().to_lowercase())
                        .and_modify(|e| {
                            if *e != Some(i) {
                                *e = None;
                            }
                        })
                        .or_insert(Some(i));
                }
            }
            l
        })
    }

    /// Reads a class list file: one class per line, line i = class i; blank trailing lines ignored.
    /// The file is read through [`crate::fsread::read_text`] (a regular UTF-8 file of at most
    /// [`crate::fsread::MAX_TEXT_BYTES`]); the error says what is wrong, the caller names the file.
    pub(crate) fn from_file(path: &std::path::Path) -> std::io::Result<Self> {
        let text = crate::fsread::read_text_io(path, crate::fsread::MAX_TEXT_BYTES)?;
        let mut names: Vec<String> = text.lines().map(|l| l.trim().to_string()).collect();
        while names.last().is_some_and(|n| n.is_empty()) {
            names.pop();
        }
        Ok(Self::new(names))
    }

    /// Number of classes.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// True when there are no classes.
    pub(crate) fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Name of class `i` (the whole entry), if it exists.
    #[cfg(test)]
    pub(crate) fn name(&self, i: usize) -> Option<&str> {
        self.names.get(i).map(String::as_str)
    }

    /// All names in index order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Resolves a label written as an index (`"967"`) or a class name/alias (`"espresso"`).
    /// Returns `None` when the label is not in this space (or an alias is ambiguous).
    ///
    /// ```
    /// use robustream::frame::LabelSpace;
    /// let s = LabelSpace::new(vec!["tabby, tabby cat".into(), "espresso".into()]);
    /// assert_eq!(s.resolve("Espresso"), Some(1));
    /// assert_eq!(s.resolve("tabby cat"), Some(0));
    /// assert_eq!(s.resolve("0"), Some(0));
    /// assert_eq!(s.resolve("unicorn"), None);
    /// ```
    pub fn resolve(&self, label: &str) -> Option<usize> {
        let label = label.trim();
        if let Ok(i) = label.parse::<usize>() {
            return (i < self.names.len()).then_some(i);
        }
        let want = label.to_lowercase();
        let lookup = self.lookup();
        match lookup.entries.get(&want) {
            Some(&i) => Some(i),
            None => lookup.aliases.get(&want).copied().flatten(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> LabelSpace {
        LabelSpace::new(vec![
            "tench, Tinca tinca".into(),
            "tabby, tabby cat".into(),
            "espresso".into(),
            "crane".into(),
            "crane".into(),
        ])
    }

    #[test]
    fn resolves_index_entry_and_alias() {
        let s = space();
        assert_eq!(s.resolve("2"), Some(2));
        assert_eq!(s.resolve("Espresso"), Some(2));
        assert_eq!(s.resolve("tabby cat"), Some(1));
        assert_eq!(s.resolve("tench, Tinca tinca"), Some(0));
    }

    #[test]
    fn rejects_unknown_out_of_range_and_ambiguous() {
        let s = space();
        assert_eq!(s.resolve("99"), None);
        assert_eq!(s.resolve("zebra"), None);
        // "crane" is a whole entry twice: the first exact entry wins (ImageNet has two "crane"s;
        // write the index to pick the other one).
        assert_eq!(s.resolve("crane"), Some(3));
    }

    #[test]
    fn a_class_list_file_is_read_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("classes.txt");
        std::fs::write(&ok, "cat\ndog\n\n").unwrap();
        assert_eq!(LabelSpace::from_file(&ok).unwrap().len(), 2);
        let limit = crate::fsread::MAX_TEXT_BYTES;
        for (path, why) in crate::fsread::refused_paths(dir.path(), limit) {
            let e = LabelSpace::from_file(&path).unwrap_err();
            assert!(e.to_string().starts_with(why), "{e}");
        }
    }
}
