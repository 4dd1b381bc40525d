//! Helpers shared by the benches (`background.rs`, `objects.rs`, `corruptions.rs`): their opt-in CPU-time
//! mode (`ROBUSTREAM_BENCH_CPU=1`).

use std::time::{Duration, Instant};

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
