//! `robustream bench`: the latency benchmark of a model on this machine, in trtexec's figures
//! (throughput; latency min / mean / median / p90 / p95 / p99 / max; a per-stage breakdown; the
//! one-off warm-up per input shape) in MLPerf's framings (single-stream, multi-stream, offline) and
//! a camera's (paced):
//!
//! - **single-stream**: one sample at a time, the next issued when the previous is done; the figure
//!   of merit is the 90th-percentile latency of a sample (MLPerf inference rules, single-stream).
//!   Each timed iteration is the host work of a live evaluation followed by inference: the model
//!   view of a real frame (Pillow-exact resize + crop, [`crate::view::ModelView`]) and its
//!   normalisation (*host preprocessing*), then the engine (*inference*);
//! - **multi-stream**: queries of `--batch` samples (MLPerf's `*.MultiStream.samples_per_query =
//!   8`, the default here), the next query issued as soon as the previous one is done; the figure of
//!   merit is the 99th-percentile latency of a *query* (`*.MultiStream.target_latency_percentile =
//!   99`). A query is timed from its issue to its last result, as LoadGen times it, and like
//!   single-stream it includes the host stage: each of its samples gets its model view and
//!   normalisation into its row of the batch buffer, then the query runs as one batched inference.
//!   (MLPerf's rules leave sample-independent resize / crop / normalisation untimed; this bench
//!   times it in both latency scenarios because a live evaluation pays it per frame, and reports
//!   it apart, `host_preprocess_ms`, so the inference alone can be read.);
//! - **offline**: batches of `--batch` samples back to back; the figure of merit is samples per
//!   second. As MLPerf's offline scenario and trtexec do, the inputs are prepared before the timed
//!   loop, so it measures the engine alone, fed from a batch buffer of its own memory (pinned on
//!   GPU providers, [`Engine::batch_buffer`]);
//! - **paced** (`--fps N`; not an MLPerf scenario): one sample per frame period, issued on a fixed
//!   schedule, slot k at t0 + k/N, with the engine idle between inferences — what a camera does, and
//!   the case of NVIDIA/TensorRT#2107 ("much slower for non-continuous inference": clocks and caches
//!   cool down between frames). Each sample does single-stream's work (host preprocessing of the
//!   real frame, then inference). Its latency runs from its *scheduled* issue time to its result,
//!   so a late start counts, as it does for a camera's frame (LoadGen, too, times a query from when
//!   it was scheduled). Reported besides: the inference alone, the engine's idle gap before each
//!   inference (the previous inference's end to this one's start: the wait for the slot and this
//!   sample's host stage), the timer's wake-up after the slot of the samples that waited for it,
//!   and the samples that started late — their slot had passed when the previous sample finished —
//!   with how late (p50 / p99 / max). When the bench falls behind it does not queue: a slot that has
//!   passed by more than one period when the bench is ready for it (the next slot has passed too) is
//!   skipped and counted as `dropped`, and the newest passed slot is issued — a camera that keeps
//!   its newest frame and drops the older ones. So an issued sample starts at most one period late,
//!   dropped slots appear in no latency, and slots = issued + dropped. The figures of merit are the
//!   99th-percentile latency and the dropped and late counts. With `--duration D` the run holds the
//!   slots scheduled in [0, D) (⌈D·N⌉ of them; at least one sample is issued); with `--iterations
//!   I`, I issued samples. The warm-up runs on the same schedule, and the timed slots continue it.
//!
//! Before timing: the engine runs its batch size once (the provider's one-off per-shape tuning,
//! reported as `engine_warmup_ms`), host preprocessing is measured on all cores (samples per
//! second, `preprocess`), then `--warmup` seconds of untimed iterations (at least one). Inference
//! includes, for GPU providers, ONNX Runtime's copies to and from the device: its C API does not
//! expose H2D / compute / D2H separately, so they are reported as not available rather than
//! guessed. Every sample is kept, so quantiles are exact order statistics (nearest rank).
//!
//! A result is flagged (`trust.warnings`) when it is too short to be a figure one can quote
//! (fewer queries or samples, or seconds, than MLPerf's minimums: 1,024 queries for single-stream,
//! 662 queries for multi-stream (`*.MultiStream.min_query_count`) and 24,576 samples for offline
//! image classification, 600 s for all three (`*.<scenario>.min_duration = 600000`) — MLCommons
//! `loadgen/mlperf.conf` and the inference rules' scenario table, mlcommons/inference_policies
//! `inference_rules.adoc`; paced, whose figure is also a 99th percentile, is held to multi-stream's
//! 662 samples and 600 s), when a multi-stream query is not MLPerf's 8 samples, or when it is too
//! noisy (coefficient of variation of the inference time above 10 %, or fewer than 100 iterations
//! for the tail percentiles). `--json` also records the machine, the versions and the time of the
//! run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use image::RgbImage;
use rayon::prelude::*;
use serde::Serialize;

use crate::app::watch::{CpuMeter, CpuUse};
use crate::engine::onnx::OnnxEngine;
use crate::engine::{BatchBuffer, Engine, EngineConfig};
use crate::model::ModelDesc;
use crate::preprocess::Normalizer;
use crate::view::ModelView;

/// How samples are issued (MLPerf's scenarios, and a camera's schedule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One sample per inference; figure of merit p90 latency.
    SingleStream,
    /// Queries of `--batch` samples (8 by default) back to back; figure of merit p99 query latency.
    MultiStream,
    /// Batches back to back; figure of merit samples per second.
    Offline,
    /// One sample per frame period on a fixed schedule (`--fps`); figure of merit p99 latency from
    /// the scheduled issue, and the dropped and late counts.
    Paced,
}

