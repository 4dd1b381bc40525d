//! The background/object metric families end to end, on the real model: one run over procedural
//! scenes (exact masks) and the quokka photo (mask and box), labelled with the model's own clean
//! prediction so accuracies are not trivially 0, through IN-9, XIMAGENET-12, ablation, RFS and
//! placement scenarios. Every family in `summary.json` is checked against the per-scenario lines and
//! the records (RFS, centre/size scores), and `robustream report` rebuilds the same metrics.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::util::*;
use robustream::scene::random_scene;
use serde_json::Value;

pub(crate) const SCENARIOS: &[&str] = &[
    "background/only_fg",
    "background/no_fg",
    "background/mixed_same",
    "background/mixed_rand",
    "background/blur_bg",
    "background/blur_obj",
    "background/segmented",
    "ablation/gray",
    "ablation/tile",
    "region_noise/fg/linf/0.25/t1",
    "region_noise/bg/linf/0.25/t1",
    "region_noise/fg/linf/0.25/t2",
    "region_noise/bg/linf/0.25/t2",
    "placement/own-gray/centre/112",
    "placement/own-gray/top-right/56",
];

/// Six scenes and the quokka; `labels` gives each row's label (`None`: a placeholder 0).
pub(crate) fn write_manifest(dir: &Path, labels: Option<&[usize]>) -> PathBuf {
    let mut rows = vec!["path,label,mask,boxes".to_string()];
    for i in 0..6u64 {
        let s = random_scene(240, 180, 300 + i);
        s.image.save(dir.join(format!("s{i}.png"))).unwrap();
        s.mask.save(dir.join(format!("s{i}_mask.png"))).unwrap();
        let label = labels.map_or(0, |l| l[i as usize]);
        rows.push(format!("s{i}.png,{label},s{i}_mask.png,"));
    }
    let q = std::fs::read_to_string(photo("masks.csv")).unwrap();
    let quokka = q.lines().nth(1).unwrap();
    let (file, rest) = quokka.split_once(',').unwrap();
    let (_, rest) = rest.split_once(',').unwrap();
    let (mask, boxes) = rest.split_once(',').unwrap();
    let label = labels.map_or(0, |l| l[6]);
    rows.push(format!(
        "{},{label},{},{boxes}",
        photo(file).display(),
        photo(mask).display()
    ));
    let m = dir.join("scenes.csv");
    std::fs::write(&m, rows.join("\n") + "\n").unwrap();
    m
}

fn run_on(
    source: &Path,
    out: &Path,
    scenarios: &[&str],
    config: Option<&Path>,
) -> std::process::Output {
    let mut cmd = robustream();
    cmd.args(["run", "--quiet", "--seed", "3"]);
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    cmd.arg("--scenarios")
        .arg(scenarios.join(","))
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out);
    run(&mut cmd)
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() < 1e-12,
        (None, None) => true,
        _ => false,
    }
}

