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
use super::{Source, SourceConfig, SourceError, SourceKind};
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
pub fn device_path(config: &SourceConfig) -> Option<PathBuf> {
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
    /// Opens the device, negotiates the mode and prepares streaming. The error is one line saying
    /// what is wrong and what to do.
    fn open(&mut self) -> Result<Negotiated, String>;
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
    ) -> Result<Self, String> {
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
                            if !e.starts_with("No such device")
                                && self.last_open_error.as_ref() != Some(&e)
                            {
                                (self.log)(&format!(
                                    "camera {}: reopening failed ({e}); retrying",
                                    self.device.display()
                                ));
                                self.last_open_error = Some(e);
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
    .map_err(|e| SourceError::at(device, e))?;
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
        CameraConfig, Captured, DeviceInfo, FormatInfo, Grab, Mode, Negotiated, SizeInfo,
        fourcc_text, fps_to_interval, interval_to_fps, negotiation_note,
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

        fn try_open(&mut self) -> Result<(Session, Negotiated), String> {
            let device = Device::with_path(&self.path).map_err(|e| open_error(&e))?;
            let caps = device.query_caps().map_err(|e| query_error(&e))?;
            if !caps.capabilities.contains(Caps::VIDEO_CAPTURE) {
                let what = if caps.capabilities.contains(Caps::VIDEO_CAPTURE_MPLANE) {
                    "a multi-planar capture device, which robustream does not read"
                } else {
                    "not a video capture node (UVC cameras also have metadata nodes)"
                };
                return Err(format!(
                    "{} ({}) is {what}; run `robustream devices` to list cameras",
                    caps.card, caps.driver
                ));
            }
            if !caps.capabilities.contains(Caps::STREAMING) {
                return Err(format!(
                    "{} ({}) cannot stream (no V4L2 streaming I/O)",
                    caps.card, caps.driver
                ));
            }
            let offered: Vec<(FourCC, String)> = device
                .enum_formats()
                .map_err(|e| format!("cannot list the device's formats ({e})"))?
                .into_iter()
                .map(|d| (d.fourcc, d.description))
                .collect();
            let wanted = self.config.formats().map_err(|e| e.to_string())?;
            let Some(format) = wanted
                .iter()
                .copied()
                .find(|w| offered.iter().any(|(f, _)| f.repr == w.fourcc()))
            else {
                let offers: Vec<String> = offered
                    .iter()
                    .map(|(f, d)| {
                        let conv = if PixelFormat::from_fourcc(f.repr).is_some() {
                            ""
                        } else {
                            ", not converted"
                        };
                        format!("{} ({d}{conv})", fourcc_text(f.repr))
                    })
                    .collect();
                let asked: Vec<String> = wanted.iter().map(|w| fourcc_text(w.fourcc())).collect();
                return Err(format!(
                    "offers none of the asked formats [{}]; it offers {}; set `[source.camera] \
                     format` to one of those robustream converts",
                    asked.join(", "),
                    if offers.is_empty() {
                        "nothing".to_string()
                    } else {
                        offers.join(", ")
                    }
                ));
            };
            let current = device
                .format()
                .map_err(|e| format!("cannot read the current format ({e})"))?;
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
                .map_err(|e| format!("cannot set format {asked} ({e})"))?;
            if let Some(fps) = self.config.fps {
                let (n, d) = fps_to_interval(fps);
                // A driver without rate control refuses; the rate read back below says what it is.
                let _ = device.set_params(&Parameters::new(Fraction::new(n, d)));
            }
            let gave = device
                .format()
                .map_err(|e| format!("cannot read back the format ({e})"))?;
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
            let format = PixelFormat::from_fourcc(mode.fourcc).ok_or_else(|| {
                format!(
                    "the driver gave {mode}, which robustream does not convert; set `[source.camera] \
                     format` to another of the device's formats (`robustream devices`)"
                )
            })?;
            let mut stream = Stream::with_buffers(&device, Type::VideoCapture, self.config.buffers)
                .map_err(|e| format!("cannot map {} capture buffers ({e})", self.config.buffers))?;
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

    /// The one-line reason a device node does not open.
    fn open_error(e: &std::io::Error) -> String {
        use std::io::ErrorKind;
        match (e.kind(), e.raw_os_error()) {
            (ErrorKind::NotFound, _) | (_, Some(19)) => {
                "No such device; run `robustream devices` to list cameras".into()
            }
            (ErrorKind::PermissionDenied, _) => format!(
                "cannot open ({e}); add your user to the `video` group or check the device's \
                 permissions"
            ),
            (_, Some(16)) => format!("cannot open ({e}); another program is using the camera"),
            _ => format!("cannot open ({e}); run `robustream devices` to list cameras"),
        }
    }

    /// The one-line reason a node that opened does not answer V4L2's first question.
    fn query_error(e: &std::io::Error) -> String {
        // ENOTTY: the node is not a V4L2 device at all.
        if e.raw_os_error() == Some(25) {
            format!("is not a V4L2 device ({e}); run `robustream devices` to list cameras")
        } else {
            format!("cannot query the device ({e})")
        }
    }

    /// A panic inside the `v4l` crate (it panics on unexpected driver values and on failures while
    /// releasing buffers) as an error line instead of the end of the run.
    fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("the v4l crate failed while {what} ({msg})"))
        })
    }

    impl super::Camera for V4lCamera {
        fn open(&mut self) -> Result<Negotiated, String> {
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
            let device = Device::with_path(path).map_err(|e| open_error(&e))?;
            let caps = device.query_caps().map_err(|e| query_error(&e))?;
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
            info.error = Some(e);
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
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;

    // ----- pure helpers

    #[test]
    fn device_specs() {
        assert_eq!(parse_device("camera"), Some("/dev/video0".into()));
        assert_eq!(parse_device("camera:3"), Some("/dev/video3".into()));
        assert_eq!(parse_device("/dev/video12"), Some("/dev/video12".into()));
        assert_eq!(
            parse_device("/dev/v4l/by-id/usb-cam-video-index0"),
            Some("/dev/v4l/by-id/usb-cam-video-index0".into())
        );
        assert_eq!(parse_device("camera:x"), None);
        assert_eq!(parse_device("cameras"), None);
        assert_eq!(parse_device("photos/cat.png"), None);

        let mut c = SourceConfig::new("camera:1");
        assert_eq!(device_path(&c), Some("/dev/video1".into()));
        c.kind = Some(SourceKind::Folder);
        assert_eq!(device_path(&c), None);
        let mut c = SourceConfig::new("/dev/mycam");
        assert_eq!(device_path(&c), None);
        c.kind = Some(SourceKind::Camera);
        assert_eq!(device_path(&c), Some("/dev/mycam".into()));
    }

    #[test]
    fn fps_fractions() {
        assert_eq!(fps_to_interval(30.0), (1, 30));
        assert_eq!(fps_to_interval(7.5), (2, 15));
        assert_eq!(fps_to_interval(29.97), (100, 2997));
        assert_eq!(interval_to_fps(1, 30), Some(30.0));
        assert_eq!(interval_to_fps(2, 15), Some(7.5));
        assert_eq!(interval_to_fps(0, 30), None);
        assert_eq!(fps_text(30.0), "30");
        assert_eq!(fps_text(7.5), "7.5");
        assert_eq!(fps_text(29.97), "29.97");
    }

    #[test]
    fn config_from_toml_and_checks() {
        let c: CameraConfig = toml::from_str(
            "width = 1280\nheight = 720\nfps = 30\nformat = [\"mjpg\", \"YUYV\"]\nbuffers = 3\n\
             reconnect = false\nbackoff_max = 2.5",
        )
        .unwrap();
        assert_eq!(
            (c.width, c.height, c.fps),
            (Some(1280), Some(720), Some(30.0))
        );
        assert_eq!(c.buffers, 3);
        assert!(!c.reconnect);
        c.check().unwrap();
        assert_eq!(
            c.formats().unwrap(),
            [PixelFormat::Mjpeg, PixelFormat::Yuyv]
        );
        assert_eq!(CameraConfig::default().formats().unwrap().len(), 6);
        assert!(toml::from_str::<CameraConfig>("widht = 3").is_err());

        let bad = |edit: fn(&mut CameraConfig), key: &str| {
            let mut c = CameraConfig::default();
            edit(&mut c);
            let e = c.check().unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        };
        bad(|c| c.width = Some(0), "width");
        bad(|c| c.fps = Some(f64::NAN), "fps");
        bad(|c| c.buffers = 1, "buffers");
        bad(|c| c.backoff_max = 0.0, "backoff_max");
        bad(|c| c.timeout = -1.0, "timeout");
        bad(|c| c.format = Some(vec![]), "format");
        bad(|c| c.format = Some(vec!["H264".into()]), "H264");
    }

    #[test]
    fn negotiation_line_only_when_the_driver_changed_something() {
        let dev = Path::new("/dev/video0");
        let asked = Mode {
            fourcc: *b"MJPG",
            width: 1280,
            height: 720,
            fps: Some(30.0),
        };
        let gave = Mode {
            fourcc: *b"YUYV",
            width: 640,
            height: 480,
            fps: Some(30.0),
        };
        assert_eq!(
            negotiation_note(dev, &asked, &gave).unwrap(),
            "camera /dev/video0: asked MJPG 1280×720@30, driver gave YUYV 640×480@30"
        );
        assert_eq!(negotiation_note(dev, &asked, &asked), None);
        // 29.97 for 30 is within rounding of the driver's interval? No: 0.1 % off is allowed.
        let close = Mode {
            fps: Some(29.99),
            ..asked
        };
        assert_eq!(negotiation_note(dev, &asked, &close), None);
        let slower = Mode {
            fps: Some(15.0),
            ..asked
        };
        assert!(
            negotiation_note(dev, &asked, &slower)
                .unwrap()
                .ends_with("driver gave MJPG 1280×720@15")
        );
        // No rate asked: rates are not compared nor shown.
        let unasked = Mode { fps: None, ..asked };
        assert_eq!(negotiation_note(dev, &unasked, &slower), None);
        let small = Mode {
            width: 640,
            height: 360,
            ..slower
        };
        assert_eq!(
            negotiation_note(dev, &unasked, &small).unwrap(),
            "camera /dev/video0: asked MJPG 1280×720, driver gave MJPG 640×360"
        );
    }

    #[test]
    fn video_nodes_in_numeric_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["video10", "video2", "video0", "videoX", "vbi0", "video"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let names: Vec<String> = video_nodes(dir.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["video0", "video2", "video10"]);
        assert!(video_nodes(&dir.path().join("missing")).is_empty());
    }

    #[test]
    fn devices_render_and_serialise() {
        assert_eq!(render_devices(&[]), format!("{NO_CAMERAS}\n"));
        let cam = DeviceInfo {
            path: "/dev/video0".into(),
            driver: "uvcvideo".into(),
            card: "HD Webcam".into(),
            bus: "usb-0000:00:14.0-1".into(),
            capture: true,
            formats: vec![
                FormatInfo {
                    fourcc: "MJPG".into(),
                    description: "Motion-JPEG".into(),
                    convertible: true,
                    sizes: vec![SizeInfo::Discrete {
                        width: 1280,
                        height: 720,
                        fps: vec![30.0, 7.5],
                        fps_range: None,
                    }],
                },
                FormatInfo {
                    fourcc: "H264".into(),
                    description: "H.264".into(),
                    convertible: false,
                    sizes: vec![SizeInfo::Stepwise {
                        min_width: 16,
                        max_width: 1920,
                        step_width: 16,
                        min_height: 16,
                        max_height: 1080,
                        step_height: 16,
                    }],
                },
            ],
            error: None,
        };
        let meta = DeviceInfo {
            path: "/dev/video1".into(),
            capture: false,
            formats: vec![],
            ..cam.clone()
        };
        let text = render_devices(&[cam.clone(), meta]);
        assert_eq!(
            text,
            "/dev/video0: HD Webcam (uvcvideo, usb-0000:00:14.0-1) — --source /dev/video0 or \
             camera:0\n  MJPG Motion-JPEG\n    1280×720 @ 30, 7.5 fps\n  H264 H.264 (not \
             converted by robustream)\n    16–1920 (step 16) × 16–1080 (step 16)\n/dev/video1: \
             HD Webcam (uvcvideo, usb-0000:00:14.0-1): not a video capture node; skipped\n"
        );
        let json = serde_json::to_value(&cam).unwrap();
        assert_eq!(json["formats"][0]["sizes"][0]["fps"][1], 7.5);
        assert_eq!(json["formats"][1]["sizes"][0]["max_width"], 1920);
        assert!(json.get("error").is_none());
    }

    // ----- the state machine on a scripted camera and a fake clock

    /// Virtual time; raises `stop` once it passes `stop_at`.
    #[derive(Default)]
    struct Time {
        now: f64,
        stop_at: Option<(f64, Arc<AtomicBool>)>,
        longest_sleep: f64,
    }

    #[derive(Clone, Default)]
    struct FakeClock(Arc<Mutex<Time>>);

    impl FakeClock {
        fn advance(&self, d: f64) {
            let mut t = self.0.lock().unwrap();
            t.now += d;
            if let Some((at, flag)) = &t.stop_at
                && t.now >= *at
            {
                flag.store(true, Ordering::Relaxed);
            }
        }
    }

    impl Clock for FakeClock {
        fn now(&self) -> f64 {
            self.0.lock().unwrap().now
        }
        fn sleep(&self, d: Duration) {
            {
                let mut t = self.0.lock().unwrap();
                t.longest_sleep = t.longest_sleep.max(d.as_secs_f64());
            }
            self.advance(d.as_secs_f64());
        }
    }

    /// One scripted grab.
    enum Step {
        /// A frame with this driver sequence number and driver time.
        Frame(u32, f64),
        NotYet,
        Bad(&'static str),
        Fail(&'static str),
    }

    /// Opens succeed or fail in script order (then succeed); grabs follow the script (then fail).
    struct FakeCamera {
        clock: FakeClock,
        opens: VecDeque<bool>,
        steps: VecDeque<Step>,
        open_times: Arc<Mutex<Vec<f64>>>,
        is_open: bool,
        open_error: &'static str,
    }

    impl Camera for FakeCamera {
        fn open(&mut self) -> Result<Negotiated, String> {
            self.open_times.lock().unwrap().push(self.clock.now());
            if self.opens.pop_front().unwrap_or(true) {
                self.is_open = true;
                Ok(negotiated())
            } else {
                Err(self.open_error.into())
            }
        }
        fn grab(&mut self, wait: Duration) -> Grab {
            assert!(self.is_open, "grab on a closed camera");
            match self.steps.pop_front() {
                Some(Step::Frame(sequence, t)) => {
                    self.clock.advance(0.01);
                    Grab::Frame(Captured {
                        image: RgbImage::new(4, 2),
                        sequence,
                        driver_time: Some(t),
                        captured: Instant::now(),
                        decode_ms: 0.5,
                    })
                }
                Some(Step::NotYet) => {
                    self.clock.advance(wait.as_secs_f64());
                    Grab::NotYet
                }
                Some(Step::Bad(why)) => Grab::Bad(7, why.into()),
                Some(Step::Fail(why)) => Grab::Failed(why.into()),
                None => Grab::Failed("script over".into()),
            }
        }
        fn close(&mut self) {
            self.is_open = false;
        }
    }

    fn negotiated() -> Negotiated {
        Negotiated {
            mode: Mode {
                fourcc: *b"YUYV",
                width: 4,
                height: 2,
                fps: Some(30.0),
            },
            format: PixelFormat::Yuyv,
            stride: 0,
        }
    }

    struct Rig {
        source: Reconnecting<FakeCamera, FakeClock>,
        clock: FakeClock,
        open_times: Arc<Mutex<Vec<f64>>>,
        lines: Arc<Mutex<Vec<String>>>,
    }

    fn rig(config: CameraConfig, opens: &[bool], steps: Vec<Step>) -> Result<Rig, String> {
        let clock = FakeClock::default();
        let open_times = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let camera = FakeCamera {
            clock: clock.clone(),
            opens: opens.iter().copied().collect(),
            steps: steps.into(),
            open_times: open_times.clone(),
            is_open: false,
            open_error: "No such device",
        };
        let sink = lines.clone();
        let source = Reconnecting::start(
            camera,
            clock.clone(),
            config,
            "/dev/video0".into(),
            Box::new(move |l| sink.lock().unwrap().push(l.to_string())),
        )?;
        Ok(Rig {
            source,
            clock,
            open_times,
            lines,
        })
    }

    fn frame(s: &mut dyn Source) -> Frame {
        s.next_frame().expect("a frame").expect("not an error")
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn lost_camera_backs_off_and_comes_back() {
        use Step::*;
        let mut r = rig(
            CameraConfig::default(),
            &[true, false, false, false, true],
            vec![
                Frame(0, 100.0),
                Frame(1, 100.1),
                Fail("capture failed (No such device)"),
                Frame(0, 5.0),
                Frame(1, 5.1),
            ],
        )
        .unwrap();
        let a = frame(&mut r.source);
        let b = frame(&mut r.source);
        assert_eq!(
            (a.id.as_str(), b.id.as_str()),
            ("camera/00000000", "camera/00000001")
        );
        assert!(close(a.timestamp.unwrap(), 0.0) && close(b.timestamp.unwrap(), 0.1));
        let lost_at = r.clock.now();
        let c = frame(&mut r.source);
        // Ids go on across the reconnect.
        assert_eq!((c.id.as_str(), c.seq), ("camera/00000002", 2));
        // Tries at +0.1, +0.3, +0.7 (failing), +1.5 (succeeds): waits 0.1, 0.2, 0.4, 0.8.
        let tries: Vec<f64> = r.open_times.lock().unwrap()[1..]
            .iter()
            .map(|t| t - lost_at)
            .collect();
        assert_eq!(tries.len(), 4, "{tries:?}");
        for (t, want) in tries.iter().zip([0.1, 0.3, 0.7, 1.5]) {
            assert!((t - want).abs() < 1e-6, "{tries:?}");
        }
        // The clock slept in slices no longer than POLL_SLICE.
        assert!(r.clock.0.lock().unwrap().longest_sleep <= POLL_SLICE.as_secs_f64() + 1e-12);
        // Stream time re-anchored on the host clock (the driver's restarted at 5.0) and going on.
        let d = frame(&mut r.source);
        assert!(c.timestamp.unwrap() > b.timestamp.unwrap() + 1.4, "{c:?}");
        assert!(close(d.timestamp.unwrap() - c.timestamp.unwrap(), 0.1));
        let lines = r.lines.lock().unwrap().clone();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("camera /dev/video0: lost at "),
            "{lines:?}"
        );
        assert!(lines[0].contains("No such device"), "{lines:?}");
        assert!(
            lines[1].starts_with("camera /dev/video0: back after 1.5 s"),
            "{lines:?}"
        );
        let rep = r.source.report().unwrap();
        assert_eq!(rep["reconnects"], 1);
        assert_eq!(rep["frames"], 4);
        assert_eq!(rep["driver_drops"], 0);
        assert_eq!(rep["device"], "/dev/video0");
        assert_eq!(rep["format"]["fourcc"], "YUYV");
        let outages = rep["outages"].as_array().unwrap();
        assert_eq!(outages.len(), 1);
        // Lost after the two frames (0.02 s), back at the reopened camera's first frame.
        assert_eq!(outages[0]["at_s"], 0.02);
        assert_eq!(outages[0]["length_s"], 1.51);
        assert!(outages[0].get("ongoing").is_none());
    }

    #[test]
    fn back_off_is_capped_and_a_failed_first_frame_keeps_the_outage() {
        use Step::*;
        let config = CameraConfig {
            backoff_max: 0.5,
            ..Default::default()
        };
        // Lost; four failed opens; a reopen whose first grab fails again; one more failed open.
        let mut r = rig(
            config,
            &[true, false, false, false, false, true, false, true],
            vec![
                Frame(0, 1.0),
                Fail("gone"),
                Fail("gone again"),
                Frame(0, 1.0),
            ],
        )
        .unwrap();
        frame(&mut r.source);
        let lost_at = r.clock.now();
        frame(&mut r.source);
        let tries: Vec<f64> = r.open_times.lock().unwrap()[1..]
            .iter()
            .map(|t| t - lost_at)
            .collect();
        // Waits 0.1, 0.2, 0.4, then capped at 0.5.
        let want = [0.1, 0.3, 0.7, 1.2, 1.7, 2.2, 2.7];
        assert_eq!(tries.len(), want.len(), "{tries:?}");
        for (t, w) in tries.iter().zip(want) {
            assert!((t - w).abs() < 1e-6, "{tries:?}");
        }
        // One outage, one lost and one back line, although the camera failed twice.
        let rep = r.source.report().unwrap();
        assert_eq!(rep["outages"].as_array().unwrap().len(), 1);
        assert_eq!(rep["reconnects"], 2);
        assert_eq!(r.lines.lock().unwrap().len(), 2);
    }

    #[test]
    fn stop_during_back_off_returns_none_promptly() {
        use Step::*;
        let config = CameraConfig {
            backoff_max: 60.0,
            ..Default::default()
        };
        let mut r = rig(
            config,
            &[true, false, false, false, false, false, false, false],
            vec![Frame(0, 1.0), Fail("gone")],
        )
        .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        r.source.set_stop(stop.clone());
        frame(&mut r.source);
        // Stop 10 s into the outage, while the source waits 12.8 s for its 8th try.
        let lost_at = r.clock.now();
        r.clock.0.lock().unwrap().stop_at = Some((lost_at + 10.0, stop));
        assert!(r.source.next_frame().is_none());
        let waited = r.clock.now() - lost_at;
        assert!(
            (10.0..=10.0 + POLL_SLICE.as_secs_f64() + 1e-9).contains(&waited),
            "{waited}"
        );
        assert!(r.source.next_frame().is_none());
        let rep = r.source.report().unwrap();
        let o = &rep["outages"][0];
        assert_eq!(o["ongoing"], true);
        assert!(
            (o["length_s"].as_f64().unwrap() - waited).abs() < 1e-3,
            "{o}"
        );
        assert_eq!(rep["reconnects"], 0);
    }

    #[test]
    fn a_reopen_failing_otherwise_than_missing_is_said_once() {
        use Step::*;
        let mut r = rig(
            CameraConfig::default(),
            &[true, false, false, false, true],
            vec![Frame(0, 1.0), Fail("gone"), Frame(0, 2.0)],
        )
        .unwrap();
        r.source.camera.open_error = "cannot open (Permission denied); add your user to `video`";
        frame(&mut r.source);
        frame(&mut r.source);
        let lines = r.lines.lock().unwrap().clone();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(
            lines[1],
            "camera /dev/video0: reopening failed (cannot open (Permission denied); add your user \
             to `video`); retrying"
        );
        assert!(lines[2].contains("back after"), "{lines:?}");
    }

    #[test]
    fn stop_while_waiting_for_frames_returns_none() {
        let mut r = rig(
            CameraConfig::default(),
            &[true],
            (0..100).map(|_| Step::NotYet).collect(),
        )
        .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        r.source.set_stop(stop.clone());
        r.clock.0.lock().unwrap().stop_at = Some((1.0, stop));
        assert!(r.source.next_frame().is_none());
        assert!(r.clock.now() <= 1.0 + POLL_SLICE.as_secs_f64() + 1e-9);
        assert!(r.lines.lock().unwrap().is_empty());
    }

    #[test]
    fn no_frame_for_timeout_counts_as_lost() {
        use Step::*;
        let config = CameraConfig {
            timeout: 0.18,
            ..Default::default()
        };
        // Four empty polls of 0.05 s: 0.2 s without a frame.
        let mut steps = vec![Frame(0, 1.0)];
        steps.extend((0..4).map(|_| NotYet));
        steps.push(Frame(0, 9.0));
        let mut r = rig(config, &[true, true], steps).unwrap();
        frame(&mut r.source);
        let f = frame(&mut r.source);
        assert_eq!(f.id, "camera/00000001");
        let lines = r.lines.lock().unwrap().clone();
        assert!(lines[0].contains("(no frame for 0.2 s)"), "{lines:?}");
        assert_eq!(r.source.report().unwrap()["reconnects"], 1);
    }

    #[test]
    fn sequence_gaps_are_driver_drops() {
        use Step::*;
        let mut r = rig(
            CameraConfig::default(),
            &[true, true],
            vec![
                Frame(10, 1.0),
                Frame(11, 1.1),
                Frame(14, 1.4),
                Frame(15, 1.5),
                Frame(19, 1.9),
                Fail("gone"),
                // The counter restarts after a reopen: not a gap.
                Frame(0, 2.0),
                Frame(2, 2.2),
                Frame(u32::MAX, 2.3),
                Frame(0, 2.4),
            ],
        )
        .unwrap();
        for _ in 0..9 {
            frame(&mut r.source);
        }
        // 2 + 3, then 1 after the reopen; MAX → 0 wraps without a gap; MAX after 2 is a
        // restart, not 4 billion drops.
        assert_eq!(r.source.report().unwrap()["driver_drops"], 6);
    }

    #[test]
    fn bad_buffers_are_skipped_items_without_a_frame_number() {
        use Step::*;
        let mut r = rig(
            CameraConfig::default(),
            &[true],
            vec![
                Frame(0, 1.0),
                Bad("MJPEG frame: cannot decode"),
                Frame(1, 1.1),
            ],
        )
        .unwrap();
        frame(&mut r.source);
        let e = r.source.next_frame().unwrap().unwrap_err();
        assert_eq!(
            e.to_string(),
            "camera /dev/video0 buffer 7: MJPEG frame: cannot decode; frame skipped"
        );
        assert_eq!(frame(&mut r.source).id, "camera/00000001");
        assert_eq!(r.source.report().unwrap()["skipped"], 1);
    }

    #[test]
    fn without_reconnect_a_lost_camera_ends_the_stream() {
        use Step::*;
        let config = CameraConfig {
            reconnect: false,
            ..Default::default()
        };
        let mut r = rig(config, &[true], vec![Frame(0, 1.0), Fail("gone")]).unwrap();
        frame(&mut r.source);
        let e = r.source.next_frame().unwrap().unwrap_err();
        assert!(e.to_string().contains("reconnect` is false"), "{e}");
        assert!(r.source.next_frame().is_none());
        assert_eq!(r.open_times.lock().unwrap().len(), 1);
        assert_eq!(r.source.report().unwrap()["outages"][0]["ongoing"], true);
    }

    #[test]
    fn a_device_missing_at_start_is_an_open_error() {
        let e = rig(CameraConfig::default(), &[false], vec![])
            .err()
            .unwrap();
        assert_eq!(e, "No such device");
    }

    #[test]
    fn the_source_is_live_and_describes_its_mode() {
        let r = rig(CameraConfig::default(), &[true], vec![]).unwrap();
        assert!(r.source.is_live());
        assert_eq!(r.source.len_hint(), None);
        assert_eq!(r.source.fps(), Some(30.0));
        assert_eq!(r.source.describe(), "camera /dev/video0 (YUYV 4×2@30)");
    }
}
