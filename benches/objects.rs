//! The object scenarios (Hard ImageNet ablations, RFS region noise, Corner Cases placements;
//! docs/hard-imagenet.md#ablations, docs/hard-imagenet.md#region-noise, docs/corner-cases.md) on a
//! real photo with a hand-drawn mask (assets/photos/quokka.jpg and quokka_mask.png, the object
//! covering about half the frame):
//!
//! * `objects_224/<key>`: the 224² model view of the photo and its mask (what a run evaluates by
//!   default);
//! * `objects_1280x720/<key>`: the photo and mask resized to 1280×720 (Pillow-exact bilinear for the
//!   photo, nearest for the mask), the `native` stage of a 720p stream.
//!
//! The object box is the mask's tight box; `placement/other/...` draws from a pool of three earlier
//! frames of another class (their backgrounds are made before timing, as in a warm stream).
//!
//! Single thread (the goal is ≤ 5 ms per 720p variant on one core): `RAYON_NUM_THREADS=1 cargo bench
//! --bench objects` (the kernels' only parallelism is rayon's global pool; the thread count is printed
//! first). Filters select a part: `cargo bench --bench objects -- objects_1280x720/region_noise`.
//! Defaults are short (10 samples, 0.5 s warm-up, 1 s measurement). `ROBUSTREAM_BENCH_CPU=1` first
//! prints each key's median single-thread CPU time (steadier than wall time on a shared machine).
//! `cargo test --benches` runs every benchmark once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod common;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use image::{GrayImage, RgbImage};
use robustream::frame::{Frame, Regions, Truth};
use robustream::geometry::tight_box;
use robustream::kernels::resample::{Filter, Resampler, resize_gray_nearest};
use robustream::model::ModelDesc;
use robustream::rng::RngKey;
use robustream::scenario::pool::{BackgroundMaker, BackgroundPool};
use robustream::scenario::{Catalog, ScenarioInput};
use robustream::view::{MaskResize, ModelView};

/// One key per kind of work.
const KEYS: &[&str] = &[
    "ablation/gray",
    "ablation/gray_bbox",
    "ablation/tile",
    "region_noise/fg/linf/0.25/t1",
    "region_noise/bg/linf/0.25/t1",
    "region_noise/fg/l2/60/t1",
    "region_noise/bg/l2/60/t1",
    "placement/own-gray/centre/112",
    "placement/own-tile/centre/112",
    "placement/own-tile/top-right/56",
    "placement/other/top-right/112",
    "placement/ar/own-tile/random-corner/112",
];

/// The two benchmark frames with their masks: (label, image, mask).
fn frames() -> Vec<(&'static str, RgbImage, GrayImage)> {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    let model = ModelDesc::load(&assets.join("models/efficientnet_lite0.toml"))
        .expect("run bash scripts/assets.sh");
    let photo = image::open(assets.join("photos/quokka.jpg"))
        .expect("quokka.jpg (bash scripts/assets.sh)")
        .to_rgb8();
    let mask = image::open(assets.join("photos/quokka_mask.png"))
        .expect("quokka_mask.png (bash scripts/assets.sh)")
        .to_luma8();
    let mut view = ModelView::new(&model);
    let (v, vm) = (view.image(&photo), view.mask(&mask, MaskResize::Nearest));
    assert_eq!(v.dimensions(), (224, 224), "the model view is 224²");
    let hd = Resampler::new().resize_rgb(&photo, 1280, 720, Filter::Bilinear);
    let hd_mask = resize_gray_nearest(&mask, 1280, 720);
    vec![("224", v, vm), ("1280x720", hd, hd_mask)]
}

/// A pool holding three earlier frames of class 1 (the benchmark frame is class 0), backgrounds
/// already made: their own pixels, darkened.
fn pool_of(image: &RgbImage) -> Arc<robustream::scenario::PoolView> {
    let maker: Arc<BackgroundMaker> = Arc::new(|img: &RgbImage, _: &Regions| {
        let mut bg = img.clone();
        bg.iter_mut().for_each(|v| *v /= 2);
        Some(bg)
    });
    let mut pool = BackgroundPool::new(8, 0, maker);
    let (w, h) = image.dimensions();
    for i in 0..3 {
        pool.offer(&Frame {
            truth: Some(Truth(1)),
            regions: Some(Regions {
                mask: None,
                boxes: vec![robustream::frame::BBox::new(0, 0, w / 4, h / 4)],
            }),
            ..Frame::new(format!("earlier{i}"), i, image.clone())
        });
    }
    let view = pool.view();
    for e in view.all() {
        e.background();
    }
    view
}

fn bench(c: &mut Criterion) {
    eprintln!(
        "objects bench: {} rayon thread(s)",
        rayon::current_num_threads()
    );
    let catalog = Catalog::builtin();
    for (label, image, mask) in frames() {
        let boxes: Vec<_> = tight_box(&mask).into_iter().collect();
        let pool = pool_of(&image);
        let input = ScenarioInput::new(&image)
            .with_mask(Some(&mask))
            .with_boxes(&boxes)
            .with_truth(Some(Truth(0)))
            .with_pool(Some(&pool));
        let mut g = c.benchmark_group(format!("objects_{label}"));
        for key in KEYS {
            let s = catalog.build(key).expect("listed key");
            let rng = RngKey::new(0, "quokka.jpg", s.rng_key());
            s.apply(&input, rng)
                .unwrap_or_else(|e| panic!("{key} on {label}: {e}"));
            g.bench_with_input(BenchmarkId::from_parameter(key), &input, |b, input| {
                b.iter(|| s.apply(input, rng))
            });
        }
        g.finish();
    }
}

/// With `ROBUSTREAM_BENCH_CPU=1`: each key's single-thread **CPU** time per variant (in a one-thread
/// rayon pool, so that all the work happens on the measuring thread). On a shared machine
/// wall-clock samples include time spent waiting for a core; CPU time does not.
fn cpu_times() {
    if !common::cpu_mode() {
        return;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    let catalog = Catalog::builtin();
    pool.install(|| {
        for (label, image, mask) in frames() {
            let boxes: Vec<_> = tight_box(&mask).into_iter().collect();
            let pool = pool_of(&image);
            let input = ScenarioInput::new(&image)
                .with_mask(Some(&mask))
                .with_boxes(&boxes)
                .with_truth(Some(Truth(0)))
                .with_pool(Some(&pool));
            for key in KEYS {
                let s = catalog.build(key).expect("listed key");
                let rng = RngKey::new(0, "quokka.jpg", s.rng_key());
                let ms = common::cpu_ms_per_call(|| drop(s.apply(&input, rng)));
                println!("cpu {label:>8} {key:44} {ms:8.3} ms (1 thread, median of 5 batch means)");
            }
        }
    });
}

fn all(c: &mut Criterion) {
    cpu_times();
    bench(c);
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
