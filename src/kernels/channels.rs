//! Byte kernels on interleaved RGB rows, all integer arithmetic (so every instruction set gives the
//! same bytes): exact per-channel sums (contrast's means), per-channel lookup tables (contrast's
//! output) and the 2×2 rounding-average halving (pixelate at f = ½); the AVX-512 VBMI versions use
//! byte permutes across the register.

/// Bytes per block of [`channel_sums`]: 32 pixels (a multiple of 3, so byte `i` of every block is
/// channel `i % 3`).
const SUM_BLOCK: usize = 96;

/// Blocks summed in u16 lanes before they are added to the u64 totals: 256 · 255 = 65 280 < 2¹⁶.
const SUM_FLUSH: usize = 256;

crate::kernels::multiversion! {
    /// Per-channel sums of interleaved RGB bytes (`raw.len()` a multiple of 3), exact integers.
    ///
    /// Each byte position of a 96-byte block has its own u16 accumulator (3 registers of 32 lanes
    /// with AVX-512BW: a zero-extension and an add per 32 bytes), flushed into u64 every
    /// [`SUM_FLUSH`] blocks and folded into the three channels at the end; integer sums, so any
    /// order gives the same result.
    pub(crate) fn channel_sums(raw: &[u8]) -> [u64; 3];
    /// [`channel_sums_body`] compiled for AVX-512F/BW.
    channel_sums_avx512 ["avx512f", "avx512bw"] => channel_sums_body;
    /// [`channel_sums_body`] compiled for AVX2.
    channel_sums_avx2 ["avx2"] => channel_sums_body;
    _ => channel_sums_body;
    levels channel_sums_at;
}

/// The portable body of [`channel_sums`], written so that the block loop vectorises.
#[inline(always)]
fn channel_sums_body(raw: &[u8]) -> [u64; 3] {
    let full = raw.len() / SUM_BLOCK * SUM_BLOCK;
    let mut total = [0u64; SUM_BLOCK];
    for group in raw[..full].chunks(SUM_BLOCK * SUM_FLUSH) {
        let mut acc = [0u16; SUM_BLOCK];
        for block in group.chunks_exact(SUM_BLOCK) {
            for (a, &v) in acc.iter_mut().zip(block) {
                // At most SUM_FLUSH · 255 < 2¹⁶: never wraps.
                *a = a.wrapping_add(u16::from(v));
            }
        }
        for (t, &a) in total.iter_mut().zip(&acc) {
            *t += u64::from(a);
        }
    }
    let mut sums = [0u64; 3];
    for (i, &t) in total.iter().enumerate() {
        sums[i % 3] += t;
    }
    for (i, &v) in raw[full..].iter().enumerate() {
        sums[i % 3] += u64::from(v);
    }
    sums
}

/// `dst[i] = luts[i % 3][src[i]]` (interleaved RGB, `src.len()` a multiple of 3, `dst` as long):
/// [`apply_channel_luts_portable`] is the reference; with AVX-512 VBMI, whole 192-byte blocks go
/// through [`apply_channel_luts_vbmi`] and the rest through the reference.
pub(crate) fn apply_channel_luts(src: &[u8], dst: &mut [u8], luts: &[[u8; 256]; 3]) {
    let n = src.len().min(dst.len());
    let (src, dst) = (&src[..n], &mut dst[..n]);
    #[cfg(target_arch = "x86_64")]
    if has_vbmi() {
        let full = n / LUT_BLOCK * LUT_BLOCK;
        // SAFETY: the CPU supports AVX-512F/BW/VBMI (checked just now); `full` bytes lie in both
        // slices and are whole blocks, as `apply_channel_luts_vbmi` requires.
        unsafe { apply_channel_luts_vbmi(&src[..full], &mut dst[..full], luts) };
        apply_channel_luts_portable(&src[full..], &mut dst[full..], luts);
        return;
    }
    apply_channel_luts_portable(src, dst, luts);
}

/// Bytes per block of [`apply_channel_luts_vbmi`]: three 64-byte registers, 64 pixels.
#[cfg(target_arch = "x86_64")]
const LUT_BLOCK: usize = 192;

/// The reference of [`apply_channel_luts`].
fn apply_channel_luts_portable(src: &[u8], dst: &mut [u8], luts: &[[u8; 256]; 3]) {
    for (s, d) in src.chunks_exact(3).zip(dst.chunks_exact_mut(3)) {
        d[0] = luts[0][usize::from(s[0])];
        d[1] = luts[1][usize::from(s[1])];
        d[2] = luts[2][usize::from(s[2])];
    }
}

