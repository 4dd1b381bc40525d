use std::path::{Path, PathBuf};

use crate::report::run_block::RunBlock;
use serde_json::{Value, json};

use super::*;
use crate::metrics::tests::rec;

/// Frame `i` (`f<i>.jpg` at position `i`): a clean record and a fog one, labelled unless `i` is a
/// multiple of 3 (so shard 0 of [`three`] has no labelled frame, and no ImageNet-C family).
fn frame(i: u64) -> Vec<Record> {
    let truth = (!i.is_multiple_of(3)).then_some(1);
    ["clean", "corruption/fog/2"]
        .iter()
        .map(|s| {
            let mut r = rec(&format!("f{i}.jpg"), s, truth, &[(i % 3) as usize]);
            r.seq = Some(i);
            r
        })
        .collect()
}

fn fingerprint(seed: u64) -> Value {
    json!({"hash": format!("{seed:016x}"), "parts": {"robustream": "0.1.0", "seed": seed,
           "challenge": {"foregrounds": 2, "backgrounds": 8, "max_batch": 8}}})
}

/// A shard run in `dir` holding frames `frames`; `shard` = (index, count) or `None` (unsharded).
fn shard_run(dir: &Path, frames: &[u64], shard: Option<(u64, u64)>, end: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let records: Vec<Record> = frames.iter().flat_map(|&i| frame(i)).collect();
    let mut run = json!({"seed": 0, "started_unix": 100 + frames.len() as u64,
        "ended_unix": 200 + frames.len() as u64, "wall_s": frames.len() as f64,
        "variants_failed": 1, "end": end, "fingerprint": fingerprint(0)});
    if let Some((index, count)) = shard {
        run["shard"] = json!({"index": index, "count": count, "from": "--shard"});
    }
    let mut s = Summary::recompute(&records, None);
    s.run = RunBlock::from_json(run);
    // A post pass's family after the records' (it did not apply: no masks).
    s.metrics.insert(
        "saliency".into(),
        json!({"applicable": false, "reason": "no frame with a foreground mask and a truth"}),
    );
    std::fs::write(dir.join("summary.json"), s.to_json()).unwrap();
    let lines: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(dir.join(RECORDS_JSONL), lines).unwrap();
    dir.to_path_buf()
}

/// Three shards of frames 0..9 (shard = i mod 3) under `root`.
fn three(root: &Path) -> Vec<PathBuf> {
    (0..3u64)
        .map(|s| {
            let frames: Vec<u64> = (0..9).filter(|i| i % 3 == s).collect();
            shard_run(
                &root.join(format!("s{s}")),
                &frames,
                Some((s, 3)),
                "completed",
            )
        })
        .collect()
}

fn edit_run(dir: &Path, f: impl FnOnce(&mut Value)) {
    let p = dir.join("summary.json");
    let mut s = Summary::read(&p).unwrap();
    let mut run = s.run.to_value();
    f(&mut run);
    s.run = RunBlock::from_json(run);
    std::fs::write(&p, s.to_json()).unwrap();
}

fn err(dirs: &[PathBuf], out: &Path) -> String {
    crate::error_line(&merge(dirs, out, false).unwrap_err())
}

