//! The video source itself ([`VideoSource`]): its state, opening, and what it tells the run
//! ([`Source`]: description, live or not, the end error, `run.source_report`).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use ffmpeg_next as ffmpeg;

use super::config::Settings;
use super::convert::Converter;
use super::input::{Interrupt, Io, Opened, StreamError, init, open_input};
use crate::frame::Frame;
use crate::source::reconnect::{Outages, SystemClock};
use crate::source::{Source, SourceError, SourceErrorKind};

/// What happened to one packet or frame read.
pub(super) enum Step {
    /// A frame to hand out.
    Frame(Frame),
    /// One skipped item.
    Error(SourceError),
    /// Nothing to hand out yet: step again.
    Again,
    /// The end of the source.
    End,
}

/// A video file or network stream (see the module docs).
pub(crate) struct VideoSource {
    pub(super) target: String,
    pub(super) name: String,
    pub(super) network: bool,
    pub(super) settings: Settings,
    pub(super) intr: Arc<Interrupt>,
    pub(super) opened: Opened,
    /// The open input; `None` only during a network outage.
    pub(super) io: Option<Io>,
    pub(super) decoded: ffmpeg::frame::Video,
    pub(super) converter: Option<Converter>,
    /// Decoded frames from the start point (loops continue it).
    pub(super) index: u64,
    /// EOF sent to the decoder; draining.
    pub(super) draining: bool,
    pub(super) done: bool,
    /// Passes finished.
    pub(super) passes_done: u64,
    /// Times the file was started again from `start`.
    pub(super) loops: u64,
    /// `frames_decoded` when the current pass began.
    pub(super) pass_start_decoded: u64,
    /// Presentation time of the first and last frame of the current pass (seconds in the
    /// file), for the real-time clock across loops.
    pub(super) pass_first: Option<f64>,
    pub(super) pass_last: f64,
    /// Real-time clock: media seconds of earlier passes, and the instant of media time 0.
    pub(super) clock_offset: f64,
    pub(super) pace_start: Option<Instant>,
    /// Network: the connection's offset from the source's opening (`clock`) and its first pts (seconds).
    pub(super) conn_offset: f64,
    pub(super) conn_first: Option<f64>,
    /// Counts from when the source opened: outages' times, reconnect waits.
    pub(super) clock: SystemClock,
    /// When the current `next_frame` call began (shifted past any pacing sleep): a frame's
    /// `decode_ms` covers reading, decoding (including frames `every` passes over) and
    /// conversion; for a network stream also waiting for data.
    pub(super) work_start: Instant,
    // Report.
    pub(super) frames_decoded: u64,
    pub(super) frames_out: u64,
    pub(super) decode_errors: u64,
    pub(super) seeks: u64,
    pub(super) reopens: u64,
    /// Network outages and reconnects.
    pub(super) outages: Outages,
    /// The frame index the last damaged packet was reported at.
    pub(super) last_packet_error: Option<u64>,
    /// Network: the connection was lost (why); the decoder is drained of the frames it
    /// holds, then the stream is reconnected.
    pub(super) lost: Option<String>,
}

impl VideoSource {
    /// Opens the file or URL `target` (see [`super::open`]).
    pub(super) fn open(
        target: &str,
        network: bool,
        settings: Settings,
    ) -> Result<Self, SourceError> {
        init();
        let intr = Arc::new(Interrupt::new());
        let (opened, io) = open_input(target, &intr, network.then_some(settings.open_timeout))
            .map_err(|e| {
                // An input that opened but holds nothing to decode is unreadable, not unreachable.
                let kind = match e {
                    StreamError::Open { .. } => SourceErrorKind::Open,
                    _ => SourceErrorKind::Unreadable,
                };
                SourceError::new(kind, target, e.to_string()).caused_by(e)
            })?;
        let mut source = Self {
            target: target.to_string(),
            name: super::target::id_name(target),
            network,
            settings,
            intr,
            opened,
            io: Some(io),
            decoded: ffmpeg::frame::Video::empty(),
            converter: None,
            index: 0,
            draining: false,
            done: false,
            passes_done: 0,
            loops: 0,
            pass_start_decoded: 0,
            pass_first: None,
            pass_last: 0.0,
            clock_offset: 0.0,
            pace_start: None,
            conn_offset: 0.0,
            conn_first: None,
            clock: SystemClock::default(),
            work_start: Instant::now(),
            frames_decoded: 0,
            frames_out: 0,
            decode_errors: 0,
            seeks: 0,
            reopens: 0,
            outages: Outages::default(),
            last_packet_error: None,
            lost: None,
        };
        if settings.start > 0.0 && !network {
            source.rewind().map_err(|e| {
                SourceError::new(
                    SourceErrorKind::Open,
                    target,
                    format!("cannot seek to `start` ({e})"),
                )
                .caused_by(e)
            })?;
        }
        Ok(source)
    }

