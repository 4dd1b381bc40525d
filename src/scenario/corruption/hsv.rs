//! scikit-image-compatible HSV conversion (REFERENCE §1.4 H6), shared by `brightness` and `saturate`.
//!
//! `skimage.color.rgb2hsv` / `hsv2rgb` on float64 values in [0, 1], reproduced operation for operation so
//! that the f64 results are bit-identical (same expressions, same evaluation order, same tie-breaking),
//! which keeps the final truncation to u8 (`floor8`) identical to the reference.
//!
//! Both conversions are per pixel and need no neighbourhood, so they work for any frame size. A lookup table
//! over all 2²⁴ colours would be 48 MiB per map and is not worth it: [`map_hsv`] does the per-pixel math
//! (three divisions and a handful of multiply-adds) in parallel over blocks of rows instead, eight pixels
//! at a time with every branch of the scalar functions turned into a select, so that it runs on vector
//! lanes (AVX2 where the CPU has it) with exactly the scalar functions' operations per pixel.

use image::RgbImage;
use rayon::prelude::*;

use super::lanes;

/// `rgb2hsv` of one pixel: `[r, g, b]` on [0, 1] → `[h, s, v]`, all on [0, 1] (`h < 1`).
///
/// As scikit-image: `v = max`, `delta = max − min`, `s = delta / v` (0 when `delta == 0`). The hue is
/// assigned by three *successive* masks, so when several channels equal the maximum the **blue** branch
/// overrides green, which overrides red: red `(g − b)/delta`, green `2 + (b − r)/delta`, blue
/// `4 + (r − g)/delta`; then `h = (h/6) mod 1` with numpy's floored modulo (a negative value gains +1), and
/// `h = 0` when `delta == 0`.
#[inline]
pub fn rgb_to_hsv([r, g, b]: [f64; 3]) -> [f64; 3] {
    let v = r.max(g).max(b);
    let delta = v - r.min(g).min(b);
    if delta == 0.0 {
        // Grey (including black, where s = 0/0 is NaN and scikit-image zeroes it).
        return [0.0, 0.0, v];
    }
    let s = delta / v;
    let mut h = 0.0;
    if r == v {
        h = (g - b) / delta;
    }
    if g == v {
        h = 2.0 + (b - r) / delta;
    }
    if b == v {
        h = 4.0 + (r - g) / delta;
    }
    [floored_mod1(h / 6.0), s, v]
}

/// numpy's `x % 1.0` (`np.remainder`): `fmod`, then +1 when the remainder is negative; `+0.0` for a zero
/// remainder.
#[inline]
fn floored_mod1(x: f64) -> f64 {
    let m = x % 1.0;
    if m < 0.0 {
        m + 1.0
    } else if m == 0.0 {
        0.0
    } else {
        m
    }
}

/// `hsv2rgb` of one pixel: `[h, s, v]` → `[r, g, b]`.
///
/// As scikit-image: `i = floor(6h)`, `f = 6h − i`, `p = v(1 − s)`, `q = v(1 − f·s)`,
/// `t = v(1 − (1 − f)·s)`; sector `i` cast to u8, modulo 6, selects `(v,t,p)`, `(q,v,p)`, `(p,v,t)`,
/// `(p,q,v)`, `(t,p,v)`, `(v,p,q)`. No clipping here (the callers clip).
#[inline]
pub fn hsv_to_rgb([h, s, v]: [f64; 3]) -> [f64; 3] {
    let hi = (h * 6.0).floor();
    let f = h * 6.0 - hi;
    let p = v * (1.0 - s);
    let q = v * (1.0 - f * s);
    let t = v * (1.0 - (1.0 - f) * s);
    // numpy `astype(np.uint8)` of a value in [0, 6]; `as` saturates anything outside instead of wrapping.
    match (hi as u8) % 6 {
        0 => [v, t, p],
        1 => [q, v, p],
        2 => [p, v, t],
        3 => [p, q, v],
        4 => [t, p, v],
        _ => [v, p, q],
    }
}

