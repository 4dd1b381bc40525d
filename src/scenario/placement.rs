//! Corner Cases / Hard-Spurious-ImageNet placement scenarios (docs/corner-cases.md): the object's
//! box cut out of the frame, resized, and pasted at the centre or in a corner of a background with
//! the object removed — the frame's own or another frame's.
//!
//! # Keys
//! `placement/<background>/<position>/<size>` (the paper's square patch,
//! docs/corner-cases.md#composition) and `placement/ar/<background>/<position>/<size>` (the
//! aspect-ratio-preserving variant, docs/corner-cases.md#aspect-ratio-preserving-variant):
//! * `<background>`: `own-gray` — the frame itself with every object box filled with gray
//!   ([`GRAY`]); `own-tile` — the frame itself with every object box filled by the tile method of
//!   Hard ImageNet's ablation (largest object-free adjacent strip, repeated; see `ablation.rs`);
//!   `other` — another frame's background from the stream's background pool (see [`super::pool`]:
//!   an earlier frame of another class, its object removed IN-9 `only_bg_t` style), resized to the
//!   frame's size (Pillow bicubic, a squash, as the reference resizes backgrounds to 224²).
//! * `<position>`: `centre`, `top-right` (the reference's default corner) or `random-corner` (one
//!   of top-left, top-right, bottom-left, bottom-right, drawn from the variant's [`RngKey`], as the
//!   reference's `--random`).
//! * `<size>`: 56, 84 or 112 (the patch side on a 224² canvas: 1/16, 9/64 and 1/4 of the area).
//!
//! Groups: `corner-cases` = the paper's four groups × three sizes (Group 1 own background + centre,
//! 2 own + corner, 3 other + centre, 4 other + corner, with `own-tile` standing in for the own
//! background), `corner-cases-ar` the same with the aspect ratio kept, `corner-cases-all` every key.
//!
//! # How a variant is made (docs/corner-cases.md#composition)
//! 1. The object box is the frame's **last** box (the reference crops `boxes[-1]`); a frame without
//!    boxes uses the tight box of its mask's non-zero pixels. No mask and no boxes:
//!    [`ScenarioError::NeedsMask`]; an empty mask: [`ScenarioError::Unsuitable`].
//! 2. The patch (the box's pixels, the object with its box background: a hard rectangular paste) is
//!    resized with Pillow's bicubic filter (Pillow's default, as the reference's `resize`), exactly
//!    as Pillow 13 does ([`crate::kernels::resample`]): to s×s, or for the `ar` variant to
//!    [`ar_patch_size`] (short side s, long side capped).
//! 3. It is pasted on the background: centre at `top = max(0, H/2 − oh/2)`,
//!    `left = max(0, W/2 − ow/2)` (integer halves; a patch larger than the canvas is centre-cropped
//!    as the reference does), corners flush with the canvas edges, the patch cut at the far edges.
//!
//! # Generalised geometry and deliberate differences
//! * The reference's canvas is 224×224. Here the canvas is the frame at the scenario stage (224² at
//!   the default model-input stage, where everything is exactly the reference's geometry). On an
//!   H×W canvas every length scales with the shorter side: `s' = round(s·min(H, W)/224)` (halves
//!   up, at least 1) and the `ar` cap is `min(H, W)` (224 on the reference canvas).
//! * **Object removal**: the reference inpaints every box's SAM mask (dilated by 15 px) with LaMa
//!   (docs/corner-cases.md#inputs-boxes-and-inpainted-backgrounds). Inpainting models are not
//!   available here, so the own background is the frame with every object box filled with gray
//!   (`own-gray`) or with the tile method (`own-tile`, the textured stand-in used for the paper's
//!   groups). Both remove the whole box, not only the object's silhouette. Tiles are trimmed at any
//!   pixel inside a box or in the mask, so they never copy object pixels.
//! * **Other background**: the reference picks an image of another class (with a bug that can pick
//!   the own class, docs/corner-cases.md#composition, step 6); we pick uniformly among the pool's
//!   earlier frames of another class (any earlier frame when the frame's class is unknown). While
//!   the pool has none the scenario reports [`ScenarioError::Unsuitable`] starting with "background
//!   pool warming up" and the frame is skipped for it; `robustream apply` and `preview` draw from
//!   the backgrounds given with `--background` (without any: [`ScenarioError::NoPool`]).
//! * The reference saves its composites as OpenCV JPEGs; we hand the pixels to the model as they
//!   are (the u8 round trip `x/255·255 → astype(uint8)` is exact for every u8 value, checked).

