use super::*;

fn table() -> &'static BaselineTable {
    BaselineTable::builtin().expect("the built-in table parses")
}

/// Every plan key of the 19 corruptions × 5 and clean, with errors from `f(name, severity)`.
fn all_keys(clean: Option<f64>, f: impl Fn(&str, u8) -> Option<f64>) -> Vec<(String, Option<f64>)> {
    let mut v = vec![("clean".to_string(), clean)];
    for (name, _) in CORRUPTIONS {
        for s in SEVERITIES {
            v.push((format!("corruption/{name}/{s}"), f(name, s)));
        }
    }
    v
}

fn run(v: &[(String, Option<f64>)]) -> Option<ImagenetC> {
    compute(table(), v.iter().map(|(k, e)| (k.as_str(), *e)))
}

#[test]
fn builtin_table_matches_the_published_averages() {
    let t = table();
    // The "average" column of docs/imagenet-c.md#alexnet-baseline-errors; the first 15 are
    // augmix's ALEXNET_ERR list.
    let published = [
        0.886428, 0.894468, 0.922640, 0.819880, 0.826268, 0.785948, 0.798360, 0.866816, 0.826572,
        0.819324, 0.564592, 0.853204, 0.646056, 0.717840, 0.606500, 0.845388, 0.787108, 0.717512,
        0.658248,
    ];
    assert_eq!(t.errors().len(), 19);
    for ((name, e), want) in t.errors().iter().zip(published) {
        let avg = e.iter().sum::<f64>() / 5.0;
        assert!((avg - want).abs() < 1e-9, "{name}: {avg} vs {want}");
    }
    // Spot values of the per-severity table (docs/imagenet-c.md#alexnet-baseline-errors) and
    // the clean error (docs/imagenet-c.md#relative-ce-and-relative-mce).
    assert_eq!(t.errors_of("snow").unwrap()[1], 0.88392);
    assert_eq!(t.errors_of("saturate").unwrap()[2], 0.51174);
    assert_eq!(t.clean(), Some(0.4348));
    // Same order as the corruption catalogue; the benchmark is its first 15.
    let names: Vec<&str> = t.errors().iter().map(|(n, _)| n.as_str()).collect();
    let ours: Vec<&str> = CORRUPTIONS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ours);
    assert_eq!(t.benchmark(), &names[..15]);
    assert_eq!(t.origin(), "configs/imagenet_c_alexnet.toml");
    assert_eq!(t.model(), "AlexNet");
    assert!(t.is_builtin());
}

#[test]
fn alexnet_scores_exactly_one() {
    let t = table();
    let v = all_keys(t.clean(), |n, s| {
        Some(t.errors_of(n).unwrap()[usize::from(s - 1)])
    });
    let m = run(&v).unwrap();
    assert_eq!(m.ce.len(), 19);
    assert!(m.ce.iter().all(|(_, c)| *c == 1.0), "{:?}", m.ce);
    assert!(m.relative_ce.iter().all(|(_, c)| *c == Some(1.0)));
    assert_eq!((m.mce, m.relative_mce), (Some(1.0), Some(1.0)));
    assert_eq!((m.mce_all19, m.relative_mce_all19), (Some(1.0), Some(1.0)));
    assert!(m.incomplete.is_empty());
    assert_eq!(m.clean_error, Some(0.4348));
    assert_eq!(m.errors[7].1[1], Some(0.88392));
}

#[test]
fn half_of_alexnets_errors_is_half() {
    // Halving is exact in binary floating point, so every ratio is exactly 0.5.
    let t = table();
    let v = all_keys(t.clean().map(|c| c / 2.0), |n, s| {
        Some(t.errors_of(n).unwrap()[usize::from(s - 1)] / 2.0)
    });
    let m = run(&v).unwrap();
    assert_eq!((m.mce, m.relative_mce), (Some(0.5), Some(0.5)));
    assert_eq!((m.mce_all19, m.relative_mce_all19), (Some(0.5), Some(0.5)));
}

