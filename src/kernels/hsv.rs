//! scikit-image-compatible HSV conversion (docs/imagenet-c.md#h6-hsv-conversion), shared by
//! `brightness` and `saturate`.
//!
//! `skimage.color.rgb2hsv` / `hsv2rgb` on float64 values in [0, 1], reproduced operation for operation so
//! that the f64 results are bit-identical (same expressions, same evaluation order, same tie-breaking),
//! which keeps the final truncation to u8 (`floor8`) identical to the reference.
//!
//! Both conversions are per pixel and need no neighbourhood, so they work for any frame size. A lookup table
//! over all 2²⁴ colours would be 48 MiB per map and is not worth it: [`map_hsv`] does the per-pixel math
//! (three divisions and a handful of multiply-adds) in parallel over blocks of rows instead, eight pixels
//! at a time with every branch of the scalar functions turned into a select, so that it runs on vector
//! lanes (AVX2 where the CPU has it) with exactly the scalar functions' operations per pixel.
//!
//! [`edit_hsv`] is the entry point of `brightness` and `saturate`: for their ImageNet-C parameters it
//! first settles most pixels exactly from the fraction the round trip computes (f32 lanes, no f64 chain),
//! and sends only the pixels whose value is an integer — where the f64 chain's rounding decides the byte —
//! through [`map_hsv`]'s f64 lanes; the exhaustive tests check all 2²⁴ colours for every severity.

use image::RgbImage;

use super::lanes::{self, floor8_unit};

/// `rgb2hsv` of one pixel: `[r, g, b]` on [0, 1] → `[h, s, v]`, all on [0, 1] (`h < 1`).
///
/// As scikit-image: `v = max`, `delta = max − min`, `s = delta / v` (0 when `delta == 0`). The hue is
/// assigned by three *successive* masks, so when several channels equal the maximum the **blue** branch
/// overrides green, which overrides red: red `(g − b)/delta`, green `2 + (b − r)/delta`, blue
/// `4 + (r − g)/delta`; then `h = (h/6) mod 1` with numpy's floored modulo (a negative value gains +1), and
/// `h = 0` when `delta == 0`.
#[inline]
#[cfg(test)]
pub(crate) fn rgb_to_hsv([r, g, b]: [f64; 3]) -> [f64; 3] {
    let v = r.max(g).max(b);
    let delta = v - r.min(g).min(b);
    if delta == 0.0 {
        // Grey (including black, where s = 0/0 is NaN and scikit-image zeroes it).
        return [0.0, 0.0, v];
    }
    let s = delta / v;
    let mut h = 0.0;
    if r == v {
        h = (g - b) / delta;
    }
    if g == v {
        h = 2.0 + (b - r) / delta;
    }
    if b == v {
        h = 4.0 + (r - g) / delta;
    }
    [floored_mod1(h / 6.0), s, v]
}

/// numpy's `x % 1.0` (`np.remainder`): `fmod`, then +1 when the remainder is negative; `+0.0` for a zero
/// remainder.
#[inline]
#[cfg(test)]
fn floored_mod1(x: f64) -> f64 {
    let m = x % 1.0;
    if m < 0.0 {
        m + 1.0
    } else if m == 0.0 {
        0.0
    } else {
        m
    }
}

/// `hsv2rgb` of one pixel: `[h, s, v]` → `[r, g, b]`.
///
/// As scikit-image: `i = floor(6h)`, `f = 6h − i`, `p = v(1 − s)`, `q = v(1 − f·s)`,
/// `t = v(1 − (1 − f)·s)`; sector `i` cast to u8, modulo 6, selects `(v,t,p)`, `(q,v,p)`, `(p,v,t)`,
/// `(p,q,v)`, `(t,p,v)`, `(v,p,q)`. No clipping here (the callers clip).
#[inline]
#[cfg(test)]
pub(crate) fn hsv_to_rgb([h, s, v]: [f64; 3]) -> [f64; 3] {
    let hi = (h * 6.0).floor();
    let f = h * 6.0 - hi;
    let p = v * (1.0 - s);
    let q = v * (1.0 - f * s);
    let t = v * (1.0 - (1.0 - f) * s);
    // numpy `astype(np.uint8)` of a value in [0, 6]; `as` saturates anything outside instead of wrapping.
    match (hi as u8) % 6 {
        0 => [v, t, p],
        1 => [q, v, p],
        2 => [p, v, t],
        3 => [p, q, v],
        4 => [t, p, v],
        _ => [v, p, q],
    }
}

/// `x / 255` for every u8 value, as numpy's `np.array(img) / 255.` computes it (one f64 division):
/// the values the kernel's arithmetic conversion is checked against.
#[cfg(test)]
fn unit_lut() -> [f64; 256] {
    std::array::from_fn(|v| v as f64 / 255.0)
}

