//! Preprocessing kernels on a real photo: the model view (Pillow-exact Resize(256) + CenterCrop(224))
//! and normalisation into the input tensor, plus every implemented corruption at 224².

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use robustream::engine::ModelDesc;
use robustream::preprocess::{ModelView, Normalizer};
use robustream::scenario::RngKey;
use robustream::scenario::corruption::{CORRUPTIONS, Corruption, SEVERITIES};

fn bench(c: &mut Criterion) {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    let model = ModelDesc::load(&assets.join("models/efficientnet_lite0.toml"))
        .expect("run bash scripts/assets.sh");
    let photo = image::open(assets.join("photos/coffee.png"))
        .expect("coffee.png")
        .to_rgb8();
    let mut view = ModelView::new(&model);
    let norm = Normalizer::new(&model);
    let crop = view.image(&photo);
    let mut tensor = vec![0f32; model.input_len()];

    let mut g = c.benchmark_group("preprocess");
    g.bench_function("model_view_600x400", |b| b.iter(|| view.image(&photo)));
    g.bench_function("normalize_224", |b| {
        b.iter(|| norm.write(&crop, &mut tensor))
    });
    g.bench_function("tensor_224", |b| b.iter(|| norm.tensor(&crop)));
    g.finish();

    // Every implemented corruption at severity 3 on the 224² model view (ImageNet-C's own frame).
    let mut g = c.benchmark_group("corruption_224");
    for (name, _) in CORRUPTIONS {
        let cor = Corruption::new(name, 3).expect("listed");
        g.bench_function(*name, |b| b.iter(|| cor.corrupt(&crop, RngKey(7))));
    }
    g.finish();

    // The whole 19 × 5 sweep on one frame, as a stream evaluation does per frame: the 224² model view,
    // and the photo resized to 1280×720 (the peer: imagecorruptions 2.96 s and 62.5 s, single thread).
    let mut resampler = robustream::resample::Resampler::new();
    let hd = resampler.resize_rgb(&photo, 1280, 720, robustream::resample::Filter::Bilinear);
    let all: Vec<Corruption> = CORRUPTIONS
        .iter()
        .flat_map(|(n, _)| SEVERITIES.map(move |s| Corruption::new(n, s).expect("listed")))
        .collect();
    let mut g = c.benchmark_group("sweep_19x5");
    g.sample_size(10);
    for (label, frame) in [("224", &crop), ("1280x720", &hd)] {
        g.bench_function(label, |b| {
            b.iter(|| {
                all.iter()
                    .map(|c| c.corrupt(frame, RngKey(7)).as_raw()[0])
                    .fold(0u8, u8::wrapping_add)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