#[test]
fn hand_computed_ce_and_relative_ce() {
    // contrast errors 0.1..0.5 (Σ 1.5); AlexNet Σ = 0.64548 + 0.76150 + 0.88874 + 0.97760 +
    // 0.99270 = 4.26602. CE = 1.5 / 4.26602; with clean error 0.05 the relative CE is
    // (1.5 − 0.25) / (4.26602 − 5 × 0.4348) = 1.25 / 2.09202.
    let v: Vec<(String, Option<f64>)> = [
        ("clean", 0.05),
        ("corruption/contrast/1", 0.1),
        ("corruption/contrast/2", 0.2),
        ("corruption/contrast/3", 0.3),
        ("corruption/contrast/4", 0.4),
        ("corruption/contrast/5", 0.5),
    ]
    .iter()
    .map(|(k, e)| (k.to_string(), Some(*e)))
    .collect();
    let m = run(&v).unwrap();
    assert_eq!(m.ce.len(), 1);
    assert_eq!(m.ce[0].0, "contrast");
    assert!(
        (m.ce[0].1 - 0.351_615_791_768_44).abs() < 1e-12,
        "{}",
        m.ce[0].1
    );
    let rel = m.relative_ce[0].1.unwrap();
    assert!((rel - 0.597_508_628_024_59).abs() < 1e-12, "{rel}");
    assert_eq!(
        m.errors,
        vec![(
            "contrast".to_string(),
            [Some(0.1), Some(0.2), Some(0.3), Some(0.4), Some(0.5)]
        )]
    );
    // One corruption is not the benchmark: no mCE.
    assert_eq!((m.mce, m.relative_mce, m.mce_all19), (None, None, None));
    assert!(m.incomplete.is_empty());
    assert_eq!(m.benchmark_complete(table()), 1);
}

#[test]
fn incomplete_corruptions_are_listed_with_their_missing_severities() {
    // fog at severities 1 and 3 only, and severity 2 of snow without labelled frames.
    let mut v = vec![
        ("clean".to_string(), Some(0.2)),
        ("corruption/fog/3".to_string(), Some(0.5)),
        ("corruption/fog/1".to_string(), Some(0.4)),
        ("background/whatever".to_string(), Some(0.1)),
    ];
    for s in SEVERITIES {
        v.push((format!("corruption/snow/{s}"), (s != 2).then_some(0.5)));
    }
    let m = run(&v).unwrap();
    assert!(m.ce.is_empty() && m.relative_ce.is_empty());
    assert_eq!(
        m.incomplete,
        vec![
            ("snow".to_string(), vec![2]),
            ("fog".to_string(), vec![2, 4, 5]),
        ]
    );
    assert_eq!(m.errors[1].1, [Some(0.4), None, Some(0.5), None, None]);
    assert_eq!(m.mce, None);
    // Nothing of ImageNet-C in the plan: no entry at all.
    assert!(run(&[("clean".to_string(), Some(0.5))]).is_none());
}

#[test]
fn validation_corruptions_count_only_for_all19() {
    let v = all_keys(Some(0.3), |n, _| (n != "saturate").then_some(0.6));
    let m = run(&v).unwrap();
    assert_eq!(m.ce.len(), 18);
    assert!(m.mce.is_some() && m.relative_mce.is_some());
    assert_eq!((m.mce_all19, m.relative_mce_all19), (None, None));
    assert_eq!(
        m.incomplete,
        vec![("saturate".to_string(), vec![1, 2, 3, 4, 5])]
    );
    // Without a clean error: CE and mCE, but no relative ones.
    let v = all_keys(None, |_, _| Some(0.6));
    let m = run(&v).unwrap();
    assert!(m.mce.is_some() && m.mce_all19.is_some());
    assert_eq!((m.relative_mce, m.relative_mce_all19), (None, None));
    assert!(m.relative_ce.iter().all(|(_, r)| r.is_none()));
    assert_eq!(m.relative_ce.len(), 19);
}

#[test]
fn json_form() {
    let t = table();
    let v = all_keys(t.clean(), |n, s| {
        (n != "fog" || s != 4).then(|| t.errors_of(n).unwrap()[usize::from(s - 1)])
    });
    let m = run(&v).unwrap();
    let j = serde_json::to_value(&m).unwrap();
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "baseline",
            "clean_error",
            "errors",
            "ce",
            "relative_ce",
            "mce",
            "relative_mce",
            "mce_all19",
            "relative_mce_all19",
            "incomplete",
            "normalisation"
        ]
    );
    assert_eq!(j["incomplete"], serde_json::json!({"fog": [4]}));
    assert_eq!(j["errors"]["fog"][3], serde_json::Value::Null);
    assert_eq!(j["ce"]["gaussian_noise"], 1.0);
    let order: Vec<&str> = j["ce"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        order[..3],
        ["gaussian_noise", "shot_noise", "impulse_noise"]
    );
    assert!(j["mce"].is_null() && j["mce_all19"].is_null());
    assert_eq!(j["baseline"], "AlexNet");
    // The built-in table's description, unchanged by configurable baselines.
    assert_eq!(
        j["normalisation"],
        "AlexNet top-1 errors per corruption and severity, clean error 0.4348 \
             (configs/imagenet_c_alexnet.toml; hendrycks README table, \
             docs/imagenet-c.md#alexnet-baseline-errors); mCE over the 15 benchmark corruptions"
    );
    let back: ImagenetC = serde_json::from_value(j.clone()).unwrap();
    assert_eq!(back, m);
    // A summary written before `baseline` existed reads back as AlexNet's.
    let mut old = j;
    old.as_object_mut().unwrap().remove("baseline");
    let back: ImagenetC = serde_json::from_value(old).unwrap();
    assert_eq!(back.baseline, "AlexNet");
    assert_eq!(back.table().unwrap(), table());
}

