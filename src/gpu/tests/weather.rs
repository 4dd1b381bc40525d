//! The weather corruptions' GPU kernels against `scenario::corruption::{weather, snow}`: each
//! deterministic part (frost's rescale and blend, fog's blend, snow's zoom, streak and blend) on
//! the same draws as the CPU path must give the CPU's bytes; the draws (frost's texture and crop,
//! fog's plasma map, snow's field and angle) must match the CPU's in distribution.

use image::RgbImage;

use super::{assert_close, flat, host_corrupt, kind, test_image};
use crate::gpu::corruption::weather as gw;
use crate::gpu::host::HostLauncher;
use crate::gpu::launch::{Buf, Launcher};
use crate::kernels::zoom;
use crate::key::Corruption as Kind;
use crate::rng::RngKey;
use crate::scenario::corruption::snow::{self, SnowParams};
use crate::scenario::corruption::weather;

/// The frames the deterministic parts are checked on: a textured one, one whose sides are not
/// multiples of 8 or 4, flat black and white, one pixel wide and one pixel high.
fn frames() -> Vec<RgbImage> {
    vec![
        test_image(224, 224),
        test_image(61, 17),
        flat(9, 7, 0),
        flat(9, 7, 255),
        test_image(1, 40),
        test_image(40, 1),
    ]
}

/// Synthetic frost textures of a few sizes (the real ones are used too where installed).
fn synthetic_textures() -> Vec<RgbImage> {
    [(90u32, 60u32), (56, 31), (33, 47)]
        .iter()
        .map(|&(w, h)| {
            RgbImage::from_fn(w, h, |x, y| {
                let v = x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503);
                image::Rgb([
                    (v >> 3) as u8,
                    (x * 255 / w) as u8,
                    ((x + 3 * y) * 9 % 256) as u8,
                ])
            })
        })
        .collect()
}

fn texture_sets() -> Vec<Vec<RgbImage>> {
    let mut sets = vec![synthetic_textures()];
    if let Ok(t) = weather::frost_textures() {
        sets.push(t.to_vec());
    }
    sets
}

