// Mask-based background scenarios: the IN-9 and XIMAGENET-12 variations that need only the frame,
// its foreground mask and its object box (CPU: scenario/background/{in9,ximagenet}.rs; docs:
// docs/gpu.md#mask-based-scenarios, docs/in9.md#how-the-variations-are-built,
// docs/ximagenet.md#scenarios). One element per byte of the output (coalesced); every element reads
// the source and the mask only, never the output.

// IN-9 only_fg (a.i[1] == 0) and no_fg (a.i[1] == 1): the byte times the mask weight m / 255 (or
// (255 − m) / 255), rounded: `(p·m + 127) / 255`, exact as in9::only_fg / no_fg (m = 255 keeps the
// byte, m = 0 gives 0, as the CPU's short ways).
// p[0] source image, p[1] mask (one byte per pixel), p[2] output; i[0] bytes (pixels × 3).
RS_KERNEL rs_bg_weight(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    const u8* mask = RS_BUF(const u8, 1);
    u8* dst = RS_BUF(u8, 2);
    const u32 invert = (u32)a.i[1];
    RS_FOR(e, a.i[0]) {
        u32 m = mask[e / 3];
        if (invert) m = 255u - m;
        dst[e] = (u8)(((u32)src[e] * m + 127u) / 255u);
    }
}

// XIMAGENET-12's background edits (object = mask > 0 kept): the background (mask == 0) set to the
// colour (a.i[2], a.i[3], a.i[4]) (segmented: black; transparent_on: the matte) when a.i[1] == 0,
// or to OpenCV's RGB→GRAY of the pixel in all three channels when a.i[1] == 1 (color_grey;
// opencv::gray's fixed-point weights and rounding).
// p[0] source, p[1] mask, p[2] output; i[0] bytes.
RS_KERNEL rs_bg_outside(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    const u8* mask = RS_BUF(const u8, 1);
    u8* dst = RS_BUF(u8, 2);
    const i64 mode = a.i[1];
    RS_FOR(e, a.i[0]) {
        const i64 px = e / 3;
        const int c = (int)(e - px * 3);
        u8 v = src[e];
        if (mask[px] == 0) {
            if (mode == 1) {
                const u8* p = src + px * 3;
                v = (u8)((9798u * p[0] + 19235u * p[1] + 3735u * p[2] + (1u << 14)) >> 15);
            } else {
                v = (u8)a.i[2 + c];
            }
        }
        dst[e] = v;
    }
}

// IN-9 only_bg_b (a.i[6] == 0) and only_bg_t (a.i[6] == 1): inside the box [x0, x1) × [y0, y1)
// black, or the tile strip's pixel (sx0 + x mod tw, sy0 + y mod th) (in9::only_bg_t's tiling from
// the origin); the source elsewhere. An empty box copies the image.
// p[0] source, p[1] output; i[0] bytes, i[1] width; u32 pairs (low | high << 32): i[2] (x0, x1),
// i[3] (y0, y1), i[4] (sx0, tw), i[5] (sy0, th).
RS_KERNEL rs_bg_box(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const i64 w = a.i[1];
    const i64 x0 = a.i[2] & 0xffffffffll, x1 = a.i[2] >> 32;
    const i64 y0 = a.i[3] & 0xffffffffll, y1 = a.i[3] >> 32;
    const i64 sx0 = a.i[4] & 0xffffffffll, tw = a.i[4] >> 32;
    const i64 sy0 = a.i[5] & 0xffffffffll, th = a.i[5] >> 32;
    const i64 tile = a.i[6];
    RS_FOR(e, a.i[0]) {
        const i64 px = e / 3;
        const i64 c = e - px * 3;
        const i64 y = px / w, x = px - y * w;
        u8 v = src[e];
        if (x >= x0 && x < x1 && y >= y0 && y < y1) {
            v = tile ? src[((sy0 + y % th) * w + sx0 + x % tw) * 3 + c] : (u8)0;
        }
        dst[e] = v;
    }
}

// ---- XIMAGENET-12 coloured backgrounds (opencv::recolour, docs/ximagenet.md#coloured-backgrounds) --

// round(n / d), ties to even, of a float32 quotient below 2^23 (opencv.rs round_quotient: the 2^23
// addition); an infinite quotient (d = 0) only ever meets a zero factor.
RS_HD int rs_bg_round_quotient(float n, float d) {
    union {
        float f;
        u32 u;
    } c;
    c.f = n / d + 8388608.0f;
    return (int)(c.u - 0x4B000000u);
}

// The low byte of v + 2^23: v (in [0, 255]) rounded half to even.
RS_HD u8 rs_bg_magic_u8(float v) {
    union {
        float f;
        u32 u;
    } c;
    c.f = v + 8388608.0f;
    return (u8)c.u;
}

