//! The GStreamer source itself ([`GstSource`]): frames out of the appsink's samples (ids,
//! timestamps from the buffer PTS, rows copied honouring the stride), the end of an offline
//! pipeline, a live one rebuilt with back-off after an error, and what it reports.
//! docs/sources.md#gstreamer-pipelines.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use gstreamer as gst;
use gstreamer_video as gst_video;
use gstreamer_video::prelude::VideoFrameExt;
use image::RgbImage;

use super::config::{BACKOFF_START, GstConfig};
use super::pipeline::{GstError, Pulled, Running, first_part};
use crate::frame::Frame;
use crate::source::reconnect::{Backoff, Clock, Ongoing, Outages, Retried, SystemClock, retry};
use crate::source::{Source, SourceError, SourceErrorKind};

/// How long one pull waits before the stop flag is looked at again.
const PULL_SLICE: Duration = Duration::from_millis(50);

/// A PTS older than this when pulled is not mapped to the host clock (a clock that jumped, a
/// source whose timestamps are not capture times): the pull time is taken instead.
const MAX_AGE_S: f64 = 10.0;

/// A GStreamer pipeline as a source (see the module docs of [`super`]).
pub(crate) struct GstSource {
    /// The chain as given (without robustream's appended elements).
    text: String,
    config: GstConfig,
    /// The playing pipeline; `None` once ended or during an outage.
    running: Option<Running>,
    live: bool,
    /// The first sample, pulled at open (caps known), handed out first.
    pending: Option<gst::Sample>,
    stop: Arc<AtomicBool>,
    /// The negotiated format: caps as text, size, rate.
    caps: String,
    info: Option<gst_video::VideoInfo>,
    fps: Option<f64>,
    /// Frames handed out (ids `gst/<n:08>`).
    frames: u64,
    /// Samples pulled from the current pipeline, and buffers the earlier pipelines' appsinks
    /// dropped.
    pulled_here: u64,
    lost_before: u64,
    lost: u64,
    /// Seconds from the source's opening to the current pipeline's start (timestamps go on
    /// over a rebuild).
    conn_offset: f64,
    clock: SystemClock,
    outages: Outages,
    /// Why the source ended on its own with an error (asked by `end_error`).
    failure: Option<SourceError>,
    done: bool,
    /// PTS → pull ages of live frames, ms: count, sum and largest.
    ages: (u64, f64, f64),
}

impl GstSource {
    /// Builds and starts `text`, waiting for its first frame up to `config.timeout`.
    pub(super) fn open(text: &str, config: GstConfig) -> Result<Self, SourceError> {
        let item = format!("gst:{text}");
        let running = Running::build(text, config.convert_threads).map_err(|e| {
            SourceError::new(SourceErrorKind::Open, &item, e.to_string()).caused_by(e)
        })?;
        let first = running
            .first_sample(config.timeout, PULL_SLICE, &|| false)
            .map_err(|e| {
                SourceError::new(SourceErrorKind::Open, &item, e.to_string()).caused_by(e)
            })?;
        let live = running.live;
        let mut source = Self {
            text: text.to_string(),
            config,
            running: Some(running),
            live,
            pending: None,
            stop: Arc::new(AtomicBool::new(false)),
            caps: String::new(),
            info: None,
            fps: None,
            frames: 0,
            pulled_here: 0,
            lost_before: 0,
            lost: 0,
            conn_offset: 0.0,
            clock: SystemClock::default(),
            outages: Outages::default(),
            failure: None,
            done: false,
            ages: (0, 0.0, 0.0),
        };
        if let Some(sample) = first {
            source.take_caps(&sample);
            source.pending = Some(sample);
        }
        Ok(source)
    }

