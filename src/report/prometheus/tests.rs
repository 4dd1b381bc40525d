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
    };
    let text = render(&m, &counts);
    assert!(text.contains("robustream_frames_read_total 5\n"), "{text}");
    assert!(text.contains("robustream_frames_dropped_total 2\n"));
    assert!(text.contains("robustream_frames_lost_total 4\n"));
    assert!(text.contains("# TYPE robustream_records_total counter\n"));
    for (key, t) in m.tallies() {
        let l = format!("scenario=\"{key}\",family=\"{}\"", family(key));
        assert!(
            text.contains(&format!("robustream_records_total{{{l}}} {}\n", t.n)),
            "{key}: {text}"
        );
        if let Some(a) = t.top1() {
            assert!(text.contains(&format!("robustream_accuracy_ratio{{{l}}} {a}\n")));
        }
    }
    assert!(
        text.contains("robustream_stage_latency_seconds{stage=\"infer\",quantile=\"0.5\"} 0.004\n")
    );
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
