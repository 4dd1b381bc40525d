//! GenICam cameras for real, against Aravis's GigE Vision simulator (`arv-fake-gv-camera-0.8`) on
//! 127.0.0.1: discovery, features set and read back, frames evaluated, known pixel values in
//! Mono8 / RGB8 / BayerRG8, a camera killed and restarted mid-run, and packets lost with resend
//! off counted by cause.
//!
//! The simulator binds GVCP port 3956 on its address, so these tests take one process-wide lock
//! and each kills its simulator on drop. Without the simulator the tests skip with a line, and
//! fail under `CI=true`.
//!
//! The simulator's test pattern (Aravis 0.8, `src/arvfakecamera.c`, the default fill): pixel
//! (x, y) of frame id f is index (x + y + f) mod 255, scaled by 1 + GainRaw + log10(exposure µs /
//! 10000), so with gain 0 and 10 000 µs exactly that index; Mono8 sends the index, RGB8 and the
//! Bayer formats send the colour of that index in a colour map (the Bayer ones one channel per
//! site). So Mono8 is checked value by value; RGB8 and Bayer through what the pattern implies
//! exactly: the picture depends on x + y alone (RGB8: (x+1, y−1) equals (x, y); Bayer after
//! demosaicing: (x+2, y−2), which keeps the colour site).

use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::util::*;
use robustream::frame::{Frame, LabelSpace};
use robustream::source::RawSourceConfig;
use robustream::source::genicam::GenicamConfig;

const SIMULATOR: &str = "arv-fake-gv-camera-0.8";
const ADDRESS: &str = "127.0.0.1";

/// One simulator at a time on 127.0.0.1 (GVCP port 3956).
fn lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether the simulator is installed; under CI=true its absence fails the test.
fn have_simulator() -> bool {
    crate::util::tool(SIMULATOR, "aravis-tools")
}

/// A running simulator, killed on drop.
struct Sim {
    child: Child,
}

