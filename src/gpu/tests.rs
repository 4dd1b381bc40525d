//! The GPU program checked without a GPU: it compiles with NVRTC for the targets we ship to, and
//! its host build runs every kernel on the CPU, compared with the Rust kernels
//! (docs/gpu.md#gpu-resident-scenarios). Deterministic kernels must agree within the corruption
//! fixtures' tolerance (mean |Δ| ≤ 0.5, max ≤ 2 levels); random ones draw from Philox instead of
//! the CPU's xoshiro streams and must agree in distribution.

mod background;
mod blur;
mod digital;
mod elastic;
mod jpeg;
mod masks;
mod noise;
mod preprocess;
mod weather;

use image::RgbImage;

use super::corruption;
use super::host::HostLauncher;
use super::launch::{Args, DeviceImage, Launcher};
use super::program;
use crate::rng::RngKey;

/// The corruption named `name` (the tests name them as keys do).
pub(super) fn kind(name: &str) -> crate::key::Corruption {
    name.parse().unwrap_or_else(|e| panic!("{e}"))
}

/// Runs corruption `name` at `severity` through the host build of its kernels.
pub(super) fn host_corrupt(name: &str, severity: u8, image: &RgbImage, key: RngKey) -> RgbImage {
    let mut l = HostLauncher::new();
    let (src, dst) = l.images(image);
    assert!(
        corruption::corrupt(&mut l, kind(name), severity, src, dst, key).unwrap(),
        "{name} has no GPU kernels"
    );
    l.image(dst)
}

/// Deterministic kernels: mean |Δ| ≤ 0.5 and max |Δ| ≤ 2 levels (the corruption fixtures'
/// tolerance).
pub(super) fn assert_close(what: &str, gpu: &RgbImage, cpu: &RgbImage) {
    assert_eq!(gpu.dimensions(), cpu.dimensions(), "{what}");
    let (mut sum, mut max) = (0u64, 0u8);
    for (a, b) in gpu.as_raw().iter().zip(cpu.as_raw()) {
        let d = a.abs_diff(*b);
        sum += u64::from(d);
        max = max.max(d);
    }
    let mean = sum as f64 / gpu.as_raw().len().max(1) as f64;
    assert!(
        mean <= 0.5 && max <= 2,
        "{what}: GPU kernels differ from the CPU ones by mean {mean:.3}, max {max} levels"
    );
}

/// Random kernels: for every input value that occurs at least 500 times, the outputs of the two
/// paths at the pixels holding it are the same distribution (two-sample Kolmogorov–Smirnov at
/// α = 1e-6), and their means agree within 5 standard errors.
pub(super) fn assert_same_distribution(
    what: &str,
    input: &RgbImage,
    gpu: &RgbImage,
    cpu: &RgbImage,
) {
    let mut hist = vec![[[0u32; 256]; 2]; 256];
    for ((v, a), b) in input.as_raw().iter().zip(gpu.as_raw()).zip(cpu.as_raw()) {
        hist[usize::from(*v)][0][usize::from(*a)] += 1;
        hist[usize::from(*v)][1][usize::from(*b)] += 1;
    }
    let mut checked = 0;
    for (v, [g, c]) in hist.iter().enumerate() {
        let n = f64::from(g.iter().sum::<u32>());
        if n < 500.0 {
            continue;
        }
        checked += 1;
        let (mut cg, mut cc, mut d) = (0.0, 0.0, 0.0f64);
        let (mut mg, mut mc, mut m2) = (0.0, 0.0, 0.0);
        for k in 0..256 {
            cg += f64::from(g[k]) / n;
            cc += f64::from(c[k]) / n;
            d = d.max((cg - cc).abs());
            mg += k as f64 * f64::from(g[k]) / n;
            mc += k as f64 * f64::from(c[k]) / n;
            m2 += (k as f64).powi(2) * f64::from(c[k]) / n;
        }
        // KS: D > c(α)·sqrt(2/n) rejects at α; c(1e-6) = sqrt(−ln(α/2)/2) ≈ 2.69.
        let limit = 2.69 * (2.0 / n).sqrt();
        assert!(
            d <= limit,
            "{what}: input {v}: KS distance {d:.4} > {limit:.4} (n = {n})"
        );
        let se = ((m2 - mc * mc).max(0.0) * 2.0 / n).sqrt();
        assert!(
            (mg - mc).abs() <= 5.0 * se + 1e-9,
            "{what}: input {v}: mean {mg:.3} on the GPU, {mc:.3} on the CPU (se {se:.3})"
        );
    }
    assert!(checked > 0, "{what}: no input value occurs 500 times");
}

