// Digital corruptions on the GPU (docs/imagenet-c.md#the-19-corruptions; the CPU kernels are in
// src/scenario/corruption/digital.rs) and the per-channel building blocks they share.

// Per-channel sums of an RGB image: a.p[0] the bytes (a.i[0] pixels), a.p[1] three u64 totals
// (zeroed by the recipe). A reduction: launched with at most REDUCE_THREADS threads.
RS_KERNEL rs_channel_sums(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u64* sums = RS_BUF(u64, 1);
    u64 acc[3] = {0, 0, 0};
    RS_FOR(p, a.i[0]) {
        acc[0] += src[3 * p];
        acc[1] += src[3 * p + 1];
        acc[2] += src[3 * p + 2];
    }
    for (int c = 0; c < 3; ++c)
        if (acc[c]) rs_atomic_add_u64(&sums[c], acc[c]);
}

// Applies three 256-entry tables, one per channel: a.p[0] source, a.p[1] output (a.i[0] bytes),
// a.p[2] the 768 table bytes.
RS_KERNEL rs_apply_channel_luts(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const u8* lut = RS_BUF(const u8, 2);
    RS_FOR(e, a.i[0]) { dst[e] = lut[(e % 3) * 256 + src[e]]; }
}

// contrast: floor8((x - mu) * c + mu) per channel, mu the channel's mean on the unit scale. In
// double, like the CPU's table, so both give the same bytes.
RS_HD u8 rs_contrast_px(int v, double mean, double c) {
    double x = ((double)v / 255.0 - mean) * c + mean;
    x = x > 0.0 ? x : 0.0;
    x = x < 1.0 ? x : 1.0;
    return (u8)(int)(x * 255.0);
}

// The contrast tables: a.p[0] the three channel sums, a.p[1] 768 table bytes (out); a.i[0]
// pixels; a.d[0] the factor c.
RS_KERNEL rs_contrast_luts(RsArgs a) {
    const u64* sums = RS_BUF(const u64, 0);
    u8* lut = RS_BUF(u8, 1);
    double n = a.i[0] > 0 ? (double)a.i[0] : 1.0;
    RS_FOR(k, 768) {
        int c = (int)(k / 256);
        double mean = (double)sums[c] / n / 255.0;
        lut[k] = rs_contrast_px((int)(k % 256), mean, a.d[0]);
    }
}

// ---- brightness, saturate: scikit-image HSV round trip (src/kernels/hsv.rs) ---------------------
//
// The CPU's float64 chain operation for operation (rgb_to_hsv, the edit, hsv_to_rgb, floor8): with
// contraction off both builds round every step alike, so the bytes are the CPU's (whose fast path
// is checked bit-identical to this chain for all 2^24 colours).

