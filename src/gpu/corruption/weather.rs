//! Weather corruptions frost, fog and snow (`cuda/weather.cu`; CPU:
//! `scenario/corruption/{weather,snow}.rs`, docs/gpu.md#gpu-resident-scenarios). Each recipe is its draws followed by its deterministic
//! part; the tests run the deterministic part on the CPU path's own draws.

use image::RgbImage;

use super::Job;
use crate::gpu::GpuError;
use crate::gpu::launch::{Args, Buf, DeviceImage, Launcher, REDUCE_THREADS};
use crate::kernels::{motion, zoom};
use crate::rng::RngKey;
use crate::scenario::corruption::snow::SnowParams;
use crate::scenario::corruption::{snow as cpu_snow, weather};

/// The weather corruptions with kernels.
#[derive(Debug, Clone, Copy)]
pub(super) enum Weather {
    /// `frost`.
    Frost,
    /// `fog`.
    Fog,
    /// `snow`.
    Snow,
}

/// Whether `which` can run on the GPU here: frost needs its textures (`weather::frost_textures`).
pub(super) fn ready(which: Weather) -> bool {
    match which {
        Weather::Frost => weather::frost_textures().is_ok(),
        Weather::Fog | Weather::Snow => true,
    }
}

pub(super) fn corrupt<L: Launcher>(l: &mut L, which: Weather, j: &Job) -> Result<(), GpuError> {
    match which {
        Weather::Frost => {
            let textures =
                weather::frost_textures().map_err(|e| GpuError::Launch(e.to_string()))?;
            let p = weather::FROST_PARAMS[j.s];
            frost(l, textures, j.src, j.dst, (p.image, p.frost), j.key)
        }
        Weather::Fog => {
            let p = weather::FOG_PARAMS[j.s];
            let n = weather::fog_map_size(j.src.width, j.src.height);
            let map = plasma(l, n, p.wibble_decay, j.key)?;
            fog_blend(l, j.src, j.dst, map, n, p.strength)
        }
        Weather::Snow => snow(l, &cpu_snow::SNOW[j.s], j.src, j.dst, j.key),
    }
}

/// The frost textures (one constant, RGB bytes one after the other) and, for a frame of `w`×`h`,
/// their layout (per texture: byte offset, width, height, rescaled width and height, as i64).
fn frost_constants<L: Launcher>(
    l: &mut L,
    textures: &[RgbImage],
    (w, h): (u32, u32),
) -> Result<(Buf, Buf), GpuError> {
    let all = l.constant("frost/textures", &mut || {
        textures
            .iter()
            .flat_map(|t| t.as_raw().iter().copied())
            .collect()
    })?;
    let layout = l.constant(&format!("frost/layout/{w}x{h}"), &mut || {
        let mut offset = 0i64;
        let mut out = Vec::with_capacity(textures.len() * 40);
        for t in textures {
            let (tw, th) = t.dimensions();
            let (rw, rh) = weather::frost_rescaled_size(tw, th, w, h);
            for v in [offset, tw.into(), th.into(), rw.into(), rh.into()] {
                out.extend_from_slice(&i64::to_le_bytes(v));
            }
            offset += t.as_raw().len() as i64;
        }
        out
    })?;
    Ok((all, layout))
}

/// frost with `textures` (the five of `weather::FROST_FILES`): the draw (texture, crop) into a
/// scratch buffer, then the blend at weights `(a, f)`.
pub(crate) fn frost<L: Launcher>(
    l: &mut L,
    textures: &[RgbImage],
    src: DeviceImage,
    dst: DeviceImage,
    (a, f): (f64, f64),
    key: RngKey,
) -> Result<(), GpuError> {
    if textures.is_empty() {
        return Err(GpuError::Launch("frost: no textures".into()));
    }
    let (_, layout) = frost_constants(l, textures, (src.width, src.height))?;
    let choice = l.scratch(0, 3 * 8)?;
    let args = Args::buffers(&[l.address(layout), l.address(choice)]).ints(&[
        key.0 as i64,
        src.width.into(),
        src.height.into(),
        textures.len() as i64,
    ]);
    l.launch("rs_frost_choice", 1, &args)?;
    frost_blend(l, textures, src, dst, (a, f), choice)
}

/// frost's deterministic part: the blend at the choice in `choice` (texture, left, top as i64).
pub(crate) fn frost_blend<L: Launcher>(
    l: &mut L,
    textures: &[RgbImage],
    src: DeviceImage,
    dst: DeviceImage,
    (a, f): (f64, f64),
    choice: Buf,
) -> Result<(), GpuError> {
    let (all, layout) = frost_constants(l, textures, (src.width, src.height))?;
    let args = Args::buffers(&[
        l.address(src.buf),
        l.address(dst.buf),
        l.address(all),
        l.address(layout),
        l.address(choice),
    ])
    .ints(&[src.width.into(), src.height.into()])
    .doubles(&[a, f]);
    l.launch("rs_frost_blend", src.elements(), &args)
}

/// The plasma fractal of side `n` (a power of two ≥ 2) with wibble decay `decay`, drawn from
/// `key`, into scratch slot 0 (`n`×`n` doubles, row-major, not normalised), level by level.
pub(crate) fn plasma<L: Launcher>(
    l: &mut L,
    n: usize,
    decay: f64,
    key: RngKey,
) -> Result<Buf, GpuError> {
    let map = l.scratch(0, n * n * 8)?;
    let addr = l.address(map);
    l.launch("rs_plasma_init", 1, &Args::buffers(&[addr]))?;
    let mut wibble = 100.0f64;
    let mut step = n;
    while step >= 2 {
        let g = (n / step) as u64;
        let args = Args::buffers(&[addr])
            .ints(&[n as i64, step as i64, key.0 as i64])
            .doubles(&[wibble]);
        l.launch("rs_plasma_squares", g * g, &args)?;
        l.launch("rs_plasma_diamonds", 2 * g * g, &args)?;
        wibble /= decay;
        step /= 2;
    }
    Ok(map)
}

