//! Helpers shared by the benches (`background.rs`, `objects.rs`, `corruptions.rs`, `gpu.rs`): their
//! opt-in CPU-time mode (`ROBUSTREAM_BENCH_CPU=1`) and the corruption benches' two frames.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use image::RgbImage;
use robustream::kernels::resample::{Filter, Resampler};
use robustream::model::ModelDesc;
use robustream::view::ModelView;

/// This thread's CPU time in nanoseconds (`/proc/thread-self/schedstat`, Linux), `None` elsewhere.
pub fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Whether the CPU-time mode is asked for and available here.
pub fn cpu_mode() -> bool {
    std::env::var_os("ROBUSTREAM_BENCH_CPU").is_some() && thread_cpu_ns().is_some()
}

/// CPU milliseconds per call of `work` on this thread: the median of five batch means, each batch
/// at least 3 calls and 0.4 s long so the scheduler's accounting tick is negligible.
pub fn cpu_ms_per_call(mut work: impl FnMut()) -> f64 {
    let mut per_run: Vec<f64> = (0..5)
        .map(|_| {
            let (t, c) = (Instant::now(), thread_cpu_ns().unwrap_or(0));
            let mut runs = 0u32;
            while runs < 3 || t.elapsed() < Duration::from_millis(400) {
                work();
                runs += 1;
            }
            (thread_cpu_ns().unwrap_or(0) - c) as f64 / f64::from(runs)
        })
        .collect();
    per_run.sort_by(f64::total_cmp);
    per_run[2] / 1e6
}

/// The corruption benches' two frames, (label, image): the 224² model view of coffee.png and
/// coffee.png resized to 1280×720 (`ROBUSTREAM_BENCH_FRAMES=DIR` also writes them as PNG).
#[allow(dead_code)] // not every bench that includes this module uses it
pub fn frames() -> Vec<(&'static str, RgbImage)> {
    // The asset folders a binary looks in (`assets/` here first: a GPU machine runs the bench
    // binary away from the checkout), then the checkout the bench was built in.
    let assets = robustream::assets::dirs()
        .into_iter()
        .find(|d| d.join("photos/coffee.png").exists())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets"));
    let model = ModelDesc::load(&assets.join("models/efficientnet_lite0.toml"))
        .expect("run bash scripts/assets.sh");
    let photo = image::open(assets.join("photos/coffee.png"))
        .expect("coffee.png (bash scripts/assets.sh)")
        .to_rgb8();
    let view = ModelView::new(&model).image(&photo);
    assert_eq!(view.dimensions(), (224, 224), "the model view is 224²");
    let hd = Resampler::new().resize_rgb(&photo, 1280, 720, Filter::Bilinear);
    if let Some(dir) = std::env::var_os("ROBUSTREAM_BENCH_FRAMES") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("ROBUSTREAM_BENCH_FRAMES: create the folder");
        view.save(dir.join("coffee_224.png"))
            .expect("write coffee_224.png");
        hd.save(dir.join("coffee_1280x720.png"))
            .expect("write coffee_1280x720.png");
    }
    vec![("224", view), ("1280x720", hd)]
}
