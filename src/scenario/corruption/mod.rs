//! ImageNet-C corruptions (docs/imagenet-c.md), as scenarios `corruption/<name>/<severity>`.
//!
//! Every corruption takes an RGB u8 image of any size and a severity 1..=5 and returns an image of the
//! same size, computed in float on the [0, 1] scale as the reference does and converted back with
//! truncation (`floor8`, docs/imagenet-c.md#value-ranges-and-rounding). Grouped like the benchmark:
//! `noise.rs`, `blur.rs`, `snow.rs` and `weather.rs` (snow, frost, fog), `digital.rs`,
//! `elastic.rs`, `spatter.rs`. These files hold each corruption's parameters per severity and the
//! reference's sequence of steps; the pixel arithmetic they share (scipy's Gaussian filter, the disk
//! and motion kernels, clipped zoom, scikit-image HSV, the JPEG round trip, OpenCV's edge operations,
//! per-row random streams) lives in [`crate::kernels`].

pub mod blur;
pub(crate) mod digital;
pub(crate) mod elastic;
pub(crate) mod noise;
pub mod snow;
mod spatter;
pub mod weather;

use image::RgbImage;

use super::{RngKey, Scenario, ScenarioError, ScenarioInput};
use crate::kernels::jpeg;
use crate::key::{self, SEVERITIES};

// Which corruption: the shared vocabulary's enum, named apart from the scenario `Corruption` here
// (a corruption at a severity).
use key::Corruption as Kind;

/// One corruption at one severity.
#[derive(Debug, Clone)]
pub struct Corruption {
    kind: Kind,
    severity: u8,
    key: String,
    stored_jpeg: Option<u8>,
}

impl Corruption {
    /// The corruption named `name` ([`Kind::as_str`]) at `severity` (1..=5); `None` if either is
    /// unknown.
    pub fn new(name: &str, severity: u8) -> Option<Self> {
        Self::of(name.parse().ok()?, severity)
    }

    /// Corruption `kind` at `severity` (1..=5); `None` if the severity is unknown.
    pub fn of(kind: Kind, severity: u8) -> Option<Self> {
        SEVERITIES.contains(&severity).then(|| Self {
            kind,
            severity,
            key: format!("corruption/{kind}/{severity}"),
            stored_jpeg: None,
        })
    }

    /// As a scenario, also pass the corrupted image through a JPEG round trip at `quality` (Pillow /
    /// libjpeg-turbo exact, [`jpeg::roundtrip`]): the released ImageNet-C images were saved as JPEG
    /// quality 85 after corrupting (docs/imagenet-c.md#how-imagenet-c-was-made, step 5), so
    /// `Some(85)` evaluates like the published dataset. `None` (the default) evaluates the
    /// corruption's own output, like imagecorruptions. [`Corruption::corrupt`] is never affected.
    pub(crate) fn stored_as_jpeg(mut self, quality: Option<u8>) -> Self {
        self.stored_jpeg = quality;
        self
    }

