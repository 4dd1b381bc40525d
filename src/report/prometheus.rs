//! The Prometheus endpoint (issue 5): a run's live state served as the Prometheus text exposition
//! format (version 0.0.4) on `GET /metrics`, opt-in (`--prometheus ADDR` or `[report] prometheus`),
//! bound to loopback unless an address says otherwise.
//!
//! Names follow Prometheus conventions: prefix `robustream_`, base units (seconds), `_total` on
//! counters, ratios in 0..1; labels `scenario` (the scenario key), `family` (its first path segment:
//! `clean`, `corruption`, `background`, `ablation`, `region_noise`, `placement`) and `stage`.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `robustream_frames_read_total`, `_skipped_total`, `_dropped_total` | counter | — |
//! | `robustream_records_total` | counter | scenario, family |
//! | `robustream_accuracy_ratio` (top-1, labelled records) | gauge | scenario, family |
//! | `robustream_accuracy_drop_ratio` (clean − scenario, paired frames) | gauge | scenario, family |
//! | `robustream_agreement_ratio` (top-1 equal to clean's) | gauge | scenario, family |
//! | `robustream_flip_ratio` (top-1 changed between consecutive frames) | gauge | scenario, family |
//! | `robustream_window_accuracy_ratio` (over the sliding window) | gauge | scenario, family |
//! | `robustream_window_drop_volatility` (across the window's scenarios) | gauge | — |
//! | `robustream_stage_latency_seconds` | gauge | stage, quantile (0.5, 0.9, 0.99, 1) |
//!
//! The exporter holds a rendered snapshot: the run's collector re-renders it at most every
//! [`REFRESH`] (a few tens of µs for a 95-scenario plan) and a scrape only copies it, so scrapes never
//! contend with the evaluation. The text format is a handful of line rules, written here directly;
//! a client library's model (counters bumped where events happen) does not fit a snapshot of the
//! evaluator's own tallies.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::metrics::Metrics;
use crate::report::summary::FrameCounts;

/// How often the collector refreshes the served snapshot at most.
pub const REFRESH: Duration = Duration::from_millis(200);

/// The family label of a scenario key: its first `/` segment.
pub fn family(key: &str) -> &str {
    key.split('/').next().unwrap_or(key)
}

