//! Shared helpers of the integration tests: where the real assets are, and running the binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Output};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Taken first, and held to its end, by every test whose assertions hold a run to the wall clock:
/// frames a real-time source must deliver in a given time, latency and prompt-exit bounds, scrapes
/// answered within a second, a real-time stream that must be read nearly whole. All the
/// integration tests share one process and run on parallel threads; without this, two such tests
/// could run at once and each take cores from the other while it is being timed. With it they run
/// one after another, each beside at most the untimed tests. The lock guards no data, so a test
/// that failed while holding it does not fail the next one.
pub fn timed() -> MutexGuard<'static, ()> {
    static TIMED: Mutex<()> = Mutex::new(());
    TIMED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The asset cache link made by `scripts/assets.sh`; fails loudly (never skips) when absent.
pub fn assets() -> PathBuf {
    let a = root().join("assets");
    assert!(
        a.join("models/efficientnet_lite0.onnx").is_file()
            && a.join("lib/libonnxruntime.so").exists(),
        "the real model and ONNX Runtime are missing: run `bash scripts/assets.sh` (or the README's test command)"
    );
    a
}

/// The demo model description.
pub fn model() -> PathBuf {
    assets().join("models/efficientnet_lite0.toml")
}

/// A copy of the demo model description in `dir` (as `file`), with its model and label paths made
/// absolute and `edit` applied to the text: for tests that need a variant of the description.
pub fn model_variant(dir: &Path, file: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let m = assets().join("models");
    let desc = std::fs::read_to_string(model())
        .unwrap()
        .replace(
            "\"efficientnet_lite0.onnx\"",
            &format!("{:?}", m.join("efficientnet_lite0.onnx")),
        )
        .replace(
            "\"imagenet_classes.txt\"",
            &format!("{:?}", m.join("imagenet_classes.txt")),
        );
    let p = dir.join(file);
    std::fs::write(&p, edit(desc)).unwrap();
    p
}

/// A demo photo.
pub fn photo(name: &str) -> PathBuf {
    assets().join("photos").join(name)
}

/// The ONNX Runtime library.
pub fn ort_lib() -> PathBuf {
    assets().join("lib/libonnxruntime.so")
}

/// The variables a run takes its shard from (docs/deploy.md#shards): removed from every test's
/// command, so tests run inside a Kubernetes Job or a Slurm array evaluate what they say.
pub const SHARD_VARIABLES: [&str; 7] = [
    "ROBUSTREAM_SHARD",
    "ROBUSTREAM_SHARDS",
    "JOB_COMPLETION_INDEX",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_STEP",
];

/// `robustream` with the library path in the environment and no progress bar.
pub fn robustream() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_robustream"));
    c.env("ORT_DYLIB_PATH", ort_lib());
    for v in SHARD_VARIABLES {
        c.env_remove(v);
    }
    c
}

/// Runs and returns the output, printing it on failure to help debugging.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("robustream runs");
    if !out.status.success() {
        eprintln!(
            "stdout:\n{}\nstderr:\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }
    out
}

/// Lossy UTF-8.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A path as a command-line argument (the tests' temporary and asset paths are UTF-8).
pub fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Reads records.jsonl of a run directory as JSON values.
pub fn records(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("records.jsonl"))
        .expect("records.jsonl exists")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each record line is JSON"))
        .collect()
}

/// Reads summary.json of a run directory.
pub fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(dir.join("summary.json")).expect("summary.json exists"),
    )
    .expect("summary.json is JSON")
}

/// Writes a manifest CSV into `dir` with the given rows (already formatted).
pub fn manifest(dir: &Path, rows: &[&str]) -> PathBuf {
    let p = dir.join("manifest.csv");
    std::fs::write(&p, format!("path,label\n{}\n", rows.join("\n"))).unwrap();
    p
}

