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
        RsU32x4 r = rs_philox(key, (u64)g, 0u, 0u);
        float z[4];
        rs_box_muller(r.v[0], r.v[1], &z[0], &z[1]);
        rs_box_muller(r.v[2], r.v[3], &z[2], &z[3]);
        for (int k = 0; k < 4; ++k) {
            i64 e = g * 4 + k;
            if (e < n) dst[e] = rs_gaussian_noise_px(src[e], sigma, z[k]);
        }
    }
}
