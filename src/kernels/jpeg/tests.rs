use super::*;

/// The round trip of `img` with every MCU row and decoding band run at one level of
/// [`encode_mcu_row`] and [`decode_rows`], in order on this thread.
fn roundtrip_at(
    level: usize,
    img: &RgbImage,
    quality: u8,
    sampling: Subsampling,
) -> Option<Vec<u8>> {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let geo = Geometry::new(w, h, sampling);
    let luma = Quantiser::new(&quant_table(&STD_LUMA_QUANT, quality));
    let chroma = Quantiser::new(&quant_table(&STD_CHROMA_QUANT, quality));
    let mut yp = vec![0u8; geo.y_stride * geo.y_rows];
    let mut cbp = vec![0u8; geo.c_stride * geo.c_rows];
    let mut crp = vec![0u8; geo.c_stride * geo.c_rows];
    let c_chunk = geo.c_stride * geo.c_rows_per_mcu;
    for (m, ((y, cb), cr)) in yp
        .chunks_mut(geo.y_stride * 16)
        .zip(cbp.chunks_mut(c_chunk))
        .zip(crp.chunks_mut(c_chunk))
        .enumerate()
    {
        encode_mcu_row_at(level, img.as_raw(), &geo, (&luma, &chroma), m, [y, cb, cr])?;
    }
    let mut out = vec![0u8; w * h * 3];
    for (t, rows) in out.chunks_mut(w * 3 * 5).enumerate() {
        decode_rows_at(level, &geo, [&yp, &cbp, &crp], t * 5, rows)?;
    }
    Some(out)
}

crate::kernels::levels_agree! {
    fn roundtrip_levels_agree(|level| {
        let img = RgbImage::from_fn(53, 37, |x, y| {
            image::Rgb([(x * 5 + y) as u8, (y * 7) as u8, ((x * y) % 251) as u8])
        });
        let a = roundtrip_at(level, &img, 85, Subsampling::Yuv420);
        let b = roundtrip_at(level, &img, 25, Subsampling::Yuv444);
        a.zip(b)
    });
}

/// The module's first, per-stage implementation (whole planes, table-driven colour conversion,
/// scalar DCT per block), checked against Pillow by the fixture tests before the fused version
/// replaced it: the oracle the fast path must match byte for byte.
mod reference {
    use super::super::*;

    /// The old `roundtrip_with`.
    pub(crate) fn roundtrip_with(img: &RgbImage, quality: u8, sampling: Subsampling) -> RgbImage {
        let (w, h) = (img.width() as usize, img.height() as usize);
        if w == 0 || h == 0 {
            return img.clone();
        }
        let luma_q = quant_table(&STD_LUMA_QUANT, quality);
        let chroma_q = quant_table(&STD_CHROMA_QUANT, quality);

        let [y, cb, cr] = rgb_to_ycc_planes(img);
        let mut yp = Plane::padded_luma(&y, w, h);
        let (mut cbp, mut crp) = match sampling {
            Subsampling::Yuv420 => (
                Plane::downsampled_h2v2(&cb, w, h),
                Plane::downsampled_h2v2(&cr, w, h),
            ),
            Subsampling::Yuv444 => (Plane::padded_luma(&cb, w, h), Plane::padded_luma(&cr, w, h)),
        };
        yp.compress_blocks(&luma_q);
        cbp.compress_blocks(&chroma_q);
        crp.compress_blocks(&chroma_q);

        let mut out = vec![0u8; w * h * 3];
        let rows_per_task = (PIXELS_PER_TASK / w).max(1);
        let tables = YccToRgb::new();
        out.par_chunks_mut(w * 3 * rows_per_task)
            .enumerate()
            .for_each(|(task, rows)| {
                let mut cb_row = vec![0u8; w];
                let mut cr_row = vec![0u8; w];
                let mut colsum = Vec::with_capacity(w.div_ceil(2));
                for (i, row) in rows.chunks_exact_mut(w * 3).enumerate() {
                    let yy = task * rows_per_task + i;
                    match sampling {
                        Subsampling::Yuv420 => {
                            cbp.upsample_row_h2v2(yy, w, h, &mut cb_row, &mut colsum);
                            crp.upsample_row_h2v2(yy, w, h, &mut cr_row, &mut colsum);
                        }
                        Subsampling::Yuv444 => {
                            cb_row.copy_from_slice(&cbp.data[yy * cbp.stride..][..w]);
                            cr_row.copy_from_slice(&crp.data[yy * crp.stride..][..w]);
                        }
                    }
                    let luma = &yp.data[yy * yp.stride..][..w];
                    for (x, px) in row.chunks_exact_mut(3).enumerate() {
                        let rgb = tables.convert(luma[x], cb_row[x], cr_row[x]);
                        px.copy_from_slice(&rgb);
                    }
                }
            });
        RgbImage::from_raw(w as u32, h as u32, out).expect("buffer of width × height × 3")
    }