/// Pixels per rayon task (about 0.1 ms of HSV work): below this, task overhead outweighs the gain.
const PIXELS_PER_TASK: usize = 16_384;

/// Pixels per structure-of-arrays chunk of [`map_block`] (ten 2 KiB planes: stays in L1).
const CHUNK: usize = 256;

/// `floor8(clip(hsv2rgb(edit(rgb2hsv(x / 255))), 0, 1) · 255)` for every pixel: the whole HSV round trip of
/// `brightness` / `saturate` (docs/imagenet-c.md#brightness, docs/imagenet-c.md#saturate), with
/// `edit` changing the HSV triple.
///
/// Any size (including empty). Parallel over blocks of rows of about [`PIXELS_PER_TASK`] pixels; the result
/// does not depend on the thread count (no randomness, pure per-pixel map). Within a task, pixels go
/// through `rgb_to_hsv`, `edit` and `hsv_to_rgb` in chunks of planes, in branch-free form (bit-identical
/// to the scalar functions for every input colour; `edit` should itself be branch-free, e.g. `clamp`).
fn map_hsv<F>(image: &RgbImage, edit: F) -> RgbImage
where
    F: Fn([f64; 3]) -> [f64; 3] + Sync,
{
    lanes::map_row_tasks(image, 3 * PIXELS_PER_TASK, |_, _, rows| {
        map_block_dispatch(rows, &edit)
    })
}

/// An HSV edit of ImageNet-C: the two that [`edit_hsv`] knows how to shortcut.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Edit {
    /// `S = clip(S·scale + offset, 0, 1)` (`saturate`, docs/imagenet-c.md#saturate).
    Saturate {
        /// Factor on S.
        scale: f64,
        /// Added to S after scaling.
        offset: f64,
    },
    /// `V = clip(V + delta, 0, 1)` (`brightness`, docs/imagenet-c.md#brightness).
    Brightness {
        /// Added to V (on [0, 1]).
        delta: f64,
    },
}

impl Edit {
    /// The edit of one HSV triple, in scikit-image's float64 operations (what the reference computes).
    #[inline(always)]
    fn apply(self, [h, s, v]: [f64; 3]) -> [f64; 3] {
        match self {
            Edit::Saturate { scale, offset } => [h, (s * scale + offset).clamp(0.0, 1.0), v],
            Edit::Brightness { delta } => [h, s, (v + delta).clamp(0.0, 1.0)],
        }
    }

    /// The parameters in tenths, when the exact-rational shortcut applies: `scale = A/10`,
    /// `offset = B/10` (0 ≤ A ≤ 1000, 0 ≤ B ≤ 10) or `delta = K/10` (0 ≤ K ≤ 10), each the f64 nearest
    /// to that fraction (all ImageNet-C severities are).
    fn tenths(self) -> Option<Shortcut> {
        let tenths = |x: f64, max: f64| {
            let t = (x * 10.0).round();
            (x.is_finite() && (0.0..=max).contains(&t) && t / 10.0 == x).then_some(t)
        };
        match self {
            Edit::Saturate { scale, offset } => Some(Shortcut {
                saturate: true,
                a: tenths(scale, 1000.0)? as f32,
                b: tenths(offset, 10.0)? as f32,
            }),
            Edit::Brightness { delta } => Some(Shortcut {
                saturate: false,
                a: 0.0,
                b: tenths(delta, 10.0)? as f32 * 255.0,
            }),
        }
    }
}

/// The parameters of the exact-rational shortcut (see [`edit_hsv`]), all small integers held in f32.
#[derive(Clone, Copy, Debug)]
struct Shortcut {
    /// `saturate` (else `brightness`).
    saturate: bool,
    /// saturate: `A = 10·scale`.
    a: f32,
    /// saturate: `B = 10·offset`; brightness: `255·K = 2550·delta`.
    b: f32,
}

/// A channel's exact value is declared an integer (undecided) when the f32 estimate lies this close to
/// one. The estimate is off by at most 3·10⁻⁵ (see [`edit_hsv`]); a value that is not an integer lies at
/// least 1/2550 ≈ 3.9·10⁻⁴ from every integer.
const NEAR_INTEGER: f32 = 1e-4;

/// Pixels per structure-of-arrays chunk of the shortcut (three 1 KiB f32 planes, four 256-byte ones).
const FAST_CHUNK: usize = 256;

/// Undecided pixels collected before they go through the f64 chain together: each [`map_block`] call
/// clears 16 KiB of planes, worth sharing among many pixels.
const PENDING: usize = 2048;

