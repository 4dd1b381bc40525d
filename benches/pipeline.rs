//! Evaluator throughput vs the bare engine, on the real demo model and photos.
//!
//! * `bare_engine`: ONNX Runtime alone on tensors prepared in advance (the ceiling).
//! * `evaluator_clean`: the whole pipeline (resize, crop, normalise, batch, infer, decode, metrics
//!   sink) on the same frames, pre-decoded, with the plan `clean` only.
//!
//! Both use the same engine session, intra-op threads (`ROBUSTREAM_BENCH_THREADS`, default 2) and batch
//! size (8). Throughput is in frames; the goal is evaluator ≥ 90 % of bare engine. Needs
//! `bash scripts/assets.sh`.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use robustream::engine::onnx::OnnxEngine;
use robustream::engine::{Engine, EngineConfig, EngineError, ModelDesc};
use robustream::frame::Frame;
use robustream::metrics::classmap::ClassMap;
use robustream::pipeline::{self, PipelineInputs};
use robustream::pipeline::{PipelineConfig, ScenarioStage};
use robustream::preprocess::{ModelView, Normalizer};
use robustream::scenario::{Catalog, Plan};
use robustream::source::memory::MemorySource;

const BATCH: usize = 8;
const COPIES: usize = 16; // 9 photos × 16 = 144 frames per iteration (18 batches: steady state, not start-up)

/// One engine session shared by both benchmarks (a session takes long to create).
struct Shared(Arc<Mutex<OnnxEngine>>);

impl Engine for Shared {
    fn describe(&self) -> String {
        self.0.lock().map(|e| e.describe()).unwrap_or_default()
    }
    fn infer(&mut self, input: &[f32], batch: usize) -> Result<Vec<f32>, EngineError> {
        self.0
            .lock()
            .map_err(|_| EngineError::Run("poisoned".into()))?
            .infer(input, batch)
    }
}

fn frames(assets: &std::path::Path) -> Vec<Frame> {
    let csv = std::fs::read_to_string(assets.join("photos/demo.csv"))
        .expect("run bash scripts/assets.sh");
    let names: Vec<String> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .map(str::to_string)
        .collect();
    let mut out = Vec::new();
    for copy in 0..COPIES {
        for name in &names {
            let image = image::open(assets.join("photos").join(name))
                .expect("demo photo")
                .to_rgb8();
            out.push(Frame::new(format!("{copy}/{name}"), 0, image));
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    let model = ModelDesc::load(&assets.join("models/efficientnet_lite0.toml"))
        .expect("run bash scripts/assets.sh");
    let threads = std::env::var("ROBUSTREAM_BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2);
    let config = EngineConfig {
        threads,
        library: Some(assets.join("lib/libonnxruntime.so")),
        spin: std::env::var("ROBUSTREAM_BENCH_SPIN").is_ok_and(|v| v == "1"),
        ..EngineConfig::default()
    };
    let engine = Arc::new(Mutex::new(
        OnnxEngine::new(&model, &config).expect("engine"),
    ));
    let frames = frames(&assets);
    let n = frames.len();

    let mut view = ModelView::new(&model);
    let norm = Normalizer::new(&model);
    let per = model.input_len();
    let mut tensors = vec![0f32; n * per];
    for (f, slot) in frames.iter().zip(tensors.chunks_exact_mut(per)) {
        norm.write(&view.image(&f.image), slot);
    }

    let mut g = c.benchmark_group("demo_clean");
    g.sample_size(10).throughput(Throughput::Elements(n as u64));
    g.bench_function("bare_engine", |b| {
        let mut e = Shared(engine.clone());
        b.iter(|| {
            for chunk in tensors.chunks(BATCH * per) {
                e.infer(chunk, chunk.len() / per).expect("infer");
            }
        })
    });
    let plan = Plan::from_items::<&str>(&[], &Catalog::builtin()).expect("clean plan");
    g.bench_function("evaluator_clean", |b| {
        // The frames are cloned outside the timed part (they stand for an already-decoded stream).
        b.iter_batched(
            || frames.clone(),
            |frames| {
                let inputs = PipelineInputs {
                    source: Box::new(MemorySource::new(frames)),
                    plan: plan.clone(),
                    model: model.clone(),
                    engine: Box::new(Shared(engine.clone())),
                    class_map: ClassMap::identity(&model.labels),
                    seed: 0,
                    stage: ScenarioStage::ModelInput,
                    config: PipelineConfig {
                        workers: 1,
                        max_batch: BATCH,
                        ..PipelineConfig::default()
                    },
                    strict: false,
                    limit: None,
                };
                let mut frames_done = 0;
                let out = pipeline::run(inputs, &AtomicBool::new(false), &mut |_| {
                    frames_done += 1;
                    Ok(())
                });
                assert_eq!(out.frames_read as usize, n);
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