impl Mode {
    /// The mode's name on the command line and in the JSON report.
    fn name(self) -> &'static str {
        match self {
            Self::SingleStream => "single-stream",
            Self::MultiStream => "multi-stream",
            Self::Offline => "offline",
            Self::Paced => "paced",
        }
    }

    /// Samples per inference for a requested `--batch`: 1 in single-stream and paced, `batch` (at
    /// least 1) in multi-stream (samples per query) and offline.
    fn batch(self, batch: usize) -> usize {
        match self {
            Self::SingleStream | Self::Paced => 1,
            Self::MultiStream | Self::Offline => batch.max(1),
        }
    }
}

/// The highest `--fps` taken: a period of 1 µs. Above it the schedule's slots would be closer
/// than the clock and the sleep can tell apart.
const MAX_FPS: f64 = 1_000_000.0;

/// Flags of a bench that disagree: a usage error (the binary exits 2), found before anything loads.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UsageError {
    /// `--mode paced` without `--fps`.
    #[error(
        "--mode paced needs --fps N, the frame rate samples are issued at (for example --fps 30)"
    )]
    FpsMissing,
    /// `--fps` not a finite number in (0, [`MAX_FPS`]].
    #[error(
        "--fps {value}: not a frame rate; give a finite number of frames per second above 0 and \
         at most {MAX_FPS} (for example --fps 30)"
    )]
    FpsInvalid {
        /// The value as given (clipped).
        value: String,
    },
    /// `--fps` with a mode other than paced.
    #[error(
        "--fps is only for --mode paced (this bench is --mode {mode}); add --mode paced or drop --fps"
    )]
    FpsNotPaced {
        /// The mode asked for.
        mode: &'static str,
    },
}

/// The frame rate of a bench from `--fps` as given (text, so that every bad value gets the same one
/// line): required with paced and a finite number in (0, [`MAX_FPS`]]; refused with other modes.
pub fn settle_fps(mode: Mode, fps: Option<&str>) -> Result<Option<f64>, UsageError> {
    let value = match fps {
        None => None,
        Some(text) => Some(
            text.trim()
                .parse::<f64>()
                .map_err(|_| UsageError::FpsInvalid {
                    value: crate::quote::clip(text).into_owned(),
                })?,
        ),
    };
    check_fps(mode, value).map_err(|e| match (e, fps) {
        // The value as the user wrote it.
        (UsageError::FpsInvalid { .. }, Some(text)) => UsageError::FpsInvalid {
            value: crate::quote::clip(text).into_owned(),
        },
        (e, _) => e,
    })
}

/// [`settle_fps`] for a number: `Some` in (0, [`MAX_FPS`]] with paced, `None` with other modes.
fn check_fps(mode: Mode, fps: Option<f64>) -> Result<Option<f64>, UsageError> {
    match (mode, fps) {
        (Mode::Paced, None) => Err(UsageError::FpsMissing),
        (Mode::Paced, Some(f)) if f.is_finite() && f > 0.0 && f <= MAX_FPS => Ok(Some(f)),
        (Mode::Paced, Some(f)) => Err(UsageError::FpsInvalid {
            value: f.to_string(),
        }),
        (other, Some(_)) => Err(UsageError::FpsNotPaced { mode: other.name() }),
        (_, None) => Ok(None),
    }
}

/// When a bench stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Length {
    /// After this many seconds of timed iterations (the iteration in flight finishes); paced: the
    /// slots scheduled in the first this many seconds.
    Duration(Duration),
    /// After this many timed iterations (queries in multi-stream, issued samples in paced).
    Iterations(u64),
}

