use rayon::prelude::*;

use super::*;

crate::kernels::levels_agree! {
    fn map_block_levels_agree(|level| {
        let mut px: Vec<u8> = (0..3 * 1000).map(|i| (i * 73 % 256) as u8).collect();
        let edit = |[h, s, v]: [f64; 3]| [h, (s * 5.0 + 0.1).clamp(0.0, 1.0), v];
        map_block_dispatch_at(level, &mut px, &edit).map(|()| px)
    });
}

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

/// The ImageNet-C parameters of both edits, every severity.
fn imagenet_c_edits() -> Vec<Edit> {
    let sat = [(0.3, 0.0), (0.1, 0.0), (2.0, 0.0), (5.0, 0.1), (20.0, 0.2)];
    let bri = [0.1, 0.2, 0.3, 0.4, 0.5];
    sat.iter()
        .map(|&(scale, offset)| Edit::Saturate { scale, offset })
        .chain(bri.iter().map(|&delta| Edit::Brightness { delta }))
        .collect()
}

/// Every colour once (4096 × 4096).
fn every_colour() -> RgbImage {
    RgbImage::from_fn(4096, 4096, |x, y| {
        let i = y * 4096 + x;
        image::Rgb([(i >> 16) as u8, (i >> 8) as u8, i as u8])
    })
}

/// The shortcut run by each instruction set this CPU has (the portable body included).
fn shortcut_variants(img: &RgbImage, edit: Edit) -> Vec<(&'static str, Vec<u8>)> {
    let cut = edit
        .tenths()
        .expect("ImageNet-C parameters take the shortcut");
    let tmax: [f32; 256] = std::array::from_fn(|m| {
        f32::from(floor8_unit(edit.apply([0.0, 0.0, m as f64 / 255.0])[2]))
    });
    // Levels of `fast_dispatch` in its listed order (0: the portable body); the CPU's own only.
    [(0, "portable"), (1, "vbmi"), (2, "avx512"), (3, "avx2")]
        .into_iter()
        .filter(|&(level, _)| fast_dispatch_at(level, &mut [], edit, cut, &tmax).is_some())
        .map(|(level, name)| {
            let mut out = img.as_raw().clone();
            // Blocks of an odd pixel count, so chunk tails and pending flushes are exercised.
            out.par_chunks_mut(3 * 12_345).for_each(|block| {
                fast_dispatch_at(level, block, edit, cut, &tmax).expect("available");
            });
            (name, out)
        })
        .collect()
}

#[test]
fn shortcut_is_bit_identical_for_every_colour_and_severity() {
    // For each ImageNet-C parameter set: the scalar chain on all 2²⁴ colours, against the shortcut
    // on every instruction set (which also runs the f64 lane path on the undecided pixels).
    let img = every_colour();
    for edit in imagenet_c_edits() {
        let want: Vec<u8> = img
            .as_raw()
            .par_chunks_exact(3)
            .flat_map_iter(|p| {
                hsv_to_rgb(edit.apply(rgb_to_hsv([u(p[0]), u(p[1]), u(p[2])]))).map(floor8_unit)
            })
            .collect();
        for (name, got) in shortcut_variants(&img, edit) {
            let bad = got
                .chunks_exact(3)
                .zip(want.chunks_exact(3))
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(bad, 0, "{edit:?} {name}");
        }
        assert!(
            edit_hsv(&img, edit).as_raw() == &want,
            "{edit:?} dispatched"
        );
    }
}

#[test]
fn shortcut_decides_fractions_and_defers_integers() {
    // Scale 0.3: (200, 100, 50) has mid 200 − 0.3·100 = 170 exactly, an integer the chain may round
    // either way → undecided; (200, 101, 51): mid 170.3, min 200 − 0.3·149 = 155.3 → 170, 155
    // decided; a grey without offset stays itself.
    let cut = Edit::Saturate {
        scale: 0.3,
        offset: 0.0,
    }
    .tenths()
    .expect("tenths");
    let mut ch = [[0.0f32; FAST_CHUNK]; 3];
    for (i, p) in [[200u8, 100, 50], [200, 101, 51], [9, 9, 9]]
        .iter()
        .enumerate()
    {
        for k in 0..3 {
            ch[k][i] = f32::from(p[k]);
        }
    }
    let mut bytes = [[0u8; FAST_CHUNK]; 3];
    let mut undecided = [0u8; FAST_CHUNK];
    shortcut_saturate::<false>(&ch, cut, &mut bytes, &mut undecided);
    assert_eq!(&undecided[..3], [1, 0, 0]);
    // The maximum channel keeps its byte: the chain's floor8(M/255) is M for every byte.
    for m in 0..=255u8 {
        assert_eq!(floor8_unit(u(m)), m);
    }
    assert_eq!([bytes[0][1], bytes[1][1], bytes[2][1]], [200, 170, 155]);
    assert_eq!([bytes[0][2], bytes[1][2], bytes[2][2]], [9, 9, 9]);
    // Parameters off the tenths grid (or out of range) take the generic path.
    assert!(
        Edit::Saturate {
            scale: 0.35,
            offset: 0.0
        }
        .tenths()
        .is_none()
    );
    assert!(Edit::Brightness { delta: -0.1 }.tenths().is_none());
    assert!(Edit::Brightness { delta: f64::NAN }.tenths().is_none());
}
