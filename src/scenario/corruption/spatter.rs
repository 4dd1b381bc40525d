//! ImageNet-C `spatter` (validation corruption, docs/imagenet-c.md#spatter; imagecorruptions 1.1.2
//! is identical for RGB): a thresholded, smoothed Gaussian "liquid" layer drawn as water
//! (severities 1–3: pale turquoise highlights shaped by OpenCV Canny, distanceTransform,
//! equalizeHist and filter2D, reproduced here) or mud (severities 4–5: brown blobs).
//!
//! The OpenCV steps are ported exactly (see `water_weights`; the operations themselves are in
//! [`crate::kernels::edges`]).
//!
//! The liquid field draws row `y` from `rng.stream(y)`, so the output depends only on the key, never on
//! the thread count. numpy's stream is not reproduced
//! (docs/imagenet-c.md#randomness-and-external-inputs); the distribution is.

use image::RgbImage;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

use crate::kernels::edges::{box3, canny, distance_capped, equalize_hist, rows_per_task, rows3};
use crate::kernels::filter::{self, Border};
use crate::kernels::gaussian;
use crate::kernels::lanes;
use crate::rng::RngKey;

/// One spatter severity (docs/imagenet-c.md#spatter): the reference's `c`, in its order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SpatterParams {
    /// μ of the Gaussian liquid field (`loc = c[0]`).
    pub(crate) mean: f64,
    /// s, its standard deviation (`scale = c[1]`).
    pub(crate) std: f64,
    /// σ1 of the Gaussian that smooths the field (`c[2]`).
    pub(crate) sigma: f64,
    /// t: liquid below it is dropped (`c[3]`).
    pub(crate) threshold: f64,
    /// c4: the water highlights' intensity (mode 0) or the mud mask's blur σ (mode 1).
    pub(crate) intensity_or_blur: f64,
    /// 0 = water, 1 = mud (`c[5]`).
    pub(crate) mode: u8,
}

/// Spatter (μ, s, σ1, threshold t, c4, mode) per severity 1..5; mode 0 = water (c4 an intensity),
/// 1 = mud (c4 a blur σ) (docs/imagenet-c.md#spatter).
pub(crate) const SPATTER_PARAMS: [SpatterParams; 5] = [
    liquid(0.65, 0.3, 4.0, 0.69, 0.6, 0),
    liquid(0.65, 0.3, 3.0, 0.68, 0.6, 0),
    liquid(0.65, 0.3, 2.0, 0.68, 0.5, 0),
    liquid(0.65, 0.3, 1.0, 0.65, 1.5, 1),
    liquid(0.67, 0.4, 1.0, 0.65, 1.5, 1),
];

/// Table row constructor.
const fn liquid(
    mean: f64,
    std: f64,
    sigma: f64,
    threshold: f64,
    intensity_or_blur: f64,
    mode: u8,
) -> SpatterParams {
    SpatterParams {
        mean,
        std,
        sigma,
        threshold,
        intensity_or_blur,
        mode,
    }
}

/// Water colour (R, G, B) on 0..255 (pale turquoise).
const WATER_RGB: [f64; 3] = [175.0, 238.0, 238.0];

/// Mud colour (R, G, B) on 0..255.
const MUD_RGB: [f64; 3] = [63.0, 42.0, 20.0];