/// A test image: a smooth colour field with texture, every value 0..=255 present.
pub(super) fn test_image(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let r = (x * 255 / (w - 1).max(1)) as u8;
        let g = (y * 255 / (h - 1).max(1)) as u8;
        let b = ((x * 7 + y * 13) % 256) as u8;
        image::Rgb([r, g, b])
    })
}

/// A flat image of one value.
pub(super) fn flat(w: u32, h: u32, v: u8) -> RgbImage {
    RgbImage::from_pixel(w, h, image::Rgb([v, v, v]))
}

#[test]
fn kernel_names_are_unique_and_prefixed() {
    let names = program::kernel_names();
    assert!(names.len() >= 4, "{names:?}");
    let mut seen = std::collections::BTreeSet::new();
    for n in &names {
        assert!(n.starts_with("rs_"), "{n}");
        assert!(seen.insert(n), "{n} twice");
    }
}

#[cfg(feature = "gpu")]
#[test]
fn program_compiles_with_nvrtc_for_every_target() {
    // Turing (the oldest CUDA 13 targets), Jetson Orin, Hopper.
    for arch in ["compute_75", "compute_87", "compute_90"] {
        let ptx = super::nvrtc::compile(arch).unwrap_or_else(|e| panic!("{e}"));
        let target = format!(".target sm_{}", &arch["compute_".len()..]);
        assert!(ptx.contains(&target), "{arch}: no `{target}` in the PTX");
        for name in program::kernel_names() {
            assert!(
                ptx.contains(&format!(".entry {name}(")),
                "{arch}: kernel {name} missing from the PTX"
            );
        }
    }
}

#[test]
fn philox_gives_random123s_known_answers() {
    // Random123 1.14, tests/kat_vectors: philox4x32 10 (counter ×4, key ×2 → output ×4).
    let kat: [[u32; 10]; 3] = [
        [
            0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8,
        ],
        [
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            0x408f276d,
            0x41c83b0e,
            0xa20bc7c6,
            0x6d5451fd,
        ],
        [
            0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
            0x94fdcceb, 0x5001e420, 0x24126ea1,
        ],
    ];
    let input: Vec<u8> = kat
        .iter()
        .flat_map(|r| r[..6].iter().flat_map(|w| w.to_le_bytes()))
        .collect();
    let mut l = HostLauncher::new();
    let src = l.buffer(&input);
    let dst = l.alloc(kat.len() * 16).unwrap();
    let args = Args::buffers(&[l.address(src), l.address(dst)]).ints(&[kat.len() as i64]);
    l.launch("rs_selftest_philox", kat.len() as u64, &args)
        .unwrap();
    let out = l.read(dst);
    for (k, row) in kat.iter().enumerate() {
        let got: Vec<u32> = (0..4)
            .map(|j| {
                u32::from_le_bytes(out[k * 16 + j * 4..k * 16 + j * 4 + 4].try_into().unwrap())
            })
            .collect();
        assert_eq!(got, row[6..], "vector {k}");
    }
}

#[test]
fn float16_conversion_rounds_like_the_half_crate() {
    let mut values: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        65504.0,
        65519.99,
        65520.0,
        1e6,
        -1e6,
        6.1e-5,
        6.0e-8,
        2.9e-8,
        3.0e-8,
        1e-9,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.1,
        0.2,
        1.0 / 3.0,
        -2.117_904,
        2.64,
    ];
    // Every float whose low 13 bits sit at and around the rounding boundary, across the range.
    let mut x: u32 = 0x3000_0000;
    while x < 0x4800_0000 {
        for low in [0x0fff, 0x1000, 0x1001, 0x2fff, 0x3000, 0x3001] {
            values.push(f32::from_bits((x & !0x1fff) | low));
        }
        x += 0x0010_3001;
    }
    let input: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut l = HostLauncher::new();
    let src = l.buffer(&input);
    let dst = l.alloc(values.len() * 2).unwrap();
    let args = Args::buffers(&[l.address(src), l.address(dst)]).ints(&[values.len() as i64]);
    l.launch("rs_selftest_f16", values.len() as u64, &args)
        .unwrap();
    let out = l.read(dst);
    for (k, v) in values.iter().enumerate() {
        let got = u16::from_le_bytes([out[2 * k], out[2 * k + 1]]);
        let want = half::f16::from_f32(*v).to_bits();
        assert_eq!(
            got,
            want,
            "{v:e} ({:#010x}): {got:#06x} vs {want:#06x}",
            v.to_bits()
        );
    }
    // NaN stays NaN.
    let src = l.buffer(&f32::NAN.to_le_bytes());
    let args = Args::buffers(&[l.address(src), l.address(dst)]).ints(&[1]);
    l.launch("rs_selftest_f16", 1, &args).unwrap();
    let out = l.read(dst);
    assert!(half::f16::from_bits(u16::from_le_bytes([out[0], out[1]])).is_nan());
}

