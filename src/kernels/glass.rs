//! The engine of `glass_blur` (docs/imagenet-c.md#glass_blur): two scipy Gaussian filters around
//! the sequential pixel-copy walk, organised so that only the walk itself is sequential.
//!
//! * **Gaussian passes** (docs/imagenet-c.md#h1-gaussian-filter, truncate 4, 'nearest' border):
//!   scipy's `correlate1d` notices that a Gaussian kernel is symmetric and computes
//!   `in[0]·w₀ + Σ_{j=r..1} (in[−j] + in[+j])·w_j` (outermost pair first), axis 0 (vertical) then
//!   axis 1 (horizontal), in f64. This module does exactly those operations (so the u8 results are
//!   scipy's, bit for bit), fused per band of rows: the rows a band needs are converted to f64 into
//!   a ring of 2r + 1 rows, filtered vertically into a padded row, filtered horizontally and stored
//!   as u8 straight away — no image-sized f64 buffer, bands in parallel. Compiled for AVX2 where
//!   the CPU has it (no fused multiply-add either way: same bits).
//! * **Walk**: inherently sequential (each copy may read what an earlier one wrote,
//!   docs/imagenet-c.md#glass_blur), so it is kept as one loop in the reference's order, made as
//!   cheap as possible: pixels are packed into one `u32` each (one load, one store per copy), and
//!   the random offsets are not drawn inside the loop: every walked row of every iteration draws
//!   from its own keyed stream, converted in parallel into relative source offsets, the next
//!   iteration's while the current one walks.

use rand::RngExt;
use rayon::prelude::*;

use super::gaussian::gaussian_kernel1d;
use super::lanes;
use super::rowrng::for_each_row_element;
use crate::rng::RngKey;

/// Walk offsets drawn per rayon task (a few tens of microseconds of work).
const OFFSETS_PER_TASK: usize = 16_384;

/// scipy's Gaussian `truncate` for glass_blur (skimage's default 4.0,
/// docs/imagenet-c.md#h1-gaussian-filter).
pub(crate) const TRUNCATE: f64 = 4.0;

/// ImageNet-C `glass_blur` on an interleaved RGB u8 buffer of `w × h`: blur (σ, then floor8 without
/// clipping as `np.uint8(gaussian(x/255)·255)`), `iterations` sequential walks with offsets in
/// {−δ, …, δ−1}, blur again and `floor8(clip(·, 0, 1)·255)`. See `blur::glass_blur` for the semantics.
pub(crate) fn glass_blur_rgb(
    raw: &[u8],
    (w, h): (usize, usize),
    sigma: f64,
    delta: usize,
    iterations: usize,
    rng: RngKey,
) -> Vec<u8> {
    lanes::in_pool(|| glass_blur_rgb_body(raw, (w, h), sigma, delta, iterations, rng))
}

/// The body of [`glass_blur_rgb`].
fn glass_blur_rgb_body(
    raw: &[u8],
    (w, h): (usize, usize),
    sigma: f64,
    delta: usize,
    iterations: usize,
    rng: RngKey,
) -> Vec<u8> {
    assert_eq!(raw.len(), w * h * 3, "RGB buffer size");
    if raw.is_empty() {
        return Vec::new();
    }
    let k = gaussian_kernel1d(sigma, TRUNCATE);
    let unit: [f64; 256] = std::array::from_fn(|v| v as f64 / 255.0);
    // 1. x1 = uint8(H1(x / 255)·255), packed one pixel per u32.
    let mut px = vec![0u32; w * h];
    gaussian_rows(
        raw,
        3 * w,
        (w, h),
        &k,
        &mut px,
        w,
        |src, row| {
            row.iter_mut()
                .zip(src)
                .for_each(|(d, &v)| *d = unit[usize::from(v)])
        },
        |row, out| {
            for (o, p) in out.iter_mut().zip(row.chunks_exact(3)) {
                let c = |i: usize| u32::from(lanes::trunc_u8(p[i] * 255.0));
                *o = c(0) | c(1) << 8 | c(2) << 16;
            }
        },
    );
    // 2. The walk.
    walk(&mut px, w, h, delta, iterations, rng);
    // 3. floor8(clip(H1(x1 / 255))).
    let mut out = vec![0u8; w * h * 3];
    gaussian_rows(
        &px,
        w,
        (w, h),
        &k,
        &mut out,
        3 * w,
        |src, row| {
            for (d, &p) in row.chunks_exact_mut(3).zip(src) {
                d[0] = unit[(p & 0xff) as usize];
                d[1] = unit[(p >> 8 & 0xff) as usize];
                d[2] = unit[(p >> 16 & 0xff) as usize];
            }
        },
        |row, out| {
            out.iter_mut()
                .zip(row)
                .for_each(|(o, &v)| *o = lanes::floor8(v))
        },
    );
    out
}

