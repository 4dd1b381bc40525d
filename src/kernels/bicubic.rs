//! OpenCV-style bicubic resizing (`cv2.INTER_CUBIC`: a = −0.75, half-pixel centres, replicated
//! edges) of a window of the output only, in f64 with the taps in a fixed order; frost rescales its
//! textures with it (docs/imagenet-c.md#frost). Bands of rows run in parallel; nothing depends on the
//! thread count.

use image::RgbImage;
use rayon::prelude::*;

/// OpenCV's bicubic weights (a = −0.75) for fractional offset `t` ∈ [0, 1): taps at −1, 0, 1, 2.
fn cubic_weights(t: f64) -> [f64; 4] {
    const A: f64 = -0.75;
    let w0 = ((A * (t + 1.0) - 5.0 * A) * (t + 1.0) + 8.0 * A) * (t + 1.0) - 4.0 * A;
    let w1 = ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0;
    let w2 = ((A + 2.0) * (1.0 - t) - (A + 3.0)) * (1.0 - t) * (1.0 - t) + 1.0;
    [w0, w1, w2, 1.0 - w0 - w1 - w2]
}

/// Source taps of output index `o` for OpenCV `resize` (half-pixel centres, edge replication):
/// (indices, weights).
fn cubic_taps(o: u32, src: u32, dst: u32) -> ([usize; 4], [f64; 4]) {
    let f = (f64::from(o) + 0.5) * f64::from(src) / f64::from(dst) - 0.5;
    let s = f.floor();
    let w = cubic_weights(f - s);
    let idx =
        std::array::from_fn(|k| (s as i64 - 1 + k as i64).clamp(0, i64::from(src) - 1) as usize);
    (idx, w)
}

/// The `w`×`h` window at (`left`, `top`) of `texture` resized to `rw`×`rh` with OpenCV-style bicubic
/// (`cv2.INTER_CUBIC`, a = −0.75, half-pixel centres, replicated edges; computed in f64 and rounded, where
/// OpenCV uses 11-bit fixed point: ±1 differences). Only the window is computed. Values on 0..255.
pub fn bicubic_window(
    texture: &RgbImage,
    size: (u32, u32),
    origin: (u32, u32),
    (w, h): (u32, u32),
) -> Vec<f64> {
    let mut out = vec![0.0f64; w as usize * h as usize * 3];
    bicubic_rows(texture, size, origin, (w, h), &mut out, |_, px, o| {
        o.copy_from_slice(px)
    });
    out
}

/// Output rows per rayon task of [`bicubic_rows`].
const BICUBIC_BAND_ROWS: usize = 16;

/// The rows of [`bicubic_window`], each handed to `finish(y, values, out_row)` (values rounded and
/// clamped to 0..=255, `3w` per row) with its `3w`-element row of `out`.
///
/// Per output element the sum is the one [`bicubic_window`] defines — taps (ky, kx) in order, weight
/// `wy·wx`, f64 — computed per row as vector loops: every texture row the window reads is expanded once
/// per band into the four horizontally shifted copies the taps read (a small cache, since consecutive
/// output rows share three of their four texture rows), then blocks of outputs accumulate the 16 taps
/// in registers. Bands of rows run in parallel (AVX2 where available).
pub(crate) fn bicubic_rows<T, F>(
    texture: &RgbImage,
    (rw, rh): (u32, u32),
    (left, top): (u32, u32),
    (w, h): (u32, u32),
    out: &mut [T],
    finish: F,
) where
    T: Send,
    F: Fn(usize, &[f64], &mut [T]) + Sync,
{
    let (tw, th) = texture.dimensions();
    let row_len = 3 * w as usize;
    if row_len == 0 || h == 0 {
        return;
    }
    // Per output element and horizontal tap: the texture element read and the tap's weight.
    // Planes: `xidx[kx·row_len + e]`, `xw[kx·row_len + e]`.
    let mut xidx = vec![0usize; 4 * row_len];
    let mut xw = vec![0.0f64; 4 * row_len];
    for x in 0..w as usize {
        let (xi, wx) = cubic_taps(left + x as u32, tw, rw);
        for c in 0..3 {
            for k in 0..4 {
                xidx[k * row_len + 3 * x + c] = 3 * xi[k] + c;
                xw[k * row_len + 3 * x + c] = wx[k];
            }
        }
    }
    let job = Bicubic {
        raw: texture.as_raw(),
        tw: tw as usize,
        th,
        rh,
        top,
        xidx: &xidx,
        xw: &xw,
    };
    out.par_chunks_mut(row_len * BICUBIC_BAND_ROWS)
        .enumerate()
        .for_each(|(b, band)| {
            bicubic_band_dispatch(&job, b * BICUBIC_BAND_ROWS, band, &finish);
        });
}

