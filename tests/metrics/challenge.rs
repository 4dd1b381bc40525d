//! The adversarial-background challenge end to end on the real model: per-foreground lines in
//! challenge.jsonl, the tally in summary.json, early stop, determinism, and a run without masks
//! reporting the challenge as not applicable.

use std::collections::BTreeSet;
use std::path::Path;

use crate::util::*;
use robustream::scene::random_scene;
use serde_json::Value;

fn run_challenge(source: &Path, out: &Path, workers: &str, extra: &[&str]) -> std::process::Output {
    run(robustream()
        .args([
            "run",
            "--quiet",
            "--seed",
            "3",
            "--challenge",
            "--batch",
            "2",
        ])
        .args(["--workers", workers])
        .args(extra)
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out))
}

fn lines(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("challenge.jsonl"))
        .expect("challenge.jsonl exists")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

#[test]
fn every_foreground_is_tried_until_fooled_and_the_tally_adds_up() {
    let d = tempfile::tempdir().unwrap();
    let source = masked_scenes(d.path());
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    let oa = run_challenge(&source, &a, "1", &[]);
    assert!(oa.status.success(), "{}", text(&oa.stderr));

    let s = summary(&a);
    let info = &s["run"]["challenge"];
    assert_eq!(info["applicable"], true, "{info}");
    let f = info["foregrounds"].as_u64().unwrap();
    let bg = info["backgrounds"].as_u64().unwrap();
    // Every frame has a mask and a truth; all fit the default bounds, and every frame gives the pool
    // a background.
    assert_eq!((f, bg), (9, 9), "{info}");
    assert_eq!(info["complete"], true);
    assert_eq!(info["sampled"], false);

    let ls = lines(&a);
    for l in &ls {
        eprintln!("{l}"); // shown when the test fails
    }
    assert_eq!(ls.len() as u64, f);
    let frames: Vec<&str> = ls.iter().map(|l| l["frame"].as_str().unwrap()).collect();
    let mut expected: Vec<String> = (0..8).map(|i| format!("s{i}.png")).collect();
    expected.push("quokka.jpg".into());
    assert_eq!(frames, expected, "foregrounds in source order");
    let pool: BTreeSet<&str> = frames.iter().copied().collect();
    let (mut vulnerable, mut composites, mut early) = (0, 0, 0);
    for l in &ls {
        let n = l["composites"].as_u64().unwrap();
        assert!(n >= 1 && n <= bg, "{l}");
        composites += n;
        if l["vulnerable"] == true {
            vulnerable += 1;
            // Stopped after the first batch holding a wrong prediction: whole batches of 2, or
            // every background.
            assert!(n % 2 == 0 || n == bg, "{l}");
            early += u64::from(n < bg);
            let by = l["fooled_by"].as_str().unwrap();
            assert!(pool.contains(by), "{l}");
            assert_ne!(l["pred"], l["truth"], "{l}");
        } else {
            assert_eq!(
                n, bg,
                "a foreground that survives saw every background: {l}"
            );
            assert!(l["fooled_by"].is_null() && l["pred"].is_null(), "{l}");
        }
    }
    assert_eq!(info["vulnerable"].as_u64().unwrap(), vulnerable);
    assert_eq!(info["composites"].as_u64().unwrap(), composites);
    assert!(composites <= f * bg);
    assert!(
        early > 0 && composites < f * bg,
        "procedural scenes are not ImageNet objects: some must be fooled before the last batch"
    );
    // The IN-9 challenge accuracy of the summary (docs/in9.md#challenge-accuracy).
    let acc = s["metrics"]["in9"]["challenge_accuracy"].as_f64().unwrap();
    assert!((acc - (1.0 - vulnerable as f64 / f as f64)).abs() < 1e-12);
    assert_eq!(
        s["metrics"]["in9"]["challenge"]["composites"].as_u64(),
        Some(composites)
    );

    // Deterministic: another worker count gives the same lines and tally.
    let ob = run_challenge(&source, &b, "3", &[]);
    assert!(ob.status.success(), "{}", text(&ob.stderr));
    assert_eq!(ls, lines(&b));
    assert_eq!(
        s["metrics"]["in9"]["challenge"],
        summary(&b)["metrics"]["in9"]["challenge"]
    );

    // `robustream report` keeps the challenge.
    let o = run(robustream().args(["report", "--format", "json"]).arg(&a));
    assert!(o.status.success());
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        r["metrics"]["in9"]["challenge"],
        s["metrics"]["in9"]["challenge"]
    );
}