impl Sim {
    /// Starts a simulator with `serial` and `extra` arguments, and waits (at most 10 s) until it
    /// answers on the control channel.
    fn start(serial: &str, extra: &[&str]) -> Sim {
        let child = Command::new(SIMULATOR)
            .args(["-i", ADDRESS, "-s", serial])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the simulator starts");
        let sim = Sim { child };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ok = Command::new("arv-tool-0.8")
                .args(["-a", ADDRESS, "control", "DeviceID"])
                .output()
                .is_ok_and(|o| o.status.success() && text(&o.stdout).contains(serial));
            if ok {
                return sim;
            }
            assert!(
                Instant::now() < deadline,
                "the simulator did not answer within 10 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn genicam(toml_text: &str) -> GenicamConfig {
    toml::from_str(toml_text).expect("a valid [source.genicam]")
}

/// The GenICam source for `serial` with `settings` (through the library: pixels are looked at).
fn open(serial: &str, settings: &str) -> Box<dyn robustream::source::Source> {
    let mut c = RawSourceConfig::new(format!("genicam://{serial}"));
    c.genicam = Some(genicam(settings));
    match c
        .settle()
        .and_then(|c| robustream::source::open(&c, &LabelSpace::new(vec![])))
    {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

/// The next frame within 10 s (lost buffers and errors are passed over).
fn next(source: &mut dyn robustream::source::Source) -> Frame {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "no frame within 10 s");
        if let Some(Ok(f)) = source.next_frame() {
            return f;
        }
    }
}

/// A run config for the simulator `serial` with `settings` under `[source.genicam]`.
fn config(dir: &std::path::Path, serial: &str, settings: &str) -> std::path::PathBuf {
    let p = dir.join("run.toml");
    let text = format!(
        "model = \"{}\"\n[source]\npath = \"genicam://{serial}\"\n[source.genicam]\n{settings}\n",
        model().display()
    );
    std::fs::write(&p, text).unwrap();
    p
}

fn genicam_run(cfg: &std::path::Path, out: &std::path::Path, duration: &str) -> Command {
    let mut c = robustream();
    c.args(["run", "--quiet", "--config"])
        .arg(cfg)
        .args(["--duration", duration, "--out"])
        .arg(out);
    c
}

#[test]
fn devices_lists_the_simulated_camera() {
    let _l = lock();
    if !have_simulator() {
        return;
    }
    let _sim = Sim::start("RSDISC", &[]);
    let o = run(robustream().arg("devices"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(
        t.contains("Aravis-Fake-RSDISC (Aravis Fake, serial RSDISC, GigEVision 127.0.0.1) — --source genicam://Aravis-Fake-RSDISC"),
        "{t}"
    );
    assert!(t.contains("  sensor 2048×2048"), "{t}");
    assert!(t.contains("Mono8") && t.contains("BayerRG8"), "{t}");
    let j = run(robustream().args(["devices", "--json"]));
    let list: serde_json::Value = serde_json::from_slice(&j.stdout).expect("JSON");
    let cam = list
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["serial"] == "RSDISC")
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(cam["kind"], "genicam");
    assert_eq!(cam["address"], "127.0.0.1");
    assert_eq!(cam["vendor"], "Aravis");
    assert_eq!(cam["model"], "Fake");
    assert_eq!(cam["sensor"], serde_json::json!([2048, 2048]));
    assert!(
        cam["pixel_formats"]
            .as_array()
            .unwrap()
            .contains(&"Mono16".into())
    );
}

#[test]
fn features_are_set_read_back_and_frames_evaluated() {
    let _l = lock();
    if !have_simulator() {
        return;
    }
    let _sim = Sim::start("RSFEAT", &[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "RSFEAT",
        "pixel_format = \"Mono8\"\nwidth = 320\nheight = 240\noffset_x = 16\noffset_y = 8\n\
         exposure_us = 20000.0\ngain_db = 1.0\nfps = 25.0\ntrigger_mode = \"Off\"\n\
         [source.genicam.features]\nTestRegister = 7",
    );
    let out = dir.path().join("run");
    let o = run(&mut genicam_run(&cfg, &out, "2s"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    let r = &s["run"]["source_report"];
    let f = &r["format"]["features"];
    assert_eq!(f["pixel_format"], "Mono8", "{r}");
    assert_eq!(f["width"], 320, "{r}");
    assert_eq!(f["height"], 240, "{r}");
    assert_eq!(f["offset_x"], 16, "{r}");
    assert_eq!(f["offset_y"], 8, "{r}");
    assert_eq!(f["exposure_us"], 20000.0, "{r}");
    assert_eq!(f["gain_db"], 1.0, "{r}");
    assert_eq!(f["fps"], 25.0, "{r}");
    assert_eq!(f["trigger_mode"], "Off", "{r}");
    assert_eq!(f["features.TestRegister"], 7, "{r}");
    assert_eq!(r["format"]["width"], 320, "{r}");
    let recs = records(&out);
    assert!(recs.len() >= 10, "{} records", recs.len());
    assert!(recs.iter().all(|x| {
        x["frame"]
            .as_str()
            .is_some_and(|f| f.starts_with("genicam/"))
    }));

    // A value the camera refuses: one line naming key, value and what it accepts.
    for (bad, want) in [
        (
            "width = 5000",
            "[source.genicam] width = 5000 was refused by the camera",
        ),
        (
            "pixel_format = \"YUV422_8\"",
            "[source.genicam] pixel_format = \"YUV422_8\" was refused by the camera",
        ),
        (
            "[source.genicam.features]\nNoSuchFeature = 1",
            "[source.genicam] features.NoSuchFeature = 1 was refused by the camera",
        ),
    ] {
        let cfg = config(dir.path(), "RSFEAT", bad);
        let o = run(&mut genicam_run(&cfg, &dir.path().join("bad"), "1s"));
        assert!(!o.status.success(), "{bad}");
        let err = text(&o.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| !l.contains("CRITICAL")).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].contains(want), "{err}");
        assert!(lines[0].contains("it accepts"), "{err}");
    }
    // A camera that is not there is one line, at once.
    let cfg = config(dir.path(), "NOSUCHCAMERA", "");
    let o = run(&mut genicam_run(&cfg, &dir.path().join("none"), "1s"));
    assert!(!o.status.success());
    assert!(
        text(&o.stderr)
            .contains("no GenICam camera `NOSUCHCAMERA` found; run `robustream devices`"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn known_pixels_come_through_mono8_rgb8_and_bayer() {
    let _l = lock();
    if !have_simulator() {
        return;
    }
    let _sim = Sim::start("RSPIX", &[]);
    let base = "width = 64\nheight = 48\nexposure_us = 10000.0\ngain_db = 0.0\nfps = 20.0\n";
    // Mono8: (x + y + f) mod 255 for the frame's id f, on all three channels.
    let mut s = open("RSPIX", &format!("{base}pixel_format = \"Mono8\""));
    let f = next(s.as_mut());
    assert_eq!(f.image.dimensions(), (64, 48));
    let f0 = u32::from(f.image.get_pixel(0, 0).0[0]);
    for (x, y, p) in f.image.enumerate_pixels() {
        let want = ((x + y + f0) % 255) as u8;
        assert_eq!(p.0, [want; 3], "Mono8 ({x},{y})");
    }
    assert!(f.id.starts_with("genicam/"));
    drop(s);
    // RGB8: a colour map of the same index: constant along anti-diagonals, not grey.
    let mut s = open("RSPIX", &format!("{base}pixel_format = \"RGB8\""));
    let f = next(s.as_mut());
    let img = &f.image;
    for y in 1..48 {
        for x in 0..63 {
            assert_eq!(
                img.get_pixel(x + 1, y - 1),
                img.get_pixel(x, y),
                "RGB8 ({x},{y})"
            );
        }
    }
    assert!(
        img.pixels().any(|p| p.0[0] != p.0[2]),
        "RGB8 came through grey"
    );
    drop(s);
    // BayerRG8 demosaiced: constant along anti-diagonals in steps of 2 (the colour site kept),
    // inside the border, and in colour.
    for format in ["BayerRG8", "BayerBG8"] {
        let mut s = open("RSPIX", &format!("{base}pixel_format = \"{format}\""));
        let f = next(s.as_mut());
        let img = &f.image;
        for y in 3..47 {
            for x in 1..61 {
                assert_eq!(
                    img.get_pixel(x + 2, y - 2),
                    img.get_pixel(x, y),
                    "{format} ({x},{y})"
                );
            }
        }
        assert!(
            img.pixels().any(|p| p.0[0] != p.0[2]),
            "{format} came through grey"
        );
        let report = s.report().unwrap();
        assert_eq!(report["format"]["pixel_format"], format);
    }
    // A line-scan page: `lines_per_frame` sets Height, so a frame is that many lines of the
    // sensor's width (the simulator is an area camera; this checks the setting and the page).
    let mut s = open(
        "RSPIX",
        "width = 128\nlines_per_frame = 8\nfps = 20.0\npixel_format = \"Mono8\"",
    );
    let f = next(s.as_mut());
    assert_eq!(f.image.dimensions(), (128, 8));
    let f0 = u32::from(f.image.get_pixel(0, 0).0[0]);
    for (x, y, p) in f.image.enumerate_pixels() {
        assert_eq!(p.0, [((x + y + f0) % 255) as u8; 3], "page ({x},{y})");
    }
}

#[test]
fn a_killed_camera_is_an_outage_and_the_run_goes_on() {
    let _l = lock();
    if !have_simulator() {
        return;
    }
    let sim = Sim::start("RSKILL", &[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "RSKILL",
        "pixel_format = \"Mono8\"\nwidth = 128\nheight = 96\nfps = 20.0\ntimeout = 1.0\n\
         backoff_max = 0.5",
    );
    let out = dir.path().join("run");
    let mut child = genicam_run(&cfg, &out, "10s")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("robustream starts");
    std::thread::sleep(Duration::from_secs(3));
    drop(sim);
    std::thread::sleep(Duration::from_millis(2500));
    let _sim = Sim::start("RSKILL", &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not end within 30 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("genicam RSKILL: lost at"), "{err}");
    assert!(err.contains("genicam RSKILL: back after"), "{err}");
    let s = summary(&out);
    let r = &s["run"]["source_report"];
    assert!(r["outage_count"].as_u64().unwrap() >= 1, "{r}");
    assert!(r["reconnects"].as_u64().unwrap() >= 1, "{r}");
    assert_eq!(r["outages"][0]["recovered"], true, "{r}");
    // Frames before the kill (~3 s at 20 fps) and after the restart: more than before alone.
    let recs = records(&out);
    assert!(
        recs.len() > 70,
        "{} records: frames after the restart missing",
        recs.len()
    );
}

#[test]
fn lost_packets_without_resend_are_counted_by_cause() {
    let _l = lock();
    if !have_simulator() {
        return;
    }
    // 5 % of packets dropped by the simulator; resend off, so each hit frame is incomplete.
    let _sim = Sim::start("RSLOSS", &["-r", "50"]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "RSLOSS",
        "pixel_format = \"Mono8\"\nwidth = 640\nheight = 480\nfps = 20.0\npacket_resend = false",
    );
    let out = dir.path().join("run");
    let o = run(&mut genicam_run(&cfg, &out, "3s"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    let r = &s["run"]["source_report"];
    let missing = r["lost"]["missing_packets"].as_u64().unwrap_or(0)
        + r["lost"]["timeout"].as_u64().unwrap_or(0);
    assert!(missing > 0, "no incomplete buffer counted: {r}");
    assert!(
        r["stream"]["n_missing_packets"].as_u64().unwrap() > 0,
        "{r}"
    );
    assert_eq!(r["stream"]["n_resent_packets"], 0, "{r}");
}

/// The numbers of BENCHMARKS.md "GenICam (Aravis)": frames per second, conversion per frame and
/// buffer timestamp → delivery latency through the simulator at 1080p, per pixel format
/// (`cargo test --release --test tests -- sources::genicam::timing --ignored --nocapture`).
#[test]
#[ignore = "timing, prints numbers for BENCHMARKS.md"]
fn timing_1080p_through_the_simulator() {
    let _l = lock();
    if !have_simulator() {
        return;
    }
    let _sim = Sim::start("RSBENCH", &[]);
    for format in ["Mono8", "BayerRG8", "RGB8"] {
        let mut s = open(
            "RSBENCH",
            &format!("pixel_format = \"{format}\"\nwidth = 1920\nheight = 1080\nfps = 30.0"),
        );
        for _ in 0..5 {
            next(s.as_mut());
        }
        let (mut decode, mut latency) = (Vec::new(), Vec::new());
        let t0 = Instant::now();
        let n = 90;
        for _ in 0..n {
            let f = next(s.as_mut());
            decode.push(f.decode_ms);
            latency.push(f.captured.elapsed().as_secs_f64() * 1e3);
        }
        let fps = n as f64 / t0.elapsed().as_secs_f64();
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "genicam {format} 1920x1080: {fps:.1} fps delivered (camera at 30), conversion median \
             {:.2} ms, buffer system timestamp -> delivery median {:.2} ms, lost {}",
            median(&mut decode),
            median(&mut latency),
            s.lost()
        );
    }
}
