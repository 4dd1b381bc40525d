//! The Prometheus endpoint: a run's live state served as the Prometheus text exposition
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
//! | `robustream_stage_latency_seconds` (`_bucket`, `_sum`, `_count`) | histogram | stage, le |
//! | `robustream_run_info` (value 1) | gauge | version, model, engine, onnxruntime, source, plan, scenarios, device, camera, shard (sharded runs), the user's labels |
//!
//! Latency is a histogram with fixed buckets from 50 µs to 10 s (`crate::latency::BUCKET_BOUNDS_US`),
//! counted exactly as the frames pass: PromQL windows it (`rate(…_bucket[5m])`) and adds it up
//! across devices before `histogram_quantile`, which whole-run quantiles cannot be. Values are
//! written without float noise: at most 12 decimals, trailing zeros dropped.
//!
//! The exporter holds a rendered snapshot: the run's collector re-renders it at most every
//! [`REFRESH`] (a few tens of µs for a 95-scenario plan) and a scrape only takes a reference to it,
//! so scrapes never contend with the evaluation. Clients cannot block it or each other:
//! each connection is answered on a thread of its own (at most 16 at once, `503` beyond), its
//! request head must arrive within 2 s (`408`) and 8 KiB (`414` / `431`), the answer must be taken
//! within 2 s; `GET`/`HEAD` of `/metrics` (and `/`, a pointer to it), `404` for other paths,
//! `405` for other methods. The text format is a handful of line rules, written here directly;
//! a client library's model (counters bumped where events happen) does not fit a snapshot of the
//! evaluator's own tallies.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use self::exposition::{escape, head, num, scenario_labels};
use super::families::FAMILIES;
use crate::metrics::Metrics;
use crate::report::summary::FrameCounts;

pub(crate) mod exposition;

/// How often the collector refreshes the served snapshot at most.
const REFRESH: Duration = Duration::from_millis(200);

/// The family label of a scenario key: its first `/` segment.
#[cfg(test)]
use crate::key::family;

/// What `robustream_run_info` says about the run: (label, value) pairs, in order: the built-in
/// labels, then the fleet labels ([`crate::report::fleet`]: `device`, `camera`, `shard`, the
/// user's), whose names are checked when the config settles. Empty: no `robustream_run_info` line.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunInfo(pub(crate) Vec<(String, String)>);

/// Renders the exposition text of `metrics` and `frames`, with `info` as `robustream_run_info`.
fn render(metrics: &Metrics, frames: &FrameCounts, info: &RunInfo) -> String {
    let mut out = String::with_capacity(256 + metrics.keys().len() * 400);
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
    if !frames.lost_causes.is_empty() {
        let n = "robustream_frames_lost_by_cause_total";
        head(
            &mut out,
            n,
            "counter",
            "robustream_frames_lost_total by cause (sequence_gap, a GenICam stream's incomplete, timeout, ...).",
        );
        for (cause, value) in &frames.lost_causes {
            let _ = writeln!(out, "{n}{{cause=\"{}\"}} {value}", escape(cause));
        }
    }
    if !info.0.is_empty() {
        head(
            &mut out,
            "robustream_run_info",
            "gauge",
            "The run: robustream version, model, engine, source, plan and the device's labels (value 1).",
        );
        let labels: Vec<String> = info
            .0
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect();
        let _ = writeln!(out, "robustream_run_info{{{}}} 1", labels.join(","));
    }
    let labels = scenario_labels;
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
                let _ = writeln!(out, "{name}{{{}}} {}", labels(key), num(v));
            }
        }
    }
    for f in FAMILIES {
        f.prometheus(metrics, &mut out);
    }
    head(
        &mut out,
        "robustream_stage_latency_seconds",
        "histogram",
        "Per-stage latency over the run, seconds (buckets from 50 us to 10 s).",
    );
    let name = "robustream_stage_latency_seconds";
    for (stage, h) in metrics.latencies() {
        for (bound_us, n) in h.cumulative_buckets() {
            let le = num(bound_us as f64 / 1e6);
            let _ = writeln!(out, "{name}_bucket{{stage=\"{stage}\",le=\"{le}\"}} {n}");
        }
        let n = h.len();
        let _ = writeln!(out, "{name}_bucket{{stage=\"{stage}\",le=\"+Inf\"}} {n}");
        let _ = writeln!(
            out,
            "{name}_sum{{stage=\"{stage}\"}} {}",
            num(h.sum_seconds())
        );
        let _ = writeln!(out, "{name}_count{{stage=\"{stage}\"}} {n}");
    }
    out
}

/// Limits that keep clients from blocking or slowing the run or each other: every
/// connection is answered on its own short-lived thread, at most [`MAX_CONNECTIONS`] at a time.
const MAX_CONNECTIONS: usize = 16;
/// The whole request head (request line and headers) must arrive within this, from the accept.
const HEAD_DEADLINE: Duration = Duration::from_secs(2);
/// The largest request head read; a longer one is refused (`414` / `431`) and the connection
/// closed. A scrape's head is about 200 bytes.
const MAX_HEAD: usize = 8 * 1024;
/// A response must be taken by the client within this.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// After answering, unread input is discarded for at most this long and this many bytes before the
/// connection closes, so the client reads the answer instead of a reset.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 1 << 20;
/// How long the accepting thread sleeps when no connection waits (the most a scrape waits for it).
const ACCEPT_POLL: Duration = Duration::from_millis(10);

