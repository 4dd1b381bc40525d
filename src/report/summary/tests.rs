use super::*;
use crate::metrics::accuracy::{Z95, wilson_interval};
use crate::metrics::imagenet_c::BaselineTable;
use crate::metrics::in9::ChallengeTally;
use crate::metrics::tests::{frames, rec, timed};
use crate::metrics::volatility::InnerResults;
use crate::metrics::{Metrics, Record};
use crate::report::run_block::RunBlock;
use serde_json::json;

/// Asserts two summaries are equal up to float rounding in the last bit: serde_json's default
/// float parser is not always correctly rounded, so a summary read back from JSON may differ from
/// the one written by one unit in the last place.
pub(crate) fn assert_same(a: &Summary, b: &Summary) {
    fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
        use serde_json::Value::{Array, Number, Object};
        match (a, b) {
            (Number(x), Number(y)) => match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => (x - y).abs() <= 1e-15 * x.abs().max(y.abs()).max(1.0),
                _ => x == y,
            },
            (Array(x), Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
            (Object(x), Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|((kx, x), (ky, y))| kx == ky && same(x, y))
            }
            _ => a == b,
        }
    }
    let (ja, jb) = (
        serde_json::to_value(a).unwrap(),
        serde_json::to_value(b).unwrap(),
    );
    assert!(same(&ja, &jb), "{ja:#}\n!=\n{jb:#}");
}

#[test]
fn assert_same_tolerates_only_the_last_bit() {
    let s = streamed(&["clean", "fog"], &timed_frames());
    let mut t = s.clone();
    let top1 = t.scenarios[1].1.top1.unwrap();
    t.scenarios[1].1.top1 = Some(f64::from_bits(top1.to_bits() + 1));
    assert_same(&s, &t);
    t.scenarios[1].1.top1 = Some(top1 + 1e-9);
    assert!(std::panic::catch_unwind(|| assert_same(&s, &t)).is_err());
}

fn keys(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The hand-checked frames of `metrics::tests::frames`, with timings on some records.
fn timed_frames() -> Vec<Vec<Record>> {
    let mut fs = frames();
    fs[0][0] = timed(
        fs[0][0].clone(),
        &[("decode", 1.0), ("infer", 2.5), ("total", 10.0)],
    );
    fs[0][1] = timed(
        fs[0][1].clone(),
        &[("decode", 1.0), ("infer", 3.5), ("total", 12.0)],
    );
    fs[1][2] = timed(fs[1][2].clone(), &[("infer", 4.0), ("total", 8.0)]);
    fs
}

/// Two frames over the scenario keys `order` (truth 1): `a` right everywhere, `b` right on
/// `clean` only.
fn right_and_wrong(order: &[String]) -> Vec<Vec<Record>> {
    let frame = |id: &str, right: bool| -> Vec<Record> {
        order
            .iter()
            .map(|k| rec(id, k, Some(1), &[if right || k == "clean" { 1 } else { 2 }]))
            .collect()
    };
    vec![frame("a", true), frame("b", false)]
}

fn streamed(order: &[&str], fs: &[Vec<Record>]) -> Summary {
    let mut m = Metrics::new(keys(order));
    for f in fs {
        m.add_frame(f);
    }
    let run = json!({"config": "configs/demo.toml", "model": "resnet50", "seed": 7, "plan": order});
    Summary::from_metrics(
        &m,
        RunBlock::from_json(run),
        FrameCounts {
            read: 5,
            skipped: 1,
            dropped: 0,
            lost: 0,
            ..FrameCounts::default()
        },
    )
}

#[test]
fn summary_numbers_by_hand() {
    let s = streamed(&["clean", "fog", "noise"], &timed_frames());
    let keys: Vec<&str> = s.scenarios.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, vec!["clean", "fog", "noise"]);
    let fog = &s.scenarios[1].1;
    assert_eq!((fog.n, fog.n_labelled), (4, 3));
    assert_eq!(fog.top1, Some(2.0 / 3.0));
    let (lo, hi) = wilson_interval(2, 3, Z95);
    assert_eq!(fog.top1_ci95, Some([lo, hi]));
    assert_eq!((fog.top5, fog.drop), (Some(1.0), Some(0.0)));
    assert_eq!(fog.agreement, Some(1.0 / 3.0));
    let lat: Vec<&str> = s.latency_ms.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(lat, vec!["decode", "infer", "total"]);
    assert_eq!(s.latency_ms[1].1.max, 4.0);
    assert_eq!(s.latency_ms[1].1.p50, 3.5);
}