fn i64s(bytes: &[u8]) -> Vec<i64> {
    bytes
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn frost_blend_gives_the_cpus_bytes_at_a_fixed_texture_and_crop() {
    for textures in texture_sets() {
        for img in frames() {
            let (w, h) = img.dimensions();
            for (t, tex) in textures.iter().enumerate() {
                let (rw, rh) = weather::frost_rescaled_size(tex.width(), tex.height(), w, h);
                let (sw, sh) = (rw.saturating_sub(w).max(1), rh.saturating_sub(h).max(1));
                for (s, &weather::FrostParams { image: a, frost: f }) in
                    weather::FROST_PARAMS.iter().enumerate()
                {
                    // Corners of the crop range and one inside, a different one per severity.
                    let (left, top) =
                        [(0, 0), (sw - 1, sh - 1), (sw / 2, 0), (0, sh / 3)][(s + t) % 4];
                    let mut l = HostLauncher::new();
                    let (src, dst) = l.images(&img);
                    let choice: Vec<u8> = [t as i64, left.into(), top.into()]
                        .iter()
                        .flat_map(|v| v.to_le_bytes())
                        .collect();
                    let choice = l.buffer(&choice);
                    gw::frost_blend(&mut l, &textures, src, dst, (a, f), choice).unwrap();
                    let gpu = l.image(dst);
                    let cpu = weather::frost_at(tex, &img, a, f, (left, top));
                    let what = format!("frost/{} {w}×{h} texture {t} at ({left}, {top})", s + 1);
                    assert_close(&what, &gpu, &cpu);
                    assert_eq!(gpu, cpu, "{what}: the same f64 taps give the same bytes");
                }
            }
        }
    }
}

/// Runs frost's draw for `key` and returns (texture, left, top).
fn frost_choice(
    l: &mut HostLauncher,
    textures: &[RgbImage],
    img: &RgbImage,
    key: RngKey,
) -> [i64; 3] {
    let (src, dst) = l.images(img);
    gw::frost(l, textures, src, dst, (1.0, 0.5), key).unwrap();
    let choice = l.scratch(0, 24).unwrap();
    let v = i64s(&l.read(choice)[..24]);
    [v[0], v[1], v[2]]
}

#[test]
fn frost_draws_every_texture_and_crop_uniformly() {
    let textures = synthetic_textures();
    let img = test_image(20, 12);
    let keys = 3000;
    let mut counts = vec![0u32; textures.len()];
    let mut offsets = vec![(0.0f64, 0.0f64, 0u32); textures.len()];
    let mut l = HostLauncher::new();
    for k in 0..keys {
        let key = RngKey::new(k, "frame", "corruption/frost/3");
        let [t, left, top] = frost_choice(&mut l, &textures, &img, key);
        let tex = &textures[t as usize];
        let (rw, rh) = weather::frost_rescaled_size(tex.width(), tex.height(), 20, 12);
        assert!(
            (0..i64::from(rw - 20)).contains(&left),
            "left {left} of {rw}"
        );
        assert!((0..i64::from(rh - 12)).contains(&top), "top {top} of {rh}");
        counts[t as usize] += 1;
        let o = &mut offsets[t as usize];
        o.0 += left as f64 / f64::from(rw - 21).max(1.0);
        o.1 += top as f64 / f64::from(rh - 13).max(1.0);
        o.2 += 1;
    }
    let expect = f64::from(keys as u32) / textures.len() as f64;
    for (t, &c) in counts.iter().enumerate() {
        let sd = (expect * (1.0 - 1.0 / textures.len() as f64)).sqrt();
        assert!(
            (f64::from(c) - expect).abs() < 5.0 * sd,
            "texture {t} drawn {c} times of {keys}"
        );
        // Offsets scaled to [0, 1]: mean 1/2, sd ≈ 0.29.
        let (sl, st, n) = offsets[t];
        let se = 0.29 / f64::from(n).sqrt();
        assert!(
            (sl / f64::from(n) - 0.5).abs() < 5.0 * se,
            "texture {t}: left mean"
        );
        assert!(
            (st / f64::from(n) - 0.5).abs() < 5.0 * se,
            "texture {t}: top mean"
        );
    }
}

#[test]
fn frost_is_the_cpu_blend_at_its_own_draw_at_every_severity() {
    for textures in texture_sets() {
        for img in [test_image(224, 224), test_image(61, 17)] {
            for s in 1..=5u8 {
                let key = RngKey::new(7, "frame", &format!("corruption/frost/{s}"));
                let weather::FrostParams { image: a, frost: f } =
                    weather::FROST_PARAMS[usize::from(s - 1)];
                let mut l = HostLauncher::new();
                let (src, dst) = l.images(&img);
                gw::frost(&mut l, &textures, src, dst, (a, f), key).unwrap();
                let gpu = l.image(dst);
                let choice = l.scratch(0, 24).unwrap();
                let c = i64s(&l.read(choice)[..24]);
                let cpu = weather::frost_at(
                    &textures[c[0] as usize],
                    &img,
                    a,
                    f,
                    (c[1] as u32, c[2] as u32),
                );
                assert_eq!(gpu, cpu, "frost/{s} {:?}", img.dimensions());
                // Repeats, and follows its key.
                let (src2, dst2) = l.images(&img);
                gw::frost(&mut l, &textures, src2, dst2, (a, f), key).unwrap();
                assert_eq!(l.image(dst2), gpu);
            }
        }
    }
    if weather::frost_textures().is_ok() {
        let img = test_image(64, 48);
        let key = RngKey::new(1, "f", "corruption/frost/2");
        let a = host_corrupt("frost", 2, &img, key);
        assert_eq!(a, host_corrupt("frost", 2, &img, key));
        let others = (0..8).map(|k| host_corrupt("frost", 2, &img, RngKey(key.0 ^ (k + 1))));
        assert!(others.into_iter().any(|o| o != a), "frost ignores its key");
    }
}

/// The CPU's plasma map of side `n` for (`decay`, `key`), raw, uploaded as doubles.
fn cpu_map(l: &mut HostLauncher, n: usize, decay: f64, key: RngKey) -> Buf {
    let p = weather::plasma_window(n, decay, key, (n, n));
    let bytes: Vec<u8> = p.values.iter().flat_map(|v| v.to_le_bytes()).collect();
    l.buffer(&bytes)
}

#[test]
fn fog_blend_gives_the_cpus_bytes_on_the_cpus_map() {
    for img in frames() {
        let (w, h) = img.dimensions();
        let n = weather::fog_map_size(w, h);
        for s in 1..=5u8 {
            let weather::FogParams {
                strength: c0,
                wibble_decay: c1,
            } = weather::FOG_PARAMS[usize::from(s - 1)];
            let key = RngKey::new(5, "frame", &format!("corruption/fog/{s}"));
            let mut l = HostLauncher::new();
            let (src, dst) = l.images(&img);
            let map = cpu_map(&mut l, n, c1, key);
            gw::fog_blend(&mut l, src, dst, map, n, c0).unwrap();
            let gpu = l.image(dst);
            let cpu = weather::fog(&img, c0, c1, key);
            let what = format!("fog/{s} {w}×{h}");
            assert_close(&what, &gpu, &cpu);
            assert_eq!(gpu, cpu, "{what}: the same map gives the same bytes");
        }
    }
    // A flat map (range 0) blends as P = 0 on both paths.
    let img = test_image(5, 3);
    let mut l = HostLauncher::new();
    let (src, dst) = l.images(&img);
    let map = l.buffer(&[0u8; 16 * 8]);
    gw::fog_blend(&mut l, src, dst, map, 4, 2.0).unwrap();
    let m = f64::from(*img.as_raw().iter().max().unwrap()) / 255.0;
    let want = RgbImage::from_fn(5, 3, |x, y| {
        image::Rgb(
            img.get_pixel(x, y)
                .0
                .map(|v| ((f64::from(v) / 255.0 * (m / (m + 2.0))).clamp(0.0, 1.0) * 255.0) as u8),
        )
    });
    assert_eq!(l.image(dst), want);
}

/// Statistics of a plasma map normalised to [0, 1]: mean, standard deviation, mean absolute
/// difference of neighbours at lags 1, 4 and n/8 (both axes), and the log of the raw range.
fn map_stats(raw: &[f64], n: usize) -> Vec<f64> {
    let lo = raw.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = raw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = raw.iter().map(|v| (v - lo) / (hi - lo)).collect();
    let m = p.len() as f64;
    let mean = p.iter().sum::<f64>() / m;
    let sd = (p.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / m).sqrt();
    let mut out = vec![mean, sd, (hi - lo).ln()];
    for lag in [1, 4, n / 8] {
        let mut d = 0.0;
        for y in 0..n {
            for x in 0..n {
                d += (p[y * n + x] - p[y * n + (x + lag) % n]).abs();
                d += (p[y * n + x] - p[((y + lag) % n) * n + x]).abs();
            }
        }
        out.push(d / (2.0 * m));
    }
    out
}

/// The per-key statistics of two samples agree: for each, the means differ by at most five
/// standard errors (Welch).
pub(super) fn assert_same_means(what: &str, names: &[&str], gpu: &[Vec<f64>], cpu: &[Vec<f64>]) {
    for (k, name) in names.iter().enumerate() {
        let moments = |s: &[Vec<f64>]| {
            let n = s.len() as f64;
            let m = s.iter().map(|v| v[k]).sum::<f64>() / n;
            let var = s.iter().map(|v| (v[k] - m).powi(2)).sum::<f64>() / (n - 1.0);
            (m, var / n)
        };
        let ((mg, vg), (mc, vc)) = (moments(gpu), moments(cpu));
        let se = (vg + vc).sqrt();
        assert!(
            (mg - mc).abs() <= 5.0 * se + 1e-9,
            "{what}: {name}: mean {mg:.4} on the GPU, {mc:.4} on the CPU (se {se:.4})"
        );
    }
}

#[test]
fn plasma_map_matches_the_cpu_in_distribution() {
    let names = [
        "mean",
        "sd",
        "ln range",
        "roughness 1",
        "roughness 4",
        "roughness n/8",
    ];
    for n in [64usize, 256] {
        for decay in [2.0, 1.7, 1.5, 1.4] {
            let (mut gpu, mut cpu) = (Vec::new(), Vec::new());
            for k in 0..24 {
                let key = RngKey::new(k, "frame", "corruption/fog");
                let mut l = HostLauncher::new();
                let map = gw::plasma(&mut l, n, decay, key).unwrap();
                let raw = f64s(&l.read(map)[..n * n * 8]);
                assert_eq!(raw[0], 0.0);
                gpu.push(map_stats(&raw, n));
                let c = weather::plasma_window(n, decay, RngKey(key.0 ^ 0x5555), (n, n));
                cpu.push(map_stats(&c.values, n));
            }
            assert_same_means(&format!("plasma {n} decay {decay}"), &names, &gpu, &cpu);
        }
    }
}

/// Statistics of a corrupted frame: mean, standard deviation and mean absolute horizontal and
/// vertical neighbour difference of its bytes.
fn image_stats(img: &RgbImage) -> Vec<f64> {
    let (w, h) = img.dimensions();
    let v: Vec<f64> = img.as_raw().iter().map(|&b| f64::from(b)).collect();
    let m = v.len() as f64;
    let mean = v.iter().sum::<f64>() / m;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / m).sqrt();
    let (w, h) = (w as usize * 3, h as usize);
    let (mut dx, mut dy) = (0.0, 0.0);
    for y in 0..h {
        for x in 0..w {
            if x + 3 < w {
                dx += (v[y * w + x] - v[y * w + x + 3]).abs();
            }
            if y + 1 < h {
                dy += (v[y * w + x] - v[(y + 1) * w + x]).abs();
            }
        }
    }
    vec![mean, sd, dx / m, dy / m]
}

