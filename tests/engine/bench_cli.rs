//! `robustream bench` as a user runs it, on the real model and ONNX Runtime: the figures are
//! consistent with each other (no timing is asserted), both MLPerf framings work, and bad arguments
//! give one clear line.

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
