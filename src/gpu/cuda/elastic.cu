// elastic_transform on the GPU (docs/imagenet-c.md#elastic_transform; the CPU kernel is
// `elastic_transform` in src/scenario/corruption/elastic.rs: `raw_displacements`,
// `smooth_displacements`, `resample`) and the separable symmetric filter it smooths with (the CPU's
// `separable_rows` / `symmetric_pass` in src/kernels/filter.rs, scipy's operation order). The
// displacement fields are drawn from Philox instead of the CPU's per-row streams; the smoothing and
// the resampling compute what the CPU computes, in the same precision
// (docs/gpu.md#gpu-resident-scenarios).

// The in-image index that position i (any distance outside 0..n, n >= 1) reads: border 0 edge
// replication (scipy 'nearest'), 1 half-sample symmetric ('reflect'), 2 whole-sample symmetric
// (OpenCV's REFLECT_101); `filter::border_index`.
RS_HD i64 rs_border_index(i64 i, i64 n, int border) {
    if (i >= 0 && i < n) return i;
    if (border == 0) return i < 0 ? 0 : n - 1;
    if (border == 1) {
        i64 p = 2 * n, m = ((i % p) + p) % p;
        return m >= n ? p - 1 - m : m;
    }
    if (n == 1) return 0;
    i64 p = 2 * n - 2, m = ((i % p) + p) % p;
    return m >= n ? p - m : m;
}

// The vertical pass of a separable filter with a symmetric kernel: a.p[0] input, a.p[1] output
// (doubles, a.i[0] columns × a.i[1] rows × a.i[2] channels, interleaved), a.p[2] the 2r + 1
// weights; a.i[3] the radius r, a.i[4] the border (rs_border_index). One element per value:
// w0·c, then + (up_j + down_j)·w_j for j = r down to 1 (scipy's order).
RS_KERNEL rs_filter_rows_sym(RsArgs a) {
    const double* in = RS_BUF(const double, 0);
    double* out = RS_BUF(double, 1);
    const double* k = RS_BUF(const double, 2);
    i64 row = a.i[0] * a.i[2], h = a.i[1], r = a.i[3];
    int border = (int)a.i[4];
    RS_FOR(e, row * h) {
        i64 y = e / row, x = e % row;
        double acc = in[e] * k[r];
        for (i64 j = r; j >= 1; --j) {
            i64 u = rs_border_index(y - j, h, border), d = rs_border_index(y + j, h, border);
            acc += (in[u * row + x] + in[d * row + x]) * k[r + j];
        }
        out[e] = acc;
    }
}

// The horizontal pass, same arguments (left and right neighbours a.i[2] values apart).
RS_KERNEL rs_filter_cols_sym(RsArgs a) {
    const double* in = RS_BUF(const double, 0);
    double* out = RS_BUF(double, 1);
    const double* k = RS_BUF(const double, 2);
    i64 w = a.i[0], ch = a.i[2], row = w * ch, h = a.i[1], r = a.i[3];
    int border = (int)a.i[4];
    RS_FOR(e, row * h) {
        i64 y = e / row, x = (e % row) / ch, c = e % ch;
        const double* line = in + y * row + c;
        double acc = line[x * ch] * k[r];
        for (i64 j = r; j >= 1; --j) {
            i64 lx = rs_border_index(x - j, w, border), rx = rs_border_index(x + j, w, border);
            acc += (line[lx * ch] + line[rx * ch]) * k[r + j];
        }
        out[e] = acc;
    }
}

// The raw displacement fields: a.p[0] out, [dx, dy] doubles per pixel (a.i[0] pixels); a.i[1] the
// RngKey; a.d[0] max_d. Each U[−max_d, max_d) with 53 random bits, pixel p from Philox element p.
RS_KERNEL rs_elastic_field(RsArgs a) {
    double* out = RS_BUF(double, 0);
    double max_d = a.d[0];
    RS_FOR(p, a.i[0]) {
        RsU32x4 r = rs_philox((u64)a.i[1], (u64)p, 0x656c6173u /* "elas" */, 0u);
        out[2 * p] = max_d * (2.0 * rs_unit_f64(r.v[0], r.v[1]) - 1.0);
        out[2 * p + 1] = max_d * (2.0 * rs_unit_f64(r.v[2], r.v[3]) - 1.0);
    }
}

// `f32(v/255)` as the reference's float32 image holds it, widened to double.
RS_HD double rs_unit_f32(u8 v) { return (double)((float)v / 255.0f); }

// The resampling (`resample`): a.p[0] source, a.p[1] output (a.i[0] × a.i[1] RGB), a.p[2] the
// smoothed fields ([dx, dy] doubles per pixel); a.d[0] alpha. One element per pixel: the
// displacement (field·alpha) stored as float32, the sample point (y + dy, x + dx), bilinear in double
// on the float32 x/255 values with reflected neighbours, stored as float32, clipped, ×255, truncated.
RS_KERNEL rs_elastic_resample(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const double* d = RS_BUF(const double, 2);
    i64 w = a.i[0], h = a.i[1];
    double alpha = a.d[0];
    RS_FOR(p, w * h) {
        i64 x = p % w, y = p / w;
        double cy = (double)y + (double)(float)(d[2 * p + 1] * alpha);
        double cx = (double)x + (double)(float)(d[2 * p] * alpha);
        double fy = floor(cy), fx = floor(cx);
        double ty = cy - fy, tx = cx - fx;
        i64 y0 = (i64)fy, x0 = (i64)fx;
        i64 ya = rs_border_index(y0, h, 1), yb = rs_border_index(y0 + 1, h, 1);
        i64 xa = rs_border_index(x0, w, 1), xb = rs_border_index(x0 + 1, w, 1);
        const u8* pa = src + 3 * (ya * w + xa);
        const u8* pb = src + 3 * (ya * w + xb);
        const u8* pc = src + 3 * (yb * w + xa);
        const u8* pd = src + 3 * (yb * w + xb);
        for (int c = 0; c < 3; ++c) {
            double top = (1.0 - tx) * rs_unit_f32(pa[c]) + tx * rs_unit_f32(pb[c]);
            double bot = (1.0 - tx) * rs_unit_f32(pc[c]) + tx * rs_unit_f32(pd[c]);
            float v = (float)((1.0 - ty) * top + ty * bot);
            v = v > 0.0f ? v : 0.0f;
            v = v < 1.0f ? v : 1.0f;
            dst[3 * p + c] = (u8)(int)(v * 255.0f);
        }
    }
}
