//! One run writes a run directory at a time: a second run on the same `--out` fails at once with one
//! line (the directory, the PID of the run writing it, the fix); once the first ends, the directory
//! is free again (the OS releases the lock with the process).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// `robustream run --quiet --scenarios clean` on the real model from `source` into `out`.
fn run_cmd(source: &str, out: &Path) -> Command {
    let mut c = robustream();
    c.args(["run", "--quiet", "--scenarios", "clean", "--model"])
        .arg(model())
        .args(["--source", source])
        .arg("--out")
        .arg(out);
    c
}

#[test]
fn a_second_run_on_a_directory_in_use_fails_at_once_and_names_the_holder() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("run");
    // The first run: an endless camera at its own pace, writing records until interrupted.
    let first = run_cmd("synthetic:160x120@30", &out)
        .arg("--realtime")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while std::fs::read_to_string(out.join("records.jsonl")).map_or(0, |s| s.lines().count()) < 2 {
        assert!(t.elapsed() < Duration::from_secs(120), "no records");
        std::thread::sleep(Duration::from_millis(50));
    }

    let o = run_cmd("synthetic:64x48@30/3", &out).output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let line = err.trim_end();
    assert!(line.starts_with("error: "), "{line}");
    assert!(
        line.contains(&out.display().to_string()),
        "names the directory: {line}"
    );
    assert!(
        line.contains(&format!("another robustream run (PID {})", first.id())),
        "names the holder: {line}"
    );
    assert!(
        line.contains("another --out") && line.contains("wait"),
        "the fix: {line}"
    );

    // The first run goes on unharmed and ends as usual.
    let status = Command::new("kill")
        .args(["-INT", &first.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let o = first.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "interrupted");
    let evaluated =
        s["frames"]["read"].as_u64().unwrap() - s["frames"]["dropped"].as_u64().unwrap();
    assert_eq!(records(&out).len() as u64, evaluated, "no foreign records");

    // Now free: a new run takes the directory (its records replace the old ones).
    let o = run(&mut run_cmd("synthetic:64x48@30/3", &out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(records(&out).len(), 3);
    assert_eq!(summary(&out)["run"]["end"], "completed");
}