#[test]
fn three_shards_merge_to_the_whole_runs_records_and_summary() {
    let d = tempfile::tempdir().unwrap();
    let mut dirs = three(d.path());
    dirs.reverse(); // any order
    let whole = shard_run(
        &d.path().join("whole"),
        &(0..9).collect::<Vec<_>>(),
        None,
        "completed",
    );
    let out = d.path().join("merged");
    let m = merge(&dirs, &out, false).unwrap();
    assert_eq!((m.shards, m.frames, m.records), (3, 9, 18));
    let read = |dir: &Path| std::fs::read_to_string(dir.join(RECORDS_JSONL)).unwrap();
    assert_eq!(read(&out), read(&whole));
    let merged = Summary::read(&out.join("summary.json")).unwrap();
    let single = Summary::read(&whole.join("summary.json")).unwrap();
    assert_eq!(merged.scenarios, single.scenarios);
    assert_eq!(merged.frames, single.frames);
    assert_eq!(merged.metrics, single.metrics);
    // The families in the order one run writes them, though shard 0 lacks ImageNet-C's.
    assert!(
        !Summary::read(&dirs[2].join("summary.json"))
            .unwrap()
            .metrics
            .contains_key("imagenet_c")
    );
    assert_eq!(
        merged.to_json(),
        Summary {
            run: merged.run.clone(),
            ..single.clone()
        }
        .to_json()
    );
    let run = &merged.run;
    assert!(run.shard.is_none(), "{run:?}");
    assert_eq!(run.shards, Some(3));
    assert_eq!(run.started_unix, 103);
    assert_eq!(run.ended_unix, Some(203));
    assert_eq!(run.wall_s, Some(3.0));
    assert_eq!(run.variants_failed, Some(3));
    let from: Vec<&str> = run
        .merged_from
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    assert!(
        from[0].ends_with("s0") && from[2].ends_with("s2"),
        "in shard order: {from:?}"
    );
    for f in ["summary.md", "report.html", "flips.json"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // A directory of one unsharded run is a whole split of 1.
    let again = d.path().join("again");
    merge(std::slice::from_ref(&whole), &again, false).unwrap();
    assert_eq!(read(&again), read(&whole));
}

#[test]
fn each_run_directory_must_hold_a_finished_run() {
    let d = tempfile::tempdir().unwrap();
    let dirs = three(d.path());
    let out = d.path().join("out");
    std::fs::remove_file(dirs[1].join(RECORDS_JSONL)).unwrap();
    let e = err(&dirs, &out);
    assert!(
        e.starts_with(&format!("{}: no readable records.jsonl", dirs[1].display())),
        "{e}"
    );
    std::fs::remove_file(dirs[2].join("summary.json")).unwrap();
    let e = err(&dirs[2..], &out);
    assert!(
        e.starts_with(&format!("{}: no readable summary.json", dirs[2].display())),
        "{e}"
    );

    let dirs = three(&d.path().join("b"));
    for (end, says) in [
        ("running", "has not ended"),
        ("interrupted", "ended `interrupted`"),
        ("failed", "ended `failed`"),
    ] {
        edit_run(&dirs[0], |r| r["end"] = json!(end));
        let e = err(&dirs, &out);
        assert!(e.contains(says), "{e}");
        assert!(
            e.contains(&format!(
                "resume it with `robustream run --resume {}`",
                dirs[0].display()
            )),
            "{e}"
        );
    }
    edit_run(&dirs[0], |r| {
        r["end"] = json!("limit");
        r["challenge"] = json!({"applicable": true, "complete": false});
    });
    let e = err(&dirs, &out);
    assert!(e.contains("did not complete its challenge pass"), "{e}");
    edit_run(&dirs[0], |r| {
        r.as_object_mut().unwrap().remove("fingerprint");
    });
    let e = err(&dirs, &out);
    assert!(e.contains("has no run.fingerprint"), "{e}");
    assert!(!out.exists(), "nothing is written when a check fails");
}

#[test]
fn runs_of_another_fingerprint_or_split_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let dirs = three(d.path());
    let out = d.path().join("out");
    edit_run(&dirs[2], |r| r["fingerprint"] = fingerprint(5));
    let e = err(&dirs, &out);
    assert!(
        e.contains("`seed` is 0 in the first and 5 in the second"),
        "{e}"
    );
    assert!(e.contains(&dirs[0].display().to_string()), "{e}");
    assert!(e.contains(&dirs[2].display().to_string()), "{e}");
    edit_run(&dirs[2], |r| r["fingerprint"] = fingerprint(0));

    let e = err(&dirs[..2], &out);
    assert!(e.starts_with("shard 2 of 3 missing (given: "), "{e}");
    let e = err(&dirs[..1], &out);
    assert!(e.starts_with("shards 1, 2 of 3 missing"), "{e}");

    let e = err(&[dirs[0].clone(), dirs[1].clone(), dirs[1].clone()], &out);
    assert!(e.contains("are both shard 1/3"), "{e}");

    edit_run(&dirs[1], |r| r["shard"]["count"] = json!(4));
    let e = err(&dirs, &out);
    assert!(e.contains("is shard 1/4 but"), "{e}");
    assert!(e.contains("of 3 shards"), "{e}");
}