/// fog's deterministic part: the blend of `src` with the `n`×`n` plasma `map` (doubles, not
/// normalised) at strength `c0`: the map's minimum and maximum and the frame's largest byte
/// (scratch slot 1), then one element per byte.
pub(crate) fn fog_blend<L: Launcher>(
    l: &mut L,
    src: DeviceImage,
    dst: DeviceImage,
    map: Buf,
    n: usize,
    c0: f64,
) -> Result<(), GpuError> {
    let totals = l.scratch(1, 3 * 8)?;
    l.zero(totals, 3 * 8)?;
    let (map, totals, s) = (l.address(map), l.address(totals), l.address(src.buf));
    let cells = (n * n) as u64;
    let args = Args::buffers(&[map, totals]).ints(&[cells as i64]);
    l.launch("rs_min_max_f64", cells.min(REDUCE_THREADS), &args)?;
    let bytes = src.elements();
    let args = Args::buffers(&[s, totals + 16]).ints(&[bytes as i64]);
    l.launch("rs_max_u8", bytes.min(REDUCE_THREADS), &args)?;
    let args = Args::buffers(&[s, l.address(dst.buf), map, totals, totals + 16])
        .ints(&[src.width.into(), src.height.into(), n as i64])
        .doubles(&[c0]);
    l.launch("rs_fog_blend", bytes, &args)
}

/// snow at `p`: the field's central crop (scratch slot 0) and the motion angle (slot 1) drawn from
/// `key`, then [`snow_from_draws`].
pub(crate) fn snow<L: Launcher>(
    l: &mut L,
    p: &SnowParams,
    src: DeviceImage,
    dst: DeviceImage,
    key: RngKey,
) -> Result<(), GpuError> {
    let (cw, _, _) = zoom::clipped_zoom_axis(src.width as usize, p.zoom);
    let (ch, _, _) = zoom::clipped_zoom_axis(src.height as usize, p.zoom);
    let crop = l.scratch(0, cw * ch * 8)?;
    let angle = l.scratch(1, 8)?;
    let n = (cw * ch) as u64;
    let args = Args::buffers(&[l.address(crop)])
        .ints(&[n as i64, key.0 as i64])
        .doubles(&[p.mean, p.std]);
    l.launch("rs_snow_field", n.div_ceil(4), &args)?;
    let args = Args::buffers(&[l.address(angle)]).ints(&[key.0 as i64]);
    l.launch("rs_snow_angle", 1, &args)?;
    snow_from_draws(l, p, src, dst, crop, angle)
}

/// snow's deterministic part (`snow::snow_with`) from the field's central crop `crop`
/// (`⌈W/z⌉ × ⌈H/z⌉` doubles) and the motion angle in degrees (`angle`, one double): the taps
/// (slot 2), the zoomed, thresholded layer (slot 3), its streaked top-left as bytes (slot 4), the
/// blend.
pub(crate) fn snow_from_draws<L: Launcher>(
    l: &mut L,
    p: &SnowParams,
    src: DeviceImage,
    dst: DeviceImage,
    crop: Buf,
    angle: Buf,
) -> Result<(), GpuError> {
    let (w, h) = (src.width as usize, src.height as usize);
    let (cw, _, zw) = zoom::clipped_zoom_axis(w, p.zoom);
    let (ch, _, zh) = zoom::clipped_zoom_axis(h, p.zoom);
    let taps = l.scratch(2, (1 + 3 * (2 * p.radius + 1)) * 8)?;
    let layer = l.scratch(3, zw * zh * 8)?;
    let q = l.scratch(4, w * h)?;
    let (crop, angle, taps, layer, q) = (
        l.address(crop),
        l.address(angle),
        l.address(taps),
        l.address(layer),
        l.address(q),
    );
    let name = format!("snow/weights/{}/{:016x}", p.radius, p.sigma.to_bits());
    let weights = l.constant(&name, &mut || {
        motion_weights(p.radius, p.sigma)
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect()
    })?;
    let args = Args::buffers(&[angle, taps, l.address(weights)]).ints(&[
        p.radius as i64,
        zw as i64,
        zh as i64,
    ]);
    l.launch("rs_snow_taps", 1, &args)?;
    let args = Args::buffers(&[crop, layer])
        .ints(&[cw as i64, ch as i64, zw as i64, zh as i64])
        .doubles(&[p.threshold]);
    l.launch("rs_snow_layer", (zw * zh) as u64, &args)?;
    let args = Args::buffers(&[layer, taps, q]).ints(&[w as i64, h as i64, zw as i64, zh as i64]);
    l.launch("rs_snow_streak", (w * h) as u64, &args)?;
    let args = Args::buffers(&[l.address(src.buf), l.address(dst.buf), q])
        .ints(&[w as i64, h as i64])
        .floats(&[p.blend as f32, (1.0 - p.blend) as f32]);
    l.launch("rs_snow_blend", (w * h) as u64, &args)
}

/// The motion kernel's normalised Gaussian weights (`motion::motion_kernel` without the offsets,
/// which depend on the drawn angle): the taps of angle 0 on a layer large enough to keep them all.
fn motion_weights(radius: usize, sigma: f64) -> Vec<f64> {
    let n = 2 * radius + 1;
    motion::motion_kernel(radius, sigma, 0.0, n + 1, n + 1)
        .iter()
        .map(|t| t.0)
        .collect()
}
