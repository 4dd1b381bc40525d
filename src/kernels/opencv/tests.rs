use super::*;

crate::kernels::levels_agree! {
    fn vertical_u16_levels_agree(|level| {
        let rows: Vec<Vec<u8>> = (0..9)
            .map(|r| (0..131).map(|i| ((i * 37 + r * 53) % 256) as u8).collect())
            .collect();
        let refs: Vec<&[u8]> = rows.iter().map(|r| r.as_slice()).collect();
        let k = [4u16, 18, 39, 52, 30, 52, 39, 18, 4];
        let mut out = vec![0u16; 131];
        vertical_u16_at(level, &refs, &k, &mut out).map(|()| out)
    });
    fn widen_levels_agree(|level| {
        let src: Vec<u16> = (0..300).map(|i| (i * 211 % 65_536) as u16).collect();
        let mut dst = vec![0.0f32; 300];
        widen_at(level, &src, &mut dst).map(|()| dst.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
    });
    fn horizontal_f32_levels_agree(|level| {
        let k = [4.0f32, 18.0, 39.0, 52.0, 30.0, 52.0, 39.0, 18.0, 4.0];
        let padded: Vec<f32> = (0..3 * (50 + 8)).map(|i| ((i * 97) % 65_281) as f32).collect();
        let mut sums = vec![0.0f32; 150];
        let mut out = vec![0u8; 150];
        horizontal_f32_at(level, &padded, &k, &mut sums, &mut out).map(|()| out)
    });
    fn recolour_row_levels_agree(|level| {
        let src: Vec<u8> = (0..3 * 150).map(|i| (i * 41 % 256) as u8).collect();
        let keep: Vec<u8> = (0..150).map(|i| u8::from(i % 7 == 0)).collect();
        let mut out = Vec::new();
        for edit in [HueEdit::Set(120), HueEdit::Shift(90)] {
            for simd in [true, false] {
                let mut o = vec![0u8; src.len()];
                recolour_row_at(level, &src, &keep, &mut o, edit, simd)?;
                out.extend(o);
            }
        }
        Some(out)
    });
    fn bright_run_levels_agree(|level| {
        let a: Vec<u8> = (0..=255).collect();
        let mut b: Vec<u8> = (0..=255).map(|v: u32| (v * 7 % 256) as u8).collect();
        bright_run_at(level, &a, &mut b).map(|()| b)
    });
}

/// A procedural 3-channel image: `(37x + 91y + 53c + 13xy) mod 256`.
fn procedural(w: u32, h: u32) -> RgbImage {
    let raw = (0..h)
        .flat_map(|y| (0..w).flat_map(move |x| (0..3).map(move |c| (x, y, c))))
        .map(|(x, y, c)| ((37 * x + 91 * y + 53 * c + 13 * x * y) % 256) as u8)
        .collect();
    RgbImage::from_raw(w, h, raw).unwrap()
}

#[test]
fn resize_linear_matches_opencv() {
    // cv2.resize(img, (dw, dh)) with opencv-python-headless 4.8.1 (channel order does not
    // matter).
    let cases: [(u32, u32, u32, u32, &[u8]); 3] = [
        (
            7,
            5,
            4,
            9,
            &[
                14, 67, 120, 78, 131, 185, 143, 196, 249, 208, 101, 58, 46, 99, 152, 118, 160, 139,
                116, 158, 211, 177, 124, 113, 99, 152, 205, 184, 208, 62, 70, 94, 147, 126, 162,
                204, 152, 163, 144, 136, 171, 100, 109, 144, 98, 118, 128, 181, 206, 163, 56, 60,
                113, 166, 170, 223, 52, 120, 77, 130, 117, 127, 109, 126, 161, 89, 124, 159, 113,
                158, 80, 132, 56, 109, 151, 163, 188, 42, 100, 99, 152, 178, 89, 142, 109, 162,
                151, 87, 129, 108, 160, 53, 106, 127, 127, 180, 141, 194, 151, 41, 94, 147, 197,
                26, 79, 96, 149, 203,
            ],
        ),
        (
            7,
            5,
            11,
            3,
            &[
                30, 83, 136, 49, 102, 155, 75, 128, 174, 102, 155, 145, 128, 150, 148, 154, 122,
                175, 126, 148, 201, 121, 174, 181, 148, 201, 99, 174, 134, 110, 193, 75, 128, 182,
                235, 32, 211, 147, 61, 227, 48, 101, 105, 88, 141, 75, 128, 181, 115, 168, 221,
                155, 208, 98, 195, 178, 45, 235, 56, 85, 136, 72, 125, 48, 101, 154, 77, 131, 184,
                116, 169, 145, 154, 207, 97, 100, 153, 97, 107, 129, 128, 161, 129, 181, 161, 74,
                127, 137, 66, 119, 82, 120, 173, 120, 127, 180, 159, 126, 180,
            ],
        ),
        // An exact 2× reduction (OpenCV's INTER_AREA shortcut gives the same bytes).
        (
            6,
            4,
            3,
            2,
            &[
                67, 120, 173, 154, 143, 132, 113, 166, 155, 134, 123, 112, 145, 134, 123, 156, 145,
                134,
            ],
        ),
    ];
    for (w, h, dw, dh, want) in cases {
        let got = resize_linear(&procedural(w, h), dw, dh);
        assert_eq!(got.dimensions(), (dw, dh));
        assert_eq!(got.as_raw().as_slice(), want, "{w}x{h} -> {dw}x{dh}");
    }
    let img = procedural(9, 4);
    assert_eq!(resize_linear(&img, 9, 4), img);
    assert_eq!(resize_linear(&img, 0, 3).dimensions(), (0, 3));
    // A constant image stays constant (weights sum to 2048 on both axes).
    let flat = RgbImage::from_pixel(13, 7, image::Rgb([255, 0, 77]));
    let up = resize_linear(&flat, 31, 19);
    assert!(up.pixels().all(|p| p.0 == [255, 0, 77]));
}

#[test]
fn kernels_match_opencv() {
    assert_eq!(gaussian_kernel_q8(15, 3.0), BLUR_15);
    assert_eq!(gaussian_kernel_q8(9, 4.0), BLUR_9);
    for (n, s) in [(3, 0.8), (5, 1.1), (7, 2.0), (31, 5.0)] {
        let k = gaussian_kernel_q8(n, s);
        assert_eq!(k.iter().map(|&t| u32::from(t)).sum::<u32>(), 256);
    }
}

#[test]
fn reflect101_is_periodic() {
    assert_eq!(reflect101(-1, 5), 1);
    assert_eq!(reflect101(5, 5), 3);
    assert_eq!(reflect101(-7, 3), 1); // … 1 2 1 0 1 2 1 0 | 0 1 2
    assert_eq!(reflect101(9, 1), 0);
}

#[test]
fn blur_of_a_constant_is_the_constant_and_of_an_impulse_is_the_kernel() {
    let img = RgbImage::from_pixel(20, 17, image::Rgb([9, 200, 255]));
    let b = gaussian_blur(&img, &BLUR_15, Rect::full(20, 17));
    assert!(b.pixels().all(|p| p.0 == [9, 200, 255]));
    // One 255 at (15, 15) of a black 31×31: row 15 is 255 · k[7] · k[x − 8] / 2¹⁶, rounded.
    let mut img = RgbImage::new(31, 31);
    img.put_pixel(15, 15, image::Rgb([255, 0, 0]));
    let b = gaussian_blur(&img, &BLUR_15, Rect::full(31, 31));
    for x in 8..23usize {
        let want = (255 * u32::from(BLUR_15[7]) * u32::from(BLUR_15[x - 8]) + (1 << 15)) >> 16;
        assert_eq!(u32::from(b.get_pixel(x as u32, 15).0[0]), want, "x {x}");
    }
}

#[test]
fn blur_of_a_rect_is_the_same_block_of_the_full_blur() {
    let img = RgbImage::from_fn(41, 23, |x, y| {
        image::Rgb([(x * 7 + y * 13) as u8, (x * x + y) as u8, (x ^ y) as u8 * 9])
    });
    let full = gaussian_blur(&img, &BLUR_15, Rect::full(41, 23));
    for rect in [
        Rect {
            x0: 3,
            y0: 2,
            x1: 20,
            y1: 9,
        },
        Rect {
            x0: 0,
            y0: 0,
            x1: 1,
            y1: 1,
        },
        Rect {
            x0: 30,
            y0: 15,
            x1: 41,
            y1: 23,
        },
    ] {
        let part = gaussian_blur(&img, &BLUR_15, rect);
        for (x, y, p) in part.enumerate_pixels() {
            assert_eq!(
                p,
                full.get_pixel(rect.x0 + x, rect.y0 + y),
                "{rect:?} {x} {y}"
            );
        }
    }
}

/// The blur by its definition: a direct double sum over reflected neighbours.
fn naive_blur(img: &RgbImage, k: &[u16]) -> RgbImage {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let r = k.len() / 2;
    RgbImage::from_fn(w as u32, h as u32, |x, y| {
        let mut px = [0u8; 3];
        for (c, out) in px.iter_mut().enumerate() {
            let mut sum = 0u64;
            for (j, &kj) in k.iter().enumerate() {
                let sy = reflect101(y as isize + j as isize - r as isize, h);
                for (i, &ki) in k.iter().enumerate() {
                    let sx = reflect101(x as isize + i as isize - r as isize, w);
                    let p = img.get_pixel(sx as u32, sy as u32).0[c];
                    sum += u64::from(kj) * u64::from(ki) * u64::from(p);
                }
            }
            *out = ((sum + (1 << 15)) >> 16) as u8;
        }
        image::Rgb(px)
    })
}

#[test]
fn blur_matches_its_definition_in_any_task_split_and_thread_count() {
    // 480 × 150: rows of 1440 bytes, 45 rows per rayon task, so 4 tasks, under 1, 3 and 4 threads.
    let mut s = 0x1234_5678u32;
    let img = RgbImage::from_fn(480, 150, |_, _| {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        image::Rgb([s as u8, (s >> 8) as u8, (s >> 16) as u8])
    });
    for k in [&BLUR_15[..], &BLUR_9[..]] {
        let want = naive_blur(&img, k);
        for threads in [1, 3, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| gaussian_blur(&img, k, Rect::full(480, 150)));
            assert!(got == want, "{} taps, {threads} threads", k.len());
            let rect = Rect {
                x0: 5,
                y0: 60,
                x1: 50,
                y1: 149,
            };
            let part = pool.install(|| gaussian_blur(&img, k, rect));
            for (x, y, p) in part.enumerate_pixels() {
                assert_eq!(p, want.get_pixel(x + 5, y + 60));
            }
        }
    }
}

