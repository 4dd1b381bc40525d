//! Ctrl-C: reading stops, frames in flight finish, and the summary of what was done is written.

use std::time::{Duration, Instant};

use crate::util::*;

#[test]
fn sigint_writes_the_summary_of_what_was_done() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(photo("coffee.png"), d.path().join("coffee.png")).unwrap();
    let rows: Vec<String> = (0..2000)
        .map(|_| "coffee.png,espresso".to_string())
        .collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let src = manifest(d.path(), &rows);
    let out = d.path().join("run");
    let child = robustream()
        .args(["run", "--quiet", "--scenarios", "demo", "--model"])
        .arg(model())
        .arg("--source")
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some records are on disk (flushed per frame), then interrupt.
    let t = Instant::now();
    let records_path = out.join("records.jsonl");
    while std::fs::read_to_string(&records_path).map_or(0, |s| s.lines().count()) < 22 {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no records after 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "stderr: {}", text(&o.stderr));
    assert!(!text(&o.stderr).contains("panicked"));
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "interrupted");
    let recs = records(&out);
    let read = s["frames"]["read"].as_u64().unwrap();
    assert!(read < 2000, "stopped early: {read}");
    // Every frame that was read was finished and recorded, and the summary counts exactly those.
    assert_eq!(recs.len() as u64, read * 11);
    assert_eq!(s["scenarios"]["clean"]["n"].as_u64(), Some(read));
    // The records alone give the same numbers, though every frame has the same id here.
    let o = run(robustream().args(["report", "--format", "json"]).arg(&out));
    let again: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(again["scenarios"], s["scenarios"]);
}
