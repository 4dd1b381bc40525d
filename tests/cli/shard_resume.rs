//! Shards and resume (docs/deploy.md): the shards of a run together evaluate exactly the frames of
//! one run, with the same records; the shard comes from `--shard` or the scheduler's variables; a
//! run killed with SIGKILL at a random point and resumed ends with the records and summary of an
//! uninterrupted run, losing no frame and duplicating none.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// A small ImageNet-C plan: 9 demo photos × 10 variants (random and deterministic corruptions).
const PLAN: &str = "clean,corruption/gaussian_noise/3,corruption/shot_noise/2,\
    corruption/glass_blur/1,corruption/motion_blur/4,corruption/snow/2,corruption/frost/3,\
    corruption/fog/5,corruption/elastic_transform/2,corruption/jpeg_compression/4";

/// `robustream run --quiet` of the demo photos under `plan`; add `--out` or `--resume` and flags.
fn demo(plan: &str) -> Command {
    let mut c = robustream();
    c.args(["run", "--quiet", "--scenarios", plan, "--model"])
        .arg(model())
        .arg("--source")
        .arg(photo("demo.csv"))
        .stdout(Stdio::null());
    c
}

/// [`demo`] under [`PLAN`] into `out`.
fn demo_run(out: &Path) -> Command {
    let mut c = demo(PLAN);
    c.arg("--out").arg(out);
    c
}

/// [`demo`] under [`PLAN`], resuming `dir`.
fn resume_run(dir: &Path) -> Command {
    let mut c = demo(PLAN);
    c.arg("--resume").arg(dir);
    c
}

/// summary.json without what differs between two runs of the same frames: timings, the shard,
/// and how a resume went.
fn numbers(dir: &Path) -> Value {
    let mut s = summary(dir);
    let run = s["run"].as_object_mut().unwrap();
    for k in [
        "started_unix",
        "ended_unix",
        "wall_s",
        "rss_mib",
        "cpu",
        "engine_warmup_ms",
        "batches",
        "shard",
    ] {
        run.remove(k);
    }
    s.as_object_mut().unwrap().remove("latency_ms");
    s
}

