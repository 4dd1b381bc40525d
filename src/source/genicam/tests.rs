//! `[source.genicam]` checks, the PFNC names, the `genicam://` spelling, the device listing's text,
//! and the shared reconnect state machine driven by a scripted GenICam-like camera (buffers lost
//! by cause, frame id gaps, an outage, the report). The real camera path is tested against the
//! Aravis simulator in tests/sources/genicam.rs.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use image::RgbImage;

use super::*;
use crate::source::camera::reconnecting::{Camera, Captured, Grab, Reconnecting};
use crate::source::pixfmt::{Cfa, Deep, MonoPacking, PixelFormat};
use crate::source::reconnect::Clock;

fn bad(toml_text: &str) -> String {
    let c: GenicamConfig = toml::from_str(toml_text).expect("parses");
    c.check().expect_err("refused").to_string()
}

#[test]
fn each_refused_value_is_named() {
    assert!(GenicamConfig::default().check().is_ok());
    for (text, want) in [
        (
            "width = 0",
            "[source.genicam] width = 0 must be in 1..=65535",
        ),
        (
            "buffers = 1",
            "[source.genicam] buffers = 1 must be in 2..=64",
        ),
        (
            "exposure_us = -5.0",
            "[source.genicam] exposure_us = -5 must be in (0, 1e8]",
        ),
        (
            "gain_db = 500.0",
            "[source.genicam] gain_db = 500 must be in -100..=100 dB",
        ),
        (
            "fps = 0.0",
            "[source.genicam] fps = 0 must be a number in (0, 100000]",
        ),
        (
            "trigger_mode = \"maybe\"",
            "[source.genicam] trigger_mode = \"maybe\" must be \"On\" or \"Off\"",
        ),
        (
            "packet_size = 100",
            "[source.genicam] packet_size = 100 must be in 576..=16384 bytes",
        ),
        (
            "timeout = 0.0",
            "[source.genicam] timeout = 0 must be in (0, 600] seconds",
        ),
        (
            "backoff_max = 0.01",
            "[source.genicam] backoff_max = 0.01 must be in 0.1..=3600 seconds",
        ),
        (
            "device = \" \"",
            "[source.genicam] device = \"\" must name a camera",
        ),
        (
            "height = 10\nlines_per_frame = 64",
            "[source.genicam] lines_per_frame = 64 must not be set together with `height`",
        ),
        (
            "[features]\n\"bad name\" = 1",
            "[source.genicam] features.bad name = 1 must be a GenICam feature name",
        ),
    ] {
        let e = bad(text);
        assert!(e.starts_with(want), "{text}: {e}");
    }
    let e = bad("pixel_format = \"RGB10p32\"");
    assert!(
        e.starts_with("[source.genicam] pixel_format = \"RGB10p32\" is not one robustream converts; use one of Mono8, Mono10"),
        "{e}"
    );
    assert!(toml::from_str::<GenicamConfig>("widht = 3").is_err());
}

#[test]
fn features_table_keeps_each_type() {
    let c: GenicamConfig = toml::from_str(
        "device = \"TEST1\"\n[features]\nReverseX = true\nBinningHorizontal = 2\nBlackLevel = 1.5\nLineSelector = \"Line1\"",
    )
    .unwrap();
    assert_eq!(c.features["ReverseX"], FeatureValue::Bool(true));
    assert_eq!(c.features["BinningHorizontal"], FeatureValue::Int(2));
    assert_eq!(c.features["BlackLevel"], FeatureValue::Float(1.5));
    assert_eq!(
        c.features["LineSelector"],
        FeatureValue::Text("Line1".into())
    );
    assert!(c.check().is_ok());
    let line: GenicamConfig = toml::from_str("lines_per_frame = 512").unwrap();
    assert_eq!(line.height_to_set(), Some(("lines_per_frame", 512)));
}

