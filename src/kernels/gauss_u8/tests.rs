use super::*;

/// The reference path: scipy's f64 filter in [`kernels`].
fn reference(data: &[u8], dims: (usize, usize, usize), sigma: f64, border: Border) -> Vec<u8> {
    crate::kernels::gaussian::gaussian_filter_map(
        data,
        dims,
        (sigma, sigma),
        4.0,
        border,
        |v| f64::from(v) / 255.0,
        floor8_clip,
    )
}

/// A reproducible pseudo-random byte image (xorshift), optionally smoothed so that values vary
/// slowly (photo-like), with flat blocks of constant colour (255, 0, mid-grey) mixed in.
fn test_image(w: usize, h: usize, seed: u64, flat: bool) -> Vec<u8> {
    let mut s = seed | 1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut img: Vec<u8> = (0..w * h * 3).map(|_| (next() >> 24) as u8).collect();
    if flat {
        for y in 0..h {
            for x in 0..w {
                let block = (x / 13 + y / 11) % 4;
                if block != 3 {
                    let v = [255u8, 0, 128][block];
                    img[(y * w + x) * 3..(y * w + x) * 3 + 3].fill(v);
                }
            }
        }
    }
    img
}

#[test]
fn equals_the_f64_filter_on_random_and_flat_images() {
    for (k, &(w, h)) in [(224, 224), (37, 19), (1, 1), (5, 90), (300, 7)]
        .iter()
        .enumerate()
    {
        for flat in [false, true] {
            let img = test_image(w, h, 99 + k as u64, flat);
            for sigma in [1.0, 2.0, 3.0, 4.0, 6.0] {
                let dims = (w, h, 3);
                let want = reference(&img, dims, sigma, Border::Nearest);
                let got = gaussian_blur_u8(&img, dims, (sigma, sigma), 4.0, Border::Nearest);
                assert!(got == want, "{w}×{h} flat {flat} σ {sigma}");
            }
        }
    }
}

#[test]
fn equals_the_f64_filter_with_reflecting_borders_and_one_channel() {
    let img = test_image(61, 47, 5, true);
    for border in [Border::Reflect, Border::Reflect101] {
        for sigma in [0.7, 2.5] {
            let want = reference(&img, (61, 47, 3), sigma, border);
            let got = gaussian_blur_u8(&img, (61, 47, 3), (sigma, sigma), 4.0, border);
            assert!(got == want, "{border:?} σ {sigma}");
        }
    }
    let grey = &img[..61 * 47];
    let want = reference(grey, (61, 47, 1), 3.0, Border::Nearest);
    let got = gaussian_blur_u8(grey, (61, 47, 1), (3.0, 3.0), 4.0, Border::Nearest);
    assert_eq!(got, want);
}

#[test]
fn every_instruction_set_gives_the_same_bytes() {
    let img = test_image(150, 70, 23, true);
    let dims = (150, 70, 3);
    for sigma in [1.0, 4.0] {
        let k = crate::kernels::gaussian::gaussian_kernel1d(sigma, 4.0);
        let bound = Bound::new(&k, &k);
        let want = reference(&img, dims, sigma, Border::Nearest);
        for level in 0..=simd_level() {
            let got = filter(&img, dims, &k, &k, Border::Nearest, bound, level);
            assert!(got == want, "σ {sigma} level {level}");
        }
    }
}

#[test]
fn one_thread_and_several_give_the_same_bytes() {
    // One thread runs the bands in order on the caller's thread, more threads in parallel.
    let img = test_image(97, 130, 31, true);
    let dims = (97, 130, 3);
    let want = reference(&img, dims, 2.0, Border::Nearest);
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let got = pool.install(|| gaussian_blur_u8(&img, dims, (2.0, 2.0), 4.0, Border::Nearest));
        assert!(got == want, "{threads} thread(s)");
    }
}

#[test]
fn the_f64_repair_alone_is_the_reference() {
    // An infinite margin flags every element (every row repaired whole); margins of 0.3 and 0.05
    // flag about 60 % and 10 % of the elements (whole rows and per-element repairs mixed).
    let img = test_image(83, 41, 17, true);
    let dims = (83, 41, 3);
    for sigma in [1.0, 3.0] {
        let k = crate::kernels::gaussian::gaussian_kernel1d(sigma, 4.0);
        let want = reference(&img, dims, sigma, Border::Nearest);
        for abs in [f32::INFINITY, 0.3, 0.05] {
            let bound = Bound { rel: 0.0, abs };
            let got = filter(&img, dims, &k, &k, Border::Nearest, bound, simd_level());
            assert!(got == want, "σ {sigma} margin {abs}");
        }
    }
}

