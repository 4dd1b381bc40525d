//! `robustream preview`: a labelled contact sheet of scenarios applied to one image — the picture
//! users look at first.
//!
//! Rows are scenario families (a key minus its last segment: `corruption/fog/3` → row
//! `corruption/fog`), columns the clean input followed by the family's members (severities `1..5`
//! sorted by number, or leaf names such as a future `background/only_fg`, in catalogue order). Row
//! labels sit on the left, column headers on top, a title line names the image, the stage and the seed.
//! With a mask, a panel in the top-left corner shows the scenario input with the mask's boundary drawn
//! in a colour that contrasts with the image there.
//!
//! Every tile is exactly what `robustream apply` writes for that key, seed and frame id (the same
//! [`RngKey`], the same stage geometry, docs/imagenet-c.md#how-imagenet-c-was-made for the model
//! view), then scaled into the tile by [`scale_to_tile`]. Variants are computed in parallel (rayon,
//! one per key); each is a pure function of its key, so the sheet is the same whatever the thread
//! count. A scenario that fails for this image is drawn as a grey tile with a short reason; the
//! sheet is still written and the failure is returned for the caller to warn about.
//!
//! Text uses the public-domain 8×8 bitmap font of the `font8x8` crate, drawn at ×2 for labels and
//! headers and ×1 for secondary lines (the text renderer: `preview/text.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use image::{GrayImage, RgbImage};
use rayon::prelude::*;

use crate::frame::BBox;
use crate::geometry::stage_boxes;
use crate::kernels::resample::{Filter, Resampler};
use crate::key::CLEAN;
use crate::model::ModelDesc;
use crate::rng::RngKey;
use crate::scenario::ScenarioStage;
use crate::scenario::{
    Catalog, Plan, Scenario, ScenarioError, ScenarioInput, StageMasks, needs_bilinear_mask,
};
use crate::view::ModelView;

mod text;

use text::draw_centred;
pub use text::{draw_text, fit_text, glyph, text_width, wrap};

/// Default tile size in pixels (the longer side of each scaled variant).
pub const DEFAULT_TILE: u32 = 160;
/// Blank border around the whole sheet, in pixels.
pub const MARGIN: u32 = 12;
/// Space between neighbouring tiles (horizontally and vertically), in pixels.
pub const GAP: u32 = 4;
/// Space between the label band and the first column, in pixels.
pub const LABEL_PAD: u32 = 8;
/// Space below the title line and below the mask panel, in pixels.
pub const BAND_GAP: u32 = 8;
/// Width and height of one glyph of the bitmap font at scale 1, in pixels.
const GLYPH: u32 = 8;
/// Scale of the title, labels and headers (16 px tall text).
const TEXT_SCALE: u32 = 2;
/// Height of the column-header band, in pixels: ×2 text and 4 px to the tiles.
pub const HEADER_H: u32 = GLYPH * TEXT_SCALE + 4;
/// Height of a row's own caption band (×1 text and 4 px), drawn above rows whose columns differ
/// from the headers on top.
const CAPTION_H: u32 = GLYPH + 4;
/// Narrowest label band, in pixels.
const MIN_LABEL_W: u32 = 64;
/// Widest label band, in pixels (longer labels drop to ×1 text or are shortened with `..`).
const MAX_LABEL_W: u32 = 320;

/// Sheet background.
pub const BACKGROUND: [u8; 3] = [248, 248, 246];
/// Colour of labels, headers and the title.
const INK: [u8; 3] = [24, 24, 24];
/// Colour of secondary text (family prefixes, captions).
const MUTED: [u8; 3] = [112, 112, 112];
/// The part of a tile a non-square variant leaves uncovered.
pub const LETTERBOX: [u8; 3] = [226, 226, 226];
/// Fill of the tile of a scenario that failed for this image.
pub const FAILED: [u8; 3] = [168, 168, 168];
/// Candidate colours of the mask outline; the one furthest from the image under the outline wins.
const OUTLINE_COLOURS: [[u8; 3]; 4] = [[255, 0, 255], [0, 255, 0], [0, 255, 255], [255, 255, 0]];

/// One column of a row: its header and the scenario key drawn there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Header text (`clean`, a severity such as `3`, or a leaf name such as `only_fg`).
    pub header: String,
    /// Scenario key of the tile (`clean`, `corruption/fog/3`).
    pub key: String,
}

/// One row of the sheet: a family of scenarios.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The family (`corruption/fog`), or `clean` for a sheet of the clean input alone.
    pub label: String,
    /// Its cells left to right, `clean` first; `None` leaves a cell empty (a severity this row does
    /// not have, so that equal severities share a column).
    pub columns: Vec<Option<Column>>,
    /// The scenario family (first key segment, e.g. `corruption`) whose shared numbered columns this
    /// row sits on; `None` for a row packed left.
    pub(crate) shared: Option<String>,
}

