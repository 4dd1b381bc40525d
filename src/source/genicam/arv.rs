//! The Aravis side (the `aravis` crate, feature `genicam`): finding a camera, setting its
//! features with read-back, streaming into a ring of Aravis buffers, buffer status and stream
//! statistics, and the `robustream devices` listing (docs/sources.md#genicam-cameras).

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aravis::glib::prelude::Cast;
use aravis::prelude::*;
use aravis::{AcquisitionMode, BufferStatus, GvStream, GvStreamPacketResend};

use super::config::{FeatureValue, GenicamConfig, pixel_format};
use super::{GenicamError, GenicamInfo, GenicamMode};
use crate::source::camera::reconnecting::{Camera, Captured, Grab};
use crate::source::pixfmt::{self, PixelFormat};

/// The library token (Aravis allows one) and the lock around its global device list, which is
/// not thread-safe.
fn device_list() -> Vec<aravis::DeviceInfo> {
    static ARAVIS: OnceLock<Option<aravis::Aravis>> = OnceLock::new();
    static LIST: Mutex<()> = Mutex::new(());
    let Some(token) = ARAVIS.get_or_init(|| aravis::Aravis::initialize().ok()) else {
        return Vec::new();
    };
    let _guard = LIST.lock().unwrap_or_else(|p| p.into_inner());
    token.get_device_list()
}

fn lossy(s: &std::ffi::CStr) -> String {
    s.to_string_lossy().into_owned()
}

/// The device id of the camera `spec` names (id, address, physical id, or the serial number that
/// ends the id), or the first camera when `spec` is `None`.
fn resolve(spec: Option<&str>) -> Result<String, GenicamError> {
    let list = device_list();
    let Some(spec) = spec else {
        return list
            .first()
            .map(|d| lossy(&d.id))
            .ok_or_else(|| GenicamError::Missing { spec: "any".into() });
    };
    let exact = list.iter().find(|d| {
        lossy(&d.id) == spec || lossy(&d.address) == spec || lossy(&d.physical_id) == spec
    });
    let by_serial = || {
        list.iter()
            .find(|d| lossy(&d.id).ends_with(&format!("-{spec}")))
    };
    exact
        .or_else(by_serial)
        .map(|d| lossy(&d.id))
        .ok_or_else(|| GenicamError::Missing {
            spec: spec.to_string(),
        })
}

/// Every GenICam camera Aravis finds, opened to read what `robustream devices` shows.
pub(super) fn list() -> Vec<GenicamInfo> {
    device_list()
        .iter()
        .map(|d| {
            let mut info = GenicamInfo {
                id: lossy(&d.id),
                vendor: lossy(&d.vendor),
                model: lossy(&d.model),
                serial: String::new(),
                address: lossy(&d.address),
                protocol: lossy(&d.protocol),
                pixel_formats: Vec::new(),
                sensor: None,
                error: None,
            };
            match aravis::Camera::new(Some(&info.id)) {
                Ok(cam) => {
                    info.serial = cam
                        .device_serial_number()
                        .map(|s| s.to_string())
                        .unwrap_or_default();
                    info.pixel_formats = cam
                        .dup_available_pixel_formats_as_strings()
                        .map(|v| v.iter().map(|s| s.to_string()).collect())
                        .unwrap_or_default();
                    info.sensor = cam
                        .sensor_size()
                        .ok()
                        .map(|(w, h)| [w.max(0) as u32, h.max(0) as u32]);
                }
                Err(e) => info.error = Some(e.message().to_string()),
            }
            info
        })
        .collect()
}

/// One open camera and its stream.
struct Session {
    camera: aravis::Camera,
    stream: aravis::Stream,
    format: PixelFormat,
    /// The camera's last frame id and the running sequence it extends to (GigE Vision 1.x frame
    /// ids are 16 bits and skip 0 when they wrap).
    last_id: Option<u64>,
    sequence: u32,
}

/// A GenICam camera through Aravis, as the reconnect state machine drives it.
pub(super) struct ArvCamera {
    config: GenicamConfig,
    session: Option<Session>,
    /// The stream statistics of closed sessions, summed (the report adds the open one's).
    closed_totals: BTreeMap<String, u64>,
    /// The last read-back line printed (printed once, not on every reconnect).
    noted: Option<String>,
}

impl ArvCamera {
    pub(super) fn new(config: GenicamConfig) -> Self {
        Self {
            config,
            session: None,
            closed_totals: BTreeMap::new(),
            noted: None,
        }
    }

