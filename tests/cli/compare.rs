//! End-to-end: `robustream compare` on two real demo runs (EfficientNet-Lite0 through ONNX Runtime on
//! the demo photos), the baseline's model as shipped and a candidate whose preprocessing divides by
//! a far too small std (a broken model release): the output contract of docs/compare.md and the
//! gate's exit codes.

use std::collections::HashMap;
use std::path::Path;
use std::process::Output;

use crate::util::*;

/// Runs the demo config into `out`, with `model` instead of the config's when given.
fn demo_run(out: &Path, model: Option<&Path>) {
    let mut cmd = robustream();
    cmd.args(["run", "--quiet", "--config"])
        .arg(root().join("configs/demo.toml"))
        .arg("--out")
        .arg(out);
    if let Some(m) = model {
        cmd.arg("--model").arg(m);
    }
    assert!(run(&mut cmd).status.success());
}

fn compare(args: &[&str]) -> Output {
    robustream()
        .arg("compare")
        .args(args)
        .output()
        .expect("robustream runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited, not killed")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout)))
}

/// (baseline right, candidate right) per labelled frame of `scenario`, from the two records files.
fn pairs_from_records(a: &Path, b: &Path, scenario: &str) -> [u64; 4] {
    let right = |dir: &Path| -> HashMap<String, bool> {
        records(dir)
            .into_iter()
            .filter(|r| r["scenario"] == scenario && !r["truth"].is_null())
            .map(|r| {
                (
                    r["frame"].as_str().unwrap().to_string(),
                    r["pred"] == r["truth"],
                )
            })
            .collect()
    };
    let (ra, rb) = (right(a), right(b));
    assert_eq!(ra.len(), rb.len());
    let mut t = [0u64; 4];
    for (frame, a) in &ra {
        let b = rb[frame];
        t[match (*a, b) {
            (true, true) => 0,
            (true, false) => 1,
            (false, true) => 2,
            (false, false) => 3,
        }] += 1;
    }
    t
}

