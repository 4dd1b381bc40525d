// Weather corruptions on the GPU (docs/imagenet-c.md#frost, docs/imagenet-c.md#fog,
// docs/imagenet-c.md#snow; the CPU kernels are `frost_with` / `frost_at` and `fog` /
// `plasma_window` in src/scenario/corruption/weather.rs, the bicubic rescale `bicubic_rows` in
// src/kernels/bicubic.rs, `snow_corruption` / `snow_with` in src/scenario/corruption/snow.rs). Each
// corruption is split into its draws (Philox keyed by the variant's RngKey: the frost texture and
// crop, the fog plasma map's noise, the snow field and angle) and a deterministic part (rescale,
// zoom, streak, blend) that computes what the CPU computes, in double where the CPU does
// (docs/gpu.md#gpu-resident-scenarios).

// ---- frost ---------------------------------------------------------------------------------------

// OpenCV's bicubic weights (a = -0.75) for fractional offset t in [0, 1): taps -1, 0, 1, 2
// (`cubic_weights` of bicubic.rs, same operations in the same order).
RS_HD void rs_cubic_weights(double t, double w[4]) {
    const double A = -0.75;
    double w0 = ((A * (t + 1.0) - 5.0 * A) * (t + 1.0) + 8.0 * A) * (t + 1.0) - 4.0 * A;
    double w1 = ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0;
    double w2 = ((A + 2.0) * (1.0 - t) - (A + 3.0)) * (1.0 - t) * (1.0 - t) + 1.0;
    w[0] = w0;
    w[1] = w1;
    w[2] = w2;
    w[3] = 1.0 - w0 - w1 - w2;
}

// Source taps of output index o when `src` samples are resized to `dst` (`cubic_taps`: half-pixel
// centres, replicated edges).
RS_HD void rs_cubic_taps(i64 o, i64 src, i64 dst, int idx[4], double w[4]) {
    double f = ((double)o + 0.5) * (double)src / (double)dst - 0.5;
    double s = floor(f);
    rs_cubic_weights(f - s, w);
    for (int k = 0; k < 4; ++k) idx[k] = (int)rs_clampi((int)s - 1 + k, 0, (int)src - 1);
}

// `np.uint8(np.clip(v, 0, 255))` in double (`lanes::trunc_u8`). NaN gives 0.
RS_HD u8 rs_trunc_u8_f64(double v) {
    v = v > 0.0 ? v : 0.0;
    v = v < 255.0 ? v : 255.0;
    return (u8)(int)v;
}

// The frost draws: a.p[0] the texture layout (per texture: byte offset, width, height, rescaled
// width, rescaled height; i64), a.p[1] the choice (out: texture, left, top; i64); a.i[0] the
// RngKey, a.i[1] the frame width, a.i[2] its height, a.i[3] the number of textures. One element.
// Texture uniform over the list, crop offsets uniform over [0, rescaled - frame) as the CPU's.
RS_KERNEL rs_frost_choice(RsArgs a) {
    const i64* layout = RS_BUF(const i64, 0);
    i64* choice = RS_BUF(i64, 1);
    RS_FOR(e, 1) {
        RsU32x4 r = rs_philox((u64)a.i[0], (u64)e, 0x66726f73u /* "fros" */, 0u);
        i64 t = (i64)rs_below(r.v[0], (u64)a.i[3]);
        const i64* l = layout + 5 * t;
        i64 spare_w = l[3] - a.i[1], spare_h = l[4] - a.i[2];
        choice[0] = t;
        choice[1] = (i64)rs_below(r.v[2], (u64)(spare_w > 1 ? spare_w : 1));
        choice[2] = (i64)rs_below(r.v[1], (u64)(spare_h > 1 ? spare_h : 1));
    }
}