    /// One pixel RGB → (Y, Cb, Cr), as `rgb_ycc_convert` (the ½ − ε chroma rounding keeps 255 in range).
    #[inline]
    pub(super) fn rgb_to_ycc(r: u8, g: u8, b: u8) -> [u8; 3] {
        let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
        let y = (fix(0.29900) * r + fix(0.58700) * g + fix(0.11400) * b + ONE_HALF) >> SCALEBITS;
        let cb = (-fix(0.16874) * r - fix(0.33126) * g + fix(0.50000) * b + CBCR_OFFSET + ONE_HALF
            - 1)
            >> SCALEBITS;
        let cr = (fix(0.50000) * r - fix(0.41869) * g - fix(0.08131) * b + CBCR_OFFSET + ONE_HALF
            - 1)
            >> SCALEBITS;
        [y as u8, cb as u8, cr as u8]
    }

    /// The three full-resolution planes Y, Cb, Cr (row-major, `width × height`).
    fn rgb_to_ycc_planes(img: &RgbImage) -> [Vec<u8>; 3] {
        let n = img.width() as usize * img.height() as usize;
        let mut planes = [vec![0u8; n], vec![0u8; n], vec![0u8; n]];
        let [y, cb, cr] = &mut planes;
        for (i, px) in img.as_raw().chunks_exact(3).enumerate() {
            let [a, b, c] = rgb_to_ycc(px[0], px[1], px[2]);
            y[i] = a;
            cb[i] = b;
            cr[i] = c;
        }
        planes
    }

    /// `ycc_rgb_convert` tables, indexed by the chroma sample.
    pub(super) struct YccToRgb {
        cr_r: [i32; 256],
        cb_b: [i32; 256],
        cr_g: [i32; 256],
        cb_g: [i32; 256],
    }

    impl YccToRgb {
        pub(super) fn new() -> Self {
            let x = |i: usize| i as i32 - 128;
            Self {
                cr_r: std::array::from_fn(|i| (fix(1.40200) * x(i) + ONE_HALF) >> SCALEBITS),
                cb_b: std::array::from_fn(|i| (fix(1.77200) * x(i) + ONE_HALF) >> SCALEBITS),
                cr_g: std::array::from_fn(|i| -fix(0.71414) * x(i)),
                cb_g: std::array::from_fn(|i| -fix(0.34414) * x(i) + ONE_HALF),
            }
        }

        #[inline]
        pub(super) fn convert(&self, y: u8, cb: u8, cr: u8) -> [u8; 3] {
            let y = i32::from(y);
            let (cb, cr) = (usize::from(cb), usize::from(cr));
            let clamp = |v: i32| v.clamp(0, 255) as u8;
            [
                clamp(y + self.cr_r[cr]),
                clamp(y + ((self.cb_g[cb] + self.cr_g[cr]) >> SCALEBITS)),
                clamp(y + self.cb_b[cb]),
            ]
        }
    }

