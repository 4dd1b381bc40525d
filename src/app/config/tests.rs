use super::*;
use crate::source::{Input, MaskMaker};

fn write(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("run.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn paths_are_relative_to_the_config_and_overrides_win() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "model = \"m/model.toml\"\nscenarios = [\"demo\"]\nseed = 3\n[source]\npath = \"photos\"\n\
             [engine]\nlibrary = \"lib/libonnxruntime.so\"\n[pipeline]\nmax_batch = 4\n",
    );
    let c = RunConfig::load(Some(&p), &Overrides::default()).unwrap();
    assert_eq!(c.model, d.path().join("m/model.toml"));
    assert_eq!(c.source.path, d.path().join("photos"));
    assert_eq!(
        c.engine.library,
        Some(d.path().join("lib/libonnxruntime.so"))
    );
    // No `out`: a fresh timestamped folder under runs/, named after the config.
    let out = c.out.to_string_lossy().into_owned();
    assert!(
        out.starts_with("runs/run-") && out.len() == "runs/run-20261126-015400".len(),
        "{out}"
    );
    assert_eq!((c.seed, c.pipeline.max_batch), (3, 4));

    let o = Overrides {
        seed: Some(9),
        scenarios: Some(vec!["clean".into()]),
        strict: true,
        ..Default::default()
    };
    let c = RunConfig::load(Some(&p), &o).unwrap();
    assert_eq!(
        (c.seed, c.strict, c.scenarios.as_slice()),
        (9, true, &["clean".to_string()][..])
    );
}

