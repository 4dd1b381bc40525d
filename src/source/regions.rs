//! Object boxes and foreground regions: where a frame's boxes come from (a manifest `boxes` field of
//! normalised xyxy, a Pascal VOC XML annotation, or the foreground mask itself) and the pure
//! functions that derive boxes from masks (tight box, connected components).
//!
//! Conventions, fixed once here:
//! - A [`BBox`] is in pixels of the frame with **exclusive** ends: `[x0, x1) × [y0, y1)`.
//! - **Normalised xyxy** (docs/corner-cases.md#inputs-boxes-and-inpainted-backgrounds, Corner
//!   Cases' `*_GT_bboxes.pkl`): four numbers in [0, 1], pixel box = box × (W, H, W, H) truncated to
//!   integers (the reference crops with `int()` of each coordinate; see [`NormBox::to_pixels`]).
//!   Written in a manifest as `x0 y0 x1 y1`, boxes separated by `;` (see [`parse_norm_boxes`]).
//! - **Pascal VOC XML** (ImageNet's bounding-box files, docs/in9.md#how-the-variations-are-built):
//!   `<xmin>..<xmax>` are the first and last covered pixel, used as inclusive corners the way the
//!   IN-9 reference draws them (PIL `rectangle([xmin, ymin, xmax, ymax])`), so the box is
//!   `[xmin, xmax + 1)`. An annotation whose `<size>` differs from the image is an error (the IN-9
//!   reference drops such images).
//! - **Foreground** of a mask = its non-zero pixels (docs/hard-imagenet.md#data-and-preprocessing:
//!   `mask > 0`; docs/ximagenet.md#masks: any non-zero → 255).

use std::path::{Path, PathBuf};

use image::GrayImage;

use super::SourceError;
use crate::frame::BBox;

/// A box in normalised xyxy coordinates: fractions of the image width (x) and height (y), with
/// `0 ≤ x0 < x1 ≤ 1` and `0 ≤ y0 < y1 ≤ 1`
/// (docs/corner-cases.md#inputs-boxes-and-inpainted-backgrounds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormBox {
    /// Left edge, fraction of the width.
    pub x0: f64,
    /// Top edge, fraction of the height.
    pub y0: f64,
    /// Right edge, fraction of the width.
    pub x1: f64,
    /// Bottom edge, fraction of the height.
    pub y1: f64,
}

/// Slack added before truncating a scaled normalised coordinate, in pixels. A coordinate written
/// as the decimal of `p / W` comes back as `p − 4e-16` after `× W` for some `p`; without the slack
/// truncation would move it a whole pixel. Only values within a millionth of a pixel below an
/// integer are affected, so this differs from the reference's plain `int()` only where that was a
/// rounding accident.
const TRUNC_SLACK: f64 = 1e-6;

impl NormBox {
    /// The box in pixels of a `width`×`height` image: each coordinate × (W, H, W, H), truncated to
    /// an integer as Corner Cases crops its boxes (`int(x0)`, …; docs/corner-cases.md#composition,
    /// step 1), then clipped to the image. `None` when nothing is left (a box thinner than a
    /// pixel).
    ///
    /// ```
    /// use robustream::source::regions::NormBox;
    /// use robustream::frame::BBox;
    /// let b = NormBox { x0: 0.25, y0: 0.1, x1: 0.75, y1: 0.5 };
    /// assert_eq!(b.to_pixels(100, 50), Some(BBox::new(25, 5, 75, 25)));
    /// ```
    pub fn to_pixels(&self, width: u32, height: u32) -> Option<BBox> {
        let px = |v: f64, size: u32| -> u32 {
            let p = (v * f64::from(size) + TRUNC_SLACK).floor();
            p.clamp(0.0, f64::from(size)) as u32
        };
        let b = BBox::new(
            px(self.x0, width),
            px(self.y0, height),
            px(self.x1, width),
            px(self.y1, height),
        );
        (!b.is_empty()).then_some(b)
    }

    /// The normalised form of a pixel box of a `width`×`height` image (each edge ÷ the size), the
    /// inverse of [`NormBox::to_pixels`] for boxes inside the image.
    pub fn from_pixels(b: &BBox, width: u32, height: u32) -> Self {
        let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
        Self {
            x0: f64::from(b.x0) / w,
            y0: f64::from(b.y0) / h,
            x1: f64::from(b.x1) / w,
            y1: f64::from(b.y1) / h,
        }
    }
}

