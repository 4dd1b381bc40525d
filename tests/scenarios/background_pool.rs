//! The stream's background pool end to end: IN-9 mixed scenarios draw backgrounds from earlier
//! frames only (the first frames warm the pool up and are skipped for those scenarios alone), and a
//! run repeats exactly whatever the worker count and batch size.

use std::path::Path;

use crate::util::*;
use robustream::scene::random_scene;

/// Eight procedural scenes with exact masks, alternating between two ImageNet classes.
fn scenes(dir: &Path) -> std::path::PathBuf {
    let mut rows = vec!["path,label,mask".to_string()];
    for i in 0..8u64 {
        let s = random_scene(240, 180, 100 + i);
        s.image.save(dir.join(format!("s{i}.png"))).unwrap();
        s.mask.save(dir.join(format!("s{i}_mask.png"))).unwrap();
        rows.push(format!("s{i}.png,{},s{i}_mask.png", i % 2));
    }
    let m = dir.join("scenes.csv");
    std::fs::write(&m, rows.join("\n") + "\n").unwrap();
    m
}

fn run_pool(source: &Path, out: &Path, workers: &str, batch: &str) -> std::process::Output {
    run(robustream()
        .args([
            "run",
            "--quiet",
            "--seed",
            "5",
            "--workers",
            workers,
            "--batch",
            batch,
        ])
        .args([
            "--scenarios",
            "background/mixed_same,background/mixed_rand,background/only_bg_t",
        ])
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out))
}

#[test]
fn mixed_backgrounds_come_from_earlier_frames_and_repeat_exactly() {
    let d = tempfile::tempdir().unwrap();
    let source = scenes(d.path());
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let oa = run_pool(&source, &a, "1", "1");
    assert!(oa.status.success(), "{}", text(&oa.stderr));
    let ob = run_pool(&source, &b, "3", "8");
    assert!(ob.status.success(), "{}", text(&ob.stderr));
    let (ra, rb) = (records_without_timings(&a), records_without_timings(&b));
    assert_eq!(ra, rb, "the pool must not depend on scheduling");

    let keys = |frame: &str| -> Vec<String> {
        ra.iter()
            .filter(|r| r["frame"] == frame)
            .map(|r| r["scenario"].as_str().unwrap().to_string())
            .collect()
    };
    // Frame 0 has no earlier frame: only clean and only_bg_t are evaluated.
    assert_eq!(keys("s0.png"), ["clean", "background/only_bg_t"]);
    // Frame 1 (class 1) has an earlier frame of another class only: mixed_rand, not mixed_same.
    assert_eq!(
        keys("s1.png"),
        ["clean", "background/mixed_rand", "background/only_bg_t"]
    );
    // From frame 2 on, every class has an earlier frame.
    for i in 2..8 {
        assert_eq!(keys(&format!("s{i}.png")).len(), 4, "frame {i}");
    }
    let s = summary(&a);
    assert_eq!(s["frames"]["read"], 8);
    assert_eq!(s["run"]["variants_failed"], 3, "{}", s["run"]);
    let warn = text(&oa.stderr);
    assert!(warn.is_empty() || warn.contains("warming up"), "{warn}");
}
