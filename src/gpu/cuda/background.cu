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
