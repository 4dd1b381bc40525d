//! Stop signals other than Ctrl-C (SIGTERM from `docker stop`, Kubernetes, systemd; SIGHUP from a
//! closed terminal) stop a run as Ctrl-C does; a second signal aborts; a FIFO (whose open would
//! block) is named and never read.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// `robustream run --quiet --scenarios clean` on the real model with `source`, into `out`,
/// stdout discarded and stderr piped.
fn start(source: &Path, out: &Path, extra: &[&str]) -> Child {
    robustream()
        .args(["run", "--quiet", "--scenarios", "clean", "--model"])
        .arg(model())
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (up to 120 s) until `ready()`.
fn wait_for(what: &str, ready: impl Fn() -> bool) {
    let t = Instant::now();
    while !ready() {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no {what} after 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Lines in `records.jsonl` of the run directory `out` (0 while it does not exist).
fn record_lines(out: &Path) -> usize {
    std::fs::read_to_string(out.join("records.jsonl")).map_or(0, |s| s.lines().count())
}

/// Sends `signal` (`TERM`, `HUP`, `INT`) to `child` with the `kill` CLI.
fn kill(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal}");
}

#[test]
fn sigterm_and_sighup_stop_a_run_as_ctrl_c_does() {
    let d = tempfile::tempdir().unwrap();
    // An endless camera at its own pace: only a signal ends this run.
    let camera = Path::new("synthetic:160x120@30");
    for (signal, name, status) in [("TERM", "SIGTERM", 143), ("HUP", "SIGHUP", 129)] {
        let out = d.path().join(name);
        let child = start(camera, &out, &["--realtime"]);
        wait_for("records", || record_lines(&out) >= 3);
        kill(&child, signal);
        let o = child.wait_with_output().unwrap();
        let err = text(&o.stderr);
        // 128 + the signal's number, as a shell reports it.
        assert_eq!(o.status.code(), Some(status), "{name}: {err}");
        assert!(
            err.contains(&format!("{name} received: stopping")),
            "the line names the signal: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        let s = summary(&out);
        assert_eq!(s["run"]["end"], "interrupted", "{name}");
        // Every frame evaluated before the stop is recorded, and the summary counts exactly those.
        let frames = &s["frames"];
        let evaluated = frames["read"].as_u64().unwrap() - frames["dropped"].as_u64().unwrap();
        assert!(evaluated >= 3, "{frames}");
        assert_eq!(records(&out).len() as u64, evaluated, "{name}");
        assert_eq!(s["scenarios"]["clean"]["n"].as_u64(), Some(evaluated));
    }
}

/// A FIFO at `dir/name` (the `mkfifo` CLI): opening it for reading blocks until a writer comes,
/// and none ever does here.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    let status = Command::new("mkfifo").arg(&p).status().unwrap();
    assert!(status.success(), "mkfifo {}", p.display());
    p
}

/// Waits for `child` up to `limit`; kills it (and fails) if it is still running then.
fn exit_within(child: &mut Child, limit: Duration) -> ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if t.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running {limit:?} after the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The rest of `child`'s piped stderr.
fn rest_of_stderr(child: &mut Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

/// How long a run may take to exit once it should: slack for a loaded machine.
const PROMPT_EXIT: Duration = Duration::from_secs(4);

#[test]
fn a_fifo_is_refused_at_once_and_never_read() {
    // Opening a FIFO for reading blocks until a writer comes; none ever does here. A FIFO is not
    // an image file or a manifest, so the run names it and never opens it (a read that could
    // block past a stop is never started); a source that blocks elsewhere — a stalled network
    // mount — is given up half a second after the first signal (`pipeline/reader.rs`, unit-tested
    // with a source that never returns).
    let d = tempfile::tempdir().unwrap();
    for name in ["frames", "list.csv"] {
        let pipe = fifo(d.path(), name);
        let out = d.path().join(format!("run-{name}"));
        let mut child = start(&pipe, &out, &[]);
        let status = exit_within(&mut child, Duration::from_secs(60));
        let err = rest_of_stderr(&mut child);
        assert_eq!(status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("{}: is a FIFO (named pipe)", pipe.display())),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // As a manifest's second image: skipped with its line, the first evaluated, the run ends.
    let m = d.path().join("m");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::copy(photo("coffee.png"), m.join("coffee.png")).unwrap();
    fifo(&m, "stuck.png");
    let csv = manifest(&m, &["coffee.png,espresso", "stuck.png,espresso"]);
    let out = d.path().join("manifest");
    let mut child = start(&csv, &out, &[]);
    let status = exit_within(&mut child, Duration::from_secs(60));
    let err = rest_of_stderr(&mut child);
    assert!(status.success(), "{err}");
    assert!(err.contains("stuck.png: is a FIFO (named pipe)"), "{err}");
    let s = summary(&out);
    assert_eq!(
        (
            s["frames"]["read"].as_u64(),
            s["frames"]["skipped"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(records(&out)[0]["frame"], "coffee.png");
}

#[test]
fn a_second_signal_aborts_at_once() {
    let _timed = timed();
    let d = tempfile::tempdir().unwrap();
    // A plan slow enough that, after the first signal, the frame in flight takes seconds to finish
    // (96 variants of a 1280×720 frame at its native size): the second signal comes before that.
    let config = d.path().join("slow.toml");
    std::fs::write(&config, "stage = \"native\"\n").unwrap();
    let out = d.path().join("run");
    let mut child = start(
        Path::new("synthetic:1280x720@30"),
        &out,
        &[
            "--realtime",
            "--config",
            config.to_str().unwrap(),
            "--scenarios",
            "imagenet-c-all",
        ],
    );
    wait_for("run", || out.join("resources.csv").exists());
    std::thread::sleep(Duration::from_millis(300));
    kill(&child, "TERM");
    // Once the first is taken (its line printed), a second signal: the run would finish the frame
    // in flight; it aborts instead, with 128 + SIGHUP.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("SIGTERM received") {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no stop line: {seen}"
        );
        seen.push_str(&line);
    }
    kill(&child, "HUP");
    let status = exit_within(&mut child, PROMPT_EXIT);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(129), "{seen}{rest}");
    assert!(rest.contains("SIGHUP again: aborting"), "{seen}{rest}");
}

/// Whether process `pid` has installed its own handler of signal number `sig` (the `SigCgt`
/// mask of /proc/<pid>/status).
fn catches(pid: u32, sig: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        })
        .is_some_and(|mask| mask & (1 << (sig - 1)) != 0)
}

#[test]
fn a_stop_while_the_model_loads_ends_the_run_right_after_the_load() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("run");
    // An endless camera: only the signal ends this run.
    let mut child = start(Path::new("synthetic:160x120@30"), &out, &["--realtime"]);
    // The signal handlers are installed just before the run opens the source and loads the
    // model; SIGTERM sent the moment they are is taken while loading (nothing read yet).
    wait_for("a SIGTERM handler", || catches(child.id(), 15));
    kill(&child, "TERM");
    let status = exit_within(&mut child, Duration::from_secs(60));
    let err = rest_of_stderr(&mut child);
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The stop line at once, and nothing else but the usual end.
    assert!(err.contains("SIGTERM received: stopping"), "{err}");
    assert!(!err.contains("error"), "{err}");
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "interrupted", "{s}");
    // No warm-up after the stop, and no frame read.
    assert_eq!(s["run"]["engine_warmup_ms"], serde_json::json!({}), "{s}");
    assert_eq!(s["frames"]["read"], 0, "{s}");
}
