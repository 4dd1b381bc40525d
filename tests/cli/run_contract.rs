//! End-to-end: the real EfficientNet-Lite0 through real ONNX Runtime on the real demo photos, checked
//! against the output contract, docs/output.md.

use crate::util::*;

const DEMO_PHOTOS: usize = 9;
/// The per-stage timing keys the contract promises (spelled out here, not taken from the library).
const STAGES: [&str; 8] = [
    "decode",
    "wait",
    "scenario",
    "preprocess",
    "queue",
    "infer",
    "total",
    "age",
];
const DEMO_SCENARIOS: usize = 11; // clean + gaussian_noise 1..5 + contrast 1..5

#[test]
fn demo_run_writes_the_contract_and_classifies_coffee_as_espresso() {
    let out = tempfile::tempdir().unwrap();
    let o = run(robustream()
        .args(["run", "--quiet", "--config"])
        .arg(root().join("configs/demo.toml"))
        .arg("--out")
        .arg(out.path()));
    assert!(o.status.success());
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains("corruption/contrast/5"),
        "final table on stdout:\n{stdout}"
    );

    let recs = records(out.path());
    assert_eq!(recs.len(), DEMO_PHOTOS * DEMO_SCENARIOS);
    for r in &recs {
        for key in ["frame", "scenario", "truth", "pred", "top5", "prob", "ms"] {
            assert!(r.get(key).is_some(), "record lacks `{key}`: {r}");
        }
        assert_eq!(r["top5"].as_array().unwrap().len(), 5);
        let probs: Vec<f64> = r["prob"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert!(
            probs.windows(2).all(|w| w[0] >= w[1]),
            "probabilities best first: {r}"
        );
        for stage in STAGES {
            assert!(r["ms"][stage].as_f64().unwrap() >= 0.0, "ms.{stage}: {r}");
        }
    }
    // Records come in source order, each frame's variants in plan order with clean first.
    assert_eq!(recs[0]["frame"], "coffee.png");
    assert_eq!(recs[0]["scenario"], "clean");
    assert_eq!(recs[DEMO_SCENARIOS]["frame"], "chelsea.png");
    let coffee = &recs[0];
    assert_eq!(coffee["truth"], 967);
    assert_eq!(coffee["pred"], 967, "coffee → espresso: {coffee}");
    // Reference: scripts/check_model.py (PIL Resize(256) + CenterCrop(224), Python onnxruntime) gives
    // espresso 0.9567; our Pillow-exact resampling must reproduce it, not just land near 0.96.
    let p = coffee["prob"][0].as_f64().unwrap();
    assert!(
        (p - 0.9567).abs() < 5e-4,
        "espresso probability 0.9567 as with PIL, got {p}"
    );
    // Photos without an honest ImageNet class have a null truth and still get predictions.
    let astronaut = recs.iter().find(|r| r["frame"] == "astronaut.png").unwrap();
    assert!(astronaut["truth"].is_null());

    let s = summary(out.path());
    // The contract's format number, first in the summary and in every record
    // (docs/output.md#format-changelog).
    let keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "format",
            "run",
            "frames",
            "scenarios",
            "metrics",
            "latency_ms"
        ]
    );
    assert_eq!(s["format"], robustream::contract::FORMAT);
    for r in &recs {
        assert_eq!(r.as_object().unwrap().keys().next().unwrap(), "format");
        assert_eq!(r["format"], robustream::contract::FORMAT);
    }
    assert_eq!(s["frames"]["read"], DEMO_PHOTOS as u64);
    assert_eq!(s["frames"]["skipped"], 0);
    assert_eq!(s["frames"]["dropped"], 0);
    let scen = s["scenarios"].as_object().unwrap();
    let keys: Vec<&String> = scen.keys().collect();
    assert_eq!(keys[0], "clean");
    assert_eq!(keys.len(), DEMO_SCENARIOS);
    for (k, v) in scen {
        assert_eq!(v["n"], DEMO_PHOTOS as u64, "{k}");
        for f in ["top1", "top5", "agreement"] {
            let x = v[f].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&x), "{k}.{f} = {x}");
        }
        let ci = v["top1_ci95"].as_array().unwrap();
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        let top1 = v["top1"].as_f64().unwrap();
        assert!(
            lo <= top1 && top1 <= hi,
            "{k}: CI [{lo}, {hi}] around {top1}"
        );
    }
    assert_eq!(scen["clean"]["drop"], 0.0);
    assert_eq!(scen["clean"]["agreement"], 1.0);
    // Contrast at severity 5 leaves almost nothing: the model must not do better than on clean.
    let clean = scen["clean"]["top1"].as_f64().unwrap();
    assert!(
        clean >= 5.0 / 7.0 - 1e-9,
        "clean top-1 on the 7 labelled photos: {clean}"
    );
    assert!(scen["corruption/contrast/5"]["drop"].as_f64().unwrap() > 0.0);
    for stage in STAGES {
        let l = &s["latency_ms"][stage];
        for q in ["p50", "p90", "p95", "p99", "max"] {
            assert!(l[q].as_f64().is_some(), "latency_ms.{stage}.{q}");
        }
        assert!(l["p50"].as_f64() <= l["max"].as_f64());
    }
    assert_eq!(s["run"]["end"], "completed");
    // ImageNet-C metrics for the two complete corruptions; no mCE without all 15.
    let ic = &s["metrics"]["imagenet_c"];
    let names: Vec<&str> = ic["ce"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, ["gaussian_noise", "contrast"]);
    assert!(ic["mce"].is_null() && ic["mce_all19"].is_null());
    assert_eq!(ic["incomplete"], serde_json::json!({}));
    let ce = ic["ce"]["contrast"].as_f64().unwrap();
    let errors: f64 = ic["errors"]["contrast"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_f64().unwrap())
        .sum();
    let top1_5 = scen["corruption/contrast/5"]["top1"].as_f64().unwrap();
    assert_eq!(ic["errors"]["contrast"][4].as_f64().unwrap(), 1.0 - top1_5);
    assert!((ce - errors / (0.64548 + 0.76150 + 0.88874 + 0.97760 + 0.99270)).abs() < 1e-9);
    let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(md.contains("corruption/gaussian_noise/3"));

    // `report` recomputes the same numbers from records.jsonl alone.
    let o = run(robustream()
        .args(["report", "--format", "json"])
        .arg(out.path()));
    assert!(o.status.success());
    let again: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(again["scenarios"], s["scenarios"]);
    assert_eq!(again["latency_ms"], s["latency_ms"]);
    assert_eq!(again["frames"], s["frames"]);
    assert_eq!(again["metrics"], s["metrics"]);
    let o = run(robustream()
        .args(["report", "--format", "csv"])
        .arg(out.path()));
    assert!(text(&o.stdout).lines().count() == DEMO_SCENARIOS + 1);
}

