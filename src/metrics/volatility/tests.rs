use super::*;

/// The paper's Table 1 (EX1, ResNet50, %; docs/ximagenet.md#robustness-score): Blur_bg,
/// Blur_obj, Color_g, Color_b, Color_grey, Color_r, Rand_bg, Seg_img.
const RESNET50_EX1: [(&str, f64); 8] = [
    ("blur_bg", 90.97),
    ("blur_obj", 88.17),
    ("color_g", 84.42),
    ("color_b", 86.98),
    ("color_grey", 92.13),
    ("color_r", 89.03),
    ("random_bg_add", 22.41),
    ("segmented", 68.55),
];

#[test]
fn reproduces_table2_resnet50_row() {
    // The paper's clean accuracy μ for ResNet50 was not found in the material we could read
    // (arXiv 2310.08182 Table 1 is not in the stored copies); μ = 95.23 % is derived from Table 2's
    // printed volatilities: it reproduces seven of them to the printed two decimals and Rand_bg
    // within the rounding of the printed accuracies (53.03 vs 53.04; no single μ matches all
    // eight exactly, the paper computed from unrounded C(i)). DenseNet121's row (its Table 1
    // accuracies) was not found either, so it is not tested.
    let mu = 0.9523;
    let mut lines: Vec<(String, Option<f64>)> = vec![("clean".into(), Some(mu))];
    lines.extend(
        RESNET50_EX1
            .iter()
            .map(|(s, a)| (key_of(s), Some(a / 100.0))),
    );
    // σ²_inner of ResNet50 from Table 2 (0.0112), as a file would give it: an inner set whose
    // variance is that number, two scenarios around μ' = 0.9.
    let d = (0.0112f64 / 2.0).sqrt();
    let inner = InnerResults(BTreeMap::from([
        ("clean".to_string(), 0.9),
        ("background/blur_bg".to_string(), 0.9 + d),
        ("background/blur_obj".to_string(), 0.9 - d),
    ]));
    let v = compute(lines.iter().map(|(k, a)| (k.as_str(), *a)), Some(&inner)).unwrap();
    // Table 2's volatilities (%), in Table 1's column order.
    let printed = [0.18, 0.50, 1.17, 0.68, 0.10, 0.38, 53.04, 7.12];
    assert_eq!(v.drop_volatility.len(), 8);
    for ((name, _), want) in RESNET50_EX1.iter().zip(printed) {
        let (_, vol) = v.drop_volatility.iter().find(|(n, _)| n == name).unwrap();
        let pct = vol.unwrap() * 100.0;
        // Printing to two decimals (0.005) plus the accuracies' own rounding to 0.01 %
        // (C and μ each ±0.00005 move (C − μ)² × 100 by up to 2·|C − μ|·0.0001·100).
        let c = RESNET50_EX1.iter().find(|(n, _)| n == name).unwrap().1 / 100.0;
        let tolerance = 0.005 + 2.0 * (c - mu).abs() * 0.01;
        assert!((pct - want).abs() <= tolerance, "{name}: {pct} vs {want}");
    }
    assert_eq!(v.n, 8);
    let cross = v.variance_cross.unwrap();
    assert_eq!(format!("{cross:.4}"), "0.0902");
    // The group `ximagenet12-table2` is exactly these eight, in the paper's column order;
    // σ²_cross covers them, and the Table 2 score is the same number.
    let names: Vec<&str> = RESNET50_EX1.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, TABLE2.to_vec());
    let group = crate::scenario::Catalog::builtin()
        .expand("ximagenet12-table2")
        .unwrap();
    assert_eq!(group, TABLE2.map(key_of).to_vec());
    let mut covered = v.scenarios.clone();
    covered.sort();
    let mut want = TABLE2.map(String::from).to_vec();
    want.sort();
    assert_eq!(covered, want);
    let t2 = v.table2.unwrap();
    // The same sum in another order (Table 2's, not the section's): equal to rounding.
    assert!((t2.variance_cross - cross).abs() < 1e-15);
    assert!((t2.score_cross - (1.0 - cross)).abs() < 1e-15);
    assert!((v.variance_inner.unwrap() - 0.0112).abs() < 1e-12);
    // Printed S_robust 0.8985; 1 − (0.0902 + 0.0112) = 0.8986 after the paper's own rounding.
    assert!((v.score.unwrap() - 0.8985).abs() < 2e-4, "{:?}", v.score);
    assert_eq!(v.score_cross, Some(1.0 - cross));
}

