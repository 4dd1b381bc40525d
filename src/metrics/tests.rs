use super::*;

/// A record; `pred` equals `top1` (identity map) and `hit5` is computed from `top`.
pub(crate) fn rec(frame: &str, scenario: &str, truth: Option<usize>, top: &[usize]) -> Record {
    let top1 = top.first().map_or(-1, |&c| c as i64);
    Record {
        format: crate::contract::Format,
        frame: frame.into(),
        seq: None,
        scenario: scenario.into(),
        truth,
        pred: top1,
        top5: top.to_vec(),
        prob: top.iter().map(|_| 0.1).collect(),
        hit5: truth.map(|t| top.iter().take(5).any(|&c| c == t)),
        ms: Timings::new(),
        boxes: None,
        groups: Default::default(),
    }
}

/// `r` with timings, by stage name; a name that is no stage is dropped, as reading a records
/// file drops it.
pub(crate) fn timed(mut r: Record, ms: &[(&str, f64)]) -> Record {
    r.ms = Timings::new();
    for &(name, v) in ms {
        if let Some(stage) = Stage::parse(name) {
            r.ms.set(stage, v);
        }
    }
    r
}

fn keys(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn record_serialises_in_field_order_and_round_trips() {
    let r = timed(rec("a.jpg", "clean", Some(3), &[3, 1]), &[("infer", 1.5)]);
    let line = serde_json::to_string(&r).unwrap();
    assert_eq!(
        line,
        r#"{"format":3,"frame":"a.jpg","scenario":"clean","truth":3,"pred":3,"top5":[3,1],"prob":[0.1,0.1],"hit5":true,"ms":{"infer":1.5}}"#
    );
    assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
    let unlabelled = rec("b", "clean", None, &[2]);
    let line = serde_json::to_string(&unlabelled).unwrap();
    assert!(line.contains(r#""truth":null"#) && line.contains(r#""hit5":null"#));
    assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), unlabelled);
}

#[test]
fn boxes_only_when_present_and_they_feed_object_scores() {
    let mut r = rec("a", "clean", Some(2), &[2]);
    r.boxes = Some(vec![[0.25, 0.0, 0.75, 0.5]]);
    let line = serde_json::to_string(&r).unwrap();
    assert!(
        line.ends_with(r#","ms":{},"boxes":[[0.25,0.0,0.75,0.5]]}"#),
        "{line}"
    );
    assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
    let mut m = Metrics::new(vec![]);
    // Boxes on a non-clean record, or on an unlabelled clean record, are not counted.
    let mut other = rec("a", "fog", Some(2), &[2]);
    other.boxes = r.boxes.clone();
    m.add_frame(&[r.clone(), other]);
    let mut unlabelled = r.clone();
    unlabelled.truth = None;
    m.add_frame(&[unlabelled]);
    let o = m.object_scores()[&2];
    assert_eq!((o.images, o.centre_sum, o.size_sum), (1, 0.75, 0.25));
    assert_eq!(m.object_scores().len(), 1);
}

#[test]
fn non_finite_numbers_read_back_as_nan() {
    let mut r = timed(rec("a", "clean", None, &[1]), &[("infer", f64::NAN)]);
    r.prob = vec![f32::INFINITY];
    let line = serde_json::to_string(&r).unwrap();
    assert!(
        line.contains(r#""prob":[null]"#) && line.contains(r#""infer":null"#),
        "{line}"
    );
    let back: Record = serde_json::from_str(&line).unwrap();
    assert!(back.prob[0].is_nan() && back.ms.get(Stage::Infer).is_some_and(f64::is_nan));
}

#[test]
fn correctness_helpers() {
    let mut r = rec("a", "clean", Some(2), &[5, 2]);
    assert_eq!(r.top1_correct(), Some(false));
    assert_eq!(r.top5_correct(), Some(true));
    r.pred = -1;
    r.truth = Some(0);
    assert_eq!(r.top1_correct(), Some(false));
    r.hit5 = None; // inconsistent, counts as a miss
    assert_eq!(r.top5_correct(), Some(false));
    r.truth = None;
    assert_eq!((r.top1_correct(), r.top5_correct()), (None, None));
}

/// Four frames, three scenarios, numbers checked by hand below.
pub(crate) fn frames() -> Vec<Vec<Record>> {
    vec![
        // f1: clean right, fog wrong (top-5 hit), noise right.
        vec![
            rec("f1", "clean", Some(1), &[1, 2]),
            rec("f1", "fog", Some(1), &[2, 1]),
            rec("f1", "noise", Some(1), &[1, 0]),
        ],
        // f2: clean wrong, fog right, noise wrong (top-5 miss), noise's top-1 agrees with clean.
        vec![
            rec("f2", "clean", Some(4), &[3, 4]),
            rec("f2", "fog", Some(4), &[4, 3]),
            rec("f2", "noise", Some(4), &[3, 0]),
        ],
        // f3: unlabelled; fog agrees with clean, noise does not.
        vec![
            rec("f3", "clean", None, &[7]),
            rec("f3", "fog", None, &[7]),
            rec("f3", "noise", None, &[8]),
        ],
        // f4: no clean record; labelled fog right, noise wrong.
        vec![
            rec("f4", "fog", Some(0), &[0]),
            rec("f4", "noise", Some(0), &[9]),
        ],
    ]
}

#[test]
fn flips_over_consecutive_frames_against_the_clean_baseline() {
    // Clean top-1 per frame: 1 1 2 2 3; "blur" (evaluated on frames 1, 2, 3 and 5, as a schedule
    // would): 5 6 6 _ 6 — pairs (1,2) flip, (2,3) no flip; frame 4 is missing, so (3,5) is no pair.
    let clean = [1, 1, 2, 2, 3];
    let blur = [Some(5), Some(6), Some(6), None, Some(6)];
    let mut m = Metrics::new(keys(&["clean", "blur"]));
    for (i, (c, b)) in clean.iter().zip(blur).enumerate() {
        let id = format!("f{i}");
        let mut f = vec![rec(&id, "clean", None, &[*c])];
        if let Some(b) = b {
            f.push(rec(&id, "blur", None, &[b]));
        }
        m.add_frame(&f);
    }
    let c = m.tally("clean").unwrap();
    assert_eq!((c.flip_pairs, c.flips), (4, 2));
    assert_eq!(
        (c.flip_probability(), c.flip_excess()),
        (Some(0.5), Some(0.0))
    );
    let b = m.tally("blur").unwrap();
    assert_eq!((b.flip_pairs, b.flips), (2, 1));
    assert_eq!(b.flip_probability(), Some(0.5));
    // On blur's two pairs clean flipped once ((2,3): 1 → 2) and blur once: excess 0; with
    // blur steady where clean changes it would be negative.
    assert_eq!(
        (b.flip_pairs_clean, b.clean_flips, b.flips_with_clean),
        (2, 1, 1)
    );
    assert_eq!(b.flip_excess(), Some(0.0));
    let mut steady = Metrics::new(keys(&["clean", "blur"]));
    for (i, c) in clean.iter().enumerate() {
        let id = format!("g{i}");
        steady.add_frame(&[rec(&id, "clean", None, &[*c]), rec(&id, "blur", None, &[9])]);
    }
    let b = steady.tally("blur").unwrap();
    assert_eq!(
        (b.flip_probability(), b.flip_excess()),
        (Some(0.0), Some(-0.5))
    );
    assert_eq!(Tally::default().flip_probability(), None);
}

#[test]
fn tallies_by_hand() {
    let mut m = Metrics::new(keys(&["clean", "fog", "noise"]));
    for f in frames() {
        m.add_frame(&f);
    }
    assert_eq!(m.frames(), 4);
    assert_eq!(m.keys(), keys(&["clean", "fog", "noise"]).as_slice());

    let c = m.tally("clean").unwrap();
    assert_eq!(
        (c.n, c.n_labelled, c.top1_correct, c.top5_correct),
        (3, 2, 1, 2)
    );
    assert_eq!(c.top1(), Some(0.5));
    assert_eq!(c.top5(), Some(1.0));
    assert_eq!(c.drop(), Some(0.0));
    assert_eq!(c.agreement(), Some(1.0));
    assert_eq!(c.top1_ci95(), Some(wilson_interval(1, 2, Z95)));

    let f = m.tally("fog").unwrap();
    // Labelled: f1 wrong, f2 right, f4 right → 2/3 top-1; top-5: all three hit.
    assert_eq!(
        (f.n, f.n_labelled, f.top1_correct, f.top5_correct),
        (4, 3, 2, 3)
    );
    // Paired with labelled clean: f1, f2. clean 1/2, fog 1/2 → drop 0.
    assert_eq!(
        (f.paired, f.paired_clean_correct, f.paired_correct),
        (2, 1, 1)
    );
    assert_eq!(f.drop(), Some(0.0));
    // Agreement over f1..f3: f1 2≠1, f2 4≠3, f3 7=7 → 1/3.
    assert_eq!((f.with_clean, f.agree), (3, 1));
    assert!((f.agreement().unwrap() - 1.0 / 3.0).abs() < 1e-15);

    let n = m.tally("noise").unwrap();
    // Labelled: f1 right, f2 wrong, f4 wrong → 1/3; top-5: f1 hit, f2 miss, f4 miss.
    assert_eq!(
        (n.n, n.n_labelled, n.top1_correct, n.top5_correct),
        (4, 3, 1, 1)
    );
    // Paired: f1 (clean right, noise right), f2 (clean wrong, noise wrong) → drop 0.
    assert_eq!(n.drop(), Some(0.0));
    // Agreement: f1 1=1, f2 3=3, f3 8≠7 → 2/3.
    assert_eq!((n.with_clean, n.agree), (3, 2));
}

#[test]
fn per_class_tallies_by_hand() {
    let mut m = Metrics::new(keys(&["clean", "fog", "noise"]));
    for f in frames() {
        m.add_frame(&f);
    }
    let fog = m.class_tallies("fog").unwrap();
    // fog: class 1 (f1) wrong, class 4 (f2) right, class 0 (f4) right; f3 is unlabelled.
    let got: Vec<(usize, u64, u64)> = fog.iter().map(|(c, t)| (*c, t.n, t.top1_correct)).collect();
    assert_eq!(got, vec![(0, 1, 1), (1, 1, 0), (4, 1, 1)]);
    assert_eq!(fog[&1].top1(), Some(0.0));
    // The per-class counts add up to the scenario's labelled counts.
    for (key, t) in m.tallies() {
        let pc = m.class_tallies(key).unwrap();
        assert_eq!(pc.values().map(|c| c.n).sum::<u64>(), t.n_labelled);
        assert_eq!(
            pc.values().map(|c| c.top1_correct).sum::<u64>(),
            t.top1_correct
        );
    }
    assert!(m.class_tallies("nope").is_none());
    assert_eq!(ClassTally::default().top1(), None);
}

#[test]
fn drop_is_clean_minus_scenario_on_paired_frames() {
    let mut m = Metrics::new(keys(&["clean", "blur"]));
    // Clean right on 3 of 4 frames, blur right on 1 of them; a fifth frame with unlabelled clean
    // is not paired (blur's own accuracy still counts it).
    for (i, (c, b)) in [(true, true), (true, false), (true, false), (false, false)]
        .iter()
        .enumerate()
    {
        let id = format!("f{i}");
        m.add_frame(&[
            rec(&id, "clean", Some(1), &[if *c { 1 } else { 0 }]),
            rec(&id, "blur", Some(1), &[if *b { 1 } else { 0 }]),
        ]);
    }
    m.add_frame(&[
        rec("f5", "clean", None, &[1]),
        rec("f5", "blur", Some(1), &[1]),
    ]);
    let b = m.tally("blur").unwrap();
    assert_eq!(b.drop(), Some(0.5)); // 3/4 − 1/4
    assert_eq!(b.top1(), Some(0.4)); // 2/5
    assert_eq!(b.paired, 4);
    // Negative drop when the scenario does better.
    let mut m = Metrics::new(vec![]);
    m.add_frame(&[
        rec("x", "clean", Some(1), &[0]),
        rec("x", "sharpen", Some(1), &[1]),
    ]);
    assert_eq!(m.tally("sharpen").unwrap().drop(), Some(-1.0));
}

#[test]
fn undefined_without_labels_or_clean() {
    let mut m = Metrics::new(keys(&["clean", "fog"]));
    m.add_frame(&[rec("a", "fog", None, &[1])]);
    let f = m.tally("fog").unwrap();
    assert_eq!(
        (f.top1(), f.top1_ci95(), f.top5(), f.drop(), f.agreement()),
        (None, None, None, None, None)
    );
    let c = m.tally("clean").unwrap();
    assert_eq!(c.n, 0);
    assert_eq!(c.top1(), None);
}

#[test]
fn order_is_plan_then_first_seen_without_duplicates() {
    let mut m = Metrics::new(keys(&["clean", "b", "clean", "a"]));
    m.add_frame(&[
        rec("x", "z", None, &[1]),
        rec("x", "a", None, &[1]),
        rec("x", "y", None, &[1]),
    ]);
    assert_eq!(m.keys(), keys(&["clean", "b", "a", "z", "y"]).as_slice());
    let names: Vec<&str> = m.tallies().map(|(k, _)| k).collect();
    assert_eq!(names, vec!["clean", "b", "a", "z", "y"]);
    assert!(m.tally("q").is_none());
}

#[test]
fn latency_per_stage_over_all_records() {
    let mut m = Metrics::new(vec![]);
    m.add_frame(&[
        timed(
            rec("a", "clean", None, &[1]),
            &[("infer", 2.0), ("total", 5.0), ("bogus", 1.0)],
        ),
        timed(
            rec("a", "fog", None, &[1]),
            &[("infer", 4.0), ("total", f64::NAN)],
        ),
    ]);
    let stages: Vec<&str> = m.latencies().map(|(s, _)| s.name()).collect();
    assert_eq!(stages, vec!["infer", "total"]);
    assert_eq!(m.latency(Stage::Infer).len(), 2);
    assert_eq!(m.latency(Stage::Infer).quantiles().max, 4.0);
    assert_eq!(m.latency(Stage::Total).len(), 1);
    assert!(m.latency(Stage::Decode).is_empty());
    assert!(Stage::parse("bogus").is_none());
}