/// The errors of a made-up model: irregular, all in (0, 1), above `CLEAN` on every row.
fn own_error(corruption_index: usize, severity: u8) -> f64 {
    0.3 + 0.02 * corruption_index as f64 + 0.05 * f64::from(severity)
        - 0.013 * ((corruption_index * 7 + usize::from(severity)) % 5) as f64
}
const CLEAN: f64 = 0.21;

/// A table in the built-in format with `error(index, severity)` for every corruption and
/// `head` (e.g. `model`, `clean`) before the benchmark list.
fn custom_toml(head: &str, error: impl Fn(usize, u8) -> f64) -> String {
    let mut t = format!("{head}\nbenchmark = [");
    for (name, _) in &CORRUPTIONS[..15] {
        t += &format!("\"{name}\", ");
    }
    t += "]\n[errors]\n";
    for (i, (name, _)) in CORRUPTIONS.iter().enumerate() {
        let e: Vec<String> = SEVERITIES.map(|s| error(i, s).to_string()).collect();
        t += &format!("{name} = [{}]\n", e.join(", "));
    }
    t
}

fn own_keys(clean: Option<f64>, skip: &str) -> Vec<(String, Option<f64>)> {
    let mut v = vec![("clean".to_string(), clean)];
    for (i, (name, _)) in CORRUPTIONS.iter().enumerate() {
        for s in SEVERITIES {
            let e = (*name != skip).then(|| own_error(i, s));
            v.push((format!("corruption/{name}/{s}"), e));
        }
    }
    v
}

#[test]
fn a_baseline_of_the_models_own_errors_scores_exactly_one() {
    let text = custom_toml(
        &format!("model = \"ResNet-50 v1\"\nclean = {CLEAN}"),
        own_error,
    );
    let t = BaselineTable::parse(&text, "tables/r50.toml").unwrap();
    assert!(!t.is_builtin());
    assert_eq!((t.model(), t.origin()), ("ResNet-50 v1", "tables/r50.toml"));
    assert_eq!(t.errors_of("fog").unwrap()[2], own_error(9, 3));
    let m = compute(
        &t,
        own_keys(Some(CLEAN), "")
            .iter()
            .map(|(k, e)| (k.as_str(), *e)),
    )
    .unwrap();
    assert_eq!(m.ce.len(), 19);
    assert!(m.ce.iter().all(|(_, c)| *c == 1.0), "{:?}", m.ce);
    assert!(m.relative_ce.iter().all(|(_, c)| *c == Some(1.0)));
    assert_eq!((m.mce, m.relative_mce), (Some(1.0), Some(1.0)));
    assert_eq!((m.mce_all19, m.relative_mce_all19), (Some(1.0), Some(1.0)));
    assert_eq!(m.baseline, "ResNet-50 v1");
    assert_eq!(m.benchmark_complete(&t), 15);
    assert_eq!(
        m.normalisation,
        "ResNet-50 v1 top-1 errors per corruption and severity, clean error 0.21 \
             (tables/r50.toml); mCE over the 15 benchmark corruptions"
    );
    // The table travels with the metrics, so a rebuilt summary can use it again.
    assert_eq!(m.baseline_table.as_ref(), Some(&t));
    assert_eq!(m.table().unwrap(), &t);
    let j = serde_json::to_value(&m).unwrap();
    assert_eq!(j["baseline_table"]["file"], "tables/r50.toml");
    assert_eq!(j["baseline_table"]["errors"]["fog"][2], own_error(9, 3));
    let back: ImagenetC = serde_json::from_value(j).unwrap();
    assert_eq!(back, m);
    // Against AlexNet the same errors are not 1.
    let a = run(&own_keys(Some(CLEAN), "")).unwrap();
    assert!(a.ce.iter().all(|(_, c)| *c != 1.0), "{:?}", a.ce);

    // A validation corruption incomplete: every complete one is still 1, the mCE too.
    let m = compute(
        &t,
        own_keys(Some(CLEAN), "spatter")
            .iter()
            .map(|(k, e)| (k.as_str(), *e)),
    )
    .unwrap();
    assert_eq!(m.ce.len(), 18);
    assert!(m.ce.iter().all(|(_, c)| *c == 1.0), "{:?}", m.ce);
    assert_eq!((m.mce, m.relative_mce), (Some(1.0), Some(1.0)));
    assert_eq!((m.mce_all19, m.relative_mce_all19), (None, None));
    assert_eq!(
        m.incomplete,
        vec![("spatter".to_string(), vec![1, 2, 3, 4, 5])]
    );
    // A benchmark corruption incomplete: no mCE, and 14 of the 15 counted.
    let m = compute(
        &t,
        own_keys(Some(CLEAN), "fog")
            .iter()
            .map(|(k, e)| (k.as_str(), *e)),
    )
    .unwrap();
    assert_eq!((m.mce, m.relative_mce), (None, None));
    assert_eq!(m.benchmark_complete(&t), 14);
}