#[test]
fn records_without_position_or_in_two_shards_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let dirs = three(d.path());
    let out = d.path().join("out");
    let records = dirs[1].join(RECORDS_JSONL);
    let text = std::fs::read_to_string(&records).unwrap();
    std::fs::write(&records, text.replacen("\"seq\":1,", "", 1)).unwrap();
    let e = err(&dirs, &out);
    assert!(
        e.contains("line 1 of records.jsonl (frame `f1.jpg`) has no `seq`"),
        "{e}"
    );

    // Shard 1 also holds frame 3 (shard 0's).
    let dirs = three(&d.path().join("b"));
    shard_run(&dirs[1], &[1, 3, 4, 7], Some((1, 3)), "completed");
    let e = err(&dirs, &out);
    assert!(e.contains("both hold position 3 (frame `f3.jpg`)"), "{e}");
    // The same frame at another position.
    let dirs = three(&d.path().join("c"));
    let records = dirs[1].join(RECORDS_JSONL);
    let text = std::fs::read_to_string(&records).unwrap();
    std::fs::write(&records, text.replace("f4.jpg", "f3.jpg")).unwrap();
    let e = err(&dirs, &out);
    assert!(e.contains("both hold frame `f3.jpg`"), "{e}");
}

#[test]
fn the_output_directory_is_new_or_forced() {
    let d = tempfile::tempdir().unwrap();
    let dirs = three(d.path());
    let e = err(&dirs, &dirs[1]);
    assert!(e.contains("is one of the run directories to merge"), "{e}");
    let out = d.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    merge(&dirs, &out, false).unwrap(); // empty: fine
    std::fs::write(out.join("challenge.jsonl"), "{}\n").unwrap();
    let e = err(&dirs, &out);
    assert!(e.contains("is not empty") && e.contains("--force"), "{e}");
    merge(&dirs, &out, true).unwrap();
    // A stale output of an earlier merge is gone.
    assert!(!out.join("challenge.jsonl").exists());
}

/// A challenge line of frame `i`.
fn challenge_line(i: u64, vulnerable: bool) -> String {
    json!({"frame": format!("f{i}.jpg"), "truth": 1, "vulnerable": vulnerable, "undecided": false,
           "composites": 2 + i, "failed": 0, "fooled_by": null, "pred": null, "model_class": null})
    .to_string()
}