/// [`apply_channel_luts`] on whole [`LUT_BLOCK`]s with AVX-512 VBMI. Each 256-entry table sits in four
/// registers; `vpermi2b` looks up 64 bytes in a 128-entry half (index bits 0–6), so each channel takes
/// two merge-masked lookups, one for bytes below 128 and one for the rest, restricted to that channel's
/// byte positions (register `k` of a block starts at byte `64k`, so byte `j` is channel `(k + j) % 3`).
/// The masks are disjoint, so every byte is replaced exactly once, from its original value.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX-512 VBMI; `src.len()` must be a multiple of
/// [`LUT_BLOCK`] and `dst` at least as long.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn apply_channel_luts_vbmi(src: &[u8], dst: &mut [u8], luts: &[[u8; 256]; 3]) {
    use std::arch::x86_64::*;
    debug_assert!(src.len().is_multiple_of(LUT_BLOCK) && dst.len() >= src.len());
    // SAFETY: each table is 256 readable bytes; the loads are unaligned.
    let t: [[__m512i; 4]; 3] = std::array::from_fn(|c| {
        std::array::from_fn(|q| unsafe { _mm512_loadu_si512(luts[c][64 * q..].as_ptr().cast()) })
    });
    let chan: [[__mmask64; 3]; 3] = std::array::from_fn(|k| {
        std::array::from_fn(|c| {
            (0..64)
                .filter(|j| (k + j) % 3 == c)
                .fold(0, |m, j| m | 1 << j)
        })
    });
    let n = src.len() / LUT_BLOCK * LUT_BLOCK;
    let mut off = 0;
    while off < n {
        for (k, chan) in chan.iter().enumerate() {
            let p = off + 64 * k;
            // SAFETY: `p + 64 ≤ n ≤ src.len() ≤ dst.len()`; unaligned load and store.
            unsafe {
                let v = _mm512_loadu_si512(src.as_ptr().add(p).cast());
                let hi = _mm512_movepi8_mask(v);
                let mut r = v;
                for (c, t) in t.iter().enumerate() {
                    r = _mm512_mask2_permutex2var_epi8(t[0], r, chan[c] & !hi, t[1]);
                    r = _mm512_mask2_permutex2var_epi8(t[2], r, chan[c] & hi, t[3]);
                }
                _mm512_storeu_si512(dst.as_mut_ptr().add(p).cast(), r);
            }
        }
        off += LUT_BLOCK;
    }
}

/// One output row of pixelate's exact halving (`digital::pixelate_halving`): source rows `a`, `b`
/// (interleaved RGB, an even number of pixels) → `out[6p + ch] = out[6p + 3 + ch] =
/// avg(avg(a[6p+ch], a[6p+3+ch]), avg(b[6p+ch], b[6p+3+ch]))` with `avg(x, y) = (x + y + 1) >> 1`.
/// AVX-512 VBMI where the CPU has it (`vpermb` swaps the two pixels of each pair, `vpavgb` is
/// exactly `avg`), else portable.
pub(crate) fn halve_row_pair(a: &[u8], b: &[u8], out: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if has_vbmi() {
        // SAFETY: the CPU supports AVX-512F/BW/VBMI (checked just now), all `halve_row_pair_vbmi`
        // needs beyond its slice bounds, which it checks itself.
        unsafe { halve_row_pair_vbmi(a, b, out) };
        return;
    }
    halve_row_pair_portable(a, b, out);
}

/// The reference of [`halve_row_pair`].
fn halve_row_pair_portable(a: &[u8], b: &[u8], out: &mut [u8]) {
    let avg = |x: u8, y: u8| ((u16::from(x) + u16::from(y) + 1) >> 1) as u8;
    for ((pa, pb), po) in a
        .chunks_exact(6)
        .zip(b.chunks_exact(6))
        .zip(out.chunks_exact_mut(6))
    {
        for ch in 0..3 {
            let v = avg(avg(pa[ch], pa[ch + 3]), avg(pb[ch], pb[ch + 3]));
            po[ch] = v;
            po[ch + 3] = v;
        }
    }
}

/// Whether the CPU has AVX-512F, AVX-512BW and AVX-512 VBMI (byte permutes across the register).
#[cfg(target_arch = "x86_64")]
fn has_vbmi() -> bool {
    crate::kernels::cpu_has!("avx512f", "avx512bw", "avx512vbmi")
}

