//! `robustream bench` as a user runs it, on the real model and ONNX Runtime: the figures are
//! consistent with each other (no timing is asserted), both MLPerf framings work, and bad arguments
//! give one clear line.

mod common;

use common::*;
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