// frost's blend (`frost_at`): a.p[0] source, a.p[1] output (frame bytes), a.p[2] the textures
// (RGB bytes, concatenated), a.p[3] the layout and a.p[4] the choice of rs_frost_choice; a.i[0]
// frame width, a.i[1] height; a.d[0] image weight, a.d[1] frost weight. One element per byte: the
// rescaled texture's value there (16 taps in the CPU's order, f64, rounded and clamped), then
// trunc(a·x + f·t).
RS_KERNEL rs_frost_blend(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const u8* textures = RS_BUF(const u8, 2);
    const i64* layout = RS_BUF(const i64, 3);
    const i64* choice = RS_BUF(const i64, 4);
    i64 w = a.i[0], h = a.i[1];
    RS_FOR(e, w * h * 3) {
        const i64* l = layout + 5 * choice[0];
        const u8* tex = textures + l[0];
        i64 tw = l[1], th = l[2];
        i64 c = e % 3, p = e / 3;
        i64 x = p % w, y = p / w;
        int xi[4], yi[4];
        double xw[4], yw[4];
        rs_cubic_taps(choice[1] + x, tw, l[3], xi, xw);
        rs_cubic_taps(choice[2] + y, th, l[4], yi, yw);
        double v = 0.0;
        for (int ky = 0; ky < 4; ++ky) {
            const u8* row = tex + (i64)yi[ky] * tw * 3 + c;
            for (int kx = 0; kx < 4; ++kx) v += (yw[ky] * xw[kx]) * (double)row[3 * xi[kx]];
        }
        v = round(v);
        v = v < 0.0 ? 0.0 : (v > 255.0 ? 255.0 : v);
        dst[e] = rs_trunc_u8_f64(a.d[0] * (double)src[e] + a.d[1] * v);
    }
}

// ---- fog -----------------------------------------------------------------------------------------
//
// The plasma fractal (docs/imagenet-c.md#h4-plasma-fractal) is built in an n×n map of doubles
// (row-major), level by level as `plasma_window` does, with step s = n, n/2, ..., 2 and g = n / s
// corner points per side: one launch makes the g×g centres from the corners, the next the 2·g×g
// edge midpoints from corners and centres (neither reads what its own launch writes). Indices wrap
// (a torus). The noise of map point k is wibble·(wibble·(2u − 1)), u from Philox element k: every
// point draws once, at the level that makes it.

RS_HD double rs_plasma_noise(u64 key, i64 k, double wibble) {
    RsU32x4 r = rs_philox(key, (u64)k, 0x706c6173u /* "plas" */, 0u);
    return wibble * (wibble * (2.0 * rs_unit_f64(r.v[0], r.v[1]) - 1.0));
}

// Map point 0 (the first corner) is 0: a.p[0] the map. One element.
RS_KERNEL rs_plasma_init(RsArgs a) {
    double* map = RS_BUF(double, 0);
    RS_FOR(e, 1) { map[e] = 0.0; }
}

// Centres of one level: a.p[0] the map; a.i[0] n, a.i[1] step s, a.i[2] the RngKey; a.d[0]
// wibble. g·g elements: C = ((Q[i,j] + Q[i+1,j]) + (Q[i,j+1] + Q[i+1,j+1]))/4 + noise, numpy's
// association.
RS_KERNEL rs_plasma_squares(RsArgs a) {
    double* map = RS_BUF(double, 0);
    i64 n = a.i[0], s = a.i[1], g = n / s, h = s / 2;
    RS_FOR(e, g * g) {
        i64 i = e / g, j = e % g;
        i64 y0 = i * s, y1 = (y0 + s) % n, x0 = j * s, x1 = (x0 + s) % n;
        double q = (map[y0 * n + x0] + map[y1 * n + x0]) + (map[y0 * n + x1] + map[y1 * n + x1]);
        i64 k = (y0 + h) * n + x0 + h;
        map[k] = q / 4.0 + rs_plasma_noise((u64)a.i[2], k, a.d[0]);
    }
}

