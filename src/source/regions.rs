//! Where a frame's object boxes come from: a manifest `boxes` field of normalised xyxy, a Pascal VOC
//! XML annotation, or the foreground mask itself (the box and mask geometry is in
//! [`crate::geometry`]).
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

use super::{SourceError, SourceErrorKind};
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
pub fn parse_norm_boxes(text: &str) -> Result<Vec<NormBox>, BoxError> {
    let mut out = Vec::new();
    for (i, written) in text.split(';').map(str::trim).enumerate() {
        if written.is_empty() {
            continue;
        }
        let (index, part) = (i + 1, crate::quote::clip(written).into_owned());
        let nums: Vec<&str> = written.split_whitespace().collect();
        let [x0, y0, x1, y1] = nums[..] else {
            return Err(BoxError::Count {
                index,
                part,
                count: nums.len(),
            });
        };
        let parse = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
        let (Some(x0), Some(y0), Some(x1), Some(y1)) = (parse(x0), parse(y0), parse(x1), parse(y1))
        else {
            return Err(BoxError::NotNumbers { index, part });
        };
        let inside = |v: f64| (0.0..=1.0).contains(&v);
        if !(inside(x0) && inside(y0) && inside(x1) && inside(y1)) {
            return Err(BoxError::OutsideUnit { index, part });
        }
        if x0 >= x1 || y0 >= y1 {
            return Err(BoxError::Reversed { index, part });
        }
        out.push(NormBox { x0, y0, x1, y1 });
    }
    Ok(out)
}

/// How a normalised box is written, for messages.
const HOW: &str = "write each box as `x0 y0 x1 y1` (normalised to [0, 1], x0 < x1, y0 < y1), \
                   boxes separated by `;`";

/// A box of the manifest `boxes` text that [`parse_norm_boxes`] refuses: which one (1-based
/// `index`, the `part` as written, clipped) and how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoxError {
    /// Not four numbers' worth of fields.
    #[error("box {index} `{part}` has {count} numbers, not 4; {HOW}")]
    Count {
        /// 1-based place among the `;`-separated boxes.
        index: usize,
        /// The box as written (clipped).
        part: String,
        /// How many fields it has.
        count: usize,
    },
    /// Four fields, not all finite numbers.
    #[error("box {index} `{part}` is not four numbers; {HOW}")]
    NotNumbers {
        /// 1-based place among the boxes.
        index: usize,
        /// The box as written (clipped).
        part: String,
    },
    /// A coordinate outside [0, 1] (a pixel box, most likely).
    #[error(
        "box {index} `{part}` has a coordinate outside [0, 1]; boxes are normalised xyxy (pixel \
         box ÷ image width/height)"
    )]
    OutsideUnit {
        /// 1-based place among the boxes.
        index: usize,
        /// The box as written (clipped).
        part: String,
    },
    /// `x0 >= x1` or `y0 >= y1`.
    #[error("box {index} `{part}` is empty or reversed; {HOW}")]
    Reversed {
        /// 1-based place among the boxes.
        index: usize,
        /// The box as written (clipped).
        part: String,
    },
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
struct VocObject {
    /// `<name>` (for ImageNet files a WordNet id such as `n02084071`); empty when absent.
    pub(crate) name: String,
    /// The box in pixels, `[xmin, xmax + 1) × [ymin, ymax + 1)`, not yet clipped to the image.
    pub(crate) bbox: BBox,
}

/// A parsed Pascal VOC annotation (the subset ImageNet's bounding-box files use).
#[derive(Debug, Clone, PartialEq, Eq)]
struct VocAnnotation {
    /// `<size><width>`/`<height>`, when the file has them.
    pub(crate) size: Option<(u32, u32)>,
    /// The `<object>`s with a `<bndbox>`, in file order.
    pub(crate) objects: Vec<VocObject>,
}