use std::cell::RefCell;
use std::sync::Arc;

use image::RgbImage;
use rand::RngExt;

use super::ablation::{GRAY, fill_box, tile_fill};
use super::{CatalogEntry, RngKey, Scenario, ScenarioError, ScenarioInput};
use crate::frame::BBox;
use crate::geometry::{box_mask, tight_box};
use crate::kernels::resample::{Filter, Resampler};
use crate::key::ScenarioKey;

/// Object sizes on the reference's 224×224 canvas (docs/corner-cases.md#composition).
const SIZES: [u32; 3] = [56, 84, 112];
/// The reference's canvas side.
const CANVAS: u32 = 224;

/// What the patch is pasted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Background {
    /// The frame with its object boxes filled with [`GRAY`] (`own-gray`).
    OwnGray,
    /// The frame with its object boxes tile-filled (`own-tile`).
    OwnTile,
    /// Another frame's background from the stream's pool (`other`).
    Other,
}

impl Background {
    /// All, in key order.
    const ALL: [Background; 3] = [Background::OwnGray, Background::OwnTile, Background::Other];

    /// The key segment.
    fn name(self) -> &'static str {
        match self {
            Background::OwnGray => "own-gray",
            Background::OwnTile => "own-tile",
            Background::Other => "other",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Background::OwnGray => "the frame's own background (object boxes gray)",
            Background::OwnTile => "the frame's own background (object boxes tile-filled)",
            Background::Other => "an earlier frame's background of another class",
        }
    }
}

/// Where the patch goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// Centred (`centre`).
    Centre,
    /// The top-right corner (`top-right`, the reference's default corner).
    TopRight,
    /// A corner drawn from the variant's key (`random-corner`).
    RandomCorner,
}

impl Position {
    /// All, in key order.
    const ALL: [Position; 3] = [Position::Centre, Position::TopRight, Position::RandomCorner];

    /// The key segment.
    fn name(self) -> &'static str {
        match self {
            Position::Centre => "centre",
            Position::TopRight => "top-right",
            Position::RandomCorner => "random-corner",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Position::Centre => "at the centre",
            Position::TopRight => "in the top-right corner",
            Position::RandomCorner => "in a random corner",
        }
    }
}

/// A canvas corner, in the order the reference's `random.choice` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Corner {
    /// Rows from 0, columns from 0.
    TopLeft,
    /// Rows from 0, columns ending at the right edge.
    TopRight,
    /// Rows ending at the bottom edge, columns from 0.
    BottomLeft,
    /// Rows and columns ending at the bottom-right edges.
    BottomRight,
}

impl Corner {
    /// The four corners in the reference's order (`['top-left', 'top-right', 'bottom-left',
    /// 'bottom-right']`).
    const ALL: [Corner; 4] = [
        Corner::TopLeft,
        Corner::TopRight,
        Corner::BottomLeft,
        Corner::BottomRight,
    ];
}

/// Where a patch lands: `width × height` pixels from patch `(src_x, src_y)` to canvas
/// `(dst_x, dst_y)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paste {
    /// First canvas column.
    pub dst_x: u32,
    /// First canvas row.
    pub dst_y: u32,
    /// First patch column.
    pub(crate) src_x: u32,
    /// First patch row.
    pub(crate) src_y: u32,
    /// Columns copied.
    pub width: u32,
    /// Rows copied.
    pub height: u32,
}

/// One axis of the centre placement (docs/corner-cases.md#composition, step 4): canvas start
/// `max(0, c/2 − o/2)`, patch start `max(0, o/2 − c/2)`, length `min(o, c)` (a patch longer than
/// the canvas is cut symmetrically, up to the odd pixel).
fn centre_axis(canvas: u32, object: u32) -> (u32, u32, u32) {
    let offset = i64::from(canvas / 2) - i64::from(object / 2);
    let dst = offset.max(0) as u32;
    let src = (-offset).max(0) as u32;
    let len = (canvas - dst).min(object - src.min(object));
    (dst, src, len)
}

/// The centre placement of an `ow × oh` patch on a `cw × ch` canvas
/// (docs/corner-cases.md#composition, step 4).
///
/// ```
/// use robustream::scenario::placement::{centre_paste, Paste};
/// let p = centre_paste(224, 224, 84, 56);
/// assert_eq!((p.dst_x, p.dst_y, p.width, p.height), (70, 84, 84, 56));
/// ```
pub fn centre_paste(cw: u32, ch: u32, ow: u32, oh: u32) -> Paste {
    let (dst_x, src_x, width) = centre_axis(cw, ow);
    let (dst_y, src_y, height) = centre_axis(ch, oh);
    Paste {
        dst_x,
        dst_y,
        src_x,
        src_y,
        width,
        height,
    }
}

