//! A V4L2 camera as a live source, and `robustream devices`.
//!
//! **Device.** `--source /dev/video0` (any `/dev/video*` or `/dev/v4l/…` path), `--source camera:0`
//! (= `/dev/video0`; `camera` alone = `camera:0`), or `kind = "camera"` with any device path (e.g. a
//! stable `/dev/v4l/by-id/…` link). `robustream devices` lists what is there.
//!
//! **Format negotiation** (`[source.camera]`, [`CameraConfig`]). The first fourcc of `format` the
//! device offers is asked for, with `width` × `height` (absent: the device's current size) and
//! `fps` (absent: the device's current rate). The driver may give something else (the nearest size
//! it has, a lower rate); what it gave is read back and used, and when it differs from what was asked
//! one line says so (`camera /dev/video0: asked MJPG 1280×720@30, driver gave YUYV 640×480@30`). A
//! device that offers none of the asked formats is an open error listing what it offers. Buffers are
//! converted to RGB by [`super::pixfmt`] straight from the mapped driver buffer into the frame's
//! image (no intermediate copy); `decode_ms` is that conversion.
//!
//! **Frames.** Ids are `camera/<n>` (n = 0-based count of delivered frames, zero-padded to 8 digits
//! like the synthetic camera's, stable across reconnects). `timestamp` is the driver's capture time
//! relative to the first frame; after a reconnect it is re-anchored on the host clock (the driver's
//! clock may restart), so stream time keeps running through outages. Gaps in the driver's buffer
//! sequence numbers are frames the driver dropped before we saw them: counted in `driver_drops`. A
//! buffer that does not convert (a truncated or damaged MJPEG frame, a buffer the driver flagged as
//! corrupted) is one skipped item, not a reconnect.
//!
//! **Reconnect.** When a dequeue fails (the device was unplugged: `ENODEV`), or no frame came for
//! `timeout` seconds, the device is closed and reopened with exponential back-off: first try after
//! 0.1 s, the wait doubling up to `backoff_max` (default 5 s). The run goes on meanwhile (a live
//! source: the pipeline just sees no frames); one line is printed when the camera is lost and one
//! when it is back, with the outage length. An outage ends with the first frame after a reopen.
//! Every wait watches the run's stop flag in slices of `POLL_SLICE`, so Ctrl-C or `--duration`
//! ends a source in back-off within ~0.1 s — except the wait for the first frame after a (re)open,
//! one blocking call of at most `timeout` (the `v4l` stream starts inside that call; polling before
//! it would need its buffers queued, which the crate does not expose). With `reconnect = false` a
//! lost camera ends the stream (one skipped item saying why, then the end). [`Source::report`]
//! gives `{device, format, frames, driver_drops, skipped, reconnects, outage_count, outage_s,
//! outages: [{at_s, duration_s, attempts, error, recovered}]}`, the outage fields as a network
//! stream's (docs/output.md#runsource_report; an outage the run ended in is listed last,
//! `recovered: false`).
//!
//! **A device missing at start is an open error**, not a wait: `/dev/video7: No such device; run
//! `robustream devices` to list cameras`. A typo in the path should fail at once rather than hang a
//! run; reconnecting is for a camera that was working.
//!
//! The reconnect state machine ([`Reconnecting`]) sees the hardware only through the small
//! `Camera` trait (open / grab / close) and time only through `Clock`, so back-off, outage
//! accounting and stop handling are unit-tested with a scripted fake; the V4L2 implementation (the
//! `v4l` crate, mmap streaming) is compiled with the `camera` feature. Without it, opening a camera
//! and `robustream devices` fail with a line naming the missing feature.
//!
//! The files: [`config`] (`[source.camera]`), [`mode`] (capture modes, negotiation), [`error`]
//! (why a camera did not open), [`reconnecting`] (the source and its state machine), [`devices`]
//! (`robustream devices`) and, with the feature, `v4l2` (the hardware).

mod config;
mod devices;
mod error;
mod mode;
pub(crate) mod reconnecting;
#[cfg(feature = "camera")]
mod v4l2;

use std::path::{Path, PathBuf};

