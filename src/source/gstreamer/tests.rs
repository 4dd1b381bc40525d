//! Unit tests of the GStreamer source, on real GStreamer (Debian's 1.22 with the base plugins):
//! known pixels from `videotestsrc`, exact frame counts offline, the stride of odd widths, a live
//! pipeline's drops and stop flag, errors before and during a run, settling `[source.gstreamer]`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::frame::{Frame, LabelSpace};
use crate::source::{RawSourceConfig, Source, SourceError, SourceKind};

/// `spec` settled and opened (with `table` as `[source.gstreamer]` when given).
fn try_open(spec: &str, table: Option<&str>) -> Result<Box<dyn Source>, SourceError> {
    let mut c = RawSourceConfig::new(spec);
    c.gstreamer = table.map(|t| toml::from_str(t).unwrap());
    crate::source::open(&c.settle()?, &LabelSpace::new(vec![]))
}

fn open(spec: &str) -> Box<dyn Source> {
    try_open(spec, None).unwrap_or_else(|e| panic!("{e}"))
}

fn open_err(spec: &str, table: Option<&str>) -> String {
    match try_open(spec, table) {
        Ok(s) => panic!("{spec} opened: {}", s.describe()),
        Err(e) => e.to_string(),
    }
}

/// Every item of an offline source, bounded: a source that does not end within 60 s fails.
fn drain(s: &mut dyn Source) -> (Vec<Frame>, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut frames, mut errors) = (Vec::new(), Vec::new());
    while let Some(item) = s.next_frame() {
        assert!(Instant::now() < deadline, "the source did not end");
        match item {
            Ok(f) => frames.push(f),
            Err(e) => errors.push(e.to_string()),
        }
    }
    (frames, errors)
}

/// The largest channel difference of `px` from `want`.
fn off(px: &image::Rgb<u8>, want: [u8; 3]) -> u8 {
    (0..3).map(|c| px[c].abs_diff(want[c])).max().unwrap_or(0)
}

#[test]
fn a_solid_red_pattern_gives_exactly_n_red_frames_in_order() {
    let mut s = open(
        "gst:videotestsrc pattern=red num-buffers=5 ! video/x-raw,format=RGB,width=64,height=48,\
         framerate=30/1",
    );
    assert!(!s.is_live());
    assert_eq!(s.fps(), Some(30.0));
    assert!(
        s.describe().contains("RGB 64x48 @ 30.000 fps, offline"),
        "{}",
        s.describe()
    );
    assert_eq!(
        s.camera().as_deref(),
        Some("videotestsrc pattern=red num-buffers=5")
    );
    let (frames, errors) = drain(s.as_mut());
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(frames.len(), 5);
    for (k, f) in frames.iter().enumerate() {
        assert_eq!(f.id, format!("gst/{k:08}"));
        assert_eq!(f.seq, k as u64);
        assert_eq!(f.image.dimensions(), (64, 48));
        assert!(f.image.pixels().all(|p| p.0 == [255, 0, 0]), "frame {k}");
        // PTS k / 30 s as running time.
        let t = f.timestamp.unwrap();
        assert!((t - k as f64 / 30.0).abs() < 1e-6, "frame {k}: {t}");
    }
    assert!(s.end_error().is_none());
    let r = s.report().unwrap();
    assert_eq!(r["kind"], "gstreamer");
    assert_eq!(r["frames"], 5);
    assert_eq!(r["live"], false);
    assert!(
        r["caps"].as_str().unwrap().contains("format=(string)RGB"),
        "{r}"
    );
}

