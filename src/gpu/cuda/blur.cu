// Blur corruptions on the GPU (docs/gpu.md#gpu-resident-scenarios, docs/imagenet-c.md#the-19-corruptions).
// CPU kernels mirrored: src/scenario/corruption/blur.rs on top of src/kernels/gauss_u8.rs and
// filter.rs (gaussian_blur, the glass_blur passes: scipy gaussian_filter), filter.rs
// (defocus_blur: the anti-aliased disk under OpenCV's reflect-101 border), motion.rs + filter.rs
// (motion_blur: the one-sided motion taps), zoom.rs (zoom_blur: imagecorruptions' clipped zooms,
// summed in float32) and glass.rs (glass_blur's pixel walk).
//
// Images are interleaved RGB bytes, `a.i[0]` columns by `a.i[1]` rows. Where the CPU kernel
// computes in double (the Gaussian passes, the disk and motion sums, the zoom interpolation) these
// kernels do too, with the same operations in the same order, so their bytes equal the CPU's.

// scipy 'nearest' / OpenCV BORDER_REPLICATE.
RS_HD i64 rs_clamp_index(i64 i, i64 n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

// OpenCV BORDER_REFLECT_101 (`c b | a b c | b a`), periodic so that any distance works.
RS_HD i64 rs_reflect101(i64 i, i64 n) {
    if (i >= 0 && i < n) return i;
    if (n == 1) return 0;
    i64 p = 2 * n - 2;
    i64 m = i % p;
    if (m < 0) m += p;
    return m >= n ? p - m : m;
}

// `floor8(clip(v, 0, 1)·255)` in double (kernels::filter::floor8_clip). NaN gives 0.
RS_HD u8 rs_floor8_f64(double v) {
    v = v > 0.0 ? v : 0.0;
    v = v < 1.0 ? v : 1.0;
    return (u8)(int)(v * 255.0);
}

// ---- bytes to the unit scale ------------------------------------------------------------------------

// a.p[0] bytes, a.p[1] doubles `x / 255` (a.i[0] elements): the reference's `x / 255.` in float64.
RS_KERNEL rs_unit_f64(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    double* dst = RS_BUF(double, 1);
    RS_FOR(e, a.i[0]) { dst[e] = (double)src[e] / 255.0; }
}

// a.p[0] bytes, a.p[1] floats `(float)(x / 255)` (a.i[0] elements): zoom_blur's
// `(np.array(x) / 255.).astype(np.float32)`.
RS_KERNEL rs_unit_f32(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    float* dst = RS_BUF(float, 1);
    RS_FOR(e, a.i[0]) { dst[e] = (float)((double)src[e] / 255.0); }
}

// ---- scipy gaussian_filter (sigma, sigma, 0), mode 'nearest': two symmetric passes --------------
//
// scipy's correlate1d with a symmetric kernel evaluates `in[0]·w0 + Σ_{j=r..1} (in[−j] + in[+j])·w_j`,
// outermost pair first, axis 0 (rows) then axis 1 (columns), in double. a.p[2] holds the half
// kernel w0..wr (doubles, gaussian::gaussian_kernel1d), a.i[2] its radius r.

// Vertical pass: a.p[0] the unit-scale image (doubles), a.p[1] the result (doubles).
RS_KERNEL rs_gauss_rows(RsArgs a) {
    const double* src = RS_BUF(const double, 0);
    double* dst = RS_BUF(double, 1);
    const double* k = RS_BUF(const double, 2);
    i64 w = a.i[0], h = a.i[1], r = a.i[2];
    i64 row = 3 * w;
    RS_FOR(e, row * h) {
        i64 y = e / row, xc = e - y * row;
        double acc = src[e] * k[0];
        for (i64 j = r; j >= 1; --j) {
            double l = src[rs_clamp_index(y - j, h) * row + xc];
            double rr = src[rs_clamp_index(y + j, h) * row + xc];
            acc += (l + rr) * k[j];
        }
        dst[e] = acc;
    }
}

// Horizontal pass: a.p[0] the vertical pass (doubles), a.p[1] the bytes floor8(clip(·, 0, 1)·255).
RS_KERNEL rs_gauss_cols(RsArgs a) {
    const double* src = RS_BUF(const double, 0);
    u8* dst = RS_BUF(u8, 1);
    const double* k = RS_BUF(const double, 2);
    i64 w = a.i[0], h = a.i[1], r = a.i[2];
    i64 row = 3 * w;
    RS_FOR(e, row * h) {
        i64 y = e / row, xc = e - y * row;
        i64 x = xc / 3, c = xc - x * 3;
        const double* line = src + y * row + c;
        double acc = line[3 * x] * k[0];
        for (i64 j = r; j >= 1; --j) {
            double l = line[3 * rs_clamp_index(x - j, w)];
            double rr = line[3 * rs_clamp_index(x + j, w)];
            acc += (l + rr) * k[j];
        }
        dst[e] = rs_floor8_f64(acc);
    }
}

// ---- defocus_blur: OpenCV filter2D with the anti-aliased disk, reflect-101 border ----------------

// One tap of a 2-D correlation: weight, column and row offsets.
struct RsTap {
    double w;
    int dx;
    int dy;
};

// a.p[0] the unit-scale image (doubles), a.p[1] the bytes; a.p[2] a.i[2] taps (RsTap, the
// disk kernel's non-zero entries row by row). Sum in double in tap order, then floor8(clip).
RS_KERNEL rs_filter2d_reflect101(RsArgs a) {
    const double* src = RS_BUF(const double, 0);
    u8* dst = RS_BUF(u8, 1);
    const RsTap* taps = RS_BUF(const RsTap, 2);
    i64 w = a.i[0], h = a.i[1], n = a.i[2];
    i64 row = 3 * w;
    RS_FOR(e, row * h) {
        i64 y = e / row, xc = e - y * row;
        i64 x = xc / 3, c = xc - x * 3;
        double acc = 0.0;
        for (i64 t = 0; t < n; ++t) {
            i64 sy = rs_reflect101(y + taps[t].dy, h);
            i64 sx = rs_reflect101(x + taps[t].dx, w);
            acc += taps[t].w * src[sy * row + 3 * sx + c];
        }
        dst[e] = rs_floor8_f64(acc);
    }
}

// ---- motion_blur: the one-sided motion kernel (motion::motion_kernel) ------------------------------

// The taps, one element: a.p[0] doubles out: [angle (degrees), count, then (weight, dx, dy) per tap].
// a.i[0] the RngKey, a.i[1] the radius, a.i[2] width, a.i[3] height, a.i[4] non-zero when the angle
// is given in a.d[1] (else drawn uniform in [−45, 45) from Philox); a.d[0] sigma. The taps stop at
// the first one reaching a whole frame side away, as the CPU's.
RS_KERNEL rs_motion_taps(RsArgs a) {
    double* out = RS_BUF(double, 0);
    i64 radius = a.i[1], w = a.i[2], h = a.i[3];
    double sigma = a.d[0];
    RS_FOR(e, 1) {
        double angle = a.d[1];
        if (a.i[4] == 0) {
            RsU32x4 r = rs_philox((u64)a.i[0], 0u, 0x6d6f7469u /* "moti" */, 0u);
            // 53 random bits: a uniform in [0, 1).
            u64 bits = ((u64)r.v[0] << 21) ^ (u64)(r.v[1] >> 11);
            double u = (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
            angle = -45.0 + 90.0 * u;
        }
        i64 n = 2 * radius + 1;
        double norm = sqrt(2.0 * 3.141592653589793) * sigma;
        double z = 0.0;
        for (i64 i = 0; i < n; ++i) {
            double x = (double)i;
            z += exp(-(x * x) / (2.0 * sigma * sigma)) / norm;
        }
        double t = angle * (3.141592653589793 / 180.0);
        double p0 = (double)n * sin(t), p1 = (double)n * cos(t);
        double hyp = hypot(p0, p1);
        i64 count = 0;
        for (i64 i = 0; i < n; ++i) {
            double x = (double)i;
            double k = exp(-(x * x) / (2.0 * sigma * sigma)) / norm;
            double dy = ceil(((double)i * p0) / hyp - 0.5);
            double dx = ceil(((double)i * p1) / hyp - 0.5);
            if (fabs(dy) >= (double)h || fabs(dx) >= (double)w) break;
            out[2 + 3 * count] = k / z;
            out[3 + 3 * count] = dx;
            out[4 + 3 * count] = dy;
            ++count;
        }
        out[0] = angle;
        out[1] = (double)count;
    }
}

// The streak: a.p[0] source bytes, a.p[1] output bytes, a.p[2] the taps of rs_motion_taps.
// `trunc(clip(Σ_t w_t · x(clamp(y + dy_t), clamp(x + dx_t)), 0, 255))`, taps added in order in double.
RS_KERNEL rs_motion_streak(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const double* taps = RS_BUF(const double, 2);
    i64 w = a.i[0], h = a.i[1];
    i64 row = 3 * w;
    i64 n = (i64)taps[1];
    RS_FOR(e, row * h) {
        i64 y = e / row, xc = e - y * row;
        i64 x = xc / 3, c = xc - x * 3;
        double acc = 0.0;
        for (i64 t = 0; t < n; ++t) {
            const double* tap = taps + 2 + 3 * t;
            i64 sx = rs_clamp_index(x + (i64)tap[1], w);
            i64 sy = rs_clamp_index(y + (i64)tap[2], h);
            acc += tap[0] * (double)src[sy * row + 3 * sx + c];
        }
        acc = acc > 0.0 ? acc : 0.0;
        acc = acc < 255.0 ? acc : 255.0;
        dst[e] = (u8)(int)acc;
    }
}

// ---- zoom_blur: imagecorruptions' clipped zooms, summed in float32 --------------------------------

// One output position of one axis of a clipped zoom (zoom::zoom_axis): the two source indices
// (lo < 0: the position is outside the zoomed crop, nothing is added) and the upper weight t.
struct RsZoomTap {
    int lo;
    int hi;
    double t;
};

// a.p[0] the unit-scale image (floats), a.p[1] the output bytes, a.p[2] the tables: per factor,
// `width` column taps then `height` row taps (RsZoomTap); a.i[2] the number of factors. Per element:
// every factor's bilinear value in double (scipy's order), cast to float and added in factor order,
// then floor8((x + Σ) / (count + 1)) in float.
RS_KERNEL rs_zoom_blur(RsArgs a) {
    const float* src = RS_BUF(const float, 0);
    u8* dst = RS_BUF(u8, 1);
    const RsZoomTap* tab = RS_BUF(const RsZoomTap, 2);
    i64 w = a.i[0], h = a.i[1], nf = a.i[2];
    i64 row = 3 * w;
    float n = (float)(nf + 1);
    RS_FOR(e, row * h) {
        i64 y = e / row, xc = e - y * row;
        i64 x = xc / 3, c = xc - x * 3;
        float acc = 0.0f;
        for (i64 k = 0; k < nf; ++k) {
            const RsZoomTap* t = tab + k * (w + h);
            RsZoomTap tx = t[x], ty = t[w + y];
            if (tx.lo < 0 || ty.lo < 0) continue;
            const float* r0 = src + (i64)ty.lo * row + c;
            const float* r1 = src + (i64)ty.hi * row + c;
            double ox = 1.0 - tx.t, oy = 1.0 - ty.t;
            double top = (double)r0[3 * tx.lo] * ox + (double)r0[3 * tx.hi] * tx.t;
            double bot = (double)r1[3 * tx.lo] * ox + (double)r1[3 * tx.hi] * tx.t;
            acc += (float)(top * oy + bot * ty.t);
        }
        dst[e] = rs_floor8((src[e] + acc) / n);
    }
}

// ---- glass_blur's walk, in parallel ------------------------------------------------------------------
//
// The reference visits rows h−δ down to δ+1 and, in each, columns w−δ down to δ+1, copying into
// pixel p the pixel s = p + (dy, dx) as it is at that moment: s's new value if s was visited before p
// (s > p in row-major order and s is in the walked rectangle), else its value before the pass. So
// every pixel ends up with the pre-pass value of the root of a chain of such copies; the chains are
// followed by pointer jumping (each launch doubles the distance every link spans), which gives the
// sequential walk's result exactly for the same offsets. The offsets come from Philox (dx from word 0,
// dy from word 1, each Lemire-mapped to {−δ, …, δ−1}, as the CPU maps its xoshiro words).

// Links of one pass: a.p[0] ints out (a.i[0]·a.i[1] pixels): ≥ 0 the pixel whose new value is
// copied, < 0 `−(s + 1)` for the pre-pass value of pixel s. a.i[2] δ, a.i[3] the RngKey, a.i[4] the
// iteration (the Philox stream).
RS_KERNEL rs_glass_links(RsArgs a) {
    int* link = RS_BUF(int, 0);
    i64 w = a.i[0], h = a.i[1], d = a.i[2];
    u64 key = (u64)a.i[3];
    u32 it = (u32)a.i[4];
    u64 span = (u64)(2 * d);
    RS_FOR(p, w * h) {
        i64 y = p / w, x = p - y * w;
        bool walked = y >= d + 1 && y <= h - d && x >= d + 1 && x <= w - d && y < h && x < w;
        i64 s = p;
        if (walked) {
            RsU32x4 r = rs_philox(key, (u64)p, it, 0u);
            i64 dx = (i64)(((u64)r.v[0] * span) >> 32) - d;
            i64 dy = (i64)(((u64)r.v[1] * span) >> 32) - d;
            i64 sy = y + dy, sx = x + dx;
            s = sy * w + sx;
            bool visited_before = s > p && sy >= d + 1 && sy <= h - d && sx >= d + 1 &&
                                  sx <= w - d && sy < h && sx < w;
            if (visited_before) {
                link[p] = (int)s;
                continue;
            }
        }
        link[p] = (int)(-(s + 1));
    }
}

// One pointer-jumping step: a.p[0] links in, a.p[1] links out (a.i[0] pixels).
RS_KERNEL rs_glass_jump(RsArgs a) {
    const int* in = RS_BUF(const int, 0);
    int* out = RS_BUF(int, 1);
    RS_FOR(p, a.i[0]) {
        int l = in[p];
        out[p] = l >= 0 ? in[l] : l;
    }
}

// The pass's result: a.p[0] the pre-pass bytes, a.p[1] the bytes after it, a.p[2] the resolved
// links (all < 0), a.i[0] pixels.
RS_KERNEL rs_glass_gather(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const int* link = RS_BUF(const int, 2);
    RS_FOR(e, 3 * a.i[0]) {
        i64 p = e / 3, c = e - p * 3;
        i64 s = -(i64)link[p] - 1;
        dst[e] = src[3 * s + c];
    }
}
