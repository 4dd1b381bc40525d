//! The camera as a live source that survives going away ([`Reconnecting`]): the state machine over
//! the hardware ([`Camera`]: open / grab / close) and time ([`Clock`]), with the back-off and the
//! outage record of [`crate::source::reconnect`]. Unit-tested with a scripted camera and a fake
//! clock (`tests.rs`).
//!
//! Shared by the V4L2 camera and the GenICam one (`source::genicam`): what differs between them is
//! behind the [`Camera`] trait (the opened mode, [`OpenedMode`]; why an open failed,
//! [`OpenError`]; extra report fields) and [`ReconnectSettings`] (the reconnect keys of
//! `[source.camera]` or `[source.genicam]`, and the word that names the source in ids and lines:
//! `camera/<n>`, `genicam/<n>`).

// Dead code is allowed only in builds where `not(feature = "camera")`: without the `camera`
// feature no camera opens, so the state machine runs only in the unit tests.
#![cfg_attr(not(any(feature = "camera", feature = "genicam")), allow(dead_code))]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use image::RgbImage;

use super::config::{BACKOFF_START, CameraConfig};
use super::error::CameraError;
use super::mode::{Negotiated, fps_text};
use crate::frame::Frame;
use crate::source::reconnect::{self, Backoff, Clock, Ongoing, Outages, POLL_SLICE};
use crate::source::{LOST_SEQUENCE_GAP, Source, SourceError, SourceErrorKind};

/// What an opened camera runs in, as the reconnect logic shows it: one line (`YUYV 640×480@30`),
/// the rate, the report's `format` object.
pub(crate) trait OpenedMode: Clone + Send + std::fmt::Display {
    /// Frames per second, when known.
    fn fps(&self) -> Option<f64>;
    /// The report's `format` value.
    fn to_json(&self) -> serde_json::Value;
}

impl OpenedMode for Negotiated {
    fn fps(&self) -> Option<f64> {
        self.mode.fps
    }
    fn to_json(&self) -> serde_json::Value {
        self.mode.to_json()
    }
}

impl std::fmt::Display for Negotiated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.mode.fmt(f)
    }
}

/// Why a camera did not open, as the reconnect logic tells the kinds apart: it stays quiet about
/// a camera that is simply not there (unplugged) while reconnecting.
pub(crate) trait OpenError: std::error::Error + Send + Sync + 'static {
    /// The device is not there (unplugged, not on the network).
    fn is_missing(&self) -> bool;
}

impl OpenError for CameraError {
    fn is_missing(&self) -> bool {
        matches!(self, CameraError::Missing)
    }
}

/// The reconnect keys (`reconnect`, `backoff_max`, `timeout`, as in `[source.camera]`) and the
/// word naming the source (`camera`: ids `camera/<n>`, lines `camera /dev/video0: lost …`, the
/// table `[source.camera]`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReconnectSettings {
    /// Reopen a lost camera (else the stream ends).
    pub(crate) reconnect: bool,
    /// Longest wait between attempts, seconds.
    pub(crate) backoff_max: f64,
    /// Seconds without a frame after which the camera counts as lost.
    pub(crate) timeout: f64,
    /// The source's word: `camera` or `genicam`.
    pub(crate) kind: &'static str,
}

impl From<CameraConfig> for ReconnectSettings {
    fn from(c: CameraConfig) -> Self {
        Self {
            reconnect: c.reconnect,
            backoff_max: c.backoff_max,
            timeout: c.timeout,
            kind: "camera",
        }
    }
}

/// One buffer taken from the camera and converted.
#[derive(Debug)]
pub(crate) struct Captured {
    /// The pixels.
    pub(crate) image: RgbImage,
    /// The driver's buffer sequence number (counts frames, including ones it dropped).
    pub(crate) sequence: u32,
    /// The driver's capture time, seconds on its clock; `None` when it gives none (zero).
    pub(crate) driver_time: Option<f64>,
    /// When the buffer was dequeued (host clock).
    pub(crate) captured: Instant,
    /// Conversion time, milliseconds.
    pub(crate) decode_ms: f64,
}

