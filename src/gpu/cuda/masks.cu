// Mask-based scenarios on the GPU (docs/gpu.md#mask-based-scenarios): Hard ImageNet's ablations
// (CPU: src/scenario/ablation.rs, docs/hard-imagenet.md#ablations) and RFS region noise (CPU:
// src/scenario/region_noise.rs, docs/hard-imagenet.md#region-noise). The mask is the one the CPU
// scenario sees (`ScenarioInput::mask_for(MaskResize::BilinearNonZero)`): width x height bytes,
// non-zero = object.

// ablation/gray: object pixels (mask != 0) set to a.i[1] on all channels, the others copied.
// a.p[0] source, a.p[1] output (RGB), a.p[2] the mask; a.i[0] pixels.
RS_KERNEL rs_mask_gray(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const u8* mask = RS_BUF(const u8, 2);
    u8 gray = (u8)a.i[1];
    RS_FOR(e, a.i[0] * 3) { dst[e] = mask[e / 3] ? gray : src[e]; }
}

// The source with box [a.i[2], a.i[4]) x [a.i[3], a.i[5]) (clipped to the image by the recipe,
// possibly empty) set to a.i[6] on all channels: ablation/gray_bbox in one pass, and the gray
// fill of a tile box without a tile. a.p[0] source, a.p[1] output (may be the same buffer: each
// element reads only itself); a.i[0] width, a.i[1] height.
RS_KERNEL rs_mask_fill_box(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    i64 w = a.i[0];
    i64 x0 = a.i[2], y0 = a.i[3], x1 = a.i[4], y1 = a.i[5];
    u8 v = (u8)a.i[6];
    RS_FOR(e, w * a.i[1] * 3) {
        i64 p = e / 3, x = p % w, y = p / w;
        bool in = x >= x0 && x < x1 && y >= y0 && y < y1;
        dst[e] = in ? v : src[e];
    }
}

// ablation/tile, one box: fills box b = [a.i[1], a.i[3]) x [a.i[2], a.i[4]) of the image a.p[0]
// (in place) from the tile next to it, as `ablation::fill_from_tile`. a.i[5] the side (0 right,
// 1 left, 2 below, 3 above); the tile spans the box's rows and columns a.i[6] .. a.i[6] + a.i[7]
// (right, left) or its columns and rows a.i[6] .. a.i[6] + a.i[7] (below, above). Right: box column
// c takes tile column (phase + c) mod tw with phase = (tw - bw mod tw) mod tw; left: c mod tw;
// below and above likewise with rows. The tile lies outside the box, so no element reads what
// another writes. a.i[0] the image width; the loop runs over the box's elements.
RS_KERNEL rs_mask_tile_box(RsArgs a) {
    u8* img = RS_BUF(u8, 0);
    i64 w = a.i[0];
    i64 bx0 = a.i[1], by0 = a.i[2], bx1 = a.i[3], by1 = a.i[4];
    i64 side = a.i[5], t0 = a.i[6], tn = a.i[7];
    i64 bw = bx1 - bx0, bh = by1 - by0;
    RS_FOR(e, bw * bh * 3) {
        i64 ch = e % 3, q = e / 3;
        i64 c = q % bw, r = q / bw;
        i64 sx, sy;
        if (side == 0 || side == 1) {
            i64 phase = side == 0 ? (tn - bw % tn) % tn : 0;
            sx = t0 + (c + phase) % tn;
            sy = by0 + r;
        } else {
            i64 phase = side == 2 ? (tn - bh % tn) % tn : 0;
            sx = bx0 + c;
            sy = t0 + (r + phase) % tn;
        }
        img[((by0 + r) * w + bx0 + c) * 3 + ch] = img[(sy * w + sx) * 3 + ch];
    }
}

