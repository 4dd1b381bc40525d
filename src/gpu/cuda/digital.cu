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