#[test]
fn fog_matches_the_cpu_in_distribution_at_every_severity() {
    let names = ["mean", "sd", "|dx|", "|dy|"];
    for img in [test_image(96, 64), test_image(61, 17)] {
        for s in 1..=5u8 {
            let (mut gpu, mut cpu) = (Vec::new(), Vec::new());
            let weather::FogParams {
                strength: c0,
                wibble_decay: c1,
            } = weather::FOG_PARAMS[usize::from(s - 1)];
            for k in 0..24 {
                let key = RngKey::new(k, "frame", &format!("corruption/fog/{s}"));
                gpu.push(image_stats(&host_corrupt("fog", s, &img, key)));
                cpu.push(image_stats(&weather::fog(&img, c0, c1, key)));
            }
            let what = format!("fog/{s} {:?}", img.dimensions());
            assert_same_means(&what, &names, &gpu, &cpu);
        }
    }
}

#[test]
fn fog_repeats_follows_its_key_and_leaves_black_black() {
    let img = test_image(61, 17);
    let key = RngKey::new(0, "f", "corruption/fog/3");
    let a = host_corrupt("fog", 3, &img, key);
    assert_eq!(a, host_corrupt("fog", 3, &img, key));
    assert_ne!(a, host_corrupt("fog", 3, &img, RngKey(key.0 ^ 1)));
    for (w, h) in [(9, 7), (1, 1), (1, 30)] {
        let black = flat(w, h, 0);
        assert_eq!(host_corrupt("fog", 5, &black, key), black);
    }
    // White: (1 + c0·P)/(1 + c0) ≥ 1/(1 + c0), c0 = 1.5 at severity 1.
    let white = flat(1, 30, 255);
    let out = host_corrupt("fog", 1, &white, key);
    assert!(out.as_raw().iter().all(|&v| v >= 101), "{out:?}");
    // The map does not rely on its scratch buffer's previous contents: the same key in a
    // launcher whose slot is already bigger and filled gives the same map.
    let mut l = HostLauncher::new();
    let m1 = gw::plasma(&mut l, 16, 2.0, key).unwrap();
    let m1 = l.read(m1);
    let mut l2 = HostLauncher::new();
    let _ = l2.scratch(0, 4096).unwrap();
    let m2 = gw::plasma(&mut l2, 16, 2.0, key).unwrap();
    let m2 = l2.read(m2);
    assert_eq!(m1[..16 * 16 * 8], m2[..16 * 16 * 8]);
}

