//! Video files as sources: a short clip made by the `ffmpeg` CLI, decoded by the `video`
//! source. A real-time run on the real model with a deliberately slow plan drops frames, serves
//! Prometheus metrics while it goes on and writes a summary that adds up; loop, start/stop and
//! every give the frames and ids they promise; damaged files give warnings, not panics; bad paths
//! and URL schemes give one clear line; an offline run is deterministic.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;
use robustream::frame::{Frame, LabelSpace};
use robustream::source::video::{Loop, TimeSpec, VideoConfig};
use robustream::source::{RawSourceConfig, Source};

/// Frames per second and seconds of the test clips.
const FPS: u32 = 15;
const SECONDS: u32 = 4;

/// A 320×240 test pattern clip of SECONDS s at FPS, written to `dir/name` (H.264 for `.mp4`
/// unless `codec` says otherwise); `extra` are further output options.
fn clip(dir: &Path, name: &str, codec: &str, extra: &[&str]) -> PathBuf {
    let p = dir.join(name);
    let src = format!("testsrc=size=320x240:rate={FPS}");
    let t = SECONDS.to_string();
    let mut args = vec!["-f", "lavfi", "-i", &src, "-t", &t, "-c:v", codec];
    if codec == "libx264" {
        args.extend(["-pix_fmt", "yuv420p"]);
    }
    args.extend(extra);
    let out = p.to_str().unwrap();
    args.push(out);
    ffmpeg(&args);
    p
}