#[test]
fn json_contract() {
    let s = streamed(&["clean", "fog", "noise"], &timed_frames());
    let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    let top: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        top,
        vec![
            "format",
            "run",
            "frames",
            "scenarios",
            "metrics",
            "latency_ms"
        ]
    );
    assert_eq!(v["format"], crate::contract::FORMAT);
    assert_eq!(v["frames"], json!({"read": 5, "skipped": 1, "dropped": 0}));
    assert_eq!(v["metrics"], json!({}));
    assert_eq!(v["run"]["model"], "resnet50");
    let clean = &v["scenarios"]["clean"];
    let fields: Vec<&str> = clean
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        vec![
            "n",
            "n_labelled",
            "top1",
            "top1_ci95",
            "top5",
            "drop",
            "agreement",
            "flip",
            "flip_excess"
        ]
    );
    assert_eq!(clean["n"], 3);
    assert_eq!(clean["top1"], 0.5);
    assert_eq!(clean["top1_ci95"].as_array().unwrap().len(), 2);
    let order: Vec<&str> = v["scenarios"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(order, vec!["clean", "fog", "noise"]);
    let lat: Vec<&str> = v["latency_ms"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(lat, vec!["decode", "infer", "total"]);
    assert_eq!(
        v["latency_ms"]["infer"],
        json!({"p50": 3.5, "p90": 4.0, "p95": 4.0, "p99": 4.0, "max": 4.0})
    );
    // Round trip (numbers to the last bit or so: see `assert_same`).
    assert_same(&Summary::from_json(&s.to_json()).unwrap(), &s);
}

#[test]
fn nulls_where_undefined() {
    let mut m = Metrics::new(keys(&["clean", "fog"]));
    m.add_frame(&[rec("a", "fog", None, &[1])]);
    let s = Summary::from_metrics(&m, RunBlock::from_json(json!({})), FrameCounts::default());
    let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(
        v["scenarios"]["fog"],
        json!({"n": 1, "n_labelled": 0, "top1": null, "top1_ci95": null, "top5": null, "drop": null, "agreement": null, "flip": null, "flip_excess": null})
    );
    assert_eq!(v["scenarios"]["clean"]["n"], 0);
    assert_eq!(v["latency_ms"], json!({}));
}

#[test]
fn rejects_malformed_summaries() {
    assert!(Summary::from_json("{}").is_err());
    let dup = r#"{"run": {}, "frames": {"read": 1, "skipped": 0, "dropped": 0},
            "scenarios": {"a": {"n": 1, "n_labelled": 0, "top1": null, "top1_ci95": null, "top5": null, "drop": null, "agreement": null},
                          "a": {"n": 1, "n_labelled": 0, "top1": null, "top1_ci95": null, "top5": null, "drop": null, "agreement": null}}}"#;
    let e = Summary::from_json(dup).unwrap_err();
    assert!(e.to_string().contains("duplicate key `a`"), "{e}");
    // `metrics` and `latency_ms` may be absent.
    let ok = r#"{"run": null, "frames": {"read": 1, "skipped": 0, "dropped": 0}, "scenarios": {}}"#;
    let s = Summary::from_json(ok).unwrap();
    assert!(s.metrics.is_empty() && s.latency_ms.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("summary.json");
    std::fs::write(&path, "{").unwrap();
    let e = Summary::read(&path).unwrap_err();
    assert!(
        matches!(e, ReportError::MalformedSummary { .. }) && e.to_string().contains("summary.json")
    );
}

#[test]
fn recompute_matches_streaming() {
    let fs = timed_frames();
    let s = streamed(&["clean", "fog", "noise"], &fs);
    let flat: Vec<Record> = fs.concat();
    let r = Summary::recompute(&flat, Some(&s));
    assert_eq!(r.to_json(), s.to_json());
    assert_eq!(r, s);
    // Without the previous summary: same scenarios and latency, frames from the records.
    let r = Summary::recompute(&flat, None);
    assert_eq!(r.scenarios, s.scenarios);
    assert_eq!(r.latency_ms, s.latency_ms);
    assert_eq!(
        r.frames,
        FrameCounts {
            read: 4,
            skipped: 0,
            dropped: 0,
            lost: 0,
            ..FrameCounts::default()
        }
    );
    assert_eq!(r.run, RunBlock::from_json(json!({})));
}

#[test]
fn recompute_splits_frames_that_share_an_id() {
    // A manifest listing the same file twice: two frames with one id, written one after the other.
    let recs = vec![
        rec("a.png", "clean", Some(1), &[1]),
        rec("a.png", "fog", Some(1), &[2]),
        rec("a.png", "clean", Some(1), &[1]),
        rec("a.png", "fog", Some(1), &[1]),
        rec("b.png", "clean", None, &[3]),
        rec("b.png", "fog", None, &[3]),
    ];
    let r = Summary::recompute(&recs, None);
    assert_eq!(r.frames.read, 3);
    let s = streamed(
        &["clean", "fog"],
        &[
            recs[0..2].to_vec(),
            recs[2..4].to_vec(),
            recs[4..6].to_vec(),
        ],
    );
    assert_eq!(r.scenarios, s.scenarios);
    let fog = &r.scenarios[1].1;
    // Paired over the two labelled frames: clean 2/2, fog 1/2; agreement over all three: 2/3.
    assert_eq!((fog.drop, fog.agreement), (Some(0.5), Some(2.0 / 3.0)));
}

#[test]
fn recompute_keeps_previous_order_and_unseen_scenarios() {
    let fs = timed_frames();
    let s = streamed(&["clean", "zoom", "noise", "fog"], &fs);
    let r = Summary::recompute(&fs.concat(), Some(&s));
    assert_eq!(r.to_json(), s.to_json());
    assert_eq!(r.scenarios[1].0, "zoom");
    assert_eq!(r.scenarios[1].1.n, 0);
}

#[test]
fn markdown_rendering() {
    let s = streamed(&["clean", "fog", "noise"], &timed_frames());
    let md = s.to_markdown();
    assert!(md.starts_with("# robustream run summary\n"), "{md}");
    assert!(
        md.contains("- model: resnet50\n") && md.contains("- seed: 7\n"),
        "{md}"
    );
    assert!(!md.contains("- plan"), "arrays are not listed: {md}");
    assert!(md.contains("Frames: 5 read, 1 skipped, 0 dropped."), "{md}");
    let lines: Vec<&str> = md.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("| scenario"))
        .unwrap();
    assert_eq!(
        lines[header],
        "| scenario |   n | top-1 |    95% CI |  top-5 | drop | agreement |"
    );
    assert_eq!(
        lines[header + 1],
        "| :------- | --: | ----: | --------: | -----: | ---: | --------: |"
    );
    let fog = lines[header + 3];
    let (lo, hi) = wilson_interval(2, 3, Z95);
    let ci = format!("{:.1}–{:.1}", lo * 100.0, hi * 100.0);
    assert_eq!(ci, "20.8–93.9");
    assert_eq!(
        fog,
        "| fog      |   4 | 66.7% | 20.8–93.9 | 100.0% | 0.0% |     33.3% |"
    );
    let latency = "## Latency (ms)\n\n\
            | stage  |    p50 |    p90 |    p95 |    p99 |    max |\n\
            | :----- | -----: | -----: | -----: | -----: | -----: |\n\
            | decode |  1.000 |  1.000 |  1.000 |  1.000 |  1.000 |\n\
            | infer  |  3.500 |  4.000 |  4.000 |  4.000 |  4.000 |\n\
            | total  | 10.000 | 12.000 | 12.000 | 12.000 | 12.000 |\n";
    assert!(md.ends_with(latency), "{md}");
}

