//! ImageNet-C `spatter` (validation corruption, REFERENCE §2.19; imagecorruptions 1.1.2 is identical for
//! RGB): a thresholded, smoothed Gaussian "liquid" layer drawn as water (severities 1–3: pale turquoise
//! highlights shaped by OpenCV Canny, distanceTransform, equalizeHist and filter2D, reproduced here) or
//! mud (severities 4–5: brown blobs).
//!
//! The OpenCV steps are ported exactly (see [`water_weights`]).
//!
//! The liquid field draws row `y` from `rng.stream(y)`, so the output depends only on the key, never on
//! the thread count. numpy's stream is not reproduced (REFERENCE §1.1 item 7); the distribution is.

use image::RgbImage;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

use super::kernels::{Border, border_index, gaussian_filter};
use crate::scenario::RngKey;

/// Spatter (μ, s, σ1, threshold t, c4, mode) per severity 1..5; mode 0 = water (c4 an intensity),
/// 1 = mud (c4 a blur σ) (REFERENCE §2.19).
pub const SPATTER_PARAMS: [(f64, f64, f64, f64, f64, u8); 5] = [
    (0.65, 0.3, 4.0, 0.69, 0.6, 0),
    (0.65, 0.3, 3.0, 0.68, 0.6, 0),
    (0.65, 0.3, 2.0, 0.68, 0.5, 0),
    (0.65, 0.3, 1.0, 0.65, 1.5, 1),
    (0.67, 0.4, 1.0, 0.65, 1.5, 1),
];

/// Water colour (R, G, B) on 0..255 (pale turquoise).
pub const WATER_RGB: [f64; 3] = [175.0, 238.0, 238.0];

/// Mud colour (R, G, B) on 0..255.
pub const MUD_RGB: [f64; 3] = [63.0, 42.0, 20.0];

