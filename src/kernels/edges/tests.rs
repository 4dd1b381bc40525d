use rand_distr::{Distribution, Normal};

use super::*;

crate::kernels::levels_agree! {
    fn nms_row_levels_agree(|level| {
        let m: Vec<Vec<i32>> = (0..3)
            .map(|r| (0..77).map(|i| (i * 31 + r * 17) % 200).collect())
            .collect();
        let gx: Vec<i32> = (0..75).map(|i| i * 13 % 61 - 30).collect();
        let gy: Vec<i32> = (0..75).map(|i| i * 29 % 53 - 26).collect();
        let mut out = vec![0u8; 75];
        nms_row_at(level, [&m[0], &m[1], &m[2]], (&gx, &gy), &mut out, (50, 150)).map(|()| out)
    });
    fn vertical_candidates_levels_agree(|level| {
        let n: Vec<Vec<f32>> = (0..7)
            .map(|r| (0..90).map(|i| ((i * 7 + r * 3) % 23) as f32 * 0.7).collect())
            .collect();
        let mut row: Vec<f32> = (0..90).map(|i| (i % 11) as f32 * 1.9).collect();
        let n = [&n[0][..], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6]];
        vertical_candidates_at(level, &mut row, n)
            .map(|()| row.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
    });
    fn relax_levels_agree(|level| {
        let mut s: Vec<f32> = (0..100).map(|i| if i % 17 == 0 { 0.0 } else { 20.0 }).collect();
        let mut tmp = vec![0.0f32; 100];
        let forward = relax_at(level, &mut s, &mut tmp, true)?;
        let backward = relax_at(level, &mut s, &mut tmp, false)?;
        Some((forward, backward, s.iter().map(|v| v.to_bits()).collect::<Vec<_>>()))
    });
}
use crate::kernels::gaussian;
use crate::rng::RngKey;

#[test]
fn distance_transform_costs() {
    // One zero pixel in the middle of a 7×7 field.
    let mut src = vec![255u8; 49];
    src[3 * 7 + 3] = 0;
    let d = distance_transform_l2_5(&src, 7, 7);
    assert_eq!(d[3 * 7 + 4], 1.0);
    assert!((d[4 * 7 + 4] - 1.4).abs() < 1e-6);
    assert!((d[5 * 7 + 4] - 2.1969).abs() < 1e-6);
    assert!((d[3 * 7 + 6] - 3.0).abs() < 1e-6);
    assert!(
        distance_transform_l2_5(&[255; 4], 2, 2)
            .iter()
            .all(|&v| v >= 1e8)
    );
}

#[test]
fn equalize_and_canny_basics() {
    assert_eq!(equalize_hist(&[7, 7, 7]), vec![7, 7, 7]);
    assert_eq!(equalize_hist(&[0, 10, 20, 30]), vec![0, 85, 170, 255]);
    // A vertical step edge gives a one-pixel-wide vertical edge line.
    let w = 10;
    let img: Vec<u8> = (0..w * 8)
        .map(|i| if i % w < 5 { 0 } else { 200 })
        .collect();
    let e = canny(&img, w, 8, 50, 150);
    for y in 0..8 {
        let row = &e[y * w..y * w + w];
        assert_eq!(row.iter().filter(|&&v| v == 255).count(), 1, "{row:?}");
    }
    assert!(canny(&[9; 30], 6, 5, 50, 150).iter().all(|&v| v == 0));
}

/// The straightforward pixel-by-pixel ports (as first written, checked against OpenCV 4.8.1):
/// the oracles of the row-parallel versions above.
mod plain {
    pub(crate) fn canny(img: &[u8], w: usize, h: usize, low: i32, high: i32) -> Vec<u8> {
        let at = |y: isize, x: isize| {
            let yy = y.clamp(0, h as isize - 1) as usize;
            let xx = x.clamp(0, w as isize - 1) as usize;
            i32::from(img[yy * w + xx])
        };
        let (mut dx, mut dy, mut mag) = (vec![0; w * h], vec![0; w * h], vec![0; w * h]);
        for y in 0..h as isize {
            for x in 0..w as isize {
                let gx = (at(y - 1, x + 1) + 2 * at(y, x + 1) + at(y + 1, x + 1))
                    - (at(y - 1, x - 1) + 2 * at(y, x - 1) + at(y + 1, x - 1));
                let gy = (at(y + 1, x - 1) + 2 * at(y + 1, x) + at(y + 1, x + 1))
                    - (at(y - 1, x - 1) + 2 * at(y - 1, x) + at(y - 1, x + 1));
                let i = y as usize * w + x as usize;
                (dx[i], dy[i], mag[i]) = (gx, gy, gx.abs() + gy.abs());
            }
        }
        let m = |y: isize, x: isize| {
            if y < 0 || x < 0 || y >= h as isize || x >= w as isize {
                0
            } else {
                mag[y as usize * w + x as usize]
            }
        };
        let mut map = vec![0u8; w * h];
        let mut stack = Vec::new();
        for y in 0..h as isize {
            for x in 0..w as isize {
                let i = y as usize * w + x as usize;
                let v = mag[i];
                if v <= low {
                    continue;
                }
                let (xs, ys) = (i64::from(dx[i].abs()), i64::from(dy[i].abs()) << 15);
                let tg22x = xs * 13573;
                let keep = if ys < tg22x {
                    v > m(y, x - 1) && v >= m(y, x + 1)
                } else if ys > tg22x + (xs << 16) {
                    v > m(y - 1, x) && v >= m(y + 1, x)
                } else {
                    let s: isize = if (dx[i] ^ dy[i]) < 0 { -1 } else { 1 };
                    v > m(y - 1, x - s) && v > m(y + 1, x + s)
                };
                if keep {
                    map[i] = if v > high { 2 } else { 1 };
                    if v > high {
                        stack.push(i);
                    }
                }
            }
        }
        while let Some(i) = stack.pop() {
            let (y, x) = ((i / w) as isize, (i % w) as isize);
            for (oy, ox) in [
                (-1, -1),
                (-1, 0),
                (-1, 1),
                (0, -1),
                (0, 1),
                (1, -1),
                (1, 0),
                (1, 1),
            ] {
                let (ny, nx) = (y + oy, x + ox);
                if ny >= 0 && nx >= 0 && ny < h as isize && nx < w as isize {
                    let j = ny as usize * w + nx as usize;
                    if map[j] == 1 {
                        map[j] = 2;
                        stack.push(j);
                    }
                }
            }
        }
        map.into_iter()
            .map(|v| if v == 2 { 255 } else { 0 })
            .collect()
    }