#[test]
fn a_baseline_without_clean_error_has_ce_but_no_relative_ce() {
    // As for a run without clean frames: relative CE is reported as unavailable, not an error.
    let text = custom_toml("model = \"mine\"", |_, _| 0.5);
    let t = BaselineTable::parse(&text, "b.toml").unwrap();
    assert_eq!(t.clean(), None);
    let v = all_keys(Some(0.1), |_, s| Some(0.1 * f64::from(s)));
    let m = compute(&t, v.iter().map(|(k, e)| (k.as_str(), *e))).unwrap();
    // Σ_s 0.1·s = 1.5 against Σ_s 0.5 = 2.5.
    assert!(
        m.ce.iter().all(|(_, c)| (*c - 0.6).abs() < 1e-15),
        "{:?}",
        m.ce
    );
    assert!(m.relative_ce.iter().all(|(_, r)| r.is_none()));
    assert!((m.mce.unwrap() - 0.6).abs() < 1e-15);
    assert_eq!((m.relative_mce, m.relative_mce_all19), (None, None));
    assert!(
        m.normalisation.starts_with(
            "mine top-1 errors per corruption and severity, no clean error (so no relative CE) \
                 (b.toml)"
        ),
        "{}",
        m.normalisation
    );
    // Without `model`, the baseline is named by its file.
    let t = BaselineTable::parse(&custom_toml("", |_, _| 0.5), "dir/b.toml").unwrap();
    assert_eq!(t.model(), "dir/b.toml");
}

#[test]
fn bad_custom_tables_give_one_line_naming_file_key_and_fix() {
    let good = custom_toml("model = \"m\"\nclean = 0.2", |_, _| 0.5);
    assert!(BaselineTable::parse(&good, "b.toml").is_ok());
    let bad = |text: &str| {
        let e = BaselineTable::parse(text, "b.toml")
            .unwrap_err()
            .to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(e.starts_with("ImageNet-C baseline table b.toml: "), "{e}");
        e
    };
    // TOML syntax: the parser's position, on one line.
    let e = bad(&good.replace("clean = 0.2", "clean = 0.2 0.3"));
    assert!(e.contains("line 2"), "{e}");
    // A corruption missing.
    let e = bad(&good.replace("\nfog = ", "\n# fog = "));
    assert!(
        e.contains("`errors.fog` is missing; the table needs all 19"),
        "{e}"
    );
    // A severity missing (four values) and one too many.
    let e = bad(&good.replace(
        "fog = [0.5, 0.5, 0.5, 0.5, 0.5]",
        "fog = [0.5, 0.5, 0.5, 0.5]",
    ));
    assert!(
        e.contains("`errors.fog` has 4 values; it needs five"),
        "{e}"
    );
    let e = bad(&good.replace("fog = [0.5,", "fog = [0.5, 0.5,"));
    assert!(e.contains("`errors.fog` has 6 values"), "{e}");
    // Values outside [0, 1]: percentages, negatives, a clean error of 1.
    let e = bad(&good.replace("snow = [0.5,", "snow = [55.0,"));
    assert!(
        e.contains("`errors.snow` holds a value outside [0, 1]"),
        "{e}"
    );
    let e = bad(&good.replace("snow = [0.5,", "snow = [-0.1,"));
    assert!(
        e.contains("`errors.snow` holds a value outside [0, 1]"),
        "{e}"
    );
    let e = bad(&good.replace("clean = 0.2", "clean = 1.0"));
    assert!(
        e.contains("`clean` = 1 is not an error rate in [0, 1)"),
        "{e}"
    );
    // Not a number at all: the parser names the key.
    let e = bad(&good.replace("snow = [0.5,", "snow = [\"x\","));
    assert!(e.contains("errors.snow") || e.contains("snow"), "{e}");
    // Denominators: a row of zeros, a row not above the clean error.
    let e = bad(&custom_toml("", |i, _| if i == 3 { 0.0 } else { 0.5 }));
    assert!(e.contains("`errors.defocus_blur` are all 0"), "{e}");
    let e = bad(&good.replace("clean = 0.2", "clean = 0.6"));
    assert!(e.contains("are not above the clean error"), "{e}");
    // An unknown key (a typo of `model`) and an empty name.
    let e = bad(&good.replace("model = ", "modle = "));
    assert!(e.contains("modle"), "{e}");
    let e = bad(&good.replace("model = \"m\"", "model = \" \""));
    assert!(e.contains("`model` is empty"), "{e}");
}