/// The integer part of `water_weights` from `L8`: the map `D` (each value an integer 0..255) and
/// the maximum of `L8 · D`, or `None` where that maximum is 0.
fn water_shape(l8: &[u8], w: usize, h: usize) -> Option<(Vec<u8>, f64)> {
    if w == 0 || h == 0 {
        return None;
    }
    let edges = canny(l8, w, h, 50, 150);
    // Distance to the nearest edge (inverted edges: 0 on edges), capped at 20.
    let dist = distance_capped(&edges, w, h, 20.0, 255);
    // Truncate at 20, OpenCV blur 3×3 (f64 sums, ÷ 9), to f32, to u8. Every distance is 0 or an f32
    // ≥ 1 (sums of the chamfer costs), i.e. a multiple of 2⁻²³ below 2⁵, so v·2²³ is an exact
    // integer, nine of them sum exactly in i32 (< 2³¹), and that sum ·2⁻²³ is the f64 sum in any
    // order: the same bits as the reference's sum.
    let mut d8 = vec![0u8; w * h];
    box3(
        &dist,
        (w, h),
        &mut d8,
        |v| {
            let v = if v > 0.0 { v } else { 0.0 }; // (never negative or NaN)
            let v = if v < 20.0 { v } else { 20.0 };
            // SAFETY: v·2²³ is finite and in [0, 1.7e8] here: representable as i32, all that
            // `to_int_unchecked` requires (the plain `as` cast's checks stop vectorisation).
            unsafe { (v * 8_388_608.0).to_int_unchecked::<i32>() }
        },
        |sums, out| {
            for (o, &a) in out.iter_mut().zip(sums) {
                let v = (f64::from(a) / 8_388_608.0 / 9.0) as f32;
                // SAFETY: 0 ≤ a ≤ 9·20·2²³, so v is finite and in [0, 20]: representable as i32.
                *o = unsafe { v.to_int_unchecked::<i32>() } as u8;
            }
        },
    );
    let eq = equalize_hist(&d8);
    // filter2D with [[−2,−1,0],[−1,1,1],[0,1,2]] (reflect-101), saturated to 0..255 (exact integers).
    let mut f = vec![0u8; w * h];
    rows3(&eq, w, h, &mut f, |[r0, r1, r2], out| {
        let n = out.len();
        let (a0, a1) = (&r0[..n], &r0[1..n + 1]);
        let (b0, b1, b2) = (&r1[..n], &r1[1..n + 1], &r1[2..n + 2]);
        let (c1, c2) = (&r2[1..n + 1], &r2[2..n + 2]);
        for x in 0..n {
            let v = |s: &[u8]| i32::from(s[x]);
            let a = -2 * v(a0) - v(a1) - v(b0) + v(b1) + v(b2) + v(c1) + 2 * v(c2);
            out[x] = a.clamp(0, 255) as u8;
        }
    });
    // blur 3×3 of the integers (an exact sum), ÷ 9, rounded half away from zero.
    let mut d = vec![0u8; w * h];
    box3(&f, (w, h), &mut d, i32::from, |sums, out| {
        // round(a/9) half away from zero; a/9 is never halfway, so this is (2a + 9) div 18.
        for (o, &a) in out.iter_mut().zip(sums) {
            *o = ((2 * a + 9) / 18) as u8;
        }
    });
    // The largest L8·D (exact integers).
    let max = l8
        .par_chunks(1 << 14)
        .zip(d.par_chunks(1 << 14))
        .map(|(l, d)| {
            l.iter()
                .zip(d)
                .map(|(&l, &d)| u32::from(l) * u32::from(d))
                .fold(0, u32::max)
        })
        .reduce(|| 0, u32::max);
    (max > 0).then_some((d, f64::from(max)))
}

/// ImageNet-C `spatter` at (μ, s, σ1, t, c4, mode) ([`SPATTER_PARAMS`]). Any size; an empty image is
/// returned as is. Where the water branch finds no highlight at all (max of `L8·D` is 0, e.g. tiny
/// frames or no liquid above the threshold) the reference divides by zero and returns black (NaN → 0);
/// here the image is returned unchanged instead (documented deviation).
///
/// Speed: the liquid layer's Gaussian stores the thresholded layer straight as `L8` (water) or as the
/// mud mask; every stage after it works on u8/i32/f32 rows in parallel (only the distance transform's
/// row scans and Canny's flood fill are sequential), with the reference's arithmetic: Canny's Sobel
/// and suppression fused per band on vector lanes, the two 3×3 box blurs separable on exact integers
/// (the distances in 2⁻²³ fixed point, see `water_shape`), float-to-integer casts in forms that
/// vectorise. The whole
/// computation runs inside rayon's pool ([`lanes::in_pool`]), so a caller outside it hands the work
/// over once rather than once per stage.
pub(crate) fn spatter(image: &RgbImage, params: SpatterParams, rng: RngKey) -> RgbImage {
    lanes::in_pool(|| spatter_in_pool(image, params, rng))
}