/// The shared inputs of [`bicubic_band`].
struct Bicubic<'a> {
    raw: &'a [u8],
    tw: usize,
    th: u32,
    rh: u32,
    top: u32,
    /// Per horizontal tap, per output element: the texture row element read (planes of `row_len`).
    xidx: &'a [usize],
    /// Per horizontal tap, per output element: the tap's weight (planes of `row_len`).
    xw: &'a [f64],
}

crate::kernels::multiversion! {
    /// [`bicubic_band`] compiled for AVX2 where the CPU has it, else portable.
    fn bicubic_band_dispatch[T, F: Fn(usize, &[f64], &mut [T])](
        job: &Bicubic<'_>,
        y0: usize,
        band: &mut [T],
        finish: &F,
    );
    /// [`bicubic_band`] with AVX2 enabled.
    bicubic_band_avx2 ["avx2"] => bicubic_band;
    _ => bicubic_band;
    levels bicubic_band_at;
}

/// Output rows `y0 ..` of [`bicubic_rows`] (as many as `band` holds).
#[inline(always)]
fn bicubic_band<T, F: Fn(usize, &[f64], &mut [T])>(
    job: &Bicubic<'_>,
    y0: usize,
    band: &mut [T],
    finish: &F,
) {
    const B: usize = 8;
    let row_len = job.xidx.len() / 4;
    // Expanded texture rows: slot → (texture row, 4 shifted copies of 3w values).
    let mut slots: Vec<(usize, Vec<f64>)> = (0..5)
        .map(|_| (usize::MAX, vec![0.0; 4 * row_len]))
        .collect();
    let mut acc = vec![0.0f64; row_len];
    for (i, o) in band.chunks_exact_mut(row_len).enumerate() {
        let y = y0 + i;
        let (yi, yw) = cubic_taps(job.top + y as u32, job.th, job.rh);
        let mut which = [0usize; 4];
        for (k, &sy) in yi.iter().enumerate() {
            which[k] = match slots.iter().position(|s| s.0 == sy) {
                Some(p) => p,
                None => {
                    // Evict a slot this row does not use.
                    let p = (0..slots.len())
                        .find(|&p| !yi.contains(&slots[p].0))
                        .expect("5 slots, at most 4 in use");
                    let src = &job.raw[sy * job.tw * 3..][..job.tw * 3];
                    let copies = &mut slots[p].1;
                    for (g, &idx) in copies.iter_mut().zip(job.xidx) {
                        *g = f64::from(src[idx]);
                    }
                    slots[p].0 = sy;
                    p
                }
            };
        }
        let full = row_len / B * B;
        for s in (0..full).step_by(B) {
            let mut a = [0.0f64; B];
            for ky in 0..4 {
                let copies = &slots[which[ky]].1;
                for kx in 0..4 {
                    let g: &[f64; B] = copies[kx * row_len + s..][..B].try_into().expect("block");
                    let wx: &[f64; B] = job.xw[kx * row_len + s..][..B].try_into().expect("block");
                    for l in 0..B {
                        a[l] += (yw[ky] * wx[l]) * g[l];
                    }
                }
            }
            acc[s..s + B].copy_from_slice(&a);
        }
        for (e, a) in acc.iter_mut().enumerate().skip(full) {
            let mut v = 0.0;
            for ky in 0..4 {
                for kx in 0..4 {
                    v += (yw[ky] * job.xw[kx * row_len + e]) * slots[which[ky]].1[kx * row_len + e];
                }
            }
            *a = v;
        }
        for v in acc.iter_mut() {
            *v = v.round().clamp(0.0, 255.0);
        }
        finish(y, &acc, o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bicubic_identity_and_constant() {
        let tex = RgbImage::from_fn(20, 10, |x, y| {
            image::Rgb([(x * 10) as u8, (y * 20) as u8, 7])
        });
        let same = bicubic_window(&tex, (20, 10), (0, 0), (20, 10));
        let raw: Vec<f64> = tex.as_raw().iter().map(|&v| f64::from(v)).collect();
        assert_eq!(same, raw);
        let flat = RgbImage::from_pixel(9, 9, image::Rgb([50, 60, 70]));
        let up = bicubic_window(&flat, (20, 20), (3, 4), (10, 10));
        assert!(up.chunks_exact(3).all(|p| p == [50.0, 60.0, 70.0]));
    }
}