#[test]
fn smpte_bars_come_through_exactly_in_rgb_and_within_6_through_i420() {
    // GStreamer 1.22's SMPTE pattern: seven 100 % bars across the top two thirds.
    let bars = [
        [255, 255, 255],
        [255, 255, 0],
        [0, 255, 255],
        [0, 255, 0],
        [255, 0, 255],
        [255, 0, 0],
        [0, 0, 255],
    ];
    // Width 70: RGB rows of 210 bytes padded to a stride of 212 (the copy must honour it).
    for (format, tolerance) in [("RGB", 0), ("I420", 6)] {
        let mut s = open(&format!(
            "gst:videotestsrc pattern=smpte num-buffers=2 ! video/x-raw,format={format},\
             width=70,height=30"
        ));
        let (frames, errors) = drain(s.as_mut());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(frames.len(), 2);
        for f in &frames {
            for y in [0, 9] {
                for (i, want) in bars.iter().enumerate() {
                    let x = i as u32 * 10 + 5;
                    let px = f.image.get_pixel(x, y);
                    assert!(
                        off(px, *want) <= tolerance,
                        "{format} bar {i} at ({x}, {y}): {px:?}, want {want:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_live_pipeline_keeps_the_newest_frame_counts_the_dropped_and_stops_on_the_flag() {
    let mut s = open(
        "gst:videotestsrc is-live=true pattern=ball ! video/x-raw,width=64,height=48,\
         framerate=50/1",
    );
    assert!(s.is_live());
    let stop = Arc::new(AtomicBool::new(false));
    s.set_stop(Arc::clone(&stop));
    let first = s.next_frame().unwrap().unwrap();
    assert_eq!(first.id, "gst/00000000");
    // Not pulled for 0.5 s: ~25 buffers come, the appsink keeps only the newest.
    std::thread::sleep(Duration::from_millis(500));
    let second = s.next_frame().unwrap().unwrap();
    assert_eq!(second.id, "gst/00000001");
    let gap = second.timestamp.unwrap() - first.timestamp.unwrap();
    assert!(
        gap >= 0.4,
        "the second frame is not the newest: {gap} s later"
    );
    let third = s.next_frame().unwrap().unwrap();
    assert!(s.lost() >= 10, "lost {}", s.lost());
    assert_eq!(s.lost_causes(), vec![("appsink_dropped", s.lost())]);
    // Captured from the PTS: before it was pulled, and not long before.
    assert!(third.captured <= Instant::now());
    stop.store(true, Ordering::Relaxed);
    assert!(s.next_frame().is_none());
    let r = s.report().unwrap();
    assert_eq!(r["live"], true);
    assert_eq!(r["outage_count"], 0);
    assert!(r["pts_to_pull_ms"]["max"].as_f64().is_some(), "{r}");
}

#[test]
fn malformed_pipelines_say_where_and_what_to_do() {
    let e = open_err("gst:videotestsrc num-buffers=3 ! ! videoscale", None);
    assert!(
        e.starts_with(
            "gst:videotestsrc num-buffers=3 ! ! videoscale: the pipeline does not parse: "
        ) && e.contains("at (nothing) (part 2 of 3)"),
        "{e}"
    );
    let e = open_err("gst:videotestsrc ! video/x-raw,width=8 ! = ", None);
    assert!(e.contains("syntax error at `=` (part 3 of 3)"), "{e}");
    let e = open_err("gst:nvarguscamerasrc sensor-id=0 ! nvvidconv", None);
    assert!(e.contains("no element \"nvarguscamerasrc\""), "{e}");
    assert!(e.contains("nvidia-l4t-gstreamer"), "{e}");
    let e = open_err("gst:videotestsrc ! frobnicate", None);
    assert!(
        e.contains("install the GStreamer plugin that provides `frobnicate`"),
        "{e}"
    );
    let e = open_err("gst:videotestsrc ! videoconvert ! autovideosink", None);
    assert!(
        e.ends_with("the pipeline ends in `autovideosink`, a sink, but robustream appends its own converter and appsink; remove `! autovideosink…` from the end"),
        "{e}"
    );
    // Audio cannot become RGB.
    let e = open_err("gst:audiotestsrc num-buffers=3", None);
    assert!(e.contains("does not parse: could not link"), "{e}");
    assert!(e.contains("must end in raw video"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn an_offline_pipeline_that_fails_mid_run_ends_with_the_element_named() {
    let mut s = open(
        "gst:videotestsrc num-buffers=100 ! video/x-raw,width=32,height=24 ! identity \
         error-after=4",
    );
    let (frames, errors) = drain(s.as_mut());
    assert!(errors.is_empty(), "{errors:?}");
    assert!(
        (1..4).contains(&frames.len()),
        "{} frames before the error",
        frames.len()
    );
    let e = s.end_error().expect("an end error").to_string();
    assert!(e.contains("element `identity"), "{e}");
    assert!(
        e.contains("failed: Failed after iterations as requested. (/GstPipeline:pipeline"),
        "{e}"
    );
    assert!(e.contains("check `identity`'s properties"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn a_live_pipeline_that_fails_is_rebuilt_and_the_outage_reported() {
    let spec = "gst:videotestsrc is-live=true ! video/x-raw,width=32,height=24,framerate=30/1 ! \
                identity error-after=5";
    let mut s = try_open(spec, Some("backoff_max = 0.2")).unwrap_or_else(|e| panic!("{e}"));
    let stop = Arc::new(AtomicBool::new(false));
    s.set_stop(Arc::clone(&stop));
    // Each pipeline gives 4 frames, then fails; 12 frames need at least two rebuilds.
    let mut ids = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while ids.len() < 12 {
        assert!(Instant::now() < deadline, "only {} frames", ids.len());
        match s.next_frame() {
            Some(Ok(f)) => ids.push(f.id),
            Some(Err(e)) => panic!("{e}"),
            None => panic!("ended: {:?}", s.end_error().map(|e| e.to_string())),
        }
    }
    let want: Vec<String> = (0..12).map(|k| format!("gst/{k:08}")).collect();
    assert_eq!(ids, want);
    stop.store(true, Ordering::Relaxed);
    let r = s.report().unwrap();
    assert!(r["outage_count"].as_u64().unwrap() >= 2, "{r}");
    assert_eq!(r["outages"][0]["recovered"], true, "{r}");
    assert!(
        r["outages"][0]["error"]
            .as_str()
            .unwrap()
            .contains("failed: Failed after iterations as requested."),
        "{r}"
    );
    // Without reconnect the first failure ends the stream, as lost.
    let mut s = try_open(spec, Some("reconnect = false")).unwrap_or_else(|e| panic!("{e}"));
    let (frames, errors) = drain(s.as_mut());
    assert!(
        errors.is_empty() && !frames.is_empty() && frames.len() < 5,
        "{errors:?}"
    );
    let e = s.end_error().unwrap();
    assert_eq!(e.kind, crate::source::SourceErrorKind::Lost);
    assert!(
        e.to_string()
            .contains("`[source.gstreamer] reconnect = true` rebuilds it"),
        "{e}"
    );
}

#[test]
fn settling_a_gstreamer_source() {
    let settled = |spec: &str, table: Option<&str>| {
        let mut c = RawSourceConfig::new(spec);
        c.gstreamer = table.map(|t| toml::from_str(t).unwrap());
        c.settle()
    };
    let c = settled("gst:videotestsrc", None).unwrap();
    assert_eq!(c.kind(), SourceKind::Gstreamer);
    assert!(
        matches!(&c.input, crate::source::Input::Gstreamer { pipeline, .. } if pipeline == "videotestsrc")
    );
    let c = settled("camera-1", Some("pipeline = \"videotestsrc ! videoflip\"")).unwrap();
    assert!(
        matches!(&c.input, crate::source::Input::Gstreamer { pipeline, .. } if pipeline == "videotestsrc ! videoflip")
    );
    let e = settled("gst:videotestsrc", Some("pipeline = \"videotestsrc\"")).unwrap_err();
    assert!(e.to_string().contains("the pipeline is given twice"), "{e}");
    let e = settled("gst:videotestsrc", Some("timeout = 0")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "gst:videotestsrc: [source.gstreamer] timeout = 0 must be in 0.1..=600 seconds"
    );
    let e = settled("gst:", None).unwrap_err();
    assert!(e.to_string().contains("no GStreamer pipeline given"), "{e}");
    let e = settled("clip.mp4", Some("reconnect = false")).unwrap_err();
    assert!(
        e.to_string()
            .contains("`[source.gstreamer]` applies to gstreamer sources only"),
        "{e}"
    );
    assert!(toml::from_str::<super::GstConfig>("pipelin = \"x\"").is_err());
    // `--source gst:…` over a config's table: the command line's pipeline wins.
    let mut c = RawSourceConfig::new("gst:videotestsrc ! videoflip");
    c.gstreamer = Some(toml::from_str("pipeline = \"v4l2src\"\ntimeout = 2").unwrap());
    crate::source::config::drop_foreign_tables(&mut c);
    let c = c.settle().unwrap();
    assert!(
        matches!(&c.input, crate::source::Input::Gstreamer { pipeline, settings } if pipeline == "videotestsrc ! videoflip" && settings.timeout == 2.0)
    );
}

/// Median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU seconds this process has used (user + system), from `/proc/self/stat` (clock ticks of
/// 1/100 s: read over hundreds of frames).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let ticks = |i: usize| fields[i].parse::<f64>().unwrap();
    (ticks(11) + ticks(12)) / 100.0
}

/// Frames of an offline source: wall and CPU ms per frame over all, and the median `decode_ms`.
fn per_frame(s: &mut dyn Source, n: usize) -> (f64, f64, f64) {
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let mut copy = Vec::new();
    while let Some(f) = s.next_frame() {
        let f = f.unwrap();
        assert_eq!(f.image.dimensions(), (1920, 1080));
        copy.push(f.decode_ms);
    }
    assert_eq!(copy.len(), n);
    let wall = t.elapsed().as_secs_f64() * 1e3 / n as f64;
    let cpu = (cpu_seconds() - cpu) * 1e3 / n as f64;
    (wall, cpu, median(&mut copy))
}

/// The figures of BENCHMARKS.md "Camera paths at 1080p (issue 31)", GStreamer (not a check: `cargo
/// test --release --locked --lib camera_paths_1080p -- --ignored --nocapture`; `taskset -c 0` for
/// one core): 1080p frames to RGB through this source (videoconvert from I420 + the copy out),
/// through the FFmpeg video source on the same frames (a y4m clip: libswscale from I420, no
/// codec), the V4L2 path's YUYV → RGB kernel, and a live pipeline's PTS → pull latency.
#[test]
#[ignore]
fn camera_paths_1080p_speed() {
    const N: usize = 120;
    let dir = tempfile::tempdir().unwrap();
    // The same 1080p I420 frames as a y4m clip (for FFmpeg) and as raw frames (for GStreamer's
    // rawvideoparse; its y4m reader is in plugins-bad, not installed).
    let (y4m, raw) = (dir.path().join("smpte.y4m"), dir.path().join("smpte.yuv"));
    for (file, encoder) in [(&y4m, Some("y4menc")), (&raw, None)] {
        let mut cmd = std::process::Command::new("gst-launch-1.0");
        cmd.args([
            "-q",
            "videotestsrc",
            "pattern=smpte",
            &format!("num-buffers={N}"),
            "!",
        ])
        .args([
            "video/x-raw,format=I420,width=1920,height=1080,framerate=30/1",
            "!",
        ]);
        if let Some(e) = encoder {
            cmd.args([e, "!"]);
        }
        let made = cmd
            .arg("filesink")
            .arg(format!("location={}", file.display()))
            .status()
            .unwrap();
        assert!(made.success());
    }
    let gst_on = |chain: &str| {
        let mut walls = Vec::new();
        let mut cpus = Vec::new();
        let mut copies = Vec::new();
        for _ in 0..5 {
            let mut s = open(chain);
            let (w, c, copy) = per_frame(s.as_mut(), N);
            walls.push(w);
            cpus.push(c);
            copies.push(copy);
        }
        (median(&mut walls), median(&mut cpus), median(&mut copies))
    };
    let (w, c, copy) = gst_on(&format!(
        "gst:videotestsrc pattern=smpte num-buffers={N} ! video/x-raw,format=I420,width=1920,\
         height=1080"
    ));
    println!(
        "gstreamer videotestsrc I420 1080p → RGB: wall {w:.2} ms/frame, CPU {c:.2} ms/frame, copy \
         out median {copy:.3} ms"
    );
    let (w, c, copy) = gst_on(&format!(
        "gst:filesrc location={} blocksize=3110400 ! rawvideoparse width=1920 height=1080 \
         format=i420 framerate=30/1",
        raw.display()
    ));
    println!(
        "gstreamer filesrc raw I420 1080p → RGB: wall {w:.2} ms/frame, CPU {c:.2} ms/frame, copy \
         out median {copy:.3} ms"
    );
    #[cfg(feature = "video")]
    {
        let (mut walls, mut cpus) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let mut s = crate::source::open(
                &RawSourceConfig::new(&y4m).settle().unwrap(),
                &LabelSpace::new(vec![]),
            )
            .unwrap();
            let (w, c, _) = per_frame(s.as_mut(), N);
            walls.push(w);
            cpus.push(c);
        }
        println!(
            "ffmpeg video source y4m I420 1080p → RGB: wall {:.2} ms/frame, CPU {:.2} ms/frame",
            median(&mut walls),
            median(&mut cpus)
        );
    }
    // The V4L2 path's conversion of one 1080p YUYV buffer.
    let yuyv: Vec<u8> = (0..1920 * 1080 * 2).map(|i| (i * 7 % 251) as u8).collect();
    let mut times = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let img = crate::source::pixfmt::to_rgb(
            crate::source::pixfmt::PixelFormat::Yuyv,
            &yuyv,
            1920,
            1080,
            0,
        )
        .unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(img.dimensions(), (1920, 1080));
    }
    println!(
        "v4l2 YUYV 1080p → RGB (pixfmt::to_rgb): median {:.2} ms",
        median(&mut times)
    );
    // Live 1080p30: PTS → pull, and PTS → frame handed out (pull + copy).
    let mut s = open(
        "gst:videotestsrc is-live=true pattern=smpte ! video/x-raw,format=I420,width=1920,\
         height=1080,framerate=30/1",
    );
    let (mut to_pull, mut to_out) = (Vec::new(), Vec::new());
    for _ in 0..150 {
        let f = s.next_frame().unwrap().unwrap();
        let out = f.captured.elapsed().as_secs_f64() * 1e3;
        to_out.push(out);
        to_pull.push(out - f.decode_ms);
    }
    println!(
        "live 1080p30: PTS → pull median {:.2} ms, PTS → frame out median {:.2} ms, lost {}",
        median(&mut to_pull),
        median(&mut to_out),
        s.lost()
    );
}