/// Most columns of a packed row (`clean` and seven members); longer families continue on further
/// rows with the same label, each starting with `clean` again.
const MAX_PACKED_COLUMNS: usize = 8;

/// Groups scenario keys into rows: one row per parent (the key minus its last segment), in order of
/// first appearance; each row starts with a `clean` column. Rows of one family (first key segment)
/// whose members are all severity-like (all digits) share numbered columns: the union of their
/// numbers in numeric order, so `corruption/pixelate/5` sits under the same `5` as
/// `corruption/fog/5` and missing severities leave empty cells. Other rows (leaf names such as
/// `background/only_fg`) are packed left in the order given (catalogue order, for expanded groups),
/// numbered members first, at most [`MAX_PACKED_COLUMNS`] columns a row. `clean` itself is not a row
/// unless it is the only key; keys without a `/` other than `clean` share one row labelled `other`.
/// Duplicates are ignored.
///
/// ```
/// use robustream::app::preview::grid;
/// let rows = grid(&["clean", "corruption/fog/2", "corruption/fog/1", "corruption/snow/2"]);
/// assert_eq!(rows.len(), 2);
/// assert_eq!(rows[0].label, "corruption/fog");
/// let headers = |r: usize| -> Vec<Option<String>> {
///     rows[r].columns.iter().map(|c| c.as_ref().map(|c| c.header.clone())).collect()
/// };
/// assert_eq!(headers(0), [Some("clean".into()), Some("1".into()), Some("2".into())]);
/// assert_eq!(headers(1), [Some("clean".into()), None, Some("2".into())]);
/// ```
pub fn grid<S: AsRef<str>>(keys: &[S]) -> Vec<Row> {
    let mut families: Vec<(String, Vec<String>)> = Vec::new();
    let mut any_clean = false;
    for key in keys {
        let key = key.as_ref();
        if key == CLEAN {
            any_clean = true;
            continue;
        }
        let (parent, leaf) = match key.rsplit_once('/') {
            Some((p, l)) => (p.to_string(), l.to_string()),
            None => ("other".to_string(), key.to_string()),
        };
        let i = match families.iter().position(|(p, _)| *p == parent) {
            Some(i) => i,
            None => {
                families.push((parent, Vec::new()));
                families.len() - 1
            }
        };
        if !families[i].1.contains(&leaf) {
            families[i].1.push(leaf);
        }
    }
    if families.is_empty() {
        return if any_clean {
            vec![Row {
                label: CLEAN.into(),
                columns: vec![Some(clean_column())],
                shared: None,
            }]
        } else {
            Vec::new()
        };
    }
    let numbered = |leaves: &[String]| leaves.iter().all(|l| severity(l).is_some());
    // The shared numbered columns of each scenario family (first key segment: `corruption`,
    // `placement`): every number of its all-numbered rows, in order. Severities 1..5 and object
    // sizes 56/84/112 never share columns.
    let family = |parent: &str| crate::key::family(parent).to_string();
    let mut shared: HashMap<String, Vec<u64>> = HashMap::new();
    for (parent, leaves) in &families {
        if numbered(leaves) {
            let numbers = shared.entry(family(parent)).or_default();
            numbers.extend(leaves.iter().filter_map(|l| severity(l)));
            numbers.sort_unstable();
            numbers.dedup();
        }
    }
    let mut rows = Vec::new();
    for (parent, mut leaves) in families {
        let column = |leaf: String| Column {
            key: if parent == "other" {
                leaf.clone()
            } else {
                format!("{parent}/{leaf}")
            },
            header: leaf,
        };
        let fam = family(&parent);
        if let Some(severities) = shared.get(&fam).filter(|_| numbered(&leaves)) {
            let mut columns = vec![None; 1 + severities.len()];
            columns[0] = Some(clean_column());
            for leaf in leaves {
                if let Some(i) = severity(&leaf).and_then(|n| severities.binary_search(&n).ok()) {
                    columns[1 + i] = Some(column(leaf));
                }
            }
            rows.push(Row {
                label: parent.clone(),
                columns,
                shared: Some(fam),
            });
        } else {
            // Numbered members first, by number; the rest keep their order (stable sort).
            leaves.sort_by_key(|l| match severity(l) {
                Some(n) => (0, n),
                None => (1, 0),
            });
            for chunk in leaves.chunks(MAX_PACKED_COLUMNS - 1) {
                let mut columns = vec![Some(clean_column())];
                columns.extend(chunk.iter().map(|l| Some(column(l.clone()))));
                rows.push(Row {
                    label: parent.clone(),
                    columns,
                    shared: None,
                });
            }
        }
    }
    rows
}

fn clean_column() -> Column {
    Column {
        header: CLEAN.into(),
        key: CLEAN.into(),
    }
}

/// A severity-like last segment: all ASCII digits.
fn severity(leaf: &str) -> Option<u64> {
    if leaf.is_empty() || !leaf.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    leaf.parse().ok()
}