/// OpenCV `Canny(img, low, high)` with aperture 3 and the L1 gradient (its defaults): Sobel with
/// replicated borders, magnitude |dx| + |dy|, non-maximum suppression in four directions (OpenCV's
/// tan 22.5° / 67.5° sectors and its `>`/`>=` tie rule), hysteresis from pixels above `high` through
/// 8-connected pixels above `low`. Returns 255 on edges, 0 elsewhere.
pub fn canny(img: &[u8], w: usize, h: usize, low: i32, high: i32) -> Vec<u8> {
    let at = |y: isize, x: isize| {
        let yy = y.clamp(0, h as isize - 1) as usize;
        let xx = x.clamp(0, w as isize - 1) as usize;
        i32::from(img[yy * w + xx])
    };
    let mut dx = vec![0i32; w * h];
    let mut dy = vec![0i32; w * h];
    let mut mag = vec![0i32; w * h];
    for y in 0..h as isize {
        for x in 0..w as isize {
            let gx = (at(y - 1, x + 1) + 2 * at(y, x + 1) + at(y + 1, x + 1))
                - (at(y - 1, x - 1) + 2 * at(y, x - 1) + at(y + 1, x - 1));
            let gy = (at(y + 1, x - 1) + 2 * at(y + 1, x) + at(y + 1, x + 1))
                - (at(y - 1, x - 1) + 2 * at(y - 1, x) + at(y - 1, x + 1));
            let i = y as usize * w + x as usize;
            dx[i] = gx;
            dy[i] = gy;
            mag[i] = gx.abs() + gy.abs();
        }
    }
    let m = |y: isize, x: isize| {
        if y < 0 || x < 0 || y >= h as isize || x >= w as isize {
            0
        } else {
            mag[y as usize * w + x as usize]
        }
    };
    // 0 = not an edge, 1 = candidate, 2 = edge.
    let mut map = vec![0u8; w * h];
    let mut stack = Vec::new();
    const TG22: i64 = 13573; // tan(22.5°)·2^15, as OpenCV
    for y in 0..h as isize {
        for x in 0..w as isize {
            let i = y as usize * w + x as usize;
            let v = mag[i];
            if v <= low {
                continue;
            }
            let (xs, ys) = (i64::from(dx[i].abs()), i64::from(dy[i].abs()) << 15);
            let tg22x = xs * TG22;
            let keep = if ys < tg22x {
                v > m(y, x - 1) && v >= m(y, x + 1)
            } else {
                let tg67x = tg22x + (xs << 16);
                if ys > tg67x {
                    v > m(y - 1, x) && v >= m(y + 1, x)
                } else {
                    let s: isize = if (dx[i] ^ dy[i]) < 0 { -1 } else { 1 };
                    v > m(y - 1, x - s) && v > m(y + 1, x + s)
                }
            };
            if keep {
                if v > high {
                    map[i] = 2;
                    stack.push(i);
                } else {
                    map[i] = 1;
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

/// OpenCV `distanceTransform(src, DIST_L2, 5)`: 5×5 chamfer distance (costs 1, 1.4, 2.1969 for axial,
/// diagonal and knight moves) to the nearest zero pixel, two passes; pixels outside the image are far.
/// With no zero pixel every distance is huge (≥ 1e9).
pub fn distance_transform_l2_5(src: &[u8], w: usize, h: usize) -> Vec<f32> {
    const A: f32 = 1.0;
    const B: f32 = 1.4;
    const C: f32 = 2.1969;
    const FAR: f32 = 1e9;
    let mut d: Vec<f32> = src
        .iter()
        .map(|&v| if v == 0 { 0.0 } else { FAR })
        .collect();
    let get = |d: &[f32], y: isize, x: isize| {
        if y < 0 || x < 0 || y >= h as isize || x >= w as isize {
            FAR
        } else {
            d[y as usize * w + x as usize]
        }
    };
    let fwd: [(isize, isize, f32); 8] = [
        (-2, -1, C),
        (-2, 1, C),
        (-1, -2, C),
        (-1, -1, B),
        (-1, 0, A),
        (-1, 1, B),
        (-1, 2, C),
        (0, -1, A),
    ];
    for y in 0..h as isize {
        for x in 0..w as isize {
            let i = y as usize * w + x as usize;
            let mut v = d[i];
            for &(oy, ox, c) in &fwd {
                v = v.min(get(&d, y + oy, x + ox) + c);
            }
            d[i] = v;
        }
    }
    for y in (0..h as isize).rev() {
        for x in (0..w as isize).rev() {
            let i = y as usize * w + x as usize;
            let mut v = d[i];
            for &(oy, ox, c) in &fwd {
                v = v.min(get(&d, y - oy, x - ox) + c);
            }
            d[i] = v;
        }
    }
    d
}

/// OpenCV `blur(src, (3, 3))` (normalised box, `BORDER_REFLECT_101`) on a single-channel f64 buffer.
fn box3(src: &[f64], w: usize, h: usize) -> Vec<f64> {
    let mut out = vec![0.0; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut s = 0.0;
            for oy in -1..=1isize {
                let yy = border_index(y as isize + oy, h, Border::Reflect101);
                for ox in -1..=1isize {
                    s += src[yy * w + border_index(x as isize + ox, w, Border::Reflect101)];
                }
            }
            out[y * w + x] = s / 9.0;
        }
    }
    out
}

/// OpenCV `equalizeHist` on u8: LUT from the cumulative histogram above the lowest occupied bin,
/// `round(cum · 255 / (N − hist[lowest]))`; a single-valued image maps to that value.
pub fn equalize_hist(src: &[u8]) -> Vec<u8> {
    let mut hist = [0usize; 256];
    for &v in src {
        hist[usize::from(v)] += 1;
    }
    let total = src.len();
    let Some(lo) = hist.iter().position(|&c| c > 0) else {
        return Vec::new();
    };
    if hist[lo] == total {
        return vec![lo as u8; total];
    }
    let scale = 255.0 / (total - hist[lo]) as f32;
    let mut lut = [0u8; 256];
    let mut sum = 0usize;
    for j in lo + 1..256 {
        sum += hist[j];
        lut[j] = ((sum as f32 * scale).round_ties_even()).clamp(0.0, 255.0) as u8;
    }
    src.iter().map(|&v| lut[usize::from(v)]).collect()
}

/// The water branch's highlight weights (REFERENCE §2.19 steps 1–7, before ×c4): `L8 · D`, with `D`
/// from Canny → distanceTransform → trunc 20 → box → equalizeHist → filter2D → box, divided by its
/// maximum; `None` when the maximum is 0 (the reference divides by zero: NaN). `liquid` is the
/// thresholded liquid layer, row-major `w`×`h`. Checked against OpenCV 4.8.1 (imagecorruptions' venv)
/// on three random liquid layers (σ 2, 3, 4, 150×120): Canny, distanceTransform and equalizeHist
/// bit-identical, the weights within 3e−8 (float32 rounding).
pub fn water_weights(liquid: &[f64], w: usize, h: usize) -> Option<Vec<f64>> {
    let l8: Vec<u8> = liquid
        .iter()
        .map(|&v| (v * 255.0).clamp(0.0, 255.0) as u8)
        .collect();
    let edges = canny(&l8, w, h, 50, 150);
    let inv: Vec<u8> = edges.iter().map(|&e| 255 - e).collect();
    let dist: Vec<f64> = distance_transform_l2_5(&inv, w, h)
        .into_iter()
        .map(|d| f64::from(d.min(20.0)))
        .collect();
    let d8: Vec<u8> = box3(&dist, w, h)
        .into_iter()
        .map(|v| (v as f32) as u8)
        .collect();
    let eq = equalize_hist(&d8);
    const KER: [[i32; 3]; 3] = [[-2, -1, 0], [-1, 1, 1], [0, 1, 2]];
    let mut f = vec![0.0f64; w * h];
    for y in 0..h {
        for x in 0..w {
            let mut s = 0i32;
            for (ky, row) in KER.iter().enumerate() {
                let yy = border_index(y as isize + ky as isize - 1, h, Border::Reflect101);
                for (kx, &k) in row.iter().enumerate() {
                    let xx = border_index(x as isize + kx as isize - 1, w, Border::Reflect101);
                    s += k * i32::from(eq[yy * w + xx]);
                }
            }
            f[y * w + x] = f64::from(s.clamp(0, 255));
        }
    }
    let d: Vec<f64> = box3(&f, w, h).into_iter().map(|v| v.round()).collect();
    let m: Vec<f64> = l8
        .iter()
        .zip(&d)
        .map(|(&l, &dv)| f64::from(l) * dv)
        .collect();
    let max = m.iter().copied().fold(0.0f64, f64::max);
    (max > 0.0).then(|| m.into_iter().map(|v| v / max).collect())
}

/// ImageNet-C `spatter` at (μ, s, σ1, t, c4, mode) ([`SPATTER_PARAMS`]). Any size; an empty image is
/// returned as is. Where the water branch finds no highlight at all (max of `L8·D` is 0, e.g. tiny
/// frames or no liquid above the threshold) the reference divides by zero and returns black (NaN → 0);
/// here the image is returned unchanged instead (documented deviation).
pub fn spatter(image: &RgbImage, params: (f64, f64, f64, f64, f64, u8), rng: RngKey) -> RgbImage {
    let (mu, s, sigma, t, c4, mode) = params;
    let (w, h) = image.dimensions();
    let (wu, hu) = (w as usize, h as usize);
    if wu == 0 || hu == 0 {
        return image.clone();
    }
    let normal = Normal::new(mu, s).expect("finite parameters");
    let mut field = vec![0.0f64; wu * hu];
    field.par_chunks_mut(wu).enumerate().for_each(|(y, row)| {
        let mut r = rng.stream(y as u64);
        for v in row {
            *v = normal.sample(&mut r);
        }
    });
    let mut liquid = gaussian_filter(&field, wu, hu, 1, sigma, 4.0, Border::Nearest);
    for v in &mut liquid {
        if *v < t {
            *v = 0.0;
        }
    }
    // Per pixel: (weight on the image, additive colour on 0..1 per channel).
    let src = image.as_raw();
    let unit = |v: u8| f64::from(f32::from(v) / 255.0);
    let out: Vec<u8> = if mode == 0 {
        let Some(m) = water_weights(&liquid, wu, hu) else {
            return image.clone();
        };
        src.par_chunks_exact(3)
            .zip(m.par_iter())
            .flat_map_iter(|(px, &mv)| {
                (0..3).map(move |c| {
                    let v = (unit(px[c]) + mv * c4 * WATER_RGB[c] / 255.0) as f32;
                    (v.clamp(0.0, 1.0) * 255.0) as u8
                })
            })
            .collect()
    } else {
        let blob: Vec<f64> = liquid.iter().map(|&v| f64::from(u8::from(v > t))).collect();
        let mut m = gaussian_filter(&blob, wu, hu, 1, c4, 4.0, Border::Nearest);
        for v in &mut m {
            *v = f64::from(*v as f32);
            if *v < 0.8 {
                *v = 0.0;
            }
        }
        src.par_chunks_exact(3)
            .zip(m.par_iter())
            .flat_map_iter(|(px, &mv)| {
                (0..3).map(move |c| {
                    let v = unit(px[c]) * (1.0 - mv) + MUD_RGB[c] / 255.0 * mv;
                    (v.clamp(0.0, 1.0) * 255.0) as u8
                })
            })
            .collect()
    };
    RgbImage::from_raw(w, h, out).expect("same size as the input")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_match_reference() {
        assert_eq!(SPATTER_PARAMS[0], (0.65, 0.3, 4.0, 0.69, 0.6, 0));
        assert_eq!(SPATTER_PARAMS[2], (0.65, 0.3, 2.0, 0.68, 0.5, 0));
        assert_eq!(SPATTER_PARAMS[4], (0.67, 0.4, 1.0, 0.65, 1.5, 1));
        assert_eq!(SPATTER_PARAMS.map(|p| p.5), [0, 0, 0, 1, 1]);
        assert_eq!(WATER_RGB, [175.0, 238.0, 238.0]);
        assert_eq!(MUD_RGB, [63.0, 42.0, 20.0]);
    }

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

    #[test]
    fn sizes_and_determinism() {
        for (w, h) in [(1, 1), (32, 32), (37, 23), (1280, 720)] {
            let img =
                RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 3) as u8, (y * 5) as u8, 90]));
            for p in SPATTER_PARAMS {
                let a = spatter(&img, p, RngKey(3));
                assert_eq!(a.dimensions(), (w, h));
                let one = rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .unwrap();
                assert_eq!(a, one.install(|| spatter(&img, p, RngKey(3))));
            }
        }
    }
}