/// A corner placement of an `ow × oh` patch on a `cw × ch` canvas
/// (docs/corner-cases.md#composition, step 5): flush with the corner's edges (start `max(0, c − o)`
/// on a far edge), the patch's top-left part kept where it does not fit.
fn corner_paste(corner: Corner, cw: u32, ch: u32, ow: u32, oh: u32) -> Paste {
    let far = |c: u32, o: u32| c.saturating_sub(o);
    let (dst_x, dst_y) = match corner {
        Corner::TopLeft => (0, 0),
        Corner::TopRight => (far(cw, ow), 0),
        Corner::BottomLeft => (0, far(ch, oh)),
        Corner::BottomRight => (far(cw, ow), far(ch, oh)),
    };
    Paste {
        dst_x,
        dst_y,
        src_x: 0,
        src_y: 0,
        width: ow.min(cw - dst_x),
        height: oh.min(ch - dst_y),
    }
}

/// Copies the `paste` rectangle of `patch` into `canvas`.
fn paste(canvas: &mut RgbImage, patch: &RgbImage, p: Paste) {
    let cw = canvas.width() as usize * 3;
    let pw = patch.width() as usize * 3;
    let n = p.width as usize * 3;
    let dst: &mut [u8] = canvas;
    for r in 0..p.height as usize {
        let d = (p.dst_y as usize + r) * cw + p.dst_x as usize * 3;
        let s = (p.src_y as usize + r) * pw + p.src_x as usize * 3;
        dst[d..d + n].copy_from_slice(&patch.as_raw()[s..s + n]);
    }
}

/// A reference length `s` (for the 224² canvas) on a `width × height` canvas:
/// `round(s·min(width, height)/224)`, halves up, at least 1. Exactly `s` at 224².
fn scaled_size(s: u32, width: u32, height: u32) -> u32 {
    let short = u64::from(width.min(height));
    let v = (u64::from(s) * short + u64::from(CANVAS / 2)) / u64::from(CANVAS);
    v.max(1) as u32
}

/// The aspect-ratio-preserving patch size of a `pw × ph` box for size `s` and cap `cap`
/// (docs/corner-cases.md#aspect-ratio-preserving-variant, `resize_short_side_safe_pil`):
/// `scale = s / min(pw, ph)`, size `(trunc(pw·scale), trunc(ph·scale))`; if the longer side then
/// exceeds `cap`, both are multiplied by `cap / longer` and truncated again (the short side ends
/// below `s`). All in `f64` as Python does. `None` when a side ends at 0 (the reference's resize
/// fails there and skips the image).
///
/// ```
/// use robustream::scenario::placement::ar_patch_size;
/// assert_eq!(ar_patch_size(150, 100, 112, 224), Some((168, 112)));
/// assert_eq!(ar_patch_size(100, 20, 56, 224), Some((224, 44))); // capped
/// ```
pub fn ar_patch_size(pw: u32, ph: u32, s: u32, cap: u32) -> Option<(u32, u32)> {
    if pw == 0 || ph == 0 {
        return None;
    }
    let scale = f64::from(s) / f64::from(pw.min(ph));
    let (mut w, mut h) = (
        (f64::from(pw) * scale) as u64,
        (f64::from(ph) * scale) as u64,
    );
    let long = w.max(h);
    if long > u64::from(cap) {
        let scale = f64::from(cap) / long as f64;
        w = (w as f64 * scale) as u64;
        h = (h as f64 * scale) as u64;
    }
    (w > 0 && h > 0).then_some((w as u32, h as u32))
}

thread_local! {
    /// One resampler per thread: coefficient tables and the intermediate buffer are reused.
    static RESAMPLER: RefCell<Resampler> = RefCell::new(Resampler::new());
}

/// Pillow-exact bicubic resize of `src` to `width × height` (an unchanged size is a copy).
fn bicubic(src: &RgbImage, width: u32, height: u32) -> RgbImage {
    RESAMPLER.with(|r| {
        r.borrow_mut()
            .resize_rgb(src, width, height, Filter::Bicubic)
    })
}

/// A Corner Cases placement scenario (module doc).
#[derive(Debug, Clone)]
struct Placement {
    key: String,
    background: Background,
    position: Position,
    size: u32,
    keep_aspect: bool,
}