#[test]
fn box_muller_deviates_are_standard_normal() {
    let n = 200_000usize;
    let mut l = HostLauncher::new();
    let dst = l.alloc(n * 8).unwrap();
    let args = Args::buffers(&[l.address(dst)]).ints(&[n as i64, 0x1234_5678_9abc_def0]);
    l.launch("rs_selftest_normal", n as u64, &args).unwrap();
    let out = l.read(dst);
    let z: Vec<f64> = out
        .chunks_exact(4)
        .map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap())))
        .collect();
    let m = z.len() as f64;
    let mean = z.iter().sum::<f64>() / m;
    let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / m;
    let kurt = z.iter().map(|v| (v - mean).powi(4)).sum::<f64>() / m / var.powi(2);
    assert!(mean.abs() < 5.0 / m.sqrt(), "mean {mean}");
    assert!((var - 1.0).abs() < 5.0 * (2.0 / m).sqrt(), "variance {var}");
    assert!((kurt - 3.0).abs() < 0.05, "kurtosis {kurt}");
    // The two halves of a pair are uncorrelated.
    let c = z.chunks_exact(2).map(|p| p[0] * p[1]).sum::<f64>() / (m / 2.0);
    assert!(c.abs() < 5.0 / (m / 2.0).sqrt(), "pair correlation {c}");
}

#[test]
fn the_cpu_is_chosen_unless_the_gpu_is_asked_for_or_auto_finds_one() {
    use super::{ScenariosOn, choose};
    assert!(choose(ScenariosOn::Cpu, true, 0).unwrap().is_none());
    assert!(choose(ScenariosOn::Auto, false, 0).unwrap().is_none());
    #[cfg(feature = "gpu")]
    if !super::cuda::driver_present() {
        // No driver: auto stays on the CPU; asking for the GPU is one clear error, no panic.
        assert!(choose(ScenariosOn::Auto, true, 0).unwrap().is_none());
        let e = choose(ScenariosOn::Gpu, true, 0).unwrap_err();
        assert!(matches!(e, super::GpuError::NoDriver), "{e}");
        assert!(e.to_string().contains("scenarios_on = \"cpu\""), "{e}");
    }
    #[cfg(not(feature = "gpu"))]
    assert!(matches!(
        choose(ScenariosOn::Gpu, true, 0),
        Err(super::GpuError::NotBuilt)
    ));
}

#[test]
fn scenarios_on_reads_its_three_values() {
    use super::ScenariosOn;
    #[derive(serde::Deserialize)]
    struct T {
        on: ScenariosOn,
    }
    for (text, want) in [
        ("cpu", ScenariosOn::Cpu),
        ("gpu", ScenariosOn::Gpu),
        ("auto", ScenariosOn::Auto),
    ] {
        let t: T = toml::from_str(&format!("on = \"{text}\"")).unwrap();
        assert_eq!(t.on, want);
    }
    assert!(toml::from_str::<T>("on = \"cuda\"").is_err());
}

/// How far apart two images are, in levels: the mean and largest absolute difference and how many
/// bytes differ at all.
#[cfg(feature = "gpu")]
pub(crate) fn levels_apart(a: &RgbImage, b: &RgbImage) -> (f64, u8, usize) {
    let (mut sum, mut max, mut n) = (0u64, 0u8, 0usize);
    for (x, y) in a.as_raw().iter().zip(b.as_raw()) {
        let d = x.abs_diff(*y);
        sum += u64::from(d);
        max = max.max(d);
        n += usize::from(d > 0);
    }
    (sum as f64 / a.as_raw().len().max(1) as f64, max, n)
}