#[test]
fn reading_a_missing_table_names_the_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("nope.toml");
    let e = BaselineTable::read(&p).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "ImageNet-C baseline table {}: cannot be read (",
            p.display()
        )),
        "{e}"
    );
    assert!(!e.contains('\n'));
    std::fs::write(&p, custom_toml("clean = 0.1", |_, _| 0.4)).unwrap();
    let t = BaselineTable::read(&p).unwrap();
    assert_eq!(t.origin(), p.display().to_string());
}

#[test]
fn a_stored_table_is_validated_when_read_back() {
    let t = BaselineTable::parse(&custom_toml("clean = 0.1", |_, _| 0.4), "b.toml").unwrap();
    let mut j = serde_json::to_value(&t).unwrap();
    assert_eq!(j.get("model"), None);
    assert_eq!(
        serde_json::from_value::<BaselineTable>(j.clone()).unwrap(),
        t
    );
    j["errors"]["fog"][0] = serde_json::json!(3.0);
    let e = serde_json::from_value::<BaselineTable>(j)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("b.toml: `errors.fog` holds a value outside [0, 1]"),
        "{e}"
    );
}

#[test]
fn malformed_tables_are_errors_naming_the_problem() {
    let bad = |edit: &dyn Fn(&str) -> String| {
        BaselineTable::parse(&edit(BUILTIN_TABLE_TOML), "t.toml")
            .unwrap_err()
            .to_string()
    };
    let e = bad(&|t| t.replace("clean = 0.4348", "clean = 1.5"));
    assert!(
        e.starts_with("ImageNet-C baseline table t.toml: `clean`"),
        "{e}"
    );
    let e = bad(&|t| t.replace("snow              =", "snoww ="));
    assert!(
        e.contains("`errors.snoww` is not an ImageNet-C corruption"),
        "{e}"
    );
    let e = bad(&|t| t.replace("saturate          = ", "# "));
    assert!(e.contains("`errors.saturate` is missing"), "{e}");
    let e = bad(&|t| t.replace("0.99452]", "1.99452]"));
    assert!(e.contains("gaussian_noise` holds a value outside"), "{e}");
    let e = bad(&|t| {
        t.replace(
            "\"jpeg_compression\",\n]",
            "\"jpeg_compression\", \"fogg\",\n]",
        )
    });
    assert!(e.contains("`benchmark` names `fogg`"), "{e}");
    let e = bad(&|t| format!("{t}\nextra = 1\n"));
    assert!(e.contains("extra"), "{e}");
    let e = bad(&|t| {
        t.replace(
            "0.61390, 0.79734, 0.88790, 0.89942, 0.93430",
            "0.1, 0.1, 0.1, 0.1, 0.1",
        )
    });
    assert!(
        e.contains("`errors.frost` are not above the clean error"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

#[test]
fn a_table_that_is_a_device_a_fifo_or_huge_is_refused_with_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let limit = crate::fsread::MAX_TEXT_BYTES;
    for (path, why) in crate::fsread::refused_paths(dir.path(), limit) {
        let e = BaselineTable::read(&path).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "ImageNet-C baseline table {}: cannot be read ({why}",
                path.display()
            )) && e.ends_with("check the path (--ce-baseline, or `ce_baseline` in `[metrics]`)"),
            "{e}"
        );
    }
}
