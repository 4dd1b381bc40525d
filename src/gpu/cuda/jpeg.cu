// JPEG round trip on the GPU (docs/gpu.md#gpu-resident-scenarios; the algorithm is
// docs/imagenet-c.md#jpeg_compression). Mirrors the CPU kernel src/kernels/jpeg.rs (`roundtrip`,
// libjpeg-turbo's lossy stages as Pillow runs them: 4:2:0, islow DCT, fancy upsampling) operation
// for operation, in the same integer arithmetic, so both give the same bytes.
//
// Four launches (recipe: src/gpu/jpeg.rs):
//   1. rs_jpeg_forward_rows  one element per (8×8 block, row): the row's 8 samples straight from
//                            the RGB source (colour conversion, edge replication, 2×2 chroma
//                            box), centred, first (row) pass of the forward DCT → coefficients;
//   2. rs_jpeg_quant_cols    one element per (block, column): the forward DCT's column pass,
//                            quantisation and dequantisation, the inverse DCT's column pass;
//   3. rs_jpeg_inverse_rows  one element per (block, row): the inverse DCT's row pass, range
//                            limited → the reconstructed Y, Cb, Cr planes;
//   4. rs_jpeg_decode        one element per pixel: fancy chroma upsampling, YCbCr → RGB.
// Entropy coding is lossless and is skipped.
//
// Every launch takes the same arguments: a.p[0] the RGB source, a.p[1] the RGB output, a.p[2] the
// coefficients (one i32 per plane sample), a.p[3] the planes (one byte per sample: Y, then Cb,
// then Cr, each padded to whole blocks as libjpeg lays them out), a.p[4] the quantisers (u32:
// luma then chroma, each recip[64], corr[64], shift[64], step[64] in natural order, from the CPU
// kernel's `Quantiser`); a.i[0] the width, a.i[1] the height (the recipe keeps the planes'
// sample count below 2³¹, so indices within a plane and pixel indices fit 32 bits).

// Plane geometry (the CPU kernel's `Geometry`, 4:2:0).
struct RsJpegGeo {
    int w, h;
    int ys, yr;    // luma: 8·⌈w/8⌉ samples per row, 8·⌈h/8⌉ rows
    int cs, cr;    // chroma: 16·⌈w/16⌉/2 × 16·⌈h/16⌉/2
    int ccols;     // real chroma columns ⌈w/2⌉ and rows ⌈h/2⌉
    int crows;
    i64 yblocks;   // luma blocks
    i64 cblocks;   // blocks of one chroma plane
};

RS_HD RsJpegGeo rs_jpeg_geo(const RsArgs& a) {
    RsJpegGeo g;
    g.w = (int)a.i[0];
    g.h = (int)a.i[1];
    g.ys = (g.w + 7) / 8 * 8;
    g.yr = (g.h + 7) / 8 * 8;
    g.cs = (g.w + 15) / 16 * 8;
    g.cr = (g.h + 15) / 16 * 8;
    g.ccols = (g.w + 1) / 2;
    g.crows = (g.h + 1) / 2;
    g.yblocks = (i64)(g.ys / 8) * (g.yr / 8);
    g.cblocks = (i64)(g.cs / 8) * (g.cr / 8);
    return g;
}

// Where block `b` (luma blocks, then Cb's, then Cr's) lies: its plane (0 Y, 1 Cb, 2 Cr), the
// plane's first sample in the planes buffer, its row length, and the block's column and row.
struct RsJpegBlock {
    int plane;
    i64 base;
    int stride;
    int bx, by;
};

RS_HD RsJpegBlock rs_jpeg_block(const RsJpegGeo& g, i64 b) {
    RsJpegBlock k;
    i64 luma = (i64)g.ys * g.yr, chroma = (i64)g.cs * g.cr;
    if (b < g.yblocks) {
        k.plane = 0;
        k.base = 0;
        k.stride = g.ys;
    } else {
        b -= g.yblocks;
        k.plane = b < g.cblocks ? 1 : 2;
        if (k.plane == 2) b -= g.cblocks;
        k.base = luma + (k.plane - 1) * chroma;
        k.stride = g.cs;
    }
    // 32-bit division (the recipe keeps every plane sample's index below 2³¹).
    u32 across = (u32)(k.stride / 8);
    k.bx = (int)((u32)b % across);
    k.by = (int)((u32)b / across);
    return k;
}

// ---- colour conversion (jccolor.c, jdcolor.c): 16-bit fixed point, FIX(x) = (int)(x·2¹⁶ + ½) ----