/// Step 2 of glass_blur on packed pixels (`w × h`, one `u32` per pixel): `iterations` times, for row
/// y = h−δ down to δ+1 and, inside, column x = w−δ down to δ+1, pixel (y, x) ← pixel (y + dy, x + dx)
/// with dx, dy uniform in {−δ, …, δ−1}, in place and in that order (docs/imagenet-c.md#glass_blur).
///
/// Randomness: walked row `i` (counting from the bottom, i = 0 for y = h−δ) of iteration `it` draws
/// from `rng.stream(it·h + i)`, one 64-bit word per pixel in walk order: dx from its low 32 bits, dy
/// from its high 32 bits, each mapped to the 2δ values by Lemire's multiply (bias < 2⁻²⁹). Frames with
/// a side ≤ 2δ + 1 (or δ = 0) are not walked: the reference's ranges are empty.
pub(crate) fn walk(
    px: &mut [u32],
    w: usize,
    h: usize,
    delta: usize,
    iterations: usize,
    rng: RngKey,
) {
    assert_eq!(px.len(), w * h, "pixel buffer size");
    if delta == 0 || iterations == 0 || h <= 2 * delta + 1 || w <= 2 * delta + 1 {
        return;
    }
    let (nw, nh) = (w - 2 * delta, h - 2 * delta);
    let mut current = vec![0i32; nw * nh];
    let mut next = vec![0i32; nw * nh];
    offsets(&mut current, 0, (w, h), delta, rng);
    for it in 0..iterations {
        if it + 1 < iterations {
            rayon::join(
                || copy_pass(px, w, h, delta, &current),
                || offsets(&mut next, it + 1, (w, h), delta, rng),
            );
            std::mem::swap(&mut current, &mut next);
        } else {
            copy_pass(px, w, h, delta, &current);
        }
    }
}

/// The relative source offsets `dy·w + dx` of iteration `it`, walked row by walked row (see [`walk`]).
fn offsets(out: &mut [i32], it: usize, (w, h): (usize, usize), delta: usize, rng: RngKey) {
    let nw = w - 2 * delta;
    let span = 2 * delta as u64;
    let off = |u: u32| ((u64::from(u) * span) >> 32) as i32 - delta as i32;
    let wi = w as i32;
    let rows_per_task = (OFFSETS_PER_TASK / nw).max(1);
    out.par_chunks_mut(nw * rows_per_task)
        .enumerate()
        .for_each(|(t, rows)| {
            let first = (it * h + t * rows_per_task) as u64;
            for_each_row_element(rows, nw, rng, first, |r, o| {
                let bits: u64 = r.random();
                *o = off((bits >> 32) as u32) * wi + off(bits as u32);
            });
        });
}

/// One iteration of the walk with precomputed offsets.
fn copy_pass(px: &mut [u32], w: usize, h: usize, delta: usize, offsets: &[i32]) {
    let nw = w - 2 * delta;
    for (row, y) in offsets.chunks_exact(nw).zip((delta + 1..=h - delta).rev()) {
        let base = y * w;
        for (&o, x) in row.iter().zip((delta + 1..=w - delta).rev()) {
            let d = base + x;
            px[d] = px[(d as isize + o as isize) as usize];
        }
    }
}

/// Rows per band of the fused Gaussian: enough rows to amortise the ring's warm-up (2r rows), few
/// enough to give every thread several bands.
fn band_rows(h: usize) -> usize {
    h.div_ceil(8).clamp(8, 64)
}