/// The body of [`spatter`].
fn spatter_in_pool(image: &RgbImage, params: SpatterParams, rng: RngKey) -> RgbImage {
    let SpatterParams {
        mean: mu,
        std: s,
        sigma,
        threshold: t,
        intensity_or_blur: c4,
        mode,
    } = params;
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
    let dims = (wu, hu, 1);
    // The liquid layer L = H1(field, σ1) with L[L < t] = 0, stored as L8 = floor8(L·255) (water) or
    // as the mask L > t (mud).
    let liquid = |store: fn(f64, f64) -> u8| {
        gaussian::gaussian_filter_map(
            &field,
            dims,
            (sigma, sigma),
            4.0,
            Border::Nearest,
            |v| v,
            move |v| store(v, t),
        )
    };
    let src = image.as_raw();
    // x/255 in float32, as the reference holds the image
    // (docs/imagenet-c.md#value-ranges-and-rounding).
    let unit: [f64; 256] = std::array::from_fn(|v| f64::from(v as f32 / 255.0));
    let mut out = vec![0u8; src.len()];
    let per = rows_per_task(wu);
    if mode == 0 {
        let l8 = liquid(|v, t| if v < t { 0 } else { lanes::trunc_u8(v * 255.0) });
        let Some((d, max)) = water_shape(&l8, wu, hu) else {
            return image.clone();
        };
        // out = floor8(clip(f32(x + M·c4·colour/255))), M = L8·D/max; where M = 0 that is a table.
        let water = |x: f64, mv: f64, c: usize| {
            filter::floor8_clip_f32((x + mv * c4 * WATER_RGB[c] / 255.0) as f32)
        };
        let dry: [u8; 256] = std::array::from_fn(|v| water(unit[v], 0.0, 0));
        out.par_chunks_mut(wu * 3 * per)
            .zip(src.par_chunks(wu * 3 * per))
            .zip(l8.par_chunks(wu * per).zip(d.par_chunks(wu * per)))
            .for_each(|((o, px), (l8, d))| {
                for (((o, px), &l), &d) in
                    o.chunks_exact_mut(3).zip(px.chunks_exact(3)).zip(l8).zip(d)
                {
                    if l == 0 || d == 0 {
                        for c in 0..3 {
                            o[c] = dry[usize::from(px[c])];
                        }
                    } else {
                        let mv = f64::from(l) * f64::from(d) / max;
                        for c in 0..3 {
                            o[c] = water(unit[usize::from(px[c])], mv, c);
                        }
                    }
                }
            });
    } else {
        let blob = liquid(|v, t| u8::from(v > t));
        let m = gaussian::gaussian_filter_map(
            &blob,
            dims,
            (c4, c4),
            4.0,
            Border::Nearest,
            f64::from,
            |v| {
                let m = f64::from(v as f32);
                if m < 0.8 { 0.0 } else { m as f32 }
            },
        );
        // out = floor8(clip(x·(1 − M) + M·mud/255)) in f64; where M = 0 that is a table.
        let mud = |x: f64, mv: f64, c: usize| {
            filter::floor8_clip(x * (1.0 - mv) + MUD_RGB[c] / 255.0 * mv)
        };
        let dry: [u8; 256] = std::array::from_fn(|v| mud(unit[v], 0.0, 0));
        out.par_chunks_mut(wu * 3 * per)
            .zip(src.par_chunks(wu * 3 * per))
            .zip(m.par_chunks(wu * per))
            .for_each(|((o, px), m)| {
                for ((o, px), &mv) in o.chunks_exact_mut(3).zip(px.chunks_exact(3)).zip(m) {
                    if mv == 0.0 {
                        for c in 0..3 {
                            o[c] = dry[usize::from(px[c])];
                        }
                    } else {
                        for c in 0..3 {
                            o[c] = mud(unit[usize::from(px[c])], f64::from(mv), c);
                        }
                    }
                }
            });
    }
    RgbImage::from_raw(w, h, out).expect("same size as the input")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::edges::tests::liquid_l8;

    #[test]
    fn tables_match_reference() {
        assert_eq!(SPATTER_PARAMS[0], liquid(0.65, 0.3, 4.0, 0.69, 0.6, 0));
        assert_eq!(SPATTER_PARAMS[2], liquid(0.65, 0.3, 2.0, 0.68, 0.5, 0));
        assert_eq!(SPATTER_PARAMS[4], liquid(0.67, 0.4, 1.0, 0.65, 1.5, 1));
        assert_eq!(SPATTER_PARAMS.map(|p| p.mode), [0, 0, 0, 1, 1]);
        assert_eq!(WATER_RGB, [175.0, 238.0, 238.0]);
        assert_eq!(MUD_RGB, [63.0, 42.0, 20.0]);
    }

    /// The stage-by-stage port of the water shape (as first written, checked against OpenCV 4.8.1):
    /// the oracle of the fused version above.
    mod plain {
        use rayon::prelude::*;

        use crate::kernels::edges::{canny, distance_capped, equalize_hist, rows3};

        /// [`super::super::water_shape`] as first written (stage by stage, checked against OpenCV 4.8.1).
        #[allow(clippy::type_complexity)]
        pub(crate) fn water_shape(l8: &[u8], w: usize, h: usize) -> Option<(Vec<u8>, f64)> {
            if w == 0 || h == 0 {
                return None;
            }
            let edges = canny(l8, w, h, 50, 150);
            let inv: Vec<u8> = edges.par_iter().map(|&e| 255 - e).collect();
            let dist = distance_capped(&inv, w, h, 20.0, 0);
            // Truncate at 20, OpenCV blur 3×3 (f64 sums in the kernel's order, ÷ 9), to f32, to u8.
            let mut d8 = vec![0u8; w * h];
            rows3(&dist, w, h, &mut d8, |rows, out| {
                let mut acc = vec![0.0f64; w];
                for row in rows {
                    for ox in 0..3 {
                        for (a, &v) in acc.iter_mut().zip(&row[ox..ox + w]) {
                            *a += f64::from(v.min(20.0));
                        }
                    }
                }
                for (o, &a) in out.iter_mut().zip(&acc) {
                    *o = ((a / 9.0) as f32) as i32 as u8;
                }
            });
            let eq = equalize_hist(&d8);
            // filter2D with [[−2,−1,0],[−1,1,1],[0,1,2]] (reflect-101), saturated to 0..255 (exact integers).
            const KER: [[i32; 3]; 3] = [[-2, -1, 0], [-1, 1, 1], [0, 1, 2]];
            let mut f = vec![0u8; w * h];
            rows3(&eq, w, h, &mut f, |rows, out| {
                let mut acc = vec![0i32; w];
                for (row, k) in rows.iter().zip(&KER) {
                    for (ox, &k) in k.iter().enumerate() {
                        if k != 0 {
                            for (a, &v) in acc.iter_mut().zip(&row[ox..ox + w]) {
                                *a += k * i32::from(v);
                            }
                        }
                    }
                }
                for (o, &a) in out.iter_mut().zip(&acc) {
                    *o = a.clamp(0, 255) as u8;
                }
            });
            // blur 3×3 of the integers (an exact sum), ÷ 9, rounded half away from zero.
            let mut d = vec![0u8; w * h];
            rows3(&f, w, h, &mut d, |rows, out| {
                let mut acc = vec![0i32; w];
                for row in rows {
                    for ox in 0..3 {
                        for (a, &v) in acc.iter_mut().zip(&row[ox..ox + w]) {
                            *a += i32::from(v);
                        }
                    }
                }
                // round(a/9) half away from zero; a/9 is never halfway, so this is (2a + 9) div 18.
                for (o, &a) in out.iter_mut().zip(&acc) {
                    *o = ((2 * a + 9) / 18) as u8;
                }
            });
            let max = l8
                .par_iter()
                .zip(&d)
                .map(|(&l, &d)| f64::from(l) * f64::from(d))
                .reduce(|| 0.0, f64::max);
            (max > 0.0).then_some((d, max))
        }
    }

    #[test]
    fn water_shape_equals_the_stage_by_stage_port() {
        for (w, h) in [
            (1, 1),
            (2, 2),
            (3, 7),
            (37, 23),
            (150, 120),
            (224, 224),
            (301, 97),
        ] {
            for (k, (sigma, t)) in [(4.0, 0.69), (3.0, 0.68), (2.0, 0.68), (1.0, 0.6)]
                .into_iter()
                .enumerate()
            {
                let l8 = liquid_l8(w, h, sigma, t, (w * 17 + h * 5 + k) as u64);
                assert_eq!(
                    water_shape(&l8, w, h),
                    plain::water_shape(&l8, w, h),
                    "{w}×{h} σ {sigma}"
                );
            }
        }
        // A layer with highlights, so the comparison is not between two `None`s.
        let l8 = liquid_l8(150, 120, 2.0, 0.68, 1);
        assert!(water_shape(&l8, 150, 120).is_some());
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