#[test]
fn float_tables_equal_opencvs_tables() {
    for i in 1..256 {
        assert_eq!(round_quotient(1_044_480.0, i as f32), SDIV[i], "sdiv {i}");
        assert_eq!(
            round_quotient(737_280.0, (6 * i) as f32),
            HDIV[i],
            "hdiv {i}"
        );
    }
    // The vectorisable HSV equals the table version on a dense sample of colours.
    for r in (0..=255u8).step_by(3) {
        for g in (0..=255u8).step_by(5) {
            for b in 0..=255u8 {
                let (h, s, v) = hsv_of_lane(i32::from(r), i32::from(g), i32::from(b));
                assert_eq!([h as u8, s as u8, v as u8], rgb_to_hsv(r, g, b));
            }
        }
    }
    assert_eq!(to_u8_nearest(2.5), 2);
    assert_eq!(to_u8_nearest(3.5), 4);
    assert_eq!(to_u8_nearest(-7.0), 0);
    assert_eq!(to_u8_nearest(300.0), 255);
    assert_eq!(to_u8_trunc(254.99), 254);
}

#[test]
fn hsv_hand_values() {
    assert_eq!(rgb_to_hsv(255, 0, 0), [0, 255, 255]);
    assert_eq!(rgb_to_hsv(0, 255, 0), [60, 255, 255]);
    assert_eq!(rgb_to_hsv(0, 0, 255), [120, 255, 255]);
    assert_eq!(rgb_to_hsv(128, 128, 128), [0, 0, 128]);
    // Pure red with a trace of blue: hue just below 180, wraps (−1 → 179).
    assert_eq!(rgb_to_hsv(255, 0, 5), [179, 255, 255]);
    // 180 converts like 0 (red); the SIMD loop truncates, the scalar one rounds.
    assert_eq!(hsv_to_rgb(180, 255, 255, Rounding::Nearest), [255, 0, 0]);
    assert_eq!(hsv_to_rgb(0, 1, 1, Rounding::Truncate), [1, 0, 0]);
    assert_eq!(hsv_to_rgb(0, 1, 1, Rounding::Nearest), [1, 1, 1]);
    assert_eq!(HueEdit::Shift(90).apply(179), 13);
    assert_eq!(HueEdit::Shift(90).apply(100), 10);
    assert_eq!(simd_columns(37), 32);
    assert_eq!(simd_columns(31), 0);
}

#[test]
fn bright_values_and_gray() {
    // 1.5·0 + 0.9·24 + 1.9 = 23.5 exactly in reals: the fused path rounds the float32 value 23.5 to
    // 24 (even), the unfused one sees 23.499998 and gives 23.
    assert_eq!(bright_value(0, 24, true), 24);
    assert_eq!(bright_value(0, 24, false), 23);
    assert_eq!(bright_value(255, 255, true), 255);
    assert_eq!(gray(255, 255, 255), 255);
    assert_eq!(gray(0, 0, 250), 28);
}
