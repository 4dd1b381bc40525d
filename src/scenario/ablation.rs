//! Hard ImageNet object ablations (docs/hard-imagenet.md#ablations): `ablation/gray`,
//! `ablation/gray_bbox` and `ablation/tile` (group `hard-imagenet`), plus the tile-filling kernel
//! the placement scenarios reuse to remove objects from their own frame
//! (docs/corner-cases.md#composition, see `placement.rs`).
//!
//! # Conventions
//! * **Object pixels** are the mask's non-zero pixels: Hard ImageNet binarises its masks with
//!   `mask[mask > 0] = 1` (docs/hard-imagenet.md#data-and-preprocessing), so soft edges count as
//!   object. At the model's view the mask is resized bilinearly and then binarised that way
//!   ([`MASK_RESIZE`]).
//! * The reference works in [0, 1] floats; we work in u8 with exact rules. Every ablation here only
//!   copies pixels or writes the gray value, so the single rounding decision is the gray value:
//!   0.5 on the [0, 1] scale is 127.5 on the u8 scale, halfway between two codes; we use
//!   [`GRAY`] = 128 (round half up). The model then sees 128/255 = 0.50196 instead of 0.5.
//! * Boxes have exclusive ends ([`BBox`]). The reference's `get_bbox` fills rows `[ymin, ymax)` and
//!   columns `[xmin, xmax)` where `ymax`, `xmax` are the **last** object row and column, so the box
//!   misses the object's last row and column; [`exclusive_max_box`] reproduces that off-by-one for
//!   both `gray_bbox` and `tile`.
//! * A frame whose mask has no object pixel is not ablated: the scenario reports
//!   [`ScenarioError::Unsuitable`] and the frame is skipped for it (the reference leaves such images
//!   unchanged and counts them, which in a stream of mostly object-free frames would dilute the
//!   accuracy drop towards zero).
//!
//! # Tile (intended semantics, docs/hard-imagenet.md#tile)
//! For each 4-connected component of the object pixels (`scipy.ndimage.label`'s default structure),
//! in raster order of its first pixel: take its exclusive-max box; look at the four same-size boxes
//! next to it (right, left, below, above, in that order), each clipped to the image and cut at the
//! first column (row) — counted outwards from the box — that holds any object pixel, so a tile never
//! copies object pixels (this includes the component's own last row and column, which the
//! exclusive-max box leaves outside); pick the largest (ties: the first in that order); fill the box
//! by repeating the tile as a periodic continuation from the side touching the box (a copy flush
//! against that side, the next copy beyond it, …). Components are filled one after the other on the
//! image as modified so far, as the reference does. Where none of the four sides has an object-free
//! pixel the box is filled with [`GRAY`] (the reference divides by zero there).
//!
//! Differences from the reference code (its index bugs, docs/hard-imagenet.md#tile): `trim_tile`
//! indexes rows as columns, the per-direction scans mix `sum(0)`/`sum(1)`, the "furthest we can go"
//! index counts from the wrong end, the repeated copies are anchored at the side away from the tile,
//! and the box is shrunk a second time (`get_corners` applied to the box itself). None of these is
//! reproduced.

use std::sync::Arc;

use image::{GrayImage, RgbImage};

use super::{CatalogEntry, RngKey, Scenario, ScenarioError, ScenarioInput};
use crate::frame::BBox;
use crate::geometry::{Connectivity, label_components, tight_box};
use crate::key::ScenarioKey;
use crate::view::MaskResize;

/// How Hard ImageNet brings its masks to the model's view
/// (docs/hard-imagenet.md#data-and-preprocessing): the image's `Resize((256, 256))` →
/// `CenterCrop(224)` with PIL's bilinear filter on the mask too, then `mask[mask > 0] = 1`. Its
/// ablations and RFS noise (`region_noise`) ask for it.
pub(crate) const MASK_RESIZE: MaskResize = MaskResize::BilinearNonZero;

/// The gray value written for Hard ImageNet's 0.5 (on the [0, 1] scale): 127.5 rounded half up.
pub(crate) const GRAY: u8 = 128;

/// The three ablations, keys `ablation/<name>` in this order, with their descriptions.
const ABLATIONS: [(&str, &str); 3] = [
    (
        "gray",
        "object pixels (mask > 0) set to gray 0.5 (u8 128) \
         (Hard ImageNet, docs/hard-imagenet.md#gray-object)",
    ),
    (
        "gray_bbox",
        "the mask's box, without its last row and column, set to gray \
         (docs/hard-imagenet.md#gray-box)",
    ),
    (
        "tile",
        "each object component's box filled with the largest object-free adjacent tile \
         (docs/hard-imagenet.md#tile)",
    ),
];