/// What to benchmark.
#[derive(Debug, Clone)]
pub struct BenchRequest {
    /// The model description.
    pub model: ModelDesc,
    /// Engine settings (provider, threads, library, ...); its batch sizes are set to the bench's.
    pub engine: EngineConfig,
    /// Samples per inference in offline mode and per query in multi-stream ([`Mode::batch`]:
    /// single-stream and paced always use 1).
    pub batch: usize,
    /// The issue pattern.
    pub mode: Mode,
    /// Paced: samples issued per second (required there, refused by the other modes:
    /// [`check_fps`]).
    pub fps: Option<f64>,
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
pub(crate) struct Stats {
    /// Number of values.
    pub(crate) n: u64,
    /// Smallest, ms.
    pub(crate) min: f64,
    /// Arithmetic mean, ms.
    pub(crate) mean: f64,
    /// Median (nearest rank), ms.
    pub(crate) median: f64,
    /// 90th percentile (nearest rank), ms.
    pub(crate) p90: f64,
    /// 95th percentile, ms.
    pub(crate) p95: f64,
    /// 99th percentile, ms.
    pub(crate) p99: f64,
    /// Largest, ms.
    pub(crate) max: f64,
    /// Standard deviation over the mean (0 for fewer than two values).
    pub(crate) cv: f64,
}

impl Stats {
    /// The statistics of `values` (ms); all zero for an empty series. Quantile q is the value of rank
    /// ⌈q·n⌉ (1-based) in sorted order — the nearest-rank definition MLPerf uses for its percentiles.
    fn of(values: &[f64]) -> Self {
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
pub(crate) struct Preprocessing {
    /// Worker threads (rayon's pool: one per core by default).
    pub(crate) threads: usize,
    /// Samples prepared.
    pub(crate) samples: u64,
    /// Samples per second over all threads.
    pub(crate) samples_per_s: f64,
    /// Model view + normalisation of one sample, ms.
    pub(crate) per_sample_ms: Stats,
}

/// Whether a result is long and steady enough to quote.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Trust {
    /// MLPerf's minimum samples for this scenario (1,024 queries of one sample single-stream; 24,576
    /// samples offline for image classification; 662 queries multi-stream, as samples: 662 ×
    /// `batch`; paced is held to multi-stream's 662).
    pub(crate) mlperf_min_samples: u64,
    /// MLPerf's minimum queries where the scenario counts queries (1,024 single-stream, 662
    /// multi-stream and paced; `null` offline, whose one query holds all its samples).
    pub(crate) mlperf_min_queries: Option<u64>,
    /// MLPerf's minimum duration, seconds (600 in every scenario).
    pub(crate) mlperf_min_duration_s: f64,
    /// Both minimums met.
    pub(crate) meets_mlperf_minimums: bool,
    /// What makes the figures less than trustworthy (empty when nothing does).
    pub(crate) warnings: Vec<String>,
}

/// The figure of merit of a bench's mode, as one value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct FigureOfMerit {
    /// What it is (`p90 latency of a sample`, `p99 latency of a query`, `samples per second`,
    /// `p99 latency from the scheduled issue`).
    pub(crate) name: &'static str,
    /// Its value.
    pub(crate) value: f64,
    /// Its unit (`ms`, `samples/s`).
    pub(crate) unit: &'static str,
}

/// Paced mode's schedule and what became of it (see the module docs for the rules).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct PacedReport {
    /// 99th-percentile latency of a sample from its scheduled issue time to its result, ms (the
    /// figure of merit; `latency_ms.p99`).
    pub(crate) p99_latency_ms: f64,
    /// Slots skipped because they had passed by more than one period when the bench was ready for
    /// them (frames a camera would drop); in no latency.
    pub(crate) dropped: u64,
    /// Issued samples that started after their slot (the previous sample ran past it).
    pub(crate) late: u64,
    /// Samples issued per second.
    pub(crate) fps: f64,
    /// The period between slots, ms.
    pub(crate) period_ms: f64,
    /// Slots of the timed run: issued samples + dropped.
    pub(crate) slots: u64,
    /// How late the late samples started (start − slot; under one period), ms; `n` = `late`.
    pub(crate) late_ms: Stats,
    /// How long after its slot each sample that waited for it started (the sleep's wake-up), ms.
    pub(crate) wake_ms: Stats,
    /// The engine's idle time before each inference, from the previous inference's end to this
    /// one's start (the wait for the slot and this sample's host preprocessing), ms.
    pub(crate) idle_gap_ms: Stats,
}

/// Multi-stream mode's queries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub(crate) struct MultiStreamReport {
    /// 99th-percentile latency of a query, from its issue to its last result (host preprocessing of
    /// its samples + one batched inference), ms (the figure of merit; `latency_ms.p99`).
    pub(crate) p99_query_latency_ms: f64,
    /// Samples per query (`--batch`; MLPerf's is 8).
    pub(crate) samples_per_query: usize,
    /// Timed queries.
    pub(crate) queries: u64,
}

/// The result of a bench (also its `--json` form).
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// The mode's figure of merit.
    pub(crate) figure_of_merit: FigureOfMerit,
    /// The model description file.
    pub(crate) model: String,
    /// The engine line (runtime, provider, threads, batch sizes).
    pub(crate) engine: String,
    /// The issue pattern.
    pub(crate) mode: Mode,
    /// Samples per inference (per query in multi-stream).
    pub(crate) batch: usize,
    /// The frame every sample is made from and its size.
    pub(crate) frame: String,
    /// Timed iterations (inferences; queries in multi-stream; issued samples in paced).
    pub(crate) iterations: u64,
    /// Samples processed in timed iterations (iterations × batch).
    pub(crate) samples: u64,
    /// Wall time of the timed iterations, seconds (paced: from the first timed slot to the last
    /// result).
    pub(crate) wall_s: f64,
    /// Inferences per second.
    pub(crate) throughput_qps: f64,
    /// Samples per second (MLPerf offline's figure of merit).
    pub(crate) samples_per_s: f64,
    /// Per iteration, ms: single-stream host preprocessing + inference (the latency of one sample,
    /// whose p90 is MLPerf single-stream's figure of merit); multi-stream the same for a query of
    /// `batch` samples (p99: its figure of merit); offline the inference of a batch; paced from the
    /// sample's scheduled issue time to its result (p99: its figure of merit).
    pub(crate) latency_ms: Stats,
    /// Per iteration: model view + normalisation on the host, ms (single-stream and paced one
    /// sample, multi-stream the query's samples; offline prepares its inputs before timing, see
    /// `preprocess`).
    pub(crate) host_preprocess_ms: Option<Stats>,
    /// Per iteration: ONNX Runtime's run (for GPU providers including its host↔device copies), ms.
    pub(crate) inference_ms: Stats,
    /// Host→device, compute, device→host split: not exposed by ONNX Runtime (always `null`).
    pub(crate) h2d_compute_d2h_ms: Option<[Stats; 3]>,
    /// Paced mode's schedule: dropped and late samples, idle gaps (`null` in the other modes).
    pub(crate) paced: Option<PacedReport>,
    /// Multi-stream mode's queries (`null` in the other modes).
    pub(crate) multi_stream: Option<MultiStreamReport>,
    /// Warm-up iterations run before timing.
    pub(crate) warmup_iterations: u64,
    /// The first run at each batch size (the provider's one-off tuning), ms.
    pub(crate) engine_warmup_ms: BTreeMap<String, f64>,
    /// Host preprocessing throughput on all cores, measured before timing.
    pub(crate) preprocess: Preprocessing,
    /// Process CPU use over the timed iterations.
    pub(crate) cpu: Option<CpuUse>,
    /// Whether the result is long and steady enough to quote.
    pub(crate) trust: Trust,
    /// Where it ran.
    pub(crate) machine: Machine,
    /// robustream's version.
    pub(crate) robustream: String,
    /// ONNX Runtime's version and build line.
    pub(crate) onnxruntime: String,
    /// When the timed iterations started, seconds since the Unix epoch, and as UTC.
    pub(crate) started_unix: u64,
    /// The same, `YYYY-MM-DDTHH:MM:SSZ`.
    pub(crate) started_utc: String,
}