    // ---------------------------------------------------------------------------------------------------------
    // Component planes padded to whole 8×8 blocks.

    /// One component, padded to whole blocks: `stride = 8·⌈cols/8⌉` samples per row, a multiple of 8 rows.
    /// Also remembers how many rows / columns hold real (not padding) samples, which the upsampler needs.
    pub(super) struct Plane {
        pub(super) data: Vec<u8>,
        pub(super) stride: usize,
        pub(super) rows: usize,
        /// Real samples per row (libjpeg's `downsampled_width`).
        pub(super) real_cols: usize,
        /// Real rows (libjpeg's `downsampled_height`).
        pub(super) real_rows: usize,
    }

    /// `⌈n / d⌉ · d`.
    fn round_up(n: usize, d: usize) -> usize {
        n.div_ceil(d) * d
    }

    impl Plane {
        /// A full-resolution plane padded to whole blocks by replicating the last column and row
        /// (`fullsize_downsample`'s `expand_right_edge`, then `jcprepct.c`'s `expand_bottom_edge`).
        fn padded_luma(src: &[u8], w: usize, h: usize) -> Self {
            let (stride, rows) = (round_up(w, 8), round_up(h, 8));
            let mut data = vec![0u8; stride * rows];
            for (y, row) in data.chunks_exact_mut(stride).enumerate() {
                let s = &src[y.min(h - 1) * w..][..w];
                row[..w].copy_from_slice(s);
                row[w..].fill(s[w - 1]);
            }
            Self {
                data,
                stride,
                rows,
                real_cols: w,
                real_rows: h,
            }
        }

        /// A chroma plane subsampled 2×2 as libjpeg does (`h2v2_downsample`): the source is replicated to
        /// `16·⌈w/16⌉` columns (right edge) and to an even number of rows (bottom edge), each output sample is
        /// `(a + b + c + d + bias) >> 2` with bias 1, 2, 1, 2, … along the row, and the `⌈h/2⌉` real rows are then
        /// replicated down to whole blocks.
        pub(super) fn downsampled_h2v2(src: &[u8], w: usize, h: usize) -> Self {
            let stride = round_up(w, 16) / 2;
            let real_rows = h.div_ceil(2);
            let rows = round_up(h, 16) / 2;
            let mut data = vec![0u8; stride * rows];
            let col = |x: usize| x.min(w - 1);
            for (j, row) in data.chunks_exact_mut(stride).enumerate() {
                let jj = j.min(real_rows - 1);
                let r0 = &src[(2 * jj) * w..][..w];
                let r1 = &src[(2 * jj + 1).min(h - 1) * w..][..w];
                for (i, out) in row.iter_mut().enumerate() {
                    let (c0, c1) = (col(2 * i), col(2 * i + 1));
                    let sum = u32::from(r0[c0])
                        + u32::from(r0[c1])
                        + u32::from(r1[c0])
                        + u32::from(r1[c1]);
                    let bias = 1 + (i as u32 & 1);
                    *out = ((sum + bias) >> 2) as u8;
                }
            }
            Self {
                data,
                stride,
                rows,
                real_cols: w.div_ceil(2),
                real_rows,
            }
        }

        /// Every 8×8 block: forward DCT, quantisation by `qtable`, dequantisation, inverse DCT — in place.
        fn compress_blocks(&mut self, qtable: &[u16; 64]) {
            let divisors = qtable.map(|q| Divisor::new(q * 8));
            let quant = qtable.map(i32::from);
            let stride = self.stride;
            self.data.par_chunks_mut(stride * 8).for_each(|strip| {
                let mut block = [0i32; 64];
                for bx in (0..stride).step_by(8) {
                    for (r, row) in block.chunks_exact_mut(8).enumerate() {
                        for (c, v) in row.iter_mut().enumerate() {
                            *v = i32::from(strip[r * stride + bx + c]) - 128;
                        }
                    }
                    fdct_islow(&mut block);
                    for (v, d) in block.iter_mut().zip(&divisors) {
                        *v = d.quantize(*v);
                    }
                    let pixels = idct_islow(&block, &quant);
                    for (r, row) in pixels.chunks_exact(8).enumerate() {
                        strip[r * stride + bx..][..8].copy_from_slice(row);
                    }
                }
            });
            debug_assert_eq!(self.data.len(), self.stride * self.rows);
        }