/// `x / 255` for every u8 value, as numpy's `np.array(img) / 255.` computes it (one f64 division):
/// the values the kernel's arithmetic conversion is checked against.
#[cfg(test)]
fn unit_lut() -> [f64; 256] {
    std::array::from_fn(|v| v as f64 / 255.0)
}

/// Pixels per rayon task (about 0.1 ms of HSV work): below this, task overhead outweighs the gain.
const PIXELS_PER_TASK: usize = 16_384;

/// Pixels per structure-of-arrays chunk of [`map_block`] (ten 2 KiB planes: stays in L1).
const CHUNK: usize = 256;

/// `floor8(clip(hsv2rgb(edit(rgb2hsv(x / 255))), 0, 1) · 255)` for every pixel: the whole HSV round trip of
/// `brightness` / `saturate` (REFERENCE §2.13, §2.15), with `edit` changing the HSV triple.
///
/// Any size (including empty). Parallel over blocks of rows of about [`PIXELS_PER_TASK`] pixels; the result
/// does not depend on the thread count (no randomness, pure per-pixel map). Within a task, pixels go
/// through [`rgb_to_hsv`], `edit` and [`hsv_to_rgb`] in chunks of planes, in branch-free form (bit-identical
/// to the scalar functions for every input colour; `edit` should itself be branch-free, e.g. `clamp`).
pub fn map_hsv<F>(image: &RgbImage, edit: F) -> RgbImage
where
    F: Fn([f64; 3]) -> [f64; 3] + Sync,
{
    lanes::in_pool(|| map_hsv_body(image, &edit))
}

/// The body of [`map_hsv`].
fn map_hsv_body<F>(image: &RgbImage, edit: F) -> RgbImage
where
    F: Fn([f64; 3]) -> [f64; 3] + Sync,
{
    let (w, h) = image.dimensions();
    let row_len = w as usize * 3;
    if row_len == 0 || h == 0 {
        return image.clone();
    }
    let mut out = image.as_raw().clone();
    let rows_per_task = (PIXELS_PER_TASK / w as usize).max(1);
    out.par_chunks_mut(row_len * rows_per_task)
        .for_each(|rows| map_block_dispatch(rows, &edit));
    RgbImage::from_raw(w, h, out).expect("same size as the input buffer")
}

/// [`map_block`] compiled for AVX-512F (eight f64 lanes) or AVX2 (four), with FMA, when the CPU has
/// them; every version computes the same bits (the exhaustive test runs the one the CPU selects, and
/// `every_instruction_set_gives_the_same_bytes` the others).
fn map_block_dispatch<F: Fn([f64; 3]) -> [f64; 3]>(px: &mut [u8], edit: &F) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("fma")
    {
        // SAFETY: `map_block_avx512` only enables AVX-512F and FMA code generation for safe code;
        // the CPU was just checked to support both.
        unsafe { map_block_avx512(px, edit) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: `map_block_avx2` only enables AVX2 and FMA code generation for safe code; the CPU
        // was just checked to support both.
        unsafe { map_block_avx2(px, edit) };
        return;
    }
    map_block::<false, F>(px, edit);
}

/// [`map_block`] with AVX-512F and FMA enabled, dividing by `v` and by 6 through reciprocals.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
fn map_block_avx512<F: Fn([f64; 3]) -> [f64; 3]>(px: &mut [u8], edit: &F) {
    map_block::<true, F>(px, edit);
}

/// [`map_block`] with AVX2 and FMA enabled, dividing by `v` and by 6 through reciprocals.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn map_block_avx2<F: Fn([f64; 3]) -> [f64; 3]>(px: &mut [u8], edit: &F) {
    map_block::<true, F>(px, edit);
}