/// `floor8(clip(hsv2rgb(edit(rgb2hsv(x / 255))), 0, 1) · 255)` for every pixel
/// (docs/imagenet-c.md#brightness, docs/imagenet-c.md#saturate):
/// bit-identical to [`map_hsv`] with [`Edit::apply`], faster for the ImageNet-C parameters.
///
/// The shortcut: with exact arithmetic, the round trip gives each channel `c` of a pixel with maximum
/// `M`, minimum `m` (bytes) the value `X·/255` with
///
/// * saturate (`s' = min(A(M − m) + B·M, 10M) / 10M`): `X = M − (M − c)·R`,
///   `R = min(A(M − m) + B·M, 10M) / (10(M − m))`;
/// * brightness (`V' = min(10M + 255K, 2550) / 10`): `X = c·R`, `R = V'/M`.
///
/// (the hue only decides which channel gets `t` or `q`; both equal this). `X` is a fraction with a
/// denominator of at most 2550, and the float64 chain computes it to within ~10⁻¹², so whenever `X` is not
/// an integer, `floor8` of the chain is `floor(X)` — the chain's rounding matters only for integer `X`.
/// `X` is estimated in f32 (exact integer numerator and denominator, one division, one multiply-add:
/// error below 3·10⁻⁵); a channel whose estimate is within [`NEAR_INTEGER`] of an integer is undecided and
/// the whole pixel goes through the f64 chain ([`map_block`]) instead, on a compacted buffer so that
/// chain still runs on full vectors. Settled directly: the maximum channel (a 256-entry table of the
/// chain's `floor8(V')`), a minimum channel that the chain zeroes exactly (saturate with `s' = 1`;
/// brightness of a zero channel), and greys when nothing moves them. The exhaustive tests check every
/// colour for every severity's parameters. Other parameters run [`map_hsv`].
pub(crate) fn edit_hsv(image: &RgbImage, edit: Edit) -> RgbImage {
    let Some(cut) = edit.tenths() else {
        return map_hsv(image, move |hsv| edit.apply(hsv));
    };
    // The chain's floor8(V') for each maximum byte (h and s do not matter for the channel that is V).
    let tmax: [f32; 256] = std::array::from_fn(|m| {
        f32::from(floor8_unit(edit.apply([0.0, 0.0, m as f64 / 255.0])[2]))
    });
    lanes::map_row_tasks(image, 3 * PIXELS_PER_TASK, |_, _, rows| {
        fast_dispatch(rows, edit, cut, &tmax)
    })
}

crate::kernels::multiversion! {
    /// [`fast_block`] for the CPU's best instruction set (as [`map_block_dispatch`]).
    fn fast_dispatch(px: &mut [u8], edit: Edit, cut: Shortcut, tmax: &[f32; 256]);
    /// [`fast_block`] with AVX-512F/BW/VBMI and FMA enabled: pixels split into planes and joined
    /// back by byte permutes ([`split_vbmi`], [`join_vbmi`]).
    fast_block_vbmi ["avx512f", "avx512bw", "avx512vbmi", "fma"] => fast_block::<true, true>;
    /// [`fast_block`] with AVX-512F and FMA enabled.
    fast_block_avx512 ["avx512f", "fma"] => fast_block::<true, false>;
    /// [`fast_block`] with AVX2 and FMA enabled.
    fast_block_avx2 ["avx2", "fma"] => fast_block::<true, false>;
    _ => fast_block::<false, false>;
    levels fast_dispatch_at;
}

/// Interleaved RGB bytes (at most [`FAST_CHUNK`] pixels) to f32 planes, 16 pixels per step: a masked
/// 48-byte load, one `vpermb` gathering the reds, greens and blues into the register's first three
/// 16-byte lanes, each widened to 16 f32. Plane entries past the last pixel get 0.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX-512 VBMI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn split_vbmi(chunk: &[u8], ch: &mut [[f32; FAST_CHUNK]; 3]) {
    use std::arch::x86_64::*;
    let n = chunk.len().min(3 * FAST_CHUNK);
    let order: [u8; 64] = std::array::from_fn(|j| {
        if j < 48 {
            (j % 16 * 3 + j / 16) as u8
        } else {
            0
        }
    });
    // SAFETY: `order` is 64 readable bytes; the load is unaligned.
    let order = unsafe { _mm512_loadu_si512(order.as_ptr().cast()) };
    for k in 0..FAST_CHUNK / 16 {
        let off = 48 * k;
        let len = n.saturating_sub(off).min(48);
        let m: __mmask64 = (1u64 << len) - 1;
        // SAFETY: only the `len` bytes from `off` are read (`off + len ≤ n ≤ chunk.len()` when
        // `len > 0`; with `len = 0` nothing is read); each plane store writes 16 f32 at `16k`,
        // `16k + 16 ≤ FAST_CHUNK`.
        unsafe {
            let v = _mm512_permutexvar_epi8(
                order,
                _mm512_maskz_loadu_epi8(m, chunk.as_ptr().wrapping_add(off).cast()),
            );
            let r = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_castsi512_si128(v)));
            let g = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32::<1>(v)));
            let b = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32::<2>(v)));
            _mm512_storeu_ps(ch[0].as_mut_ptr().add(16 * k), r);
            _mm512_storeu_ps(ch[1].as_mut_ptr().add(16 * k), g);
            _mm512_storeu_ps(ch[2].as_mut_ptr().add(16 * k), b);
        }
    }
}

