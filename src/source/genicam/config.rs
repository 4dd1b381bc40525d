//! `[source.genicam]` ([`GenicamConfig`]): which camera, the GenICam features to set, the stream's
//! buffers and the reconnect keys, checked ([`GenicamConfig::check`], [`GenicamConfigError`]);
//! the PFNC pixel format names robustream converts ([`pixel_format`]). docs/sources.md#genicam-cameras
//! documents every key.

use std::collections::BTreeMap;

use crate::source::camera::reconnecting::ReconnectSettings;
use crate::source::pixfmt::{Cfa, Deep, MonoPacking, PixelFormat};

/// The PFNC (GenICam Pixel Format Naming Convention) names robustream converts, with the
/// converter each uses. `RGB8Packed` / `BGR8Packed` / `YUV422Packed` / `YUV422_YUYV_Packed` are
/// the GigE Vision 1.x names of the same layouts (`YUV422Packed` is U Y V Y); the Bayer mosaics
/// deeper than 8 bits come in each of the four tiles.
pub(crate) const PIXEL_FORMATS: [(&str, PixelFormat); 48] = [
    ("Mono8", PixelFormat::Grey),
    ("Mono10", PixelFormat::Mono10),
    ("Mono12", PixelFormat::Mono12),
    ("Mono16", PixelFormat::Mono16),
    ("Mono10Packed", PixelFormat::MonoPacked(MonoPacking::Gvsp10)),
    ("Mono12Packed", PixelFormat::MonoPacked(MonoPacking::Gvsp12)),
    ("Mono10p", PixelFormat::MonoPacked(MonoPacking::Lsb10)),
    ("Mono12p", PixelFormat::MonoPacked(MonoPacking::Lsb12)),
    ("BayerRG8", PixelFormat::Bayer8(Cfa::Rggb)),
    ("BayerGR8", PixelFormat::Bayer8(Cfa::Grbg)),
    ("BayerGB8", PixelFormat::Bayer8(Cfa::Gbrg)),
    ("BayerBG8", PixelFormat::Bayer8(Cfa::Bggr)),
    ("BayerRG10", PixelFormat::BayerDeep(Cfa::Rggb, Deep::Le10)),
    ("BayerGR10", PixelFormat::BayerDeep(Cfa::Grbg, Deep::Le10)),
    ("BayerGB10", PixelFormat::BayerDeep(Cfa::Gbrg, Deep::Le10)),
    ("BayerBG10", PixelFormat::BayerDeep(Cfa::Bggr, Deep::Le10)),
    ("BayerRG12", PixelFormat::BayerDeep(Cfa::Rggb, Deep::Le12)),
    ("BayerGR12", PixelFormat::BayerDeep(Cfa::Grbg, Deep::Le12)),
    ("BayerGB12", PixelFormat::BayerDeep(Cfa::Gbrg, Deep::Le12)),
    ("BayerBG12", PixelFormat::BayerDeep(Cfa::Bggr, Deep::Le12)),
    ("BayerRG16", PixelFormat::BayerDeep(Cfa::Rggb, Deep::Le16)),
    ("BayerGR16", PixelFormat::BayerDeep(Cfa::Grbg, Deep::Le16)),
    ("BayerGB16", PixelFormat::BayerDeep(Cfa::Gbrg, Deep::Le16)),
    ("BayerBG16", PixelFormat::BayerDeep(Cfa::Bggr, Deep::Le16)),
    (
        "BayerRG10Packed",
        PixelFormat::BayerDeep(Cfa::Rggb, Deep::Packed(MonoPacking::Gvsp10)),
    ),
    (
        "BayerGR10Packed",
        PixelFormat::BayerDeep(Cfa::Grbg, Deep::Packed(MonoPacking::Gvsp10)),
    ),
    (
        "BayerGB10Packed",
        PixelFormat::BayerDeep(Cfa::Gbrg, Deep::Packed(MonoPacking::Gvsp10)),
    ),
    (
        "BayerBG10Packed",
        PixelFormat::BayerDeep(Cfa::Bggr, Deep::Packed(MonoPacking::Gvsp10)),
    ),
    (
        "BayerRG12Packed",
        PixelFormat::BayerDeep(Cfa::Rggb, Deep::Packed(MonoPacking::Gvsp12)),
    ),
    (
        "BayerGR12Packed",
        PixelFormat::BayerDeep(Cfa::Grbg, Deep::Packed(MonoPacking::Gvsp12)),
    ),
    (
        "BayerGB12Packed",
        PixelFormat::BayerDeep(Cfa::Gbrg, Deep::Packed(MonoPacking::Gvsp12)),
    ),
    (
        "BayerBG12Packed",
        PixelFormat::BayerDeep(Cfa::Bggr, Deep::Packed(MonoPacking::Gvsp12)),
    ),
    (
        "BayerRG10p",
        PixelFormat::BayerDeep(Cfa::Rggb, Deep::Packed(MonoPacking::Lsb10)),
    ),
    (
        "BayerGR10p",
        PixelFormat::BayerDeep(Cfa::Grbg, Deep::Packed(MonoPacking::Lsb10)),
    ),
    (
        "BayerGB10p",
        PixelFormat::BayerDeep(Cfa::Gbrg, Deep::Packed(MonoPacking::Lsb10)),
    ),
    (
        "BayerBG10p",
        PixelFormat::BayerDeep(Cfa::Bggr, Deep::Packed(MonoPacking::Lsb10)),
    ),
    (
        "BayerRG12p",
        PixelFormat::BayerDeep(Cfa::Rggb, Deep::Packed(MonoPacking::Lsb12)),
    ),
    (
        "BayerGR12p",
        PixelFormat::BayerDeep(Cfa::Grbg, Deep::Packed(MonoPacking::Lsb12)),
    ),
    (
        "BayerGB12p",
        PixelFormat::BayerDeep(Cfa::Gbrg, Deep::Packed(MonoPacking::Lsb12)),
    ),
    (
        "BayerBG12p",
        PixelFormat::BayerDeep(Cfa::Bggr, Deep::Packed(MonoPacking::Lsb12)),
    ),
    ("RGB8", PixelFormat::Rgb24),
    ("RGB8Packed", PixelFormat::Rgb24),
    ("BGR8", PixelFormat::Bgr24),
    ("BGR8Packed", PixelFormat::Bgr24),
    ("YUV422_8", PixelFormat::Yuyv),
    ("YUV422_YUYV_Packed", PixelFormat::Yuyv),
    ("YUV422_8_UYVY", PixelFormat::Uyvy),
    ("YUV422Packed", PixelFormat::Uyvy),
];

