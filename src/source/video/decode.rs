//! The decode loop of [`VideoSource`]: packets in, frames out through `start`/`stop`/`every`,
//! conversion and real-time pacing; the end of a pass (loop or end); damaged data as skipped
//! items; and a lost network connection, drained and then reconnected with back-off
//! ([`crate::source::reconnect`]).

use std::time::{Duration, Instant};

use ffmpeg_next as ffmpeg;

use super::convert::convert;
use super::input::{StreamError, open_input};
use super::source::{Step, VideoSource};
use crate::frame::Frame;
use crate::source::reconnect::{self, Backoff, Clock, Ongoing, Retried};
use crate::source::{SourceError, SourceErrorKind};

/// The first wait before reconnecting a lost stream, seconds (then doubled after each failed
/// attempt).
const BACKOFF_FIRST: f64 = 0.5;
/// The longest wait between reconnect attempts, seconds.
const BACKOFF_MAX: f64 = 8.0;
/// Frames a whole pass may fall short of the container's count without a warning: a valid
/// file can list a few frames the decoder never outputs (edit lists, open-GOP leading frames).
const LISTED_SLACK: u64 = 2;

impl VideoSource {
    /// Seconds of presentation time of the decoded frame: within the file, or for a network
    /// stream since the source opened (connection offset + pts since its first frame).
    fn frame_time(&mut self) -> f64 {
        let o = &self.opened;
        let pts = self.decoded.timestamp().or_else(|| self.decoded.pts());
        let raw = match pts {
            Some(p) => p as f64 * o.time_base - o.start_s,
            None if o.fps > 0.0 => self.index as f64 / o.fps,
            None => 0.0,
        };
        if self.network {
            let first = *self.conn_first.get_or_insert(raw);
            self.conn_offset + (raw - first).max(0.0)
        } else {
            raw
        }
    }

    /// Back to `start` (or the beginning) for the next pass: a seek, or reopening the file
    /// when the format cannot seek. The decoder is flushed.
    pub(super) fn rewind(&mut self) -> Result<(), StreamError> {
        // AV_TIME_BASE (µs) of the container; the key frame at or before `start`.
        let ts = ((self.settings.start + self.opened.start_s.max(0.0)) * 1e6) as i64;
        let seek = match self.io.as_mut() {
            Some(io) => io.input.seek(ts, ..ts).is_ok(),
            None => false,
        };
        self.seeks += 1;
        if !seek {
            self.io = None;
            let (opened, io) = open_input(&self.target, &self.intr, None)?;
            (self.opened, self.io) = (opened, Some(io));
            self.reopens += 1;
            self.converter = None;
        }
        if let Some(io) = self.io.as_mut() {
            io.decoder.flush();
        }
        self.draining = false;
        Ok(())
    }

    /// The end of one pass: another (seek back) or the end.
    /// A whole pass of a file (no `start`/`stop`) that decoded more than [`LISTED_SLACK`]
    /// frames fewer than its container lists is reported once as a decode error: the file is
    /// likely truncated or damaged.
    fn end_of_pass(&mut self) -> Step {
        if let Some(why) = self.lost.take() {
            // A lost network connection, its decoder drained: reconnect (or end).
            return if self.reconnect(why) {
                Step::Again
            } else {
                Step::End
            };
        }
        self.passes_done += 1;
        let listed = u64::try_from(self.opened.frames).unwrap_or(0);
        let whole = self.settings.start == 0.0 && self.settings.stop.is_none();
        let short = (!self.network && whole && self.passes_done == 1)
            .then_some(self.frames_decoded)
            .filter(|&n| n + LISTED_SLACK < listed);
        self.end_or_rewind();
        match short {
            Some(n) => self.decode_error(
                self.index,
                format!(
                    "decoded {n} of the {listed} frames the container lists (damaged or \
                     truncated file)"
                ),
            ),
            None => Step::Again,
        }
    }

    fn end_or_rewind(&mut self) {
        let more = self.settings.passes.is_none_or(|p| self.passes_done < p);
        // A pass that decoded nothing would repeat forever: end instead.
        if !more || self.network || self.frames_decoded == self.pass_start_decoded {
            self.done = true;
            return;
        }
        self.pass_start_decoded = self.frames_decoded;
        self.loops += 1;
        // The real-time clock goes on: the next pass starts one frame after this one ended.
        if let Some(first) = self.pass_first.take() {
            let step = if self.opened.fps > 0.0 {
                1.0 / self.opened.fps
            } else {
                0.0
            };
            self.clock_offset += (self.pass_last - first).max(0.0) + step;
        }
        if let Err(e) = self.rewind() {
            eprintln!("warning: {}: cannot loop ({e}); ending", self.target);
            self.done = true;
        }
    }