/// On a machine with a CUDA device: every GPU corruption's kernels on the device against their host
/// build (which the tests above compare with the CPU kernels), within the fixtures' tolerance, and
/// a repeat bit for bit. Every case runs and prints its distance (one GPU session must tell all
/// that differs, not the first); the test fails at the end listing the cases out of tolerance.
/// Skipped, with the reason printed, where there is no device.
#[cfg(feature = "gpu")]
#[test]
fn device_kernels_match_their_host_build() {
    use super::cuda::{CudaLauncher, device_count, open};
    match device_count() {
        Ok(n) if n > 0 => {}
        other => {
            eprintln!("skipped: no CUDA device here ({other:?})");
            return;
        }
    }
    let gpu = open(0).unwrap();
    eprintln!("device: {:?}", gpu.info);
    let mut l = CudaLauncher::new(&gpu).unwrap();
    let mut failed = Vec::new();
    for (w, h) in [(224, 224), (61, 17), (1280, 720)] {
        let img = test_image(w, h);
        for (name, _) in crate::key::CORRUPTIONS {
            if !corruption::on_gpu(kind(name)) {
                continue;
            }
            for s in 1..=5u8 {
                let what = format!("{name}/{s} {w}×{h}");
                let key = RngKey::new(0, "device", &format!("corruption/{name}/{s}"));
                let src = DeviceImage {
                    buf: l.alloc(img.as_raw().len()).unwrap(),
                    width: w,
                    height: h,
                };
                l.upload(src.buf, img.as_raw()).unwrap();
                let mut once = || -> Result<RgbImage, String> {
                    let dst = DeviceImage {
                        buf: l.alloc(img.as_raw().len()).map_err(|e| e.to_string())?,
                        ..src
                    };
                    corruption::corrupt(&mut l, kind(name), s, src, dst, key)
                        .map_err(|e| e.to_string())?;
                    let mut out = vec![0; img.as_raw().len()];
                    l.download(dst.buf, &mut out).map_err(|e| e.to_string())?;
                    RgbImage::from_raw(w, h, out).ok_or_else(|| "short download".to_string())
                };
                let (a, b) = match (once(), once()) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(e), _) | (_, Err(e)) => {
                        eprintln!("{what}: FAILED to run: {e}");
                        failed.push(format!("{what}: {e}"));
                        continue;
                    }
                };
                let host = host_corrupt(name, s, &img, key);
                let (mean, max, n) = levels_apart(&a, &host);
                let repeat = a == b;
                eprintln!(
                    "{what}: device vs host mean {mean:.4} max {max} differing {n}; repeat {}",
                    if repeat { "equal" } else { "DIFFERS" }
                );
                if !repeat || mean > 0.5 || max > 2 {
                    failed.push(format!("{what}: mean {mean:.4} max {max} repeat {repeat}"));
                }
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} cases out of tolerance:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// The whole ImageNet-C plan, stored as JPEG 85 after corrupting (as the released dataset was):
/// every scenario with kernels is made on the GPU path (the others are listed as left to the
/// CPU), and the deterministic ones give the CPU scenario's bytes
/// within the fixtures' tolerance (`clean` is the frame itself).
#[test]
fn imagenet_c_scenarios_run_on_the_gpu_path_with_the_jpeg_round_trip() {
    use super::scenarios::{Made, apply, on_gpu, split};
    use crate::scenario::{Catalog, Plan, ScenarioInput};
    let catalog = Catalog::builtin().with_corruption_jpeg(Some(85));
    let plan = Plan::from_items(&["imagenet-c-all"], &catalog).unwrap();
    let (gpu, cpu) = split(&plan);
    assert_eq!(gpu.len() + cpu.len(), 96);
    for k in &cpu {
        let name = k.split('/').nth(1).unwrap();
        assert!(
            !corruption::on_gpu(kind(name)),
            "{k} has kernels but stayed on the CPU"
        );
    }
    let img = test_image(64, 48);
    let mut l = HostLauncher::new();
    let src = DeviceImage {
        buf: l.buffer(img.as_raw()),
        width: 64,
        height: 48,
    };
    let dst = DeviceImage {
        buf: l.alloc(img.as_raw().len()).unwrap(),
        ..src
    };
    let deterministic = [
        "contrast",
        "brightness",
        "saturate",
        "pixelate",
        "jpeg_compression",
    ];
    for s in plan.scenarios().iter().filter(|s| on_gpu(s.as_ref())) {
        let key = RngKey::new(0, "f", s.key());
        let made = apply(&mut l, s.as_ref(), src, dst, key, Default::default()).unwrap();
        let Some(c) = s.as_corruption() else {
            assert_eq!(made, Made::Source, "{}", s.key());
            continue;
        };
        assert_eq!(made, Made::Destination);
        if deterministic.contains(&c.name())
            || c.name().ends_with("_blur") && c.name() != "glass_blur" && c.name() != "motion_blur"
        {
            let gpu = RgbImage::from_raw(64, 48, l.read(dst.buf)).unwrap();
            let cpu = s.apply(&ScenarioInput::new(&img), key).unwrap();
            assert_close(s.key(), &gpu, &cpu);
        }
    }
}
