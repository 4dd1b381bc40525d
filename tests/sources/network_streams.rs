//! Network streams read for real: the `ffmpeg` CLI serves a test clip on a free loopback
//! port as an HTTP, RTMP or SRT server (RTSP: see below), and `robustream run --source <url>`
//! reads it on the real model as a user would. Per protocol, one server is killed mid-stream and a second one started on
//! the same port: the outage is reported, frames resume, and when the second server's clip ends
//! the run ends by itself (`[source.video] reconnect = "3s"`), with the second connection's frames
//! about rate × duration. A clip served over HTTP with a known length ends at its end with no
//! reconnect; a server that accepts the connection but never answers is given up after
//! `open_timeout` with one line.
//!
//! FFmpeg is only an RTSP *client* (or, with `-rtsp_flags listen`, a server that receives a
//! publish), so for RTSP the test answers the RTSP requests itself ([`RtspServer`]) and has
//! `ffmpeg` send the media as RTP (MPEG-TS payload) to the port the reader asked for in SETUP. A
//! protocol the local `ffmpeg` lacks is skipped with a line saying so.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::*;

/// Frame rate of the test clips.
const FPS: u32 = 15;

/// Whether the local `ffmpeg` has `protocol` for input and for output (the server side writes).
fn has_protocol(protocol: &str) -> bool {
    let out = Command::new("ffmpeg")
        .args(["-hide_banner", "-protocols"])
        .output()
        .expect("the `ffmpeg` CLI runs: run `bash scripts/setup.sh`");
    let listing = text(&out.stdout);
    let Some((input, output)) = listing.split_once("Output:") else {
        panic!("unexpected `ffmpeg -protocols` listing: {listing}");
    };
    let has = |section: &str| section.split_whitespace().any(|p| p == protocol);
    has(input) && has(output)
}

/// Whether the protocol test should run; says why not when it should not.
fn available(protocol: &str) -> bool {
    let ok = has_protocol(protocol);
    if !ok {
        eprintln!("SKIPPED: the local ffmpeg has no `{protocol}` protocol (`ffmpeg -protocols`)");
    }
    ok
}

/// A test pattern clip of `seconds` s at FPS, 320×240, H.264 (no B-frames, a key frame every 5
/// frames so a reader joins fast), in the container of `name`'s extension.
fn clip(dir: &Path, name: &str, seconds: u32) -> PathBuf {
    let p = dir.join(name);
    let src = format!("testsrc=size=320x240:rate={FPS}");
    let t = seconds.to_string();
    let mut args = vec!["-f", "lavfi", "-i", &src, "-t", &t, "-c:v", "libx264"];
    args.extend(["-preset", "ultrafast", "-tune", "zerolatency", "-g", "5"]);
    args.extend(["-pix_fmt", "yuv420p"]);
    if name.ends_with(".mp4") {
        // The index first, so a reader over HTTP never has to seek.
        args.extend(["-movflags", "+faststart"]);
    }
    args.push(p.to_str().unwrap());
    ffmpeg(&args);
    p
}

/// A free TCP port on loopback (bound, read, released).
fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One protocol: how `ffmpeg` serves a clip and the URL robustream reads it from.
struct Protocol {
    name: &'static str,
    /// Output options and URL of the serving `ffmpeg`.
    serve: Vec<String>,
    /// What robustream reads.
    url: String,
}

impl Protocol {
    fn http(port: u16) -> Self {
        let url = format!("http://127.0.0.1:{port}/live.ts");
        Protocol {
            name: "http",
            serve: vec![
                "-f".into(),
                "mpegts".into(),
                "-listen".into(),
                "1".into(),
                url.clone(),
            ],
            url,
        }
    }

    fn rtmp(port: u16) -> Self {
        let url = format!("rtmp://127.0.0.1:{port}/live/cam");
        Protocol {
            name: "rtmp",
            serve: vec![
                "-listen".into(),
                "1".into(),
                "-f".into(),
                "flv".into(),
                url.clone(),
            ],
            url,
        }
    }

    fn srt(port: u16) -> Self {
        Protocol {
            name: "srt",
            serve: vec![
                "-f".into(),
                "mpegts".into(),
                format!("srt://127.0.0.1:{port}?mode=listener&pkt_size=1316"),
            ],
            url: format!("srt://127.0.0.1:{port}?mode=caller"),
        }
    }