/// What one [`Camera::grab`] got.
#[derive(Debug)]
pub(crate) enum Grab {
    /// A converted frame.
    Frame(Captured),
    /// No frame within the wait (poll again).
    NotYet,
    /// A buffer that did not convert (damaged or truncated frame; sequence number and why): one
    /// skipped item, the stream goes on.
    Bad(u32, String),
    /// A buffer the camera's stream gave up on (sequence number and the cause, a snake_case word:
    /// `missing_packets`, `timeout`…): counted in [`Source::lost_causes`] under that cause, no
    /// item; the wait for a frame goes on.
    // Made only by the GenICam camera (`genicam/arv.rs`) and the unit tests' scripted one.
    #[cfg_attr(not(feature = "genicam"), allow(dead_code))]
    Lost(u32, &'static str),
    /// The device failed (unplugged, I/O error): close it and reconnect.
    Failed(String),
}

/// The hardware side of a camera, as the reconnect logic ([`Reconnecting`]) sees it.
pub(crate) trait Camera: Send {
    /// What an open gives: the mode in use.
    type Mode: OpenedMode;
    /// Why an open failed.
    type Error: OpenError;
    /// Opens the device, negotiates the mode and prepares streaming. The error's kind says what is
    /// wrong, its line what to do.
    fn open(&mut self) -> Result<Self::Mode, Self::Error>;
    /// Waits up to about `wait` for the next buffer and converts it. (The V4L2 implementation waits
    /// for the first buffer after [`Camera::open`] up to the configured `timeout` in one call.)
    fn grab(&mut self, wait: Duration) -> Grab;
    /// Releases the device (no-op when closed).
    fn close(&mut self);
    /// Extra fields for the source's report (a GenICam stream's statistics); `None` = none.
    fn report(&self) -> Option<serde_json::Value> {
        None
    }
}

/// Where the reconnect state machine is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Open; `waiting_since` is when the current wait for a frame began.
    Streaming { waiting_since: Option<f64> },
    /// Closed; the next open attempt at clock time `next_try`.
    Lost { next_try: f64 },
    /// The stream is over: lost without reconnect.
    Ended,
}

/// Where the anchors of frame timestamps are (driver time ↔ stream time).
#[derive(Debug, Clone, Copy)]
struct Anchor {
    driver: Option<f64>,
    stream: f64,
}

/// A camera that reconnects (see the module docs): the state machine over any [`Camera`] and
/// [`Clock`], and the [`Source`] the run reads.
pub(crate) struct Reconnecting<C: Camera, K: Clock> {
    /// The hardware (seen by the tests, which script it).
    pub(super) camera: C,
    clock: K,
    config: ReconnectSettings,
    device: PathBuf,
    log: Box<dyn Fn(&str) + Send>,
    stop: Arc<AtomicBool>,
    state: State,
    /// The outage the camera is in: from being lost until the first frame after a reopen (a
    /// reopened camera that fails before its first frame is still in the same outage).
    outage: Option<Ongoing>,
    /// The wait before the next reopen attempt (from [`BACKOFF_START`] doubling to
    /// `backoff_max`; back to the start with each frame).
    backoff: Backoff,
    negotiated: C::Mode,
    opened_at: f64,
    /// Clock time of the first frame.
    first_frame: Option<f64>,
    anchor: Option<Anchor>,
    last_sequence: Option<u32>,
    last_timestamp: f64,
    frames: u64,
    driver_drops: u64,
    /// Buffers the camera's stream gave up on, by cause ([`Grab::Lost`]).
    lost_buffers: BTreeMap<&'static str, u64>,
    skipped: u64,
    /// Outages ended (ongoing: `outage`) and reopens.
    outages: Outages,
    /// The last reopen failure printed (a device that is back but fails otherwise — permissions,
    /// formats — is worth one line; "No such device" while unplugged is not).
    last_open_error: Option<String>,
}