/// A running endpoint: the snapshot it serves and the thread accepting connections.
pub struct Exporter {
    /// `robustream_run_info`'s labels ([`Exporter::set_info`]).
    info: RunInfo,
    snapshot: Arc<Mutex<Arc<str>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    addr: SocketAddr,
    last: Option<Instant>,
}

/// One connection handler counted in; counted out when dropped (also when its thread could not
/// start or panicked).
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why the endpoint did not start. Display = the one line users see.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExporterError {
    /// The address does not parse or resolve, or cannot be bound (in use, not ours, no
    /// permission).
    #[error(
        "cannot serve Prometheus metrics on {} ({source}); pick another --prometheus address",
        crate::quote::clip(addr)
    )]
    Bind {
        /// The address as given.
        addr: String,
        /// Why it could not be bound.
        source: std::io::Error,
    },
    /// The bound socket could not be set up, or its thread could not start.
    #[error(transparent)]
    Socket(#[from] std::io::Error),
}

impl Exporter {
    /// Binds `addr` (e.g. `127.0.0.1:9898`; port 0 picks a free one) and starts serving an empty
    /// snapshot. Errors name the address.
    pub(crate) fn start(addr: &str) -> Result<Self, ExporterError> {
        let listener = TcpListener::bind(addr).map_err(|source| ExporterError::Bind {
            addr: addr.to_string(),
            source,
        })?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let snapshot: Arc<Mutex<Arc<str>>> = Arc::new(Mutex::new(Arc::from("")));
        let stop = Arc::new(AtomicBool::new(false));
        let (snap, flag) = (snapshot.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("prometheus".into())
            .spawn(move || accept(&listener, &snap, &flag))?;
        Ok(Self {
            info: RunInfo::default(),
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

    /// What `robustream_run_info` says from the next update on.
    pub(crate) fn set_info(&mut self, info: RunInfo) {
        self.info = info;
    }

    /// Keeps serving the last snapshot for `linger` after the run (`--linger`), so a scraper on a
    /// 15 s interval still sees a short run's final figures; returns early when `stop` is raised
    /// (Ctrl-C, SIGTERM).
    pub fn linger(self, linger: Duration, stop: &AtomicBool) {
        let until = Instant::now() + linger;
        while !stop.load(Ordering::Relaxed) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }

    /// Re-renders the snapshot if [`REFRESH`] has passed since the last one (or `force`). The lock
    /// is held only to swap the text: a scrape takes a reference to it, never a copy under the lock.
    pub(crate) fn update(&mut self, metrics: &Metrics, frames: &FrameCounts, force: bool) {
        if !force && self.last.is_some_and(|t| t.elapsed() < REFRESH) {
            return;
        }
        let text: Arc<str> = Arc::from(render(metrics, frames, &self.info));
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

/// The accepting thread: hands each connection to a thread of its own (at most
/// [`MAX_CONNECTIONS`]; beyond that a connection gets `503` at once), until `stop`. Handler threads
/// are not waited for: each ends within its deadlines.
fn accept(listener: &TcpListener, snapshot: &Arc<Mutex<Arc<str>>>, stop: &AtomicBool) {
    let active = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // WouldBlock: nobody waiting; anything else (e.g. out of file descriptors): wait too.
            Err(_) => {
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
        };
        if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::AcqRel);
            refuse(stream);
            continue;
        }
        let slot = Slot(active.clone());
        let snap = snapshot.clone();
        // A thread that cannot start drops the closure: the slot is freed and the connection closed.
        let _ = std::thread::Builder::new()
            .name("prometheus-conn".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let _slot = slot;
                // One slow or broken client must not stop the endpoint.
                let _ = serve(stream, &snap);
            });
    }
}

/// `503` without waiting for anything: the connection limit is reached.
fn refuse(stream: TcpStream) {
    let _ = stream.set_nonblocking(true);
    let body = "too many connections to the metrics endpoint; retry in a second\n";
    let _ = (&stream).write_all(
        format!(
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
}

/// How reading a request head ended.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    /// The head ended (blank line) after this many bytes.
    Complete(usize),
    /// [`MAX_HEAD`] bytes without the blank line; `line_ended`: the request line had ended.
    TooLarge { line_ended: bool },
    /// [`HEAD_DEADLINE`] passed first.
    TimedOut,
    /// The client closed the connection before the head ended.
    Closed,
}

/// Reads a request head into `buf` (its length bounds the head) until `deadline`, calling `arm`
/// with the time left before every read (a socket's read timeout). Never reads past the blank line
/// more than one read's worth, never more than `buf.len()` bytes in all.
fn read_head(
    r: &mut impl Read,
    buf: &mut [u8],
    deadline: Instant,
    mut arm: impl FnMut(Duration) -> std::io::Result<()>,
) -> std::io::Result<Head> {
    let mut filled = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Head::TimedOut);
        }
        arm(left)?;
        let n = match r.read(&mut buf[filled..]) {
            Ok(0) => return Ok(Head::Closed),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(Head::TimedOut);
            }
            Err(e) => return Err(e),
        };
        // Look for the end in the new bytes (and the three before them).
        let from = filled.saturating_sub(3);
        filled += n;
        if let Some(end) = head_end(&buf[from..filled]) {
            return Ok(Head::Complete(from + end));
        }
        if filled == buf.len() {
            return Ok(Head::TooLarge {
                line_ended: buf.contains(&b'\n'),
            });
        }
    }
}

