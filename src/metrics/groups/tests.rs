use super::*;
use crate::metrics::Metrics;
use crate::metrics::tests::rec;

/// A record of `frame` under `scenario` in group `style=group`, right or wrong (truth 1), or
/// unlabelled.
fn grouped(frame: &str, scenario: &str, group: &str, right: Option<bool>) -> Record {
    let top = match right {
        Some(false) => [2, 3],
        _ => [1, 2],
    };
    let mut r = rec(frame, scenario, right.map(|_| 1), &top);
    r.groups.insert("style".into(), group.into());
    r
}

/// Frames of one scenario: `(group, right)` each.
fn frames(scenario: &str, spec: &[(&str, &[bool])]) -> Vec<Record> {
    let mut out = Vec::new();
    for (group, rights) in spec {
        for (i, right) in rights.iter().enumerate() {
            out.push(grouped(
                &format!("{group}{i}"),
                scenario,
                group,
                Some(*right),
            ));
        }
    }
    out
}

fn report(records: &[Record], settings: GroupSettings) -> Groups {
    let mut m = Metrics::new(vec!["clean".into()]).with_groups(settings);
    for r in records {
        m.add_frame(std::slice::from_ref(r));
    }
    m.groups().report(m.keys()).unwrap()
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-12)
}

fn close2(a: Option<[f64; 2]>, b: (f64, f64)) -> bool {
    a.is_some_and(|[lo, hi]| (lo - b.0).abs() < 1e-9 && (hi - b.1).abs() < 1e-9)
}

/// a: 3 of 4 right, b: 1 of 4, c: 2 of 2.
fn three_styles() -> Vec<Record> {
    frames(
        "clean",
        &[
            ("a", &[true, true, true, false]),
            ("b", &[false, true, false, false]),
            ("c", &[true, true]),
        ],
    )
}

fn group<'a>(d: &'a Dimension, name: &str) -> &'a Group {
    &d.groups.iter().find(|(n, _)| n == name).unwrap().1
}

#[test]
fn gaps_to_a_reference_group_with_intervals_and_the_worst_group() {
    let settings = GroupSettings {
        reference: [("style".to_string(), "a".to_string())].into(),
    };
    let g = report(&three_styles(), settings);
    let [(dim, d)] = &g.dimensions[..] else {
        panic!("{g:?}")
    };
    assert_eq!((dim.as_str(), d.reference.as_deref()), ("style", Some("a")));
    let names: Vec<&str> = d.groups.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let (a, b, c) = (group(d, "a"), group(d, "b"), group(d, "c"));
    assert_eq!((a.all.n, a.all.n_labelled), (4, 4));
    assert_eq!(a.all.top1, Some(0.75));
    assert_eq!(b.all.top1, Some(0.25));
    assert_eq!(c.all.top1, Some(1.0));
    // The reference has no gap of its own; the others are reference − group, in points of
    // fraction, with Newcombe's interval (values from the formula in Python).
    assert_eq!((a.all.gap, a.all.gap_ci95), (None, None));
    assert!(close(b.all.gap, 0.5));
    assert!(close2(
        b.all.gap_ci95,
        (-0.13548840058295153, 0.7890832680847557)
    ));
    assert!(close(c.all.gap, -0.25));
    assert!(close2(
        c.all.gap_ci95,
        (-0.6993581574175982, 0.4386569052274746)
    ));
    // Each group's top-1 interval is the Wilson interval of its counts.
    assert!(close2(
        b.all.top1_ci95,
        (0.04558726080970055, 0.6993581574175981)
    ));
    assert!(close2(
        a.all.top1_ci95,
        (0.30064184258240184, 0.9544127391902995)
    ));
    // Top-5: a wrong record's top-5 here misses the truth too.
    assert_eq!(a.all.top5, Some(0.75));
    // The worst group, and the same per scenario (one scenario here).
    assert_eq!(
        d.worst,
        Some(Worst {
            group: "b".into(),
            top1: 0.25
        })
    );
    assert_eq!(d.worst_by_scenario.len(), 1);
    assert_eq!(d.worst_by_scenario[0].0, "clean");
    assert_eq!(b.scenarios.len(), 1);
    assert_eq!(b.scenarios[0].1, b.all);
}

#[test]
fn without_a_reference_each_group_is_compared_with_the_rest() {
    let g = report(&three_styles(), GroupSettings::default());
    let d = &g.dimensions[0].1;
    assert_eq!(d.reference, None);
    // b against a + c (5 of 6), a against b + c (3 of 6), c against a + b (4 of 8).
    let (a, b, c) = (group(d, "a"), group(d, "b"), group(d, "c"));
    assert!(close(b.all.gap, 5.0 / 6.0 - 0.25));
    assert!(close2(
        b.all.gap_ci95,
        (-0.016167865969450856, 0.8291945967283331)
    ));
    assert!(close(a.all.gap, 0.5 - 0.75));
    assert!(close(c.all.gap, 0.5 - 1.0));
    // A single group has no rest to be compared with.
    let g = report(
        &frames("clean", &[("a", &[true, false])]),
        GroupSettings::default(),
    );
    let a = group(&g.dimensions[0].1, "a");
    assert_eq!((a.all.top1, a.all.gap), (Some(0.5), None));
}

