//! ImageNet-C metrics (REFERENCE §5): Corruption Error (CE) and mean CE (mCE), normalised by AlexNet's
//! errors, and their relative versions that subtract the clean error.
//!
//! With E_{s,c} the top-1 error (fraction) on corruption c at severity s and E_clean the clean error:
//! CE_c = Σ_s E_{s,c} / Σ_s E^AlexNet_{s,c}; relative CE_c = Σ_s (E_{s,c} − E_clean) /
//! Σ_s (E^AlexNet_{s,c} − E^AlexNet_clean); mCE and relative mCE are their means over the 15 benchmark
//! corruptions. Values are ratios (1.0 = AlexNet; papers print them ×100 as %). A corruption gets a CE
//! only when all five severities were evaluated on labelled frames; mCE only when all 15 have one.

use serde::{Deserialize, Serialize};

/// AlexNet's top-1 error per corruption and severity 1..5 (hendrycks README table, REFERENCE §5.3),
/// all 19 corruptions in ImageNet-C index order.
pub const ALEXNET_ERRORS: [(&str, [f64; 5]); 19] = [
    (
        "gaussian_noise",
        [0.69528, 0.82542, 0.93554, 0.98138, 0.99452],
    ),
    ("shot_noise", [0.71224, 0.85108, 0.93574, 0.98182, 0.99146]),
    (
        "impulse_noise",
        [0.78374, 0.89808, 0.94870, 0.98720, 0.99548],
    ),
    (
        "defocus_blur",
        [0.65624, 0.73202, 0.85036, 0.91364, 0.94714],
    ),
    ("glass_blur", [0.64308, 0.75054, 0.88806, 0.91622, 0.93344]),
    ("motion_blur", [0.58430, 0.70048, 0.82108, 0.89750, 0.92638]),
    ("zoom_blur", [0.70008, 0.76992, 0.80784, 0.84198, 0.87198]),
    ("snow", [0.71726, 0.88392, 0.86468, 0.91870, 0.94952]),
    ("frost", [0.61390, 0.79734, 0.88790, 0.89942, 0.93430]),
    ("fog", [0.67474, 0.76050, 0.84378, 0.87260, 0.94500]),
    ("brightness", [0.45140, 0.48502, 0.54048, 0.62166, 0.72440]),
    ("contrast", [0.64548, 0.76150, 0.88874, 0.97760, 0.99270]),
    (
        "elastic_transform",
        [0.52596, 0.70116, 0.55686, 0.64076, 0.80554],
    ),
    ("pixelate", [0.52218, 0.54620, 0.73728, 0.87092, 0.91262]),
    (
        "jpeg_compression",
        [0.51002, 0.54718, 0.57294, 0.65458, 0.74778],
    ),
    (
        "speckle_noise",
        [0.66192, 0.74440, 0.90246, 0.94548, 0.97268],
    ),
    (
        "gaussian_blur",
        [0.54732, 0.70444, 0.82574, 0.89864, 0.95940],
    ),
    ("spatter", [0.47196, 0.62194, 0.75052, 0.84132, 0.90182]),
    ("saturate", [0.59342, 0.65514, 0.51174, 0.70834, 0.82260]),
];

/// AlexNet's clean top-1 error used by relative mCE (`google-research/robustness_metrics`, REFERENCE §5.2).
pub const ALEXNET_CLEAN_ERROR: f64 = 0.4348;

/// The first this many entries of [`ALEXNET_ERRORS`] are the benchmark corruptions averaged by mCE.
pub const BENCHMARK: usize = 15;

/// One corruption's errors and CEs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorruptionError {
    /// Corruption name.
    pub corruption: String,
    /// Mean top-1 error over the five severities (fraction).
    pub error: f64,
    /// CE (ratio to AlexNet).
    pub ce: f64,
    /// Relative CE (ratio to AlexNet, clean error subtracted); absent without a clean error.
    pub relative_ce: Option<f64>,
}

/// The `imagenet_c` entry of `summary.json`'s `metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImagenetC {
    /// Clean top-1 error (fraction), when `clean` had labelled frames.
    pub clean_error: Option<f64>,
    /// Per corruption with all five severities evaluated, in ImageNet-C order.
    pub corruptions: Vec<CorruptionError>,
    /// Mean CE over the 15 benchmark corruptions, when all 15 are present.
    pub mce: Option<f64>,
    /// Mean relative CE over the 15, when all 15 and the clean error are present.
    pub relative_mce: Option<f64>,
    /// What the ratios are normalised by.
    pub normalisation: String,
}