#[test]
fn markdown_nulls_and_escaping() {
    let mut m = Metrics::new(vec![]);
    m.add_frame(&[rec("a", "weird|key", None, &[1])]);
    let s = Summary::from_metrics(
        &m,
        RunBlock::from_json(json!({"note": "a|b"})),
        FrameCounts::default(),
    );
    let md = s.to_markdown();
    assert!(
        md.contains("| weird\\|key |   1 |     – |      – |     – |    – |         – |"),
        "{md}"
    );
    assert!(md.contains("- note: a\\|b"), "{md}");
    assert!(md.contains("No timings recorded."), "{md}");
}

#[test]
fn csv_rendering() {
    let mut fs = frames();
    fs.push(vec![rec("f5", "odd,\"key\"", None, &[1])]);
    let s = streamed(&["clean", "fog", "noise"], &fs);
    let csv = s.to_csv();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "scenario,n,n_labelled,top1,top1_ci_lo,top1_ci_hi,top5,drop,agreement,flip,flip_excess"
    );
    let (lo, hi) = wilson_interval(1, 2, Z95);
    assert_eq!(
        lines[1],
        format!("clean,3,2,0.500000,{lo:.6},{hi:.6},1.000000,0.000000,1.000000,1.000000,0.000000")
    );
    assert_eq!(
        lines[2],
        "fog,4,3,0.666667,0.207660,0.938508,1.000000,0.000000,0.333333,1.000000,0.000000"
    );
    assert_eq!(lines[4], "\"odd,\"\"key\"\"\",1,0,,,,,,,,");
    assert_eq!(lines.len(), 5);
}

