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
//! Every wait watches the run's stop flag in slices of [`POLL_SLICE`], so Ctrl-C or `--duration`
//! ends a source in back-off within ~0.1 s — except the wait for the first frame after a (re)open,
//! one blocking call of at most `timeout` (the `v4l` stream starts inside that call; polling before
//! it would need its buffers queued, which the crate does not expose). With `reconnect = false` a lost camera ends the stream
//! (one skipped item saying why, then the end). [`Source::report`] gives `{device, format, frames,
//! driver_drops, skipped, outages: [{at_s, length_s}], reconnects}`.
//!
//! **A device missing at start is an open error**, not a wait: `/dev/video7: No such device; run
//! `robustream devices` to list cameras`. A typo in the path should fail at once rather than hang a
//! run; reconnecting is for a camera that was working.
//!
//! The reconnect state machine ([`Reconnecting`]) sees the hardware only through the small
//! [`Camera`] trait (open / grab / close) and time only through [`Clock`], so back-off, outage
//! accounting and stop handling are unit-tested with a scripted fake; the V4L2 implementation (the
//! `v4l` crate, mmap streaming) is compiled with the `camera` feature. Without it, opening a camera
//! and `robustream devices` fail with a line naming the missing feature.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use image::RgbImage;

use super::pixfmt::PixelFormat;
use super::{RawSourceConfig, Source, SourceError, SourceKind};
use crate::frame::{Frame, LabelSpace};

/// Longest single wait of the source (polling the device, back-off sleeps) before it looks at the
/// stop flag again.
pub const POLL_SLICE: Duration = Duration::from_millis(50);

/// The formats asked for when `format` is absent, in order of preference: uncompressed first (MJPEG
/// adds its own compression artefacts to what a robustness run measures), MJPEG when the device
/// offers nothing else.
pub const DEFAULT_FORMATS: [&str; 6] = ["YUYV", "UYVY", "RGB3", "BGR3", "GREY", "MJPG"];

/// `[source.camera]`: what to ask the camera for and how to survive it going away.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraConfig {
    /// Frame width to ask for, pixels; absent = the device's current width.
    #[serde(default)]
    pub width: Option<u32>,
    /// Frame height to ask for, pixels; absent = the device's current height.
    #[serde(default)]
    pub height: Option<u32>,
    /// Frame rate to ask for, frames per second (sent as the frame interval 1/fps, e.g. 7.5 →
    /// 2/15 s); absent = the device's current rate.
    #[serde(default)]
    pub fps: Option<f64>,
    /// Pixel formats (V4L2 fourccs) in order of preference, e.g. `["MJPG", "YUYV"]`: the first one
    /// the device offers is asked for. Each must be one robustream converts (YUYV, UYVY, RGB3, BGR3,
    /// GREY, MJPG). Default [`DEFAULT_FORMATS`].
    #[serde(default)]
    pub format: Option<Vec<String>>,
    /// Driver buffers in the mmap ring (2..=32, default 4): more absorbs longer stalls of the reader,
    /// fewer keeps latency lower.
    #[serde(default = "default_buffers")]
    pub buffers: u32,
    /// Reopen a lost camera with back-off (default true); false ends the stream when it is lost.
    #[serde(default = "default_reconnect")]
    pub reconnect: bool,
    /// Longest wait between reconnect attempts, seconds (default 5; waits start at 0.1 s and double).
    #[serde(default = "default_backoff_max")]
    pub backoff_max: f64,
    /// Seconds without a frame after which the camera counts as lost (default 3; the first frame
    /// after opening is awaited this long too).
    #[serde(default = "default_timeout")]
    pub timeout: f64,
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
pub const BACKOFF_START: f64 = 0.1;

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
    pub fn check(&self) -> Result<(), CameraConfigError> {
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
    pub fn formats(&self) -> Result<Vec<PixelFormat>, CameraConfigError> {
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
pub enum CameraConfigError {
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

/// Why a [`Camera`] did not open: the kinds a caller tells apart (the reconnect loop stays quiet
/// about [`CameraError::Missing`] while a camera is unplugged). Display = the one line after the
/// device's path (`/dev/video7: No such device; …`), saying what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum CameraError {
    /// Nothing at the path (`ENOENT`), or the device went away (`ENODEV`): a typo at start, an
    /// unplugged camera while reconnecting.
    #[error("No such device; run `robustream devices` to list cameras")]
    Missing,
    /// This user may not open the device node.
    #[error(
        "cannot open ({source}); add your user to the `video` group or check the device's \
         permissions"
    )]
    PermissionDenied {
        /// The driver's refusal.
        source: std::io::Error,
    },
    /// Another program holds the camera (`EBUSY`).
    #[error("cannot open ({source}); another program is using the camera")]
    Busy {
        /// The driver's refusal.
        source: std::io::Error,
    },
    /// The node did not open for another reason.
    #[error("cannot open ({source}); run `robustream devices` to list cameras")]
    Open {
        /// Why.
        source: std::io::Error,
    },
    /// The node opened but is no V4L2 device (`ENOTTY`: `/dev/null`, a file).
    #[error("is not a V4L2 device ({source}); run `robustream devices` to list cameras")]
    NotV4l2 {
        /// The refused query.
        source: std::io::Error,
    },
    /// A V4L2 node that does not capture video the way robustream reads it: a metadata node (UVC
    /// cameras have those beside the capture node), or a multi-planar capture device.
    #[error(
        "{card} ({driver}) is {}; run `robustream devices` to list cameras",
        not_capture_text(*multiplanar)
    )]
    NotCapture {
        /// The card (product) name.
        card: String,
        /// The driver's name.
        driver: String,
        /// Whether it is a multi-planar capture device (else not a capture node at all).
        multiplanar: bool,
    },
    /// A capture device without V4L2 streaming I/O (robustream streams through mmap buffers).
    #[error("{card} ({driver}) cannot stream (no V4L2 streaming I/O)")]
    NoStreaming {
        /// The card (product) name.
        card: String,
        /// The driver's name.
        driver: String,
    },
    /// The device offers none of the asked formats (`[source.camera] format`).
    #[error(
        "offers none of the asked formats [{}]; it offers {}; set `[source.camera] format` to one \
         of those robustream converts",
        asked.iter().map(|f| fourcc_text(*f)).collect::<Vec<_>>().join(", "),
        offers_text(offered)
    )]
    Unsupported {
        /// The fourccs asked for, in order of preference.
        asked: Vec<[u8; 4]>,
        /// What the device offers: each fourcc with the driver's description, in its order.
        offered: Vec<([u8; 4], String)>,
    },
    /// The driver settled on a mode whose format robustream does not convert.
    #[error(
        "the driver gave {mode}, which robustream does not convert; set `[source.camera] format` \
         to another of the device's formats (`robustream devices`)"
    )]
    NotConverted {
        /// The mode the driver gave.
        mode: Mode,
    },
    /// A driver call failed while negotiating or mapping buffers (an I/O error of the device).
    #[error("cannot {action} ({source})")]
    Device {
        /// What was being done (`query the device`, `set format YUYV 640×480`, …).
        action: String,
        /// The driver's error.
        source: std::io::Error,
    },
    /// A `[source.camera]` setting that cannot be used.
    #[error(transparent)]
    Config(#[from] CameraConfigError),
    /// The `v4l` crate panicked (on an unexpected driver value, or while releasing buffers).
    #[error("the v4l crate failed while {what} ({message})")]
    Panicked {
        /// What was being done (`opening the device`).
        what: &'static str,
        /// The panic's message.
        message: String,
    },
}

