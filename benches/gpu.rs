//! The ImageNet-C corruptions' GPU kernels (docs/gpu.md#gpu-resident-scenarios) against the same
//! corruption on one CPU core, side by side in one run, on the frames of `benches/corruptions.rs`
//! (the 224² model view of coffee.png and coffee.png at 1280×720):
//!
//! * `gpu_<frame>/<name>/<severity>`: the frame already on the device, the corruption's launches
//!   and a wait for the stream (what a GPU worker does per variant, without the copies);
//! * `cpu1_<frame>/<name>/3`: the CPU kernel at severity 3 in a one-thread rayon pool;
//! * `upload_<frame>` / `download_<frame>`: one frame's copy to / from the device.
//!
//! Corruptions without GPU kernels are left out. Without a CUDA device (or without the `gpu`
//! feature) the bench says why and measures nothing, so `cargo test --benches` passes anywhere.
//! Defaults are short (10 samples, 0.1 s warm-up, 0.3 s measurement) so the whole bench fits a
//! few minutes of a GPU machine; criterion's flags override them.

#[cfg(feature = "gpu")]
#[allow(dead_code)] // the CPU-time helpers are for the other benches
mod common;

use criterion::{Criterion, criterion_group, criterion_main};

#[cfg(feature = "gpu")]
fn bench(c: &mut Criterion) {
    use criterion::BenchmarkId;
    use robustream::gpu::corruption::{corrupt, on_gpu};
    use robustream::gpu::cuda::{CudaLauncher, device_count, open};
    use robustream::gpu::launch::{DeviceImage, Launcher};
    use robustream::key::{self, SEVERITIES};
    use robustream::rng::RngKey;
    use robustream::scenario::corruption::Corruption;

    match device_count() {
        Ok(n) if n > 0 => {}
        other => {
            eprintln!("gpu bench: skipped, no CUDA device here ({other:?})");
            return;
        }
    }
    let gpu = open(0).expect("the CUDA device opens");
    eprintln!("gpu bench: {:?}", gpu.info);
    let mut l = CudaLauncher::new(&gpu).expect("a stream");
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    for (label, frame) in common::frames() {
        let (w, h) = frame.dimensions();
        let bytes = frame.as_raw().len();
        let src = DeviceImage {
            buf: l.alloc(bytes).expect("device memory"),
            width: w,
            height: h,
        };
        let dst = DeviceImage {
            buf: l.alloc(bytes).expect("device memory"),
            ..src
        };
        l.upload(src.buf, frame.as_raw()).expect("upload");
        let mut g = c.benchmark_group(format!("copies_{label}"));
        g.bench_function("upload", |b| {
            b.iter(|| l.upload(src.buf, frame.as_raw()).expect("upload"))
        });
        let mut out = vec![0u8; bytes];
        g.bench_function("download", |b| {
            b.iter(|| l.download(dst.buf, &mut out).expect("download"))
        });
        g.finish();
        let mut g = c.benchmark_group(format!("gpu_{label}"));
        for kind in key::Corruption::ALL.into_iter().filter(|&k| on_gpu(k)) {
            let name = kind.as_str();
            for s in SEVERITIES {
                let key = RngKey::new(0, "bench", &format!("corruption/{name}/{s}"));
                g.bench_function(BenchmarkId::new(name, s), |b| {
                    b.iter(|| {
                        corrupt(&mut l, kind, s, src, dst, key).expect("launch");
                        l.synchronize().expect("the stream");
                    })
                });
            }
        }
        g.finish();
        let mut g = c.benchmark_group(format!("cpu1_{label}"));
        for kind in key::Corruption::ALL.into_iter().filter(|&k| on_gpu(k)) {
            let name = kind.as_str();
            let cor = Corruption::of(kind, 3).expect("a corruption");
            let key = RngKey::new(0, "bench", &format!("corruption/{name}/3"));
            g.bench_function(BenchmarkId::new(name, 3), |b| {
                one.install(|| b.iter(|| cor.corrupt(&frame, key)))
            });
        }
        g.finish();
    }
}

#[cfg(not(feature = "gpu"))]
fn bench(_: &mut Criterion) {
    eprintln!("gpu bench: skipped, built without the `gpu` feature");
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(std::time::Duration::from_millis(100))
        .measurement_time(std::time::Duration::from_millis(300));
    targets = bench
}
criterion_main!(benches);
