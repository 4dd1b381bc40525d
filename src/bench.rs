//! `robustream bench`: the latency benchmark of a model on this machine, in trtexec's figures
//! (throughput; latency min / mean / median / p90 / p95 / p99 / max; a per-stage breakdown; the
//! one-off warm-up per input shape) and MLPerf's two framings:
//!
//! - **single-stream**: one sample at a time, the next issued when the previous is done; the figure
//!   of merit is the 90th-percentile latency of a sample (MLPerf inference rules, single-stream).
//!   Each timed iteration is the host work of a live evaluation followed by inference: the model
//!   view of a real frame (Pillow-exact resize + crop, [`crate::view::ModelView`]) and its
//!   normalisation (*host preprocessing*), then the engine (*inference*);
//! - **offline**: batches of `--batch` samples back to back; the figure of merit is samples per
//!   second. As MLPerf's offline scenario and trtexec do, the inputs are prepared before the timed
//!   loop, so it measures the engine alone, fed from a batch buffer of its own memory (pinned on
//!   GPU providers, [`Engine::batch_buffer`]).
//!
//! Before timing: the engine runs its batch size once (the provider's one-off per-shape tuning,
//! reported as `engine_warmup_ms`), host preprocessing is measured on all cores (samples per
//! second, `preprocess`), then `--warmup` seconds of untimed iterations (at least one). Inference
//! includes, for GPU providers, ONNX Runtime's copies to and from the device: its C API does not
//! expose H2D / compute / D2H separately, so they are reported as not available rather than
//! guessed. Every sample is kept, so quantiles are exact order statistics (nearest rank).
//!
//! A result is flagged (`trust.warnings`) when it is too short to be a figure one can quote
//! (fewer samples or seconds than MLPerf's minimums: 1,024 queries for single-stream and 24,576
//! samples for offline image classification, 600 s for both — MLCommons `loadgen/mlperf.conf` and
//! the inference rules) or too noisy (coefficient of variation of the inference time above 10 %,
//! or fewer than 100 iterations for the tail percentiles). `--json` also records the machine, the
//! versions and the time of the run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use image::RgbImage;
use rayon::prelude::*;
use serde::Serialize;

use crate::engine::onnx::OnnxEngine;
use crate::engine::{Engine, EngineConfig};
use crate::model::ModelDesc;
use crate::preprocess::Normalizer;
use crate::view::ModelView;
use crate::watch::{CpuMeter, CpuUse};

/// How samples are issued (MLPerf's scenarios).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One sample per inference; figure of merit p90 latency.
    SingleStream,
    /// Batches back to back; figure of merit samples per second.
    Offline,
}

/// When a bench stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Length {
    /// After this many seconds of timed iterations (the iteration in flight finishes).
    Duration(Duration),
    /// After this many timed iterations.
    Iterations(u64),
}

/// What to benchmark.
#[derive(Debug, Clone)]
pub struct BenchRequest {
    /// The model description.
    pub model: ModelDesc,
    /// Engine settings (provider, threads, library, ...); its batch sizes are set to the bench's.
    pub engine: EngineConfig,
    /// Samples per inference in offline mode (single-stream always uses 1).
    pub batch: usize,
    /// The issue pattern.
    pub mode: Mode,
    /// When to stop.
    pub length: Length,
    /// Untimed warm-up, seconds (at least one iteration runs).
    pub warmup: Duration,
    /// The frame preprocessed for every sample (a real photo is the honest choice: its size sets the
    /// cost of the host stage).
    pub frame: RgbImage,
    /// Where the frame came from, for the report.
    pub frame_name: String,
}

/// Exact latency statistics of one series, milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Number of values.
    pub n: u64,
    /// Smallest, ms.
    pub min: f64,
    /// Arithmetic mean, ms.
    pub mean: f64,
    /// Median (nearest rank), ms.
    pub median: f64,
    /// 90th percentile (nearest rank), ms.
    pub p90: f64,
    /// 95th percentile, ms.
    pub p95: f64,
    /// 99th percentile, ms.
    pub p99: f64,
    /// Largest, ms.
    pub max: f64,
    /// Standard deviation over the mean (0 for fewer than two values).
    pub cv: f64,
}

