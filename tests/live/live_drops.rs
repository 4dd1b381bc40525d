//! A live source that outpaces the pipeline: the synthetic camera paced in real time with
//! a deliberately slow plan. The source never waits: frames are dropped by `[pipeline] drop`, every
//! drop is counted, the frames that are evaluated are complete, and the summary adds up.
//!
//! An end-to-end smoke test on the real model: which frames are dropped depends on the machine's
//! speed, so only the accounting is asserted exactly, and "something was dropped" rests on a margin
//! no machine closes (a frame every 0.5 ms against 21 blurred variants and their inferences). The
//! drop policies themselves are tested deterministically on a stub engine in
//! `src/app/pipeline/tests/admission.rs`.

use std::collections::BTreeSet;
use std::path::Path;

use crate::util::*;

/// Runs `frames` frames of a 2000 fps synthetic camera through a 20-variant plan on the real model
/// with a 2-frame queue, `drop` as given; returns (summary, distinct frames in records, records).
fn live_run(dir: &Path, name: &str, drop: &str, frames: u32) -> (serde_json::Value, usize, usize) {
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            "scenarios = [\"imagenet-c/blur\"]\n[pipeline]\nqueue = 2\ndrop = \"{drop}\"\n\
             [source]\npath = \"synthetic\"\nkind = \"synthetic\"\n[source.synthetic]\nwidth = 160\n\
             height = 120\nfps = 2000\nrealtime = true\nframes = {frames}\n"
        ),
    )
    .unwrap();
    let out = dir.join(name);
    let o = run(quiet_run(&config).arg("--out").arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = records(&out);
    let distinct: BTreeSet<&str> = recs.iter().map(|r| r["frame"].as_str().unwrap()).collect();
    (summary(&out), distinct.len(), recs.len())
}

#[test]
fn a_slow_pipeline_drops_frames_of_a_live_source_and_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    // 80 frames in 40 ms, a frame every 0.5 ms: 21 variants per frame (glass, zoom, motion and
    // defocus blur at 224², then as many inferences of the real model) take tens of milliseconds
    // on any machine, so a frame always arrives while one is waiting.
    for policy in ["oldest", "newest"] {
        let (s, evaluated, n_records) = live_run(dir.path(), policy, policy, 80);
        let f = &s["frames"];
        assert_eq!(f["read"], 80, "{s}");
        let dropped = f["dropped"].as_u64().unwrap();
        assert!(dropped > 0, "{policy}: nothing dropped: {s}");
        assert_eq!(evaluated as u64 + dropped, 80, "{policy}: {s}");
        // Every evaluated frame has all its variants; clean's count is the evaluated frames.
        assert_eq!(n_records, evaluated * 21, "{policy}");
        assert_eq!(s["scenarios"]["clean"]["n"], evaluated as u64, "{policy}");
    }
    // "never": the camera waits for the pipeline, nothing is lost.
    let (s, evaluated, _) = live_run(dir.path(), "never", "never", 12);
    assert_eq!((s["frames"]["dropped"].as_u64(), evaluated), (Some(0), 12));
}
