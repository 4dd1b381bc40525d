//! `robustream bench`: the latency benchmark of a model on this machine, in trtexec's figures
//! (throughput; latency min / mean / median / p90 / p95 / p99 / max; a per-stage breakdown) and
//! MLPerf's two framings (issue 5):
//!
//! - **single-stream**: one sample at a time, the next issued when the previous is done; the figure
//!   of merit is the 90th-percentile latency of a sample (MLPerf inference rules, single-stream);
//! - **offline**: batches of `--batch` samples back to back; the figure of merit is samples per
//!   second.
//!
//! Each timed iteration is the host work of a live evaluation followed by inference: the model view
//! of a real frame (Pillow-exact resize + crop, [`crate::preprocess::ModelView`]) and normalisation
//! into the batch tensor (*host preprocessing*), then [`Engine::infer`] (*inference*: ONNX Runtime's
//! run, including its copies to and from the device for GPU providers — ONNX Runtime's C API does not
//! expose H2D / compute / D2H separately, so they are reported as not available rather than guessed).
//! Warm-up iterations (`--warmup` seconds, at least one) are run first and not timed. Every sample is
//! kept (a bench lasts seconds to minutes), so quantiles are exact order statistics (nearest rank).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use image::RgbImage;
use serde::Serialize;

use crate::engine::onnx::OnnxEngine;
use crate::engine::{Engine, EngineConfig, ModelDesc};
use crate::preprocess::{ModelView, Normalizer};

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
    /// Engine settings (provider, threads, library, ...).
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
        Self {
            n: n as u64,
            min: v[0],
            mean: v.iter().sum::<f64>() / n as f64,
            median: rank(0.5),
            p90: rank(0.9),
            p95: rank(0.95),
            p99: rank(0.99),
            max: v[n - 1],
        }
    }
}

/// The result of a bench (also its `--json` form).
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// The model description file.
    pub model: String,
    /// The engine line (runtime, provider, threads).
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
    /// Per iteration: host preprocessing + inference, ms. In single-stream mode this is the latency of
    /// one sample (its p90 is MLPerf single-stream's figure of merit).
    pub latency_ms: Stats,
    /// Per iteration: model view + normalisation of the batch on the host, ms.
    pub host_preprocess_ms: Stats,
    /// Per iteration: ONNX Runtime's run (for GPU providers including its host↔device copies), ms.
    pub inference_ms: Stats,
    /// Host→device, compute, device→host split: not exposed by ONNX Runtime (always `null`).
    pub h2d_compute_d2h_ms: Option<[Stats; 3]>,
    /// Warm-up iterations run before timing.
    pub warmup_iterations: u64,
}

/// Runs the bench. Errors: the engine cannot load, or the model's fixed batch size differs from the
/// requested one, or an inference fails.
pub fn run(req: &BenchRequest) -> anyhow::Result<BenchReport> {
    let batch = match req.mode {
        Mode::SingleStream => 1,
        Mode::Offline => req.batch.max(1),
    };
    let mut engine = OnnxEngine::new(&req.model, &req.engine)?;
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
    let engine_desc = engine.describe();
    let mut view = ModelView::new(&req.model);
    let norm = Normalizer::new(&req.model);
    let per = req.model.input_len();
    let mut tensor = vec![0f32; per * batch];

    let mut iteration = |engine: &mut OnnxEngine| -> anyhow::Result<(f64, f64)> {
        let t0 = Instant::now();
        for slot in tensor.chunks_exact_mut(per) {
            let v = view.image(&req.frame);
            norm.write(&v, slot);
        }
        let t1 = Instant::now();
        let scores = engine.infer(&tensor, batch)?;
        let t2 = Instant::now();
        std::hint::black_box(scores);
        Ok((ms(t1 - t0), ms(t2 - t1)))
    };

    let warm_start = Instant::now();
    let mut warmup_iterations = 0u64;
    while warmup_iterations == 0 || warm_start.elapsed() < req.warmup {
        iteration(&mut engine)?;
        warmup_iterations += 1;
    }

    let mut host = Vec::new();
    let mut infer = Vec::new();
    let start = Instant::now();
    loop {
        let done = match req.length {
            Length::Duration(d) => !host.is_empty() && start.elapsed() >= d,
            Length::Iterations(n) => host.len() as u64 >= n.max(1),
        };
        if done {
            break;
        }
        let (h, i) = iteration(&mut engine)?;
        host.push(h);
        infer.push(i);
    }
    let wall_s = start.elapsed().as_secs_f64();
    let total: Vec<f64> = host.iter().zip(&infer).map(|(h, i)| h + i).collect();
    let iterations = total.len() as u64;
    Ok(BenchReport {
        model: req.model.path.display().to_string(),
        engine: engine_desc,
        mode: req.mode,
        batch,
        frame: format!(
            "{} ({}x{})",
            req.frame_name,
            req.frame.width(),
            req.frame.height()
        ),
        iterations,
        samples: iterations * batch as u64,
        wall_s,
        throughput_qps: iterations as f64 / wall_s,
        samples_per_s: (iterations * batch as u64) as f64 / wall_s,
        latency_ms: Stats::of(&total),
        host_preprocess_ms: Stats::of(&host),
        inference_ms: Stats::of(&infer),
        h2d_compute_d2h_ms: None,
        warmup_iterations,
    })
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
        out.push_str(&format!(
            "throughput: {:.1} inferences/s, {:.1} samples/s\nlatency per inference:\n",
            self.throughput_qps, self.samples_per_s
        ));
        out.push_str(&row("total", &self.latency_ms));
        out.push_str(&row("host preprocess", &self.host_preprocess_ms));
        out.push_str(&row("inference", &self.inference_ms));
        out.push_str(
            "  H2D / compute / D2H: not exposed by ONNX Runtime (included in inference)\n",
        );
        out.push_str(&match self.mode {
            Mode::SingleStream => format!(
                "MLPerf single-stream: 90th-percentile latency {:.3} ms\n",
                self.latency_ms.p90
            ),
            Mode::Offline => format!("MLPerf offline: {:.1} samples/s\n", self.samples_per_s),
        });
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
    }
}