/// The indices of the set `undecided` flags, in order, written to the front of `found_at` (entries
/// after them are scratch); returns their count. Sixteen flags per step: a byte test gives the lane mask, `vpcompressd` (register form) packs
/// those lanes' indices, one full store, and the count advances by the mask's population — no branch
/// per flag, which matters when 10–20 % of the pixels, at random places, are undecided.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn undecided_vbmi(
    undecided: &[u8; FAST_CHUNK],
    found_at: &mut [u32; FAST_CHUNK + 16],
) -> usize {
    use std::arch::x86_64::*;
    let mut found = 0;
    let mut lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let sixteen = _mm512_set1_epi32(16);
    for k in 0..FAST_CHUNK / 16 {
        // SAFETY: reads 16 bytes at `16k` of a FAST_CHUNK array; writes 16 entries at `found`, and
        // `found ≤ 16k ≤ FAST_CHUNK − 16`, within the FAST_CHUNK + 16 entries of `found_at`.
        let mask = unsafe {
            let flags = _mm_loadu_si128(undecided.as_ptr().add(16 * k).cast());
            let mask = _mm_test_epi8_mask(flags, flags);
            _mm512_storeu_si512(
                found_at.as_mut_ptr().add(found).cast(),
                _mm512_maskz_compress_epi32(mask, lanes),
            );
            mask
        };
        found += mask.count_ones() as usize;
        lanes = _mm512_add_epi32(lanes, sixteen);
    }
    found
}

/// Byte planes back to interleaved RGB (the inverse permute of [`split_vbmi`]), masked 48-byte stores
/// covering exactly `chunk`.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX-512 VBMI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn join_vbmi(bytes: &[[u8; FAST_CHUNK]; 3], chunk: &mut [u8]) {
    use std::arch::x86_64::*;
    let n = chunk.len().min(3 * FAST_CHUNK);
    let order: [u8; 64] = std::array::from_fn(|j| {
        if j < 48 {
            (j % 3 * 16 + j / 3) as u8
        } else {
            0
        }
    });
    // SAFETY: `order` is 64 readable bytes; the load is unaligned.
    let order = unsafe { _mm512_loadu_si512(order.as_ptr().cast()) };
    let mut off = 0;
    let mut k = 0;
    while off < n {
        let len = (n - off).min(48);
        let m: __mmask64 = (1u64 << len) - 1;
        // SAFETY: each plane load reads 16 bytes at `16k`, `16k + 16 ≤ FAST_CHUNK` (`off = 48k < n
        // ≤ 3·FAST_CHUNK`); the store writes only the `len` bytes from `off`, `off + len ≤ n`.
        unsafe {
            let r = _mm_loadu_si128(bytes[0].as_ptr().add(16 * k).cast());
            let g = _mm_loadu_si128(bytes[1].as_ptr().add(16 * k).cast());
            let b = _mm_loadu_si128(bytes[2].as_ptr().add(16 * k).cast());
            let v =
                _mm512_inserti32x4::<2>(_mm512_inserti32x4::<1>(_mm512_castsi128_si512(r), g), b);
            _mm512_mask_storeu_epi8(
                chunk.as_mut_ptr().add(off).cast(),
                m,
                _mm512_permutexvar_epi8(order, v),
            );
        }
        off += 48;
        k += 1;
    }
}