/// MLPerf's minimum duration of a performance run (`*.SingleStream.min_duration`,
/// `*.MultiStream.min_duration` and `*.Offline.min_duration` = 600000 ms in MLCommons
/// `loadgen/mlperf.conf`).
const MLPERF_MIN_DURATION_S: f64 = 600.0;
/// MLPerf single-stream's minimum query count (the inference rules; LoadGen's default).
const MLPERF_SINGLE_STREAM_MIN_QUERIES: u64 = 1024;
/// MLPerf multi-stream's minimum query count (`*.MultiStream.min_query_count = 662` in
/// `loadgen/mlperf.conf`); paced mode, also judged by a 99th percentile, is held to it too.
const MLPERF_MULTI_STREAM_MIN_QUERIES: u64 = 662;
/// MLPerf multi-stream's samples per query (`*.MultiStream.samples_per_query = 8` in
/// `loadgen/mlperf.conf`; "8" in the inference rules' scenario table): `--batch`'s default.
const MLPERF_MULTI_STREAM_SAMPLES_PER_QUERY: usize = 8;
/// MLPerf offline's minimum sample count for image classification (`resnet50.Offline.min_query_count`
/// in `loadgen/mlperf.conf`).
const MLPERF_OFFLINE_MIN_SAMPLES: u64 = 24_576;
/// Above this coefficient of variation of the inference time a result is flagged as noisy.
const NOISY_CV: f64 = 0.10;
/// Below this many timed iterations the tail percentiles (p99) rest on too few values.
const FEW_ITERATIONS: u64 = 100;

/// The engine and buffers of a bench, and the host work of one iteration.
struct Bench<'a> {
    engine: OnnxEngine,
    view: ModelView,
    norm: Normalizer,
    buffer: BatchBuffer,
    frame: &'a RgbImage,
    /// Samples per inference.
    batch: usize,
    /// Values per sample.
    per: usize,
    /// Samples whose host stage runs inside a timed iteration: one in single-stream and paced, the
    /// query's in multi-stream, none offline (its inputs are prepared before timing).
    host_samples: usize,
}

impl Bench<'_> {
    /// The model view and normalisation of the frame into the first `host_samples` rows, ms
    /// (`None` when the mode has no host stage in its iterations).
    fn host(&mut self) -> Option<f64> {
        if self.host_samples == 0 {
            return None;
        }
        let t = Instant::now();
        for row in self
            .buffer
            .as_mut_slice()
            .chunks_exact_mut(self.per)
            .take(self.host_samples)
        {
            self.norm.write(&self.view.image(self.frame), row);
        }
        Some(ms(t.elapsed()))
    }

    /// One inference of the batch buffer: its scores, and when it started and ended.
    fn infer(&mut self) -> anyhow::Result<(Vec<f32>, Instant, Instant)> {
        let t = Instant::now();
        let scores = self.engine.infer_buffer(&mut self.buffer, self.batch)?;
        Ok((std::hint::black_box(scores), t, Instant::now()))
    }
}

/// What the timed loop measured.
#[derive(Default)]
struct Timed {
    /// Host preprocessing per iteration, ms (empty offline).
    host: Vec<f64>,
    /// Inference per iteration, ms.
    infer: Vec<f64>,
    /// Latency per iteration, ms.
    total: Vec<f64>,
    wall_s: f64,
    warmup_iterations: u64,
    started_unix: u64,
    cpu: Option<CpuUse>,
    paced: Option<PacedReport>,
}

