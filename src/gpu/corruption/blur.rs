//! Blur corruptions (`cuda/blur.cu`; CPU: `scenario/corruption/blur.rs`,
//! docs/gpu.md#gpu-resident-scenarios). The kernels' tables (Gaussian weights, disk taps, zoom
//! interpolation) come from the CPU kernels' own functions, uploaded once per launcher.

use super::Job;
use crate::gpu::GpuError;
use crate::gpu::launch::{Args, Buf, DeviceImage, Launcher};
use crate::kernels::{defocus, gaussian, glass, zoom};
use crate::scenario::corruption::blur;

/// The blur corruptions with kernels.
#[derive(Debug, Clone, Copy)]
pub(super) enum Blur {
    /// `gaussian_blur`.
    Gaussian,
    /// `defocus_blur`.
    Defocus,
    /// `motion_blur`.
    Motion,
    /// `zoom_blur`.
    Zoom,
    /// `glass_blur`.
    Glass,
}

/// Scratch slots (the tests read [`MOTION_TAPS`] by its number, 6): the unit-scale image (f64 or f32), the vertical Gaussian pass (f64), two byte
/// images (glass_blur), two link arrays (glass_blur's walk), the motion taps.
const UNIT: usize = 0;
const VERTICAL: usize = 1;
const BYTES_A: usize = 2;
const BYTES_B: usize = 3;
const LINKS_A: usize = 4;
const LINKS_B: usize = 5;
const MOTION_TAPS: usize = 6;

/// Doubles of the motion taps buffer: angle, count, then three per tap (up to 2·radius + 1).
fn motion_taps_len(radius: usize) -> usize {
    2 + 3 * (2 * radius + 1)
}

pub(super) fn corrupt<L: Launcher>(l: &mut L, which: Blur, j: &Job) -> Result<(), GpuError> {
    if j.src.elements() == 0 {
        return Ok(());
    }
    match which {
        Blur::Gaussian => {
            let sigma = blur::GAUSSIAN_BLUR_SIGMA[j.s];
            gaussian(
                l,
                j.src.buf,
                j.dst.buf,
                j.src,
                sigma,
                blur::GAUSSIAN_BLUR_TRUNCATE,
            )
        }
        Blur::Defocus => {
            let p = blur::DEFOCUS_BLUR[j.s];
            defocus(l, j, p.radius, p.alias_blur)
        }
        Blur::Motion => {
            let p = blur::MOTION_BLUR[j.s];
            motion(l, j, p.radius, p.sigma, None)
        }
        Blur::Zoom => zoom(l, j),
        Blur::Glass => {
            let p = blur::GLASS_BLUR[j.s];
            glass(l, j, p.sigma, p.max_delta, p.iterations)
        }
    }
}

/// `(w, h)` of an image as launch integers.
fn wh(img: DeviceImage) -> (i64, i64) {
    (i64::from(img.width), i64::from(img.height))
}

/// scipy `gaussian_filter(x/255, (σ, σ, 0), mode='nearest', truncate)` then floor8(clip) from `src`
/// into `dst` (both `img`'s size): the unit-scale image, the vertical pass and the horizontal pass,
/// through scratch slots [`UNIT`] and [`VERTICAL`].
fn gaussian<L: Launcher>(
    l: &mut L,
    src: Buf,
    dst: Buf,
    img: DeviceImage,
    sigma: f64,
    truncate: f64,
) -> Result<(), GpuError> {
    let n = img.elements();
    let (w, h) = wh(img);
    let radius = gaussian::gaussian_radius(sigma, truncate);
    let weights = l.constant(
        &format!("blur/gaussian_half/{sigma}/{truncate}"),
        &mut || {
            let k = gaussian::gaussian_kernel1d(sigma, truncate);
            k[k.len() / 2..]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect()
        },
    )?;
    let unit = l.scratch(UNIT, n as usize * 8)?;
    let vertical = l.scratch(VERTICAL, n as usize * 8)?;
    let (src, dst, weights, unit, vertical) = (
        l.address(src),
        l.address(dst),
        l.address(weights),
        l.address(unit),
        l.address(vertical),
    );
    l.launch(
        "rs_unit_f64",
        n,
        &Args::buffers(&[src, unit]).ints(&[n as i64]),
    )?;
    let ints = [w, h, radius as i64];
    l.launch(
        "rs_gauss_rows",
        n,
        &Args::buffers(&[unit, vertical, weights]).ints(&ints),
    )?;
    l.launch(
        "rs_gauss_cols",
        n,
        &Args::buffers(&[vertical, dst, weights]).ints(&ints),
    )
}

/// defocus_blur: the disk kernel's non-zero taps (`RsTap`: f64 weight, i32 dx, i32 dy) correlated
/// with the unit-scale image under reflect-101.
fn defocus<L: Launcher>(l: &mut L, j: &Job, radius: usize, alias: f64) -> Result<(), GpuError> {
    let n = j.src.elements();
    let (w, h) = wh(j.src);
    let (kernel, side) = defocus::disk_kernel(radius, alias);
    let taps = kernel.iter().filter(|&&v| v != 0.0).count();
    let table = l.constant(&format!("blur/defocus_taps/{radius}/{alias}"), &mut || {
        let half = (side / 2) as i32;
        let mut out = Vec::with_capacity(taps * 16);
        for (i, &v) in kernel.iter().enumerate() {
            if v != 0.0 {
                out.extend(v.to_le_bytes());
                out.extend(((i % side) as i32 - half).to_le_bytes());
                out.extend(((i / side) as i32 - half).to_le_bytes());
            }
        }
        out
    })?;
    let unit = l.scratch(UNIT, n as usize * 8)?;
    let (src, dst, table, unit) = (
        l.address(j.src.buf),
        l.address(j.dst.buf),
        l.address(table),
        l.address(unit),
    );
    l.launch(
        "rs_unit_f64",
        n,
        &Args::buffers(&[src, unit]).ints(&[n as i64]),
    )?;
    l.launch(
        "rs_filter2d_reflect101",
        n,
        &Args::buffers(&[unit, dst, table]).ints(&[w, h, taps as i64]),
    )
}