/// What [`CameraError::NotCapture`] says the node is.
fn not_capture_text(multiplanar: bool) -> &'static str {
    if multiplanar {
        "a multi-planar capture device, which robustream does not read"
    } else {
        "not a video capture node (UVC cameras also have metadata nodes)"
    }
}

/// The formats of [`CameraError::Unsupported`] as text: `YUYV (YUYV 4:2:2), H264 (H.264, not
/// converted)`, or `nothing`.
fn offers_text(offered: &[([u8; 4], String)]) -> String {
    if offered.is_empty() {
        return "nothing".to_string();
    }
    offered
        .iter()
        .map(|(f, d)| {
            let conv = if PixelFormat::from_fourcc(*f).is_some() {
                ""
            } else {
                ", not converted"
            };
            format!("{} ({d}{conv})", fourcc_text(*f))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// This robustream was built without the `camera` feature ([`FEATURE_MISSING`] says how to get it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{FEATURE_MISSING}")]
pub struct FeatureMissing;

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

/// The device a `camera[:N]` / `/dev/video*` / `/dev/v4l/…` spec names, or `None` for any other
/// path. `camera` = `camera:0` = `/dev/video0`.
pub fn parse_device(spec: &str) -> Option<PathBuf> {
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
pub fn device_path(config: &RawSourceConfig) -> Option<PathBuf> {
    let spec = config.path.to_str().unwrap_or_default();
    match config.kind {
        Some(SourceKind::Camera) => Some(parse_device(spec).unwrap_or_else(|| config.path.clone())),
        None => parse_device(spec),
        Some(_) => None,
    }
}

/// A frame interval in seconds as a V4L2 fraction for `fps` (1000/(fps·1000), reduced): 30 → 1/30,
/// 7.5 → 2/15, 29.97 → 100/2997.
pub fn fps_to_interval(fps: f64) -> (u32, u32) {
    let num = 1000u64;
    let den = (fps * 1000.0).round().max(1.0) as u64;
    let g = gcd(num, den);
    ((num / g) as u32, (den / g).min(u64::from(u32::MAX)) as u32)
}

/// Frames per second of a V4L2 frame interval `numerator/denominator` seconds; `None` when it is
/// not a positive interval.
pub fn interval_to_fps(numerator: u32, denominator: u32) -> Option<f64> {
    (numerator > 0 && denominator > 0).then(|| f64::from(denominator) / f64::from(numerator))
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// A frame rate as short text: `30`, `7.5`, `29.97`.
fn fps_text(fps: f64) -> String {
    let s = format!("{fps:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A fourcc as text (`YUYV`); bytes that are not printable ASCII as `?`.
pub fn fourcc_text(fourcc: [u8; 4]) -> String {
    fourcc
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            }
        })
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// A capture mode: fourcc, size and (when known) rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mode {
    /// The V4L2 fourcc.
    pub fourcc: [u8; 4],
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// Frames per second; `None` when not asked for / not reported.
    pub fps: Option<f64>,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}×{}",
            fourcc_text(self.fourcc),
            self.width,
            self.height
        )?;
        match self.fps {
            Some(fps) => write!(f, "@{}", fps_text(fps)),
            None => Ok(()),
        }
    }
}

impl Mode {
    /// `{fourcc, width, height, fps}` for reports.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "fourcc": fourcc_text(self.fourcc),
            "width": self.width,
            "height": self.height,
            "fps": self.fps,
        })
    }
}