    fn try_open(&mut self) -> Result<(Session, GenicamMode), GenicamError> {
        let id = resolve(self.config.device.as_deref())?;
        let cam = aravis::Camera::new(Some(&id)).map_err(|e| GenicamError::Open {
            id: id.clone(),
            message: e.message().to_string(),
        })?;
        let mut readback = BTreeMap::new();
        let mut notes = Vec::new();
        apply_features(&cam, &self.config, &mut readback, &mut notes)?;
        let format_name = cam
            .pixel_format_as_string()
            .map(|s| s.to_string())
            .map_err(|e| stream_error("read PixelFormat", &e))?;
        let format = pixel_format(&format_name).ok_or_else(|| GenicamError::NotConverted {
            format: format_name.clone(),
            offers: cam
                .dup_available_pixel_formats_as_strings()
                .map(|v| {
                    v.iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default(),
        })?;
        let (x, y, width, height) = cam
            .region()
            .map_err(|e| stream_error("read the region", &e))?;
        let fps = cam.frame_rate().ok().filter(|f| *f > 0.0);
        if !notes.is_empty() {
            let line = format!("genicam {id}: {}", notes.join("; "));
            if self.noted.as_ref() != Some(&line) {
                eprintln!("{line}");
                self.noted = Some(line);
            }
        }
        let _ = cam.set_acquisition_mode(AcquisitionMode::Continuous);
        let stream = cam
            .create_stream()
            .map_err(|e| stream_error("create the stream", &e))?;
        if let Some(gv) = stream.downcast_ref::<GvStream>() {
            gv.set_packet_resend(if self.config.packet_resend {
                GvStreamPacketResend::Always
            } else {
                GvStreamPacketResend::Never
            });
        }
        let payload = cam
            .payload()
            .map_err(|e| stream_error("read PayloadSize", &e))? as usize;
        for _ in 0..self.config.buffers {
            stream.push_buffer(aravis::Buffer::new_allocate(payload));
        }
        cam.start_acquisition()
            .map_err(|e| stream_error("start the acquisition", &e))?;
        let mode = GenicamMode {
            id,
            pixel_format: format_name,
            width: width.max(0) as u32,
            height: height.max(0) as u32,
            offset: [x.max(0) as u32, y.max(0) as u32],
            fps,
            features: readback,
        };
        Ok((
            Session {
                camera: cam,
                stream,
                format,
                last_id: None,
                sequence: 0,
            },
            mode,
        ))
    }
}

fn stream_error(action: &str, e: &aravis::glib::Error) -> GenicamError {
    GenicamError::Stream {
        action: action.to_string(),
        message: e.message().to_string(),
    }
}

/// Sets what `[source.genicam]` asks for, in order (pixel format, size, offsets, exposure, gain,
/// rate, trigger, packet size, then the features table), reading each back into `readback`;
/// a value the camera reads back differently goes into `notes`.
fn apply_features(
    cam: &aravis::Camera,
    c: &GenicamConfig,
    readback: &mut BTreeMap<String, serde_json::Value>,
    notes: &mut Vec<String>,
) -> Result<(), GenicamError> {
    if let Some(pf) = &c.pixel_format {
        cam.set_pixel_format_from_string(pf)
            .map_err(|e| rejected(cam, "pixel_format", "PixelFormat", &format!("\"{pf}\""), &e))?;
        let got = cam
            .pixel_format_as_string()
            .map(|s| s.to_string())
            .unwrap_or_default();
        if &got != pf {
            notes.push(format!("asked pixel_format {pf}, camera gave {got}"));
        }
        readback.insert("pixel_format".into(), got.into());
    }
    let height = c.height_to_set();
    let ints = [
        ("width", "Width", c.width),
        (
            height.map_or("height", |h| h.0),
            "Height",
            height.map(|h| h.1),
        ),
        ("offset_x", "OffsetX", c.offset_x),
        ("offset_y", "OffsetY", c.offset_y),
    ];
    for (key, feature, value) in ints {
        let Some(v) = value else { continue };
        set_integer(cam, key, feature, i64::from(v), readback, notes)?;
    }
    if let Some(e) = c.exposure_us {
        let _ = cam.set_exposure_time_auto(aravis::Auto::Off);
        let float = Float {
            key: "exposure_us",
            unit: "µs",
            absent: "no exposure setting",
        };
        float.set(
            e,
            cam.set_exposure_time(e),
            || cam.exposure_time_bounds(),
            || cam.exposure_time(),
            readback,
            notes,
        )?;
    }
    if let Some(g) = c.gain_db {
        let _ = cam.set_gain_auto(aravis::Auto::Off);
        let float = Float {
            key: "gain_db",
            unit: "dB",
            absent: "no gain setting",
        };
        float.set(
            g,
            cam.set_gain(g),
            || cam.gain_bounds(),
            || cam.gain(),
            readback,
            notes,
        )?;
    }
    if let Some(fps) = c.fps {
        let float = Float {
            key: "fps",
            unit: "fps",
            absent: "no frame rate setting",
        };
        float.set(
            fps,
            cam.set_frame_rate(fps),
            || cam.frame_rate_bounds(),
            || cam.frame_rate(),
            readback,
            notes,
        )?;
    }
    if let Some(t) = &c.trigger_mode {
        if cam.is_feature_available("TriggerSelector").unwrap_or(false) {
            let _ = cam.set_string("TriggerSelector", "FrameStart");
        }
        set_feature(
            cam,
            "trigger_mode",
            "TriggerMode",
            &FeatureValue::Text(t.clone()),
            readback,
        )?;
    }
    if let Some(p) = c.packet_size {
        if !cam.is_gv_device() {
            return Err(GenicamError::Rejected {
                key: "packet_size".into(),
                value: p.to_string(),
                message: "not a GigE Vision camera".into(),
                accepts: "no packet size (USB3 Vision has none); remove the key".into(),
            });
        }
        cam.gv_set_packet_size(p as i32)
            .map_err(|e| rejected(cam, "packet_size", "GevSCPSPacketSize", &p.to_string(), &e))?;
        let got = cam.gv_get_packet_size().unwrap_or_default();
        if got != p {
            notes.push(format!("asked packet_size {p}, camera gave {got}"));
        }
        readback.insert("packet_size".into(), got.into());
    }
    for (name, value) in &c.features {
        set_feature(cam, &format!("features.{name}"), name, value, readback)?;
    }
    Ok(())
}

/// What the camera accepts for `feature`, as text: an integer range with its step, a float range,
/// enumeration entries, or that it has no such feature.
fn accepts(cam: &aravis::Camera, feature: &str) -> String {
    if !cam.is_feature_available(feature).unwrap_or(false) {
        return format!("nothing: the camera has no available `{feature}` feature");
    }
    if let Ok(entries) = cam.dup_available_enumerations_as_strings(feature)
        && !entries.is_empty()
    {
        return entries
            .iter()
            .map(|e| format!("\"{e}\""))
            .collect::<Vec<_>>()
            .join(", ");
    }
    if let Ok((lo, hi)) = cam.integer_bounds(feature) {
        let step = cam.integer_increment(feature).unwrap_or(1);
        return if step > 1 {
            format!("{lo}..={hi} in steps of {step}")
        } else {
            format!("{lo}..={hi}")
        };
    }
    if let Ok((lo, hi)) = cam.float_bounds(feature) {
        return format!("{lo}..={hi}");
    }
    "a value of another type".into()
}

fn rejected(
    cam: &aravis::Camera,
    key: &str,
    feature: &str,
    value: &str,
    e: &aravis::glib::Error,
) -> GenicamError {
    GenicamError::Rejected {
        key: key.to_string(),
        value: value.to_string(),
        message: e.message().to_string(),
        accepts: accepts(cam, feature),
    }
}

/// Sets integer `feature` (key `key`) to `v` and reads it back; a camera that silently rounds the
/// value (to its increment) is a note.
fn set_integer(
    cam: &aravis::Camera,
    key: &str,
    feature: &str,
    v: i64,
    readback: &mut BTreeMap<String, serde_json::Value>,
    notes: &mut Vec<String>,
) -> Result<(), GenicamError> {
    // Aravis does not check ranges unless asked; a value outside the bounds is refused here.
    if let Ok((lo, hi)) = cam.integer_bounds(feature)
        && !(lo..=hi).contains(&v)
    {
        return Err(GenicamError::Rejected {
            key: key.to_string(),
            value: v.to_string(),
            message: "out of range".into(),
            accepts: accepts(cam, feature),
        });
    }
    cam.set_integer(feature, v)
        .map_err(|e| rejected(cam, key, feature, &v.to_string(), &e))?;
    let got = cam
        .integer(feature)
        .map_err(|e| rejected(cam, key, feature, &v.to_string(), &e))?;
    if got != v {
        notes.push(format!("asked {key} {v}, camera gave {got}"));
    }
    readback.insert(key.to_string(), got.into());
    Ok(())
}

/// One float setting of the camera's own (exposure, gain, frame rate): the key it is written
/// as, the unit and what the camera lacks when it has no bounds for it.
struct Float {
    key: &'static str,
    unit: &'static str,
    absent: &'static str,
}

impl Float {
    /// The result of setting it to `value`: refused (one line with the camera's bounds), or read
    /// back (`get`) into `readback`, a note when the camera gave another value.
    fn set(
        &self,
        value: f64,
        set: Result<(), aravis::glib::Error>,
        bounds: impl FnOnce() -> Result<(f64, f64), aravis::glib::Error>,
        get: impl FnOnce() -> Result<f64, aravis::glib::Error>,
        readback: &mut BTreeMap<String, serde_json::Value>,
        notes: &mut Vec<String>,
    ) -> Result<(), GenicamError> {
        set.map_err(|err| GenicamError::Rejected {
            key: self.key.into(),
            value: value.to_string(),
            message: err.message().to_string(),
            accepts: bounds()
                .map(|(lo, hi)| format!("{lo}..={hi} {}", self.unit))
                .unwrap_or_else(|_| self.absent.into()),
        })?;
        float_readback(get(), self.key, value, readback, notes);
        Ok(())
    }
}

fn float_readback(
    got: Result<f64, aravis::glib::Error>,
    key: &str,
    asked: f64,
    readback: &mut BTreeMap<String, serde_json::Value>,
    notes: &mut Vec<String>,
) {
    if let Ok(got) = got {
        if (got - asked).abs() > 1e-3 * asked.abs().max(1.0) {
            notes.push(format!("asked {key} {asked}, camera gave {got}"));
        }
        readback.insert(key.to_string(), got.into());
    }
}

/// Sets one feature by the type written and reads it back.
fn set_feature(
    cam: &aravis::Camera,
    key: &str,
    feature: &str,
    value: &FeatureValue,
    readback: &mut BTreeMap<String, serde_json::Value>,
) -> Result<(), GenicamError> {
    if !cam.is_feature_available(feature).unwrap_or(false) {
        return Err(GenicamError::Rejected {
            key: key.to_string(),
            value: value.to_string(),
            message: format!("the camera has no available `{feature}`"),
            accepts: "nothing; see the camera's features (`arv-tool-0.8 features`)".into(),
        });
    }
    let refuse = |e: aravis::glib::Error| rejected(cam, key, feature, &value.to_string(), &e);
    let got: serde_json::Value = match value {
        FeatureValue::Bool(b) => {
            cam.set_boolean(feature, *b).map_err(refuse)?;
            cam.boolean(feature).map_err(refuse)?.into()
        }
        FeatureValue::Int(i) => {
            cam.set_integer(feature, *i).map_err(refuse)?;
            cam.integer(feature).map_err(refuse)?.into()
        }
        FeatureValue::Float(x) => {
            cam.set_float(feature, *x).map_err(refuse)?;
            cam.float(feature).map_err(refuse)?.into()
        }
        FeatureValue::Text(s) => {
            cam.set_string(feature, s).map_err(refuse)?;
            cam.string(feature).map_err(refuse)?.to_string().into()
        }
    };
    readback.insert(key.to_string(), got);
    Ok(())
}

/// The cause word of a buffer the stream gave up on.
fn cause(status: BufferStatus) -> &'static str {
    match status {
        BufferStatus::Timeout => "timeout",
        BufferStatus::MissingPackets => "missing_packets",
        BufferStatus::WrongPacketId => "wrong_packet_id",
        BufferStatus::SizeMismatch => "size_mismatch",
        BufferStatus::Aborted => "aborted",
        BufferStatus::PayloadNotSupported => "payload_not_supported",
        _ => "incomplete",
    }
}

/// The host-clock instant of a host real-time timestamp (ns since the Unix epoch): now minus how
/// long ago it was by the real-time clock (docs/sources.md#genicam-cameras). `None` for 0 or a
/// time more than a minute away.
fn instant_of(system_ns: u64) -> Option<Instant> {
    if system_ns == 0 {
        return None;
    }
    let now_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_nanos() as u64;
    let ago = Duration::from_nanos(now_ns.saturating_sub(system_ns));
    (ago < Duration::from_secs(60)).then(|| Instant::now().checked_sub(ago))?
}

impl Session {
    /// The running sequence number of camera frame id `id`.
    fn sequence_of(&mut self, id: u64) -> u32 {
        let step = match self.last_id {
            None => 1,
            // A 16-bit id wrapping from 65535 to 1 (0 is not a valid GigE Vision 1.x id).
            Some(last) if id < last && last > 0xF000 && id < 0x1000 => (0xFFFF - last) + id,
            Some(last) if id > last => id - last,
            // Equal or backwards: a restarted counter, not a gap.
            Some(_) => 1 << 31,
        };
        self.last_id = Some(id);
        self.sequence = self.sequence.wrapping_add(step as u32);
        self.sequence
    }

