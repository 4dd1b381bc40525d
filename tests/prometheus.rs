//! The Prometheus endpoint during a live run (issue 5): the synthetic camera in real time on the real
//! model, `--prometheus 127.0.0.1:0`; the address is printed on stderr, metrics are scraped while the
//! run goes on, and the last scrape agrees with the summary's counts.

mod common;

use std::io::Read;
use std::time::Duration;

use common::*;

#[test]
fn metrics_are_served_on_loopback_while_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (mut child, addr, mut stderr) = spawn_with_prometheus(
        robustream()
            .args(["run", "--quiet", "--model"])
            .arg(model())
            .args([
                "--source",
                "synthetic:128x96@40/100",
                "--source-kind",
                "synthetic",
                "--scenarios",
                "imagenet-c/noise",
                "--prometheus",
                "127.0.0.1:0",
                "--out",
            ])
            .arg(&out),
    );
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    // Scrape until frames have been evaluated (the run lasts ≥ 2.5 s: 100 frames at 40 fps).
    // Flips need two frames.
    let body = scrape_until(&addr, Duration::from_secs(60), |body| {
        body.contains("robustream_flip_ratio{scenario=\"clean\"")
    });
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    for name in [
        "robustream_frames_read_total ",
        "robustream_frames_dropped_total ",
        "robustream_records_total{scenario=\"clean\",family=\"clean\"} ",
        "robustream_agreement_ratio{scenario=\"corruption/gaussian_noise/1\",family=\"corruption\"} ",
        "robustream_stage_latency_seconds{stage=\"infer\",quantile=\"0.9\"} ",
    ] {
        assert!(body.contains(name), "{name} missing: {body}");
    }
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{rest}");
    assert!(
        body.contains("robustream_window_drop_volatility "),
        "{body}"
    );
    assert!(
        body.contains("robustream_flip_ratio{scenario=\"clean\""),
        "{body}"
    );
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 100, "{s}");
    // No labels: the window's drops are by agreement, flips are defined, ImageNet-C errors are not.
    let w = &s["metrics"]["window"];
    assert_eq!(
        (w["frames"].as_u64(), w["filled"].as_u64()),
        (Some(100), Some(100)),
        "{w}"
    );
    assert_eq!(w["basis"], "agreement");
    assert_eq!(w["series"].as_array().unwrap().len(), 1);
    assert!(w["drop_volatility"].as_f64().is_some(), "{w}");
    assert!(s["scenarios"]["clean"]["flip"].as_f64().is_some());
    assert_eq!(s["scenarios"]["clean"]["flip_excess"], 0.0);
    assert!(s["metrics"].get("imagenet_c").is_none(), "{s}");
}