    fn rtsp(port: u16) -> Self {
        Protocol {
            name: "rtsp",
            serve: Vec::new(),
            url: format!("rtsp://127.0.0.1:{port}/live/cam"),
        }
    }

    /// A server sending `clip` in real time to the first reader that connects; killed on drop.
    fn serve(&self, clip: &Path) -> Server {
        if self.name == "rtsp" {
            return Server::Rtsp(RtspServer::start(&self.url, clip));
        }
        let child = Command::new("ffmpeg")
            .args(["-v", "error", "-nostdin", "-re", "-i"])
            .arg(clip)
            .args(["-c", "copy"])
            .args(&self.serve)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("the `ffmpeg` CLI is needed to serve test streams ({e}): run `bash scripts/setup.sh`")
            });
        Server::Ffmpeg(child)
    }
}

/// A serving `ffmpeg`, or the test's RTSP server; killed when dropped.
enum Server {
    Ffmpeg(Child),
    Rtsp(RtspServer),
}

impl Server {
    fn kill(&mut self) {
        match self {
            Server::Ffmpeg(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Server::Rtsp(server) => server.kill(),
        }
    }
}

/// The smallest RTSP server a reader plays from (FFmpeg cannot serve RTSP): a thread answers
/// OPTIONS, DESCRIBE (one MPEG-TS over RTP track, payload type 33), SETUP (UDP to the reader's
/// `client_port`), PLAY and TEARDOWN on the URL's port, and on PLAY starts `ffmpeg -re … -f
/// rtp_mpegts` sending the clip to the reader's port. Media is FFmpeg's own RTP; only the
/// signalling is ours. Like `ffmpeg -listen 1`, it serves one reader and is gone when that
/// reader's clip has been sent.
struct RtspServer {
    port: u16,
    stop: Arc<AtomicBool>,
    /// The reader's control connection, to cut it when the server "dies".
    conn: Arc<Mutex<Option<TcpStream>>>,
    sender: Arc<Mutex<Option<Child>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RtspServer {
    fn start(url: &str, clip: &Path) -> Self {
        let port: u16 = url
            .split(':')
            .nth(2)
            .and_then(|p| p.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap();
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let conn = Arc::new(Mutex::new(None));
        let sender = Arc::new(Mutex::new(None));
        let (stop2, conn2, sender2) = (stop.clone(), conn.clone(), sender.clone());
        let (url, clip) = (url.to_string(), clip.to_path_buf());
        let thread = std::thread::spawn(move || {
            for c in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(c) = c else { continue };
                *conn2.lock().unwrap() = c.try_clone().ok();
                rtsp_session(c, &url, &clip, &sender2);
                // Like `ffmpeg -listen 1`: one reader, then the server is gone (once it has sent).
                let sent = sender2.lock().unwrap().take();
                if let Some(mut child) = sent {
                    let _ = child.wait();
                    break;
                }
            }
        });
        RtspServer {
            port,
            stop,
            conn,
            sender,
            thread: Some(thread),
        }
    }

    /// Stops sending, cuts the reader's connection and closes the port.
    fn kill(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.stop.store(true, Ordering::SeqCst);
        if let Some(mut child) = self.sender.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(c) = self.conn.lock().unwrap().take() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        // Wake the accept loop so it sees the flag and drops the listener.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        let _ = thread.join();
    }
}

/// Answers one reader's RTSP requests until it tears down or the connection closes.
fn rtsp_session(c: TcpStream, url: &str, clip: &Path, sender: &Mutex<Option<Child>>) {
    let mut reader = BufReader::new(c.try_clone().unwrap());
    let mut c = c;
    let mut client_port = 0u16;
    loop {
        // One request: lines up to a blank one (readers send no bodies here).
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = line.trim_end().to_string();
            if line.is_empty() {
                break;
            }
            lines.push(line);
        }
        let Some(method) = lines.first().and_then(|l| l.split(' ').next()) else {
            return;
        };
        let header = |name: &str| {
            lines.iter().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
        };
        let cseq = header("CSeq").unwrap_or_default();
        let (mut status, mut extra, mut body) = ("200 OK", String::new(), String::new());
        match method {
            "OPTIONS" => extra = "Public: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN\r\n".into(),
            "DESCRIBE" => {
                body =
                    "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=test\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n\
                        m=video 0 RTP/AVP 33\r\na=rtpmap:33 MP2T/90000\r\na=control:track0\r\n"
                        .into();
                extra = format!(
                    "Content-Base: {url}/\r\nContent-Type: application/sdp\r\nContent-Length: {}\r\n",
                    body.len()
                );
            }
            "SETUP" => {
                let transport = header("Transport").unwrap_or_default();
                let port = transport
                    .split(';')
                    .find_map(|p| p.strip_prefix("client_port="))
                    .and_then(|p| p.split('-').next())
                    .and_then(|p| p.parse().ok());
                match port {
                    Some(p) => {
                        client_port = p;
                        extra = format!(
                            "Transport: RTP/AVP/UDP;unicast;client_port={p}-{};server_port={}-{}\r\n\
                             Session: 12345678\r\n",
                            p + 1,
                            p + 2,
                            p + 3
                        );
                    }
                    // Only UDP: an interleaved (TCP) set-up is refused.
                    None => status = "461 Unsupported Transport",
                }
            }
            "PLAY" => {
                extra = "Session: 12345678\r\n".into();
                let child = Command::new("ffmpeg")
                    .args(["-v", "error", "-nostdin", "-re", "-i"])
                    .arg(clip)
                    .args(["-c", "copy", "-f", "rtp_mpegts"])
                    .arg(format!("rtp://127.0.0.1:{client_port}?pkt_size=1316"))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("the `ffmpeg` CLI runs");
                *sender.lock().unwrap() = Some(child);
            }
            "TEARDOWN" => {}
            _ => status = "501 Not Implemented",
        }
        let reply = format!("RTSP/1.0 {status}\r\nCSeq: {cseq}\r\n{extra}\r\n{body}");
        if c.write_all(reply.as_bytes()).is_err() || method == "TEARDOWN" {
            return;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `robustream run` on `config` (clean frames only, real model, Prometheus on a free port)
/// writing to `out`, started now.
fn start_run(config: &Path, out: &Path) -> Child {
    robustream()
        .args([
            "run",
            "--quiet",
            "--scenarios",
            "clean",
            "--duration",
            "40s",
            "--prometheus",
            "127.0.0.1:0",
        ])
        .arg("--config")
        .arg(config)
        .arg("--model")
        .arg(model())
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The frame index `N` of the first `connection lost after frame N` line of `stderr`.
fn lost_after(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.contains("connection lost after frame "))
        .unwrap_or_else(|| panic!("no `connection lost` line: {stderr}"));
    line.split("connection lost after frame ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no frame index in {line:?}"))
}

/// Serves a 10 s clip with `protocol`, kills the server once robustream has read 10 frames, serves
/// a 3 s clip from a new server on the same port, and checks what the run made of it.
fn drop_out_and_come_back(protocol: fn(u16) -> Protocol, port: u16) {
    let p = protocol(port);
    let dir = tempfile::tempdir().unwrap();
    let ext = if p.name == "rtmp" { "flv" } else { "ts" };
    let long = clip(dir.path(), &format!("long.{ext}"), 10);
    let short_s = 3;
    let short = clip(dir.path(), &format!("short.{ext}"), short_s);
    let config = dir.path().join("stream.toml");
    std::fs::write(
        &config,
        format!(
            "[source]\npath = \"{}\"\n[source.video]\ntimeout = \"1s\"\nreconnect = \"3s\"\n",
            p.url
        ),
    )
    .unwrap();
    let out = dir.path().join("run");

    let mut first = p.serve(&long);
    // Let the listener come up before the reader connects.
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let mut child = start_run(&config, &out);
    // The first server dies once robustream has read some of its frames (seen in its metrics,
    // so a slow start on a busy machine cannot make the test miss the first connection).
    let (addr, mut stderr) = prometheus_addr(&mut child);
    loop {
        let read = sample(&scrape(&addr), "robustream_frames_read_total").unwrap_or(0.0);
        if read >= 10.0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}: no frames from the first server in 30 s",
            p.name
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    first.kill();
    let _second = p.serve(&short);
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    let took = started.elapsed();
    assert!(status.success(), "{}: {err}", p.name);

    // One line when the first server died, one when the second answered, one at the end.
    let url = &p.url;
    assert!(
        err.contains(&format!("warning: {url}: connection lost after frame ")),
        "{err}"
    );
    assert!(
        err.contains(&format!("warning: {url}: reconnected after ")),
        "{err}"
    );
    assert!(
        err.contains(&format!("warning: {url}: no connection within 3 s"))
            && err.contains("the stream is over"),
        "{err}"
    );
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "completed", "{}: {s}", p.name);
    let r = &s["run"]["source_report"];
    assert_eq!(r["url"], url.as_str(), "{r}");
    // The stream is the run's camera (docs/prometheus.md#which-device-a-run-is).
    assert_eq!(s["run"]["labels"]["camera"], url.as_str(), "{s}");
    assert_eq!(r["codec"], "h264", "{r}");
    assert!(r["reconnects"].as_u64().unwrap() >= 1, "{r}");
    let outages = r["outages"].as_array().unwrap();
    assert_eq!(outages[0]["recovered"], true, "{r}");
    assert_eq!(outages.last().unwrap()["recovered"], false, "{r}");

    // The second server's clip came through about whole: frames ≈ rate × its duration.
    let decoded = r["frames_decoded"].as_u64().unwrap();
    let before = lost_after(&err) + 1;
    let after = decoded - before;
    let sent = u64::from(FPS * short_s);
    assert!(
        after * 10 >= sent * 8 && after <= sent,
        "{}: {after} frames after the reconnect, {sent} sent ({decoded} decoded, {before} before): {r}",
        p.name
    );
    // The first server was killed after ≥ 10 frames were read (an RTMP reader sees its first
    // frames only after FFmpeg's ~5 s probe), long before the end of its 10 s.
    assert!(
        before >= 10 && before < u64::from(FPS * 9),
        "{}: {before} frames before: {r}",
        p.name
    );

    // Every frame read has its clean record; ids go on across the reconnect.
    let read = s["frames"]["read"].as_u64().unwrap();
    let dropped = s["frames"]["dropped"].as_u64().unwrap();
    assert_eq!(r["frames_out"], read, "{r}");
    let recs = records(&out);
    assert_eq!(recs.len() as u64 + dropped, read, "{s}");
    let name = url.rsplit('/').next().unwrap().split('?').next().unwrap();
    let ids: Vec<u64> = recs
        .iter()
        .map(|r| {
            let id = r["frame"].as_str().unwrap();
            let (n, k) = id.rsplit_once('#').unwrap();
            assert_eq!(n, name, "{id}");
            k.parse().unwrap()
        })
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(
        ids.iter().any(|&k| k >= before),
        "no record after the reconnect: {ids:?}"
    );
    eprintln!(
        "{}: {before} frames before the outage, {after} of {sent} after; outage {:.2} s; run {:.1} s",
        p.name,
        outages[0]["duration_s"].as_f64().unwrap(),
        took.as_secs_f64()
    );
}

#[test]
fn http_stream_drops_out_comes_back_and_ends() {
    let _timed = timed();
    if available("http") {
        drop_out_and_come_back(Protocol::http, free_tcp_port());
    }
}

#[test]
fn rtmp_stream_drops_out_comes_back_and_ends() {
    let _timed = timed();
    if available("rtmp") {
        drop_out_and_come_back(Protocol::rtmp, free_tcp_port());
    }
}

#[test]
fn rtsp_stream_drops_out_comes_back_and_ends() {
    let _timed = timed();
    if available("rtp") {
        drop_out_and_come_back(Protocol::rtsp, free_tcp_port());
    }
}

#[test]
fn srt_stream_drops_out_comes_back_and_ends() {
    let _timed = timed();
    if available("srt") {
        drop_out_and_come_back(Protocol::srt, free_udp_port());
    }
}

/// Answers every HTTP request on `listener` with the whole of `body` (with its length), like a
/// plain web server holding a clip; runs until the test process ends.
fn serve_file(listener: TcpListener, body: Vec<u8>) {
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: video/mp4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(&body);
        }
    });
}

