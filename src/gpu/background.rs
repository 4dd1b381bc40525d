//! Mask-based scenarios on the GPU (`cuda/background.cu`, docs/gpu.md#mask-based-scenarios): the
//! IN-9 and XIMAGENET-12 background variations (`scenario/background/`) that need only the frame,
//! its foreground mask and its object box, with the CPU scenario's own rules for the box
//! (`in9::object_box`, `in9::tile_strip`), so both paths give the same bytes.
//!
//! On the GPU: `only_fg`, `no_fg`, `only_bg_b`, `only_bg_t` (IN-9), `segmented`, `transparent`,
//! `transparent_on/<matte>` and `color_*` (XIMAGENET-12; the random hue of `color_r`, `color_g`,
//! `color_b` and `color_rainbow` drawn from Philox like [`Colour::draw`], the recolouring OpenCV's,
//! as `opencv::recolour`). They keep the frame's size. The others stay on the CPU ([`on_gpu`] is
//! false): the pool's (`mixed_*`, `random_bg_*`, whose variants can have the background's size) and
//! the OpenCV blurs (`blur_*`, `bright_*`); so do the Corner Cases placements.

use image::GrayImage;

use super::GpuError;
use super::launch::{Args, Buf, DeviceImage, Launcher};
use crate::frame::BBox;
use crate::kernels::opencv::HueEdit;
use crate::rng::RngKey;
use crate::scenario::Scenario;
use crate::scenario::background::{Background, Colour, Kind, in9};

/// Whether `s` is a background scenario with GPU kernels (see the module doc).
pub(crate) fn on_gpu(s: &dyn Scenario) -> bool {
    s.as_background().is_some_and(|b| {
        matches!(
            b.kind(),
            Kind::OnlyFg
                | Kind::NoFg
                | Kind::OnlyBgB
                | Kind::OnlyBgT
                | Kind::Segmented
                | Kind::Transparent(_)
                | Kind::Colour(_)
        )
    })
}

/// Writes the variant of background scenario `s` of the frame `src` into `dst` (the same size:
/// every variation on the GPU keeps the frame's size).
///
/// `mask` is the frame's mask as the CPU scenario gets it (`ScenarioInput::mask_for(s.mask_resize())`)
/// twice: on the host, for the CPU scenario's checks and its tight box, and its copy in a device
/// buffer of `width × height` bytes that the caller uploaded; `boxes` are the frame's boxes. `key`
/// is the variant's key (the hue of the random `color_*` is drawn from it).
///
/// `Ok(false)`, leaving `dst` untouched, when [`on_gpu`] is false or where the CPU scenario refuses
/// the frame (no mask or box, an empty mask, a mask of another size, no background strip for
/// `only_bg_t`): the caller then runs the CPU scenario, which reports why.
pub(crate) fn apply<L: Launcher>(
    l: &mut L,
    s: &dyn Scenario,
    src: DeviceImage,
    mask: Option<(&GrayImage, Buf)>,
    boxes: &[BBox],
    dst: DeviceImage,
    key: RngKey,
) -> Result<bool, GpuError> {
    let Some(kind) = s.as_background().map(Background::kind) else {
        return Ok(false);
    };
    if !on_gpu(s) {
        return Ok(false);
    }
    let (w, h) = (src.width, src.height);
    if (w, h) != (dst.width, dst.height) {
        return Err(GpuError::Launch(format!(
            "{}: {w}×{h} into {}×{}",
            s.key(),
            dst.width,
            dst.height
        )));
    }
    // The CPU scenario refuses a mask of another size than the frame.
    if mask.is_some_and(|(m, _)| m.dimensions() != (w, h)) {
        return Ok(false);
    }
    let n = src.elements();
    let (sa, da) = (l.address(src.buf), l.address(dst.buf));
    match kind {
        Kind::OnlyBgB | Kind::OnlyBgT => {
            let host = mask.map(|(m, _)| m);
            if host.is_none() && boxes.is_empty() {
                return Ok(false);
            }
            let Some(b) = in9::object_box((w, h), host, boxes) else {
                return Ok(false);
            };
            let pair = |lo: u32, hi: u32| i64::from(lo) | (i64::from(hi) << 32);
            let (b, strip) = match (kind, in9::clip_box(b, w, h)) {
                (Kind::OnlyBgT, Some(b)) => match in9::tile_strip(w, h, b) {
                    Some(t) => (b, Some(t)),
                    None => return Ok(false),
                },
                (Kind::OnlyBgT, None) => return Ok(false),
                (_, Some(b)) => (b, None),
                // only_bg_b of a box outside the image: the image itself.
                (_, None) => (BBox::new(0, 0, 0, 0), None),
            };
            let t = strip.unwrap_or(BBox::new(0, 0, 0, 0));
            let args = Args::buffers(&[sa, da]).ints(&[
                n as i64,
                i64::from(w),
                pair(b.x0, b.x1),
                pair(b.y0, b.y1),
                pair(t.x0, t.x1 - t.x0),
                pair(t.y0, t.y1 - t.y0),
                i64::from(strip.is_some()),
            ]);
            l.launch("rs_bg_box", n, &args)?;
        }
        _ => {
            // Every other variation needs a non-empty mask, as the CPU scenario's.
            let Some((m, mbuf)) = mask else {
                return Ok(false);
            };
            if m.as_raw().iter().all(|&v| v == 0) {
                return Ok(false);
            }
            let ma = l.address(mbuf);
            let (kernel, ints): (&'static str, [i64; 5]) = match kind {
                Kind::OnlyFg => ("rs_bg_weight", [n as i64, 0, 0, 0, 0]),
                Kind::NoFg => ("rs_bg_weight", [n as i64, 1, 0, 0, 0]),
                Kind::Segmented => ("rs_bg_outside", [n as i64, 0, 0, 0, 0]),
                Kind::Colour(Colour::Grey) => ("rs_bg_outside", [n as i64, 1, 0, 0, 0]),
                Kind::Colour(c) => {
                    recolour(l, (src, mbuf, dst), Hue::Draw(c, key))?;
                    return Ok(true);
                }
                Kind::Transparent(Some([r, g, b])) => (
                    "rs_bg_outside",
                    [n as i64, 0, i64::from(r), i64::from(g), i64::from(b)],
                ),
                // Alpha dropped: the frame itself (rs_bg_box with an empty box copies).
                Kind::Transparent(None) => {
                    let args = Args::buffers(&[sa, da]).ints(&[n as i64, i64::from(w)]);
                    l.launch("rs_bg_box", n, &args)?;
                    return Ok(true);
                }
                other => unreachable!("{other:?} is not on the GPU"),
            };
            let args = Args::buffers(&[sa, ma, da]).ints(&ints);
            l.launch(kernel, n, &args)?;
        }
    }
    Ok(true)
}

