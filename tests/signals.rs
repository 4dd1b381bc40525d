//! Stop signals other than Ctrl-C (SIGTERM from `docker stop`, Kubernetes, systemd; SIGHUP from a
//! closed terminal) stop a run as Ctrl-C does, and a source blocked in a read (a FIFO nobody writes
//! to) does not keep the run from ending on the first signal.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
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

/// How long a stopped run blocked in a read may take to exit: the reader gives up 0.5 s after
/// the stop; the rest is slack for a loaded machine.
const BLOCKED_EXIT: Duration = Duration::from_secs(4);

#[test]
fn a_source_blocked_on_a_fifo_ends_on_the_first_signal() {
    let d = tempfile::tempdir().unwrap();
    // The FIFO as the source itself (an image source: read when its turn comes).
    let pipe = fifo(d.path(), "frames");
    let out = d.path().join("alone");
    let mut child = start(&pipe, &out, &[]);
    // The run has begun (its watcher writes resources.csv) and its reader sits in open(2).
    wait_for("run", || out.join("resources.csv").exists());
    std::thread::sleep(Duration::from_millis(300));
    kill(&child, "TERM");
    let t = Instant::now();
    let status = exit_within(&mut child, BLOCKED_EXIT);
    let took = t.elapsed();
    let err = rest_of_stderr(&mut child);
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(err.contains("SIGTERM received: stopping"), "{err}");
    assert!(
        err.contains("left behind"),
        "the blocked read is named: {err}"
    );
    eprintln!("a FIFO source exited {took:?} after SIGTERM");
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "interrupted");
    assert_eq!(s["frames"]["read"], 0);
    assert!(
        s["run"]["source_report"]["left_behind"].is_string(),
        "{}",
        s["run"]
    );

    // The FIFO as a manifest's second image: the first is evaluated and recorded, then the read
    // blocks, and Ctrl-C ends the run with that frame.
    let m = d.path().join("m");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::copy(photo("coffee.png"), m.join("coffee.png")).unwrap();
    fifo(&m, "stuck.png");
    let csv = manifest(&m, &["coffee.png,espresso", "stuck.png,espresso"]);
    let out = d.path().join("manifest");
    let mut child = start(&csv, &out, &[]);
    wait_for("records", || record_lines(&out) >= 1);
    std::thread::sleep(Duration::from_millis(300));
    kill(&child, "INT");
    let status = exit_within(&mut child, BLOCKED_EXIT);
    let err = rest_of_stderr(&mut child);
    assert_eq!(status.code(), Some(130), "{err}");
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "interrupted");
    assert_eq!(s["frames"]["read"], 1);
    assert_eq!(records(&out).len(), 1);
    assert_eq!(records(&out)[0]["frame"], "coffee.png");
}

#[test]
fn a_manifest_that_never_opens_ends_on_the_first_signal() {
    let d = tempfile::tempdir().unwrap();
    // The manifest itself is a FIFO: reading it blocks while the source is opened, before the run.
    let csv = fifo(d.path(), "list.csv");
    let out = d.path().join("run");
    let mut child = start(&csv, &out, &[]);
    // The run directory is taken first thing, then the model description is read, then the source.
    wait_for("run directory", || out.join(".lock").exists());
    std::thread::sleep(Duration::from_millis(500));
    kill(&child, "TERM");
    let status = exit_within(&mut child, BLOCKED_EXIT);
    let err = rest_of_stderr(&mut child);
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(
        err.contains(&format!("{}: stopped before the run began", csv.display()))
            && err.contains("nothing was evaluated"),
        "{err}"
    );
    assert!(!out.join("summary.json").exists());
}

#[test]
fn a_second_signal_aborts_at_once() {
    let d = tempfile::tempdir().unwrap();
    let pipe = fifo(d.path(), "frames");
    let out = d.path().join("run");
    let mut child = start(&pipe, &out, &[]);
    wait_for("run", || out.join("resources.csv").exists());
    std::thread::sleep(Duration::from_millis(300));
    kill(&child, "TERM");
    // Once the first is taken (its line printed), a second signal: the run would need another
    // half second to give up its blocked read; it aborts instead, with 128 + SIGHUP.
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
    let status = exit_within(&mut child, BLOCKED_EXIT);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(129), "{seen}{rest}");
    assert!(rest.contains("SIGHUP again: aborting"), "{seen}{rest}");
    assert!(
        !rest.contains("left behind"),
        "aborted before the grace: {rest}"
    );
}