/// Parses a Pascal VOC annotation: `<annotation>` with an optional `<size>` and any number of
/// `<object>`s, each with `<name>` and `<bndbox>` (`xmin`, `ymin`, `xmax`, `ymax`). Coordinates
/// may be written with decimals (truncated, as Python's `int(float(v))`); negative ones count as 0.
/// Objects without a `<bndbox>` are ignored. Errors say what is wrong.
fn parse_voc(xml: &str) -> Result<VocAnnotation, VocError> {
    let doc = roxmltree::Document::parse(xml).map_err(VocError::Xml)?;
    let root = doc.root_element();
    if root.tag_name().name() != "annotation" {
        return Err(VocError::Root {
            root: root.tag_name().name().to_string(),
        });
    }
    fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
        node.children()
            .find(|c| c.is_element() && c.tag_name().name() == name)
    }
    fn text(node: roxmltree::Node<'_, '_>, name: &str) -> Option<String> {
        child(node, name).map(|c| c.text().unwrap_or("").trim().to_string())
    }
    let number = |node: roxmltree::Node<'_, '_>, name: &str, what: &str| -> Result<u32, VocError> {
        let t = text(node, name).ok_or_else(|| VocError::Missing {
            what: what.to_string(),
            name: name.to_string(),
        })?;
        let v: f64 = t
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| VocError::NotANumber {
                what: what.to_string(),
                name: name.to_string(),
                written: crate::quote::clip(&t).into_owned(),
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
            return Err(VocError::Reversed {
                object: i + 1,
                x: (xmin, xmax),
                y: (ymin, ymax),
            });
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
fn voc_boxes(ann: &VocAnnotation, size: (u32, u32)) -> Result<Vec<BBox>, VocError> {
    if let Some(annotated) = ann.size
        && annotated != size
    {
        return Err(VocError::SizeMismatch {
            annotated,
            image: size,
        });
    }
    ann.objects
        .iter()
        .enumerate()
        .map(|(i, o)| {
            o.bbox.clip(size.0, size.1).ok_or(VocError::OutsideImage {
                object: i + 1,
                bbox: (o.bbox.x0, o.bbox.y0, o.bbox.x1 - 1, o.bbox.y1 - 1),
                image: size,
            })
        })
        .collect()
}

/// A Pascal VOC annotation that gives no boxes: what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
enum VocError {
    /// The text is not XML.
    #[error("not well-formed XML ({0}); give a Pascal VOC annotation")]
    Xml(#[source] roxmltree::Error),
    /// XML, but not an `<annotation>`.
    #[error("the root element is <{root}>, not <annotation>; give a Pascal VOC annotation")]
    Root {
        /// The root element's name.
        root: String,
    },
    /// `<size>` or a `<bndbox>` lacks a coordinate.
    #[error("{what} has no <{name}>")]
    Missing {
        /// "`<size>`" or "object N".
        what: String,
        /// The missing element.
        name: String,
    },
    /// A coordinate that is not a finite number.
    #[error("{what} <{name}> is `{written}`, not a number")]
    NotANumber {
        /// "`<size>`" or "object N".
        what: String,
        /// The element.
        name: String,
        /// Its text (clipped).
        written: String,
    },
    /// A box with `xmax < xmin` or `ymax < ymin`.
    #[error(
        "object {object} has xmin..xmax {}..{}, ymin..ymax {}..{}: reversed; fix the annotation",
        x.0, x.1, y.0, y.1
    )]
    Reversed {
        /// 1-based object number.
        object: usize,
        /// `(xmin, xmax)`.
        x: (u32, u32),
        /// `(ymin, ymax)`.
        y: (u32, u32),
    },
    /// The annotation's `<size>` is not the image's.
    #[error(
        "the annotation is for a {}x{} image but the image is {}x{}; give the annotation of this \
         image (or fix its <size>)",
        annotated.0, annotated.1, image.0, image.1
    )]
    SizeMismatch {
        /// `<size>` (width, height).
        annotated: (u32, u32),
        /// The image's (width, height).
        image: (u32, u32),
    },
    /// A box wholly outside the image.
    #[error(
        "object {object} box {bbox:?} lies outside the {}x{} image; fix the annotation",
        image.0, image.1
    )]
    OutsideImage {
        /// 1-based object number.
        object: usize,
        /// The box as annotated, `(xmin, ymin, xmax, ymax)` inclusive.
        bbox: (u32, u32, u32, u32),
        /// The image's (width, height).
        image: (u32, u32),
    },
    /// The annotation file is not UTF-8.
    #[error("is not UTF-8 text (invalid byte at offset {}); save the XML as UTF-8", .0.valid_up_to())]
    NotUtf8(#[source] std::str::Utf8Error),
}

/// Where an item's boxes come from; resolved into pixels by [`resolve_boxes`] once the image (and
/// so its size) is read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BoxSpec {
    /// Normalised xyxy boxes (manifest `boxes` column).
    Normalized(Vec<NormBox>),
    /// A Pascal VOC XML file (manifest `annotation` column, or `<stem>.xml` next to a folder image).
    Voc(PathBuf),
}

/// The pixel boxes of `spec` for the image at `image_path` of `size` (width, height). Errors are
/// per item: the item is the image, the message names the annotation and the fix.
pub(crate) fn resolve_boxes(
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
                        SourceErrorKind::Annotation,
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
            let at = |why: &dyn std::fmt::Display| {
                SourceError::at(
                    SourceErrorKind::Annotation,
                    image_path,
                    format!("annotation {x}: {why}"),
                )
            };
            // Through the bounded reader, like images and masks: a FIFO, a device or a huge file
            // given as the annotation is refused before it is opened or read.
            let bytes = super::decode::read_file(xml, "annotation")
                .map_err(|why| at(&why).caused_by(why))?;
            std::str::from_utf8(&bytes)
                .map_err(VocError::NotUtf8)
                .and_then(parse_voc)
                .and_then(|ann| voc_boxes(&ann, size))
                .map_err(|why| at(&why).caused_by(why))
        }
    }
}

#[cfg(test)]
mod tests;
