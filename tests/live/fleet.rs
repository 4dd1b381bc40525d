//! Fleets (docs/prometheus.md#fleets): a run's `robustream_run_info` says which device it is on
//! (`device`, `camera`, the user's `--run-label`), summary.json's `run.labels` says the same, and
//! the PromQL of the docs' Fleets section and of the Grafana dashboard works on what the endpoint
//! really serves: a real run, a real Prometheus on the docs' `device.yml` scraping it, a central one
//! on `central.yml` federating that, an agent on `agent.yml` remote-writing to a receiver on
//! `receiver.yml`; every query is evaluated on both central servers through the HTTP API and must
//! return series grouped by `device`. `promtool check config` checks the docs' YAML blocks. Without
//! the `prometheus` binary, every metric and label the queries use must be in the scraped text.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// The Fleets section of docs/prometheus.md.
fn fleets_section() -> String {
    let doc = std::fs::read_to_string(root().join("docs/prometheus.md")).unwrap();
    let start = doc
        .find("\n## Fleets\n")
        .expect("prometheus.md has a Fleets section");
    let rest = &doc[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    rest[..end].to_string()
}

/// The bodies of the fenced blocks opened by "````lang`" in `text`.
fn blocks(text: &str, lang: &str) -> Vec<String> {
    let open = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(&open) {
        let start = from + i + open.len();
        let len = text[start..].find("```").expect("the block is closed");
        out.push(text[start..start + len].to_string());
        from = start + len + 3;
    }
    out
}

/// The YAML block of the Fleets section whose first line is `# name`.
fn yaml(section: &str, name: &str) -> String {
    blocks(section, "yaml")
        .into_iter()
        .find(|b| b.starts_with(&format!("# {name}")))
        .unwrap_or_else(|| panic!("no `# {name}` YAML block in the Fleets section"))
}

/// Every query of the Fleets section's PromQL blocks (one a line; `#` lines are comments).
fn docs_queries(section: &str) -> Vec<String> {
    let queries: Vec<String> = blocks(section, "promql")
        .iter()
        .flat_map(|b| b.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert!(queries.len() >= 4, "{queries:?}");
    queries
}

/// Every query of the Grafana dashboard, `$device` as "all devices" (`.*`, the variable's
/// `allValue`), with its panel's title.
fn dashboard_queries() -> Vec<(String, String)> {
    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("dashboards/robustream.grafana.json")).unwrap(),
    )
    .unwrap();
    let mut out = Vec::new();
    for p in dash["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap().replace("$device", ".*");
            assert!(!expr.contains('$'), "a variable left in {expr}");
            out.push((p["title"].as_str().unwrap().to_string(), expr));
        }
    }
    out
}

/// The metric names a query uses, and the label names it matches on, keeps or joins on.
fn used_names(expr: &str) -> (Vec<String>, Vec<String>) {
    let ident = |s: &str| {
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        s[..end].to_string()
    };
    let metrics: Vec<String> = expr
        .match_indices("robustream_")
        .map(|(i, _)| ident(&expr[i..]))
        .collect();
    let mut labels = Vec::new();
    for (i, _) in expr.match_indices('{') {
        let inner = &expr[i + 1..i + 1 + expr[i + 1..].find('}').unwrap()];
        labels.extend(inner.split(',').map(|m| ident(m.trim())));
    }
    for keyword in ["by (", "on (", "group_left ("] {
        for (i, _) in expr.match_indices(keyword) {
            let list = &expr[i + keyword.len()..];
            let list = &list[..list.find(')').unwrap()];
            labels.extend(list.split(',').map(|l| l.trim().to_string()));
        }
    }
    (metrics, labels)
}

/// A free loopback port (bound, then released for the server to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` over HTTP/1.0 (no chunked answer): the status code and the body.
fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// Percent-encoding of a query-string value.
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Prometheus server (or agent) on a config of the docs, in a temporary directory; killed when
/// dropped.
struct Prometheus {
    child: Child,
    addr: String,
    dir: tempfile::TempDir,
    name: &'static str,
}