/// The shortcut of [`edit_hsv`] over interleaved RGB pixels in place: [`FAST_CHUNK`] pixels at a time
/// as f32 planes; undecided pixels (their original bytes) are collected and sent through [`map_block`]
/// in batches of at least [`PENDING`] (and the rest at the end). `VBMI` (only from [`fast_block_vbmi`]) splits and joins the planes
/// with byte permutes.
#[inline(always)]
fn fast_block<const FMA: bool, const VBMI: bool>(
    px: &mut [u8],
    edit: Edit,
    cut: Shortcut,
    tmax: &[f32; 256],
) {
    let mut ch = [[0.0f32; FAST_CHUNK]; 3];
    let mut top = [0u8; FAST_CHUNK];
    let mut bytes = [[0u8; FAST_CHUNK]; 3];
    let mut undecided = [0u8; FAST_CHUNK];
    // Pending undecided pixels: at most PENDING − 1 carried over plus one chunk's FAST_CHUNK.
    let mut pending = [0u8; 3 * (PENDING + FAST_CHUNK)];
    let mut pending_at = [0usize; PENDING + FAST_CHUNK];
    let mut n_pending = 0;
    // Only the VBMI compaction writes indices (x86-64 only).
    #[cfg(target_arch = "x86_64")]
    let mut found_at = [0u32; FAST_CHUNK + 16];
    let tmax_formula = tmax.iter().enumerate().all(|(m, &t)| {
        let lifted = (10.0 * m as f32 + cut.b).min(2550.0);
        t == ((lifted + 0.5) * 0.1).floor()
    });
    let mut start = 0;
    while start < px.len() {
        let end = px.len().min(start + 3 * FAST_CHUNK);
        let chunk = &mut px[start..end];
        let n = chunk.len() / 3;
        #[cfg(target_arch = "x86_64")]
        if VBMI {
            // SAFETY: `VBMI` is only set by `fast_block_vbmi`, whose callers checked the CPU.
            unsafe { split_vbmi(chunk, &mut ch) };
        }
        if !VBMI || cfg!(not(target_arch = "x86_64")) {
            for (i, p) in chunk.chunks_exact(3).enumerate() {
                ch[0][i] = f32::from(p[0]);
                ch[1][i] = f32::from(p[1]);
                ch[2][i] = f32::from(p[2]);
            }
        }
        if !cut.saturate && !tmax_formula {
            for (i, p) in chunk.chunks_exact(3).enumerate() {
                top[i] = p[0].max(p[1]).max(p[2]);
            }
        }
        if cut.saturate {
            shortcut_saturate::<FMA>(&ch, cut, &mut bytes, &mut undecided);
        } else {
            if tmax_formula {
                shortcut_brightness::<false>(&ch, &top, cut, tmax, &mut bytes, &mut undecided);
            } else {
                shortcut_brightness::<true>(&ch, &top, cut, tmax, &mut bytes, &mut undecided);
            }
        }
        // Compact the undecided pixels' original bytes. Flags past a short last chunk are stale:
        // cleared first.
        undecided[n..].fill(0);
        #[cfg(target_arch = "x86_64")]
        if VBMI {
            // SAFETY: as for `split_vbmi` above.
            let found = unsafe { undecided_vbmi(&undecided, &mut found_at) };
            for &i in &found_at[..found] {
                let i = i as usize;
                pending[3 * n_pending..3 * n_pending + 3].copy_from_slice(&chunk[3 * i..3 * i + 3]);
                pending_at[n_pending] = start + 3 * i;
                n_pending += 1;
            }
        }
        // Otherwise eight flags (0 or 1) at a time as a word, visiting its set bytes only.
        for (k, flags) in undecided
            .chunks_exact(8)
            .enumerate()
            .filter(|_| !VBMI || cfg!(not(target_arch = "x86_64")))
        {
            let mut word = u64::from_le_bytes(flags.try_into().expect("eight flags"));
            while word != 0 {
                let i = 8 * k + word.trailing_zeros() as usize / 8;
                word &= word - 1;
                pending[3 * n_pending..3 * n_pending + 3].copy_from_slice(&chunk[3 * i..3 * i + 3]);
                pending_at[n_pending] = start + 3 * i;
                n_pending += 1;
            }
        }
        #[cfg(target_arch = "x86_64")]
        if VBMI {
            // SAFETY: as for `split_vbmi` above.
            unsafe { join_vbmi(&bytes, chunk) };
        }
        if !VBMI || cfg!(not(target_arch = "x86_64")) {
            for (i, p) in chunk.chunks_exact_mut(3).enumerate() {
                p.copy_from_slice(&[bytes[0][i], bytes[1][i], bytes[2][i]]);
            }
        }
        if n_pending >= PENDING {
            flush::<FMA>(
                px,
                &mut pending[..3 * n_pending],
                &pending_at[..n_pending],
                edit,
            );
            n_pending = 0;
        }
        start = end;
    }
    if n_pending > 0 {
        flush::<FMA>(
            px,
            &mut pending[..3 * n_pending],
            &pending_at[..n_pending],
            edit,
        );
    }
}

/// The f64 chain ([`map_block`]) on the compacted `pending` pixels, each written back to its offset `at`
/// in `px`. A function rather than a closure so that it is inlined into the caller's instruction set.
#[inline(always)]
fn flush<const FMA: bool>(px: &mut [u8], pending: &mut [u8], at: &[usize], edit: Edit) {
    map_block::<FMA, _>(pending, &|hsv| edit.apply(hsv));
    for (p, &i) in pending.chunks_exact(3).zip(at) {
        px[i..i + 3].copy_from_slice(p);
    }
}

