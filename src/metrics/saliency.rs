//! Saliency alignment with the object mask (docs/hard-imagenet.md#saliency-alignment): pure
//! functions of a saliency map and a binary mask of the same size (row-major, one value per pixel).
//!
//! As in Hard ImageNet's `saliency_analysis.py`: the map is min–max scaled to [0, 1], both map and
//! mask are binarised with **≥ 0.5** (NaN → 0), IoU = (|A∩B| + 1e−10)/(|A∪B| + 1e−10),
//! Dice = (2|A∩B| + 1e−10)/(|A∪B| + |A∩B| + 1e−10), Δ saliency density = mean(map over the mask) −
//! mean(map outside it); frames with an empty mask are skipped. The reference reports nanmeans ×100;
//! we report fractions (means over frames, in [0, 1] for IoU and Dice, [−1, 1] for Δ density).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The ε of the IoU and Dice in docs/hard-imagenet.md#saliency-alignment.
const EPS: f64 = 1e-10;

/// The binarisation threshold of docs/hard-imagenet.md#saliency-alignment (value ≥ 0.5 → 1).
const THRESHOLD: f32 = 0.5;

/// Min–max scales `map` in place to [0, 1] (NaN treated as 0 first,
/// docs/hard-imagenet.md#saliency-alignment); a constant map becomes all 0.
pub(crate) fn min_max_scale(map: &mut [f32]) {
    for v in map.iter_mut() {
        if v.is_nan() {
            *v = 0.0;
        }
    }
    let (lo, hi) = map
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let range = hi - lo;
    for v in map.iter_mut() {
        *v = if range > 0.0 && range.is_finite() {
            (*v - lo) / range
        } else {
            0.0
        };
    }
}

/// `v ≥ 0.5` per value; NaN → false.
fn binarize(map: &[f32]) -> Vec<bool> {
    map.iter().map(|&v| v >= THRESHOLD).collect()
}

/// |A∩B| and |A∪B|.
fn overlap(a: &[bool], b: &[bool]) -> (u64, u64) {
    debug_assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold((0, 0), |(i, u), (&x, &y)| {
        (i + u64::from(x && y), u + u64::from(x || y))
    })
}

/// IoU of two binary maps with the ε of docs/hard-imagenet.md#saliency-alignment (two empty maps
/// give 1).
pub fn iou(a: &[bool], b: &[bool]) -> f64 {
    let (i, u) = overlap(a, b);
    (i as f64 + EPS) / (u as f64 + EPS)
}

/// Dice of two binary maps with the ε of docs/hard-imagenet.md#saliency-alignment.
pub fn dice(a: &[bool], b: &[bool]) -> f64 {
    let (i, u) = overlap(a, b);
    (2.0 * i as f64 + EPS) / (u as f64 + i as f64 + EPS)
}

/// mean(map over mask) − mean(map outside the mask); `None` when either side has no pixel.
fn delta_density(map: &[f32], mask: &[bool]) -> Option<f64> {
    let (mut s_in, mut n_in, mut s_out, mut n_out) = (0f64, 0u64, 0f64, 0u64);
    for (&v, &m) in map.iter().zip(mask) {
        let v = if v.is_nan() { 0.0 } else { f64::from(v) };
        if m {
            s_in += v;
            n_in += 1;
        } else {
            s_out += v;
            n_out += 1;
        }
    }
    (n_in > 0 && n_out > 0).then(|| s_in / n_in as f64 - s_out / n_out as f64)
}

/// One frame's alignment of a scaled saliency map with its mask.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Alignment {
    /// IoU of the binarised map and mask.
    pub(crate) iou: f64,
    /// Dice of the binarised map and mask.
    pub(crate) dice: f64,
    /// Δ saliency density; `None` when the mask covers the whole frame.
    pub(crate) delta_density: Option<f64>,
}

/// The alignment of `map` (already scaled to [0, 1]) with `mask`; `None` for an empty mask (such
/// frames are skipped, docs/hard-imagenet.md#saliency-alignment).
pub(crate) fn alignment(map: &[f32], mask: &[bool]) -> Option<Alignment> {
    if !mask.iter().any(|&m| m) {
        return None;
    }
    let a = binarize(map);
    Some(Alignment {
        iou: iou(&a, mask),
        dice: dice(&a, mask),
        delta_density: delta_density(map, mask),
    })
}

/// `summary.json`'s `metrics.saliency`: what the saliency post pass measured (the pass writes it,
/// `robustream merge` recomputes it from the shards' kept frames;
/// docs/benchmarks-usage.md#occlusion-saliency). A pass that did not apply has `applicable: false`,
/// a `reason` and its geometry; one that applied has the means of [`AlignmentMeans`], its geometry
/// and its cost. Every field but `applicable` is optional so that an older entry loads and is
/// written back with its own keys; unknown fields are kept, in order, in [`SaliencyEntry::extra`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SaliencyEntry {
    /// Whether the pass had masked, labelled frames to explain.
    pub(crate) applicable: bool,
    /// Why it did not apply (or did not run: the main pass did not complete).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// How the maps were made (`occlusion`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) method: Option<String>,
    /// Frames explained ([`AlignmentMeans::frames`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) frames: Option<u64>,
    /// Mean IoU of map and mask ([`AlignmentMeans::iou`]), null without frames.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::contract::present"
    )]
    pub(crate) iou: Option<Option<f64>>,
    /// Mean Dice ([`AlignmentMeans::dice`]), null without frames.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::contract::present"
    )]
    pub(crate) dice: Option<Option<f64>>,
    /// Mean Δ saliency density ([`AlignmentMeans::delta_density`]), null without a frame that has one.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::contract::present"
    )]
    pub(crate) delta_density: Option<Option<f64>>,
    /// The occluding square's side, model-view pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) patch: Option<u32>,
    /// The step between its positions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stride: Option<u32>,
    /// Positions per frame (a frame costs one inference more: unoccluded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) positions: Option<u64>,
    /// Inferences the pass ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) inferences: Option<u64>,
    /// Whether every kept frame was explained (false when interrupted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) complete: Option<bool>,
    /// Wall time of the pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) seconds: Option<f64>,
    /// Fields this robustream does not know (a newer format's), kept in order.
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl SaliencyEntry {
    /// The entry of a pass that did not apply, saying why.
    pub(crate) fn not_applicable(reason: impl Into<String>) -> Self {
        Self {
            reason: Some(reason.into()),
            ..Self::default()
        }
    }
}

