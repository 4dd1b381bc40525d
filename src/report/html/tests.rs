use super::*;
use crate::metrics::Record;
use crate::metrics::tests::rec;
use crate::report::flips::{FlipFrame, Guess};
use crate::report::run_block::RunBlock;
use crate::report::summary::FrameCounts;

/// Scenario keys of every family the page charts.
const KEYS: &[&str] = &[
    "clean",
    "corruption/fog/1",
    "corruption/fog/2",
    "corruption/fog/3",
    "corruption/fog/4",
    "corruption/fog/5",
    "corruption/gaussian_noise/1",
    "corruption/gaussian_noise/2",
    "background/mixed_same",
    "background/mixed_rand",
    "background/blur_bg",
    "background/segmented",
    "ablation/gray",
    "ablation/tile",
    "region_noise/fg/linf/0.25/t1",
    "region_noise/bg/linf/0.25/t1",
    "placement/other/centre/56",
    "placement/other/top-right/56",
    "placement/own-gray/centre/112",
];

/// Twelve labelled frames; scenario `i` is right on frame `f` when `(f + i) % 3 != 0`.
fn metrics() -> Metrics {
    let mut m = Metrics::new(KEYS.iter().map(|k| k.to_string()).collect()).with_window(4);
    for f in 0..12 {
        let id = format!("f{f}");
        let records: Vec<Record> = KEYS
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let right = k == &"clean" || (f + i) % 3 != 0;
                let mut r = rec(&id, k, Some(1), &[if right { 1 } else { 2 }]);
                r.ms.set(crate::metrics::Stage::Infer, 0.2 + f as f64);
                r
            })
            .collect();
        m.add_frame(&records);
    }
    m
}

fn report(m: &Metrics, end: &str) -> String {
    let summary = Summary::from_metrics(
        m,
        RunBlock::from_json(
            serde_json::json!({"config": "configs/x<y>.toml", "model": "m.toml", "end": end}),
        ),
        FrameCounts {
            read: 12,
            skipped: 1,
            dropped: 2,
            lost: 0,
            ..FrameCounts::default()
        },
    );
    HtmlReport {
        summary: &summary,
        latency: latency_of(m),
        resources: vec![
            ResourceSample {
                t_s: 0.0,
                frames: 0,
                dropped: Some(0),
            },
            ResourceSample {
                t_s: 1.0,
                frames: 10,
                dropped: Some(2),
            },
            ResourceSample {
                t_s: 2.0,
                frames: 15,
                dropped: Some(2),
            },
        ],
        flips: vec![FlipFrame {
            frame: "f<1>".into(),
            flips: 3,
            variants: 18,
            truth: Some("wallaby".into()),
            clean: Guess {
                label: "wallaby".into(),
                prob: 0.9,
            },
            clean_correct: Some(true),
            flipped: vec![],
            thumbnail: "data:image/png;base64,AAAA".into(),
        }],
    }
    .render()
}

/// The `data-chart` names of the page's charts, each with its count of drawn marks.
fn charts(html: &str) -> Vec<(String, usize)> {
    html.split("<svg class=\"chart\" data-chart=\"")
        .skip(1)
        .map(|s| {
            let name = s[..s.find('"').unwrap()].to_string();
            let body = &s[..s.find("</svg>").unwrap()];
            (name, body.matches("class=\"mark\"").count())
        })
        .collect()
}

#[test]
fn every_family_has_its_section_and_every_chart_draws() {
    let html = report(&metrics(), "completed");
    for id in [
        "overview",
        "scenarios",
        "imagenet-c",
        "in9",
        "ximagenet",
        "ablations",
        "rfs",
        "placement",
        "latency",
        "timeline",
        "flips",
        "table",
    ] {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "no section {id}"
        );
    }
    let charts = charts(&html);
    let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "scenarios",
        "fog",
        "gaussian_noise",
        "ce",
        "in9",
        "ximagenet",
        "ablations",
        "rfs",
        "placement-square",
        "latency-infer",
        "frames-per-second",
        "window",
    ] {
        assert!(names.contains(&want), "no chart {want} in {names:?}");
    }
    for (name, marks) in &charts {
        assert!(*marks > 0, "chart {name} draws nothing");
    }
    // One bar per scenario.
    assert_eq!(charts[0], ("scenarios".to_string(), KEYS.len() * 2));
    assert!(!html.contains("running — interim"));
}

