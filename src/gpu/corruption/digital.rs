//! Digital corruptions (`cuda/digital.cu`; CPU: `scenario/corruption/digital.rs`).

use super::Job;
use crate::gpu::GpuError;
use crate::gpu::launch::{Args, Launcher, REDUCE_THREADS};
use crate::kernels::resample::{self, Filter};
use crate::scenario::corruption::digital;

/// The digital corruptions with kernels here (jpeg_compression: `digital_jpeg.rs`).
#[derive(Debug, Clone, Copy)]
pub(super) enum Digital {
    /// `contrast`.
    Contrast,
    /// `brightness`.
    Brightness,
    /// `saturate`.
    Saturate,
    /// `pixelate`.
    Pixelate,
}

pub(super) fn corrupt<L: Launcher>(l: &mut L, which: Digital, j: &Job) -> Result<(), GpuError> {
    let n = j.src.elements();
    let (src, dst) = (l.address(j.src.buf), l.address(j.dst.buf));
    match which {
        Digital::Contrast => {
            let pixels = n / 3;
            let sums = l.scratch(0, 3 * 8)?;
            l.zero(sums, 3 * 8)?;
            let luts = l.scratch(1, 768)?;
            let (sums, luts) = (l.address(sums), l.address(luts));
            let args = Args::buffers(&[src, sums]).ints(&[pixels as i64]);
            l.launch("rs_channel_sums", pixels.min(REDUCE_THREADS), &args)?;
            let args = Args::buffers(&[sums, luts])
                .ints(&[pixels as i64])
                .doubles(&[digital::CONTRAST_FACTOR[j.s]]);
            l.launch("rs_contrast_luts", 768, &args)?;
            let args = Args::buffers(&[src, dst, luts]).ints(&[n as i64]);
            l.launch("rs_apply_channel_luts", n, &args)
        }
        Digital::Brightness => {
            let args = Args::buffers(&[src, dst])
                .ints(&[(n / 3) as i64, 1])
                .doubles(&[digital::BRIGHTNESS_DELTA[j.s]]);
            l.launch("rs_hsv_edit", n / 3, &args)
        }
        Digital::Saturate => {
            let p = digital::SATURATE_SCALE_OFFSET[j.s];
            let args = Args::buffers(&[src, dst])
                .ints(&[(n / 3) as i64, 0])
                .doubles(&[p.scale, p.offset]);
            l.launch("rs_hsv_edit", n / 3, &args)
        }
        Digital::Pixelate => {
            let (w, h) = (j.src.width, j.src.height);
            if n == 0 {
                return Ok(());
            }
            let (sw, sh) = digital::pixelate_size(w, h, digital::PIXELATE_FACTOR[j.s]);
            let small = l.scratch(1, sw as usize * sh as usize * 3)?;
            let small = l.address(small);
            resize_box(l, (src, w, h), (small, sw, sh))?;
            resize_box(l, (small, sw, sh), (dst, w, h))
        }
    }
}

/// Pillow 13 `resize(BOX)` of the RGB image at `src` (`sw × sh`) into `dst` (`dw × dh`), as
/// `kernels::resample` does it: the axes that change, each one launch with the CPU's coefficient
/// table, in Pillow's order, through scratch slot 0 when both change (an unchanged size is copied).
fn resize_box<L: Launcher>(
    l: &mut L,
    (src, sw, sh): (u64, u32, u32),
    (dst, dw, dh): (u64, u32, u32),
) -> Result<(), GpuError> {
    let bytes = |w: u32, h: u32| u64::from(w) * u64::from(h) * 3;
    let table = |l: &mut L, from: u32, to: u32| -> Result<u64, GpuError> {
        let mut make = || {
            resample::conv_table(from, to, Filter::Box)
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect()
        };
        let t = l.constant(&format!("pixelate/box/{from}/{to}"), &mut make)?;
        Ok(l.address(t))
    };
    let horizontal = |l: &mut L, t: u64, from: u64, to: u64, rows: u32| {
        let args =
            Args::buffers(&[from, to, t]).ints(&[i64::from(dw), i64::from(rows), i64::from(sw)]);
        l.launch("rs_pixelate_h", bytes(dw, rows), &args)
    };
    let vertical = |l: &mut L, t: u64, from: u64, to: u64, cols: u32| {
        let args = Args::buffers(&[from, to, t]).ints(&[i64::from(dh), i64::from(cols)]);
        l.launch("rs_pixelate_v", bytes(cols, dh), &args)
    };
    match (sw != dw, sh != dh) {
        (false, false) => {
            let args = Args::buffers(&[src, dst]).ints(&[bytes(sw, sh) as i64]);
            l.launch("rs_copy_bytes", bytes(sw, sh), &args)
        }
        (true, false) => {
            let th = table(l, sw, dw)?;
            horizontal(l, th, src, dst, sh)
        }
        (false, true) => {
            let tv = table(l, sh, dh)?;
            vertical(l, tv, src, dst, sw)
        }
        (true, true) => {
            let (th, tv) = (table(l, sw, dw)?, table(l, sh, dh)?);
            let (sw_, sh_, dw_, dh_) = (sw as usize, sh as usize, dw as usize, dh as usize);
            if resample::vertical_first(sw_, sh_, dw_, dh_) {
                let tmp = l.scratch(0, bytes(sw, dh) as usize)?;
                let tmp = l.address(tmp);
                vertical(l, tv, src, tmp, sw)?;
                horizontal(l, th, tmp, dst, dh)
            } else {
                let tmp = l.scratch(0, bytes(dw, sh) as usize)?;
                let tmp = l.address(tmp);
                horizontal(l, th, src, tmp, sh)?;
                vertical(l, tv, tmp, dst, dw)
            }
        }
    }
}