impl Prometheus {
    /// Starts `prometheus` with `config` and `flags`, and waits until it says it is ready.
    fn start(name: &'static str, config: &str, flags: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(format!("{name}.yml"));
        std::fs::write(&file, config).unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let agent = flags.iter().any(|f| f.contains("agent"));
        let storage = if agent {
            "--storage.agent.path"
        } else {
            "--storage.tsdb.path"
        };
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", path(&file)))
            .arg(format!("--web.listen-address={addr}"))
            .arg(format!("{storage}={}", path(&dir.path().join("data"))))
            .args(flags)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut p = Self {
            child,
            addr,
            dir,
            name,
        };
        let start = Instant::now();
        loop {
            if let Some((200, _)) = http_get(&p.addr, "/-/ready") {
                return p;
            }
            if let Ok(Some(status)) = p.child.try_wait() {
                panic!("{name}: prometheus ended ({status}): {}", p.log());
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{name}: not ready in 60 s: {}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// The result vector of an instant query through `/api/v1/query`; fails on an error answer
    /// (a query Prometheus cannot parse or evaluate).
    fn query(&self, q: &str) -> Vec<serde_json::Value> {
        let (status, body) = http_get(
            &self.addr,
            &format!("/api/v1/query?query={}", url_encode(q)),
        )
        .unwrap_or_else(|| panic!("{}: no answer to {q}", self.name));
        let v: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{}: {q}: not JSON ({e}): {body}", self.name));
        assert!(
            status == 200 && v["status"] == "success",
            "{}: {q}: {status} {body}",
            self.name
        );
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `promtool check config` on `text`, written as `name` in `dir`.
fn promtool_check_config(dir: &Path, name: &str, text: &str) {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let out = Command::new("promtool")
        .args(["check", "config"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool check config {name}: {}{}\n{text}",
        text_of(&out.stdout),
        text_of(&out.stderr)
    );
}

fn text_of(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Whether `program` runs here (`program --version`).
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_central_prometheus_groups_the_docs_and_dashboard_queries_by_device() {
    let section = fleets_section();
    let mut queries: Vec<(String, String)> = docs_queries(&section)
        .into_iter()
        .map(|q| ("docs/prometheus.md#fleets".to_string(), q))
        .collect();
    queries.extend(dashboard_queries());
    // Served only once a source has lost frames by cause, and this run's synthetic camera loses
    // none: the exposition unit test (src/report/prometheus/tests.rs) renders that family and
    // holds the dashboard's query of it to what is served.
    let before = queries.len();
    queries.retain(|(_, q)| !q.contains("robustream_frames_lost_by_cause_total"));
    assert_eq!(
        before - queries.len(),
        1,
        "the frames panel's by-cause query"
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (mut child, addr, mut stderr) = spawn_with_prometheus(
        robustream()
            .args(["run", "--quiet", "--model"])
            .arg(model())
            .args([
                "--source",
                "synthetic:128x96@40/120",
                "--source-kind",
                "synthetic",
                "--label",
                "wallaby",
                "--scenarios",
                "corruption/contrast/1,corruption/fog/1",
                "--prometheus",
                "127.0.0.1:0",
                "--linger",
                "120s",
                "--run-label",
                "line=3",
                "--run-label",
                "plant=north \"A\"",
                "--out",
            ])
            .arg(&out),
    );
    // The whole run is scraped: its drops and window figures need frames.
    let body = scrape_until(&addr, Duration::from_secs(90), |b| {
        sample(b, "robustream_frames_read_total").is_some_and(|n| n >= 120.0)
    });
    let info = body
        .lines()
        .find(|l| l.starts_with("robustream_run_info{"))
        .unwrap_or_else(|| panic!("no run info: {body}"));
    for label in [
        format!("device=\"{host}\""),
        "camera=\"synthetic\"".to_string(),
        "line=\"3\"".to_string(),
        "plant=\"north \\\"A\\\"\"".to_string(),
    ] {
        assert!(info.contains(&label), "{label} missing: {info}");
    }
    assert!(!info.contains("shard="), "{info}");
    assert_eq!(promtool_problems(&body), None, "{body}");
    for drop in [
        "robustream_accuracy_drop_ratio{",
        "robustream_accuracy_ratio{",
    ] {
        assert!(body.contains(drop), "{drop} missing: {body}");
    }

    // Every metric and label the queries use is served (Prometheus adds `instance` and `job`).
    let served = body
        .split_once("\r\n\r\n")
        .map_or(body.as_str(), |(_, b)| b);
    for (title, q) in &queries {
        let (metrics, labels) = used_names(q);
        assert!(!metrics.is_empty(), "{title}: {q}");
        for m in &metrics {
            assert!(
                served
                    .lines()
                    .any(|l| l.starts_with(&format!("{m}{{")) || l.starts_with(&format!("{m} "))),
                "{title}: `{m}` is not served: {q}"
            );
        }
        for l in &labels {
            assert!(
                ["instance", "job", "le"].contains(&l.as_str())
                    || served.contains(&format!("{{{l}=\""))
                    || served.contains(&format!(",{l}=\"")),
                "{title}: no served series has the label `{l}`: {q}"
            );
        }
    }

    if !runs("prometheus") || !runs("promtool") {
        eprintln!(
            "fleet: the `prometheus` / `promtool` binaries are not here (Debian package \
             `prometheus`, installed by scripts/system.sh), so the queries were checked against \
             the scraped names only, not evaluated by a real Prometheus"
        );
    } else {
        for name in ["device.yml", "central.yml", "agent.yml", "receiver.yml"] {
            promtool_check_config(dir.path(), name, &yaml(&section, name));
        }
        // The docs' configs with the test's addresses and a 1 s interval.
        let fast = |text: String| text.replace("scrape_interval: 15s", "scrape_interval: 1s");
        let device = Prometheus::start(
            "device",
            &fast(yaml(&section, "device.yml")).replace("localhost:9898", &addr),
            &[],
        );
        let federated = format!("[\"{}\"]", device.addr);
        let central_yml = fast(yaml(&section, "central.yml"));
        assert!(central_yml.contains("[\"line-3-cam:9090\", \"line-4-cam:9090\"]"));
        let central = Prometheus::start(
            "central",
            &central_yml.replace("[\"line-3-cam:9090\", \"line-4-cam:9090\"]", &federated),
            &[],
        );
        let receiver = Prometheus::start(
            "receiver",
            &fast(yaml(&section, "receiver.yml")),
            &["--web.enable-remote-write-receiver"],
        );
        let agent_yml = fast(yaml(&section, "agent.yml"))
            .replace("localhost:9898", &addr)
            .replace("http://central:9090", &format!("http://{}", receiver.addr));
        let _agent = Prometheus::start("agent", &agent_yml, &["--enable-feature=agent"]);

        for server in [&central, &receiver] {
            // Rates need two samples, the federation and the agent's batches a few seconds.
            let start = Instant::now();
            let mut empty: Vec<&(String, String)> = queries.iter().collect();
            while !empty.is_empty() && start.elapsed() < Duration::from_secs(120) {
                std::thread::sleep(Duration::from_millis(500));
                empty.retain(|(_, q)| server.query(q).is_empty());
            }
            assert!(
                empty.is_empty(),
                "{}: no series from {empty:?}\ndevice log: {}\nserver log: {}",
                server.name,
                device.log(),
                server.log()
            );
            for (title, q) in &queries {
                for series in server.query(q) {
                    assert_eq!(
                        series["metric"]["device"].as_str(),
                        Some(host.as_str()),
                        "{}: {title}: {q}: not grouped by device: {series}",
                        server.name
                    );
                }
            }
            // The user's own labels reach the centre, and filter there.
            let line = server.query("robustream_run_info{line=\"3\", plant=\"north \\\"A\\\"\"}");
            assert_eq!(line.len(), 1, "{}: {line:?}", server.name);
            assert_eq!(line[0]["metric"]["instance"], "line-3-cam");
            assert_eq!(line[0]["metric"]["job"], "robustream");
        }
    }

    // SIGTERM ends the lingering; the run's summary names the device.
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{rest}");
    let labels = &summary(&out)["run"]["labels"];
    assert_eq!(
        labels,
        &serde_json::json!({"device": host, "camera": "synthetic", "line": "3", "plant": "north \"A\""}),
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains(&format!(
            "<th>labels</th><td>device={host}, camera=synthetic, line=3, plant=north "
        )),
        "{html}"
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains(&format!(
            "- labels: device={host}, camera=synthetic, line=3, plant=north \"A\"\n"
        )),
        "{md}"
    );
}

#[test]
fn bad_run_labels_stop_the_run_with_one_line_naming_the_label() {
    let dir = tempfile::tempdir().unwrap();
    for (label, said) in [
        (
            "line-3=x",
            "label name `line-3` is not a Prometheus label name",
        ),
        ("__x=1", "label name `__x` starts with `__`"),
        ("model=other", "label `model` is robustream's own"),
        ("job=x", "label `job` is set by Prometheus when it scrapes"),
    ] {
        let o = robustream()
            .args(["run", "--quiet", "--model"])
            .arg(model())
            .args([
                "--source",
                "synthetic:64x48@10/2",
                "--run-label",
                label,
                "--out",
            ])
            .arg(dir.path().join("run"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{label}");
        let err = text(&o.stderr);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{label}: {err}");
        assert!(
            lines[0].contains("--run-label") && lines[0].contains(said),
            "{label}: {err}"
        );
        assert!(!dir.path().join("run").exists(), "{label}");
    }
    // Not KEY=VALUE: the command line's parser says so.
    let o = robustream()
        .args(["run", "--run-label", "line"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("`line` is not KEY=VALUE; write e.g. --run-label line=3"),
        "{}",
        text(&o.stderr)
    );
    // In the config: the file and the key are named.
    let config = dir.path().join("line.toml");
    std::fs::write(&config, "[report]\nlabels = { \"plant.north\" = \"1\" }\n").unwrap();
    let o = robustream()
        .args(["run", "--quiet", "--config"])
        .arg(&config)
        .arg("--model")
        .arg(model())
        .args(["--source", "synthetic:64x48@10/2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("line.toml")
            && err.contains("`[report] labels`")
            && err.contains("`plant.north`"),
        "{err}"
    );
}

#[test]
fn a_sharded_run_names_its_shard_and_a_user_device_replaces_the_host_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (mut child, addr, mut stderr) = spawn_with_prometheus(
        robustream()
            .args(["run", "--quiet", "--model"])
            .arg(model())
            .arg("--source")
            .arg(photo("demo.csv"))
            .args([
                "--scenarios",
                "corruption/contrast/1",
                "--shard",
                "1/2",
                "--prometheus",
                "127.0.0.1:0",
                "--linger",
                "60s",
                "--run-label",
                "device=line-3-cam",
                "--out",
            ])
            .arg(&out),
    );
    // The run has ended when it says it lingers; the endpoint then serves its final figures.
    let mut said = String::new();
    loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() == 0 {
            panic!("the run ended without lingering: {said}");
        }
        said.push_str(&line);
        if line.starts_with("prometheus: serving the final figures") {
            break;
        }
    }
    let body = scrape(&addr);
    let info = body
        .lines()
        .find(|l| l.starts_with("robustream_run_info{"))
        .unwrap_or_else(|| panic!("no run info: {body}"));
    assert!(
        info.ends_with(",device=\"line-3-cam\",camera=\"\",shard=\"1/2\"} 1"),
        "{info}"
    );
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    stderr.read_to_string(&mut said).unwrap();
    assert!(child.wait().unwrap().success(), "{said}");
    let s = summary(&out);
    assert_eq!(
        s["run"]["labels"],
        serde_json::json!({"device": "line-3-cam", "camera": "", "shard": "1/2"})
    );
    assert_eq!(s["run"]["shard"]["index"], 1);
}
