//! Hard ImageNet ablations (docs/hard-imagenet.md#ablation-accuracy-and-drop): accuracy and
//! accuracy drop per ablation.
//!
//! As in the reference (`ablations.py`), the accuracy is over all images (not class-balanced). The
//! drop is "accuracy with nothing removed − accuracy with the ablation" (the Hard ImageNet site's
//! proxy); ours is paired like [`super::Tally::drop`]: over the frames labelled in both `clean` and
//! the ablation, so a frame whose ablation failed (no mask) does not shift it. The reference's mean
//! true-class probability is not reproduced (records keep only the top-5 probabilities).

use serde::{Deserialize, Serialize};

use crate::key::{CLEAN, ScenarioKey};

/// The ablation scenarios in the reference's order, with their keys (`ablation/<name>`).
const ABLATIONS: [&str; 3] = ["gray", "gray_bbox", "tile"];

/// One ablation's numbers (fractions; `null` where undefined).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ablation {
    /// Labelled records.
    pub(crate) n: u64,
    /// Top-1 accuracy over labelled records.
    pub(crate) accuracy: Option<f64>,
    /// Paired drop: clean accuracy − ablation accuracy on frames labelled in both (negative when the
    /// ablation helps; 0 for `none`).
    pub(crate) drop: Option<f64>,
}

/// `summary.json`'s `metrics.hard_imagenet`: `{"ablations": {"none": {...}, "gray": {...}, ...}}`,
/// `none` being the `clean` scenario, then the ablations present in [`ABLATIONS`] order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HardImagenet {
    /// Ablation name → numbers.
    #[serde(with = "crate::ordered")]
    pub(crate) ablations: Vec<(String, Ablation)>,
}

/// The Hard ImageNet metrics from the per-scenario lines `(key, n_labelled, top-1, drop)`. `None`
/// when no `ablation/<name>` scenario of [`ABLATIONS`] is present.
pub(crate) fn compute<'a>(
    scenarios: impl IntoIterator<Item = (&'a str, u64, Option<f64>, Option<f64>)>,
) -> Option<HardImagenet> {
    let lines: Vec<_> = scenarios.into_iter().collect();
    let find = |key: &str| {
        lines
            .iter()
            .find(|(k, ..)| *k == key)
            .map(|&(_, n, accuracy, drop)| Ablation { n, accuracy, drop })
    };
    let found: Vec<(String, Ablation)> = ABLATIONS
        .iter()
        .filter_map(|name| {
            find(&ScenarioKey::Ablation { name }.to_string()).map(|x| (name.to_string(), x))
        })
        .collect();
    if found.is_empty() {
        return None;
    }
    let mut ablations: Vec<(String, Ablation)> = find(CLEAN)
        .map(|c| ("none".to_string(), c))
        .into_iter()
        .collect();
    ablations.extend(found);
    Some(HardImagenet { ablations })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_first_then_ablations_in_reference_order() {
        let lines = [
            ("clean", 4, Some(0.75), Some(0.0)),
            ("ablation/tile", 4, Some(0.5), Some(0.25)),
            ("ablation/gray", 3, Some(0.0), Some(0.75)),
            ("corruption/fog/1", 4, Some(0.1), Some(0.6)),
        ];
        let h = compute(lines).unwrap();
        let names: Vec<&str> = h.ablations.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, vec!["none", "gray", "tile"]);
        assert_eq!(
            h.ablations[1].1,
            Ablation {
                n: 3,
                accuracy: Some(0.0),
                drop: Some(0.75)
            }
        );
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["ablations"]["tile"]["drop"], 0.25);
        assert_eq!(serde_json::from_value::<HardImagenet>(v).unwrap(), h);
    }

    #[test]
    fn absent_without_ablations() {
        assert_eq!(compute([("clean", 1, Some(1.0), Some(0.0))]), None);
        // Without a clean scenario: no `none` entry.
        let h = compute([("ablation/gray_bbox", 1, None, None)]).unwrap();
        assert_eq!(h.ablations.len(), 1);
    }
}