impl Placement {
    /// The scenario for these choices; `size` must be one of [`SIZES`].
    fn new(
        background: Background,
        position: Position,
        size: u32,
        keep_aspect: bool,
    ) -> Option<Self> {
        SIZES.contains(&size).then(|| Self {
            key: key(background, position, size, keep_aspect),
            background,
            position,
            size,
            keep_aspect,
        })
    }

    /// Parses `placement/[ar/]<background>/<position>/<size>`.
    #[cfg(test)]
    fn from_key(key: &str) -> Option<Self> {
        Self::from_parsed(ScenarioKey::parse(key))
    }

    /// The scenario of a parsed key: a known background and position and one of [`SIZES`];
    /// `None` otherwise.
    fn from_parsed(key: ScenarioKey<'_>) -> Option<Self> {
        let ScenarioKey::Placement {
            keep_aspect,
            background: bg,
            position: pos,
            size,
        } = key
        else {
            return None;
        };
        let background = *Background::ALL.iter().find(|b| b.name() == bg)?;
        let position = *Position::ALL.iter().find(|p| p.name() == pos)?;
        let size = *SIZES.iter().find(|s| s.to_string() == size)?;
        Self::new(background, position, size, keep_aspect)
    }

    fn unsuitable(&self, reason: impl Into<String>) -> ScenarioError {
        ScenarioError::Unsuitable {
            key: self.key.clone(),
            reason: reason.into(),
        }
    }

    /// The object boxes of the input (clipped, non-empty): its boxes, or the tight box of its mask.
    fn object_boxes(&self, input: &ScenarioInput<'_>) -> Result<Vec<BBox>, ScenarioError> {
        let (w, h) = input.image.dimensions();
        if !input.boxes.is_empty() {
            let boxes: Vec<BBox> = input.boxes.iter().filter_map(|b| b.clip(w, h)).collect();
            if boxes.is_empty() {
                return Err(self.unsuitable("every object box lies outside the frame"));
            }
            return Ok(boxes);
        }
        let mask = input
            .mask
            .ok_or_else(|| ScenarioError::NeedsMask(self.key.clone()))?;
        if mask.dimensions() != (w, h) {
            return Err(self.unsuitable(format!(
                "the mask is {}×{} but the image is {w}×{h}",
                mask.width(),
                mask.height()
            )));
        }
        tight_box(mask)
            .map(|b| vec![b])
            .ok_or_else(|| self.unsuitable("the mask is empty: no object in this frame"))
    }

    /// The frame with its object boxes removed (own backgrounds).
    fn own_background(&self, input: &ScenarioInput<'_>, boxes: &[BBox]) -> RgbImage {
        let mut bg = input.image.clone();
        match self.background {
            Background::OwnTile => {
                let (w, h) = bg.dimensions();
                let mut object = box_mask(w, h, boxes);
                if let Some(m) = input.mask.filter(|m| m.dimensions() == (w, h)) {
                    for (o, &v) in object.iter_mut().zip(m.as_raw()) {
                        *o |= v;
                    }
                }
                tile_fill(&mut bg, &object, boxes);
            }
            _ => {
                for &b in boxes {
                    fill_box(&mut bg, b, GRAY);
                }
            }
        }
        bg
    }

    /// Another frame's background from the pool, at the canvas size.
    fn other_background(
        &self,
        input: &ScenarioInput<'_>,
        rng: RngKey,
    ) -> Result<RgbImage, ScenarioError> {
        const WARMING: &str = "background pool warming up";
        let Some(pool) = input.pool else {
            return Err(ScenarioError::NoPool {
                key: self.key.clone(),
                what: "backgrounds",
            });
        };
        let own = input.truth.map(|t| t.0);
        let mut candidates: Vec<_> = pool
            .all()
            .filter(|e| own.is_none() || e.class != own)
            .collect();
        let mut r = rng.stream(1);
        while !candidates.is_empty() {
            let entry = candidates.swap_remove(r.random_range(0..candidates.len()));
            if let Some(bg) = entry.background() {
                let (w, h) = input.image.dimensions();
                return Ok(if bg.dimensions() == (w, h) {
                    (*bg).clone()
                } else {
                    bicubic(&bg, w, h)
                });
            }
        }
        Err(self.unsuitable(format!(
            "{WARMING}: no earlier frame of another class with a background yet"
        )))
    }
}

/// The key of one placement scenario.
fn key(background: Background, position: Position, size: u32, keep_aspect: bool) -> String {
    ScenarioKey::Placement {
        keep_aspect,
        background: background.name(),
        position: position.name(),
        size: &size.to_string(),
    }
    .to_string()
}