#[test]
fn ce_baseline_is_read_relative_to_the_config_and_checked_at_load() {
    let d = tempfile::tempdir().unwrap();
    let text = crate::metrics::imagenet_c::BUILTIN_TABLE_TOML
        .replace("model = \"AlexNet\"", "model = \"ResNet-50\"");
    std::fs::create_dir_all(d.path().join("tables")).unwrap();
    std::fs::write(d.path().join("tables/r50.toml"), &text).unwrap();
    let head = "model = \"m.toml\"\n[source]\npath = \"x\"\n[metrics]\n";
    let p = write(
        d.path(),
        &format!("{head}ce_baseline = \"tables/r50.toml\"\n"),
    );
    let c = RunConfig::load(Some(&p), &Overrides::default()).unwrap();
    let t = c.metrics.ce_baseline.expect("the table is loaded");
    assert_eq!(t.model(), "ResNet-50");
    assert_eq!(
        t.origin(),
        d.path().join("tables/r50.toml").display().to_string()
    );
    // Absent: the built-in table (None here).
    let p = write(d.path(), head);
    let c = RunConfig::load(Some(&p), &Overrides::default()).unwrap();
    assert!(c.metrics.ce_baseline.is_none());
    // A missing file, a bad table, a typo of the key: one line each, naming file and key.
    let p = write(d.path(), &format!("{head}ce_baseline = \"nope.toml\"\n"));
    let e = RunConfig::load(Some(&p), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("[metrics] ce_baseline: ImageNet-C baseline table ")
            && e.contains("nope.toml: cannot be read (")
            && e.ends_with("; the path is relative to the config file"),
        "{e}"
    );
    std::fs::write(
        d.path().join("tables/r50.toml"),
        text.replace("clean = 0.4348", "clean = 43.48"),
    )
    .unwrap();
    let p = write(
        d.path(),
        &format!("{head}ce_baseline = \"tables/r50.toml\"\n"),
    );
    let e = RunConfig::load(Some(&p), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("r50.toml: `clean` = 43.48 is not an error rate in [0, 1)"),
        "{e}"
    );
    let p = write(
        d.path(),
        &format!("{head}ce_basline = \"tables/r50.toml\"\n"),
    );
    let e = RunConfig::load(Some(&p), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("ce_basline") && e.contains("run.toml"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn huge_keys_and_values_give_a_bounded_line() {
    let d = tempfile::tempdir().unwrap();
    let long = "k".repeat(20_000);
    for text in [
        format!("model = \"m.toml\"\n{long} = 3\n"),
        format!("model = \"m.toml\"\n[pipeline]\nworkers = \"{long}\"\n"),
        format!("model = \"m.toml\"\nduration = \"{long}\"\n[source]\npath = \"x\"\n"),
    ] {
        let p = write(d.path(), &text);
        let e = RunConfig::load(Some(&p), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("run.toml") && e.contains("kkk"), "{e}");
        assert!(e.chars().count() < 1200 && !e.contains('\n'), "{e}");
    }
}

#[test]
fn engine_batch_sizes_follow_the_largest_batch() {
    let d = tempfile::tempdir().unwrap();
    let head = "model = \"m.toml\"\n[source]\npath = \"x\"\n";
    let load = |text: &str, o: &Overrides| {
        RunConfig::load(Some(&write(d.path(), &format!("{head}{text}"))), o)
    };
    // Absent: the powers of two up to max_batch (8 by default, or --batch).
    let c = load("", &Overrides::default()).unwrap();
    assert_eq!(c.engine.batch_sizes, Some(vec![1, 2, 4, 8]));
    let o = Overrides {
        max_batch: Some(12),
        ..Default::default()
    };
    assert_eq!(
        load("", &o).unwrap().engine.batch_sizes,
        Some(vec![1, 2, 4, 8, 12])
    );
    // Given: kept (sorted), and checked against max_batch.
    let c = load(
        "[engine]\nbatch_sizes = [32, 1]\npartial = \"pad\"\ncudnn_search = \"exhaustive\"\n\
             [pipeline]\nmax_batch = 32\n",
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.engine.batch_sizes, Some(vec![1, 32]));
    assert_eq!(c.engine.partial, Some(crate::engine::Partial::Pad));
    assert_eq!(
        c.engine.cudnn_search,
        crate::engine::CudnnSearch::Exhaustive
    );
    let e = load("[engine]\nbatch_sizes = [1, 16]\n", &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("batch_sizes") && e.contains("max_batch") && !e.contains('\n'),
        "{e}"
    );
    let e = load("[engine]\nbatch_sizes = []\n", &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty"), "{e}");
    let e = load("[engine]\ncudnn_search = \"fast\"\n", &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("cudnn_search") || e.contains("fast"), "{e}");
}

#[test]
fn absurd_thread_batch_wait_pool_and_schedule_values_name_key_file_and_why() {
    let d = tempfile::tempdir().unwrap();
    let head = "model = \"m.toml\"\n[source]\npath = \"x\"\n";
    let load = |text: &str, o: &Overrides| {
        RunConfig::load(Some(&write(d.path(), &format!("{head}{text}"))), o)
    };
    for (text, key, why) in [
        (
            "[engine]\nthreads = 100000\n",
            "[engine] threads",
            "never finish starting",
        ),
        (
            "[pipeline]\nworkers = 5000\n",
            "[pipeline] workers",
            "at most 1024",
        ),
        (
            "[engine]\nengine_thread_warmup = 1000\n",
            "[engine] engine_thread_warmup",
            "at most 10",
        ),
        (
            "[pipeline]\nmax_batch = 100000\n",
            "[pipeline] max_batch",
            "at most 4096",
        ),
        (
            "[pipeline]\nmax_wait_ms = 3600000\n",
            "[pipeline] max_wait_ms",
            "at most 10000",
        ),
        ("[pipeline]\npool = 0\n", "[pipeline] pool", "at least 1"),
        (
            "[pipeline]\nper_frame = 2\n",
            "[pipeline] per_frame",
            "schedule = \"round-robin\"",
        ),
        (
            "[pipeline]\nschedule = \"all\"\nper_frame = 2\n",
            "[pipeline] per_frame",
            "would be ignored",
        ),
    ] {
        let e = load(text, &Overrides::default()).unwrap_err().to_string();
        assert!(
            e.contains(key) && e.contains(why) && e.contains("run.toml") && !e.contains('\n'),
            "{text}: {e}"
        );
    }
    // The same bounds hold for the command-line flags.
    let o = Overrides {
        threads: Some(100_000),
        ..Default::default()
    };
    let e = load("", &o).unwrap_err().to_string();
    assert!(e.contains("--threads") && e.contains("100000"), "{e}");
    let o = Overrides {
        workers: Some(100_000),
        ..Default::default()
    };
    let e = load("", &o).unwrap_err().to_string();
    assert!(e.contains("--workers"), "{e}");
    // Sane values load: the limits themselves, a schedule with its per_frame.
    let c = load(
        "[engine]\nthreads = 1024\n[pipeline]\nworkers = 1024\nmax_wait_ms = 10000\npool = 1\n\
             schedule = \"round-robin\"\nper_frame = 2\n",
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!((c.engine.threads, c.pipeline.pool), (1024, 1));
}

#[test]
fn a_missing_config_file_says_what_to_check() {
    let d = tempfile::tempdir().unwrap();
    let e = RunConfig::load(Some(&d.path().join("nope.toml")), &Overrides::default()).unwrap_err();
    let line = crate::error_line(&e);
    assert!(
        line.contains("nope.toml") && line.ends_with("check the --config path"),
        "{line}"
    );
    assert_eq!(line.matches("os error").count(), 1, "{line}");
}

#[test]
fn normalize_is_lexical() {
    assert_eq!(
        normalize(Path::new("configs/../assets/x")),
        PathBuf::from("assets/x")
    );
    assert_eq!(normalize(Path::new("./a/./b")), PathBuf::from("a/b"));
    assert_eq!(normalize(Path::new("../a")), PathBuf::from("../a"));
    assert_eq!(normalize(Path::new("/r/a/../b")), PathBuf::from("/r/b"));
    assert_eq!(normalize(Path::new("a/..")), PathBuf::from("."));
}

#[test]
fn jpeg_after_corruption_is_a_quality() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "model = \"m.toml\"\njpeg_after_corruption = 85\n[source]\npath = \"x\"\n",
    );
    assert_eq!(
        RunConfig::load(Some(&p), &Overrides::default())
            .unwrap()
            .jpeg_after_corruption,
        Some(85)
    );
    let p = write(
        d.path(),
        "model = \"m.toml\"\njpeg_after_corruption = 0\n[source]\npath = \"x\"\n",
    );
    let e = RunConfig::load(Some(&p), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("jpeg_after_corruption"), "{e}");
}

#[test]
fn a_limit_of_zero_is_refused_where_it_was_given() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "model = \"m.toml\"\nlimit = 0\n[source]\npath = \"x\"\n",
    );
    let e = RunConfig::load(Some(&p), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("`limit = 0` evaluates nothing"), "{e}");
    // The command line wins over the file, in both directions.
    let cli = |limit| Overrides {
        limit: Some(limit),
        ..Overrides::default()
    };
    assert_eq!(RunConfig::load(Some(&p), &cli(3)).unwrap().limit, Some(3));
    let p = write(
        d.path(),
        "model = \"m.toml\"\nlimit = 5\n[source]\npath = \"x\"\n",
    );
    let e = RunConfig::load(Some(&p), &cli(0)).unwrap_err().to_string();
    assert!(
        e.contains("--limit 0 evaluates nothing; give 1 or more"),
        "{e}"
    );
}

#[test]
fn unknown_key_names_key_and_file() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "model = \"m.toml\"\n[pipeline]\nmax_bacth = 4\n");
    let e = RunConfig::load(Some(&p), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("max_bacth") && e.contains("run.toml"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn imagenet_c_source_and_its_clean_folder_are_relative_to_the_config() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "model = \"m.toml\"\n[source]\npath = \"IC\"\nkind = \"imagenet-c\"\nclean = \"val\"\n",
    );
    let c = RunConfig::load(Some(&p), &Overrides::default()).unwrap();
    assert_eq!(c.source.path, d.path().join("IC"));
    assert_eq!(
        c.source.input,
        Input::ImagenetC {
            clean: Some(d.path().join("val"))
        }
    );
}