    /// Which corruption.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// The corruption's name ([`Kind::as_str`]).
    #[cfg(test)]
    pub(crate) fn name(&self) -> &'static str {
        self.kind.as_str()
    }

    /// The severity, 1..=5.
    pub(crate) fn severity(&self) -> u8 {
        self.severity
    }

    /// The JPEG quality of the round trip after corrupting ([`Corruption::stored_as_jpeg`]).
    pub(crate) fn stored_jpeg(&self) -> Option<u8> {
        self.stored_jpeg
    }

    /// The severity's parameter in words, e.g. `sigma 0.18`.
    pub(crate) fn parameter(&self) -> String {
        let s = usize::from(self.severity - 1);
        match self.kind {
            Kind::GaussianNoise => format!("sigma {}", noise::GAUSSIAN_SIGMA[s]),
            Kind::ShotNoise => format!("photons {}", noise::SHOT_PHOTONS[s]),
            Kind::ImpulseNoise => format!("amount {}", noise::IMPULSE_AMOUNT[s]),
            Kind::DefocusBlur => {
                let p = blur::DEFOCUS_BLUR[s];
                format!("radius {}, alias blur {}", p.radius, p.alias_blur)
            }
            Kind::GlassBlur => {
                let p = blur::GLASS_BLUR[s];
                let (sigma, d, it) = (p.sigma, p.max_delta, p.iterations);
                format!("sigma {sigma}, max delta {d}, {it} iterations")
            }
            Kind::MotionBlur => {
                let p = blur::MOTION_BLUR[s];
                format!("radius {}, sigma {}", p.radius, p.sigma)
            }
            Kind::ZoomBlur => {
                let blur::ZoomArange { stop, step } = blur::ZOOM_BLUR_ARANGE[s];
                let n = blur::zoom_factors(stop, step).len();
                format!("{n} zoom factors 1..{stop} step {step}")
            }
            Kind::Snow => {
                let p = &snow::SNOW[s];
                format!(
                    "flakes N({}, {}) zoomed {}, threshold {}, motion radius {} sigma {}, blend {}",
                    p.mean, p.std, p.zoom, p.threshold, p.radius, p.sigma, p.blend
                )
            }
            Kind::GaussianBlur => format!("sigma {}", blur::GAUSSIAN_BLUR_SIGMA[s]),
            Kind::Frost => {
                let p = weather::FROST_PARAMS[s];
                format!("image ×{} + frost ×{}", p.image, p.frost)
            }
            Kind::Fog => {
                let p = weather::FOG_PARAMS[s];
                format!("strength {}, wibble decay {}", p.strength, p.wibble_decay)
            }
            Kind::Brightness => format!("value +{}", digital::BRIGHTNESS_DELTA[s]),
            Kind::Contrast => format!("factor {}", digital::CONTRAST_FACTOR[s]),
            Kind::ElasticTransform => format!("alpha {}", elastic::ELASTIC_ALPHA[s]),
            Kind::Pixelate => format!("size factor {}", digital::PIXELATE_FACTOR[s]),
            Kind::JpegCompression => format!("quality {}", digital::JPEG_QUALITY[s]),
            Kind::SpeckleNoise => format!("sigma {}", noise::SPECKLE_SIGMA[s]),
            Kind::Spatter => {
                let spatter::SpatterParams {
                    mean: mu,
                    std: sd,
                    sigma,
                    threshold: t,
                    intensity_or_blur: c4,
                    mode,
                } = spatter::SPATTER_PARAMS[s];
                let what = if mode == 0 {
                    "water intensity"
                } else {
                    "mud blur"
                };
                format!("liquid N({mu}, {sd}) blur {sigma} threshold {t}, {what} {c4}")
            }
            Kind::Saturate => {
                let p = digital::SATURATE_SCALE_OFFSET[s];
                format!("saturation ×{} +{}", p.scale, p.offset)
            }
        }
    }

    /// Applies the corruption to an image directly (what the scenario does, without the input wrapper).
    ///
    /// # Panics
    /// `frost` panics when its textures are not installed (the message names `bash scripts/setup.sh`);
    /// the scenario path ([`Scenario::apply`]) returns [`ScenarioError::Unsuitable`] instead.
    pub fn corrupt(&self, image: &RgbImage, rng: RngKey) -> RgbImage {
        let s = usize::from(self.severity - 1);
        match self.kind {
            Kind::GaussianNoise => noise::gaussian_noise(image, noise::GAUSSIAN_SIGMA[s], rng),
            Kind::ShotNoise => noise::shot_noise(image, noise::SHOT_PHOTONS[s], rng),
            Kind::ImpulseNoise => noise::impulse_noise(image, noise::IMPULSE_AMOUNT[s], rng),
            Kind::DefocusBlur => {
                let p = blur::DEFOCUS_BLUR[s];
                blur::defocus_blur(image, p.radius, p.alias_blur)
            }
            Kind::GlassBlur => {
                let p = blur::GLASS_BLUR[s];
                blur::glass_blur(image, p.sigma, p.max_delta, p.iterations, rng)
            }
            Kind::MotionBlur => {
                let p = blur::MOTION_BLUR[s];
                blur::motion_blur(image, p.radius, p.sigma, rng)
            }
            Kind::ZoomBlur => {
                let p = blur::ZOOM_BLUR_ARANGE[s];
                blur::zoom_blur(image, &blur::zoom_factors(p.stop, p.step))
            }
            Kind::Snow => snow::snow_corruption(image, &snow::SNOW[s], rng),
            Kind::GaussianBlur => blur::gaussian_blur(image, blur::GAUSSIAN_BLUR_SIGMA[s]),
            Kind::Frost => {
                let p = weather::FROST_PARAMS[s];
                weather::frost(image, p.image, p.frost, rng).unwrap_or_else(|e| panic!("{e}"))
            }
            Kind::Fog => {
                let p = weather::FOG_PARAMS[s];
                weather::fog(image, p.strength, p.wibble_decay, rng)
            }
            Kind::Brightness => digital::brightness(image, digital::BRIGHTNESS_DELTA[s]),
            Kind::Contrast => digital::contrast(image, digital::CONTRAST_FACTOR[s]),
            Kind::ElasticTransform => {
                elastic::elastic_transform(image, elastic::ELASTIC_ALPHA[s], rng)
            }
            Kind::Pixelate => digital::pixelate(image, digital::PIXELATE_FACTOR[s]),
            Kind::JpegCompression => digital::jpeg_compression(image, digital::JPEG_QUALITY[s]),
            Kind::SpeckleNoise => noise::speckle_noise(image, noise::SPECKLE_SIGMA[s], rng),
            Kind::Spatter => spatter::spatter(image, spatter::SPATTER_PARAMS[s], rng),
            Kind::Saturate => {
                let p = digital::SATURATE_SCALE_OFFSET[s];
                digital::saturate(image, p.scale, p.offset)
            }
        }
    }
}

impl Scenario for Corruption {
    fn key(&self) -> &str {
        &self.key
    }

    fn as_corruption(&self) -> Option<&Corruption> {
        Some(self)
    }

