//! `robustream bench` as a user runs it, on the real model and ONNX Runtime: the figures are
//! consistent with each other (no timing is asserted), MLPerf's framings and the paced one work, and
//! bad arguments give one clear line.

use crate::util::*;
use serde_json::Value;

fn bench(args: &[&str], json: &std::path::Path) -> (Value, String) {
    let o = run(robustream()
        .arg("bench")
        .arg("--model")
        .arg(model())
        .args(["--threads", "1", "--warmup", "0"])
        .args(args)
        .arg("--json")
        .arg(json));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (v, text(&o.stdout))
}

fn stats_are_ordered(s: &Value, n: u64) {
    assert_eq!(s["n"], n, "{s}");
    let f = |k: &str| s[k].as_f64().unwrap();
    let order = ["min", "median", "p90", "p95", "p99", "max"];
    for w in order.windows(2) {
        assert!(f(w[0]) <= f(w[1]), "{} > {}: {s}", w[0], w[1]);
    }
    assert!(
        f("min") > 0.0 && f("min") <= f("mean") && f("mean") <= f("max"),
        "{s}"
    );
}

#[test]
fn single_stream_reports_p90_latency_of_one_sample() {
    let dir = tempfile::tempdir().unwrap();
    let (v, out) = bench(&["--iterations", "12"], &dir.path().join("b.json"));
    assert_eq!(v["mode"], "single-stream");
    assert_eq!(
        (v["batch"].as_u64(), v["iterations"].as_u64()),
        (Some(1), Some(12))
    );
    assert_eq!(v["samples"], 12);
    assert!(v["warmup_iterations"].as_u64().unwrap() >= 1);
    for k in ["latency_ms", "host_preprocess_ms", "inference_ms"] {
        stats_are_ordered(&v[k], 12);
    }
    // Total = host + inference per iteration, so its mean is their sum.
    let mean = |k: &str| v[k]["mean"].as_f64().unwrap();
    let sum = mean("host_preprocess_ms") + mean("inference_ms");
    assert!(
        (mean("latency_ms") - sum).abs() < 1e-6 * sum.max(1.0),
        "{v}"
    );
    assert!(v["h2d_compute_d2h_ms"].is_null());
    let qps = v["throughput_qps"].as_f64().unwrap();
    let wall = v["wall_s"].as_f64().unwrap();
    assert!((qps * wall - 12.0).abs() < 1e-6, "{v}");
    assert!(v["frame"].as_str().unwrap().contains("coffee.png"), "{v}");
    assert!(
        out.contains("MLPerf single-stream: 90th-percentile latency"),
        "{out}"
    );
    assert!(out.contains("H2D / compute / D2H: not exposed"), "{out}");
    // The one-off first run of the batch size, host preprocessing on all cores, CPU use.
    assert!(v["engine_warmup_ms"]["1"].as_f64().unwrap() > 0.0, "{v}");
    let pre = &v["preprocess"];
    assert!(pre["threads"].as_u64().unwrap() >= 1, "{v}");
    assert!(pre["samples_per_s"].as_f64().unwrap() > 0.0, "{v}");
    stats_are_ordered(&pre["per_sample_ms"], pre["samples"].as_u64().unwrap());
    let u = v["cpu"]["utilisation"].as_f64().unwrap();
    assert!(u > 0.0 && u <= 1.05, "{v}");
    // 12 iterations: too short for MLPerf and for the tail percentiles, and said so.
    let trust = &v["trust"];
    assert_eq!(trust["meets_mlperf_minimums"], false);
    assert_eq!(trust["mlperf_min_samples"], 1024);
    let warnings: Vec<&str> = trust["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains("MLPerf's minimum")),
        "{v}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("12 timed iterations")),
        "{v}"
    );
    assert!(
        out.contains("warning: shorter than MLPerf's minimum run"),
        "{out}"
    );
    // Where and when it ran, with which versions.
    assert!(v["machine"]["cores"].as_u64().unwrap() >= 1, "{v}");
    assert!(v["onnxruntime"].as_str().unwrap().contains("1.31"), "{v}");
    assert_eq!(v["robustream"], env!("CARGO_PKG_VERSION"));
    let utc = v["started_utc"].as_str().unwrap();
    assert!(
        utc.len() == 20 && utc.ends_with('Z') && utc.starts_with("20"),
        "{utc}"
    );
}

