//! `robustream merge` end to end on the real model: a run split into three shards and merged writes
//! the records, summary, post-pass lines and kept frames of the unsharded run (timings aside), and
//! shards that are not one whole run are refused with one line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::util::*;
use serde_json::Value;

/// What tells when and how fast a run ran, or how it was split, rather than what it measured: left
/// out of the comparison of a merged summary with the unsharded run's (JSON pointers).
const TIMING_KEYS: &[&str] = &[
    "/run/started_unix",
    "/run/ended_unix",
    "/run/wall_s",
    "/run/rss_mib",
    "/run/cpu",
    "/run/engine_warmup_ms",
    "/run/batches",
    "/run/shard",
    "/run/merged_from",
    "/run/shards",
    "/latency_ms",
    "/run/challenge/seconds",
    "/run/challenge/composite_ms",
    "/run/challenge/infer_ms",
    "/metrics/saliency/seconds",
];

/// `summary.json` of `dir` without [`TIMING_KEYS`].
fn summary_without_timings(dir: &Path) -> Value {
    let mut s = summary(dir);
    for key in TIMING_KEYS {
        let (parent, last) = key.rsplit_once('/').unwrap();
        if let Some(o) = s.pointer_mut(parent).and_then(Value::as_object_mut) {
            // Keeping the order of the others: the comparison is of the text.
            o.shift_remove(last);
        }
    }
    s
}

/// `robustream run --quiet <args> --out OUT` (plus `--shard I/3` for `Some(I)`).
fn run_shard(args: &[&str], out: &Path, shard: Option<u64>) -> std::process::Output {
    let mut cmd = robustream();
    cmd.args(["run", "--quiet"])
        .args(args)
        .arg("--out")
        .arg(out);
    if let Some(i) = shard {
        cmd.arg("--shard").arg(format!("{i}/3"));
    }
    run(&mut cmd)
}

/// The whole run in `root/whole` and its three shards in `root/s0..s2`, merged into
/// `root/merged`; returns the shards' directories.
fn whole_shards_merged(root: &Path, args: &[&str]) -> Vec<PathBuf> {
    let o = run_shard(args, &root.join("whole"), None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let shards: Vec<PathBuf> = (0..3).map(|i| root.join(format!("s{i}"))).collect();
    for (i, dir) in shards.iter().enumerate() {
        let o = run_shard(args, dir, Some(i as u64));
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert_eq!(summary(dir)["run"]["shard"]["index"], i);
    }
    // In another order than the indices.
    let o = run(robustream()
        .arg("merge")
        .args([&shards[2], &shards[0], &shards[1]])
        .arg("--out")
        .arg(root.join("merged")));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).starts_with("merged 3 shards ("),
        "{}",
        text(&o.stderr)
    );
    shards
}

/// The merged run in `root/merged` against the whole one in `root/whole`: records apart from the
/// timings, summary apart from [`TIMING_KEYS`], the kept frames of the HTML report.
fn assert_merged_is_whole(root: &Path) {
    let (whole, merged) = (root.join("whole"), root.join("merged"));
    let records = records_without_timings(&whole);
    assert!(!records.is_empty());
    assert_eq!(records_without_timings(&merged), records);
    // As text: the same keys in the same order.
    assert_eq!(
        summary_without_timings(&merged).to_string(),
        summary_without_timings(&whole).to_string()
    );
    let s = summary(&merged);
    assert_eq!(s["run"]["shards"], 3);
    assert_eq!(s["run"]["merged_from"].as_array().unwrap().len(), 3);
    assert!(s["run"].get("shard").is_none());
    let flips = |d: &Path| std::fs::read_to_string(d.join("flips.json")).unwrap();
    assert_eq!(flips(&merged), flips(&whole));
    for f in ["summary.md", "report.html"] {
        assert!(merged.join(f).is_file(), "{f}");
    }
}

