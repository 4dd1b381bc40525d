//! Continuous reporting on a live stream, as a user watches it: `summary.json` and `report.html`
//! are rewritten during the run (a watcher always reads a whole, valid file that says `running`), and
//! the live terminal view comes up on a real pseudo-terminal (`script`), shows the stream, the
//! scenarios and the latencies, stops on `q` and gives the terminal back.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

#[test]
fn summary_is_rewritten_during_the_run() {
    let _timed = timed();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("live.toml");
    std::fs::write(
        &config,
        "scenarios = [\"corruption/contrast/1\"]\n[report]\nsummary_every = \"0.3s\"\n\
         [source]\npath = \"synthetic\"\nkind = \"synthetic\"\n\
         [source.synthetic]\nwidth = 96\nheight = 64\nfps = 10\nframes = 40\nrealtime = true\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    // 40 frames at 10 fps in real time: about 4 s.
    let mut child = quiet_run(&config)
        .arg("--out")
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("robustream starts");
    let path = out.join("summary.json");
    let mut interim = Vec::new();
    let mut interim_pages = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(&path) {
            // Written by rename: never half a file.
            let v: serde_json::Value = serde_json::from_str(&text).expect("whole JSON");
            if v["run"]["end"] == "running" {
                interim.push(v["frames"]["read"].as_u64().unwrap());
            }
        }
        if let Ok(page) = std::fs::read_to_string(out.join("report.html")) {
            assert!(page.trim_end().ends_with("</html>"), "half a page");
            interim_pages += usize::from(page.contains("running — interim"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(interim.len() >= 3, "interim summaries seen: {interim:?}");
    assert!(interim.windows(2).all(|w| w[0] <= w[1]), "{interim:?}");
    assert!(interim.iter().any(|&n| n > 0 && n < 40), "{interim:?}");
    assert!(
        interim_pages >= 3,
        "interim HTML reports seen: {interim_pages}"
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(!page.contains("running — interim") && page.contains("id=\"scenarios\""));
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "completed");
    assert_eq!(s["frames"]["read"], 40);
    assert!(out.join("summary.md").exists());
}

#[test]
fn bad_summary_period_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.toml");
    std::fs::write(&config, "[report]\nsummary_every = \"often\"\n").unwrap();
    let o = run(quiet_run(&config).args(["--source", "synthetic:32x32/2"]));
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("summary_every") && err.trim().lines().count() == 1,
        "{err}"
    );
}

/// Shell-quotes one argument.
fn sh(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

#[test]
fn live_view_runs_on_a_terminal_and_stops_on_q() {
    let _timed = timed();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let config = dir.path().join("camera.toml");
    std::fs::write(
        &config,
        "[source]\npath = \"synthetic\"\nkind = \"synthetic\"\n\
         [source.synthetic]\nwidth = 96\nheight = 64\nfps = 10\nrealtime = true\n",
    )
    .unwrap();
    let cmd = [
        env!("CARGO_BIN_EXE_robustream"),
        "run",
        "--view",
        "live",
        "--model",
        model().to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--scenarios",
        "corruption/contrast/1,corruption/fog/2",
        "--label",
        "wallaby",
        "--out",
        out.to_str().unwrap(),
    ]
    .map(sh)
    .join(" ");
    let cmd = format!("stty cols 120 rows 30; exec {cmd}");
    // `script` gives the run a pseudo-terminal on stdin/stdout/stderr and copies what it draws.
    let mut child = Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .env("ORT_DYLIB_PATH", ort_lib())
        .env("TERM", "xterm-256color")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) runs; install it with bash scripts/setup.sh");
    let mut stdin = child.stdin.take().unwrap();
    // Let it run a few seconds (the camera never ends), then press q.
    let started = Instant::now();
    while !out.join("records.jsonl").exists() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(3));
    stdin.write_all(b"q").unwrap();
    stdin.flush().unwrap();
    let o = child.wait_with_output().unwrap();
    let screen = text(&o.stdout);
    // Stopped by the user, as Ctrl-C would: exit status 130, summary written.
    assert_eq!(o.status.code(), Some(130), "{screen}\n{}", text(&o.stderr));
    // The screen is drawn with cursor moves between changed cells: look for single words.
    for want in [
        "robustream",
        "frames/s",
        "dropped",
        "scenarios",
        "(3)",
        "corruption/fog/2",
        "top-1",
        "window:",
        "latency",
        "infer",
        "warnings:",
    ] {
        assert!(screen.contains(want), "{want:?} not drawn:\n{screen}");
    }
    // Alternate screen entered and left again.
    assert!(screen.contains("\x1b[?1049h") && screen.contains("\x1b[?1049l"));
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "interrupted");
    assert!(s["frames"]["read"].as_u64().unwrap() >= 10, "{s}");
}

#[test]
fn a_slow_stream_still_gets_interim_summaries_between_frames() {
    let _timed = timed();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("slow.toml");
    // One frame a second: without the pipeline's idle tick nothing would be rewritten in between.
    std::fs::write(
        &config,
        "[report]\nsummary_every = \"0.2s\"\n[source]\npath = \"synthetic\"\nkind = \"synthetic\"\n\
         [source.synthetic]\nwidth = 64\nheight = 48\nfps = 1\nframes = 3\nrealtime = true\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let mut child = quiet_run(&config)
        .arg("--out")
        .arg(&out)
        .spawn()
        .expect("robustream starts");
    let path = out.join("summary.json");
    let mut seen = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(&path) {
            let v: serde_json::Value = serde_json::from_str(&text).expect("whole JSON");
            if v["run"]["end"] == "running" {
                let wall = (v["run"]["wall_s"].as_f64().unwrap() * 1000.0) as u64;
                seen.insert((v["frames"]["read"].as_u64().unwrap(), wall));
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(child.wait().unwrap().success());
    // Some frame count was written at two or more different times: rewrites between frames.
    let mut per_count = std::collections::BTreeMap::<u64, usize>::new();
    for (n, _) in &seen {
        *per_count.entry(*n).or_default() += 1;
    }
    assert!(per_count.values().any(|&k| k >= 2), "{seen:?}");
}
