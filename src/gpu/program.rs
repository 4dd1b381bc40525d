//! The CUDA C++ of the GPU kernels (`src/gpu/cuda/`), as one program: `common.cuh` followed by
//! every kernel file, each behind a `#line` directive so that a compiler's message names the file
//! and line it came from. The same text is compiled by NVRTC into PTX ([`super::nvrtc`]) and, in
//! the tests, by the host C++ compiler into a shared library whose kernels run on the CPU.

// Dead code is allowed only in builds where `not(feature = "gpu")`: compiled at run time by NVRTC
// (feature `gpu`); a build without it reads the program only in the unit tests.
#![cfg_attr(not(feature = "gpu"), allow(dead_code))]

/// What every kernel file starts from: types, launch macros, rounding, Philox, float16.
const COMMON: &str = include_str!("cuda/common.cuh");

/// The kernel files, in program order: `(file name, text)`.
const FILES: &[(&str, &str)] = &[
    ("selftest.cu", include_str!("cuda/selftest.cu")),
    ("noise.cu", include_str!("cuda/noise.cu")),
    ("digital.cu", include_str!("cuda/digital.cu")),
    ("jpeg.cu", include_str!("cuda/jpeg.cu")),
    ("blur.cu", include_str!("cuda/blur.cu")),
    ("weather.cu", include_str!("cuda/weather.cu")),
    ("elastic.cu", include_str!("cuda/elastic.cu")),
    ("preprocess.cu", include_str!("cuda/preprocess.cu")),
    ("masks.cu", include_str!("cuda/masks.cu")),
    ("background.cu", include_str!("cuda/background.cu")),
];

/// The whole program: [`COMMON`] then each of [`FILES`].
pub(crate) fn source() -> String {
    let mut s = String::with_capacity(
        COMMON.len() + FILES.iter().map(|(_, t)| t.len() + 64).sum::<usize>() + 64,
    );
    for (name, text) in std::iter::once(&("common.cuh", COMMON)).chain(FILES) {
        s.push_str(&format!("#line 1 \"{name}\"\n"));
        s.push_str(text);
        s.push('\n');
    }
    s
}

/// The names of the program's kernels (every `RS_KERNEL <name>(`), in program order.
#[cfg(test)]
pub(crate) fn kernel_names() -> Vec<&'static str> {
    FILES
        .iter()
        .flat_map(|(_, text)| text.lines())
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("RS_KERNEL ")?;
            rest.split('(').next().map(str::trim)
        })
        .collect()
}