fn open(path: &Path, video: Option<VideoConfig>) -> Box<dyn Source> {
    let mut c = RawSourceConfig::new(path);
    c.video = video;
    let settled = c
        .settle()
        .and_then(|c| robustream::source::open(&c, &LabelSpace::new(vec![])));
    match settled {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

/// Every item of a source: frames, and errors as their display strings.
fn drain(source: &mut dyn Source) -> (Vec<Frame>, Vec<String>) {
    let (mut frames, mut errors) = (Vec::new(), Vec::new());
    while let Some(item) = source.next_frame() {
        match item {
            Ok(f) => frames.push(f),
            Err(e) => errors.push(e.to_string()),
        }
    }
    (frames, errors)
}

fn ids(frames: &[Frame]) -> Vec<String> {
    frames.iter().map(|f| f.id.clone()).collect()
}

#[test]
fn loop_start_stop_and_every_give_the_promised_frames() {
    let dir = tempfile::tempdir().unwrap();
    let mp4 = clip(dir.path(), "clip.mp4", "libx264", &[]);
    let n = (FPS * SECONDS) as usize;

    // Plain: every frame once, ids by index, timestamps k / fps.
    let mut s = open(&mp4, None);
    assert!(!s.is_live());
    assert!(s.describe().contains("h264 320x240"), "{}", s.describe());
    let (plain, errors) = drain(s.as_mut());
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(plain.len(), n);
    for (k, f) in plain.iter().enumerate() {
        assert_eq!(f.id, format!("clip.mp4#{k}"));
        assert_eq!(f.image.dimensions(), (320, 240));
        let t = f.timestamp.unwrap();
        assert!((t - k as f64 / f64::from(FPS)).abs() < 1e-6, "#{k}: {t}");
    }
    // The test pattern moves: consecutive frames differ.
    assert_ne!(plain[0].image, plain[1].image);
    let report = s.report().unwrap();
    assert_eq!(report["frames_decoded"], n as u64, "{report}");
    assert_eq!(
        (
            report["codec"].as_str(),
            report["width"].as_u64(),
            report["loops"].as_u64()
        ),
        (Some("h264"), Some(320), Some(0))
    );

    // Two passes: ids go on, the second pass decodes the same pixels after its seek.
    let mut s = open(
        &mp4,
        Some(VideoConfig {
            looping: Some(Loop::Count(2)),
            ..VideoConfig::default()
        }),
    );
    let (looped, errors) = drain(s.as_mut());
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(looped.len(), 2 * n);
    let unique: BTreeSet<String> = ids(&looped).into_iter().collect();
    assert_eq!(unique.len(), 2 * n, "ids repeat");
    assert_eq!(looped[n].id, format!("clip.mp4#{n}"));
    for k in [0, 1, n / 2, n - 1] {
        assert!(
            looped[n + k].image == plain[k].image,
            "pass 2 frame {k} differs"
        );
        assert_eq!(looped[n + k].timestamp, plain[k].timestamp);
    }
    let report = s.report().unwrap();
    assert_eq!(
        (report["loops"].as_u64(), report["seeks"].as_u64()),
        (Some(1), Some(1))
    );

    // start 1 s, stop "2s": frames 15..30 of the plain decode, indexed from the start point.
    let mut s = open(
        &mp4,
        Some(VideoConfig {
            start: Some(TimeSpec::Seconds(1.0)),
            stop: Some(TimeSpec::Text("2s".into())),
            ..VideoConfig::default()
        }),
    );
    let (cut, errors) = drain(s.as_mut());
    assert!(errors.is_empty(), "{errors:?}");
    let f = FPS as usize;
    assert_eq!(cut.len(), f);
    for (k, frame) in cut.iter().enumerate() {
        assert_eq!(frame.id, format!("clip.mp4#{k}"));
        assert!(frame.image == plain[f + k].image, "start frame {k} differs");
        assert_eq!(frame.timestamp, plain[f + k].timestamp);
    }

    // every 3: indices 0, 3, 6… with the decoded frames' pixels.
    let mut s = open(
        &mp4,
        Some(VideoConfig {
            every: Some(3),
            ..VideoConfig::default()
        }),
    );
    let (every, _) = drain(s.as_mut());
    assert_eq!(every.len(), n.div_ceil(3));
    for (j, frame) in every.iter().enumerate() {
        assert_eq!(frame.id, format!("clip.mp4#{}", 3 * j));
        assert!(frame.image == plain[3 * j].image);
    }
}

#[test]
fn damaged_files_give_the_frames_before_the_damage_and_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    // moov first, so half a file still opens.
    let whole = clip(
        dir.path(),
        "whole.mp4",
        "libx264",
        &["-movflags", "+faststart"],
    );
    let bytes = std::fs::read(&whole).unwrap();
    let cut = dir.path().join("cut.mp4");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let (frames, errors) = drain(open(&cut, None).as_mut());
    let n = (FPS * SECONDS) as usize;
    assert!(
        !frames.is_empty() && frames.len() < n,
        "{} frames",
        frames.len()
    );
    for (k, f) in frames.iter().enumerate() {
        assert_eq!(f.id, format!("cut.mp4#{k}"));
    }
    assert!(!errors.is_empty(), "no warning for a truncated file");
    for e in &errors {
        assert!(e.starts_with("cut.mp4#"), "{e}");
        assert!(e.contains(cut.to_str().unwrap()), "{e}");
    }

    // Garbage over a stretch in the middle: warnings, and frames again after the damage.
    let mut garbled = bytes.clone();
    let mid = garbled.len() / 2;
    let mut x = 0x9e37_79b9u32;
    for b in &mut garbled[mid..mid + 2000] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    let bad = dir.path().join("garbled.mp4");
    std::fs::write(&bad, &garbled).unwrap();
    let mut s = open(&bad, None);
    let (frames, errors) = drain(s.as_mut());
    assert!(!errors.is_empty(), "damage not reported");
    let last: usize = frames
        .last()
        .unwrap()
        .id
        .rsplit('#')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        frames.len() > n / 2 && last > n / 2,
        "{} frames up to #{last}",
        frames.len()
    );
    assert!(s.report().unwrap()["decode_errors"].as_u64().unwrap() >= errors.len() as u64);
    // A damaged packet's line says what to do about the file.
    let packet: Vec<&String> = errors
        .iter()
        .filter(|e| e.contains("near this frame"))
        .collect();
    assert!(!packet.is_empty(), "{errors:?}");
    for e in packet {
        assert!(
            e.contains("its frame is lost (the run goes on; the file is damaged here: `ffmpeg -v error -i FILE -f null -`"),
            "{e}"
        );
    }

    // Through the binary: exit 0, a warning naming the file and frame, the count in the summary.
    let out = dir.path().join("run");
    let o = run(robustream()
        .args(["run", "--quiet", "--scenarios", "clean", "--model"])
        .arg(model())
        .arg("--source")
        .arg(&bad)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("warning: skipped garbled.mp4#"),
        "{}",
        text(&o.stderr)
    );
    let sm = summary(&out);
    assert_eq!(sm["frames"]["read"], frames.len() as u64, "{sm}");
    assert_eq!(sm["frames"]["skipped"], errors.len() as u64, "{sm}");
}