#[test]
fn a_clip_on_a_web_server_ends_at_its_end_without_reconnecting() {
    let dir = tempfile::tempdir().unwrap();
    let mp4 = clip(dir.path(), "clip.mp4", 4);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/clips/clip.mp4", listener.local_addr().unwrap());
    serve_file(listener, std::fs::read(&mp4).unwrap());
    let out = dir.path().join("run");
    let o = run(robustream()
        .args([
            "run",
            "--quiet",
            "--scenarios",
            "clean",
            "--duration",
            "40s",
            "--model",
        ])
        .arg(model())
        .args(["--source", &url, "--out"])
        .arg(&out));
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("connection lost"), "{err}");
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "completed", "{s}");
    let r = &s["run"]["source_report"];
    assert_eq!(r["frames_decoded"], FPS * 4, "{r}");
    assert_eq!(r["outage_count"], 0, "{r}");
    let recs = records(&out);
    assert_eq!(
        recs.len() as u64 + s["frames"]["dropped"].as_u64().unwrap(),
        u64::from(FPS * 4)
    );
    // Ids are `<name>#<decoded index>`, in order. (A stream is live: frames that arrive while the
    // workers are busy are dropped at admission, so the first record need not be #0.)
    let index = |r: &serde_json::Value| -> u64 {
        let id = r["frame"].as_str().unwrap();
        id.strip_prefix("clip.mp4#").unwrap().parse().unwrap()
    };
    assert!(recs.windows(2).all(|w| index(&w[0]) < index(&w[1])));
    assert!(recs.iter().all(|r| index(r) < u64::from(FPS * 4)));
}