/// A rectangle of the sheet, in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    /// Left column.
    pub x: u32,
    /// Top row.
    pub y: u32,
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
}

impl Rect {
    fn right(&self) -> u32 {
        self.x + self.width
    }

    fn bottom(&self) -> u32 {
        self.y + self.height
    }
}

/// Where everything goes on the sheet. From the top: [`MARGIN`], the title line (×2 text), [`BAND_GAP`],
/// the mask panel (one tile, when a mask or boxes are given) and [`BAND_GAP`], the header band ([`HEADER_H`]),
/// then the rows, [`GAP`] apart, each preceded by a [`CAPTION_H`] caption band when its headers differ
/// from those on top, and [`MARGIN`]. From the left: [`MARGIN`], the label band, [`LABEL_PAD`], the
/// columns ([`GAP`] apart), [`MARGIN`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    /// Sheet width in pixels.
    pub width: u32,
    /// Sheet height in pixels.
    pub height: u32,
    /// Tile size in pixels.
    pub(crate) tile: u32,
    /// Width of the label band in pixels.
    pub label_width: u32,
    /// Number of columns (the longest row's).
    pub(crate) columns: u32,
    /// The title line.
    pub title: Rect,
    /// The mask panel's tile (in the first column): the input with the mask outline and the boxes,
    /// when there are any.
    pub mask_panel: Option<Rect>,
    /// Headers drawn on top: the first row's, completed where it has empty cells from rows on the same
    /// shared numbered columns; empty where no such row has a cell.
    pub(crate) headers: Vec<String>,
    header_y: u32,
    grid_x: u32,
    row_tops: Vec<u32>,
    captions: Vec<bool>,
}

impl Geometry {
    /// Lays out `rows` with square tiles of `tile` pixels, with or without a mask panel.
    pub fn new(rows: &[Row], tile: u32, mask_panel: bool) -> Self {
        let columns = rows
            .iter()
            .map(|r| r.columns.len())
            .max()
            .unwrap_or(1)
            .max(1) as u32;
        let mut label_needed = text_width("mask", TEXT_SCALE);
        for r in rows {
            let (prefix, name) = split_label(&r.label);
            label_needed = label_needed
                .max(text_width(name, TEXT_SCALE))
                .max(text_width(prefix, 1));
        }
        let label_width = label_needed.clamp(MIN_LABEL_W, MAX_LABEL_W);
        let grid_x = MARGIN + label_width + LABEL_PAD;
        let width = grid_x + columns * tile + (columns - 1) * GAP + MARGIN;

        let mut y = MARGIN;
        let title = Rect {
            x: MARGIN,
            y,
            width: width - 2 * MARGIN,
            height: GLYPH * TEXT_SCALE,
        };
        y += title.height + BAND_GAP;
        let mask_panel = mask_panel.then(|| {
            let r = Rect {
                x: grid_x,
                y,
                width: tile,
                height: tile,
            };
            y += tile + BAND_GAP;
            r
        });
        // The headers on top are the first row's, completed (where it has empty cells) from rows on
        // the same shared numbered columns; other rows whose headers differ get captions.
        let alike = |r: &Row| {
            std::ptr::eq(r, &rows[0]) || (r.shared.is_some() && r.shared == rows[0].shared)
        };
        let headers: Vec<String> = (0..columns as usize)
            .map(|i| {
                rows.iter()
                    .filter(|r| alike(r))
                    .find_map(|r| r.columns.get(i).and_then(|c| c.as_ref()))
                    .map(|c| c.header.clone())
                    .unwrap_or_default()
            })
            .collect();
        let header_y = y;
        y += HEADER_H;
        let mut row_tops = Vec::with_capacity(rows.len());
        let mut captions = Vec::with_capacity(rows.len());
        for (i, r) in rows.iter().enumerate() {
            if i > 0 {
                y += GAP;
            }
            let differs = r
                .columns
                .iter()
                .zip(&headers)
                .any(|(c, h)| c.as_ref().is_some_and(|c| c.header != *h));
            if differs {
                y += CAPTION_H;
            }
            captions.push(differs);
            row_tops.push(y);
            y += tile;
        }
        Self {
            width,
            height: y + MARGIN,
            tile,
            label_width,
            columns,
            title,
            mask_panel,
            headers,
            header_y,
            grid_x,
            row_tops,
            captions,
        }
    }

    /// The tile of `row`, `column`.
    pub fn cell(&self, row: usize, column: usize) -> Rect {
        Rect {
            x: self.grid_x + column as u32 * (self.tile + GAP),
            y: self.row_tops[row],
            width: self.tile,
            height: self.tile,
        }
    }

    /// The label band beside `row`'s tiles.
    pub fn label(&self, row: usize) -> Rect {
        Rect {
            x: MARGIN,
            y: self.row_tops[row],
            width: self.label_width,
            height: self.tile,
        }
    }

