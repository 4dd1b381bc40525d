//! Evaluator throughput vs the bare engine, on the real demo model and photos.
//!
//! * `demo_clean/bare_engine`: ONNX Runtime alone on tensors prepared in advance (the ceiling), in
//!   batches of 8 at the engine's fixed batch sizes.
//! * `demo_clean/evaluator_clean`: the whole pipeline (resize, crop, normalise into batch buffers,
//!   infer, decode, records in source order) on the same frames, pre-decoded, plan `clean` only.
//! * `imagenet_c_all/bare_engine` and `imagenet_c_all/evaluator`: the same on the heavy plan (the 95
//!   ImageNet-C variants + clean of each photo, corrupted on the workers): throughput in images /
//!   variants per second.
//!
//! * `host_ceiling/clean` and `host_ceiling/imagenet_c_all`: the same evaluator on a classifier that
//!   costs next to nothing (`tests/fixtures/engine/null_classifier.onnx`,
//!   `scripts/make_null_classifier.py`): the rate the pipeline's host side (decode-free frames,
//!   model view, scenarios, normalisation into batch buffers, decoding, ordering) can feed an engine
//!   at on these cores — what a GPU engine would see.
//!
//! All use one engine session (`SharedEngine`, as a run does), intra-op threads
//! `ROBUSTREAM_BENCH_THREADS` (default 2), batch 8 and the default workers (one per core;
//! `ROBUSTREAM_BENCH_WORKERS` to change). The goals: evaluator ≥ 90 % of the bare engine, and on the
//! heavy plan ≥ 90 % of the cores busy: each evaluator group prints the process CPU utilisation of
//! one extra pass (`cpu: …`), which criterion cannot record. Needs `bash scripts/assets.sh`.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use robustream::app::challenge::SharedEngine;
use robustream::app::pipeline::{self, PipelineConfig, PipelineInputs};
use robustream::app::watch::CpuMeter;
use robustream::classmap::ClassMap;
use robustream::engine::onnx::OnnxEngine;
use robustream::engine::{Engine, EngineConfig};
use robustream::frame::Frame;
use robustream::model::ModelDesc;
use robustream::preprocess::Normalizer;
use robustream::scenario::ScenarioStage;
use robustream::scenario::schedule::Spread;
use robustream::scenario::{Catalog, Plan};
use robustream::source::memory::MemorySource;
use robustream::view::ModelView;

const BATCH: usize = 8;
const COPIES: usize = 16; // 9 photos × 16 = 144 frames per iteration (18 batches: steady state, not start-up)

fn frames(assets: &std::path::Path, copies: usize) -> Vec<Frame> {
    let csv = std::fs::read_to_string(assets.join("photos/demo.csv"))
        .expect("run bash scripts/assets.sh");
    let names: Vec<String> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .map(str::to_string)
        .collect();
    let mut out = Vec::new();
    for copy in 0..copies {
        for name in &names {
            let image = image::open(assets.join("photos").join(name))
                .expect("demo photo")
                .to_rgb8();
            out.push(Frame::new(format!("{copy}/{name}"), 0, image));
        }
    }
    out
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(default)
}

/// One pass of the pipeline over `frames`; returns the variants evaluated.
fn evaluate(
    frames: Vec<Frame>,
    plan: &Plan,
    model: &ModelDesc,
    engine: &SharedEngine,
    workers: usize,
) -> usize {
    let n = frames.len();
    // The run's thumbnail keeper for report.html, as `robustream run` has it.
    let flips = std::sync::Arc::new(robustream::report::flips::FlipKeeper::new(
        model.labels.names().to_vec(),
        model.labels.names().to_vec(),
    ));
    let inputs = PipelineInputs {
        source: Box::new(MemorySource::new(frames)),
        plan: plan.clone(),
        schedule: Spread::default().schedule(plan.len(), 0),
        model: model.clone(),
        engine: Box::new(engine.clone()),
        class_map: ClassMap::identity(&model.labels),
        seed: 0,
        stage: ScenarioStage::ModelInput,
        config: PipelineConfig {
            workers,
            max_batch: BATCH,
            ..PipelineConfig::default()
        },
        strict: false,
        limit: None,
        flips: Some(flips.clone()),
        gpu: None,
        select: None,
        engine_thread_warmup: 0,
    };
    let mut variants = 0;
    let out = pipeline::run(inputs, &AtomicBool::new(false), &mut |e| {
        if let pipeline::Event::Frame(r) = e {
            flips.settle(&r);
            variants += r.len();
        }
        Ok(())
    });
    assert_eq!(out.frames_read as usize, n);
    variants
}