#define RS_JPEG_HALF (1 << 15)
#define RS_JPEG_CBCR_OFFSET (128 << 16)

RS_HD int rs_jpeg_y(const u8* p) {
    return (19595 * p[0] + 38470 * p[1] + 7471 * p[2] + RS_JPEG_HALF) >> 16;
}
RS_HD int rs_jpeg_cb(const u8* p) {
    return (-11059 * p[0] - 21709 * p[1] + 32768 * p[2] + RS_JPEG_CBCR_OFFSET + RS_JPEG_HALF - 1) >>
           16;
}
RS_HD int rs_jpeg_cr(const u8* p) {
    return (32768 * p[0] - 27439 * p[1] - 5329 * p[2] + RS_JPEG_CBCR_OFFSET + RS_JPEG_HALF - 1) >>
           16;
}

// ---- DCT (jfdctint.c, jidctint.c): "islow", 13-bit constants, 2 extra bits between passes --------

#define RS_JPEG_CONST_BITS 13
#define RS_JPEG_PASS1_BITS 2

// libjpeg's DESCALE: shift right by n, rounding half up.
RS_HD int rs_jpeg_descale(int x, int n) { return (x + (1 << (n - 1))) >> n; }

// One 1-D pass of jpeg_fdct_islow on d[0..8] (stride `s`), in place; pass 1 leaves the outputs
// scaled up by PASS1_BITS, pass 2 removes it.
RS_HD void rs_jpeg_fdct_1d(int* d, int s, bool pass1) {
    int tmp0 = d[0] + d[7 * s], tmp7 = d[0] - d[7 * s];
    int tmp1 = d[s] + d[6 * s], tmp6 = d[s] - d[6 * s];
    int tmp2 = d[2 * s] + d[5 * s], tmp5 = d[2 * s] - d[5 * s];
    int tmp3 = d[3 * s] + d[4 * s], tmp4 = d[3 * s] - d[4 * s];
    int tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3;
    int tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
    int shift;
    if (pass1) {
        d[0] = (tmp10 + tmp11) * (1 << RS_JPEG_PASS1_BITS);
        d[4 * s] = (tmp10 - tmp11) * (1 << RS_JPEG_PASS1_BITS);
        shift = RS_JPEG_CONST_BITS - RS_JPEG_PASS1_BITS;
    } else {
        d[0] = rs_jpeg_descale(tmp10 + tmp11, RS_JPEG_PASS1_BITS);
        d[4 * s] = rs_jpeg_descale(tmp10 - tmp11, RS_JPEG_PASS1_BITS);
        shift = RS_JPEG_CONST_BITS + RS_JPEG_PASS1_BITS;
    }
    int z1 = (tmp12 + tmp13) * 4433;
    d[2 * s] = rs_jpeg_descale(z1 + tmp13 * 6270, shift);
    d[6 * s] = rs_jpeg_descale(z1 + tmp12 * -15137, shift);

    z1 = tmp4 + tmp7;
    int z2 = tmp5 + tmp6, z3 = tmp4 + tmp6, z4 = tmp5 + tmp7;
    int z5 = (z3 + z4) * 9633;
    tmp4 = tmp4 * 2446;
    tmp5 = tmp5 * 16819;
    tmp6 = tmp6 * 25172;
    tmp7 = tmp7 * 12299;
    z1 = z1 * -7373;
    z2 = z2 * -20995;
    z3 = z3 * -16069 + z5;
    z4 = z4 * -3196 + z5;
    d[7 * s] = rs_jpeg_descale(tmp4 + z1 + z3, shift);
    d[5 * s] = rs_jpeg_descale(tmp5 + z2 + z4, shift);
    d[3 * s] = rs_jpeg_descale(tmp6 + z2 + z3, shift);
    d[s] = rs_jpeg_descale(tmp7 + z1 + z4, shift);
}

