//! Mask-based scenarios on the GPU (`cuda/masks.cu`, docs/gpu.md#mask-based-scenarios): Hard
//! ImageNet's ablations (`ablation/gray`, `ablation/gray_bbox`, `ablation/tile`; CPU:
//! [`crate::scenario::ablation`]) and RFS region noise (`region_noise/...`; CPU:
//! [`crate::scenario::region_noise`]).
//!
//! The caller gives the frame, its mask exactly as the CPU scenario would see it
//! (`ScenarioInput::mask_for(s.mask_resize())`, uploaded as `width × height` bytes) and the boxes
//! [`boxes`] computes from that mask on the host: the mask's box for `gray_bbox`, and for `tile`
//! each component's box with the tile chosen for it (finding 4-connected components is a
//! sequential flood fill; the host already holds the mask, and these few boxes are all it sends).
//! The pixel work — gray, box fills, tile copies, noise and its l2 norm — runs on the device.
//!
//! Suitability stays the caller's: the CPU scenarios refuse a frame without an object pixel (and
//! RFS one without a background pixel); check that on the host mask
//! ([`crate::scenario::ablation::object_mask`]) before calling [`apply`].

use image::GrayImage;

use super::GpuError;
use super::launch::{Args, Buf, DeviceImage, Launcher, REDUCE_THREADS};
use crate::frame::BBox;
use crate::geometry::{Connectivity, label_components};
use crate::rng::RngKey;
use crate::scenario::Scenario;
use crate::scenario::ablation::{self, Kind, Side};
use crate::scenario::region_noise::{self, Norm, REFERENCE_SIDE, Region};

/// Scratch slot of the l2 norm's total (slots 40–47 are this module's).
const SUM_SLOT: usize = 40;

/// Whether the GPU has kernels for `s`: every ablation and every RFS region noise.
pub(crate) fn on_gpu(s: &dyn Scenario) -> bool {
    s.as_ablation().is_some() || s.as_region_noise().is_some()
}

/// The boxes [`apply`] needs for `s`, from the mask the CPU scenario sees (the image's size):
/// `gray_bbox`: the mask's [`ablation::exclusive_max_box`] (none for an empty mask); `tile`: for
/// each 4-connected component in raster order whose exclusive-max box is not empty inside the
/// image, that box followed by its [`ablation::largest_adjacent_tile`] (an empty box where there is
/// none: the box is then filled with gray), so pairs; every other scenario: none.
pub(crate) fn boxes(s: &dyn Scenario, mask: &GrayImage) -> Vec<BBox> {
    let Some(a) = s.as_ablation() else {
        return Vec::new();
    };
    match a.kind() {
        Kind::Gray => Vec::new(),
        Kind::GrayBbox => ablation::exclusive_max_box(mask).into_iter().collect(),
        Kind::Tile => {
            let (w, h) = mask.dimensions();
            let comps = label_components(mask, Connectivity::Four);
            let mut out = Vec::new();
            for b in comps.boxes {
                let b = BBox::new(b.x0, b.y0, b.x1 - 1, b.y1 - 1);
                let Some(b) = b.clip(w, h).filter(|b| !b.is_empty()) else {
                    continue;
                };
                let t = ablation::largest_adjacent_tile(mask, b)
                    .map_or(BBox::new(0, 0, 0, 0), |(_, t)| t);
                out.extend([b, t]);
            }
            out
        }
    }
}