#[test]
fn the_page_is_self_contained_and_escapes_text() {
    let html = report(&metrics(), "running");
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert!(!html.contains("<script"), "no scripts");
    // The only URLs are the SVG namespace and data URIs.
    let links = html
        .matches("http")
        .count()
        .saturating_sub(html.matches("http://www.w3.org/2000/svg").count());
    assert_eq!(links, 0, "no network references");
    assert!(html.contains("x&lt;y&gt;") && html.contains("f&lt;1&gt;"));
    assert!(html.contains("running — interim"));
}

#[test]
fn an_unlabelled_stream_charts_agreement() {
    let mut m = Metrics::new(vec!["clean".into(), "corruption/fog/1".into()]);
    for f in 0..4 {
        let id = format!("u{f}");
        m.add_frame(&[
            rec(&id, "clean", None, &[1]),
            rec(&id, "corruption/fog/1", None, &[if f == 0 { 2 } else { 1 }]),
        ]);
    }
    let summary = Summary::from_metrics(
        &m,
        RunBlock::from_json(serde_json::json!({})),
        FrameCounts::default(),
    );
    let html = HtmlReport {
        summary: &summary,
        latency: Vec::new(),
        resources: Vec::new(),
        flips: Vec::new(),
    }
    .render();
    assert!(html.contains("Agreement with clean per scenario"));
    for (name, marks) in charts(&html) {
        assert!(marks > 0, "{name}");
    }
    assert!(!html.contains("id=\"latency\"") && !html.contains("id=\"flips\""));
}

#[test]
fn latency_buckets_are_counts_between_the_first_and_last_used_bucket() {
    let mut m = Metrics::new(vec!["clean".into()]);
    for (i, ms) in [0.03, 0.2, 0.2, 30_000.0].iter().enumerate() {
        let mut r = rec(&format!("f{i}"), "clean", None, &[1]);
        r.ms.set(crate::metrics::Stage::Infer, *ms);
        m.add_frame(&[r]);
    }
    let l = latency_of(&m);
    assert_eq!(l.len(), 1);
    let b = &l[0].buckets;
    assert_eq!(b.first(), Some(&(50, 1)));
    assert_eq!(b[2], (250, 2));
    // 30 s is above the last finite bound.
    assert_eq!(b.last(), Some(&(u64::MAX, 1)));
    assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), 4);
}

#[test]
fn resources_csv_reads_old_and_new_columns_and_skips_broken_lines() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("resources.csv");
    std::fs::write(
        &p,
        "t_s,rss_mib,frames,dropped\n0.000,10.0,0,0\n1.000,11.0,5,1\n2.0,1",
    )
    .unwrap();
    let r = read_resources(&p);
    assert_eq!(r.len(), 2);
    assert_eq!((r[1].frames, r[1].dropped), (5, Some(1)));
    std::fs::write(&p, "t_s,rss_mib,frames\n0.000,10.0,3\n").unwrap();
    assert_eq!(read_resources(&p)[0].dropped, None);
    assert!(read_resources(&dir.path().join("none.csv")).is_empty());
}

#[test]
fn a_long_run_s_timeline_is_thinned_to_mean_rates() {
    // A day at one sample a second, 10 frames a second, 1 dropped a second.
    let day: Vec<ResourceSample> = (0..=86_400u64)
        .map(|t| ResourceSample {
            t_s: t as f64,
            frames: 10 * t,
            dropped: Some(t),
        })
        .collect();
    let kept = timeline_samples(&day);
    assert!(kept.len() <= TIMELINE_POINTS + 2, "{}", kept.len());
    assert_eq!(kept.last(), day.last());
    let m = Metrics::new(vec!["clean".into()]);
    let summary = Summary::from_metrics(
        &m,
        RunBlock::from_json(serde_json::json!({})),
        FrameCounts::default(),
    );
    let html = HtmlReport {
        summary: &summary,
        latency: Vec::new(),
        resources: day,
        flips: Vec::new(),
    }
    .render();
    // The chart stays small.
    let chart = &html[html.find("data-chart=\"frames-per-second\"").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    assert!(chart.len() < 60_000, "{} bytes", chart.len());
    // Short runs keep every sample.
    let short: Vec<ResourceSample> = (0..5u64)
        .map(|t| ResourceSample {
            t_s: t as f64,
            frames: t,
            dropped: None,
        })
        .collect();
    assert_eq!(timeline_samples(&short), short);
}