    /// Sleeps until `due`, in slices, returning false when the stop flag rose meanwhile.
    fn sleep_until(&self, due: Instant) -> bool {
        loop {
            if self.stopped() {
                return false;
            }
            let now = Instant::now();
            if now >= due {
                return true;
            }
            std::thread::sleep((due - now).min(reconnect::POLL_SLICE));
        }
    }

    fn decode_error(&mut self, index: u64, what: String) -> Step {
        self.decode_errors += 1;
        Step::Error(SourceError::new(
            SourceErrorKind::Unreadable,
            format!("{}#{index}", self.name),
            format!("{what} ({})", self.target),
        ))
    }

    /// A damaged packet before frame `self.index`: counted; only the first of a run of them
    /// before the same frame comes out as a skipped item (one warning per damaged spot).
    fn packet_error(&mut self, what: String) -> Step {
        if self.last_packet_error == Some(self.index) {
            self.decode_errors += 1;
            return Step::Again;
        }
        self.last_packet_error = Some(self.index);
        let fix = match self.network {
            // Damage in transit: the stream goes on; the sender or the network is to look at.
            true => {
                "the stream goes on; damaged packets on a network stream come from the network or \
                 the sender: check the link's loss and the encoder's bitrate, or stream over TCP \
                 where the sender offers it"
            }
            false => {
                "the run goes on; the file is damaged here: `ffmpeg -v error -i FILE -f null -` \
                 lists every damaged spot, and copying or re-encoding it from its source mends it"
            }
        };
        self.decode_error(
            self.index,
            format!("{what} near this frame; its frame is lost ({fix})"),
        )
    }

    /// Takes the decoder's next frame through start/stop/every, conversion and pacing.
    fn on_decoded(&mut self) -> Step {
        let t = self.frame_time();
        if !self.network && t + 1e-9 < self.settings.start {
            return Step::Again;
        }
        if !self.network && self.settings.stop.is_some_and(|s| t + 1e-9 >= s) {
            // Past the end point: this pass is over (whatever the decoder still holds).
            return self.end_of_pass();
        }
        let index = self.index;
        self.index += 1;
        self.frames_decoded += 1;
        if self.pass_first.is_none() {
            self.pass_first = Some(t);
        }
        self.pass_last = t;
        let flags = self.decoded.decode_error_flags();
        if self.decoded.is_corrupt() || !flags.is_empty() {
            return self.decode_error(
                index,
                format!("corrupt frame skipped (decode errors {flags:?})"),
            );
        }
        if !index.is_multiple_of(self.settings.every) {
            return Step::Again;
        }
        if self.settings.realtime && !self.network {
            let media = self.clock_offset + (t - self.pass_first.unwrap_or(t));
            let start = *self.pace_start.get_or_insert_with(Instant::now);
            let before = Instant::now();
            if !self.sleep_until(start + Duration::from_secs_f64(media.max(0.0))) {
                self.done = true;
                return Step::End;
            }
            // Waiting for the frame's time is not decoding.
            self.work_start += before.elapsed();
        }
        let captured = Instant::now();
        let image = match convert(&self.decoded, &mut self.converter) {
            Ok(img) => img,
            Err(e) => return self.decode_error(index, e.to_string()),
        };
        self.frames_out += 1;
        Step::Frame(Frame {
            captured,
            decode_ms: self.work_start.elapsed().as_secs_f64() * 1e3,
            timestamp: Some(t),
            ..Frame::new(format!("{}#{index}", self.name), self.frames_out - 1, image)
        })
    }

