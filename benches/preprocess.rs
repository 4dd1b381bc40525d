//! Preprocessing kernels on a real photo: the model view (Pillow-exact Resize(256) + CenterCrop(224))
//! and normalisation into the input tensor; the HTML report's thumbnail keeper (`FlipKeeper`).
//! The corruption kernels and the 19 × 5 sweep are in `benches/corruptions.rs`.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use robustream::metrics::{Record, Timings};
use robustream::model::ModelDesc;
use robustream::preprocess::Normalizer;
use robustream::report::flips::FlipKeeper;
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
    // The report's thumbnail keeper: what every frame costs (offered by a worker, settled by the
    // collector without entering the kept set), and a frame that enters it (thumbnail and JPEG,
    // on the collector's thread) at the default scenario stage (224²) and the frame stage (1080p).
    let keeper = FlipKeeper::new(Vec::new(), Vec::new());
    let unflipped = [rec("f", "clean", 1), rec("f", "corruption/fog/1", 1)];
    let flipped = [rec("f", "clean", 1), rec("f", "corruption/fog/1", 2)];
    let view = std::sync::Arc::new(crop.clone());
    g.bench_function("flips_per_frame", |b| {
        b.iter(|| {
            keeper.offer("f", view.clone());
            keeper.settle(&unflipped);
        })
    });
    let full = std::sync::Arc::new(image::imageops::resize(
        &photo,
        1920,
        1080,
        image::imageops::FilterType::Triangle,
    ));
    for (name, image) in [("flips_entrant_224", &view), ("flips_entrant_1080p", &full)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let keeper = FlipKeeper::new(Vec::new(), Vec::new());
                keeper.offer("f", image.clone());
                keeper.settle(&flipped);
            })
        });
    }
    g.finish();
    camera_paths(c, &full);
}

/// Camera buffer → RGB at 1080p, as the V4L2 and GenICam sources convert each frame (one call;
/// the kernels split rows over rayon's pool, so `RAYON_NUM_THREADS=1` gives the one-core cost):
/// V4L2's YUYV beside GenICam's Mono8, Mono12, BayerRG8 (bilinear demosaic), BayerRG12p (unpacked,
/// then the same demosaic) and RGB8, each
/// buffer made from the same 1080p picture.
fn camera_paths(c: &mut Criterion, full: &image::RgbImage) {
    let luma: Vec<u8> = full
        .pixels()
        .map(|p| {
            ((u32::from(p.0[0]) * 77 + u32::from(p.0[1]) * 150 + u32::from(p.0[2]) * 29) >> 8) as u8
        })
        .collect();
    let mono12: Vec<u8> = luma
        .iter()
        .flat_map(|&v| (u16::from(v) << 4).to_le_bytes())
        .collect();
    let bayer: Vec<u8> = full
        .enumerate_pixels()
        .map(|(x, y, p)| {
            p.0[match (x & 1, y & 1) {
                (0, 0) => 0,
                (1, 1) => 2,
                _ => 1,
            }]
        })
        .collect();
    let yuyv: Vec<u8> = full
        .as_raw()
        .chunks_exact(6)
        .flat_map(|px| {
            let y = |i: usize| px[i * 3 + 1];
            [y(0), 128, y(1), 128]
        })
        .collect();
    // BayerRG12p: the same mosaic at 12 bits (the low 4 bits 0), two samples in three bytes,
    // least significant bit first.
    let bayer12p: Vec<u8> = bayer
        .chunks_exact(2)
        .flat_map(|s| [s[0] << 4, (s[0] >> 4) | (s[1] << 4), s[1]])
        .collect();
    let cases: [(&str, &str, &[u8]); 6] = [
        ("camera_yuyv_1080p", "YUYV", &yuyv),
        ("camera_mono8_1080p", "Mono8", &luma),
        ("camera_mono12_1080p", "Mono12", &mono12),
        ("camera_bayer_rg8_1080p", "BayerRG8", &bayer),
        ("camera_bayer_rg12p_1080p", "BayerRG12p", &bayer12p),
        ("camera_rgb8_1080p", "RGB8", full.as_raw()),
    ];
    let mut g = c.benchmark_group("camera");
    for (name, format, buf) in cases {
        assert!(robustream::source::convert_camera_buffer(format, buf, 1920, 1080).is_some());
        g.bench_function(name, |b| {
            b.iter(|| robustream::source::convert_camera_buffer(format, buf, 1920, 1080))
        });
    }
    g.finish();
}

/// A record of frame `frame` under `scenario` whose top-1 is class `top`.
fn rec(frame: &str, scenario: &str, top: usize) -> Record {
    Record {
        format: robustream::contract::Format,
        frame: frame.into(),
        seq: None,
        scenario: scenario.into(),
        truth: None,
        pred: top as i64,
        top5: vec![top],
        prob: vec![0.9],
        hit5: None,
        ms: Timings::new(),
        boxes: None,
        groups: Default::default(),
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
