use super::rules::{Op, RuleError, glob, parse_rules};
use super::*;
use crate::metrics::tests::rec;
use crate::report::run_block::RunBlock;

/// A run of `frames` frames under `clean` and `fog`: `right(i)` says whether frame i's fog top-1 is
/// right (truth 1, else the model says 2); clean is always right.
fn run(frames: usize, right: impl Fn(usize) -> bool) -> Input {
    let mut records = Vec::new();
    for i in 0..frames {
        let f = format!("f{i}.png");
        records.push(rec(&f, "clean", Some(1), &[1, 2]));
        let top: &[usize] = if right(i) { &[1, 2] } else { &[2, 3] };
        records.push(rec(&f, "fog", Some(1), top));
    }
    input(records)
}

fn input(records: Vec<Record>) -> Input {
    let mut summary = Summary::recompute(&records, None);
    summary.run = RunBlock::from_json(json!({"model": "m.toml", "end": "completed"}));
    Input {
        path: "run".into(),
        summary,
        records: Some(records),
        truncated: 0,
    }
}

fn summary_only(i: &Input) -> Input {
    Input {
        records: None,
        ..i.clone()
    }
}

fn compare(a: &Input, b: &Input, alpha: Option<f64>, rules: &str) -> Comparison {
    let rules = parse_rules([rules]).unwrap();
    Comparison::new(a, b, alpha, &rules)
}

fn fog(c: &Comparison) -> &ScenarioDiff {
    &c.scenarios.iter().find(|(k, _)| k == "fog").unwrap().1
}

#[test]
fn pairs_the_same_frames_and_tests_with_mcnemar() {
    // Frame 0 right in the baseline only, frames 1..9 right in the candidate only: b = 1, c = 9.
    let a = run(10, |i| i == 0);
    let b = run(10, |i| i != 0);
    let c = compare(&a, &b, None, "");
    let d = &fog(&c).top1;
    assert_eq!(
        d.pairing,
        Pairing::Paired(PairedCounts {
            both: 0,
            baseline_only: 1,
            candidate_only: 9,
            neither: 0
        })
    );
    assert_eq!(d.p, Some(0.021484375));
    assert_eq!((d.a, d.b), (Some(0.1), Some(0.9)));
    assert!((d.diff().unwrap() - 0.8).abs() < 1e-12);
    let (lo, hi) = d.ci95.unwrap();
    assert!(lo > 0.0 && hi <= 1.0 && lo < 0.8 && 0.8 < hi, "{lo} {hi}");
    assert_eq!(d.n, [10, 10]);
    // A wrong top-1 here has no truth in its top-5 either: the same table for top-5.
    assert_eq!(fog(&c).top5.pairing, d.pairing);
    assert_eq!(fog(&c).top5.p, Some(0.021484375));
    // Clean is right in both runs everywhere: no discordant pair.
    assert_eq!(c.scenarios[0].1.top1.p, Some(1.0));
    assert_eq!(c.exit_code(), 0);
    assert!(c.notes.is_empty(), "{:?}", c.notes);
}

#[test]
fn a_run_against_itself_differs_by_nothing() {
    let a = run(9, |i| i % 3 != 0);
    let c = compare(&a, &a, Some(0.05), "top1_drop>0,top1<0,mce>0.01");
    for (key, d) in &c.scenarios {
        for x in [&d.top1, &d.top5] {
            assert_eq!(x.diff(), Some(0.0), "{key}");
            assert_eq!(x.p, Some(1.0), "{key}");
            assert!(x.paired(), "{key}");
            assert_eq!(x.significant, Some(false));
        }
        for x in [d.drop, d.agreement, d.flip, d.flip_excess] {
            assert!(x.diff().is_none_or(|v| v == 0.0), "{key}");
        }
    }
    let json: Value = serde_json::from_str(&c.to_json()).unwrap();
    assert_eq!(json["scenarios"]["fog"]["top1"]["p"], 1.0);
    assert_eq!(json["scenarios"]["fog"]["top1"]["diff"], 0.0);
    // The top-1 rules pass; `mce` has no summary to come from: the gate cannot pass.
    assert_eq!(c.gate[0].status(), Status::Passed);
    assert_eq!(c.gate[1].status(), Status::Passed);
    assert_eq!(c.gate[2].status(), Status::Unchecked);
    assert_eq!(c.exit_code(), EXIT_UNCHECKED);
}

