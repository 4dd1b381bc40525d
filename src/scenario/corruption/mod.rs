//! ImageNet-C corruptions (REFERENCE.md §1–§2), as scenarios `corruption/<name>/<severity>`.
//!
//! Every corruption takes an RGB u8 image of any size and a severity 1..=5 and returns an image of the
//! same size, computed in float on the [0, 1] scale as the reference does and converted back with
//! truncation (`floor8`, REFERENCE §1.2). Grouped like the benchmark: `noise.rs`, `digital.rs`
//! (blur and weather arrive with the full suite).

pub mod digital;
pub mod noise;

use image::RgbImage;

use super::{RngKey, Scenario, ScenarioError, ScenarioInput};

/// The corruptions implemented so far, in ImageNet-C index order (REFERENCE §1.3), with a one-line
/// description each.
pub const CORRUPTIONS: &[(&str, &str)] = &[
    (
        "gaussian_noise",
        "additive Gaussian noise per pixel and channel (REFERENCE §2.1)",
    ),
    (
        "contrast",
        "every channel pulled towards its mean (REFERENCE §2.14)",
    ),
];

/// Severity levels of every corruption.
pub const SEVERITIES: std::ops::RangeInclusive<u8> = 1..=5;

/// One corruption at one severity.
#[derive(Debug, Clone)]
pub struct Corruption {
    name: &'static str,
    severity: u8,
    key: String,
}

impl Corruption {
    /// The corruption `name` (as in [`CORRUPTIONS`]) at `severity` (1..=5); `None` if either is unknown.
    pub fn new(name: &str, severity: u8) -> Option<Self> {
        let (name, _) = CORRUPTIONS.iter().find(|(n, _)| *n == name)?;
        SEVERITIES.contains(&severity).then(|| Self {
            name,
            severity,
            key: format!("corruption/{name}/{severity}"),
        })
    }

    /// The severity's parameter in words, e.g. `sigma 0.18`.
    pub fn parameter(&self) -> String {
        let s = usize::from(self.severity - 1);
        match self.name {
            "gaussian_noise" => format!("sigma {}", noise::GAUSSIAN_SIGMA[s]),
            "contrast" => format!("factor {}", digital::CONTRAST_FACTOR[s]),
            other => unreachable!("corruption `{other}` is listed but not described"),
        }
    }

    /// Applies the corruption to an image directly (what the scenario does, without the input wrapper).
    pub fn corrupt(&self, image: &RgbImage, rng: RngKey) -> RgbImage {
        let s = usize::from(self.severity - 1);
        match self.name {
            "gaussian_noise" => noise::gaussian_noise(image, noise::GAUSSIAN_SIGMA[s], rng),
            "contrast" => digital::contrast(image, digital::CONTRAST_FACTOR[s]),
            other => unreachable!("corruption `{other}` is listed but not dispatched"),
        }
    }
}

impl Scenario for Corruption {
    fn key(&self) -> &str {
        &self.key
    }

    fn apply(&self, input: &ScenarioInput<'_>, rng: RngKey) -> Result<RgbImage, ScenarioError> {
        Ok(self.corrupt(input.image, rng))
    }
}

/// `np.uint8(clip(v, 0, 1) * 255)`: clip on the [0, 1] scale, scale, truncate (REFERENCE §1.2).
#[inline(always)]
pub(crate) fn floor8_unit(v: f64) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_corruption_runs_at_every_severity() {
        let img = RgbImage::from_fn(33, 17, |x, y| {
            image::Rgb([(x * 7) as u8, (y * 13) as u8, 200])
        });
        for (name, _) in CORRUPTIONS {
            for s in SEVERITIES {
                let c = Corruption::new(name, s).expect("listed");
                assert_eq!(c.key(), format!("corruption/{name}/{s}"));
                let out = c.corrupt(&img, RngKey(1));
                assert_eq!(out.dimensions(), img.dimensions());
            }
        }
    }

    #[test]
    fn rejects_unknown_names_and_severities() {
        assert!(Corruption::new("fog_of_war", 1).is_none());
        assert!(Corruption::new("contrast", 0).is_none());
        assert!(Corruption::new("contrast", 6).is_none());
    }

    #[test]
    fn floor8_truncates_and_clips() {
        assert_eq!(floor8_unit(-0.2), 0);
        assert_eq!(floor8_unit(1.7), 255);
        assert_eq!(floor8_unit(0.999), 254);
        assert_eq!(floor8_unit(100.9 / 255.0), 100);
    }
}