/// Computes the ImageNet-C metrics from per-scenario top-1 accuracies (`top1(key)`: accuracy as a
/// fraction over labelled frames, `None` when the scenario was not evaluated on labelled frames).
/// Returns `None` when no corruption has all five severities.
pub fn compute(top1: impl Fn(&str) -> Option<f64>) -> Option<ImagenetC> {
    let clean_error = top1("clean").map(|a| 1.0 - a);
    let mut corruptions = Vec::new();
    for (name, alexnet) in &ALEXNET_ERRORS {
        let errors: Option<Vec<f64>> = (1..=5)
            .map(|s| top1(&format!("corruption/{name}/{s}")).map(|a| 1.0 - a))
            .collect();
        let Some(errors) = errors else { continue };
        let sum: f64 = errors.iter().sum();
        let alex: f64 = alexnet.iter().sum();
        corruptions.push(CorruptionError {
            corruption: name.to_string(),
            error: sum / 5.0,
            ce: sum / alex,
            relative_ce: clean_error.map(|c| (sum - 5.0 * c) / (alex - 5.0 * ALEXNET_CLEAN_ERROR)),
        });
    }
    if corruptions.is_empty() {
        return None;
    }
    let bench: Vec<&CorruptionError> = corruptions
        .iter()
        .filter(|c| {
            ALEXNET_ERRORS[..BENCHMARK]
                .iter()
                .any(|(n, _)| *n == c.corruption)
        })
        .collect();
    let complete = bench.len() == BENCHMARK;
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    let mce = complete.then(|| mean(bench.iter().map(|c| c.ce).collect()));
    let relative_mce = complete
        .then(|| {
            bench
                .iter()
                .map(|c| c.relative_ce)
                .collect::<Option<Vec<f64>>>()
        })
        .flatten()
        .map(mean);
    Some(ImagenetC {
        clean_error,
        corruptions,
        mce,
        relative_mce,
        normalisation: "AlexNet top-1 errors (hendrycks README table; clean 0.4348)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alexnet_accuracy(key: &str) -> Option<f64> {
        if key == "clean" {
            return Some(1.0 - ALEXNET_CLEAN_ERROR);
        }
        let rest = key.strip_prefix("corruption/")?;
        let (name, sev) = rest.split_once('/')?;
        let sev: usize = sev.parse().ok()?;
        let (_, e) = ALEXNET_ERRORS.iter().find(|(n, _)| *n == name)?;
        Some(1.0 - e[sev - 1])
    }

    #[test]
    fn table_averages_match_the_published_column() {
        // REFERENCE §5.3 "average" column and the augmix ALEXNET_ERR list (15 benchmark ones).
        let published = [
            0.886428, 0.894468, 0.922640, 0.819880, 0.826268, 0.785948, 0.798360, 0.866816,
            0.826572, 0.819324, 0.564592, 0.853204, 0.646056, 0.717840, 0.606500, 0.845388,
            0.787108, 0.717512, 0.658248,
        ];
        for ((name, e), want) in ALEXNET_ERRORS.iter().zip(published) {
            let avg = e.iter().sum::<f64>() / 5.0;
            assert!((avg - want).abs() < 1e-9, "{name}: {avg} vs {want}");
        }
        // Same order as the corruption catalogue.
        let names: Vec<&str> = ALEXNET_ERRORS.iter().map(|(n, _)| *n).collect();
        let ours: Vec<&str> = crate::scenario::corruption::CORRUPTIONS
            .iter()
            .map(|(n, _)| *n)
            .collect();
        assert_eq!(names, ours);
    }

    #[test]
    fn alexnet_scores_exactly_one() {
        let m = compute(alexnet_accuracy).unwrap();
        assert_eq!(m.corruptions.len(), 19);
        assert!((m.mce.unwrap() - 1.0).abs() < 1e-12);
        assert!((m.relative_mce.unwrap() - 1.0).abs() < 1e-12);
        assert!(m.corruptions.iter().all(|c| (c.ce - 1.0).abs() < 1e-12));
    }

    #[test]
    fn hand_computed_ce_and_relative_ce() {
        // A model with error 0.5 at every severity of fog and clean error 0.25.
        let m = compute(|k| match k {
            "clean" => Some(0.75),
            k if k.starts_with("corruption/fog/") => Some(0.5),
            _ => None,
        })
        .unwrap();
        let fog = &m.corruptions[0];
        let alex: f64 = [0.67474, 0.76050, 0.84378, 0.87260, 0.94500].iter().sum();
        assert_eq!(fog.corruption, "fog");
        assert!((fog.ce - 2.5 / alex).abs() < 1e-12);
        let rel = (2.5 - 1.25) / (alex - 5.0 * 0.4348);
        assert!((fog.relative_ce.unwrap() - rel).abs() < 1e-12);
        // One corruption is not the benchmark: no mCE.
        assert_eq!((m.mce, m.relative_mce), (None, None));
    }

    #[test]
    fn incomplete_severities_and_no_corruptions_give_nothing() {
        assert!(compute(|k| (k == "clean" || k == "corruption/fog/1").then_some(0.5)).is_none());
        let m = compute(|k| (!k.starts_with("corruption/saturate")).then_some(0.5)).unwrap();
        assert_eq!(m.corruptions.len(), 18);
        assert!(
            m.mce.is_some(),
            "saturate is a validation corruption, not needed for mCE"
        );
    }
}
