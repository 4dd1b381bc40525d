//! imagecorruptions' clipped zoom (docs/imagenet-c.md#h3-clipped-zoom: `clipped_zoom` and its
//! axes, also used by snow) and the engine of `zoom_blur` (docs/imagenet-c.md#zoom_blur):
//! the running f32 sum of imagecorruptions' clipped, align-corners-bilinear zooms of one image,
//! computed band by band so that the accumulator stays in cache, with exactly the f64 arithmetic of
//! scipy `zoom(order=1)` per element.
//!
//! Per zoom factor z and output element the reference evaluates (scipy, then cast to float32)
//! `top = a·(1 − tx) + b·tx`, `bot = d·(1 − tx) + e·tx`, `v = top·(1 − ty) + bot·ty` and adds `v as f32`
//! to the running sum, factor after factor. This module does the same operations in the same order,
//! so every output byte is unchanged, but:
//! * bands of rows run in parallel, and inside a band the factors run one after another over a band
//!   accumulator of a few hundred KiB (instead of streaming an image-sized accumulator once per factor);
//! * the horizontal interpolation `top` of a source row is computed once per factor and reused by the
//!   next output row, which (zoom ≥ 1) almost always needs it as its own `top` or `bot`;
//! * along a row the source pixel index is `o + k` with `k` constant over long runs, so the horizontal
//!   interpolation reads two contiguous slices per run (`src[e + da]`, `src[e + db]`) with per-element
//!   weights: plain vectorisable loops, compiled for AVX2 where the CPU has it (Rust never fuses a
//!   multiply and an add, so both builds give identical bits);
//! * the factor 1 (always the first of ImageNet-C's lists) is the identity: `tx = ty = 0`, so
//!   `a·1 + b·0 = a` and the layer is the image itself (added directly, same bits).

use rayon::prelude::*;

use super::lanes;

/// Target size of one band's accumulator in elements (f32): 64 Ki elements = 256 KiB.
const BAND_ELEMENTS: usize = 65_536;

/// A stretch of output elements `[start, end)` of a row whose two horizontal taps read source elements
/// `e + da` and `e + db`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Run {
    start: usize,
    end: usize,
    da: isize,
    db: isize,
}

/// Everything one zoom factor needs, precomputed once per image size.
struct Plan {
    /// `None` for the identity zoom (z = 1).
    horizontal: Option<Horizontal>,
    /// Per output row: (lower source row, upper source row, upper weight).
    ys: Vec<(usize, usize, f64)>,
}

/// The horizontal interpolation of one factor: runs and per-element weights `1 − tx` and `tx`.
struct Horizontal {
    runs: Vec<Run>,
    wa: Vec<f64>,
    wb: Vec<f64>,
}

impl Plan {
    fn new(z: f64, (width, height, channels): (usize, usize, usize)) -> Self {
        let (cw, left, zw) = clipped_zoom_axis(width, z);
        let (chh, top, zh) = clipped_zoom_axis(height, z);
        let ys = zoom_axis(chh, zh, top, height.min(zh));
        if z == 1.0 {
            return Self {
                horizontal: None,
                ys,
            };
        }
        let xs = zoom_axis(cw, zw, left, width.min(zw));
        let row_len = width * channels;
        let mut wa = vec![0.0; row_len];
        let mut wb = vec![0.0; row_len];
        let mut runs: Vec<Run> = Vec::new();
        for (o, &(lo, hi, t)) in xs.iter().enumerate() {
            let (da, db) = (
                (lo as isize - o as isize) * channels as isize,
                (hi as isize - o as isize) * channels as isize,
            );
            for ch in 0..channels {
                wa[o * channels + ch] = 1.0 - t;
                wb[o * channels + ch] = t;
            }
            let (start, end) = (o * channels, (o + 1) * channels);
            match runs.last_mut() {
                Some(r) if r.da == da && r.db == db && r.end == start => r.end = end,
                _ => runs.push(Run { start, end, da, db }),
            }
        }
        Self {
            horizontal: Some(Horizontal { runs, wa, wb }),
            ys,
        }
    }
}