/// A full snow field of `w`×`h` normals N(μ, s) (any generator: the deterministic part is checked on
/// the same field) and its central crop as the GPU takes it.
fn snow_field(p: &SnowParams, w: usize, h: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    use rand_distr::{Distribution, StandardNormal};
    let mut r = RngKey(seed).rng();
    let field: Vec<f64> = (0..w * h)
        .map(|_| {
            let z: f64 = StandardNormal.sample(&mut r);
            p.mean + p.std * z
        })
        .collect();
    let (cw, left, _) = zoom::clipped_zoom_axis(w, p.zoom);
    let (ch, top, _) = zoom::clipped_zoom_axis(h, p.zoom);
    let crop = (top..top + ch)
        .flat_map(|y| field[y * w + left..y * w + left + cw].iter().copied())
        .collect();
    (field, crop)
}

#[test]
fn snow_gives_the_cpus_bytes_on_the_same_field_and_angle() {
    for img in frames() {
        let (w, h) = img.dimensions();
        for (s, p) in snow::SNOW.iter().enumerate() {
            for (k, angle) in [-135.0, -90.0, -45.000_001, -101.3, -60.7]
                .into_iter()
                .enumerate()
            {
                if k % 2 != s % 2 && k != 4 {
                    continue; // a different three angles per severity
                }
                let (field, crop) = snow_field(p, w as usize, h as usize, (s * 10 + k) as u64);
                let mut l = HostLauncher::new();
                let (src, dst) = l.images(&img);
                let crop: Vec<u8> = crop.iter().flat_map(|v| v.to_le_bytes()).collect();
                let crop = l.buffer(&crop);
                let angle_buf = l.buffer(&f64::to_le_bytes(angle));
                gw::snow_from_draws(&mut l, p, src, dst, crop, angle_buf).unwrap();
                let gpu = l.image(dst);
                let cpu = snow::snow_with(&img, p, &field, angle);
                let what = format!("snow/{} {w}×{h} angle {angle}", s + 1);
                assert_close(&what, &gpu, &cpu);
                assert_eq!(
                    gpu, cpu,
                    "{what}: the same field and angle give the same bytes"
                );
            }
        }
    }
}