// Edge midpoints of one level (after its centres), same arguments. 2·g·g elements: the first g·g
// horizontal edges DH[i,j] = ((C[i,j] + C[i-1,j]) + (Q[i,j] + Q[i,j+1]))/4 + noise at (i·s,
// j·s + s/2), then the vertical ones DV[i,j] = ((C[i,j] + C[i,j-1]) + (Q[i,j] + Q[i+1,j]))/4 + noise
// at (i·s + s/2, j·s).
RS_KERNEL rs_plasma_diamonds(RsArgs a) {
    double* map = RS_BUF(double, 0);
    i64 n = a.i[0], s = a.i[1], g = n / s, h = s / 2;
    RS_FOR(e, 2 * g * g) {
        i64 f = e % (g * g), i = f / g, j = f % g;
        i64 y0 = i * s, x0 = j * s, cy = y0 + h, cx = x0 + h;
        double v;
        i64 k;
        if (e < g * g) {
            i64 cyp = (cy - s + n) % n, x1 = (x0 + s) % n;
            v = ((map[cy * n + cx] + map[cyp * n + cx]) + (map[y0 * n + x0] + map[y0 * n + x1]));
            k = y0 * n + cx;
        } else {
            i64 cxp = (cx - s + n) % n, y1 = (y0 + s) % n;
            v = ((map[cy * n + cx] + map[cy * n + cxp]) + (map[y0 * n + x0] + map[y1 * n + x0]));
            k = cy * n + x0;
        }
        map[k] = v / 4.0 + rs_plasma_noise((u64)a.i[2], k, a.d[0]);
    }
}

// Minimum and maximum of a.i[0] doubles at a.p[0] into a.p[1]: the complement of the minimum's
// order key and the maximum's (rs_order_key_f64), both as maxima so that the recipe starts them
// from zero. A reduction: at most REDUCE_THREADS threads.
RS_KERNEL rs_min_max_f64(RsArgs a) {
    const double* v = RS_BUF(const double, 0);
    u64* out = RS_BUF(u64, 1);
    u64 lo = 0ull, hi = 0ull;
    RS_FOR(e, a.i[0]) {
        u64 k = rs_order_key_f64(v[e]);
        lo = ~k > lo ? ~k : lo;
        hi = k > hi ? k : hi;
    }
    rs_atomic_max_u64(&out[0], lo);
    rs_atomic_max_u64(&out[1], hi);
}

// The largest of a.i[0] bytes at a.p[0] into a.p[1] (one u64, zeroed by the recipe). A reduction.
RS_KERNEL rs_max_u8(RsArgs a) {
    const u8* v = RS_BUF(const u8, 0);
    u64* out = RS_BUF(u64, 1);
    u64 m = 0;
    RS_FOR(e, a.i[0]) { m = v[e] > m ? v[e] : m; }
    if (m) rs_atomic_max_u64(out, m);
}

// fog's blend (`FogBlend`): a.p[0] source, a.p[1] output (frame bytes), a.p[2] the n×n map, a.p[3]
// its minimum and maximum (rs_min_max_f64), a.p[4] the frame's largest byte; a.i[0] frame width,
// a.i[1] height, a.i[2] n; a.d[0] the strength c0. With P = (map − min)/range (0 for a flat map)
// and m the largest byte /255: floor8((x/255 + c0·P)·m/(m + c0)), in double.
RS_KERNEL rs_fog_blend(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const double* map = RS_BUF(const double, 2);
    const u64* mm = RS_BUF(const u64, 3);
    const u64* top = RS_BUF(const u64, 4);
    i64 w = a.i[0], h = a.i[1], n = a.i[2];
    double c0 = a.d[0];
    RS_FOR(e, w * h * 3) {
        double lo = rs_order_key_to_f64(~mm[0]), range = rs_order_key_to_f64(mm[1]) - lo;
        double m = (double)top[0] / 255.0;
        double scale = m / (m + c0);
        i64 p = e / 3, x = p % w, y = p / w;
        double pv = range > 0.0 ? (map[y * n + x] - lo) / range : 0.0;
        double v = ((double)src[e] / 255.0 + c0 * pv) * scale;
        v = v > 0.0 ? v : 0.0;
        v = v < 1.0 ? v : 1.0;
        dst[e] = (u8)(int)(v * 255.0);
    }
}