    /// The header above `column`.
    pub fn header(&self, column: usize) -> Rect {
        Rect {
            x: self.grid_x + column as u32 * (self.tile + GAP),
            y: self.header_y,
            width: self.tile,
            height: GLYPH * TEXT_SCALE,
        }
    }

    /// The caption above `row`'s `column`, when the row's headers differ from those on top.
    fn caption(&self, row: usize, column: usize) -> Option<Rect> {
        self.captions[row].then(|| Rect {
            x: self.grid_x + column as u32 * (self.tile + GAP),
            y: self.row_tops[row] - CAPTION_H,
            width: self.tile,
            height: GLYPH,
        })
    }

    /// The label beside the mask panel.
    pub fn mask_label(&self) -> Option<Rect> {
        self.mask_panel.map(|p| Rect {
            x: MARGIN,
            y: p.y,
            width: self.label_width,
            height: p.height,
        })
    }
}

/// A row label's family prefix (with its trailing `/`, drawn small) and last segment (drawn large).
fn split_label(label: &str) -> (&str, &str) {
    match label.rfind('/') {
        Some(i) => (&label[..=i], &label[i + 1..]),
        None => ("", label),
    }
}

/// Size of a `width × height` image scaled to fit a `tile × tile` square with its aspect ratio kept:
/// the longer side becomes `tile`, the shorter one is rounded (half up) and at least 1. A zero-sized
/// image gives `(0, 0)`.
///
/// ```
/// use robustream::app::preview::fit;
/// assert_eq!(fit(224, 224, 160), (160, 160));
/// assert_eq!(fit(600, 400, 160), (160, 107)); // 106.67
/// assert_eq!(fit(1, 1000, 160), (1, 160));
/// ```
pub fn fit(width: u32, height: u32, tile: u32) -> (u32, u32) {
    if width == 0 || height == 0 {
        return (0, 0);
    }
    let (long, short) = (width.max(height) as u64, width.min(height) as u64);
    let scaled = ((short * tile as u64 + long / 2) / long).max(1) as u32;
    if width >= height {
        (tile, scaled)
    } else {
        (scaled, tile)
    }
}

/// `image` scaled to [`fit`] a `tile`-pixel square with Pillow-exact resampling
/// ([`crate::kernels::resample`]): `LANCZOS` when shrinking (sharp, antialiased, what one wants for judging
/// noise and blur), `NEAREST` when enlarging (small frames show their real pixels instead of invented
/// smoothness). An image that already fits exactly is returned as it is.
pub fn scale_to_tile(image: &RgbImage, tile: u32, resampler: &mut Resampler) -> RgbImage {
    let (w, h) = fit(image.width(), image.height(), tile);
    if (w, h) == image.dimensions() {
        return image.clone();
    }
    let filter = if w <= image.width() {
        Filter::Lanczos
    } else {
        Filter::Nearest
    };
    resampler.resize_rgb(image, w, h, filter)
}

/// Where a scaled image of `size` sits inside `cell`: centred, offsets rounded down.
pub fn placement(cell: Rect, size: (u32, u32)) -> Rect {
    let (w, h) = (size.0.min(cell.width), size.1.min(cell.height));
    Rect {
        x: cell.x + (cell.width - w) / 2,
        y: cell.y + (cell.height - h) / 2,
        width: w,
        height: h,
    }
}

fn fill(image: &mut RgbImage, r: Rect, colour: [u8; 3]) {
    let x1 = r.right().min(image.width());
    let y1 = r.bottom().min(image.height());
    for y in r.y..y1 {
        for x in r.x..x1 {
            image.put_pixel(x, y, image::Rgb(colour));
        }
    }
}

fn blit(image: &mut RgbImage, src: &RgbImage, at: Rect) {
    let c = 3usize;
    let w = src
        .width()
        .min(at.width)
        .min(image.width().saturating_sub(at.x)) as usize;
    let h = src
        .height()
        .min(at.height)
        .min(image.height().saturating_sub(at.y));
    let (sw, dw) = (src.width() as usize * c, image.width() as usize * c);
    let s = src.as_raw();
    let d: &mut [u8] = image;
    for y in 0..h as usize {
        let so = y * sw;
        let dof = (at.y as usize + y) * dw + at.x as usize * c;
        d[dof..dof + w * c].copy_from_slice(&s[so..so + w * c]);
    }
}