#[test]
fn snow_draws_are_normal_and_uniform() {
    let p = &snow::SNOW[2];
    let img = test_image(160, 120);
    let mut angles = Vec::new();
    let mut values = Vec::new();
    for k in 0..400 {
        let mut l = HostLauncher::new();
        let (src, dst) = l.images(&img);
        gw::snow(
            &mut l,
            p,
            src,
            dst,
            RngKey::new(k, "frame", "corruption/snow/3"),
        )
        .unwrap();
        let a = l.scratch(1, 8).unwrap();
        angles.push(f64s(&l.read(a)[..8])[0]);
        if k < 4 {
            let (cw, _, _) = zoom::clipped_zoom_axis(160, p.zoom);
            let (ch, _, _) = zoom::clipped_zoom_axis(120, p.zoom);
            let c = l.scratch(0, 8).unwrap();
            values.extend(f64s(&l.read(c)[..cw * ch * 8]));
        }
    }
    assert!(
        angles.iter().all(|a| (-135.0..-45.0).contains(a)),
        "{angles:?}"
    );
    let m = angles.len() as f64;
    let mean = angles.iter().sum::<f64>() / m;
    assert!(
        (mean + 90.0).abs() < 5.0 * 90.0 / 12f64.sqrt() / m.sqrt(),
        "angle mean {mean}"
    );
    let m = values.len() as f64;
    let mean = values.iter().sum::<f64>() / m;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / m;
    assert!(
        (mean - p.mean).abs() < 5.0 * p.std / m.sqrt(),
        "field mean {mean}"
    );
    let want = p.std * p.std;
    assert!(
        (var - want).abs() < 5.0 * want * (2.0 / m).sqrt(),
        "field variance {var}"
    );
}

