//! The camera's helpers, config and device listing, and its reconnect state machine on a
//! scripted camera and a fake clock.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use image::RgbImage;

use super::mode::fps_text;
use super::*;
use crate::frame::Frame;
use crate::source::SourceErrorKind;
use crate::source::pixfmt::PixelFormat;

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

    let mut c = RawSourceConfig::new("camera:1");
    assert_eq!(device_path(&c), Some("/dev/video1".into()));
    c.kind = Some(SourceKind::Folder);
    assert_eq!(device_path(&c), None);
    let mut c = RawSourceConfig::new("/dev/mycam");
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
    open_error: fn() -> CameraError,
}

impl Camera for FakeCamera {
    type Mode = Negotiated;
    type Error = CameraError;
    fn open(&mut self) -> Result<Negotiated, CameraError> {
        self.open_times.lock().unwrap().push(self.clock.now());
        if self.opens.pop_front().unwrap_or(true) {
            self.is_open = true;
            Ok(negotiated())
        } else {
            Err((self.open_error)())
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

fn rig(config: CameraConfig, opens: &[bool], steps: Vec<Step>) -> Result<Rig, CameraError> {
    let clock = FakeClock::default();
    let open_times = Arc::new(Mutex::new(Vec::new()));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let camera = FakeCamera {
        clock: clock.clone(),
        opens: opens.iter().copied().collect(),
        steps: steps.into(),
        open_times: open_times.clone(),
        is_open: false,
        open_error: || CameraError::Missing,
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
    assert_eq!(outages[0]["duration_s"], 1.51);
    assert_eq!(outages[0]["recovered"], true);
    // Three failed reopens and the one that worked; why it was lost.
    assert_eq!(outages[0]["attempts"], 4);
    assert_eq!(outages[0]["error"], "capture failed (No such device)");
    assert_eq!(
        (&rep["outage_count"], &rep["outage_s"]),
        (&1.into(), &1.51.into())
    );
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
    assert_eq!(o["recovered"], false);
    assert_eq!(o["attempts"], 6);
    assert!(
        (o["duration_s"].as_f64().unwrap() - waited).abs() < 1e-3,
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
    r.source.camera.open_error = || CameraError::PermissionDenied {
        source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, "Permission denied"),
    };
    frame(&mut r.source);
    frame(&mut r.source);
    let lines = r.lines.lock().unwrap().clone();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(
        lines[1],
        "camera /dev/video0: reopening failed (cannot open (Permission denied); add your user \
             to the `video` group or check the device's permissions); retrying"
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
    let rep = r.source.report().unwrap();
    assert_eq!(rep["outages"][0]["recovered"], false);
    assert_eq!(rep["outages"][0]["attempts"], 0);
    assert_eq!(rep["outage_count"], 1);
}

#[test]
fn a_device_missing_at_start_is_an_open_error() {
    let e = rig(CameraConfig::default(), &[false], vec![])
        .err()
        .unwrap();
    assert!(matches!(e, CameraError::Missing), "{e:?}");
    assert_eq!(
        e.to_string(),
        "No such device; run `robustream devices` to list cameras"
    );
}

#[test]
fn camera_errors_are_kinds_with_the_lines_users_saw() {
    let io = |kind, text: &str| std::io::Error::new(kind, text.to_string());
    use std::io::ErrorKind::{Other, PermissionDenied};
    let cases: Vec<(CameraError, &str)> = vec![
        (
            CameraError::Busy {
                source: io(Other, "Device or resource busy"),
            },
            "cannot open (Device or resource busy); another program is using the camera",
        ),
        (
            CameraError::PermissionDenied {
                source: io(PermissionDenied, "Permission denied"),
            },
            "cannot open (Permission denied); add your user to the `video` group or check the \
             device's permissions",
        ),
        (
            CameraError::NotV4l2 {
                source: io(Other, "Inappropriate ioctl for device"),
            },
            "is not a V4L2 device (Inappropriate ioctl for device); run `robustream devices` to \
             list cameras",
        ),
        (
            CameraError::NotCapture {
                card: "Cam".into(),
                driver: "uvcvideo".into(),
                multiplanar: false,
            },
            "Cam (uvcvideo) is not a video capture node (UVC cameras also have metadata nodes); \
             run `robustream devices` to list cameras",
        ),
        (
            CameraError::NotCapture {
                card: "ISP".into(),
                driver: "rkisp".into(),
                multiplanar: true,
            },
            "ISP (rkisp) is a multi-planar capture device, which robustream does not read; run \
             `robustream devices` to list cameras",
        ),
        (
            CameraError::Unsupported {
                asked: vec![*b"MJPG"],
                offered: vec![(*b"YUYV", "YUYV 4:2:2".into()), (*b"H264", "H.264".into())],
            },
            "offers none of the asked formats [MJPG]; it offers YUYV (YUYV 4:2:2), H264 (H.264, \
             not converted); set `[source.camera] format` to one of those robustream converts",
        ),
        (
            CameraError::Unsupported {
                asked: vec![*b"YUYV", *b"GREY"],
                offered: vec![],
            },
            "offers none of the asked formats [YUYV, GREY]; it offers nothing; set \
             `[source.camera] format` to one of those robustream converts",
        ),
        (
            CameraError::Device {
                action: "map 4 capture buffers".into(),
                source: io(Other, "Cannot allocate memory"),
            },
            "cannot map 4 capture buffers (Cannot allocate memory)",
        ),
        (
            CameraError::Panicked {
                what: "opening the device",
                message: "bad value".into(),
            },
            "the v4l crate failed while opening the device (bad value)",
        ),
    ];
    for (e, line) in cases {
        assert_eq!(e.to_string(), line);
        // Only a missing device is what a reconnect waits out in silence.
        assert!(!matches!(e, CameraError::Missing));
        // Through a source error, the one line says the cause once.
        let s = SourceError::at(
            SourceErrorKind::Open,
            Path::new("/dev/video0"),
            e.to_string(),
        )
        .caused_by(e);
        assert_eq!(crate::error_line(&s), format!("/dev/video0: {line}"));
    }
}

#[test]
fn the_source_is_live_and_describes_its_mode() {
    let r = rig(CameraConfig::default(), &[true], vec![]).unwrap();
    assert!(r.source.is_live());
    assert_eq!(r.source.len_hint(), None);
    assert_eq!(r.source.fps(), Some(30.0));
    assert_eq!(r.source.describe(), "camera /dev/video0 (YUYV 4×2@30)");
}
