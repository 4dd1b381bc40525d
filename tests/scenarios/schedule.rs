//! Scheduled plans on a stream, as a user runs them: the synthetic camera, the real model,
//! `[pipeline] schedule`. `clean` is evaluated on every frame, the other scenarios as the schedule
//! says, and a run repeats exactly.

use std::collections::BTreeMap;
use std::path::Path;

use crate::util::*;
use serde_json::Value;

fn scheduled_run(dir: &Path, name: &str, pipeline: &str, frames: u32) -> Vec<Value> {
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            "scenarios = [\"imagenet-c/noise\", \"imagenet-c/digital\"]\n[pipeline]\n{pipeline}\n"
        ),
    )
    .unwrap();
    let out = dir.join(name);
    let o = run(quiet_run(&config)
        .args(["--source", &format!("synthetic:96x64@30/{frames}")])
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], frames, "{s}");
    records(&out)
}

fn per_scenario(records: &[Value]) -> BTreeMap<String, usize> {
    let mut n = BTreeMap::new();
    for r in records {
        *n.entry(r["scenario"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    n
}

#[test]
fn round_robin_evaluates_clean_always_and_every_scenario_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    // 35 scenarios besides clean, 5 per frame: 14 frames give each one exactly twice.
    let recs = scheduled_run(
        dir.path(),
        "rr",
        "schedule = \"round-robin\"\nper_frame = 5",
        14,
    );
    assert_eq!(recs.len(), 14 * 6);
    let n = per_scenario(&recs);
    assert_eq!(n.len(), 36, "{n:?}");
    assert_eq!(n["clean"], 14);
    assert!(n.iter().all(|(k, &c)| k == "clean" || c == 2), "{n:?}");
    // Each frame's records: clean first, then 5 others in plan order.
    for frame in recs.chunks(6) {
        assert_eq!(frame[0]["scenario"], "clean");
        let id = &frame[0]["frame"];
        assert!(frame.iter().all(|r| &r["frame"] == id));
    }
    let s = summary(&dir.path().join("rr"));
    assert_eq!(
        s["run"]["schedule"],
        "round-robin, 5 of 35 scenarios per frame + clean"
    );
}

#[test]
fn random_schedule_repeats_exactly_and_bad_settings_fail_first() {
    let dir = tempfile::tempdir().unwrap();
    let a = scheduled_run(dir.path(), "a", "schedule = \"random\"\nper_frame = 3", 10);
    let b = scheduled_run(
        dir.path(),
        "b",
        "schedule = \"random\"\nper_frame = 3\nworkers = 1",
        10,
    );
    let key = |v: &[Value]| -> Vec<(String, String, Value)> {
        v.iter()
            .map(|r| {
                (
                    r["frame"].as_str().unwrap().to_string(),
                    r["scenario"].as_str().unwrap().to_string(),
                    r["top5"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(key(&a), key(&b));
    assert_eq!(a.len(), 10 * 4);
    assert!(
        per_scenario(&a).len() > 4,
        "different frames get different scenarios"
    );
    let config = dir.path().join("bad.toml");
    std::fs::write(&config, "[pipeline]\nschedule = \"random\"\n").unwrap();
    let o = run(quiet_run(&config).args(["--source", "synthetic:32x32/2"]));
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("per_frame") && err.trim().lines().count() == 1,
        "{err}"
    );
}

#[test]
fn compute_budget_sets_scenarios_per_frame_from_the_source_rate() {
    let dir = tempfile::tempdir().unwrap();
    // The synthetic camera runs at 30 fps here: 120 inferences/s = clean + 3 per frame.
    let recs = scheduled_run(dir.path(), "budget", "budget = 120", 8);
    assert_eq!(recs.len(), 8 * 4);
    let s = summary(&dir.path().join("budget"));
    assert_eq!(
        s["run"]["schedule"],
        "round-robin, 3 of 35 scenarios per frame + clean (budget 120 inferences/s at 30 \
         frames/s = clean + 3 per frame)"
    );
    // A folder of photos has no frame rate: the budget needs `fps`, said in one line.
    let config = dir.path().join("nofps.toml");
    std::fs::write(&config, "[pipeline]\nbudget = 50\n").unwrap();
    let out = dir.path().join("nofps");
    let o = run(quiet_run(&config)
        .arg("--source")
        .arg(photo("coffee.png"))
        .arg("--out")
        .arg(&out));
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("set `[pipeline] fps`") && err.trim().lines().count() == 1,
        "{err}"
    );
    // Nothing was evaluated: the run directory it made is gone again.
    assert!(!out.exists());
}
