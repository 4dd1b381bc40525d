//! OpenCV's 8-bit edge and distance operations, ported exactly as OpenCV 4.8.1 computes them:
//! `Canny` (aperture 3, L1 gradient), `distanceTransform` (L2, 5×5 mask), `equalizeHist`, and the
//! 3×3 neighbourhood sums and row triples (reflect-101 borders) its box and `filter2D` filters are
//! built from. spatter's water branch (docs/imagenet-c.md#spatter) chains them.
//!
//! Rows run in parallel wherever a row's result depends only on its neighbours, so no result depends
//! on the thread count.

use rayon::prelude::*;

use super::filter::{Border, border_index};

/// Rows per rayon task of the row-parallel stages (at least one).
pub(crate) fn rows_per_task(w: usize) -> usize {
    (16_384 / w.max(1)).max(1)
}

/// OpenCV `Canny(img, low, high)` with aperture 3 and the L1 gradient (its defaults): Sobel with
/// replicated borders, magnitude |dx| + |dy|, non-maximum suppression in four directions (OpenCV's
/// tan 22.5° / 67.5° sectors and its `>`/`>=` tie rule), hysteresis from pixels above `high` through
/// 8-connected pixels above `low`. Returns 255 on edges, 0 elsewhere. The gradient and the
/// suppression run on rows in parallel (each pixel's result depends only on its neighbours); the
/// hysteresis is a flood fill, whose result does not depend on the visiting order.
pub(crate) fn canny(img: &[u8], w: usize, h: usize, low: i32, high: i32) -> Vec<u8> {
    if w == 0 || h == 0 {
        return Vec::new();
    }
    let per = rows_per_task(w);
    // Sobel and non-maximum suppression fused per band of rows: a ring of three Sobel rows (the
    // band's first row is preceded by its neighbour above, recomputed), so no whole-image gradient
    // planes are stored. Map: 0 = not an edge, 1 = candidate, 2 = edge.
    let mut map = vec![0u8; w * h];
    map.par_chunks_mut(w * per)
        .enumerate()
        .for_each(|(t, rows)| {
            let pw = w + 2;
            // Ring slot of row y (−1 ≤ y ≤ h): (y + 1) mod 3. Magnitudes padded by a zero column
            // on each side; rows outside the image stay all zero (OpenCV's zero border).
            let mut mag = vec![0i32; 3 * pw];
            let mut gx = vec![0i32; 3 * w];
            let mut gy = vec![0i32; 3 * w];
            let (mut vs, mut vd) = (vec![0i32; pw], vec![0i32; pw]);
            let mut sobel = |y: isize, mag: &mut [i32], gx: &mut [i32], gy: &mut [i32]| {
                let k = ((y + 1) % 3) as usize;
                let m = &mut mag[k * pw..(k + 1) * pw];
                if y < 0 || y >= h as isize {
                    m.fill(0);
                    return;
                }
                let y = y as usize;
                let row = |sy: usize| &img[sy * w..(sy + 1) * w];
                let (a, b, c) = (row(y.saturating_sub(1)), row(y), row((y + 1).min(h - 1)));
                let (gx, gy) = (&mut gx[k * w..(k + 1) * w], &mut gy[k * w..(k + 1) * w]);
                sobel_row(a, b, c, (&mut vs, &mut vd), gx, gy, &mut m[1..=w]);
            };
            let y0 = (t * per) as isize;
            sobel(y0 - 1, &mut mag, &mut gx, &mut gy);
            sobel(y0, &mut mag, &mut gx, &mut gy);
            for (i, out) in rows.chunks_exact_mut(w).enumerate() {
                let y = y0 + i as isize;
                sobel(y + 1, &mut mag, &mut gx, &mut gy);
                let slot = |y: isize| ((y + 1) % 3) as usize;
                let ring = |y: isize| &mag[slot(y) * pw..(slot(y) + 1) * pw];
                let k = slot(y);
                nms_row(
                    [ring(y - 1), ring(y), ring(y + 1)],
                    (&gx[k * w..(k + 1) * w], &gy[k * w..(k + 1) * w]),
                    out,
                    (low, high),
                );
            }
        });
    let mut stack: Vec<usize> = map
        .iter()
        .enumerate()
        .filter(|&(_, &v)| v == 2)
        .map(|(i, _)| i)
        .collect();
    while let Some(i) = stack.pop() {
        let (y, x) = (i / w, i % w);
        for ny in y.saturating_sub(1)..=(y + 1).min(h - 1) {
            for nx in x.saturating_sub(1)..=(x + 1).min(w - 1) {
                let j = ny * w + nx;
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

/// One row of Canny's Sobel step from the source rows above (`a`), at (`b`) and below (`c`) (already
/// replicated at the top and bottom): `gx = Σ_x±1 (a + 2b + c)` differences, `gy` the `[1, 2, 1]`
/// weighted sum of `c − a`, and `m = |gx| + |gy|`, with replicated columns at the left and right
/// edges. `vs`/`vd` are scratch rows of `w + 2`. Element-wise loops the compiler vectorises.
fn sobel_row(
    a: &[u8],
    b: &[u8],
    c: &[u8],
    (vs, vd): (&mut [i32], &mut [i32]),
    gx: &mut [i32],
    gy: &mut [i32],
    m: &mut [i32],
) {
    let w = b.len();
    for ((((s, d), &a), &b), &c) in vs[1..=w]
        .iter_mut()
        .zip(&mut vd[1..=w])
        .zip(a)
        .zip(b)
        .zip(c)
    {
        let (a, b, c) = (i32::from(a), i32::from(b), i32::from(c));
        *s = a + 2 * b + c;
        *d = c - a;
    }
    (vs[0], vs[w + 1], vd[0], vd[w + 1]) = (vs[1], vs[w], vd[1], vd[w]);
    let (vs, vd) = (&vs[..w + 2], &vd[..w + 2]);
    for (x, ((gx, gy), m)) in gx
        .iter_mut()
        .zip(gy.iter_mut())
        .zip(m.iter_mut())
        .enumerate()
    {
        let sx = vs[x + 2] - vs[x];
        let sy = vd[x] + 2 * vd[x + 1] + vd[x + 2];
        *gx = sx;
        *gy = sy;
        *m = sx.abs() + sy.abs();
    }
}

crate::kernels::multiversion! {
    /// One row of Canny's non-maximum suppression, branch-free so that it vectorises: `m` holds the
    /// magnitudes of the rows above, at and below (each padded by one zero column: pixel x at x +
    /// 1), `(gx, gy)` the row's gradients. A pixel above `low` is kept when it is a maximum along
    /// its gradient's direction sector (OpenCV's tan 22.5° / 67.5° sectors in 15-bit fixed point,
    /// `>` on one side and `>=` on the other along the axes, `>` on both along the diagonals); kept
    /// pixels are 2 above `high`, 1 otherwise; the rest 0.
    fn nms_row(m: [&[i32]; 3], g: (&[i32], &[i32]), out: &mut [u8], thresholds: (i32, i32));
    /// [`nms_row`] compiled for AVX2 (the same operations, 8 lanes).
    nms_row_avx2 ["avx2"] => nms_row_body;
    _ => nms_row_body;
    levels nms_row_at;
}

/// The body of [`nms_row`]: every input cut to the row's length first, so the loop has no bounds
/// checks and every choice is a select.
#[inline(always)]
fn nms_row_body(
    m: [&[i32]; 3],
    (gx, gy): (&[i32], &[i32]),
    out: &mut [u8],
    (low, high): (i32, i32),
) {
    const TG22: i32 = 13573; // tan(22.5°)·2^15, as OpenCV; |g| ≤ 1020 keeps every product in i32
    let w = out.len();
    fn cut(r: &[i32], o: usize, w: usize) -> &[i32] {
        &r[o..o + w]
    }
    let [up, mid, down] = m;
    let (ul, uc, ur) = (cut(up, 0, w), cut(up, 1, w), cut(up, 2, w));
    let (ml, mc, mr) = (cut(mid, 0, w), cut(mid, 1, w), cut(mid, 2, w));
    let (dl, dc, dr) = (cut(down, 0, w), cut(down, 1, w), cut(down, 2, w));
    let (gx, gy) = (&gx[..w], &gy[..w]);
    for x in 0..w {
        let v = mc[x];
        let (dx, dy) = (gx[x], gy[x]);
        let xs = dx.abs();
        let ys = dy.abs() << 15;
        let tg22x = xs * TG22;
        let tg67x = tg22x + (xs << 16);
        let along_x = (v > ml[x]) & (v >= mr[x]);
        let along_y = (v > uc[x]) & (v >= dc[x]);
        let falling = (v > ur[x]) & (v > dl[x]);
        let rising = (v > ul[x]) & (v > dr[x]);
        let negative = (dx ^ dy) < 0;
        let diagonal = (negative & falling) | (!negative & rising);
        let flat = ys < tg22x;
        let steep = !flat & (ys > tg67x);
        let keep = (flat & along_x) | (steep & along_y) | (!flat & !steep & diagonal);
        let keep = keep & (v > low);
        out[x] = u8::from(keep) * (1 + u8::from(v > high));
    }
}

/// `min(a, b)` for numbers that are never NaN (compiles to one vector instruction).
#[inline(always)]
fn fmin(a: f32, b: f32) -> f32 {
    if b < a { b } else { a }
}

crate::kernels::multiversion! {
    /// `row[x] = min(row[x], n₀[x] + C, n₁[x] + C, n₂[x] + C, n₃[x] + B, n₄[x] + A, n₅[x] + B,
    /// n₆[x] + C)`: the candidates of a distance-transform pass from the two rows already done
    /// (knight, knight, knight, diagonal, axial, diagonal, knight), element-wise.
    fn vertical_candidates(row: &mut [f32], n: [&[f32]; 7]);
    /// [`vertical_candidates`] compiled for AVX2 (the same operations, 8 lanes).
    vertical_candidates_avx2 ["avx2"] => vertical_candidates_body;
    _ => vertical_candidates_body;
    levels vertical_candidates_at;
}

/// The body of [`vertical_candidates`].
#[inline(always)]
fn vertical_candidates_body(row: &mut [f32], n: [&[f32]; 7]) {
    const COSTS: [f32; 7] = [2.1969, 2.1969, 2.1969, 1.4, 1.0, 1.4, 2.1969];
    let len = row.len();
    let n = n.map(|s| &s[..len]);
    for (x, v) in row.iter_mut().enumerate() {
        let mut m = *v;
        for (s, c) in n.iter().zip(COSTS) {
            m = fmin(m, s[x] + c);
        }
        *v = m;
    }
}

/// The in-row step of a distance-transform pass over `s` (its first and last elements are the
/// padding): `s[i] = min(s[i], s[i − 1] + 1)` for i = 1..n−1 in order (forward), or
/// `s[i] = min(s[i], s[i + 1] + 1)` from the right (backward).
///
/// The sequential scan is a chain of dependent additions; instead, up to 24 element-wise relaxation
/// sweeps (every element from its neighbour's value before the sweep, vectorised) run first, and the
/// scan only if the values still change. Exact: rounding is monotonic, so `fl(min(a, b) + 1)` =
/// `min(fl(a + 1), fl(b + 1))`; each sweep extends every chain `s[i − k] + 1 + … + 1` (the additions
/// in the scan's order) by one step, the values never drop below the scan's result, and the scan over
/// any such intermediate values gives its usual result.
fn scan_row(s: &mut [f32], tmp: &mut [f32], forward: bool) {
    for _ in 0..24 {
        if !relax(s, tmp, forward) {
            return;
        }
    }
    let n = s.len();
    if forward {
        for i in 1..n - 1 {
            s[i] = fmin(s[i], s[i - 1] + 1.0);
        }
    } else {
        for i in (1..n - 1).rev() {
            s[i] = fmin(s[i], s[i + 1] + 1.0);
        }
    }
}

crate::kernels::multiversion! {
    /// One relaxation sweep of [`scan_row`]; whether anything changed.
    fn relax(s: &mut [f32], tmp: &mut [f32], forward: bool) -> bool;
    /// [`relax`] compiled for AVX2.
    relax_avx2 ["avx2"] => relax_body;
    _ => relax_body;
    levels relax_at;
}

/// The body of [`relax`].
#[inline(always)]
fn relax_body(s: &mut [f32], tmp: &mut [f32], forward: bool) -> bool {
    let n = s.len();
    let tmp = &mut tmp[..n];
    tmp.copy_from_slice(s);
    let (inner, from) = if forward {
        (&mut s[1..n - 1], &tmp[..n - 2])
    } else {
        (&mut s[1..n - 1], &tmp[2..])
    };
    let mut changed = 0u32;
    for ((v, &old), &nb) in inner.iter_mut().zip(&tmp[1..n - 1]).zip(from) {
        let c = nb + 1.0;
        changed |= u32::from(c < old);
        *v = fmin(old, c);
    }
    changed != 0
}

/// OpenCV `distanceTransform(src, DIST_L2, 5)`: 5×5 chamfer distance (costs 1, 1.4, 2.1969 for axial,
/// diagonal and knight moves, added in f32 as OpenCV 4.8) to the nearest zero pixel, two passes;
/// pixels outside the image are far. With no zero pixel every distance is huge (≥ 1e9).
///
/// Each pass handles a row in two steps: the candidates from the two rows already done, element-wise
/// (vectorised), then the one from the pixel before in the same row ([`scan_row`]). `min` is exact,
/// so this equals the pixel-by-pixel scan, bit for bit.
#[cfg(test)]
fn distance_transform_l2_5(src: &[u8], w: usize, h: usize) -> Vec<f32> {
    distance_capped(src, w, h, 1e9, 0)
}

/// `distance_transform_l2_5` with `far` (instead of 1e9) for the non-zero pixels and outside the
/// image. Every result is the minimum over chains of additions starting from a zero pixel (equal for
/// any `far`) or from a far one (≥ `far`), so `min(result, c)` is the same for every `far` ≥ c; a
/// small `far` keeps the in-row propagation short. The distances are to the pixels equal to `zero`
/// (0 for OpenCV's convention; 255 measures from Canny's edges without inverting them first).
pub(crate) fn distance_capped(src: &[u8], w: usize, h: usize, far: f32, zero: u8) -> Vec<f32> {
    if w == 0 || h == 0 {
        return Vec::new();
    }
    // Padded by two far pixels on every side.
    let pw = w + 4;
    let mut tmp = vec![0.0f32; w + 2];
    let mut d = vec![far; pw * (h + 4)];
    for (row, s) in d[2 * pw..].chunks_exact_mut(pw).zip(src.chunks_exact(w)) {
        for (v, &s) in row[2..w + 2].iter_mut().zip(s) {
            *v = if s == zero { 0.0 } else { far };
        }
    }
    for py in 2..h + 2 {
        let (done, rest) = d.split_at_mut(py * pw);
        let (r2, r1) = (&done[(py - 2) * pw..(py - 1) * pw], &done[(py - 1) * pw..]);
        let row = &mut rest[..pw];
        vertical_candidates(
            &mut row[2..w + 2],
            [
                &r2[1..],
                &r2[3..],
                r1,
                &r1[1..],
                &r1[2..],
                &r1[3..],
                &r1[4..],
            ],
        );
        scan_row(&mut row[1..w + 3], &mut tmp, true);
    }
    for py in (2..h + 2).rev() {
        let (head, below) = d.split_at_mut((py + 1) * pw);
        let (r1, r2) = (&below[..pw], &below[pw..2 * pw]);
        let row = &mut head[py * pw..];
        vertical_candidates(
            &mut row[2..w + 2],
            [
                &r2[3..],
                &r2[1..],
                &r1[4..],
                &r1[3..],
                &r1[2..],
                &r1[1..],
                r1,
            ],
        );
        scan_row(&mut row[1..w + 3], &mut tmp, false);
    }
    d[2 * pw..(h + 2) * pw]
        .chunks_exact(pw)
        .flat_map(|row| row[2..w + 2].iter().copied())
        .collect()
}

/// For every row y of a `w × h` single-channel image, in parallel: `f(rows, out_row)` with rows
/// y − 1, y, y + 1 (reflect-101) each padded by one column on both sides (reflect-101), so that
/// `rows[k][x + j]` is the pixel at (y + k − 1, x + j − 1).
pub(crate) fn rows3<T, U, F>(src: &[T], w: usize, h: usize, out: &mut [U], f: F)
where
    T: Copy + Default + Send + Sync,
    U: Send,
    F: Fn(&[&[T]; 3], &mut [U]) + Sync,
{
    let pw = w + 2;
    let per = rows_per_task(w);
    out.par_chunks_mut(w * per)
        .enumerate()
        .for_each(|(t, rows)| {
            let mut buf = vec![T::default(); 3 * pw];
            for (i, o) in rows.chunks_exact_mut(w).enumerate() {
                let y = t * per + i;
                for (k, p) in buf.chunks_exact_mut(pw).enumerate() {
                    let sy = border_index(y as isize + k as isize - 1, h, Border::Reflect101);
                    let row = &src[sy * w..(sy + 1) * w];
                    p[1..=w].copy_from_slice(row);
                    p[0] = row[border_index(-1, w, Border::Reflect101)];
                    p[w + 1] = row[border_index(w as isize, w, Border::Reflect101)];
                }
                let (a, rest) = buf.split_at(pw);
                let (b, c) = rest.split_at(pw);
                f(&[a, b, c], o);
            }
        });
}

/// OpenCV `equalizeHist` on u8: LUT from the cumulative histogram above the lowest occupied bin,
/// `round(cum · 255 / (N − hist[lowest]))`; a single-valued image maps to that value.
pub(crate) fn equalize_hist(src: &[u8]) -> Vec<u8> {
    let mut hist = src
        .par_chunks(1 << 16)
        .map(|chunk| {
            let mut hist = [0usize; 256];
            for &v in chunk {
                hist[usize::from(v)] += 1;
            }
            hist
        })
        .reduce(
            || [0usize; 256],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
                a
            },
        );
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
    hist.fill(0);
    src.par_iter().map(|&v| lut[usize::from(v)]).collect()
}

/// Sums of every 3×3 neighbourhood of a `w × h` plane (reflect-101 borders, as OpenCV's box
/// filters), the values converted to i32 by `conv` (the sums must fit in i32), handed row by row to
/// `fin(sums, out_row)`. Separable: each band of rows (in parallel) keeps a ring of three rows of
/// horizontal sums, so every source row is summed once per band rather than three times.
pub(crate) fn box3<T, U, C, F>(src: &[T], (w, h): (usize, usize), out: &mut [U], conv: C, fin: F)
where
    T: Copy + Sync,
    U: Send,
    C: Fn(T) -> i32 + Sync,
    F: Fn(&[i32], &mut [U]) + Sync,
{
    let per = rows_per_task(w);
    out.par_chunks_mut(w * per)
        .enumerate()
        .for_each(|(t, rows)| {
            let mut ring = vec![0i32; 3 * w];
            let mut have = [usize::MAX; 3];
            let mut sums = vec![0i32; w];
            for (i, out) in rows.chunks_exact_mut(w).enumerate() {
                let y = t * per + i;
                let near =
                    [-1isize, 0, 1].map(|k| border_index(y as isize + k, h, Border::Reflect101));
                for &r in &near {
                    if have[r % 3] != r {
                        hsum3(&src[r * w..(r + 1) * w], &mut ring[r % 3 * w..][..w], &conv);
                        have[r % 3] = r;
                    }
                }
                let [a, b, c] = near.map(|r| &ring[r % 3 * w..][..w]);
                for (((s, &a), &b), &c) in sums.iter_mut().zip(a).zip(b).zip(c) {
                    *s = a + b + c;
                }
                fin(&sums, out);
            }
        });
}

/// `dst[x] = conv(s[x − 1]) + conv(s[x]) + conv(s[x + 1])` with reflect-101 columns.
fn hsum3<T: Copy>(s: &[T], dst: &mut [i32], conv: &impl Fn(T) -> i32) {
    let w = s.len();
    if w == 1 {
        dst[0] = 3 * conv(s[0]);
        return;
    }
    let dst = &mut dst[..w];
    for x in 1..w - 1 {
        dst[x] = conv(s[x - 1]) + conv(s[x]) + conv(s[x + 1]);
    }
    dst[0] = 2 * conv(s[1]) + conv(s[0]);
    dst[w - 1] = 2 * conv(s[w - 2]) + conv(s[w - 1]);
}

#[cfg(test)]
pub(crate) mod tests;