/// `x / d`, given `r = 1/d` correctly rounded. With `FMA`, computed as `q = x·r` refined once by the
/// exact remainder (`e = fma(−q, d, x)`, `q + e·r` fused) — Markstein's correction, which returns the
/// correctly rounded quotient, i.e. exactly what the division returns; the exhaustive test
/// `lane_path_is_bit_identical_for_every_colour` confirms it for every input this module sees. Without
/// `FMA`, the division itself.
#[inline(always)]
fn div_by<const FMA: bool>(x: f64, d: f64, r: f64) -> f64 {
    if FMA {
        let q = x * r;
        let e = (-q).mul_add(d, x);
        e.mul_add(r, q)
    } else {
        x / d
    }
}

/// The HSV round trip of interleaved RGB pixels in place, [`CHUNK`] pixels at a time as planes of f64
/// (structure of arrays), each step a simple loop over the chunk that the compiler vectorises. With
/// `FMA`, the divisions by `v` (one of 255 values: reciprocals from a table) and by 6 are done by
/// [`div_by`]; only `num/δ` stays a division.
#[inline(always)]
fn map_block<const FMA: bool, F: Fn([f64; 3]) -> [f64; 3]>(px: &mut [u8], edit: &F) {
    let mut planes = [[0.0f64; CHUNK]; 7];
    let mut bytes = [[0u8; CHUNK]; 3];
    for chunk in px.chunks_mut(3 * CHUNK) {
        let n = chunk.len() / 3;
        let [r, g, b, h, s, v, rv] = &mut planes;
        for (i, p) in chunk.chunks_exact(3).enumerate() {
            // x/255 by arithmetic rather than three table gathers (slow on vector lanes): with FMA,
            // `div_by` returns the correctly rounded quotient, i.e. exactly `unit[x]` (checked for
            // every byte by `unit_by_arithmetic_is_the_division`).
            r[i] = div_by::<FMA>(f64::from(p[0]), 255.0, 1.0 / 255.0);
            g[i] = div_by::<FMA>(f64::from(p[1]), 255.0, 1.0 / 255.0);
            b[i] = div_by::<FMA>(f64::from(p[2]), 255.0, 1.0 / 255.0);
        }
        // 1/v: the same IEEE division the table of reciprocals holds (v = x/255 of the largest byte),
        // computed on lanes instead of gathered.
        for i in 0..n {
            let hi = if r[i] > g[i] { r[i] } else { g[i] };
            let max = if hi > b[i] { hi } else { b[i] };
            rv[i] = 1.0 / max;
        }
        rgb_to_hsv_planes::<FMA>(
            [&r[..n], &g[..n], &b[..n], &rv[..n]],
            [&mut h[..n], &mut s[..n], &mut v[..n]],
        );
        for i in 0..n {
            [h[i], s[i], v[i]] = edit([h[i], s[i], v[i]]);
        }
        hsv_to_rgb_planes(
            &h[..n],
            &s[..n],
            &v[..n],
            [&mut r[..n], &mut g[..n], &mut b[..n]],
        );
        for (plane, out) in [&*r, &*g, &*b].into_iter().zip(bytes.iter_mut()) {
            for (o, &x) in out[..n].iter_mut().zip(&plane[..n]) {
                *o = lanes::floor8(x);
            }
        }
        for (i, p) in chunk.chunks_exact_mut(3).enumerate() {
            p.copy_from_slice(&[bytes[0][i], bytes[1][i], bytes[2][i]]);
        }
    }
}