// ---- RFS region noise -------------------------------------------------------------------------
//
// Element e (pixel e / 3, channel e % 3, row-major over the whole image) takes the 16-bit index
// (word (e % 8) / 2, half e % 2) of Philox block (key, e / 8, 0, 0) into the CPU's normal table
// (src/scenario/region_noise.rs `normal_table`, uploaded unchanged). Every element is drawn
// whether or not it is in the region, so the fg and bg variants of one (norm, level, trial) share
// their noise, as on the CPU. One thread per group of 8 elements.

RS_HD u32 rs_rfs_index(RsU32x4 r, int k) { return (r.v[k >> 1] >> (16 * (k & 1))) & 0xffffu; }

// Whether pixel p is in the region: object (mask != 0) when fg != 0, background otherwise.
RS_HD bool rs_rfs_inside(const u8* mask, i64 p, i64 fg) { return (mask[p] != 0) == (fg != 0); }

// The l2 norm's sum: a.p[0] the mask, a.p[1] the squares table (u32, 2^-24 fixed point), a.p[2]
// one u64 total (zeroed by the recipe); a.i[0] elements (pixels x 3), a.i[1] the RngKey, a.i[2]
// fg. An exact integer sum, like the CPU's. A reduction: at most REDUCE_THREADS threads.
RS_KERNEL rs_rfs_sum_squares(RsArgs a) {
    const u8* mask = RS_BUF(const u8, 0);
    const u32* squares = RS_BUF(const u32, 1);
    u64* total = RS_BUF(u64, 2);
    i64 n = a.i[0];
    u64 key = (u64)a.i[1];
    i64 fg = a.i[2];
    u64 acc = 0;
    RS_FOR(g, (n + 7) / 8) {
        RsU32x4 r = rs_philox(key, (u64)g, 0u, 0u);
        for (int k = 0; k < 8; ++k) {
            i64 e = g * 8 + k;
            if (e < n && rs_rfs_inside(mask, e / 3, fg)) acc += squares[rs_rfs_index(r, k)];
        }
    }
    if (acc) rs_atomic_add_u64(total, acc);
}

// out = floor(clamp(v + amp * q + 1/2, 0, 255)) in f32, as the CPU's saturating `as u8`.
RS_HD u8 rs_rfs_px(u8 v, float amp, float q) {
    float t = (float)v + amp * q + 0.5f;
    t = t > 0.0f ? t : 0.0f;
    t = t < 255.0f ? t : 255.0f;
    return (u8)(int)t;
}

// Adds the noise: a.p[0] source, a.p[1] output, a.p[2] the mask, a.p[3] the normal table (f32),
// a.p[4] the l2 total (read when a.i[3] != 0); a.i[0] elements, a.i[1] the RngKey, a.i[2] fg,
// a.i[3] l2. linf: amplitude a.f[0] (255 sigma, rounded to f32 by the recipe as the CPU does).
// l2: amplitude 255 * a.d[0] / sqrt(total / 2^24) in f64 (a.d[0] the budget scaled to the image,
// computed by the recipe as the CPU does), then f32; a zero total copies the source (the CPU
// returns the image unchanged).
RS_KERNEL rs_rfs_noise(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const u8* mask = RS_BUF(const u8, 2);
    const float* table = RS_BUF(const float, 3);
    const u64* total = RS_BUF(const u64, 4);
    i64 n = a.i[0];
    u64 key = (u64)a.i[1];
    i64 fg = a.i[2];
    float amp = a.f[0];
    bool noise = true;
    if (a.i[3]) {
        u64 sum = *total;
        noise = sum != 0;
        double norm = sqrt((double)sum / 16777216.0);
        amp = noise ? (float)(255.0 * a.d[0] / norm) : 0.0f;
    }
    RS_FOR(g, (n + 7) / 8) {
        RsU32x4 r = rs_philox(key, (u64)g, 0u, 0u);
        for (int k = 0; k < 8; ++k) {
            i64 e = g * 8 + k;
            if (e >= n) break;
            u8 v = src[e];
            dst[e] = noise && rs_rfs_inside(mask, e / 3, fg)
                         ? rs_rfs_px(v, amp, table[rs_rfs_index(r, k)])
                         : v;
        }
    }
}