/// The hue edit of [`recolour`]: drawn on the device from the variant's key, or given (tests).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Hue {
    /// Drawn like [`Colour::draw`], from Philox keyed by the key ([`Colour::Grey`] has no hue: an
    /// error).
    Draw(Colour, RngKey),
    /// This edit (to compare with `opencv::recolour` at the same edit).
    #[cfg_attr(not(test), allow(dead_code))]
    Fixed(HueEdit),
}

/// XIMAGENET-12's coloured background (`opencv::recolour` with the mask as `keep`) of the image in
/// `images.0` into `images.2`, `images.1` the mask's device copy.
pub(crate) fn recolour<L: Launcher>(
    l: &mut L,
    images: (DeviceImage, Buf, DeviceImage),
    hue: Hue,
) -> Result<(), GpuError> {
    let (src, mask, dst) = images;
    let pixels = u64::from(src.width) * u64::from(src.height);
    if pixels == 0 {
        return Ok(());
    }
    // (set, fixed value or −1, colour for the draw)
    let (set, value, colour) = match hue {
        Hue::Fixed(HueEdit::Set(v)) => (1, i64::from(v), 0),
        Hue::Fixed(HueEdit::Shift(k)) => (0, i64::from(k), 0),
        Hue::Draw(Colour::Rainbow, _) => (0, -1, 3),
        Hue::Draw(Colour::Red, _) => (1, -1, 0),
        Hue::Draw(Colour::Green, _) => (1, -1, 1),
        Hue::Draw(Colour::Blue, _) => (1, -1, 2),
        Hue::Draw(Colour::Grey, _) => {
            return Err(GpuError::Launch("color_grey has no hue to draw".into()));
        }
    };
    let key = match hue {
        Hue::Draw(_, k) => k.0 as i64,
        Hue::Fixed(_) => 0,
    };
    let args = Args::buffers(&[l.address(src.buf), l.address(mask), l.address(dst.buf)]).ints(&[
        pixels as i64,
        i64::from(src.width),
        set,
        value,
        key,
        colour,
    ]);
    l.launch("rs_bg_recolour", pixels, &args)
}
