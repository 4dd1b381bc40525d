//! `[engine] scenarios_on` through the binary with the real model
//! (docs/gpu.md#gpu-resident-scenarios): asking for the GPU where there is none is one line and
//! leaves nothing behind; `auto` without a GPU provider stays on the CPU; on a machine with a CUDA
//! device the GPU-made variants give the CPU run's records where the kernels are exact.

use std::path::{Path, PathBuf};

use crate::util::*;

/// A run config over two demo photos with `scenarios_on = on`.
fn config(dir: &Path, on: &str, scenarios: &[&str]) -> PathBuf {
    let manifest = manifest(dir, &["coffee.png,cup", "chelsea.png,tabby"]);
    let p = dir.join(format!("{on}.toml"));
    let list = scenarios
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ");
    std::fs::write(
        &p,
        format!(
            "scenarios = [{list}]\n[source]\npath = \"{}\"\n[engine]\nscenarios_on = \"{on}\"\n",
            path(&manifest)
        ),
    )
    .unwrap();
    p
}

#[cfg(feature = "gpu")]
fn device_present() -> bool {
    robustream::gpu::cuda::device_count().is_ok_and(|n| n > 0)
}

#[cfg(not(feature = "gpu"))]
fn device_present() -> bool {
    false
}

#[test]
fn asking_for_the_gpu_without_one_is_one_line_and_leaves_no_run_behind() {
    if device_present() {
        eprintln!("skipped: this machine has a CUDA device");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("run");
    let o = run(
        quiet_run(config(d.path(), "gpu", &["corruption/contrast/2"]))
            .arg("--out")
            .arg(&out),
    );
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: [engine] scenarios_on: ")
            && (err.contains("no CUDA driver") || err.contains("no CUDA device")),
        "{err}"
    );
    assert!(
        err.contains("scenarios_on = \"cpu\""),
        "the fix is named: {err}"
    );
    assert!(
        !out.exists(),
        "a run that evaluated nothing leaves no directory"
    );
}

#[test]
fn auto_without_a_gpu_provider_makes_the_variants_on_the_cpu() {
    let d = tempfile::tempdir().unwrap();
    let plan = ["corruption/contrast/2", "corruption/gaussian_noise/3"];
    let (auto, cpu) = (d.path().join("auto"), d.path().join("cpu"));
    for (on, out) in [("auto", &auto), ("cpu", &cpu)] {
        let o = run(quiet_run(config(d.path(), on, &plan)).arg("--out").arg(out));
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let run_block = &summary(&auto)["run"];
    assert_eq!(run_block["scenarios_on"], "cpu", "{run_block}");
    assert!(run_block.get("gpu_scenarios").is_none(), "{run_block}");
    assert_eq!(
        records_without_timings(&auto),
        records_without_timings(&cpu)
    );
}

/// Only where a CUDA device is present (the GPU machine's check); skipped, saying so, elsewhere.
#[test]
fn on_a_gpu_exact_kernels_give_the_cpu_runs_records() {
    if !device_present() {
        eprintln!("skipped: no CUDA device here");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let exact = [
        "corruption/contrast/2",
        "corruption/jpeg_compression/3",
        "corruption/pixelate/4",
    ];
    let mut plan = exact.to_vec();
    plan.push("corruption/gaussian_noise/3");
    let (gpu, cpu) = (d.path().join("gpu"), d.path().join("cpu"));
    for (on, out) in [("gpu", &gpu), ("cpu", &cpu)] {
        let o = run(quiet_run(config(d.path(), on, &plan)).arg("--out").arg(out));
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let run_block = &summary(&gpu)["run"];
    assert_eq!(run_block["scenarios_on"], "gpu", "{run_block}");
    assert_eq!(
        run_block["gpu_scenarios"].as_array().unwrap().len(),
        5,
        "{run_block}"
    );
    assert_eq!(
        run_block["cpu_fallback"],
        serde_json::json!([]),
        "{run_block}"
    );
    let (g, c) = (records_without_timings(&gpu), records_without_timings(&cpu));
    assert_eq!(g.len(), c.len());
    for (a, b) in g.iter().zip(&c) {
        if a["scenario"] == "clean" || exact.iter().any(|k| a["scenario"] == *k) {
            assert_eq!(a, b, "the GPU's bytes are the CPU's here");
        }
    }
}