        /// Output row `y` (of an image `w × h`) of this 2×2-subsampled plane, upsampled into `out[..w]` as
        /// libjpeg-turbo does: `h2v2_fancy_upsample` (weights 9/16, 3/16, 3/16, 1/16 with rounding +8 / +7
        /// alternating by column; context rows above the first and below the last real row replicate it) when
        /// the plane has more than 2 real columns, otherwise `h2v2_upsample` (each sample copied 2×2).
        /// `colsum` is scratch space (resized as needed, so a caller can reuse it across rows).
        pub(super) fn upsample_row_h2v2(
            &self,
            y: usize,
            w: usize,
            h: usize,
            out: &mut [u8],
            colsum: &mut Vec<i32>,
        ) {
            debug_assert!(y < h);
            let out = &mut out[..w];
            let near = y / 2;
            let dw = self.real_cols;
            let row = |j: usize| &self.data[j * self.stride..][..dw];
            if dw <= 2 {
                let r = row(near);
                for (x, o) in out.iter_mut().enumerate() {
                    *o = r[x / 2];
                }
                return;
            }
            let far = if y.is_multiple_of(2) {
                near.saturating_sub(1)
            } else {
                (near + 1).min(self.real_rows - 1)
            };
            colsum.clear();
            colsum.extend(
                row(near)
                    .iter()
                    .zip(row(far))
                    .map(|(&a, &b)| 3 * i32::from(a) + i32::from(b)),
            );
            // Output pair (2i, 2i + 1) from column sums i − 1, i, i + 1 (edges use 4·this).
            let pair = |i: usize| -> [u8; 2] {
                let this = colsum[i];
                let left = if i == 0 {
                    (this * 4 + 8) >> 4
                } else {
                    (this * 3 + colsum[i - 1] + 8) >> 4
                };
                let right = if i == dw - 1 {
                    (this * 4 + 7) >> 4
                } else {
                    (this * 3 + colsum[i + 1] + 7) >> 4
                };
                [left as u8, right as u8]
            };
            for (i, o) in out.chunks_mut(2).enumerate() {
                let p = pair(i);
                o.copy_from_slice(&p[..o.len()]);
            }
        }
    }
}

use reference::{Plane, YccToRgb, rgb_to_ycc};

#[test]
fn quant_tables_follow_ijg_scaling() {
    // Quality 50 is the base table; 25 doubles it; 7 scales by 714 % and clamps at 255.
    assert_eq!(quant_table(&STD_LUMA_QUANT, 50), STD_LUMA_QUANT);
    assert_eq!(quant_table(&STD_LUMA_QUANT, 25)[0], 32);
    assert_eq!(quant_table(&STD_LUMA_QUANT, 7)[0], (16 * 714 + 50) / 100);
    assert_eq!(quant_table(&STD_LUMA_QUANT, 7)[63], 255);
    assert_eq!(quant_table(&STD_CHROMA_QUANT, 10)[0], (17 * 500 + 50) / 100);
    assert_eq!(quant_table(&STD_LUMA_QUANT, 100), [1; 64]);
    assert_eq!(
        quant_table(&STD_LUMA_QUANT, 0),
        quant_table(&STD_LUMA_QUANT, 1)
    );
}