/// scipy `gaussian_filter` (σ, σ, 0), mode 'nearest', of a `w × h` RGB image held in any row format:
/// `load(src_row, f64_row)` converts one source row (`src_stride` elements) into `3w` f64 values,
/// `store(f64_row, out_row)` writes one filtered row into `out` (`out_stride` elements per row).
/// Symmetric-kernel evaluation order of scipy's `correlate1d`, axis 0 first (see the module notes).
#[allow(clippy::too_many_arguments)]
fn gaussian_rows<S, D, L, T>(
    src: &[S],
    src_stride: usize,
    (w, h): (usize, usize),
    k: &[f64],
    out: &mut [D],
    out_stride: usize,
    load: L,
    store: T,
) where
    S: Sync,
    D: Send,
    L: Fn(&[S], &mut [f64]) + Sync,
    T: Fn(&[f64], &mut [D]) + Sync,
{
    let rows = band_rows(h);
    out.par_chunks_mut(out_stride * rows)
        .enumerate()
        .for_each(|(b, band)| {
            let job = Band {
                src,
                src_stride,
                w,
                h,
                k,
                y0: b * rows,
                out_stride,
            };
            band_dispatch(&job, band, &load, &store);
        });
}

/// One band's inputs for [`band_body`].
struct Band<'a, S> {
    src: &'a [S],
    src_stride: usize,
    w: usize,
    h: usize,
    k: &'a [f64],
    y0: usize,
    out_stride: usize,
}

