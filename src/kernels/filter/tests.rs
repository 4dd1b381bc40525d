use super::*;
use crate::kernels::test_inputs::{bits, rows};

crate::kernels::levels_agree! {
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