#[test]
fn demo_photos_in_three_shards_merge_to_the_whole_run() {
    let d = tempfile::tempdir().unwrap();
    let config = root().join("configs/demo.toml");
    let args = [
        "--config",
        path(&config),
        "--scenarios",
        "clean,corruption/fog/2,corruption/gaussian_noise/3,corruption/contrast/4",
    ];
    let shards = whole_shards_merged(d.path(), &args);
    assert_merged_is_whole(d.path());

    // Refusals, each one line naming the directory and the fix; nothing is written.
    let refused = |dirs: &[&Path], says: &str| {
        let out = d.path().join("refused");
        let o = run(robustream().arg("merge").args(dirs).arg("--out").arg(&out));
        assert_eq!(o.status.code(), Some(1));
        let e = text(&o.stderr);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains(says), "{says}: {e}");
        assert!(!out.exists());
        e
    };
    let [s0, s1, s2] = [&shards[0], &shards[1], &shards[2]].map(PathBuf::as_path);
    refused(&[s0, s1], "shard 2 of 3 missing");
    // Another seed: another run.
    let other = d.path().join("seed1");
    let mut seeded = args.to_vec();
    seeded.extend(["--seed", "1"]);
    let o = run_shard(&seeded, &other, Some(2));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let e = refused(
        &[s0, s1, &other],
        "`seed` is 0 in the first and 1 in the second",
    );
    assert!(e.contains(path(&other)), "{e}");
    // A shard whose records also hold another shard's frame.
    let overlap = d.path().join("overlap");
    copy_dir(s2, &overlap);
    let extra = std::fs::read_to_string(s0.join("records.jsonl")).unwrap();
    let first_line = extra.lines().next().unwrap();
    let mut text2 = std::fs::read_to_string(overlap.join("records.jsonl")).unwrap();
    text2.push_str(first_line);
    text2.push('\n');
    std::fs::write(overlap.join("records.jsonl"), text2).unwrap();
    refused(&[s0, s1, &overlap], "both hold position");
    // A run that has not ended (killed, or still going).
    let running = d.path().join("running");
    copy_dir(s1, &running);
    let p = running.join("summary.json");
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    s["run"]["end"] = "running".into();
    std::fs::write(&p, s.to_string()).unwrap();
    refused(
        &[s0, &running, s2],
        &format!(
            "resume it with `robustream run --resume {}`",
            path(&running)
        ),
    );
    // --out an input, --out not empty.
    let o = run(robustream()
        .arg("merge")
        .args([s0, s1, s2])
        .arg("--out")
        .arg(s1));
    assert!(text(&o.stderr).contains("is one of the run directories"));
    let merged = d.path().join("merged");
    let o = run(robustream()
        .arg("merge")
        .args([s0, s1, s2])
        .arg("--out")
        .arg(&merged));
    assert!(text(&o.stderr).contains("--force"), "{}", text(&o.stderr));
    let o = run(robustream()
        .args(["merge", "--quiet", "--force"])
        .args([s0, s1, s2])
        .arg("--out")
        .arg(&merged));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stderr.is_empty());
    assert_merged_is_whole(d.path());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The lines of a post pass's file, as a set.
fn line_set(dir: &Path, file: &str) -> BTreeSet<String> {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn a_background_plan_with_the_challenge_and_saliency_merges_to_the_whole_run() {
    let d = tempfile::tempdir().unwrap();
    let source = masked_scenes(d.path());
    // Bounds below the candidates, so each shard keeps its own sample and the merge re-chooses.
    let config = d.path().join("post.toml");
    std::fs::write(
        &config,
        "[challenge]\nenabled = true\nforegrounds = 4\nbackgrounds = 4\n\
         [saliency]\nenabled = true\nframes = 3\npatch = 112\nstride = 112\nmaps = true\n",
    )
    .unwrap();
    let model = model();
    let args = [
        "--config",
        path(&config),
        "--model",
        path(&model),
        "--source",
        path(&source),
        "--seed",
        "3",
        "--batch",
        "2",
        "--scenarios",
        "clean,background/only_fg,background/mixed_rand",
    ];
    let shards = whole_shards_merged(d.path(), &args);
    assert_merged_is_whole(d.path());
    let (whole, merged) = (d.path().join("whole"), d.path().join("merged"));
    for file in ["challenge.jsonl", "saliency.jsonl"] {
        let lines = line_set(&whole, file);
        assert!(!lines.is_empty(), "{file}");
        assert_eq!(line_set(&merged, file), lines, "{file}");
    }
    // The maps, renumbered in the merged order: the whole run's, byte for byte.
    for n in 0..3 {
        let map = |d: &Path| std::fs::read(d.join(format!("saliency/{n}.png"))).unwrap();
        assert_eq!(map(&merged), map(&whole), "saliency/{n}.png");
    }
    assert!(!merged.join("saliency/3.png").exists());
    let (s, w) = (summary(&merged), summary(&whole));
    assert_eq!(s["metrics"]["in9"], w["metrics"]["in9"]);
    assert_eq!(w["run"]["challenge"]["sampled"], true);
    assert_eq!(w["run"]["challenge"]["foregrounds"], 4);
    assert_eq!(w["metrics"]["saliency"]["frames"], 3);
    // The shards together evaluated more foregrounds than the merge keeps.
    let evaluated: usize = shards
        .iter()
        .map(|d| line_set(d, "challenge.jsonl").len())
        .sum();
    assert!(evaluated >= 4, "{evaluated}");
}
