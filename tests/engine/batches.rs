//! The engine's batches as a run sees them (docs/output.md#batchescsv): `batches.csv` holds a
//! line per batch (and per warm-up run on the engine thread) that adds up to the records, and
//! `run.batches` sums it; a live source under the `plan` shape policy runs one shape only.

use std::path::Path;

use crate::util::*;

/// `batches.csv` as rows of named fields.
fn batch_lines(dir: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("batches.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    assert_eq!(
        header.join(","),
        "batch,kind,start_s,rows,padded,shapes,calls_ms,shape_changes,gap_ms,queue_p50_ms,\
         queue_max_ms,infer_ms"
    );
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "{l}");
            header
                .iter()
                .cloned()
                .zip(fields.iter().map(|f| f.to_string()))
                .collect()
        })
        .collect()
}

fn num(line: &std::collections::BTreeMap<String, String>, key: &str) -> f64 {
    line[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key} in {line:?}"))
}

#[test]
fn an_offline_run_logs_every_batch_and_they_add_up_to_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let photos = dir.path().join("photos");
    std::fs::create_dir(&photos).unwrap();
    for p in ["coffee.png", "chelsea.png", "rocket.jpg"] {
        std::fs::copy(photo(p), photos.join(p)).unwrap();
    }
    let out = dir.path().join("run");
    // 3 frames × 6 variants in batches of up to 4, split into 1, 2, 4 on the CPU.
    let o = run(robustream()
        .args(["run", "--quiet", "--scenarios", "corruption/contrast/*"])
        .args(["--batch", "4", "--workers", "2", "--model"])
        .arg(model())
        .arg("--source")
        .arg(&photos)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let records = records(&out);
    assert_eq!(records.len(), 18);
    let lines = batch_lines(&out);
    // No warm-up on the engine thread on the CPU by default.
    assert!(lines.iter().all(|l| l["kind"] == "batch"), "{lines:?}");
    let rows: f64 = lines.iter().map(|l| num(l, "rows")).sum();
    assert_eq!(rows as usize, records.len());
    let mut previous: Option<String> = None;
    let mut changes = 0;
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(num(l, "batch") as usize, i);
        let shapes: Vec<usize> = l["shapes"].split('+').map(|s| s.parse().unwrap()).collect();
        assert!(shapes.iter().all(|s| [1, 2, 4].contains(s)), "{l:?}");
        // Split: the calls hold the rows exactly.
        assert_eq!(
            shapes.iter().sum::<usize>(),
            num(l, "rows") as usize,
            "{l:?}"
        );
        assert_eq!(num(l, "padded"), 0.0);
        assert_eq!(l["calls_ms"].split('+').count(), shapes.len());
        for s in &shapes {
            let s = s.to_string();
            changes += usize::from(previous.as_ref().is_some_and(|p| *p != s));
            previous = Some(s);
        }
        assert!(num(l, "infer_ms") > 0.0);
        assert!(num(l, "queue_max_ms") >= num(l, "queue_p50_ms"));
        // The first batch has no gap before it; every later one does.
        assert_eq!(l["gap_ms"].is_empty(), i == 0, "{l:?}");
    }
    let batches = &summary(&out)["run"]["batches"];
    assert_eq!(batches["count"], lines.len(), "{batches}");
    assert_eq!(batches["rows"], records.len());
    assert_eq!(batches["shape_changes"], changes);
    assert!(batches["infer_ms"]["max"].as_f64().unwrap() > 0.0);
    let by_shape = batches["by_shape"].as_object().unwrap();
    let calls: u64 = by_shape
        .values()
        .map(|v| v["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(batches["calls"], calls);
    let after: u64 = by_shape
        .values()
        .map(|v| v["after_change"].as_u64().unwrap())
        .sum();
    assert_eq!(after as usize, changes);
}

/// A live synthetic camera at 20 fps for two seconds with `[engine]` `extra`.
fn live_run(dir: &Path, engine: &str) -> std::path::PathBuf {
    let config = dir.join("live.toml");
    std::fs::write(
        &config,
        format!(
            "scenarios = [\"corruption/contrast/*\"]\n[source]\npath = \"synthetic\"\n\
             kind = \"synthetic\"\n[source.synthetic]\nwidth = 96\nheight = 96\nfps = 20\n\
             realtime = true\n[pipeline]\nmax_batch = 4\n[engine]\n{engine}\n"
        ),
    )
    .unwrap();
    let out = dir.join("run");
    let o = run(quiet_run(&config)
        .args(["--duration", "2s", "--out"])
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    out
}

#[test]
fn a_live_source_under_the_plan_policy_runs_one_shape_warmed_on_the_engine_thread() {
    let dir = tempfile::tempdir().unwrap();
    // 6 variants a frame, batches of at most 4: two batches of 3.
    let out = live_run(
        dir.path(),
        "live_shapes = \"plan\"\nengine_thread_warmup = 2",
    );
    let run = &summary(&out)["run"];
    let engine = run["engine"].as_str().unwrap();
    assert!(
        engine.contains("batch sizes 3 (pad)")
            && engine.contains("live shapes: one size, 3 (a frame's 6 variants in 2 batches"),
        "{engine}"
    );
    assert_eq!(run["max_batch"], 3);
    let lines = batch_lines(&out);
    let (warm, batches): (Vec<_>, Vec<_>) = lines.iter().partition(|l| l["kind"] == "warmup");
    // Two rounds of the one size, before any batch.
    assert_eq!(warm.len(), 2, "{lines:?}");
    assert!(lines[..2].iter().all(|l| l["kind"] == "warmup"));
    assert!(!batches.is_empty(), "{lines:?}");
    assert!(
        lines
            .iter()
            .all(|l| l["shapes"] == "3" && l["shape_changes"] == "0"),
        "{lines:?}"
    );
    let stats = &run["batches"];
    assert_eq!(stats["shape_changes"], 0);
    assert_eq!(
        stats["engine_thread_warmup_ms"]["3"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{stats}"
    );
}

#[test]
fn given_batch_sizes_win_over_the_live_shape_policy() {
    let dir = tempfile::tempdir().unwrap();
    let out = live_run(
        dir.path(),
        "live_shapes = \"plan\"\nbatch_sizes = [1, 2, 4]",
    );
    let run = &summary(&out)["run"];
    let engine = run["engine"].as_str().unwrap();
    assert!(
        engine.contains("batch sizes 1, 2, 4") && !engine.contains("live shapes"),
        "{engine}"
    );
    assert_eq!(run["max_batch"], 4);
}