impl<C: Camera, K: Clock> Reconnecting<C, K> {
    /// Opens `camera` once; an error is the open error of the source (no waiting at start). Lines
    /// (negotiation, lost, back) go to `log`.
    pub(crate) fn start(
        mut camera: C,
        clock: K,
        config: impl Into<ReconnectSettings>,
        device: PathBuf,
        log: Box<dyn Fn(&str) + Send>,
    ) -> Result<Self, C::Error> {
        let config = config.into();
        let negotiated = camera.open()?;
        let opened_at = clock.now();
        Ok(Self {
            camera,
            clock,
            backoff: Backoff::new(BACKOFF_START, config.backoff_max),
            config,
            device,
            log,
            stop: Arc::new(AtomicBool::new(false)),
            state: State::Streaming {
                waiting_since: None,
            },
            outage: None,
            negotiated,
            opened_at,
            first_frame: None,
            anchor: None,
            last_sequence: None,
            last_timestamp: 0.0,
            frames: 0,
            driver_drops: 0,
            lost_buffers: BTreeMap::new(),
            skipped: 0,
            outages: Outages::default(),
            last_open_error: None,
        })
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Sleeps until clock time `until` in slices of [`POLL_SLICE`]; false when stopped first.
    fn sleep_until(&self, until: f64) -> bool {
        reconnect::sleep_until(&self.clock, || self.stopped(), until)
    }

    /// The camera failed (`why`): close it and go to back-off, or end without reconnect.
    fn lose(&mut self, why: &str) -> Option<Result<Frame, SourceError>> {
        self.camera.close();
        let now = self.clock.now();
        if self.outage.is_some() {
            // Lost again before the reopened camera gave a frame: the same outage goes on.
            self.backoff.failed();
        } else {
            self.outage = Some(Ongoing::new(now, why));
            let at = now - self.opened_at;
            let device = self.device.display();
            let kind = self.config.kind;
            if !self.config.reconnect {
                (self.log)(&format!(
                    "{kind} {device}: lost at {at:.1} s ({why}); reconnect is off, the stream \
                     ends"
                ));
                self.state = State::Ended;
                return Some(Err(SourceError::new(
                    SourceErrorKind::Lost,
                    format!("{kind} {device}"),
                    format!(
                        "lost ({why}); the stream ends because `[source.{kind}] reconnect` is \
                         false"
                    ),
                )));
            }
            (self.log)(&format!(
                "{kind} {device}: lost at {at:.1} s ({why}); reconnecting (waits from \
                 {BACKOFF_START} s doubling to {} s)",
                fps_text(self.config.backoff_max)
            ));
            self.backoff.reset();
        }
        self.state = State::Lost {
            next_try: now + self.backoff.wait(),
        };
        None
    }

    /// One reopen attempt of the lost camera: streaming again (the outage goes on until its
    /// first frame), or the next attempt after a longer wait.
    fn reopen(&mut self) {
        if let Some(o) = self.outage.as_mut() {
            o.attempts += 1;
        }
        match self.camera.open() {
            Ok(negotiated) => {
                self.negotiated = negotiated;
                self.outages.reconnected();
                // Sequence numbers restart and the driver's clock may too.
                self.last_sequence = None;
                self.anchor = None;
                self.state = State::Streaming {
                    waiting_since: None,
                };
            }
            Err(e) => {
                // Still unplugged is what a reconnect waits out, not news.
                let line = e.to_string();
                if !e.is_missing() && self.last_open_error.as_ref() != Some(&line) {
                    (self.log)(&format!(
                        "{} {}: reopening failed ({line}); retrying",
                        self.config.kind,
                        self.device.display()
                    ));
                    self.last_open_error = Some(line);
                }
                self.backoff.failed();
                self.state = State::Lost {
                    next_try: self.clock.now() + self.backoff.wait(),
                };
            }
        }
    }

    /// A frame came: an outage the camera was in is over (recorded, one line), the back-off
    /// starts again from the beginning, and the frame is delivered.
    fn back(&mut self, c: Captured) -> Frame {
        if let Some(o) = self.outage.take() {
            let outage = o.end(self.opened_at, self.clock.now(), true);
            (self.log)(&format!(
                "{} {}: back after {:.1} s ({}, reconnect {})",
                self.config.kind,
                self.device.display(),
                outage.duration_s,
                self.negotiated,
                self.outages.reconnects()
            ));
            self.outages.push(outage);
        }
        self.backoff.reset();
        self.state = State::Streaming {
            waiting_since: None,
        };
        self.deliver(c)
    }

    /// Sequence number `sequence` came (delivered or lost): the gap before it is counted.
    fn sequence_seen(&mut self, sequence: u32) {
        if let Some(last) = self.last_sequence {
            let step = sequence.wrapping_sub(last);
            // A step of 0 or "negative" is a restarted counter, not drops.
            if (1..1 << 31).contains(&step) {
                self.driver_drops += u64::from(step - 1);
            }
        }
        self.last_sequence = Some(sequence);
    }

    /// A delivered frame: sequence gaps, timestamp, id.
    fn deliver(&mut self, c: Captured) -> Frame {
        let now = self.clock.now();
        self.sequence_seen(c.sequence);
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
            ..Frame::new(format!("{}/{n:08}", self.config.kind), n, c.image)
        }
    }

