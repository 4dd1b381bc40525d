//! scikit-image-compatible HSV conversion (REFERENCE §1.4 H6), shared by `brightness` and `saturate`.
//!
//! `skimage.color.rgb2hsv` / `hsv2rgb` on float64 values in [0, 1], reproduced operation for operation so
//! that the f64 results are bit-identical (same expressions, same evaluation order, same tie-breaking),
//! which keeps the final truncation to u8 (`floor8`) identical to the reference.
//!
//! Both conversions are per pixel and need no neighbourhood, so they work for any frame size. A lookup table
//! over all 2²⁴ colours would be 48 MiB per map and is not worth it: [`map_hsv`] does the per-pixel math
//! (two divisions and a handful of multiply-adds) in parallel over blocks of rows instead.

use image::RgbImage;
use rayon::prelude::*;

use super::floor8_unit;

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

/// `x / 255` for every u8 value, as numpy's `np.array(img) / 255.` computes it (one f64 division).
fn unit_lut() -> [f64; 256] {
    std::array::from_fn(|v| v as f64 / 255.0)
}

/// Pixels per rayon task (about 0.3 ms of HSV work): below this, task overhead outweighs the gain.
const PIXELS_PER_TASK: usize = 16_384;

/// `floor8(clip(hsv2rgb(edit(rgb2hsv(x / 255))), 0, 1) · 255)` for every pixel: the whole HSV round trip of
/// `brightness` / `saturate` (REFERENCE §2.13, §2.15), with `edit` changing the HSV triple.
///
/// Any size (including empty). Parallel over blocks of rows of about [`PIXELS_PER_TASK`] pixels; the result
/// does not depend on the thread count (no randomness, pure per-pixel map).
pub fn map_hsv<F>(image: &RgbImage, edit: F) -> RgbImage
where
    F: Fn([f64; 3]) -> [f64; 3] + Sync,
{
    let (w, h) = image.dimensions();
    let row_len = w as usize * 3;
    if row_len == 0 || h == 0 {
        return image.clone();
    }
    let unit = unit_lut();
    let mut out = image.as_raw().clone();
    let rows_per_task = (PIXELS_PER_TASK / w as usize).max(1);
    out.par_chunks_mut(row_len * rows_per_task)
        .for_each(|rows| {
            for px in rows.chunks_exact_mut(3) {
                let rgb = [
                    unit[usize::from(px[0])],
                    unit[usize::from(px[1])],
                    unit[usize::from(px[2])],
                ];
                let back = hsv_to_rgb(edit(rgb_to_hsv(rgb)));
                px[0] = floor8_unit(back[0]);
                px[1] = floor8_unit(back[1]);
                px[2] = floor8_unit(back[2]);
            }
        });
    RgbImage::from_raw(w, h, out).expect("same size as the input buffer")
}

#[cfg(test)]
mod tests {
    use super::*;

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