/// Where a head ends in `bytes`: just past the first `\r\n\r\n` or `\n\n`.
fn head_end(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len()).find_map(|i| {
        let rest = &bytes[i..];
        if rest.starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else if rest.starts_with(b"\n\n") {
            Some(i + 2)
        } else {
            None
        }
    })
}

/// What a request gets: status, extra headers, body, and whether the body is sent (not for `HEAD`).
struct Answer {
    status: &'static str,
    content_type: &'static str,
    extra: &'static str,
    body: Arc<str>,
    send_body: bool,
}

impl Answer {
    fn text(status: &'static str, body: &str) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            extra: "",
            body: Arc::from(body),
            send_body: true,
        }
    }
}

/// The answer to a complete request head: `GET`/`HEAD` of `/metrics` → the snapshot, of `/` → a
/// pointer to it, another path → `404`, another method → `405`, not HTTP/1.x → `400`.
fn answer(head: &[u8], snapshot: &Mutex<Arc<str>>) -> Answer {
    let line = head
        .split(|&b| b == b'\n')
        .next()
        .and_then(|l| std::str::from_utf8(l).ok())
        .map(|l| l.trim_end_matches('\r'))
        .unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Answer::text(
            "400 Bad Request",
            "not an HTTP request; robustream serves Prometheus metrics at GET /metrics\n",
        );
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Answer::text(
            "400 Bad Request",
            "not an HTTP/1.x request; robustream serves Prometheus metrics at GET /metrics\n",
        );
    }
    let send_body = match method {
        "GET" => true,
        "HEAD" => false,
        _ => {
            return Answer {
                extra: "Allow: GET, HEAD\r\n",
                ..Answer::text(
                    "405 Method Not Allowed",
                    "robustream serves Prometheus metrics at GET /metrics\n",
                )
            };
        }
    };
    let path = target.split(['?', '#']).next().unwrap_or(target);
    let answer = match path {
        "/metrics" => Answer {
            content_type: "text/plain; version=0.0.4; charset=utf-8",
            body: snapshot
                .lock()
                .map(|s| s.clone())
                .unwrap_or_else(|_| Arc::from("")),
            ..Answer::text("200 OK", "")
        },
        "/" => Answer::text(
            "200 OK",
            "robustream: Prometheus metrics of the running evaluation at /metrics\n",
        ),
        _ => Answer::text(
            "404 Not Found",
            "robustream serves Prometheus metrics at /metrics\n",
        ),
    };
    Answer {
        send_body,
        ..answer
    }
}

/// Answers one connection: reads the request head within [`HEAD_DEADLINE`] and [`MAX_HEAD`] bytes
/// (`408`, `414` or `431` otherwise), writes the answer within [`WRITE_TIMEOUT`], closes.
fn serve(stream: TcpStream, snapshot: &Mutex<Arc<str>>) -> std::io::Result<()> {
    let deadline = Instant::now() + HEAD_DEADLINE;
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut buf = [0u8; MAX_HEAD];
    let head = read_head(&mut &stream, &mut buf, deadline, |left| {
        stream.set_read_timeout(Some(left))
    })?;
    let answer = match head {
        Head::Complete(end) => answer(&buf[..end], snapshot),
        Head::TooLarge { line_ended: false } => Answer::text(
            "414 URI Too Long",
            "request line longer than 8 KiB; robustream serves Prometheus metrics at GET /metrics\n",
        ),
        Head::TooLarge { line_ended: true } => Answer::text(
            "431 Request Header Fields Too Large",
            "request head longer than 8 KiB\n",
        ),
        Head::TimedOut => Answer::text(
            "408 Request Timeout",
            "the request did not arrive within 2 s\n",
        ),
        Head::Closed => return Ok(()),
    };
    let mut out = &stream;
    write!(
        out,
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
        answer.status,
        answer.content_type,
        answer.body.len(),
        answer.extra
    )?;
    if answer.send_body {
        out.write_all(answer.body.as_bytes())?;
    }
    out.flush()?;
    // Closing with unread input would reset the connection and could lose the answer on the way:
    // say we are done, then discard what the client still sends, within bounds.
    stream.shutdown(std::net::Shutdown::Write)?;
    let linger_end = Instant::now() + LINGER;
    let mut drained = 0;
    while drained < LINGER_BYTES {
        let left = linger_end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        stream.set_read_timeout(Some(left))?;
        match (&stream).read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