    /// What [`Source::report`] returns: the device, its mode, frame counts, and the outages in
    /// the shape network streams report them ([`Outages::report_into`]; an outage the camera is
    /// still in listed last, unrecovered).
    fn report_json(&self) -> serde_json::Value {
        let mut r = serde_json::json!({
            "device": self.device.display().to_string(),
            "format": self.negotiated.to_json(),
            "frames": self.frames,
            "driver_drops": self.driver_drops,
            "skipped": self.skipped,
        });
        let ongoing = self
            .outage
            .as_ref()
            .map(|o| o.end(self.opened_at, self.clock.now(), false));
        if let Some(map) = r.as_object_mut() {
            if !self.lost_buffers.is_empty() {
                map.insert("lost".into(), serde_json::json!(self.lost_buffers));
            }
            if let Some(serde_json::Value::Object(extra)) = self.camera.report() {
                map.extend(extra);
            }
            self.outages.report_into(map, ongoing);
        }
        r
    }
}

impl<C: Camera, K: Clock> Source for Reconnecting<C, K> {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        loop {
            if self.stopped() {
                return None;
            }
            match self.state {
                State::Ended => return None,
                State::Lost { next_try } => {
                    if !self.sleep_until(next_try) {
                        return None;
                    }
                    self.reopen();
                }
                State::Streaming { waiting_since } => {
                    let before = self.clock.now();
                    match self.camera.grab(POLL_SLICE) {
                        Grab::Frame(c) => return Some(Ok(self.back(c))),
                        Grab::NotYet => {
                            let now = self.clock.now();
                            let since = waiting_since.unwrap_or(before);
                            if now - since >= self.config.timeout {
                                let why = format!("no frame for {} s", fps_text(now - since));
                                if let Some(end) = self.lose(&why) {
                                    return Some(end);
                                }
                            } else {
                                self.state = State::Streaming {
                                    waiting_since: Some(since),
                                };
                            }
                        }
                        Grab::Bad(sequence, why) => {
                            self.skipped += 1;
                            self.state = State::Streaming {
                                waiting_since: None,
                            };
                            return Some(Err(SourceError::new(
                                SourceErrorKind::Unreadable,
                                format!("camera {} buffer {sequence}", self.device.display()),
                                format!("{why}; frame skipped"),
                            )));
                        }
                        Grab::Failed(why) => {
                            if let Some(end) = self.lose(&why) {
                                return Some(end);
                            }
                        }
                        Grab::Lost(sequence, cause) => {
                            self.sequence_seen(sequence);
                            *self.lost_buffers.entry(cause).or_default() += 1;
                            let since = waiting_since.unwrap_or(before);
                            self.state = State::Streaming {
                                waiting_since: Some(since),
                            };
                        }
                    }
                }
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    fn describe(&self) -> String {
        format!(
            "{} {} ({})",
            self.config.kind,
            self.device.display(),
            self.negotiated
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
        self.negotiated.fps()
    }

    fn lost(&self) -> u64 {
        self.driver_drops + self.lost_buffers.values().sum::<u64>()
    }

    fn lost_causes(&self) -> Vec<(&'static str, u64)> {
        let gaps = (self.driver_drops > 0).then_some((LOST_SEQUENCE_GAP, self.driver_drops));
        gaps.into_iter()
            .chain(self.lost_buffers.iter().map(|(&c, &n)| (c, n)))
            .collect()
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
