//! Small helpers of the fast kernels.
//!
//! * The reference's float → u8 conversion ([`floor8_unit`]), and the same conversions for loops
//!   meant to vectorise. Rust's `as` casts from float to integer saturate and map NaN to 0, which the
//!   compiler implements with per-element checks that stop vectorisation; the conversions here clamp
//!   first (NaN included) and then truncate without checks, giving the same results.
//! * A register-blocked weighted sum of shifted rows (the core of the streak filters).
//! * [`in_pool`]: enter rayon's pool once per kernel instead of once per parallel loop.

/// Runs `f` on a thread of rayon's pool: directly when already on one, otherwise by handing the whole
/// of `f` to the pool once (`rayon::scope`), so that every parallel loop inside `f` starts on a worker
/// instead of each handing its work over and waiting. A kernel with several parallel stages saves one
/// cross-thread round trip per stage (measured on 224² frames with one thread: 5–30 % of the call).
/// Results are unaffected.
pub(crate) fn in_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        f()
    } else {
        rayon::scope(|_| f())
    }
}

/// Runs `f(parallel)`: with `parallel = false` right here when rayon's pool has a single thread and
/// this thread is not in it, otherwise inside the pool ([`in_pool`]) with `parallel = true`. Handing a
/// kernel to a lone worker and waiting for it buys nothing and costs a cross-thread round trip (a
/// wake-up each way: 0.05–0.1 ms per call on this VM, criterion's wall time against the same call's
/// CPU time — as much as a whole 224² HSV call). `f` must compute the same bytes either way (use
/// [`chunks_each`] for its loops).
pub(crate) fn in_pool_or_here<R: Send>(f: impl FnOnce(bool) -> R + Send) -> R {
    if rayon::current_thread_index().is_none() && rayon::current_num_threads() == 1 {
        f(false)
    } else {
        in_pool(|| f(true))
    }
}

/// A copy of `image`'s bytes with `each(first_row, row_len, rows)` applied to tasks of whole rows of
/// about `elements_per_task` bytes (at least one row; `first_row` is the index of the task's first row,
/// `row_len` the bytes per row): on rayon's pool, or in order on this thread when the pool has one
/// thread ([`in_pool_or_here`]). `each` must not depend on how rows are grouped. Any size, including
/// empty (returned as is).
pub(crate) fn map_row_tasks<F>(
    image: &image::RgbImage,
    elements_per_task: usize,
    each: F,
) -> image::RgbImage
where
    F: Fn(u64, usize, &mut [u8]) + Sync,
{
    in_pool_or_here(|parallel| {
        let (w, h) = image.dimensions();
        let row_len = w as usize * 3;
        if row_len == 0 || h == 0 {
            return image.clone();
        }
        let mut out = image.as_raw().clone();
        let rows_per_task = (elements_per_task / row_len).max(1);
        chunks_each(&mut out, row_len * rows_per_task, parallel, |task, rows| {
            each((task * rows_per_task) as u64, row_len, rows)
        });
        image::RgbImage::from_raw(w, h, out).expect("same size as the input buffer")
    })
}

/// `f(index, piece)` for every `len`-element piece of `data` (the last may be shorter): on rayon's
/// pool when `parallel`, in order on this thread otherwise.
pub(crate) fn chunks_each<T: Send>(
    data: &mut [T],
    len: usize,
    parallel: bool,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    use rayon::prelude::*;
    if parallel {
        data.par_chunks_mut(len)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    } else {
        data.chunks_mut(len).enumerate().for_each(|(i, c)| f(i, c));
    }
}

/// `v as u8` for any f64 `v` (truncation toward zero, saturating at 0 and 255, NaN → 0), in a form that
/// vectorises.
#[inline(always)]
pub(crate) fn trunc_u8(v: f64) -> u8 {
    let v = if v > 0.0 { v } else { 0.0 }; // NaN → 0
    let v = if v < 255.0 { v } else { 255.0 };
    // SAFETY: `v` is in [0, 255] here (finite), so it is representable as i32 after truncation.
    unsafe { v.to_int_unchecked::<i32>() as u8 }
}

/// `np.uint8(clip(v, 0, 1) * 255)`: clip on the [0, 1] scale, scale, truncate
/// (docs/imagenet-c.md#value-ranges-and-rounding).
#[inline(always)]
pub(crate) fn floor8_unit(v: f64) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0) as u8
}

