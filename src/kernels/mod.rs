//! Pixel and array kernels: the reusable arithmetic the scenarios are built from (filters, colour
//! conversions, resampling, the JPEG round trip, per-row random streams, OpenCV's 8-bit operations).
//! A kernel knows nothing of scenarios, sources or models; it may use only std, external crates and
//! the keyed random streams of [`crate::rng`].
//!
//! Dispatch rule: a kernel that is faster with wider vectors is written once, as an
//! `#[inline(always)]` body, and compiled per instruction-set level by `multiversion!`; the level is
//! picked at run time from the CPU's features ([`cpu`], detected once), and every level computes the
//! same bits as the portable code (checked by `levels_agree!` tests).

pub mod bicubic;
pub(crate) mod channels;
pub(crate) mod cpu;
pub(crate) mod defocus;
pub(crate) mod edges;
pub(crate) mod filter;
pub(crate) mod gauss_u8;
pub(crate) mod gaussian;
pub(crate) mod glass;
pub(crate) mod hsv;
pub(crate) mod jpeg;
pub(crate) mod lanes;
pub(crate) mod motion;
pub mod opencv;
pub mod resample;
pub(crate) mod rowrng;
pub(crate) mod ziggurat;
pub(crate) mod zoom;

// The macros are named by path (`crate::kernels::multiversion!`) in the modules above and elsewhere.

/// Whether the CPU has every listed feature (names as in [`cpu::mask`], checked when compiling):
/// `cpu_has!("avx512f", "avx512bw")`. For kernels whose dispatch `multiversion!` cannot write
/// (hand-written intrinsics with preconditions of their own).
// Off x86-64 every dispatch is the portable code, so nothing asks: the macro exists on x86-64 only
// (its uses inside `multiversion!` sit in `#[cfg(target_arch = "x86_64")]` blocks).
#[cfg(target_arch = "x86_64")]
macro_rules! cpu_has {
    ($($feat:literal),+ $(,)?) => {
        $crate::kernels::cpu::has(const { $crate::kernels::cpu::mask(&[$($feat),+]) })
    };
}
#[cfg(target_arch = "x86_64")]
pub(crate) use cpu_has;