/// The inner band of a mask's boundary: foreground pixels (value > 0, as the scenarios read masks)
/// with a background pixel within
/// `thickness` pixels (Chebyshev distance, i.e. in the surrounding `(2t+1)²` square). Pixels outside
/// the image do not count as background, so a mask touching the border is not outlined along it; an
/// empty or full mask has no outline. Returned row-major, one flag per pixel.
///
/// Computed as foreground ∧ dilate(background) with a separable running count, `O(pixels)` whatever
/// the thickness.
fn mask_outline(mask: &GrayImage, thickness: u32) -> Vec<bool> {
    let (w, h) = (mask.width() as usize, mask.height() as usize);
    let t = thickness as usize;
    let bg: Vec<u32> = mask.as_raw().iter().map(|&v| u32::from(v == 0)).collect();
    // Horizontal pass: number of background pixels in [x − t, x + t] of the same row.
    let mut near = vec![0u32; w * h];
    for y in 0..h {
        let row = &bg[y * w..(y + 1) * w];
        let mut prefix = vec![0u32; w + 1];
        for x in 0..w {
            prefix[x + 1] = prefix[x] + row[x];
        }
        for x in 0..w {
            near[y * w + x] = prefix[(x + t + 1).min(w)] - prefix[x.saturating_sub(t)];
        }
    }
    // Vertical pass over the horizontal counts: any background pixel in the square.
    let mut out = vec![false; w * h];
    let mut prefix = vec![0u32; h + 1];
    for x in 0..w {
        for y in 0..h {
            prefix[y + 1] = prefix[y] + near[y * w + x];
        }
        for y in 0..h {
            let any_bg = prefix[(y + t + 1).min(h)] - prefix[y.saturating_sub(t)] > 0;
            out[y * w + x] = bg[y * w + x] == 0 && any_bg;
        }
    }
    out
}

/// The candidate of [`OUTLINE_COLOURS`] with the largest mean squared distance to the pixels of `image`
/// where `on` is set (all pixels when none is): the outline stands out against what it is drawn on.
/// Ties go to the earlier candidate.
fn contrasting_colour(image: &RgbImage, on: &[bool]) -> [u8; 3] {
    let any = on.iter().any(|&b| b);
    let mut sums = [0f64; OUTLINE_COLOURS.len()];
    for (px, &o) in image
        .pixels()
        .zip(on.iter().chain(std::iter::repeat(&false)))
    {
        if any && !o {
            continue;
        }
        for (sum, c) in sums.iter_mut().zip(OUTLINE_COLOURS) {
            *sum += (0..3)
                .map(|i| (f64::from(px[i]) - f64::from(c[i])).powi(2))
                .sum::<f64>();
        }
    }
    let mut best = 0;
    for i in 1..sums.len() {
        if sums[i] > sums[best] {
            best = i;
        }
    }
    OUTLINE_COLOURS[best]
}

/// The region panel: `image` scaled to the tile, with the outline of `mask` (same size as `image`,
/// scaled with Pillow `NEAREST`) and the edges of `boxes` (in `image`'s pixels) painted in a
/// [`contrasting_colour`]. Line thickness: 1 px, 2 px from 128 px tiles on.
fn region_panel(
    image: &RgbImage,
    mask: Option<&GrayImage>,
    boxes: &[BBox],
    tile: u32,
    resampler: &mut Resampler,
) -> RgbImage {
    let mut panel = scale_to_tile(image, tile, resampler);
    let (pw, ph) = panel.dimensions();
    let t = if tile >= 128 { 2 } else { 1 };
    let mut outline = match mask {
        Some(m) if m.dimensions() == (pw, ph) => mask_outline(m, t),
        Some(m) => mask_outline(&crate::kernels::resample::resize_gray_nearest(m, pw, ph), t),
        None => vec![false; pw as usize * ph as usize],
    };
    let (iw, ih) = (
        u64::from(image.width().max(1)),
        u64::from(image.height().max(1)),
    );
    for b in boxes {
        // The box's pixels scaled to the panel: starts rounded down, ends up.
        let scale = |v: u32, to: u32, from: u64, up: bool| {
            let num = u64::from(v) * u64::from(to);
            (if up { num.div_ceil(from) } else { num / from }).min(u64::from(to)) as u32
        };
        let (x0, x1) = (scale(b.x0, pw, iw, false), scale(b.x1, pw, iw, true));
        let (y0, y1) = (scale(b.y0, ph, ih, false), scale(b.y1, ph, ih, true));
        for y in y0..y1 {
            for x in x0..x1 {
                if x < x0 + t || x + t >= x1 || y < y0 + t || y + t >= y1 {
                    outline[(y * pw + x) as usize] = true;
                }
            }
        }
    }
    let colour = contrasting_colour(&panel, &outline);
    for (px, &o) in panel.pixels_mut().zip(&outline) {
        if o {
            *px = image::Rgb(colour);
        }
    }
    panel
}

/// What one key gave: its scaled tile, or why it failed.
#[derive(Debug, Clone)]
enum Tile {
    /// The variant scaled with [`scale_to_tile`].
    Image(RgbImage),
    /// The scenario could not apply to this image.
    Failed(ScenarioError),
}