/// [`rgb_to_hsv`] over planes (`rv` = 1/max), with selects instead of branches. The hue's three masks
/// become one numerator / offset pair chosen in the same priority (blue over green over red), so the
/// single division per pixel is the one the scalar code performs: `(g − b)/δ` (offset 0, and
/// `0 + x = x`), `2 + (b − r)/δ` or `4 + (r − g)/δ`. `h/6` lies in [−1/6, 5/6] for inputs in [0, 1],
/// where numpy's `% 1` is the identity, so only the negative wrap (+1) and the zero sign remain.
/// `if a > b { a } else { b }` equals `f64::max` here (no NaN; all zeros are +0).
#[inline(always)]
fn rgb_to_hsv_planes<const FMA: bool>([r, g, b, rv]: [&[f64]; 4], [h, s, v]: [&mut [f64]; 3]) {
    let n = r.len();
    let (g, b, rv) = (&g[..n], &b[..n], &rv[..n]);
    let (h, s, v) = (&mut h[..n], &mut s[..n], &mut v[..n]);
    for i in 0..n {
        let hi = if r[i] > g[i] { r[i] } else { g[i] };
        let max = if hi > b[i] { hi } else { b[i] };
        let lo = if r[i] < g[i] { r[i] } else { g[i] };
        let min = if lo < b[i] { lo } else { b[i] };
        let delta = max - min;
        let (is_b, is_g) = (b[i] == max, g[i] == max);
        let num = if is_b {
            r[i] - g[i]
        } else if is_g {
            b[i] - r[i]
        } else {
            g[i] - b[i]
        };
        let off = if is_b {
            4.0
        } else if is_g {
            2.0
        } else {
            0.0
        };
        let sat = div_by::<FMA>(delta, max, rv[i]);
        let h6 = div_by::<FMA>(off + num / delta, 6.0, 1.0 / 6.0);
        let wrapped = if h6 < 0.0 { h6 + 1.0 } else { h6 };
        let hue = if wrapped == 0.0 { 0.0 } else { wrapped };
        let grey = delta == 0.0;
        h[i] = if grey { 0.0 } else { hue };
        s[i] = if grey { 0.0 } else { sat };
        v[i] = max;
    }
}

