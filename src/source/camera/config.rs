//! `[source.camera]` ([`CameraConfig`]): the mode to ask for, the driver buffers, the reconnect
//! back-off and timeout, checked ([`CameraConfig::check`], [`CameraConfigError`]).

use crate::source::pixfmt::PixelFormat;

/// The formats asked for when `format` is absent, in order of preference: uncompressed first (MJPEG
/// adds its own compression artefacts to what a robustness run measures), MJPEG when the device
/// offers nothing else.
pub(crate) const DEFAULT_FORMATS: [&str; 6] = ["YUYV", "UYVY", "RGB3", "BGR3", "GREY", "MJPG"];

/// `[source.camera]`: what to ask the camera for and how to survive it going away.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraConfig {
    /// Frame width to ask for, pixels; absent = the device's current width.
    #[serde(default)]
    pub(crate) width: Option<u32>,
    /// Frame height to ask for, pixels; absent = the device's current height.
    #[serde(default)]
    pub(crate) height: Option<u32>,
    /// Frame rate to ask for, frames per second (sent as the frame interval 1/fps, e.g. 7.5 →
    /// 2/15 s); absent = the device's current rate.
    #[serde(default)]
    pub(crate) fps: Option<f64>,
    /// Pixel formats (V4L2 fourccs) in order of preference, e.g. `["MJPG", "YUYV"]`: the first one
    /// the device offers is asked for. Each must be one robustream converts (YUYV, UYVY, RGB3, BGR3,
    /// GREY, MJPG). Default [`DEFAULT_FORMATS`].
    #[serde(default)]
    pub(crate) format: Option<Vec<String>>,
    /// Driver buffers in the mmap ring (2..=32, default 4): more absorbs longer stalls of the reader,
    /// fewer keeps latency lower.
    #[serde(default = "default_buffers")]
    pub(crate) buffers: u32,
    /// Reopen a lost camera with back-off (default true); false ends the stream when it is lost.
    #[serde(default = "default_reconnect")]
    pub(crate) reconnect: bool,
    /// Longest wait between reconnect attempts, seconds (default 5; waits start at 0.1 s and double).
    #[serde(default = "default_backoff_max")]
    pub(crate) backoff_max: f64,
    /// Seconds without a frame after which the camera counts as lost (default 3; the first frame
    /// after opening is awaited this long too).
    #[serde(default = "default_timeout")]
    pub(crate) timeout: f64,
}

fn default_buffers() -> u32 {
    4
}
fn default_reconnect() -> bool {
    true
}
fn default_backoff_max() -> f64 {
    5.0
}
fn default_timeout() -> f64 {
    3.0
}

/// The first reconnect wait, seconds (then doubled up to `backoff_max`).
pub(crate) const BACKOFF_START: f64 = 0.1;

impl Default for CameraConfig {
    fn default() -> Self {
        Self {
            width: None,
            height: None,
            fps: None,
            format: None,
            buffers: default_buffers(),
            reconnect: default_reconnect(),
            backoff_max: default_backoff_max(),
            timeout: default_timeout(),
        }
    }
}

impl CameraConfig {
    /// Checks ranges and format names; the message names the key (`[source.camera] …`).
    pub(crate) fn check(&self) -> Result<(), CameraConfigError> {
        let out = |key, value: String, must: String| {
            Err(CameraConfigError::OutOfRange { key, value, must })
        };
        for (key, v) in [("width", self.width), ("height", self.height)] {
            if let Some(v) = v
                && !(1..=16384).contains(&v)
            {
                return out(key, v.to_string(), "be in 1..=16384".into());
            }
        }
        if let Some(fps) = self.fps
            && !(fps.is_finite() && fps > 0.0 && fps <= 1000.0)
        {
            return out("fps", fps.to_string(), "be a number in (0, 1000]".into());
        }
        if !(2..=32).contains(&self.buffers) {
            return out("buffers", self.buffers.to_string(), "be in 2..=32".into());
        }
        if !(self.backoff_max.is_finite() && (BACKOFF_START..=3600.0).contains(&self.backoff_max)) {
            return out(
                "backoff_max",
                self.backoff_max.to_string(),
                format!("be in {BACKOFF_START}..=3600 seconds"),
            );
        }
        if !(self.timeout.is_finite() && self.timeout > 0.0 && self.timeout <= 600.0) {
            return out(
                "timeout",
                self.timeout.to_string(),
                "be in (0, 600] seconds".into(),
            );
        }
        if self.format.as_ref().is_some_and(Vec::is_empty) {
            return Err(CameraConfigError::NoFormat);
        }
        self.formats().map(|_| ())
    }

    /// The preference list as converter formats (the default when `format` is absent).
    pub(crate) fn formats(&self) -> Result<Vec<PixelFormat>, CameraConfigError> {
        match &self.format {
            None => Ok(DEFAULT_FORMATS
                .iter()
                .filter_map(|f| parse_fourcc(f))
                .collect()),
            Some(list) => list
                .iter()
                .map(|name| {
                    parse_fourcc(name)
                        .ok_or_else(|| CameraConfigError::UnknownFormat { name: name.clone() })
                })
                .collect(),
        }
    }
}

/// A `[source.camera]` setting that cannot be used. Display = the message, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CameraConfigError {
    /// `key = value` outside its range.
    #[error("[source.camera] {key} = {value} must {must}")]
    OutOfRange {
        /// The key ("width", "height", "fps", "buffers", "backoff_max", "timeout").
        key: &'static str,
        /// The value as written back.
        value: String,
        /// The rule it breaks ("be in 2..=32").
        must: String,
    },
    /// `format = []`.
    #[error("[source.camera] format is empty; list fourccs such as [\"YUYV\"] or remove it")]
    NoFormat,
    /// A `format` entry no converter reads.
    #[error(
        "[source.camera] format `{name}` is not one robustream converts; use {}",
        DEFAULT_FORMATS.join(", ")
    )]
    UnknownFormat {
        /// The fourcc as written.
        name: String,
    },
}

/// A fourcc name as a converter format: case-insensitive, `MJPEG` accepted for `MJPG`.
fn parse_fourcc(name: &str) -> Option<PixelFormat> {
    let upper = name.trim().to_ascii_uppercase();
    let upper = if upper == "MJPEG" {
        "MJPG".into()
    } else {
        upper
    };
    let bytes: [u8; 4] = upper.as_bytes().try_into().ok()?;
    PixelFormat::from_fourcc(bytes)
}