/// motion_blur: the taps (angle drawn from Philox keyed by the variant's key, or `angle` in degrees
/// when given), then the streak.
pub(super) fn motion<L: Launcher>(
    l: &mut L,
    j: &Job,
    radius: usize,
    sigma: f64,
    angle: Option<f64>,
) -> Result<(), GpuError> {
    let n = j.src.elements();
    let (w, h) = wh(j.src);
    let taps = l.scratch(MOTION_TAPS, motion_taps_len(radius) * 8)?;
    let (src, dst, taps) = (l.address(j.src.buf), l.address(j.dst.buf), l.address(taps));
    let args = Args::buffers(&[taps])
        .ints(&[
            j.key.0 as i64,
            radius as i64,
            w,
            h,
            i64::from(angle.is_some()),
        ])
        .doubles(&[sigma, angle.unwrap_or(0.0)]);
    l.launch("rs_motion_taps", 1, &args)?;
    l.launch(
        "rs_motion_streak",
        n,
        &Args::buffers(&[src, dst, taps]).ints(&[w, h]),
    )
}

/// zoom_blur: per factor, the column and row interpolation taps of imagecorruptions' clipped zoom
/// (`RsZoomTap`: i32 lo, i32 hi, f64 t; lo = −1 past the zoomed crop), then one kernel that sums
/// every factor per output element.
fn zoom<L: Launcher>(l: &mut L, j: &Job) -> Result<(), GpuError> {
    let n = j.src.elements();
    let (w, h) = wh(j.src);
    let blur::ZoomArange { stop, step } = blur::ZOOM_BLUR_ARANGE[j.s];
    let factors = blur::zoom_factors(stop, step);
    let (wu, hu) = (j.src.width as usize, j.src.height as usize);
    let table = l.constant(&format!("blur/zoom_taps/{}/{wu}x{hu}", j.s), &mut || {
        let mut out = Vec::with_capacity(factors.len() * (wu + hu) * 16);
        for &z in &factors {
            for len in [wu, hu] {
                let (crop, offset, zoomed) = zoom::clipped_zoom_axis(len, z);
                let taps = zoom::zoom_axis(crop, zoomed, offset, len.min(zoomed));
                for k in 0..len {
                    let (lo, hi, t) = taps
                        .get(k)
                        .map_or((-1, -1, 0.0), |&(lo, hi, t)| (lo as i32, hi as i32, t));
                    out.extend(lo.to_le_bytes());
                    out.extend(hi.to_le_bytes());
                    out.extend(t.to_le_bytes());
                }
            }
        }
        out
    })?;
    let unit = l.scratch(UNIT, n as usize * 4)?;
    let (src, dst, table, unit) = (
        l.address(j.src.buf),
        l.address(j.dst.buf),
        l.address(table),
        l.address(unit),
    );
    l.launch(
        "rs_unit_f32",
        n,
        &Args::buffers(&[src, unit]).ints(&[n as i64]),
    )?;
    l.launch(
        "rs_zoom_blur",
        n,
        &Args::buffers(&[unit, dst, table]).ints(&[w, h, factors.len() as i64]),
    )
}

/// glass_blur: Gaussian into bytes, `iterations` walks (links drawn from Philox, resolved by pointer
/// jumping, gathered), Gaussian again into `dst`.
fn glass<L: Launcher>(
    l: &mut L,
    j: &Job,
    sigma: f64,
    delta: usize,
    iterations: usize,
) -> Result<(), GpuError> {
    let n = j.src.elements();
    let pixels = n / 3;
    let (w, h) = wh(j.src);
    if pixels > i32::MAX as u64 {
        return Err(GpuError::Launch(format!(
            "glass_blur: {w}×{h} has more pixels than the walk's 32-bit links address"
        )));
    }
    let a = l.scratch(BYTES_A, n as usize)?;
    let b = l.scratch(BYTES_B, n as usize)?;
    gaussian(l, j.src.buf, a, j.src, sigma, glass::TRUNCATE)?;
    let walked =
        delta > 0 && j.src.width as usize > 2 * delta + 1 && j.src.height as usize > 2 * delta + 1;
    let (mut cur, mut next) = (a, b);
    if walked {
        let la = l.scratch(LINKS_A, pixels as usize * 4)?;
        let lb = l.scratch(LINKS_B, pixels as usize * 4)?;
        // Chains are at most as long as the walked pixels: enough doublings to span them.
        let rounds = 64 - (pixels.max(1)).leading_zeros() as usize;
        for it in 0..iterations {
            let (mut from, mut to) = (l.address(la), l.address(lb));
            let args =
                Args::buffers(&[from]).ints(&[w, h, delta as i64, j.key.0 as i64, it as i64]);
            l.launch("rs_glass_links", pixels, &args)?;
            for _ in 0..rounds {
                let args = Args::buffers(&[from, to]).ints(&[pixels as i64]);
                l.launch("rs_glass_jump", pixels, &args)?;
                std::mem::swap(&mut from, &mut to);
            }
            let args =
                Args::buffers(&[l.address(cur), l.address(next), from]).ints(&[pixels as i64]);
            l.launch("rs_glass_gather", n, &args)?;
            std::mem::swap(&mut cur, &mut next);
        }
    }
    gaussian(l, cur, j.dst.buf, j.src, sigma, glass::TRUNCATE)
}
