//! The benchmark vocabulary every layer shares: scenario keys and their grammar ([`ScenarioKey`],
//! the reference scenario's key [`CLEAN`]) and the ImageNet-C corruption names, families and
//! severities. It sits on the ground floor so that sources (which read the released corruption
//! folders), scenarios, metrics and reports name the same things without importing each other.

use std::fmt;
use std::str::FromStr;

/// The key of the reference scenario: the unmodified frame.
pub(crate) const CLEAN: &str = "clean";

/// A scenario key read into its family and that family's parameters: the one place each family's
/// key grammar is written down. [`ScenarioKey::parse`] borrows from the key text and its
/// [`fmt::Display`] writes exactly that text back, so keys stay plain strings on the wire (records,
/// summaries, metric labels).
///
/// The grammar is syntax only: a parsed key names a scenario robustream can build only when its
/// parameters are ones the family knows (a listed corruption, level, size, ...), which the scenario
/// modules check. Reports read keys from any records file, so a well-formed key with parameters
/// the catalogue does not list still parses into its family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ScenarioKey<'a> {
    /// `clean`: the unmodified frame, the reference.
    Clean,
    /// `corruption/<name>/<severity>`: an ImageNet-C corruption (docs/imagenet-c.md).
    Corruption {
        /// The corruption's name (one of [`CORRUPTIONS`] for a built-in one).
        name: &'a str,
        /// Its severity, written without sign or leading zeros.
        severity: u8,
    },
    /// `background/<leaf>`: an IN-9 variation (docs/in9.md#how-the-variations-are-built) or an
    /// XIMAGENET-12 scenario (docs/ximagenet.md#scenarios); `leaf` may hold `/`
    /// (`transparent_on/RRGGBB`).
    Background {
        /// Everything after `background/`.
        leaf: &'a str,
    },
    /// `ablation/<name>`: a Hard ImageNet object ablation (docs/hard-imagenet.md#ablations).
    Ablation {
        /// Everything after `ablation/`.
        name: &'a str,
    },
    /// `region_noise/<fg|bg>/<norm>/<level>/t<trial>`: RFS noise on the object or the background
    /// (docs/hard-imagenet.md#region-noise).
    RegionNoise {
        /// `fg` (noise on the object) rather than `bg`.
        foreground: bool,
        /// The noise's norm (`linf`, `l2` for the built-in ones).
        norm: &'a str,
        /// The level as written in the key.
        level: &'a str,
        /// The trial as written after its `t`.
        trial: &'a str,
    },
    /// `placement/[ar/]<background>/<position>/<size>`: a Corner Cases placement
    /// (docs/corner-cases.md).
    Placement {
        /// `ar/` present: the object keeps its aspect ratio.
        keep_aspect: bool,
        /// The background segment.
        background: &'a str,
        /// The position segment.
        position: &'a str,
        /// The size segment.
        size: &'a str,
    },
    /// Any other key (no family's grammar matches it), as written.
    Other(&'a str),
}

impl<'a> ScenarioKey<'a> {
    /// Reads `key` into its family; keys no family's grammar matches are [`ScenarioKey::Other`].
    /// `parse(key).to_string() == key` for every `key`.
    pub(crate) fn parse(key: &'a str) -> Self {
        Self::family_of(key).unwrap_or(ScenarioKey::Other(key))
    }

