//! The motion-blur kernel ([`motion_kernel`], docs/imagenet-c.md#h5-motion-blur-kernel; also
//! snow's) and the engine of `motion_blur` (docs/imagenet-c.md#motion_blur): a sparse correlation
//! with the one-sided motion taps on a u8 RGB image with edge replication, computed band by band.
//!
//! Each band of output rows converts just the source rows its taps reach (edge-replicated to the left
//! and right by as much as the taps reach) into f64 once, then sums every output row's taps in order
//! with [`lanes::accumulate_taps`] and stores `clip(·, 0, 255)` truncated — the same operations as
//! padding the whole image first, without the image-sized f64 copies. Bands run in parallel (AVX2
//! where the CPU has it); the result does not depend on the thread count.

use rayon::prelude::*;

use super::lanes;

/// Output rows per band.
const BAND_ROWS: usize = 32;

/// `out(y, x, c) = trunc(clip(Σ_t w_t · in(clamp(y + dy_t), clamp(x + dx_t), c), 0, 255))` for an
/// interleaved RGB u8 image of `w × h`, taps `(w_t, dx_t, dy_t)` added in order (in f64, from 0).
pub(crate) fn streak_rgb(
    raw: &[u8],
    (w, h): (usize, usize),
    taps: &[(f64, isize, isize)],
) -> Vec<u8> {
    lanes::in_pool(|| streak_rgb_body(raw, (w, h), taps))
}

/// The body of [`streak_rgb`].
fn streak_rgb_body(raw: &[u8], (w, h): (usize, usize), taps: &[(f64, isize, isize)]) -> Vec<u8> {
    assert_eq!(raw.len(), 3 * w * h, "RGB buffer size");
    let mut out = vec![0u8; raw.len()];
    if raw.is_empty() || taps.is_empty() {
        return out;
    }
    let (min_dx, max_dx) = taps
        .iter()
        .fold((0, 0), |(a, b), t| (a.min(t.1), b.max(t.1)));
    let (min_dy, max_dy) = taps
        .iter()
        .fold((0, 0), |(a, b), t| (a.min(t.2), b.max(t.2)));
    let geo = Geometry {
        raw,
        w,
        h,
        pad_l: min_dx.unsigned_abs(),
        pad_r: max_dx as usize,
        min_dy,
        max_dy,
    };
    out.par_chunks_mut(3 * w * BAND_ROWS)
        .enumerate()
        .for_each(|(b, band)| {
            band_dispatch(&geo, taps, b * BAND_ROWS, band);
        });
    out
}

/// The image and the reach of the taps.
struct Geometry<'a> {
    raw: &'a [u8],
    w: usize,
    h: usize,
    pad_l: usize,
    pad_r: usize,
    min_dy: isize,
    max_dy: isize,
}