/// The one line saying the driver gave another mode than asked (`camera /dev/video0: asked MJPG
/// 1280×720@30, driver gave YUYV 640×480@30`), or `None` when it gave what was asked. A rate that
/// was not asked for is not compared; rates within 0.5 % are the same.
pub fn negotiation_note(device: &Path, asked: &Mode, gave: &Mode) -> Option<String> {
    let fps_differs = match (asked.fps, gave.fps) {
        (Some(a), Some(g)) => (a - g).abs() > 0.005 * a,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let differs = asked.fourcc != gave.fourcc
        || asked.width != gave.width
        || asked.height != gave.height
        || fps_differs;
    differs.then(|| {
        // Show the rate on both sides when it was asked for, on neither otherwise.
        let gave = Mode {
            fps: asked.fps.and(gave.fps),
            ..*gave
        };
        format!(
            "camera {}: asked {asked}, driver gave {gave}",
            device.display()
        )
    })
}

/// What a [`Camera`] opened: the mode the driver gave and the row stride of its buffers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Negotiated {
    /// The mode in use.
    pub mode: Mode,
    /// The converter for the mode's fourcc.
    pub format: PixelFormat,
    /// Bytes per row of the driver's buffers (`bytesperline`; 0 = packed).
    pub stride: usize,
}

/// One buffer taken from the camera and converted.
#[derive(Debug)]
pub struct Captured {
    /// The pixels.
    pub image: RgbImage,
    /// The driver's buffer sequence number (counts frames, including ones it dropped).
    pub sequence: u32,
    /// The driver's capture time, seconds on its clock; `None` when it gives none (zero).
    pub driver_time: Option<f64>,
    /// When the buffer was dequeued (host clock).
    pub captured: Instant,
    /// Conversion time, milliseconds.
    pub decode_ms: f64,
}

/// What one [`Camera::grab`] got.
#[derive(Debug)]
pub enum Grab {
    /// A converted frame.
    Frame(Captured),
    /// No frame within the wait (poll again).
    NotYet,
    /// A buffer that did not convert (damaged or truncated frame; sequence number and why): one
    /// skipped item, the stream goes on.
    Bad(u32, String),
    /// The device failed (unplugged, I/O error): close it and reconnect.
    Failed(String),
}

/// The hardware side of a camera, as the reconnect logic ([`Reconnecting`]) sees it.
pub trait Camera: Send {
    /// Opens the device, negotiates the mode and prepares streaming. The error's kind says what is
    /// wrong, its line what to do.
    fn open(&mut self) -> Result<Negotiated, CameraError>;
    /// Waits up to about `wait` for the next buffer and converts it. (The V4L2 implementation waits
    /// for the first buffer after [`Camera::open`] up to the configured `timeout` in one call.)
    fn grab(&mut self, wait: Duration) -> Grab;
    /// Releases the device (no-op when closed).
    fn close(&mut self);
}

/// Time as [`Reconnecting`] sees it (a fake in tests).
pub trait Clock: Send {
    /// Seconds since an arbitrary fixed start.
    fn now(&self) -> f64;
    /// Blocks for `d`.
    fn sleep(&self, d: Duration);
}

/// The host's monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    start: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        Self {
            start: Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// One time the camera was lost, seconds since the source was opened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outage {
    /// When it was lost.
    pub at_s: f64,
    /// How long until the first frame after reconnecting (or until the end, when `ongoing`).
    pub length_s: f64,
    /// Still lost when the stream ended.
    pub ongoing: bool,
}

/// Where the reconnect state machine is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Open; `outage_since` is set after a reopen until its first frame arrives; `waiting_since`
    /// is when the current wait for a frame began.
    Streaming {
        outage_since: Option<f64>,
        backoff: f64,
        waiting_since: Option<f64>,
    },
    /// Closed, lost at `since`; the next open attempt at `next_try`, `backoff` seconds after the
    /// previous one (doubled, up to `backoff_max`, after each failed attempt).
    Lost {
        since: f64,
        backoff: f64,
        next_try: f64,
    },
    /// The stream is over: lost at `since` without reconnect.
    Ended { since: f64 },
}

/// Where the anchors of frame timestamps are (driver time ↔ stream time).
#[derive(Debug, Clone, Copy)]
struct Anchor {
    driver: Option<f64>,
    stream: f64,
}

/// A camera that reconnects (see the module docs): the state machine over any [`Camera`] and
/// [`Clock`], and the [`Source`] the run reads.
pub struct Reconnecting<C: Camera, K: Clock> {
    camera: C,
    clock: K,
    config: CameraConfig,
    device: PathBuf,
    log: Box<dyn Fn(&str) + Send>,
    stop: Arc<AtomicBool>,
    state: State,
    negotiated: Negotiated,
    opened_at: f64,
    /// Clock time of the first frame.
    first_frame: Option<f64>,
    anchor: Option<Anchor>,
    last_sequence: Option<u32>,
    last_timestamp: f64,
    frames: u64,
    driver_drops: u64,
    skipped: u64,
    outages: Vec<Outage>,
    reconnects: u64,
    /// The last reopen failure printed (a device that is back but fails otherwise — permissions,
    /// formats — is worth one line; "No such device" while unplugged is not).
    last_open_error: Option<String>,
}