/// [`halve_row_pair`] on 60-byte blocks (ten pixels, five pairs) held in 64-byte registers: masked
/// loads and stores cover exactly the block (the last one may be shorter, always whole pairs), one
/// `vpermb` per row gives each byte its pair partner's byte, and three `vpavgb` do the averaging.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX-512 VBMI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn halve_row_pair_vbmi(a: &[u8], b: &[u8], out: &mut [u8]) {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len()).min(out.len()) / 6 * 6;
    let partner: [u8; 64] = std::array::from_fn(|j| match j {
        60.. => j as u8,
        _ if j % 6 < 3 => (j + 3) as u8,
        _ => (j - 3) as u8,
    });
    // SAFETY: `partner` is 64 readable bytes; the load is unaligned.
    let partner = unsafe { _mm512_loadu_si512(partner.as_ptr().cast()) };
    let mut off = 0;
    while off < n {
        let len = (n - off).min(60);
        let m: __mmask64 = (1u64 << len) - 1;
        // SAFETY: only the `len` bytes from `off` are accessed (`off + len ≤ n` ≤ each slice's
        // length); masked-off bytes are neither read nor written, and cannot fault.
        unsafe {
            let va = _mm512_maskz_loadu_epi8(m, a.as_ptr().add(off).cast());
            let vb = _mm512_maskz_loadu_epi8(m, b.as_ptr().add(off).cast());
            let ha = _mm512_avg_epu8(va, _mm512_permutexvar_epi8(partner, va));
            let hb = _mm512_avg_epu8(vb, _mm512_permutexvar_epi8(partner, vb));
            _mm512_mask_storeu_epi8(out.as_mut_ptr().add(off).cast(), m, _mm512_avg_epu8(ha, hb));
        }
        off += len;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    crate::kernels::levels_agree! {
        fn channel_sums_levels_agree(|level| {
            let raw: Vec<u8> = (0..3 * 40_000).map(|i| (i * 131 % 256) as u8).collect();
            channel_sums_at(level, &raw)
        });
    }

    /// Deterministic pseudo-random bytes (xorshift64*).
    pub(crate) fn noise_bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
            })
            .collect()
    }

    #[test]
    fn channel_sums_are_the_plain_sums() {
        let naive = |raw: &[u8]| {
            let mut s = [0u64; 3];
            for (i, &v) in raw.iter().enumerate() {
                s[i % 3] += u64::from(v);
            }
            s
        };
        // Lengths around the block and flush sizes (96 bytes, 256 blocks), and the all-255 worst case.
        for (k, n) in [
            0,
            3,
            93,
            96,
            99,
            96 * 256,
            96 * 256 + 3,
            96 * 600 + 45,
            300_003,
        ]
        .into_iter()
        .enumerate()
        {
            let raw = noise_bytes(n, k as u64 + 1);
            assert_eq!(channel_sums(&raw), naive(&raw), "{n}");
            assert_eq!(channel_sums_body(&raw), naive(&raw), "{n}");
        }
        let white = vec![255u8; 96 * 1000 + 6];
        assert_eq!(channel_sums(&white), [255 * (32 * 1000 + 2); 3]);
    }

    #[test]
    fn lut_lookups_match_the_reference_for_any_tables() {
        for seed in 0..20u64 {
            let t = noise_bytes(768, 100 + seed);
            let luts: [[u8; 256]; 3] =
                std::array::from_fn(|c| std::array::from_fn(|v| t[256 * c + v]));
            // Every byte value at every channel position, then random lengths (tails included).
            let mut src: Vec<u8> = (0..768).map(|i| (i / 3) as u8).collect();
            src.extend((0..768).map(|i| (255 - i / 3) as u8));
            let n = 3 * (seed as usize * 37 % 500);
            src.extend(noise_bytes(n, seed + 7));
            for len in [0, 3, 189, 192, 195, 381, src.len()] {
                let mut want = vec![0u8; len];
                apply_channel_luts_portable(&src[..len], &mut want, &luts);
                let mut got = vec![1u8; len];
                apply_channel_luts(&src[..len], &mut got, &luts);
                assert_eq!(got, want, "seed {seed} len {len}");
            }
        }
    }

    #[test]
    fn row_halving_matches_the_portable_reference() {
        for pairs in [0usize, 1, 9, 10, 11, 20, 21, 107, 640] {
            let a = noise_bytes(6 * pairs, pairs as u64 + 1);
            let b = noise_bytes(6 * pairs, pairs as u64 + 99);
            let mut want = vec![0u8; 6 * pairs];
            halve_row_pair_portable(&a, &b, &mut want);
            let mut got = vec![7u8; 6 * pairs];
            halve_row_pair(&a, &b, &mut got);
            assert_eq!(got, want, "{pairs} pairs");
        }
        // Edge values: avg(avg(255, 254), avg(0, 1)) = avg(255, 1) = 128.
        let mut o = [0u8; 6];
        halve_row_pair_portable(&[255, 0, 9, 254, 0, 9], &[0, 255, 9, 1, 255, 10], &mut o);
        assert_eq!(o, [128, 128, 10, 128, 128, 10]);
    }
}