crate::kernels::multiversion! {
    /// [`band_body`] compiled for AVX2 where the CPU has it, else portable.
    fn band_dispatch(geo: &Geometry<'_>, taps: &[(f64, isize, isize)], y0: usize, out: &mut [u8]);
    /// [`band_body`] with AVX2 enabled.
    band_avx2 ["avx2"] => band_body;
    _ => band_body;
    levels band_dispatch_at;
}

/// Output rows `y0 ..` (as many as `out` holds).
#[inline(always)]
fn band_body(geo: &Geometry<'_>, taps: &[(f64, isize, isize)], y0: usize, out: &mut [u8]) {
    let (w, row_len) = (geo.w, 3 * geo.w);
    let n = out.len() / row_len;
    // Logical source rows q0 .. q1, each the clamped image row, padded by edge replication.
    let (q0, q1) = (y0 as isize + geo.min_dy, (y0 + n) as isize + geo.max_dy);
    let stride = 3 * (geo.pad_l + w + geo.pad_r);
    let mut rows = vec![0.0f64; (q1 - q0) as usize * stride];
    for (k, row) in rows.chunks_exact_mut(stride).enumerate() {
        let sy = (q0 + k as isize).clamp(0, geo.h as isize - 1) as usize;
        let src = &geo.raw[sy * row_len..][..row_len];
        let body = &mut row[3 * geo.pad_l..][..row_len];
        for (d, &v) in body.iter_mut().zip(src) {
            *d = f64::from(v);
        }
        for p in 0..geo.pad_l {
            for c in 0..3 {
                row[3 * p + c] = f64::from(src[c]);
            }
        }
        for p in 0..geo.pad_r {
            for c in 0..3 {
                row[3 * (geo.pad_l + w + p) + c] = f64::from(src[row_len - 3 + c]);
            }
        }
    }
    let mut acc = vec![0.0f64; row_len];
    let mut srcs: Vec<(f64, &[f64])> = Vec::with_capacity(taps.len());
    for (i, o) in out.chunks_exact_mut(row_len).enumerate() {
        let y = (y0 + i) as isize;
        srcs.clear();
        srcs.extend(taps.iter().map(|&(wt, dx, dy)| {
            let start = (y + dy - q0) as usize * stride + 3 * (geo.pad_l as isize + dx) as usize;
            (wt, &rows[start..start + row_len])
        }));
        lanes::accumulate_taps(&mut acc, &srcs);
        for (o, &a) in o.iter_mut().zip(&acc) {
            *o = lanes::trunc_u8(a);
        }
    }
}

/// The motion-blur kernel (docs/imagenet-c.md#h5-motion-blur-kernel; imagecorruptions' numpy port
/// of ImageMagick `MotionBlurImage`): taps `(weight, dx, dy)` for radius `r`, sigma `σ`, angle `θ`
/// degrees on an image of `width × height`.
///
/// Width w = 2r + 1; weights `exp(−i²/(2σ²))` for i = 0..w−1, a **one-sided** half-Gaussian whose first
/// tap is the pixel itself, normalised to sum 1; tap i reads
/// `dx = ceil(i·p₁/|p| − 0.5)`, `dy = ceil(i·p₀/|p| − 0.5)` with `p = (w·sin θ, w·cos θ)` (computed in
/// this order, as the port does). Taps stop (without renormalising) at the first one with `|dy| ≥ height`
/// or `|dx| ≥ width`, as the port does for small images.
pub(crate) fn motion_kernel(
    radius: usize,
    sigma: f64,
    angle_deg: f64,
    width: usize,
    height: usize,
) -> Vec<(f64, isize, isize)> {
    let w = 2 * radius + 1;
    let k: Vec<f64> = (0..w)
        .map(|i| {
            let x = i as f64;
            (-(x * x) / (2.0 * sigma * sigma)).exp() / ((2.0 * std::f64::consts::PI).sqrt() * sigma)
        })
        .collect();
    let z: f64 = k.iter().sum();
    let a = angle_deg * (std::f64::consts::PI / 180.0);
    let (p0, p1) = (w as f64 * a.sin(), w as f64 * a.cos());
    let hyp = p0.hypot(p1);
    let mut taps = Vec::with_capacity(w);
    for (i, &ki) in k.iter().enumerate() {
        let dy = ((i as f64 * p0) / hyp - 0.5).ceil() as isize;
        let dx = ((i as f64 * p1) / hyp - 0.5).ceil() as isize;
        if dy.unsigned_abs() >= height || dx.unsigned_abs() >= width {
            break;
        }
        taps.push((ki / z, dx, dy));
    }
    taps
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::kernels::levels_agree! {
        fn band_levels_agree(|level| {
            let (w, h) = (23, 17);
            let raw: Vec<u8> = (0..3 * w * h).map(|i| (i * 67 % 256) as u8).collect();
            let taps = [(0.3, 0, 0), (0.25, 1, 0), (0.2, 2, 1), (0.25, -1, -2)];
            let geo = Geometry { raw: &raw, w, h, pad_l: 1, pad_r: 2, min_dy: -2, max_dy: 1 };
            let mut out = vec![0u8; raw.len()];
            band_dispatch_at(level, &geo, &taps, 0, &mut out).map(|()| out)
        });
    }

    /// The definition, element by element.
    fn direct(raw: &[u8], (w, h): (usize, usize), taps: &[(f64, isize, isize)]) -> Vec<u8> {
        let mut out = vec![0u8; raw.len()];
        for y in 0..h {
            for x in 0..w {
                for c in 0..3 {
                    let mut acc = 0.0;
                    for &(wt, dx, dy) in taps {
                        let sy = (y as isize + dy).clamp(0, h as isize - 1) as usize;
                        let sx = (x as isize + dx).clamp(0, w as isize - 1) as usize;
                        acc += wt * f64::from(raw[(sy * w + sx) * 3 + c]);
                    }
                    out[(y * w + x) * 3 + c] = acc.clamp(0.0, 255.0) as u8;
                }
            }
        }
        out
    }

    #[test]
    fn equals_the_direct_sum_for_any_reach_and_size() {
        let tap_sets: [Vec<(f64, isize, isize)>; 4] = [
            vec![(1.0, 0, 0)],
            vec![(0.5, 0, 0), (0.3, 1, -1), (0.2, 2, -3)],
            vec![(0.4, 0, 0), (0.35, -2, 5), (0.25, -40, 1)],
            (0..31)
                .map(|i| (1.0 / 31.0 + i as f64 * 1e-3, i / 2, -(i / 3)))
                .collect(),
        ];
        for (w, h) in [(1, 1), (3, 2), (37, 23), (70, 90)] {
            let raw: Vec<u8> = (0..w * h * 3).map(|i| ((i * 37) ^ (i / 7)) as u8).collect();
            for taps in &tap_sets {
                assert_eq!(
                    streak_rgb(&raw, (w, h), taps),
                    direct(&raw, (w, h), taps),
                    "{w}×{h}"
                );
            }
        }
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
}
