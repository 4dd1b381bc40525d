use super::*;

/// Seven rows of 203 values in [0, 1).
fn rows() -> Vec<Vec<f64>> {
    (0..7)
        .map(|t| {
            (0..203)
                .map(|i| ((i * 37 + t * 11) % 97) as f64 / 97.0)
                .collect()
        })
        .collect()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

crate::kernels::levels_agree! {
    fn symmetric_pass_levels_agree(|level| {
        let rows = rows();
        let pairs: Vec<(f64, &[f64], &[f64])> = (0..3)
            .map(|j| (0.1 * (j + 1) as f64, rows[j].as_slice(), rows[6 - j].as_slice()))
            .collect();
        let mut out = vec![0.0; 203];
        symmetric_pass_at(level, &mut out, 0.4, &rows[3], &pairs).map(|()| bits(&out))
    });
    fn accumulate_levels_agree(|level| {
        let rows = rows();
        let taps: Vec<(f64, &[f64])> =
            rows.iter().enumerate().map(|(t, r)| (0.3 - 0.07 * t as f64, r.as_slice())).collect();
        let mut out = vec![0.0; 203];
        accumulate_at(level, &mut out, &taps).map(|()| bits(&out))
    });
    fn map_slice_levels_agree(|level| {
        let src: Vec<u8> = (0..1000).map(|i| (i * 7 % 256) as u8).collect();
        let mut out = vec![0.0f64; 1000];
        map_slice_at(level, &mut out, &src, &|v: u8| f64::from(v) / 255.0).map(|()| bits(&out))
    });
}

#[test]
fn gaussian_radius_follows_scipy() {
    for (s, t, r) in [
        (0.7, 4.0, 3),
        (1.0, 4.0, 4),
        (1.5, 4.0, 6),
        (3.0, 4.0, 12),
        (6.0, 4.0, 24),
        (2.44, 3.0, 7),
    ] {
        assert_eq!(gaussian_radius(s, t), r, "σ {s}");
    }
    let k = gaussian_kernel1d(1.0, 4.0);
    assert_eq!(k.len(), 9);
    assert!((k.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    // exp(0) / Σ exp(−i²/2), i = −4..4
    let z: f64 = (-4..=4).map(|i: i32| (-(i * i) as f64 / 2.0).exp()).sum();
    assert!((k[4] - 1.0 / z).abs() < 1e-15);
}

#[test]
fn borders_index_like_scipy_and_opencv() {
    let idx = |b| (-4..8).map(|i| border_index(i, 4, b)).collect::<Vec<_>>();
    assert_eq!(idx(Border::Nearest), [0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3]);
    assert_eq!(idx(Border::Reflect), [3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0]);
    assert_eq!(
        idx(Border::Reflect101),
        [2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1]
    );
    assert_eq!(border_index(-5, 1, Border::Reflect101), 0);
    assert_eq!(border_index(7, 1, Border::Reflect), 0);
}

#[test]
fn gaussian_filter_keeps_constants_and_mass() {
    let (w, h) = (5, 3);
    let flat = vec![0.25; w * h * 3];
    for b in [Border::Nearest, Border::Reflect, Border::Reflect101] {
        let out = gaussian_filter(&flat, w, h, 3, 3.0, 4.0, b);
        assert!(out.iter().all(|v| (v - 0.25).abs() < 1e-12));
    }
    // A centred impulse in a large image spreads to the outer product of the 1-D kernel.
    let n = 21;
    let mut img = vec![0.0; n * n];
    img[10 * n + 10] = 1.0;
    let out = gaussian_filter(&img, n, n, 1, 1.0, 4.0, Border::Nearest);
    let k = gaussian_kernel1d(1.0, 4.0);
    assert!((out[(10 + 2) * n + 10 - 1] - k[6] * k[3]).abs() < 1e-15);
    assert!((out.iter().sum::<f64>() - 1.0).abs() < 1e-12);
}

/// FNV-1a over the bit patterns of a slice of f64, in order (a fingerprint of exact values).
fn fingerprint(v: &[f64]) -> u64 {
    v.iter().fold(0xcbf2_9ce4_8422_2325, |h, v| {
        (h ^ v.to_bits()).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn numpy_sum_is_pairwise() {
    // numpy 1.26: np.sum([1, 1e-16 × 15]) = 1.0000000000000016 and np.sum([1, 1e-16 × 299]) =
    // 1.0000000000000289, where a sequential sum stays at 1.
    let mut a = vec![1.0];
    a.extend([1e-16; 15]);
    assert_eq!(numpy_sum(&a), 1.000_000_000_000_001_6);
    a.extend([1e-16; 284]);
    assert_eq!(numpy_sum(&a), 1.000_000_000_000_028_9);
    assert_eq!(numpy_sum(&[1.0, 2.0, 3.0]), 6.0);
    assert_eq!(numpy_sum(&[]), 0.0);
}

#[test]
fn gaussian_filter_follows_scipys_operation_order() {
    // scipy 1.11.4 `correlate1d` along axis 0 then axis 1, with this module's kernels as the
    // weights (scipy's own kernel can differ in the last bit: numpy's SIMD `exp`), gives exactly
    // these values: (2, 2, 0) with 'nearest' on a 9×11×3 image x = (i·37 mod 256)/255, and
    // (1.3, 2.6) with 'reflect', truncate 3, on a 13×17 field f = (i·53 mod 199)/7 − 10.
    let x: Vec<f64> = (0..9 * 11 * 3)
        .map(|i| f64::from(i * 37 % 256) / 255.0)
        .collect();
    let g = gaussian_filter(&x, 11, 9, 3, 2.0, 4.0, Border::Nearest);
    assert_eq!(fingerprint(&g), 0x96ae_beec_4e52_00bd);
    let mut into = vec![0.0; x.len()];
    gaussian_filter_into(&x, &mut into, 11, 9, 3, 2.0, 4.0, Border::Nearest);
    assert_eq!(into, g);
    let u8s: Vec<u8> = (0..9 * 11 * 3).map(|i| (i * 37 % 256) as u8).collect();
    let from_u8 = gaussian_filter_map(
        &u8s,
        (11, 9, 3),
        (2.0, 2.0),
        4.0,
        Border::Nearest,
        |v| f64::from(v) / 255.0,
        |v| v,
    );
    assert_eq!(from_u8, g);
    let f: Vec<f64> = (0..13 * 17)
        .map(|i| f64::from(i * 53 % 199) / 7.0 - 10.0)
        .collect();
    let g2 = gaussian_filter_axes(&f, (17, 13, 1), (1.3, 2.6), 3.0, Border::Reflect);
    assert_eq!(fingerprint(&g2), 0x5412_2d14_e3ab_09d1);
    // The thread count does not matter; σ ≤ 0 on an axis leaves that axis alone.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let g1 = one.install(|| gaussian_filter(&x, 11, 9, 3, 2.0, 4.0, Border::Nearest));
    assert_eq!(g1, g);
    let rows_only = gaussian_filter_axes(&f, (17, 13, 1), (0.0, 2.6), 3.0, Border::Reflect);
    let row0 = gaussian_filter_axes(&f[..17], (17, 1, 1), (0.0, 2.6), 3.0, Border::Reflect);
    assert_eq!(rows_only[..17], row0[..]);
}

#[test]
fn banded_gaussian_equals_a_plain_symmetric_correlation() {
    // Frames wider than a strip, taller than a band, with vector tails: the banded, stripped,
    // vectorised filter equals scipy's symmetric correlation written as plain loops.
    let plain = |data: &[f64], (w, h, ch): (usize, usize, usize), k: &[f64], b: Border| {
        let r = k.len() / 2;
        let pass = |src: &[f64], vertical: bool| -> Vec<f64> {
            let mut out = vec![0.0; src.len()];
            for y in 0..h {
                for x in 0..w {
                    for c in 0..ch {
                        let at = |d: isize| {
                            let (yy, xx) = if vertical {
                                (border_index(y as isize + d, h, b), x)
                            } else {
                                (y, border_index(x as isize + d, w, b))
                            };
                            src[(yy * w + xx) * ch + c]
                        };
                        let mut acc = at(0) * k[r];
                        for j in (1..=r as isize).rev() {
                            acc += (at(-j) + at(j)) * k[r + j as usize];
                        }
                        out[(y * w + x) * ch + c] = acc;
                    }
                }
            }
            out
        };
        pass(&pass(data, true), false)
    };
    // The last two have radii 24 and 29: strips of 96 elements (separable_strip), several per
    // row with a partial last one.
    for (w, h, ch, sigma) in [
        (203, 70, 3, 1.5),
        (1, 9, 1, 2.0),
        (600, 5, 1, 6.0),
        (130, 70, 2, 7.2),
    ] {
        let data: Vec<f64> = noise_image(w, h, ch, 7)
            .into_iter()
            .map(|v| f64::from(v) / 255.0)
            .collect();
        for b in [Border::Nearest, Border::Reflect, Border::Reflect101] {
            let k = gaussian_kernel1d(sigma, 4.0);
            let want = plain(&data, (w, h, ch), &k, b);
            assert_eq!(
                gaussian_filter(&data, w, h, ch, sigma, 4.0, b),
                want,
                "{w}×{h}"
            );
        }
    }
}

#[test]
fn floor8_clip_equals_floor8_unit() {
    let mut v: Vec<f64> = (-300..1600).map(|i| f64::from(i) / 1024.0).collect();
    v.extend((0..=255).map(|k| f64::from(k) / 255.0));
    v.extend((0..=255).map(|k| f64::from(k) / 255.0 - 1e-17));
    v.extend([
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.0 - 1e-16,
        -0.0,
        5e-324,
        f64::MAX,
    ]);
    for x in v {
        assert_eq!(floor8_clip(x), crate::kernels::lanes::floor8_unit(x), "{x}");
        let y = x as f32;
        assert_eq!(floor8_clip_f32(y), (y.clamp(0.0, 1.0) * 255.0) as u8, "{y}");
    }
}

/// Random-ish u8 image of `w × h × ch`.
fn noise_image(w: usize, h: usize, ch: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    (0..w * h * ch)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (s >> 56) as u8
        })
        .collect()
}

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

#[test]
fn opencv_gaussian_kernel_is_symmetric_and_normalised() {
    let k = opencv_gaussian_kernel(3, 0.5);
    let e = (-2.0f64).exp();
    assert!((k[1] - 1.0 / (1.0 + 2.0 * e)).abs() < 1e-15);
    assert_eq!(k[0], k[2]);
}

#[test]
fn motion_kernel_taps_and_offsets() {
    // Angle 0: taps along +x, dx = ceil(i − 0.5) = i, dy = 0.
    let t = motion_kernel(10, 3.0, 0.0, 224, 224);
    assert_eq!(t.len(), 21);
    assert!(
        t.iter()
            .enumerate()
            .all(|(i, &(_, dx, dy))| dx == i as isize && dy == 0)
    );
    let s: f64 = t.iter().map(|t| t.0).sum();
    assert!((s - 1.0).abs() < 1e-12);
    // One-sided: weights decrease from the pixel itself; ratio k1/k0 = exp(−1/18).
    assert!((t[1].0 / t[0].0 - (-1.0f64 / 18.0).exp()).abs() < 1e-12);
    // 45°: dx = dy = ceil(i·0.7071 − 0.5): 0, 1, 1, 2, 3, 4, 4.
    let t = motion_kernel(3, 2.0, 45.0, 100, 100);
    let d: Vec<(isize, isize)> = t.iter().map(|t| (t.1, t.2)).collect();
    assert_eq!(d, [(0, 0), (1, 1), (1, 1), (2, 2), (3, 3), (4, 4), (4, 4)]);
    // −30°: dx = ceil(i·0.866 − 0.5), dy = ceil(−i·0.5 − 0.5).
    let t = motion_kernel(2, 2.0, -30.0, 100, 100);
    let d: Vec<(isize, isize)> = t.iter().map(|t| (t.1, t.2)).collect();
    assert_eq!(d, [(0, 0), (1, 0), (2, -1), (3, -1), (3, -2)]);
    // Small images stop early (no renormalisation).
    let t = motion_kernel(10, 3.0, 0.0, 5, 5);
    assert_eq!(t.len(), 5);
}

#[test]
fn clipped_zoom_sizes_follow_the_reference() {
    // The example of docs/imagenet-c.md#h3-clipped-zoom: z = 1.03 on 224 → crop 218 at 3,
    // zoomed to 225.
    assert_eq!(clipped_zoom_axis(224, 1.03), (218, 3, 225));
    assert_eq!(clipped_zoom_axis(1, 4.5), (1, 0, 4));
    // Identity zoom returns the image.
    let img: Vec<f32> = (0..12 * 5 * 3).map(|v| v as f32).collect();
    assert_eq!(clipped_zoom(&img, (12, 5, 3), 1.0, (12, 5)), img);
    // z = 2 on 4 samples: crop [1, 3), zoomed to 4 samples at 0, 1/3, 2/3, 1.
    let row = [0f32, 3.0, 6.0, 9.0];
    let z = clipped_zoom(&row, (4, 1, 1), 2.0, (4, 1));
    let want = [3.0, 4.0, 5.0, 6.0];
    assert!(
        z.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-5),
        "{z:?}"
    );
}

#[test]
fn filter2d_and_taps_shift_with_replication() {
    let img: Vec<f64> = (0..4).map(f64::from).collect();
    let out = filter_taps(&img, (4, 1, 1), &[(1.0, 2, 0)], Border::Nearest);
    assert_eq!(out, [2.0, 3.0, 3.0, 3.0]);
    let out = filter_taps(&img, (4, 1, 1), &[(1.0, -1, 0)], Border::Nearest);
    assert_eq!(out, [0.0, 0.0, 1.0, 2.0]);
    let k = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
    let out = filter2d(&img, (4, 1, 1), &k, 3, Border::Reflect101);
    assert_eq!(out, [1.0, 2.0, 3.0, 2.0]);
}

#[test]
fn gray_weights() {
    assert!((gray(1.0, 1.0, 1.0) - 1.0).abs() < 1e-6);
    assert!((gray(0.0, 1.0, 0.0) - 0.587).abs() < 1e-7);
}