#[test]
fn a_configured_ce_baseline_is_used_named_stored_and_kept_by_recompute() {
    // gaussian_noise complete (errors 0.5 at every severity: frame `b` wrong), fog at 1 only;
    // a baseline of 0.25 everywhere (no benchmark of 15: two corruptions) gives CE 2.
    let mut order = vec!["clean".to_string()];
    order.extend((1..=5).map(|s| format!("corruption/gaussian_noise/{s}")));
    order.push("corruption/fog/1".into());
    let fs = right_and_wrong(&order);
    let refs: Vec<&str> = order.iter().map(String::as_str).collect();
    let mut s = streamed(&refs, &fs);
    let alexnet = s.clone();
    let mut text = String::from(
        "model = \"Quarter | net\"\nclean = 0.125\nbenchmark = [\"gaussian_noise\", \"fog\"]\n\
             [errors]\n",
    );
    for (name, _) in crate::key::CORRUPTIONS {
        text += &format!("{name} = [0.25, 0.25, 0.25, 0.25, 0.25]\n");
    }
    let table = BaselineTable::parse(&text, "q.toml").unwrap();
    s.set_ce_baseline(&table);
    let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    let ic = &v["metrics"]["imagenet_c"];
    assert_eq!(ic["baseline"], "Quarter | net");
    assert_eq!(ic["ce"], json!({"gaussian_noise": 2.0}));
    // (2.5 − 5 × 0) / (1.25 − 5 × 0.125) = 4.
    assert_eq!(ic["relative_ce"], json!({"gaussian_noise": 4.0}));
    assert_eq!(ic["baseline_table"]["file"], "q.toml");
    assert_eq!(
        ic["baseline_table"]["benchmark"],
        json!(["gaussian_noise", "fog"])
    );
    assert_eq!(
        s.table().lines().find(|l| l.starts_with("ImageNet-C (")),
        Some(
            "ImageNet-C (Quarter | net = 100%): CE for 1 corruption (1 of the 2 benchmark \
                 ones); mCE needs all 2 × 5"
        )
    );
    let md = s.to_markdown();
    assert!(
        md.contains("## ImageNet-C (normalised by Quarter \\| net, docs/imagenet-c.md#metrics)"),
        "{md}"
    );
    assert!(
        md.contains("Normalisation: Quarter \\| net top-1 errors"),
        "{md}"
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| gaussian_noise "))
        .unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[7..10], ["50.0%", "200.0%", "400.0%"], "{row}");
    // The built-in table, set explicitly, changes nothing.
    let mut same = alexnet.clone();
    same.set_ce_baseline(BaselineTable::builtin().unwrap());
    assert_eq!(same.to_json(), alexnet.to_json());
    assert_eq!(alexnet.metrics["imagenet_c"]["baseline"], "AlexNet");
    assert!(
        alexnet.metrics["imagenet_c"]
            .get("baseline_table")
            .is_none()
    );
    // `report` rebuilds the metrics against the stored table, not AlexNet's.
    let r = Summary::recompute(&fs.concat(), Some(&s));
    assert_eq!(r.to_json(), s.to_json());
    // Without a summary there is nothing to take the baseline from: AlexNet's, and it says so.
    let r = Summary::recompute(&fs.concat(), None);
    assert_eq!(r.metrics["imagenet_c"]["baseline"], "AlexNet");
    // A stored table edited by hand is an error entry, shown in the table and summary.md.
    let mut bad = s.clone();
    bad.metrics["imagenet_c"]["baseline_table"]["errors"]["fog"][0] = json!(4.0);
    assert!(matches!(
        bad.stored_ce_baseline(),
        Some(Err(ReportError::StoredBaseline { .. }))
    ));
    let r = Summary::recompute(&fs.concat(), Some(&bad));
    let e = r.metrics["imagenet_c"]["error"].as_str().unwrap();
    assert!(
        e.starts_with(
            "summary.json metrics.imagenet_c.baseline_table: ImageNet-C baseline table q.toml: \
                 `errors.fog` holds a value outside [0, 1]"
        ),
        "{e}"
    );
    assert!(r.imagenet_c().is_none());
    assert!(r.table().contains(&format!("\n{e}\n")), "{}", r.table());
    assert!(
        r.to_markdown()
            .contains("## ImageNet-C\n\n- summary.json metrics.imagenet_c.baseline_table: ")
    );
}