impl Stats {
    /// The statistics of `values` (ms); all zero for an empty series. Quantile q is the value of rank
    /// ⌈q·n⌉ (1-based) in sorted order — the nearest-rank definition MLPerf uses for its percentiles.
    pub fn of(values: &[f64]) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let rank = |q: f64| v[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        let mean = v.iter().sum::<f64>() / n as f64;
        let cv = match n {
            0 | 1 => 0.0,
            _ if mean <= 0.0 => 0.0,
            _ => {
                let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
                var.sqrt() / mean
            }
        };
        Self {
            n: n as u64,
            min: v[0],
            mean,
            median: rank(0.5),
            p90: rank(0.9),
            p95: rank(0.95),
            p99: rank(0.99),
            max: v[n - 1],
            cv,
        }
    }
}

/// Host preprocessing measured on all cores before the timed loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Preprocessing {
    /// Worker threads (rayon's pool: one per core by default).
    pub threads: usize,
    /// Samples prepared.
    pub samples: u64,
    /// Samples per second over all threads.
    pub samples_per_s: f64,
    /// Model view + normalisation of one sample, ms.
    pub per_sample_ms: Stats,
}

/// Whether a result is long and steady enough to quote.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Trust {
    /// MLPerf's minimum samples for this scenario (1,024 queries single-stream; 24,576 samples
    /// offline for image classification).
    pub mlperf_min_samples: u64,
    /// MLPerf's minimum duration, seconds (600 in both).
    pub mlperf_min_duration_s: f64,
    /// Both minimums met.
    pub meets_mlperf_minimums: bool,
    /// What makes the figures less than trustworthy (empty when nothing does).
    pub warnings: Vec<String>,
}

/// The machine a bench ran on (read from `/proc` and `/etc/os-release` where present).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Machine {
    /// Host name.
    pub host: Option<String>,
    /// CPU model.
    pub cpu: Option<String>,
    /// Cores available to the process.
    pub cores: usize,
    /// Memory, GiB.
    pub memory_gib: Option<f64>,
    /// Operating system.
    pub os: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
}

/// The result of a bench (also its `--json` form).
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// The model description file.
    pub model: String,
    /// The engine line (runtime, provider, threads, batch sizes).
    pub engine: String,
    /// The issue pattern.
    pub mode: Mode,
    /// Samples per inference.
    pub batch: usize,
    /// The frame every sample is made from and its size.
    pub frame: String,
    /// Timed iterations (inferences).
    pub iterations: u64,
    /// Samples processed in timed iterations (iterations × batch).
    pub samples: u64,
    /// Wall time of the timed iterations, seconds.
    pub wall_s: f64,
    /// Inferences per second.
    pub throughput_qps: f64,
    /// Samples per second (MLPerf offline's figure of merit).
    pub samples_per_s: f64,
    /// Per iteration, ms: single-stream host preprocessing + inference (the latency of one sample,
    /// whose p90 is MLPerf single-stream's figure of merit); offline the inference of a batch.
    pub latency_ms: Stats,
    /// Per iteration: model view + normalisation on the host, ms (single-stream only: offline
    /// prepares its inputs before timing, see `preprocess`).
    pub host_preprocess_ms: Option<Stats>,
    /// Per iteration: ONNX Runtime's run (for GPU providers including its host↔device copies), ms.
    pub inference_ms: Stats,
    /// Host→device, compute, device→host split: not exposed by ONNX Runtime (always `null`).
    pub h2d_compute_d2h_ms: Option<[Stats; 3]>,
    /// Warm-up iterations run before timing.
    pub warmup_iterations: u64,
    /// The first run at each batch size (the provider's one-off tuning), ms.
    pub engine_warmup_ms: BTreeMap<String, f64>,
    /// Host preprocessing throughput on all cores, measured before timing.
    pub preprocess: Preprocessing,
    /// Process CPU use over the timed iterations.
    pub cpu: Option<CpuUse>,
    /// Whether the result is long and steady enough to quote.
    pub trust: Trust,
    /// Where it ran.
    pub machine: Machine,
    /// robustream's version.
    pub robustream: String,
    /// ONNX Runtime's version and build line.
    pub onnxruntime: String,
    /// When the timed iterations started, seconds since the Unix epoch, and as UTC.
    pub started_unix: u64,
    /// The same, `YYYY-MM-DDTHH:MM:SSZ`.
    pub started_utc: String,
}