impl<C: Camera, K: Clock> Reconnecting<C, K> {
    /// Opens `camera` once; an error is the open error of the source (no waiting at start). Lines
    /// (negotiation, lost, back) go to `log`.
    pub fn start(
        mut camera: C,
        clock: K,
        config: CameraConfig,
        device: PathBuf,
        log: Box<dyn Fn(&str) + Send>,
    ) -> Result<Self, CameraError> {
        let negotiated = camera.open()?;
        let opened_at = clock.now();
        Ok(Self {
            camera,
            clock,
            config,
            device,
            log,
            stop: Arc::new(AtomicBool::new(false)),
            state: State::Streaming {
                outage_since: None,
                backoff: BACKOFF_START,
                waiting_since: None,
            },
            negotiated,
            opened_at,
            first_frame: None,
            anchor: None,
            last_sequence: None,
            last_timestamp: 0.0,
            frames: 0,
            driver_drops: 0,
            skipped: 0,
            outages: Vec::new(),
            reconnects: 0,
            last_open_error: None,
        })
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Sleeps until clock time `until` in slices of [`POLL_SLICE`]; false when stopped first.
    fn sleep_until(&self, until: f64) -> bool {
        loop {
            if self.stopped() {
                return false;
            }
            // Below a nanosecond the wait is over (a zero sleep would never get there).
            let left = Duration::try_from_secs_f64(until - self.clock.now()).unwrap_or_default();
            if left.is_zero() {
                return true;
            }
            self.clock.sleep(left.min(POLL_SLICE));
        }
    }

    /// The camera failed (`why`): close it and go to back-off, or end without reconnect.
    fn lose(&mut self, why: &str) -> Option<Result<Frame, SourceError>> {
        self.camera.close();
        let now = self.clock.now();
        let (since, backoff) = match self.state {
            // Lost again before the reopened camera gave a frame: the same outage goes on.
            State::Streaming {
                outage_since: Some(since),
                backoff,
                ..
            } => (since, (backoff * 2.0).min(self.config.backoff_max)),
            _ => {
                let at = now - self.opened_at;
                let device = self.device.display();
                if !self.config.reconnect {
                    (self.log)(&format!(
                        "camera {device}: lost at {at:.1} s ({why}); reconnect is off, the stream \
                         ends"
                    ));
                    self.state = State::Ended { since: now };
                    return Some(Err(SourceError::new(
                        format!("camera {device}"),
                        format!(
                            "lost ({why}); the stream ends because `[source.camera] reconnect` \
                             is false"
                        ),
                    )));
                }
                (self.log)(&format!(
                    "camera {device}: lost at {at:.1} s ({why}); reconnecting (waits from \
                     {BACKOFF_START} s doubling to {} s)",
                    fps_text(self.config.backoff_max)
                ));
                (now, BACKOFF_START.min(self.config.backoff_max))
            }
        };
        self.state = State::Lost {
            since,
            backoff,
            next_try: now + backoff,
        };
        None
    }

    /// A delivered frame: sequence gaps, timestamp, id.
    fn deliver(&mut self, c: Captured) -> Frame {
        let now = self.clock.now();
        if let Some(last) = self.last_sequence {
            let step = c.sequence.wrapping_sub(last);
            // A step of 0 or "negative" is a restarted counter, not drops.
            if (1..1 << 31).contains(&step) {
                self.driver_drops += u64::from(step - 1);
            }
        }
        self.last_sequence = Some(c.sequence);
        let first = *self.first_frame.get_or_insert(now);
        let anchor = *self.anchor.get_or_insert(Anchor {
            driver: c.driver_time,
            stream: now - first,
        });
        let timestamp = match (anchor.driver, c.driver_time) {
            (Some(a), Some(t)) => anchor.stream + (t - a),
            _ => now - first,
        }
        .max(self.last_timestamp);
        self.last_timestamp = timestamp;
        let n = self.frames;
        self.frames += 1;
        Frame {
            captured: c.captured,
            decode_ms: c.decode_ms,
            timestamp: Some(timestamp),
            ..Frame::new(format!("camera/{n:08}"), n, c.image)
        }
    }

    /// What [`Source::report`] returns.
    pub fn report_json(&self) -> serde_json::Value {
        let mut outages = self.outages.clone();
        let now = self.clock.now();
        match self.state {
            State::Lost { since, .. }
            | State::Ended { since }
            | State::Streaming {
                outage_since: Some(since),
                ..
            } => outages.push(Outage {
                at_s: since - self.opened_at,
                length_s: now - since,
                ongoing: true,
            }),
            _ => {}
        }
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        serde_json::json!({
            "device": self.device.display().to_string(),
            "format": self.negotiated.mode.to_json(),
            "frames": self.frames,
            "driver_drops": self.driver_drops,
            "skipped": self.skipped,
            "outages": outages.iter().map(|o| {
                let mut v = serde_json::json!({"at_s": round(o.at_s), "length_s": round(o.length_s)});
                if o.ongoing {
                    v["ongoing"] = true.into();
                }
                v
            }).collect::<Vec<_>>(),
            "reconnects": self.reconnects,
        })
    }
}

impl<C: Camera, K: Clock> Source for Reconnecting<C, K> {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        loop {
            if self.stopped() {
                return None;
            }
            match self.state {
                State::Ended { .. } => return None,
                State::Lost {
                    since,
                    backoff,
                    next_try,
                } => {
                    if !self.sleep_until(next_try) {
                        return None;
                    }
                    match self.camera.open() {
                        Ok(negotiated) => {
                            self.negotiated = negotiated;
                            self.reconnects += 1;
                            // Sequence numbers restart and the driver's clock may too.
                            self.last_sequence = None;
                            self.anchor = None;
                            self.state = State::Streaming {
                                outage_since: Some(since),
                                backoff,
                                waiting_since: None,
                            };
                        }
                        Err(e) => {
                            // Still unplugged is what a reconnect waits out, not news.
                            let line = e.to_string();
                            if !matches!(e, CameraError::Missing)
                                && self.last_open_error.as_ref() != Some(&line)
                            {
                                (self.log)(&format!(
                                    "camera {}: reopening failed ({line}); retrying",
                                    self.device.display()
                                ));
                                self.last_open_error = Some(line);
                            }
                            let wait = (backoff * 2.0).min(self.config.backoff_max);
                            self.state = State::Lost {
                                since,
                                backoff: wait,
                                next_try: self.clock.now() + wait,
                            };
                        }
                    }
                }
                State::Streaming {
                    outage_since,
                    backoff,
                    waiting_since,
                } => match (self.clock.now(), self.camera.grab(POLL_SLICE)) {
                    (_, Grab::Frame(c)) => {
                        if let Some(since) = outage_since {
                            let length = self.clock.now() - since;
                            self.outages.push(Outage {
                                at_s: since - self.opened_at,
                                length_s: length,
                                ongoing: false,
                            });
                            (self.log)(&format!(
                                "camera {}: back after {length:.1} s ({}, reconnect {})",
                                self.device.display(),
                                self.negotiated.mode,
                                self.reconnects
                            ));
                        }
                        self.state = State::Streaming {
                            outage_since: None,
                            backoff: BACKOFF_START,
                            waiting_since: None,
                        };
                        return Some(Ok(self.deliver(c)));
                    }
                    (before, Grab::NotYet) => {
                        let now = self.clock.now();
                        let since = waiting_since.unwrap_or(before);
                        if now - since >= self.config.timeout {
                            let why = format!("no frame for {} s", fps_text(now - since));
                            if let Some(end) = self.lose(&why) {
                                return Some(end);
                            }
                        } else {
                            self.state = State::Streaming {
                                outage_since,
                                backoff,
                                waiting_since: Some(since),
                            };
                        }
                    }
                    (_, Grab::Bad(sequence, why)) => {
                        self.skipped += 1;
                        self.state = State::Streaming {
                            outage_since,
                            backoff,
                            waiting_since: None,
                        };
                        return Some(Err(SourceError::new(
                            format!("camera {} buffer {sequence}", self.device.display()),
                            format!("{why}; frame skipped"),
                        )));
                    }
                    (_, Grab::Failed(why)) => {
                        if let Some(end) = self.lose(&why) {
                            return Some(end);
                        }
                    }
                },
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    fn describe(&self) -> String {
        format!(
            "camera {} ({})",
            self.device.display(),
            self.negotiated.mode
        )
    }

    fn is_live(&self) -> bool {
        true
    }

    fn camera(&self) -> Option<String> {
        Some(self.device.display().to_string())
    }

    fn set_stop(&mut self, stop: Arc<AtomicBool>) {
        self.stop = stop;
    }

    fn fps(&self) -> Option<f64> {
        self.negotiated.mode.fps
    }

    fn lost(&self) -> u64 {
        self.driver_drops
    }

    fn report(&self) -> Option<serde_json::Value> {
        Some(self.report_json())
    }
}

impl<C: Camera, K: Clock> Drop for Reconnecting<C, K> {
    fn drop(&mut self) {
        self.camera.close();
    }
}

/// Opens the camera at `device` with `config` (defaults when `None`); `labels` is unused (camera
/// frames carry no truth; `[source] label`/`labels` add one). Errors: a bad `[source.camera]`, a
/// missing or unusable device, no convertible format, or a build without the `camera` feature.
pub fn open(
    device: &Path,
    config: Option<&CameraConfig>,
    _labels: &LabelSpace,
) -> Result<Box<dyn Source>, SourceError> {
    let config = config.cloned().unwrap_or_default();
    config
        .check()
        .map_err(|e| SourceError::at(device, e.to_string()).caused_by(e))?;
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
    .map_err(|e| SourceError::at(device, e.to_string()).caused_by(e))?;
    Ok(Box::new(source))
}

#[cfg(not(feature = "camera"))]
fn open_device(device: &Path, _config: CameraConfig) -> Result<Box<dyn Source>, SourceError> {
    Err(SourceError::at(device, FEATURE_MISSING))
}

/// The line of a build without the `camera` feature.
pub const FEATURE_MISSING: &str = "camera sources need the `camera` feature, and this robustream \
     was built without it; rebuild with default features (`cargo build --release`, needs \
     libclang-dev)";

// ---------------------------------------------------------------------------------------------
// `robustream devices`

/// A camera (or other V4L2 node) as `robustream devices` lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DeviceInfo {
    /// The device node, e.g. `/dev/video0`.
    pub path: String,
    /// Driver name (`uvcvideo`).
    pub driver: String,
    /// Card (product) name.
    pub card: String,
    /// Bus (`usb-0000:00:14.0-1`).
    pub bus: String,
    /// Whether the node captures video (UVC cameras also have metadata nodes, which do not).
    pub capture: bool,
    /// The formats it offers, in the driver's order (empty when not a capture node).
    pub formats: Vec<FormatInfo>,
    /// Why the node could not be queried (permissions, busy…), if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One pixel format a camera offers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FormatInfo {
    /// The fourcc (`YUYV`).
    pub fourcc: String,
    /// The driver's description (`YUYV 4:2:2`).
    pub description: String,
    /// Whether robustream converts it ([`PixelFormat::from_fourcc`]).
    pub convertible: bool,
    /// The frame sizes it comes in.
    pub sizes: Vec<SizeInfo>,
}

/// A frame size of a format and its frame rates.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum SizeInfo {
    /// One size.
    Discrete {
        /// Width, pixels.
        width: u32,
        /// Height, pixels.
        height: u32,
        /// The discrete frame rates (frames per second), fastest first.
        fps: Vec<f64>,
        /// A continuous/stepwise rate range `[min, max]` frames per second, when so reported.
        #[serde(skip_serializing_if = "Option::is_none")]
        fps_range: Option<[f64; 2]>,
    },
    /// A range of sizes.
    Stepwise {
        /// Smallest width.
        min_width: u32,
        /// Largest width.
        max_width: u32,
        /// Width step.
        step_width: u32,
        /// Smallest height.
        min_height: u32,
        /// Largest height.
        max_height: u32,
        /// Height step.
        step_height: u32,
    },
}

/// The `/dev/video<N>` nodes in `dir`, by N (`video2` before `video10`).
pub fn video_nodes(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut nodes: Vec<(u64, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name();
            let n = name.to_str()?.strip_prefix("video")?.parse::<u64>().ok()?;
            Some((n, e.path()))
        })
        .collect();
    nodes.sort();
    nodes.into_iter().map(|(_, p)| p).collect()
}

