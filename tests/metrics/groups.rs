//! The groups family end to end (docs/groups.md), on the real model: the demo photos in a manifest
//! with a `camera` column, camera `a` the reference, clean and contrast at severity 5. The summary's
//! `metrics.groups` is checked against the records (each carrying its frame's camera), a row with
//! no camera is a counted skip (fatal with `--strict`), `robustream report` rebuilds the same entry
//! and `compare --fail-on` judges a group rule.

use std::collections::BTreeMap;
use std::path::Path;

use crate::util::*;
use serde_json::Value;

const CONTRAST: &str = "corruption/contrast/5";

/// The demo photos copied into `dir`, a manifest with their labels and cameras (motorcycle_left
/// without one), and a config evaluating it; returns the config.
fn setup(dir: &Path) -> std::path::PathBuf {
    let rows = [
        ("coffee.png", "espresso", "a"),
        ("chelsea.png", "tabby cat", "a"),
        ("rocket.jpg", "missile", "a"),
        ("camera.png", "tripod", "a"),
        ("china.jpg", "palace", "b"),
        ("flower.jpg", "daisy", "b"),
        ("grace_hopper.jpg", "military uniform", "b"),
        ("astronaut.png", "", "b"),
        ("motorcycle_left.png", "", ""),
    ];
    let mut csv = String::from("path,label,camera\n");
    for (file, label, camera) in rows {
        std::fs::copy(photo(file), dir.join(file)).unwrap();
        csv.push_str(&format!("{file},{label},{camera}\n"));
    }
    std::fs::write(dir.join("cameras.csv"), csv).unwrap();
    let config = dir.join("groups.toml");
    std::fs::write(
        &config,
        format!(
            "scenarios = [\"clean\", \"{CONTRAST}\"]\nseed = 0\n[source]\npath = \"cameras.csv\"\n\
             [source.groups]\ncolumns = [\"camera\"]\nreference = {{ camera = \"a\" }}\n\
             [engine]\nprovider = \"cpu\"\n"
        ),
    )
    .unwrap();
    config
}

/// Per camera and scenario (`*` = all): (records, labelled, right) from the records.
fn counts(records: &[Value]) -> BTreeMap<(String, String), (u64, u64, u64)> {
    let mut out = BTreeMap::new();
    for r in records {
        let camera = r["groups"]["camera"]
            .as_str()
            .expect("every record carries its camera")
            .to_string();
        let scenario = r["scenario"].as_str().unwrap().to_string();
        for key in [scenario, "*".to_string()] {
            let c: &mut (u64, u64, u64) = out.entry((camera.clone(), key)).or_default();
            c.0 += 1;
            if !r["truth"].is_null() {
                c.1 += 1;
                c.2 += u64::from(r["pred"] == r["truth"]);
            }
        }
    }
    out
}

fn close(v: &Value, want: f64) -> bool {
    v.as_f64().is_some_and(|v| (v - want).abs() < 1e-12)
}

#[test]
fn accuracy_per_group_its_gap_and_a_compare_rule() {
    let d = tempfile::tempdir().unwrap();
    let config = setup(d.path());
    let out = d.path().join("run");
    let o = run(quiet_run(&config).arg("--out").arg(&out));
    assert!(o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("motorcycle_left.png: the group column `camera` is empty on line 10 of ")
            && err.contains("give the frame's camera or remove the row"),
        "{err}"
    );
    let s = summary(&out);
    assert_eq!(s["format"], 3);
    assert_eq!(
        (
            s["frames"]["read"].as_u64(),
            s["frames"]["skipped"].as_u64()
        ),
        (Some(8), Some(1))
    );
    let records = records(&out);
    assert_eq!(records.len(), 16);
    assert!(records.iter().all(|r| r["format"] == 3));
    let c = counts(&records);
    let top1 = |camera: &str, scenario: &str| {
        let (_, labelled, right) = c[&(camera.to_string(), scenario.to_string())];
        right as f64 / labelled as f64
    };
    let cam = &s["metrics"]["groups"]["dimensions"]["camera"];
    assert_eq!(cam["reference"], "a", "{cam:#}");
    let (a, b) = (&cam["groups"]["a"], &cam["groups"]["b"]);
    // Camera a: 4 photos × 2 scenarios, all labelled; b: 4 photos, 3 labelled.
    assert_eq!(
        (a["n"].as_u64(), a["n_labelled"].as_u64()),
        (Some(8), Some(8))
    );
    assert_eq!(
        (b["n"].as_u64(), b["n_labelled"].as_u64()),
        (Some(8), Some(6))
    );
    assert!(close(&a["top1"], top1("a", "*")), "{a:#}");
    assert!(close(&b["top1"], top1("b", "*")), "{b:#}");
    assert!(a["gap"].is_null());
    assert!(close(&b["gap"], top1("a", "*") - top1("b", "*")), "{b:#}");
    for scenario in ["clean", CONTRAST] {
        let cell = &b["scenarios"][scenario];
        assert!(close(&cell["top1"], top1("b", scenario)), "{cell:#}");
        assert!(
            close(&cell["gap"], top1("a", scenario) - top1("b", scenario)),
            "{cell:#}"
        );
        let worst = &cam["worst_by_scenario"][scenario];
        let want = top1("a", scenario).min(top1("b", scenario));
        assert!(close(&worst["top1"], want), "{worst:#}");
    }
    let want_worst = top1("a", "*").min(top1("b", "*"));
    assert!(close(&cam["worst"]["top1"], want_worst), "{cam:#}");

    // `report` rebuilds the same entry from the records, with the same reference group.
    let o = run(robustream().args(["report", "--format", "json"]).arg(&out));
    assert!(o.status.success());
    let rebuilt: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rebuilt["metrics"]["groups"], s["metrics"]["groups"]);
    let o = run(robustream().arg("report").arg(&out));
    let md = text(&o.stdout);
    assert!(
        md.contains("\n## Groups (docs/groups.md)\n\ncamera (gaps to a; worst "),
        "{md}"
    );
    assert!(md.contains("Top-1 per scenario and camera:"), "{md}");

    // compare: the group metrics of a run against itself change by 0.
    let compare = |rule: &str| {
        robustream()
            .arg("compare")
            .arg(&out)
            .arg(&out)
            .args(["--format", "json", "--fail-on", rule])
            .output()
            .unwrap()
    };
    let o = compare("group_gap[camera=b]>1%");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let gap = &j["metrics"]["group_gap[camera=b]"];
    assert!(close(&gap["diff"], 0.0), "{gap}");
    assert!(
        close(&gap["baseline"], top1("a", "*") - top1("b", "*")),
        "{gap}"
    );
    assert!(
        j["metrics"]["worst_group_top1[camera@clean]"]["diff"].is_number(),
        "{j:#}"
    );
    // A rule that fires on a change of 0: the gate fails, naming the group.
    let o = compare(&format!("group_top1[camera=a@{CONTRAST}]<=0"));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains(&format!("camera=a@{CONTRAST}")),
        "{}",
        text(&o.stderr)
    );

    // With --strict the frame without a camera ends the run.
    let strict = d.path().join("strict");
    let o = run(quiet_run(&config).arg("--strict").arg("--out").arg(&strict));
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("the group column `camera` is empty"), "{err}");
}