    /// The stream's own statistics: every unsigned counter it has (`n_completed_buffers`,
    /// `n_failures`, `n_underruns`, GigE Vision's `n_resent_packets`, `n_missing_packets`…).
    fn statistics(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for i in 0..self.stream.n_infos() {
            if self.stream.info_type(i) == aravis::glib::Type::U64
                && let Some(name) = self.stream.info_name(i)
            {
                out.insert(name.to_string(), self.stream.info_uint64(i));
            }
        }
        let (completed, failures, underruns) = self.stream.statistics();
        out.entry("n_completed_buffers".into()).or_insert(completed);
        out.entry("n_failures".into()).or_insert(failures);
        out.entry("n_underruns".into()).or_insert(underruns);
        out
    }
}

impl Camera for ArvCamera {
    type Mode = GenicamMode;
    type Error = GenicamError;

    fn open(&mut self) -> Result<GenicamMode, GenicamError> {
        self.close();
        let (session, mode) = self.try_open()?;
        self.session = Some(session);
        Ok(mode)
    }

    fn grab(&mut self, wait: Duration) -> Grab {
        let Some(s) = self.session.as_mut() else {
            return Grab::Failed("the camera is not open".into());
        };
        let Some(buffer) = s.stream.timeout_pop_buffer(wait.as_micros() as u64) else {
            return Grab::NotYet;
        };
        let popped = Instant::now();
        let sequence = s.sequence_of(buffer.frame_id());
        let status = buffer.status();
        let grab = if status != BufferStatus::Success {
            Grab::Lost(sequence, cause(status))
        } else {
            let (ptr, len) = buffer.data();
            let data: &[u8] = if ptr.is_null() {
                &[]
            } else {
                // SAFETY: `ptr`/`len` are the data and size of a buffer Aravis allocated
                // (`Buffer::new_allocate`), alive while `buffer` holds its reference; the stream
                // thread writes only buffers in its input queue, and this one is out of it until
                // `push_buffer` below, after the last use of `data`. Read only.
                unsafe { std::slice::from_raw_parts(ptr, len) }
            };
            let width = buffer.image_width().max(0) as u32;
            let height = buffer.image_height().max(0) as u32;
            let row_pad = buffer.image_padding().0.max(0) as usize;
            let stride = s.format.packed_row(width).unwrap_or(width as usize) + row_pad;
            match pixfmt::to_rgb(s.format, data, width, height, stride) {
                Ok(image) => {
                    let t = buffer.timestamp();
                    Grab::Frame(Captured {
                        image,
                        sequence,
                        driver_time: (t > 0).then_some(t as f64 * 1e-9),
                        captured: instant_of(buffer.system_timestamp()).unwrap_or(popped),
                        decode_ms: popped.elapsed().as_secs_f64() * 1e3,
                    })
                }
                Err(e) => Grab::Bad(sequence, e.to_string()),
            }
        };
        s.stream.push_buffer(buffer);
        grab
    }

    fn close(&mut self) {
        if let Some(s) = self.session.take() {
            for (k, v) in s.statistics() {
                *self.closed_totals.entry(k).or_default() += v;
            }
            // Dropping the stream stops its receiving thread and frees its buffers.
            let _ = s.camera.stop_acquisition();
        }
    }

    fn report(&self) -> Option<serde_json::Value> {
        let mut totals = self.closed_totals.clone();
        if let Some(s) = &self.session {
            for (k, v) in s.statistics() {
                *totals.entry(k).or_default() += v;
            }
        }
        Some(serde_json::json!({ "stream": totals }))
    }
}
