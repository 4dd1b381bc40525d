//! A GenICam camera (GigE Vision / USB3 Vision, through Aravis) as a live source, and its part of
//! `robustream devices` (docs/sources.md#genicam-cameras).
//!
//! **Device.** `--source genicam://<device>` or `kind = "genicam"` with `[source.genicam] device`:
//! the Aravis device id `robustream devices` lists, the serial number (the end of the id), the IP
//! address or the physical (MAC) address. `genicam://` alone (or no `device`) is the first camera
//! found.
//!
//! **Features** ([`GenicamConfig`]): pixel format, size, offsets, exposure, gain, frame rate,
//! trigger mode, packet size and any feature by name are set when the camera opens (and again on
//! each reconnect), in that order, each read back; a value the camera refuses is an open error
//! naming the key, the value and what the camera accepts; a value it rounds is one line.
//!
//! **Frames.** The stream's buffers are converted by [`super::pixfmt`] (Mono8/10/12/16,
//! Bayer RG/GR/GB/BG 8 demosaiced bilinearly, RGB8, BGR8, YUV422). Ids are `genicam/<n>`. The
//! capture time (`Frame::captured`, from which age and latency are measured) is the buffer's
//! system timestamp (host real time when Aravis received the frame) mapped onto the monotonic
//! clock: now − (real time now − timestamp). The stream time (`timestamp`) runs on the camera's
//! own buffer timestamp, anchored at the first frame as the V4L2 camera anchors driver time.
//!
//! **Stream health.** A buffer whose status is not success is counted by cause
//! (`missing_packets`, `timeout`, `size_mismatch`, `aborted`, …) and gaps in the frame ids as
//! `sequence_gap` (frames that never reached a buffer: underruns, frames lost whole), all in
//! [`Source::lost_causes`]; the stream's own statistics (completed, failures, underruns, resent
//! and missing packets) are in the report's `stream` object.
//!
//! **Reconnect**: the V4L2 camera's state machine ([`crate::source::camera::reconnecting`]) with
//! `[source.genicam] reconnect / backoff_max / timeout`. A camera killed or unplugged gives no
//! buffers: after `timeout` s it is lost, reopened with back-off, and the outage recorded.
//!
//! Without the `genicam` feature, opening one and listing them fail with one line naming it.

#[cfg(feature = "genicam")]
mod arv;
mod config;

use std::collections::BTreeMap;
use std::path::Path;

pub use config::GenicamConfig;
/// The converter of a PFNC pixel format name ([`config::PIXEL_FORMATS`]), for
/// [`super::convert_camera_buffer`].
pub(crate) use config::pixel_format as pfnc_format;
#[cfg(test)]
use config::{FeatureValue, pixel_format};

use super::camera::reconnecting::{OpenError, OpenedMode};
use super::{RawSourceConfig, Source, SourceError, SourceErrorKind, SourceKind};
use crate::frame::LabelSpace;

/// The scheme of a `--source` naming a GenICam camera.
pub(crate) const SCHEME: &str = "genicam://";

/// The line of a build without the `genicam` feature.
pub(crate) const FEATURE_MISSING: &str = "GenICam cameras need the `genicam` feature, and this \
     robustream was built without it; rebuild with default features (`cargo build --release`, \
     needs libaravis-dev)";

/// This robustream was built without the `genicam` feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{FEATURE_MISSING}")]
pub struct FeatureMissing;

/// Whether `config` is a GenICam source: `kind = "genicam"`, or a `genicam://` path.
pub(crate) fn is_genicam(config: &RawSourceConfig) -> bool {
    match config.kind {
        Some(SourceKind::Genicam) => true,
        Some(_) => false,
        None => config.path.to_str().is_some_and(|p| p.starts_with(SCHEME)),
    }
}

/// The device a `genicam://<device>` path names (`None` for `genicam://` alone or another path).
pub(crate) fn device_of_path(path: &Path) -> Option<String> {
    let rest = path.to_str()?.strip_prefix(SCHEME)?;
    (!rest.is_empty()).then(|| rest.to_string())
}

/// What an opened GenICam camera runs in: its id, pixel format, region, rate and every value read
/// back after setting it.
// Made only by `arv.rs` (feature `genicam`) and the unit tests.
#[cfg_attr(not(feature = "genicam"), allow(dead_code))]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GenicamMode {
    pub(crate) id: String,
    pub(crate) pixel_format: String,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) offset: [u32; 2],
    pub(crate) fps: Option<f64>,
    pub(crate) features: BTreeMap<String, serde_json::Value>,
}

impl std::fmt::Display for GenicamMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}×{}", self.pixel_format, self.width, self.height)?;
        match self.fps {
            Some(fps) => write!(f, "@{}", (fps * 100.0).round() / 100.0),
            None => Ok(()),
        }
    }
}

impl OpenedMode for GenicamMode {
    fn fps(&self) -> Option<f64> {
        self.fps
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "pixel_format": self.pixel_format,
            "width": self.width,
            "height": self.height,
            "offset_x": self.offset[0],
            "offset_y": self.offset[1],
            "fps": self.fps,
            "features": self.features,
        })
    }
}