#[test]
fn background_and_object_families_match_scenarios_and_records() {
    let d = tempfile::tempdir().unwrap();
    // Pass 1: the model's clean predictions become the labels (model class = ImageNet index).
    let first = d.path().join("first");
    let out = run_on(&write_manifest(d.path(), None), &first, &["clean"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let preds: Vec<usize> = records(&first)
        .iter()
        .map(|r| r["top5"][0].as_u64().unwrap() as usize)
        .collect();
    assert_eq!(preds.len(), 7);

    // Pass 2 with XIMAGENET-12 inner results from the config.
    let inner = d.path().join("inner.json");
    std::fs::write(
        &inner,
        r#"{"clean": 0.9, "background/blur_bg": 0.8, "background/segmented": 0.6}"#,
    )
    .unwrap();
    let config = d.path().join("run.toml");
    std::fs::write(&config, "[metrics]\nximagenet_inner = \"inner.json\"\n").unwrap();
    let dir = d.path().join("second");
    let source = write_manifest(d.path(), Some(&preds));
    let out = run_on(&source, &dir, SCENARIOS, Some(&config));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = summary(&dir);
    let recs = records(&dir);
    let sc = &s["scenarios"];
    let top1 = |k: &str| f(&sc[k]["top1"]);
    let m = &s["metrics"];
    if std::env::var_os("SHOW").is_some() {
        eprintln!("{:#}", s["scenarios"]);
        eprintln!("{:#}", m);
    }
    assert_eq!(top1("clean"), Some(1.0), "labels are the clean predictions");

    // IN-9: accuracies are the scenario lines, the gap their difference.
    let in9 = &m["in9"];
    assert_eq!(f(&in9["accuracy"]["original"]), Some(1.0));
    for v in ["only_fg", "no_fg", "mixed_same", "mixed_rand"] {
        assert!(
            close(f(&in9["accuracy"][v]), top1(&format!("background/{v}"))),
            "{v}: {in9}"
        );
    }
    let gap = top1("background/mixed_same").zip(top1("background/mixed_rand"));
    assert!(
        gap.is_some(),
        "both mixed variations evaluated on some frame: {sc}"
    );
    assert!(close(f(&in9["bg_gap"]), gap.map(|(a, b)| a - b)), "{in9}");
    assert!(in9["challenge_accuracy"].is_null());

    // Volatility: (C − μ)² per scenario, n − 1, inner results from the config.
    let vol = &m["volatility"];
    let names = ["blur_bg", "blur_obj", "segmented"];
    let accs: Vec<f64> = names
        .iter()
        .map(|n| top1(&format!("background/{n}")).unwrap())
        .collect();
    for (n, a) in names.iter().zip(&accs) {
        assert!(
            close(f(&vol["drop_volatility"][n]), Some((a - 1.0).powi(2))),
            "{vol}"
        );
    }
    let cross = accs.iter().map(|a| (a - 1.0).powi(2)).sum::<f64>() / 2.0;
    assert!(close(f(&vol["variance_cross"]), Some(cross)), "{vol}");
    assert!(close(f(&vol["score_cross"]), Some(1.0 - cross)));
    let inner_var = (0.1f64.powi(2) + 0.3f64.powi(2)) / 1.0;
    assert!(
        (f(&vol["variance_inner"]).unwrap() - inner_var).abs() < 1e-12,
        "{vol}"
    );
    assert!((f(&vol["score"]).unwrap() - (1.0 - cross - inner_var)).abs() < 1e-12);

    // Hard ImageNet: accuracy and drop are the scenario lines'.
    let h = &m["hard_imagenet"]["ablations"];
    assert_eq!(f(&h["none"]["accuracy"]), Some(1.0));
    for a in ["gray", "tile"] {
        let k = format!("ablation/{a}");
        assert!(close(f(&h[a]["accuracy"]), top1(&k)), "{h}");
        assert!(close(f(&h[a]["drop"]), f(&sc[&k]["drop"])), "{h}");
    }

    // RFS from the records: per class over both trials, then the mean over classes.
    let balanced = |side: &str| -> f64 {
        let mut per: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for r in recs.iter().filter(|r| {
            let k = r["scenario"].as_str().unwrap();
            k.starts_with(&format!("region_noise/{side}/linf/0.25/"))
        }) {
            let t = r["truth"].as_u64().unwrap();
            let e = per.entry(t).or_default();
            e.0 += 1;
            e.1 += u64::from(r["pred"].as_i64() == Some(t as i64));
        }
        per.values()
            .map(|(n, c)| *c as f64 / *n as f64)
            .sum::<f64>()
            / per.len() as f64
    };
    let (fg, bg) = (balanced("fg"), balanced("bg"));
    // Class-balanced is not the pooled accuracy here (classes have different frame counts), so the
    // check below tells the two apart.
    let t = &m["rfs"]["typical"];
    assert!(
        close(f(&t["acc_fg"]), Some(fg)) && close(f(&t["acc_bg"]), Some(bg)),
        "{t}"
    );
    let avg = (fg + bg) / 2.0;
    let want = if avg == 0.0 || avg == 1.0 {
        0.0
    } else {
        (bg - fg) / (2.0 * avg.min(1.0 - avg))
    };
    assert!(close(f(&t["rfs"]), Some(want)), "{t}");
    assert_eq!(t["trials"], 2);
    assert_eq!(m["rfs"]["noise"]["linf"]["0.25"], *t);

    // Placement: cells are the scenario lines; centre/size scores from the clean records' boxes.
    let p = &m["placement"];
    let cells = &p["variants"]["square"]["cells"];
    assert!(close(
        f(&cells["own-gray/centre/112"]["accuracy"]),
        top1("placement/own-gray/centre/112")
    ));
    assert!(close(
        f(&cells["own-gray/top-right/56"]["accuracy"]),
        top1("placement/own-gray/top-right/56")
    ));
    // The paper's difficulties: own at 112 is easy, own at 56 medium; no other-background cell.
    let diff = &p["variants"]["square"]["difficulties"];
    assert!(close(
        f(&diff["easy"]["accuracy"]),
        top1("placement/own-gray/centre/112")
    ));
    assert!(close(
        f(&diff["medium"]["accuracy"]),
        top1("placement/own-gray/top-right/56")
    ));
    assert!(diff.get("hard").is_none(), "{diff}");
    let mut scores: BTreeMap<String, (u64, f64, f64)> = BTreeMap::new();
    for r in recs.iter().filter(|r| r["scenario"] == "clean") {
        let boxes = r["boxes"]
            .as_array()
            .expect("every clean record here has boxes");
        let b: Vec<[f64; 4]> = boxes
            .iter()
            .map(|b| std::array::from_fn(|i| b[i].as_f64().unwrap()))
            .collect();
        let centre = b
            .iter()
            .map(|b| {
                1.0 - (0.5 * (b[0] + b[2]) - 0.5)
                    .abs()
                    .max((0.5 * (b[1] + b[3]) - 0.5).abs())
            })
            .sum::<f64>()
            / b.len() as f64;
        let size = b.iter().map(|b| (b[2] - b[0]) * (b[3] - b[1])).sum::<f64>() / b.len() as f64;
        let e = scores.entry(r["truth"].to_string()).or_default();
        *e = (e.0 + 1, e.1 + centre, e.2 + size);
    }
    // Boxes are f32 in the records: the test reads their shortest decimals, the evaluator their
    // exact f32 values, hence the tolerance (a wrong score is off by far more).
    for (class, (n, c, sz)) in &scores {
        let got = &p["classes"][class];
        assert_eq!(got["images"], *n, "{p}");
        assert!(
            (f(&got["centre_score"]).unwrap() - c / *n as f64).abs() < 1e-6,
            "{got} vs {}",
            c / *n as f64
        );
        assert!(
            (f(&got["size_score"]).unwrap() - sz / *n as f64).abs() < 1e-6,
            "{got} vs {}",
            sz / *n as f64
        );
    }
    // No other record carries boxes.
    assert!(
        recs.iter()
            .all(|r| r["scenario"] == "clean" || r.get("boxes").is_none())
    );

    // `report` rebuilds the same metrics from records.jsonl (+ the summary's inner results).
    let out = run(robustream().args(["report", "--format", "json"]).arg(&dir));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rebuilt: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rebuilt["metrics"], s["metrics"]);

    // The terminal table and summary.md carry the sections.
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    for section in [
        "## IN-9 / Backgrounds Challenge",
        "## XIMAGENET-12 volatility",
        "## Hard ImageNet ablations",
        "## Relative foreground sensitivity",
        "## Object placement",
    ] {
        assert!(md.contains(section), "{section}: {md}");
    }
}

#[test]
fn bad_inner_results_fail_before_the_run_naming_file_and_key() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("inner.json"), r#"{"blur_bg": 0.5}"#).unwrap();
    let config = d.path().join("run.toml");
    std::fs::write(&config, "[metrics]\nximagenet_inner = \"inner.json\"\n").unwrap();
    let out = run_on(
        &photo("coffee.png"),
        &d.path().join("o"),
        &["background/blur_bg"],
        Some(&config),
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("inner.json") && err.contains("`blur_bg`"),
        "{err}"
    );
    assert!(!d.path().join("o").join("records.jsonl").exists(), "{err}");
}