    fn family_of(key: &'a str) -> Option<Self> {
        if key == CLEAN {
            return Some(ScenarioKey::Clean);
        }
        let (family, rest) = key.split_once('/')?;
        match family {
            "corruption" => {
                let (name, severity) = rest.split_once('/')?;
                let s: u8 = severity.parse().ok()?;
                // Only the canonical spelling, so that the key writes back as it was read.
                (s.to_string() == severity).then_some(ScenarioKey::Corruption { name, severity: s })
            }
            "background" => Some(ScenarioKey::Background { leaf: rest }),
            "ablation" => Some(ScenarioKey::Ablation { name: rest }),
            "region_noise" => {
                let mut parts = rest.split('/');
                let foreground = match parts.next()? {
                    "fg" => true,
                    "bg" => false,
                    _ => return None,
                };
                let (norm, level, trial) = (parts.next()?, parts.next()?, parts.next()?);
                let trial = trial.strip_prefix('t')?;
                parts.next().is_none().then_some(ScenarioKey::RegionNoise {
                    foreground,
                    norm,
                    level,
                    trial,
                })
            }
            "placement" => {
                let (keep_aspect, rest) = match rest.strip_prefix("ar/") {
                    Some(r) => (true, r),
                    None => (false, rest),
                };
                let mut parts = rest.split('/');
                let (background, position, size) = (parts.next()?, parts.next()?, parts.next()?);
                parts.next().is_none().then_some(ScenarioKey::Placement {
                    keep_aspect,
                    background,
                    position,
                    size,
                })
            }
            _ => None,
        }
    }

    /// Whether this is the reference scenario, [`ScenarioKey::Clean`].
    #[cfg(test)]
    fn is_clean(&self) -> bool {
        matches!(self, ScenarioKey::Clean)
    }
}

impl fmt::Display for ScenarioKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioKey::Clean => f.write_str(CLEAN),
            ScenarioKey::Corruption { name, severity } => {
                write!(f, "corruption/{name}/{severity}")
            }
            ScenarioKey::Background { leaf } => write!(f, "background/{leaf}"),
            ScenarioKey::Ablation { name } => write!(f, "ablation/{name}"),
            ScenarioKey::RegionNoise {
                foreground,
                norm,
                level,
                trial,
            } => {
                let side = if *foreground { "fg" } else { "bg" };
                write!(f, "region_noise/{side}/{norm}/{level}/t{trial}")
            }
            ScenarioKey::Placement {
                keep_aspect,
                background,
                position,
                size,
            } => {
                let ar = if *keep_aspect { "ar/" } else { "" };
                write!(f, "placement/{ar}{background}/{position}/{size}")
            }
            ScenarioKey::Other(key) => f.write_str(key),
        }
    }
}

/// The family of a key: its first `/` segment (`corruption` for `corruption/fog/3`; `clean` for
/// `clean`), the key itself when it has no `/`.
pub(crate) fn family(key: &str) -> &str {
    key.split('/').next().unwrap_or(key)
}

/// An ImageNet-C corruption robustream implements (docs/imagenet-c.md#the-19-corruptions): the 15
/// benchmark corruptions and the 4 validation ones, in index order
/// (docs/imagenet-c.md#corruption-order-and-groups). Keys, records and reports carry its name
/// ([`Corruption::as_str`], e.g. `corruption/fog/3`); code matches on the variant, so a corruption
/// added here is a compile error in every place that must handle it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Corruption {
    /// `gaussian_noise` (docs/imagenet-c.md#gaussian_noise).
    GaussianNoise,
    /// `shot_noise` (docs/imagenet-c.md#shot_noise).
    ShotNoise,
    /// `impulse_noise` (docs/imagenet-c.md#impulse_noise).
    ImpulseNoise,
    /// `defocus_blur` (docs/imagenet-c.md#defocus_blur).
    DefocusBlur,
    /// `glass_blur` (docs/imagenet-c.md#glass_blur).
    GlassBlur,
    /// `motion_blur` (docs/imagenet-c.md#motion_blur).
    MotionBlur,
    /// `zoom_blur` (docs/imagenet-c.md#zoom_blur).
    ZoomBlur,
    /// `snow` (docs/imagenet-c.md#snow).
    Snow,
    /// `frost` (docs/imagenet-c.md#frost).
    Frost,
    /// `fog` (docs/imagenet-c.md#fog).
    Fog,
    /// `brightness` (docs/imagenet-c.md#brightness).
    Brightness,
    /// `contrast` (docs/imagenet-c.md#contrast).
    Contrast,
    /// `elastic_transform` (docs/imagenet-c.md#elastic_transform).
    ElasticTransform,
    /// `pixelate` (docs/imagenet-c.md#pixelate).
    Pixelate,
    /// `jpeg_compression` (docs/imagenet-c.md#jpeg_compression).
    JpegCompression,
    /// `speckle_noise` (docs/imagenet-c.md#speckle_noise).
    SpeckleNoise,
    /// `gaussian_blur` (docs/imagenet-c.md#gaussian_blur).
    GaussianBlur,
    /// `spatter` (docs/imagenet-c.md#spatter).
    Spatter,
    /// `saturate` (docs/imagenet-c.md#saturate).
    Saturate,
}