#[test]
fn snow_matches_the_cpu_in_distribution_at_every_severity() {
    let names = ["mean", "sd", "|dx|", "|dy|"];
    for img in [test_image(96, 64), test_image(61, 17)] {
        for s in 1..=5u8 {
            let (mut gpu, mut cpu) = (Vec::new(), Vec::new());
            for k in 0..24 {
                let key = RngKey::new(k, "frame", &format!("corruption/snow/{s}"));
                gpu.push(image_stats(&host_corrupt("snow", s, &img, key)));
                let p = &snow::SNOW[usize::from(s - 1)];
                cpu.push(image_stats(&snow::snow_corruption(&img, p, key)));
            }
            let what = format!("snow/{s} {:?}", img.dimensions());
            assert_same_means(&what, &names, &gpu, &cpu);
        }
    }
    let img = test_image(61, 17);
    let key = RngKey::new(0, "f", "corruption/snow/4");
    let a = host_corrupt("snow", 4, &img, key);
    assert_eq!(a, host_corrupt("snow", 4, &img, key));
    assert_ne!(a, host_corrupt("snow", 4, &img, RngKey(key.0 ^ 1)));
}

#[test]
fn frost_is_on_the_gpu_only_where_its_textures_are() {
    let installed = weather::frost_textures().is_ok();
    assert_eq!(crate::gpu::corruption::on_gpu(Kind::Frost), installed);
    for name in ["fog", "snow", "elastic_transform"] {
        assert!(crate::gpu::corruption::on_gpu(kind(name)), "{name}");
    }
    assert!(!crate::gpu::corruption::on_gpu(Kind::Spatter));
}

#[test]
fn deterministic_parts_give_the_cpus_bytes_at_video_size() {
    let img = test_image(1280, 720);
    let (w, h) = (1280usize, 720usize);
    // frost: the last texture at the far corner of its crop range.
    let textures = texture_sets().pop().unwrap();
    let t = textures.len() - 1;
    let (rw, rh) =
        weather::frost_rescaled_size(textures[t].width(), textures[t].height(), 1280, 720);
    let (left, top) = (rw - 1280 - 1, rh - 720 - 1);
    let weather::FrostParams { image: a, frost: f } = weather::FROST_PARAMS[4];
    let mut l = HostLauncher::new();
    let (src, dst) = l.images(&img);
    let choice: Vec<u8> = [t as i64, left.into(), top.into()]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let choice = l.buffer(&choice);
    gw::frost_blend(&mut l, &textures, src, dst, (a, f), choice).unwrap();
    let cpu = weather::frost_at(&textures[t], &img, a, f, (left, top));
    assert_eq!(l.image(dst), cpu, "frost 1280×720");
    // fog on the CPU's 2048² map.
    let weather::FogParams {
        strength: c0,
        wibble_decay: c1,
    } = weather::FOG_PARAMS[4];
    let key = RngKey::new(1, "frame", "corruption/fog/5");
    let n = weather::fog_map_size(1280, 720);
    let map = cpu_map(&mut l, n, c1, key);
    gw::fog_blend(&mut l, src, dst, map, n, c0).unwrap();
    let cpu = weather::fog(&img, c0, c1, key);
    assert_eq!(l.image(dst), cpu, "fog 1280×720");
    // snow on a given field and angle.
    let p = &snow::SNOW[4];
    let (field, crop) = snow_field(p, w, h, 3);
    let crop: Vec<u8> = crop.iter().flat_map(|v| v.to_le_bytes()).collect();
    let crop = l.buffer(&crop);
    let angle = l.buffer(&f64::to_le_bytes(-77.7));
    gw::snow_from_draws(&mut l, p, src, dst, crop, angle).unwrap();
    let cpu = snow::snow_with(&img, p, &field, -77.7);
    assert_eq!(l.image(dst), cpu, "snow 1280×720");
}