/// Parses the manifest `boxes` field: boxes separated by `;`, each four numbers `x0 y0 x1 y1`
/// separated by spaces (normalised xyxy, see [`NormBox`]). Empty text (or only `;` and spaces)
/// means no boxes. Errors say which box is wrong and how to write it.
///
/// ```
/// use robustream::source::regions::parse_norm_boxes;
/// let b = parse_norm_boxes("0.1 0.2 0.5 0.6; 0 0 1 1").unwrap();
/// assert_eq!(b.len(), 2);
/// assert_eq!(b[1].x1, 1.0);
/// assert!(parse_norm_boxes("0.5 0.2 0.1 0.6").is_err()); // x0 > x1
/// ```
pub fn parse_norm_boxes(text: &str) -> Result<Vec<NormBox>, String> {
    let mut out = Vec::new();
    for (i, written) in text.split(';').map(str::trim).enumerate() {
        if written.is_empty() {
            continue;
        }
        let part = crate::quote::clip(written);
        let nums: Vec<&str> = written.split_whitespace().collect();
        let how = "write each box as `x0 y0 x1 y1` (normalised to [0, 1], x0 < x1, y0 < y1), \
                   boxes separated by `;`";
        let [x0, y0, x1, y1] = nums[..] else {
            return Err(format!(
                "box {} `{part}` has {} numbers, not 4; {how}",
                i + 1,
                nums.len()
            ));
        };
        let parse = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
        let (Some(x0), Some(y0), Some(x1), Some(y1)) = (parse(x0), parse(y0), parse(x1), parse(y1))
        else {
            return Err(format!("box {} `{part}` is not four numbers; {how}", i + 1));
        };
        let inside = |v: f64| (0.0..=1.0).contains(&v);
        if !(inside(x0) && inside(y0) && inside(x1) && inside(y1)) {
            return Err(format!(
                "box {} `{part}` has a coordinate outside [0, 1]; boxes are normalised xyxy \
                 (pixel box ÷ image width/height)",
                i + 1
            ));
        }
        if x0 >= x1 || y0 >= y1 {
            return Err(format!(
                "box {} `{part}` is empty or reversed; {how}",
                i + 1
            ));
        }
        out.push(NormBox { x0, y0, x1, y1 });
    }
    Ok(out)
}

/// Writes boxes in the manifest `boxes` format ([`parse_norm_boxes`] reads it back exactly: the
/// shortest decimal that round-trips each `f64`).
pub fn format_norm_boxes(boxes: &[NormBox]) -> String {
    boxes
        .iter()
        .map(|b| format!("{} {} {} {}", b.x0, b.y0, b.x1, b.y1))
        .collect::<Vec<_>>()
        .join(";")
}

/// One object of a Pascal VOC annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VocObject {
    /// `<name>` (for ImageNet files a WordNet id such as `n02084071`); empty when absent.
    pub name: String,
    /// The box in pixels, `[xmin, xmax + 1) × [ymin, ymax + 1)`, not yet clipped to the image.
    pub bbox: BBox,
}

/// A parsed Pascal VOC annotation (the subset ImageNet's bounding-box files use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VocAnnotation {
    /// `<size><width>`/`<height>`, when the file has them.
    pub size: Option<(u32, u32)>,
    /// The `<object>`s with a `<bndbox>`, in file order.
    pub objects: Vec<VocObject>,
}

/// Parses a Pascal VOC annotation: `<annotation>` with an optional `<size>` and any number of
/// `<object>`s, each with `<name>` and `<bndbox>` (`xmin`, `ymin`, `xmax`, `ymax`). Coordinates
/// may be written with decimals (truncated, as Python's `int(float(v))`); negative ones count as 0.
/// Objects without a `<bndbox>` are ignored. Errors say what is wrong.
pub fn parse_voc(xml: &str) -> Result<VocAnnotation, String> {
    let doc = roxmltree::Document::parse(xml)
        .map_err(|e| format!("not well-formed XML ({e}); give a Pascal VOC annotation"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "annotation" {
        return Err(format!(
            "the root element is <{}>, not <annotation>; give a Pascal VOC annotation",
            root.tag_name().name()
        ));
    }
    fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
        node.children()
            .find(|c| c.is_element() && c.tag_name().name() == name)
    }
    fn text(node: roxmltree::Node<'_, '_>, name: &str) -> Option<String> {
        child(node, name).map(|c| c.text().unwrap_or("").trim().to_string())
    }
    let number = |node: roxmltree::Node<'_, '_>, name: &str, what: &str| -> Result<u32, String> {
        let t = text(node, name).ok_or_else(|| format!("{what} has no <{name}>"))?;
        let v: f64 = t
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| {
                format!(
                    "{what} <{name}> is `{}`, not a number",
                    crate::quote::clip(&t)
                )
            })?;
        Ok(v.clamp(0.0, f64::from(u32::MAX - 1)) as u32)
    };
    let size = match child(root, "size") {
        Some(s) => Some((
            number(s, "width", "<size>")?,
            number(s, "height", "<size>")?,
        )),
        None => None,
    };
    let mut objects = Vec::new();
    for (i, obj) in root
        .children()
        .filter(|c| c.is_element() && c.tag_name().name() == "object")
        .enumerate()
    {
        let Some(bb) = child(obj, "bndbox") else {
            continue;
        };
        let what = format!("object {}", i + 1);
        let (xmin, ymin) = (number(bb, "xmin", &what)?, number(bb, "ymin", &what)?);
        let (xmax, ymax) = (number(bb, "xmax", &what)?, number(bb, "ymax", &what)?);
        if xmax < xmin || ymax < ymin {
            return Err(format!(
                "{what} has xmin..xmax {xmin}..{xmax}, ymin..ymax {ymin}..{ymax}: reversed; \
                 fix the annotation"
            ));
        }
        objects.push(VocObject {
            name: text(obj, "name").unwrap_or_default(),
            bbox: BBox::new(xmin, ymin, xmax + 1, ymax + 1),
        });
    }
    Ok(VocAnnotation { size, objects })
}

