// Kernels that expose common.cuh's building blocks to the tests (src/gpu/tests.rs): Philox against
// Random123's known answers, the float16 conversion against the `half` crate, Box-Muller's moments.

// a.p[0]: n records of 4 u32 counter words + 2 u32 key words (in), a.p[1]: n x 4 u32 (out).
RS_KERNEL rs_selftest_philox(RsArgs a) {
    const u32* in = RS_BUF(const u32, 0);
    u32* out = RS_BUF(u32, 1);
    RS_FOR(k, a.i[0]) {
        const u32* r = in + k * 6;
        // rs_philox takes the counter as (element, stream, draw): words 0-1, 2, 3.
        u64 element = (u64)r[0] | ((u64)r[1] << 32);
        u64 key = (u64)r[4] | ((u64)r[5] << 32);
        RsU32x4 o = rs_philox(key, element, r[2], r[3]);
        for (int j = 0; j < 4; ++j) out[k * 4 + j] = o.v[j];
    }
}

// a.p[0]: n floats (in), a.p[1]: n float16 bit patterns (out).
RS_KERNEL rs_selftest_f16(RsArgs a) {
    const float* in = RS_BUF(const float, 0);
    unsigned short* out = RS_BUF(unsigned short, 1);
    RS_FOR(k, a.i[0]) { out[k] = rs_f32_to_f16(in[k]); }
}

// a.p[0]: 2n floats (out): n Box-Muller pairs from Philox keyed by a.i[1].
RS_KERNEL rs_selftest_normal(RsArgs a) {
    float* out = RS_BUF(float, 0);
    RS_FOR(k, a.i[0]) {
        RsU32x4 r = rs_philox((u64)a.i[1], (u64)k, 0u, 0u);
        rs_box_muller(r.v[0], r.v[1], &out[2 * k], &out[2 * k + 1]);
    }
}
