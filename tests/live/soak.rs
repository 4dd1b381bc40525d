//! A (short) soak run as a user starts one: the endless synthetic camera in real time,
//! `--duration`; the run ends by itself with exit code 0, its summary says why, and memory was
//! sampled once a second into resources.csv.

use crate::util::*;

#[test]
fn duration_ends_an_endless_stream_and_memory_is_recorded() {
    let _timed = timed();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("soak.toml");
    std::fs::write(
        &config,
        "scenarios = [\"imagenet-c/noise\"]\n[pipeline]\nschedule = \"round-robin\"\nper_frame = 3\n\
         [source]\npath = \"synthetic\"\nkind = \"synthetic\"\n[source.synthetic]\nwidth = 320\n\
         height = 240\nfps = 15\nrealtime = true\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let o = run(robustream()
        .args(["run", "--quiet", "--duration", "2.5s", "--config"])
        .arg(&config)
        .arg("--model")
        .arg(model())
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "duration", "{s}");
    assert_eq!(s["run"]["duration_s"], 2.5);
    // 15 fps for 2.5 s: about 38 frames come out of the camera (read or dropped).
    let read = s["frames"]["read"].as_u64().unwrap();
    assert!((25..=45).contains(&read), "{s}");
    let rss = &s["run"]["rss_mib"];
    assert!(rss["samples"].as_u64().unwrap() >= 2, "{rss}");
    assert!(rss["max_mib"].as_f64().unwrap() >= rss["first_mib"].as_f64().unwrap());
    let csv = std::fs::read_to_string(out.join("resources.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "t_s,rss_mib,frames,dropped");
    assert!(lines.len() >= 3, "{csv}");
    // The HTML report charts the stream over time.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("data-chart=\"frames-per-second\""),
        "no timeline"
    );
    // A bad duration is one clear line before anything runs.
    let o = run(robustream()
        .args(["run", "--duration", "5 days", "--model"])
        .arg(model())
        .args(["--source", "synthetic:8x8/1"]));
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("5 days"), "{}", text(&o.stderr));
}
