use super::*;
use crate::kernels::filter::*;
use crate::kernels::test_inputs::{bits, noise_image, rows};

crate::kernels::levels_agree! {
    fn symmetric_pass_levels_agree(|level| {
        let rows = rows();
        let pairs: Vec<(f64, &[f64], &[f64])> = (0..3)
            .map(|j| (0.1 * (j + 1) as f64, rows[j].as_slice(), rows[6 - j].as_slice()))
            .collect();
        let mut out = vec![0.0; 203];
        symmetric_pass_at(level, &mut out, 0.4, &rows[3], &pairs).map(|()| bits(&out))
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
fn opencv_gaussian_kernel_is_symmetric_and_normalised() {
    let k = opencv_gaussian_kernel(3, 0.5);
    let e = (-2.0f64).exp();
    assert!((k[1] - 1.0 / (1.0 + 2.0 * e)).abs() < 1e-15);
    assert_eq!(k[0], k[2]);
}