/// MLPerf's minimum duration of a performance run (`*.SingleStream.min_duration` and
/// `*.Offline.min_duration` = 600000 ms in MLCommons `loadgen/mlperf.conf`).
pub const MLPERF_MIN_DURATION_S: f64 = 600.0;
/// MLPerf single-stream's minimum query count (the inference rules; LoadGen's default).
pub const MLPERF_SINGLE_STREAM_MIN_QUERIES: u64 = 1024;
/// MLPerf offline's minimum sample count for image classification (`resnet50.Offline.min_query_count`
/// in `loadgen/mlperf.conf`).
pub const MLPERF_OFFLINE_MIN_SAMPLES: u64 = 24_576;
/// Above this coefficient of variation of the inference time a result is flagged as noisy.
pub const NOISY_CV: f64 = 0.10;
/// Below this many timed iterations the tail percentiles (p99) rest on too few values.
pub const FEW_ITERATIONS: u64 = 100;

/// Runs the bench. Errors: the engine cannot load, or the model's fixed batch size differs from the
/// requested one, or an inference fails.
pub fn run(req: &BenchRequest) -> anyhow::Result<BenchReport> {
    let batch = match req.mode {
        Mode::SingleStream => 1,
        Mode::Offline => req.batch.max(1),
    };
    req.engine.validate()?;
    // The engine runs exactly the bench's batch size.
    let config = EngineConfig {
        batch_sizes: Some(vec![batch]),
        ..req.engine.clone()
    };
    let mut engine = OnnxEngine::new(&req.model, &config)?;
    if let Some(fixed) = engine.fixed_batch()
        && fixed != batch
    {
        anyhow::bail!(
            "the model's input has a fixed batch size of {fixed} but the bench asks for {batch}; \
             use --batch {fixed}{}",
            if req.mode == Mode::SingleStream {
                " --mode offline"
            } else {
                ""
            }
        );
    }
    let engine_warmup_ms = engine
        .warm_up()?
        .into_iter()
        .map(|(size, ms)| (size.to_string(), round3(ms)))
        .collect();
    let engine_desc = engine.describe();
    let mut view = ModelView::new(&req.model);
    let norm = Normalizer::new(&req.model);
    let per = req.model.input_len();
    let preprocess = preprocess_throughput(req);
    let mut buffer = engine.batch_buffer(batch, per);
    // Offline: the inputs are prepared once, before anything is timed.
    for slot in buffer.as_mut_slice().chunks_exact_mut(per) {
        norm.write(&view.image(&req.frame), slot);
    }

    let mode = req.mode;
    let mut iteration = |engine: &mut OnnxEngine| -> anyhow::Result<(Option<f64>, f64, Vec<f32>)> {
        let t0 = Instant::now();
        let host = (mode == Mode::SingleStream).then(|| {
            norm.write(&view.image(&req.frame), buffer.as_mut_slice());
            ms(t0.elapsed())
        });
        let t1 = Instant::now();
        let scores = engine.infer_buffer(&mut buffer, batch)?;
        let inference = ms(t1.elapsed());
        Ok((host, inference, std::hint::black_box(scores)))
    };

    let warm_start = Instant::now();
    let mut warmup_iterations = 0u64;
    while warmup_iterations == 0 || warm_start.elapsed() < req.warmup {
        let (_, _, scores) = iteration(&mut engine)?;
        if warmup_iterations == 0 {
            // The same frame every iteration: a model that scores it as NaN/inf (or whose
            // "probabilities" are not) does so from the first.
            check_scores(&scores, &req.model, &req.frame_name)?;
        }
        warmup_iterations += 1;
    }

    let mut host = Vec::new();
    let mut infer = Vec::new();
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let cpu = CpuMeter::start();
    let start = Instant::now();
    loop {
        let done = match req.length {
            Length::Duration(d) => !infer.is_empty() && start.elapsed() >= d,
            Length::Iterations(n) => infer.len() as u64 >= n.max(1),
        };
        if done {
            break;
        }
        let (h, i, _) = iteration(&mut engine)?;
        host.extend(h);
        infer.push(i);
    }
    let wall_s = start.elapsed().as_secs_f64();
    let cpu = cpu.read();
    let total: Vec<f64> = match mode {
        Mode::SingleStream => host.iter().zip(&infer).map(|(h, i)| h + i).collect(),
        Mode::Offline => infer.clone(),
    };
    let iterations = total.len() as u64;
    let samples = iterations * batch as u64;
    let inference_ms = Stats::of(&infer);
    let trust = judge(mode, samples, wall_s, &inference_ms);
    Ok(BenchReport {
        model: req.model.path.display().to_string(),
        engine: engine_desc,
        mode,
        batch,
        frame: format!(
            "{} ({}x{})",
            req.frame_name,
            req.frame.width(),
            req.frame.height()
        ),
        iterations,
        samples,
        wall_s,
        throughput_qps: iterations as f64 / wall_s,
        samples_per_s: samples as f64 / wall_s,
        latency_ms: Stats::of(&total),
        host_preprocess_ms: (mode == Mode::SingleStream).then(|| Stats::of(&host)),
        inference_ms,
        h2d_compute_d2h_ms: None,
        warmup_iterations,
        engine_warmup_ms,
        preprocess,
        cpu,
        trust,
        machine: Machine::this(),
        robustream: env!("CARGO_PKG_VERSION").to_string(),
        onnxruntime: engine.runtime().to_string(),
        started_unix,
        started_utc: crate::duration::utc(started_unix),
    })
}