/// zoom_blur of an interleaved u8 image (`width × height × channels`): `x = (v / 255) as f32` (numpy's
/// `(np.array(x) / 255.).astype(np.float32)`), then `zoom_blur_f32`.
pub(crate) fn zoom_blur_u8(raw: &[u8], dims: (usize, usize, usize), factors: &[f64]) -> Vec<u8> {
    lanes::in_pool_or_here(|parallel| {
        let lut: [f32; 256] = std::array::from_fn(|v| (v as f64 / 255.0) as f32);
        let x: Vec<f32> = match parallel {
            true => raw.par_iter().map(|&v| lut[usize::from(v)]).collect(),
            false => raw.iter().map(|&v| lut[usize::from(v)]).collect(),
        };
        zoom_blur_f32_with(&x, dims, factors, parallel)
    })
}

/// `Σ_z clipped_zoom(x, z)` (imagecorruptions' per-axis crop, untrimmed, top-left `width × height` kept)
/// then `floor8(clip((x + Σ) / (count + 1), 0, 1)·255)` in f32 — the whole of zoom_blur after the
/// conversion of the u8 image to f32 `x` (interleaved, `width × height × channels`). Returns the u8
/// buffer. Bit-identical to adding the layers one by one, whatever the thread count.
#[cfg(test)]
fn zoom_blur_f32(x: &[f32], dims: (usize, usize, usize), factors: &[f64]) -> Vec<u8> {
    zoom_blur_f32_with(x, dims, factors, true)
}

/// `zoom_blur_f32` with its bands on rayon's pool (`parallel`) or in order on this thread.
fn zoom_blur_f32_with(
    x: &[f32],
    dims: (usize, usize, usize),
    factors: &[f64],
    parallel: bool,
) -> Vec<u8> {
    let (width, height, channels) = dims;
    let row_len = width * channels;
    assert_eq!(x.len(), row_len * height, "image buffer size");
    let mut out = vec![0u8; x.len()];
    if x.is_empty() {
        return out;
    }
    let plans: Vec<Plan> = factors.iter().map(|&z| Plan::new(z, dims)).collect();
    let n = (factors.len() + 1) as f32;
    let band_rows = (BAND_ELEMENTS / row_len).clamp(4, 64);
    lanes::chunks_each(&mut out, row_len * band_rows, parallel, |b, band| {
        dispatch_band(x, row_len, &plans, n, b * band_rows, band);
    });
    out
}

crate::kernels::multiversion! {
    /// [`band`] compiled for AVX-512F or AVX2 when the CPU has it (no FMA: Rust never fuses a
    /// multiply and an add, so every build gives identical bits;
    /// `every_instruction_set_gives_the_same_bytes`).
    fn dispatch_band(x: &[f32], row_len: usize, plans: &[Plan], n: f32, y0: usize, out: &mut [u8]);
    /// [`band`] with AVX-512F enabled.
    band_avx512 ["avx512f"] => band;
    /// [`band`] with AVX2 enabled.
    band_avx2 ["avx2"] => band;
    _ => band;
    levels dispatch_band_at;
}

/// Two cached horizontally interpolated source rows (row index, values).
struct RowCache {
    rows: [usize; 2],
    data: [Vec<f64>; 2],
}

impl RowCache {
    fn new(row_len: usize) -> Self {
        Self {
            rows: [usize::MAX; 2],
            data: [vec![0.0; row_len], vec![0.0; row_len]],
        }
    }