impl Scenario for Placement {
    fn key(&self) -> &str {
        &self.key
    }

    fn uses_pool(&self) -> bool {
        self.background == Background::Other
    }

    fn apply(&self, input: &ScenarioInput<'_>, rng: RngKey) -> Result<RgbImage, ScenarioError> {
        let (w, h) = input.image.dimensions();
        let boxes = self.object_boxes(input)?;
        let b = *boxes.last().expect("object_boxes is never empty");
        let s = scaled_size(self.size, w, h);
        let (pw, ph) = if self.keep_aspect {
            ar_patch_size(b.width(), b.height(), s, w.min(h)).ok_or_else(|| {
                self.unsuitable(format!(
                    "the object box ({}×{}) is too thin to resize with its aspect ratio kept",
                    b.width(),
                    b.height()
                ))
            })?
        } else {
            (s, s)
        };
        let mut canvas = match self.background {
            Background::Other => self.other_background(input, rng)?,
            _ => self.own_background(input, &boxes),
        };
        let crop =
            image::imageops::crop_imm(input.image, b.x0, b.y0, b.width(), b.height()).to_image();
        let patch = bicubic(&crop, pw, ph);
        let at = match self.position {
            Position::Centre => centre_paste(w, h, pw, ph),
            Position::TopRight => corner_paste(Corner::TopRight, w, h, pw, ph),
            Position::RandomCorner => {
                let corner = Corner::ALL[rng.stream(0).random_range(0..Corner::ALL.len())];
                corner_paste(corner, w, h, pw, ph)
            }
        };
        paste(&mut canvas, &patch, at);
        Ok(canvas)
    }
}

/// Builds the `placement/...` scenario of a parsed key; `None` for other families and invalid
/// parameters.
pub(crate) fn build_key(key: ScenarioKey<'_>) -> Option<Arc<dyn Scenario>> {
    Placement::from_parsed(key).map(|s| Arc::new(s) as Arc<dyn Scenario>)
}

/// The paper's four groups for one size: (background, position) of Group 1..4
/// (docs/corner-cases.md#composition step 7), with `own-tile` for the inpainted own background.
const PAPER_GROUPS: [(Background, Position); 4] = [
    (Background::OwnTile, Position::Centre),
    (Background::OwnTile, Position::TopRight),
    (Background::Other, Position::Centre),
    (Background::Other, Position::TopRight),
];

/// The catalogue entries: every key (square, then `ar`; background, position, size), and the groups
/// `corner-cases`, `corner-cases-ar`, `corner-cases-all`.
pub(crate) fn catalog() -> (Vec<CatalogEntry>, Vec<CatalogEntry>) {
    let mut keys = Vec::new();
    for keep_aspect in [false, true] {
        for bg in Background::ALL {
            for pos in Position::ALL {
                for size in SIZES {
                    let shape = if keep_aspect {
                        format!("short side {size}, aspect ratio kept")
                    } else {
                        format!("{size}×{size}")
                    };
                    keys.push(CatalogEntry {
                        name: key(bg, pos, size, keep_aspect),
                        description: format!(
                            "object box resized to {shape} (on 224²), pasted {} of {} \
                             (Corner Cases, docs/corner-cases.md#composition)",
                            pos.describe(),
                            bg.describe()
                        ),
                        members: Vec::new(),
                    });
                }
            }
        }
    }
    let paper = |keep_aspect: bool| -> Vec<String> {
        SIZES
            .iter()
            .flat_map(|&size| {
                PAPER_GROUPS
                    .iter()
                    .map(move |&(bg, pos)| key(bg, pos, size, keep_aspect))
            })
            .collect()
    };
    let groups = vec![
        CatalogEntry {
            name: "corner-cases".into(),
            description: "Corner Cases groups 1-4 (own/other background × centre/top-right) at 56, 84, 112 (needs boxes or masks)".into(),
            members: paper(false),
        },
        CatalogEntry {
            name: "corner-cases-ar".into(),
            description: "corner-cases with the object's aspect ratio kept".into(),
            members: paper(true),
        },
        CatalogEntry {
            name: "corner-cases-all".into(),
            description: "every placement: own-gray/own-tile/other × centre/top-right/random-corner × 56/84/112, square and aspect-kept".into(),
            members: keys.iter().map(|k| k.name.clone()).collect(),
        },
    ];
    (keys, groups)
}

#[cfg(test)]
mod tests;
