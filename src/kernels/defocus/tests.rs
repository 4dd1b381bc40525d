use super::*;
use crate::kernels::filter::*;
use crate::kernels::test_inputs::noise_image;

#[test]
fn defocus_scratch_left_by_other_calls_does_not_matter() {
    // One thread keeps its buffers across calls: a call after larger and smaller frames and
    // other radii equals the same call on a fresh thread.
    let frames = [(90, 61), (13, 7), (40, 33)];
    let calls = [(10, 0.5), (3, 0.1), (6, 0.5)];
    let run = |(w, h): (usize, usize), (r, a): (usize, f64)| {
        let img = noise_image(w, h, 3, (w + h) as u64);
        defocus_filter(&img, (w, h, 3), r, a, floor8_clip)
    };
    let one = || {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool")
    };
    let reused = one();
    for (k, &f) in frames.iter().enumerate() {
        for (m, &c) in calls.iter().enumerate() {
            let after = reused.install(|| run(f, c));
            let fresh = one().install(|| run(f, c));
            assert!(after == fresh, "frame {k} call {m}");
        }
    }
}

#[test]
fn defocus_filter_equals_the_direct_correlation() {
    // Every severity plus other radii, on frames smaller and larger than the kernel: the
    // decomposition gives the 2-D correlation with the f32 kernel to ~1e−12 of a grey level.
    let lut: [f64; 256] = std::array::from_fn(|v| v as f64 / 255.0);
    for (w, h) in [(1, 1), (2, 3), (5, 40), (37, 23), (64, 70)] {
        let img = noise_image(w, h, 3, (w * h) as u64);
        for (r, a) in [
            (3, 0.1),
            (4, 0.5),
            (6, 0.5),
            (8, 0.5),
            (10, 0.5),
            (0, 0.5),
            (7, 0.5),
            (9, 0.3),
            (13, 0.8),
        ] {
            let (k32, side) = disk_kernel(r, a);
            let k64 = disk_parts(r, a).kernel;
            let scale = k32.iter().sum::<f64>() / k64.iter().sum::<f64>();
            let direct = |k: &[f64]| {
                filter_taps_map(
                    &img,
                    (w, h, 3),
                    &kernel_taps(k, side),
                    Border::Reflect101,
                    |v| lut[usize::from(v)],
                    |v| v,
                )
            };
            let worst = |a: &[f64], b: &[f64]| {
                a.iter()
                    .zip(b)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max)
            };
            let fast = defocus_filter(&img, (w, h, 3), r, a, |v| v);
            // Exact: the correlation with the f64 kernel times the scale.
            let scaled: Vec<f64> = k64.iter().map(|&v| v * scale).collect();
            let e = worst(&fast, &direct(&scaled));
            assert!(e < 1e-12, "{w}×{h} radius {r}: {e:e}");
            // Against the f32 kernel: at most the summed f32 rounding of the taps.
            let bound: f64 = scaled.iter().zip(&k32).map(|(a, b)| (a - b).abs()).sum();
            let e = worst(&fast, &direct(&k32));
            assert!(
                e <= bound + 1e-12 && bound < 2e-7,
                "{w}×{h} radius {r}: {e:e} > {bound:e}"
            );
            let one = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .expect("pool");
            let single = one.install(|| defocus_filter(&img, (w, h, 3), r, a, |v| v));
            assert_eq!(single, fast);
        }
    }
    // A flat white frame: the f32 kernel sums to 1 − 3.7e−9 at severity 1, so the reference
    // gives 254 everywhere, and so does this.
    let white = vec![255u8; 30 * 20 * 3];
    let out = defocus_filter(&white, (30, 20, 3), 3, 0.1, floor8_clip);
    assert!(out.iter().all(|&v| v == 254));
    assert!(defocus_filter(&[], (0, 5, 3), 3, 0.1, floor8_clip).is_empty());
}

#[test]
fn disk_edges_and_runs() {
    // Radius 10: column half-heights of the disk.
    let runs: Vec<Option<usize>> = (-11..=11).map(|o| disk_run(10, o)).collect();
    assert_eq!(runs[0], None);
    assert_eq!(runs[1..12], [0, 4, 6, 7, 8, 8, 9, 9, 9, 9, 10].map(Some));
    // Severity 4 (support ±8, 3 taps): the blur misses one tap beyond each edge and reflects it
    // back one inside.
    let d = disk_parts(8, 0.5);
    let g1 = d.g[2];
    let t = edge_terms(8, &d.g);
    assert_eq!(
        t,
        [(-9, -8, -g1), (-8, -7, g1), (8, 7, g1), (9, 8, -g1)],
        "{t:?}"
    );
    for r in 0..=64 {
        let d = disk_parts(r, 0.5);
        assert!(
            !touches_two_edges(r, &edge_terms(d.half, &d.g)),
            "radius {r}"
        );
    }
}

#[test]
fn disk_kernels_have_the_documented_sums_and_sizes() {
    let want = [
        (3, 0.1, 17, 1.0),
        (4, 0.5, 17, 1.0),
        (6, 0.5, 17, 1.0),
        (8, 0.5, 17, 1.012975),
        (10, 0.5, 21, 1.010786),
    ];
    for (r, a, n, sum) in want {
        let (k, side) = disk_kernel(r, a);
        assert_eq!(side, n);
        assert_eq!(k.len(), n * n);
        let s: f64 = k.iter().sum();
        assert!((s - sum).abs() < 5e-6, "radius {r}: sum {s}");
    }
    // Non-zero taps before the anti-alias blur: 29, 49, 113, 197, 317
    // (docs/imagenet-c.md#defocus_blur).
    for (r, taps) in [(3isize, 29), (4, 49), (6, 113), (8, 197), (10, 317)] {
        let n = (-r..=r)
            .flat_map(|y| (-r..=r).map(move |x| (x, y)))
            .filter(|(x, y)| x * x + y * y <= r * r)
            .count();
        assert_eq!(n, taps);
    }
}