/// The converter of a PFNC pixel format name (exact, as the camera spells it), if robustream
/// converts it.
pub(crate) fn pixel_format(name: &str) -> Option<PixelFormat> {
    PIXEL_FORMATS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, f)| f)
}

/// The converted names as one list for messages.
pub(crate) fn pixel_format_names() -> String {
    PIXEL_FORMATS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A value of `[source.genicam.features]`: set through the node map as what it is written as.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(untagged)]
pub(crate) enum FeatureValue {
    /// A Boolean feature (`ReverseX = true`).
    Bool(bool),
    /// An integer feature (`BinningHorizontal = 2`).
    Int(i64),
    /// A float feature (`BlackLevel = 1.5`).
    Float(f64),
    /// A string or enumeration feature by entry name (`LineSelector = "Line1"`).
    Text(String),
}

impl std::fmt::Display for FeatureValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bool(b) => write!(f, "{b}"),
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(x) => write!(f, "{x}"),
            Self::Text(s) => write!(f, "\"{s}\""),
        }
    }
}

/// `[source.genicam]`: the camera and what to set on it. Absent keys leave the camera's own value.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenicamConfig {
    /// The camera: its Aravis device id (`robustream devices`), serial number, IP address or
    /// physical (MAC) address; `genicam://<device>` sets it too. Absent = the first camera found.
    #[serde(default)]
    pub(crate) device: Option<String>,
    /// `PixelFormat`, a PFNC name ([`PIXEL_FORMATS`]); absent = the camera's current one, which
    /// must then be one robustream converts.
    #[serde(default)]
    pub(crate) pixel_format: Option<String>,
    /// `Width`, pixels.
    #[serde(default)]
    pub(crate) width: Option<u32>,
    /// `Height`, pixels (lines per frame on a line-scan camera; see `lines_per_frame`).
    #[serde(default)]
    pub(crate) height: Option<u32>,
    /// `OffsetX`, pixels (the region of interest's left edge).
    #[serde(default)]
    pub(crate) offset_x: Option<u32>,
    /// `OffsetY`, pixels.
    #[serde(default)]
    pub(crate) offset_y: Option<u32>,
    /// `ExposureTime` (or `ExposureTimeAbs`), microseconds; setting it turns `ExposureAuto` off.
    #[serde(default)]
    pub(crate) exposure_us: Option<f64>,
    /// `Gain` (or `GainRaw` where that is all the camera has), dB; setting it turns `GainAuto`
    /// off.
    #[serde(default)]
    pub(crate) gain_db: Option<f64>,
    /// `AcquisitionFrameRate` (enabled first where the camera has
    /// `AcquisitionFrameRateEnable`), frames per second.
    #[serde(default)]
    pub(crate) fps: Option<f64>,
    /// `TriggerMode` of the `FrameStart` trigger: `"On"` or `"Off"`.
    #[serde(default)]
    pub(crate) trigger_mode: Option<String>,
    /// GigE Vision stream packet size, bytes (`GevSCPSPacketSize`); absent = negotiated by
    /// Aravis. GigE Vision cameras only.
    #[serde(default)]
    pub(crate) packet_size: Option<u32>,
    /// Ask the camera to resend missing packets (GigE Vision; default true). False makes every
    /// lost packet an incomplete buffer (counted as `missing_packets`).
    #[serde(default = "default_true")]
    pub(crate) packet_resend: bool,
    /// Stream buffers handed to Aravis (2..=64, default 8).
    #[serde(default = "default_buffers")]
    pub(crate) buffers: u32,
    /// Line-scan cameras: lines per frame (a frame is a page of this many lines; sets `Height`,
    /// so not together with `height`).
    #[serde(default)]
    pub(crate) lines_per_frame: Option<u32>,
    /// Reopen a lost camera with back-off (default true), as `[source.camera] reconnect`.
    #[serde(default = "default_true")]
    pub(crate) reconnect: bool,
    /// Longest wait between reconnect attempts, seconds (default 5).
    #[serde(default = "default_backoff_max")]
    pub(crate) backoff_max: f64,
    /// Seconds without a complete frame after which the camera counts as lost (default 3).
    #[serde(default = "default_timeout")]
    pub(crate) timeout: f64,
    /// Other features by name, set in name order after the keys above (`[source.genicam.features]`).
    #[serde(default)]
    pub(crate) features: BTreeMap<String, FeatureValue>,
}

