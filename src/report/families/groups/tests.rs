use super::*;
use crate::metrics::Record;
use crate::metrics::tests::rec;
use crate::report::run_block::RunBlock;
use crate::report::summary::FrameCounts;

const FOG: &str = "corruption/fog/3";

/// One frame of camera `camera` with its clean and fog records, each right or wrong (truth 1).
fn frame(id: &str, camera: &str, clean: bool, fog: bool) -> Vec<Record> {
    [("clean", clean), (FOG, fog)]
        .into_iter()
        .map(|(k, right)| {
            let mut r = rec(id, k, Some(1), &[if right { 1 } else { 2 }]);
            r.groups.insert("camera".into(), camera.into());
            r
        })
        .collect()
}

/// Cameras 1 (4 frames, clean 4/4, fog 3/4) and 2 (4 frames, clean 3/4, fog 1/4).
fn records() -> Vec<Vec<Record>> {
    let spec = [
        ("a", "1", true, true),
        ("b", "1", true, true),
        ("c", "1", true, true),
        ("d", "1", true, false),
        ("e", "2", true, true),
        ("f", "2", true, false),
        ("g", "2", true, false),
        ("h", "2", false, false),
    ];
    spec.iter()
        .map(|&(id, cam, c, f)| frame(id, cam, c, f))
        .collect()
}

fn metrics(reference: Option<&str>) -> Metrics {
    let settings = GroupSettings {
        reference: reference
            .map(|r| [("camera".to_string(), r.to_string())].into())
            .unwrap_or_default(),
    };
    let mut m = Metrics::new(vec!["clean".into(), FOG.into()]).with_groups(settings);
    for f in records() {
        m.add_frame(&f);
    }
    m
}

fn summary(reference: Option<&str>) -> Summary {
    Summary::from_metrics(
        &metrics(reference),
        RunBlock::default(),
        FrameCounts::default(),
    )
}

#[test]
fn the_terminal_line_and_markdown() {
    let s = summary(Some("1"));
    let lines = GroupsFamily.lines(&s).unwrap();
    // Pooled: camera 1 7 of 8, camera 2 4 of 8; the gap 37.5 points.
    assert_eq!(
        lines,
        "Groups by camera (top-1, gaps to 1, points): 1 87.5% (n 8, reference), 2 50.0% (n 8, \
         gap +37.5); worst 2 50.0%\n"
    );
    let md = GroupsFamily.markdown(&s).unwrap();
    assert!(
        md.starts_with("\n## Groups (docs/groups.md)\n\ncamera (gaps to 1; worst 2 50.0%):\n"),
        "{md}"
    );
    // Tables with their padding squashed.
    let md = md
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(md.contains("| 1 | 8 | 87.5% |"), "{md}");
    assert!(md.contains("| reference |"), "{md}");
    assert!(md.contains("| +37.5 points |"), "{md}");
    // Crossed with the scenarios: a row per scenario, a column per camera, and the worst.
    assert!(md.contains("Top-1 per scenario and camera:"), "{md}");
    assert!(md.contains("| clean | 100.0% | 75.0% | 2 |"), "{md}");
    assert!(
        md.contains("| corruption/fog/3 | 75.0% | 25.0% | 2 |"),
        "{md}"
    );
    // Without a reference: gaps to the rest.
    let s = summary(None);
    let lines = GroupsFamily.lines(&s).unwrap();
    assert!(lines.starts_with("Groups by camera (top-1, gaps to the rest, points): 1 87.5% (n 8, gap -37.5), 2 50.0% (n 8, gap +37.5)"), "{lines}");
}