crate::kernels::multiversion! {
    /// [`band_body`] compiled for AVX2 where the CPU has it, else portable.
    fn band_dispatch[S, D, L, T](job: &Band<'_, S>, band: &mut [D], load: &L, store: &T)
    where [
        L: Fn(&[S], &mut [f64]),
        T: Fn(&[f64], &mut [D]),
    ];
    /// [`band_body`] with AVX2 enabled (the row conversions are inlined into it as well).
    band_avx2 ["avx2"] => band_body;
    _ => band_body;
    levels band_dispatch_at;
}

/// Output rows `y0 ..` (as many as `band` holds) of [`gaussian_rows`].
#[inline(always)]
fn band_body<S, D, L, T>(job: &Band<'_, S>, band: &mut [D], load: &L, store: &T)
where
    L: Fn(&[S], &mut [f64]),
    T: Fn(&[f64], &mut [D]),
{
    let &Band {
        src,
        src_stride,
        w,
        h,
        k,
        y0,
        out_stride,
    } = job;
    let r = k.len() / 2;
    let row_len = 3 * w;
    let n = band.len() / out_stride;
    let mut ring = vec![0.0f64; (2 * r + 1) * row_len];
    let mut padded = vec![0.0f64; (w + 2 * r) * 3];
    let mut line = vec![0.0f64; row_len];
    let slot = |q: isize| q.rem_euclid(2 * r as isize + 1) as usize;
    let fill = |ring: &mut [f64], q: isize| {
        let sy = q.clamp(0, h as isize - 1) as usize;
        load(
            &src[sy * src_stride..][..src_stride],
            &mut ring[slot(q) * row_len..][..row_len],
        );
    };
    for q in y0 as isize - r as isize..(y0 + r) as isize {
        fill(&mut ring, q);
    }
    for (i, o) in band.chunks_exact_mut(out_stride).enumerate().take(n) {
        let y = (y0 + i) as isize;
        fill(&mut ring, y + r as isize);
        let row = |q: isize| &ring[slot(q) * row_len..][..row_len];
        let pairs: Vec<(f64, &[f64], &[f64])> = (0..r)
            .map(|j| (k[j], row(y - (r - j) as isize), row(y + (r - j) as isize)))
            .collect();
        sym_accumulate(&mut padded[3 * r..3 * r + row_len], row(y), k[r], &pairs);
        // Edge replication of the vertically filtered row for the horizontal pass.
        let (first, last) = (3 * r, 3 * (r + w - 1));
        for p in 0..r {
            padded.copy_within(first..first + 3, 3 * p);
            padded.copy_within(last..last + 3, last + 3 * (p + 1));
        }
        let pairs: Vec<(f64, &[f64], &[f64])> = (0..r)
            .map(|j| {
                (
                    k[j],
                    &padded[3 * j..][..row_len],
                    &padded[3 * (2 * r - j)..][..row_len],
                )
            })
            .collect();
        sym_accumulate(&mut line, &padded[3 * r..][..row_len], k[r], &pairs);
        store(&line, o);
    }
}

/// `out[i] = centre[i]·wc + Σ_pairs (a[i] + b[i])·w` with the pairs added in order: scipy's symmetric
/// correlation. Blocks of 16 outputs stay in registers across all pairs.
#[inline(always)]
fn sym_accumulate(out: &mut [f64], centre: &[f64], wc: f64, pairs: &[(f64, &[f64], &[f64])]) {
    const B: usize = 16;
    let n = out.len();
    let full = n / B * B;
    for start in (0..full).step_by(B) {
        let c: &[f64; B] = centre[start..start + B].try_into().expect("block");
        let mut acc: [f64; B] = std::array::from_fn(|l| c[l] * wc);
        for &(w, a, b) in pairs {
            let a: &[f64; B] = a[start..start + B].try_into().expect("block");
            let b: &[f64; B] = b[start..start + B].try_into().expect("block");
            for l in 0..B {
                acc[l] += (a[l] + b[l]) * w;
            }
        }
        out[start..start + B].copy_from_slice(&acc);
    }
    for i in full..n {
        let mut acc = centre[i] * wc;
        for &(w, a, b) in pairs {
            acc += (a[i] + b[i]) * w;
        }
        out[i] = acc;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::kernels::levels_agree! {
        fn band_levels_agree(|level| {
            let (w, h) = (31, 19);
            let src: Vec<u8> = (0..3 * w * h).map(|i| (i * 101 % 256) as u8).collect();
            let k = crate::kernels::gaussian::gaussian_kernel1d(1.5, TRUNCATE);
            let job = Band { src: &src, src_stride: 3 * w, w, h, k: &k, y0: 0, out_stride: 3 * w };
            let load = |s: &[u8], d: &mut [f64]| {
                for (d, &s) in d.iter_mut().zip(s) {
                    *d = f64::from(s);
                }
            };
            let store = |s: &[f64], d: &mut [u8]| {
                for (d, &s) in d.iter_mut().zip(s) {
                    *d = s.clamp(0.0, 255.0) as u8;
                }
            };
            let mut out = vec![0u8; src.len()];
            band_dispatch_at(level, &job, &mut out, &load, &store).map(|()| out)
        });
    }

    /// scipy's symmetric `correlate1d` along one axis with 'nearest' borders, written directly.
    fn correlate_sym(data: &[f64], (w, h): (usize, usize), k: &[f64], vertical: bool) -> Vec<f64> {
        let r = k.len() / 2;
        let at = |x: isize, y: isize, c: usize| {
            let x = x.clamp(0, w as isize - 1) as usize;
            let y = y.clamp(0, h as isize - 1) as usize;
            data[(y * w + x) * 3 + c]
        };
        let mut out = vec![0.0; data.len()];
        for y in 0..h as isize {
            for x in 0..w as isize {
                for c in 0..3 {
                    let mut acc = at(x, y, c) * k[r];
                    for j in (1..=r as isize).rev() {
                        let (a, b) = if vertical {
                            (at(x, y - j, c), at(x, y + j, c))
                        } else {
                            (at(x - j, y, c), at(x + j, y, c))
                        };
                        acc += (a + b) * k[r - j as usize];
                    }
                    out[(y as usize * w + x as usize) * 3 + c] = acc;
                }
            }
        }
        out
    }

    fn picture(w: usize, h: usize) -> Vec<u8> {
        (0..w * h * 3).map(|i| ((i * 53) ^ (i / 5)) as u8).collect()
    }

    #[test]
    fn fused_gaussian_is_scipys_symmetric_correlation() {
        for (w, h) in [(1, 1), (3, 2), (37, 23), (70, 150)] {
            for sigma in [0.7, 1.5] {
                let raw = picture(w, h);
                let k = gaussian_kernel1d(sigma, TRUNCATE);
                let x: Vec<f64> = raw.iter().map(|&v| f64::from(v) / 255.0).collect();
                let want = correlate_sym(&correlate_sym(&x, (w, h), &k, true), (w, h), &k, false);
                let mut got = vec![0u8; raw.len()];
                gaussian_rows(
                    &raw,
                    3 * w,
                    (w, h),
                    &k,
                    &mut got,
                    3 * w,
                    |s, d| {
                        d.iter_mut()
                            .zip(s)
                            .for_each(|(d, &v)| *d = f64::from(v) / 255.0)
                    },
                    |s, d| {
                        d.iter_mut()
                            .zip(s)
                            .for_each(|(d, &v)| *d = (v * 255.0) as u8)
                    },
                );
                let want: Vec<u8> = want.iter().map(|&v| (v * 255.0) as u8).collect();
                assert_eq!(got, want, "{w}×{h} σ {sigma}");
            }
        }
    }

    #[test]
    fn walk_copies_in_reverse_raster_order_with_offsets_in_range() {
        let (w, h, d) = (40usize, 30usize, 2usize);
        // Each pixel holds its own index, so the result tells where every value came from.
        let orig: Vec<u32> = (0..(w * h) as u32).collect();
        let mut px = orig.clone();
        walk(&mut px, w, h, d, 1, RngKey(5));
        // Replay sequentially from the offsets: the walk is exactly this loop.
        let mut replay = orig.clone();
        let nw = w - 2 * d;
        let mut offs = vec![0i32; nw * (h - 2 * d)];
        offsets(&mut offs, 0, (w, h), d, RngKey(5));
        for (i, y) in (d + 1..=h - d).rev().enumerate() {
            for (j, x) in (d + 1..=w - d).rev().enumerate() {
                let s = ((y * w + x) as i32 + offs[i * nw + j]) as usize;
                replay[y * w + x] = replay[s];
            }
        }
        assert_eq!(px, replay);
        // Offsets: dx and dy in [−δ, δ − 1], every value occurring.
        let mut seen_dx = [0usize; 4];
        let mut seen_dy = [0usize; 4];
        for &o in &offs {
            let dy = (o + (d as i32) * w as i32 + d as i32).div_euclid(w as i32) - d as i32;
            let dx = o - dy * w as i32;
            assert!((-(d as i32)..d as i32).contains(&dx), "dx {dx}");
            assert!((-(d as i32)..d as i32).contains(&dy), "dy {dy}");
            seen_dx[(dx + d as i32) as usize] += 1;
            seen_dy[(dy + d as i32) as usize] += 1;
        }
        assert!(
            seen_dx.iter().chain(&seen_dy).all(|&n| n > 150),
            "{seen_dx:?} {seen_dy:?}"
        );
        // Border rows and columns are never written.
        for y in 0..h {
            for x in 0..w {
                if !(d + 1..=h - d).contains(&y) || !(d + 1..=w - d).contains(&x) {
                    assert_eq!(px[y * w + x], orig[y * w + x]);
                }
            }
        }
        // Copies, not swaps: some value occurs twice.
        let mut seen = std::collections::HashSet::new();
        assert!(px.iter().any(|v| !seen.insert(*v)));
    }

    #[test]
    fn walk_is_independent_of_the_thread_count_and_keyed() {
        let (w, h) = (61, 47);
        let orig: Vec<u32> = (0..(w * h) as u32).collect();
        let run = |threads: usize, key: u64| {
            let mut px = orig.clone();
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| walk(&mut px, w, h, 3, 3, RngKey(key)));
            px
        };
        assert_eq!(run(1, 9), run(3, 9));
        assert_ne!(run(1, 9), run(1, 10));
        // Too small to walk: unchanged.
        let mut tiny: Vec<u32> = (0..49).collect();
        walk(&mut tiny, 7, 7, 3, 2, RngKey(1));
        assert_eq!(tiny, (0..49).collect::<Vec<u32>>());
    }
}