    /// One step: a frame from the decoder, or one packet fed to it.
    pub(super) fn step(&mut self) -> Step {
        let Some(io) = self.io.as_mut() else {
            self.done = true;
            return Step::End;
        };
        match io.decoder.receive_frame(&mut self.decoded) {
            Ok(()) => return self.on_decoded(),
            Err(ffmpeg::Error::Eof) => {
                return self.end_of_pass();
            }
            Err(ffmpeg::Error::Other { errno }) if errno == ffmpeg::util::error::EAGAIN => {}
            Err(e) => return self.decode_error(self.index, format!("decoder error ({e})")),
        }
        if self.draining {
            // The decoder said it wants input while draining: it has nothing more.
            return self.end_of_pass();
        }
        let mut packet = ffmpeg::Packet::empty();
        self.intr.arm(self.network.then_some(self.settings.timeout));
        let Some(io) = self.io.as_mut() else {
            self.done = true;
            return Step::End;
        };
        let read = packet.read(&mut io.input);
        self.intr.arm(None);
        match read {
            Ok(()) => {
                if packet.stream() != self.opened.stream {
                    return Step::Again;
                }
                match io.decoder.send_packet(&packet) {
                    Ok(()) => Step::Again,
                    Err(ffmpeg::Error::Other { errno }) if errno == ffmpeg::util::error::EAGAIN => {
                        // Cannot happen with receive-before-send; treat as a lost packet.
                        self.packet_error("decoder refused a packet".into())
                    }
                    Err(e) => self.packet_error(format!("corrupt packet ({e})")),
                }
            }
            Err(_) if self.stopped() => {
                self.done = true;
                Step::End
            }
            Err(ffmpeg::Error::Eof) if !self.network || self.opened.finite => {
                if let Some(io) = self.io.as_mut() {
                    let _ = io.decoder.send_eof();
                }
                self.draining = true;
                Step::Again
            }
            Err(ffmpeg::Error::InvalidData) if !self.network => {
                self.packet_error("unreadable data in the file".into())
            }
            Err(e) if !self.network => {
                // A read error inside a file: keep what was decoded, end this pass.
                let step = self.decode_error(
                    self.index,
                    format!("read error ({e}); rest of the pass lost"),
                );
                if let Some(io) = self.io.as_mut() {
                    let _ = io.decoder.send_eof();
                }
                self.draining = true;
                step
            }
            Err(e) => {
                let why = match e {
                    ffmpeg::Error::Exit => {
                        format!("no data for {:.1} s", self.settings.timeout.as_secs_f64())
                    }
                    ffmpeg::Error::Eof => "stream ended".to_string(),
                    e => e.to_string(),
                };
                // Drain the frames the decoder still holds, then reconnect (`end_of_pass`).
                if let Some(io) = self.io.as_mut() {
                    let _ = io.decoder.send_eof();
                }
                self.draining = true;
                self.lost = Some(why);
                Step::Again
            }
        }
    }

    /// A lost connection: reconnects with back-off until it comes back (true), or the stop
    /// flag rises or `reconnect` runs out (false). The outage is recorded either way.
    fn reconnect(&mut self, error: String) -> bool {
        let lost = self.clock.now();
        let window = self.settings.reconnect;
        let plan = match window {
            None => "reconnecting".to_string(),
            Some(w) if w.is_zero() => "not reconnecting (`reconnect = false`)".to_string(),
            Some(w) => format!("reconnecting for up to {} s", w.as_secs_f64()),
        };
        eprintln!(
            "warning: {}: connection lost after frame {} ({error}); {plan}",
            self.target,
            self.index.saturating_sub(1)
        );
        // Close first: a UDP listener must free its port before it can bind it again.
        self.io = None;
        let mut outage = Ongoing::new(lost, error);
        let intr = &self.intr;
        let (result, attempts) = reconnect::retry(
            &self.clock,
            || intr.stopped(),
            Backoff::new(BACKOFF_FIRST, BACKOFF_MAX),
            window.map(|w| w.as_secs_f64()),
            self.settings.open_timeout.as_secs_f64(),
            |budget| open_input(&self.target, intr, Some(Duration::from_secs_f64(budget))),
        );
        let recovered = match result {
            Retried::Back((opened, io)) => {
                (self.opened, self.io) = (opened, Some(io));
                self.draining = false;
                self.conn_first = None;
                self.conn_offset = self.clock.now();
                self.outages.reconnected();
                true
            }
            Retried::Stopped | Retried::GaveUp => false,
        };
        outage.attempts = attempts;
        let record = outage.end(0.0, self.clock.now(), recovered);
        let duration_s = record.duration_s;
        self.outages.push(record);
        if recovered {
            eprintln!(
                "warning: {}: reconnected after {duration_s:.1} s ({attempts} attempt(s))",
                self.target
            );
        } else {
            self.done = true;
            if let Some(w) = window.filter(|w| !w.is_zero() && !self.stopped()) {
                eprintln!(
                    "warning: {}: no connection within {} s ({attempts} attempt(s)); the \
                     stream is over",
                    self.target,
                    w.as_secs_f64()
                );
            }
        }
        recovered
    }
}