impl Corruption {
    /// Every corruption in index order: the first [`BENCHMARK_COUNT`] are the benchmark
    /// corruptions (mCE), the rest the validation ones.
    pub const ALL: [Corruption; 19] = [
        Corruption::GaussianNoise,
        Corruption::ShotNoise,
        Corruption::ImpulseNoise,
        Corruption::DefocusBlur,
        Corruption::GlassBlur,
        Corruption::MotionBlur,
        Corruption::ZoomBlur,
        Corruption::Snow,
        Corruption::Frost,
        Corruption::Fog,
        Corruption::Brightness,
        Corruption::Contrast,
        Corruption::ElasticTransform,
        Corruption::Pixelate,
        Corruption::JpegCompression,
        Corruption::SpeckleNoise,
        Corruption::GaussianBlur,
        Corruption::Spatter,
        Corruption::Saturate,
    ];

    /// The name in keys, records and reports (`gaussian_noise`, `fog`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            Corruption::GaussianNoise => "gaussian_noise",
            Corruption::ShotNoise => "shot_noise",
            Corruption::ImpulseNoise => "impulse_noise",
            Corruption::DefocusBlur => "defocus_blur",
            Corruption::GlassBlur => "glass_blur",
            Corruption::MotionBlur => "motion_blur",
            Corruption::ZoomBlur => "zoom_blur",
            Corruption::Snow => "snow",
            Corruption::Frost => "frost",
            Corruption::Fog => "fog",
            Corruption::Brightness => "brightness",
            Corruption::Contrast => "contrast",
            Corruption::ElasticTransform => "elastic_transform",
            Corruption::Pixelate => "pixelate",
            Corruption::JpegCompression => "jpeg_compression",
            Corruption::SpeckleNoise => "speckle_noise",
            Corruption::GaussianBlur => "gaussian_blur",
            Corruption::Spatter => "spatter",
            Corruption::Saturate => "saturate",
        }
    }

    /// One line on what it does, with its docs anchor.
    const fn description(self) -> &'static str {
        match self {
            Corruption::GaussianNoise => {
                "additive Gaussian noise per pixel and channel \
                 (docs/imagenet-c.md#gaussian_noise)"
            }
            Corruption::ShotNoise => {
                "Poisson photon noise per pixel and channel \
                 (docs/imagenet-c.md#shot_noise)"
            }
            Corruption::ImpulseNoise => {
                "salt-and-pepper noise, each channel flipped independently \
                 (docs/imagenet-c.md#impulse_noise)"
            }
            Corruption::DefocusBlur => {
                "anti-aliased disk kernel, reflect-101 border \
                 (docs/imagenet-c.md#defocus_blur)"
            }
            Corruption::GlassBlur => {
                "blur, local pixel copies, blur again \
                 (docs/imagenet-c.md#glass_blur)"
            }
            Corruption::MotionBlur => {
                "one-sided half-Gaussian streak at a random angle \
                 (docs/imagenet-c.md#motion_blur)"
            }
            Corruption::ZoomBlur => {
                "average of centrally zoomed copies \
                 (docs/imagenet-c.md#zoom_blur)"
            }
            Corruption::Snow => {
                "motion-blurred snow layer over a darkened, greyed image \
                 (docs/imagenet-c.md#snow)"
            }
            Corruption::Frost => "frost texture blended over the image (docs/imagenet-c.md#frost)",
            Corruption::Fog => "plasma-fractal fog, contrast reduced (docs/imagenet-c.md#fog)",
            Corruption::Brightness => "HSV value raised (docs/imagenet-c.md#brightness)",
            Corruption::Contrast => {
                "every channel pulled towards its mean \
                 (docs/imagenet-c.md#contrast)"
            }
            Corruption::ElasticTransform => {
                "smooth random displacement field, imagecorruptions variant \
                 (docs/imagenet-c.md#elastic_transform)"
            }
            Corruption::Pixelate => {
                "box-downsampled and box-upsampled back, Pillow-exact \
                 (docs/imagenet-c.md#pixelate)"
            }
            Corruption::JpegCompression => {
                "JPEG round trip at low quality, libjpeg-turbo-exact \
                 (docs/imagenet-c.md#jpeg_compression)"
            }
            Corruption::SpeckleNoise => {
                "multiplicative Gaussian noise per pixel and channel \
                 (docs/imagenet-c.md#speckle_noise)"
            }
            Corruption::GaussianBlur => {
                "separable Gaussian blur, edge replication \
                 (docs/imagenet-c.md#gaussian_blur)"
            }
            Corruption::Spatter => {
                "water highlights or mud blobs from a random liquid layer \
                 (docs/imagenet-c.md#spatter)"
            }
            Corruption::Saturate => {
                "HSV saturation scaled and offset \
                 (docs/imagenet-c.md#saturate)"
            }
        }
    }

    /// Its position in [`Corruption::ALL`] (the ImageNet-C index).
    #[cfg(test)]
    const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A name that is none of [`Corruption::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown corruption `{}`{}; the corruptions are {} (docs/imagenet-c.md#the-19-corruptions)",
    crate::quote::clip(name),
    suggestion.map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(),
    crate::quote::clip_list(Corruption::ALL.map(Corruption::as_str))
)]
pub struct UnknownCorruption {
    /// The name as written.
    pub(crate) name: String,
    /// The corruption whose name is closest ([`crate::quote::closest`]: at most 3 edits away).
    pub(crate) suggestion: Option<Corruption>,
}

impl FromStr for Corruption {
    type Err = UnknownCorruption;

    fn from_str(name: &str) -> Result<Self, UnknownCorruption> {
        if let Some(c) = Corruption::ALL.into_iter().find(|c| c.as_str() == name) {
            return Ok(c);
        }
        let closest = crate::quote::closest(name, Corruption::ALL.map(Corruption::as_str));
        Err(UnknownCorruption {
            name: name.to_string(),
            suggestion: Corruption::ALL
                .into_iter()
                .find(|c| Some(c.as_str()) == closest),
        })
    }
}

/// All 19 ImageNet-C corruptions in index order as (name, description): [`Corruption::ALL`] read
/// through [`Corruption::as_str`] and [`Corruption::description`], for code that lists names.
pub const CORRUPTIONS: &[(&str, &str)] = &{
    let mut out = [("", ""); Corruption::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = (
            Corruption::ALL[i].as_str(),
            Corruption::ALL[i].description(),
        );
        i += 1;
    }
    out
};

/// How many of [`CORRUPTIONS`] (the first ones) make the ImageNet-C benchmark and its mCE.
pub(crate) const BENCHMARK_COUNT: usize = 15;

/// The imagecorruptions families (docs/imagenet-c.md#corruption-order-and-groups): name and the
/// indices into [`CORRUPTIONS`].
pub(crate) const FAMILIES: &[(&str, std::ops::Range<usize>)] = &[
    ("noise", 0..3),
    ("blur", 3..7),
    ("weather", 7..11),
    ("digital", 11..15),
    ("validation", 15..19),
];

/// Severity levels of every corruption.
pub const SEVERITIES: std::ops::RangeInclusive<u8> = 1..=5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_parses_and_writes_back_exactly() {
        let cases = [
            ("clean", ScenarioKey::Clean),
            (
                "corruption/fog/3",
                ScenarioKey::Corruption {
                    name: "fog",
                    severity: 3,
                },
            ),
            (
                "background/transparent_on/00ff00",
                ScenarioKey::Background {
                    leaf: "transparent_on/00ff00",
                },
            ),
            (
                "ablation/gray_bbox",
                ScenarioKey::Ablation { name: "gray_bbox" },
            ),
            (
                "region_noise/bg/l2/30/t2",
                ScenarioKey::RegionNoise {
                    foreground: false,
                    norm: "l2",
                    level: "30",
                    trial: "2",
                },
            ),
            (
                "placement/ar/own-gray/top-right/56",
                ScenarioKey::Placement {
                    keep_aspect: true,
                    background: "own-gray",
                    position: "top-right",
                    size: "56",
                },
            ),
            (
                "placement/other/centre/84",
                ScenarioKey::Placement {
                    keep_aspect: false,
                    background: "other",
                    position: "centre",
                    size: "84",
                },
            ),
        ];
        for (text, key) in cases {
            assert_eq!(ScenarioKey::parse(text), key, "{text}");
            assert_eq!(key.to_string(), text);
        }
    }

    #[test]
    fn corruption_names_read_back_and_keep_the_index_order() {
        assert_eq!(CORRUPTIONS.len(), 19);
        for (i, c) in Corruption::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(CORRUPTIONS[i], (c.as_str(), c.description()));
            assert_eq!(c.as_str().parse::<Corruption>(), Ok(c));
            assert_eq!(c.to_string(), c.as_str());
            assert!(c.description().contains(&format!("#{c})")), "{c}");
        }
        assert_eq!(Corruption::Fog.as_str(), "fog");
        assert_eq!(Corruption::ALL[BENCHMARK_COUNT], Corruption::SpeckleNoise);
        let key = ScenarioKey::Corruption {
            name: Corruption::Fog.as_str(),
            severity: 3,
        };
        assert_eq!(key.to_string(), "corruption/fog/3");
    }

    #[test]
    fn an_unknown_corruption_names_itself_and_the_closest() {
        let e = "contrat".parse::<Corruption>().unwrap_err();
        assert_eq!(e.suggestion, Some(Corruption::Contrast));
        let text = e.to_string();
        assert!(
            text.starts_with(
                "unknown corruption `contrat` (did you mean `contrast`?); the corruptions are \
                 `gaussian_noise`, "
            ),
            "{text}"
        );
        let e = "fog_of_war_and_peace".parse::<Corruption>().unwrap_err();
        assert_eq!(e.suggestion, None);
        assert!(!e.to_string().contains("did you mean"), "{e}");
        assert!(
            "Fog".parse::<Corruption>().is_err(),
            "names are case-sensitive"
        );
    }

    #[test]
    fn malformed_keys_are_other_and_still_write_back() {
        for text in [
            "fog",
            "",
            "clean/",
            "corruption/fog",
            "corruption/fog/03",
            "corruption/fog/+3",
            "corruption/fog/3/x",
            "corruption/fog/256",
            "region_noise/odd",
            "region_noise/xg/linf/0.25/t1",
            "region_noise/fg/linf/0.25/1",
            "region_noise/fg/linf/0.25/t1/x",
            "placement/ar/centre/56",
            "placement/a/b/c/d",
            "unknown/x",
        ] {
            assert_eq!(ScenarioKey::parse(text), ScenarioKey::Other(text), "{text}");
            assert_eq!(ScenarioKey::parse(text).to_string(), text);
        }
        assert!(ScenarioKey::parse(CLEAN).is_clean());
        assert_eq!(family("corruption/fog/3"), "corruption");
        assert_eq!(family(CLEAN), CLEAN);
    }
}