    fn apply(&self, input: &ScenarioInput<'_>, rng: RngKey) -> Result<RgbImage, ScenarioError> {
        let out = self.apply_raw(input, rng)?;
        Ok(match self.stored_jpeg {
            Some(quality) => jpeg::roundtrip(&out, quality),
            None => out,
        })
    }
}

impl Corruption {
    fn apply_raw(&self, input: &ScenarioInput<'_>, rng: RngKey) -> Result<RgbImage, ScenarioError> {
        if self.kind == Kind::Frost {
            // The only corruption with external data: missing textures are an error, not a panic.
            let p = weather::FROST_PARAMS[usize::from(self.severity - 1)];
            return weather::frost(input.image, p.image, p.frost, rng).map_err(|e| {
                ScenarioError::Unsuitable {
                    key: self.key.clone(),
                    reason: e.to_string(),
                }
            });
        }
        Ok(self.corrupt(input.image, rng))
    }
}

#[cfg(test)]
mod fixture_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_jpeg_is_a_round_trip_of_the_corruption() {
        let img = RgbImage::from_fn(40, 24, |x, y| {
            image::Rgb([(x * 6) as u8, (y * 9) as u8, 128])
        });
        let input = ScenarioInput::new(&img);
        let raw = Corruption::new("contrast", 2).unwrap();
        let stored = raw.clone().stored_as_jpeg(Some(85));
        let plain = raw.apply(&input, RngKey(1)).unwrap();
        assert_eq!(plain, raw.corrupt(&img, RngKey(1)));
        let jpeg = stored.apply(&input, RngKey(1)).unwrap();
        assert_eq!(jpeg, jpeg::roundtrip(&plain, 85));
        assert_ne!(jpeg, plain);
        assert_eq!(
            stored.corrupt(&img, RngKey(1)),
            plain,
            "corrupt() stays raw"
        );
    }

    #[test]
    fn every_listed_corruption_runs_at_every_severity_and_size() {
        for (w, h) in [(1, 1), (32, 32), (37, 23), (33, 17), (1280, 720)] {
            let img = RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([(x * 7) as u8, (y * 13) as u8, ((x + y) * 5) as u8])
            });
            for kind in Kind::ALL {
                let name = kind.as_str();
                for s in SEVERITIES {
                    let c = Corruption::of(kind, s).expect("listed");
                    assert_eq!(c.kind(), kind);
                    assert_eq!(Corruption::new(name, s).map(|c| c.kind()), Some(kind));
                    assert_eq!(c.key(), format!("corruption/{name}/{s}"));
                    assert!(!c.parameter().is_empty());
                    let out = c.corrupt(&img, RngKey(1));
                    assert_eq!(out.dimensions(), img.dimensions(), "{name}/{s} at {w}×{h}");
                }
            }
        }
    }

    #[test]
    fn the_list_keeps_imagenet_c_index_order() {
        // The indices (docs/imagenet-c.md#corruption-order-and-groups) of the implemented
        // corruptions, in list order.
        const INDEX: [&str; 19] = [
            "gaussian_noise",
            "shot_noise",
            "impulse_noise",
            "defocus_blur",
            "glass_blur",
            "motion_blur",
            "zoom_blur",
            "snow",
            "frost",
            "fog",
            "brightness",
            "contrast",
            "elastic_transform",
            "pixelate",
            "jpeg_compression",
            "speckle_noise",
            "gaussian_blur",
            "spatter",
            "saturate",
        ];
        let idx: Vec<usize> = key::CORRUPTIONS
            .iter()
            .map(|(n, _)| {
                INDEX
                    .iter()
                    .position(|i| i == n)
                    .expect("an ImageNet-C name")
            })
            .collect();
        assert!(idx.windows(2).all(|w| w[0] < w[1]), "{idx:?}");
        assert_eq!(idx, (0..19).collect::<Vec<_>>());
    }

    #[test]
    fn parameters_read_as_the_tables() {
        let p = |n, s| Corruption::new(n, s).expect("listed").parameter();
        assert_eq!(p("shot_noise", 1), "photons 60");
        assert_eq!(p("impulse_noise", 5), "amount 0.27");
        assert_eq!(p("brightness", 3), "value +0.3");
        assert_eq!(p("pixelate", 5), "size factor 0.25");
        assert_eq!(p("jpeg_compression", 1), "quality 25");
        assert_eq!(p("speckle_noise", 2), "sigma 0.2");
        assert_eq!(p("saturate", 5), "saturation ×20 +0.2");
        assert_eq!(p("gaussian_blur", 5), "sigma 6");
        assert_eq!(p("defocus_blur", 4), "radius 8, alias blur 0.5");
        assert_eq!(p("glass_blur", 3), "sigma 1, max delta 2, 3 iterations");
        assert_eq!(p("motion_blur", 5), "radius 20, sigma 15");
        assert_eq!(p("zoom_blur", 1), "12 zoom factors 1..1.11 step 0.01");
    }

    #[test]
    fn rejects_unknown_names_and_severities() {
        assert!(Corruption::new("fog_of_war", 1).is_none());
        assert!(Corruption::new("contrast", 0).is_none());
        assert!(Corruption::new("contrast", 6).is_none());
    }
}