// One 1-D pass of jpeg_idct_islow on d[0..8] (stride `s`, dequantised), descaled by `shift`, in
// place. (libjpeg's shortcuts for all-zero AC inputs give the same values, so there are none.)
RS_HD void rs_jpeg_idct_1d(int* d, int s, int shift) {
    int z2 = d[2 * s], z3 = d[6 * s];
    int z1 = (z2 + z3) * 4433;
    int tmp2 = z1 + z3 * -15137;
    int tmp3 = z1 + z2 * 6270;
    int tmp0 = (d[0] + d[4 * s]) * (1 << RS_JPEG_CONST_BITS);
    int tmp1 = (d[0] - d[4 * s]) * (1 << RS_JPEG_CONST_BITS);
    int tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3;
    int tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;

    tmp3 = d[s];
    tmp2 = d[3 * s];
    tmp1 = d[5 * s];
    tmp0 = d[7 * s];
    int z4 = tmp1 + tmp3;
    z3 = tmp0 + tmp2;
    z2 = tmp1 + tmp2;
    z1 = tmp0 + tmp3;
    int z5 = (z3 + z4) * 9633;
    tmp3 = tmp3 * 12299;
    tmp2 = tmp2 * 25172;
    tmp1 = tmp1 * 16819;
    tmp0 = tmp0 * 2446;
    z4 = z4 * -3196 + z5;
    z3 = z3 * -16069 + z5;
    z1 = z1 * -7373;
    z2 = z2 * -20995;
    tmp3 += z1 + z4;
    tmp2 += z2 + z3;
    tmp1 += z2 + z4;
    tmp0 += z1 + z3;
    d[0] = rs_jpeg_descale(tmp10 + tmp3, shift);
    d[7 * s] = rs_jpeg_descale(tmp10 - tmp3, shift);
    d[s] = rs_jpeg_descale(tmp11 + tmp2, shift);
    d[6 * s] = rs_jpeg_descale(tmp11 - tmp2, shift);
    d[2 * s] = rs_jpeg_descale(tmp12 + tmp1, shift);
    d[5 * s] = rs_jpeg_descale(tmp12 - tmp1, shift);
    d[3 * s] = rs_jpeg_descale(tmp13 + tmp0, shift);
    d[4 * s] = rs_jpeg_descale(tmp13 - tmp0, shift);
}

// Stage 1–3a: row r of block b, sampled from the source and through the forward DCT's row pass.
RS_KERNEL rs_jpeg_forward_rows(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    int* coef = RS_BUF(int, 2);
    RsJpegGeo g = rs_jpeg_geo(a);
    RS_FOR(e, (g.yblocks + 2 * g.cblocks) * 8) {
        i64 b = e >> 3;
        int r = (int)(e & 7);
        RsJpegBlock k = rs_jpeg_block(g, b);
        int d[8];
        if (k.plane == 0) {
            // Luma: rows and columns past the image replicate its last ones.
            const u8* row = src + (i64)rs_clampi(k.by * 8 + r, 0, g.h - 1) * g.w * 3;
            for (int c = 0; c < 8; ++c)
                d[c] = rs_jpeg_y(row + 3 * rs_clampi(k.bx * 8 + c, 0, g.w - 1)) - 128;
        } else {
            // Chroma: the 2×2 box (bias 1, 2 alternating by column) over full-resolution chroma
            // replicated past the image; rows past the real chroma rows replicate the last one.
            int j = rs_clampi(k.by * 8 + r, 0, g.crows - 1);
            const u8* r0 = src + (i64)(2 * j) * g.w * 3;
            const u8* r1 = src + (i64)rs_clampi(2 * j + 1, 0, g.h - 1) * g.w * 3;
            for (int c = 0; c < 8; ++c) {
                int i = k.bx * 8 + c;
                int x0 = 3 * rs_clampi(2 * i, 0, g.w - 1), x1 = 3 * rs_clampi(2 * i + 1, 0, g.w - 1);
                int sum = k.plane == 1 ? rs_jpeg_cb(r0 + x0) + rs_jpeg_cb(r0 + x1) +
                                             rs_jpeg_cb(r1 + x0) + rs_jpeg_cb(r1 + x1)
                                       : rs_jpeg_cr(r0 + x0) + rs_jpeg_cr(r0 + x1) +
                                             rs_jpeg_cr(r1 + x0) + rs_jpeg_cr(r1 + x1);
                d[c] = ((sum + 1 + (i & 1)) >> 2) - 128;
            }
        }
        rs_jpeg_fdct_1d(d, 1, true);
        int* out = coef + b * 64 + r * 8;
        for (int c = 0; c < 8; ++c) out[c] = d[c];
    }
}

