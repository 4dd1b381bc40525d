//! The CPU's vector instruction sets, detected once per process, and the one test the compiled
//! kernel levels of `kernels::multiversion!` are chosen by.
//!
//! A kernel level names the exact features it is compiled with (`["avx512f", "avx512bw"]`); the same
//! list becomes its `#[target_feature]` attributes and its [`mask`], so a level runs only where the CPU
//! reports every feature it was compiled for. Off x86-64 nothing is detected and only the portable
//! code runs.

// Dead code is allowed only in builds where `not(target_arch = "x86_64")`: the per-level dispatch
// is x86-64 only (`multiversion!`); elsewhere the portable body runs and the levels go unused.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

use std::sync::OnceLock;

/// The features a kernel level may name, each with its bit in a [`mask`].
const NAMES: [&str; 5] = ["avx2", "fma", "avx512f", "avx512bw", "avx512vbmi"];

/// Byte-wise string equality, usable in constants.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The bit set of the named features; evaluated in a constant, so an unknown name stops the build.
pub(crate) const fn mask(features: &[&str]) -> u32 {
    let mut m = 0;
    let mut i = 0;
    while i < features.len() {
        let mut j = 0;
        loop {
            assert!(j < NAMES.len(), "a CPU feature cpu::NAMES does not list");
            if same(features[i], NAMES[j]) {
                m |= 1 << j;
                break;
            }
            j += 1;
        }
        i += 1;
    }
    m
}

/// The [`mask`] of every listed feature this CPU has (and the OS lets programs use), detected on the
/// first call.
fn detected() -> u32 {
    static DETECTED: OnceLock<u32> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let found = [
                std::arch::is_x86_feature_detected!("avx2"),
                std::arch::is_x86_feature_detected!("fma"),
                std::arch::is_x86_feature_detected!("avx512f"),
                std::arch::is_x86_feature_detected!("avx512bw"),
                std::arch::is_x86_feature_detected!("avx512vbmi"),
            ];
            found
                .iter()
                .enumerate()
                .fold(0, |m, (bit, &on)| m | (u32::from(on) << bit))
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            0
        }
    })
}

/// Whether the CPU has every feature of `mask` (a [`mask`] value).
#[inline]
pub(crate) fn has(mask: u32) -> bool {
    detected() & mask == mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_name_their_bits() {
        assert_eq!(mask(&[]), 0);
        assert_eq!(mask(&["avx2"]), 1);
        assert_eq!(mask(&["avx512f", "avx512bw"]), 0b1100);
        assert_eq!(mask(&["fma", "avx2", "fma"]), 0b11);
        assert_eq!(mask(&NAMES), 0b11111);
        assert!(has(0));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn detection_agrees_with_std() {
        let d = detected();
        assert_eq!(d & 1 != 0, std::arch::is_x86_feature_detected!("avx2"));
        assert_eq!(d & 2 != 0, std::arch::is_x86_feature_detected!("fma"));
        assert_eq!(d & 4 != 0, std::arch::is_x86_feature_detected!("avx512f"));
        assert_eq!(d & 8 != 0, std::arch::is_x86_feature_detected!("avx512bw"));
        assert_eq!(
            d & 16 != 0,
            std::arch::is_x86_feature_detected!("avx512vbmi")
        );
    }
}