#[test]
fn offline_counts_samples_per_batch_and_stops_on_duration() {
    let dir = tempfile::tempdir().unwrap();
    let (v, out) = bench(
        &["--mode", "offline", "--batch", "4", "--iterations", "3"],
        &dir.path().join("o.json"),
    );
    assert_eq!(
        (v["batch"].as_u64(), v["samples"].as_u64()),
        (Some(4), Some(12))
    );
    let per_s = v["samples_per_s"].as_f64().unwrap();
    assert!((per_s - 4.0 * v["throughput_qps"].as_f64().unwrap()).abs() < 1e-6 * per_s);
    // Inputs prepared before timing: the timed figure is the engine's alone.
    assert!(v["host_preprocess_ms"].is_null(), "{v}");
    assert_eq!(v["latency_ms"], v["inference_ms"]);
    assert!(v["engine_warmup_ms"]["4"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["trust"]["mlperf_min_samples"], 24576);
    assert!(
        v["engine"].as_str().unwrap().contains("batch sizes 4"),
        "{v}"
    );
    assert!(out.contains("MLPerf offline:"), "{out}");
    // A duration bound: at least one iteration, and the wall time reaches the bound.
    let (d, _) = bench(
        &["--mode", "offline", "--batch", "2", "--duration", "0.3"],
        &dir.path().join("d.json"),
    );
    assert!(d["iterations"].as_u64().unwrap() >= 1);
    assert!(d["wall_s"].as_f64().unwrap() >= 0.3, "{d}");
}

#[test]
fn bad_arguments_are_one_clear_line() {
    let o = run(robustream()
        .args(["bench", "--model"])
        .arg(model())
        .arg("--duration=-1"));
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("--duration -1"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let o = run(robustream().args(["bench", "--model"]).arg(model()).args([
        "--iterations",
        "1",
        "--image",
        "/no/such.png",
    ]));
    let err = text(&o.stderr);
    assert!(!o.status.success() && err.contains("/no/such.png"), "{err}");
}

#[test]
fn paced_issues_one_sample_per_slot_and_counts_late_and_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (v, out) = bench(
        &["--mode", "paced", "--fps", "50", "--duration", "1"],
        &dir.path().join("p.json"),
    );
    assert_eq!(v["mode"], "paced");
    assert_eq!(v["batch"], 1);
    let p = &v["paced"];
    let u = |x: &Value| x.as_u64().unwrap();
    let f = |x: &Value| x.as_f64().unwrap();
    // The slots scheduled in the first second at 50 fps, each issued or dropped: however busy the
    // machine, their count is fps × duration.
    let issued = u(&v["iterations"]);
    assert_eq!(u(&p["slots"]), 50, "{p}");
    assert_eq!(issued + u(&p["dropped"]), 50, "{p}");
    assert!(issued >= 1 && u(&v["samples"]) == issued, "{v}");
    assert_eq!((f(&p["fps"]), f(&p["period_ms"])), (50.0, 20.0));
    // Every issued sample either waited for its slot or started late; a late one by under a period
    // (an older slot is dropped instead).
    let late = u(&p["late"]);
    assert_eq!(u(&p["late_ms"]["n"]), late, "{p}");
    assert_eq!(u(&p["wake_ms"]["n"]) + late, issued, "{p}");
    if late > 0 {
        stats_are_ordered(&p["late_ms"], late);
        assert!(f(&p["late_ms"]["max"]) <= 20.0 + 1e-6, "{p}");
    }
    assert_eq!(u(&p["idle_gap_ms"]["n"]), issued, "{p}");
    for k in ["latency_ms", "host_preprocess_ms", "inference_ms"] {
        stats_are_ordered(&v[k], issued);
    }
    // From the scheduled issue to the result holds the sample's host stage and inference.
    let mean = |k: &str| f(&v[k]["mean"]);
    assert!(
        mean("latency_ms") >= mean("host_preprocess_ms") + mean("inference_ms") - 1e-9,
        "{v}"
    );
    // The figure of merit, first: the p99 latency.
    let p99 = &v["latency_ms"]["p99"];
    assert_eq!(&p["p99_latency_ms"], p99);
    assert_eq!(&v["figure_of_merit"]["value"], p99);
    assert_eq!(v["figure_of_merit"]["unit"], "ms");
    assert!(v["multi_stream"].is_null(), "{v}");
    assert_eq!(v["trust"]["mlperf_min_queries"], 662);
    assert!(out.contains("mode: paced at 50 fps, batch 1"), "{out}");
    assert!(
        out.contains("paced at 50 fps: 99th-percentile latency"),
        "{out}"
    );
    for row in ["idle gap", "late start", "timer wake-up"] {
        assert!(out.contains(row), "{out}");
    }
    assert!(out.contains(" of 50 slots dropped; "), "{out}");
    assert!(
        out.contains(
            match late {
                0 => "slots dropped; none late".to_string(),
                n => format!("slots dropped; {n} late (by p50"),
            }
            .as_str()
        ),
        "{out}"
    );
}

#[test]
fn fps_that_does_not_fit_the_mode_is_one_usage_line() {
    let cases: [(&[&str], &str); 6] = [
        (&["--mode", "paced"], "--mode paced needs --fps"),
        (
            &["--mode", "paced", "--fps", "0"],
            "--fps 0: not a frame rate",
        ),
        (
            &["--mode", "paced", "--fps", "-5"],
            "--fps -5: not a frame rate",
        ),
        (
            &["--mode", "paced", "--fps", "fast"],
            "--fps fast: not a frame rate",
        ),
        (
            &["--mode", "paced", "--fps", "inf"],
            "--fps inf: not a frame rate",
        ),
        (
            &["--mode", "offline", "--fps", "30"],
            "--fps is only for --mode paced",
        ),
    ];
    for (args, want) in cases {
        let o = robustream()
            .args(["bench", "--model"])
            .arg(model())
            .args(args)
            .output()
            .unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // Single-stream (the default mode) refuses it too, and says what to do.
    let o = robustream()
        .args(["bench", "--model"])
        .arg(model())
        .args(["--fps", "30"])
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--mode single-stream") && err.contains("add --mode paced"),
        "{err}"
    );
}

#[test]
fn multi_stream_reports_query_latency_of_eight_samples() {
    let dir = tempfile::tempdir().unwrap();
    let (v, out) = bench(
        &["--mode", "multi-stream", "--iterations", "3"],
        &dir.path().join("m.json"),
    );
    assert_eq!(v["mode"], "multi-stream");
    // MLPerf's 8 samples per query when --batch is not given.
    assert_eq!(
        (
            v["batch"].as_u64(),
            v["iterations"].as_u64(),
            v["samples"].as_u64()
        ),
        (Some(8), Some(3), Some(24))
    );
    let m = &v["multi_stream"];
    assert_eq!(
        (m["samples_per_query"].as_u64(), m["queries"].as_u64()),
        (Some(8), Some(3))
    );
    for k in ["latency_ms", "host_preprocess_ms", "inference_ms"] {
        stats_are_ordered(&v[k], 3);
    }
    // A query's latency is its samples' host stage plus its one batched inference.
    let mean = |k: &str| v[k]["mean"].as_f64().unwrap();
    let sum = mean("host_preprocess_ms") + mean("inference_ms");
    assert!(
        (mean("latency_ms") - sum).abs() < 1e-6 * sum.max(1.0),
        "{v}"
    );
    let p99 = &v["latency_ms"]["p99"];
    assert_eq!(&m["p99_query_latency_ms"], p99);
    assert_eq!(&v["figure_of_merit"]["value"], p99);
    assert_eq!(v["figure_of_merit"]["name"], "p99 latency of a query");
    assert!(v["engine_warmup_ms"]["8"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["paced"].is_null(), "{v}");
    // MLPerf's multi-stream minimums: 662 queries, 600 s.
    let trust = &v["trust"];
    assert_eq!(
        (
            trust["mlperf_min_queries"].as_u64(),
            trust["mlperf_min_samples"].as_u64()
        ),
        (Some(662), Some(662 * 8))
    );
    assert!(
        out.contains("MLPerf multi-stream: 99th-percentile query latency"),
        "{out}"
    );
    assert!(out.contains("latency per query of 8 samples"), "{out}");
    assert!(
        out.contains("3 queries of 8 samples") && out.contains("662 queries"),
        "{out}"
    );
}
