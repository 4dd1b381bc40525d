// The model's view of a frame and the engine's input tensor on the GPU
// (docs/gpu.md#gpu-resident-scenarios). The CPU code mirrored: the Pillow-exact resampling of
// src/kernels/resample.rs (docs/preprocessing.md#pillow-exact-resampling), the centre crop of
// src/view.rs (`ModelView::image`) and `Normalizer::write` of src/preprocess.rs. The recipe that
// sequences these launches is src/gpu/preprocess.rs; it uploads the CPU's own coefficient and
// normalisation tables, so the kernels only do Pillow's integer arithmetic and table look-ups and
// give the CPU's bytes and floats.
//
// Images are RGB, 3 bytes a pixel; every buffer is addressed with its own row stride in bytes, so
// a pass can read or write a rectangle of a larger image. The recipe keeps every launch below 2³¹
// elements, so an element's index splits into row, column and channel with 32-bit division (64-bit
// division is a long software routine on the GPU).

// Pillow's fixed point (PRECISION_BITS = 22): a sum that started from 1/2, floor shift, clip.
RS_HD u8 rs_view_clip8(int acc) {
    int v = acc >> 22;
    return (u8)(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Horizontal pass: each output sample (row, output pixel, channel) is the weighted sum of `taps`
// consecutive source pixels of its row.
// a.p[0] source, a.p[1] output, a.p[2] the first source pixel per output pixel (u32), a.p[3] the
// weights (int, taps per output pixel). a.i[0] rows, a.i[1] output pixels per row, a.i[2] taps,
// a.i[3] source row stride, a.i[4] output row stride (bytes), a.i[5] the source pixel that the
// source buffer's column 0 holds.
RS_KERNEL rs_view_resample_h(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const u32* start = RS_BUF(const u32, 2);
    const int* weights = RS_BUF(const int, 3);
    i64 outs = a.i[1], taps = a.i[2], ss = a.i[3], ds = a.i[4], off = a.i[5];
    RS_FOR(e, a.i[0] * outs * 3) {
        u32 ue = (u32)e, px = ue / 3u;
        i64 c = ue % 3u;
        i64 i = px % (u32)outs;
        i64 r = px / (u32)outs;
        const u8* s = src + r * ss + ((i64)start[i] - off) * 3 + c;
        const int* w = weights + i * taps;
        int acc = 1 << 21;
        for (i64 t = 0; t < taps; ++t) acc += (int)s[t * 3] * w[t];
        dst[r * ds + i * 3 + c] = rs_view_clip8(acc);
    }
}

// Vertical pass: each output sample (output row, byte of the row) is the weighted sum of `taps`
// consecutive source rows at the same byte.
// a.p[0] source, a.p[1] output, a.p[2] the first source row per output row (u32), a.p[3] the
// weights (taps per output row). a.i[0] output rows, a.i[1] bytes per output row, a.i[2] taps,
// a.i[3] source row stride, a.i[4] output row stride, a.i[5] the source row that the source
// buffer's row 0 holds, a.i[6] the byte of each source row that output byte 0 reads.
RS_KERNEL rs_view_resample_v(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const u32* start = RS_BUF(const u32, 2);
    const int* weights = RS_BUF(const int, 3);
    i64 n = a.i[1], taps = a.i[2], ss = a.i[3], ds = a.i[4], off = a.i[5], col = a.i[6];
    RS_FOR(e, a.i[0] * n) {
        i64 i = (u32)e / (u32)n;
        i64 x = (u32)e % (u32)n;
        const u8* s = src + ((i64)start[i] - off) * ss + col + x;
        const int* w = weights + i * taps;
        int acc = 1 << 21;
        for (i64 t = 0; t < taps; ++t) acc += (int)s[t * ss] * w[t];
        dst[i * ds + x] = rs_view_clip8(acc);
    }
}

// Pillow NEAREST: output pixel (x, y) is source pixel (xs[x], ys[y]), 0 where either index is
// 0xffffffff (outside the source).
// a.p[0] source, a.p[1] output, a.p[2] xs, a.p[3] ys (u32). a.i[0] rows, a.i[1] pixels per row,
// a.i[2] source row stride, a.i[3] output row stride (bytes).
RS_KERNEL rs_view_nearest(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    const u32* xs = RS_BUF(const u32, 2);
    const u32* ys = RS_BUF(const u32, 3);
    i64 cols = a.i[1], ss = a.i[2], ds = a.i[3];
    RS_FOR(e, a.i[0] * cols * 3) {
        u32 ue = (u32)e, px = ue / 3u;
        i64 c = ue % 3u;
        i64 x = px % (u32)cols;
        i64 y = px / (u32)cols;
        u32 sx = xs[x], sy = ys[y];
        dst[y * ds + x * 3 + c] =
            (sx == 0xffffffffu || sy == 0xffffffffu) ? (u8)0 : src[(i64)sy * ss + (i64)sx * 3 + c];
    }
}

// torchvision CenterCrop of an image that needs no resize: output pixel (x, y) is source pixel
// (x + left, y + top), 0 outside the source (`view::center_crop`).
// a.p[0] source, a.p[1] output. a.i[0] source width, a.i[1] source height, a.i[2] output width,
// a.i[3] output height, a.i[4] left, a.i[5] top.
RS_KERNEL rs_view_crop(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    u8* dst = RS_BUF(u8, 1);
    i64 sw = a.i[0], sh = a.i[1], dw = a.i[2];
    RS_FOR(e, dw * a.i[3] * 3) {
        u32 ue = (u32)e, px = ue / 3u;
        i64 c = ue % 3u;
        i64 x = px % (u32)dw + a.i[4];
        i64 y = px / (u32)dw + a.i[5];
        dst[e] = (x >= 0 && x < sw && y >= 0 && y < sh) ? src[(y * sw + x) * 3 + c] : (u8)0;
    }
}

// The view normalised into one row of the input batch: tensor element e (in the model's layout)
// is table[t][byte], t its tensor channel and byte the view's sample of image channel order[t].
// a.p[0] the view (a.i[0] pixels, RGB), a.p[1] the row (float, or float16 when a.i[2] is 1),
// a.p[2] the 768 floats of the tables (tensor channel major). a.i[1] 0 = NCHW, 1 = NHWC;
// a.i[3..6] the image channel of each tensor channel.
RS_KERNEL rs_view_normalize(RsArgs a) {
    const u8* src = RS_BUF(const u8, 0);
    const float* lut = RS_BUF(const float, 2);
    i64 n = a.i[0];
    int nhwc = a.i[1] != 0, to_f16 = a.i[2] != 0;
    RS_FOR(e, 3 * n) {
        u32 ue = (u32)e;
        i64 p = nhwc ? ue / 3u : ue % (u32)n;
        i64 t = nhwc ? ue % 3u : ue / (u32)n;
        float v = lut[t * 256 + src[3 * p + a.i[3 + t]]];
        if (to_f16)
            RS_BUF(unsigned short, 1)[e] = rs_f32_to_f16(v);
        else
            RS_BUF(float, 1)[e] = v;
    }
}