    /// The slots holding source rows `r0` and `r1`, computing missing ones with `h` from `x`.
    #[inline(always)]
    fn get(
        &mut self,
        r0: usize,
        r1: usize,
        x: &[f32],
        row_len: usize,
        h: &Horizontal,
    ) -> (usize, usize) {
        let s0 = match self.rows.iter().position(|&r| r == r0) {
            Some(s) => s,
            None => {
                // Evict the slot that does not hold r1 (slot 0 if neither does).
                let s = usize::from(self.rows[0] == r1);
                hlerp(&x[r0 * row_len..][..row_len], h, &mut self.data[s]);
                self.rows[s] = r0;
                s
            }
        };
        let s1 = match self.rows.iter().position(|&r| r == r1) {
            Some(s) => s,
            None => {
                let s = 1 - s0;
                hlerp(&x[r1 * row_len..][..row_len], h, &mut self.data[s]);
                self.rows[s] = r1;
                s
            }
        };
        (s0, s1)
    }
}

/// `out[e] = src[e + da]·wa[e] + src[e + db]·wb[e]` (in f64) over every run: one source row
/// interpolated horizontally.
#[inline(always)]
fn hlerp(src: &[f32], h: &Horizontal, out: &mut [f64]) {
    for r in &h.runs {
        let len = r.end - r.start;
        let a = &src[(r.start as isize + r.da) as usize..][..len];
        let b = &src[(r.start as isize + r.db) as usize..][..len];
        let wa = &h.wa[r.start..r.end];
        let wb = &h.wb[r.start..r.end];
        let o = &mut out[r.start..r.end];
        for i in 0..len {
            o[i] = f64::from(a[i]) * wa[i] + f64::from(b[i]) * wb[i];
        }
    }
}

/// Output rows `y0 ..` (as many as `out` holds) of the zoom blur. Consecutive non-identity factors are
/// taken in pairs, so the band's accumulator is read and written once per two factors (the two f32
/// additions per element stay in factor order).
#[inline(always)]
fn band(x: &[f32], row_len: usize, plans: &[Plan], n: f32, y0: usize, out: &mut [u8]) {
    let rows = out.len() / row_len;
    let mut acc = vec![0f32; out.len()];
    let mut caches = [RowCache::new(row_len), RowCache::new(row_len)];
    let mut k = 0;
    while k < plans.len() {
        match (
            &plans[k].horizontal,
            plans.get(k + 1).map(|p| &p.horizontal),
        ) {
            (None, _) => {
                let src = &x[y0 * row_len..][..out.len()];
                for (a, &v) in acc.iter_mut().zip(src) {
                    *a += v;
                }
                k += 1;
            }
            (Some(ha), Some(Some(hb))) => {
                let (pa, pb) = (&plans[k], &plans[k + 1]);
                let [ca, cb] = &mut caches;
                ca.rows = [usize::MAX; 2];
                cb.rows = [usize::MAX; 2];
                for (i, acc_row) in acc.chunks_exact_mut(row_len).enumerate().take(rows) {
                    let (Some(&(a0, a1, ta)), Some(&(b0, b1, tb))) =
                        (pa.ys.get(y0 + i), pb.ys.get(y0 + i))
                    else {
                        continue;
                    };
                    let (sa0, sa1) = ca.get(a0, a1, x, row_len, ha);
                    let (sb0, sb1) = cb.get(b0, b1, x, row_len, hb);
                    let (at, ab) = (&ca.data[sa0], &ca.data[sa1]);
                    let (bt, bb) = (&cb.data[sb0], &cb.data[sb1]);
                    let (ota, otb) = (1.0 - ta, 1.0 - tb);
                    for ((a, (&x0, &x1)), (&y0v, &y1v)) in acc_row
                        .iter_mut()
                        .zip(at.iter().zip(ab))
                        .zip(bt.iter().zip(bb))
                    {
                        let first = *a + (x0 * ota + x1 * ta) as f32;
                        *a = first + (y0v * otb + y1v * tb) as f32;
                    }
                }
                k += 2;
            }
            (Some(h), _) => {
                let cache = &mut caches[0];
                cache.rows = [usize::MAX; 2];
                for (i, acc_row) in acc.chunks_exact_mut(row_len).enumerate().take(rows) {
                    let Some(&(r0, r1, ty)) = plans[k].ys.get(y0 + i) else {
                        continue;
                    };
                    let (s0, s1) = cache.get(r0, r1, x, row_len, h);
                    let (top, bot) = (&cache.data[s0], &cache.data[s1]);
                    let oty = 1.0 - ty;
                    for ((a, &t), &b) in acc_row.iter_mut().zip(top).zip(bot) {
                        *a += (t * oty + b * ty) as f32;
                    }
                }
                k += 1;
            }
        }
    }
    let src = &x[y0 * row_len..][..out.len()];
    for ((o, &a), &v) in out.iter_mut().zip(&acc).zip(src) {
        *o = lanes::floor8_f32((v + a) / n);
    }
}