#[test]
fn colour_constants_are_libjpegs() {
    let got = [
        fix(0.29900),
        fix(0.58700),
        fix(0.11400),
        fix(0.16874),
        fix(0.33126),
        fix(0.50000),
        fix(0.41869),
        fix(0.08131),
        fix(1.40200),
        fix(1.77200),
        fix(0.71414),
        fix(0.34414),
    ];
    assert_eq!(
        got,
        [
            19595, 38470, 7471, 11059, 21709, 32768, 27439, 5329, 91881, 116130, 46802, 22554
        ]
    );
    // Greys map to (v, 128, 128) and back exactly; extremes stay in range.
    let t = YccToRgb::new();
    for v in 0..=255u8 {
        assert_eq!(rgb_to_ycc(v, v, v), [v, 128, 128]);
        assert_eq!(t.convert(v, 128, 128), [v, v, v]);
    }
    assert_eq!(rgb_to_ycc(255, 0, 0), [76, 85, 255]);
    assert_eq!(rgb_to_ycc(0, 0, 255), [29, 255, 107]);
}

#[test]
fn fdct_of_a_flat_block_is_its_scaled_dc() {
    let mut b = [37i32; 64];
    fdct_islow(&mut b);
    assert_eq!(b[0], 64 * 37);
    assert!(b[1..].iter().all(|&v| v == 0));
}

#[test]
fn reciprocal_quantisation_is_rounded_division() {
    // libjpeg's reference quantiser: (|t| + d/2) / d with the sign restored.
    for q in 1..=255u16 {
        let d = Divisor::new(q * 8);
        let div = i32::from(q * 8);
        for t in -8200i32..=8200 {
            let want = (t.abs() + div / 2) / div * t.signum();
            assert_eq!(d.quantize(t), want, "q {q}, t {t}");
        }
    }
}

/// Block with a smooth gradient and some texture, values 0..=255.
fn test_block(seed: i32) -> [i32; 64] {
    std::array::from_fn(|i| {
        let (r, c) = ((i / 8) as i32, (i % 8) as i32);
        ((r * 19 + c * 7 + seed * 31 + (r * c * seed) % 23) % 256) - 128
    })
}

#[test]
fn unquantised_dct_round_trip_is_near_lossless() {
    let ones = [1i32; 64];
    let unit = [1u16; 64].map(|q| Divisor::new(q * 8));
    for seed in 0..50 {
        let orig = test_block(seed);
        let mut b = orig;
        fdct_islow(&mut b);
        for (v, d) in b.iter_mut().zip(&unit) {
            *v = d.quantize(*v);
        }
        let out = idct_islow(&b, &ones);
        for (o, want) in out.iter().zip(orig) {
            assert!((i32::from(*o) - (want + 128)).abs() <= 1, "seed {seed}");
        }
    }
}

#[test]
fn flat_images_survive_every_quality_and_size() {
    for (w, h) in [(1, 1), (2, 3), (5, 4), (17, 9), (40, 33)] {
        for q in [7, 25, 95] {
            let img = RgbImage::from_pixel(w, h, image::Rgb([90, 140, 200]));
            let out = roundtrip(&img, q);
            assert_eq!(out.dimensions(), (w, h));
            for p in out.pixels() {
                for ch in 0..3 {
                    // A flat colour only suffers the DC quantisation and colour rounding.
                    assert!((i32::from(p[ch]) - i32::from(img.get_pixel(0, 0)[ch])).abs() <= 12);
                }
            }
            // Flat → all output pixels identical.
            assert!(out.pixels().all(|p| p == out.get_pixel(0, 0)));
        }
    }
}