/// The boxes of a VOC annotation for an image of `size` (width, height): the annotated size must
/// match when given (docs/in9.md#image-filters: the IN-9 reference drops images whose annotation
/// has another size), boxes are clipped to the image, and a box wholly outside it is an error.
pub fn voc_boxes(ann: &VocAnnotation, size: (u32, u32)) -> Result<Vec<BBox>, String> {
    if let Some((w, h)) = ann.size
        && (w, h) != size
    {
        return Err(format!(
            "the annotation is for a {w}x{h} image but the image is {}x{}; give the annotation of \
             this image (or fix its <size>)",
            size.0, size.1
        ));
    }
    ann.objects
        .iter()
        .enumerate()
        .map(|(i, o)| {
            o.bbox.clip(size.0, size.1).ok_or_else(|| {
                format!(
                    "object {} box {:?} lies outside the {}x{} image; fix the annotation",
                    i + 1,
                    (o.bbox.x0, o.bbox.y0, o.bbox.x1 - 1, o.bbox.y1 - 1),
                    size.0,
                    size.1
                )
            })
        })
        .collect()
}

/// Where an item's boxes come from; resolved into pixels by [`resolve_boxes`] once the image (and
/// so its size) is read.
#[derive(Debug, Clone, PartialEq)]
pub enum BoxSpec {
    /// Normalised xyxy boxes (manifest `boxes` column).
    Normalized(Vec<NormBox>),
    /// A Pascal VOC XML file (manifest `annotation` column, or `<stem>.xml` next to a folder image).
    Voc(PathBuf),
}

/// The pixel boxes of `spec` for the image at `image_path` of `size` (width, height). Errors are
/// per item: the item is the image, the message names the annotation and the fix.
pub fn resolve_boxes(
    spec: &BoxSpec,
    image_path: &Path,
    size: (u32, u32),
) -> Result<Vec<BBox>, SourceError> {
    match spec {
        BoxSpec::Normalized(boxes) => boxes
            .iter()
            .enumerate()
            .map(|(i, b)| {
                b.to_pixels(size.0, size.1).ok_or_else(|| {
                    SourceError::at(
                        image_path,
                        format!(
                            "box {} ({} {} {} {}) is thinner than a pixel on this {}x{} image; \
                             fix or remove it in the manifest `boxes` column",
                            i + 1,
                            b.x0,
                            b.y0,
                            b.x1,
                            b.y1,
                            size.0,
                            size.1
                        ),
                    )
                })
            })
            .collect(),
        BoxSpec::Voc(xml) => {
            let x = crate::quote::clip_path(xml);
            let at = |why: String| SourceError::at(image_path, format!("annotation {x}: {why}"));
            // Through the bounded reader, like images and masks: a FIFO, a device or a huge file
            // given as the annotation is refused before it is opened or read.
            let bytes = super::decode::read_file(xml, "annotation").map_err(at)?;
            let text = std::str::from_utf8(&bytes).map_err(|e| {
                at(format!(
                    "is not UTF-8 text (invalid byte at offset {}); save the XML as UTF-8",
                    e.valid_up_to()
                ))
            })?;
            parse_voc(text)
                .and_then(|ann| voc_boxes(&ann, size))
                .map_err(at)
        }
    }
}

/// True when the mask has at least one foreground (non-zero) pixel.
pub fn has_foreground(mask: &GrayImage) -> bool {
    mask.as_raw().iter().any(|&v| v != 0)
}