#[test]
fn imagenet_c_metrics_in_json_markdown_table_and_recompute() {
    // Every key of all 19 corruptions × 5: frame `a` right everywhere, frame `b` right on clean
    // only, so the clean error is 0 and every severity's error 0.5.
    let table = BaselineTable::builtin().unwrap();
    let mut order = vec!["clean".to_string()];
    for (name, _) in table.errors() {
        order.extend((1..=5).map(|s| format!("corruption/{name}/{s}")));
    }
    let fs = right_and_wrong(&order);
    let refs: Vec<&str> = order.iter().map(String::as_str).collect();
    let s = streamed(&refs, &fs);
    let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    let ic = &v["metrics"]["imagenet_c"];
    assert_eq!(ic["clean_error"], 0.0);
    assert_eq!(ic["errors"]["fog"], json!([0.5, 0.5, 0.5, 0.5, 0.5]));
    let ce = |name: &str| 2.5 / table.errors_of(name).unwrap().iter().sum::<f64>();
    let rel =
        |name: &str| 2.5 / (table.errors_of(name).unwrap().iter().sum::<f64>() - 5.0 * 0.4348);
    assert!((ic["ce"]["fog"].as_f64().unwrap() - ce("fog")).abs() < 1e-12);
    assert!((ic["relative_ce"]["saturate"].as_f64().unwrap() - rel("saturate")).abs() < 1e-12);
    let names: Vec<&str> = table.errors().iter().map(|(n, _)| n.as_str()).collect();
    let mce15 = names[..15].iter().map(|n| ce(n)).sum::<f64>() / 15.0;
    let mce19 = names.iter().map(|n| ce(n)).sum::<f64>() / 19.0;
    let rel15 = names[..15].iter().map(|n| rel(n)).sum::<f64>() / 15.0;
    assert!((ic["mce"].as_f64().unwrap() - mce15).abs() < 1e-12);
    assert!((ic["mce_all19"].as_f64().unwrap() - mce19).abs() < 1e-12);
    assert!((ic["relative_mce"].as_f64().unwrap() - rel15).abs() < 1e-12);
    assert!(ic["relative_mce_all19"].as_f64().is_some());
    assert_eq!(ic["incomplete"], json!({}));
    // The same through the typed accessor, the terminal lines and the Markdown section.
    let typed = s.imagenet_c().unwrap();
    assert_eq!(typed.ce.len(), 19);
    let t = s.table();
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    assert!(
        t.contains(&format!(
            "ImageNet-C (AlexNet = 100%): mCE {}, relative mCE {} (15 benchmark corruptions)\n",
            pct(mce15),
            pct(rel15)
        )),
        "{t}"
    );
    assert!(t.contains("ImageNet-C all 19 (benchmark + validation, not the published mCE)"));
    let md = s.to_markdown();
    assert!(
        md.contains("## ImageNet-C (normalised by AlexNet, docs/imagenet-c.md#metrics)"),
        "{md}"
    );
    assert!(md.contains("- clean error: 0.0%"), "{md}");
    let fog = md.lines().find(|l| l.starts_with("| fog ")).unwrap();
    assert!(fog.contains(&pct(ce("fog"))), "{fog}");
    assert!(fog.contains("50.0%"), "{fog}");
    assert!(md.contains("Normalisation: AlexNet top-1 errors"), "{md}");
    // `report` rebuilds the same metrics from the records.
    let r = Summary::recompute(&fs.concat(), Some(&s));
    assert_eq!(r.to_json(), s.to_json());
}