#[test]
fn the_challenge_keeps_the_smallest_ranks_of_the_shards_lines() {
    let d = tempfile::tempdir().unwrap();
    let dirs = three(d.path());
    // Every frame is a candidate; each shard kept its own bottom 2 (foregrounds = 2).
    let mut all: Vec<(u64, u64)> = (0..9u64)
        .map(|i| (rank(0, &format!("f{i}.jpg"), FOREGROUND_SALT), i))
        .collect();
    all.sort_unstable();
    let mut want: Vec<u64> = all[..2].iter().map(|&(_, i)| i).collect();
    want.sort_unstable();
    for (s, dir) in dirs.iter().enumerate() {
        let mut mine: Vec<(u64, u64)> = all
            .iter()
            .copied()
            .filter(|(_, i)| i % 3 == s as u64)
            .collect();
        mine.truncate(2);
        mine.sort_by_key(|&(_, i)| i);
        let lines: String = mine
            .iter()
            .map(|&(_, i)| challenge_line(i, i % 2 == 0) + "\n")
            .collect();
        std::fs::write(dir.join(CHALLENGE_JSONL), lines).unwrap();
        edit_run(dir, |r| {
            r["challenge"] = json!({"applicable": true, "foregrounds": 2, "vulnerable": 0,
                "backgrounds": 8, "composites": 0, "failed": 0, "undecided": 0,
                "upper_bound": 16, "complete": true, "accuracy": 1.0,
                "background_source": "stream pool", "sampled": true, "candidates": 3,
                "unusable_masks": s, "seconds": 1.5, "composite_ms": 0.1, "infer_ms": 2.0});
        });
    }
    let out = d.path().join("out");
    merge(&dirs, &out, false).unwrap();
    let text = std::fs::read_to_string(out.join(CHALLENGE_JSONL)).unwrap();
    let frames: Vec<String> = want.iter().map(|i| format!("f{i}.jpg")).collect();
    let got: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["frame"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(got, frames, "the two smallest ranks, in source order");
    let s = Summary::read(&out.join("summary.json")).unwrap();
    let c = s.run.challenge.as_ref().unwrap();
    let vulnerable = want.iter().filter(|i| *i % 2 == 0).count() as u64;
    assert_eq!(c.foregrounds, Some(2));
    assert_eq!(c.vulnerable, Some(vulnerable));
    assert_eq!(c.composites, Some(want.iter().map(|i| 2 + i).sum::<u64>()));
    assert_eq!(c.candidates, Some(9));
    assert_eq!(c.sampled, Some(true));
    assert_eq!(c.upper_bound, Some(16));
    assert_eq!(c.unusable_masks, Some(3));
    assert_eq!(c.seconds, Some(4.5));
    let tally = s.challenge().unwrap();
    assert_eq!(
        (tally.foregrounds, tally.vulnerable, tally.backgrounds),
        (2, vulnerable, 8)
    );
}

#[test]
fn a_challenge_that_did_not_apply_in_a_shard_still_counts_there() {
    let d = tempfile::tempdir().unwrap();
    let dirs = three(d.path());
    let not_applicable = |unusable: u64| {
        json!({"applicable": false, "reason": "no frame with a foreground mask and a truth",
               "foregrounds": 0, "backgrounds": 8, "candidates": 0, "unusable_masks": unusable})
    };
    // No shard applied: shard 0's entry, the counts summed over the three.
    for (s, dir) in dirs.iter().enumerate() {
        edit_run(dir, |r| r["challenge"] = not_applicable(s as u64 + 1));
    }
    let out = d.path().join("none");
    merge(&dirs, &out, false).unwrap();
    let c = Summary::read(&out.join("summary.json"))
        .unwrap()
        .run
        .challenge
        .unwrap();
    assert!(!c.applicable);
    assert_eq!(c.unusable_masks, Some(6));
    assert_eq!(c.candidates, Some(0));

    // Shard 1 applied (one candidate, one line): shard 0's and 2's masks are counted too.
    std::fs::write(
        dirs[1].join(CHALLENGE_JSONL),
        challenge_line(1, true) + "\n",
    )
    .unwrap();
    edit_run(&dirs[1], |r| {
        r["challenge"] = json!({"applicable": true, "foregrounds": 1, "vulnerable": 1,
            "backgrounds": 8, "composites": 3, "failed": 0, "undecided": 0,
            "upper_bound": 8, "complete": true, "accuracy": 0.0,
            "background_source": "stream pool", "sampled": false, "candidates": 1,
            "unusable_masks": 2, "seconds": 1.0, "composite_ms": 0.1, "infer_ms": 2.0});
    });
    let out = d.path().join("some");
    merge(&dirs, &out, false).unwrap();
    let c = Summary::read(&out.join("summary.json"))
        .unwrap()
        .run
        .challenge
        .unwrap();
    assert!(c.applicable);
    assert_eq!((c.foregrounds, c.vulnerable), (Some(1), Some(1)));
    assert_eq!(c.candidates, Some(1));
    assert_eq!(c.unusable_masks, Some(1 + 2 + 3));
}