    pub(crate) fn distance(src: &[u8], w: usize, h: usize) -> Vec<f32> {
        let mut d: Vec<f32> = src
            .iter()
            .map(|&v| if v == 0 { 0.0 } else { 1e9 })
            .collect();
        let get = |d: &[f32], y: isize, x: isize| {
            if y < 0 || x < 0 || y >= h as isize || x >= w as isize {
                1e9
            } else {
                d[y as usize * w + x as usize]
            }
        };
        let (a, b, c) = (1.0f32, 1.4f32, 2.1969f32);
        let fwd = [
            (-2, -1, c),
            (-2, 1, c),
            (-1, -2, c),
            (-1, -1, b),
            (-1, 0, a),
            (-1, 1, b),
            (-1, 2, c),
            (0, -1, a),
        ];
        for y in 0..h as isize {
            for x in 0..w as isize {
                let i = y as usize * w + x as usize;
                let v = fwd
                    .iter()
                    .fold(d[i], |v, &(oy, ox, c)| v.min(get(&d, y + oy, x + ox) + c));
                d[i] = v;
            }
        }
        for y in (0..h as isize).rev() {
            for x in (0..w as isize).rev() {
                let i = y as usize * w + x as usize;
                let v = fwd
                    .iter()
                    .fold(d[i], |v, &(oy, ox, c)| v.min(get(&d, y - oy, x - ox) + c));
                d[i] = v;
            }
        }
        d
    }
}

/// A thresholded smooth liquid layer as spatter makes it (σ, threshold), as L8.
pub(crate) fn liquid_l8(w: usize, h: usize, sigma: f64, t: f64, key: u64) -> Vec<u8> {
    let normal = Normal::new(0.65, 0.3).expect("finite");
    let mut r = RngKey(key).rng();
    let field: Vec<f64> = (0..w * h).map(|_| normal.sample(&mut r)).collect();
    gaussian::gaussian_filter(&field, w, h, 1, sigma, 4.0, Border::Nearest)
        .into_iter()
        .map(|v| {
            if v < t {
                0
            } else {
                (v * 255.0).clamp(0.0, 255.0) as u8
            }
        })
        .collect()
}

#[test]
fn row_parallel_stages_equal_the_plain_ports() {
    for (w, h) in [(1, 1), (2, 7), (5, 3), (37, 23), (150, 120), (301, 97)] {
        for (k, (sigma, t)) in [(4.0, 0.69), (2.0, 0.68), (1.0, 0.65)]
            .into_iter()
            .enumerate()
        {
            let l8 = liquid_l8(w, h, sigma, t, (w * 31 + h + k) as u64);
            let edges = canny(&l8, w, h, 50, 150);
            assert_eq!(
                edges,
                plain::canny(&l8, w, h, 50, 150),
                "canny {w}×{h} σ {sigma}"
            );
            let inv: Vec<u8> = edges.iter().map(|&e| 255 - e).collect();
            let fast = distance_transform_l2_5(&inv, w, h);
            let slow = plain::distance(&inv, w, h);
            assert!(
                fast.iter()
                    .zip(&slow)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "distance {w}×{h} σ {sigma}"
            );
            assert_eq!(fast.len(), slow.len());
            // Capped at 20 for spatter: the same values below 20.
            let capped = distance_capped(&inv, w, h, 20.0, 0);
            assert!(
                capped
                    .iter()
                    .zip(&slow)
                    .all(|(a, b)| a.min(20.0).to_bits() == b.min(20.0).to_bits()),
                "capped distance {w}×{h} σ {sigma}"
            );
        }
    }
}
