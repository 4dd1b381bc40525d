//! Labels on a stream, as a user gives them: `--label` (one class for every frame) and
//! `--labels` (a sidecar CSV keyed by frame or time) on the synthetic camera, scored by the real
//! model; a bad labels file is one clear line.

use std::path::Path;

use crate::util::*;
use serde_json::Value;

fn stream_run(dir: &Path, name: &str, extra: &[&str]) -> std::process::Output {
    run(robustream()
        .args(["run", "--quiet", "--scenarios", "corruption/contrast/1"])
        .arg("--model")
        .arg(model())
        .args(["--source", "synthetic:96x64@10/6"])
        .arg("--out")
        .arg(dir.join(name))
        .args(extra))
}

fn truths(dir: &Path) -> Vec<Value> {
    records(dir)
        .into_iter()
        .filter(|r| r["scenario"] == "clean")
        .map(|r| r["truth"].clone())
        .collect()
}

#[test]
fn fixed_label_scores_every_frame() {
    let dir = tempfile::tempdir().unwrap();
    let o = stream_run(dir.path(), "fixed", &["--label", "wallaby"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = dir.path().join("fixed");
    assert_eq!(truths(&out), vec![Value::from(104); 6]);
    let s = summary(&out);
    // Labelled: the accuracy table has the clean scenario scored on all six frames.
    let clean = &s["scenarios"]["clean"];
    assert_eq!(clean["n_labelled"], 6, "{clean}");
    assert!(clean["top1"].is_number(), "{clean}");
    assert!(
        s["run"]["source"].as_str().unwrap().contains("label 104"),
        "{s}"
    );
}

#[test]
fn sidecar_by_frame_and_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let by_frame = dir.path().join("by_frame.csv");
    std::fs::write(&by_frame, "frame,label\n0,wallaby\n2,-\n4,koala\n").unwrap();
    let o = stream_run(
        dir.path(),
        "frame",
        &["--labels", by_frame.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let koala = 105;
    assert_eq!(
        truths(&dir.path().join("frame")),
        vec![
            Value::from(104),
            Value::from(104),
            Value::Null,
            Value::Null,
            Value::from(koala),
            Value::from(koala)
        ]
    );
    // The synthetic camera stamps frame n at n / fps seconds (10 fps here).
    let by_time = dir.path().join("by_time.csv");
    std::fs::write(&by_time, "time,label\n0:00.25,koala\n").unwrap();
    let o = stream_run(dir.path(), "time", &["--labels", by_time.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = truths(&dir.path().join("time"));
    assert_eq!(t[..3], vec![Value::Null; 3]);
    assert_eq!(t[3..], vec![Value::from(koala); 3]);
}

#[test]
fn bad_labels_are_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "frame,label\n0,wallaby\n1,no such animal\n").unwrap();
    let o = stream_run(dir.path(), "bad", &["--labels", bad.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.csv:3") && err.contains("`no such animal` is not a class"),
        "{err}"
    );
    let o = stream_run(dir.path(), "unknown", &["--label", "unicorn"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("label `unicorn` is not a class"));
}