/// `x as u8` for `x` already in [0, 255] or NaN (→ 0), vectorisable.
#[inline(always)]
fn byte(x: f32) -> u8 {
    let x = if x > 0.0 { x } else { 0.0 };
    let x = if x < 255.0 { x } else { 255.0 };
    // SAFETY: `x` is finite and in [0, 255] here, so it is representable as i32 after truncation.
    unsafe { x.to_int_unchecked::<i32>() as u8 }
}

/// How far `x` is from the middle between its neighbouring integers: `|x − floor(x) − ½|`, in [0, ½];
/// `x` is within [`NEAR_INTEGER`] of an integer iff this is at least `½ − NEAR_INTEGER`.
#[inline(always)]
fn off_middle(x: f32) -> f32 {
    (x - x.floor() - 0.5).abs()
}

/// The threshold of [`off_middle`]: at or above it, a value counts as an integer.
const NEAR_EDGE: f32 = 0.5 - NEAR_INTEGER;

/// The saturate shortcut of [`edit_hsv`] on a chunk of f32 planes (all [`FAST_CHUNK`] pixels, whatever
/// the caller uses, so the loop has no remainder): output bytes and undecided flags (0 or 1).
///
/// No selects for the special channels: the maximum gives `X = M − 0·R = M` exactly, which is the chain's
/// byte (V is unchanged and the chain's `floor8(M/255)` is `M` for every byte, tested); a minimum that
/// the chain zeroes (`s' = 1`) gives `X ≈ 0`, whose floor (0 or −1) [`byte`] clamps to 0. A grey divides
/// by 1 instead of 0 (its channels are all the maximum); with an offset it is undecided (the chain gives
/// it a red hue).
#[inline(always)]
fn shortcut_saturate<const FMA: bool>(
    ch: &[[f32; FAST_CHUNK]; 3],
    cut: Shortcut,
    bytes: &mut [[u8; FAST_CHUNK]; 3],
    undecided: &mut [u8; FAST_CHUNK],
) {
    let [r, g, b] = ch;
    let [or, og, ob] = bytes;
    let grey_moves = cut.b > 0.0;
    for i in 0..FAST_CHUNK {
        let (r, g, b) = (r[i], g[i], b[i]);
        let hi = if r > g { r } else { g };
        let max = if hi > b { hi } else { b };
        let lo = if r < g { r } else { g };
        let min = if lo < b { lo } else { b };
        // Integers below 2^24: exact in f32.
        let mid = r + g + b - max - min;
        let range = max - min;
        let w = cut.a * range + cut.b * max;
        let cap = 10.0 * max;
        let clipped = w >= cap;
        let grey = range == 0.0;
        let ratio = (if clipped { cap } else { w }) / (if grey { 1.0 } else { 10.0 * range });
        let x = |c: f32| {
            if FMA {
                (c - max).mul_add(ratio, max)
            } else {
                (c - max) * ratio + max
            }
        };
        or[i] = byte(x(r).floor());
        og[i] = byte(x(g).floor());
        ob[i] = byte(x(b).floor());
        // Undecided: the minimum's or the middle channel's X is an integer, unless the chain settles
        // that channel anyway (the maximum, so also every channel of a grey; a minimum at s' = 1).
        let min_off = if clipped || grey {
            0.0
        } else {
            off_middle(x(min))
        };
        let mid_settled = mid == max || (clipped && mid == min);
        let mid_off = if mid_settled { 0.0 } else { off_middle(x(mid)) };
        let off = if min_off > mid_off { min_off } else { mid_off };
        undecided[i] = u8::from(off >= NEAR_EDGE || (grey && grey_moves));
    }
}

