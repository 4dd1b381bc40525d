//! Background scenarios (IN-9, docs/in9.md#how-the-variations-are-built; XIMAGENET-12,
//! docs/ximagenet.md#scenarios) on procedural scenes with exact masks
//! (`robustream::scene::random_scene`: one object of 30–60 % of the shorter side on a textured
//! background), every `background/*` key on two frames:
//!
//! * `background_224/<name>`: a 224×224 scene (the model-input stage);
//! * `background_1280x720/<name>`: a 1280×720 scene (the native stage of a 720p stream).
//!
//! The pool scenarios (`mixed_*`, `random_bg_*`) draw from a pool of six earlier scenes of the same
//! size in three classes (their `only_bg_t` backgrounds are made during warm-up, once, as in a run).
//!
//! Single thread (the goal is ≤ 5 ms per scenario at 720p on one core): `RAYON_NUM_THREADS=1 cargo
//! bench --bench background`; the thread count is printed first. Filters select a part:
//! `cargo bench --bench background -- background_1280x720/blur`. Defaults are short (10 samples, 0.5 s
//! warm-up, 1 s measurement); criterion's flags override them. `cargo test --benches` runs every
//! benchmark once.
//!
//! With `ROBUSTREAM_BENCH_CPU=1` each key's single-thread **CPU** time per variant is printed first
//! (as `benches/objects.rs` does): on a shared machine wall-clock samples include time spent waiting
//! for a core, CPU time does not.

use std::sync::Arc;
use std::time::Duration;

mod common;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use robustream::frame::{Frame, Regions, Truth};
use robustream::rng::RngKey;
use robustream::scenario::background::{IN9, XIMAGENET12, build, pool_background};
use robustream::scenario::pool::{BackgroundMaker, BackgroundPool};
use robustream::scenario::{PoolView, ScenarioInput};
use robustream::scene::{Scene, random_scene};

/// A pool of six earlier scenes of `width × height`, classes 0, 1, 2.
fn pool(width: u32, height: u32) -> Arc<PoolView> {
    let maker: Arc<BackgroundMaker> =
        Arc::new(|img, r: &Regions| pool_background(img, r.mask.as_ref(), &r.boxes));
    let mut pool = BackgroundPool::new(8, 0, maker);
    for i in 0..6u64 {
        let s = random_scene(width, height, 100 + i);
        pool.offer(&Frame {
            truth: Some(Truth((i % 3) as usize)),
            regions: Some(Regions {
                mask: Some(s.mask),
                boxes: s.boxes,
            }),
            ..Frame::new(format!("pool{i}"), i, s.image)
        });
    }
    pool.view()
}

/// Every `background/*` key.
fn keys() -> Vec<String> {
    IN9.iter()
        .chain(XIMAGENET12)
        .map(|(leaf, _)| format!("background/{leaf}"))
        .collect()
}

/// With `ROBUSTREAM_BENCH_CPU=1`: each key's CPU time per variant in a one-thread rayon pool (all the
/// work on the measuring thread), the median of five batch means of at least 0.4 s each.
fn cpu_times() {
    if !common::cpu_mode() {
        return;
    }
    let threads = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    threads.install(|| {
        for (label, w, h) in [("224", 224, 224), ("1280x720", 1280, 720)] {
            let scene: Scene = random_scene(w, h, 7);
            let view = pool(w, h);
            for key in keys() {
                let s = build(&key).expect("listed key");
                let input = ScenarioInput::new(&scene.image)
                    .with_mask(Some(&scene.mask))
                    .with_boxes(&scene.boxes)
                    .with_truth(Some(Truth(1)))
                    .with_pool(Some(&view));
                let ms = common::cpu_ms_per_call(|| drop(s.apply(&input, RngKey(3))));
                println!("cpu {label:>8} {key:28} {ms:8.3} ms (1 thread, median of 5 batch means)");
            }
        }
    });
}

fn all(c: &mut Criterion) {
    cpu_times();
    bench(c);
}

fn bench(c: &mut Criterion) {
    eprintln!(
        "background bench: {} rayon thread(s)",
        rayon::current_num_threads()
    );
    let keys = keys();
    for (label, w, h) in [("224", 224, 224), ("1280x720", 1280, 720)] {
        let scene: Scene = random_scene(w, h, 7);
        let view = pool(w, h);
        let mut g = c.benchmark_group(format!("background_{label}"));
        for key in &keys {
            let s = build(key).expect("listed key");
            let input = ScenarioInput::new(&scene.image)
                .with_mask(Some(&scene.mask))
                .with_boxes(&scene.boxes)
                .with_truth(Some(Truth(1)))
                .with_pool(Some(&view));
            let leaf = key.trim_start_matches("background/");
            // Fail loudly rather than time an error path.
            s.apply(&input, RngKey(3))
                .unwrap_or_else(|e| panic!("{key} on the {label} scene: {e}"));
            g.bench_with_input(BenchmarkId::from_parameter(leaf), &input, |b, input| {
                b.iter(|| s.apply(input, RngKey(3)))
            });
        }
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1));
    targets = all
}
criterion_main!(benches);