// Stage 3b: column c of block b: forward DCT column pass, quantise with libjpeg-turbo's
// reciprocal rounding (32-bit unsigned arithmetic, exact for every DCT output), dequantise,
// inverse DCT column pass.
RS_KERNEL rs_jpeg_quant_cols(RsArgs a) {
    int* coef = RS_BUF(int, 2);
    const u32* quant = RS_BUF(const u32, 4);
    RsJpegGeo g = rs_jpeg_geo(a);
    RS_FOR(e, (g.yblocks + 2 * g.cblocks) * 8) {
        i64 b = e >> 3;
        int c = (int)(e & 7);
        const u32* q = quant + (b < g.yblocks ? 0 : 256);
        int* col = coef + b * 64 + c;
        int d[8];
        for (int k = 0; k < 8; ++k) d[k] = col[8 * k];
        rs_jpeg_fdct_1d(d, 1, false);
        for (int k = 0; k < 8; ++k) {
            int n = 8 * k + c;
            int t = d[k];
            u32 m = (t < 0 ? 0u - (u32)t : (u32)t) + q[64 + n];
            int v = (int)((m * q[n]) >> q[128 + n]);
            d[k] = (t < 0 ? -v : v) * (int)q[192 + n];
        }
        rs_jpeg_idct_1d(d, 1, RS_JPEG_CONST_BITS - RS_JPEG_PASS1_BITS);
        for (int k = 0; k < 8; ++k) col[8 * k] = d[k];
    }
}

// Stage 3c: row r of block b: inverse DCT row pass, range-limited (saturating) into the planes.
RS_KERNEL rs_jpeg_inverse_rows(RsArgs a) {
    const int* coef = RS_BUF(const int, 2);
    u8* planes = RS_BUF(u8, 3);
    RsJpegGeo g = rs_jpeg_geo(a);
    RS_FOR(e, (g.yblocks + 2 * g.cblocks) * 8) {
        i64 b = e >> 3;
        int r = (int)(e & 7);
        RsJpegBlock k = rs_jpeg_block(g, b);
        const int* in = coef + b * 64 + r * 8;
        int d[8];
        for (int c = 0; c < 8; ++c) d[c] = in[c];
        rs_jpeg_idct_1d(d, 1, RS_JPEG_CONST_BITS + RS_JPEG_PASS1_BITS + 3);
        u8* out = planes + k.base + (i64)(k.by * 8 + r) * k.stride + k.bx * 8;
        for (int c = 0; c < 8; ++c) out[c] = (u8)rs_clampi(d[c] + 128, 0, 255);
    }
}

// h2v2 upsampling of chroma plane `p` at output pixel (x, y): fancy (triangle: 9/16, 3/16, 3/16,
// 1/16, rounding +8 / +7 by column parity, edge samples and rows replicated) when the plane has
// more than 2 real columns, plain 2×2 replication otherwise, as libjpeg-turbo chooses.
RS_HD int rs_jpeg_upsample(const u8* p, const RsJpegGeo& g, int x, int y) {
    int near = y / 2, k = x / 2;
    const u8* n = p + (i64)near * g.cs;
    if (g.ccols <= 2) return n[k];
    int far = (y & 1) ? rs_clampi(near + 1, 0, g.crows - 1) : (near > 0 ? near - 1 : 0);
    const u8* f = p + (i64)far * g.cs;
    int here = 3 * n[k] + f[k];
    if (x & 1) {
        int right = k < g.ccols - 1 ? 3 * n[k + 1] + f[k + 1] : here;
        return (here * 3 + right + 7) >> 4;
    }
    int left = k > 0 ? 3 * n[k - 1] + f[k - 1] : here;
    return (here * 3 + left + 8) >> 4;
}

// Stages 4–5: pixel (x, y) from the reconstructed planes.
RS_KERNEL rs_jpeg_decode(RsArgs a) {
    u8* dst = RS_BUF(u8, 1);
    const u8* planes = RS_BUF(const u8, 3);
    RsJpegGeo g = rs_jpeg_geo(a);
    const u8* cbp = planes + (i64)g.ys * g.yr;
    const u8* crp = cbp + (i64)g.cs * g.cr;
    RS_FOR(e, (i64)g.w * g.h) {
        int x = (int)((u32)e % (u32)g.w), y = (int)((u32)e / (u32)g.w);
        int yv = planes[(i64)y * g.ys + x];
        int cb = rs_jpeg_upsample(cbp, g, x, y) - 128;
        int cr = rs_jpeg_upsample(crp, g, x, y) - 128;
        u8* px = dst + 3 * e;
        px[0] = (u8)rs_clampi(yv + ((91881 * cr + RS_JPEG_HALF) >> 16), 0, 255);
        px[1] = (u8)rs_clampi(yv + ((-22554 * cb + RS_JPEG_HALF - 46802 * cr) >> 16), 0, 255);
        px[2] = (u8)rs_clampi(yv + ((116130 * cb + RS_JPEG_HALF) >> 16), 0, 255);
    }
}