// ---- snow ----------------------------------------------------------------------------------------
//
// (docs/imagenet-c.md#snow; CPU: `snow_corruption` / `snow_with` in src/scenario/corruption/snow.rs,
// `motion_kernel`, `zoom_axis`, `clipped_zoom_axis` and `gray` in src/kernels/filter.rs.) Draws: the
// field's central crop (the only part the zoom reads) and the motion angle. Then four launches:
// the motion taps, the zoomed and thresholded layer, the streaked layer as bytes, the blend.

// The crop of the snow field: a.p[0] out (a.i[0] doubles); a.i[1] the RngKey; a.d[0] mean, a.d[1]
// standard deviation. Element group g (four values) takes one Philox block: two Box-Muller pairs.
RS_KERNEL rs_snow_field(RsArgs a) {
    double* out = RS_BUF(double, 0);
    i64 n = a.i[0];
    RS_FOR(g, (n + 3) / 4) {
        RsU32x4 r = rs_philox((u64)a.i[1], (u64)g, 0x736e6f77u /* "snow" */, 0u);
        float z[4];
        rs_box_muller(r.v[0], r.v[1], &z[0], &z[1]);
        rs_box_muller(r.v[2], r.v[3], &z[2], &z[3]);
        for (int k = 0; k < 4; ++k) {
            i64 e = g * 4 + k;
            if (e < n) out[e] = a.d[0] + a.d[1] * (double)z[k];
        }
    }
}

// The motion angle in degrees, U[-135, -45): a.p[0] out (one double); a.i[0] the RngKey. One element.
RS_KERNEL rs_snow_angle(RsArgs a) {
    double* out = RS_BUF(double, 0);
    RS_FOR(e, 1) {
        RsU32x4 r = rs_philox((u64)a.i[0], (u64)e, 0x736e6f77u, 1u);
        out[0] = -135.0 + 90.0 * rs_unit_f64(r.v[0], r.v[1]);
    }
}

// The motion-blur taps (`motion_kernel`, H5): a.p[0] the angle (one double), a.p[1] out: the tap
// count, then (weight, dx, dy) per tap, all doubles, a.p[2] the 2r + 1 normalised Gaussian weights
// (computed by the host as the CPU computes them); a.i[0] radius r, a.i[1] layer width, a.i[2]
// layer height. One element. The taps stop at the first that reaches the layer's size.
RS_KERNEL rs_snow_taps(RsArgs a) {
    const double* angle = RS_BUF(const double, 0);
    double* out = RS_BUF(double, 1);
    const double* weights = RS_BUF(const double, 2);
    RS_FOR(e, 1) {
        i64 w = 2 * a.i[0] + 1, zw = a.i[1], zh = a.i[2];
        double t = angle[e] * (3.14159265358979323846 / 180.0);
        double p0 = (double)w * sin(t), p1 = (double)w * cos(t);
        double hyp = hypot(p0, p1);
        i64 n = 0;
        for (i64 i = 0; i < w; ++i) {
            i64 dy = (i64)ceil(((double)i * p0) / hyp - 0.5);
            i64 dx = (i64)ceil(((double)i * p1) / hyp - 0.5);
            if ((dy < 0 ? -dy : dy) >= zh || (dx < 0 ? -dx : dx) >= zw) break;
            out[1 + 3 * n] = weights[i];
            out[2 + 3 * n] = (double)dx;
            out[3 + 3 * n] = (double)dy;
            ++n;
        }
        out[0] = (double)n;
    }
}

// One axis of scipy's align-corners zoom (`zoom_axis`): output o of n_out from n_in samples.
RS_HD void rs_zoom_axis(i64 o, i64 n_in, i64 n_out, i64* lo, i64* hi, double* t) {
    double scale = n_out > 1 ? ((double)n_in - 1.0) / ((double)n_out - 1.0) : 1.0;
    double c = (double)o * scale;
    c = c < (double)n_in - 1.0 ? c : (double)n_in - 1.0;
    c = c > 0.0 ? c : 0.0;
    i64 l = (i64)floor(c);
    l = l < n_in - 1 ? l : n_in - 1;
    *lo = l;
    *hi = l + 1 < n_in - 1 ? l + 1 : n_in - 1;
    *t = c - (double)l;
}

