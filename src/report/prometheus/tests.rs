use super::*;
use crate::metrics::tests::{frames, timed};

fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut s, &mut out).unwrap();
    out
}

fn state() -> Metrics {
    let mut m = Metrics::new(vec!["clean".into()]);
    for f in frames() {
        let f: Vec<_> = f
            .into_iter()
            .map(|r| timed(r, &[("infer", 4.0), ("total", 9.5)]))
            .collect();
        m.add_frame(&f);
    }
    m
}

#[test]
fn exposition_has_every_family_with_labels_and_base_units() {
    let m = state();
    let counts = FrameCounts {
        read: 5,
        skipped: 1,
        dropped: 2,
        lost: 4,
        lost_causes: [("incomplete", 3), ("timeout", 1)]
            .map(|(c, n)| (c.to_string(), n))
            .into(),
    };
    let info = RunInfo(vec![
        ("version".into(), "0.1.0".into()),
        ("model".into(), "m\"x".into()),
        ("line".into(), "a\\b\nc".into()),
    ]);
    let text = render(&m, &counts, &info);
    assert!(
        text.contains("# TYPE robustream_run_info gauge\nrobustream_run_info{version=\"0.1.0\",model=\"m\\\"x\",line=\"a\\\\b\\nc\"} 1\n"),
        "{text}"
    );
    assert!(text.contains("robustream_frames_read_total 5\n"), "{text}");
    assert!(text.contains("robustream_frames_dropped_total 2\n"));
    assert!(text.contains("robustream_frames_lost_total 4\n"));
    assert!(text.contains(
        "# TYPE robustream_frames_lost_by_cause_total counter\n\
         robustream_frames_lost_by_cause_total{cause=\"incomplete\"} 3\n\
         robustream_frames_lost_by_cause_total{cause=\"timeout\"} 1\n"
    ));
    assert!(text.contains("# TYPE robustream_records_total counter\n"));
    for (key, t) in m.tallies() {
        let l = format!("scenario=\"{key}\",family=\"{}\"", family(key));
        assert!(
            text.contains(&format!("robustream_records_total{{{l}}} {}\n", t.n)),
            "{key}: {text}"
        );
        if let Some(a) = t.top1() {
            assert!(text.contains(&format!("robustream_accuracy_ratio{{{l}}} {}\n", num(a))));
        }
    }
    // Latency: a histogram per stage; every infer time is 4 ms, so all in le=0.005, none below.
    let infer = m
        .latencies()
        .find(|(stage, _)| stage.to_string() == "infer")
        .map(|(_, h)| h.len())
        .unwrap();
    assert!(infer > 0);
    assert!(text.contains("# TYPE robustream_stage_latency_seconds histogram\n"));
    for (le, n) in [
        ("0.0025", 0),
        ("0.005", infer),
        ("10", infer),
        ("+Inf", infer),
    ] {
        let line =
            format!("robustream_stage_latency_seconds_bucket{{stage=\"infer\",le=\"{le}\"}} {n}\n");
        assert!(text.contains(&line), "{line}{text}");
    }
    let sum = format!(
        "robustream_stage_latency_seconds_sum{{stage=\"infer\"}} {}\n",
        num(infer as f64 * 0.004)
    );
    assert!(text.contains(&sum), "{sum}{text}");
    assert!(text.contains(&format!(
        "robustream_stage_latency_seconds_count{{stage=\"infer\"}} {infer}\n"
    )));
    assert!(!text.contains("quantile"));
    // Every sample line is `name{labels} value` or `name value` with a number.
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let value = line.rsplit(' ').next().unwrap();
        assert!(value.parse::<f64>().is_ok(), "{line}");
        assert!(line.starts_with("robustream_"), "{line}");
    }
    assert_eq!(family("corruption/fog/3"), "corruption");
    assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

#[test]
fn values_are_written_without_float_noise() {
    assert_eq!(num(0.7 - 0.6), "0.1");
    assert_eq!(num(71.0 / 1e6 * 1.0), "0.000071");
    assert_eq!(num(0.000071 * 1000.0 / 1000.0), "0.000071");
    assert_eq!(num(1.0), "1");
    assert_eq!(num(0.0), "0");
    assert_eq!(num(-1e-15), "0");
    assert_eq!(num(-0.25), "-0.25");
    assert_eq!(num(27.0 / 115.0), "0.234782608696");
    assert_eq!(num(f64::NAN), "NaN");
    assert_eq!(num(f64::INFINITY), "+Inf");
    assert_eq!(num(12345678.5), "12345678.5");
}

