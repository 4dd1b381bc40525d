//! `[metrics] ce_baseline`: CE, mCE and relative CE normalised by a baseline table other than the
//! built-in AlexNet one (the formulas of docs/imagenet-c.md#metrics with another denominator
//! model), end to end on the real model. Runs stay short: three photos, two corruptions × five
//! severities computed on the fly.

use std::path::{Path, PathBuf};

use crate::util::*;
// The 19 ImageNet-C corruptions in index order (the first 15 are the benchmark).
use robustream::key::CORRUPTIONS;
use serde_json::Value;

/// A baseline table in the format of configs/imagenet_c_alexnet.toml: every error `error`, clean
/// error `clean`, named `model`; `edit` changes the text (to break it).
fn table(model: &str, clean: f64, error: f64, edit: impl Fn(String) -> String) -> String {
    let mut t = format!("model = {model:?}\nclean = {clean}\nbenchmark = [");
    for (c, _) in &CORRUPTIONS[..15] {
        t += &format!("{c:?}, ");
    }
    t += "]\n[errors]\n";
    for (c, _) in CORRUPTIONS {
        t += &format!("{c} = [{error}, {error}, {error}, {error}, {error}]\n");
    }
    edit(t)
}

/// A run config in `dir` with the baseline table at `tables/baseline.toml` (written from `text`),
/// named relative to the config, and a manifest of three labelled photos, one of them labelled
/// wrongly so that every scenario has a non-zero error.
fn setup(dir: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("tables")).unwrap();
    std::fs::write(dir.join("tables/baseline.toml"), text).unwrap();
    let rows = [
        format!("{},espresso", photo("coffee.png").display()),
        format!("{},tabby cat", photo("chelsea.png").display()),
        // Not a tripod: wrong under every scenario.
        format!("{},tripod", photo("rocket.jpg").display()),
    ];
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let source = manifest(dir, &rows);
    let config = dir.join("run.toml");
    std::fs::write(
        &config,
        format!(
            "scenarios = [\"corruption/gaussian_noise/*\", \"corruption/contrast/*\"]\n\
             [source]\npath = {:?}\n[metrics]\nce_baseline = \"tables/baseline.toml\"\n",
            source
        ),
    )
    .unwrap();
    config
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

#[test]
fn ce_is_normalised_by_the_configured_table_and_report_keeps_it() {
    let d = tempfile::tempdir().unwrap();
    let config = setup(d.path(), &table("Half-net", 0.25, 0.5, |t| t));
    let out = d.path().join("run");
    let o = run(quiet_run(&config).arg("--out").arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));

    let s = summary(&out);
    let ic = &s["metrics"]["imagenet_c"];
    assert_eq!(ic["baseline"], "Half-net", "{ic}");
    assert!(
        ic["normalisation"]
            .as_str()
            .unwrap()
            .starts_with("Half-net top-1 errors per corruption and severity, clean error 0.25 ("),
        "{ic}"
    );
    assert_eq!(
        ic["baseline_table"]["file"],
        d.path().join("tables/baseline.toml").display().to_string()
    );
    // Per corruption: CE = Σ_s error / (5 × 0.5), relative CE = Σ_s (error − clean error) /
    // (5 × (0.5 − 0.25)), the errors being 1 − the summary's own top-1 of each scenario.
    let top1 = |k: &str| f(&s["scenarios"][k]["top1"]);
    let clean_error = 1.0 - top1("clean");
    assert!((f(&ic["clean_error"]) - clean_error).abs() < 1e-12);
    for c in ["gaussian_noise", "contrast"] {
        let errors: Vec<f64> = (1..=5)
            .map(|sev| 1.0 - top1(&format!("corruption/{c}/{sev}")))
            .collect();
        assert!(errors.iter().all(|e| *e > 0.0), "{c}: {errors:?}");
        let sum: f64 = errors.iter().sum();
        let ce = f(&ic["ce"][c]);
        assert!(
            (ce - sum / 2.5).abs() < 1e-12,
            "{c}: CE {ce}, errors {errors:?}"
        );
        let rel = f(&ic["relative_ce"][c]);
        assert!(
            (rel - (sum - 5.0 * clean_error) / 1.25).abs() < 1e-12,
            "{c}: relative CE {rel}"
        );
    }
    assert!(ic["mce"].is_null(), "two of the 15 benchmark corruptions");
    // The terminal table and summary.md name the baseline.
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains(
            "ImageNet-C (Half-net = 100%): CE for 2 corruptions (2 of the 15 benchmark ones); \
             mCE needs all 15 × 5"
        ),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("## ImageNet-C (normalised by Half-net, docs/imagenet-c.md#metrics)"),
        "{md}"
    );

    // `report` rebuilds the metrics from records.jsonl against the same table, even after the
    // table file is gone (summary.json keeps it).
    std::fs::remove_file(d.path().join("tables/baseline.toml")).unwrap();
    let o = run(robustream().args(["report", "--format", "json"]).arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let again: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(again["metrics"], s["metrics"]);
    let o = run(robustream().args(["report", "--format", "md"]).arg(&out));
    assert!(text(&o.stdout).contains("ImageNet-C (Half-net = 100%)"));

    // `report --ce-baseline` re-reads the same records against another table: every error 0.25 and
    // clean 0.125 double every CE and relative CE.
    std::fs::write(
        d.path().join("tables/quarter.toml"),
        table("Quarter-net", 0.125, 0.25, |t| t),
    )
    .unwrap();
    let o = run(robustream()
        .args(["report", "--format", "json", "--ce-baseline"])
        .arg(d.path().join("tables/quarter.toml"))
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let quarter: Value = serde_json::from_slice(&o.stdout).unwrap();
    let q = &quarter["metrics"]["imagenet_c"];
    assert_eq!(q["baseline"], "Quarter-net", "{q}");
    for c in ["gaussian_noise", "contrast"] {
        for key in ["ce", "relative_ce"] {
            let (half, quarter) = (f(&ic[key][c]), f(&q[key][c]));
            assert!(
                (quarter - 2.0 * half).abs() < 1e-12,
                "{key} {c}: {quarter} vs {half}"
            );
        }
    }
    // The scenarios themselves are untouched; a bad table is one line and no report.
    assert_eq!(quarter["scenarios"], s["scenarios"]);
    let o = run(robustream()
        .args(["report", "--ce-baseline"])
        .arg(d.path().join("tables/missing.toml"))
        .arg(&out));
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--ce-baseline: ImageNet-C baseline table ")
            && err.contains("missing.toml: cannot be read ("),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn a_bad_table_fails_before_the_run_with_one_line() {
    let d = tempfile::tempdir().unwrap();
    // fog without its fifth severity.
    let config = setup(
        d.path(),
        &table("Half-net", 0.25, 0.5, |t| {
            t.replace(
                "fog = [0.5, 0.5, 0.5, 0.5, 0.5]",
                "fog = [0.5, 0.5, 0.5, 0.5]",
            )
        }),
    );
    let out = d.path().join("run");
    let o = run(quiet_run(&config).arg("--out").arg(&out));
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("run.toml: [metrics] ce_baseline: ImageNet-C baseline table ")
            && lines[0].contains("baseline.toml: `errors.fog` has 4 values; it needs five"),
        "{err}"
    );
    assert!(!out.join("records.jsonl").exists(), "{err}");
    // A missing file says so and where the path is taken from.
    std::fs::remove_file(d.path().join("tables/baseline.toml")).unwrap();
    let o = run(quiet_run(&config).arg("--out").arg(&out));
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("baseline.toml: cannot be read (")
            && err.contains("the path is relative to the config file"),
        "{err}"
    );
}