#[test]
fn a_run_repeats_exactly_whatever_the_worker_count_and_batch() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let common = |dir: &std::path::Path, workers: &str, batch: &str| {
        run(robustream()
            .args([
                "run",
                "--quiet",
                "--seed",
                "11",
                "--limit",
                "4",
                "--workers",
                workers,
                "--batch",
                batch,
            ])
            .args([
                "--scenarios",
                "corruption/gaussian_noise/3,corruption/contrast/2",
            ])
            .arg("--model")
            .arg(model())
            .arg("--source")
            .arg(photo("demo.csv"))
            .arg("--out")
            .arg(dir))
    };
    assert!(common(a.path(), "1", "1").status.success());
    assert!(common(b.path(), "3", "8").status.success());
    let (ra, rb) = (
        records_without_timings(a.path()),
        records_without_timings(b.path()),
    );
    assert_eq!(ra.len(), 12);
    assert_eq!(ra, rb);
    // A different seed changes the noisy variants' probabilities.
    let c = tempfile::tempdir().unwrap();
    assert!(
        run(robustream()
            .args([
                "run",
                "--quiet",
                "--seed",
                "12",
                "--limit",
                "1",
                "--scenarios",
                "corruption/gaussian_noise/3"
            ])
            .arg("--model")
            .arg(model())
            .arg("--source")
            .arg(photo("demo.csv"))
            .arg("--out")
            .arg(c.path()))
        .status
        .success()
    );
    let rc = records_without_timings(c.path());
    assert_eq!(rc[0], ra[0], "clean does not depend on the seed");
    assert_ne!(rc[1]["prob"], ra[1]["prob"], "noise does");
}