/// Runs the bench. Errors: `--fps` given with the wrong mode or not a frame rate ([`UsageError`]),
/// the engine cannot load, or the model's fixed batch size differs from the requested one, or an
/// inference fails.
pub fn run(req: &BenchRequest) -> anyhow::Result<BenchReport> {
    let fps = check_fps(req.mode, req.fps)?;
    let batch = req.mode.batch(req.batch);
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
            if matches!(req.mode, Mode::SingleStream | Mode::Paced) {
                " --mode offline (or --mode multi-stream)"
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
    let per = req.model.input_len();
    let preprocess = preprocess_throughput(req);
    let buffer = engine.batch_buffer(batch, per);
    let mut bench = Bench {
        engine,
        view: ModelView::new(&req.model),
        norm: Normalizer::new(&req.model),
        buffer,
        frame: &req.frame,
        batch,
        per,
        host_samples: match req.mode {
            Mode::SingleStream | Mode::Paced => 1,
            Mode::MultiStream => batch,
            Mode::Offline => 0,
        },
    };
    // Offline: the inputs are prepared once, before anything is timed.
    for row in bench.buffer.as_mut_slice().chunks_exact_mut(per) {
        bench.norm.write(&bench.view.image(&req.frame), row);
    }

    let timed = match fps {
        Some(fps) => paced(&mut bench, req, fps)?,
        None => back_to_back(&mut bench, req)?,
    };
    let mode = req.mode;
    let iterations = timed.total.len() as u64;
    let samples = iterations * batch as u64;
    let inference_ms = Stats::of(&timed.infer);
    let latency_ms = Stats::of(&timed.total);
    let wall_s = timed.wall_s;
    let samples_per_s = samples as f64 / wall_s;
    let trust = judge(mode, batch, iterations, wall_s, &inference_ms);
    let figure_of_merit = match mode {
        Mode::SingleStream => FigureOfMerit {
            name: "p90 latency of a sample",
            value: latency_ms.p90,
            unit: "ms",
        },
        Mode::MultiStream => FigureOfMerit {
            name: "p99 latency of a query",
            value: latency_ms.p99,
            unit: "ms",
        },
        Mode::Offline => FigureOfMerit {
            name: "samples per second",
            value: samples_per_s,
            unit: "samples/s",
        },
        Mode::Paced => FigureOfMerit {
            name: "p99 latency from the scheduled issue",
            value: latency_ms.p99,
            unit: "ms",
        },
    };
    Ok(BenchReport {
        figure_of_merit,
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
        samples_per_s,
        latency_ms,
        host_preprocess_ms: (mode != Mode::Offline).then(|| Stats::of(&timed.host)),
        inference_ms,
        h2d_compute_d2h_ms: None,
        paced: timed.paced.map(|p| PacedReport {
            p99_latency_ms: latency_ms.p99,
            ..p
        }),
        multi_stream: (mode == Mode::MultiStream).then_some(MultiStreamReport {
            p99_query_latency_ms: latency_ms.p99,
            samples_per_query: batch,
            queries: iterations,
        }),
        warmup_iterations: timed.warmup_iterations,
        engine_warmup_ms,
        preprocess,
        cpu: timed.cpu,
        trust,
        machine: Machine::this(),
        robustream: env!("CARGO_PKG_VERSION").to_string(),
        onnxruntime: bench.engine.runtime().to_string(),
        started_unix: timed.started_unix,
        started_utc: crate::duration::utc(timed.started_unix),
    })
}

/// Seconds since the Unix epoch, now.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Single-stream, multi-stream and offline: each iteration issued as soon as the previous is done.
fn back_to_back(bench: &mut Bench, req: &BenchRequest) -> anyhow::Result<Timed> {
    let warm_start = Instant::now();
    let mut warmup_iterations = 0u64;
    while warmup_iterations == 0 || warm_start.elapsed() < req.warmup {
        bench.host();
        let (scores, _, _) = bench.infer()?;
        if warmup_iterations == 0 {
            // The same frame every iteration: a model that scores it as NaN/inf (or whose
            // "probabilities" are not) does so from the first.
            check_scores(&scores, &req.model, &req.frame_name)?;
        }
        warmup_iterations += 1;
    }

    let mut t = Timed {
        warmup_iterations,
        started_unix: unix_now(),
        ..Timed::default()
    };
    let cpu = CpuMeter::start();
    let start = Instant::now();
    loop {
        let done = match req.length {
            Length::Duration(d) => !t.infer.is_empty() && start.elapsed() >= d,
            Length::Iterations(n) => t.infer.len() as u64 >= n.max(1),
        };
        if done {
            break;
        }
        let host = bench.host();
        let (_, began, ended) = bench.infer()?;
        let inference = ms(ended - began);
        t.host.extend(host);
        t.infer.push(inference);
        t.total.push(host.unwrap_or(0.0) + inference);
    }
    t.wall_s = start.elapsed().as_secs_f64();
    t.cpu = cpu.read();
    Ok(t)
}

/// The fixed schedule of paced mode: slot k at `origin + k / fps` (see the module docs).
struct Pacer {
    origin: Instant,
    fps: f64,
    /// The next slot to issue.
    next: u64,
    /// Slots in the run (issue none from this one on, unless none was issued); `None`: no end.
    end: Option<u64>,
    /// Slots skipped so far.
    dropped: u64,
}

/// One issued slot of a [`Pacer`].
struct Issue {
    /// When the slot was scheduled.
    slot: Instant,
    /// When its sample started.
    start: Instant,
    /// Whether the bench was ready before the slot and slept until it (else it started late).
    waited: bool,
}

impl Pacer {
    /// The schedule from `origin`, holding the slots of `length`: those scheduled in its first `d`
    /// seconds, or no end (a count of issued samples, which the caller keeps).
    fn new(origin: Instant, fps: f64, length: Length) -> Self {
        let mut p = Self {
            origin,
            fps,
            next: 0,
            end: None,
            dropped: 0,
        };
        p.end = match length {
            Length::Duration(d) => Some(p.slots_in(d)),
            Length::Iterations(_) => None,
        };
        p
    }

    /// The schedule that continues this one from its next slot, which becomes its slot 0 (the timed
    /// run continues the warm-up's schedule).
    fn continued(&self, length: Length) -> Self {
        Self::new(self.at(self.next).unwrap_or(self.origin), self.fps, length)
    }

    /// Slot `k`'s time; `None` past what an `Instant` holds (never reached).
    fn at(&self, k: u64) -> Option<Instant> {
        Duration::try_from_secs_f64(k as f64 / self.fps)
            .ok()
            .and_then(|d| self.origin.checked_add(d))
    }

    /// The slots k with k / fps < d: ⌈d·fps⌉, settled against the same arithmetic as [`Pacer::at`]
    /// (a count too large to reach is left as it is).
    fn slots_in(&self, d: Duration) -> u64 {
        let d = d.as_secs_f64();
        let n = (d * self.fps).ceil();
        if n >= 2f64.powi(52) {
            return u64::MAX / 2;
        }
        let mut n = n as u64;
        while n > 0 && (n - 1) as f64 / self.fps >= d {
            n -= 1;
        }
        while (n as f64 / self.fps) < d {
            n += 1;
        }
        n
    }

    /// Waits for the next slot and returns it, first skipping (and counting) each slot that had
    /// passed by more than one period, i.e. whose next slot had passed too: the newest passed slot
    /// is issued. `None` once the run's slots are over — unless `owed` (nothing issued yet: the run
    /// issues at least one sample, the slots it skipped counted).
    fn issue(&mut self, owed: bool) -> Option<Issue> {
        let now = Instant::now();
        let passed = |k: u64| self.at(k).is_some_and(|s| s < now);
        let mut k = self.next;
        if passed(k + 1) {
            // The newest passed slot j: at(j) < now <= at(j + 1); found from the elapsed time, then
            // settled against `at` itself.
            let elapsed = now.saturating_duration_since(self.origin).as_secs_f64();
            let mut j = ((elapsed * self.fps).floor().min(2f64.powi(62)) as u64).max(k + 1);
            while j > k + 1 && !passed(j) {
                j -= 1;
            }
            while passed(j + 1) {
                j += 1;
            }
            k = j;
        }
        let end = self.end.filter(|_| !owed);
        self.dropped += end.map_or(k, |e| k.min(e)).saturating_sub(self.next);
        self.next = k;
        if end.is_some_and(|e| k >= e) {
            return None;
        }
        let slot = self.at(k)?;
        self.next = k + 1;
        let waited = slot > now;
        if waited {
            std::thread::sleep(slot - now);
        }
        Some(Issue {
            slot,
            start: if waited { Instant::now() } else { now },
            waited,
        })
    }
}

/// Paced: one sample per slot of a fixed schedule at `fps`, the engine idle in between; the
/// warm-up runs on the same schedule and the timed slots continue it.
fn paced(bench: &mut Bench, req: &BenchRequest, fps: f64) -> anyhow::Result<Timed> {
    // The warm-up: the slots of its first `--warmup` seconds, at least one.
    let warm_start = Instant::now();
    let mut pacer = Pacer::new(warm_start, fps, Length::Duration(req.warmup));
    let mut warmup_iterations = 0u64;
    let mut last_end = warm_start;
    while pacer.issue(warmup_iterations == 0).is_some() {
        bench.host();
        let (scores, _, ended) = bench.infer()?;
        if warmup_iterations == 0 {
            check_scores(&scores, &req.model, &req.frame_name)?;
        }
        last_end = ended;
        warmup_iterations += 1;
    }

    let mut pacer = pacer.continued(req.length);
    let origin = pacer.origin;
    let mut t = Timed {
        warmup_iterations,
        started_unix: unix_now(),
        ..Timed::default()
    };
    let (mut late, mut wake, mut gap) = (Vec::new(), Vec::new(), Vec::new());
    let cpu = CpuMeter::start();
    loop {
        if let Length::Iterations(n) = req.length
            && t.infer.len() as u64 >= n.max(1)
        {
            break;
        }
        let Some(issue) = pacer.issue(t.infer.is_empty()) else {
            break;
        };
        let host = bench.host();
        let (_, began, ended) = bench.infer()?;
        t.host.extend(host);
        t.infer.push(ms(ended - began));
        t.total.push(ms(ended - issue.slot));
        gap.push(ms(began.saturating_duration_since(last_end)));
        let after_slot = ms(issue.start - issue.slot);
        match issue.waited {
            true => wake.push(after_slot),
            false => late.push(after_slot),
        }
        last_end = ended;
    }
    t.wall_s = last_end.saturating_duration_since(origin).as_secs_f64();
    t.cpu = cpu.read();
    let issued = t.infer.len() as u64;
    t.paced = Some(PacedReport {
        p99_latency_ms: 0.0,
        dropped: pacer.dropped,
        late: late.len() as u64,
        fps,
        period_ms: 1e3 / fps,
        slots: issued + pacer.dropped,
        late_ms: Stats::of(&late),
        wake_ms: Stats::of(&wake),
        idle_gap_ms: Stats::of(&gap),
    });
    Ok(t)
}
/// The machine a bench ran on (read from `/proc` and `/etc/os-release` where present).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Machine {
    /// Host name.
    pub(crate) host: Option<String>,
    /// CPU model.
    pub(crate) cpu: Option<String>,
    /// Cores available to the process.
    pub(crate) cores: usize,
    /// Memory, GiB.
    pub(crate) memory_gib: Option<f64>,
    /// Operating system.
    pub(crate) os: Option<String>,
    /// Kernel release.
    pub(crate) kernel: Option<String>,
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

/// The trust flags of a result of `iterations` iterations of `batch` samples (see the module docs
/// for the minimums).
fn judge(mode: Mode, batch: usize, iterations: u64, wall_s: f64, inference: &Stats) -> Trust {
    let samples = iterations * batch as u64;
    let (min_queries, min_samples) = match mode {
        Mode::SingleStream => (
            Some(MLPERF_SINGLE_STREAM_MIN_QUERIES),
            MLPERF_SINGLE_STREAM_MIN_QUERIES,
        ),
        Mode::MultiStream | Mode::Paced => (
            Some(MLPERF_MULTI_STREAM_MIN_QUERIES),
            MLPERF_MULTI_STREAM_MIN_QUERIES * batch as u64,
        ),
        Mode::Offline => (None, MLPERF_OFFLINE_MIN_SAMPLES),
    };
    let mut warnings = Vec::new();
    let long_enough = match min_queries {
        Some(q) => iterations >= q,
        None => samples >= min_samples,
    };
    let meets = long_enough && wall_s >= MLPERF_MIN_DURATION_S;
    if !meets {
        let (ran, asks) = match mode {
            Mode::MultiStream => (
                format!("{iterations} queries of {batch} samples"),
                format!("MLPerf's multi-stream asks for {MLPERF_MULTI_STREAM_MIN_QUERIES} queries"),
            ),
            Mode::Paced => (
                format!("{samples} samples"),
                format!(
                    "for a 99th percentile MLPerf's multi-stream asks for \
                     {MLPERF_MULTI_STREAM_MIN_QUERIES}"
                ),
            ),
            Mode::SingleStream | Mode::Offline => (
                format!("{samples} samples"),
                format!("MLPerf asks for {min_samples}"),
            ),
        };
        warnings.push(format!(
            "shorter than MLPerf's minimum run ({ran} in {wall_s:.1} s; {asks} and \
             {MLPERF_MIN_DURATION_S:.0} s): fine for comparing runs here, not a figure to publish \
             (--duration 600)"
        ));
    }
    if mode == Mode::MultiStream && batch != MLPERF_MULTI_STREAM_SAMPLES_PER_QUERY {
        warnings.push(format!(
            "a query of {batch} samples: MLPerf's multi-stream query is \
             {MLPERF_MULTI_STREAM_SAMPLES_PER_QUERY} (--batch \
             {MLPERF_MULTI_STREAM_SAMPLES_PER_QUERY} to compare with its results)"
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
        mlperf_min_queries: min_queries,
        mlperf_min_duration_s: MLPERF_MIN_DURATION_S,
        meets_mlperf_minimums: meets,
        warnings,
    }
}

impl Machine {
    /// This machine, as far as `/proc` and `/etc/os-release` say.
    fn this() -> Self {
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
    /// The human-readable report (trtexec-like lines, then the mode's figure of merit: MLPerf's,
    /// or paced's).
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
            "model: {}\nengine: {}\nframe: {}\nmode: {}{}, batch {}, {} timed iterations in {:.2} s \
             (+{} warm-up)\n",
            self.model,
            self.engine,
            self.frame,
            self.mode.name(),
            self.paced
                .map(|p| format!(" at {} fps", p.fps))
                .unwrap_or_default(),
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
            "throughput: {:.1} inferences/s, {:.1} samples/s\n{}:\n",
            self.throughput_qps,
            self.samples_per_s,
            match self.mode {
                Mode::SingleStream | Mode::Offline => "latency per inference".to_string(),
                Mode::MultiStream => format!("latency per query of {} samples", self.batch),
                Mode::Paced => "latency per sample, from its scheduled issue".to_string(),
            }
        ));
        out.push_str(&row("total", &self.latency_ms));
        if let Some(host) = &self.host_preprocess_ms {
            out.push_str(&row("host preprocess", host));
        }
        out.push_str(&row("inference", &self.inference_ms));
        out.push_str(
            "  H2D / compute / D2H: not exposed by ONNX Runtime (included in inference)\n",
        );
        if let Some(p) = &self.paced {
            out.push_str(&row("idle gap", &p.idle_gap_ms));
            out.push_str(&row("late start", &p.late_ms));
            out.push_str(&row("timer wake-up", &p.wake_ms));
        }
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
            Mode::MultiStream => format!(
                "MLPerf multi-stream: 99th-percentile query latency {:.3} ms ({} samples per \
                 query, {} queries)\n",
                self.latency_ms.p99, self.batch, self.iterations
            ),
            Mode::Offline => format!("MLPerf offline: {:.1} samples/s\n", self.samples_per_s),
            Mode::Paced => {
                let p = self.paced.unwrap_or_default();
                let late = match p.late {
                    0 => "none late".to_string(),
                    n => format!(
                        "{n} late (by p50 {:.3}, p99 {:.3}, max {:.3} ms)",
                        p.late_ms.median, p.late_ms.p99, p.late_ms.max
                    ),
                };
                format!(
                    "paced at {} fps: 99th-percentile latency {:.3} ms from the scheduled issue; \
                     {} of {} slots dropped; {late}\n",
                    p.fps, self.latency_ms.p99, p.dropped, p.slots
                )
            }
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
        let t = judge(Mode::Offline, 8, 3750, 700.0, &steady);
        assert!(t.meets_mlperf_minimums && t.warnings.is_empty(), "{t:?}");
        let t = judge(Mode::Offline, 8, 3750, 10.0, &steady);
        assert!(!t.meets_mlperf_minimums && t.warnings.len() == 1, "{t:?}");
        assert_eq!(t.mlperf_min_samples, MLPERF_OFFLINE_MIN_SAMPLES);
        assert_eq!(t.mlperf_min_queries, None);
        let noisy = Stats::of(&(0..200).map(|i| 1.0 + (i % 2) as f64).collect::<Vec<_>>());
        let t = judge(Mode::SingleStream, 1, 2000, 700.0, &noisy);
        assert!(t.warnings.iter().any(|w| w.starts_with("noisy")), "{t:?}");
        let few = Stats::of(&[2.0; 10]);
        let t = judge(Mode::SingleStream, 1, 2000, 700.0, &few);
        assert!(
            t.warnings.iter().any(|w| w.contains("10 timed iterations")),
            "{t:?}"
        );
    }

    #[test]
    fn multi_stream_and_paced_use_multi_streams_minimums() {
        let steady = Stats::of(&vec![2.0; 700]);
        // 662 queries of 8 in 600 s meet MLPerf's multi-stream minimums; 661 do not.
        let t = judge(Mode::MultiStream, 8, 662, 600.0, &steady);
        assert!(t.meets_mlperf_minimums && t.warnings.is_empty(), "{t:?}");
        assert_eq!(
            (t.mlperf_min_queries, t.mlperf_min_samples),
            (Some(662), 662 * 8)
        );
        let t = judge(Mode::MultiStream, 8, 661, 900.0, &steady);
        assert!(!t.meets_mlperf_minimums, "{t:?}");
        assert!(t.warnings[0].contains("661 queries of 8 samples"), "{t:?}");
        // A query that is not MLPerf's 8 samples is said to be one.
        let t = judge(Mode::MultiStream, 4, 700, 900.0, &steady);
        assert!(t.meets_mlperf_minimums, "{t:?}");
        assert!(
            t.warnings
                .iter()
                .any(|w| w.contains("a query of 4 samples")),
            "{t:?}"
        );
        // Paced: a 99th percentile too, held to the same 662 (samples of one) and 600 s.
        let t = judge(Mode::Paced, 1, 662, 600.0, &steady);
        assert!(t.meets_mlperf_minimums && t.warnings.is_empty(), "{t:?}");
        assert_eq!(
            (t.mlperf_min_queries, t.mlperf_min_samples),
            (Some(662), 662)
        );
        let t = judge(Mode::Paced, 1, 700, 599.0, &steady);
        assert!(!t.meets_mlperf_minimums, "{t:?}");
        let t = judge(Mode::SingleStream, 1, 1024, 600.0, &steady);
        assert_eq!(t.mlperf_min_queries, Some(1024));
    }

    #[test]
    fn fps_is_required_with_paced_and_refused_without() {
        use UsageError::*;
        assert_eq!(settle_fps(Mode::Paced, Some("30")), Ok(Some(30.0)));
        assert_eq!(settle_fps(Mode::Paced, Some(" 29.97 ")), Ok(Some(29.97)));
        assert_eq!(settle_fps(Mode::Paced, None), Err(FpsMissing));
        for bad in ["0", "-1", "abc", "inf", "NaN", "", "1e7", "1e400"] {
            assert_eq!(
                settle_fps(Mode::Paced, Some(bad)),
                Err(FpsInvalid { value: bad.into() }),
                "{bad}"
            );
        }
        assert_eq!(
            settle_fps(Mode::Offline, Some("30")),
            Err(FpsNotPaced { mode: "offline" })
        );
        assert_eq!(settle_fps(Mode::MultiStream, None), Ok(None));
        assert_eq!(check_fps(Mode::Paced, Some(MAX_FPS)), Ok(Some(MAX_FPS)));
        assert!(check_fps(Mode::Paced, Some(f64::MIN_POSITIVE)).is_ok());
        // Every message is one line naming the flag and the fix.
        for e in [
            FpsMissing,
            FpsInvalid { value: "x".into() },
            FpsNotPaced { mode: "offline" },
        ] {
            let m = e.to_string();
            assert!(m.contains("--fps") && !m.contains('\n'), "{m}");
        }
    }

    #[test]
    fn batch_per_mode() {
        assert_eq!(Mode::SingleStream.batch(8), 1);
        assert_eq!(Mode::Paced.batch(8), 1);
        assert_eq!(Mode::MultiStream.batch(8), 8);
        assert_eq!(Mode::Offline.batch(0), 1);
    }

    #[test]
    fn a_duration_holds_the_slots_scheduled_before_it_ends() {
        let p = |fps| Pacer::new(Instant::now(), fps, Length::Iterations(1));
        let secs = Duration::from_secs_f64;
        assert_eq!(p(50.0).slots_in(secs(1.0)), 50);
        assert_eq!(p(7.0).slots_in(secs(1.0)), 7);
        assert_eq!(p(10.0).slots_in(secs(0.3)), 3);
        assert_eq!(p(10.0).slots_in(secs(0.35)), 4);
        assert_eq!(p(0.5).slots_in(secs(1.0)), 1);
        assert_eq!(p(30.0).slots_in(Duration::ZERO), 0);
        assert_eq!(
            Pacer::new(Instant::now(), 50.0, Length::Duration(secs(2.0))).end,
            Some(100)
        );
    }

    #[test]
    fn a_pacer_behind_drops_passed_slots_and_issues_the_newest() {
        // One slot a second, origin 5.5 s ago: slots 0..=5 have passed, slot 6 has not. (Half a
        // second of slack either way: nothing here depends on how fast the test runs.)
        let Some(origin) = Instant::now().checked_sub(Duration::from_millis(5500)) else {
            return; // a clock younger than 5.5 s
        };
        let mut p = Pacer::new(origin, 1.0, Length::Iterations(1));
        let issue = p.issue(false).expect("no end");
        assert!(!issue.waited && issue.slot == origin + Duration::from_secs(5));
        assert!(issue.start >= issue.slot);
        assert_eq!((p.dropped, p.next), (5, 6));
        // With 3 slots in the run, it is over, only the run's slots counted as dropped...
        let mut p = Pacer::new(origin, 1.0, Length::Duration(Duration::from_secs(3)));
        assert!(p.issue(false).is_none());
        assert_eq!(p.dropped, 3);
        // ... unless no sample was issued yet: then the newest passed slot is, the rest dropped.
        let mut p = Pacer::new(origin, 1.0, Length::Duration(Duration::from_secs(3)));
        assert!(p.issue(true).is_some());
        assert_eq!((p.dropped, p.next), (5, 6));
        // A slot passed by less than a period is issued late, none dropped.
        let mut p = Pacer::new(origin, 1.0, Length::Iterations(1));
        p.next = 5;
        let issue = p.issue(false).expect("no end");
        assert!(!issue.waited && issue.slot == origin + Duration::from_secs(5));
        assert_eq!(p.dropped, 0);
        // The continued schedule starts at the next slot.
        let q = p.continued(Length::Iterations(1));
        assert_eq!((q.origin, q.next), (origin + Duration::from_secs(6), 0));
    }
}