/// Which ablation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `ablation/gray`: object pixels become [`GRAY`].
    Gray,
    /// `ablation/gray_bbox`: the mask's [`exclusive_max_box`] becomes [`GRAY`].
    GrayBbox,
    /// `ablation/tile`: see the module doc.
    Tile,
}

/// A Hard ImageNet ablation scenario (`ablation/gray`, `ablation/gray_bbox`, `ablation/tile`). Needs a
/// foreground mask with at least one object pixel; no randomness.
#[derive(Debug, Clone)]
pub struct Ablation {
    kind: Kind,
    key: String,
}

impl Ablation {
    /// The ablation with this name (`gray`, `gray_bbox`, `tile`), `None` for any other.
    pub(crate) fn new(name: &str) -> Option<Self> {
        let kind = match name {
            "gray" => Kind::Gray,
            "gray_bbox" => Kind::GrayBbox,
            "tile" => Kind::Tile,
            _ => return None,
        };
        Some(Self {
            kind,
            key: ScenarioKey::Ablation { name }.to_string(),
        })
    }

    /// Which ablation this is.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }
}

impl Scenario for Ablation {
    fn key(&self) -> &str {
        &self.key
    }

    fn mask_resize(&self) -> MaskResize {
        MASK_RESIZE
    }

    fn apply(&self, input: &ScenarioInput<'_>, _rng: RngKey) -> Result<RgbImage, ScenarioError> {
        let mask = object_mask(&self.key, input)?;
        Ok(match self.kind {
            Kind::Gray => gray_object(input.image, mask),
            Kind::GrayBbox => gray_bbox(input.image, mask),
            Kind::Tile => tile(input.image, mask),
        })
    }

    fn as_ablation(&self) -> Option<&Ablation> {
        Some(self)
    }
}

/// Builds the `ablation/<name>` scenario of a parsed key; `None` for other families and unknown
/// names.
pub(crate) fn build_key(key: ScenarioKey<'_>) -> Option<Arc<dyn Scenario>> {
    let ScenarioKey::Ablation { name } = key else {
        return None;
    };
    Ablation::new(name).map(|a| Arc::new(a) as Arc<dyn Scenario>)
}

/// The catalogue entries: the three keys, and the group `hard-imagenet` of all three.
pub(crate) fn catalog() -> (Vec<CatalogEntry>, Vec<CatalogEntry>) {
    let keys: Vec<CatalogEntry> = ABLATIONS
        .iter()
        .map(|(name, desc)| CatalogEntry {
            name: ScenarioKey::Ablation { name }.to_string(),
            description: (*desc).to_string(),
            members: Vec::new(),
        })
        .collect();
    let group = CatalogEntry {
        name: "hard-imagenet".into(),
        description: "Hard ImageNet object ablations: gray, gray_bbox, tile (needs masks)".into(),
        members: keys.iter().map(|k| k.name.clone()).collect(),
    };
    (keys, vec![group])
}

/// The input's foreground mask under Hard ImageNet's rule ([`MASK_RESIZE`]), checked: present
/// ([`ScenarioError::NeedsMask`]), of the image's size and with at least one object (non-zero)
/// pixel ([`ScenarioError::Unsuitable`] otherwise).
pub(crate) fn object_mask<'a>(
    key: &str,
    input: &ScenarioInput<'a>,
) -> Result<&'a GrayImage, ScenarioError> {
    let mask = input
        .mask_for(MASK_RESIZE)
        .ok_or_else(|| ScenarioError::NeedsMask(key.to_string()))?;
    if mask.dimensions() != input.image.dimensions() {
        return Err(ScenarioError::Unsuitable {
            key: key.to_string(),
            reason: format!(
                "the mask is {}×{} but the image is {}×{}",
                mask.width(),
                mask.height(),
                input.image.width(),
                input.image.height()
            ),
        });
    }
    if !mask.as_raw().iter().any(|&v| v != 0) {
        return Err(ScenarioError::Unsuitable {
            key: key.to_string(),
            reason: "the mask is empty: no object in this frame".into(),
        });
    }
    Ok(mask)
}