fn default_true() -> bool {
    true
}
fn default_buffers() -> u32 {
    8
}
fn default_backoff_max() -> f64 {
    5.0
}
fn default_timeout() -> f64 {
    3.0
}

impl Default for GenicamConfig {
    fn default() -> Self {
        Self {
            device: None,
            pixel_format: None,
            width: None,
            height: None,
            offset_x: None,
            offset_y: None,
            exposure_us: None,
            gain_db: None,
            fps: None,
            trigger_mode: None,
            packet_size: None,
            packet_resend: true,
            buffers: default_buffers(),
            lines_per_frame: None,
            reconnect: true,
            backoff_max: default_backoff_max(),
            timeout: default_timeout(),
            features: BTreeMap::new(),
        }
    }
}

/// The first reconnect wait, seconds (as the V4L2 camera's).
const BACKOFF_START: f64 = 0.1;

impl GenicamConfig {
    /// Checks what can be checked without the camera; the message names the key. What the camera
    /// accepts (ranges, enumeration entries) is checked when it opens.
    pub(crate) fn check(&self) -> Result<(), GenicamConfigError> {
        let out = |key: &str, value: String, must: &str| {
            Err(GenicamConfigError::OutOfRange {
                key: key.to_string(),
                value,
                must: must.to_string(),
            })
        };
        if self.device.as_deref().is_some_and(|d| d.trim().is_empty()) {
            return out(
                "device",
                "\"\"".into(),
                "name a camera (`robustream devices`)",
            );
        }
        for (key, v) in [
            ("width", self.width),
            ("height", self.height),
            ("lines_per_frame", self.lines_per_frame),
        ] {
            if let Some(v) = v
                && !(1..=65535).contains(&v)
            {
                return out(key, v.to_string(), "be in 1..=65535");
            }
        }
        for (key, v) in [("offset_x", self.offset_x), ("offset_y", self.offset_y)] {
            if let Some(v) = v
                && v > 65535
            {
                return out(key, v.to_string(), "be in 0..=65535");
            }
        }
        if self.lines_per_frame.is_some() && self.height.is_some() {
            return out(
                "lines_per_frame",
                self.lines_per_frame.unwrap_or_default().to_string(),
                "not be set together with `height` (both set Height); keep one",
            );
        }
        if let Some(e) = self.exposure_us
            && !(e.is_finite() && e > 0.0 && e <= 1e8)
        {
            return out("exposure_us", e.to_string(), "be in (0, 1e8] microseconds");
        }
        if let Some(g) = self.gain_db
            && !(g.is_finite() && (-100.0..=100.0).contains(&g))
        {
            return out("gain_db", g.to_string(), "be in -100..=100 dB");
        }
        if let Some(fps) = self.fps
            && !(fps.is_finite() && fps > 0.0 && fps <= 100_000.0)
        {
            return out("fps", fps.to_string(), "be a number in (0, 100000]");
        }
        if let Some(t) = &self.trigger_mode
            && t != "On"
            && t != "Off"
        {
            return out("trigger_mode", format!("\"{t}\""), "be \"On\" or \"Off\"");
        }
        if let Some(p) = self.packet_size
            && !(576..=16384).contains(&p)
        {
            return out("packet_size", p.to_string(), "be in 576..=16384 bytes");
        }
        if !(2..=64).contains(&self.buffers) {
            return out("buffers", self.buffers.to_string(), "be in 2..=64");
        }
        if !(self.backoff_max.is_finite() && (BACKOFF_START..=3600.0).contains(&self.backoff_max)) {
            return out(
                "backoff_max",
                self.backoff_max.to_string(),
                "be in 0.1..=3600 seconds",
            );
        }
        if !(self.timeout.is_finite() && self.timeout > 0.0 && self.timeout <= 600.0) {
            return out(
                "timeout",
                self.timeout.to_string(),
                "be in (0, 600] seconds",
            );
        }
        if let Some(name) = &self.pixel_format
            && pixel_format(name).is_none()
        {
            return Err(GenicamConfigError::UnknownFormat { name: name.clone() });
        }
        if let Some((name, v)) = self.features.iter().find(|(n, _)| !is_feature_name(n)) {
            return Err(GenicamConfigError::OutOfRange {
                key: format!("features.{name}"),
                value: v.to_string(),
                must: "be a GenICam feature name (letters, digits and `_`)".into(),
            });
        }
        Ok(())
    }