fn in9_frames() -> Vec<Vec<Record>> {
    // Two frames: clean right on both; mixed_same right on one, mixed_rand on none.
    ["a", "b"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            vec![
                rec(id, "clean", Some(1), &[1]),
                rec(
                    id,
                    "background/mixed_same",
                    Some(1),
                    &[if i == 0 { 1 } else { 2 }],
                ),
                rec(id, "background/mixed_rand", Some(1), &[2]),
            ]
        })
        .collect()
}

#[test]
fn in9_metrics_and_challenge_survive_json_and_recompute() {
    let order = ["clean", "background/mixed_same", "background/mixed_rand"];
    let fs = in9_frames();
    let mut s = streamed(&order, &fs);
    let m = s.in9().unwrap();
    assert_eq!(m.bg_gap, Some(0.5));
    assert_eq!(m.accuracy[0], ("original".to_string(), Some(1.0)));
    assert_eq!(s.challenge(), None);
    let tally = ChallengeTally {
        foregrounds: 5,
        vulnerable: 4,
        backgrounds: 7,
        composites: 20,
        complete: true,
        ..ChallengeTally::default()
    };
    s.set_challenge(tally);
    let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    let in9 = &v["metrics"]["in9"];
    assert_eq!(
        in9["accuracy"],
        json!({"original": 1.0, "mixed_same": 0.5, "mixed_rand": 0.0})
    );
    assert_eq!(in9["bg_gap"], 0.5);
    assert!((in9["challenge_accuracy"].as_f64().unwrap() - 0.2).abs() < 1e-15);
    assert_eq!(
        in9["challenge"],
        json!({"foregrounds": 5, "vulnerable": 4, "backgrounds": 7, "composites": 20, "complete": true, "failed": 0, "undecided": 0})
    );
    // Through summary.json and back, then rebuilt from the records with it as `previous`.
    let back = Summary::from_json(&s.to_json()).unwrap();
    assert_eq!(back.challenge(), Some(tally));
    let r = Summary::recompute(&fs.concat(), Some(&back));
    assert_eq!(r.to_json(), s.to_json());
    // Without the previous summary the challenge is unknown.
    assert_eq!(Summary::recompute(&fs.concat(), None).challenge(), None);
    let t = s.table();
    assert!(
        t.contains("IN-9 accuracy: original 100.0%, mixed_same 50.0%, mixed_rand 0.0%\n"),
        "{t}"
    );
    assert!(
        t.contains("IN-9 BG-gap (mixed_same − mixed_rand): 50.0%\n"),
        "{t}"
    );
    assert!(
            t.contains("IN-9 challenge accuracy: 20.0% (4 of 5 foregrounds vulnerable, 7 backgrounds, 20 composites)\n"),
            "{t}"
        );
    let md = s.to_markdown();
    assert!(
        md.contains("## IN-9 / Backgrounds Challenge (docs/in9.md)\n\n- IN-9 accuracy:"),
        "{md}"
    );
}

#[test]
fn challenge_alone_makes_the_in9_section() {
    let mut s = streamed(&["clean", "fog"], &timed_frames());
    assert!(s.in9().is_none());
    s.set_challenge(ChallengeTally {
        foregrounds: 2,
        vulnerable: 0,
        backgrounds: 2,
        composites: 4,
        complete: false,
        ..ChallengeTally::default()
    });
    let m = s.in9().unwrap();
    assert!(m.accuracy.is_empty() && m.bg_gap.is_none());
    assert_eq!(m.challenge_accuracy, Some(1.0));
    assert!(s.table().contains("; incomplete)"));
    assert!(!s.table().contains("IN-9 accuracy"));
    let r = Summary::recompute(&timed_frames().concat(), Some(&s));
    assert_eq!(r.to_json(), s.to_json());
}