#[test]
fn missing_files_bad_schemes_and_misplaced_settings_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let fail = |source: &str, extra: &[&str]| {
        let o = robustream()
            .args(["run", "--quiet", "--model"])
            .arg(model())
            .args(["--source", source, "--out"])
            .arg(dir.path().join("run"))
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{source}: {}", text(&o.stderr));
        let e = text(&o.stderr);
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        e
    };
    let missing = dir.path().join("nope.mp4");
    let e = fail(missing.to_str().unwrap(), &[]);
    assert!(e.contains("nope.mp4: no such file"), "{e}");
    let e = fail("ftp://example.invalid/clip.mp4", &[]);
    assert!(
        e.contains("unsupported URL scheme `ftp://`") && e.contains("rtsp://"),
        "{e}"
    );
    // Nothing listens on port 9 of loopback: refused at once.
    let e = fail("rtsp://127.0.0.1:9/live", &[]);
    assert!(
        e.contains("rtsp://127.0.0.1:9/live: connection refused"),
        "{e}"
    );
    // A file that is no video.
    let junk = dir.path().join("junk.mkv");
    std::fs::write(&junk, b"not a video at all").unwrap();
    let e = fail(junk.to_str().unwrap(), &[]);
    assert!(
        e.contains("junk.mkv: is not a video FFmpeg can read"),
        "{e}"
    );
    // --realtime on a folder.
    let e = fail(dir.path().to_str().unwrap(), &["--realtime"]);
    assert!(e.contains("--realtime"), "{e}");
    // [source.video] on an image source.
    let img = dir.path().join("a.png");
    image::RgbImage::new(8, 8).save(&img).unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        "[source]\npath = \"a.png\"\n[source.video]\nloop = true\n",
    )
    .unwrap();
    let o = robustream()
        .args(["run", "--quiet", "--model"])
        .arg(model())
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(dir.path().join("run2"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("`[source.video]` applies to video sources only"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn each_reason_a_video_cannot_open_is_named_with_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fail = |source: &Path, extra: &[&str]| {
        let o = robustream()
            .args(["run", "--quiet", "--model"])
            .arg(model())
            .arg("--source")
            .arg(source)
            .arg("--out")
            .arg(d.join("run"))
            .args(extra)
            .output()
            .unwrap();
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{source:?}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
        assert!(
            !e.contains("Invalid data found"),
            "FFmpeg's words alone: {e}"
        );
        e
    };
    // A missing file.
    let e = fail(&d.join("gone.mp4"), &[]);
    assert!(
        e.contains("gone.mp4: no such file; check `[source] path` or --source"),
        "{e}"
    );
    // A text file named .mp4: no container format matches.
    let text_file = d.join("notes.mp4");
    std::fs::write(&text_file, "these are my notes, not a video\n".repeat(20)).unwrap();
    let e = fail(&text_file, &[]);
    assert!(
        e.contains("notes.mp4: is not a video FFmpeg can read") && e.contains("ffprobe"),
        "{e}"
    );
    // An empty file.
    let empty = d.join("empty.mkv");
    std::fs::write(&empty, b"").unwrap();
    assert!(fail(&empty, &[]).contains("empty.mkv: is empty (0 bytes)"));
    // Audio only: no video stream, and what it holds instead.
    let audio = d.join("voice.mp4");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:duration=1",
        "-c:a",
        "aac",
        audio.to_str().unwrap(),
    ]);
    let e = fail(&audio, &[]);
    assert!(
        e.contains("voice.mp4: has no video stream (it holds audio (aac))"),
        "{e}"
    );
    // A codec FFmpeg does not know: an AVI whose FourCC was changed to `QQQQ`.
    let mut bytes = std::fs::read(clip(d, "mpeg4.avi", "mpeg4", &[])).unwrap();
    let mut tagged = 0;
    for i in 0..bytes.len().saturating_sub(3) {
        if &bytes[i..i + 4] == b"FMP4" {
            bytes[i..i + 4].copy_from_slice(b"QQQQ");
            tagged += 1;
        }
    }
    assert!(tagged > 0, "the clip's FourCC");
    let unknown = d.join("unknown.avi");
    std::fs::write(&unknown, bytes).unwrap();
    let e = fail(&unknown, &[]);
    assert!(
        e.contains("unknown.avi: its video codec is unknown to FFmpeg (tag `QQQQ`)")
            && e.contains("H.264"),
        "{e}"
    );
    // A folder given as a video.
    let e = fail(d, &["--source-kind", "video"]);
    assert!(e.contains("is a folder, not a video file"), "{e}");
    // A file this user may not read (root reads everything: then only the message is checked,
    // by the library's tests).
    let locked = clip(d, "locked.mp4", "libx264", &[]);
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    if std::fs::File::open(&locked).is_err() {
        let e = fail(&locked, &[]);
        assert!(
            e.contains("locked.mp4: cannot be read: permission denied") && e.contains("chmod"),
            "{e}"
        );
    } else {
        eprintln!("running as root: the permission case is checked by the library's tests only");
    }
    // Unreachable URLs: refused at once, and an HTTP server without the stream.
    let e = fail(Path::new("http://127.0.0.1:9/live.ts"), &[]);
    assert!(
        e.contains("http://127.0.0.1:9/live.ts: connection refused") && e.contains("sender"),
        "{e}"
    );
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/missing.ts", server.local_addr().unwrap());
    let answer = std::thread::spawn(move || {
        use std::io::Write;
        let (mut s, _) = server.accept().unwrap();
        let mut head = [0u8; 4096];
        let _ = s.read(&mut head);
        let _ = s
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    let e = fail(Path::new(&url), &[]);
    answer.join().unwrap();
    assert!(e.contains("HTTP 404") && e.contains("URL's path"), "{e}");
}

#[test]
fn an_offline_video_run_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let ts = clip(dir.path(), "clip.ts", "mpeg4", &["-q:v", "5"]);
    let go = |name: &str, workers: &str| {
        let out = dir.path().join(name);
        let o = run(robustream()
            .args(["run", "--quiet", "--model"])
            .arg(model())
            .arg("--source")
            .arg(&ts)
            .args([
                "--scenarios",
                "corruption/gaussian_noise/3,corruption/glass_blur/1",
                "--workers",
                workers,
                "--out",
            ])
            .arg(&out));
        assert!(o.status.success(), "{}", text(&o.stderr));
        out
    };
    let (a, b) = (go("a", "1"), go("b", "2"));
    let (ra, rb) = (records_without_timings(&a), records_without_timings(&b));
    assert_eq!(ra.len(), (FPS * SECONDS) as usize * 3);
    assert!(ra == rb, "records differ between two runs of the same file");
    let s = summary(&a);
    assert_eq!(s["frames"]["read"], FPS * SECONDS, "{s}");
    assert_eq!(s["run"]["source_report"]["codec"], "mpeg4", "{s}");
}

#[test]
fn a_realtime_video_with_a_slow_plan_drops_frames_and_serves_metrics() {
    let _timed = timed();
    let dir = tempfile::tempdir().unwrap();
    clip(dir.path(), "clip.mp4", "libx264", &[]);
    // Looped endlessly, ended by --duration: at 15 fps the source must read about 15 frames a
    // second whatever the pipeline does (95 corruptions per frame on one worker are far slower).
    let config = dir.path().join("live.toml");
    std::fs::write(
        &config,
        "scenarios = [\"imagenet-c-all\"]\n[pipeline]\nqueue = 2\nworkers = 1\n\
         [engine]\nthreads = 1\n[source]\npath = \"clip.mp4\"\n[source.video]\nloop = true\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    // 8 s, not 4: the endpoint must still be up once 10 frames were read, and under a loaded
    // machine 4 s of run ended first.
    let secs = 8.0;
    let (mut child, addr, mut stderr) = spawn_with_prometheus(
        robustream()
            .args([
                "run",
                "--quiet",
                "--realtime",
                "--duration",
                "8s",
                "--config",
            ])
            .arg(&config)
            .arg("--model")
            .arg(model())
            .args(["--prometheus", "127.0.0.1:0", "--out"])
            .arg(&out),
    );
    // Scrape while the run goes on until frames have been read and dropped.
    let body = scrape_until(&addr, Duration::from_secs(60), |body| {
        let read = sample(body, "robustream_frames_read_total").unwrap_or(0.0);
        let dropped = sample(body, "robustream_frames_dropped_total").unwrap_or(0.0);
        read >= 10.0 && dropped > 0.0
    });
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    for name in [
        "robustream_frames_read_total ",
        "robustream_frames_dropped_total ",
        "robustream_frames_skipped_total ",
    ] {
        assert!(body.contains(name), "{name} missing during the run: {body}");
    }
    assert!(
        sample(&body, "robustream_frames_dropped_total").unwrap() > 0.0,
        "{body}"
    );
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{rest}");

    let s = summary(&out);
    let f = &s["frames"];
    let (read, dropped, skipped) = (
        f["read"].as_u64().unwrap(),
        f["dropped"].as_u64().unwrap(),
        f["skipped"].as_u64().unwrap(),
    );
    // Paced at 15 fps for ~8 s (and no faster: unpaced, a dropping source reads thousands).
    let expected = f64::from(FPS) * secs;
    assert!(
        (read as f64) > 0.6 * expected && (read as f64) < 1.25 * expected + 2.0,
        "read {read}, expected about {expected}: {s}"
    );
    assert!(dropped > 0, "nothing dropped: {s}");
    assert_eq!(skipped, 0, "{s}");
    assert_eq!(s["run"]["end"], "duration", "{s}");
    // Records: every evaluated frame has its 96 variants; read = evaluated + dropped.
    let recs = records(&out);
    let frames: BTreeSet<&str> = recs.iter().map(|r| r["frame"].as_str().unwrap()).collect();
    assert!(!frames.is_empty(), "no records");
    assert!(
        frames.iter().all(|id| id.starts_with("clip.mp4#")),
        "{frames:?}"
    );
    assert_eq!(recs.len(), frames.len() * 96);
    assert_eq!(frames.len() as u64 + dropped, read, "{s}");
    assert_eq!(s["scenarios"]["clean"]["n"], frames.len() as u64);
    // The loop went on past one pass of the clip: ids beyond its 60 frames exist only if read > 60.
    let report = &s["run"]["source_report"];
    assert_eq!(report["kind"], "video", "{s}");
    assert_eq!(report["realtime"], true, "{s}");
    assert_eq!(report["frames_out"], read, "{s}");
    assert!(report["frames_decoded"].as_u64().unwrap() >= read, "{s}");
    assert!(
        s["run"]["source"]
            .as_str()
            .is_some_and(|d| d.contains("real time")),
        "{s}"
    );
}

/// An `ffmpeg` process sending `seconds` of the test pattern as MPEG-TS over UDP in real time.
fn udp_sender(port: u16, seconds: u32) -> std::process::Child {
    let src = format!("testsrc=size=320x240:rate={FPS}");
    Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-re", "-f", "lavfi", "-i", &src, "-t"])
        .arg(seconds.to_string())
        .args(["-c:v", "mpeg4", "-g", "5", "-f", "mpegts"])
        .arg(format!("udp://127.0.0.1:{port}?pkt_size=1316"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("the `ffmpeg` CLI is needed to send a test stream ({e}): run `bash scripts/setup.sh`")
        })
}

#[test]
fn a_network_stream_that_drops_out_is_reconnected_and_the_outage_reported() {
    let _timed = timed();
    let dir = tempfile::tempdir().unwrap();
    let port = free_udp_port();
    let url = format!("udp://127.0.0.1:{port}");
    let config = dir.path().join("udp.toml");
    std::fs::write(
        &config,
        format!(
            "scenarios = [\"clean\"]\n[source]\npath = \"{url}\"\n[source.video]\ntimeout = \"1s\"\n"
        ),
    )
    .unwrap();
    // Sender 1 streams for 3 s, then nothing for ~2 s, then sender 2 for 3 s; the run lasts 8 s.
    let mut first = udp_sender(port, 3);
    let out = dir.path().join("run");
    let child = robustream()
        .args(["run", "--quiet", "--duration", "8s", "--config"])
        .arg(&config)
        .arg("--model")
        .arg(model())
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(first.wait().unwrap().success());
    std::thread::sleep(Duration::from_secs(2));
    let mut second = udp_sender(port, 3);
    let o = child.wait_with_output().unwrap();
    let _ = second.wait();
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!("warning: {url}: connection lost")),
        "{err}"
    );
    let s = summary(&out);
    let r = &s["run"]["source_report"];
    assert_eq!(r["url"], url.as_str(), "{s}");
    assert!(r["reconnects"].as_u64().unwrap() >= 1, "{r}");
    let outage = &r["outages"][0];
    assert_eq!(outage["recovered"], true, "{r}");
    assert!(
        outage["error"]
            .as_str()
            .unwrap()
            .contains("no data for 1.0 s"),
        "{r}"
    );
    // Frames from both senders, ids unique and going on across the reconnect.
    let recs = records(&out);
    let ids: Vec<u64> = recs
        .iter()
        .map(|r| {
            r["frame"]
                .as_str()
                .unwrap()
                .rsplit('#')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let read = s["frames"]["read"].as_u64().unwrap();
    assert!(read >= 45, "read {read}: {s}");
    assert_eq!(s["run"]["end"], "duration", "{s}");
    assert!(
        s["run"]["source"]
            .as_str()
            .unwrap()
            .contains("network stream"),
        "{s}"
    );
}

/// Median ms per frame of decoding + RGB conversion of the 300-frame clip `p` by the source, over
/// five passes.
fn decode_ms_per_frame(p: &Path) -> (f64, Vec<f64>) {
    let mut per_frame = Vec::new();
    for _ in 0..5 {
        let mut s = open(p, None);
        let t = Instant::now();
        let mut n = 0u32;
        while let Some(f) = s.next_frame() {
            assert_eq!(f.unwrap().image.dimensions(), (1280, 720));
            n += 1;
        }
        assert_eq!(n, 300);
        per_frame.push(t.elapsed().as_secs_f64() * 1e3 / f64::from(n));
    }
    per_frame.sort_by(f64::total_cmp);
    (per_frame[2], per_frame)
}

/// The decode speed figures of BENCHMARKS.md (not a check: run with `cargo test --release --test
/// tests sources::video_stream::decode_speed -- --ignored --nocapture`): 10 s of
/// 720p30 H.264 decoded and converted to RGB by the source, median ms per frame of five passes; a
/// camera-like clip (noisy test pattern, High profile, 4 Mbit/s) and an easy one (plain test
/// pattern, ~120 kbit/s).
#[test]
#[ignore]
fn decode_speed_720p_h264() {
    let dir = tempfile::tempdir().unwrap();
    let noisy = dir.path().join("noisy.mp4");
    let plain = dir.path().join("plain.mp4");
    let x264 = [
        "-t", "10", "-c:v", "libx264", "-preset", "fast", "-pix_fmt", "yuv420p",
    ];
    let mut args = vec!["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30"];
    args.extend(["-vf", "noise=alls=12:allf=t", "-b:v", "4M"]);
    args.extend(x264);
    args.push(noisy.to_str().unwrap());
    ffmpeg(&args);
    let mut args = vec!["-f", "lavfi", "-i", "testsrc=size=1280x720:rate=30"];
    args.extend(x264);
    args.push(plain.to_str().unwrap());
    ffmpeg(&args);
    for (what, p) in [("noisy 4 Mbit/s", &noisy), ("plain test pattern", &plain)] {
        let bytes = std::fs::metadata(p).unwrap().len();
        let (median, passes) = decode_ms_per_frame(p);
        println!(
            "720p30 H.264 ({what}, {} kbit/s) decode + RGB: median {median:.3} ms/frame \
             (passes {passes:.3?})",
            bytes * 8 / 10 / 1000
        );
    }
}