    /// The reconnect keys for the reconnect state machine.
    // Used by the Aravis camera (feature `genicam`) and the unit tests.
    #[cfg_attr(not(feature = "genicam"), allow(dead_code))]
    pub(crate) fn reconnect_settings(&self) -> ReconnectSettings {
        ReconnectSettings {
            reconnect: self.reconnect,
            backoff_max: self.backoff_max,
            timeout: self.timeout,
            kind: "genicam",
        }
    }

    /// The `Height` to set: `height`, else `lines_per_frame`.
    // Used by the Aravis camera (feature `genicam`) and the unit tests.
    #[cfg_attr(not(feature = "genicam"), allow(dead_code))]
    pub(crate) fn height_to_set(&self) -> Option<(&'static str, u32)> {
        self.height
            .map(|h| ("height", h))
            .or(self.lines_per_frame.map(|l| ("lines_per_frame", l)))
    }
}

/// A GenICam feature name: SFNC names are letters, digits and underscores, starting with a letter.
fn is_feature_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A `[source.genicam]` setting that cannot be used. Display = the message, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GenicamConfigError {
    /// `key = value` outside its range.
    #[error("[source.genicam] {key} = {value} must {must}")]
    OutOfRange {
        /// The key (`width`, `features.Foo`…).
        key: String,
        /// The value as written back.
        value: String,
        /// The rule it breaks.
        must: String,
    },
    /// A `pixel_format` no converter reads.
    #[error(
        "[source.genicam] pixel_format = \"{name}\" is not one robustream converts; use one of {}",
        pixel_format_names()
    )]
    UnknownFormat {
        /// The name as written.
        name: String,
    },
}