/// Everything [`compose`] needs besides the pixels.
#[derive(Debug, Clone)]
struct SheetSpec {
    /// The rows (see [`grid`]).
    pub(crate) rows: Vec<Row>,
    /// The title line.
    pub(crate) title: String,
    /// Tile size in pixels.
    pub(crate) tile: u32,
    /// Run seed.
    pub(crate) seed: u64,
    /// Frame id keying the randomness.
    pub(crate) frame_id: String,
    /// With `stage = "native"` and a model: the model whose view each variant is brought to after the
    /// scenario (what the model sees); `None` shows the variants as the scenarios made them.
    pub(crate) view_after: Option<ModelDesc>,
}

/// A drawn sheet and the keys that failed.
#[derive(Debug)]
struct Composed {
    /// The contact sheet.
    pub(crate) sheet: RgbImage,
    /// Its geometry.
    pub(crate) geometry: Geometry,
    /// Keys that failed for this image, with the reason, in sheet order.
    pub(crate) failures: Vec<(String, ScenarioError)>,
}

/// Computes every tile of `spec` from `input` (in parallel, one task per distinct key) and draws the
/// sheet. `build` makes a scenario from its key (normally [`Catalog::build`]); an unknown key draws as
/// a failed tile.
fn compose(
    spec: &SheetSpec,
    input: &ScenarioInput<'_>,
    build: &(dyn Fn(&str) -> Option<Arc<dyn Scenario>> + Sync),
) -> Composed {
    let mut keys: Vec<&str> = Vec::new();
    for c in spec.rows.iter().flat_map(|r| r.columns.iter().flatten()) {
        if !keys.contains(&c.key.as_str()) {
            keys.push(&c.key);
        }
    }
    let tiles: Vec<Tile> = keys
        .par_iter()
        .map_init(
            || {
                (
                    Resampler::new(),
                    spec.view_after.as_ref().map(ModelView::new),
                )
            },
            |(resampler, view), key| {
                let Some(scenario) = build(key) else {
                    return Tile::Failed(ScenarioError::Unsuitable {
                        key: key.to_string(),
                        reason: "unknown scenario".into(),
                    });
                };
                let rng = RngKey::new(spec.seed, &spec.frame_id, scenario.rng_key());
                match scenario.apply(input, rng) {
                    Ok(variant) => {
                        let variant = match view {
                            Some(v) => v.image(&variant),
                            None => variant,
                        };
                        Tile::Image(scale_to_tile(&variant, spec.tile, resampler))
                    }
                    Err(e) => Tile::Failed(e),
                }
            },
        )
        .collect();
    let by_key: HashMap<&str, &Tile> = keys.iter().copied().zip(&tiles).collect();

    let regions = input.mask.is_some() || !input.boxes.is_empty();
    let geometry = Geometry::new(&spec.rows, spec.tile, regions);
    let mut sheet = RgbImage::from_pixel(geometry.width, geometry.height, image::Rgb(BACKGROUND));
    let (title, s) = fit_text(&spec.title, geometry.title.width, TEXT_SCALE);
    draw_text(
        &mut sheet,
        geometry.title.x,
        geometry.title.y,
        &title,
        s,
        INK,
        geometry.title,
    );
    if let (Some(panel), Some(label)) = (geometry.mask_panel, geometry.mask_label()) {
        let mut resampler = Resampler::new();
        let shown = region_panel(
            input.image,
            input.mask,
            input.boxes,
            spec.tile,
            &mut resampler,
        );
        fill(&mut sheet, panel, LETTERBOX);
        blit(&mut sheet, &shown, placement(panel, shown.dimensions()));
        let mut notes = Vec::new();
        if let Some(mask) = input.mask {
            let fg = mask.as_raw().iter().filter(|&&v| v > 0).count();
            let share = 100.0 * fg as f64 / mask.as_raw().len().max(1) as f64;
            notes.push(format!("{share:.0}% fg"));
        }
        if !input.boxes.is_empty() {
            let n = input.boxes.len();
            notes.push(format!("{n} box{}", if n == 1 { "" } else { "es" }));
        }
        let name = if input.mask.is_some() {
            "mask"
        } else {
            "boxes"
        };
        draw_label(&mut sheet, label, "input +", name, Some(&notes.join(", ")));
    }
    for (c, h) in geometry.headers.iter().enumerate() {
        draw_centred(&mut sheet, geometry.header(c), h, TEXT_SCALE, INK);
    }
    let mut failures = Vec::new();
    for (r, row) in spec.rows.iter().enumerate() {
        let (prefix, name) = split_label(&row.label);
        draw_label(&mut sheet, geometry.label(r), prefix, name, None);
        for (c, column) in row.columns.iter().enumerate() {
            let Some(column) = column else { continue };
            if let Some(cap) = geometry.caption(r, c) {
                draw_centred(&mut sheet, cap, &column.header, 1, MUTED);
            }
            let cell = geometry.cell(r, c);
            match by_key.get(column.key.as_str()) {
                Some(Tile::Image(img)) => {
                    fill(&mut sheet, cell, LETTERBOX);
                    blit(&mut sheet, img, placement(cell, img.dimensions()));
                }
                Some(Tile::Failed(e)) => {
                    draw_failed(&mut sheet, cell, e);
                    failures.push((column.key.clone(), e.clone()));
                }
                None => {}
            }
        }
    }
    Composed {
        sheet,
        geometry,
        failures,
    }
}