#[test]
fn groups_cross_with_scenarios() {
    // x: clean 2 of 2, fog 0 of 2; y: clean 1 of 2, fog 1 of 2. Each frame has both records.
    let mut m = Metrics::new(vec!["clean".into(), "corruption/fog/3".into()]);
    for (frame, group, clean, fog) in [
        ("x0", "x", true, false),
        ("x1", "x", true, false),
        ("y0", "y", true, true),
        ("y1", "y", false, false),
    ] {
        m.add_frame(&[
            grouped(frame, "clean", group, Some(clean)),
            grouped(frame, "corruption/fog/3", group, Some(fog)),
        ]);
    }
    let g = m.groups().report(m.keys()).unwrap();
    let d = &g.dimensions[0].1;
    let (x, y) = (group(d, "x"), group(d, "y"));
    // Pooled over both scenarios: 2 of 4 each, so the worst is the first of the tie.
    assert_eq!((x.all.n, x.all.top1, y.all.top1), (4, Some(0.5), Some(0.5)));
    assert_eq!(d.worst.as_ref().unwrap().group, "x");
    assert!(close(x.all.gap, 0.0));
    // Per scenario, in report order.
    let keys: Vec<&str> = x.scenarios.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["clean", "corruption/fog/3"]);
    let (xc, xf) = (&x.scenarios[0].1, &x.scenarios[1].1);
    assert_eq!((xc.top1, xf.top1), (Some(1.0), Some(0.0)));
    // Under fog x is 0 of 2 against the rest's (y's) 1 of 2; on clean 2 of 2 against 1 of 2.
    assert!(close(xf.gap, 0.5));
    assert!(close(xc.gap, -0.5));
    let worst: Vec<(&str, &str, f64)> = d
        .worst_by_scenario
        .iter()
        .map(|(k, w)| (k.as_str(), w.group.as_str(), w.top1))
        .collect();
    assert_eq!(worst, [("clean", "y", 0.5), ("corruption/fog/3", "x", 0.0)]);
}

#[test]
fn unlabelled_records_count_but_have_no_accuracy() {
    let mut records = frames("clean", &[("a", &[true])]);
    records.push(grouped("u", "clean", "b", None));
    let g = report(&records, GroupSettings::default());
    let d = &g.dimensions[0].1;
    let b = group(d, "b");
    assert_eq!((b.all.n, b.all.n_labelled), (1, 0));
    assert_eq!((b.all.top1, b.all.top1_ci95, b.all.gap), (None, None, None));
    // a's rest (b) has no labelled record: no gap either.
    assert_eq!(group(d, "a").all.gap, None);
    assert_eq!(d.worst.as_ref().unwrap().group, "a");
}

#[test]
fn several_dimensions_and_records_without_groups() {
    let mut r = grouped("f", "clean", "a", Some(true));
    r.groups.insert("camera".into(), "3".into());
    let plain = rec("g", "clean", Some(1), &[1]);
    let mut m = Metrics::new(vec!["clean".into()]);
    m.add_frame(&[plain]);
    assert!(m.groups().is_empty());
    assert_eq!(m.groups().report(m.keys()), None);
    m.add_frame(&[r]);
    let g = m.groups().report(m.keys()).unwrap();
    let dims: Vec<&str> = g.dimensions.iter().map(|(d, _)| d.as_str()).collect();
    assert_eq!(dims, ["camera", "style"]);
    // The ungrouped record is in no group.
    assert_eq!(group(&g.dimensions[0].1, "3").all.n, 1);
}

#[test]
fn the_entry_round_trips_through_json() {
    let settings = GroupSettings {
        reference: [("style".to_string(), "a".to_string())].into(),
    };
    let g = report(&three_styles(), settings);
    let v = serde_json::to_value(&g).unwrap();
    let b = &v["dimensions"]["style"]["groups"]["b"];
    assert_eq!(b["top1"], 0.25);
    assert_eq!(b["gap"], 0.5);
    assert_eq!(b["scenarios"]["clean"]["n"], 4);
    assert_eq!(v["dimensions"]["style"]["reference"], "a");
    assert_eq!(v["dimensions"]["style"]["worst"]["group"], "b");
    assert_eq!(serde_json::from_value::<Groups>(v).unwrap(), g);
}

#[test]
fn records_carry_groups_only_when_they_have_some() {
    let r = grouped("a.png", "clean", "microsoft", Some(true));
    let line = serde_json::to_string(&r).unwrap();
    assert!(
        line.ends_with(r#","ms":{},"groups":{"style":"microsoft"}}"#),
        "{line}"
    );
    assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
    // A record of format 2 (no groups field) reads back with none, and is written as it was
    // (but for the format number).
    let old = r#"{"format":2,"frame":"a","scenario":"clean","truth":1,"pred":1,"top5":[1],"prob":[0.5],"hit5":true,"ms":{}}"#;
    let r: Record = serde_json::from_str(old).unwrap();
    assert!(r.groups.is_empty());
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        old.replace(r#""format":2"#, r#""format":3"#)
    );
}