/// Model view + normalisation of the bench frame on every thread of rayon's pool, for at least
/// 0.3 s (and 8 samples per thread): samples per second and the per-sample time.
fn preprocess_throughput(req: &BenchRequest) -> Preprocessing {
    let threads = rayon::current_num_threads();
    let per = req.model.input_len();
    let round = (threads * 8).max(8);
    let mut times = Vec::new();
    let start = Instant::now();
    while times.is_empty() || start.elapsed() < Duration::from_millis(300) {
        let t: Vec<f64> = (0..round)
            .into_par_iter()
            .map_init(
                || {
                    (
                        ModelView::new(&req.model),
                        Normalizer::new(&req.model),
                        vec![0f32; per],
                    )
                },
                |(view, norm, out), _| {
                    let t = Instant::now();
                    norm.write(&view.image(&req.frame), out);
                    std::hint::black_box(&out);
                    ms(t.elapsed())
                },
            )
            .collect();
        times.extend(t);
    }
    let wall = start.elapsed().as_secs_f64();
    Preprocessing {
        threads,
        samples: times.len() as u64,
        samples_per_s: times.len() as f64 / wall,
        per_sample_ms: Stats::of(&times),
    }
}

/// Refuses a bench whose model cannot score the bench frame: its output rows hold NaN/inf, or are
/// "probabilities" that are not ([`crate::engine::check_row`]); timing such a model means nothing.
fn check_scores(scores: &[f32], model: &ModelDesc, frame: &str) -> anyhow::Result<()> {
    let classes = model.output.classes.max(1);
    for row in scores.chunks_exact(classes) {
        if let Err(e) = crate::engine::check_row(row, model.output.kind) {
            anyhow::bail!("bench frame {frame}: {}", e.in_model(&model.path));
        }
    }
    Ok(())
}