/// The brightness shortcut of [`edit_hsv`] on a chunk of f32 planes (as [`shortcut_saturate`]). The
/// maximum channel gets `tmax[M]`; with `TABLE == false` the caller has checked that the table is
/// `floor(min(10M + 255K, 2550)/10)`, computed here instead of gathered. A zero channel gives `X = 0`
/// (the chain's `p = v'·(1 − 1)` is exactly 0), no select needed; it is settled.
#[inline(always)]
fn shortcut_brightness<const TABLE: bool>(
    ch: &[[f32; FAST_CHUNK]; 3],
    top: &[u8; FAST_CHUNK],
    cut: Shortcut,
    tmax: &[f32; 256],
    bytes: &mut [[u8; FAST_CHUNK]; 3],
    undecided: &mut [u8; FAST_CHUNK],
) {
    let [r, g, b] = ch;
    let [or, og, ob] = bytes;
    for i in 0..FAST_CHUNK {
        let (r, g, b) = (r[i], g[i], b[i]);
        let hi = if r > g { r } else { g };
        let max = if hi > b { hi } else { b };
        let lifted = 10.0 * max + cut.b;
        let lifted = if lifted < 2550.0 { lifted } else { 2550.0 };
        let ratio = lifted / (10.0 * max);
        let vmax = if TABLE {
            tmax[usize::from(top[i])]
        } else {
            // `lifted` is an integer: + 0.5 keeps the quotient 0.05 away from integers.
            ((lifted + 0.5) * 0.1).floor()
        };
        let one = |c: f32| byte(if c == max { vmax } else { (c * ratio).floor() });
        or[i] = one(r);
        og[i] = one(g);
        ob[i] = one(b);
        // Undecided: the minimum's or the middle channel's X is an integer, unless it is 0 (then
        // exactly 0 in the chain) or the maximum.
        let lo = if r < g { r } else { g };
        let min = if lo < b { lo } else { b };
        let mid = r + g + b - max - min;
        let min_off = if min == 0.0 || min == max {
            0.0
        } else {
            off_middle(min * ratio)
        };
        let mid_off = if mid == 0.0 || mid == max {
            0.0
        } else {
            off_middle(mid * ratio)
        };
        let off = if min_off > mid_off { min_off } else { mid_off };
        undecided[i] = u8::from(off >= NEAR_EDGE);
    }
}

crate::kernels::multiversion! {
    /// [`map_block`] compiled for AVX-512F (eight f64 lanes) or AVX2 (four), with FMA, when the CPU
    /// has them; every version computes the same bits (the exhaustive test runs the one the CPU
    /// selects, and `every_instruction_set_gives_the_same_bytes` the others).
    fn map_block_dispatch[F: Fn([f64; 3]) -> [f64; 3]](px: &mut [u8], edit: &F);
    /// [`map_block`] with AVX-512F and FMA enabled, dividing by `v` and by 6 through reciprocals.
    map_block_avx512 ["avx512f", "fma"] => map_block::<true, F>;
    /// [`map_block`] with AVX2 and FMA enabled, dividing by `v` and by 6 through reciprocals.
    map_block_avx2 ["avx2", "fma"] => map_block::<true, F>;
    _ => map_block::<false, F>;
    levels map_block_dispatch_at;
}

/// `x / d`, given `r = 1/d` correctly rounded. With `FMA`, computed as `q = x·r` refined once by the
/// exact remainder (`e = fma(−q, d, x)`, `q + e·r` fused) — Markstein's correction, which returns the
/// correctly rounded quotient, i.e. exactly what the division returns; the exhaustive test
/// `lane_path_is_bit_identical_for_every_colour` confirms it for every input this module sees. Without
/// `FMA`, the division itself.
#[inline(always)]
fn div_by<const FMA: bool>(x: f64, d: f64, r: f64) -> f64 {
    if FMA {
        let q = x * r;
        let e = (-q).mul_add(d, x);
        e.mul_add(r, q)
    } else {
        x / d
    }
}

/// The HSV round trip of interleaved RGB pixels in place, [`CHUNK`] pixels at a time as planes of f64
/// (structure of arrays), each step a simple loop over the chunk that the compiler vectorises. With
/// `FMA`, the divisions by `v` (one of 255 values: reciprocals from a table) and by 6 are done by
/// [`div_by`]; only `num/δ` stays a division.
#[inline(always)]
fn map_block<const FMA: bool, F: Fn([f64; 3]) -> [f64; 3]>(px: &mut [u8], edit: &F) {
    let mut planes = [[0.0f64; CHUNK]; 7];
    let mut bytes = [[0u8; CHUNK]; 3];
    for chunk in px.chunks_mut(3 * CHUNK) {
        let n = chunk.len() / 3;
        let [r, g, b, h, s, v, rv] = &mut planes;
        for (i, p) in chunk.chunks_exact(3).enumerate() {
            // x/255 by arithmetic rather than three table gathers (slow on vector lanes): with FMA,
            // `div_by` returns the correctly rounded quotient, i.e. exactly `unit[x]` (checked for
            // every byte by `unit_by_arithmetic_is_the_division`).
            r[i] = div_by::<FMA>(f64::from(p[0]), 255.0, 1.0 / 255.0);
            g[i] = div_by::<FMA>(f64::from(p[1]), 255.0, 1.0 / 255.0);
            b[i] = div_by::<FMA>(f64::from(p[2]), 255.0, 1.0 / 255.0);
        }
        // 1/v: the same IEEE division the table of reciprocals holds (v = x/255 of the largest byte),
        // computed on lanes instead of gathered.
        for i in 0..n {
            let hi = if r[i] > g[i] { r[i] } else { g[i] };
            let max = if hi > b[i] { hi } else { b[i] };
            rv[i] = 1.0 / max;
        }
        rgb_to_hsv_planes::<FMA>(
            [&r[..n], &g[..n], &b[..n], &rv[..n]],
            [&mut h[..n], &mut s[..n], &mut v[..n]],
        );
        for i in 0..n {
            [h[i], s[i], v[i]] = edit([h[i], s[i], v[i]]);
        }
        hsv_to_rgb_planes(
            &h[..n],
            &s[..n],
            &v[..n],
            [&mut r[..n], &mut g[..n], &mut b[..n]],
        );
        for (plane, out) in [&*r, &*g, &*b].into_iter().zip(bytes.iter_mut()) {
            for (o, &x) in out[..n].iter_mut().zip(&plane[..n]) {
                *o = lanes::floor8(x);
            }
        }
        for (i, p) in chunk.chunks_exact_mut(3).enumerate() {
            p.copy_from_slice(&[bytes[0][i], bytes[1][i], bytes[2][i]]);
        }
    }
}