#[test]
fn scalars_name_dimension_group_and_scenario() {
    let s = summary(Some("1"));
    let scalars = GroupsFamily.scalars(&s);
    let get = |name: &str, key: &str| {
        scalars
            .iter()
            .find(|(n, k, _)| *n == name && k.as_deref() == Some(key))
            .map(|(_, _, v)| *v)
    };
    assert_eq!(get("group_top1", "camera=2"), Some(Some(0.5)));
    assert_eq!(get("group_gap", "camera=2"), Some(Some(0.375)));
    assert_eq!(get("group_gap", "camera=1"), Some(None));
    assert_eq!(get("worst_group_top1", "camera"), Some(Some(0.5)));
    assert_eq!(
        get("group_top1", &format!("camera=2@{FOG}")),
        Some(Some(0.25))
    );
    assert_eq!(
        get("group_gap", &format!("camera=2@{FOG}")),
        Some(Some(0.5))
    );
    assert_eq!(get("worst_group_top1", "camera@clean"), Some(Some(0.75)));
    // Every scalar is one of the family's rules.
    for (name, _, _) in &scalars {
        assert!(RULES.iter().any(|r| r.name == *name), "{name}");
    }
    // One scenario only: no `@` keys (they would repeat the pooled ones).
    let mut m = Metrics::new(vec!["clean".into()]);
    for f in records() {
        m.add_frame(&f[..1]);
    }
    let s = Summary::from_metrics(&m, RunBlock::default(), FrameCounts::default());
    let scalars = GroupsFamily.scalars(&s);
    assert!(
        scalars
            .iter()
            .all(|(_, k, _)| !k.as_deref().unwrap().contains('@'))
    );
    assert_eq!(scalars.len(), 5);
}

#[test]
fn a_recompute_from_records_gives_the_same_entry_and_reference() {
    let s = summary(Some("1"));
    let all: Vec<Record> = records().into_iter().flatten().collect();
    let again = Summary::recompute(&all, Some(&s));
    assert_eq!(again.metrics.get("groups"), s.metrics.get("groups"));
    assert_eq!(
        again
            .group_settings()
            .unwrap()
            .reference
            .get("camera")
            .map(String::as_str),
        Some("1")
    );
    // Read back from summary.json's text, too.
    let text = serde_json::to_string(&s).unwrap();
    let read = Summary::from_json(&text).unwrap();
    assert_eq!(read.groups(), s.groups());
    // Without the previous summary the reference is not known: gaps to the rest.
    let bare = Summary::recompute(&all, None);
    assert_eq!(bare.groups().unwrap().dimensions[0].1.reference, None);
    // A summary of frames without groups has no entry.
    let plain: Vec<Record> = all
        .iter()
        .cloned()
        .map(|mut r| {
            r.groups.clear();
            r
        })
        .collect();
    assert!(Summary::recompute(&plain, None).groups().is_none());
    assert!(
        GroupsFamily
            .lines(&Summary::recompute(&plain, None))
            .is_none()
    );
}

#[test]
fn html_and_headline() {
    let s = summary(Some("1"));
    assert_eq!(
        GroupsFamily.headline(&s),
        [("worst group", "camera=2 50.0 %".to_string())]
    );
    let html = GroupsFamily.html(&s).unwrap();
    assert!(
        html.starts_with("<section id=\"groups\"><h2>Groups</h2><svg"),
        "{html}"
    );
    assert!(html.contains("data-chart=\"groups-camera\""), "{html}");
    assert!(html.contains("Top-1 per camera (gaps to 1)"), "{html}");
    assert!(html.ends_with("</p></section>"), "{html}");
}

#[test]
fn prometheus_samples() {
    let m = metrics(Some("1"));
    let mut out = String::new();
    GroupsFamily.prometheus(&m, &mut out);
    assert!(
        out.contains("# TYPE robustream_group_accuracy_ratio gauge\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "robustream_group_accuracy_ratio{dimension=\"camera\",group=\"2\",scenario=\"corruption/fog/3\",family=\"corruption\"} 0.25\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("robustream_group_gap_ratio{dimension=\"camera\",group=\"2\"} 0.375\n"),
        "{out}"
    );
    // The reference has no gap sample.
    assert!(!out.contains("robustream_group_gap_ratio{dimension=\"camera\",group=\"1\"}"));
    assert!(
        out.contains("robustream_group_worst_accuracy_ratio{dimension=\"camera\"} 0.5\n"),
        "{out}"
    );
    // Nothing without groups.
    let mut none = String::new();
    GroupsFamily.prometheus(&Metrics::new(vec!["clean".into()]), &mut none);
    assert!(none.is_empty());
}