/// The trust flags of a result.
fn judge(mode: Mode, samples: u64, wall_s: f64, inference: &Stats) -> Trust {
    let min_samples = match mode {
        Mode::SingleStream => MLPERF_SINGLE_STREAM_MIN_QUERIES,
        Mode::Offline => MLPERF_OFFLINE_MIN_SAMPLES,
    };
    let mut warnings = Vec::new();
    let meets = samples >= min_samples && wall_s >= MLPERF_MIN_DURATION_S;
    if !meets {
        warnings.push(format!(
            "shorter than MLPerf's minimum run ({samples} samples in {wall_s:.1} s; MLPerf asks \
             for {min_samples} and {MLPERF_MIN_DURATION_S:.0} s): fine for comparing runs here, \
             not a figure to publish (--duration 600)"
        ));
    }
    if inference.n < FEW_ITERATIONS {
        warnings.push(format!(
            "only {} timed iterations: p95/p99 rest on a handful of values (give at least \
             {FEW_ITERATIONS})",
            inference.n
        ));
    }
    if inference.cv > NOISY_CV {
        warnings.push(format!(
            "noisy: the inference time varies by {:.0} % (coefficient of variation; above {:.0} % \
             the machine is busy or its clock is changing): rerun on a quiet machine or longer",
            inference.cv * 100.0,
            NOISY_CV * 100.0
        ));
    }
    Trust {
        mlperf_min_samples: min_samples,
        mlperf_min_duration_s: MLPERF_MIN_DURATION_S,
        meets_mlperf_minimums: meets,
        warnings,
    }
}