#[test]
fn apply_writes_the_pixels_the_pipeline_evaluates() {
    // `apply --model` on coffee.png, then classify that PNG with a model view that leaves 224×224
    // untouched: the probabilities must equal the run's record for coffee.png under the same scenario.
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("coffee.png");
    let o = run(robustream()
        .args([
            "apply",
            "--scenario",
            "corruption/gaussian_noise/2",
            "--seed",
            "5",
            "--model",
        ])
        .arg(model())
        .arg(photo("coffee.png"))
        .arg(&png));
    assert!(o.status.success());
    let img = image::open(&png).unwrap();
    assert_eq!((img.width(), img.height()), (224, 224));

    let identity_model = model_variant(dir.path(), "identity.toml", |d| {
        d.replace("resize_shorter = 256", "")
    });

    let a = dir.path().join("a");
    assert!(
        run(robustream()
            .args([
                "run",
                "--quiet",
                "--seed",
                "5",
                "--limit",
                "1",
                "--scenarios",
                "corruption/gaussian_noise/2"
            ])
            .arg("--model")
            .arg(model())
            .arg("--source")
            .arg(photo("demo.csv"))
            .arg("--out")
            .arg(&a))
        .status
        .success()
    );
    let b = dir.path().join("b");
    assert!(
        run(robustream()
            .args(["run", "--quiet", "--scenarios", "clean", "--batch", "1"])
            .arg("--model")
            .arg(&identity_model)
            .arg("--source")
            .arg(&png)
            .arg("--out")
            .arg(&b))
        .status
        .success()
    );
    let ra = records_without_timings(&a);
    let rb = records_without_timings(&b);
    assert_eq!(ra[1]["scenario"], "corruption/gaussian_noise/2");
    assert_eq!(ra[1]["top5"], rb[0]["top5"]);
    let pa: Vec<f64> = ra[1]["prob"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let pb: Vec<f64> = rb[0]["prob"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    for (x, y) in pa.iter().zip(&pb) {
        assert!((x - y).abs() < 1e-5, "{pa:?} vs {pb:?}");
    }
}

#[test]
fn scenarios_lists_keys_and_groups() {
    let o = run(robustream().arg("scenarios"));
    assert!(o.status.success());
    let s = text(&o.stdout);
    for want in [
        "clean",
        "corruption/gaussian_noise/1",
        "corruption/contrast/5",
        "demo",
        "imagenet-c",
        "imagenet-c-all",
        "imagenet-c/weather",
        "corruption/spatter/5",
    ] {
        assert!(
            s.lines().any(|l| l.trim_start().starts_with(want)),
            "missing {want}:\n{s}"
        );
    }
}

/// An installed binary (`cargo install --path .` copies it to `~/.cargo/bin`) run from an unrelated
/// folder finds ONNX Runtime and the frost textures in the set-up script's cache.
#[test]
fn an_installed_binary_works_from_any_directory() {
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let exe = bin.join("robustream");
    std::fs::copy(env!("CARGO_BIN_EXE_robustream"), &exe).unwrap();
    let elsewhere = d.path().join("work");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let cache = std::fs::canonicalize(assets()).unwrap();
    let out = elsewhere.join("run");
    let o = std::process::Command::new(&exe)
        .current_dir(&elsewhere)
        .env_remove("ORT_DYLIB_PATH")
        .env_remove("ROBUSTREAM_FROST_DIR")
        .env("ROBUSTREAM_CACHE", &cache)
        .args(["run", "--quiet", "--model"])
        .arg(cache.join("models/efficientnet_lite0.toml"))
        .arg("--source")
        .arg(cache.join("photos/coffee.png"))
        .args(["--scenarios", "corruption/frost/1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(summary(&out)["scenarios"]["corruption/frost/1"]["n"], 1);
    // Without the cache either, the line says where it looked and what to run.
    let o = std::process::Command::new(&exe)
        .current_dir(&elsewhere)
        .env_remove("ORT_DYLIB_PATH")
        .env("ROBUSTREAM_CACHE", d.path().join("no-cache"))
        .env("HOME", d.path())
        .args(["run", "--quiet", "--model"])
        .arg(cache.join("models/efficientnet_lite0.toml"))
        .arg("--source")
        .arg(cache.join("photos/coffee.png"))
        .arg("--out")
        .arg(elsewhere.join("run2"))
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no ONNX Runtime library")
            && err.contains("bash scripts/setup.sh")
            && err.contains("no-cache/lib/libonnxruntime.so"),
        "{err}"
    );
}