/// One axis of scipy `zoom(order=1)` (align-corners bilinear, docs/imagenet-c.md#h3-clipped-zoom):
/// for each of the first `keep` output positions of an `n_in → n_out` zoom, the (lower index, upper
/// index, upper weight) taken from the crop starting at `offset`.
pub(crate) fn zoom_axis(
    n_in: usize,
    n_out: usize,
    offset: usize,
    keep: usize,
) -> Vec<(usize, usize, f64)> {
    let scale = if n_out > 1 {
        (n_in as f64 - 1.0) / (n_out as f64 - 1.0)
    } else {
        1.0
    };
    (0..keep)
        .map(|o| {
            let c = (o as f64 * scale).min(n_in as f64 - 1.0).max(0.0);
            let lo = (c.floor() as usize).min(n_in - 1);
            let hi = (lo + 1).min(n_in - 1);
            (offset + lo, offset + hi, c - lo as f64)
        })
        .collect()
}

/// The crop size, crop offset and zoomed size of one axis of imagecorruptions' `clipped_zoom`:
/// `ch = ceil(n / z)`, `top = (n − ch) // 2`, `out = round(ch · z)` (Python round, half to even).
pub(crate) fn clipped_zoom_axis(n: usize, z: f64) -> (usize, usize, usize) {
    let ch = (n as f64 / z).ceil() as usize;
    let top = n.saturating_sub(ch) / 2;
    let out = (ch as f64 * z).round_ties_even() as usize;
    (ch, top, out)
}

/// imagecorruptions' `clipped_zoom(img, z)` (docs/imagenet-c.md#h3-clipped-zoom, IC variant, z ≥ 1)
/// followed by its callers' top-left crop: each axis cropped with its own size
/// ([`clipped_zoom_axis`]) — so non-square frames work — zoomed with scipy `zoom(order=1)`
/// (align-corners bilinear, computed in f64) and **not** trimmed; the top-left `out_w × out_h` of
/// the zoomed crop is returned (the zoomed crop is never smaller than the input; pass the zoomed
/// size from [`clipped_zoom_axis`] to get all of it). Interleaved f32 in and out, as zoom_blur
/// holds its image in float32 (scipy computes in f64 and stores the input's type).
#[cfg(test)]
fn clipped_zoom(
    data: &[f32],
    dims: (usize, usize, usize),
    z: f64,
    out: (usize, usize),
) -> Vec<f32> {
    clipped_zoom_generic(data, dims, z, out, |v| v as f32)
}