#[test]
fn bytes_flag_exactly_the_uncertain_values() {
    let k = crate::kernels::gaussian::gaussian_kernel1d(3.0, 4.0);
    let bound = Bound::new(&k, &k);
    for level in 0..=simd_level() {
        let run = |line: &[f32]| {
            let (mut out, mut flags) = (vec![0u8; line.len()], vec![0u8; line.len()]);
            // A one-tap kernel of weight 1: ŝ is the value itself.
            let n = horizontal_bytes(level, &mut out, &mut flags, line, (0, 1), &[1.0], bound);
            assert_eq!(n, flags.iter().filter(|&&f| f == 1).count());
            (out, n)
        };
        // Integers 1..=255 are always uncertain; values a hundredth off an integer never are.
        let ints: Vec<f32> = (1..=255u8).map(f32::from).collect();
        assert_eq!(run(&ints).1, 255, "level {level}");
        let off: Vec<f32> = (0..255u8)
            .flat_map(|v| [f32::from(v) + 0.01, f32::from(v) + 0.99])
            .collect();
        let (out, n) = run(&off);
        assert_eq!(n, 0, "level {level}");
        assert!(out.chunks(2).enumerate().all(|(v, p)| p == [v as u8; 2]));
        // 0 and the clamped ends are certain.
        assert_eq!(run(&[0.0, -3.0, 300.0, 255.5]), (vec![0, 0, 255, 255], 0));
    }
}

#[test]
fn observed_f32_error_stays_inside_the_bound() {
    // The f32 result ŝ against the reference's value y (f64 filter, ×255) on random images:
    // |y − ŝ| ≤ κ·ŝ everywhere (the bound is worst-case: the largest ratio is far below 1).
    for sigma in [1.0, 6.0] {
        let k = crate::kernels::gaussian::gaussian_kernel1d(sigma, 4.0);
        let kappa = f64::from(Bound::new(&k, &k).rel);
        let (w, h) = (64, 64);
        let img = test_image(w, h, 7, false);
        let f64s = crate::kernels::gaussian::gaussian_filter_map(
            &img,
            (w, h, 3),
            (sigma, sigma),
            4.0,
            Border::Nearest,
            |v| f64::from(v) / 255.0,
            |v| v * 255.0,
        );
        let mut worst = 0.0f64;
        let hy = half_weights(&k);
        let r = k.len() / 2;
        // f32 filter of the interior pixels, directly from the definition.
        for y in r..h - r {
            for x in r..w - r {
                for c in 0..3 {
                    let at = |yy: usize, xx: usize| f32::from(img[(yy * w + xx) * 3 + c]);
                    let vert = |xx: usize| {
                        let mut acc = at(y, xx) * hy[0];
                        for j in (1..=r).rev() {
                            acc += (at(y - j, xx) + at(y + j, xx)) * hy[j];
                        }
                        acc
                    };
                    let mut acc = vert(x) * hy[0];
                    for j in (1..=r).rev() {
                        acc += (vert(x - j) + vert(x + j)) * hy[j];
                    }
                    let exact = f64s[(y * w + x) * 3 + c];
                    let ratio = (f64::from(acc) - exact).abs() / (kappa * f64::from(acc));
                    worst = worst.max(ratio);
                }
            }
        }
        assert!(worst > 0.0 && worst < 1.0, "σ {sigma}: {worst}");
    }
}

#[test]
fn simd_and_portable_passes_agree_to_rounding() {
    let src: Vec<f32> = (0..400).map(|i| ((i * 37) % 256) as f32).collect();
    let w = half_weights(&crate::kernels::gaussian::gaussian_kernel1d(2.0, 4.0));
    let r = w.len() - 1;
    let n = 400 - 2 * r * 3;
    let (mut a, mut b) = (vec![0.0f32; n], vec![0.0f32; n]);
    symmetric(simd_level(), &mut a, &src, r * 3, 3, &w);
    symmetric_portable(&mut b, &src, r * 3, 3, &w);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!((x - y).abs() < 1e-3, "{i}: {x} {y}");
    }
    // The portable path is the plain definition.
    for (i, &v) in b.iter().enumerate() {
        let mut acc = src[r * 3 + i] * w[0];
        for j in (1..=r).rev() {
            acc += (src[r * 3 + i - j * 3] + src[r * 3 + i + j * 3]) * w[j];
        }
        assert_eq!(v, acc, "{i}");
    }
}