/// The address a run started with `--prometheus 127.0.0.1:0` serves on, read from the first line of
/// its stderr (which must be piped); returns the rest of stderr for reading later.
pub fn prometheus_addr(child: &mut Child) -> (String, BufReader<ChildStderr>) {
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr is piped"));
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("prometheus: serving http://")
        .and_then(|l| l.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no address line: {line:?}"))
        .to_string();
    (addr, stderr)
}

/// Starts a `run ... --prometheus 127.0.0.1:0` command with stdout discarded and stderr piped;
/// returns the child, the address its endpoint serves on and the rest of its stderr.
pub fn spawn_with_prometheus(cmd: &mut Command) -> (Child, String, BufReader<ChildStderr>) {
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (addr, stderr) = prometheus_addr(&mut child);
    (child, addr, stderr)
}

/// One `GET /metrics` from the endpoint at `addr`: the whole HTTP response.
pub fn scrape(addr: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// Scrapes the endpoint at `addr` every 100 ms until `done(body)` or `timeout` (then the last body).
pub fn scrape_until(addr: &str, timeout: Duration, done: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let body = scrape(addr);
        if done(&body) || start.elapsed() >= timeout {
            return body;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What `promtool check metrics` says about a scrape's body (`None` when it accepts it): the
/// exposition checked by Prometheus's own linter (Debian package `prometheus`, from
/// scripts/system.sh).
pub fn promtool_problems(response: &str) -> Option<String> {
    let body = response.split_once("\r\n\r\n").map_or(response, |(_, b)| b);
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run promtool ({e}); scripts/system.sh installs it"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (!out.status.success() || !said.trim().is_empty()).then_some(said)
}

/// The value of an unlabelled Prometheus sample `name` in a scrape.
pub fn sample(body: &str, name: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// `robustream run --quiet --config CONFIG --model <the real model>`; add the source, `--out` and
/// flags.
pub fn quiet_run(config: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = robustream();
    cmd.args(["run", "--quiet", "--config"])
        .arg(config)
        .arg("--model")
        .arg(model());
    cmd
}

/// `robustream run --quiet --scenarios corruption/contrast/1 <extra> --model <the real model>
/// --source SOURCE --out OUT`, run as [`run`] does: a one-scenario run for tests about what a
/// source gives.
pub fn run_on(source: &Path, out: &Path, extra: &[&str]) -> Output {
    run(robustream()
        .args(["run", "--quiet", "--scenarios", "corruption/contrast/1"])
        .args(extra)
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out))
}

/// records.jsonl without the timings (`ms`): what must repeat exactly from run to run.
pub fn records_without_timings(dir: &Path) -> Vec<serde_json::Value> {
    records(dir)
        .into_iter()
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("ms");
            r
        })
        .collect()
}

/// Runs the `ffmpeg` CLI quietly with `args` (test clips, local stream servers); fails naming the
/// set-up script when it is missing, and with ffmpeg's own message when it fails.
pub fn ffmpeg(args: &[&str]) {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-nostdin", "-y"])
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("the `ffmpeg` CLI is needed by this test ({e}): run `bash scripts/setup.sh`")
        });
    assert!(
        out.status.success(),
        "ffmpeg {args:?}: {}",
        text(&out.stderr)
    );
}

/// Whether the system tool `name` runs (`name --help`). A missing one fails the test under
/// `CI=true` (CI must run every test: scripts/system.sh installs the tool, `package` names it);
/// elsewhere the caller skips, with a line saying so.
#[cfg(any(feature = "gstreamer", feature = "genicam"))]
pub fn tool(name: &str, package: &str) -> bool {
    let found = Command::new(name)
        .arg("--help")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok();
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "`{name}` is needed by this test (Debian: {package}): run `bash scripts/setup.sh`"
        );
        eprintln!("skipped: `{name}` is not installed (Debian: {package}; bash scripts/setup.sh)");
    }
    found
}

/// A free UDP port on loopback (bound, read, released): for the stream servers the video tests
/// start (SRT and raw UDP run over UDP).
#[cfg(feature = "video")]
pub fn free_udp_port() -> u16 {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap().port()
}

/// Eight procedural scenes with exact masks (two ImageNet classes) and the quokka photo with its
/// hand-drawn mask, labelled as what the model calls it (wombat, so that some foreground may
/// survive backgrounds), written into `dir` with the manifest `scenes.csv`, which is returned: a
/// source for the background scenarios and the post passes.
pub fn masked_scenes(dir: &Path) -> PathBuf {
    let mut rows = vec!["path,label,mask".to_string()];
    for i in 0..8u64 {
        let s = robustream::scene::random_scene(240, 180, 300 + i);
        s.image.save(dir.join(format!("s{i}.png"))).unwrap();
        s.mask.save(dir.join(format!("s{i}_mask.png"))).unwrap();
        rows.push(format!("s{i}.png,{},s{i}_mask.png", i % 2));
    }
    std::fs::copy(photo("quokka.jpg"), dir.join("quokka.jpg")).unwrap();
    std::fs::copy(photo("quokka_mask.png"), dir.join("quokka_mask.png")).unwrap();
    rows.push("quokka.jpg,wombat,quokka_mask.png".into());
    let m = dir.join("scenes.csv");
    std::fs::write(&m, rows.join("\n") + "\n").unwrap();
    m
}