/// The body of [`clipped_zoom`] for any element type that widens to f64; `store` narrows the result.
#[cfg(test)]
fn clipped_zoom_generic<T>(
    data: &[T],
    (width, height, channels): (usize, usize, usize),
    z: f64,
    (out_w, out_h): (usize, usize),
    store: fn(f64) -> T,
) -> Vec<T>
where
    T: Copy + Into<f64> + Default + Send + Sync,
{
    let (cw, left, zw) = clipped_zoom_axis(width, z);
    let (chh, top, zh) = clipped_zoom_axis(height, z);
    let xs = zoom_axis(cw, zw, left, out_w.min(zw));
    let ys = zoom_axis(chh, zh, top, out_h.min(zh));
    let row_len = out_w * channels;
    let mut out = vec![T::default(); row_len * out_h];
    if row_len == 0 || data.is_empty() {
        return out;
    }
    out.par_chunks_mut(row_len)
        .zip(ys.par_iter())
        .for_each(|(o, &(y0, y1, ty))| {
            let r0 = &data[y0 * width * channels..(y0 + 1) * width * channels];
            let r1 = &data[y1 * width * channels..(y1 + 1) * width * channels];
            for (p, &(x0, x1, tx)) in o.chunks_exact_mut(channels).zip(&xs) {
                for c in 0..channels {
                    let a: f64 = r0[x0 * channels + c].into();
                    let b: f64 = r0[x1 * channels + c].into();
                    let d: f64 = r1[x0 * channels + c].into();
                    let e: f64 = r1[x1 * channels + c].into();
                    let top = a * (1.0 - tx) + b * tx;
                    let bot = d * (1.0 - tx) + e * tx;
                    p[c] = store(top * (1.0 - ty) + bot * ty);
                }
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference formulation: every layer materialised by `kernels::clipped_zoom`, added in order.
    fn naive(x: &[f32], dims: (usize, usize, usize), factors: &[f64]) -> Vec<u8> {
        let mut acc = vec![0f32; x.len()];
        for &z in factors {
            let layer = clipped_zoom(x, dims, z, (dims.0, dims.1));
            acc.iter_mut().zip(&layer).for_each(|(a, l)| *a += l);
        }
        let n = (factors.len() + 1) as f32;
        x.iter()
            .zip(&acc)
            .map(|(&v, &a)| (((v + a) / n).clamp(0.0, 1.0) * 255.0) as u8)
            .collect()
    }

    fn image(w: usize, h: usize) -> Vec<f32> {
        (0..w * h * 3)
            .map(|i| (((i * 37) ^ (i / 7)) % 256) as f32 / 255.0)
            .collect()
    }

    #[test]
    fn matches_the_layer_by_layer_sum_bit_for_bit() {
        for (w, h) in [(1, 1), (2, 3), (37, 23), (64, 48), (300, 17), (17, 300)] {
            let x = image(w, h);
            for factors in [
                vec![1.0],
                vec![1.0, 1.01, 1.02, 1.11],
                vec![1.0, 1.03, 1.3000000000000003],
                vec![2.5, 1.0, 4.5],
            ] {
                assert_eq!(
                    zoom_blur_f32(&x, (w, h, 3), &factors),
                    naive(&x, (w, h, 3), &factors),
                    "{w}×{h} {factors:?}"
                );
            }
        }
    }

    #[test]
    fn every_instruction_set_gives_the_same_bytes() {
        let (w, h) = (71, 40);
        let x = image(w, h);
        let factors = [1.0, 1.02, 1.04, 1.3000000000000003];
        let plans: Vec<Plan> = factors.iter().map(|&z| Plan::new(z, (w, h, 3))).collect();
        let n = (factors.len() + 1) as f32;
        let want = naive(&x, (w, h, 3), &factors);
        let mut portable = vec![0u8; x.len()];
        band(&x, w * 3, &plans, n, 0, &mut portable);
        assert_eq!(portable, want);
        // The levels of `dispatch_band` this CPU has, in its listed order.
        for (level, feature) in [(1, "avx512f"), (2, "avx2")] {
            let mut got = vec![0u8; x.len()];
            if dispatch_band_at(level, &x, w * 3, &plans, n, 0, &mut got).is_some() {
                assert_eq!(got, want, "{feature}");
            }
        }
    }

    #[test]
    fn runs_cover_the_row_and_follow_the_taps() {
        let plan = Plan::new(1.3, (50, 20, 3));
        let h = plan.horizontal.expect("not the identity");
        assert_eq!(h.runs.first().map(|r| r.start), Some(0));
        assert_eq!(h.runs.last().map(|r| r.end), Some(150));
        assert!(h.runs.windows(2).all(|w| w[0].end == w[1].start));
        // Left crop offset: ceil(50/1.3) = 39 → (50 − 39)/2 = 5, so the first tap reads pixel 5.
        assert_eq!(h.runs[0].da, 15);
        assert!(Plan::new(1.0, (50, 20, 3)).horizontal.is_none());
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
}