#[test]
fn bounds_cap_foregrounds_and_backgrounds_with_a_seeded_choice() {
    let d = tempfile::tempdir().unwrap();
    let source = masked_scenes(d.path());
    let cfg = d.path().join("run.toml");
    std::fs::write(
        &cfg,
        "[challenge]\nenabled = true\nforegrounds = 3\nbackgrounds = 4\n",
    )
    .unwrap();
    let out = d.path().join("r");
    let o = run_challenge(&source, &out, "2", &["--config", cfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let info = summary(&out)["run"]["challenge"].clone();
    assert_eq!(
        (info["foregrounds"].as_u64(), info["backgrounds"].as_u64()),
        (Some(3), Some(4))
    );
    assert_eq!(info["candidates"], 9);
    assert_eq!(info["sampled"], true);
    assert_eq!(info["upper_bound"], 12);
    let ls = lines(&out);
    assert_eq!(ls.len(), 3);
    assert!(ls.iter().all(|l| l["composites"].as_u64().unwrap() <= 4));
    // The sample keeps three frames (the smallest keyed ranks), in source order.
    let idx: Vec<usize> = ls
        .iter()
        .map(|l| {
            let f = l["frame"].as_str().unwrap();
            if f == "quokka.jpg" {
                8
            } else {
                f[1..2].parse().unwrap()
            }
        })
        .collect();
    assert!(idx.windows(2).all(|w| w[0] < w[1]), "{idx:?}");

    let bad = d.path().join("bad.toml");
    std::fs::write(&bad, "[challenge]\nbackgrounds = 0\n").unwrap();
    let o = run(robustream()
        .args(["run", "--config"])
        .arg(&bad)
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(&source));
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("challenge.backgrounds"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn without_masks_the_challenge_says_it_does_not_apply() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("r");
    let o = run(robustream()
        .args(["run", "--challenge", "--model"])
        .arg(model())
        .arg("--source")
        .arg(photo("coffee.png"))
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("challenge: not applicable: no frame with a foreground mask"),
        "{}",
        text(&o.stderr)
    );
    let s = summary(&out);
    assert_eq!(s["run"]["challenge"]["applicable"], false);
    assert!(
        s["metrics"]
            .get("in9")
            .is_none_or(|m| m["challenge_accuracy"].is_null())
    );
    assert!(!out.join("challenge.jsonl").exists());
}

/// A small IN-9 release (docs/in9.md#variations-and-release-layout): three classes, two 224² scenes
/// each in `original` with `fg_mask` .npy masks, and an `only_bg_t` image per scene (another
/// scene's pixels).
fn in9_release(root: &Path) {
    let classes = ["00_dog", "01_bird", "02_wheeled vehicle"];
    for (c, class) in classes.iter().enumerate() {
        for k in 0..2u64 {
            let stem = format!("n{c:08}_{k}");
            let scene = random_scene(224, 224, 700 + c as u64 * 10 + k);
            let dirs =
                ["original", "only_bg_t", "fg_mask"].map(|v| root.join(v).join("val").join(class));
            for dir in &dirs {
                std::fs::create_dir_all(dir).unwrap();
            }
            scene
                .image
                .save(dirs[0].join(format!("{stem}.png")))
                .unwrap();
            random_scene(224, 224, 900 + c as u64 * 10 + k)
                .image
                .save(dirs[1].join(format!("{stem}.png")))
                .unwrap();
            std::fs::write(
                dirs[2].join(format!("{stem}.npy")),
                robustream::source::mask::mask_to_npy(&scene.mask),
            )
            .unwrap();
        }
    }
}

#[test]
fn in9_release_uses_its_fg_masks_and_only_bg_t_backgrounds() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("in9");
    in9_release(&root);
    let desc = model_variant(d.path(), "no_resize.toml", |t| {
        t.replace("resize_shorter = 256", "")
    });
    let cfg = d.path().join("in9.toml");
    std::fs::write(
        &cfg,
        format!(
            "model = {desc:?}\nscenarios = [\"background/only_bg_t\"]\n[source]\npath = {root:?}\n\
             kind = \"in9\"\n[dataset]\nclass_map = {:?}\n[challenge]\nenabled = true\n\
             backgrounds = 4\n",
            crate::util::root().join("configs/in_to_in9.json")
        ),
    )
    .unwrap();
    let out = d.path().join("r");
    let o = run(robustream()
        .args(["run", "--quiet", "--strict", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let info = summary(&out)["run"]["challenge"].clone();
    assert_eq!(info["applicable"], true, "{info}");
    // Stored mode attaches no masks: the challenge reads fg_mask itself for every `original`.
    assert_eq!(info["foregrounds"], 6, "{info}");
    assert_eq!(info["backgrounds"], 4, "{info}");
    let from = info["background_source"].as_str().unwrap();
    assert!(
        from.starts_with("in9 only_bg_t") && from.contains("(6 images, 4 kept)"),
        "{from}"
    );
    let ls = lines(&out);
    assert_eq!(ls.len(), 6);
    for l in &ls {
        assert!(l["frame"].as_str().unwrap().contains("/n0000000"), "{l}");
        assert!(l["truth"].as_u64().unwrap() < 3, "{l}");
        if let Some(by) = l["fooled_by"].as_str() {
            assert!(by.starts_with("only_bg_t/0"), "{l}");
            // Mapped predictions: an IN-9 class or -1 (unmapped ImageNet class = wrong).
            let p = l["pred"].as_i64().unwrap();
            assert!(
                (-1..9).contains(&p) && p != l["truth"].as_i64().unwrap(),
                "{l}"
            );
        }
    }
}

#[test]
fn ctrl_c_during_the_challenge_keeps_a_partial_tally() {
    let d = tempfile::tempdir().unwrap();
    // Foregrounds the model keeps recognising (the quokka as "wombat", its top-1) see every
    // background, so the challenge lasts long enough to be interrupted.
    std::fs::copy(photo("quokka_mask.png"), d.path().join("m.png")).unwrap();
    let mut rows = vec!["path,label,mask".to_string()];
    for i in 0..40 {
        std::fs::copy(photo("quokka.jpg"), d.path().join(format!("q{i}.jpg"))).unwrap();
        rows.push(format!("q{i}.jpg,wombat,m.png"));
    }
    let src = d.path().join("q.csv");
    std::fs::write(&src, rows.join("\n") + "\n").unwrap();
    let out = d.path().join("r");
    let child = robustream()
        .args(["run", "--quiet", "--challenge", "--model"])
        .arg(model())
        .arg("--source")
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let jsonl = out.join("challenge.jsonl");
    while std::fs::read_to_string(&jsonl).map_or(0, |s| s.lines().count()) < 2 {
        assert!(
            t.elapsed().as_secs() < 120,
            "no challenge lines after 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    let info = &s["run"]["challenge"];
    assert_eq!(info["complete"], false, "{info}");
    let done = lines(&out).len() as u64;
    assert!((2..40).contains(&done), "{done}");
    // Only decided foregrounds are counted.
    assert_eq!(info["foregrounds"].as_u64(), Some(done));
    assert_eq!(s["metrics"]["in9"]["challenge"]["complete"], false);
    assert_eq!(
        s["run"]["end"], "completed",
        "the main pass itself was complete"
    );
}
