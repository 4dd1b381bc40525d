//! ImageNet-C corruption kernels (docs/imagenet-c.md#the-19-corruptions) on a real photo, every
//! corruption × severity on two frames, plus the whole 19 × 5 sweep per frame (what a stream
//! evaluation does per frame):
//!
//! * `corruption_224/<name>/<severity>`: the 224² model view of assets/photos/coffee.png (Pillow-exact
//!   Resize(256, bilinear) + CenterCrop(224), ImageNet-C's own frame);
//! * `corruption_1280x720/<name>/<severity>`: coffee.png resized to 1280×720 (Pillow-exact bilinear);
//! * `sweep_19x5/224` and `sweep_19x5/1280x720`: all 95 corruption × severity calls on one frame.
//!
//! The peers (imagecorruptions, corrupt-tta, albumentations) are timed on the same frames by
//! `benches/peers.py`; `benches/compare.sh` runs both and prints the ratios (BENCHMARKS.md).
//!
//! Criterion filters select a part: `cargo bench --bench corruptions -- corruption_224/fog/` or
//! `-- 'corruption_1280x720/(fog|frost)/'`. Single thread: `RAYON_NUM_THREADS=1 cargo bench ...` (the
//! kernels' only parallelism is rayon's global pool; the thread count is printed first). Defaults are
//! short (10 samples, 0.5 s warm-up, 1 s measurement; flat sampling for the 720p and sweep groups) so
//! the whole bench takes minutes; criterion's `--sample-size`, `--warm-up-time` and
//! `--measurement-time` override them. `ROBUSTREAM_BENCH_FRAMES=DIR` also writes the two frames as PNG
//! into DIR (`coffee_224.png`, `coffee_1280x720.png`) so the peer script can check it times the same
//! pixels. `cargo test --benches` runs every benchmark once (the smoke run of scripts/test.sh).
//!
//! With `ROBUSTREAM_BENCH_CPU=1` each variant's single-thread **CPU** time is printed first (as
//! `benches/background.rs` does): on a shared machine wall-clock samples include time spent waiting
//! for a core, CPU time does not. Any other value selects the variants whose `<frame>/<name>/<severity>`
//! contains it, e.g. `ROBUSTREAM_BENCH_CPU=224/spatter/` (then add a criterion filter that matches
//! nothing, such as `-- none`, to skip the wall-clock part).

use std::time::Duration;

mod common;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use image::RgbImage;
use robustream::key::{CORRUPTIONS, SEVERITIES};
use robustream::rng::RngKey;
use robustream::scenario::corruption::Corruption;

/// With `ROBUSTREAM_BENCH_CPU` set: each selected variant's CPU time per call in a one-thread rayon
/// pool (all the work on the measuring thread), the median of five batch means of at least 0.4 s.
fn cpu_times(frames: &[(&str, RgbImage)], all: &[Corruption]) {
    if !common::cpu_mode() {
        return;
    }
    let filter = std::env::var("ROBUSTREAM_BENCH_CPU").unwrap_or_default();
    let threads = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    threads.install(|| {
        for (label, frame) in frames {
            for cor in all {
                let (name, sev) = split_key(cor);
                let id = format!("{label}/{name}/{sev}");
                if filter != "1" && !id.contains(&filter) {
                    continue;
                }
                let ms = common::cpu_ms_per_call(|| drop(cor.corrupt(frame, RngKey(7))));
                println!("cpu {id:32} {ms:8.4} ms (1 thread, median of 5 batch means)");
            }
        }
    });
}

fn bench(c: &mut Criterion) {
    eprintln!(
        "corruptions bench: {} rayon thread(s)",
        rayon::current_num_threads()
    );
    let frames = common::frames();
    let all: Vec<Corruption> = CORRUPTIONS
        .iter()
        .flat_map(|(n, _)| SEVERITIES.map(move |s| Corruption::new(n, s).expect("listed")))
        .collect();
    cpu_times(&frames, &all);

    for (label, frame) in &frames {
        let mut g = c.benchmark_group(format!("corruption_{label}"));
        if *label != "224" {
            g.sampling_mode(SamplingMode::Flat);
        }
        for cor in &all {
            let (name, sev) = split_key(cor);
            g.bench_with_input(BenchmarkId::new(name, sev), frame, |b, f| {
                b.iter(|| cor.corrupt(f, RngKey(7)))
            });
        }
        g.finish();
    }

    let mut g = c.benchmark_group("sweep_19x5");
    g.sampling_mode(SamplingMode::Flat);
    for (label, frame) in &frames {
        g.bench_function(*label, |b| {
            b.iter(|| {
                all.iter()
                    .map(|c| c.corrupt(frame, RngKey(7)).as_raw()[0])
                    .fold(0u8, u8::wrapping_add)
            })
        });
    }
    g.finish();
}

/// (`name`, severity) from a corruption's scenario key `corruption/<name>/<severity>`.
fn split_key(c: &Corruption) -> (&str, &str) {
    use robustream::scenario::Scenario;
    let mut parts = c.key().rsplitn(3, '/');
    let sev = parts.next().expect("severity");
    let name = parts.next().expect("name");
    (name, sev)
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
