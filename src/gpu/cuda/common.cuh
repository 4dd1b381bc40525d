// robustream GPU kernels: what every kernel file shares (docs/gpu.md#gpu-resident-scenarios).
//
// Every file under src/gpu/cuda/ is compiled twice from the same text:
//   * by NVRTC (at run time on a GPU machine, and in the tests everywhere) into PTX, where
//     `__CUDACC__` is defined and each RS_KERNEL is a `__global__` function whose RS_FOR loop is a
//     grid-stride loop, one element per thread;
//   * by the host C++ compiler in the tests (g++), where RS_KERNEL is a plain `extern "C"` function
//     and RS_FOR a sequential loop over the same elements.
// So the tests run every kernel body, arithmetic and indexing included, on the CPU and compare it
// with the Rust kernels (src/gpu/tests.rs); only the launch and the memory copies need a GPU.
//
// Rules for kernel files:
//   * no #include (NVRTC has no standard headers here): use the types and helpers below;
//   * a kernel is `RS_KERNEL rs_<name>(RsArgs a)`; its buffers are a.p[..] (device pointers on
//     the GPU, host addresses in the tests), integers a.i[..], floats a.f[..], doubles a.d[..]
//     (parameters the CPU kernels use in f64, passed exactly);
//   * every RS_FOR element writes only its own outputs, and reads nothing another element of the
//     same launch writes: the result must not depend on the order in which elements run;
//   * per-element arithmetic goes in `RS_HD` functions; randomness only from rs_philox keyed by the
//     variant's RngKey (a.i[..] holds it), counters made of the element's index and a stream number.

#ifdef __CUDACC__
#define RS_HD __host__ __device__ __forceinline__
#define RS_KERNEL extern "C" __global__ void
// Grid-stride loop: element `var` of 0..n, each once, spread over the launch's threads.
#define RS_FOR(var, n)                                                                           \
    for (long long var = (long long)blockIdx.x * blockDim.x + threadIdx.x; var < (long long)(n); \
         var += (long long)blockDim.x * gridDim.x)
#else
#include <cmath>
#define RS_HD static inline
#define RS_KERNEL extern "C" void
#define RS_FOR(var, n) for (long long var = 0; var < (long long)(n); ++var)
#endif

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// The one argument of every kernel (same layout as `gpu::launch::Args` in Rust, 176 bytes).
struct RsArgs {
    u64 p[6];
    i64 i[8];
    float f[8];
    double d[4];
};
static_assert(sizeof(RsArgs) == 176, "RsArgs must match gpu::launch::Args");

#define RS_BUF(T, k) ((T*)(a.p[k]))

// Adds v to *p; integer, so the total does not depend on the order of the additions (a GPU run
// repeats bit for bit). Reduction kernels accumulate privately over their RS_FOR elements and add
// once per thread; their recipes launch them with at most `gpu::launch::REDUCE_THREADS` threads.
RS_HD void rs_atomic_add_u64(u64* p, u64 v) {
#ifdef __CUDACC__
    atomicAdd(p, v);
#else
    *p += v;
#endif
}

// *p = max(*p, v): like rs_atomic_add_u64, order-independent, so reductions of maxima (and of
// minima, as maxima of complements) repeat bit for bit; doubles go through rs_order_key_f64.
RS_HD void rs_atomic_max_u64(u64* p, u64 v) {
#ifdef __CUDACC__
    atomicMax(p, v);
#else
    *p = v > *p ? v : *p;
#endif
}

// A u64 whose unsigned order is the order of the (non-NaN) double `v`, and back: minima and
// maxima of doubles through rs_atomic_max_u64.
RS_HD u64 rs_order_key_f64(double v) {
    union {
        double d;
        u64 u;
    } c;
    c.d = v;
    return (c.u >> 63) ? ~c.u : (c.u | 0x8000000000000000ull);
}

RS_HD double rs_order_key_to_f64(u64 k) {
    union {
        double d;
        u64 u;
    } c;
    c.u = (k >> 63) ? (k & 0x7fffffffffffffffull) : ~k;
    return c.d;
}

// A uniform in [0, 1) with 53 random bits (like the CPU's `random::<f64>()`), from two words.
RS_HD double rs_unit_f64(u32 hi, u32 lo) {
    return (double)(((u64)hi << 21) ^ (u64)(lo >> 11)) * (1.0 / 9007199254740992.0);
}

// A uniform integer in [0, n) (n ≥ 1) from 32 random bits (bias below n / 2^32).
RS_HD u64 rs_below(u32 x, u64 n) { return ((u64)x * n) >> 32; }