#[test]
fn source_flag_keeps_the_mask_source_and_the_tables_that_still_apply() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "model = \"m.toml\"\n[source]\npath = \"/dev/video0\"\nlabel = \"tabby\"\n\
             [source.camera]\nfps = 15.0\n[source.segment]\nmodel = \"seg.onnx\"\n",
    );
    let over = |source: &str| Overrides {
        source: Some(source.into()),
        ..Default::default()
    };
    // Another camera: the camera table and the mask source stay; the truth does not.
    let c = RunConfig::load(Some(&p), &over("camera:1")).unwrap();
    assert_eq!(c.source.path, PathBuf::from("camera:1"));
    assert!(matches!(
        &c.source.input,
        Input::Camera { device, settings: Some(_) } if device == Path::new("/dev/video1")
    ));
    let segment_model = |c: &RunConfig| match &c.source.masks {
        Some(MaskMaker::Segment(s)) => Some(s.model.clone()),
        _ => None,
    };
    assert_eq!(segment_model(&c), Some(d.path().join("seg.onnx")));
    assert_eq!(c.source.truth, None);
    // A clip: the camera table no longer applies and is dropped; the mask source stays.
    let c = RunConfig::load(Some(&p), &over("clip.mp4")).unwrap();
    assert!(matches!(c.source.input, Input::Video(_)));
    assert!(segment_model(&c).is_some());
    // A video table stays for another clip, not for a folder.
    let p = write(
        d.path(),
        "model = \"m.toml\"\n[source]\npath = \"a.mp4\"\n[source.video]\nrealtime = true\n\
             [source.plate]\nframes = 10\n",
    );
    let plate = |c: &RunConfig| matches!(c.source.masks, Some(MaskMaker::Plate(_)));
    let c = RunConfig::load(Some(&p), &over("b.mkv")).unwrap();
    assert!(matches!(&c.source.input, Input::Video(v) if v.realtime) && plate(&c));
    let c = RunConfig::load(Some(&p), &over("photos")).unwrap();
    assert!(!matches!(c.source.input, Input::Video(_)) && plate(&c));
}

