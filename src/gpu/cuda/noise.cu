// Noise corruptions on the GPU (docs/imagenet-c.md#the-19-corruptions; the CPU kernels are in
// src/scenario/corruption/noise.rs). Each element (pixel x channel) draws independently; the draws
// come from Philox keyed by the variant's RngKey, so they differ from the CPU path's xoshiro
// streams and match them in distribution (docs/gpu.md#gpu-resident-scenarios).

// gaussian_noise: floor8(x/255 + sigma * z), z standard normal.
RS_HD u8 rs_gaussian_noise_px(u8 v, float sigma, float z) {
    return rs_floor8((float)v * (1.0f / 255.0f) + sigma * z);
}

// a.p[0] source bytes, a.p[1] output bytes (both `a.i[0]` elements); a.i[1] the RngKey;
// a.f[0] sigma. Element group g (four bytes) takes one Philox block: two Box-Muller pairs.
RS_KERNEL rs_gaussian_noise(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    i64 n = a.i[0];
    u64 key = (u64)a.i[1];
    float sigma = a.f[0];
    RS_FOR(g, (n + 3) / 4) {
        float z[4];
        rs_normal4(key, g, z);
        for (int k = 0; k < 4; ++k) {
            i64 e = g * 4 + k;
            if (e < n) dst[e] = rs_gaussian_noise_px(src[e], sigma, z[k]);
        }
    }
}

// shot_noise: floor8(clip(Poisson(x*c)/c, 0, 1)) drawn from the CPU's own alias tables (ShotTable
// in src/scenario/corruption/noise.rs, uploaded unchanged): per input value v, `levels` buckets of
// u64 entries, keep threshold in bits 0..33 (out of 2^32), the bucket's byte in bits 40..48 and
// its alias's byte in bits 48..56. One 64-bit draw per element, used exactly as ShotTable::sample
// uses its draw: the high word picks the bucket, the low word keeps it or takes the alias. So the
// GPU samples the same discrete distribution as the CPU.
RS_HD u8 rs_shot_noise_px(const u64* table, u64 levels, u8 v, u64 bits) {
    u64 k = ((bits >> 32) * levels) >> 32;
    u64 e = table[(u64)v * levels + k];
    bool keep = (bits & 0xffffffffull) < (e & ((1ull << 33) - 1ull));
    return keep ? (u8)(e >> 40) : (u8)(e >> 48);
}

// a.p[0] source bytes, a.p[1] output bytes (both a.i[0] elements), a.p[2] the alias table
// (256 x a.i[2] entries); a.i[1] the RngKey. Element pair g takes one Philox block: two 64-bit
// draws.
RS_KERNEL rs_shot_noise(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const u64* table = RS_BUF(const u64, 2);
    i64 n = a.i[0];
    u64 key = (u64)a.i[1];
    u64 levels = (u64)a.i[2];
    RS_FOR(g, (n + 1) / 2) {
        RsU32x4 r = rs_philox(key, (u64)g, 0u, 0u);
        i64 e = g * 2;
        dst[e] = rs_shot_noise_px(table, levels, src[e], ((u64)r.v[0] << 32) | r.v[1]);
        if (e + 1 < n)
            dst[e + 1] = rs_shot_noise_px(table, levels, src[e + 1], ((u64)r.v[2] << 32) | r.v[3]);
    }
}

// impulse_noise (scikit-image s&p, salt_vs_pepper 0.5), as the CPU kernel uses its 64-bit draw:
// the element flips when the low word is below `threshold` (= round(amount * 2^32)), and a flipped
// element becomes 255 if bit 32 is set, else 0; an untouched one is floor8(v / 255) computed in
// double like the CPU's table (v, or v - 1 where v / 255 * 255 lands a hair below v).
RS_HD u8 rs_impulse_noise_px(u8 v, u64 threshold, u64 bits) {
    if ((bits & 0xffffffffull) < threshold) return (bits >> 32) & 1u ? (u8)255 : (u8)0;
    double x = (double)v / 255.0;
    x = x < 1.0 ? x : 1.0;
    return (u8)(int)(x * 255.0);
}

// a.p[0] source, a.p[1] output (a.i[0] elements); a.i[1] the RngKey, a.i[2] the flip threshold
// (0 ..= 2^32). Element pair g takes one Philox block: two 64-bit draws.
RS_KERNEL rs_impulse_noise(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    i64 n = a.i[0];
    u64 key = (u64)a.i[1];
    u64 threshold = (u64)a.i[2];
    RS_FOR(g, (n + 1) / 2) {
        RsU32x4 r = rs_philox(key, (u64)g, 0u, 0u);
        i64 e = g * 2;
        dst[e] = rs_impulse_noise_px(src[e], threshold, ((u64)r.v[0] << 32) | r.v[1]);
        if (e + 1 < n)
            dst[e + 1] = rs_impulse_noise_px(src[e + 1], threshold, ((u64)r.v[2] << 32) | r.v[3]);
    }
}

// speckle_noise: floor8(x + x * (sigma * z)), x = v / 255, z standard normal (black stays black,
// white is exactly 1).
RS_HD u8 rs_speckle_noise_px(u8 v, float sigma, float z) {
    float x = (float)v / 255.0f;
    return rs_floor8(x + x * (sigma * z));
}

// a.p[0] source, a.p[1] output (a.i[0] elements); a.i[1] the RngKey; a.f[0] sigma. Element group
// g (four bytes) takes one Philox block: two Box-Muller pairs.
RS_KERNEL rs_speckle_noise(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    i64 n = a.i[0];
    u64 key = (u64)a.i[1];
    float sigma = a.f[0];
    RS_FOR(g, (n + 3) / 4) {
        float z[4];
        rs_normal4(key, g, z);
        for (int k = 0; k < 4; ++k) {
            i64 e = g * 4 + k;
            if (e < n) dst[e] = rs_speckle_noise_px(src[e], sigma, z[k]);
        }
    }
}
