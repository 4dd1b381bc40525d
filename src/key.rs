//! The benchmark vocabulary every layer shares: scenario keys and their grammar ([`ScenarioKey`],
//! the reference scenario's key [`CLEAN`]) and the ImageNet-C corruption names, families and
//! severities. It sits on the ground floor so that sources (which read the released corruption
//! folders), scenarios, metrics and reports name the same things without importing each other.

use std::fmt;

/// The key of the reference scenario: the unmodified frame.
pub const CLEAN: &str = "clean";

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
pub enum ScenarioKey<'a> {
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
    pub fn parse(key: &'a str) -> Self {
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
    pub fn is_clean(&self) -> bool {
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
pub fn family(key: &str) -> &str {
    key.split('/').next().unwrap_or(key)
}

/// All 19 ImageNet-C corruptions in index order (docs/imagenet-c.md#corruption-order-and-groups):
/// the first [`BENCHMARK_COUNT`] are the benchmark corruptions (mCE), the rest the validation ones.
/// One-line description each.
pub const CORRUPTIONS: &[(&str, &str)] = &[
    (
        "gaussian_noise",
        "additive Gaussian noise per pixel and channel (docs/imagenet-c.md#gaussian_noise)",
    ),
    (
        "shot_noise",
        "Poisson photon noise per pixel and channel (docs/imagenet-c.md#shot_noise)",
    ),
    (
        "impulse_noise",
        "salt-and-pepper noise, each channel flipped independently \
         (docs/imagenet-c.md#impulse_noise)",
    ),
    (
        "defocus_blur",
        "anti-aliased disk kernel, reflect-101 border (docs/imagenet-c.md#defocus_blur)",
    ),
    (
        "glass_blur",
        "blur, local pixel copies, blur again (docs/imagenet-c.md#glass_blur)",
    ),
    (
        "motion_blur",
        "one-sided half-Gaussian streak at a random angle (docs/imagenet-c.md#motion_blur)",
    ),
    (
        "zoom_blur",
        "average of centrally zoomed copies (docs/imagenet-c.md#zoom_blur)",
    ),
    (
        "snow",
        "motion-blurred snow layer over a darkened, greyed image (docs/imagenet-c.md#snow)",
    ),
    (
        "frost",
        "frost texture blended over the image (docs/imagenet-c.md#frost)",
    ),
    (
        "fog",
        "plasma-fractal fog, contrast reduced (docs/imagenet-c.md#fog)",
    ),
    (
        "brightness",
        "HSV value raised (docs/imagenet-c.md#brightness)",
    ),
    (
        "contrast",
        "every channel pulled towards its mean (docs/imagenet-c.md#contrast)",
    ),
    (
        "elastic_transform",
        "smooth random displacement field, imagecorruptions variant \
         (docs/imagenet-c.md#elastic_transform)",
    ),
    (
        "pixelate",
        "box-downsampled and box-upsampled back, Pillow-exact (docs/imagenet-c.md#pixelate)",
    ),
    (
        "jpeg_compression",
        "JPEG round trip at low quality, libjpeg-turbo-exact (docs/imagenet-c.md#jpeg_compression)",
    ),
    (
        "speckle_noise",
        "multiplicative Gaussian noise per pixel and channel (docs/imagenet-c.md#speckle_noise)",
    ),
    (
        "gaussian_blur",
        "separable Gaussian blur, edge replication (docs/imagenet-c.md#gaussian_blur)",
    ),
    (
        "spatter",
        "water highlights or mud blobs from a random liquid layer (docs/imagenet-c.md#spatter)",
    ),
    (
        "saturate",
        "HSV saturation scaled and offset (docs/imagenet-c.md#saturate)",
    ),
];

/// How many of [`CORRUPTIONS`] (the first ones) make the ImageNet-C benchmark and its mCE.
pub const BENCHMARK_COUNT: usize = 15;

/// The imagecorruptions families (docs/imagenet-c.md#corruption-order-and-groups): name and the
/// indices into [`CORRUPTIONS`].
pub const FAMILIES: &[(&str, std::ops::Range<usize>)] = &[
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