/// The tight box of the mask's foreground (non-zero pixels), `[min, max + 1)` on both axes; `None`
/// for an empty mask.
///
/// (Hard ImageNet's gray-bbox ablation fills `[min, max)`, one row and column short —
/// docs/hard-imagenet.md#gray-box; a scenario reproducing that quirk shrinks this box by one on the
/// right and bottom.)
///
/// ```
/// use image::{GrayImage, Luma};
/// use robustream::frame::BBox;
/// use robustream::source::regions::tight_box;
/// let mut m = GrayImage::new(8, 6);
/// m.put_pixel(2, 1, Luma([255]));
/// m.put_pixel(5, 3, Luma([7]));
/// assert_eq!(tight_box(&m), Some(BBox::new(2, 1, 6, 4)));
/// assert_eq!(tight_box(&GrayImage::new(4, 4)), None);
/// ```
pub fn tight_box(mask: &GrayImage) -> Option<BBox> {
    let w = mask.width() as usize;
    if w == 0 {
        return None;
    }
    let mut b: Option<BBox> = None;
    for (y, row) in mask.as_raw().chunks_exact(w).enumerate() {
        let Some(first) = row.iter().position(|&v| v != 0) else {
            continue;
        };
        let last = row.iter().rposition(|&v| v != 0).unwrap_or(first);
        let (y, first, last) = (y as u32, first as u32, last as u32);
        b = Some(match b {
            None => BBox::new(first, y, last + 1, y + 1),
            Some(b) => BBox::new(b.x0.min(first), b.y0, b.x1.max(last + 1), y + 1),
        });
    }
    b
}

/// The boxes a frame's scenarios receive: the frame's own `boxes` brought to the scenario stage by
/// `to_stage` (e.g. [`crate::preprocess::ModelView::boxes`]) when it has any, else the tight box of
/// the stage's `mask` (one box; none without a mask or for an empty one).
pub fn stage_boxes(
    boxes: &[BBox],
    mask: Option<&GrayImage>,
    to_stage: impl FnOnce(&[BBox]) -> Vec<BBox>,
) -> Vec<BBox> {
    if boxes.is_empty() {
        mask.and_then(tight_box).into_iter().collect()
    } else {
        to_stage(boxes)
    }
}

/// A `width`×`height` mask with the boxes filled with 255 (0 elsewhere); boxes are clipped.
pub fn box_mask(width: u32, height: u32, boxes: &[BBox]) -> GrayImage {
    let mut m = GrayImage::new(width, height);
    let w = width as usize;
    let raw: &mut [u8] = &mut m;
    for b in boxes.iter().filter_map(|b| b.clip(width, height)) {
        for y in b.y0 as usize..b.y1 as usize {
            raw[y * w + b.x0 as usize..y * w + b.x1 as usize].fill(255);
        }
    }
    m
}

/// Which pixels touch: 4-connectivity (edges only; `scipy.ndimage.label`'s default structure, used
/// by Hard ImageNet's tile ablation, docs/hard-imagenet.md#tile) or 8-connectivity (edges and
/// corners).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Connectivity {
    /// Left, right, up, down neighbours (the reference's default).
    #[default]
    Four,
    /// The four plus the diagonal neighbours.
    Eight,
}

/// The connected components of a mask's foreground (non-zero pixels).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Components {
    /// Per pixel, row-major: 0 for background, `k + 1` for a pixel of component `k`.
    pub labels: Vec<u32>,
    /// Tight box of each component (exclusive ends), in component order.
    pub boxes: Vec<BBox>,
    /// Number of pixels of each component.
    pub areas: Vec<u64>,
}

/// Labels the connected components of the mask's foreground. Components are numbered in raster
/// order of their first pixel (top row first, then left to right), as `scipy.ndimage.label` numbers
/// them. One pass over the rows with runs and union-find: O(pixels), no per-pixel allocation.
pub fn label_components(mask: &GrayImage, connectivity: Connectivity) -> Components {
    let (w, h) = (mask.width() as usize, mask.height() as usize);
    // Runs of foreground: (row, x0, x1), in raster order; `parent` is their union-find forest.
    let mut runs: Vec<(u32, u32, u32)> = Vec::new();
    let mut parent: Vec<u32> = Vec::new();
    let reach = u32::from(connectivity == Connectivity::Eight);
    let mut prev = 0..0; // runs of the previous row
    for y in 0..h {
        let row = &mask.as_raw()[y * w..(y + 1) * w];
        let start = runs.len();
        let mut x = 0;
        while x < w {
            if row[x] == 0 {
                x += 1;
                continue;
            }
            let x0 = x;
            while x < w && row[x] != 0 {
                x += 1;
            }
            runs.push((y as u32, x0 as u32, x as u32));
            parent.push((runs.len() - 1) as u32);
        }
        // Join with the runs above that touch: two pointers over both sorted run lists.
        let cur = start..runs.len();
        let mut j = prev.start;
        for i in cur.clone() {
            let (_, a0, a1) = runs[i];
            while j < prev.end && runs[j].2 + reach <= a0 {
                j += 1;
            }
            let mut k = j;
            while k < prev.end && runs[k].1 < a1 + reach {
                union(&mut parent, i as u32, k as u32);
                k += 1;
            }
        }
        prev = cur;
    }
    // Number the roots in run order (a root is its component's first run, so this is raster order).
    let mut id = vec![u32::MAX; runs.len()];
    let mut boxes: Vec<BBox> = Vec::new();
    let mut areas: Vec<u64> = Vec::new();
    let mut labels = vec![0u32; w * h];
    for (i, &(y, x0, x1)) in runs.iter().enumerate() {
        let root = find(&mut parent, i as u32) as usize;
        if id[root] == u32::MAX {
            id[root] = boxes.len() as u32;
            boxes.push(BBox::new(x0, y, x1, y + 1));
            areas.push(0);
        }
        let c = id[root] as usize;
        let b = &mut boxes[c];
        *b = BBox::new(b.x0.min(x0), b.y0, b.x1.max(x1), y + 1);
        areas[c] += u64::from(x1 - x0);
        let row = y as usize * w;
        labels[row + x0 as usize..row + x1 as usize].fill(c as u32 + 1);
    }
    Components {
        labels,
        boxes,
        areas,
    }
}