/// Three frames of classes 0, 0, 1 through clean, an ablation, one RFS level and two XIMAGENET-12
/// scenarios; correctness per frame chosen so every number is checked by hand below.
fn object_frames() -> Vec<Vec<Record>> {
    // (frame, truth, clean, gray, fg-noise, bg-noise, blur_bg, blur_obj) right?
    let plan = [
        ("a", 0, true, false, false, true, true, true),
        ("b", 0, true, true, true, true, false, true),
        ("c", 1, false, false, false, true, true, false),
    ];
    plan.iter()
        .map(|&(id, t, c, g, f, b, bb, bo)| {
            let r = |key: &str, right: bool| rec(id, key, Some(t), &[if right { t } else { 7 }]);
            vec![
                r("clean", c),
                r("ablation/gray", g),
                r("region_noise/fg/linf/0.25/t1", f),
                r("region_noise/bg/linf/0.25/t1", b),
                r("background/blur_bg", bb),
                r("background/blur_obj", bo),
            ]
        })
        .collect()
}

const OBJECT_ORDER: [&str; 6] = [
    "clean",
    "ablation/gray",
    "region_noise/fg/linf/0.25/t1",
    "region_noise/bg/linf/0.25/t1",
    "background/blur_bg",
    "background/blur_obj",
];

