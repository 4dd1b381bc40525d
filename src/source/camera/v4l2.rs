//! The V4L2 side (the `v4l` crate, feature `camera`): opening and negotiating, mmap streaming,
//! device queries.

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

use super::config::CameraConfig;
use super::devices::{DeviceInfo, FormatInfo, SizeInfo};
use super::error::CameraError;
use super::mode::{
    Mode, Negotiated, fourcc_text, fps_to_interval, interval_to_fps, negotiation_note,
};
use super::reconnecting::{Camera, Captured, Grab};
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

impl Camera for V4lCamera {
    type Mode = Negotiated;
    type Error = CameraError;

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