/// Why a GenICam camera did not open. Display = the line after the source's name.
// Without the `genicam` feature no camera opens: the variants are made only by the unit tests.
#[cfg_attr(not(feature = "genicam"), allow(dead_code))]
#[derive(Debug, thiserror::Error)]
pub(crate) enum GenicamError {
    /// No camera matches (or none at all): a typo at start, an unplugged camera while
    /// reconnecting.
    #[error("no GenICam camera `{spec}` found; run `robustream devices` to list cameras")]
    Missing {
        /// What was asked for (`any` for the first camera).
        spec: String,
    },
    /// Found but not opened (another program holds its control channel…).
    #[error("cannot open {id} ({message}); check that no other program controls the camera")]
    Open {
        /// The device id.
        id: String,
        /// Aravis's error.
        message: String,
    },
    /// A value the camera refused.
    #[error(
        "[source.genicam] {key} = {value} was refused by the camera ({message}); it accepts {accepts}"
    )]
    Rejected {
        /// The key (`width`, `features.Foo`).
        key: String,
        /// The value as written.
        value: String,
        /// Aravis's error.
        message: String,
        /// What the camera accepts (a range, entries).
        accepts: String,
    },
    /// The camera is in a pixel format robustream does not convert.
    #[error(
        "the camera sends {format}, which robustream does not convert; set `[source.genicam] \
         pixel_format` to one of its formats ({offers}) that robustream converts"
    )]
    NotConverted {
        /// The camera's format.
        format: String,
        /// What it offers.
        offers: String,
    },
    /// A stream call failed.
    #[error("cannot {action} ({message})")]
    Stream {
        /// What was being done.
        action: String,
        /// Aravis's error.
        message: String,
    },
    /// A `[source.genicam]` setting that cannot be used.
    #[error(transparent)]
    Config(#[from] config::GenicamConfigError),
}

impl OpenError for GenicamError {
    fn is_missing(&self) -> bool {
        matches!(self, Self::Missing { .. })
    }
}

/// A GenICam camera as `robustream devices` lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GenicamInfo {
    /// Aravis's device id (what `genicam://` takes).
    pub(crate) id: String,
    /// Vendor name.
    pub(crate) vendor: String,
    /// Model name.
    pub(crate) model: String,
    /// Serial number (empty when it could not be read).
    pub(crate) serial: String,
    /// Network or USB address.
    pub(crate) address: String,
    /// `GigEVision` or `USB3Vision`.
    pub(crate) protocol: String,
    /// The `PixelFormat` entries it offers.
    pub(crate) pixel_formats: Vec<String>,
    /// Sensor size `[width, height]`.
    pub(crate) sensor: Option<[u32; 2]>,
    /// Why it could not be opened to read the above, if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// Every GenICam camera found (`robustream devices`); without the feature [`FeatureMissing`].
pub fn list_devices() -> Result<Vec<GenicamInfo>, FeatureMissing> {
    #[cfg(feature = "genicam")]
    {
        Ok(arv::list())
    }
    #[cfg(not(feature = "genicam"))]
    {
        Err(FeatureMissing)
    }
}

/// The GenICam part of `robustream devices` as text.
pub fn render_devices(list: &[GenicamInfo]) -> String {
    if list.is_empty() {
        return "no GenICam cameras found\n".into();
    }
    let mut out = String::new();
    for d in list {
        out += &format!(
            "{} ({} {}, serial {}, {} {}) — --source {SCHEME}{}\n",
            d.id, d.vendor, d.model, d.serial, d.protocol, d.address, d.id
        );
        if let Some(e) = &d.error {
            out += &format!("  cannot query ({e})\n");
            continue;
        }
        if let Some([w, h]) = d.sensor {
            out += &format!("  sensor {w}×{h}\n");
        }
        let marked: Vec<String> = d
            .pixel_formats
            .iter()
            .map(|f| match config::pixel_format(f) {
                Some(_) => f.clone(),
                None => format!("{f} (not converted)"),
            })
            .collect();
        out += &format!("  pixel formats: {}\n", marked.join(", "));
    }
    out
}

/// Opens the camera `config` names (`[source.genicam] device`, else the `genicam://` path's).
pub(crate) fn open(
    path: &Path,
    config: Option<&GenicamConfig>,
    _labels: &LabelSpace,
) -> Result<Box<dyn Source>, SourceError> {
    let mut config = config.cloned().unwrap_or_default();
    if config.device.is_none() {
        // `genicam://<device>`, or (`kind = "genicam"`, `--source-kind genicam`) the path itself.
        config.device = device_of_path(path).or_else(|| {
            path.to_str()
                .filter(|p| !p.is_empty() && !p.starts_with(SCHEME))
                .map(str::to_string)
        });
    }
    config.check().map_err(|e| {
        SourceError::at(SourceErrorKind::Settings, path, e.to_string()).caused_by(e)
    })?;
    open_camera(path, config)
}

#[cfg(feature = "genicam")]
fn open_camera(path: &Path, config: GenicamConfig) -> Result<Box<dyn Source>, SourceError> {
    use super::camera::reconnecting::Reconnecting;
    use super::reconnect::SystemClock;
    let name = config
        .device
        .clone()
        .unwrap_or_else(|| path.display().to_string());
    let settings = config.reconnect_settings();
    let camera = arv::ArvCamera::new(config);
    let log: Box<dyn Fn(&str) + Send> = Box::new(|line| eprintln!("{line}"));
    let source = Reconnecting::start(camera, SystemClock::default(), settings, name.into(), log)
        .map_err(|e| SourceError::at(SourceErrorKind::Open, path, e.to_string()).caused_by(e))?;
    Ok(Box::new(source))
}

#[cfg(not(feature = "genicam"))]
fn open_camera(path: &Path, _config: GenicamConfig) -> Result<Box<dyn Source>, SourceError> {
    Err(SourceError::at(
        SourceErrorKind::Feature,
        path,
        FEATURE_MISSING,
    ))
}

#[cfg(test)]
mod tests;