#[test]
fn pfnc_names_map_to_converters() {
    assert_eq!(pixel_format("Mono8"), Some(PixelFormat::Grey));
    assert_eq!(pixel_format("Mono12"), Some(PixelFormat::Mono12));
    assert_eq!(
        pixel_format("BayerBG8"),
        Some(PixelFormat::Bayer8(Cfa::Bggr))
    );
    assert_eq!(pixel_format("RGB8Packed"), Some(PixelFormat::Rgb24));
    // PFNC's YUV422_8 is Y U Y V; GigE Vision 1.x's YUV422Packed is U Y V Y.
    assert_eq!(pixel_format("YUV422_8"), Some(PixelFormat::Yuyv));
    assert_eq!(pixel_format("YUV422Packed"), Some(PixelFormat::Uyvy));
    assert_eq!(pixel_format("RGB10p32"), None);
    assert_eq!(
        pixel_format("BayerGB12p"),
        Some(PixelFormat::BayerDeep(
            Cfa::Gbrg,
            Deep::Packed(MonoPacking::Lsb12)
        ))
    );
    assert_eq!(
        pixel_format("BayerBG10"),
        Some(PixelFormat::BayerDeep(Cfa::Bggr, Deep::Le10))
    );
    // Every name once, and each tile of each deep Bayer layout.
    use config::PIXEL_FORMATS;
    let names: std::collections::BTreeSet<_> = PIXEL_FORMATS.iter().map(|(n, _)| n).collect();
    assert_eq!(names.len(), PIXEL_FORMATS.len());
    assert_eq!(
        PIXEL_FORMATS
            .iter()
            .filter(|(_, f)| matches!(f, PixelFormat::BayerDeep(..)))
            .count(),
        28
    );
    assert_eq!(
        pixel_format("Mono12p"),
        Some(PixelFormat::MonoPacked(
            crate::source::pixfmt::MonoPacking::Lsb12
        ))
    );
    assert_eq!(pixel_format("mono8"), None, "PFNC names are case-sensitive");
}

#[test]
fn genicam_paths_and_kinds() {
    assert!(is_genicam(&RawSourceConfig::new("genicam://")));
    assert!(is_genicam(&RawSourceConfig::new("genicam://Aravis-Fake-X")));
    assert!(!is_genicam(&RawSourceConfig::new("rtsp://cam/1")));
    let mut c = RawSourceConfig::new("lab camera");
    c.kind = Some(SourceKind::Genicam);
    assert!(is_genicam(&c));
    assert_eq!(
        device_of_path(Path::new("genicam://192.168.1.20")).as_deref(),
        Some("192.168.1.20")
    );
    assert_eq!(device_of_path(Path::new("genicam://")), None);
    // A genicam:// path is not a network stream.
    let s = RawSourceConfig::new("genicam://X").settle().unwrap();
    assert_eq!(s.kind(), SourceKind::Genicam);
    let mut v = RawSourceConfig::new("genicam://X");
    v.camera = Some(toml::from_str("fps = 5.0").unwrap());
    let e = v.settle().unwrap_err().to_string();
    assert!(
        e.contains("`[source.camera]` applies to camera sources only"),
        "{e}"
    );
    let mut g = RawSourceConfig::new("clip.mp4");
    g.genicam = Some(GenicamConfig::default());
    let e = g.settle().unwrap_err().to_string();
    assert!(
        e.contains("`[source.genicam]` applies to GenICam sources only"),
        "{e}"
    );
}

#[test]
fn devices_text_marks_what_is_not_converted() {
    assert_eq!(render_devices(&[]), "no GenICam cameras found\n");
    let d = GenicamInfo {
        id: "Aravis-Fake-S1".into(),
        vendor: "Aravis".into(),
        model: "Fake".into(),
        serial: "S1".into(),
        address: "127.0.0.1".into(),
        protocol: "GigEVision".into(),
        pixel_formats: vec!["Mono8".into(), "RGB10p32".into()],
        sensor: Some([2048, 2048]),
        error: None,
    };
    let t = render_devices(&[d]);
    assert!(t.starts_with("Aravis-Fake-S1 (Aravis Fake, serial S1, GigEVision 127.0.0.1) — --source genicam://Aravis-Fake-S1\n"), "{t}");
    assert!(t.contains("  sensor 2048×2048\n"), "{t}");
    assert!(
        t.contains("  pixel formats: Mono8, RGB10p32 (not converted)\n"),
        "{t}"
    );
}

#[test]
fn rejected_values_name_key_value_and_what_is_accepted() {
    let e = GenicamError::Rejected {
        key: "width".into(),
        value: "5000".into(),
        message: "out of range".into(),
        accepts: "1..=2048 in steps of 4".into(),
    };
    assert_eq!(
        e.to_string(),
        "[source.genicam] width = 5000 was refused by the camera (out of range); it accepts 1..=2048 in steps of 4"
    );
    assert!(GenicamError::Missing { spec: "X".into() }.is_missing());
    assert!(!e.is_missing());
}