#[test]
fn compare_pairs_demo_runs_and_gates_a_broken_candidate() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("baseline"), d.path().join("candidate"));
    demo_run(&a, None);
    let broken = model_variant(d.path(), "std4.toml", |t| {
        t.replace("std = [128.0, 128.0, 128.0]", "std = [4.0, 4.0, 4.0]")
    });
    demo_run(&b, Some(&broken));
    let (pa, pb) = (path(&a), path(&b));

    // No rules: the table, exit 0.
    let o = compare(&[pa, pb]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let table = text(&o.stdout);
    assert!(
        table.contains("corruption/contrast/5") && table.contains("paired"),
        "{table}"
    );
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));

    // JSON: paired statistics that agree with the records.
    let o = compare(&[pa, pb, "--format", "json"]);
    assert_eq!(code(&o), 0);
    let j = json(&o);
    assert_eq!(j["compare"], 1);
    assert_eq!(j["baseline"]["kind"], "run");
    assert_eq!(j["candidate"]["records"], 99);
    let clean = &j["scenarios"]["clean"]["top1"];
    assert_eq!(clean["paired"], true, "{clean}");
    let [both, b_only, c_only, neither] = pairs_from_records(&a, &b, "clean");
    let pairs = &clean["pairs"];
    assert_eq!(pairs["both"], both);
    assert_eq!(pairs["baseline_only"], b_only);
    assert_eq!(pairs["candidate_only"], c_only);
    assert_eq!(pairs["neither"], neither);
    let n = (both + b_only + c_only + neither) as f64;
    let diff = clean["diff"].as_f64().unwrap();
    assert!((diff - (c_only as f64 - b_only as f64) / n).abs() < 1e-12);
    assert!(
        diff < -0.02,
        "the broken preprocessing costs clean accuracy: {clean}"
    );
    let p = clean["p"].as_f64().unwrap();
    assert!(p > 0.0 && p <= 1.0, "{p}");
    let ci = clean["ci95"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= diff && diff <= ci[1].as_f64().unwrap());
    assert!(j["gate"]["rules"].as_array().unwrap().is_empty());

    // A rule that must fire: the gate's code, the numbers on stderr and in the JSON.
    let rule = "top1_drop[clean]>0.02";
    let out = d.path().join("gate.json");
    let o = compare(&[
        pa,
        pb,
        "--fail-on",
        rule,
        "--format",
        "json",
        "--out",
        path(&out),
    ]);
    assert_eq!(code(&o), 3, "{}", text(&o.stderr));
    assert!(o.stdout.is_empty(), "--out takes the output");
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains(&format!("compare: FAIL `{rule}`: clean top1_drop ")),
        "{stderr}"
    );
    assert!(stderr.contains("McNemar p = "), "{stderr}");
    assert!(
        stderr.contains("gate failed: 1 of 1 rule fired (exit 3)"),
        "{stderr}"
    );
    let g: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(g["gate"]["failed"], serde_json::json!([rule]));
    assert_eq!(g["gate"]["status"], "fail");
    assert_eq!(g["gate"]["exit"], 3);
    let hit = &g["gate"]["rules"][0]["fired"][0];
    assert_eq!(hit["item"], "clean");
    assert!(
        (hit["value"].as_f64().unwrap() + diff).abs() < 1e-12,
        "{hit}"
    );

    // At alpha 0.05 seven frames cannot make McNemar significant (p ≥ 2/2⁵ with at most five
    // discordant pairs one way): the rule is held back, and says so.
    let o = compare(&[pa, pb, "--fail-on", rule, "--alpha", "0.05"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("not significant at --alpha 0.05: clean"),
        "{}",
        text(&o.stderr)
    );

    // Malformed rules and a bad alpha: usage errors, one line naming the rule and the fix.
    for bad in ["top1_drop>", "top1_dorp>0.02", "mce>+1.0"] {
        let o = compare(&[pa, pb, "--fail-on", bad]);
        assert_eq!(code(&o), 2, "{bad}");
        let e = text(&o.stderr);
        assert!(
            e.starts_with(&format!("error: --fail-on rule `{bad}`: ")),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(o.stdout.is_empty());
    }
    assert_eq!(code(&compare(&[pa, pb, "--alpha", "5"])), 2);

    // The same run against itself: no difference, p = 1 everywhere.
    let o = compare(&[
        pa,
        pa,
        "--format",
        "json",
        "--fail-on",
        "top1_drop>0,top5_drop>0",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let j = json(&o);
    for (key, s) in j["scenarios"].as_object().unwrap() {
        for acc in ["top1", "top5"] {
            assert_eq!(s[acc]["diff"], 0.0, "{key} {acc}");
            assert_eq!(s[acc]["p"], 1.0, "{key} {acc}");
            assert_eq!(s[acc]["paired"], true, "{key} {acc}");
        }
    }
    for (id, m) in j["metrics"].as_object().unwrap() {
        assert!(m["diff"].is_null() || m["diff"] == 0.0, "{id}: {m}");
    }

    // HTML: one self-contained file.
    let page = d.path().join("compare.html");
    let o = compare(&[pa, pb, "--format", "html", "--out", path(&page)]);
    assert_eq!(code(&o), 0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("corruption/contrast/5"));
    for banned in ["<script", "http", "<link", "<img", "@import"] {
        assert!(!html.contains(banned), "{banned} in the page");
    }

    // Markdown for a CI job summary.
    let o = compare(&[pa, pb, "--format", "md"]);
    assert!(text(&o.stdout).contains("| clean |"));

    // A checked-in summary.json as the baseline: unpaired, and a metric the demo cannot give (its
    // plan has 2 of ImageNet-C's 15 corruptions, so no mCE) cannot be checked: exit 4.
    let summary = a.join("summary.json");
    let o = compare(&[
        path(&summary),
        pb,
        "--format",
        "json",
        "--fail-on",
        "mce>0.01",
    ]);
    assert_eq!(code(&o), 4, "{}", text(&o.stderr));
    let j = json(&o);
    assert_eq!(j["baseline"]["kind"], "summary");
    let clean = &j["scenarios"]["clean"]["top1"];
    assert_eq!(clean["paired"], false);
    assert!(clean["p"].is_null());
    assert!(clean["ci95"].is_array());
    assert!(
        clean["unpaired_reason"]
            .as_str()
            .unwrap()
            .contains("summary")
    );
    assert_eq!(j["gate"]["unchecked"], serde_json::json!(["mce>0.01"]));
    assert!(text(&o.stderr).contains("CANNOT CHECK `mce>0.01`"));

    // Another plan: the scenarios in both are compared, the others listed; a rule on scenarios the
    // candidate lacks cannot be checked (exit 4), never passes silently.
    let short = d.path().join("contrast_only");
    let o = run(robustream()
        .args([
            "run",
            "--quiet",
            "--scenarios",
            "corruption/contrast",
            "--config",
        ])
        .arg(root().join("configs/demo.toml"))
        .arg("--out")
        .arg(&short));
    assert!(o.status.success());
    let o = compare(&[
        pa,
        path(&short),
        "--format",
        "json",
        "--fail-on",
        "top1_drop[corruption/gaussian_noise/*]>0.5",
    ]);
    assert_eq!(code(&o), 4, "{}", text(&o.stderr));
    let j = json(&o);
    let only: Vec<&str> = j["only_baseline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(only.len(), 5, "{only:?}");
    assert!(
        only.iter()
            .all(|k| k.starts_with("corruption/gaussian_noise/"))
    );
    assert_eq!(j["scenarios"].as_object().unwrap().len(), 6);
    assert_eq!(
        j["scenarios"]["corruption/contrast/3"]["top1"]["paired"],
        true
    );
    assert!(text(&o.stderr).contains("not in the candidate's plan"));

    // A side that is not there: an error (1) naming it.
    let o = compare(&[path(&d.path().join("nope")), pb]);
    assert_eq!(code(&o), 1);
    assert!(
        text(&o.stderr).starts_with("error: baseline "),
        "{}",
        text(&o.stderr)
    );
}