/// Means of [`Alignment`]s over frames.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct AlignmentMeans {
    /// Frames added.
    pub(crate) frames: u64,
    sum_iou: f64,
    sum_dice: f64,
    sum_density: f64,
    n_density: u64,
}

impl AlignmentMeans {
    /// Adds one frame.
    pub(crate) fn add(&mut self, a: &Alignment) {
        self.frames += 1;
        self.sum_iou += a.iou;
        self.sum_dice += a.dice;
        if let Some(d) = a.delta_density {
            self.sum_density += d;
            self.n_density += 1;
        }
    }

    /// Mean IoU; `None` without frames.
    pub(crate) fn iou(&self) -> Option<f64> {
        (self.frames > 0).then(|| self.sum_iou / self.frames as f64)
    }

    /// Mean Dice; `None` without frames.
    pub(crate) fn dice(&self) -> Option<f64> {
        (self.frames > 0).then(|| self.sum_dice / self.frames as f64)
    }

    /// Mean Δ density over the frames that have one.
    pub(crate) fn delta_density(&self) -> Option<f64> {
        (self.n_density > 0).then(|| self.sum_density / self.n_density as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry reads back as written (missing fields stay missing, unknown ones stay, nulls stay
    /// null).
    #[test]
    fn a_saliency_entry_round_trips_as_written() {
        for text in [
            r#"{"applicable":true,"method":"occlusion","frames":2,"iou":0.5,"dice":0.25,"delta_density":null,"patch":32,"stride":16,"positions":169,"inferences":340,"complete":true,"seconds":1.5}"#,
            r#"{"applicable":false,"reason":"no frame","patch":32,"stride":16}"#,
            r#"{"applicable":true,"frames":1,"a_newer_field":{"x":1}}"#,
        ] {
            let e: SaliencyEntry = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), text);
        }
        let e: SaliencyEntry = serde_json::from_str(r#"{"iou":null,"dice":0.5}"#).unwrap();
        assert_eq!(
            (e.iou, e.dice, e.frames),
            (Some(None), Some(Some(0.5)), None)
        );
    }

    #[test]
    fn iou_and_dice_follow_the_reference_formulas() {
        let a = [true, true, false, false];
        let b = [true, false, true, false];
        // |A∩B| = 1, |A∪B| = 3.
        assert!((iou(&a, &b) - (1.0 + EPS) / (3.0 + EPS)).abs() < 1e-15);
        assert!((dice(&a, &b) - (2.0 + EPS) / (4.0 + EPS)).abs() < 1e-15);
        assert_eq!(iou(&a, &a), 1.0);
        assert_eq!(dice(&a, &a), 1.0);
        assert_eq!(iou(&[false; 3], &[false; 3]), 1.0);
        assert!(iou(&[true, false], &[false, true]) < 1e-9);
    }

    #[test]
    fn threshold_is_inclusive_and_nan_is_zero() {
        assert_eq!(
            binarize(&[0.5, 0.4999, 1.0, f32::NAN]),
            [true, false, true, false]
        );
    }

    #[test]
    fn min_max_scale_maps_to_unit_range() {
        let mut m = [2.0, 4.0, 3.0, f32::NAN];
        min_max_scale(&mut m);
        // NaN → 0 before scaling, so 0 is the minimum.
        assert_eq!(m, [0.5, 1.0, 0.75, 0.0]);
        let mut c = [3.0; 4];
        min_max_scale(&mut c);
        assert_eq!(c, [0.0; 4]);
    }

    #[test]
    fn delta_density_and_alignment() {
        let map = [1.0, 0.5, 0.0, 0.0];
        let mask = [true, true, false, false];
        assert_eq!(delta_density(&map, &mask), Some(0.75));
        assert_eq!(delta_density(&map, &[true; 4]), None);
        let a = alignment(&map, &mask).unwrap();
        assert_eq!((a.iou, a.dice), (1.0, 1.0));
        assert!(alignment(&map, &[false; 4]).is_none());
        let mut means = AlignmentMeans::default();
        means.add(&a);
        means.add(&Alignment {
            iou: 0.0,
            dice: 0.5,
            delta_density: None,
        });
        assert_eq!(
            (means.iou(), means.dice(), means.delta_density()),
            (Some(0.5), Some(0.75), Some(0.75))
        );
        assert_eq!(AlignmentMeans::default().iou(), None);
    }
}