/// Escapes a label value (backslash, double quote, newline), as the text format requires.
fn escape(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Renders the exposition text of `metrics` and `frames`.
pub fn render(metrics: &Metrics, frames: &FrameCounts) -> String {
    let mut out = String::with_capacity(256 + metrics.keys().len() * 400);
    let head = |out: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };
    for (name, value, help) in [
        ("read", frames.read, "Frames read from the source."),
        (
            "skipped",
            frames.skipped,
            "Source items skipped as unreadable.",
        ),
        (
            "dropped",
            frames.dropped,
            "Frames of a live source dropped because the pipeline was behind.",
        ),
        (
            "lost",
            frames.lost,
            "Frames the source lost before robustream saw them (camera driver sequence gaps).",
        ),
    ] {
        let n = format!("robustream_frames_{name}_total");
        head(&mut out, &n, "counter", help);
        let _ = writeln!(out, "{n} {value}");
    }
    let labels = |key: &str| {
        format!(
            "scenario=\"{}\",family=\"{}\"",
            escape(key),
            escape(family(key))
        )
    };
    head(
        &mut out,
        "robustream_records_total",
        "counter",
        "Evaluated variants per scenario.",
    );
    for (key, t) in metrics.tallies() {
        let _ = writeln!(out, "robustream_records_total{{{}}} {}", labels(key), t.n);
    }
    type Ratio = fn(&crate::metrics::Tally) -> Option<f64>;
    let ratios: [(&str, &str, Ratio); 4] = [
        (
            "robustream_accuracy_ratio",
            "Top-1 accuracy over labelled records (0..1).",
            |t| t.top1(),
        ),
        (
            "robustream_accuracy_drop_ratio",
            "Clean minus scenario top-1 accuracy on frames with both (may be negative).",
            |t| t.drop(),
        ),
        (
            "robustream_agreement_ratio",
            "Share of records whose top-1 equals the clean record's (works without labels).",
            |t| t.agreement(),
        ),
        (
            "robustream_flip_ratio",
            "Share of consecutive frame pairs whose top-1 changed (ImageNet-P flip probability).",
            |t| t.flip_probability(),
        ),
    ];
    for (name, help, f) in ratios {
        head(&mut out, name, "gauge", help);
        for (key, t) in metrics.tallies() {
            if let Some(v) = f(t) {
                let _ = writeln!(out, "{name}{{{}}} {v}", labels(key));
            }
        }
    }
    if let Some(w) = metrics.window() {
        head(
            &mut out,
            "robustream_window_accuracy_ratio",
            "gauge",
            "Top-1 accuracy over the sliding window's labelled records (0..1).",
        );
        for s in &w.scenarios {
            if let Some(a) = s.top1 {
                let _ = writeln!(
                    out,
                    "robustream_window_accuracy_ratio{{{}}} {a}",
                    labels(&s.scenario)
                );
            }
        }
        if let Some(v) = w.drop_volatility {
            head(
                &mut out,
                "robustream_window_drop_volatility",
                "gauge",
                "Drop volatility across the sliding window's scenarios (REFERENCE 9.1 on the window).",
            );
            let _ = writeln!(out, "robustream_window_drop_volatility {v}");
        }
    }
    head(
        &mut out,
        "robustream_stage_latency_seconds",
        "gauge",
        "Per-stage latency quantiles over the run (quantile 1 = max).",
    );
    for (stage, h) in metrics.latencies() {
        let q = h.quantiles();
        for (quantile, ms) in [
            ("0.5", q.p50),
            ("0.9", q.p90),
            ("0.99", q.p99),
            ("1", q.max),
        ] {
            let _ = writeln!(
                out,
                "robustream_stage_latency_seconds{{stage=\"{stage}\",quantile=\"{quantile}\"}} {}",
                ms / 1e3
            );
        }
    }
    out
}

/// A running endpoint: the snapshot it serves and the thread serving it.
pub struct Exporter {
    snapshot: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    addr: SocketAddr,
    last: Option<Instant>,
}

impl Exporter {
    /// Binds `addr` (e.g. `127.0.0.1:9898`; port 0 picks a free one) and starts serving an empty
    /// snapshot. Errors name the address.
    pub fn start(addr: &str) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            anyhow::anyhow!(
                "cannot serve Prometheus metrics on {addr} ({e}); pick another --prometheus address"
            )
        })?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let snapshot = Arc::new(Mutex::new(String::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (snap, flag) = (snapshot.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("prometheus".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            // One slow or broken client must not stop the endpoint.
                            let _ = serve(stream, &snap);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(20)),
                    }
                }
            })?;
        Ok(Self {
            snapshot,
            stop,
            thread: Some(thread),
            addr,
            last: None,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Re-renders the snapshot if [`REFRESH`] has passed since the last one (or `force`).
    pub fn update(&mut self, metrics: &Metrics, frames: &FrameCounts, force: bool) {
        if !force && self.last.is_some_and(|t| t.elapsed() < REFRESH) {
            return;
        }
        let text = render(metrics, frames);
        if let Ok(mut s) = self.snapshot.lock() {
            *s = text;
        }
        self.last = Some(Instant::now());
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers one HTTP/1.x request: `GET /metrics` → the snapshot, anything else → 404.
fn serve(stream: TcpStream, snapshot: &Mutex<String>) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // Skip the headers.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let mut parts = request.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let mut stream = stream;
    if method == "GET" && (path == "/metrics" || path.starts_with("/metrics?")) {
        let body = snapshot.lock().map(|s| s.clone()).unwrap_or_default();
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    } else {
        let body = "robustream serves Prometheus metrics at /metrics\n";
        write!(
            stream,
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
    }
}

#[cfg(test)]
mod tests {
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
        assert!(text.contains(
            "robustream_stage_latency_seconds{stage=\"infer\",quantile=\"0.5\"} 0.004\n"
        ));
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
        assert!(get(e.addr(), "/").starts_with("HTTP/1.1 404"));
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
    }
}