    fn item(&self) -> String {
        format!("gst:{}", self.text)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The sample's caps as the frame format, when they changed.
    fn take_caps(&mut self, sample: &gst::Sample) {
        let Some(caps) = sample.caps() else { return };
        let text = caps.to_string();
        if text == self.caps && self.info.is_some() {
            return;
        }
        self.info = gst_video::VideoInfo::from_caps(caps).ok();
        self.fps = self.info.as_ref().and_then(|i| {
            let f = i.fps();
            (f.numer() > 0 && f.denom() > 0).then(|| f64::from(f.numer()) / f64::from(f.denom()))
        });
        self.caps = text;
    }

    /// Buffers the current pipeline's appsink dropped (newest wins), added to the earlier ones';
    /// one buffer may still wait in the appsink, so it is not counted until it is gone.
    fn count_lost(&mut self) {
        if let Some(r) = &self.running
            && self.live
        {
            let dropped = r.arrived().saturating_sub(self.pulled_here + 1);
            self.lost = self.lost.max(self.lost_before + dropped);
        }
    }

    /// The frame of one sample: RGB rows copied out at the negotiated stride.
    fn frame_of(&mut self, sample: &gst::Sample) -> Result<Frame, SourceError> {
        let pulled = Instant::now();
        self.take_caps(sample);
        let n = self.frames;
        let id = format!("gst/{n:08}");
        let item = self.item();
        let bad = |what: &str| {
            let mut e = SourceError::new(
                SourceErrorKind::Unreadable,
                item.clone(),
                format!("frame {id}: {what}; the run goes on with the next frame"),
            );
            e.frame = Some(id.clone());
            e
        };
        let (Some(buffer), Some(info)) = (sample.buffer(), self.info.clone()) else {
            return Err(bad("a sample without a buffer or video caps"));
        };
        // Running time of the buffer's PTS: the capture time on the pipeline clock for a live
        // source, the position in the media for an offline one.
        let running = sample
            .segment()
            .and_then(|s| s.downcast_ref::<gst::ClockTime>())
            .and_then(|seg| buffer.pts().and_then(|pts| seg.to_running_time(pts)));
        let mut captured = pulled;
        if self.live
            && let (Some(rt), Some((now, base))) =
                (running, self.running.as_ref().and_then(Running::clock_now))
        {
            let age = now.nseconds() as f64 - (base.nseconds() + rt.nseconds()) as f64;
            let age_s = age / 1e9;
            if (0.0..MAX_AGE_S).contains(&age_s) {
                captured = pulled
                    .checked_sub(Duration::from_secs_f64(age_s))
                    .unwrap_or(pulled);
                let ms = age_s * 1e3;
                self.ages = (self.ages.0 + 1, self.ages.1 + ms, self.ages.2.max(ms));
            }
        }
        let view = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info)
            .map_err(|e| bad(&format!("cannot map the buffer ({e})")))?;
        let (w, h) = (info.width(), info.height());
        let row = w as usize * 3;
        let stride = usize::try_from(view.plane_stride()[0]).unwrap_or(0);
        let data = view
            .plane_data(0)
            .map_err(|e| bad(&format!("cannot read the frame's pixels ({e})")))?;
        if stride < row || data.len() < stride * (h as usize).saturating_sub(1) + row {
            return Err(bad(&format!(
                "a {w}x{h} RGB frame in {} bytes at stride {stride}",
                data.len()
            )));
        }
        let mut pixels = vec![0u8; row * h as usize];
        for (dst, src) in pixels.chunks_exact_mut(row).zip(data.chunks(stride)) {
            dst.copy_from_slice(&src[..row]);
        }
        let image = RgbImage::from_raw(w, h, pixels).ok_or_else(|| bad("a frame of no size"))?;
        let decode_ms = pulled.elapsed().as_secs_f64() * 1e3;
        self.frames += 1;
        let timestamp = running.map(|rt| self.conn_offset + rt.nseconds() as f64 / 1e9);
        Ok(Frame {
            captured,
            decode_ms,
            timestamp,
            ..Frame::new(id, n, image)
        })
    }

    /// The current pipeline failed or stalled (`why`): an offline one ends the run with it, a
    /// live one is rebuilt with back-off (`reconnect`), the outage recorded. True when a new
    /// pipeline plays.
    fn lost_pipeline(&mut self, why: GstError) -> bool {
        self.count_lost();
        self.running = None;
        let item = self.item();
        if !self.live || !self.config.reconnect {
            let kind = match self.live {
                true => SourceErrorKind::Lost,
                false => SourceErrorKind::Unreadable,
            };
            let mut message = why.to_string();
            if self.live {
                message.push_str(" (`[source.gstreamer] reconnect = true` rebuilds it)");
            }
            self.failure = Some(SourceError::new(kind, item, message).caused_by(why));
            self.done = true;
            return false;
        }
        eprintln!("warning: {item}: {why}; rebuilding the pipeline");
        let mut ongoing = Ongoing::new(self.clock.now(), why.to_string());
        let stop = Arc::clone(&self.stop);
        let stopped = move || stop.load(Ordering::Relaxed);
        let (text, threads, timeout) = (
            self.text.clone(),
            self.config.convert_threads,
            self.config.timeout,
        );
        let (result, attempts) = retry(
            &self.clock,
            &stopped,
            Backoff::new(BACKOFF_START, self.config.backoff_max),
            None,
            timeout,
            |budget| {
                let r = Running::build(&text, threads)?;
                match r.first_sample(budget, PULL_SLICE, &stopped)? {
                    Some(s) => Ok::<_, GstError>((r, s)),
                    None => Err(GstError::NoBuffer { seconds: budget }),
                }
            },
        );
        ongoing.attempts = attempts;
        let now = self.clock.now();
        match result {
            Retried::Back((running, sample)) => {
                self.outages.push(ongoing.end(0.0, now, true));
                self.outages.reconnected();
                eprintln!(
                    "warning: {item}: back after {:.1} s ({attempts} attempts)",
                    now - ongoing.since
                );
                self.lost_before = self.lost;
                self.pulled_here = 0;
                self.conn_offset = now;
                self.live = running.live;
                self.running = Some(running);
                self.pending = Some(sample);
                true
            }
            Retried::Stopped | Retried::GaveUp => {
                self.outages.push(ongoing.end(0.0, now, false));
                self.done = true;
                false
            }
        }
    }
}