/// Tight boxes of the mask's connected components, in [`label_components`] order.
pub fn component_boxes(mask: &GrayImage, connectivity: Connectivity) -> Vec<BBox> {
    label_components(mask, connectivity).boxes
}

/// Union-find root with path halving.
fn find(parent: &mut [u32], mut i: u32) -> u32 {
    while parent[i as usize] != i {
        let g = parent[parent[i as usize] as usize];
        parent[i as usize] = g;
        i = g;
    }
    i
}

/// Joins the sets of `a` and `b`; the smaller index becomes the root, so a set's root is its first
/// run in raster order.
fn union(parent: &mut [u32], a: u32, b: u32) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
        parent[hi as usize] = lo;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::Luma;

    /// A mask from rows of `#` (foreground) and `.`.
    fn mask(rows: &[&str]) -> GrayImage {
        let h = rows.len() as u32;
        let w = rows.first().map_or(0, |r| r.len()) as u32;
        let mut m = GrayImage::new(w, h);
        for (y, r) in rows.iter().enumerate() {
            for (x, c) in r.bytes().enumerate() {
                if c == b'#' {
                    m.put_pixel(x as u32, y as u32, Luma([255]));
                }
            }
        }
        m
    }

    #[test]
    fn norm_boxes_parse_and_reject_with_reasons() {
        let b = parse_norm_boxes(" 0 0 1 1 ;0.25 0.5 0.75 1;").unwrap();
        assert_eq!(
            b,
            vec![
                NormBox {
                    x0: 0.0,
                    y0: 0.0,
                    x1: 1.0,
                    y1: 1.0
                },
                NormBox {
                    x0: 0.25,
                    y0: 0.5,
                    x1: 0.75,
                    y1: 1.0
                }
            ]
        );
        assert_eq!(parse_norm_boxes("").unwrap(), vec![]);
        assert_eq!(parse_norm_boxes(" ; ").unwrap(), vec![]);
        let e = parse_norm_boxes("0 0 1").unwrap_err();
        assert!(e.starts_with("box 1 `0 0 1` has 3 numbers, not 4"), "{e}");
        let e = parse_norm_boxes("0 0 1 1;0 0 x 1").unwrap_err();
        assert!(e.starts_with("box 2 `0 0 x 1` is not four numbers"), "{e}");
        assert!(parse_norm_boxes("0 0 NaN 1").is_err());
        let e = parse_norm_boxes("0 0 1.5 1").unwrap_err();
        assert!(e.contains("outside [0, 1]"), "{e}");
        assert!(parse_norm_boxes("-0.1 0 1 1").is_err());
        let e = parse_norm_boxes("0.5 0 0.5 1").unwrap_err();
        assert!(e.contains("empty or reversed"), "{e}");
        // Pixel boxes written by mistake are outside [0, 1].
        assert!(parse_norm_boxes("10 20 100 200").is_err());
    }

    #[test]
    fn norm_to_pixels_truncates_like_the_reference_and_round_trips() {
        let b = NormBox {
            x0: 0.119,
            y0: 0.0,
            x1: 0.999,
            y1: 0.5,
        };
        // 0.119 × 100 = 11.9 → 11; 0.999 × 100 = 99.9 → 99 (int() truncation,
        // docs/corner-cases.md#composition, step 1).
        assert_eq!(b.to_pixels(100, 10), Some(BBox::new(11, 0, 99, 5)));
        // Thinner than a pixel → nothing.
        let thin = NormBox {
            x0: 0.501,
            y0: 0.0,
            x1: 0.502,
            y1: 1.0,
        };
        assert_eq!(thin.to_pixels(100, 10), None);
        // Every pixel box of a few odd sizes survives format → parse → to_pixels exactly.
        for (w, h) in [
            (7u32, 3u32),
            (640, 427),
            (1280, 720),
            (224, 224),
            (333, 1000),
        ] {
            for (x0, x1) in [(0, 1), (1, 3), (w / 3, w - 1), (w - 1, w), (0, w)] {
                for (y0, y1) in [(0, h), (h / 2, h / 2 + 1), (1, h - 1)] {
                    let p = BBox::new(x0, y0, x1, y1);
                    let text = format_norm_boxes(&[NormBox::from_pixels(&p, w, h)]);
                    let back = parse_norm_boxes(&text).unwrap()[0].to_pixels(w, h);
                    assert_eq!(back, Some(p), "{w}x{h} {text}");
                }
            }
        }
    }

    const VOC: &str = r#"<?xml version="1.0"?>