// OpenCV 8-bit HSV→RGB of (h, s, v) in float32 (opencv.rs hsv_lane): truncated (its SIMD loop) or
// rounded half to even (its scalar loop), saturated.
RS_HD void rs_bg_hsv_to_rgb(int h, int s, int v, int trunc, u8* out) {
    const float sf = (float)s * (1.0f / 255.0f);
    const float vf = (float)v * (1.0f / 255.0f);
    const float hh = (float)h * (6.0f / 180.0f);
    const float whole = truncf(hh);
    const float frac = hh - whole;
    const float sector = whole >= 6.0f ? whole - 6.0f : whole;
    const float t0 = vf;
    const float t1 = vf * (1.0f - sf);
    const float t2 = vf * fmaf(-sf, frac, 1.0f);
    const float t3 = vf * fmaf(-sf, 1.0f - frac, 1.0f);
    float rgb[3];
    rgb[0] = sector == 1.0f ? t2 : (sector == 2.0f || sector == 3.0f) ? t1 : sector == 4.0f ? t3 : t0;
    rgb[1] = sector == 0.0f ? t3 : sector == 3.0f ? t2 : sector >= 4.0f ? t1 : t0;
    rgb[2] = sector <= 1.0f ? t1 : sector == 2.0f ? t3 : sector == 5.0f ? t2 : t0;
    for (int c = 0; c < 3; ++c) {
        float x = rgb[c] * 255.0f;
        if (trunc) x = truncf(x);
        out[c] = rs_bg_magic_u8(rs_clamp(x, 0.0f, 255.0f));
    }
}

// Draws a variant's hue edit like Colour::draw, from Philox (counter 0, stream 0x42470001):
// colour 0 red (0..=29 or 150..=180, each range with probability 1/2), 1 green (30..=89), 2 blue
// (90..=149), 3 rainbow shift (0..=90).
RS_HD int rs_bg_hue_draw(u64 key, i64 colour) {
    const RsU32x4 r = rs_philox(key, 0, 0x42470001u, 0);
    switch (colour) {
        case 0: return (r.v[0] >> 31) ? 150 + (int)rs_below(r.v[1], 31) : (int)rs_below(r.v[1], 30);
        case 1: return 30 + (int)rs_below(r.v[1], 60);
        case 2: return 90 + (int)rs_below(r.v[1], 60);
        default: return (int)rs_below(r.v[1], 91);
    }
}

// The background (mask == 0) through OpenCV RGB→HSV (opencv.rs hsv_of_lane), the hue set
// (a.i[2] == 1) or shifted ((H + k) mod 256 mod 180), back to RGB, truncating in the columns
// [0, width − width mod 32) of each row (OpenCV's SIMD loop) and rounding in the rest; the object
// copied. The hue value is a.i[3], or drawn by rs_bg_hue_draw(a.i[4], a.i[5]) when a.i[3] < 0.
// One element per pixel. p[0] source, p[1] mask, p[2] output; i[0] pixels, i[1] width.
RS_KERNEL rs_bg_recolour(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    const u8* mask = RS_BUF(const u8, 1);
    u8* dst = RS_BUF(u8, 2);
    const i64 w = a.i[1];
    const i64 simd = w / 32 * 32;
    const int set = (int)a.i[2];
    const int value = a.i[3] >= 0 ? (int)a.i[3] : rs_bg_hue_draw((u64)a.i[4], a.i[5]);
    RS_FOR(px, a.i[0]) {
        const u8* p = src + px * 3;
        u8* o = dst + px * 3;
        if (mask[px] != 0) {
            o[0] = p[0];
            o[1] = p[1];
            o[2] = p[2];
            continue;
        }
        const int r = p[0], g = p[1], b = p[2];
        const int v = r > g ? (r > b ? r : b) : (g > b ? g : b);
        const int mn = r < g ? (r < b ? r : b) : (g < b ? g : b);
        const int diff = v - mn;
        const int sdiv = rs_bg_round_quotient(1044480.0f, (float)v);
        const int hdiv = rs_bg_round_quotient(737280.0f, (float)(6 * diff));
        const int s = (int)(((u32)diff * (u32)sdiv + (1u << 11)) >> 12);
        const int num = v == r ? g - b : v == g ? b - r + 2 * diff : r - g + 4 * diff;
        int h = (int)((u32)num * (u32)hdiv + (1u << 11)) >> 12;
        if (h < 0) h += 180;
        int nh;
        if (set) {
            nh = value;
        } else {
            nh = (h + value) & 255;
            if (nh >= 180) nh -= 180;
        }
        rs_bg_hsv_to_rgb(nh, s, v, (px % w) < simd, o);
    }
}