RS_HD double rs_clampd(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

RS_HD u8 rs_floor8_unit(double v) { return (u8)(int)(rs_clampd(v, 0.0, 1.0) * 255.0); }

// rgb2hsv: v = max, s = delta / v, the hue by three successive masks (blue overrides green
// overrides red), h = (h / 6) mod 1 (numpy's floored modulo); grey gives (0, 0, v).
RS_HD void rs_rgb_to_hsv(double r, double g, double b, double* h, double* s, double* v) {
    double mx = r > g ? r : g;
    mx = mx > b ? mx : b;
    double mn = r < g ? r : g;
    mn = mn < b ? mn : b;
    double delta = mx - mn;
    *v = mx;
    if (delta == 0.0) {
        *h = 0.0;
        *s = 0.0;
        return;
    }
    *s = delta / mx;
    double hh = 0.0;
    if (r == mx) hh = (g - b) / delta;
    if (g == mx) hh = 2.0 + (b - r) / delta;
    if (b == mx) hh = 4.0 + (r - g) / delta;
    double m = fmod(hh / 6.0, 1.0);
    *h = m < 0.0 ? m + 1.0 : (m == 0.0 ? 0.0 : m);
}

// hsv2rgb: sector floor(6h) (saturated to a byte, modulo 6) picks among v, p, q, t.
RS_HD void rs_hsv_to_rgb(double h, double s, double v, double* rgb) {
    double hi = floor(h * 6.0);
    double f = h * 6.0 - hi;
    double p = v * (1.0 - s);
    double q = v * (1.0 - f * s);
    double t = v * (1.0 - (1.0 - f) * s);
    int sector = hi <= 0.0 ? 0 : (hi >= 255.0 ? 255 : (int)hi);
    switch (sector % 6) {
        case 0: rgb[0] = v; rgb[1] = t; rgb[2] = p; break;
        case 1: rgb[0] = q; rgb[1] = v; rgb[2] = p; break;
        case 2: rgb[0] = p; rgb[1] = v; rgb[2] = t; break;
        case 3: rgb[0] = p; rgb[1] = q; rgb[2] = v; break;
        case 4: rgb[0] = t; rgb[1] = p; rgb[2] = v; break;
        default: rgb[0] = v; rgb[1] = p; rgb[2] = q; break;
    }
}

// a.p[0] source, a.p[1] output (a.i[0] pixels, RGB); a.i[1] the edit: 0 saturate
// (S = clip(S * a.d[0] + a.d[1], 0, 1)), 1 brightness (V = clip(V + a.d[0], 0, 1)).
RS_KERNEL rs_hsv_edit(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    bool brightness = a.i[1] == 1;
    RS_FOR(p, a.i[0]) {
        double h, s, v, rgb[3];
        rs_rgb_to_hsv((double)src[3 * p] / 255.0, (double)src[3 * p + 1] / 255.0,
                      (double)src[3 * p + 2] / 255.0, &h, &s, &v);
        if (brightness)
            v = rs_clampd(v + a.d[0], 0.0, 1.0);
        else
            s = rs_clampd(s * a.d[0] + a.d[1], 0.0, 1.0);
        rs_hsv_to_rgb(h, s, v, rgb);
        for (int c = 0; c < 3; ++c) dst[3 * p + c] = rs_floor8_unit(rgb[c]);
    }
}

// ---- pixelate: Pillow resize BOX down, BOX up (src/kernels/resample.rs) -------------------------
//
// One axis of Pillow's separable convolution per launch, with the CPU's fixed-point coefficient
// tables (22 fractional bits, sums from 1 << 21, shift, clip to a byte after each pass, as Pillow).
// A table is i32: a.p[2][0] = taps, then per output sample its first source sample and `taps`
// weights. Equal bytes to the CPU's resampler.

RS_HD u8 rs_clip8_fixed(int v) { return (u8)rs_clampi(v >> 22, 0, 255); }

// Horizontal pass: a.p[0] source (a.i[2] columns), a.p[1] output (a.i[0] columns), a.i[1] rows.
RS_KERNEL rs_pixelate_h(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const int* t = RS_BUF(const int, 2);
    i64 dw = a.i[0], rows = a.i[1], sw = a.i[2];
    i64 taps = t[0];
    RS_FOR(e, dw * rows * 3) {
        i64 px = e / 3, x = px % dw, y = px / dw;
        const int* w = t + 1 + x * (taps + 1);
        const u8* s = src + (y * sw + w[0]) * 3 + e % 3;
        int acc = 1 << 21;
        for (i64 k = 0; k < taps; ++k) acc += w[1 + k] * (int)s[3 * k];
        dst[e] = rs_clip8_fixed(acc);
    }
}

// Vertical pass: a.p[0] source, a.p[1] output (a.i[0] rows), both a.i[1] columns.
RS_KERNEL rs_pixelate_v(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const int* t = RS_BUF(const int, 2);
    i64 dh = a.i[0], row = a.i[1] * 3;
    i64 taps = t[0];
    RS_FOR(e, dh * row) {
        i64 y = e / row, col = e % row;
        const int* w = t + 1 + y * (taps + 1);
        const u8* s = src + (i64)w[0] * row + col;
        int acc = 1 << 21;
        for (i64 k = 0; k < taps; ++k) acc += w[1 + k] * (int)s[k * row];
        dst[e] = rs_clip8_fixed(acc);
    }
}

// A plain copy of a.i[0] bytes from a.p[0] to a.p[1] (a resize to the same size).
RS_KERNEL rs_copy_bytes(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    RS_FOR(e, a.i[0]) { dst[e] = src[e]; }
}