impl Source for GstSource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        let stalled_since = Instant::now();
        loop {
            if self.done || self.stopped() {
                return None;
            }
            if let Some(sample) = self.pending.take() {
                self.pulled_here += 1;
                let frame = self.frame_of(&sample);
                self.count_lost();
                return Some(frame);
            }
            let pulled = match &self.running {
                Some(r) => r.pull(PULL_SLICE),
                None => return None,
            };
            match pulled {
                Pulled::Sample(s) => self.pending = Some(s),
                Pulled::Eos => {
                    // Offline: the end of the input. Live: the source stopped sending.
                    if !self.live {
                        self.running = None;
                        self.done = true;
                        return None;
                    }
                    let why = GstError::Element {
                        element: first_part(&self.text),
                        message: "end of stream".into(),
                        detail: String::new(),
                        fix: "a live source should not end".into(),
                    };
                    if !self.lost_pipeline(why) {
                        return None;
                    }
                }
                Pulled::Failed(why) => {
                    if !self.lost_pipeline(why) {
                        return None;
                    }
                }
                Pulled::Nothing => {
                    if stalled_since.elapsed().as_secs_f64() >= self.config.timeout {
                        let why = GstError::NoBuffer {
                            seconds: self.config.timeout,
                        };
                        if !self.lost_pipeline(why) {
                            return None;
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
        let (w, h) = self
            .info
            .as_ref()
            .map_or((0, 0), |i| (i.width(), i.height()));
        let fps = self
            .fps
            .map_or_else(|| "variable rate".to_string(), |f| format!("{f:.3} fps"));
        let live = if self.live { "live" } else { "offline" };
        format!(
            "gstreamer {} (RGB {w}x{h} @ {fps}, {live})",
            crate::quote::clip(&self.text)
        )
    }

    fn is_live(&self) -> bool {
        self.live
    }

    fn set_stop(&mut self, stop: Arc<AtomicBool>) {
        self.stop = stop;
    }

    fn fps(&self) -> Option<f64> {
        self.fps
    }

    fn lost(&self) -> u64 {
        self.lost
    }

    fn lost_causes(&self) -> Vec<(&'static str, u64)> {
        match self.lost {
            0 => Vec::new(),
            n => vec![(LOST_APPSINK, n)],
        }
    }

    fn end_error(&self) -> Option<SourceError> {
        let e = self.failure.as_ref()?;
        Some(SourceError::new(e.kind, e.item.clone(), e.message.clone()))
    }

    fn camera(&self) -> Option<String> {
        Some(first_part(&self.text))
    }

    fn report(&self) -> Option<serde_json::Value> {
        let (w, h) = self
            .info
            .as_ref()
            .map_or((0, 0), |i| (i.width(), i.height()));
        let mut r = serde_json::json!({
            "kind": "gstreamer",
            "pipeline": self.text,
            "caps": self.caps,
            "width": w,
            "height": h,
            "fps": self.fps,
            "live": self.live,
            "frames": self.frames,
        });
        if let Some(map) = r.as_object_mut()
            && self.live
        {
            map.insert("lost".into(), self.lost.into());
            let (n, sum, max) = self.ages;
            if n > 0 {
                let round = |ms: f64| (ms * 1000.0).round() / 1000.0;
                map.insert(
                    "pts_to_pull_ms".into(),
                    serde_json::json!({"mean": round(sum / n as f64), "max": round(max)}),
                );
            }
            self.outages.report_into(map, None);
        }
        Some(r)
    }
}

/// The cause of [`Source::lost`] for this source: buffers the appsink dropped because a newer one
/// arrived before robustream pulled it (live pipelines, newest wins).
pub(crate) const LOST_APPSINK: &str = "appsink_dropped";