#[test]
fn source_kind_clean_and_class_map_flags_replace_the_config() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "model = \"m.toml\"\n[source]\npath = \"IC\"\n[dataset]\nclass_map = \"a.json\"\n",
    );
    let o = Overrides {
        source_kind: Some(crate::source::SourceKind::ImagenetC),
        clean: Some("val".into()),
        class_map: Some("b.json".into()),
        ..Default::default()
    };
    let c = RunConfig::load(Some(&p), &o).unwrap();
    assert_eq!(c.source.path, d.path().join("IC"));
    assert_eq!(
        c.source.input,
        Input::ImagenetC {
            clean: Some(PathBuf::from("val"))
        }
    );
    assert_eq!(c.dataset.class_map, Some(PathBuf::from("b.json")));
    // Without a config file: the kind applies to the --source path.
    let o = Overrides {
        model: Some("m.toml".into()),
        source: Some("bg".into()),
        source_kind: Some(crate::source::SourceKind::In9),
        ..Default::default()
    };
    let c = RunConfig::load(None, &o).unwrap();
    assert_eq!(
        (c.source.kind(), c.source.path),
        (crate::source::SourceKind::In9, PathBuf::from("bg"))
    );
    assert_eq!(c.dataset.class_map, None);
}

#[test]
fn missing_model_or_source_says_what_to_do() {
    let e = RunConfig::load(None, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("--model"), "{e}");
    let o = Overrides {
        model: Some("m.toml".into()),
        ..Default::default()
    };
    let e = RunConfig::load(None, &o).unwrap_err().to_string();
    assert!(e.contains("--source"), "{e}");
}

#[test]
fn linger_needs_the_endpoint_and_is_read_once() {
    let d = tempfile::tempdir().unwrap();
    let head = "model = \"m.toml\"\n[source]\npath = \"x\"\n[report]\n";
    let p = write(d.path(), &format!("{head}linger = \"30s\"\n"));
    let e = RunConfig::load(Some(&p), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("`linger`") && e.contains("--prometheus"), "{e}");
    let p = write(
        d.path(),
        &format!("{head}linger = \"30s\"\nprometheus = \"127.0.0.1:0\"\nsummary_every = \"0\"\n"),
    );
    let c = RunConfig::load(Some(&p), &Overrides::default()).unwrap();
    assert_eq!(c.report.linger, Some(std::time::Duration::from_secs(30)));
    assert_eq!(c.report.summary_every, None);
    assert_eq!(c.report.window, DEFAULT_WINDOW);
    let o = Overrides {
        linger: Some(std::time::Duration::from_secs(2)),
        ..Default::default()
    };
    assert_eq!(
        RunConfig::load(Some(&p), &o).unwrap().report.linger,
        Some(std::time::Duration::from_secs(2))
    );
    let p = write(d.path(), &format!("{head}linger = \"soon\"\n"));
    let e = RunConfig::load(Some(&p), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("`[report] linger`"), "{e}");
}