#[test]
fn object_families_by_hand_and_through_recompute() {
    let fs = object_frames();
    let mut s = streamed(&OBJECT_ORDER, &fs);
    let v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    let m = &v["metrics"];
    let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, vec!["volatility", "hard_imagenet", "rfs"]);
    // Hard ImageNet: clean 2/3, gray 1/3; paired drop (2 − 1)/3.
    let h = &m["hard_imagenet"]["ablations"];
    assert!((h["none"]["accuracy"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-15);
    assert!((h["gray"]["drop"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-15);
    // RFS: fg class 0 1/2, class 1 0/1 → 0.25; bg 1 and 1 → 1; ā = 0.625 → (1 − 0.25)/0.75 = 1.
    let t = &m["rfs"]["typical"];
    assert_eq!(
        (t["acc_fg"].as_f64(), t["acc_bg"].as_f64()),
        (Some(0.25), Some(1.0))
    );
    assert!((t["rfs"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    assert_eq!(m["rfs"]["noise"]["linf"]["0.25"], *t);
    // Volatility: μ = 2/3, blur_bg 2/3, blur_obj 2/3 → zero volatility, σ² 0, score_cross 1.
    let vol = &m["volatility"];
    assert_eq!(vol["n"], 2);
    assert!(vol["variance_cross"].as_f64().unwrap().abs() < 1e-15);
    assert_eq!(
        (vol["variance_inner"].clone(), vol["score"].clone()),
        (json!(null), json!(null))
    );
    // Inner results: σ²_inner = ((0.5 − 0.9)² + (0.7 − 0.9)²)/1 = 0.2 → S_robust 0.8.
    let inner = InnerResults(
        [
            ("clean", 0.9),
            ("background/blur_bg", 0.5),
            ("background/blur_obj", 0.7),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect(),
    );
    s.set_ximagenet_inner(&inner);
    let vol = s.volatility().unwrap();
    assert!((vol.variance_inner.unwrap() - 0.2).abs() < 1e-12);
    assert!((vol.score.unwrap() - 0.8).abs() < 1e-12);
    // A post-pass family (not rebuilt from records) is carried over by recompute, in place.
    s.metrics.insert("saliency".into(), json!({"frames": 3}));
    let back = Summary::from_json(&s.to_json()).unwrap();
    let r = Summary::recompute(&fs.concat(), Some(&back));
    assert_eq!(r.to_json(), s.to_json());
    // Renderings.
    let t = s.table();
    assert!(
            t.contains("XIMAGENET-12: σ²_cross 0.0000 over 2 scenarios (n − 1: blur_bg, blur_obj), score_cross 1.0000; S_robust 0.8000 (σ²_inner 0.2000)\n"),
            "{t}"
        );
    assert!(
        t.contains("Hard ImageNet ablations: none 66.7%, gray 33.3% (drop 33.3%)\n"),
        "{t}"
    );
    assert!(t.contains("RFS linf: 0.25 1.000\n"), "{t}");
    assert!(
        t.contains("RFS typical (linf 0.25): 1.000 (fg 25.0%, bg 100.0%, 1 trials, 2 classes)\n"),
        "{t}"
    );
    let md = s.to_markdown();
    for section in [
        "## XIMAGENET-12 volatility (docs/ximagenet.md#robustness-score)",
        "## Hard ImageNet ablations (docs/hard-imagenet.md#ablation-accuracy-and-drop)",
        "## Relative foreground sensitivity \
             (docs/hard-imagenet.md#relative-foreground-sensitivity)",
        "| linf  |  0.25 |  25.0% | 100.0% | 1.000 |      1 |       2 |",
    ] {
        assert!(md.contains(section), "{section}\n{md}");
    }
    assert!(md.find("## Relative").unwrap() < md.find("## Latency").unwrap());
}

#[test]
fn no_imagenet_c_entry_without_corruptions() {
    let s = streamed(&["clean", "fog"], &timed_frames());
    assert!(s.imagenet_c().is_none() && s.metrics.is_empty());
    assert!(!s.table().contains("ImageNet-C"));
}

#[test]
fn terminal_table_is_aligned() {
    let s = streamed(
        &["clean", "corruption/fog/3"],
        &[vec![
            rec("a", "clean", Some(1), &[1]),
            rec("a", "corruption/fog/3", Some(1), &[2]),
        ]],
    );
    let t = s.table();
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 9, "{t}");
    assert!(
        lines[8].starts_with("Frames: ") && lines[8].contains(" dropped (pipeline behind"),
        "{t}"
    );
    assert_eq!(
        lines[0],
        "scenario          n   top-1      95% CI   top-5    drop  agreement"
    );
    assert_eq!(lines[1], "-".repeat(lines[0].chars().count()));
    assert_eq!(
        lines[2],
        "clean             1  100.0%  20.7–100.0  100.0%    0.0%     100.0%"
    );
    assert_eq!(
        lines[3],
        "corruption/fog/3  1    0.0%    0.0–79.3    0.0%  100.0%       0.0%"
    );
    // One severity of one corruption: no CE, and the ImageNet-C lines say what is missing.
    assert_eq!(lines[4], "");
    assert_eq!(
        lines[5],
        "ImageNet-C (AlexNet = 100%): CE for 0 corruptions (0 of the 15 benchmark ones); \
             mCE needs all 15 × 5"
    );
    assert_eq!(
        lines[6],
        "ImageNet-C incomplete, no CE: fog (no severity 1, 2, 4, 5)"
    );
}

#[test]
fn a_summary_that_is_a_device_a_fifo_or_huge_is_refused_with_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let limit = crate::fsread::MAX_TABLE_TEXT_BYTES;
    for (path, why) in crate::fsread::refused_paths(dir.path(), limit) {
        let e = Summary::read(&path).unwrap_err();
        assert!(matches!(e, ReportError::Io { .. }), "{e}");
        let e = e.to_string();
        assert!(
            e.contains(&format!("{}: {why}", path.display()))
                && e.contains("move it out of the run directory"),
            "{e}"
        );
    }
}

#[test]
fn lost_frames_keep_their_causes_through_summary_json_and_its_lines() {
    let mut f = FrameCounts {
        read: 9,
        lost: 5,
        ..FrameCounts::default()
    };
    // Causes with no frame are left out; the rest in name order.
    f.set_lost_causes(&[("timeout", 1), ("underrun", 0), ("incomplete", 4)]);
    assert_eq!(f.lost_causes_bracketed(), " (4 incomplete, 1 timeout)");
    let json = serde_json::to_value(&f).unwrap();
    assert_eq!(
        json,
        json!({"read": 9, "skipped": 0, "dropped": 0, "lost": 5,
               "lost_causes": {"incomplete": 4, "timeout": 1}})
    );
    assert_eq!(serde_json::from_value::<FrameCounts>(json).unwrap(), f);
    // Without causes (every run before them, every source without losses): no key, no words.
    let plain = FrameCounts {
        read: 9,
        ..FrameCounts::default()
    };
    assert_eq!(plain.lost_causes_text(), None);
    assert_eq!(plain.lost_causes_bracketed(), "");
    assert_eq!(
        serde_json::to_value(&plain).unwrap(),
        json!({"read": 9, "skipped": 0, "dropped": 0})
    );
    let s = Summary::from_metrics(&Metrics::new(vec![]), RunBlock::from_json(json!({})), f);
    assert!(
        s.table().contains(
            "0 dropped (pipeline behind a live source), 5 lost (by the source: 4 incomplete, \
             1 timeout)"
        ),
        "{}",
        s.table()
    );
    assert!(
        s.to_markdown()
            .contains("0 dropped, 5 lost by the source (4 incomplete, 1 timeout)."),
        "{}",
        s.to_markdown()
    );
}