/// `ablation/gray`: every object pixel (mask > 0) set to [`GRAY`] on all three channels, the others
/// unchanged (docs/hard-imagenet.md#gray-object: `img·(1−mask) + 0.5·mask` with a binary mask).
/// `mask` has the image's size.
pub fn gray_object(image: &RgbImage, mask: &GrayImage) -> RgbImage {
    debug_assert_eq!(image.dimensions(), mask.dimensions());
    let mut out = image.clone();
    let px: &mut [u8] = &mut out;
    for (p, &m) in px.chunks_exact_mut(3).zip(mask.as_raw()) {
        if m != 0 {
            p.fill(GRAY);
        }
    }
    out
}

/// The box Hard ImageNet's `get_bbox` fills for these object pixels: columns `[xmin, xmax)` and rows
/// `[ymin, ymax)` where `xmax`, `ymax` are the last object column and row — the tight box minus its
/// last row and column (the off-by-one of docs/hard-imagenet.md#gray-box). `None` for an empty
/// mask; the box itself is empty when the object is one pixel wide or tall.
///
/// ```
/// use image::{GrayImage, Luma};
/// use robustream::frame::BBox;
/// use robustream::scenario::ablation::exclusive_max_box;
/// let mut m = GrayImage::new(8, 6);
/// m.put_pixel(2, 1, Luma([255]));
/// m.put_pixel(5, 3, Luma([1]));
/// assert_eq!(exclusive_max_box(&m), Some(BBox::new(2, 1, 5, 3)));
/// ```
pub fn exclusive_max_box(mask: &GrayImage) -> Option<BBox> {
    tight_box(mask).map(shrink_last)
}

/// `[x0, x1) × [y0, y1)` → `[x0, x1 − 1) × [y0, y1 − 1)` (tight box → exclusive-max box).
fn shrink_last(b: BBox) -> BBox {
    BBox::new(b.x0, b.y0, b.x1 - 1, b.y1 - 1)
}

/// `ablation/gray_bbox`: the [`exclusive_max_box`] of the object pixels set to [`GRAY`]
/// (docs/hard-imagenet.md#gray-box); an empty mask leaves the image unchanged. `mask` has the
/// image's size.
fn gray_bbox(image: &RgbImage, mask: &GrayImage) -> RgbImage {
    let mut out = image.clone();
    if let Some(b) = exclusive_max_box(mask) {
        fill_box(&mut out, b, GRAY);
    }
    out
}

/// Sets every pixel of `b` (clipped to the image) to `value` on all channels.
pub(crate) fn fill_box(image: &mut RgbImage, b: BBox, value: u8) {
    let (w, h) = image.dimensions();
    let Some(b) = b.clip(w, h) else { return };
    let row_len = w as usize * 3;
    let raw: &mut [u8] = image;
    for y in b.y0..b.y1 {
        let row = y as usize * row_len;
        raw[row + b.x0 as usize * 3..row + b.x1 as usize * 3].fill(value);
    }
}

/// `ablation/tile`: every 4-connected object component's [`exclusive_max_box`]-style box filled with
/// its largest object-free adjacent tile, components in raster order (module doc;
/// docs/hard-imagenet.md#tile). `mask` has the image's size.
fn tile(image: &RgbImage, mask: &GrayImage) -> RgbImage {
    let comps = label_components(mask, Connectivity::Four);
    let boxes: Vec<BBox> = comps.boxes.into_iter().map(shrink_last).collect();
    let mut out = image.clone();
    tile_fill(&mut out, mask, &boxes);
    out
}

/// Fills each box of `boxes`, in order, with its [`largest_adjacent_tile`] in `object` (non-zero =
/// object pixel; the image's size), repeated by [`fill_from_tile`], reading the image as filled so
/// far; a box with no usable tile is set to [`GRAY`]. Empty boxes are skipped, boxes are clipped.
pub(crate) fn tile_fill(image: &mut RgbImage, object: &GrayImage, boxes: &[BBox]) {
    let (w, h) = image.dimensions();
    debug_assert_eq!((w, h), object.dimensions());
    for b in boxes.iter().filter_map(|b| b.clip(w, h)) {
        match largest_adjacent_tile(object, b) {
            Some((side, t)) => fill_from_tile(image, b, side, t),
            None => fill_box(image, b, GRAY),
        }
    }
}

/// Where a tile lies relative to the box it fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Columns right of the box, same rows.
    Right,
    /// Columns left of the box, same rows.
    Left,
    /// Rows below the box, same columns.
    Below,
    /// Rows above the box, same columns.
    Above,
}