impl Machine {
    /// This machine, as far as `/proc` and `/etc/os-release` say.
    pub fn this() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let field = |text: &Option<String>, key: &str| {
            text.as_ref()?.lines().find_map(|l| {
                let (k, v) = l.split_once([':', '='])?;
                (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
            })
        };
        let cpuinfo = read("/proc/cpuinfo");
        let meminfo = read("/proc/meminfo");
        Self {
            host: read("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()),
            cpu: field(&cpuinfo, "model name"),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_gib: field(&meminfo, "MemTotal")
                .and_then(|v| v.trim_end_matches("kB").trim().parse::<f64>().ok())
                .map(|kib| round3(kib / (1024.0 * 1024.0))),
            os: field(&read("/etc/os-release"), "PRETTY_NAME"),
            kernel: read("/proc/sys/kernel/osrelease").map(|k| k.trim().to_string()),
        }
    }
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl BenchReport {
    /// The human-readable report (trtexec-like lines, then MLPerf's figure of merit).
    pub fn render(&self) -> String {
        let row = |name: &str, s: &Stats| {
            format!(
                "  {name:<18} min {:.3}  mean {:.3}  median {:.3}  p90 {:.3}  p95 {:.3}  p99 {:.3}  \
                 max {:.3} ms\n",
                s.min, s.mean, s.median, s.p90, s.p95, s.p99, s.max
            )
        };
        let mut out = String::new();
        out.push_str(&format!(
            "model: {}\nengine: {}\nframe: {}\nmode: {}, batch {}, {} timed iterations in {:.2} s \
             (+{} warm-up)\n",
            self.model,
            self.engine,
            self.frame,
            match self.mode {
                Mode::SingleStream => "single-stream",
                Mode::Offline => "offline",
            },
            self.batch,
            self.iterations,
            self.wall_s,
            self.warmup_iterations
        ));
        let warm: Vec<String> = self
            .engine_warmup_ms
            .iter()
            .map(|(size, ms)| format!("batch {size}: {ms:.1} ms"))
            .collect();
        out.push_str(&format!(
            "engine warm-up (first run per batch size): {}\n",
            warm.join(", ")
        ));
        out.push_str(&format!(
            "host preprocessing on {} threads (before timing): {:.1} samples/s, {:.3} ms per \
             sample (median)\n",
            self.preprocess.threads,
            self.preprocess.samples_per_s,
            self.preprocess.per_sample_ms.median
        ));
        out.push_str(&format!(
            "throughput: {:.1} inferences/s, {:.1} samples/s\nlatency per inference:\n",
            self.throughput_qps, self.samples_per_s
        ));
        out.push_str(&row("total", &self.latency_ms));
        if let Some(host) = &self.host_preprocess_ms {
            out.push_str(&row("host preprocess", host));
        }
        out.push_str(&row("inference", &self.inference_ms));
        out.push_str(
            "  H2D / compute / D2H: not exposed by ONNX Runtime (included in inference)\n",
        );
        if let Some(cpu) = &self.cpu {
            out.push_str(&format!(
                "CPU: {:.0} % of {} cores busy while timed\n",
                cpu.utilisation * 100.0,
                cpu.cores
            ));
        }
        out.push_str(&match self.mode {
            Mode::SingleStream => format!(
                "MLPerf single-stream: 90th-percentile latency {:.3} ms\n",
                self.latency_ms.p90
            ),
            Mode::Offline => format!("MLPerf offline: {:.1} samples/s\n", self.samples_per_s),
        });
        for w in &self.trust.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }
}

/// The frame a bench preprocesses: the given image, else the demo's first photo when the set-up
/// script installed it, else a 640×480 procedural scene. Returns the image and its name.
pub fn bench_frame(image: Option<&PathBuf>) -> anyhow::Result<(RgbImage, String)> {
    if let Some(p) = image {
        let img = image::open(p)
            .map_err(|e| {
                anyhow::anyhow!(
                    "{}: cannot read image ({e}); give a readable image to --image",
                    p.display()
                )
            })?
            .to_rgb8();
        return Ok((img, p.display().to_string()));
    }
    let demo = PathBuf::from("assets/photos/coffee.png");
    if let Ok(img) = image::open(&demo) {
        return Ok((img.to_rgb8(), demo.display().to_string()));
    }
    let scene = crate::scene::random_scene(640, 480, 0);
    Ok((scene.image, "procedural scene".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Stats::of(&v);
        assert_eq!(
            (s.n, s.min, s.median, s.p90, s.p95, s.p99, s.max),
            (100, 1.0, 50.0, 90.0, 95.0, 99.0, 100.0)
        );
        assert!((s.mean - 50.5).abs() < 1e-12);
        // Order does not matter; small series take the rank ⌈q·n⌉.
        let s = Stats::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.p90, s.max, s.min), (2.0, 3.0, 3.0, 1.0));
        let one = Stats::of(&[7.5]);
        assert_eq!((one.median, one.p99, one.mean), (7.5, 7.5, 7.5));
        assert_eq!(Stats::of(&[]), Stats::default());
        // Coefficient of variation: sample standard deviation over the mean.
        let s = Stats::of(&[1.0, 3.0]);
        assert!((s.cv - 2f64.sqrt() / 2.0).abs() < 1e-12);
        assert_eq!(Stats::of(&[5.0, 5.0, 5.0]).cv, 0.0);
    }

    #[test]
    fn short_or_noisy_results_are_flagged() {
        let steady = Stats::of(&vec![2.0; 200]);
        let t = judge(Mode::Offline, 30_000, 700.0, &steady);
        assert!(t.meets_mlperf_minimums && t.warnings.is_empty(), "{t:?}");
        let t = judge(Mode::Offline, 30_000, 10.0, &steady);
        assert!(!t.meets_mlperf_minimums && t.warnings.len() == 1, "{t:?}");
        assert_eq!(t.mlperf_min_samples, MLPERF_OFFLINE_MIN_SAMPLES);
        let noisy = Stats::of(&(0..200).map(|i| 1.0 + (i % 2) as f64).collect::<Vec<_>>());
        let t = judge(Mode::SingleStream, 2000, 700.0, &noisy);
        assert!(t.warnings.iter().any(|w| w.starts_with("noisy")), "{t:?}");
        let few = Stats::of(&[2.0; 10]);
        let t = judge(Mode::SingleStream, 2000, 700.0, &few);
        assert!(
            t.warnings.iter().any(|w| w.contains("10 timed iterations")),
            "{t:?}"
        );
    }
}