#[test]
fn different_frames_or_truths_or_summaries_are_unpaired() {
    let a = run(10, |i| i < 8);
    // One frame fewer.
    let b = run(9, |i| i < 8);
    let c = compare(&a, &b, None, "");
    let d = &fog(&c).top1;
    match &d.pairing {
        Pairing::Unpaired(why) => assert!(
            why.contains("10 in the baseline, 9 in the candidate, 9 in both"),
            "{why}"
        ),
        p => panic!("{p:?}"),
    }
    assert_eq!(d.p, None);
    assert_eq!(d.n, [10, 9]);
    // Newcombe's independent interval from the two Wilson intervals (8/9 − 8/10).
    let (lo, hi) = stats::newcombe_unpaired(8, 9, 8, 10, Z95).unwrap();
    assert_eq!(d.ci95, Some((lo, hi)));
    // Same frames, another truth on one.
    let mut records = a.records.clone().unwrap();
    records[3].truth = Some(7);
    let c = compare(&a, &input(records), None, "");
    let d = &fog(&c).top1;
    match &d.pairing {
        Pairing::Unpaired(why) => assert!(why.contains("truths differ on 1 of the 10"), "{why}"),
        p => panic!("{p:?}"),
    }
    // A summary without records.
    let c = compare(&summary_only(&a), &a, None, "");
    match &fog(&c).top1.pairing {
        Pairing::Unpaired(why) => assert!(why.contains("baseline is a summary"), "{why}"),
        p => panic!("{p:?}"),
    }
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("differences are unpaired")),
        "{:?}",
        c.notes
    );
    let json: Value = serde_json::from_str(&c.to_json()).unwrap();
    assert_eq!(json["baseline"]["kind"], "summary");
    assert_eq!(json["scenarios"]["fog"]["top1"]["paired"], false);
    assert_eq!(json["scenarios"]["fog"]["top1"]["p"], Value::Null);
}

#[test]
fn a_frame_listed_twice_pairs_by_occurrence() {
    let mut ra = Vec::new();
    let mut rb = Vec::new();
    for (right_a, right_b) in [(true, false), (false, false)] {
        ra.push(rec(
            "same.png",
            "clean",
            Some(1),
            if right_a { &[1] } else { &[2] },
        ));
        rb.push(rec(
            "same.png",
            "clean",
            Some(1),
            if right_b { &[1] } else { &[2] },
        ));
    }
    let c = compare(&input(ra), &input(rb), None, "");
    let d = &c.scenarios[0].1.top1;
    assert_eq!(
        d.pairing,
        Pairing::Paired(PairedCounts {
            both: 0,
            baseline_only: 1,
            candidate_only: 0,
            neither: 1
        })
    );
}

#[test]
fn the_gate_fires_holds_back_and_cannot_check() {
    // 20 frames: the candidate loses 3 on fog (15 → 12 right), gains none.
    let a = run(20, |i| i < 15);
    let b = run(20, |i| i < 12);
    let c = compare(
        &a,
        &b,
        None,
        "top1_drop>0.02, top1_drop[clean]>0, top5_drop>=1%",
    );
    assert_eq!(c.gate[0].status(), Status::Fired);
    let hit = &c.gate[0].fired[0];
    assert_eq!(hit.item, "fog");
    assert!((hit.value - 0.15).abs() < 1e-12 && hit.a == 0.75 && hit.b == 0.6);
    assert_eq!(hit.p, Some(stats::mcnemar_exact(3, 0)));
    assert_eq!(c.gate[1].status(), Status::Passed);
    // The lost frames' top-5 misses the truth too.
    assert_eq!(c.gate[2].status(), Status::Fired);
    assert_eq!(c.exit_code(), EXIT_FIRED);
    let lines = c.gate_lines();
    assert!(lines.iter().any(|l| l.starts_with("FAIL `top1_drop>0.02`: fog top1_drop 15.0 points (baseline 75.0%, candidate 60.0%, McNemar p = 0.250)")), "{lines:#?}");
    assert_eq!(
        lines.last().unwrap(),
        "gate failed: 2 of 3 rules fired (exit 3)",
        "{lines:#?}"
    );
    assert!(
        lines.contains(&"pass `top1_drop[clean]>0`".to_string()),
        "{lines:#?}"
    );
    // At alpha 0.05 three lost frames are not significant (p = 0.25): held back, the gate passes.
    let c = compare(&a, &b, Some(0.05), "top1_drop>0.02");
    assert_eq!(c.gate[0].status(), Status::Passed);
    assert_eq!(c.gate[0].not_significant.len(), 1);
    assert_eq!(c.exit_code(), 0);
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("--alpha 0.05") && n.contains("Newcombe's 95% interval")),
        "{:?}",
        c.notes
    );
    // Twelve frames lost of 20: significant.
    let worse = run(20, |i| i < 3);
    let c = compare(&a, &worse, Some(0.05), "top1_drop>0.02");
    assert_eq!(c.gate[0].status(), Status::Fired);
    // A pattern nothing matches, and a scenario the candidate lacks: loud, never a silent pass.
    let c = compare(&a, &b, None, "top1_drop[corruption/*]>0.02");
    assert_eq!(c.gate[0].status(), Status::Unchecked);
    let mut only_clean: Vec<Record> = b.records.clone().unwrap();
    only_clean.retain(|r| r.scenario == "clean");
    let c = compare(&a, &input(only_clean), None, "top1_drop>0.5");
    assert_eq!(c.only_baseline, vec!["fog".to_string()]);
    assert_eq!(
        c.gate[0].unchecked,
        vec![("fog".to_string(), "not in the candidate's plan".to_string())]
    );
    assert_eq!(c.exit_code(), EXIT_UNCHECKED);
    assert!(
        c.notes.iter().any(|n| n.contains("the plans differ")),
        "{:?}",
        c.notes
    );
}