/// The message when there are none.
pub const NO_CAMERAS: &str = "no V4L2 cameras found (no /dev/video* devices)";

/// `robustream devices` as text: each capture node with its formats, sizes and rates; other nodes
/// in one line each.
pub fn render_devices(devices: &[DeviceInfo]) -> String {
    if devices.is_empty() {
        return format!("{NO_CAMERAS}\n");
    }
    let mut out = String::new();
    for d in devices {
        if let Some(e) = &d.error {
            out += &format!("{}: cannot query ({e})\n", d.path);
            continue;
        }
        let card = format!("{} ({}, {})", d.card, d.driver, d.bus);
        if !d.capture {
            out += &format!("{}: {card}: not a video capture node; skipped\n", d.path);
            continue;
        }
        let index = d.path.strip_prefix("/dev/video").unwrap_or_default();
        let hint = if index.is_empty() {
            String::new()
        } else {
            format!(" — --source {} or camera:{index}", d.path)
        };
        out += &format!("{}: {card}{hint}\n", d.path);
        for f in &d.formats {
            let note = if f.convertible {
                ""
            } else {
                " (not converted by robustream)"
            };
            out += &format!("  {} {}{note}\n", f.fourcc, f.description);
            for s in &f.sizes {
                match s {
                    SizeInfo::Discrete {
                        width,
                        height,
                        fps,
                        fps_range,
                    } => {
                        let mut rates: Vec<String> = fps.iter().map(|&r| fps_text(r)).collect();
                        if let Some([lo, hi]) = fps_range {
                            rates.push(format!("{}–{}", fps_text(*lo), fps_text(*hi)));
                        }
                        let rates = if rates.is_empty() {
                            String::new()
                        } else {
                            format!(" @ {} fps", rates.join(", "))
                        };
                        out += &format!("    {width}×{height}{rates}\n");
                    }
                    SizeInfo::Stepwise {
                        min_width,
                        max_width,
                        step_width,
                        min_height,
                        max_height,
                        step_height,
                    } => {
                        out += &format!(
                            "    {min_width}–{max_width} (step {step_width}) × {min_height}–\
                             {max_height} (step {step_height})\n"
                        );
                    }
                }
            }
        }
    }
    out
}