/// A row label: the family prefix small and muted, the name large, an optional small note below,
/// the block centred vertically in `r`.
fn draw_label(image: &mut RgbImage, r: Rect, prefix: &str, name: &str, note: Option<&str>) {
    let (mut name, mut ns) = fit_text(name, r.width, TEXT_SCALE);
    let mut prefix_h = if prefix.is_empty() { 0 } else { GLYPH + 2 };
    let mut note_h = if note.is_some() { GLYPH + 2 } else { 0 };
    // Small tiles: drop the note, then the prefix, then go to ×1 until the block fits the row.
    if prefix_h + GLYPH * ns + note_h > r.height {
        note_h = 0;
    }
    if prefix_h + GLYPH * ns > r.height {
        prefix_h = 0;
    }
    if GLYPH * ns > r.height && ns > 1 {
        (name, ns) = fit_text(&name, r.width, 1);
    }
    let block = prefix_h + GLYPH * ns + note_h;
    let mut y = r.y + r.height.saturating_sub(block) / 2;
    if prefix_h > 0 {
        let (p, _) = fit_text(prefix, r.width, 1);
        draw_text(image, r.x, y, &p, 1, MUTED, r);
        y += prefix_h;
    }
    draw_text(image, r.x, y, &name, ns, INK, r);
    y += GLYPH * ns + 2;
    if let (Some(note), true) = (note, note_h > 0) {
        let (n, _) = fit_text(note, r.width, 1);
        draw_text(image, r.x, y, &n, 1, MUTED, r);
    }
}

/// A grey tile saying `failed` and why, in ×1 text wrapped to the tile.
fn draw_failed(image: &mut RgbImage, cell: Rect, e: &ScenarioError) {
    fill(image, cell, FAILED);
    let inner = Rect {
        x: cell.x + 4,
        y: cell.y + 4,
        width: cell.width.saturating_sub(8),
        height: cell.height.saturating_sub(8),
    };
    draw_text(image, inner.x, inner.y, "failed:", 1, INK, inner);
    let lines = wrap(
        &short_reason(e),
        (inner.width / GLYPH) as usize,
        (inner.height / (GLYPH + 2)).saturating_sub(1) as usize,
    );
    for (i, line) in lines.iter().enumerate() {
        let y = inner.y + (i as u32 + 1) * (GLYPH + 2);
        draw_text(image, inner.x, y, line, 1, INK, inner);
    }
}

/// The reason a tile shows: what is missing, without the key (the tile's place names it).
pub fn short_reason(e: &ScenarioError) -> String {
    match e {
        ScenarioError::NeedsMask(_) => "needs a foreground mask (--mask)".into(),
        ScenarioError::NoPool { .. } => {
            "needs backgrounds: give --background IMG[:CLASS] (or evaluate it with `robustream run`)"
                .into()
        }
        ScenarioError::Unsuitable { reason, .. } => reason.clone(),
    }
}

/// What to draw and where to write it: the options of `robustream preview`, mirroring
/// `robustream apply`.
#[derive(Debug, Clone)]
pub struct PreviewRequest {
    /// Input image.
    pub image: PathBuf,
    /// Plan items: keys, groups or `prefix/*`, as in a run's `scenarios`.
    pub scenarios: Vec<String>,
    /// Output PNG.
    pub out: PathBuf,
    /// Optional model description: scenarios apply to its view (resize + crop), as in a run.
    pub model: Option<PathBuf>,
    /// Where scenarios apply when a model is given (a run's `stage`; default the model view). Without
    /// a model the image is used as it is.
    pub stage: ScenarioStage,
    /// Optional foreground mask of the image's size.
    pub mask: Option<PathBuf>,
    /// Optional object boxes, normalised xyxy in the manifest `boxes` format (as `apply --boxes`).
    pub boxes: Option<String>,
    /// Optional Pascal VOC annotation with the object boxes (as `apply --annotation`).
    pub annotation: Option<PathBuf>,
    /// Run seed.
    pub seed: u64,
    /// Frame id keying the randomness; default the image's file name (as `apply`).
    pub frame_id: Option<String>,
    /// Tile size in pixels.
    pub tile: u32,
    /// JPEG quality corruption outputs are stored at (a run's `jpeg_after_corruption`).
    pub jpeg_after_corruption: Option<u8>,
    /// Backgrounds for the pool scenarios, as `apply --background` ([`crate::app::one_image::background_pool`]).
    pub backgrounds: Vec<String>,
    /// The image's class (an index, or with a model a label name), as `apply --class`.
    pub class: Option<String>,
}

