//! Latency bounded by design on a live source: a deliberately slow plan on a real-time
//! synthetic camera. The test checks the structure, not this machine's speed: frames are dropped
//! at admission and counted; nothing a worker starts has waited longer than about one frame's
//! plan time; the `wait` and `age` stages are in every record, the summary and Prometheus; records
//! are written while the run goes on; the run ends about one frame's plan time after `--duration`;
//! summary.json says how busy the cores were.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::{Duration, Instant};

use crate::util::*;

/// Per frame: (wait ms, work ms = the frame's largest age − its wait, largest age ms).
fn frame_times(recs: &[serde_json::Value]) -> BTreeMap<String, (f64, f64, f64)> {
    let mut frames: BTreeMap<String, (f64, f64, f64)> = BTreeMap::new();
    for r in recs {
        let ms = &r["ms"];
        let (wait, age) = (ms["wait"].as_f64().unwrap(), ms["age"].as_f64().unwrap());
        let e = frames
            .entry(r["frame"].as_str().unwrap().to_string())
            .or_insert((wait, 0.0, 0.0));
        // Every record of a frame carries the same wait and is written at the same time.
        assert_eq!(e.0, wait, "{r}");
        e.2 = e.2.max(age);
        e.1 = e.2 - e.0;
    }
    frames
}

#[test]
fn a_slow_plan_on_a_live_source_drops_at_admission_and_stays_fresh() {
    let _timed = timed();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("live.toml");
    // 96 variants per frame at 50 fps: the plan takes far longer than a frame interval.
    std::fs::write(
        &config,
        "scenarios = [\"imagenet-c-all\"]\n[source]\npath = \"synthetic\"\nkind = \"synthetic\"\n\
         [source.synthetic]\nwidth = 160\nheight = 120\nfps = 50\nrealtime = true\n\
         [report]\nsummary_every = \"0\"\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let duration = 4.0;
    let (mut child, addr, mut stderr) = spawn_with_prometheus(
        quiet_run(&config)
            .args(["--duration", "4s", "--prometheus", "127.0.0.1:0", "--out"])
            .arg(&out),
    );
    // Records are written while the run goes on (a frame's records as soon as it is complete).
    let start = Instant::now();
    let mut written_while_running = false;
    while start.elapsed() < Duration::from_secs(120) {
        if std::fs::read_to_string(out.join("records.jsonl")).is_ok_and(|t| t.lines().count() > 0) {
            written_while_running = child.try_wait().unwrap().is_none();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(written_while_running, "no records before the run ended");
    let body = scrape_until(&addr, Duration::from_secs(60), |b| {
        b.contains("stage=\"wait\"") && b.contains("stage=\"age\"")
    });
    assert!(
        body.contains("robustream_stage_latency_seconds_bucket{stage=\"wait\",le=\"+Inf\"}")
            && body.contains("robustream_stage_latency_seconds_bucket{stage=\"age\",le=\"+Inf\"}"),
        "{body}"
    );
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "{rest}");

    let s = summary(&out);
    assert_eq!(s["run"]["end"], "duration", "{s}");
    let f = &s["frames"];
    let (read, dropped) = (f["read"].as_u64().unwrap(), f["dropped"].as_u64().unwrap());
    let recs = records(&out);
    let frames = frame_times(&recs);
    // Dropped at admission and counted: every frame read is either evaluated whole or dropped.
    assert!(dropped > 0, "nothing dropped: {s}");
    assert_eq!(frames.len() as u64 + dropped, read, "{s}");
    assert_eq!(recs.len(), frames.len() * 96);
    // Paced at 50 fps: the source kept reading at its rate while the plan was slow.
    assert!(read as f64 > 0.5 * 50.0 * duration, "{s}");
    // Nothing queued up: no frame waited for the workers longer than about one frame's work
    // (the frame in progress when it arrived), and no record is older than two frames' work. A
    // frame queue would make the waits grow with the run instead.
    let longest_work = frames.values().map(|t| t.1).fold(0.0, f64::max);
    for (id, (wait, work, age)) in &frames {
        assert!(
            *wait <= 1.5 * longest_work + 100.0,
            "{id}: waited {wait} ms; the longest frame took {longest_work} ms"
        );
        assert!(*age <= wait + work + 1e-6, "{id}");
    }
    let oldest = frames.values().map(|t| t.2).fold(0.0, f64::max);
    assert!(
        oldest <= 2.5 * longest_work + 100.0,
        "a record was {oldest} ms old; the longest frame took {longest_work} ms"
    );
    // The stages are in the summary.
    for stage in ["wait", "age", "scenario", "queue", "infer", "total"] {
        assert!(s["latency_ms"][stage]["p99"].is_number(), "{stage}: {s}");
    }
    // The run ends about one frame's work after the duration (the pass's wall time starts just
    // before the first frame is read).
    let pass = &s["run"]["cpu"];
    let wall = pass["wall_s"].as_f64().unwrap();
    assert!(
        wall - duration <= 2.0 * longest_work / 1e3 + 1.0,
        "the pass took {wall} s for --duration {duration} s; longest frame {longest_work} ms"
    );
    // How busy the cores were.
    let u = pass["utilisation"].as_f64().unwrap();
    assert!(u > 0.0 && u <= 1.05, "{pass}");
    assert!(pass["cores"].as_u64().unwrap() >= 1);
}

#[test]
fn an_offline_source_drops_nothing_whatever_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("offline.toml");
    // The same camera, not paced: every frame waits for the workers and none is dropped.
    std::fs::write(
        &config,
        "scenarios = [\"imagenet-c/blur\"]\n[source]\npath = \"synthetic\"\nkind = \"synthetic\"\n\
         [source.synthetic]\nwidth = 160\nheight = 120\nframes = 12\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let o = run(quiet_run(&config).arg("--out").arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 12);
    assert_eq!(s["frames"]["dropped"], 0);
    assert_eq!(records(&out).len(), 12 * 21);
    // The engine's batch sizes were warmed up before the first frame, each timed.
    let warm = s["run"]["engine_warmup_ms"].as_object().unwrap();
    assert_eq!(
        warm.keys().map(String::as_str).collect::<Vec<_>>(),
        ["1", "2", "4", "8"]
    );
}