#[test]
fn a_server_that_never_answers_is_given_up_after_open_timeout() {
    // The kernel accepts connections into the backlog; nobody ever reads or writes.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    for url in [
        format!("http://127.0.0.1:{port}/live.ts"),
        format!("rtmp://127.0.0.1:{port}/live/cam"),
        format!("rtsp://127.0.0.1:{port}/stream1"),
        format!("tcp://127.0.0.1:{port}"),
    ] {
        let config = dir.path().join("silent.toml");
        std::fs::write(
            &config,
            format!("[source]\npath = \"{url}\"\n[source.video]\nopen_timeout = \"1s\"\n"),
        )
        .unwrap();
        let started = Instant::now();
        let o = quiet_run(&config)
            .arg("--out")
            .arg(dir.path().join("run"))
            .output()
            .unwrap();
        let took = started.elapsed();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{url}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!(
                "{url}: no answer within 1 s (`[source.video] open_timeout`)"
            )),
            "{err}"
        );
        // Not a timing measurement: only that the 1 s setting, not the 15 s default, applied.
        assert!(
            took < Duration::from_secs(10),
            "{url}: gave up after {took:?}"
        );
    }
    // Keep the listener (and its backlog) alive to here.
    let mut probe = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let _ = probe.write_all(b"x");
    let mut none = [0u8; 1];
    probe
        .set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    assert!(probe.read(&mut none).is_err(), "the silent server answered");
    drop(listener);
}

#[test]
fn with_reconnect_false_the_first_loss_ends_the_run() {
    if !available("http") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = Protocol::http(free_tcp_port());
    let clip = clip(dir.path(), "short.ts", 2);
    let config = dir.path().join("once.toml");
    std::fs::write(
        &config,
        format!(
            "[source]\npath = \"{}\"\n[source.video]\nreconnect = false\n",
            p.url
        ),
    )
    .unwrap();
    let _server = p.serve(&clip);
    std::thread::sleep(Duration::from_millis(500));
    let out = dir.path().join("run");
    let mut child = start_run(&config, &out);
    let (_, mut stderr) = prometheus_addr(&mut child);
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    assert!(child.wait().unwrap().success(), "{err}");
    assert!(
        err.contains("not reconnecting (`reconnect = false`)"),
        "{err}"
    );
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "completed", "{s}");
    let r = &s["run"]["source_report"];
    assert_eq!(r["frames_decoded"], FPS * 2, "{r}");
    assert_eq!(r["reconnects"], 0, "{r}");
    let outage = &r["outages"][0];
    assert_eq!(
        (outage["recovered"].as_bool(), outage["attempts"].as_u64()),
        (Some(false), Some(0)),
        "{r}"
    );
}