// ---- arithmetic shared with the CPU kernels --------------------------------------------------------

RS_HD float rs_clamp(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }
RS_HD int rs_clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// numpy's `np.uint8(np.clip(x, 0, 1) * 255)` (docs/imagenet-c.md#value-ranges-and-rounding):
// clip on the unit scale, scale, truncate. NaN gives 0.
RS_HD u8 rs_floor8(float v) {
    v = v > 0.0f ? v : 0.0f;
    v = v < 1.0f ? v : 1.0f;
    return (u8)(int)(v * 255.0f);
}

// `np.uint8(np.clip(x, 0, 255))`: clip on the byte scale, truncate. NaN gives 0.
RS_HD u8 rs_floor8_255(float v) {
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.0f ? v : 255.0f;
    return (u8)(int)v;
}

// ---- randomness: Philox4x32-10 (Salmon et al., SC'11; Random123's constants) -----------------------
//
// Counter-based: the four words of output are a function of (counter, key) alone, so an element's
// draws do not depend on which thread runs it or in which order. The key is the variant's 64-bit
// RngKey (the CPU path's key of (seed, frame id, scenario)); the counter is (element, element >> 32,
// stream, draw).

struct RsU32x4 {
    u32 v[4];
};

RS_HD void rs_mulhilo(u32 a, u32 b, u32* hi, u32* lo) {
    u64 p = (u64)a * (u64)b;
    *hi = (u32)(p >> 32);
    *lo = (u32)p;
}

RS_HD RsU32x4 rs_philox(u64 key, u64 element, u32 stream, u32 draw) {
    u32 c0 = (u32)element, c1 = (u32)(element >> 32), c2 = stream, c3 = draw;
    u32 k0 = (u32)key, k1 = (u32)(key >> 32);
    for (int r = 0; r < 10; ++r) {
        u32 hi0, lo0, hi1, lo1;
        rs_mulhilo(0xD2511F53u, c0, &hi0, &lo0);
        rs_mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
        u32 n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    RsU32x4 out = {{c0, c1, c2, c3}};
    return out;
}

// A uniform in (0, 1] from 32 random bits (never 0, so its logarithm is finite).
RS_HD float rs_unit_open0(u32 x) { return ((float)(x >> 8) + 1.0f) * (1.0f / 16777216.0f); }

// A uniform in [0, 1) from 32 random bits.
RS_HD float rs_unit(u32 x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

// Two independent standard normal deviates from two uniforms (Box–Muller).
RS_HD void rs_box_muller(u32 x, u32 y, float* z0, float* z1) {
    float r = sqrtf(-2.0f * logf(rs_unit_open0(x)));
    float t = 6.28318530717958647692f * rs_unit(y);
    *z0 = r * cosf(t);
    *z1 = r * sinf(t);
}

// Four standard normal deviates for element group g (elements 4g..4g+3): one Philox block, two
// Box–Muller pairs. The per-element noise kernels share this layout.
RS_HD void rs_normal4(u64 key, i64 g, float z[4]) {
    RsU32x4 r = rs_philox(key, (u64)g, 0u, 0u);
    rs_box_muller(r.v[0], r.v[1], &z[0], &z[1]);
    rs_box_muller(r.v[2], r.v[3], &z[2], &z[3]);
}

// ---- float16 (IEEE binary16, round to nearest even), for models that take float16 input ----------

RS_HD unsigned short rs_f32_to_f16(float f) {
    union {
        float f;
        u32 u;
    } c;
    c.f = f;
    u32 x = c.u;
    u32 sign = (x >> 16) & 0x8000u;
    u32 mag = x & 0x7fffffffu;
    if (mag >= 0x7f800000u) {  // inf or NaN
        return (unsigned short)(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
    }
    if (mag >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
        return (unsigned short)(sign | 0x7c00u);
    }
    if (mag < 0x38800000u) {  // below the smallest normal half: subnormal or zero
        if (mag < 0x33000000u) return (unsigned short)sign;  // < 2^-25: rounds to 0
        u32 e = mag >> 23;
        u32 m = (mag & 0x7fffffu) | 0x800000u;
        u32 shift = 126u - e;  // value / 2^-24 (the half subnormal step) = m * 2^(e - 126)
        u32 h = m >> shift;
        u32 rem = m & ((1u << shift) - 1u);
        u32 halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (h & 1u))) h += 1u;
        return (unsigned short)(sign | h);
    }
    u32 h = ((mag - 0x38000000u) >> 13);
    u32 rem = mag & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h += 1u;
    return (unsigned short)(sign | h);
}