fn ok(cmd: &mut Command) {
    let o = run(cmd);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// Records of several run directories, merged back into source order (by `seq`).
fn union(dirs: &[&Path]) -> Vec<Value> {
    let mut all: Vec<Value> = dirs
        .iter()
        .flat_map(|d| records_without_timings(d))
        .collect();
    all.sort_by_key(|r| r["seq"].as_u64().unwrap());
    all
}

#[test]
fn three_shards_evaluate_exactly_the_frames_of_one_run() {
    let d = tempfile::tempdir().unwrap();
    let whole = d.path().join("whole");
    ok(&mut demo_run(&whole));
    let shards: Vec<_> = (0..3).map(|i| d.path().join(format!("s{i}"))).collect();
    for (i, dir) in shards.iter().enumerate() {
        ok(demo_run(dir).args(["--shard", &format!("{i}/3")]));
    }
    let dirs: Vec<&Path> = shards.iter().map(|p| p.as_path()).collect();
    let expected = records_without_timings(&whole);
    assert_eq!(union(&dirs), expected, "the shards' records are the run's");
    let read: u64 = dirs
        .iter()
        .map(|d| summary(d)["frames"]["read"].as_u64().unwrap())
        .sum();
    assert_eq!(read, summary(&whole)["frames"]["read"].as_u64().unwrap());
    for (i, dir) in dirs.iter().enumerate() {
        let s = summary(dir);
        assert_eq!(s["run"]["shard"]["index"], i as u64);
        assert_eq!(s["run"]["shard"]["count"], 3);
        assert_eq!(s["run"]["shard"]["from"], "--shard");
        assert_eq!(
            s["run"]["fingerprint"],
            summary(&whole)["run"]["fingerprint"],
            "a shard is the same run"
        );
        // Every record of a shard is one of its frames.
        assert!(
            records(dir).iter().all(|r| r["seq"].is_u64()),
            "records carry their position"
        );
    }
}

#[test]
fn unreadable_items_are_counted_by_their_frames_shard_only() {
    let d = tempfile::tempdir().unwrap();
    for i in 0..6 {
        std::fs::write(d.path().join(format!("bad{i}.jpg")), b"not a jpeg").unwrap();
    }
    std::fs::copy(photo("coffee.png"), d.path().join("coffee.png")).unwrap();
    let rows: Vec<String> = (0..6)
        .map(|i| format!("bad{i}.jpg,espresso"))
        .chain([
            "coffee.png,espresso".to_string(),
            "missing.png,espresso".to_string(),
        ])
        .collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let list = manifest(d.path(), &rows);
    let frames = |out: &Path, shard: Option<&str>| {
        let mut c = robustream();
        c.args(["run", "--quiet", "--scenarios", "clean", "--model"])
            .arg(model())
            .arg("--source")
            .arg(&list)
            .arg("--out")
            .arg(out)
            .stdout(Stdio::null());
        if let Some(s) = shard {
            c.args(["--shard", s]);
        }
        ok(&mut c);
        summary(out)["frames"].clone()
    };
    let whole = frames(&d.path().join("whole"), None);
    assert_eq!(
        (whole["read"].as_u64(), whole["skipped"].as_u64()),
        (Some(1), Some(7))
    );
    let (mut read, mut skipped) = (0, 0);
    for i in 0..3 {
        let f = frames(&d.path().join(format!("s{i}")), Some(&format!("{i}/3")));
        read += f["read"].as_u64().unwrap();
        skipped += f["skipped"].as_u64().unwrap();
    }
    assert_eq!(
        (read, skipped),
        (1, 7),
        "each item counted once, by one shard"
    );
}

#[test]
fn the_shard_comes_from_the_schedulers_variables() {
    let d = tempfile::tempdir().unwrap();
    let shard_of = |name: &str, vars: &[(&str, &str)], flag: Option<&str>| {
        let out = d.path().join(name);
        let mut c = demo("clean");
        c.arg("--out").arg(&out).args(["--limit", "3"]);
        c.envs(vars.iter().copied());
        if let Some(f) = flag {
            c.args(["--shard", f]);
        }
        ok(&mut c);
        summary(&out)["run"]["shard"].clone()
    };
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "3"),
        ("SLURM_ARRAY_TASK_MIN", "1"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
    ];
    let s = shard_of("slurm", &slurm, None);
    assert_eq!(
        (&s["index"], &s["count"], &s["from"]),
        (
            &Value::from(2),
            &Value::from(4),
            &Value::from("SLURM_ARRAY_TASK_ID")
        )
    );
    let k8s = [("JOB_COMPLETION_INDEX", "1"), ("ROBUSTREAM_SHARDS", "2")];
    let s = shard_of("k8s", &k8s, None);
    assert_eq!(
        (&s["index"], &s["count"], &s["from"]),
        (
            &Value::from(1),
            &Value::from(2),
            &Value::from("JOB_COMPLETION_INDEX")
        )
    );
    // The flag wins; 0/1 is the whole source.
    let s = shard_of("flag", &k8s, Some("0/1"));
    assert!(s.is_null(), "{s}");

    // An index without the count: one line, the fix, nothing left behind.
    let out = d.path().join("no-count");
    let o = run(demo_run(&out).env("JOB_COMPLETION_INDEX", "1"));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("ROBUSTREAM_SHARDS") && err.contains("--shard 1/N"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn live_sources_are_neither_sharded_nor_resumed() {
    let d = tempfile::tempdir().unwrap();
    for (flag, value, word) in [("--shard", "0/2", "sharded"), ("--resume", "", "resumed")] {
        let out = d.path().join(word);
        let mut c = robustream();
        c.args(["run", "--quiet", "--scenarios", "clean", "--model"])
            .arg(model())
            .args(["--source", "synthetic:64x48@30/5", "--realtime"]);
        match value {
            "" => c.arg(flag).arg(&out),
            v => c.arg("--out").arg(&out).args([flag, v]),
        };
        let o = run(&mut c);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("a live source cannot be {word}")),
            "{err}"
        );
        assert!(!out.exists(), "nothing left behind");
    }
}