/// [`floor8_unit`]: `(clip(v, 0, 1)·255) as u8`, vectorisable.
#[inline(always)]
pub(crate) fn floor8(v: f64) -> u8 {
    let v = if v > 0.0 { v } else { 0.0 }; // NaN → 0
    let v = if v < 1.0 { v } else { 1.0 };
    // SAFETY: `v·255` is in [0, 255] here (finite), so it is representable as i32 after truncation.
    unsafe { (v * 255.0).to_int_unchecked::<i32>() as u8 }
}

/// `(clip(v, 0, 1)·255) as u8` in f32 (zoom_blur's float32 arithmetic), vectorisable.
#[inline(always)]
pub(crate) fn floor8_f32(v: f32) -> u8 {
    let v = if v > 0.0 { v } else { 0.0 }; // NaN → 0
    let v = if v < 1.0 { v } else { 1.0 };
    // SAFETY: `v·255` is in [0, 255] here (finite), so it is representable as i32 after truncation.
    unsafe { (v * 255.0).to_int_unchecked::<i32>() as u8 }
}

/// `out[i] = Σ_t w_t · src_t[i]` over the taps `(w_t, src_t)` in order, starting from 0 (so exactly the
/// sum a per-element loop over the taps gives). Blocks of 8 outputs stay in registers across all taps.
/// Every `src_t` must be at least `out.len()` long. Inline it into code compiled for the wanted
/// instruction set.
#[inline(always)]
pub(crate) fn accumulate_taps(out: &mut [f64], taps: &[(f64, &[f64])]) {
    const B: usize = 8;
    let n = out.len();
    let full = n / B * B;
    for s in (0..full).step_by(B) {
        let mut acc = [0.0f64; B];
        for &(w, src) in taps {
            let v: &[f64; B] = src[s..s + B].try_into().expect("block");
            for l in 0..B {
                acc[l] += w * v[l];
            }
        }
        out[s..s + B].copy_from_slice(&acc);
    }
    for (i, o) in out.iter_mut().enumerate().skip(full) {
        *o = taps.iter().fold(0.0, |acc, &(w, src)| acc + w * src[i]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agree_with_the_saturating_casts() {
        let mut probes = vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            -1e-300,
            1.0,
            1.0 + 1e-15,
            254.999_999,
            255.0,
            255.5,
            1e10,
            -1e10,
        ];
        probes.extend((0..20_000).map(|i| f64::from(i) * 0.0137 - 10.0));
        probes.extend((0..=255).map(|v| f64::from(v) / 255.0));
        for v in probes {
            assert_eq!(trunc_u8(v), v as u8, "{v}");
            assert_eq!(trunc_u8(v * 255.0), (v * 255.0) as u8, "{v}");
            assert_eq!(floor8(v), floor8_unit(v), "{v}");
            let f = v as f32;
            assert_eq!(floor8_f32(f), (f.clamp(0.0, 1.0) * 255.0) as u8, "{f}");
        }
    }

    #[test]
    fn floor8_truncates_and_clips() {
        assert_eq!(floor8_unit(-0.2), 0);
        assert_eq!(floor8_unit(1.7), 255);
        assert_eq!(floor8_unit(0.999), 254);
        assert_eq!(floor8_unit(100.9 / 255.0), 100);
    }

    #[test]
    fn accumulate_taps_is_the_ordered_sum() {
        let rows: Vec<Vec<f64>> = (0..5)
            .map(|t| {
                (0..29)
                    .map(|i| ((i * 7 + t * 3) % 11) as f64 * 0.37 + 0.1)
                    .collect()
            })
            .collect();
        let taps: Vec<(f64, &[f64])> = rows
            .iter()
            .enumerate()
            .map(|(t, r)| (0.1 + t as f64 * 0.213, r.as_slice()))
            .collect();
        let mut out = vec![0.0; 29];
        accumulate_taps(&mut out, &taps);
        for (i, &o) in out.iter().enumerate() {
            let mut want = 0.0;
            for &(w, r) in &taps {
                want += w * r[i];
            }
            assert_eq!(o, want, "{i}");
        }
    }
}