/// A clock that only moves when told (or slept on).
#[derive(Clone, Default)]
struct FakeClock(Arc<Mutex<f64>>);

impl Clock for FakeClock {
    fn now(&self) -> f64 {
        *self.0.lock().unwrap()
    }
    fn sleep(&self, d: Duration) {
        *self.0.lock().unwrap() += d.as_secs_f64();
    }
}

enum Step {
    Frame(u32, f64),
    Lost(u32, &'static str),
    NotYet,
}

struct Scripted {
    clock: FakeClock,
    steps: VecDeque<Step>,
    opens: VecDeque<bool>,
}

fn mode() -> GenicamMode {
    GenicamMode {
        id: "Aravis-Fake-S1".into(),
        pixel_format: "BayerRG8".into(),
        width: 4,
        height: 2,
        offset: [0, 0],
        fps: Some(25.0),
        features: BTreeMap::from([("width".to_string(), serde_json::json!(4))]),
    }
}

impl Camera for Scripted {
    type Mode = GenicamMode;
    type Error = GenicamError;
    fn open(&mut self) -> Result<GenicamMode, GenicamError> {
        match self.opens.pop_front().unwrap_or(true) {
            true => Ok(mode()),
            false => Err(GenicamError::Missing { spec: "S1".into() }),
        }
    }
    fn grab(&mut self, wait: Duration) -> Grab {
        match self.steps.pop_front() {
            Some(Step::Frame(seq, t)) => {
                *self.clock.0.lock().unwrap() += 0.04;
                Grab::Frame(Captured {
                    image: RgbImage::new(4, 2),
                    sequence: seq,
                    driver_time: Some(t),
                    captured: Instant::now(),
                    decode_ms: 0.1,
                })
            }
            Some(Step::Lost(seq, cause)) => Grab::Lost(seq, cause),
            Some(Step::NotYet) | None => {
                self.clock.sleep(wait);
                Grab::NotYet
            }
        }
    }
    fn close(&mut self) {}
    fn report(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({"stream": {"n_underruns": 3}}))
    }
}

#[test]
fn lost_buffers_are_counted_by_cause_and_gaps_apart() {
    let clock = FakeClock::default();
    let mut steps = vec![
        Step::Frame(1, 10.0),
        Step::Lost(2, "missing_packets"),
        Step::Frame(3, 10.08),
        Step::Lost(4, "timeout"),
        Step::Lost(5, "missing_packets"),
        // 6 and 7 never came (an underrun): a sequence gap of 2.
        Step::Frame(8, 10.28),
    ];
    // Then silence for longer than the timeout: lost, reopened, back.
    steps.extend((0..70).map(|_| Step::NotYet));
    steps.push(Step::Frame(1, 500.0));
    let camera = Scripted {
        clock: clock.clone(),
        steps: steps.into(),
        opens: [true, false, true].into(),
    };
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let config = GenicamConfig::default();
    let mut s = Reconnecting::start(
        camera,
        clock.clone(),
        config.reconnect_settings(),
        "Aravis-Fake-S1".into(),
        Box::new(move |l| sink.lock().unwrap().push(l.to_string())),
    )
    .unwrap();
    let ids: Vec<String> = (0..4)
        .map(|_| s.next_frame().unwrap().unwrap().id)
        .collect();
    assert_eq!(
        ids,
        [
            "genicam/00000000",
            "genicam/00000001",
            "genicam/00000002",
            "genicam/00000003"
        ]
    );
    assert_eq!(s.lost(), 5);
    assert_eq!(
        s.lost_causes(),
        vec![("sequence_gap", 2), ("missing_packets", 2), ("timeout", 1)]
    );
    let r = s.report().unwrap();
    assert_eq!(r["lost"]["missing_packets"], 2);
    assert_eq!(r["stream"]["n_underruns"], 3);
    assert_eq!(r["format"]["pixel_format"], "BayerRG8");
    assert_eq!(r["outage_count"], 1, "{r}");
    assert_eq!(r["outages"][0]["recovered"], true, "{r}");
    let lines = lines.lock().unwrap();
    assert!(
        lines[0].starts_with("genicam Aravis-Fake-S1: lost at"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("genicam Aravis-Fake-S1: back after"),
        "{lines:?}"
    );
    assert!(lines[1].contains("BayerRG8 4×2@25"), "{lines:?}");
}