// The zoomed, thresholded layer: a.p[0] the crop (a.i[0] × a.i[1] doubles), a.p[1] out (a.i[2] ×
// a.i[3] doubles); a.d[0] the threshold. Bilinear in f64 as the CPU's `Layer::rows`; below the
// threshold 0, else clipped to [0, 1].
RS_KERNEL rs_snow_layer(RsArgs a) {
    const double* crop = RS_BUF(const double, 0);
    double* out = RS_BUF(double, 1);
    i64 cw = a.i[0], ch = a.i[1], zw = a.i[2], zh = a.i[3];
    RS_FOR(e, zw * zh) {
        i64 x = e % zw, y = e / zw, x0, x1, y0, y1;
        double tx, ty;
        rs_zoom_axis(x, cw, zw, &x0, &x1, &tx);
        rs_zoom_axis(y, ch, zh, &y0, &y1, &ty);
        double top = crop[y0 * cw + x0] * (1.0 - tx) + crop[y0 * cw + x1] * tx;
        double bot = crop[y1 * cw + x0] * (1.0 - tx) + crop[y1 * cw + x1] * tx;
        double v = top * (1.0 - ty) + bot * ty;
        double c = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
        out[e] = v < a.d[0] ? 0.0 : c;
    }
}

// The streaked layer's top-left a.i[0] × a.i[1] as bytes round_half_even(S·255): a.p[0] the layer
// (a.i[2] × a.i[3] doubles), a.p[1] the taps (rs_snow_taps), a.p[2] out. The taps are added in order
// from 0 (f64), reading the layer with replicated edges.
RS_KERNEL rs_snow_streak(RsArgs a) {
    const double* layer = RS_BUF(const double, 0);
    const double* taps = RS_BUF(const double, 1);
    u8* out = RS_BUF(u8, 2);
    i64 w = a.i[0], h = a.i[1], zw = a.i[2], zh = a.i[3];
    RS_FOR(e, w * h) {
        i64 x = e % w, y = e / w, n = (i64)taps[0];
        double acc = 0.0;
        for (i64 t = 0; t < n; ++t) {
            i64 yy = y + (i64)taps[3 + 3 * t], xx = x + (i64)taps[2 + 3 * t];
            yy = yy < 0 ? 0 : (yy > zh - 1 ? zh - 1 : yy);
            xx = xx < 0 ? 0 : (xx > zw - 1 ? zw - 1 : xx);
            acc += taps[1 + 3 * t] * layer[yy * zw + xx];
        }
        out[e] = rs_trunc_u8_f64(rint(acc * 255.0));
    }
}

// snow's blend (`blend_row`): a.p[0] source, a.p[1] output (a.i[0] × a.i[1] RGB), a.p[2] the
// streaked layer bytes; a.f[0] b and a.f[1] 1 − b (float32). One element per pixel:
// floor8(b·x + (1 − b)·max(x, gray(x)·1.5 + 0.5) + S + rot180(S)), x in float32, S in f64.
RS_KERNEL rs_snow_blend(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const u8* q = RS_BUF(const u8, 2);
    i64 w = a.i[0], h = a.i[1];
    float b = a.f[0], nb = a.f[1];
    RS_FOR(p, w * h) {
        i64 x = p % w, y = p / w;
        double s = (double)q[p] / 255.0 + (double)q[(h - 1 - y) * w + (w - 1 - x)] / 255.0;
        float r = (float)src[3 * p] / 255.0f, g = (float)src[3 * p + 1] / 255.0f;
        float bl = (float)src[3 * p + 2] / 255.0f;
        float bright = (0.299f * r + 0.587f * g + 0.114f * bl) * 1.5f + 0.5f;
        float xs[3] = {r, g, bl};
        for (int c = 0; c < 3; ++c) {
            float v = xs[c];
            float m = v > bright ? v : bright;
            float xb = b * v + nb * m;
            double o = (double)xb + s;
            o = o > 0.0 ? o : 0.0;
            o = o < 1.0 ? o : 1.0;
            dst[3 * p + c] = (u8)(int)(o * 255.0);
        }
    }
}