/// Every `/dev/video*` node, queried. Without the `camera` feature: [`FEATURE_MISSING`].
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

/// The V4L2 side (the `v4l` crate): opening and negotiating, mmap streaming, device queries.
#[cfg(feature = "camera")]
mod v4l2 {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    use v4l::buffer::{Flags, Type};
    use v4l::capability::Flags as Caps;
    use v4l::frameinterval::FrameIntervalEnum;
    use v4l::framesize::FrameSizeEnum;
    use v4l::io::mmap::Stream;
    use v4l::io::traits::{CaptureStream, Stream as _};
    use v4l::video::Capture;
    use v4l::video::capture::Parameters;
    use v4l::{Device, Format, FourCC, Fraction};

    use super::{
        CameraConfig, CameraError, Captured, DeviceInfo, FormatInfo, Grab, Mode, Negotiated,
        SizeInfo, fourcc_text, fps_to_interval, interval_to_fps, negotiation_note,
    };
    use crate::source::pixfmt::{self, PixelFormat};

    /// An open device's buffer ring (the stream holds the device's descriptor, closed when the
    /// stream is dropped).
    struct Session {
        stream: Stream<'static>,
        /// Whether the stream delivered a buffer yet (before that, `next` starts it and blocks).
        started: bool,
    }

    /// A V4L2 camera (mmap streaming).
    pub(super) struct V4lCamera {
        path: PathBuf,
        config: CameraConfig,
        session: Option<Session>,
        negotiated: Option<Negotiated>,
        /// The last negotiation line printed (printed again only when it changes).
        noted: Option<String>,
    }