pub(crate) use config::CameraConfig;
pub use devices::{DeviceInfo, FormatInfo, NO_CAMERAS, SizeInfo, render_devices, video_nodes};
#[cfg(test)]
use error::CameraError;
#[cfg(not(feature = "camera"))]
use error::FEATURE_MISSING;
use error::FeatureMissing;
#[cfg(test)]
use mode::{Mode, Negotiated, fps_to_interval, interval_to_fps, negotiation_note};
#[cfg(any(feature = "camera", test))]
use reconnecting::Reconnecting;
#[cfg(test)]
use reconnecting::{Camera, Captured, Grab};

#[cfg(feature = "camera")]
use super::reconnect::SystemClock;
#[cfg(test)]
use super::reconnect::{Clock, POLL_SLICE};
use super::{RawSourceConfig, Source, SourceError, SourceErrorKind, SourceKind};
use crate::frame::LabelSpace;

/// Every `/dev/video*` node, queried. Without the `camera` feature: `FEATURE_MISSING`. (Here,
/// not in `devices.rs`: `v4l2.rs` reads the device types there, so the listing that probes
/// through `v4l2.rs` sits above both.)
pub fn list_devices() -> Result<Vec<DeviceInfo>, FeatureMissing> {
    #[cfg(feature = "camera")]
    {
        Ok(video_nodes(Path::new("/dev"))
            .iter()
            .map(|p| v4l2::probe(p))
            .collect())
    }
    #[cfg(not(feature = "camera"))]
    {
        Err(FeatureMissing)
    }
}

/// The device a `camera[:N]` / `/dev/video*` / `/dev/v4l/…` spec names, or `None` for any other
/// path. `camera` = `camera:0` = `/dev/video0`.
fn parse_device(spec: &str) -> Option<PathBuf> {
    if spec == "camera" {
        return Some(PathBuf::from("/dev/video0"));
    }
    if let Some(n) = spec.strip_prefix("camera:") {
        return n
            .parse::<u32>()
            .ok()
            .map(|n| PathBuf::from(format!("/dev/video{n}")));
    }
    (spec.starts_with("/dev/video") || spec.starts_with("/dev/v4l/")).then(|| PathBuf::from(spec))
}

/// The camera device `config` names: `kind = "camera"` (the path as a `camera:N` spec, else as it
/// is), or no kind and a path [`parse_device`] recognises. `None` for every other source.
pub(crate) fn device_path(config: &RawSourceConfig) -> Option<PathBuf> {
    let spec = config.path.to_str().unwrap_or_default();
    match config.kind {
        Some(SourceKind::Camera) => Some(parse_device(spec).unwrap_or_else(|| config.path.clone())),
        None => parse_device(spec),
        Some(_) => None,
    }
}

/// Opens the camera at `device` with `config` (defaults when `None`); `labels` is unused (camera
/// frames carry no truth; `[source] label`/`labels` add one). Errors: a bad `[source.camera]`, a
/// missing or unusable device, no convertible format, or a build without the `camera` feature.
pub(crate) fn open(
    device: &Path,
    config: Option<&CameraConfig>,
    _labels: &LabelSpace,
) -> Result<Box<dyn Source>, SourceError> {
    let config = config.cloned().unwrap_or_default();
    config.check().map_err(|e| {
        SourceError::at(SourceErrorKind::Settings, device, e.to_string()).caused_by(e)
    })?;
    open_device(device, config)
}

#[cfg(feature = "camera")]
fn open_device(device: &Path, config: CameraConfig) -> Result<Box<dyn Source>, SourceError> {
    let camera = v4l2::V4lCamera::new(device.to_path_buf(), config.clone());
    let log: Box<dyn Fn(&str) + Send> = Box::new(|line| eprintln!("{line}"));
    let source = Reconnecting::start(
        camera,
        SystemClock::default(),
        config,
        device.to_path_buf(),
        log,
    )
    .map_err(|e| SourceError::at(SourceErrorKind::Open, device, e.to_string()).caused_by(e))?;
    Ok(Box::new(source))
}

#[cfg(not(feature = "camera"))]
fn open_device(device: &Path, _config: CameraConfig) -> Result<Box<dyn Source>, SourceError> {
    Err(SourceError::at(
        SourceErrorKind::Feature,
        device,
        FEATURE_MISSING,
    ))
}

#[cfg(test)]
mod tests;
