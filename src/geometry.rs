//! Box and mask geometry shared by sources, scenarios, preprocessing and scenes: foreground tests,
//! tight boxes, box masks, connected components. Masks are 8-bit with foreground = any non-zero
//! pixel (docs/hard-imagenet.md#data-and-preprocessing: `mask > 0`; docs/ximagenet.md#masks: any
//! non-zero → 255); a [`BBox`] is in pixels with exclusive ends, `[x0, x1) × [y0, y1)`.

use image::GrayImage;

use crate::frame::BBox;

/// True when the mask has at least one foreground (non-zero) pixel.
pub(crate) fn has_foreground(mask: &GrayImage) -> bool {
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
/// use robustream::geometry::tight_box;
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

/// Boxes in pixels of a `width`×`height` image as normalised `[x0, y0, x1, y1]` (exclusive ends):
/// the `boxes` of a record (`Record::boxes`, which the placement metrics' centre and size scores
/// read).
pub(crate) fn normalised_boxes(boxes: &[BBox], (width, height): (u32, u32)) -> Vec<[f32; 4]> {
    let (w, h) = (width.max(1) as f32, height.max(1) as f32);
    boxes
        .iter()
        .map(|b| {
            [
                b.x0 as f32 / w,
                b.y0 as f32 / h,
                b.x1 as f32 / w,
                b.y1 as f32 / h,
            ]
        })
        .collect()
}

/// The boxes a frame's scenarios receive: the frame's own `boxes` brought to the scenario stage by
/// `to_stage` (e.g. the model view's box mapping) when it has any, else the tight box of
/// the stage's `mask` (one box; none without a mask or for an empty one).
pub(crate) fn stage_boxes(
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
pub(crate) fn box_mask(width: u32, height: u32, boxes: &[BBox]) -> GrayImage {
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
pub(crate) enum Connectivity {
    /// Left, right, up, down neighbours (the reference's default).
    #[default]
    Four,
    /// The four plus the diagonal neighbours.
    Eight,
}

/// The connected components of a mask's foreground (non-zero pixels).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Components {
    /// Per pixel, row-major: 0 for background, `k + 1` for a pixel of component `k`.
    pub(crate) labels: Vec<u32>,
    /// Tight box of each component (exclusive ends), in component order.
    pub(crate) boxes: Vec<BBox>,
    /// Number of pixels of each component.
    pub(crate) areas: Vec<u64>,
}

/// Labels the connected components of the mask's foreground. Components are numbered in raster
/// order of their first pixel (top row first, then left to right), as `scipy.ndimage.label` numbers
/// them. One pass over the rows with runs and union-find: O(pixels), no per-pixel allocation.
pub(crate) fn label_components(mask: &GrayImage, connectivity: Connectivity) -> Components {
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
#[cfg(test)]
pub(crate) fn component_boxes(mask: &GrayImage, connectivity: Connectivity) -> Vec<BBox> {
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