/// A small xorshift generator for the kill points (seeded from the clock, printed on failure).
struct Xorshift(u64);

impl Xorshift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Runs `cmd` and kills it (SIGKILL) once records.jsonl in `out` holds at least `lines` lines, or
/// when it ends on its own first.
fn kill_after(cmd: &mut Command, out: &Path, lines: usize) {
    let mut child = cmd.stderr(Stdio::null()).spawn().unwrap();
    let t = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        let n = std::fs::read_to_string(out.join("records.jsonl")).map_or(0, |s| s.lines().count());
        if n >= lines {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(300), "no progress");
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_run_killed_at_random_points_and_resumed_loses_and_duplicates_nothing() {
    let d = tempfile::tempdir().unwrap();
    let whole = d.path().join("whole");
    ok(&mut demo_run(&whole));
    let expected = records_without_timings(&whole);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut rng = Xorshift(seed);
    for round in 0..4 {
        let dir = d.path().join(format!("r{round}"));
        // Killed once or twice at random record counts, then resumed to the end.
        let kills = 1 + rng.below(2);
        for _ in 0..kills {
            let at = 1 + rng.below(expected.len() as u64 - 1) as usize;
            kill_after(&mut resume_run(&dir), &dir, at);
        }
        ok(&mut resume_run(&dir));
        let got = records_without_timings(&dir);
        assert_eq!(
            got.len(),
            expected.len(),
            "seed {seed} round {round}: records lost or doubled"
        );
        assert_eq!(got, expected, "seed {seed} round {round}");
        assert_eq!(numbers(&dir), numbers(&whole), "seed {seed} round {round}");
    }
    // A shard resumes like a whole run.
    let shard = d.path().join("shard");
    ok(demo_run(&shard).args(["--shard", "1/2"]));
    let resumed = d.path().join("shard-resumed");
    kill_after(resume_run(&resumed).args(["--shard", "1/2"]), &resumed, 3);
    ok(resume_run(&resumed).args(["--shard", "1/2"]));
    assert_eq!(
        records_without_timings(&resumed),
        records_without_timings(&shard)
    );
    assert_eq!(numbers(&resumed), numbers(&shard));
}

#[test]
fn resume_refuses_another_runs_directory_and_leaves_it_alone() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("run");
    ok(demo("clean").arg("--out").arg(&dir).args(["--limit", "2"]));
    let before = std::fs::read(dir.join("records.jsonl")).unwrap();
    let o = run(demo("clean")
        .args(["--limit", "2", "--seed", "7", "--resume"])
        .arg(&dir));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("holds another run: its `seed` is 0, this run's is 7"),
        "{err}"
    );
    assert_eq!(std::fs::read(dir.join("records.jsonl")).unwrap(), before);
    // The same run, another shard (a resubmitted Slurm subset renumbers its tasks).
    let shard = d.path().join("shard");
    ok(demo("clean")
        .args(["--limit", "2", "--shard", "1/2", "--out"])
        .arg(&shard));
    let o = run(demo("clean")
        .args(["--limit", "2", "--shard", "0/2", "--resume"])
        .arg(&shard));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("holds shard 1/2 of this run, not 0/2"),
        "{err}"
    );
    // --resume and another --out.
    let o = run(demo_run(&d.path().join("elsewhere"))
        .arg("--resume")
        .arg(&dir));
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("name two run directories"), "{err}");
}