<annotation>
  <folder>val</folder>
  <filename>ILSVRC2012_val_00000001</filename>
  <size><width>500</width><height>375</height><depth>3</depth></size>
  <object>
    <name>n01751748</name><truncated>0</truncated>
    <bndbox><xmin>111</xmin><ymin>108</ymin><xmax>441</xmax><ymax>193</ymax></bndbox>
  </object>
  <object><name>n01751748</name>
    <bndbox><xmin>0</xmin><ymin>0.9</ymin><xmax>499.7</xmax><ymax>374</ymax></bndbox>
  </object>
  <object><name>no box</name></object>
</annotation>"#;

    #[test]
    fn voc_parses_size_objects_and_inclusive_corners() {
        let a = parse_voc(VOC).unwrap();
        assert_eq!(a.size, Some((500, 375)));
        assert_eq!(a.objects.len(), 2);
        assert_eq!(a.objects[0].name, "n01751748");
        assert_eq!(a.objects[0].bbox, BBox::new(111, 108, 442, 194));
        // Decimals truncated; the last pixel (499, 374) is inside.
        assert_eq!(a.objects[1].bbox, BBox::new(0, 0, 500, 375));
        assert_eq!(
            voc_boxes(&a, (500, 375)).unwrap(),
            vec![BBox::new(111, 108, 442, 194), BBox::new(0, 0, 500, 375)]
        );
        let e = voc_boxes(&a, (375, 500)).unwrap_err();
        assert!(
            e.starts_with("the annotation is for a 500x375 image but the image is 375x500"),
            "{e}"
        );
    }

    #[test]
    fn voc_errors_say_what_is_wrong() {
        assert!(
            parse_voc("<annotation><object>")
                .unwrap_err()
                .contains("XML")
        );
        assert!(
            parse_voc("<svg/>")
                .unwrap_err()
                .contains("<svg>, not <annotation>")
        );
        let e = parse_voc(
            "<annotation><object><bndbox><xmin>5</xmin><ymin>1</ymin><xmax>2</xmax>\
             <ymax>3</ymax></bndbox></object></annotation>",
        )
        .unwrap_err();
        assert!(e.contains("object 1") && e.contains("reversed"), "{e}");
        let e = parse_voc(
            "<annotation><object><bndbox><xmin>a</xmin><ymin>1</ymin><xmax>2</xmax>\
             <ymax>3</ymax></bndbox></object></annotation>",
        )
        .unwrap_err();
        assert!(e.contains("<xmin> is `a`, not a number"), "{e}");
        let e = parse_voc(
            "<annotation><object><bndbox><xmin>1</xmin><xmax>2</xmax>\
             <ymax>3</ymax></bndbox></object></annotation>",
        )
        .unwrap_err();
        assert!(e.contains("has no <ymin>"), "{e}");
        // No <size>: boxes only clipped; a box outside the image is an error.
        let a = parse_voc(
            "<annotation><object><bndbox><xmin>8</xmin><ymin>0</ymin><xmax>20</xmax>\
             <ymax>3</ymax></bndbox></object></annotation>",
        )
        .unwrap();
        assert_eq!(a.size, None);
        assert_eq!(
            voc_boxes(&a, (10, 10)).unwrap(),
            vec![BBox::new(8, 0, 10, 4)]
        );
        assert!(
            voc_boxes(&a, (8, 10))
                .unwrap_err()
                .contains("lies outside the 8x10 image")
        );
    }

    #[test]
    fn resolve_reads_voc_files_and_names_them_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let xml = dir.path().join("a.xml");
        std::fs::write(&xml, VOC).unwrap();
        let img = Path::new("img.JPEG");
        let spec = BoxSpec::Voc(xml.clone());
        assert_eq!(resolve_boxes(&spec, img, (500, 375)).unwrap().len(), 2);
        let e = resolve_boxes(&spec, img, (10, 10)).unwrap_err();
        assert_eq!(e.item, "img.JPEG");
        assert!(
            e.message
                .starts_with(&format!("annotation {}: ", xml.display())),
            "{e}"
        );
        let no = dir.path().join("no.xml");
        let e = resolve_boxes(&BoxSpec::Voc(no.clone()), img, (1, 1)).unwrap_err();
        assert!(
            e.message.starts_with(&format!(
                "annotation {}: cannot read annotation (",
                no.display()
            )) && e
                .message
                .ends_with("check that the file exists and is readable"),
            "{e}"
        );
        // Not a file, too large, not text: refused through the bounded reader, one line each.
        let e = resolve_boxes(&BoxSpec::Voc(dir.path().to_path_buf()), img, (1, 1)).unwrap_err();
        assert!(
            e.message.ends_with(
                ": is a directory, not an annotation file; give the path of an annotation file"
            ),
            "{e}"
        );
        let big = dir.path().join("big.xml");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(super::super::decode::MAX_FILE_BYTES + 1)
            .unwrap();
        let e = resolve_boxes(&BoxSpec::Voc(big), img, (1, 1)).unwrap_err();
        assert!(
            e.message
                .ends_with(": the annotation file is larger than 256 MiB (the most robustream reads of one file); shrink or re-encode it"),
            "{e}"
        );
        let latin1 = dir.path().join("latin1.xml");
        std::fs::write(&latin1, b"<annotation>caf\xe9</annotation>").unwrap();
        let e = resolve_boxes(&BoxSpec::Voc(latin1), img, (1, 1)).unwrap_err();
        assert!(
            e.message.ends_with(
                ": is not UTF-8 text (invalid byte at offset 15); save the XML as UTF-8"
            ),
            "{e}"
        );
        let spec = BoxSpec::Normalized(parse_norm_boxes("0 0 0.5 1;0.5 0.5 0.5001 1").unwrap());
        let e = resolve_boxes(&spec, img, (10, 10)).unwrap_err();
        assert!(e.message.starts_with("box 2 "), "{e}");
        assert!(e.message.contains("thinner than a pixel"), "{e}");
    }

    #[test]
    fn tight_box_and_fallback() {
        let m = mask(&["......", "..#...", "....#.", "......"]);
        assert_eq!(tight_box(&m), Some(BBox::new(2, 1, 5, 3)));
        assert_eq!(tight_box(&mask(&["...", "..."])), None);
        assert_eq!(tight_box(&GrayImage::new(0, 0)), None);
        assert_eq!(tight_box(&mask(&["#"])), Some(BBox::new(0, 0, 1, 1)));
        assert!(has_foreground(&m));
        assert!(!has_foreground(&mask(&["..."])));
        let given = [BBox::new(0, 0, 1, 1)];
        // Own boxes go through the stage mapping even when it drops them all.
        assert_eq!(
            stage_boxes(&given, Some(&m), |b| b.to_vec()),
            given.to_vec()
        );
        assert_eq!(stage_boxes(&given, Some(&m), |_| vec![]), vec![]);
        let tight = vec![BBox::new(2, 1, 5, 3)];
        assert_eq!(stage_boxes(&[], Some(&m), |_| unreachable!()), tight);
        assert_eq!(stage_boxes(&[], None, |b| b.to_vec()), vec![]);
        assert_eq!(
            stage_boxes(&[], Some(&mask(&[".."])), |b| b.to_vec()),
            vec![]
        );
    }

    #[test]
    fn box_mask_fills_clipped_boxes() {
        let m = box_mask(5, 3, &[BBox::new(1, 0, 3, 2), BBox::new(4, 2, 9, 9)]);
        assert_eq!(m, mask(&[".##..", ".##..", "....#"]));
        assert_eq!(
            tight_box(&box_mask(9, 9, &[BBox::new(2, 3, 5, 8)])),
            Some(BBox::new(2, 3, 5, 8))
        );
    }

    #[test]
    fn components_four_vs_eight_connectivity() {
        let m = mask(&[
            "##....#", //
            "##...#.", //
            "..#..#.", //
            "......#", //
            "###...#",
        ]);
        let four = label_components(&m, Connectivity::Four);
        // Raster order of first pixels: {(0,0) block}, {(6,0)}, {(5,1),(5,2)}, {(2,2)}, {(6,3),(6,4)},
        // {row 4 run}.
        assert_eq!(
            four.boxes,
            vec![
                BBox::new(0, 0, 2, 2),
                BBox::new(6, 0, 7, 1),
                BBox::new(5, 1, 6, 3),
                BBox::new(2, 2, 3, 3),
                BBox::new(6, 3, 7, 5),
                BBox::new(0, 4, 3, 5),
            ]
        );
        assert_eq!(four.areas, vec![4, 1, 2, 1, 2, 3]);
        assert_eq!(&four.labels[..7], &[1, 1, 0, 0, 0, 0, 2]);
        assert_eq!(four.labels[2 * 7 + 2], 4);
        let eight = label_components(&m, Connectivity::Eight);
        assert_eq!(
            eight.boxes,
            vec![
                BBox::new(0, 0, 3, 3),
                BBox::new(5, 0, 7, 5),
                BBox::new(0, 4, 3, 5),
            ]
        );
        assert_eq!(eight.areas, vec![5, 5, 3]);
        assert_eq!(
            component_boxes(&mask(&["...", "..."]), Connectivity::Eight),
            vec![]
        );
    }

    #[test]
    fn components_merge_u_shapes_and_keep_first_pixel_order() {
        // A U opened upwards: the arms meet only in the last row, so the runs of the first rows
        // start as separate sets and merge later; the component is numbered by its first pixel
        // (0, 0), and the lone pixel at (2, 0) comes second.
        let m = mask(&[
            "#.#.#", //
            "#...#", //
            "#####",
        ]);
        let c = label_components(&m, Connectivity::Four);
        assert_eq!(c.boxes, vec![BBox::new(0, 0, 5, 3), BBox::new(2, 0, 3, 1)]);
        assert_eq!(c.areas, vec![9, 1]);
        assert_eq!(c.labels.iter().filter(|&&l| l == 1).count(), 9);
        assert_eq!(c.labels[2], 2);
        // A staircase: 8-connected only.
        let s = mask(&["#...", ".#..", "..#.", "...#"]);
        assert_eq!(component_boxes(&s, Connectivity::Four).len(), 4);
        assert_eq!(
            component_boxes(&s, Connectivity::Eight),
            vec![BBox::new(0, 0, 4, 4)]
        );
        // Anti-diagonal staircase (joins to the left).
        let s = mask(&["...#", "..#.", ".#..", "#..."]);
        assert_eq!(
            component_boxes(&s, Connectivity::Eight),
            vec![BBox::new(0, 0, 4, 4)]
        );
    }

    #[test]
    fn components_match_a_flood_fill_on_random_masks() {
        // Reference: naive BFS flood fill in raster order.
        fn flood(m: &GrayImage, eight: bool) -> Vec<BBox> {
            let (w, h) = (m.width() as i64, m.height() as i64);
            let mut seen = vec![false; (w * h) as usize];
            let mut out = Vec::new();
            for y in 0..h {
                for x in 0..w {
                    let i = (y * w + x) as usize;
                    if seen[i] || m.as_raw()[i] == 0 {
                        continue;
                    }
                    seen[i] = true;
                    let mut b = BBox::new(x as u32, y as u32, x as u32 + 1, y as u32 + 1);
                    let mut stack = vec![(x, y)];
                    while let Some((cx, cy)) = stack.pop() {
                        b = BBox::new(
                            b.x0.min(cx as u32),
                            b.y0.min(cy as u32),
                            b.x1.max(cx as u32 + 1),
                            b.y1.max(cy as u32 + 1),
                        );
                        for (dx, dy) in [
                            (-1i64, 0i64),
                            (1, 0),
                            (0, -1),
                            (0, 1),
                            (-1, -1),
                            (1, -1),
                            (-1, 1),
                            (1, 1),
                        ]
                        .into_iter()
                        .take(if eight { 8 } else { 4 })
                        {
                            let (nx, ny) = (cx + dx, cy + dy);
                            if nx < 0 || ny < 0 || nx >= w || ny >= h {
                                continue;
                            }
                            let j = (ny * w + nx) as usize;
                            if !seen[j] && m.as_raw()[j] != 0 {
                                seen[j] = true;
                                stack.push((nx, ny));
                            }
                        }
                    }
                    out.push(b);
                }
            }
            out
        }
        let mut state = 0x1234_5678_9abc_def0u64;
        for trial in 0..60 {
            let (w, h) = (1 + trial % 13, 1 + (trial * 7) % 11);
            let mut m = GrayImage::new(w, h);
            for p in m.pixels_mut() {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                p.0[0] = if (state >> 33) % 100 < 45 { 255 } else { 0 };
            }
            for (conn, eight) in [(Connectivity::Four, false), (Connectivity::Eight, true)] {
                assert_eq!(
                    component_boxes(&m, conn),
                    flood(&m, eight),
                    "{w}x{h} {conn:?}"
                );
            }
        }
    }
}