/// [`hsv_to_rgb`] over planes, the sector chosen by selects (sector 6, reachable only for h = 1, is
/// sector 0 as `% 6` makes it).
#[inline(always)]
fn hsv_to_rgb_planes(h: &[f64], s: &[f64], v: &[f64], [r, g, b]: [&mut [f64]; 3]) {
    let n = h.len();
    let (s, v, r, g, b) = (&s[..n], &v[..n], &mut r[..n], &mut g[..n], &mut b[..n]);
    for i in 0..n {
        let hi = (h[i] * 6.0).floor();
        let f = h[i] * 6.0 - hi;
        let p = v[i] * (1.0 - s[i]);
        let q = v[i] * (1.0 - f * s[i]);
        let t = v[i] * (1.0 - (1.0 - f) * s[i]);
        let k = if hi == 6.0 { 0.0 } else { hi };
        r[i] = if k == 0.0 || k == 5.0 {
            v[i]
        } else if k == 1.0 {
            q
        } else if k == 4.0 {
            t
        } else {
            p
        };
        g[i] = if k == 1.0 || k == 2.0 {
            v[i]
        } else if k == 0.0 {
            t
        } else if k == 3.0 {
            q
        } else {
            p
        };
        b[i] = if k == 3.0 || k == 4.0 {
            v[i]
        } else if k == 2.0 {
            t
        } else if k == 5.0 {
            q
        } else {
            p
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::corruption::floor8_unit;

    fn u(v: u8) -> f64 {
        f64::from(v) / 255.0
    }

    fn close(a: [f64; 3], b: [f64; 3]) -> bool {
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn primaries_and_greys() {
        assert_eq!(rgb_to_hsv([1.0, 0.0, 0.0]), [0.0, 1.0, 1.0]);
        assert!(close(rgb_to_hsv([0.0, 1.0, 0.0]), [1.0 / 3.0, 1.0, 1.0]));
        assert!(close(rgb_to_hsv([0.0, 0.0, 1.0]), [2.0 / 3.0, 1.0, 1.0]));
        assert_eq!(rgb_to_hsv([0.0, 0.0, 0.0]), [0.0, 0.0, 0.0]);
        assert_eq!(rgb_to_hsv([u(77); 3]), [0.0, 0.0, u(77)]);
    }

    #[test]
    fn negative_hue_wraps_like_numpy() {
        // Red max, b > g: (g − b)/delta = −1/2 → −1/12 → numpy's floored modulo gives 11/12.
        let [h, s, v] = rgb_to_hsv([1.0, 0.0, 0.5]);
        assert_eq!(h, -0.5 / 6.0 + 1.0);
        assert_eq!((s, v), (1.0, 1.0));
        assert_eq!(floored_mod1(-0.0), 0.0);
        assert!(floored_mod1(-0.0).is_sign_positive());
        assert_eq!(floored_mod1(0.25), 0.25);
    }

    #[test]
    fn ties_take_the_last_branch() {
        // r = g = max: the green branch wins: 2 + (b − r)/delta = 2 − 1 = 1 → h = 1/6.
        assert_eq!(rgb_to_hsv([u(200), u(200), u(50)])[0], 1.0 / 6.0);
        // g = b = max: blue wins: 4 + (r − g)/delta = 3 → h = 1/2.
        assert_eq!(rgb_to_hsv([u(10), u(90), u(90)])[0], 0.5);
        // r = b = max: blue wins: 4 + (r − g)/delta = 5 → h = 5/6 (the red branch would give −1/6 + 1).
        assert_eq!(rgb_to_hsv([u(255), u(0), u(255)])[0], 5.0 / 6.0);
        // All three equal: delta = 0 → h = s = 0.
        assert_eq!(rgb_to_hsv([u(9); 3]), [0.0, 0.0, u(9)]);
    }

    #[test]
    fn hand_computed_pixel() {
        // (51, 153, 102): v = 0.6, delta = 0.4, s = 2/3; green max: h = (2 + (0.4 − 0.2)/0.4)/6 = 2.5/6.
        let [h, s, v] = rgb_to_hsv([u(51), u(153), u(102)]);
        assert!((h - 2.5 / 6.0).abs() < 1e-15);
        assert!((s - 2.0 / 3.0).abs() < 1e-15);
        assert_eq!(v, u(153));
        // Back: 6h = 2.5 → sector 2 (p, v, t), f = 0.5: p = 0.6/3 = 0.2, t = 0.6(1 − 0.5·2/3) = 0.4.
        let back = hsv_to_rgb([h, s, v]);
        assert!(close(back, [0.2, 0.6, 0.4]), "{back:?}");
    }

    #[test]
    fn every_sector_is_selected_correctly() {
        let s = 1.0;
        let v = 1.0;
        let want = [
            [1.0, 0.5, 0.0], // sector 0 at f = 0.5: (v, t, p)
            [0.5, 1.0, 0.0], // 1: (q, v, p)
            [0.0, 1.0, 0.5], // 2: (p, v, t)
            [0.0, 0.5, 1.0], // 3: (p, q, v)
            [0.5, 0.0, 1.0], // 4: (t, p, v)
            [1.0, 0.0, 0.5], // 5: (v, p, q)
        ];
        for (i, w) in want.iter().enumerate() {
            let h = (i as f64 + 0.5) / 6.0;
            assert!(close(hsv_to_rgb([h, s, v]), *w), "sector {i}");
        }
        // h = 1 (not produced by rgb_to_hsv, but legal input): floor(6) = 6 → 6 mod 6 = sector 0.
        assert!(close(hsv_to_rgb([1.0, 1.0, 1.0]), [1.0, 0.0, 0.0]));
    }

    #[test]
    fn identity_round_trip_returns_every_colour_to_within_truncation() {
        // Every colour on a 6-level-per-step lattice (and all greys): rgb → hsv → rgb lands within one
        // ulp-scale error of x/255, so floor8 gives back v or (when x/255·255 lands a hair low) v − 1.
        let mut checked = 0;
        for r in (0..=255u8).step_by(5) {
            for g in (0..=255u8).step_by(3) {
                for b in (0..=255u8).step_by(7) {
                    let back = hsv_to_rgb(rgb_to_hsv([u(r), u(g), u(b)]));
                    for (x, want) in back.iter().zip([r, g, b]) {
                        let got = floor8_unit(*x);
                        assert!(got == want || got + 1 == want, "({r},{g},{b}) → {back:?}");
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000);
    }

    #[test]
    fn lane_path_is_bit_identical_for_every_colour() {
        // All 2²⁴ colours once each (4096 × 4096), through both ImageNet-C edits and an identity.
        let img = RgbImage::from_fn(4096, 4096, |x, y| {
            let i = y * 4096 + x;
            image::Rgb([(i >> 16) as u8, (i >> 8) as u8, i as u8])
        });
        type Edit = fn([f64; 3]) -> [f64; 3];
        let edits: [Edit; 3] = [
            |[h, s, v]| [h, s, (v + 0.3).clamp(0.0, 1.0)],
            |[h, s, v]| [h, (s * 5.0 + 0.1).clamp(0.0, 1.0), v],
            |hsv| hsv,
        ];
        for (k, edit) in edits.into_iter().enumerate() {
            let out = map_hsv(&img, edit);
            let bad = img
                .as_raw()
                .chunks_exact(3)
                .zip(out.as_raw().chunks_exact(3))
                .filter(|(p, q)| {
                    let back = hsv_to_rgb(edit(rgb_to_hsv([u(p[0]), u(p[1]), u(p[2])])));
                    back.map(floor8_unit) != [q[0], q[1], q[2]]
                })
                .count();
            assert_eq!(bad, 0, "edit {k}");
        }
    }

    #[test]
    fn unit_by_arithmetic_is_the_division() {
        let unit = unit_lut();
        for v in 0..=255u8 {
            let x = f64::from(v);
            assert_eq!(
                div_by::<true>(x, 255.0, 1.0 / 255.0),
                unit[usize::from(v)],
                "{v}"
            );
            assert_eq!(
                div_by::<false>(x, 255.0, 1.0 / 255.0),
                unit[usize::from(v)],
                "{v}"
            );
        }
    }

    #[test]
    fn every_instruction_set_gives_the_same_bytes() {
        // The dispatched path against the portable body (no FMA: true divisions) on a colour ramp.
        let img = RgbImage::from_fn(251, 67, |x, y| {
            image::Rgb([
                (x * 7 + y) as u8,
                (y * 11 + x / 3) as u8,
                ((x * y) % 256) as u8,
            ])
        });
        let edit = |[h, s, v]: [f64; 3]| [h, (s * 5.0 + 0.1).clamp(0.0, 1.0), v];
        let mut portable = img.as_raw().clone();
        map_block::<false, _>(&mut portable, &edit);
        assert!(map_hsv(&img, edit).as_raw() == &portable);
    }

    #[test]
    fn map_hsv_matches_per_pixel_evaluation_and_any_size() {
        let img = RgbImage::from_fn(37, 23, |x, y| {
            image::Rgb([(x * 7) as u8, (y * 11) as u8, ((x * y) % 256) as u8])
        });
        let edit = |[h, s, v]: [f64; 3]| [h, (s * 2.0).clamp(0.0, 1.0), v];
        let out = map_hsv(&img, edit);
        for (p, q) in img.pixels().zip(out.pixels()) {
            let back = hsv_to_rgb(edit(rgb_to_hsv([u(p[0]), u(p[1]), u(p[2])])));
            assert_eq!(q.0, back.map(floor8_unit));
        }
        assert_eq!(map_hsv(&RgbImage::new(0, 5), edit).dimensions(), (0, 5));
        assert_eq!(map_hsv(&RgbImage::new(1, 1), edit).dimensions(), (1, 1));
    }
}