#[test]
fn metrics_of_the_families_are_compared_and_missing_ones_are_unchecked() {
    let mut a = run(4, |_| true);
    let mut b = a.clone();
    let in9 = |gap: Option<f64>| {
        json!({"accuracy": {"original": 0.9, "mixed_same": 0.8}, "bg_gap": gap,
               "challenge_accuracy": null, "challenge": null})
    };
    a.summary.metrics.insert("in9".into(), in9(Some(0.10)));
    b.summary.metrics.insert("in9".into(), in9(Some(0.16)));
    let c = compare(
        &a,
        &b,
        None,
        "bg_gap>0.05,in9_accuracy[mixed_*]<-0.01,challenge_accuracy<0,ce[fog]>0.01",
    );
    let gap = c.metrics.iter().find(|r| r.id() == "bg_gap").unwrap();
    assert_eq!(
        gap.delta,
        Delta {
            a: Some(0.10),
            b: Some(0.16)
        }
    );
    assert!(
        c.metrics
            .iter()
            .any(|r| r.id() == "in9_accuracy[mixed_same]")
    );
    assert_eq!(c.gate[0].status(), Status::Fired);
    assert_eq!(c.gate[1].status(), Status::Passed);
    // null in both summaries; a family neither summary has.
    assert_eq!(c.gate[2].status(), Status::Unchecked);
    assert!(
        c.gate[2].unchecked[0]
            .1
            .contains("null in the baseline summary"),
        "{:?}",
        c.gate[2]
    );
    assert_eq!(c.gate[3].status(), Status::Unchecked);
    assert!(
        c.gate[3].unchecked[0]
            .1
            .contains("no `ce` key of the baseline matches `fog`"),
        "{:?}",
        c.gate[3]
    );
    assert_eq!(c.exit_code(), EXIT_FIRED);
    // The candidate without the family: the baseline's rule cannot be checked.
    b.summary.metrics.remove("in9");
    let c = compare(&a, &b, None, "bg_gap>0.05");
    assert!(
        c.gate[0].unchecked[0]
            .1
            .contains("not in the candidate summary"),
        "{:?}",
        c.gate[0]
    );
    assert_eq!(c.exit_code(), EXIT_UNCHECKED);
    let json: Value = serde_json::from_str(&c.to_json()).unwrap();
    assert_eq!(json["metrics"]["bg_gap"]["candidate"], Value::Null);
    assert_eq!(json["gate"]["status"], "unchecked");
    assert_eq!(json["gate"]["exit"], 4);
    assert_eq!(json["gate"]["unchecked"][0], "bg_gap>0.05");
}