/// Writes `s`'s variant of `src` into `dst` (same size, another buffer), `mask` being the mask
/// the CPU scenario sees (`width × height` bytes, non-zero = object) and `boxes` what [`boxes`]
/// gives for it; `key` is `RngKey::new(seed, frame id, s.rng_key())` as on the CPU. `Ok(false)`
/// when `s` has no kernels here ([`on_gpu`]), leaving `dst` untouched; an error without a mask, for
/// differing sizes or for boxes [`boxes`] would not give.
pub(crate) fn apply<L: Launcher>(
    l: &mut L,
    s: &dyn Scenario,
    src: DeviceImage,
    mask: Option<Buf>,
    boxes: &[BBox],
    dst: DeviceImage,
    key: RngKey,
) -> Result<bool, GpuError> {
    if !on_gpu(s) {
        return Ok(false);
    }
    let fail = |why: &str| GpuError::Launch(format!("{}: {why}", s.key()));
    if (src.width, src.height) != (dst.width, dst.height) || src.buf == dst.buf {
        return Err(fail("the variant needs its own buffer of the frame's size"));
    }
    let mask = mask.ok_or_else(|| fail("no mask"))?;
    let (w, h) = (src.width, src.height);
    let pixels = u64::from(w) * u64::from(h);
    let n = src.elements();
    let (srcp, dstp, maskp) = (l.address(src.buf), l.address(dst.buf), l.address(mask));
    let inside = |b: &BBox| b.x1 <= w && b.y1 <= h;
    if let Some(a) = s.as_ablation() {
        let gray = i64::from(ablation::GRAY);
        let fill = |l: &mut L, from: u64, b: BBox| {
            let args = Args::buffers(&[from, dstp]).ints(&[
                i64::from(w),
                i64::from(h),
                i64::from(b.x0),
                i64::from(b.y0),
                i64::from(b.x1),
                i64::from(b.y1),
                gray,
            ]);
            l.launch("rs_mask_fill_box", n, &args)
        };
        match a.kind() {
            Kind::Gray => {
                let args = Args::buffers(&[srcp, dstp, maskp]).ints(&[pixels as i64, gray]);
                l.launch("rs_mask_gray", n, &args)?;
            }
            Kind::GrayBbox => {
                let b = match boxes {
                    [] => BBox::new(0, 0, 0, 0),
                    [b] if inside(b) => *b,
                    _ => return Err(fail("gray_bbox takes the mask's box")),
                };
                fill(l, srcp, b)?;
            }
            Kind::Tile => {
                if !boxes.len().is_multiple_of(2) || !boxes.iter().all(inside) {
                    return Err(fail("tile takes (box, tile) pairs inside the frame"));
                }
                l.launch(
                    "rs_copy_bytes",
                    n,
                    &Args::buffers(&[srcp, dstp]).ints(&[n as i64]),
                )?;
                for pair in boxes.chunks_exact(2) {
                    let (b, t) = (pair[0], pair[1]);
                    if b.is_empty() {
                        continue;
                    }
                    match side_of(b, t) {
                        Some(side) => {
                            let (t0, tn) = if side < 2 {
                                (t.x0, t.width())
                            } else {
                                (t.y0, t.height())
                            };
                            let args = Args::buffers(&[dstp]).ints(&[
                                i64::from(w),
                                i64::from(b.x0),
                                i64::from(b.y0),
                                i64::from(b.x1),
                                i64::from(b.y1),
                                side,
                                i64::from(t0),
                                i64::from(tn),
                            ]);
                            l.launch("rs_mask_tile_box", b.area() * 3, &args)?;
                        }
                        None if t.is_empty() => fill(l, dstp, b)?,
                        None => return Err(fail("a tile that does not touch its box")),
                    }
                }
            }
        }
        return Ok(true);
    }
    let Some(r) = s.as_region_noise() else {
        return Ok(false);
    };
    let table = l.constant("region_noise/normal_table", &mut || {
        region_noise::normal_table()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect()
    })?;
    let fg = i64::from(r.region() == Region::Foreground);
    let groups = n.div_ceil(8);
    let total = l.scratch(SUM_SLOT, 8)?;
    let (amplitude, budget, l2) = match r.norm() {
        // The CPU's `(255.0 * sigma) as f32`.
        Norm::Linf => ((255.0 * r.sigma()) as f32, 0.0, 0),
        Norm::L2 => {
            let squares = l.constant("region_noise/normal_squares", &mut || {
                region_noise::normal_squares()
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect()
            })?;
            l.zero(total, 8)?;
            let args = Args::buffers(&[maskp, l.address(squares), l.address(total)]).ints(&[
                n as i64,
                key.0 as i64,
                fg,
            ]);
            l.launch("rs_rfs_sum_squares", groups.min(REDUCE_THREADS), &args)?;
            // The CPU's budget scaled to the frame, in f64 in its order.
            let budget = r.sigma() * (f64::from(w) * f64::from(h)).sqrt() / REFERENCE_SIDE;
            (0.0, budget, 1)
        }
    };
    let args = Args::buffers(&[srcp, dstp, maskp, l.address(table), l.address(total)])
        .ints(&[n as i64, key.0 as i64, fg, l2])
        .floats(&[amplitude])
        .doubles(&[budget]);
    l.launch("rs_rfs_noise", groups, &args)?;
    Ok(true)
}

/// Which side of box `b` the non-empty tile `t` lies on, as the kernel numbers them (0 right,
/// 1 left, 2 below, 3 above, the order of [`Side`]); `None` for an empty tile or one that is not
/// next to `b` with its rows (columns).
fn side_of(b: BBox, t: BBox) -> Option<i64> {
    if t.is_empty() {
        return None;
    }
    let rows = t.y0 == b.y0 && t.y1 == b.y1;
    let cols = t.x0 == b.x0 && t.x1 == b.x1;
    let side = if rows && t.x0 == b.x1 {
        Side::Right
    } else if rows && t.x1 == b.x0 {
        Side::Left
    } else if cols && t.y0 == b.y1 {
        Side::Below
    } else if cols && t.y1 == b.y0 {
        Side::Above
    } else {
        return None;
    };
    Some(match side {
        Side::Right => 0,
        Side::Left => 1,
        Side::Below => 2,
        Side::Above => 3,
    })
}