#[test]
fn serves_the_snapshot_on_loopback_and_404_elsewhere() {
    let mut e = Exporter::start("127.0.0.1:0").unwrap();
    assert!(e.addr().ip().is_loopback());
    let m = state();
    e.update(&m, &FrameCounts::default(), true);
    let r = get(e.addr(), "/metrics");
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(r.contains("text/plain; version=0.0.4"));
    assert!(
        r.contains("robustream_records_total{scenario=\"clean\""),
        "{r}"
    );
    assert!(get(e.addr(), "/").starts_with("HTTP/1.1 200 OK"));
    assert!(get(e.addr(), "/").contains("/metrics"));
    assert!(get(e.addr(), "/nope").starts_with("HTTP/1.1 404"));
    // Throttled: an update right after a forced one keeps the old snapshot.
    let counts = FrameCounts {
        read: 77,
        ..FrameCounts::default()
    };
    e.update(&m, &counts, false);
    assert!(get(e.addr(), "/metrics").contains("robustream_frames_read_total 0\n"));
    e.update(&m, &counts, true);
    assert!(get(e.addr(), "/metrics").contains("robustream_frames_read_total 77\n"));
    let taken = e.addr();
    let err = Exporter::start(&taken.to_string()).err().unwrap();
    assert!(err.to_string().contains("--prometheus"), "{err}");
    let ExporterError::Bind { addr, source } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(addr, &taken.to_string());
    assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
    assert_eq!(
        err.to_string(),
        format!(
            "cannot serve Prometheus metrics on {taken} ({source}); pick another --prometheus address"
        )
    );
    // An address that does not parse is the same kind, naming it.
    let err = Exporter::start("no:port").err().unwrap();
    assert!(matches!(err, ExporterError::Bind { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("cannot serve Prometheus metrics on no:port ("),
        "{err}"
    );
}

/// Sends `request` raw and returns the whole response (a reset after it is tolerated).
fn raw(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(request);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn methods_and_malformed_requests_get_their_status() {
    let mut e = Exporter::start("127.0.0.1:0").unwrap();
    e.update(&state(), &FrameCounts::default(), true);
    let a = e.addr();
    let r = raw(a, b"POST /metrics HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"), "{r}");
    assert!(r.contains("Allow: GET, HEAD\r\n"), "{r}");
    let r = raw(a, b"HEAD /metrics HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    let (headers, body) = r.split_once("\r\n\r\n").unwrap();
    assert!(
        body.is_empty() && !headers.contains("Content-Length: 0\r\n"),
        "{r}"
    );
    // HTTP/1.0, bare `\n` line ends, a query string.
    let r = raw(a, b"GET /metrics?x=1 HTTP/1.0\n\n");
    assert!(r.contains("robustream_frames_read_total"), "{r}");
    for bad in [
        b"hello\r\n\r\n".as_slice(),
        b"GET /metrics\r\n\r\n",
        b"GET metrics HTTP/1.1\r\n\r\n",
        b"GET /metrics SPDY/3\r\n\r\n",
        b"\xff\xfe /metrics HTTP/1.1\r\n\r\n",
    ] {
        let r = raw(a, bad);
        assert!(
            r.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{bad:?}: {r}"
        );
    }
    // A client that connects and goes away costs nothing.
    drop(TcpStream::connect(a).unwrap());
    assert!(get(a, "/metrics").starts_with("HTTP/1.1 200 OK"));
}

#[test]
fn slow_and_idle_clients_do_not_delay_a_scrape() {
    let mut e = Exporter::start("127.0.0.1:0").unwrap();
    e.update(&state(), &FrameCounts::default(), true);
    let a = e.addr();
    // Five idle connections and a slow loris sending a byte every 200 ms.
    let idle: Vec<TcpStream> = (0..5).map(|_| TcpStream::connect(a).unwrap()).collect();
    let loris = std::thread::spawn(move || {
        let mut s = TcpStream::connect(a).unwrap();
        let started = Instant::now();
        for b in b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        (out, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..5 {
        let t = Instant::now();
        let r = get(a, "/metrics");
        assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
    }
    // The slow loris's head did not arrive within 2 s: 408 and closed, not served for ever.
    let (out, took) = loris.join().unwrap();
    assert!(out.starts_with("HTTP/1.1 408 Request Timeout"), "{out}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // The idle ones were answered and closed by the deadline too.
    for mut s in idle {
        let mut out = String::new();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.read_to_string(&mut out);
        assert!(out.starts_with("HTTP/1.1 408"), "{out}");
    }
}

#[test]
fn connections_beyond_the_limit_get_503_at_once_and_the_limit_frees_up() {
    let mut e = Exporter::start("127.0.0.1:0").unwrap();
    e.update(&state(), &FrameCounts::default(), true);
    let a = e.addr();
    let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|_| TcpStream::connect(a).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    let r = raw(a, b"GET /metrics HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 503"), "{r}");
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    drop(idle);
    // Their handlers see the close and count out.
    let t = Instant::now();
    loop {
        let r = raw(a, b"GET /metrics HTTP/1.1\r\n\r\n");
        if r.starts_with("HTTP/1.1 200 OK") {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "{r}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_huge_request_line_is_refused_after_8_kib() {
    // The read itself is bounded: an endless request line costs MAX_HEAD bytes.
    struct Endless(usize);
    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            buf.fill(b'a');
            self.0 += buf.len();
            Ok(buf.len())
        }
    }
    let mut r = Endless(0);
    let mut buf = [0u8; MAX_HEAD];
    let deadline = Instant::now() + HEAD_DEADLINE;
    let head = read_head(&mut r, &mut buf, deadline, |_| Ok(())).unwrap();
    assert_eq!(head, Head::TooLarge { line_ended: false });
    assert_eq!(r.0, MAX_HEAD);
    let mut lines = std::io::Cursor::new(b"GET / HTTP/1.1\r\n".repeat(1000));
    let head = read_head(&mut lines, &mut buf, deadline, |_| Ok(())).unwrap();
    assert_eq!(head, Head::TooLarge { line_ended: true });
    let mut ok = std::io::Cursor::new(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody".to_vec());
    let head = read_head(&mut ok, &mut buf, deadline, |_| Ok(())).unwrap();
    assert_eq!(head, Head::Complete(27));

    // Over TCP: a 1 MiB request line gets 414, the next scrape is served.
    let mut e = Exporter::start("127.0.0.1:0").unwrap();
    e.update(&state(), &FrameCounts::default(), true);
    let a = e.addr();
    let s = TcpStream::connect(a).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let mut sent = 0usize;
        let chunk = vec![b'a'; 64 * 1024];
        let _ = w.write_all(b"GET /");
        while sent < (1 << 20) {
            match w.write(&chunk) {
                Ok(n) => sent += n,
                Err(_) => break,
            }
        }
    });
    let mut out = Vec::new();
    let _ = (&s).read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out);
    assert!(out.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{out}");
    writer.join().unwrap();
    let r = get(a, "/metrics");
    assert!(r.starts_with("HTTP/1.1 200 OK"), "{r}");
}

/// An exposition with every family: labelled frames, a sliding window, latencies, the run's info.
fn full_exposition() -> String {
    let mut m = Metrics::new(vec!["clean".into()]).with_window(10);
    for f in frames() {
        let f: Vec<_> = f
            .into_iter()
            .map(|r| timed(r, &[("infer", 4.0), ("total", 9.5), ("wait", 0.02)]))
            .collect();
        m.add_frame(&f);
    }
    let counts = FrameCounts {
        read: 5,
        skipped: 1,
        dropped: 2,
        lost: 4,
        lost_causes: [("incomplete", 3), ("timeout", 1)]
            .map(|(c, n)| (c.to_string(), n))
            .into(),
    };
    let info = RunInfo(
        [
            ("version", "0.1.0"),
            ("model", "efficientnet_lite0.onnx"),
            ("plan", "corruption/*"),
            ("device", "line-3-cam"),
            ("camera", "rtsp://10.0.0.7/stream1"),
            ("line", "3"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec(),
    );
    render(&m, &counts, &info)
}

/// The names of the samples in an exposition (`name{…} v` or `name v`), with their label names.
fn served(text: &str) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut names: std::collections::BTreeMap<_, std::collections::BTreeSet<_>> =
        Default::default();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        let labels = names.entry(line[..end].to_string()).or_default();
        if let Some(inner) = line[end..]
            .strip_prefix('{')
            .and_then(|r| r.split_once('}'))
        {
            for pair in inner.0.split(',') {
                if let Some((k, _)) = pair.split_once('=') {
                    labels.insert(k.to_string());
                }
            }
        }
    }
    names
}

#[test]
fn promtool_accepts_the_exposition() {
    let text = full_exposition();
    for family in [
        "robustream_run_info",
        "robustream_window_accuracy_ratio",
        "robustream_accuracy_ratio",
        "robustream_stage_latency_seconds_bucket",
    ] {
        assert!(served(&text).contains_key(family), "{family}: {text}");
    }
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run promtool ({e}): it is in the Debian package `prometheus`, which \
                 scripts/system.sh installs"
            )
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "{said}\n{text}"
    );
}

/// The labels a query keeps by name: those in its `by (…)` and `group_left (…)` lists.
fn kept_labels(expr: &str) -> std::collections::BTreeSet<&str> {
    let mut kept = std::collections::BTreeSet::new();
    for keyword in ["by (", "group_left ("] {
        for (i, _) in expr.match_indices(keyword) {
            let list = &expr[i + keyword.len()..];
            let list = &list[..list.find(')').unwrap()];
            kept.extend(list.split(',').map(str::trim));
        }
    }
    kept
}

/// The (metric, label) pairs of a query's selectors `name{label op "…", …}`.
fn selector_labels(expr: &str) -> Vec<(&str, &str)> {
    let mut pairs = Vec::new();
    for (i, _) in expr.match_indices("robustream_") {
        let rest = &expr[i..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if let Some(inner) = rest[end..].strip_prefix('{') {
            let inner = &inner[..inner.find('}').unwrap()];
            for matcher in inner.split(',') {
                let label = matcher[..matcher.find(['=', '!']).unwrap()].trim();
                pairs.push((&rest[..end], label));
            }
        }
    }
    pairs
}

#[test]
fn the_grafana_dashboard_queries_only_served_metrics_and_labels() {
    let dash: serde_json::Value =
        serde_json::from_str(include_str!("../../../dashboards/robustream.grafana.json")).unwrap();
    let served = served(&full_exposition());
    // The device variable lists the devices robustream_run_info names.
    let vars = dash["templating"]["list"].as_array().unwrap();
    let device = vars.iter().find(|v| v["name"] == "device").unwrap();
    assert_eq!(
        device["query"]["query"],
        "label_values(robustream_run_info, device)"
    );
    assert!(served["robustream_run_info"].contains("device"));
    let panels = dash["panels"].as_array().unwrap();
    assert!(panels.len() >= 10, "{} panels", panels.len());
    let mut queried = std::collections::BTreeSet::new();
    for p in panels {
        let title = p["title"].as_str().unwrap();
        let targets = p["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{title}");
        assert_eq!(p["datasource"]["uid"], "${DS_PROMETHEUS}", "{title}");
        for t in targets {
            let expr = t["expr"].as_str().unwrap();
            // Every metric name in the query is one the endpoint serves.
            let names: Vec<&str> = expr
                .match_indices("robustream_")
                .map(|(i, _)| {
                    let rest = &expr[i..];
                    let end = rest
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    &rest[..end]
                })
                .collect();
            assert!(!names.is_empty(), "{title}: {expr}");
            for name in &names {
                assert!(
                    served.contains_key(*name),
                    "{title}: `{name}` is not served"
                );
                queried.insert(name.to_string());
            }
            // Every panel filters by the device variable, through robustream_run_info.
            assert!(
                expr.contains("robustream_run_info{device=~\"$device\"}"),
                "{title}: {expr}"
            );
            // Selectors match labels their metric has; `by`, `on` and `group_left` name labels
            // one of the query's metrics has (`instance` and `job`: added by Prometheus).
            for (name, label) in selector_labels(expr) {
                assert!(
                    served[name].contains(label),
                    "{title}: `{name}` has no label `{label}`"
                );
            }
            let known = |label: &str| {
                ["instance", "job", "le"].contains(&label)
                    || names.iter().any(|n| served[*n].contains(label))
            };
            for label in kept_labels(expr) {
                assert!(known(label), "{title}: `{label}` is on none of {names:?}");
            }
            // Legend labels: `instance`, or a label all of the query's metrics have, or one the
            // query keeps (`by (family)` keeps `family`, `group_left (device)` brings `device`),
            // or without aggregation one of the left-hand metric's (`a * on (…) group_left b`
            // keeps `a`'s labels).
            let legend = t["legendFormat"].as_str().unwrap_or_default();
            for part in legend.split("{{").skip(1) {
                let label = part.split("}}").next().unwrap().trim();
                let ok = label == "instance"
                    || names.iter().all(|n| served[*n].contains(label))
                    || (kept_labels(expr).contains(label) && known(label))
                    || (!expr.contains("by (") && served[names[0]].contains(label));
                assert!(ok, "{title}: legend label `{label}` is not on {names:?}");
            }
        }
    }
    // Every family the endpoint serves has a panel (histogram buckets stand for the histogram).
    for name in served.keys() {
        let family = name
            .trim_end_matches("_bucket")
            .trim_end_matches("_sum")
            .trim_end_matches("_count");
        assert!(
            queried.iter().any(|q| q.starts_with(family)),
            "no panel shows {name}"
        );
    }
}
