//! Stop signals other than Ctrl-C (SIGTERM from `docker stop`, Kubernetes, systemd; SIGHUP from a
//! closed terminal) stop a run as Ctrl-C does, and a source blocked in a read (a FIFO nobody writes
//! to) does not keep the run from ending on the first signal.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

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