/// What [`preview`] drew.
#[derive(Debug)]
pub struct PreviewSummary {
    /// Number of distinct scenario keys computed (including `clean`).
    pub variants: usize,
    /// Rows of tiles.
    pub rows: usize,
    /// Columns of the widest row.
    pub columns: usize,
    /// Sheet size in pixels (width, height).
    pub size: (u32, u32),
    /// Keys that failed for this image, with the reason.
    pub failures: Vec<(String, ScenarioError)>,
    /// Wall time from reading the image to the written PNG, in seconds.
    pub seconds: f64,
}

/// Draws the contact sheet of `req` and writes it as PNG. Unknown plan items fail before any work with
/// the same message (and suggestion) as a run; scenarios failing for this image are drawn as grey tiles
/// and listed in the summary.
pub fn preview(req: &PreviewRequest) -> anyhow::Result<PreviewSummary> {
    let start = Instant::now();
    let catalog = Catalog::builtin().with_corruption_jpeg(req.jpeg_after_corruption);
    let plan = Plan::from_items(&req.scenarios, &catalog)?;
    let rows = grid(&plan.keys());
    let (image, mask, boxes) = crate::app::one_image::read_input(
        &req.image,
        req.mask.as_ref(),
        req.boxes.as_deref(),
        req.annotation.as_ref(),
    )?;
    let native_size = image.dimensions();
    let model = req.model.as_deref().map(ModelDesc::load).transpose()?;
    let frame_id = match &req.frame_id {
        Some(id) => id.clone(),
        None => {
            file_name(&req.image).context("the image path has no file name; pass --frame-id")?
        }
    };
    let (image, masks, boxes, view_after, stage_text) = match (&model, req.stage) {
        (None, _) => (
            image,
            StageMasks::native(mask.clone()),
            stage_boxes(&boxes, mask.as_ref(), <[_]>::to_vec),
            None,
            format!("native {}x{}", native_size.0, native_size.1),
        ),
        (Some(m), ScenarioStage::ModelInput) => {
            let mut view = ModelView::new(m);
            let bilinear = needs_bilinear_mask(plan.scenarios().iter().map(|s| s.as_ref()));
            let (image, masks, boxes) = crate::app::one_image::model_view_input(
                &mut view,
                &image,
                mask.as_ref(),
                &boxes,
                bilinear,
            );
            (
                image,
                masks,
                boxes,
                None,
                format!(
                    "model view {}x{} ({})",
                    m.input.width,
                    m.input.height,
                    file_name(&m.path).unwrap_or_default()
                ),
            )
        }
        (Some(m), ScenarioStage::Native) => (
            image,
            StageMasks::native(mask.clone()),
            stage_boxes(&boxes, mask.as_ref(), <[_]>::to_vec),
            Some(m.clone()),
            format!(
                "native {}x{}, then model view {}x{} ({})",
                native_size.0,
                native_size.1,
                m.input.width,
                m.input.height,
                file_name(&m.path).unwrap_or_default()
            ),
        ),
    };
    let labels = crate::app::one_image::labels_of(model.as_ref());
    let truth = crate::app::one_image::resolve_class(req.class.as_deref(), &labels, "--class")?;
    let pool = crate::app::one_image::background_pool(
        &req.backgrounds,
        &labels,
        model.as_ref().map(|m| (m, req.stage)),
        req.seed,
    )?;
    let name = file_name(&req.image).unwrap_or_default();
    let mut title = format!("{name} | {stage_text} | seed {}", req.seed);
    if frame_id != name {
        title += &format!(" | frame {frame_id}");
    }
    if let Some(q) = req.jpeg_after_corruption {
        title += &format!(" | stored as JPEG q{q}");
    }
    if let Some(pool) = &pool {
        let n = pool.len();
        title += &format!(" | {n} background{}", if n == 1 { "" } else { "s" });
    }
    let spec = SheetSpec {
        rows,
        title,
        tile: req.tile,
        seed: req.seed,
        frame_id,
        view_after,
    };
    let input = masks
        .attach(ScenarioInput::new(&image))
        .with_boxes(&boxes)
        .with_truth(truth)
        .with_pool(pool.as_ref());
    let composed = compose(&spec, &input, &|key: &str| catalog.build(key));
    composed
        .sheet
        .save_with_format(&req.out, image::ImageFormat::Png)
        .with_context(|| format!("cannot write {}", req.out.display()))?;
    let variants = {
        let mut keys: Vec<&str> = spec
            .rows
            .iter()
            .flat_map(|r| r.columns.iter().flatten().map(|c| c.key.as_str()))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys.len()
    };
    Ok(PreviewSummary {
        variants,
        rows: spec.rows.len(),
        columns: composed.geometry.columns as usize,
        size: composed.sheet.dimensions(),
        failures: composed.failures,
        seconds: start.elapsed().as_secs_f64(),
    })
}

fn file_name(path: &Path) -> Option<String> {
    path.file_name().map(|n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests;