#[test]
fn rule_grammar() {
    let rules = parse_rules([
        "top1_drop>0.02, mce>=+1%",
        "top1_drop[corruption/fog/*,clean]<=-0.5 ,rfs<-0.1",
        "",
    ])
    .unwrap();
    assert_eq!(rules.len(), 4);
    assert_eq!(
        (rules[0].metric.name, rules[0].op, rules[0].threshold),
        ("top1_drop", Op::Gt, 0.02)
    );
    assert_eq!((rules[1].metric.name, rules[1].op), ("mce", Op::Ge));
    assert!((rules[1].threshold - 0.01).abs() < 1e-15);
    assert_eq!(rules[2].pattern.as_deref(), Some("corruption/fog/*,clean"));
    assert_eq!((rules[2].op, rules[2].threshold), (Op::Le, -0.5));
    assert_eq!(rules[3].text, "rfs<-0.1");
    assert!(rules[0].fires(0.03) && !rules[0].fires(0.02));
    assert!(rules[1].fires(0.01));
}

#[test]
fn malformed_rules_say_what_to_write() {
    let err = |r: &str| parse_rules([r]).unwrap_err();
    for (rule, expect) in [
        ("top1_drop", "no comparison"),
        ("top1_drop>", "is not a number"),
        ("top1_drop>abc", "`abc` after `>` is not a number"),
        ("top1_drop>0.0.1", "is not a number"),
        ("top1_drop>1e-3", "is not a number"),
        ("top1_drop>nan", "is not a number"),
        ("top1_drop[fog>0.1", "no closing `]`"),
        ("top1_drop[]>0.1", "empty or nested"),
        (">0.1", "no metric"),
    ] {
        let e = err(rule);
        assert!(matches!(e, RuleError::Syntax { .. }), "{rule}: {e:?}");
        let text = e.to_string();
        assert!(text.contains(expect), "{rule}: {text}");
        assert!(text.contains(&format!("--fail-on rule `{rule}`")), "{text}");
        assert!(text.contains("e.g. `top1_drop>0.02`"), "{text}");
        assert!(!text.contains('\n'));
    }
    let e = err("top1_dorp>0.02");
    assert_eq!(
        e,
        RuleError::UnknownMetric {
            rule: "top1_dorp>0.02".into(),
            name: "top1_dorp".into(),
            suggestion: Some("top1_drop".into())
        }
    );
    // The message lists every metric a rule can use.
    let text = e.to_string();
    for m in rules::METRICS.iter() {
        assert!(text.contains(m.name), "{text}");
    }
    assert!(text.contains("(did you mean `top1_drop`?)"), "{text}");
    assert!(matches!(
        err("no_such_thing_at_all>0.1"),
        RuleError::UnknownMetric {
            suggestion: None,
            ..
        }
    ));
    let e = err("mce[fog]>0.01");
    assert!(
        e.to_string()
            .contains("`mce` is one number per run and takes no `[…]`; write it without `[fog]`"),
        "{e}"
    );
    // The issue's `mce>+1.0`: 100 points as a fraction; the message gives both spellings.
    let e = err("mce>+1.0");
    assert!(
        e.to_string().contains("the threshold +1.0 is 100 points"),
        "{e}"
    );
    assert!(
        e.to_string().contains("write `mce>0.01` or `mce>+1.0%`"),
        "{e}"
    );
    assert!(parse_rules(["mce>+1.0%"]).is_ok());
}

#[test]
fn patterns() {
    assert!(glob("corruption/*", "corruption/fog/3"));
    assert!(glob("corruption/*/3", "corruption/fog/3"));
    assert!(!glob("corruption/*/3", "corruption/fog/4"));
    assert!(glob("*", "clean"));
    assert!(glob("clean", "clean") && !glob("clean", "clean2"));
    assert!(glob("a*b*c", "a-b-b-c") && !glob("a*b*c", "acb"));
    assert!(!glob("ab*ba", "aba"));
}

#[test]
fn renderings_are_consistent_and_self_contained() {
    let a = run(10, |i| i < 8);
    let b = run(10, |i| i < 5);
    let c = compare(&a, &b, None, "top1_drop>0.02");
    let table = c.to_table();
    assert!(table.contains("fog"), "{table}");
    assert!(table.contains("−30.0"), "{table}");
    assert!(table.contains("paired"), "{table}");
    let md = c.to_markdown();
    assert!(md.contains("| fog |") && md.contains("## Gate"), "{md}");
    let html = c.to_html();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script") && !html.contains("http") && !html.contains("<link"));
    assert!(html.contains("class=\"n worse\""), "{html}");
    // Text from the inputs is escaped.
    let mut odd = a.clone();
    odd.path = "<b>&".into();
    let html = compare(&odd, &b, None, "").to_html();
    assert!(html.contains("&lt;b&gt;&amp;") && !html.contains("<b>&"));
}

