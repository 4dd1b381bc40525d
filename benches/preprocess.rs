//! Preprocessing kernels on a real photo: the model view (Pillow-exact Resize(256) + CenterCrop(224))
//! and normalisation into the input tensor. The corruption kernels and the 19 × 5 sweep are in
//! `benches/corruptions.rs`.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use robustream::model::ModelDesc;
use robustream::preprocess::Normalizer;
use robustream::view::ModelView;

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
}

criterion_group!(benches, bench);
criterion_main!(benches);