/// The four tiles next to box `b` (which lies inside `object`), in the order right, left, below,
/// above: each the same size as `b`, clipped to the image and cut at the first column (for left and
/// right) or row (below, above), counted outwards from `b`, that holds an object pixel within `b`'s
/// rows (columns). A tile can be empty.
fn adjacent_tiles(object: &GrayImage, b: BBox) -> [(Side, BBox); 4] {
    let (w, h) = object.dimensions();
    let raw = object.as_raw();
    let stride = w as usize;
    let column_free = |x: u32| (b.y0..b.y1).all(|y| raw[y as usize * stride + x as usize] == 0);
    let row_free = |y: u32| {
        let row = y as usize * stride;
        raw[row + b.x0 as usize..row + b.x1 as usize]
            .iter()
            .all(|&v| v == 0)
    };
    let (bw, bh) = (b.width(), b.height());

    let right_end = b.x1.saturating_add(bw).min(w);
    let right = (b.x1..right_end)
        .position(|x| !column_free(x))
        .map_or(right_end, |i| b.x1 + i as u32);
    let left_start = b.x0.saturating_sub(bw);
    let left = (left_start..b.x0)
        .rev()
        .position(|x| !column_free(x))
        .map_or(left_start, |i| b.x0 - i as u32);
    let below_end = b.y1.saturating_add(bh).min(h);
    let below = (b.y1..below_end)
        .position(|y| !row_free(y))
        .map_or(below_end, |i| b.y1 + i as u32);
    let above_start = b.y0.saturating_sub(bh);
    let above = (above_start..b.y0)
        .rev()
        .position(|y| !row_free(y))
        .map_or(above_start, |i| b.y0 - i as u32);
    [
        (Side::Right, BBox::new(b.x1, b.y0, right, b.y1)),
        (Side::Left, BBox::new(left, b.y0, b.x0, b.y1)),
        (Side::Below, BBox::new(b.x0, b.y1, b.x1, below)),
        (Side::Above, BBox::new(b.x0, above, b.x1, b.y0)),
    ]
}

/// The largest of the [`adjacent_tiles`] of `b` by area (ties: right, left, below, above), `None`
/// when all four are empty.
pub(crate) fn largest_adjacent_tile(object: &GrayImage, b: BBox) -> Option<(Side, BBox)> {
    let mut best: Option<(Side, BBox)> = None;
    for (side, t) in adjacent_tiles(object, b) {
        if t.area() > best.map_or(0, |(_, b)| b.area()) {
            best = Some((side, t));
        }
    }
    best
}

/// Fills box `b` with copies of tile `t` (outside `b`, next to its `side`; an empty tile or box does
/// nothing) as a periodic continuation from that side: for a tile on the right the copy touching
/// `b`'s right edge is flush with it, so column `c` of the box (0-based) takes tile column `(c − width(b)) mod width(t)`; on
/// the left, tile column `c mod width(t)`; below and above likewise with rows.
fn fill_from_tile(image: &mut RgbImage, b: BBox, side: Side, t: BBox) {
    if b.is_empty() || t.is_empty() {
        return;
    }
    let row_len = image.width() as usize * 3;
    let raw: &mut [u8] = image;
    let (bw, bh) = (b.width() as usize, b.height() as usize);
    match side {
        Side::Right | Side::Left => {
            let tw = t.width() as usize;
            // Tile column of box column 0.
            let phase = match side {
                Side::Right => (tw - bw % tw) % tw,
                _ => 0,
            };
            for y in b.y0 as usize..b.y1 as usize {
                let row = y * row_len;
                let (mut c, mut j) = (0, phase);
                while c < bw {
                    let n = (tw - j).min(bw - c);
                    let src = row + (t.x0 as usize + j) * 3;
                    let dst = row + (b.x0 as usize + c) * 3;
                    raw.copy_within(src..src + n * 3, dst);
                    c += n;
                    j = 0;
                }
            }
        }
        Side::Below | Side::Above => {
            let th = t.height() as usize;
            let phase = match side {
                Side::Below => (th - bh % th) % th,
                _ => 0,
            };
            let (x0, x1) = (b.x0 as usize * 3, b.x1 as usize * 3);
            for r in 0..bh {
                let src = (t.y0 as usize + (r + phase) % th) * row_len;
                let dst = (b.y0 as usize + r) * row_len;
                raw.copy_within(src + x0..src + x1, dst + x0);
            }
        }
    }
}

#[cfg(test)]
mod tests;