/// Writes a kernel's run-time dispatch: one `#[target_feature]` wrapper per instruction-set level
/// around an `#[inline(always)]` body, a dispatcher that runs the first level the CPU supports (else
/// the portable body), and a level-indexed entry for tests.
///
/// ```text
/// multiversion! {
///     /// The dispatcher's docs.
///     pub(crate) fn name[T: Copy](out: &mut [T], src: &[T]) -> R where [T: Send];
///     /// A wrapper's docs.
///     name_avx512 ["avx512f", "avx512bw"] => name_body::<32>;
///     name_avx2 ["avx2"] => name_body::<16>;
///     _ => name_body::<8>;
///     levels name_at;
/// }
/// ```
///
/// * The generics (`[…]`), the return type and the `where […]` clause are optional; a method takes
///   `&self` first (then the bodies are paths such as `Self::name_body`).
/// * Levels are listed best first. Each names the exact features it is compiled with: they become its
///   `#[target_feature(enable = …)]` attributes and the [`cpu::mask`] the CPU must cover for the
///   dispatcher to run it. Wrappers exist on x86-64 only; elsewhere the dispatcher is the portable
///   body.
/// * `levels name_at` defines `name_at(level, args…) -> Option<R>`: the portable body at level 0,
///   the `k`-th listed level at `k` when the CPU has its features, `None` otherwise (for
///   `levels_agree!`).
macro_rules! multiversion {
    // A method: `&self` first.
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident $([$($gen:tt)*])? (&self $(, $arg:ident : $ty:ty)* $(,)?)
            $(-> $ret:ty)? $(where [$($wc:tt)*])?;
        $($levels:tt)*
    ) => {
        $crate::kernels::multiversion!(@go
            [$(#[$attr])*] [$vis] $name [$($($gen)*)?]
            (&self $(, $arg: $ty)*) (&self, level: usize $(, $arg: $ty)*)
            (self $(, $arg)*) [Self::] level
            [$($ret)?] [Option<$crate::kernels::multiversion!(@ty $($ret)?)>] [$($($wc)*)?]
            $($levels)*
        );
    };
    // A free function.
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident $([$($gen:tt)*])? ($($arg:ident : $ty:ty),* $(,)?)
            $(-> $ret:ty)? $(where [$($wc:tt)*])?;
        $($levels:tt)*
    ) => {
        $crate::kernels::multiversion!(@go
            [$(#[$attr])*] [$vis] $name [$($($gen)*)?]
            ($($arg: $ty),*) (level: usize $(, $arg: $ty)*)
            ($($arg),*) [] level
            [$($ret)?] [Option<$crate::kernels::multiversion!(@ty $($ret)?)>] [$($($wc)*)?]
            $($levels)*
        );
    };
    (@go
        $attrs:tt $vis:tt $name:ident $gen:tt $sig:tt $at_sig:tt $call:tt $pre:tt $level:ident
        $ret:tt $at_ret:tt $wc:tt
        $(
            $(#[$wattr:meta])*
            $wrapper:ident [$($feat:literal),+ $(,)?] => $body:path;
        )*
        _ => $fallback:path;
        levels $at:ident;
    ) => {
        $crate::kernels::multiversion!(@item $attrs $vis $name $gen $sig $ret $wc {
            #[cfg(target_arch = "x86_64")]
            {
                $(
                    if $crate::kernels::cpu_has!($($feat),+) {
                        // SAFETY: the wrapper is compiled with `#[target_feature]` for exactly the
                        // features of this mask (the same list), and the CPU was just found to have
                        // them all; that is the wrapper's only precondition (it is a safe function).
                        return unsafe { $crate::kernels::multiversion!(@call $pre $wrapper $call) };
                    }
                )*
            }
            $fallback $call
        });

        $(
            $crate::kernels::multiversion!(@item
                [$(#[$wattr])* #[cfg(target_arch = "x86_64")] $(#[target_feature(enable = $feat)])+]
                [] $wrapper $gen $sig $ret $wc { $body $call }
            );
        )*

        $crate::kernels::multiversion!(@item
            [
                #[doc = concat!("`", stringify!($name), "` at a given level (0: the portable code), `None` where this CPU lacks it.")]
                #[allow(dead_code, unused_mut, unused_variables, unused_assignments)]
            ]
            $vis $at $gen $at_sig $at_ret $wc {
                #[cfg(target_arch = "x86_64")]
                {
                    let mut listed = 0usize;
                    $(
                        listed += 1;
                        if $level == listed {
                            if !$crate::kernels::cpu_has!($($feat),+) {
                                return None;
                            }
                            // SAFETY: as in the dispatcher: the CPU has every feature the wrapper is
                            // compiled with (checked just above).
                            return Some(unsafe { $crate::kernels::multiversion!(@call $pre $wrapper $call) });
                        }
                    )*
                }
                if $level == 0 {
                    Some($fallback $call)
                } else {
                    None
                }
            }
        );
    };
    (@item [$($attr:tt)*] [$($vis:tt)*] $name:ident [$($gen:tt)*] $sig:tt [$($ret:ty)?] [$($wc:tt)*] $body:block) => {
        $($attr)*
        $($vis)* fn $name<$($gen)*> $sig $(-> $ret)? where $($wc)* $body
    };
    (@ty) => { () };
    (@ty $ret:ty) => { $ret };
    (@call [$($pre:tt)*] $f:ident $args:tt) => {
        $($pre)* $f $args
    };
}
pub(crate) use multiversion;

/// Defines tests that run a [`multiversion!`] kernel at every level this CPU has (through its
/// `levels name_at` entry) and require each result to equal the portable level's, bit for bit.
///
/// ```text
/// levels_agree! {
///     fn name_levels_agree(|level| {
///         let mut out = vec![0u8; 40];
///         name_at(level, &mut out, &input).map(|()| out)
///     });
/// }
/// ```
///
/// The closure-like body runs once per level with `level` bound and returns `Option<T>` (the `_at`
/// entry's `None` where the level is unavailable; `?` passes it on). Compare floats through
/// `to_bits` so that `-0.0` and `0.0` (or two NaNs) are told apart.
#[cfg(test)]
macro_rules! levels_agree {
    ($(
        $(#[$attr:meta])*
        fn $test:ident(|$level:ident| $run:expr);
    )+) => {$(
        $(#[$attr])*
        #[test]
        fn $test() {
            let run = |$level: usize| $run;
            let want = run(0).expect("the portable level always runs");
            for level in 1..8usize {
                if let Some(got) = run(level) {
                    assert!(got == want, "level {level} differs from the portable code");
                }
            }
        }
    )+};
}
#[cfg(test)]
pub(crate) use levels_agree;

/// Inputs the kernels' tests share.
#[cfg(test)]
pub(crate) mod test_inputs {
    /// Seven rows of 203 values in [0, 1).
    pub(crate) fn rows() -> Vec<Vec<f64>> {
        (0..7)
            .map(|t| {
                (0..203)
                    .map(|i| ((i * 37 + t * 11) % 97) as f64 / 97.0)
                    .collect()
            })
            .collect()
    }

    /// The bits of each value (so `-0.0` and `0.0`, or two NaNs, are told apart).
    pub(crate) fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Random-ish u8 image of `w × h × ch` (a fixed LCG from `seed`).
    pub(crate) fn noise_image(w: usize, h: usize, ch: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..w * h * ch)
            .map(|_| {
                s = s
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (s >> 56) as u8
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    crate::kernels::multiversion! {
        /// Sums pairs, as a dispatched kernel would.
        fn pair_sums(out: &mut [u32], a: &[u32], b: &[u32]) -> usize;
        pair_sums_avx512 ["avx512f", "avx512bw"] => pair_sums_body;
        pair_sums_avx2 ["avx2"] => pair_sums_body;
        _ => pair_sums_body;
        levels pair_sums_at;
    }

    #[inline(always)]
    fn pair_sums_body(out: &mut [u32], a: &[u32], b: &[u32]) -> usize {
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            *o = x.wrapping_add(y);
        }
        out.len()
    }

    struct Scale(f32);

    impl Scale {
        crate::kernels::multiversion! {
            /// Scales a slice, as a dispatched method would.
            fn apply[T: Copy + Into<f32>, O](&self, out: &mut [O], src: &[T]) where [O: From<f32>];
            apply_avx2 ["avx2", "fma"] => Self::apply_body;
            _ => Self::apply_body;
            levels apply_at;
        }

        #[inline(always)]
        fn apply_body<T: Copy + Into<f32>, O: From<f32>>(&self, out: &mut [O], src: &[T]) {
            for (o, &v) in out.iter_mut().zip(src) {
                *o = O::from(v.into() * self.0);
            }
        }
    }

    #[test]
    fn the_dispatcher_runs_the_body() {
        let a: Vec<u32> = (0..100).collect();
        let mut out = vec![0; 100];
        assert_eq!(pair_sums(&mut out, &a, &a), 100);
        assert_eq!(out[99], 198);
        let mut f = vec![0.0f64; 3];
        Scale(0.5).apply(&mut f, &[2u8, 4, 6]);
        assert_eq!(f, [1.0, 2.0, 3.0]);
        assert!(pair_sums_at(9, &mut out, &a, &a).is_none());
    }

    crate::kernels::levels_agree! {
        fn pair_sums_levels_agree(|level| {
            let a: Vec<u32> = (0..1000).map(|i| i * 7919).collect();
            let b: Vec<u32> = (0..1000).map(|i| u32::MAX - i).collect();
            let mut out = vec![0; 1000];
            pair_sums_at(level, &mut out, &a, &b).map(|n| (n, out))
        });
        fn methods_levels_agree(|level| {
            let src: Vec<u8> = (0..=255).collect();
            let mut out = vec![0.0f32; 256];
            Scale(0.1).apply_at(level, &mut out, &src).map(|()| out.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
        });
    }
}
