//! The Prometheus endpoint during a live run: the synthetic camera in real time on the real
//! model, `--prometheus 127.0.0.1:0`; the address is printed on stderr, metrics are scraped while the
//! run goes on, and the last scrape agrees with the summary's counts; `promtool check metrics`
//! accepts every scrape; `--linger` keeps the final figures up after the run. Hostile clients (a slow
//! loris, idle connections, a 128 MiB request line) neither delay a scrape nor grow the
//! process's memory, and the run ends as it would without them.

use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::util::*;

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
                "--linger",
                "20s",
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
        "robustream_stage_latency_seconds_bucket{stage=\"infer\",le=\"+Inf\"} ",
        "robustream_stage_latency_seconds_count{stage=\"infer\"} ",
        "robustream_run_info{version=\"",
    ] {
        assert!(body.contains(name), "{name} missing: {body}");
    }
    assert_eq!(promtool_problems(&body), None, "{body}");
    // The run ends, says it lingers, and the endpoint still serves its final figures.
    let mut rest = String::new();
    let lingering = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("the run ended without lingering: {rest}");
        }
        rest.push_str(&line);
        if line.starts_with("prometheus: serving the final figures") {
            break line;
        }
    };
    assert!(
        lingering.contains("for 20 s more (--linger); Ctrl-C ends it"),
        "{lingering}"
    );
    let last = scrape(&addr);
    assert_eq!(
        sample(&last, "robustream_frames_read_total"),
        Some(100.0),
        "{last}"
    );
    assert_eq!(promtool_problems(&last), None, "{last}");
    // SIGTERM ends the lingering at once, and the run's own status stands.
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
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

/// The resident memory of process `pid` in KiB (`VmRSS` of /proc/PID/status).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in {status}"))
}

#[test]
fn hostile_clients_neither_delay_scrapes_nor_grow_memory() {
    let _timed = timed();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (mut child, addr, mut stderr) = spawn_with_prometheus(
        robustream()
            .args(["run", "--quiet", "--model"])
            .arg(model())
            .args([
                "--source",
                "synthetic:128x96@40/320",
                "--source-kind",
                "synthetic",
                "--scenarios",
                "corruption/contrast/1",
                "--prometheus",
                "127.0.0.1:0",
                "--out",
            ])
            .arg(&out),
    );
    let body = scrape_until(&addr, Duration::from_secs(60), |b| {
        sample(b, "robustream_frames_read_total").is_some_and(|n| n > 0.0)
    });
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    let rss_before = rss_kib(child.id());

    // Five idle connections and a slow loris sending a byte a second.
    let idle: Vec<TcpStream> = (0..5).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    let loris_addr = addr.clone();
    let loris = std::thread::spawn(move || {
        let mut s = TcpStream::connect(&loris_addr).unwrap();
        for b in b"GET /metrics HTTP/1.1\r\n" {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    // A 128 MiB request line, its answer read on the side.
    let huge = TcpStream::connect(&addr).unwrap();
    huge.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = huge.try_clone().unwrap();
    let answer = std::thread::spawn(move || {
        let mut a = Vec::new();
        let _ = reader.read_to_end(&mut a);
        String::from_utf8_lossy(&a).into_owned()
    });
    let mut sent = 0usize;
    let chunk = vec![b'a'; 1 << 16];
    let mut w = &huge;
    let _ = w.write_all(b"GET /");
    while sent < 128 << 20 {
        match w.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    // The endpoint stopped reading it (the rest was refused, not buffered).
    assert!(
        sent < 32 << 20,
        "{sent} bytes of the request line were taken"
    );
    let answer = answer.join().unwrap();
    assert!(answer.starts_with("HTTP/1.1 414 "), "{answer}");

    // Scrapes are answered at once all along.
    for _ in 0..5 {
        let t = Instant::now();
        let body = scrape(&addr);
        assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        std::thread::sleep(Duration::from_millis(200));
    }
    let grown = rss_kib(child.id()).saturating_sub(rss_before);
    assert!(grown < 32 * 1024, "memory grew by {grown} KiB");
    drop(idle);
    loris.join().unwrap();

    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{rest}");
    assert_eq!(summary(&out)["frames"]["read"], 320);
}