    /// Whether the run's stop flag rose.
    pub(super) fn stopped(&self) -> bool {
        self.intr.stopped()
    }
}

impl Source for VideoSource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        self.work_start = Instant::now();
        loop {
            if self.done || self.stopped() {
                return None;
            }
            match self.step() {
                Step::Frame(f) => return Some(Ok(f)),
                Step::Error(e) => return Some(Err(e)),
                Step::Again => {}
                Step::End => return None,
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        let s = &self.settings;
        if self.network || s.start > 0.0 || s.stop.is_some() || self.opened.frames <= 0 {
            return None;
        }
        let per_pass = (self.opened.frames as u64).div_ceil(s.every);
        usize::try_from(per_pass * s.passes?).ok()
    }

    fn is_live(&self) -> bool {
        self.network || self.settings.realtime
    }

    fn fps(&self) -> Option<f64> {
        (self.opened.fps > 0.0).then_some(self.opened.fps)
    }

    fn set_stop(&mut self, stop: Arc<AtomicBool>) {
        self.intr.set_stop(stop);
    }

    /// A video that ended without decoding a single frame (in the `start`–`stop` window) is
    /// an error, not an empty run: damaged past decoding, empty, or a window past its end.
    fn end_error(&self) -> Option<SourceError> {
        if self.frames_decoded > 0 || self.stopped() {
            return None;
        }
        let s = &self.settings;
        let what = if self.decode_errors > 0 {
            format!(
                "no decodable video frame ({} decode errors); the file is damaged or its codec \
                 data unreadable: check it with ffprobe, re-encode it, or give another file",
                self.decode_errors
            )
        } else if self.network {
            "no video frame received before the stream ended; check that the sender sends \
             video"
                .to_string()
        } else if s.start > 0.0 || s.stop.is_some() {
            let stop = s
                .stop
                .map_or_else(|| "the end".to_string(), |t| format!("{t} s"));
            format!(
                "no video frame from `start` = {} s to {stop} (the file ends before, or the \
                 window holds no frame); change `[source.video] start`/`stop`",
                s.start
            )
        } else {
            "no video frame in it (its video stream is empty); give a file with frames".to_string()
        };
        Some(SourceError::new(
            SourceErrorKind::Empty,
            self.target.clone(),
            what,
        ))
    }

    fn describe(&self) -> String {
        let o = &self.opened;
        let (w, h) = (o.width, o.height);
        let s = &self.settings;
        let mut d = format!(
            "video {} ({} {w}x{h} @ {:.3} fps",
            self.target, o.codec, o.fps
        );
        if self.network {
            d.push_str(", network stream");
        } else if s.realtime {
            d.push_str(", real time");
        }
        match s.passes {
            None => d.push_str(", looped"),
            Some(p) if p > 1 => d.push_str(&format!(", {p} passes")),
            _ => {}
        }
        if s.start > 0.0 || s.stop.is_some() {
            let stop = s
                .stop
                .map_or_else(|| "end".to_string(), |t| format!("{t} s"));
            d.push_str(&format!(", {} s to {stop}", s.start));
        }
        if s.every > 1 {
            d.push_str(&format!(", every {}th frame", s.every));
        }
        d.push(')');
        d
    }

    /// A network stream's URL; a video file is no camera.
    fn camera(&self) -> Option<String> {
        self.network.then(|| self.target.clone())
    }

    fn report(&self) -> Option<serde_json::Value> {
        let o = &self.opened;
        let mut r = serde_json::json!({
            "kind": "video",
            "codec": o.codec,
            "width": o.width,
            "height": o.height,
            "fps": o.fps,
            "frames_decoded": self.frames_decoded,
            "frames_out": self.frames_out,
            "decode_errors": self.decode_errors,
            "loops": self.loops,
            "seeks": self.seeks,
            "realtime": self.settings.realtime && !self.network,
        });
        if let Some(map) = r.as_object_mut() {
            let what = if self.network { "url" } else { "file" };
            map.insert(what.into(), self.target.clone().into());
            if self.reopens > 0 {
                map.insert("reopens".into(), self.reopens.into());
            }
            if self.network {
                // A reconnect is over before the report is asked for: no outage is ongoing.
                self.outages.report_into(map, None);
            }
        }
        Some(r)
    }
}