    impl V4lCamera {
        pub(super) fn new(path: PathBuf, config: CameraConfig) -> Self {
            Self {
                path,
                config,
                session: None,
                negotiated: None,
                noted: None,
            }
        }

        fn try_open(&mut self) -> Result<(Session, Negotiated), CameraError> {
            let device = Device::with_path(&self.path).map_err(open_error)?;
            let caps = device.query_caps().map_err(query_error)?;
            if !caps.capabilities.contains(Caps::VIDEO_CAPTURE) {
                return Err(CameraError::NotCapture {
                    multiplanar: caps.capabilities.contains(Caps::VIDEO_CAPTURE_MPLANE),
                    card: caps.card,
                    driver: caps.driver,
                });
            }
            if !caps.capabilities.contains(Caps::STREAMING) {
                return Err(CameraError::NoStreaming {
                    card: caps.card,
                    driver: caps.driver,
                });
            }
            let offered: Vec<([u8; 4], String)> = device
                .enum_formats()
                .map_err(|e| failed("list the device's formats", e))?
                .into_iter()
                .map(|d| (d.fourcc.repr, d.description))
                .collect();
            let wanted = self.config.formats()?;
            let Some(format) = wanted
                .iter()
                .copied()
                .find(|w| offered.iter().any(|(f, _)| *f == w.fourcc()))
            else {
                return Err(CameraError::Unsupported {
                    asked: wanted.iter().map(|w| w.fourcc()).collect(),
                    offered,
                });
            };
            let current = device
                .format()
                .map_err(|e| failed("read the current format", e))?;
            let asked = Mode {
                fourcc: format.fourcc(),
                width: self.config.width.unwrap_or(current.width),
                height: self.config.height.unwrap_or(current.height),
                fps: self.config.fps,
            };
            device
                .set_format(&Format::new(
                    asked.width,
                    asked.height,
                    FourCC::new(&asked.fourcc),
                ))
                .map_err(|e| failed(&format!("set format {asked}"), e))?;
            if let Some(fps) = self.config.fps {
                let (n, d) = fps_to_interval(fps);
                // A driver without rate control refuses; the rate read back below says what it is.
                let _ = device.set_params(&Parameters::new(Fraction::new(n, d)));
            }
            let gave = device
                .format()
                .map_err(|e| failed("read back the format", e))?;
            let fps = device
                .params()
                .ok()
                .and_then(|p| interval_to_fps(p.interval.numerator, p.interval.denominator));
            let mode = Mode {
                fourcc: gave.fourcc.repr,
                width: gave.width,
                height: gave.height,
                fps,
            };
            if let Some(note) = negotiation_note(&self.path, &asked, &mode)
                && self.noted.as_ref() != Some(&note)
            {
                eprintln!("{note}");
                self.noted = Some(note);
            }
            let format =
                PixelFormat::from_fourcc(mode.fourcc).ok_or(CameraError::NotConverted { mode })?;
            let buffers = self.config.buffers;
            let mut stream = Stream::with_buffers(&device, Type::VideoCapture, buffers)
                .map_err(|e| failed(&format!("map {buffers} capture buffers"), e))?;
            stream.set_timeout(Duration::from_secs_f64(self.config.timeout));
            let negotiated = Negotiated {
                mode,
                format,
                stride: gave.stride as usize,
            };
            Ok((
                Session {
                    stream,
                    started: false,
                },
                negotiated,
            ))
        }
    }

    /// Why a device node does not open, by its kind.
    fn open_error(e: std::io::Error) -> CameraError {
        use std::io::ErrorKind;
        match (e.kind(), e.raw_os_error()) {
            (ErrorKind::NotFound, _) | (_, Some(19)) => CameraError::Missing,
            (ErrorKind::PermissionDenied, _) => CameraError::PermissionDenied { source: e },
            (_, Some(16)) => CameraError::Busy { source: e },
            _ => CameraError::Open { source: e },
        }
    }

    /// Why a node that opened does not answer V4L2's first question.
    fn query_error(e: std::io::Error) -> CameraError {
        // ENOTTY: the node is not a V4L2 device at all.
        if e.raw_os_error() == Some(25) {
            CameraError::NotV4l2 { source: e }
        } else {
            failed("query the device", e)
        }
    }

    /// A driver call doing `action` failed with `e`.
    fn failed(action: &str, e: std::io::Error) -> CameraError {
        CameraError::Device {
            action: action.to_string(),
            source: e,
        }
    }