/// `rgb_to_hsv` over planes (`rv` = 1/max), with selects instead of branches. The hue's three masks
/// become one numerator / offset pair chosen in the same priority (blue over green over red), so the
/// single division per pixel is the one the scalar code performs: `(g − b)/δ` (offset 0, and
/// `0 + x = x`), `2 + (b − r)/δ` or `4 + (r − g)/δ`. `h/6` lies in [−1/6, 5/6] for inputs in [0, 1],
/// where numpy's `% 1` is the identity, so only the negative wrap (+1) and the zero sign remain.
/// `if a > b { a } else { b }` equals `f64::max` here (no NaN; all zeros are +0).
#[inline(always)]
fn rgb_to_hsv_planes<const FMA: bool>([r, g, b, rv]: [&[f64]; 4], [h, s, v]: [&mut [f64]; 3]) {
    let n = r.len();
    let (g, b, rv) = (&g[..n], &b[..n], &rv[..n]);
    let (h, s, v) = (&mut h[..n], &mut s[..n], &mut v[..n]);
    for i in 0..n {
        let hi = if r[i] > g[i] { r[i] } else { g[i] };
        let max = if hi > b[i] { hi } else { b[i] };
        let lo = if r[i] < g[i] { r[i] } else { g[i] };
        let min = if lo < b[i] { lo } else { b[i] };
        let delta = max - min;
        let (is_b, is_g) = (b[i] == max, g[i] == max);
        let num = if is_b {
            r[i] - g[i]
        } else if is_g {
            b[i] - r[i]
        } else {
            g[i] - b[i]
        };
        let off = if is_b {
            4.0
        } else if is_g {
            2.0
        } else {
            0.0
        };
        let sat = div_by::<FMA>(delta, max, rv[i]);
        let h6 = div_by::<FMA>(off + num / delta, 6.0, 1.0 / 6.0);
        let wrapped = if h6 < 0.0 { h6 + 1.0 } else { h6 };
        let hue = if wrapped == 0.0 { 0.0 } else { wrapped };
        let grey = delta == 0.0;
        h[i] = if grey { 0.0 } else { hue };
        s[i] = if grey { 0.0 } else { sat };
        v[i] = max;
    }
}

/// `hsv_to_rgb` over planes, the sector chosen by selects (sector 6, reachable only for h = 1, is
/// sector 0 as `% 6` makes it).
#[inline(always)]
fn hsv_to_rgb_planes(h: &[f64], s: &[f64], v: &[f64], [r, g, b]: [&mut [f64]; 3]) {
    let n = h.len();
    let (s, v, r, g, b) = (&s[..n], &v[..n], &mut r[..n], &mut g[..n], &mut b[..n]);
    for i in 0..n {
        let hi = (h[i] * 6.0).floor();
        let f = h[i] * 6.0 - hi;
        let p = v[i] * (1.0 - s[i]);
        let q = v[i] * (1.0 - f * s[i]);
        let t = v[i] * (1.0 - (1.0 - f) * s[i]);
        let k = if hi == 6.0 { 0.0 } else { hi };
        r[i] = if k == 0.0 || k == 5.0 {
            v[i]
        } else if k == 1.0 {
            q
        } else if k == 4.0 {
            t
        } else {
            p
        };
        g[i] = if k == 1.0 || k == 2.0 {
            v[i]
        } else if k == 0.0 {
            t
        } else if k == 3.0 {
            q
        } else {
            p
        };
        b[i] = if k == 3.0 || k == 4.0 {
            v[i]
        } else if k == 2.0 {
            t
        } else if k == 5.0 {
            q
        } else {
            p
        };
    }
}

#[cfg(test)]
mod tests;