#[test]
fn table2_score_is_over_the_eight_only() {
    // The whole group plus the Table 2 set: σ²_cross covers everything present, `table2` only
    // the eight (here the paper's ResNet50 accuracies, whatever the others are).
    let mu = 0.9523;
    let mut lines: Vec<(String, Option<f64>)> = vec![("clean".into(), Some(mu))];
    lines.extend(
        RESNET50_EX1
            .iter()
            .map(|(s, a)| (key_of(s), Some(a / 100.0))),
    );
    for extra in [
        "transparent",
        "bright_bg",
        "random_bg_paste_bgt",
        "transparent_on/00ff00",
    ] {
        lines.push((key_of(extra), Some(0.1)));
    }
    lines.push(("background/only_fg".into(), Some(0.0)));
    let v = compute(lines.iter().map(|(k, a)| (k.as_str(), *a)), None).unwrap();
    assert_eq!(v.n, 12);
    assert_eq!(
        v.scenarios,
        [
            "blur_bg",
            "blur_obj",
            "color_r",
            "color_g",
            "color_b",
            "color_grey",
            "bright_bg",
            "segmented",
            "transparent",
            "random_bg_add",
            "random_bg_paste_bgt",
            "transparent_on/00ff00"
        ]
    );
    assert_eq!(format!("{:.4}", v.table2.unwrap().variance_cross), "0.0902");
    assert!(v.variance_cross.unwrap() > 0.2);
    // One of the eight missing (or without an accuracy): no Table 2 score.
    let v = compute(
        lines
            .iter()
            .filter(|(k, _)| k != "background/segmented")
            .map(|(k, a)| (k.as_str(), *a)),
        None,
    )
    .unwrap();
    assert_eq!(v.table2, None);
    let v = compute(
        lines.iter().map(|(k, a)| {
            let a = if k == "background/color_r" { None } else { *a };
            (k.as_str(), a)
        }),
        None,
    )
    .unwrap();
    assert_eq!((v.table2, v.n), (None, 11));
}

#[test]
fn n_minus_1_and_undefined_cases() {
    assert_eq!(variance_n_minus_1(&[0.5], 0.9), None);
    // (0.1² + 0.3²) / 1 = 0.1.
    assert!((variance_n_minus_1(&[0.8, 0.6], 0.9).unwrap() - 0.1).abs() < 1e-15);
    // One scenario: volatility but no variance.
    let v = compute(
        [("clean", Some(0.9)), ("background/blur_bg", Some(0.5))],
        None,
    )
    .unwrap();
    assert!((v.drop_volatility[0].1.unwrap() - 0.16).abs() < 1e-15);
    assert_eq!((v.n, v.variance_cross, v.score_cross), (1, None, None));
    // No clean accuracy: nothing but the list of scenarios.
    let v = compute(
        [
            ("background/blur_bg", Some(0.5)),
            ("background/segmented", Some(0.2)),
        ],
        None,
    )
    .unwrap();
    assert_eq!((v.mu, v.n, v.variance_cross), (None, 0, None));
    assert_eq!(v.drop_volatility[1], ("segmented".to_string(), None));
    // No XIMAGENET-12 scenario: no section.
    assert_eq!(
        compute(
            [("clean", Some(1.0)), ("background/only_fg", Some(1.0))],
            None
        ),
        None
    );
    // Inner results without a clean entry use the run's μ; score needs both variances.
    let inner = InnerResults(BTreeMap::from([("background/blur_bg".to_string(), 0.7)]));
    let v = compute(
        [
            ("clean", Some(0.9)),
            ("background/blur_bg", Some(0.8)),
            ("background/blur_obj", Some(0.6)),
        ],
        Some(&inner),
    )
    .unwrap();
    assert_eq!((v.variance_inner, v.score), (None, None));
    assert!((v.score_cross.unwrap() - 0.9).abs() < 1e-15);
}

#[test]
fn inner_results_file_is_checked() {
    let p = Path::new("inner.json");
    let ok = InnerResults::parse(r#"{"clean": 0.9, "background/blur_bg": 0.5}"#, p).unwrap();
    assert_eq!(ok.0.len(), 2);
    let e = InnerResults::parse(r#"{"blur_bg": 0.5}"#, p).unwrap_err();
    assert!(
        e.to_string().contains("inner.json") && e.to_string().contains("`blur_bg`"),
        "{e}"
    );
    let e = InnerResults::parse(r#"{"background/blur_bg": 90.5}"#, p).unwrap_err();
    assert!(e.to_string().contains("not a fraction"), "{e}");
    let e = InnerResults::parse(r#"{"clean": "x"}"#, p).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("XIMAGENET-12 inner results inner.json"),
        "{e}"
    );
    let e = InnerResults::read(Path::new("/nonexistent/inner.json")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/inner.json"), "{e}");
}

#[test]
fn names_match_the_catalogue() {
    let names: Vec<&str> = crate::scenario::background::XIMAGENET12
        .iter()
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(names, SCENARIOS.to_vec());
    for t in TABLE2 {
        assert!(SCENARIOS.contains(&t), "{t}");
    }
    assert!(rank("background/transparent_on/grey").is_some());
    assert!(rank("background/transparent_on/nope").is_none());
    assert!(rank("background/only_fg").is_none());
}

#[test]
fn inner_results_that_are_a_device_a_fifo_or_huge_are_refused_with_their_fix() {
    let dir = tempfile::tempdir().unwrap();
    let limit = crate::fsread::MAX_TEXT_BYTES;
    for (path, why) in crate::fsread::refused_paths(dir.path(), limit) {
        let e = InnerResults::read(&path).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "cannot read XIMAGENET-12 inner results {}: {why}",
                path.display()
            )) && e.contains("check `ximagenet_inner` in `[metrics]`"),
            "{e}"
        );
    }
}