#[test]
fn report_labels_and_run_labels_are_checked_and_the_flag_wins() {
    let d = tempfile::tempdir().unwrap();
    let head = "model = \"m.toml\"\n[source]\npath = \"x\"\n[report]\n";
    let p = write(
        d.path(),
        &format!(
            "{head}labels = {{ line = \"3\", plant = \"north\", rack = 7, device = \"cam-a\" }}\n"
        ),
    );
    let c = RunConfig::load(Some(&p), &Overrides::default()).unwrap();
    let pairs: Vec<(&str, &str)> = c
        .report
        .labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("device", "cam-a"),
            ("line", "3"),
            ("plant", "north"),
            ("rack", "7")
        ]
    );
    // The command line wins per name, a later flag over an earlier one.
    let o = Overrides {
        run_labels: vec![
            ("line".into(), "4".into()),
            ("shift".into(), "night".into()),
            ("line".into(), "5".into()),
        ],
        ..Default::default()
    };
    let c = RunConfig::load(Some(&p), &o).unwrap();
    assert_eq!(c.report.labels["line"], "5");
    assert_eq!(c.report.labels["plant"], "north");
    assert_eq!(c.report.labels["shift"], "night");
    // Bad names: one line naming the key, the rule and where it was written.
    for (labels, said) in [
        ("{ \"line-3\" = \"x\" }", "`line-3`"),
        ("{ __meta = \"x\" }", "starts with `__`"),
        ("{ model = \"x\" }", "label `model` is robustream's own"),
        ("{ instance = \"x\" }", "set by Prometheus when it scrapes"),
        ("{ line = [1, 2] }", "the value of `line` is an array"),
    ] {
        let p = write(d.path(), &format!("{head}labels = {labels}\n"));
        let e = RunConfig::load(Some(&p), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("`[report] labels`") && e.contains(said), "{e}");
        assert!(e.contains("run.toml"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
    let p = write(d.path(), head);
    let o = Overrides {
        run_labels: vec![("plan".into(), "x".into())],
        ..Default::default()
    };
    let e = RunConfig::load(Some(&p), &o).unwrap_err().to_string();
    assert!(
        e.starts_with("command line: --run-label: label `plan` is robustream's own"),
        "{e}"
    );
}

#[test]
fn default_run_directories_are_fresh_and_timestamped() {
    let d = tempfile::tempdir().unwrap();
    let unix = 1_795_711_740; // 2026-11-26T16:49:00Z
    let first = fresh_run_dir(d.path(), "demo", unix);
    assert_eq!(first, d.path().join("demo-20261126-164900"));
    std::fs::create_dir_all(&first).unwrap();
    let second = fresh_run_dir(d.path(), "demo", unix);
    assert_eq!(second, d.path().join("demo-20261126-164900-2"));
    std::fs::create_dir_all(&second).unwrap();
    assert_eq!(
        fresh_run_dir(d.path(), "demo", unix),
        d.path().join("demo-20261126-164900-3")
    );
    assert_eq!(
        fresh_run_dir(d.path(), "demo", unix + 1),
        d.path().join("demo-20261126-164901")
    );
}

#[test]
fn a_components_error_is_carried_typed_and_its_line_says_it_once() {
    use crate::metrics::imagenet_c::TableErrorKind;
    let d = tempfile::tempdir().unwrap();
    let head = "model = \"m.toml\"\n[source]\npath = \"x\"\n[metrics]\n";
    let p = write(d.path(), &format!("{head}ce_baseline = \"nope.toml\"\n"));
    let e = RunConfig::load(Some(&p), &Overrides::default()).unwrap_err();
    match &e {
        ConfigError::Component { source, .. } => match source.as_ref() {
            ComponentError::CeBaseline(t) => assert_eq!(t.kind, TableErrorKind::Read),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    // The cause is in the line already: the whole chain prints the same line.
    assert_eq!(crate::error_line(&e), e.to_string());
    let p = write(
        d.path(),
        "model = \"m.toml\"\nduration = \"5 parsecs\"\n[source]\npath = \"x\"\n",
    );
    let e = RunConfig::load(Some(&p), &Overrides::default()).unwrap_err();
    assert!(
        matches!(&e, ConfigError::Component { source, .. }
            if matches!(source.as_ref(), ComponentError::Duration(_))),
        "{e:?}"
    );
    assert_eq!(crate::error_line(&e), e.to_string());
}