#[test]
fn downsampling_uses_the_alternating_bias_and_edge_replication() {
    // 3×3 plane, values chosen so the bias decides the rounding: (1+1+2+2 + bias) >> 2.
    let src = [1, 2, 9, 1, 2, 9, 5, 5, 5];
    let p = Plane::downsampled_h2v2(&src, 3, 3);
    assert_eq!((p.stride, p.rows, p.real_cols, p.real_rows), (8, 8, 2, 2));
    // (0,0): 1+2+1+2 = 6, bias 1 → 7 >> 2 = 1. (0,1): cols 2 and 2 (replicated): 9·4 = 36, bias 2 → 9.
    assert_eq!(&p.data[..3], &[1, 9, 9]);
    // Row 1: rows 2 and 2 (replicated): (5+5+5+5+1)>>2 = 5, then 5, 5.
    assert_eq!(&p.data[8..11], &[5, 5, 5]);
    // Rows below the real ones replicate the last real chroma row.
    assert_eq!(&p.data[7 * 8..7 * 8 + 3], &[5, 5, 5]);
    // Odd columns use bias 2: a sum of 6 gives (6 + 2) >> 2 = 2 there (bias 1 would give 1).
    let src = [0, 1, 2, 2, 1, 0, 1, 1];
    let p = Plane::downsampled_h2v2(&src, 4, 2);
    assert_eq!(&p.data[..2], &[0, 2]);
}

#[test]
fn fancy_upsampling_weights_and_edges() {
    // A 4×2 (real) chroma plane; check one interior and the edge outputs against hand-computed values.
    let mut p = Plane {
        data: vec![0; 8 * 8],
        stride: 8,
        rows: 8,
        real_cols: 4,
        real_rows: 2,
    };
    p.data[..4].copy_from_slice(&[10, 20, 30, 40]);
    p.data[8..12].copy_from_slice(&[50, 60, 70, 80]);
    let mut out = [0u8; 8];
    // Output row 0: near = chroma row 0, far = row 0 (replicated above): colsum = 4·v.
    p.upsample_row_h2v2(0, 8, 4, &mut out, &mut Vec::new());
    assert_eq!(out[0], ((40 * 4 + 8) >> 4) as u8); // first column
    assert_eq!(out[1], ((40 * 3 + 80 + 7) >> 4) as u8);
    assert_eq!(out[2], ((80 * 3 + 40 + 8) >> 4) as u8);
    assert_eq!(out[7], ((160 * 4 + 7) >> 4) as u8); // last column
    // Output row 1: near = row 0, far = row 1: colsum = 3·r0 + r1.
    p.upsample_row_h2v2(1, 8, 4, &mut out, &mut Vec::new());
    let cs = |i: usize| 3 * [10, 20, 30, 40][i] + [50, 60, 70, 80][i];
    assert_eq!(out[3], ((cs(1) * 3 + cs(2) + 7) >> 4) as u8);
    // Output row 3: near = row 1, far = row 2 → clamped to row 1.
    p.upsample_row_h2v2(3, 8, 4, &mut out, &mut Vec::new());
    assert_eq!(out[0], ((4 * 50 * 4 + 8) >> 4) as u8);
    // Two real columns or fewer: plain replication.
    p.real_cols = 2;
    p.upsample_row_h2v2(1, 4, 4, &mut out, &mut Vec::new());
    assert_eq!(&out[..4], &[10, 10, 20, 20]);
}

fn photo_like(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let fx = x as f64 / w as f64;
        let fy = y as f64 / h as f64;
        image::Rgb([
            (128.0 + 100.0 * (fx * 7.0).sin() * (fy * 3.0).cos()) as u8,
            (60.0 + 150.0 * fy + 20.0 * ((x + y) % 5) as f64 / 5.0) as u8,
            (200.0 * (1.0 - fx) * fy + 30.0) as u8,
        ])
    })
}

#[test]
fn yuv444_agrees_with_the_image_crate_codec() {
    // The image crate encodes 4:4:4 with the same IJG tables; its decoder's IDCT differs slightly, so
    // the round trips agree closely but not exactly.
    use image::codecs::jpeg::JpegEncoder;
    let img = photo_like(96, 64);
    for q in [7u8, 25, 75] {
        let mut bytes = Vec::new();
        JpegEncoder::new_with_quality(&mut bytes, q)
            .encode_image(&img)
            .expect("encode");
        let theirs = image::load_from_memory(&bytes).expect("decode").to_rgb8();
        let ours = roundtrip_with(&img, q, Subsampling::Yuv444);
        let n = ours.as_raw().len() as f64;
        let mad = ours
            .as_raw()
            .iter()
            .zip(theirs.as_raw())
            .map(|(&a, &b)| (f64::from(a) - f64::from(b)).abs())
            .sum::<f64>()
            / n;
        assert!(mad < 0.5, "quality {q}: mean abs diff {mad}");
    }
}

