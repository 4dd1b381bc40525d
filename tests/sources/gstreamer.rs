//! GStreamer pipelines as sources, end to end on the real model: an offline `videotestsrc` run
//! gives every frame with the same records on every run; a clip the test makes (MJPEG in AVI, the
//! `ffmpeg` CLI) comes through `filesrc ! decodebin`; a live pipeline runs for `--duration` and a
//! slow plan drops frames; a malformed pipeline and one that fails mid-run end the run with one
//! line; `aravissrc` reads Aravis's fake GigE Vision camera.
//!
//! The tools (`gst-launch-1.0`, `ffmpeg`, `arv-fake-gv-camera-0.8`) come from `scripts/setup.sh`:
//! a missing one fails the test under `CI=true` and skips it, with a printed line, elsewhere.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util::*;

/// `robustream run --quiet --scenarios SCENARIOS --model … --source SPEC --out OUT` plus `extra`.
fn run_gst(spec: &str, out: &Path, scenarios: &str, extra: &[&str]) -> std::process::Output {
    run(robustream()
        .args(["run", "--quiet", "--scenarios", scenarios])
        .args(extra)
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(spec)
        .arg("--out")
        .arg(out))
}

fn frame_ids(dir: &Path) -> BTreeSet<String> {
    records(dir)
        .iter()
        .map(|r| r["frame"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_offline_pipeline_gives_every_frame_the_same_on_every_run() {
    if !tool("gst-launch-1.0", "gstreamer1.0-tools") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = "gst:videotestsrc pattern=smpte num-buffers=8 ! video/x-raw,width=320,height=240";
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for out in [&a, &b] {
        let o = run_gst(spec, out, "corruption/contrast/1", &[]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let want: BTreeSet<String> = (0..8).map(|k| format!("gst/{k:08}")).collect();
    assert_eq!(frame_ids(&a), want);
    assert_eq!(records_without_timings(&a), records_without_timings(&b));
    let s = summary(&a);
    assert_eq!(s["frames"]["read"], 8, "{s}");
    let r = &s["run"]["source_report"];
    assert_eq!(r["kind"], "gstreamer", "{s}");
    assert_eq!(r["live"], false, "{s}");
    assert_eq!(r["frames"], 8, "{s}");
    assert!(
        s["run"]["source"]
            .as_str()
            .is_some_and(|d| d.starts_with("gstreamer videotestsrc") && d.contains("offline")),
        "{s}"
    );
}

#[test]
fn a_clip_comes_through_filesrc_and_decodebin() {
    if !tool("gst-launch-1.0", "gstreamer1.0-tools") || !tool("ffmpeg", "ffmpeg") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // MJPEG in AVI: decoded by plugins-good (avidemux, jpegdec), no codec beyond them.
    let clip = dir.path().join("clip.avi");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=320x240:rate=15",
        "-t",
        "2",
        "-c:v",
        "mjpeg",
        path(&clip),
    ]);
    let out = dir.path().join("run");
    let spec = format!("gst:filesrc location={} ! decodebin", path(&clip));
    let o = run_gst(&spec, &out, "corruption/contrast/1", &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 30, "{s}");
    assert_eq!(frame_ids(&out).len(), 30);
    assert_eq!(s["run"]["source_report"]["width"], 320, "{s}");
    assert_eq!(s["run"]["source_report"]["fps"], 15.0, "{s}");
}

#[test]
fn a_live_pipeline_runs_for_the_duration_and_a_slow_plan_drops_frames() {
    if !tool("gst-launch-1.0", "gstreamer1.0-tools") {
        return;
    }
    let _timed = timed();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("live.toml");
    // 95 corruptions per frame on one worker are far slower than 30 frames a second.
    std::fs::write(
        &config,
        "scenarios = [\"imagenet-c-all\"]\n[pipeline]\nqueue = 2\nworkers = 1\n\
         [engine]\nthreads = 1\n[source]\npath = \"gst\"\n[source.gstreamer]\npipeline = \
         \"videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,\
         framerate=30/1\"\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let o = run(quiet_run(&config)
        .args(["--duration", "4s", "--out"])
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    let f = &s["frames"];
    let (read, dropped) = (f["read"].as_u64().unwrap(), f["dropped"].as_u64().unwrap());
    assert!(read > 0 && dropped > 0, "{s}");
    assert_eq!(s["run"]["end"], "duration", "{s}");
    let frames = frame_ids(&out);
    assert!(frames.iter().all(|id| id.starts_with("gst/")), "{frames:?}");
    assert_eq!(frames.len() as u64 + dropped, read, "{s}");
    let r = &s["run"]["source_report"];
    assert_eq!(r["live"], true, "{s}");
    assert_eq!(r["outage_count"], 0, "{s}");
    assert_eq!(r["frames"], read, "{s}");
}

#[test]
fn a_malformed_pipeline_is_one_line_and_a_failing_one_names_its_element() {
    if !tool("gst-launch-1.0", "gstreamer1.0-tools") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run_gst(
        "gst:videotestsrc ! video/x-raw,width=8 ! =",
        &out,
        "corruption/contrast/1",
        &[],
    );
    assert!(!o.status.success());
    let err = text(&o.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("does not parse"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("syntax error at `=` (part 3 of 3)"),
        "{err}"
    );

    // Fails after its fourth buffer: the frames before it are evaluated, then the run fails
    // naming the element.
    let out = dir.path().join("mid");
    let o = run_gst(
        "gst:videotestsrc num-buffers=50 ! video/x-raw,width=64,height=48 ! identity \
         error-after=4",
        &out,
        "corruption/contrast/1",
        &[],
    );
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.lines().any(|l| l.contains("element `identity")
            && l.contains("Failed after iterations as requested.")
            && l.contains("check `identity`'s properties")),
        "{err}"
    );
}

/// Serialises the tests of this repository that start a fake GigE Vision camera on the host's
/// loopback (the fallback below): its GVCP port 3956 on 127.0.0.1 is taken by the first fake camera
/// and a second one on the same address answers discovery but never streams. (The fake camera
/// refuses 127.0.0.2: it listens on an interface's address, and loopback has only 127.0.0.1.)
const GVCP_LOCK: &str = "robustream-gvcp-127.0.0.1.lock";

/// Starts the fake camera (serial `GST31`) on 127.0.0.1, runs `robustream` with `args` once it is
/// up, kills the camera (also when robustream fails) and returns robustream's output: as one
/// shell script, so the camera never outlives the run.
const WITH_CAMERA: &str = "ip link set lo up 2>/dev/null; \
    arv-fake-gv-camera-0.8 -i 127.0.0.1 -s GST31 >/dev/null 2>&1 & cam=$!; sleep 1; \
    \"$@\"; rc=$?; kill $cam; wait $cam 2>/dev/null; exit $rc";

/// Whether another fake camera answers discovery on this host's loopback.
fn other_fake_camera() -> bool {
    let out = Command::new("timeout")
        .args(["10", "arv-tool-0.8"])
        .output()
        .map(|o| text(&o.stdout))
        .unwrap_or_default();
    out.lines().any(|l| l.contains("(127.0.0.1)"))
}

#[test]
fn aravissrc_reads_the_fake_gige_vision_camera() {
    if !tool("gst-launch-1.0", "gstreamer1.0-tools")
        || !tool("arv-fake-gv-camera-0.8", "aravis-tools")
        || !tool("arv-tool-0.8", "aravis-tools-cli")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    // In a network namespace of its own (root, or user namespaces allowed) the camera's port is
    // private to this test; elsewhere the host's loopback is shared, under a lock, once no other
    // fake camera answers there.
    let private = Command::new("unshare")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success());
    let lock = std::fs::File::create(std::env::temp_dir().join(GVCP_LOCK)).unwrap();
    let mut cmd = Command::new("timeout");
    cmd.arg("120");
    if private {
        cmd.args(["unshare", "-n"]);
    } else {
        lock.lock().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while other_fake_camera() {
            assert!(
                Instant::now() < deadline,
                "another fake GigE Vision camera holds 127.0.0.1's GVCP port for over 60 s"
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let robustream = robustream();
    cmd.args(["sh", "-c", WITH_CAMERA, "sh"])
        .arg(robustream.get_program())
        .args([
            "run",
            "--quiet",
            "--scenarios",
            "corruption/contrast/1",
            "--duration",
            "3s",
        ])
        .arg("--model")
        .arg(model())
        .args([
            "--source",
            "gst:aravissrc camera-name=Aravis-Fake-GST31",
            "--out",
        ])
        .arg(&out);
    for (k, v) in robustream.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let o = run(&mut cmd);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    assert!(s["frames"]["read"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(s["run"]["end"], "duration", "{s}");
    let r = &s["run"]["source_report"];
    assert_eq!(r["live"], true, "{s}");
    // The fake camera's own mode (512×512 Mono8 at 25 fps), converted to RGB.
    assert_eq!(
        (r["width"].as_u64(), r["height"].as_u64()),
        (Some(512), Some(512)),
        "{s}"
    );
    assert!(r["caps"].as_str().unwrap().contains("RGB"), "{s}");
    assert_eq!(
        s["run"]["labels"]["camera"], "aravissrc camera-name=Aravis-Fake-GST31",
        "{s}"
    );
}