#[test]
fn unpaired_significance_uses_newcombe_at_alpha() {
    let a = summary_only(&run(20, |i| i < 18));
    let b = run(20, |i| i < 4);
    let c = compare(&a, &b, Some(0.01), "top1_drop[fog]>0.1");
    let d = &fog(&c).top1;
    assert!(!d.paired());
    // 18/20 vs 4/20: the 99 % interval of the difference lies below 0.
    let (lo, hi) = stats::newcombe_unpaired(4, 20, 18, 20, stats::z_two_sided(0.01)).unwrap();
    assert!(hi < 0.0 && lo > -1.0, "{lo} {hi}");
    assert_eq!(d.significant, Some(true));
    assert_eq!(c.gate[0].status(), Status::Fired);
    assert_eq!(c.gate[0].fired[0].p, None);
    // 18/20 vs 16/20: over the threshold of 0.1 but its interval holds 0.
    let b = run(20, |i| i < 16);
    let c = compare(&a, &b, Some(0.05), "top1_drop[fog]>0.05");
    assert_eq!(fog(&c).top1.significant, Some(false));
    assert_eq!(c.gate[0].status(), Status::Passed);
    assert_eq!(c.gate[0].not_significant.len(), 1);
}

#[test]
fn runs_in_progress_or_ended_early_are_compared_and_said_so() {
    let mut a = run(5, |_| true);
    let mut b = a.clone();
    a.summary.run = RunBlock::from_json(json!({"model": "a.toml", "end": "running"}));
    b.summary.run = RunBlock::from_json(json!({"model": "b.toml", "end": "interrupted"}));
    let c = compare(&a, &b, None, "");
    assert_eq!(c.scenarios.len(), 2);
    let notes = c.notes.join("\n");
    assert!(
        notes.contains("the baseline run was still running"),
        "{notes}"
    );
    assert!(
        notes.contains("the candidate run ended early (`interrupted`)"),
        "{notes}"
    );
    assert!(
        notes.contains("models: baseline a.toml, candidate b.toml"),
        "{notes}"
    );
    // Killed before its summary was written: no `run` facts at all.
    b.summary.run = RunBlock::from_json(json!({}));
    let c = compare(&a, &b, None, "");
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("the candidate run has no summary.json"))
    );
    let json: Value = serde_json::from_str(&c.to_json()).unwrap();
    assert_eq!(json["baseline"]["end"], "running");
    assert_eq!(json["candidate"]["end"], Value::Null);
}

#[test]
fn inputs_are_run_directories_summary_folders_or_summary_files() {
    let d = tempfile::tempdir().unwrap();
    let a = run(3, |_| true);
    let dir = d.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let mut w =
        crate::report::jsonl::RecordWriter::create(&dir.join(crate::report::jsonl::RECORDS_JSONL))
            .unwrap();
    w.write_batch(a.records.as_ref().unwrap()).unwrap();
    crate::report::write_run_summary(&dir, &a.summary).unwrap();
    let i = Input::load(&dir, "baseline").unwrap();
    assert_eq!(i.records.as_ref().map(Vec::len), Some(6));
    assert_eq!(i.summary.scenarios, a.summary.scenarios);
    let i = Input::load(&dir.join("summary.json"), "baseline").unwrap();
    assert!(i.records.is_none());
    // A folder holding only a summary.
    let only = d.path().join("only");
    std::fs::create_dir(&only).unwrap();
    std::fs::copy(dir.join("summary.json"), only.join("summary.json")).unwrap();
    assert!(Input::load(&only, "baseline").unwrap().records.is_none());
    // Nothing usable: the side, the path, what to give.
    let e = Input::load(&d.path().join("nope"), "candidate").unwrap_err();
    assert!(e.to_string().starts_with("candidate "), "{e}");
    assert!(
        e.to_string()
            .contains("no such file or directory; give a run directory"),
        "{e}"
    );
    let e = Input::load(d.path(), "baseline").unwrap_err();
    assert!(
        e.to_string()
            .contains("neither records.jsonl nor summary.json"),
        "{e}"
    );
    std::fs::write(d.path().join("bad.json"), "{").unwrap();
    let e = Input::load(&d.path().join("bad.json"), "baseline").unwrap_err();
    assert!(
        e.to_string().starts_with("baseline: ")
            && e.to_string().contains("not a valid summary.json"),
        "{e}"
    );
}