/// A picture with texture, edges and saturated colours (so every stage, including clamping, matters).
fn busy(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let v = (x * 37 + y * 11) ^ (x * y);
        image::Rgb([
            (v % 256) as u8,
            if (x / 3 + y / 5) % 2 == 0 { 255 } else { 0 },
            ((x * 255) / w.max(1)) as u8,
        ])
    })
}

#[test]
fn fused_pipeline_matches_the_per_stage_reference_byte_for_byte() {
    let sizes = [
        (1, 1),
        (2, 2),
        (3, 5),
        (5, 4),
        (8, 8),
        (15, 17),
        (16, 16),
        (17, 9),
        (33, 31),
        (64, 48),
        (100, 3),
        (3, 100),
        (224, 224),
    ];
    for (w, h) in sizes {
        for img in [busy(w, h), photo_like(w, h)] {
            for q in [1u8, 7, 10, 15, 18, 25, 50, 85, 95, 100] {
                for s in [Subsampling::Yuv420, Subsampling::Yuv444] {
                    assert_eq!(
                        roundtrip_with(&img, q, s),
                        reference::roundtrip_with(&img, q, s),
                        "{w}×{h} quality {q} {s:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn lane_quantiser_matches_the_scalar_one_for_every_input() {
    // Every 16-bit DCT output (islow outputs stay within ±2¹⁵) at every baseline step.
    for q in 1..=255u16 {
        let d = Divisor::new(q * 8);
        let quant = Quantiser::new(&[q; 64]);
        for t0 in (-32768i32..32768).step_by(8) {
            let lanes: [i32; 8] = std::array::from_fn(|l| t0 + l as i32);
            let got = quant.round_trip(usize::from(q % 64), &lanes);
            for l in 0..8 {
                assert_eq!(got[l], d.quantize(lanes[l]) * i32::from(q), "q {q}");
            }
        }
    }
}

fn transpose(m: &Block) -> Block {
    std::array::from_fn(|i| std::array::from_fn(|j| m[j][i]))
}

#[test]
fn lane_dct_passes_match_the_scalar_ones() {
    let quant: [i32; 64] = std::array::from_fn(|i| 1 + (i as i32 * 7) % 40);
    for seed in 0..200 {
        let block = test_block(seed);
        let mut scalar = block;
        fdct_islow(&mut scalar);
        let t: Block = std::array::from_fn(|c| std::array::from_fn(|r| block[r * 8 + c]));
        let lanes = fdct_lanes(&transpose(&fdct_lanes(&t, true)), false);
        assert_eq!(lanes.concat(), scalar.to_vec(), "fdct seed {seed}");
        // Inverse, from arbitrary (also large, clamping) coefficients.
        let coef: [i32; 64] = std::array::from_fn(|i| (scalar[i] * (seed % 5 + 1)) / 9);
        let want = idct_islow(&coef, &quant);
        let deq: Block =
            std::array::from_fn(|r| std::array::from_fn(|c| coef[r * 8 + c] * quant[r * 8 + c]));
        let cols = idct_lanes(&deq, CONST_BITS - PASS1_BITS);
        let samples = idct_lanes(&transpose(&cols), CONST_BITS + PASS1_BITS + 3);
        let got: Vec<u8> = (0..64)
            .map(|i| (samples[i % 8][i / 8] + 128).clamp(0, 255) as u8)
            .collect();
        assert_eq!(got, want.to_vec(), "idct seed {seed}");
    }
}

#[test]
fn result_does_not_depend_on_thread_count() {
    let img = photo_like(133, 71);
    let a = roundtrip(&img, 10);
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    assert_eq!(a, one.install(|| roundtrip(&img, 10)));
}