fn bench(c: &mut Criterion) {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    let model = ModelDesc::load(&assets.join("models/efficientnet_lite0.toml"))
        .expect("run bash scripts/assets.sh");
    let config = EngineConfig {
        threads: env_usize("ROBUSTREAM_BENCH_THREADS", 2),
        library: Some(assets.join("lib/libonnxruntime.so")),
        spin: std::env::var("ROBUSTREAM_BENCH_SPIN").is_ok_and(|v| v == "1"),
        batch_sizes: Some(vec![1, 2, 4, BATCH]),
        ..EngineConfig::default()
    };
    let workers = env_usize("ROBUSTREAM_BENCH_WORKERS", 0);
    let mut onnx = OnnxEngine::new(&model, &config).expect("engine");
    onnx.warm_up().expect("warm-up");
    let engine = SharedEngine::new(Box::new(onnx));
    let frames = frames(&assets, COPIES);
    let n = frames.len();

    let mut view = ModelView::new(&model);
    let norm = Normalizer::new(&model);
    let per = model.input_len();
    let mut tensors = vec![0f32; n * per];
    for (f, slot) in frames.iter().zip(tensors.chunks_exact_mut(per)) {
        norm.write(&view.image(&f.image), slot);
    }
    let bare = |images: usize| {
        let mut e = engine.clone();
        let mut left = images;
        while left > 0 {
            for chunk in tensors.chunks(BATCH * per) {
                let k = (chunk.len() / per).min(left);
                e.infer(&chunk[..k * per], k).expect("infer");
                left -= k;
                if left == 0 {
                    break;
                }
            }
        }
    };

    let mut g = c.benchmark_group("demo_clean");
    g.sample_size(10).throughput(Throughput::Elements(n as u64));
    g.bench_function("bare_engine", |b| b.iter(|| bare(n)));
    let clean = Plan::from_items::<&str>(&[], &Catalog::builtin()).expect("clean plan");
    // The frames are cloned outside the timed part (they stand for an already-decoded stream).
    g.bench_function("evaluator_clean", |b| {
        b.iter_batched(
            || frames.clone(),
            |frames| evaluate(frames, &clean, &model, &engine, workers),
            BatchSize::LargeInput,
        )
    });
    g.finish();

    // The heavy plan: 96 variants of each of the 9 photos per iteration.
    let photos = self::frames(&assets, 1);
    let heavy = Plan::from_items(&["imagenet-c-all"], &Catalog::builtin()).expect("plan");
    let variants = photos.len() * heavy.len();
    let meter = CpuMeter::start();
    let done = evaluate(photos.clone(), &heavy, &model, &engine, workers);
    assert_eq!(done, variants);
    if let Some(cpu) = meter.read() {
        eprintln!(
            "imagenet_c_all/evaluator: cpu: {:.1} % of {} cores busy ({:.0} variants/s in one pass)",
            cpu.utilisation * 100.0,
            cpu.cores,
            variants as f64 / cpu.wall_s
        );
    }
    let mut g = c.benchmark_group("imagenet_c_all");
    g.sample_size(10)
        .throughput(Throughput::Elements(variants as u64));
    g.bench_function("bare_engine", |b| b.iter(|| bare(variants)));
    g.bench_function("evaluator", |b| {
        b.iter_batched(
            || photos.clone(),
            |frames| evaluate(frames, &heavy, &model, &engine, workers),
            BatchSize::LargeInput,
        )
    });
    g.finish();

    // The host side alone: the same pipeline on a near-free engine.
    let null_model = ModelDesc::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/engine/null_classifier.toml"),
    )
    .expect("null classifier fixture");
    let mut null = OnnxEngine::new(&null_model, &config).expect("null engine");
    null.warm_up().expect("warm-up");
    let null = SharedEngine::new(Box::new(null));
    let mut g = c.benchmark_group("host_ceiling");
    g.sample_size(10).throughput(Throughput::Elements(n as u64));
    g.bench_function("clean", |b| {
        b.iter_batched(
            || frames.clone(),
            |frames| evaluate(frames, &clean, &null_model, &null, workers),
            BatchSize::LargeInput,
        )
    });
    g.throughput(Throughput::Elements(variants as u64));
    g.bench_function("imagenet_c_all", |b| {
        b.iter_batched(
            || photos.clone(),
            |frames| evaluate(frames, &heavy, &null_model, &null, workers),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