    /// A panic inside the `v4l` crate (it panics on unexpected driver values and on failures while
    /// releasing buffers) as an error instead of the end of the run.
    fn guarded<T>(
        what: &'static str,
        f: impl FnOnce() -> Result<T, CameraError>,
    ) -> Result<T, CameraError> {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
            let message = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(CameraError::Panicked { what, message })
        })
    }

    impl super::Camera for V4lCamera {
        fn open(&mut self) -> Result<Negotiated, CameraError> {
            self.close();
            let (session, negotiated) = guarded("opening the device", || self.try_open())?;
            self.session = Some(session);
            self.negotiated = Some(negotiated);
            Ok(negotiated)
        }

        fn grab(&mut self, wait: Duration) -> Grab {
            let (Some(session), Some(neg)) = (self.session.as_mut(), self.negotiated) else {
                return Grab::Failed("the device is not open".into());
            };
            if session.started {
                // The other buffers are queued: wait for one in slices (the first `next` below
                // instead queues them all, starts the stream and blocks up to `timeout`).
                let ms = wait.as_millis().clamp(1, 1000) as i32;
                match session.stream.handle().poll(POLLIN, ms) {
                    Ok(0) => return Grab::NotYet,
                    Ok(_) => {}
                    Err(e) => return Grab::Failed(format!("poll failed ({e})")),
                }
            }
            let (buf, meta) = match CaptureStream::next(&mut session.stream) {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    return Grab::Failed(format!(
                        "no frame within {} s of starting",
                        self.config.timeout
                    ));
                }
                Err(e) => return Grab::Failed(format!("capture failed ({e})")),
            };
            session.started = true;
            let captured = Instant::now();
            if meta.flags.contains(Flags::ERROR) {
                return Grab::Bad(
                    meta.sequence,
                    "the driver flagged the buffer as corrupted".into(),
                );
            }
            let used = match meta.bytesused as usize {
                0 => buf.len(),
                n => n.min(buf.len()),
            };
            let m = neg.mode;
            match pixfmt::to_rgb(neg.format, &buf[..used], m.width, m.height, neg.stride) {
                Ok(image) => {
                    let t = meta.timestamp;
                    let secs = t.sec as f64 + t.usec as f64 * 1e-6;
                    Grab::Frame(Captured {
                        image,
                        sequence: meta.sequence,
                        driver_time: (secs > 0.0).then_some(secs),
                        captured,
                        decode_ms: captured.elapsed().as_secs_f64() * 1e3,
                    })
                }
                Err(e) => Grab::Bad(meta.sequence, e.to_string()),
            }
        }

        fn close(&mut self) {
            if let Some(mut session) = self.session.take() {
                // Stop streaming ourselves: the crate's Drop panics when STREAMOFF fails with
                // anything but ENODEV; if it fails here, the session is leaked (its buffers and
                // descriptor) rather than risking that panic.
                match session.stream.stop() {
                    // Stopped, or the device is gone (ENODEV, which the crate's Drop tolerates).
                    Err(e) if e.raw_os_error() != Some(19) => std::mem::forget(session),
                    _ => {
                        let _ = guarded("closing the device", || {
                            drop(session);
                            Ok(())
                        });
                    }
                }
            }
        }
    }

    /// `POLLIN` (0x001 on every Linux architecture), as the `v4l` handle's poll takes it.
    const POLLIN: i16 = 0x001;

    /// One node as `robustream devices` shows it.
    pub(super) fn probe(path: &Path) -> DeviceInfo {
        let mut info = DeviceInfo {
            path: path.display().to_string(),
            driver: String::new(),
            card: String::new(),
            bus: String::new(),
            capture: false,
            formats: Vec::new(),
            error: None,
        };
        let result = guarded("querying the device", || {
            let device = Device::with_path(path).map_err(open_error)?;
            let caps = device.query_caps().map_err(query_error)?;
            info.driver = caps.driver;
            info.card = caps.card;
            info.bus = caps.bus;
            info.capture = caps.capabilities.contains(Caps::VIDEO_CAPTURE);
            if !info.capture {
                return Ok(());
            }
            for desc in device.enum_formats().unwrap_or_default() {
                let fourcc = desc.fourcc;
                let sizes = device
                    .enum_framesizes(fourcc)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|s| match s.size {
                        FrameSizeEnum::Discrete(d) => {
                            let (fps, fps_range) = rates(&device, fourcc, d.width, d.height);
                            SizeInfo::Discrete {
                                width: d.width,
                                height: d.height,
                                fps,
                                fps_range,
                            }
                        }
                        FrameSizeEnum::Stepwise(s) => SizeInfo::Stepwise {
                            min_width: s.min_width,
                            max_width: s.max_width,
                            step_width: s.step_width,
                            min_height: s.min_height,
                            max_height: s.max_height,
                            step_height: s.step_height,
                        },
                    })
                    .collect();
                info.formats.push(FormatInfo {
                    fourcc: fourcc_text(fourcc.repr),
                    description: desc.description,
                    convertible: PixelFormat::from_fourcc(fourcc.repr).is_some(),
                    sizes,
                });
            }
            Ok(())
        });
        if let Err(e) = result {
            info.error = Some(e.to_string());
        }
        info
    }

    /// The frame rates of one size: discrete ones fastest first, or a continuous range.
    fn rates(device: &Device, fourcc: FourCC, w: u32, h: u32) -> (Vec<f64>, Option<[f64; 2]>) {
        let mut fps = Vec::new();
        let mut range = None;
        for i in device.enum_frameintervals(fourcc, w, h).unwrap_or_default() {
            match i.interval {
                FrameIntervalEnum::Discrete(f) => {
                    fps.extend(interval_to_fps(f.numerator, f.denominator));
                }
                FrameIntervalEnum::Stepwise(s) => {
                    // The longest interval is the slowest rate.
                    let lo = interval_to_fps(s.max.numerator, s.max.denominator);
                    let hi = interval_to_fps(s.min.numerator, s.min.denominator);
                    if let (Some(lo), Some(hi)) = (lo, hi) {
                        range = Some([lo, hi]);
                    }
                }
            }
        }
        fps.sort_by(|a, b| b.total_cmp(a));
        fps.dedup();
        (fps, range)
    }
}

#[cfg(test)]
mod tests;
